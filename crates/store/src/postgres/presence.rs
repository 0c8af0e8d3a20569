//! The `presence` table: gateways' leased reports of who is connected, and a game's presence at
//! a moment (the latest unexpired "connected" lease of each side).

use super::PostgresStore;
use super::codec::is_foreign_key_violation;
use crate::{Presence, StoreError};
use hidden_front_rules::Side;
use sqlx::Row;
use sqlx::postgres::PgPool;
use sqlx::types::time::OffsetDateTime;
use std::time::SystemTime;
use uuid::Uuid;

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
    .execute(&store.inner.pool)
    .await;
    match upserted {
        Ok(_) => {}
        Err(error) if is_foreign_key_violation(&error) => {
            return Err(StoreError::NotFound(game_id));
        }
        Err(error) => return Err(error.into()),
    }
    presence_at(&store.inner.pool, game_id, now)
        .await?
        .ok_or(StoreError::NotFound(game_id))
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
