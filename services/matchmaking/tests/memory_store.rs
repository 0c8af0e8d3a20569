//! The matchmaking store conformance suite on the in-memory store.

use hidden_front_matchmaking::store::memory::MemoryMatchStore;
use hidden_front_matchmaking_conformance::Check;
use std::sync::Arc;

async fn run(_name: &'static str, check: Check) {
    check(Arc::new(MemoryMatchStore::new())).await;
}

hidden_front_matchmaking_conformance::match_store_tests!(run);
