//! Replays through the public gateway and the bulk export, against the real binary, real gRPC,
//! a real WebSocket and real Postgres:
//!
//! - `players_and_spectators_export_a_finished_game_through_the_gateway`: before the end a seated
//!   player's `ExportReplay` (gRPC and WebSocket) and a spectator's are refused
//!   `FAILED_PRECONDITION`/`WRONG_PHASE`; after it both get the same text, which
//!   `hidden-front replay verify` accepts and which has a server time on every event and a clock
//!   reading on every ply; an unknown game is `NOT_FOUND`.
//! - `the_bulk_export_resumes_exactly_where_it_stopped`: `replay export-ended` in two calls, the
//!   second after the cursor the first printed, covers every ended game once.

use futures_util::{SinkExt, StreamExt};
use hidden_front_e2e::cli::{TempFile, run, text};
use hidden_front_e2e::client::{self, Client, side_of};
use hidden_front_e2e::gateway::{self, authed, token};
use hidden_front_e2e::{Player, Server, TestDatabase, pb, play};
use hidden_front_replay::{Replay, verify_text};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tonic::Code;
use tonic_types::StatusExt;

/// The players act far faster than people: lift the per-player rate limit.
const SERVE_ARGS: &[&str] = &["--actions-per-second", "5000"];

/// How long a WebSocket answer may take.
const DEADLINE: Duration = Duration::from_secs(30);

/// Plies played before the game is resigned: enough for several clock readings.
const PLIES: usize = 12;

/// A move clock long enough that no deadline fires during the test, so every ply has a reading.
fn timed() -> Option<pb::TimeControl> {
    Some(pb::TimeControl {
        name: "custom".into(),
        deployment_seconds: 3600,
        move_seconds: 3600,
        reconnect_seconds: 3600,
    })
}

/// `ExportReplay` as `player` over gRPC.
async fn export(
    channel: &tonic::transport::Channel,
    player: &str,
    game_id: &str,
) -> Result<pb::ExportReplayResponse, tonic::Status> {
    let mut client = pb::player_service_client::PlayerServiceClient::new(channel.clone());
    let mut request = authed(
        &token(player),
        pb::ExportReplayRequest {
            game_id: game_id.to_string(),
        },
    );
    request.set_timeout(DEADLINE);
    client
        .export_replay(request)
        .await
        .map(tonic::Response::into_inner)
}

/// The `ErrorInfo` reason of a refusal.
fn reason(status: &tonic::Status) -> String {
    status
        .get_error_details()
        .error_info()
        .map(|info| info.reason.clone())
        .unwrap_or_default()
}

/// `export_replay` as `player` over the WebSocket: the answer message.
async fn export_ws(server: &Server, player: &str, game_id: &str) -> Value {
    let addr = server.http_addr().expect("the server's http address");
    let mut request = format!("ws://{addr}/v1/ws")
        .into_client_request()
        .expect("a ws URL");
    request.headers_mut().insert(
        "authorization",
        HeaderValue::from_str(&format!("Bearer {}", token(player))).expect("a header value"),
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(request)
        .await
        .expect("the WebSocket connects");
    let message = json!({"id": 1, "type": "export_replay", "request": {"gameId": game_id}});
    socket
        .send(Message::text(message.to_string()))
        .await
        .expect("send");
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let frame = tokio::time::timeout_at(deadline, socket.next())
            .await
            .expect("an answer in time")
            .expect("the socket stays open")
            .expect("a frame");
        if let Message::Text(text) = frame {
            let value: Value = serde_json::from_str(text.as_str()).expect("JSON");
            if value["id"] == json!(1) {
                return value;
            }
        }
    }
}

/// Creates a timed Junqi game and plays `PLIES` random legal plies through the session; returns
/// its id.
async fn game_in_play(session: &mut Client, south: &str, north: &str, seed: u64) -> String {
    let created = session
        .create_game(pb::CreateGameRequest {
            south_player: south.into(),
            north_player: north.into(),
            rules: "hidden-front".into(),
            time_control: timed(),
            idempotency_key: format!("replay-gw-{seed}"),
        })
        .await
        .expect("CreateGame")
        .into_inner();
    let mut players = [
        Player::new(pb::Side::South, seed),
        Player::new(pb::Side::North, seed + 1),
    ];
    for player in &mut players {
        player.deploy(session, &created.game_id).await;
    }
    play(
        session,
        &created.game_id,
        &mut players,
        side_of(created.first_mover),
        PLIES,
    )
    .await;
    created.game_id
}

/// The game's phase, as the session says it.
async fn phase(session: &mut Client, game_id: &str) -> pb::Phase {
    client::phase_of(&client::get_game(session, game_id, pb::Viewer::Spectator).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_and_spectators_export_a_finished_game_through_the_gateway() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args("server", db.url(), SERVE_ARGS).await;
    let channel = gateway::channel(server.addr()).await;
    let mut session = server.connect().await;
    let game_id = game_in_play(&mut session, "ana", "ben", 0x7277_0001).await;
    assert_eq!(phase(&mut session, &game_id).await, pb::Phase::Play);

    // Before the end: refused, with the phase reason, for a seated player and a spectator, on
    // both faces.
    for player in ["ana", "zoe"] {
        let refused = export(&channel, player, &game_id)
            .await
            .expect_err("no replay before the end");
        assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
        assert_eq!(reason(&refused), "WRONG_PHASE", "{refused:?}");
        assert!(
            refused
                .message()
                .contains("has not ended (it is in its play phase)"),
            "{refused:?}"
        );
    }
    let refused = export_ws(&server, "ana", &game_id).await;
    assert_eq!(refused["type"], "error", "{refused}");
    assert_eq!(refused["code"], "FAILED_PRECONDITION", "{refused}");
    assert_eq!(refused["reason"], "WRONG_PHASE", "{refused}");

    // The end: south resigns.
    client::resign(&mut session, &game_id, pb::Side::South, "give-up", None)
        .await
        .expect("Resign");
    assert_eq!(phase(&mut session, &game_id).await, pb::Phase::Ended);

    let seated = export(&channel, "ana", &game_id)
        .await
        .expect("ana's export");
    assert_eq!(
        seated.file_name,
        format!("hidden-front-{game_id}.replay.txt")
    );
    let file = TempFile::new("replay-gw", "seated.txt");
    std::fs::write(&file.0, &seated.replay).expect("write");
    let verify = run(&["replay", "verify", file.path()]).await;
    assert!(verify.status.success(), "verify: {}", text(&verify.stderr));

    let replay = Replay::parse(&seated.replay).expect("the export parses");
    assert_eq!(
        replay.header().players,
        ["ana".to_string(), "ben".to_string()]
    );
    assert!(
        replay.entries().iter().all(|e| e.at.is_some()),
        "a server time on every event"
    );
    let ply_lines: Vec<&str> = seated
        .replay
        .lines()
        .filter(|l| l.contains(" ply "))
        .collect();
    assert!(!ply_lines.is_empty(), "plies were played");
    assert!(
        ply_lines
            .iter()
            .all(|l| l.contains(" @") && l.contains(" clock ")),
        "a server time and a clock reading on every ply: {ply_lines:?}"
    );
    assert!(seated.replay.contains("\nCreated: ") && seated.replay.contains("\nEnded: "));

    // A spectator gets the same replay, on either face.
    let spectator = export(&channel, "zoe", &game_id)
        .await
        .expect("zoe's export");
    assert_eq!(spectator.replay, seated.replay);
    let answer = export_ws(&server, "zoe", &game_id).await;
    assert_eq!(answer["type"], "result", "{answer}");
    assert_eq!(answer["response"]["replay"], json!(seated.replay));
    assert_eq!(answer["response"]["fileName"], json!(seated.file_name));

    // A game nobody created, and no game id at all.
    let unknown = export(&channel, "ana", "0190c0de-0000-7000-8000-00000000dead")
        .await
        .expect_err("unknown game");
    assert_eq!(unknown.code(), Code::NotFound, "{unknown:?}");
    assert_eq!(reason(&unknown), "GAME_NOT_FOUND", "{unknown:?}");
    let malformed = export(&channel, "ana", "not-a-game")
        .await
        .expect_err("malformed id");
    assert_eq!(malformed.code(), Code::InvalidArgument, "{malformed:?}");
}

/// One `replay export-ended` call: its NDJSON lines and the last cursor it printed.
async fn export_ended(session_url: &str, after: u64, limit: Option<u64>) -> (Vec<Value>, u64) {
    let out = TempFile::new("replay-gw", &format!("ended-{after}.ndjson"));
    let after = after.to_string();
    let limit = limit.map(|l| l.to_string());
    let mut args = vec![
        "replay",
        "export-ended",
        "--after",
        &after,
        "--session-url",
        session_url,
        "-o",
        out.path(),
    ];
    if let Some(limit) = &limit {
        args.extend(["--limit", limit]);
    }
    let output = run(&args).await;
    let said = text(&output.stderr);
    assert!(output.status.success(), "export-ended: {said}");
    let last = said
        .split("last cursor ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no last cursor in {said:?}"));
    let lines = std::fs::read_to_string(&out.0)
        .expect("the output file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    (lines, last)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bulk_export_resumes_exactly_where_it_stopped() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args("server", db.url(), SERVE_ARGS).await;
    let session_url = format!("http://{}", server.session_addr());
    let mut session = server.connect().await;

    // Five games ended in deployment (north resigns) and one in play, one left on.
    let mut ended = Vec::new();
    for n in 0..5 {
        let created = client::create_game(
            &mut session,
            &format!("s{n}"),
            &format!("n{n}"),
            &format!("bulk-{n}"),
        )
        .await;
        client::resign(
            &mut session,
            &created.game_id,
            pb::Side::North,
            "quit",
            None,
        )
        .await
        .expect("Resign");
        ended.push(created.game_id);
    }
    let played = game_in_play(&mut session, "ana", "ben", 0x7277_0002).await;
    if phase(&mut session, &played).await != pb::Phase::Ended {
        client::resign(&mut session, &played, pb::Side::North, "quit", None)
            .await
            .expect("Resign");
    }
    ended.push(played.clone());
    let _still_on = game_in_play(&mut session, "cy", "di", 0x7277_0003).await;

    let (first, cursor) = export_ended(&session_url, 0, Some(2)).await;
    assert_eq!(first.len(), 2, "--limit 2");
    assert_eq!(first[1]["cursor"], json!(cursor), "the last cursor printed");
    let (rest, last) = export_ended(&session_url, cursor, None).await;
    assert_eq!(rest.len(), ended.len() - 2);
    let (none, again) = export_ended(&session_url, last, None).await;
    assert!(none.is_empty(), "nothing after the last cursor");
    assert_eq!(again, last, "an empty run keeps the cursor");

    let lines: Vec<&Value> = first.iter().chain(&rest).collect();
    let cursors: Vec<u64> = lines
        .iter()
        .map(|l| l["cursor"].as_u64().expect("a cursor"))
        .collect();
    assert!(
        cursors.windows(2).all(|c| c[0] < c[1]),
        "in feed order: {cursors:?}"
    );
    let ids: Vec<&str> = lines
        .iter()
        .map(|l| l["game_id"].as_str().expect("an id"))
        .collect();
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "no game twice: {ids:?}");
    assert_eq!(
        unique,
        ended.iter().map(String::as_str).collect::<BTreeSet<_>>(),
        "every ended game, and only those"
    );
    for line in lines {
        let replay = line["replay"].as_str().expect("the replay text");
        verify_text(replay).expect("each line's replay verifies");
        let parsed = Replay::parse(replay).expect("parses");
        assert_eq!(line["rules"], json!(parsed.rules().name()));
        assert_eq!(line["plies"], json!(parsed.plies()));
        assert_eq!(line["players"]["south"], json!(parsed.header().players[0]));
        assert!(line["started_at"].is_string() && line["ended_at"].is_string());
        assert_eq!(line["reason"], "resigned");
        if line["game_id"] == json!(played) {
            continue;
        }
        // North resigned in deployment: south won, no plies.
        assert_eq!(line["result"]["winner_side"], "south");
        assert_eq!(line["result"]["winner_player"], line["players"]["south"]);
        assert_eq!(line["result"]["draw"], false);
        assert_eq!(line["plies"], 0);
    }
}
