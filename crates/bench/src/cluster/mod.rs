//! `bench cluster`: players that keep playing while the cluster under them is upgraded, scaled,
//! cut and partitioned (`scripts/cluster-test`).
//!
//! `bench play` measures a healthy server and gives a game up at its first error. Here errors are
//! expected, so each client behaves as a real app should: every call has a deadline and is
//! retried with the same idempotency key while the error is retriable; a stream that ends, errs,
//! is told to reconnect or stays silent too long is opened again from the last event seen. What
//! the run records is what the harness judges:
//!
//! - `moves.csv`: every acknowledged move (game, side, version, first send, acknowledgement,
//!   attempts), so the harness can check each against the stored log (`lost`, `applied_twice`)
//!   and compute submit-to-acknowledge percentiles over any window;
//! - `errors.csv`: every failed call, with its RPC, gRPC code and the error contract's reason;
//! - `streams.csv`: every reopened stream (why, the seq it resumed from, how long it was without
//!   one) and every gap or repeat a stream delivered;
//! - `summary.json`: games started and ended (by end reason), games that did not end, and the
//!   streams' gap and repeat counts.
//!
//! Games are made the way players make them through the public API alone: one player creates an
//! invite, the other accepts it (matchmaking makes the game at the session). Some games get a
//! spectator, whose stream is checked the same way. A game is conceded by the side to move once
//! it has reached a drawn number of plies, or when the run is told to stop (a stop file appears),
//! so every game ends by the players' own actions; the run then waits for every game to end.

use crate::BenchError;
use crate::connections::{Pool, code_name, token};
use crate::pb;
use crate::pb::game_event::Event;
use crate::pb::player_service_client::PlayerServiceClient;
use crate::rng::SeatRng;
use hidden_front_api_error::ErrorSummary;
use parking_lot::Mutex;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

/// A unary call's deadline: long enough for a loaded two-core machine, short enough that a call
/// stuck on a dead host is abandoned and retried elsewhere.
const CALL_DEADLINE: Duration = Duration::from_secs(5);

/// How long a seat retries one action before it gives the game up (and the harness fails it).
const RETRY_HORIZON: Duration = Duration::from_secs(120);

/// How long a stream may say nothing while the opponent is to move before the seat asks
/// whether it missed something: far above any think time of the run.
const STREAM_SILENCE: Duration = Duration::from_secs(10);

/// How long a seat letting its clock run out waits for its `TimedOut` before it records the
/// timer as not fired and moves: the `online` move clock (30 s) plus the clock's lease and
/// retries, with room.
const STALL_GIVE_UP: Duration = Duration::from_secs(75);

/// Settings of a `bench cluster` run.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The ingress (load balancer) in front of the gateways: the player gRPC API.
    pub ingress: SocketAddr,
    /// HTTP/2 connections the players share (each multiplexes many players).
    pub connections: usize,
    /// Games played at once.
    pub games: usize,
    /// Percent of games with a spectator.
    pub spectate_percent: u32,
    /// Mean think time before each move.
    pub think: Duration,
    /// A game is conceded once it reaches a number of events drawn from this range.
    pub plies: (u64, u64),
    /// The run winds down when this file appears (or after `max_duration`).
    pub stop_file: PathBuf,
    /// The longest the run plays before winding down by itself.
    pub max_duration: Duration,
    /// How long the wind-down waits for every game to end.
    pub finish_timeout: Duration,
    /// Where the CSV files and the summary go.
    pub out_dir: PathBuf,
    /// The gateways' HS256 secret.
    pub jwt_secret: String,
    /// Seed of the random choices.
    pub seed: u64,
    /// The games' time control, by name (`online`: a 30 s move clock).
    pub time_control: String,
    /// Percent of games in which one seat lets its move clock run out once, so that the clock
    /// service's timers fire during the run (each must fire exactly once).
    pub stall_percent: u32,
}

/// `summary.json`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ClusterSummary {
    /// Games whose invite was accepted.
    pub games_started: u64,
    /// Games whose end a seat saw, by end reason.
    pub games_ended: BTreeMap<String, u64>,
    /// Games that had not ended when the run stopped waiting (ids).
    pub games_unfinished: Vec<String>,
    /// Games given up because an action was refused past the retry horizon (ids).
    pub games_failed: Vec<String>,
    /// Moves acknowledged.
    pub moves_acked: u64,
    /// Seqs a stream skipped (filtered out for that viewer, or missed: the harness tells which).
    pub stream_skips: u64,
    /// Events a stream delivered again (a seq below the next expected one).
    pub stream_repeats: u64,
    /// Spectator streams that followed a game to its end.
    pub spectators_finished: u64,
    /// Spectators whose stream did not reach the end.
    pub spectators_unfinished: u64,
    /// Streams reopened, by cause.
    pub reopened: BTreeMap<String, u64>,
    /// Wall-clock milliseconds of the run's start and end.
    pub started_unix_ms: u64,
    /// When the run ended.
    pub ended_unix_ms: u64,
}

/// Milliseconds since the Unix epoch.
fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The run's output files, written line by line.
struct Outputs {
    moves: std::io::BufWriter<std::fs::File>,
    errors: std::io::BufWriter<std::fs::File>,
    streams: std::io::BufWriter<std::fs::File>,
    stalls: std::io::BufWriter<std::fs::File>,
    games: std::io::BufWriter<std::fs::File>,
    commands: std::io::BufWriter<std::fs::File>,
}

impl Outputs {
    fn create(dir: &Path) -> Result<Outputs, BenchError> {
        std::fs::create_dir_all(dir).map_err(|e| BenchError::io(dir.display().to_string(), e))?;
        let open = |name: &str, header: &str| -> Result<_, BenchError> {
            let path = dir.join(name);
            let file = std::fs::File::create(&path)
                .map_err(|e| BenchError::io(path.display().to_string(), e))?;
            let mut file = std::io::BufWriter::new(file);
            writeln!(file, "{header}").map_err(|e| BenchError::io(name.to_string(), e))?;
            Ok(file)
        };
        Ok(Outputs {
            moves: open(
                "moves.csv",
                "first_sent_unix_ms,last_sent_unix_ms,acked_unix_ms,latency_us,attempts,game,side,version,replayed",
            )?,
            errors: open("errors.csv", "unix_ms,rpc,code,reason,message")?,
            streams: open("streams.csv", "unix_ms,game,role,what,seq,detail")?,
            stalls: open("stalls.csv", "unix_ms,game,side,version,outcome,waited_ms")?,
            games: open("games.csv", "started_unix_ms,ended_unix_ms,game,end_reason")?,
            commands: open(
                "commands.csv",
                "unix_ms,game,side,key,outcome,version,code,reason",
            )?,
        })
    }
}

/// Everything the tasks of a run share.
struct Run {
    config: ClusterConfig,
    pool: Pool,
    run_id: String,
    /// Cancelled when the run winds down: every seat concedes at its next turn, and a seat
    /// letting its clock run out gives that up at once instead of waiting for its timer.
    stop: CancellationToken,
    games_seq: AtomicU64,
    out: Mutex<Outputs>,
    summary: Mutex<ClusterSummary>,
    /// Games started and not yet ended.
    open_games: Mutex<BTreeMap<String, ()>>,
}

/// Whether a failed call may be tried again as it is (with the same idempotency key): the server
/// or the way to it was unavailable, the call ran out of time, a limit asked to slow down, or the
/// error did not come from the service at all (docs/errors.md, "Retrying").
fn retriable(status: &Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable | Code::DeadlineExceeded | Code::ResourceExhausted | Code::Cancelled
    ) || !from_the_service(status)
}

/// Whether the service itself gave this answer: every error the service makes carries an
/// `ErrorInfo` reason (docs/errors.md). One without was made on the way: tonic's own status for
/// a broken HTTP/2 stream or connection, or a stream a load balancer cut ("missing grpc-status
/// trailer"), which is what a client sees when the host under it disappears mid-call. Nothing
/// about the command is known from it, so only a retry with the same key can tell.
fn from_the_service(status: &Status) -> bool {
    hidden_front_api_error::has_reason(status)
}

impl Run {
    fn error(&self, rpc: &str, status: &Status) {
        let reason = if from_the_service(status) {
            ErrorSummary::of(status).reason
        } else {
            "TRANSPORT".to_string()
        };
        // The message's start, as one CSV field.
        let message: String = status
            .message()
            .chars()
            .take(160)
            .map(|c| {
                if c == ',' || c == '\n' || c == '"' {
                    ';'
                } else {
                    c
                }
            })
            .collect();
        let mut out = self.out.lock();
        let _ = writeln!(
            out.errors,
            "{},{rpc},{},{reason},{message}",
            unix_ms(),
            code_name(status)
        );
    }

    /// A line of `streams.csv`: `resumed` (seq: the resume point, detail: ms without a stream),
    /// `gap` (seq: the first skipped, detail: the first delivered after it), `repeat` (seq),
    /// `hint_mismatch` (seq: the hint's resume point, detail: the seq expected).
    fn stream_note(&self, game: &str, role: &str, what: &str, seq: u64, detail: u64) {
        let mut out = self.out.lock();
        let _ = writeln!(
            out.streams,
            "{},{game},{role},{what},{seq},{detail}",
            unix_ms()
        );
    }

    /// A line of `commands.csv`: what became of one command key in the end, as its seat saw it:
    /// `acked` (with the version the answer named), `refused` (the service said no: the code and
    /// reason) or `gave_up` (retries ran out without an answer). The harness holds these
    /// against the keys the session stored (`game_commands`), so a command applied without its
    /// seat knowing is told apart from one applied twice.
    fn command_note(&self, game: &str, side: pb::Side, key: &str, outcome: &Result<u64, Status>) {
        let side = if side == pb::Side::South {
            "south"
        } else {
            "north"
        };
        let line = match outcome {
            Ok(version) => format!("acked,{version},,"),
            Err(status) if from_the_service(status) && !retriable(status) => format!(
                "refused,,{},{}",
                code_name(status),
                ErrorSummary::of(status).reason
            ),
            Err(status) => format!("gave_up,,{},", code_name(status)),
        };
        let mut out = self.out.lock();
        let _ = writeln!(out.commands, "{},{game},{side},{key},{line}", unix_ms());
    }

    fn stopping(&self) -> bool {
        self.stop.is_cancelled()
    }
}

/// A unary request with the token and the call deadline.
fn request<T>(token: &str, message: T) -> Request<T> {
    let mut request = crate::connections::authed(token, message);
    request.set_timeout(CALL_DEADLINE);
    request
}

/// Backoff before attempt `attempt` (from 1): 50 ms doubling to 1 s, with jitter.
fn backoff(attempt: u32, rng: &mut SeatRng) -> Duration {
    let base = 50u64 << attempt.min(5);
    let base = base.min(1000);
    Duration::from_millis(base / 2 + rng.below(usize::try_from(base).unwrap_or(1000)) as u64 / 2)
}

/// Runs `bench cluster` until the stop file appears, then waits for every game to end.
pub async fn run(config: ClusterConfig) -> Result<ClusterSummary, BenchError> {
    if config.games == 0 {
        return Err(BenchError::Setting("--games must be at least 1".into()));
    }
    let pool = Pool::for_connections(config.ingress, config.connections.max(1)).await?;
    let out = Outputs::create(&config.out_dir)?;
    let run = Arc::new(Run {
        run_id: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
        pool,
        stop: CancellationToken::new(),
        games_seq: AtomicU64::new(0),
        out: Mutex::new(out),
        summary: Mutex::new(ClusterSummary {
            started_unix_ms: unix_ms(),
            ..ClusterSummary::default()
        }),
        open_games: Mutex::new(BTreeMap::new()),
        config,
    });
    let started = Instant::now();
    let slots: Vec<_> = (0..run.config.games)
        .map(|slot| tokio::spawn(game_slot(Arc::clone(&run), slot)))
        .collect();
    // The stop file is the harness's word; checked a few times a second.
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    while !run.config.stop_file.exists() && started.elapsed() < run.config.max_duration {
        tick.tick().await;
        // Written out as it goes, so the harness can watch the run (its first moves) and a
        // killed run still leaves what it saw.
        let mut out = run.out.lock();
        let _ = out.moves.flush();
        let _ = out.errors.flush();
        let _ = out.streams.flush();
        let _ = out.commands.flush();
    }
    run.stop.cancel();
    let finish = async {
        for slot in slots {
            let _ = slot.await;
        }
    };
    let _ = tokio::time::timeout(run.config.finish_timeout, finish).await;
    let mut summary = run.summary.lock().clone();
    summary.games_unfinished = run.open_games.lock().keys().cloned().collect();
    summary.ended_unix_ms = unix_ms();
    {
        let mut out = run.out.lock();
        let _ = out.moves.flush();
        let _ = out.errors.flush();
        let _ = out.streams.flush();
        let _ = out.stalls.flush();
        let _ = out.games.flush();
        let _ = out.commands.flush();
    }
    let path = run.config.out_dir.join("summary.json");
    crate::report::write_json(&path, &summary)?;
    Ok(summary)
}

/// One slot: games one after the other until the run stops.
async fn game_slot(run: Arc<Run>, slot: usize) {
    let mut rng = SeatRng::new(run.config.seed ^ ((slot as u64 + 1) * 0x9e37_79b9));
    // Slots start spread over the first two seconds, as players arrive.
    tokio::time::sleep(Duration::from_millis(rng.below(2000) as u64)).await;
    while !run.stopping() {
        let n = run.games_seq.fetch_add(1, Ordering::Relaxed);
        if !one_game(&run, slot, n, &mut rng).await {
            // A game that could not start: wait a little before the next attempt.
            tokio::time::sleep(backoff(3, &mut rng)).await;
        }
    }
}

/// Retries `call` with backoff while its error is retriable, up to the retry horizon.
async fn with_retry<T, F, Fut>(
    run: &Run,
    rng: &mut SeatRng,
    rpc: &str,
    mut call: F,
) -> Result<(T, u32), Status>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Status>>,
{
    let horizon = Instant::now() + RETRY_HORIZON;
    let mut attempt = 0;
    loop {
        attempt += 1;
        match call().await {
            Ok(value) => return Ok((value, attempt)),
            Err(status) => {
                run.error(rpc, &status);
                if !retriable(&status) || Instant::now() >= horizon {
                    return Err(status);
                }
                tokio::time::sleep(backoff(attempt, rng)).await;
            }
        }
    }
}

/// Creates one game by invite and plays it to its end. False when it could not be created.
async fn one_game(run: &Arc<Run>, slot: usize, n: u64, rng: &mut SeatRng) -> bool {
    let south = format!("cl{}s{slot}g{n}a", run.run_id);
    let north = format!("cl{}s{slot}g{n}b", run.run_id);
    let (Ok(south_token), Ok(north_token)) = (
        token(&run.config.jwt_secret, &south),
        token(&run.config.jwt_secret, &north),
    ) else {
        return false;
    };
    let client = PlayerServiceClient::new(run.pool.pick());
    let invite_id = format!("{}-{slot}-{n}", run.run_id);
    let created = with_retry(run, rng, "CreateInvite", || {
        let mut client = client.clone();
        let req = request(
            &south_token,
            pb::PlayerServiceCreateInviteRequest {
                invite_id: invite_id.clone(),
                rules: String::new(),
                time_control: run.config.time_control.clone(),
            },
        );
        async move { client.create_invite(req).await }
    })
    .await;
    let Ok((created, _)) = created else {
        return false;
    };
    let Some(invite) = created.into_inner().invite else {
        return false;
    };
    let accepted = with_retry(run, rng, "AcceptInvite", || {
        let mut client = client.clone();
        let req = request(
            &north_token,
            pb::PlayerServiceAcceptInviteRequest {
                code: invite.code.clone(),
            },
        );
        async move { client.accept_invite(req).await }
    })
    .await;
    let Ok((accepted, _)) = accepted else {
        return false;
    };
    let game_id = accepted.into_inner().game_id;
    let game_started = unix_ms();
    run.summary.lock().games_started += 1;
    run.open_games.lock().insert(game_id.clone(), ());
    let cap = run.config.plies.0
        + rng.below(
            usize::try_from(run.config.plies.1.saturating_sub(run.config.plies.0) + 1).unwrap_or(1),
        ) as u64;
    let seed = rng.next_u64();
    // The seat that stalls once (if any) and the event count from which it does.
    let stall = rng.percent(run.config.stall_percent).then(|| {
        let side = if rng.percent(50) {
            pb::Side::South
        } else {
            pb::Side::North
        };
        (
            side,
            cap / 3 + rng.below(usize::try_from(cap / 3).unwrap_or(1).max(1)) as u64,
        )
    });
    let seats = [
        (pb::Side::South, south_token.clone()),
        (pb::Side::North, north_token.clone()),
    ]
    .map(|(side, token)| {
        let seat = Seat {
            run: Arc::clone(run),
            game_id: game_id.clone(),
            side,
            token,
            rng: SeatRng::new(seed ^ side as u64),
            keys: 0,
            next_seq: 1,
            cap,
            stall_from: stall.and_then(|(s, from)| (s == side).then_some(from)),
            client: PlayerServiceClient::new(run.pool.pick()),
        };
        tokio::spawn(seat.run())
    });
    let spectator = rng.percent(run.config.spectate_percent).then(|| {
        let watcher = format!("cl{}s{slot}g{n}w", run.run_id);
        let token = token(&run.config.jwt_secret, &watcher).unwrap_or_default();
        tokio::spawn(spectate(
            Arc::clone(run),
            game_id.clone(),
            token,
            PlayerServiceClient::new(run.pool.pick()),
            seed,
        ))
    });
    let mut ended = None;
    for seat in seats {
        if let Ok(Some(reason)) = seat.await {
            ended.get_or_insert(reason);
        }
    }
    if let Some(spectator) = spectator {
        let finished = spectator.await.unwrap_or(false);
        let mut summary = run.summary.lock();
        match finished {
            true => summary.spectators_finished += 1,
            false => summary.spectators_unfinished += 1,
        }
    }
    {
        let mut out = run.out.lock();
        let _ = writeln!(
            out.games,
            "{game_started},{},{game_id},{}",
            unix_ms(),
            ended.as_deref().unwrap_or("")
        );
    }
    match ended {
        Some(reason) => {
            run.open_games.lock().remove(&game_id);
            *run.summary.lock().games_ended.entry(reason).or_default() += 1;
        }
        None => run.summary.lock().games_failed.push(game_id),
    }
    true
}

/// A stream that follows one game from a seq on, reopened whenever it breaks.
struct Follower {
    game_id: String,
    token: String,
    spectate: bool,
    role: &'static str,
    client: PlayerServiceClient<Channel>,
    stream: Option<tonic::Streaming<pb::SubscribeResponse>>,
    /// When the stream was lost (for the time without one).
    lost_at: Option<Instant>,
}

/// What a follower delivered.
enum Delivered {
    Event(Box<pb::GameEvent>),
    /// Nothing for [`STREAM_SILENCE`].
    Silent,
    /// The run gave up on the game (retries exhausted).
    Broken,
}

impl Follower {
    /// The next event at or after `next_seq`, reopening the stream as often as needed.
    async fn next(&mut self, run: &Run, rng: &mut SeatRng, next_seq: u64) -> Delivered {
        loop {
            if self.stream.is_none() {
                let from = next_seq;
                let opened = with_retry(run, rng, "Subscribe", || {
                    let mut client = self.client.clone();
                    let req = crate::connections::authed(
                        &self.token,
                        pb::SubscribeRequest {
                            game_id: self.game_id.clone(),
                            from_seq: from,
                            spectate: self.spectate,
                            with_status: false,
                        },
                    );
                    async move { client.subscribe(req).await }
                })
                .await;
                match opened {
                    Ok((stream, _)) => {
                        if let Some(lost) = self.lost_at.take() {
                            let without = u64::try_from(lost.elapsed().as_millis()).unwrap_or(0);
                            run.stream_note(&self.game_id, self.role, "resumed", from, without);
                        }
                        self.stream = Some(stream.into_inner());
                    }
                    Err(_) => return Delivered::Broken,
                }
            }
            let Some(stream) = self.stream.as_mut() else {
                continue;
            };
            let item = tokio::time::timeout(STREAM_SILENCE, stream.message()).await;
            let cause = match item {
                Err(_) => return Delivered::Silent,
                Ok(Ok(Some(item))) => match item.item {
                    Some(pb::subscribe_response::Item::Event(event)) => {
                        return Delivered::Event(Box::new(event));
                    }
                    Some(pb::subscribe_response::Item::Reconnect(hint)) => {
                        if hint.resume_from_seq != next_seq {
                            run.stream_note(
                                &self.game_id,
                                self.role,
                                "hint_mismatch",
                                hint.resume_from_seq,
                                next_seq,
                            );
                        }
                        "reconnect_hint"
                    }
                    // A status this client did not ask for (with_status false), or nothing.
                    Some(pb::subscribe_response::Item::Status(_)) | None => continue,
                },
                Ok(Ok(None)) => "ended",
                Ok(Err(status)) => {
                    run.error("Subscribe", &status);
                    "error"
                }
            };
            self.drop_stream(run, cause);
        }
    }

    fn drop_stream(&mut self, run: &Run, cause: &str) {
        self.stream = None;
        self.lost_at.get_or_insert_with(Instant::now);
        *run.summary
            .lock()
            .reopened
            .entry(cause.to_string())
            .or_default() += 1;
    }
}

/// Checks `event` against the seq expected next: counts gaps and repeats. True when the event
/// is new (to be handled).
fn in_order(run: &Run, game: &str, role: &str, event: &pb::GameEvent, next_seq: &mut u64) -> bool {
    if event.seq < *next_seq {
        run.summary.lock().stream_repeats += 1;
        run.stream_note(game, role, "repeat", event.seq, 0);
        return false;
    }
    if event.seq > *next_seq {
        // Not necessarily a miss: a player's stream leaves out what it may not see (the
        // opponent's deployment). The harness checks the skipped seqs against the stored log.
        run.summary.lock().stream_skips += 1;
        run.stream_note(game, role, "gap", *next_seq, event.seq);
    }
    *next_seq = event.seq + 1;
    true
}

/// The end reason's name, as in the proto (`END_REASON_RESIGNED` → `RESIGNED`).
fn end_reason(event: &pb::GameEvent) -> Option<String> {
    match &event.event {
        Some(Event::Ended(ended)) => {
            let reason = ended.outcome.as_ref().map_or(0, |o| o.reason);
            let name = pb::EndReason::try_from(reason).map_or_else(
                |_| format!("UNKNOWN_{reason}"),
                |r| r.as_str_name().to_string(),
            );
            Some(name.trim_start_matches("END_REASON_").to_string())
        }
        _ => None,
    }
}

/// A spectator following a game to its end. True when it saw the end.
async fn spectate(
    run: Arc<Run>,
    game_id: String,
    token: String,
    client: PlayerServiceClient<Channel>,
    seed: u64,
) -> bool {
    let mut rng = SeatRng::new(seed ^ 0x5eed);
    let mut follower = Follower {
        game_id: game_id.clone(),
        token,
        spectate: true,
        role: "spectator",
        client,
        stream: None,
        lost_at: None,
    };
    let mut next_seq = 1;
    loop {
        match follower.next(&run, &mut rng, next_seq).await {
            Delivered::Event(event) => {
                if in_order(&run, &game_id, "spectator", &event, &mut next_seq)
                    && end_reason(&event).is_some()
                {
                    return true;
                }
            }
            Delivered::Silent => {
                // A spectator cannot ask whose turn it is; while the run winds down for long it
                // gives up, otherwise it reopens the stream to be sure it is not a dead one.
                follower.drop_stream(&run, "silent");
                if run.stopping() && run.open_games.lock().get(&game_id).is_none() {
                    return false;
                }
            }
            Delivered::Broken => return false,
        }
    }
}

/// One seat of one game.
struct Seat {
    run: Arc<Run>,
    game_id: String,
    side: pb::Side,
    token: String,
    rng: SeatRng,
    keys: u64,
    next_seq: u64,
    /// Concede once the game has this many events.
    cap: u64,
    /// Let the move clock run out once, at the first turn from this version on.
    stall_from: Option<u64>,
    client: PlayerServiceClient<Channel>,
}

/// What a turn did.
enum Turn {
    /// A move (or a concession) was acknowledged; `Some` with the end reason if it ended the game.
    Done(Option<String>),
    /// Not this seat's turn after all.
    NotMine,
    /// Retries ran out.
    Failed,
}

impl Seat {
    fn key(&mut self, what: &str) -> String {
        self.keys += 1;
        format!("{}-{:?}-{what}-{}", self.game_id, self.side, self.keys)
    }

    fn context(&self, key: &str, expected_version: Option<u64>) -> Option<pb::ActionContext> {
        Some(pb::ActionContext {
            game_id: self.game_id.clone(),
            idempotency_key: key.to_string(),
            expected_version,
        })
    }

    /// Plays the seat to the game's end. Returns the end reason, `None` if it gave up.
    async fn run(mut self) -> Option<String> {
        let run = Arc::clone(&self.run);
        let mut follower = Follower {
            game_id: self.game_id.clone(),
            token: self.token.clone(),
            spectate: false,
            role: if self.side == pb::Side::South {
                "south"
            } else {
                "north"
            },
            client: self.client.clone(),
            stream: None,
            lost_at: None,
        };
        let role = follower.role;
        // Confirm the deployment the server drew (one key, retried as is).
        let key = self.key("confirm");
        let confirmed = {
            let mut rng = self.rng.clone();
            let (client, token, context) = (
                self.client.clone(),
                self.token.clone(),
                self.context(&key, None),
            );
            with_retry(&run, &mut rng, "Confirm", || {
                let mut client = client.clone();
                let req = request(
                    &token,
                    pb::ConfirmRequest {
                        context: context.clone(),
                    },
                );
                async move {
                    client
                        .confirm(req)
                        .await
                        .map(|a| a.into_inner().result.unwrap_or_default().version)
                }
            })
            .await
        };
        let confirmed = confirmed.map(|(version, _)| version);
        run.command_note(&self.game_id, self.side, &key, &confirmed);
        if confirmed.is_err() {
            return None;
        }
        let mut my_turn = false;
        // Since when this seat has been letting its clock run out, and at which version.
        let mut stalled: Option<(Instant, u64, u64)> = None;
        // A stall given up at the wind-down: its timer may still fire before the concession.
        let mut withdrawn: Option<(Instant, u64, u64)> = None;
        loop {
            if my_turn
                && stalled.is_none()
                && !run.stopping()
                && self.stall_from.is_some_and(|from| self.next_seq > from)
            {
                self.stall_from = None;
                stalled = Some((Instant::now(), unix_ms(), self.next_seq - 1));
                my_turn = false;
            }
            if let Some((since, at_ms, version)) = stalled {
                // Waited far past the move clock and the clock service's retries: not fired.
                if since.elapsed() > STALL_GIVE_UP {
                    self.stall_note(at_ms, version, "not_fired", since);
                    stalled = None;
                    my_turn = true;
                }
            }
            if my_turn && stalled.is_none() {
                let think = self.run.config.think;
                if !think.is_zero() {
                    let ms = u64::try_from(think.as_millis()).unwrap_or(0);
                    let jitter = self.rng.below(usize::try_from(ms).unwrap_or(0) + 1) as u64;
                    tokio::time::sleep(Duration::from_millis(ms / 2 + jitter)).await;
                }
                match self.turn().await {
                    Turn::Done(Some(reason)) => return Some(reason),
                    Turn::Done(None) | Turn::NotMine => my_turn = false,
                    Turn::Failed => return None,
                }
            }
            let mut rng = self.rng.clone();
            let delivered = match stalled {
                // Letting the clock run out: until the timer fires, or the run winds down
                // (then the seat concedes now rather than wait out its clock).
                Some((since, at_ms, version)) => tokio::select! {
                    delivered = follower.next(&run, &mut rng, self.next_seq) => delivered,
                    () = run.stop.cancelled() => {
                        self.rng = rng;
                        self.stall_note(at_ms, version, "withdrawn", since);
                        withdrawn = stalled.take();
                        my_turn = true;
                        continue;
                    }
                },
                None => follower.next(&run, &mut rng, self.next_seq).await,
            };
            self.rng = rng;
            match delivered {
                Delivered::Event(event) => {
                    if !in_order(&run, &self.game_id, role, &event, &mut self.next_seq) {
                        continue;
                    }
                    if let Some(reason) = end_reason(&event) {
                        return Some(reason);
                    }
                    match &event.event {
                        Some(Event::PlayStarted(_)) => my_turn = self.is_my_turn().await,
                        Some(Event::Moved(moved)) => my_turn = moved.side != self.side as i32,
                        Some(Event::TimedOut(out)) => {
                            my_turn = out.side != self.side as i32;
                            if out.side == self.side as i32 {
                                match stalled.take().or_else(|| withdrawn.take()) {
                                    Some((since, at_ms, version)) => {
                                        self.stall_note(at_ms, version, "fired", since);
                                    }
                                    None => self.stall_note(
                                        unix_ms(),
                                        event.seq,
                                        "unasked",
                                        Instant::now(),
                                    ),
                                }
                            }
                        }
                        _ => {}
                    }
                }
                Delivered::Silent => {
                    // Quiet for long while waiting: either the opponent is stuck, or this
                    // stream is dead without knowing. Ask, and reopen it to be sure. (A seat
                    // letting its clock run out expects the quiet.)
                    follower.drop_stream(&run, "silent");
                    if stalled.is_none() {
                        my_turn = self.is_my_turn().await;
                    }
                }
                Delivered::Broken => return None,
            }
        }
    }

    fn stall_note(&self, at_ms: u64, version: u64, outcome: &str, since: Instant) {
        let waited = u64::try_from(since.elapsed().as_millis()).unwrap_or(0);
        let side = if self.side == pb::Side::South {
            "south"
        } else {
            "north"
        };
        let mut out = self.run.out.lock();
        let _ = writeln!(
            out.stalls,
            "{at_ms},{},{side},{version},{outcome},{waited}",
            self.game_id
        );
    }

    /// Whether the game's current version has moves for this seat.
    async fn is_my_turn(&mut self) -> bool {
        let mut rng = self.rng.clone();
        let (client, token, game_id) = (
            self.client.clone(),
            self.token.clone(),
            self.game_id.clone(),
        );
        let min_version = self.next_seq.saturating_sub(1);
        let legal = with_retry(&self.run, &mut rng, "LegalMoves", || {
            let mut client = client.clone();
            let req = request(
                &token,
                pb::LegalMovesRequest {
                    game_id: game_id.clone(),
                    min_version: Some(min_version),
                },
            );
            async move { client.legal_moves(req).await }
        })
        .await;
        self.rng = rng;
        legal.is_ok_and(|(legal, _)| !legal.into_inner().moves.is_empty())
    }

    /// One turn: a random legal move, or a concession once the game is long enough or the run
    /// winds down. The same key is retried until acknowledged; a refusal because the game moved
    /// on asks for the legal moves again.
    async fn turn(&mut self) -> Turn {
        let run = Arc::clone(&self.run);
        let first_sent = unix_ms();
        for _ in 0..5 {
            let mut rng = self.rng.clone();
            let (client, token, game_id) = (
                self.client.clone(),
                self.token.clone(),
                self.game_id.clone(),
            );
            let min_version = self.next_seq.saturating_sub(1);
            let legal = with_retry(&run, &mut rng, "LegalMoves", || {
                let mut client = client.clone();
                let req = request(
                    &token,
                    pb::LegalMovesRequest {
                        game_id: game_id.clone(),
                        min_version: Some(min_version),
                    },
                );
                async move { client.legal_moves(req).await }
            })
            .await;
            let Ok((legal, _)) = legal else {
                self.rng = rng;
                return Turn::Failed;
            };
            let legal = legal.into_inner();
            if legal.moves.is_empty() {
                self.rng = rng;
                return Turn::NotMine;
            }
            let concede = run.stopping() || legal.version >= self.cap;
            let key = self.key(if concede { "concede" } else { "move" });
            let context = self.context(&key, Some(legal.version));
            let chosen = legal.moves[rng.below(legal.moves.len())].clone();
            let mut last_sent = first_sent;
            let answer = with_retry(
                &run,
                &mut rng,
                if concede { "Concede" } else { "Play" },
                || {
                    let mut client = client.clone();
                    let context = context.clone();
                    let chosen = chosen.clone();
                    let token = token.clone();
                    last_sent = unix_ms();
                    async move {
                        if concede {
                            let req = request(&token, pb::ConcedeRequest { context });
                            client.concede(req).await.map(|a| a.into_inner().result)
                        } else {
                            let req = request(
                                &token,
                                pb::PlayRequest {
                                    context,
                                    r#move: Some(chosen),
                                },
                            );
                            client.play(req).await.map(|a| a.into_inner().result)
                        }
                    }
                },
            )
            .await;
            self.rng = rng;
            let outcome = answer
                .as_ref()
                .map(|(result, _)| result.as_ref().map_or(0, |r| r.version))
                .map_err(Clone::clone);
            run.command_note(&self.game_id, self.side, &key, &outcome);
            match answer {
                Ok((result, attempts)) => {
                    let result = result.unwrap_or_default();
                    let acked = unix_ms();
                    if !concede {
                        run.summary.lock().moves_acked += 1;
                        let mut out = run.out.lock();
                        let _ = writeln!(
                            out.moves,
                            "{first_sent},{last_sent},{acked},{},{attempts},{},{},{},{}",
                            acked.saturating_sub(last_sent) * 1000,
                            self.game_id,
                            if self.side == pb::Side::South {
                                "south"
                            } else {
                                "north"
                            },
                            result.version,
                            result.replayed
                        );
                    }
                    let ended = result.events.iter().find_map(end_reason);
                    return Turn::Done(ended);
                }
                Err(status)
                    if matches!(status.code(), Code::Aborted | Code::FailedPrecondition) =>
                {
                    // The game moved on (or ended) meanwhile: look again.
                    continue;
                }
                Err(_) => return Turn::Failed,
            }
        }
        Turn::NotMine
    }
}

/// The table printed at the end of a run.
pub fn table(summary: &ClusterSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "games started        {}", summary.games_started);
    let _ = writeln!(out, "games ended          {:?}", summary.games_ended);
    let _ = writeln!(
        out,
        "games unfinished     {}",
        summary.games_unfinished.len()
    );
    let _ = writeln!(out, "games failed         {}", summary.games_failed.len());
    let _ = writeln!(out, "moves acknowledged   {}", summary.moves_acked);
    let _ = writeln!(
        out,
        "stream skips/repeats {}/{}",
        summary.stream_skips, summary.stream_repeats
    );
    let _ = writeln!(out, "streams reopened     {:?}", summary.reopened);
    out
}
