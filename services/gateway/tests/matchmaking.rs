//! The gateway's matchmaking operations on both faces, against a real session service and a real
//! matchmaking service (in-memory stores) on loopback sockets: players find a match and are
//! told on their lobby streams, invites work over the WebSocket API, guests and accounts marked
//! as bots cannot play rated,
//! and a gateway without matchmaking answers UNAVAILABLE.

use futures_util::{SinkExt, StreamExt};
use hidden_front_gateway::auth::{AuthConfig, Authenticator, DEV_SECRET, mint_dev_token};
use hidden_front_gateway::{Gateway, GatewayConfig, PlayerApi, ws};
use hidden_front_matchmaking::store::memory::MemoryMatchStore;
use hidden_front_matchmaking::{MatchmakingConfig, MatchmakingService};
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::matchmaking_service_client::MatchmakingServiceClient;
use hidden_front_proto::v1::player_service_client::PlayerServiceClient;
use hidden_front_proto::v1::player_service_server::PlayerServiceServer;
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use hidden_front_proto::v1::session_service_server::SessionServiceServer;
use hidden_front_session::{SessionConfig, SessionService};
use hidden_front_store::memory::MemoryStore;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;
use tonic::Code;
use tonic::transport::Channel;

const DEADLINE: Duration = Duration::from_secs(20);

fn channel(addr: SocketAddr) -> Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_lazy()
}

async fn bind() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

struct Setup {
    grpc: SocketAddr,
    ws: SocketAddr,
    /// Stops matchmaking's loops when the setup is dropped.
    _stop: tokio_util::sync::DropGuard,
}

/// A session, a matchmaking service (with its loops) and a gateway on both faces; `with_mm`
/// decides whether the gateway is given the matchmaking client.
async fn setup(with_mm: bool) -> Setup {
    let (listener, session_addr) = bind().await;
    let session = SessionService::new(Arc::new(MemoryStore::new()), SessionConfig::default());
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(SessionServiceServer::new(session))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let session_client = SessionServiceClient::new(channel(session_addr).into());
    let mm = MatchmakingService::new(
        Arc::new(MemoryMatchStore::new()),
        session_client.clone(),
        MatchmakingConfig {
            pairing_interval: Duration::from_millis(50),
            ..MatchmakingConfig::default()
        },
    );
    let stop = tokio_util::sync::CancellationToken::new();
    mm.spawn_background(stop.child_token());
    let (listener, mm_addr) = bind().await;
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(mm.server())
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let gateway = Gateway::new(
        GatewayConfig {
            matchmaking: with_mm.then(|| MatchmakingServiceClient::new(channel(mm_addr).into())),
            ..GatewayConfig::default()
        },
        Authenticator::new(AuthConfig::dev()).unwrap(),
        session_client,
    );
    let (listener, grpc) = bind().await;
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(PlayerServiceServer::new(PlayerApi::new(gateway.clone())))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let (listener, ws_addr) = bind().await;
    tokio::spawn(ws::serve(
        listener,
        gateway,
        ws::WsConfig::default(),
        std::future::pending(),
    ));
    Setup {
        grpc,
        ws: ws_addr,
        _stop: stop.drop_guard(),
    }
}

fn token(player: &str, guest: bool) -> String {
    mint_dev_token(
        DEV_SECRET.as_bytes(),
        player,
        Duration::from_secs(600),
        guest,
    )
    .unwrap()
}

fn authed<T>(message: T, player: &str, guest: bool) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {}", token(player, guest)).parse().unwrap(),
    );
    request
}

async fn next_lobby(stream: &mut tonic::Streaming<pb::WatchLobbyResponse>) -> pb::LobbyEvent {
    tokio::time::timeout(DEADLINE, stream.next())
        .await
        .expect("a lobby event in time")
        .expect("the stream stays open")
        .expect("no error")
        .event
        .unwrap()
}

fn queue(rated: bool) -> Option<pb::Queue> {
    Some(pb::Queue {
        rules: String::new(),
        time_control: "online".into(),
        rated,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_find_a_match_over_grpc_and_are_told_on_their_lobby_streams() {
    let s = setup(true).await;
    let mut client = PlayerServiceClient::new(channel(s.grpc));
    let mut lobbies = Vec::new();
    for player in ["amy", "bob"] {
        lobbies.push(
            client
                .watch_lobby(authed(
                    pb::WatchLobbyRequest { after_seq: 0 },
                    player,
                    false,
                ))
                .await
                .unwrap()
                .into_inner(),
        );
    }
    for player in ["amy", "bob"] {
        let ticket = client
            .find_match(authed(
                pb::FindMatchRequest {
                    ticket_id: "t1".into(),
                    queue: queue(true),
                    ttl_seconds: 0,
                },
                player,
                false,
            ))
            .await
            .unwrap()
            .into_inner()
            .ticket
            .unwrap();
        assert_eq!(
            ticket.player, player,
            "the ticket is the authenticated player's"
        );
    }
    let mut games = Vec::new();
    for (lobby, opponent) in lobbies.iter_mut().zip(["bob", "amy"]) {
        match next_lobby(lobby).await.kind {
            Some(pb::lobby_event::Kind::MatchFound(found)) => {
                assert_eq!(found.opponent, opponent);
                games.push(found.game_id);
            }
            other => panic!("expected MatchFound, got {other:?}"),
        }
    }
    assert_eq!(games[0], games[1]);
    // The game is the players' own: the gateway lets them see it.
    let game = client
        .get_game(authed(
            pb::PlayerServiceGetGameRequest {
                game_id: games[0].clone(),
                spectate: false,
            },
            "amy",
            false,
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(game.game.is_some());
    let rating = client
        .get_my_rating(authed(pb::GetMyRatingRequest {}, "amy", false))
        .await
        .unwrap()
        .into_inner()
        .rating
        .unwrap();
    assert_eq!(rating.rating, 1500.0);
    // Guests may not queue rated; unauthenticated calls are refused.
    let status = client
        .find_match(authed(
            pb::FindMatchRequest {
                ticket_id: "g".into(),
                queue: queue(true),
                ttl_seconds: 0,
            },
            "guest-1",
            true,
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    // Nor may an account marked as a bot; it may queue casual.
    let bot_request = |message: pb::FindMatchRequest| {
        let exp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 600;
        let token = jsonwebtoken::encode(
            &jsonwebtoken::Header::default(),
            &json!({ "sub": "robo", "exp": exp, "bot": true }),
            &jsonwebtoken::EncodingKey::from_secret(DEV_SECRET.as_bytes()).unwrap(),
        )
        .unwrap();
        let mut request = tonic::Request::new(message);
        request
            .metadata_mut()
            .insert("authorization", format!("Bearer {token}").parse().unwrap());
        request
    };
    let status = client
        .find_match(bot_request(pb::FindMatchRequest {
            ticket_id: "b".into(),
            queue: queue(true),
            ttl_seconds: 0,
        }))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert!(status.message().contains("bots"), "{status:?}");
    client
        .find_match(bot_request(pb::FindMatchRequest {
            ticket_id: "c".into(),
            queue: queue(false),
            ttl_seconds: 0,
        }))
        .await
        .expect("a bot may queue casual");
    let status = client
        .get_my_rating(tonic::Request::new(pb::GetMyRatingRequest {}))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_may_act_as_the_computer_player() {
    assert_eq!(
        hidden_front_gateway::COMPUTER_PLAYER,
        hidden_front_matchmaking::COMPUTER_PLAYER
    );
    let s = setup(true).await;
    let mut client = PlayerServiceClient::new(channel(s.grpc));
    let status = client
        .list_my_games(authed(
            pb::ListMyGamesRequest { active_only: true },
            hidden_front_gateway::COMPUTER_PLAYER,
            false,
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    assert!(status.message().contains("reserved"), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_matchmaking_the_operations_answer_unavailable() {
    let s = setup(false).await;
    let mut client = PlayerServiceClient::new(channel(s.grpc));
    let status = client
        .find_match(authed(
            pb::FindMatchRequest {
                ticket_id: "t".into(),
                queue: queue(false),
                ttl_seconds: 0,
            },
            "amy",
            false,
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    assert!(
        status.message().contains("matchmaking is not configured"),
        "{status:?}"
    );
    let status = client
        .watch_lobby(authed(pb::WatchLobbyRequest { after_seq: 0 }, "amy", false))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn ws_connect(addr: SocketAddr, player: &str) -> Socket {
    let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/v1/ws"))
        .await
        .unwrap();
    send(
        &mut socket,
        json!({"type": "auth", "token": token(player, false)}),
    )
    .await;
    let answer = recv(&mut socket).await;
    assert_eq!(answer["type"], "result", "{answer}");
    socket
}

async fn send(socket: &mut Socket, message: Value) {
    socket
        .send(Message::Text(message.to_string().into()))
        .await
        .unwrap();
}

async fn recv(socket: &mut Socket) -> Value {
    loop {
        let message = tokio::time::timeout(DEADLINE, socket.next())
            .await
            .expect("a message in time")
            .expect("the socket stays open")
            .unwrap();
        if let Message::Text(text) = message {
            return serde_json::from_str(&text).unwrap();
        }
    }
}

/// The next message that is not the answer to a request with another id.
async fn recv_where(socket: &mut Socket, check: impl Fn(&Value) -> bool) -> Value {
    loop {
        let message = recv(socket).await;
        if check(&message) {
            return message;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invites_work_over_the_websocket_api_with_a_lobby_subscription() {
    let s = setup(true).await;
    let mut host = ws_connect(s.ws, "hana").await;
    let mut guest = ws_connect(s.ws, "gus").await;
    send(
        &mut host,
        json!({"id": "lobby", "type": "watch_lobby", "request": {}}),
    )
    .await;
    let answer = recv_where(&mut host, |m| m["id"] == "lobby").await;
    assert_eq!(answer["type"], "result", "{answer}");
    send(
        &mut host,
        json!({"id": 1, "type": "create_invite", "request": {"inviteId": "friday"}}),
    )
    .await;
    let created = recv_where(&mut host, |m| m["id"] == 1).await;
    assert_eq!(created["type"], "result", "{created}");
    let code = created["response"]["invite"]["code"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        created["response"]["invite"]["link"]
            .as_str()
            .unwrap()
            .ends_with(&code)
    );

    send(
        &mut guest,
        json!({"id": 7, "type": "accept_invite", "request": {"code": code.to_lowercase()}}),
    )
    .await;
    let accepted = recv_where(&mut guest, |m| m["id"] == 7).await;
    assert_eq!(accepted["type"], "result", "{accepted}");
    assert_eq!(accepted["response"]["opponent"], "hana");
    assert_eq!(accepted["response"]["seat"], "SIDE_NORTH");
    let game_id = accepted["response"]["gameId"].as_str().unwrap().to_owned();

    let lobby = recv_where(&mut host, |m| m["type"] == "lobby").await;
    assert_eq!(lobby["subscription"], "lobby");
    let found = &lobby["event"]["matchFound"];
    assert_eq!(found["gameId"], game_id.as_str(), "{lobby}");
    assert_eq!(found["opponent"], "gus");
    assert_eq!(found["inviteCode"], code.as_str());

    // Errors keep their codes on this face too.
    send(
        &mut guest,
        json!({"id": 8, "type": "accept_invite", "request": {"code": "nope"}}),
    )
    .await;
    let refused = recv_where(&mut guest, |m| m["id"] == 8).await;
    assert_eq!(refused["type"], "error");
    assert_eq!(refused["code"], "INVALID_ARGUMENT", "{refused}");
}
