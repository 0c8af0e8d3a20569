//! The firing loop against a recording target: timers fire at (never before) their deadlines,
//! each one's effect happens once even with several clocks, a failed fire is retried, and a
//! clock that stops leaves nothing lost. Runs on the memory store and, with `DATABASE_URL`, on
//! Postgres (see tests/e2e for the clock as a real process against a real session).

use async_trait::async_trait;
use hidden_front_clock::{Clock, ClockConfig, FireOutcome, TimerTarget};
use hidden_front_rules::Side;
use hidden_front_store::memory::MemoryStore;
use hidden_front_store::postgres::PostgresStore;
use hidden_front_store::timers::deadline_after;
use hidden_front_store::{GameStore, Timer, TimerKind, TimerStore};
use hidden_front_store_conformance::{create_game, player};
use sqlx::PgPool;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Records every fire; the first fire of a timer is "applied", repeats are "stale" (as the
/// session's fences make them). Optionally fails the first `fail_first` fires of each timer.
#[derive(Default)]
struct Recorder {
    fires: Mutex<HashMap<Timer, Vec<SystemTime>>>,
    fail_first: usize,
    changed: Notify,
}

#[async_trait]
impl TimerTarget for Recorder {
    async fn fire(&self, timer: &Timer) -> FireOutcome {
        let outcome = {
            let mut fires = self.fires.lock().unwrap();
            let list = fires.entry(*timer).or_default();
            list.push(SystemTime::now());
            if list.len() <= self.fail_first {
                FireOutcome::Retry {
                    at: SystemTime::now(),
                    reason: "the target is down".into(),
                }
            } else if list.len() == self.fail_first + 1 {
                FireOutcome::Applied
            } else {
                FireOutcome::Stale
            }
        };
        self.changed.notify_waiters();
        outcome
    }
}

impl Recorder {
    /// Waits (with a deadline) until every timer in `timers` has had its applied fire.
    async fn wait_applied(&self, timers: &[Timer]) {
        let done = || {
            let fires = self.fires.lock().unwrap();
            timers
                .iter()
                .all(|t| fires.get(t).is_some_and(|f| f.len() > self.fail_first))
        };
        tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                let notified = self.changed.notified();
                if done() {
                    return;
                }
                // Woken by each fire; re-checked at least every 100 ms as a safety net.
                let _ = tokio::time::timeout(Duration::from_millis(100), notified).await;
            }
        })
        .await
        .expect("every timer to fire in time");
    }
}

fn config(owner: &str) -> ClockConfig {
    ClockConfig {
        owner: owner.into(),
        poll_interval: Duration::from_millis(20),
        horizon: Duration::from_millis(500),
        lease: Duration::from_millis(500),
        retry_delay: Duration::from_millis(10),
        ..ClockConfig::default()
    }
}

/// Arms `count` move timers, each on its own game, due over the next `spread`.
async fn arm(store: &dyn GameStore, count: u64, spread: Duration) -> Vec<Timer> {
    let start = SystemTime::now() + Duration::from_millis(100);
    let mut timers = Vec::new();
    for i in 0..count {
        let (meta, _) = create_game(store, i, &player("cs"), &player("cn")).await;
        let timer = Timer {
            game_id: meta.game_id,
            kind: TimerKind::Move,
            side: Side::South,
            armed_version: 3,
            fire_at: deadline_after(start, spread.mul_f64(i as f64 / count as f64)),
        };
        store.arm_timer(&timer).await.unwrap();
        timers.push(timer);
    }
    timers
}

/// Runs a clock until the returned token is cancelled.
fn start(store: Arc<dyn GameStore>, target: Arc<Recorder>, owner: &str) -> CancellationToken {
    let stop = CancellationToken::new();
    let timers: Arc<dyn TimerStore> = store;
    let clock = Clock::new(timers, target, config(owner));
    tokio::spawn(clock.run(stop.clone().cancelled_owned()));
    stop
}

async fn fires_on_time_once_each(store: Arc<dyn GameStore>) {
    let recorder = Arc::new(Recorder::default());
    let timers = arm(&*store, 50, Duration::from_millis(800)).await;
    let stop = start(store.clone(), recorder.clone(), "one");
    recorder.wait_applied(&timers).await;
    let fires = recorder.fires.lock().unwrap().clone();
    for timer in &timers {
        let at = fires[timer][0];
        assert!(at >= timer.fire_at, "{timer:?} fired before its deadline");
    }
    stop.cancel();
    // Fired timers are deleted.
    tokio::time::timeout(Duration::from_secs(30), async {
        while store.armed_timer_count().await.unwrap() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("fired timers to be deleted");
}

async fn two_clocks_share_and_a_stopped_clock_loses_nothing(store: Arc<dyn GameStore>) {
    let recorder = Arc::new(Recorder::default());
    let timers = arm(&*store, 80, Duration::from_millis(1500)).await;
    let a = start(store.clone(), recorder.clone(), "a");
    let b = start(store.clone(), recorder.clone(), "b");
    // Stop one clock part-way, with timers claimed: its timers go to the other.
    recorder.wait_applied(&timers[..10]).await;
    a.cancel();
    recorder.wait_applied(&timers).await;
    b.cancel();
    let fires = recorder.fires.lock().unwrap();
    for timer in &timers {
        assert!(!fires[timer].is_empty(), "{timer:?} was lost");
    }
}

async fn a_failed_fire_is_retried(store: Arc<dyn GameStore>) {
    let recorder = Arc::new(Recorder {
        fail_first: 2,
        ..Recorder::default()
    });
    let timers = arm(&*store, 5, Duration::from_millis(100)).await;
    let stop = start(store.clone(), recorder.clone(), "retry");
    recorder.wait_applied(&timers).await;
    stop.cancel();
    let fires = recorder.fires.lock().unwrap();
    for timer in &timers {
        assert!(
            fires[timer].len() >= 3,
            "two failures, then the fire that applied"
        );
    }
}

fn memory() -> Arc<dyn GameStore> {
    Arc::new(MemoryStore::new())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_fires_on_time_once_each() {
    fires_on_time_once_each(memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_two_clocks_share_and_a_stopped_clock_loses_nothing() {
    two_clocks_share_and_a_stopped_clock_loses_nothing(memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_a_failed_fire_is_retried() {
    a_failed_fire_is_retried(memory()).await;
}

/// The game store on `#[sqlx::test]`'s fresh, migrated database (`DATABASE_URL`).
fn postgres(pool: PgPool) -> Arc<dyn GameStore> {
    Arc::new(PostgresStore::from_pool(pool))
}

#[sqlx::test(migrator = "hidden_front_store::postgres::MIGRATOR")]
async fn postgres_fires_on_time_once_each(pool: PgPool) {
    fires_on_time_once_each(postgres(pool)).await;
}

#[sqlx::test(migrator = "hidden_front_store::postgres::MIGRATOR")]
async fn postgres_two_clocks_share_and_a_stopped_clock_loses_nothing(pool: PgPool) {
    two_clocks_share_and_a_stopped_clock_loses_nothing(postgres(pool)).await;
}
