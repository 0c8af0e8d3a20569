//! Bad input through the real server's WebSocket API (`GET /v1/ws`, `docs/websocket.md`): the
//! same sweep as `bad_input_sweep.rs`, in JSON.
//!
//! Every operation (the snake-case name of each `PlayerService` method, from the descriptor set,
//! plus `unsubscribe`) gets its baseline request and its mutations: well-typed changes of each
//! field (empty, 10 KiB, NUL, control characters, invalid enum numbers, extreme numbers, 1000
//! items, null), wrong JSON types, invalid enum names, out-of-range numbers, unknown fields,
//! nesting; then envelope-level bad input: text that is not JSON, bad ids and types, unknown
//! top-level fields, deep nesting, binary frames, an oversized message (answered OUT_OF_RANGE)
//! and one over the hard limit (close 1009, documented); and bad input before authentication
//! (each answered UNAUTHENTICATED, or OUT_OF_RANGE for size, then closed 1008 or 1009, as
//! documented). Every error answer is
//! `{"id","type":"error","code","reason","message",...}` with no UNKNOWN/INTERNAL/UNAVAILABLE/
//! DATA_LOSS, a SCREAMING_SNAKE_CASE `reason`, a message of at most 1 KiB, the whole frame at
//! most 1 KiB plus the envelope, no echo of the offending value, and for INVALID_ARGUMENT to a
//! well-typed single-field change a `fieldViolations` entry naming the field. The connection
//! survives all but the over-limit message; afterwards `hf_store_errors_total` is unchanged, the
//! process lives and a normal game plays to its end over the WebSocket.

use futures_util::{SinkExt, StreamExt};
use hidden_front_e2e::metrics::{STORE_ERRORS, scrape, value};
use hidden_front_e2e::sweep::{
    self, Expect, Goods, JsonMutation, OPPONENT, PLAYER, Problem, Sweep, best_goods,
    check_ws_answer, descriptor_pool, json_mutations, snake_case,
};
use hidden_front_e2e::{Server, TestDatabase, client, gateway};
use hidden_front_rules::GameRng;
use serde_json::{Value as Json, json};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tonic::Code;

/// The gateway limits each player to 10 actions a second (burst 20); the sweep sends a thousand
/// as one player, and RESOURCE_EXHAUSTED answers would hide what the server does with the
/// input. So the limit is lifted for this test.
const SERVER_ARGS: &[&str] = &["--actions-per-second", "1000000"];

/// How long one answer may take.
const DEADLINE: Duration = Duration::from_secs(20);

/// A random game ends well within this many plies.
const MAX_PLIES: usize = 3000;

/// The close code of a message over the WebSocket layer's hard limit (`docs/websocket.md`).
const CLOSE_TOO_BIG: u16 = 1009;

/// What arrived.
#[derive(Debug)]
enum Frame {
    /// A JSON text message and its length in bytes.
    Json(Json, usize),
    /// Text that is not JSON (the server must never send it).
    NotJson(String),
    /// The server closed, with this close code if it gave one.
    Closed(Option<u16>),
    /// Nothing within [`DEADLINE`].
    TimedOut,
}

/// A WebSocket connection of one player, speaking one request at a time.
struct Ws {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
}

impl Ws {
    /// Connects as `player` (bearer token on the upgrade request).
    async fn open(server: &Server, player: &str) -> Ws {
        let bearer = format!("Bearer {}", gateway::token(player));
        Ws::open_with(server, Some(&bearer)).await
    }

    /// Connects with `authorization` on the upgrade request, or none.
    async fn open_with(server: &Server, authorization: Option<&str>) -> Ws {
        let addr = server.http_addr().expect("the http listening line");
        let mut request = format!("ws://{addr}/v1/ws")
            .into_client_request()
            .expect("a ws URL");
        if let Some(value) = authorization {
            request.headers_mut().insert(
                "authorization",
                HeaderValue::from_str(value).expect("a header value"),
            );
        }
        let (socket, _) = tokio_tungstenite::connect_async(request)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to {addr}: {e}"));
        Ws { socket, next_id: 0 }
    }

    /// A fresh message id.
    fn id(&mut self) -> Json {
        self.next_id += 1;
        json!(format!("m{}", self.next_id))
    }

    /// Sends a frame; `false` if the connection is gone.
    async fn send(&mut self, message: Message) -> bool {
        self.socket.send(message).await.is_ok()
    }

    /// The next frame, skipping pings.
    async fn read(&mut self) -> Frame {
        loop {
            match tokio::time::timeout(DEADLINE, self.socket.next()).await {
                Err(_) => return Frame::TimedOut,
                Ok(Some(Ok(Message::Text(text)))) => {
                    return match serde_json::from_str(text.as_str()) {
                        Ok(value) => Frame::Json(value, text.len()),
                        Err(_) => Frame::NotJson(text.as_str().to_string()),
                    };
                }
                Ok(Some(Ok(Message::Close(frame)))) => {
                    return Frame::Closed(frame.map(|f| u16::from(f.code)));
                }
                Ok(Some(Ok(Message::Binary(_)))) => {
                    return Frame::NotJson("a binary frame".into());
                }
                Ok(Some(Ok(_))) => {}
                Ok(Some(Err(_)) | None) => return Frame::Closed(None),
            }
        }
    }

    /// The answer to the message sent with `id` (`null`: one whose id could not be read):
    /// subscription items (events, lobby events, ends) are skipped.
    async fn answer(&mut self, id: &Json) -> Frame {
        loop {
            match self.read().await {
                Frame::Json(value, _) if value.get("subscription").is_some() => {}
                Frame::Json(value, _) if value.get("id") != Some(id) && !id.is_null() => {}
                frame => return frame,
            }
        }
    }

    /// Sends `{"id","type","request"}` and returns the answer.
    async fn call(&mut self, op: &str, request: Json) -> (Json, Frame) {
        let id = self.id();
        let text = json!({"id": id, "type": op, "request": request}).to_string();
        if !self.send(Message::text(text)).await {
            return (id, Frame::Closed(None));
        }
        let answer = self.answer(&id).await;
        (id, answer)
    }

    /// [`Ws::call`] that must succeed: the response.
    async fn must(&mut self, op: &str, request: Json) -> Json {
        match self.call(op, request.clone()).await {
            (_, Frame::Json(answer, _)) if answer["type"] == "result" => answer["response"].clone(),
            (_, other) => panic!("{op} {request}: {other:?}"),
        }
    }
}

/// Checks the answer `frame` to a message sent with `id` and records it; returns whether the
/// connection is still open.
fn record(
    result: &mut Sweep,
    op: &str,
    label: &str,
    id: &Json,
    frame: &Frame,
    expect: &Expect,
) -> bool {
    match frame {
        Frame::Json(value, len) => {
            let (code, message_len, problems) = check_ws_answer(value, *len, id, expect);
            result.record(op, label, &code, message_len, problems);
            true
        }
        Frame::NotJson(text) => {
            let problem = Problem::Malformed(format!("not JSON: {}", &text[..text.len().min(40)]));
            result.record(op, label, "-", 0, vec![problem]);
            true
        }
        Frame::Closed(code) => {
            result.record(op, label, "closed", 0, vec![Problem::Closed(*code)]);
            false
        }
        Frame::TimedOut => {
            result.record(op, label, "-", 0, vec![Problem::TimedOut]);
            true
        }
    }
}

/// Stops a subscription a `subscribe` or `watch_lobby` opened, so that the sweep never reaches
/// the 16 a connection may hold.
async fn unsubscribe_if_opened(ws: &mut Ws, op: &str, id: &Json, frame: &Frame) {
    let opened = matches!(frame, Frame::Json(v, _) if v["type"] == "result");
    if opened && (op == "subscribe" || op == "watch_lobby") {
        let (_, answer) = ws.call("unsubscribe", json!({"subscription": id})).await;
        assert!(
            matches!(&answer, Frame::Json(v, _) if v["type"] == "result" || v["code"] == "NOT_FOUND"),
            "unsubscribe {id}: {answer:?}"
        );
    }
}

/// The envelope-level bad input: (label, frame, whether the answer's id is readable).
fn envelope_inputs(rng: &mut GameRng) -> Vec<(String, Message, Option<Json>, Option<Code>)> {
    let invalid = Some(Code::InvalidArgument);
    let mut inputs: Vec<(String, Message, Option<Json>, Option<Code>)> = Vec::new();
    for (i, bytes) in sweep::random_bytes(rng, 3).into_iter().enumerate() {
        // Printable noise with control characters: text, but not JSON.
        let text: String = bytes
            .iter()
            .map(|b| match b % 40 {
                0 => '\u{0}',
                1 => '\u{1b}',
                _ => char::from(b'!' + b % 90),
            })
            .collect();
        inputs.push((
            format!("random text #{i}"),
            Message::text(format!("~{text}")),
            None,
            invalid,
        ));
    }
    let mut deep = String::new();
    for _ in 0..5000 {
        deep.push('[');
    }
    for _ in 0..5000 {
        deep.push(']');
    }
    let texts: Vec<(&str, String, Option<Json>, Option<Code>)> = vec![
        ("truncated JSON", r#"{"id":"e0","type":"get_game","request":{"#.into(), None, invalid),
        ("a list", "[]".into(), None, invalid),
        ("null", "null".into(), None, invalid),
        ("a string", r#""get_game""#.into(), None, invalid),
        ("a number", "42".into(), None, invalid),
        ("id an object", r#"{"id":{"a":1},"type":"get_game"}"#.into(), None, invalid),
        ("id a list", r#"{"id":[1],"type":"get_game"}"#.into(), None, invalid),
        ("id 1e400", r#"{"id":1e400,"type":"get_game"}"#.into(), None, invalid),
        ("type a number", r#"{"id":"e1","type":5}"#.into(), Some(json!("e1")), invalid),
        ("no type", r#"{"id":"e2"}"#.into(), Some(json!("e2")), invalid),
        ("unknown type", r#"{"id":"e3","type":"fly"}"#.into(), Some(json!("e3")), invalid),
        (
            "10 KiB type",
            json!({"id": "e4", "type": "x".repeat(sweep::BIG_STRING)}).to_string(),
            Some(json!("e4")),
            invalid,
        ),
        (
            "unknown top-level field",
            r#"{"id":"e5","type":"list_my_games","request":{},"extra":1}"#.into(),
            Some(json!("e5")),
            invalid,
        ),
        (
            "token on an op",
            r#"{"id":"e6","type":"list_my_games","token":"x"}"#.into(),
            Some(json!("e6")),
            invalid,
        ),
        ("no id", r#"{"type":"list_my_games","request":{}}"#.into(), None, invalid),
        (
            "a second auth",
            r#"{"id":"e7","type":"auth","token":"x"}"#.into(),
            Some(json!("e7")),
            Some(Code::FailedPrecondition),
        ),
        ("nested 5000 deep", format!(r#"{{"id":"e8","type":"get_game","request":{deep}}}"#), None, invalid),
        (
            "oversized (70 KiB)",
            json!({"id": "e9", "type": "get_game", "request": {"gameId": "x".repeat(sweep::OVERSIZED)}})
                .to_string(),
            None,
            Some(Code::OutOfRange),
        ),
    ];
    for (label, text, id, code) in texts {
        inputs.push((label.to_string(), Message::text(text), id, code));
    }
    inputs.push((
        "binary noise".into(),
        Message::binary(sweep::random_bytes(rng, 1).remove(0)),
        None,
        invalid,
    ));
    inputs.push((
        "JSON as binary".into(),
        Message::binary(br#"{"id":"e10","type":"list_my_games"}"#.to_vec()),
        None,
        invalid,
    ));
    inputs
}

/// One bad input before authentication: (label, the `authorization` header, the first message,
/// the answer's id, its code, the close code after it).
type BeforeAuth = (
    &'static str,
    Option<String>,
    Option<Message>,
    Json,
    Code,
    u16,
);

/// Bad input before authentication, each on a connection of its own. `docs/websocket.md`: an
/// error item, then close 1008 (1009 for a message too big).
fn before_auth_inputs() -> Vec<BeforeAuth> {
    let unauthenticated = Code::Unauthenticated;
    let auth = |token: Json| {
        Some(Message::text(
            json!({"type": "auth", "token": token}).to_string(),
        ))
    };
    vec![
        (
            "not JSON",
            None,
            Some(Message::text("~not json")),
            Json::Null,
            unauthenticated,
            1008,
        ),
        (
            "binary",
            None,
            Some(Message::binary(vec![0u8, 159, 146, 150])),
            Json::Null,
            unauthenticated,
            1008,
        ),
        (
            "an op first",
            None,
            Some(Message::text(
                r#"{"id":"p1","type":"get_game","request":{}}"#,
            )),
            json!("p1"),
            unauthenticated,
            1008,
        ),
        (
            "a 10 KiB token",
            None,
            auth(json!("x".repeat(sweep::BIG_STRING))),
            Json::Null,
            unauthenticated,
            1008,
        ),
        (
            "a token with NUL",
            None,
            auth(json!("a\u{0}b")),
            Json::Null,
            unauthenticated,
            1008,
        ),
        (
            "a token that is a number",
            None,
            auth(json!(12345)),
            Json::Null,
            unauthenticated,
            1008,
        ),
        (
            "auth with a request",
            None,
            Some(Message::text(
                r#"{"id":"p2","type":"auth","token":"t","request":{}}"#,
            )),
            json!("p2"),
            unauthenticated,
            1008,
        ),
        (
            "oversized (70 KiB)",
            None,
            auth(json!("x".repeat(sweep::OVERSIZED))),
            Json::Null,
            Code::OutOfRange,
            CLOSE_TOO_BIG,
        ),
        (
            "a bad header",
            Some("Bearer not-a-token".to_string()),
            None,
            Json::Null,
            unauthenticated,
            1008,
        ),
        (
            "a Basic header",
            Some("Basic YWxpY2U6cHc=".to_string()),
            None,
            Json::Null,
            unauthenticated,
            1008,
        ),
    ]
}

/// Sweeps [`before_auth_inputs`]: each answered as documented, then closed as documented.
async fn sweep_before_auth(server: &Server, result: &mut Sweep) {
    for (label, header, message, id, code, close) in before_auth_inputs() {
        let mut ws = Ws::open_with(server, header.as_deref()).await;
        let sent = match message {
            Some(message) => ws.send(message).await,
            None => true,
        };
        let frame = match sent {
            true => ws.read().await,
            false => Frame::Closed(None),
        };
        let expect = Expect {
            code: Some(code),
            field: None,
        };
        if record(result, "(before auth)", label, &id, &frame, &expect) {
            let closed = ws.read().await;
            if !matches!(closed, Frame::Closed(Some(c)) if c == close) {
                result.record(
                    "(before auth)",
                    &format!("{label}: close"),
                    "-",
                    0,
                    vec![Problem::Malformed(format!(
                        "want close {close}, got {closed:?}"
                    ))],
                );
            }
        }
    }
}

/// Plays a normal game over two WebSocket connections, from both confirmations to its end:
/// each ply, the side with legal moves plays a random one.
async fn normal_game(server: &Server) {
    let mut session = server.connect().await;
    let created = client::create_game(&mut session, PLAYER, OPPONENT, "ws-after-the-sweep").await;
    let game_id = created.game_id;
    let mut seats = [
        Ws::open(server, PLAYER).await,
        Ws::open(server, OPPONENT).await,
    ];
    for (i, ws) in seats.iter_mut().enumerate() {
        ws.must(
            "confirm",
            json!({"context": {"gameId": game_id, "idempotencyKey": format!("confirm-{i}")}}),
        )
        .await;
    }
    let mut rng = GameRng::from_seed(0x5eed_0005);
    let mut ended = false;
    'plies: for ply in 0..MAX_PLIES {
        for ws in seats.iter_mut() {
            let legal = ws.must("legal_moves", json!({"gameId": game_id})).await;
            let moves = legal["moves"].as_array().cloned().unwrap_or_default();
            if moves.is_empty() {
                continue;
            }
            let mv = moves[rng.below(moves.len() as u32) as usize].clone();
            let context = json!({
                "gameId": game_id,
                "idempotencyKey": format!("ply-{ply}"),
                "expectedVersion": legal["version"],
            });
            let played = ws
                .must("play", json!({"context": context, "move": mv}))
                .await;
            let events = played["result"]["events"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if events.iter().any(|e| e.get("ended").is_some()) {
                ended = true;
                break 'plies;
            }
            continue 'plies;
        }
        break;
    }
    let view = seats[0].must("get_game", json!({"gameId": game_id})).await;
    assert!(
        ended && view["game"]["phase"] == "PHASE_ENDED",
        "the game after the sweep did not end: {}",
        view["game"]["phase"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_websocket_op_survives_bad_input() {
    let db = TestDatabase::create().await;
    let mut server = Server::start_with_args("bad-input-sweep-ws", db.url(), SERVER_ARGS).await;
    let metrics = server.metrics_addr().expect("the metrics address");
    let mut session = server.connect().await;
    let pool = descriptor_pool();
    let player_service = pool
        .get_service_by_name("hiddenfront.v1.PlayerService")
        .expect("PlayerService in the descriptors");
    let mut ws = Ws::open(&server, PLAYER).await;
    let mut rng = GameRng::from_seed(0xbad_5eed);
    let mut result = Sweep::default();
    let errors_before = value(&scrape(metrics).await, STORE_ERRORS, &[]) as u64;
    let started = std::time::Instant::now();

    // `Connect` has no JSON op: its binary frames are the same requests as the gRPC sweep's
    // (`bad_input_sweep.rs` sweeps each of them) and `connect.rs` sends random binary frames.
    let methods = player_service
        .methods()
        .filter(|m| sweep::target(m) != sweep::CONNECT);
    for (n, method) in methods.enumerate() {
        let op = snake_case(method.name());
        let mut probe_ws = Ws::open(&server, PLAYER).await;
        let mut goods = best_goods(
            &server,
            &mut session,
            n,
            &method,
            async |goods: &mut Goods| {
                let request = sweep::to_json(&sweep::baseline(&method, goods));
                let (id, frame) = probe_ws.call(&op, request).await;
                unsubscribe_if_opened(&mut probe_ws, &op, &id, &frame).await;
                matches!(&frame, Frame::Json(v, _) if v["code"] == "FAILED_PRECONDITION")
            },
        )
        .await;
        let requests: Vec<JsonMutation> = json_mutations(|| sweep::baseline(&method, &mut goods));
        for request in requests {
            let (id, frame) = ws.call(&op, request.request).await;
            // An unknown op, or a baseline refused as malformed, means this op was not swept.
            if let Frame::Json(value, _) = &frame
                && request.label == "baseline"
                && value["code"] == "INVALID_ARGUMENT"
            {
                result.record(
                    &op,
                    "baseline",
                    "-",
                    0,
                    vec![Problem::Malformed(format!(
                        "no WebSocket op {op} for PlayerService/{}",
                        method.name()
                    ))],
                );
            }
            let open = record(
                &mut result,
                &op,
                &request.label,
                &id,
                &frame,
                &request.expect,
            );
            unsubscribe_if_opened(&mut ws, &op, &id, &frame).await;
            if !open {
                ws = Ws::open(&server, PLAYER).await;
            }
        }
    }

    // `unsubscribe` names a subscription of the connection, not a proto message.
    for (label, request) in [
        ("no subscription", json!({})),
        ("unknown id", json!({"subscription": "never-opened"})),
        (
            "10 KiB id",
            json!({"subscription": "x".repeat(sweep::BIG_STRING)}),
        ),
        ("NUL id", json!({"subscription": "a\u{0}b"})),
        ("an object", json!({"subscription": {"a": 1}})),
        ("unknown field", json!({"subscription": 1, "bogusField": 1})),
        ("a string request", json!("x")),
    ] {
        let (id, frame) = ws.call("unsubscribe", request).await;
        if !record(
            &mut result,
            "unsubscribe",
            label,
            &id,
            &frame,
            &Expect::default(),
        ) {
            ws = Ws::open(&server, PLAYER).await;
        }
    }

    sweep_before_auth(&server, &mut result).await;

    for (label, message, id, code) in envelope_inputs(&mut rng) {
        let expect = Expect { code, field: None };
        let answer_id = id.unwrap_or(Json::Null);
        let frame = match ws.send(message).await {
            true => ws.answer(&answer_id).await,
            false => Frame::Closed(None),
        };
        if !record(
            &mut result,
            "(envelope)",
            &label,
            &answer_id,
            &frame,
            &expect,
        ) {
            ws = Ws::open(&server, PLAYER).await;
        }
    }

    // The connection survived all of it.
    let (id, frame) = ws.call("list_my_games", json!({})).await;
    if !matches!(&frame, Frame::Json(v, _) if v["type"] == "result") {
        result.after(
            "connection",
            format!("list_my_games {id} after the sweep: {frame:?}"),
        );
    }
    // Over the hard limit (four times --max-message-bytes): closed with 1009, as documented.
    let huge =
        json!({"id": "huge", "type": "get_game", "request": {"gameId": "x".repeat(300 * 1024)}});
    let frame = match ws.send(Message::text(huge.to_string())).await {
        true => ws.answer(&Json::Null).await,
        false => Frame::Closed(None),
    };
    if !matches!(frame, Frame::Closed(Some(CLOSE_TOO_BIG))) {
        result.after(
            "300 KiB message",
            format!("want close {CLOSE_TOO_BIG}, got {frame:?}"),
        );
    }
    eprintln!(
        "swept the WebSocket API with {} messages in {:?}",
        result.answers(),
        started.elapsed()
    );

    let errors_after = value(&scrape(metrics).await, STORE_ERRORS, &[]) as u64;
    if errors_after != errors_before {
        result.after(
            STORE_ERRORS,
            format!("rose from {errors_before} to {errors_after}: bad input reached Postgres"),
        );
    }
    if !server.is_running() {
        result.after("server", "the process exited during the sweep".into());
    } else {
        normal_game(&server).await;
    }
    result.assert_clean("the WebSocket bad-input sweep");
}
