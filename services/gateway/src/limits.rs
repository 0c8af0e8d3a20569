//! Limits that keep one client from hurting the others: a per-player action rate (token bucket)
//! and a cap on open streams per gateway process.

use hidden_front_api_error::{ApiError, Reason};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::Status;

/// A token bucket per player: `burst` actions at once, refilled at `per_second`.
pub(crate) struct RateLimiter {
    burst: f64,
    per_second: f64,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

/// Buckets kept at most; idle full buckets are dropped past it.
const MAX_BUCKETS: usize = 200_000;

impl RateLimiter {
    /// A limiter allowing `burst` actions at once and `per_second` sustained.
    pub(crate) fn new(burst: u32, per_second: u32) -> RateLimiter {
        RateLimiter {
            burst: f64::from(burst.max(1)),
            per_second: f64::from(per_second.max(1)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one token for `player`, or refuses with `RESOURCE_EXHAUSTED`.
    pub(crate) fn check(&self, player: &str) -> Result<(), Status> {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().expect("rate limiter lock");
        if buckets.len() >= MAX_BUCKETS {
            let (burst, rate) = (self.burst, self.per_second);
            buckets.retain(|_, (tokens, at)| {
                *tokens + now.duration_since(*at).as_secs_f64() * rate < burst
            });
        }
        let (tokens, at) = buckets
            .entry(player.to_string())
            .or_insert((self.burst, now));
        *tokens =
            (*tokens + now.duration_since(*at).as_secs_f64() * self.per_second).min(self.burst);
        *at = now;
        if *tokens < 1.0 {
            return Err(ApiError::new(
                Reason::RateLimited,
                format!(
                    "too many requests: at most {} per second; slow down and retry",
                    self.per_second
                ),
            )
            .into());
        }
        *tokens -= 1.0;
        Ok(())
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

    #[test]
    fn the_bucket_allows_a_burst_then_refuses() {
        let limiter = RateLimiter::new(3, 1);
        for _ in 0..3 {
            assert!(limiter.check("ann").is_ok());
        }
        let refused = limiter.check("ann").unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(limiter.check("bob").is_ok(), "buckets are per player");
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
