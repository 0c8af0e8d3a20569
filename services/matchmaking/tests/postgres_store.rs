//! The matchmaking store conformance suite on Postgres, each check on a fresh, migrated
//! database (`DATABASE_URL`, default `postgres://postgres@127.0.0.1:5432/postgres`).

mod common;

use common::migrated_database;
use hidden_front_matchmaking::store::postgres::PostgresMatchStore;
use hidden_front_matchmaking_conformance::Check;
use std::sync::Arc;

async fn run(name: &'static str, check: Check) {
    let db = migrated_database().await;
    let pool = db.pool(6).await;
    let store = PostgresMatchStore::from_pool(pool.clone());
    let outcome = tokio::spawn(check(Arc::new(store))).await;
    pool.close().await;
    drop(db);
    if let Err(error) = outcome {
        match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(error) => panic!("check {name} did not finish: {error}"),
        }
    }
}

hidden_front_matchmaking_conformance::match_store_tests!(run);
