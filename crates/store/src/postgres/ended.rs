//! The feed of ended games: `games.ended_seq`, numbered from the `ended_games_counter` row by the
//! append that ends a game (so positions follow commit order), read with a cursor.

use super::PostgresStore;
use super::codec::{from_db, meta_of, to_db, to_limit};
use super::games::{game_at_head, snapshot_columns};
use crate::{EndedRecord, GameRecord, StoreError};
use sqlx::Row;
use uuid::Uuid;

#[tracing::instrument(name = "store.ended_games", level = "debug", skip_all, fields(db.system = "postgresql", after_cursor = after_cursor))]
pub(super) async fn ended_games(
    store: &PostgresStore,
    after_cursor: u64,
    limit: usize,
) -> Result<Vec<EndedRecord>, StoreError> {
    let rows = sqlx::query(concat!(
        "SELECT g.game_id, g.rules, g.time_control, g.south_player, g.north_player, \
                g.ended_seq, ",
        snapshot_columns!(),
        " FROM games g WHERE g.ended_seq > $1 ORDER BY g.ended_seq LIMIT $2"
    ))
    .bind(to_db(after_cursor))
    .bind(to_limit(limit))
    .fetch_all(&store.pool())
    .await?;
    rows.iter().map(ended_of).collect()
}

/// The games ended after `after_cursor` up to the feed's committed counter (at most `limit`), and
/// that counter, in one statement: see `outbox::facts_page`.
#[tracing::instrument(name = "store.ended_page", level = "debug", skip_all, fields(db.system = "postgresql", after_cursor = after_cursor))]
pub(super) async fn ended_page(
    store: &PostgresStore,
    after_cursor: u64,
    limit: usize,
) -> Result<(Vec<EndedRecord>, u64), StoreError> {
    let rows = sqlx::query(concat!(
        "WITH c AS (SELECT last FROM ended_games_counter) \
         SELECT c.last AS watermark, g.game_id, g.rules, g.time_control, g.south_player, \
                g.north_player, g.ended_seq, ",
        snapshot_columns!(),
        " FROM c LEFT JOIN LATERAL ( \
            SELECT * FROM games g WHERE g.ended_seq > $1 AND g.ended_seq <= c.last \
            ORDER BY g.ended_seq LIMIT $2) g ON true \
          ORDER BY g.ended_seq"
    ))
    .bind(to_db(after_cursor))
    .bind(to_limit(limit))
    .fetch_all(&store.pool())
    .await?;
    let mut watermark = 0;
    let mut records = Vec::with_capacity(rows.len());
    for row in &rows {
        watermark = from_db(
            Uuid::nil(),
            "ended games counter",
            row.try_get("watermark")?,
        )?;
        if row.try_get::<Option<Uuid>, _>("game_id")?.is_some() {
            records.push(ended_of(row)?);
        }
    }
    Ok((records, watermark))
}

/// Moves the ended games' counter up to at least `target` (`hf_feed_reach`); returns it.
pub(super) async fn reach(store: &PostgresStore, target: u64) -> Result<u64, StoreError> {
    let last: i64 = sqlx::query_scalar(
        "UPDATE ended_games_counter SET last = hf_feed_reach(last, $1) RETURNING last",
    )
    .bind(to_db(target))
    .fetch_one(&store.pool())
    .await?;
    from_db(Uuid::nil(), "ended games counter", last)
}

fn ended_of(row: &sqlx::postgres::PgRow) -> Result<EndedRecord, StoreError> {
    let meta = meta_of(row)?;
    let game_id = meta.game_id;
    let (version, game) = game_at_head(row)?;
    Ok(EndedRecord {
        cursor: from_db(game_id, "ended_seq", row.try_get("ended_seq")?)?,
        record: GameRecord {
            meta,
            version,
            game,
        },
    })
}
