//! The two seats of a two-player game.

use serde::{Deserialize, Serialize};

/// One of the two players. South deploys on the low rows, north on the high rows; who moves first
/// is decided per game, not by the side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The player whose half is rows 1-6 (Junqi) or ranks 1-4 (Gunjin Shogi).
    South,
    /// The player whose half is rows 7-12 (Junqi) or ranks 5-8 (Gunjin Shogi).
    North,
}

impl Side {
    /// Both sides, south first, for loops over per-side arrays.
    pub const BOTH: [Side; 2] = [Side::South, Side::North];

    /// The opponent.
    #[inline]
    pub const fn other(self) -> Side {
        match self {
            Side::South => Side::North,
            Side::North => Side::South,
        }
    }

    /// Index into per-side arrays (`[T; 2]`).
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The lowercase name used on every wire format (`south` / `north`).
    pub const fn name(self) -> &'static str {
        match self {
            Side::South => "south",
            Side::North => "north",
        }
    }

    /// Parses the wire name; `None` for anything but `south` or `north`.
    pub fn parse(text: &str) -> Option<Side> {
        match text {
            "south" => Some(Side::South),
            "north" => Some(Side::North),
            _ => None,
        }
    }
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
