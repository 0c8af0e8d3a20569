//! The WebSocket face of the gateway: `GET /v1/ws` on the HTTP listener, for browsers and any
//! client that would rather not speak gRPC. Every operation is the same [`Gateway`](crate::Gateway) call the gRPC
//! `PlayerService` makes, and every request and response is the same proto message, written in
//! the canonical proto3 JSON mapping, so the two APIs cannot drift apart.
//!
//! The protocol (`docs/websocket.md` has it in full, with a complete example session):
//! - Authentication: an `Authorization: Bearer` header on the upgrade request, or a first message
//!   `{"type":"auth","token":"..."}` (browsers cannot set headers). Nothing else is read before;
//!   a bad token is answered with an `UNAUTHENTICATED` error and the connection is closed.
//! - Requests: `{"id": <number or string>, "type": "<op>", "request": <proto JSON>}`; answers
//!   `{"id", "type": "result", "response"}` or `{"id", "type": "error", "code", "message"}` with
//!   gRPC code names. Requests run concurrently: match answers by `id`.
//! - Subscriptions (several per connection, bounded): `event`, `reconnect` and `end` items tagged
//!   with the id of the `subscribe` request.
//!
//! Limits keep one client from hurting others: a message size limit, a cap on connections per
//! process, on subscriptions and on requests in flight per connection, and a bounded outbound
//! queue per connection. A client that stops reading is closed with resume hints after
//! [`WsConfig::stall_timeout`]; nothing it does ever blocks the game hubs or other connections.
//!
//! A client that offers the subprotocol `hiddenfront.connect.v1` speaks `Connect` instead: binary
//! frames, each one encoded `ConnectRequest` or `ConnectResponse` (`binary`; docs/connect.md).
//!
//! Its parts, one job each: `transport` (the server, the upgrade, the `auth` handshake, the
//! frame loop), `writer` (the socket writer: pings, resume points, the goodbye), `closing` (why a
//! connection closes and its close codes), `codec` (client messages decoded into the proto
//! requests), `messages` (the server's messages), `connection` (per-connection state: closing,
//! the outbound queue, subscriptions), `subscriptions` (`subscribe`, `watch_lobby`,
//! `unsubscribe`) and `ops` (what every other op does).

mod binary;
mod closing;
mod codec;
mod connection;
mod messages;
mod ops;
mod subscriptions;
mod transport;
mod writer;

pub use messages::code_name;
pub use transport::{serve, serve_guarded, serve_with};

use std::time::Duration;

/// The path of the WebSocket endpoint.
pub const WS_PATH: &str = "/v1/ws";

/// Settings of the WebSocket API.
#[derive(Debug, Clone)]
pub struct WsConfig {
    /// Open WebSocket connections this process accepts at most; past it the upgrade is refused
    /// with `503 Service Unavailable`, so a flood of idle sockets cannot exhaust the process.
    pub max_connections: usize,
    /// Subscriptions one connection may hold at once (a client watching a few games at most).
    pub max_subscriptions: usize,
    /// Largest message read, in bytes: larger ones are answered `OUT_OF_RANGE` (the same limit
    /// as the gRPC port). Messages over four times this are cut off by the WebSocket layer
    /// itself, which closes the connection with code 1009.
    pub max_message_bytes: usize,
    /// Requests of one connection being answered at once; more are refused with
    /// `RESOURCE_EXHAUSTED` instead of queueing without bound.
    pub max_requests_in_flight: usize,
    /// Items queued for one connection's socket. A full queue makes producers wait, at most
    /// [`WsConfig::stall_timeout`].
    pub outbound_queue: usize,
    /// How long a full outbound queue may stay full before the client is judged not to be
    /// reading: the connection is then closed with resume hints. Long enough for any healthy
    /// client to catch up a whole game's backlog, short enough to free the slot of a dead one.
    pub stall_timeout: Duration,
    /// How long a connection without an `Authorization` header has to send its `auth` message.
    pub auth_timeout: Duration,
    /// Interval of the server's pings. A client from which nothing (not even a pong) arrives for
    /// three intervals is closed: a vanished client must not hold its slot and its presence.
    pub ping_interval: Duration,
}

impl Default for WsConfig {
    fn default() -> Self {
        WsConfig {
            max_connections: 10_000,
            max_subscriptions: 16,
            max_message_bytes: 64 * 1024,
            max_requests_in_flight: 32,
            outbound_queue: 256,
            stall_timeout: Duration::from_secs(10),
            auth_timeout: Duration::from_secs(10),
            ping_interval: Duration::from_secs(20),
        }
    }
}
