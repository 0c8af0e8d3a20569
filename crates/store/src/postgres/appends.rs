//! Appends and the log: an append's snapshot, command record, events, `NOTIFY`, timers and
//! place in the ended-games feed, encoded here and written by one guarded statement together
//! with other games' appends (`batch.rs`, invariant 4 of ARCHITECTURE.md); what a refused guard
//! or a known key means; the stored answers of commands; reading the log.

use super::PostgresStore;
use super::batch::Encoded;
use super::codec::{
    encode_json_bytes, encode_json_text, from_db, json_column, phase_text, to_db, to_limit,
    violates,
};
use super::games::{require_game, version_of};
use super::timers::one_per_slot;
use crate::timers::TurnTimerChange;
use crate::{Append, StoreError, StoredEvent};
use hidden_front_rules::{Event, Phase};
use sqlx::types::time::OffsetDateTime;
use sqlx::{PgConnection, Row};
use std::time::SystemTime;
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
        facts,
        fired,
    } = append;
    let new_version = expected_version.saturating_add(events.len() as u64);
    let first_seq = expected_version.saturating_add(1);
    let turn = match timers.turn {
        Some(TurnTimerChange::Arm(timer)) => Some(timer),
        _ => None,
    };
    let arms = one_per_slot(turn.iter().chain(&timers.reconnect));
    let armed_turn_deadline = timers.armed_turn_deadline();
    let encoded = Encoded {
        game_id,
        expected_version: to_db(expected_version),
        new_version: to_db(new_version),
        snapshot: snapshot_due(
            store.snapshot_interval,
            expected_version,
            new_version,
            game.phase(),
        )
        .then(|| encode_json_bytes(game_id, "engine state", game))
        .transpose()?,
        phase: phase_text(game_id, game.phase())?,
        command: command.map(|c| (c.key.to_owned(), c.response.to_vec())),
        seqs: (0u64..)
            .take(events.len())
            .map(|offset| to_db(first_seq.saturating_add(offset)))
            .collect(),
        events: events
            .iter()
            .map(|event| encode_json_text(game_id, "event", event))
            .collect::<Result<_, _>>()?,
        trace_parent: trace_parent.map(str::to_owned),
        armed_turn_deadline,
        facts: facts.to_vec(),
        ends: events.iter().any(|e| matches!(e, Event::Ended { .. })),
        clear_all: timers.clear_all,
        arms,
        // Clearing the game's timers leaves no turn timer to re-fence.
        retag: match timers.turn {
            Some(TurnTimerChange::Retag { armed_version }) if !timers.clear_all => {
                Some(to_db(armed_version))
            }
            _ => None,
        },
        fired: fired.copied(),
    };
    let duplicate = |key: &str, response: Vec<u8>| StoreError::DuplicateCommand {
        game_id,
        key: key.to_owned(),
        response,
    };

    // A retry of an applied command gets its first answer, even if the game moved on since:
    // found below when the version guard refuses, or by the command record's primary key
    // when it passes (one round trip less than looking first). The guard: only the writer that
    // finds the version it judged against wins; a racing writer blocks on the row lock, then
    // sees the new version and writes nothing of its append.
    let own = store.inner.recent.begin(&store.inner.notifier, game_id);
    let written = store.inner.group_commit.write(encoded).await;
    let committed_at = match written {
        Ok(Some(at)) => at,
        Ok(None) => {
            // The writer that beat us may have been this very command (a concurrent retry): a
            // new statement sees its committed record.
            let mut conn = store.pool().acquire().await?;
            if let Some(command) = command
                && let Some(response) = stored_response(&mut conn, game_id, command.key).await?
            {
                return Err(duplicate(command.key, response));
            }
            return Err(match version_of(&mut conn, game_id).await? {
                None => StoreError::NotFound(game_id),
                // At the version judged against: the fired timer is what failed the guard.
                Some(actual) if actual == expected_version && fired.is_some() => {
                    StoreError::TimerChanged(game_id)
                }
                Some(actual) => StoreError::VersionConflict {
                    game_id,
                    expected: expected_version,
                    actual,
                },
            });
        }
        // The key is known: a retry of an applied command (or the same command committed
        // meanwhile by a racing writer). Nothing of ours stays; the first answer wins.
        Err(error) if violates(&error, "game_commands_pkey") => {
            let key = command.map(|c| c.key).unwrap_or_default();
            let mut conn = store.pool().acquire().await?;
            let response = stored_response(&mut conn, game_id, key)
                .await?
                .unwrap_or_default();
            return Err(duplicate(key, response));
        }
        // The version guard passed, yet a seq is taken: the snapshot's version and the log
        // disagree. The primary key refuses the fork; nothing is written.
        Err(error) if violates(&error, "game_events_pkey") => {
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
    if !events.is_empty() {
        own.committed(
            stored_events(
                first_seq,
                events,
                trace_parent,
                committed_at,
                armed_turn_deadline,
            ),
            new_version,
        );
    }
    tracing::Span::current().record("version", new_version);
    Ok(new_version)
}

/// Whether an append from `expected` to `new` rewrites the engine snapshot, with snapshots
/// every `interval` events ([`PostgresStore::with_snapshot_interval`]): always with the interval
/// 1 (what earlier releases expect), never for an append without events (the game is
/// unchanged), and otherwise when the append leaves play or is outside it (so deployments and
/// ended games are always at their snapshot) or reaches a multiple of `interval`, so the
/// snapshot lags the log by at most `interval - 1` events.
fn snapshot_due(interval: u64, expected: u64, new: u64, phase: Phase) -> bool {
    interval <= 1
        || (new > expected && (phase != Phase::Play || new / interval != expected / interval))
}

/// `events`, committed from `first_seq` at `committed_at` by a write that armed
/// `armed_turn_deadline` (carried by its last event), as the log returns them.
pub(super) fn stored_events(
    first_seq: u64,
    events: &[Event],
    trace_parent: Option<&str>,
    committed_at: SystemTime,
    armed_turn_deadline: Option<SystemTime>,
) -> Vec<StoredEvent> {
    let last = first_seq
        .saturating_add(events.len() as u64)
        .saturating_sub(1);
    (first_seq..)
        .zip(events)
        .map(|(seq, event)| StoredEvent {
            seq,
            event: event.clone(),
            trace_parent: trace_parent.map(str::to_owned),
            recorded_at: committed_at,
            armed_turn_deadline: armed_turn_deadline.filter(|_| seq == last),
        })
        .collect()
}

#[tracing::instrument(name = "store.command_response", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id))]
pub(super) async fn command_response(
    store: &PostgresStore,
    game_id: Uuid,
    key: &str,
) -> Result<Option<Vec<u8>>, StoreError> {
    let mut conn = store.pool().acquire().await?;
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
    if let Some(page) = store
        .inner
        .recent
        .page(&store.inner.notifier, game_id, from_seq, limit)
    {
        tracing::Span::current().record("event_count", page.len());
        return Ok(page);
    }
    log_events(store, game_id, from_seq, limit).await
}

/// [`events`] from the log itself.
pub(super) async fn log_events(
    store: &PostgresStore,
    game_id: Uuid,
    from_seq: u64,
    limit: usize,
) -> Result<Vec<StoredEvent>, StoreError> {
    let rows = if limit == 0 {
        Vec::new()
    } else {
        sqlx::query(
            "SELECT seq, event, trace_parent, created_at, armed_turn_deadline FROM game_events \
             WHERE game_id = $1 AND seq >= $2 \
             ORDER BY seq LIMIT $3",
        )
        .bind(game_id)
        .bind(to_db(from_seq))
        .bind(to_limit(limit))
        .fetch_all(&store.pool())
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
                event: json_column(&row, "event", game_id, "event")?,
                trace_parent: row.try_get("trace_parent")?,
                recorded_at: row.try_get::<OffsetDateTime, _>("created_at")?.into(),
                // NULL: the append armed none, or an older release wrote the row.
                armed_turn_deadline: row
                    .try_get::<Option<OffsetDateTime>, _>("armed_turn_deadline")?
                    .map(SystemTime::from),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::snapshot_due;
    use hidden_front_rules::Phase;

    #[test]
    fn snapshots_are_due_every_interval_events_and_outside_play() {
        // Every append, whatever it is, with the interval 1.
        assert!(snapshot_due(1, 7, 7, Phase::Play));
        assert!(snapshot_due(1, 7, 8, Phase::Play));
        // In play with 4: only the appends that reach 8, 12, ...
        let due: Vec<u64> = (8..16)
            .filter(|&v| snapshot_due(4, v - 1, v, Phase::Play))
            .collect();
        assert_eq!(due, [8, 12]);
        // An append of several events that steps over a multiple.
        assert!(snapshot_due(4, 6, 9, Phase::Play));
        assert!(!snapshot_due(4, 4, 7, Phase::Play));
        // Deployment and the end are always written; an append without events never.
        assert!(snapshot_due(4, 5, 6, Phase::Deployment));
        assert!(snapshot_due(4, 5, 6, Phase::Ended));
        assert!(!snapshot_due(4, 6, 6, Phase::Ended));
    }
}
