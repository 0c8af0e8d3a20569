//! Helpers of the checks, public so that store-specific tests can build on them: fresh players,
//! real games from the engine, whole-log checks, bounded waits.

use hidden_front_rules::{Command, Event, Game, GameRng, Rules, Side};
use hidden_front_store::{GameMeta, GameRecord, GameStore, StoreError, StoredEvent, TimeControl};
use hidden_front_time::WallClock;
use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use uuid::Uuid;

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

/// Creates a real game in `store` under a fresh creation key, with the id the store gives it
/// ([`GameStore::new_game_id`]); returns its metadata and state.
pub async fn create_game(
    store: &dyn GameStore,
    seed: u64,
    south: &str,
    north: &str,
) -> (GameMeta, Game) {
    let (mut meta, game, events) = new_game(seed, south, north);
    let key = format!("create-{}", meta.game_id);
    // Placed by the store, as the session places a new game: on a sharded store the games of
    // a check spread over the shards.
    meta.game_id = store.new_game_id(&key);
    let created = store
        .create(&key, &meta, &events, &game)
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

/// A log without its commit times, which no check can predict: (seq, event, trace parent).
pub fn untimed(log: &[StoredEvent]) -> Vec<(u64, Event, Option<String>)> {
    log.iter()
        .map(|e| (e.seq, e.event.clone(), e.trace_parent.clone()))
        .collect()
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
pub(crate) fn assert_conflict<T: std::fmt::Debug>(
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
pub(crate) fn assert_duplicate<T: std::fmt::Debug>(
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
pub(crate) fn assert_not_found<T: std::fmt::Debug>(
    result: Result<T, StoreError>,
    game_id: Uuid,
    what: &str,
) {
    match result {
        Err(StoreError::NotFound(g)) => assert_eq!(g, game_id, "{what}: NotFound names the game"),
        other => panic!("{what} on an unknown game: expected NotFound, got {other:?}"),
    }
}

/// A time on a whole second near now, so that lease boundaries survive Postgres' microsecond
/// precision exactly.
pub(crate) fn whole_second_now() -> SystemTime {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970");
    UNIX_EPOCH + Duration::from_secs(since_epoch.as_secs())
}

/// A clock that always reads `t`: a pulse dated by hand.
pub fn at(t: SystemTime) -> WallClock {
    WallClock::from_fn(move || t)
}
