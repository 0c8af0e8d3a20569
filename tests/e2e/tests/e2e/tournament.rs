//! Organisers' tournaments through the real binary on real Postgres.
//!
//! - A Swiss: 9 entrants (so a bye each round) over 4 rounds, each round paired and started by
//!   the server as a bulk, its games played to their end by computer players (the e2e crate's
//!   random legal movers, seeded), the server killed with SIGKILL during round 2 and started
//!   again. Then,
//!   from the games alone: no repeat pairing, four different byes, everyone in every round once,
//!   seats balanced (the tournament's colour), and the standings recomputed independently (score
//!   and Buchholz) equal the server's.
//!   The lifecycle feed tells the tournament once (created, started, each round, finished with
//!   that table), and an entrant's lobby stream gets the standings and their game each round.
//! - An arena: 10 entrants for 2 minutes, every game played as soon as it exists; the waves
//!   never seat a player twice at once, the arena ends by itself, and the points recomputed from
//!   the games in order (streaks included) equal the server's table.

use hidden_front_e2e::client::{resign, viewer_of};
use hidden_front_e2e::gateway;
use hidden_front_e2e::player::Player;
use hidden_front_e2e::{Server, TestDatabase, pb};
use hidden_front_proto::v1::organiser_service_client::OrganiserServiceClient;
use hidden_front_rules::GameRng;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use tonic::transport::Channel;

const OPERATOR_TOKEN: &str = "cup-token-0123456789abcdef0123";
const DEADLINE: Duration = Duration::from_secs(60);
const ENTRANTS: usize = 9;
const ROUNDS: usize = 4;
/// A game of two random computer players ends well within this (the no-fight rule draws it
/// after 100 plies without a capture).
const MAX_PLIES: usize = 50 * 101;

fn organiser(channel: Channel) -> OrganiserServiceClient<Channel> {
    OrganiserServiceClient::new(channel)
}

async fn tournament(client: &mut OrganiserServiceClient<Channel>) -> pb::Tournament {
    client
        .get_tournament(gateway::authed(
            OPERATOR_TOKEN,
            pb::GetTournamentRequest {
                tournament_id: "autumn-cup".into(),
            },
        ))
        .await
        .expect("GetTournament")
        .into_inner()
        .tournament
        .expect("a tournament")
}

async fn bulk(client: &mut OrganiserServiceClient<Channel>, bulk_id: &str) -> pb::Bulk {
    client
        .get_bulk(gateway::authed(
            OPERATOR_TOKEN,
            pb::GetBulkRequest {
                bulk_id: bulk_id.into(),
            },
        ))
        .await
        .expect("GetBulk")
        .into_inner()
        .bulk
        .expect("a bulk")
}

/// Asks again and again until `done` holds for the answer of `ask` (the server's loop moves
/// the tournament on at a time of its own); panics after [`DEADLINE`].
async fn until<T: std::fmt::Debug>(
    mut ask: impl AsyncFnMut() -> T,
    done: impl Fn(&T) -> bool,
) -> T {
    let give_up = Instant::now() + DEADLINE;
    loop {
        let answer = ask().await;
        if done(&answer) {
            return answer;
        }
        assert!(
            Instant::now() < give_up,
            "not reached in {DEADLINE:?}: {answer:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swiss_of_nine_over_four_rounds_survives_a_sigkill_and_adds_up() {
    let db = TestDatabase::create().await;
    let token_arg = format!("cup={OPERATOR_TOKEN}");
    let mut server = Server::start_with_args(
        "tournament",
        db.url(),
        &["--admin-token", &token_arg, "--actions-per-second", "5000"],
    )
    .await;
    let mut client = organiser(gateway::channel(server.session_addr()).await);
    let mut session = server.connect().await;
    let entrants: Vec<String> = (0..ENTRANTS).map(|i| format!("cup-p{i}")).collect();
    let made = client
        .create_tournament(gateway::authed(
            OPERATOR_TOKEN,
            pb::CreateTournamentRequest {
                tournament_id: "autumn-cup".into(),
                format: pb::TournamentFormat::Swiss as i32,
                rounds: ROUNDS as u32,
                rules: String::new(),
                time_control: "online".into(),
                rated: false,
                start_at_unix_ms: 0,
                pause_seconds: 0,
                entrants: entrants.clone(),
                duration_minutes: 0,
                open_to_players: false,
                allow_bots: false,
            },
        ))
        .await
        .expect("CreateTournament")
        .into_inner()
        .tournament
        .expect("a tournament");
    assert_eq!(made.round_count as usize, ROUNDS);
    assert_eq!(made.entrants, entrants);

    let mut rng = GameRng::from_seed(0xc0ffee);
    let mut results: Vec<(pb::Bulk, String)> = Vec::new();
    for round in 1..=ROUNDS {
        let t = until(
            async || tournament(&mut client).await,
            |t: &pb::Tournament| t.rounds.len() >= round,
        )
        .await;
        let this = t.rounds[round - 1].clone();
        assert_eq!(this.round as usize, round);
        let bulk_id = this.bulk_id.clone();
        let playing = until(
            async || bulk(&mut client, &bulk_id).await,
            |b: &pb::Bulk| b.games_playing as usize == ENTRANTS / 2,
        )
        .await;
        if round == 2 {
            // Killed mid-round: its games exist; after the restart the round is played out and
            // the tournament goes on from the stored bulks.
            server.restart().await;
            client = organiser(gateway::channel(server.session_addr()).await);
            session = server.connect().await;
        }
        for (board, game) in playing.games.iter().enumerate() {
            // Played to its end by two computer players (random legal moves, captures first).
            let seed = rng.below(1 << 30) as u64 + board as u64 * 10 + round as u64 * 100;
            let mut players = [
                Player::new(pb::Side::South, seed),
                Player::new(pb::Side::North, seed + 1),
            ];
            for player in &mut players {
                player.deploy(&mut session, &game.game_id).await;
            }
            let first = hidden_front_e2e::client::get_game(
                &mut session,
                &game.game_id,
                viewer_of(pb::Side::South),
            )
            .await
            .to_move;
            hidden_front_e2e::play_to_end(
                &mut session,
                &game.game_id,
                &mut players,
                hidden_front_e2e::client::side_of(first),
                MAX_PLIES,
            )
            .await;
            let view = hidden_front_e2e::client::get_game(
                &mut session,
                &game.game_id,
                viewer_of(pb::Side::South),
            )
            .await;
            assert_eq!(view.phase, pb::Phase::Ended as i32);
        }
        let ended = until(
            async || bulk(&mut client, &bulk_id).await,
            |b: &pb::Bulk| b.games_ended as usize == ENTRANTS / 2,
        )
        .await;
        results.push((ended, this.bye));
    }
    let last = until(
        async || tournament(&mut client).await,
        // Finished by the server's loop (it records when), not only derived from the rounds.
        |t: &pb::Tournament| t.finished_at_unix_ms > 0,
    )
    .await;
    assert_eq!(last.state, pb::TournamentState::Finished as i32);
    assert_eq!(last.rounds.len(), ROUNDS, "no round made twice or lost");
    assert_eq!(last.rounds_completed as usize, ROUNDS);

    let drawn = results
        .iter()
        .flat_map(|(bulk, _)| &bulk.games)
        .filter(|g| g.outcome == pb::BulkGameOutcome::Drawn as i32)
        .count();
    eprintln!(
        "swiss: {} games played to their end, {drawn} drawn",
        ROUNDS * (ENTRANTS / 2)
    );
    // The pairing rules, checked from the games alone.
    let mut met = HashSet::new();
    let mut byes = HashSet::new();
    let mut seats: HashMap<&str, Vec<pb::Side>> = HashMap::new();
    let mut score: HashMap<&str, u32> = entrants.iter().map(|e| (e.as_str(), 0)).collect();
    let mut opponents: HashMap<&str, Vec<Option<&str>>> = HashMap::new();
    for (bulk, bye) in &results {
        assert_eq!(bulk.games.len(), ENTRANTS / 2);
        let mut this_round = HashSet::new();
        for game in &bulk.games {
            let (south, north) = (game.south_player.as_str(), game.north_player.as_str());
            let mut pair = [south, north];
            pair.sort();
            assert!(met.insert(pair), "{south} and {north} met twice");
            assert!(this_round.insert(south) && this_round.insert(north));
            seats.entry(south).or_default().push(pb::Side::South);
            seats.entry(north).or_default().push(pb::Side::North);
            // Half points: a win 2, a draw 1 each.
            match pb::BulkGameOutcome::try_from(game.outcome) {
                Ok(pb::BulkGameOutcome::SouthWon) => *score.get_mut(south).unwrap() += 2,
                Ok(pb::BulkGameOutcome::NorthWon) => *score.get_mut(north).unwrap() += 2,
                Ok(pb::BulkGameOutcome::Drawn) => {
                    *score.get_mut(south).unwrap() += 1;
                    *score.get_mut(north).unwrap() += 1;
                }
                other => panic!("a game played to its end has a result, not {other:?}"),
            }
            opponents.entry(south).or_default().push(Some(north));
            opponents.entry(north).or_default().push(Some(south));
        }
        assert!(!bye.is_empty(), "nine players: a bye every round");
        assert!(this_round.insert(bye.as_str()), "the bye plays too");
        assert_eq!(this_round.len(), ENTRANTS, "everyone once a round");
        assert!(byes.insert(bye.clone()), "{bye} had a second bye");
        *score.get_mut(bye.as_str()).unwrap() += 2;
        opponents.entry(bye.as_str()).or_default().push(None);
    }
    for (player, sides) in &seats {
        let south = sides.iter().filter(|s| **s == pb::Side::South).count() as i64;
        let north = sides.len() as i64 - south;
        assert!((south - north).abs() <= 2, "{player}: {sides:?}");
        assert!(
            !sides.windows(3).any(|w| w[0] == w[1] && w[1] == w[2]),
            "{player} sat on one side three times running: {sides:?}"
        );
    }
    // Standings recomputed: score, and Buchholz with a bye as an opponent of the player's own
    // final score.
    assert_eq!(last.standings.len(), ENTRANTS);
    for standing in &last.standings {
        let me = standing.player.as_str();
        let own = score[me];
        let buchholz: u32 = opponents[me]
            .iter()
            .map(|o| o.map_or(own, |o| score[o]))
            .sum();
        assert_eq!(standing.score, f64::from(own) / 2.0, "{me}");
        assert_eq!(standing.buchholz, f64::from(buchholz) / 2.0, "{me}");
    }
    let places: Vec<u32> = last.standings.iter().map(|s| s.place).collect();
    assert_eq!(places, (1..=ENTRANTS as u32).collect::<Vec<_>>());
    assert!(
        last.standings
            .windows(2)
            .all(|w| (w[0].score, w[0].buchholz) >= (w[1].score, w[1].buchholz)),
        "ordered by score, then Buchholz"
    );
    tournament_facts_tell_it_once(&mut session, &results, &last).await;
    let mut entrant = gateway::PlayerClient::new(gateway::channel(server.addr()).await, "cup-p0");
    standings_were_pushed_once_a_round(&mut entrant, &results, &last).await;
}

/// The lifecycle feed told the tournament once, in order, despite the SIGKILL: created,
/// started, each round with the pairs its bulk holds, finished with the table `GetTournament`
/// gives.
async fn tournament_facts_tell_it_once(
    session: &mut hidden_front_e2e::client::Client,
    rounds: &[(pb::Bulk, String)],
    last: &pb::Tournament,
) {
    use pb::lifecycle_fact::Body;
    let mut feed = session
        .watch_lifecycle(pb::WatchLifecycleRequest::default())
        .await
        .expect("WatchLifecycle")
        .into_inner();
    let mut told = Vec::new();
    tokio::time::timeout(DEADLINE, async {
        loop {
            let fact = feed
                .message()
                .await
                .expect("the feed works")
                .expect("the feed goes on")
                .fact
                .expect("a fact");
            if fact.tournament_id.is_empty() {
                continue;
            }
            assert_eq!(fact.tournament_id, "autumn-cup");
            assert_eq!(fact.subject, "tournaments/autumn-cup");
            assert!(fact.game_id.is_empty(), "{fact:?}");
            let done = matches!(fact.body, Some(Body::TournamentFinished(_)));
            told.push(fact);
            if done {
                return;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the tournament's facts did not all come: {told:#?}"));
    let types: Vec<&str> = told.iter().map(|f| f.r#type.as_str()).collect();
    assert_eq!(
        types,
        [
            "hiddenfront.tournament.created.v1",
            "hiddenfront.tournament.started.v1",
            "hiddenfront.tournament.round_started.v1",
            "hiddenfront.tournament.round_started.v1",
            "hiddenfront.tournament.round_started.v1",
            "hiddenfront.tournament.round_started.v1",
            "hiddenfront.tournament.finished.v1",
        ],
        "once each, in order"
    );
    let round_facts = told.iter().filter_map(|f| match &f.body {
        Some(Body::TournamentRoundStarted(r)) => Some(r),
        _ => None,
    });
    for (number, (fact, (bulk, bye))) in round_facts.zip(rounds).enumerate() {
        assert_eq!(fact.round as usize, number + 1);
        assert_eq!(fact.rounds as usize, ROUNDS);
        assert_eq!(&fact.bye, bye);
        let pairs: Vec<(&str, &str)> = fact
            .pairs
            .iter()
            .map(|p| (p.south_player.as_str(), p.north_player.as_str()))
            .collect();
        let games: Vec<(&str, &str)> = bulk
            .games
            .iter()
            .map(|g| (g.south_player.as_str(), g.north_player.as_str()))
            .collect();
        assert_eq!(pairs, games, "round {}", number + 1);
    }
    let Some(Body::TournamentFinished(finished)) = &told.last().expect("facts").body else {
        unreachable!("the last fact is the finish");
    };
    assert_eq!(finished.rounds as usize, ROUNDS);
    let table = |lines: Vec<(u32, String, f64, f64, f64)>| lines;
    assert_eq!(
        table(
            finished
                .standings
                .iter()
                .map(|s| (
                    s.place,
                    s.player.clone(),
                    s.score,
                    s.buchholz,
                    s.sonneborn_berger
                ))
                .collect()
        ),
        table(
            last.standings
                .iter()
                .map(|s| (
                    s.place,
                    s.player.clone(),
                    s.score,
                    s.buchholz,
                    s.sonneborn_berger
                ))
                .collect()
        )
    );
    let created: serde_json::Value = serde_json::from_str(&told[0].data_json).expect("JSON");
    assert_eq!(created["format"], "swiss");
    assert_eq!(created["entrants"].as_array().map(Vec::len), Some(ENTRANTS));
}

/// An entrant's own lobby stream was told each round's pairing (their game or their bye) once,
/// with the standings before it, and the final table.
async fn standings_were_pushed_once_a_round(
    entrant: &mut gateway::PlayerClient,
    rounds: &[(pb::Bulk, String)],
    last: &pb::Tournament,
) {
    let me = entrant.player().to_owned();
    let mut lobby = gateway::lobby(entrant).await;
    let mut updates = Vec::new();
    tokio::time::timeout(DEADLINE, async {
        loop {
            let event = lobby
                .message()
                .await
                .expect("the lobby stream works")
                .expect("the lobby stream goes on")
                .event
                .expect("an event");
            if let Some(pb::lobby_event::Kind::TournamentStandings(update)) = event.kind {
                assert_eq!(update.tournament_id, "autumn-cup");
                let done = update.finished;
                updates.push(update);
                if done {
                    return;
                }
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the standings did not all come: {updates:#?}"));
    assert_eq!(
        updates.len(),
        ROUNDS + 1,
        "one a round and the end: {updates:#?}"
    );
    for (number, (update, (bulk, bye))) in updates.iter().zip(rounds).enumerate() {
        assert_eq!(
            update.rounds_completed as usize,
            number,
            "before round {}",
            number + 1
        );
        let next = update.next.as_ref().expect("the round's game");
        assert_eq!(next.round as usize, number + 1);
        if *bye == me {
            assert!(next.bye && next.opponent.is_empty(), "{next:?}");
        } else {
            let game = bulk
                .games
                .iter()
                .find(|g| g.south_player == me || g.north_player == me)
                .expect("in a game when not the bye");
            let (seat, opponent) = match game.south_player == me {
                true => (pb::Side::South, &game.north_player),
                false => (pb::Side::North, &game.south_player),
            };
            assert_eq!((next.seat, &next.opponent), (seat as i32, opponent));
        }
        assert_eq!(update.table.len(), ENTRANTS.min(10));
    }
    let end = updates.last().expect("the end");
    assert!(end.next.is_none());
    assert_eq!(end.rounds_completed as usize, ROUNDS);
    assert_eq!(end.table, last.standings, "the final table");
    assert_eq!(
        end.you.as_ref().map(|s| s.player.as_str()),
        Some(me.as_str())
    );
}

/// Deploys both seats of `game_id` and resigns the side `rng` draws.
async fn play_by_resigning(
    session: &mut hidden_front_e2e::Client,
    game_id: &str,
    rng: &mut GameRng,
    key: &str,
) {
    for (side, seed) in [(pb::Side::South, 1), (pb::Side::North, 2)] {
        Player::new(side, seed + rng.below(1000) as u64)
            .deploy(session, game_id)
            .await;
    }
    let loser = if rng.below(2) == 0 {
        pb::Side::South
    } else {
        pb::Side::North
    };
    resign(session, game_id, loser, key, None)
        .await
        .expect("Resign");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_arena_of_ten_for_two_minutes_pairs_as_games_end_and_adds_up() {
    const PLAYERS: usize = 10;
    let db = TestDatabase::create().await;
    let token_arg = format!("cup={OPERATOR_TOKEN}");
    let server = Server::start_with_args(
        "arena",
        db.url(),
        &["--admin-token", &token_arg, "--actions-per-second", "5000"],
    )
    .await;
    let mut client = organiser(gateway::channel(server.session_addr()).await);
    let mut session = server.connect().await;
    let entrants: Vec<String> = (0..PLAYERS).map(|i| format!("arena-p{i}")).collect();
    let made = client
        .create_tournament(gateway::authed(
            OPERATOR_TOKEN,
            pb::CreateTournamentRequest {
                tournament_id: "blitz-arena".into(),
                format: pb::TournamentFormat::Arena as i32,
                duration_minutes: 2,
                time_control: "online".into(),
                entrants: entrants.clone(),
                ..Default::default()
            },
        ))
        .await
        .expect("CreateTournament")
        .into_inner()
        .tournament
        .expect("a tournament");
    assert_eq!(made.duration_minutes, 2);
    let ends = made.start_at_unix_ms + 120_000;

    let mut rng = GameRng::from_seed(0xa7e7a);
    let mut played: HashSet<String> = HashSet::new();
    let give_up = Instant::now() + Duration::from_secs(120) + DEADLINE;
    // One entrant pauses once three waves exist and comes back 30 s later.
    let mut pauser = PausingEntrant::new(&server, "arena-p9", "blitz-arena").await;
    let finished = loop {
        let t = get(&mut client, "blitz-arena").await;
        for round in &t.rounds {
            if round.state == pb::BulkState::Finished as i32 {
                continue;
            }
            let wave = bulk(&mut client, &round.bulk_id).await;
            let mut busy = HashSet::new();
            for game in &wave.games {
                assert!(
                    busy.insert(game.south_player.clone()),
                    "a player twice in a wave"
                );
                assert!(
                    busy.insert(game.north_player.clone()),
                    "a player twice in a wave"
                );
                if game.state == pb::BulkGameState::Playing as i32
                    && played.insert(game.game_id.clone())
                {
                    let key = format!("arena-{}", played.len());
                    play_by_resigning(&mut session, &game.game_id, &mut rng, &key).await;
                }
            }
        }
        pauser.act(t.rounds.len()).await;
        if t.finished_at_unix_ms > 0 {
            break t;
        }
        assert!(Instant::now() < give_up, "the arena did not finish: {t:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(finished.state, pb::TournamentState::Finished as i32);
    assert!(
        finished.finished_at_unix_ms >= ends,
        "finished before its end"
    );

    // Every wave's games, in order; no player in two games at once; points recomputed; the
    // paused entrant in no wave paired while paused, and in one after coming back.
    let (paused_at, resume_asked, resumed_at) = pauser.times();
    let mut points: HashMap<String, (u32, u32)> =
        entrants.iter().map(|e| (e.clone(), (0, 0))).collect();
    let mut games = 0;
    let mut after_resuming = 0;
    for round in &finished.rounds {
        let wave = bulk(&mut client, &round.bulk_id).await;
        assert!(wave.start_at_unix_ms < ends, "a wave paired after the end");
        for game in &wave.games {
            if game.south_player == "arena-p9" || game.north_player == "arena-p9" {
                let at = wave.start_at_unix_ms;
                assert!(
                    at <= paused_at || at >= resume_asked,
                    "paired at {at} while paused from {paused_at} to {resume_asked}"
                );
                if at > resumed_at {
                    after_resuming += 1;
                }
            }
            games += 1;
            let (winner, loser) = match pb::BulkGameOutcome::try_from(game.outcome) {
                Ok(pb::BulkGameOutcome::SouthWon) => (&game.south_player, &game.north_player),
                Ok(pb::BulkGameOutcome::NorthWon) => (&game.north_player, &game.south_player),
                other => panic!("a resigned game ends with a winner, not {other:?}"),
            };
            let (score, streak) = points.get_mut(winner).unwrap();
            *score += if *streak >= 2 { 4 } else { 2 };
            *streak += 1;
            points.get_mut(loser).unwrap().1 = 0;
        }
    }
    eprintln!("arena: {games} games in {} waves", finished.rounds.len());
    assert!(
        after_resuming > 0,
        "the entrant who came back was paired again"
    );
    assert!(
        games > PLAYERS,
        "players were paired again as their games ended: {games} games"
    );
    assert_eq!(finished.standings.len(), PLAYERS);
    for standing in &finished.standings {
        let (score, _) = points[&standing.player];
        assert_eq!(
            standing.score,
            f64::from(score) / 2.0,
            "{}",
            standing.player
        );
    }
    assert!(
        finished
            .standings
            .windows(2)
            .all(|w| w[0].score >= w[1].score),
        "ordered by points"
    );
}

/// An arena entrant who pauses (withdraws while it runs) once three waves exist and comes back
/// (joins again) 30 s later, through the public API; a player not in it is refused a late entry
/// (the organiser named the entrants).
struct PausingEntrant {
    players: hidden_front_proto::v1::player_service_client::PlayerServiceClient<Channel>,
    player: &'static str,
    tournament_id: &'static str,
    /// When the pause was answered, the return asked and answered (ms since the Unix epoch).
    paused_at: Option<u64>,
    resume_asked: u64,
    resumed_at: Option<u64>,
}

impl PausingEntrant {
    async fn new(
        server: &Server,
        player: &'static str,
        tournament_id: &'static str,
    ) -> PausingEntrant {
        PausingEntrant {
            players: hidden_front_proto::v1::player_service_client::PlayerServiceClient::new(
                gateway::channel(server.addr()).await,
            ),
            player,
            tournament_id,
            paused_at: None,
            resume_asked: 0,
            resumed_at: None,
        }
    }

    /// `JoinTournament` as `player`.
    async fn join(&mut self, player: &str) -> Result<pb::Tournament, tonic::Status> {
        let request = pb::PlayerServiceJoinTournamentRequest {
            tournament_id: self.tournament_id.into(),
        };
        let answer = self
            .players
            .join_tournament(gateway::authed(&gateway::token(player), request))
            .await?;
        Ok(answer.into_inner().tournament.expect("a tournament"))
    }

    /// `WithdrawTournament` as the entrant.
    async fn withdraw(&mut self) -> Result<pb::Tournament, tonic::Status> {
        let request = pb::PlayerServiceWithdrawTournamentRequest {
            tournament_id: self.tournament_id.into(),
        };
        let answer = self
            .players
            .withdraw_tournament(gateway::authed(&gateway::token(self.player), request))
            .await?;
        Ok(answer.into_inner().tournament.expect("a tournament"))
    }

    async fn act(&mut self, waves: usize) {
        let now = hidden_front_e2e::client::now_unix_ms;
        match (self.paused_at, self.resumed_at) {
            (None, _) if waves >= 3 => {
                let t = self.withdraw().await.expect("a pause");
                self.paused_at = Some(now());
                assert_eq!(t.paused, [self.player]);
                assert!(t.entrants.iter().any(|e| e == self.player), "still in it");
                let late = self
                    .join("arena-latecomer")
                    .await
                    .expect_err("not open to players");
                assert_eq!(
                    hidden_front_api_error::ErrorSummary::of(&late)
                        .reason
                        .to_string(),
                    "TOURNAMENT_CLOSED"
                );
            }
            (Some(paused), None) if now() > paused + 30_000 => {
                self.resume_asked = now();
                let t = self.join(self.player).await.expect("a return");
                self.resumed_at = Some(now());
                assert!(t.paused.is_empty(), "{:?}", t.paused);
            }
            _ => {}
        }
    }

    fn times(&self) -> (u64, u64, u64) {
        (
            self.paused_at.expect("the entrant paused"),
            self.resume_asked,
            self.resumed_at.expect("the entrant came back"),
        )
    }
}

async fn get(client: &mut OrganiserServiceClient<Channel>, id: &str) -> pb::Tournament {
    client
        .get_tournament(gateway::authed(
            OPERATOR_TOKEN,
            pb::GetTournamentRequest {
                tournament_id: id.into(),
            },
        ))
        .await
        .expect("GetTournament")
        .into_inner()
        .tournament
        .expect("a tournament")
}

/// A token for `player` marked as a bot by the platform.
fn bot_token(player: &str) -> String {
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
        + 600;
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &serde_json::json!({ "sub": player, "exp": exp, "bot": true }),
        &jsonwebtoken::EncodingKey::from_secret(hidden_front_gateway::auth::DEV_SECRET.as_bytes())
            .expect("an HS256 key"),
    )
    .expect("a bot token")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_join_an_open_tournament_and_its_first_round_pairs_exactly_them() {
    use hidden_front_api_error::ErrorSummary;
    use hidden_front_proto::v1::player_service_client::PlayerServiceClient;
    let db = TestDatabase::create().await;
    let token_arg = format!("cup={OPERATOR_TOKEN}");
    let server = Server::start_with_args(
        "open-tournament",
        db.url(),
        &["--admin-token", &token_arg, "--actions-per-second", "5000"],
    )
    .await;
    let mut organiser_client = organiser(gateway::channel(server.session_addr()).await);
    let start = hidden_front_e2e::client::now_unix_ms() + 8_000;
    organiser_client
        .create_tournament(gateway::authed(
            OPERATOR_TOKEN,
            pb::CreateTournamentRequest {
                tournament_id: "open-cup".into(),
                format: pb::TournamentFormat::Swiss as i32,
                rounds: 3,
                rated: true,
                start_at_unix_ms: start,
                open_to_players: true,
                ..Default::default()
            },
        ))
        .await
        .expect("CreateTournament");
    let players = PlayerServiceClient::new(gateway::channel(server.addr()).await);
    let as_player = |token: String, id: &str| {
        gateway::authed(
            &token,
            pb::PlayerServiceJoinTournamentRequest {
                tournament_id: id.into(),
            },
        )
    };
    let reason = |status: &tonic::Status| ErrorSummary::of(status).reason.to_string();
    for name in ["open-a", "open-b", "open-c", "open-d", "open-e"] {
        let joined = players
            .clone()
            .join_tournament(as_player(gateway::token(name), "open-cup"))
            .await
            .expect("JoinTournament")
            .into_inner()
            .tournament
            .expect("a tournament");
        assert!(joined.entrants.iter().any(|e| e == name), "{joined:?}");
    }
    // Joining again changes nothing; withdrawing takes the player out.
    let again = players
        .clone()
        .join_tournament(as_player(gateway::token("open-a"), "open-cup"))
        .await
        .expect("a second join")
        .into_inner()
        .tournament
        .unwrap();
    assert_eq!(again.entrants.len(), 5);
    let left = players
        .clone()
        .withdraw_tournament(gateway::authed(
            &gateway::token("open-e"),
            pb::PlayerServiceWithdrawTournamentRequest {
                tournament_id: "open-cup".into(),
            },
        ))
        .await
        .expect("WithdrawTournament")
        .into_inner()
        .tournament
        .unwrap();
    assert_eq!(left.entrants, ["open-a", "open-b", "open-c", "open-d"]);
    // A guest may not enter a rated tournament, nor a bot one that does not allow bots.
    let guest = hidden_front_gateway::auth::mint_dev_token(
        hidden_front_gateway::auth::DEV_SECRET.as_bytes(),
        "open-guest",
        Duration::from_secs(600),
        true,
    )
    .unwrap();
    for token in [guest, bot_token("open-bot")] {
        let refused = players
            .clone()
            .join_tournament(as_player(token, "open-cup"))
            .await
            .unwrap_err();
        assert_eq!(
            (refused.code(), reason(&refused).as_str()),
            (tonic::Code::PermissionDenied, "NOT_ALLOWED")
        );
    }
    // The organiser's own tournaments take no players.
    let refused = players
        .clone()
        .join_tournament(as_player(gateway::token("open-a"), "no-such-cup"))
        .await
        .unwrap_err();
    assert_eq!(reason(&refused), "TOURNAMENT_NOT_FOUND");
    // Listed for anyone while open; shown with its entrants.
    let listed = players
        .clone()
        .list_tournaments(gateway::authed(
            &gateway::token("someone-else"),
            pb::PlayerServiceListTournamentsRequest {},
        ))
        .await
        .expect("ListTournaments")
        .into_inner()
        .tournaments;
    assert!(
        listed.iter().any(|t| t.tournament_id == "open-cup"),
        "{listed:?}"
    );

    // At the start, round 1 pairs exactly the four who stayed; joining is closed.
    let t = until(
        async || {
            players
                .clone()
                .get_tournament(gateway::authed(
                    &gateway::token("open-b"),
                    pb::PlayerServiceGetTournamentRequest {
                        tournament_id: "open-cup".into(),
                    },
                ))
                .await
                .expect("GetTournament")
                .into_inner()
                .tournament
                .unwrap()
        },
        |t: &pb::Tournament| !t.rounds.is_empty(),
    )
    .await;
    assert!(
        hidden_front_e2e::client::now_unix_ms() >= start,
        "paired before its start"
    );
    let round = bulk(&mut organiser_client, &t.rounds[0].bulk_id).await;
    let mut seated: Vec<String> = round
        .games
        .iter()
        .flat_map(|g| [g.south_player.clone(), g.north_player.clone()])
        .collect();
    seated.sort();
    assert_eq!(seated, ["open-a", "open-b", "open-c", "open-d"]);
    let refused = players
        .clone()
        .join_tournament(as_player(gateway::token("open-late"), "open-cup"))
        .await
        .unwrap_err();
    assert_eq!(
        (refused.code(), reason(&refused).as_str()),
        (tonic::Code::FailedPrecondition, "TOURNAMENT_CLOSED")
    );
    // Four entrants: a Swiss of three rounds plays three (no one meets twice).
    assert_eq!(t.round_count, 3);
}
