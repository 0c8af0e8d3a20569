//! A server SIGKILLed in the middle of a game, restarted on the same database: the game goes on
//! from exactly where it was. Every acknowledged move is in the log exactly once and in order, a
//! move whose answer was lost is resolved by retrying its key (applied once, never twice), and a
//! re-sent acknowledged move gets its first answer.

use hidden_front_e2e::client::{
    self, assert_gapless, create_game, get_game, moves_in_log, next_event, open_watch, other,
    side_of, watch_to_end, watch_until,
};
use hidden_front_e2e::player::{Turn, check_move_ack};
use hidden_front_e2e::{Player, Server, TestDatabase, pb, play, play_to_end};

/// Plies played between kills.
const PLIES_PER_ROUND: usize = 10;
/// A random game ends well within this.
const MAX_PLIES: usize = 3000;

/// When the server dies.
#[derive(Debug, Clone, Copy)]
enum Kill {
    /// Right after a move request was handed to the client: it may not have reached the server,
    /// may be being judged, or may be committed.
    AfterSend,
    /// After the move is committed (seen on the log stream) but maybe before its answer arrived.
    AfterCommit,
    /// Between moves, with nothing in flight.
    Idle,
}

fn played(turns: &[Turn]) -> Vec<client::MoveRecord> {
    turns
        .iter()
        .map(|t| (t.side, t.mv.from.clone(), t.mv.to.clone()))
        .collect()
}

/// With the engine snapshot written at every append: a restart finds every game at its snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_restart() {
    let lagging_kills = sigkill_restart_with(&["--snapshot-interval", "1"]).await;
    assert_eq!(lagging_kills, 0, "a snapshot at every append never lags");
}

/// The same with the engine snapshot written every 4 events (the default, 16, behaves alike
/// with rarer snapshots): a restart finds the game's row behind its log and must replay the rest
/// (asserted: at least one kill leaves it so).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_restart_with_sparse_snapshots() {
    let lagging_kills = sigkill_restart_with(&["--snapshot-interval", "4"]).await;
    assert!(
        lagging_kills > 0,
        "no kill left the snapshot behind the log"
    );
}

/// Plays the kills and the game to its end on servers with `serve_args`; returns how many kills
/// left the game's newest snapshot (raw or `jsonb`) behind its log's head, so the restart
/// replays events after it.
async fn sigkill_restart_with(serve_args: &[&str]) -> usize {
    let db = TestDatabase::create().await;
    let mut server = Server::start_with_args("server", db.url(), serve_args).await;
    let mut client = server.connect().await;

    let created = create_game(&mut client, "frank", "grace", "sigkill-create").await;
    let game_id = created.game_id.clone();
    let mut players = [
        Player::new(pb::Side::South, 0xdead_0001),
        Player::new(pb::Side::North, 0xdead_0002),
    ];
    for player in &mut players {
        player.deploy(&mut client, &game_id).await;
    }

    let mut acked: Vec<Turn> = Vec::new();
    let mut lagging_kills = 0;
    let mut next = side_of(created.first_mover);
    for kill in [Kill::AfterSend, Kill::AfterCommit, Kill::Idle] {
        let turns = play(&mut client, &game_id, &mut players, next, PLIES_PER_ROUND).await;
        let last_acked = turns.last().expect("a round plays moves").clone();
        acked.extend(turns);
        assert!(
            !last_acked.ended(),
            "the game ended after {} plies, before the kills (change the seeds)",
            acked.len()
        );
        next = other(last_acked.side);

        // The next move, and the kill.
        let player = players
            .iter_mut()
            .find(|p| p.side() == next)
            .expect("a player per side");
        let view = get_game(&mut client, &game_id, player.viewer()).await;
        assert_eq!(view.version, last_acked.version());
        let mv = player.choose_move(&view).expect("a legal move");
        let key = player.next_key();
        let expected = view.version;
        let send = |client: &client::Client| {
            let (mut client, game_id, key, mv) =
                (client.clone(), game_id.clone(), key.clone(), mv.clone());
            tokio::spawn(async move {
                client::submit_move(&mut client, &game_id, next, &key, Some(expected), &mv).await
            })
        };
        let in_flight = match kill {
            Kill::AfterSend => {
                let task = send(&client);
                server.kill();
                Some(task.await.expect("the request task"))
            }
            Kill::AfterCommit => {
                let mut watch = open_watch(&mut client, &game_id, view.version + 1).await;
                let task = send(&client);
                let committed = next_event(&mut watch, &game_id, &[])
                    .await
                    .expect("the log stream goes on");
                assert_eq!(committed.seq, view.version + 1);
                assert_eq!(
                    moves_in_log(std::slice::from_ref(&committed)),
                    vec![(next, mv.from.clone(), mv.to.clone())]
                );
                server.kill();
                Some(task.await.expect("the request task"))
            }
            Kill::Idle => {
                server.kill();
                None
            }
        };
        let mut conn = db.connect().await;
        let lagging: bool = sqlx::query_scalar(
            "SELECT COALESCE(head_version, version) > GREATEST(version, raw_version) \
                 FROM games WHERE game_id = $1",
        )
        .bind(uuid::Uuid::parse_str(&game_id).expect("a UUID"))
        .fetch_one(&mut conn)
        .await
        .expect("the game's row");
        lagging_kills += usize::from(lagging);
        server.restart().await;
        client = server.connect().await;

        // After the restart the game is exactly the acknowledged moves, plus the move in flight
        // only if it was committed.
        let restarted = get_game(&mut client, &game_id, player.viewer()).await;
        let committed = restarted.version > last_acked.version();
        eprintln!(
            "kill {kill:?}: the move in flight was {}, its answer {}",
            if committed {
                "committed"
            } else {
                "not committed"
            },
            match &in_flight {
                None => "not asked for".to_string(),
                Some(Ok(_)) => "arrived".to_string(),
                Some(Err(status)) => format!("lost ({:?})", status.code()),
            }
        );
        let in_play = restarted.phase == pb::Phase::Play as i32;
        if committed {
            assert!(in_flight.is_some(), "{kill:?}: the game moved by itself");
            if in_play {
                assert_eq!(side_of(restarted.to_move), other(next));
            }
        } else {
            assert!(in_play, "{kill:?}: {restarted:?}");
            assert_eq!(restarted.version, last_acked.version(), "{kill:?}");
            assert_eq!(side_of(restarted.to_move), next);
        }
        if matches!(kill, Kill::AfterCommit) {
            assert!(committed, "a move seen on the log was lost by the kill");
        }

        // Resolve the move in flight by retrying its key: applied exactly once either way.
        let resolved = if let Some(first) = in_flight {
            let retry =
                client::submit_move(&mut client, &game_id, next, &key, Some(view.version), &mv)
                    .await
                    .unwrap_or_else(|s| panic!("{kill:?}: retrying the move in flight: {s:?}"));
            assert_eq!(
                retry.replayed, committed,
                "{kill:?}: a retry must be the stored answer exactly when the move was committed"
            );
            check_move_ack(next, &mv, view.version, &retry);
            if let Ok(first) = first {
                assert!(retry.replayed, "{kill:?}: an answered move was not stored");
                assert_eq!(
                    (retry.version, &retry.events),
                    (first.version, &first.events)
                );
            }
            Some(Turn {
                side: next,
                mv: mv.clone(),
                key: key.clone(),
                expected_version: view.version,
                result: retry,
            })
        } else {
            None
        };

        // Re-sending the last move acknowledged before the kill gets its first answer.
        let again = client::submit_move(
            &mut client,
            &game_id,
            last_acked.side,
            &last_acked.key,
            Some(last_acked.expected_version),
            &last_acked.mv,
        )
        .await
        .unwrap_or_else(|s| panic!("{kill:?}: re-sending an acknowledged move: {s:?}"));
        assert!(
            again.replayed,
            "{kill:?}: an acknowledged move was applied again"
        );
        assert_eq!(
            (again.version, &again.events),
            (last_acked.version(), &last_acked.result.events)
        );

        if let Some(turn) = resolved {
            next = other(turn.side);
            acked.push(turn);
        }
        let version = acked.last().expect("moves").version();
        let now = get_game(&mut client, &game_id, pb::Viewer::Spectator).await;
        assert_eq!(
            now.version, version,
            "{kill:?}: the game's version after the restart"
        );
        assert_eq!(now.plies as usize, acked.len(), "{kill:?}");
        let log = watch_until(&mut client, &game_id, 1, version).await;
        assert_gapless(&log, &game_id, 1, version);
        assert_eq!(
            moves_in_log(&log),
            played(&acked),
            "{kill:?}: the log vs the acknowledged moves"
        );
        if acked.last().is_some_and(Turn::ended) {
            break;
        }
    }

    // The game goes on to its end on the restarted server.
    if !acked.last().is_some_and(Turn::ended) {
        acked.extend(play_to_end(&mut client, &game_id, &mut players, next, MAX_PLIES).await);
    }
    let version = acked.last().expect("moves").version();
    let log = watch_to_end(&mut client, &game_id, 1).await;
    assert_gapless(&log, &game_id, 1, version);
    assert_eq!(moves_in_log(&log), played(&acked));
    let end = get_game(&mut client, &game_id, pb::Viewer::Spectator).await;
    assert_eq!((end.phase, end.version), (pb::Phase::Ended as i32, version));

    // What Postgres holds agrees: one row per seq, one stored answer per applied command key.
    let mut conn = db.connect().await;
    let game_uuid = uuid::Uuid::parse_str(&game_id).expect("a UUID");
    let (events, max_seq): (i64, i64) = sqlx::query_as(
        "SELECT count(*), coalesce(max(seq), 0) FROM game_events WHERE game_id = $1",
    )
    .bind(game_uuid)
    .fetch_one(&mut conn)
    .await
    .expect("count events");
    assert_eq!((events, max_seq), (version as i64, version as i64));
    for turn in &acked {
        let stored: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM game_commands WHERE game_id = $1 AND idempotency_key LIKE $2",
        )
        .bind(game_uuid)
        .bind(format!("%{}", turn.key))
        .fetch_one(&mut conn)
        .await
        .expect("count commands");
        assert_eq!(stored, 1, "stored answers for key {}", turn.key);
    }
    lagging_kills
}
