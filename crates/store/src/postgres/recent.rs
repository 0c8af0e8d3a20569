//! The events of each game's latest write by this process, kept after its commit so the
//! `WatchGame` pump that the commit wakes reads them from memory instead of querying the log
//! again. That read was 8.6 % of the server's CPU per durable move (`docs/benchmarks.md`,
//! round 6), on the path from one player's move to the opponent's screen.
//!
//! Why it cannot serve a stale or gapped page: committed events never change (the log is
//! append-only behind the version guard), an entry is stored only after its statement committed,
//! with the very values the row holds (the commit's `now()` is `game_events.created_at`), and a
//! page is answered from here only when it starts inside the entry and the entry reaches the
//! newest version this process knows of for the game (its own commits and every `NOTIFY` heard).
//! Anything else, such as a page older than the entry or a newer commit by another replica,
//! reads the log as before.

use crate::StoredEvent;
use crate::notifier::Notifier;
use parking_lot::Mutex;
use std::collections::HashMap;
use uuid::Uuid;

/// Games remembered at most; past it a quarter of the entries are dropped (an entry that is
/// gone only means a store read).
const CAPACITY: usize = 16_384;

/// Per game, the events of the latest committed write by this process, in seq order.
#[derive(Debug, Default)]
pub(super) struct RecentEvents {
    games: Mutex<HashMap<Uuid, Vec<StoredEvent>>>,
}

impl RecentEvents {
    /// Remembers `events` (just committed, contiguous) as the game's latest; call before
    /// announcing the commit to the notifier, so a woken pump finds them.
    pub(super) fn remember(&self, game_id: Uuid, events: Vec<StoredEvent>) {
        if events.is_empty() {
            return;
        }
        let mut games = self.games.lock();
        if games.len() >= CAPACITY && !games.contains_key(&game_id) {
            let mut seen = 0usize;
            games.retain(|_, _| {
                seen += 1;
                !seen.is_multiple_of(4)
            });
        }
        games.insert(game_id, events);
    }

    /// The page of at most `limit` events from `from_seq`, if the remembered events hold it
    /// and nothing newer than them is known for the game; `None` means read the log.
    pub(super) fn page(
        &self,
        notifier: &Notifier,
        game_id: Uuid,
        from_seq: u64,
        limit: usize,
    ) -> Option<Vec<StoredEvent>> {
        let known = notifier.version(game_id)?;
        let games = self.games.lock();
        let events = games.get(&game_id)?;
        let first = events.first()?.seq;
        let last = events.last()?.seq;
        if from_seq < first || from_seq > last || last < known || limit == 0 {
            return None;
        }
        let skip = usize::try_from(from_seq - first).ok()?;
        Some(events.iter().skip(skip).take(limit).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hidden_front_rules::{Event, Side};
    use std::time::SystemTime;

    fn stored(seq: u64) -> StoredEvent {
        StoredEvent {
            seq,
            event: Event::DrawOffered { side: Side::South },
            trace_parent: None,
            recorded_at: SystemTime::UNIX_EPOCH,
        }
    }

    fn seqs(page: Option<Vec<StoredEvent>>) -> Option<Vec<u64>> {
        page.map(|events| events.iter().map(|e| e.seq).collect())
    }

    #[test]
    fn a_page_inside_the_latest_write_comes_from_memory() {
        let notifier = Notifier::new();
        let recent = RecentEvents::default();
        let game = Uuid::now_v7();
        let _watching = notifier.subscribe(game);
        recent.remember(game, vec![stored(5), stored(6)]);
        notifier.notify(game, 6);
        assert_eq!(seqs(recent.page(&notifier, game, 5, 256)), Some(vec![5, 6]));
        assert_eq!(seqs(recent.page(&notifier, game, 6, 256)), Some(vec![6]));
        assert_eq!(seqs(recent.page(&notifier, game, 5, 1)), Some(vec![5]));
    }

    #[test]
    fn older_pages_unknown_games_and_newer_commits_read_the_log() {
        let notifier = Notifier::new();
        let recent = RecentEvents::default();
        let game = Uuid::now_v7();
        // Nobody watches: no known version, no answer.
        recent.remember(game, vec![stored(5)]);
        assert_eq!(seqs(recent.page(&notifier, game, 5, 256)), None);
        let _watching = notifier.subscribe(game);
        notifier.notify(game, 5);
        assert_eq!(seqs(recent.page(&notifier, game, 4, 256)), None, "older");
        assert_eq!(seqs(recent.page(&notifier, game, 6, 256)), None, "newer");
        assert_eq!(seqs(recent.page(&notifier, game, 5, 0)), None, "empty page");
        // Another process committed seq 6: the entry no longer reaches the newest version.
        notifier.notify(game, 6);
        assert_eq!(seqs(recent.page(&notifier, game, 5, 256)), None);
        assert_eq!(seqs(recent.page(&notifier, Uuid::now_v7(), 1, 256)), None);
    }

    #[test]
    fn the_map_stays_bounded() {
        let recent = RecentEvents::default();
        for _ in 0..CAPACITY + 10 {
            recent.remember(Uuid::now_v7(), vec![stored(1)]);
        }
        assert!(recent.games.lock().len() <= CAPACITY);
    }
}
