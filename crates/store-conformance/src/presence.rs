//! Presence: gateways' leased reports and how long each side counts as connected.

use crate::helpers::*;
use hidden_front_rules::Side;
use hidden_front_store::{
    ArmAfterReport, GameStore, Presence, StoreError, Timer, TimerKind, TimerSlot,
};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use uuid::Uuid;

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
            .report_presence(id, Side::South, "gw-1", true, now, lease, None)
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
                now - Duration::from_secs(1),
                None
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
            .report_presence(id, Side::South, "gw-2", false, now, now + 2 * hour, None)
            .await
            .unwrap(),
        Presence {
            connected_until: [Some(lease), None]
        }
    );
    // The same gateway's new report replaces its old one.
    assert_eq!(
        store
            .report_presence(id, Side::South, "gw-1", false, now, lease, None)
            .await
            .unwrap(),
        Presence::default()
    );
    assert_eq!(
        store
            .report_presence(id, Side::North, "gw-2", true, now, lease, None)
            .await
            .unwrap()
            .connected(),
        [false, true]
    );
    // Two gateways connected for south (a reconnect through another gateway): the longer lease
    // keeps south connected after the shorter one ends, and says until when.
    store
        .report_presence(id, Side::South, "gw-1", true, now, now + hour, None)
        .await
        .unwrap();
    assert_eq!(
        store
            .report_presence(id, Side::South, "gw-3", true, now, now + 2 * hour, None)
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
            .report_presence(id, Side::North, "gw-2", true, lease, lease, None)
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

/// A report that arms a timer arms the one made from how long its side counts as connected
/// after the report, replacing what the slot held: this report's own lease, another gateway's
/// longer one, or none. A report without `arm` leaves the timers alone.
pub async fn presence_reports_arm_their_timer(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, _) = create_game(store, 22, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let now = whole_second_now();
    let minute = Duration::from_secs(60);
    // The time to come back: a minute after the report, or when the side's leases end if later.
    let arm = |connected_until: Option<SystemTime>| Timer {
        game_id: id,
        kind: TimerKind::Reconnect,
        side: Side::North,
        armed_version: 1,
        fire_at: connected_until.map_or(now + minute, |until| until.max(now + minute)),
    };
    let report = async |gateway: &str, connected: bool, lease: SystemTime, arms: bool| {
        store
            .report_presence(
                id,
                Side::North,
                gateway,
                connected,
                now,
                lease,
                arms.then_some(&arm as &ArmAfterReport<'_>),
            )
            .await
            .expect("report")
    };
    let deadline = async || {
        let armed: Vec<Timer> = store
            .timers_of(id)
            .await
            .expect("timers")
            .into_iter()
            .filter(|t| t.slot() == TimerSlot::Reconnect(Side::North))
            .collect();
        assert_eq!(armed.len(), 1, "one timer in the slot: {armed:?}");
        armed[0].fire_at
    };

    // This report's own lease is the one that holds.
    report("gw-1", true, now + 2 * minute, true).await;
    assert_eq!(deadline().await, now + 2 * minute);
    // Another gateway's longer lease holds the side longer than this report's.
    report("gw-2", true, now + 5 * minute, false).await;
    report("gw-1", true, now + 3 * minute, true).await;
    assert_eq!(
        deadline().await,
        now + 5 * minute,
        "due when the other gateway's longer lease ends"
    );
    // The side leaves one gateway but is still connected through the other.
    report("gw-1", false, now + 3 * minute, true).await;
    assert_eq!(deadline().await, now + 5 * minute);
    // Gone from both: a minute after the report.
    report("gw-2", false, now + 5 * minute, true).await;
    assert_eq!(deadline().await, now + minute);
    // A shorter lease of another gateway does not hold the side longer than this report's.
    report("gw-2", true, now + 2 * minute, false).await;
    report("gw-1", true, now + 4 * minute, true).await;
    assert_eq!(deadline().await, now + 4 * minute);
    // Without `arm`, a report leaves the timers alone.
    report("gw-1", false, now + 4 * minute, false).await;
    assert_eq!(deadline().await, now + 4 * minute);

    let unknown = Uuid::from_u128(0x00de_ad22);
    assert!(matches!(
        store
            .report_presence(unknown, Side::North, "gw-1", true, now, now + minute, Some(&arm))
            .await,
        Err(StoreError::NotFound(missing)) if missing == unknown
    ));
    assert!(
        store.timers_of(unknown).await.expect("timers").is_empty(),
        "no timer for an unknown game"
    );
}

/// `observe` answers what `load`, `presence` and `timers_of` answer, at the moment it is given:
/// the game at its head, the sides connected then, the timers soonest first; `None` for a game
/// that does not exist.
pub async fn observe_reads_game_presence_and_timers(store: Arc<dyn GameStore>) {
    let store = &*store;
    let now = whole_second_now();
    assert_eq!(
        store.observe(Uuid::now_v7(), now).await.expect("observe"),
        None,
        "an unknown game is not there"
    );
    let (meta, game) = create_game(store, 23, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let observed = store
        .observe(id, now)
        .await
        .expect("observe")
        .expect("game");
    assert_eq!(observed.record, must_load(store, id).await);
    assert_eq!(observed.presence, Presence::default());
    assert_eq!(observed.timers, store.timers_of(id).await.unwrap());

    // Two timers, the later one armed first; a connected south; a log past the creation.
    let timer = |kind, side, secs| Timer {
        game_id: id,
        kind,
        side,
        armed_version: 1,
        fire_at: now + Duration::from_secs(secs),
    };
    store
        .arm_timer(&timer(TimerKind::Deployment, Side::South, 90))
        .await
        .unwrap();
    store
        .arm_timer(&timer(TimerKind::Reconnect, Side::North, 60))
        .await
        .unwrap();
    let lease = now + Duration::from_secs(30);
    store
        .report_presence(id, Side::South, "gw-1", true, now, lease, None)
        .await
        .unwrap();
    let version = must_load(store, id).await.version;
    let (next, events) = crate::helpers::reshuffle(&game, 5);
    store
        .append(id, version, &events, &next, None)
        .await
        .expect("append");

    let observed = store
        .observe(id, now)
        .await
        .expect("observe")
        .expect("game");
    let record = must_load(store, id).await;
    assert_eq!(record.version, version + events.len() as u64);
    assert_eq!(observed.record, record, "the game at its head");
    assert_eq!(observed.presence, store.presence(id, now).await.unwrap());
    assert_eq!(observed.presence.connected(), [true, false]);
    assert_eq!(
        observed.timers,
        vec![
            timer(TimerKind::Reconnect, Side::North, 60),
            timer(TimerKind::Deployment, Side::South, 90)
        ],
        "every timer, soonest first"
    );
    assert_eq!(observed.timers, store.timers_of(id).await.unwrap());
    // Presence is judged at the moment given, not by the store's clock.
    let later = store.observe(id, lease).await.unwrap().unwrap();
    assert_eq!(later.presence, Presence::default());
    assert_eq!(later.record, record);
}

/// Waits for `changes` to move past `seen` (the status wake-up of a game), failing the test if
/// it does not within [`crate::RACE_DEADLINE`]; the count it reached.
async fn woken(changes: &mut tokio::sync::watch::Receiver<u64>, seen: u64, what: &str) -> u64 {
    tokio::time::timeout(
        crate::RACE_DEADLINE,
        changes.wait_for(|count| *count > seen),
    )
    .await
    .unwrap_or_else(|_| panic!("no status wake-up for {what}"))
    .map(|count| *count)
    .expect("the status channel stays open while watched")
}

/// A game's status watchers are woken when a side's presence flips (away to connected and
/// back, whichever gateway reports it) and when a report re-arms the time to come back of a
/// side that stays away (the away deadline shown moved), not by a renewal that changes nothing
/// a viewer sees (even when it re-arms the time to come back of a side that is connected), and
/// all of them at once when an outage is accounted for.
pub async fn status_wakes_on_presence_flips_and_outages(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, _) = create_game(store, 40, &player("ws"), &player("wn")).await;
    let (barrier, _) = create_game(store, 41, &player("bs"), &player("bn")).await;
    let (id, other) = (meta.game_id, barrier.game_id);
    // As the session's pump takes them: `watch` first (it starts listening), then the status.
    // Both games, as the contract asks of a status reader (a sharded store listens per shard,
    // and the two games may be on different shards). On one database the barrier below orders
    // the notifications; across shards it cannot, and the "nobody woken" checks are weaker.
    let _versions = store.watch(id).await.expect("watch");
    let _barrier_versions = store.watch(other).await.expect("watch the barrier game");
    let mut changes = store.status_changes(id);
    let mut barrier_changes = store.status_changes(other);
    let now = whole_second_now();
    let lease = now + Duration::from_secs(30);
    let report = async |game: Uuid, gateway: &str, connected: bool, until: SystemTime| {
        store
            .report_presence(game, Side::South, gateway, connected, now, until, None)
            .await
            .expect("report");
    };
    // A report that re-arms south's time to come back, as the session's reports do.
    let back_by = |_: Option<SystemTime>| Timer {
        game_id: id,
        kind: TimerKind::Reconnect,
        side: Side::South,
        armed_version: 1,
        fire_at: now + Duration::from_secs(60),
    };
    let report_arming = async |gateway: &str, connected: bool, until: SystemTime| {
        store
            .report_presence(
                id,
                Side::South,
                gateway,
                connected,
                now,
                until,
                Some(&back_by),
            )
            .await
            .expect("report");
    };

    report(id, "gw-1", true, lease).await;
    let seen = woken(&mut changes, 0, "south connecting").await;

    // A renewal, and a second gateway's report while south is connected: nothing flips. The
    // other game's flip after them is a barrier: once it is heard, anything they announced
    // has been heard too (one listener hears notifications in commit order).
    report(id, "gw-1", true, lease + Duration::from_secs(10)).await;
    report_arming("gw-1", true, lease + Duration::from_secs(10)).await;
    report(id, "gw-2", true, lease).await;
    report(other, "gw-1", true, lease).await;
    woken(&mut barrier_changes, 0, "the barrier game").await;
    assert_eq!(*changes.borrow(), seen, "a renewal wakes nobody");

    // South's last gateway leaves: away.
    report(id, "gw-1", false, now).await;
    assert_eq!(*changes.borrow(), seen, "gw-2 still holds south connected");
    report(id, "gw-2", false, now).await;
    let seen = woken(&mut changes, seen, "south going away").await;

    // Away already, a report that re-arms south's time to come back moves the deadline shown.
    report_arming("gw-2", false, now).await;
    let seen = woken(&mut changes, seen, "south's time to come back re-armed").await;

    // An outage accounted for wakes every watched game.
    let barrier_seen = *barrier_changes.borrow_and_update();
    store
        .pulse(&at(now), &crate::pulse::RULE)
        .await
        .expect("first pulse");
    let outage = store
        .pulse(&at(now + Duration::from_secs(60)), &crate::pulse::RULE)
        .await
        .expect("pulse after the gap");
    assert!(outage.is_some(), "a 60 s gap is an outage");
    woken(&mut changes, seen, "the outage (watched game)").await;
    woken(
        &mut barrier_changes,
        barrier_seen,
        "the outage (other game)",
    )
    .await;
}
