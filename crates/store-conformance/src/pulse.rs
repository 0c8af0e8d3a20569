//! The service's pulse: an outage found once, the deadlines that were running moved by the
//! shared rule, nothing moved for a gap within the threshold.

use crate::RACE_DEADLINE;
use crate::helpers::*;
use hidden_front_rules::Side;
use hidden_front_store::continuity::moved_deadline;
use hidden_front_store::{GameStore, Outage, OutageRule, Timer, TimerKind};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::Barrier;
use tokio::task::JoinSet;
use uuid::Uuid;

pub(crate) const RULE: OutageRule = OutageRule {
    outage_after: Duration::from_secs(3),
    reconnect_allowance: Duration::from_secs(5),
};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn timer(game_id: Uuid, kind: TimerKind, side: Side, fire_at: SystemTime) -> Timer {
    Timer {
        game_id,
        kind,
        side,
        armed_version: 3,
        fire_at,
    }
}

/// A pulse that finds the previous one older than the threshold moves every deadline that was
/// still running then, exactly as [`moved_deadline`] says (a side connected when the outage
/// began gets the whole reconnect time after it; a deadline already due stays), drops claims on
/// them, and reports the outage; the next pulse, of this process or another, finds none.
pub async fn pulse_accounts_for_an_outage_once(store: Arc<dyn GameStore>) {
    let store = &*store;
    let t0 = whole_second_now();
    let (meta, _) = create_game(store, 70, &player("ps"), &player("pn")).await;
    let (late, _) = create_game(store, 71, &player("ls"), &player("ln")).await;
    let id = meta.game_id;
    // South is connected (a lease past the outage's start), north away.
    store
        .report_presence(id, Side::South, "gw", true, t0, t0 + secs(30), None)
        .await
        .expect("report south");
    let running = [
        timer(id, TimerKind::Move, Side::North, t0 + secs(13)),
        timer(id, TimerKind::Reconnect, Side::South, t0 + secs(55)),
        timer(id, TimerKind::Reconnect, Side::North, t0 + secs(21)),
    ];
    // Fell due while the service still served: the player's time had run out.
    let overdue = timer(late.game_id, TimerKind::Move, Side::South, t0);
    for t in running.iter().chain([&overdue]) {
        store.arm_timer(t).await.expect("arm");
    }
    // A clock claims the move timer before the outage.
    let claimed = store
        .claim_due("clock-a", t0 + secs(3600), secs(3600), 100)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 4, "every timer is claimed");

    assert_eq!(
        store.pulse(&at(t0), &RULE).await.expect("pulse"),
        None,
        "the first pulse finds no outage"
    );
    assert_eq!(
        store.pulse(&at(t0 + secs(1)), &RULE).await.expect("pulse"),
        None,
        "a pulse a second later is no outage"
    );
    // Nothing served from t0 + 1 s to t0 + 46 s.
    let back = t0 + secs(46);
    let outage = store
        .pulse(&at(back), &RULE)
        .await
        .expect("pulse after the outage");
    assert_eq!(
        outage,
        Some(Outage {
            from: t0 + secs(1),
            to: back,
            deadlines_moved: 3,
        }),
        "the outage is found, with the running deadlines it moved"
    );
    let gap = secs(45);
    let expect = |t: &Timer, connected: bool| {
        let fire_at = moved_deadline(
            t,
            &meta.time_control,
            t0 + secs(1),
            back,
            gap,
            &RULE,
            connected,
        )
        .expect("a running deadline moves");
        Timer { fire_at, ..*t }
    };
    let mut want = vec![
        expect(&running[0], false),
        expect(&running[1], true),
        expect(&running[2], false),
    ];
    want.sort_by_key(|t| t.fire_at);
    assert_eq!(
        store.timers_of(id).await.unwrap(),
        want,
        "moved by the rule"
    );
    // The rule's figures, spelled out: 12 s left + 5 s; the connected side 60 s after the
    // return; the side already away its 20 s left + 5 s.
    assert_eq!(
        want.iter().map(|t| t.fire_at).collect::<Vec<_>>(),
        vec![back + secs(17), back + secs(25), back + secs(60),]
    );
    assert_eq!(
        store.timers_of(late.game_id).await.unwrap(),
        vec![overdue],
        "a deadline that fell due before the outage stays"
    );
    // The moved timers are claimable again at once (their claims were dropped); the overdue one
    // is still held by the clock that claimed it.
    let mut reclaimed = store
        .claim_due("clock-b", back + secs(3600), secs(5), 100)
        .await
        .expect("claim after the outage");
    reclaimed.sort_by_key(|t| t.fire_at);
    assert_eq!(reclaimed, want, "claims on moved deadlines are dropped");

    assert_eq!(
        store.pulse(&at(back), &RULE).await.expect("pulse"),
        None,
        "another process's pulse right after finds no second outage"
    );
    assert_eq!(
        store
            .pulse(&at(back - secs(2)), &RULE)
            .await
            .expect("pulse"),
        None,
        "a pulse from a clock a little behind is no outage"
    );
    assert_eq!(
        store
            .pulse(&at(back + secs(3)), &RULE)
            .await
            .expect("pulse"),
        None,
        "and does not move the recorded pulse back"
    );
    assert_eq!(store.timers_of(id).await.unwrap(), want, "moved once");
}

/// Pulses no further apart than the threshold move nothing (a slow pulse is not an outage).
pub async fn pulse_within_the_threshold_moves_nothing(store: Arc<dyn GameStore>) {
    let store = &*store;
    let t0 = whole_second_now();
    let (meta, _) = create_game(store, 72, &player("qs"), &player("qn")).await;
    let armed = timer(meta.game_id, TimerKind::Move, Side::South, t0 + secs(20));
    store.arm_timer(&armed).await.expect("arm");
    for step in 0..4 {
        assert_eq!(
            store
                .pulse(&at(t0 + RULE.outage_after * step), &RULE)
                .await
                .expect("pulse"),
            None
        );
    }
    assert_eq!(store.timers_of(meta.game_id).await.unwrap(), vec![armed]);
}

/// Many processes coming back at once after an outage: exactly one of their pulses accounts for
/// it, and the deadlines move once.
pub async fn concurrent_pulses_account_for_an_outage_once(store: Arc<dyn GameStore>) {
    let t0 = whole_second_now();
    let (meta, _) = create_game(&*store, 73, &player("rs"), &player("rn")).await;
    let armed = timer(meta.game_id, TimerKind::Move, Side::North, t0 + secs(10));
    store.arm_timer(&armed).await.expect("arm");
    store.pulse(&at(t0), &RULE).await.expect("pulse");
    let back = t0 + secs(60);
    let barrier = Arc::new(Barrier::new(8));
    let mut racers = JoinSet::new();
    for i in 0..8u64 {
        let store = store.clone();
        let barrier = barrier.clone();
        racers.spawn(async move {
            barrier.wait().await;
            store
                .pulse(&at(back + Duration::from_millis(i)), &RULE)
                .await
                .expect("pulse")
        });
    }
    let found: Vec<Outage> = within(RACE_DEADLINE, "the racing pulses", racers.join_all())
        .await
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one pulse accounts for the outage: {found:?}"
    );
    assert_eq!(found[0].from, t0);
    let moved = store.timers_of(meta.game_id).await.unwrap();
    assert_eq!(
        moved,
        vec![Timer {
            fire_at: armed.fire_at
                + (found[0].to.duration_since(t0).unwrap())
                + RULE.reconnect_allowance,
            ..armed
        }],
        "moved once, by the outage that was found"
    );
}
