//! A [`GameStore`] wrapper that records store failures and append latency (metric names in
//! `hidden-front-metrics-names`).

use async_trait::async_trait;
use hidden_front_metrics_names as names;
use hidden_front_rules::{Event, Game, Side};
use hidden_front_store::lifecycle::{Fact, FeedPosition, NewFact};
use hidden_front_store::{
    AdminStore, Append, ArmAfterReport, AuditEntry, AuditQuery, Created, EndedRecord, FactsPage,
    FoundGame, GameFilter, GameMeta, GameRecord, GameStore, GameSummary, LifecycleOutbox,
    NewAuditEntry, ObservedGame, Outage, OutageRule, Presence, StoreError, StoredEvent, Timer,
    TimerSlot, TimerStore,
};
use hidden_front_time::WallClock;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;
use uuid::Uuid;

/// Delegates every call to the wrapped store, counting failures by operation.
pub(crate) struct MeteredStore {
    inner: Arc<dyn GameStore>,
    /// The handles of the operations every move performs, made once.
    hot: HotOperations,
    append_duration: metrics::Histogram,
}

/// `hf_store_operations_total` of the operations on a move's path.
struct HotOperations {
    append: metrics::Counter,
    events: metrics::Counter,
    load: metrics::Counter,
}

impl MeteredStore {
    /// `inner`, metered.
    pub(crate) fn new(inner: Arc<dyn GameStore>) -> MeteredStore {
        let operations = |operation| metrics::counter!(names::STORE_OPERATIONS_TOTAL, names::OPERATION => operation);
        MeteredStore {
            inner,
            hot: HotOperations {
                append: operations("append"),
                events: operations("events"),
                load: operations("load"),
            },
            append_duration: metrics::histogram!(names::STORE_APPEND_DURATION_SECONDS),
        }
    }

    /// Counts `result` as a store error of `operation` if the store failed (a database or data
    /// error; conflicts, duplicates and unknown games are answers, not failures).
    fn counted<T>(
        &self,
        operation: &'static str,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match operation {
            "append" => self.hot.append.increment(1),
            "events" => self.hot.events.increment(1),
            "load" => self.hot.load.increment(1),
            _ => metrics::counter!(names::STORE_OPERATIONS_TOTAL, names::OPERATION => operation)
                .increment(1),
        }
        if result.as_ref().is_err_and(StoreError::is_store_failure) {
            metrics::counter!(names::STORE_ERRORS_TOTAL, names::OPERATION => operation)
                .increment(1);
        }
        result
    }
}

#[async_trait]
impl LifecycleOutbox for MeteredStore {
    async fn facts_after(&self, after: u64, limit: usize) -> Result<Vec<Fact>, StoreError> {
        self.counted("facts_after", self.inner.facts_after(after, limit).await)
    }

    async fn watch_facts(&self) -> Result<watch::Receiver<u64>, StoreError> {
        self.counted("watch_facts", self.inner.watch_facts().await)
    }

    fn feed_shards(&self) -> usize {
        self.inner.feed_shards()
    }

    async fn facts_after_position(
        &self,
        after: &FeedPosition,
        limit: usize,
    ) -> Result<FactsPage, StoreError> {
        self.counted(
            "facts_after_position",
            self.inner.facts_after_position(after, limit).await,
        )
    }

    async fn watch_fact_positions(&self) -> Result<watch::Receiver<FeedPosition>, StoreError> {
        self.counted(
            "watch_fact_positions",
            self.inner.watch_fact_positions().await,
        )
    }
}

#[async_trait]
impl GameStore for MeteredStore {
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
        self.counted(
            "create",
            self.inner
                .create_armed(creation_key, meta, events, game, timers, facts)
                .await,
        )
    }

    async fn load(&self, game_id: Uuid) -> Result<Option<GameRecord>, StoreError> {
        self.counted("load", self.inner.load(game_id).await)
    }

    async fn observe(
        &self,
        game_id: Uuid,
        now: SystemTime,
    ) -> Result<Option<ObservedGame>, StoreError> {
        self.counted("observe", self.inner.observe(game_id, now).await)
    }

    async fn append_armed(&self, append: Append<'_>) -> Result<u64, StoreError> {
        let started = Instant::now();
        let result = self.inner.append_armed(append).await;
        self.append_duration.record(started.elapsed().as_secs_f64());
        self.counted("append", result)
    }

    async fn command_response(
        &self,
        game_id: Uuid,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        self.counted(
            "command_response",
            self.inner.command_response(game_id, key).await,
        )
    }

    async fn events(
        &self,
        game_id: Uuid,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        self.counted("events", self.inner.events(game_id, from_seq, limit).await)
    }

    async fn watch(&self, game_id: Uuid) -> Result<watch::Receiver<u64>, StoreError> {
        self.counted("watch", self.inner.watch(game_id).await)
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
        self.counted(
            "report_presence",
            self.inner
                .report_presence(game_id, side, gateway_id, connected, now, lease_until, arm)
                .await,
        )
    }

    async fn presence(&self, game_id: Uuid, now: SystemTime) -> Result<Presence, StoreError> {
        self.counted("presence", self.inner.presence(game_id, now).await)
    }

    async fn games_of_player(
        &self,
        player: &str,
        limit: usize,
    ) -> Result<Vec<GameSummary>, StoreError> {
        self.counted(
            "games_of_player",
            self.inner.games_of_player(player, limit).await,
        )
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.counted("ping", self.inner.ping().await)
    }

    async fn pulse(
        &self,
        clock: &WallClock,
        rule: &OutageRule,
    ) -> Result<Option<Outage>, StoreError> {
        self.counted("pulse", self.inner.pulse(clock, rule).await)
    }

    async fn ended_games(
        &self,
        after_cursor: u64,
        limit: usize,
    ) -> Result<Vec<EndedRecord>, StoreError> {
        self.counted(
            "ended_games",
            self.inner.ended_games(after_cursor, limit).await,
        )
    }
}

#[async_trait]
impl AdminStore for MeteredStore {
    async fn find_games(&self, filter: &GameFilter) -> Result<Vec<FoundGame>, StoreError> {
        self.counted("find_games", self.inner.find_games(filter).await)
    }

    async fn append_audit(&self, entry: NewAuditEntry<'_>) -> Result<AuditEntry, StoreError> {
        self.counted("append_audit", self.inner.append_audit(entry).await)
    }

    async fn audit_log(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        self.counted("audit_log", self.inner.audit_log(query).await)
    }
}

#[async_trait]
impl TimerStore for MeteredStore {
    async fn arm_timer(&self, timer: &Timer) -> Result<(), StoreError> {
        self.counted("arm_timer", self.inner.arm_timer(timer).await)
    }

    async fn cancel_timer(&self, game_id: Uuid, slot: TimerSlot) -> Result<bool, StoreError> {
        self.counted("cancel_timer", self.inner.cancel_timer(game_id, slot).await)
    }

    async fn timers_of(&self, game_id: Uuid) -> Result<Vec<Timer>, StoreError> {
        self.counted("timers_of", self.inner.timers_of(game_id).await)
    }

    async fn claim_due(
        &self,
        owner: &str,
        horizon: SystemTime,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<Timer>, StoreError> {
        self.counted(
            "claim_due",
            self.inner.claim_due(owner, horizon, lease, limit).await,
        )
    }

    async fn release_timer(&self, timer: &Timer, retry_at: SystemTime) -> Result<(), StoreError> {
        self.counted(
            "release_timer",
            self.inner.release_timer(timer, retry_at).await,
        )
    }

    async fn complete_timers(&self, timers: &[Timer]) -> Result<u64, StoreError> {
        self.counted("complete_timers", self.inner.complete_timers(timers).await)
    }

    async fn armed_timer_count(&self) -> Result<u64, StoreError> {
        self.counted("armed_timer_count", self.inner.armed_timer_count().await)
    }
}
