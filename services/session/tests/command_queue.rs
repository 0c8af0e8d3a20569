//! Two commands of one game sent at once, as both seats confirming their deployments at a game's
//! start: the session judges the second only after the first is appended, so neither loses the
//! version race to the other (one append each, no second judgement). The store here holds every
//! append until the test opens it, which shows whether the second command reached the store
//! while the first was still in it.

use async_trait::async_trait;
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_server::SessionService as _;
use hidden_front_rules::{Event, Game, Side};
use hidden_front_session::{SessionConfig, SessionService};
use hidden_front_store::lifecycle::{Fact, NewFact};
use hidden_front_store::memory::MemoryStore;
use hidden_front_store::{
    AdminStore, Append, ArmAfterReport, AuditEntry, AuditQuery, Created, EndedRecord, FoundGame,
    GameFilter, GameMeta, GameRecord, GameStore, GameSummary, NewAuditEntry, ObservedGame,
    Presence, StoreError, StoredEvent, Timer, TimerSlot, TimerStore,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};
use tokio::sync::{Notify, watch};
use tonic::Request;
use uuid::Uuid;

/// How long the test waits for an event before failing instead of hanging.
const DEADLINE: Duration = Duration::from_secs(10);

/// A memory store whose appends wait until `open` says so, counting how many began.
struct GatedStore {
    inner: MemoryStore,
    open: watch::Sender<bool>,
    appends_started: AtomicUsize,
    append_started: Notify,
}

#[async_trait]
impl GameStore for GatedStore {
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

    async fn facts_after(&self, after: u64, limit: usize) -> Result<Vec<Fact>, StoreError> {
        self.inner.facts_after(after, limit).await
    }

    async fn watch_facts(&self) -> Result<watch::Receiver<u64>, StoreError> {
        self.inner.watch_facts().await
    }

    async fn load(&self, game_id: Uuid) -> Result<Option<GameRecord>, StoreError> {
        self.inner.load(game_id).await
    }

    async fn observe(
        &self,
        game_id: Uuid,
        now: SystemTime,
    ) -> Result<Option<ObservedGame>, StoreError> {
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
        self.inner.events(game_id, from_seq, limit).await
    }

    async fn watch(&self, game_id: Uuid) -> Result<watch::Receiver<u64>, StoreError> {
        self.inner.watch(game_id).await
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
        now: SystemTime,
        rule: &hidden_front_store::OutageRule,
    ) -> Result<Option<hidden_front_store::Outage>, StoreError> {
        self.inner.pulse(now, rule).await
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
impl AdminStore for GatedStore {
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
impl TimerStore for GatedStore {
    async fn arm_timer(&self, timer: &Timer) -> Result<(), StoreError> {
        self.inner.arm_timer(timer).await
    }

    async fn cancel_timer(&self, game_id: Uuid, slot: TimerSlot) -> Result<bool, StoreError> {
        self.inner.cancel_timer(game_id, slot).await
    }

    async fn timers_of(&self, game_id: Uuid) -> Result<Vec<Timer>, StoreError> {
        self.inner.timers_of(game_id).await
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

fn confirm_request(game: &str, side: pb::Side) -> Request<pb::ConfirmDeploymentRequest> {
    Request::new(pb::ConfirmDeploymentRequest {
        context: Some(pb::CommandContext {
            game_id: game.to_string(),
            side: side as i32,
            idempotency_key: format!("confirm-{side:?}"),
            expected_version: None,
        }),
    })
}

// One thread: once the test yields, each spawned command runs until it waits on something, so
// "the second command has not reached the store" is a fact, not a race.
#[tokio::test(flavor = "current_thread")]
async fn both_seats_confirming_at_once_are_appended_once_each() {
    let store = Arc::new(GatedStore {
        inner: MemoryStore::new(),
        open: watch::channel(true).0,
        appends_started: AtomicUsize::new(0),
        append_started: Notify::new(),
    });
    let session = Arc::new(SessionService::new(
        Arc::clone(&store) as Arc<dyn GameStore>,
        SessionConfig::default(),
    ));
    let game = session
        .create_game(Request::new(pb::CreateGameRequest {
            south_player: "alice".into(),
            north_player: "bob".into(),
            idempotency_key: "create".into(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner()
        .game_id;
    let before = store.appends_started.load(Ordering::SeqCst);

    store.open.send_replace(false);
    let confirm = |side| {
        let session = Arc::clone(&session);
        let request = confirm_request(&game, side);
        tokio::spawn(async move { session.confirm_deployment(request).await })
    };
    let south = confirm(pb::Side::South);
    let north = confirm(pb::Side::North);
    tokio::time::timeout(DEADLINE, store.append_started.notified())
        .await
        .expect("the first confirmation reaches the store");
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        store.appends_started.load(Ordering::SeqCst) - before,
        1,
        "the second confirmation reached the store while the first was still in it"
    );

    store.open.send_replace(true);
    let mut started = 0;
    for seat in [south, north] {
        let result = tokio::time::timeout(DEADLINE, seat)
            .await
            .expect("the confirmation is answered")
            .unwrap()
            .expect("the confirmation is accepted")
            .into_inner()
            .result
            .unwrap();
        started += result
            .events
            .iter()
            .filter(|e| matches!(e.event, Some(pb::game_event::Event::PlayStarted(_))))
            .count();
    }
    assert_eq!(started, 1, "exactly one of the two answers starts play");
    assert_eq!(
        store.appends_started.load(Ordering::SeqCst) - before,
        2,
        "each confirmation was appended once: neither lost a version race"
    );
}
