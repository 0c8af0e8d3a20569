//! The firing loop: claim due timers from the store a little ahead of time, hold them in a heap,
//! fire each at its deadline, and delete what was fired.

use async_trait::async_trait;
use hidden_front_metrics_names as names;
use hidden_front_store::{Timer, TimerStore};
use parking_lot::Mutex;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

/// What a fire did, as the target answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FireOutcome {
    /// The timer changed the game.
    Applied,
    /// The game had moved on (or the fire was a repeat): nothing changed.
    Stale,
    /// The target could not take it now (unreachable, or not due by its clock): fire again at
    /// `at`.
    Retry {
        /// When to try again.
        at: SystemTime,
        /// Why, for the log.
        reason: String,
    },
    /// The target refuses this timer for good (for example the game no longer exists).
    Drop {
        /// Why, for the log.
        reason: String,
    },
}

/// Where due timers go: the session's `ApplyTimer` in production, a recorder in tests and
/// benchmarks.
#[async_trait]
pub trait TimerTarget: Send + Sync + 'static {
    /// Fires one timer. Must be idempotent: a timer may be fired more than once.
    async fn fire(&self, timer: &Timer) -> FireOutcome;
}

/// Settings of the firing loop.
#[derive(Debug, Clone)]
pub struct ClockConfig {
    /// This process's name in claims (unique per process; the pod name is a good one).
    pub owner: String,
    /// How often the store is asked for newly due timers.
    pub poll_interval: Duration,
    /// How far ahead timers are claimed, so that they fire from memory, on time.
    pub horizon: Duration,
    /// How long a claim keeps other clock processes off a timer past its deadline: a process that
    /// dies loses its timers to the others after this.
    pub lease: Duration,
    /// Timers claimed per store round trip at most.
    pub batch: usize,
    /// Fires in flight at most.
    pub max_in_flight: usize,
    /// Wait before a timer whose target was unreachable is fired again.
    pub retry_delay: Duration,
    /// Retries of one timer before it is given up (logged as an error).
    pub max_retries: u32,
}

impl Default for ClockConfig {
    fn default() -> Self {
        ClockConfig {
            owner: format!("clock-{}", uuid::Uuid::new_v4()),
            poll_interval: Duration::from_millis(200),
            horizon: Duration::from_secs(2),
            lease: Duration::from_secs(5),
            batch: 5_000,
            max_in_flight: 256,
            retry_delay: Duration::from_secs(1),
            max_retries: 600,
        }
    }
}

/// Counts of what this process fired, for `GetClockStatus`.
#[derive(Debug, Default)]
pub struct ClockStats {
    /// Fires that changed a game.
    pub applied: AtomicU64,
    /// Fires that found the game moved on.
    pub stale: AtomicU64,
    /// Fires to be tried again.
    pub retried: AtomicU64,
}

/// The firing loop over a [`TimerStore`] and a [`TimerTarget`].
pub struct Clock {
    store: Arc<dyn TimerStore>,
    target: Arc<dyn TimerTarget>,
    config: ClockConfig,
    stats: Arc<ClockStats>,
}

/// Timers this process holds (claimed, not yet done), so a re-claim after a lease does not put
/// one in the heap twice; with the retries counted per timer.
type Held = Arc<Mutex<HashMap<Timer, u32>>>;

/// How long until `at` (zero if it has passed).
fn until(at: SystemTime) -> Duration {
    at.duration_since(SystemTime::now()).unwrap_or_default()
}

impl Clock {
    /// A clock firing `store`'s timers at `target`.
    pub fn new(
        store: Arc<dyn TimerStore>,
        target: Arc<dyn TimerTarget>,
        config: ClockConfig,
    ) -> Clock {
        Clock {
            store,
            target,
            config,
            stats: Arc::new(ClockStats::default()),
        }
    }

    /// The counters this clock updates (shared with the gRPC service).
    pub fn stats(&self) -> Arc<ClockStats> {
        self.stats.clone()
    }

    /// Runs until `shutdown` completes. Timers claimed but not fired by then are left to their
    /// lease: another process (or this one after a restart) fires them.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        let held: Held = Arc::new(Mutex::new(HashMap::new()));
        let mut heap: BinaryHeap<Reverse<(SystemTime, TimerKey)>> = BinaryHeap::new();
        let mut pending: HashMap<TimerKey, Timer> = HashMap::new();
        let mut next_key: TimerKey = 0;
        let in_flight = Arc::new(Semaphore::new(self.config.max_in_flight.max(1)));
        let (done_tx, done_rx) = mpsc::unbounded_channel::<Timer>();
        let completer = tokio::spawn(complete_loop(self.store.clone(), done_rx, held.clone()));
        let gauge = tokio::spawn(gauge_loop(self.store.clone()));
        let mut next_poll = Instant::now();
        tracing::info!(owner = %self.config.owner, "clock started");
        loop {
            if Instant::now() >= next_poll {
                let horizon = SystemTime::now() + self.config.horizon;
                match self
                    .store
                    .claim_due(
                        &self.config.owner,
                        horizon,
                        self.config.lease,
                        self.config.batch,
                    )
                    .await
                {
                    Ok(claimed) => {
                        let full = claimed.len() >= self.config.batch;
                        let mut held = held.lock();
                        for timer in claimed {
                            if held.contains_key(&timer) {
                                continue;
                            }
                            held.insert(timer, 0);
                            next_key += 1;
                            pending.insert(next_key, timer);
                            heap.push(Reverse((timer.fire_at, next_key)));
                        }
                        // A full batch means more are due: ask again at once.
                        next_poll = if full {
                            Instant::now()
                        } else {
                            Instant::now() + self.config.poll_interval
                        };
                    }
                    Err(error) => {
                        tracing::warn!(%error, "claiming due timers failed; retrying");
                        next_poll = Instant::now() + self.config.poll_interval;
                    }
                }
            }
            let now = SystemTime::now();
            while let Some(Reverse((fire_at, key))) = heap.peek().copied() {
                if fire_at > now {
                    break;
                }
                heap.pop();
                let Some(timer) = pending.remove(&key) else {
                    continue;
                };
                self.spawn_fire(timer, &in_flight, &done_tx, &held);
            }
            let wake = match heap.peek() {
                Some(Reverse((fire_at, _))) => next_poll.min(Instant::now() + until(*fire_at)),
                None => next_poll,
            };
            tokio::select! {
                () = tokio::time::sleep_until(wake) => {}
                () = &mut shutdown => break,
            }
        }
        tracing::info!(owner = %self.config.owner, held = pending.len(), "clock stopping");
        gauge.abort();
        // Hand the claimed, unfired timers back at once rather than after their leases.
        let now = SystemTime::now();
        for timer in pending.values() {
            if let Err(error) = self.store.release_timer(timer, now).await {
                tracing::warn!(%error, "releasing a timer at shutdown failed; its lease will lapse");
                break;
            }
        }
        drop(done_tx);
        let _ = completer.await;
    }

    fn spawn_fire(
        &self,
        timer: Timer,
        in_flight: &Arc<Semaphore>,
        done: &mpsc::UnboundedSender<Timer>,
        held: &Held,
    ) {
        let target = self.target.clone();
        let store = self.store.clone();
        let in_flight = in_flight.clone();
        let done = done.clone();
        let held = held.clone();
        let stats = self.stats.clone();
        let retry_delay = self.config.retry_delay;
        let max_retries = self.config.max_retries;
        tokio::spawn(async move {
            let Ok(_permit) = in_flight.acquire_owned().await else {
                return;
            };
            let outcome = target.fire(&timer).await;
            let kind = timer.kind.name();
            let lateness = SystemTime::now()
                .duration_since(timer.fire_at)
                .unwrap_or_default();
            let result = match &outcome {
                FireOutcome::Applied | FireOutcome::Drop { .. } => "applied",
                FireOutcome::Stale => "stale",
                FireOutcome::Retry { .. } => "retry",
            };
            metrics::counter!(names::TIMERS_FIRED_TOTAL, names::TIMER_KIND => kind, names::TIMER_RESULT => result)
                .increment(1);
            match outcome {
                FireOutcome::Applied => {
                    stats.applied.fetch_add(1, Ordering::Relaxed);
                    metrics::histogram!(names::TIMER_LATENESS_SECONDS, names::TIMER_KIND => kind)
                        .record(lateness.as_secs_f64());
                    tracing::debug!(game_id = %timer.game_id, kind, lateness_ms = lateness.as_millis() as u64, "timer applied");
                    let _ = done.send(timer);
                }
                FireOutcome::Stale => {
                    stats.stale.fetch_add(1, Ordering::Relaxed);
                    let _ = done.send(timer);
                }
                FireOutcome::Drop { reason } => {
                    tracing::error!(game_id = %timer.game_id, kind, %reason, "timer dropped");
                    let _ = done.send(timer);
                }
                FireOutcome::Retry { at, reason } => {
                    stats.retried.fetch_add(1, Ordering::Relaxed);
                    let attempts = {
                        let mut held = held.lock();
                        let attempts = held.entry(timer).or_insert(0);
                        *attempts += 1;
                        *attempts
                    };
                    if attempts > max_retries {
                        tracing::error!(game_id = %timer.game_id, kind, %reason, attempts, "timer given up after too many retries");
                        let _ = done.send(timer);
                        return;
                    }
                    tracing::warn!(game_id = %timer.game_id, kind, %reason, "timer fire failed; retrying");
                    let at =
                        at.max(SystemTime::now() + retry_delay.min(Duration::from_millis(100)));
                    if let Err(error) = store.release_timer(&timer, at).await {
                        tracing::warn!(%error, "releasing a timer failed; its lease will lapse");
                    }
                    // Claimable again (by any clock process) from `at`.
                    held.lock().remove(&timer);
                }
            }
        });
    }
}

/// A heap entry's handle into the pending map (timers themselves are not ordered).
type TimerKey = u64;

/// Deletes fired timers in batches (one store round trip for many fires).
async fn complete_loop(
    store: Arc<dyn TimerStore>,
    mut done: mpsc::UnboundedReceiver<Timer>,
    held: Held,
) {
    let mut batch = Vec::new();
    while let Some(first) = done.recv().await {
        batch.push(first);
        while batch.len() < 1_000 {
            match done.try_recv() {
                Ok(timer) => batch.push(timer),
                Err(_) => break,
            }
        }
        if let Err(error) = store.complete_timers(&batch).await {
            // The rows stay; after their lease another claim fires them again, which is a
            // no-op in the session.
            tracing::warn!(%error, count = batch.len(), "deleting fired timers failed");
        }
        let mut held = held.lock();
        let fired: HashSet<Timer> = batch.drain(..).collect();
        for timer in fired {
            held.remove(&timer);
        }
    }
}

/// Keeps the armed-timers gauge current.
async fn gauge_loop(store: Arc<dyn TimerStore>) {
    let mut every = tokio::time::interval(Duration::from_secs(5));
    loop {
        every.tick().await;
        if let Ok(count) = store.armed_timer_count().await {
            metrics::gauge!(names::TIMERS_ARMED).set(count as f64);
        }
    }
}
