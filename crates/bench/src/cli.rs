//! The `hidden-front bench` command line: `bench play`, `bench streams` and `bench matchmaking`,
//! their reports as a table on stdout and (with `--json FILE`) as JSON.

use crate::compare::{self, EchoFigures, PgbenchFigures};
use crate::matchmaking::{self, MatchmakingConfig, MatchmakingFigures};
use crate::play::{self, PlayConfig, PlayFigures, SecondLatency, Transport};
use crate::report::{Load, errors_line, kib, latency_row, mib, ms, write_json};
use crate::server::{DEFAULT_ADMIN_URL, SpawnedServer, StoreKind, own_binary};
use crate::streams::{self, ClientReads, StreamsConfig, StreamsFigures};
use crate::{BenchError, pb};
use clap::{Args, Subcommand};
use hidden_front_gateway::auth::DEV_SECRET;
use serde::Serialize;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `hidden-front bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// What to measure.
    #[command(subcommand)]
    pub mode: Mode,
}

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum Mode {
    /// Plays N concurrent games through the gateway for S seconds; compares with pgbench and a
    /// plain tonic RPC.
    Play(PlayArgs),
    /// Opens N idle player streams on one gateway: memory per stream, time to fan an event out.
    Streams(StreamsArgs),
    /// Enqueues many distinct players in the rated queue for S seconds: pairs (games) per
    /// second, enqueue and enqueue-to-matched latency, CPU per pair.
    ///
    /// The games it makes are left alone: nobody subscribes to them or confirms, so each ends at
    /// its 90 s deployment deadline with both seats lost (nobody is rated or queued again).
    Matchmaking(MatchmakingArgs),
    /// Plays games through a load balancer while the cluster behind it changes
    /// (`scripts/cluster-test`): retries, resumes and records every move for the harness.
    Cluster(ClusterArgs),
}

/// Arguments of `bench cluster`.
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// The load balancer's player gRPC address.
    #[arg(long)]
    pub ingress: SocketAddr,
    /// The load balancer's HTTP address (the page and the `Connect` WebSocket at `/v1/ws`), for
    /// the games played over WebSocket.
    #[arg(long)]
    pub ws_ingress: Option<SocketAddr>,
    /// Percent of the games played at once whose seats play over a `Connect` WebSocket each
    /// (needs `--ws-ingress`).
    #[arg(long, default_value_t = 0)]
    pub ws_percent: u32,
    /// Start the WebSocket games only once this file exists (before it, only the gRPC ones play).
    #[arg(long)]
    pub ws_from_file: Option<PathBuf>,
    /// HTTP/2 connections to it, shared by the players.
    #[arg(long, default_value_t = 8)]
    pub connections: usize,
    /// Games played at once (a new one starts when one ends).
    #[arg(long, default_value_t = 100)]
    pub games: usize,
    /// Percent of games watched by a spectator.
    #[arg(long, default_value_t = 25)]
    pub spectate_percent: u32,
    /// Mean think time before each move, in milliseconds (each drawn from half to one and a
    /// half of it).
    #[arg(long, default_value_t = 500)]
    pub think_ms: u64,
    /// Fewest events before the side to move concedes.
    #[arg(long, default_value_t = 40)]
    pub min_plies: u64,
    /// Most events before the side to move concedes.
    #[arg(long, default_value_t = 120)]
    pub max_plies: u64,
    /// Wind down (concede every game, start no new one) once this file exists.
    #[arg(long)]
    pub stop_file: PathBuf,
    /// Wind down after this many seconds at the latest.
    #[arg(long, default_value_t = 600)]
    pub max_seconds: u64,
    /// Seconds the wind-down waits for every game to end.
    #[arg(long, default_value_t = 60)]
    pub finish_seconds: u64,
    /// Where moves.csv, errors.csv, streams.csv and summary.json go.
    #[arg(long)]
    pub out_dir: PathBuf,
    /// Seed of the random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The games' time control by name (`online`: 30 s to move, 60 s to come back).
    #[arg(long, default_value = "online")]
    pub time_control: String,
    /// Percent of games in which one seat lets its move clock run out once (the clock's timers
    /// then fire during the run).
    #[arg(long, default_value_t = 20)]
    pub stall_percent: u32,
    /// The gateways' HS256 secret (the first if several), to mint player tokens.
    #[arg(
        long,
        env = "HF_JWT_SECRET",
        default_value = DEV_SECRET,
        hide_env_values = true,
        hide_default_value = true
    )]
    pub jwt_secret: String,
}

/// Which server to measure.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// A running server: its public gRPC address and the session's internal one, PUBLIC,INTERNAL.
    /// Its per-player action limit must allow the run (`serve --actions-per-second`).
    #[arg(
        long,
        value_delimiter = ',',
        num_args = 1..,
        default_value = "127.0.0.1:50051,127.0.0.1:50052",
        conflicts_with = "spawn"
    )]
    pub server: Vec<SocketAddr>,
    /// The running server's HTTP listener (the WebSocket transport's address).
    #[arg(long, conflicts_with = "spawn")]
    pub http: Option<SocketAddr>,
    /// The running server's process id, to read its memory from /proc.
    #[arg(long, conflicts_with = "spawn")]
    pub server_pid: Option<u32>,
    /// Start `hidden-front serve` as a child process for the run and stop it afterwards.
    #[arg(long)]
    pub spawn: bool,
    /// The spawned server's store (postgres: a fresh database on --admin-url, dropped after).
    #[arg(long, value_enum, default_value = "memory")]
    pub store: StoreKind,
    /// With `--spawn --store postgres`: spread the games over this many fresh databases (the
    /// first is `--database-url`, the others `--database-shard`s), and report each shard's
    /// moves (`play.shards`).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub database_shards: u16,
    /// Postgres where the bench may create databases (for --store postgres and pgbench).
    #[arg(long, env = "HF_BENCH_ADMIN_URL", default_value = DEFAULT_ADMIN_URL)]
    pub admin_url: String,
    /// The `hidden-front` binary to spawn (default: this executable).
    #[arg(long, env = "HF_BENCH_BIN")]
    pub serve_binary: Option<PathBuf>,
    /// Extra argument for the spawned `serve` (repeat for several).
    #[arg(long = "serve-arg", allow_hyphen_values = true)]
    pub serve_args: Vec<String>,
    /// The gateway's HS256 secret (the first if several), to mint player tokens.
    #[arg(
        long,
        env = "HF_JWT_SECRET",
        default_value = DEV_SECRET,
        hide_env_values = true,
        hide_default_value = true
    )]
    pub jwt_secret: String,
    /// Write the report as JSON to this file too.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Arguments of `bench play`.
#[derive(Debug, Clone, Args)]
pub struct PlayArgs {
    /// How the seats reach the gateway: one `Connect` stream each, one binary WebSocket each,
    /// or `Subscribe` plus a unary call per command. Every seat lists its legal moves from its
    /// own view of the game.
    #[arg(long, value_enum, default_value = "connect")]
    pub transport: Transport,
    /// Games played at once (a new one starts when one ends).
    #[arg(long, default_value_t = 10)]
    pub games: usize,
    /// Seconds to play.
    #[arg(long, default_value_t = 10)]
    pub duration: u64,
    /// End the run as soon as N games have been played to their end (or at --duration,
    /// whichever comes first).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub until_games: Option<u64>,
    /// Milliseconds a seat thinks before each move.
    #[arg(long, default_value_t = 0)]
    pub think_ms: u64,
    /// Spread of each think around --think-ms, in percent: each is drawn uniformly from
    /// think × (1 ± P/100), the mean unchanged. 0 (the default): every seat thinks exactly
    /// --think-ms, so games that start together move in waves.
    #[arg(long, default_value_t = 0)]
    pub think_spread_percent: u32,
    /// Move clock in seconds: sets a custom time control (with the two below).
    #[arg(long)]
    pub move_seconds: Option<u32>,
    /// Deployment clock of the custom time control.
    #[arg(long, default_value_t = 60, requires = "move_seconds")]
    pub deployment_seconds: u32,
    /// Reconnect clock of the custom time control.
    #[arg(long, default_value_t = 60, requires = "move_seconds")]
    pub reconnect_seconds: u32,
    /// Percent of turns a seat lets its clock run out instead of moving (timer lateness).
    #[arg(long, default_value_t = 0, requires = "move_seconds")]
    pub stall_percent: u32,
    /// Seed of the seats' random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Seconds each comparison (pgbench, echo) runs; 0 skips them.
    #[arg(long, default_value_t = 10)]
    pub compare_seconds: u64,
    /// Skip the pgbench comparison.
    #[arg(long)]
    pub no_pgbench: bool,
    /// The pgbench binary.
    #[arg(long, env = "HF_PGBENCH", default_value = "pgbench")]
    pub pgbench: PathBuf,
    /// Play the same games once per store, one after the other, each on a server of its own
    /// (e.g. `memory,postgres`), and report each store's figures and the ratio of their moves/s
    /// (the last store's to the first's). The comparisons run once, after the last store.
    #[arg(long, value_enum, value_delimiter = ',', num_args = 1.., requires = "spawn", conflicts_with = "store")]
    pub stores: Vec<StoreKind>,
    /// With `--stores` or `--compare-with`: play the sequence this many times, one round after
    /// the other (memory, postgres, memory, postgres, ...; or this binary, the other, this, ...),
    /// and report each round's ratio and their median. On a shared machine one round's ratio
    /// moves with whatever else runs beside it; rounds that alternate and a median are steadier.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// Play the same games on a server of this binary too (another build, e.g. the previous
    /// commit's), alternating with this one's for `--rounds` rounds on the same store, and report
    /// each run's moves/s, latency and CPU per move (the server's and Postgres's) and the median
    /// ratio of their moves/s: a regression shows in one command.
    #[arg(long, requires = "spawn", conflicts_with = "stores")]
    pub compare_with: Option<PathBuf>,
    /// The server to measure and the report file.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// Arguments of `bench streams`.
#[derive(Debug, Args)]
pub struct StreamsArgs {
    /// Idle player streams to open.
    #[arg(long, default_value_t = 1000)]
    pub count: usize,
    /// Moves to fan out to all streams, one after the other.
    #[arg(long, default_value_t = 3)]
    pub moves: usize,
    /// How each watcher learns presence and clocks: from status items in its stream (what the
    /// page and the terminal client do), or by reading the game's view after every event (what
    /// they did before status items existed). The report counts the session's store operations
    /// per move either way.
    #[arg(long, value_enum, default_value_t = ClientReads::Status)]
    pub client_reads: ClientReads,
    /// The server to measure and the report file.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// Arguments of `bench matchmaking`.
///
/// Every player is new (rating 1500), opens its lobby stream (`WatchLobby`), joins the rated
/// `online` queue (`FindMatch`) and waits for its `MatchFound`. The games matchmaking seats them
/// in are left alone: nobody subscribes to them or confirms, so each ends at its 90 s deployment
/// deadline with both seats lost (nobody is rated or queued again); a spawned server is stopped
/// before then. Against a running server, a run longer than 90 s has those games end during it.
#[derive(Debug, Clone, Args)]
pub struct MatchmakingArgs {
    /// Enqueuers at once: each opens a new player's lobby stream, enqueues it, and goes on to the
    /// next player while a watcher waits for the match.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Players enqueued per second by all enqueuers together (each enqueue has its slot in
    /// time). Without it, each enqueuer goes on as soon as its enqueue is answered, which
    /// saturates the server and lets the waiting queue grow when pairing is slower.
    #[arg(long)]
    pub players_per_second: Option<f64>,
    /// Seconds to enqueue.
    #[arg(long, default_value_t = 10)]
    pub duration: u64,
    /// Seconds the players still waiting at the end may wait for their match afterwards
    /// (counted in enqueue-to-matched latency, not in pairs/s).
    #[arg(long, default_value_t = 10)]
    pub drain_seconds: u64,
    /// HTTP/2 connections to the gateway, shared by the players' calls and their lobby streams
    /// (a server admits 200 streams on one connection; waiting players hold one each).
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// The server to measure and the report file.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// The report of `bench matchmaking`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MatchmakingReport {
    /// Where it ran.
    pub machine: Machine,
    /// The spawned server's store, or `None` for a running server.
    pub store: Option<StoreKind>,
    /// The figures.
    pub matchmaking: MatchmakingFigures,
}

/// The machine a report was measured on.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Machine {
    /// CPU model (`/proc/cpuinfo`).
    pub cpu: String,
    /// Logical CPUs.
    pub cpus: usize,
    /// Memory in GiB (`/proc/meminfo`).
    pub memory_gib: f64,
}

impl Machine {
    /// This machine.
    pub fn here() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or_else(|| "unknown".to_string(), |(_, v)| v.trim().to_string());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let kib: f64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        Machine {
            cpu,
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            memory_gib: (kib / (1024.0 * 1024.0) * 10.0).round() / 10.0,
        }
    }
}

/// The report of `bench play`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PlayReport {
    /// Where it ran.
    pub machine: Machine,
    /// The spawned server's store, or `None` for a running server.
    pub store: Option<StoreKind>,
    /// The game figures.
    pub play: PlayFigures,
    /// The Postgres commit limit, if measured.
    pub pgbench: Option<PgbenchFigures>,
    /// Why pgbench was not measured.
    pub pgbench_error: Option<String>,
    /// The plain tonic RPC, if measured.
    pub echo: Option<EchoFigures>,
    /// Why the echo was not measured.
    pub echo_error: Option<String>,
    /// moves/s ÷ pgbench transactions/s.
    pub ratio_to_pgbench: Option<f64>,
    /// moves/s ÷ echo calls/s.
    pub ratio_to_echo: Option<f64>,
}

/// The report of `bench play --stores`: one run per store and round, and how their moves/s
/// compare.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StoresReport {
    /// One report per store and round: the stores in the order given, round after round.
    pub runs: Vec<PlayReport>,
    /// Each round's last store's moves/s ÷ its first's (e.g. Postgres ÷ memory).
    pub round_ratios: Vec<f64>,
    /// The median of `round_ratios` (the mean of the middle two for an even count).
    pub moves_ratio: Option<f64>,
}

/// The report of `bench streams`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StreamsReport {
    /// Where it ran.
    pub machine: Machine,
    /// The spawned server's store, or `None` for a running server.
    pub store: Option<StoreKind>,
    /// The figures.
    pub streams: StreamsFigures,
}

/// The server of a run: spawned (and stopped afterwards) or given.
struct Target {
    spawned: Option<SpawnedServer>,
    public: SocketAddr,
    internal: SocketAddr,
    /// The gateway's HTTP listener, when known.
    http: Option<SocketAddr>,
    pid: Option<u32>,
    /// The spawned server's metrics endpoint.
    metrics: Option<SocketAddr>,
}

impl Target {
    async fn open(args: &TargetArgs, extra: &[&str]) -> Result<Target, BenchError> {
        if args.spawn {
            let mut serve_args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
            serve_args.extend(args.serve_args.iter().cloned());
            let binary = match &args.serve_binary {
                Some(path) => path.clone(),
                None => own_binary()?,
            };
            if args.database_shards > 1 && args.store != StoreKind::Postgres {
                return Err(BenchError::Setting(
                    "--database-shards needs --store postgres".into(),
                ));
            }
            let server = SpawnedServer::start_sharded(
                &binary,
                args.store,
                &args.admin_url,
                usize::from(args.database_shards),
                &serve_args,
            )
            .await?;
            return Ok(Target {
                public: server.public(),
                internal: server.internal(),
                http: server.http(),
                pid: Some(server.pid()),
                metrics: server.metrics(),
                spawned: Some(server),
            });
        }
        let [public, internal] = args.server[..] else {
            return Err(BenchError::Setting(
                "--server takes PUBLIC,INTERNAL (the gateway's and the session's addresses)".into(),
            ));
        };
        Ok(Target {
            spawned: None,
            public,
            internal,
            http: args.http,
            pid: args.server_pid,
            metrics: None,
        })
    }

    async fn close(self) -> Result<(), BenchError> {
        match self.spawned {
            Some(server) => server.stop().await,
            None => Ok(()),
        }
    }
}

/// Arguments the bench gives a server it spawns: no per-player action limit in the way of a
/// seat that moves as fast as it can.
const SPAWN_ARGS: &[&str] = &["--actions-per-second", "1000000"];

/// Runs `hidden-front bench`.
pub async fn run(args: BenchArgs) -> Result<(), BenchError> {
    match args.mode {
        Mode::Play(args) if args.compare_with.is_some() => {
            let report = run_play_binaries(&args).await?;
            for run in &report.runs {
                print!("{}", play_table(run));
            }
            print!("{}", binaries_lines(&report));
            if let Some(path) = &args.target.json {
                write_json(path, &report)?;
            }
        }
        Mode::Play(args) if !args.stores.is_empty() => {
            let report = run_play_stores(&args).await?;
            for run in &report.runs {
                print!("{}", play_table(run));
            }
            print!("{}", stores_lines(&report, args.stores.len()));
            if let Some(path) = &args.target.json {
                write_json(path, &report)?;
            }
        }
        Mode::Play(args) => {
            if args.rounds > 1 {
                return Err(BenchError::Setting(
                    "--rounds needs --stores or --compare-with (what the rounds alternate)".into(),
                ));
            }
            let report = run_play(&args).await?;
            print!("{}", play_table(&report));
            if let Some(path) = &args.target.json {
                write_json(path, &report)?;
            }
        }
        Mode::Cluster(args) => {
            let summary = crate::cluster::run(crate::cluster::ClusterConfig {
                ingress: args.ingress,
                ws_ingress: args.ws_ingress,
                ws_percent: args.ws_percent,
                ws_from_file: args.ws_from_file,
                connections: args.connections,
                games: args.games,
                spectate_percent: args.spectate_percent,
                think: Duration::from_millis(args.think_ms),
                plies: (args.min_plies, args.max_plies.max(args.min_plies)),
                stop_file: args.stop_file,
                max_duration: Duration::from_secs(args.max_seconds),
                finish_timeout: Duration::from_secs(args.finish_seconds),
                out_dir: args.out_dir,
                jwt_secret: args.jwt_secret,
                seed: args.seed,
                time_control: args.time_control,
                stall_percent: args.stall_percent,
            })
            .await?;
            print!("{}", crate::cluster::table(&summary));
        }
        Mode::Matchmaking(args) => {
            let report = run_matchmaking(&args).await?;
            print!("{}", matchmaking_table(&report));
            if let Some(path) = &args.target.json {
                write_json(path, &report)?;
            }
        }
        Mode::Streams(args) => {
            let report = run_streams(&args).await?;
            print!("{}", streams_table(&report));
            if let Some(path) = &args.target.json {
                write_json(path, &report)?;
            }
        }
    }
    Ok(())
}

/// `bench play`: the games, then (with the server stopped) the comparisons.
pub async fn run_play(args: &PlayArgs) -> Result<PlayReport, BenchError> {
    let time_control = args.move_seconds.map(|move_seconds| pb::TimeControl {
        name: "custom".into(),
        deployment_seconds: args.deployment_seconds,
        move_seconds,
        reconnect_seconds: args.reconnect_seconds,
    });
    let target = Target::open(&args.target, SPAWN_ARGS).await?;
    let config = PlayConfig {
        transport: args.transport,
        http: target.http,
        games: args.games,
        duration: Duration::from_secs(args.duration),
        until_games: args.until_games,
        think: Duration::from_millis(args.think_ms),
        think_spread_percent: args.think_spread_percent,
        time_control,
        stall_percent: args.stall_percent,
        public: target.public,
        internal: target.internal,
        jwt_secret: args.target.jwt_secret.clone(),
        server_pid: target.pid,
        seed: args.seed,
        shards: usize::from(args.target.database_shards),
    };
    let played = play::run(config).await;
    let store = target.spawned.as_ref().map(|_| args.target.store);
    let closed = target.close().await;
    let play = played?;
    closed?;

    let (mut pgbench, mut pgbench_error, mut echo, mut echo_error) = (None, None, None, None);
    if args.compare_seconds > 0 {
        if args.no_pgbench {
            pgbench_error = Some("skipped (--no-pgbench)".to_string());
        } else {
            match compare::pgbench(
                &args.pgbench,
                &args.target.admin_url,
                args.games,
                args.compare_seconds,
            )
            .await
            {
                Ok(figures) => pgbench = Some(figures),
                Err(e) => pgbench_error = Some(e.to_string()),
            }
        }
        match compare::echo(args.games, args.compare_seconds).await {
            Ok(figures) => echo = Some(figures),
            Err(e) => echo_error = Some(e.to_string()),
        }
    } else {
        pgbench_error = Some("skipped (--compare-seconds 0)".to_string());
        echo_error = pgbench_error.clone();
    }
    let ratio = |limit: f64| (limit > 0.0).then(|| play.moves_per_second / limit);
    Ok(PlayReport {
        machine: Machine::here(),
        store,
        ratio_to_pgbench: pgbench.as_ref().and_then(|p| ratio(p.tps)),
        ratio_to_echo: echo.as_ref().and_then(|e| ratio(e.calls_per_second)),
        play,
        pgbench,
        pgbench_error,
        echo,
        echo_error,
    })
}

/// `bench play --stores`: [`run_play`] once per store and round, the comparisons only after
/// the last run.
pub async fn run_play_stores(args: &PlayArgs) -> Result<StoresReport, BenchError> {
    let per_round = args.stores.len();
    let total = per_round * args.rounds as usize;
    let mut runs = Vec::with_capacity(total);
    for index in 0..total {
        let mut run = args.clone();
        run.target.store = args.stores[index % per_round];
        if index + 1 < total {
            run.compare_seconds = 0;
        }
        runs.push(run_play(&run).await?);
    }
    let round_ratios: Vec<f64> = runs.chunks(per_round).filter_map(round_ratio).collect();
    let moves_ratio = median(&round_ratios);
    Ok(StoresReport {
        runs,
        round_ratios,
        moves_ratio,
    })
}

/// A round's last store's moves/s ÷ its first's; `None` for a round of one store, or when the
/// first played nothing.
fn round_ratio(round: &[PlayReport]) -> Option<f64> {
    match round {
        [first, .., last] if first.play.moves_per_second > 0.0 => {
            Some(last.play.moves_per_second / first.play.moves_per_second)
        }
        _ => None,
    }
}

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[middle]),
        _ => Some((sorted[middle - 1] + sorted[middle]) / 2.0),
    }
}

/// The report of `bench play --compare-with`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BinariesReport {
    /// The binaries compared: the one run first in each round (the spawned server's own), then
    /// `--compare-with`'s.
    pub binaries: [String; 2],
    /// One report per binary and round, alternating.
    pub runs: Vec<PlayReport>,
    /// Each round's second binary's moves/s ÷ the first's.
    pub round_ratios: Vec<f64>,
    /// The median of `round_ratios`.
    pub moves_ratio: Option<f64>,
}

/// `bench play --compare-with`: [`run_play`] with each binary in turn, round after round, on the
/// same store; the comparisons only after the last run.
pub async fn run_play_binaries(args: &PlayArgs) -> Result<BinariesReport, BenchError> {
    let other = args
        .compare_with
        .clone()
        .ok_or_else(|| BenchError::Setting("--compare-with names no binary".into()))?;
    let first = match &args.target.serve_binary {
        Some(path) => path.clone(),
        None => own_binary()?,
    };
    for binary in [&first, &other] {
        if !binary.is_file() {
            return Err(BenchError::Setting(format!(
                "{} is not a file: --compare-with (and --serve-binary) name binaries to spawn",
                binary.display()
            )));
        }
    }
    let total = 2 * args.rounds as usize;
    let mut runs = Vec::with_capacity(total);
    for index in 0..total {
        let mut run = args.clone();
        run.compare_with = None;
        run.target.serve_binary = Some(if index % 2 == 0 {
            first.clone()
        } else {
            other.clone()
        });
        if index + 1 < total {
            run.compare_seconds = 0;
        }
        runs.push(run_play(&run).await?);
    }
    let round_ratios: Vec<f64> = runs.chunks(2).filter_map(round_ratio).collect();
    let moves_ratio = median(&round_ratios);
    Ok(BinariesReport {
        binaries: [first.display().to_string(), other.display().to_string()],
        runs,
        round_ratios,
        moves_ratio,
    })
}

/// The lines comparing the binaries of a `--compare-with` run: one per round, then the median.
pub fn binaries_lines(report: &BinariesReport) -> String {
    let us = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.1} µs"));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "binaries: A = {}, B = {}",
        report.binaries[0], report.binaries[1]
    );
    for (index, round) in report.runs.chunks(2).enumerate() {
        let figures: Vec<String> = round
            .iter()
            .zip(["A", "B"])
            .map(|(run, name)| {
                format!(
                    "{name} {:.1} moves/s (ack p99 {}; CPU per move server {}, Postgres {})",
                    run.play.moves_per_second,
                    ms(run.play.submit_to_ack.p99_ms),
                    us(run.play.cpu.server_us_per_move),
                    us(run.play.cpu.postgres_us_per_move)
                )
            })
            .collect();
        let ratio = round_ratio(round).map_or("n/a".to_string(), |r| format!("{r:.3}"));
        let _ = writeln!(
            out,
            "binaries: round {}: {}; B / A moves/s {ratio}",
            index + 1,
            figures.join(", ")
        );
    }
    let median = report
        .moves_ratio
        .map_or("n/a".to_string(), |r| format!("{r:.3}"));
    let _ = writeln!(
        out,
        "binaries: median of {} rounds' B / A moves/s {median}",
        report.round_ratios.len()
    );
    out
}

/// The lines comparing the stores of a `--stores` run: one per round of `per_round` runs, and
/// with several rounds, the median ratio.
pub fn stores_lines(report: &StoresReport, per_round: usize) -> String {
    let rounds: Vec<&[PlayReport]> = report.runs.chunks(per_round.max(1)).collect();
    let mut out = String::new();
    for (index, round) in rounds.iter().enumerate() {
        let ratio = round_ratio(round).map_or("n/a".to_string(), |r| format!("{r:.3}"));
        let label = if rounds.len() > 1 {
            format!("round {}: ", index + 1)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "stores: {label}{}; last / first moves/s {ratio}",
            round_figures(round)
        );
    }
    if rounds.len() > 1 {
        let median = report
            .moves_ratio
            .map_or("n/a".to_string(), |r| format!("{r:.3}"));
        let _ = writeln!(
            out,
            "stores: median of {} rounds' last / first moves/s {median}",
            rounds.len()
        );
    }
    out
}

/// Each run's store, moves/s and acknowledgement latency, for the stores line.
fn round_figures(runs: &[PlayReport]) -> String {
    let figures: Vec<String> = runs
        .iter()
        .map(|run| {
            let store = run
                .store
                .map_or("?".to_string(), |s| format!("{s:?}").to_lowercase());
            format!(
                "{store} {:.1} moves/s (ack p50 {} p99 {})",
                run.play.moves_per_second,
                ms(run.play.submit_to_ack.p50_ms),
                ms(run.play.submit_to_ack.p99_ms)
            )
        })
        .collect();
    figures.join(", ")
}

/// `bench streams`.
pub async fn run_streams(args: &StreamsArgs) -> Result<StreamsReport, BenchError> {
    // The spawned server must admit every stream.
    let max_streams = (args.count + 100).max(50_000).to_string();
    let extra = [SPAWN_ARGS, &["--max-streams", max_streams.as_str()]].concat();
    let target = Target::open(&args.target, &extra).await?;
    let config = StreamsConfig {
        count: args.count,
        moves: args.moves,
        public: target.public,
        internal: target.internal,
        jwt_secret: args.target.jwt_secret.clone(),
        server_pid: target.pid,
        metrics: target.metrics,
        client_reads: args.client_reads,
    };
    let measured = streams::run(config).await;
    let store = target.spawned.as_ref().map(|_| args.target.store);
    let closed = target.close().await;
    let streams = measured?;
    closed?;
    Ok(StreamsReport {
        machine: Machine::here(),
        store,
        streams,
    })
}

/// `bench matchmaking`.
pub async fn run_matchmaking(args: &MatchmakingArgs) -> Result<MatchmakingReport, BenchError> {
    // Every waiting player holds a lobby stream: the spawned server must admit them all.
    let extra = [SPAWN_ARGS, &["--max-streams", "1000000"]].concat();
    let target = Target::open(&args.target, &extra).await?;
    let config = MatchmakingConfig {
        concurrency: args.concurrency,
        players_per_second: args.players_per_second,
        duration: Duration::from_secs(args.duration),
        drain: Duration::from_secs(args.drain_seconds),
        connections: args.connections,
        public: target.public,
        jwt_secret: args.target.jwt_secret.clone(),
        server_pid: target.pid,
    };
    let measured = matchmaking::run(config).await;
    let store = target.spawned.as_ref().map(|_| args.target.store);
    let closed = target.close().await;
    let matchmaking = measured?;
    closed?;
    Ok(MatchmakingReport {
        machine: Machine::here(),
        store,
        matchmaking,
    })
}

/// The matchmaking report as a table.
pub fn matchmaking_table(report: &MatchmakingReport) -> String {
    let m = &report.matchmaking;
    let mut out = String::new();
    let rate = m
        .players_per_second_target
        .map_or("as fast as answered".to_string(), |r| {
            format!("{r} players/s asked")
        });
    let _ = writeln!(
        out,
        "hidden-front bench matchmaking: {} enqueuers ({rate}), {:.1} s, rated queue, store {}",
        m.concurrency,
        m.elapsed_seconds,
        store_name(report.store)
    );
    machine_and_load(&mut out, &report.machine, &m.load_before, &m.load_after);
    let _ = writeln!(
        out,
        "  {:<34} {:.1}",
        "pairs/s (games made)", m.pairs_per_second
    );
    let _ = writeln!(
        out,
        "  {:<34} {} pairs; {} players enqueued ({:.1}/s), {} matched in the run, {} in the drain, {} unmatched; {} connections",
        "totals",
        m.pairs,
        m.players_enqueued,
        m.players_enqueued_per_second,
        m.players_matched,
        m.players_matched_in_drain,
        m.players_unmatched,
        m.connections
    );
    latency_row(&mut out, "enqueue (FindMatch)", &m.enqueue);
    latency_row(&mut out, "enqueue -> MatchFound", &m.enqueue_to_matched);
    let _ = writeln!(out, "  {:<34} {}", "errors", errors_line(&m.errors));
    let us = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.1} µs"));
    let _ = writeln!(
        out,
        "  {:<34} server {} (process accounting), bench {}",
        "CPU per pair",
        us(m.cpu.server_us_per_pair),
        us(m.cpu.bench_us_per_pair)
    );
    out
}

fn load_line(out: &mut String, label: &str, load: &Load) {
    let _ = writeln!(out, "  {label:<34} {load}");
}

/// The lines every report's table opens with: the machine, the load before and after.
fn machine_and_load(out: &mut String, machine: &Machine, before: &Load, after: &Load) {
    let _ = writeln!(
        out,
        "  machine: {} x {}, {} GiB",
        machine.cpus, machine.cpu, machine.memory_gib
    );
    load_line(out, "load before / after", before);
    let _ = writeln!(out, "  {:<34} {}", "", after);
}

/// The store a report's server ran on, as its option names it.
fn store_name(store: Option<StoreKind>) -> String {
    store.map_or("(running server)".to_string(), |s| {
        format!("{s:?}").to_lowercase()
    })
}

/// The play report as a table.
pub fn play_table(report: &PlayReport) -> String {
    let p = &report.play;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "hidden-front bench play: {} games, {:.1} s, think {} ms{}, store {}",
        p.games,
        p.elapsed_seconds,
        p.think_ms,
        if p.think_spread_percent > 0 {
            format!(" ± {} %", p.think_spread_percent)
        } else {
            String::new()
        },
        store_name(report.store)
    );
    machine_and_load(&mut out, &report.machine, &p.load_before, &p.load_after);
    let _ = writeln!(out, "  {:<34} {:.1}", "moves/s", p.moves_per_second);
    let _ = writeln!(
        out,
        "  {:<34} {} moves, {} games started, {} finished, {} abandoned, {} connections",
        "totals", p.moves, p.games_started, p.games_finished, p.games_abandoned, p.connections
    );
    if p.shards.len() > 1 {
        let shards: Vec<String> = p
            .shards
            .iter()
            .map(|s| format!("{}: {} moves, {} games", s.shard, s.moves, s.games_started))
            .collect();
        let _ = writeln!(out, "  {:<34} {}", "per shard", shards.join("; "));
    }
    latency_row(&mut out, "submit -> acknowledge", &p.submit_to_ack);
    let mut slowest: Vec<_> = p.submit_to_ack_by_second.iter().collect();
    slowest.sort_by(|a, b| {
        let p99 = |s: &&SecondLatency| s.latency.p99_ms.unwrap_or(0.0);
        p99(b).total_cmp(&p99(a))
    });
    if !slowest.is_empty() {
        let worst: Vec<String> = slowest
            .iter()
            .take(3)
            .map(|s| {
                format!(
                    "s{} p99 {} (n={})",
                    s.second,
                    ms(s.latency.p99_ms).trim(),
                    s.latency.count
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "  {:<34} {}",
            "  slowest seconds (by send time)",
            worst.join(", ")
        );
    }
    latency_row(
        &mut out,
        "submit -> opponent sees it",
        &p.submit_to_opponent_sees,
    );
    latency_row(&mut out, "create game -> answer", &p.create_to_answer);
    latency_row(&mut out, "confirm -> answer", &p.confirm_to_answer);
    let timer = &p.timer;
    let _ = writeln!(
        out,
        "  {:<34} p50 {:>11}  p99 {:>11}  ({} timeouts seen; {} early, by up to {}; {} stalls without a timeout)",
        "timer lateness",
        ms(timer.lateness.p50_ms),
        ms(timer.lateness.p99_ms),
        timer.timeouts_seen,
        timer.early,
        ms(timer.early_max_ms),
        timer.not_fired
    );
    let _ = writeln!(out, "  {:<34} {}", "errors", errors_line(&p.errors));
    let _ = writeln!(
        out,
        "  {:<34} {}",
        "moves refused by the game's end", p.moves_refused_by_the_end
    );
    let m = &p.memory;
    let _ = writeln!(
        out,
        "  {:<34} {} per stream ({} streams; RSS {} -> {}; includes game state)",
        "server memory",
        kib(m.bytes_per_stream),
        m.streams_at_peak,
        mib(m.rss_before_bytes),
        mib(m.rss_at_peak_bytes)
    );
    let cpu = &p.cpu;
    let us = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.1} µs"));
    let _ = writeln!(
        out,
        "  {:<34} server {} (process accounting), bench {}, Postgres {} (every postgres process here)",
        "CPU per move",
        us(cpu.server_us_per_move),
        us(cpu.bench_us_per_move),
        us(cpu.postgres_us_per_move)
    );
    let _ = writeln!(out, "  {:<34} {:?}", "transport", p.transport);
    match (&report.pgbench, &report.pgbench_error) {
        (Some(pg), _) => {
            let _ = writeln!(
                out,
                "  {:<34} {:.1} tx/s ({} clients, synchronous_commit={}, fsync={}, load {:.2}); moves/s ratio {:.3}",
                "pgbench one-row INSERT commits",
                pg.tps,
                pg.clients,
                pg.synchronous_commit,
                pg.fsync,
                pg.load_before.one,
                report.ratio_to_pgbench.unwrap_or(0.0)
            );
        }
        (None, Some(e)) => {
            let _ = writeln!(out, "  {:<34} n/a: {e}", "pgbench one-row INSERT commits");
        }
        (None, None) => {}
    }
    match (&report.echo, &report.echo_error) {
        (Some(echo), _) => {
            let _ = writeln!(
                out,
                "  {:<34} {:.1} calls/s ({} callers, p99 {}, load {:.2}); moves/s ratio {:.4}",
                "plain tonic RPC (health Check)",
                echo.calls_per_second,
                echo.callers,
                ms(echo.latency.p99_ms),
                echo.load_before.one,
                report.ratio_to_echo.unwrap_or(0.0)
            );
        }
        (None, Some(e)) => {
            let _ = writeln!(out, "  {:<34} n/a: {e}", "plain tonic RPC (health Check)");
        }
        (None, None) => {}
    }
    out
}

/// The streams report as a table.
pub fn streams_table(report: &StreamsReport) -> String {
    let s = &report.streams;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "hidden-front bench streams: {} of {} streams open over {} connections in {:.1} s",
        s.opened, s.requested, s.connections, s.open_seconds
    );
    machine_and_load(&mut out, &report.machine, &s.load_before, &s.load_after);
    let _ = writeln!(
        out,
        "  {:<34} {} per stream (RSS {} -> {})",
        "server memory",
        kib(s.bytes_per_stream),
        mib(s.rss_before_bytes),
        mib(s.rss_after_bytes)
    );
    if let Some(start) = &s.start_of_play {
        latency_row(
            &mut out,
            &format!(
                "start of play, seq {} (missing {})",
                start.seq, start.missing
            ),
            &start.arrival,
        );
    }
    for fanout in &s.fanouts {
        latency_row(
            &mut out,
            &format!("fan-out of seq {} (missing {})", fanout.seq, fanout.missing),
            &fanout.arrival,
        );
    }
    latency_row(&mut out, "fan-out, all arrivals", &s.arrival);
    if let Some(per_move) = &s.store_operations_per_move {
        let total: f64 = per_move.values().sum();
        let parts: Vec<String> = per_move
            .iter()
            .filter(|(_, n)| **n > 0.0)
            .map(|(operation, n)| format!("{operation} {n:.1}"))
            .collect();
        let _ = writeln!(
            out,
            "  {:<34} {total:.1} ({}; watchers read {:?})",
            "store operations per move",
            parts.join(", "),
            s.client_reads
        );
    }
    let _ = writeln!(out, "  {:<34} {}", "errors", errors_line(&s.errors));
    out
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_takes_the_middle_or_the_mean_of_the_middle_two() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[0.7, 0.5, 0.6]), Some(0.6));
        assert_eq!(median(&[0.7, 0.5, 0.6, 0.4]), Some(0.55));
    }
}
