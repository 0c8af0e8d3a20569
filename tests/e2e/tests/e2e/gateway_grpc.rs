//! The gateway's gRPC `PlayerService` end to end: the real binary (`--services all`, so one port
//! serves the session and the gateway), real Postgres, players who hold only a token. Games are
//! created on the session service; everything else goes through `PlayerService`.
//!
//! - `two_players_and_a_spectator_play_to_the_end`: deployment (Reshuffle, Deploy, Swap,
//!   Confirm) and random legal moves taken from `LegalMoves`, while both players and a spectator
//!   follow the game from seq 1; the three streams agree wherever they overlap.
//! - `a_resumed_stream_misses_nothing_and_repeats_nothing`: clients drop their streams at
//!   several points and resume from the last seq + 1; they end with exactly the events of a
//!   client that never left.
//! - `tokens_seats_and_spectators`: who may do what (UNAUTHENTICATED, PERMISSION_DENIED,
//!   spectators).
//! - `list_my_games_lists_seat_and_opponent`.
//! - `the_end_reveals_the_whole_game_to_players_and_spectators`: after a game full of fights,
//!   the live `GameEnded`, a `Subscribe` from seq 1 and `GetGame` show every party both
//!   deployments and both kinds of every fight; the mover's last answer is its stream's copy.

use hidden_front_e2e::client::{self, Client, other, phase_of, side_of};
use hidden_front_e2e::gateway::{
    self, Followed, PlayerClient, check_streams, context, follow_to_end, mv, public, seqs,
};
use hidden_front_e2e::player::{Placements, assert_hides_opponent, own_legal_moves, to_map};
use hidden_front_e2e::{Server, TestDatabase, pb, reveal};
use hidden_front_rules::{Deployment, GameRng, Rules};
use pb::game_event::Event;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tonic::Code;
use tonic::transport::Channel;

/// The players here act far faster than people; the default per-player rate limit (10 actions
/// a second) would make a whole game take half a minute.
const SERVE_ARGS: &[&str] = &["--actions-per-second", "5000"];

/// A random game ends well within this many plies.
const MAX_PLIES: usize = 3000;

/// A server with its own database, a channel to it and a session client (for creating games).
struct Env {
    server: Server,
    channel: Channel,
    session: Client,
    _db: TestDatabase,
}

async fn env(name: &str) -> Env {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args(name, db.url(), SERVE_ARGS).await;
    let channel = gateway::channel(server.addr()).await;
    let session = server.connect().await;
    Env {
        server,
        channel,
        session,
        _db: db,
    }
}

/// Creates a game on the session service (the only call the tests make there).
async fn create(
    session: &mut Client,
    south: &str,
    north: &str,
    rules: &str,
) -> pb::CreateGameResponse {
    session
        .create_game(pb::CreateGameRequest {
            south_player: south.to_string(),
            north_player: north.to_string(),
            rules: rules.to_string(),
            time_control: hidden_front_e2e::client::untimed(),
            idempotency_key: uuid::Uuid::new_v4().to_string(),
        })
        .await
        .unwrap_or_else(|s| panic!("CreateGame failed: {s:?}"))
        .into_inner()
}

/// A seated player: its client, its side and its seeded choices.
struct Seat {
    client: PlayerClient,
    side: pb::Side,
    rng: GameRng,
    keys: u64,
}

impl Seat {
    fn new(channel: &Channel, player: &str, side: pb::Side, seed: u64) -> Seat {
        Seat {
            client: PlayerClient::new(channel.clone(), player),
            side,
            rng: GameRng::from_seed(seed),
            keys: 0,
        }
    }

    fn key(&mut self) -> String {
        self.keys += 1;
        format!("{}-{}", self.client.player(), self.keys)
    }

    fn below(&mut self, bound: usize) -> usize {
        self.rng.below(u32::try_from(bound).expect("a small bound")) as usize
    }

    fn viewer(&self) -> pb::Viewer {
        client::viewer_of(self.side)
    }

    async fn view(&mut self, game_id: &str) -> pb::GameView {
        let view = self
            .client
            .get_game(game_id, false)
            .await
            .unwrap_or_else(|s| panic!("GetGame of {} failed: {s:?}", self.client.player()));
        assert_eq!(view.viewer, self.viewer() as i32, "GetGame's viewer");
        assert_eq!(view.game_id, game_id);
        view
    }

    /// Deploys through the gateway, checking each answer: Reshuffle, then (if `own`) Deploy of a
    /// deployment of its own, then Swap of two ranked pieces, then Confirm. Returns what it
    /// confirmed and the Confirm answer.
    async fn deploy(&mut self, game_id: &str, own: bool) -> (Placements, pb::ActionResult) {
        let view = self.view(game_id).await;
        assert_eq!(phase_of(&view), pb::Phase::Deployment);
        assert!(view.pieces.is_empty(), "pieces during deployment: {view:?}");
        let rules = Rules::parse(&view.rules).expect("known rules");
        let draft = view.own_deployment.as_ref().expect("an own draft");
        assert_eq!(
            side_of(draft.side),
            self.side,
            "own_deployment of another side"
        );
        assert_eq!(draft.placements.len(), 25);

        let key = self.key();
        let result = self
            .client
            .reshuffle(context(game_id, &key, Some(view.version)))
            .await
            .unwrap_or_else(|s| panic!("Reshuffle failed: {s:?}"));
        let mut expected = self.drafted(&result, view.version);
        let mut version = result.version;

        if own {
            let deployment = Deployment::random(&rules, engine_side(self.side), &mut self.rng);
            let topo = rules.topology();
            let placements: Vec<pb::Placement> = deployment
                .placements
                .iter()
                .map(|&(node, kind)| pb::Placement {
                    square: topo.name(node).to_string(),
                    piece: rules.code(kind).to_string(),
                })
                .collect();
            let key = self.key();
            let result = self
                .client
                .deploy(context(game_id, &key, Some(version)), placements.clone())
                .await
                .unwrap_or_else(|s| panic!("Deploy failed: {s:?}"));
            expected = self.drafted(&result, version);
            assert_eq!(
                expected,
                to_map(&placements),
                "Deploy drafted something else"
            );
            version = result.version;
        }

        let ranked: Vec<(String, String)> = expected
            .iter()
            .filter(|(_, code)| code.as_bytes()[0].is_ascii_digit())
            .map(|(s, c)| (s.clone(), c.clone()))
            .collect();
        let (a, b) = loop {
            let a = &ranked[self.below(ranked.len())];
            let b = &ranked[self.below(ranked.len())];
            if a.1 != b.1 {
                break (a.clone(), b.clone());
            }
        };
        let key = self.key();
        let result = self
            .client
            .swap(context(game_id, &key, Some(version)), &a.0, &b.0)
            .await
            .unwrap_or_else(|s| panic!("Swap({}, {}) failed: {s:?}", a.0, b.0));
        expected.insert(a.0.clone(), b.1.clone());
        expected.insert(b.0.clone(), a.1.clone());
        assert_eq!(
            self.drafted(&result, version),
            expected,
            "Swap drafted something else"
        );
        version = result.version;

        let view = self.view(game_id).await;
        assert_eq!(view.version, version);
        let draft = view.own_deployment.as_ref().expect("an own draft");
        assert_eq!(
            to_map(&draft.placements),
            expected,
            "GetGame shows another draft"
        );

        let key = self.key();
        let confirmed = self
            .client
            .confirm(context(game_id, &key, Some(version)))
            .await
            .unwrap_or_else(|s| panic!("Confirm failed: {s:?}"));
        assert!(!confirmed.replayed);
        assert_eq!(confirmed.version, version + confirmed.events.len() as u64);
        match confirmed.events.first().and_then(|e| e.event.as_ref()) {
            Some(Event::DeploymentConfirmed(c)) => {
                assert_eq!(side_of(c.side), self.side);
                let deployment = c
                    .deployment
                    .as_ref()
                    .expect("the owner sees its deployment");
                assert_eq!(to_map(&deployment.placements), expected);
            }
            other => panic!("Confirm answered {other:?}"),
        }
        (expected, confirmed)
    }

    /// The single own draft of a deployment action's answer judged at `before`.
    #[track_caller]
    fn drafted(&self, result: &pb::ActionResult, before: u64) -> Placements {
        assert!(!result.replayed, "a fresh key was answered as replayed");
        assert_eq!(result.version, before + 1, "{result:?}");
        assert_eq!(gateway::seqs(&result.events), vec![before + 1]);
        match result.events[0].event.as_ref() {
            Some(Event::DeploymentDrafted(d)) => {
                let deployment = d.deployment.as_ref().expect("a draft");
                assert_eq!(
                    side_of(deployment.side),
                    self.side,
                    "a draft of the other side"
                );
                assert_eq!(deployment.placements.len(), 25);
                to_map(&deployment.placements)
            }
            other => panic!("expected DeploymentDrafted, got {other:?}"),
        }
    }

    /// One turn: `LegalMoves` (checked against the moves computed from its own view), a random
    /// one of them played with a fresh key at that version, the answer checked.
    async fn play_turn(&mut self, game_id: &str) -> Turn {
        let legal = self
            .client
            .legal_moves(game_id)
            .await
            .unwrap_or_else(|s| panic!("LegalMoves failed: {s:?}"));
        let view = self.view(game_id).await;
        assert_eq!(
            view.version, legal.version,
            "LegalMoves and GetGame disagree on the version"
        );
        assert_eq!(side_of(view.to_move), self.side, "not its turn: {view:?}");
        assert_hides_opponent(&view);
        let listed: BTreeSet<(String, String)> = legal
            .moves
            .iter()
            .map(|m| (m.from.clone(), m.to.clone()))
            .collect();
        let computed: BTreeSet<(String, String)> = own_legal_moves(&view)
            .into_iter()
            .map(|m| (m.from, m.to))
            .collect();
        assert_eq!(
            listed, computed,
            "LegalMoves vs the moves of the player's own view"
        );
        assert!(
            !legal.moves.is_empty(),
            "its turn, but no legal move: {view:?}"
        );
        let chosen = legal.moves[self.below(legal.moves.len())].clone();
        let key = self.key();
        let result = self
            .client
            .play(context(game_id, &key, Some(legal.version)), chosen.clone())
            .await
            .unwrap_or_else(|s| panic!("Play {chosen:?} at {} failed: {s:?}", legal.version));
        client_check_move(self.side, &chosen, legal.version, &result);
        Turn {
            side: self.side,
            mv: chosen,
            key,
            before: legal.version,
            result,
        }
    }
}

impl Seat {
    /// One turn that attacks whenever it can (a random attack, else a random move): a game of
    /// many fights. The move's answer.
    async fn attacking_turn(&mut self, game_id: &str) -> pb::ActionResult {
        let legal = self
            .client
            .legal_moves(game_id)
            .await
            .unwrap_or_else(|s| panic!("LegalMoves failed: {s:?}"));
        let view = self.view(game_id).await;
        let enemy: BTreeSet<&str> = view
            .pieces
            .iter()
            .filter(|p| side_of(p.side) != self.side)
            .map(|p| p.square.as_str())
            .collect();
        let attacks: Vec<&pb::Move> = legal
            .moves
            .iter()
            .filter(|m| enemy.contains(m.to.as_str()))
            .collect();
        let chosen = if attacks.is_empty() {
            legal.moves[self.below(legal.moves.len())].clone()
        } else {
            attacks[self.below(attacks.len())].clone()
        };
        let key = self.key();
        self.client
            .play(context(game_id, &key, Some(legal.version)), chosen.clone())
            .await
            .unwrap_or_else(|s| panic!("Play {chosen:?} at {} failed: {s:?}", legal.version))
    }
}

/// A played move and its answer.
#[derive(Debug, Clone)]
struct Turn {
    side: pb::Side,
    mv: pb::Move,
    key: String,
    before: u64,
    result: pb::ActionResult,
}

impl Turn {
    fn ended(&self) -> bool {
        self.result.events.last().is_some_and(gateway::is_end)
    }
}

fn engine_side(side: pb::Side) -> hidden_front_rules::Side {
    hidden_front_e2e::player::engine_side(side)
}

/// Checks the mover's answer to a move judged at `before`.
#[track_caller]
fn client_check_move(side: pb::Side, chosen: &pb::Move, before: u64, result: &pb::ActionResult) {
    assert!(!result.replayed, "a fresh key was answered as replayed");
    assert_eq!(
        result.version,
        before + result.events.len() as u64,
        "{result:?}"
    );
    let expected: Vec<u64> = (before + 1..=result.version).collect();
    assert_eq!(gateway::seqs(&result.events), expected);
    match result.events[0].event.as_ref() {
        Some(Event::Moved(moved)) => {
            assert_eq!(side_of(moved.side), side);
            assert_eq!(moved.r#move.as_ref(), Some(chosen));
            assert!(
                !moved.piece.is_empty(),
                "the mover's own code is hidden from it"
            );
            // Even the move that ends the game: only the end event reveals.
            if let Some(combat) = &moved.combat {
                assert!(
                    combat.defender_piece.is_empty(),
                    "a fight told the attacker the defender's kind: {combat:?}"
                );
            }
        }
        other => panic!("a move's first event is {other:?}"),
    }
}

/// Subscribes from seq 1 and follows to the end in a task of its own.
async fn follow(
    channel: &Channel,
    player: &str,
    game_id: &str,
    spectate: bool,
) -> tokio::task::JoinHandle<Followed> {
    let mut client = PlayerClient::new(channel.clone(), player);
    let stream = client
        .subscribe(game_id, 1, spectate)
        .await
        .unwrap_or_else(|s| panic!("Subscribe of {player} failed: {s:?}"));
    let game_id = game_id.to_string();
    tokio::spawn(async move { follow_to_end(&mut client, &game_id, spectate, stream).await })
}

/// Plays the game to its end, alternating from `first`. Calls `between` after every ply.
async fn play_to_end(
    seats: &mut [Seat; 2],
    game_id: &str,
    first: pb::Side,
    mut between: impl AsyncFnMut(&mut [Seat; 2], &Turn),
) -> Vec<Turn> {
    let mut to_move = first;
    let mut turns: Vec<Turn> = Vec::new();
    while turns.len() < MAX_PLIES {
        let seat = seats
            .iter_mut()
            .find(|s| s.side == to_move)
            .expect("a seat per side");
        let turn = seat.play_turn(game_id).await;
        between(seats, &turn).await;
        let ended = turn.ended();
        turns.push(turn);
        if ended {
            return turns;
        }
        to_move = other(to_move);
    }
    panic!("{game_id}: no end after {MAX_PLIES} plies");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_players_and_a_spectator_play_to_the_end() {
    let mut env = env("gateway-game").await;
    let created = create(&mut env.session, "gg-ann", "gg-bob", "").await;
    let game_id = created.game_id.clone();
    let first = side_of(created.first_mover);

    let watchers = [
        follow(&env.channel, "gg-ann", &game_id, false).await,
        follow(&env.channel, "gg-bob", &game_id, false).await,
        follow(&env.channel, "gg-cat", &game_id, true).await,
    ];

    let mut seats = [
        Seat::new(&env.channel, "gg-ann", pb::Side::South, 0x6a7e_0001),
        Seat::new(&env.channel, "gg-bob", pb::Side::North, 0x6a7e_0002),
    ];
    let (south_deployment, first_confirm) = seats[0].deploy(&game_id, false).await;
    assert_eq!(
        first_confirm.events.len(),
        1,
        "play started with one side confirmed"
    );
    let (north_deployment, second_confirm) = seats[1].deploy(&game_id, true).await;
    match second_confirm.events.get(1).and_then(|e| e.event.as_ref()) {
        Some(Event::PlayStarted(started)) => {
            assert_eq!(started.pieces.len(), 50);
            for piece in &started.pieces {
                let mine = side_of(piece.side) == pb::Side::North;
                assert_eq!(
                    !piece.piece.is_empty(),
                    mine,
                    "PlayStarted for north: {piece:?}"
                );
            }
        }
        other => panic!("the second Confirm did not start play: {other:?}"),
    }
    for (seat, deployed) in seats.iter_mut().zip([&south_deployment, &north_deployment]) {
        let view = seat.view(&game_id).await;
        assert_eq!(phase_of(&view), pb::Phase::Play);
        assert_eq!(side_of(view.to_move), first);
        assert_hides_opponent(&view);
        let own: Placements = view
            .pieces
            .iter()
            .filter(|p| side_of(p.side) == seat.side)
            .map(|p| (p.square.clone(), p.piece.clone()))
            .collect();
        assert_eq!(&own, deployed, "the board is not the confirmed deployment");
    }
    let mut spectator = PlayerClient::new(env.channel.clone(), "gg-cat");
    let view = spectator
        .get_game(&game_id, true)
        .await
        .expect("a spectator's GetGame");
    assert_eq!(view.viewer, pb::Viewer::Spectator as i32);
    assert!(
        view.pieces.iter().all(|p| p.piece.is_empty()),
        "a spectator sees kinds: {view:?}"
    );

    let started = std::time::Instant::now();
    let mut retried = false;
    let mut plies = 0;
    let turns = play_to_end(&mut seats, &game_id, first, async |seats, turn: &Turn| {
        if turn.ended() {
            return;
        }
        // The side that just moved has no legal moves now.
        let moved = seats
            .iter_mut()
            .find(|s| s.side == turn.side)
            .expect("two seats");
        let legal = moved
            .client
            .legal_moves(&game_id)
            .await
            .expect("LegalMoves");
        assert!(
            legal.moves.is_empty(),
            "out of turn, LegalMoves lists {:?}",
            legal.moves
        );
        assert_eq!(legal.version, turn.result.version);
        plies += 1;
        if plies == 5 {
            retried = true;
            let mover = seats
                .iter_mut()
                .find(|s| s.side == turn.side)
                .expect("two seats");
            // A retry with the same key: the first answer, marked replayed, and no second move.
            let again = mover
                .client
                .play(
                    context(&game_id, &turn.key, Some(turn.before)),
                    turn.mv.clone(),
                )
                .await
                .expect("a retried Play");
            assert!(again.replayed, "a retry was not answered as replayed");
            assert_eq!(again.events, turn.result.events);
            assert_eq!(again.version, turn.result.version);
            // A stale expected version is refused.
            let key = mover.key();
            let refused = mover
                .client
                .play(context(&game_id, &key, Some(turn.before)), turn.mv.clone())
                .await;
            client::expect_code(refused, Code::Aborted, "Play at a stale version");
        }
    })
    .await;
    assert!(retried, "the game was too short to retry a move");
    let last = turns.last().expect("moves");
    let version = last.result.version;
    eprintln!(
        "game {game_id}: {} plies in {:?}",
        turns.len(),
        started.elapsed()
    );

    let [south, north, spectator_log] = watchers;
    let south = south.await.expect("south's stream");
    let north = north.await.expect("north's stream");
    let spectator_log = spectator_log.await.expect("the spectator's stream");
    for (who, followed) in [
        ("south", &south),
        ("north", &north),
        ("spectator", &spectator_log),
    ] {
        assert!(
            followed.reconnects.is_empty(),
            "{who} was told to reconnect: {:?}",
            followed.reconnects
        );
    }
    check_streams(
        &game_id,
        version,
        &south.events,
        &north.events,
        &spectator_log.events,
    );

    // Each player's stream holds exactly the answers it got, the ending answer included.
    for (seat, log) in [
        (pb::Side::South, &south.events),
        (pb::Side::North, &north.events),
    ] {
        let by_seq: BTreeMap<u64, &pb::GameEvent> = log.iter().map(|e| (e.seq, e)).collect();
        for turn in turns.iter().filter(|t| t.side == seat) {
            for event in &turn.result.events {
                assert_eq!(
                    Some(&event),
                    by_seq.get(&event.seq),
                    "{seat:?}'s answer vs stream"
                );
            }
        }
        let played: Vec<(String, String)> = turns
            .iter()
            .filter(|t| t.side == seat)
            .map(|t| (t.mv.from.clone(), t.mv.to.clone()))
            .collect();
        let logged: Vec<(String, String)> = client::moves_in_log(log)
            .into_iter()
            .filter(|(side, _, _)| *side == seat)
            .map(|(_, from, to)| (from, to))
            .collect();
        assert_eq!(logged, played, "{seat:?}'s moves in its stream");
    }
    // The final reveal shows every kind, and each side's survivors as it deployed them.
    let Some(Event::Ended(ended)) = &spectator_log.events.last().and_then(|e| e.event.clone())
    else {
        panic!("no end");
    };
    let kinds: BTreeSet<&str> = ended.pieces.iter().map(|p| p.piece.as_str()).collect();
    assert!(!kinds.contains(""), "a hidden kind in the final reveal");
    for piece in &ended.pieces {
        let deployed = match side_of(piece.side) {
            pb::Side::South => &south_deployment,
            _ => &north_deployment,
        };
        assert!(
            deployed.values().any(|code| *code == piece.piece),
            "{piece:?} is no kind its side deployed"
        );
    }
    // After the end every view is fully revealed and agrees with the stream's end.
    for seat in &mut seats {
        let view = seat.view(&game_id).await;
        assert_eq!(phase_of(&view), pb::Phase::Ended);
        assert_eq!(view.version, version);
        assert_eq!(view.outcome, ended.outcome);
        let mut board: Vec<_> = view.pieces.clone();
        let mut revealed = ended.pieces.clone();
        board.sort_by_key(|p| p.id);
        revealed.sort_by_key(|p| p.id);
        assert_eq!(board, revealed, "GetGame after the end vs GameEnded");
    }
}

/// Reads `stream` until it has delivered the event with seq `until` (or `GameEnded`), adding
/// what it reads to `seen`.
async fn read_until(
    stream: &mut tonic::codec::Streaming<pb::SubscribeResponse>,
    seen: &mut Vec<pb::GameEvent>,
    until: u64,
) {
    while seen
        .last()
        .is_none_or(|e| e.seq < until && !gateway::is_end(e))
    {
        let item = gateway::next_item(stream, "a resumable stream")
            .await
            .expect("the stream failed")
            .expect("the stream ended early");
        match item.item {
            Some(pb::subscribe_response::Item::Event(e)) => seen.push(e),
            other => panic!("expected an event, got {other:?}"),
        }
    }
}

/// A client that comes and goes: it holds a stream only between `connect` and `drop`.
struct Intermittent {
    client: PlayerClient,
    spectate: bool,
    seen: Vec<pb::GameEvent>,
    stream: Option<tonic::codec::Streaming<pb::SubscribeResponse>>,
    connects: usize,
}

impl Intermittent {
    async fn connect(&mut self, game_id: &str) {
        let from = self.seen.last().map_or(1, |e| e.seq + 1);
        self.stream = Some(
            self.client
                .subscribe(game_id, from, self.spectate)
                .await
                .unwrap_or_else(|s| panic!("resubscribing from {from} failed: {s:?}")),
        );
        self.connects += 1;
    }

    /// Reads the stream until the event with seq `until` (which must be visible to it) or the
    /// end.
    async fn catch_up(&mut self, until: u64) {
        let stream = self.stream.as_mut().expect("connected");
        read_until(stream, &mut self.seen, until).await;
    }

    fn disconnect(&mut self) {
        self.stream = None;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_stream_misses_nothing_and_repeats_nothing() {
    let mut env = env("gateway-resume").await;
    let created = create(&mut env.session, "rs-ann", "rs-bob", "").await;
    let game_id = created.game_id.clone();
    let first = side_of(created.first_mover);

    // Clients that never leave, one per viewer. North stays connected too: a seat with no
    // stream counts as away, and its time to come back (60 s) would end a slow run's game.
    let steady = [
        follow(&env.channel, "rs-ann", &game_id, false).await,
        follow(&env.channel, "rs-cat", &game_id, true).await,
    ];
    let steady_north = follow(&env.channel, "rs-bob", &game_id, false).await;
    // The same viewers on clients that come and go; the spectator comes back once on a
    // connection of its own.
    let mut leaving = Intermittent {
        client: PlayerClient::new(env.channel.clone(), "rs-ann"),
        spectate: false,
        seen: Vec::new(),
        stream: None,
        connects: 0,
    };
    let mut spectator = Intermittent {
        client: PlayerClient::new(env.channel.clone(), "rs-cat"),
        spectate: true,
        seen: Vec::new(),
        stream: None,
        connects: 0,
    };
    leaving.connect(&game_id).await;
    spectator.connect(&game_id).await;

    let mut seats = [
        Seat::new(&env.channel, "rs-ann", pb::Side::South, 0x7e5_0001),
        Seat::new(&env.channel, "rs-bob", pb::Side::North, 0x7e5_0002),
    ];
    // South reshuffles and leaves; north reshuffles next, a draft south never sees, so south
    // resumes from a seq that is hidden from it.
    let view = seats[0].view(&game_id).await;
    let key = seats[0].key();
    let reshuffled = seats[0]
        .client
        .reshuffle(context(&game_id, &key, Some(view.version)))
        .await
        .expect("Reshuffle");
    leaving.catch_up(reshuffled.version).await;
    leaving.disconnect();
    spectator.catch_up(1).await;
    spectator.disconnect();
    let key = seats[1].key();
    seats[1]
        .client
        .reshuffle(context(&game_id, &key, None))
        .await
        .expect("Reshuffle");
    let hidden_from_south = reshuffled.version + 1;
    leaving.connect(&game_id).await;
    spectator.client = PlayerClient::new(gateway::channel(env.server.addr()).await, "rs-cat");
    spectator.connect(&game_id).await;
    // Deployments of their own (from the seeds), so that the game is one of two (whoever
    // moves first) and long enough for the comings and goings below.
    seats[0].deploy(&game_id, true).await;
    seats[1].deploy(&game_id, true).await;

    // Mid-game: leave at plies 10 and 40 (the spectator at 25), come back after 7 more plies.
    let channel = env.channel.clone();
    let mut away_since: Option<usize> = None;
    let mut spectator_away_since: Option<usize> = None;
    let mut plies = 0usize;
    let turns = play_to_end(&mut seats, &game_id, first, async |_, turn: &Turn| {
        plies += 1;
        let version = turn.result.version;
        if turn.ended() {
            return;
        }
        if matches!(plies, 10 | 40) {
            leaving.catch_up(version).await;
            leaving.disconnect();
            away_since = Some(plies);
        } else if away_since.is_some_and(|since| plies == since + 7) {
            leaving.connect(&game_id).await;
            away_since = None;
        }
        if plies == 25 {
            spectator.catch_up(version).await;
            spectator.disconnect();
            spectator_away_since = Some(plies);
        } else if spectator_away_since.is_some_and(|since| plies == since + 7) {
            spectator.client = PlayerClient::new(channel.clone(), "rs-cat");
            spectator.connect(&game_id).await;
            spectator_away_since = None;
        }
    })
    .await;
    assert!(
        turns.len() > 50,
        "too short a game to test resuming: {} plies",
        turns.len()
    );
    let version = turns.last().expect("moves").result.version;
    for client in [&mut leaving, &mut spectator] {
        assert!(
            client.stream.is_some(),
            "every client is back before the end"
        );
        client.catch_up(version).await;
    }
    assert_eq!((leaving.connects, spectator.connects), (4, 3));

    let [steady_south, steady_spectator] = steady;
    let steady_south = steady_south.await.expect("the steady stream");
    let steady_spectator = steady_spectator.await.expect("the steady stream");
    let steady_north = steady_north.await.expect("the steady stream");
    assert!(steady_south.reconnects.is_empty() && steady_spectator.reconnects.is_empty());
    assert_eq!(
        steady_north.events.last().map(|e| e.seq),
        Some(version),
        "north's stream reaches the end"
    );
    assert!(
        !seqs(&leaving.seen).contains(&hidden_from_south),
        "south saw north's draft"
    );
    assert_eq!(
        seqs(&leaving.seen),
        seqs(&steady_south.events),
        "resumed vs steady seqs"
    );
    assert_eq!(
        leaving.seen, steady_south.events,
        "resumed vs steady events"
    );
    assert_eq!(seqs(&spectator.seen), seqs(&steady_spectator.events));
    assert_eq!(
        spectator.seen, steady_spectator.events,
        "resumed vs steady spectator events"
    );

    // Resuming after the end: the same seqs, and the same public content.
    let mut late = PlayerClient::new(env.channel.clone(), "rs-ann");
    let from = version - 20;
    let stream = late
        .subscribe(&game_id, from, false)
        .await
        .expect("Subscribe after the end");
    let tail = follow_to_end(&mut late, &game_id, false, stream).await;
    let expected: Vec<&pb::GameEvent> = steady_south
        .events
        .iter()
        .filter(|e| e.seq >= from)
        .collect();
    assert_eq!(
        seqs(&tail.events),
        expected.iter().map(|e| e.seq).collect::<Vec<_>>()
    );
    for (got, want) in tail.events.iter().zip(expected) {
        assert_eq!(public(got), public(want), "seq {}", got.seq);
    }
}

/// A token signed with `secret` whose claims are `claims`, with HS256.
fn signed(secret: &[u8], claims: &serde_json::Value) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        claims,
        &jsonwebtoken::EncodingKey::from_secret(secret).expect("an HS256 key"),
    )
    .expect("signing a token")
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs()
}

/// Every `PlayerService` call once, with `authorization: <value>` (or none); each answer's
/// status (OK as `Code::Ok`) and message, by method name.
async fn every_call(
    channel: &Channel,
    authorization: Option<&str>,
    game_id: &str,
) -> Vec<(&'static str, Code, String)> {
    let mut c = pb::player_service_client::PlayerServiceClient::new(channel.clone());
    let ctx = || Some(context(game_id, &uuid::Uuid::new_v4().to_string(), None));
    let code = |r: Result<(), tonic::Status>| match r {
        Ok(()) => (Code::Ok, String::new()),
        Err(s) => (s.code(), s.message().to_string()),
    };
    let mut out = Vec::new();
    macro_rules! call {
        ($name:literal, $method:ident, $msg:expr) => {{
            let request = gateway::with_authorization(authorization, $msg);
            let (c, m) = code(c.$method(request).await.map(|_| ()));
            out.push(($name, c, m));
        }};
    }
    call!(
        "Subscribe",
        subscribe,
        pb::SubscribeRequest {
            game_id: game_id.into(),
            from_seq: 1,
            spectate: false,
            with_status: false,
        }
    );
    call!(
        "GetGame",
        get_game,
        pb::PlayerServiceGetGameRequest {
            game_id: game_id.into(),
            spectate: false
        }
    );
    call!(
        "ListMyGames",
        list_my_games,
        pb::ListMyGamesRequest { active_only: false }
    );
    call!(
        "Reshuffle",
        reshuffle,
        pb::ReshuffleRequest { context: ctx() }
    );
    call!(
        "Swap",
        swap,
        pb::SwapRequest {
            context: ctx(),
            square_a: "A1".into(),
            square_b: "C1".into()
        }
    );
    call!(
        "Deploy",
        deploy,
        pb::DeployRequest {
            context: ctx(),
            placements: Vec::new()
        }
    );
    call!("Confirm", confirm, pb::ConfirmRequest { context: ctx() });
    call!(
        "Play",
        play,
        pb::PlayRequest {
            context: ctx(),
            r#move: Some(mv("A6", "A7"))
        }
    );
    call!(
        "LegalMoves",
        legal_moves,
        pb::LegalMovesRequest {
            game_id: game_id.into(),
            min_version: None,
        }
    );
    call!(
        "ProposeDraw",
        propose_draw,
        pb::ProposeDrawRequest { context: ctx() }
    );
    call!(
        "RespondDraw",
        respond_draw,
        pb::RespondDrawRequest {
            context: ctx(),
            accept: true
        }
    );
    call!("Concede", concede, pb::ConcedeRequest { context: ctx() });
    out
}

/// The game's version, read on the session service.
async fn version(session: &mut Client, game_id: &str) -> u64 {
    client::get_game(session, game_id, pb::Viewer::Spectator)
        .await
        .version
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_seats_and_spectators() {
    let mut env = env("gateway-auth").await;
    let created = create(&mut env.session, "au-ann", "au-bob", "").await;
    let game_id = created.game_id.clone();
    let before = version(&mut env.session, &game_id).await;

    // Tokens the gateway must refuse.
    let other_secret = b"another-secret-that-is-long-enough-for-hs256";
    let expired = signed(
        hidden_front_gateway::auth::DEV_SECRET.as_bytes(),
        &serde_json::json!({"sub": "au-ann", "iat": now() - 7200, "exp": now() - 3600}),
    );
    let foreign = hidden_front_gateway::auth::mint_dev_token(
        other_secret,
        "au-ann",
        Duration::from_secs(600),
        false,
    )
    .expect("a token signed with another secret");
    let unsigned =
        "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJhdS1hbm4iLCJleHAiOjk5OTk5OTk5OTl9.";
    let cases: Vec<(&str, Option<String>, Option<&str>)> = vec![
        ("no token", None, Some("no credentials")),
        ("an empty bearer", Some("Bearer ".into()), None),
        ("garbage", Some("Bearer garbage".into()), None),
        (
            "not bearer",
            Some(format!("Basic {}", gateway::token("au-ann"))),
            None,
        ),
        (
            "expired",
            Some(format!("Bearer {expired}")),
            Some("expired"),
        ),
        (
            "another secret",
            Some(format!("Bearer {foreign}")),
            Some("signature"),
        ),
        ("alg none", Some(format!("Bearer {unsigned}")), None),
    ];
    for (what, header, says) in &cases {
        for (method, code, message) in every_call(&env.channel, header.as_deref(), &game_id).await {
            assert_eq!(
                code,
                Code::Unauthenticated,
                "{what}: {method} answered {code:?} {message:?}"
            );
            if let Some(says) = says {
                assert!(
                    message.contains(says),
                    "{what}: {method}: {message:?} does not say {says:?}"
                );
            }
            if let Some(header) = header
                && let Some(token) = header.split(' ').nth(1).filter(|t| t.len() > 8)
            {
                assert!(
                    !message.contains(token),
                    "{what}: {method} echoes the token"
                );
            }
        }
    }
    // Also for a game that does not exist: authentication comes first.
    for (method, code, _) in every_call(
        &env.channel,
        Some("Bearer garbage"),
        &uuid::Uuid::new_v4().to_string(),
    )
    .await
    {
        assert_eq!(
            code,
            Code::Unauthenticated,
            "{method} of an unknown game without a valid token"
        );
    }
    assert_eq!(
        version(&mut env.session, &game_id).await,
        before,
        "refused calls changed the game"
    );

    // A good token works (so the refusals above are about the tokens).
    let mut ann = PlayerClient::new(env.channel.clone(), "au-ann");
    let view = ann
        .get_game(&game_id, false)
        .await
        .expect("GetGame with a good token");
    assert_eq!(view.viewer, pb::Viewer::South as i32);
    let guest = hidden_front_gateway::auth::mint_dev_token(
        hidden_front_gateway::auth::DEV_SECRET.as_bytes(),
        "au-bob",
        Duration::from_secs(600),
        true,
    )
    .expect("a guest token");
    let mut bob = PlayerClient::with_token(env.channel.clone(), "au-bob", &guest);
    assert_eq!(
        bob.get_game(&game_id, false)
            .await
            .expect("a guest's GetGame")
            .viewer,
        pb::Viewer::North as i32
    );

    // Someone not seated: every action and every seat-bound read is PERMISSION_DENIED.
    let mallory = format!("Bearer {}", gateway::token("au-mallory"));
    for (method, code, message) in every_call(&env.channel, Some(&mallory), &game_id).await {
        match method {
            "ListMyGames" => assert_eq!(code, Code::Ok, "ListMyGames: {message}"),
            _ => assert_eq!(
                code,
                Code::PermissionDenied,
                "{method} by a stranger: {code:?} {message}"
            ),
        }
    }
    assert_eq!(
        version(&mut env.session, &game_id).await,
        before,
        "a stranger changed the game"
    );
    let mut mallory = PlayerClient::new(env.channel.clone(), "au-mallory");
    assert!(
        mallory
            .list_my_games(false)
            .await
            .expect("ListMyGames")
            .is_empty()
    );
    for (what, game) in [
        ("unknown", uuid::Uuid::new_v4().to_string()),
        ("malformed", "not-a-game".into()),
    ] {
        let refused = mallory.get_game(&game, true).await;
        let code = if what == "unknown" {
            Code::NotFound
        } else {
            Code::InvalidArgument
        };
        client::expect_code(refused, code, &format!("GetGame of a {what} game"));
        let refused = mallory.subscribe(&game, 1, true).await;
        client::expect_code(
            refused.map(|_| ()),
            code,
            &format!("Subscribe to a {what} game"),
        );
    }

    // As a spectator the stranger may watch, and sees no kind.
    let spectating = follow(&env.channel, "au-mallory", &game_id, true).await;
    // A seated player who asks to spectate gets the spectator's view too.
    let ann_spectating = follow(&env.channel, "au-ann", &game_id, true).await;
    let view = mallory
        .get_game(&game_id, true)
        .await
        .expect("a spectator's GetGame");
    assert_eq!(view.viewer, pb::Viewer::Spectator as i32);
    assert!(view.own_deployment.is_none(), "a spectator sees a draft");
    let mut seats = [
        Seat::new(&env.channel, "au-ann", pb::Side::South, 0xa0_0001),
        Seat::new(&env.channel, "au-bob", pb::Side::North, 0xa0_0002),
    ];
    seats[0].deploy(&game_id, false).await;
    seats[1].deploy(&game_id, false).await;
    for spectate in [true, false] {
        let view = match spectate {
            true => ann.get_game(&game_id, true).await,
            false => mallory.get_game(&game_id, true).await,
        }
        .expect("GetGame as a spectator");
        assert_eq!(view.viewer, pb::Viewer::Spectator as i32);
        assert_eq!(view.pieces.len(), 50);
        assert!(
            view.pieces.iter().all(|p| p.piece.is_empty()),
            "a spectator sees kinds: {view:?}"
        );
    }
    // The stranger still cannot act now that play runs, not even for the side to move.
    let legal = seats
        .iter_mut()
        .find(|s| s.side == side_of(created.first_mover))
        .expect("a seat")
        .client
        .legal_moves(&game_id)
        .await
        .expect("LegalMoves");
    let refused = mallory
        .play(
            context(&game_id, "mallory-move", None),
            legal.moves[0].clone(),
        )
        .await;
    client::expect_code(refused, Code::PermissionDenied, "a stranger's legal move");
    // The game ends (north concedes) and the watchers see the end, revealed.
    let key = seats[1].key();
    seats[1]
        .client
        .concede(context(&game_id, &key, None))
        .await
        .expect("Concede");
    for watcher in [spectating, ann_spectating] {
        let followed = watcher.await.expect("a spectator's stream");
        for event in &followed.events {
            match &event.event {
                Some(Event::DeploymentDrafted(d)) => panic!("a spectator saw a draft: {d:?}"),
                Some(Event::Ended(ended)) => {
                    assert!(ended.pieces.iter().all(|p| !p.piece.is_empty()));
                    assert_eq!(
                        ended.outcome.map(|o| o.reason),
                        Some(pb::EndReason::Resigned as i32)
                    );
                }
                _ => assert_eq!(public(event), *event, "a spectator saw a kind: {event:?}"),
            }
        }
        let kinds: Vec<&str> = followed
            .events
            .iter()
            .filter_map(|e| match &e.event {
                Some(Event::DeploymentConfirmed(_)) => Some("confirmed"),
                Some(Event::PlayStarted(_)) => Some("started"),
                _ => None,
            })
            .collect();
        assert_eq!(kinds, ["confirmed", "confirmed", "started"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_my_games_lists_seat_and_opponent() {
    let mut env = env("gateway-list").await;
    let g1 = create(&mut env.session, "lm-ann", "lm-bob", "")
        .await
        .game_id;
    let g2 = create(
        &mut env.session,
        "lm-cy",
        "lm-ann",
        "hidden-front+flag-reveal",
    )
    .await
    .game_id;
    let g3 = create(&mut env.session, "lm-ann", "lm-dee", "")
        .await
        .game_id;
    let g4 = create(&mut env.session, "lm-bob", "lm-cy", "")
        .await
        .game_id;
    let mut ann = PlayerClient::new(env.channel.clone(), "lm-ann");
    let ended = ann
        .concede(context(&g3, "ann-gives-up", None))
        .await
        .expect("Concede");
    let ended_version = ended.version;

    let summaries = |games: Vec<pb::GameSummary>| -> BTreeMap<String, pb::GameSummary> {
        let n = games.len();
        let map: BTreeMap<String, pb::GameSummary> =
            games.into_iter().map(|g| (g.game_id.clone(), g)).collect();
        assert_eq!(map.len(), n, "a game listed twice");
        map
    };
    let all = summaries(ann.list_my_games(false).await.expect("ListMyGames"));
    assert_eq!(
        all.keys().cloned().collect::<BTreeSet<_>>(),
        [&g1, &g2, &g3].into_iter().cloned().collect(),
        "ann's games"
    );
    let check =
        |g: &pb::GameSummary, seat: pb::Side, opponent: &str, rules: &str, phase: pb::Phase| {
            assert_eq!(side_of(g.seat), seat, "{g:?}");
            assert_eq!(g.opponent, opponent, "{g:?}");
            assert_eq!(g.rules, rules, "{g:?}");
            assert_eq!(g.phase, phase as i32, "{g:?}");
        };
    check(
        &all[&g1],
        pb::Side::South,
        "lm-bob",
        "hidden-front",
        pb::Phase::Deployment,
    );
    check(
        &all[&g2],
        pb::Side::North,
        "lm-cy",
        "hidden-front+flag-reveal",
        pb::Phase::Deployment,
    );
    check(
        &all[&g3],
        pb::Side::South,
        "lm-dee",
        "hidden-front",
        pb::Phase::Ended,
    );
    assert_eq!(all[&g3].version, ended_version);
    assert_eq!(
        all[&g3].outcome,
        Some(pb::Outcome {
            winner: pb::Side::North as i32,
            reason: pb::EndReason::Resigned as i32
        })
    );
    assert!(all[&g1].outcome.is_none() && all[&g2].outcome.is_none());
    assert!(all[&g1].version >= 1);

    let active = summaries(ann.list_my_games(true).await.expect("ListMyGames active"));
    assert_eq!(
        active.keys().cloned().collect::<BTreeSet<_>>(),
        [&g1, &g2].into_iter().cloned().collect(),
        "ann's active games"
    );

    let mut bob = PlayerClient::new(env.channel.clone(), "lm-bob");
    let bobs = summaries(bob.list_my_games(false).await.expect("bob's ListMyGames"));
    assert_eq!(bobs.len(), 2);
    check(
        &bobs[&g1],
        pb::Side::North,
        "lm-ann",
        "hidden-front",
        pb::Phase::Deployment,
    );
    check(
        &bobs[&g4],
        pb::Side::South,
        "lm-cy",
        "hidden-front",
        pb::Phase::Deployment,
    );
    let mut dee = PlayerClient::new(env.channel.clone(), "lm-dee");
    let dees = summaries(dee.list_my_games(false).await.expect("dee's ListMyGames"));
    check(
        &dees[&g3],
        pb::Side::North,
        "lm-ann",
        "hidden-front",
        pb::Phase::Ended,
    );
    assert!(
        dee.list_my_games(true)
            .await
            .expect("ListMyGames")
            .is_empty()
    );
    let mut nobody = PlayerClient::new(env.channel.clone(), "lm-nobody");
    assert!(
        nobody
            .list_my_games(false)
            .await
            .expect("ListMyGames")
            .is_empty()
    );
}

/// A client that stops reading falls behind; once it is more than `--stream-buffer` events
/// behind (for longer than `--stream-max-lag-ms`, 0 here), the gateway cuts it off with a
/// `Reconnect` hint, and resuming from the hint misses nothing and repeats nothing: up to the
/// hint it got exactly what a client that kept up saw, and from the hint on (it resumed after
/// the end) what any look after the end shows, which reveals everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_falls_behind_is_told_where_to_resume() {
    /// South's drafts while the sleeper does not read (each a whole deployment, ~300 bytes).
    const DRAFTS: usize = 300;
    /// The sleeper's HTTP/2 stream window, in bytes (hyper's default is 2 MiB, which would hold
    /// the whole game): what it leaves unread stays with the gateway, which then sees it lag.
    const WINDOW: u32 = 1024;
    /// Events a connection may be behind (`--stream-buffer`).
    const BEHIND: &str = "16";

    let db = TestDatabase::create().await;
    let server = Server::start_with_args(
        "gateway-lag",
        db.url(),
        &[
            "--actions-per-second",
            "5000",
            "--stream-buffer",
            BEHIND,
            "--stream-max-lag-ms",
            "0",
        ],
    )
    .await;
    let channel = gateway::channel(server.addr()).await;
    let mut session = server.connect().await;
    let created = create(&mut session, "lag-ann", "lag-bob", "").await;
    let game_id = created.game_id.clone();

    let steady = follow(&channel, "lag-ann", &game_id, false).await;
    let narrow = tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr()))
        .expect("a loopback URL")
        .initial_stream_window_size(WINDOW)
        .connect()
        .await
        .expect("a channel with a small window");
    let mut sleeper = PlayerClient::new(narrow, "lag-ann");
    let stream = sleeper
        .subscribe(&game_id, 1, false)
        .await
        .expect("Subscribe");

    let mut ann = Seat::new(&channel, "lag-ann", pb::Side::South, 0x1a6_0001);
    let mut bob = Seat::new(&channel, "lag-bob", pb::Side::North, 0x1a6_0002);
    for _ in 0..DRAFTS {
        let key = ann.key();
        ann.client
            .reshuffle(context(&game_id, &key, None))
            .await
            .expect("Reshuffle");
    }
    ann.deploy(&game_id, false).await;
    bob.deploy(&game_id, false).await;
    let key = bob.key();
    bob.client
        .concede(context(&game_id, &key, None))
        .await
        .expect("Concede");

    let slept = follow_to_end(&mut sleeper, &game_id, false, stream).await;
    let steady = steady.await.expect("the steady stream");
    assert!(
        steady.events.len() > DRAFTS,
        "{} events",
        steady.events.len()
    );
    assert!(
        !slept.reconnects.is_empty(),
        "a client that read nothing while {} events came was never told to reconnect",
        steady.events.len()
    );
    let resumed_from = slept.reconnects[0].resume_from_seq;
    let before_hint = |events: &[pb::GameEvent]| -> Vec<pb::GameEvent> {
        events
            .iter()
            .filter(|e| e.seq < resumed_from)
            .cloned()
            .collect()
    };
    assert_eq!(
        before_hint(&slept.events),
        before_hint(&steady.events),
        "events before the hint"
    );
    let resumed: Vec<pb::GameEvent> = slept
        .events
        .iter()
        .filter(|e| e.seq >= resumed_from)
        .cloned()
        .collect();
    let mut late = PlayerClient::new(channel.clone(), "lag-ann");
    let stream = late
        .subscribe(&game_id, resumed_from, false)
        .await
        .expect("Subscribe after the end");
    let look = follow_to_end(&mut late, &game_id, false, stream).await;
    assert_eq!(resumed, look.events, "events from the hint on");
    // What the client that kept up saw is all there, with more revealed.
    let steady_at: BTreeMap<u64, &pb::GameEvent> =
        steady.events.iter().map(|e| (e.seq, e)).collect();
    for event in &resumed {
        if let Some(live) = steady_at.get(&event.seq) {
            assert_eq!(
                public(event),
                public(live),
                "seq {} after resuming",
                event.seq
            );
        }
    }
    assert!(
        steady
            .events
            .iter()
            .all(|e| slept.events.iter().any(|s| s.seq == e.seq)),
        "the resumed client missed an event"
    );
}

/// The rules say that when a game ends everything is revealed: after a whole game, both players
/// and a spectator learn both original deployments and the kinds of both pieces of every fight,
/// captured pieces included, from the live `GameEnded`, from a `Subscribe` from seq 1 and from
/// `GetGame`; and the mover's answer to the game-ending move is its stream's copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_reveals_the_whole_game_to_players_and_spectators() {
    let mut env = env("gateway-reveal").await;
    let created = create(&mut env.session, "rv-ann", "rv-bob", "").await;
    let game_id = created.game_id.clone();
    let watchers = [
        follow(&env.channel, "rv-ann", &game_id, false).await,
        follow(&env.channel, "rv-bob", &game_id, false).await,
        follow(&env.channel, "rv-cat", &game_id, true).await,
    ];
    let mut seats = [
        Seat::new(&env.channel, "rv-ann", pb::Side::South, 0x7e7e_0001),
        Seat::new(&env.channel, "rv-bob", pb::Side::North, 0x7e7e_0002),
    ];
    seats[0].deploy(&game_id, false).await;
    seats[1].deploy(&game_id, true).await;
    let mut to_move = side_of(created.first_mover);
    let mut plies = 0;
    let (mover, last_answer) = loop {
        assert!(
            plies < MAX_PLIES,
            "{game_id}: no end after {MAX_PLIES} plies"
        );
        let seat = seats
            .iter_mut()
            .find(|s| s.side == to_move)
            .expect("a seat per side");
        let answer = seat.attacking_turn(&game_id).await;
        plies += 1;
        if answer.events.last().is_some_and(gateway::is_end) {
            break (to_move, answer);
        }
        to_move = other(to_move);
    };

    let mut logs = Vec::new();
    for watcher in watchers {
        let followed = watcher.await.expect("a subscriber");
        assert!(followed.reconnects.is_empty(), "{:?}", followed.reconnects);
        logs.push(followed.events);
    }
    let truth = reveal::Truth::from_streams(&logs[0], &logs[1]);
    // (a) The live end tells every party every piece, the captured ones included.
    for (who, log) in ["south", "north", "spectator"].into_iter().zip(&logs) {
        let captured = reveal::check_live_end(&format!("live {who}"), &truth, log);
        assert!(captured > 0, "{who}: the game captured nothing");
    }
    // (d) The mover's answer and its stream agree on the end.
    let mover_log = &logs[usize::from(mover == pb::Side::North)];
    reveal::check_answer_in_stream("the mover", &last_answer.events, mover_log);

    // (b) and (c): a look after the end, by each party (a player also as a spectator).
    for (player, spectate) in [
        ("rv-ann", false),
        ("rv-bob", false),
        ("rv-cat", true),
        ("rv-ann", true),
    ] {
        let who = format!("{player} (spectating: {spectate}) after the end");
        let mut client = PlayerClient::new(env.channel.clone(), player);
        let stream = client
            .subscribe(&game_id, 1, spectate)
            .await
            .unwrap_or_else(|s| panic!("{who}: Subscribe failed: {s:?}"));
        let replay = follow_to_end(&mut client, &game_id, spectate, stream).await;
        reveal::check_replay_after_end(&who, &truth, &replay.events);
        let view = client
            .get_game(&game_id, spectate)
            .await
            .unwrap_or_else(|s| panic!("{who}: GetGame failed: {s:?}"));
        reveal::check_view_after_end(&who, &truth, &view);
    }
}

/// `message` with one `authorization` metadata entry per value, in order.
fn with_each_authorization<T>(values: [&String; 2], message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    for value in values {
        request
            .metadata_mut()
            .append("authorization", value.parse().expect("a metadata value"));
    }
    request
}

/// Two `authorization` entries on one call are refused whatever they hold and in either order
/// (the gateway read only the first, so a good token followed by a bad one got through).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_authorization_entries_are_refused_in_either_order() {
    let mut env = env("two-authorizations").await;
    let game = create(&mut env.session, "alice", "bob", "").await;
    let good = format!("Bearer {}", gateway::token("alice"));
    let bad = format!(
        "Bearer {}",
        signed(
            b"another-secret-of-at-least-32-bytes!!",
            &serde_json::json!({"sub": "alice", "exp": now() + 600})
        )
    );
    let mut c = pb::player_service_client::PlayerServiceClient::new(env.channel.clone());
    for pair in [[&good, &bad], [&bad, &good], [&good, &good]] {
        let refused = c
            .get_game(with_each_authorization(
                pair,
                pb::PlayerServiceGetGameRequest {
                    game_id: game.game_id.clone(),
                    spectate: false,
                },
            ))
            .await
            .expect_err("GetGame with two authorization entries");
        assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");
        assert!(refused.message().contains("more than one"), "{refused:?}");
        let refused = c
            .subscribe(with_each_authorization(
                pair,
                pb::SubscribeRequest {
                    game_id: game.game_id.clone(),
                    from_seq: 1,
                    spectate: false,
                    with_status: false,
                },
            ))
            .await
            .expect_err("Subscribe with two authorization entries");
        assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");
    }
    // One good entry is still enough.
    let view = c
        .get_game(gateway::with_authorization(
            Some(&good),
            pb::PlayerServiceGetGameRequest {
                game_id: game.game_id.clone(),
                spectate: false,
            },
        ))
        .await
        .expect("GetGame with one good token");
    assert!(view.into_inner().game.is_some());
}
