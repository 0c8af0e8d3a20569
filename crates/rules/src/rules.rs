//! Rule sets as data: the game family, its board, and every house option.

use crate::piece::{PieceKind, gunjin, junqi};
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
    /// Gunjin Shogi (軍人将棋) on an 8 x 8 (or 6 x 8) board with a wall and gates.
    GunjinShogi,
}

/// The Gunjin Shogi edition and wall: which board, which gates and which piece counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GunjinBoard {
    /// 31 pieces, 8 x 8, two X gates (the spec's default).
    #[default]
    XGates,
    /// 31 pieces, 8 x 8, a Y and an inverted Y gate (`y-gates`).
    YGates,
    /// 31 pieces, 8 x 8, two straight I gates (`i-gates`).
    IGates,
    /// The 23-piece edition, 6 x 8, gates `b4-b5` and `e4-e5` (`23-pieces`).
    Pieces23,
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
    /// Gunjin Shogi: the edition and wall (ignored by other families).
    #[serde(default)]
    pub gunjin_board: GunjinBoard,
    /// Gunjin Shogi `tank-beats-engineer`: the tank wins against the engineer.
    #[serde(default)]
    pub tank_beats_engineer: bool,
    /// Gunjin Shogi `mine-survives`: a mine stays when it removes its attacker.
    #[serde(default)]
    pub mine_survives_kill: bool,
}

/// The default rule set's name.
pub const DEFAULT_RULES: &str = "hidden-front";

/// The default Gunjin Shogi rule set's name.
pub const GUNJIN_RULES: &str = "gunjin-shogi";

/// A rule-set name that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RulesError {
    /// The base name is not a known family.
    #[error(
        "unknown variant {0:?}: expected \"hidden-front\" or \"gunjin-shogi\", optionally followed by +options"
    )]
    UnknownBase(String),
    /// An option is not known or malformed.
    #[error(
        "unknown rule option {0:?}: expected one of hq-mobile, front-bombs, sturdy-mines, bomb-spares-flag, flag-reveal, no-combat-N (N in 1..=1000)"
    )]
    UnknownOption(String),
    /// A Gunjin Shogi option that is not known or malformed.
    #[error(
        "unknown gunjin-shogi option {0:?}: expected one of y-gates, i-gates, 23-pieces, tank-beats-engineer, mine-survives, no-combat-N (N in 1..=1000)"
    )]
    UnknownGunjinOption(String),
    /// Two options that each choose the board.
    #[error("options {0:?} and {1:?} both choose the board; give at most one")]
    ConflictingBoards(String, String),
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
            gunjin_board: GunjinBoard::XGates,
            tank_beats_engineer: false,
            mine_survives_kill: false,
        }
    }

    /// The binding default Gunjin Shogi rule set (31 pieces, X gates). Pieces in the HQ move
    /// freely in this game.
    pub const fn gunjin_shogi() -> Rules {
        let mut rules = Rules::hidden_front();
        rules.family = Family::GunjinShogi;
        rules.hq_pieces_may_move = true;
        rules
    }

    fn parse_gunjin<'a>(parts: impl Iterator<Item = &'a str>) -> Result<Rules, RulesError> {
        let mut rules = Rules::gunjin_shogi();
        let mut board_option: Option<&str> = None;
        for option in parts {
            let board = match option {
                "y-gates" => Some(GunjinBoard::YGates),
                "i-gates" => Some(GunjinBoard::IGates),
                "23-pieces" => Some(GunjinBoard::Pieces23),
                "tank-beats-engineer" => {
                    rules.tank_beats_engineer = true;
                    None
                }
                "mine-survives" => {
                    rules.mine_survives_kill = true;
                    None
                }
                other => {
                    rules.no_combat_draw_plies = other
                        .strip_prefix("no-combat-")
                        .and_then(|n| n.parse::<u16>().ok())
                        .filter(|n| (1..=1000).contains(n))
                        .ok_or_else(|| RulesError::UnknownGunjinOption(other.to_string()))?;
                    None
                }
            };
            if let Some(board) = board {
                if let Some(earlier) = board_option {
                    return Err(RulesError::ConflictingBoards(
                        earlier.to_string(),
                        option.to_string(),
                    ));
                }
                board_option = Some(option);
                rules.gunjin_board = board;
            }
        }
        Ok(rules)
    }

    /// Parses a rule-set name: a base (`hidden-front`) and `+`-separated options, e.g.
    /// `hidden-front+hq-mobile+no-combat-60`. The inverse of [`Rules::name`].
    pub fn parse(name: &str) -> Result<Rules, RulesError> {
        let mut parts = name.trim().split('+');
        let base = parts.next().unwrap_or_default();
        let mut rules = match base {
            DEFAULT_RULES => Rules::hidden_front(),
            GUNJIN_RULES => return Rules::parse_gunjin(parts),
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
        if self.family == Family::GunjinShogi {
            let mut name = String::from(GUNJIN_RULES);
            match self.gunjin_board {
                GunjinBoard::XGates => {}
                GunjinBoard::YGates => name.push_str("+y-gates"),
                GunjinBoard::IGates => name.push_str("+i-gates"),
                GunjinBoard::Pieces23 => name.push_str("+23-pieces"),
            }
            if self.tank_beats_engineer {
                name.push_str("+tank-beats-engineer");
            }
            if self.mine_survives_kill {
                name.push_str("+mine-survives");
            }
            if self.no_combat_draw_plies != 100 {
                name.push_str(&format!("+no-combat-{}", self.no_combat_draw_plies));
            }
            return name;
        }
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
            Family::GunjinShogi => crate::gunjin::topology(self.gunjin_board),
        }
    }

    /// Every piece kind of the family with its code and count per side.
    pub fn kinds(&self) -> &'static [(PieceKind, &'static str, u8)] {
        match self.family {
            Family::Junqi => &junqi::KINDS,
            Family::GunjinShogi => match self.gunjin_board {
                GunjinBoard::Pieces23 => &gunjin::KINDS_23,
                _ => &gunjin::KINDS_31,
            },
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
            Family::GunjinShogi => kind != gunjin::MINE && kind != gunjin::FLAG && kind.0 != 0,
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

    #[test]
    fn gunjin_names_round_trip_and_choose_the_board() {
        for name in [
            "gunjin-shogi",
            "gunjin-shogi+y-gates",
            "gunjin-shogi+i-gates+tank-beats-engineer",
            "gunjin-shogi+23-pieces+tank-beats-engineer+mine-survives+no-combat-50",
        ] {
            assert_eq!(Rules::parse(name).unwrap().name(), name);
        }
        let rules = Rules::parse("gunjin-shogi").unwrap();
        assert_eq!(rules.family, Family::GunjinShogi);
        assert_eq!(rules.pieces_per_side(), 31);
        let small = Rules::parse("gunjin-shogi+23-pieces").unwrap();
        assert_eq!(small.pieces_per_side(), 23);
        assert!(matches!(
            Rules::parse("gunjin-shogi+y-gates+i-gates"),
            Err(RulesError::ConflictingBoards(_, _))
        ));
        assert!(matches!(
            Rules::parse("gunjin-shogi+hq-mobile"),
            Err(RulesError::UnknownGunjinOption(_))
        ));
        assert_eq!(rules.parse_kind("gen"), Some(gunjin::GENERAL));
        assert_eq!(rules.code(gunjin::FIRST_LIEUTENANT), "1LT");
    }
}
