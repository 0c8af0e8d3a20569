//! The session's store: every call to the [`GameStore`] it was given goes through here, to be
//! metered (failures and append latency, metric names in `hidden-front-metrics-names`) and to be
//! given up the moment this process finds the store lost.
//!
//! Why give calls up: a session host cut from its database (a partition, a broken route) keeps
//! its gRPC connections to the gateways and the clocks, so nothing tells them to go elsewhere;
//! every call it takes waits on a connection that will never answer, a move until its caller's
//! deadline, a watched game's stream forever. The pulse ([`crate::pulse`]) asks the store about
//! once a second; here it is bounded to half the outage threshold, and a pulse that fails or
//! does not answer in time marks the store lost ([`SessionStore::lost`]): from then every call
//! is refused at once (`StoreError::Lost`, `UNAVAILABLE`/`STORE_UNAVAILABLE`, retriable), calls
//! under way are given up, watched games' streams end (`watch.rs`) and the session's health
//! turns NOT_SERVING (`crates/hidden-front/src/health.rs`), so its callers retry on a host that
//! serves. The first pulse that answers ends it, unless the store was lost to this process
//! alone ([`Recovery`]): then it stays lost a while longer. An append given up may still have
//! committed: its retry, with the same idempotency key, finds it.

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
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;
use uuid::Uuid;

/// Delegates every call to the wrapped store, counting failures by operation, and gives calls
/// up while the store is lost to this process.
pub(crate) struct SessionStore {
    inner: Arc<dyn GameStore>,
    /// The handles of the operations every move performs, made once.
    hot: HotOperations,
    append_duration: metrics::Histogram,
    /// Whether this process's last pulse failed, or it is still holding off after finding the
    /// store again ([`Recovery`]): set by [`GameStore::pulse`] alone.
    lost: watch::Sender<bool>,
    /// When the store was lost, and until when this process holds off after finding it.
    recovery: parking_lot::Mutex<Recovery>,
}

/// The longest a process holds off after finding its store again ([`Recovery`]).
pub(crate) const MAX_RECOVERY_HOLD: Duration = Duration::from_secs(60);

/// Added to the measured loss for the hold ([`Recovery`]): the loss began up to a pulse interval
/// before the pulse that found it, and TCP's next retransmission may come a little after a
/// doubling of the time it has waited.
const RECOVERY_HOLD_MARGIN: Duration = Duration::from_secs(2);

/// A process that lost its store while the rest of the service did not (its pulse, once it
/// answers, finds no outage of the service although this process could not reach the store for
/// longer than the outage threshold: other processes kept the service's pulse row fresh meanwhile)
/// stays lost for as long again as the loss lasted, plus [`RECOVERY_HOLD_MARGIN`], at most
/// [`MAX_RECOVERY_HOLD`]. Why: the connections that had packets in flight when the database
/// stopped answering (the LISTEN connection's notifications, requests under way) sit in TCP's
/// retransmission backoff after it answers again, for up to about as long again as it was gone:
/// after a 30 s cut of one session host the cluster test saw calls sent to that host right
/// after it reported SERVING answered 20–23 s later in 3 of 6 runs (docs/cluster-test.md). The
/// other hosts serve meanwhile, so holding off costs the players nothing, and the store's
/// pool is renewed meanwhile. When the whole service could not serve (the pulse records an
/// outage, and moves the running deadlines for it), or the loss was too short to tell, the
/// first pulse that answers ends the loss at once: no other process would serve instead, and
/// time held off is not given back to the players' clocks. While it holds off, its pulse only
/// pings the store and does not beat the service's pulse row, so if the other processes go
/// down meanwhile, its first pulse after the hold finds the gap and records the outage.
#[derive(Debug, Default)]
struct Recovery {
    /// When the first pulse that failed began.
    lost_since: Option<tokio::time::Instant>,
    /// Until when this process holds off although its pulse answers.
    held_until: Option<tokio::time::Instant>,
}

/// `hf_store_operations_total` of the operations on a move's path.
struct HotOperations {
    append: metrics::Counter,
    events: metrics::Counter,
    load: metrics::Counter,
}

impl SessionStore {
    /// `inner`, metered, and not lost until a pulse fails.
    pub(crate) fn new(inner: Arc<dyn GameStore>) -> SessionStore {
        let operations = |operation| metrics::counter!(names::STORE_OPERATIONS_TOTAL, names::OPERATION => operation);
        SessionStore {
            inner,
            hot: HotOperations {
                append: operations("append"),
                events: operations("events"),
                load: operations("load"),
            },
            append_duration: metrics::histogram!(names::STORE_APPEND_DURATION_SECONDS),
            lost: watch::channel(false).0,
            recovery: parking_lot::Mutex::default(),
        }
    }

    /// Whether the store is lost to this process after a pulse that began at `started` and
    /// answered `result` ([`Recovery`]).
    fn lost_after_pulse(
        &self,
        started: tokio::time::Instant,
        result: &Result<Option<Outage>, StoreError>,
        rule: &OutageRule,
    ) -> bool {
        let mut recovery = self.recovery.lock();
        let outage_recorded = match result {
            Err(_) => {
                recovery.lost_since.get_or_insert(started);
                recovery.held_until = None;
                return true;
            }
            Ok(outage) => outage.is_some(),
        };
        let now = tokio::time::Instant::now();
        if let Some(since) = recovery.lost_since.take() {
            let loss = now.saturating_duration_since(since);
            if !outage_recorded && loss > rule.outage_after {
                let hold = (loss + RECOVERY_HOLD_MARGIN).min(MAX_RECOVERY_HOLD);
                recovery.held_until = Some(now + hold);
                tracing::warn!(
                    loss_seconds = loss.as_secs_f64(),
                    hold_seconds = hold.as_secs_f64(),
                    "the store answers again, but it was lost to this process alone for \
                     {:.1} s: holding off for {:.1} s more while the other processes serve",
                    loss.as_secs_f64(),
                    hold.as_secs_f64()
                );
            }
        }
        match recovery.held_until {
            Some(until) if now < until => true,
            Some(_) => {
                recovery.held_until = None;
                tracing::info!("done holding off after the store was lost: serving again");
                false
            }
            None => false,
        }
    }

    /// Whether the store is lost to this process (its last pulse failed), and every change of
    /// that: what the health checker and the watched games' streams follow.
    pub(crate) fn lost(&self) -> watch::Receiver<bool> {
        self.lost.subscribe()
    }

    /// `operation`, refused at once while the store is lost and given up the moment it is.
    async fn guarded<T>(
        &self,
        operation: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let mut lost = self.lost.subscribe();
        if *lost.borrow_and_update() {
            return Err(lost_error());
        }
        tokio::select! {
            biased;
            result = operation => result,
            // Never resolves while the store serves (the sender lives as long as `self`).
            true = became_lost(&mut lost) => Err(lost_error()),
        }
    }

    /// [`SessionStore::guarded`], then counted as `operation`.
    async fn call<T>(
        &self,
        operation: &'static str,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let result = self.guarded(call).await;
        self.counted(operation, result)
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
impl LifecycleOutbox for SessionStore {
    async fn facts_after(&self, after: u64, limit: usize) -> Result<Vec<Fact>, StoreError> {
        self.call("facts_after", self.inner.facts_after(after, limit))
            .await
    }

    async fn watch_facts(&self) -> Result<watch::Receiver<u64>, StoreError> {
        self.call("watch_facts", self.inner.watch_facts()).await
    }

    fn feed_shards(&self) -> usize {
        self.inner.feed_shards()
    }

    async fn facts_after_position(
        &self,
        after: &FeedPosition,
        limit: usize,
    ) -> Result<FactsPage, StoreError> {
        self.call(
            "facts_after_position",
            self.inner.facts_after_position(after, limit),
        )
        .await
    }

    async fn watch_fact_positions(&self) -> Result<watch::Receiver<FeedPosition>, StoreError> {
        self.call("watch_fact_positions", self.inner.watch_fact_positions())
            .await
    }
}

#[async_trait]
impl GameStore for SessionStore {
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
        self.call(
            "create",
            self.inner
                .create_armed(creation_key, meta, events, game, timers, facts),
        )
        .await
    }

    async fn load(&self, game_id: Uuid) -> Result<Option<GameRecord>, StoreError> {
        self.call("load", self.inner.load(game_id)).await
    }

    async fn observe(
        &self,
        game_id: Uuid,
        now: SystemTime,
    ) -> Result<Option<ObservedGame>, StoreError> {
        self.call("observe", self.inner.observe(game_id, now)).await
    }

    async fn append_armed(&self, append: Append<'_>) -> Result<u64, StoreError> {
        let started = Instant::now();
        let result = self.guarded(self.inner.append_armed(append)).await;
        self.append_duration.record(started.elapsed().as_secs_f64());
        self.counted("append", result)
    }

    async fn command_response(
        &self,
        game_id: Uuid,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        self.call(
            "command_response",
            self.inner.command_response(game_id, key),
        )
        .await
    }

    async fn events(
        &self,
        game_id: Uuid,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        self.call("events", self.inner.events(game_id, from_seq, limit))
            .await
    }

    async fn watch(&self, game_id: Uuid) -> Result<watch::Receiver<u64>, StoreError> {
        self.call("watch", self.inner.watch(game_id)).await
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
        self.call(
            "report_presence",
            self.inner
                .report_presence(game_id, side, gateway_id, connected, now, lease_until, arm),
        )
        .await
    }

    async fn presence(&self, game_id: Uuid, now: SystemTime) -> Result<Presence, StoreError> {
        self.call("presence", self.inner.presence(game_id, now))
            .await
    }

    async fn games_of_player(
        &self,
        player: &str,
        limit: usize,
    ) -> Result<Vec<GameSummary>, StoreError> {
        self.call("games_of_player", self.inner.games_of_player(player, limit))
            .await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.call("ping", self.inner.ping()).await
    }

    async fn pulse(
        &self,
        clock: &WallClock,
        rule: &OutageRule,
    ) -> Result<Option<Outage>, StoreError> {
        // Never refused for being lost: the pulse is how the store is found again. Bounded, so
        // that a store that does not answer is lost within the outage threshold.
        let bound = rule.outage_after / 2;
        let started = tokio::time::Instant::now();
        // A process holding off serves nobody, so it only asks whether the store answers: a beat
        // of the service's pulse row would tell the others (and its own first pulse after the
        // hold) that the service was serving, and if the other processes went down meanwhile,
        // the time nobody served would not be given back to the players' clocks.
        let held = self
            .recovery
            .lock()
            .held_until
            .is_some_and(|until| started < until);
        let asked = async {
            if held {
                self.inner.ping().await.map(|()| None)
            } else {
                self.inner.pulse(clock, rule).await
            }
        };
        let result = match tokio::time::timeout(bound, asked).await {
            Ok(result) => result,
            Err(_) => Err(StoreError::Lost {
                reason: format!("its pulse did not answer within {} ms", bound.as_millis()),
            }),
        };
        let lost = self.lost_after_pulse(started, &result, rule);
        self.lost.send_if_modified(|was| {
            let changed = *was != lost;
            *was = lost;
            changed
        });
        self.counted("pulse", result)
    }

    async fn ended_games(
        &self,
        after_cursor: u64,
        limit: usize,
    ) -> Result<Vec<EndedRecord>, StoreError> {
        self.call("ended_games", self.inner.ended_games(after_cursor, limit))
            .await
    }
}

#[async_trait]
impl AdminStore for SessionStore {
    async fn find_games(&self, filter: &GameFilter) -> Result<Vec<FoundGame>, StoreError> {
        self.call("find_games", self.inner.find_games(filter)).await
    }

    async fn append_audit(&self, entry: NewAuditEntry<'_>) -> Result<AuditEntry, StoreError> {
        self.call("append_audit", self.inner.append_audit(entry))
            .await
    }

    async fn audit_log(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        self.call("audit_log", self.inner.audit_log(query)).await
    }
}

#[async_trait]
impl TimerStore for SessionStore {
    async fn arm_timer(&self, timer: &Timer) -> Result<(), StoreError> {
        self.call("arm_timer", self.inner.arm_timer(timer)).await
    }

    async fn cancel_timer(&self, game_id: Uuid, slot: TimerSlot) -> Result<bool, StoreError> {
        self.call("cancel_timer", self.inner.cancel_timer(game_id, slot))
            .await
    }

    async fn timers_of(&self, game_id: Uuid) -> Result<Vec<Timer>, StoreError> {
        self.call("timers_of", self.inner.timers_of(game_id)).await
    }

    async fn claim_due(
        &self,
        owner: &str,
        horizon: SystemTime,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<Timer>, StoreError> {
        self.call(
            "claim_due",
            self.inner.claim_due(owner, horizon, lease, limit),
        )
        .await
    }

    async fn release_timer(&self, timer: &Timer, retry_at: SystemTime) -> Result<(), StoreError> {
        self.call("release_timer", self.inner.release_timer(timer, retry_at))
            .await
    }

    async fn complete_timers(&self, timers: &[Timer]) -> Result<u64, StoreError> {
        self.call("complete_timers", self.inner.complete_timers(timers))
            .await
    }

    async fn armed_timer_count(&self) -> Result<u64, StoreError> {
        self.call("armed_timer_count", self.inner.armed_timer_count())
            .await
    }
}

/// Returns `true` once `lost` says the store is lost (at once if it is now); `false` if nobody
/// can say so any more (the store was dropped).
pub(crate) async fn became_lost(lost: &mut watch::Receiver<bool>) -> bool {
    lost.wait_for(|lost| *lost).await.is_ok()
}

/// The refusal of a call while the store is lost.
pub(crate) fn lost_error() -> StoreError {
    StoreError::Lost {
        reason: "it was lost to this process; calls are refused until it answers again (and, \
                 after a loss of this process alone, for as long again: the other session \
                 processes serve meanwhile)"
            .into(),
    }
}
