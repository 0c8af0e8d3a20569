//! Hidden Front opponent-piece inference: for every opponent piece, the set of kinds it can
//! still be, learnt only from what one seat is shown.
//!
//! The computer player (`hidden-front-bot`) plays from it and the browser client
//! (`hidden-front-web-engine`, compiled to WebAssembly) shows it, so both draw the same
//! conclusions from the same events. A [`Tracker`] is fed the projected events of one seat
//! ([`hidden_front_rules::ViewEvent`] from [`hidden_front_rules::project`] with
//! `Viewer::player(side)`); it never sees a `Game`, a `Position` or a full `Event`, so it cannot
//! know a kind the seat does not know. Its [`Beliefs`] hold the kind sets and estimate kind
//! chances ([`Beliefs::marginals`]), and draw complete opponent layouts consistent with everything
//! seen ([`Sampler`], for a searching player).
//!
//! Correct for both families: each rule that narrows a kind is applied only where the family's
//! rules make it hold (see [`Tracker`]). Checked by `cargo nextest run -p hidden-front-inference`:
//! unit cases per rule, and many seeded random refereed games of both families in which the true
//! kind of every opponent piece is always among its possible kinds.

pub mod activity;
pub mod belief;
pub mod sample;
mod tracker;

pub use activity::{Activity, MoveModel};
pub use belief::{Beliefs, EnemyPiece, KIND_SLOTS, KindSet, flag_kind};
pub use sample::{Layout, Sampler};
pub use tracker::{Occupant, Tracker};

use hidden_front_rules::{Side, ViewEvent};

/// Whether `view` (an event as projected for the seat on `me`, before the game ended) shows a
/// kind of an opponent piece: it never should. Every harness that feeds a computer player
/// (the bot's tests, the ladder) checks each projection with it, so a leak in the projection
/// would fail them rather than make the player quietly stronger.
pub fn shows_opponent_kind(view: &ViewEvent, me: Side) -> bool {
    match view {
        ViewEvent::PlayStarted { pieces } => {
            pieces.iter().any(|p| p.side != me && p.kind.is_some())
        }
        ViewEvent::Moved {
            side, kind, combat, ..
        } => {
            if *side != me {
                kind.is_some()
            } else {
                combat.as_ref().is_some_and(|c| c.defender_kind.is_some())
            }
        }
        ViewEvent::DeploymentConfirmed {
            side, deployment, ..
        } => *side != me && deployment.is_some(),
        ViewEvent::DeploymentDrafted { deployment } => deployment.side != me,
        _ => false,
    }
}
