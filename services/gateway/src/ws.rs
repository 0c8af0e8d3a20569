//! The WebSocket face of the gateway: `GET /v1/ws` on the HTTP listener, for browsers and any
//! client that would rather not speak gRPC. Every operation is the same [`Gateway`] call the gRPC
//! `PlayerService` makes, and every request and response is the same proto message, written in
//! the canonical proto3 JSON mapping, so the two APIs cannot drift apart.
//!
//! The protocol (`docs/websocket.md` has it in full, with a complete example session):
//! - Authentication: an `Authorization: Bearer` header on the upgrade request, or a first message
//!   `{"type":"auth","token":"..."}` (browsers cannot set headers). Nothing else is read before;
//!   a bad token is answered with an `UNAUTHENTICATED` error and the connection is closed.
//! - Requests: `{"id": <number or string>, "type": "<op>", "request": <proto JSON>}`; answers
//!   `{"id", "type": "result", "response"}` or `{"id", "type": "error", "code", "message"}` with
//!   gRPC code names. Requests run concurrently: match answers by `id`.
//! - Subscriptions (several per connection, bounded): `event`, `reconnect` and `end` items tagged
//!   with the id of the `subscribe` request.
//!
//! Limits keep one client from hurting others: a message size limit, a cap on connections per
//! process, on subscriptions and on requests in flight per connection, and a bounded outbound
//! queue per connection. A client that stops reading is closed with resume hints after
//! [`WsConfig::stall_timeout`]; nothing it does ever blocks the game hubs or other connections.

use crate::auth::Player;
use crate::gateway::{Action, Gateway};
use axum::Router;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::serve::ListenerExt;
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use hidden_front_api_error::{ApiError, ErrorSummary, MAX_MESSAGE_BYTES, Reason, brief, quote};
use hidden_front_proto::v1 as pb;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::mpsc::error::SendTimeoutError;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::task::{AbortHandle, JoinSet};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Status};

/// The path of the WebSocket endpoint.
pub const WS_PATH: &str = "/v1/ws";

/// How long a closing connection may take to send its last items and its close frame, and to
/// read the client's close frame back, before the socket is simply dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(3);

/// How long [`serve`] waits for open connections to say goodbye after the shutdown signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The largest close reason RFC 6455 allows (125 bytes of payload minus the 2-byte code).
const MAX_CLOSE_REASON: usize = 123;

/// Settings of the WebSocket API.
#[derive(Debug, Clone)]
pub struct WsConfig {
    /// Open WebSocket connections this process accepts at most; past it the upgrade is refused
    /// with `503 Service Unavailable`, so a flood of idle sockets cannot exhaust the process.
    pub max_connections: usize,
    /// Subscriptions one connection may hold at once (a client watching a few games at most).
    pub max_subscriptions: usize,
    /// Largest message read, in bytes: larger ones are answered `OUT_OF_RANGE` (the same limit
    /// as the gRPC port). Messages over four times this are cut off by the WebSocket layer
    /// itself, which closes the connection with code 1009.
    pub max_message_bytes: usize,
    /// Requests of one connection being answered at once; more are refused with
    /// `RESOURCE_EXHAUSTED` instead of queueing without bound.
    pub max_requests_in_flight: usize,
    /// Items queued for one connection's socket. A full queue makes producers wait, at most
    /// [`WsConfig::stall_timeout`].
    pub outbound_queue: usize,
    /// How long a full outbound queue may stay full before the client is judged not to be
    /// reading: the connection is then closed with resume hints. Long enough for any healthy
    /// client to catch up a whole game's backlog, short enough to free the slot of a dead one.
    pub stall_timeout: Duration,
    /// How long a connection without an `Authorization` header has to send its `auth` message.
    pub auth_timeout: Duration,
    /// Interval of the server's pings. A client from which nothing (not even a pong) arrives for
    /// three intervals is closed: a vanished client must not hold its slot and its presence.
    pub ping_interval: Duration,
}

impl Default for WsConfig {
    fn default() -> Self {
        WsConfig {
            max_connections: 10_000,
            max_subscriptions: 16,
            max_message_bytes: 64 * 1024,
            max_requests_in_flight: 32,
            outbound_queue: 256,
            stall_timeout: Duration::from_secs(10),
            auth_timeout: Duration::from_secs(10),
            ping_interval: Duration::from_secs(20),
        }
    }
}

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
    let (stop_tx, stop_rx) = watch::channel(false);
    let max_connections = config
        .max_connections
        .min(Semaphore::MAX_PERMITS)
        .min(u32::MAX as usize);
    let state = Arc::new(WsState {
        gateway,
        connections: Arc::new(Semaphore::new(max_connections)),
        max_connections,
        config,
        stop: stop_rx,
    });
    let app = Router::new()
        .route(WS_PATH, get(upgrade))
        .with_state(Arc::clone(&state));
    // Answers are small and latency-bound: never let Nagle's algorithm hold one back.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            let _ = stop_tx.send(true);
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
    gateway: Gateway,
    config: WsConfig,
    connections: Arc<Semaphore>,
    max_connections: usize,
    /// Becomes `true` when the server shuts down.
    stop: watch::Receiver<bool>,
}

/// `GET /v1/ws`: checks the connection cap and the optional `Authorization` header, then
/// upgrades.
async fn upgrade(
    State(state): State<Arc<WsState>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    if *state.stop.borrow() {
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
    ws.max_message_size(hard_limit)
        .max_frame_size(hard_limit)
        .on_upgrade(move |socket| connection(state, socket, header_auth, permit))
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
    let mut stop = state.stop.clone();
    let player = match header_auth {
        Some(Ok(player)) => player,
        Some(Err(status)) => {
            refuse(&mut socket, &Value::Null, &status).await;
            return;
        }
        None => match authenticate(&state, &mut socket, &mut stop).await {
            Some(player) => player,
            None => return,
        },
    };
    tracing::debug!(player = %player.id, "WebSocket connection opened");
    let (sink, mut stream) = socket.split();
    let (out, queue) = mpsc::channel(state.config.outbound_queue.max(1));
    let conn = Arc::new(Conn {
        gateway: state.gateway.clone(),
        config: state.config.clone(),
        player,
        out,
        closing: watch::channel(None).0,
        subs: Mutex::new(Subs::default()),
        opened: Instant::now(),
        last_heard_ms: AtomicU64::new(0),
    });
    let mut writer = tokio::spawn(write_loop(Arc::clone(&conn), sink, queue));
    let mut tasks = JoinSet::new();
    let mut closing = conn.closing.subscribe();
    loop {
        tokio::select! {
            biased;
            () = until_closing(&mut closing) => break,
            () = until_stopped(&mut stop) => conn.close(Closing::Shutdown),
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
    conn.subs.lock().expect("subscription lock").map.clear();
}

/// Resolves once the connection is closing (the guard `wait_for` returns is not `Send`).
async fn until_closing(closing: &mut watch::Receiver<Option<Closing>>) {
    let _ = closing.wait_for(Option::is_some).await;
}

/// Resolves once the server shuts down (or the signal is gone, which means the same).
async fn until_stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopped| *stopped).await;
}

/// Waits for the `auth` message of a connection that sent no `Authorization` header.
async fn authenticate(
    state: &WsState,
    socket: &mut WebSocket,
    stop: &mut watch::Receiver<bool>,
) -> Option<Player> {
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
            () = until_stopped(stop) => {
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

/// Answers `status` to the request `id` and closes the connection: error item, close frame
/// (1009 for a message too big, else 1008, policy violation), then reads until the client's
/// close frame (bounded) so that the error is not lost to a connection reset.
async fn refuse(socket: &mut WebSocket, id: &Value, status: &Status) {
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        let error = to_text(&ErrorMessage::new(id, status));
        if socket.send(Message::Text(error.into())).await.is_err() {
            return;
        }
        let reason = format!("{}: {}", code_name(status.code()), status.message());
        let code = match status.code() {
            Code::OutOfRange => close_code::SIZE,
            _ => close_code::POLICY,
        };
        if socket
            .send(Message::Close(Some(close_frame(code, &reason))))
            .await
            .is_err()
        {
            return;
        }
        while let Some(Ok(frame)) = socket.recv().await {
            if matches!(frame, Message::Close(_)) {
                break;
            }
        }
    })
    .await;
}

/// Why a connection is closing; the first reason wins.
#[derive(Debug, Clone)]
enum Closing {
    /// The client closed, or the socket broke: only a close reply can still go out.
    ClientGone,
    /// The outbound queue stayed full for the stall timeout: the client is not reading.
    Overflow,
    /// The server is shutting down.
    Shutdown,
    /// Nothing arrived from the client (not even a pong) for three ping intervals.
    Idle,
    /// The WebSocket layer refused a frame or message over its hard size limit.
    TooBig(String),
    /// A text frame was not valid UTF-8 (RFC 6455 8.1: close with 1007).
    InvalidText(String),
    /// The client broke the WebSocket protocol.
    ReadFailed(String),
}

impl Closing {
    /// Why reading failed, from the WebSocket layer's error (which axum wraps).
    fn read_failed(error: &axum::Error) -> Closing {
        use tokio_tungstenite::tungstenite::Error as WsError;

        let text = error.to_string();
        match std::error::Error::source(error).and_then(|e| e.downcast_ref::<WsError>()) {
            Some(WsError::Capacity(_)) => Closing::TooBig(text),
            Some(WsError::Utf8(_)) => Closing::InvalidText(text),
            _ => Closing::ReadFailed(text),
        }
    }

    /// The close frame answering a read error before authentication (the writer's goodbye
    /// answers those after it, with the same codes); `None` for reasons that are not read errors.
    fn read_error_frame(&self) -> Option<CloseFrame> {
        let (code, error) = match self {
            Closing::TooBig(error) => (close_code::SIZE, error),
            Closing::InvalidText(error) => (close_code::INVALID, error),
            Closing::ReadFailed(error) => (close_code::PROTOCOL, error),
            _ => return None,
        };
        Some(close_frame(code, error))
    }

    /// Whether the server closes first and should read the client's close frame back.
    fn awaits_client_close(&self) -> bool {
        matches!(self, Closing::Overflow | Closing::Shutdown | Closing::Idle)
    }
}

/// One authenticated connection, shared by its reader, writer, request tasks and forwarders.
struct Conn {
    gateway: Gateway,
    config: WsConfig,
    player: Player,
    out: mpsc::Sender<Outbound>,
    closing: watch::Sender<Option<Closing>>,
    subs: Mutex<Subs>,
    opened: Instant,
    last_heard_ms: AtomicU64,
}

/// The subscriptions of a connection, by the JSON text of their id.
#[derive(Default)]
struct Subs {
    map: HashMap<String, Sub>,
    next_token: u64,
}

/// One subscription.
struct Sub {
    /// Distinguishes this subscription from a later one that reuses its id.
    token: u64,
    /// The client's id of the `subscribe` request, echoed on every item.
    id: Value,
    cell: Arc<SubCell>,
    /// The forwarder, once the subscription runs.
    task: Option<AbortHandle>,
}

/// What the writer and the forwarder of one subscription share.
struct SubCell {
    /// Set by `unsubscribe`: events still queued are not written.
    cancelled: AtomicBool,
    /// The first sequence number not yet written to the socket: the resume hint.
    next_seq: AtomicU64,
}

/// One item for the socket.
struct Outbound {
    text: String,
    /// For events: the subscription and the event's seq, to skip cancelled subscriptions and to
    /// keep resume hints exact.
    event: Option<(Arc<SubCell>, u64)>,
}

impl Outbound {
    fn plain(text: String) -> Outbound {
        Outbound { text, event: None }
    }
}

impl Conn {
    /// Starts closing for `reason` unless already closing.
    fn close(&self, reason: Closing) {
        self.closing.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(reason);
                true
            } else {
                false
            }
        });
    }

    fn reason(&self) -> Closing {
        self.closing.borrow().clone().unwrap_or(Closing::ClientGone)
    }

    fn heard(&self) {
        let ms = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_heard_ms.store(ms, Ordering::Relaxed);
    }

    fn silent_for(&self) -> Duration {
        let heard = Duration::from_millis(self.last_heard_ms.load(Ordering::Relaxed));
        self.opened.elapsed().saturating_sub(heard)
    }

    /// Queues an item, waiting at most the stall timeout for room; a queue that stays full
    /// closes the connection (the client is not reading). `false` when nothing more should be
    /// queued.
    async fn enqueue(&self, item: Outbound) -> bool {
        if self.closing.borrow().is_some() {
            return false;
        }
        match self.out.send_timeout(item, self.config.stall_timeout).await {
            Ok(()) => true,
            Err(SendTimeoutError::Timeout(_)) => {
                tracing::warn!(
                    player = %self.player.id,
                    "WebSocket client is not reading; closing it with resume hints"
                );
                self.close(Closing::Overflow);
                false
            }
            Err(SendTimeoutError::Closed(_)) => false,
        }
    }

    async fn send_result(&self, id: &Value, response: Value) {
        self.enqueue(Outbound::plain(result_text(id, &response)))
            .await;
    }

    async fn send_error(&self, id: &Value, status: &Status) {
        self.enqueue(Outbound::plain(to_text(&ErrorMessage::new(id, status))))
            .await;
    }

    /// Aborts every forwarder; the entries stay for the writer's resume hints.
    fn stop_forwarders(&self) {
        let subs = self.subs.lock().expect("subscription lock");
        for sub in subs.map.values() {
            if let Some(task) = &sub.task {
                task.abort();
            }
        }
    }

    /// `(subscription id, resume_from_seq)` of every subscription.
    fn resume_hints(&self) -> Vec<(Value, u64)> {
        let subs = self.subs.lock().expect("subscription lock");
        let mut hints: Vec<(Value, u64)> = subs
            .map
            .values()
            .map(|sub| (sub.id.clone(), sub.cell.next_seq.load(Ordering::Relaxed)))
            .collect();
        hints.sort_by_key(|(id, _)| id.to_string());
        hints
    }

    /// Answers one request (any but `auth` and `unsubscribe`).
    async fn run_request(self: Arc<Self>, id: Value, request: Request) {
        let request = match request {
            Request::Subscribe(request) => return self.subscribe(id, request).await,
            Request::WatchLobby(request) => return self.watch_lobby(id, request).await,
            request => request,
        };
        match self.answer(&id, request).await {
            Ok(text) => {
                self.enqueue(Outbound::plain(text)).await;
            }
            Err(status) => self.send_error(&id, &status).await,
        }
    }

    /// The `result` message of a unary request, its `response` the proto response as JSON.
    async fn answer(&self, id: &Value, request: Request) -> Result<String, Status> {
        let gateway = &self.gateway;
        let player = &self.player;
        match request {
            Request::GetGame(r) => Ok(result_text(id, &gateway.get_game(player, r).await?)),
            Request::ListMyGames(r) => {
                Ok(result_text(id, &gateway.list_my_games(player, r).await?))
            }
            Request::LegalMoves(r) => Ok(result_text(id, &gateway.legal_moves(player, r).await?)),
            Request::Reshuffle(r) => {
                let result = Some(gateway.act(player, r.context, Action::Reshuffle).await?);
                Ok(result_text(id, &pb::ReshuffleResponse { result }))
            }
            Request::Swap(r) => {
                let action = Action::Swap(r.square_a, r.square_b);
                let result = Some(gateway.act(player, r.context, action).await?);
                Ok(result_text(id, &pb::SwapResponse { result }))
            }
            Request::Deploy(r) => {
                let action = Action::Deploy(r.placements);
                let result = Some(gateway.act(player, r.context, action).await?);
                Ok(result_text(id, &pb::DeployResponse { result }))
            }
            Request::Confirm(r) => {
                let result = Some(gateway.act(player, r.context, Action::Confirm).await?);
                Ok(result_text(id, &pb::ConfirmResponse { result }))
            }
            Request::Play(r) => {
                let action = Action::Play(r.r#move);
                let result = Some(gateway.act(player, r.context, action).await?);
                Ok(result_text(id, &pb::PlayResponse { result }))
            }
            Request::ProposeDraw(r) => {
                let action = Action::ProposeDraw;
                let result = Some(gateway.act(player, r.context, action).await?);
                Ok(result_text(id, &pb::ProposeDrawResponse { result }))
            }
            Request::RespondDraw(r) => {
                let action = Action::RespondDraw(r.accept);
                let result = Some(gateway.act(player, r.context, action).await?);
                Ok(result_text(id, &pb::RespondDrawResponse { result }))
            }
            Request::Concede(r) => {
                let result = Some(gateway.act(player, r.context, Action::Concede).await?);
                Ok(result_text(id, &pb::ConcedeResponse { result }))
            }
            Request::FindMatch(r) => Ok(result_text(id, &gateway.find_match(player, r).await?)),
            Request::CancelMatch(r) => Ok(result_text(id, &gateway.cancel_match(player, r).await?)),
            Request::CreateInvite(r) => {
                Ok(result_text(id, &gateway.create_invite(player, r).await?))
            }
            Request::AcceptInvite(r) => {
                Ok(result_text(id, &gateway.accept_invite(player, r).await?))
            }
            Request::CancelInvite(r) => {
                Ok(result_text(id, &gateway.cancel_invite(player, r).await?))
            }
            Request::PlayComputer(r) => {
                Ok(result_text(id, &gateway.play_computer(player, r).await?))
            }
            Request::GetMyRating(r) => {
                Ok(result_text(id, &gateway.get_my_rating(player, r).await?))
            }
            Request::Auth(_)
            | Request::Subscribe(_)
            | Request::Unsubscribe(_)
            | Request::WatchLobby(_) => {
                Err(ApiError::new(Reason::Internal, "this op is not answered here").into())
            }
        }
    }

    /// `subscribe`: reserves the id, opens the gateway stream, answers, then forwards.
    async fn subscribe(self: Arc<Self>, id: Value, request: pb::SubscribeRequest) {
        let (key, token, cell) = match self.reserve(&id, request.from_seq.max(1)) {
            Ok(reserved) => reserved,
            Err(status) => return self.send_error(&id, &status).await,
        };
        let stream = match self.gateway.subscribe(&self.player, request).await {
            Ok(stream) => stream,
            Err(status) => {
                self.remove_sub(&key, token);
                return self.send_error(&id, &status).await;
            }
        };
        self.start(id, key, token, cell, move |conn, id, key, token, cell| {
            tokio::spawn(conn.forward(id, key, token, cell, stream))
        })
        .await;
    }

    /// Reserves subscription id `id` on this connection (its first wanted position is
    /// `first_seq`): refused if the id is in use or the connection holds its maximum.
    fn reserve(&self, id: &Value, first_seq: u64) -> Result<(String, u64, Arc<SubCell>), Status> {
        let key = id.to_string();
        let cell = Arc::new(SubCell {
            cancelled: AtomicBool::new(false),
            next_seq: AtomicU64::new(first_seq),
        });
        let mut subs = self.subs.lock().expect("subscription lock");
        if subs.map.contains_key(&key) {
            return Err(ApiError::new(
                Reason::SubscriptionExists,
                format!(
                    "subscription {} is open; use a new id, or unsubscribe it first",
                    quote(&key)
                ),
            )
            .into());
        }
        if subs.map.len() >= self.config.max_subscriptions {
            return Err(ApiError::new(
                Reason::TooManyStreams,
                format!(
                    "this connection holds its maximum of {} subscriptions; unsubscribe one first",
                    self.config.max_subscriptions
                ),
            )
            .into());
        }
        subs.next_token += 1;
        let token = subs.next_token;
        subs.map.insert(
            key.clone(),
            Sub {
                token,
                id: id.clone(),
                cell: Arc::clone(&cell),
                task: None,
            },
        );
        Ok((key, token, cell))
    }

    /// Answers a reserved subscription's request and starts its forwarder (`spawn`), unless it
    /// was unsubscribed meanwhile or the connection is closing.
    async fn start(
        self: Arc<Self>,
        id: Value,
        key: String,
        token: u64,
        cell: Arc<SubCell>,
        spawn: impl FnOnce(Arc<Self>, Value, String, u64, Arc<SubCell>) -> tokio::task::JoinHandle<()>,
    ) {
        if cell.cancelled.load(Ordering::Relaxed) {
            let status = ApiError::new(
                Reason::Unsubscribed,
                "unsubscribed before the subscription started",
            )
            .into();
            return self.send_error(&id, &status).await;
        }
        // The answer goes out before the first event: the forwarder starts after it is queued.
        if !self
            .enqueue(Outbound::plain(result_text(
                &id,
                &Value::Object(Default::default()),
            )))
            .await
        {
            return;
        }
        let mut subs = self.subs.lock().expect("subscription lock");
        // Checked under the lock that `stop_forwarders` takes after the close began: a forwarder
        // is either started before it (and stopped by it) or not at all.
        if self.closing.borrow().is_some() {
            return;
        }
        if let Some(sub) = subs.map.get_mut(&key).filter(|sub| sub.token == token) {
            let task = spawn(Arc::clone(&self), id, key, token, cell);
            sub.task = Some(task.abort_handle());
        }
    }

    /// `watch_lobby`: a subscription to the player's lobby events. Its items are
    /// `{"type": "lobby", "subscription", "event"}`; its resume hint (a `reconnect` item's
    /// `resume_from_seq`) is the `after_seq` to watch again with.
    async fn watch_lobby(self: Arc<Self>, id: Value, request: pb::WatchLobbyRequest) {
        let (key, token, cell) = match self.reserve(&id, request.after_seq) {
            Ok(reserved) => reserved,
            Err(status) => return self.send_error(&id, &status).await,
        };
        let stream = match self.gateway.watch_lobby(&self.player, request).await {
            Ok(stream) => stream,
            Err(status) => {
                self.remove_sub(&key, token);
                return self.send_error(&id, &status).await;
            }
        };
        self.start(id, key, token, cell, move |conn, id, key, token, cell| {
            tokio::spawn(conn.forward_lobby(id, key, token, cell, stream))
        })
        .await;
    }

    /// Copies a lobby stream to the socket until it ends, then says `end`.
    async fn forward_lobby(
        self: Arc<Self>,
        id: Value,
        key: String,
        token: u64,
        cell: Arc<SubCell>,
        mut stream: ReceiverStream<Result<pb::WatchLobbyResponse, Status>>,
    ) {
        let mut failure = None;
        while let Some(item) = stream.next().await {
            let event = match item {
                Ok(pb::WatchLobbyResponse { event: Some(event) }) => event,
                Ok(pb::WatchLobbyResponse { event: None }) => continue,
                Err(status) => {
                    failure = Some(status);
                    break;
                }
            };
            let outbound = Outbound {
                text: to_text(&LobbyMessage {
                    r#type: "lobby",
                    subscription: &id,
                    event: &event,
                }),
                // The writer stores seq + 1 of what it wrote: the resume hint is then this seq,
                // the after_seq of a new watch.
                event: Some((Arc::clone(&cell), event.seq.saturating_sub(1))),
            };
            if !self.enqueue(outbound).await {
                return;
            }
        }
        if self.remove_sub(&key, token) {
            let text = to_text(&EndMessage::new(&id, failure.as_ref()));
            self.enqueue(Outbound::plain(text)).await;
        }
    }

    /// Removes subscription `key` if it is still the one with `token`; whether it was.
    fn remove_sub(&self, key: &str, token: u64) -> bool {
        let mut subs = self.subs.lock().expect("subscription lock");
        if subs.map.get(key).is_some_and(|sub| sub.token == token) {
            subs.map.remove(key);
            true
        } else {
            false
        }
    }

    /// Copies one gateway stream to the socket until it ends, then says `end`.
    async fn forward(
        self: Arc<Self>,
        id: Value,
        key: String,
        token: u64,
        cell: Arc<SubCell>,
        mut stream: ReceiverStream<Result<pb::SubscribeResponse, Status>>,
    ) {
        let mut next = cell.next_seq.load(Ordering::Relaxed);
        let (mut delivered, mut ended, mut reconnected) = (false, false, false);
        let mut failure = None;
        while let Some(item) = stream.next().await {
            let item = match item {
                Ok(pb::SubscribeResponse { item: Some(item) }) => item,
                Ok(pb::SubscribeResponse { item: None }) => continue,
                Err(status) => {
                    failure = Some(status);
                    break;
                }
            };
            let outbound = match item {
                pb::subscribe_response::Item::Event(event) => {
                    let seq = event.seq;
                    next = seq + 1;
                    delivered = true;
                    ended = matches!(event.event, Some(pb::game_event::Event::Ended(_)));
                    let text = to_text(&EventMessage::new(&id, &event));
                    Outbound {
                        text,
                        event: Some((Arc::clone(&cell), seq)),
                    }
                }
                pb::subscribe_response::Item::Reconnect(reconnect) => {
                    reconnected = true;
                    Outbound::plain(to_text(&ReconnectMessage::new(
                        &id,
                        reconnect.resume_from_seq,
                        &reconnect.reason,
                    )))
                }
            };
            if !self.enqueue(outbound).await {
                return;
            }
        }
        if failure.is_none() && delivered && !ended && !reconnected {
            // Defensive: should the gateway's stream ever stop after some events without
            // `GameEnded` or a hint, say where to resume rather than let the client take the end
            // for the game's end. A stream that delivered nothing ended because it was asked to
            // start past the end of a finished game: no hint there, or the client would loop.
            let reason = "this subscription stopped early";
            let text = to_text(&ReconnectMessage::new(&id, next, reason));
            if !self.enqueue(Outbound::plain(text)).await {
                return;
            }
        }
        if self.remove_sub(&key, token) {
            let text = to_text(&EndMessage::new(&id, failure.as_ref()));
            self.enqueue(Outbound::plain(text)).await;
        }
    }

    /// `unsubscribe`: stops the forwarder; events still queued for it are not written.
    async fn unsubscribe(&self, id: &Value, request: UnsubscribeRequest) {
        let key = request.subscription.to_string();
        let removed = self
            .subs
            .lock()
            .expect("subscription lock")
            .map
            .remove(&key);
        match removed {
            Some(sub) => {
                sub.cell.cancelled.store(true, Ordering::Relaxed);
                if let Some(task) = sub.task {
                    task.abort();
                }
                self.send_result(id, Value::Object(Default::default()))
                    .await;
            }
            None => {
                let status = ApiError::new(
                    Reason::SubscriptionNotFound,
                    format!("no open subscription {}", quote(&key)),
                )
                .into();
                self.send_error(id, &status).await;
            }
        }
    }
}

/// The request of `unsubscribe` (not a proto message: it names a subscription of this
/// connection, which only this protocol has).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct UnsubscribeRequest {
    subscription: Value,
}

/// Handles one text frame of an authenticated connection.
async fn read_text(conn: &Arc<Conn>, text: &str, tasks: &mut JoinSet<()>) {
    if text.len() > conn.config.max_message_bytes {
        let status = too_big(text.len(), conn.config.max_message_bytes);
        return conn.send_error(&Value::Null, &status).await;
    }
    let (id, request) = match decode_message(text) {
        Ok(decoded) => decoded,
        Err(bad) => {
            return conn.send_error(&bad.id, &bad.to_status()).await;
        }
    };
    match request {
        Request::Auth(_) => {
            let status = ApiError::new(
                Reason::WrongPhase,
                format!(
                    "this connection is authenticated already (as {:?}); open a new one to change player",
                    conn.player.id
                ),
            )
            .into();
            conn.send_error(&id, &status).await;
        }
        Request::Unsubscribe(request) => conn.unsubscribe(&id, request).await,
        request => {
            if tasks.len() >= conn.config.max_requests_in_flight {
                let status = ApiError::new(
                    Reason::RateLimited,
                    format!(
                        "{} requests of this connection are being answered; wait for their answers",
                        conn.config.max_requests_in_flight
                    ),
                )
                .into();
                return conn.send_error(&id, &status).await;
            }
            tasks.spawn(Arc::clone(conn).run_request(id, request));
        }
    }
}

/// Writes queued items to the socket until the connection closes, then says goodbye: resume
/// hints where useful, and a close frame saying why.
async fn write_loop(
    conn: Arc<Conn>,
    mut sink: SplitSink<WebSocket, Message>,
    mut queue: mpsc::Receiver<Outbound>,
) {
    let mut closing = conn.closing.subscribe();
    let interval = conn.config.ping_interval.max(Duration::from_millis(100));
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let reason = loop {
        if let Some(reason) = closing.borrow_and_update().clone() {
            break reason;
        }
        let (message, event) = tokio::select! {
            biased;
            _ = closing.changed() => continue,
            _ = ping.tick() => {
                if conn.silent_for() > interval * 3 {
                    conn.close(Closing::Idle);
                    continue;
                }
                (Message::Ping(Default::default()), None)
            }
            item = queue.recv() => {
                let Some(item) = item else { break Closing::ClientGone };
                if item
                    .event
                    .as_ref()
                    .is_some_and(|(cell, _)| cell.cancelled.load(Ordering::Relaxed))
                {
                    continue;
                }
                (Message::Text(item.text.into()), item.event)
            }
        };
        // A client that stops reading blocks this send; the stall timeout of the producers then
        // starts the close, which abandons the send.
        let sent = tokio::select! {
            biased;
            _ = closing.changed() => continue,
            sent = sink.send(message) => sent,
        };
        match sent {
            Ok(()) => {
                if let Some((cell, seq)) = event {
                    cell.next_seq.store(seq + 1, Ordering::Relaxed);
                }
            }
            Err(_) => conn.close(Closing::ClientGone),
        }
    };
    let goodbye = async {
        let (code, text, hint_reason) = match &reason {
            Closing::ClientGone => {
                let _ = sink.close().await;
                return;
            }
            Closing::Overflow => (
                close_code::POLICY,
                "too slow: the outbound queue overflowed; resubscribe from each reconnect item (or last seq + 1)"
                    .to_string(),
                Some("this connection did not read fast enough"),
            ),
            Closing::Shutdown => (
                close_code::AWAY,
                "the server is shutting down; reconnect and resubscribe from each reconnect item (or last seq + 1)"
                    .to_string(),
                Some("the server is shutting down"),
            ),
            Closing::Idle => (
                close_code::AWAY,
                format!(
                    "nothing heard from the client for {} s",
                    (interval * 3).as_secs()
                ),
                None,
            ),
            Closing::TooBig(error) => (
                close_code::SIZE,
                format!(
                    "OUT_OF_RANGE: message over the limit of {} bytes ({error})",
                    conn.config.max_message_bytes
                ),
                None,
            ),
            Closing::InvalidText(error) => (close_code::INVALID, error.clone(), None),
            Closing::ReadFailed(error) => (close_code::PROTOCOL, error.clone(), None),
        };
        if let Some(why) = hint_reason {
            for (id, next) in conn.resume_hints() {
                let text = to_text(&ReconnectMessage::new(&id, next, why));
                if sink.feed(Message::Text(text.into())).await.is_err() {
                    return;
                }
            }
        }
        let _ = sink
            .send(Message::Close(Some(close_frame(code, &text))))
            .await;
    };
    let _ = tokio::time::timeout(CLOSE_GRACE, goodbye).await;
}

/// A close frame, its reason cut to the protocol's limit (at a character boundary).
fn close_frame(code: u16, reason: &str) -> CloseFrame {
    let mut end = reason.len().min(MAX_CLOSE_REASON);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    CloseFrame {
        code,
        reason: reason[..end].to_string().into(),
    }
}

fn too_big(size: usize, limit: usize) -> Status {
    ApiError::new(
        Reason::RequestTooLarge,
        format!("message of {size} bytes is over the limit of {limit} bytes"),
    )
    .into()
}

/// An operation a client may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Auth,
    Subscribe,
    Unsubscribe,
    GetGame,
    ListMyGames,
    LegalMoves,
    Reshuffle,
    Swap,
    Deploy,
    Confirm,
    Play,
    ProposeDraw,
    RespondDraw,
    Concede,
    FindMatch,
    CancelMatch,
    CreateInvite,
    AcceptInvite,
    CancelInvite,
    PlayComputer,
    GetMyRating,
    WatchLobby,
}

/// Every op by its `type` name.
const OPS: [(&str, Op); 22] = [
    ("auth", Op::Auth),
    ("subscribe", Op::Subscribe),
    ("unsubscribe", Op::Unsubscribe),
    ("get_game", Op::GetGame),
    ("list_my_games", Op::ListMyGames),
    ("legal_moves", Op::LegalMoves),
    ("reshuffle", Op::Reshuffle),
    ("swap", Op::Swap),
    ("deploy", Op::Deploy),
    ("confirm", Op::Confirm),
    ("play", Op::Play),
    ("propose_draw", Op::ProposeDraw),
    ("respond_draw", Op::RespondDraw),
    ("concede", Op::Concede),
    ("find_match", Op::FindMatch),
    ("cancel_match", Op::CancelMatch),
    ("create_invite", Op::CreateInvite),
    ("accept_invite", Op::AcceptInvite),
    ("cancel_invite", Op::CancelInvite),
    ("play_computer", Op::PlayComputer),
    ("get_my_rating", Op::GetMyRating),
    ("watch_lobby", Op::WatchLobby),
];

impl Op {
    fn parse(name: &str) -> Option<Op> {
        OPS.iter().find(|(n, _)| *n == name).map(|(_, op)| *op)
    }

    fn name(self) -> &'static str {
        OPS.iter()
            .find(|(_, op)| *op == self)
            .map_or("?", |(name, _)| name)
    }
}

/// A client message, checked for shape; its `request` is decoded by the op.
#[derive(Debug)]
struct Envelope {
    id: Value,
    op: Op,
    /// `{}` when absent.
    request: Value,
    /// The token of `auth` (empty for other ops).
    token: String,
}

/// Why a client message was not understood, and the id to answer it under (null if unknown).
#[derive(Debug)]
struct BadRequest {
    id: Value,
    message: String,
    /// The fields at fault, when the request (not the envelope) did not decode.
    violations: Vec<hidden_front_api_error::FieldViolation>,
}

impl BadRequest {
    /// The answer to send: `MALFORMED_REQUEST`, naming the fields at fault.
    fn to_status(&self) -> Status {
        let mut error = ApiError::new(Reason::MalformedRequest, self.message.clone());
        for v in &self.violations {
            error = error.with_violation(v.field.clone(), v.description.clone());
        }
        error.into()
    }
}

/// Reads the envelope of a client message. Every failure names what was wrong.
fn parse(text: &str) -> Result<Envelope, BadRequest> {
    let bad = |id: &Value, message: String| BadRequest {
        id: id.clone(),
        message,
        violations: Vec::new(),
    };
    let value: Value = serde_json::from_str(text).map_err(|e| {
        bad(
            &Value::Null,
            format!("malformed JSON: {}", brief(&e.to_string())),
        )
    })?;
    let Value::Object(mut fields) = value else {
        return Err(bad(
            &Value::Null,
            "a message is a JSON object: {\"id\": ..., \"type\": ..., \"request\": {...}}".into(),
        ));
    };
    // A parsed object keeps the last of repeated fields; a message must mean one thing (which
    // token, which request), so repeating one is refused.
    if let Err(e) = serde_json::from_str::<NoRepeatedFields>(text) {
        return Err(bad(&Value::Null, e.to_string()));
    }
    let id = fields.remove("id").unwrap_or(Value::Null);
    if !matches!(id, Value::Null | Value::Number(_) | Value::String(_)) {
        return Err(bad(&Value::Null, "id must be a number or a string".into()));
    }
    // Every answer echoes the id: a long one would make every answer long.
    if matches!(&id, Value::String(text) if text.len() > MAX_ID_BYTES) {
        return Err(bad(
            &Value::Null,
            format!("id must be at most {MAX_ID_BYTES} bytes"),
        ));
    }
    let name = match fields.remove("type") {
        Some(Value::String(name)) => name,
        Some(_) => return Err(bad(&id, "type must be a string".into())),
        None => return Err(bad(&id, "type is required (the op, e.g. \"play\")".into())),
    };
    let Some(op) = Op::parse(&name) else {
        let known: Vec<&str> = OPS.iter().map(|(name, _)| *name).collect();
        return Err(bad(
            &id,
            format!(
                "unknown type {}; expected one of {}",
                quote(&name),
                known.join(", ")
            ),
        ));
    };
    let token = fields.remove("token");
    let request = fields.remove("request");
    if let Some(field) = fields.keys().next() {
        return Err(bad(
            &id,
            format!(
                "unknown field {}; a message has id, type and request",
                quote(field)
            ),
        ));
    }
    if op == Op::Auth {
        if request.is_some() {
            return Err(bad(&id, "auth takes a token, not a request".into()));
        }
        return match token {
            Some(Value::String(token)) => Ok(Envelope {
                id,
                op,
                request: Value::Null,
                token,
            }),
            _ => Err(bad(&id, "auth needs a token (a string)".into())),
        };
    }
    if token.is_some() {
        return Err(bad(
            &id,
            "token belongs to the auth message only".to_string(),
        ));
    }
    if id.is_null() {
        return Err(bad(
            &id,
            format!("id is required (a number or a string) for {name}: answers are matched by it"),
        ));
    }
    let request = match request {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(request) => request,
    };
    Ok(Envelope {
        id,
        op,
        request,
        token: String::new(),
    })
}

/// Longest string `id` of a request (answers echo it).
const MAX_ID_BYTES: usize = 128;

/// Deserializes from a JSON object only when no field of it appears twice (the values are
/// skipped: this is a check, [`parse`] reads them).
struct NoRepeatedFields;

impl<'de> Deserialize<'de> for NoRepeatedFields {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Check;
        impl<'de> serde::de::Visitor<'de> for Check {
            type Value = NoRepeatedFields;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<NoRepeatedFields, A::Error> {
                let mut seen = std::collections::HashSet::new();
                while let Some(key) = map.next_key::<String>()? {
                    if !seen.insert(key.clone()) {
                        return Err(serde::de::Error::custom(format!(
                            "field {} appears twice: send each field once",
                            quote(&key)
                        )));
                    }
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
                Ok(NoRepeatedFields)
            }
        }
        deserializer.deserialize_map(Check)
    }
}

/// A proto request from its JSON form.
fn decode<T: DeserializeOwned>(request: Value) -> Result<T, Status> {
    let error = match T::deserialize(&request) {
        Ok(decoded) => return Ok(decoded),
        Err(error) => error,
    };
    // Only to name the field: decode once more, noting the path to the value that failed.
    let path = match serde_path_to_error::deserialize::<_, T>(&request) {
        Err(e) if e.path().to_string() != "." => Some(e.path().to_string()),
        _ => None,
    };
    let what = brief(&error.to_string());
    let mut refusal = ApiError::new(Reason::MalformedRequest, format!("request: {what}"));
    if let Some(path) = path {
        refusal = refusal.with_violation(format!("request.{path}"), what);
    }
    Err(refusal.into())
}

/// A client message decoded in full: its op with the request as the proto message (or the
/// token of `auth`). What a text frame asks for, before anything acts on it.
#[derive(Debug, Clone, PartialEq)]
enum Request {
    Auth(String),
    Subscribe(pb::SubscribeRequest),
    Unsubscribe(UnsubscribeRequest),
    GetGame(pb::PlayerServiceGetGameRequest),
    ListMyGames(pb::ListMyGamesRequest),
    LegalMoves(pb::LegalMovesRequest),
    Reshuffle(pb::ReshuffleRequest),
    Swap(pb::SwapRequest),
    Deploy(pb::DeployRequest),
    Confirm(pb::ConfirmRequest),
    Play(pb::PlayRequest),
    ProposeDraw(pb::ProposeDrawRequest),
    RespondDraw(pb::RespondDrawRequest),
    Concede(pb::ConcedeRequest),
    FindMatch(pb::FindMatchRequest),
    CancelMatch(pb::CancelMatchRequest),
    CreateInvite(pb::PlayerServiceCreateInviteRequest),
    AcceptInvite(pb::PlayerServiceAcceptInviteRequest),
    CancelInvite(pb::PlayerServiceCancelInviteRequest),
    PlayComputer(pb::PlayerServicePlayComputerRequest),
    GetMyRating(pb::GetMyRatingRequest),
    WatchLobby(pb::WatchLobbyRequest),
}

impl Request {
    /// Decodes the `request` of `envelope` as the proto message its op takes.
    fn decode(envelope: Envelope) -> Result<Request, Status> {
        let Envelope {
            op, request, token, ..
        } = envelope;
        Ok(match op {
            Op::Auth => Request::Auth(token),
            Op::Subscribe => Request::Subscribe(decode(request)?),
            Op::Unsubscribe => {
                Request::Unsubscribe(serde_json::from_value(request).map_err(|e| {
                    Status::from(ApiError::new(
                        Reason::MalformedRequest,
                        format!(
                            "request: {}; unsubscribe takes {{\"subscription\": <the subscribe request's id>}}",
                            brief(&e.to_string())
                        ),
                    ))
                })?)
            }
            Op::GetGame => Request::GetGame(decode(request)?),
            Op::ListMyGames => Request::ListMyGames(decode(request)?),
            Op::LegalMoves => Request::LegalMoves(decode(request)?),
            Op::Reshuffle => Request::Reshuffle(decode(request)?),
            Op::Swap => Request::Swap(decode(request)?),
            Op::Deploy => Request::Deploy(decode(request)?),
            Op::Confirm => Request::Confirm(decode(request)?),
            Op::Play => Request::Play(decode(request)?),
            Op::ProposeDraw => Request::ProposeDraw(decode(request)?),
            Op::RespondDraw => Request::RespondDraw(decode(request)?),
            Op::Concede => Request::Concede(decode(request)?),
            Op::FindMatch => Request::FindMatch(decode(request)?),
            Op::CancelMatch => Request::CancelMatch(decode(request)?),
            Op::CreateInvite => Request::CreateInvite(decode(request)?),
            Op::AcceptInvite => Request::AcceptInvite(decode(request)?),
            Op::CancelInvite => Request::CancelInvite(decode(request)?),
            Op::PlayComputer => Request::PlayComputer(decode(request)?),
            Op::GetMyRating => Request::GetMyRating(decode(request)?),
            Op::WatchLobby => Request::WatchLobby(decode(request)?),
        })
    }
}

/// Turns one text frame of an authenticated connection into the id to answer under and the
/// request: a pure function, so any input gets an error naming what is wrong and never a panic
/// (the property tests below feed it arbitrary text and JSON).
fn decode_message(text: &str) -> Result<(Value, Request), BadRequest> {
    let envelope = parse(text)?;
    let id = envelope.id.clone();
    match Request::decode(envelope) {
        Ok(request) => Ok((id, request)),
        Err(status) => Err(BadRequest {
            id,
            message: status.message().to_string(),
            violations: ErrorSummary::of(&status).violations,
        }),
    }
}

/// `{"id", "type": "result", "response"}` as text.
fn result_text<R: Serialize>(id: &Value, response: &R) -> String {
    to_text(&ResultMessage {
        id,
        r#type: "result",
        response,
    })
}

/// A server message as text. Serializing these never fails (string keys only); should it, the
/// client gets an `INTERNAL` error instead of nothing.
fn to_text<T: Serialize>(message: &T) -> String {
    serde_json::to_string(message).unwrap_or_else(|e| {
        tracing::error!(error = %e, "a WebSocket message does not serialize");
        r#"{"id":null,"type":"error","code":"INTERNAL","reason":"INTERNAL","message":"an answer did not serialize"}"#
            .to_string()
    })
}

/// `{"id", "type": "result", "response"}`.
#[derive(Serialize)]
struct ResultMessage<'a, R> {
    id: &'a Value,
    r#type: &'static str,
    response: &'a R,
}

/// `{"id", "type": "error", "code", "reason", "message", "fieldViolations"}`: the gRPC code, the
/// stable reason clients localise from, and the bad fields (omitted when none), as gRPC carries
/// them in `google.rpc` details.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ErrorMessage<'a> {
    id: &'a Value,
    r#type: &'static str,
    code: &'static str,
    reason: String,
    message: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    field_violations: Vec<FieldViolationJson>,
}

/// One bad field of an [`ErrorMessage`].
#[derive(Serialize)]
struct FieldViolationJson {
    field: String,
    description: String,
}

impl<'a> ErrorMessage<'a> {
    fn new(id: &'a Value, status: &'a Status) -> Self {
        let summary = ErrorSummary::of(status);
        ErrorMessage {
            id,
            r#type: "error",
            code: code_name(status.code()),
            reason: summary.reason,
            message: bounded_message(status),
            field_violations: summary
                .violations
                .into_iter()
                .map(|v| FieldViolationJson {
                    field: v.field,
                    description: v.description,
                })
                .collect(),
        }
    }
}

/// `status`'s message, cut at the error contract's bound (statuses built by the project are
/// within it already; this holds for any other).
fn bounded_message(status: &Status) -> &str {
    let message = status.message();
    if message.len() <= MAX_MESSAGE_BYTES {
        return message;
    }
    let mut end = MAX_MESSAGE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    &message[..end]
}

/// `{"type": "event", "subscription", "event"}`.
#[derive(Serialize)]
struct EventMessage<'a> {
    r#type: &'static str,
    subscription: &'a Value,
    event: &'a pb::GameEvent,
}

impl<'a> EventMessage<'a> {
    fn new(subscription: &'a Value, event: &'a pb::GameEvent) -> Self {
        EventMessage {
            r#type: "event",
            subscription,
            event,
        }
    }
}

/// `{"type": "lobby", "subscription", "event"}`: a lobby event of a `watch_lobby` subscription.
#[derive(Serialize)]
struct LobbyMessage<'a> {
    r#type: &'static str,
    subscription: &'a Value,
    event: &'a pb::LobbyEvent,
}

/// `{"type": "reconnect", "subscription", "resume_from_seq", "reason"}`.
#[derive(Serialize)]
struct ReconnectMessage<'a> {
    r#type: &'static str,
    subscription: &'a Value,
    resume_from_seq: u64,
    reason: &'a str,
}

impl<'a> ReconnectMessage<'a> {
    fn new(subscription: &'a Value, resume_from_seq: u64, reason: &'a str) -> Self {
        ReconnectMessage {
            r#type: "reconnect",
            subscription,
            resume_from_seq,
            reason,
        }
    }
}

/// `{"type": "end", "subscription"}`, with `code`, `reason` and `message` when the stream failed.
#[derive(Serialize)]
struct EndMessage<'a> {
    r#type: &'static str,
    subscription: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
}

impl<'a> EndMessage<'a> {
    fn new(subscription: &'a Value, failure: Option<&'a Status>) -> Self {
        EndMessage {
            r#type: "end",
            subscription,
            code: failure.map(|s| code_name(s.code())),
            reason: failure.map(|s| ErrorSummary::of(s).reason),
            message: failure.map(bounded_message),
        }
    }
}

/// The gRPC name of a status code (`PERMISSION_DENIED`), as the gRPC specification spells it.
pub fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_parses_with_its_id_op_and_body() {
        let envelope =
            parse(r#"{"id": 7, "type": "play", "request": {"context": {"gameId": "x"}}}"#).unwrap();
        assert_eq!(envelope.id, Value::from(7));
        assert_eq!(envelope.op, Op::Play);
        let request: pb::PlayRequest = decode(envelope.request).unwrap();
        assert_eq!(request.context.unwrap().game_id, "x");
    }

    #[test]
    fn a_missing_request_is_the_empty_message() {
        let envelope = parse(r#"{"id": "a", "type": "list_my_games"}"#).unwrap();
        let request: pb::ListMyGamesRequest = decode(envelope.request).unwrap();
        assert!(!request.active_only);
    }

    #[test]
    fn proto_field_names_and_camel_case_both_decode() {
        for body in [
            r#"{"game_id":"g","from_seq":3}"#,
            r#"{"gameId":"g","fromSeq":"3"}"#,
        ] {
            let request: pb::SubscribeRequest =
                decode(serde_json::from_str(body).unwrap()).unwrap();
            assert_eq!((request.game_id.as_str(), request.from_seq), ("g", 3));
        }
    }

    #[test]
    fn bad_messages_name_what_is_wrong() {
        let cases = [
            ("{", "malformed JSON"),
            ("[1]", "JSON object"),
            (r#"{"id": {}, "type": "play"}"#, "id must be"),
            (r#"{"id": 1}"#, "type is required"),
            (r#"{"id": 1, "type": "fly"}"#, "unknown type \"fly\""),
            (
                r#"{"id": 1, "type": "play", "requets": {}}"#,
                "unknown field \"requets\"",
            ),
            (r#"{"type": "play"}"#, "id is required"),
            (r#"{"type": "auth"}"#, "auth needs a token"),
            (
                r#"{"id": 1, "type": "play", "token": "t"}"#,
                "auth message only",
            ),
            (
                r#"{"type": "auth", "token": "good", "token": "bad"}"#,
                "field \"token\" appears twice",
            ),
            (
                r#"{"id": 1, "type": "play", "type": "concede"}"#,
                "field \"type\" appears twice",
            ),
        ];
        for (text, expected) in cases {
            let error = parse(text).unwrap_err();
            assert!(
                error.message.contains(expected),
                "{text}: {:?} does not say {expected:?}",
                error.message
            );
        }
        assert_eq!(
            parse(r#"{"id": "q", "type": "fly"}"#).unwrap_err().id,
            Value::from("q"),
            "an error names the request's id when it could be read"
        );
    }

    #[test]
    fn an_unknown_request_field_is_refused() {
        let envelope =
            parse(r#"{"id": 1, "type": "legal_moves", "request": {"game": "x"}}"#).unwrap();
        let error = decode::<pb::LegalMovesRequest>(envelope.request).unwrap_err();
        assert_eq!(error.code(), Code::InvalidArgument);
        assert!(error.message().contains("game"), "{}", error.message());
    }

    #[test]
    fn every_op_name_round_trips() {
        for (name, op) in OPS {
            assert_eq!(Op::parse(name), Some(op));
            assert_eq!(op.name(), name);
        }
    }

    #[test]
    fn server_messages_have_the_documented_shape() {
        let id = Value::from(3);
        let status = ApiError::new(Reason::NotSeated, "not yours").into();
        assert_eq!(
            to_text(&ErrorMessage::new(&id, &status)),
            r#"{"id":3,"type":"error","code":"PERMISSION_DENIED","reason":"NOT_SEATED","message":"not yours"}"#
        );
        let status = ApiError::invalid_field("move.from", "is required").into();
        assert_eq!(
            to_text(&ErrorMessage::new(&id, &status)),
            r#"{"id":3,"type":"error","code":"INVALID_ARGUMENT","reason":"INVALID_FIELD","message":"move.from: is required","fieldViolations":[{"field":"move.from","description":"is required"}]}"#
        );
        // A status from elsewhere, without details, gets its code's fallback reason.
        let status = Status::permission_denied("not yours");
        assert_eq!(
            to_text(&ErrorMessage::new(&id, &status)),
            r#"{"id":3,"type":"error","code":"PERMISSION_DENIED","reason":"NOT_ALLOWED","message":"not yours"}"#
        );
        let event = pb::GameEvent {
            game_id: "g".into(),
            seq: 5,
            event: Some(pb::game_event::Event::Resigned(pb::Resigned {
                side: pb::Side::North as i32,
            })),
        };
        assert_eq!(
            to_text(&EventMessage::new(&id, &event)),
            r#"{"type":"event","subscription":3,"event":{"gameId":"g","seq":"5","resigned":{"side":"SIDE_NORTH"}}}"#
        );
        assert_eq!(
            to_text(&ReconnectMessage::new(&id, 9, "why")),
            r#"{"type":"reconnect","subscription":3,"resume_from_seq":9,"reason":"why"}"#
        );
        assert_eq!(
            to_text(&EndMessage::new(&id, None)),
            r#"{"type":"end","subscription":3}"#
        );
    }

    #[test]
    fn close_reasons_fit_the_frame() {
        let frame = close_frame(close_code::POLICY, &"é".repeat(100));
        assert!(frame.reason.as_str().len() <= MAX_CLOSE_REASON);
        assert!(!frame.reason.as_str().is_empty());
    }

    /// A client that stops reading: the producers are released within the stall timeout, the
    /// connection closes as overflowed, and whatever reaches the client is a gapless prefix,
    /// followed (if the goodbye gets through) by a resume hint that continues it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_that_stops_reading_is_cut_off_with_a_resume_hint() {
        use crate::auth::{AuthConfig, Authenticator};
        use crate::gateway::GatewayConfig;
        use hidden_front_proto::v1::session_service_client::SessionServiceClient;
        use tokio_tungstenite::tungstenite::Message as ClientMessage;

        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (socket_tx, socket_rx) = tokio::sync::oneshot::channel::<WebSocket>();
        let socket_tx = Arc::new(Mutex::new(Some(socket_tx)));
        let app = Router::new().route(
            "/",
            get(move |ws: WebSocketUpgrade| async move {
                ws.on_upgrade(move |socket| async move {
                    if let Some(tx) = socket_tx.lock().unwrap().take() {
                        let _ = tx.send(socket);
                    }
                })
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });

        // A client with a tiny receive window that reads nothing for now.
        let tcp = tokio::net::TcpSocket::new_v4().unwrap();
        tcp.set_recv_buffer_size(4096).unwrap();
        let tcp = tcp.connect(addr).await.unwrap();
        let (mut client, _) = tokio_tungstenite::client_async(format!("ws://{addr}/"), tcp)
            .await
            .unwrap();
        let socket = socket_rx.await.unwrap();

        // A gateway that is never called: the items are fed to the connection directly.
        let session = SessionServiceClient::new(
            tonic::transport::Endpoint::from_static("http://127.0.0.1:9")
                .connect_lazy()
                .into(),
        );
        let gateway = Gateway::new(
            GatewayConfig::default(),
            Authenticator::new(AuthConfig::dev()).unwrap(),
            session,
        );
        let config = WsConfig {
            outbound_queue: 4,
            stall_timeout: Duration::from_millis(300),
            ping_interval: Duration::from_secs(3600),
            ..WsConfig::default()
        };
        let (out, queue) = mpsc::channel(config.outbound_queue);
        let conn = Arc::new(Conn {
            gateway,
            config,
            player: Player {
                id: "slow".into(),
                guest: true,
            },
            out,
            closing: watch::channel(None).0,
            subs: Mutex::new(Subs::default()),
            opened: Instant::now(),
            last_heard_ms: AtomicU64::new(0),
        });
        let (sink, _stream) = socket.split();
        let writer = tokio::spawn(write_loop(Arc::clone(&conn), sink, queue));
        let id = Value::from("g");
        let cell = Arc::new(SubCell {
            cancelled: AtomicBool::new(false),
            next_seq: AtomicU64::new(1),
        });
        conn.subs.lock().unwrap().map.insert(
            id.to_string(),
            Sub {
                token: 1,
                id: id.clone(),
                cell: Arc::clone(&cell),
                task: None,
            },
        );

        let produce = async {
            for seq in 1.. {
                let event = pb::GameEvent {
                    game_id: "x".repeat(2048),
                    seq,
                    event: None,
                };
                let item = Outbound {
                    text: to_text(&EventMessage::new(&id, &event)),
                    event: Some((Arc::clone(&cell), seq)),
                };
                if !conn.enqueue(item).await {
                    return seq;
                }
            }
            unreachable!()
        };
        let refused_at = tokio::time::timeout(Duration::from_secs(30), produce)
            .await
            .expect("a producer is never held longer than the stall timeout");
        assert!(refused_at > 1);
        assert!(
            matches!(conn.reason(), Closing::Overflow),
            "{:?}",
            conn.reason()
        );

        // Now the client reads what reached it.
        let mut last = 0;
        let mut hint = None;
        let mut close = None;
        while let Ok(Some(Ok(frame))) =
            tokio::time::timeout(Duration::from_secs(10), client.next()).await
        {
            match frame {
                ClientMessage::Text(text) => {
                    let item: Value = serde_json::from_str(text.as_str()).unwrap();
                    match item["type"].as_str() {
                        Some("event") => {
                            let seq: u64 = item["event"]["seq"].as_str().unwrap().parse().unwrap();
                            assert!(
                                seq == last + 1 || (hint.is_none() && seq == last),
                                "gapless: {seq} after {last}"
                            );
                            last = seq;
                        }
                        Some("reconnect") => hint = Some(item["resume_from_seq"].as_u64().unwrap()),
                        other => panic!("unexpected {other:?}: {item}"),
                    }
                }
                ClientMessage::Close(frame) => {
                    close = frame.map(|f| u16::from(f.code));
                    break;
                }
                _ => {}
            }
        }
        assert!(
            last >= 1,
            "the client got the events written before it stalled"
        );
        if let Some(hint) = hint {
            // The send cut short by the close may still have gone out: the hint may repeat it.
            assert!(
                hint == last + 1 || hint == last,
                "hint {hint} continues {last}"
            );
            assert_eq!(close, Some(close_code::POLICY));
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), writer).await;
    }

    /// Property tests of [`decode_message`]: whatever a client sends, the answer is a decoded
    /// request or an error that says what is wrong, under the id the message carried (if any),
    /// and never a panic.
    mod decoding {
        use super::super::*;
        use proptest::prelude::*;

        /// Field names the decoder knows (envelope and proto fields), mixed with any strings so
        /// that both the known paths and the unknown-field paths are taken.
        fn key() -> impl Strategy<Value = String> {
            prop_oneof![
                prop::sample::select(vec![
                    "id",
                    "type",
                    "request",
                    "token",
                    "gameId",
                    "game_id",
                    "fromSeq",
                    "spectate",
                    "context",
                    "idempotencyKey",
                    "expectedVersion",
                    "move",
                    "from",
                    "to",
                    "placements",
                    "square",
                    "piece",
                    "accept",
                    "subscription",
                    "afterSeq",
                ])
                .prop_map(str::to_string),
                ".{0,12}",
            ]
        }

        /// Any JSON number, including those past 64 bits and past `f64`'s exponent range, as
        /// the text a client would send.
        fn number_text() -> impl Strategy<Value = String> {
            prop_oneof![
                any::<i64>().prop_map(|n| n.to_string()),
                any::<u64>().prop_map(|n| n.to_string()),
                any::<f64>().prop_map(|f| format!("{f:e}")),
                "-?[1-9][0-9]{18,400}",
                "-?[1-9]e[+-]?[0-9]{2,5}",
                "-?0\\.[0-9]{1,40}e-?[0-9]{1,4}",
            ]
        }

        /// Arbitrary JSON values, nested a few levels.
        fn json_value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                any::<u64>().prop_map(Value::from),
                any::<f64>().prop_map(Value::from),
                ".{0,16}".prop_map(Value::from),
                prop::sample::select(OPS.map(|(name, _)| name).to_vec()).prop_map(Value::from),
            ];
            leaf.prop_recursive(6, 64, 8, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                    prop::collection::vec((key(), inner), 0..6)
                        .prop_map(|fields| Value::Object(fields.into_iter().collect())),
                ]
            })
        }

        /// A message with an id, a real op (but `auth`, which takes no request) and an
        /// arbitrary request: the decoding of every proto request gets fuzzed, not only the
        /// envelope.
        fn envelope_text() -> impl Strategy<Value = String> {
            let ops: Vec<&str> = OPS
                .iter()
                .map(|(name, _)| *name)
                .filter(|name| *name != "auth")
                .collect();
            (
                prop_oneof![json_value(), number_text().prop_map(Value::String)],
                prop::sample::select(ops),
                json_value(),
            )
                .prop_map(|(id, op, request)| {
                    serde_json::json!({"id": id, "type": op, "request": request}).to_string()
                })
        }

        /// The properties every answer has: an error names what is wrong and answers under the
        /// message's own id when it could be read; a decoded request answers under a real id.
        fn check(text: &str) {
            match decode_message(text) {
                Ok((id, request)) => {
                    assert!(
                        matches!(id, Value::Number(_) | Value::String(_))
                            || matches!(request, Request::Auth(_)),
                        "{text:?} decoded with id {id}"
                    );
                }
                Err(bad) => {
                    assert!(!bad.message.trim().is_empty(), "{text:?}: an empty error");
                    if !bad.id.is_null() {
                        let sent: Value = serde_json::from_str(text).expect("an id was read");
                        assert_eq!(sent["id"], bad.id, "{text:?}: answered under another id");
                    }
                }
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(3000))]

            #[test]
            fn any_text_gets_a_request_or_a_clear_error(text in "\\PC{0,200}") {
                check(&text);
            }

            #[test]
            fn any_json_gets_a_request_or_a_clear_error(value in json_value()) {
                check(&value.to_string());
            }

            #[test]
            fn any_request_of_every_op_gets_a_request_or_a_clear_error(text in envelope_text()) {
                check(&text);
                if let Err(bad) = decode_message(&text) {
                    // The envelope is well-formed: only the request (or a null id) can be wrong.
                    prop_assert!(
                        bad.message.starts_with("request:") || bad.message.contains("id"),
                        "{}: {}", text, bad.message
                    );
                }
            }

            #[test]
            fn huge_numbers_anywhere_get_a_clear_error(number in number_text(), at in 0..4usize) {
                let text = match at {
                    0 => format!(r#"{{"id": {number}, "type": "list_my_games"}}"#),
                    1 => format!(
                        r#"{{"id": 1, "type": "subscribe", "request": {{"gameId": "g", "fromSeq": {number}}}}}"#
                    ),
                    2 => format!(
                        r#"{{"id": 1, "type": "play", "request": {{"context": {{"gameId": "g", "expectedVersion": {number}}}}}}}"#
                    ),
                    _ => format!(r#"{{"id": 1, "type": "unsubscribe", "request": {{"subscription": {number}}}}}"#),
                };
                check(&text);
            }

        }

        proptest! {
            // Each case parses up to 20 000 levels three times: fewer cases.
            #![proptest_config(ProptestConfig::with_cases(300))]

            #[test]
            fn deeply_nested_json_gets_a_clear_error(depth in 1..20_000usize, open in "[\\[{]") {
                let (open, close) = if open == "[" { ("[", "]") } else { (r#"{"a":"#, "}") };
                let nested = format!("{}1{}", open.repeat(depth), close.repeat(depth));
                for text in [
                    nested.clone(),
                    format!(r#"{{"id": 1, "type": "play", "request": {nested}}}"#),
                    format!(r#"{{"id": {nested}, "type": "play"}}"#),
                ] {
                    check(&text);
                    if depth > 200 {
                        let bad = decode_message(&text).expect_err("nested past the limit");
                        prop_assert!(bad.message.contains("recursion limit"), "{}", bad.message);
                    }
                }
            }
        }

        #[test]
        fn a_valid_request_decodes_as_its_proto_message() {
            let (id, request) = decode_message(
                r#"{"id": "a", "type": "subscribe", "request": {"gameId": "g", "fromSeq": "18446744073709551615"}}"#,
            )
            .unwrap();
            assert_eq!(id, Value::from("a"));
            assert_eq!(
                request,
                Request::Subscribe(pb::SubscribeRequest {
                    game_id: "g".into(),
                    from_seq: u64::MAX,
                    spectate: false,
                })
            );
            let bad = decode_message(
                r#"{"id": 2, "type": "subscribe", "request": {"fromSeq": "18446744073709551616"}}"#,
            )
            .unwrap_err();
            assert_eq!(bad.id, Value::from(2));
            assert!(bad.message.starts_with("request:"), "{}", bad.message);
        }
    }

    #[test]
    fn code_names_are_the_grpc_spellings() {
        assert_eq!(code_name(Code::PermissionDenied), "PERMISSION_DENIED");
        assert_eq!(code_name(Code::Unauthenticated), "UNAUTHENTICATED");
        assert_eq!(code_name(Code::OutOfRange), "OUT_OF_RANGE");
    }
}

#[cfg(test)]
mod decode_field_path {
    use super::*;

    #[test]
    fn a_field_that_does_not_decode_is_named() {
        let request = serde_json::json!({"requestId": "r", "seat": 999});
        let status = decode::<pb::PlayerServicePlayComputerRequest>(request).unwrap_err();
        let summary = ErrorSummary::of(&status);
        assert_eq!(summary.reason, "MALFORMED_REQUEST", "{}", status.message());
        assert_eq!(
            summary.violations.first().map(|v| v.field.as_str()),
            Some("request.seat"),
            "{}",
            status.message()
        );
    }
}
