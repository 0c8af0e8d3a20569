//! What pieces and squares are worth to the computer, per family: Junqi and Gunjin Shogi win
//! differently (the flag captured; an officer entering the enemy HQ), so every level asks here
//! instead of naming kinds.

use hidden_front_rules::piece::{gunjin, junqi};
use hidden_front_rules::{Family, PieceKind, Position, Rules, Side};

/// Worth of winning the game (capturing the flag, entering the HQ), against material of about 1
/// to 12.
pub(crate) const WIN: f64 = 1000.0;

/// Material worth of a kind for the player's trade-offs under `rules`.
pub(crate) fn worth(rules: &Rules, kind: PieceKind) -> f64 {
    match rules.family {
        Family::Junqi => match kind {
            junqi::COMMANDER => 12.0,
            PieceKind(8) => 9.0,
            PieceKind(7) => 7.0,
            PieceKind(6) => 5.5,
            PieceKind(5) => 4.5,
            PieceKind(4) => 3.5,
            PieceKind(3) => 2.5,
            PieceKind(2) => 2.0,
            junqi::ENGINEER => 3.0,
            junqi::BOMB => 6.0,
            junqi::MINE => 2.5,
            junqi::FLAG => 0.0,
            _ => 3.0,
        },
        // The six pieces that win by entering the HQ are worth more than their fights alone;
        // the spy is the general's only answer; the plane beats nearly all, mines included.
        Family::GunjinShogi => match kind {
            gunjin::GENERAL => 11.0,
            gunjin::LIEUTENANT_GENERAL => 9.0,
            gunjin::MAJOR_GENERAL => 7.5,
            gunjin::COLONEL => 6.0,
            gunjin::LIEUTENANT_COLONEL => 5.0,
            gunjin::MAJOR => 4.5,
            gunjin::CAPTAIN => 3.0,
            gunjin::FIRST_LIEUTENANT => 2.5,
            gunjin::SECOND_LIEUTENANT => 2.0,
            gunjin::PLANE => 7.0,
            gunjin::TANK => 4.5,
            gunjin::CAVALRY => 2.0,
            gunjin::ENGINEER => 3.5,
            gunjin::SPY => 3.5,
            gunjin::MINE => 2.0,
            gunjin::FLAG => 1.0,
            _ => 3.0,
        },
    }
}

/// What freezing a piece of this kind for good costs (a piece that ends its move in an HQ
/// under rules that freeze it there, without winning): most of its worth, and a little more,
/// so that even a weak piece does not wander in.
pub(crate) fn freeze_cost(rules: &Rules, kind: PieceKind) -> f64 {
    worth(rules, kind) * 0.8 + 1.0
}

/// Whether a piece of this kind wins by reaching the goal it attacks: in Junqi any mobile piece
/// takes the flag; in Gunjin Shogi only GEN, LTG, MJG, COL, LTC and MAJ win by entering the HQ.
pub(crate) fn can_win_by_reaching(rules: &Rules, kind: PieceKind) -> bool {
    match rules.family {
        Family::Junqi => rules.kind_moves(kind),
        Family::GunjinShogi => (gunjin::GENERAL.0..=gunjin::MAJOR.0).contains(&kind.0),
    }
}

/// The squares `side` must keep the enemy from reaching in `pos`: its flag in Junqi, its HQ in
/// Gunjin Shogi.
pub(crate) fn own_goal(pos: &Position, side: Side) -> u64 {
    match pos.rules().family {
        Family::Junqi => pos.nodes_of(side, junqi::FLAG),
        Family::GunjinShogi => pos.topology().hq[side.index()],
    }
}

/// Kinds the move generator treats alike for a piece whose kind is not known: a plain one-step
/// mover of the family, and its bomb-like and engineer-like kinds.
pub(crate) struct Kinds {
    /// The flag.
    pub flag: PieceKind,
    /// The mine.
    pub mine: PieceKind,
    /// A piece that moves one step (or slides along rails in Junqi) like most ranks.
    pub plain: PieceKind,
    /// The piece that clears mines and moves farthest (Junqi's engineer; Gunjin's engineer).
    pub engineer: PieceKind,
    /// Junqi's bomb; none in Gunjin Shogi.
    pub bomb: Option<PieceKind>,
}

/// The family's kinds of [`Kinds`].
pub(crate) fn kinds(rules: &Rules) -> Kinds {
    match rules.family {
        Family::Junqi => Kinds {
            flag: junqi::FLAG,
            mine: junqi::MINE,
            plain: PieceKind(5),
            engineer: junqi::ENGINEER,
            bomb: Some(junqi::BOMB),
        },
        Family::GunjinShogi => Kinds {
            flag: gunjin::FLAG,
            mine: gunjin::MINE,
            plain: gunjin::CAPTAIN,
            engineer: gunjin::ENGINEER,
            bomb: None,
        },
    }
}
