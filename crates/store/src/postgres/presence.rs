//! The `presence` table: gateways' leased reports of who is connected, and a game's presence at
//! a moment (the latest unexpired "connected" lease of each side).

use super::PostgresStore;
use super::codec::is_foreign_key_violation;
use crate::{Presence, StoreError};
use hidden_front_rules::Side;
use sqlx::Row;
use sqlx::postgres::{PgPool, PgRow};
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

#[tracing::instrument(name = "store.report_presence", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id, side = side.name(), connected = connected))]
pub(super) async fn report_presence(
    store: &PostgresStore,
    game_id: Uuid,
    side: Side,
    gateway_id: &str,
    connected: bool,
    now: SystemTime,
    lease_until: SystemTime,
) -> Result<Presence, StoreError> {
    // One statement writes the report and reads every other report of the game: it sees the
    // table as it was before its own write, so this report is counted in afterwards. Gateways
    // renew every seat's report every few seconds; one statement instead of a write and a read
    // is a third fewer statements per renewal (docs/benchmarks.md, round 8).
    let others = sqlx::query(concat!(
        "WITH reported AS ( \
           INSERT INTO presence (game_id, side, gateway_id, connected, lease_until) \
           VALUES ($1, $2, $3, $4, $5) \
           ON CONFLICT (game_id, side, gateway_id) DO UPDATE \
           SET connected = EXCLUDED.connected, lease_until = EXCLUDED.lease_until, \
               updated_at = now() \
           RETURNING game_id) \
         SELECT ",
        latest_leases!(
            "r.game_id",
            "$6",
            " AND NOT (p.side = $2 AND p.gateway_id = $3)"
        ),
        " FROM reported r"
    ))
    .bind(game_id)
    .bind(side.name())
    .bind(gateway_id)
    .bind(connected)
    .bind(OffsetDateTime::from(lease_until))
    .bind(OffsetDateTime::from(now))
    .fetch_one(&store.inner.pool)
    .await;
    let row = match others {
        Ok(row) => row,
        Err(error) if is_foreign_key_violation(&error) => {
            return Err(StoreError::NotFound(game_id));
        }
        Err(error) => return Err(error.into()),
    };
    let mut presence = presence_of(&row)?;
    presence.count(side, connected, lease_until, now);
    Ok(presence)
}

/// The `south` and `north` columns (each side's latest unexpired "connected" lease) as a
/// [`Presence`].
fn presence_of(row: &PgRow) -> Result<Presence, StoreError> {
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
    presence_at(&store.inner.pool, game_id, now)
        .await?
        .ok_or(StoreError::NotFound(game_id))
}
