//! The session's settings and its clock: plain values, so tests build them directly.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Settings of the session service.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// How long a presence report holds when the reporter gives no lease.
    pub default_presence_lease: Duration,
    /// Games kept in the process cache (default 10,000). A miss only costs a store read. Each
    /// cached game takes about 1 KiB ([`crate::CACHED_GAME_BYTES`]; up to 1.5 KiB with the
    /// longest player ids), so the default holds about 10 MiB.
    pub cache_capacity: usize,
    /// The session's clock: the only clock deadlines are judged by.
    pub clock: SessionClock,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            default_presence_lease: Duration::from_secs(30),
            cache_capacity: 10_000,
            clock: SessionClock::system(),
        }
    }
}

/// Where the session reads the time: the system clock in production; tests substitute a clock
/// they move by hand, so deadlines can pass without waiting for them.
#[derive(Clone)]
pub struct SessionClock(Arc<dyn Fn() -> SystemTime + Send + Sync>);

impl SessionClock {
    /// The system's wall clock.
    pub fn system() -> SessionClock {
        SessionClock(Arc::new(SystemTime::now))
    }

    /// A clock reading `now` (for tests).
    pub fn from_fn(now: impl Fn() -> SystemTime + Send + Sync + 'static) -> SessionClock {
        SessionClock(Arc::new(now))
    }

    /// The time now.
    pub fn now(&self) -> SystemTime {
        (self.0)()
    }
}

impl std::fmt::Debug for SessionClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionClock")
    }
}
