//! The load generator (`crates/bench`) against a real spawned `hidden-front serve`: short runs
//! that must play moves (or pair players) with no error and report every figure. An end-to-end
//! test (the bench spawns the real binary), so it lives here rather than beside the bench's
//! library.
//!
//! The binary is the one the other end-to-end tests use (next to this test's executable,
//! refused when older than its sources), or `HF_BENCH_BIN`. Build it first:
//! `cargo build -p hidden-front`.
//! Postgres is the one at `HF_BENCH_ADMIN_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`).

use hidden_front_bench::cli::{
    MatchmakingArgs, PlayArgs, StreamsArgs, TargetArgs, matchmaking_table, run_matchmaking,
    run_play, run_play_stores, run_streams, stores_lines,
};
use hidden_front_bench::play::Transport;
use hidden_front_bench::server::{DEFAULT_ADMIN_URL, StoreKind};
use hidden_front_bench::streams::ClientReads;
use std::path::PathBuf;

/// The binary under test: the end-to-end tests' own choice, which refuses a stale one.
fn binary() -> PathBuf {
    std::env::var_os("HF_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(hidden_front_e2e::binary)
}

fn target(store: StoreKind) -> TargetArgs {
    TargetArgs {
        server: Vec::new(),
        http: None,
        server_pid: None,
        spawn: true,
        store,
        database_shards: 1,
        admin_url: std::env::var("HF_BENCH_ADMIN_URL")
            .unwrap_or_else(|_| DEFAULT_ADMIN_URL.to_string()),
        serve_binary: Some(binary()),
        serve_args: Vec::new(),
        jwt_secret: hidden_front_gateway::auth::DEV_SECRET.to_string(),
        json: None,
    }
}

fn play_args(store: StoreKind, compare_seconds: u64) -> PlayArgs {
    PlayArgs {
        transport: Transport::Connect,
        games: 3,
        duration: 2,
        until_games: None,
        think_ms: 0,
        think_spread_percent: 0,
        move_seconds: None,
        deployment_seconds: 60,
        reconnect_seconds: 60,
        stall_percent: 0,
        seed: 7,
        compare_seconds,
        no_pgbench: false,
        pgbench: PathBuf::from(std::env::var("HF_PGBENCH").unwrap_or_else(|_| "pgbench".into())),
        stores: Vec::new(),
        rounds: 1,
        compare_with: None,
        target: target(store),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn play_on_memory_plays_moves_without_errors_and_reports_every_figure() {
    let args = play_args(StoreKind::Memory, 1);
    let report = run_play(&args).await.expect("the bench runs");
    let play = &report.play;
    assert!(play.moves > 0, "no move was played: {play:?}");
    assert!(play.errors.is_empty(), "errors: {:?}", play.errors);
    assert_eq!(play.games_abandoned, 0, "{play:?}");
    assert!(play.submit_to_ack.count >= play.moves, "{play:?}");
    assert!(play.submit_to_ack.p99_ms.is_some());
    assert!(
        play.submit_to_opponent_sees.count > 0,
        "no opponent saw a move: {play:?}"
    );
    assert!(
        play.create_to_answer.count >= play.games_started
            && play.confirm_to_answer.count >= play.games_started,
        "every started game was created and confirmed: {play:?}"
    );
    assert!(play.memory.bytes_per_stream.is_some(), "{:?}", play.memory);
    assert!(play.memory.streams_at_peak > 0);
    assert_eq!(play.timer.timeouts_seen, 0, "no clock was asked for");
    let pgbench = report.pgbench.as_ref().expect("pgbench ran");
    assert!(pgbench.tps > 0.0);
    let echo = report.echo.as_ref().expect("the echo ran");
    assert!(
        echo.calls_per_second > 0.0 && echo.errors.is_empty(),
        "{echo:?}"
    );
    assert!(report.ratio_to_pgbench.is_some() && report.ratio_to_echo.is_some());

    // The table and the JSON carry the figures.
    let table = hidden_front_bench::cli::play_table(&report);
    assert!(
        table.contains("moves/s") && table.contains("submit -> acknowledge"),
        "{table}"
    );
    let value = serde_json::to_value(&report).expect("the report encodes");
    for field in [
        "/play/moves_per_second",
        "/play/submit_to_ack/p99_ms",
        "/play/submit_to_opponent_sees/p999_ms",
        "/play/create_to_answer/p99_ms",
        "/play/confirm_to_answer/p99_ms",
        "/play/timer/lateness/p50_ms",
        "/play/errors",
        "/play/moves_refused_by_the_end",
        "/play/memory/bytes_per_stream",
        "/pgbench/tps",
        "/echo/calls_per_second",
        "/ratio_to_pgbench",
        "/ratio_to_echo",
        "/play/load_before/one",
    ] {
        assert!(
            value.pointer(field).is_some(),
            "JSON lacks {field}: {value}"
        );
    }
}

/// Every transport of `bench play` plays games to their end from its seats' own views, with no
/// error: one `Connect` stream per seat, one binary WebSocket per seat, and `Subscribe` plus unary
/// calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn play_through_every_transport_plays_whole_games() {
    for transport in [Transport::Connect, Transport::Websocket, Transport::Unary] {
        let mut args = play_args(StoreKind::Memory, 0);
        args.transport = transport;
        args.games = 4;
        // Until two games have ended, however long the machine takes (random moves end a game
        // in a few hundred plies; unary calls with the CI's other tests beside them once
        // played 310 moves a second). The duration is only the test's bound.
        args.until_games = Some(2);
        args.duration = 300;
        let report = run_play(&args).await.expect("the bench runs");
        let play = &report.play;
        assert_eq!(play.transport, transport);
        assert!(
            play.moves > 0,
            "{transport:?}: no move was played: {play:?}"
        );
        assert!(
            play.errors.is_empty(),
            "{transport:?}: errors: {:?}",
            play.errors
        );
        assert_eq!(play.games_abandoned, 0, "{transport:?}: {play:?}");
        assert!(
            play.games_finished >= 2,
            "{transport:?}: fewer than two games ended: {play:?}"
        );
        assert!(
            play.elapsed_seconds < 300.0,
            "{transport:?}: the run did not end at its second game's end: {play:?}"
        );
        assert!(
            play.submit_to_opponent_sees.count > 0,
            "{transport:?}: {play:?}"
        );
    }
}

/// `--stores memory,postgres --rounds 2`: the stores alternate, durable moves on Postgres, each
/// round's ratio and their median.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn play_on_both_stores_plays_durable_moves_and_reports_the_ratio() {
    let mut args = play_args(StoreKind::Memory, 0);
    args.stores = vec![StoreKind::Memory, StoreKind::Postgres];
    args.rounds = 2;
    let report = run_play_stores(&args).await.expect("the bench runs");
    let stores: Vec<_> = report.runs.iter().map(|run| run.store).collect();
    let (memory, postgres) = (Some(StoreKind::Memory), Some(StoreKind::Postgres));
    assert_eq!(stores, [memory, postgres, memory, postgres]);
    for run in &report.runs {
        let play = &run.play;
        assert!(play.moves > 0, "no move was played: {play:?}");
        assert!(play.errors.is_empty(), "errors: {:?}", play.errors);
        assert!(run.pgbench.is_none() && run.pgbench_error.is_some());
    }
    let moves: Vec<f64> = report
        .runs
        .iter()
        .map(|r| r.play.moves_per_second)
        .collect();
    let expected = [moves[1] / moves[0], moves[3] / moves[2]];
    assert_eq!(report.round_ratios.len(), 2, "{:?}", report.round_ratios);
    for (got, want) in report.round_ratios.iter().zip(expected) {
        assert!(
            (got - want).abs() < 1e-9,
            "{got} is not postgres / memory ({want})"
        );
    }
    let median = report.moves_ratio.expect("a ratio of two rounds");
    assert!(
        (median - (expected[0] + expected[1]) / 2.0).abs() < 1e-9,
        "{median} is not the median of {expected:?}"
    );
    let lines = stores_lines(&report, 2);
    assert!(
        lines.contains("round 1: memory")
            && lines.contains("round 2: memory")
            && lines.contains("median of 2 rounds"),
        "{lines}"
    );
}

/// `--store postgres --database-shards 2`: the games spread over two databases and the report
/// says each shard's moves (`play.shards`), which add up to the run's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn play_on_two_shards_reports_each_shards_moves() {
    let mut args = play_args(StoreKind::Postgres, 0);
    // Enough games that both shards get some (each lands on a shard by a hash of a random
    // key: all 16 on one shard has a chance of 2 in 65,536).
    args.games = 16;
    args.target.database_shards = 2;
    let report = run_play(&args).await.expect("the bench runs");
    let play = &report.play;
    assert!(play.errors.is_empty(), "errors: {:?}", play.errors);
    let shards: Vec<u16> = play.shards.iter().map(|s| s.shard).collect();
    assert_eq!(shards, [0, 1], "{:?}", play.shards);
    assert_eq!(
        play.shards.iter().map(|s| s.moves).sum::<u64>(),
        play.moves,
        "{:?}",
        play.shards
    );
    assert!(
        play.shards
            .iter()
            .all(|s| s.games_started > 0 && s.moves > 0),
        "both shards carried games: {:?}",
        play.shards
    );
    let value = serde_json::to_value(&report).expect("the report encodes");
    assert!(value.pointer("/play/shards/1/moves").is_some(), "{value}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_reach_every_watcher() {
    let args = StreamsArgs {
        count: 150,
        moves: 2,
        client_reads: ClientReads::Status,
        target: target(StoreKind::Memory),
    };
    let report = run_streams(&args).await.expect("the bench runs");
    let streams = &report.streams;
    assert_eq!(streams.opened, 150, "{streams:?}");
    // 150 watchers that take presence and clocks from their streams cost the session no status
    // read per move: the gateway's one upstream is sent the status that follows from each move
    // (docs/session.md, "Streams"), not one read per watcher, nor one per move. (The read after
    // the start of play may land in the window of the two moves: half a read per move.)
    let per_move = streams
        .store_operations_per_move
        .as_ref()
        .expect("the spawned server's store operations");
    let observes = per_move.get("observe").copied().unwrap_or_default();
    assert!(observes <= 0.5, "status reads per move: {per_move:?}");
    assert!(streams.errors.is_empty(), "{:?}", streams.errors);
    assert!(streams.connections >= 2, "150 streams need two connections");
    let start = streams.start_of_play.as_ref().expect("the start of play");
    assert_eq!((start.missing, start.arrival.count), (0, 150), "{start:?}");
    assert_eq!(streams.fanouts.len(), 2);
    assert_eq!(streams.fanouts[0].seq, start.seq + 1, "{streams:?}");
    for fanout in &streams.fanouts {
        assert_eq!(fanout.missing, 0, "{fanout:?}");
        assert_eq!(fanout.arrival.count, 150);
    }
    assert!(streams.bytes_per_stream.is_some());
}

/// `bench matchmaking`: new players at a set rate join the rated queue; matchmaking pairs them
/// (all at the starting rating) and every one of them but an odd last one learns its game.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matchmaking_pairs_the_players_it_enqueues() {
    let args = MatchmakingArgs {
        concurrency: 4,
        players_per_second: Some(25.0),
        duration: 2,
        drain_seconds: 20,
        connections: 2,
        target: target(StoreKind::Memory),
    };
    let report = run_matchmaking(&args).await.expect("the bench runs");
    let m = &report.matchmaking;
    assert!(m.errors.is_empty(), "errors: {:?}", m.errors);
    // 25 players a second for 2 s: the slots at 0, 0.04, ... 1.96 s.
    assert_eq!(m.players_enqueued, 50, "{m:?}");
    assert!(m.pairs > 0, "no pair was formed in the run: {m:?}");
    assert!(
        (m.pairs_per_second - m.pairs as f64 / m.elapsed_seconds).abs() < 1e-9,
        "{m:?}"
    );
    // Each pair counted was announced to at least one of its two players in the run.
    assert!(
        (m.pairs..=2 * m.pairs).contains(&m.players_matched),
        "{m:?}"
    );
    assert_eq!(
        m.players_matched + m.players_matched_in_drain + m.players_unmatched,
        m.players_enqueued,
        "every player is matched in the run, in the drain or not at all: {m:?}"
    );
    assert_eq!(m.players_unmatched, 0, "50 players make 25 pairs: {m:?}");
    assert_eq!(m.enqueue.count, m.players_enqueued, "{m:?}");
    assert_eq!(m.enqueue_to_matched.count, m.players_enqueued, "{m:?}");
    assert!(
        m.enqueue_to_matched.p50_ms >= m.enqueue.p50_ms,
        "a match comes after its enqueue: {m:?}"
    );
    assert!(m.cpu.server_us_per_pair.is_some(), "{:?}", m.cpu);

    let table = matchmaking_table(&report);
    assert!(
        table.contains("pairs/s") && table.contains("enqueue -> MatchFound"),
        "{table}"
    );
    let value = serde_json::to_value(&report).expect("the report encodes");
    for field in [
        "/store",
        "/matchmaking/pairs_per_second",
        "/matchmaking/pairs",
        "/matchmaking/players_enqueued",
        "/matchmaking/enqueue/p50_ms",
        "/matchmaking/enqueue/p99_ms",
        "/matchmaking/enqueue_to_matched/p50_ms",
        "/matchmaking/enqueue_to_matched/p99_ms",
        "/matchmaking/errors",
        "/matchmaking/cpu/server_us_per_pair",
        "/matchmaking/cpu/bench_us_per_pair",
        "/matchmaking/load_before/one",
    ] {
        assert!(
            value.pointer(field).is_some_and(|v| !v.is_null()),
            "JSON lacks {field}: {value}"
        );
    }
}
