//! How often each kind moves and attacks, and the likelihood that gives a piece's observed
//! activity: a piece that has stood still for a hundred turns is more likely a bomb, a mine or
//! the flag than one that moved every few turns; a piece that attacks often is more likely
//! strong. The rates are fitted on refereed games (`crates/ladder`, `examples/move_model.rs`)
//! and used, when a [`crate::Beliefs`] is given a [`MoveModel`], to weight each piece's kind
//! chances ([`crate::Beliefs::marginals`]) beside the hard constraints.

use crate::belief::KIND_SLOTS;
use hidden_front_rules::{Family, PieceKind, Rules};

/// What one opponent piece has been seen to do while on the board.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Activity {
    /// The opponent's turns seen while the piece was on the board.
    pub turns: u16,
    /// The turns in which it was the piece moved.
    pub moves: u16,
    /// The moves that were attacks.
    pub attacks: u16,
}

/// Per kind, the chance that an own turn moves a given piece of that kind, and the share of its
/// moves that are attacks; with the strength the likelihood is trusted with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoveModel {
    /// Chance that one of its side's turns moves a given piece of this kind (by kind number).
    pub move_rate: [f64; KIND_SLOTS],
    /// Share of this kind's moves that attack a piece.
    pub attack_share: [f64; KIND_SLOTS],
    /// The exponent on the likelihood: a side's turns are not independent draws (a piece on a
    /// run moves several turns in a row), so the full product would be overconfident.
    pub strength: f64,
}

/// Rates are kept inside `[FLOOR, 1 - FLOOR]`, so no activity rules a kind out: the hard
/// constraints do that.
const FLOOR: f64 = 1e-4;

impl MoveModel {
    /// The model with rates fitted from counts over refereed games, per kind: the piece-turns
    /// on the board, the moves and the attacks.
    pub fn from_counts(
        turns: &[u64; KIND_SLOTS],
        moves: &[u64; KIND_SLOTS],
        attacks: &[u64; KIND_SLOTS],
        strength: f64,
    ) -> MoveModel {
        let mut model = MoveModel {
            move_rate: [0.0; KIND_SLOTS],
            attack_share: [0.0; KIND_SLOTS],
            strength,
        };
        for k in 0..KIND_SLOTS {
            if turns[k] > 0 {
                model.move_rate[k] = moves[k] as f64 / turns[k] as f64;
            }
            if moves[k] > 0 {
                model.attack_share[k] = attacks[k] as f64 / moves[k] as f64;
            }
        }
        model
    }

    /// The natural log of the chance of `activity` for a piece of `kind`, times the strength
    /// (up to a constant that is the same for every kind).
    pub fn log_likelihood(&self, kind: PieceKind, activity: Activity) -> f64 {
        let k = kind.0 as usize;
        let (Some(&rate), Some(&share)) = (self.move_rate.get(k), self.attack_share.get(k)) else {
            return 0.0;
        };
        let rate = rate.clamp(FLOOR, 1.0 - FLOOR);
        let share = share.clamp(FLOOR, 1.0 - FLOOR);
        let (turns, moves, attacks) = (
            f64::from(activity.turns),
            f64::from(activity.moves.min(activity.turns)),
            f64::from(activity.attacks.min(activity.moves)),
        );
        self.strength
            * (moves * rate.ln()
                + (turns - moves) * (1.0 - rate).ln()
                + attacks * share.ln()
                + (moves - attacks) * (1.0 - share).ln())
    }

    /// The rates fitted for the family of `rules` (see `docs/bot.md`, the belief's log-loss),
    /// at their fitted strength.
    pub fn fitted(rules: &Rules) -> MoveModel {
        match rules.family {
            Family::Junqi => JUNQI,
            Family::GunjinShogi => GUNJIN,
        }
    }
}

/// Junqi's rates, fitted on 120 games among belief, search and expert (seed 11, 2026-12-07);
/// the strength is the one of 0.1, 0.25, 0.5, 0.75 and 1 with the lowest log-loss on 120 other
/// games (seed 12).
const JUNQI: MoveModel = MoveModel {
    move_rate: [
        0.00000, 0.07270, 0.05300, 0.07263, 0.08667, 0.10969, 0.11905, 0.16871, 0.26501, 0.30197,
        0.06456, 0.00000, 0.00000, 0.00000, 0.00000, 0.00000, 0.00000,
    ],
    attack_share: [
        0.00000, 0.17669, 0.09856, 0.16963, 0.20486, 0.28437, 0.35758, 0.59132, 0.73805, 0.77814,
        0.24060, 0.00000, 0.00000, 0.00000, 0.00000, 0.00000, 0.00000,
    ],
    strength: 0.25,
};

/// Gunjin Shogi's rates, fitted and tested as Junqi's.
const GUNJIN: MoveModel = MoveModel {
    move_rate: [
        0.00000, 0.12209, 0.12950, 0.09399, 0.05717, 0.05498, 0.04399, 0.03980, 0.04226, 0.04165,
        0.35580, 0.07081, 0.05223, 0.08070, 0.04098, 0.00000, 0.00000,
    ],
    attack_share: [
        0.00000, 0.51163, 0.44880, 0.35264, 0.26360, 0.13305, 0.09804, 0.07241, 0.06177, 0.06599,
        0.82785, 0.50105, 0.09176, 0.07617, 0.09541, 0.00000, 0.00000,
    ],
    strength: 0.1,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Beliefs;
    use hidden_front_rules::Side;
    use hidden_front_rules::piece::junqi;

    fn model(strength: f64) -> MoveModel {
        let mut turns = [0; KIND_SLOTS];
        let mut moves = [0; KIND_SLOTS];
        let mut attacks = [0; KIND_SLOTS];
        // Bombs move once in 100 turns, commanders once in 5, half of their moves attacks.
        turns[junqi::BOMB.0 as usize] = 1000;
        moves[junqi::BOMB.0 as usize] = 10;
        turns[junqi::COMMANDER.0 as usize] = 1000;
        moves[junqi::COMMANDER.0 as usize] = 200;
        attacks[junqi::COMMANDER.0 as usize] = 100;
        MoveModel::from_counts(&turns, &moves, &attacks, strength)
    }

    #[test]
    fn rates_are_the_counts_ratios() {
        let m = model(1.0);
        assert!((m.move_rate[junqi::BOMB.0 as usize] - 0.01).abs() < 1e-12);
        assert!((m.move_rate[junqi::COMMANDER.0 as usize] - 0.2).abs() < 1e-12);
        assert!((m.attack_share[junqi::COMMANDER.0 as usize] - 0.5).abs() < 1e-12);
        assert_eq!(m.attack_share[junqi::BOMB.0 as usize], 0.0);
    }

    #[test]
    fn the_likelihood_follows_the_activity() {
        let m = model(1.0);
        let busy = Activity {
            turns: 20,
            moves: 8,
            attacks: 3,
        };
        let still = Activity {
            turns: 20,
            moves: 0,
            attacks: 0,
        };
        let ll = |k: PieceKind, a: Activity| m.log_likelihood(k, a);
        // By hand: 8 ln 0.2 + 12 ln 0.8 + 3 ln 0.5 + 5 ln 0.5 for the commander.
        let by_hand = 8.0 * 0.2f64.ln() + 12.0 * 0.8f64.ln() + 8.0 * 0.5f64.ln();
        assert!((ll(junqi::COMMANDER, busy) - by_hand).abs() < 1e-9);
        assert!(ll(junqi::COMMANDER, busy) > ll(junqi::BOMB, busy));
        assert!(ll(junqi::BOMB, still) > ll(junqi::COMMANDER, still));
        // Half the strength, half the log.
        let half = model(0.5).log_likelihood(junqi::COMMANDER, busy);
        assert!((half - by_hand / 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_busy_piece_is_less_likely_a_bomb_with_the_model_and_unchanged_without() {
        let rules = Rules::default();
        let topo = rules.topology();
        let pieces = crate::belief::tests::whole_army(&rules, Side::North);
        // A piece off the front row that can be a bomb.
        let busy = pieces
            .iter()
            .find(|(n, _)| topo.front_row[Side::North.index()] & n.bit() == 0)
            .map(|(_, id)| *id)
            .unwrap();
        let mut plain = Beliefs::new(rules);
        plain.start(Side::North, &pieces);
        let before = plain.marginals();
        let other = pieces.iter().map(|p| p.1).find(|id| *id != busy).unwrap();
        for turn in 0..30 {
            // The busy piece moves every other turn, attacking once; another takes the rest.
            let mover = if turn % 2 == 0 { busy } else { other };
            plain.saw_turn(mover, turn == 10);
        }
        assert_eq!(
            plain.activity(busy),
            Some(Activity {
                turns: 30,
                moves: 15,
                attacks: 1
            })
        );
        // Activity alone changes nothing without a model.
        assert_eq!(plain.marginals(), before);
        let mut weighted = plain.clone();
        weighted.set_move_model(Some(model(1.0)));
        let i = plain.pieces().iter().position(|p| p.id == busy).unwrap();
        let bomb = junqi::BOMB.0 as usize;
        let (m0, m1) = (plain.marginals(), weighted.marginals());
        assert!(
            m1[i][bomb] < m0[i][bomb] / 10.0,
            "{} vs {}",
            m1[i][bomb],
            m0[i][bomb]
        );
        for row in &m1 {
            assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        }
    }
}
