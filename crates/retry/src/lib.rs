//! The one backoff schedule of every reconnect and retry loop in Hidden Front.
//!
//! Loops that lose a connection (the store's LISTEN connection, the gateway's watch of a game,
//! the terminal client's feed, the clock's calls to the session) wait a little longer after
//! each failure, up to a cap, and start over once they succeed. Writing that once keeps every
//! loop's behaviour the same and lets the jitter that spreads a crowd of reconnecting replicas
//! live in one place. The schedule itself comes from `backon`; this crate only adds the
//! restart that a long-lived loop needs.

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};
use std::time::Duration;

/// A restartable exponential backoff: `first`, then doubling, never above `max`.
///
/// It never runs out: a long-lived loop keeps retrying at the cap until it succeeds, then
/// calls [`Backoff::reset`].
#[derive(Debug)]
pub struct Backoff {
    builder: ExponentialBuilder,
    delays: ExponentialBackoff,
}

impl Backoff {
    /// A schedule from `first` doubling up to `max`, without jitter (the exact delays, for
    /// loops whose timing tests observe).
    pub fn new(first: Duration, max: Duration) -> Backoff {
        let builder = ExponentialBuilder::default()
            .with_min_delay(first)
            .with_max_delay(max.max(first))
            .with_factor(2.0)
            .without_max_times();
        Backoff {
            delays: builder.build(),
            builder,
        }
    }

    /// The same schedule growing by `factor` (at least 1) instead of doubling: a loop whose
    /// operators tune how fast it backs off (webhook deliveries).
    pub fn with_factor(mut self, factor: f32) -> Backoff {
        self.builder = self.builder.with_factor(factor.max(1.0));
        self.delays = self.builder.build();
        self
    }

    /// The same schedule with random jitter added to each delay (up to the delay itself, so a
    /// jittered delay lies between the delay and twice it, and the longest is twice `max`), so
    /// that replicas which lost the same server do not all come back in the same instant.
    pub fn jittered(mut self) -> Backoff {
        self.builder = self.builder.with_jitter();
        self.delays = self.builder.build();
        self
    }

    /// The delay before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        // `without_max_times` makes the schedule endless; the fallback is never taken.
        self.delays
            .next()
            .unwrap_or_else(|| self.builder.build().last().unwrap_or_default())
    }

    /// Sleeps for the next delay.
    pub async fn wait(&mut self) {
        tokio::time::sleep(self.next_delay()).await;
    }

    /// Starts over from the first delay (after a success).
    pub fn reset(&mut self) {
        self.delays = self.builder.build();
    }
}

#[cfg(test)]
mod tests {
    use super::Backoff;
    use std::time::Duration;

    fn millis(backoff: &mut Backoff, n: usize) -> Vec<u128> {
        (0..n).map(|_| backoff.next_delay().as_millis()).collect()
    }

    #[test]
    fn grows_by_its_factor_when_given_one() {
        let mut backoff =
            Backoff::new(Duration::from_millis(100), Duration::from_secs(1)).with_factor(3.0);
        assert_eq!(millis(&mut backoff, 4), vec![100, 300, 900, 1000]);
    }

    #[test]
    fn doubles_up_to_its_cap_and_starts_over_after_a_reset() {
        let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(2));
        assert_eq!(
            millis(&mut backoff, 6),
            vec![250, 500, 1000, 2000, 2000, 2000]
        );
        backoff.reset();
        assert_eq!(millis(&mut backoff, 2), vec![250, 500]);
    }

    #[test]
    fn never_runs_out() {
        let mut backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(4));
        assert!(millis(&mut backoff, 10_000).iter().all(|&d| d <= 4));
        assert_eq!(backoff.next_delay(), Duration::from_millis(4));
    }

    #[test]
    fn jitter_stays_between_the_delay_and_twice_it() {
        let mut backoff =
            Backoff::new(Duration::from_millis(100), Duration::from_millis(400)).jittered();
        for (i, delay) in millis(&mut backoff, 50).into_iter().enumerate() {
            let base = [100u128, 200, 400].get(i).copied().unwrap_or(400);
            assert!(
                (base..=2 * base).contains(&delay),
                "delay {i}: {delay} ms against {base}"
            );
        }
    }
}
