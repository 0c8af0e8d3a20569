//! Appends and the log: the one guarded statement that writes the snapshot, the command record,
//! the events and the NOTIFY together (invariant 4 of ARCHITECTURE.md), its timers and its place
//! in the ended-games feed in the same transaction; the stored answers of commands; reading the
//! log.

use super::codec::{
    decode_json, encode_events, encode_json, from_db, phase_text, to_db, to_limit, violates,
};
use super::games::{require_game, version_of};
use super::timers::apply_timer_change;
use super::{CHANNEL, PostgresStore};
use crate::{Append, StoreError, StoredEvent};
use hidden_front_rules::Event;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

#[tracing::instrument(name = "store.append", level = "info", skip_all, fields(db.system = "postgresql", game_id = %append.game_id, expected_version = append.expected_version, event_count = append.events.len(), version = tracing::field::Empty))]
pub(super) async fn append_armed(
    store: &PostgresStore,
    append: Append<'_>,
) -> Result<u64, StoreError> {
    let Append {
        game_id,
        expected_version,
        events,
        game,
        command,
        timers,
        trace_parent,
    } = append;
    let new_version = expected_version.saturating_add(events.len() as u64);
    let snapshot = encode_json(game_id, "engine state", game)?;
    let phase = phase_text(game_id, game.phase())?;
    let (seqs, values) = encode_events(game_id, expected_version.saturating_add(1), events)?;
    let duplicate = |key: &str, response: Vec<u8>| StoreError::DuplicateCommand {
        game_id,
        key: key.to_owned(),
        response,
    };

    let mut tx = store.inner.pool.begin().await?;
    // A retry of an applied command gets its first answer, even if the game moved on since:
    // found below when the version guard refuses, or by the command record's primary key
    // when it passes (one round trip less than looking first).

    // One statement (one round trip) for the guarded snapshot update, the command record,
    // the events and the cross-process announcement. The guard: only the writer that finds
    // the version it judged against wins; a racing writer blocks on the row lock, then sees
    // the new version and updates nothing, and then nothing else is written either.
    let command_key = command.map(|c| c.key);
    let command_response = command.map(|c| c.response);
    let written = sqlx::query(
        "WITH guard AS ( \
           UPDATE games SET version = $3, snapshot = $4, phase = $5, updated_at = now() \
           WHERE game_id = $1 AND version = $2 RETURNING 1), \
         command AS ( \
           INSERT INTO game_commands (game_id, idempotency_key, response, version) \
           SELECT $1, $6, $7, $3 WHERE $6::text IS NOT NULL AND EXISTS (SELECT 1 FROM guard) \
           RETURNING 1), \
         logged AS ( \
           INSERT INTO game_events (game_id, seq, event, trace_parent) \
           SELECT $1, e.seq, e.event, $10 FROM UNNEST($8::bigint[], $9::jsonb[]) AS e (seq, event) \
           WHERE EXISTS (SELECT 1 FROM guard) \
           RETURNING 1) \
         SELECT (SELECT count(*) FROM guard) AS updated, \
                (SELECT count(*) FROM command) AS commands, \
                (SELECT count(*) FROM logged) AS logged, \
                CASE WHEN EXISTS (SELECT 1 FROM guard) AND cardinality($8::bigint[]) > 0 \
                     THEN pg_notify($11, $1::text || ':' || $3::text) END AS announced",
    )
    .bind(game_id)
    .bind(to_db(expected_version))
    .bind(to_db(new_version))
    .bind(snapshot)
    .bind(phase)
    .bind(command_key)
    .bind(command_response)
    .bind(seqs)
    .bind(values)
    .bind(trace_parent)
    .bind(CHANNEL)
    .fetch_one(&mut *tx)
    .await;
    let updated: i64 = match written {
        Ok(row) => row.try_get("updated")?,
        // The key is known: a retry of an applied command (or the same command committed
        // meanwhile by a racing writer). Nothing of ours stays; the first answer wins.
        Err(error) if violates(&error, "game_commands_pkey") => {
            tx.rollback().await?;
            let key = command_key.unwrap_or_default();
            let mut conn = store.inner.pool.acquire().await?;
            let response = stored_response(&mut conn, game_id, key)
                .await?
                .unwrap_or_default();
            return Err(duplicate(key, response));
        }
        // The version guard passed, yet a seq is taken: the snapshot's version and the log
        // disagree. The primary key refuses the fork; nothing is written.
        Err(error) if violates(&error, "game_events_pkey") => {
            tx.rollback().await?;
            return Err(StoreError::Corrupt {
                game_id,
                reason: format!(
                    "the log already holds an event after version {expected_version}, \
                     which the snapshot row claims is the latest"
                ),
            });
        }
        Err(error) => return Err(error.into()),
    };
    if updated == 0 {
        // The writer that beat us may have been this very command (a concurrent retry): a
        // new statement sees its committed record.
        if let Some(command) = command
            && let Some(response) = stored_response(&mut tx, game_id, command.key).await?
        {
            tx.rollback().await?;
            return Err(duplicate(command.key, response));
        }
        let actual = version_of(&mut tx, game_id).await?;
        tx.rollback().await?;
        return Err(match actual {
            None => StoreError::NotFound(game_id),
            Some(actual) => StoreError::VersionConflict {
                game_id,
                expected: expected_version,
                actual,
            },
        });
    }

    apply_timer_change(&mut tx, game_id, timers).await?;
    if events.iter().any(|e| matches!(e, Event::Ended { .. })) {
        // The counter row's lock is held to commit: feed positions follow commit order.
        sqlx::query(
            "WITH next AS (UPDATE ended_games_counter SET last = last + 1 RETURNING last) \
             UPDATE games SET ended_seq = (SELECT last FROM next) WHERE game_id = $1",
        )
        .bind(game_id)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    if !events.is_empty() {
        store.inner.notifier.notify(game_id, new_version);
    }
    tracing::Span::current().record("version", new_version);
    Ok(new_version)
}

#[tracing::instrument(name = "store.command_response", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id))]
pub(super) async fn command_response(
    store: &PostgresStore,
    game_id: Uuid,
    key: &str,
) -> Result<Option<Vec<u8>>, StoreError> {
    let mut conn = store.inner.pool.acquire().await?;
    let response = stored_response(&mut conn, game_id, key).await?;
    drop(conn);
    if response.is_none() {
        require_game(store, game_id).await?;
    }
    Ok(response)
}

/// The stored answer of a command, if it was applied.
pub(super) async fn stored_response(
    conn: &mut PgConnection,
    game_id: Uuid,
    key: &str,
) -> Result<Option<Vec<u8>>, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT response FROM game_commands WHERE game_id = $1 AND idempotency_key = $2",
    )
    .bind(game_id)
    .bind(key)
    .fetch_optional(conn)
    .await?)
}

#[tracing::instrument(name = "store.events", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id, from_seq = from_seq, limit = limit, event_count = tracing::field::Empty))]
pub(super) async fn events(
    store: &PostgresStore,
    game_id: Uuid,
    from_seq: u64,
    limit: usize,
) -> Result<Vec<StoredEvent>, StoreError> {
    let rows = if limit == 0 {
        Vec::new()
    } else {
        sqlx::query(
            "SELECT seq, event, trace_parent FROM game_events WHERE game_id = $1 AND seq >= $2 \
             ORDER BY seq LIMIT $3",
        )
        .bind(game_id)
        .bind(to_db(from_seq))
        .bind(to_limit(limit))
        .fetch_all(&store.inner.pool)
        .await?
    };
    if rows.is_empty() {
        require_game(store, game_id).await?;
    }
    tracing::Span::current().record("event_count", rows.len());
    rows.into_iter()
        .map(|row| {
            Ok(StoredEvent {
                seq: from_db(game_id, "seq", row.try_get("seq")?)?,
                event: decode_json(game_id, "event", row.try_get("event")?)?,
                trace_parent: row.try_get("trace_parent")?,
            })
        })
        .collect()
}
