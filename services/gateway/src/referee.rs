//! The referee as the gateway reaches it on its hot path: a player's action judged in its seat,
//! and a game's full-information log followed by the hub.
//!
//! Between processes that is the session's gRPC API ([`RemoteReferee`]: `SubmitMove` and the
//! other action calls, `WatchGame`). In one process the application hands the gateway the
//! session itself (`crates/hidden-front/src/app/referee.rs`), so an action's request and answer
//! and every event cross as Rust values: no protobuf encoding, no HTTP request, no channel hop.
//! Either way the same session handlers judge, and the gateway reduces the session's failures the
//! same way (`Gateway::act`, the hub's retry rule).

use crate::action::PlayerAction;
use crate::gateway::SessionClient;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Event, Rules};
use tonic::Status;
use uuid::Uuid;

/// One item of a followed game's log.
#[derive(Debug)]
pub enum UpstreamItem {
    /// An event, with full information.
    Event {
        /// Its position in the log.
        seq: u64,
        /// The engine's event.
        event: Event,
        /// The W3C traceparent of the command that caused it (empty if untraced).
        trace_parent: String,
    },
    /// The game's status, sent after every event up to its version.
    Status(pb::GameStatus),
    /// An item the referee sent that cannot be read: following the game cannot go on (a broken
    /// stream, by contrast, is an `Err` and is followed again).
    Unusable(Status),
}

/// A followed game's log, then its live events and statuses.
pub type UpstreamStream = BoxStream<'static, Result<UpstreamItem, Status>>;

/// What the gateway needs of the referee on every move.
#[tonic::async_trait]
pub trait Referee: Send + Sync + 'static {
    /// Judges `action` in `context`'s seat: the session's answer, its events as that seat sees
    /// them.
    async fn act(
        &self,
        context: pb::CommandContext,
        action: PlayerAction,
    ) -> Result<pb::CommandResult, Status>;

    /// The log of game `game_id` (played under `rules`) from `from_seq` with full information,
    /// then live events and the game's status whenever it changes.
    async fn watch(
        &self,
        game_id: Uuid,
        rules: Rules,
        from_seq: u64,
    ) -> Result<UpstreamStream, Status>;
}

/// The referee of another process, over the session's gRPC API.
#[derive(Clone)]
pub struct RemoteReferee {
    session: SessionClient,
}

impl RemoteReferee {
    /// The session behind `session`.
    pub fn new(session: SessionClient) -> RemoteReferee {
        RemoteReferee { session }
    }
}

#[tonic::async_trait]
impl Referee for RemoteReferee {
    async fn act(
        &self,
        context: pb::CommandContext,
        action: PlayerAction,
    ) -> Result<pb::CommandResult, Status> {
        let ctx = Some(context);
        let mut session = self.session.clone();
        let result = match action {
            PlayerAction::Reshuffle => session
                .reshuffle_deployment(pb::ReshuffleDeploymentRequest { context: ctx })
                .await
                .map(|r| r.into_inner().result),
            PlayerAction::Swap { square_a, square_b } => session
                .swap_pieces(pb::SwapPiecesRequest {
                    context: ctx,
                    square_a,
                    square_b,
                })
                .await
                .map(|r| r.into_inner().result),
            PlayerAction::Deploy { placements } => {
                let side = ctx.as_ref().map_or(0, |c| c.side);
                session
                    .set_deployment(pb::SetDeploymentRequest {
                        context: ctx,
                        deployment: Some(pb::Deployment { side, placements }),
                    })
                    .await
                    .map(|r| r.into_inner().result)
            }
            PlayerAction::Confirm => session
                .confirm_deployment(pb::ConfirmDeploymentRequest { context: ctx })
                .await
                .map(|r| r.into_inner().result),
            PlayerAction::Play(mv) => session
                .submit_move(pb::SubmitMoveRequest {
                    context: ctx,
                    r#move: mv,
                })
                .await
                .map(|r| r.into_inner().result),
            PlayerAction::ProposeDraw => session
                .offer_draw(pb::OfferDrawRequest { context: ctx })
                .await
                .map(|r| r.into_inner().result),
            PlayerAction::RespondDraw { accept } => session
                .answer_draw(pb::AnswerDrawRequest {
                    context: ctx,
                    accept,
                })
                .await
                .map(|r| r.into_inner().result),
            PlayerAction::Concede => session
                .resign(pb::ResignRequest { context: ctx })
                .await
                .map(|r| r.into_inner().result),
        }?;
        result.ok_or_else(|| {
            hidden_front_api_error::ApiError::new(
                hidden_front_api_error::Reason::SessionUnavailable,
                "the session answered without a result",
            )
            .into()
        })
    }

    async fn watch(
        &self,
        game_id: Uuid,
        rules: Rules,
        from_seq: u64,
    ) -> Result<UpstreamStream, Status> {
        let request = pb::WatchGameRequest {
            game_id: game_id.to_string(),
            from_seq,
            // Connections that asked for the status get it from here, not a read each.
            with_status: true,
        };
        let stream = self.session.clone().watch_game(request).await?.into_inner();
        Ok(stream
            .map(move |item| item.map(|item| from_proto(&rules, item)))
            .boxed())
    }
}

/// One `WatchGame` item as the hub keeps it: the engine's event rebuilt from its versioned
/// protobuf form, or the status.
fn from_proto(rules: &Rules, item: pb::WatchGameResponse) -> UpstreamItem {
    if let Some(status) = item.status {
        return UpstreamItem::Status(status);
    }
    let Some(upstream) = item.event.as_ref() else {
        return UpstreamItem::Unusable(hidden_front_api_error::internal(
            "the session sent a watch item without its event",
        ));
    };
    let seq = upstream.seq;
    match hidden_front_wire::engine_event_from_proto(rules, upstream) {
        Ok(event) => UpstreamItem::Event {
            seq,
            event,
            trace_parent: item.trace_parent,
        },
        Err(e) => UpstreamItem::Unusable(hidden_front_api_error::internal(format!(
            "event {seq} does not decode: {e}"
        ))),
    }
}
