//! How late timers fire with many armed: arms `--timers N` move timers due uniformly over the
//! next `--spread-seconds S` (after a lead time that lets the arming finish), runs one clock
//! process's firing loop against a target that records the moment each fire arrives, and prints
//! the lateness distribution (fire time minus deadline).
//!
//! ```sh
//! cargo run --release -p hidden-front-clock --example timer_lateness -- --timers 100000 --spread-seconds 60
//! cargo run --release -p hidden-front-clock --example timer_lateness -- --timers 100000 --spread-seconds 60 \
//!     --database-url postgres://postgres@127.0.0.1:5432/postgres
//! ```
//! With a database URL it creates (and drops) a scratch database and keeps the timers in
//! Postgres; the games the timers belong to are bare rows (the clock never reads them).

use async_trait::async_trait;
use hidden_front_clock::{Clock, ClockConfig, FireOutcome, TimerTarget};
use hidden_front_rules::Side;
use hidden_front_store::memory::MemoryStore;
use hidden_front_store::postgres::PostgresStore;
use hidden_front_store::timers::deadline_after;
use hidden_front_store::{GameStore, Timer, TimerKind, TimerStore};
use hidden_front_test_database::TestDatabase;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use uuid::Uuid;

/// Records each fire's lateness in microseconds.
struct Recorder {
    lateness_us: Mutex<Vec<u64>>,
}

#[async_trait]
impl TimerTarget for Recorder {
    async fn fire(&self, timer: &Timer) -> FireOutcome {
        let late = SystemTime::now()
            .duration_since(timer.fire_at)
            .unwrap_or_default();
        self.lateness_us
            .lock()
            .unwrap()
            .push(late.as_micros() as u64);
        FireOutcome::Applied
    }
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index] as f64 / 1000.0
}

#[tokio::main]
async fn main() {
    let count: usize = arg("--timers").map_or(100_000, |v| v.parse().expect("--timers N"));
    let spread = Duration::from_secs(
        arg("--spread-seconds").map_or(60, |v| v.parse().expect("--spread-seconds S")),
    );
    let url = arg("--database-url");
    let (store, scratch): (Arc<dyn GameStore>, Option<TestDatabase>) = match &url {
        None => (Arc::new(MemoryStore::new()), None),
        Some(url) => {
            // A scratch database on that server, dropped at the end.
            let db = TestDatabase::create_on(url).await;
            let store = PostgresStore::connect_with(db.url(), 8)
                .await
                .expect("connect to the scratch database");
            store.migrate().await.expect("migrate");
            (Arc::new(store), Some(db))
        }
    };
    // Arm: games first (bare rows in Postgres), then the timers, due after a lead time.
    let lead = Duration::from_secs(5) + Duration::from_micros(count as u64 * 60);
    let armed_at = Instant::now();
    let start = SystemTime::now() + lead;
    let ids: Vec<Uuid> = (0..count).map(|_| Uuid::now_v7()).collect();
    let fire_ats: Vec<SystemTime> = (0..count)
        .map(|i| deadline_after(start, spread.mul_f64(i as f64 / count as f64)))
        .collect();
    match &scratch {
        Some(db) => {
            let pool = db.pool(4).await;
            for chunk in (0..count).collect::<Vec<_>>().chunks(10_000) {
                let game_ids: Vec<Uuid> = chunk.iter().map(|&i| ids[i]).collect();
                let times: Vec<sqlx::types::time::OffsetDateTime> =
                    chunk.iter().map(|&i| fire_ats[i].into()).collect();
                sqlx::query(
                    "INSERT INTO games (game_id, rules, time_control, south_player, north_player, \
                                        version, phase, snapshot) \
                     SELECT id, 'hidden-front', '{}'::jsonb, 's', 'n', 3, 'play', '{}'::jsonb \
                     FROM UNNEST($1::uuid[]) AS g (id)",
                )
                .bind(&game_ids)
                .execute(&pool)
                .await
                .unwrap();
                sqlx::query(
                    "INSERT INTO game_timers (game_id, slot, kind, side, armed_version, fire_at) \
                     SELECT id, 'turn', 'move', 'south', 3, at \
                     FROM UNNEST($1::uuid[], $2::timestamptz[]) AS t (id, at)",
                )
                .bind(&game_ids)
                .bind(&times)
                .execute(&pool)
                .await
                .unwrap();
            }
        }
        None => {
            let memory = store.clone();
            for i in 0..count {
                let (meta, game, events) =
                    hidden_front_store_conformance::new_game(i as u64, "s", "n");
                let meta = hidden_front_store::GameMeta {
                    game_id: ids[i],
                    ..meta
                };
                let timer = Timer {
                    game_id: ids[i],
                    kind: TimerKind::Move,
                    side: Side::South,
                    armed_version: 3,
                    fire_at: fire_ats[i],
                };
                memory
                    .create_armed(&format!("k{i}"), &meta, &events, &game, &[timer], &[])
                    .await
                    .unwrap();
            }
        }
    }
    let armed = store.armed_timer_count().await.unwrap();
    eprintln!(
        "armed {armed} timers in {:.1} s; the first is due in {:.1} s, the last {} s later",
        armed_at.elapsed().as_secs_f64(),
        start
            .duration_since(SystemTime::now())
            .unwrap_or_default()
            .as_secs_f64(),
        spread.as_secs()
    );
    let recorder = Arc::new(Recorder {
        lateness_us: Mutex::new(Vec::with_capacity(count)),
    });
    let stop = tokio_util::sync::CancellationToken::new();
    let timers: Arc<dyn TimerStore> = store.clone();
    let clock = Clock::new(timers, recorder.clone(), ClockConfig::default());
    let running = tokio::spawn(clock.run(stop.clone().cancelled_owned()));
    let deadline = Instant::now() + lead + spread + Duration::from_secs(60);
    while recorder.lateness_us.lock().unwrap().len() < count && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.cancel();
    let _ = running.await;
    let mut lateness = recorder.lateness_us.lock().unwrap().clone();
    lateness.sort_unstable();
    println!(
        "store={} timers={} fired={} lateness_ms p50={:.2} p90={:.2} p99={:.2} p99.9={:.2} max={:.2}",
        if url.is_some() { "postgres" } else { "memory" },
        count,
        lateness.len(),
        percentile(&lateness, 0.5),
        percentile(&lateness, 0.9),
        percentile(&lateness, 0.99),
        percentile(&lateness, 0.999),
        percentile(&lateness, 1.0),
    );
    drop(store);
    drop(scratch);
}
