//! Random playouts: play uniformly random legal moves to the end of the game.
//!
//! The computer player estimates positions with many of these, so the loop reuses one move list
//! and a `Copy` position and allocates nothing.

use crate::deployment::Deployment;
use crate::outcome::Outcome;
use crate::piece::PieceId;
use crate::position::{MoveList, Piece, Position};
use crate::rng::GameRng;
use crate::rules::Rules;
use crate::side::Side;

/// What a playout ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlayoutResult {
    /// The outcome; `None` if `max_plies` ran out first.
    pub outcome: Option<Outcome>,
    /// Plies played.
    pub plies: u32,
}

/// Plays random legal moves from `position` (changing it) until the game ends or `max_plies`
/// plies have been played. `moves` is scratch space, reused between calls.
pub fn random_playout(
    position: &mut Position,
    rng: &mut GameRng,
    moves: &mut MoveList,
    max_plies: u32,
) -> PlayoutResult {
    if let Some(outcome) = position.outcome_at_turn_start() {
        return PlayoutResult {
            outcome: Some(outcome),
            plies: 0,
        };
    }
    for ply in 1..=max_plies {
        position.legal_moves_into(moves);
        let count = moves.len() as u32;
        // A side without moves ends the game at the previous ply, so `count` is never 0 here;
        // the guard only keeps a malformed position from dividing by zero.
        let Some(mv) = (count > 0)
            .then(|| moves.nth(rng.below(count) as usize))
            .flatten()
        else {
            return PlayoutResult {
                outcome: position.outcome_at_turn_start(),
                plies: ply - 1,
            };
        };
        if let Some(outcome) = position.play_legal(mv).outcome {
            return PlayoutResult {
                outcome: Some(outcome),
                plies: ply,
            };
        }
    }
    PlayoutResult {
        outcome: None,
        plies: max_plies,
    }
}

/// A start position from two fresh random deployments, `first_mover` to play: the usual start of
/// a simulation. Ids are given in board order, which is fine inside a simulation and must never
/// reach a player (real games draw ids with [`crate::Game`]).
pub fn random_start(rules: Rules, first_mover: Side, rng: &mut GameRng) -> Position {
    let mut position = Position::empty(rules, first_mover);
    let mut id = 0u8;
    for side in Side::BOTH {
        for (node, kind) in Deployment::random(&rules, side, rng).placements {
            position.put(
                node,
                Piece {
                    side,
                    kind,
                    id: PieceId(id),
                },
            );
            id = id.wrapping_add(1);
        }
    }
    position
}
