//! What a public port lets one connection hold, and for how long.
//!
//! A connection costs the process a file descriptor and some memory (hyper's buffers, the TLS or
//! HTTP/2 state) from the moment it is accepted, whether or not it ever sends a request. Without
//! limits, one client with enough sockets fills the process's open files limit: the accept loop
//! then fails, and the health checks, the page and `/metrics` stop answering with everything
//! else (so a load balancer takes the pod out, with every player on it). This crate bounds that:
//!
//! - **Handshake deadline**: a connection must send its first request head (the HTTP/2 preface
//!   and its SETTINGS frame, or an HTTP/1 request head) within [`ConnectionLimits::handshake`]
//!   of being accepted, or it is closed. Slow request heads (one byte every few seconds) are
//!   cut by the same deadline.
//! - **Idle timeout**: a connection with no request in flight for [`ConnectionLimits::idle`]
//!   (an HTTP/1 keep-alive connection between requests, an HTTP/2 connection without streams,
//!   a later request head that never completes) is closed. A stream (`Connect`, `Subscribe`)
//!   is a request in flight for as long as it lasts, and an upgraded WebSocket for its whole
//!   life (its own ping rule finds a silent client). A dead peer under an open stream is found
//!   by the HTTP/2 keepalive, not here.
//! - **Caps**: at most [`ConnectionLimits::max_connections`] open at once on the port, and at
//!   most [`ConnectionLimits::max_per_peer`] from one peer address (0: no per-peer cap, as behind
//!   a load balancer that does not keep client addresses). A connection over a cap is accepted
//!   and closed at once, so it never waits in the kernel's backlog.
//!
//! What is refused or cut is counted (`hf_connections_refused_total`, `hf_connections_cut_total`,
//! by port and reason) and logged at most once per [`LOG_EVERY`] per port. The caps are meant to
//! sit below the process's open files limit with a reserve, so that the ports outside this guard
//! (internal gRPC, metrics and probes) and the database pool always have descriptors left: the
//! binary checks that before it binds anything.
//!
//! [`GuardedListener`] accepts (an `axum::serve::Listener`, and a stream of connections for
//! tonic); [`Guarded`] is the accepted connection; [`InFlightLayer`] counts each connection's
//! requests in flight, on both servers.

mod in_flight;
mod listener;
mod sniff;
mod stream;

pub use in_flight::{InFlight, InFlightBody, InFlightLayer};
pub use listener::GuardedListener;
pub use stream::{Activity, ConnectionInfo, Guarded};

use std::time::Duration;

/// How often a port logs the connections it refused or cut (the metrics count every one).
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// The limits of one public port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Time from accept to the first complete request head.
    pub handshake: Duration,
    /// Time a connection may stay open with no request in flight.
    pub idle: Duration,
    /// Open connections on the port at most.
    pub max_connections: usize,
    /// Open connections from one peer address at most; 0 for no per-peer cap.
    pub max_per_peer: usize,
}

/// Limits that cannot work.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LimitsError {
    /// A zero handshake time would close every connection at once.
    #[error("the handshake time must be more than zero")]
    ZeroHandshake,
    /// A zero idle time would close every connection between two requests.
    #[error("the idle time must be more than zero")]
    ZeroIdle,
    /// A port that accepts nothing.
    #[error("the connection cap must be at least 1")]
    ZeroCap,
}

impl ConnectionLimits {
    /// The limits, or what is wrong with them.
    pub fn validate(self) -> Result<ConnectionLimits, LimitsError> {
        if self.handshake.is_zero() {
            return Err(LimitsError::ZeroHandshake);
        }
        if self.idle.is_zero() {
            return Err(LimitsError::ZeroIdle);
        }
        if self.max_connections == 0 {
            return Err(LimitsError::ZeroCap);
        }
        Ok(self)
    }
}

/// Registers the guard's metrics for `ports` (each label value), so they read 0 before anything
/// happens rather than being absent.
pub fn describe_metrics(ports: &[&'static str]) {
    use hidden_front_metrics_names as names;
    metrics::describe_gauge!(
        names::CONNECTIONS_OPEN,
        "Connections open on a public port."
    );
    metrics::describe_counter!(
        names::CONNECTIONS_REFUSED_TOTAL,
        "Connections a public port turned away at accept (its cap, the peer's cap, the file limit)."
    );
    metrics::describe_counter!(
        names::CONNECTIONS_CUT_TOTAL,
        "Open connections a public port closed: no request head in time, or idle too long."
    );
    for port in ports {
        metrics::gauge!(names::CONNECTIONS_OPEN, names::CONNECTION_PORT => *port).set(0.0);
        for reason in names::CONNECTION_REFUSALS {
            metrics::counter!(names::CONNECTIONS_REFUSED_TOTAL,
                names::CONNECTION_PORT => *port, names::CONNECTION_REASON => reason)
            .absolute(0);
        }
        for reason in names::CONNECTION_CUTS {
            metrics::counter!(names::CONNECTIONS_CUT_TOTAL,
                names::CONNECTION_PORT => *port, names::CONNECTION_REASON => reason)
            .absolute(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_that_cannot_work_are_refused_by_name() {
        let good = ConnectionLimits {
            handshake: Duration::from_secs(5),
            idle: Duration::from_secs(120),
            max_connections: 10,
            max_per_peer: 0,
        };
        assert_eq!(good.validate(), Ok(good));
        let zero = |f: fn(&mut ConnectionLimits)| {
            let mut limits = good;
            f(&mut limits);
            limits.validate().unwrap_err()
        };
        assert_eq!(
            zero(|l| l.handshake = Duration::ZERO),
            LimitsError::ZeroHandshake
        );
        assert_eq!(zero(|l| l.idle = Duration::ZERO), LimitsError::ZeroIdle);
        assert_eq!(zero(|l| l.max_connections = 0), LimitsError::ZeroCap);
    }
}
