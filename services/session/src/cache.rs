//! The process cache of games: the game as this process last saw it, so a command usually judges
//! without a store read. It may be behind another replica; the command path judges a refusal
//! again on the stored game, and an append against a stale version loses the version race and
//! re-reads the store, so the cache can only cost a retry, never a wrong answer.

use crate::errors::store_error_status;
use crate::service::SessionService;
use hidden_front_api_error::{ApiError, Reason};
use hidden_front_store::{GameRecord, ObservedGame};
use quick_cache::sync::Cache;
use std::sync::Arc;
use tonic::Status;
use uuid::Uuid;

/// What one cached game costs, roughly: a [`GameRecord`] is about 470 bytes inline (the engine
/// state with its 64-square board), plus its heap (two deployment drafts of 25 placements, the
/// 50 piece ids once play starts, the rule set's and both players' names) and the cache's own
/// entry (the key and bookkeeping): about 1 KiB in all, up to 1.5 KiB with the longest player
/// ids. The default 10,000 games are so about 10 MiB.
pub const CACHED_GAME_BYTES: usize = 1024;

/// Games by id, at most `capacity` of them ([`quick_cache`]'s eviction keeps the games in use:
/// a game touched once is the first to go).
pub(crate) struct GameCache {
    /// Shared, not copied: a command reads the cached game and judges on a copy of its engine
    /// state only (the record's names and the game are not copied on every read).
    games: Cache<Uuid, Arc<GameRecord>>,
}

impl GameCache {
    /// An empty cache holding at most `capacity` games (at least one).
    pub(crate) fn new(capacity: usize) -> GameCache {
        GameCache {
            games: Cache::new(capacity.max(1)),
        }
    }

    /// The cached game, if any.
    pub(crate) fn get(&self, game_id: Uuid) -> Option<Arc<GameRecord>> {
        self.games.get(&game_id)
    }

    /// Caches `record`, replacing the game's earlier entry, evicting another game when full.
    pub(crate) fn insert(&self, record: Arc<GameRecord>) {
        self.games.insert(record.meta.game_id, record);
    }

    /// Drops the game's entry (it is known to be stale).
    pub(crate) fn remove(&self, game_id: Uuid) {
        self.games.remove(&game_id);
    }

    /// How many games it holds now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.games.len()
    }
}

impl SessionService {
    /// The game: from the cache unless `fresh`, else (or on a miss) from the store, caching
    /// what was read. A game that does not exist is `NOT_FOUND`.
    pub(crate) async fn load(&self, game_id: Uuid, fresh: bool) -> Result<Arc<GameRecord>, Status> {
        if !fresh && let Some(record) = self.cache.get(game_id) {
            return Ok(record);
        }
        let record = Arc::new(
            self.store
                .load(game_id)
                .await
                .map_err(|e| store_error_status(&e))?
                .ok_or_else(|| not_found(game_id))?,
        );
        self.cache.insert(Arc::clone(&record));
        Ok(record)
    }

    /// The game from the store with its presence now and its timers (what `GetGame` shows),
    /// caching the game read. A game that does not exist is `NOT_FOUND`.
    pub(crate) async fn observe(&self, game_id: Uuid) -> Result<ObservedGame, Status> {
        // The deadlines shown must be the ones an outage has moved.
        self.serving().await?;
        let observed = self
            .store
            .observe(game_id, self.config.clock.now())
            .await
            .map_err(|e| store_error_status(&e))?
            .ok_or_else(|| not_found(game_id))?;
        self.cache.insert(Arc::new(observed.record.clone()));
        Ok(observed)
    }
}

/// The answer for a game that does not exist.
fn not_found(game_id: Uuid) -> Status {
    Status::from(ApiError::new(
        Reason::GameNotFound,
        format!("game {game_id} not found"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hidden_front_rules::{Game, GameRng, Rules, Side};
    use hidden_front_store::{GameMeta, TimeControl};

    fn record(version: u64) -> GameRecord {
        let (game, _) = Game::create(Rules::default(), Side::South, &mut GameRng::from_seed(7));
        GameRecord {
            meta: GameMeta {
                game_id: Uuid::new_v4(),
                rules: Rules::default().name(),
                time_control: TimeControl::online(),
                south_player: "south".into(),
                north_player: "north".into(),
            },
            version,
            game,
        }
    }

    #[test]
    fn it_never_holds_more_than_its_capacity() {
        let cache = GameCache::new(8);
        let records: Vec<_> = (0..100).map(|n| Arc::new(record(n))).collect();
        for record in &records {
            cache.insert(Arc::clone(record));
            assert!(cache.len() <= 8, "{} games cached", cache.len());
        }
        // The last one inserted is there; most of the rest are gone.
        let last = records.last().unwrap();
        assert_eq!(cache.get(last.meta.game_id).as_ref(), Some(last));
        let kept = records
            .iter()
            .filter(|r| cache.get(r.meta.game_id).is_some())
            .count();
        assert!(kept <= 8);
        // Capacity 0 still caches something (the game just loaded).
        let tiny = GameCache::new(0);
        tiny.insert(records[0].clone());
        assert!(tiny.get(records[0].meta.game_id).is_some());
    }

    #[test]
    fn an_insert_replaces_the_games_entry_and_a_remove_forgets_it() {
        let cache = GameCache::new(4);
        let first = record(3);
        let id = first.meta.game_id;
        cache.insert(Arc::new(first));
        cache.insert(Arc::new(GameRecord {
            version: 5,
            ..(*cache.get(id).unwrap()).clone()
        }));
        assert_eq!(cache.get(id).map(|r| r.version), Some(5));
        assert_eq!(cache.len(), 1);
        cache.remove(id);
        assert_eq!(cache.get(id), None);
    }

    #[test]
    fn the_documented_size_of_a_game_covers_its_inline_part() {
        // The estimate in the config docs counts on the record itself being under half of it;
        // if the engine state grows past that, the documented figure must be redone.
        assert!(
            std::mem::size_of::<GameRecord>() <= CACHED_GAME_BYTES / 2,
            "a GameRecord is {} bytes inline",
            std::mem::size_of::<GameRecord>()
        );
    }
}
