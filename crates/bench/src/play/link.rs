//! A seat's `Connect` connection, over gRPC (`PlayerService/Connect`, a bidirectional stream on
//! a pooled HTTP/2 connection) or over a WebSocket of its own speaking the binary subprotocol:
//! requests go up one at a time, and each response comes down as the batch of server messages
//! the server wrote together.

use crate::connections::authed;
use crate::pb;
use crate::pb::player_service_client::PlayerServiceClient;
use futures_util::{SinkExt, StreamExt};
use prost::Message as _;
use std::net::SocketAddr;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tonic::transport::Channel;

/// The WebSocket subprotocol of `Connect`'s binary frames (the gateway's
/// `hidden_front_gateway::connect::SUBPROTOCOL`).
const SUBPROTOCOL: &str = "hiddenfront.connect.v1";

/// The WebSocket transport's read buffer, in bytes (the gateway's own is as small).
const READ_BUFFER: usize = 4096;

/// Why a link failed: the code the run's error counts name it by.
#[derive(Debug)]
pub(crate) struct LinkError(pub(crate) String);

/// One seat's connection.
pub(crate) enum Link {
    /// `PlayerService/Connect` on a pooled HTTP/2 connection.
    Grpc {
        requests: mpsc::Sender<pb::ConnectRequest>,
        responses: Box<tonic::Streaming<pb::ConnectResponse>>,
    },
    /// A WebSocket of the seat's own, binary frames.
    Ws(Box<WebSocketStream<MaybeTlsStream<TcpStream>>>),
}

impl Link {
    /// Opens `Connect` on `channel` as the player of `token`.
    pub(crate) async fn grpc(channel: Channel, token: &str) -> Result<Link, LinkError> {
        let (requests, queue) = mpsc::channel(16);
        let mut client = PlayerServiceClient::new(channel);
        let responses = client
            .connect(authed(token, ReceiverStream::new(queue)))
            .await
            .map_err(|status| LinkError(crate::connections::code_name(&status)))?
            .into_inner();
        Ok(Link::Grpc {
            requests,
            responses: Box::new(responses),
        })
    }

    /// Opens a binary WebSocket to the gateway's HTTP listener at `http` as the player of
    /// `token` (the `Authorization` header on the upgrade, Nagle off).
    pub(crate) async fn websocket(http: SocketAddr, token: &str) -> Result<Link, LinkError> {
        let mut request = format!("ws://{http}/v1/ws")
            .into_client_request()
            .map_err(|e| LinkError(format!("WS_REQUEST: {e}")))?;
        let headers = request.headers_mut();
        let bearer = format!("Bearer {token}")
            .parse()
            .map_err(|_| LinkError("WS_TOKEN".into()))?;
        headers.insert("authorization", bearer);
        headers.insert(
            "sec-websocket-protocol",
            SUBPROTOCOL
                .parse()
                .map_err(|_| LinkError("WS_PROTOCOL".into()))?,
        );
        // A small read buffer: the WebSocket layer zeroes the whole buffer before every read
        // (128 KiB by default), which would make the load generator pay for a memset per move.
        let config = WebSocketConfig::default().read_buffer_size(READ_BUFFER);
        let (socket, _) = tokio_tungstenite::connect_async_with_config(request, Some(config), true)
            .await
            .map_err(|_| LinkError("WS_CONNECT".into()))?;
        Ok(Link::Ws(Box::new(socket)))
    }

    /// Sends one request.
    pub(crate) async fn send(&mut self, request: pb::ConnectRequest) -> Result<(), LinkError> {
        match self {
            Link::Grpc { requests, .. } => requests
                .send(request)
                .await
                .map_err(|_| LinkError("STREAM_ENDED".into())),
            Link::Ws(socket) => socket
                .send(Message::Binary(request.encode_to_vec().into()))
                .await
                .map_err(|_| LinkError("WS_SEND".into())),
        }
    }

    /// The next batch of server messages; `Ok(None)` when the server ended the connection.
    pub(crate) async fn receive(&mut self) -> Result<Option<Vec<pb::ServerMessage>>, LinkError> {
        let response = match self {
            Link::Grpc { responses, .. } => match responses.message().await {
                Ok(Some(response)) => response,
                Ok(None) => return Ok(None),
                Err(status) => return Err(LinkError(crate::connections::code_name(&status))),
            },
            Link::Ws(socket) => loop {
                match socket.next().await {
                    Some(Ok(Message::Binary(bytes))) => {
                        break pb::ConnectResponse::decode(bytes)
                            .map_err(|_| LinkError("UNDECODABLE".into()))?;
                    }
                    Some(Ok(Message::Close(_))) | None => return Ok(None),
                    Some(Ok(_)) => continue,
                    Some(Err(_)) => return Err(LinkError("WS_RECEIVE".into())),
                }
            },
        };
        response
            .decode_messages()
            .map(Some)
            .map_err(|_| LinkError("UNDECODABLE".into()))
    }
}
