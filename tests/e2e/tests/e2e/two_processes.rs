//! Two server processes on one database, every command sent to both at once: each game still has
//! a single history. Per game, each move goes to both servers concurrently (which one gets it
//! first alternates), with the same or with different idempotency keys, with or without an
//! expected version. Exactly one copy is applied; the other gets the stored answer (same key) or a
//! refusal that fits the mode; the log, watched live on both servers from the start, is gapless,
//! alternates sides and holds exactly the applied moves.

use hidden_front_e2e::client::{
    self, Client, assert_gapless, get_game, moves_in_log, other, side_of, watch_to_end,
};
use hidden_front_e2e::player::{check_move_ack, ends_game};
use hidden_front_e2e::{Player, Server, TestDatabase, pb};
use pb::game_event::Event;
use tonic::{Code, Status};

/// Plies per game before the side to move resigns (keeps the test short; a natural end earlier
/// is fine too).
const PLIES: usize = 120;

/// How the two copies of each command are sent.
#[derive(Debug, Clone, Copy)]
struct Mode {
    /// Both copies carry the same idempotency key (a retry racing its original).
    same_key: bool,
    /// Both copies carry the version the move was chosen at.
    expected_version: bool,
}

const MODES: [Mode; 4] = [
    Mode {
        same_key: true,
        expected_version: false,
    },
    Mode {
        same_key: true,
        expected_version: true,
    },
    Mode {
        same_key: false,
        expected_version: false,
    },
    Mode {
        same_key: false,
        expected_version: true,
    },
];

/// Checks the two answers to one command sent twice; returns the one that applied it.
fn judge_pair(
    what: &str,
    mode: Mode,
    answers: [Result<pb::CommandResult, Status>; 2],
) -> pb::CommandResult {
    let fresh: Vec<&pb::CommandResult> = answers
        .iter()
        .filter_map(|a| a.as_ref().ok())
        .filter(|r| !r.replayed)
        .collect();
    assert_eq!(
        fresh.len(),
        1,
        "{what} ({mode:?}): exactly one copy must apply; answers {answers:?}"
    );
    let winner = fresh[0].clone();
    let loser = answers
        .iter()
        .find(|a| !matches!(a, Ok(r) if !r.replayed))
        .expect("the other answer");
    match (mode.same_key, loser) {
        // The same key: the other copy is a retry and gets the first answer.
        (true, Ok(replayed)) => {
            assert!(replayed.replayed);
            assert_eq!(
                (replayed.version, &replayed.events),
                (winner.version, &winner.events),
                "{what} ({mode:?}): a retry got another answer"
            );
        }
        (true, Err(status)) => panic!(
            "{what} ({mode:?}): a retry racing its original must get the first answer, got \
             {:?}: {}",
            status.code(),
            status.message()
        ),
        (false, Ok(r)) => panic!("{what} ({mode:?}): a second command was answered {r:?}"),
        // Another key: a second command, judged against the game after the first.
        (false, Err(status)) => {
            let expected = if mode.expected_version {
                Code::Aborted
            } else {
                Code::FailedPrecondition
            };
            assert_eq!(
                status.code(),
                expected,
                "{what} ({mode:?}): the second command: {}",
                status.message()
            );
        }
    }
    winner
}

/// A task that is aborted when this handle is dropped unawaited.
struct AbortOnDrop<T>(Option<tokio::task::JoinHandle<T>>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        if let Some(handle) = &self.0 {
            handle.abort();
        }
    }
}

/// What one game's run saw.
struct Report {
    game_id: String,
    first_mover: pb::Side,
    /// Applied moves, in order.
    moves: Vec<client::MoveRecord>,
    /// The version after the last command.
    version: u64,
    /// The live logs watched on each server from seq 1.
    logs: [Vec<pb::GameEvent>; 2],
}

async fn run_game(index: usize, mode: Mode, clients: [Client; 2]) -> Report {
    let mut clients = clients;
    let both = |clients: &[Client; 2], first: usize| {
        let first_client = clients[first].clone();
        let second_client = clients[1 - first].clone();
        (first_client, second_client)
    };

    // Creation, with one key, on both servers at once: one game.
    let key = format!("two-processes-{index}");
    let request = pb::CreateGameRequest {
        south_player: format!("south-{index}"),
        north_player: format!("north-{index}"),
        rules: String::new(),
        time_control: hidden_front_e2e::client::untimed(),
        idempotency_key: key,
    };
    let (mut a, mut b) = both(&clients, index % 2);
    let (ca, cb) = tokio::join!(a.create_game(request.clone()), b.create_game(request));
    let (ca, cb) = (
        ca.expect("CreateGame").into_inner(),
        cb.expect("CreateGame").into_inner(),
    );
    assert_eq!(ca.game_id, cb.game_id, "one creation key made two games");
    assert_eq!(ca.first_mover, cb.first_mover);
    assert!(
        ca.replayed != cb.replayed,
        "exactly one creation is fresh: {ca:?} {cb:?}"
    );
    let game_id = ca.game_id.clone();
    let first_mover = side_of(ca.first_mover);

    // Both servers follow the log live from the start (stopped if this game fails).
    let watchers = [0, 1].map(|s| {
        let mut client = clients[s].clone();
        let game_id = game_id.clone();
        AbortOnDrop(Some(tokio::spawn(async move {
            watch_to_end(&mut client, &game_id, 1).await
        })))
    });

    let seed = 0x2000 + 2 * index as u64;
    let mut players = [
        Player::new(pb::Side::South, seed),
        Player::new(pb::Side::North, seed + 1),
    ];
    players[0].deploy(&mut clients[0], &game_id).await;
    players[1].deploy(&mut clients[1], &game_id).await;

    let mut to_move = first_mover;
    let mut moves = Vec::new();
    let mut version;
    let mut ply = 0;
    loop {
        let player = players
            .iter_mut()
            .find(|p| p.side() == to_move)
            .expect("a player per side");
        let view = get_game(&mut clients[(ply / 2) % 2], &game_id, player.viewer()).await;
        assert_eq!(side_of(view.to_move), to_move, "{game_id} ply {ply}");
        let key = player.next_key();
        let other_key = if mode.same_key {
            key.clone()
        } else {
            player.next_key()
        };
        let expected = mode.expected_version.then_some(view.version);
        let (mut first, mut second) = both(&clients, ply % 2);
        if ply == PLIES {
            let (r1, r2) = tokio::join!(
                client::resign(&mut first, &game_id, to_move, &key, expected),
                client::resign(&mut second, &game_id, to_move, &other_key, expected),
            );
            let won = judge_pair(&format!("{game_id} resign"), mode, [r1, r2]);
            assert_eq!(won.version, view.version + 2, "{won:?}");
            assert!(ends_game(&won));
            version = won.version;
            break;
        }
        let mv = player.choose_move(&view).expect("a legal move");
        let (r1, r2) = tokio::join!(
            client::submit_move(&mut first, &game_id, to_move, &key, expected, &mv),
            client::submit_move(&mut second, &game_id, to_move, &other_key, expected, &mv),
        );
        let won = judge_pair(&format!("{game_id} ply {ply}"), mode, [r1, r2]);
        check_move_ack(to_move, &mv, view.version, &won);
        moves.push((to_move, mv.from, mv.to));
        version = won.version;
        if ends_game(&won) {
            break;
        }
        to_move = other(to_move);
        ply += 1;
    }

    let mut logs = Vec::new();
    for mut watcher in watchers {
        let handle = watcher.0.take().expect("a watcher");
        logs.push(handle.await.expect("a watcher"));
    }
    let logs: [Vec<pb::GameEvent>; 2] = logs.try_into().expect("two logs");
    Report {
        game_id,
        first_mover,
        moves,
        version,
        logs,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes() {
    let db = TestDatabase::create().await;
    // Both start (and migrate) at once on the fresh database.
    let (a, b) = tokio::join!(Server::start("A", db.url()), Server::start("B", db.url()));
    let clients = [a.connect().await, b.connect().await];

    let mut games = Vec::new();
    for (index, mode) in MODES.into_iter().enumerate() {
        let clients = clients.clone();
        games.push((mode, tokio::spawn(run_game(index, mode, clients))));
    }

    // Every game runs to its end before anything is judged, so that one mode's failure does not
    // hide what the others show.
    let mut reports = Vec::new();
    let mut failures = Vec::new();
    for (mode, game) in games {
        match game.await {
            Ok(report) => reports.push((mode, report)),
            Err(error) => failures.push(format!("{mode:?}: {}", panic_message(error))),
        }
    }

    let mut conn = db.connect().await;
    for (mode, report) in reports {
        let game_id = &report.game_id;
        // The same history, live, on both servers, and again from the log.
        assert_eq!(
            report.logs[0], report.logs[1],
            "{game_id} ({mode:?}): the servers disagree"
        );
        let mut clients = clients.clone();
        for (s, client) in clients.iter_mut().enumerate() {
            let replayed = watch_to_end(client, game_id, 1).await;
            assert_eq!(replayed, report.logs[s], "{game_id}: live log vs replay");
            let view = get_game(client, game_id, pb::Viewer::Spectator).await;
            assert_eq!(
                view.version, report.version,
                "{game_id}: version on server {s}"
            );
            assert_eq!(view.phase, pb::Phase::Ended as i32);
            assert_eq!(view.plies as usize, report.moves.len());
        }
        let log = &report.logs[0];
        assert_gapless(log, game_id, 1, report.version);
        assert!(
            matches!(
                log.last().and_then(|e| e.event.as_ref()),
                Some(Event::Ended(_))
            ),
            "{game_id}: the log does not end with the end"
        );

        // The moves alternate sides from the first mover, and are exactly the applied ones.
        let logged = moves_in_log(log);
        assert_eq!(
            logged, report.moves,
            "{game_id} ({mode:?}): logged vs applied moves"
        );
        let mut side = report.first_mover;
        for (i, (mover, _, _)) in logged.iter().enumerate() {
            assert_eq!(*mover, side, "{game_id}: move {i} by the wrong side");
            side = other(side);
        }
        let resigned = log
            .iter()
            .filter(|e| matches!(e.event, Some(Event::Resigned(_))))
            .count();
        assert!(resigned <= 1, "{game_id}: resigned {resigned} times");

        // Postgres holds one row per seq.
        let game_uuid = uuid::Uuid::parse_str(game_id).expect("a UUID");
        let (events, max_seq): (i64, i64) = sqlx::query_as(
            "SELECT count(*), coalesce(max(seq), 0) FROM game_events WHERE game_id = $1",
        )
        .bind(game_uuid)
        .fetch_one(&mut conn)
        .await
        .expect("count events");
        assert_eq!(
            (events, max_seq),
            (report.version as i64, report.version as i64)
        );
        eprintln!(
            "{game_id} ({mode:?}): {} moves, version {}",
            report.moves.len(),
            report.version
        );
    }
    assert!(
        failures.is_empty(),
        "games failed:\n{}",
        failures.join("\n")
    );
}

/// The message of a panicked task.
fn panic_message(error: tokio::task::JoinError) -> String {
    match error.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
            .unwrap_or_else(|| "a panic without message".to_string()),
        Err(error) => error.to_string(),
    }
}

/// A replica whose copy of a game is behind (another replica applied the last move) must judge
/// a command against the game as it is, not refuse it on its old copy. Deterministic: the first
/// move goes through B, the reply (chosen from B's current view, sent without an expected
/// version, as a gateway does) through A, which last saw the game before that first move.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_behind_judges_the_current_game() {
    let db = TestDatabase::create().await;
    let (a, b) = tokio::join!(Server::start("A", db.url()), Server::start("B", db.url()));
    let (mut ca, mut cb) = (a.connect().await, b.connect().await);

    let created = client::create_game(&mut ca, "ivan", "judy", "replica-behind").await;
    let game_id = created.game_id.clone();
    let mut players = [
        Player::new(pb::Side::South, 31),
        Player::new(pb::Side::North, 32),
    ];
    for player in &mut players {
        player.deploy(&mut ca, &game_id).await;
    }
    let first = side_of(created.first_mover);
    let (opener, replier) = if first == pb::Side::South {
        let [s, n] = &mut players;
        (s, n)
    } else {
        let [s, n] = &mut players;
        (n, s)
    };

    let opening = opener.play_turn(&mut cb, &game_id).await;
    let view = get_game(&mut cb, &game_id, replier.viewer()).await;
    assert_eq!(view.version, opening.version());
    let mv = replier.choose_move(&view).expect("a legal reply");
    let key = replier.next_key();
    let reply = client::submit_move(&mut ca, &game_id, replier.side(), &key, None, &mv)
        .await
        .unwrap_or_else(|s| {
            panic!(
                "server A refused {:?}'s legal move {}-{} at version {} (made through B): \
                 {:?}: {}",
                replier.side(),
                mv.from,
                mv.to,
                view.version,
                s.code(),
                s.message()
            )
        });
    check_move_ack(replier.side(), &mv, view.version, &reply);
    for client in [&mut ca, &mut cb] {
        let now = get_game(client, &game_id, pb::Viewer::Spectator).await;
        assert_eq!(now.version, reply.version);
        assert_eq!(side_of(now.to_move), first);
    }
}
