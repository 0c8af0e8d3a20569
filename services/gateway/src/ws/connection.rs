//! The state of one authenticated connection, shared by its reader, its writer, its request
//! tasks and its forwarders: why it is closing, when the client was last heard, the bounded
//! outbound queue (a full queue for the stall timeout closes the connection), and the open
//! subscriptions with their resume points.

use super::WsConfig;
use super::closing::Closing;
use super::messages::{ErrorMessage, result_text, to_text};
use crate::auth::Player;
use crate::gateway::Gateway;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::error::SendTimeoutError;
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;
use tonic::Status;

/// One authenticated connection, shared by its reader, writer, request tasks and forwarders.
pub(super) struct Conn {
    pub(super) gateway: Gateway,
    pub(super) config: WsConfig,
    pub(super) player: Player,
    out: mpsc::Sender<Outbound>,
    /// `None` while open; the first reason to close wins.
    pub(super) closing: watch::Sender<Option<Closing>>,
    pub(super) subs: Mutex<Subs>,
    opened: Instant,
    last_heard_ms: AtomicU64,
}

/// The subscriptions of a connection, by the JSON text of their id.
#[derive(Default)]
pub(super) struct Subs {
    pub(super) map: HashMap<String, Sub>,
    pub(super) next_token: u64,
}

/// One subscription.
pub(super) struct Sub {
    /// Distinguishes this subscription from a later one that reuses its id.
    pub(super) token: u64,
    /// The client's id of the `subscribe` request, echoed on every item.
    pub(super) id: Value,
    pub(super) cell: Arc<SubCell>,
    /// The forwarder, once the subscription runs.
    pub(super) task: Option<AbortHandle>,
}

/// What the writer and the forwarder of one subscription share.
pub(super) struct SubCell {
    /// Set by `unsubscribe`: events still queued are not written.
    pub(super) cancelled: AtomicBool,
    /// The first sequence number not yet written to the socket: the resume hint.
    pub(super) next_seq: AtomicU64,
}

impl SubCell {
    /// A running subscription whose first wanted position is `first_seq`.
    pub(super) fn new(first_seq: u64) -> SubCell {
        SubCell {
            cancelled: AtomicBool::new(false),
            next_seq: AtomicU64::new(first_seq),
        }
    }
}

/// One item for the socket.
pub(super) struct Outbound {
    pub(super) text: String,
    /// For events: the subscription and the event's seq, to skip cancelled subscriptions and to
    /// keep resume hints exact.
    pub(super) event: Option<(Arc<SubCell>, u64)>,
}

impl Outbound {
    pub(super) fn plain(text: String) -> Outbound {
        Outbound { text, event: None }
    }
}

impl Conn {
    /// A connection of `player` whose socket writer reads `out`'s queue.
    pub(super) fn new(
        gateway: Gateway,
        config: WsConfig,
        player: Player,
        out: mpsc::Sender<Outbound>,
    ) -> Conn {
        Conn {
            gateway,
            config,
            player,
            out,
            closing: watch::channel(None).0,
            subs: Mutex::new(Subs::default()),
            opened: Instant::now(),
            last_heard_ms: AtomicU64::new(0),
        }
    }

    /// Starts closing for `reason` unless already closing.
    pub(super) fn close(&self, reason: Closing) {
        self.closing.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(reason);
                true
            } else {
                false
            }
        });
    }

    pub(super) fn reason(&self) -> Closing {
        self.closing.borrow().clone().unwrap_or(Closing::ClientGone)
    }

    pub(super) fn heard(&self) {
        let ms = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_heard_ms.store(ms, Ordering::Relaxed);
    }

    pub(super) fn silent_for(&self) -> Duration {
        let heard = Duration::from_millis(self.last_heard_ms.load(Ordering::Relaxed));
        self.opened.elapsed().saturating_sub(heard)
    }

    /// Queues an item, waiting at most the stall timeout for room; a queue that stays full
    /// closes the connection (the client is not reading). `false` when nothing more should be
    /// queued.
    pub(super) async fn enqueue(&self, item: Outbound) -> bool {
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

    pub(super) async fn send_result(&self, id: &Value, response: Value) {
        self.enqueue(Outbound::plain(result_text(id, &response)))
            .await;
    }

    pub(super) async fn send_error(&self, id: &Value, status: &Status) {
        self.enqueue(Outbound::plain(to_text(&ErrorMessage::new(id, status))))
            .await;
    }

    /// Aborts every forwarder; the entries stay for the writer's resume hints.
    pub(super) fn stop_forwarders(&self) {
        let subs = self.subs.lock();
        for sub in subs.map.values() {
            if let Some(task) = &sub.task {
                task.abort();
            }
        }
    }

    /// `(subscription id, resume_from_seq)` of every subscription.
    pub(super) fn resume_hints(&self) -> Vec<(Value, u64)> {
        let subs = self.subs.lock();
        let mut hints: Vec<(Value, u64)> = subs
            .map
            .values()
            .map(|sub| (sub.id.clone(), sub.cell.next_seq.load(Ordering::Relaxed)))
            .collect();
        hints.sort_by_key(|(id, _)| id.to_string());
        hints
    }
}
