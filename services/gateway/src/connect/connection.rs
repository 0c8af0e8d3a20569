//! One `Connect` connection: the reader loop that answers requests, the follows it runs, the
//! bounded queue of encoded messages, and the [`Writer`] that takes them out in batches and says
//! goodbye.
//!
//! Nothing here waits for anything but this connection: requests are answered inside the reader's
//! own task (at most `max_in_flight` at once), each follow is a task that puts its messages on
//! this connection's queue, and a queue that stays full for the stall timeout closes the
//! connection, with the position each followed game should be followed again from.

use super::ConnectConfig;
use super::encoding::{answer, encode, refusal};
use crate::auth::Player;
use crate::follow::{Follow, FollowSink, Shown};
use crate::gateway::Gateway;
use crate::hub::{GameHub, LogEntry};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::{FuturesUnordered, Stream, StreamExt};
use governor::{DefaultDirectRateLimiter, Quota};
use hidden_front_api_error::{ApiError, Reason};
use hidden_front_proto::v1 as pb;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio::sync::mpsc::error::SendTimeoutError;
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;
use tonic::Status;
use uuid::Uuid;

/// The ids of the requests being answered: a few at most (`max_in_flight`), so a list.
type InFlight = Vec<u64>;

/// Why a connection closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Closing {
    /// The client went away or finished: nothing more is sent.
    ClientGone,
    /// The client did not read its queue within the stall timeout.
    TooSlow,
    /// This gateway is shutting down.
    Shutdown,
}

/// How far one follow's messages have been handed to the transport, and whether it was
/// stopped (messages still queued for it are then dropped).
pub(crate) struct Progress {
    /// The first seq (for the lobby: the `after_seq`) not yet handed to the transport.
    next: AtomicU64,
    cancelled: AtomicBool,
}

impl Progress {
    fn new(next: u64) -> Arc<Progress> {
        Arc::new(Progress {
            next: AtomicU64::new(next),
            cancelled: AtomicBool::new(false),
        })
    }
}

/// One message for the transport.
pub(crate) struct Outgoing {
    message: Bytes,
    /// For a follow's message: its progress and the position once this is written.
    progress: Option<(Arc<Progress>, u64)>,
}

impl Outgoing {
    fn plain(message: Bytes) -> Outgoing {
        Outgoing {
            message,
            progress: None,
        }
    }
}

/// A follow of this connection (a game's or the lobby's).
struct Followed {
    /// Tells this follow from a later one of the same game.
    token: u64,
    progress: Arc<Progress>,
    /// Its task, once it runs.
    task: Option<AbortHandle>,
}

#[derive(Default)]
struct Follows {
    games: HashMap<Uuid, Followed>,
    lobby: Option<Followed>,
    next_token: u64,
}

/// What a request answered in the reader's task came to.
pub(super) enum Done {
    /// An encoded answer or refusal.
    Answered(u64, Bytes),
    /// A follow was set up (or refused); it starts once its answer is queued.
    Follow(u64, Uuid, u64, Result<Follow, Status>),
    /// The lobby follow was set up (or refused).
    Lobby(u64, u64, Result<LobbyStream, Status>),
}

/// The lobby stream the gateway gives.
pub(super) type LobbyStream =
    tokio_stream::wrappers::ReceiverStream<Result<pb::WatchLobbyResponse, Status>>;

/// One player's connection.
pub(crate) struct Connection {
    pub(super) gateway: Gateway,
    pub(super) player: Player,
    config: ConnectConfig,
    out: mpsc::Sender<Outgoing>,
    /// `None` while open; the first reason to close wins.
    closing: watch::Sender<Option<Closing>>,
    follows: Mutex<Follows>,
    limiter: DefaultDirectRateLimiter,
}

impl Connection {
    /// A connection of `player`, and the writer that takes its messages out.
    pub(crate) fn open(
        gateway: Gateway,
        player: Player,
        config: ConnectConfig,
    ) -> (Arc<Connection>, Writer) {
        let (out, queue) = mpsc::channel(config.outbound_queue.max(1));
        let per_second =
            NonZeroU32::new(config.messages_per_second.max(1)).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(config.message_burst.max(1)).unwrap_or(NonZeroU32::MIN);
        let conn = Arc::new(Connection {
            gateway,
            player,
            limiter: DefaultDirectRateLimiter::direct(
                Quota::per_second(per_second).allow_burst(burst),
            ),
            config,
            out,
            closing: watch::channel(None).0,
            follows: Mutex::new(Follows::default()),
        });
        let writer = Writer {
            closing: conn.closing.subscribe(),
            conn: Arc::clone(&conn),
            queue,
            done: false,
        };
        (conn, writer)
    }

    /// Starts closing for `reason`, unless it is closing already.
    pub(crate) fn close(&self, reason: Closing) {
        self.closing.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(reason);
                true
            } else {
                false
            }
        });
    }

    fn is_closing(&self) -> bool {
        self.closing.borrow().is_some()
    }

    /// Resolves once the connection is closing.
    async fn closed(&self) {
        let mut closing = self.closing.subscribe();
        let _ = closing.wait_for(Option::is_some).await;
    }

    /// Queues `item`, waiting for room at most the stall timeout; a queue that stays full closes
    /// the connection (its client is not reading). `false` when nothing more should be queued.
    async fn send(&self, item: Outgoing) -> bool {
        if self.is_closing() {
            return false;
        }
        match self.out.try_send(item) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Closed(_)) => false,
            Err(mpsc::error::TrySendError::Full(item)) => {
                match self.out.send_timeout(item, self.config.stall_timeout).await {
                    Ok(()) => true,
                    Err(SendTimeoutError::Timeout(_)) => {
                        tracing::warn!(
                            player = %self.player.id,
                            "Connect client is not reading; closing it with resume points"
                        );
                        self.close(Closing::TooSlow);
                        false
                    }
                    Err(SendTimeoutError::Closed(_)) => false,
                }
            }
        }
    }

    /// Reads the client's requests until the client finishes or goes away, or the connection
    /// closes; answers each. An undecodable message is refused under request id 0.
    pub(crate) async fn serve<S>(self: Arc<Self>, mut incoming: S)
    where
        S: Stream<Item = Result<pb::ConnectRequest, Status>> + Unpin + Send,
    {
        let mut in_flight: FuturesUnordered<BoxFuture<'static, Done>> = FuturesUnordered::new();
        let mut ids: InFlight = Vec::new();
        let stopping = self.gateway.inner.stopping.clone();
        let mut finished = false;
        loop {
            if finished && in_flight.is_empty() {
                self.close(Closing::ClientGone);
            }
            tokio::select! {
                biased;
                () = self.closed() => break,
                () = stopping.cancelled() => self.close(Closing::Shutdown),
                Some(done) = in_flight.next(), if !in_flight.is_empty() => {
                    if !self.finish(done, &mut ids).await {
                        break;
                    }
                }
                frame = incoming.next(), if !finished => match frame {
                    Some(Ok(request)) => {
                        if let Some(refused) = self.accept(request, &mut ids, &mut in_flight)
                            && !self.send(Outgoing::plain(refused)).await
                        {
                            break;
                        }
                    }
                    Some(Err(status)) => {
                        if !self.send(Outgoing::plain(refusal(0, &status))).await {
                            break;
                        }
                    }
                    None => finished = true,
                }
            }
        }
        self.stop_follows();
    }

    /// Takes one request: refused at once (the refusal returned), answered at once (unfollow),
    /// or started in `in_flight`.
    fn accept(
        self: &Arc<Self>,
        request: pb::ConnectRequest,
        ids: &mut InFlight,
        in_flight: &mut FuturesUnordered<BoxFuture<'static, Done>>,
    ) -> Option<Bytes> {
        use pb::connect_request::Request;
        let id = request.request_id;
        if self.limiter.check().is_err() {
            let status = ApiError::new(
                Reason::RateLimited,
                format!(
                    "more than {} messages a second on this connection; slow down",
                    self.config.messages_per_second
                ),
            );
            return Some(refusal(id, &status.into()));
        }
        if id == 0 {
            let status = ApiError::invalid_field("request_id", "must not be 0");
            return Some(refusal(0, &status.into()));
        }
        if ids.contains(&id) {
            let status = ApiError::invalid_field(
                "request_id",
                format!("{id} belongs to a request still being answered; use a new id"),
            );
            return Some(refusal(id, &status.into()));
        }
        let Some(request) = request.request else {
            let status = ApiError::new(
                Reason::UnknownOperation,
                "the message names no request this server knows (set one field of `request`)",
            );
            return Some(refusal(id, &status.into()));
        };
        let work: BoxFuture<'static, Done> = match request {
            Request::Authenticate(auth) => {
                if auth.token.chars().any(char::is_control) {
                    let status = ApiError::invalid_field(
                        "authenticate.token",
                        "contains a control character",
                    );
                    return Some(refusal(id, &status.into()));
                }
                let status = ApiError::new(
                    Reason::WrongPhase,
                    format!(
                        "this connection is authenticated already (as {:?}); open a new one to change player",
                        self.player.id
                    ),
                );
                return Some(refusal(id, &status.into()));
            }
            Request::Unfollow(request) => return Some(self.unfollow(id, &request)),
            request if in_flight.len() >= self.config.max_in_flight => {
                let _ = request;
                let status = ApiError::new(
                    Reason::RateLimited,
                    format!(
                        "{} requests of this connection are being answered; wait for their answers",
                        self.config.max_in_flight
                    ),
                );
                return Some(refusal(id, &status.into()));
            }
            Request::Follow(request) => match self.reserve_game(&request) {
                Ok((game_id, token)) => {
                    let conn = Arc::clone(self);
                    Box::pin(async move {
                        let follow = conn.gateway.follow(&conn.player, &request).await;
                        Done::Follow(id, game_id, token, follow)
                    })
                }
                Err(status) => return Some(refusal(id, &status)),
            },
            Request::FollowLobby(request) => match self.reserve_lobby(request.after_seq) {
                Ok(token) => {
                    let conn = Arc::clone(self);
                    Box::pin(async move {
                        let stream = conn.gateway.watch_lobby(&conn.player, request).await;
                        Done::Lobby(id, token, stream)
                    })
                }
                Err(status) => return Some(refusal(id, &status)),
            },
            request => Box::pin(Arc::clone(self).answer(id, request)),
        };
        ids.push(id);
        in_flight.push(work);
        None
    }

    /// Sends what a request came to; starts a follow once its answer is queued. `false` when
    /// nothing more can be sent.
    async fn finish(self: &Arc<Self>, done: Done, ids: &mut InFlight) -> bool {
        match done {
            Done::Answered(id, message) => {
                ids.retain(|other| *other != id);
                self.send(Outgoing::plain(message)).await
            }
            Done::Follow(id, game_id, token, follow) => {
                ids.retain(|other| *other != id);
                let follow = match follow {
                    Ok(follow) if self.holds_game(game_id, token) => follow,
                    Ok(_) => {
                        return self
                            .send(Outgoing::plain(refusal(id, &unsubscribed())))
                            .await;
                    }
                    Err(status) => {
                        self.release_game(game_id, token);
                        return self.send(Outgoing::plain(refusal(id, &status))).await;
                    }
                };
                let followed = answer(
                    id,
                    pb::answer::Response::Followed(pb::Followed {
                        game_id: game_id.to_string(),
                    }),
                );
                if !self.send(Outgoing::plain(followed)).await {
                    return false;
                }
                let mut follows = self.follows.lock();
                // Checked under the lock `stop_follows` takes: a follow is either started before
                // it (and stopped by it) or not at all.
                if self.is_closing() {
                    return false;
                }
                if let Some(entry) = follows.games.get_mut(&game_id).filter(|f| f.token == token) {
                    let sink = ConnectSink {
                        conn: Arc::clone(self),
                        game_id,
                        token,
                        request_id: id,
                        progress: Arc::clone(&entry.progress),
                    };
                    let task = tokio::spawn(run_follow(follow, sink));
                    entry.task = Some(task.abort_handle());
                }
                true
            }
            Done::Lobby(id, token, stream) => {
                ids.retain(|other| *other != id);
                let stream = match stream {
                    Ok(stream) if self.holds_lobby(token) => stream,
                    Ok(_) => {
                        return self
                            .send(Outgoing::plain(refusal(id, &unsubscribed())))
                            .await;
                    }
                    Err(status) => {
                        self.release_lobby(token);
                        return self.send(Outgoing::plain(refusal(id, &status))).await;
                    }
                };
                let followed = answer(id, pb::answer::Response::Followed(pb::Followed::default()));
                if !self.send(Outgoing::plain(followed)).await {
                    return false;
                }
                let mut follows = self.follows.lock();
                if self.is_closing() {
                    return false;
                }
                if let Some(entry) = follows.lobby.as_mut().filter(|f| f.token == token) {
                    let progress = Arc::clone(&entry.progress);
                    let task =
                        tokio::spawn(Arc::clone(self).run_lobby(id, token, progress, stream));
                    entry.task = Some(task.abort_handle());
                }
                true
            }
        }
    }

    /// Reserves the follow of `request`'s game: refused when the id is bad, the game is followed
    /// already, or the connection follows its maximum.
    fn reserve_game(&self, request: &pb::SubscribeRequest) -> Result<(Uuid, u64), Status> {
        let game_id = crate::gateway::parse_game_id("follow.game_id", &request.game_id)?;
        let mut follows = self.follows.lock();
        if follows.games.contains_key(&game_id) {
            return Err(ApiError::new(
                Reason::SubscriptionExists,
                format!("this connection follows game {game_id} already; unfollow it first"),
            )
            .into());
        }
        if follows.games.len() >= self.config.max_follows {
            return Err(ApiError::new(
                Reason::TooManyStreams,
                format!(
                    "this connection follows its maximum of {} games; unfollow one first",
                    self.config.max_follows
                ),
            )
            .into());
        }
        follows.next_token += 1;
        let token = follows.next_token;
        follows.games.insert(
            game_id,
            Followed {
                token,
                progress: Progress::new(request.from_seq.max(1)),
                task: None,
            },
        );
        Ok((game_id, token))
    }

    fn reserve_lobby(&self, after_seq: u64) -> Result<u64, Status> {
        let mut follows = self.follows.lock();
        if follows.lobby.is_some() {
            return Err(ApiError::new(
                Reason::SubscriptionExists,
                "this connection follows the lobby already; unfollow it first",
            )
            .into());
        }
        follows.next_token += 1;
        let token = follows.next_token;
        follows.lobby = Some(Followed {
            token,
            progress: Progress::new(after_seq),
            task: None,
        });
        Ok(token)
    }

    fn holds_game(&self, game_id: Uuid, token: u64) -> bool {
        self.follows
            .lock()
            .games
            .get(&game_id)
            .is_some_and(|f| f.token == token)
    }

    fn holds_lobby(&self, token: u64) -> bool {
        self.follows
            .lock()
            .lobby
            .as_ref()
            .is_some_and(|f| f.token == token)
    }

    /// Forgets the follow of `game_id` if it is still the one with `token`.
    fn release_game(&self, game_id: Uuid, token: u64) {
        let mut follows = self.follows.lock();
        if follows
            .games
            .get(&game_id)
            .is_some_and(|f| f.token == token)
        {
            follows.games.remove(&game_id);
        }
    }

    fn release_lobby(&self, token: u64) {
        let mut follows = self.follows.lock();
        if follows.lobby.as_ref().is_some_and(|f| f.token == token) {
            follows.lobby = None;
        }
    }

    /// `unfollow`: stops the follow; messages of it still queued are not written.
    fn unfollow(&self, id: u64, request: &pb::UnfollowRequest) -> Bytes {
        let stopped = if request.lobby {
            if !request.game_id.is_empty() {
                let status = ApiError::invalid_field(
                    "unfollow.game_id",
                    "must be empty when `lobby` is set",
                )
                .with_violation("unfollow.lobby", "is set while `game_id` names a game");
                return refusal(id, &status.into());
            }
            self.follows.lock().lobby.take()
        } else {
            let game_id = match crate::gateway::parse_game_id("unfollow.game_id", &request.game_id)
            {
                Ok(game_id) => game_id,
                Err(status) => return refusal(id, &status),
            };
            self.follows.lock().games.remove(&game_id)
        };
        match stopped {
            Some(follow) => {
                follow.progress.cancelled.store(true, Ordering::Relaxed);
                if let Some(task) = follow.task {
                    task.abort();
                }
                answer(
                    id,
                    pb::answer::Response::Followed(pb::Followed {
                        game_id: request.game_id.clone(),
                    }),
                )
            }
            None => {
                let what = if request.lobby {
                    "the lobby".to_string()
                } else {
                    format!("game {}", request.game_id)
                };
                let status = ApiError::new(
                    Reason::SubscriptionNotFound,
                    format!("this connection does not follow {what}"),
                );
                refusal(id, &status.into())
            }
        }
    }

    /// Aborts every follow; their entries stay for the goodbye's resume points.
    fn stop_follows(&self) {
        let follows = self.follows.lock();
        for follow in follows.games.values().chain(follows.lobby.iter()) {
            if let Some(task) = &follow.task {
                task.abort();
            }
        }
    }

    /// The goodbye for `reason`: where to resume each game, and the lobby.
    fn goodbye(&self, reason: Closing) -> Option<Bytes> {
        let (reason, message) = match reason {
            Closing::ClientGone => return None,
            Closing::TooSlow => (
                Reason::TooSlow,
                "this connection did not read fast enough; connect again and follow each game from its resume point",
            ),
            Closing::Shutdown => (
                Reason::ShuttingDown,
                "this gateway is shutting down; connect again (another gateway answers) and follow each game from its resume point",
            ),
        };
        let follows = self.follows.lock();
        let mut games: Vec<pb::Reconnect> = follows
            .games
            .iter()
            .map(|(game_id, follow)| pb::Reconnect {
                resume_from_seq: follow.progress.next.load(Ordering::Relaxed),
                reason: message.into(),
                game_id: game_id.to_string(),
            })
            .collect();
        games.sort_by(|a, b| a.game_id.cmp(&b.game_id));
        Some(encode(pb::server_message::Item::Goodbye(pb::Goodbye {
            reason: reason.as_str().into(),
            message: message.into(),
            games,
            lobby_after_seq: follows
                .lobby
                .as_ref()
                .map(|lobby| lobby.progress.next.load(Ordering::Relaxed)),
        })))
    }

    /// Copies the lobby stream to the connection until it ends or the follow stops.
    async fn run_lobby(
        self: Arc<Self>,
        request_id: u64,
        token: u64,
        progress: Arc<Progress>,
        mut stream: LobbyStream,
    ) {
        while let Some(item) = stream.next().await {
            let event = match item {
                Ok(pb::WatchLobbyResponse { event: Some(event) }) => event,
                Ok(pb::WatchLobbyResponse { event: None }) => continue,
                Err(status) => {
                    self.release_lobby(token);
                    self.send(Outgoing::plain(refusal(request_id, &status)))
                        .await;
                    return;
                }
            };
            let seq = event.seq;
            let item = Outgoing {
                message: encode(pb::server_message::Item::Lobby(event)),
                progress: Some((Arc::clone(&progress), seq)),
            };
            if !self.send(item).await {
                return;
            }
        }
        self.release_lobby(token);
    }
}

fn unsubscribed() -> Status {
    ApiError::new(Reason::Unsubscribed, "unfollowed before the follow started").into()
}

/// Runs one game's follow into the connection, then forgets it (unless it was replaced, or the
/// connection is closing: its goodbye says where to resume it).
async fn run_follow(follow: Follow, mut sink: ConnectSink) {
    follow.run(&mut sink).await;
    if !sink.conn.is_closing() {
        sink.conn.release_game(sink.game_id, sink.token);
    }
}

/// A follow's deliveries on a connection: each the encoded message its audience shares.
struct ConnectSink {
    conn: Arc<Connection>,
    game_id: Uuid,
    token: u64,
    request_id: u64,
    progress: Arc<Progress>,
}

impl FollowSink for ConnectSink {
    async fn event(&mut self, hub: &GameHub, entry: &LogEntry, shown: Shown<'_>) -> bool {
        match hub.event_message(entry, shown) {
            Some(message) => {
                let item = Outgoing {
                    message,
                    progress: Some((Arc::clone(&self.progress), entry.seq + 1)),
                };
                self.conn.send(item).await
            }
            None => true,
        }
    }

    async fn status(&mut self, hub: &GameHub, status: pb::GameStatus) -> bool {
        self.conn
            .send(Outgoing::plain(hub.status_message(status)))
            .await
    }

    async fn reconnect(&mut self, next: u64, reason: &str) {
        // On shutdown the goodbye says where to resume every game at once.
        if self.conn.gateway.inner.stopping.is_cancelled() {
            return;
        }
        self.conn.release_game(self.game_id, self.token);
        let hint = encode(pb::server_message::Item::Reconnect(pb::Reconnect {
            resume_from_seq: next,
            reason: reason.into(),
            game_id: self.game_id.to_string(),
        }));
        self.conn.send(Outgoing::plain(hint)).await;
    }

    async fn failed(&mut self, status: Status) {
        self.conn.release_game(self.game_id, self.token);
        self.conn
            .send(Outgoing::plain(refusal(self.request_id, &status)))
            .await;
    }

    async fn closed(&self) {
        self.conn.closed().await;
    }
}

/// Takes a connection's messages out for its transport: every message ready at once in one
/// batch, then, when the connection closes, its goodbye.
pub(crate) struct Writer {
    conn: Arc<Connection>,
    queue: mpsc::Receiver<Outgoing>,
    closing: watch::Receiver<Option<Closing>>,
    done: bool,
}

impl Writer {
    /// The next batch of encoded `ServerMessage`s to write, in order; `None` once the
    /// connection is over.
    pub(crate) async fn next(&mut self) -> Option<Vec<Bytes>> {
        loop {
            if self.done {
                return None;
            }
            let reason = *self.closing.borrow_and_update();
            if let Some(reason) = reason {
                self.done = true;
                let mut batch = Vec::new();
                // Answers and events already decided still go out, unless the client is not
                // reading them anyway.
                if reason != Closing::TooSlow {
                    while let Ok(item) = self.queue.try_recv() {
                        self.take(item, &mut batch);
                    }
                }
                batch.extend(self.conn.goodbye(reason));
                return (!batch.is_empty()).then_some(batch);
            }
            tokio::select! {
                biased;
                _ = self.closing.changed() => {}
                item = self.queue.recv() => {
                    let Some(item) = item else {
                        self.done = true;
                        return None;
                    };
                    let mut batch = Vec::with_capacity(4);
                    self.take(item, &mut batch);
                    while batch.len() < self.conn.config.batch_messages.max(1) {
                        match self.queue.try_recv() {
                            Ok(item) => self.take(item, &mut batch),
                            Err(_) => break,
                        }
                    }
                    if !batch.is_empty() {
                        return Some(batch);
                    }
                }
            }
        }
    }

    /// Why the connection closed, once it did.
    pub(crate) fn reason(&self) -> Option<Closing> {
        *self.closing.borrow()
    }

    /// Adds `item` to `batch` unless its follow was stopped, and moves its follow's position.
    fn take(&self, item: Outgoing, batch: &mut Vec<Bytes>) {
        if let Some((progress, next)) = item.progress {
            if progress.cancelled.load(Ordering::Relaxed) {
                return;
            }
            progress.next.store(next, Ordering::Relaxed);
        }
        batch.push(item.message);
    }
}

impl Drop for Writer {
    /// The transport is gone: the reader and the follows stop.
    fn drop(&mut self) {
        self.conn.close(Closing::ClientGone);
    }
}
