//! Metrics and health of the real binary.
//!
//! - `moves_are_counted_and_labels_stay_bounded`: `/metrics` (the `--metrics-listen` port) is
//!   scraped before and after a few moves played through the gateway; the move counter and the
//!   move latency histogram rose by exactly the moves played, and no label value is a game id.
//! - `health_is_serving_when_the_store_answers`: the standard gRPC health check says SERVING for
//!   the session, the gateway and the whole server.

use hidden_front_e2e::client::create_game;
use hidden_front_e2e::gateway::{self, PlayerClient, context};
use hidden_front_e2e::{Server, TestDatabase, pb};
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// Moves played between the two scrapes.
const MOVES: usize = 6;

/// The body of `GET /metrics`, through a plain HTTP/1.1 exchange on a TCP socket.
async fn scrape(addr: SocketAddr) -> String {
    let mut socket = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to the metrics listener {addr}: {e}"));
    socket
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .expect("writing the request");
    let mut response = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        socket.read_to_end(&mut response),
    )
    .await
    .expect("the metrics answer within 10 s")
    .expect("reading the answer");
    let response = String::from_utf8(response).expect("a UTF-8 answer");
    let (head, body) = response
        .split_once("\r\n\r\n")
        .expect("an HTTP answer with a body");
    assert!(head.starts_with("HTTP/1.1 200"), "answer: {head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain"),
        "answer: {head}"
    );
    body.to_string()
}

/// One sample: metric name, labels, value.
type Sample = (String, Vec<(String, String)>, f64);

/// The samples of a Prometheus text exposition (comments skipped).
fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("`series value`");
            let value: f64 = value
                .parse()
                .unwrap_or_else(|_| panic!("value of {line:?}"));
            let (name, labels) = match series.split_once('{') {
                None => (series.to_string(), Vec::new()),
                Some((name, rest)) => {
                    let labels = rest
                        .strip_suffix('}')
                        .expect("labels end with }")
                        .split(',')
                        .filter(|pair| !pair.is_empty())
                        .map(|pair| {
                            let (key, value) = pair.split_once('=').expect("key=value");
                            (key.to_string(), value.trim_matches('"').to_string())
                        })
                        .collect();
                    (name.to_string(), labels)
                }
            };
            (name, labels, value)
        })
        .collect()
}

/// The value of the series `name` with (at least) `labels`; 0 when it is absent.
fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    samples(text)
        .into_iter()
        .filter(|(n, l, _)| {
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
        })
        .map(|(_, _, v)| v)
        .sum()
}

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
