//! `WatchLifecycle` in process, on the in-memory store (one shard): every fact carries its
//! position; a stream started from a fact's position continues right after it, the same as from
//! its cursor; a malformed position, or one naming a shard the store lacks, is refused with
//! `INVALID_FIELD` naming `after_position`. Over real gRPC and two shards:
//! tests/e2e/tests/e2e/sharding.rs.

use hidden_front_api_error::ErrorSummary;
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_server::SessionService as _;
use hidden_front_session::{SessionConfig, SessionService};
use hidden_front_store::LifecycleOutbox;
use hidden_front_store::memory::MemoryStore;
use std::sync::Arc;
use std::time::Duration;
use tokio_stream::StreamExt;
use tonic::{Code, Request, Status};

fn service() -> (SessionService, Arc<MemoryStore>) {
    let store = Arc::new(MemoryStore::new());
    let service = SessionService::new(store.clone(), SessionConfig::default());
    (service, store)
}

async fn create(s: &SessionService, south: &str) {
    s.create_game(Request::new(pb::CreateGameRequest {
        south_player: south.into(),
        north_player: "bob".into(),
        ..Default::default()
    }))
    .await
    .expect("create");
}

/// The first `n` facts of a stream started with `request` (the deadline only fails the test).
async fn watch(
    s: &SessionService,
    request: pb::WatchLifecycleRequest,
    n: usize,
) -> Result<Vec<pb::LifecycleFact>, Status> {
    let mut stream = s.watch_lifecycle(Request::new(request)).await?.into_inner();
    let mut facts = Vec::new();
    while facts.len() < n {
        let next = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("the facts arrive")
            .expect("the stream goes on");
        facts.push(next.expect("a fact").fact.expect("with a body"));
    }
    Ok(facts)
}

/// How many facts the outbox holds.
async fn outbox_len(store: &MemoryStore) -> usize {
    store.facts_after(0, 10_000).await.unwrap().len()
}

#[tokio::test]
async fn every_fact_carries_a_position_to_resume_from() {
    let (s, store) = service();
    create(&s, "alice").await;
    create(&s, "carol").await;
    let n = outbox_len(&store).await;
    let all = watch(&s, pb::WatchLifecycleRequest::default(), n)
        .await
        .unwrap();
    assert!(all.len() >= 4, "creation facts of two games: {all:?}");
    for fact in &all {
        // One shard: the position says what the cursor says.
        assert_eq!(fact.position, format!("v1.0:{}", fact.cursor));
    }
    let ids = |facts: &[pb::LifecycleFact]| facts.iter().map(|f| f.id.clone()).collect::<Vec<_>>();
    for cut in [0, 1, all.len() - 1] {
        let by_position = watch(
            &s,
            pb::WatchLifecycleRequest {
                after_position: all[cut].position.clone(),
                // Ignored: the position wins.
                after_cursor: 0,
            },
            n - cut - 1,
        )
        .await
        .unwrap();
        assert_eq!(ids(&by_position), ids(&all[cut + 1..]), "after fact {cut}");
        let by_cursor = watch(
            &s,
            pb::WatchLifecycleRequest {
                after_cursor: all[cut].cursor,
                ..Default::default()
            },
            n - cut - 1,
        )
        .await
        .unwrap();
        assert_eq!(ids(&by_cursor), ids(&by_position));
    }
}

#[tokio::test]
async fn a_live_fact_reaches_a_stream_started_by_position() {
    let (s, store) = service();
    create(&s, "alice").await;
    let all = watch(
        &s,
        pb::WatchLifecycleRequest::default(),
        outbox_len(&store).await,
    )
    .await
    .unwrap();
    let mut stream = s
        .watch_lifecycle(Request::new(pb::WatchLifecycleRequest {
            after_position: all.last().unwrap().position.clone(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    create(&s, "dave").await;
    let live = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("a live fact arrives")
        .expect("the stream goes on")
        .expect("a fact")
        .fact
        .unwrap();
    assert!(live.cursor > all.last().unwrap().cursor);
    assert_eq!(live.position, format!("v1.0:{}", live.cursor));
}

#[tokio::test]
async fn a_bad_position_is_refused_naming_the_field_and_the_problem() {
    let (s, _) = service();
    for (position, problem) in [
        ("0:5", "does not start with the version prefix"),
        ("v1.", "names no shard"),
        ("v1.0:05", "entry 0 has a position that is not a number"),
        ("v1.0:1,0:2", "entry 1 names shard 0 after a shard"),
        ("v1.0:1,1:2", "names shard 1, but the store has 1 shard(s)"),
    ] {
        let refused = watch(
            &s,
            pb::WatchLifecycleRequest {
                after_position: position.into(),
                ..Default::default()
            },
            0,
        )
        .await
        .expect_err(position);
        let summary = ErrorSummary::of(&refused);
        assert_eq!(
            (refused.code(), summary.reason.as_str()),
            (Code::InvalidArgument, "INVALID_FIELD"),
            "{position}: {refused:?}"
        );
        assert_eq!(summary.violations[0].field, "after_position");
        assert!(
            summary.violations[0].description.contains(problem),
            "{position}: {:?}",
            summary.violations[0].description
        );
    }
}
