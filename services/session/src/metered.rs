//! A [`GameStore`] wrapper that records store failures and append latency (metric names in
//! `hidden-front-metrics-names`).

use async_trait::async_trait;
use hidden_front_metrics_names as names;
use hidden_front_rules::{Event, Game, Side};
use hidden_front_store::{
    CommandRecord, Created, GameMeta, GameRecord, GameStore, GameSummary, StoreError, StoredEvent,
};
use std::sync::Arc;
use std::time::{Instant, SystemTime};
use tokio::sync::watch;
use uuid::Uuid;

/// Delegates every call to the wrapped store, counting failures by operation.
pub(crate) struct MeteredStore {
    inner: Arc<dyn GameStore>,
}

impl MeteredStore {
    /// `inner`, metered.
    pub(crate) fn new(inner: Arc<dyn GameStore>) -> MeteredStore {
        MeteredStore { inner }
    }
}

/// Counts `result` as a store error of `operation` if the store failed (a database or data
/// error; conflicts, duplicates and unknown games are answers, not failures).
fn counted<T>(operation: &'static str, result: Result<T, StoreError>) -> Result<T, StoreError> {
    if let Err(StoreError::Database(_) | StoreError::Corrupt { .. } | StoreError::Migrate(_)) =
        &result
    {
        metrics::counter!(names::STORE_ERRORS_TOTAL, names::OPERATION => operation).increment(1);
    }
    result
}

#[async_trait]
impl GameStore for MeteredStore {
    async fn create(
        &self,
        creation_key: &str,
        meta: &GameMeta,
        events: &[Event],
        game: &Game,
    ) -> Result<Created, StoreError> {
        counted(
            "create",
            self.inner.create(creation_key, meta, events, game).await,
        )
    }

    async fn load(&self, game_id: Uuid) -> Result<Option<GameRecord>, StoreError> {
        counted("load", self.inner.load(game_id).await)
    }

    async fn append(
        &self,
        game_id: Uuid,
        expected_version: u64,
        events: &[Event],
        game: &Game,
        command: Option<CommandRecord<'_>>,
    ) -> Result<u64, StoreError> {
        let started = Instant::now();
        let result = self
            .inner
            .append(game_id, expected_version, events, game, command)
            .await;
        metrics::histogram!(names::STORE_APPEND_DURATION_SECONDS)
            .record(started.elapsed().as_secs_f64());
        counted("append", result)
    }

    async fn command_response(
        &self,
        game_id: Uuid,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        counted(
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
        counted("events", self.inner.events(game_id, from_seq, limit).await)
    }

    async fn watch(&self, game_id: Uuid) -> Result<watch::Receiver<u64>, StoreError> {
        counted("watch", self.inner.watch(game_id).await)
    }

    async fn report_presence(
        &self,
        game_id: Uuid,
        side: Side,
        gateway_id: &str,
        connected: bool,
        lease_until: SystemTime,
    ) -> Result<[bool; 2], StoreError> {
        counted(
            "report_presence",
            self.inner
                .report_presence(game_id, side, gateway_id, connected, lease_until)
                .await,
        )
    }

    async fn presence(&self, game_id: Uuid, now: SystemTime) -> Result<[bool; 2], StoreError> {
        counted("presence", self.inner.presence(game_id, now).await)
    }

    async fn games_of_player(
        &self,
        player: &str,
        limit: usize,
    ) -> Result<Vec<GameSummary>, StoreError> {
        counted(
            "games_of_player",
            self.inner.games_of_player(player, limit).await,
        )
    }

    async fn ping(&self) -> Result<(), StoreError> {
        counted("ping", self.inner.ping().await)
    }
}
