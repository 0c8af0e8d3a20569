//! The `presence` table: gateways' leased reports of who is connected, and a game's presence at
//! a moment (the latest unexpired "connected" lease of each side).

use super::PostgresStore;
use super::codec::{is_foreign_key_violation, side_text, to_db};
use super::timers::{rearm_slot, upsert_timer};
use crate::{ArmAfterReport, Presence, StoreError};
use hidden_front_rules::Side;
use sqlx::Postgres;
use sqlx::Row;
use sqlx::postgres::{PgArguments, PgPool, PgRow};
use sqlx::query::Query;
use sqlx::types::time::OffsetDateTime;
use std::time::SystemTime;
use uuid::Uuid;

/// The `south` and `north` columns of a game's presence: the latest end of each side's
/// "connected" leases of the game `$game` that have not ended at `$now` (NULL: none, the side is
/// away), counting only the leases that also meet `$also` (SQL after `AND`, or empty).
macro_rules! latest_leases {
    ($game:literal, $now:literal, $also:literal) => {
        concat!(
            "(SELECT max(p.lease_until) FROM presence p WHERE p.game_id = ",
            $game,
            " AND p.side = 'south' AND p.connected AND p.lease_until > ",
            $now,
            $also,
            ") AS south, ",
            "(SELECT max(p.lease_until) FROM presence p WHERE p.game_id = ",
            $game,
            " AND p.side = 'north' AND p.connected AND p.lease_until > ",
            $now,
            $also,
            ") AS north"
        )
    };
}

pub(super) use latest_leases;

/// [`latest_leases`] of every report but the one being written (side `$2`, gateway `$3`).
macro_rules! other_leases {
    ($game:literal, $now:literal) => {
        latest_leases!($game, $now, " AND NOT (p.side = $2 AND p.gateway_id = $3)")
    };
}

/// The column `was_connected`: whether side `$2` of game `$1` counted as connected at `$6`
/// before this statement's report (the statement reads the table as it was before its write).
macro_rules! was_connected {
    () => {
        ", EXISTS (SELECT 1 FROM presence p WHERE p.game_id = $1 AND p.side = $2 \
           AND p.connected AND p.lease_until > $6) AS was_connected"
    };
}

/// The CTE `reported`: writes the report of game `$1`, side `$2`, gateway `$3` (connected `$4`,
/// lease until `$5`), replacing that gateway's earlier report of the side.
macro_rules! report_cte {
    () => {
        "reported AS ( \
           INSERT INTO presence (game_id, side, gateway_id, connected, lease_until) \
           VALUES ($1, $2, $3, $4, $5) \
           ON CONFLICT (game_id, side, gateway_id) DO UPDATE \
           SET connected = EXCLUDED.connected, lease_until = EXCLUDED.lease_until, \
               updated_at = now() \
           RETURNING game_id)"
    };
}

/// The sides connected at `now` for a game, or `None` if there is no such game.
async fn presence_at(
    pool: &PgPool,
    game_id: Uuid,
    now: SystemTime,
) -> Result<Option<Presence>, StoreError> {
    let row = sqlx::query(concat!(
        "SELECT ",
        latest_leases!("g.game_id", "$2", ""),
        " FROM games g WHERE g.game_id = $1"
    ))
    .bind(game_id)
    .bind(OffsetDateTime::from(now))
    .fetch_optional(pool)
    .await?;
    row.as_ref().map(presence_of).transpose()
}

/// One gateway's report of one side's connection (see [`crate::GameStore::report_presence`]).
pub(super) struct Report<'a> {
    pub(super) game_id: Uuid,
    pub(super) side: Side,
    pub(super) gateway_id: &'a str,
    pub(super) connected: bool,
    pub(super) now: SystemTime,
    pub(super) lease_until: SystemTime,
}

/// Writes a report, reads the game's other reports and, when asked, arms the side's timer, in
/// one statement where it can (docs/benchmarks.md, "Presence renewals in one statement":
/// gateways renew every seat's report every few seconds, so each statement saved counts).
///
/// The statement sees the table as it was before its own write, so it reads the *other*
/// reports and this one is counted in afterwards ([`Presence::count`]). The timer depends on
/// how long the side counts as connected after the report, known only then; so the statement
/// arms the timer made for the likely answer (this report's own lease, nobody else's longer)
/// and only if the other reports leave that answer true. Otherwise (another gateway holds a
/// longer lease for the side) a second statement arms the timer made from the real answer.
#[tracing::instrument(name = "store.report_presence", level = "info", skip_all, fields(db.system = "postgresql", game_id = %report.game_id, side = report.side.name(), connected = report.connected, arms = arm.is_some()))]
pub(super) async fn report_presence(
    store: &PostgresStore,
    report: Report<'_>,
    arm: Option<&ArmAfterReport<'_>>,
) -> Result<Presence, StoreError> {
    let game_id = report.game_id;
    let side = report.side;
    let mut own = Presence::default();
    own.count(side, report.connected, report.lease_until, report.now);
    let likely = own.connected_until[side.index()];
    let mut conn = store.pool().acquire().await?;
    let written = match arm {
        None => {
            bind_report(
                sqlx::query(concat!(
                    "WITH ",
                    report_cte!(),
                    " SELECT ",
                    other_leases!("r.game_id", "$6"),
                    ", false AS armed",
                    was_connected!(),
                    " FROM reported r"
                )),
                &report,
            )
            .fetch_one(&mut *conn)
            .await
        }
        Some(arm) => {
            let timer = arm(likely);
            bind_report(
                sqlx::query(concat!(
                    "WITH ",
                    report_cte!(),
                    ", others AS (SELECT ",
                    other_leases!("r.game_id", "$6"),
                    " FROM reported r), \
                 armed AS ( \
                   INSERT INTO game_timers (game_id, slot, kind, side, armed_version, fire_at) \
                   SELECT $1, $8, $9, $10, $11, $12 FROM others o \
                   WHERE (CASE $2 WHEN 'south' THEN o.south ELSE o.north END) IS NULL \
                      OR (CASE $2 WHEN 'south' THEN o.south ELSE o.north END) <= $7 ",
                    rearm_slot!(),
                    " RETURNING 1) \
                 SELECT o.south, o.north, EXISTS (SELECT 1 FROM armed) AS armed",
                    was_connected!(),
                    " FROM others o"
                )),
                &report,
            )
            .bind(likely.map(OffsetDateTime::from))
            .bind(timer.slot().name())
            .bind(timer.kind.name())
            .bind(side_text(timer.side))
            .bind(to_db(timer.armed_version))
            .bind(OffsetDateTime::from(timer.fire_at))
            .fetch_one(&mut *conn)
            .await
        }
    };
    let row = match written {
        Ok(row) => row,
        Err(error) if is_foreign_key_violation(&error) => {
            return Err(StoreError::NotFound(game_id));
        }
        Err(error) => return Err(error.into()),
    };
    let mut presence = presence_of(&row)?;
    presence.count(side, report.connected, report.lease_until, report.now);
    let was_connected: bool = row.try_get("was_connected")?;
    if let Some(arm) = arm {
        let armed: bool = row.try_get("armed")?;
        if !armed {
            upsert_timer(&mut conn, &arm(presence.connected_until[side.index()])).await?;
        }
    }
    let connected = presence.connected()[side.index()];
    if connected != was_connected || (arm.is_some() && !connected) {
        // Renewals change nothing a viewer sees; a flip does, and so does a new away deadline
        // of a side that is away: wake every process's watchers, once the timer is written.
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(super::STATUS_CHANNEL)
            .bind(game_id.to_string())
            .execute(&mut *conn)
            .await?;
    }
    Ok(presence)
}

/// Binds the report's columns as the parameters `$1`–`$6` of [`report_cte`] and
/// [`other_leases`].
fn bind_report<'q>(
    query: Query<'q, Postgres, PgArguments>,
    report: &Report<'q>,
) -> Query<'q, Postgres, PgArguments> {
    query
        .bind(report.game_id)
        .bind(report.side.name())
        .bind(report.gateway_id)
        .bind(report.connected)
        .bind(OffsetDateTime::from(report.lease_until))
        .bind(OffsetDateTime::from(report.now))
}

/// The `south` and `north` columns (each side's latest unexpired "connected" lease) as a
/// [`Presence`].
/// The presence in a row with [`latest_leases`]' columns.
pub(super) fn presence_of(row: &PgRow) -> Result<Presence, StoreError> {
    let south: Option<OffsetDateTime> = row.try_get("south")?;
    let north: Option<OffsetDateTime> = row.try_get("north")?;
    Ok(Presence {
        connected_until: [south.map(SystemTime::from), north.map(SystemTime::from)],
    })
}

#[tracing::instrument(name = "store.presence", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id))]
pub(super) async fn presence(
    store: &PostgresStore,
    game_id: Uuid,
    now: SystemTime,
) -> Result<Presence, StoreError> {
    presence_at(&store.pool(), game_id, now)
        .await?
        .ok_or(StoreError::NotFound(game_id))
}
