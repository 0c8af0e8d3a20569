//! The process cache of games: the game as this process last saw it, so a command usually judges
//! without a store read. It may be behind another replica; the command path judges a refusal
//! again on the stored game, and an append against a stale version loses the version race and
//! re-reads the store, so the cache can only cost a retry, never a wrong answer.

use crate::errors::store_error_status;
use crate::service::SessionService;
use hidden_front_api_error::{ApiError, Reason};
use hidden_front_rules::Phase;
use hidden_front_store::GameRecord;
use std::collections::HashMap;
use std::sync::Mutex;
use tonic::Status;
use uuid::Uuid;

/// Games by id, at most `capacity` of them.
pub(crate) struct GameCache {
    capacity: usize,
    games: Mutex<HashMap<Uuid, GameRecord>>,
}

impl GameCache {
    /// An empty cache holding at most `capacity` games.
    pub(crate) fn new(capacity: usize) -> GameCache {
        GameCache {
            capacity,
            games: Mutex::new(HashMap::new()),
        }
    }

    /// The cached game, if any.
    pub(crate) fn get(&self, game_id: Uuid) -> Option<GameRecord> {
        self.games
            .lock()
            .expect("session cache lock")
            .get(&game_id)
            .cloned()
    }

    /// Caches `record`, replacing the game's earlier entry, evicting another game when full.
    pub(crate) fn insert(&self, record: GameRecord) {
        let mut cache = self.games.lock().expect("session cache lock");
        if cache.len() >= self.capacity && !cache.contains_key(&record.meta.game_id) {
            // Ended games are the cheapest to forget; otherwise forget an arbitrary one.
            let victim = cache
                .iter()
                .find(|(_, r)| r.game.phase() == Phase::Ended)
                .or_else(|| cache.iter().next())
                .map(|(id, _)| *id);
            if let Some(id) = victim {
                cache.remove(&id);
            }
        }
        cache.insert(record.meta.game_id, record);
    }

    /// Drops the game's entry (it is known to be stale).
    pub(crate) fn remove(&self, game_id: Uuid) {
        self.games
            .lock()
            .expect("session cache lock")
            .remove(&game_id);
    }
}

impl SessionService {
    /// The game: from the cache unless `fresh`, else (or on a miss) from the store, caching
    /// what was read. A game that does not exist is `NOT_FOUND`.
    pub(crate) async fn load(&self, game_id: Uuid, fresh: bool) -> Result<GameRecord, Status> {
        if !fresh && let Some(record) = self.cache.get(game_id) {
            return Ok(record);
        }
        let record = self
            .store
            .load(game_id)
            .await
            .map_err(|e| store_error_status(&e))?
            .ok_or_else(|| {
                Status::from(ApiError::new(
                    Reason::GameNotFound,
                    format!("game {game_id} not found"),
                ))
            })?;
        self.cache.insert(record.clone());
        Ok(record)
    }
}
