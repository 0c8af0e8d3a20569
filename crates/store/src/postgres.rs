//! [`PostgresStore`]: games in Postgres, shared by every replica of every service.
//!
//! Schema (`migrations/0001_games.sql`): `games` holds one snapshot row per game with its
//! `version`; `game_events` is the log, primary key `(game_id, seq)`; `game_commands` remembers
//! each applied command's answer by `(game_id, idempotency_key)`; `game_creations` maps creation
//! keys to games; `presence` holds gateways' leased connection reports.
//!
//! An append is one transaction guarded by the version (`UPDATE games ... WHERE version =
//! expected`), so two replicas racing on a game cannot both win; the loser gets
//! [`StoreError::VersionConflict`] and re-judges. Commits announce themselves with
//! `pg_notify('hf_game_events', '<game_id>:<version>')`; one LISTEN connection per store feeds
//! the in-process [`Notifier`], so watchers wake for appends made by any process.
//!
//! Queries are plain `sqlx::query` strings (no compile-time checked macros), so building needs no
//! database and no `.sqlx/` cache; the conformance suite checks them against a real Postgres.

use crate::notifier::Notifier;
use crate::timers::{Timer, TimerChange, TimerKind, TimerSlot, TimerStore, TurnTimerChange};
use crate::{
    Append, Created, EndedRecord, GameMeta, GameRecord, GameStore, GameSummary, Presence,
    StoreError, StoredEvent, TimeControl,
};
use async_trait::async_trait;
use hidden_front_rules::{Event, Game, Phase, Side};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions, PgRow};
use sqlx::types::time::OffsetDateTime;
use sqlx::{PgConnection, Row};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::{OnceCell, watch};
use tokio::task::JoinHandle;
use uuid::Uuid;

/// The embedded migrations (`migrations/` at the workspace root), so the one binary can run
/// `hidden-front migrate` without the files beside it, and tests can migrate fresh databases.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// The NOTIFY channel announcing committed appends; payload `<game_id>:<version>`.
pub const CHANNEL: &str = "hf_game_events";

/// Default pool size of [`PostgresStore::connect`]: enough for a busy session replica, small
/// enough that a dozen replicas fit under Postgres' default 100 connections.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 16;

/// How long [`PostgresStore::connect`] (and every later checkout) waits for a connection before
/// failing, so an unreachable database is an error, not a hang.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// First wait before the LISTEN task reconnects; it doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(50);
/// Longest wait between the LISTEN task's reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Games in Postgres. Cheap to clone (all clones share one pool, one notifier and one LISTEN
/// connection); the LISTEN task stops when the last clone is dropped or [`PostgresStore::close`]
/// is called.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    pool: PgPool,
    /// A pool of one connection, for the LISTEN connection only, so it never takes a connection
    /// from (or is recycled by) the main pool.
    listen_pool: PgPool,
    notifier: Arc<Notifier>,
    /// The LISTEN task, started by the first [`GameStore::watch`].
    listener: OnceCell<ListenerTask>,
}

/// Aborts the LISTEN task when the store goes away.
#[derive(Debug)]
struct ListenerTask(JoinHandle<()>);

impl Drop for ListenerTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (a `postgres://` URL) with a pool of
    /// [`DEFAULT_MAX_CONNECTIONS`] and a [`DEFAULT_CONNECT_TIMEOUT`]. Does not migrate: call
    /// [`PostgresStore::migrate`] (or `hidden-front migrate`) first.
    pub async fn connect(url: &str) -> Result<PostgresStore, StoreError> {
        PostgresStore::connect_with(url, DEFAULT_MAX_CONNECTIONS).await
    }

    /// [`PostgresStore::connect`] with a chosen pool size (the LISTEN connection comes on top).
    pub async fn connect_with(
        url: &str,
        max_connections: u32,
    ) -> Result<PostgresStore, StoreError> {
        let mut options = PgConnectOptions::from_str(url)?;
        if options.get_application_name().is_none() {
            options = options.application_name("hidden-front");
        }
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(DEFAULT_CONNECT_TIMEOUT)
            .connect_with(options)
            .await?;
        Ok(PostgresStore::from_pool(pool))
    }

    /// A store over an existing pool (tests, or a process sharing one pool between services).
    /// The LISTEN connection is opened separately, with the pool's connect options.
    pub fn from_pool(pool: PgPool) -> PostgresStore {
        let listen_pool = PgPoolOptions::new()
            .max_connections(1)
            .min_connections(0)
            .max_lifetime(None)
            .idle_timeout(None)
            .acquire_timeout(DEFAULT_CONNECT_TIMEOUT)
            .connect_lazy_with((*pool.connect_options()).clone());
        PostgresStore {
            inner: Arc::new(Inner {
                pool,
                listen_pool,
                notifier: Arc::new(Notifier::new()),
                listener: OnceCell::new(),
            }),
        }
    }

    /// Applies the embedded migrations that the database lacks (sqlx takes an advisory lock, so
    /// replicas starting together do not collide).
    #[tracing::instrument(name = "store.migrate", skip_all, fields(db.system = "postgresql"))]
    pub async fn migrate(&self) -> Result<(), StoreError> {
        MIGRATOR.run(&self.inner.pool).await?;
        Ok(())
    }

    /// The pool, for other tables of the same database (timers, outbox) and for health checks.
    pub fn pool(&self) -> &PgPool {
        &self.inner.pool
    }

    /// Stops the LISTEN task and closes both pools, waiting for checked-out connections to come
    /// back: for a graceful shutdown. Every clone of this store is unusable afterwards.
    pub async fn close(&self) {
        if let Some(task) = self.inner.listener.get() {
            task.0.abort();
        }
        self.inner.listen_pool.close().await;
        self.inner.pool.close().await;
    }

    /// Starts the LISTEN task unless it runs already. The first LISTEN happens here, before the
    /// caller reads any version, so no commit after that read can go unnoticed; a failure is
    /// returned (and the next call tries again).
    async fn ensure_listening(&self) -> Result<(), StoreError> {
        self.inner
            .listener
            .get_or_try_init(|| async {
                let listener = open_listener(&self.inner.listen_pool).await?;
                let task = tokio::spawn(run_listener(
                    listener,
                    self.inner.listen_pool.clone(),
                    self.inner.pool.clone(),
                    Arc::clone(&self.inner.notifier),
                ));
                Ok::<_, StoreError>(ListenerTask(task))
            })
            .await?;
        Ok(())
    }

    /// The game's version, or `None` if there is no such game.
    async fn version_of(conn: &mut PgConnection, game_id: Uuid) -> Result<Option<u64>, StoreError> {
        let version: Option<i64> =
            sqlx::query_scalar("SELECT version FROM games WHERE game_id = $1")
                .bind(game_id)
                .fetch_optional(conn)
                .await?;
        version
            .map(|version| from_db(game_id, "version", version))
            .transpose()
    }

    /// The stored answer of a command, if it was applied.
    async fn stored_response(
        conn: &mut PgConnection,
        game_id: Uuid,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT response FROM game_commands WHERE game_id = $1 AND idempotency_key = $2",
        )
        .bind(game_id)
        .bind(key)
        .fetch_optional(conn)
        .await?)
    }

    /// Fails with [`StoreError::NotFound`] unless the game exists.
    async fn require_game(&self, game_id: Uuid) -> Result<(), StoreError> {
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM games WHERE game_id = $1)")
                .bind(game_id)
                .fetch_one(&self.inner.pool)
                .await?;
        if exists {
            Ok(())
        } else {
            Err(StoreError::NotFound(game_id))
        }
    }
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

/// A version or seq as Postgres stores it (`bigint`). Values beyond `i64::MAX` cannot occur in a
/// real game; they saturate, so a guard on such a version simply never matches.
fn to_db(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A stored version or seq; negative means the row was tampered with.
fn from_db(game_id: Uuid, what: &str, value: i64) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt {
        game_id,
        reason: format!("{what} is negative ({value})"),
    })
}

/// A collection length as a SQL `LIMIT`.
fn to_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// Encodes a value for a `jsonb` column. The engine types always encode; a failure would be a bug
/// in them, reported rather than panicking.
fn encode_json<T: Serialize>(
    game_id: Uuid,
    what: &str,
    value: &T,
) -> Result<serde_json::Value, StoreError> {
    serde_json::to_value(value).map_err(|error| StoreError::Corrupt {
        game_id,
        reason: format!("{what} does not encode as JSON: {error}"),
    })
}

/// Decodes a `jsonb` column.
fn decode_json<T: DeserializeOwned>(
    game_id: Uuid,
    what: &str,
    value: serde_json::Value,
) -> Result<T, StoreError> {
    serde_json::from_value(value).map_err(|error| StoreError::Corrupt {
        game_id,
        reason: format!("{what} does not decode: {error}"),
    })
}

/// The `phase` column's text: the phase's serde name, so it follows the engine's own naming.
fn phase_text(game_id: Uuid, phase: Phase) -> Result<String, StoreError> {
    match encode_json(game_id, "phase", &phase)? {
        serde_json::Value::String(text) => Ok(text),
        other => Err(StoreError::Corrupt {
            game_id,
            reason: format!("phase encodes as {other}, not a string"),
        }),
    }
}

/// Reads the `phase` column.
fn parse_phase(game_id: Uuid, text: String) -> Result<Phase, StoreError> {
    decode_json(game_id, "phase", serde_json::Value::String(text))
}

/// The events as `jsonb` values, with their seqs from `first_seq`.
fn encode_events(
    game_id: Uuid,
    first_seq: u64,
    events: &[Event],
) -> Result<(Vec<i64>, Vec<serde_json::Value>), StoreError> {
    let mut seqs = Vec::with_capacity(events.len());
    let mut values = Vec::with_capacity(events.len());
    for (offset, event) in (0u64..).zip(events) {
        seqs.push(to_db(first_seq.saturating_add(offset)));
        values.push(encode_json(game_id, "event", event)?);
    }
    Ok((seqs, values))
}

/// Inserts events in one statement.
async fn insert_events(
    conn: &mut PgConnection,
    game_id: Uuid,
    seqs: Vec<i64>,
    values: Vec<serde_json::Value>,
    trace_parent: Option<&str>,
) -> Result<(), sqlx::Error> {
    if seqs.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO game_events (game_id, seq, event, trace_parent) \
         SELECT $1, seq, event, $4 FROM UNNEST($2::bigint[], $3::jsonb[]) AS e (seq, event)",
    )
    .bind(game_id)
    .bind(seqs)
    .bind(values)
    .bind(trace_parent)
    .execute(conn)
    .await?;
    Ok(())
}

/// Whether a database error is a unique (or primary key) violation.
fn is_unique_violation(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|error| error.is_unique_violation())
}

/// Whether a database error is a unique violation of the named constraint.
fn violates(error: &sqlx::Error, constraint: &str) -> bool {
    error
        .as_database_error()
        .is_some_and(|error| error.is_unique_violation() && error.constraint() == Some(constraint))
}

/// Whether a database error is a foreign key violation (a row for a game that does not exist).
fn is_foreign_key_violation(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|error| error.is_foreign_key_violation())
}

/// A `games` row's metadata (columns `game_id`, `rules`, `time_control`, `south_player`,
/// `north_player`).
fn meta_of(row: &PgRow) -> Result<GameMeta, StoreError> {
    let game_id: Uuid = row.try_get("game_id")?;
    let time_control: TimeControl =
        decode_json(game_id, "time control", row.try_get("time_control")?)?;
    Ok(GameMeta {
        game_id,
        rules: row.try_get("rules")?,
        time_control,
        south_player: row.try_get("south_player")?,
        north_player: row.try_get("north_player")?,
    })
}

/// The sides connected at `now` for a game, or `None` if there is no such game.
async fn presence_at(
    pool: &PgPool,
    game_id: Uuid,
    now: SystemTime,
) -> Result<Option<Presence>, StoreError> {
    // The latest end of each side's unexpired "connected" leases (NULL: none, the side is away).
    let row = sqlx::query(
        "SELECT \
           (SELECT max(p.lease_until) FROM presence p WHERE p.game_id = g.game_id \
              AND p.side = 'south' AND p.connected AND p.lease_until > $2) AS south, \
           (SELECT max(p.lease_until) FROM presence p WHERE p.game_id = g.game_id \
              AND p.side = 'north' AND p.connected AND p.lease_until > $2) AS north \
         FROM games g WHERE g.game_id = $1",
    )
    .bind(game_id)
    .bind(OffsetDateTime::from(now))
    .fetch_optional(pool)
    .await?;
    row.map(|row| {
        let south: Option<OffsetDateTime> = row.try_get("south")?;
        let north: Option<OffsetDateTime> = row.try_get("north")?;
        Ok(Presence {
            connected_until: [south.map(SystemTime::from), north.map(SystemTime::from)],
        })
    })
    .transpose()
}

/// The `side` column's text.
fn side_text(side: Side) -> &'static str {
    match side {
        Side::South => "south",
        Side::North => "north",
    }
}

/// Arms a timer's slot, replacing what was there and dropping any claim on it.
async fn upsert_timer(conn: &mut PgConnection, timer: &Timer) -> Result<(), StoreError> {
    let result = sqlx::query(
        "INSERT INTO game_timers (game_id, slot, kind, side, armed_version, fire_at) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (game_id, slot) DO UPDATE SET kind = EXCLUDED.kind, side = EXCLUDED.side, \
           armed_version = EXCLUDED.armed_version, fire_at = EXCLUDED.fire_at, \
           claimed_by = NULL, claimed_until = NULL, armed_at = now()",
    )
    .bind(timer.game_id)
    .bind(timer.slot().name())
    .bind(timer.kind.name())
    .bind(side_text(timer.side))
    .bind(to_db(timer.armed_version))
    .bind(OffsetDateTime::from(timer.fire_at))
    .execute(conn)
    .await;
    match result {
        Ok(_) => Ok(()),
        Err(error) if is_foreign_key_violation(&error) => Err(StoreError::NotFound(timer.game_id)),
        Err(error) => Err(error.into()),
    }
}

/// Writes an append's timer changes (inside its transaction).
async fn apply_timer_change(
    conn: &mut PgConnection,
    game_id: Uuid,
    change: &TimerChange,
) -> Result<(), StoreError> {
    if change.clear_all {
        sqlx::query("DELETE FROM game_timers WHERE game_id = $1")
            .bind(game_id)
            .execute(&mut *conn)
            .await?;
    }
    match change.turn {
        Some(TurnTimerChange::Arm(timer)) => upsert_timer(&mut *conn, &timer).await?,
        Some(TurnTimerChange::Retag { armed_version }) => {
            sqlx::query(
                "UPDATE game_timers SET armed_version = $2, claimed_by = NULL, claimed_until = NULL \
                 WHERE game_id = $1 AND slot = 'turn'",
            )
            .bind(game_id)
            .bind(to_db(armed_version))
            .execute(&mut *conn)
            .await?;
        }
        None => {}
    }
    for timer in &change.reconnect {
        upsert_timer(&mut *conn, timer).await?;
    }
    Ok(())
}

/// A `game_timers` row as a [`Timer`].
fn timer_of(row: &PgRow) -> Result<Timer, StoreError> {
    let game_id: Uuid = row.try_get("game_id")?;
    let corrupt = |what: &str, value: String| StoreError::Corrupt {
        game_id,
        reason: format!("timer {what} {value:?} is unknown"),
    };
    let kind: String = row.try_get("kind")?;
    let kind = TimerKind::from_name(&kind).ok_or_else(|| corrupt("kind", kind.clone()))?;
    let side: String = row.try_get("side")?;
    let side = match side.as_str() {
        "south" => Side::South,
        "north" => Side::North,
        _ => return Err(corrupt("side", side)),
    };
    let fire_at: OffsetDateTime = row.try_get("fire_at")?;
    Ok(Timer {
        game_id,
        kind,
        side,
        armed_version: from_db(game_id, "armed version", row.try_get("armed_version")?)?,
        fire_at: fire_at.into(),
    })
}

#[async_trait]
impl TimerStore for PostgresStore {
    #[tracing::instrument(name = "store.arm_timer", level = "info", skip_all, fields(db.system = "postgresql", game_id = %timer.game_id))]
    async fn arm_timer(&self, timer: &Timer) -> Result<(), StoreError> {
        let mut conn = self.inner.pool.acquire().await?;
        upsert_timer(&mut conn, timer).await
    }

    #[tracing::instrument(name = "store.cancel_timer", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id))]
    async fn cancel_timer(&self, game_id: Uuid, slot: TimerSlot) -> Result<bool, StoreError> {
        let deleted = sqlx::query("DELETE FROM game_timers WHERE game_id = $1 AND slot = $2")
            .bind(game_id)
            .bind(slot.name())
            .execute(&self.inner.pool)
            .await?
            .rows_affected();
        Ok(deleted > 0)
    }

    #[tracing::instrument(name = "store.timers_of", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id))]
    async fn timers_of(&self, game_id: Uuid) -> Result<Vec<Timer>, StoreError> {
        let rows = sqlx::query(
            "SELECT game_id, kind, side, armed_version, fire_at FROM game_timers \
             WHERE game_id = $1 ORDER BY fire_at, slot",
        )
        .bind(game_id)
        .fetch_all(&self.inner.pool)
        .await?;
        rows.iter().map(timer_of).collect()
    }

    #[tracing::instrument(name = "store.claim_due", level = "debug", skip_all, fields(db.system = "postgresql", limit = limit))]
    async fn claim_due(
        &self,
        owner: &str,
        horizon: SystemTime,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<Timer>, StoreError> {
        // Rows another claimer is locking right now are skipped, not waited for: several clock
        // processes claim disjoint sets.
        let rows = sqlx::query(
            "UPDATE game_timers t \
             SET claimed_by = $1, claimed_until = greatest(t.fire_at, now()) + $3 * interval '1 millisecond' \
             FROM (SELECT game_id, slot FROM game_timers \
                   WHERE fire_at <= $2 AND (claimed_until IS NULL OR claimed_until < now()) \
                   ORDER BY fire_at LIMIT $4 FOR UPDATE SKIP LOCKED) due \
             WHERE t.game_id = due.game_id AND t.slot = due.slot \
             RETURNING t.game_id, t.kind, t.side, t.armed_version, t.fire_at",
        )
        .bind(owner)
        .bind(OffsetDateTime::from(horizon))
        .bind(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX))
        .bind(to_limit(limit))
        .fetch_all(&self.inner.pool)
        .await?;
        let mut timers = rows.iter().map(timer_of).collect::<Result<Vec<_>, _>>()?;
        timers.sort_by_key(|t| t.fire_at);
        Ok(timers)
    }

    #[tracing::instrument(name = "store.release_timer", level = "info", skip_all, fields(db.system = "postgresql", game_id = %timer.game_id))]
    async fn release_timer(&self, timer: &Timer, retry_at: SystemTime) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE game_timers SET claimed_until = $5 \
             WHERE game_id = $1 AND slot = $2 AND armed_version = $3 AND fire_at = $4",
        )
        .bind(timer.game_id)
        .bind(timer.slot().name())
        .bind(to_db(timer.armed_version))
        .bind(OffsetDateTime::from(timer.fire_at))
        .bind(OffsetDateTime::from(retry_at))
        .execute(&self.inner.pool)
        .await?;
        Ok(())
    }

    #[tracing::instrument(name = "store.complete_timers", level = "debug", skip_all, fields(db.system = "postgresql", count = timers.len()))]
    async fn complete_timers(&self, timers: &[Timer]) -> Result<u64, StoreError> {
        if timers.is_empty() {
            return Ok(0);
        }
        let game_ids: Vec<Uuid> = timers.iter().map(|t| t.game_id).collect();
        let slots: Vec<&str> = timers.iter().map(|t| t.slot().name()).collect();
        let versions: Vec<i64> = timers.iter().map(|t| to_db(t.armed_version)).collect();
        let fire_ats: Vec<OffsetDateTime> = timers
            .iter()
            .map(|t| OffsetDateTime::from(t.fire_at))
            .collect();
        let deleted = sqlx::query(
            "DELETE FROM game_timers t \
             USING UNNEST($1::uuid[], $2::text[], $3::bigint[], $4::timestamptz[]) \
               AS f (game_id, slot, armed_version, fire_at) \
             WHERE t.game_id = f.game_id AND t.slot = f.slot \
               AND t.armed_version = f.armed_version AND t.fire_at = f.fire_at",
        )
        .bind(game_ids)
        .bind(slots)
        .bind(versions)
        .bind(fire_ats)
        .execute(&self.inner.pool)
        .await?
        .rows_affected();
        Ok(deleted)
    }

    async fn armed_timer_count(&self) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM game_timers")
            .fetch_one(&self.inner.pool)
            .await?;
        Ok(u64::try_from(count).unwrap_or(0))
    }
}

#[async_trait]
impl GameStore for PostgresStore {
    #[tracing::instrument(name = "store.create", level = "info", skip_all, fields(db.system = "postgresql", game_id = %meta.game_id, event_count = events.len()))]
    async fn create_armed(
        &self,
        creation_key: &str,
        meta: &GameMeta,
        events: &[Event],
        game: &Game,
        timers: &[Timer],
    ) -> Result<Created, StoreError> {
        let game_id = meta.game_id;
        let time_control = encode_json(game_id, "time control", &meta.time_control)?;
        let snapshot = encode_json(game_id, "engine state", game)?;
        let phase = phase_text(game_id, game.phase())?;
        let (seqs, values) = encode_events(game_id, 1, events)?;

        let mut tx = self.inner.pool.begin().await?;
        // Claim the key first: a racing creator with the same key waits here for our outcome.
        let claimed: Option<Uuid> = sqlx::query_scalar(
            "INSERT INTO game_creations (creation_key, game_id) VALUES ($1, $2) \
             ON CONFLICT (creation_key) DO NOTHING RETURNING game_id",
        )
        .bind(creation_key)
        .bind(game_id)
        .fetch_optional(&mut *tx)
        .await?;
        if claimed.is_none() {
            // A new statement sees the committed claim that made ours a no-op.
            let existing: Option<Uuid> =
                sqlx::query_scalar("SELECT game_id FROM game_creations WHERE creation_key = $1")
                    .bind(creation_key)
                    .fetch_optional(&mut *tx)
                    .await?;
            tx.rollback().await?;
            return match existing {
                Some(existing) => Ok(Created {
                    game_id: existing,
                    replayed: true,
                }),
                None => Err(StoreError::Corrupt {
                    game_id,
                    reason: format!("creation key {creation_key:?} conflicts but is not stored"),
                }),
            };
        }
        let inserted = sqlx::query(
            "INSERT INTO games (game_id, rules, time_control, south_player, north_player, \
                                version, phase, snapshot) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(game_id)
        .bind(&meta.rules)
        .bind(time_control)
        .bind(&meta.south_player)
        .bind(&meta.north_player)
        .bind(to_db(events.len() as u64))
        .bind(phase)
        .bind(snapshot)
        .execute(&mut *tx)
        .await;
        match inserted {
            Ok(_) => {}
            Err(error) if is_unique_violation(&error) => {
                tx.rollback().await?;
                return Err(StoreError::AlreadyExists(game_id));
            }
            Err(error) => return Err(error.into()),
        }
        insert_events(&mut tx, game_id, seqs, values, None).await?;
        for timer in timers {
            upsert_timer(&mut tx, timer).await?;
        }
        tx.commit().await?;
        Ok(Created {
            game_id,
            replayed: false,
        })
    }

    #[tracing::instrument(name = "store.load", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id, version = tracing::field::Empty))]
    async fn load(&self, game_id: Uuid) -> Result<Option<GameRecord>, StoreError> {
        let Some(row) = sqlx::query(
            "SELECT game_id, rules, time_control, south_player, north_player, version, snapshot \
             FROM games WHERE game_id = $1",
        )
        .bind(game_id)
        .fetch_optional(&self.inner.pool)
        .await?
        else {
            return Ok(None);
        };
        let version = from_db(game_id, "version", row.try_get("version")?)?;
        tracing::Span::current().record("version", version);
        Ok(Some(GameRecord {
            meta: meta_of(&row)?,
            version,
            game: decode_json(game_id, "snapshot", row.try_get("snapshot")?)?,
        }))
    }

    #[tracing::instrument(name = "store.append", level = "info", skip_all, fields(db.system = "postgresql", game_id = %append.game_id, expected_version = append.expected_version, event_count = append.events.len(), version = tracing::field::Empty))]
    async fn append_armed(&self, append: Append<'_>) -> Result<u64, StoreError> {
        let Append {
            game_id,
            expected_version,
            events,
            game,
            command,
            timers,
            trace_parent,
        } = append;
        let new_version = expected_version.saturating_add(events.len() as u64);
        let snapshot = encode_json(game_id, "engine state", game)?;
        let phase = phase_text(game_id, game.phase())?;
        let (seqs, values) = encode_events(game_id, expected_version.saturating_add(1), events)?;
        let duplicate = |key: &str, response: Vec<u8>| StoreError::DuplicateCommand {
            game_id,
            key: key.to_owned(),
            response,
        };

        let mut tx = self.inner.pool.begin().await?;
        // A retry of an applied command gets its first answer, even if the game moved on since:
        // found below when the version guard refuses, or by the command record's primary key
        // when it passes (one round trip less than looking first).

        // One statement (one round trip) for the guarded snapshot update, the command record,
        // the events and the cross-process announcement. The guard: only the writer that finds
        // the version it judged against wins; a racing writer blocks on the row lock, then sees
        // the new version and updates nothing, and then nothing else is written either.
        let command_key = command.map(|c| c.key);
        let command_response = command.map(|c| c.response);
        let written = sqlx::query(
            "WITH guard AS ( \
               UPDATE games SET version = $3, snapshot = $4, phase = $5, updated_at = now() \
               WHERE game_id = $1 AND version = $2 RETURNING 1), \
             command AS ( \
               INSERT INTO game_commands (game_id, idempotency_key, response, version) \
               SELECT $1, $6, $7, $3 WHERE $6::text IS NOT NULL AND EXISTS (SELECT 1 FROM guard) \
               RETURNING 1), \
             logged AS ( \
               INSERT INTO game_events (game_id, seq, event, trace_parent) \
               SELECT $1, e.seq, e.event, $10 FROM UNNEST($8::bigint[], $9::jsonb[]) AS e (seq, event) \
               WHERE EXISTS (SELECT 1 FROM guard) \
               RETURNING 1) \
             SELECT (SELECT count(*) FROM guard) AS updated, \
                    (SELECT count(*) FROM command) AS commands, \
                    (SELECT count(*) FROM logged) AS logged, \
                    CASE WHEN EXISTS (SELECT 1 FROM guard) AND cardinality($8::bigint[]) > 0 \
                         THEN pg_notify($11, $1::text || ':' || $3::text) END AS announced",
        )
        .bind(game_id)
        .bind(to_db(expected_version))
        .bind(to_db(new_version))
        .bind(snapshot)
        .bind(phase)
        .bind(command_key)
        .bind(command_response)
        .bind(seqs)
        .bind(values)
        .bind(trace_parent)
        .bind(CHANNEL)
        .fetch_one(&mut *tx)
        .await;
        let updated: i64 = match written {
            Ok(row) => row.try_get("updated")?,
            // The key is known: a retry of an applied command (or the same command committed
            // meanwhile by a racing writer). Nothing of ours stays; the first answer wins.
            Err(error) if violates(&error, "game_commands_pkey") => {
                tx.rollback().await?;
                let key = command_key.unwrap_or_default();
                let mut conn = self.inner.pool.acquire().await?;
                let response = PostgresStore::stored_response(&mut conn, game_id, key)
                    .await?
                    .unwrap_or_default();
                return Err(duplicate(key, response));
            }
            // The version guard passed, yet a seq is taken: the snapshot's version and the log
            // disagree. The primary key refuses the fork; nothing is written.
            Err(error) if violates(&error, "game_events_pkey") => {
                tx.rollback().await?;
                return Err(StoreError::Corrupt {
                    game_id,
                    reason: format!(
                        "the log already holds an event after version {expected_version}, \
                         which the snapshot row claims is the latest"
                    ),
                });
            }
            Err(error) => return Err(error.into()),
        };
        if updated == 0 {
            // The writer that beat us may have been this very command (a concurrent retry): a
            // new statement sees its committed record.
            if let Some(command) = command
                && let Some(response) =
                    PostgresStore::stored_response(&mut tx, game_id, command.key).await?
            {
                tx.rollback().await?;
                return Err(duplicate(command.key, response));
            }
            let actual = PostgresStore::version_of(&mut tx, game_id).await?;
            tx.rollback().await?;
            return Err(match actual {
                None => StoreError::NotFound(game_id),
                Some(actual) => StoreError::VersionConflict {
                    game_id,
                    expected: expected_version,
                    actual,
                },
            });
        }

        apply_timer_change(&mut tx, game_id, timers).await?;
        if events.iter().any(|e| matches!(e, Event::Ended { .. })) {
            // The counter row's lock is held to commit: feed positions follow commit order.
            sqlx::query(
                "WITH next AS (UPDATE ended_games_counter SET last = last + 1 RETURNING last) \
                 UPDATE games SET ended_seq = (SELECT last FROM next) WHERE game_id = $1",
            )
            .bind(game_id)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        if !events.is_empty() {
            self.inner.notifier.notify(game_id, new_version);
        }
        tracing::Span::current().record("version", new_version);
        Ok(new_version)
    }

    #[tracing::instrument(name = "store.command_response", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id))]
    async fn command_response(
        &self,
        game_id: Uuid,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let mut conn = self.inner.pool.acquire().await?;
        let response = PostgresStore::stored_response(&mut conn, game_id, key).await?;
        drop(conn);
        if response.is_none() {
            self.require_game(game_id).await?;
        }
        Ok(response)
    }

    #[tracing::instrument(name = "store.events", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id, from_seq = from_seq, limit = limit, event_count = tracing::field::Empty))]
    async fn events(
        &self,
        game_id: Uuid,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let rows = if limit == 0 {
            Vec::new()
        } else {
            sqlx::query(
                "SELECT seq, event, trace_parent FROM game_events WHERE game_id = $1 AND seq >= $2 \
                 ORDER BY seq LIMIT $3",
            )
            .bind(game_id)
            .bind(to_db(from_seq))
            .bind(to_limit(limit))
            .fetch_all(&self.inner.pool)
            .await?
        };
        if rows.is_empty() {
            self.require_game(game_id).await?;
        }
        tracing::Span::current().record("event_count", rows.len());
        rows.into_iter()
            .map(|row| {
                Ok(StoredEvent {
                    seq: from_db(game_id, "seq", row.try_get("seq")?)?,
                    event: decode_json(game_id, "event", row.try_get("event")?)?,
                    trace_parent: row.try_get("trace_parent")?,
                })
            })
            .collect()
    }

    #[tracing::instrument(name = "store.watch", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id))]
    async fn watch(&self, game_id: Uuid) -> Result<watch::Receiver<u64>, StoreError> {
        // Order matters: LISTEN, then subscribe, then read the version. Any commit after the read
        // reaches the channel, by our own notify or by NOTIFY.
        self.ensure_listening().await?;
        let mut receiver = self.inner.notifier.subscribe(game_id);
        let mut conn = self.inner.pool.acquire().await?;
        let version = PostgresStore::version_of(&mut conn, game_id)
            .await?
            .ok_or(StoreError::NotFound(game_id))?;
        self.inner.notifier.notify(game_id, version);
        receiver.borrow_and_update();
        Ok(receiver)
    }

    #[tracing::instrument(name = "store.report_presence", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id, side = side.name(), connected = connected))]
    async fn report_presence(
        &self,
        game_id: Uuid,
        side: Side,
        gateway_id: &str,
        connected: bool,
        now: SystemTime,
        lease_until: SystemTime,
    ) -> Result<Presence, StoreError> {
        let upserted = sqlx::query(
            "INSERT INTO presence (game_id, side, gateway_id, connected, lease_until) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (game_id, side, gateway_id) DO UPDATE \
             SET connected = EXCLUDED.connected, lease_until = EXCLUDED.lease_until, \
                 updated_at = now()",
        )
        .bind(game_id)
        .bind(side.name())
        .bind(gateway_id)
        .bind(connected)
        .bind(OffsetDateTime::from(lease_until))
        .execute(&self.inner.pool)
        .await;
        match upserted {
            Ok(_) => {}
            Err(error) if is_foreign_key_violation(&error) => {
                return Err(StoreError::NotFound(game_id));
            }
            Err(error) => return Err(error.into()),
        }
        presence_at(&self.inner.pool, game_id, now)
            .await?
            .ok_or(StoreError::NotFound(game_id))
    }

    #[tracing::instrument(name = "store.presence", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id))]
    async fn presence(&self, game_id: Uuid, now: SystemTime) -> Result<Presence, StoreError> {
        presence_at(&self.inner.pool, game_id, now)
            .await?
            .ok_or(StoreError::NotFound(game_id))
    }

    #[tracing::instrument(name = "store.ping", level = "info", skip_all, fields(db.system = "postgresql"))]
    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.inner.pool).await?;
        Ok(())
    }

    #[tracing::instrument(name = "store.games_of_player", level = "info", skip_all, fields(db.system = "postgresql", limit = limit, game_count = tracing::field::Empty))]
    async fn games_of_player(
        &self,
        player: &str,
        limit: usize,
    ) -> Result<Vec<GameSummary>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        // One index range per seat, merged: each seat's newest `limit` suffice.
        let rows = sqlx::query(
            "SELECT game_id, rules, time_control, south_player, north_player, version, phase \
             FROM games WHERE game_id IN ( \
               (SELECT game_id FROM games WHERE south_player = $1 \
                ORDER BY created_at DESC, game_id DESC LIMIT $2) \
               UNION \
               (SELECT game_id FROM games WHERE north_player = $1 \
                ORDER BY created_at DESC, game_id DESC LIMIT $2)) \
             ORDER BY created_at DESC, game_id DESC LIMIT $2",
        )
        .bind(player)
        .bind(to_limit(limit))
        .fetch_all(&self.inner.pool)
        .await?;
        tracing::Span::current().record("game_count", rows.len());
        rows.into_iter()
            .map(|row| {
                let meta = meta_of(&row)?;
                let game_id = meta.game_id;
                Ok(GameSummary {
                    meta,
                    phase: parse_phase(game_id, row.try_get("phase")?)?,
                    version: from_db(game_id, "version", row.try_get("version")?)?,
                })
            })
            .collect()
    }

    #[tracing::instrument(name = "store.ended_games", level = "debug", skip_all, fields(db.system = "postgresql", after_cursor = after_cursor))]
    async fn ended_games(
        &self,
        after_cursor: u64,
        limit: usize,
    ) -> Result<Vec<EndedRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT game_id, rules, time_control, south_player, north_player, version, snapshot, \
                    ended_seq \
             FROM games WHERE ended_seq > $1 ORDER BY ended_seq LIMIT $2",
        )
        .bind(to_db(after_cursor))
        .bind(to_limit(limit))
        .fetch_all(&self.inner.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let meta = meta_of(row)?;
                let game_id = meta.game_id;
                Ok(EndedRecord {
                    cursor: from_db(game_id, "ended_seq", row.try_get("ended_seq")?)?,
                    record: GameRecord {
                        meta,
                        version: from_db(game_id, "version", row.try_get("version")?)?,
                        game: decode_json(game_id, "snapshot", row.try_get("snapshot")?)?,
                    },
                })
            })
            .collect()
    }
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

    #[test]
    fn phases_round_trip_through_text() {
        let game = Uuid::new_v4();
        for phase in [Phase::Deployment, Phase::Play, Phase::Ended] {
            let text = phase_text(game, phase).unwrap();
            assert_eq!(parse_phase(game, text).unwrap(), phase);
        }
        assert_eq!(phase_text(game, Phase::Play).unwrap(), "play");
        assert!(matches!(
            parse_phase(game, "sideways".into()),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn versions_convert_without_panics() {
        let game = Uuid::new_v4();
        assert_eq!(to_db(u64::MAX), i64::MAX);
        assert_eq!(to_db(7), 7);
        assert!(matches!(
            from_db(game, "version", -1),
            Err(StoreError::Corrupt { .. })
        ));
        assert_eq!(from_db(game, "version", 9).unwrap(), 9);
    }
}
