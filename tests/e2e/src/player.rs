//! A simple game-playing client.
//!
//! A [`Player`] knows only what its own seat may know: it reads the game with `GetGame` as its
//! own viewer, builds a position from that view (its own pieces with their kinds, every opponent
//! piece as a placeholder kind) and asks the rules engine for its own legal moves. That is
//! exact: in Junqi a move's legality depends on occupancy, camps, headquarters and the mover's
//! own kind, never on the kind of an enemy piece. It plays a uniformly random legal move from a
//! seeded generator.

use crate::client::{self, Client, context, get_game, other, phase_of, side_of, viewer_of};
use crate::pb;
use hidden_front_rules::{Deployment, GameRng, Piece, PieceId, Position, Rules, Side};
use std::collections::BTreeMap;

/// A deployment as `square -> piece code`.
pub type Placements = BTreeMap<String, String>;

/// One side's client.
#[derive(Debug)]
pub struct Player {
    side: pb::Side,
    rng: GameRng,
    nonce: String,
    keys: u64,
}

/// A move a [`Player`] played and the service acknowledged.
#[derive(Debug, Clone)]
pub struct Turn {
    /// Who moved.
    pub side: pb::Side,
    /// The move.
    pub mv: pb::Move,
    /// The idempotency key it was sent with.
    pub key: String,
    /// The version it was judged against (sent as the expected version).
    pub expected_version: u64,
    /// The service's answer.
    pub result: pb::CommandResult,
}

impl Turn {
    /// Whether this move ended the game.
    pub fn ended(&self) -> bool {
        ends_game(&self.result)
    }

    /// The game's version after this move.
    pub fn version(&self) -> u64 {
        self.result.version
    }
}

/// Whether a command's answer ends with `GameEnded`.
pub fn ends_game(result: &pb::CommandResult) -> bool {
    matches!(
        result.events.last().and_then(|e| e.event.as_ref()),
        Some(pb::game_event::Event::Ended(_))
    )
}

impl Player {
    /// A player for `side` whose choices are fixed by `seed`.
    pub fn new(side: pb::Side, seed: u64) -> Player {
        assert_ne!(side, pb::Side::Unspecified, "a player needs a side");
        Player {
            side,
            rng: GameRng::from_seed(seed),
            // Keys must be unique per game and side; two players of one side (one per test
            // phase, say) must not collide either.
            nonce: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
            keys: 0,
        }
    }

    /// The side it plays.
    pub fn side(&self) -> pb::Side {
        self.side
    }

    /// Its viewer.
    pub fn viewer(&self) -> pb::Viewer {
        viewer_of(self.side)
    }

    /// A fresh idempotency key.
    pub fn next_key(&mut self) -> String {
        self.keys += 1;
        format!(
            "{}-{}-{}",
            self.side.as_str_name().to_lowercase(),
            self.nonce,
            self.keys
        )
    }

    /// A uniformly random number below `bound` (> 0) from the player's generator.
    pub fn below(&mut self, bound: usize) -> usize {
        self.rng.below(u32::try_from(bound).expect("a small bound")) as usize
    }

    /// A random legal deployment for its side, as placements.
    pub fn random_placements(&mut self, rules: &Rules) -> Vec<pb::Placement> {
        let deployment = Deployment::random(rules, engine_side(self.side), &mut self.rng);
        let topo = rules.topology();
        deployment
            .placements
            .iter()
            .map(|&(node, kind)| pb::Placement {
                square: topo.name(node).to_string(),
                piece: rules.code(kind).to_string(),
            })
            .collect()
    }

    /// A random legal move from its own view; `None` when it has none.
    pub fn choose_move(&mut self, view: &pb::GameView) -> Option<pb::Move> {
        let moves = own_legal_moves(view);
        if moves.is_empty() {
            return None;
        }
        let i = self.below(moves.len());
        Some(moves[i].clone())
    }

    /// The whole deployment phase of its side, checking every answer: `ReshuffleDeployment`,
    /// then `SetDeployment` with a random deployment of its own, then `SwapPieces` of two ranked
    /// pieces of different kinds, then `ConfirmDeployment`. Returns the confirmed deployment.
    pub async fn deploy(&mut self, client: &mut Client, game_id: &str) -> Placements {
        let view = get_game(client, game_id, self.viewer()).await;
        assert_eq!(
            phase_of(&view),
            pb::Phase::Deployment,
            "{game_id}: {view:?}"
        );
        let rules = rules_of(&view);
        let side = self.side;

        let key = self.next_key();
        let result = client
            .reshuffle_deployment(pb::ReshuffleDeploymentRequest {
                context: context(game_id, side, &key, Some(view.version)),
            })
            .await
            .unwrap_or_else(|s| panic!("ReshuffleDeployment failed: {s:?}"))
            .into_inner()
            .result
            .expect("a result");
        let reshuffled = single_draft(&result, view.version, side, &rules);
        let now = get_game(client, game_id, self.viewer()).await;
        assert_eq!(now.version, result.version);
        assert_eq!(
            own_deployment(&now),
            reshuffled,
            "GetGame shows another draft"
        );

        let mine = self.random_placements(&rules);
        let key = self.next_key();
        let result = client
            .set_deployment(pb::SetDeploymentRequest {
                context: context(game_id, side, &key, Some(now.version)),
                deployment: Some(pb::Deployment {
                    side: side as i32,
                    placements: mine.clone(),
                }),
            })
            .await
            .unwrap_or_else(|s| panic!("SetDeployment failed: {s:?}"))
            .into_inner()
            .result
            .expect("a result");
        let mut expected = to_map(&mine);
        assert_eq!(
            single_draft(&result, now.version, side, &rules),
            expected,
            "SetDeployment drafted something else"
        );

        let (a, b) = self.two_ranked_squares(&expected);
        let key = self.next_key();
        let swapped = client
            .swap_pieces(pb::SwapPiecesRequest {
                context: context(game_id, side, &key, Some(result.version)),
                square_a: a.clone(),
                square_b: b.clone(),
            })
            .await
            .unwrap_or_else(|s| panic!("SwapPieces({a}, {b}) failed: {s:?}"))
            .into_inner()
            .result
            .expect("a result");
        let (piece_a, piece_b) = (expected[&a].clone(), expected[&b].clone());
        expected.insert(a.clone(), piece_b);
        expected.insert(b.clone(), piece_a);
        assert_eq!(
            single_draft(&swapped, result.version, side, &rules),
            expected,
            "SwapPieces({a}, {b}) drafted something else"
        );
        let now = get_game(client, game_id, self.viewer()).await;
        assert_eq!(
            own_deployment(&now),
            expected,
            "GetGame shows another draft"
        );

        let key = self.next_key();
        let confirmed = client
            .confirm_deployment(pb::ConfirmDeploymentRequest {
                context: context(game_id, side, &key, Some(now.version)),
            })
            .await
            .unwrap_or_else(|s| panic!("ConfirmDeployment failed: {s:?}"))
            .into_inner()
            .result
            .expect("a result");
        assert!(!confirmed.replayed);
        assert_eq!(
            confirmed.version,
            now.version + confirmed.events.len() as u64
        );
        match confirmed.events.first().and_then(|e| e.event.as_ref()) {
            Some(pb::game_event::Event::DeploymentConfirmed(c)) => {
                assert_eq!(side_of(c.side), side);
                assert!(!c.by_deadline);
                let deployment = c
                    .deployment
                    .as_ref()
                    .expect("the owner sees its deployment");
                assert_eq!(to_map(&deployment.placements), expected);
            }
            other => panic!("ConfirmDeployment answered {other:?}"),
        }
        expected
    }

    /// Two squares of `placements` holding ranked pieces (1..=9; in Gunjin Shogi any piece but
    /// the flag and mines) of different kinds: swapping them is always legal.
    fn two_ranked_squares(&mut self, placements: &Placements) -> (String, String) {
        let ranked: Vec<(&String, &String)> = placements
            .iter()
            .filter(|(_, code)| {
                (code.len() == 1 && code.as_bytes()[0].is_ascii_digit())
                    || (code.len() == 3 && code.as_str() != "FLG" && code.as_str() != "MIN")
            })
            .collect();
        assert!(ranked.len() > 2, "too few ranked pieces in {placements:?}");
        loop {
            let a = ranked[self.below(ranked.len())];
            let b = ranked[self.below(ranked.len())];
            if a.1 != b.1 {
                return (a.0.clone(), b.0.clone());
            }
        }
    }

    /// Reads its own view, checks that it is its turn, plays a random legal move (fresh key,
    /// expected version = the view's) and checks the answer (see [`check_move_ack`]).
    pub async fn play_turn(&mut self, client: &mut Client, game_id: &str) -> Turn {
        let view = get_game(client, game_id, self.viewer()).await;
        assert_eq!(phase_of(&view), pb::Phase::Play, "{game_id}: not in play");
        assert_eq!(
            side_of(view.to_move),
            self.side,
            "{game_id} at version {}: expected {:?} to move",
            view.version,
            self.side
        );
        assert_hides_opponent(&view);
        let mv = self.choose_move(&view).unwrap_or_else(|| {
            panic!(
                "{game_id}: the service says it is {:?}'s turn, but it has no legal move: {view:?}",
                self.side
            )
        });
        let key = self.next_key();
        let result = client::submit_move(client, game_id, self.side, &key, Some(view.version), &mv)
            .await
            .unwrap_or_else(|s| {
                panic!(
                    "{game_id}: SubmitMove {:?} {}-{} at version {} failed: {s:?}",
                    self.side, mv.from, mv.to, view.version
                )
            });
        assert!(!result.replayed, "a fresh key was answered as replayed");
        check_move_ack(self.side, &mv, view.version, &result);
        Turn {
            side: self.side,
            mv,
            key,
            expected_version: view.version,
            result,
        }
    }
}

/// Lets the players of `players` alternate moves on one server, `next` first, until the game
/// ends or `limit` plies have been played. Returns the acknowledged moves.
pub async fn play(
    client: &mut Client,
    game_id: &str,
    players: &mut [Player; 2],
    next: pb::Side,
    limit: usize,
) -> Vec<Turn> {
    let mut to_move = next;
    let mut turns = Vec::new();
    while turns.len() < limit {
        let player = players
            .iter_mut()
            .find(|p| p.side() == to_move)
            .expect("a player per side");
        let turn = player.play_turn(client, game_id).await;
        let ended = turn.ended();
        turns.push(turn);
        if ended {
            break;
        }
        to_move = other(to_move);
    }
    turns
}

/// [`play`] until the game ends; fails if it has not ended after `max_plies` plies.
pub async fn play_to_end(
    client: &mut Client,
    game_id: &str,
    players: &mut [Player; 2],
    next: pb::Side,
    max_plies: usize,
) -> Vec<Turn> {
    let turns = play(client, game_id, players, next, max_plies).await;
    assert!(
        turns.last().is_some_and(Turn::ended),
        "{game_id}: no end after {max_plies} plies"
    );
    turns
}

/// Checks a fresh (not replayed) answer to a move by `side` judged at version `before`: its
/// events are seqs `before+1..=version`, the first is this very move by this side with the
/// mover's own code, the rest only a lapsed draw offer or the end, and a fight does not tell the
/// mover the defender's kind (not even the one that ends the game: only the end event reveals).
#[track_caller]
pub fn check_move_ack(side: pb::Side, mv: &pb::Move, before: u64, result: &pb::CommandResult) {
    use pb::game_event::Event;
    assert!(!result.events.is_empty(), "a move answered without events");
    assert_eq!(
        result.version,
        before + result.events.len() as u64,
        "answer version vs events: {result:?}"
    );
    let seqs: Vec<u64> = result.events.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = (before + 1..=result.version).collect();
    assert_eq!(seqs, expected, "answer seqs");
    match result.events[0].event.as_ref() {
        Some(Event::Moved(moved)) => {
            assert_eq!(side_of(moved.side), side, "Moved.side");
            assert_eq!(moved.r#move.as_ref(), Some(mv), "Moved.move");
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
    for event in &result.events[1..] {
        assert!(
            matches!(
                event.event,
                Some(Event::DrawLapsed(_)) | Some(Event::Ended(_))
            ),
            "unexpected event after a move: {event:?}"
        );
    }
}

/// Asserts that a view during play shows the kinds of the viewer's own pieces and no kind of
/// any other piece (default rules: no flag reveal).
#[track_caller]
pub fn assert_hides_opponent(view: &pb::GameView) {
    let viewer = pb::Viewer::try_from(view.viewer).unwrap_or(pb::Viewer::Unspecified);
    let own = match viewer {
        pb::Viewer::South => Some(pb::Side::South),
        pb::Viewer::North => Some(pb::Side::North),
        _ => None,
    };
    for piece in &view.pieces {
        if Some(side_of(piece.side)) == own {
            assert!(!piece.piece.is_empty(), "own piece without kind: {piece:?}");
        } else {
            assert!(
                piece.piece.is_empty(),
                "{viewer:?} sees the kind of {piece:?} during play"
            );
        }
    }
}

/// The rule set a view names.
pub fn rules_of(view: &pb::GameView) -> Rules {
    Rules::parse(&view.rules).unwrap_or_else(|e| panic!("unknown rules {:?}: {e}", view.rules))
}

/// The engine's side of a proto side.
pub fn engine_side(side: pb::Side) -> Side {
    match side {
        pb::Side::South => Side::South,
        pb::Side::North => Side::North,
        pb::Side::Unspecified => panic!("SIDE_UNSPECIFIED has no engine side"),
    }
}

/// Placements as a map; panics on a square given twice.
pub fn to_map(placements: &[pb::Placement]) -> Placements {
    let map: Placements = placements
        .iter()
        .map(|p| (p.square.clone(), p.piece.clone()))
        .collect();
    assert_eq!(
        map.len(),
        placements.len(),
        "a square twice in {placements:?}"
    );
    map
}

/// The view's own deployment as a map (empty if none).
pub fn own_deployment(view: &pb::GameView) -> Placements {
    view.own_deployment
        .as_ref()
        .map(|d| to_map(&d.placements))
        .unwrap_or_default()
}

/// The one `DeploymentDrafted` event of a deployment command's answer judged at `before`, as a
/// map, after checking seq, version and side and that it is a whole legal deployment.
#[track_caller]
fn single_draft(
    result: &pb::CommandResult,
    before: u64,
    side: pb::Side,
    rules: &Rules,
) -> Placements {
    assert!(!result.replayed, "a fresh key was answered as replayed");
    assert_eq!(result.version, before + 1, "{result:?}");
    assert_eq!(result.events.len(), 1, "{result:?}");
    assert_eq!(result.events[0].seq, before + 1);
    match result.events[0].event.as_ref() {
        Some(pb::game_event::Event::DeploymentDrafted(d)) => {
            let deployment = d.deployment.as_ref().expect("a drafted deployment");
            assert_eq!(side_of(deployment.side), side);
            assert_eq!(deployment.placements.len(), rules.pieces_per_side());
            to_map(&deployment.placements)
        }
        other => panic!("expected DeploymentDrafted, got {other:?}"),
    }
}

/// Every legal move of the viewer's own side, computed from the view alone: own pieces with
/// their kinds, opponent pieces with a placeholder kind (legality never depends on an enemy
/// kind). Computed whoever is to move, so it also yields moves that are legal but out of turn.
pub fn own_legal_moves(view: &pb::GameView) -> Vec<pb::Move> {
    let rules = rules_of(view);
    let topo = rules.topology();
    let me = match pb::Viewer::try_from(view.viewer) {
        Ok(pb::Viewer::South) => Side::South,
        Ok(pb::Viewer::North) => Side::North,
        other => panic!("a player's view has viewer {other:?}"),
    };
    // Any mobile kind that is not the engineer (engineers move differently; the placeholder is
    // never the mover, so only occupancy matters).
    // (Junqi's rank 2; Gunjin Shogi's second lieutenant, a one-step piece.)
    let placeholder = rules
        .parse_kind("2")
        .or_else(|| rules.parse_kind("2LT"))
        .expect("rank 2 or 2LT exists");
    let mut position = Position::empty(rules, me);
    for p in &view.pieces {
        let node = topo
            .node(&p.square)
            .unwrap_or_else(|| panic!("view names unknown square {:?}", p.square));
        let side = engine_side(side_of(p.side));
        let kind = if side == me {
            rules
                .parse_kind(&p.piece)
                .unwrap_or_else(|| panic!("own piece on {} has code {:?}", p.square, p.piece))
        } else {
            placeholder
        };
        let id = PieceId(u8::try_from(p.id).unwrap_or_else(|_| panic!("piece id {}", p.id)));
        assert!(
            position.put(node, Piece { side, kind, id }),
            "view has two pieces on {}",
            p.square
        );
    }
    position
        .legal_moves()
        .iter()
        .map(|m| pb::Move {
            from: topo.name(m.from).to_string(),
            to: topo.name(m.to).to_string(),
        })
        .collect()
}
