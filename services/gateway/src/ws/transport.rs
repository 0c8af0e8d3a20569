//! The WebSocket transport: the HTTP server on its listener, the upgrade (connection cap, the
//! optional `Authorization` header, the size limits), the `auth` handshake of a connection that
//! sent no header, and the frame loop that reads the client's frames until the connection
//! closes, then waits (bounded) for the client's close frame and the writer's goodbye.

use super::closing::{CLOSE_GRACE, Closing, close_frame, refuse_and_close};
use super::codec::{Envelope, Op, parse, too_big};
use super::connection::Conn;
use super::messages::{ErrorMessage, result_text, to_text};
use super::ops::read_text;
use super::writer::write_loop;
use super::{WS_PATH, WsConfig, binary};
use crate::auth::Player;
use crate::connect::SUBPROTOCOL;
use crate::gateway::Gateway;
use axum::Router;
use axum::extract::State;
use axum::extract::connect_info::Connected;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade, close_code};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::serve::{IncomingStream, Listener, ListenerExt};
use futures_util::StreamExt;
use hidden_front_api_error::{ApiError, Reason};
use hidden_front_conn_guard::{ConnectionInfo, GuardedListener, InFlightLayer};
use serde_json::Value;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tonic::Status;

/// The read buffer of each connection's WebSocket layer, in bytes.
const READ_BUFFER: usize = 4096;

/// How long [`serve`] waits for open connections to say goodbye after the shutdown signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Serves the WebSocket API on `listener` until `shutdown` resolves. Then it stops accepting,
/// tells every open connection to reconnect elsewhere (a `reconnect` item per subscription and
/// close code 1001) and waits a few seconds for them to finish.
pub async fn serve<F>(
    listener: TcpListener,
    gateway: Gateway,
    config: WsConfig,
    shutdown: F,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    serve_with(listener, gateway, config, Router::new(), shutdown).await
}

/// [`serve`], with `routes` (the page, guest sign-in, the server time: [`crate::http::routes`])
/// beside `/v1/ws` on the same listener. Requests carry the client's address
/// (`ConnectInfo<SocketAddr>`), which the guest endpoint's rate limit is keyed by.
pub async fn serve_with<F>(
    listener: TcpListener,
    gateway: Gateway,
    config: WsConfig,
    routes: Router,
    shutdown: F,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    // Answers are small and latency-bound: never let Nagle's algorithm hold one back.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    serve_on::<_, SocketAddr, _>(listener, gateway, config, routes, |app| app, shutdown).await
}

/// [`serve_with`] on a public port's [`GuardedListener`]: the port's handshake deadline, idle
/// timeout and caps apply (hidden-front-conn-guard), and each connection's requests are counted
/// in flight, so a page load or a WebSocket never counts as idle.
pub async fn serve_guarded<F>(
    listener: GuardedListener,
    gateway: Gateway,
    config: WsConfig,
    routes: Router,
    shutdown: F,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    serve_on::<_, ConnectionInfo, _>(
        listener,
        gateway,
        config,
        routes,
        |app| app.layer(InFlightLayer),
        shutdown,
    )
    .await
}

/// The HTTP server on any listener whose connections `C` describes; `wrap` adds the layers
/// around the whole router.
async fn serve_on<L, C, F>(
    listener: L,
    gateway: Gateway,
    config: WsConfig,
    routes: Router,
    wrap: impl FnOnce(Router) -> Router,
    shutdown: F,
) -> std::io::Result<()>
where
    L: Listener<Addr = SocketAddr>,
    L::Io: Send + Unpin,
    C: for<'a> Connected<IncomingStream<'a, L>> + Clone + Send + Sync + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let stop = CancellationToken::new();
    let max_connections = config
        .max_connections
        .min(Semaphore::MAX_PERMITS)
        .min(u32::MAX as usize);
    let state = Arc::new(WsState {
        gateway,
        connections: Arc::new(Semaphore::new(max_connections)),
        max_connections,
        config,
        stop: stop.clone(),
    });
    let app = Router::new()
        .route(WS_PATH, get(upgrade))
        .with_state(Arc::clone(&state))
        .merge(routes);
    axum::serve(
        listener,
        wrap(app).into_make_service_with_connect_info::<C>(),
    )
    .with_graceful_shutdown(async move {
        shutdown.await;
        stop.cancel();
    })
    .await?;
    // Upgraded connections live outside axum's bookkeeping: wait until each has closed (every
    // one holds a permit until then), but not forever.
    let all = u32::try_from(max_connections).unwrap_or(u32::MAX);
    if all > 0 {
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, state.connections.acquire_many(all)).await;
    }
    Ok(())
}

/// What every connection shares.
struct WsState {
    pub(super) gateway: Gateway,
    pub(super) config: WsConfig,
    pub(super) connections: Arc<Semaphore>,
    pub(super) max_connections: usize,
    /// Cancelled when the server shuts down.
    pub(super) stop: CancellationToken,
}

/// `GET /v1/ws`: checks the connection cap and the optional `Authorization` header, then
/// upgrades.
async fn upgrade(
    State(state): State<Arc<WsState>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    if state.stop.is_cancelled() {
        return unavailable("the server is shutting down; connect to another gateway");
    }
    let Ok(permit) = Arc::clone(&state.connections).try_acquire_owned() else {
        tracing::warn!(
            max = state.max_connections,
            "WebSocket upgrade refused: connection cap reached"
        );
        return unavailable(&format!(
            "this gateway holds its maximum of {} WebSocket connections; retry later or on another gateway",
            state.max_connections
        ));
    };
    // Any `Authorization` header decides (two of them are refused); none leaves it to the
    // `auth` message.
    let authorization = headers.get_all(header::AUTHORIZATION);
    let header_auth = headers.contains_key(header::AUTHORIZATION).then(|| {
        state
            .gateway
            .authenticate_headers(authorization.iter().map(HeaderValue::as_bytes))
    });
    let hard_limit = state.config.max_message_bytes.saturating_mul(4).max(1024);
    // A client that offers the binary subprotocol gets it: `Connect`'s messages as protobuf.
    let binary = offers_binary(&headers);
    let ws = if binary {
        ws.protocols([SUBPROTOCOL])
    } else {
        ws
    };
    ws.max_message_size(hard_limit)
        .max_frame_size(hard_limit)
        // The WebSocket layer zeroes a whole read buffer of this size before every read of the
        // socket (128 KiB by default: three quarters of a binary move's instructions were that
        // memset). Players' messages are small; a larger one grows the buffer as it arrives.
        .read_buffer_size(READ_BUFFER)
        .on_upgrade(move |socket| async move {
            if binary {
                let _permit = permit;
                binary::serve(
                    state.gateway.clone(),
                    state.config.clone(),
                    socket,
                    header_auth,
                )
                .await;
            } else {
                connection(state, socket, header_auth, permit).await;
            }
        })
}

/// Whether the upgrade request offers the binary subprotocol among its `Sec-WebSocket-Protocol`
/// values.
fn offers_binary(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|protocol| protocol.trim() == SUBPROTOCOL)
}

fn unavailable(reason: &str) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, HeaderValue::from_static("5"))],
        reason.to_string(),
    )
        .into_response()
}

/// One connection, from the upgrade to the end.
async fn connection(
    state: Arc<WsState>,
    mut socket: WebSocket,
    header_auth: Option<Result<Player, Status>>,
    _permit: OwnedSemaphorePermit,
) {
    let player = match header_auth {
        Some(Ok(player)) => player,
        Some(Err(status)) => {
            refuse(&mut socket, &Value::Null, &status).await;
            return;
        }
        None => match authenticate(&state, &mut socket).await {
            Some(player) => player,
            None => return,
        },
    };
    tracing::debug!(player = %player.id, "WebSocket connection opened");
    let (sink, mut stream) = socket.split();
    let (out, queue) = mpsc::channel(state.config.outbound_queue.max(1));
    let conn = Arc::new(Conn::new(
        state.gateway.clone(),
        state.config.clone(),
        player,
        out,
    ));
    let mut writer = tokio::spawn(write_loop(Arc::clone(&conn), sink, queue));
    let mut tasks = JoinSet::new();
    let mut closing = conn.closing.subscribe();
    loop {
        tokio::select! {
            biased;
            () = until_closing(&mut closing) => break,
            () = state.stop.cancelled() => conn.close(Closing::Shutdown),
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            frame = stream.next() => {
                conn.heard();
                match frame {
                    Some(Ok(Message::Text(text))) => read_text(&conn, text.as_str(), &mut tasks).await,
                    Some(Ok(Message::Binary(_))) => {
                        let status = ApiError::new(
                            Reason::MalformedRequest,
                            "binary frames are not read: send each request as a JSON text frame",
                        )
                        .into();
                        conn.send_error(&Value::Null, &status).await;
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                    Some(Ok(Message::Close(_))) | None => conn.close(Closing::ClientGone),
                    Some(Err(error)) => conn.close(Closing::read_failed(&error)),
                }
            }
        }
    }
    // Nothing more is answered or forwarded; the writer says goodbye from what it has written.
    drop(tasks);
    conn.stop_forwarders();
    let reason = conn.reason();
    tracing::debug!(player = %conn.player.id, ?reason, "WebSocket connection closing");
    if reason.awaits_client_close() {
        // Read until the client's close frame: closing a socket with unread input resets it, and
        // the client could lose the last items (the resume hints) with it.
        let _ = tokio::time::timeout(CLOSE_GRACE, async {
            while let Some(Ok(frame)) = stream.next().await {
                if matches!(frame, Message::Close(_)) {
                    break;
                }
            }
        })
        .await;
    }
    if tokio::time::timeout(CLOSE_GRACE, &mut writer)
        .await
        .is_err()
    {
        writer.abort();
    }
    conn.subs.lock().map.clear();
}

/// Resolves once the connection is closing (the guard `wait_for` returns is not `Send`).
async fn until_closing(closing: &mut watch::Receiver<Option<Closing>>) {
    let _ = closing.wait_for(Option::is_some).await;
}

/// Waits for the `auth` message of a connection that sent no `Authorization` header.
async fn authenticate(state: &WsState, socket: &mut WebSocket) -> Option<Player> {
    let deadline = tokio::time::sleep(state.config.auth_timeout);
    tokio::pin!(deadline);
    loop {
        let frame = tokio::select! {
            frame = socket.recv() => frame,
            () = &mut deadline => {
                let status = ApiError::new(
                    Reason::NotAuthenticated,
                    format!(
                        "no auth message within {} s: send {{\"type\":\"auth\",\"token\":\"<token>\"}} first",
                        state.config.auth_timeout.as_secs()
                    ),
                )
                .into();
                refuse(socket, &Value::Null, &status).await;
                return None;
            }
            () = state.stop.cancelled() => {
                let frame = close_frame(close_code::AWAY, "the server is shutting down; reconnect");
                let _ = socket.send(Message::Close(Some(frame))).await;
                return None;
            }
        };
        let text = match frame {
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Binary(_))) => {
                let status = ApiError::new(
                    Reason::NotAuthenticated,
                    "authenticate first with a JSON text frame {\"type\":\"auth\",\"token\":\"<token>\"}",
                )
                .into();
                refuse(socket, &Value::Null, &status).await;
                return None;
            }
            Some(Ok(Message::Close(_))) | None => return None,
            Some(Err(error)) => {
                if let Some(frame) = Closing::read_failed(&error).read_error_frame() {
                    let _ =
                        tokio::time::timeout(CLOSE_GRACE, socket.send(Message::Close(Some(frame))))
                            .await;
                }
                return None;
            }
        };
        if text.len() > state.config.max_message_bytes {
            let status = too_big(text.len(), state.config.max_message_bytes);
            refuse(socket, &Value::Null, &status).await;
            return None;
        }
        let (id, status) = match parse(text.as_str()) {
            Ok(Envelope {
                id,
                op: Op::Auth,
                token,
                ..
            }) => match state.gateway.authenticate_token(&token) {
                Ok(player) => {
                    let response =
                        serde_json::json!({ "player": player.id, "guest": player.guest });
                    let answer = result_text(&id, &response);
                    if socket.send(Message::Text(answer.into())).await.is_err() {
                        return None;
                    }
                    return Some(player);
                }
                Err(status) => (id, status),
            },
            Ok(envelope) => (
                envelope.id,
                ApiError::new(
                    Reason::NotAuthenticated,
                    format!(
                        "{:?} before authentication: {NOT_AUTHENTICATED}",
                        envelope.op.name()
                    ),
                )
                .into(),
            ),
            Err(bad) => (
                bad.id,
                ApiError::new(
                    Reason::NotAuthenticated,
                    format!("{}; {NOT_AUTHENTICATED}", bad.message),
                )
                .into(),
            ),
        };
        refuse(socket, &id, &status).await;
        return None;
    }
}

const NOT_AUTHENTICATED: &str = "the first message must be {\"type\":\"auth\",\"token\":\"<token>\"} \
     (or send `Authorization: Bearer <token>` on the upgrade request)";

/// Answers `status` to the request `id` and closes the connection (the error item, then
/// [`refuse_and_close`]).
async fn refuse(socket: &mut WebSocket, id: &Value, status: &Status) {
    let error = to_text(&ErrorMessage::new(id, status));
    refuse_and_close(socket, Message::Text(error.into()), status).await;
}
