//! Change notification inside one process: a registry of per-game [`watch`] channels carrying the
//! latest known version of each game.
//!
//! Both stores feed it: [`crate::memory::MemoryStore`] right after an append, and
//! [`crate::postgres::PostgresStore`] right after its own commits and from its LISTEN/NOTIFY task
//! (appends by other processes). A watch channel fits because a watcher only ever needs the latest
//! version (it reads the events it missed from the log), so bursts of appends coalesce for free.
//!
//! Channels are created when someone subscribes and dropped once nobody listens, so a process that
//! has touched a million games keeps channels only for the games someone is watching now.

use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use tokio::sync::watch;
use uuid::Uuid;

/// The smallest registry size at which [`Notifier::subscribe`] sweeps out abandoned channels.
const MIN_SWEEP_LEN: usize = 64;

/// Per-game latest-version channels, created on demand and pruned when no receiver remains.
///
/// The version a channel carries only ever rises ([`Notifier::notify`] ignores anything not newer),
/// so notifications that arrive late or twice (our own commit, then our own NOTIFY echoed back by
/// Postgres) are harmless.
#[derive(Debug)]
pub struct Notifier {
    state: Mutex<Registry>,
}

#[derive(Debug)]
struct Registry {
    senders: HashMap<Uuid, watch::Sender<u64>>,
    /// Sweep abandoned channels when the registry reaches this size (amortised O(1) pruning).
    sweep_at: usize,
}

impl Default for Notifier {
    fn default() -> Self {
        Notifier::new()
    }
}

impl Notifier {
    /// An empty registry.
    pub fn new() -> Notifier {
        Notifier {
            state: Mutex::new(Registry {
                senders: HashMap::new(),
                sweep_at: MIN_SWEEP_LEN,
            }),
        }
    }

    /// The registry (a `parking_lot` lock, never poisoned: every operation leaves the map
    /// consistent, so a panic elsewhere leaves the data good).
    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.state.lock()
    }

    /// A receiver for `game_id`, creating the game's channel (at version 0) if nobody watches it
    /// yet. The receiver has seen the channel's current value.
    ///
    /// To avoid missing an append, subscribe *before* reading the game's current version from the
    /// store, then [`Notifier::notify`] that version: an append that commits after the read
    /// notifies a channel that already exists.
    pub fn subscribe(&self, game_id: Uuid) -> watch::Receiver<u64> {
        let mut registry = self.registry();
        if registry.senders.len() >= registry.sweep_at {
            registry
                .senders
                .retain(|_, sender| sender.receiver_count() > 0);
            registry.sweep_at = (registry.senders.len() * 2).max(MIN_SWEEP_LEN);
        }
        registry
            .senders
            .entry(game_id)
            .or_insert_with(|| watch::Sender::new(0))
            .subscribe()
    }

    /// Raises the game's version to `version` and wakes its receivers; does nothing if the channel
    /// already carries `version` or a later one, or if nobody watches the game (a later subscriber
    /// reads the current version from the store). Drops the channel if its last receiver is gone.
    pub fn notify(&self, game_id: Uuid, version: u64) {
        let mut registry = self.registry();
        let Some(sender) = registry.senders.get(&game_id) else {
            return;
        };
        if sender.receiver_count() == 0 {
            registry.senders.remove(&game_id);
            return;
        }
        sender.send_if_modified(|current| {
            if version > *current {
                *current = version;
                true
            } else {
                false
            }
        });
    }

    /// Wakes the receivers of `game_id` by raising its channel's value by one; does nothing if
    /// nobody watches the game. For channels that count changes rather than carry a version:
    /// the games' status (presence, deadlines), which changes without an event.
    pub fn bump(&self, game_id: Uuid) {
        if let Some(sender) = self.registry().senders.get(&game_id) {
            sender.send_modify(|count| *count += 1);
        }
    }

    /// [`Notifier::bump`] of every watched game: after a change that touches every game (an
    /// outage accounted for), or after notifications may have been missed.
    pub fn bump_all(&self) {
        for sender in self.registry().senders.values() {
            if sender.receiver_count() > 0 {
                sender.send_modify(|count| *count += 1);
            }
        }
    }

    /// The newest version known for `game_id` (its channel's value), or `None` if nobody
    /// watches the game: a reader that must not miss a commit can trust it only while watching.
    pub fn version(&self, game_id: Uuid) -> Option<u64> {
        self.registry()
            .senders
            .get(&game_id)
            .filter(|sender| sender.receiver_count() > 0)
            .map(|sender| *sender.borrow())
    }

    /// The games someone is watching now, so a LISTEN connection that was lost can re-read their
    /// versions after reconnecting (notifications sent while it was down are gone for good).
    pub fn watched(&self) -> Vec<Uuid> {
        self.registry()
            .senders
            .iter()
            .filter(|(_, sender)| sender.receiver_count() > 0)
            .map(|(game_id, _)| *game_id)
            .collect()
    }

    /// How many channels the registry holds (including abandoned ones not yet pruned); for tests
    /// and metrics.
    pub fn len(&self) -> usize {
        self.registry().senders.len()
    }

    /// Whether the registry holds no channel at all.
    pub fn is_empty(&self) -> bool {
        self.registry().senders.is_empty()
    }

    /// Drops every channel nobody listens to any more.
    pub fn prune(&self) {
        self.registry()
            .senders
            .retain(|_, sender| sender.receiver_count() > 0);
    }
}

/// Moves a shared position forward, never back (two commits may announce out of order), and
/// wakes receivers only when it moved: the outbox's followers in both stores.
pub(crate) fn advance_position(position: &watch::Sender<u64>, to: u64) {
    position.send_if_modified(|last| {
        let newer = to > *last;
        *last = (*last).max(to);
        newer
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_only_raises() {
        let notifier = Notifier::new();
        let game = Uuid::new_v4();
        let mut rx = notifier.subscribe(game);
        assert_eq!(*rx.borrow(), 0);
        notifier.notify(game, 5);
        assert!(rx.has_changed().unwrap());
        assert_eq!(*rx.borrow_and_update(), 5);
        notifier.notify(game, 3);
        notifier.notify(game, 5);
        assert!(!rx.has_changed().unwrap());
        assert_eq!(*rx.borrow(), 5);
        notifier.notify(game, 6);
        assert_eq!(*rx.borrow_and_update(), 6);
    }

    #[test]
    fn channels_are_shared_and_pruned() {
        let notifier = Notifier::new();
        let game = Uuid::new_v4();
        let a = notifier.subscribe(game);
        let b = notifier.subscribe(game);
        notifier.notify(game, 2);
        assert_eq!((*a.borrow(), *b.borrow()), (2, 2));
        assert_eq!(notifier.watched(), vec![game]);
        drop((a, b));
        assert!(notifier.watched().is_empty());
        // A notification for an abandoned channel removes it.
        notifier.notify(game, 3);
        assert!(notifier.is_empty());
        // A new subscriber starts from scratch (the store tells it the current version).
        let c = notifier.subscribe(game);
        assert_eq!(*c.borrow(), 0);
    }

    #[test]
    fn bumps_wake_the_watchers_of_one_game_or_of_all() {
        let notifier = Notifier::new();
        let (one, other) = (Uuid::new_v4(), Uuid::new_v4());
        let mut a = notifier.subscribe(one);
        let b = notifier.subscribe(other);
        notifier.bump(one);
        assert!(a.has_changed().unwrap());
        assert!(!b.has_changed().unwrap());
        a.borrow_and_update();
        notifier.bump_all();
        assert!(a.has_changed().unwrap() && b.has_changed().unwrap());
        notifier.bump(Uuid::new_v4());
        assert_eq!(
            notifier.len(),
            2,
            "a bump of an unwatched game creates nothing"
        );
    }

    #[test]
    fn notify_without_watchers_creates_nothing() {
        let notifier = Notifier::new();
        notifier.notify(Uuid::new_v4(), 1);
        assert!(notifier.is_empty());
    }

    #[test]
    fn subscribe_sweeps_abandoned_channels() {
        let notifier = Notifier::new();
        for _ in 0..(MIN_SWEEP_LEN * 3) {
            drop(notifier.subscribe(Uuid::new_v4()));
        }
        assert!(notifier.len() <= MIN_SWEEP_LEN + 1);
        let kept = notifier.subscribe(Uuid::new_v4());
        notifier.prune();
        assert_eq!(notifier.len(), 1);
        drop(kept);
        notifier.prune();
        assert!(notifier.is_empty());
    }
}
