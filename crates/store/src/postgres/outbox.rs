//! The lifecycle outbox in Postgres (`migrations/0006_lifecycle.sql`): facts are written by the
//! SQL function `lifecycle_record`, the one writer every transaction that records facts calls
//! (the group commit's statements of appends and of creations, matchmaking's rating
//! transaction), and read here by position; followers are woken by its `NOTIFY` on
//! [`LIFECYCLE_CHANNEL`].

use super::PostgresStore;
use super::codec::{from_db, to_db, to_limit};
use crate::StoreError;
use crate::notifier::advance_position;
use hidden_front_lifecycle::{Fact, FactBody, NewFact};
use sqlx::Postgres;
use sqlx::Row;
use sqlx::postgres::{PgArguments, PgPool};
use sqlx::query::QueryAs;
use sqlx::types::time::OffsetDateTime;
use std::time::SystemTime;
use tokio::sync::watch;
use uuid::Uuid;

/// The NOTIFY channel of the outbox; payload: the last position a commit wrote.
pub const LIFECYCLE_CHANNEL: &str = "hf_lifecycle";

/// Facts as the array parameters `lifecycle_record(ids, games, bodies)` takes.
#[derive(Debug, Default)]
pub(super) struct FactColumns {
    pub(super) ids: Vec<Uuid>,
    pub(super) games: Vec<Uuid>,
    pub(super) bodies: Vec<String>,
}

impl FactColumns {
    /// How many parameters [`FactColumns::bind_to`] binds (the statements' numbering test
    /// counts with it; nothing comes after the facts).
    #[cfg(test)]
    pub(super) const PARAMS: usize = 3;

    /// The CTE `recorded`, which records a batch statement's facts of the games the CTE
    /// `passed` returns through `lifecycle_record` (in batch order), from the parameters
    /// `$first ..` that [`FactColumns::bind_to`] binds. It yields one row, so a statement's final
    /// `SELECT ... FROM passed, recorded` makes Postgres run it.
    pub(super) fn recorded_cte(first: usize, passed: &str) -> String {
        let [ids, games, bodies] = std::array::from_fn(|i| first + i);
        format!(
            "recorded AS ( \
               SELECT lifecycle_record(array_agg(f.id ORDER BY f.ord), \
                                       array_agg(f.game_id ORDER BY f.ord), \
                                       array_agg(f.body ORDER BY f.ord)) AS facts \
               FROM UNNEST(${ids}::uuid[], ${games}::uuid[], ${bodies}::text[]) WITH ORDINALITY \
                 AS f (id, game_id, body, ord) \
               WHERE f.game_id IN (SELECT game_id FROM {passed}))"
        )
    }

    /// Adds `facts` after the ones already there.
    pub(super) fn push(&mut self, facts: &[NewFact]) {
        for fact in facts {
            self.ids.push(fact.id);
            self.games.push(fact.game_id);
            self.bodies.push(fact.body.to_json());
        }
    }

    /// Binds the three columns, in this order, as `query`'s next parameters.
    pub(super) fn bind_to<'q, O>(
        self,
        query: QueryAs<'q, Postgres, O, PgArguments>,
    ) -> QueryAs<'q, Postgres, O, PgArguments> {
        query.bind(self.ids).bind(self.games).bind(self.bodies)
    }
}

#[tracing::instrument(name = "store.facts_after", level = "debug", skip_all, fields(db.system = "postgresql", after = after))]
pub(super) async fn facts_after(
    store: &PostgresStore,
    after: u64,
    limit: usize,
) -> Result<Vec<Fact>, StoreError> {
    let rows = sqlx::query(
        "SELECT f.position, f.fact_id, f.game_id, f.body::text AS body, f.occurred_at, \
                coalesce(g.created_at, f.occurred_at) AS game_created_at \
         FROM lifecycle_facts f LEFT JOIN games g ON g.game_id = f.game_id \
         WHERE f.position > $1 ORDER BY f.position LIMIT $2",
    )
    .bind(to_db(after))
    .bind(to_limit(limit))
    .fetch_all(&store.pool())
    .await?;
    rows.iter().map(fact_of).collect()
}

/// The facts after `after` up to the outbox's committed counter (at most `limit`), and that
/// counter, read in one statement (one snapshot): no fact at or below the counter can commit
/// later, which is what a reader merging several shards needs to know (`sharded.rs`).
#[tracing::instrument(name = "store.facts_page", level = "debug", skip_all, fields(db.system = "postgresql", after = after))]
pub(super) async fn facts_page(
    store: &PostgresStore,
    after: u64,
    limit: usize,
) -> Result<(Vec<Fact>, u64), StoreError> {
    let rows = sqlx::query(
        "WITH c AS (SELECT last FROM lifecycle_counter) \
         SELECT c.last AS watermark, f.position, f.fact_id, f.game_id, f.body::text AS body, \
                f.occurred_at, coalesce(g.created_at, f.occurred_at) AS game_created_at \
         FROM c LEFT JOIN LATERAL ( \
           SELECT * FROM lifecycle_facts f WHERE f.position > $1 AND f.position <= c.last \
           ORDER BY f.position LIMIT $2) f ON true \
         LEFT JOIN games g ON g.game_id = f.game_id \
         ORDER BY f.position",
    )
    .bind(to_db(after))
    .bind(to_limit(limit))
    .fetch_all(&store.pool())
    .await?;
    let mut watermark = 0;
    let mut facts = Vec::with_capacity(rows.len());
    for row in &rows {
        watermark = from_db(Uuid::nil(), "lifecycle counter", row.try_get("watermark")?)?;
        if row.try_get::<Option<i64>, _>("position")?.is_some() {
            facts.push(fact_of(row)?);
        }
    }
    Ok((facts, watermark))
}

/// Moves the outbox's counter up to at least `target` (`hf_feed_reach`), recording nothing;
/// returns the committed counter.
pub(super) async fn reach(store: &PostgresStore, target: u64) -> Result<u64, StoreError> {
    let last: i64 = sqlx::query_scalar(
        "UPDATE lifecycle_counter SET last = hf_feed_reach(last, $1) RETURNING last",
    )
    .bind(to_db(target))
    .fetch_one(&store.pool())
    .await?;
    from_db(Uuid::nil(), "lifecycle counter", last)
}

fn fact_of(row: &sqlx::postgres::PgRow) -> Result<Fact, StoreError> {
    let game_id: Uuid = row.try_get("game_id")?;
    let body: String = row.try_get("body")?;
    let occurred_at: OffsetDateTime = row.try_get("occurred_at")?;
    let game_created_at: OffsetDateTime = row.try_get("game_created_at")?;
    Ok(Fact {
        position: from_db(game_id, "position", row.try_get("position")?)?,
        id: row.try_get("fact_id")?,
        game_id,
        occurred_at: SystemTime::from(occurred_at),
        game_created_at: SystemTime::from(game_created_at),
        body: FactBody::from_json(&body).map_err(|e| StoreError::Corrupt {
            game_id,
            reason: e.to_string(),
        })?,
    })
}

/// The outbox's last committed position.
pub(super) async fn last_position(pool: &PgPool) -> Result<u64, StoreError> {
    let last: i64 = sqlx::query_scalar("SELECT last FROM lifecycle_counter")
        .fetch_one(pool)
        .await?;
    from_db(Uuid::nil(), "lifecycle position", last)
}

/// [`crate::LifecycleOutbox::watch_facts`]: LISTEN first (the store's one LISTEN connection), then
/// read the position, so no commit after the read goes unnoticed.
pub(super) async fn watch_facts(store: &PostgresStore) -> Result<watch::Receiver<u64>, StoreError> {
    super::watch::ensure_listening(store).await?;
    let mut receiver = store.inner.fact_position.subscribe();
    let position = last_position(&store.pool()).await?;
    advance_position(&store.inner.fact_position, position);
    receiver.borrow_and_update();
    Ok(receiver)
}
