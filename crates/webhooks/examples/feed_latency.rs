//! The webhook feed's figures on loopback (docs/benchmarks.md): latency from a fact's commit
//! to its receipt at a webhook endpoint (p50, p99), and facts per second delivered to one
//! endpoint draining a backlog.
//!
//! Real parts: a fresh Postgres database (`DATABASE_URL`), the Postgres game store writing
//! games whose creation records two facts, the Postgres webhook store, one deliverer, and an
//! HTTP receiver on 127.0.0.1 verifying every signature (in this process, on its own tasks).
//!
//! ```sh
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!   cargo run --release -p hidden-front-webhooks --example feed_latency -- [GAMES] [BACKLOG_GAMES]
//! ```

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use hidden_front_lifecycle::{FactBody, NewFact};
use hidden_front_store::GameStore;
use hidden_front_store::postgres::PostgresStore;
use hidden_front_test_database::TestDatabase;
use hidden_front_webhooks::postgres::PgWebhookStore;
use hidden_front_webhooks::signature::{DEFAULT_TOLERANCE, Secret, verify};
use hidden_front_webhooks::store::WebhookStore;
use hidden_front_webhooks::{Deliveries, WebhooksConfig};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

#[derive(Default)]
struct Received {
    at: HashMap<String, Instant>,
    unverified: u64,
}

#[derive(Clone)]
struct Receiver {
    received: Arc<Mutex<Received>>,
    changed: Arc<Notify>,
    secret: Secret,
}

async fn handle(
    State(receiver): State<Receiver>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> StatusCode {
    let now = Instant::now();
    let verified = verify(
        std::slice::from_ref(&receiver.secret),
        &headers,
        &body,
        DEFAULT_TOLERANCE,
    )
    .is_ok();
    let id = headers
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    {
        let mut received = receiver.received.lock();
        received.at.entry(id).or_insert(now);
        if !verified {
            received.unverified += 1;
        }
    }
    receiver.changed.notify_waiters();
    StatusCode::OK
}

impl Receiver {
    async fn wait_for(&self, n: usize) {
        loop {
            let changed = self.changed.notified();
            if self.received.lock().at.len() >= n {
                return;
            }
            tokio::time::timeout(Duration::from_secs(60), changed)
                .await
                .expect("deliveries stalled");
        }
    }
}

/// Writes one game (two facts); returns the facts' ids and when the commit returned.
async fn write_game(store: &dyn GameStore, seed: u64) -> ([String; 2], Instant) {
    let (meta, game, events) = hidden_front_store_conformance::new_game(seed, "alice", "bob");
    let facts = [
        NewFact::new(
            meta.game_id,
            FactBody::GameCreated {
                rules: meta.rules.clone(),
                time_control: "online".into(),
                south_player: "alice".into(),
                north_player: "bob".into(),
            },
        ),
        NewFact::new(
            meta.game_id,
            FactBody::SeatsFilled {
                south_player: "alice".into(),
                north_player: "bob".into(),
            },
        ),
    ];
    store
        .create_armed(
            &format!("bench-{}", meta.game_id),
            &meta,
            &events,
            &game,
            &[],
            &facts,
        )
        .await
        .expect("create a game");
    (
        [facts[0].id.to_string(), facts[1].id.to_string()],
        Instant::now(),
    )
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let games: u64 = args.next().and_then(|v| v.parse().ok()).unwrap_or(500);
    let backlog: u64 = args.next().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let db = TestDatabase::create().await;
    let store = PostgresStore::connect(db.url()).await.expect("connect");
    store.migrate().await.expect("migrate");
    let webhook_store: Arc<dyn WebhookStore> = Arc::new(PgWebhookStore::new(store.pool().clone()));
    let games_store: Arc<dyn GameStore> = Arc::new(store);

    let receiver = Receiver {
        received: Arc::default(),
        changed: Arc::new(Notify::new()),
        secret: Secret::parse(SECRET).unwrap(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/hooks", axum::routing::post(handle))
        .with_state(receiver.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let config = WebhooksConfig::parse(
        &format!(
            r#"{{"endpoints": [{{"name": "bench", "url": "{url}", "secrets": ["{SECRET}"]}}],
                "delivery": {{"batch": 500}}}}"#
        ),
        |_| None,
    )
    .unwrap();

    // Backlog first, with no deliverer running: then how fast one endpoint drains it.
    for seed in 0..backlog {
        write_game(&*games_store, 1_000_000 + seed).await;
    }
    let stop = CancellationToken::new();
    let deliveries = Deliveries::new(games_store.clone(), webhook_store, config, "bench".into());
    let started = Instant::now();
    let handles = deliveries.spawn(stop.child_token());
    receiver.wait_for(backlog as usize * 2).await;
    let drained = started.elapsed();
    let rate = (backlog * 2) as f64 / drained.as_secs_f64();

    // Then live facts, paced (one game every 5 ms): commit-return to receipt.
    let mut written: Vec<(String, Instant)> = Vec::new();
    for seed in 0..games {
        let (ids, committed) = write_game(&*games_store, seed).await;
        written.extend(ids.into_iter().map(|id| (id, committed)));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    receiver.wait_for((backlog + games) as usize * 2).await;
    let (mut latencies, unverified) = {
        let received = receiver.received.lock();
        let latencies: Vec<Duration> = written
            .iter()
            .map(|(id, committed)| received.at[id].saturating_duration_since(*committed))
            .collect();
        (latencies, received.unverified)
    };
    latencies.sort();
    println!(
        "backlog: {} facts drained in {:.2} s: {:.0} facts/s to one endpoint",
        backlog * 2,
        drained.as_secs_f64(),
        rate
    );
    println!(
        "live: {} facts, commit -> webhook received: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        latencies.len(),
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3
    );
    println!("unverified deliveries: {unverified}");
    stop.cancel();
    for handle in handles {
        let _ = handle.await;
    }
}
