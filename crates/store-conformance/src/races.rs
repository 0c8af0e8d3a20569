//! Races: concurrent appends and retries have one winner each and keep the log gapless.

use crate::RACE_DEADLINE;
use crate::helpers::*;
use hidden_front_rules::Event;
use hidden_front_store::{CommandRecord, GameStore, StoreError};
use std::sync::Arc;
use tokio::sync::Barrier;
use tokio::task::JoinSet;
use uuid::Uuid;

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
