//! The one injectable wall clock of the services.
//!
//! The session judges deadlines by it and matchmaking widens rating windows and expires tickets
//! by it. In production it is the system's clock; a test gives the service a [`ManualClock`]'s
//! reading and moves time by hand, so a deadline can pass without the test waiting for it. One
//! type for every service means one way to write such a test.

use parking_lot::Mutex;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where a service reads the time.
#[derive(Clone)]
pub struct WallClock(Arc<dyn Fn() -> SystemTime + Send + Sync>);

impl WallClock {
    /// The system's wall clock.
    pub fn system() -> WallClock {
        WallClock(Arc::new(SystemTime::now))
    }

    /// A clock reading `now` (for tests and simulations).
    pub fn from_fn(now: impl Fn() -> SystemTime + Send + Sync + 'static) -> WallClock {
        WallClock(Arc::new(now))
    }

    /// The time now.
    pub fn now(&self) -> SystemTime {
        (self.0)()
    }

    /// Whole milliseconds since the Unix epoch now (0 before it): the unit of stored times.
    pub fn now_unix_ms(&self) -> u64 {
        unix_ms(self.now())
    }
}

impl Default for WallClock {
    fn default() -> WallClock {
        WallClock::system()
    }
}

impl std::fmt::Debug for WallClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WallClock")
    }
}

/// Whole milliseconds from the Unix epoch to `time` (0 before it): the unit every deadline,
/// view and stored time of the services travels in. The one conversion; [`from_unix_ms`] is its
/// inverse.
pub fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The time `millis` milliseconds after the Unix epoch.
pub fn from_unix_ms(millis: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(millis)
}

/// A time that only moves when told to, and the [`WallClock`] that reads it.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<Mutex<SystemTime>>);

impl ManualClock {
    /// A clock standing at `start`.
    pub fn at(start: SystemTime) -> ManualClock {
        ManualClock(Arc::new(Mutex::new(start)))
    }

    /// The clock a service reads.
    pub fn wall_clock(&self) -> WallClock {
        let time = self.0.clone();
        WallClock::from_fn(move || *time.lock())
    }

    /// The time it stands at.
    pub fn now(&self) -> SystemTime {
        *self.0.lock()
    }

    /// Moves it on by `by`.
    pub fn advance(&self, by: Duration) {
        *self.0.lock() += by;
    }

    /// Sets it to `to` (backwards too: a test of clock skew).
    pub fn set(&self, to: SystemTime) {
        *self.0.lock() = to;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_its_readers_see_it() {
        let start = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let manual = ManualClock::at(start);
        let clock = manual.wall_clock();
        assert_eq!(clock.now(), start);
        manual.advance(Duration::from_millis(1_500));
        assert_eq!(clock.now(), start + Duration::from_millis(1_500));
        assert_eq!(clock.now_unix_ms(), 1_800_000_001_500);
        manual.set(start);
        assert_eq!(clock.clone().now(), start);
    }

    #[test]
    fn unix_ms_is_zero_before_the_epoch() {
        assert_eq!(unix_ms(UNIX_EPOCH - Duration::from_secs(1)), 0);
        assert_eq!(unix_ms(UNIX_EPOCH + Duration::from_millis(7)), 7);
    }

    #[test]
    fn whole_milliseconds_survive_the_round_trip_and_the_rest_is_cut() {
        let at = UNIX_EPOCH + Duration::from_millis(1_800_000_000_123);
        assert_eq!(from_unix_ms(unix_ms(at)), at);
        let between = at + Duration::from_micros(999);
        assert_eq!(from_unix_ms(unix_ms(between)), at);
    }

    #[test]
    fn the_system_clock_reads_the_system_time() {
        let before = SystemTime::now();
        let read = WallClock::system().now();
        assert!(read >= before);
    }
}
