//! Limits that keep one client from hurting the others: a per-player action rate (GCRA, through
//! `governor`'s keyed limiter, [`KeyedLimiter`], which the guest sign-ins use too) and a cap on
//! open streams per gateway process.

use governor::Quota;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use hidden_front_api_error::{ApiError, Reason};
use std::hash::Hash;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::Status;

/// Fewest checks between two sweeps of idle keys.
const MIN_SWEEP_INTERVAL: usize = 1024;

/// A keyed GCRA limiter (`governor`) whose memory stays bounded: the one limiter of the gateway,
/// under both the per-player action rate ([`RateLimiter`]) and the guest sign-ins per client
/// address (`http/guest.rs`).
///
/// A key whose bucket has refilled (it has not been used for about `burst / rate`) is
/// indistinguishable from a new one and is dropped by a sweep (`retain_recent` +
/// `shrink_to_fit`). A sweep runs once every `max(1024, keys left by the previous sweep)` checks,
/// so each check pays O(1) amortized for it, and the map holds at most the keys used in the last
/// `burst / rate` plus those added since the last sweep: fewer than twice the active keys, plus
/// 1024. A sweep never forgets a key that is still limited (its bucket is not full), so it cannot
/// lift a refusal.
pub(crate) struct KeyedLimiter<K: Hash + Eq + Clone, C: Clock = DefaultClock> {
    limiter: governor::RateLimiter<K, DefaultKeyedStateStore<K>, C, NoOpMiddleware<C::Instant>>,
    clock: C,
    /// Checks since the last sweep.
    checks: AtomicUsize,
    /// Checks after which the next sweep runs.
    sweep_after: AtomicUsize,
}

impl<K: Hash + Eq + Clone, C: Clock + Clone> KeyedLimiter<K, C> {
    /// A limiter of `quota` per key, reading time from `clock` (tests move a fake one by hand).
    pub(crate) fn new(quota: Quota, clock: C) -> KeyedLimiter<K, C> {
        KeyedLimiter {
            limiter: governor::RateLimiter::new(
                quota,
                DefaultKeyedStateStore::default(),
                clock.clone(),
            ),
            clock,
            checks: AtomicUsize::new(0),
            sweep_after: AtomicUsize::new(MIN_SWEEP_INTERVAL),
        }
    }

    /// Takes one unit of `key`'s allowance, or says how long until the next one.
    pub(crate) fn check(&self, key: &K) -> Result<(), Duration> {
        let result = self
            .limiter
            .check_key(key)
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()));
        self.maybe_sweep();
        result
    }

    /// Drops idle keys once enough checks have passed since the last sweep. Two threads may
    /// both reach the threshold; only the one that resets the count sweeps.
    fn maybe_sweep(&self) {
        let checks = self.checks.fetch_add(1, Ordering::Relaxed) + 1;
        if checks < self.sweep_after.load(Ordering::Relaxed)
            || self
                .checks
                .compare_exchange(checks, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
        let left = self.limiter.len();
        self.sweep_after
            .store(left.max(MIN_SWEEP_INTERVAL), Ordering::Relaxed);
    }

    /// Keys held now.
    #[cfg(test)]
    pub(crate) fn keys(&self) -> usize {
        self.limiter.len()
    }
}

/// The per-player action rate: `burst` actions at once, refilled continuously at `per_second`
/// (GCRA, the same schedule as a token bucket of `burst` tokens refilled at `per_second`), on a
/// [`KeyedLimiter`] keyed by player.
pub(crate) struct RateLimiter<C: Clock = DefaultClock> {
    limiter: KeyedLimiter<String, C>,
    per_second: NonZeroU32,
}

impl RateLimiter {
    /// A limiter allowing `burst` actions at once and `per_second` sustained (each at least 1).
    pub(crate) fn new(burst: u32, per_second: u32) -> RateLimiter {
        RateLimiter::with_clock(burst, per_second, DefaultClock::default())
    }
}

impl<C: Clock + Clone> RateLimiter<C> {
    /// The same limiter reading time from `clock` (tests move a fake clock by hand).
    pub(crate) fn with_clock(burst: u32, per_second: u32, clock: C) -> RateLimiter<C> {
        let per_second = NonZeroU32::new(per_second).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::per_second(per_second).allow_burst(burst);
        RateLimiter {
            limiter: KeyedLimiter::new(quota, clock),
            per_second,
        }
    }

    /// Takes one action of `player`'s allowance, or refuses with `RESOURCE_EXHAUSTED`
    /// (`RATE_LIMITED`).
    pub(crate) fn check(&self, player: &str) -> Result<(), Status> {
        self.limiter.check(&player.to_string()).map_err(|_| {
            ApiError::new(
                Reason::RateLimited,
                format!(
                    "too many requests: at most {} per second; slow down and retry",
                    self.per_second
                ),
            )
            .into()
        })
    }

    /// Players with a key now.
    #[cfg(test)]
    fn keys(&self) -> usize {
        self.limiter.keys()
    }
}

/// The cap on open streams of one gateway process.
#[derive(Clone)]
pub(crate) struct StreamCap {
    permits: Arc<Semaphore>,
    max: usize,
}

impl StreamCap {
    /// At most `max` streams at once.
    pub(crate) fn new(max: usize) -> StreamCap {
        StreamCap {
            permits: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// A permit for one more stream, or `RESOURCE_EXHAUSTED` when the gateway is full.
    pub(crate) fn acquire(&self) -> Result<OwnedSemaphorePermit, Status> {
        Arc::clone(&self.permits).try_acquire_owned().map_err(|_| {
            ApiError::new(
                Reason::TooManyStreams,
                format!(
                    "this gateway holds its maximum of {} streams; retry later or on another gateway",
                    self.max
                ),
            )
            .into()
        })
    }

    /// Streams open now.
    pub(crate) fn open(&self) -> usize {
        self.max - self.permits.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use governor::clock::FakeRelativeClock;
    use hidden_front_api_error::ErrorSummary;

    #[test]
    fn the_bucket_allows_a_burst_then_refuses() {
        let limiter = RateLimiter::with_clock(3, 1, FakeRelativeClock::default());
        for _ in 0..3 {
            assert!(limiter.check("ann").is_ok());
        }
        let refused = limiter.check("ann").unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert_eq!(ErrorSummary::of(&refused).reason, "RATE_LIMITED");
        assert_eq!(
            refused.message(),
            "too many requests: at most 1 per second; slow down and retry"
        );
        assert!(limiter.check("bob").is_ok(), "buckets are per player");
    }

    #[test]
    fn the_bucket_refills_at_the_sustained_rate_up_to_the_burst() {
        let clock = FakeRelativeClock::default();
        let limiter = RateLimiter::with_clock(3, 2, clock.clone());
        for _ in 0..3 {
            limiter.check("ann").unwrap();
        }
        assert!(limiter.check("ann").is_err());
        // One action every 500 ms.
        clock.advance(Duration::from_millis(499));
        assert!(limiter.check("ann").is_err(), "not yet refilled");
        clock.advance(Duration::from_millis(1));
        assert!(limiter.check("ann").is_ok(), "one action refilled");
        assert!(limiter.check("ann").is_err());
        // A long rest refills the burst, not more.
        clock.advance(Duration::from_secs(60));
        for _ in 0..3 {
            limiter.check("ann").unwrap();
        }
        assert!(limiter.check("ann").is_err(), "never more than the burst");
    }

    #[test]
    fn zero_settings_mean_one() {
        let limiter = RateLimiter::with_clock(0, 0, FakeRelativeClock::default());
        assert!(limiter.check("ann").is_ok());
        let refused = limiter.check("ann").unwrap_err();
        assert!(refused.message().contains("at most 1 per second"));
    }

    #[test]
    fn idle_players_are_forgotten_and_limited_ones_are_not() {
        let clock = FakeRelativeClock::default();
        let limiter = RateLimiter::with_clock(2, 1, clock.clone());
        limiter.check("hot").unwrap();
        limiter.check("hot").unwrap();
        let players = 3 * MIN_SWEEP_INTERVAL;
        for i in 0..players {
            limiter.check(&format!("p{i}")).unwrap();
        }
        // Sweeps ran, but nobody was idle yet: every key is still there, "hot" still limited.
        assert_eq!(limiter.keys(), players + 1);
        assert!(
            limiter.check("hot").is_err(),
            "a sweep does not lift a refusal"
        );
        // Past the refill time every bucket is full again: the next sweep drops them all.
        clock.advance(Duration::from_secs(3));
        for _ in 0..=players {
            limiter.check("ann").unwrap();
            clock.advance(Duration::from_secs(1));
        }
        assert!(
            limiter.keys() <= MIN_SWEEP_INTERVAL,
            "{} keys after the idle ones were swept",
            limiter.keys()
        );
    }

    #[test]
    fn the_stream_cap_refuses_past_the_maximum_and_frees_on_drop() {
        let cap = StreamCap::new(2);
        let a = cap.acquire().unwrap();
        let _b = cap.acquire().unwrap();
        assert_eq!(
            cap.acquire().unwrap_err().code(),
            tonic::Code::ResourceExhausted
        );
        drop(a);
        assert!(cap.acquire().is_ok());
    }
}
