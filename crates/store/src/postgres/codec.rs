//! Conversions between the store's values and Postgres columns: versions and seqs as `bigint`,
//! engine values as `jsonb` (or JSON bytes for the raw snapshot), read without an intermediate
//! `serde_json::Value`, phases and sides as text, `games` rows as [`GameMeta`], and the
//! constraint violations the statements turn into answers. Nothing here talks to the database.

use crate::{GameMeta, StoreError, TimeControl};
use hidden_front_rules::{Phase, Side};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::Row;
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use uuid::Uuid;

/// A version or seq as Postgres stores it (`bigint`). Values beyond `i64::MAX` cannot occur in a
/// real game; they saturate, so a guard on such a version simply never matches.
pub(super) fn to_db(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A stored version or seq; negative means the row was tampered with.
pub(super) fn from_db(game_id: Uuid, what: &str, value: i64) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt {
        game_id,
        reason: format!("{what} is negative ({value})"),
    })
}

/// A collection length as a SQL `LIMIT`.
pub(super) fn to_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// Encodes a value for a `jsonb` column. The engine types always encode; a failure would be a bug
/// in them, reported rather than panicking.
pub(super) fn encode_json<T: Serialize>(
    game_id: Uuid,
    what: &str,
    value: &T,
) -> Result<serde_json::Value, StoreError> {
    serde_json::to_value(value).map_err(|error| StoreError::Corrupt {
        game_id,
        reason: format!("{what} does not encode as JSON: {error}"),
    })
}

/// Encodes a value as JSON text for a parameter the statement casts to `jsonb` (no intermediate
/// `serde_json::Value`); fails like [`encode_json`].
pub(super) fn encode_json_text<T: Serialize>(
    game_id: Uuid,
    what: &str,
    value: &T,
) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|error| StoreError::Corrupt {
        game_id,
        reason: format!("{what} does not encode as JSON: {error}"),
    })
}

/// Encodes a value as JSON bytes for a `bytea` column that Postgres stores without parsing
/// (`games.raw_snapshot`); fails like [`encode_json`].
pub(super) fn encode_json_bytes<T: Serialize>(
    game_id: Uuid,
    what: &str,
    value: &T,
) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value).map_err(|error| StoreError::Corrupt {
        game_id,
        reason: format!("{what} does not encode as JSON: {error}"),
    })
}

/// Decodes JSON bytes from a `bytea` column ([`encode_json_bytes`]).
pub(super) fn decode_json_bytes<T: DeserializeOwned>(
    game_id: Uuid,
    what: &str,
    bytes: &[u8],
) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|error| StoreError::Corrupt {
        game_id,
        reason: format!("{what} does not decode: {error}"),
    })
}

/// Decodes a JSON value already parsed (the `phase` column's text as a JSON string).
fn decode_json<T: DeserializeOwned>(
    game_id: Uuid,
    what: &str,
    value: serde_json::Value,
) -> Result<T, StoreError> {
    serde_json::from_value(value).map_err(|error| StoreError::Corrupt {
        game_id,
        reason: format!("{what} does not decode: {error}"),
    })
}

/// Reads the `jsonb` (or `json`) column `column` of `row` straight into `T`, or `None` for SQL
/// NULL. sqlx hands serde the column's bytes, so no `serde_json::Value` tree is built and walked
/// on the way: that detour was more than half the cost of decoding a game or a page of its log
/// (docs/benchmarks.md, "jsonb read straight into its type"). A value that does not decode is
/// [`StoreError::Corrupt`], naming `what`.
pub(super) fn nullable_json_column<T: DeserializeOwned>(
    row: &PgRow,
    column: &str,
    game_id: Uuid,
    what: &str,
) -> Result<Option<T>, StoreError> {
    match row.try_get::<Option<Json<T>>, _>(column) {
        Ok(value) => Ok(value.map(|Json(value)| value)),
        Err(sqlx::Error::ColumnDecode { source, .. }) => Err(StoreError::Corrupt {
            game_id,
            reason: format!("{what} does not decode: {source}"),
        }),
        Err(error) => Err(error.into()),
    }
}

/// [`nullable_json_column`] for a column that is never NULL (a NULL is [`StoreError::Corrupt`]).
pub(super) fn json_column<T: DeserializeOwned>(
    row: &PgRow,
    column: &str,
    game_id: Uuid,
    what: &str,
) -> Result<T, StoreError> {
    nullable_json_column(row, column, game_id, what)?.ok_or_else(|| StoreError::Corrupt {
        game_id,
        reason: format!("{what} is NULL"),
    })
}

/// The `phase` column's text: the phase's serde name, so it follows the engine's own naming.
pub(super) fn phase_text(game_id: Uuid, phase: Phase) -> Result<String, StoreError> {
    match encode_json(game_id, "phase", &phase)? {
        serde_json::Value::String(text) => Ok(text),
        other => Err(StoreError::Corrupt {
            game_id,
            reason: format!("phase encodes as {other}, not a string"),
        }),
    }
}

/// Reads the `phase` column.
pub(super) fn parse_phase(game_id: Uuid, text: String) -> Result<Phase, StoreError> {
    decode_json(game_id, "phase", serde_json::Value::String(text))
}

/// Whether a database error is a unique (or primary key) violation.
pub(super) fn is_unique_violation(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|error| error.is_unique_violation())
}

/// Whether a database error is a unique violation of the named constraint.
pub(super) fn violates(error: &sqlx::Error, constraint: &str) -> bool {
    error
        .as_database_error()
        .is_some_and(|error| error.is_unique_violation() && error.constraint() == Some(constraint))
}

/// Whether a database error is a foreign key violation (a row for a game that does not exist).
pub(super) fn is_foreign_key_violation(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|error| error.is_foreign_key_violation())
}

/// A `games` row's metadata (columns `game_id`, `rules`, `time_control`, `south_player`,
/// `north_player`).
pub(super) fn meta_of(row: &PgRow) -> Result<GameMeta, StoreError> {
    let game_id: Uuid = row.try_get("game_id")?;
    let time_control: TimeControl = json_column(row, "time_control", game_id, "time control")?;
    Ok(GameMeta {
        game_id,
        rules: row.try_get("rules")?,
        time_control,
        south_player: row.try_get("south_player")?,
        north_player: row.try_get("north_player")?,
    })
}

/// The `side` column's text.
pub(super) fn side_text(side: Side) -> &'static str {
    match side {
        Side::South => "south",
        Side::North => "north",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_round_trip_through_text() {
        let game = Uuid::new_v4();
        for phase in [Phase::Deployment, Phase::Play, Phase::Ended] {
            let text = phase_text(game, phase).unwrap();
            assert_eq!(parse_phase(game, text).unwrap(), phase);
        }
        assert_eq!(phase_text(game, Phase::Play).unwrap(), "play");
        assert!(matches!(
            parse_phase(game, "sideways".into()),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn versions_convert_without_panics() {
        let game = Uuid::new_v4();
        assert_eq!(to_db(u64::MAX), i64::MAX);
        assert_eq!(to_db(7), 7);
        assert!(matches!(
            from_db(game, "version", -1),
            Err(StoreError::Corrupt { .. })
        ));
        assert_eq!(from_db(game, "version", 9).unwrap(), 9);
    }
}
