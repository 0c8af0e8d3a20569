//! `WatchGame` with the status, as every gateway hub asks for it: the status it streams after a
//! move comes from the move (the events and the turn deadline their append armed), not from a
//! read of the whole game per move, and it is always the status `GetGame` shows at its version.
//!
//! Two session replicas share one store, as in a cluster: every command goes through one, the
//! stream through the other, so nothing the watching replica knows of its own writes helps it.
//! Only the watching replica's store counts its reads.

mod support;

use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_server::SessionService as _;
use hidden_front_session::{SessionConfig, SessionService};
use hidden_front_store::memory::MemoryStore;
use hidden_front_store::{TimerSlot, TimerStore};
use hidden_front_time::ManualClock;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};
use support::HookedStore;
use tokio_stream::StreamExt as _;
use tonic::Request;

/// Moves each game below plays (besides a timeout, draw offers and the resignation).
const MOVES: usize = 20;

/// The two replicas over one store, with one hand-moved clock: `player` takes every command and
/// answers `GetGame`; `watcher` serves the stream, over `hooked`, which counts its reads.
struct Cluster {
    player: SessionService,
    watcher: SessionService,
    hooked: Arc<HookedStore>,
    store: Arc<MemoryStore>,
    clock: ManualClock,
}

fn cluster() -> Cluster {
    let clock = ManualClock::at(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    let config = || SessionConfig {
        clock: clock.wall_clock(),
        ..SessionConfig::default()
    };
    let store = Arc::new(MemoryStore::new());
    let hooked = Arc::new(HookedStore::sharing(Arc::clone(&store)));
    Cluster {
        player: SessionService::new(store.clone(), config()),
        watcher: SessionService::new(hooked.clone(), config()),
        hooked,
        store,
        clock,
    }
}

fn ctx(game: &str, side: i32, key: &str) -> Option<pb::CommandContext> {
    Some(pb::CommandContext {
        game_id: game.to_string(),
        side,
        idempotency_key: key.to_string(),
        expected_version: None,
    })
}

fn other(side: i32) -> i32 {
    if side == pb::Side::South as i32 {
        pb::Side::North as i32
    } else {
        pb::Side::South as i32
    }
}

async fn spectate(s: &SessionService, game: &str) -> pb::GameView {
    s.get_game(Request::new(pb::GetGameRequest {
        game_id: game.into(),
        viewer: pb::Viewer::Spectator as i32,
    }))
    .await
    .unwrap()
    .into_inner()
    .game
    .unwrap()
}

/// The status `GetGame` shows (a fresh read of the game, its presence and its timers).
fn status_in(view: &pb::GameView) -> pb::GameStatus {
    pb::GameStatus {
        version: view.version,
        south_connected: view.south_connected,
        north_connected: view.north_connected,
        turn_deadline_unix_millis: view.turn_deadline_unix_millis,
        south_away_deadline_unix_millis: view.south_away_deadline_unix_millis,
        north_away_deadline_unix_millis: view.north_away_deadline_unix_millis,
        south_timeouts: view.south_timeouts,
        north_timeouts: view.north_timeouts,
        draw_offer: view.draw_offer,
    }
}

type Watched = std::pin::Pin<
    Box<dyn tokio_stream::Stream<Item = Result<pb::WatchGameResponse, tonic::Status>> + Send>,
>;

/// Reads events until a status item, within a few seconds each; the events' seqs and the status.
async fn until_status(stream: &mut Watched) -> (Vec<u64>, pb::GameStatus) {
    let mut seqs = Vec::new();
    loop {
        let item = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("an item within 10 s")
            .expect("the stream goes on")
            .expect("an item, not an error");
        match (item.event, item.status) {
            (Some(event), None) => seqs.push(event.seq),
            (None, Some(status)) => return (seqs, status),
            other => panic!("an item is an event or a status, not {other:?}"),
        }
    }
}

/// A legal move of the side to move onto an empty square (it cannot end the game).
async fn quiet_move(s: &SessionService, game: &str) -> (i32, pb::Move) {
    let view = spectate(s, game).await;
    let moves = s
        .list_legal_moves(Request::new(pb::ListLegalMovesRequest {
            game_id: game.into(),
            side: view.to_move,
            min_version: Some(view.version),
        }))
        .await
        .unwrap()
        .into_inner()
        .moves;
    let taken: Vec<&str> = view.pieces.iter().map(|p| p.square.as_str()).collect();
    let mv = moves
        .into_iter()
        .find(|mv| !taken.contains(&mv.to.as_str()))
        .expect("a move onto an empty square");
    (view.to_move, mv)
}

/// Plays a game through `cluster.player` while `cluster.watcher` streams it with the status:
/// south connected (north never is, so its time to come back shows), play's start, [`MOVES`]
/// moves a second apart, among them a draw offer that a move lets lapse, one declined, and a
/// timeout, then a resignation. After each command, asserts that the stream sent its events
/// and then the status `GetGame` shows at that version (with the new move clock after a turn).
async fn play_a_watched_game(cluster: &Cluster) {
    let Cluster {
        player,
        watcher,
        store,
        clock,
        ..
    } = cluster;
    let game = player
        .create_game(Request::new(pb::CreateGameRequest {
            south_player: "alice".into(),
            north_player: "bob".into(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner()
        .game_id;
    player
        .report_presence(Request::new(pb::ReportPresenceRequest {
            game_id: game.clone(),
            side: pb::Side::South as i32,
            connected: true,
            gateway_id: "gw-1".into(),
            lease_seconds: 3600,
        }))
        .await
        .unwrap();
    let mut stream: Watched = Box::pin(
        watcher
            .watch_game(Request::new(pb::WatchGameRequest {
                game_id: game.clone(),
                from_seq: 1,
                with_status: true,
            }))
            .await
            .unwrap()
            .into_inner(),
    );
    let mut version = 0;
    // The next status must follow the events up to `answered` and be GetGame's status then.
    let mut expect_status = async |stream: &mut Watched, answered: u64| -> pb::GameStatus {
        let (seqs, status) = until_status(stream).await;
        assert_eq!(
            seqs,
            (version + 1..=answered).collect::<Vec<_>>(),
            "the events first"
        );
        version = answered;
        let view = spectate(player, &game).await;
        assert_eq!(view.version, answered, "nothing else was written");
        assert_eq!(status, status_in(&view), "the streamed status is GetGame's");
        status
    };
    let created = spectate(player, &game).await.version;
    let status = expect_status(&mut stream, created).await;
    assert!(status.south_connected && !status.north_connected);
    assert_ne!(
        status.turn_deadline_unix_millis, 0,
        "the deployment deadline"
    );

    let mut answered = 0;
    for side in [pb::Side::South as i32, pb::Side::North as i32] {
        answered = player
            .confirm_deployment(Request::new(pb::ConfirmDeploymentRequest {
                context: ctx(&game, side, "confirm"),
            }))
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap()
            .version;
    }
    let mut last = expect_status(&mut stream, answered).await;
    assert_ne!(last.north_away_deadline_unix_millis, 0, "north is away");
    let north_away = last.north_away_deadline_unix_millis;

    for index in 0..MOVES {
        clock.advance(Duration::from_secs(1));
        if index == 5 || index == 15 {
            // The side not to move offers a draw: the running move clock stands.
            let mover = spectate(player, &game).await.to_move;
            let offered = player
                .offer_draw(Request::new(pb::OfferDrawRequest {
                    context: ctx(&game, other(mover), &format!("offer-{index}")),
                }))
                .await
                .unwrap()
                .into_inner()
                .result
                .unwrap();
            let offer = expect_status(&mut stream, offered.version).await;
            assert_eq!(offer.draw_offer, other(mover));
            assert_eq!(
                offer.turn_deadline_unix_millis, last.turn_deadline_unix_millis,
                "an offer keeps the running clock"
            );
            if index == 15 {
                let declined = player
                    .answer_draw(Request::new(pb::AnswerDrawRequest {
                        context: ctx(&game, mover, &format!("decline-{index}")),
                        accept: false,
                    }))
                    .await
                    .unwrap()
                    .into_inner()
                    .result
                    .unwrap();
                let declined = expect_status(&mut stream, declined.version).await;
                assert_eq!(declined.draw_offer, pb::Side::Unspecified as i32);
            }
        }
        if index == 10 {
            // The side to move lets its clock run out; the clock service fires the timer.
            let timer = store
                .timers_of(game.parse().unwrap())
                .await
                .unwrap()
                .into_iter()
                .find(|t| t.slot() == TimerSlot::Turn)
                .expect("the move clock");
            clock.advance(Duration::from_secs(31));
            let fired = player
                .apply_timer(Request::new(pb::ApplyTimerRequest {
                    game_id: game.clone(),
                    kind: pb::TimerKind::Move as i32,
                    side: match timer.side {
                        hidden_front_rules::Side::South => pb::Side::South,
                        hidden_front_rules::Side::North => pb::Side::North,
                    } as i32,
                    armed_version: timer.armed_version,
                    deadline_unix_millis: timer.fire_at_unix_millis(),
                }))
                .await
                .unwrap()
                .into_inner();
            assert!(fired.applied);
            let after = expect_status(&mut stream, fired.version).await;
            assert_eq!(after.south_timeouts + after.north_timeouts, 1);
            assert_eq!(
                after.turn_deadline_unix_millis,
                hidden_front_time::unix_ms(clock.now() + Duration::from_secs(30)),
                "the next move clock"
            );
        }
        let (side, mv) = quiet_move(player, &game).await;
        let moved = player
            .submit_move(Request::new(pb::SubmitMoveRequest {
                context: ctx(&game, side, &format!("move-{index}")),
                r#move: Some(mv),
            }))
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap();
        last = expect_status(&mut stream, moved.version).await;
        assert_eq!(
            last.turn_deadline_unix_millis,
            hidden_front_time::unix_ms(clock.now() + Duration::from_secs(30)),
            "move {index}: the move clock the move armed"
        );
        assert_eq!(
            last.draw_offer,
            pb::Side::Unspecified as i32,
            "a move lets an offer to the mover lapse"
        );
        assert_eq!(
            last.north_away_deadline_unix_millis, north_away,
            "north's time to come back runs on"
        );
    }

    let resigned = player
        .resign(Request::new(pb::ResignRequest {
            context: ctx(&game, pb::Side::North as i32, "resign"),
        }))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    let status = expect_status(&mut stream, resigned.version).await;
    assert_eq!(
        status.turn_deadline_unix_millis, 0,
        "an ended game has no clock"
    );
    let rest = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("the stream ends after the end");
    assert!(rest.is_none(), "nothing after the end: {rest:?}");
}

/// The status after every move comes from the move: the reads of the game stay a constant few
/// (the first status, play's start, the end) however many moves the game has, where a read per
/// move made Postgres' CPU per move three times what it was.
#[tokio::test]
async fn a_watched_game_s_status_follows_its_moves_without_reading_the_game() {
    let cluster = cluster();
    play_a_watched_game(&cluster).await;
    let observes = cluster.hooked.observes.load(Ordering::SeqCst);
    assert!(
        observes <= 3,
        "{observes} reads of the game for {MOVES} moves: the first status, play's start and the \
         end should be all"
    );
}

/// Events written without the turn deadline their append armed (by a release that did not
/// record it) still give the status `GetGame` shows: each turn's status is read instead.
#[tokio::test]
async fn without_the_armed_deadline_each_turn_s_status_is_read() {
    let cluster = cluster();
    cluster
        .hooked
        .forget_turn_deadlines
        .store(true, Ordering::SeqCst);
    play_a_watched_game(&cluster).await;
    let observes = cluster.hooked.observes.load(Ordering::SeqCst);
    assert!(
        observes > MOVES,
        "{observes} reads of the game for {MOVES} moves whose clocks the events do not carry"
    );
}
