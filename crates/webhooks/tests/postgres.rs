//! The webhook store conformance checks on [`PgWebhookStore`] (each on a fresh, migrated
//! database), and two "replicas" on one database: two game stores writing facts at once, two
//! deliverers for one endpoint, each fact delivered exactly once in the steady state.
//!
//! Needs `DATABASE_URL` (a role that may create databases), e.g.
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres`.

mod conformance;
mod support;

use hidden_front_store::placement::shard_for_key;
use hidden_front_store::postgres::PostgresStore;
use hidden_front_store::sharded::ShardedStore;
use hidden_front_store::{GameStore, LifecycleOutbox};
use hidden_front_test_database::TestDatabase;
use hidden_front_webhooks::Deliveries;
use hidden_front_webhooks::postgres::PgWebhookStore;
use hidden_front_webhooks::store::{Resume, WebhookStore};
use sqlx::Connection;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use support::{Answer, DEADLINE, Receiver, all_facts, config, write_game, write_game_under};
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

/// An endpoint delivered to before positions were kept has a cursor and no position: a holder
/// resumes from the cursor, every shard at it. A stored position that does not parse is the
/// store's failure, never "from the start".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_with_only_a_cursor_resumes_from_it_on_every_shard() {
    let db = TestDatabase::create().await;
    let games = migrated(&db).await;
    sqlx::query("INSERT INTO webhook_endpoints (name, cursor) VALUES ('old', 42), ('bad', 7)")
        .execute(&games.pool())
        .await
        .unwrap();
    sqlx::query("UPDATE webhook_endpoints SET position = 'v1.0:x' WHERE name = 'bad'")
        .execute(&games.pool())
        .await
        .unwrap();
    let store = PgWebhookStore::new(games.pool().clone());
    let resume = store
        .acquire("old", "a", Duration::from_secs(60))
        .await
        .unwrap()
        .expect("free");
    assert_eq!(resume.cursor, 42);
    assert_eq!(resume.position, None);
    assert_eq!(resume.position(2).to_string(), "v1.0:42,1:42");
    // A replica of a release without positions delivers on and moves only the cursor: on one
    // database the holder after it resumes from the later of the two, sending nothing again.
    assert!(
        store
            .advance("old", "a", 50, &"v1.0:50".parse().unwrap())
            .await
            .unwrap()
    );
    sqlx::query("UPDATE webhook_endpoints SET cursor = 61 WHERE name = 'old'")
        .execute(&games.pool())
        .await
        .unwrap();
    let resume = store
        .acquire("old", "a", Duration::from_secs(60))
        .await
        .unwrap()
        .expect("held");
    assert_eq!(resume.position(1).to_string(), "v1.0:61");
    // On shards the position is the whole truth (no release without positions runs them).
    let sharded = Resume {
        cursor: 61,
        position: Some("v1.0:50,1:40".parse().unwrap()),
    };
    assert_eq!(sharded.position(2).to_string(), "v1.0:50,1:40");
    let refused = store.acquire("bad", "a", Duration::from_secs(60)).await;
    assert!(
        refused.as_ref().is_err_and(|e| e
            .0
            .contains("stored position of endpoint \"bad\" is corrupt")),
        "{refused:?}"
    );
    games.close().await;
}

/// Keys that the placement rule puts on `shard` of 2.
fn key_on(shard: u16) -> String {
    loop {
        let key = format!("k-{}", uuid::Uuid::new_v4());
        if shard_for_key(&key, 2) == shard {
            return key;
        }
    }
}

/// Takes database `db` away (connections refused, the existing ones ended) or gives it back.
async fn set_down(db: &TestDatabase, down: bool) {
    let admin = hidden_front_test_database::admin_url();
    let mut conn = sqlx::PgConnection::connect(&admin).await.expect("admin");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE \"{}\" ALLOW_CONNECTIONS {}",
        db.name(),
        !down
    )))
    .execute(&mut conn)
    .await
    .expect("refuse or allow connections");
    if down {
        sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1")
            .bind(db.name())
            .execute(&mut conn)
            .await
            .expect("end connections");
    }
    let _ = conn.close().await;
}

/// Two shards, the webhooks' state on shard 0. Facts of a game on shard 1 are committed, then
/// shard 1 goes away before anything is delivered: the deliverer still sends shard 0's facts,
/// those committed before and during the outage; once shard 1 is back its facts follow, and no
/// fact is sent twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn delivery_goes_on_past_a_shard_that_is_down() {
    let dbs = [TestDatabase::create().await, TestDatabase::create().await];
    let shards = [migrated(&dbs[0]).await, migrated(&dbs[1]).await];
    let webhook_pool = shards[0].pool().clone();
    let games = ShardedStore::open(shards.to_vec())
        .await
        .expect("two shards");
    let receiver = Receiver::start(Answer::Ok).await;
    let on_1 = write_game_under(&games, 1, Some(&key_on(1))).await;
    let before = write_game_under(&games, 2, Some(&key_on(0))).await;
    set_down(&dbs[1], true).await;

    let stop = CancellationToken::new();
    let deliveries = Deliveries::new(
        Arc::new(games.clone()),
        Arc::new(PgWebhookStore::new(webhook_pool)),
        config(&receiver.url(), 60_000, ""),
        "replica".into(),
    );
    let handles = deliveries.spawn(stop.child_token());
    let during = write_game_under(&games, 3, Some(&key_on(0))).await;
    let on_shard_0 = |facts: &[hidden_front_lifecycle::Fact]| -> HashSet<String> {
        facts
            .iter()
            .filter(|f| f.game_id == before || f.game_id == during)
            .map(|f| f.id.to_string())
            .collect()
    };
    let shard_0_facts = on_shard_0(&games.shards()[0].facts_after(0, 100).await.unwrap());
    assert_eq!(shard_0_facts.len(), 4);
    let received = receiver
        .wait_until(
            |r| shard_0_facts.iter().all(|id| r.iter().any(|x| &x.id == id)),
            "shard 0's facts while shard 1 is down",
        )
        .await;
    assert_eq!(received.len(), 4, "nothing of shard 1's yet: {received:?}");

    set_down(&dbs[1], false).await;
    let shard_1_facts: HashSet<String> = games.shards()[1]
        .facts_after(0, 100)
        .await
        .unwrap()
        .iter()
        .filter(|f| f.game_id == on_1)
        .map(|f| f.id.to_string())
        .collect();
    assert_eq!(shard_1_facts.len(), 2);
    let received = receiver.wait_for(6).await;
    let ids: Vec<&str> = received.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids[4..]
            .iter()
            .map(|id| id.to_string())
            .collect::<HashSet<_>>(),
        shard_1_facts,
        "shard 1's facts follow once it is back"
    );
    stop.cancel();
    for handle in handles {
        tokio::time::timeout(DEADLINE, handle)
            .await
            .expect("stops")
            .unwrap();
    }
    // Nothing more was sent (the deliverers have stopped): each fact once.
    let received = receiver.received();
    let unique: HashSet<&str> = received.iter().map(|r| r.id.as_str()).collect();
    assert_eq!((received.len(), unique.len()), (6, 6), "{received:?}");
    let state = &PgWebhookStore::new(games.main().pool().clone())
        .endpoints()
        .await
        .unwrap()[0];
    let position = state.position.clone().expect("a position is recorded");
    assert_eq!(
        position.entries().len(),
        2,
        "one entry per shard: {position}"
    );
    games.close().await;
}
