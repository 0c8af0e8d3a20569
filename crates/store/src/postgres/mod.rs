//! [`PostgresStore`]: games in Postgres, shared by every replica of every service.
//!
//! Schema (`migrations/0001_games.sql`): `games` holds one snapshot row per game with its
//! `version` (and `head_version`, the log's head when the snapshot lags it: `0009`; appends write
//! the snapshot as JSON bytes, `raw_snapshot` at `raw_version`: `0010`); `game_events` is the
//! log, primary key `(game_id, seq)` (an append's last event also holds the turn deadline it
//! armed, `armed_turn_deadline`: `0014`); `game_commands` remembers
//! each applied command's answer by `(game_id, idempotency_key)`; `game_creations` maps creation
//! keys to games; `presence` holds gateways' leased connection reports.
//!
//! An append is one transaction guarded by the version (`UPDATE games ... WHERE
//! COALESCE(head_version, version) = expected`), so two replicas racing on a game cannot both win; the loser gets
//! [`StoreError::VersionConflict`] and re-judges. Commits announce themselves with
//! `pg_notify('hf_game_events', '<game_id>:<version>')`; one LISTEN connection per store feeds
//! the in-process [`Notifier`], so watchers wake for appends made by any process.
//!
//! Queries are plain `sqlx::query` strings (no compile-time checked macros), so building needs no
//! database and no `.sqlx/` cache; the conformance suite checks them against a real Postgres.
//!
//! One module per part of the schema: `games` (creation, snapshots, a player's games), `admin`
//! (finding games, the audit log),
//! `appends` (the guarded append and the log), `batch` (group commit: one statement writes the
//! appends of many games, each with its own guard and answer), `recent` (the events of this
//! process's latest write per game, which the stream pumps read instead of the log), `timers`, `presence`, `pulse` (the service's
//! pulse and the outages it accounts for), `ended`
//! (the feed of ended games), `watch` (LISTEN/NOTIFY), with the column conversions in `codec`;
//! this file holds the connection, the migrations and the trait implementation, which only
//! delegates.

mod admin;
mod appends;
mod batch;
mod codec;
mod ended;
mod games;
mod outbox;
mod presence;
mod pulse;
mod recent;
mod timers;
mod watch;

use crate::notifier::Notifier;
use crate::timers::Timer;
use crate::{
    Append, ArmAfterReport, Created, EndedRecord, GameMeta, GameRecord, GameStore, GameSummary,
    LifecycleOutbox, ObservedGame, Presence, StoreError, StoredEvent,
};
use async_trait::async_trait;
use hidden_front_lifecycle::{Fact, NewFact};
use hidden_front_rules::{Event, Game, Side};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgSslMode};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::{OnceCell, watch as watch_channel};
use uuid::Uuid;
use watch::ListenerTask;

/// The embedded migrations (`migrations/` at the workspace root), so the one binary can run
/// `hidden-front migrate` without the files beside it, and tests can migrate fresh databases.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// The NOTIFY channel announcing committed appends; payload `<game_id>:<version>`.
pub const CHANNEL: &str = "hf_game_events";

pub use outbox::LIFECYCLE_CHANNEL;

/// The NOTIFY channel announcing that a game's status changed without an event (a side's
/// presence flipped, or the time to come back of a side that is away was re-armed; payload
/// `<game_id>`) or that every game's did (an outage was accounted for; payload `*`). See
/// [`GameStore::status_changes`].
pub const STATUS_CHANNEL: &str = "hf_game_status";

/// Default pool size of [`PostgresStore::connect`]: enough for a busy session replica, small
/// enough that a handful of replicas fit under Postgres' default 100 connections. Every replica
/// has its own pool, so a deployment sizes it with `--database-max-connections`
/// (`HF_DATABASE_MAX_CONNECTIONS`, which `hidden-front serve` passes to
/// [`PostgresStore::connect_with`]; deploy/README.md, "Sizing Postgres connections").
pub const DEFAULT_MAX_CONNECTIONS: u32 = 16;

/// How long [`PostgresStore::connect`] (and every later checkout) waits for a connection before
/// failing, so an unreachable database is an error, not a hang.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Games in Postgres. Cheap to clone (all clones share one pool, one notifier and one LISTEN
/// connection); the LISTEN task stops when the last clone is dropped or [`PostgresStore::close`]
/// is called.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
    /// Events between snapshots ([`PostgresStore::with_snapshot_interval`]).
    snapshot_interval: u64,
}

/// The most events a snapshot may lag behind the log ([`PostgresStore::with_snapshot_interval`]):
/// a load replays at most this many, so loads stay cheap.
pub const MAX_SNAPSHOT_INTERVAL: u64 = 1024;

/// Events between snapshots unless configured otherwise. Why 16: writing the ~3.4 KB snapshot
/// on every append cost the 100-game Postgres bench about 5 % of its moves a second
/// (docs/benchmarks.md, "Snapshots every 16 events"), while a load that replays 15 events
/// costs microseconds.
pub const DEFAULT_SNAPSHOT_INTERVAL: u64 = 16;

/// The store's main pool, as every user reads it at each use: [`PostgresStore::renew_pool`]
/// replaces it after the database was unreachable.
type SharedPool = Arc<parking_lot::RwLock<PgPool>>;

#[derive(Debug)]
struct Inner {
    pool: SharedPool,
    /// The pulse's own connections (`pulse.rs`), so that pulses that cannot reach the database
    /// never take the main pool's, and the first pulse after it is back finds one at once.
    pulse_pool: PgPool,
    /// Whether the last pulse failed: the next one that answers renews the main pool.
    pulse_failed: std::sync::atomic::AtomicBool,
    /// A pool of one connection, for the LISTEN connection only, so it never takes a connection
    /// from (or is recycled by) the main pool.
    listen_pool: PgPool,
    notifier: Arc<Notifier>,
    /// Wakes the watchers of a game's status, fed by the LISTEN task ([`STATUS_CHANNEL`]).
    status: Arc<Notifier>,
    /// The LISTEN task, started by the first [`GameStore::watch`].
    listener: OnceCell<ListenerTask>,
    /// The queue that writes appends of many games in one statement (`batch.rs`).
    group_commit: batch::GroupCommit,
    /// The outbox's last position, fed by the LISTEN task (`outbox.rs`).
    fact_position: Arc<watch_channel::Sender<u64>>,
    /// The events of this process's latest write per game, for the stream pumps, and its writes
    /// in flight, whose notifications wait for them (`recent.rs`).
    recent: Arc<recent::RecentEvents>,
}

/// How long Postgres lets one of this store's connections sit inside a transaction without
/// sending anything before it ends the session (and with it the transaction and its locks). Every
/// transaction here sends its statements back to back and lasts milliseconds. Why: a session host
/// that vanishes mid-transaction (a lost node, a cut link: no FIN reaches Postgres) would
/// otherwise hold its game rows' locks until the server's TCP keepalive gives up, hours by
/// default, and every other replica's command on those games would wait on them, filling its
/// pool (the cluster test saw a whole replica's health fail so). The command that was cut is
/// not applied; its retry is.
pub const IDLE_IN_TRANSACTION_TIMEOUT: &str = "5s";

impl PostgresStore {
    /// The game an earlier creation under `creation_key` made in this database, if any: what a
    /// sharded store asks of the shards a creation may have been placed on.
    pub(crate) async fn game_of_creation_key(
        &self,
        creation_key: &str,
    ) -> Result<Option<Uuid>, StoreError> {
        games::game_of_creation_key(self, creation_key).await
    }

    /// Connects to the database at `url` (a `postgres://` URL) with a pool of
    /// [`DEFAULT_MAX_CONNECTIONS`] and a [`DEFAULT_CONNECT_TIMEOUT`]. Does not migrate: call
    /// [`PostgresStore::migrate`] (or `hidden-front migrate`) first.
    pub async fn connect(url: &str) -> Result<PostgresStore, StoreError> {
        PostgresStore::connect_with(url, DEFAULT_MAX_CONNECTIONS).await
    }

    /// [`PostgresStore::connect`] with a chosen pool size (the LISTEN connection and the group
    /// commit's connection come on top).
    pub async fn connect_with(
        url: &str,
        max_connections: u32,
    ) -> Result<PostgresStore, StoreError> {
        let mut options = PgConnectOptions::from_str(url)?;
        if plain_on_loopback(
            url,
            options.get_host(),
            std::env::var_os("PGSSLMODE").is_some(),
        ) {
            options = options.ssl_mode(PgSslMode::Disable);
        }
        if options.get_application_name().is_none() {
            options = options.application_name("hidden-front");
        }
        options = options.options([(
            "idle_in_transaction_session_timeout",
            IDLE_IN_TRANSACTION_TIMEOUT,
        )]);
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(DEFAULT_CONNECT_TIMEOUT)
            .connect_with(options)
            .await?;
        Ok(PostgresStore::from_pool(pool))
    }

    /// A store over an existing pool (tests, or a process sharing one pool between services).
    /// The LISTEN connection and the group commit's connection are opened separately, with the
    /// pool's connect options.
    pub fn from_pool(pool: PgPool) -> PostgresStore {
        let listen_pool = crate::listen::dedicated_pool(&pool);
        let group_commit = batch::GroupCommit::new(&pool);
        let pulse_pool = pulse::dedicated_pool(&pool);
        PostgresStore {
            inner: Arc::new(Inner {
                pool: Arc::new(parking_lot::RwLock::new(pool)),
                pulse_pool,
                pulse_failed: std::sync::atomic::AtomicBool::new(false),
                listen_pool,
                notifier: Arc::new(Notifier::new()),
                status: Arc::new(Notifier::new()),
                listener: OnceCell::new(),
                group_commit,
                fact_position: Arc::new(watch_channel::channel(0).0),
                recent: Arc::new(recent::RecentEvents::default()),
            }),
            snapshot_interval: DEFAULT_SNAPSHOT_INTERVAL,
        }
    }

    /// This store with the raw engine snapshot (`migrations/0010_raw_snapshots.sql`) written
    /// only by appends that reach a multiple of `interval` events (and by every append outside
    /// play, so deployments and ended games are always at a snapshot); the appends between
    /// update the game's small columns only, and a load replays the events the snapshot lags.
    /// Why: even as bytes, the ~3.4 KB snapshot is the largest value an append writes. 1 writes
    /// it on every append; the default is [`DEFAULT_SNAPSHOT_INTERVAL`]. Clamped to
    /// `1..=`[`MAX_SNAPSHOT_INTERVAL`].
    pub fn with_snapshot_interval(mut self, interval: u64) -> PostgresStore {
        self.snapshot_interval = interval.clamp(1, MAX_SNAPSHOT_INTERVAL);
        self
    }

    /// Brings every game whose snapshot lags its log back to a snapshot at its head; returns how
    /// many it wrote. Why: before rolling back to a release that does not read `head_version`
    /// (run it once no replica of this release runs: each of its appends leaves the `jsonb`
    /// snapshot behind again).
    pub async fn snapshot_lagging_games(&self) -> Result<u64, StoreError> {
        games::snapshot_lagging_games(self).await
    }

    /// Applies the embedded migrations that the database lacks (sqlx takes an advisory lock, so
    /// replicas starting together do not collide).
    #[tracing::instrument(name = "store.migrate", skip_all, fields(db.system = "postgresql"))]
    pub async fn migrate(&self) -> Result<(), StoreError> {
        MIGRATOR.run(&self.pool()).await?;
        Ok(())
    }

    /// The pool, for other tables of the same database (timers, outbox) and for health checks.
    /// The one in use now: after the database was unreachable the store renews it
    /// ([`PostgresStore::renew_pool`]), and a clone taken before keeps the one it had.
    pub fn pool(&self) -> PgPool {
        self.inner.pool.read().clone()
    }

    /// Replaces the main pool with a fresh one of the same settings, connecting lazily. Why:
    /// connections that had a request in flight when the database became unreachable (a
    /// partition) stay in TCP's retransmission backoff after it is back, for as long again as
    /// the partition lasted (measured: 24 s after a 30 s partition), and the pool counts them
    /// while it tests them on their return; with most of the pool held so, every call waited
    /// for one of the few left (the cluster test's `partition_session1_postgres`). The old pool
    /// is not closed (a service sharing it, the webhooks or matchmaking, keeps using it): it lets
    /// its connections go as they come back, and goes when its last clone does.
    fn renew_pool(&self) {
        let mut pool = self.inner.pool.write();
        let fresh = pool
            .options()
            .clone()
            .connect_lazy_with((*pool.connect_options()).clone());
        *pool = fresh;
        tracing::info!("the store's main pool was renewed after the database was unreachable");
    }

    /// How many group-commit statements of this store failed and wrote nothing (also
    /// `hf_store_batch_failures_total`): a known command key does not count, it fails only its
    /// own append's guard (`batch.rs`).
    pub fn batch_failures(&self) -> u64 {
        self.inner.group_commit.failures()
    }

    /// Records this database as shard `index` of a sharded store, or checks that it already is
    /// ([`crate::sharded::ShardedStore::open`]); from then on its feeds' positions are those of
    /// a shard (`migrations/0012_shards.sql`).
    pub async fn claim_shard(&self, index: crate::placement::ShardIndex) -> Result<(), StoreError> {
        let recorded: i32 = sqlx::query_scalar(
            "WITH claimed AS (INSERT INTO store_shard (id, shard) VALUES (true, $1) \
                              ON CONFLICT (id) DO NOTHING RETURNING shard) \
             SELECT shard FROM claimed UNION ALL SELECT shard FROM store_shard LIMIT 1",
        )
        .bind(i32::from(index))
        .fetch_one(&self.pool())
        .await?;
        if recorded == i32::from(index) {
            Ok(())
        } else {
            Err(StoreError::WrongShard {
                configured: index,
                recorded: u16::try_from(recorded).unwrap_or(u16::MAX),
            })
        }
    }

    /// The outbox's facts after `after` up to its committed counter, and the counter, from one
    /// snapshot: what a reader merging shards needs (`sharded.rs`).
    pub async fn facts_page(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<(Vec<Fact>, u64), StoreError> {
        outbox::facts_page(self, after, limit).await
    }

    /// Moves the outbox's counter up to at least `target`, recording nothing; returns it.
    pub async fn reach_facts(&self, target: u64) -> Result<u64, StoreError> {
        outbox::reach(self, target).await
    }

    /// The ended games after `after` up to the feed's committed counter, and the counter.
    pub async fn ended_page(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<(Vec<EndedRecord>, u64), StoreError> {
        ended::ended_page(self, after, limit).await
    }

    /// Moves the ended games' counter up to at least `target`; returns it.
    pub async fn reach_ended(&self, target: u64) -> Result<u64, StoreError> {
        ended::reach(self, target).await
    }

    /// Stops the LISTEN task and closes both pools, waiting for checked-out connections to come
    /// back: for a graceful shutdown. Every clone of this store is unusable afterwards.
    pub async fn close(&self) {
        if let Some(task) = self.inner.listener.get() {
            task.0.abort();
        }
        self.inner.listen_pool.close().await;
        self.inner.group_commit.pool().close().await;
        self.inner.pulse_pool.close().await;
        self.pool().close().await;
    }
}

/// Whether to connect without TLS: the database is on this host (a loopback address or a Unix
/// socket) and neither the URL nor `PGSSLMODE` chose an `sslmode`. TLS to the same host protects
/// nothing, and on loopback it costs a lot: sqlx writes each 16 KiB TLS record with its own
/// `write`, and with loopback's 64 KiB segments Nagle's algorithm holds the second record until
/// Postgres's delayed ACK, 40 ms later (a group-commit statement of 30 appends took 50 ms instead
/// of 5; docs/benchmarks.md). An explicit `sslmode` always wins.
fn plain_on_loopback(url: &str, host: &str, sslmode_from_env: bool) -> bool {
    let chosen = sslmode_from_env
        || url
            .split_once('?')
            .is_some_and(|(_, query)| query.split('&').any(|p| p.starts_with("sslmode=")));
    let local = host.starts_with('/')
        || host.eq_ignore_ascii_case("localhost")
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    local && !chosen
}

#[async_trait]
impl LifecycleOutbox for PostgresStore {
    async fn facts_after(&self, after: u64, limit: usize) -> Result<Vec<Fact>, StoreError> {
        outbox::facts_after(self, after, limit).await
    }

    async fn watch_facts(&self) -> Result<watch_channel::Receiver<u64>, StoreError> {
        outbox::watch_facts(self).await
    }
}

#[async_trait]
impl GameStore for PostgresStore {
    async fn create_armed(
        &self,
        creation_key: &str,
        meta: &GameMeta,
        events: &[Event],
        game: &Game,
        timers: &[Timer],
        facts: &[NewFact],
    ) -> Result<Created, StoreError> {
        games::create_armed(self, creation_key, meta, events, game, timers, facts).await
    }

    async fn load(&self, game_id: Uuid) -> Result<Option<GameRecord>, StoreError> {
        games::load(self, game_id).await
    }

    async fn append_armed(&self, append: Append<'_>) -> Result<u64, StoreError> {
        appends::append_armed(self, append).await
    }

    async fn command_response(
        &self,
        game_id: Uuid,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        appends::command_response(self, game_id, key).await
    }

    async fn events(
        &self,
        game_id: Uuid,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        appends::events(self, game_id, from_seq, limit).await
    }

    fn status_changes(&self, game_id: Uuid) -> watch_channel::Receiver<u64> {
        self.inner.status.subscribe(game_id)
    }

    async fn watch(&self, game_id: Uuid) -> Result<watch_channel::Receiver<u64>, StoreError> {
        watch::watch(self, game_id).await
    }

    async fn report_presence(
        &self,
        game_id: Uuid,
        side: Side,
        gateway_id: &str,
        connected: bool,
        now: SystemTime,
        lease_until: SystemTime,
        arm: Option<&ArmAfterReport<'_>>,
    ) -> Result<Presence, StoreError> {
        presence::report_presence(
            self,
            presence::Report {
                game_id,
                side,
                gateway_id,
                connected,
                now,
                lease_until,
            },
            arm,
        )
        .await
    }

    async fn presence(&self, game_id: Uuid, now: SystemTime) -> Result<Presence, StoreError> {
        presence::presence(self, game_id, now).await
    }

    async fn observe(
        &self,
        game_id: Uuid,
        now: SystemTime,
    ) -> Result<Option<ObservedGame>, StoreError> {
        games::observe(self, game_id, now).await
    }

    async fn pulse(
        &self,
        clock: &hidden_front_time::WallClock,
        rule: &crate::OutageRule,
    ) -> Result<Option<crate::Outage>, StoreError> {
        pulse::pulse(self, clock, rule).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        games::ping(self).await
    }

    async fn games_of_player(
        &self,
        player: &str,
        limit: usize,
    ) -> Result<Vec<GameSummary>, StoreError> {
        games::games_of_player(self, player, limit).await
    }

    async fn ended_games(
        &self,
        after_cursor: u64,
        limit: usize,
    ) -> Result<Vec<EndedRecord>, StoreError> {
        ended::ended_games(self, after_cursor, limit).await
    }
}

#[cfg(test)]
mod tests {
    use super::plain_on_loopback;

    #[test]
    fn tls_is_left_out_only_on_this_host_and_only_when_nobody_chose() {
        let url = "postgres://u@127.0.0.1:5432/db";
        assert!(plain_on_loopback(url, "127.0.0.1", false));
        assert!(plain_on_loopback(url, "localhost", false));
        assert!(plain_on_loopback(url, "::1", false));
        assert!(plain_on_loopback(url, "/var/run/postgresql", false));
        assert!(!plain_on_loopback(url, "db.example.com", false));
        assert!(!plain_on_loopback(url, "10.0.0.7", false));
        assert!(
            !plain_on_loopback(url, "127.0.0.1", true),
            "PGSSLMODE chose"
        );
        let chosen = "postgres://u@127.0.0.1:5432/db?application_name=x&sslmode=require";
        assert!(
            !plain_on_loopback(chosen, "127.0.0.1", false),
            "the URL chose"
        );
    }
}
