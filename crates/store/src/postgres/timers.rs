//! The `game_timers` table: arming slots (an append's timers are written by its own statement,
//! `batch.rs`),
//! and the clock's side of [`TimerStore`]: claims with leases (`FOR UPDATE SKIP LOCKED`, so
//! several clocks share the rows), releases and batched deletes of fired timers.

use super::PostgresStore;
use super::codec::{from_db, is_foreign_key_violation, side_text, to_db, to_limit};
use crate::StoreError;
use crate::timers::{Timer, TimerKind, TimerSlot, TimerStore};
use async_trait::async_trait;
use hidden_front_rules::Side;
use sqlx::Postgres;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::QueryAs;
use sqlx::types::time::OffsetDateTime;
use sqlx::{PgConnection, Row};
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// The conflict clause of every statement that arms timers into `game_timers`: the new timer
/// replaces the slot's row, and any clock's claim on it is dropped (the old deadline is gone).
macro_rules! rearm_slot {
    () => {
        "ON CONFLICT (game_id, slot) DO UPDATE SET kind = EXCLUDED.kind, side = EXCLUDED.side, \
         armed_version = EXCLUDED.armed_version, fire_at = EXCLUDED.fire_at, \
         claimed_by = NULL, claimed_until = NULL, armed_at = now()"
    };
}
pub(super) use rearm_slot;

/// `timers` with at most one per slot, the last one given winning (as when they were written
/// one by one): one statement may arm a slot only once.
pub(super) fn one_per_slot<'a>(timers: impl IntoIterator<Item = &'a Timer>) -> Vec<Timer> {
    let mut armed: Vec<Timer> = Vec::new();
    for timer in timers {
        armed.retain(|other| other.slot() != timer.slot());
        armed.push(*timer);
    }
    armed
}

/// Timers as the array parameters of a batch statement's `UNNEST` (the appends' and the
/// creations' statements arm timers alike).
#[derive(Debug, Default)]
pub(super) struct TimerColumns {
    pub(super) games: Vec<Uuid>,
    pub(super) slots: Vec<&'static str>,
    pub(super) kinds: Vec<&'static str>,
    pub(super) sides: Vec<&'static str>,
    pub(super) versions: Vec<i64>,
    pub(super) fire_ats: Vec<OffsetDateTime>,
}

impl TimerColumns {
    /// How many parameters [`TimerColumns::bind_to`] binds.
    pub(super) const PARAMS: usize = 6;

    /// The CTEs that write a batch statement's timers from the parameters `$first ..` that
    /// [`TimerColumns::bind_to`] binds: `arms` (every timer of the batch, which other CTEs may
    /// read) and `armed` (those of the games the CTE `passed` returns, each replacing its slot).
    pub(super) fn ctes(first: usize, passed: &str) -> String {
        let [games, slots, kinds, sides, versions, fire_ats] = std::array::from_fn(|i| first + i);
        format!(
            "arms AS ( \
               SELECT * FROM UNNEST(${games}::uuid[], ${slots}::text[], ${kinds}::text[], \
                                    ${sides}::text[], ${versions}::bigint[], \
                                    ${fire_ats}::timestamptz[]) \
                 AS a (game_id, slot, kind, side, armed_version, fire_at)), \
             armed AS ( \
               INSERT INTO game_timers (game_id, slot, kind, side, armed_version, fire_at) \
               SELECT a.game_id, a.slot, a.kind, a.side, a.armed_version, a.fire_at FROM arms a \
               WHERE a.game_id IN (SELECT game_id FROM {passed}) {})",
            rearm_slot!()
        )
    }

    /// Adds `timer` after the ones already there.
    pub(super) fn push(&mut self, timer: &Timer) {
        self.games.push(timer.game_id);
        self.slots.push(timer.slot().name());
        self.kinds.push(timer.kind.name());
        self.sides.push(side_text(timer.side));
        self.versions.push(to_db(timer.armed_version));
        self.fire_ats.push(OffsetDateTime::from(timer.fire_at));
    }

    /// Binds the six columns, in this order, as `query`'s next parameters.
    pub(super) fn bind_to<'q, O>(
        self,
        query: QueryAs<'q, Postgres, O, PgArguments>,
    ) -> QueryAs<'q, Postgres, O, PgArguments> {
        query
            .bind(self.games)
            .bind(self.slots)
            .bind(self.kinds)
            .bind(self.sides)
            .bind(self.versions)
            .bind(self.fire_ats)
    }
}

/// Arms a timer's slot, replacing what was there and dropping any claim on it.
pub(super) async fn upsert_timer(conn: &mut PgConnection, timer: &Timer) -> Result<(), StoreError> {
    let result = sqlx::query(concat!(
        "INSERT INTO game_timers (game_id, slot, kind, side, armed_version, fire_at) \
         VALUES ($1, $2, $3, $4, $5, $6) ",
        rearm_slot!()
    ))
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

/// A `game_timers` row as a [`Timer`].
fn timer_of(row: &PgRow) -> Result<Timer, StoreError> {
    timer_from(
        row.try_get("game_id")?,
        row.try_get("kind")?,
        row.try_get("side")?,
        row.try_get("armed_version")?,
        row.try_get("fire_at")?,
    )
}

/// A timer of `game_id` from its stored columns, refusing a kind or side this release does not
/// know.
pub(super) fn timer_from(
    game_id: Uuid,
    kind: String,
    side: String,
    armed_version: i64,
    fire_at: OffsetDateTime,
) -> Result<Timer, StoreError> {
    let corrupt = |what: &str, value: String| StoreError::Corrupt {
        game_id,
        reason: format!("timer {what} {value:?} is unknown"),
    };
    let kind = TimerKind::from_name(&kind).ok_or_else(|| corrupt("kind", kind.clone()))?;
    let side = match side.as_str() {
        "south" => Side::South,
        "north" => Side::North,
        _ => return Err(corrupt("side", side)),
    };
    Ok(Timer {
        game_id,
        kind,
        side,
        armed_version: from_db(game_id, "armed version", armed_version)?,
        fire_at: fire_at.into(),
    })
}

#[async_trait]
impl TimerStore for PostgresStore {
    #[tracing::instrument(name = "store.arm_timer", level = "info", skip_all, fields(db.system = "postgresql", game_id = %timer.game_id))]
    async fn arm_timer(&self, timer: &Timer) -> Result<(), StoreError> {
        let mut conn = self.pool().acquire().await?;
        upsert_timer(&mut conn, timer).await
    }

    #[tracing::instrument(name = "store.cancel_timer", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id))]
    async fn cancel_timer(&self, game_id: Uuid, slot: TimerSlot) -> Result<bool, StoreError> {
        let deleted = sqlx::query("DELETE FROM game_timers WHERE game_id = $1 AND slot = $2")
            .bind(game_id)
            .bind(slot.name())
            .execute(&self.pool())
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
        .fetch_all(&self.pool())
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
        .fetch_all(&self.pool())
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
        .execute(&self.pool())
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
        .execute(&self.pool())
        .await?
        .rows_affected();
        Ok(deleted)
    }

    async fn armed_timer_count(&self) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM game_timers")
            .fetch_one(&self.pool())
            .await?;
        Ok(u64::try_from(count).unwrap_or(0))
    }
}
