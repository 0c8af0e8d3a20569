//! The webhook store conformance checks on [`PgWebhookStore`] (each on a fresh, migrated
//! database), and two "replicas" on one database: two game stores writing facts at once, two
//! deliverers for one endpoint, each fact delivered exactly once in the steady state.
//!
//! Needs `DATABASE_URL` (a role that may create databases), e.g.
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres`.

mod conformance;
mod support;

use hidden_front_store::GameStore;
use hidden_front_store::postgres::PostgresStore;
use hidden_front_test_database::TestDatabase;
use hidden_front_webhooks::Deliveries;
use hidden_front_webhooks::postgres::PgWebhookStore;
use hidden_front_webhooks::store::WebhookStore;
use std::collections::HashMap;
use std::sync::Arc;
use support::{Answer, DEADLINE, Receiver, all_facts, config, write_game};
use tokio_util::sync::CancellationToken;

/// A migrated database and a game store on it (a "replica").
async fn migrated(db: &TestDatabase) -> PostgresStore {
    let store = PostgresStore::connect(db.url()).await.expect("connect");
    store.migrate().await.expect("migrate");
    store
}

async fn run(check: fn(Arc<dyn WebhookStore>) -> conformance::CheckFuture) {
    let db = TestDatabase::create().await;
    let games = migrated(&db).await;
    check(Arc::new(PgWebhookStore::new(games.pool().clone()))).await;
    games.close().await;
}

webhook_store_tests!(run);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_deliver_each_fact_once_while_both_write() {
    let db = TestDatabase::create().await;
    let receiver = Receiver::start(Answer::Ok).await;
    let config = config(&receiver.url(), 60_000, "");
    let stop = CancellationToken::new();
    let mut replicas: Vec<Arc<dyn GameStore>> = Vec::new();
    let mut handles = Vec::new();
    for replica in 0..2 {
        let games = migrated(&db).await;
        let store: Arc<dyn WebhookStore> = Arc::new(PgWebhookStore::new(games.pool().clone()));
        let games: Arc<dyn GameStore> = Arc::new(games);
        let deliveries = Deliveries::new(
            games.clone(),
            store,
            config.clone(),
            format!("replica-{replica}"),
        );
        handles.extend(deliveries.spawn(stop.child_token()));
        replicas.push(games);
    }
    // Both replicas write games at once.
    let writers: Vec<_> = replicas
        .iter()
        .enumerate()
        .map(|(r, games)| {
            let games = games.clone();
            tokio::spawn(async move {
                for i in 0..15u64 {
                    write_game(&*games, r as u64 * 1000 + i).await;
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let facts = all_facts(&*replicas[0]).await;
    assert_eq!(facts.len(), 2 * 15 * 2);
    let received = receiver.wait_for(facts.len()).await;
    let mut seen: HashMap<&str, u32> = HashMap::new();
    for r in &received {
        assert!(r.verified);
        *seen.entry(r.id.as_str()).or_default() += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "sent more than once: {twice:?}");
    assert_eq!(
        received.iter().map(|r| r.position).collect::<Vec<_>>(),
        facts.iter().map(|f| f.position).collect::<Vec<_>>(),
        "in outbox order"
    );
    stop.cancel();
    for handle in handles {
        tokio::time::timeout(DEADLINE, handle)
            .await
            .expect("stops")
            .unwrap();
    }
}
