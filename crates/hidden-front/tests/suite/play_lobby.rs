//! `hidden-front play`'s lobby against the real server (the application `hidden-front serve`
//! runs, in this test's process: gateway, session, clock, matchmaking and the computer player on
//! real Postgres), each player a real `hidden-front play` process typing into its stdin, as a
//! person in a terminal would.
//!
//! - `the_computer_is_played_through_the_lobby_to_the_end`: the lobby starts a game against the
//!   computer; the board shows the rails and the clock, `legend` the symbols; the player
//!   deploys, moves from the listed legal moves, asks for the clock, resigns, and is back in the
//!   lobby, where the finished game is listed and the rating shown.
//! - `an_invite_created_in_one_client_is_accepted_in_another`: one client creates an invite (its
//!   link and code printed), a second accepts it by code, both are taken into the game, deploy
//!   and see the move clock and each other's presence; a third watches by link from the lobby and
//!   a fourth with `--watch`; a resignation ends it for all of them.
//! - `two_clients_are_matched_and_a_wait_can_be_cancelled`: a player queues, is shown the wait
//!   growing, and cancels; then two players queue (casual) and both are taken into the same game;
//!   `lobby` leaves it for the lobby, which lists it.
//! - `presence_is_pushed_and_moves_need_no_server`: a player who leaves the game and comes back
//!   is told to the other at once (status items), and `moves` answers with the server gone.

use crate::common::{InProcess, Terminal};
use hidden_front_gateway::auth::{DEV_SECRET, mint_dev_token};
use hidden_front_test_database::TestDatabase;
use std::process::Stdio;
use std::time::Duration;

pub(crate) const SERVE_ARGS: &[&str] = &["--actions-per-second", "5000"];

/// How long one expected line may take (a computer move, a lobby push, a process start).
pub(crate) const DEADLINE: Duration = Duration::from_secs(60);

/// The client as a process: a terminal of `common`, started against the test's server.
pub(crate) struct Player;

impl Player {
    pub(crate) fn start(name: &'static str, server: &InProcess, args: &[&str]) -> Terminal {
        Player::start_at(name, &urls(server), args)
    }

    /// [`Player::start`] with the server's (gRPC, HTTP) URLs.
    pub(crate) fn start_at(name: &'static str, urls: &(String, String), args: &[&str]) -> Terminal {
        let (gateway_url, http_url) = urls;
        let mut all = vec![
            "--gateway".to_string(),
            gateway_url.clone(),
            "--http".to_string(),
            http_url.clone(),
            "--token".to_string(),
            mint_dev_token(
                DEV_SECRET.as_bytes(),
                name,
                Duration::from_secs(3600),
                false,
            )
            .expect("a development token"),
        ];
        all.extend(args.iter().map(|a| a.to_string()));
        Terminal::start(name, all, Stdio::inherit(), DEADLINE)
    }
}

/// The server's gRPC and HTTP URLs, as `--gateway` and `--http` take them.
pub(crate) fn urls(server: &InProcess) -> (String, String) {
    (
        format!("http://{}", server.ports.grpc),
        format!(
            "http://{}",
            server.ports.http.expect("the gateway's HTTP port")
        ),
    )
}

/// Runs blocking process work off the runtime's workers (the application serves on them).
pub(crate) async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(work).await.expect("no panic")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_computer_is_played_through_the_lobby_to_the_end() {
    let db = TestDatabase::create().await;
    let server = InProcess::start(db.url(), SERVE_ARGS).await;
    let mut alice = Player::start("tl-alice", &server, &[]);
    blocking(move || {
        alice.wait_for("lobby: play the computer");
        alice.send("computer junqi nowhere");
        alice.wait_for("\"nowhere\" is not a rule set");
        alice.send("computer junqi");
        alice.wait_for("a game against the computer:");
        let board =
            alice.wait_for("type `help` for the commands (`lobby` to go back to the lobby).");
        // The rails and roads, the deployment clock, the symbols.
        assert!(board.contains("═══"), "{board}");
        assert!(board.contains('║'), "{board}");
        assert!(board.contains("front line: cross at A, C, E"), "{board}");
        assert!(board.contains("deployment, "), "{board}");
        assert!(
            board.contains(" s left: south (you) not confirmed"),
            "{board}"
        );
        assert!(board.contains("relaxed: 300/120/300 s"), "{board}");
        assert!(
            board.contains("`legend` explains the board's symbols"),
            "{board}"
        );
        alice.send("legend");
        let legend = alice.wait_for("mountains");
        assert!(
            legend.contains("pieces of hidden-front (25 a side"),
            "{legend}"
        );
        assert!(legend.contains("legend: ═ ║ railway"), "{legend}");
        assert!(legend.contains("  9    x1  commander-in-chief"), "{legend}");

        alice.send("confirm");
        alice.wait_for("play starts");
        // The board as it is now (it may have been drawn before the line above).
        alice.send("board");
        for _ in 0..2 {
            let board = alice.wait_for(" s left (`moves` lists them)");
            assert!(board.contains("your move: "), "{board}");
            assert!(board.contains("timeouts: S 0, N 0 of 3"), "{board}");
            alice.send("moves");
            alice.wait_for("legal moves:\n");
            let first = alice.wait_for("\n");
            let (from, tos) = first.trim().split_once(" -> ").expect("a move list line");
            let to = tos.split_whitespace().next().unwrap();
            alice.send(&format!("{from} {to}"));
            let told = alice.wait_for(&format!("{from}-{to}"));
            assert!(told.contains("moved: south (you) "), "{told}");
        }
        alice.send("clock");
        let clock = alice.wait_for("timeouts used:");
        assert!(clock.contains("clock: "), "{clock}");
        alice.send("resign");
        let end = alice.wait_for("the game is over.");
        assert!(
            end.contains("game over: north wins (resigned) - you lose"),
            "{end}"
        );
        alice.wait_for("back in the lobby");
        alice.send("games");
        let games = alice.wait_for("ended: north wins (resigned) - you lose");
        assert!(games.contains("your games (1):"), "{games}");
        alice.send("rating");
        alice.wait_for("rating: 1500 (deviation 350");
        alice.send("quit");
        assert!(alice.exits_cleanly());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invite_created_in_one_client_is_accepted_in_another() {
    let db = TestDatabase::create().await;
    let server = InProcess::start(db.url(), SERVE_ARGS).await;
    let mut alice = Player::start("ti-alice", &server, &[]);
    let mut bob = Player::start("ti-bob", &server, &[]);
    let mut carol = Player::start("ti-carol", &server, &[]);
    let urls = urls(&server);
    blocking(move || {
        alice.wait_for("lobby: play the computer");
        alice.send("invite gunjin");
        alice.wait_for("invite created: gunjin-shogi, relaxed");
        let code = alice.value_after("  code: ");
        let link = alice.value_after("  link: ");
        assert!(
            link.ends_with(&code),
            "the link carries the code: {link} / {code}"
        );
        alice.wait_for("waiting for them (type `cancel` to withdraw the invite)");
        // While waiting, only `cancel` is taken.
        alice.send("games");
        alice.wait_for("`cancel` first");

        bob.wait_for("lobby: play the computer");
        bob.send(&format!("accept {}", code.to_lowercase()));
        let game = bob.value_after("invite accepted: game ");
        let game = game.split(',').next().unwrap().to_string();
        alice.wait_for("ti-bob accepted your invite after ");

        for player in [&mut alice, &mut bob] {
            let board = player.wait_for("type `help` for the commands");
            assert!(board.contains("  wall"), "{board}");
            assert!(board.contains("deployment, "), "{board}");
            assert!(board.contains(" s left: south"), "{board}");
        }
        alice.send("confirm");
        bob.send("confirm");
        for player in [&mut alice, &mut bob] {
            player.wait_for("play starts");
            // The clock now (the board may have been drawn before or after the line above).
            player.send("clock");
            let clock = player.wait_for("(3 lose the game)");
            assert!(clock.contains("clock: "), "{clock}");
            assert!(clock.contains(" to move, "), "{clock}");
            assert!(clock.contains("s left (at 0 it is a timeout"), "{clock}");
            assert!(
                clock.contains("timeouts used: south 0 of 3, north 0 of 3"),
                "{clock}"
            );
            player.wait_for("opponent ");
        }

        // A spectator, by the game's link.
        carol.wait_for("lobby: play the computer");
        carol.send(&format!("watch http://127.0.0.1:8080/game/{game}"));
        let watched = carol.wait_for("type `help` for the commands");
        assert!(watched.contains(" to move, "), "{watched}");
        assert!(
            watched.contains("both connected") || watched.contains(" away"),
            "{watched}"
        );
        assert!(!watched.contains("(you)"), "{watched}");
        // And one started with --watch, which leaves when the game ends.
        let mut dave = Player::start_at("ti-dave", &urls, &["--watch", &game]);
        let watched = dave.wait_for("type `help` for the commands.");
        assert!(
            watched.contains("both connected") || watched.contains(" away"),
            "{watched}"
        );

        alice.send("resign");
        alice.wait_for("game over: ");
        alice.wait_for("the game is over.");
        alice.wait_for("back in the lobby");
        bob.wait_for("resigned) - you win");
        bob.wait_for("back in the lobby");
        // The spectator's board may already be the ended one when the stream tells the
        // resignation: the end is told either way.
        let end = carol.wait_for("the game is over.");
        assert!(end.contains("game over: north wins (resigned)"), "{end}");
        assert!(end.contains("result: north wins (resigned)"), "{end}");
        assert!(
            !end.contains(" - you "),
            "a spectator neither wins nor loses: {end}"
        );
        carol.wait_for("back in the lobby");
        dave.wait_for("the game is over.");
        assert!(dave.exits_cleanly(), "--watch leaves at the end");
        for player in [alice, bob, carol] {
            let mut player = player;
            player.send("quit");
            assert!(player.exits_cleanly());
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_are_matched_and_a_wait_can_be_cancelled() {
    let db = TestDatabase::create().await;
    let server = InProcess::start(db.url(), SERVE_ARGS).await;
    let mut alice = Player::start("tm-alice", &server, &[]);
    let mut bob = Player::start("tm-bob", &server, &[]);
    blocking(move || {
        alice.wait_for("lobby: play the computer");
        alice.send("match junqi relaxed");
        alice.wait_for("in the queue: hidden-front, relaxed, casual");
        alice.wait_for("waiting for an opponent (type `cancel` to leave the queue)");
        // The wait is shown as it grows (every 10 s).
        alice.wait_for("waiting for an opponent: 10 s (type `cancel` to stop)");
        alice.send("cancel");
        alice.wait_for("left the queue");
        alice.send("games");
        alice.wait_for("you have no games yet");

        alice.send("match relaxed junqi");
        alice.wait_for("in the queue: hidden-front, relaxed, casual");
        bob.wait_for("lobby: play the computer");
        bob.send("match junqi relaxed");
        let found = bob.value_after("match found");
        assert!(found.contains("against tm-alice"), "{found}");
        let found = alice.value_after("match found");
        assert!(found.contains("against tm-bob"), "{found}");
        let game = found
            .split("game ")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .expect("the game id")
            .to_string();
        for player in [&mut alice, &mut bob] {
            let board = player.wait_for("type `help` for the commands");
            assert!(board.contains("deployment, "), "{board}");
            assert!(board.contains(" s left: south"), "{board}");
        }
        alice.send("lobby");
        alice.wait_for("back in the lobby");
        alice.send("games");
        let games = alice.wait_for("deployment");
        assert!(games.contains(&game), "{games}");
        for player in [alice, bob] {
            let mut player = player;
            player.send("quit");
            assert!(player.exits_cleanly());
        }
    })
    .await;
}

/// The clients follow a game from its stream: when one player goes back to the lobby the other
/// is told at once that the opponent is away, and when it comes back that it is back, with
/// nothing typed and no view read; and `moves` lists the legal moves from the board on screen
/// with the engine in the binary, so it answers with the server gone.
/// Waits until the store holds an unexpired "connected" report of a north player (polled).
async fn north_on_record(pool: &sqlx::PgPool) {
    let on_record = async {
        loop {
            let reports: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM presence \
                 WHERE side = 'north' AND connected AND lease_until > now()",
            )
            .fetch_one(pool)
            .await
            .expect("presence read");
            if reports > 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(DEADLINE, on_record)
        .await
        .expect("north's connection recorded in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presence_is_pushed_and_moves_need_no_server() {
    let db = TestDatabase::create().await;
    let server = InProcess::start(db.url(), SERVE_ARGS).await;
    let mut alice = Player::start("tp-alice", &server, &[]);
    let mut bob = Player::start("tp-bob", &server, &[]);
    // Taken into the blocking work, which stops it halfway.
    let server = std::sync::Mutex::new(Some(server));
    let (runtime, pool) = (tokio::runtime::Handle::current(), db.pool(1).await);
    blocking(move || {
        alice.wait_for("lobby: play the computer");
        alice.send("invite junqi");
        let code = alice.value_after("  code: ");
        bob.wait_for("lobby: play the computer");
        bob.send(&format!("accept {code}"));
        for player in [&mut alice, &mut bob] {
            player.wait_for("type `help` for the commands");
            player.send("confirm");
        }
        for player in [&mut alice, &mut bob] {
            player.wait_for("play starts");
        }
        // Bob's connection is on record before he leaves: on a loaded machine his report can
        // trail his "play starts", and one still queued when he leaves is never sent, so nothing
        // would flip for alice to be told of.
        runtime.block_on(north_on_record(&pool));

        // Bob leaves for the lobby and comes back: alice is told both, typing nothing.
        bob.send("lobby");
        bob.wait_for("back in the lobby");
        alice.wait_for(" is away: back within ");
        bob.send("open");
        bob.wait_for("type `help` for the commands");
        alice.wait_for(" is back");

        // The server goes away; both boards stay, and `moves` answers from them: the side to
        // move lists its moves, the other is told whose turn it is.
        drop(server.lock().unwrap().take());
        let mut movers = 0;
        for player in [&mut alice, &mut bob] {
            player.wait_for("connection lost");
            player.send("moves");
            let listed = player.wait_for("legal moves");
            if listed.ends_with("no legal moves") {
                player.wait_for("'s turn)");
            } else {
                player.wait_for(":\n");
                let line = player.wait_for("\n");
                assert!(line.contains(" -> "), "a move list: {line}");
                movers += 1;
            }
        }
        assert_eq!(movers, 1, "exactly the side to move lists moves");
        for player in [alice, bob] {
            let mut player = player;
            player.send("quit");
            assert!(player.exits_cleanly());
        }
    })
    .await;
}
