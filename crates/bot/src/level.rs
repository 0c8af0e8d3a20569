//! The computer's playing levels, as data: what a player or an operator picks, by name.

use std::fmt;
use std::str::FromStr;

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
}

impl Level {
    /// Every level, weakest first.
    pub const ALL: [Level; 4] = [Level::Random, Level::Greedy, Level::Belief, Level::Search];

    /// The level a game gets when the player names none: strong and fast.
    pub const DEFAULT: Level = Level::Search;

    /// The level's stable name, as the API and the command line take it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Random => "random",
            Level::Greedy => "greedy",
            Level::Belief => "belief",
            Level::Search => "search",
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
#[error("no computer level is called {0:?} (levels: random, greedy, belief, search)")]
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
