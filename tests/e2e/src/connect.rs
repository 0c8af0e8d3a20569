//! A client of `PlayerService/Connect`, written from the protos: one connection per player over
//! gRPC (a bidirectional stream) or over a WebSocket speaking the binary subprotocol
//! `hiddenfront.connect.v1`. Requests go up with ids; what comes down is read message by message,
//! and a request's answer is found by its id while every other message waits its turn.

use crate::gateway::{authed, token};
use crate::pb;
use futures_util::{SinkExt, StreamExt};
use prost::Message as _;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tonic::transport::Channel;

/// The binary WebSocket subprotocol.
pub const SUBPROTOCOL: &str = "hiddenfront.connect.v1";

/// How long a read waits before the test fails.
const READ_DEADLINE: Duration = Duration::from_secs(20);

/// The two faces of `Connect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// `PlayerService/Connect` over gRPC.
    Grpc,
    /// Binary frames over the WebSocket listener.
    WebSocket,
}

enum Link {
    Grpc {
        requests: Option<mpsc::Sender<pb::ConnectRequest>>,
        responses: Box<tonic::Streaming<pb::ConnectResponse>>,
    },
    Ws(Box<WebSocketStream<MaybeTlsStream<TcpStream>>>),
}

/// What a read found.
#[derive(Debug)]
pub enum Read {
    /// One server message.
    Message(Box<pb::ServerMessage>),
    /// The server ended the connection cleanly (a gRPC stream's end, a WebSocket close frame
    /// with its code).
    Ended(Option<u16>),
    /// The connection broke (a gRPC status, a WebSocket error).
    Broke(String),
}

/// One player's `Connect` connection.
pub struct Connection {
    link: Link,
    /// Messages read but not yet taken.
    waiting: VecDeque<pb::ServerMessage>,
    next_id: u64,
    /// The player.
    pub player: String,
}

impl Connection {
    /// Opens a connection of `player` through `door` (`grpc` is the gateway's gRPC address,
    /// `http` its HTTP listener).
    pub async fn open(door: Door, grpc: &Channel, http: SocketAddr, player: &str) -> Connection {
        match door {
            Door::Grpc => Connection::grpc(grpc, player).await,
            Door::WebSocket => Connection::websocket(http, player).await,
        }
    }

    /// `Connect` over gRPC on `channel`, authenticated with `player`'s token.
    pub async fn grpc(channel: &Channel, player: &str) -> Connection {
        let (requests, queue) = mpsc::channel(64);
        let mut client = pb::player_service_client::PlayerServiceClient::new(channel.clone());
        let responses = client
            .connect(authed(&token(player), ReceiverStream::new(queue)))
            .await
            .unwrap_or_else(|status| panic!("Connect as {player}: {status}"))
            .into_inner();
        Connection {
            link: Link::Grpc {
                requests: Some(requests),
                responses: Box::new(responses),
            },
            waiting: VecDeque::new(),
            next_id: 0,
            player: player.into(),
        }
    }

    /// A binary WebSocket to `http`, authenticated by the upgrade's `Authorization` header.
    pub async fn websocket(http: SocketAddr, player: &str) -> Connection {
        let socket = ws_upgrade(http, Some(&token(player)), true)
            .await
            .unwrap_or_else(|e| panic!("WebSocket as {player}: {e}"));
        Connection::from_socket(socket, player)
    }

    /// A connection over an upgraded socket.
    pub fn from_socket(
        socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
        player: &str,
    ) -> Connection {
        Connection {
            link: Link::Ws(Box::new(socket)),
            waiting: VecDeque::new(),
            next_id: 0,
            player: player.into(),
        }
    }

    /// Sends `request` with a fresh id, which it returns.
    pub async fn send(&mut self, request: pb::connect_request::Request) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send_message(pb::ConnectRequest {
            request_id: id,
            request: Some(request),
        })
        .await;
        id
    }

    /// Sends `message` as it is.
    pub async fn send_message(&mut self, message: pb::ConnectRequest) {
        match &mut self.link {
            Link::Grpc { requests, .. } => requests
                .as_ref()
                .expect("the request stream is open")
                .send(message)
                .await
                .expect("the request stream is open"),
            Link::Ws(socket) => socket
                .send(Message::Binary(message.encode_to_vec().into()))
                .await
                .expect("the socket takes a frame"),
        }
    }

    /// Sends raw bytes as one binary frame (WebSocket only).
    pub async fn send_bytes(&mut self, bytes: Vec<u8>) {
        match &mut self.link {
            Link::Ws(socket) => socket
                .send(Message::Binary(bytes.into()))
                .await
                .expect("the socket takes a frame"),
            Link::Grpc { .. } => panic!("raw frames are for the WebSocket door"),
        }
    }

    /// Sends a text frame (WebSocket only).
    pub async fn send_text(&mut self, text: &str) {
        match &mut self.link {
            Link::Ws(socket) => socket
                .send(Message::Text(text.into()))
                .await
                .expect("the socket takes a frame"),
            Link::Grpc { .. } => panic!("text frames are for the WebSocket door"),
        }
    }

    /// Ends the client's side (gRPC: the request stream; WebSocket: a close frame).
    pub async fn finish(&mut self) {
        match &mut self.link {
            Link::Grpc { requests, .. } => *requests = None,
            Link::Ws(socket) => {
                let _ = SinkExt::close(socket).await;
            }
        }
    }

    /// The next thing the server sent: a message (one waiting first), or the end.
    pub async fn read(&mut self) -> Read {
        if let Some(message) = self.waiting.pop_front() {
            return Read::Message(Box::new(message));
        }
        let read = tokio::time::timeout(READ_DEADLINE, self.read_batch())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{}: nothing from the server within {READ_DEADLINE:?}",
                    self.player
                )
            });
        match read {
            Ok(messages) => {
                self.waiting.extend(messages);
                match self.waiting.pop_front() {
                    Some(message) => Read::Message(Box::new(message)),
                    None => Read::Broke("an empty response".into()),
                }
            }
            Err(read) => read,
        }
    }

    /// One response from the wire, decoded; `Err` at its end.
    async fn read_batch(&mut self) -> Result<Vec<pb::ServerMessage>, Read> {
        let response = match &mut self.link {
            Link::Grpc { responses, .. } => match responses.message().await {
                Ok(Some(response)) => response,
                Ok(None) => return Err(Read::Ended(None)),
                Err(status) => return Err(Read::Broke(status.to_string())),
            },
            Link::Ws(socket) => loop {
                match socket.next().await {
                    Some(Ok(Message::Binary(bytes))) => {
                        break pb::ConnectResponse::decode(bytes)
                            .expect("a binary frame is a ConnectResponse");
                    }
                    Some(Ok(Message::Close(frame))) => {
                        return Err(Read::Ended(frame.map(|f| u16::from(f.code))));
                    }
                    Some(Ok(Message::Text(text))) => {
                        return Err(Read::Broke(format!("a text frame: {text}")));
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(error)) => return Err(Read::Broke(error.to_string())),
                    None => return Err(Read::Ended(None)),
                }
            },
        };
        assert!(
            !response.messages.is_empty(),
            "a response holds at least one message"
        );
        Ok(response
            .decode_messages()
            .expect("every message of a response decodes"))
    }

    /// The next message; fails the test if the connection ended.
    pub async fn message(&mut self) -> pb::ServerMessage {
        match self.read().await {
            Read::Message(message) => *message,
            other => panic!("{}: expected a message, got {other:?}", self.player),
        }
    }

    /// The answer to request `id` (`Err` with the refusal), reading past and keeping every
    /// other message for later.
    pub async fn answer(&mut self, id: u64) -> Result<pb::answer::Response, pb::Refusal> {
        let mut passed = VecDeque::new();
        let found = loop {
            let message = self.message().await;
            match message.item {
                Some(pb::server_message::Item::Answer(answer)) if answer.request_id == id => {
                    break Ok(answer.response.expect("an answer holds its response"));
                }
                Some(pb::server_message::Item::Refusal(refusal)) if refusal.request_id == id => {
                    break Err(refusal);
                }
                _ => passed.push_back(message),
            }
        };
        passed.extend(self.waiting.drain(..));
        self.waiting = passed;
        found
    }

    /// Sends `request` and waits for its answer.
    pub async fn call(
        &mut self,
        request: pb::connect_request::Request,
    ) -> Result<pb::answer::Response, pb::Refusal> {
        let id = self.send(request).await;
        self.answer(id).await
    }

    /// Follows `game_id` from `from_seq` (as a spectator when `spectate`), with status items.
    pub async fn follow(&mut self, game_id: &str, from_seq: u64, spectate: bool) {
        let followed = self
            .call(pb::connect_request::Request::Follow(pb::SubscribeRequest {
                game_id: game_id.into(),
                from_seq,
                spectate,
                with_status: true,
            }))
            .await;
        match followed {
            Ok(pb::answer::Response::Followed(_)) => {}
            other => panic!("{}: follow {game_id}: {other:?}", self.player),
        }
    }

    /// Messages already read and not yet taken.
    pub fn waiting(&mut self) -> Vec<pb::ServerMessage> {
        self.waiting.drain(..).collect()
    }
}

/// Upgrades a WebSocket to `http`'s `/v1/ws`, with `token` as its `Authorization` header (none
/// when `None`), offering the binary subprotocol when `binary`.
pub async fn ws_upgrade(
    http: SocketAddr,
    token: Option<&str>,
    binary: bool,
) -> Result<WebSocketStream<MaybeTlsStream<TcpStream>>, String> {
    let mut request = format!("ws://{http}/v1/ws")
        .into_client_request()
        .map_err(|e| e.to_string())?;
    if let Some(token) = token {
        request.headers_mut().insert(
            "authorization",
            format!("Bearer {token}").parse().map_err(|_| "a header")?,
        );
    }
    if binary {
        request.headers_mut().insert(
            "sec-websocket-protocol",
            SUBPROTOCOL.parse().map_err(|_| "a header")?,
        );
    }
    let (socket, response) = tokio_tungstenite::connect_async_with_config(request, None, true)
        .await
        .map_err(|e| e.to_string())?;
    if binary {
        let chosen = response
            .headers()
            .get("sec-websocket-protocol")
            .and_then(|v| v.to_str().ok());
        if chosen != Some(SUBPROTOCOL) {
            return Err(format!("the server chose the subprotocol {chosen:?}"));
        }
    }
    Ok(socket)
}

/// The event of a server message, if it is one.
pub fn event_of(message: &pb::ServerMessage) -> Option<&pb::GameEvent> {
    match &message.item {
        Some(pb::server_message::Item::Event(event)) => Some(event),
        _ => None,
    }
}
