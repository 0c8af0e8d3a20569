//! A whole game through the real binary and Postgres: create, both deployments (reshuffle, own
//! deployment, swap, confirm), random legal moves from each side's own view until the game ends,
//! then the final views and the full log.

use hidden_front_e2e::client::{
    self, assert_gapless, create_game, get_game, moves_in_log, phase_of, side_of, watch_to_end,
};
use hidden_front_e2e::player::{Placements, assert_hides_opponent};
use hidden_front_e2e::{Player, Server, TestDatabase, pb, play_to_end};
use pb::game_event::Event;
use std::collections::{BTreeMap, BTreeSet};
use tonic::Code;

/// A random game ends well within this (the no-combat limit bounds a game without fights; random
/// play ends by flag capture or no legal moves after a few hundred plies).
const MAX_PLIES: usize = 3000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_game() {
    let db = TestDatabase::create().await;
    let server = Server::start("server", db.url()).await;
    let mut client = server.connect().await;

    let created = create_game(&mut client, "alice", "bob", "full-game").await;
    assert!(!created.replayed);
    let game_id = created.game_id.clone();
    let first_mover = side_of(created.first_mover);
    assert_ne!(first_mover, pb::Side::Unspecified);

    let start = get_game(&mut client, &game_id, pb::Viewer::Spectator).await;
    assert_eq!(start.game_id, game_id);
    assert_eq!(start.version, created.version);
    assert_eq!(phase_of(&start), pb::Phase::Deployment);
    assert_eq!(side_of(start.first_mover), first_mover);
    assert_eq!(side_of(start.to_move), pb::Side::Unspecified);
    assert_eq!(
        (start.south_player.as_str(), start.north_player.as_str()),
        ("alice", "bob")
    );
    assert_eq!(start.rules, "hidden-front");
    assert!(
        start.own_deployment.is_none(),
        "a spectator sees a deployment"
    );
    assert!(start.pieces.is_empty());

    let mut players = [
        Player::new(pb::Side::South, 0x5eed_0001),
        Player::new(pb::Side::North, 0x5eed_0002),
    ];
    let mut deployed: BTreeMap<i32, Placements> = BTreeMap::new();
    for player in &mut players {
        let placements = player.deploy(&mut client, &game_id).await;
        deployed.insert(player.side() as i32, placements);
    }

    // Play started: each side sees exactly its confirmed deployment, and nothing of the other's.
    let mut ids = BTreeSet::new();
    for player in &players {
        let view = get_game(&mut client, &game_id, player.viewer()).await;
        assert_eq!(phase_of(&view), pb::Phase::Play);
        assert_eq!(side_of(view.to_move), first_mover);
        assert_eq!((view.plies, view.plies_without_combat), (0, 0));
        assert!(view.south_confirmed && view.north_confirmed);
        assert!(
            view.own_deployment.is_none(),
            "own_deployment is for the deployment phase"
        );
        assert_eq!(view.pieces.len(), 50);
        assert_hides_opponent(&view);
        let own: Placements = view
            .pieces
            .iter()
            .filter(|p| side_of(p.side) == player.side())
            .map(|p| (p.square.clone(), p.piece.clone()))
            .collect();
        assert_eq!(
            own,
            deployed[&(player.side() as i32)],
            "board vs confirmed deployment"
        );
        ids = view.pieces.iter().map(|p| p.id).collect();
    }
    assert_eq!(ids.len(), 50, "piece ids are not unique");

    let started = std::time::Instant::now();
    let turns = play_to_end(&mut client, &game_id, &mut players, first_mover, MAX_PLIES).await;
    eprintln!(
        "game {game_id}: {} plies in {:?}",
        turns.len(),
        started.elapsed()
    );
    let last = turns.last().expect("at least one move");
    let version = last.version();

    // The end as each viewer sees it: same state, everything revealed.
    let mut boards = Vec::new();
    for viewer in [pb::Viewer::South, pb::Viewer::North, pb::Viewer::Spectator] {
        let view = get_game(&mut client, &game_id, viewer).await;
        assert_eq!(phase_of(&view), pb::Phase::Ended, "{viewer:?}");
        assert_eq!(view.version, version, "{viewer:?}");
        assert_eq!(view.plies as usize, turns.len(), "{viewer:?}");
        assert_eq!(side_of(view.to_move), pb::Side::Unspecified);
        let outcome = view.outcome.expect("an ended game has an outcome");
        assert_ne!(outcome.reason, pb::EndReason::Unspecified as i32);
        for piece in &view.pieces {
            assert!(
                !piece.piece.is_empty(),
                "{viewer:?}: hidden after the end: {piece:?}"
            );
        }
        boards.push((outcome, view.pieces));
    }
    assert!(
        boards.windows(2).all(|w| w[0] == w[1]),
        "viewers disagree on the end"
    );
    let (outcome, final_pieces) = boards.pop().expect("three views");
    // Who won must fit how it ended: these reasons are the last mover's win, the limit a draw.
    let winner = side_of(outcome.winner);
    match pb::EndReason::try_from(outcome.reason).expect("a known reason") {
        pb::EndReason::FlagCaptured | pb::EndReason::NoLegalMoves => {
            assert_eq!(winner, last.side, "{outcome:?}");
        }
        pb::EndReason::NoCombatLimit => {
            assert_eq!(winner, pb::Side::Unspecified, "{outcome:?}");
            let view = get_game(&mut client, &game_id, pb::Viewer::Spectator).await;
            assert!(view.plies_without_combat >= 100, "{view:?}");
        }
        other => panic!("a game of moves ended by {other:?}"),
    }

    // The log from seq 1: exactly 1..=version, ending right after GameEnded.
    let log = watch_to_end(&mut client, &game_id, 1).await;
    assert_gapless(&log, &game_id, 1, version);
    assert!(
        matches!(log[0].event, Some(Event::Created(ref c)) if side_of(c.first_mover) == first_mover),
        "{:?}",
        log[0]
    );
    match &log.last().expect("events").event {
        Some(Event::Ended(ended)) => {
            assert_eq!(ended.outcome, Some(outcome));
            assert_eq!(ended.pieces, final_pieces);
        }
        other => panic!("the log ends with {other:?}"),
    }
    let played: Vec<_> = turns
        .iter()
        .map(|t| (t.side, t.mv.from.clone(), t.mv.to.clone()))
        .collect();
    assert_eq!(
        moves_in_log(&log),
        played,
        "the log's moves are not the moves played"
    );
    // Each answer's events are the log's events at those seqs (the log tells everything; the
    // mover's answer may hide the defender's kind until the end).
    for turn in &turns {
        for event in &turn.result.events {
            let logged = &log[(event.seq - 1) as usize];
            assert_eq!(logged.seq, event.seq);
            assert_eq!(
                std::mem::discriminant(logged.event.as_ref().expect("event")),
                std::mem::discriminant(event.event.as_ref().expect("event")),
                "seq {}",
                event.seq
            );
        }
    }
    let count = |f: fn(&Event) -> bool| {
        log.iter()
            .filter(|e| e.event.as_ref().is_some_and(f))
            .count()
    };
    assert_eq!(count(|e| matches!(e, Event::DeploymentConfirmed(_))), 2);
    assert_eq!(count(|e| matches!(e, Event::PlayStarted(_))), 1);
    assert_eq!(count(|e| matches!(e, Event::Ended(_))), 1);
    // The full-information log shows each side's deployment as confirmed.
    for event in &log {
        if let Some(Event::DeploymentConfirmed(c)) = &event.event {
            let deployment = c
                .deployment
                .as_ref()
                .expect("the internal log shows deployments");
            let placements = hidden_front_e2e::player::to_map(&deployment.placements);
            assert_eq!(placements, deployed[&c.side]);
        }
    }

    // Resuming from the middle gives exactly the tail.
    let from = version - 5;
    let tail = watch_to_end(&mut client, &game_id, from).await;
    assert_gapless(&tail, &game_id, from, version);
    assert_eq!(tail, log[(from - 1) as usize..]);

    // The game is over: a further move is refused and changes nothing.
    let mover = client::other(last.side);
    let refused = client::submit_move(
        &mut client,
        &game_id,
        mover,
        "after-the-end",
        None,
        &pb::Move {
            from: last.mv.to.clone(),
            to: last.mv.from.clone(),
        },
    )
    .await;
    client::expect_code(refused, Code::FailedPrecondition, "a move after the end");
    let view = get_game(&mut client, &game_id, pb::Viewer::Spectator).await;
    assert_eq!(view.version, version);
}

/// A game's log stream ends after `GameEnded`, also for a watcher that asks only for what comes
/// after the end (a client resuming after it saw the end): nothing will ever come, so the stream
/// must end rather than stay open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watching_an_ended_game_ends() {
    /// Far more than an empty, ended stream needs to close.
    const CLOSE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);
    let db = TestDatabase::create().await;
    let server = Server::start("server", db.url()).await;
    let mut client = server.connect().await;
    let created = create_game(&mut client, "olga", "pete", "ended-watch").await;
    let game_id = created.game_id.clone();
    let resigned = client::resign(&mut client, &game_id, pb::Side::North, "give-up", None)
        .await
        .expect("resigning during deployment");
    let version = resigned.version;
    assert_eq!(version, created.version + 2, "{resigned:?}");

    let log = watch_to_end(&mut client, &game_id, 1).await;
    assert_gapless(&log, &game_id, 1, version);
    match &log.last().expect("events").event {
        Some(Event::Ended(ended)) => {
            let outcome = ended.outcome.expect("an outcome");
            assert_eq!(side_of(outcome.winner), pb::Side::South);
            assert_eq!(outcome.reason, pb::EndReason::Resigned as i32);
        }
        other => panic!("the log ends with {other:?}"),
    }
    let last = watch_to_end(&mut client, &game_id, version).await;
    assert_gapless(&last, &game_id, version, version);

    for from in [version + 1, version + 100] {
        let mut stream = client::open_watch(&mut client, &game_id, from).await;
        let next = tokio::time::timeout(CLOSE_DEADLINE, stream.message()).await;
        match next {
            Ok(Ok(None)) => {}
            Ok(Ok(Some(event))) => panic!("WatchGame from {from} after the end sent {event:?}"),
            Ok(Err(status)) => panic!("WatchGame from {from} after the end failed: {status:?}"),
            Err(_) => panic!(
                "WatchGame from seq {from} of a game that ended at seq {version} stays open \
                 (nothing after {CLOSE_DEADLINE:?}): it should end, as it does after sending \
                 GameEnded"
            ),
        }
    }
}
