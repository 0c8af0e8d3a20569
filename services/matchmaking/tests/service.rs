//! The matchmaking service end to end: real Postgres (a fresh database per test), a real session
//! service and real matchmaking services over loopback gRPC sockets.

mod common;

use common::*;
use hidden_front_matchmaking::policy::RatingIntegrity;
use hidden_front_matchmaking::{MatchmakingConfig, SessionClient};
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::matchmaking_service_client::MatchmakingServiceClient;
use hidden_front_store::{TimerKind, TimerStore};
use hidden_front_time::WallClock;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};
use tokio_stream::StreamExt;
use tonic::Code;
use tonic::transport::Channel;

const DEADLINE: Duration = Duration::from_secs(30);

type Client = MatchmakingServiceClient<Channel>;
type Lobby = tonic::Streaming<pb::WatchPlayerResponse>;

async fn watch(client: &mut Client, player: &str) -> Lobby {
    client
        .watch_player(pb::WatchPlayerRequest {
            player: player.into(),
            after_seq: 0,
        })
        .await
        .unwrap()
        .into_inner()
}

async fn next_event(lobby: &mut Lobby) -> pb::LobbyEvent {
    tokio::time::timeout(DEADLINE, lobby.next())
        .await
        .expect("a lobby event in time")
        .expect("the lobby stream stays open")
        .expect("no stream error")
        .event
        .unwrap()
}

async fn match_found(lobby: &mut Lobby) -> pb::MatchFound {
    match next_event(lobby).await.kind {
        Some(pb::lobby_event::Kind::MatchFound(found)) => found,
        other => panic!("expected MatchFound, got {other:?}"),
    }
}

fn queue(time_control: &str, rated: bool) -> pb::Queue {
    pb::Queue {
        rules: String::new(),
        time_control: time_control.into(),
        rated,
    }
}

async fn enqueue(client: &mut Client, player: &str, ticket: &str, q: pb::Queue) -> pb::Ticket {
    client
        .enqueue(pb::EnqueueRequest {
            player: player.into(),
            ticket_id: ticket.into(),
            queue: Some(q),
            ttl_seconds: 0,
        })
        .await
        .unwrap()
        .into_inner()
        .ticket
        .unwrap()
}

async fn get_ticket(client: &mut Client, player: &str, ticket: &str) -> pb::Ticket {
    client
        .get_ticket(pb::GetTicketRequest {
            player: player.into(),
            ticket_id: ticket.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .ticket
        .unwrap()
}

fn context(
    game: &str,
    side: pb::Side,
    key: &str,
    expected: Option<u64>,
) -> Option<pb::CommandContext> {
    Some(pb::CommandContext {
        game_id: game.into(),
        side: side as i32,
        idempotency_key: key.into(),
        expected_version: expected,
    })
}

async fn confirm(session: &mut SessionClient, game: &str, side: pb::Side) -> u64 {
    session
        .confirm_deployment(pb::ConfirmDeploymentRequest {
            context: context(game, side, &format!("confirm-{side:?}"), None),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap()
        .version
}

async fn rating(client: &mut Client, player: &str) -> pb::Rating {
    client
        .get_rating(pb::GetRatingRequest {
            player: player.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .rating
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_players_are_paired_and_both_told_on_their_streams() {
    let db = migrated_database().await;
    let mut session = session_on(&db).await;
    let mut mm = matchmaking(&db, session.clone(), fast_config()).await;
    let mut ann_lobby = watch(&mut mm.client, "ann").await;
    let mut bob_lobby = watch(&mut mm.client, "bob").await;

    let first = enqueue(&mut mm.client, "ann", "ann-1", queue("", false)).await;
    assert_eq!(first.queue.as_ref().unwrap().time_control, "online");
    assert_eq!(first.queue.as_ref().unwrap().rules, "hidden-front");
    let retried = enqueue(&mut mm.client, "ann", "ann-1", queue("", false)).await;
    assert_eq!(retried.ticket_id, first.ticket_id);
    assert_eq!(
        retried.enqueued_at_unix_ms, first.enqueued_at_unix_ms,
        "a retry is the same ticket"
    );
    let second = mm
        .client
        .enqueue(pb::EnqueueRequest {
            player: "ann".into(),
            ticket_id: "ann-2".into(),
            queue: Some(queue("online", false)),
            ttl_seconds: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(second.code(), Code::AlreadyExists, "{second:?}");
    enqueue(&mut mm.client, "bob", "bob-1", queue("online", false)).await;

    let ann = match_found(&mut ann_lobby).await;
    let bob = match_found(&mut bob_lobby).await;
    assert_eq!(ann.game_id, bob.game_id);
    assert_eq!(
        (ann.opponent.as_str(), bob.opponent.as_str()),
        ("bob", "ann")
    );
    assert_ne!(ann.seat, bob.seat);
    assert_eq!(ann.ticket_id, "ann-1");
    let game = session
        .get_game(pb::GetGameRequest {
            game_id: ann.game_id.clone(),
            viewer: pb::Viewer::Spectator as i32,
        })
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    let seated = if ann.seat == pb::Side::South as i32 {
        (game.south_player.as_str(), game.north_player.as_str())
    } else {
        (game.north_player.as_str(), game.south_player.as_str())
    };
    assert_eq!(seated, ("ann", "bob"));
    let ticket = get_ticket(&mut mm.client, "ann", "ann-1").await;
    assert_eq!(ticket.state, pb::TicketState::Matched as i32);
    assert_eq!(ticket.game_id, ann.game_id);
    // Resuming after the event sees nothing again; a fresh watch from 0 sees it again.
    let mut again = watch(&mut mm.client, "ann").await;
    assert_eq!(match_found(&mut again).await.game_id, ann.game_id);
    drop(mm);
    drop(db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_requests_are_refused_with_the_field_named() {
    let db = migrated_database().await;
    let session = session_on(&db).await;
    let mut mm = matchmaking_idle(&db, session, fast_config()).await;
    let cases = [
        (
            pb::EnqueueRequest {
                player: "".into(),
                ticket_id: "t".into(),
                queue: Some(queue("", false)),
                ttl_seconds: 0,
            },
            "player",
        ),
        (
            pb::EnqueueRequest {
                player: "p".into(),
                ticket_id: "".into(),
                queue: Some(queue("", false)),
                ttl_seconds: 0,
            },
            "ticket_id",
        ),
        (
            pb::EnqueueRequest {
                player: "p".into(),
                ticket_id: "t".into(),
                queue: None,
                ttl_seconds: 0,
            },
            "queue",
        ),
        (
            pb::EnqueueRequest {
                player: "p".into(),
                ticket_id: "t".into(),
                queue: Some(queue("blitz", false)),
                ttl_seconds: 0,
            },
            "queue.time_control",
        ),
        (
            pb::EnqueueRequest {
                player: "p".into(),
                ticket_id: "t".into(),
                queue: Some(pb::Queue {
                    rules: "chess".into(),
                    ..queue("", false)
                }),
                ttl_seconds: 0,
            },
            "queue.rules",
        ),
        (
            pb::EnqueueRequest {
                player: "p".into(),
                ticket_id: "t".into(),
                queue: Some(queue("", false)),
                ttl_seconds: 999_999,
            },
            "ttl_seconds",
        ),
        (
            pb::EnqueueRequest {
                player: "p".repeat(200),
                ticket_id: "t".into(),
                queue: Some(queue("", false)),
                ttl_seconds: 0,
            },
            "player",
        ),
    ];
    for (request, field) in cases {
        let status = mm.client.enqueue(request).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(status.message().contains(field), "{field}: {status:?}");
    }
    let status = mm
        .client
        .accept_invite(pb::AcceptInviteRequest {
            player: "p".into(),
            code: "not a code".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    let status = mm
        .client
        .get_ticket(pb::GetTicketRequest {
            player: "p".into(),
            ticket_id: "none".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    drop(mm);
    drop(db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelled_tickets_leave_and_unpaired_tickets_expire() {
    let db = migrated_database().await;
    let session = session_on(&db).await;
    let mut mm = matchmaking(&db, session, fast_config()).await;
    let mut cat_lobby = watch(&mut mm.client, "cat").await;
    // Two players in different queues: nobody is paired.
    mm.client
        .enqueue(pb::EnqueueRequest {
            player: "cat".into(),
            ticket_id: "short".into(),
            queue: Some(queue("relaxed", false)),
            ttl_seconds: 1,
        })
        .await
        .unwrap();
    enqueue(&mut mm.client, "dan", "dan-1", queue("online", true)).await;
    let cancelled = mm
        .client
        .cancel_ticket(pb::CancelTicketRequest {
            player: "dan".into(),
            ticket_id: "dan-1".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .ticket
        .unwrap();
    assert_eq!(cancelled.state, pb::TicketState::Cancelled as i32);
    match next_event(&mut cat_lobby).await.kind {
        Some(pb::lobby_event::Kind::TicketExpired(expired)) => {
            assert_eq!(expired.ticket_id, "short")
        }
        other => panic!("expected TicketExpired, got {other:?}"),
    }
    assert_eq!(
        get_ticket(&mut mm.client, "cat", "short").await.state,
        pb::TicketState::Expired as i32
    );
    assert_eq!(
        get_ticket(&mut mm.client, "dan", "dan-1").await.state,
        pb::TicketState::Cancelled as i32
    );
    // An expired ticket cannot be cancelled, and a new ticket in that queue is fine now.
    let status = mm
        .client
        .cancel_ticket(pb::CancelTicketRequest {
            player: "cat".into(),
            ticket_id: "short".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);
    enqueue(&mut mm.client, "cat", "cat-2", queue("relaxed", false)).await;
    drop(mm);
    drop(db);
}

async fn set_rating(db: &TestDatabase, player: &str, value: f64) {
    let pool = db.pool(1).await;
    sqlx::query("INSERT INTO mm_ratings (player, rating, deviation, volatility, games) VALUES ($1, $2, 80, 0.06, 10)")
        .bind(player)
        .bind(value)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

/// A round seats its matches together, not one after the other: here the session lets no
/// `CreateGame` through until two are in flight at once, so a round that seated its two matches
/// in turn would wait forever on the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_seats_its_matches_together() {
    let db = migrated_database().await;
    let store = hidden_front_store::postgres::PostgresStore::from_pool(db.pool(4).await);
    let service = hidden_front_session::SessionService::new(
        Arc::new(store),
        hidden_front_session::SessionConfig::default(),
    );
    let addr = serve_session_gated(service, Arc::new(tokio::sync::Barrier::new(2))).await;
    let session = SessionClient::new(channel(addr).into());
    let mut mm = matchmaking_idle(&db, session, fast_config()).await;
    let players = ["g1", "g2", "g3", "g4"];
    for player in players {
        enqueue(&mut mm.client, player, "t", queue("online", false)).await;
    }
    let made = tokio::time::timeout(DEADLINE, mm.service.pairing_round())
        .await
        .expect("the round's two creations went through together")
        .unwrap();
    assert_eq!(made, 2);
    for player in players {
        let ticket = get_ticket(&mut mm.client, player, "t").await;
        assert!(!ticket.game_id.is_empty(), "{player} is seated: {ticket:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rated_pairing_respects_the_window_and_widens_it_with_waiting() {
    let db = migrated_database().await;
    for (player, value) in [
        ("r1500", 1500.0),
        ("r1800", 1800.0),
        ("r1530", 1530.0),
        ("s1500", 1500.0),
    ] {
        set_rating(&db, player, value).await;
    }
    let session = session_on(&db).await;
    // Matchmaking's clock moves only by hand here.
    let clock_ms = Arc::new(AtomicU64::new(hidden_front_matchmaking::now_ms()));
    let config = MatchmakingConfig {
        window: hidden_front_matchmaking::pairing::RatingWindow {
            base: 50.0,
            growth_per_second: 100.0,
            max: 1000.0,
        },
        clock: {
            let clock_ms = clock_ms.clone();
            WallClock::from_fn(move || {
                std::time::UNIX_EPOCH
                    + std::time::Duration::from_millis(clock_ms.load(Ordering::SeqCst))
            })
        },
        ..fast_config()
    };
    let mut mm = matchmaking_idle(&db, session, config).await;
    let mut slow_lobby = watch(&mut mm.client, "r1800").await;
    for player in ["r1500", "r1800", "r1530"] {
        enqueue(&mut mm.client, player, "t", queue("online", true)).await;
    }
    // At once: 1500 and 1530 (30 apart) are paired; 1800 is 270+ from both and waits.
    assert_eq!(mm.service.pairing_round().await.unwrap(), 1);
    let state = |t: pb::Ticket| pb::TicketState::try_from(t.state).unwrap();
    assert_eq!(
        state(get_ticket(&mut mm.client, "r1500", "t").await),
        pb::TicketState::Matched
    );
    assert_eq!(
        state(get_ticket(&mut mm.client, "r1530", "t").await),
        pb::TicketState::Matched
    );
    assert_eq!(
        state(get_ticket(&mut mm.client, "r1800", "t").await),
        pb::TicketState::Waiting
    );
    // A newcomer 300 away: outside both windows at first (50), still outside after 2 s (250),
    // inside once both have waited 3 s (350).
    enqueue(&mut mm.client, "s1500", "t", queue("online", true)).await;
    assert_eq!(mm.service.pairing_round().await.unwrap(), 0);
    clock_ms.fetch_add(2_000, Ordering::SeqCst);
    assert_eq!(mm.service.pairing_round().await.unwrap(), 0);
    clock_ms.fetch_add(1_000, Ordering::SeqCst);
    assert_eq!(mm.service.pairing_round().await.unwrap(), 1);
    let found = match_found(&mut slow_lobby).await;
    assert_eq!(found.opponent, "s1500");
    drop(mm);
    drop(db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn invites_are_created_accepted_cancelled_and_expire() {
    let db = migrated_database().await;
    let session = session_on(&db).await;
    let config = MatchmakingConfig {
        invite_base_url: "https://play.example/i/".into(),
        ..fast_config()
    };
    let mut mm = matchmaking(&db, session, config).await;
    let mut host_lobby = watch(&mut mm.client, "host").await;
    let create = |id: &str| pb::CreateInviteRequest {
        player: "host".into(),
        invite_id: id.into(),
        rules: String::new(),
        time_control: String::new(),
    };
    let invite = mm
        .client
        .create_invite(create("i1"))
        .await
        .unwrap()
        .into_inner()
        .invite
        .unwrap();
    assert_eq!(invite.code.len(), 6);
    assert_eq!(
        invite.link,
        format!("https://play.example/i/{}", invite.code)
    );
    assert_eq!(invite.time_control, "relaxed");
    let retry = mm
        .client
        .create_invite(create("i1"))
        .await
        .unwrap()
        .into_inner()
        .invite
        .unwrap();
    assert_eq!(retry.code, invite.code);

    let status = mm
        .client
        .accept_invite(pb::AcceptInviteRequest {
            player: "host".into(),
            code: invite.code.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    let accepted = mm
        .client
        .accept_invite(pb::AcceptInviteRequest {
            player: "guest".into(),
            code: invite.link.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(accepted.opponent, "host");
    assert_eq!(accepted.seat, pb::Side::North as i32);
    let event = next_event(&mut host_lobby).await;
    let found_seq = event.seq;
    let Some(pb::lobby_event::Kind::MatchFound(found)) = event.kind else {
        panic!("expected MatchFound, got {event:?}");
    };
    assert_eq!(found.game_id, accepted.game_id);
    assert_eq!(found.invite_code, invite.code);
    assert_eq!(found.seat, pb::Side::South as i32);
    let again = mm
        .client
        .accept_invite(pb::AcceptInviteRequest {
            player: "guest".into(),
            code: invite.code.to_lowercase(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        again.game_id, accepted.game_id,
        "accepting again is the same game"
    );
    let status = mm
        .client
        .accept_invite(pb::AcceptInviteRequest {
            player: "third".into(),
            code: invite.code.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);

    let withdrawn = mm
        .client
        .create_invite(create("i2"))
        .await
        .unwrap()
        .into_inner()
        .invite
        .unwrap();
    let cancelled = mm
        .client
        .cancel_invite(pb::CancelInviteRequest {
            player: "host".into(),
            code: withdrawn.code.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .invite
        .unwrap();
    assert_eq!(cancelled.state, pb::InviteState::Cancelled as i32);
    let status = mm
        .client
        .accept_invite(pb::AcceptInviteRequest {
            player: "guest".into(),
            code: withdrawn.code.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);
    drop(mm);

    // A short-lived invite expires, and its creator is told.
    let config = MatchmakingConfig {
        invite_ttl: Duration::from_millis(300),
        ..fast_config()
    };
    let mut mm = matchmaking(&db, session_on(&db).await, config).await;
    // Resumes after the match found above: only what came later.
    let mut lobby = mm
        .client
        .watch_player(pb::WatchPlayerRequest {
            player: "host".into(),
            after_seq: found_seq,
        })
        .await
        .unwrap()
        .into_inner();
    let short = mm
        .client
        .create_invite(create("i3"))
        .await
        .unwrap()
        .into_inner()
        .invite
        .unwrap();
    match next_event(&mut lobby).await.kind {
        Some(pb::lobby_event::Kind::InviteExpired(e)) => assert_eq!(e.code, short.code),
        other => panic!("expected InviteExpired, got {other:?}"),
    }
    let status = mm
        .client
        .accept_invite(pb::AcceptInviteRequest {
            player: "guest".into(),
            code: short.code.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert!(status.message().contains("expired"), "{status:?}");
    drop(mm);
    drop(db);
}

/// A tiny deterministic generator for the random opponent.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

/// Plays south at random (legal moves only) while reading the game's full stream, until the game
/// ends (its `GameEnded`) or `pause()` says to stop (`None`). Returns the moves played too.
async fn play_south_randomly(
    session: &mut SessionClient,
    events: &mut tonic::Streaming<pb::WatchGameResponse>,
    game: &str,
    rng: &mut Lcg,
    pause: impl Fn() -> bool,
) -> (Option<pb::GameEnded>, u32) {
    let mut moves = 0;
    let ended = tokio::time::timeout(Duration::from_secs(240), async {
        while let Some(item) = events.next().await {
            let event = item.unwrap().event.unwrap();
            if let Some(pb::game_event::Event::Ended(ended)) = event.event {
                return Some(ended);
            }
            let legal = session
                .list_legal_moves(pb::ListLegalMovesRequest {
                    game_id: game.into(),
                    side: pb::Side::South as i32,
                    min_version: None,
                })
                .await
                .unwrap()
                .into_inner();
            if !legal.moves.is_empty() && legal.version == event.seq {
                let mv = legal.moves[rng.below(legal.moves.len())].clone();
                let played = session
                    .submit_move(pb::SubmitMoveRequest {
                        context: context(
                            game,
                            pb::Side::South,
                            &format!("h{}", legal.version),
                            Some(legal.version),
                        ),
                        r#move: Some(mv),
                    })
                    .await;
                match played {
                    Ok(_) => moves += 1,
                    Err(status) => assert_eq!(status.code(), Code::Aborted, "{status:?}"),
                }
            }
            // Paused only after south's answer: the game then waits on the computer.
            if pause() {
                return None;
            }
        }
        panic!("the game stream ended without a GameEnded event");
    })
    .await
    .expect("the game goes on in time");
    (ended, moves)
}

async fn start_computer_game(
    client: &mut Client,
    session: &mut SessionClient,
) -> (String, tonic::Streaming<pb::WatchGameResponse>) {
    let request = pb::PlayComputerRequest {
        player: "human".into(),
        request_id: "game-1".into(),
        rules: String::new(),
        seat: pb::Side::South as i32,
        level: "greedy".into(),
        time_control: String::new(),
    };
    let created = client
        .play_computer(request.clone())
        .await
        .unwrap()
        .into_inner();
    let retried = client.play_computer(request).await.unwrap().into_inner();
    assert_eq!(created.game_id, retried.game_id, "a retry is the same game");
    assert_eq!(created.seat, pb::Side::South as i32);
    assert_eq!(created.level, "greedy");
    let game = created.game_id;
    confirm(session, &game, pb::Side::South).await;
    let events = session
        .watch_game(pb::WatchGameRequest {
            game_id: game.clone(),
            from_seq: 1,
            with_status: false,
        })
        .await
        .unwrap()
        .into_inner();
    (game, events)
}

async fn wait_finished(stats: &hidden_front_matchmaking::driver::DriverStats) {
    tokio::time::timeout(DEADLINE, async {
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        while stats.games_finished.load(Ordering::Relaxed) == 0 {
            tick.tick().await;
        }
    })
    .await
    .expect("the driver marks the game finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_computer_game_is_played_to_its_end_without_an_illegal_move() {
    let db = migrated_database().await;
    let mut session = session_on(&db).await;
    let mut mm = matchmaking(&db, session.clone(), fast_config()).await;
    let (game, mut events) = start_computer_game(&mut mm.client, &mut session).await;
    // The computer's seat counts as connected (its driver reports it), so the reconnect
    // deadline of the online rules never ends the game for it.
    tokio::time::timeout(DEADLINE, async {
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        loop {
            tick.tick().await;
            let view = session
                .get_game(pb::GetGameRequest {
                    game_id: game.clone(),
                    viewer: pb::Viewer::Spectator as i32,
                })
                .await
                .unwrap()
                .into_inner()
                .game
                .unwrap();
            if view.north_connected {
                break;
            }
        }
    })
    .await
    .expect("the computer's seat is reported connected");
    let (ended, human_moves) =
        play_south_randomly(&mut session, &mut events, &game, &mut Lcg(7), || false).await;
    assert!(ended.expect("the game ended").outcome.is_some());
    let stats = mm.service.driver_stats();
    assert_eq!(
        stats.moves_refused.load(Ordering::Relaxed),
        0,
        "the computer never moves illegally"
    );
    assert!(
        stats.moves_played.load(Ordering::Relaxed) > 0,
        "the computer played"
    );
    assert!(human_moves > 0);
    wait_finished(&stats).await;
    drop(mm);
    drop(db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_process_takes_a_computer_game_over_when_its_driver_stops() {
    let db = migrated_database().await;
    let mut session = session_on(&db).await;
    let mut first = matchmaking(&db, session.clone(), fast_config()).await;
    let (game, mut events) = start_computer_game(&mut first.client, &mut session).await;
    let first_stats = first.service.driver_stats();
    let mut rng = Lcg(11);
    let (ended, _) = play_south_randomly(&mut session, &mut events, &game, &mut rng, || {
        first_stats.moves_played.load(Ordering::Relaxed) >= 2
    })
    .await;
    assert!(
        ended.is_none(),
        "the game should last past the computer's second move"
    );
    // The first process stops (its driver gives the lease up); a second one takes over.
    first.stop.cancel();
    let second = matchmaking(&db, session.clone(), fast_config()).await;
    let (ended, _) =
        play_south_randomly(&mut session, &mut events, &game, &mut rng, || false).await;
    assert!(ended.is_some());
    let second_stats = second.service.driver_stats();
    assert!(
        second_stats.moves_played.load(Ordering::Relaxed) > 0,
        "the second process played on"
    );
    assert_eq!(first_stats.moves_refused.load(Ordering::Relaxed), 0);
    assert_eq!(second_stats.moves_refused.load(Ordering::Relaxed), 0);
    assert_eq!(first_stats.games_finished.load(Ordering::Relaxed), 0);
    wait_finished(&second_stats).await;
    drop((first, second));
    drop(db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_matchmaking_processes_never_pair_a_ticket_twice() {
    let db = migrated_database().await;
    let session = session_on(&db).await;
    let mut one = matchmaking(&db, session.clone(), fast_config()).await;
    let mut two = matchmaking(&db, session.clone(), fast_config()).await;
    let players: Vec<String> = (0..60).map(|i| format!("p{i:02}")).collect();
    let mut lobbies = Vec::new();
    for (i, p) in players.iter().enumerate() {
        // Each watches through the other process than the one it queues through.
        let watcher = if i % 2 == 0 {
            &mut two.client
        } else {
            &mut one.client
        };
        lobbies.push(watch(watcher, p).await);
    }
    for (i, p) in players.iter().enumerate() {
        let client = if i % 2 == 0 {
            &mut one.client
        } else {
            &mut two.client
        };
        enqueue(client, p, "t", queue("online", false)).await;
    }
    let mut games: HashMap<String, Vec<String>> = HashMap::new();
    for (p, lobby) in players.iter().zip(lobbies.iter_mut()) {
        let found = match_found(lobby).await;
        games.entry(found.game_id).or_default().push(p.clone());
    }
    assert_eq!(games.len(), 30, "{games:?}");
    assert!(games.values().all(|seated| seated.len() == 2));
    // Nothing more arrives: each player was told once (the next event would be a second match).
    for lobby in lobbies.iter_mut() {
        assert!(
            tokio::time::timeout(Duration::from_millis(200), lobby.next())
                .await
                .is_err()
        );
    }
    let pool = db.pool(1).await;
    let (matches, tickets): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM mm_matches), (SELECT count(DISTINCT match_id) FROM mm_tickets)",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!((matches, tickets), (30, 30));
    pool.close().await;
    drop((one, two));
    drop(db);
}

async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    tokio::time::timeout(DEADLINE, async {
        let mut tick = tokio::time::interval(Duration::from_millis(25));
        loop {
            tick.tick().await;
            if check().await {
                return;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} did not happen in time"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ratings_move_exactly_once_after_a_rated_game_ends() {
    let db = migrated_database().await;
    let mut session = session_on(&db).await;
    // The game is resigned before its first move: every result counts here (the rated minimum
    // of plies is the next test's).
    let every_result = || MatchmakingConfig {
        rating_integrity: RatingIntegrity {
            min_plies: 0,
            ..RatingIntegrity::default()
        },
        ..fast_config()
    };
    let mut one = matchmaking(&db, session.clone(), every_result()).await;
    let two = matchmaking(&db, session.clone(), every_result()).await;
    let mut lobby = watch(&mut one.client, "win").await;
    enqueue(&mut one.client, "win", "t", queue("online", true)).await;
    enqueue(&mut one.client, "lose", "t", queue("online", true)).await;
    let found = match_found(&mut lobby).await;
    let (win_side, lose_side) = if found.seat == pb::Side::South as i32 {
        (pb::Side::South, pb::Side::North)
    } else {
        (pb::Side::North, pb::Side::South)
    };
    confirm(&mut session, &found.game_id, win_side).await;
    confirm(&mut session, &found.game_id, lose_side).await;
    session
        .resign(pb::ResignRequest {
            context: context(&found.game_id, lose_side, "resign", None),
        })
        .await
        .unwrap();
    let mut client = one.client.clone();
    eventually("the rating update", || {
        let mut client = client.clone();
        async move { rating(&mut client, "win").await.games == 1 }
    })
    .await;
    let win = rating(&mut client, "win").await;
    let lose = rating(&mut client, "lose").await;
    assert!(
        win.rating > 1500.0 && lose.rating < 1500.0,
        "{win:?} {lose:?}"
    );
    assert_eq!(lose.games, 1);
    // Both processes read the whole feed again from the start: nothing moves a second time.
    // The processes' own feed loops may read it before these rounds do (then the rounds read
    // nothing): the stored position back past the game says it was read again either way.
    let pool = db.pool(1).await;
    sqlx::query("UPDATE mm_feed SET cursor = 0")
        .execute(&pool)
        .await
        .unwrap();
    let (a, b) = tokio::join!(one.service.feed_round(), two.service.feed_round());
    a.unwrap();
    b.unwrap();
    eventually("the feed read again from the start", || {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT cursor FROM mm_feed")
                .fetch_one(&pool)
                .await
                .unwrap()
                > 0
        }
    })
    .await;
    pool.close().await;
    assert_eq!(rating(&mut client, "win").await, win);
    assert_eq!(rating(&mut client, "lose").await, lose);
    drop((one, two));
    drop(db);
}

/// The farming rule through the whole path (the session's feed, a matchmaking process, its
/// Postgres store): a rated game resigned before its first move, by default settings, is handled
/// and moves no rating.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rated_game_resigned_before_the_rated_minimum_moves_no_rating() {
    let db = migrated_database().await;
    let mut session = session_on(&db).await;
    let mut one = matchmaking(&db, session.clone(), fast_config()).await;
    let mut lobby = watch(&mut one.client, "quick").await;
    enqueue(&mut one.client, "quick", "t", queue("online", true)).await;
    enqueue(&mut one.client, "quitter", "t", queue("online", true)).await;
    let found = match_found(&mut lobby).await;
    let (stays, quits) = if found.seat == pb::Side::South as i32 {
        (pb::Side::South, pb::Side::North)
    } else {
        (pb::Side::North, pb::Side::South)
    };
    confirm(&mut session, &found.game_id, stays).await;
    confirm(&mut session, &found.game_id, quits).await;
    session
        .resign(pb::ResignRequest {
            context: context(&found.game_id, quits, "resign", None),
        })
        .await
        .unwrap();
    let game_id: uuid::Uuid = found.game_id.parse().unwrap();
    let pool = db.pool(1).await;
    eventually("the game's end handled", || {
        let pool = pool.clone();
        async move {
            let handled: i64 =
                sqlx::query_scalar("SELECT count(*) FROM mm_ended_games WHERE game_id = $1")
                    .bind(game_id)
                    .fetch_one(&pool)
                    .await
                    .unwrap();
            handled == 1
        }
    })
    .await;
    pool.close().await;
    let mut client = one.client.clone();
    for player in ["quick", "quitter"] {
        let unrated = rating(&mut client, player).await;
        assert_eq!((unrated.games, unrated.rating), (0, 1500.0), "{player}");
    }
    drop(one);
    drop(db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_player_whose_opponent_lost_the_seat_is_seated_again_ahead_of_newcomers() {
    let db = migrated_database().await;
    let offset_ms = Arc::new(AtomicU64::new(0));
    let clock = {
        let offset_ms = offset_ms.clone();
        WallClock::from_fn(move || {
            SystemTime::now() + Duration::from_millis(offset_ms.load(Ordering::SeqCst))
        })
    };
    let (mut session, game_store) = session_with_clock(&db, clock).await;
    let mut mm = matchmaking_idle(&db, session.clone(), fast_config()).await;
    let mut amy_lobby = watch(&mut mm.client, "amy").await;
    enqueue(&mut mm.client, "amy", "t", queue("online", false)).await;
    enqueue(&mut mm.client, "ben", "t", queue("online", false)).await;
    assert_eq!(mm.service.pairing_round().await.unwrap(), 1);
    let found = match_found(&mut amy_lobby).await;
    let amy_side = if found.seat == pb::Side::South as i32 {
        pb::Side::South
    } else {
        pb::Side::North
    };
    // Amy confirms; Ben neither confirms nor is connected when the deployment deadline passes.
    confirm(&mut session, &found.game_id, amy_side).await;
    let game_id = found.game_id.parse().unwrap();
    let timer = game_store
        .timers_of(game_id)
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.kind == TimerKind::Deployment)
        .expect("a deployment deadline is armed");
    offset_ms.store(200_000, Ordering::SeqCst);
    let fired = session
        .apply_timer(pb::ApplyTimerRequest {
            game_id: found.game_id.clone(),
            kind: pb::TimerKind::Deployment as i32,
            armed_version: timer.armed_version,
            side: pb::Side::South as i32,
            deadline_unix_millis: timer.fire_at_unix_millis(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(fired.applied);
    // Two newcomers queue before the feed is read: without priority they would pair together.
    enqueue(&mut mm.client, "cal", "t", queue("online", false)).await;
    enqueue(&mut mm.client, "dee", "t", queue("online", false)).await;
    assert_eq!(mm.service.feed_round().await.unwrap(), 1);
    let requeue_id = format!("requeue:{}", found.game_id);
    match next_event(&mut amy_lobby).await.kind {
        Some(pb::lobby_event::Kind::Requeued(r)) => {
            assert_eq!(r.ticket_id, requeue_id);
            assert_eq!(r.cancelled_game_id, found.game_id);
        }
        other => panic!("expected Requeued, got {other:?}"),
    }
    let ticket = get_ticket(&mut mm.client, "amy", &requeue_id).await;
    assert!(ticket.priority);
    assert!(
        mm.client
            .get_ticket(pb::GetTicketRequest {
                player: "ben".into(),
                ticket_id: requeue_id.clone()
            })
            .await
            .is_err(),
        "the player who lost the seat is not queued again"
    );
    assert_eq!(mm.service.pairing_round().await.unwrap(), 1);
    let again = match_found(&mut amy_lobby).await;
    assert_eq!(again.opponent, "cal", "the oldest newcomer");
    assert_eq!(
        get_ticket(&mut mm.client, "dee", "t").await.state,
        pb::TicketState::Waiting as i32
    );
    drop(mm);
    drop(db);
}
