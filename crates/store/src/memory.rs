//! [`MemoryStore`]: every game in one process's memory. The one-box default (nothing to set up)
//! and the fast store for unit tests; it keeps the same contract as Postgres and passes the same
//! conformance suite, but loses everything when the process exits.

use crate::admin::{
    AdminStore, AuditEntry, AuditQuery, FoundGame, GameFilter, NewAuditEntry, page, to_micros,
};
use crate::continuity::{self, Outage, OutageRule};
use crate::notifier::Notifier;
use crate::timers::{Timer, TimerChange, TimerSlot, TimerStore, TurnTimerChange};
use crate::{
    Append, ArmAfterReport, Created, EndedRecord, GameMeta, GameRecord, GameStore, GameSummary,
    LifecycleOutbox, Presence, StoreError, StoredEvent,
};
use async_trait::async_trait;
use hidden_front_lifecycle::{Fact, NewFact};
use hidden_front_rules::{Event, Game, Phase, Side};
use hidden_front_time::WallClock;
use parking_lot::{Mutex, MutexGuard};
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, SystemTime};
use tokio::sync::watch;
use uuid::Uuid;

/// Games kept in memory behind one mutex.
///
/// Every operation takes the lock once, checks everything, and only then changes anything, so a
/// failed call writes nothing and a successful one is atomic. The lock is never held across an
/// `.await` (no operation awaits at all), and watchers are notified after it is released.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
    notifier: Notifier,
    /// Wakes the watchers of a game's status ([`GameStore::status_changes`]).
    status: Notifier,
    /// The outbox's last position, for [`LifecycleOutbox::watch_facts`].
    fact_position: FactPosition,
}

/// The sending side of the outbox's position, created with the store.
#[derive(Debug)]
struct FactPosition(watch::Sender<u64>);

impl Default for FactPosition {
    fn default() -> FactPosition {
        FactPosition(watch::channel(0).0)
    }
}

#[derive(Debug, Default)]
struct State {
    games: HashMap<Uuid, StoredGame>,
    /// Creation key -> the game it created.
    creations: HashMap<String, Uuid>,
    /// Player -> their games, oldest first (each game once, even if seated on both sides).
    by_player: HashMap<String, Vec<Uuid>>,
    /// The feed of ended games: `ended[i]` has cursor `i + 1`.
    ended: Vec<Uuid>,
    /// Armed timers by slot, with the claim on each.
    timers: HashMap<(Uuid, TimerSlot), ArmedTimer>,
    /// The same timers in deadline order, for claiming.
    due: BTreeSet<(SystemTime, Uuid, SlotKey)>,
    /// The lifecycle outbox: `facts[i]` has position `i + 1`.
    facts: Vec<Fact>,
    /// The audit log, oldest first: `audit[i]` has id `i + 1`.
    audit: Vec<AuditEntry>,
    /// The latest pulse ([`GameStore::pulse`]), `None` before the first.
    pulse: Option<SystemTime>,
}

/// A [`TimerSlot`] as an ordered key.
type SlotKey = u8;

fn slot_key(slot: TimerSlot) -> SlotKey {
    match slot {
        TimerSlot::Turn => 0,
        TimerSlot::Reconnect(Side::South) => 1,
        TimerSlot::Reconnect(Side::North) => 2,
    }
}

fn slot_of_key(key: SlotKey) -> TimerSlot {
    match key {
        0 => TimerSlot::Turn,
        1 => TimerSlot::Reconnect(Side::South),
        _ => TimerSlot::Reconnect(Side::North),
    }
}

#[derive(Debug, Clone, Copy)]
struct ArmedTimer {
    timer: Timer,
    /// Not handed out again before this time.
    claimed_until: Option<SystemTime>,
}

impl State {
    /// Appends `facts` to the outbox, dated `now`; returns the last position.
    fn record_facts(&mut self, facts: &[NewFact], now: SystemTime) -> u64 {
        for fact in facts {
            let game_created_at = self
                .games
                .get(&fact.game_id)
                .map_or(now, |stored| stored.created_at);
            self.facts.push(Fact {
                position: self.facts.len() as u64 + 1,
                id: fact.id,
                game_id: fact.game_id,
                occurred_at: now,
                game_created_at,
                body: fact.body.clone(),
            });
        }
        self.facts.len() as u64
    }

    fn arm(&mut self, timer: Timer) {
        self.cancel(timer.game_id, timer.slot());
        self.due
            .insert((timer.fire_at, timer.game_id, slot_key(timer.slot())));
        self.timers.insert(
            (timer.game_id, timer.slot()),
            ArmedTimer {
                timer,
                claimed_until: None,
            },
        );
    }

    fn cancel(&mut self, game_id: Uuid, slot: TimerSlot) -> bool {
        match self.timers.remove(&(game_id, slot)) {
            Some(armed) => {
                self.due
                    .remove(&(armed.timer.fire_at, game_id, slot_key(slot)));
                true
            }
            None => false,
        }
    }

    fn apply_timers(&mut self, game_id: Uuid, change: &TimerChange) {
        if change.clear_all {
            for slot in [
                TimerSlot::Turn,
                TimerSlot::Reconnect(Side::South),
                TimerSlot::Reconnect(Side::North),
            ] {
                self.cancel(game_id, slot);
            }
        }
        match change.turn {
            Some(TurnTimerChange::Arm(timer)) => self.arm(timer),
            Some(TurnTimerChange::Retag { armed_version }) => {
                if let Some(armed) = self.timers.get_mut(&(game_id, TimerSlot::Turn)) {
                    armed.timer.armed_version = armed_version;
                    armed.claimed_until = None;
                }
            }
            None => {}
        }
        for timer in &change.reconnect {
            self.arm(*timer);
        }
    }
}

#[derive(Debug)]
struct StoredGame {
    meta: GameMeta,
    game: Game,
    /// The log; `events[i]` has seq `i + 1`, so the version is `events.len()`.
    events: Vec<Logged>,
    /// Idempotency key -> stored answer.
    commands: HashMap<String, Vec<u8>>,
    /// (side, gateway) -> (connected, lease until).
    presence: HashMap<(Side, String), (bool, SystemTime)>,
    /// When it was created (microseconds, as Postgres keeps it; also dates its lifecycle facts'
    /// game age).
    created_at: SystemTime,
    /// When its last event was appended (microseconds).
    last_event_at: SystemTime,
}

/// One event of a game's log, with what the store keeps beside it.
#[derive(Debug)]
struct Logged {
    event: Event,
    trace_parent: Option<String>,
    recorded_at: SystemTime,
    /// The turn deadline its append armed, on the append's last event
    /// ([`StoredEvent::armed_turn_deadline`]).
    armed_turn_deadline: Option<SystemTime>,
}

impl StoredGame {
    fn version(&self) -> u64 {
        self.events.len() as u64
    }

    fn summary(&self) -> GameSummary {
        GameSummary {
            meta: self.meta.clone(),
            phase: self.game.phase(),
            version: self.version(),
        }
    }

    /// Whether the game passes every criterion of `filter` but the cursor.
    fn matches(&self, filter: &GameFilter) -> bool {
        let meta = &self.meta;
        filter.game_id.is_none_or(|id| meta.game_id == id)
            && filter
                .player
                .as_ref()
                .is_none_or(|p| meta.south_player == *p || meta.north_player == *p)
            && filter.phase.is_none_or(|phase| self.game.phase() == phase)
            && filter.rules.as_ref().is_none_or(|r| meta.rules == *r)
            && filter.created_from.is_none_or(|t| self.created_at >= t)
            && filter.created_before.is_none_or(|t| self.created_at < t)
            && filter
                .idle_since
                .is_none_or(|t| self.game.phase() == Phase::Play && self.last_event_at < t)
    }

    /// The commit time of an append now: the system clock, but never before the log's last
    /// event (a wall clock may step back; a log's times do not).
    fn commit_time(&self) -> SystemTime {
        let now = SystemTime::now();
        self.events
            .last()
            .map_or(now, |last| now.max(last.recorded_at))
    }

    fn presence_at(&self, now: SystemTime) -> Presence {
        let mut presence = Presence::default();
        for ((side, _), (connected, lease_until)) in &self.presence {
            presence.count(*side, *connected, *lease_until, now);
        }
        presence
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// Wakes the outbox's followers after a commit that recorded facts.
    fn announce_facts(&self, facts: &[NewFact], position: u64) {
        if !facts.is_empty() {
            crate::notifier::advance_position(&self.fact_position.0, position);
        }
    }

    /// The state (a `parking_lot` lock, never poisoned: operations change nothing until all
    /// their checks passed, so a panic elsewhere leaves the data consistent).
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }
}

impl hidden_front_lifecycle::FactSink for MemoryStore {
    fn record(&self, facts: &[NewFact]) {
        let position = self.state().record_facts(facts, SystemTime::now());
        self.announce_facts(facts, position);
    }
}

#[async_trait]
impl LifecycleOutbox for MemoryStore {
    async fn facts_after(&self, after: u64, limit: usize) -> Result<Vec<Fact>, StoreError> {
        let state = self.state();
        let skip = usize::try_from(after).unwrap_or(usize::MAX);
        Ok(state.facts.iter().skip(skip).take(limit).cloned().collect())
    }

    async fn watch_facts(&self) -> Result<watch::Receiver<u64>, StoreError> {
        let mut receiver = self.fact_position.0.subscribe();
        receiver.borrow_and_update();
        Ok(receiver)
    }
}

#[async_trait]
impl GameStore for MemoryStore {
    async fn create_armed(
        &self,
        creation_key: &str,
        meta: &GameMeta,
        events: &[Event],
        game: &Game,
        timers: &[Timer],
        facts: &[NewFact],
    ) -> Result<Created, StoreError> {
        let mut state = self.state();
        if let Some(game_id) = state.creations.get(creation_key) {
            return Ok(Created {
                game_id: *game_id,
                replayed: true,
            });
        }
        if state.games.contains_key(&meta.game_id) {
            return Err(StoreError::AlreadyExists(meta.game_id));
        }
        state
            .creations
            .insert(creation_key.to_owned(), meta.game_id);
        for player in [&meta.south_player, &meta.north_player] {
            let games = state.by_player.entry(player.clone()).or_default();
            if games.last() != Some(&meta.game_id) {
                games.push(meta.game_id);
            }
        }
        let now = to_micros(SystemTime::now());
        state.games.insert(
            meta.game_id,
            StoredGame {
                meta: meta.clone(),
                game: game.clone(),
                events: {
                    let now = SystemTime::now();
                    events
                        .iter()
                        .map(|event| Logged {
                            event: event.clone(),
                            trace_parent: None,
                            recorded_at: now,
                            armed_turn_deadline: None,
                        })
                        .collect()
                },
                commands: HashMap::new(),
                presence: HashMap::new(),
                created_at: now,
                last_event_at: now,
            },
        );
        for timer in timers {
            state.arm(*timer);
        }
        let position = state.record_facts(facts, SystemTime::now());
        drop(state);
        self.announce_facts(facts, position);
        Ok(Created {
            game_id: meta.game_id,
            replayed: false,
        })
    }

    async fn load(&self, game_id: Uuid) -> Result<Option<GameRecord>, StoreError> {
        let state = self.state();
        Ok(state.games.get(&game_id).map(|stored| GameRecord {
            meta: stored.meta.clone(),
            version: stored.version(),
            game: stored.game.clone(),
        }))
    }

    async fn append_armed(&self, append: Append<'_>) -> Result<u64, StoreError> {
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
        let (version, position) = {
            let mut state = self.state();
            let timer_holds = fired.is_none_or(|fired| {
                state
                    .timers
                    .get(&(game_id, fired.slot()))
                    .is_some_and(|armed| armed.timer == *fired)
            });
            let stored = state
                .games
                .get_mut(&game_id)
                .ok_or(StoreError::NotFound(game_id))?;
            // A retried command gets its first answer even if the game has moved on since.
            if let Some(command) = command
                && let Some(response) = stored.commands.get(command.key)
            {
                return Err(StoreError::DuplicateCommand {
                    game_id,
                    key: command.key.to_owned(),
                    response: response.clone(),
                });
            }
            let actual = stored.version();
            if actual != expected_version {
                return Err(StoreError::VersionConflict {
                    game_id,
                    expected: expected_version,
                    actual,
                });
            }
            if !timer_holds {
                return Err(StoreError::TimerChanged(game_id));
            }
            let newly_ended = stored.game.phase() != Phase::Ended && game.phase() == Phase::Ended;
            let now = stored.commit_time();
            let last = events.len().saturating_sub(1);
            stored
                .events
                .extend(events.iter().enumerate().map(|(index, event)| Logged {
                    event: event.clone(),
                    trace_parent: trace_parent.map(str::to_owned),
                    recorded_at: now,
                    armed_turn_deadline: timers.armed_turn_deadline().filter(|_| index == last),
                }));
            stored.game = game.clone();
            if !events.is_empty() {
                stored.last_event_at = to_micros(SystemTime::now());
            }
            if let Some(command) = command {
                stored
                    .commands
                    .insert(command.key.to_owned(), command.response.to_vec());
            }
            let version = stored.version();
            if newly_ended {
                state.ended.push(game_id);
            }
            state.apply_timers(game_id, timers);
            (version, state.record_facts(facts, SystemTime::now()))
        };
        if !events.is_empty() {
            self.notifier.notify(game_id, version);
        }
        self.announce_facts(facts, position);
        Ok(version)
    }

    async fn command_response(
        &self,
        game_id: Uuid,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let state = self.state();
        let stored = state
            .games
            .get(&game_id)
            .ok_or(StoreError::NotFound(game_id))?;
        Ok(stored.commands.get(key).cloned())
    }

    async fn events(
        &self,
        game_id: Uuid,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let state = self.state();
        let stored = state
            .games
            .get(&game_id)
            .ok_or(StoreError::NotFound(game_id))?;
        let first = from_seq.max(1);
        let skip = usize::try_from(first - 1).unwrap_or(usize::MAX);
        Ok(stored
            .events
            .iter()
            .enumerate()
            .skip(skip)
            .take(limit)
            .map(|(index, logged)| StoredEvent {
                seq: index as u64 + 1,
                event: logged.event.clone(),
                trace_parent: logged.trace_parent.clone(),
                recorded_at: logged.recorded_at,
                armed_turn_deadline: logged.armed_turn_deadline,
            })
            .collect())
    }

    fn status_changes(&self, game_id: Uuid) -> watch::Receiver<u64> {
        self.status.subscribe(game_id)
    }

    async fn watch(&self, game_id: Uuid) -> Result<watch::Receiver<u64>, StoreError> {
        // Subscribe first, then read: an append committing after the read notifies this channel.
        let mut receiver = self.notifier.subscribe(game_id);
        let version = self
            .state()
            .games
            .get(&game_id)
            .map(StoredGame::version)
            .ok_or(StoreError::NotFound(game_id))?;
        self.notifier.notify(game_id, version);
        receiver.borrow_and_update();
        Ok(receiver)
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
        let mut state = self.state();
        let stored = state
            .games
            .get_mut(&game_id)
            .ok_or(StoreError::NotFound(game_id))?;
        let was_connected = stored.presence_at(now).connected()[side.index()];
        stored
            .presence
            .insert((side, gateway_id.to_owned()), (connected, lease_until));
        let presence = stored.presence_at(now);
        let connected = presence.connected()[side.index()];
        // What a viewer sees changed: who is connected, or the away deadline of a side away.
        let shown_changed = connected != was_connected || (arm.is_some() && !connected);
        if let Some(arm) = arm {
            state.arm(arm(presence.connected_until[side.index()]));
        }
        drop(state);
        if shown_changed {
            self.status.bump(game_id);
        }
        Ok(presence)
    }

    async fn pulse(
        &self,
        clock: &WallClock,
        rule: &OutageRule,
    ) -> Result<Option<Outage>, StoreError> {
        let mut state = self.state();
        let now = clock.now();
        let last = state.pulse;
        state.pulse = Some(last.map_or(now, |last| last.max(now)));
        let (Some(from), Some(gap)) = (last, continuity::outage_gap(last, now, rule)) else {
            return Ok(None);
        };
        let mut moved = Vec::new();
        for armed in state.timers.values() {
            let timer = &armed.timer;
            let Some(stored) = state.games.get(&timer.game_id) else {
                continue;
            };
            let connected = stored.presence_at(from).connected()[timer.side.index()];
            if let Some(fire_at) = continuity::moved_deadline(
                timer,
                &stored.meta.time_control,
                from,
                now,
                gap,
                rule,
                connected,
            ) {
                moved.push(Timer { fire_at, ..*timer });
            }
        }
        for timer in &moved {
            // Re-arming drops any claim: a clock that held the old deadline finds it stale.
            state.arm(*timer);
        }
        drop(state);
        // Every watched game's deadlines may have moved.
        self.status.bump_all();
        Ok(Some(Outage {
            from,
            to: now,
            deadlines_moved: moved.len() as u64,
        }))
    }

    async fn presence(&self, game_id: Uuid, now: SystemTime) -> Result<Presence, StoreError> {
        let state = self.state();
        let stored = state
            .games
            .get(&game_id)
            .ok_or(StoreError::NotFound(game_id))?;
        Ok(stored.presence_at(now))
    }

    async fn games_of_player(
        &self,
        player: &str,
        limit: usize,
    ) -> Result<Vec<GameSummary>, StoreError> {
        let state = self.state();
        let Some(game_ids) = state.by_player.get(player) else {
            return Ok(Vec::new());
        };
        Ok(game_ids
            .iter()
            .rev()
            .filter_map(|game_id| state.games.get(game_id))
            .take(limit)
            .map(StoredGame::summary)
            .collect())
    }

    async fn ended_games(
        &self,
        after_cursor: u64,
        limit: usize,
    ) -> Result<Vec<EndedRecord>, StoreError> {
        let state = self.state();
        let skip = usize::try_from(after_cursor).unwrap_or(usize::MAX);
        Ok(state
            .ended
            .iter()
            .enumerate()
            .skip(skip)
            .take(limit)
            .filter_map(|(index, game_id)| {
                let stored = state.games.get(game_id)?;
                Some(EndedRecord {
                    cursor: index as u64 + 1,
                    record: GameRecord {
                        meta: stored.meta.clone(),
                        version: stored.version(),
                        game: stored.game.clone(),
                    },
                })
            })
            .collect())
    }
}

#[async_trait]
impl AdminStore for MemoryStore {
    async fn find_games(&self, filter: &GameFilter) -> Result<Vec<FoundGame>, StoreError> {
        let state = self.state();
        let mut found: Vec<FoundGame> = state
            .games
            .values()
            .filter(|stored| stored.matches(filter))
            .filter(|stored| {
                filter.after.is_none_or(|c| {
                    (stored.created_at, stored.meta.game_id) < (c.created_at, c.game_id)
                })
            })
            .map(|stored| FoundGame {
                summary: stored.summary(),
                created_at: stored.created_at,
                last_event_at: stored.last_event_at,
            })
            .collect();
        found.sort_by(|a, b| {
            (b.created_at, b.summary.meta.game_id).cmp(&(a.created_at, a.summary.meta.game_id))
        });
        found.truncate(page(filter.limit));
        Ok(found)
    }

    async fn append_audit(&self, entry: NewAuditEntry<'_>) -> Result<AuditEntry, StoreError> {
        let mut state = self.state();
        let stored = AuditEntry {
            id: state.audit.len() as u64 + 1,
            at: to_micros(SystemTime::now()),
            operator: entry.operator.to_owned(),
            action: entry.action,
            game_id: entry.game_id,
            reason: entry.reason.to_owned(),
            outcome: entry.outcome.to_owned(),
        };
        state.audit.push(stored.clone());
        Ok(stored)
    }

    async fn audit_log(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        let state = self.state();
        let of_game = |e: &&AuditEntry| query.game_id.is_none_or(|g| e.game_id == g);
        let limit = page(query.limit);
        Ok(match query.after {
            Some(after) => state
                .audit
                .iter()
                .filter(|e| e.id > after)
                .filter(of_game)
                .take(limit)
                .cloned()
                .collect(),
            None => state
                .audit
                .iter()
                .rev()
                .filter(|e| query.before.is_none_or(|before| e.id < before))
                .filter(of_game)
                .take(limit)
                .cloned()
                .collect(),
        })
    }
}

#[async_trait]
impl TimerStore for MemoryStore {
    async fn arm_timer(&self, timer: &Timer) -> Result<(), StoreError> {
        let mut state = self.state();
        if !state.games.contains_key(&timer.game_id) {
            return Err(StoreError::NotFound(timer.game_id));
        }
        state.arm(*timer);
        Ok(())
    }

    async fn cancel_timer(&self, game_id: Uuid, slot: TimerSlot) -> Result<bool, StoreError> {
        Ok(self.state().cancel(game_id, slot))
    }

    async fn timers_of(&self, game_id: Uuid) -> Result<Vec<Timer>, StoreError> {
        let state = self.state();
        let mut timers: Vec<Timer> = [
            TimerSlot::Turn,
            TimerSlot::Reconnect(Side::South),
            TimerSlot::Reconnect(Side::North),
        ]
        .into_iter()
        .filter_map(|slot| state.timers.get(&(game_id, slot)).map(|a| a.timer))
        .collect();
        timers.sort_by_key(|t| t.fire_at);
        Ok(timers)
    }

    async fn claim_due(
        &self,
        _owner: &str,
        horizon: SystemTime,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<Timer>, StoreError> {
        let now = SystemTime::now();
        let mut state = self.state();
        let candidates: Vec<(Uuid, SlotKey)> = state
            .due
            .iter()
            .take_while(|(fire_at, _, _)| *fire_at <= horizon)
            .map(|&(_, game_id, key)| (game_id, key))
            .collect();
        let mut claimed = Vec::new();
        for (game_id, key) in candidates {
            if claimed.len() >= limit {
                break;
            }
            let Some(armed) = state.timers.get_mut(&(game_id, slot_of_key(key))) else {
                continue;
            };
            if armed.claimed_until.is_some_and(|until| until > now) {
                continue;
            }
            armed.claimed_until = Some(armed.timer.fire_at.max(now) + lease);
            claimed.push(armed.timer);
        }
        Ok(claimed)
    }

    async fn release_timer(&self, timer: &Timer, retry_at: SystemTime) -> Result<(), StoreError> {
        let mut state = self.state();
        if let Some(armed) = state.timers.get_mut(&(timer.game_id, timer.slot()))
            && armed.timer == *timer
        {
            armed.claimed_until = Some(retry_at);
        }
        Ok(())
    }

    async fn complete_timers(&self, timers: &[Timer]) -> Result<u64, StoreError> {
        let mut state = self.state();
        let mut deleted = 0;
        for timer in timers {
            let matches = state
                .timers
                .get(&(timer.game_id, timer.slot()))
                .is_some_and(|armed| armed.timer == *timer);
            if matches {
                state.cancel(timer.game_id, timer.slot());
                deleted += 1;
            }
        }
        Ok(deleted)
    }

    async fn armed_timer_count(&self) -> Result<u64, StoreError> {
        Ok(self.state().timers.len() as u64)
    }
}
