//! The feed of ended games: `games.ended_seq`, numbered from the `ended_games_counter` row by the
//! append that ends a game (so positions follow commit order), read with a cursor.

use super::PostgresStore;
use super::codec::{from_db, meta_of, to_db, to_limit};
use super::games::{game_at_head, snapshot_columns};
use crate::{EndedRecord, GameRecord, StoreError};
use sqlx::Row;

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
    .fetch_all(&store.inner.pool)
    .await?;
    rows.iter()
        .map(|row| {
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
        })
        .collect()
}
