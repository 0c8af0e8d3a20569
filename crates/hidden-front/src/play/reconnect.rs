//! The one reconnect schedule of the terminal client, and how an outage is told to the player.
//!
//! Every wait of `hidden-front play` before it tries the gateway again (the connection opened
//! again after it broke, a follow asked again after the gateway stopped it, in
//! [`super::connection`]; a request sent again after the connection failed under it) comes from
//! [`backoff`], so no loop can wait longer than the others, and an outage is told once when it
//! starts and once when it ends ([`Outage`]), not at every attempt.

use hidden_front_retry::Backoff;
use std::time::Duration;

/// The first wait after a failure; each later one doubles, up to [`WAIT_CAP`].
pub const FIRST_WAIT: Duration = Duration::from_millis(250);

/// The longest wait before jitter. Jitter adds up to the wait itself (see
/// [`Backoff::jittered`]), so the real longest wait is [`LONGEST_WAIT`], twice this.
pub const WAIT_CAP: Duration = Duration::from_millis(1500);

/// The longest a client ever waits between two attempts, jitter included: how long after a
/// server's recovery its players are back at the latest (plus one connection's set-up).
pub const LONGEST_WAIT: Duration = WAIT_CAP.saturating_mul(2);

/// The waits between attempts to reach the gateway again: 250 ms, doubling up to 1.5 s, each
/// jittered by up to itself (so between 1.5 s and 3 s once at the cap), starting over after a
/// success.
///
/// Why the cap is this low: a restarted server must find its players again within seconds. The
/// server pauses the clocks while it is down, but once it is back it gives a player only a few
/// seconds more than the time they had (every running deadline moves by the outage's length plus
/// 5 s to reconnect, docs/clock.md); a client that had backed off to a long wait during a long
/// outage would spend the player's own clock asleep, and players of the same game would come back
/// far apart. A cap of seconds costs an idle client one attempt every few seconds while the server
/// is down, which is nothing; the jitter still spreads a crowd of clients that lost the same
/// server over those seconds.
pub fn backoff() -> Backoff {
    Backoff::new(FIRST_WAIT, WAIT_CAP).jittered()
}

/// Whether the player has been told that the connection is lost, so that an outage is told
/// once when it starts and once when it ends, however many attempts it takes.
#[derive(Debug, Default)]
pub struct Outage {
    told: bool,
}

impl Outage {
    /// The connection failed: true if this starts an outage the player has not been told of
    /// (then the caller tells it).
    pub fn lost(&mut self) -> bool {
        !std::mem::replace(&mut self.told, true)
    }

    /// The connection works again: true if the player was told it was lost (then the caller
    /// tells that it is back).
    pub fn restored(&mut self) -> bool {
        std::mem::take(&mut self.told)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_wait_is_longer_than_three_seconds_however_long_the_outage() {
        assert!(LONGEST_WAIT <= Duration::from_secs(3), "{LONGEST_WAIT:?}");
        assert_eq!(
            LONGEST_WAIT,
            2 * WAIT_CAP,
            "jitter adds up to the wait itself"
        );
        // Many schedules, each followed far past the cap (a long outage), with a restart between.
        let mut schedule = backoff();
        let mut longest = Duration::ZERO;
        for _ in 0..200 {
            for _ in 0..50 {
                longest = longest.max(schedule.next_delay());
            }
            schedule.reset();
        }
        assert!(
            longest <= LONGEST_WAIT,
            "a wait of {longest:?}, above {LONGEST_WAIT:?}"
        );
        // And the cap is reached: the schedule does back off.
        assert!(longest > WAIT_CAP, "{longest:?}");
    }

    #[test]
    fn the_first_waits_are_short_and_grow() {
        let mut schedule = backoff();
        let first = schedule.next_delay();
        assert!((FIRST_WAIT..=2 * FIRST_WAIT).contains(&first), "{first:?}");
        let second = schedule.next_delay();
        assert!(
            (2 * FIRST_WAIT..=4 * FIRST_WAIT).contains(&second),
            "{second:?}"
        );
        schedule.reset();
        assert!(schedule.next_delay() <= 2 * FIRST_WAIT);
    }

    #[test]
    fn an_outage_is_told_once_and_its_end_once() {
        let mut outage = Outage::default();
        assert!(!outage.restored(), "nothing was lost");
        assert!(outage.lost());
        assert!(
            !outage.lost(),
            "the second failure of the same outage is not told"
        );
        assert!(outage.restored());
        assert!(!outage.restored());
        assert!(outage.lost(), "a new outage is told again");
    }
}
