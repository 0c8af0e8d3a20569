//! The conformance suite on [`MemoryStore`]: every check is its own test, on a fresh store.

use hidden_front_store::memory::MemoryStore;
use hidden_front_store_conformance::Check;
use std::sync::Arc;

/// Runs one check on a fresh, empty store.
async fn run(_name: &'static str, check: Check) {
    check(Arc::new(MemoryStore::new())).await;
}

hidden_front_store_conformance::conformance_tests!(run);
