//! How a game ends.

use crate::side::Side;
use serde::{Deserialize, Serialize};

/// Why a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// A piece entered the HQ where the enemy flag stood.
    FlagCaptured,
    /// Gunjin Shogi: a general or field officer entered the enemy HQ.
    HqEntered,
    /// The side to move had no legal move when its turn started (a draw, winner `None`, when
    /// neither side has a movable piece left in Gunjin Shogi).
    NoLegalMoves,
    /// The no-combat limit (100 plies by default) passed without a fight: draw.
    NoCombatLimit,
    /// Both players agreed to a draw.
    AgreedDraw,
    /// A player resigned.
    Resigned,
    /// A player ran out of time for the third time.
    Timeouts,
    /// A player stayed disconnected past the allowed time.
    Disconnected,
    /// A player left during deployment without confirming: the game is cancelled, no result.
    SeatLost,
    /// An operator stopped the game ([`crate::Command::Abort`]): no result.
    Aborted,
}

impl EndReason {
    /// Every end reason, in declaration order: the one list every surface that names end
    /// reasons (the replay text, the lifecycle facts, the proto enum's conversions) is checked
    /// against, so none can drift from the engine.
    pub const ALL: [EndReason; 10] = [
        EndReason::FlagCaptured,
        EndReason::HqEntered,
        EndReason::NoLegalMoves,
        EndReason::NoCombatLimit,
        EndReason::AgreedDraw,
        EndReason::Resigned,
        EndReason::Timeouts,
        EndReason::Disconnected,
        EndReason::SeatLost,
        EndReason::Aborted,
    ];

    /// The end reason whose wire name ([`EndReason::name`]) is `name`, if any.
    pub fn from_name(name: &str) -> Option<EndReason> {
        EndReason::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The snake_case wire name (`flag_captured`, ...). Every public surface (replays, lifecycle
    /// facts, the rules CLI) uses this name; the `Serialize` derive's names are those of the
    /// stored engine events only, where `NoCombatLimit` reads `no_combat_limit`.
    pub fn name(self) -> &'static str {
        match self {
            EndReason::FlagCaptured => "flag_captured",
            EndReason::HqEntered => "hq_entered",
            EndReason::NoLegalMoves => "no_legal_moves",
            EndReason::NoCombatLimit => "no_combat_100",
            EndReason::AgreedDraw => "agreed_draw",
            EndReason::Resigned => "resigned",
            EndReason::Timeouts => "timeouts",
            EndReason::Disconnected => "disconnected",
            EndReason::SeatLost => "seat_lost",
            EndReason::Aborted => "aborted",
        }
    }
}

/// The result of a game: the winner (`None` for a draw or a cancelled game) and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Outcome {
    /// Who won; `None` when nobody did.
    pub winner: Option<Side>,
    /// Why the game ended.
    pub reason: EndReason,
}

impl Outcome {
    /// `side` won.
    pub const fn win(side: Side, reason: EndReason) -> Outcome {
        Outcome {
            winner: Some(side),
            reason,
        }
    }

    /// Nobody won.
    pub const fn draw(reason: EndReason) -> Outcome {
        Outcome {
            winner: None,
            reason,
        }
    }
}
