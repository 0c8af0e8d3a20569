//! A whole Gunjin Shogi game through the real binary and Postgres: `CreateGame` with rules
//! `gunjin-shogi`, both deployments (reshuffle, own deployment, swap, confirm), random legal moves
//! from each side's own view until the game ends, then the final views and the full log.

use hidden_front_e2e::client::{self, assert_gapless, get_game, phase_of, side_of, watch_to_end};
use hidden_front_e2e::player::assert_hides_opponent;
use hidden_front_e2e::{Player, Server, TestDatabase, pb, play_to_end};
use pb::game_event::Event;
use std::collections::BTreeSet;

/// A random game ends well within this: at most 62 fights, at most 100 plies between fights.
const MAX_PLIES: usize = 63 * 101;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gunjin_shogi_game_through_the_session_api() {
    let db = TestDatabase::create().await;
    let server = Server::start("server", db.url()).await;
    let mut client = server.connect().await;

    // An unknown Gunjin option is refused, naming it.
    let refused = client
        .create_game(pb::CreateGameRequest {
            south_player: "kenji".to_string(),
            north_player: "yumi".to_string(),
            rules: "gunjin-shogi+hq-mobile".to_string(),
            time_control: hidden_front_e2e::client::untimed(),
            idempotency_key: "gunjin-bad".to_string(),
        })
        .await
        .expect_err("an unknown option");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(refused.message().contains("hq-mobile"), "{refused:?}");

    let created = client
        .create_game(pb::CreateGameRequest {
            south_player: "kenji".to_string(),
            north_player: "yumi".to_string(),
            rules: "gunjin-shogi".to_string(),
            time_control: hidden_front_e2e::client::untimed(),
            idempotency_key: "gunjin-game".to_string(),
        })
        .await
        .expect("CreateGame gunjin-shogi")
        .into_inner();
    let game_id = created.game_id.clone();
    let first_mover = side_of(created.first_mover);

    let start = get_game(&mut client, &game_id, pb::Viewer::South).await;
    assert_eq!(start.rules, "gunjin-shogi");
    assert_eq!(phase_of(&start), pb::Phase::Deployment);
    let draft = start.own_deployment.expect("the own draft");
    assert_eq!(draft.placements.len(), 31);
    assert!(
        draft.placements.iter().any(|p| p.square == "d1+e1"),
        "the HQ is one square of the draft: {draft:?}"
    );

    // A deployment with the flag on a gate square is refused with the reason.
    let mut bad = draft.placements.clone();
    let flag = bad.iter().position(|p| p.piece == "FLG").expect("a flag");
    let gate = bad.iter().position(|p| p.square == "a4").expect("a4");
    let (flag_square, gate_piece) = (bad[flag].square.clone(), bad[gate].piece.clone());
    bad[flag].square = "a4".to_string();
    bad[gate].square = flag_square;
    let refused = client
        .set_deployment(pb::SetDeploymentRequest {
            context: client::context(&game_id, pb::Side::South, "gunjin-gate", None),
            deployment: Some(pb::Deployment {
                side: pb::Side::South as i32,
                placements: bad,
            }),
        })
        .await
        .expect_err("the flag on a gate square");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{gate_piece}");
    assert!(
        refused
            .message()
            .contains("the FLG on a4 stands on a gate square"),
        "{refused:?}"
    );

    let mut players = [
        Player::new(pb::Side::South, 0x6a6e_0001),
        Player::new(pb::Side::North, 0x6a6e_0002),
    ];
    for player in &mut players {
        player.deploy(&mut client, &game_id).await;
    }
    for player in &players {
        let view = get_game(&mut client, &game_id, player.viewer()).await;
        assert_eq!(phase_of(&view), pb::Phase::Play);
        assert_eq!(view.pieces.len(), 62);
        assert_hides_opponent(&view);
        let ids: BTreeSet<u32> = view.pieces.iter().map(|p| p.id).collect();
        assert_eq!(ids.len(), 62);
    }

    let turns = play_to_end(&mut client, &game_id, &mut players, first_mover, MAX_PLIES).await;
    let last = turns.last().expect("a move");
    let version = last.version();

    let mut ends = Vec::new();
    for viewer in [pb::Viewer::South, pb::Viewer::North, pb::Viewer::Spectator] {
        let view = get_game(&mut client, &game_id, viewer).await;
        assert_eq!(phase_of(&view), pb::Phase::Ended);
        assert_eq!(view.version, version);
        for piece in &view.pieces {
            assert!(!piece.piece.is_empty(), "hidden after the end: {piece:?}");
        }
        ends.push((view.outcome.expect("an outcome"), view.pieces));
    }
    assert!(ends.windows(2).all(|w| w[0] == w[1]), "viewers disagree");
    let (outcome, _) = ends.pop().expect("three views");
    eprintln!("game {game_id}: {} plies, {outcome:?}", turns.len());
    let winner = side_of(outcome.winner);
    match pb::EndReason::try_from(outcome.reason).expect("a known reason") {
        pb::EndReason::HqEntered => {
            assert_eq!(winner, last.side, "{outcome:?}");
            assert!(
                last.mv.to == "d1+e1" || last.mv.to == "d8+e8",
                "the last move entered an HQ: {:?}",
                last.mv
            );
        }
        pb::EndReason::NoLegalMoves => {
            assert!(
                winner == last.side || winner == pb::Side::Unspecified,
                "{outcome:?}"
            );
        }
        pb::EndReason::NoCombatLimit => assert_eq!(winner, pb::Side::Unspecified),
        other => panic!("a game of moves ended by {other:?}"),
    }

    let log = watch_to_end(&mut client, &game_id, 1).await;
    assert_gapless(&log, &game_id, 1, version);
    assert!(matches!(
        log.last().and_then(|e| e.event.as_ref()),
        Some(Event::Ended(_))
    ));
}
