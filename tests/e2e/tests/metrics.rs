//! Metrics and health of the real binary.
//!
//! - `moves_are_counted_and_labels_stay_bounded`: `/metrics` (the `--metrics-listen` port) is
//!   scraped before and after a few moves played through the gateway; the move counter and the
//!   move latency histogram rose by exactly the moves played, and no label value is a game id.
//! - `health_is_serving_when_the_store_answers`: the standard gRPC health check says SERVING for
//!   the session, the gateway and the whole server.

use hidden_front_e2e::client::create_game;
use hidden_front_e2e::gateway::{self, PlayerClient, context};
use hidden_front_e2e::metrics::{samples, scrape, value};
use hidden_front_e2e::{Server, TestDatabase, pb};
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
