//! Metrics and health of the real binary.
//!
//! - `moves_are_counted_and_labels_stay_bounded`: `/metrics` (the `--metrics-listen` port) is
//!   scraped before and after a few moves played through the gateway; the move counter and the
//!   move latency histogram rose by exactly the moves played, and no label value is a game id.
//! - `health_is_serving_when_the_store_answers`: the standard gRPC health check says SERVING for
//!   the session, the gateway and the whole server.
//! - `every_series_is_there_from_the_start_and_each_rpc_is_counted`: before any traffic a
//!   scrape shows the process metrics, the build info, every store operation's error counter and
//!   every gRPC method's call counter at 0; then one call of each kind raises its own series.

use hidden_front_e2e::client::create_game;
use hidden_front_e2e::gateway::{self, PlayerClient, context};
use hidden_front_e2e::metrics::{samples, scrape, value};
use hidden_front_e2e::{Server, TestDatabase, pb};
use hidden_front_metrics_names as names;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// Moves played between the two scrapes.
const MOVES: usize = 6;

/// Whether `text` looks like a UUID (8-4-4-4-12 hex digits).
fn looks_like_uuid(text: &str) -> bool {
    text.len() == 36
        && text.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Plays the side to move's first legal move through the gateway; `None` when neither may move.
async fn play_one(
    seats: &mut [PlayerClient; 2],
    game_id: &str,
    key: &str,
) -> Option<pb::ActionResult> {
    for seat in seats.iter_mut() {
        let legal = seat.legal_moves(game_id).await.expect("LegalMoves");
        if let Some(mv) = legal.moves.first() {
            let result = seat
                .play(context(game_id, key, Some(legal.version)), mv.clone())
                .await
                .unwrap_or_else(|s| panic!("Play of a legal move failed: {s:?}"));
            return Some(result);
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_are_counted_and_labels_stay_bounded() {
    let db = TestDatabase::create().await;
    let server =
        Server::start_with_args("metrics", db.url(), &["--actions-per-second", "5000"]).await;
    let metrics = server
        .metrics_addr()
        .expect("the metrics address was printed");
    let mut session = server.connect().await;
    let created = create_game(&mut session, "mia", "max", "metrics").await;
    let game_id = created.game_id.as_str();
    let channel = gateway::channel(server.addr()).await;
    let mut seats = [
        PlayerClient::new(channel.clone(), "mia"),
        PlayerClient::new(channel.clone(), "max"),
    ];
    for (i, seat) in seats.iter_mut().enumerate() {
        seat.confirm(context(game_id, &format!("confirm-{i}"), None))
            .await
            .unwrap_or_else(|s| panic!("Confirm failed: {s:?}"));
    }
    let mut stream = seats[0]
        .subscribe(game_id, 1, false)
        .await
        .expect("Subscribe");
    gateway::next_item(&mut stream, "the first event")
        .await
        .expect("a stream item");

    let before = scrape(metrics).await;
    for i in 0..MOVES {
        play_one(&mut seats, game_id, &format!("move-{i}"))
            .await
            .expect("a side to move");
    }
    let after = scrape(metrics).await;

    let ok = [("result", "ok")];
    assert_eq!(
        value(&after, "hf_moves_total", &ok) - value(&before, "hf_moves_total", &ok),
        MOVES as f64,
        "hf_moves_total{{result=\"ok\"}}\nbefore:\n{before}\nafter:\n{after}"
    );
    assert_eq!(
        value(&after, "hf_move_duration_seconds_count", &[])
            - value(&before, "hf_move_duration_seconds_count", &[]),
        MOVES as f64,
        "hf_move_duration_seconds_count"
    );
    assert!(
        value(&after, "hf_move_duration_seconds_bucket", &[("le", "+Inf")]) >= MOVES as f64,
        "the move latency is a histogram with buckets:\n{after}"
    );
    assert_eq!(
        value(
            &after,
            "hf_commands_total",
            &[("kind", "move"), ("outcome", "ok")]
        ),
        MOVES as f64
    );
    assert_eq!(
        value(
            &after,
            "hf_commands_total",
            &[("kind", "confirm"), ("outcome", "ok")]
        ),
        2.0
    );
    assert_eq!(value(&after, "hf_games", &[("phase", "play")]), 1.0);
    assert_eq!(value(&after, "hf_games", &[("phase", "deployment")]), 0.0);
    assert!(value(&after, "hf_player_streams", &[]) >= 1.0, "{after}");
    assert!(value(&after, "hf_stream_lag_events_count", &[]) >= 1.0);
    assert!(value(&after, "hf_store_append_duration_seconds_count", &[]) >= MOVES as f64 + 2.0);
    assert_eq!(value(&after, "hf_store_errors_total", &[]), 0.0);
    let play = [
        (names::GRPC_SERVICE, "hiddenfront.v1.PlayerService"),
        (names::GRPC_METHOD, "Play"),
        (names::GRPC_CODE, "OK"),
    ];
    assert_eq!(
        value(&after, names::GRPC_REQUESTS_TOTAL, &play)
            - value(&before, names::GRPC_REQUESTS_TOTAL, &play),
        MOVES as f64,
        "every Play counted by the per-RPC layer"
    );

    for (name, labels, _) in samples(&after) {
        for (key, value) in labels {
            assert!(
                !looks_like_uuid(&value) && !value.contains(game_id),
                "{name} has an id as label {key}={value:?}"
            );
        }
    }
    drop(stream);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_is_serving_when_the_store_answers() {
    let db = TestDatabase::create().await;
    let server = Server::start("health", db.url()).await;
    // Each port reports on what it serves: the player API on the public one, the session on the
    // internal one.
    for (addr, service) in [
        (server.session_addr(), "hiddenfront.v1.SessionService"),
        (server.session_addr(), ""),
        (server.addr(), "hiddenfront.v1.PlayerService"),
        (server.addr(), ""),
    ] {
        let mut health = HealthClient::new(gateway::channel(addr).await);
        let answer = health
            .check(HealthCheckRequest {
                service: service.to_string(),
            })
            .await
            .unwrap_or_else(|s| panic!("Check({service:?}) failed: {s:?}"))
            .into_inner();
        assert_eq!(
            answer.status,
            ServingStatus::Serving as i32,
            "health of {service:?}"
        );
    }
}

/// Whether `text` has at least one sample of `name` with `labels`.
fn present(text: &str, name: &str, labels: &[(&str, &str)]) -> bool {
    samples(text).into_iter().any(|(n, l, _)| {
        n == name
            && labels
                .iter()
                .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_series_is_there_from_the_start_and_each_rpc_is_counted() {
    let db = TestDatabase::create().await;
    let server = Server::start("metrics-start", db.url()).await;
    let metrics = server
        .metrics_addr()
        .expect("the metrics address was printed");

    let start = scrape(metrics).await;
    for process in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
    ] {
        assert!(present(&start, process, &[]), "{process} missing:\n{start}");
    }
    assert!(value(&start, "process_resident_memory_bytes", &[]) > 0.0);
    let build = samples(&start)
        .into_iter()
        .find(|(name, _, _)| name == names::BUILD_INFO)
        .unwrap_or_else(|| panic!("no {} in\n{start}", names::BUILD_INFO));
    assert_eq!(build.2, 1.0);
    let label = |key: &str| {
        build
            .1
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert_eq!(label(names::VERSION), env!("CARGO_PKG_VERSION"));
    assert!(!label(names::COMMIT).is_empty(), "{build:?}");
    for operation in names::STORE_OPERATIONS {
        let labels = [(names::OPERATION, operation)];
        assert!(
            present(&start, names::STORE_ERRORS_TOTAL, &labels),
            "{} for {operation} missing at start:\n{start}",
            names::STORE_ERRORS_TOTAL
        );
        assert_eq!(value(&start, names::STORE_ERRORS_TOTAL, &labels), 0.0);
    }
    for kind in names::COMMAND_KINDS {
        for outcome in names::OUTCOMES {
            assert!(present(
                &start,
                names::COMMANDS_TOTAL,
                &[(names::KIND, kind), (names::OUTCOME, outcome)]
            ));
        }
    }
    for kind in names::STORE_BATCH_KINDS {
        assert!(present(
            &start,
            names::STORE_BATCH_FAILURES_TOTAL,
            &[(names::KIND, kind)]
        ));
    }
    for (kind, result) in names::TIMER_KINDS
        .iter()
        .flat_map(|k| names::TIMER_RESULTS.iter().map(move |r| (*k, *r)))
    {
        assert!(present(
            &start,
            names::TIMERS_FIRED_TOTAL,
            &[(names::TIMER_KIND, kind), (names::TIMER_RESULT, result)]
        ));
    }
    // Every method of both ports, at zero before its first call.
    for (service, method) in [
        ("hiddenfront.v1.PlayerService", "Play"),
        ("hiddenfront.v1.PlayerService", "Subscribe"),
        ("hiddenfront.v1.SessionService", "GetGame"),
        ("hiddenfront.v1.MatchmakingService", "Enqueue"),
        (
            "grpc.reflection.v1alpha.ServerReflection",
            "ServerReflectionInfo",
        ),
    ] {
        let labels = [
            (names::GRPC_SERVICE, service),
            (names::GRPC_METHOD, method),
            (names::GRPC_CODE, "OK"),
        ];
        assert!(
            present(&start, names::GRPC_REQUESTS_TOTAL, &labels),
            "{service}/{method} missing at start:\n{start}"
        );
    }

    // One refused call (a game that does not exist) on the internal port: counted with its code
    // and timed.
    let mut session = server.connect().await;
    let refused = session
        .get_game(pb::GetGameRequest {
            game_id: uuid::Uuid::new_v4().to_string(),
            viewer: pb::Viewer::Spectator as i32,
        })
        .await
        .expect_err("no such game");
    assert_eq!(refused.code(), tonic::Code::NotFound, "{refused:?}");
    let not_found = [
        (names::GRPC_SERVICE, "hiddenfront.v1.SessionService"),
        (names::GRPC_METHOD, "GetGame"),
        (names::GRPC_CODE, "NOT_FOUND"),
    ];
    let after = scrape(metrics).await;
    assert_eq!(
        value(&after, names::GRPC_REQUESTS_TOTAL, &not_found)
            - value(&start, names::GRPC_REQUESTS_TOTAL, &not_found),
        1.0,
        "{after}"
    );
    assert_eq!(
        value(
            &after,
            &format!("{}_count", names::GRPC_REQUEST_DURATION_SECONDS),
            &not_found
        ) - value(
            &start,
            &format!("{}_count", names::GRPC_REQUEST_DURATION_SECONDS),
            &not_found
        ),
        1.0
    );
}
