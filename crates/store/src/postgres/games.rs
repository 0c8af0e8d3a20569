//! Whole games: creation (idempotent on the creation key, with its first timers), loading the
//! snapshot, the games of a player, and the existence and version checks the other statements
//! share.

use super::PostgresStore;
use super::codec::{
    decode_json, encode_events, encode_json, from_db, is_unique_violation, meta_of, parse_phase,
    phase_text, to_db, to_limit,
};
use super::timers::upsert_timer;
use crate::timers::Timer;
use crate::{Created, GameMeta, GameRecord, GameSummary, StoreError};
use hidden_front_lifecycle::NewFact;
use hidden_front_rules::{Event, Game};
use sqlx::types::time::OffsetDateTime;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

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
    let Some(row) = sqlx::query(
        "SELECT game_id, rules, time_control, south_player, north_player, version, snapshot \
         FROM games WHERE game_id = $1",
    )
    .bind(game_id)
    .fetch_optional(&store.inner.pool)
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
    let version: Option<i64> = sqlx::query_scalar("SELECT version FROM games WHERE game_id = $1")
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
