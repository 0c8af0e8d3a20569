//! The Hidden Front gateway: the only public door. It authenticates players with bearer tokens
//! and streams each player only what that player may know.
//!
//! - [`auth`]: JWT bearer tokens (HS256 and asymmetric keys) whose subject is the player id.
//! - [`Gateway`]: the operations, transport-independent: seat checks (acting in a seat that is
//!   not yours is `PERMISSION_DENIED`), forwarding commands to the session service, per-player
//!   rate limits, and per-viewer streams.
//! - [`Referee`]: where actions are judged and games followed: the session over gRPC
//!   ([`RemoteReferee`]) or, in one process, the session itself.
//! - Streams: one upstream `WatchGame` per game per process (the hub), projected per connection
//!   with the rules engine's view function; resumable from any sequence number with no gaps and
//!   no duplicates; a connection that falls too far behind is cut off with a resume hint.
//! - Matchmaking: finding a match, invites, games against the computer, ratings and the lobby
//!   stream, forwarded to the matchmaking service for the authenticated player (optional).
//! - Presence: seated players' connections are reported to the session with a lease.
//! - [`PlayerAction`]: the eight player actions in one table, converted once from the proto
//!   request messages both faces receive ([`ActionMessage`]) and mapped once to the session
//!   calls ([`Gateway::act`]).
//! - [`PlayerApi`]: the gRPC face (`hiddenfront.v1.PlayerService`).
//! - [`connect`]: `Connect`, one connection per player for every request, event, status and
//!   lobby item, as a gRPC stream and as binary WebSocket frames.
//! - [`ws`]: the WebSocket face (`GET /v1/ws`): the same operations and the same proto messages,
//!   as proto3 JSON.
//! - [`http`]: the rest of the HTTP listener: the browser client's page and files, guest
//!   sign-in (`POST /v1/guest`) and the server's time (`GET /v1/time`).

mod action;
pub mod auth;
pub mod connect;
mod follow;
mod gateway;
pub mod http;
mod hub;
mod limits;
mod presence;
pub mod referee;
mod service;
pub mod ws;

pub use action::{ActionMessage, ActionRequest, PlayerAction};
pub use connect::ConnectConfig;
pub use gateway::{COMPUTER_PLAYER, Gateway, GatewayConfig, MatchmakingClient, SessionClient};
pub use referee::{Referee, RemoteReferee, UpstreamItem, UpstreamStream};
pub use service::PlayerApi;
