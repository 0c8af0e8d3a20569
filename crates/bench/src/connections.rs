//! Client connections: a pool of HTTP/2 connections to the gateway and player tokens.
//!
//! A server caps the concurrent streams of one HTTP/2 connection (hyper's default is 200), and
//! a client asking for more waits for a free slot: many players are therefore spread over
//! several connections, as many real clients would be.

use crate::BenchError;
use hidden_front_gateway::auth::mint_dev_token;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

/// How many gRPC streams (long-lived and unary) the bench puts on one connection at most, well
/// under hyper's default cap of 200 per connection.
pub(crate) const STREAMS_PER_CONNECTION: usize = 100;

/// How long the bench's tokens are valid: longer than any run.
const TOKEN_TTL: Duration = Duration::from_secs(24 * 3600);

/// One eagerly connected channel to `addr`.
pub(crate) async fn connect(addr: SocketAddr) -> Result<Channel, BenchError> {
    Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|source| BenchError::Connect {
            address: addr.to_string(),
            source,
        })?
        .connect_timeout(Duration::from_secs(10))
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(20))
        .connect()
        .await
        .map_err(|source| BenchError::Connect {
            address: addr.to_string(),
            source,
        })
}

/// Several connections to one server, handed out round-robin.
#[derive(Debug)]
pub(crate) struct Pool {
    channels: Vec<Channel>,
    next: AtomicUsize,
}

impl Pool {
    /// Enough connections to `addr` for `streams` concurrent gRPC streams.
    pub(crate) async fn for_streams(addr: SocketAddr, streams: usize) -> Result<Pool, BenchError> {
        let count = streams.div_ceil(STREAMS_PER_CONNECTION).max(1);
        let mut channels = Vec::with_capacity(count);
        for _ in 0..count {
            channels.push(connect(addr).await?);
        }
        Ok(Pool {
            channels,
            next: AtomicUsize::new(0),
        })
    }

    /// Exactly `count` connections to `addr` (`bench cluster`: the players share them, as the
    /// clients of many users share a load balancer's front).
    pub(crate) async fn for_connections(
        addr: SocketAddr,
        count: usize,
    ) -> Result<Pool, BenchError> {
        let mut channels = Vec::with_capacity(count);
        for _ in 0..count.max(1) {
            channels.push(connect(addr).await?);
        }
        Ok(Pool {
            channels,
            next: AtomicUsize::new(0),
        })
    }

    /// A pool with no connection, for tests of what never calls over gRPC (picking from it
    /// panics).
    #[cfg(test)]
    pub(crate) fn none() -> Pool {
        Pool {
            channels: Vec::new(),
            next: AtomicUsize::new(0),
        }
    }

    /// The next connection.
    pub(crate) fn pick(&self) -> Channel {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.channels.len();
        self.channels[i].clone()
    }

    /// How many connections the pool holds.
    pub(crate) fn len(&self) -> usize {
        self.channels.len()
    }
}

/// A player token signed with `secret` (the gateway's HS256 secret).
pub(crate) fn token(secret: &str, player: &str) -> Result<String, BenchError> {
    mint_dev_token(secret.as_bytes(), player, TOKEN_TTL, false)
        .map_err(|e| BenchError::Token(e.to_string()))
}

/// `message` with `authorization: Bearer <token>`.
pub(crate) fn authed<T>(token: &str, message: T) -> Request<T> {
    let mut request = Request::new(message);
    if let Ok(value) = MetadataValue::try_from(format!("Bearer {token}")) {
        request.metadata_mut().insert("authorization", value);
    }
    request
}

/// A unary request with the token and a deadline.
pub(crate) fn unary<T>(token: &str, message: T) -> Request<T> {
    let mut request = authed(token, message);
    request.set_timeout(Duration::from_secs(30));
    request
}

/// The name of a gRPC status code, as reported (`DEADLINE_EXCEEDED`, ...).
pub(crate) fn code_name(status: &Status) -> String {
    let name = format!("{:?}", status.code());
    // `DeadlineExceeded` -> `DEADLINE_EXCEEDED`
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}
