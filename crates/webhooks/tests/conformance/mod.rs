//! The [`WebhookStore`] contract as checks, run on both impls (`memory.rs`, `postgres.rs`) by
//! [`webhook_store_tests!`]: leases are exclusive until they lapse, every lease-holder write is
//! guarded by the lease, the position (per shard) is kept as the holder writes it with the
//! cursor of its fact, parking moves both with the letter, and replays are requested, listed,
//! resolved and parked again.

#![allow(dead_code)]

use hidden_front_lifecycle::FeedPosition;
use hidden_front_webhooks::store::{DeadLetter, Resume, WebhookStore};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use uuid::Uuid;

/// A running check.
pub type CheckFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A lease long enough never to lapse during a check.
pub const LONG: Duration = Duration::from_secs(60);
/// A lease that lapses quickly.
pub const SHORT: Duration = Duration::from_millis(300);
/// How long a check waits for a lapse.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// Makes each check a `#[tokio::test]` calling `$runner(check)`.
#[macro_export]
macro_rules! webhook_store_tests {
    ($runner:path; $($check:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                $runner(|store| ::std::boxed::Box::pin($crate::conformance::$check(store))).await;
            }
        )+
    };
    ($runner:path) => {
        $crate::webhook_store_tests!($runner;
            a_lease_is_exclusive_until_it_lapses,
            lease_writes_are_guarded,
            the_position_is_kept_as_written_with_its_cursor,
            parking_moves_the_cursor_with_the_letter,
            replays_are_requested_resolved_and_parked_again,
            endpoints_report_errors_and_holders,
        );
    };
}

fn letter(endpoint: &str, position: u64) -> DeadLetter {
    DeadLetter {
        endpoint: endpoint.to_owned(),
        position,
        fact_id: Uuid::now_v7(),
        attempts: 3,
        last_error: "the endpoint answered HTTP 500".to_owned(),
        first_attempt_at: SystemTime::now() - Duration::from_secs(5),
        parked_at: SystemTime::now(),
        replay_requested: false,
    }
}

/// A position of a store of two shards.
pub fn two(first: u64, second: u64) -> FeedPosition {
    format!("v1.0:{first},1:{second}").parse().unwrap()
}

/// Where a new endpoint resumes: cursor 0, no position recorded.
fn fresh() -> Option<Resume> {
    Some(Resume {
        cursor: 0,
        position: None,
    })
}

/// Where an endpoint advanced to `cursor` and `position` resumes.
fn resume(cursor: u64, position: FeedPosition) -> Option<Resume> {
    Some(Resume {
        cursor,
        position: Some(position),
    })
}

/// Retries `acquire` for `holder` until it succeeds (the other lease lapsed) or the deadline.
async fn acquire_after_lapse(store: &dyn WebhookStore, endpoint: &str, holder: &str) -> Resume {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(resume) = store.acquire(endpoint, holder, LONG).await.unwrap() {
            return resume;
        }
        assert!(Instant::now() < deadline, "the short lease never lapsed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn a_lease_is_exclusive_until_it_lapses(store: Arc<dyn WebhookStore>) {
    assert_eq!(store.acquire("hooks", "a", SHORT).await.unwrap(), fresh());
    assert_eq!(store.acquire("hooks", "b", LONG).await.unwrap(), None);
    // The holder itself may take it again.
    assert_eq!(store.acquire("hooks", "a", SHORT).await.unwrap(), fresh());
    assert!(store.advance("hooks", "a", 4, &two(4, 1)).await.unwrap());
    assert_eq!(
        Some(acquire_after_lapse(&*store, "hooks", "b").await),
        resume(4, two(4, 1))
    );
    assert!(!store.renew("hooks", "a", LONG).await.unwrap(), "a lost it");
    assert_eq!(store.acquire("hooks", "a", LONG).await.unwrap(), None);
    // Released: the other takes over at once.
    store.release("hooks", "b").await.unwrap();
    assert_eq!(
        store.acquire("hooks", "a", LONG).await.unwrap(),
        resume(4, two(4, 1))
    );
    // Endpoints are independent.
    assert_eq!(store.acquire("other", "b", LONG).await.unwrap(), fresh());
}

pub async fn lease_writes_are_guarded(store: Arc<dyn WebhookStore>) {
    assert_eq!(store.acquire("hooks", "a", SHORT).await.unwrap(), fresh());
    assert!(store.renew("hooks", "a", SHORT).await.unwrap());
    acquire_after_lapse(&*store, "hooks", "b").await;
    assert!(!store.advance("hooks", "a", 9, &two(9, 9)).await.unwrap());
    assert!(!store.record_failure("hooks", "a", "boom").await.unwrap());
    assert!(
        !store
            .park("a", &letter("hooks", 9), Some(&two(9, 9)))
            .await
            .unwrap()
    );
    assert!(!store.resolve("hooks", "a", 9).await.unwrap());
    assert!(!store.renew("hooks", "a", LONG).await.unwrap());
    let state = store.endpoints().await.unwrap();
    assert_eq!(state.len(), 1);
    assert_eq!(state[0].cursor, 0, "nothing of a's reached the store");
    assert_eq!(state[0].position, None);
    assert_eq!(state[0].last_error, None);
    assert!(store.dead_letters(None).await.unwrap().is_empty());
    // Nobody who never held it may write either.
    assert!(!store.advance("hooks", "c", 1, &two(1, 1)).await.unwrap());
    assert!(!store.advance("nope", "b", 1, &two(1, 1)).await.unwrap());
}

/// The holder writes the position after each fact with that fact's cursor; both are kept as
/// written, the cursor going back when a fact of a shard that was unreachable is delivered
/// after the others' (its position still moves forward, shard by shard), and a new holder
/// resumes from them.
pub async fn the_position_is_kept_as_written_with_its_cursor(store: Arc<dyn WebhookStore>) {
    store.acquire("hooks", "a", LONG).await.unwrap();
    assert!(store.advance("hooks", "a", 10, &two(10, 3)).await.unwrap());
    assert!(store.advance("hooks", "a", 7, &two(10, 7)).await.unwrap());
    let state = &store.endpoints().await.unwrap()[0];
    assert_eq!(
        (state.cursor, state.position.clone()),
        (7, Some(two(10, 7)))
    );
    store.release("hooks", "a").await.unwrap();
    let resumed = store.acquire("hooks", "b", LONG).await.unwrap();
    assert_eq!(resumed, resume(7, two(10, 7)));
    assert_eq!(resumed.unwrap().position(2), two(10, 7));
}

pub async fn parking_moves_the_cursor_with_the_letter(store: Arc<dyn WebhookStore>) {
    store.acquire("hooks", "a", LONG).await.unwrap();
    store.acquire("other", "a", LONG).await.unwrap();
    let parked = letter("hooks", 5);
    assert!(store.park("a", &parked, Some(&two(5, 2))).await.unwrap());
    assert!(
        store
            .park("a", &letter("other", 2), Some(&two(2, 0)))
            .await
            .unwrap()
    );
    assert!(store.park("a", &letter("hooks", 8), None).await.unwrap());
    let state = store.endpoints().await.unwrap();
    let hooks = state.iter().find(|s| s.name == "hooks").unwrap();
    assert_eq!(
        (hooks.cursor, hooks.position.clone()),
        (5, Some(two(5, 2))),
        "a letter parked without advancing moves neither"
    );
    let letters = store.dead_letters(Some("hooks")).await.unwrap();
    assert_eq!(
        letters.iter().map(|l| l.position).collect::<Vec<_>>(),
        [5, 8]
    );
    let first = &letters[0];
    assert_eq!(first.fact_id, parked.fact_id);
    assert_eq!(first.attempts, 3);
    assert_eq!(first.last_error, parked.last_error);
    assert!(!first.replay_requested);
    let at = |t: SystemTime| t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    assert_eq!(at(first.first_attempt_at), at(parked.first_attempt_at));
    assert_eq!(store.dead_letters(None).await.unwrap().len(), 3);
}

pub async fn replays_are_requested_resolved_and_parked_again(store: Arc<dyn WebhookStore>) {
    store.acquire("hooks", "a", LONG).await.unwrap();
    for position in [3, 4, 6] {
        assert!(
            store
                .park("a", &letter("hooks", position), Some(&two(position, 0)))
                .await
                .unwrap()
        );
    }
    assert!(store.replays_requested("hooks").await.unwrap().is_empty());
    assert_eq!(store.request_replay("hooks", Some(4)).await.unwrap(), 1);
    assert_eq!(store.request_replay("hooks", Some(5)).await.unwrap(), 0);
    assert_eq!(store.request_replay("nope", None).await.unwrap(), 0);
    let waiting = store.replays_requested("hooks").await.unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].position, 4);
    assert_eq!(store.request_replay("hooks", None).await.unwrap(), 3);
    let waiting = store.replays_requested("hooks").await.unwrap();
    assert_eq!(
        waiting.iter().map(|l| l.position).collect::<Vec<_>>(),
        [3, 4, 6]
    );
    // 3 is delivered: gone. 4 fails again: parked again, with more attempts, no request.
    assert!(store.resolve("hooks", "a", 3).await.unwrap());
    let again = DeadLetter {
        attempts: 7,
        last_error: "still down".into(),
        ..waiting[1].clone()
    };
    assert!(store.park("a", &again, None).await.unwrap());
    let letters = store.dead_letters(Some("hooks")).await.unwrap();
    assert_eq!(
        letters.iter().map(|l| l.position).collect::<Vec<_>>(),
        [4, 6]
    );
    assert_eq!(letters[0].attempts, 7);
    assert_eq!(letters[0].last_error, "still down");
    assert!(!letters[0].replay_requested);
    assert!(letters[1].replay_requested);
    let state = &store.endpoints().await.unwrap()[0];
    assert_eq!(
        (state.cursor, state.position.clone()),
        (6, Some(two(6, 0))),
        "replays never move it"
    );
}

pub async fn endpoints_report_errors_and_holders(store: Arc<dyn WebhookStore>) {
    store.acquire("b-hooks", "replica-1", LONG).await.unwrap();
    store.acquire("a-hooks", "replica-2", LONG).await.unwrap();
    assert!(
        store
            .record_failure("b-hooks", "replica-1", "HTTP 503")
            .await
            .unwrap()
    );
    let states = store.endpoints().await.unwrap();
    assert_eq!(
        states.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["a-hooks", "b-hooks"]
    );
    let b = &states[1];
    assert_eq!(b.lease_holder.as_deref(), Some("replica-1"));
    assert!(b.lease_until.unwrap() > SystemTime::now());
    assert_eq!(b.last_error.as_deref(), Some("HTTP 503"));
    assert!(b.last_error_at.is_some());
    // A success clears it.
    assert!(
        store
            .advance("b-hooks", "replica-1", 1, &two(1, 0))
            .await
            .unwrap()
    );
    let states = store.endpoints().await.unwrap();
    assert_eq!(states[1].last_error, None);
    assert_eq!(states[1].last_error_at, None);
}
