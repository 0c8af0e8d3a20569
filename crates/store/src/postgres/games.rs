//! Whole games: creation (idempotent on the creation key, with its first timers), loading the
//! snapshot, the games of a player, and the existence and version checks the other statements
//! share.

use super::PostgresStore;
use super::batch::Tail;
use super::codec::{
    decode_json_bytes, encode_json_text, from_db, is_unique_violation, meta_of,
    nullable_json_column, parse_phase, phase_text, to_db, to_limit,
};
use super::presence::{latest_leases, presence_of};
use super::timers::{one_per_slot, timer_from};
use crate::timers::Timer;
use crate::{Created, GameMeta, GameRecord, GameSummary, ObservedGame, StoreError};
use hidden_front_lifecycle::NewFact;
use hidden_front_rules::{Event, Game};
use sqlx::postgres::PgRow;
use sqlx::types::time::OffsetDateTime;
use sqlx::{PgConnection, Row};
use std::collections::HashMap;
use std::future::Future;
use std::sync::LazyLock;
use std::time::SystemTime;
use uuid::Uuid;

/// The select-list columns [`game_at_head`] reads, for a query of `games g`: the versions, the
/// snapshot a load starts from (the raw one when it is at least as new as the `jsonb` one,
/// `migrations/0010_raw_snapshots.sql`; the other is left out, so it is neither sent nor
/// decoded) and `lagged`, the events after that snapshot as one JSON array when it lags the
/// log's head.
macro_rules! snapshot_columns {
    () => {
        "g.version, g.head_version, g.raw_version, \
         CASE WHEN g.raw_version >= g.version THEN NULL ELSE g.snapshot END AS snapshot, \
         CASE WHEN g.raw_version >= g.version THEN g.raw_snapshot END AS raw_snapshot, \
         CASE WHEN COALESCE(g.head_version, g.version) > GREATEST(g.version, g.raw_version) THEN \
           (SELECT json_agg(e.event ORDER BY e.seq) FROM game_events e \
            WHERE e.game_id = g.game_id AND e.seq > GREATEST(g.version, g.raw_version) \
              AND e.seq <= g.head_version) \
         END AS lagged"
    };
}
pub(super) use snapshot_columns;

#[tracing::instrument(name = "store.create", level = "info", skip_all, fields(db.system = "postgresql", game_id = %meta.game_id, event_count = events.len()))]
pub(super) async fn create_armed(
    store: &PostgresStore,
    creation_key: &str,
    meta: &GameMeta,
    events: &[Event],
    game: &Game,
    timers: &[Timer],
    facts: &[NewFact],
) -> Result<Created, StoreError> {
    let game_id = meta.game_id;
    let creation = Creation {
        key: creation_key.to_owned(),
        game_id,
        rules: meta.rules.clone(),
        time_control: encode_json_text(game_id, "time control", &meta.time_control)?,
        south: meta.south_player.clone(),
        north: meta.north_player.clone(),
        version: to_db(events.len() as u64),
        phase: phase_text(game_id, game.phase())?,
        snapshot: encode_json_text(game_id, "engine state", game)?,
        events: events
            .iter()
            .map(|event| encode_json_text(game_id, "event", event))
            .collect::<Result<_, _>>()?,
        timers: one_per_slot(timers),
        facts: facts.to_vec(),
    };
    match store.inner.group_commit.create(creation).await {
        Ok(Some(committed_at)) => {
            if !events.is_empty() {
                // The first watcher's pump reads these (`recent.rs`), not the log.
                let stored = super::appends::stored_events(1, events, None, committed_at, None);
                store.inner.recent.remember(game_id, stored);
            }
            Ok(Created {
                game_id,
                replayed: false,
            })
        }
        // The key was taken: a retry of a creation (or a racing creator with the same key).
        Ok(None) => {
            let existing: Option<Uuid> =
                sqlx::query_scalar("SELECT game_id FROM game_creations WHERE creation_key = $1")
                    .bind(creation_key)
                    .fetch_optional(&store.pool())
                    .await?;
            match existing {
                Some(existing) => Ok(Created {
                    game_id: existing,
                    replayed: true,
                }),
                None => Err(StoreError::Corrupt {
                    game_id,
                    reason: format!("creation key {creation_key:?} conflicts but is not stored"),
                }),
            }
        }
        Err(error) if is_unique_violation(&error) => Err(StoreError::AlreadyExists(game_id)),
        Err(error) => Err(error.into()),
    }
}

/// The game an earlier creation under `creation_key` made in this database, if any.
pub(super) async fn game_of_creation_key(
    store: &PostgresStore,
    creation_key: &str,
) -> Result<Option<Uuid>, StoreError> {
    Ok(
        sqlx::query_scalar("SELECT game_id FROM game_creations WHERE creation_key = $1")
            .bind(creation_key)
            .fetch_optional(&store.pool())
            .await?,
    )
}

/// A game's creation, encoded for the columns of the creations' batch statement
/// ([`super::batch`]) and owned, so it can wait in the queue.
#[derive(Debug)]
pub(super) struct Creation {
    key: String,
    game_id: Uuid,
    rules: String,
    time_control: String,
    south: String,
    north: String,
    version: i64,
    phase: String,
    snapshot: String,
    events: Vec<String>,
    /// At most one per slot.
    timers: Vec<Timer>,
    facts: Vec<NewFact>,
}

impl Creation {
    /// Its creation key: a batch holds at most one creation per key.
    pub(super) fn key(&self) -> &str {
        &self.key
    }
}

impl super::batch::Statement for Creation {
    const KIND: &'static str = "create";
    const METERED: bool = false;

    fn game_id(&self) -> Uuid {
        self.game_id
    }

    fn write_all<'a>(
        connection: &'a mut PgConnection,
        items: &'a [&'a Self],
    ) -> impl Future<Output = Result<HashMap<Uuid, SystemTime>, sqlx::Error>> + Send + 'a {
        write_creations(connection, items)
    }
}

/// Parameters of the creations' statement before its [`Tail`].
pub(super) const CREATION_OWN_PARAMS: usize = 12;

/// The creations' statement ([`write_creations`]), made once.
pub(super) static CREATION_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH input AS ( \
           SELECT * FROM UNNEST($1::text[], $2::uuid[], $3::text[], $4::text[], $5::text[], \
                                $6::text[], $7::bigint[], $8::text[], $9::text[]) \
             AS i (creation_key, game_id, rules, time_control, south_player, north_player, \
                   version, phase, snapshot)), \
         claimed AS ( \
           INSERT INTO game_creations (creation_key, game_id) \
           SELECT creation_key, game_id FROM input \
           ON CONFLICT (creation_key) DO NOTHING RETURNING game_id), \
         created AS ( \
           INSERT INTO games (game_id, rules, time_control, south_player, north_player, \
                              version, phase, snapshot) \
           SELECT i.game_id, i.rules, i.time_control::jsonb, i.south_player, i.north_player, \
                  i.version, i.phase, i.snapshot::jsonb \
           FROM input i WHERE i.game_id IN (SELECT game_id FROM claimed) \
           RETURNING game_id), \
         logged AS ( \
           INSERT INTO game_events (game_id, seq, event) \
           SELECT e.game_id, e.seq, e.event::jsonb \
           FROM UNNEST($10::uuid[], $11::bigint[], $12::text[]) AS e (game_id, seq, event) \
           WHERE e.game_id IN (SELECT game_id FROM claimed)), \
         {tail} \
         SELECT game_id, now() AS committed_at FROM created, recorded",
        tail = Tail::ctes(CREATION_OWN_PARAMS, "claimed"),
    )
});

/// The creations' statement: for every creation whose key it claims (`ON CONFLICT DO NOTHING`:
/// a key already taken, by an earlier creation or a racing one, writes nothing of it), the game
/// row with its `jsonb` snapshot, its first events, its timers and its lifecycle facts. Returns
/// the games it created, with the commit's `now()`. A game id already taken fails the whole
/// statement on the primary key (the batch then writes each creation alone).
async fn write_creations(
    connection: &mut PgConnection,
    creations: &[&Creation],
) -> Result<HashMap<Uuid, SystemTime>, sqlx::Error> {
    let mut keys = Vec::new();
    let mut game_ids = Vec::new();
    let mut rules = Vec::new();
    let mut time_controls = Vec::new();
    let mut souths = Vec::new();
    let mut norths = Vec::new();
    let mut versions = Vec::new();
    let mut phases = Vec::new();
    let mut snapshots = Vec::new();
    let mut event_games = Vec::new();
    let mut event_seqs = Vec::new();
    let mut event_values = Vec::new();
    let mut tail = Tail::default();
    for creation in creations {
        keys.push(creation.key.as_str());
        game_ids.push(creation.game_id);
        rules.push(creation.rules.as_str());
        time_controls.push(creation.time_control.as_str());
        souths.push(creation.south.as_str());
        norths.push(creation.north.as_str());
        versions.push(creation.version);
        phases.push(creation.phase.as_str());
        snapshots.push(creation.snapshot.as_str());
        for (seq, event) in (1i64..).zip(&creation.events) {
            event_games.push(creation.game_id);
            event_seqs.push(seq);
            event_values.push(event.as_str());
        }
        for timer in &creation.timers {
            tail.timers.push(timer);
        }
        tail.facts.push(&creation.facts);
    }
    let query = sqlx::query_as::<_, (Uuid, OffsetDateTime)>(CREATION_SQL.as_str())
        .bind(keys)
        .bind(game_ids)
        .bind(rules)
        .bind(time_controls)
        .bind(souths)
        .bind(norths)
        .bind(versions)
        .bind(phases)
        .bind(snapshots)
        .bind(event_games)
        .bind(event_seqs)
        .bind(event_values);
    let rows = tail.bind_to(query).fetch_all(connection).await?;
    Ok(super::batch::commit_times(rows))
}

#[tracing::instrument(name = "store.load", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id, version = tracing::field::Empty))]
pub(super) async fn load(
    store: &PostgresStore,
    game_id: Uuid,
) -> Result<Option<GameRecord>, StoreError> {
    // The snapshot and, when it lags the log, the events after it, read by one statement so
    // both come from one moment (`migrations/0009_sparse_snapshots.sql`, `0010`).
    let Some(row) = sqlx::query(concat!(
        "SELECT g.game_id, g.rules, g.time_control, g.south_player, g.north_player, ",
        snapshot_columns!(),
        " FROM games g WHERE g.game_id = $1"
    ))
    .bind(game_id)
    .fetch_optional(&store.pool())
    .await?
    else {
        return Ok(None);
    };
    Ok(Some(record_at_head(&row)?))
}

/// The game in a row with its metadata columns and [`snapshot_columns`], at the log's head,
/// recording its version in the current span.
fn record_at_head(row: &PgRow) -> Result<GameRecord, StoreError> {
    let (version, game) = game_at_head(row)?;
    tracing::Span::current().record("version", version);
    Ok(GameRecord {
        meta: meta_of(row)?,
        version,
        game,
    })
}

/// [`crate::GameStore::observe`]: the game as [`load`] reads it, its presence at `now` and its
/// timers, by one statement (a `GetGame` used to take three round trips).
#[tracing::instrument(name = "store.observe", level = "info", skip_all, fields(db.system = "postgresql", game_id = %game_id, version = tracing::field::Empty))]
pub(super) async fn observe(
    store: &PostgresStore,
    game_id: Uuid,
    now: SystemTime,
) -> Result<Option<ObservedGame>, StoreError> {
    let Some(row) = sqlx::query(concat!(
        "SELECT g.game_id, g.rules, g.time_control, g.south_player, g.north_player, ",
        snapshot_columns!(),
        ", ",
        latest_leases!("g.game_id", "$2", ""),
        ", t.kinds, t.sides, t.armed_versions, t.fire_ats \
         FROM games g CROSS JOIN LATERAL ( \
           SELECT array_agg(gt.kind ORDER BY gt.fire_at, gt.slot) AS kinds, \
                  array_agg(gt.side ORDER BY gt.fire_at, gt.slot) AS sides, \
                  array_agg(gt.armed_version ORDER BY gt.fire_at, gt.slot) AS armed_versions, \
                  array_agg(gt.fire_at ORDER BY gt.fire_at, gt.slot) AS fire_ats \
           FROM game_timers gt WHERE gt.game_id = g.game_id) t \
         WHERE g.game_id = $1"
    ))
    .bind(game_id)
    .bind(OffsetDateTime::from(now))
    .fetch_optional(&store.pool())
    .await?
    else {
        return Ok(None);
    };
    let record = record_at_head(&row)?;
    // No timers: the aggregates are NULL.
    let kinds: Vec<String> = row.try_get::<Option<_>, _>("kinds")?.unwrap_or_default();
    let sides: Vec<String> = row.try_get::<Option<_>, _>("sides")?.unwrap_or_default();
    let armed: Vec<i64> = row
        .try_get::<Option<_>, _>("armed_versions")?
        .unwrap_or_default();
    let fire_ats: Vec<OffsetDateTime> =
        row.try_get::<Option<_>, _>("fire_ats")?.unwrap_or_default();
    let timers = kinds
        .into_iter()
        .zip(sides)
        .zip(armed)
        .zip(fire_ats)
        .map(|(((kind, side), armed), fire_at)| timer_from(game_id, kind, side, armed, fire_at))
        .collect::<Result<_, _>>()?;
    Ok(Some(ObservedGame {
        record,
        presence: presence_of(&row)?,
        timers,
    }))
}

/// Writes the snapshot of every game whose row lags its log at its head (`version` = the head,
/// `head_version` NULL); returns how many rows it wrote. For a rollback to a release that does
/// not know `head_version` (`hidden-front migrate --snapshots-at-head`, once no replica of this
/// release runs): such a release then finds every game at its snapshot. Each row
/// is written only if its head has not moved since it was read, so a racing append wins.
pub(super) async fn snapshot_lagging_games(store: &PostgresStore) -> Result<u64, StoreError> {
    let lagging: Vec<Uuid> =
        sqlx::query_scalar("SELECT game_id FROM games WHERE head_version IS NOT NULL")
            .fetch_all(&store.pool())
            .await?;
    let mut written = 0;
    for game_id in lagging {
        let Some(record) = load(store, game_id).await? else {
            continue;
        };
        let done = sqlx::query(
            "UPDATE games SET snapshot = $2::jsonb, version = $3, head_version = NULL, \
               raw_snapshot = NULL, raw_version = NULL \
             WHERE game_id = $1 AND head_version = $3",
        )
        .bind(game_id)
        .bind(encode_json_text(game_id, "engine state", &record.game)?)
        .bind(to_db(record.version))
        .execute(&store.pool())
        .await?;
        written += done.rows_affected();
    }
    Ok(written)
}

/// The game at the log's head from a row with `game_id` and [`snapshot_columns`]: the snapshot
/// (raw or `jsonb`) with the lagged events applied, and the head's version.
pub(super) fn game_at_head(row: &PgRow) -> Result<(u64, Game), StoreError> {
    let game_id: Uuid = row.try_get("game_id")?;
    let corrupt = |reason: String| StoreError::Corrupt { game_id, reason };
    let version = from_db(game_id, "version", row.try_get("version")?)?;
    let (base, mut game): (u64, Game) = match row.try_get::<Option<Vec<u8>>, _>("raw_snapshot")? {
        Some(bytes) => {
            let raw_version: Option<i64> = row.try_get("raw_version")?;
            let raw_version =
                raw_version.ok_or_else(|| corrupt("a raw snapshot without its version".into()))?;
            (
                from_db(game_id, "raw_version", raw_version)?,
                decode_json_bytes(game_id, "raw snapshot", &bytes)?,
            )
        }
        None => match nullable_json_column(row, "snapshot", game_id, "snapshot")? {
            Some(game) => (version, game),
            None => return Err(corrupt("the row holds no snapshot".into())),
        },
    };
    let head = match row.try_get::<Option<i64>, _>("head_version")? {
        Some(head) => from_db(game_id, "head_version", head)?,
        None => version,
    };
    if head == base {
        return Ok((head, game));
    }
    let lagged: Vec<Event> =
        nullable_json_column(row, "lagged", game_id, "events after the snapshot")?
            .unwrap_or_default();
    if lagged.len() as u64 != head.saturating_sub(base) || head < base {
        return Err(corrupt(format!(
            "the snapshot is at version {base} and the head at {head}, \
             but the log holds {} events between them",
            lagged.len()
        )));
    }
    for event in &lagged {
        game.apply(event).map_err(|error| {
            corrupt(format!(
                "the log after the snapshot (version {base}) does not replay: {error}"
            ))
        })?;
    }
    Ok((head, game))
}

#[tracing::instrument(name = "store.games_of_player", level = "info", skip_all, fields(db.system = "postgresql", limit = limit, game_count = tracing::field::Empty))]
pub(super) async fn games_of_player(
    store: &PostgresStore,
    player: &str,
    limit: usize,
) -> Result<Vec<GameSummary>, StoreError> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    // One index range per seat, merged: each seat's newest `limit` suffice.
    let rows = sqlx::query(
        "SELECT game_id, rules, time_control, south_player, north_player, \
                COALESCE(head_version, version) AS version, phase \
         FROM games WHERE game_id IN ( \
           (SELECT game_id FROM games WHERE south_player = $1 \
            ORDER BY created_at DESC, game_id DESC LIMIT $2) \
           UNION \
           (SELECT game_id FROM games WHERE north_player = $1 \
            ORDER BY created_at DESC, game_id DESC LIMIT $2)) \
         ORDER BY created_at DESC, game_id DESC LIMIT $2",
    )
    .bind(player)
    .bind(to_limit(limit))
    .fetch_all(&store.pool())
    .await?;
    tracing::Span::current().record("game_count", rows.len());
    rows.into_iter()
        .map(|row| {
            let meta = meta_of(&row)?;
            let game_id = meta.game_id;
            Ok(GameSummary {
                meta,
                phase: parse_phase(game_id, row.try_get("phase")?)?,
                version: from_db(game_id, "version", row.try_get("version")?)?,
            })
        })
        .collect()
}

/// The game's version, or `None` if there is no such game.
pub(super) async fn version_of(
    conn: &mut PgConnection,
    game_id: Uuid,
) -> Result<Option<u64>, StoreError> {
    let version: Option<i64> =
        sqlx::query_scalar("SELECT COALESCE(head_version, version) FROM games WHERE game_id = $1")
            .bind(game_id)
            .fetch_optional(conn)
            .await?;
    version
        .map(|version| from_db(game_id, "version", version))
        .transpose()
}

/// Fails with [`StoreError::NotFound`] unless the game exists.
pub(super) async fn require_game(store: &PostgresStore, game_id: Uuid) -> Result<(), StoreError> {
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM games WHERE game_id = $1)")
        .bind(game_id)
        .fetch_one(&store.pool())
        .await?;
    if exists {
        Ok(())
    } else {
        Err(StoreError::NotFound(game_id))
    }
}

#[tracing::instrument(name = "store.ping", level = "info", skip_all, fields(db.system = "postgresql"))]
pub(super) async fn ping(store: &PostgresStore) -> Result<(), StoreError> {
    sqlx::query("SELECT 1").execute(&store.pool()).await?;
    Ok(())
}
