//! [`MemoryStore`]: every game in one process's memory. The one-box default (nothing to set up)
//! and the fast store for unit tests; it keeps the same contract as Postgres and passes the same
//! conformance suite, but loses everything when the process exits.

use crate::notifier::Notifier;
use crate::timers::{Timer, TimerChange, TimerSlot, TimerStore, TurnTimerChange};
use crate::{
    Append, Created, EndedRecord, GameMeta, GameRecord, GameStore, GameSummary, Presence,
    StoreError, StoredEvent,
};
use async_trait::async_trait;
use hidden_front_rules::{Event, Game, Phase, Side};
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
    /// The log with each event's trace parent and commit time; `events[i]` has seq `i + 1`, so
    /// the version is `events.len()`.
    events: Vec<(Event, Option<String>, SystemTime)>,
    /// Idempotency key -> stored answer.
    commands: HashMap<String, Vec<u8>>,
    /// (side, gateway) -> (connected, lease until).
    presence: HashMap<(Side, String), (bool, SystemTime)>,
}

impl StoredGame {
    fn version(&self) -> u64 {
        self.events.len() as u64
    }

    /// The commit time of an append now: the system clock, but never before the log's last
    /// event (a wall clock may step back; a log's times do not).
    fn commit_time(&self) -> SystemTime {
        let now = SystemTime::now();
        self.events
            .last()
            .map_or(now, |(_, _, last)| now.max(*last))
    }

    fn presence_at(&self, now: SystemTime) -> Presence {
        let mut presence = Presence::default();
        for ((side, _), (is_connected, lease_until)) in &self.presence {
            if *is_connected && *lease_until > now {
                let until = &mut presence.connected_until[side.index()];
                *until = Some(until.map_or(*lease_until, |u| u.max(*lease_until)));
            }
        }
        presence
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// The state (a `parking_lot` lock, never poisoned: operations change nothing until all
    /// their checks passed, so a panic elsewhere leaves the data consistent).
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock()
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
        state.games.insert(
            meta.game_id,
            StoredGame {
                meta: meta.clone(),
                game: game.clone(),
                events: {
                    let now = SystemTime::now();
                    events.iter().map(|e| (e.clone(), None, now)).collect()
                },
                commands: HashMap::new(),
                presence: HashMap::new(),
            },
        );
        for timer in timers {
            state.arm(*timer);
        }
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
        } = append;
        let version = {
            let mut state = self.state();
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
            let newly_ended = stored.game.phase() != Phase::Ended && game.phase() == Phase::Ended;
            let now = stored.commit_time();
            stored.events.extend(
                events
                    .iter()
                    .map(|e| (e.clone(), trace_parent.map(str::to_owned), now)),
            );
            stored.game = game.clone();
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
            version
        };
        if !events.is_empty() {
            self.notifier.notify(game_id, version);
        }
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
            .map(|(index, (event, trace_parent, recorded_at))| StoredEvent {
                seq: index as u64 + 1,
                event: event.clone(),
                trace_parent: trace_parent.clone(),
                recorded_at: *recorded_at,
            })
            .collect())
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
    ) -> Result<Presence, StoreError> {
        let mut state = self.state();
        let stored = state
            .games
            .get_mut(&game_id)
            .ok_or(StoreError::NotFound(game_id))?;
        stored
            .presence
            .insert((side, gateway_id.to_owned()), (connected, lease_until));
        Ok(stored.presence_at(now))
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
            .map(|stored| GameSummary {
                meta: stored.meta.clone(),
                phase: stored.game.phase(),
                version: stored.version(),
            })
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
