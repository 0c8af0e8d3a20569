//! [`GuardedListener`]: accepts under the port's caps and hands out [`Guarded`] connections.

use crate::stream::Guarded;
use crate::{ConnectionLimits, LOG_EVERY};
use futures_util::Stream;
use hidden_front_metrics_names as names;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// How long the accept loop pauses when the process is out of file descriptors, so it does not
/// spin on the same error while the connections it would accept wait in the backlog.
const FILE_LIMIT_PAUSE: Duration = Duration::from_millis(50);

/// A port's listener with its limits.
pub struct GuardedListener {
    listener: TcpListener,
    limits: ConnectionLimits,
    shared: Arc<Shared>,
}

/// What the port's connections share: the counts the caps are checked against, and the log.
struct Shared {
    /// The port's label value (`grpc`, `http`).
    port: &'static str,
    limits: ConnectionLimits,
    counts: Mutex<Counts>,
    log: Mutex<Quiet>,
}

#[derive(Default)]
struct Counts {
    open: usize,
    per_peer: HashMap<IpAddr, usize>,
}

/// Refusals and cuts since the last log line, so a flood logs once per [`LOG_EVERY`].
struct Quiet {
    last: Option<Instant>,
    since_last: HashMap<&'static str, u64>,
}

impl Shared {
    /// Counts a refusal or cut (`kind` is the metric) and logs the tally at most once per
    /// [`LOG_EVERY`].
    fn record(&self, metric: &'static str, reason: &'static str) {
        metrics::counter!(metric, names::CONNECTION_PORT => self.port,
            names::CONNECTION_REASON => reason)
        .increment(1);
        let mut log = self.log.lock();
        *log.since_last.entry(reason).or_default() += 1;
        let now = Instant::now();
        if log
            .last
            .is_none_or(|last| now.duration_since(last) >= LOG_EVERY)
        {
            let mut tally: Vec<_> = log.since_last.drain().collect();
            tally.sort();
            log.last = Some(now);
            drop(log);
            tracing::warn!(
                port = self.port,
                ?tally,
                max_connections = self.limits.max_connections,
                max_per_peer = self.limits.max_per_peer,
                handshake_ms = self.limits.handshake.as_millis() as u64,
                idle_ms = self.limits.idle.as_millis() as u64,
                "connections refused or cut on a public port (counted in hf_connections_refused_total and hf_connections_cut_total; logged at most every 10 s)"
            );
        }
    }
}

/// One open connection's place in its port's counts, given back when the connection drops.
pub(crate) struct Slot {
    shared: Arc<Shared>,
    peer: IpAddr,
}

impl Slot {
    /// The connection is being closed for `reason` (one of [`names::CONNECTION_CUTS`]).
    pub(crate) fn cut(&self, reason: &'static str) {
        self.shared.record(names::CONNECTIONS_CUT_TOTAL, reason);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.shared.counts.lock();
        counts.open -= 1;
        if self.shared.limits.max_per_peer > 0
            && let Some(n) = counts.per_peer.get_mut(&self.peer)
        {
            *n -= 1;
            if *n == 0 {
                counts.per_peer.remove(&self.peer);
            }
        }
        let open = counts.open;
        drop(counts);
        metrics::gauge!(names::CONNECTIONS_OPEN, names::CONNECTION_PORT => self.shared.port)
            .set(open as f64);
    }
}

impl GuardedListener {
    /// `listener` under `limits`; `port` names it in metrics and logs (one of
    /// [`names::CONNECTION_PORTS`]).
    pub fn new(
        listener: TcpListener,
        port: &'static str,
        limits: ConnectionLimits,
    ) -> GuardedListener {
        GuardedListener {
            listener,
            limits,
            shared: Arc::new(Shared {
                port,
                limits,
                counts: Mutex::new(Counts::default()),
                log: Mutex::new(Quiet {
                    last: None,
                    since_last: HashMap::new(),
                }),
            }),
        }
    }

    /// The address the port is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Open connections on the port now.
    pub fn open(&self) -> usize {
        self.shared.counts.lock().open
    }

    /// The next connection within the caps. Connections over a cap are closed as they come;
    /// accept errors (the file limit among them) are counted and waited out, never returned.
    pub async fn accept(&mut self) -> (Guarded<TcpStream>, SocketAddr) {
        loop {
            let (stream, remote) = match self.listener.accept().await {
                Ok(accepted) => accepted,
                Err(error) => {
                    if is_file_limit(&error) {
                        self.shared
                            .record(names::CONNECTIONS_REFUSED_TOTAL, "file_limit");
                        tokio::time::sleep(FILE_LIMIT_PAUSE).await;
                    } else {
                        // A connection reset before it was accepted, and the like: its own.
                        tracing::debug!(%error, port = self.shared.port, "accept failed");
                    }
                    continue;
                }
            };
            let Some(slot) = self.take_slot(remote.ip()) else {
                // Dropped here: closed at once, with nothing read.
                drop(stream);
                continue;
            };
            // Answers are small and latency-bound: never let Nagle's algorithm hold one back.
            let _ = stream.set_nodelay(true);
            let guarded = Guarded::new(
                stream,
                remote,
                self.limits.handshake,
                self.limits.idle,
                slot,
            );
            return (guarded, remote);
        }
    }

    /// The accepted connections as a stream, as tonic's `serve_with_incoming` takes them.
    pub fn into_incoming(self) -> impl Stream<Item = io::Result<Guarded<TcpStream>>> + Send {
        futures_util::stream::unfold(self, |mut listener| async move {
            let (connection, _) = listener.accept().await;
            Some((Ok(connection), listener))
        })
    }

    /// A place for a connection from `peer`, or `None` (counted) when a cap is reached.
    fn take_slot(&self, peer: IpAddr) -> Option<Slot> {
        let limits = self.limits;
        let mut counts = self.shared.counts.lock();
        if counts.open >= limits.max_connections {
            drop(counts);
            self.shared
                .record(names::CONNECTIONS_REFUSED_TOTAL, "port_limit");
            return None;
        }
        if limits.max_per_peer > 0 {
            let from_peer = counts.per_peer.entry(peer).or_default();
            if *from_peer >= limits.max_per_peer {
                drop(counts);
                self.shared
                    .record(names::CONNECTIONS_REFUSED_TOTAL, "peer_limit");
                return None;
            }
            *from_peer += 1;
        }
        counts.open += 1;
        let open = counts.open;
        drop(counts);
        metrics::gauge!(names::CONNECTIONS_OPEN, names::CONNECTION_PORT => self.shared.port)
            .set(open as f64);
        Some(Slot {
            shared: self.shared.clone(),
            peer,
        })
    }
}

/// EMFILE (this process's open files limit) or ENFILE (the system's).
fn is_file_limit(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(24 | 23))
}

impl axum::serve::Listener for GuardedListener {
    type Io = Guarded<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        GuardedListener::accept(self).await
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        GuardedListener::local_addr(self)
    }
}
