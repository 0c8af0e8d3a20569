//! Deliveries against an in-test HTTP receiver, on the memory stores: order, signatures,
//! retries after 500s, dead letters after the horizon, replays, type filters, and two
//! deliverers sharing one endpoint (only the lease holder sends); HTTPS to a receiver whose
//! certificate a throwaway CA issued, trusted through `ca_file` or not at all.

mod support;

use hidden_front_store::GameStore;
use hidden_front_store::memory::MemoryStore;
use hidden_front_webhooks::store::WebhookStore;
use hidden_front_webhooks::{Deliveries, MemoryWebhookStore};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{Answer, DEADLINE, Receiver, all_facts, config, write_game};
use tokio_util::sync::{CancellationToken, DropGuard};

struct Running {
    games: Arc<dyn GameStore>,
    store: Arc<dyn WebhookStore>,
    deliveries: Vec<Deliveries>,
    /// Stops the deliverers, when dropped too.
    stop: DropGuard,
    handles: Vec<tokio::task::JoinHandle<()>>,
}

/// `replicas` deliverers of `config` on one game store and one webhook store.
fn start(config: hidden_front_webhooks::WebhooksConfig, replicas: usize) -> Running {
    let games: Arc<dyn GameStore> = Arc::new(MemoryStore::new());
    let store: Arc<dyn WebhookStore> = Arc::new(MemoryWebhookStore::new());
    let stop = CancellationToken::new();
    let mut deliveries = Vec::new();
    let mut handles = Vec::new();
    for replica in 0..replicas {
        let d = Deliveries::new(
            games.clone(),
            store.clone(),
            config.clone(),
            format!("replica-{replica}"),
        );
        handles.extend(d.spawn(stop.child_token()));
        deliveries.push(d);
    }
    Running {
        games,
        store,
        deliveries,
        stop: stop.drop_guard(),
        handles,
    }
}

impl Running {
    async fn stop(self) {
        self.stop.disarm().cancel();
        for handle in self.handles {
            tokio::time::timeout(DEADLINE, handle)
                .await
                .expect("deliverers stop")
                .unwrap();
        }
    }

    /// Waits until the endpoint's cursor is `position` (the receiver records a fact before its
    /// answer reaches the deliverer, which then moves the cursor).
    async fn wait_for_cursor(&self, position: u64) {
        let deadline = Instant::now() + DEADLINE;
        while self.store.endpoints().await.unwrap()[0].cursor < position {
            assert!(
                Instant::now() < deadline,
                "the cursor stays behind {position}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until the endpoint has `n` dead letters.
    async fn wait_for_dead_letters(&self, n: usize) {
        let deadline = Instant::now() + DEADLINE;
        while self.store.dead_letters(None).await.unwrap().len() < n {
            assert!(Instant::now() < deadline, "no {n} dead letters in time");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn facts_arrive_in_outbox_order_signed_as_cloudevents() {
    let receiver = Receiver::start(Answer::Ok).await;
    let running = start(config(&receiver.url(), 60_000, ""), 1);
    for seed in 0..4 {
        write_game(&*running.games, seed).await;
    }
    let received = receiver.wait_for(8).await;
    let facts = all_facts(&*running.games).await;
    assert_eq!(
        received.iter().map(|r| r.position).collect::<Vec<_>>(),
        facts.iter().map(|f| f.position).collect::<Vec<_>>()
    );
    for (r, f) in received.iter().zip(&facts) {
        assert_eq!(r.id, f.id.to_string());
        assert_eq!(r.event_id, r.id, "webhook-id is the CloudEvent id");
        assert_eq!(r.event_type, f.body.kind().event_type());
        assert!(r.verified, "signature of {}", r.id);
        assert!(r.cloudevents_content_type);
    }
    // Live ones too, after the backlog.
    write_game(&*running.games, 9).await;
    receiver.wait_for(10).await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_failing_for_a_while_gets_every_fact_in_order_after_it_recovers() {
    let receiver = Receiver::start(Answer::FailFirst(5)).await;
    let running = start(config(&receiver.url(), 60_000, ""), 1);
    for seed in 0..3 {
        write_game(&*running.games, seed).await;
    }
    let received = receiver.wait_for(6).await;
    let facts = all_facts(&*running.games).await;
    assert_eq!(
        received.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
        facts.iter().map(|f| f.id.to_string()).collect::<Vec<_>>()
    );
    assert_eq!(
        receiver.attempts(),
        6 + 5,
        "five refused attempts, then each once"
    );
    assert!(running.store.dead_letters(None).await.unwrap().is_empty());
    running
        .wait_for_cursor(facts.last().unwrap().position)
        .await;
    let state = &running.store.endpoints().await.unwrap()[0];
    assert_eq!(state.last_error, None, "cleared by the success");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn facts_failing_past_the_horizon_are_parked_and_replayed_with_their_ids() {
    let receiver = Receiver::start(Answer::Fail).await;
    let running = start(config(&receiver.url(), 150, ""), 1);
    write_game(&*running.games, 1).await;
    running.wait_for_dead_letters(2).await;
    let letters = running.store.dead_letters(Some("test")).await.unwrap();
    let facts = all_facts(&*running.games).await;
    assert_eq!(
        letters
            .iter()
            .map(|l| (l.position, l.fact_id))
            .collect::<Vec<_>>(),
        facts.iter().map(|f| (f.position, f.id)).collect::<Vec<_>>()
    );
    for letter in &letters {
        assert!(letter.attempts >= 2, "retried before parking: {letter:?}");
        assert!(letter.last_error.contains("500"), "{}", letter.last_error);
    }
    let state = &running.store.endpoints().await.unwrap()[0];
    assert_eq!(
        state.cursor,
        facts.last().unwrap().position,
        "delivery moved on"
    );

    // The receiver recovers: new facts flow, and a replay sends the parked ones again.
    receiver.answer(Answer::Ok);
    write_game(&*running.games, 2).await;
    let live = receiver.wait_for(2).await;
    assert!(
        live.iter()
            .all(|r| r.position > facts.last().unwrap().position)
    );
    assert_eq!(running.store.request_replay("test", None).await.unwrap(), 2);
    running.deliveries[0].poke();
    let all = receiver.wait_for(4).await;
    let replayed: Vec<String> = all[2..].iter().map(|r| r.id.clone()).collect();
    assert_eq!(
        replayed,
        facts.iter().map(|f| f.id.to_string()).collect::<Vec<_>>()
    );
    let deadline = Instant::now() + DEADLINE;
    while !running.store.dead_letters(None).await.unwrap().is_empty() {
        assert!(Instant::now() < deadline, "replayed letters stay listed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_gets_only_the_types_it_asked_for_and_its_cursor_passes_the_rest() {
    let receiver = Receiver::start(Answer::Ok).await;
    let running = start(
        config(
            &receiver.url(),
            60_000,
            r#", "types": ["hiddenfront.game.seats_filled.v1"]"#,
        ),
        1,
    );
    for seed in 0..3 {
        write_game(&*running.games, seed).await;
    }
    let received = receiver.wait_for(3).await;
    assert!(
        received
            .iter()
            .all(|r| r.event_type == "hiddenfront.game.seats_filled.v1")
    );
    let last = all_facts(&*running.games).await.last().unwrap().position;
    running.wait_for_cursor(last).await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_deliverers_on_one_endpoint_send_each_fact_once() {
    let receiver = Receiver::start(Answer::Ok).await;
    let running = start(config(&receiver.url(), 60_000, ""), 2);
    for seed in 0..10 {
        write_game(&*running.games, seed).await;
    }
    let received = receiver.wait_for(20).await;
    let mut seen: HashMap<String, u32> = HashMap::new();
    for r in &received {
        *seen.entry(r.id.clone()).or_default() += 1;
    }
    assert_eq!(seen.len(), 20);
    assert!(seen.values().all(|n| *n == 1), "a fact was sent twice");
    let store = running.store.clone();
    running.stop().await;
    // Stopped deliverers give their lease up, so a new process takes over at once.
    assert_eq!(
        store
            .acquire("test", "replica-new", Duration::from_secs(5))
            .await
            .unwrap()
            .map(|resume| (resume.cursor, resume.position.map(|p| p.to_string()))),
        Some((
            all_facts_last(&received),
            Some(format!("v1.0:{}", all_facts_last(&received)))
        ))
    );
}

fn all_facts_last(received: &[support::Received]) -> u64 {
    received.iter().map(|r| r.position).max().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_endpoint_gets_its_facts_over_tls_verified_against_its_ca() {
    let (receiver, ca) = Receiver::start_tls(Answer::Ok).await;
    let extra = format!(r#", "ca_file": "{}""#, ca.pem_file.display());
    let running = start(config(&receiver.url(), 60_000, &extra), 1);
    write_game(&*running.games, 1).await;
    let received = receiver.wait_for(2).await;
    assert!(received.iter().all(|r| r.verified), "{received:?}");
    running.wait_for_cursor(2).await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_endpoint_nothing_vouches_for_gets_nothing_and_says_why() {
    let (receiver, _ca) = Receiver::start_tls(Answer::Ok).await;
    let running = start(config(&receiver.url(), 60_000, ""), 1);
    write_game(&*running.games, 1).await;
    let deadline = Instant::now() + DEADLINE;
    let error = loop {
        let endpoints = running.store.endpoints().await.unwrap();
        if let Some(error) = endpoints.first().and_then(|e| e.last_error.clone()) {
            break error;
        }
        assert!(Instant::now() < deadline, "no failed attempt recorded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        error.contains("cannot connect") && error.to_lowercase().contains("certificate"),
        "{error}"
    );
    assert_eq!(receiver.attempts(), 0, "no request got past the handshake");
    assert_eq!(
        running.store.endpoints().await.unwrap()[0].cursor,
        0,
        "nothing delivered"
    );
    running.stop().await;
}
