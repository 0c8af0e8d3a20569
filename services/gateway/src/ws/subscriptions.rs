//! The subscriptions of a connection: `subscribe` (a game's events) and `watch_lobby` (the
//! player's lobby events) reserve an id, answer, then forward the gateway's stream to the socket
//! until it ends (`end`) or stops early (`reconnect` with the resume point); `unsubscribe` stops
//! one, and events still queued for it are not written.

use super::codec::UnsubscribeRequest;
use super::connection::{Conn, Outbound, Sub, SubCell};
use super::messages::{
    EndMessage, EventMessage, LobbyMessage, ReconnectMessage, StatusMessage, result_text, to_text,
};
use futures_util::StreamExt;
use hidden_front_api_error::{ApiError, Reason, quote};
use hidden_front_proto::v1 as pb;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

impl Conn {
    /// `subscribe`: reserves the id, opens the gateway stream, answers, then forwards.
    pub(super) async fn subscribe(self: Arc<Self>, id: Value, request: pb::SubscribeRequest) {
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
    pub(super) fn reserve(
        &self,
        id: &Value,
        first_seq: u64,
    ) -> Result<(String, u64, Arc<SubCell>), Status> {
        let key = id.to_string();
        let cell = Arc::new(SubCell::new(first_seq));
        let mut subs = self.subs.lock();
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
    pub(super) async fn start(
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
        let mut subs = self.subs.lock();
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
    pub(super) async fn watch_lobby(self: Arc<Self>, id: Value, request: pb::WatchLobbyRequest) {
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
    pub(super) async fn forward_lobby(
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
    pub(super) fn remove_sub(&self, key: &str, token: u64) -> bool {
        let mut subs = self.subs.lock();
        if subs.map.get(key).is_some_and(|sub| sub.token == token) {
            subs.map.remove(key);
            true
        } else {
            false
        }
    }

    /// Copies one gateway stream to the socket until it ends, then says `end`.
    pub(super) async fn forward(
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
                pb::subscribe_response::Item::Status(status) => {
                    Outbound::plain(to_text(&StatusMessage::new(&id, &status)))
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
    pub(super) async fn unsubscribe(&self, id: &Value, request: UnsubscribeRequest) {
        let key = request.subscription.to_string();
        let removed = self.subs.lock().map.remove(&key);
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
