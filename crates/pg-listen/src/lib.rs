//! The one LISTEN/NOTIFY helper of Hidden Front: a LISTEN connection on given channels that
//! stays up. Whoever follows Postgres notifications (the game store's watchers, matchmaking's
//! lobby: neither depends on the other, hence a crate of its own) needs the same three things,
//! written once here:
//!
//! - a connection of its own, so the LISTEN never takes (or is recycled by) a pool connection
//!   ([`dedicated_pool`]);
//! - reconnecting after the connection is lost, waiting by the one backoff schedule
//!   ([`hidden_front_retry::Backoff`], jittered so replicas that lost one server do not all
//!   come back at once);
//! - telling its user, after every reconnection, that notifications may have been missed
//!   ([`Heard::MayHaveMissed`]): Postgres does not queue them for a listener that was away, so
//!   the user re-reads whatever it follows.
//!
//! A user opens a [`Listen`] (the first LISTEN is done when [`Listen::connect`] returns, so no
//! notification sent after that can be missed unannounced), then calls [`Listen::next`] in a
//! loop, usually in a task of its own.

use hidden_front_retry::Backoff;
use sqlx::postgres::{PgListener, PgNotification, PgPool, PgPoolOptions};
use std::time::Duration;

/// First wait before reconnecting a lost LISTEN connection; it doubles up to
/// [`MAX_RECONNECT_DELAY`].
pub const MIN_RECONNECT_DELAY: Duration = Duration::from_millis(50);

/// Longest wait between reconnection attempts.
pub const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(5);

/// How long opening the LISTEN connection may wait before failing, so an unreachable database
/// is an error (and a retry), not a hang.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What a [`Listen`] heard.
#[derive(Debug)]
pub enum Heard {
    /// A notification on one of the channels (its [`PgNotification::channel`] and
    /// [`PgNotification::payload`]).
    Notification(PgNotification),
    /// The connection was lost and is back, listening on every channel again. Notifications
    /// sent while it was down are gone: re-read what you follow.
    MayHaveMissed,
}

/// A pool of one long-lived connection with `pool`'s connect options, for a [`Listen`]: the
/// LISTEN connection holds its connection for good, so it must not come from a pool that other
/// work shares (it would take one of its connections, and the pool's lifetime limits would
/// recycle it). Connects lazily, on the first [`Listen::connect`].
pub fn dedicated_pool(pool: &PgPool) -> PgPool {
    PgPoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .max_lifetime(None)
        .idle_timeout(None)
        .acquire_timeout(CONNECT_TIMEOUT)
        .connect_lazy_with((*pool.connect_options()).clone())
}

/// A LISTEN connection on a set of channels that reconnects itself; see the module docs.
pub struct Listen {
    pool: PgPool,
    channels: Vec<String>,
    /// `None` while the connection is down (lost, or dropped by [`Listen::reconnect`]).
    listener: Option<PgListener>,
    backoff: Backoff,
}

impl std::fmt::Debug for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listen")
            .field("channels", &self.channels)
            .field("connected", &self.listener.is_some())
            .finish()
    }
}

impl Listen {
    /// Opens a connection from `pool` (give it a [`dedicated_pool`]) and LISTENs on `channels`.
    /// Fails if that first attempt fails, so the caller knows whether it is listening; from
    /// then on every notification is either heard or announced as possibly missed.
    pub async fn connect(pool: &PgPool, channels: &[&str]) -> Result<Listen, sqlx::Error> {
        let channels: Vec<String> = channels.iter().map(|c| (*c).to_owned()).collect();
        let listener = open(pool, &channels).await?;
        Ok(Listen {
            pool: pool.clone(),
            channels,
            listener: Some(listener),
            backoff: Backoff::new(MIN_RECONNECT_DELAY, MAX_RECONNECT_DELAY).jittered(),
        })
    }

    /// The next notification, or [`Heard::MayHaveMissed`] once a lost connection is back. It
    /// never fails: while the database is unreachable it keeps trying, waiting longer after each
    /// failure (up to [`MAX_RECONNECT_DELAY`]), and the schedule starts over after a
    /// notification comes through.
    pub async fn next(&mut self) -> Heard {
        loop {
            let Some(listener) = self.listener.as_mut() else {
                self.backoff.wait().await;
                match open(&self.pool, &self.channels).await {
                    Ok(listener) => {
                        self.listener = Some(listener);
                        return Heard::MayHaveMissed;
                    }
                    Err(error) => {
                        tracing::warn!(%error, channels = ?self.channels, "LISTEN reconnection failed; retrying");
                        continue;
                    }
                }
            };
            match listener.try_recv().await {
                Ok(Some(notification)) => {
                    self.backoff.reset();
                    return Heard::Notification(notification);
                }
                // The connection was lost and sqlx has already opened a new one and listens
                // again (it reconnects eagerly; had that failed, this would be an error).
                Ok(None) => return Heard::MayHaveMissed,
                Err(error) => {
                    tracing::warn!(%error, channels = ?self.channels, "LISTEN connection lost; reconnecting");
                    self.listener = None;
                }
            }
        }
    }

    /// Drops the connection, so that the next [`Listen::next`] opens a new one (after the
    /// backoff's next delay) and reports [`Heard::MayHaveMissed`] again: for a user whose
    /// re-read after a `MayHaveMissed` failed, and who must not trust the connection until a
    /// re-read succeeds.
    pub fn reconnect(&mut self) {
        self.listener = None;
    }
}

/// A new LISTEN connection on `channels`.
async fn open(pool: &PgPool, channels: &[String]) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener
        .listen_all(channels.iter().map(String::as_str))
        .await?;
    Ok(listener)
}
