//! The one conformance suite every [`GameStore`] must pass, so that the in-memory store used by
//! the one-box mode and unit tests behaves exactly like Postgres.
//!
//! Each check is a `pub async fn` taking the store under test as an `Arc<dyn GameStore>` (an
//! `Arc` because the race checks spawn tasks that share it); each panics with a message on a
//! breach of the contract. Games and events are real ones from the engine
//! ([`Game::create`], [`Game::handle`]), so snapshots round-trip the actual engine state.
//!
//! [`conformance_tests!`](crate::conformance_tests) turns every check into its own `#[tokio::test]`
//! for a given store:
//!
//! ```no_run
//! async fn run(_name: &'static str, check: hidden_front_store::conformance::Check) {
//!     check(std::sync::Arc::new(hidden_front_store::memory::MemoryStore::new())).await;
//! }
//! hidden_front_store::conformance_tests!(run);
//! ```
//!
//! Checks never sleep to synchronise: waits for a wake-up are `tokio::time::timeout` around
//! `changed()`, and racing tasks start together at a barrier. They assume a store of their own
//! (fresh player names keep them apart anyway).

use crate::timers::deadline_after;
use crate::{
    Append, CommandRecord, GameMeta, GameRecord, GameStore, Presence, StoreError, StoredEvent,
    TimeControl, Timer, TimerChange, TimerKind, TimerSlot, TurnTimerChange,
};
use hidden_front_rules::{Command, Event, Game, GameRng, Phase, Rules, Side};
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::Barrier;
use tokio::task::JoinSet;
use uuid::Uuid;

/// A running check, as the test macro hands it to a runner.
pub type CheckFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One check of the suite, applied to a store.
pub type Check = fn(Arc<dyn GameStore>) -> CheckFuture;

/// How long a check waits for something that should happen promptly (a watcher's wake-up) before
/// failing. Generous, because CI machines stall; never a sleep.
pub const WAKE_DEADLINE: Duration = Duration::from_secs(10);

/// How long a race of many tasks may take before the check fails instead of hanging.
pub const RACE_DEADLINE: Duration = Duration::from_secs(120);

/// Turns every conformance check into its own `#[tokio::test]` (multi-threaded runtime), calling
/// `$runner(name, check)` for each. The runner makes a fresh store, runs `check` on it and cleans
/// up; it has the signature `async fn(&'static str, hidden_front_store::conformance::Check)`.
/// The calling crate needs `tokio` (with `macros` and `rt-multi-thread`) as a dependency.
#[macro_export]
macro_rules! conformance_tests {
    (@tests $runner:path; $($check:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $check() {
                $runner(stringify!($check), |store| {
                    ::std::boxed::Box::pin($crate::conformance::$check(store))
                })
                .await;
            }
        )+
    };
    ($runner:path) => {
        $crate::conformance_tests!(@tests $runner;
            create_load_round_trip,
            load_missing_game_is_none,
            create_is_idempotent_on_creation_key,
            create_refuses_existing_game_id,
            concurrent_creates_with_one_key_make_one_game,
            append_happy_path,
            append_version_conflict_writes_nothing,
            append_duplicate_command_returns_first_answer,
            append_without_events_records_command,
            events_order_and_paging,
            unknown_game_is_not_found,
            watch_wakes_after_append,
            concurrent_appends_have_one_winner,
            concurrent_appends_keep_a_gapless_log,
            concurrent_retries_of_one_command_have_one_winner,
            presence_leases,
            games_of_player_newest_first,
            timers_arm_with_the_append_and_replace_by_slot,
            timers_claims_are_exclusive_and_lapse,
            timers_complete_only_the_fired_timer,
            timers_concurrent_claimers_share_without_overlap,
            ended_games_feed_in_order_once,
        );
    };
}

// ---------------------------------------------------------------------------------------------
// Helpers (public so store-specific tests can build on them)
// ---------------------------------------------------------------------------------------------

/// A player id no other check uses.
pub fn player(name: &str) -> String {
    format!("{name}-{}", Uuid::new_v4().simple())
}

/// A real new game from the engine: its metadata (a time-ordered id), the state after creation
/// and the creation events.
pub fn new_game(seed: u64, south: &str, north: &str) -> (GameMeta, Game, Vec<Event>) {
    let rules = Rules::default();
    let (game, events) = Game::create(rules, Side::South, &mut GameRng::from_seed(seed));
    let meta = GameMeta {
        game_id: Uuid::now_v7(),
        rules: rules.name(),
        time_control: TimeControl::online(),
        south_player: south.to_owned(),
        north_player: north.to_owned(),
    };
    (meta, game, events)
}

/// Creates a real game in `store` under a fresh creation key; returns its metadata and state.
pub async fn create_game(
    store: &dyn GameStore,
    seed: u64,
    south: &str,
    north: &str,
) -> (GameMeta, Game) {
    let (meta, game, events) = new_game(seed, south, north);
    let created = store
        .create(&format!("create-{}", meta.game_id), &meta, &events, &game)
        .await
        .expect("create a game");
    assert_eq!(created.game_id, meta.game_id, "create returns the new id");
    assert!(!created.replayed, "a fresh creation key is not a replay");
    (meta, game)
}

/// Judges `command` against a copy of `game` with a seeded random source: the next state and the
/// events it caused. Panics if the engine refuses (the checks only issue legal commands).
pub fn judge(game: &Game, command: Command, seed: u64) -> (Game, Vec<Event>) {
    let mut next = game.clone();
    let events = next
        .handle(&command, &mut GameRng::from_seed(seed))
        .unwrap_or_else(|error| panic!("the engine refused {command:?}: {error}"));
    assert!(!events.is_empty(), "{command:?} caused no event");
    (next, events)
}

/// A one-event step that is always legal during deployment (south reshuffles its draft), so
/// checks can grow a log of any length. Different seeds give different events.
pub fn reshuffle(game: &Game, seed: u64) -> (Game, Vec<Event>) {
    judge(game, Command::Reshuffle { side: Side::South }, seed)
}

/// Loads a game that must exist.
pub async fn must_load(store: &dyn GameStore, game_id: Uuid) -> GameRecord {
    store
        .load(game_id)
        .await
        .expect("load")
        .unwrap_or_else(|| panic!("game {game_id} should exist"))
}

/// The whole log, read in small pages (so paging is exercised too).
pub async fn whole_log(store: &dyn GameStore, game_id: Uuid) -> Vec<StoredEvent> {
    const PAGE: usize = 7;
    let mut log = Vec::new();
    loop {
        let from = log.len() as u64 + 1;
        let page = store
            .events(game_id, from, PAGE)
            .await
            .expect("read events");
        let done = page.len() < PAGE;
        log.extend(page);
        if done {
            return log;
        }
    }
}

/// Asserts the game's log is one gapless history: seqs `1..=version`, each once, in order, and
/// replaying it with the engine gives exactly the stored snapshot. Returns the record.
pub async fn assert_log_is_whole(store: &dyn GameStore, game_id: Uuid) -> GameRecord {
    let record = must_load(store, game_id).await;
    let log = whole_log(store, game_id).await;
    let seqs: Vec<u64> = log.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = (1..=record.version).collect();
    assert_eq!(
        seqs, expected,
        "game {game_id}: the log must hold seqs 1..={} exactly once, in order",
        record.version
    );
    let replayed = Game::replay(log.iter().map(|e| &e.event))
        .unwrap_or_else(|error| panic!("game {game_id}: the log does not replay: {error}"));
    assert_eq!(
        replayed, record.game,
        "game {game_id}: replaying the log must give the stored snapshot"
    );
    record
}

/// Awaits `future` for at most `deadline`, panicking with `what` if it takes longer.
pub async fn within<T>(deadline: Duration, what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(deadline, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {deadline:?}: {what}"))
}

/// Asserts `result` is a version conflict with these versions.
#[track_caller]
fn assert_conflict<T: std::fmt::Debug>(
    result: Result<T, StoreError>,
    game_id: Uuid,
    expected: u64,
    actual: u64,
) {
    match result {
        Err(StoreError::VersionConflict {
            game_id: g,
            expected: e,
            actual: a,
        }) => assert_eq!(
            (g, e, a),
            (game_id, expected, actual),
            "version conflict fields (game, expected, actual)"
        ),
        other => panic!(
            "expected VersionConflict {{ expected: {expected}, actual: {actual} }}, got {other:?}"
        ),
    }
}

/// Asserts `result` is a duplicate command carrying `response`.
#[track_caller]
fn assert_duplicate<T: std::fmt::Debug>(
    result: Result<T, StoreError>,
    game_id: Uuid,
    key: &str,
    response: &[u8],
) {
    match result {
        Err(StoreError::DuplicateCommand {
            game_id: g,
            key: k,
            response: r,
        }) => {
            assert_eq!((g, k.as_str()), (game_id, key), "duplicate command fields");
            assert_eq!(r, response, "a duplicate command returns the first answer");
        }
        other => panic!("expected DuplicateCommand for key {key:?}, got {other:?}"),
    }
}

/// Asserts `result` is `NotFound(game_id)`.
#[track_caller]
fn assert_not_found<T: std::fmt::Debug>(result: Result<T, StoreError>, game_id: Uuid, what: &str) {
    match result {
        Err(StoreError::NotFound(g)) => assert_eq!(g, game_id, "{what}: NotFound names the game"),
        other => panic!("{what} on an unknown game: expected NotFound, got {other:?}"),
    }
}

/// A time on a whole second near now, so that lease boundaries survive Postgres' microsecond
/// precision exactly.
fn whole_second_now() -> SystemTime {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970");
    UNIX_EPOCH + Duration::from_secs(since_epoch.as_secs())
}

// ---------------------------------------------------------------------------------------------
// Creation and loading
// ---------------------------------------------------------------------------------------------

/// A created game loads back exactly: metadata, version = number of creation events, the engine
/// state equal to the one stored, and the creation events as seqs `1..`.
pub async fn create_load_round_trip(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, game, events) = new_game(1, &player("south"), &player("north"));
    let created = store
        .create("round-trip", &meta, &events, &game)
        .await
        .expect("create");
    assert_eq!(created.game_id, meta.game_id);
    assert!(!created.replayed);

    let record = must_load(store, meta.game_id).await;
    assert_eq!(record.meta, meta, "metadata round-trips");
    assert_eq!(
        record.version,
        events.len() as u64,
        "version = events so far"
    );
    assert_eq!(record.game, game, "the engine state round-trips");
    assert_eq!(record.game.phase(), Phase::Deployment);

    let log = store.events(meta.game_id, 1, 100).await.expect("events");
    let expected: Vec<StoredEvent> = (1u64..)
        .zip(events)
        .map(|(seq, event)| StoredEvent {
            seq,
            event,
            trace_parent: None,
        })
        .collect();
    assert_eq!(log, expected, "creation events are seqs 1.. in order");
    assert_log_is_whole(store, meta.game_id).await;
}

/// Loading a game that does not exist is `Ok(None)`, not an error.
pub async fn load_missing_game_is_none(store: Arc<dyn GameStore>) {
    let missing = store.load(Uuid::now_v7()).await.expect("load");
    assert!(missing.is_none(), "an unknown game loads as None");
}

/// A second create with the same creation key writes nothing and returns the first game's id,
/// whatever else it carries.
pub async fn create_is_idempotent_on_creation_key(store: Arc<dyn GameStore>) {
    let store = &*store;
    let south = player("south");
    let (first, first_game, first_events) = new_game(2, &south, &player("north"));
    let key = format!("pairing-{}", Uuid::new_v4());
    let created = store
        .create(&key, &first, &first_events, &first_game)
        .await
        .expect("first create");
    assert_eq!((created.game_id, created.replayed), (first.game_id, false));

    // The retry, as a caller that lost the first answer would send it: same key, new id.
    let (second, second_game, second_events) = new_game(3, &south, &player("other"));
    let replayed = store
        .create(&key, &second, &second_events, &second_game)
        .await
        .expect("repeated create");
    assert_eq!(
        (replayed.game_id, replayed.replayed),
        (first.game_id, true),
        "a repeated creation key returns the first game, replayed"
    );
    assert!(
        store.load(second.game_id).await.expect("load").is_none(),
        "a replayed create writes nothing"
    );
    let record = must_load(store, first.game_id).await;
    assert_eq!((record.meta, record.game), (first, first_game));
    assert_eq!(
        store.games_of_player(&south, 10).await.expect("list").len(),
        1,
        "the player has one game"
    );
}

/// A create whose game id exists already (under another key) fails with `AlreadyExists` and
/// writes nothing, not even its creation key.
pub async fn create_refuses_existing_game_id(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, game, events) = new_game(4, &player("south"), &player("north"));
    store
        .create("original", &meta, &events, &game)
        .await
        .expect("create");
    let (_, other_game, other_events) = new_game(5, &player("south"), &player("north"));
    match store
        .create("clash", &meta, &other_events, &other_game)
        .await
    {
        Err(StoreError::AlreadyExists(id)) => assert_eq!(id, meta.game_id),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    let record = must_load(store, meta.game_id).await;
    assert_eq!(record.game, game, "the existing game is untouched");
    assert_eq!(record.version, events.len() as u64);

    // The failed create did not keep its key: the key is free for a genuinely new game.
    let (fresh, fresh_game, fresh_events) = new_game(6, &player("south"), &player("north"));
    let created = store
        .create("clash", &fresh, &fresh_events, &fresh_game)
        .await
        .expect("create with the key a failed create used");
    assert_eq!((created.game_id, created.replayed), (fresh.game_id, false));
}

/// Many creators racing with one creation key (a retried pairing on several replicas, some
/// resending the same game id, some having drawn a new one) make exactly one game; every one of
/// them learns its id.
pub async fn concurrent_creates_with_one_key_make_one_game(store: Arc<dyn GameStore>) {
    const RACERS: usize = 8;
    let key = format!("race-{}", Uuid::new_v4());
    let south = player("south");
    let shared_id = Uuid::now_v7();
    let barrier = Arc::new(Barrier::new(RACERS));
    let mut tasks = JoinSet::new();
    for seed in 0..RACERS as u64 {
        let (store, barrier, key) = (Arc::clone(&store), Arc::clone(&barrier), key.clone());
        let (mut meta, game, events) = new_game(100 + seed, &south, &player("north"));
        if seed % 2 == 0 {
            meta.game_id = shared_id;
        }
        tasks.spawn(async move {
            barrier.wait().await;
            let created = store.create(&key, &meta, &events, &game).await;
            (meta.game_id, created)
        });
    }
    let results = within(RACE_DEADLINE, "racing creates", tasks.join_all()).await;
    let winners: Vec<Uuid> = results
        .iter()
        .filter_map(|(id, created)| match created {
            Ok(created) if !created.replayed => Some(*id),
            _ => None,
        })
        .collect();
    assert_eq!(winners.len(), 1, "exactly one creator writes: {results:?}");
    let winner = winners[0];
    for (id, created) in &results {
        match created {
            Ok(created) => assert_eq!(created.game_id, winner, "all learn the winner's id"),
            Err(error) => panic!("a racing create failed: {error}"),
        }
        if *id != winner {
            assert!(
                store.load(*id).await.expect("load").is_none(),
                "a loser's game id was not written"
            );
        }
    }
    assert_eq!(
        store
            .games_of_player(&south, 100)
            .await
            .expect("list")
            .len(),
        1
    );
}

// ---------------------------------------------------------------------------------------------
// Appending
// ---------------------------------------------------------------------------------------------

/// Appends extend the log with the next seqs, replace the snapshot, bump the version and store the
/// command's answer.
pub async fn append_happy_path(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, game) = create_game(store, 7, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let v0 = must_load(store, id).await.version;

    let (game1, events1) = judge(&game, Command::Confirm { side: Side::South }, 11);
    let v1 = store
        .append(
            id,
            v0,
            &events1,
            &game1,
            Some(CommandRecord {
                key: "confirm-south",
                response: b"ok south",
            }),
        )
        .await
        .expect("append");
    assert_eq!(v1, v0 + events1.len() as u64, "version = last seq");

    // North confirms: play starts (several events in one append).
    let (game2, events2) = judge(&game1, Command::Confirm { side: Side::North }, 12);
    assert!(events2.len() > 1, "confirming second starts play too");
    let v2 = store
        .append(id, v1, &events2, &game2, None)
        .await
        .expect("second append");
    assert_eq!(v2, v1 + events2.len() as u64);

    let record = must_load(store, id).await;
    assert_eq!(record.version, v2);
    assert_eq!(record.game, game2, "the snapshot is the latest state");
    assert_eq!(record.game.phase(), Phase::Play);
    assert_eq!(record.meta, meta, "metadata does not change");

    let appended = store.events(id, v0 + 1, 100).await.expect("events");
    let expected: Vec<StoredEvent> = (v0 + 1..)
        .zip(events1.iter().chain(&events2).cloned())
        .map(|(seq, event)| StoredEvent {
            seq,
            event,
            trace_parent: None,
        })
        .collect();
    assert_eq!(appended, expected, "appended events get the next seqs");
    assert_eq!(
        store
            .command_response(id, "confirm-south")
            .await
            .expect("command response"),
        Some(b"ok south".to_vec())
    );
    assert_eq!(
        store
            .command_response(id, "never-sent")
            .await
            .expect("command response"),
        None
    );
    assert_log_is_whole(store, id).await;
}

/// An append against a version the game is not at (behind or ahead) fails with the actual version
/// and writes nothing: no events, no snapshot change, no command record.
pub async fn append_version_conflict_writes_nothing(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, game) = create_game(store, 8, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let before = must_load(store, id).await;
    let (next, events) = reshuffle(&game, 21);
    let v1 = store
        .append(id, before.version, &events, &next, None)
        .await
        .expect("append");
    let after_first = must_load(store, id).await;

    let (stale, stale_events) = reshuffle(&game, 22);
    for expected in [before.version, v1 + 5] {
        let result = store
            .append(
                id,
                expected,
                &stale_events,
                &stale,
                Some(CommandRecord {
                    key: "loser",
                    response: b"should not be kept",
                }),
            )
            .await;
        assert_conflict(result, id, expected, v1);
    }
    assert_eq!(
        must_load(store, id).await,
        after_first,
        "a conflict changes nothing"
    );
    assert_eq!(whole_log(store, id).await.len() as u64, v1);
    assert_eq!(
        store.command_response(id, "loser").await.expect("lookup"),
        None,
        "a conflicting command is not recorded"
    );
    assert_log_is_whole(store, id).await;
}

/// A command key applied once answers every later append with the first answer, writes nothing,
/// and wins over a version conflict (a retry usually carries a stale version). Keys are per game.
pub async fn append_duplicate_command_returns_first_answer(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, game) = create_game(store, 9, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let v0 = must_load(store, id).await.version;
    let (game1, events1) = reshuffle(&game, 31);
    let first = CommandRecord {
        key: "cmd-1",
        response: b"first answer",
    };
    let v1 = store
        .append(id, v0, &events1, &game1, Some(first))
        .await
        .expect("first append");
    let after_first = must_load(store, id).await;

    // The same key again, at the right version, with other events and another answer.
    let (game2, events2) = reshuffle(&game1, 32);
    let again = CommandRecord {
        key: "cmd-1",
        response: b"second answer",
    };
    assert_duplicate(
        store.append(id, v1, &events2, &game2, Some(again)).await,
        id,
        "cmd-1",
        b"first answer",
    );
    // A plain retry: the same key with the version it was first judged at.
    assert_duplicate(
        store.append(id, v0, &events1, &game1, Some(first)).await,
        id,
        "cmd-1",
        b"first answer",
    );
    assert_eq!(
        must_load(store, id).await,
        after_first,
        "a duplicate writes nothing"
    );
    assert_eq!(whole_log(store, id).await.len() as u64, v1);
    assert_eq!(
        store.command_response(id, "cmd-1").await.expect("lookup"),
        Some(b"first answer".to_vec())
    );

    // Another key goes through; the same key on another game is unrelated.
    let v2 = store
        .append(
            id,
            v1,
            &events2,
            &game2,
            Some(CommandRecord {
                key: "cmd-2",
                response: b"two",
            }),
        )
        .await
        .expect("a new key appends");
    assert_eq!(v2, v1 + events2.len() as u64);
    let (other, other_game) = create_game(store, 10, &player("south"), &player("north")).await;
    let other_v0 = must_load(store, other.game_id).await.version;
    let (other_next, other_events) = reshuffle(&other_game, 33);
    store
        .append(
            other.game_id,
            other_v0,
            &other_events,
            &other_next,
            Some(first),
        )
        .await
        .expect("command keys are per game");
    assert_log_is_whole(store, id).await;
    assert_log_is_whole(store, other.game_id).await;
}

/// An append with no events (a command whose answer must be remembered although it changed
/// nothing) keeps the version, records the command, and wakes nobody.
pub async fn append_without_events_records_command(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, game) = create_game(store, 12, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let v0 = must_load(store, id).await.version;
    let receiver = store.watch(id).await.expect("watch");
    let command = CommandRecord {
        key: "refused",
        response: b"illegal move",
    };
    let version = store
        .append(id, v0, &[], &game, Some(command))
        .await
        .expect("append without events");
    assert_eq!(version, v0, "no events, no new version");
    assert_eq!(must_load(store, id).await.version, v0);
    assert_eq!(
        store.command_response(id, "refused").await.expect("lookup"),
        Some(b"illegal move".to_vec())
    );
    assert_duplicate(
        store.append(id, v0, &[], &game, Some(command)).await,
        id,
        "refused",
        b"illegal move",
    );
    assert!(
        !receiver.has_changed().expect("sender alive"),
        "an append without events does not wake watchers"
    );
    assert_log_is_whole(store, id).await;
}

// ---------------------------------------------------------------------------------------------
// Reading the log
// ---------------------------------------------------------------------------------------------

/// `events(from_seq, limit)` returns events in seq order starting at `from_seq` (0 reads from the
/// start), at most `limit`; pages concatenate to the whole log; past the end is empty.
pub async fn events_order_and_paging(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, mut game) = create_game(store, 13, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let mut version = must_load(store, id).await.version;
    for seed in 0..20 {
        let (next, events) = reshuffle(&game, 200 + seed);
        version = store
            .append(id, version, &events, &next, None)
            .await
            .expect("append");
        game = next;
    }
    let all = store.events(id, 1, 1000).await.expect("all events");
    assert_eq!(all.len() as u64, version);
    assert!(
        all.iter().zip(1u64..).all(|(e, seq)| e.seq == seq),
        "events come in seq order from 1"
    );
    assert_eq!(
        store.events(id, 0, 1000).await.expect("from 0"),
        all,
        "from_seq 0 reads from the start"
    );
    for page_size in [1, 4, 5, 23] {
        let mut paged = Vec::new();
        let mut from = 1;
        loop {
            let page = store.events(id, from, page_size).await.expect("page");
            assert!(page.len() <= page_size, "a page holds at most `limit`");
            if let Some(first) = page.first() {
                assert_eq!(first.seq, from, "a page starts at from_seq");
            }
            let last = page.last().map(|e| e.seq);
            paged.extend(page);
            match last {
                Some(last) => from = last + 1,
                None => break,
            }
        }
        assert_eq!(paged, all, "pages of {page_size} concatenate to the log");
    }
    let middle = store.events(id, 10, 3).await.expect("middle");
    assert_eq!(middle, all[9..12].to_vec());
    let tail = store.events(id, version, 10).await.expect("tail");
    assert_eq!(tail, all[all.len() - 1..].to_vec());
    assert!(
        store
            .events(id, version + 1, 10)
            .await
            .expect("past end")
            .is_empty(),
        "past the end is empty, not an error"
    );
    assert!(
        store.events(id, 1, 0).await.expect("limit 0").is_empty(),
        "limit 0 returns nothing"
    );
    assert_log_is_whole(store, id).await;
}

/// Every per-game operation on a game that does not exist fails with `NotFound` (load says
/// `None`), and an unknown player has no games.
pub async fn unknown_game_is_not_found(store: Arc<dyn GameStore>) {
    let store = &*store;
    let id = Uuid::now_v7();
    let (_, game, events) = new_game(14, &player("south"), &player("north"));
    assert_not_found(
        store.append(id, 0, &events, &game, None).await,
        id,
        "append",
    );
    assert_not_found(
        store
            .append(
                id,
                3,
                &events,
                &game,
                Some(CommandRecord {
                    key: "k",
                    response: b"r",
                }),
            )
            .await,
        id,
        "append with a command",
    );
    assert_not_found(store.events(id, 1, 10).await, id, "events");
    assert_not_found(
        store.command_response(id, "k").await,
        id,
        "command_response",
    );
    assert_not_found(store.watch(id).await, id, "watch");
    assert_not_found(store.presence(id, SystemTime::now()).await, id, "presence");
    assert_not_found(
        store
            .report_presence(
                id,
                Side::South,
                "gw",
                true,
                SystemTime::now(),
                SystemTime::now() + Duration::from_secs(60),
            )
            .await,
        id,
        "report_presence",
    );
    assert!(store.load(id).await.expect("load").is_none());
    assert!(
        store
            .games_of_player(&player("nobody"), 10)
            .await
            .expect("list")
            .is_empty()
    );
}

// ---------------------------------------------------------------------------------------------
// Watching
// ---------------------------------------------------------------------------------------------

/// A watcher starts at the current version, is woken by a later append (also one made while it
/// waits), and a watcher that subscribes later sees the latest version at once.
pub async fn watch_wakes_after_append(store: Arc<dyn GameStore>) {
    let (meta, game) = create_game(&*store, 15, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let v0 = must_load(&*store, id).await.version;

    let mut receiver = store.watch(id).await.expect("watch");
    assert_eq!(
        *receiver.borrow(),
        v0,
        "a watcher starts at the current version"
    );
    assert!(
        !receiver.has_changed().expect("sender alive"),
        "nothing is pending at first"
    );

    // Woken while waiting: the waiter is parked before the append happens.
    let (game1, events1) = reshuffle(&game, 41);
    let waiter = tokio::spawn(async move {
        within(
            WAKE_DEADLINE,
            "watcher woken by an append",
            receiver.changed(),
        )
        .await
        .expect("the store keeps the channel open");
        let seen = *receiver.borrow_and_update();
        (receiver, seen)
    });
    let v1 = store
        .append(id, v0, &events1, &game1, None)
        .await
        .expect("append");
    let (mut receiver, seen) = waiter.await.expect("waiter task");
    assert_eq!(seen, v1, "the watcher sees the new version");

    // Woken after the fact: changed() completes at once for an append it did not wait on.
    let (game2, events2) = reshuffle(&game1, 42);
    let v2 = store
        .append(id, v1, &events2, &game2, None)
        .await
        .expect("append");
    within(
        WAKE_DEADLINE,
        "watcher sees a past append",
        receiver.changed(),
    )
    .await
    .expect("channel open");
    assert_eq!(*receiver.borrow_and_update(), v2);

    // A late watcher starts at the latest version; the first one is unaffected by it.
    let late = store.watch(id).await.expect("second watch");
    assert_eq!(*late.borrow(), v2);
    assert!(!receiver.has_changed().expect("sender alive"));

    // Other games' appends do not wake this watcher.
    let (other, other_game) = create_game(&*store, 16, &player("south"), &player("north")).await;
    let other_v0 = must_load(&*store, other.game_id).await.version;
    let (other_next, other_events) = reshuffle(&other_game, 43);
    store
        .append(other.game_id, other_v0, &other_events, &other_next, None)
        .await
        .expect("append to another game");
    assert!(!receiver.has_changed().expect("sender alive"));
    assert_eq!(*receiver.borrow(), v2);
}

// ---------------------------------------------------------------------------------------------
// Races
// ---------------------------------------------------------------------------------------------

/// Many writers appending at the same version at the same moment: exactly one wins, every other
/// one gets a conflict naming the winner's version, and the log holds only the winner's events.
pub async fn concurrent_appends_have_one_winner(store: Arc<dyn GameStore>) {
    const RACERS: usize = 12;
    let (meta, game) = create_game(&*store, 17, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let v0 = must_load(&*store, id).await.version;
    let barrier = Arc::new(Barrier::new(RACERS));
    let mut tasks = JoinSet::new();
    for racer in 0..RACERS {
        let (store, barrier) = (Arc::clone(&store), Arc::clone(&barrier));
        let (next, events) = reshuffle(&game, 1000 + racer as u64);
        tasks.spawn(async move {
            barrier.wait().await;
            let result = store.append(id, v0, &events, &next, None).await;
            (next, events, result)
        });
    }
    let results = within(RACE_DEADLINE, "racing appends", tasks.join_all()).await;
    let v1 = v0 + 1;
    let mut winners = Vec::new();
    for (next, events, result) in results {
        match result {
            Ok(version) => {
                assert_eq!(version, v1);
                winners.push((next, events));
            }
            Err(error) => assert_conflict(Err::<(), _>(error), id, v0, v1),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one racing append wins");
    let (winner_game, winner_events) = winners.remove(0);
    let record = assert_log_is_whole(&*store, id).await;
    assert_eq!(record.version, v1);
    assert_eq!(record.game, winner_game, "the snapshot is the winner's");
    let tail: Vec<Event> = store
        .events(id, v1, 10)
        .await
        .expect("events")
        .into_iter()
        .map(|e| e.event)
        .collect();
    assert_eq!(tail, winner_events, "the log holds the winner's events");
}

/// Writers that load, judge and append, retrying on conflict (the session's loop), all get every
/// one of their appends in, and the log stays one gapless history that replays to the snapshot.
pub async fn concurrent_appends_keep_a_gapless_log(store: Arc<dyn GameStore>) {
    const WRITERS: u64 = 6;
    const APPENDS_EACH: u64 = 8;
    let (meta, _) = create_game(&*store, 18, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let v0 = must_load(&*store, id).await.version;
    let appended = race_appends(&store, id, WRITERS, APPENDS_EACH).await;
    assert_eq!(appended, WRITERS * APPENDS_EACH);
    let record = assert_log_is_whole(&*store, id).await;
    assert_eq!(
        record.version,
        v0 + WRITERS * APPENDS_EACH,
        "every successful append is in the log, once"
    );
}

/// Runs `writers` tasks that each make `appends_each` successful one-event appends to the game,
/// reloading and re-judging after every conflict (the session replicas' loop). Returns how many
/// appends succeeded. Public so store-specific tests can race several store instances.
pub async fn race_appends(
    store: &Arc<dyn GameStore>,
    game_id: Uuid,
    writers: u64,
    appends_each: u64,
) -> u64 {
    race_appends_across(&[Arc::clone(store)], game_id, writers, appends_each).await
}

/// Like [`race_appends`], with writer `i` using `stores[i % stores.len()]` (several stores over
/// one database stand for several processes).
pub async fn race_appends_across(
    stores: &[Arc<dyn GameStore>],
    game_id: Uuid,
    writers: u64,
    appends_each: u64,
) -> u64 {
    assert!(!stores.is_empty(), "race_appends_across needs a store");
    let barrier = Arc::new(Barrier::new(writers as usize));
    let mut tasks = JoinSet::new();
    for writer in 0..writers {
        let store = Arc::clone(&stores[writer as usize % stores.len()]);
        let barrier = Arc::clone(&barrier);
        tasks.spawn(async move {
            barrier.wait().await;
            let mut done = 0;
            let mut conflicts = 0u64;
            while done < appends_each {
                let record = must_load(&*store, game_id).await;
                let seed = writer * 1_000_003 + done * 7919 + conflicts;
                let (next, events) = reshuffle(&record.game, seed);
                match store
                    .append(game_id, record.version, &events, &next, None)
                    .await
                {
                    Ok(version) => {
                        assert_eq!(version, record.version + 1);
                        done += 1;
                    }
                    Err(StoreError::VersionConflict { actual, .. }) => {
                        assert!(
                            actual > record.version,
                            "a conflict reports a later version ({actual} after {})",
                            record.version
                        );
                        conflicts += 1;
                        assert!(conflicts < 10_000, "writer {writer} starves");
                    }
                    Err(error) => panic!("writer {writer}: append failed: {error}"),
                }
            }
            done
        });
    }
    within(RACE_DEADLINE, "writers racing appends", tasks.join_all())
        .await
        .into_iter()
        .sum()
}

/// The same command sent concurrently (a client retrying through several replicas) is applied
/// once; every other attempt gets the winner's answer as a duplicate.
pub async fn concurrent_retries_of_one_command_have_one_winner(store: Arc<dyn GameStore>) {
    const RACERS: usize = 10;
    let (meta, game) = create_game(&*store, 19, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let v0 = must_load(&*store, id).await.version;
    let barrier = Arc::new(Barrier::new(RACERS));
    let mut tasks = JoinSet::new();
    for racer in 0..RACERS {
        let (store, barrier) = (Arc::clone(&store), Arc::clone(&barrier));
        let (next, events) = reshuffle(&game, 2000 + racer as u64);
        tasks.spawn(async move {
            let response = format!("answer {racer}").into_bytes();
            barrier.wait().await;
            let command = CommandRecord {
                key: "retried",
                response: &response,
            };
            let result = store.append(id, v0, &events, &next, Some(command)).await;
            (response, result)
        });
    }
    let results = within(RACE_DEADLINE, "racing retries", tasks.join_all()).await;
    let winners: Vec<&Vec<u8>> = results
        .iter()
        .filter(|(_, result)| result.is_ok())
        .map(|(response, _)| response)
        .collect();
    assert_eq!(winners.len(), 1, "exactly one attempt applies the command");
    let winner = winners[0].clone();
    for (_, result) in results {
        if result.is_err() {
            assert_duplicate(result, id, "retried", &winner);
        }
    }
    assert_eq!(
        store.command_response(id, "retried").await.expect("lookup"),
        Some(winner)
    );
    let record = assert_log_is_whole(&*store, id).await;
    assert_eq!(record.version, v0 + 1, "the command's events are in once");
}

// ---------------------------------------------------------------------------------------------
// Presence
// ---------------------------------------------------------------------------------------------

/// A side is connected while any gateway's unexpired report says so; a lease ending at `t` no
/// longer counts at `t`; a later report from the same gateway replaces its earlier one; a side's
/// presence holds until the latest of its connected leases ends; reports are judged at the time
/// the caller gives, not by the store's own clock.
pub async fn presence_leases(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, _) = create_game(store, 20, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let now = whole_second_now();
    let hour = Duration::from_secs(3600);
    let lease = now + hour;
    let connected = async |at: SystemTime| store.presence(id, at).await.unwrap().connected();

    assert_eq!(
        store.presence(id, now).await.expect("presence"),
        Presence::default(),
        "nobody is connected before any report"
    );
    assert_eq!(
        store
            .report_presence(id, Side::South, "gw-1", true, now, lease)
            .await
            .expect("report"),
        Presence {
            connected_until: [Some(lease), None]
        },
        "the report counts at once, until its lease ends"
    );
    assert_eq!(connected(now).await, [true, false]);
    assert_eq!(
        connected(lease - Duration::from_millis(1)).await,
        [true, false],
        "connected until the lease ends"
    );
    assert_eq!(
        store.presence(id, lease).await.unwrap(),
        Presence::default(),
        "a lease ending now no longer counts"
    );
    assert_eq!(
        connected(lease + hour).await,
        [false, false],
        "an expired lease counts as disconnected"
    );

    // An already expired report counts for nothing.
    assert_eq!(
        store
            .report_presence(
                id,
                Side::North,
                "gw-1",
                true,
                now,
                now - Duration::from_secs(1)
            )
            .await
            .unwrap()
            .connected(),
        [true, false]
    );
    // Another gateway saying "disconnected" does not outvote one saying "connected", nor
    // shorten how long it holds.
    assert_eq!(
        store
            .report_presence(id, Side::South, "gw-2", false, now, now + 2 * hour)
            .await
            .unwrap(),
        Presence {
            connected_until: [Some(lease), None]
        }
    );
    // The same gateway's new report replaces its old one.
    assert_eq!(
        store
            .report_presence(id, Side::South, "gw-1", false, now, lease)
            .await
            .unwrap(),
        Presence::default()
    );
    assert_eq!(
        store
            .report_presence(id, Side::North, "gw-2", true, now, lease)
            .await
            .unwrap()
            .connected(),
        [false, true]
    );
    // Two gateways connected for south (a reconnect through another gateway): the longer lease
    // keeps south connected after the shorter one ends, and says until when.
    store
        .report_presence(id, Side::South, "gw-1", true, now, now + hour)
        .await
        .unwrap();
    assert_eq!(
        store
            .report_presence(id, Side::South, "gw-3", true, now, now + 2 * hour)
            .await
            .unwrap()
            .connected_until[Side::South.index()],
        Some(now + 2 * hour),
        "the latest lease is the one that holds"
    );
    let later = now + hour + Duration::from_secs(1);
    assert_eq!(
        store.presence(id, later).await.unwrap(),
        Presence {
            connected_until: [Some(now + 2 * hour), None]
        }
    );
    assert_eq!(connected(now + 3 * hour).await, [false, false]);

    // A report is judged at the time the caller gives, not by the store's clock: north's
    // report given at the moment its own lease ends counts for nothing, although by the
    // store's clock that moment is an hour away.
    assert_eq!(
        store
            .report_presence(id, Side::North, "gw-2", true, lease, lease)
            .await
            .unwrap(),
        Presence {
            connected_until: [Some(now + 2 * hour), None]
        }
    );

    // Presence is per game.
    let (other, _) = create_game(store, 21, &player("south"), &player("north")).await;
    assert_eq!(
        store.presence(other.game_id, now).await.unwrap(),
        Presence::default()
    );
}

// ---------------------------------------------------------------------------------------------
// Listing
// ---------------------------------------------------------------------------------------------

/// A player's games (either seat) come newest first, at most `limit`, with current phase and
/// version.
pub async fn games_of_player_newest_first(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (alice, bob, carol, dave) = (
        player("alice"),
        player("bob"),
        player("carol"),
        player("dave"),
    );
    let (g1, game1) = create_game(store, 22, &alice, &bob).await;
    let (g2, _) = create_game(store, 23, &carol, &alice).await;
    let (g3, _) = create_game(store, 24, &alice, &dave).await;
    let (g4, _) = create_game(store, 25, &bob, &carol).await;

    let ids = |list: &[crate::GameSummary]| list.iter().map(|s| s.meta.game_id).collect::<Vec<_>>();
    let list = store.games_of_player(&alice, 10).await.expect("list");
    assert_eq!(ids(&list), [g3.game_id, g2.game_id, g1.game_id]);
    assert_eq!(list[1].meta, g2, "summaries carry the metadata");
    assert!(
        list.iter()
            .all(|s| s.phase == Phase::Deployment && s.version == 3)
    );
    assert_eq!(
        ids(&store.games_of_player(&alice, 2).await.expect("list")),
        [g3.game_id, g2.game_id],
        "limit keeps the newest"
    );
    assert!(
        store
            .games_of_player(&alice, 0)
            .await
            .expect("list")
            .is_empty()
    );
    assert_eq!(
        ids(&store.games_of_player(&bob, 10).await.expect("list")),
        [g4.game_id, g1.game_id]
    );
    assert_eq!(
        ids(&store.games_of_player(&dave, 10).await.expect("list")),
        [g3.game_id]
    );

    // Summaries follow appends: g1 ends (south resigns during deployment).
    let (ended, events) = judge(&game1, Command::Resign { side: Side::South }, 51);
    let v = store
        .append(g1.game_id, 3, &events, &ended, None)
        .await
        .expect("append");
    let list = store.games_of_player(&bob, 10).await.expect("list");
    let summary = list
        .iter()
        .find(|s| s.meta.game_id == g1.game_id)
        .expect("g1 listed");
    assert_eq!((summary.phase, summary.version), (Phase::Ended, v));
    assert_eq!(
        ids(&list),
        [g4.game_id, g1.game_id],
        "order is by creation, not by last change"
    );

    // A player seated on both sides (a test game against oneself) is listed once.
    let (solo, _) = create_game(store, 26, &dave, &dave).await;
    let list = store.games_of_player(&dave, 10).await.expect("list");
    assert_eq!(ids(&list), [solo.game_id, g3.game_id]);
    let unique: HashSet<Uuid> = ids(&list).into_iter().collect();
    assert_eq!(unique.len(), list.len());
}

// ---------------------------------------------------------------------------------------------
// Timers and the feed of ended games
// ---------------------------------------------------------------------------------------------

fn timer_at(
    game_id: Uuid,
    kind: TimerKind,
    side: Side,
    version: u64,
    fire_at: SystemTime,
) -> Timer {
    Timer {
        game_id,
        kind,
        side,
        armed_version: version,
        fire_at: deadline_after(fire_at, Duration::ZERO),
    }
}

/// Timers armed with a creation or an append are there exactly when the write committed; a slot
/// holds one timer, a retag keeps the deadline, and clearing removes all.
pub async fn timers_arm_with_the_append_and_replace_by_slot(store: Arc<dyn GameStore>) {
    let (meta, game, events) = new_game(61, &player("tas"), &player("tan"));
    let id = meta.game_id;
    let now = SystemTime::now();
    let deadline = timer_at(
        id,
        TimerKind::Deployment,
        Side::South,
        3,
        now + Duration::from_secs(90),
    );
    store
        .create_armed(&format!("k-{id}"), &meta, &events, &game, &[deadline])
        .await
        .expect("create with a timer");
    assert_eq!(store.timers_of(id).await.unwrap(), vec![deadline]);
    // A refused append (stale version) arms nothing.
    let (next, more) = reshuffle(&game, 1);
    let mv = timer_at(
        id,
        TimerKind::Move,
        Side::North,
        4,
        now + Duration::from_secs(30),
    );
    let refused = store
        .append_armed(Append {
            game_id: id,
            expected_version: 2,
            events: &more,
            game: &next,
            command: None,
            timers: &TimerChange {
                turn: Some(TurnTimerChange::Arm(mv)),
                ..TimerChange::none()
            },
            trace_parent: None,
        })
        .await;
    assert!(
        matches!(refused, Err(StoreError::VersionConflict { .. })),
        "{refused:?}"
    );
    assert_eq!(
        store.timers_of(id).await.unwrap(),
        vec![deadline],
        "nothing half-applied"
    );
    // An accepted one replaces the turn slot and adds a reconnect timer.
    let away = timer_at(
        id,
        TimerKind::Reconnect,
        Side::South,
        4,
        now + Duration::from_secs(60),
    );
    let version = store
        .append_armed(Append {
            game_id: id,
            expected_version: 3,
            events: &more,
            game: &next,
            command: None,
            timers: &TimerChange {
                turn: Some(TurnTimerChange::Arm(mv)),
                reconnect: vec![away],
                ..TimerChange::none()
            },
            trace_parent: None,
        })
        .await
        .unwrap();
    assert_eq!(version, 4);
    assert_eq!(
        store.timers_of(id).await.unwrap(),
        vec![mv, away],
        "earliest first"
    );
    // A retag keeps the deadline and moves the fence.
    let (next2, more2) = reshuffle(&next, 2);
    store
        .append_armed(Append {
            game_id: id,
            expected_version: 4,
            events: &more2,
            game: &next2,
            command: None,
            timers: &TimerChange {
                turn: Some(TurnTimerChange::Retag { armed_version: 5 }),
                ..TimerChange::none()
            },
            trace_parent: None,
        })
        .await
        .unwrap();
    let turn = store.timers_of(id).await.unwrap()[0];
    assert_eq!(
        turn,
        Timer {
            armed_version: 5,
            ..mv
        }
    );
    // Arming a slot directly replaces it; cancelling empties it.
    let later = Timer {
        fire_at: away.fire_at + Duration::from_secs(5),
        ..away
    };
    store.arm_timer(&later).await.unwrap();
    assert_eq!(store.timers_of(id).await.unwrap().len(), 2);
    assert!(
        store
            .cancel_timer(id, TimerSlot::Reconnect(Side::South))
            .await
            .unwrap()
    );
    assert!(
        !store
            .cancel_timer(id, TimerSlot::Reconnect(Side::South))
            .await
            .unwrap()
    );
    // Clearing removes all.
    let (next3, more3) = reshuffle(&next2, 3);
    store
        .append_armed(Append {
            game_id: id,
            expected_version: 5,
            events: &more3,
            game: &next3,
            command: None,
            timers: &TimerChange {
                clear_all: true,
                ..TimerChange::none()
            },
            trace_parent: None,
        })
        .await
        .unwrap();
    assert!(store.timers_of(id).await.unwrap().is_empty());
    match store
        .arm_timer(&timer_at(
            Uuid::now_v7(),
            TimerKind::Move,
            Side::South,
            1,
            now,
        ))
        .await
    {
        Err(StoreError::NotFound(_)) => {}
        other => panic!("arming a timer of an unknown game: expected NotFound, got {other:?}"),
    }
}

/// A claimed timer is not handed out again until its lease ends (counted from its deadline);
/// a released one is claimable again from the given time; timers beyond the horizon wait.
pub async fn timers_claims_are_exclusive_and_lapse(store: Arc<dyn GameStore>) {
    let (meta, _) = create_game(&*store, 62, &player("tcs"), &player("tcn")).await;
    let id = meta.game_id;
    let now = SystemTime::now();
    let past = timer_at(
        id,
        TimerKind::Move,
        Side::South,
        3,
        now - Duration::from_secs(1),
    );
    let future = timer_at(
        id,
        TimerKind::Reconnect,
        Side::North,
        3,
        now + Duration::from_secs(3600),
    );
    store.arm_timer(&past).await.unwrap();
    store.arm_timer(&future).await.unwrap();
    let horizon = now + Duration::from_secs(5);
    let lease = Duration::from_millis(300);
    let mine: Vec<Timer> = store
        .claim_due("a", horizon, lease, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|t| t.game_id == id)
        .collect();
    assert_eq!(mine, vec![past], "only the due timer");
    let again = store.claim_due("b", horizon, lease, 100).await.unwrap();
    assert!(
        !again.iter().any(|t| t.game_id == id),
        "a live claim excludes others"
    );
    // Released for a retry: claimable again once its retry time has passed.
    store.release_timer(&past, SystemTime::now()).await.unwrap();
    let retried = within(WAKE_DEADLINE, "a released timer to be claimable", async {
        loop {
            let got = store.claim_due("b", horizon, lease, 100).await.unwrap();
            if got.contains(&past) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    retried.await;
    // The claim by b lapses after its lease: then c gets it.
    within(WAKE_DEADLINE, "a lapsed claim to be claimable", async {
        loop {
            let got = store.claim_due("c", horizon, lease, 100).await.unwrap();
            if got.contains(&past) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // Re-arming drops the claim.
    let rearmed = Timer {
        armed_version: 4,
        ..past
    };
    store.arm_timer(&rearmed).await.unwrap();
    let got = store.claim_due("d", horizon, lease, 100).await.unwrap();
    assert!(
        got.contains(&rearmed),
        "a re-armed slot is claimable at once"
    );
}

/// Completing deletes only timers still armed exactly as fired.
pub async fn timers_complete_only_the_fired_timer(store: Arc<dyn GameStore>) {
    let (meta, _) = create_game(&*store, 63, &player("tks"), &player("tkn")).await;
    let id = meta.game_id;
    let now = SystemTime::now();
    let fired = timer_at(id, TimerKind::Move, Side::South, 3, now);
    store.arm_timer(&fired).await.unwrap();
    let rearmed = Timer {
        armed_version: 4,
        fire_at: fired.fire_at + Duration::from_secs(30),
        ..fired
    };
    store.arm_timer(&rearmed).await.unwrap();
    assert_eq!(store.complete_timers(&[fired]).await.unwrap(), 0);
    assert_eq!(store.timers_of(id).await.unwrap(), vec![rearmed]);
    assert_eq!(store.complete_timers(&[rearmed]).await.unwrap(), 1);
    assert!(store.timers_of(id).await.unwrap().is_empty());
    assert_eq!(store.complete_timers(&[]).await.unwrap(), 0);
}

/// Claimers racing over many due timers get disjoint sets that together cover all of them.
pub async fn timers_concurrent_claimers_share_without_overlap(store: Arc<dyn GameStore>) {
    let now = SystemTime::now();
    let mut expected = HashSet::new();
    for seed in 0..40 {
        let (meta, _) = create_game(&*store, 100 + seed, &player("tos"), &player("ton")).await;
        let timer = timer_at(meta.game_id, TimerKind::Move, Side::South, 3, now);
        store.arm_timer(&timer).await.unwrap();
        expected.insert(timer);
    }
    let barrier = Arc::new(Barrier::new(4));
    let mut tasks = JoinSet::new();
    for claimer in 0..4 {
        let store = store.clone();
        let barrier = barrier.clone();
        tasks.spawn(async move {
            barrier.wait().await;
            let mut mine = Vec::new();
            for _ in 0..20 {
                let got = store
                    .claim_due(
                        &format!("claimer-{claimer}"),
                        now + Duration::from_secs(1),
                        Duration::from_secs(60),
                        3,
                    )
                    .await
                    .unwrap();
                mine.extend(got);
            }
            mine
        });
    }
    let mut seen = HashSet::new();
    within(RACE_DEADLINE, "claimers to finish", async {
        while let Some(result) = tasks.join_next().await {
            for timer in result.unwrap() {
                if expected.contains(&timer) {
                    assert!(seen.insert(timer), "{timer:?} was claimed twice");
                }
            }
        }
    })
    .await;
    assert_eq!(seen, expected, "every due timer was claimed");
}

/// An append that ends a game puts it in the feed once, in commit order, with its final state.
pub async fn ended_games_feed_in_order_once(store: Arc<dyn GameStore>) {
    let start = store
        .ended_games(0, 100_000)
        .await
        .unwrap()
        .last()
        .map_or(0, |e| e.cursor);
    let mut ended = Vec::new();
    for seed in 0..3 {
        let (meta, game) = create_game(&*store, 70 + seed, &player("tes"), &player("ten")).await;
        let (next, events) = judge(&game, Command::Resign { side: Side::North }, seed);
        assert_eq!(next.phase(), Phase::Ended);
        store
            .append(meta.game_id, 3, &events, &next, None)
            .await
            .unwrap();
        ended.push(meta.game_id);
    }
    let feed = store.ended_games(start, 100).await.unwrap();
    let ids: Vec<Uuid> = feed.iter().map(|e| e.record.meta.game_id).collect();
    assert_eq!(ids, ended, "in the order they ended");
    assert!(feed.windows(2).all(|w| w[0].cursor < w[1].cursor));
    assert!(feed.iter().all(|e| e.record.game.phase() == Phase::Ended));
    let after_first = store.ended_games(feed[0].cursor, 100).await.unwrap();
    assert_eq!(after_first.len(), 2, "paging by cursor");
    assert_eq!(store.ended_games(start, 1).await.unwrap().len(), 1, "limit");
}
