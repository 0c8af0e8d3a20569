//! The cluster test's judge (`scripts/cluster-test-report judge`) fails closed: with no record of
//! the run, or records that hold nothing, it fails and names each missing input, against a real
//! migrated (and empty) database, as the cluster test runs it.
//!
//! - `an_empty_run_fails_and_names_every_missing_input`: no marks, no CSV files, no summary, no
//!   stored game.
//! - `records_without_rows_fail`: every file present with its header only, every scenario
//!   marked: the moves, commands and games that must not be empty are named.
//! - `only_documented_errors_and_transport_breaks_are_retriable`: in a window, the client's own
//!   deadline, a stream cut without a status, UNAVAILABLE and ABORTED/STALE_VERSION are counted
//!   by class; an INTERNAL without the service's reason and without a transport message, and an
//!   INTERNAL with one of the service's reasons, fail it.
//! - `timers_are_judged_from_the_stored_log`: games stored with their armed turn deadlines: an
//!   early, a late and a missed timeout each fail the run, an on-time one passes.
//! - `the_builds_must_be_rolled_as_the_scenario_says`: the hosts' reported commits must be all
//!   the previous release's at the start, both at once during the upgrade, all this one's after.
//! - `availability_is_bounded_in_every_window`: a seat 11 s unable to move, a stream 10.5 s away
//!   and a rate under half the steady one each fail their window.
//! - `a_seat_that_sees_its_turn_late_fails_its_window`: 21 s from the opponent's acknowledged
//!   move to the seat's own first send fails the window, by transport; the same wait after a
//!   clock let run out on purpose does not count.
//! - `grpc_and_websocket_players_must_both_play_in_every_window`: a window (and a run) whose moves
//!   all went over one transport fails naming the other.

use hidden_front_e2e::{TestDatabase, binary};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The scenarios the driver marks (scripts/cluster-test).
const SCENARIOS: [&str; 9] = [
    "rolling_upgrade",
    "scale_out_in",
    "host_loss_session1",
    "host_loss_gateway2",
    "host_loss_clock1",
    "partition_clock_postgres",
    "partition_gateway1_sessions",
    "kill_session2",
    "partition_session1_postgres",
];

/// The commits the judge is told the two releases are.
const PREVIOUS: &str = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const HEAD: &str = "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

/// A fresh database with the schema the cluster test's hosts write.
async fn migrated_database() -> TestDatabase {
    let db = TestDatabase::create().await;
    let status = Command::new(binary())
        .arg("migrate")
        .env("DATABASE_URL", db.url())
        .status()
        .expect("hidden-front migrate runs");
    assert!(status.success(), "hidden-front migrate failed: {status}");
    db
}

/// Runs the judge on `work` against `db`; returns its exit code and its report.
fn judge(work: &Path, db: &TestDatabase) -> (Option<i32>, Value) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/cluster-test-report");
    let report = work.join("report.json");
    let output = Command::new("python3")
        .arg(&script)
        .args(["judge", "--work"])
        .arg(work)
        .args(["--load-status", "0", "--started", "0"])
        .args(["--previous-release", PREVIOUS, "--head-commit", HEAD])
        .arg("--psql")
        .arg(format!("psql -X -At -d {}", db.url()))
        .arg("--report")
        .arg(&report)
        .output()
        .expect("python3 runs the judge");
    let text = std::fs::read_to_string(&report).unwrap_or_else(|error| {
        panic!(
            "the judge wrote no report ({error}); it said:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (
        output.status.code(),
        serde_json::from_str(&text).expect("the report is JSON"),
    )
}

/// A fresh directory for one run's records.
fn work_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hf-judge-{name}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(dir.join("load")).expect("the work directory is made");
    dir
}

/// A list of strings in the report (what it could not read, a verdict's failures).
fn strings(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("{list} is not a list"))
        .iter()
        .map(|entry| entry.as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The judge's list of what it could not read.
fn missing(report: &Value) -> Vec<String> {
    strings(&report["whole_run"]["inputs_missing"])
}

/// Each of `expected` starts one of `found`.
/// Judges `work`, which must fail: its `rolling_upgrade` window reports `field` as `value` and
/// names each of `failures`. The whole report, for more checks.
fn assert_window_fails(
    work: &Path,
    db: &TestDatabase,
    (field, value): (&str, Value),
    failures: &[&str],
) -> Value {
    let (code, report) = judge(work, db);
    assert_eq!(code, Some(1), "{report}");
    let window = &report["scenarios"]["rolling_upgrade"];
    assert_eq!(window[field], value, "{window}");
    assert_named(&strings(&window["failures"]), failures);
    report
}

fn assert_named(found: &[String], expected: &[&str]) {
    for name in expected {
        assert!(
            found.iter().any(|f| f.starts_with(name)),
            "{name:?} is not among {found:?}"
        );
    }
}

#[tokio::test]
async fn an_empty_run_fails_and_names_every_missing_input() {
    let db = migrated_database().await;
    let work = work_dir("empty");
    let (code, report) = judge(&work, &db);
    assert_eq!(code, Some(1), "an empty run must fail: {report}");
    assert_eq!(report["passed"], false);
    let missing = missing(&report);
    assert_named(
        &missing,
        &[
            "marks: missing",
            "moves.csv: missing",
            "errors.csv: missing",
            "streams.csv: missing",
            "stalls.csv: missing",
            "games.csv: missing",
            "commands.csv: missing",
            "summary.json: missing",
            "builds.txt: missing",
            "Postgres: no stored game",
        ],
    );
    for scenario in SCENARIOS {
        assert!(
            missing.iter().any(|m| m.contains(scenario)),
            "scenario {scenario} unmarked is not named: {missing:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// Every record the load generator writes, with its header only, and every scenario marked from
/// 1,000 to 2,000 ms.
fn header_only_records(work: &Path) {
    let load = work.join("load");
    for (file, header) in [
        (
            "moves.csv",
            "first_sent_unix_ms,last_sent_unix_ms,acked_unix_ms,latency_us,attempts,game,side,version,replayed",
        ),
        ("errors.csv", "unix_ms,rpc,code,reason,message"),
        ("streams.csv", "unix_ms,game,role,what,seq,detail"),
        ("stalls.csv", "unix_ms,game,side,version,outcome,waited_ms"),
        (
            "games.csv",
            "started_unix_ms,ended_unix_ms,game,end_reason,transport",
        ),
        (
            "commands.csv",
            "unix_ms,game,side,key,outcome,version,code,reason",
        ),
    ] {
        std::fs::write(load.join(file), format!("{header}\n")).expect("a record is written");
    }
    std::fs::write(load.join("summary.json"), r#"{"games_started": 0}"#).expect("summary");
    let marks: String = SCENARIOS
        .iter()
        .map(|name| format!("{name} begin 1000\n{name} end 2000\n"))
        .collect();
    std::fs::write(work.join("marks"), marks).expect("marks");
}

#[tokio::test]
async fn records_without_rows_fail() {
    let db = migrated_database().await;
    let work = work_dir("headers");
    header_only_records(&work);
    let (code, report) = judge(&work, &db);
    assert_eq!(
        code,
        Some(1),
        "a run that recorded nothing must fail: {report}"
    );
    let missing = missing(&report);
    assert_named(
        &missing,
        &[
            "moves.csv: no rows",
            "games.csv: no rows",
            "commands.csv: no rows",
        ],
    );
    assert!(
        !missing.iter().any(|m| m.starts_with("marks")),
        "every scenario was marked: {missing:?}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test]
async fn only_documented_errors_and_transport_breaks_are_retriable() {
    let db = migrated_database().await;
    let work = work_dir("errors");
    header_only_records(&work);
    let errors = [
        "unix_ms,rpc,code,reason,message",
        "1100,Play,CANCELLED,TRANSPORT,Timeout expired",
        "1200,Subscribe,UNKNOWN,TRANSPORT,protocol error: missing grpc-status trailer",
        "1300,Play,UNAVAILABLE,SESSION_UNAVAILABLE,the session is unavailable",
        "1400,Play,ABORTED,STALE_VERSION,the game moved on",
        "1500,LegalMoves,INTERNAL,TRANSPORT,something broke",
        "1600,Play,INTERNAL,INTERNAL,the service failed",
    ]
    .join("\n");
    std::fs::write(work.join("load/errors.csv"), errors + "\n").expect("errors");
    let (code, report) = judge(&work, &db);
    assert_eq!(code, Some(1), "{report}");
    let window = &report["scenarios"]["rolling_upgrade"];
    let classes = &window["retriable_errors"];
    assert_eq!(classes["transport: the client's deadline"], 1, "{window}");
    assert_eq!(
        classes["transport: a stream cut without a status"], 1,
        "{window}"
    );
    assert_eq!(classes["UNAVAILABLE"], 1, "{window}");
    assert_eq!(classes["ABORTED/STALE_VERSION"], 1, "{window}");
    let bad: Vec<&String> = window["non_retriable_errors"]
        .as_object()
        .expect("the window lists its non-retriable errors")
        .keys()
        .collect();
    assert_eq!(bad.len(), 2, "{window}");
    assert!(
        bad.iter()
            .any(|k| k.starts_with("LegalMoves:INTERNAL/TRANSPORT")),
        "{bad:?}"
    );
    assert!(
        bad.iter().any(|k| k.starts_with("Play:INTERNAL/INTERNAL")),
        "{bad:?}"
    );
    assert!(
        window["failures"]
            .as_array()
            .expect("the window's failures")
            .iter()
            .any(|f| f.as_str().unwrap_or_default().contains("non-retriable")),
        "{window}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// One stored game for the judge: its events as (seq, created ms, armed turn deadline ms, JSON).
async fn store_game(db: &TestDatabase, game: &str, events: &[(i64, i64, Option<i64>, &str)]) {
    let mut connection = db.connect().await;
    sqlx::query(
        "INSERT INTO games (game_id, rules, time_control, south_player, north_player, version, \
         phase, snapshot) VALUES ($1::uuid, 'junqi', '{}', 's', 'n', $2, 'ended', '{}')",
    )
    .bind(game)
    .bind(i64::try_from(events.len()).expect("few events"))
    .execute(&mut connection)
    .await
    .expect("the game is stored");
    for (seq, created, deadline, event) in events {
        sqlx::query(
            "INSERT INTO game_events (game_id, seq, event, created_at, armed_turn_deadline) \
             VALUES ($1::uuid, $2, $3::jsonb, to_timestamp($4 / 1000.0), \
                     to_timestamp($5 / 1000.0))",
        )
        .bind(game)
        .bind(seq)
        .bind(event)
        .bind(*created as f64)
        .bind(deadline.map(|d| d as f64))
        .execute(&mut connection)
        .await
        .expect("the event is stored");
    }
}

/// Timers are judged from the stored log: a timeout 100 ms after its deadline passes; one before
/// it is early; one 19 s after it is late; a deadline passed by 29 s with a move and no timeout
/// was missed.
#[tokio::test]
async fn timers_are_judged_from_the_stored_log() {
    let db = migrated_database().await;
    let started = r#"{"type":"play_started"}"#;
    let timed_out = r#"{"type":"timed_out","side":"south"}"#;
    let moved = r#"{"type":"moved"}"#;
    let ended = r#"{"type":"ended","outcome":{"winner":"north","reason":"resigned"}}"#;
    for (game, second) in [
        (
            "00000000-0000-0000-0000-00000000000a",
            (2, 31_100, None, timed_out),
        ),
        (
            "00000000-0000-0000-0000-00000000000b",
            (2, 30_000, None, timed_out),
        ),
        (
            "00000000-0000-0000-0000-00000000000c",
            (2, 50_000, None, timed_out),
        ),
        (
            "00000000-0000-0000-0000-00000000000d",
            (2, 60_000, None, moved),
        ),
    ] {
        store_game(
            &db,
            game,
            &[
                (1, 1_000, Some(31_000), started),
                second,
                (3, 61_000, None, ended),
            ],
        )
        .await;
    }
    let work = work_dir("timers");
    header_only_records(&work);
    let (code, report) = judge(&work, &db);
    assert_eq!(code, Some(1), "{report}");
    let whole = &report["whole_run"];
    assert_eq!(whole["timer_fires_judged"], 3, "{whole}");
    assert_eq!(whole["timers_early"], 1, "{whole}");
    assert_eq!(whole["timers_late"], 1, "{whole}");
    assert_eq!(whole["timers_missed"], 1, "{whole}");
    assert_eq!(whole["timer_lateness_ms"]["min"], -1_000, "{whole}");
    assert_named(
        &strings(&whole["failures"]),
        &["timers_early", "timers_late", "timers_missed"],
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// Availability is bounded: in a window, a seat 11 s unable to move and a stream 10.5 s away each
/// fail it, and so does a rate under half the steady one.
#[tokio::test]
async fn availability_is_bounded_in_every_window() {
    let db = migrated_database().await;
    let work = work_dir("availability");
    header_only_records(&work);
    let mut moves = vec![
        "first_sent_unix_ms,last_sent_unix_ms,acked_unix_ms,latency_us,attempts,game,side,version,replayed"
            .to_owned(),
    ];
    // 50 moves in the steady 5 s before the windows (10 a second), 1 in the 1 s window.
    for i in 0..50 {
        let at = 1_000 - 5_000 + i * 100;
        moves.push(format!("{at},{at},{at},1000,1,g,south,{i},false"));
    }
    moves.push("1000,1990,2000,10000,3,g,south,99,false".to_owned());
    // A move started in the window, acknowledged 11 s later.
    moves.push("1500,12400,12500,100000,9,g,south,100,false".to_owned());
    std::fs::write(work.join("load/moves.csv"), moves.join("\n") + "\n").expect("moves");
    std::fs::write(
        work.join("load/streams.csv"),
        "unix_ms,game,role,what,seq,detail\n1500,g,south,resumed,7,10500\n",
    )
    .expect("streams");
    let (code, report) = judge(&work, &db);
    assert_eq!(code, Some(1), "{report}");
    let window = &report["scenarios"]["rolling_upgrade"];
    assert_eq!(window["longest_unable_to_move_ms"], 11_000, "{window}");
    assert_eq!(window["longest_without_stream_ms"], 10_500, "{window}");
    assert_named(
        &strings(&window["failures"]),
        &[
            "a seat could not move for 11000 ms",
            "a stream was away for 10500 ms",
            "moves/s 1.0 under 0.5 x the steady 10.0",
        ],
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// Writes `moves.csv` with 50 moves acknowledged in the steady 5 s before the windows, each
/// `latency_ms` from submit to acknowledgement, and one move in the windows.
fn steady_moves(work: &Path, latency_ms: u64) {
    let mut moves = vec![
        "first_sent_unix_ms,last_sent_unix_ms,acked_unix_ms,latency_us,attempts,game,side,version,replayed"
            .to_owned(),
    ];
    for i in 0..50 {
        let at = 1_000 - 5_000 + i * 100;
        moves.push(format!(
            "{at},{at},{at},{},1,g,south,{i},false",
            latency_ms * 1000
        ));
    }
    moves.push("1000,1500,1500,1000,1,g,south,99,false".to_owned());
    std::fs::write(work.join("load/moves.csv"), moves.join("\n") + "\n").expect("moves");
}

/// A run whose steady stretches were slow before every fault is flagged as run on a machine
/// too slow for the load, and still fails; a fast one is not flagged.
#[tokio::test]
async fn a_load_slow_before_every_fault_is_flagged_and_still_fails() {
    let db = migrated_database().await;
    for (latency_ms, slow) in [(800, true), (200, false)] {
        let work = work_dir("slow-steady");
        header_only_records(&work);
        steady_moves(&work, latency_ms);
        let (code, report) = judge(&work, &db);
        assert_eq!(code, Some(1), "{report}");
        assert_eq!(report["passed"], false, "{report}");
        assert_eq!(
            report["slow_steady_load"], slow,
            "{latency_ms} ms: {report}"
        );
        assert_eq!(
            report["steady_p50_ms_range"],
            serde_json::json!([latency_ms as f64, latency_ms as f64]),
            "{report}"
        );
        let _ = std::fs::remove_dir_all(&work);
    }
}

/// A seat that took 21 s to see its turn fails the window it came in, named by transport; a seat
/// that let its clock run out at that version on purpose is not counted.
#[tokio::test]
async fn a_seat_that_sees_its_turn_late_fails_its_window() {
    let db = migrated_database().await;
    let work = work_dir("turn-seen");
    header_only_records(&work);
    std::fs::write(
        work.join("load/games.csv"),
        "started_unix_ms,ended_unix_ms,game,end_reason,transport\n0,90000,a,RESIGNED,websocket\n0,90000,b,RESIGNED,grpc\n",
    )
    .expect("games");
    let header = "first_sent_unix_ms,last_sent_unix_ms,acked_unix_ms,latency_us,attempts,game,side,version,replayed";
    let moves = [
        // a: north's move 10 acknowledged in the window, south's 11 first sent 21 s later.
        "1400,1400,1500,1000,1,a,north,10,false",
        "22500,22500,22600,1000,1,a,south,11,false",
        // b: the same wait, but south let its clock run out at 10 (its timer fired late).
        "1400,1400,1500,1000,1,b,north,10,false",
        "40000,40000,40100,1000,1,b,south,11,false",
        // b: then a quick answer, 300 ms.
        "40500,40500,40600,1000,1,b,north,12,false",
        "40900,40900,41000,1000,1,b,south,13,false",
    ];
    std::fs::write(
        work.join("load/moves.csv"),
        format!("{header}\n{}\n", moves.join("\n")),
    )
    .expect("moves");
    std::fs::write(
        work.join("load/stalls.csv"),
        "unix_ms,game,side,version,outcome,waited_ms\n1500,b,south,10,fired,30000\n",
    )
    .expect("stalls");
    assert_window_fails(
        &work,
        &db,
        (
            "longest_to_see_turn_ms",
            serde_json::json!({"websocket": 21_000}),
        ),
        &["a websocket seat took 21000 ms to see its turn (bound 20000)"],
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// Both ways to play through the ingress must have played: a window whose moves all went over
/// gRPC fails naming the WebSocket, and so does the whole run; one with both passes that check.
#[tokio::test]
async fn grpc_and_websocket_players_must_both_play_in_every_window() {
    let db = migrated_database().await;
    let work = work_dir("transports");
    header_only_records(&work);
    std::fs::write(
        work.join("load/games.csv"),
        "started_unix_ms,ended_unix_ms,game,end_reason,transport
         0,9000,a,RESIGNED,grpc
0,9000,b,RESIGNED,websocket
",
    )
    .expect("games");
    let header = "first_sent_unix_ms,last_sent_unix_ms,acked_unix_ms,latency_us,attempts,game,side,version,replayed";
    std::fs::write(
        work.join("load/moves.csv"),
        format!("{header}\n1500,1500,1600,1000,1,a,south,5,false\n"),
    )
    .expect("moves");
    let report = assert_window_fails(
        &work,
        &db,
        (
            "acknowledged_moves_by_transport",
            serde_json::json!({"grpc": 1}),
        ),
        &["no move acknowledged over websocket during the event"],
    );
    let window = &report["scenarios"]["rolling_upgrade"];
    assert!(
        !strings(&window["failures"])
            .iter()
            .any(|f| f.contains("over grpc")),
        "{window}"
    );
    assert_named(
        &strings(&report["whole_run"]["failures"]),
        &["no move acknowledged over websocket"],
    );
    std::fs::write(
        work.join("load/moves.csv"),
        format!(
            "{header}\n1500,1500,1600,1000,1,a,south,5,false\n1500,1500,1700,1000,1,b,north,5,false\n"
        ),
    )
    .expect("moves");
    let (_, report) = judge(&work, &db);
    let window = &report["scenarios"]["rolling_upgrade"];
    assert!(
        !strings(&window["failures"])
            .iter()
            .any(|f| f.contains("acknowledged over")),
        "{window}"
    );
    assert_eq!(
        report["whole_run"]["acknowledged_moves_by_transport"],
        serde_json::json!({"grpc": 1, "websocket": 1})
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// The builds the hosts reported are judged: as rolled, nothing is wrong; a "mixed" scrape that
/// shows only one release, or a host that reported no commit, is named.
#[tokio::test]
async fn the_builds_must_be_rolled_as_the_scenario_says() {
    let db = migrated_database().await;
    let work = work_dir("builds");
    header_only_records(&work);
    let builds = work.join("load/builds.txt");
    std::fs::write(
        &builds,
        "all_previous gateway1 1111111\nall_previous session1 1111111\n\
         mixed gateway1 2222222\nmixed session1 1111111\n\
         all_this gateway1 2222222\nall_this session1 2222222\n",
    )
    .expect("builds");
    let (_, report) = judge(&work, &db);
    let whole = &report["whole_run"];
    assert_eq!(
        whole["builds_not_as_rolled"],
        serde_json::json!([]),
        "{whole}"
    );
    assert_eq!(whole["builds"]["mixed"]["session1"], "1111111", "{whole}");
    std::fs::write(
        &builds,
        "all_previous gateway1 1111111\nall_previous session1 none\n\
         mixed gateway1 2222222\nmixed session1 2222222\n\
         all_this gateway1 2222222\nall_this session1 2222222\n",
    )
    .expect("builds");
    let (code, report) = judge(&work, &db);
    assert_eq!(code, Some(1), "{report}");
    let problems: Vec<&str> = report["whole_run"]["builds_not_as_rolled"]
        .as_array()
        .expect("the build problems")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems.iter().any(|p| p.starts_with("all_previous")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.starts_with("mixed")),
        "{problems:?}"
    );
    let _ = std::fs::remove_dir_all(&work);
}
