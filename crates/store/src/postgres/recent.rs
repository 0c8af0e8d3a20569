//! The newest events of each game's latest writes by this process, kept after their commit so the
//! `WatchGame` pump that the commit wakes reads them from memory instead of querying the log
//! again. That read was 8.6 % of the server's CPU per durable move (`docs/benchmarks.md`,
//! "Stream pages from memory"), on the path from one player's move to the opponent's screen.
//!
//! Why it cannot serve a stale or gapped page: committed events never change (the log is
//! append-only behind the version guard), an entry is stored only after its statement committed
//! (and joined to the one before only when the two follow each other without a gap),
//! with the very values the row holds (the commit's `now()` is `game_events.created_at`; the
//! turn deadline the append armed is `armed_turn_deadline`, on its last event), and a
//! page is answered from here only when it starts inside the entry and the entry reaches the
//! newest version this process knows of for the game (its own commits and every `NOTIFY` heard).
//! Anything else, such as a page older than the entry or a newer commit by another replica,
//! reads the log as before.
//!
//! Why our own `NOTIFY` waits for our own write ([`OwnWrite`]): the commit's notification reaches
//! the LISTEN connection about when the statement's answer reaches the writer, and often first.
//! Announced first, it woke the pump before the events were remembered, and the pump read the
//! log: more than half of the pages under load (docs/benchmarks.md,
//! "Our notification waits for our write"). So while this process has a write in flight for a
//! game, a notification for that game is held, and the write's end announces it, after
//! remembering its events.

use crate::StoredEvent;
use crate::notifier::Notifier;
use parking_lot::Mutex;
use std::collections::HashMap;
use uuid::Uuid;

/// Games remembered at most; past it a quarter of the entries are dropped (an entry that is
/// gone only means a store read).
const CAPACITY: usize = 16_384;

/// Events remembered at most per game: the newest, from this process's latest writes while they
/// follow each other without a gap. A new game's first watchers start from seq 1 after the
/// creation and one or both deployments have been written; with only the latest write kept, one
/// backfill per game read the log in the opening (docs/benchmarks.md,
/// "Newest events kept across writes").
const TAIL: usize = 16;

/// Per game, the newest events of this process's latest committed writes (contiguous, in seq
/// order, at most [`TAIL`]), and the games this process is writing now.
#[derive(Debug, Default)]
pub(super) struct RecentEvents {
    games: Mutex<HashMap<Uuid, Vec<StoredEvent>>>,
    writing: Mutex<HashMap<Uuid, Writing>>,
}

/// A game's writes in flight in this process, and the newest version a notification announced
/// meanwhile (0: none), which the next write to end announces.
#[derive(Debug, Default)]
struct Writing {
    writers: u32,
    held: u64,
}

/// One write of this process to one game, from before its statement until its answer is known.
/// [`OwnWrite::committed`] remembers the events and announces them; dropping it without (a
/// refused guard, an error, a cancelled caller) only announces what was held meanwhile.
#[must_use = "the write's end announces the game's new version"]
pub(super) struct OwnWrite<'a> {
    recent: &'a RecentEvents,
    notifier: &'a Notifier,
    game_id: Uuid,
    ended: bool,
}

impl OwnWrite<'_> {
    /// The write committed `events` (contiguous, as the log holds them), bringing the game to
    /// `version`: remembers them, then announces the newer of `version` and anything held.
    pub(super) fn committed(mut self, events: Vec<StoredEvent>, version: u64) {
        self.recent.remember(self.game_id, events);
        self.end(version);
    }

    fn end(&mut self, version: u64) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let held = {
            let mut writing = self.recent.writing.lock();
            match writing.get_mut(&self.game_id) {
                Some(entry) => {
                    entry.writers = entry.writers.saturating_sub(1);
                    let held = std::mem::take(&mut entry.held);
                    if entry.writers == 0 {
                        writing.remove(&self.game_id);
                    }
                    held
                }
                None => 0,
            }
        };
        let newest = version.max(held);
        if newest > 0 {
            self.notifier.notify(self.game_id, newest);
        }
    }
}

impl Drop for OwnWrite<'_> {
    fn drop(&mut self) {
        self.end(0);
    }
}

impl RecentEvents {
    /// Marks a write to `game_id` as in flight until the returned guard ends it; call before
    /// the statement is sent.
    pub(super) fn begin<'a>(&'a self, notifier: &'a Notifier, game_id: Uuid) -> OwnWrite<'a> {
        self.writing.lock().entry(game_id).or_default().writers += 1;
        OwnWrite {
            recent: self,
            notifier,
            game_id,
            ended: false,
        }
    }

    /// A notification heard for `game_id` at `version`: `true` if it is held for a write of this
    /// process in flight (which announces it when it ends), `false` to announce it now.
    pub(super) fn hold(&self, game_id: Uuid, version: u64) -> bool {
        match self.writing.lock().get_mut(&game_id) {
            Some(entry) => {
                entry.held = entry.held.max(version);
                true
            }
            None => false,
        }
    }

    /// Remembers `events` (just committed, contiguous) as the game's latest, after the ones
    /// remembered before if they end just before `events` (else in their place), keeping the
    /// newest [`TAIL`]; call before announcing the commit to the notifier, so a woken pump finds
    /// them. Joining is sound because both runs are committed and no seq lies between them.
    pub(super) fn remember(&self, game_id: Uuid, mut events: Vec<StoredEvent>) {
        let Some(first) = events.first().map(|event| event.seq) else {
            return;
        };
        let mut games = self.games.lock();
        if games.len() >= CAPACITY && !games.contains_key(&game_id) {
            let mut seen = 0usize;
            games.retain(|_, _| {
                seen += 1;
                !seen.is_multiple_of(4)
            });
        }
        let entry = games.entry(game_id).or_default();
        let follows = entry
            .last()
            .is_some_and(|last| last.seq.checked_add(1) == Some(first));
        if !follows {
            entry.clear();
        }
        entry.append(&mut events);
        let excess = entry.len().saturating_sub(TAIL);
        entry.drain(..excess);
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
            armed_turn_deadline: None,
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
    fn our_own_notification_waits_for_our_write_to_be_remembered() {
        let notifier = Notifier::new();
        let recent = RecentEvents::default();
        let game = Uuid::now_v7();
        let mut watching = notifier.subscribe(game);
        notifier.notify(game, 4);
        recent.remember(game, vec![stored(4)]);
        watching.borrow_and_update();
        let own = recent.begin(&notifier, game);
        // The commit's NOTIFY is heard before the statement's answer: held, nobody woken.
        assert!(recent.hold(game, 5));
        assert!(!watching.has_changed().expect("open"));
        own.committed(vec![stored(5)], 5);
        assert_eq!(*watching.borrow_and_update(), 5);
        // The woken pump's page comes from memory.
        assert_eq!(seqs(recent.page(&notifier, game, 5, 256)), Some(vec![5]));
        // No write in flight: a notification is announced at once.
        assert!(!recent.hold(game, 6));
        assert!(recent.writing.lock().is_empty());
    }

    #[test]
    fn a_write_that_ends_without_committing_announces_what_was_held() {
        let notifier = Notifier::new();
        let recent = RecentEvents::default();
        let game = Uuid::now_v7();
        let watching = notifier.subscribe(game);
        // Two writes in flight (a second caller's append waits for the next batch); another
        // replica's commit to version 7 is heard meanwhile, and our first write loses its guard.
        let first = recent.begin(&notifier, game);
        let second = recent.begin(&notifier, game);
        assert!(recent.hold(game, 7));
        drop(first);
        assert_eq!(*watching.borrow(), 7, "announced by the first write to end");
        assert!(recent.hold(game, 8), "the second is still in flight");
        drop(second);
        assert_eq!(*watching.borrow(), 8);
        assert!(recent.writing.lock().is_empty());
        assert!(!recent.hold(game, 9));
    }

    #[test]
    fn writes_that_follow_each_other_are_joined_and_a_gap_starts_afresh() {
        let notifier = Notifier::new();
        let recent = RecentEvents::default();
        let game = Uuid::now_v7();
        let _watching = notifier.subscribe(game);
        // The creation, then both deployments: a first watcher's backfill from seq 1.
        recent.remember(game, vec![stored(1)]);
        recent.remember(game, vec![stored(2)]);
        recent.remember(game, vec![stored(3), stored(4)]);
        notifier.notify(game, 4);
        assert_eq!(
            seqs(recent.page(&notifier, game, 1, 256)),
            Some(vec![1, 2, 3, 4])
        );
        // Another replica wrote seqs 5 and 6; our next write does not follow what we hold.
        recent.remember(game, vec![stored(7)]);
        notifier.notify(game, 7);
        assert_eq!(seqs(recent.page(&notifier, game, 4, 256)), None);
        assert_eq!(seqs(recent.page(&notifier, game, 7, 256)), Some(vec![7]));
    }

    #[test]
    fn a_game_keeps_only_its_newest_events() {
        let notifier = Notifier::new();
        let recent = RecentEvents::default();
        let game = Uuid::now_v7();
        let _watching = notifier.subscribe(game);
        let newest = TAIL as u64 + 10;
        for seq in 1..=newest {
            recent.remember(game, vec![stored(seq)]);
        }
        notifier.notify(game, newest);
        let oldest_kept = newest - TAIL as u64 + 1;
        assert_eq!(
            seqs(recent.page(&notifier, game, oldest_kept - 1, 256)),
            None
        );
        assert_eq!(
            seqs(recent.page(&notifier, game, oldest_kept, 256)),
            Some((oldest_kept..=newest).collect())
        );
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
