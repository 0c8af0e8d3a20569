//! The admin API's queries: games found by filter (newest first, keyset-paged by
//! `(created_at, game_id)` on `games_created_at_idx`), and the audit log (`admin_audit`,
//! `migrations/0008_admin.sql`).

use super::PostgresStore;
use super::codec::{from_db, meta_of, parse_phase, phase_text, to_limit};
use crate::admin::{
    AdminStore, AuditAction, AuditEntry, AuditQuery, FoundGame, GameFilter, NewAuditEntry, page,
};
use crate::{GameSummary, StoreError};
use async_trait::async_trait;
use sqlx::Row;
use sqlx::postgres::PgRow;
use sqlx::types::time::OffsetDateTime;
use uuid::Uuid;

/// The columns of an audit entry that [`entry_of`] reads (a macro, so the statements stay
/// static strings).
macro_rules! audit_columns {
    () => {
        "entry_id, at, operator, action, game_id, reason, outcome"
    };
}

#[async_trait]
impl AdminStore for PostgresStore {
    #[tracing::instrument(name = "store.find_games", level = "info", skip_all, fields(db.system = "postgresql", limit = filter.limit, game_count = tracing::field::Empty))]
    async fn find_games(&self, filter: &GameFilter) -> Result<Vec<FoundGame>, StoreError> {
        let phase = filter
            .phase
            .map(|phase| phase_text(Uuid::nil(), phase))
            .transpose()?;
        let play = phase_text(Uuid::nil(), hidden_front_rules::Phase::Play)?;
        let time = |t: Option<std::time::SystemTime>| t.map(OffsetDateTime::from);
        // Every criterion is a parameter that is either NULL (not asked) or must hold. The last
        // event's time is read from the log's primary key, one row per game found.
        let rows = sqlx::query(
            "SELECT g.game_id, g.rules, g.time_control, g.south_player, g.north_player, \
                    COALESCE(g.head_version, g.version) AS version, g.phase, g.created_at, \
                    COALESCE(last.created_at, g.created_at) AS last_event_at \
             FROM games g \
             LEFT JOIN LATERAL (SELECT e.created_at FROM game_events e \
                                WHERE e.game_id = g.game_id ORDER BY e.seq DESC LIMIT 1) last \
               ON true \
             WHERE ($1::text IS NULL OR g.south_player = $1 OR g.north_player = $1) \
               AND ($2::text IS NULL OR g.phase = $2) \
               AND ($3::text IS NULL OR g.rules = $3) \
               AND ($4::timestamptz IS NULL OR g.created_at >= $4) \
               AND ($5::timestamptz IS NULL OR g.created_at < $5) \
               AND ($6::timestamptz IS NULL \
                    OR (g.phase = $10 AND COALESCE(last.created_at, g.created_at) < $6)) \
               AND ($7::timestamptz IS NULL OR (g.created_at, g.game_id) < ($7, $8::uuid)) \
               AND ($11::uuid IS NULL OR g.game_id = $11) \
             ORDER BY g.created_at DESC, g.game_id DESC LIMIT $9",
        )
        .bind(filter.player.as_deref())
        .bind(phase)
        .bind(filter.rules.as_deref())
        .bind(time(filter.created_from))
        .bind(time(filter.created_before))
        .bind(time(filter.idle_since))
        .bind(time(filter.after.map(|c| c.created_at)))
        .bind(filter.after.map(|c| c.game_id))
        .bind(to_limit(page(filter.limit)))
        .bind(play)
        .bind(filter.game_id)
        .fetch_all(&self.pool())
        .await?;
        tracing::Span::current().record("game_count", rows.len());
        rows.iter()
            .map(|row| {
                let meta = meta_of(row)?;
                let game_id = meta.game_id;
                let created_at: OffsetDateTime = row.try_get("created_at")?;
                let last_event_at: OffsetDateTime = row.try_get("last_event_at")?;
                Ok(FoundGame {
                    summary: GameSummary {
                        meta,
                        phase: parse_phase(game_id, row.try_get("phase")?)?,
                        version: from_db(game_id, "version", row.try_get("version")?)?,
                    },
                    created_at: created_at.into(),
                    last_event_at: last_event_at.into(),
                })
            })
            .collect()
    }

    #[tracing::instrument(name = "store.append_audit", level = "info", skip_all, fields(db.system = "postgresql", game_id = %entry.game_id, action = entry.action.name()))]
    async fn append_audit(&self, entry: NewAuditEntry<'_>) -> Result<AuditEntry, StoreError> {
        let row = sqlx::query(concat!(
            "INSERT INTO admin_audit (operator, action, game_id, reason, outcome) \
             VALUES ($1, $2, $3, $4, $5) RETURNING ",
            audit_columns!()
        ))
        .bind(entry.operator)
        .bind(entry.action.name())
        .bind(entry.game_id)
        .bind(entry.reason)
        .bind(entry.outcome)
        .fetch_one(&self.pool())
        .await?;
        entry_of(&row)
    }

    #[tracing::instrument(name = "store.audit_log", level = "info", skip_all, fields(db.system = "postgresql", limit = query.limit))]
    async fn audit_log(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        let cursor = |id: Option<u64>| id.map(|id| i64::try_from(id).unwrap_or(i64::MAX));
        let rows = match query.after {
            Some(_) => {
                sqlx::query(concat!(
                    "SELECT ",
                    audit_columns!(),
                    " FROM admin_audit \
                     WHERE entry_id > $1 AND ($2::uuid IS NULL OR game_id = $2) \
                     ORDER BY entry_id LIMIT $3"
                ))
                .bind(cursor(query.after))
                .bind(query.game_id)
                .bind(to_limit(page(query.limit)))
                .fetch_all(&self.pool())
                .await?
            }
            None => {
                sqlx::query(concat!(
                    "SELECT ",
                    audit_columns!(),
                    " FROM admin_audit \
                     WHERE ($1::bigint IS NULL OR entry_id < $1) \
                       AND ($2::uuid IS NULL OR game_id = $2) \
                     ORDER BY entry_id DESC LIMIT $3"
                ))
                .bind(cursor(query.before))
                .bind(query.game_id)
                .bind(to_limit(page(query.limit)))
                .fetch_all(&self.pool())
                .await?
            }
        };
        rows.iter().map(entry_of).collect()
    }
}

/// An `admin_audit` row.
fn entry_of(row: &PgRow) -> Result<AuditEntry, StoreError> {
    let game_id: Uuid = row.try_get("game_id")?;
    let action: String = row.try_get("action")?;
    let at: OffsetDateTime = row.try_get("at")?;
    Ok(AuditEntry {
        id: from_db(game_id, "audit entry id", row.try_get("entry_id")?)?,
        at: at.into(),
        operator: row.try_get("operator")?,
        action: AuditAction::from_name(&action).ok_or_else(|| StoreError::Corrupt {
            game_id,
            reason: format!("audit action {action:?} is unknown"),
        })?,
        game_id,
        reason: row.try_get("reason")?,
        outcome: row.try_get("outcome")?,
    })
}
