//! The `WatchLifecycle` pump: the outbox's facts after the consumer's place, then live ones. No
//! gaps, no duplicates: it pages from the last place sent and waits for the outbox to move past
//! it, so a consumer that reconnects with the place of the last fact it processed gets exactly
//! what came after.
//!
//! Two ways to give the place: `after_position` (a position per shard: each shard is read after
//! its own entry, so one shard that does not answer holds back only its own facts, which arrive
//! once it answers again) or `after_cursor` (the merged `u64` feed, as before: on a sharded store
//! it waits while any shard is unreachable). Every fact carries its position either way, so a
//! consumer can move from the cursor to the position without reading anything twice.

use crate::errors::{AFTER_POSITION_FIELD, invalid_field, store_error_status};
use crate::service::SessionService;
use crate::session_store::{became_lost, lost_error};
use hidden_front_proto::v1 as pb;
use hidden_front_store::GameStore;
use hidden_front_store::lifecycle::FeedPosition;
use hidden_front_wire as wire;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tonic::Status;

/// Facts fetched per store read while streaming (also the stream's buffer).
const FACT_PAGE: usize = 256;

/// How soon a shard that did not answer is asked again when nothing else wakes the pump (its
/// own commits cannot: it was not reachable to say so).
const UNANSWERED_RETRY: Duration = Duration::from_secs(1);

/// The stream `WatchLifecycle` answers with.
pub(crate) type FactStream =
    Pin<Box<dyn Stream<Item = Result<pb::WatchLifecycleResponse, Status>> + Send>>;

type Sink = mpsc::Sender<Result<pb::WatchLifecycleResponse, Status>>;

impl SessionService {
    /// `WatchLifecycle`: a task pages through the outbox from the request's place and then
    /// waits on the store's outbox positions; it ends when the consumer goes away (or with the
    /// store's error, which the consumer retries from its last place). A malformed
    /// `after_position`, or one naming a shard the store does not have, is refused before
    /// anything streams.
    pub(crate) async fn follow_lifecycle(
        &self,
        request: pb::WatchLifecycleRequest,
    ) -> Result<FactStream, Status> {
        let store = Arc::clone(&self.store);
        let after = if request.after_position.is_empty() {
            None
        } else {
            let position: FeedPosition = request
                .after_position
                .parse()
                .map_err(|e| invalid_field(AFTER_POSITION_FIELD, format!("{e}")))?;
            position
                .check_shards(store.feed_shards())
                .map_err(|e| invalid_field(AFTER_POSITION_FIELD, format!("{e}")))?;
            Some(position)
        };
        let (tx, rx) = mpsc::channel(FACT_PAGE);
        match after {
            Some(position) => {
                // Follow first, then read: a commit after the first read wakes the follower.
                let wake = store
                    .watch_fact_positions()
                    .await
                    .map_err(|e| store_error_status(&e))?;
                tokio::spawn(by_position(
                    store,
                    wake,
                    self.store_lost.clone(),
                    position,
                    tx,
                ));
            }
            None => {
                let wake = store
                    .watch_facts()
                    .await
                    .map_err(|e| store_error_status(&e))?;
                tokio::spawn(by_cursor(
                    store,
                    wake,
                    self.store_lost.clone(),
                    request.after_cursor,
                    tx,
                ));
            }
        }
        Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }
}

/// Sends `fact` with the position after it; `false` when the consumer is gone.
async fn send(tx: &Sink, fact: &hidden_front_store::lifecycle::Fact, after: &FeedPosition) -> bool {
    let sent = pb::WatchLifecycleResponse {
        fact: Some(wire::lifecycle_fact_to_proto(fact, after)),
    };
    tx.send(Ok(sent)).await.is_ok()
}

/// The feed by position: each page after the position reached, marking the outbox's positions
/// seen before reading, so a commit after the read wakes it; while a shard does not answer it
/// is asked again every [`UNANSWERED_RETRY`].
async fn by_position(
    store: Arc<dyn GameStore>,
    mut wake: tokio::sync::watch::Receiver<FeedPosition>,
    mut lost: tokio::sync::watch::Receiver<bool>,
    mut position: FeedPosition,
    tx: Sink,
) {
    loop {
        wake.borrow_and_update();
        let page = match store.facts_after_position(&position, FACT_PAGE).await {
            Ok(page) => page,
            Err(e) => {
                let _ = tx.send(Err(store_error_status(&e))).await;
                return;
            }
        };
        for positioned in &page.facts {
            if !send(&tx, &positioned.fact, &positioned.after).await {
                return;
            }
            position = positioned.after.clone();
        }
        if page.facts.len() == FACT_PAGE {
            continue;
        }
        let retry = !page.unanswered.is_empty();
        tokio::select! {
            changed = wake.changed() => if changed.is_err() { return },
            () = tx.closed() => return,
            () = tokio::time::sleep(UNANSWERED_RETRY), if retry => {}
            true = became_lost(&mut lost) => return end_lost(&tx).await,
        }
    }
}

/// The merged feed by `u64` cursor, as before positions: on a sharded store a position is
/// delivered once every shard has reached it, so the position after a fact is every shard at
/// its cursor.
async fn by_cursor(
    store: Arc<dyn GameStore>,
    mut wake: tokio::sync::watch::Receiver<u64>,
    mut lost: tokio::sync::watch::Receiver<bool>,
    mut cursor: u64,
    tx: Sink,
) {
    let shards = store.feed_shards();
    loop {
        let page = match store.facts_after(cursor, FACT_PAGE).await {
            Ok(page) => page,
            Err(e) => {
                let _ = tx.send(Err(store_error_status(&e))).await;
                return;
            }
        };
        for fact in &page {
            let after = FeedPosition::from_cursor(fact.position, shards);
            if !send(&tx, fact, &after).await {
                return;
            }
            cursor = fact.position;
        }
        if page.len() == FACT_PAGE {
            continue;
        }
        loop {
            if *wake.borrow_and_update() > cursor {
                break;
            }
            tokio::select! {
                changed = wake.changed() => if changed.is_err() { return },
                () = tx.closed() => return,
                true = became_lost(&mut lost) => return end_lost(&tx).await,
            }
        }
    }
}

/// Ends a feed whose host lost its store (its wake-ups would never come again): the consumer
/// follows again from its last place, on a host that serves (`session_store.rs`).
async fn end_lost(tx: &Sink) {
    let _ = tx.send(Err(store_error_status(&lost_error()))).await;
}
