//! Pieces: what a piece is (its kind) and which piece it is (its public id).

use serde::{Deserialize, Serialize};

/// What a piece is. The meaning of the number belongs to the game family (see
/// [`crate::Rules::code`]); for Junqi 1..=9 are the ranks, then bomb, mine and flag.
/// This is secret information: it reaches a player only through the view functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PieceKind(pub u8);

/// Junqi piece kinds.
pub mod junqi {
    use super::PieceKind;
    /// Rank 1, the engineer: turns on rails and clears mines.
    pub const ENGINEER: PieceKind = PieceKind(1);
    /// Rank 9, the commander; its death reveals the flag under the `flag-reveal` option.
    pub const COMMANDER: PieceKind = PieceKind(9);
    /// The bomb: removes itself and whatever it meets.
    pub const BOMB: PieceKind = PieceKind(10);
    /// The mine: immobile; only an engineer clears it.
    pub const MINE: PieceKind = PieceKind(11);
    /// The flag: immobile; capturing it wins.
    pub const FLAG: PieceKind = PieceKind(12);
    /// Every kind with its code and its count per side, strongest rank first.
    pub const KINDS: [(PieceKind, &str, u8); 12] = [
        (PieceKind(9), "9", 1),
        (PieceKind(8), "8", 1),
        (PieceKind(7), "7", 2),
        (PieceKind(6), "6", 2),
        (PieceKind(5), "5", 2),
        (PieceKind(4), "4", 2),
        (PieceKind(3), "3", 3),
        (PieceKind(2), "2", 3),
        (ENGINEER, "1", 3),
        (BOMB, "B", 2),
        (MINE, "M", 3),
        (FLAG, "F", 1),
    ];
}

/// Which piece it is: a per-game public label. Ids are drawn at random when play starts, over both
/// sides together, so an id says nothing about a piece's kind or where it was deployed; players use
/// them to follow an opponent piece from move to move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PieceId(pub u8);
