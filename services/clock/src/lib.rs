//! The clock service: the online rules' deadlines (90 s to deploy, 30 s a move, 60 s to come
//! back), kept durable and fired on time.
//!
//! The session arms a game's timers in the same store transaction as the command that starts
//! them (a move is acknowledged only once its next deadline is durable). This service:
//! - claims timers due within a short horizon from the store (`FOR UPDATE SKIP LOCKED` with a
//!   lease in Postgres), so several clock processes share the work without waiting on each other;
//! - holds them in a heap and fires each at its deadline at the session's `ApplyTimer`
//!   ([`SessionTarget`]);
//! - deletes fired timers in batches.
//!
//! Exactly-once effect comes from the session's fences, not from locks: a fire applies only if
//! the game's slot still holds exactly that timer (kind, side, version, deadline), so a repeated,
//! stale or raced fire changes nothing. A clock process that dies loses its claims when their
//! leases end and another process (or its restart) fires them.
//!
//! Metrics: timers armed (gauge), timers fired by kind and result, lateness by kind.

mod runner;
mod service;
mod target;

pub use runner::{Clock, ClockConfig, ClockStats, FireOutcome, TimerTarget};
pub use service::ClockService;
pub use target::{SessionTarget, apply_timer_request};
