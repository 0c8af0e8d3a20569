//! The session service in process, on the in-memory store: timers fenced by version, presence,
//! idempotent retries and the codes of refused commands. (The same service over real gRPC, real
//! Postgres and real processes is tested in tests/e2e.)

use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_server::SessionService as _;
use hidden_front_session::{SessionConfig, SessionService};
use hidden_front_store::memory::MemoryStore;
use std::sync::Arc;
use tonic::{Code, Request};

fn service() -> SessionService {
    SessionService::new(Arc::new(MemoryStore::new()), SessionConfig::default())
}

fn ctx(game: &str, side: pb::Side, key: &str) -> Option<pb::CommandContext> {
    Some(pb::CommandContext {
        game_id: game.to_string(),
        side: side as i32,
        idempotency_key: key.to_string(),
        expected_version: None,
    })
}

async fn create(s: &SessionService) -> (String, pb::Side) {
    let created = s
        .create_game(Request::new(pb::CreateGameRequest {
            south_player: "alice".into(),
            north_player: "bob".into(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    (
        created.game_id,
        pb::Side::try_from(created.first_mover).unwrap(),
    )
}

async fn get(s: &SessionService, game: &str, viewer: pb::Viewer) -> pb::GameView {
    s.get_game(Request::new(pb::GetGameRequest {
        game_id: game.into(),
        viewer: viewer as i32,
    }))
    .await
    .unwrap()
    .into_inner()
    .game
    .unwrap()
}

async fn start_play(s: &SessionService, game: &str) -> u64 {
    let mut version = 0;
    for side in [pb::Side::South, pb::Side::North] {
        version = s
            .confirm_deployment(Request::new(pb::ConfirmDeploymentRequest {
                context: ctx(game, side, "confirm"),
            }))
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap()
            .version;
    }
    version
}

async fn timer(
    s: &SessionService,
    game: &str,
    kind: pb::TimerKind,
    armed_version: u64,
    side: pb::Side,
) -> pb::ApplyTimerResponse {
    s.apply_timer(Request::new(pb::ApplyTimerRequest {
        game_id: game.into(),
        kind: kind as i32,
        armed_version,
        side: side as i32,
    }))
    .await
    .unwrap()
    .into_inner()
}

#[tokio::test]
async fn a_move_timer_applies_once_and_only_for_its_version() {
    let s = service();
    let (game, first) = create(&s).await;
    let version = start_play(&s, &game).await;
    // Stale: armed for an older version.
    let stale = timer(&s, &game, pb::TimerKind::Move, version - 1, first).await;
    assert!(!stale.applied);
    assert_eq!(stale.version, version);
    // Wrong side: the side to move is `first`.
    let other = if first == pb::Side::South {
        pb::Side::North
    } else {
        pb::Side::South
    };
    assert!(
        !timer(&s, &game, pb::TimerKind::Move, version, other)
            .await
            .applied
    );
    // The real one: a timeout ply.
    let fired = timer(&s, &game, pb::TimerKind::Move, version, first).await;
    assert!(fired.applied);
    assert_eq!(fired.version, version + 1);
    // The same fire again (a duplicate delivery): no effect.
    let again = timer(&s, &game, pb::TimerKind::Move, version, first).await;
    assert!(!again.applied);
    assert_eq!(again.version, version + 1);
    let view = get(&s, &game, pb::Viewer::Spectator).await;
    assert_eq!(view.to_move, other as i32, "the turn passed");
    let timeouts = if first == pb::Side::South {
        view.south_timeouts
    } else {
        view.north_timeouts
    };
    assert_eq!(timeouts, 1);
}

#[tokio::test]
async fn the_deployment_deadline_cancels_when_a_player_is_away_and_starts_when_present() {
    let s = service();
    let (game, _) = create(&s).await;
    // Nobody reported presence: both away, the game is cancelled.
    let version = get(&s, &game, pb::Viewer::Spectator).await.version;
    assert!(
        timer(
            &s,
            &game,
            pb::TimerKind::Deployment,
            version,
            pb::Side::South
        )
        .await
        .applied
    );
    let view = get(&s, &game, pb::Viewer::Spectator).await;
    assert_eq!(view.phase, pb::Phase::Ended as i32);
    assert_eq!(view.outcome.unwrap().reason, pb::EndReason::SeatLost as i32);

    let (game, _) = create(&s).await;
    for side in [pb::Side::South, pb::Side::North] {
        let presence = s
            .report_presence(Request::new(pb::ReportPresenceRequest {
                game_id: game.clone(),
                side: side as i32,
                connected: true,
                gateway_id: "gw-1".into(),
                lease_seconds: 60,
            }))
            .await
            .unwrap()
            .into_inner();
        assert!(if side == pb::Side::South {
            presence.south_connected
        } else {
            presence.north_connected
        });
    }
    let version = get(&s, &game, pb::Viewer::Spectator).await.version;
    assert!(
        timer(
            &s,
            &game,
            pb::TimerKind::Deployment,
            version,
            pb::Side::South
        )
        .await
        .applied
    );
    let view = get(&s, &game, pb::Viewer::Spectator).await;
    assert_eq!(
        view.phase,
        pb::Phase::Play as i32,
        "present players start with their drafts"
    );
    assert_eq!(view.pieces.len(), 50);
}

#[tokio::test]
async fn a_reconnect_timer_forfeits_only_an_absent_player() {
    let s = service();
    let (game, _) = create(&s).await;
    let version = start_play(&s, &game).await;
    let report = |connected| pb::ReportPresenceRequest {
        game_id: game.clone(),
        side: pb::Side::North as i32,
        connected,
        gateway_id: "gw-1".into(),
        lease_seconds: 60,
    };
    s.report_presence(Request::new(report(true))).await.unwrap();
    assert!(
        !timer(
            &s,
            &game,
            pb::TimerKind::Reconnect,
            version,
            pb::Side::North
        )
        .await
        .applied
    );
    s.report_presence(Request::new(report(false)))
        .await
        .unwrap();
    assert!(
        timer(
            &s,
            &game,
            pb::TimerKind::Reconnect,
            version,
            pb::Side::North
        )
        .await
        .applied
    );
    let outcome = get(&s, &game, pb::Viewer::Spectator).await.outcome.unwrap();
    assert_eq!(outcome.winner, pb::Side::South as i32);
    assert_eq!(outcome.reason, pb::EndReason::Disconnected as i32);
}

#[tokio::test]
async fn retries_get_the_first_answer_and_refusals_have_the_right_codes() {
    let s = service();
    let (game, _) = create(&s).await;
    let reshuffle = |key: &str| pb::ReshuffleDeploymentRequest {
        context: ctx(&game, pb::Side::South, key),
    };
    let first = s
        .reshuffle_deployment(Request::new(reshuffle("r1")))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    let retry = s
        .reshuffle_deployment(Request::new(reshuffle("r1")))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert!(!first.replayed);
    assert!(retry.replayed);
    assert_eq!(first.version, retry.version);
    assert_eq!(
        first.events, retry.events,
        "the retry gets the same deployment, not a new one"
    );
    assert_eq!(
        get(&s, &game, pb::Viewer::South).await.version,
        first.version
    );
    // The same key from the other seat is another command.
    let north = s
        .reshuffle_deployment(Request::new(pb::ReshuffleDeploymentRequest {
            context: ctx(&game, pb::Side::North, "r1"),
        }))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert!(!north.replayed);

    let code =
        |r: Result<tonic::Response<pb::SubmitMoveResponse>, tonic::Status>| r.unwrap_err().code();
    let mv = |game: &str, key: &str, expected: Option<u64>| {
        let mut context = ctx(game, pb::Side::South, key);
        context.as_mut().unwrap().expected_version = expected;
        Request::new(pb::SubmitMoveRequest {
            context,
            r#move: Some(pb::Move {
                from: "A6".into(),
                to: "A7".into(),
            }),
        })
    };
    assert_eq!(
        code(s.submit_move(mv(&game, "m1", None)).await),
        Code::FailedPrecondition
    );
    assert_eq!(
        code(s.submit_move(mv(&game, "m2", Some(1))).await),
        Code::Aborted
    );
    assert_eq!(
        code(s.submit_move(mv(&game, "", None)).await),
        Code::InvalidArgument
    );
    assert_eq!(
        code(s.submit_move(mv("not-a-uuid", "m3", None)).await),
        Code::InvalidArgument
    );
    assert_eq!(
        code(
            s.submit_move(mv("01a227c0-1001-758b-8df8-0480ba9f4201", "m4", None))
                .await
        ),
        Code::NotFound
    );
    let swap = s
        .swap_pieces(Request::new(pb::SwapPiecesRequest {
            context: ctx(&game, pb::Side::South, "s1"),
            square_a: "Z9".into(),
            square_b: "A1".into(),
        }))
        .await
        .unwrap_err();
    assert_eq!(swap.code(), Code::InvalidArgument);
    assert!(swap.message().contains("square_a"), "{}", swap.message());
}
