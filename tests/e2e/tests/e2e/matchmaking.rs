//! Matchmaking through the real binary (`--services all`: gateway, session, clock and matchmaking
//! in one process on real Postgres), as players reach it: only the public `PlayerService` and a
//! token.
//!
//! - `two_players_queue_and_both_are_pushed_the_same_game`: both queue (casual), both get
//!   `MatchFound` on their lobby streams (no polling), for one game with complementary seats; the
//!   same in a Gunjin Shogi queue, whose game is a Gunjin Shogi game.
//! - `a_junqi_game_against_the_computer_is_played_to_its_end_at_every_level` and its Gunjin
//!   Shogi twin: one player per computer level asks for the computer and plays random legal
//!   moves; the computer answers every move until the game ends, the answer names the level, and
//!   the player never sees a computer piece's kind before the end.

use hidden_front_e2e::gateway::{self, PlayerClient, authed, context, lobby};
use hidden_front_e2e::player::assert_hides_opponent;
use hidden_front_e2e::{Server, TestDatabase, pb};
use std::time::Duration;

const SERVE_ARGS: &[&str] = &["--actions-per-second", "5000"];

/// How long a lobby event or a computer move may take.
const DEADLINE: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_players_queue_and_both_are_pushed_the_same_game() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args("lobby", db.url(), SERVE_ARGS).await;
    let game = queue_two(&server, "").await;
    assert_eq!(game.rules, "hidden-front");
    // A Gunjin Shogi queue is a queue of its own, and its games are Gunjin Shogi games.
    let game = queue_two(&server, "gunjin-shogi").await;
    assert!(game.rules.starts_with("gunjin-shogi"), "{}", game.rules);
}

/// Two new players queue (casual, relaxed) under `rules`; both must be pushed the same game.
/// Returns the game as the first one sees it.
async fn queue_two(server: &Server, rules: &str) -> pb::GameView {
    let channel = gateway::channel(server.addr()).await;
    let tag = if rules.is_empty() { "junqi" } else { rules };
    let mut alice = PlayerClient::new(channel.clone(), &format!("mm-alice-{tag}"));
    let mut bob = PlayerClient::new(channel, &format!("mm-bob-{tag}"));
    let mut alice_lobby = lobby(&mut alice).await;
    let mut bob_lobby = lobby(&mut bob).await;
    let queue = pb::Queue {
        rules: rules.into(),
        time_control: "relaxed".into(),
        rated: false,
    };
    for (player, ticket) in [(&mut alice, "alice-1"), (&mut bob, "bob-1")] {
        let token = gateway::token(player.player());
        let ticket = player
            .inner()
            .find_match(authed(
                &token,
                pb::FindMatchRequest {
                    ticket_id: ticket.into(),
                    queue: Some(queue.clone()),
                    ttl_seconds: 0,
                },
            ))
            .await
            .expect("FindMatch")
            .into_inner()
            .ticket
            .expect("a ticket");
        assert_eq!(ticket.state, pb::TicketState::Waiting as i32, "{ticket:?}");
    }
    let for_alice = gateway::match_found(&mut alice_lobby, DEADLINE, |_| true).await;
    let for_bob = gateway::match_found(&mut bob_lobby, DEADLINE, |_| true).await;
    assert_eq!(for_alice.game_id, for_bob.game_id, "one game for both");
    assert_ne!(for_alice.seat, for_bob.seat, "one seat each");
    assert_eq!(for_alice.opponent, bob.player());
    assert_eq!(for_bob.opponent, alice.player());
    assert_eq!(for_alice.ticket_id, "alice-1");
    // Both are seated in it.
    let view = alice
        .get_game(&for_alice.game_id, false)
        .await
        .expect("GetGame");
    assert_eq!(view.phase, pb::Phase::Deployment as i32);
    assert_eq!(
        view.south_player == alice.player(),
        for_alice.seat == pb::Side::South as i32
    );
    view
}

/// The computer's levels, as the API names them.
const LEVELS: [&str; 5] = ["random", "greedy", "belief", "search", "expert"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_junqi_game_against_the_computer_is_played_to_its_end_at_every_level() {
    games_against_the_computer_at_every_level("computer-junqi", "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gunjin_shogi_game_against_the_computer_is_played_to_its_end_at_every_level() {
    games_against_the_computer_at_every_level("computer-gunjin", "gunjin-shogi").await;
}

/// One player per level asks for the computer under `rules`, all at once on one server, and
/// plays random legal moves until the game ends. The answer names the level asked for (the
/// default when none is), a retry is the same game, an unknown level is refused naming the
/// field, and no player sees a computer piece's kind before the end.
async fn games_against_the_computer_at_every_level(name: &str, rules: &str) {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args(name, db.url(), SERVE_ARGS).await;
    let channel = gateway::channel(server.addr()).await;
    let mut carol = PlayerClient::new(channel.clone(), "mm-carol");
    let refused = carol
        .inner()
        .play_computer(authed(
            &gateway::token("mm-carol"),
            pb::PlayerServicePlayComputerRequest {
                request_id: "carol-grandmaster".into(),
                rules: rules.into(),
                seat: pb::Side::South as i32,
                level: "grandmaster".into(),
                time_control: String::new(),
            },
        ))
        .await
        .expect_err("an unknown level is refused");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(refused.message().contains("level"), "{refused:?}");
    // The default level, asked for by leaving the field empty, is named in the answer.
    let default = carol
        .inner()
        .play_computer(authed(
            &gateway::token("mm-carol"),
            pb::PlayerServicePlayComputerRequest {
                request_id: "carol-default".into(),
                rules: rules.into(),
                seat: pb::Side::North as i32,
                level: String::new(),
                time_control: String::new(),
            },
        ))
        .await
        .expect("PlayComputer at the default level")
        .into_inner();
    assert_eq!(default.level, "expert");
    assert_eq!(default.seat, pb::Side::North as i32);
    let view = carol
        .get_game(&default.game_id, false)
        .await
        .expect("GetGame");
    let clock = view.time_control.as_ref().map(|c| c.name.as_str());
    assert_eq!(
        clock,
        Some("relaxed"),
        "the default clock of a computer game"
    );
    let games = LEVELS.map(|level| {
        let channel = channel.clone();
        let rules = rules.to_owned();
        tokio::spawn(async move {
            let player = format!("mm-{level}");
            let mut client = PlayerClient::new(channel, &player);
            let plies = play_the_computer(&mut client, &rules, level).await;
            (level, plies)
        })
    });
    for game in games {
        let (level, plies) = game.await.expect("the game's task");
        assert!(plies > 0, "the player moved against the {level} level");
    }
}

/// Plays random legal moves for south against the computer at `level`; returns the plies played.
async fn play_the_computer(player: &mut PlayerClient, rules: &str, level: &str) -> u32 {
    let token = gateway::token(player.player());
    // The player's clock: the online one, 30 s a move.
    let request = pb::PlayerServicePlayComputerRequest {
        request_id: format!("{level}-game"),
        rules: rules.into(),
        seat: pb::Side::South as i32,
        level: level.into(),
        time_control: "online".into(),
    };
    let started = player
        .inner()
        .play_computer(authed(&token, request.clone()))
        .await
        .expect("PlayComputer")
        .into_inner();
    assert_eq!(started.level, level);
    let retried = player
        .inner()
        .play_computer(authed(
            &token,
            pb::PlayerServicePlayComputerRequest {
                level: String::new(),
                ..request
            },
        ))
        .await
        .expect("PlayComputer retried")
        .into_inner();
    assert_eq!(retried.game_id, started.game_id, "a retry is the same game");
    assert_eq!(
        retried.level, level,
        "a retry keeps the first request's level"
    );
    let game = started.game_id.clone();
    assert_eq!(started.seat, pb::Side::South as i32);
    let view = player.get_game(&game, false).await.expect("GetGame");
    let clock = view.time_control.as_ref().map(|c| c.name.as_str());
    assert_eq!(clock, Some("online"), "the clock the player asked for");
    player
        .confirm(context(&game, "confirm", None))
        .await
        .expect("Confirm");
    let mut stream = player.subscribe(&game, 1, false).await.expect("Subscribe");
    let mut rng = hidden_front_rules::GameRng::from_seed(11);
    let mut plies = 0;
    loop {
        let view = player.get_game(&game, false).await.expect("GetGame");
        if view.phase == pb::Phase::Ended as i32 {
            assert!(view.outcome.is_some(), "an ended game has an outcome");
            if !rules.is_empty() {
                assert!(view.rules.starts_with(rules), "{}", view.rules);
            }
            return plies;
        }
        assert_hides_opponent(&view);
        if view.phase == pb::Phase::Play as i32 && view.to_move == pb::Side::South as i32 {
            let legal = player.legal_moves(&game).await.expect("LegalMoves");
            if !legal.moves.is_empty() {
                let pick = rng.below(legal.moves.len() as u32) as usize;
                player
                    .play(
                        context(&game, &format!("ply-{plies}"), Some(legal.version)),
                        legal.moves[pick].clone(),
                    )
                    .await
                    .expect("Play");
                plies += 1;
                continue;
            }
        }
        // The computer's turn (or the deployment): wait for the next event on the stream.
        gateway::next_item(&mut stream, "the computer's answer")
            .await
            .expect("the stream works")
            .expect("the stream goes on until the end");
    }
}
