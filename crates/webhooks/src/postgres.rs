//! [`WebhookStore`] in Postgres (migration `0007_webhooks.sql`, applied with the game store's
//! migrations): replicas sharing a database share cursors, leases and dead letters. Lease times
//! are the database's `now()`, so the replicas' own clocks never decide who holds a lease.

use crate::store::{DeadLetter, EndpointState, Resume, WebhookStore, WebhookStoreError};
use async_trait::async_trait;
use hidden_front_lifecycle::FeedPosition;
use sqlx::postgres::PgRow;
use sqlx::types::time::OffsetDateTime;
use sqlx::{PgPool, Row};
use std::time::{Duration, SystemTime};

/// Delivery state in the game store's Postgres database.
#[derive(Debug, Clone)]
pub struct PgWebhookStore {
    pool: PgPool,
}

impl PgWebhookStore {
    /// The store on `pool` (already migrated).
    pub fn new(pool: PgPool) -> PgWebhookStore {
        PgWebhookStore { pool }
    }
}

fn db(error: sqlx::Error) -> WebhookStoreError {
    WebhookStoreError(error.to_string())
}

fn millis(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}

fn position(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn unsigned(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// A stored position (`webhook_endpoints.position`, migration 0013), parsed: a text that does
/// not parse is a failure of the store (written by no version of this code), never "from the
/// start".
fn stored_position(
    endpoint: &str,
    text: Option<String>,
) -> Result<Option<FeedPosition>, WebhookStoreError> {
    text.map(|text| {
        text.parse().map_err(|error| {
            WebhookStoreError(format!(
                "the stored position of endpoint {endpoint:?} is corrupt: it {error}"
            ))
        })
    })
    .transpose()
}

/// The guard every lease-holder write carries.
const HELD: &str = "lease_holder = $2 AND lease_until > now()";

fn letter(row: &PgRow) -> Result<DeadLetter, sqlx::Error> {
    let first: OffsetDateTime = row.try_get("first_attempt_at")?;
    let parked: OffsetDateTime = row.try_get("parked_at")?;
    Ok(DeadLetter {
        endpoint: row.try_get("endpoint")?,
        position: unsigned(row.try_get("position")?),
        fact_id: row.try_get("fact_id")?,
        attempts: u32::try_from(row.try_get::<i32, _>("attempts")?).unwrap_or(0),
        last_error: row.try_get("last_error")?,
        first_attempt_at: SystemTime::from(first),
        parked_at: SystemTime::from(parked),
        replay_requested: row.try_get("replay_requested")?,
    })
}

const LETTER_COLUMNS: &str = "endpoint, position, fact_id, attempts, last_error, \
     first_attempt_at, parked_at, replay_requested";

#[async_trait]
impl WebhookStore for PgWebhookStore {
    async fn acquire(
        &self,
        endpoint: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<Resume>, WebhookStoreError> {
        let row = sqlx::query(
            "INSERT INTO webhook_endpoints AS e (name, lease_holder, lease_until) \
             VALUES ($1, $2, now() + $3 * interval '1 millisecond') \
             ON CONFLICT (name) DO UPDATE \
               SET lease_holder = excluded.lease_holder, lease_until = excluded.lease_until \
               WHERE e.lease_holder IS NULL OR e.lease_holder = excluded.lease_holder \
                  OR e.lease_until IS NULL OR e.lease_until <= now() \
             RETURNING cursor, position",
        )
        .bind(endpoint)
        .bind(holder)
        .bind(millis(ttl))
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?;
        let Some(row) = row else {
            return Ok(None);
        };
        Ok(Some(Resume {
            cursor: unsigned(row.try_get("cursor").map_err(db)?),
            position: stored_position(endpoint, row.try_get("position").map_err(db)?)?,
        }))
    }

    async fn renew(
        &self,
        endpoint: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, WebhookStoreError> {
        let done = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE webhook_endpoints SET lease_until = now() + $3 * interval '1 millisecond' \
             WHERE name = $1 AND {HELD}"
        )))
        .bind(endpoint)
        .bind(holder)
        .bind(millis(ttl))
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(done.rows_affected() == 1)
    }

    async fn release(&self, endpoint: &str, holder: &str) -> Result<(), WebhookStoreError> {
        sqlx::query(
            "UPDATE webhook_endpoints SET lease_until = now() \
             WHERE name = $1 AND lease_holder = $2",
        )
        .bind(endpoint)
        .bind(holder)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(())
    }

    async fn advance(
        &self,
        endpoint: &str,
        holder: &str,
        cursor: u64,
        to: &FeedPosition,
    ) -> Result<bool, WebhookStoreError> {
        let done = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE webhook_endpoints \
             SET cursor = $3, position = $4, last_error = NULL, last_error_at = NULL \
             WHERE name = $1 AND {HELD}"
        )))
        .bind(endpoint)
        .bind(holder)
        .bind(position(cursor))
        .bind(to.to_string())
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(done.rows_affected() == 1)
    }

    async fn record_failure(
        &self,
        endpoint: &str,
        holder: &str,
        error: &str,
    ) -> Result<bool, WebhookStoreError> {
        let done = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE webhook_endpoints SET last_error = $3, last_error_at = now() \
             WHERE name = $1 AND {HELD}"
        )))
        .bind(endpoint)
        .bind(holder)
        .bind(error)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(done.rows_affected() == 1)
    }

    async fn park(
        &self,
        holder: &str,
        letter: &DeadLetter,
        advance: Option<&FeedPosition>,
    ) -> Result<bool, WebhookStoreError> {
        // One statement: the guard, the cursor, the position and the letter commit together or
        // not at all.
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "WITH held AS ( \
               UPDATE webhook_endpoints \
               SET cursor = CASE WHEN $9::text IS NULL THEN cursor ELSE $3 END, \
                   position = coalesce($9::text, position) \
               WHERE name = $1 AND {HELD} RETURNING name) \
             INSERT INTO webhook_dead_letters \
               (endpoint, position, fact_id, attempts, last_error, first_attempt_at, parked_at, \
                replay_requested) \
             SELECT name, $3, $4, $5, $6, $7, $8, false FROM held \
             ON CONFLICT (endpoint, position) DO UPDATE SET \
               attempts = excluded.attempts, last_error = excluded.last_error, \
               parked_at = excluded.parked_at, replay_requested = false \
             RETURNING position"
        )))
        .bind(&letter.endpoint)
        .bind(holder)
        .bind(position(letter.position))
        .bind(letter.fact_id)
        .bind(i32::try_from(letter.attempts).unwrap_or(i32::MAX))
        .bind(&letter.last_error)
        .bind(OffsetDateTime::from(letter.first_attempt_at))
        .bind(OffsetDateTime::from(letter.parked_at))
        .bind(advance.map(FeedPosition::to_string))
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?;
        Ok(row.is_some())
    }

    async fn resolve(
        &self,
        endpoint: &str,
        holder: &str,
        at: u64,
    ) -> Result<bool, WebhookStoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "WITH held AS (SELECT name FROM webhook_endpoints WHERE name = $1 AND {HELD}), \
             gone AS (DELETE FROM webhook_dead_letters \
                      WHERE endpoint IN (SELECT name FROM held) AND position = $3) \
             SELECT count(*) AS held FROM held"
        )))
        .bind(endpoint)
        .bind(holder)
        .bind(position(at))
        .fetch_one(&self.pool)
        .await
        .map_err(db)?;
        Ok(row.try_get::<i64, _>("held").map_err(db)? == 1)
    }

    async fn request_replay(
        &self,
        endpoint: &str,
        at: Option<u64>,
    ) -> Result<u64, WebhookStoreError> {
        let done = sqlx::query(
            "UPDATE webhook_dead_letters SET replay_requested = true \
             WHERE endpoint = $1 AND ($2::bigint IS NULL OR position = $2)",
        )
        .bind(endpoint)
        .bind(at.map(position))
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(done.rows_affected())
    }

    async fn replays_requested(
        &self,
        endpoint: &str,
    ) -> Result<Vec<DeadLetter>, WebhookStoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {LETTER_COLUMNS} FROM webhook_dead_letters \
             WHERE endpoint = $1 AND replay_requested ORDER BY position"
        )))
        .bind(endpoint)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        rows.iter()
            .map(letter)
            .collect::<Result<_, _>>()
            .map_err(db)
    }

    async fn endpoints(&self) -> Result<Vec<EndpointState>, WebhookStoreError> {
        let rows = sqlx::query(
            "SELECT name, cursor, position, lease_holder, lease_until, last_error, \
                    last_error_at \
             FROM webhook_endpoints ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        rows.iter()
            .map(|row| {
                let name: String = row.try_get("name").map_err(db)?;
                Ok(EndpointState {
                    position: stored_position(&name, row.try_get("position").map_err(db)?)?,
                    name,
                    cursor: unsigned(row.try_get("cursor").map_err(db)?),
                    lease_holder: row.try_get("lease_holder").map_err(db)?,
                    lease_until: row
                        .try_get::<Option<OffsetDateTime>, _>("lease_until")
                        .map_err(db)?
                        .map(SystemTime::from),
                    last_error: row.try_get("last_error").map_err(db)?,
                    last_error_at: row
                        .try_get::<Option<OffsetDateTime>, _>("last_error_at")
                        .map_err(db)?
                        .map(SystemTime::from),
                })
            })
            .collect()
    }

    async fn dead_letters(
        &self,
        endpoint: Option<&str>,
    ) -> Result<Vec<DeadLetter>, WebhookStoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {LETTER_COLUMNS} FROM webhook_dead_letters \
             WHERE $1::text IS NULL OR endpoint = $1 ORDER BY endpoint, position"
        )))
        .bind(endpoint)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        rows.iter()
            .map(letter)
            .collect::<Result<_, _>>()
            .map_err(db)
    }
}
