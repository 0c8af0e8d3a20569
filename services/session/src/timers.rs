//! Which deadlines a game needs after a command: the online rules on time, as data for the store.
//!
//! The session decides the timers and the store writes them in the command's own transaction, so
//! no command is acknowledged before the deadline it starts is durable. The clock service fires
//! them back through `ApplyTimer`, where [`check_fire`] decides whether a fire is the live timer
//! or a stale copy.

use hidden_front_rules::{Event, Game, Phase, Side};
use hidden_front_store::timers::deadline_after;
use hidden_front_store::{TimeControl, Timer, TimerChange, TimerKind, TurnTimerChange};
use hidden_front_time::{from_unix_ms, unix_ms};
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// How early (by the session's clock) a fire is still accepted: clocks of different machines
/// disagree by a few milliseconds; a fire earlier than this is refused and retried by the clock.
pub(crate) const EARLY_FIRE_TOLERANCE: Duration = Duration::from_millis(250);

fn seconds(value: u32) -> Duration {
    Duration::from_secs(u64::from(value))
}

/// The deployment deadline of a game created now at `version`.
pub(crate) fn deployment_timer(
    game_id: Uuid,
    tc: &TimeControl,
    version: u64,
    now: SystemTime,
) -> Timer {
    Timer {
        game_id,
        kind: TimerKind::Deployment,
        side: Side::South,
        armed_version: version,
        fire_at: deadline_after(now, seconds(tc.deployment_seconds)),
    }
}

/// A side's time to come back, counted from `from`.
pub(crate) fn reconnect_timer(
    game_id: Uuid,
    tc: &TimeControl,
    side: Side,
    version: u64,
    from: SystemTime,
) -> Timer {
    Timer {
        game_id,
        kind: TimerKind::Reconnect,
        side,
        armed_version: version,
        fire_at: deadline_after(from, seconds(tc.reconnect_seconds)),
    }
}

/// A side's time to come back after a presence report heard at `reported_at`, the side counting
/// as connected until `connected_until` after it (see [`hidden_front_store::Presence`]).
///
/// The away time counts from the report: the last moment the player was known to be there (a
/// renewal) or the moment they left (a disconnection). Every report re-arms the slot, so the
/// timer comes due only when no report follows it for the whole reconnect time: a gateway that
/// dies without a word costs its players the reconnect time after its last renewal, not a lease
/// more. While a connected lease holds, though, the player is not believed gone, so the timer is
/// never due before the latest such lease has ended (this matters only when the reconnect time is
/// shorter than the lease); its fire then finds the player away.
pub(crate) fn reconnect_after_report(
    game_id: Uuid,
    tc: &TimeControl,
    side: Side,
    version: u64,
    reported_at: SystemTime,
    connected_until: Option<SystemTime>,
) -> Timer {
    let mut timer = reconnect_timer(game_id, tc, side, version, reported_at);
    if let Some(until) = connected_until {
        timer.fire_at = timer.fire_at.max(whole_millis_not_before(until));
    }
    timer
}

/// The first whole millisecond at or after `time` (deadlines are whole milliseconds: rounding a
/// lease's end up keeps the lease lapsed at the deadline).
fn whole_millis_not_before(time: SystemTime) -> SystemTime {
    let floor = from_unix_ms(unix_ms(time));
    if floor < time {
        floor + Duration::from_millis(1)
    } else {
        floor
    }
}

/// The timer changes of an append that took the game to `after` (at `new_version`) with
/// `events`. `absent` says which sides are not connected now; it matters only when play starts
/// (an absent side's time to come back starts with play).
///
/// - The game ended: every timer goes.
/// - A turn started (play began, a move, a timeout): the side to move gets a fresh move clock.
/// - Anything else during play (a draw offer or answer): the running move clock is kept and only
///   re-fenced to the new version, so acting off-turn never extends anybody's time.
/// - During deployment the deadline set at creation stands.
pub(crate) fn plan(
    game_id: Uuid,
    tc: &TimeControl,
    after: &Game,
    events: &[Event],
    new_version: u64,
    now: SystemTime,
    absent: [bool; 2],
) -> TimerChange {
    let mut change = TimerChange::none();
    if events.is_empty() {
        return change;
    }
    match after.phase() {
        Phase::Ended => change.clear_all = true,
        Phase::Deployment => {}
        Phase::Play => {
            change.turn = Some(if events.iter().any(starts_a_turn) {
                TurnTimerChange::Arm(Timer {
                    game_id,
                    kind: TimerKind::Move,
                    side: after.to_move(),
                    armed_version: new_version,
                    fire_at: deadline_after(now, seconds(tc.move_seconds)),
                })
            } else {
                TurnTimerChange::Retag {
                    armed_version: new_version,
                }
            });
            if events
                .iter()
                .any(|e| matches!(e, Event::PlayStarted { .. }))
            {
                change.reconnect = Side::BOTH
                    .into_iter()
                    .filter(|side| absent[side.index()])
                    .map(|side| reconnect_timer(game_id, tc, side, new_version, now))
                    .collect();
            }
        }
    }
    change
}

/// Whether `event` starts a turn, so that its append arms a fresh move clock for the side to
/// move ([`plan`]): play's start, a move, a timeout. A `WatchGame` pump that follows the status
/// knows by it that the move clock changed (`status.rs`).
pub(crate) fn starts_a_turn(event: &Event) -> bool {
    matches!(
        event,
        Event::PlayStarted { .. } | Event::Moved { .. } | Event::TimedOut { .. }
    )
}

/// Whether a plan needs to know who is connected (only when play starts).
pub(crate) fn needs_presence(events: &[Event]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, Event::PlayStarted { .. }))
}

/// What to do with a timer's fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FireCheck {
    /// It is the live timer and due: apply it.
    Apply,
    /// The slot no longer holds this timer (the game moved on, it was re-armed, or it was
    /// already applied): nothing to do.
    Stale,
    /// It is the live timer but not due yet by this clock: the clock should try again then.
    NotDue(SystemTime),
}

/// Compares a fire (the timer the clock holds) with the slot's stored timer.
pub(crate) fn check_fire(fired: &Timer, stored: Option<&Timer>, now: SystemTime) -> FireCheck {
    match stored {
        Some(stored) if stored == fired => {
            if fired.fire_at > now + EARLY_FIRE_TOLERANCE {
                FireCheck::NotDue(fired.fire_at)
            } else {
                FireCheck::Apply
            }
        }
        _ => FireCheck::Stale,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hidden_front_rules::{Command, GameRng, Rules};

    fn started_game() -> (Game, Vec<Event>) {
        let mut rng = GameRng::from_seed(7);
        let (mut game, mut events) = Game::create(Rules::default(), Side::South, &mut rng);
        for side in Side::BOTH {
            events.extend(game.handle(&Command::Confirm { side }, &mut rng).unwrap());
        }
        (game, events)
    }

    #[test]
    fn a_started_game_arms_the_move_clock_and_the_absent_sides_return_clocks() {
        let (game, events) = started_game();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let tc = TimeControl::online();
        let id = Uuid::nil();
        let change = plan(id, &tc, &game, &events[5..], 9, now, [false, true]);
        let Some(TurnTimerChange::Arm(timer)) = change.turn else {
            panic!("expected a move clock, got {change:?}");
        };
        assert_eq!(timer.kind, TimerKind::Move);
        assert_eq!(timer.side, game.to_move());
        assert_eq!(timer.armed_version, 9);
        assert_eq!(timer.fire_at, now + Duration::from_secs(30));
        assert_eq!(change.reconnect.len(), 1);
        assert_eq!(change.reconnect[0].side, Side::North);
        assert_eq!(change.reconnect[0].fire_at, now + Duration::from_secs(60));
        assert!(!change.clear_all);
    }

    #[test]
    fn the_away_time_counts_from_the_report_but_never_ends_inside_a_connected_lease() {
        let reported_at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let online = TimeControl::online();
        let arm = |tc: &TimeControl, connected_until| {
            reconnect_after_report(
                Uuid::nil(),
                tc,
                Side::South,
                4,
                reported_at,
                connected_until,
            )
        };
        // Away (a disconnection): 60 s from the report.
        let away = arm(&online, None);
        assert_eq!(away.fire_at, reported_at + Duration::from_secs(60));
        assert_eq!(
            (away.kind, away.side, away.armed_version),
            (TimerKind::Reconnect, Side::South, 4)
        );
        // Connected with a 30 s lease: still 60 s from the report (the last renewal heard), not
        // from the lease's end.
        let lease_end = reported_at + Duration::from_secs(30);
        assert_eq!(
            arm(&online, Some(lease_end)).fire_at,
            reported_at + Duration::from_secs(60)
        );
        // A reconnect time shorter than the lease: due only once the lease has lapsed (rounded
        // up to a whole millisecond).
        let short = TimeControl {
            reconnect_seconds: 5,
            ..TimeControl::online()
        };
        assert_eq!(arm(&short, Some(lease_end)).fire_at, lease_end);
        let ragged_end = lease_end + Duration::from_micros(1_500);
        assert_eq!(
            arm(&short, Some(ragged_end)).fire_at,
            lease_end + Duration::from_millis(2)
        );
    }

    #[test]
    fn a_draw_offer_keeps_the_deadline_and_moves_the_fence() {
        let (mut game, _) = started_game();
        let mut rng = GameRng::from_seed(1);
        let offerer = game.to_move().other();
        let events = game
            .handle(&Command::OfferDraw { side: offerer }, &mut rng)
            .unwrap();
        let change = plan(
            Uuid::nil(),
            &TimeControl::online(),
            &game,
            &events,
            12,
            SystemTime::now(),
            [false; 2],
        );
        assert_eq!(
            change.turn,
            Some(TurnTimerChange::Retag { armed_version: 12 })
        );
        assert!(change.reconnect.is_empty());
    }

    #[test]
    fn an_ended_game_clears_every_timer_and_nothing_changes_without_events() {
        let (mut game, _) = started_game();
        let mut rng = GameRng::from_seed(1);
        let side = game.to_move();
        let events = game.handle(&Command::Resign { side }, &mut rng).unwrap();
        let tc = TimeControl::online();
        let change = plan(
            Uuid::nil(),
            &tc,
            &game,
            &events,
            20,
            SystemTime::now(),
            [false; 2],
        );
        assert!(change.clear_all);
        assert!(change.turn.is_none());
        assert!(
            plan(
                Uuid::nil(),
                &tc,
                &game,
                &[],
                20,
                SystemTime::now(),
                [true; 2]
            )
            .is_empty()
        );
    }

    #[test]
    fn a_fire_applies_only_when_it_is_the_stored_timer_and_due() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(5_000);
        let timer = Timer {
            game_id: Uuid::nil(),
            kind: TimerKind::Move,
            side: Side::North,
            armed_version: 7,
            fire_at: now,
        };
        assert_eq!(check_fire(&timer, Some(&timer), now), FireCheck::Apply);
        assert_eq!(check_fire(&timer, None, now), FireCheck::Stale);
        let rearmed = Timer {
            armed_version: 8,
            ..timer
        };
        assert_eq!(check_fire(&timer, Some(&rearmed), now), FireCheck::Stale);
        let early = now - Duration::from_secs(1);
        assert_eq!(
            check_fire(&timer, Some(&timer), early),
            FireCheck::NotDue(now)
        );
        let slightly_early = now - Duration::from_millis(100);
        assert_eq!(
            check_fire(&timer, Some(&timer), slightly_early),
            FireCheck::Apply
        );
    }
}
