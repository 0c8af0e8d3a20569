//! The webhook store conformance checks on [`MemoryWebhookStore`].

mod conformance;

use hidden_front_webhooks::MemoryWebhookStore;
use hidden_front_webhooks::store::WebhookStore;
use std::sync::Arc;

async fn run(check: fn(Arc<dyn WebhookStore>) -> conformance::CheckFuture) {
    check(Arc::new(MemoryWebhookStore::new())).await;
}

webhook_store_tests!(run);
