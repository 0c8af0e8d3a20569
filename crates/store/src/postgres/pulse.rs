//! The service's pulse (`migrations/0011_service_pulse.sql`, [`crate::continuity`]): one row
//! that every session process writes about once a second under its lock, and, when a pulse finds
//! an outage, the deadlines it moves and the outage it records, in the same transaction.

use super::PostgresStore;
use crate::StoreError;
use crate::continuity::{Outage, OutageRule, outage_gap};
use hidden_front_time::{WallClock, from_unix_ms};
use sqlx::types::time::OffsetDateTime;
use std::time::SystemTime;

/// Moves every deadline still running at the last pulse `$1`: by `$2` milliseconds (the
/// outage and the reconnect allowance), and a deployment deadline, or the time to come back of
/// a side connected at `$1`, to no sooner than the game's allowance after `$3` (now). The SQL
/// form of [`crate::continuity::moved_deadline`]; `GREATEST` ignores the `NULL` of a timer
/// without such a floor. Claims are dropped: a clock holding the old deadline finds it stale.
const MOVE_RUNNING_DEADLINES: &str = "\
    UPDATE game_timers t \
    SET fire_at = GREATEST( \
          t.fire_at + $2 * interval '1 millisecond', \
          CASE \
            WHEN t.kind = 'deployment' THEN $3 + LEAST( \
              (g.time_control->>'reconnect_seconds')::bigint, \
              (g.time_control->>'deployment_seconds')::bigint) * interval '1 second' \
            WHEN t.kind = 'reconnect' AND EXISTS ( \
              SELECT 1 FROM presence p WHERE p.game_id = t.game_id AND p.side = t.side \
              AND p.connected AND p.lease_until > $1) \
            THEN $3 + (g.time_control->>'reconnect_seconds')::bigint * interval '1 second' \
          END), \
        claimed_by = NULL, claimed_until = NULL \
    FROM games g \
    WHERE g.game_id = t.game_id AND t.fire_at > $1";

#[tracing::instrument(name = "store.pulse", level = "debug", skip_all, fields(db.system = "postgresql"))]
pub(super) async fn pulse(
    store: &PostgresStore,
    clock: &WallClock,
    rule: &OutageRule,
) -> Result<Option<Outage>, StoreError> {
    let mut tx = store.inner.pool.begin().await?;
    // The row lock orders this pulse with every other process's.
    let last: Option<OffsetDateTime> =
        sqlx::query_scalar("SELECT beat_at FROM service_pulse WHERE id FOR UPDATE")
            .fetch_one(&mut *tx)
            .await?;
    // Read only now that the database answered and the lock is held (see `GameStore::pulse`).
    let now = from_unix_ms(clock.now_unix_ms());
    let last = last.map(SystemTime::from);
    let outage = match (last, outage_gap(last, now, rule)) {
        (Some(from), Some(gap)) => {
            let shift = gap + rule.reconnect_allowance;
            let moved = sqlx::query(MOVE_RUNNING_DEADLINES)
                .bind(OffsetDateTime::from(from))
                .bind(i64::try_from(shift.as_millis()).unwrap_or(i64::MAX))
                .bind(OffsetDateTime::from(now))
                .execute(&mut *tx)
                .await?
                .rows_affected();
            sqlx::query(
                "INSERT INTO service_outages (started_at, ended_at, deadlines_moved) \
                 VALUES ($1, $2, $3)",
            )
            .bind(OffsetDateTime::from(from))
            .bind(OffsetDateTime::from(now))
            .bind(i64::try_from(moved).unwrap_or(i64::MAX))
            .execute(&mut *tx)
            .await?;
            // Every process's status watchers read again: the deadlines they show have moved.
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(super::STATUS_CHANNEL)
                .bind(super::watch::EVERY_GAME)
                .execute(&mut *tx)
                .await?;
            Some(Outage {
                from,
                to: now,
                deadlines_moved: moved,
            })
        }
        _ => None,
    };
    sqlx::query("UPDATE service_pulse SET beat_at = GREATEST(beat_at, $1) WHERE id")
        .bind(OffsetDateTime::from(now))
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(outage)
}
