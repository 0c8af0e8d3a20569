//! Game storage: every game is an append-only log of engine events plus a snapshot of the engine
//! state at the latest version, kept either in Postgres ([`postgres::PostgresStore`]; spread over
//! several databases by game id, [`sharded::ShardedStore`] and [`placement`]) or in memory
//! ([`memory::MemoryStore`], the one-box default and a test aid). Both implement [`GameStore`] and
//! pass the same conformance suite (the `hidden-front-store-conformance` crate, run by this
//! crate's tests; it is test support, not part of this library).
//!
//! The contract every implementation keeps:
//! - **Optimistic concurrency.** [`GameStore::append`] writes only if the game is still at the
//!   version the caller judged against; otherwise it fails with [`StoreError::VersionConflict`] and
//!   writes nothing. Two session replicas racing on one game cannot both win.
//! - **Idempotent commands.** An append may carry a command key and its encoded answer, stored in
//!   the same transaction; a second append with the same key fails with
//!   [`StoreError::DuplicateCommand`] carrying the first answer, and writes nothing.
//! - **Atomicity.** The events, the snapshot, the version and the command record change together
//!   or not at all.
//! - **Change notification.** After an append commits, [`GameStore::watch`] receivers for that game
//!   see the new version (across processes for Postgres, via LISTEN/NOTIFY).
//! - **Missing games.** [`GameStore::load`] answers `None` for a game that does not exist; every
//!   other per-game operation fails with [`StoreError::NotFound`], so "no news" and "no game" are
//!   never confused.
//! - **Order of checks.** For an append: the game must exist, then a known command key answers
//!   [`StoreError::DuplicateCommand`] (even when the retry carries a stale version), then the
//!   version must match, then a fired timer it carries must still be armed as it was
//!   ([`StoreError::TimerChanged`]).

/// The LISTEN/NOTIFY helper the Postgres store follows appends with (its own crate, which
/// matchmaking uses too).
pub use hidden_front_pg_listen as listen;
pub mod admin;
pub mod continuity;
pub mod memory;
pub mod notifier;
pub mod placement;
pub mod postgres;
pub mod sharded;
pub mod timers;

pub use admin::{
    AdminStore, AuditAction, AuditEntry, AuditQuery, FoundGame, GameCursor, GameFilter,
    NewAuditEntry,
};
pub use continuity::{Outage, OutageRule};
pub use timers::{Timer, TimerChange, TimerKind, TimerSlot, TimerStore, TurnTimerChange};

/// The lifecycle facts the store keeps in its outbox (their own crate: what is told is a domain
/// decision, where it is kept is the store's).
pub use hidden_front_lifecycle as lifecycle;
use hidden_front_lifecycle::{Fact, FeedPosition, NewFact, PositionError, PositionedFact};

use async_trait::async_trait;
use hidden_front_rules::{Event, Game, Phase, Side};
use hidden_front_time::WallClock;
use serde::{Deserialize, Serialize};
use std::time::SystemTime;
use thiserror::Error;
use tokio::sync::watch;
use uuid::Uuid;

/// Makes the timer a presence report arms, from how long the reporting side counts as connected
/// after the report (`None`: it is away); see [`GameStore::report_presence`].
pub type ArmAfterReport<'a> = dyn Fn(Option<SystemTime>) -> Timer + Send + Sync + 'a;

/// Time limits of a game (seconds), stored with it so clocks can be re-armed after any restart.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TimeControl {
    /// `online`, `relaxed` or `custom`.
    pub name: String,
    /// Time to confirm a deployment once both seats are filled.
    pub deployment_seconds: u32,
    /// Time for each move.
    pub move_seconds: u32,
    /// Time a disconnected player has to come back.
    pub reconnect_seconds: u32,
}

impl TimeControl {
    /// The online rules: 90 s to deploy, 30 s a move, 60 s to come back.
    pub fn online() -> TimeControl {
        TimeControl {
            name: "online".into(),
            deployment_seconds: 90,
            move_seconds: 30,
            reconnect_seconds: 60,
        }
    }

    /// The looser control for invites and games against the computer.
    pub fn relaxed() -> TimeControl {
        TimeControl {
            name: "relaxed".into(),
            deployment_seconds: 300,
            move_seconds: 120,
            reconnect_seconds: 300,
        }
    }
}

/// What a game is, besides its state: who sits where, under which rules and clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameMeta {
    /// The game's id.
    pub game_id: Uuid,
    /// The rule set's name (`hidden-front`, ...).
    pub rules: String,
    /// The clock settings.
    pub time_control: TimeControl,
    /// Player id in the south seat.
    pub south_player: String,
    /// Player id in the north seat.
    pub north_player: String,
}

impl GameMeta {
    /// Who sits where, as lifecycle facts name it.
    pub fn seats(&self) -> lifecycle::derive::Seats<'_> {
        lifecycle::derive::Seats {
            game_id: self.game_id,
            rules: &self.rules,
            time_control: &self.time_control.name,
            south_player: &self.south_player,
            north_player: &self.north_player,
        }
    }

    /// The player seated on `side`.
    pub fn player(&self, side: Side) -> &str {
        match side {
            Side::South => &self.south_player,
            Side::North => &self.north_player,
        }
    }
}

/// A stored game: its metadata, its version (sequence number of its last event) and the engine
/// state at that version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameRecord {
    /// Who, what rules, what clock.
    pub meta: GameMeta,
    /// Sequence number of the last event (the first event is 1).
    pub version: u64,
    /// The engine state after the last event.
    pub game: Game,
}

/// One event of a game's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Position in the log, from 1.
    pub seq: u64,
    /// The event, with full information.
    pub event: Event,
    /// The W3C `traceparent` of the command that caused it, if it was traced: whoever delivers
    /// the event later continues that trace.
    pub trace_parent: Option<String>,
    /// When the store committed it (Postgres: `game_events.created_at`, the database's clock at
    /// the append's statement; memory: the system clock at the append, never earlier than the
    /// event before it). Replays show it and derive the clock readings from it.
    pub recorded_at: SystemTime,
    /// The turn deadline (the `turn` slot's [`Timer::fire_at`]) that the append which wrote this
    /// event armed ([`TurnTimerChange::Arm`]), on the append's **last** event only. `None` on
    /// the append's other events, when the append armed no turn deadline (deployment, a draw
    /// offer or answer, which keep the running one; the end), on a game's creation events, and
    /// on events written by a release that did not record it (before
    /// `migrations/0014_event_turn_deadlines.sql`). Why: a `WatchGame` pump advances the status
    /// it streams from the events it reads (the move clock is the one part of the status an
    /// event's own content cannot tell), instead of reading the whole game after every move,
    /// including the moves other processes appended.
    pub armed_turn_deadline: Option<SystemTime>,
}

/// A game in a player's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameSummary {
    /// The game's metadata.
    pub meta: GameMeta,
    /// Its current phase.
    pub phase: Phase,
    /// Its version.
    pub version: u64,
}

/// What a game's presence reports say at one moment, per side (indexed by [`Side::index`]).
///
/// A side counts as connected while any gateway's unexpired report says so. How long that lasts
/// matters too: a timer that should apply only once a side is believed gone (its time to come
/// back) must not be due before the last of those leases ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Presence {
    /// Until when each side counts as connected: the latest end among its unexpired
    /// "connected" leases, or `None` when it has none (the side is away).
    pub connected_until: [Option<SystemTime>; 2],
}

impl Presence {
    /// Whether each side counts as connected.
    pub fn connected(&self) -> [bool; 2] {
        self.connected_until.map(|until| until.is_some())
    }

    /// Counts one report in, judged at `now`: a "connected" lease that has not ended keeps
    /// `side` connected at least until it ends. Every store judges leases with this, so they
    /// agree on what a set of reports means.
    pub(crate) fn count(
        &mut self,
        side: Side,
        connected: bool,
        lease_until: SystemTime,
        now: SystemTime,
    ) {
        if connected && lease_until > now {
            let until = &mut self.connected_until[side.index()];
            *until = Some(until.map_or(lease_until, |u| u.max(lease_until)));
        }
    }
}

/// The result of [`GameStore::create`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    /// The game's id: the new one, or the one an earlier call with the same key created.
    pub game_id: Uuid,
    /// Whether an earlier call with the same key had already created it (nothing was written).
    pub replayed: bool,
}

/// A command's key and its encoded answer, stored with the events it caused.
#[derive(Debug, Clone, Copy)]
pub struct CommandRecord<'a> {
    /// The client's idempotency key (unique per game).
    pub key: &'a str,
    /// The answer to give to any retry (opaque bytes, e.g. an encoded protobuf message).
    pub response: &'a [u8],
}

/// One append to a game's log, as [`GameStore::append_armed`] takes it: everything that must be
/// written in one transaction, named, so callers cannot swap two versions or two options.
#[derive(Debug, Clone, Copy)]
pub struct Append<'a> {
    /// The game.
    pub game_id: Uuid,
    /// The version the events were judged against: the append writes only if the game is still
    /// there (the optimistic-concurrency guard).
    pub expected_version: u64,
    /// The new events; they get seqs `expected_version + 1 ..`.
    pub events: &'a [Event],
    /// The engine state after the events: the new snapshot.
    pub game: &'a Game,
    /// The command's idempotency key and answer, stored with the events, if it has one.
    pub command: Option<CommandRecord<'a>>,
    /// The timers the append arms, retags or clears, in the same transaction.
    pub timers: &'a TimerChange,
    /// The W3C `traceparent` of the command, stored with each event so whoever delivers them
    /// continues its trace.
    pub trace_parent: Option<&'a str>,
    /// The lifecycle facts the events cause, written to the outbox in the same transaction
    /// (after the outbox's earlier facts, in this order).
    pub facts: &'a [NewFact],
    /// The timer whose fire this append carries out (a timeout, the deployment deadline, a lost
    /// seat), if any: the append writes only if the game's slot still holds exactly this timer,
    /// so a deadline that moved meanwhile (an outage accounted for, a presence report re-arming
    /// a time to come back) makes the fire change nothing ([`StoreError::TimerChanged`]).
    pub fired: Option<&'a Timer>,
}

/// Why a store operation failed.
#[derive(Debug, Error)]
pub enum StoreError {
    /// No game with this id.
    #[error("game {0} not found")]
    NotFound(Uuid),
    /// The game is no longer at the version the caller expected; nothing was written.
    #[error("game {game_id} is at version {actual}, not {expected}")]
    VersionConflict {
        /// The game.
        game_id: Uuid,
        /// The version the caller expected.
        expected: u64,
        /// The version it is at.
        actual: u64,
    },
    /// A command with this key was already applied; here is its first answer. Nothing was written.
    #[error("command {key:?} was already applied to game {game_id}")]
    DuplicateCommand {
        /// The game.
        game_id: Uuid,
        /// The key.
        key: String,
        /// The stored answer of the first attempt.
        response: Vec<u8>,
    },
    /// A game with this id exists already.
    #[error("game {0} already exists")]
    AlreadyExists(Uuid),
    /// The fired timer an append carries out is no longer the one armed in its slot (it was
    /// moved, re-armed or cleared); nothing was written.
    #[error("the timer fired for game {0} is no longer armed as it was")]
    TimerChanged(Uuid),
    /// Stored data that does not decode (a bug or a tampered database).
    #[error("stored data for game {game_id} is corrupt: {reason}")]
    Corrupt {
        /// The game.
        game_id: Uuid,
        /// What failed to decode.
        reason: String,
    },
    /// The database failed or is unreachable.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// Migrations failed.
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The shard that holds the game cannot serve it now: it is unreachable, or it was and its
    /// pulse has not yet accounted for the time it was away (so no deadline is judged before the
    /// outage moved it). Retriable; the other shards' games are unaffected.
    #[error("shard {shard} is unavailable: {reason}")]
    ShardUnavailable {
        /// The shard's index.
        shard: placement::ShardIndex,
        /// Why.
        reason: String,
    },
    /// The store did not answer this process's last pulse (unreachable, or too slow to count as
    /// serving): every call is given up at once until a pulse reaches it again, so that a host
    /// cut from its database answers `UNAVAILABLE` and its callers retry on a host that serves,
    /// instead of waiting on a connection that will never answer. Retriable: an append given up
    /// may still have committed, and its retry with the same idempotency key finds it.
    #[error("the store did not answer this process's pulse: {reason}")]
    Lost {
        /// Why the pulse failed.
        reason: String,
    },
    /// The game id names a shard this store does not have (fewer shards are configured than
    /// when the game was created).
    #[error(
        "game {game_id} lives on shard {shard}, but only {shards} shards are configured: was a shard removed from the list?"
    )]
    NoSuchShard {
        /// The game.
        game_id: Uuid,
        /// The shard its id names.
        shard: placement::ShardIndex,
        /// How many shards are configured.
        shards: usize,
    },
    /// A feed position this store cannot read from: it names a shard the store does not have.
    /// The caller's mistake (a position of another store, or of one with more shards).
    #[error("the feed position {0}")]
    Position(#[from] PositionError),
    /// A database of a sharded store records another index than the one it is configured at:
    /// the list of shards is in the wrong order or names a wrong database, and games would be
    /// looked for in the wrong place.
    #[error(
        "the database configured as shard {configured} is shard {recorded}: list the shards in the order they were first given"
    )]
    WrongShard {
        /// Its index in the configured list.
        configured: placement::ShardIndex,
        /// The index the database recorded when it was first opened as a shard.
        recorded: placement::ShardIndex,
    },
}

impl StoreError {
    /// Whether the failure is the store's (unreachable, broken or misconfigured), not an answer
    /// about a game: what a caller reports as unavailable and counts as a store failure.
    pub fn is_store_failure(&self) -> bool {
        matches!(
            self,
            StoreError::Database(_)
                | StoreError::Corrupt { .. }
                | StoreError::Migrate(_)
                | StoreError::ShardUnavailable { .. }
                | StoreError::Lost { .. }
                | StoreError::NoSuchShard { .. }
                | StoreError::WrongShard { .. }
        )
    }
}

/// A game in the feed of ended games ([`GameStore::ended_games`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndedRecord {
    /// Its position in the feed: increasing in the order the games' ends committed.
    pub cursor: u64,
    /// The game as it ended.
    pub record: GameRecord,
}

/// A game as one reader sees it at one moment ([`GameStore::observe`]): what `GetGame` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedGame {
    /// The game's metadata, version and state.
    pub record: GameRecord,
    /// Which sides count as connected at the moment asked about, and until when.
    pub presence: Presence,
    /// The game's armed timers, soonest first (as [`TimerStore::timers_of`] lists them).
    pub timers: Vec<Timer>,
}

/// The lifecycle outbox as its readers see it: the facts by position, and a wake-up when there
/// are more. What the webhook deliveries and `WatchLifecycle` need of a store, and no more; every
/// [`GameStore`] is one, since it writes the facts with the games.
#[async_trait]
pub trait LifecycleOutbox: Send + Sync + 'static {
    /// The outbox's facts after position `after` (0 reads from the start), in position order,
    /// at most `limit`. Positions follow commit order: once a reader has seen position N, no fact
    /// below N can still appear.
    async fn facts_after(&self, after: u64, limit: usize) -> Result<Vec<Fact>, StoreError>;

    /// A receiver of the outbox's last position: it changes after every commit that records
    /// facts, also commits of other processes on the same database (rapid commits may coalesce
    /// into one wake-up; read with [`LifecycleOutbox::facts_after`] from your cursor). It starts
    /// at the current position, marked as seen.
    async fn watch_facts(&self) -> Result<watch::Receiver<u64>, StoreError>;

    /// How many shards the feed's positions name ([`FeedPosition`]): 1 unless the store is
    /// sharded. A position naming more is not this store's.
    fn feed_shards(&self) -> usize {
        1
    }

    /// The outbox's facts after `after`, read **per shard**: each shard after its own entry, so
    /// a shard that does not answer holds back only its own facts (it is named in
    /// [`FactsPage::unanswered`] and read again from the same entry next time), never the
    /// others'. At most `limit`, in position order among the shards that answered; each fact
    /// comes with the position just after it, which is what a reader stores. Each game's facts
    /// come in commit order (a game lives on one shard); a shard that answers again after
    /// missing a page delivers facts below positions already delivered from the others.
    ///
    /// The default serves a store of one database, whose one entry is its cursor: the same
    /// facts as [`LifecycleOutbox::facts_after`]. A position naming more shards than
    /// [`LifecycleOutbox::feed_shards`] is refused ([`StoreError::Position`]).
    async fn facts_after_position(
        &self,
        after: &FeedPosition,
        limit: usize,
    ) -> Result<FactsPage, StoreError> {
        after.check_shards(self.feed_shards())?;
        let mut position = after.clone();
        let facts = self
            .facts_after(after.get(0), limit)
            .await?
            .into_iter()
            .map(|fact| {
                position.advance(0, fact.position);
                PositionedFact {
                    fact,
                    after: position.clone(),
                }
            })
            .collect();
        Ok(FactsPage {
            facts,
            unanswered: Vec::new(),
        })
    }

    /// A receiver of every shard's last outbox position (one entry unless sharded): it changes
    /// after every commit that records facts on any shard, including commits whose position is
    /// below another shard's last (which a single merged number would not show). It starts at
    /// the current positions, marked as seen: mark it seen before reading with
    /// [`LifecycleOutbox::facts_after_position`] and wait for a change after a short page.
    ///
    /// The default follows [`LifecycleOutbox::watch_facts`] with a task that ends when the last
    /// receiver is dropped.
    async fn watch_fact_positions(&self) -> Result<watch::Receiver<FeedPosition>, StoreError> {
        let mut source = self.watch_facts().await?;
        let first = *source.borrow_and_update();
        let (sender, receiver) = watch::channel(FeedPosition::from_cursor(first, 1));
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    changed = source.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        let last = *source.borrow_and_update();
                        sender.send_if_modified(|position| {
                            let newer = last > position.get(0);
                            position.advance(0, last);
                            newer
                        });
                    }
                    () = sender.closed() => return,
                }
            }
        });
        Ok(receiver)
    }
}

/// One page of [`LifecycleOutbox::facts_after_position`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FactsPage {
    /// The facts, each with the position just after it.
    pub facts: Vec<PositionedFact>,
    /// The shards that did not answer this time, in index order: their facts were not read
    /// (their entries stay where they were), so read again later even if nothing wakes you.
    pub unanswered: Vec<placement::ShardIndex>,
}

/// Where games live. Implementations: [`memory::MemoryStore`], [`postgres::PostgresStore`].
///
/// Every store also keeps the games' timers ([`TimerStore`]), because they are written in the
/// same transaction as the events that arm them, answers the admin API ([`AdminStore`]:
/// finding games, the audit log), because it holds the games, and keeps the lifecycle outbox
/// ([`LifecycleOutbox`]), whose facts commit with the games' events.
#[async_trait]
pub trait GameStore: TimerStore + AdminStore + LifecycleOutbox {
    /// Creates a game with its first events (`events[0]` gets seq 1) and the state after them.
    /// Idempotent on `creation_key`: a second call with the same key writes nothing and returns
    /// the first game's id with `replayed: true`.
    async fn create(
        &self,
        creation_key: &str,
        meta: &GameMeta,
        events: &[Event],
        game: &Game,
    ) -> Result<Created, StoreError> {
        self.create_armed(creation_key, meta, events, game, &[], &[])
            .await
    }

    /// [`GameStore::create`], arming `timers` and recording `facts` in the outbox in the same
    /// transaction (neither when replayed).
    async fn create_armed(
        &self,
        creation_key: &str,
        meta: &GameMeta,
        events: &[Event],
        game: &Game,
        timers: &[Timer],
        facts: &[NewFact],
    ) -> Result<Created, StoreError>;

    /// The id for a new game created under `creation_key`: where the store will keep it is
    /// written in it ([`placement`]), so a sharded store finds the game from its id alone. A
    /// store of one database answers a time-ordered (version 7) id; a sharded one, the same id
    /// placed on the shard the key hashes to, so a retried creation meets its first attempt.
    fn new_game_id(&self, creation_key: &str) -> Uuid {
        let _ = creation_key;
        Uuid::now_v7()
    }

    /// The game's metadata, version and state; `None` if there is no such game.
    async fn load(&self, game_id: Uuid) -> Result<Option<GameRecord>, StoreError>;

    /// Appends `events` (seqs `expected_version + 1 ..`) and replaces the snapshot with `game`,
    /// atomically, if and only if the game is at `expected_version` and `command` (if any) was
    /// never applied to this game; returns the new version. See the crate docs for the errors.
    ///
    /// With no events the version stays, the snapshot is replaced and the command recorded (an
    /// answer worth remembering that changed nothing); watchers are not woken. Such an append
    /// does not exclude a concurrent one, so use it only for answers, never to change state.
    async fn append(
        &self,
        game_id: Uuid,
        expected_version: u64,
        events: &[Event],
        game: &Game,
        command: Option<CommandRecord<'_>>,
    ) -> Result<u64, StoreError> {
        self.append_armed(Append {
            game_id,
            expected_version,
            events,
            game,
            command,
            timers: &TimerChange::none(),
            trace_parent: None,
            facts: &[],
            fired: None,
        })
        .await
    }

    /// [`GameStore::append`], changing the game's timers in the same transaction: a command is
    /// acknowledged only once the deadline it starts is durable. An append that ends the game
    /// also puts it in the feed of ended games. The request's `trace_parent` (a W3C
    /// `traceparent`) is stored with each event.
    async fn append_armed(&self, append: Append<'_>) -> Result<u64, StoreError>;

    /// Games that ended after feed position `after_cursor`, in feed order, at most `limit`.
    async fn ended_games(
        &self,
        after_cursor: u64,
        limit: usize,
    ) -> Result<Vec<EndedRecord>, StoreError>;

    /// The stored answer of a command already applied to the game, if any.
    async fn command_response(
        &self,
        game_id: Uuid,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StoreError>;

    /// Events with `seq >= from_seq`, in order, at most `limit` of them (`from_seq` 0 reads from
    /// the start; past the end is an empty list).
    async fn events(
        &self,
        game_id: Uuid,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError>;

    /// A receiver of the game's latest version: it changes after every committed append, also
    /// appends made by other processes on the same database. It starts at the current version,
    /// marked as seen, so `changed()` waits for the next append; rapid appends may coalesce into
    /// one wake-up (read the log from your last seq up to the version shown).
    async fn watch(&self, game_id: Uuid) -> Result<watch::Receiver<u64>, StoreError>;

    /// A receiver that changes when the game's status may have changed without an event: a
    /// side's presence flipped (connected to away or back, by any process's report), a report
    /// re-armed the time to come back of a side that is away after it (the away deadline shown
    /// moved), or an outage moved the deadlines. Its value only counts changes. Why: the
    /// session streams each game's status (presence, deadlines) to its watchers, derives it
    /// from the events otherwise, and reads it again only on these wake-ups, not on every lease
    /// renewal (which re-arms the time to come back of a connected side, which nobody sees).
    /// Take it after [`GameStore::watch`] (which starts the cross-process listening) and before
    /// reading the status, so no change after the read goes unnoticed. A lease that lapses by time changes nothing here: the
    /// reader knows from the leases it read when that happens.
    fn status_changes(&self, game_id: Uuid) -> watch::Receiver<u64>;

    /// Records a gateway's report of a player's connection, holding until `lease_until`, and
    /// returns the game's presence at `now` (the time of the report, by the caller's clock: the
    /// session's, which judges the leases). A gateway's report replaces its earlier one for the
    /// same side; a report with `lease_until <= now` counts for nothing.
    ///
    /// With `arm`, the report also arms the timer `arm` makes from how long `side` counts as
    /// connected after the report (its time to come back depends on that). Why here and not
    /// with [`TimerStore::arm_timer`]: gateways renew every seat's report every few seconds,
    /// and the store can then write the report and its timer in one statement.
    #[allow(clippy::too_many_arguments)]
    async fn report_presence(
        &self,
        game_id: Uuid,
        side: Side,
        gateway_id: &str,
        connected: bool,
        now: SystemTime,
        lease_until: SystemTime,
        arm: Option<&ArmAfterReport<'_>>,
    ) -> Result<Presence, StoreError>;

    /// The game's presence at `now`: which sides count as connected, and until when.
    async fn presence(&self, game_id: Uuid, now: SystemTime) -> Result<Presence, StoreError>;

    /// The game with its presence at `now` and its armed timers, or `None` if there is no such
    /// game. One question where a reader wants all three (`GetGame` does, and each gateway asks
    /// it as players connect): this default asks [`GameStore::load`], [`GameStore::presence`]
    /// and [`TimerStore::timers_of`] in turn; Postgres answers with one statement.
    async fn observe(
        &self,
        game_id: Uuid,
        now: SystemTime,
    ) -> Result<Option<ObservedGame>, StoreError> {
        let Some(record) = self.load(game_id).await? else {
            return Ok(None);
        };
        Ok(Some(ObservedGame {
            record,
            presence: self.presence(game_id, now).await?,
            timers: self.timers_of(game_id).await?,
        }))
    }

    /// The games a player is seated in (either side), newest first by creation, at most `limit`.
    async fn games_of_player(
        &self,
        player: &str,
        limit: usize,
    ) -> Result<Vec<GameSummary>, StoreError>;

    /// Checks that the store answers (a health check): Postgres runs `SELECT 1`; the memory
    /// store is always reachable.
    async fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// The service's pulse ([`continuity`]): records that a process serves now (by `clock`, the
    /// session's clock) and, when the previous pulse of any process is older than
    /// `rule.outage_after`, moves every deadline still running then
    /// ([`continuity::moved_deadline`], claims on them dropped) and records the outage, all in
    /// one transaction ordered with every other process's pulse, so an outage is accounted for
    /// once. Returns the outage this pulse found, if any. A pulse never moves the recorded
    /// time back (a process whose clock is a little behind another's).
    ///
    /// The time is read from `clock` only once the pulse holds what orders it (the pulse row's
    /// lock), not when the call begins: a pulse that starts during an outage waits there (for
    /// a connection, for the lock) until the store is back, and dated at its start it would end
    /// the outage too early and move the deadlines by too little.
    async fn pulse(
        &self,
        clock: &WallClock,
        rule: &OutageRule,
    ) -> Result<Option<Outage>, StoreError>;
}
