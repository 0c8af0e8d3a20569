//! Creating, loading and listing games: round trips, idempotent creation keys, a player's games.

use crate::RACE_DEADLINE;
use crate::helpers::*;
use hidden_front_rules::{Command, Phase, Side};
use hidden_front_store::{GameStore, StoreError};
use std::collections::HashSet;
use std::sync::Arc;
use tokio::sync::Barrier;
use tokio::task::JoinSet;
use uuid::Uuid;

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
    let expected: Vec<_> = (1u64..)
        .zip(events)
        .map(|(seq, event)| (seq, event, None))
        .collect();
    assert_eq!(
        untimed(&log),
        expected,
        "creation events are seqs 1.. in order"
    );
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

    let ids = |list: &[hidden_front_store::GameSummary]| {
        list.iter().map(|s| s.meta.game_id).collect::<Vec<_>>()
    };
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
