//! The Hidden Front computer player: an opponent for games against the computer, in Junqi and
//! Gunjin Shogi, at five [`Level`]s (see `docs/bot.md` for each level and its measured
//! strength):
//! - `random`: a uniformly random legal move and a random deployment;
//! - `greedy`: the best expected material of the move's fight alone;
//! - `belief`: one ply of expected value with the danger of the position after it (below);
//! - `search`: every legal move played out on complete opponent layouts drawn from the belief,
//!   with the opponent's best answer and the seat's recapture, averaged over the layouts, on
//!   top of the belief score ([`Level::budget`]: 64 layouts a move);
//! - `expert` (the default): the search over 128 layouts, where the opponent's capture is the
//!   one its own view of the seat's pieces (what is public, and each fight replayed with the
//!   layout's kind for its piece) expects to gain most, and a threat to the own flag or HQ
//!   that the seat could not then remove is a lost game in its layout.
//!
//! [`ComputerPlayer::new`] is the belief level (the player before levels existed);
//! [`ComputerPlayer::with_level`] names the level.
//!
//! # No leak, by construction
//! A [`ComputerPlayer`] is fed only what a person in its seat is fed: the events of the game as
//! projected for its seat ([`hidden_front_rules::ViewEvent`], from
//! [`hidden_front_rules::project`] with `Viewer::player(side)`) and the list of legal moves for
//! its side. No entry point takes a `Game`, a `Position` or a full `Event`, so the player cannot
//! learn an opponent kind the seat is not shown. It rebuilds its own board from `PlayStarted`
//! and `Moved` events (who stands where, with opponent pieces known only by their public ids).
//! Its move is always an element of the legal list it was given, so it never plays an illegal
//! move.
//!
//! # What it infers
//! Through `hidden-front-inference`'s `Tracker` (the same code the browser client runs), for
//! every opponent piece it keeps the set of kinds the piece can still be:
//! - where it started: the flag only in an HQ, mines only on the two back rows (never an HQ),
//!   bombs not on the front row (unless the rules allow it);
//! - a piece that moved is no mine and no flag; a move along the rails that turns a corner is an
//!   engineer's;
//! - every fight with one of its own pieces is replayed through the engine's own combat judge
//!   for each candidate kind, and only kinds that give the observed result are kept (beat my 8:
//!   the commander; lost to my 5: an engineer to a 4, ...);
//! - a flag shown under `flag-reveal` is a flag;
//! - counting: a kind whose every copy is pinned elsewhere is ruled out, and a kind with exactly
//!   as many candidates as copies pins those candidates.
//!
//! From these sets it estimates each piece's kind chances (each kind's copies spread over the
//! pieces that can be it, by alternating row and column scaling).
//!
//! # How the belief level chooses
//! Each legal move is scored by its expected value one ply ahead:
//! - a fight is split into its possible outcomes (win, trade, loss, flag capture) by the kind
//!   chances of the defender, each worth the material won or lost (commander 12 ... platoon 2,
//!   engineer 3, bomb 6); capturing the flag is worth 1000. So it takes pieces known weaker,
//!   throws a bomb at a piece known strong, and leaves pieces known stronger alone;
//! - after each outcome, the danger of the position: for every own piece the best expected gain
//!   of an enemy piece that can reach it next ply (a share of it, since the opponent does not
//!   know the piece's kind), a large penalty when an enemy piece that may move can reach the
//!   own flag, and a smaller one when it can reach (or take) a square next to the flag. So it
//!   attacks a piece that threatens its flag's HQ with the piece most likely to remove it, meets
//!   a piece two steps from the flag, and keeps the squares around the flag held;
//! - a small bonus for steps toward the enemy HQ that may hold the flag, a penalty for freezing a
//!   piece in an empty HQ, and, after many plies without a fight, a bonus for fighting;
//! - ties are broken by a tiny jitter from the seeded generator, so a seed fixes every choice.
//!
//! In Gunjin Shogi the same terms hold with its own material values, the HQ as the goal (an
//! officer from GEN to MAJ entering it wins) and the engine's judge (a flag fights as the piece
//! behind it).
//!
//! # Deployment
//! Junqi: the flag in an HQ, its back-row neighbours mined, bombs in the middle rows, the
//! weakest non-engineer rank frozen in the other HQ, the strongest pieces forward. Gunjin
//! Shogi: a major general in the HQ, the flag in front of it, mines beside it. Checked with the
//! engine's deployment validation (falling back to a random legal deployment if a rule set
//! ever refuses the plan).
//!
//! # Checked by
//! `cargo nextest run -p hidden-front-bot`: refereed games (the engine's `Game` judges, the bot
//! gets only its seat's projections and the engine's legal moves, and the harness asserts that
//! no projection shows an opponent kind before the end) at every level, under Junqi's default
//! and house rule sets and three Gunjin Shogi rule sets; the same seed giving the same game at
//! every level; deployments for many seeds; the [`puzzle`] suite, hand-made positions with one
//! known weakness each (a known weaker piece, a bomb at the known commander, a known stronger
//! piece, a known mine, the Gunjin HQ win, the flag's and HQ's defence, the engineer's railway
//! to the flag, the empty HQ), each answered right by every level it requires for every seed;
//! 100 fixed games against a uniformly random mover. The ordering of the levels: `crates/ladder`'s tests.

/// The opponent-piece inference, moved to `hidden-front-inference` (shared with the browser);
/// re-exported under its old path for callers of this crate.
pub use hidden_front_inference::belief;
mod formation;
mod level;
mod player;
pub mod puzzle;
mod search;
mod values;

pub use level::{Budget, EXPERT_DEEP_SAMPLES, EXPERT_SAMPLES, Level, SEARCH_SAMPLES, UnknownLevel};
pub use player::ComputerPlayer;
