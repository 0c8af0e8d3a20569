//! `hidden-front play` on its one `PlayerService/Connect` stream, against the real server (the
//! application in this test's process on real Postgres), each player a real `hidden-front play`
//! process typing into its stdin.
//!
//! - `a_whole_game_goes_on_one_connect_stream_per_client`: two clients meet by invite, deploy,
//!   move, offer and decline a draw, resign, list their games and read their ratings; the
//!   server's per-RPC counter then shows exactly two `Connect` calls and not one call of any
//!   other `PlayerService` method (the unary actions, `GetGame`, `Subscribe`, `WatchLobby`, ...).
//! - `a_restarted_server_has_its_players_follow_again_from_the_right_seq`: the server stops (its
//!   gateway says goodbye with resume points) and comes back on the same ports; each client tells
//!   the outage once, follows the game again from its last event + 1, and the game goes on, every
//!   event told once and none missing.

use crate::common::{InProcess, Terminal, http_get};
use crate::play_lobby::{DEADLINE, Player, SERVE_ARGS, blocking};
use hidden_front_metrics_names as names;
use hidden_front_test_database::TestDatabase;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// A client and everything it printed that the test has read, in order.
struct Seat {
    terminal: Terminal,
    output: String,
}

impl Seat {
    fn new(terminal: Terminal) -> Seat {
        Seat {
            terminal,
            output: String::new(),
        }
    }

    fn send(&mut self, line: &str) {
        self.terminal.send(line);
    }

    fn wait_for(&mut self, text: &str) -> String {
        let read = self.terminal.wait_for(text);
        self.output.push_str(&read);
        read
    }

    /// The rest of the current line after `text`.
    fn value_after(&mut self, text: &str) -> String {
        self.wait_for(text);
        self.wait_for("\n").trim().to_string()
    }

    /// The sequence numbers of the events told so far (`#N ...` lines), in the order told.
    fn told(&self) -> Vec<u64> {
        self.output
            .lines()
            .filter_map(|line| line.strip_prefix('#')?.split(' ').next()?.parse().ok())
            .collect()
    }

    fn quit(mut self) {
        self.send("quit");
        assert!(self.terminal.exits_cleanly());
    }
}

/// Two clients in the lobby, the first invites, the second accepts, both are in the game,
/// deploy (the first reshuffles first) and see play start.
fn meet_and_deploy(alice: &mut Seat, bob: &mut Seat) {
    alice.wait_for("lobby: play the computer");
    alice.send("invite junqi");
    let code = alice.value_after("  code: ");
    bob.wait_for("lobby: play the computer");
    bob.send(&format!("accept {code}"));
    for player in [&mut *alice, &mut *bob] {
        player.wait_for("type `help` for the commands");
    }
    alice.send("shuffle");
    alice.wait_for("your draft changed");
    for player in [&mut *alice, &mut *bob] {
        player.send("confirm");
    }
    for player in [&mut *alice, &mut *bob] {
        player.wait_for("play starts");
    }
}

/// One turn: the side to move (found by asking both for `moves`: the other is told whose turn
/// it is) plays its first listed move, and both are told it (the mover when its answer has come,
/// the other by its follow) before the next turn.
fn one_turn(seats: [&mut Seat; 2]) {
    let [a, b] = seats;
    for seat in [&mut *a, &mut *b] {
        seat.send("moves");
    }
    let mut played = None;
    for (i, seat) in [&mut *a, &mut *b].into_iter().enumerate() {
        let listed = seat.wait_for("legal moves");
        if listed.ends_with("no legal moves") {
            seat.wait_for("'s turn)");
            continue;
        }
        seat.wait_for(":\n");
        let line = seat.wait_for("\n");
        let (from, tos) = line.trim().split_once(" -> ").expect("a move list line");
        let to = tos.split_whitespace().next().expect("a destination");
        assert!(played.is_none(), "both sides listed moves");
        played = Some((i, from.to_string(), to.to_string()));
    }
    let (mover, from, to) = played.expect("one side listed moves");
    [&mut *a, &mut *b][mover].send(&format!("{from} {to}"));
    for seat in [a, b] {
        let told = seat.wait_for(&format!("{from}-{to}"));
        assert!(told.contains(" moved: "), "{told}");
    }
}

/// `hf_grpc_requests_total` of `PlayerService`, summed over status codes, by method.
async fn player_calls(metrics: SocketAddr) -> BTreeMap<String, u64> {
    let text = http_get(metrics, "/metrics").await;
    let mut calls = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(&format!("{}{{", names::GRPC_REQUESTS_TOTAL)) else {
            continue;
        };
        let Some((labels, value)) = rest.split_once("} ") else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|pair| pair.strip_prefix(&format!("{name}=\"")))
                .map(|value| value.trim_end_matches('"').to_string())
        };
        if label(names::GRPC_SERVICE).as_deref() != Some("hiddenfront.v1.PlayerService") {
            continue;
        }
        let method = label(names::GRPC_METHOD).expect("a method label");
        let count: f64 = value.trim().parse().expect("a count");
        *calls.entry(method).or_default() += count as u64;
    }
    calls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_game_goes_on_one_connect_stream_per_client() {
    let db = TestDatabase::create().await;
    let server = InProcess::start(db.url(), SERVE_ARGS).await;
    let metrics = server.ports.metrics;
    let mut alice = Seat::new(Player::start("tc-alice", &server, &[]));
    let mut bob = Seat::new(Player::start("tc-bob", &server, &[]));
    blocking(move || {
        meet_and_deploy(&mut alice, &mut bob);
        for _ in 0..4 {
            one_turn([&mut alice, &mut bob]);
        }
        alice.send("draw");
        alice.wait_for("(you) offers a draw");
        bob.wait_for("offers a draw");
        bob.send("decline");
        bob.wait_for("(you) declined the draw offer");
        alice.wait_for("declined the draw offer");
        // A refusal reads as the unary method's did: the reason's words, as an error line.
        bob.send("accept");
        bob.wait_for("error: ");
        alice.send("resign");
        for player in [&mut alice, &mut bob] {
            player.wait_for("the game is over.");
            player.wait_for("back in the lobby");
        }
        alice.send("games");
        alice.wait_for("your games (1):");
        bob.send("rating");
        bob.wait_for("rating: ");
        alice.quit();
        bob.quit();
    })
    .await;

    // Counted as each stream ends, which the server sees once the clients have gone.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let calls = loop {
        let calls = player_calls(metrics).await;
        if calls.get("Connect").copied().unwrap_or(0) >= 2 {
            break calls;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the two Connect streams were not counted: {calls:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(
        calls.get("Connect"),
        Some(&2),
        "one stream per client: {calls:?}"
    );
    let others: Vec<_> = calls
        .iter()
        .filter(|(method, count)| method.as_str() != "Connect" && **count > 0)
        .collect();
    assert!(others.is_empty(), "calls beside Connect: {others:?}");
    // The methods the client used before are among those counted (at zero), so a call of any
    // would have shown.
    for method in [
        "Subscribe",
        "WatchLobby",
        "GetGame",
        "Play",
        "Confirm",
        "ListMyGames",
    ] {
        assert!(calls.contains_key(method), "{method} is counted: {calls:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_has_its_players_follow_again_from_the_right_seq() {
    let db = TestDatabase::create().await;
    let server = InProcess::start(db.url(), SERVE_ARGS).await;
    let ports = server.ports;
    let alice = Seat::new(Player::start("tr-alice", &server, &[]));
    let bob = Seat::new(Player::start("tr-bob", &server, &[]));
    let (mut alice, mut bob) = blocking(move || {
        let (mut alice, mut bob) = (alice, bob);
        meet_and_deploy(&mut alice, &mut bob);
        for _ in 0..2 {
            one_turn([&mut alice, &mut bob]);
        }
        (alice, bob)
    })
    .await;
    let last_before: Vec<u64> = [&alice, &bob]
        .iter()
        .map(|seat| *seat.told().last().expect("events told"))
        .collect();
    assert_eq!(last_before[0], last_before[1], "both told every move");

    // The server stops: its gateway says goodbye, and connecting again fails.
    server.stop().await;
    let (mut alice, mut bob) = blocking(move || {
        for seat in [&mut alice, &mut bob] {
            seat.wait_for("connection lost: ");
        }
        (alice, bob)
    })
    .await;

    // Back on the same ports, with the same database.
    let _server = InProcess::start_on(db.url(), SERVE_ARGS, Some(&ports)).await;
    blocking(move || {
        for seat in [&mut alice, &mut bob] {
            let from = seat.value_after("connection restored: following the game again from #");
            assert_eq!(
                from.parse::<u64>().ok(),
                Some(last_before[0] + 1),
                "followed again from the last event told + 1"
            );
        }
        for _ in 0..2 {
            one_turn([&mut alice, &mut bob]);
        }
        alice.send("resign");
        for seat in [&mut alice, &mut bob] {
            seat.wait_for("the game is over.");
        }
        for seat in [&alice, &bob] {
            let told = seat.told();
            assert!(
                told.windows(2).all(|pair| pair[0] < pair[1]),
                "each event told once, in order: {told:?}\n{}",
                seat.output
            );
            // From play's start on every event is each player's to see: none may be missing.
            let play = seat
                .output
                .lines()
                .find(|line| line.ends_with("play starts"))
                .and_then(|line| {
                    line.strip_prefix('#')?
                        .split(' ')
                        .next()?
                        .parse::<u64>()
                        .ok()
                })
                .expect("play's start told");
            let since: Vec<u64> = told.into_iter().filter(|&seq| seq >= play).collect();
            let expected: Vec<u64> = (play..play + since.len() as u64).collect();
            assert_eq!(since, expected, "no event missing:\n{}", seat.output);
            assert!(
                since.len() >= 6,
                "four moves, the resignation and the end: {since:?}"
            );
            assert_eq!(
                seat.output.matches("connection lost").count(),
                1,
                "the outage is told once:\n{}",
                seat.output
            );
        }
        alice.quit();
        bob.quit();
    })
    .await;
}
