//! The conformance suite on a [`ShardedStore`] of two shards (two databases, standing for two
//! Postgres primaries), plus what only a sharded store has: placement (every row of a game on
//! the shard its id names), fan-out reads, the merged feeds with one cursor across shards, a
//! reordered shard list refused, and one shard down while the other serves.
//!
//! Needs `DATABASE_URL` as `tests/postgres.rs` does.

use hidden_front_rules::Side;
use hidden_front_store::lifecycle::{FactBody, FeedPosition, NewFact, PositionedFact};
use hidden_front_store::placement::{shard_for_key, shard_of};
use hidden_front_store::postgres::PostgresStore;
use hidden_front_store::sharded::ShardedStore;
use hidden_front_store::{
    AdminStore, Append, GameFilter, GameStore, LifecycleOutbox, OutageRule, StoreError, Timer,
    TimerChange, TimerKind, TimerStore,
};
use hidden_front_store_conformance::{Check, at, new_game, player, reshuffle};
use hidden_front_test_database::TestDatabase;
use sqlx::Connection;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// A migrated store on `db` with its own small pool.
async fn shard_on(db: &TestDatabase) -> PostgresStore {
    let store = PostgresStore::from_pool(db.pool(5).await).with_snapshot_interval(1);
    store.migrate().await.expect("migrations apply");
    store
}

/// Two fresh databases and the sharded store over them.
async fn two_shards() -> (ShardedStore, [TestDatabase; 2]) {
    let dbs = [TestDatabase::create().await, TestDatabase::create().await];
    let store = ShardedStore::open(vec![shard_on(&dbs[0]).await, shard_on(&dbs[1]).await])
        .await
        .expect("open two shards");
    (store, dbs)
}

async fn run(name: &'static str, check: Check) {
    let (store, dbs) = two_shards().await;
    let outcome = tokio::spawn(check(Arc::new(store.clone()))).await;
    store.close().await;
    drop(store);
    drop(dbs);
    if let Err(error) = outcome {
        match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(error) => panic!("check {name} did not finish: {error}"),
        }
    }
}

hidden_front_store_conformance::conformance_tests!(run);

/// Keys that the placement rule puts on `shard` of 2.
fn key_on(shard: u16) -> String {
    loop {
        let key = format!("k-{}", Uuid::new_v4());
        if shard_for_key(&key, 2) == shard {
            return key;
        }
    }
}

/// Creates a game under a key of `shard`; returns its id.
async fn game_on(store: &ShardedStore, shard: u16, south: &str, facts: bool) -> Uuid {
    let key = key_on(shard);
    let (mut meta, game, events) = new_game(7, south, &player("north"));
    meta.game_id = store.new_game_id(&key);
    assert_eq!(
        shard_of(meta.game_id),
        shard,
        "the key's shard is written in the id"
    );
    let facts = if facts {
        hidden_front_store::lifecycle::derive::creation_facts(meta.seats())
    } else {
        Vec::new()
    };
    let created = store
        .create_armed(&key, &meta, &events, &game, &[], &facts)
        .await
        .expect("create");
    assert!(!created.replayed);
    meta.game_id
}

async fn count(db: &TestDatabase, table: &str, game_id: Uuid) -> i64 {
    let mut conn = db.connect().await;
    let n = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM {table} WHERE game_id = $1"
    )))
    .bind(game_id)
    .fetch_one(&mut conn)
    .await
    .expect("count");
    let _ = conn.close().await;
    n
}

/// A new game's id names the shard its creation key hashes to, every row of the game is on that
/// shard and none on the other, and a retried creation with the same key (and a fresh id from
/// the same key) meets the first one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_of_a_game_lives_on_its_shard() {
    let (store, dbs) = two_shards().await;
    for shard in [0u16, 1] {
        let key = key_on(shard);
        let (mut meta, game, events) = new_game(3, &player("s"), &player("n"));
        meta.game_id = store.new_game_id(&key);
        let id = meta.game_id;
        let deadline = Timer {
            game_id: id,
            kind: TimerKind::Deployment,
            side: Side::South,
            armed_version: events.len() as u64,
            fire_at: hidden_front_store::timers::deadline_after(
                SystemTime::now(),
                Duration::from_secs(600),
            ),
        };
        let facts = hidden_front_store::lifecycle::derive::creation_facts(meta.seats());
        store
            .create_armed(&key, &meta, &events, &game, &[deadline], &facts)
            .await
            .expect("create");
        let (next, step) = reshuffle(&game, 1);
        store
            .append_armed(Append {
                game_id: id,
                expected_version: events.len() as u64,
                events: &step,
                game: &next,
                command: Some(hidden_front_store::CommandRecord {
                    key: "c1",
                    response: b"ok",
                }),
                timers: &TimerChange::none(),
                trace_parent: None,
                facts: &[NewFact::new(
                    id,
                    FactBody::GameAborted {
                        reason: "test".into(),
                        operator: "op".into(),
                    },
                )],
                fired: None,
            })
            .await
            .expect("append");
        store
            .report_presence(
                id,
                Side::South,
                "gw",
                true,
                SystemTime::now(),
                SystemTime::now() + Duration::from_secs(30),
                None,
            )
            .await
            .expect("presence");
        let here = &dbs[usize::from(shard)];
        let there = &dbs[1 - usize::from(shard)];
        for table in [
            "games",
            "game_events",
            "game_commands",
            "game_creations",
            "game_timers",
            "presence",
            "lifecycle_facts",
        ] {
            assert!(count(here, table, id).await > 0, "{table} on its shard");
            assert_eq!(count(there, table, id).await, 0, "{table} not elsewhere");
        }
        // The retry: same key, a new id made from it.
        let (mut again, game2, events2) = new_game(4, &player("s"), &player("n"));
        again.game_id = store.new_game_id(&key);
        let replayed = store
            .create(&key, &again, &events2, &game2)
            .await
            .expect("retry");
        assert_eq!((replayed.game_id, replayed.replayed), (id, true));
    }
    store.close().await;
}

/// A player's games and the admin's search come from both shards, merged newest first, and the
/// search's cursor pages across shards without a gap or a repeat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_fan_out_over_the_shards() {
    let (store, _dbs) = two_shards().await;
    let south = player("fan");
    let mut made = Vec::new();
    for i in 0..6u16 {
        made.push(game_on(&store, i % 2, &south, false).await);
    }
    let listed: Vec<Uuid> = store
        .games_of_player(&south, 10)
        .await
        .expect("list")
        .into_iter()
        .map(|g| g.meta.game_id)
        .collect();
    let newest_first: Vec<Uuid> = made.iter().rev().copied().collect();
    assert_eq!(listed, newest_first);
    assert_eq!(store.games_of_player(&south, 3).await.unwrap().len(), 3);

    let mut paged = Vec::new();
    let mut filter = GameFilter {
        player: Some(south.clone()),
        limit: 4,
        ..GameFilter::default()
    };
    loop {
        let page = store.find_games(&filter).await.expect("find");
        paged.extend(page.iter().map(|g| g.summary.meta.game_id));
        match page.last() {
            Some(last) if page.len() == 4 => filter.after = Some(last.cursor()),
            _ => break,
        }
    }
    assert_eq!(paged, newest_first, "pages across shards, newest first");
    let one = store
        .find_games(&GameFilter {
            game_id: Some(made[1]),
            limit: 10,
            ..GameFilter::default()
        })
        .await
        .expect("find one");
    assert_eq!(one.len(), 1);
    store.close().await;
}

/// Facts written on both shards come back from one cursor, each exactly once, positions
/// increasing across shards, each game's in its order, each position ending in its shard's
/// index; a shard that writes nothing does not hold the feed back; the ended feed likewise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_feeds_merge_the_shards_under_one_cursor() {
    let (store, _dbs) = two_shards().await;
    let start = *store.watch_facts().await.expect("watch").borrow();
    let mut games = HashMap::new();
    for i in 0..8u16 {
        let id = game_on(&store, i % 2, &player("feed"), true).await;
        games.insert(id, i % 2);
    }
    // Only shard 0 writes now: shard 1 idles.
    let mut last_on_0 = Uuid::nil();
    for _ in 0..3 {
        last_on_0 = game_on(&store, 0, &player("feed"), true).await;
        games.insert(last_on_0, 0);
    }
    let mut cursor = start;
    let mut seen = Vec::new();
    loop {
        let page = store.facts_after(cursor, 3).await.expect("facts");
        let Some(last) = page.last() else { break };
        cursor = last.position;
        seen.extend(page);
    }
    let ids: HashSet<Uuid> = seen.iter().map(|f| f.id).collect();
    assert_eq!(ids.len(), seen.len(), "no fact twice");
    assert!(seen.windows(2).all(|w| w[0].position < w[1].position));
    for fact in &seen {
        assert_eq!(
            (fact.position % 256) as u16,
            games[&fact.game_id],
            "a position ends in its shard's index"
        );
    }
    // Every game's creation facts, all of them, including the idle shard's and the last ones.
    for id in games.keys() {
        let mine: Vec<&str> = seen
            .iter()
            .filter(|f| f.game_id == *id)
            .map(|f| f.body.kind().name())
            .collect();
        assert!(!mine.is_empty(), "game {id}'s facts delivered");
    }
    assert!(seen.iter().any(|f| f.game_id == last_on_0));

    // The ended feed: end games on both shards; one cursor reads them all once.
    let mut ended = HashSet::new();
    for shard in [1u16, 0, 1] {
        let id = game_on(&store, shard, &player("end"), false).await;
        let record = store.load(id).await.unwrap().unwrap();
        let mut next = record.game.clone();
        let events = next
            .handle(
                &hidden_front_rules::Command::Resign { side: Side::South },
                &mut hidden_front_rules::GameRng::from_seed(1),
            )
            .expect("resign");
        store
            .append(id, record.version, &events, &next, None)
            .await
            .expect("end");
        ended.insert(id);
    }
    let mut cursor = 0;
    let mut read = Vec::new();
    loop {
        let page = store.ended_games(cursor, 1).await.expect("ended");
        let Some(last) = page.last() else { break };
        cursor = last.cursor;
        read.extend(page.into_iter().map(|e| e.record.meta.game_id));
    }
    assert_eq!(read.len(), 3);
    assert_eq!(read.iter().copied().collect::<HashSet<_>>(), ended);
    store.close().await;
}

/// A shard list in another order than the one the databases recorded is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reordered_shard_list_is_refused() {
    let (store, dbs) = two_shards().await;
    store.close().await;
    let swapped = ShardedStore::open(vec![shard_on(&dbs[1]).await, shard_on(&dbs[0]).await]).await;
    assert!(
        matches!(
            swapped,
            Err(StoreError::WrongShard {
                configured: 0,
                recorded: 1
            })
        ),
        "{swapped:?}"
    );
}

/// Takes shard database `db` away (its connections ended, the database renamed) or gives it
/// back.
async fn set_down(db: &TestDatabase, down: bool) {
    let admin = hidden_front_test_database::admin_url();
    let mut conn = sqlx::PgConnection::connect(&admin).await.expect("admin");
    let (from, to) = if down {
        (db.name().to_string(), format!("{}_away", db.name()))
    } else {
        (format!("{}_away", db.name()), db.name().to_string())
    };
    if down {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "ALTER DATABASE \"{from}\" ALLOW_CONNECTIONS false"
        )))
        .execute(&mut conn)
        .await
        .expect("refuse connections");
        sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1")
            .bind(&from)
            .execute(&mut conn)
            .await
            .expect("end connections");
    }
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE \"{from}\" RENAME TO \"{to}\""
    )))
    .execute(&mut conn)
    .await
    .expect("rename");
    if !down {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "ALTER DATABASE \"{to}\" ALLOW_CONNECTIONS true"
        )))
        .execute(&mut conn)
        .await
        .expect("allow connections");
    }
    let _ = conn.close().await;
}

/// With shard 1 gone, shard 0's games take appends and fire their timers; shard 1's games are
/// refused as unavailable, without waiting; once it is back, its pulse accounts for the time it
/// was away (its running deadline moves by the outage) before its games are served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shard_down_leaves_the_other_serving() {
    let (store, dbs) = two_shards().await;
    let rule = OutageRule::default();
    let t0 = SystemTime::now();
    let on0 = game_on(&store, 0, &player("up"), false).await;
    let on1 = game_on(&store, 1, &player("down"), false).await;
    let deadline = |game_id| Timer {
        game_id,
        kind: TimerKind::Move,
        side: Side::North,
        armed_version: 1,
        fire_at: hidden_front_store::timers::deadline_after(t0, Duration::ZERO),
    };
    let later = Timer {
        fire_at: hidden_front_store::timers::deadline_after(t0, Duration::from_secs(600)),
        ..deadline(on1)
    };
    store.arm_timer(&deadline(on0)).await.expect("arm on 0");
    store.arm_timer(&later).await.expect("arm on 1");
    assert_eq!(store.pulse(&at(t0), &rule).await.expect("pulse"), None);

    set_down(&dbs[1], true).await;
    // The pulse reaches shard 0 only; that is no failure of the service.
    store
        .pulse(&at(t0 + Duration::from_secs(1)), &rule)
        .await
        .expect("a pulse with one shard down");
    let record = store.load(on0).await.unwrap().unwrap();
    let (next, step) = reshuffle(&record.game, 2);
    store
        .append(on0, record.version, &step, &next, None)
        .await
        .expect("shard 0 takes appends");
    let due = store
        .claim_due(
            "clock",
            t0 + Duration::from_secs(1),
            Duration::from_secs(30),
            10,
        )
        .await
        .expect("claim with one shard down");
    assert_eq!(
        due.iter().map(|t| t.game_id).collect::<Vec<_>>(),
        vec![on0],
        "shard 0's timer fires"
    );
    let refused = store.load(on1).await;
    assert!(
        matches!(refused, Err(StoreError::ShardUnavailable { shard: 1, .. })),
        "{refused:?}"
    );
    // A new game whose key hashes to the lost shard goes to the one that answers, once; its
    // retry finds it.
    let lost_key = key_on(1);
    let create = |store: ShardedStore, key: String| async move {
        let (mut meta, game, events) = new_game(9, &player("fallback"), &player("north"));
        meta.game_id = store.new_game_id(&key);
        store
            .create_armed(&key, &meta, &events, &game, &[], &[])
            .await
            .expect("a creation with one shard down")
    };
    let first = create(store.clone(), lost_key.clone()).await;
    assert_eq!(shard_of(first.game_id), 0, "placed on the lost shard");
    assert!(!first.replayed);
    let retried = create(store.clone(), lost_key.clone()).await;
    assert_eq!((retried.game_id, retried.replayed), (first.game_id, true));

    set_down(&dbs[1], false).await;
    // Back 60 s later by the session's clock: shard 1's pulse finds the outage and moves its
    // deadline; shard 0 had pulsed through, so it finds none.
    let back = t0 + Duration::from_secs(61);
    let outage = store
        .pulse(&at(back), &rule)
        .await
        .expect("pulse")
        .expect("shard 1's outage found");
    assert_eq!(outage.deadlines_moved, 1);
    let timers = store.timers_of(on1).await.expect("shard 1 serves again");
    assert!(timers[0].fire_at > later.fire_at, "{timers:?}");
    // Back, the key's own shard is placed first again, and the retry still finds the game made
    // on shard 0 while it was away.
    assert_eq!(shard_of(store.new_game_id(&lost_key)), 1);
    let after = create(store.clone(), lost_key).await;
    assert_eq!((after.game_id, after.replayed), (first.game_id, true));
    store.close().await;
}

/// Reads the feed by position until a page comes back empty; the facts, each with the position
/// after it, and the shards that did not answer along the way.
async fn read_by_position(
    store: &ShardedStore,
    after: &mut FeedPosition,
) -> (Vec<PositionedFact>, HashSet<u16>) {
    let mut facts = Vec::new();
    let mut unanswered = HashSet::new();
    loop {
        let page = store
            .facts_after_position(after, 2)
            .await
            .expect("a page by position");
        unanswered.extend(page.unanswered);
        let Some(last) = page.facts.last() else {
            return (facts, unanswered);
        };
        *after = last.after.clone();
        facts.extend(page.facts);
    }
}

/// With shard 1 gone, a reader by position still gets shard 0's new facts (the merged feed
/// cannot: it fails naming shard 1), and a follower of the positions still wakes for them; when
/// shard 1 is back, the facts it committed before it went, unread until then, arrive, and no
/// fact comes twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_position_the_feed_flows_past_a_shard_that_is_down() {
    let (store, dbs) = two_shards().await;
    let mut position = store
        .watch_fact_positions()
        .await
        .expect("watch positions")
        .borrow()
        .clone();
    let game_facts = |games: &[Uuid], facts: &[PositionedFact]| -> Vec<Uuid> {
        facts
            .iter()
            .filter(|p| games.contains(&p.fact.game_id))
            .map(|p| p.fact.game_id)
            .collect()
    };
    let first = [
        game_on(&store, 0, &player("pos"), true).await,
        game_on(&store, 1, &player("pos"), true).await,
    ];
    let (mut seen, unanswered) = read_by_position(&store, &mut position).await;
    assert!(unanswered.is_empty());
    let per_game = game_facts(&first[..1], &seen).len();
    assert!(per_game > 0, "creation facts are written");
    assert_eq!(game_facts(&first, &seen).len(), 2 * per_game);

    // Shard 1 commits facts nobody has read yet, then goes away.
    let unread_on_1 = game_on(&store, 1, &player("pos"), true).await;
    let mut follower = store.watch_fact_positions().await.expect("watch positions");
    let cursor = store
        .watch_facts()
        .await
        .expect("watch")
        .borrow()
        .to_owned();
    set_down(&dbs[1], true).await;

    let while_down = [
        game_on(&store, 0, &player("pos"), true).await,
        game_on(&store, 0, &player("pos"), true).await,
    ];
    tokio::time::timeout(Duration::from_secs(10), follower.changed())
        .await
        .expect("a commit on shard 0 wakes the follower while shard 1 is down")
        .expect("the store is alive");
    let before_outage = position.get(1);
    let (during, unanswered) = read_by_position(&store, &mut position).await;
    assert_eq!(
        unanswered,
        HashSet::from([1]),
        "shard 1 is named as not answering"
    );
    assert_eq!(
        game_facts(&while_down, &during).len(),
        2 * per_game,
        "shard 0's facts flow while shard 1 is down"
    );
    assert!(game_facts(&[unread_on_1], &during).is_empty());
    assert_eq!(position.get(1), before_outage, "shard 1's entry stays");
    let merged = store.facts_after(cursor, 10).await;
    assert!(
        matches!(merged, Err(StoreError::ShardUnavailable { shard: 1, .. })),
        "the merged feed waits for every shard: {merged:?}"
    );
    seen.extend(during);

    set_down(&dbs[1], false).await;
    let (after, unanswered) = read_by_position(&store, &mut position).await;
    assert!(unanswered.is_empty(), "shard 1 answers again");
    assert_eq!(
        game_facts(&[unread_on_1], &after).len(),
        per_game,
        "shard 1's unread facts arrive once it is back"
    );
    seen.extend(after);
    let ids: Vec<Uuid> = seen.iter().map(|p| p.fact.id).collect();
    assert_eq!(
        ids.iter().collect::<HashSet<_>>().len(),
        ids.len(),
        "no fact twice"
    );
    let all = [
        first[0],
        first[1],
        unread_on_1,
        while_down[0],
        while_down[1],
    ];
    assert_eq!(game_facts(&all, &seen).len(), all.len() * per_game);
    // The position read up to is where a new reader continues: nothing is left.
    let (rest, _) = read_by_position(&store, &mut position.clone()).await;
    assert!(rest.is_empty(), "{rest:?}");
    store.close().await;
}
