//! The computer's playing levels, as data: what a player or an operator picks, by name.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// What one move may cost a level: a fixed amount of work, which makes the move a function of
/// the seed and the events, and a wall-clock safety net.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Opponent layouts drawn from the belief and searched, per move (0: the level does not
    /// sample; the expert's Gunjin Shogi search draws at most [`EXPERT_DEEP_SAMPLES`]).
    pub samples: u32,
    /// Wall-clock time after which the search stops drawing layouts (it always finishes the
    /// first). Calibrated never to cut in on this project's machine at the default level; if
    /// it does (a very loaded machine), the move can differ from run to run for one seed.
    pub max_think: Duration,
}

/// How strongly (and how expensively) the computer plays. Every level is fed only its seat's
/// projections and legal moves; they differ in how they choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// A uniformly random legal move: a floor for the ladder.
    Random,
    /// The best immediate material by expected value over the belief, no lookahead.
    Greedy,
    /// One ply of expected value with the danger of the position after it.
    Belief,
    /// Samples complete opponent layouts from the belief and searches over them.
    Search,
    /// The search over twice the layouts, with threats to the own goal judged at their worst
    /// case: an answer that puts a piece next to the flag (Gunjin Shogi: the HQ) from where it
    /// wins next is a lost game in every layout where the seat cannot then remove it. In
    /// Gunjin Shogi it searches three plies deep in each of fewer layouts instead.
    Expert,
}

/// Layouts the search level draws per move.
pub const SEARCH_SAMPLES: u32 = 64;
/// Layouts the expert level draws per move.
pub const EXPERT_SAMPLES: u32 = 128;
/// Layouts the expert level draws per move in Gunjin Shogi, where it searches three plies deep
/// in each (about a hundred times the one-reply search's cost a layout): at most this many of
/// its [`Budget::samples`]. 48 scored no better than 16 (docs/bot.md).
pub const EXPERT_DEEP_SAMPLES: u32 = 16;

impl Level {
    /// Every level, weakest first.
    pub const ALL: [Level; 5] = [
        Level::Random,
        Level::Greedy,
        Level::Belief,
        Level::Search,
        Level::Expert,
    ];

    /// The level a game gets when the player names none: the strongest, and well inside its
    /// budget (p95 tens of milliseconds a move; see docs/bot.md).
    pub const DEFAULT: Level = Level::Expert;

    /// What a move may cost at this level (see [`Budget`]).
    pub fn budget(self) -> Budget {
        match self {
            Level::Random | Level::Greedy | Level::Belief => Budget {
                samples: 0,
                max_think: Duration::from_millis(100),
            },
            Level::Search => Budget {
                samples: SEARCH_SAMPLES,
                max_think: Duration::from_millis(250),
            },
            Level::Expert => Budget {
                samples: EXPERT_SAMPLES,
                max_think: Duration::from_millis(1000),
            },
        }
    }

    /// Whether the level plays this rule set: every level plays both families.
    pub fn supports(self, _rules: &hidden_front_rules::Rules) -> bool {
        true
    }

    /// The level's stable name, as the API and the command line take it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Random => "random",
            Level::Greedy => "greedy",
            Level::Belief => "belief",
            Level::Search => "search",
            Level::Expert => "expert",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a level.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no computer level is called {0:?} (levels: random, greedy, belief, search, expert)")]
pub struct UnknownLevel(pub String);

impl FromStr for Level {
    type Err = UnknownLevel;

    fn from_str(s: &str) -> Result<Level, UnknownLevel> {
        Level::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| UnknownLevel(s.chars().take(64).collect()))
    }
}
