//! The matchmaking store conformance suite on the in-memory store.

use hidden_front_matchmaking::conformance::Check;
use hidden_front_matchmaking::store::memory::MemoryMatchStore;
use std::sync::Arc;

async fn run(_name: &'static str, check: Check) {
    check(Arc::new(MemoryMatchStore::new())).await;
}

hidden_front_matchmaking::match_store_tests!(run);
