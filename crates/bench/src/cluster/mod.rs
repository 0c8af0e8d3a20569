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

mod seat;
mod ws;

use crate::BenchError;
use crate::connections::{Pool, code_name, token};
use crate::pb;
use crate::pb::game_event::Event;
use crate::pb::player_service_client::PlayerServiceClient;
use crate::rng::SeatRng;
use hidden_front_api_error::ErrorSummary;
use parking_lot::Mutex;
use seat::{Seat, SeatWay, role};
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
use ws::WsSeat;

/// A unary call's deadline: long enough for a loaded two-core machine, short enough that a call
/// stuck on a dead host is abandoned and retried elsewhere.
const CALL_DEADLINE: Duration = Duration::from_secs(5);

/// How long a seat retries one action before it gives the game up (and the harness fails it).
const RETRY_HORIZON: Duration = Duration::from_secs(120);

/// How long a stream may say nothing while the opponent is to move before the seat asks
/// whether it missed something: far above any think time of the run.
const STREAM_SILENCE: Duration = Duration::from_secs(10);

/// Settings of a `bench cluster` run.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The ingress (load balancer) in front of the gateways: the player gRPC API.
    pub ingress: SocketAddr,
    /// The ingress's HTTP port (the page and the `Connect` WebSocket), for the WebSocket seats.
    pub ws_ingress: Option<SocketAddr>,
    /// Percent of the game slots whose games' two seats play over a `Connect` WebSocket each
    /// (through `ws_ingress`) instead of the gRPC API; their spectators stay on gRPC.
    pub ws_percent: u32,
    /// When set, the WebSocket slots start their first game only once this file exists (the
    /// cluster test creates it when the gateways serve `Connect`: the release it upgrades from
    /// has none).
    pub ws_from_file: Option<PathBuf>,
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
    /// Games started, by the seats' transport (`grpc`, `websocket`).
    pub games_by_transport: BTreeMap<String, u64>,
    /// Moves acknowledged, by the seats' transport.
    pub moves_acked_by_transport: BTreeMap<String, u64>,
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
            games: open(
                "games.csv",
                "started_unix_ms,ended_unix_ms,game,end_reason,transport",
            )?,
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
    if config.ws_percent > 100 {
        return Err(BenchError::Setting(format!(
            "--ws-percent must be at most 100, not {}",
            config.ws_percent
        )));
    }
    if config.ws_percent > 0 && config.ws_ingress.is_none() {
        return Err(BenchError::Setting(
            "--ws-percent needs --ws-ingress (the ingress's HTTP address)".into(),
        ));
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
    // The first `ws_percent` of the slots play over WebSocket, from when the file that opens
    // them exists (all of them at once: they start together when the gateways can serve them).
    let ws_slots = run.config.games * run.config.ws_percent as usize / 100;
    let websocket = slot < ws_slots.max(usize::from(run.config.ws_percent > 0));
    if let (true, Some(open)) = (websocket, &run.config.ws_from_file) {
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        while !open.exists() {
            if run.stopping() {
                return;
            }
            tick.tick().await;
        }
    }
    // Slots start spread over the first two seconds, as players arrive.
    tokio::time::sleep(Duration::from_millis(rng.below(2000) as u64)).await;
    while !run.stopping() {
        let n = run.games_seq.fetch_add(1, Ordering::Relaxed);
        if !one_game(&run, slot, n, websocket, &mut rng).await {
            // A game that could not start: wait a little before the next attempt.
            tokio::time::sleep(backoff(3, &mut rng)).await;
        }
    }
}

/// The retry rule of one action, for callers that write their own attempts: each failure is
/// recorded, and tried again after a backoff while its error is retriable, up to the retry
/// horizon.
struct Retry<'a> {
    run: &'a Run,
    rpc: &'a str,
    horizon: Instant,
    /// The attempt under way, from 1.
    attempt: u32,
}

impl<'a> Retry<'a> {
    fn new(run: &'a Run, rpc: &'a str) -> Retry<'a> {
        Retry {
            run,
            rpc,
            horizon: Instant::now() + RETRY_HORIZON,
            attempt: 1,
        }
    }

    /// Records `status`; waits before the next attempt when it may be retried, or gives the
    /// status back when it may not.
    async fn failed(&mut self, status: Status, rng: &mut SeatRng) -> Result<(), Status> {
        self.run.error(self.rpc, &status);
        if !retriable(&status) || Instant::now() >= self.horizon {
            return Err(status);
        }
        tokio::time::sleep(backoff(self.attempt, rng)).await;
        self.attempt += 1;
        Ok(())
    }
}

/// Retries `call` with backoff while its error is retriable, up to the retry horizon; the answer
/// and the attempts it took.
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
    let mut retry = Retry::new(run, rpc);
    loop {
        match call().await {
            Ok(value) => return Ok((value, retry.attempt)),
            Err(status) => retry.failed(status, rng).await?,
        }
    }
}

/// Creates one game by invite and plays it to its end. False when it could not be created.
async fn one_game(run: &Arc<Run>, slot: usize, n: u64, websocket: bool, rng: &mut SeatRng) -> bool {
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
    let ws_ingress = run.config.ws_ingress.filter(|_| websocket);
    let transport = if ws_ingress.is_some() {
        "websocket"
    } else {
        "grpc"
    };
    {
        let mut summary = run.summary.lock();
        summary.games_started += 1;
        *summary
            .games_by_transport
            .entry(transport.to_string())
            .or_default() += 1;
    }
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
        let way = match ws_ingress {
            Some(http) => SeatWay::Ws(WsSeat::new(
                http,
                token.clone(),
                game_id.clone(),
                role(side),
            )),
            None => {
                let client = PlayerServiceClient::new(run.pool.pick());
                SeatWay::Grpc {
                    follower: Box::new(Follower {
                        game_id: game_id.clone(),
                        token: token.clone(),
                        spectate: false,
                        role: role(side),
                        client: client.clone(),
                        stream: None,
                        lost_at: None,
                    }),
                    client,
                }
            }
        };
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
            way,
            transport,
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
            "{game_started},{},{game_id},{},{transport}",
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
