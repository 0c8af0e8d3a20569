//! The clocks as text: the running deadline counted down, the timeouts each side has used, and
//! whether the opponent is connected (and how long it may stay away).
//!
//! Everything comes from the `GameView` (`turn_deadline_unix_millis`, the away deadlines, the
//! `*_connected` flags); the client only subtracts the time now. The server's clock decides what
//! happens at zero, so these lines are a countdown to look at, never a judgement. Pure functions of
//! a view and a time, so they can be checked without waiting.

use super::board::side_name;
use hidden_front_proto::v1 as pb;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::SystemTime;

/// What to add to this machine's clock to read the server's (milliseconds), once measured.
static SERVER_OFFSET_MS: AtomicI64 = AtomicI64::new(0);

/// This machine's time in milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_unix_millis() -> u64 {
    hidden_front_time::unix_ms(SystemTime::now())
}

/// Records the measured offset of the server's clock, so every countdown after it is read on the
/// server's time (the deadlines in a view are the server's).
pub fn set_server_offset(offset_ms: i64) {
    SERVER_OFFSET_MS.store(offset_ms, Ordering::Relaxed);
}

/// The server's time now, as well as this client knows it: this machine's clock plus the
/// measured offset (none measured: this machine's clock).
pub fn server_now_unix_millis() -> u64 {
    now_unix_millis().saturating_add_signed(SERVER_OFFSET_MS.load(Ordering::Relaxed))
}

/// Whole seconds left until `deadline_ms`, rounded up (so "1 s" means "less than a second or
/// so", and 0 only once it has passed).
pub fn seconds_left(deadline_ms: u64, now_ms: u64) -> u64 {
    deadline_ms.saturating_sub(now_ms).div_ceil(1000)
}

/// Timeouts that lose the game under the view's rule set (3 unless the rule set says otherwise).
fn timeouts_to_forfeit(rules: &str) -> u8 {
    hidden_front_rules::Rules::parse(rules).map_or(3, |r| r.timeouts_to_forfeit)
}

/// The clock lines for the view at `now_ms`: the countdown (deployment or move), the timeouts
/// used per side (once play has started) and the presence of the other seat(s). Empty for a
/// game that has not started or has ended, where no clock runs.
pub fn clock_lines(view: &pb::GameView, now_ms: u64) -> Vec<String> {
    let me = super::board::own_side(view);
    let who = |side: pb::Side| -> String {
        if me == Some(side) {
            format!("{} (you)", side_name(side))
        } else {
            side_name(side).to_string()
        }
    };
    let deadline = view.turn_deadline_unix_millis;
    let mut lines = Vec::new();
    match view.phase() {
        pb::Phase::Deployment => {
            lines.push(if deadline == 0 {
                "clock: deployment, no deadline".to_string()
            } else {
                format!(
                    "clock: deployment closes in {} s (at 0 the drafts are confirmed as they stand; a game with an absent player is cancelled)",
                    seconds_left(deadline, now_ms)
                )
            });
        }
        pb::Phase::Play => {
            lines.push(if deadline == 0 {
                format!("clock: {} to move, no move clock", who(view.to_move()))
            } else {
                let left = seconds_left(deadline, now_ms);
                let note = if left == 0 {
                    "time is up: the server is recording the timeout"
                } else {
                    "at 0 it is a timeout and the turn passes"
                };
                format!(
                    "clock: {} to move, {left} s left ({note})",
                    who(view.to_move())
                )
            });
            let limit = timeouts_to_forfeit(&view.rules);
            lines.push(format!(
                "timeouts used: south {} of {limit}, north {} of {limit} ({limit} lose the game)",
                view.south_timeouts, view.north_timeouts
            ));
        }
        pb::Phase::Ended | pb::Phase::Unspecified => return lines,
    }
    let away = |side: pb::Side| -> Option<String> {
        let (connected, until) = match side {
            pb::Side::North => (view.north_connected, view.north_away_deadline_unix_millis),
            _ => (view.south_connected, view.south_away_deadline_unix_millis),
        };
        if connected {
            return None;
        }
        Some(if until == 0 {
            "away".to_string()
        } else {
            format!(
                "away: {} s (then {} loses for being away)",
                seconds_left(until, now_ms),
                side_name(side)
            )
        })
    };
    match me {
        Some(side) => {
            let opponent = match side {
                pb::Side::South => pb::Side::North,
                _ => pb::Side::South,
            };
            lines.push(match away(opponent) {
                None => "opponent connected".to_string(),
                Some(text) => format!("opponent {text}"),
            });
        }
        None => {
            let seat = |side: pb::Side| match away(side) {
                None => format!("{} connected", side_name(side)),
                Some(text) => format!("{} {text}", side_name(side)),
            };
            lines.push(format!(
                "presence: {}, {}",
                seat(pb::Side::South),
                seat(pb::Side::North)
            ));
        }
    }
    lines
}
