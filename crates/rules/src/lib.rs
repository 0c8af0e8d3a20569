//! Hidden Front game engines: pure values and functions, no I/O, no async.
//!
//! The session service judges with this crate, the gateway filters with it and the computer
//! player searches with it. The pieces:
//! - [`Rules`]: a rule set as data (family plus house options; default `hidden-front`).
//! - [`Topology`]: a board as bitboards and tables, built once.
//! - [`Position`]: pieces, side to move and no-combat counter, with the move generator and the
//!   judge of one ply (combat and end-of-game checks). `Copy`, allocation-free on the hot path.
//! - [`Deployment`]: validation naming every problem, uniform random deployments, swaps.
//! - [`Game`]: deployment -> play -> ended, driven by [`Command`]s, recorded as [`Event`]s,
//!   rebuilt from them by [`Game::replay`].
//! - [`view()`] and [`project`]: what a player or spectator may see of a state or an event;
//!   [`reveal()`]: what the end shows everyone.
//! - [`notation`]: a one-line text form of positions.
//!
//! Callers use these types whatever the game family; a new family adds a [`rules::Family`]
//! variant, its board and its judge, not new entry points.

pub mod deployment;
pub mod game;
pub mod gunjin;
pub mod notation;
pub mod outcome;
pub mod piece;
pub mod playout;
pub mod position;
pub mod rng;
pub mod rules;
pub mod side;
pub mod topology;
pub mod view;

pub use deployment::{Deployment, DeploymentErrors, DeploymentProblem};
pub use game::{Command, Event, FlagReveal, Game, GameError, Phase};
pub use outcome::{EndReason, Outcome};
pub use piece::{PieceId, PieceKind};
pub use playout::{PlayoutResult, random_playout, random_start};
pub use position::{Combat, IllegalMove, Move, MoveList, Piece, PlyReport, Position};
pub use rng::GameRng;
pub use rules::{Family, GunjinBoard, Rules, RulesError};
pub use side::Side;
pub use topology::{Node, Nodes, Topology};
pub use view::{
    GameView, Reveal, ViewCombat, ViewEvent, ViewMismatch, ViewPiece, Viewer, project, reveal, view,
};
