//! The `WatchLifecycle` pump: the outbox's facts after the consumer's cursor, in position
//! (commit) order, then live ones. No gaps, no duplicates: it pages from the last position sent
//! and waits for the outbox's position to pass it, so a consumer that reconnects with the cursor
//! of the last fact it processed gets exactly what came after.

use crate::errors::store_error_status;
use crate::service::SessionService;
use hidden_front_proto::v1 as pb;
use hidden_front_wire as wire;
use std::pin::Pin;
use std::sync::Arc;
use tokio_stream::Stream;
use tonic::Status;

/// Facts fetched per store read while streaming (also the stream's buffer).
const FACT_PAGE: usize = 256;

/// The stream `WatchLifecycle` answers with.
pub(crate) type FactStream =
    Pin<Box<dyn Stream<Item = Result<pb::WatchLifecycleResponse, Status>> + Send>>;

impl SessionService {
    /// `WatchLifecycle`: a task pages through the outbox from `after_cursor` and then waits on
    /// the store's outbox position; it ends when the consumer goes away (or with the store's
    /// error, which the consumer retries from its last cursor).
    pub(crate) async fn follow_lifecycle(
        &self,
        request: pb::WatchLifecycleRequest,
    ) -> Result<FactStream, Status> {
        let store = Arc::clone(&self.store);
        // Follow first, then read: a commit after the first read wakes the follower.
        let mut position = store
            .watch_facts()
            .await
            .map_err(|e| store_error_status(&e))?;
        let (tx, rx) = tokio::sync::mpsc::channel(FACT_PAGE);
        let mut cursor = request.after_cursor;
        tokio::spawn(async move {
            loop {
                let page = match store.facts_after(cursor, FACT_PAGE).await {
                    Ok(page) => page,
                    Err(e) => {
                        let _ = tx.send(Err(store_error_status(&e))).await;
                        return;
                    }
                };
                for fact in &page {
                    let sent = pb::WatchLifecycleResponse {
                        fact: Some(wire::lifecycle_fact_to_proto(fact)),
                    };
                    if tx.send(Ok(sent)).await.is_err() {
                        return;
                    }
                    cursor = fact.position;
                }
                if page.len() == FACT_PAGE {
                    continue;
                }
                loop {
                    if *position.borrow_and_update() > cursor {
                        break;
                    }
                    tokio::select! {
                        changed = position.changed() => if changed.is_err() { return },
                        () = tx.closed() => return,
                    }
                }
            }
        });
        Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }
}
