//! The conformance suite on [`PostgresStore`], every check on its own freshly created and migrated
//! database, plus Postgres-only tests: two stores on one database standing for two processes
//! (racing appends, LISTEN/NOTIFY wake-ups, a lost LISTEN connection) and corrupt rows.
//!
//! Needs a reachable Postgres whose URL (a role allowed to create databases) is in
//! `DATABASE_URL`, e.g. `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres`. Without one
//! every test here fails with a message saying so; none is skipped. A test on one store alone
//! is a `#[sqlx::test]`; the conformance checks (a runner's `#[tokio::test]`s) and the tests of
//! two stores standing for two processes, on a multi-threaded runtime, create their database
//! with `TestDatabase`.

use hidden_front_rules::{Command, Phase, Side};
use hidden_front_store::postgres::PostgresStore;
use hidden_front_store::timers::deadline_after;
use hidden_front_store::{
    Append, CommandRecord, GameStore, StoreError, Timer, TimerChange, TimerKind, TurnTimerChange,
};
use hidden_front_store_conformance::{
    Check, WAKE_DEADLINE, assert_log_is_whole, create_game, judge, must_load, player,
    race_appends_across, reshuffle, within,
};
use hidden_front_test_database::TestDatabase;
use sqlx::{Connection, PgConnection, PgPool};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// A store on `db` with its own pool (a stand-in for one process), migrated.
async fn store_on(db: &TestDatabase, max_connections: u32) -> PostgresStore {
    let store = PostgresStore::from_pool(db.pool(max_connections).await);
    store.migrate().await.expect("migrations apply");
    store
}

/// Runs one conformance check on a fresh database, then drops the database whether the check
/// passed or not (re-raising its panic).
async fn run(name: &'static str, check: Check) {
    run_with_interval(name, check, 1).await;
}

/// [`run`] on a store that writes the engine snapshot every `snapshot_interval` events.
async fn run_with_interval(name: &'static str, check: Check, snapshot_interval: u64) {
    let db = TestDatabase::create().await;
    let store = store_on(&db, 5)
        .await
        .with_snapshot_interval(snapshot_interval);
    let outcome = tokio::spawn(check(Arc::new(store.clone()))).await;
    store.close().await;
    drop(store);
    drop(db);
    if let Err(error) = outcome {
        match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(error) => panic!("check {name} did not finish: {error}"),
        }
    }
}

hidden_front_store_conformance::conformance_tests!(run);

/// The conformance suite again with snapshots every other event, so that every check also
/// meets appends that skip the snapshot and loads that replay the log after it.
mod sparse_snapshots {
    use super::{Check, run_with_interval};

    async fn run(name: &'static str, check: Check) {
        run_with_interval(name, check, 2).await;
    }

    hidden_front_store_conformance::conformance_tests!(run);
}

/// Two stores (two pools, two LISTEN connections: two processes) on one database: a watcher on
/// one is woken by appends through the other, and writers racing through both on several games
/// leave each game one gapless history.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_share_one_database() {
    let db = TestDatabase::create().await;
    let a = store_on(&db, 6).await;
    let b = store_on(&db, 6).await;
    let stores: Vec<Arc<dyn GameStore>> = vec![Arc::new(a.clone()), Arc::new(b.clone())];

    // LISTEN/NOTIFY: B's append wakes A's watcher (A's own notifier knows nothing of it).
    let (meta, game) = create_game(&a, 1, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let v0 = must_load(&b, id).await.version;
    let mut receiver = a.watch(id).await.expect("watch through A");
    assert_eq!(*receiver.borrow(), v0);
    let waiter = tokio::spawn(async move {
        within(
            WAKE_DEADLINE,
            "A's watcher woken by B's append",
            receiver.changed(),
        )
        .await
        .expect("channel open");
        let seen = *receiver.borrow_and_update();
        (receiver, seen)
    });
    let (next, events) = reshuffle(&game, 7);
    let v1 = b
        .append(id, v0, &events, &next, None)
        .await
        .expect("append through B");
    let (mut receiver, seen) = waiter.await.expect("waiter");
    assert_eq!(seen, v1);

    // Writers racing through both stores on several games at once.
    const GAMES: u64 = 4;
    const WRITERS: u64 = 6;
    const APPENDS_EACH: u64 = 5;
    let mut games = vec![id];
    for seed in 1..GAMES {
        let (meta, _) = create_game(&b, 10 + seed, &player("south"), &player("north")).await;
        games.push(meta.game_id);
    }
    let mut watchers = Vec::new();
    for game_id in &games {
        watchers.push((
            *game_id,
            a.watch(*game_id).await.expect("watch through A"),
            b.watch(*game_id).await.expect("watch through B"),
        ));
    }
    let mut versions_before = Vec::new();
    for game_id in &games {
        versions_before.push(must_load(&a, *game_id).await.version);
    }
    let mut races = tokio::task::JoinSet::new();
    for game_id in games.clone() {
        let stores = stores.clone();
        races.spawn(
            async move { race_appends_across(&stores, game_id, WRITERS, APPENDS_EACH).await },
        );
    }
    for done in races.join_all().await {
        assert_eq!(done, WRITERS * APPENDS_EACH);
    }
    for ((game_id, mut on_a, mut on_b), before) in watchers.into_iter().zip(versions_before) {
        let expected = before + WRITERS * APPENDS_EACH;
        let through_a = assert_log_is_whole(&a, game_id).await;
        let through_b = assert_log_is_whole(&b, game_id).await;
        assert_eq!(through_a, through_b, "both processes read the same game");
        assert_eq!(through_a.version, expected, "no append lost, none doubled");
        for (name, receiver) in [("A", &mut on_a), ("B", &mut on_b)] {
            within(
                WAKE_DEADLINE,
                &format!("watcher on {name} reaches the final version"),
                receiver.wait_for(|version| *version >= expected),
            )
            .await
            .expect("channel open");
            assert_eq!(*receiver.borrow(), expected);
        }
    }

    // The first watcher saw nothing it should not have.
    assert!(*receiver.borrow_and_update() >= v1);
    a.close().await;
    b.close().await;
    drop(db);
}

/// Appends of many games written together: one whose command key is known, though its version
/// guard passes (a retried swap), gets the key's first answer and writes nothing, and every other
/// append racing it commits, without the batch's statement failing (no append is written a
/// second time, alone).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_append_among_many_fails_alone() {
    let db = TestDatabase::create().await;
    let store = store_on(&db, 8).await;
    let (meta, game) = create_game(&store, 3, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let v0 = must_load(&store, id).await.version;
    let (next, events) = reshuffle(&game, 11);
    let first = CommandRecord {
        key: "k",
        response: b"first answer",
    };
    let v1 = store
        .append(id, v0, &events, &next, Some(first))
        .await
        .expect("the first append of k");
    let mut others = Vec::new();
    for seed in 0..40 {
        let (meta, game) =
            create_game(&store, 100 + seed, &player("south"), &player("north")).await;
        let version = must_load(&store, meta.game_id).await.version;
        others.push((meta.game_id, version, reshuffle(&game, seed)));
    }
    let mut appends = tokio::task::JoinSet::new();
    for (game_id, version, (next, events)) in others.clone() {
        let store = store.clone();
        appends.spawn(async move {
            let key = format!("other-{game_id}");
            let command = CommandRecord {
                key: &key,
                response: b"other",
            };
            (
                Some(game_id),
                store
                    .append(game_id, version, &events, &next, Some(command))
                    .await,
            )
        });
    }
    let (again, again_events) = reshuffle(&next, 12);
    {
        let store = store.clone();
        appends.spawn(async move {
            let command = CommandRecord {
                key: "k",
                response: b"second answer",
            };
            (
                None,
                store
                    .append(id, v1, &again_events, &again, Some(command))
                    .await,
            )
        });
    }
    for (game_id, result) in appends.join_all().await {
        match game_id {
            Some(game_id) => {
                let (_, version, (_, events)) = others
                    .iter()
                    .find(|(g, ..)| *g == game_id)
                    .expect("one of ours");
                assert_eq!(
                    result.expect("an append beside the failing one commits"),
                    version + events.len() as u64
                );
            }
            None => match result {
                Err(StoreError::DuplicateCommand { key, response, .. }) => {
                    assert_eq!(key, "k");
                    assert_eq!(response, b"first answer");
                }
                other => panic!("a known key with a passing guard must be a duplicate: {other:?}"),
            },
        }
    }
    assert_eq!(
        must_load(&store, id).await.version,
        v1,
        "nothing of the retry stays"
    );
    assert_log_is_whole(&store, id).await;
    for (game_id, ..) in &others {
        assert_log_is_whole(&store, *game_id).await;
    }
    assert_eq!(
        store.batch_failures(),
        0,
        "the known key failed only its own append's guard, not a statement"
    );
    store.close().await;
    drop(db);
}

/// When the LISTEN connection dies, the store reconnects and catches up: a watcher is still woken
/// by appends made through another store during and after the outage.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn watch_survives_a_lost_listen_connection() {
    let db = TestDatabase::create().await;
    let a = store_on(&db, 4).await;
    let b = store_on(&db, 4).await;
    let (meta, mut game) = create_game(&b, 2, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let mut version = must_load(&b, id).await.version;
    let mut receiver = a.watch(id).await.expect("watch through A");

    // Kill A's LISTEN connection (the only session of this database that ran LISTEN).
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid() \
           AND query ILIKE 'LISTEN%'",
    )
    .fetch_all(&b.pool())
    .await
    .expect("terminate the LISTEN connection");
    assert_eq!(
        killed,
        [true],
        "exactly one LISTEN connection was terminated"
    );

    for seed in 0..3 {
        let (next, events) = reshuffle(&game, 100 + seed);
        version = b
            .append(id, version, &events, &next, None)
            .await
            .expect("append through B");
        game = next;
        let target = version;
        within(
            WAKE_DEADLINE,
            "A's watcher woken after its LISTEN connection was lost",
            receiver.wait_for(|seen| *seen >= target),
        )
        .await
        .expect("channel open");
    }
    a.close().await;
    b.close().await;
    drop(db);
}

/// Rows that do not decode are reported as `Corrupt`, never a panic.
#[sqlx::test(migrator = "hidden_front_store::postgres::MIGRATOR")]
async fn corrupt_rows_are_reported_not_panicked_on(pool: PgPool) {
    let store = PostgresStore::from_pool(pool);
    let south = player("south");
    let (meta, _) = create_game(&store, 3, &south, &player("north")).await;
    let id = meta.game_id;

    sqlx::query("UPDATE games SET snapshot = '{\"not\": \"a game\"}'::jsonb WHERE game_id = $1")
        .bind(id)
        .execute(&store.pool())
        .await
        .expect("tamper with the snapshot");
    assert!(
        matches!(store.load(id).await, Err(StoreError::Corrupt { game_id, .. }) if game_id == id)
    );

    sqlx::query(
        "UPDATE games SET raw_snapshot = convert_to('{\"not\": \"a game\"}', 'UTF8'), \
           raw_version = version WHERE game_id = $1",
    )
    .bind(id)
    .execute(&store.pool())
    .await
    .expect("tamper with the raw snapshot");
    assert!(
        matches!(store.load(id).await, Err(StoreError::Corrupt { game_id, .. }) if game_id == id)
    );
    sqlx::query("UPDATE games SET raw_snapshot = NULL, raw_version = version WHERE game_id = $1")
        .bind(id)
        .execute(&store.pool())
        .await
        .expect("a raw version without its snapshot");
    assert!(
        matches!(store.load(id).await, Err(StoreError::Corrupt { game_id, .. }) if game_id == id),
        "a raw version without its raw snapshot"
    );

    sqlx::query("UPDATE game_events SET event = '[1, 2]'::jsonb WHERE game_id = $1 AND seq = 2")
        .bind(id)
        .execute(&store.pool())
        .await
        .expect("tamper with an event");
    assert!(matches!(
        store.events(id, 1, 10).await,
        Err(StoreError::Corrupt { .. })
    ));
    assert_eq!(
        store.events(id, 3, 10).await.expect("later events").len(),
        1
    );

    sqlx::query("UPDATE games SET phase = 'sideways' WHERE game_id = $1")
        .bind(id)
        .execute(&store.pool())
        .await
        .expect("tamper with the phase");
    assert!(matches!(
        store.games_of_player(&south, 10).await,
        Err(StoreError::Corrupt { .. })
    ));

    sqlx::query("UPDATE games SET time_control = '\"fast\"'::jsonb WHERE game_id = $1")
        .bind(id)
        .execute(&store.pool())
        .await
        .expect("tamper with the time control");
    assert!(matches!(
        store.load(id).await,
        Err(StoreError::Corrupt { .. })
    ));

    // Presence on a game with a corrupt snapshot still works: it does not read the snapshot.
    let now = SystemTime::now();
    store
        .report_presence(
            id,
            Side::North,
            "gw",
            true,
            now,
            now + Duration::from_secs(60),
            None,
        )
        .await
        .expect("presence");
    store.close().await;
}

/// Migrating twice (replicas starting together, or a restart) is harmless.
#[sqlx::test(migrator = "hidden_front_store::postgres::MIGRATOR")]
async fn migrations_are_idempotent(pool: PgPool) {
    let store = PostgresStore::from_pool(pool);
    store.migrate().await.expect("second migration run");
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables \
         WHERE table_schema = 'public' AND table_name NOT LIKE '\\_sqlx%' ORDER BY table_name",
    )
    .fetch_all(&store.pool())
    .await
    .expect("list tables");
    // The game store's own tables (other services' migrations add theirs beside them:
    // matchmaking's `mm_*`, the webhook deliveries' `webhook_*`).
    let tables: Vec<String> = tables
        .into_iter()
        .filter(|t| !t.starts_with("mm_") && !t.starts_with("webhook_"))
        .collect();
    assert_eq!(
        tables,
        [
            "admin_audit",
            "ended_games_counter",
            "game_commands",
            "game_creations",
            "game_events",
            "game_timers",
            "games",
            "lifecycle_counter",
            "lifecycle_facts",
            "presence",
            "service_outages",
            "service_pulse",
            "store_shard"
        ]
    );
    store.close().await;
}

/// The stream pump's pages served from this process's memory of its latest write
/// (`postgres/recent.rs`) are exactly what the log holds, commit times and the turn deadline an
/// append armed included, and a commit by another process is read from the log, with its turn
/// deadline, not missed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_from_memory_match_the_log_and_miss_no_other_process() {
    let db = TestDatabase::create().await;
    let a = store_on(&db, 4).await;
    let b = store_on(&db, 4).await;
    let (meta, game) = create_game(&a, 3, &player("south"), &player("north")).await;
    let id = meta.game_id;
    // Each append arms a turn deadline (what the store does with it does not depend on the
    // phase), so each page carries one on its last event.
    let arming = |seconds: u64| TimerChange {
        turn: Some(TurnTimerChange::Arm(Timer {
            game_id: id,
            kind: TimerKind::Move,
            side: Side::South,
            armed_version: 0,
            fire_at: deadline_after(SystemTime::now(), Duration::from_secs(seconds)),
        })),
        ..TimerChange::none()
    };
    let append_arming = |store: PostgresStore, expected_version, events, game, timers| async move {
        store
            .append_armed(Append {
                game_id: id,
                expected_version,
                events,
                game,
                command: None,
                timers,
                trace_parent: None,
                facts: &[],
                fired: None,
            })
            .await
    };
    let mut watching = a.watch(id).await.expect("watch through A");
    // B watches nothing, so its pages always come from the log.
    let page = |store: PostgresStore, from: u64| async move {
        store.events(id, from, 256).await.expect("events")
    };
    let created = page(a.clone(), 1).await;
    assert!(!created.is_empty(), "creation events");
    assert_eq!(created, page(b.clone(), 1).await, "creation page");

    let v0 = created.last().map(|e| e.seq).unwrap_or_default();
    let (next, events) = reshuffle(&game, 5);
    let timers = arming(30);
    let v1 = append_arming(a.clone(), v0, &events, &next, &timers)
        .await
        .expect("append through A");
    let from_a = page(a.clone(), v0 + 1).await;
    assert_eq!(from_a.len() as u64, v1 - v0);
    assert_eq!(
        from_a.last().and_then(|e| e.armed_turn_deadline),
        timers.armed_turn_deadline(),
        "the append's turn deadline"
    );
    assert_eq!(from_a, page(b.clone(), v0 + 1).await, "an append's page");
    // Proof that A's page came from memory: with the rows gone, A still has it, B does not.
    let mut conn = PgConnection::connect_with(&db.connect_options())
        .await
        .expect("connect");
    sqlx::query("DELETE FROM game_events WHERE game_id = $1 AND seq > $2")
        .bind(id)
        .bind(i64::try_from(v0).expect("seq"))
        .execute(&mut conn)
        .await
        .expect("delete");
    assert_eq!(page(a.clone(), v0 + 1).await, from_a, "served from memory");
    assert!(
        page(b.clone(), v0 + 1).await.is_empty(),
        "the log lost them"
    );

    // Another process appends: A's watcher hears of it and A's page includes it.
    let (later, events) = reshuffle(&next, 6);
    let timers = arming(60);
    let v2 = append_arming(b.clone(), v1, &events, &later, &timers)
        .await
        .expect("append through B");
    within(
        WAKE_DEADLINE,
        "A hears B's append",
        watching.wait_for(|v| *v >= v2),
    )
    .await
    .expect("channel open");
    let newer = page(a.clone(), v1 + 1).await;
    assert_eq!(
        newer.last().map(|e| (e.seq, e.armed_turn_deadline)),
        Some((v2, timers.armed_turn_deadline())),
        "B's events are in A's page, with the turn deadline B's append armed"
    );
    assert_eq!(newer, page(b.clone(), v1 + 1).await);
    assert_eq!(
        page(a.clone(), v0 + 1).await,
        newer,
        "once B wrote, A's older page is read from the log (whose rows were deleted above)"
    );
    drop(watching);
    a.close().await;
    b.close().await;
    drop(db);
}

/// The game's row: the version of the snapshot a load starts from (the raw one or the `jsonb`
/// one, whichever is newer) and the log's head when the `jsonb` snapshot lags it.
async fn snapshot_and_head(store: &PostgresStore, game_id: Uuid) -> (i64, Option<i64>) {
    sqlx::query_as(
        "SELECT GREATEST(version, raw_version), head_version FROM games WHERE game_id = $1",
    )
    .bind(game_id)
    .fetch_one(&store.pool())
    .await
    .expect("the game's row")
}

/// Both seats confirm `game` (at `version`) through `store`: the game in play and its version.
async fn confirm_both(
    store: &PostgresStore,
    game_id: Uuid,
    mut game: hidden_front_rules::Game,
    mut version: u64,
) -> (hidden_front_rules::Game, u64) {
    for (seed, side) in [(1, Side::South), (2, Side::North)] {
        let (next, events) = judge(&game, Command::Confirm { side }, seed);
        version = store
            .append(game_id, version, &events, &next, None)
            .await
            .expect("confirm");
        game = next;
    }
    (game, version)
}

/// With snapshots every 3 events, a game played to its end through one store loads, from a
/// second store (another process, no memory shared), after every append as exactly the state
/// its writer holds, at the head's version; the row's snapshot lags the log by 0, 1 or 2 events
/// and never more; the ended feed and the player's games say the head's version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sparse_snapshots_load_the_game_at_the_head() {
    let db = TestDatabase::create().await;
    let writer = store_on(&db, 4).await.with_snapshot_interval(3);
    let reader = store_on(&db, 2).await;
    let south = player("south");
    let (meta, mut game) = create_game(&writer, 5, &south, &player("north")).await;
    let id = meta.game_id;
    let mut version = must_load(&writer, id).await.version;
    let mut lags = std::collections::BTreeSet::new();
    for step in 0u64.. {
        let command = match game.phase() {
            Phase::Ended => break,
            Phase::Deployment if !game.confirmed(Side::South) => {
                Command::Confirm { side: Side::South }
            }
            Phase::Deployment => Command::Confirm { side: Side::North },
            // A few hundred plies of play, then timeouts until the third one forfeits.
            Phase::Play if step < 300 && step % 23 != 22 => {
                let moves = game.position().legal_moves();
                let mv = moves
                    .nth((step as usize * 7) % moves.len())
                    .expect("a side to move has a move");
                Command::Move {
                    side: game.to_move(),
                    mv,
                }
            }
            Phase::Play => Command::Timeout {
                side: game.to_move(),
            },
        };
        let (next, events) = judge(&game, command, step);
        version = writer
            .append(id, version, &events, &next, None)
            .await
            .expect("append");
        game = next;
        let loaded = must_load(&reader, id).await;
        assert_eq!(loaded.version, version, "a load is at the head");
        assert!(
            loaded.game == game,
            "a load is the writer's state after step {step}"
        );
        let (snapshot_at, head) = snapshot_and_head(&reader, id).await;
        let lag = head.map_or(0, |head| head - snapshot_at);
        assert!((0..3).contains(&lag), "the snapshot lags {lag} events");
        lags.insert(lag);
    }
    assert_eq!(
        lags.into_iter().collect::<Vec<_>>(),
        [0, 1, 2],
        "appends both wrote and skipped the snapshot"
    );
    let ended = reader.ended_games(0, 10).await.expect("the ended feed");
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].record.version, version);
    assert!(ended[0].record.game == game);
    let listed = reader
        .games_of_player(&south, 5)
        .await
        .expect("a player's games");
    assert_eq!(listed[0].version, version);
    assert_log_is_whole(&reader, id).await;
    writer.close().await;
    reader.close().await;
    drop(db);
}

/// A replica of a release before `head_version` judges a lagging game against its older
/// snapshot and appends with the guard of that release (`version = expected`): its statement
/// collides with the log's primary key and writes nothing, so it cannot fork the game. This is
/// that release's statement, verbatim in its shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_release_cannot_fork_a_game_whose_snapshot_lags() {
    let db = TestDatabase::create().await;
    let store = store_on(&db, 4).await.with_snapshot_interval(8);
    let (meta, game) = create_game(&store, 9, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let v0 = must_load(&store, id).await.version;
    let (game, v2) = confirm_both(&store, id, game, v0).await;
    let mv = game.position().legal_moves().nth(0).expect("a move");
    let (game, events) = judge(
        &game,
        Command::Move {
            side: game.to_move(),
            mv,
        },
        3,
    );
    let v3 = store
        .append(id, v2, &events, &game, None)
        .await
        .expect("a move");
    // That release reads the `jsonb` snapshot and its version.
    let (snapshot_at, head): (i64, Option<i64>) =
        sqlx::query_as("SELECT version, head_version FROM games WHERE game_id = $1")
            .bind(id)
            .fetch_one(&store.pool())
            .await
            .expect("the game's row");
    // The confirmation that started play and the move both left the snapshot behind.
    assert!(
        snapshot_at < v2 as i64,
        "the snapshot lags: at {snapshot_at}"
    );
    assert_eq!(head, Some(v3 as i64));
    // The older release read (the snapshot, its version) and appends the version after it.
    let older = sqlx::query(
        "WITH guard AS ( \
           UPDATE games g SET version = $2, snapshot = g.snapshot, updated_at = now() \
           WHERE g.game_id = $1 AND g.version = $3 RETURNING g.game_id) \
         INSERT INTO game_events (game_id, seq, event) \
         SELECT game_id, $2, '{}'::jsonb FROM guard",
    )
    .bind(id)
    .bind(snapshot_at + 1)
    .bind(snapshot_at)
    .execute(&store.pool())
    .await;
    match older {
        Err(sqlx::Error::Database(error)) => {
            assert_eq!(error.constraint(), Some("game_events_pkey"), "{error}")
        }
        other => panic!("the older release's append must fail on the log's key: {other:?}"),
    }
    let loaded = must_load(&store, id).await;
    assert_eq!(loaded.version, v3, "nothing of the older append stays");
    assert!(loaded.game == game);
    store.close().await;
    drop(db);
}

/// The previous release's load, verbatim in its shape: the `jsonb` snapshot at `version` and the
/// events after it up to `head_version`. It knows nothing of the raw snapshot.
async fn load_as_the_previous_release(
    store: &PostgresStore,
    game_id: Uuid,
) -> (u64, hidden_front_rules::Game) {
    let (version, head, snapshot, lagged): (
        i64,
        Option<i64>,
        serde_json::Value,
        Option<serde_json::Value>,
    ) = sqlx::query_as(
        "SELECT g.version, g.head_version, g.snapshot, \
           CASE WHEN g.head_version IS NOT NULL THEN \
             (SELECT json_agg(e.event ORDER BY e.seq) FROM game_events e \
              WHERE e.game_id = g.game_id AND e.seq > g.version AND e.seq <= g.head_version) \
           END AS lagged \
         FROM games g WHERE g.game_id = $1",
    )
    .bind(game_id)
    .fetch_one(&store.pool())
    .await
    .expect("the game's row");
    let mut game: hidden_front_rules::Game =
        serde_json::from_value(snapshot).expect("the jsonb snapshot decodes");
    let lagged: Vec<hidden_front_rules::Event> = lagged
        .map(|value| serde_json::from_value(value).expect("the lagged events decode"))
        .unwrap_or_default();
    for event in &lagged {
        game.apply(event).expect("the log replays");
    }
    (head.unwrap_or(version) as u64, game)
}

/// Appends write the raw snapshot (`migrations/0010_raw_snapshots.sql`) and leave the `jsonb`
/// one where it was: this release loads the game from the raw one at the head, the previous
/// release (mixed with this one in a rolling upgrade) from the `jsonb` one plus the log, and
/// both find the same game. When a release that writes only the `jsonb` snapshot moves the game
/// past the raw one, loads start from the `jsonb` one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_snapshots_are_read_by_this_release_and_the_previous_one() {
    let db = TestDatabase::create().await;
    // A raw snapshot at every append, so the one checked below is at the head.
    let store = store_on(&db, 4).await.with_snapshot_interval(1);
    let (meta, game) = create_game(&store, 31, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let v0 = must_load(&store, id).await.version;
    let (mut game, mut version) = confirm_both(&store, id, game, v0).await;
    for step in 0..6usize {
        let mv = game.position().legal_moves().nth(step % 3).expect("a move");
        let (next, events) = judge(
            &game,
            Command::Move {
                side: game.to_move(),
                mv,
            },
            step as u64,
        );
        version = store
            .append(id, version, &events, &next, None)
            .await
            .expect("a move");
        game = next;
    }
    let (jsonb_at, raw_at, head): (i64, Option<i64>, Option<i64>) =
        sqlx::query_as("SELECT version, raw_version, head_version FROM games WHERE game_id = $1")
            .bind(id)
            .fetch_one(&store.pool())
            .await
            .expect("the game's row");
    assert_eq!(
        jsonb_at, v0 as i64,
        "appends leave the jsonb snapshot as created"
    );
    assert_eq!(
        raw_at,
        Some(version as i64),
        "the raw snapshot is at the head"
    );
    assert_eq!(head, Some(version as i64));
    let loaded = must_load(&store, id).await;
    assert_eq!(loaded.version, version);
    assert!(loaded.game == game, "this release loads the head");
    let (previous_version, previous_game) = load_as_the_previous_release(&store, id).await;
    assert_eq!(previous_version, version);
    assert!(previous_game == game, "the previous release loads the head");

    // A release that writes the jsonb snapshot at every append moves the game on.
    let mv = game.position().legal_moves().nth(0).expect("a move");
    let (next, events) = judge(
        &game,
        Command::Move {
            side: game.to_move(),
            mv,
        },
        99,
    );
    let next_version = version + events.len() as u64;
    let mut tx = store.pool().begin().await.expect("a transaction");
    sqlx::query(
        "UPDATE games SET snapshot = $2::text::jsonb, version = $3, head_version = NULL \
         WHERE game_id = $1 AND COALESCE(head_version, version) = $4",
    )
    .bind(id)
    .bind(serde_json::to_string(&next).expect("encodes"))
    .bind(next_version as i64)
    .bind(version as i64)
    .execute(&mut *tx)
    .await
    .expect("the older append's row");
    for (seq, event) in (version + 1..).zip(&events) {
        sqlx::query("INSERT INTO game_events (game_id, seq, event) VALUES ($1, $2, $3)")
            .bind(id)
            .bind(seq as i64)
            .bind(serde_json::to_value(event).expect("encodes"))
            .execute(&mut *tx)
            .await
            .expect("the older append's events");
    }
    tx.commit().await.expect("commit");
    let reader = store_on(&db, 2).await;
    let loaded = must_load(&reader, id).await;
    assert_eq!(loaded.version, next_version);
    assert!(
        loaded.game == next,
        "the newer jsonb snapshot wins over the raw one"
    );
    assert_eq!(
        snapshot_and_head(&reader, id).await,
        (next_version as i64, None)
    );
    reader.close().await;
    store.close().await;
    drop(db);
}

/// Before a rollback, `snapshot_lagging_games` brings a lagging game's row back to a snapshot at
/// its head (what a release without `head_version` reads), and leaves other rows alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lagging_snapshots_are_written_at_the_head_for_a_rollback() {
    let db = TestDatabase::create().await;
    let store = store_on(&db, 4).await.with_snapshot_interval(16);
    let (meta, game) = create_game(&store, 21, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let (idle, _) = create_game(&store, 22, &player("south"), &player("north")).await;
    let idle_version = must_load(&store, idle.game_id).await.version;
    let v0 = must_load(&store, id).await.version;
    let (game, version) = confirm_both(&store, id, game, v0).await;
    assert_eq!(
        snapshot_and_head(&store, id).await.1,
        Some(version as i64),
        "play started lagging"
    );
    assert_eq!(store.snapshot_lagging_games().await.expect("catch up"), 1);
    assert_eq!(snapshot_and_head(&store, id).await, (version as i64, None));
    let loaded = must_load(&store, id).await;
    assert_eq!(loaded.version, version);
    assert!(loaded.game == game);
    let snapshot: serde_json::Value =
        sqlx::query_scalar("SELECT snapshot FROM games WHERE game_id = $1")
            .bind(id)
            .fetch_one(&store.pool())
            .await
            .expect("the snapshot");
    let stored: hidden_front_rules::Game =
        serde_json::from_value(snapshot).expect("the snapshot decodes alone");
    assert!(stored == game, "the snapshot alone is the game at its head");
    assert_eq!(store.snapshot_lagging_games().await.expect("again"), 0);
    assert_eq!(
        must_load(&store, idle.game_id).await.version,
        idle_version,
        "a game at its snapshot is left alone"
    );
    store.close().await;
    drop(db);
}

/// Creations of many games written together: one whose game id is taken gets `AlreadyExists`
/// and writes nothing, racers with one key make one game, and every other creation commits with
/// its events and its timer.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_creation_among_many_fails_alone() {
    use hidden_front_store::{Timer, TimerKind};
    let db = TestDatabase::create().await;
    let store = store_on(&db, 8).await;
    let (taken, ..) = create_game(&store, 1, &player("south"), &player("north")).await;
    let deadline =
        hidden_front_store::timers::deadline_after(SystemTime::now(), Duration::from_secs(90));
    let mut creations = tokio::task::JoinSet::new();
    for seed in 0..40u64 {
        let store = store.clone();
        let (mut meta, game, events) =
            hidden_front_store_conformance::new_game(100 + seed, &player("s"), &player("n"));
        // Seeds 0 and 1 race with one key; seed 2 reuses a taken game id.
        let key = match seed {
            0 | 1 => "shared".to_owned(),
            _ => format!("key-{seed}"),
        };
        if seed == 2 {
            meta.game_id = taken.game_id;
        }
        let timer = Timer {
            game_id: meta.game_id,
            kind: TimerKind::Deployment,
            side: Side::South,
            armed_version: events.len() as u64,
            fire_at: deadline,
        };
        creations.spawn(async move {
            let created = store
                .create_armed(&key, &meta, &events, &game, &[timer], &[])
                .await;
            (seed, meta.game_id, events.len() as u64, created)
        });
    }
    let mut shared_winner = None;
    for (seed, game_id, version, created) in creations.join_all().await {
        match (seed, created) {
            (2, Err(StoreError::AlreadyExists(id))) => assert_eq!(id, taken.game_id),
            (2, other) => panic!("a taken game id must be refused: {other:?}"),
            (0 | 1, Ok(created)) if !created.replayed => {
                assert!(shared_winner.replace(game_id).is_none(), "one racer wins");
                assert_eq!(must_load(&store, game_id).await.version, version);
            }
            (0 | 1, Ok(_)) => {}
            (_, Ok(created)) => {
                assert_eq!((created.game_id, created.replayed), (game_id, false));
                assert_eq!(must_load(&store, game_id).await.version, version);
                assert_log_is_whole(&store, game_id).await;
                let timers: i64 =
                    sqlx::query_scalar("SELECT count(*) FROM game_timers WHERE game_id = $1")
                        .bind(game_id)
                        .fetch_one(&store.pool())
                        .await
                        .expect("the timers");
                assert_eq!(timers, 1, "the creation's timer is armed");
            }
            (_, Err(error)) => panic!("creation {seed} beside the failing one failed: {error}"),
        }
    }
    assert!(
        shared_winner.is_some(),
        "one of the racers created the game"
    );
    assert!(
        store.load(taken.game_id).await.expect("load").is_some(),
        "the taken game is untouched"
    );
    let games: i64 = sqlx::query_scalar("SELECT count(*) FROM games")
        .fetch_one(&store.pool())
        .await
        .expect("the games");
    assert_eq!(games, 1 + 38, "the first game and 38 new ones, no more");
    store.close().await;
    drop(db);
}

/// Every connection of the store tells Postgres to end a transaction left idle past the store's
/// limit: what happens to a session host cut off mid-command, so its locks do not outlive it
/// (Postgres does the ending; the store's part is to ask for it on every connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connection_limits_idle_transactions() {
    let db = TestDatabase::create().await;
    let store = PostgresStore::connect_with(db.url(), 2).await.unwrap();
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut conn = store.pool().acquire().await.unwrap();
        let limit: String = sqlx::query_scalar("SHOW idle_in_transaction_session_timeout")
            .fetch_one(&mut *conn)
            .await
            .unwrap();
        assert_eq!(
            limit,
            hidden_front_store::postgres::IDLE_IN_TRANSACTION_TIMEOUT
        );
        held.push(conn);
    }
}

/// A pulse that has to wait (here for the pulse row's lock, held by another transaction; in an
/// outage, for the database to answer at all) is dated when it gets through, not when it began:
/// the outage it finds ends when the store is back, so the deadlines move by all of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pulse_that_waits_is_dated_when_it_gets_through() {
    use hidden_front_store::OutageRule;
    use hidden_front_time::WallClock;
    use std::sync::atomic::{AtomicU64, Ordering};

    let db = TestDatabase::create().await;
    let store = Arc::new(store_on(&db, 4).await);
    let rule = OutageRule {
        outage_after: Duration::from_secs(3),
        reconnect_allowance: Duration::from_secs(5),
    };
    let t0_ms = hidden_front_time::unix_ms(SystemTime::now());
    let hand = Arc::new(AtomicU64::new(t0_ms));
    let clock = {
        let hand = hand.clone();
        WallClock::from_fn(move || hidden_front_time::from_unix_ms(hand.load(Ordering::SeqCst)))
    };
    assert_eq!(
        store.pulse(&clock, &rule).await.unwrap(),
        None,
        "the first pulse"
    );

    // Another transaction holds the pulse row; a pulse begun 1 s later waits for it.
    let mut holder = PgConnection::connect(db.url()).await.unwrap();
    let mut held = sqlx::Connection::begin(&mut holder).await.unwrap();
    sqlx::query("SELECT beat_at FROM service_pulse WHERE id FOR UPDATE")
        .execute(&mut *held)
        .await
        .unwrap();
    hand.store(t0_ms + 1_000, Ordering::SeqCst);
    let waiting = tokio::spawn({
        let (store, clock) = (store.clone(), clock.clone());
        async move { store.pulse(&clock, &rule).await }
    });
    let mut watcher = PgConnection::connect(db.url()).await.unwrap();
    loop {
        let blocked: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock' \
             AND query LIKE '%service_pulse%FOR UPDATE%'",
        )
        .fetch_one(&mut watcher)
        .await
        .unwrap();
        if blocked > 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    // The wait lasts 20 s by the session's clock; then the row is free.
    hand.store(t0_ms + 21_000, Ordering::SeqCst);
    held.rollback().await.unwrap();

    let outage = waiting
        .await
        .unwrap()
        .unwrap()
        .expect("the wait is an outage");
    let ms = hidden_front_time::unix_ms;
    assert_eq!(ms(outage.from), t0_ms);
    assert_eq!(ms(outage.to), t0_ms + 21_000, "dated when it got the lock");
}
