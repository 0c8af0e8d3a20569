//! Timers: armed in the append's transaction, replaced by slot, claimed exclusively with leases.

use crate::helpers::*;
use crate::{RACE_DEADLINE, WAKE_DEADLINE};
use hidden_front_rules::Side;
use hidden_front_store::timers::deadline_after;
use hidden_front_store::{
    Append, GameStore, StoreError, Timer, TimerChange, TimerKind, TimerSlot, TurnTimerChange,
};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::Barrier;
use tokio::task::JoinSet;
use uuid::Uuid;

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
        .create_armed(&format!("k-{id}"), &meta, &events, &game, &[deadline], &[])
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
            facts: &[],
            fired: None,
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
            facts: &[],
            fired: None,
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
            facts: &[],
            fired: None,
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
            facts: &[],
            fired: None,
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

/// An append that carries out a fired timer writes only while the game's slot holds exactly
/// that timer: a deadline moved, re-armed or cleared meanwhile refuses it with `TimerChanged`
/// and writes nothing; a stale version is still reported first.
pub async fn a_fired_append_writes_only_while_its_timer_is_armed(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, game) = create_game(store, 67, &player("fs"), &player("fn")).await;
    let id = meta.game_id;
    let version = must_load(store, id).await.version;
    let armed = timer_at(
        id,
        TimerKind::Deployment,
        Side::South,
        version,
        SystemTime::now() + Duration::from_secs(90),
    );
    store.arm_timer(&armed).await.expect("arm");
    let (next, events) = reshuffle(&game, 5);
    let no_timers = TimerChange::none();
    let carrying = |fired| Append {
        game_id: id,
        expected_version: version,
        events: &events,
        game: &next,
        command: None,
        timers: &no_timers,
        trace_parent: None,
        facts: &[],
        fired: Some(fired),
    };
    // A fire of a deadline the slot no longer holds (it moved by a second).
    let moved = Timer {
        fire_at: armed.fire_at + Duration::from_secs(1),
        ..armed
    };
    match store.append_armed(carrying(&moved)).await {
        Err(StoreError::TimerChanged(game_id)) => assert_eq!(game_id, id),
        other => panic!("a fire of a moved deadline must be refused: {other:?}"),
    }
    assert_eq!(
        must_load(store, id).await.version,
        version,
        "nothing written"
    );
    // A stale version is told first.
    let stale = Append {
        expected_version: version - 1,
        ..carrying(&moved)
    };
    assert!(matches!(
        store.append_armed(stale).await,
        Err(StoreError::VersionConflict { .. })
    ));
    // The timer the slot holds: written.
    assert_eq!(
        store
            .append_armed(carrying(&armed))
            .await
            .expect("the live timer's fire"),
        version + events.len() as u64
    );
    assert_log_is_whole(store, id).await;
}
