//! The conformance suite every [`MatchStore`] of `hidden-front-matchmaking` passes (memory and
//! Postgres), so the one-box mode behaves like production. Each check is a `pub async fn` taking
//! the store under test; [`match_store_tests!`](crate::match_store_tests) makes each its own
//! `#[tokio::test]`. Test support only (`publish = false`, a dev-dependency of the service): the
//! production library does not carry it.
//! Checks never sleep to synchronise: racing tasks start at a barrier, waits are timeouts.

use hidden_front_bot::Level;
use hidden_front_lifecycle::{FactBody, RatingChange as LifecycleRatingChange};
use hidden_front_matchmaking::glicko::Rating;
use hidden_front_matchmaking::policy::{
    EndedEffect, RatingIntegrity, handle_ended_game, requeue_ticket_id,
};
use hidden_front_matchmaking::store::*;
use hidden_front_rules::Side;
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Barrier;
use uuid::Uuid;

mod bulk;
pub use bulk::*;

/// A running check.
pub type CheckFuture = Pin<Box<dyn Future<Output = ()> + Send>>;
/// One check, applied to a store.
pub type Check = fn(Arc<dyn MatchStore>) -> CheckFuture;

/// How long a check waits for something that should happen promptly.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// Turns every check into a `#[tokio::test]` calling `$runner(name, check)`.
#[macro_export]
macro_rules! match_store_tests {
    (@tests $runner:path; $($check:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $check() {
                $runner(stringify!($check), |store| {
                    ::std::boxed::Box::pin($crate::$check(store))
                })
                .await;
            }
        )+
    };
    ($runner:path) => {
        $crate::match_store_tests!(@tests $runner;
            enqueue_is_idempotent_and_one_per_queue,
            cancel_only_waiting_tickets,
            expiry_marks_and_tells,
            racing_pairings_pair_each_ticket_once,
            priority_tickets_come_first,
            complete_match_tells_both_once,
            invites_accept_cancel_expire,
            ended_games_are_handled_once,
            early_ends_and_games_past_the_pair_cap_are_unrated,
            seat_lost_requeues_the_other_player,
            ended_game_plans_are_persisted_as_given,
            computer_games_are_leased,
            computer_games_keep_every_level,
            feed_cursor_moves_forward_only,
            lobby_wakeups_arrive,
            bulks_are_stored_whole_and_retried_by_content,
            racing_creations_of_one_bulk_store_it_once,
            bulk_matches_are_due_at_their_start_only,
            cancelled_bulks_never_start,
            a_bulk_game_keeps_its_outcome_and_rating,
            tournaments_are_stored_retried_and_finished_once,
            entrants_change_one_at_a_time,
            tournament_rounds_are_read_together_and_ended_ones_kept,
        );
    };
}

/// A player id no other check uses.
pub fn player(name: &str) -> String {
    format!("{name}-{}", Uuid::new_v4().simple())
}

/// A queue of its own (the time control name is shared; the rules are the default set).
pub fn queue(rated: bool) -> Queue {
    Queue {
        rules: "hidden-front".into(),
        time_control: "online".into(),
        rated,
    }
}

/// A waiting ticket.
pub fn ticket(player: &str, id: &str, queue: &Queue, enqueued_ms: u64, expires_ms: u64) -> Ticket {
    Ticket {
        player: player.into(),
        ticket_id: id.into(),
        queue: queue.clone(),
        state: TicketState::Waiting,
        priority: false,
        rating: 1500.0,
        enqueued_ms,
        expires_ms,
        match_id: None,
        game_id: None,
    }
}

fn pair_in_order(waiting: &[Ticket]) -> Vec<(usize, usize)> {
    (0..waiting.len() / 2).map(|i| (2 * i, 2 * i + 1)).collect()
}

/// Enqueue twice with one id: one ticket; a second id in the same queue is refused; another
/// queue is fine.
pub async fn enqueue_is_idempotent_and_one_per_queue(store: Arc<dyn MatchStore>) {
    let p = player("ann");
    let q = queue(false);
    let first = store.enqueue(ticket(&p, "t1", &q, 1, 1_000)).await.unwrap();
    let again = store.enqueue(ticket(&p, "t1", &q, 2, 2_000)).await.unwrap();
    assert_eq!(first, again, "a retry returns the stored ticket");
    assert_eq!(again.enqueued_ms, 1);
    let second = store.enqueue(ticket(&p, "t2", &q, 3, 3_000)).await;
    assert!(
        matches!(&second, Err(MatchError::AlreadyExists(_, m)) if m.contains("t1")),
        "{second:?}"
    );
    store
        .enqueue(ticket(&p, "t3", &queue(true), 3, 3_000))
        .await
        .expect("another queue takes a ticket");
    assert_eq!(store.ticket(&p, "t1").await.unwrap(), Some(first));
    assert_eq!(store.ticket(&p, "nope").await.unwrap(), None);
}

/// Cancelling: waiting becomes cancelled (twice is fine); then a new ticket is allowed; a
/// matched ticket cannot be cancelled; an unknown one is not found.
pub async fn cancel_only_waiting_tickets(store: Arc<dyn MatchStore>) {
    let (a, b) = (player("a"), player("b"));
    let q = queue(false);
    store
        .enqueue(ticket(&a, "t", &q, 1, u64::MAX / 2))
        .await
        .unwrap();
    let cancelled = store.cancel_ticket(&a, "t").await.unwrap();
    assert_eq!(cancelled.state, TicketState::Cancelled);
    assert_eq!(
        store.cancel_ticket(&a, "t").await.unwrap().state,
        TicketState::Cancelled
    );
    store
        .enqueue(ticket(&a, "t2", &q, 2, u64::MAX / 2))
        .await
        .unwrap();
    store
        .enqueue(ticket(&b, "t", &q, 3, u64::MAX / 2))
        .await
        .unwrap();
    let made = store.pair(&q, 10, &pair_in_order).await.unwrap();
    assert_eq!(made.len(), 1);
    let refused = store.cancel_ticket(&a, "t2").await;
    assert!(
        matches!(refused, Err(MatchError::FailedPrecondition(..))),
        "{refused:?}"
    );
    assert!(matches!(
        store.cancel_ticket(&a, "missing").await,
        Err(MatchError::NotFound(..))
    ));
}

/// Expiry turns due tickets and invites expired, each with a lobby event; others stay.
pub async fn expiry_marks_and_tells(store: Arc<dyn MatchStore>) {
    let (a, b) = (player("a"), player("b"));
    let q = queue(false);
    store.enqueue(ticket(&a, "due", &q, 1, 100)).await.unwrap();
    store
        .enqueue(ticket(&b, "later", &q, 1, 10_000))
        .await
        .unwrap();
    let code = format!("C{}", &Uuid::new_v4().simple().to_string()[..5]).to_uppercase();
    store
        .create_invite(invite(&code, &a, "i", 100))
        .await
        .unwrap();
    let (tickets, invites) = store.expire(100).await.unwrap();
    assert_eq!(
        tickets.iter().map(|t| &t.ticket_id).collect::<Vec<_>>(),
        ["due"]
    );
    assert_eq!(invites.iter().map(|i| &i.code).collect::<Vec<_>>(), [&code]);
    assert_eq!(
        store.ticket(&a, "due").await.unwrap().unwrap().state,
        TicketState::Expired
    );
    assert_eq!(
        store.ticket(&b, "later").await.unwrap().unwrap().state,
        TicketState::Waiting
    );
    let events = store.lobby_events(&a, 0, 10).await.unwrap();
    let kinds: Vec<_> = events.iter().map(|e| e.kind.clone()).collect();
    assert!(kinds.contains(&LobbyEventKind::TicketExpired {
        ticket_id: "due".into()
    }));
    assert!(kinds.contains(&LobbyEventKind::InviteExpired { code: code.clone() }));
    assert!(store.lobby_events(&b, 0, 10).await.unwrap().is_empty());
    // An expired ticket is not paired, and expiring again does nothing.
    assert!(store.expire(100).await.unwrap().0.is_empty());
}

/// Eight tasks pair one queue of 200 tickets at once: every ticket is matched exactly once.
pub async fn racing_pairings_pair_each_ticket_once(store: Arc<dyn MatchStore>) {
    let q = Queue {
        rules: "hidden-front".into(),
        time_control: format!("race-{}", Uuid::new_v4().simple()),
        rated: false,
    };
    let players: Vec<String> = (0..200).map(|i| player(&format!("p{i}"))).collect();
    for (i, p) in players.iter().enumerate() {
        store
            .enqueue(ticket(p, "t", &q, i as u64, u64::MAX / 2))
            .await
            .unwrap();
    }
    let barrier = Arc::new(Barrier::new(8));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (store, q, barrier) = (store.clone(), q.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut made = Vec::new();
            for _ in 0..10 {
                made.extend(store.pair(&q, 1_000, &pair_in_order).await.unwrap());
            }
            made
        }));
    }
    let mut seen = HashSet::new();
    let mut matches = 0;
    for task in tasks {
        for (m, south, north) in tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .unwrap()
            .unwrap()
        {
            matches += 1;
            for t in [&south, &north] {
                assert!(seen.insert(t.player.clone()), "{} paired twice", t.player);
                assert_eq!(t.match_id, Some(m.match_id));
            }
        }
    }
    assert_eq!(matches, 100, "every ticket is paired");
    for p in &players {
        assert_eq!(
            store.ticket(p, "t").await.unwrap().unwrap().state,
            TicketState::Matched
        );
    }
}

/// Priority tickets are handed to the pairer first, then by age.
pub async fn priority_tickets_come_first(store: Arc<dyn MatchStore>) {
    let q = Queue {
        rules: "hidden-front".into(),
        time_control: format!("prio-{}", Uuid::new_v4().simple()),
        rated: false,
    };
    let (old, young, vip) = (player("old"), player("young"), player("vip"));
    store
        .enqueue(ticket(&old, "t", &q, 1, u64::MAX / 2))
        .await
        .unwrap();
    store
        .enqueue(ticket(&young, "t", &q, 2, u64::MAX / 2))
        .await
        .unwrap();
    let mut priority = ticket(&vip, "t", &q, 3, u64::MAX / 2);
    priority.priority = true;
    store.enqueue(priority).await.unwrap();
    let order = std::sync::Mutex::new(Vec::new());
    let record = |waiting: &[Ticket]| {
        *order.lock().unwrap() = waiting.iter().map(|t| t.player.clone()).collect();
        vec![(0, 1)]
    };
    let made = store.pair(&q, 10, &record).await.unwrap();
    assert_eq!(
        *order.lock().unwrap(),
        vec![vip.clone(), old.clone(), young.clone()]
    );
    assert_eq!(made[0].0.south_player, vip);
    assert_eq!(made[0].0.north_player, old);
    assert_eq!(
        store.ticket(&young, "t").await.unwrap().unwrap().state,
        TicketState::Waiting
    );
}

/// Completing a match records the game and tells both players once; a retry changes nothing; a
/// different game is refused; pending matches are those without a game.
pub async fn complete_match_tells_both_once(store: Arc<dyn MatchStore>) {
    let q = Queue {
        rules: "hidden-front".into(),
        time_control: format!("done-{}", Uuid::new_v4().simple()),
        rated: false,
    };
    let (a, b) = (player("a"), player("b"));
    store
        .enqueue(ticket(&a, "ta", &q, 1, u64::MAX / 2))
        .await
        .unwrap();
    store
        .enqueue(ticket(&b, "tb", &q, 2, u64::MAX / 2))
        .await
        .unwrap();
    let (m, ..) = store.pair(&q, 10, &pair_in_order).await.unwrap().remove(0);
    assert!(
        store
            .pending_matches(11)
            .await
            .unwrap()
            .iter()
            .any(|p| p.match_id == m.match_id)
    );
    assert!(
        !store
            .pending_matches(10)
            .await
            .unwrap()
            .iter()
            .any(|p| p.match_id == m.match_id)
    );
    let game = Uuid::now_v7();
    store.complete_match(m.match_id, game, 20).await.unwrap();
    store.complete_match(m.match_id, game, 21).await.unwrap();
    assert!(matches!(
        store.complete_match(m.match_id, Uuid::now_v7(), 22).await,
        Err(MatchError::FailedPrecondition(..))
    ));
    assert!(
        !store
            .pending_matches(u64::MAX / 2)
            .await
            .unwrap()
            .iter()
            .any(|p| p.match_id == m.match_id)
    );
    let for_a = store.lobby_events(&a, 0, 10).await.unwrap();
    assert_eq!(for_a.len(), 1, "{for_a:?}");
    assert_eq!(
        for_a[0].kind,
        LobbyEventKind::MatchFound {
            game_id: game,
            seat: Side::South,
            opponent: b.clone(),
            ticket_id: Some("ta".into()),
            invite_code: None,
            bulk_id: None,
        }
    );
    let for_b = store.lobby_events(&b, 0, 10).await.unwrap();
    assert_eq!(for_b.len(), 1);
    assert!(matches!(
        &for_b[0].kind,
        LobbyEventKind::MatchFound {
            seat: Side::North,
            ..
        }
    ));
    assert!(
        store
            .lobby_events(&b, for_b[0].seq, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.ticket(&a, "ta").await.unwrap().unwrap().game_id,
        Some(game)
    );
}

fn invite(code: &str, player: &str, id: &str, expires_ms: u64) -> Invite {
    Invite {
        code: code.into(),
        player: player.into(),
        invite_id: id.into(),
        rules: "hidden-front".into(),
        time_control: "relaxed".into(),
        state: InviteState::Open,
        expires_ms,
        match_id: None,
        accepted_by: None,
        game_id: None,
    }
}

fn fresh_code() -> String {
    Uuid::new_v4().simple().to_string()[..6].to_uppercase()
}

/// Invites: idempotent creation, taken codes refused, own invite not acceptable, acceptance once
/// (a retry by the acceptor returns the same match), expired and cancelled ones refused.
pub async fn invites_accept_cancel_expire(store: Arc<dyn MatchStore>) {
    let (host, guest, other) = (player("host"), player("guest"), player("other"));
    let code = fresh_code();
    let created = store
        .create_invite(invite(&code, &host, "i1", 1_000))
        .await
        .unwrap();
    let retried = store
        .create_invite(invite(&fresh_code(), &host, "i1", 1_000))
        .await
        .unwrap();
    assert_eq!(retried.code, code, "a retry returns the first invite");
    assert_eq!(created, retried);
    assert!(matches!(
        store
            .create_invite(invite(&code, &other, "i9", 1_000))
            .await,
        Err(MatchError::AlreadyExists(..))
    ));
    assert!(matches!(
        store.accept_invite(&code, &host, 10).await,
        Err(MatchError::FailedPrecondition(..))
    ));
    let m = store.accept_invite(&code, &guest, 10).await.unwrap();
    assert_eq!(
        (m.south_player.as_str(), m.north_player.as_str()),
        (host.as_str(), guest.as_str())
    );
    assert_eq!(m.kind, MatchKind::Invite);
    assert_eq!(
        store
            .accept_invite(&code, &guest, 11)
            .await
            .unwrap()
            .match_id,
        m.match_id
    );
    assert!(matches!(
        store.accept_invite(&code, &other, 12).await,
        Err(MatchError::FailedPrecondition(..))
    ));
    assert!(matches!(
        store.cancel_invite(&host, &code).await,
        Err(MatchError::FailedPrecondition(..))
    ));
    // Expired (by time, before any sweep) and cancelled invites cannot be accepted.
    let late = fresh_code();
    store
        .create_invite(invite(&late, &host, "i2", 100))
        .await
        .unwrap();
    assert!(matches!(
        store.accept_invite(&late, &guest, 100).await,
        Err(MatchError::FailedPrecondition(_, m)) if m.contains("expired")
    ));
    let withdrawn = fresh_code();
    store
        .create_invite(invite(&withdrawn, &host, "i3", 10_000))
        .await
        .unwrap();
    assert!(matches!(
        store.cancel_invite(&guest, &withdrawn).await,
        Err(MatchError::NotFound(..))
    ));
    assert_eq!(
        store.cancel_invite(&host, &withdrawn).await.unwrap().state,
        InviteState::Cancelled
    );
    assert!(matches!(
        store.accept_invite(&withdrawn, &guest, 10).await,
        Err(MatchError::FailedPrecondition(_, m)) if m.contains("cancelled")
    ));
    assert!(matches!(
        store.accept_invite("ZZZZZZ", &guest, 10).await,
        Err(MatchError::NotFound(..))
    ));
}

/// A rated game between `a` (south) and `b` (north), made from their tickets "t" (a queue of its
/// own).
async fn rated_game(store: &Arc<dyn MatchStore>, a: &str, b: &str) -> Uuid {
    game_with_tickets(store, a, b, "t", true).await
}

/// A rated game's end moves both ratings once, even when eight tasks handle it at once; a game
/// matchmaking did not make changes nothing.
pub async fn ended_games_are_handled_once(store: Arc<dyn MatchStore>) {
    let (a, b) = (player("a"), player("b"));
    let game = rated_game(&store, &a, &b).await;
    let ended = EndedGame {
        game_id: game,
        south_player: a.clone(),
        north_player: b.clone(),
        result: EndedResult::Won(Side::South),
        plies: 60,
        decided_on_board: true,
    };
    let barrier = Arc::new(Barrier::new(8));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (store, ended, barrier) = (store.clone(), ended.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            handle_ended_game(&*store, &ended, 100, 1_000, &RatingIntegrity::default())
                .await
                .unwrap()
        }));
    }
    let mut fresh = 0;
    for task in tasks {
        let effect = tokio::time::timeout(DEADLINE, task).await.unwrap().unwrap();
        if !effect.already_handled {
            fresh += 1;
            assert!(effect.ratings.is_some());
        }
    }
    assert_eq!(fresh, 1, "handled exactly once");
    let (expected_a, expected_b) =
        hidden_front_matchmaking::glicko::settle(Rating::default(), Rating::default(), 1.0);
    let (ra, ga) = store.rating(&a).await.unwrap();
    let (rb, gb) = store.rating(&b).await.unwrap();
    assert_eq!((ga, gb), (1, 1));
    assert!((ra.rating - expected_a.rating).abs() < 1e-9, "{ra:?}");
    assert!((rb.rating - expected_b.rating).abs() < 1e-9, "{rb:?}");
    let stranger = EndedGame {
        game_id: Uuid::now_v7(),
        ..ended
    };
    let effect = handle_ended_game(&*store, &stranger, 100, 1_000, &RatingIntegrity::default())
        .await
        .unwrap();
    assert_eq!(effect, EndedEffect::default());
    assert_eq!(store.rating(&a).await.unwrap().1, 1);
}

/// A rated game between `south` and `north` (a queue of its own, tickets of their own), made.
async fn rated_game_between(store: &Arc<dyn MatchStore>, south: &str, north: &str) -> Uuid {
    game_with_tickets(
        store,
        south,
        north,
        &Uuid::new_v4().simple().to_string(),
        true,
    )
    .await
}

/// An unrated game between `south` and `north` (a queue of its own, tickets of their own), made.
async fn casual_game_between(store: &Arc<dyn MatchStore>, south: &str, north: &str) -> Uuid {
    game_with_tickets(
        store,
        south,
        north,
        &Uuid::new_v4().simple().to_string(),
        false,
    )
    .await
}

/// A game between `south` and `north` in a queue of its own, rated or not, made from their
/// tickets `ticket_id`.
async fn game_with_tickets(
    store: &Arc<dyn MatchStore>,
    south: &str,
    north: &str,
    ticket_id: &str,
    rated: bool,
) -> Uuid {
    let q = Queue {
        rules: "hidden-front".into(),
        time_control: format!("queue-{}", Uuid::new_v4().simple()),
        rated,
    };
    store
        .enqueue(ticket(south, ticket_id, &q, 1, u64::MAX / 2))
        .await
        .unwrap();
    store
        .enqueue(ticket(north, ticket_id, &q, 2, u64::MAX / 2))
        .await
        .unwrap();
    let (m, ..) = store.pair(&q, 10, &pair_in_order).await.unwrap().remove(0);
    let game = Uuid::now_v7();
    store.complete_match(m.match_id, game, 10).await.unwrap();
    game
}

/// Rating integrity (docs/matchmaking.md): a rated game resigned at ply 1 changes no rating;
/// of the rated games between the same two players (either seat) handled within the pair
/// window, those past the cap change none either (the short one counts toward it: it was a rated
/// game between them), whichever seat each had; once the window has passed, a game counts again,
/// and unrated games between them count toward no cap.
pub async fn early_ends_and_games_past_the_pair_cap_are_unrated(store: Arc<dyn MatchStore>) {
    let rules = RatingIntegrity {
        min_plies: 10,
        pair_cap: 2,
        pair_window: Duration::from_secs(100),
    };
    let (a, b) = (player("a"), player("b"));
    let end = |game_id, south: &str, north: &str, plies| EndedGame {
        game_id,
        south_player: south.to_owned(),
        north_player: north.to_owned(),
        result: EndedResult::Won(Side::South),
        plies,
        decided_on_board: false,
    };
    let games =
        |store: Arc<dyn MatchStore>, a: String| async move { store.rating(&a).await.unwrap().1 };
    let resigned = rated_game_between(&store, &a, &b).await;
    let effect = handle_ended_game(&*store, &end(resigned, &a, &b, 1), 1_000, 0, &rules)
        .await
        .unwrap();
    assert!(
        !effect.already_handled && effect.ratings.is_none(),
        "resigned at ply 1"
    );
    assert_eq!(games(store.clone(), a.clone()).await, 0);
    let second = rated_game_between(&store, &a, &b).await;
    let effect = handle_ended_game(&*store, &end(second, &a, &b, 60), 2_000, 0, &rules)
        .await
        .unwrap();
    assert!(
        effect.ratings.is_some(),
        "the second rated game between them counts"
    );
    assert_eq!(games(store.clone(), a.clone()).await, 1);
    let third = rated_game_between(&store, &b, &a).await;
    let effect = handle_ended_game(&*store, &end(third, &b, &a, 60), 3_000, 0, &rules)
        .await
        .unwrap();
    assert!(
        !effect.already_handled && effect.ratings.is_none(),
        "the third, seats swapped, is past the cap of 2"
    );
    assert_eq!(games(store.clone(), b.clone()).await, 1);
    let fourth = rated_game_between(&store, &a, &b).await;
    let effect = handle_ended_game(&*store, &end(fourth, &a, &b, 60), 4_000, 0, &rules)
        .await
        .unwrap();
    assert!(
        effect.ratings.is_none(),
        "the fourth, seated as the first two, is past the cap too"
    );
    assert_eq!(games(store.clone(), a.clone()).await, 1);
    let later = rated_game_between(&store, &a, &b).await;
    let effect = handle_ended_game(&*store, &end(later, &a, &b, 60), 200_000, 0, &rules)
        .await
        .unwrap();
    assert!(effect.ratings.is_some(), "a day later it counts again");
    assert_eq!(games(store.clone(), a.clone()).await, 2);
    for at in [201_000, 202_000] {
        let casual = casual_game_between(&store, &a, &b).await;
        handle_ended_game(&*store, &end(casual, &a, &b, 60), at, 0, &rules)
            .await
            .unwrap();
    }
    let after_casual = rated_game_between(&store, &a, &b).await;
    let effect = handle_ended_game(&*store, &end(after_casual, &a, &b, 60), 203_000, 0, &rules)
        .await
        .unwrap();
    assert!(
        effect.ratings.is_some(),
        "two unrated games between them count toward no cap: one rated game in the window"
    );
    assert_eq!(games(store.clone(), a.clone()).await, 3);
}

/// A queue game cancelled because north lost its seat: south is queued again with priority
/// (replacing a ticket it queued meanwhile), told on its lobby, and no rating moves.
pub async fn seat_lost_requeues_the_other_player(store: Arc<dyn MatchStore>) {
    let (a, b) = (player("a"), player("b"));
    let game = rated_game(&store, &a, &b).await;
    let q_key = store.ticket(&a, "t").await.unwrap().unwrap().queue;
    store
        .enqueue(ticket(&a, "meanwhile", &q_key, 50, u64::MAX / 2))
        .await
        .unwrap();
    let ended = EndedGame {
        game_id: game,
        south_player: a.clone(),
        north_player: b.clone(),
        result: EndedResult::SeatLost(vec![Side::North]),
        plies: 0,
        decided_on_board: false,
    };
    let effect = handle_ended_game(&*store, &ended, 100, 5_000, &RatingIntegrity::default())
        .await
        .unwrap();
    assert!(effect.ratings.is_none());
    assert_eq!(effect.requeued.len(), 1);
    let id = requeue_ticket_id(game);
    let t = store
        .ticket(&a, &id)
        .await
        .unwrap()
        .expect("requeued ticket");
    assert!(t.priority && t.state == TicketState::Waiting && t.expires_ms == 5_000);
    assert_eq!(t.queue, q_key);
    assert_eq!(
        store.ticket(&a, "meanwhile").await.unwrap().unwrap().state,
        TicketState::Cancelled
    );
    assert!(
        store.ticket(&b, &id).await.unwrap().is_none(),
        "the seat's loser is not requeued"
    );
    let events = store.lobby_events(&a, 0, 10).await.unwrap();
    assert!(events.iter().any(|e| e.kind
        == LobbyEventKind::Requeued {
            ticket_id: id.clone(),
            cancelled_game_id: game
        }));
    assert_eq!(store.rating(&a).await.unwrap().1, 0);
    assert!(
        handle_ended_game(&*store, &ended, 101, 5_000, &RatingIntegrity::default())
            .await
            .unwrap()
            .already_handled
    );
}

/// A store hands the end-of-game policy what it holds (the match, both stored ratings), writes
/// the plan it gets back as it is, and never asks again for a game it applied; for a game
/// matchmaking did not make it holds nothing.
pub async fn ended_game_plans_are_persisted_as_given(store: Arc<dyn MatchStore>) {
    let (a, b) = (player("a"), player("b"));
    let game = rated_game(&store, &a, &b).await;
    let q = store.ticket(&a, "t").await.unwrap().unwrap().queue;
    let rating = Rating {
        rating: 1234.5,
        deviation: 99.0,
        volatility: 0.07,
    };
    let mut requeue = ticket(&b, "planned", &q, 100, 9_000);
    requeue.priority = true;
    let told = LobbyEventKind::InviteExpired {
        code: "PLANNED".into(),
    };
    let plan = EndOfGamePlan {
        ratings: Some([
            RatingChange {
                player: a.clone(),
                rating,
                games: 7,
            },
            RatingChange {
                player: b.clone(),
                rating: Rating::default(),
                games: 3,
            },
        ]),
        requeue: vec![requeue.clone()],
        events: vec![(a.clone(), told.clone())],
        // Recorded in the lifecycle outbox with the plan (the Postgres store in its transaction).
        facts: vec![FactBody::RatingChanged {
            rules: q.rules.clone(),
            changes: vec![LifecycleRatingChange {
                player: a.clone(),
                old_rating: Rating::default().rating,
                new_rating: rating.rating,
            }],
        }],
        outcome: Some(GameOutcome::NorthWon),
    };
    let seen = std::sync::Mutex::new(None);
    let decide = |held: Option<&HeldMatch>| {
        *seen.lock().unwrap() = Some(held.cloned());
        plan.clone()
    };
    let applied = store.apply_ended_game(game, 100, 0, &decide).await.unwrap();
    assert_eq!(applied, Some(plan.clone()));
    let held = seen
        .lock()
        .unwrap()
        .take()
        .expect("the policy was asked")
        .expect("the store holds the match");
    assert_eq!(held.the_match.game_id, Some(game));
    assert_eq!(
        (
            held.the_match.south_player.as_str(),
            held.the_match.north_player.as_str()
        ),
        (a.as_str(), b.as_str())
    );
    assert_eq!(held.south_rating, (Rating::default(), 0));
    assert_eq!(held.north_rating, (Rating::default(), 0));
    assert_eq!(store.rating(&a).await.unwrap(), (rating, 7));
    assert_eq!(store.rating(&b).await.unwrap(), (Rating::default(), 3));
    assert_eq!(store.ticket(&b, "planned").await.unwrap(), Some(requeue));
    let events = store.lobby_events(&a, 0, 10).await.unwrap();
    assert!(events.iter().any(|e| e.kind == told), "{events:?}");
    let asked_again = std::sync::atomic::AtomicBool::new(false);
    let again = |_: Option<&HeldMatch>| {
        asked_again.store(true, std::sync::atomic::Ordering::SeqCst);
        EndOfGamePlan::default()
    };
    assert_eq!(
        store.apply_ended_game(game, 101, 0, &again).await.unwrap(),
        None
    );
    assert!(!asked_again.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(
        store.rating(&a).await.unwrap(),
        (rating, 7),
        "nothing moved"
    );
    let stranger = |held: Option<&HeldMatch>| {
        assert!(held.is_none(), "{held:?}");
        EndOfGamePlan::default()
    };
    assert_eq!(
        store
            .apply_ended_game(Uuid::now_v7(), 102, 0, &stranger)
            .await
            .unwrap(),
        Some(EndOfGamePlan::default())
    );
}

/// Computer games: a game at each level the computer has is stored and read back with it (a
/// store that keeps a list of its own, as a database check does, must follow a new level).
pub async fn computer_games_keep_every_level(store: Arc<dyn MatchStore>) {
    let p = player("leveller");
    for level in Level::ALL {
        let game = ComputerGame {
            game_id: Uuid::now_v7(),
            player: p.clone(),
            request_id: format!("level-{level}"),
            rules: "hidden-front".into(),
            side: Side::South,
            seed: 1,
            level,
        };
        assert_eq!(
            store.add_computer_game(game.clone()).await.unwrap(),
            game,
            "{level}"
        );
        assert_eq!(
            store
                .computer_game(&p, &game.request_id)
                .await
                .unwrap()
                .map(|g| g.level),
            Some(level)
        );
    }
}

/// Computer games: one claimant at a time; the lease holder renews; a lapsed lease is taken over;
/// a finished game is never claimed again; adding is idempotent per request.
pub async fn computer_games_are_leased(store: Arc<dyn MatchStore>) {
    let p = player("human");
    let game = ComputerGame {
        game_id: Uuid::now_v7(),
        player: p.clone(),
        request_id: "r1".into(),
        rules: "hidden-front".into(),
        side: Side::North,
        seed: 42,
        level: Level::Greedy,
    };
    assert_eq!(store.add_computer_game(game.clone()).await.unwrap(), game);
    // A retry answers the first request's game, its seed and its level.
    let retry = ComputerGame {
        seed: 7,
        level: Level::Search,
        ..game.clone()
    };
    assert_eq!(store.add_computer_game(retry).await.unwrap(), game);
    assert_eq!(
        store.computer_game(&p, "r1").await.unwrap(),
        Some(game.clone())
    );
    // Drain whatever other checks left claimable, until ours is found.
    let mut claimed = None;
    while let Some(g) = store
        .claim_computer_game("one", 1_000, 2_000)
        .await
        .unwrap()
    {
        if g.game_id == game.game_id {
            claimed = Some(g);
            break;
        }
    }
    assert_eq!(claimed, Some(game.clone()));
    assert!(
        store
            .claim_computer_game("two", 1_500, 2_500)
            .await
            .unwrap()
            .is_none_or(|g| g.game_id != game.game_id)
    );
    assert!(
        store
            .renew_computer_lease(game.game_id, "one", 3_000)
            .await
            .unwrap()
    );
    assert!(
        !store
            .renew_computer_lease(game.game_id, "two", 3_000)
            .await
            .unwrap()
    );
    let taken = store
        .claim_computer_game("two", 3_000, 4_000)
        .await
        .unwrap();
    assert_eq!(
        taken.map(|g| g.game_id),
        Some(game.game_id),
        "a lapsed lease is taken over"
    );
    assert!(
        !store
            .renew_computer_lease(game.game_id, "one", 5_000)
            .await
            .unwrap()
    );
    store.finish_computer_game(game.game_id).await.unwrap();
    assert!(
        !store
            .renew_computer_lease(game.game_id, "two", 5_000)
            .await
            .unwrap()
    );
    assert!(
        store
            .claim_computer_game("three", 9_000, 10_000)
            .await
            .unwrap()
            .is_none()
    );
}

/// The feed position only moves forward.
pub async fn feed_cursor_moves_forward_only(store: Arc<dyn MatchStore>) {
    assert_eq!(store.feed_cursor().await.unwrap(), 0);
    store.advance_feed(7).await.unwrap();
    store.advance_feed(3).await.unwrap();
    assert_eq!(store.feed_cursor().await.unwrap(), 7);
}

/// A wake-up names the player whose lobby got an event.
pub async fn lobby_wakeups_arrive(store: Arc<dyn MatchStore>) {
    let mut wakeups = store.lobby_wakeups().await.unwrap();
    let p = player("w");
    let q = queue(false);
    store.enqueue(ticket(&p, "t", &q, 1, 5)).await.unwrap();
    store.expire(5).await.unwrap();
    tokio::time::timeout(DEADLINE, async {
        loop {
            if wakeups.recv().await.unwrap() == p {
                return;
            }
        }
    })
    .await
    .expect("a wake-up for the player");
}
