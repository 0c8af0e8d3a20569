//! Whole games: creation (idempotent on the creation key, with its first timers), loading the
//! snapshot, the games of a player, and the existence and version checks the other statements
//! share.

use super::PostgresStore;
use super::codec::{
    decode_json, decode_json_bytes, encode_events, encode_json, encode_json_text, from_db,
    is_unique_violation, meta_of, parse_phase, phase_text, to_db, to_limit,
};
use super::timers::upsert_timer;
use crate::timers::Timer;
use crate::{Created, GameMeta, GameRecord, GameSummary, StoreError};
use hidden_front_lifecycle::NewFact;
use hidden_front_rules::{Event, Game};
use sqlx::postgres::PgRow;
use sqlx::types::time::OffsetDateTime;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

/// The select-list columns [`game_at_head`] reads, for a query of `games g`: the versions, the
/// snapshot a load starts from (the raw one when it is at least as new as the `jsonb` one,
/// `migrations/0010_raw_snapshots.sql`; the other is left out, so it is neither sent nor
/// decoded) and `lagged`, the events after that snapshot as one JSON array when it lags the
/// log's head.
macro_rules! snapshot_columns {
    () => {
        "g.version, g.head_version, g.raw_version, \
         CASE WHEN g.raw_version >= g.version THEN NULL ELSE g.snapshot END AS snapshot, \
         CASE WHEN g.raw_version >= g.version THEN g.raw_snapshot END AS raw_snapshot, \
         CASE WHEN COALESCE(g.head_version, g.version) > GREATEST(g.version, g.raw_version) THEN \
           (SELECT json_agg(e.event ORDER BY e.seq) FROM game_events e \
            WHERE e.game_id = g.game_id AND e.seq > GREATEST(g.version, g.raw_version) \
              AND e.seq <= g.head_version) \
         END AS lagged"
    };
}
pub(super) use snapshot_columns;

#[tracing::instrument(name = "store.create", level = "info", skip_all, fields(db.system = "postgresql", game_id = %meta.game_id, event_count = events.len()))]
pub(super) async fn create_armed(
    store: &PostgresStore,
    creation_key: &str,
    meta: &GameMeta,
    events: &[Event],
    game: &Game,
    timers: &[Timer],
    facts: &[NewFact],
) -> Result<Created, StoreError> {
    let game_id = meta.game_id;
    let time_control = encode_json(game_id, "time control", &meta.time_control)?;
    let snapshot = encode_json(game_id, "engine state", game)?;
    let phase = phase_text(game_id, game.phase())?;
    let (seqs, values) = encode_events(game_id, 1, events)?;

    let mut tx = store.inner.pool.begin().await?;
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
    let committed_at = insert_events(&mut tx, game_id, seqs, values).await?;
    for timer in timers {
        upsert_timer(&mut tx, timer).await?;
    }
    super::outbox::record(&mut tx, facts).await?;
    tx.commit().await?;
    if let Some(at) = committed_at {
        // The first watcher's pump reads these (`recent.rs`), not the log.
        let stored = super::appends::stored_events(1, events, None, at.into());
        store.inner.recent.remember(game_id, stored);
    }
    Ok(Created {
        game_id,
        replayed: false,
    })
}

/// Inserts a new game's events in one statement; returns their `created_at` (the
/// transaction's `now()`), or `None` for no events.
async fn insert_events(
    conn: &mut PgConnection,
    game_id: Uuid,
    seqs: Vec<i64>,
    values: Vec<serde_json::Value>,
) -> Result<Option<OffsetDateTime>, sqlx::Error> {
    if seqs.is_empty() {
        return Ok(None);
    }
    sqlx::query_scalar(
        "WITH logged AS ( \
           INSERT INTO game_events (game_id, seq, event) \
           SELECT $1, seq, event FROM UNNEST($2::bigint[], $3::jsonb[]) AS e (seq, event)) \
         SELECT now()",
    )
    .bind(game_id)
    .bind(seqs)
    .bind(values)
    .fetch_one(conn)
    .await
    .map(Some)
}

#[tracing::instrument(name = "store.load", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id, version = tracing::field::Empty))]
pub(super) async fn load(
    store: &PostgresStore,
    game_id: Uuid,
) -> Result<Option<GameRecord>, StoreError> {
    // The snapshot and, when it lags the log, the events after it, read by one statement so
    // both come from one moment (`migrations/0009_sparse_snapshots.sql`, `0010`).
    let Some(row) = sqlx::query(concat!(
        "SELECT g.game_id, g.rules, g.time_control, g.south_player, g.north_player, ",
        snapshot_columns!(),
        " FROM games g WHERE g.game_id = $1"
    ))
    .bind(game_id)
    .fetch_optional(&store.inner.pool)
    .await?
    else {
        return Ok(None);
    };
    let (version, game) = game_at_head(&row)?;
    tracing::Span::current().record("version", version);
    Ok(Some(GameRecord {
        meta: meta_of(&row)?,
        version,
        game,
    }))
}

/// Writes the snapshot of every game whose row lags its log at its head (`version` = the head,
/// `head_version` NULL); returns how many rows it wrote. For a rollback to a release that does
/// not know `head_version` (`hidden-front migrate --snapshots-at-head`, once no replica of this
/// release runs): such a release then finds every game at its snapshot. Each row
/// is written only if its head has not moved since it was read, so a racing append wins.
pub(super) async fn snapshot_lagging_games(store: &PostgresStore) -> Result<u64, StoreError> {
    let lagging: Vec<Uuid> =
        sqlx::query_scalar("SELECT game_id FROM games WHERE head_version IS NOT NULL")
            .fetch_all(&store.inner.pool)
            .await?;
    let mut written = 0;
    for game_id in lagging {
        let Some(record) = load(store, game_id).await? else {
            continue;
        };
        let done = sqlx::query(
            "UPDATE games SET snapshot = $2::jsonb, version = $3, head_version = NULL, \
               raw_snapshot = NULL, raw_version = NULL \
             WHERE game_id = $1 AND head_version = $3",
        )
        .bind(game_id)
        .bind(encode_json_text(game_id, "engine state", &record.game)?)
        .bind(to_db(record.version))
        .execute(&store.inner.pool)
        .await?;
        written += done.rows_affected();
    }
    Ok(written)
}

/// The game at the log's head from a row with `game_id` and [`snapshot_columns`]: the snapshot
/// (raw or `jsonb`) with the lagged events applied, and the head's version.
pub(super) fn game_at_head(row: &PgRow) -> Result<(u64, Game), StoreError> {
    let game_id: Uuid = row.try_get("game_id")?;
    let corrupt = |reason: String| StoreError::Corrupt { game_id, reason };
    let version = from_db(game_id, "version", row.try_get("version")?)?;
    let (base, mut game): (u64, Game) = match row.try_get::<Option<Vec<u8>>, _>("raw_snapshot")? {
        Some(bytes) => {
            let raw_version: Option<i64> = row.try_get("raw_version")?;
            let raw_version =
                raw_version.ok_or_else(|| corrupt("a raw snapshot without its version".into()))?;
            (
                from_db(game_id, "raw_version", raw_version)?,
                decode_json_bytes(game_id, "raw snapshot", &bytes)?,
            )
        }
        None => match row.try_get::<Option<serde_json::Value>, _>("snapshot")? {
            Some(value) => (version, decode_json(game_id, "snapshot", value)?),
            None => return Err(corrupt("the row holds no snapshot".into())),
        },
    };
    let head = match row.try_get::<Option<i64>, _>("head_version")? {
        Some(head) => from_db(game_id, "head_version", head)?,
        None => version,
    };
    if head == base {
        return Ok((head, game));
    }
    let lagged: Vec<Event> = match row.try_get::<Option<serde_json::Value>, _>("lagged")? {
        Some(value) => decode_json(game_id, "events after the snapshot", value)?,
        None => Vec::new(),
    };
    if lagged.len() as u64 != head.saturating_sub(base) || head < base {
        return Err(corrupt(format!(
            "the snapshot is at version {base} and the head at {head}, \
             but the log holds {} events between them",
            lagged.len()
        )));
    }
    for event in &lagged {
        game.apply(event).map_err(|error| {
            corrupt(format!(
                "the log after the snapshot (version {base}) does not replay: {error}"
            ))
        })?;
    }
    Ok((head, game))
}

#[tracing::instrument(name = "store.games_of_player", level = "info", skip_all, fields(db.system = "postgresql", limit = limit, game_count = tracing::field::Empty))]
pub(super) async fn games_of_player(
    store: &PostgresStore,
    player: &str,
    limit: usize,
) -> Result<Vec<GameSummary>, StoreError> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    // One index range per seat, merged: each seat's newest `limit` suffice.
    let rows = sqlx::query(
        "SELECT game_id, rules, time_control, south_player, north_player, \
                COALESCE(head_version, version) AS version, phase \
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
    .fetch_all(&store.inner.pool)
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

/// The game's version, or `None` if there is no such game.
pub(super) async fn version_of(
    conn: &mut PgConnection,
    game_id: Uuid,
) -> Result<Option<u64>, StoreError> {
    let version: Option<i64> =
        sqlx::query_scalar("SELECT COALESCE(head_version, version) FROM games WHERE game_id = $1")
            .bind(game_id)
            .fetch_optional(conn)
            .await?;
    version
        .map(|version| from_db(game_id, "version", version))
        .transpose()
}

/// Fails with [`StoreError::NotFound`] unless the game exists.
pub(super) async fn require_game(store: &PostgresStore, game_id: Uuid) -> Result<(), StoreError> {
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM games WHERE game_id = $1)")
        .bind(game_id)
        .fetch_one(&store.inner.pool)
        .await?;
    if exists {
        Ok(())
    } else {
        Err(StoreError::NotFound(game_id))
    }
}

#[tracing::instrument(name = "store.ping", level = "info", skip_all, fields(db.system = "postgresql"))]
pub(super) async fn ping(store: &PostgresStore) -> Result<(), StoreError> {
    sqlx::query("SELECT 1").execute(&store.inner.pool).await?;
    Ok(())
}
