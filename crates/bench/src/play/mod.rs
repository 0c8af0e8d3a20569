//! `bench play`: N concurrent games through the public gateway, both seats per game.
//!
//! Each game slot creates a game on the session's internal `CreateGame` (players cannot create
//! games through the gateway yet), then runs its two seats as two tasks, each a player of its own
//! with its own token, connection and `Subscribe` stream. A seat confirms the deployment the
//! server drew for it, then waits on its stream: when the stream says it is its turn (play
//! started with it first, the opponent moved, or the opponent timed out) it asks `LegalMoves` for
//! its own seat, picks one at random and `Play`s it. When a game ends the slot starts another,
//! until the duration is over.
//!
//! What is measured:
//! - **moves/s**: `Play` calls acknowledged OK within the run, per second of the run.
//! - **submit to acknowledge**: from sending `Play` to its answer, at the mover.
//! - **submit to opponent sees it**: from sending `Play` to the opponent's stream delivering that
//!   `Moved` event (both sides are in this process, so one clock measures both).
//! - **create and confirm**: from sending `CreateGame` (internal) and a seat's `Confirm` to their
//!   answers, so the opening burst of a run (every slot creating and confirming at once) has
//!   figures of its own.
//! - **errors by gRPC code** (on `Connect`, with the refusal's stable reason: `ABORTED/STALE_VERSION`):
//!   every failed call; `STREAM_SILENT` / `STREAM_ENDED` name a stream
//!   that went quiet for a minute or ended before the game did.
//! - **timer lateness** (short time controls, `--stall-percent`): when a seat lets its clock
//!   run out on purpose, the time the `TimedOut` event is first seen minus (the time the turn
//!   started, i.e. the previous ply's acknowledgement or the previous `TimedOut` seen, plus
//!   `move_seconds`). `n/a` when no timeout was seen (no clock service running).
//! - **memory per player stream**: (server RSS at the sample with the most open streams − RSS
//!   before the run) / streams open then. It includes the games' state, so it is an upper bound
//!   of a stream's own cost (`bench streams` measures idle streams alone).

pub(crate) mod link;
mod seat;

use crate::BenchError;
use crate::connections::{Pool, code_name, connect, token};
use crate::pb;
use crate::pb::session_service_client::SessionServiceClient;
use crate::report::{CpuSpent, Latency, Load, latency_histogram};
use crate::rng::SeatRng;
use crate::server::{cpu_seconds, own_cpu_seconds, postgres_cpu_seconds, rss_bytes};
use hdrhistogram::Histogram;
use hidden_front_rules::Side;
use parking_lot::Mutex;
use seat::Seat;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tonic::Status;
use tonic::transport::Channel;

/// How the seats reach the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// One `PlayerService/Connect` stream per seat: a move is one message up, its answer and
    /// the events come down the same stream.
    Connect,
    /// One WebSocket per seat speaking `Connect`'s binary subprotocol.
    Websocket,
    /// `Subscribe` for the events and one unary call per command (`Confirm`, `Play`).
    Unary,
}

/// Settings of a `bench play` run.
#[derive(Debug, Clone)]
pub struct PlayConfig {
    /// How the seats reach the gateway.
    pub transport: Transport,
    /// The gateway's HTTP listener (the WebSocket transport's address).
    pub http: Option<SocketAddr>,
    /// Games played at once.
    pub games: usize,
    /// How long to play.
    pub duration: Duration,
    /// Ends the run as soon as this many games have been played to their end, before
    /// `duration` if they are: so a check that needs whole games waits for them, not for a
    /// number of seconds that a slower or busier machine may not fill.
    pub until_games: Option<u64>,
    /// How long a seat thinks before each move, on average.
    pub think: Duration,
    /// How far each think strays from `think`, in percent either way (uniformly drawn).
    pub think_spread_percent: u32,
    /// The games' time control (`None`: the server's default, "online").
    pub time_control: Option<pb::TimeControl>,
    /// Percent of turns on which a seat lets its clock run out instead of moving (needs a time
    /// control; measures timer lateness).
    pub stall_percent: u32,
    /// The gateway's public gRPC address.
    pub public: SocketAddr,
    /// The session's internal gRPC address (for `CreateGame`).
    pub internal: SocketAddr,
    /// The gateway's HS256 secret, to mint player tokens.
    pub jwt_secret: String,
    /// The server process, for its resident memory.
    pub server_pid: Option<u32>,
    /// Seed of the seats' random choices.
    pub seed: u64,
    /// How many shards the server's store has (1 unless it was started with
    /// `--database-shard`s): [`PlayFigures::shards`] lists each, from the shard written in
    /// each game's id.
    pub shards: usize,
}

/// One shard's part of a run ([`PlayFigures::shards`]).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ShardMoves {
    /// The shard's index (0 is the main database).
    pub shard: u16,
    /// Moves acknowledged OK within the run on games of that shard.
    pub moves: u64,
    /// Games created on it.
    pub games_started: u64,
}

/// The shard a game lives on, read from its id as docs/sharding.md states the format (a
/// version 8 id holds the index in its last two bytes; any other id is on shard 0). Read here,
/// not through the store crate, because the bench measures the system as players reach it and
/// links no store; a test holds the two readings equal.
pub fn shard_of(game_id: &str) -> u16 {
    match uuid::Uuid::parse_str(game_id) {
        Ok(id) if id.get_version_num() == 8 && id.get_variant() == uuid::Variant::RFC4122 => {
            let bytes = id.as_bytes();
            u16::from_be_bytes([bytes[14], bytes[15]])
        }
        _ => 0,
    }
}

/// Every configured shard (0 ..`configured`) and any other seen, with its counts.
fn shard_moves(configured: usize, counts: &BTreeMap<u16, ShardCount>) -> Vec<ShardMoves> {
    let mut all: BTreeMap<u16, ShardCount> = (0..configured.clamp(1, 256))
        .map(|shard| (shard as u16, ShardCount::default()))
        .collect();
    all.extend(counts.iter().map(|(shard, count)| (*shard, *count)));
    all.into_iter()
        .map(|(shard, count)| ShardMoves {
            shard,
            moves: count.moves,
            games_started: count.games_started,
        })
        .collect()
}

/// Timer figures of a run.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct TimerFigures {
    /// The games' move clock, when the run set one.
    pub move_seconds: Option<u32>,
    /// `TimedOut` events seen.
    pub timeouts_seen: u64,
    /// How late each timeout was seen (see the module docs); only values ≥ 0.
    pub lateness: Latency,
    /// Timeouts seen *before* turn start + `move_seconds` (they count as 0 in `lateness`): the
    /// server arms the clock when it commits a move, a little before the mover has the answer.
    pub early: u64,
    /// The earliest of those, in ms before turn start + `move_seconds`.
    pub early_max_ms: Option<f64>,
    /// Stalls after which no `TimedOut` came within `move_seconds` + 5 s (no clock running?).
    pub not_fired: u64,
}

/// Server memory figures of a run.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct MemoryFigures {
    /// The server process measured, if known.
    pub server_pid: Option<u32>,
    /// Its RSS before the run.
    pub rss_before_bytes: Option<u64>,
    /// Its RSS at the sample with the most open player streams.
    pub rss_at_peak_bytes: Option<u64>,
    /// Player streams open at that sample.
    pub streams_at_peak: u64,
    /// (RSS at peak − RSS before) / streams at peak (includes the games' state).
    pub bytes_per_stream: Option<f64>,
}

/// CPU time spent during the run's window (its start to its end), by the server process and by
/// the bench itself, from each process's own accounting (`/proc/PID/stat`). On a machine the
/// bench shares with the server, moves/s and latency measure both; these say which one paid.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CpuFigures {
    /// The server process's CPU seconds (user + system) in the window, if its pid is known.
    pub server_seconds: Option<f64>,
    /// `server_seconds` / moves, in microseconds.
    pub server_us_per_move: Option<f64>,
    /// The bench's own CPU seconds in the window.
    pub bench_seconds: Option<f64>,
    /// `bench_seconds` / moves, in microseconds.
    pub bench_us_per_move: Option<f64>,
    /// The CPU seconds of every Postgres process on the machine in the window (its backends
    /// serving the server, and anything else they served meanwhile), if any runs here.
    pub postgres_seconds: Option<f64>,
    /// `postgres_seconds` / moves, in microseconds: what a durable move costs the database.
    pub postgres_us_per_move: Option<f64>,
}

impl CpuFigures {
    /// The figures of a window whose ends read `before` and `after` (server, bench) and in
    /// which `moves` moves were acknowledged.
    /// The figures of a window whose ends read `before` and `after` (server, bench, Postgres)
    /// and in which `moves` moves were acknowledged.
    fn of(
        before: (Option<f64>, Option<f64>, Option<f64>),
        after: (Option<f64>, Option<f64>, Option<f64>),
        moves: u64,
    ) -> CpuFigures {
        let cpu = CpuSpent::between((before.0, before.1), (after.0, after.1), moves);
        let database = CpuSpent::between((before.2, None), (after.2, None), moves);
        CpuFigures {
            server_seconds: cpu.server_seconds,
            server_us_per_move: cpu.server_us_per_unit,
            bench_seconds: cpu.bench_seconds,
            bench_us_per_move: cpu.bench_us_per_unit,
            postgres_seconds: database.server_seconds,
            postgres_us_per_move: database.server_us_per_unit,
        }
    }
}

/// The figures of a `bench play` run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PlayFigures {
    /// How the seats reached the gateway.
    pub transport: Transport,
    /// Games played at once.
    pub games: usize,
    /// Think time per move, in milliseconds (the mean).
    pub think_ms: u64,
    /// Spread of each think around it, in percent either way.
    pub think_spread_percent: u32,
    /// Seconds asked for.
    pub duration_seconds: f64,
    /// Seconds actually measured.
    pub elapsed_seconds: f64,
    /// Moves acknowledged OK within the run.
    pub moves: u64,
    /// `moves` / `elapsed_seconds`.
    pub moves_per_second: f64,
    /// Games created.
    pub games_started: u64,
    /// Games played to their end.
    pub games_finished: u64,
    /// Games given up after an error.
    pub games_abandoned: u64,
    /// HTTP/2 connections the players used.
    pub connections: usize,
    /// `Reconnect` hints followed.
    pub reconnects: u64,
    /// From sending `Play` to its answer.
    pub submit_to_ack: Latency,
    /// The same, for the moves sent in each second of the run (from its start), so a tail
    /// can be told apart as the opening burst, a wave or a stall of the host.
    pub submit_to_ack_by_second: Vec<SecondLatency>,
    /// From sending `Play` to the opponent's stream delivering the move.
    pub submit_to_opponent_sees: Latency,
    /// From sending `CreateGame` to its answer (successful calls only).
    pub create_to_answer: Latency,
    /// From sending a seat's `Confirm` to its answer (successful calls only).
    pub confirm_to_answer: Latency,
    /// Timer lateness.
    pub timer: TimerFigures,
    /// Failed calls by gRPC code.
    pub errors: BTreeMap<String, u64>,
    /// Moves refused as out of date because the opponent's move had just ended the game: the
    /// seat's stream had delivered that move and not yet the end. Not errors: every client can
    /// race a game's end this way, and the server's refusal is the right answer.
    pub moves_refused_by_the_end: u64,
    /// Server memory.
    pub memory: MemoryFigures,
    /// CPU time of the server and of the bench within the run's window.
    pub cpu: CpuFigures,
    /// Per shard of the store, its moves (every shard configured, also those that got none;
    /// shards seen in game ids beyond the configured count are listed too).
    pub shards: Vec<ShardMoves>,
    /// Machine load before the run.
    pub load_before: Load,
    /// Machine load at its end.
    pub load_after: Load,
}

/// [`PlayFigures::submit_to_ack_by_second`]: the moves sent in one second of the run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SecondLatency {
    /// Whole seconds from the run's start to the moves' sending.
    pub second: u64,
    /// Their submit-to-acknowledge latency.
    pub latency: Latency,
}

/// A histogram for one second's moves: 2 significant digits, since it only ranks seconds.
fn second_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 2).expect("valid histogram bounds")
}

/// Everything the tasks of one run share.
struct Run {
    config: PlayConfig,
    pool: Pool,
    session: Channel,
    start: Instant,
    end: Instant,
    /// Cancelled when [`PlayConfig::until_games`] games have ended: the run is over before
    /// `end`.
    stop: CancellationToken,
    /// When `stop` was cancelled.
    stopped_at: Mutex<Option<Instant>>,
    run_id: String,
    open_streams: AtomicUsize,
    moves: AtomicU64,
    recorder: Mutex<Recorder>,
}

/// The run's histograms and counters (one lock: a few thousand updates a second).
struct Recorder {
    ack: Histogram<u64>,
    /// `ack` by the second of the run the move was sent in.
    ack_by_second: Vec<Histogram<u64>>,
    seen: Histogram<u64>,
    created: Histogram<u64>,
    confirmed: Histogram<u64>,
    lateness: Histogram<u64>,
    timeouts_seen: u64,
    timer_early: u64,
    timer_early_max: Duration,
    timer_not_fired: u64,
    errors: BTreeMap<String, u64>,
    moves_refused_by_the_end: u64,
    games_started: u64,
    games_finished: u64,
    games_abandoned: u64,
    reconnects: u64,
    /// Moves and games per shard.
    shards: BTreeMap<u16, ShardCount>,
}

/// [`Recorder::shards`]: one shard's counts.
#[derive(Debug, Default, Clone, Copy)]
struct ShardCount {
    moves: u64,
    games_started: u64,
}

impl Run {
    fn record(&self, f: impl FnOnce(&mut Recorder)) {
        let mut recorder = self.recorder.lock();
        f(&mut recorder);
    }

    fn error(&self, code: &str) {
        self.record(|r| *r.errors.entry(code.to_string()).or_default() += 1);
    }

    fn status(&self, status: &Status) {
        self.error(&code_name(status));
    }

    /// Whether the run is over: its duration passed, or its games ended.
    fn over(&self) -> bool {
        Instant::now() >= self.end || self.stop.is_cancelled()
    }

    /// Resolves when the run is over.
    async fn ended(&self) {
        tokio::select! {
            () = tokio::time::sleep_until(self.end) => {}
            () = self.stop.cancelled() => {}
        }
    }

    /// Counts a game played to its end, and ends the run at [`PlayConfig::until_games`].
    fn game_finished(&self) {
        let mut finished = 0;
        self.record(|r| {
            r.games_finished += 1;
            finished = r.games_finished;
        });
        if self.config.until_games.is_some_and(|n| finished >= n) && !self.stop.is_cancelled() {
            self.stopped_at.lock().get_or_insert_with(Instant::now);
            self.stop.cancel();
        }
    }

    fn move_clock(&self) -> Option<Duration> {
        self.config
            .time_control
            .as_ref()
            .map(|tc| Duration::from_secs(u64::from(tc.move_seconds)))
    }
}

/// Microseconds of `d`, at least 1 (the histogram's lowest value).
/// One think: `mean` × (1 ± `spread_percent`/100), uniformly drawn (in microseconds).
fn think_time(mean: Duration, spread_percent: u32, rng: &mut SeatRng) -> Duration {
    let mean = micros(mean);
    let spread = mean.saturating_mul(u64::from(spread_percent.min(100))) / 100;
    if spread == 0 {
        return Duration::from_micros(mean);
    }
    let width = usize::try_from(spread.saturating_mul(2).saturating_add(1)).unwrap_or(usize::MAX);
    let offset = rng.below(width) as u64;
    Duration::from_micros(mean - spread + offset)
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

/// What the two seats of one game share: when each move was submitted (for the opponent's
/// "sees it" latency) and when the current turn started (for timer lateness).
#[derive(Default)]
struct GameClock {
    submitted: HashMap<u64, Instant>,
    turn_start: Option<(u64, Instant)>,
}

struct GameShared {
    clock: Mutex<GameClock>,
    /// Cancelled when one seat gives up: the other stops too.
    abandon: CancellationToken,
}

impl GameShared {
    fn lock(&self) -> parking_lot::MutexGuard<'_, GameClock> {
        self.clock.lock()
    }

    /// A turn began at `at` with the game at version `seq`.
    fn turn_started(&self, seq: u64, at: Instant) {
        let mut clock = self.lock();
        if clock.turn_start.is_none_or(|(s, _)| s < seq) {
            clock.turn_start = Some((seq, at));
        }
    }
}

/// How a timeout compares with when it was due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lateness {
    /// Seen this long after it was due.
    Late(Duration),
    /// Seen this long before it was due.
    Early(Duration),
}

/// A timeout seen at `seen_at` against the turn that started at `turn_start` with a move clock
/// of `move_clock`: due at turn start + move clock. `None` without a known turn start or clock.
fn timer_lateness(
    turn_start: Option<(u64, Instant)>,
    seen_at: Instant,
    move_clock: Option<Duration>,
) -> Option<Lateness> {
    let (_, started) = turn_start?;
    let due = started + move_clock?;
    Some(if seen_at >= due {
        Lateness::Late(seen_at - due)
    } else {
        Lateness::Early(due - seen_at)
    })
}

/// How a seat stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SeatEnd {
    Finished,
    Deadline,
    Failed,
}

/// Runs `bench play` against a running server.
pub async fn run(config: PlayConfig) -> Result<PlayFigures, BenchError> {
    if config.games == 0 {
        return Err(BenchError::Setting("--games must be at least 1".into()));
    }
    if config.think_spread_percent > 100 {
        return Err(BenchError::Setting(
            "--think-spread-percent is at most 100".into(),
        ));
    }
    if config.stall_percent > 100 {
        return Err(BenchError::Setting("--stall-percent is at most 100".into()));
    }
    if config.stall_percent > 0 && config.time_control.is_none() {
        return Err(BenchError::Setting(
            "--stall-percent needs a short time control (--move-seconds)".into(),
        ));
    }
    if config.transport == Transport::Websocket && config.http.is_none() {
        return Err(BenchError::Setting(
            "--transport websocket needs the gateway's HTTP address (--http, or --spawn)".into(),
        ));
    }
    // Each seat holds one stream (Connect), or a stream and at most one unary call at a time;
    // WebSocket seats open sockets of their own.
    let streams = match config.transport {
        Transport::Connect => config.games * 2,
        Transport::Unary => config.games * 4,
        Transport::Websocket => 1,
    };
    let pool = Pool::for_streams(config.public, streams).await?;
    let session = connect(config.internal).await?;
    let pid = config.server_pid;
    let rss_before = pid.and_then(rss_bytes);
    let load_before = Load::now();
    let cpu_before = (
        pid.and_then(cpu_seconds),
        own_cpu_seconds(),
        postgres_cpu_seconds(),
    );
    let start = Instant::now();
    let end = start + config.duration;
    let stop = CancellationToken::new();
    // The CPU times at the window's end, read on time whatever the games are doing then.
    let cpu_after = tokio::spawn({
        let stop = stop.clone();
        async move {
            tokio::select! {
                () = tokio::time::sleep_until(end) => {}
                () = stop.cancelled() => {}
            }
            (
                pid.and_then(cpu_seconds),
                own_cpu_seconds(),
                postgres_cpu_seconds(),
            )
        }
    });
    let run = Arc::new(Run {
        run_id: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
        pool,
        session,
        start,
        end,
        stop,
        stopped_at: Mutex::new(None),
        open_streams: AtomicUsize::new(0),
        moves: AtomicU64::new(0),
        recorder: Mutex::new(Recorder {
            ack: latency_histogram(),
            ack_by_second: Vec::new(),
            seen: latency_histogram(),
            created: latency_histogram(),
            confirmed: latency_histogram(),
            lateness: latency_histogram(),
            timeouts_seen: 0,
            timer_early: 0,
            timer_early_max: Duration::ZERO,
            timer_not_fired: 0,
            errors: BTreeMap::new(),
            moves_refused_by_the_end: 0,
            games_started: 0,
            games_finished: 0,
            games_abandoned: 0,
            reconnects: 0,
            shards: BTreeMap::new(),
        }),
        config,
    });

    // Samples the server's memory against the streams open at that moment.
    let sampler = {
        let run = Arc::clone(&run);
        tokio::spawn(async move {
            let mut peak: (usize, Option<u64>) = (0, None);
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            while !run.over() {
                tick.tick().await;
                let streams = run.open_streams.load(Ordering::Relaxed);
                if streams >= peak.0 {
                    if let Some(rss) = pid.and_then(rss_bytes) {
                        peak = (streams, Some(rss));
                    } else {
                        peak.0 = streams;
                    }
                }
            }
            peak
        })
    };

    let slots: Vec<_> = (0..run.config.games)
        .map(|slot| tokio::spawn(game_slot(Arc::clone(&run), slot)))
        .collect();
    for slot in slots {
        let _ = slot.await;
    }
    let over = run.stopped_at.lock().unwrap_or(end);
    let elapsed = over.saturating_duration_since(start).min(start.elapsed());
    let (streams_at_peak, rss_at_peak) = sampler.await.unwrap_or((0, None));
    let moves = run.moves.load(Ordering::Relaxed);
    let cpu_after = cpu_after.await.unwrap_or((None, None, None));
    let recorder = run.recorder.lock();
    let bytes_per_stream = match (rss_before, rss_at_peak) {
        (Some(before), Some(peak)) if streams_at_peak > 0 => {
            Some((peak as f64 - before as f64) / streams_at_peak as f64)
        }
        _ => None,
    };
    Ok(PlayFigures {
        transport: run.config.transport,
        games: run.config.games,
        think_ms: u64::try_from(run.config.think.as_millis()).unwrap_or(u64::MAX),
        think_spread_percent: run.config.think_spread_percent,
        duration_seconds: run.config.duration.as_secs_f64(),
        elapsed_seconds: elapsed.as_secs_f64(),
        moves,
        moves_per_second: moves as f64 / elapsed.as_secs_f64().max(1e-9),
        games_started: recorder.games_started,
        games_finished: recorder.games_finished,
        games_abandoned: recorder.games_abandoned,
        connections: run.pool.len(),
        reconnects: recorder.reconnects,
        submit_to_ack: Latency::of(&recorder.ack),
        submit_to_ack_by_second: (0u64..)
            .zip(&recorder.ack_by_second)
            .filter(|(_, histogram)| !histogram.is_empty())
            .map(|(second, histogram)| SecondLatency {
                second,
                latency: Latency::of(histogram),
            })
            .collect(),
        submit_to_opponent_sees: Latency::of(&recorder.seen),
        create_to_answer: Latency::of(&recorder.created),
        confirm_to_answer: Latency::of(&recorder.confirmed),
        timer: TimerFigures {
            move_seconds: run.config.time_control.as_ref().map(|tc| tc.move_seconds),
            timeouts_seen: recorder.timeouts_seen,
            lateness: Latency::of(&recorder.lateness),
            early: recorder.timer_early,
            early_max_ms: (recorder.timer_early > 0)
                .then(|| recorder.timer_early_max.as_secs_f64() * 1000.0),
            not_fired: recorder.timer_not_fired,
        },
        errors: recorder.errors.clone(),
        moves_refused_by_the_end: recorder.moves_refused_by_the_end,
        memory: MemoryFigures {
            server_pid: pid,
            rss_before_bytes: rss_before,
            rss_at_peak_bytes: rss_at_peak,
            streams_at_peak: streams_at_peak as u64,
            bytes_per_stream,
        },
        cpu: CpuFigures::of(cpu_before, cpu_after, moves),
        shards: shard_moves(run.config.shards, &recorder.shards),
        load_before,
        load_after: Load::now(),
    })
}

/// One concurrent game at a time, a new one when it ends, until the run's end.
async fn game_slot(run: Arc<Run>, slot: usize) {
    let mut session = SessionServiceClient::new(run.session.clone());
    let mut number: u64 = 0;
    while !run.over() {
        number += 1;
        let south = format!("bench-{}-{slot}-{number}-s", run.run_id);
        let north = format!("bench-{}-{slot}-{number}-n", run.run_id);
        let mut request = tonic::Request::new(pb::CreateGameRequest {
            south_player: south.clone(),
            north_player: north.clone(),
            rules: String::new(),
            time_control: run.config.time_control.clone(),
            idempotency_key: format!("bench-{}-{slot}-{number}", run.run_id),
        });
        request.set_timeout(Duration::from_secs(30));
        let sent = Instant::now();
        let created = match session.create_game(request).await {
            Ok(created) => {
                let latency = micros(sent.elapsed());
                run.record(|r| {
                    let _ = r.created.record(latency);
                });
                created.into_inner()
            }
            Err(status) => {
                run.status(&status);
                // Do not spin on a server that refuses everything.
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let shard = shard_of(&created.game_id);
        run.record(|r| {
            r.games_started += 1;
            r.shards.entry(shard).or_default().games_started += 1;
        });
        let game = Arc::new(GameShared {
            clock: Mutex::new(GameClock::default()),
            abandon: CancellationToken::new(),
        });
        let seed = run.config.seed ^ ((slot as u64) << 32) ^ number.wrapping_mul(0x9e37);
        let mut seats = Vec::with_capacity(2);
        for (player, side, salt) in [(south, Side::South, 1), (north, Side::North, 2)] {
            let token = match token(&run.config.jwt_secret, &player) {
                Ok(token) => token,
                Err(_) => {
                    run.error("TOKEN");
                    continue;
                }
            };
            let seat = Seat::new(
                Arc::clone(&run),
                Arc::clone(&game),
                created.game_id.clone(),
                shard,
                side,
                token,
                SeatRng::new(seed.wrapping_mul(salt)),
            );
            seats.push(tokio::spawn(seat.run()));
        }
        let mut ends = Vec::with_capacity(2);
        for seat in seats {
            ends.push(seat.await.unwrap_or(SeatEnd::Failed));
        }
        if ends.contains(&SeatEnd::Failed) || ends.len() < 2 {
            run.record(|r| r.games_abandoned += 1);
        } else if ends.iter().all(|e| *e == SeatEnd::Finished) {
            run.game_finished();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn game_ids_are_read_by_the_stores_placement_rule() {
        use hidden_front_store::placement;
        for shard in [0u16, 1, 2, 255] {
            let id = placement::placed_id(shard);
            assert_eq!(shard_of(&id.to_string()), placement::shard_of(id));
        }
        let before_sharding = uuid::Uuid::now_v7();
        assert_eq!(shard_of(&before_sharding.to_string()), 0);
        assert_eq!(shard_of("not an id"), 0);
    }

    #[test]
    fn thinks_spread_evenly_around_the_mean() {
        let mut rng = SeatRng::new(7);
        let mean = Duration::from_millis(2000);
        assert_eq!(think_time(mean, 0, &mut rng), mean);
        let draws: Vec<Duration> = (0..10_000)
            .map(|_| think_time(mean, 50, &mut rng))
            .collect();
        let (low, high) = (Duration::from_millis(1000), Duration::from_millis(3000));
        assert!(
            draws.iter().all(|d| (low..=high).contains(d)),
            "inside ±50 %"
        );
        assert!(
            draws.iter().any(|d| *d < Duration::from_millis(1100)),
            "reaches low"
        );
        assert!(
            draws.iter().any(|d| *d > Duration::from_millis(2900)),
            "reaches high"
        );
        let average = draws.iter().sum::<Duration>() / 10_000;
        let off = average.abs_diff(mean);
        assert!(off < Duration::from_millis(30), "mean kept: {average:?}");
    }

    #[test]
    fn lateness_is_measured_from_turn_start_plus_the_move_clock() {
        let start = Instant::now();
        let clock = Some(Duration::from_secs(2));
        let seen = start + Duration::from_millis(2_150);
        assert_eq!(
            timer_lateness(Some((7, start)), seen, clock),
            Some(Lateness::Late(Duration::from_millis(150)))
        );
        let early = start + Duration::from_millis(1_900);
        assert_eq!(
            timer_lateness(Some((7, start)), early, clock),
            Some(Lateness::Early(Duration::from_millis(100)))
        );
        assert_eq!(timer_lateness(None, seen, clock), None);
        assert_eq!(timer_lateness(Some((7, start)), seen, None), None);
    }

    #[test]
    fn a_turn_start_is_only_replaced_by_a_later_version() {
        let game = GameShared {
            clock: Mutex::new(GameClock::default()),
            abandon: CancellationToken::new(),
        };
        let first = Instant::now();
        game.turn_started(5, first);
        game.turn_started(4, first + Duration::from_secs(1));
        assert_eq!(game.lock().turn_start, Some((5, first)));
        let later = first + Duration::from_secs(2);
        game.turn_started(6, later);
        assert_eq!(game.lock().turn_start, Some((6, later)));
    }
}
