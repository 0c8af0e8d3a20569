//! [`SessionService`]: the referee's state (the store, the game cache, the settings) and its
//! gRPC face, `SessionService` of `session.proto`. Each call is answered by the module of its
//! job: `create`, `command` (the player actions), `fire` (`ApplyTimer`), `presence`, `queries`
//! and `watch`.

use crate::cache::GameCache;
use crate::config::SessionConfig;
use crate::counters::is_refusal;
use crate::errors::{invalid_field, missing_field, wire_status};
use crate::metered::MeteredStore;
use crate::watch::EventStream;
use hidden_front_metrics_names as names;
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_server::SessionService as SessionApi;
use hidden_front_rules::Command;
use hidden_front_store::GameStore;
use hidden_front_wire as wire;
use std::sync::Arc;
use std::time::Instant;
use tonic::{Request, Response, Status};

/// The referee service: judges commands with the engine and keeps games in a [`GameStore`].
pub struct SessionService {
    pub(crate) store: Arc<dyn GameStore>,
    pub(crate) cache: GameCache,
    pub(crate) config: SessionConfig,
}

impl SessionService {
    /// A session service over `store` (its failures and append latency are recorded as metrics).
    pub fn new(store: Arc<dyn GameStore>, config: SessionConfig) -> SessionService {
        SessionService {
            store: Arc::new(MeteredStore::new(store)),
            cache: GameCache::new(config.cache_capacity),
            config,
        }
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
        let result = self
            .command("reshuffle", request.into_inner().context, |_, side| {
                Ok(Command::Reshuffle { side })
            })
            .await?;
        Ok(Response::new(pb::ReshuffleDeploymentResponse {
            result: Some(result),
        }))
    }

    async fn swap_pieces(
        &self,
        request: Request<pb::SwapPiecesRequest>,
    ) -> Result<Response<pb::SwapPiecesResponse>, Status> {
        let request = request.into_inner();
        let (a, b) = (request.square_a, request.square_b);
        let result = self
            .command("swap", request.context, |record, side| {
                let rules = Self::rules_of(record);
                Ok(Command::Swap {
                    side,
                    a: wire::square_from_proto(&rules, "square_a", &a).map_err(wire_status)?,
                    b: wire::square_from_proto(&rules, "square_b", &b).map_err(wire_status)?,
                })
            })
            .await?;
        Ok(Response::new(pb::SwapPiecesResponse {
            result: Some(result),
        }))
    }

    async fn set_deployment(
        &self,
        request: Request<pb::SetDeploymentRequest>,
    ) -> Result<Response<pb::SetDeploymentResponse>, Status> {
        let request = request.into_inner();
        let deployment = request
            .deployment
            .ok_or_else(|| missing_field("deployment"))?;
        let result = self
            .command("set_deployment", request.context, |record, side| {
                if deployment.side != pb::Side::Unspecified as i32
                    && deployment.side != wire::side_to_proto(side) as i32
                {
                    return Err(invalid_field(
                        "deployment.side",
                        "must be the acting side (or unspecified)",
                    ));
                }
                let rules = Self::rules_of(record);
                Ok(Command::SetDeployment {
                    deployment: wire::deployment_from_proto(&rules, side, &deployment.placements)
                        .map_err(wire_status)?,
                })
            })
            .await?;
        Ok(Response::new(pb::SetDeploymentResponse {
            result: Some(result),
        }))
    }

    async fn confirm_deployment(
        &self,
        request: Request<pb::ConfirmDeploymentRequest>,
    ) -> Result<Response<pb::ConfirmDeploymentResponse>, Status> {
        let result = self
            .command("confirm", request.into_inner().context, |_, side| {
                Ok(Command::Confirm { side })
            })
            .await?;
        Ok(Response::new(pb::ConfirmDeploymentResponse {
            result: Some(result),
        }))
    }

    async fn submit_move(
        &self,
        request: Request<pb::SubmitMoveRequest>,
    ) -> Result<Response<pb::SubmitMoveResponse>, Status> {
        let started = Instant::now();
        let request = request.into_inner();
        let mv = request.r#move;
        let result = self
            .command("move", request.context, |record, side| {
                let rules = Self::rules_of(record);
                Ok(Command::Move {
                    side,
                    mv: wire::move_from_proto(&rules, mv.as_ref()).map_err(wire_status)?,
                })
            })
            .await;
        metrics::histogram!(names::MOVE_DURATION_SECONDS).record(started.elapsed().as_secs_f64());
        match &result {
            Ok(answer) if !answer.replayed => {
                metrics::counter!(names::MOVES_TOTAL, names::RESULT => names::OK).increment(1);
            }
            Err(status) if is_refusal(status) => {
                metrics::counter!(names::MOVES_TOTAL, names::RESULT => names::REFUSED).increment(1);
            }
            _ => {}
        }
        let result = result?;
        Ok(Response::new(pb::SubmitMoveResponse {
            result: Some(result),
        }))
    }

    async fn offer_draw(
        &self,
        request: Request<pb::OfferDrawRequest>,
    ) -> Result<Response<pb::OfferDrawResponse>, Status> {
        let result = self
            .command("offer_draw", request.into_inner().context, |_, side| {
                Ok(Command::OfferDraw { side })
            })
            .await?;
        Ok(Response::new(pb::OfferDrawResponse {
            result: Some(result),
        }))
    }

    async fn answer_draw(
        &self,
        request: Request<pb::AnswerDrawRequest>,
    ) -> Result<Response<pb::AnswerDrawResponse>, Status> {
        let request = request.into_inner();
        let accept = request.accept;
        let result = self
            .command("answer_draw", request.context, |_, side| {
                Ok(Command::AnswerDraw { side, accept })
            })
            .await?;
        Ok(Response::new(pb::AnswerDrawResponse {
            result: Some(result),
        }))
    }

    async fn resign(
        &self,
        request: Request<pb::ResignRequest>,
    ) -> Result<Response<pb::ResignResponse>, Status> {
        let result = self
            .command("resign", request.into_inner().context, |_, side| {
                Ok(Command::Resign { side })
            })
            .await?;
        Ok(Response::new(pb::ResignResponse {
            result: Some(result),
        }))
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
}
