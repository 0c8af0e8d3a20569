//! The gateway's referee in one process: this process's session, called with the requests'
//! own values (`hidden_front_gateway::Referee`).
//!
//! Before, the gateway reached its own session as a tower service behind the port's layers: every
//! action's request and answer, and every event of every followed game, were protobuf-encoded,
//! wrapped in an HTTP request or body and decoded again on the other side. Here an action is the
//! session's handler called with its request value, and a followed game is
//! [`SessionService::watch_items`]: the engine's events as the store gave them. What the port's
//! layers guaranteed is kept: the error contract (every refusal carries a reason:
//! [`ensure_reason`]), the per-method metrics (the same `hf_grpc_requests_total` and
//! `hf_grpc_request_duration_seconds` series, their handles made once), and the command's
//! span (`session.command`, inside the Connect request's or the RPC's span).

use super::grpc_metrics::MethodCalls;
use futures_util::StreamExt;
use hidden_front_api_error::{ApiError, Reason, ensure_reason};
use hidden_front_gateway::{PlayerAction, Referee, UpstreamItem, UpstreamStream};
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_server::SessionService as _;
use hidden_front_rules::Rules;
use hidden_front_session::{SessionService, WatchItem};
use std::sync::Arc;
use std::time::Instant;
use tonic::{Request, Status};
use tracing::Instrument;
use uuid::Uuid;

/// The session's service name, as its port's metrics label it.
const SERVICE: &str = "hiddenfront.v1.SessionService";

/// This process's session as the gateway's referee.
pub(crate) struct LocalReferee {
    session: Arc<SessionService>,
    calls: Calls,
}

/// The metric handles of each method the referee calls, made once.
struct Calls {
    reshuffle: MethodCalls,
    swap: MethodCalls,
    deploy: MethodCalls,
    confirm: MethodCalls,
    play: MethodCalls,
    offer_draw: MethodCalls,
    answer_draw: MethodCalls,
    resign: MethodCalls,
    watch: Arc<MethodCalls>,
}

/// Records a followed game's stream when it is dropped (ended or abandoned).
struct StreamEnd {
    calls: Arc<MethodCalls>,
    started: Instant,
    error: Option<Status>,
}

impl Drop for StreamEnd {
    fn drop(&mut self) {
        self.calls.record(self.error.as_ref(), self.started);
    }
}

/// A followed game's stream that keeps its [`StreamEnd`] and the error it ended with.
struct Counted {
    items: UpstreamStream,
    end: StreamEnd,
}

impl futures_util::Stream for Counted {
    type Item = Result<UpstreamItem, Status>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let polled = self.items.poll_next_unpin(cx);
        if let std::task::Poll::Ready(Some(Err(status))) = &polled {
            self.end.error = Some(status.clone());
        }
        polled
    }
}

impl LocalReferee {
    /// The referee that is `session`.
    pub(crate) fn new(session: Arc<SessionService>) -> LocalReferee {
        let method = |name| MethodCalls::new(SERVICE, name);
        LocalReferee {
            session,
            calls: Calls {
                reshuffle: method("ReshuffleDeployment"),
                swap: method("SwapPieces"),
                deploy: method("SetDeployment"),
                confirm: method("ConfirmDeployment"),
                play: method("SubmitMove"),
                offer_draw: method("OfferDraw"),
                answer_draw: method("AnswerDraw"),
                resign: method("Resign"),
                watch: Arc::new(method("WatchGame")),
            },
        }
    }
}

impl Calls {
    /// The handles of the method that judges `action`.
    fn of(&self, action: &PlayerAction) -> &MethodCalls {
        match action {
            PlayerAction::Reshuffle => &self.reshuffle,
            PlayerAction::Swap { .. } => &self.swap,
            PlayerAction::Deploy { .. } => &self.deploy,
            PlayerAction::Confirm => &self.confirm,
            PlayerAction::Play(_) => &self.play,
            PlayerAction::ProposeDraw => &self.offer_draw,
            PlayerAction::RespondDraw { .. } => &self.answer_draw,
            PlayerAction::Concede => &self.resign,
        }
    }
}

impl LocalReferee {
    /// `action` judged by the session's handler of its method, called with the request's value.
    async fn call(
        &self,
        context: pb::CommandContext,
        action: PlayerAction,
    ) -> Result<pb::CommandResult, Status> {
        let session = &*self.session;
        let ctx = Some(context);
        let result = match action {
            PlayerAction::Reshuffle => session
                .reshuffle_deployment(Request::new(pb::ReshuffleDeploymentRequest {
                    context: ctx,
                }))
                .await
                .map(|r| r.into_inner().result),
            PlayerAction::Swap { square_a, square_b } => session
                .swap_pieces(Request::new(pb::SwapPiecesRequest {
                    context: ctx,
                    square_a,
                    square_b,
                }))
                .await
                .map(|r| r.into_inner().result),
            PlayerAction::Deploy { placements } => {
                let side = ctx.as_ref().map_or(0, |c| c.side);
                session
                    .set_deployment(Request::new(pb::SetDeploymentRequest {
                        context: ctx,
                        deployment: Some(pb::Deployment { side, placements }),
                    }))
                    .await
                    .map(|r| r.into_inner().result)
            }
            PlayerAction::Confirm => session
                .confirm_deployment(Request::new(pb::ConfirmDeploymentRequest { context: ctx }))
                .await
                .map(|r| r.into_inner().result),
            PlayerAction::Play(mv) => session
                .submit_move(Request::new(pb::SubmitMoveRequest {
                    context: ctx,
                    r#move: mv,
                }))
                .await
                .map(|r| r.into_inner().result),
            PlayerAction::ProposeDraw => session
                .offer_draw(Request::new(pb::OfferDrawRequest { context: ctx }))
                .await
                .map(|r| r.into_inner().result),
            PlayerAction::RespondDraw { accept } => session
                .answer_draw(Request::new(pb::AnswerDrawRequest {
                    context: ctx,
                    accept,
                }))
                .await
                .map(|r| r.into_inner().result),
            PlayerAction::Concede => session
                .resign(Request::new(pb::ResignRequest { context: ctx }))
                .await
                .map(|r| r.into_inner().result),
        };
        result.map_err(ensure_reason).and_then(|result| {
            result.ok_or_else(|| {
                ApiError::new(
                    Reason::SessionUnavailable,
                    "the session answered without a result",
                )
                .into()
            })
        })
    }
}

#[tonic::async_trait]
impl Referee for LocalReferee {
    async fn act(
        &self,
        context: pb::CommandContext,
        action: PlayerAction,
    ) -> Result<pb::CommandResult, Status> {
        let started = Instant::now();
        let calls = self.calls.of(&action);
        // The span the session's port opens for the call, with its status.
        let span = calls.span();
        let result = self.call(context, action).instrument(span.clone()).await;
        hidden_front_telemetry::record_rpc_status(
            &span,
            result
                .as_ref()
                .map_or_else(Status::code, |_| tonic::Code::Ok),
        );
        calls.record(result.as_ref().err(), started);
        result
    }

    async fn watch(
        &self,
        game_id: Uuid,
        _rules: Rules,
        from_seq: u64,
    ) -> Result<UpstreamStream, Status> {
        let started = Instant::now();
        let items = match self.session.watch_items(game_id, from_seq, true).await {
            Ok(items) => items,
            Err(status) => {
                let status = ensure_reason(status);
                self.calls.watch.record(Some(&status), started);
                return Err(status);
            }
        };
        // Counted when the stream ends, as the port counts a stream, with how it ended.
        let items = items.map(|item| {
            item.map(|item| match item {
                WatchItem::Event(watched) => UpstreamItem::Event {
                    seq: watched.seq,
                    event: watched.event,
                    trace_parent: watched.trace_parent.unwrap_or_default(),
                },
                WatchItem::Status(status) => UpstreamItem::Status(status),
            })
            .map_err(ensure_reason)
        });
        Ok(Counted {
            items: items.boxed(),
            end: StreamEnd {
                calls: Arc::clone(&self.calls.watch),
                started,
                error: None,
            },
        }
        .boxed())
    }
}
