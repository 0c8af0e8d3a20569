//! `bench streams`: many idle player streams on one gateway, their memory, and the time one event
//! takes to reach all of them.
//!
//! One game is created; `count` players (each with a token of its own) subscribe to it as
//! spectators, spread over connections of at most 100 streams each. Once every stream has caught
//! up with the game's log, the server's RSS is read again: (RSS after − RSS before) / streams is
//! the memory per idle stream. Then the two seats confirm; the bench times, from sending the
//! second `Confirm`, the arrival of the start of play on every stream, and waits until all have it.
//! Then the seats play `moves` moves through the gateway, one at a time; for each move the bench
//! times, from sending `Play`, the arrival of that `Moved` event on every stream (p50 / p99 / max
//! of the arrivals; max is the time to reach the last one). Each move's fan-out is thus its own,
//! not the tail of the start of play's (which carries every piece, so it is the heavier one).

use crate::BenchError;
use crate::connections::{Pool, authed, code_name, connect, token, unary};
use crate::pb;
use crate::pb::player_service_client::PlayerServiceClient;
use crate::pb::session_service_client::SessionServiceClient;
use crate::report::{Latency, Load, latency_histogram};
use crate::server::{rss_bytes, store_operations};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

/// Subscribes in flight at once while opening the streams.
const OPENING_AT_ONCE: usize = 256;

/// How long opening all streams, or one event's fan-out, may take before the bench reports what
/// it has.
const PHASE_DEADLINE: Duration = Duration::from_secs(180);

/// Settings of a `bench streams` run.
#[derive(Debug, Clone)]
pub struct StreamsConfig {
    /// Streams to open.
    pub count: usize,
    /// Moves to fan out, one after the other.
    pub moves: usize,
    /// The gateway's public gRPC address.
    pub public: SocketAddr,
    /// The session's internal gRPC address (for `CreateGame`).
    pub internal: SocketAddr,
    /// The gateway's HS256 secret.
    pub jwt_secret: String,
    /// The server process, for its resident memory.
    pub server_pid: Option<u32>,
    /// The server's metrics endpoint, for its store operations per move.
    pub metrics: Option<SocketAddr>,
    /// How the watchers learn presence and clocks.
    pub client_reads: ClientReads,
}

/// How a watcher learns a game's presence and clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ClientReads {
    /// From the status items of its stream (`with_status`).
    Status,
    /// By reading the game's view (`GetGame`) after every event.
    ViewPerEvent,
}

/// One move's fan-out.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Fanout {
    /// The move's event sequence number.
    pub seq: u64,
    /// From sending `Play` to each stream receiving the move.
    pub arrival: Latency,
    /// Streams that did not receive it within the deadline.
    pub missing: usize,
}

/// The figures of a `bench streams` run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StreamsFigures {
    /// Streams asked for.
    pub requested: usize,
    /// Streams open and caught up.
    pub opened: usize,
    /// Failed `Subscribe` calls and stream errors by gRPC code.
    pub errors: BTreeMap<String, u64>,
    /// HTTP/2 connections used.
    pub connections: usize,
    /// Seconds taken to open all streams.
    pub open_seconds: f64,
    /// The server process measured.
    pub server_pid: Option<u32>,
    /// Its RSS before the streams were opened.
    pub rss_before_bytes: Option<u64>,
    /// Its RSS with all streams open.
    pub rss_after_bytes: Option<u64>,
    /// (after − before) / opened.
    pub bytes_per_stream: Option<f64>,
    /// The start of play's fan-out (from sending the second `Confirm`), before the first move.
    pub start_of_play: Option<Fanout>,
    /// Each move's fan-out.
    pub fanouts: Vec<Fanout>,
    /// All arrivals of all moves together.
    pub arrival: Latency,
    /// How the watchers learned presence and clocks.
    pub client_reads: ClientReads,
    /// The session's store operations during the moves, per move, by operation (read from the
    /// spawned server's metrics; `None` for a server the bench did not spawn).
    pub store_operations_per_move: Option<BTreeMap<String, f64>>,
    /// Machine load before.
    pub load_before: Load,
    /// Machine load at the end.
    pub load_after: Load,
}

/// What a watcher tells the bench.
enum Report {
    /// The stream delivered its first event: it is open.
    Ready,
    /// An event with this seq arrived now.
    Arrived(u64, Instant),
    /// The stream failed or could not open.
    Failed(String),
}

/// Runs `bench streams` against a running server.
pub async fn run(config: StreamsConfig) -> Result<StreamsFigures, BenchError> {
    if config.count == 0 {
        return Err(BenchError::Setting("--count must be at least 1".into()));
    }
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let pool = Arc::new(Pool::for_streams(config.public, config.count + 4).await?);
    let mut session = SessionServiceClient::new(connect(config.internal).await?);
    let south = format!("fan-{run_id}-s");
    let north = format!("fan-{run_id}-n");
    let created = session
        .create_game(pb::CreateGameRequest {
            south_player: south.clone(),
            north_player: north.clone(),
            rules: String::new(),
            time_control: Some(pb::TimeControl {
                name: "relaxed".into(),
                ..pb::TimeControl::default()
            }),
            idempotency_key: format!("fan-{run_id}"),
        })
        .await
        .map_err(|s| BenchError::setup("CreateGame", s))?
        .into_inner();
    let game_id = created.game_id.clone();

    let load_before = Load::now();
    let rss_before = config.server_pid.and_then(rss_bytes);
    let (reports, mut inbox) = mpsc::unbounded_channel::<Report>();
    let opening = Arc::new(Semaphore::new(OPENING_AT_ONCE));
    // Views read by the watchers (`ClientReads::ViewPerEvent`), so the count after the moves
    // waits for the last move's reads.
    let reads = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut watchers = Vec::with_capacity(config.count);
    for i in 0..config.count {
        let player = format!("watcher-{run_id}-{i}");
        let token = token(&config.jwt_secret, &player)?;
        let mut client = PlayerServiceClient::new(pool.pick());
        let reports = reports.clone();
        let opening = Arc::clone(&opening);
        let game_id = game_id.clone();
        let client_reads = config.client_reads;
        let reads = Arc::clone(&reads);
        watchers.push(tokio::spawn(async move {
            let mut permit = opening.acquire_owned().await.ok();
            let request = authed(
                &token,
                pb::SubscribeRequest {
                    game_id: game_id.clone(),
                    from_seq: 1,
                    spectate: true,
                    with_status: client_reads == ClientReads::Status,
                },
            );
            let mut stream = match client.subscribe(request).await {
                Ok(stream) => stream.into_inner(),
                Err(status) => {
                    let _ = reports.send(Report::Failed(code_name(&status)));
                    return;
                }
            };
            let mut ready = false;
            loop {
                match stream.message().await {
                    Ok(Some(item)) => {
                        let at = Instant::now();
                        if let Some(pb::subscribe_response::Item::Event(event)) = item.item {
                            if ready {
                                let _ = reports.send(Report::Arrived(event.seq, at));
                                if client_reads == ClientReads::ViewPerEvent {
                                    // As the clients did: the view again after every event.
                                    let read = authed(
                                        &token,
                                        pb::PlayerServiceGetGameRequest {
                                            game_id: game_id.clone(),
                                            spectate: true,
                                        },
                                    );
                                    if let Err(status) = client.get_game(read).await {
                                        let _ = reports.send(Report::Failed(code_name(&status)));
                                    }
                                    reads.fetch_add(1, Ordering::Relaxed);
                                }
                            } else {
                                // Open and delivering (a spectator does not see the drafts,
                                // so the game's version is not a seq it will ever get).
                                ready = true;
                                permit.take();
                                let _ = reports.send(Report::Ready);
                            }
                        }
                    }
                    Ok(None) => {
                        let _ = reports.send(Report::Failed("STREAM_ENDED".into()));
                        return;
                    }
                    Err(status) => {
                        let _ = reports.send(Report::Failed(code_name(&status)));
                        return;
                    }
                }
            }
        }));
    }
    drop(reports);

    let mut errors = BTreeMap::<String, u64>::new();
    let mut opened = 0usize;
    let mut failed = 0usize;
    let open_deadline = Instant::now() + PHASE_DEADLINE;
    while opened + failed < config.count {
        match tokio::time::timeout_at(open_deadline, inbox.recv()).await {
            Ok(Some(Report::Ready)) => opened += 1,
            Ok(Some(Report::Failed(code))) => {
                failed += 1;
                *errors.entry(code).or_default() += 1;
            }
            Ok(Some(Report::Arrived(..))) => {}
            Ok(None) | Err(_) => break,
        }
    }
    let open_seconds = started.elapsed().as_secs_f64();
    let rss_after = config.server_pid.and_then(rss_bytes);

    // The seats confirm, then play moves one at a time while every watcher times the arrival.
    let mut seats = [
        Seat::new(&pool, &config.jwt_secret, &south, &game_id, pb::Side::South)?,
        Seat::new(&pool, &config.jwt_secret, &north, &game_id, pb::Side::North)?,
    ];
    seats[0].confirm().await?;
    let sent = Instant::now();
    let start_seq = seats[1].confirm().await?;
    let start_of_play = match start_seq {
        Some(seq) => {
            let histogram = arrivals(&mut inbox, seq, sent, opened, &mut errors).await;
            Some(Fanout::of(seq, &histogram, opened))
        }
        None => None,
    };
    let mut to_move = if created.first_mover == pb::Side::North as i32 {
        1
    } else {
        0
    };
    let mut fanouts = Vec::new();
    let mut all = latency_histogram();
    let operations_before = match config.metrics {
        Some(metrics) => Some(store_operations(metrics).await?),
        None => None,
    };
    let reads_before = reads.load(Ordering::Relaxed);
    for _ in 0..config.moves {
        let (seq, sent, ended) = seats[to_move].play().await?;
        let histogram = arrivals(&mut inbox, seq, sent, opened, &mut errors).await;
        let _ = all.add(&histogram);
        fanouts.push(Fanout::of(seq, &histogram, opened));
        if ended {
            break;
        }
        to_move = 1 - to_move;
    }
    // The last move's reads, then the operations the moves cost.
    if config.client_reads == ClientReads::ViewPerEvent {
        let expected = reads_before + opened * fanouts.len();
        let deadline = Instant::now() + PHASE_DEADLINE;
        while reads.load(Ordering::Relaxed) < expected && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let store_operations_per_move = match (config.metrics, operations_before) {
        (Some(metrics), Some(before)) if !fanouts.is_empty() => {
            let after = store_operations(metrics).await?;
            Some(
                after
                    .into_iter()
                    .map(|(operation, n)| {
                        let spent = n - before.get(&operation).copied().unwrap_or(0.0);
                        (operation, spent / fanouts.len() as f64)
                    })
                    .collect(),
            )
        }
        _ => None,
    };
    for watcher in &watchers {
        watcher.abort();
    }
    let bytes_per_stream = match (rss_before, rss_after) {
        (Some(before), Some(after)) if opened > 0 => {
            Some((after as f64 - before as f64) / opened as f64)
        }
        _ => None,
    };
    Ok(StreamsFigures {
        requested: config.count,
        opened,
        errors,
        connections: pool.len(),
        open_seconds,
        server_pid: config.server_pid,
        rss_before_bytes: rss_before,
        rss_after_bytes: rss_after,
        bytes_per_stream,
        start_of_play,
        fanouts,
        arrival: Latency::of(&all),
        client_reads: config.client_reads,
        store_operations_per_move,
        load_before,
        load_after: Load::now(),
    })
}

impl Fanout {
    fn of(seq: u64, arrivals: &Histogram<u64>, streams: usize) -> Fanout {
        Fanout {
            seq,
            arrival: Latency::of(arrivals),
            missing: streams.saturating_sub(arrivals.len() as usize),
        }
    }
}

/// The arrivals of event `seq` on the `streams` open streams, timed from `sent`, until every
/// stream has it or [`PHASE_DEADLINE`] passes; failures are counted into `errors`.
async fn arrivals(
    inbox: &mut mpsc::UnboundedReceiver<Report>,
    seq: u64,
    sent: Instant,
    streams: usize,
    errors: &mut BTreeMap<String, u64>,
) -> Histogram<u64> {
    let mut histogram = latency_histogram();
    let deadline = Instant::now() + PHASE_DEADLINE;
    while (histogram.len() as usize) < streams {
        match tokio::time::timeout_at(deadline, inbox.recv()).await {
            Ok(Some(Report::Arrived(s, at))) if s == seq => {
                let us = u64::try_from(at.saturating_duration_since(sent).as_micros())
                    .unwrap_or(u64::MAX)
                    .max(1);
                let _ = histogram.record(us);
            }
            Ok(Some(Report::Failed(code))) => {
                *errors.entry(code).or_default() += 1;
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
    histogram
}

/// A seat of the watched game, acting through the gateway.
struct Seat {
    client: PlayerServiceClient<tonic::transport::Channel>,
    token: String,
    game_id: String,
    side: pb::Side,
    keys: u64,
}

impl Seat {
    fn new(
        pool: &Pool,
        secret: &str,
        player: &str,
        game_id: &str,
        side: pb::Side,
    ) -> Result<Seat, BenchError> {
        Ok(Seat {
            client: PlayerServiceClient::new(pool.pick()),
            token: token(secret, player)?,
            game_id: game_id.to_string(),
            side,
            keys: 0,
        })
    }

    fn context(&mut self, expected_version: Option<u64>) -> Option<pb::ActionContext> {
        self.keys += 1;
        Some(pb::ActionContext {
            game_id: self.game_id.clone(),
            idempotency_key: format!("{}-{:?}-{}", self.game_id, self.side, self.keys),
            expected_version,
        })
    }

    /// Confirms the seat's deployment; returns the seq of the start of play if it caused it.
    async fn confirm(&mut self) -> Result<Option<u64>, BenchError> {
        let context = self.context(None);
        let result = self
            .client
            .confirm(unary(&self.token, pb::ConfirmRequest { context }))
            .await
            .map_err(|s| BenchError::setup(format!("Confirm of {:?}", self.side), s))?
            .into_inner()
            .result
            .unwrap_or_default();
        Ok(result
            .events
            .iter()
            .find(|e| matches!(e.event, Some(pb::game_event::Event::PlayStarted(_))))
            .map(|e| e.seq))
    }

    /// Plays the first legal move; returns the move's seq, when it was sent, and whether the
    /// game ended.
    async fn play(&mut self) -> Result<(u64, Instant, bool), BenchError> {
        let legal = self
            .client
            .legal_moves(unary(
                &self.token,
                pb::LegalMovesRequest {
                    game_id: self.game_id.clone(),
                    min_version: None,
                },
            ))
            .await
            .map_err(|s| BenchError::setup("LegalMoves", s))?
            .into_inner();
        let chosen = legal.moves.first().cloned().ok_or_else(|| {
            BenchError::setup(
                "LegalMoves",
                tonic::Status::failed_precondition(format!("{:?} has no legal move", self.side)),
            )
        })?;
        let context = self.context(Some(legal.version));
        let sent = Instant::now();
        let result = self
            .client
            .play(unary(
                &self.token,
                pb::PlayRequest {
                    context,
                    r#move: Some(chosen),
                },
            ))
            .await
            .map_err(|s| BenchError::setup("Play", s))?
            .into_inner()
            .result
            .unwrap_or_default();
        let ended = result
            .events
            .iter()
            .any(|e| matches!(e.event, Some(pb::game_event::Event::Ended(_))));
        Ok((legal.version + 1, sent, ended))
    }
}
