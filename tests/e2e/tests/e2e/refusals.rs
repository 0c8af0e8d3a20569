//! What the service refuses, with which status, and that a refusal changes nothing; and that a
//! retried command (same idempotency key) gets its first answer and has no second effect.

use hidden_front_e2e::client::{
    self, Client, context, create_game, expect_code, get_game, side_of, try_get_game,
};
use hidden_front_e2e::player::{own_deployment, rules_of, to_map};
use hidden_front_e2e::{Player, Server, TestDatabase, own_legal_moves, pb};
use hidden_front_rules::{Nodes, Rules};
use prost::Message;
use tonic::Code;

/// Every viewer's view of a game, for before/after comparisons.
async fn views(client: &mut Client, game_id: &str) -> Vec<pb::GameView> {
    let mut out = Vec::new();
    for viewer in [pb::Viewer::South, pb::Viewer::North, pb::Viewer::Spectator] {
        out.push(get_game(client, game_id, viewer).await);
    }
    out
}

/// Asserts that no viewer's view changed since `before`.
async fn assert_unchanged(client: &mut Client, game_id: &str, before: &[pb::GameView], what: &str) {
    let now = views(client, game_id).await;
    assert_eq!(now, before, "{what} changed the game");
}

fn mv(from: &str, to: &str) -> pb::Move {
    pb::Move {
        from: from.to_string(),
        to: to.to_string(),
    }
}

async fn set_deployment(
    client: &mut Client,
    game_id: &str,
    side: pb::Side,
    key: &str,
    placements: Vec<pb::Placement>,
) -> Result<pb::CommandResult, tonic::Status> {
    client
        .set_deployment(pb::SetDeploymentRequest {
            context: context(game_id, side, key, None),
            deployment: Some(pb::Deployment {
                side: side as i32,
                placements,
            }),
        })
        .await
        .map(|r| r.into_inner().result.expect("a result"))
}

async fn reshuffle(
    client: &mut Client,
    game_id: &str,
    side: pb::Side,
    key: &str,
    expected: Option<u64>,
) -> Result<pb::CommandResult, tonic::Status> {
    client
        .reshuffle_deployment(pb::ReshuffleDeploymentRequest {
            context: context(game_id, side, key, expected),
        })
        .await
        .map(|r| r.into_inner().result.expect("a result"))
}

/// Square names of a bitboard.
fn names(rules: &Rules, bits: u64) -> Vec<String> {
    let topo = rules.topology();
    Nodes(bits).map(|n| topo.name(n).to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals() {
    let db = TestDatabase::create().await;
    let server = Server::start("server", db.url()).await;
    let mut client = server.connect().await;

    let created = create_game(&mut client, "carol", "dave", "refusals-create").await;
    let game_id = created.game_id.clone();
    let mut south = Player::new(pb::Side::South, 11);
    let mut north = Player::new(pb::Side::North, 12);
    let before = views(&mut client, &game_id).await;
    let rules = rules_of(&before[0]);

    // --- Requests that name no game we have.
    let unknown = uuid::Uuid::now_v7().to_string();
    expect_code(
        try_get_game(&mut client, &unknown, pb::Viewer::South).await,
        Code::NotFound,
        "GetGame of an unknown game",
    );
    expect_code(
        client::submit_move(
            &mut client,
            &unknown,
            pb::Side::South,
            "k",
            None,
            &mv("A5", "A6"),
        )
        .await,
        Code::NotFound,
        "SubmitMove to an unknown game",
    );
    expect_code(
        client
            .watch_game(pb::WatchGameRequest {
                game_id: unknown.clone(),
                from_seq: 1,
                with_status: true,
            })
            .await
            .map(|_| ()),
        Code::NotFound,
        "WatchGame of an unknown game",
    );
    for malformed in ["not-a-uuid", "", "01234567-89ab-cdef-0123-456789abcdeZ"] {
        expect_code(
            try_get_game(&mut client, malformed, pb::Viewer::South).await,
            Code::InvalidArgument,
            &format!("GetGame of game id {malformed:?}"),
        );
        expect_code(
            client::submit_move(
                &mut client,
                malformed,
                pb::Side::South,
                "k",
                None,
                &mv("A5", "A6"),
            )
            .await,
            Code::InvalidArgument,
            &format!("SubmitMove to game id {malformed:?}"),
        );
    }
    expect_code(
        try_get_game(&mut client, &game_id, pb::Viewer::Unspecified).await,
        Code::InvalidArgument,
        "GetGame without a viewer",
    );
    assert_unchanged(&mut client, &game_id, &before, "requests for other games").await;

    // --- Deployment phase refusals.
    let msg = expect_code(
        client::submit_move(
            &mut client,
            &game_id,
            pb::Side::South,
            "early",
            None,
            &mv("A5", "A6"),
        )
        .await,
        Code::FailedPrecondition,
        "a move during deployment",
    );
    assert!(!msg.is_empty());
    assert_unchanged(&mut client, &game_id, &before, "a move during deployment").await;

    expect_code(
        reshuffle(&mut client, &game_id, pb::Side::South, "", None).await,
        Code::InvalidArgument,
        "a command without idempotency key",
    );
    expect_code(
        reshuffle(
            &mut client,
            &game_id,
            pb::Side::Unspecified,
            "no-side",
            None,
        )
        .await,
        Code::InvalidArgument,
        "a command without side",
    );
    assert_unchanged(
        &mut client,
        &game_id,
        &before,
        "commands without key or side",
    )
    .await;

    let msg = expect_code(
        reshuffle(
            &mut client,
            &game_id,
            pb::Side::South,
            "stale",
            Some(before[0].version - 1),
        )
        .await,
        Code::Aborted,
        "a stale expected version",
    );
    assert!(msg.contains(&before[0].version.to_string()), "{msg}");
    expect_code(
        reshuffle(
            &mut client,
            &game_id,
            pb::Side::South,
            "future",
            Some(before[0].version + 1),
        )
        .await,
        Code::Aborted,
        "a future expected version",
    );
    assert_unchanged(&mut client, &game_id, &before, "stale expected versions").await;

    // A deployment with several problems: the flag out of the HQs, a bomb on the front row, and
    // the commander missing (so a count is wrong and a square is empty). The refusal names each.
    let topo = rules.topology();
    let mut bad = to_map(&south.random_placements(&rules));
    let hq = names(&rules, topo.hq[0]);
    let front = names(&rules, topo.front_row[0]);
    let ranked = |map: &std::collections::BTreeMap<String, String>, allowed: &[String]| {
        map.iter()
            .find(|(sq, code)| {
                code.as_bytes()[0].is_ascii_digit() && code.as_str() != "9" && allowed.contains(sq)
            })
            .map(|(sq, _)| sq.clone())
            .expect("a ranked piece there")
    };
    let flag_square = bad
        .iter()
        .find(|(_, c)| *c == "F")
        .map(|(s, _)| s.clone())
        .expect("F");
    let away_from_hq: Vec<String> = names(
        &rules,
        topo.half[0] & !topo.camps & !topo.hq[0] & !topo.front_row[0],
    );
    let flag_to = ranked(&bad, &away_from_hq);
    let piece = bad[&flag_to].clone();
    bad.insert(flag_to.clone(), "F".into());
    bad.insert(flag_square.clone(), piece);
    assert!(hq.contains(&flag_square) && !hq.contains(&flag_to));
    let bomb_square = bad
        .iter()
        .find(|(_, c)| *c == "B")
        .map(|(s, _)| s.clone())
        .expect("B");
    let bomb_to = ranked(&bad, &front);
    let piece = bad[&bomb_to].clone();
    bad.insert(bomb_to.clone(), "B".into());
    bad.insert(bomb_square, piece);
    let commander = bad
        .iter()
        .find(|(_, c)| *c == "9")
        .map(|(s, _)| s.clone())
        .expect("9");
    bad.remove(&commander);
    let placements: Vec<pb::Placement> = bad
        .iter()
        .map(|(square, piece)| pb::Placement {
            square: square.clone(),
            piece: piece.clone(),
        })
        .collect();
    let msg = expect_code(
        set_deployment(
            &mut client,
            &game_id,
            pb::Side::South,
            "bad-deployment",
            placements,
        )
        .await,
        Code::InvalidArgument,
        "a deployment with several problems",
    );
    for problem in [
        format!("the flag on {flag_to} must stand in one of your two headquarters"),
        format!("the bomb on {bomb_to} stands on your front row"),
        "expected 1 of piece 9, found 0".to_string(),
        format!("squares left empty: {commander}"),
    ] {
        assert!(
            msg.contains(&problem),
            "{problem:?} is not named in {msg:?}"
        );
    }
    // Malformed placements are refused naming the field.
    let mut malformed = south.random_placements(&rules);
    malformed[3].square = "Z99".into();
    let msg = expect_code(
        set_deployment(
            &mut client,
            &game_id,
            pb::Side::South,
            "bad-square",
            malformed,
        )
        .await,
        Code::InvalidArgument,
        "a placement on an unknown square",
    );
    assert!(msg.contains("placements[3].square"), "{msg}");
    let mut malformed = south.random_placements(&rules);
    malformed[7].piece = "X".into();
    let msg = expect_code(
        set_deployment(
            &mut client,
            &game_id,
            pb::Side::South,
            "bad-piece",
            malformed,
        )
        .await,
        Code::InvalidArgument,
        "a placement of an unknown piece",
    );
    assert!(msg.contains("placements[7].piece"), "{msg}");
    expect_code(
        set_deployment(
            &mut client,
            &game_id,
            pb::Side::South,
            "other-side",
            north.random_placements(&rules),
        )
        .await,
        Code::InvalidArgument,
        "south deploying on north's half",
    );
    assert_unchanged(&mut client, &game_id, &before, "bad deployments").await;

    // An oversized message (10,000 placements, far over the 64 KiB limit) is refused before it
    // is judged, and the server (and this very connection) still answers.
    let huge = pb::SetDeploymentRequest {
        context: context(&game_id, pb::Side::South, "huge", None),
        deployment: Some(pb::Deployment {
            side: pb::Side::South as i32,
            placements: vec![
                pb::Placement {
                    square: "A1".into(),
                    piece: "9".into(),
                };
                10_000
            ],
        }),
    };
    assert!(
        huge.encoded_len() > 64 * 1024,
        "{} bytes",
        huge.encoded_len()
    );
    let status = client
        .set_deployment(huge)
        .await
        .expect_err("an oversized message was accepted");
    assert!(
        matches!(status.code(), Code::ResourceExhausted | Code::OutOfRange),
        "an oversized message: expected RESOURCE_EXHAUSTED (or tonic's OUT_OF_RANGE), got {status:?}"
    );
    assert_unchanged(&mut client, &game_id, &before, "an oversized message").await;
    let mut fresh = server.connect().await;
    assert_unchanged(&mut fresh, &game_id, &before, "an oversized message").await;

    // --- Retries during deployment: same key, first answer, no second effect.
    let first = reshuffle(
        &mut client,
        &game_id,
        pb::Side::South,
        "reshuffle-once",
        Some(before[0].version),
    )
    .await
    .expect("a reshuffle");
    assert!(!first.replayed);
    assert_eq!(first.version, before[0].version + 1);
    let drafted = own_deployment(&get_game(&mut client, &game_id, pb::Viewer::South).await);
    for expected in [Some(before[0].version), None, Some(first.version)] {
        let again = reshuffle(
            &mut client,
            &game_id,
            pb::Side::South,
            "reshuffle-once",
            expected,
        )
        .await
        .unwrap_or_else(|s| panic!("a retried reshuffle (expected {expected:?}) failed: {s:?}"));
        assert!(again.replayed, "a retry was not marked replayed");
        assert_eq!(again.version, first.version);
        assert_eq!(again.events, first.events, "a retry got another answer");
    }
    let after_retries = views(&mut client, &game_id).await;
    assert_eq!(
        after_retries[0].version, first.version,
        "a retry applied again"
    );
    assert_eq!(
        own_deployment(&after_retries[0]),
        drafted,
        "a retry reshuffled again"
    );
    // The same key from the other seat is another command.
    let north_first = reshuffle(
        &mut client,
        &game_id,
        pb::Side::North,
        "reshuffle-once",
        None,
    )
    .await
    .expect("north's reshuffle");
    assert!(
        !north_first.replayed,
        "north's command was answered with south's"
    );
    assert_eq!(north_first.version, first.version + 1);

    // CreateGame with the same key finds the same game.
    let again = create_game(&mut client, "carol", "dave", "refusals-create").await;
    assert!(again.replayed);
    assert_eq!(again.game_id, game_id);
    assert_eq!(again.first_mover, created.first_mover);
    expect_code(
        client
            .create_game(pb::CreateGameRequest {
                south_player: "erin".into(),
                north_player: "erin".into(),
                ..Default::default()
            })
            .await,
        Code::InvalidArgument,
        "a game against oneself",
    );

    // --- Play phase.
    south.deploy(&mut client, &game_id).await;
    north.deploy(&mut client, &game_id).await;
    let first_mover = side_of(created.first_mover);
    let (mover, waiter) = if first_mover == pb::Side::South {
        (&mut south, &mut north)
    } else {
        (&mut north, &mut south)
    };
    let before = views(&mut client, &game_id).await;
    let version = before[0].version;
    let mover_view = get_game(&mut client, &game_id, mover.viewer()).await;
    let waiter_view = get_game(&mut client, &game_id, waiter.viewer()).await;
    let legal = own_legal_moves(&mover_view);
    assert!(!legal.is_empty());

    // Out of turn: a move that would be legal for the waiting side.
    let waiting_move = own_legal_moves(&waiter_view)
        .into_iter()
        .next()
        .expect("the waiting side has moves");
    let msg = expect_code(
        client::submit_move(
            &mut client,
            &game_id,
            waiter.side(),
            "out-of-turn",
            Some(version),
            &waiting_move,
        )
        .await,
        Code::FailedPrecondition,
        "a move out of turn",
    );
    assert!(!msg.is_empty());
    assert_unchanged(&mut client, &game_id, &before, "a move out of turn").await;

    // Illegal moves of the side to move, each not among its own legal moves.
    let own = |code: &str| {
        mover_view
            .pieces
            .iter()
            .find(|p| side_of(p.side) == mover.side() && p.piece == code)
            .map(|p| p.square.clone())
            .unwrap_or_else(|| panic!("own piece {code}"))
    };
    let enemy = mover_view
        .pieces
        .iter()
        .find(|p| side_of(p.side) != mover.side())
        .map(|p| p.square.clone())
        .expect("an enemy piece");
    let empty_camp = names(&rules, topo.camps)[0].clone();
    let illegal = [
        (own("F"), own("9"), "the flag moving"),
        (own("9"), own("F"), "onto an own piece"),
        (empty_camp.clone(), own("9"), "from an empty square"),
        (enemy.clone(), empty_camp.clone(), "an enemy piece"),
    ];
    for (from, to, what) in illegal {
        let m = mv(&from, &to);
        assert!(!legal.contains(&m), "{what}: {from}-{to} is legal");
        let msg = expect_code(
            client::submit_move(
                &mut client,
                &game_id,
                mover.side(),
                "illegal",
                Some(version),
                &m,
            )
            .await,
            Code::InvalidArgument,
            &format!("an illegal move ({what}, {from}-{to})"),
        );
        assert!(msg.contains(&from) || msg.contains(&to), "{what}: {msg}");
    }
    for (m, what) in [
        (mv("Z1", "A1"), "an unknown square"),
        (mv("", ""), "empty squares"),
    ] {
        expect_code(
            client::submit_move(
                &mut client,
                &game_id,
                mover.side(),
                "malformed",
                Some(version),
                &m,
            )
            .await,
            Code::InvalidArgument,
            what,
        );
    }
    expect_code(
        client
            .submit_move(pb::SubmitMoveRequest {
                context: context(&game_id, mover.side(), "no-move", Some(version)),
                r#move: None,
            })
            .await,
        Code::InvalidArgument,
        "a move request without a move",
    );
    let good = legal[0].clone();
    expect_code(
        client::submit_move(
            &mut client,
            &game_id,
            mover.side(),
            "",
            Some(version),
            &good,
        )
        .await,
        Code::InvalidArgument,
        "a move without idempotency key",
    );
    expect_code(
        client::submit_move(
            &mut client,
            &game_id,
            mover.side(),
            "stale-move",
            Some(version - 1),
            &good,
        )
        .await,
        Code::Aborted,
        "a move at a stale version",
    );
    assert_unchanged(&mut client, &game_id, &before, "refused moves").await;

    // A move, then its retries: the first answer, no second move.
    let first = client::submit_move(
        &mut client,
        &game_id,
        mover.side(),
        "the-move",
        Some(version),
        &good,
    )
    .await
    .expect("a legal move");
    assert!(!first.replayed);
    hidden_front_e2e::player::check_move_ack(mover.side(), &good, version, &first);
    let after = views(&mut client, &game_id).await;
    for expected in [Some(version), None, Some(first.version)] {
        let again = client::submit_move(
            &mut client,
            &game_id,
            mover.side(),
            "the-move",
            expected,
            &good,
        )
        .await
        .unwrap_or_else(|s| panic!("a retried move (expected {expected:?}) failed: {s:?}"));
        assert!(again.replayed, "a retried move was not marked replayed");
        assert_eq!(again.version, first.version);
        assert_eq!(again.events, first.events);
    }
    assert_unchanged(&mut client, &game_id, &after, "retried moves").await;
    assert_eq!(after[0].plies, 1);
    assert_eq!(side_of(after[0].to_move), waiter.side());
    // A refused command was not recorded under its key: the key still works once it fits.
    let reply = own_legal_moves(&get_game(&mut client, &game_id, waiter.viewer()).await)
        .into_iter()
        .next()
        .expect("a reply");
    let answer = client::submit_move(
        &mut client,
        &game_id,
        waiter.side(),
        "out-of-turn",
        Some(first.version),
        &reply,
    )
    .await
    .expect("the waiting side's move under the key of its refused one");
    assert!(!answer.replayed, "a refusal was stored as the key's answer");
    hidden_front_e2e::player::check_move_ack(waiter.side(), &reply, first.version, &answer);
}

/// Copies of one move sent at once to one server with one key (a client retrying before its
/// first attempt answered) all get the first answer: one applies, every other copy is its
/// replay, never a refusal, with or without an expected version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_retries_get_the_first_answer() {
    const COPIES: usize = 6;
    const PLIES: usize = 16;
    let db = TestDatabase::create().await;
    let server = Server::start("server", db.url()).await;
    let mut client = server.connect().await;
    let created = create_game(&mut client, "kim", "lee", "concurrent-retries").await;
    let game_id = created.game_id.clone();
    let mut players = [
        Player::new(pb::Side::South, 41),
        Player::new(pb::Side::North, 42),
    ];
    for player in &mut players {
        player.deploy(&mut client, &game_id).await;
    }
    let mut to_move = side_of(created.first_mover);
    let mut failures = Vec::new();
    for ply in 0..PLIES {
        let player = players
            .iter_mut()
            .find(|p| p.side() == to_move)
            .expect("a player per side");
        let view = get_game(&mut client, &game_id, player.viewer()).await;
        assert_eq!(side_of(view.to_move), to_move);
        let mv = player.choose_move(&view).expect("a legal move");
        let key = player.next_key();
        let expected = (ply % 2 == 0).then_some(view.version);
        let copies = (0..COPIES).map(|_| {
            let (mut client, game_id, key, mv) =
                (client.clone(), game_id.clone(), key.clone(), mv.clone());
            tokio::spawn(async move {
                client::submit_move(&mut client, &game_id, to_move, &key, expected, &mv).await
            })
        });
        let mut answers = Vec::new();
        for copy in copies.collect::<Vec<_>>() {
            answers.push(copy.await.expect("a copy's task"));
        }
        let fresh: Vec<&pb::CommandResult> = answers
            .iter()
            .filter_map(|a| a.as_ref().ok())
            .filter(|r| !r.replayed)
            .collect();
        assert_eq!(fresh.len(), 1, "ply {ply}: one copy applies: {answers:?}");
        let first = fresh[0].clone();
        hidden_front_e2e::player::check_move_ack(to_move, &mv, view.version, &first);
        for answer in &answers {
            match answer {
                Ok(r) => assert_eq!((r.version, &r.events), (first.version, &first.events)),
                Err(status) => failures.push(format!(
                    "ply {ply} (expected version {expected:?}): a copy got {:?}: {}",
                    status.code(),
                    status.message()
                )),
            }
        }
        let now = get_game(&mut client, &game_id, pb::Viewer::Spectator).await;
        assert_eq!(
            now.version, first.version,
            "ply {ply}: applied more than once"
        );
        if hidden_front_e2e::player::ends_game(&first) {
            break;
        }
        to_move = client::other(to_move);
    }
    assert!(
        failures.is_empty(),
        "retries of a command racing it were refused instead of answered:\n{}",
        failures.join("\n")
    );
}
