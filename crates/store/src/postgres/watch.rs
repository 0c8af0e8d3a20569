//! Change notification across processes: one LISTEN connection per store on [`CHANNEL`]
//! ([`crate::listen`], which reconnects it) feeds the in-process [`Notifier`]; after a lost
//! connection every watched game's version is read again, since notifications sent meanwhile
//! are gone.

use super::codec::from_db;
use super::games::version_of;
use super::recent::RecentEvents;
use super::{CHANNEL, LIFECYCLE_CHANNEL, PostgresStore, STATUS_CHANNEL};
use crate::StoreError;
use crate::listen::{Heard, Listen};
use crate::notifier::Notifier;
use crate::notifier::advance_position;
use sqlx::Row;
use sqlx::postgres::PgPool;
use std::sync::Arc;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use uuid::Uuid;

/// The [`STATUS_CHANNEL`] payload for "every game".
pub(super) const EVERY_GAME: &str = "*";

/// Aborts the LISTEN task when the store goes away.
#[derive(Debug)]
pub(super) struct ListenerTask(pub(super) JoinHandle<()>);

impl Drop for ListenerTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts the LISTEN task unless it runs already. The first LISTEN happens here, before the
/// caller reads any version, so no commit after that read can go unnoticed; a failure is
/// returned (and the next call tries again).
pub(super) async fn ensure_listening(store: &PostgresStore) -> Result<(), StoreError> {
    store
        .inner
        .listener
        .get_or_try_init(|| async {
            let listen = Listen::connect(
                &store.inner.listen_pool,
                &[CHANNEL, LIFECYCLE_CHANNEL, STATUS_CHANNEL],
            )
            .await?;
            let task = tokio::spawn(run_listener(
                listen,
                Arc::clone(&store.inner.pool),
                Arc::clone(&store.inner.notifier),
                Arc::clone(&store.inner.status),
                Arc::clone(&store.inner.recent),
                Arc::clone(&store.inner.fact_position),
            ));
            Ok::<_, StoreError>(ListenerTask(task))
        })
        .await?;
    Ok(())
}

#[tracing::instrument(name = "store.watch", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id))]
pub(super) async fn watch(
    store: &PostgresStore,
    game_id: Uuid,
) -> Result<watch::Receiver<u64>, StoreError> {
    // Order matters: LISTEN, then subscribe, then read the version. Any commit after the read
    // reaches the channel, by our own notify or by NOTIFY.
    ensure_listening(store).await?;
    let mut receiver = store.inner.notifier.subscribe(game_id);
    let mut conn = store.pool().acquire().await?;
    let version = version_of(&mut conn, game_id)
        .await?
        .ok_or(StoreError::NotFound(game_id))?;
    store.inner.notifier.notify(game_id, version);
    receiver.borrow_and_update();
    Ok(receiver)
}

/// Feeds NOTIFY payloads into the notifier (games) and the outbox's position (lifecycle facts),
/// forever. Notifications sent while the connection is down are lost, so after every
/// reconnection it re-reads the versions of all watched games and the outbox's position (and if
/// that fails, drops the connection and tries again after the next reconnection).
async fn run_listener(
    mut listen: Listen,
    pool: super::SharedPool,
    notifier: Arc<Notifier>,
    status: Arc<Notifier>,
    recent: Arc<RecentEvents>,
    fact_position: Arc<watch::Sender<u64>>,
) {
    loop {
        match listen.next().await {
            Heard::Notification(notification) if notification.channel() == STATUS_CHANNEL => {
                match notification.payload() {
                    EVERY_GAME => status.bump_all(),
                    payload => {
                        if let Ok(game_id) = payload.parse() {
                            status.bump(game_id);
                        }
                    }
                }
            }
            Heard::Notification(notification) if notification.channel() == LIFECYCLE_CHANNEL => {
                if let Ok(position) = notification.payload().parse() {
                    advance_position(&fact_position, position);
                }
            }
            Heard::Notification(notification) => {
                // Held while our own write to the game is in flight: it announces the version
                // once its events are remembered (`recent.rs`).
                if let Some((game_id, version)) = parse_payload(notification.payload())
                    && !recent.hold(game_id, version)
                {
                    notifier.notify(game_id, version);
                }
            }
            Heard::MayHaveMissed => {
                // A status change may have gone unheard too: every watcher reads again.
                status.bump_all();
                // The store's pool now: it may have been renewed since this task began.
                let pool = pool.read().clone();
                let resynced = match resync(&pool, &notifier).await {
                    Ok(()) => resync_facts(&pool, &fact_position).await,
                    Err(error) => Err(error),
                };
                if resynced.is_err() {
                    listen.reconnect();
                }
            }
        }
    }
}

/// Re-reads the outbox's position.
async fn resync_facts(pool: &PgPool, fact_position: &watch::Sender<u64>) -> Result<(), StoreError> {
    advance_position(fact_position, super::outbox::last_position(pool).await?);
    Ok(())
}

/// Re-reads the versions of every watched game and notifies them.
async fn resync(pool: &PgPool, notifier: &Notifier) -> Result<(), StoreError> {
    let watched = notifier.watched();
    if watched.is_empty() {
        return Ok(());
    }
    let rows = sqlx::query(
        "SELECT game_id, COALESCE(head_version, version) AS version FROM games \
         WHERE game_id = ANY($1)",
    )
    .bind(watched)
    .fetch_all(pool)
    .await?;
    for row in rows {
        let game_id: Uuid = row.try_get("game_id")?;
        let version = from_db(game_id, "version", row.try_get("version")?)?;
        notifier.notify(game_id, version);
    }
    Ok(())
}

/// Parses a `<game_id>:<version>` payload; `None` for anything else (ignored, never a panic).
fn parse_payload(payload: &str) -> Option<(Uuid, u64)> {
    let (game_id, version) = payload.split_once(':')?;
    Some((Uuid::parse_str(game_id).ok()?, version.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_parse_or_are_ignored() {
        let game = Uuid::new_v4();
        assert_eq!(parse_payload(&format!("{game}:17")), Some((game, 17)));
        assert_eq!(parse_payload("nonsense"), None);
        assert_eq!(parse_payload(&format!("{game}:-1")), None);
        assert_eq!(parse_payload(":3"), None);
    }
}
