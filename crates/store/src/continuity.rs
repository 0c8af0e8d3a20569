//! Time the service could not serve does not count against players.
//!
//! A deadline (the deployment deadline, a move clock, a time to come back) measures a player's
//! time. While no process can serve a game (every session process down, or the database
//! unreachable) nobody can move, confirm or reconnect, so that time is not the players' to lose.
//! The service finds such a time by its **pulse**: every session process writes the time to the
//! store about once a second ([`crate::GameStore::pulse`]), and only while it reaches the store.
//! The pulses of all processes go to one place and are ordered by it, so a pulse that finds the
//! previous one (of any process) older than [`OutageRule::outage_after`] has found a time in which
//! nothing served: an outage, from that previous pulse to now. In the same transaction it moves
//! the deadlines that were running then ([`moved_deadline`]) and records the outage, so one
//! outage is accounted for exactly once, whichever process comes back first. A replica that dies
//! while another keeps pulsing causes no outage: the game could still be served.
//!
//! The session lets nothing touch a game before its own pulse is fresh (a command, a fire, a
//! presence report, a view), so no deadline is judged, and none armed, before the outage that
//! preceded it was accounted for (`services/session/src/pulse.rs`).

use crate::TimeControl;
use crate::timers::{Timer, TimerKind};
use hidden_front_time::{from_unix_ms, unix_ms};
use std::time::{Duration, SystemTime};

/// How the store tells an outage from a slow pulse, and what it gives back for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutageRule {
    /// A gap between two pulses longer than this is an outage. Shorter gaps are not accounted
    /// for: this is the most a player can lose to an outage (the worst case `docs/clock.md`
    /// states).
    pub outage_after: Duration,
    /// Added to every moved deadline on top of the outage's length: a player needs a moment to
    /// reconnect once the service is back before they can use the time they had.
    pub reconnect_allowance: Duration,
}

impl Default for OutageRule {
    fn default() -> OutageRule {
        OutageRule {
            outage_after: Duration::from_secs(3),
            reconnect_allowance: Duration::from_secs(5),
        }
    }
}

/// An outage a pulse found and accounted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outage {
    /// The last pulse before it (of any process).
    pub from: SystemTime,
    /// The pulse that found it: when the service served again.
    pub to: SystemTime,
    /// How many deadlines it moved.
    pub deadlines_moved: u64,
}

impl Outage {
    /// How long nothing served.
    pub fn length(&self) -> Duration {
        self.to.duration_since(self.from).unwrap_or_default()
    }
}

/// The gap between the last pulse `last` and `now`, when it is an outage under `rule`, in whole
/// milliseconds (the unit of deadlines). `None` for the first pulse ever, or a gap no longer than
/// `rule.outage_after` (or negative: another process's clock a little ahead).
pub fn outage_gap(
    last: Option<SystemTime>,
    now: SystemTime,
    rule: &OutageRule,
) -> Option<Duration> {
    let last = last?;
    let gap = Duration::from_millis(unix_ms(now).checked_sub(unix_ms(last))?);
    (gap > rule.outage_after).then_some(gap)
}

/// Where an outage from `last_pulse` to `now` (`gap` long) moves `timer`, a deadline of a game
/// under `tc`; `None` when it stays (it fell due before the outage began: the player's time had
/// run out while the service served). `connected_at_outage` says whether the timer's side counted
/// as connected at `last_pulse` (it matters for a time to come back).
///
/// The rule (`docs/clock.md`), never worse for a player than the time they had:
/// - every deadline still running at the last pulse moves by the outage's length plus
///   [`OutageRule::reconnect_allowance`];
/// - a time to come back of a side that was connected when the outage began is, besides, never
///   due before the whole reconnect time has passed since the service is back: the outage cut
///   the player off, they did not leave;
/// - the deployment deadline is likewise never due before `min(reconnect, deployment)` seconds
///   after the service is back, since it judges who is present.
///
/// Both stores move deadlines with this (Postgres in SQL of the same shape, checked against it
/// by the conformance suite).
pub fn moved_deadline(
    timer: &Timer,
    tc: &TimeControl,
    last_pulse: SystemTime,
    now: SystemTime,
    gap: Duration,
    rule: &OutageRule,
    connected_at_outage: bool,
) -> Option<SystemTime> {
    if timer.fire_at <= last_pulse {
        return None;
    }
    let now = from_unix_ms(unix_ms(now));
    let shifted = timer.fire_at + gap + rule.reconnect_allowance;
    let floor = match timer.kind {
        TimerKind::Deployment => Some(seconds(tc.reconnect_seconds.min(tc.deployment_seconds))),
        TimerKind::Reconnect if connected_at_outage => Some(seconds(tc.reconnect_seconds)),
        _ => None,
    };
    Some(floor.map_or(shifted, |floor| shifted.max(now + floor)))
}

fn seconds(value: u32) -> Duration {
    Duration::from_secs(u64::from(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hidden_front_rules::Side;
    use std::time::UNIX_EPOCH;
    use uuid::Uuid;

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    fn timer(kind: TimerKind, fire_at_ms: u64) -> Timer {
        Timer {
            game_id: Uuid::nil(),
            kind,
            side: Side::North,
            armed_version: 7,
            fire_at: at(fire_at_ms),
        }
    }

    const RULE: OutageRule = OutageRule {
        outage_after: Duration::from_secs(3),
        reconnect_allowance: Duration::from_secs(5),
    };

    /// Where an outage from 100 s to 145 s moves a timer of `kind` due at `fire_at_ms`, in a
    /// game under the online rules.
    fn after_outage(kind: TimerKind, fire_at_ms: u64, connected: bool) -> Option<SystemTime> {
        moved_deadline(
            &timer(kind, fire_at_ms),
            &TimeControl::online(),
            at(100_000),
            at(145_000),
            Duration::from_secs(45),
            &RULE,
            connected,
        )
    }

    #[test]
    fn only_a_gap_longer_than_the_threshold_is_an_outage() {
        assert_eq!(outage_gap(None, at(100_000), &RULE), None);
        assert_eq!(outage_gap(Some(at(100_000)), at(103_000), &RULE), None);
        assert_eq!(outage_gap(Some(at(100_000)), at(99_000), &RULE), None);
        assert_eq!(
            outage_gap(Some(at(100_000)), at(103_001), &RULE),
            Some(Duration::from_millis(3_001))
        );
    }

    #[test]
    fn a_running_move_clock_moves_by_the_outage_and_the_allowance() {
        // 12 s left at the last pulse, 45 s of outage: 12 + 5 s left after it.
        let moved = after_outage(TimerKind::Move, 112_000, true);
        assert_eq!(moved, Some(at(162_000)));
    }

    #[test]
    fn a_deadline_that_fell_due_before_the_outage_stays() {
        let stays = after_outage(TimerKind::Move, 100_000, true);
        assert_eq!(stays, None);
    }

    #[test]
    fn a_side_cut_off_by_the_outage_gets_the_whole_reconnect_time_after_it() {
        // Last renewed 8 s before the outage: 52 s of its 60 were left; it gets 60 after.
        let connected = after_outage(TimerKind::Reconnect, 152_000, true);
        assert_eq!(connected, Some(at(205_000)));
        // Already away when it began: only moved, as a move clock.
        let away = after_outage(TimerKind::Reconnect, 110_000, false);
        assert_eq!(away, Some(at(160_000)));
    }

    #[test]
    fn the_deployment_deadline_leaves_time_to_come_back() {
        let moved = after_outage(TimerKind::Deployment, 101_000, false);
        // min(60, 90) s after the service is back, more than the 1 + 5 s moved.
        assert_eq!(moved, Some(at(205_000)));
    }
}
