//! [`MemoryStore`]: every game in one process's memory. The one-box default (nothing to set up)
//! and the fast store for unit tests; it keeps the same contract as Postgres and passes the same
//! conformance suite, but loses everything when the process exits.

use crate::notifier::Notifier;
use crate::{
    CommandRecord, Created, GameMeta, GameRecord, GameStore, GameSummary, StoreError, StoredEvent,
};
use async_trait::async_trait;
use hidden_front_rules::{Event, Game, Side};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;
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
}

#[derive(Debug)]
struct StoredGame {
    meta: GameMeta,
    game: Game,
    /// The log; `events[i]` has seq `i + 1`, so the version is `events.len()`.
    events: Vec<Event>,
    /// Idempotency key -> stored answer.
    commands: HashMap<String, Vec<u8>>,
    /// (side, gateway) -> (connected, lease until).
    presence: HashMap<(Side, String), (bool, SystemTime)>,
}

impl StoredGame {
    fn version(&self) -> u64 {
        self.events.len() as u64
    }

    fn connected_at(&self, now: SystemTime) -> [bool; 2] {
        let mut connected = [false; 2];
        for ((side, _), (is_connected, lease_until)) in &self.presence {
            if *is_connected && *lease_until > now {
                connected[side.index()] = true;
            }
        }
        connected
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// The state, even after a panic elsewhere poisoned the lock: operations change nothing until
    /// all their checks passed, so the data is still consistent.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl GameStore for MemoryStore {
    async fn create(
        &self,
        creation_key: &str,
        meta: &GameMeta,
        events: &[Event],
        game: &Game,
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
                events: events.to_vec(),
                commands: HashMap::new(),
                presence: HashMap::new(),
            },
        );
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

    async fn append(
        &self,
        game_id: Uuid,
        expected_version: u64,
        events: &[Event],
        game: &Game,
        command: Option<CommandRecord<'_>>,
    ) -> Result<u64, StoreError> {
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
            stored.events.extend_from_slice(events);
            stored.game = game.clone();
            if let Some(command) = command {
                stored
                    .commands
                    .insert(command.key.to_owned(), command.response.to_vec());
            }
            stored.version()
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
            .map(|(index, event)| StoredEvent {
                seq: index as u64 + 1,
                event: event.clone(),
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
        lease_until: SystemTime,
    ) -> Result<[bool; 2], StoreError> {
        let mut state = self.state();
        let stored = state
            .games
            .get_mut(&game_id)
            .ok_or(StoreError::NotFound(game_id))?;
        stored
            .presence
            .insert((side, gateway_id.to_owned()), (connected, lease_until));
        Ok(stored.connected_at(SystemTime::now()))
    }

    async fn presence(&self, game_id: Uuid, now: SystemTime) -> Result<[bool; 2], StoreError> {
        let state = self.state();
        let stored = state
            .games
            .get(&game_id)
            .ok_or(StoreError::NotFound(game_id))?;
        Ok(stored.connected_at(now))
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
}
