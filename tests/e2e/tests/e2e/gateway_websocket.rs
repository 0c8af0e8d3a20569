//! The gateway's WebSocket API (`GET /v1/ws`) end to end: the real binary (`serve`, every
//! service), real Postgres, a WebSocket client (tokio-tungstenite) speaking the JSON protocol of
//! `docs/websocket.md`. Games are created through the session API on the gRPC port; everything a
//! player does goes through the WebSocket.

use futures_util::{SinkExt, StreamExt};
use hidden_front_e2e::client::create_game;
use hidden_front_e2e::gateway::public;
use hidden_front_e2e::{Server, TestDatabase, pb, reveal};
use hidden_front_gateway::auth::{DEV_SECRET, mint_dev_token};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long any one awaited message may take.
const DEADLINE: Duration = Duration::from_secs(30);

/// A random game ends well within this many plies (the no-combat limit bounds it); past it the
/// test concedes rather than loop.
const MAX_PLIES: usize = 3000;

/// Random play makes a few calls per ply: lift the per-player rate limit for the tests.
const SERVER_ARGS: &[&str] = &["--actions-per-second", "5000"];

fn token(player: &str) -> String {
    mint_dev_token(
        DEV_SECRET.as_bytes(),
        player,
        Duration::from_secs(3600),
        true,
    )
    .unwrap_or_else(|e| panic!("minting a token for {player}: {e}"))
}

fn ws_url(server: &Server) -> String {
    let addr: SocketAddr = server
        .http_addr()
        .expect("the server printed its http listening line");
    format!("ws://{addr}/v1/ws")
}

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// What arrived on a socket.
#[derive(Debug)]
enum Frame {
    /// A JSON text message.
    Json(Value),
    /// The server closed: code and reason (`None` when it just went away).
    Closed(Option<(u16, String)>),
}

/// A WebSocket client of the gateway. Calls are made one at a time; subscription items that
/// arrive while waiting for an answer are kept in `inbox`, in order.
struct Ws {
    label: String,
    socket: Socket,
    next_id: u64,
    inbox: VecDeque<Value>,
}

impl Ws {
    /// Connects without credentials (authenticate with [`Ws::auth`]).
    async fn open(server: &Server, label: &str) -> Ws {
        let (socket, _) = tokio_tungstenite::connect_async(ws_url(server))
            .await
            .unwrap_or_else(|e| panic!("{label}: cannot connect: {e}"));
        Ws::wrap(label, socket)
    }

    /// Connects with `Authorization: <value>` on the upgrade request.
    async fn open_with_header(server: &Server, label: &str, authorization: &str) -> Ws {
        let mut request = ws_url(server).into_client_request().expect("a ws URL");
        request.headers_mut().insert(
            "authorization",
            HeaderValue::from_str(authorization).expect("a header value"),
        );
        let (socket, _) = tokio_tungstenite::connect_async(request)
            .await
            .unwrap_or_else(|e| panic!("{label}: cannot connect: {e}"));
        Ws::wrap(label, socket)
    }

    /// Connects with a bearer header for `player`.
    async fn as_player(server: &Server, player: &str) -> Ws {
        Ws::as_player_labelled(server, player, player).await
    }

    /// [`Ws::as_player`] with a label for messages (one player, several connections).
    async fn as_player_labelled(server: &Server, player: &str, label: &str) -> Ws {
        Ws::open_with_header(server, label, &format!("Bearer {}", token(player))).await
    }

    fn wrap(label: &str, socket: Socket) -> Ws {
        Ws {
            label: label.to_string(),
            socket,
            next_id: 0,
            inbox: VecDeque::new(),
        }
    }

    async fn send_text(&mut self, text: String) {
        self.socket
            .send(Message::text(text))
            .await
            .unwrap_or_else(|e| panic!("{}: send failed: {e}", self.label));
    }

    async fn send_json(&mut self, value: Value) {
        self.send_text(value.to_string()).await;
    }

    /// The next message or the close, skipping pings (which do not extend the deadline: a
    /// server that only pings has still sent nothing).
    async fn read(&mut self) -> Frame {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            let next = tokio::time::timeout_at(deadline, self.socket.next())
                .await
                .unwrap_or_else(|_| panic!("{}: nothing within {DEADLINE:?}", self.label));
            match next {
                Some(Ok(Message::Text(text))) => {
                    let value: Value = serde_json::from_str(text.as_str()).unwrap_or_else(|e| {
                        panic!("{}: the server sent bad JSON {text:?}: {e}", self.label)
                    });
                    return Frame::Json(value);
                }
                Some(Ok(Message::Close(frame))) => {
                    return Frame::Closed(
                        frame.map(|f: CloseFrame| {
                            (u16::from(f.code), f.reason.as_str().to_string())
                        }),
                    );
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
                Some(Ok(Message::Binary(_))) => panic!("{}: the server sent binary", self.label),
                Some(Err(_)) | None => return Frame::Closed(None),
            }
        }
    }

    /// The next JSON message; panics if the server closed.
    async fn read_json(&mut self) -> Value {
        match self.read().await {
            Frame::Json(value) => value,
            Frame::Closed(close) => panic!("{}: the server closed: {close:?}", self.label),
        }
    }

    /// The answer to the message with `id`; subscription items read meanwhile go to the inbox.
    async fn answer(&mut self, id: &Value) -> Value {
        loop {
            let message = self.read_json().await;
            if message.get("id") == Some(id) {
                return message;
            }
            assert!(
                message.get("subscription").is_some(),
                "{}: unexpected message while waiting for {id}: {message}",
                self.label
            );
            self.inbox.push_back(message);
        }
    }

    /// Sends op `op` with `request`; the `response`, or `(code, message)` of an error.
    async fn call(&mut self, op: &str, request: Value) -> Result<Value, (String, String)> {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send_json(json!({"id": id, "type": op, "request": request}))
            .await;
        let answer = self.answer(&id).await;
        match answer["type"].as_str() {
            Some("result") => Ok(answer["response"].clone()),
            Some("error") => Err((
                answer["code"].as_str().unwrap_or_default().to_string(),
                answer["message"].as_str().unwrap_or_default().to_string(),
            )),
            _ => panic!("{}: {op}: not an answer: {answer}", self.label),
        }
    }

    /// [`Ws::call`] that must succeed.
    async fn must(&mut self, op: &str, request: Value) -> Value {
        let label = self.label.clone();
        self.call(op, request.clone())
            .await
            .unwrap_or_else(|e| panic!("{label}: {op} {request} failed: {e:?}"))
    }

    /// [`Ws::call`] that must fail with `code`; the message.
    async fn refused(&mut self, op: &str, request: Value, code: &str) -> String {
        match self.call(op, request.clone()).await {
            Ok(response) => panic!(
                "{}: {op} {request}: expected {code}, got {response}",
                self.label
            ),
            Err((got, message)) => {
                assert_eq!(got, code, "{}: {op} {request}: {message}", self.label);
                message
            }
        }
    }

    /// Opens subscription `sub` of `game_id` from `from_seq`.
    async fn subscribe(&mut self, sub: &str, game_id: &str, from_seq: u64, spectate: bool) {
        let id = json!(sub);
        self.send_json(json!({
            "id": id,
            "type": "subscribe",
            "request": {"gameId": game_id, "fromSeq": from_seq.to_string(), "spectate": spectate},
        }))
        .await;
        let answer = self.answer(&id).await;
        assert_eq!(
            answer,
            json!({"id": sub, "type": "result", "response": {}}),
            "{}: subscribe {sub}",
            self.label
        );
    }

    /// The next item of subscription `sub` (from the inbox first).
    async fn next_item(&mut self, sub: &str) -> Value {
        if let Some(at) = self
            .inbox
            .iter()
            .position(|m| m["subscription"] == json!(sub))
        {
            return self.inbox.remove(at).expect("the position exists");
        }
        loop {
            let message = self.read_json().await;
            if message["subscription"] == json!(sub) {
                return message;
            }
            self.inbox.push_back(message);
        }
    }

    /// The next event of `sub`; panics on any other item.
    async fn next_event(&mut self, sub: &str) -> pb::GameEvent {
        let item = self.next_item(sub).await;
        assert_eq!(item["type"], "event", "{}: {sub}: {item}", self.label);
        serde_json::from_value(item["event"].clone()).unwrap_or_else(|e| {
            panic!(
                "{}: an event that is not a GameEvent: {item}: {e}",
                self.label
            )
        })
    }

    /// Events of `sub` up to and including `GameEnded`, then checks the `end` item.
    async fn events_to_end(&mut self, sub: &str) -> Vec<pb::GameEvent> {
        let mut events = Vec::new();
        loop {
            let event = self.next_event(sub).await;
            let ended = is_end(&event);
            events.push(event);
            if ended {
                break;
            }
        }
        let end = self.next_item(sub).await;
        assert_eq!(
            end,
            json!({"type": "end", "subscription": sub}),
            "{}: after GameEnded",
            self.label
        );
        events
    }

    /// Events of `sub` until the one with `seq` has arrived.
    async fn events_until(&mut self, sub: &str, seq: u64) -> Vec<pb::GameEvent> {
        let mut events: Vec<pb::GameEvent> = Vec::new();
        while events.last().is_none_or(|e| e.seq < seq) {
            events.push(self.next_event(sub).await);
        }
        events
    }

    /// Expects an error item with `code` and then the server's close.
    async fn expect_refusal(&mut self, code: &str) -> (Value, Option<(u16, String)>) {
        let error = self.read_json().await;
        assert_eq!(error["type"], "error", "{}: {error}", self.label);
        assert_eq!(error["code"], code, "{}: {error}", self.label);
        match self.read().await {
            Frame::Closed(close) => (error, close),
            Frame::Json(more) => panic!(
                "{}: expected the close after {error}, got {more}",
                self.label
            ),
        }
    }
}

fn is_end(event: &pb::GameEvent) -> bool {
    matches!(event.event, Some(pb::game_event::Event::Ended(_)))
}

fn seqs(events: &[pb::GameEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

/// Whether an `ActionResult` (JSON) ends the game.
fn result_ends(response: &Value) -> bool {
    response["result"]["events"]
        .as_array()
        .is_some_and(|events| events.iter().any(|e| e.get("ended").is_some()))
}

/// A seeded xorshift: each player's choices are reproducible.
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % bound as u64) as usize
    }
}

/// One seated player over WebSocket.
struct Seat {
    ws: Ws,
    player: String,
    rng: Rng,
    keys: u64,
}

impl Seat {
    async fn join(server: &Server, player: &str, seed: u64) -> Seat {
        Seat {
            ws: Ws::as_player(server, player).await,
            player: player.to_string(),
            rng: Rng(seed),
            keys: 0,
        }
    }

    fn context(&mut self, game_id: &str) -> Value {
        self.keys += 1;
        json!({"gameId": game_id, "idempotencyKey": format!("{}-{}", self.player, self.keys)})
    }

    /// Deployment through every deployment op: a random draft, the same draft sent back whole,
    /// a swap of two like pieces, then confirm.
    async fn deploy(&mut self, game_id: &str) {
        let context = self.context(game_id);
        self.ws.must("reshuffle", json!({"context": context})).await;
        let view = self.ws.must("get_game", json!({"gameId": game_id})).await;
        let placements = view["game"]["ownDeployment"]["placements"].clone();
        let list = placements
            .as_array()
            .expect("the own deployment's placements");
        assert_eq!(list.len(), 25, "{}: a full draft: {view}", self.player);
        let context = self.context(game_id);
        self.ws
            .must(
                "deploy",
                json!({"context": context, "placements": placements}),
            )
            .await;
        let (a, b) = like_pieces(list);
        let context = self.context(game_id);
        self.ws
            .must(
                "swap",
                json!({"context": context, "squareA": a, "squareB": b}),
            )
            .await;
        let context = self.context(game_id);
        self.ws.must("confirm", json!({"context": context})).await;
    }

    /// Plays a random legal move if it is this player's turn; the `PlayResponse`, or `None`.
    async fn try_move(&mut self, game_id: &str) -> Option<Value> {
        let legal = self
            .ws
            .must("legal_moves", json!({"gameId": game_id}))
            .await;
        let moves = legal["moves"].as_array().cloned().unwrap_or_default();
        if moves.is_empty() {
            return None;
        }
        let mv = moves[self.rng.below(moves.len())].clone();
        let mut context = self.context(game_id);
        context["expectedVersion"] = legal["version"].clone();
        Some(
            self.ws
                .must("play", json!({"context": context, "move": mv}))
                .await,
        )
    }
}

impl Seat {
    /// Like [`Seat::try_move`], but attacks whenever it can (a game of many fights).
    async fn try_attack(&mut self, game_id: &str) -> Option<Value> {
        let legal = self
            .ws
            .must("legal_moves", json!({"gameId": game_id}))
            .await;
        let moves = legal["moves"].as_array().cloned().unwrap_or_default();
        if moves.is_empty() {
            return None;
        }
        let view = self.ws.must("get_game", json!({"gameId": game_id})).await;
        let own = view["game"]["viewer"]
            .as_str()
            .map(|v| v.replace("VIEWER_", "SIDE_"));
        let enemy: Vec<Value> = view["game"]["pieces"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["side"].as_str() != own.as_deref())
            .map(|p| p["square"].clone())
            .collect();
        let attacks: Vec<Value> = moves
            .iter()
            .filter(|m| enemy.contains(&m["to"]))
            .cloned()
            .collect();
        let pool = if attacks.is_empty() { &moves } else { &attacks };
        let mv = pool[self.rng.below(pool.len())].clone();
        let mut context = self.context(game_id);
        context["expectedVersion"] = legal["version"].clone();
        Some(
            self.ws
                .must("play", json!({"context": context, "move": mv}))
                .await,
        )
    }
}

/// Two squares holding the same piece code (swapping them is always legal).
fn like_pieces(placements: &[Value]) -> (String, String) {
    for (i, a) in placements.iter().enumerate() {
        for b in &placements[i + 1..] {
            if a["piece"] == b["piece"] {
                return (
                    a["square"].as_str().unwrap().to_string(),
                    b["square"].as_str().unwrap().to_string(),
                );
            }
        }
    }
    panic!("no two like pieces in {placements:?}");
}

/// Plays up to `plies` random moves (whoever is to move); the version after the last one and
/// whether the game ended.
async fn play_plies(seats: &mut [Seat; 2], game_id: &str, plies: usize) -> (u64, bool) {
    let mut version = 0;
    for _ in 0..plies {
        let mut played = None;
        for seat in seats.iter_mut() {
            if let Some(response) = seat.try_move(game_id).await {
                played = Some(response);
                break;
            }
        }
        let response = played.expect("one side has a legal move while the game runs");
        version = response["result"]["version"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .expect("a version (uint64 as a string)");
        if result_ends(&response) {
            return (version, true);
        }
    }
    (version, false)
}

/// Plays until the game ends (conceding past [`MAX_PLIES`]); the final version.
async fn play_to_end(seats: &mut [Seat; 2], game_id: &str) -> u64 {
    let (version, ended) = play_plies(seats, game_id, MAX_PLIES).await;
    if ended {
        return version;
    }
    let context = seats[0].context(game_id);
    let response = seats[0]
        .ws
        .must("concede", json!({"context": context}))
        .await;
    assert!(result_ends(&response), "concede ends the game: {response}");
    response["result"]["version"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .expect("a version")
}

async fn new_game(server: &Server, south: &str, north: &str) -> String {
    let mut session = server.connect().await;
    let key = format!("ws-{}", uuid::Uuid::new_v4());
    create_game(&mut session, south, north, &key).await.game_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_players_and_a_spectator_play_a_whole_game() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args("server", db.url(), SERVER_ARGS).await;
    let game_id = new_game(&server, "alice", "bob").await;

    // Alice authenticates with the header, Bob with the auth message (as a browser does).
    let alice = Seat::join(&server, "alice", 0x5eed_0001).await;
    let mut bob_ws = Ws::open(&server, "bob").await;
    bob_ws
        .send_json(json!({"type": "auth", "token": token("bob"), "id": "hello"}))
        .await;
    assert_eq!(
        bob_ws.read_json().await,
        json!({"id": "hello", "type": "result", "response": {"player": "bob", "guest": true}})
    );
    let bob = Seat {
        ws: bob_ws,
        player: "bob".into(),
        rng: Rng(0x5eed_0002),
        keys: 0,
    };
    let mut seats = [alice, bob];

    // The spectator reads on its own task, as a real client would.
    let mut carol = Ws::as_player(&server, "carol").await;
    carol.subscribe("watch", &game_id, 0, true).await;
    let spectator = tokio::spawn(async move { carol.events_to_end("watch").await });

    for seat in seats.iter_mut() {
        seat.ws.subscribe("game", &game_id, 1, false).await;
    }
    let listed = seats[0]
        .ws
        .must("list_my_games", json!({"activeOnly": true}))
        .await;
    assert!(
        listed["games"]
            .as_array()
            .is_some_and(|games| games.iter().any(|g| g["gameId"] == json!(game_id))),
        "list_my_games names the game: {listed}"
    );

    for seat in seats.iter_mut() {
        seat.deploy(&game_id).await;
    }
    let last = play_to_end(&mut seats, &game_id).await;

    let mut logs = Vec::new();
    for seat in seats.iter_mut() {
        logs.push((seat.player.clone(), seat.ws.events_to_end("game").await));
    }
    logs.push((
        "carol (spectator)".into(),
        spectator.await.expect("the spectator's task"),
    ));
    // Each sees the events it may see (not the other side's drafts), each once, in order.
    for (who, events) in &logs {
        let seqs = seqs(events);
        assert_eq!(seqs.first(), Some(&1), "{who} starts at GameCreated");
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "{who}: in order, no duplicates: {seqs:?}"
        );
        assert_eq!(seqs.last(), Some(&last), "{who} ends at the last event");
        assert!(events.iter().all(|e| e.game_id == game_id));
        assert!(is_end(events.last().unwrap()), "{who} ends with GameEnded");
    }
    // Every event reached at least one player: nothing was lost.
    let mut both: Vec<u64> = seqs(&logs[0].1);
    both.extend(seqs(&logs[1].1));
    both.sort_unstable();
    both.dedup();
    assert_eq!(
        both,
        (1..=last).collect::<Vec<_>>(),
        "the players saw every event between them"
    );
    // After the end every piece is revealed to everyone: the same GameEnded for all.
    let ended: Vec<_> = logs.iter().map(|(_, e)| e.last().unwrap()).collect();
    assert!(
        ended.windows(2).all(|w| w[0] == w[1]),
        "one GameEnded for all: {ended:?}"
    );
    // Before the end the views differ: each player saw its own drafts, the spectator none.
    let drafted = |events: &[pb::GameEvent]| {
        events
            .iter()
            .filter(|e| matches!(e.event, Some(pb::game_event::Event::DeploymentDrafted(_))))
            .count()
    };
    assert!(drafted(&logs[0].1) > 0 && drafted(&logs[1].1) > 0);
    assert_eq!(drafted(&logs[2].1), 0, "a spectator sees no drafts");

    let view = seats[1]
        .ws
        .must("get_game", json!({"gameId": game_id}))
        .await;
    assert_eq!(view["game"]["phase"], "PHASE_ENDED", "{view}");
    assert_eq!(view["game"]["version"], json!(last.to_string()));
}

/// The rules say that when a game ends everything is revealed, over the WebSocket too: after a
/// whole game, both players and a spectator learn both original deployments and the kinds of
/// both pieces of every fight, captured pieces included, from the live `GameEnded`, from a
/// `subscribe` from seq 1 and from `get_game`; and the mover's answer to the game-ending move is
/// its stream's copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_reveals_the_whole_game_to_players_and_spectators() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args("server", db.url(), SERVER_ARGS).await;
    let game_id = new_game(&server, "rw-ann", "rw-bob").await;
    let mut seats = [
        Seat::join(&server, "rw-ann", 0x7e7e_1001).await,
        Seat::join(&server, "rw-bob", 0x7e7e_1002).await,
    ];
    let mut cat = Ws::as_player(&server, "rw-cat").await;
    cat.subscribe("watch", &game_id, 1, true).await;
    let spectator = tokio::spawn(async move { cat.events_to_end("watch").await });
    for seat in seats.iter_mut() {
        seat.ws.subscribe("game", &game_id, 1, false).await;
    }
    for seat in seats.iter_mut() {
        seat.deploy(&game_id).await;
    }
    let mut plies = 0;
    let (mover, last_answer) = 'game: loop {
        assert!(
            plies < MAX_PLIES,
            "{game_id}: no end after {MAX_PLIES} plies"
        );
        for (i, seat) in seats.iter_mut().enumerate() {
            if let Some(response) = seat.try_attack(&game_id).await {
                plies += 1;
                if result_ends(&response) {
                    break 'game (i, response);
                }
                break;
            }
        }
    };
    let answer: pb::ActionResult = serde_json::from_value(last_answer["result"].clone())
        .unwrap_or_else(|e| panic!("the last play's result: {last_answer}: {e}"));

    let mut logs = Vec::new();
    for seat in seats.iter_mut() {
        logs.push(seat.ws.events_to_end("game").await);
    }
    logs.push(spectator.await.expect("the spectator's task"));
    let truth = reveal::Truth::from_streams(&logs[0], &logs[1]);
    // (a) The live end tells every party every piece, the captured ones included.
    for (who, log) in ["south", "north", "spectator"].into_iter().zip(&logs) {
        let captured = reveal::check_live_end(&format!("live {who}"), &truth, log);
        assert!(captured > 0, "{who}: the game captured nothing");
    }
    // (d) The mover's answer and its stream agree on the end.
    reveal::check_answer_in_stream("the mover", &answer.events, &logs[mover]);

    // (b) and (c): a look after the end, by each party (a player also as a spectator).
    for (player, spectate) in [
        ("rw-ann", false),
        ("rw-bob", false),
        ("rw-cat", true),
        ("rw-bob", true),
    ] {
        let who = format!("{player} (spectating: {spectate}) after the end");
        let mut ws = Ws::as_player_labelled(&server, player, &who).await;
        ws.subscribe("again", &game_id, 1, spectate).await;
        let replay = ws.events_to_end("again").await;
        reveal::check_replay_after_end(&who, &truth, &replay);
        let view = ws
            .must("get_game", json!({"gameId": game_id, "spectate": spectate}))
            .await;
        let view: pb::GameView = serde_json::from_value(view["game"].clone())
            .unwrap_or_else(|e| panic!("{who}: get_game's game: {view}: {e}"));
        reveal::check_view_after_end(&who, &truth, &view);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_cannot_act_in_a_game_that_is_not_theirs() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args("server", db.url(), SERVER_ARGS).await;
    let game_id = new_game(&server, "alice", "bob").await;
    let mut mallory = Ws::as_player(&server, "mallory").await;
    let context = json!({"gameId": game_id, "idempotencyKey": "m-1"});

    for (op, request) in [
        ("reshuffle", json!({"context": context})),
        ("confirm", json!({"context": context})),
        (
            "play",
            json!({"context": context, "move": {"from": "A6", "to": "A7"}}),
        ),
        ("concede", json!({"context": context})),
        ("legal_moves", json!({"gameId": game_id})),
        ("get_game", json!({"gameId": game_id})),
    ] {
        mallory.refused(op, request, "PERMISSION_DENIED").await;
    }
    let id = json!("peek");
    mallory
        .send_json(json!({"id": id, "type": "subscribe", "request": {"gameId": game_id}}))
        .await;
    let answer = mallory.answer(&id).await;
    assert_eq!(answer["code"], "PERMISSION_DENIED", "{answer}");
    // Watching as a spectator is allowed, and shows nobody's draft.
    mallory.subscribe("spectate", &game_id, 1, true).await;
    let created = mallory.next_event("spectate").await;
    assert_eq!(created.seq, 1);
    // The seated players still act: nothing Mallory did touched the game.
    let mut alice = Ws::as_player(&server, "alice").await;
    let context = json!({"gameId": game_id, "idempotencyKey": "a-1"});
    alice.must("reshuffle", json!({"context": context})).await;
    let unknown = uuid::Uuid::new_v4().to_string();
    alice
        .refused("get_game", json!({"gameId": unknown}), "NOT_FOUND")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tokens_are_refused() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args("server", db.url(), SERVER_ARGS).await;

    // A garbage header: the error, then a policy-violation close.
    let mut ws = Ws::open_with_header(&server, "garbage header", "Bearer not-a-jwt").await;
    let (error, close) = ws.expect_refusal("UNAUTHENTICATED").await;
    assert_eq!(error["id"], Value::Null);
    let (code, reason) = close.expect("a close frame");
    assert_eq!(code, 1008);
    assert!(reason.starts_with("UNAUTHENTICATED"), "{reason}");

    // A token signed with another secret, in the auth message.
    let forged = mint_dev_token(
        b"another-secret-of-at-least-32-bytes!!",
        "alice",
        Duration::from_secs(60),
        false,
    )
    .expect("a token");
    let mut ws = Ws::open(&server, "forged auth").await;
    ws.send_json(json!({"id": 1, "type": "auth", "token": forged}))
        .await;
    let (error, _) = ws.expect_refusal("UNAUTHENTICATED").await;
    assert_eq!(error["id"], 1);
    assert!(
        error["message"].as_str().unwrap().contains("signature"),
        "{error}"
    );

    // Anything but auth before authentication.
    let mut ws = Ws::open(&server, "no auth").await;
    ws.send_json(json!({"id": 1, "type": "list_my_games"}))
        .await;
    let (error, _) = ws.expect_refusal("UNAUTHENTICATED").await;
    assert!(
        error["message"].as_str().unwrap().contains("auth"),
        "{error}"
    );

    // Malformed JSON before authentication is refused the same way.
    let mut ws = Ws::open(&server, "junk first").await;
    ws.send_text("hello?".into()).await;
    ws.expect_refusal("UNAUTHENTICATED").await;

    // Without a bearer scheme.
    let mut ws = Ws::open_with_header(&server, "basic", "Basic YWxpY2U6cHc=").await;
    ws.expect_refusal("UNAUTHENTICATED").await;

    // A good token still works, either way.
    let mut ws = Ws::open(&server, "good auth").await;
    ws.send_json(json!({"type": "auth", "token": token("alice")}))
        .await;
    let answer = ws.read_json().await;
    assert_eq!(answer["type"], "result", "{answer}");
    assert_eq!(answer["response"]["player"], "alice");
    ws.must("list_my_games", json!({})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_get_errors_and_the_connection_survives() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args("server", db.url(), SERVER_ARGS).await;
    let game_id = new_game(&server, "alice", "bob").await;
    let mut ws = Ws::as_player(&server, "alice").await;

    // (what is sent, the code, what the message must mention, the id of the answer)
    let oversized =
        json!({"id": 9, "type": "list_my_games", "request": {"x": "y".repeat(100 * 1024)}})
            .to_string();
    let cases: Vec<(String, &str, &str, Value)> = vec![
        (
            "{not json".into(),
            "INVALID_ARGUMENT",
            "malformed JSON",
            Value::Null,
        ),
        (
            "[1, 2]".into(),
            "INVALID_ARGUMENT",
            "JSON object",
            Value::Null,
        ),
        (
            r#"{"id": 1}"#.into(),
            "INVALID_ARGUMENT",
            "type is required",
            json!(1),
        ),
        (
            r#"{"id": 2, "type": "fly"}"#.into(),
            "INVALID_ARGUMENT",
            "\"fly\"",
            json!(2),
        ),
        (
            r#"{"type": "list_my_games"}"#.into(),
            "INVALID_ARGUMENT",
            "id is required",
            Value::Null,
        ),
        (
            r#"{"id": {"a": 1}, "type": "get_game"}"#.into(),
            "INVALID_ARGUMENT",
            "id must be",
            Value::Null,
        ),
        (
            r#"{"id": 3, "type": "get_game", "requets": {}}"#.into(),
            "INVALID_ARGUMENT",
            "requets",
            json!(3),
        ),
        (
            r#"{"id": 4, "type": "get_game", "request": {"gameID": "x"}}"#.into(),
            "INVALID_ARGUMENT",
            "gameID",
            json!(4),
        ),
        (
            r#"{"id": 5, "type": "get_game", "request": {"gameId": 7}}"#.into(),
            "INVALID_ARGUMENT",
            "request",
            json!(5),
        ),
        (
            r#"{"id": 6, "type": "get_game", "request": {"gameId": "nope"}}"#.into(),
            "INVALID_ARGUMENT",
            "not a game id",
            json!(6),
        ),
        (
            r#"{"id": 7, "type": "play", "request": {}}"#.into(),
            "INVALID_ARGUMENT",
            "context",
            json!(7),
        ),
        (
            r#"{"id": 8, "type": "unsubscribe", "request": {"subscription": "none"}}"#.into(),
            "NOT_FOUND",
            "none",
            json!(8),
        ),
        (
            r#"{"id": 10, "type": "auth", "token": "x"}"#.into(),
            "FAILED_PRECONDITION",
            "already",
            json!(10),
        ),
        (oversized, "OUT_OF_RANGE", "65536", Value::Null),
    ];
    for (text, code, mentions, id) in cases {
        let shown: String = text.chars().take(80).collect();
        ws.send_text(text).await;
        let error = ws.read_json().await;
        assert_eq!(error["type"], "error", "{shown}: {error}");
        assert_eq!(error["code"], code, "{shown}: {error}");
        assert_eq!(error["id"], id, "{shown}: {error}");
        assert!(
            error["message"].as_str().unwrap().contains(mentions),
            "{shown}: {error} does not mention {mentions:?}"
        );
    }
    ws.socket
        .send(Message::Binary(vec![1, 2, 3].into()))
        .await
        .expect("send binary");
    let error = ws.read_json().await;
    assert_eq!(error["code"], "INVALID_ARGUMENT", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("text"),
        "{error}"
    );

    // Subscription bookkeeping errors.
    ws.subscribe("s", &game_id, 1, false).await;
    let id = json!("s");
    ws.send_json(json!({"id": id, "type": "subscribe", "request": {"gameId": game_id}}))
        .await;
    let answer = ws.answer(&id).await;
    assert_eq!(answer["code"], "ALREADY_EXISTS", "{answer}");
    ws.must("unsubscribe", json!({"subscription": "s"})).await;
    ws.refused("unsubscribe", json!({"subscription": "s"}), "NOT_FOUND")
        .await;

    // Still open and answering.
    let listed = ws.must("list_my_games", json!({})).await;
    assert!(
        listed["games"].as_array().is_some_and(|g| g.len() == 1),
        "{listed}"
    );
    let view = ws.must("get_game", json!({"game_id": game_id})).await;
    assert_eq!(
        view["game"]["gameId"],
        json!(game_id),
        "proto field names work too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_reconnects_resumes_where_it_left_off() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args("server", db.url(), SERVER_ARGS).await;
    let game_id = new_game(&server, "alice", "bob").await;
    let mut seats = [
        Seat::join(&server, "alice", 0x5eed_0101).await,
        Seat::join(&server, "bob", 0x5eed_0102).await,
    ];
    // Bob follows the game twice: on his playing connection, which never drops, and on a
    // second device that drops mid-game.
    seats[1].ws.subscribe("game", &game_id, 1, false).await;
    let mut device = Ws::as_player_labelled(&server, "bob", "bob (device)").await;
    device.subscribe("game", &game_id, 1, false).await;

    for seat in seats.iter_mut() {
        seat.deploy(&game_id).await;
    }
    let (version, ended) = play_plies(&mut seats, &game_id, 10).await;
    assert!(!ended, "ten plies do not end a random game");
    let mut seen = device.events_until("game", version).await;
    device
        .socket
        .close(None)
        .await
        .expect("closing the device's connection");
    drop(device);

    // Moves happen while the device is away.
    let (_, ended) = play_plies(&mut seats, &game_id, 10).await;
    let last = if ended {
        0
    } else {
        play_to_end(&mut seats, &game_id).await
    };

    // Back after the end, resuming from the last seq seen + 1: the missed events, then the end,
    // as any look after the end shows them (everything revealed).
    let from = seen.last().unwrap().seq + 1;
    let mut device = Ws::open(&server, "bob (device, again)").await;
    device
        .send_json(json!({"type": "auth", "token": token("bob")}))
        .await;
    assert_eq!(device.read_json().await["type"], "result");
    device.subscribe("again", &game_id, from, false).await;
    seen.extend(device.events_to_end("again").await);

    let reference = seats[1].ws.events_to_end("game").await;
    if last != 0 {
        assert_eq!(reference.last().unwrap().seq, last);
    }
    assert_eq!(
        seqs(&seen),
        seqs(&reference),
        "the resumed log has every event once"
    );
    let (before, resumed) = seen.split_at(seen.iter().position(|e| e.seq >= from).unwrap());
    assert_eq!(
        before,
        &reference[..before.len()],
        "before leaving, the uninterrupted log"
    );
    let mut look = Ws::as_player_labelled(&server, "bob", "bob (a look after the end)").await;
    look.subscribe("look", &game_id, from, false).await;
    assert_eq!(
        resumed,
        look.events_to_end("look").await,
        "the resumed part is a look after the end"
    );
    for (event, live) in resumed.iter().zip(&reference[before.len()..]) {
        assert_eq!(
            public(event),
            public(live),
            "seq {}: what everyone sees",
            event.seq
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_are_refused_with_503() {
    let db = TestDatabase::create().await;
    let mut args = SERVER_ARGS.to_vec();
    args.extend(["--ws-max-connections", "2"]);
    let server = Server::start_with_args("server", db.url(), &args).await;
    let mut first = Ws::as_player(&server, "alice").await;
    let mut second = Ws::as_player(&server, "bob").await;
    // Both are served (a round trip each proves the upgrade completed).
    first.must("list_my_games", json!({})).await;
    second.must("list_my_games", json!({})).await;
    match tokio_tungstenite::connect_async(ws_url(&server)).await {
        Err(tungstenite::Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 503);
            let body = String::from_utf8_lossy(response.body().as_deref().unwrap_or_default())
                .into_owned();
            assert!(body.contains("maximum of 2"), "{body}");
        }
        Err(e) => panic!("expected HTTP 503, got {e}"),
        Ok(_) => panic!("a third connection was accepted past the cap of 2"),
    }
    // The refusal does not disturb the open connections.
    first.must("list_my_games", json!({})).await;
}

/// Two `Authorization` headers on the upgrade request are refused whatever they hold and in
/// either order: before, only the first was read, so a good one followed by a bad one got in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_authorization_headers_are_refused_in_either_order() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args("server", db.url(), SERVER_ARGS).await;
    let good = format!("Bearer {}", token("alice"));
    let bad = "Bearer not-a-jwt".to_string();
    for (label, pair) in [
        ("good then bad", [&good, &bad]),
        ("bad then good", [&bad, &good]),
        ("good twice", [&good, &good]),
    ] {
        let mut request = ws_url(&server).into_client_request().expect("a ws URL");
        for value in pair {
            request.headers_mut().append(
                "authorization",
                HeaderValue::from_str(value).expect("a header value"),
            );
        }
        let (socket, _) = tokio_tungstenite::connect_async(request)
            .await
            .unwrap_or_else(|e| panic!("{label}: cannot connect: {e}"));
        let mut ws = Ws::wrap(label, socket);
        let (error, close) = ws.expect_refusal("UNAUTHENTICATED").await;
        assert!(
            error["message"].as_str().unwrap().contains("more than one"),
            "{label}: {error}"
        );
        assert_eq!(close.map(|(code, _)| code), Some(1008), "{label}");
    }
    // The auth message with its token twice, a good one then a bad one, is refused as well.
    let mut ws = Ws::open(&server, "token twice").await;
    ws.send_text(format!(
        r#"{{"type": "auth", "token": {:?}, "token": "bad"}}"#,
        token("alice")
    ))
    .await;
    let (error, _) = ws.expect_refusal("UNAUTHENTICATED").await;
    assert!(
        error["message"].as_str().unwrap().contains("appears twice"),
        "{error}"
    );
    // One good header still authenticates.
    let mut ws = Ws::open_with_header(&server, "one header", &good).await;
    ws.must("list_my_games", json!({})).await;
}

/// Writes one masked, final text frame carrying `payload` straight onto the TCP stream under
/// `ws` (the client library refuses to send a text frame that is not UTF-8).
async fn send_raw_text_frame(ws: &mut Ws, payload: &[u8]) {
    use tokio::io::AsyncWriteExt;

    assert!(payload.len() < 126, "a one-byte length");
    let mask = [0x37, 0xfa, 0x21, 0x3d];
    let mut frame = vec![0x81, 0x80 | payload.len() as u8];
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    let MaybeTlsStream::Plain(tcp) = ws.socket.get_mut() else {
        panic!("a plain TCP stream");
    };
    tcp.write_all(&frame).await.expect("writing the raw frame");
    tcp.flush().await.expect("flushing the raw frame");
}

/// RFC 6455 8.1: a text frame that is not valid UTF-8 closes the connection with 1007 (invalid
/// frame payload data), before authentication as after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_frame_that_is_not_utf8_closes_with_1007() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args("server", db.url(), SERVER_ARGS).await;
    let not_utf8: &[u8] = b"{\"id\": 1, \"type\": \"\xff\xfe\"}";

    let mut authenticated = Ws::as_player(&server, "alice").await;
    authenticated.must("list_my_games", json!({})).await;
    let mut unauthenticated = Ws::open(&server, "not yet authenticated").await;
    for ws in [&mut authenticated, &mut unauthenticated] {
        send_raw_text_frame(ws, not_utf8).await;
        match ws.read().await {
            Frame::Closed(Some((code, reason))) => {
                assert_eq!(code, 1007, "{}: {reason}", ws.label);
                assert!(reason.contains("UTF-8"), "{}: {reason}", ws.label);
            }
            other => panic!("{}: expected a close frame, got {other:?}", ws.label),
        }
    }
    // The server is unharmed.
    let mut ws = Ws::as_player(&server, "alice").await;
    ws.must("list_my_games", json!({})).await;
}
