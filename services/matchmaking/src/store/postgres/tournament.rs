//! Organisers' tournaments on Postgres (`migrations/0017_tournaments.sql`): one row each, the
//! entrants as JSON. A racing creation of the same id waits on the primary key, then compares.

use super::{ms, unms, write_notices};
use crate::store::{
    EntrantChange, MatchError, Notices, Tournament, TournamentEntrant, TournamentFormat,
};
use sqlx::Row;
use sqlx::postgres::{PgPool, PgRow};

const COLUMNS: &str = "tournament_id, organiser, format, rounds, rules, time_control, rated, \
     start_ms, pause_ms, duration_ms, entrants, created_ms, finished_ms, open_to_players, \
     allow_bots, paused";

fn tournament_from(row: &PgRow) -> Result<Tournament, MatchError> {
    let entrants: serde_json::Value = row.try_get("entrants")?;
    let entrants: Vec<TournamentEntrant> = serde_json::from_value(entrants)
        .map_err(|e| MatchError::Corrupt(format!("tournament entrants: {e}")))?;
    Ok(Tournament {
        tournament_id: row.try_get("tournament_id")?,
        organiser: row.try_get("organiser")?,
        format: TournamentFormat::parse(row.try_get("format")?)?,
        rounds: u32::try_from(row.try_get::<i32, _>("rounds")?)
            .map_err(|_| MatchError::Corrupt("negative tournament rounds".into()))?,
        rules: row.try_get("rules")?,
        time_control: row.try_get("time_control")?,
        rated: row.try_get("rated")?,
        start_ms: unms(row.try_get("start_ms")?),
        pause_ms: unms(row.try_get("pause_ms")?),
        duration_ms: unms(row.try_get("duration_ms")?),
        open_to_players: row.try_get("open_to_players")?,
        allow_bots: row.try_get("allow_bots")?,
        entrants,
        paused: serde_json::from_value(row.try_get("paused")?)
            .map_err(|e| MatchError::Corrupt(format!("tournament paused players: {e}")))?,
        created_ms: unms(row.try_get("created_ms")?),
        finished_ms: row.try_get::<Option<i64>, _>("finished_ms")?.map(unms),
    })
}

/// [`crate::store::MatchStore::create_tournament`].
pub(super) async fn insert(
    pool: &PgPool,
    t: Tournament,
    notices: &Notices,
) -> Result<Tournament, MatchError> {
    let entrants = serde_json::to_value(&t.entrants)
        .map_err(|e| MatchError::Corrupt(format!("tournament entrants: {e}")))?;
    let mut tx = pool.begin().await?;
    let inserted = sqlx::query(
        "INSERT INTO mm_tournaments (tournament_id, organiser, format, rounds, rules, \
         time_control, rated, start_ms, pause_ms, entrants, created_ms, duration_ms, \
         open_to_players, allow_bots) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
         ON CONFLICT (tournament_id) DO NOTHING",
    )
    .bind(&t.tournament_id)
    .bind(&t.organiser)
    .bind(t.format.name())
    .bind(i32::try_from(t.rounds).unwrap_or(i32::MAX))
    .bind(&t.rules)
    .bind(&t.time_control)
    .bind(t.rated)
    .bind(ms(t.start_ms))
    .bind(ms(t.pause_ms))
    .bind(entrants)
    .bind(ms(t.created_ms))
    .bind(ms(t.duration_ms))
    .bind(t.open_to_players)
    .bind(t.allow_bots)
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1;
    if inserted {
        write_notices(&mut tx, notices, t.created_ms).await?;
        tx.commit().await?;
        return Ok(t);
    }
    drop(tx);
    let stored = read(pool, &t.tournament_id)
        .await?
        .ok_or_else(|| MatchError::Corrupt(format!("tournament {:?} vanished", t.tournament_id)))?;
    if t.is_retry_of(&stored) {
        Ok(stored)
    } else {
        Err(t.conflict())
    }
}

/// [`crate::store::MatchStore::tournament`].
pub(super) async fn read(
    pool: &PgPool,
    tournament_id: &str,
) -> Result<Option<Tournament>, MatchError> {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM mm_tournaments WHERE tournament_id = $1"
    )))
    .bind(tournament_id)
    .fetch_optional(pool)
    .await?
    .as_ref()
    .map(tournament_from)
    .transpose()
}

/// [`crate::store::MatchStore::running_tournaments`].
pub(super) async fn running(pool: &PgPool, limit: usize) -> Result<Vec<Tournament>, MatchError> {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM mm_tournaments WHERE finished_ms IS NULL \
         ORDER BY created_ms, tournament_id LIMIT $1"
    )))
    .bind(i64::try_from(limit).unwrap_or(i64::MAX))
    .fetch_all(pool)
    .await?
    .iter()
    .map(tournament_from)
    .collect()
}

/// [`crate::store::MatchStore::change_entrants`]: under the tournament row's lock, so joins
/// and withdrawals of one tournament apply one after the other.
pub(super) async fn change_entrants(
    pool: &PgPool,
    tournament_id: &str,
    change: EntrantChange<'_>,
) -> Result<Tournament, MatchError> {
    let mut tx = pool.begin().await?;
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM mm_tournaments WHERE tournament_id = $1 FOR UPDATE"
    )))
    .bind(tournament_id)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| Tournament::not_found(tournament_id))?;
    let stored = tournament_from(&row)?;
    let changed = change(stored.clone())?;
    if changed.entrants != stored.entrants || changed.paused != stored.paused {
        let entrants = serde_json::to_value(&changed.entrants)
            .map_err(|e| MatchError::Corrupt(format!("tournament entrants: {e}")))?;
        let paused = serde_json::to_value(&changed.paused)
            .map_err(|e| MatchError::Corrupt(format!("tournament paused players: {e}")))?;
        sqlx::query(
            "UPDATE mm_tournaments SET entrants = $2, paused = $3 WHERE tournament_id = $1",
        )
        .bind(tournament_id)
        .bind(entrants)
        .bind(paused)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(changed)
}

/// [`crate::store::MatchStore::finish_tournament`].
pub(super) async fn finish(
    pool: &PgPool,
    tournament_id: &str,
    now_ms: u64,
    notices: &Notices,
) -> Result<bool, MatchError> {
    let mut tx = pool.begin().await?;
    let finished = sqlx::query(
        "UPDATE mm_tournaments SET finished_ms = $2 \
         WHERE tournament_id = $1 AND finished_ms IS NULL",
    )
    .bind(tournament_id)
    .bind(ms(now_ms))
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1;
    if finished {
        write_notices(&mut tx, notices, now_ms).await?;
        tx.commit().await?;
        return Ok(true);
    }
    drop(tx);
    match read(pool, tournament_id).await? {
        Some(_) => Ok(false),
        None => Err(Tournament::not_found(tournament_id)),
    }
}
