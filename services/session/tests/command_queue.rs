//! Two commands of one game sent at once, as both seats confirming their deployments at a game's
//! start: the session judges the second only after the first is appended, so neither loses the
//! version race to the other (one append each, no second judgement). The store here holds every
//! append until the test opens it, which shows whether the second command reached the store
//! while the first was still in it.

mod support;

use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_server::SessionService as _;
use hidden_front_session::{SessionConfig, SessionService};
use hidden_front_store::GameStore;
use hidden_front_store::memory::MemoryStore;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use support::HookedStore;
use tonic::Request;

/// How long the test waits for an event before failing instead of hanging.
const DEADLINE: Duration = Duration::from_secs(10);

fn confirm_request(game: &str, side: pb::Side) -> Request<pb::ConfirmDeploymentRequest> {
    Request::new(pb::ConfirmDeploymentRequest {
        context: Some(pb::CommandContext {
            game_id: game.to_string(),
            side: side as i32,
            idempotency_key: format!("confirm-{side:?}"),
            expected_version: None,
        }),
    })
}

// One thread: once the test yields, each spawned command runs until it waits on something, so
// "the second command has not reached the store" is a fact, not a race.
#[tokio::test(flavor = "current_thread")]
async fn both_seats_confirming_at_once_are_appended_once_each() {
    let store = Arc::new(HookedStore::new(MemoryStore::new()));
    let session = Arc::new(SessionService::new(
        Arc::clone(&store) as Arc<dyn GameStore>,
        SessionConfig::default(),
    ));
    let game = session
        .create_game(Request::new(pb::CreateGameRequest {
            south_player: "alice".into(),
            north_player: "bob".into(),
            idempotency_key: "create".into(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner()
        .game_id;
    let before = store.appends_started.load(Ordering::SeqCst);

    store.open.send_replace(false);
    let confirm = |side| {
        let session = Arc::clone(&session);
        let request = confirm_request(&game, side);
        tokio::spawn(async move { session.confirm_deployment(request).await })
    };
    let south = confirm(pb::Side::South);
    let north = confirm(pb::Side::North);
    tokio::time::timeout(DEADLINE, store.append_started.notified())
        .await
        .expect("the first confirmation reaches the store");
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        store.appends_started.load(Ordering::SeqCst) - before,
        1,
        "the second confirmation reached the store while the first was still in it"
    );

    store.open.send_replace(true);
    let mut started = 0;
    for seat in [south, north] {
        let result = tokio::time::timeout(DEADLINE, seat)
            .await
            .expect("the confirmation is answered")
            .unwrap()
            .expect("the confirmation is accepted")
            .into_inner()
            .result
            .unwrap();
        started += result
            .events
            .iter()
            .filter(|e| matches!(e.event, Some(pb::game_event::Event::PlayStarted(_))))
            .count();
    }
    assert_eq!(started, 1, "exactly one of the two answers starts play");
    assert_eq!(
        store.appends_started.load(Ordering::SeqCst) - before,
        2,
        "each confirmation was appended once: neither lost a version race"
    );
}
