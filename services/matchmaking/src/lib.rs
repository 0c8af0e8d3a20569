//! The matchmaking service: seats players in games.
//!
//! - Queues per (rule set, time control, rated or casual) of [`store::Ticket`]s with
//!   client-chosen ids (a retry returns the same ticket), a time to live, cancellation, and at
//!   most one waiting ticket per player per queue.
//! - Pairing ([`pairing`]): casual queues oldest first; rated queues by Glicko-2 rating
//!   ([`glicko`]) within a window that widens with waiting; players seated again after an
//!   opponent lost the seat go first. Several processes may pair one database: a ticket is
//!   paired once (see [`store::postgres`]).
//! - Invites (a short code and a link), games against the computer ([`driver`]: the seat is
//!   played by `hidden-front-bot` from its own projection only), ratings settled once per rated
//!   game from the session's ended-games feed ([`policy`]: what a game's end changes, decided once
//!   for both stores).
//! - Organisers' bulks ([`organiser`]): games for given pairs created together at a set time,
//!   followed and cancelled as one.
//! - Tournaments ([`tournament`]) on bulks, their facts and their standings pushed to the
//!   entrants ([`announce`]).
//! - Lobby events (match found, ticket expired, seated again, invite expired, a tournament's
//!   standings) pushed on
//!   `WatchPlayer`, from any process (Postgres LISTEN/NOTIFY), resumable by sequence number.
//!
//! Wiring: [`MatchmakingService::new`] with a [`store::MatchStore`] (memory or Postgres), a
//! session client and a [`MatchmakingConfig`]; serve [`MatchmakingService::server`] on the
//! internal port; run [`MatchmakingService::spawn_background`].

pub mod announce;
pub mod config;
pub mod driver;
pub mod entrants;
pub mod glicko;
pub mod organiser;
pub mod pairing;
pub mod policy;
mod service;
pub mod store;
pub mod tournament;

pub use config::MatchmakingConfig;
pub use organiser::Organiser;
pub use service::{
    COMPUTER_PLAYER, MatchmakingService, SessionClient, ended_game_from_proto,
    lobby_event_to_proto, match_error_status, now_ms,
};
