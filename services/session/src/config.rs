//! The session's settings: plain values, so tests build them directly.

use crate::pulse::PulseConfig;
use hidden_front_time::WallClock;
use std::time::Duration;

/// Settings of the session service.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// How long a presence report holds when the reporter gives no lease.
    pub default_presence_lease: Duration,
    /// Games kept in the process cache (default 10,000). A miss only costs a store read. Each
    /// cached game takes about 1 KiB ([`crate::CACHED_GAME_BYTES`]; up to 1.5 KiB with the
    /// longest player ids), so the default holds about 10 MiB.
    pub cache_capacity: usize,
    /// The session's clock: the only clock deadlines are judged by (tests move it by hand).
    pub clock: WallClock,
    /// The pulse by which the service accounts for its own outages (`pulse.rs`), or `None` (the
    /// default) for none. It goes with [`SessionService::run_pulse`](crate::SessionService::run_pulse):
    /// without that loop a quiet spell longer than the outage threshold would look like an
    /// outage, so only a composition that runs the loop turns it on (the application does).
    pub pulse: Option<PulseConfig>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            default_presence_lease: Duration::from_secs(30),
            cache_capacity: 10_000,
            clock: WallClock::system(),
            pulse: None,
        }
    }
}
