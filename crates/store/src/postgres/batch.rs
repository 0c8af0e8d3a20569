//! Group commit: the appends of many games written by one statement, which is its own
//! transaction (one round trip, one WAL flush, one `NOTIFY` lock for the whole batch); and
//! likewise the creations of many games (`games.rs`, [`Creation`]). A batch that holds both is
//! two statements, two commits: the creations', then the appends'. Both write their timers and
//! lifecycle facts the same way, with the CTEs and parameters of one [`Tail`].
//!
//! Why: a transaction that calls `pg_notify` holds a database-wide lock from just before its
//! commit until the commit is durable, so appends that each notify commit one after the other, one
//! WAL flush each (measured in `docs/benchmarks.md`: ten times fewer commits a second than the
//! same insert without the notify). Writing many games' appends in one transaction pays that
//! lock, that flush and that round trip once per batch.
//!
//! How: callers hand their encoded append to one task per store ([`GroupCommit`]). The task
//! starts a batch as soon as its flusher ([`FLUSHERS`]) is free, with everything that queued
//! while it was busy (at most [`MAX_BATCH`] appends, at most one per game), so a lone append is
//! written at once, in one round trip instead of the four of a transaction of its own; under
//! load, batches grow by themselves, and an append waits at most for the batch in flight. Each
//! append keeps its own version guard and gets its own answer: the statement writes, for each game
//! whose guard passes, its snapshot, command record, events, timers and place in the ended-games
//! feed, and nothing at all for a game whose guard fails (that caller re-judges only its game).
//! A command key the game already knows (a retried swap or reshuffle that the engine judged
//! legal again) fails that append's guard like a stale version, not the statement: the caller
//! then finds the key's first answer. A statement error (a forked log, a deadlock between racing
//! replicas, a key committed by a racing replica meanwhile) writes nothing of the batch; then
//! each append of it is written again alone, so each caller gets exactly the error its own
//! append causes. Such failures are counted (`hf_store_batch_failures_total`,
//! [`GroupCommit::failures`]): they should be rare.
//!
//! Creations queue in the same queue: each creation records a lifecycle fact, which locks the
//! outbox's counter until its commit is durable, so creations written one by one committed one
//! after the other (1,000 at once took a second; docs/benchmarks.md,
//! "Creations in the group commit"). A batch holds appends and creations; each kind is written
//! by its own statement ([`Statement`]).

use super::CHANNEL;
use super::games::Creation;
use super::outbox::FactColumns;
use super::timers::TimerColumns;
use crate::timers::Timer;
use hidden_front_lifecycle::NewFact;
use hidden_front_metrics_names as names;
use sqlx::Postgres;
use sqlx::postgres::PgArguments;
use sqlx::postgres::{PgConnection, PgPool, PgPoolOptions};
use sqlx::query::QueryAs;
use sqlx::types::time::OffsetDateTime;
use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::{Duration, SystemTime};
use tokio::sync::{Semaphore, mpsc, oneshot};
use uuid::Uuid;

/// Batches in flight at once (each on its own pooled connection). One: the commits of batches
/// that notify are serialized by Postgres anyway, so a second flusher only halves the batches
/// (measured with 100 games: 1 flusher 2,368 moves/s, 22 appends a batch; 2 flushers 2,117, 11 a
/// batch; 4 flushers 1,704, 6 a batch). A batch waits for the one in flight, at most one commit.
pub(super) const FLUSHERS: usize = 1;

/// The most appends one statement writes.
pub(super) const MAX_BATCH: usize = 128;

/// One append, encoded for the columns and owned, so it can wait in the queue.
#[derive(Debug)]
pub(super) struct Encoded {
    pub(super) game_id: Uuid,
    pub(super) expected_version: i64,
    pub(super) new_version: i64,
    /// The snapshot's JSON bytes for `raw_snapshot` (`migrations/0010_raw_snapshots.sql`),
    /// or `None` when the append leaves the stored snapshots as they are and moves only the
    /// head (`head_version`, `migrations/0009_sparse_snapshots.sql`).
    pub(super) snapshot: Option<Vec<u8>>,
    pub(super) phase: String,
    /// The command's key and answer.
    pub(super) command: Option<(String, Vec<u8>)>,
    pub(super) seqs: Vec<i64>,
    /// Each event's JSON text.
    pub(super) events: Vec<String>,
    pub(super) trace_parent: Option<String>,
    /// The turn deadline the append arms, written on its last event
    /// ([`crate::StoredEvent::armed_turn_deadline`]).
    pub(super) armed_turn_deadline: Option<SystemTime>,
    /// The lifecycle facts to record with it.
    pub(super) facts: Vec<NewFact>,
    /// Whether the append ends the game (it takes a place in the ended-games feed).
    pub(super) ends: bool,
    /// Delete the game's timers except the slots armed below.
    pub(super) clear_all: bool,
    /// Slots to arm, at most one timer per slot.
    pub(super) arms: Vec<Timer>,
    /// Re-fence the turn slot to this version.
    pub(super) retag: Option<i64>,
    /// The timer whose fire this append carries out: written only while its slot holds it.
    pub(super) fired: Option<Timer>,
}

/// What the statement did with one append (or creation): `Some(commit time)` if its guard
/// passed and everything of it is committed (the time is the transaction's `now()`, which is also
/// its events' `created_at`), `None` if the game was not at the expected version, or the
/// creation's key was taken (nothing of it was written).
pub(super) type Written = Result<Option<SystemTime>, sqlx::Error>;

/// One kind of work a batch writes with one statement of its own.
pub(super) trait Statement: Sized + Send + Sync + 'static {
    /// Its name in the batch's debug line.
    const KIND: &'static str;
    /// Whether its batches are the ones `hf_store_batch_*` on /metrics describe.
    const METERED: bool;
    /// The game it writes: one statement writes each game at most once.
    fn game_id(&self) -> Uuid;
    /// Writes all of `items` in one statement, which is its own transaction; returns the games
    /// written, with the commit's `now()`.
    fn write_all<'a>(
        connection: &'a mut PgConnection,
        items: &'a [&'a Self],
    ) -> impl Future<Output = Result<HashMap<Uuid, SystemTime>, sqlx::Error>> + Send + 'a;
}

impl Statement for Encoded {
    const KIND: &'static str = "append";
    const METERED: bool = true;

    fn game_id(&self) -> Uuid {
        self.game_id
    }

    fn write_all<'a>(
        connection: &'a mut PgConnection,
        items: &'a [&'a Self],
    ) -> impl Future<Output = Result<HashMap<Uuid, SystemTime>, sqlx::Error>> + Send + 'a {
        write_batch(connection, items)
    }
}

/// What waits in the queue.
enum Work {
    Append(Encoded),
    Create(Creation),
}

impl Work {
    fn game_id(&self) -> Uuid {
        match self {
            Work::Append(append) => append.game_id,
            Work::Create(creation) => creation.game_id(),
        }
    }
}

struct Pending {
    work: Work,
    reply: oneshot::Sender<Written>,
}

/// The store's group-commit queue; its task starts with the first append and ends when the
/// store is dropped.
#[derive(Debug)]
pub(super) struct GroupCommit {
    /// Connections of the flushers' own ([`FLUSHERS`]), so a batch never waits in the main
    /// pool's queue behind other work: 2,000 presence renewals at once used to hold every move
    /// for half a second (docs/benchmarks.md, "Renewals at one instant held the moves").
    pool: PgPool,
    queue: OnceLock<mpsc::UnboundedSender<Pending>>,
    /// Statements that failed (nothing of them written).
    failures: Arc<AtomicU64>,
}

impl GroupCommit {
    /// A queue whose flushers connect with `pool`'s options (lazily, on the first batch).
    pub(super) fn new(pool: &PgPool) -> GroupCommit {
        let pool = PgPoolOptions::new()
            .max_connections(FLUSHERS as u32)
            .min_connections(0)
            // The flusher is the pool's only user, so a checkout waits only for a connection
            // being made: bounded well under the main pool's, because one attempt begun while
            // the database was unreachable would hold every later append until TCP's backed-off
            // retries reached it (seconds after it is back); the next batch tries afresh.
            .acquire_timeout(FLUSHER_CONNECT_BOUND.min(pool.options().get_acquire_timeout()))
            .connect_lazy_with((*pool.connect_options()).clone());
        GroupCommit {
            pool,
            queue: OnceLock::new(),
            failures: Arc::default(),
        }
    }

    /// How many of its statements failed since it was made (each also counted in
    /// `hf_store_batch_failures_total`).
    pub(super) fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// The flushers' pool, to close with the store.
    pub(super) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Writes `append` in the next batch and answers for it alone.
    pub(super) async fn write(&self, append: Encoded) -> Written {
        self.submit(Work::Append(append)).await
    }

    /// Writes `creation` in the next batch and answers for it alone (`None`: its creation key
    /// was taken, nothing of it was written).
    pub(super) async fn create(&self, creation: Creation) -> Written {
        self.submit(Work::Create(creation)).await
    }

    async fn submit(&self, work: Work) -> Written {
        let pool = &self.pool;
        let queue = self.queue.get_or_init(|| {
            let (sender, receiver) = mpsc::unbounded_channel();
            tokio::spawn(run(pool.clone(), receiver, Arc::clone(&self.failures)));
            sender
        });
        let (reply, answer) = oneshot::channel();
        match queue.send(Pending { work, reply }) {
            Ok(()) => match answer.await {
                Ok(written) => written,
                // The task went away with our append (its runtime is shutting down).
                Err(_) => Err(sqlx::Error::PoolClosed),
            },
            // The task is gone (the runtime that ran it ended): write alone, here.
            Err(mpsc::error::SendError(pending)) => match &pending.work {
                Work::Append(append) => write_alone(pool, append).await,
                Work::Create(creation) => write_alone(pool, creation).await,
            },
        }
    }
}

/// The batching loop: wait for a free flusher, then take what queued meanwhile.
async fn run(pool: PgPool, mut queue: mpsc::UnboundedReceiver<Pending>, failures: Arc<AtomicU64>) {
    let flushers = Arc::new(Semaphore::new(FLUSHERS));
    // Work for a game already in the batch being formed waits for the next one: one statement
    // must not update a game row twice. So does a creation whose key is taken in the batch.
    let mut held: VecDeque<Pending> = VecDeque::new();
    loop {
        let Ok(permit) = Arc::clone(&flushers).acquire_owned().await else {
            return;
        };
        let first = match held.pop_front() {
            Some(pending) => pending,
            None => match queue.recv().await {
                Some(pending) => pending,
                None => return,
            },
        };
        let mut games = HashSet::new();
        let mut keys = HashSet::new();
        let mut fits = move |work: &Work| {
            let key_free = match work {
                Work::Create(creation) => keys.insert(creation.key().to_owned()),
                Work::Append(_) => true,
            };
            key_free && games.insert(work.game_id())
        };
        fits(&first.work);
        let mut batch = vec![first];
        let mut later = VecDeque::new();
        let mut take = |pending: Pending, batch: &mut Vec<Pending>| {
            if batch.len() < MAX_BATCH && fits(&pending.work) {
                batch.push(pending);
            } else {
                later.push_back(pending);
            }
        };
        while let Some(pending) = held.pop_front() {
            take(pending, &mut batch);
        }
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(pending) => take(pending, &mut batch),
                Err(_) => break,
            }
        }
        held = later;
        let pool = pool.clone();
        let failures = Arc::clone(&failures);
        tokio::spawn(async move {
            flush(&pool, batch, &failures).await;
            drop(permit);
        });
    }
}

/// Writes one batch, each kind with its statement, and answers each caller.
async fn flush(pool: &PgPool, batch: Vec<Pending>, failures: &AtomicU64) {
    let mut appends = Vec::new();
    let mut creations = Vec::new();
    for Pending { work, reply } in batch {
        match work {
            Work::Append(append) => appends.push((append, reply)),
            Work::Create(creation) => creations.push((creation, reply)),
        }
    }
    if !creations.is_empty() {
        flush_kind(pool, creations, failures).await;
    }
    if !appends.is_empty() {
        flush_kind(pool, appends, failures).await;
    }
}

/// Writes one kind's part of a batch and answers each of its callers.
async fn flush_kind<T: Statement>(
    pool: &PgPool,
    batch: Vec<(T, oneshot::Sender<Written>)>,
    failures: &AtomicU64,
) {
    // Work whose caller went away (it gave up: its store was lost, its deadline passed) is not
    // written: the caller was told it failed, and its retry, with the same key, brings it again.
    // Writing it anyway once held a session's every later append for 20 s after a partition of
    // its database healed, each abandoned append written alone, each waiting for a connection.
    let batch: Vec<_> = batch
        .into_iter()
        .filter(|(_, reply)| !reply.is_closed())
        .collect();
    if batch.is_empty() {
        return;
    }
    let items: Vec<&T> = batch.iter().map(|(item, _)| item).collect();
    let started = std::time::Instant::now();
    let written = write_bounded(pool, &items).await;
    let took = started.elapsed();
    // The two figures on /metrics describe the appends' statements (docs/session.md).
    if T::METERED {
        metrics::histogram!(names::STORE_BATCH_APPENDS).record(batch.len() as f64);
        metrics::histogram!(names::STORE_BATCH_DURATION_SECONDS).record(took.as_secs_f64());
    }
    tracing::debug!(
        kind = T::KIND,
        size = batch.len(),
        ok = written.is_ok(),
        micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
        "store.group_commit"
    );
    if written.is_err() {
        failures.fetch_add(1, Ordering::Relaxed);
        metrics::counter!(names::STORE_BATCH_FAILURES_TOTAL, names::KIND => T::KIND).increment(1);
    }
    match written {
        Ok(passed) => {
            for (item, reply) in batch {
                let _ = reply.send(Ok(passed.get(&item.game_id()).copied()));
            }
        }
        // It may have committed or not: nobody can tell now, so nothing is written again. Each
        // caller's retry (the same command key) finds its append if it was written.
        Err(Failure::Unanswered) => {
            for (_, reply) in batch {
                let _ = reply.send(Err(unanswered()));
            }
        }
        Err(Failure::Statement(error)) if batch.len() == 1 => {
            if let Some((_, reply)) = batch.into_iter().next() {
                let _ = reply.send(Err(error));
            }
        }
        // No connection, or one that broke: the statement never reached the database (or its
        // fate is unknown), and writing each item alone would wait as long again for each.
        Err(Failure::Statement(error)) if is_connection_failure(&error) => {
            let message = error.to_string();
            for (_, reply) in batch {
                let _ = reply.send(Err(sqlx::Error::Io(std::io::Error::other(message.clone()))));
            }
        }
        // Nothing of the batch was written; find whose item failed by writing each alone.
        Err(Failure::Statement(_)) => {
            for (item, reply) in batch {
                let _ = reply.send(write_alone(pool, &item).await);
            }
        }
    }
}

/// Whether `error` is the connection's, not the statement's: none could be had, or it broke.
fn is_connection_failure(error: &sqlx::Error) -> bool {
    matches!(
        error,
        sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
    )
}

/// One item as a batch of its own.
async fn write_alone<T: Statement>(pool: &PgPool, item: &T) -> Written {
    match write_bounded(pool, &[item]).await {
        Ok(written) => Ok(written.get(&item.game_id()).copied()),
        Err(Failure::Statement(error)) => Err(error),
        Err(Failure::Unanswered) => Err(unanswered()),
    }
}

/// How long the flushers wait for a connection to be made ([`GroupCommit::new`]).
const FLUSHER_CONNECT_BOUND: Duration = Duration::from_secs(2);

/// How long one statement of the group commit may go unanswered before its connection is given
/// up. Why: the flushers have one connection, so a statement whose packets go nowhere (a
/// partition between the session host and Postgres) held every later append of the process
/// until TCP's retransmissions, backed off over the partition, got through: 24 s after a 30 s
/// partition healed, in the cluster test (docs/cluster-test.md). Far above any statement of a
/// healthy store (milliseconds), and within the callers' own deadlines.
pub(super) const STATEMENT_BOUND: Duration = Duration::from_secs(5);

/// Why a bounded statement did not answer its rows.
#[derive(Debug)]
enum Failure {
    /// The statement failed: nothing of it was written.
    Statement(sqlx::Error),
    /// No answer within [`STATEMENT_BOUND`]: it may have committed or not.
    Unanswered,
}

/// `T::write_all` on a connection of `pool`, bounded by [`STATEMENT_BOUND`]. A connection that
/// does not answer in time is dropped, not returned to the pool: the pool would test it first,
/// and that test would wait as long.
async fn write_bounded<T: Statement>(
    pool: &PgPool,
    items: &[&T],
) -> Result<HashMap<Uuid, SystemTime>, Failure> {
    let mut connection = pool.acquire().await.map_err(Failure::Statement)?;
    match tokio::time::timeout(STATEMENT_BOUND, T::write_all(&mut connection, items)).await {
        Ok(written) => written.map_err(Failure::Statement),
        Err(_) => {
            drop(connection.detach());
            Err(Failure::Unanswered)
        }
    }
}

/// The error each caller of an unanswered statement gets: retriable, with the same key.
fn unanswered() -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!(
            "the group commit's statement did not answer within {} s (its connection was \
             dropped); it may have been written: retry with the same key",
            STATEMENT_BOUND.as_secs()
        ),
    ))
}

/// Parameters of the appends' statement before its [`Tail`].
const APPEND_OWN_PARAMS: usize = 23;

/// The appends' statement ([`write_batch`]), made once.
///
/// Its command-key guard is a scalar subquery (`(SELECT true ...) IS NULL`), not `NOT EXISTS`:
/// under the `OR`, Postgres may plan `NOT EXISTS` as a hashed subplan that reads and hashes the
/// whole of `game_commands` for every batch (it did while the table was small enough to hash, and
/// kept that plan while the table grew: most of Postgres's 270–305 µs a move at 100 games). A scalar
/// subquery is never hashed; it probes the primary key once per append. The plans are checked
/// by `the_batch_statements_reach_big_tables_by_index_only`.
static APPEND_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH input AS ( \
           SELECT * FROM UNNEST($1::uuid[], $2::bigint[], $3::bigint[], $4::bytea[], $5::text[], \
                                $6::text[], $7::bytea[], $8::int[], $9::bigint[], \
                                $19::text[], $20::text[], $21::bigint[], $22::timestamptz[]) \
             AS i (game_id, expected, version, snapshot, phase, command_key, response, \
                   event_count, end_rank, fired_slot, fired_kind, fired_version, fired_at)), \
         counter AS ( \
           UPDATE ended_games_counter SET last = hf_feed_advance(last, $10) WHERE $10 > 0 \
           RETURNING last - hf_feed_stride() * $10 AS base, hf_feed_stride() AS stride), \
         guard AS ( \
           UPDATE games g SET \
             raw_snapshot = CASE WHEN i.snapshot IS NULL THEN g.raw_snapshot \
                                 ELSE i.snapshot END, \
             raw_version = CASE WHEN i.snapshot IS NULL THEN g.raw_version ELSE i.version END, \
             head_version = CASE WHEN i.version = g.version THEN NULL ELSE i.version END, \
             phase = i.phase, updated_at = now(), \
             ended_seq = CASE WHEN i.end_rank > 0 \
                              THEN (SELECT base + stride * i.end_rank FROM counter) \
                              ELSE g.ended_seq END \
           FROM input i WHERE g.game_id = i.game_id \
             AND COALESCE(g.head_version, g.version) = i.expected \
             AND (i.command_key IS NULL OR ( \
               SELECT true FROM game_commands c \
               WHERE c.game_id = i.game_id AND c.idempotency_key = i.command_key) IS NULL) \
             AND (i.fired_slot IS NULL OR EXISTS ( \
               SELECT 1 FROM game_timers t \
               WHERE t.game_id = i.game_id AND t.slot = i.fired_slot AND t.kind = i.fired_kind \
                 AND t.armed_version = i.fired_version AND t.fire_at = i.fired_at \
               FOR SHARE)) \
           RETURNING g.game_id, i.version, i.event_count), \
         command AS ( \
           INSERT INTO game_commands (game_id, idempotency_key, response, version) \
           SELECT i.game_id, i.command_key, i.response, i.version FROM input i \
           WHERE i.command_key IS NOT NULL AND i.game_id IN (SELECT game_id FROM guard)), \
         logged AS ( \
           INSERT INTO game_events (game_id, seq, event, trace_parent, armed_turn_deadline) \
           SELECT e.game_id, e.seq, e.event::jsonb, e.trace_parent, e.armed_turn_deadline \
           FROM UNNEST($11::uuid[], $12::bigint[], $13::text[], $14::text[], \
                       $23::timestamptz[]) \
             AS e (game_id, seq, event, trace_parent, armed_turn_deadline) \
           WHERE e.game_id IN (SELECT game_id FROM guard)), \
         {tail}, \
         cleared AS ( \
           DELETE FROM game_timers t USING UNNEST($15::uuid[]) AS c (game_id) \
           WHERE t.game_id = c.game_id AND c.game_id IN (SELECT game_id FROM guard) \
             AND NOT EXISTS (SELECT 1 FROM arms a WHERE a.game_id = t.game_id AND a.slot = t.slot)), \
         retagged AS ( \
           UPDATE game_timers t SET armed_version = r.armed_version, claimed_by = NULL, \
             claimed_until = NULL \
           FROM UNNEST($16::uuid[], $17::bigint[]) AS r (game_id, armed_version) \
           WHERE t.game_id = r.game_id AND t.slot = 'turn' \
             AND r.game_id IN (SELECT game_id FROM guard)) \
         SELECT game_id, now() AS committed_at, CASE WHEN event_count > 0 \
                 THEN pg_notify($18, game_id::text || ':' || version::text) END AS announced \
         FROM guard, recorded",
        tail = Tail::ctes(APPEND_OWN_PARAMS, "guard"),
    )
});

/// What both batch statements (the appends' here, the creations' in `games.rs`) write the same
/// way after their own columns: the timers, then the lifecycle facts. The CTEs come from one
/// place ([`TimerColumns::ctes`], [`FactColumns::recorded_cte`]) and the parameters are bound
/// last, in that order, so the statements cannot disagree on either.
#[derive(Debug, Default)]
pub(super) struct Tail {
    pub(super) timers: TimerColumns,
    pub(super) facts: FactColumns,
}

impl Tail {
    /// The CTEs `arms`, `armed` and `recorded` for a statement with `own` parameters of its own
    /// before the tail's, writing for the games the CTE `passed` returns.
    pub(super) fn ctes(own: usize, passed: &str) -> String {
        format!(
            "{}, {}",
            TimerColumns::ctes(own + 1, passed),
            FactColumns::recorded_cte(own + 1 + TimerColumns::PARAMS, passed)
        )
    }

    /// Binds the tail's parameters after the statement's own.
    pub(super) fn bind_to<'q, O>(
        self,
        query: QueryAs<'q, Postgres, O, PgArguments>,
    ) -> QueryAs<'q, Postgres, O, PgArguments> {
        self.facts.bind_to(self.timers.bind_to(query))
    }
}

/// The one statement: for every append whose version guard passes, the snapshot, the feed
/// position (from the counter row, whose lock is held to commit, so positions follow commit
/// order; a position taken by an append whose guard failed stays unused), the command record,
/// the events (the last with the turn deadline the append arms), the timers, the lifecycle facts
/// (`lifecycle_record`) and the `NOTIFY`. Returns the games whose guard passed, with the commit's
/// `now()`.
async fn write_batch(
    connection: &mut PgConnection,
    appends: &[&Encoded],
) -> Result<HashMap<Uuid, SystemTime>, sqlx::Error> {
    let mut columns = Columns::default();
    for append in appends {
        columns.push(append);
    }
    let Columns {
        game_ids,
        expected,
        versions,
        snapshots,
        phases,
        command_keys,
        responses,
        event_counts,
        end_ranks,
        ended,
        event_games,
        event_seqs,
        event_values,
        event_traces,
        event_deadlines,
        cleared,
        retag_games,
        retag_versions,
        fired_slots,
        fired_kinds,
        fired_versions,
        fired_ats,
        tail,
    } = columns;
    let query = sqlx::query_as::<_, (Uuid, OffsetDateTime)>(APPEND_SQL.as_str())
        .bind(game_ids)
        .bind(expected)
        .bind(versions)
        .bind(snapshots)
        .bind(phases)
        .bind(command_keys)
        .bind(responses)
        .bind(event_counts)
        .bind(end_ranks)
        .bind(ended)
        .bind(event_games)
        .bind(event_seqs)
        .bind(event_values)
        .bind(event_traces)
        .bind(cleared)
        .bind(retag_games)
        .bind(retag_versions)
        .bind(CHANNEL)
        .bind(fired_slots)
        .bind(fired_kinds)
        .bind(fired_versions)
        .bind(fired_ats)
        .bind(event_deadlines);
    let rows = tail.bind_to(query).fetch_all(connection).await?;
    Ok(commit_times(rows))
}

/// A batch statement's rows (each written game with the commit's `now()`) as its answer.
pub(super) fn commit_times(rows: Vec<(Uuid, OffsetDateTime)>) -> HashMap<Uuid, SystemTime> {
    rows.into_iter()
        .map(|(game_id, at)| (game_id, at.into()))
        .collect()
}

/// A batch as the statement's array parameters (borrowing the appends' encoded values).
#[derive(Default)]
struct Columns<'a> {
    game_ids: Vec<Uuid>,
    expected: Vec<i64>,
    versions: Vec<i64>,
    snapshots: Vec<Option<&'a [u8]>>,
    phases: Vec<&'a str>,
    command_keys: Vec<Option<&'a str>>,
    responses: Vec<&'a [u8]>,
    event_counts: Vec<i32>,
    /// 0, or the append's rank (from 1) among the batch's appends that end their game.
    end_ranks: Vec<i64>,
    /// How many of the batch's appends end their game.
    ended: i64,
    event_games: Vec<Uuid>,
    event_seqs: Vec<i64>,
    event_values: Vec<&'a str>,
    event_traces: Vec<Option<&'a str>>,
    /// Each event's `armed_turn_deadline`: the append's on its last event, else `NULL`.
    event_deadlines: Vec<Option<OffsetDateTime>>,
    cleared: Vec<Uuid>,
    retag_games: Vec<Uuid>,
    retag_versions: Vec<i64>,
    /// Each append's fired timer (slot, kind, armed version, deadline), `NULL` for none.
    fired_slots: Vec<Option<&'static str>>,
    fired_kinds: Vec<Option<&'static str>>,
    fired_versions: Vec<Option<i64>>,
    fired_ats: Vec<Option<OffsetDateTime>>,
    /// Every append's timers and facts, in batch order (those of a game whose guard fails are
    /// skipped).
    tail: Tail,
}

impl<'a> Columns<'a> {
    fn push(&mut self, append: &'a Encoded) {
        let game_id = append.game_id;
        self.game_ids.push(game_id);
        self.expected.push(append.expected_version);
        self.versions.push(append.new_version);
        self.snapshots.push(append.snapshot.as_deref());
        self.phases.push(&append.phase);
        let (key, response) = match &append.command {
            Some((key, response)) => (Some(key.as_str()), response.as_slice()),
            None => (None, &[][..]),
        };
        self.command_keys.push(key);
        self.responses.push(response);
        self.event_counts
            .push(i32::try_from(append.seqs.len()).unwrap_or(i32::MAX));
        if append.ends {
            self.ended += 1;
            self.end_ranks.push(self.ended);
        } else {
            self.end_ranks.push(0);
        }
        let last = append.seqs.len().saturating_sub(1);
        for (index, (seq, event)) in append.seqs.iter().zip(&append.events).enumerate() {
            self.event_games.push(game_id);
            self.event_seqs.push(*seq);
            self.event_values.push(event);
            self.event_traces.push(append.trace_parent.as_deref());
            self.event_deadlines.push(
                append
                    .armed_turn_deadline
                    .filter(|_| index == last)
                    .map(OffsetDateTime::from),
            );
        }
        if append.clear_all {
            self.cleared.push(game_id);
        }
        for timer in &append.arms {
            self.tail.timers.push(timer);
        }
        if let Some(version) = append.retag {
            self.retag_games.push(game_id);
            self.retag_versions.push(version);
        }
        let fired = append.fired.as_ref();
        self.fired_slots.push(fired.map(|t| t.slot().name()));
        self.fired_kinds.push(fired.map(|t| t.kind.name()));
        self.fired_versions
            .push(fired.map(|t| super::codec::to_db(t.armed_version)));
        self.fired_ats
            .push(fired.map(|t| OffsetDateTime::from(t.fire_at)));
        self.tail.facts.push(&append.facts);
    }
}

#[cfg(test)]
mod tests {
    use super::super::games::{CREATION_OWN_PARAMS, CREATION_SQL};
    use super::*;

    /// The `$n` parameters a statement's text names, each once, in order.
    fn parameters(sql: &str) -> Vec<usize> {
        let mut found: Vec<usize> = sql
            .split('$')
            .skip(1)
            .filter_map(|rest| {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().ok()
            })
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }

    /// The plan Postgres makes once for a prepared statement and reuses for every later call
    /// (sqlx prepares each statement once per connection), with every parameter `NULL`.
    async fn generic_plan(pool: &PgPool, sql: &str) -> String {
        let mut connection = pool.acquire().await.expect("a connection");
        sqlx::raw_sql("SET plan_cache_mode = force_generic_plan")
            .execute(&mut *connection)
            .await
            .expect("plan_cache_mode is set");
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("PREPARE hot AS {sql}")))
            .execute(&mut *connection)
            .await
            .expect("the statement prepares");
        let nulls = vec!["NULL"; parameters(sql).len()].join(", ");
        let lines: Vec<String> =
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("EXPLAIN EXECUTE hot({nulls})")))
                .fetch_all(&mut *connection)
                .await
                .expect("the statement is explained");
        sqlx::raw_sql("DEALLOCATE hot")
            .execute(&mut *connection)
            .await
            .expect("the statement is released");
        lines.join("\n")
    }

    /// Every move runs the appends' statement and every new game the creations'. Their plans
    /// must reach the big tables through an index, whatever those tables hold: a guard written
    /// as `NOT EXISTS (SELECT ... FROM game_commands ...)` under an `OR` was planned as a hashed
    /// subplan, which read and hashed the whole of `game_commands` for every batch, so a move's
    /// cost in Postgres grew with the number of moves ever played (docs/benchmarks.md).
    #[sqlx::test(migrator = "crate::postgres::MIGRATOR")]
    async fn the_batch_statements_reach_big_tables_by_index_only(pool: PgPool) {
        use crate::GameStore;
        use hidden_front_rules::{Game, GameRng, Rules, Side};
        let store = crate::postgres::PostgresStore::from_pool(pool.clone());
        let rules = Rules::default();
        let (game, events) = Game::create(rules, Side::South, &mut GameRng::from_seed(7));
        let meta = crate::GameMeta {
            game_id: store.new_game_id("plans"),
            rules: rules.name(),
            time_control: crate::TimeControl::online(),
            south_player: "south".to_owned(),
            north_player: "north".to_owned(),
        };
        store
            .create("plans", &meta, &events, &game)
            .await
            .expect("a game is created");
        // 51 games, then 2,001, each with 10 commands, 10 events and a timer: a hashed subplan
        // of game_commands was the planner's choice for the first size (it fits in work_mem),
        // probes by index for the second. At the first size a table of a page or two may be read
        // whole, per row (cheaper than its index, and planned again as it grows); a hashed
        // subplan is never right.
        for (copies, big) in [(50, false), (1950, true)] {
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                "INSERT INTO games SELECT (jsonb_populate_record(NULL::games, \
                   to_jsonb(g) || jsonb_build_object('game_id', gen_random_uuid()))).* \
                 FROM (SELECT * FROM games LIMIT 1) g, generate_series(1, {copies}); \
                 DELETE FROM game_commands; DELETE FROM game_timers; \
                 DELETE FROM game_events WHERE seq > 100; \
                 INSERT INTO game_commands (game_id, idempotency_key, response, version) \
                 SELECT game_id, 'key-' || n, '\\x00', n FROM games, generate_series(1, 10) n; \
                 INSERT INTO game_events (game_id, seq, event) \
                 SELECT game_id, 100 + n, '{{}}' FROM games, generate_series(1, 10) n; \
                 INSERT INTO game_timers (game_id, slot, kind, side, armed_version, fire_at) \
                 SELECT game_id, 'turn', 'move', 'south', 1, now() FROM games; \
                 ANALYZE"
            )))
            .execute(&pool)
            .await
            .expect("the tables are filled");
            for (name, sql) in [
                ("appends", APPEND_SQL.as_str()),
                ("creations", CREATION_SQL.as_str()),
            ] {
                let plan = generic_plan(&pool, sql).await;
                assert!(
                    !plan.contains("hashed SubPlan"),
                    "with {copies} more games, the {name}' statement hashes a subquery's whole \
                     result:\n{plan}"
                );
                let whole: &[&str] = if big {
                    &[
                        "games",
                        "game_commands",
                        "game_events",
                        "game_timers",
                        "game_creations",
                        "lifecycle_facts",
                    ]
                } else {
                    &[]
                };
                for table in whole {
                    assert!(
                        !plan.contains(&format!("Seq Scan on {table} ")),
                        "with {copies} more games, the {name}' statement reads all of \
                         {table}:\n{plan}"
                    );
                }
            }
        }
    }

    #[test]
    fn each_statement_names_its_own_parameters_then_the_tails_without_a_gap() {
        for (sql, own) in [
            (APPEND_SQL.as_str(), APPEND_OWN_PARAMS),
            (CREATION_SQL.as_str(), CREATION_OWN_PARAMS),
        ] {
            let last = own + TimerColumns::PARAMS + FactColumns::PARAMS;
            assert_eq!(parameters(sql), (1..=last).collect::<Vec<_>>(), "{sql}");
        }
    }

    /// A statement that sleeps in the server: from the client, one whose answer does not come.
    struct Sleeps(f64);

    impl Statement for Sleeps {
        const KIND: &'static str = "sleep";
        const METERED: bool = false;

        fn game_id(&self) -> Uuid {
            Uuid::nil()
        }

        async fn write_all<'a>(
            connection: &'a mut PgConnection,
            items: &'a [&'a Self],
        ) -> Result<HashMap<Uuid, SystemTime>, sqlx::Error> {
            sqlx::query("SELECT pg_sleep($1)")
                .bind(items.first().map_or(0.0, |item| item.0))
                .execute(connection)
                .await?;
            Ok(HashMap::new())
        }
    }

    /// A statement unanswered past [`STATEMENT_BOUND`] is given up as `Unanswered`, and its
    /// connection with it: the flushers' one connection is free at once for the next batch, which
    /// does not wait for the first statement (30 s) nor for the pool's test of its connection.
    #[sqlx::test(migrations = false)]
    async fn an_unanswered_statement_gives_its_connection_up(pool: PgPool) {
        let flushers = PgPoolOptions::new()
            .max_connections(1)
            .connect_with((*pool.connect_options()).clone())
            .await
            .expect("the flushers' pool");
        let stuck = write_bounded(&flushers, &[&Sleeps(30.0)]).await;
        assert!(matches!(stuck, Err(Failure::Unanswered)), "{stuck:?}");
        let next = tokio::time::timeout(
            Duration::from_secs(10),
            write_bounded(&flushers, &[&Sleeps(0.0)]),
        )
        .await;
        assert!(
            matches!(next, Ok(Ok(_))),
            "the next statement waited for the unanswered one: {next:?}"
        );
        // The abandoned backend still sleeps: end it, so the test database can go.
        sqlx::query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE query LIKE 'SELECT pg_sleep%' AND pid <> pg_backend_pid()",
        )
        .execute(&pool)
        .await
        .expect("the sleeper is ended");
    }

    /// A statement that counts the items it was asked to write.
    struct Counted(std::sync::Arc<std::sync::atomic::AtomicUsize>);

    impl Statement for Counted {
        const KIND: &'static str = "counted";
        const METERED: bool = false;

        fn game_id(&self) -> Uuid {
            Uuid::now_v7()
        }

        async fn write_all<'a>(
            connection: &'a mut PgConnection,
            items: &'a [&'a Self],
        ) -> Result<HashMap<Uuid, SystemTime>, sqlx::Error> {
            sqlx::query("SELECT 1").execute(connection).await?;
            for item in items {
                item.0.fetch_add(1, Ordering::SeqCst);
            }
            Ok(HashMap::new())
        }
    }

    /// Work whose caller went away before its batch was written is not written; the rest is,
    /// and answered.
    #[sqlx::test(migrations = false)]
    async fn work_whose_caller_went_away_is_not_written(pool: PgPool) {
        let written = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (kept, answer) = oneshot::channel();
        let (gone, went_away) = oneshot::channel();
        drop(went_away);
        let failures = AtomicU64::new(0);
        flush_kind(
            &pool,
            vec![
                (Counted(written.clone()), kept),
                (Counted(written.clone()), gone),
            ],
            &failures,
        )
        .await;
        assert_eq!(
            written.load(Ordering::SeqCst),
            1,
            "only the waited-for item"
        );
        assert!(answer.await.expect("answered").is_ok());
    }
}
