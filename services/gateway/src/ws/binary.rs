//! The binary WebSocket face of `Connect` (subprotocol `hiddenfront.connect.v1`): each frame
//! from the client one encoded `ConnectRequest`, each frame from the server one encoded
//! `ConnectResponse` holding every message that was ready together. The connection is the same
//! [`Connection`] the gRPC `Connect` runs; this module only moves frames, pings a silent client
//! and says goodbye with a close frame.
//!
//! A browser cannot set an `Authorization` header, so a connection upgraded without one
//! authenticates with its first frame, a `ConnectRequest` holding `authenticate`.

use super::WsConfig;
use super::closing::{CLOSE_GRACE, close_frame, refuse_and_close};
use super::codec::too_big;
use crate::auth::Player;
use crate::connect::{Closing, Connection, Writer, refusal};
use crate::gateway::Gateway;
use axum::extract::ws::{Message, WebSocket, close_code};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, Stream, StreamExt};
use hidden_front_api_error::{ApiError, Reason};
use hidden_front_proto::v1 as pb;
use prost::Message as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tonic::Status;

/// Serves one binary connection from its upgrade to its end.
pub(super) async fn serve(
    gateway: Gateway,
    config: WsConfig,
    mut socket: WebSocket,
    header_auth: Option<Result<Player, Status>>,
) {
    let player = match header_auth {
        Some(Ok(player)) => player,
        Some(Err(status)) => return refuse(&mut socket, 0, &status).await,
        None => match authenticate(&gateway, &config, &mut socket).await {
            Some(player) => player,
            None => return,
        },
    };
    tracing::debug!(player = %player.id, "binary WebSocket connection opened");
    let (sink, stream) = socket.split();
    let (connection, writer) = gateway.connection(player);
    let heard = Arc::new(Heard::new());
    let requests = requests(stream, config.max_message_bytes, Arc::clone(&heard));
    let reader = tokio::spawn(Arc::clone(&connection).serve(Box::pin(requests)));
    write(connection, writer, sink, &config, &heard).await;
    reader.abort();
}

/// When the client was last heard from (any frame, pongs included).
struct Heard {
    opened: Instant,
    last_ms: AtomicU64,
}

impl Heard {
    fn new() -> Heard {
        Heard {
            opened: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    fn now(&self) {
        let ms = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn silent_for(&self) -> Duration {
        let heard = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.opened.elapsed().saturating_sub(heard)
    }
}

/// The client's frames as requests: each binary frame decoded (refused when too big or not a
/// `ConnectRequest`), text frames refused, pings and pongs only counted as heard; ends with the
/// client's close or a broken socket.
fn requests(
    stream: SplitStream<WebSocket>,
    max_bytes: usize,
    heard: Arc<Heard>,
) -> impl Stream<Item = Result<pb::ConnectRequest, Status>> + Send {
    futures_util::stream::unfold(stream, move |mut stream| {
        let heard = Arc::clone(&heard);
        async move {
            loop {
                let frame = stream.next().await?;
                heard.now();
                let item = match frame {
                    Ok(Message::Binary(bytes)) if bytes.len() > max_bytes => {
                        Err(too_big(bytes.len(), max_bytes))
                    }
                    Ok(Message::Binary(bytes)) => decode(&bytes),
                    Ok(Message::Text(_)) => Err(ApiError::new(
                        Reason::MalformedRequest,
                        "this connection speaks the binary subprotocol: send each request as an encoded ConnectRequest in a binary frame",
                    )
                    .into()),
                    Ok(Message::Ping(_) | Message::Pong(_)) => continue,
                    Ok(Message::Close(_)) | Err(_) => return None,
                };
                return Some((item, stream));
            }
        }
    })
}

/// One binary frame as a `ConnectRequest`, or the refusal of a frame that is not one.
fn decode(bytes: &[u8]) -> Result<pb::ConnectRequest, Status> {
    pb::ConnectRequest::decode(bytes).map_err(|error| {
        ApiError::new(
            Reason::MalformedRequest,
            format!("the frame is not a valid ConnectRequest: {error}"),
        )
        .into()
    })
}

/// Writes the connection's batches as binary frames, pings the client and closes a silent one,
/// then closes the socket with the code that says why.
async fn write(
    connection: Arc<Connection>,
    mut writer: Writer,
    mut sink: SplitSink<WebSocket, Message>,
    config: &WsConfig,
    heard: &Heard,
) {
    let interval = config.ping_interval.max(Duration::from_millis(100));
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut idle = false;
    loop {
        let frame = tokio::select! {
            batch = writer.next() => match batch {
                Some(messages) => Message::Binary(pb::ConnectResponse { messages }.encode_to_vec().into()),
                None => break,
            },
            _ = ping.tick() => {
                if heard.silent_for() > interval * 3 {
                    idle = true;
                    connection.close(Closing::ClientGone);
                    continue;
                }
                Message::Ping(Default::default())
            }
        };
        if sink.send(frame).await.is_err() {
            connection.close(Closing::ClientGone);
            return;
        }
    }
    let (code, reason) = match (writer.reason(), idle) {
        (_, true) => (
            close_code::AWAY,
            format!(
                "nothing heard from the client for {} s",
                (interval * 3).as_secs()
            ),
        ),
        (Some(Closing::TooSlow), _) => (close_code::POLICY, "TOO_SLOW: see the goodbye".into()),
        (Some(Closing::Shutdown), _) => (close_code::AWAY, "SHUTTING_DOWN: see the goodbye".into()),
        _ => (close_code::NORMAL, String::new()),
    };
    let _ = tokio::time::timeout(
        CLOSE_GRACE,
        sink.send(Message::Close(Some(close_frame(code, &reason)))),
    )
    .await;
}

/// Waits for the `authenticate` frame of a connection upgraded without an `Authorization`
/// header, and answers it.
async fn authenticate(
    gateway: &Gateway,
    config: &WsConfig,
    socket: &mut WebSocket,
) -> Option<Player> {
    let first = loop {
        let frame = tokio::select! {
            frame = socket.recv() => frame,
            () = tokio::time::sleep(config.auth_timeout) => {
                let status = ApiError::new(
                    Reason::NotAuthenticated,
                    format!(
                        "no authenticate frame within {} s: send a ConnectRequest holding `authenticate` first",
                        config.auth_timeout.as_secs()
                    ),
                )
                .into();
                refuse(socket, 0, &status).await;
                return None;
            }
        };
        match frame {
            Some(Ok(Message::Binary(bytes))) if bytes.len() > config.max_message_bytes => {
                refuse(socket, 0, &too_big(bytes.len(), config.max_message_bytes)).await;
                return None;
            }
            Some(Ok(Message::Binary(bytes))) => break bytes,
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Text(_))) => {
                let status = ApiError::new(
                    Reason::NotAuthenticated,
                    "authenticate first with a binary frame: a ConnectRequest holding `authenticate`",
                )
                .into();
                refuse(socket, 0, &status).await;
                return None;
            }
            Some(Ok(Message::Close(_)) | Err(_)) | None => return None,
        }
    };
    let (id, answer) = match decode(&first) {
        Ok(pb::ConnectRequest {
            request_id,
            request: Some(pb::connect_request::Request::Authenticate(auth)),
        }) => (request_id, gateway.authenticate_token(&auth.token)),
        Ok(request) => (
            request.request_id,
            Err(ApiError::new(
                Reason::NotAuthenticated,
                "the first frame must be a ConnectRequest holding `authenticate` (or send `Authorization: Bearer <token>` on the upgrade request)",
            )
            .into()),
        ),
        Err(status) => (0, Err(status)),
    };
    match answer {
        Ok(player) => {
            let answer = crate::connect::answer(
                id,
                pb::answer::Response::Authenticate(pb::AuthenticateResponse {
                    player: player.id.clone(),
                    guest: player.guest,
                }),
            );
            let frame = pb::ConnectResponse {
                messages: vec![answer],
            };
            if socket
                .send(Message::Binary(frame.encode_to_vec().into()))
                .await
                .is_err()
            {
                return None;
            }
            Some(player)
        }
        Err(status) => {
            refuse(socket, id, &status).await;
            None
        }
    }
}

/// Refuses request `id` with `status` and closes (the refusal, then [`refuse_and_close`]).
async fn refuse(socket: &mut WebSocket, id: u64, status: &Status) {
    let frame = pb::ConnectResponse {
        messages: vec![refusal(id, status)],
    };
    refuse_and_close(
        socket,
        Message::Binary(frame.encode_to_vec().into()),
        status,
    )
    .await;
}
