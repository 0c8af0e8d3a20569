//! Rule sets as data: the game family, its board, and every house option.

use crate::piece::{PieceKind, junqi};
use crate::topology::{self, Topology};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The game a rule set belongs to. Every family plugs into the same [`crate::Game`] and
/// [`crate::Position`] interface; callers never branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Junqi (军棋 / Land Battle Chess) on the 5 x 12 board.
    Junqi,
}

/// A complete rule set: the family and every option a house may set differently.
/// The default is the `hidden-front` rule set of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Rules {
    /// Which game.
    pub family: Family,
    /// `hq-mobile`: a piece in an HQ may move on (default: frozen for good).
    pub hq_pieces_may_move: bool,
    /// `front-bombs`: bombs may be deployed on the own front row.
    pub bombs_on_front_row: bool,
    /// `sturdy-mines`: a mine attacked by a non-engineer removes the attacker and stays.
    pub mine_survives_non_engineer: bool,
    /// `bomb-spares-flag`: a bomb that runs into the flag is spent and the flag stands (no capture).
    /// The move itself stays legal: legality must never depend on a hidden rank, or the list of
    /// legal moves would tell a player where the enemy flag is.
    pub bomb_spares_flag: bool,
    /// `flag-reveal`: when a side's commander (9) is removed, its flag is shown to the opponent.
    pub flag_revealed_when_commander_dies: bool,
    /// `no-combat-N`: plies without combat after which the game is drawn (default 100).
    pub no_combat_draw_plies: u16,
    /// A player's timeouts that forfeit the game (default 3).
    pub timeouts_to_forfeit: u8,
    /// Plies a player waits after a draw offer before offering again (default 10).
    pub draw_offer_cooldown_plies: u16,
}

/// The default rule set's name.
pub const DEFAULT_RULES: &str = "hidden-front";

/// A rule-set name that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RulesError {
    /// The base name is not a known family.
    #[error("unknown variant {0:?}: expected \"hidden-front\", optionally followed by +options")]
    UnknownBase(String),
    /// An option is not known or malformed.
    #[error(
        "unknown rule option {0:?}: expected one of hq-mobile, front-bombs, sturdy-mines, bomb-spares-flag, flag-reveal, no-combat-N (N in 1..=1000)"
    )]
    UnknownOption(String),
}

impl Default for Rules {
    fn default() -> Self {
        Rules::hidden_front()
    }
}

impl Rules {
    /// The binding default rule set of the spec.
    pub const fn hidden_front() -> Rules {
        Rules {
            family: Family::Junqi,
            hq_pieces_may_move: false,
            bombs_on_front_row: false,
            mine_survives_non_engineer: false,
            bomb_spares_flag: false,
            flag_revealed_when_commander_dies: false,
            no_combat_draw_plies: 100,
            timeouts_to_forfeit: 3,
            draw_offer_cooldown_plies: 10,
        }
    }

    /// Parses a rule-set name: a base (`hidden-front`) and `+`-separated options, e.g.
    /// `hidden-front+hq-mobile+no-combat-60`. The inverse of [`Rules::name`].
    pub fn parse(name: &str) -> Result<Rules, RulesError> {
        let mut parts = name.trim().split('+');
        let base = parts.next().unwrap_or_default();
        let mut rules = match base {
            DEFAULT_RULES => Rules::hidden_front(),
            other => return Err(RulesError::UnknownBase(other.to_string())),
        };
        for option in parts {
            match option {
                "hq-mobile" => rules.hq_pieces_may_move = true,
                "front-bombs" => rules.bombs_on_front_row = true,
                "sturdy-mines" => rules.mine_survives_non_engineer = true,
                "bomb-spares-flag" => rules.bomb_spares_flag = true,
                "flag-reveal" => rules.flag_revealed_when_commander_dies = true,
                other => {
                    let plies = other
                        .strip_prefix("no-combat-")
                        .and_then(|n| n.parse::<u16>().ok())
                        .filter(|n| (1..=1000).contains(n))
                        .ok_or_else(|| RulesError::UnknownOption(other.to_string()))?;
                    rules.no_combat_draw_plies = plies;
                }
            }
        }
        Ok(rules)
    }

    /// The canonical name of this rule set (options in a fixed order).
    pub fn name(&self) -> String {
        let mut name = String::from(DEFAULT_RULES);
        for (on, option) in [
            (self.hq_pieces_may_move, "hq-mobile"),
            (self.bombs_on_front_row, "front-bombs"),
            (self.mine_survives_non_engineer, "sturdy-mines"),
            (self.bomb_spares_flag, "bomb-spares-flag"),
            (self.flag_revealed_when_commander_dies, "flag-reveal"),
        ] {
            if on {
                name.push('+');
                name.push_str(option);
            }
        }
        if self.no_combat_draw_plies != 100 {
            name.push_str(&format!("+no-combat-{}", self.no_combat_draw_plies));
        }
        name
    }

    /// The board this rule set is played on.
    pub fn topology(&self) -> &'static Topology {
        match self.family {
            Family::Junqi => topology::junqi(),
        }
    }

    /// Every piece kind of the family with its code and count per side.
    pub fn kinds(&self) -> &'static [(PieceKind, &'static str, u8)] {
        match self.family {
            Family::Junqi => &junqi::KINDS,
        }
    }

    /// The wire code of a kind (`9`, `B`, ...); `?` for a number the family does not use.
    pub fn code(&self, kind: PieceKind) -> &'static str {
        self.kinds()
            .iter()
            .find(|(k, _, _)| *k == kind)
            .map_or("?", |(_, code, _)| code)
    }

    /// The kind behind a wire code, if the family has one.
    pub fn parse_kind(&self, code: &str) -> Option<PieceKind> {
        let code = code.trim();
        self.kinds()
            .iter()
            .find(|(_, c, _)| c.eq_ignore_ascii_case(code))
            .map(|(k, _, _)| *k)
    }

    /// Pieces each side deploys.
    pub fn pieces_per_side(&self) -> usize {
        self.kinds().iter().map(|(_, _, n)| *n as usize).sum()
    }

    /// Whether a kind can ever move (mines and flags cannot).
    #[inline]
    pub fn kind_moves(&self, kind: PieceKind) -> bool {
        match self.family {
            Family::Junqi => kind != junqi::MINE && kind != junqi::FLAG && kind.0 != 0,
        }
    }
}

impl std::fmt::Display for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in [
            "hidden-front",
            "hidden-front+hq-mobile",
            "hidden-front+hq-mobile+front-bombs+sturdy-mines+bomb-spares-flag+flag-reveal+no-combat-60",
        ] {
            assert_eq!(Rules::parse(name).unwrap().name(), name);
        }
        assert_eq!(Rules::parse("hidden-front").unwrap(), Rules::default());
        assert!(matches!(
            Rules::parse("chess"),
            Err(RulesError::UnknownBase(_))
        ));
        assert!(matches!(
            Rules::parse("hidden-front+no-combat-0"),
            Err(RulesError::UnknownOption(_))
        ));
        assert_eq!(Rules::default().pieces_per_side(), 25);
    }
}
