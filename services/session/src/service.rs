//! [`SessionService`]: the referee's state (the store, the game cache, the settings) and its
//! gRPC face, `SessionService` of `session.proto`. Each call is answered by the module of its
//! job: `create`, `actions` and `command` (the player actions), `fire` (`ApplyTimer`),
//! `presence`, `pulse` (the outage accounting every other call waits for), `queries` and
//! `watch`.

use crate::cache::GameCache;
use crate::command_locks::CommandLocks;
use crate::config::SessionConfig;
use crate::pulse::PulseState;
use crate::session_store::SessionStore;
use crate::watch::EventStream;
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_server::SessionService as SessionApi;
use hidden_front_store::GameStore;
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// The referee service: judges commands with the engine and keeps games in a [`GameStore`].
pub struct SessionService {
    pub(crate) store: Arc<dyn GameStore>,
    pub(crate) cache: GameCache,
    /// Queues each game's commands in this process (`command_locks.rs`).
    pub(crate) command_locks: CommandLocks,
    pub(crate) config: SessionConfig,
    /// This process's pulse (`pulse.rs`).
    pub(crate) pulse_state: PulseState,
    /// The command path's metric handles.
    pub(crate) meters: crate::counters::Meters,
    /// Whether the store is lost to this process ([`SessionStore::lost`]).
    pub(crate) store_lost: tokio::sync::watch::Receiver<bool>,
}

impl SessionService {
    /// A session service over `store` (its failures and append latency are recorded as metrics;
    /// its calls are given up while the pulse finds it lost: `session_store.rs`).
    pub fn new(store: Arc<dyn GameStore>, config: SessionConfig) -> SessionService {
        let store = SessionStore::new(store);
        let store_lost = store.lost();
        SessionService {
            store: Arc::new(store),
            store_lost,
            cache: GameCache::new(config.cache_capacity),
            command_locks: CommandLocks::default(),
            config,
            pulse_state: PulseState::default(),
            meters: crate::counters::Meters::new(),
        }
    }

    /// Whether the store is lost to this process (its last pulse failed), and every change of
    /// that: the session's health follows it (NOT_SERVING at once while lost).
    pub fn store_lost(&self) -> tokio::sync::watch::Receiver<bool> {
        self.store_lost.clone()
    }
}

#[tonic::async_trait]
impl SessionApi for SessionService {
    async fn create_game(
        &self,
        request: Request<pb::CreateGameRequest>,
    ) -> Result<Response<pb::CreateGameResponse>, Status> {
        self.create(request.into_inner()).await.map(Response::new)
    }

    async fn reshuffle_deployment(
        &self,
        request: Request<pb::ReshuffleDeploymentRequest>,
    ) -> Result<Response<pb::ReshuffleDeploymentResponse>, Status> {
        self.act(request).await
    }

    async fn swap_pieces(
        &self,
        request: Request<pb::SwapPiecesRequest>,
    ) -> Result<Response<pb::SwapPiecesResponse>, Status> {
        self.act(request).await
    }

    async fn set_deployment(
        &self,
        request: Request<pb::SetDeploymentRequest>,
    ) -> Result<Response<pb::SetDeploymentResponse>, Status> {
        self.act(request).await
    }

    async fn confirm_deployment(
        &self,
        request: Request<pb::ConfirmDeploymentRequest>,
    ) -> Result<Response<pb::ConfirmDeploymentResponse>, Status> {
        self.act(request).await
    }

    async fn submit_move(
        &self,
        request: Request<pb::SubmitMoveRequest>,
    ) -> Result<Response<pb::SubmitMoveResponse>, Status> {
        self.act(request).await
    }

    async fn offer_draw(
        &self,
        request: Request<pb::OfferDrawRequest>,
    ) -> Result<Response<pb::OfferDrawResponse>, Status> {
        self.act(request).await
    }

    async fn answer_draw(
        &self,
        request: Request<pb::AnswerDrawRequest>,
    ) -> Result<Response<pb::AnswerDrawResponse>, Status> {
        self.act(request).await
    }

    async fn resign(
        &self,
        request: Request<pb::ResignRequest>,
    ) -> Result<Response<pb::ResignResponse>, Status> {
        self.act(request).await
    }

    async fn apply_timer(
        &self,
        request: Request<pb::ApplyTimerRequest>,
    ) -> Result<Response<pb::ApplyTimerResponse>, Status> {
        self.fire_timer(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn report_presence(
        &self,
        request: Request<pb::ReportPresenceRequest>,
    ) -> Result<Response<pb::ReportPresenceResponse>, Status> {
        self.record_presence(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn get_game(
        &self,
        request: Request<pb::GetGameRequest>,
    ) -> Result<Response<pb::GetGameResponse>, Status> {
        self.game_view(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn list_games(
        &self,
        request: Request<pb::ListGamesRequest>,
    ) -> Result<Response<pb::ListGamesResponse>, Status> {
        self.games_of_player(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn list_ended_games(
        &self,
        request: Request<pb::ListEndedGamesRequest>,
    ) -> Result<Response<pb::ListEndedGamesResponse>, Status> {
        self.ended_games(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn list_legal_moves(
        &self,
        request: Request<pb::ListLegalMovesRequest>,
    ) -> Result<Response<pb::ListLegalMovesResponse>, Status> {
        self.legal_moves(request.into_inner())
            .await
            .map(Response::new)
    }

    type WatchGameStream = EventStream;

    async fn watch_game(
        &self,
        request: Request<pb::WatchGameRequest>,
    ) -> Result<Response<Self::WatchGameStream>, Status> {
        self.watch(request.into_inner()).await.map(Response::new)
    }

    type WatchLifecycleStream = crate::lifecycle::FactStream;

    async fn watch_lifecycle(
        &self,
        request: Request<pb::WatchLifecycleRequest>,
    ) -> Result<Response<Self::WatchLifecycleStream>, Status> {
        self.follow_lifecycle(request.into_inner())
            .await
            .map(Response::new)
    }
}
