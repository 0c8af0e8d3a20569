//! One command at a time per game in this process. Two commands of one game judged at once (both
//! seats confirming their deployments together, a timer firing as the mover moves) are judged
//! against the same version, and the second always loses the version race at the append: it
//! waits for a second group commit, reloads the game from the store and is judged again. Queued
//! behind the first instead, it is judged once, against the game the first left in the cache.
//! Other replicas are still kept out by the version guard alone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::OwnedMutexGuard;
use uuid::Uuid;

/// Entries kept before the first sweep of games nobody holds a lock of.
const FIRST_SWEEP: usize = 1024;

/// The games with a command in progress (or waiting), each with the lock its commands queue on.
#[derive(Default)]
pub(crate) struct CommandLocks {
    games: Mutex<Games>,
}

#[derive(Default)]
struct Games {
    locks: HashMap<Uuid, Weak<tokio::sync::Mutex<()>>>,
    /// The map's size at which the locks nobody holds are dropped.
    sweep_at: usize,
}

impl CommandLocks {
    /// Waits until no other command of `game_id` is in progress in this process; the game is
    /// this command's until the guard drops.
    pub(crate) async fn lock(&self, game_id: Uuid) -> OwnedMutexGuard<()> {
        let lock = {
            let mut games = self.games.lock().unwrap_or_else(|e| e.into_inner());
            match games.locks.get(&game_id).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    if games.locks.len() >= games.sweep_at.max(FIRST_SWEEP) {
                        games.locks.retain(|_, lock| lock.strong_count() > 0);
                        // Sweeping again only once the map has doubled keeps each insert's share
                        // of the sweeps constant.
                        games.sweep_at = 2 * games.locks.len();
                    }
                    let lock = Arc::new(tokio::sync::Mutex::new(()));
                    games.locks.insert(game_id, Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.lock_owned().await
    }

    /// Games with an entry now (held or not yet swept).
    #[cfg(test)]
    fn entries(&self) -> usize {
        self.games.lock().unwrap().locks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_second_command_of_a_game_waits_for_the_first_and_other_games_do_not() {
        let locks = Arc::new(CommandLocks::default());
        let game = Uuid::new_v4();
        let first = locks.lock(game).await;
        // Another game's command goes ahead.
        let other = tokio::time::timeout(Duration::from_secs(10), locks.lock(Uuid::new_v4()))
            .await
            .expect("another game's lock is free");
        drop(other);
        // The same game's waits until the first guard drops.
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        let waiter = tokio::spawn({
            let locks = Arc::clone(&locks);
            async move {
                let _guard = locks.lock(game).await;
                let _ = tx.send(());
            }
        });
        tokio::task::yield_now().await;
        assert!(
            rx.try_recv().is_err(),
            "the second command ran beside the first"
        );
        drop(first);
        tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("the second command goes ahead once the first is done")
            .unwrap();
    }

    #[tokio::test]
    async fn locks_nobody_holds_are_swept() {
        let locks = CommandLocks::default();
        for _ in 0..10 * FIRST_SWEEP {
            drop(locks.lock(Uuid::new_v4()).await);
        }
        assert!(
            locks.entries() <= 2 * FIRST_SWEEP,
            "{} entries kept",
            locks.entries()
        );
        let held = locks.lock(Uuid::new_v4()).await;
        for _ in 0..10 * FIRST_SWEEP {
            drop(locks.lock(Uuid::new_v4()).await);
        }
        assert!(locks.entries() >= 1);
        drop(held);
    }
}
