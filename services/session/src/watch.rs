//! The `WatchGame` pump: the one full-information stream, for internal consumers (the gateway
//! and the computer seat's driver project it per viewer). No gaps, no duplicates: it reads the
//! log in pages from the last seq sent, and waits for the store's version to pass it.

use crate::errors::store_error_status;
use crate::request::parse_game_id;
use crate::service::SessionService;
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Event, Phase, Reveal, reveal};
use hidden_front_wire as wire;
use std::pin::Pin;
use std::sync::Arc;
use tokio_stream::Stream;
use tonic::Status;

/// Events fetched per store read while streaming (also the stream's buffer).
const WATCH_PAGE: usize = 256;

/// The stream `WatchGame` answers with.
pub(crate) type EventStream =
    Pin<Box<dyn Stream<Item = Result<pb::WatchGameResponse, Status>> + Send>>;

impl SessionService {
    /// `WatchGame`: a stream of the game's full-information events from `from_seq`, fed by a
    /// task that pages through the log and waits on the store's change notification; it ends
    /// after the game's end or when the watcher goes away.
    pub(crate) async fn watch(&self, request: pb::WatchGameRequest) -> Result<EventStream, Status> {
        let game_id = parse_game_id("game_id", &request.game_id)?;
        // The cached game will do: its rules never change, and an end it holds is final (the
        // stream itself reads the log from the store, so a stale cache only costs a page read).
        let record = self.load(game_id, false).await?;
        let rules = *record.game.rules();
        if record.game.phase() == Phase::Ended && request.from_seq > record.version {
            // Nothing more will ever come: an empty stream, not one held open forever.
            return Ok(Box::pin(tokio_stream::empty()));
        }
        let store = Arc::clone(&self.store);
        let mut changes = store
            .watch(game_id)
            .await
            .map_err(|e| store_error_status(&e))?;
        let (tx, rx) = tokio::sync::mpsc::channel(WATCH_PAGE);
        let id = game_id.to_string();
        let mut next = request.from_seq.max(1);
        tokio::spawn(async move {
            loop {
                let page = match store.events(game_id, next, WATCH_PAGE).await {
                    Ok(page) => page,
                    Err(e) => {
                        let _ = tx.send(Err(store_error_status(&e))).await;
                        return;
                    }
                };
                let mut ended = false;
                for stored in &page {
                    ended |= matches!(stored.event, Event::Ended { .. });
                    // Internal full-information stream: everything revealed, the end with what
                    // the ended game reveals, in the versioned protobuf form the watchers rebuild
                    // the engine's event from.
                    let end = if ended {
                        match store.load(game_id).await {
                            Ok(Some(record)) => reveal(&record.game).unwrap_or_default(),
                            Ok(None) => Reveal::default(),
                            Err(e) => {
                                let _ = tx.send(Err(store_error_status(&e))).await;
                                return;
                            }
                        }
                    } else {
                        Reveal::default()
                    };
                    let event =
                        wire::engine_event_to_proto(&rules, &id, stored.seq, &stored.event, &end);
                    if tx
                        .send(Ok(pb::WatchGameResponse {
                            event: Some(event),
                            trace_parent: stored.trace_parent.clone().unwrap_or_default(),
                            recorded_at: Some(wire::timestamp_to_proto(stored.recorded_at)),
                        }))
                        .await
                        .is_err()
                    {
                        return;
                    }
                    next = stored.seq + 1;
                }
                if ended {
                    return;
                }
                if page.len() == WATCH_PAGE {
                    continue;
                }
                // Wait until the log grows past what was sent (or the client goes away).
                loop {
                    if *changes.borrow_and_update() >= next {
                        break;
                    }
                    tokio::select! {
                        changed = changes.changed() => if changed.is_err() { return },
                        () = tx.closed() => return,
                    }
                }
            }
        });
        Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }
}
