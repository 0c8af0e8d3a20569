//! The `WatchGame` pump: the one full-information stream, for internal consumers (the gateway
//! and the computer seat's driver project it per viewer). No gaps, no duplicates: it reads the
//! log in pages from the last seq sent, and waits for the store's version to pass it. Asked
//! (`with_status`), it also sends the game's status once caught up and whenever it changed:
//! after events, on the store's status wake-ups (presence flips, an outage's accounting), and
//! when a connected side's leases lapse by time. After events the status is the one last read,
//! advanced by the events streamed since ([`FollowedStatus`]), so a move costs no read of the
//! game; it is read again (`GameStore::observe`) only when it cannot be derived that way.

use crate::errors::store_error_status;
use crate::request::parse_game_id;
use crate::service::SessionService;
use crate::session_store::{became_lost, lost_error};
use crate::status::{FollowedStatus, game_status};
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Event, Phase, Reveal, reveal};
use hidden_front_time::WallClock;
use hidden_front_wire as wire;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::watch;
use tokio_stream::{Stream, StreamExt};
use tonic::Status;
use uuid::Uuid;

/// Events fetched per store read while streaming (also the stream's buffer).
const WATCH_PAGE: usize = 256;

/// How long after a lease's end its lapse is read: past the instant, so the read sees it ended.
const LAPSE_MARGIN: Duration = Duration::from_millis(20);

/// Returns when the game's status changes without an event
/// ([`hidden_front_store::GameStore::status_changes`]);
/// never, for a watch that did not ask for the status.
async fn status_changed(changes: &mut Option<watch::Receiver<u64>>) {
    if let Some(changes) = changes
        && changes.changed().await.is_ok()
    {
        return;
    }
    std::future::pending().await
}

/// Returns just after `lapse` by the session's clock; never without one.
async fn lapsed(lapse: Option<SystemTime>, clock: &WallClock) {
    match lapse {
        Some(at) => {
            let wait = at.duration_since(clock.now()).unwrap_or_default();
            tokio::time::sleep(wait + LAPSE_MARGIN).await;
        }
        None => std::future::pending().await,
    }
}

/// The stream `WatchGame` answers with.
pub(crate) type EventStream =
    Pin<Box<dyn Stream<Item = Result<pb::WatchGameResponse, Status>> + Send>>;

/// One item of a watched game as the session's Rust callers in this process receive it
/// ([`SessionService::watch_items`]); `WatchGame` sends each as a `WatchGameResponse`.
#[derive(Debug, Clone)]
pub enum WatchItem {
    /// An event of the log, with full information.
    Event(WatchedEvent),
    /// The game's status (when asked for), sent only after every event up to its version.
    Status(pb::GameStatus),
}

/// An event of a watched game's log.
#[derive(Debug, Clone)]
pub struct WatchedEvent {
    /// Its position in the log.
    pub seq: u64,
    /// The engine's event, with full information.
    pub event: Event,
    /// The W3C `traceparent` of the command that caused it, if traced.
    pub trace_parent: Option<String>,
    /// When the store committed it.
    pub recorded_at: SystemTime,
    /// On the game's end: what the ended game reveals (the protobuf form carries it in the
    /// end event; an engine watcher rebuilds it from the log).
    pub end: Option<Reveal>,
}

/// The stream of [`SessionService::watch_items`].
pub type WatchStream = Pin<Box<dyn Stream<Item = Result<WatchItem, Status>> + Send>>;

impl SessionService {
    /// `WatchGame`: [`SessionService::watch_items`], each item in its versioned protobuf form
    /// (the full-information `GameEvent` the watchers rebuild the engine's event from).
    pub(crate) async fn watch(&self, request: pb::WatchGameRequest) -> Result<EventStream, Status> {
        let game_id = parse_game_id("game_id", &request.game_id)?;
        let record = self.load(game_id, false).await?;
        let rules = *record.game.rules();
        let items = self
            .watch_items(game_id, request.from_seq, request.with_status)
            .await?;
        let id = game_id.to_string();
        Ok(Box::pin(items.map(move |item| {
            item.map(|item| match item {
                WatchItem::Event(watched) => pb::WatchGameResponse {
                    event: Some(wire::engine_event_to_proto(
                        &rules,
                        &id,
                        watched.seq,
                        &watched.event,
                        &watched.end.unwrap_or_default(),
                    )),
                    trace_parent: watched.trace_parent.unwrap_or_default(),
                    recorded_at: Some(wire::timestamp_to_proto(watched.recorded_at)),
                    status: None,
                },
                WatchItem::Status(status) => pb::WatchGameResponse {
                    status: Some(status),
                    ..pb::WatchGameResponse::default()
                },
            })
        })))
    }

    /// The game's events from `from_seq` with full information, then live ones, and (asked
    /// `with_status`) its status: the one full-information stream, fed by a task that pages
    /// through the log and waits on the store's change notification; it ends after the game's
    /// end or when the receiver goes away. In this process the gateway follows games through it
    /// directly, as the engine's events, with no protobuf on the way.
    pub async fn watch_items(
        &self,
        game_id: Uuid,
        from_seq: u64,
        with_status: bool,
    ) -> Result<WatchStream, Status> {
        // The cached game will do: its rules never change, and an end it holds is final (the
        // stream itself reads the log from the store, so a stale cache only costs a page read).
        let record = self.load(game_id, false).await?;
        if record.game.phase() == Phase::Ended && from_seq > record.version {
            // Nothing more will ever come: an empty stream, not one held open forever.
            return Ok(Box::pin(tokio_stream::empty()));
        }
        let store = Arc::clone(&self.store);
        let mut changes = store
            .watch(game_id)
            .await
            .map_err(|e| store_error_status(&e))?;
        // Taken after `watch` (which starts listening across processes) and before the first
        // status read, so no change after that read goes unnoticed.
        let mut status_changes = with_status.then(|| store.status_changes(game_id));
        let clock = self.config.clock.clone();
        // A stream of a host that lost its store would wait forever on notifications that no
        // longer come: it ends instead (retriable), and its caller follows the game again from
        // the next seq on a host that serves (`session_store.rs`).
        let mut store_lost = self.store_lost.clone();
        let (tx, rx) = tokio::sync::mpsc::channel(WATCH_PAGE);
        let mut next = from_seq.max(1);
        tokio::spawn(async move {
            // The status last sent.
            let mut sent_status: Option<pb::GameStatus> = None;
            // The status last read, advanced by every event streamed since; `None` before the
            // first read and after an event it could not follow (the status is then read).
            let mut followed: Option<FollowedStatus> = None;
            // Whether the status may have changed without an event (a status wake-up, a lease
            // that lapsed), so it must be read again once the events caught up.
            let mut read_due = false;
            // When a connected side's leases end, if nothing is heard before.
            let mut lapse: Option<SystemTime> = None;
            loop {
                let page = match store.events(game_id, next, WATCH_PAGE).await {
                    Ok(page) => page,
                    Err(e) => {
                        let _ = tx.send(Err(store_error_status(&e))).await;
                        return;
                    }
                };
                let mut ended = false;
                let page_len = page.len();
                for stored in page {
                    ended |= matches!(stored.event, Event::Ended { .. });
                    // Everything revealed: the end with what the ended game reveals.
                    let end = if ended {
                        match store.load(game_id).await {
                            Ok(Some(record)) => Some(reveal(&record.game).unwrap_or_default()),
                            Ok(None) => Some(Reveal::default()),
                            Err(e) => {
                                let _ = tx.send(Err(store_error_status(&e))).await;
                                return;
                            }
                        }
                    } else {
                        None
                    };
                    next = stored.seq + 1;
                    if let Some(status) = &mut followed
                        && !status.follow(&stored)
                    {
                        followed = None;
                    }
                    let item = WatchItem::Event(WatchedEvent {
                        seq: stored.seq,
                        event: stored.event,
                        trace_parent: stored.trace_parent,
                        recorded_at: stored.recorded_at,
                        end,
                    });
                    if tx.send(Ok(item)).await.is_err() {
                        return;
                    }
                }
                if page_len == WATCH_PAGE {
                    continue;
                }
                // Caught up: the status, if asked for, sent only once every event up to its
                // version was sent and only if it changed. Derived from the events when it can
                // be; otherwise read, and a read that finds newer events sends those first.
                if with_status {
                    // A lease that ended unrenewed since it was read may have made a side away.
                    let lease_ended = lapse.is_some_and(|at| at <= clock.now());
                    let derived = followed
                        .as_ref()
                        .filter(|status| !read_due && !lease_ended && status.version() + 1 == next)
                        .and_then(FollowedStatus::status);
                    let status = match derived {
                        Some(status) => status,
                        None => {
                            let observed = match store.observe(game_id, clock.now()).await {
                                Ok(Some(observed)) => observed,
                                Ok(None) => return,
                                Err(e) => {
                                    let _ = tx.send(Err(store_error_status(&e))).await;
                                    return;
                                }
                            };
                            let status = game_status(&observed);
                            let read = FollowedStatus::read(observed);
                            read_due = false;
                            lapse = read.lapse();
                            let newer = read.version() >= next;
                            // The newer events are streamed next, and followed from this read
                            // (which holds them already).
                            followed = Some(read);
                            if newer && !ended {
                                continue;
                            }
                            status
                        }
                    };
                    if sent_status.as_ref() != Some(&status) {
                        if tx.send(Ok(WatchItem::Status(status))).await.is_err() {
                            return;
                        }
                        sent_status = Some(status);
                    }
                }
                if ended {
                    return;
                }
                // Wait until the log grows past what was sent, the status changes, a connected
                // side's leases lapse, or the client goes away.
                loop {
                    if *changes.borrow_and_update() >= next {
                        break;
                    }
                    tokio::select! {
                        changed = changes.changed() => if changed.is_err() { return },
                        () = status_changed(&mut status_changes) => {
                            read_due = true;
                            break;
                        }
                        () = lapsed(lapse, &clock) => {
                            // Usually a renewal has moved the lease on: the presence alone (a
                            // cheaper read than the whole game) says whether anything shows.
                            lapse = None;
                            if let Ok(presence) = store.presence(game_id, clock.now()).await {
                                let shown = sent_status
                                    .map(|s| [s.south_connected, s.north_connected]);
                                if shown == Some(presence.connected()) {
                                    if let Some(status) = &mut followed {
                                        status.renewed(presence);
                                    }
                                    lapse = presence.connected_until.into_iter().flatten().min();
                                    continue;
                                }
                            }
                            read_due = true;
                            break;
                        }
                        () = tx.closed() => return,
                        true = became_lost(&mut store_lost) => {
                            let _ = tx.send(Err(store_error_status(&lost_error()))).await;
                            return;
                        }
                    }
                }
            }
        });
        Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }
}
