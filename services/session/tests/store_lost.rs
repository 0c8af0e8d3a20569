//! A session host cut from its store (`session_store.rs`): the pulse finds it lost within its
//! bound, and from then every call is answered `UNAVAILABLE`/`STORE_UNAVAILABLE` at once, calls
//! under way are given up, watched games' streams end with the same retriable error, and the
//! first pulse that answers serves again. Time is tokio's paused clock: the pulse's bound is
//! waited out without waiting.

mod support;

use hidden_front_api_error::ErrorSummary;
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_server::SessionService as _;
use hidden_front_session::{PulseConfig, SessionConfig, SessionService};
use hidden_front_store::memory::MemoryStore;
use hidden_front_time::ManualClock;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};
use support::HookedStore;
use tokio_stream::StreamExt as _;
use tonic::{Code, Request, Status};

fn ctx(game: &str, side: pb::Side, key: &str) -> Option<pb::CommandContext> {
    Some(pb::CommandContext {
        game_id: game.to_string(),
        side: side as i32,
        idempotency_key: key.to_string(),
        expected_version: None,
    })
}

fn resign(game: &str, key: &str) -> Request<pb::ResignRequest> {
    Request::new(pb::ResignRequest {
        context: ctx(game, pb::Side::South, key),
    })
}

fn get(game: &str) -> Request<pb::GetGameRequest> {
    Request::new(pb::GetGameRequest {
        game_id: game.into(),
        viewer: pb::Viewer::Spectator as i32,
    })
}

/// The refusal every call of a host that lost its store gets: retriable, with the reason a
/// client retries on.
fn assert_store_unavailable(status: &Status, what: &str) {
    assert_eq!(status.code(), Code::Unavailable, "{what}: {status:?}");
    assert_eq!(
        ErrorSummary::of(status).reason,
        "STORE_UNAVAILABLE",
        "{what}: {status:?}"
    );
}

/// A session on a hooked memory store with the default pulse, pulsed once, and one new game:
/// the store, the session's clock, the session and the game's id.
async fn serving_session_with_game() -> (Arc<HookedStore>, ManualClock, Arc<SessionService>, String)
{
    let store = Arc::new(HookedStore::new(MemoryStore::new()));
    let clock = ManualClock::at(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    let session = Arc::new(SessionService::new(
        store.clone(),
        SessionConfig {
            clock: clock.wall_clock(),
            pulse: Some(PulseConfig::default()),
            ..SessionConfig::default()
        },
    ));
    session.pulse().await.expect("the first pulse");
    let game = session
        .create_game(Request::new(pb::CreateGameRequest {
            south_player: "alice".into(),
            north_player: "bob".into(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner()
        .game_id;
    (store, clock, session, game)
}

#[tokio::test(start_paused = true)]
async fn a_store_that_stops_answering_is_lost_within_the_pulse_bound_and_found_again() {
    let (store, _clock, session, game) = serving_session_with_game().await;
    let pulse = PulseConfig::default();
    let lost = session.store_lost();
    assert!(!*lost.borrow(), "a store that answers is not lost");
    let mut stream = session
        .watch_game(Request::new(pb::WatchGameRequest {
            game_id: game.clone(),
            from_seq: 1,
            with_status: false,
        }))
        .await
        .unwrap()
        .into_inner();
    let first = stream.next().await.expect("the log's first event");
    assert!(first.is_ok(), "{first:?}");

    // A resignation reaches the store, which stops answering: its append and the pulse wait.
    store.open.send_replace(false);
    let resigning = tokio::spawn({
        let session = Arc::clone(&session);
        let game = game.clone();
        async move { session.resign(resign(&game, "r1")).await }
    });
    while store.appends_started.load(Ordering::SeqCst) == 0 {
        store.append_started.notified().await;
    }
    store.pulse_open.send_replace(false);
    let started = tokio::time::Instant::now();
    let failed = session.pulse().await;
    assert!(failed.is_err(), "a pulse the store never answers fails");
    assert_eq!(
        started.elapsed(),
        pulse.rule.outage_after / 2,
        "given up after half the outage threshold"
    );
    assert!(*lost.borrow(), "lost from the failed pulse on");

    // The call under way is given up, a new one refused at once, the stream ends: all retriable.
    let given_up = tokio::time::timeout(Duration::from_secs(60), resigning)
        .await
        .expect("given up, not left waiting on the store")
        .unwrap()
        .expect_err("given up");
    assert_store_unavailable(&given_up, "the resignation under way");
    let at = tokio::time::Instant::now();
    let refused = session.get_game(get(&game)).await.expect_err("refused");
    assert_store_unavailable(&refused, "a call while lost");
    assert_eq!(at.elapsed(), Duration::ZERO, "refused without waiting");
    loop {
        match stream
            .next()
            .await
            .expect("the stream ends with an error, not silently")
        {
            Ok(_) => continue,
            Err(status) => {
                assert_store_unavailable(&status, "the watched game's stream");
                break;
            }
        }
    }

    // The store answers again: the next pulse finds it, and the retry of the resignation (same
    // key) is applied, once.
    store.pulse_open.send_replace(true);
    store.open.send_replace(true);
    session
        .pulse()
        .await
        .expect("the pulse reaches the store again");
    assert!(!*lost.borrow(), "found again");
    let applied = session
        .resign(resign(&game, "r1"))
        .await
        .unwrap()
        .into_inner();
    let again = session
        .resign(resign(&game, "r1"))
        .await
        .unwrap()
        .into_inner();
    let (applied, again) = (applied.result.unwrap(), again.result.unwrap());
    assert!(
        !applied.replayed,
        "the given-up append had not committed: applied now"
    );
    assert!(
        again.replayed,
        "and once: the next retry is its answer again"
    );
    assert_eq!(
        (applied.version, applied.events),
        (again.version, again.events)
    );
    let view = session
        .get_game(get(&game))
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    assert_eq!(view.phase, pb::Phase::Ended as i32);
}

/// A session whose pulse cannot reach the store for 10 s (bounded pulses every few seconds fail)
/// and then answers; `whole_service` says whether the store's clock moved with it (the store
/// then finds the service's pulse row stale and records an outage) or not (other processes kept
/// it fresh: the loss was this process's alone). Returns the session, a game, how long it was
/// lost, and the clock.
async fn lost_for_ten_seconds(
    whole_service: bool,
) -> (Arc<SessionService>, String, Duration, ManualClock) {
    let (store, clock, session, game) = serving_session_with_game().await;
    let began = tokio::time::Instant::now();
    store.pulse_open.send_replace(false);
    store.open.send_replace(false);
    assert!(session.pulse().await.is_err(), "the store does not answer");
    tokio::time::advance(Duration::from_secs(10)).await;
    assert!(session.pulse().await.is_err(), "still not");
    let loss = began.elapsed();
    if whole_service {
        clock.advance(loss);
    }
    store.pulse_open.send_replace(true);
    store.open.send_replace(true);
    let found = session.pulse().await.expect("the store answers again");
    assert_eq!(
        found.is_some(),
        whole_service,
        "an outage is recorded only when nobody kept the service's pulse"
    );
    (session, game, loss, clock)
}

/// A process that lost the store while the others kept serving holds off for as long again as
/// the loss (plus a 2 s margin) after its pulse answers: every call is still refused, retriable,
/// and its health stays NOT_SERVING, so its callers keep using the other hosts while its
/// connections left over from the loss recover. Then the next pulse serves again.
#[tokio::test(start_paused = true)]
async fn a_loss_of_this_process_alone_is_held_off_for_as_long_again() {
    let (session, game, loss, _clock) = lost_for_ten_seconds(false).await;
    let lost = session.store_lost();
    let hold = loss + Duration::from_secs(2);
    assert!(*lost.borrow(), "held off right after the store answered");
    let refused = session.get_game(get(&game)).await.expect_err("refused");
    assert_store_unavailable(&refused, "a call while held off");

    tokio::time::advance(hold - Duration::from_millis(500)).await;
    session.pulse().await.expect("the store answers");
    assert!(*lost.borrow(), "still held off 0.5 s before the hold ends");
    assert_store_unavailable(
        &session.get_game(get(&game)).await.expect_err("refused"),
        "a call just before the hold ends",
    );

    tokio::time::advance(Duration::from_secs(1)).await;
    session.pulse().await.expect("the store answers");
    assert!(!*lost.borrow(), "serving once the hold is over");
    session
        .get_game(get(&game))
        .await
        .expect("served after the hold");
}

/// When the whole service could not reach the store (the pulse records an outage and moves the
/// running deadlines for it), nobody else served meanwhile: the first pulse that answers serves
/// again at once, so no time is held off that the players' clocks were not given back.
#[tokio::test(start_paused = true)]
async fn a_loss_of_the_whole_service_ends_with_the_first_pulse_that_answers() {
    let (session, game, _loss, _clock) = lost_for_ten_seconds(true).await;
    assert!(!*session.store_lost().borrow(), "serving at once");
    session
        .get_game(get(&game))
        .await
        .expect("served right after the outage");
}

/// Once the store is lost and this process's last pulse is stale, calls are refused at once:
/// none of them pulses on its own. Before, every call waited for a pulse of its own, one after
/// another, each waiting out the pulse's bound, so calls queued at a host cut from its database
/// for seconds each, past their deadlines.
#[tokio::test(start_paused = true)]
async fn calls_while_lost_are_refused_without_pulsing_one_after_another() {
    let (store, clock, session, game) = serving_session_with_game().await;
    store.pulse_open.send_replace(false);
    store.open.send_replace(false);
    assert!(session.pulse().await.is_err(), "the store does not answer");
    // The last good pulse is now older than the outage threshold: a command would pulse first.
    clock.advance(Duration::from_secs(5));
    tokio::time::advance(Duration::from_secs(5)).await;

    let at = tokio::time::Instant::now();
    let calls: Vec<_> = (0..4)
        .map(|n| {
            let session = Arc::clone(&session);
            let game = game.clone();
            tokio::spawn(async move { session.resign(resign(&game, &format!("r{n}"))).await })
        })
        .collect();
    for call in calls {
        let refused = call.await.unwrap().expect_err("refused");
        assert_store_unavailable(&refused, "a command while the store is lost");
    }
    assert_eq!(
        at.elapsed(),
        Duration::ZERO,
        "refused at once, not after pulses of their own"
    );
}

/// A process holding off serves nobody, so its pulses meanwhile do not beat the service's pulse
/// row: if nobody else beats it during the hold (here the store's clock runs on and no other
/// process pulses), the first pulse after the hold finds the gap and records an outage, so the
/// time nobody served is given back to the players' clocks.
#[tokio::test(start_paused = true)]
async fn a_process_holding_off_does_not_keep_the_service_pulse_alive() {
    let (session, _game, loss, clock) = lost_for_ten_seconds(false).await;
    let lost = session.store_lost();
    let hold = loss + Duration::from_secs(2);
    let mut waited = Duration::ZERO;
    while waited < hold {
        tokio::time::advance(Duration::from_secs(1)).await;
        clock.advance(Duration::from_secs(1));
        waited += Duration::from_secs(1);
        let during = session.pulse().await.expect("the store answers");
        if *lost.borrow() {
            assert_eq!(during, None, "nothing is recorded while holding off");
        } else {
            assert!(
                during.is_some(),
                "the pulse that ends the hold finds nobody beat the row meanwhile"
            );
            return;
        }
    }
    tokio::time::advance(Duration::from_secs(1)).await;
    clock.advance(Duration::from_secs(1));
    let after = session.pulse().await.expect("the store answers");
    assert!(!*lost.borrow(), "serving after the hold");
    assert!(
        after.is_some(),
        "the first pulse after the hold records the time nobody served"
    );
}
