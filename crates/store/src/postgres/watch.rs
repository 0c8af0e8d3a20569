//! Change notification across processes: one LISTEN connection per store on [`CHANNEL`] feeds
//! the in-process [`Notifier`]; after a lost connection every watched game's version is read
//! again, since notifications sent meanwhile are gone.

use super::codec::from_db;
use super::games::version_of;
use super::{CHANNEL, PostgresStore};
use crate::StoreError;
use crate::notifier::Notifier;
use sqlx::Row;
use sqlx::postgres::{PgListener, PgPool};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use uuid::Uuid;

/// First wait before the LISTEN task reconnects; it doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(50);
/// Longest wait between the LISTEN task's reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

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
            let listener = open_listener(&store.inner.listen_pool).await?;
            let task = tokio::spawn(run_listener(
                listener,
                store.inner.listen_pool.clone(),
                store.inner.pool.clone(),
                Arc::clone(&store.inner.notifier),
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
    let mut conn = store.inner.pool.acquire().await?;
    let version = version_of(&mut conn, game_id)
        .await?
        .ok_or(StoreError::NotFound(game_id))?;
    store.inner.notifier.notify(game_id, version);
    receiver.borrow_and_update();
    Ok(receiver)
}

/// Opens a LISTEN connection on [`CHANNEL`].
async fn open_listener(listen_pool: &PgPool) -> Result<PgListener, StoreError> {
    let mut listener = PgListener::connect_with(listen_pool).await?;
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

/// Feeds NOTIFY payloads into the notifier, forever. Notifications sent while the connection is
/// down are lost, so after every reconnection it re-reads the versions of all watched games.
async fn run_listener(
    listener: PgListener,
    listen_pool: PgPool,
    pool: PgPool,
    notifier: Arc<Notifier>,
) {
    let mut backoff = MIN_BACKOFF;
    let mut current = Some(listener);
    loop {
        let mut listener = match current.take() {
            Some(listener) => listener,
            None => match open_listener(&listen_pool).await {
                Ok(listener) => {
                    if resync(&pool, &notifier).await.is_err() {
                        backoff = wait(backoff).await;
                        continue;
                    }
                    listener
                }
                Err(_) => {
                    backoff = wait(backoff).await;
                    continue;
                }
            },
        };
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) => {
                    backoff = MIN_BACKOFF;
                    if let Some((game_id, version)) = parse_payload(notification.payload()) {
                        notifier.notify(game_id, version);
                    }
                }
                // The connection was lost and is back (sqlx reconnects and re-LISTENs eagerly):
                // catch up on what was missed meanwhile, or start over if that fails.
                Ok(None) => {
                    if resync(&pool, &notifier).await.is_err() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        drop(listener);
        backoff = wait(backoff).await;
    }
}

/// Waits `backoff` (a reconnection delay, not synchronisation) and returns the next one.
async fn wait(backoff: Duration) -> Duration {
    tokio::time::sleep(backoff).await;
    (backoff * 2).min(MAX_BACKOFF)
}

/// Re-reads the versions of every watched game and notifies them.
async fn resync(pool: &PgPool, notifier: &Notifier) -> Result<(), StoreError> {
    let watched = notifier.watched();
    if watched.is_empty() {
        return Ok(());
    }
    let rows = sqlx::query("SELECT game_id, version FROM games WHERE game_id = ANY($1)")
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
