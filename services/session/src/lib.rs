//! The session service: the referee. It alone holds every game's full state; it judges every
//! command with the rules engine and keeps every game as an event log in a [`GameStore`].
//!
//! A command is: (1) load the game (from the process cache, or the store); (2) judge it with the
//! engine (a refusal made against the cache is judged again on the stored game); (3) append the
//! events, the new snapshot and the command's record (its idempotency key and answer) in one
//! store transaction guarded by the version the judgement was made against. There is no look for
//! an earlier answer before judging: a retry of an applied command is caught either when the
//! engine refuses it (the session then finds the key's record and returns its first answer) or at
//! the append, where a known key writes nothing and the store hands back the first answer
//! ([`hidden_front_store::StoreError::DuplicateCommand`]; on Postgres the command record's
//! primary key refuses it). If another replica won the race, reload and judge again (unless the
//! caller pinned an expected version: then the answer is `ABORTED`). Nothing is applied by halves:
//! the engine refuses without changing anything, and the store writes all or nothing.
//!
//! Answers and errors leave through the engine's view functions only: a command's events are
//! projected for the acting side, and `GetGame` for the asking viewer. `WatchGame` is the one
//! full-information stream, for internal consumers (the gateway projects it per player).
//!
//! Metrics (through the `metrics` facade; names in `hidden-front-metrics-names`): moves and
//! their latency, commands by kind and outcome, games by phase, store failures and append
//! latency. The games-by-phase gauge is kept from this process's own command outcomes: games
//! created or advanced by other replicas, and games older than this process, are not in it.

mod actions;
pub mod admin;
mod cache;
mod command;
mod command_locks;
mod config;
mod counters;
mod create;
mod errors;
mod fire;
mod lifecycle;
mod presence;
mod pulse;
mod queries;
mod request;
mod service;
mod session_store;
mod status;
mod timers;
mod watch;

pub use admin::AdminService;
pub use admin::auth::{AdminTokenError, AdminTokens, Operator};
pub use cache::CACHED_GAME_BYTES;
pub use config::SessionConfig;
pub use errors::{game_error_status, store_error_status};
pub use pulse::PulseConfig;
pub use service::SessionService;
pub use watch::{WatchItem, WatchStream, WatchedEvent};
