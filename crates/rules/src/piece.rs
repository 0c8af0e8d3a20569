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

/// Gunjin Shogi piece kinds: 1..=9 are the officers, strongest first, then the special pieces.
pub mod gunjin {
    use super::PieceKind;
    /// 大将, the general: beaten only by the spy.
    pub const GENERAL: PieceKind = PieceKind(1);
    /// 中将.
    pub const LIEUTENANT_GENERAL: PieceKind = PieceKind(2);
    /// 少将: the weakest general officer (the three generals beat the plane and the tank).
    pub const MAJOR_GENERAL: PieceKind = PieceKind(3);
    /// 大佐.
    pub const COLONEL: PieceKind = PieceKind(4);
    /// 中佐.
    pub const LIEUTENANT_COLONEL: PieceKind = PieceKind(5);
    /// 少佐: the weakest field officer; GEN..MAJ win by entering the enemy HQ.
    pub const MAJOR: PieceKind = PieceKind(6);
    /// 大尉.
    pub const CAPTAIN: PieceKind = PieceKind(7);
    /// 中尉.
    pub const FIRST_LIEUTENANT: PieceKind = PieceKind(8);
    /// 少尉.
    pub const SECOND_LIEUTENANT: PieceKind = PieceKind(9);
    /// 飛行機, the plane: flies along its file over pieces and the wall.
    pub const PLANE: PieceKind = PieceKind(10);
    /// タンク, the tank: up to two squares straight.
    pub const TANK: PieceKind = PieceKind(11);
    /// 騎兵, the cavalry: moves as the tank.
    pub const CAVALRY: PieceKind = PieceKind(12);
    /// 工兵, the engineer: slides like a rook.
    pub const ENGINEER: PieceKind = PieceKind(13);
    /// スパイ, the spy: beats the general, loses to everything else.
    pub const SPY: PieceKind = PieceKind(14);
    /// 地雷, the mine: never moves.
    pub const MINE: PieceKind = PieceKind(15);
    /// 軍旗, the flag: never moves; fights as the own piece behind it.
    pub const FLAG: PieceKind = PieceKind(16);
    /// The 31-piece edition: every kind with its code and count per side.
    pub const KINDS_31: [(PieceKind, &str, u8); 16] = [
        (GENERAL, "GEN", 1),
        (LIEUTENANT_GENERAL, "LTG", 1),
        (MAJOR_GENERAL, "MJG", 2),
        (COLONEL, "COL", 2),
        (LIEUTENANT_COLONEL, "LTC", 2),
        (MAJOR, "MAJ", 2),
        (CAPTAIN, "CPT", 2),
        (FIRST_LIEUTENANT, "1LT", 2),
        (SECOND_LIEUTENANT, "2LT", 2),
        (PLANE, "PLA", 2),
        (TANK, "TNK", 3),
        (CAVALRY, "CAV", 2),
        (ENGINEER, "ENG", 3),
        (SPY, "SPY", 1),
        (MINE, "MIN", 3),
        (FLAG, "FLG", 1),
    ];
    /// The 23-piece edition (6 x 8 board).
    pub const KINDS_23: [(PieceKind, &str, u8); 16] = [
        (GENERAL, "GEN", 1),
        (LIEUTENANT_GENERAL, "LTG", 1),
        (MAJOR_GENERAL, "MJG", 1),
        (COLONEL, "COL", 1),
        (LIEUTENANT_COLONEL, "LTC", 1),
        (MAJOR, "MAJ", 1),
        (CAPTAIN, "CPT", 2),
        (FIRST_LIEUTENANT, "1LT", 2),
        (SECOND_LIEUTENANT, "2LT", 2),
        (PLANE, "PLA", 2),
        (TANK, "TNK", 2),
        (CAVALRY, "CAV", 1),
        (ENGINEER, "ENG", 2),
        (SPY, "SPY", 1),
        (MINE, "MIN", 2),
        (FLAG, "FLG", 1),
    ];
}

/// Which piece it is: a per-game public label. Ids are drawn at random when play starts, over both
/// sides together, so an id says nothing about a piece's kind or where it was deployed; players use
/// them to follow an opponent piece from move to move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PieceId(pub u8);
