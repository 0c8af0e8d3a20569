//! Change notification: a watcher wakes after an append and sees the new version.

use crate::WAKE_DEADLINE;
use crate::helpers::*;
use hidden_front_store::GameStore;
use std::sync::Arc;

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
