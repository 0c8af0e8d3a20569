//! Organisers' bulks on Postgres (`migrations/0016_bulks.sql`): a row of `mm_bulks` and one
//! `mm_matches` row per pair, written in one transaction. A bulk match carries `due_ms` (its start)
//! until it is seated or its bulk is cancelled, so the due scan reads a partial index holding only
//! what waits.

use super::{MATCH_COLUMNS, PostgresMatchStore, match_from, ms, unms, write_notices};
use crate::store::{Bulk, BulkGame, GameOutcome, Match, MatchError, NewBulk, Notices};
use sqlx::postgres::{PgConnection, PgPool, PgRow};
use sqlx::{Postgres, Row, Transaction};

const BULK_COLUMNS: &str =
    "bulk_id, organiser, rules, time_control, rated, start_ms, created_ms, cancelled_ms";

/// A bulk read inside `tx` or on the pool, with its games in order and their outcomes.
async fn read_in(
    conn: &mut PgConnection,
    bulk_id: &str,
    lock: bool,
) -> Result<Option<Bulk>, MatchError> {
    let lock = if lock { " FOR UPDATE" } else { "" };
    let Some(row) = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {BULK_COLUMNS} FROM mm_bulks WHERE bulk_id = $1{lock}"
    )))
    .bind(bulk_id)
    .fetch_optional(&mut *conn)
    .await?
    else {
        return Ok(None);
    };
    let columns = MATCH_COLUMNS
        .split(", ")
        .map(|c| format!("m.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ");
    let games = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {columns}, e.outcome FROM mm_matches m \
         LEFT JOIN mm_ended_games e ON e.game_id = m.game_id \
         WHERE m.bulk_id = $1 ORDER BY m.bulk_index"
    )))
    .bind(bulk_id)
    .fetch_all(&mut *conn)
    .await?
    .iter()
    .map(game_from)
    .collect::<Result<Vec<_>, MatchError>>()?;
    Ok(Some(Bulk {
        games,
        ..head_from(&row)?
    }))
}

/// A bulk's row, without its games.
fn head_from(row: &PgRow) -> Result<Bulk, MatchError> {
    Ok(Bulk {
        bulk_id: row.try_get("bulk_id")?,
        organiser: row.try_get("organiser")?,
        rules: row.try_get("rules")?,
        time_control: row.try_get("time_control")?,
        rated: row.try_get("rated")?,
        start_ms: unms(row.try_get("start_ms")?),
        created_ms: unms(row.try_get("created_ms")?),
        cancelled_ms: row.try_get::<Option<i64>, _>("cancelled_ms")?.map(unms),
        games: Vec::new(),
    })
}

/// A bulk's game: its match's row with the outcome joined.
fn game_from(row: &PgRow) -> Result<BulkGame, MatchError> {
    Ok(BulkGame {
        the_match: match_from(row)?,
        outcome: row
            .try_get::<Option<String>, _>("outcome")?
            .as_deref()
            .map(GameOutcome::parse)
            .transpose()?,
    })
}

/// A bulk as it is now.
pub(super) async fn read(pool: &PgPool, bulk_id: &str) -> Result<Option<Bulk>, MatchError> {
    read_in(&mut *pool.acquire().await?, bulk_id, false).await
}

/// The bulks of `bulk_ids` that exist, in that order, read with two statements in one snapshot
/// (a repeatable-read transaction: heads and games agree).
pub(super) async fn read_many(pool: &PgPool, bulk_ids: &[String]) -> Result<Vec<Bulk>, MatchError> {
    if bulk_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut tx = pool.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .execute(&mut *tx)
        .await?;
    let heads = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {BULK_COLUMNS} FROM mm_bulks WHERE bulk_id = ANY($1)"
    )))
    .bind(bulk_ids)
    .fetch_all(&mut *tx)
    .await?;
    let columns = MATCH_COLUMNS
        .split(", ")
        .map(|c| format!("m.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ");
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {columns}, e.outcome FROM mm_matches m \
         LEFT JOIN mm_ended_games e ON e.game_id = m.game_id \
         WHERE m.bulk_id = ANY($1) ORDER BY m.bulk_id, m.bulk_index"
    )))
    .bind(bulk_ids)
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    let mut by_id = std::collections::HashMap::with_capacity(heads.len());
    for row in &heads {
        let bulk = head_from(row)?;
        by_id.insert(bulk.bulk_id.clone(), bulk);
    }
    for row in &rows {
        let game = game_from(row)?;
        let bulk_id = game.the_match.bulk_id.clone().unwrap_or_default();
        if let Some(bulk) = by_id.get_mut(&bulk_id) {
            bulk.games.push(game);
        }
    }
    Ok(bulk_ids.iter().filter_map(|id| by_id.remove(id)).collect())
}

/// Bulk matches whose start has come, earliest first.
pub(super) async fn due(
    pool: &PgPool,
    now_ms: u64,
    limit: usize,
) -> Result<Vec<Match>, MatchError> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {MATCH_COLUMNS} FROM mm_matches \
         WHERE game_id IS NULL AND due_ms IS NOT NULL AND due_ms <= $1 \
         ORDER BY due_ms, match_id LIMIT $2"
    )))
    .bind(ms(now_ms))
    .bind(i64::try_from(limit).unwrap_or(i64::MAX))
    .fetch_all(pool)
    .await?;
    rows.iter().map(match_from).collect()
}

impl PostgresMatchStore {
    /// [`crate::store::MatchStore::create_bulk`]: the bulk's row first, so a racing creation of
    /// the same id waits on its primary key and then finds this one.
    pub(super) async fn insert_bulk(
        &self,
        new: NewBulk,
        notices: &Notices,
    ) -> Result<Bulk, MatchError> {
        let mut tx: Transaction<'_, Postgres> = self.pool.begin().await?;
        let inserted = sqlx::query(
            "INSERT INTO mm_bulks (bulk_id, organiser, rules, time_control, rated, start_ms, \
             created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (bulk_id) DO NOTHING",
        )
        .bind(&new.bulk_id)
        .bind(&new.organiser)
        .bind(&new.rules)
        .bind(&new.time_control)
        .bind(new.rated)
        .bind(ms(new.start_ms))
        .bind(ms(new.created_ms))
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        if !inserted {
            let stored = read_in(&mut tx, &new.bulk_id, false)
                .await?
                .ok_or_else(|| MatchError::Corrupt(format!("bulk {:?} vanished", new.bulk_id)))?;
            return if new.is_retry_of(&stored) {
                Ok(stored)
            } else {
                Err(new.conflict())
            };
        }
        let bulk = Bulk::of_new(&new);
        let matches: Vec<&Match> = bulk.games.iter().map(|g| &g.the_match).collect();
        let index: Vec<i32> = (0..matches.len())
            .map(|i| i32::try_from(i).unwrap_or(i32::MAX))
            .collect();
        sqlx::query(
            "INSERT INTO mm_matches (match_id, kind, rules, time_control, rated, south_player, \
             north_player, bulk_id, bulk_index, due_ms, created_ms) \
             SELECT m, 'bulk', $2, $3, $4, s, n, $5, i, $6, $7 \
             FROM UNNEST($1::uuid[], $8::text[], $9::text[], $10::int[]) AS u(m, s, n, i)",
        )
        .bind(matches.iter().map(|m| m.match_id).collect::<Vec<_>>())
        .bind(&bulk.rules)
        .bind(&bulk.time_control)
        .bind(bulk.rated)
        .bind(&bulk.bulk_id)
        .bind(ms(bulk.start_ms))
        .bind(ms(bulk.created_ms))
        .bind(
            matches
                .iter()
                .map(|m| m.south_player.clone())
                .collect::<Vec<_>>(),
        )
        .bind(
            matches
                .iter()
                .map(|m| m.north_player.clone())
                .collect::<Vec<_>>(),
        )
        .bind(index)
        .execute(&mut *tx)
        .await?;
        write_notices(&mut tx, notices, new.created_ms).await?;
        tx.commit().await?;
        Ok(bulk)
    }

    /// [`crate::store::MatchStore::cancel_bulk`], under the bulk row's lock.
    pub(super) async fn cancel(
        &self,
        bulk_id: &str,
        now_ms: u64,
        margin_ms: u64,
    ) -> Result<Bulk, MatchError> {
        let mut tx = self.pool.begin().await?;
        let mut bulk = read_in(&mut tx, bulk_id, true)
            .await?
            .ok_or_else(|| Bulk::not_found(bulk_id))?;
        bulk.check_cancellable(now_ms, margin_ms)?;
        if bulk.cancelled_ms.is_some() {
            return Ok(bulk);
        }
        sqlx::query("UPDATE mm_bulks SET cancelled_ms = $2 WHERE bulk_id = $1")
            .bind(bulk_id)
            .bind(ms(now_ms))
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE mm_matches SET due_ms = NULL WHERE bulk_id = $1")
            .bind(bulk_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        bulk.cancelled_ms = Some(now_ms);
        Ok(bulk)
    }
}
