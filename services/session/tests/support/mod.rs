//! Test support of the session's tests: a store that delegates to a [`MemoryStore`] with hooks a
//! test can hold or step into, and counts of what it was asked.

#![allow(dead_code)] // each test binary uses its part

use async_trait::async_trait;
use hidden_front_rules::{Event, Game, Side};
use hidden_front_store::lifecycle::{Fact, FeedPosition, NewFact};
use hidden_front_store::memory::MemoryStore;
use hidden_front_store::{
    AdminStore, Append, ArmAfterReport, AuditEntry, AuditQuery, Created, EndedRecord, FactsPage,
    FoundGame, GameFilter, GameMeta, GameRecord, GameStore, GameSummary, LifecycleOutbox,
    NewAuditEntry, ObservedGame, Outage, OutageRule, Presence, StoreError, StoredEvent, Timer,
    TimerSlot, TimerStore,
};
use hidden_front_time::WallClock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::{Notify, watch};
use uuid::Uuid;

/// A memory store with hooks: its appends wait until `open` says so (counting how many began),
/// `after_timers_read` runs after every read of a game's timers (a test moves its clock there
/// to stand for a stall), and `rearm_after_timers_read` is armed once after the next such read
/// (another process re-arming the slot between a fire's check and its append). It counts its
/// `observe` reads, and with `forget_turn_deadlines` its events carry no turn deadline (as
/// those written by a release that did not record them). Its pulses wait until `pulse_open`
/// says so (a store that stopped answering).
pub struct HookedStore {
    pub inner: Arc<MemoryStore>,
    pub open: watch::Sender<bool>,
    pub pulse_open: watch::Sender<bool>,
    pub appends_started: AtomicUsize,
    pub append_started: Notify,
    pub after_timers_read: Mutex<Option<Box<dyn FnMut() + Send>>>,
    pub rearm_after_timers_read: Mutex<Option<Timer>>,
    pub observes: AtomicUsize,
    pub forget_turn_deadlines: AtomicBool,
}

impl HookedStore {
    /// `inner`, appends open, no hook.
    pub fn new(inner: MemoryStore) -> HookedStore {
        HookedStore::sharing(Arc::new(inner))
    }

    /// [`HookedStore::new`] over a store that others (another session replica) use too.
    pub fn sharing(inner: Arc<MemoryStore>) -> HookedStore {
        HookedStore {
            inner,
            open: watch::channel(true).0,
            pulse_open: watch::channel(true).0,
            appends_started: AtomicUsize::new(0),
            append_started: Notify::new(),
            after_timers_read: Mutex::new(None),
            rearm_after_timers_read: Mutex::new(None),
            observes: AtomicUsize::new(0),
            forget_turn_deadlines: AtomicBool::new(false),
        }
    }
}

#[async_trait]
impl LifecycleOutbox for HookedStore {
    async fn facts_after(&self, after: u64, limit: usize) -> Result<Vec<Fact>, StoreError> {
        self.inner.facts_after(after, limit).await
    }

    async fn watch_facts(&self) -> Result<watch::Receiver<u64>, StoreError> {
        self.inner.watch_facts().await
    }

    fn feed_shards(&self) -> usize {
        self.inner.feed_shards()
    }

    async fn facts_after_position(
        &self,
        after: &FeedPosition,
        limit: usize,
    ) -> Result<FactsPage, StoreError> {
        self.inner.facts_after_position(after, limit).await
    }

    async fn watch_fact_positions(&self) -> Result<watch::Receiver<FeedPosition>, StoreError> {
        self.inner.watch_fact_positions().await
    }
}

#[async_trait]
impl GameStore for HookedStore {
    fn new_game_id(&self, creation_key: &str) -> Uuid {
        self.inner.new_game_id(creation_key)
    }

    async fn create_armed(
        &self,
        creation_key: &str,
        meta: &GameMeta,
        events: &[Event],
        game: &Game,
        timers: &[Timer],
        facts: &[NewFact],
    ) -> Result<Created, StoreError> {
        self.inner
            .create_armed(creation_key, meta, events, game, timers, facts)
            .await
    }

    async fn load(&self, game_id: Uuid) -> Result<Option<GameRecord>, StoreError> {
        self.inner.load(game_id).await
    }

    async fn observe(
        &self,
        game_id: Uuid,
        now: SystemTime,
    ) -> Result<Option<ObservedGame>, StoreError> {
        self.observes.fetch_add(1, Ordering::SeqCst);
        self.inner.observe(game_id, now).await
    }

    async fn append_armed(&self, append: Append<'_>) -> Result<u64, StoreError> {
        self.appends_started.fetch_add(1, Ordering::SeqCst);
        self.append_started.notify_one();
        let mut open = self.open.subscribe();
        let _ = open.wait_for(|open| *open).await;
        self.inner.append_armed(append).await
    }

    async fn command_response(
        &self,
        game_id: Uuid,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.command_response(game_id, key).await
    }

    async fn events(
        &self,
        game_id: Uuid,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let mut events = self.inner.events(game_id, from_seq, limit).await?;
        if self.forget_turn_deadlines.load(Ordering::SeqCst) {
            for event in &mut events {
                event.armed_turn_deadline = None;
            }
        }
        Ok(events)
    }

    async fn watch(&self, game_id: Uuid) -> Result<watch::Receiver<u64>, StoreError> {
        self.inner.watch(game_id).await
    }

    fn status_changes(&self, game_id: Uuid) -> watch::Receiver<u64> {
        self.inner.status_changes(game_id)
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
        self.inner
            .report_presence(game_id, side, gateway_id, connected, now, lease_until, arm)
            .await
    }

    async fn presence(&self, game_id: Uuid, now: SystemTime) -> Result<Presence, StoreError> {
        self.inner.presence(game_id, now).await
    }

    async fn games_of_player(
        &self,
        player: &str,
        limit: usize,
    ) -> Result<Vec<GameSummary>, StoreError> {
        self.inner.games_of_player(player, limit).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.inner.ping().await
    }

    async fn pulse(
        &self,
        clock: &WallClock,
        rule: &OutageRule,
    ) -> Result<Option<Outage>, StoreError> {
        let mut open = self.pulse_open.subscribe();
        let _ = open.wait_for(|open| *open).await;
        self.inner.pulse(clock, rule).await
    }

    async fn ended_games(
        &self,
        after_cursor: u64,
        limit: usize,
    ) -> Result<Vec<EndedRecord>, StoreError> {
        self.inner.ended_games(after_cursor, limit).await
    }
}

#[async_trait]
impl AdminStore for HookedStore {
    async fn find_games(&self, filter: &GameFilter) -> Result<Vec<FoundGame>, StoreError> {
        self.inner.find_games(filter).await
    }

    async fn append_audit(&self, entry: NewAuditEntry<'_>) -> Result<AuditEntry, StoreError> {
        self.inner.append_audit(entry).await
    }

    async fn audit_log(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        self.inner.audit_log(query).await
    }
}

#[async_trait]
impl TimerStore for HookedStore {
    async fn arm_timer(&self, timer: &Timer) -> Result<(), StoreError> {
        self.inner.arm_timer(timer).await
    }

    async fn cancel_timer(&self, game_id: Uuid, slot: TimerSlot) -> Result<bool, StoreError> {
        self.inner.cancel_timer(game_id, slot).await
    }

    async fn timers_of(&self, game_id: Uuid) -> Result<Vec<Timer>, StoreError> {
        let timers = self.inner.timers_of(game_id).await;
        if let Some(hook) = self.after_timers_read.lock().unwrap().as_mut() {
            hook();
        }
        let rearm = self.rearm_after_timers_read.lock().unwrap().take();
        if let Some(timer) = rearm {
            self.inner.arm_timer(&timer).await?;
        }
        timers
    }

    async fn claim_due(
        &self,
        owner: &str,
        horizon: SystemTime,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<Timer>, StoreError> {
        self.inner.claim_due(owner, horizon, lease, limit).await
    }

    async fn release_timer(&self, timer: &Timer, retry_at: SystemTime) -> Result<(), StoreError> {
        self.inner.release_timer(timer, retry_at).await
    }

    async fn complete_timers(&self, timers: &[Timer]) -> Result<u64, StoreError> {
        self.inner.complete_timers(timers).await
    }

    async fn armed_timer_count(&self) -> Result<u64, StoreError> {
        self.inner.armed_timer_count().await
    }
}
