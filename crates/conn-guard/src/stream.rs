//! [`Guarded`]: an accepted connection that closes itself when it holds the port without use.

use crate::listener::Slot;
use crate::sniff::Sniff;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// What a connection is doing, shared between its reader (which closes it when idle) and the
/// requests it carries ([`crate::InFlightLayer`], which counts them).
#[derive(Debug)]
pub struct Activity {
    /// When the connection was accepted; the times below count from it.
    since: Instant,
    /// Requests in flight (a stream counts until it ends).
    in_flight: AtomicUsize,
    /// The connection was upgraded (a WebSocket): it is in use until it closes.
    upgraded: AtomicBool,
    /// Milliseconds from `since` to when the last request in flight ended.
    idle_since_ms: AtomicU64,
}

impl Activity {
    fn new(since: Instant) -> Activity {
        Activity {
            since,
            in_flight: AtomicUsize::new(0),
            upgraded: AtomicBool::new(false),
            idle_since_ms: AtomicU64::new(0),
        }
    }

    /// A request began.
    pub(crate) fn begin(&self) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
    }

    /// A request ended (its answer sent, or abandoned).
    pub(crate) fn end(&self) {
        if self.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            let ms = u64::try_from(self.since.elapsed().as_millis()).unwrap_or(u64::MAX);
            self.idle_since_ms.store(ms, Ordering::Release);
        }
    }

    /// The connection now speaks another protocol (a WebSocket), whose own rules find a silent
    /// peer.
    pub(crate) fn upgrade(&self) {
        self.upgraded.store(true, Ordering::Release);
    }

    /// When the connection, idle since its last request, may be closed; `None` while a request
    /// is in flight or the connection was upgraded.
    fn idle_deadline(&self, idle: Duration) -> Option<Instant> {
        if self.upgraded.load(Ordering::Acquire) || self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = Duration::from_millis(self.idle_since_ms.load(Ordering::Acquire));
        Some(self.since + since + idle)
    }
}

/// What each request on a guarded connection knows of it (tonic puts it in every request's
/// extensions; axum's `ConnectInfo` carries it too).
#[derive(Debug, Clone)]
pub struct ConnectionInfo {
    /// The peer's address.
    pub remote: SocketAddr,
    /// The connection's activity.
    pub activity: Arc<Activity>,
}

/// An accepted connection under its port's limits: its reads fail (so the server closes it) when
/// the handshake does not complete within the handshake time, or when no request has been in
/// flight for the idle time. Writes pass through untouched.
pub struct Guarded<IO> {
    io: IO,
    info: ConnectionInfo,
    sniff: Sniff,
    handshake: Duration,
    idle: Duration,
    /// The next moment a limit is checked.
    timer: Pin<Box<Sleep>>,
    /// Counts the connection on its port and peer until dropped.
    slot: Slot,
}

impl<IO> Guarded<IO> {
    pub(crate) fn new(
        io: IO,
        remote: SocketAddr,
        handshake: Duration,
        idle: Duration,
        slot: Slot,
    ) -> Guarded<IO> {
        let now = Instant::now();
        Guarded {
            io,
            info: ConnectionInfo {
                remote,
                activity: Arc::new(Activity::new(now)),
            },
            sniff: Sniff::new(),
            handshake,
            idle,
            timer: Box::pin(tokio::time::sleep_until(now + handshake)),
            slot,
        }
    }

    /// The connection's address and activity.
    pub fn info(&self) -> &ConnectionInfo {
        &self.info
    }

    /// The connection underneath.
    pub fn get_ref(&self) -> &IO {
        &self.io
    }

    /// Whether a limit has run out: checked whenever the timer fires, then the timer is set to
    /// the next moment one could.
    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        while self.timer.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            let next = if !self.sniff.is_done() {
                self.slot.cut("handshake_timeout");
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "no request head within the handshake time ({} ms)",
                        self.handshake.as_millis()
                    ),
                ));
            } else {
                match self.info.activity.idle_deadline(self.idle) {
                    Some(deadline) if deadline <= now => {
                        self.slot.cut("idle_timeout");
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!(
                                "no request in flight for the idle time ({} ms)",
                                self.idle.as_millis()
                            ),
                        ));
                    }
                    Some(deadline) => deadline,
                    // Busy: look again an idle time from now (a request that ends meanwhile
                    // leaves at most that much on top of the idle time).
                    None => now + self.idle,
                }
            };
            self.timer.as_mut().reset(next);
        }
        Ok(())
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Guarded<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check(cx)?;
        let before = buf.filled().len();
        let read = Pin::new(&mut this.io).poll_read(cx, buf);
        if !this.sniff.is_done() && matches!(read, Poll::Ready(Ok(()))) {
            this.sniff.feed(&buf.filled()[before..]);
            if this.sniff.is_done() {
                // From here the idle time counts (the timer finds the first request in flight).
                let next = Instant::now() + this.idle;
                this.timer.as_mut().reset(next);
            }
        }
        read
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Guarded<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

impl<IO> tonic::transport::server::Connected for Guarded<IO> {
    type ConnectInfo = ConnectionInfo;

    fn connect_info(&self) -> ConnectionInfo {
        self.info.clone()
    }
}
