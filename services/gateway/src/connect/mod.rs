//! `Connect`: one connection per player for everything the player does (docs/connect.md).
//!
//! A game platform carries play on one long-lived connection per player: a move is one small
//! message up, and its answer and the opponent's event come back on the same connection. The
//! gRPC face (`PlayerService/Connect`, a bidirectional stream) and the binary WebSocket face
//! (subprotocol [`SUBPROTOCOL`]) both run a [`Connection`]: it reads `ConnectRequest`s, answers
//! each through the same [`Gateway`](crate::Gateway) operations as the unary methods, and follows
//! any number of games (the same [`Follow`](crate::follow::Follow) loop as `Subscribe`) and the
//! lobby. What it sends waits in one bounded queue per connection as encoded `ServerMessage`s: an
//! event is projected and encoded once per audience and shared by every connection of that
//! audience ([`GameHub::event_message`](crate::hub::GameHub::event_message)), and the
//! connection's [`Writer`] takes every message that is ready at once into one response. A
//! connection that does not read is closed with where to resume each game; nothing else ever
//! waits for it.
//!
//! Its parts: `connection` (the reader loop, the follows, the queue and the writer), `requests`
//! (what each request does), `encoding` (server messages, answers and refusals as bytes).

mod connection;
mod encoding;
mod requests;

pub(crate) use connection::{Closing, Connection, Writer};
pub(crate) use encoding::{answer, encode, refusal};

use std::time::Duration;

/// The WebSocket subprotocol of the binary form: each frame one encoded `ConnectRequest` (from
/// the client) or `ConnectResponse` (from the server).
pub const SUBPROTOCOL: &str = "hiddenfront.connect.v1";

/// Limits of one `Connect` connection.
#[derive(Debug, Clone)]
pub struct ConnectConfig {
    /// Messages queued for the connection's transport at most. A follow that finds the queue
    /// full waits for room at most [`ConnectConfig::stall_timeout`]; then the connection is
    /// closed with resume points (`Goodbye`, reason `TOO_SLOW`).
    pub outbound_queue: usize,
    /// How long a full queue may stay full before the client is judged not to be reading.
    pub stall_timeout: Duration,
    /// Requests being answered at once; more are refused `RATE_LIMITED` rather than queued.
    pub max_in_flight: usize,
    /// Games one connection may follow at once.
    pub max_follows: usize,
    /// Messages a connection may send per second, sustained (every request counts; actions
    /// also count against the player's action rate). Past it requests are refused
    /// `RATE_LIMITED`.
    pub messages_per_second: u32,
    /// Messages a connection may send in a burst.
    pub message_burst: u32,
    /// Messages written together in one response at most.
    pub batch_messages: usize,
}

impl Default for ConnectConfig {
    fn default() -> Self {
        ConnectConfig {
            outbound_queue: 1024,
            stall_timeout: Duration::from_secs(10),
            max_in_flight: 32,
            max_follows: 64,
            messages_per_second: 100,
            message_burst: 200,
            batch_messages: 64,
        }
    }
}
