//! What each request of a connection does: the same [`Gateway`](crate::Gateway) operation the
//! unary method calls, its answer the same response message, inside an `Answer` with the
//! request's id. Follows and `unfollow` are the connection's own (`connection.rs`).

use super::connection::{Connection, Done};
use super::encoding::{answer, refusal};
use crate::action::ActionMessage;
use hidden_front_api_error::internal;
use hidden_front_proto::v1 as pb;
use pb::answer::Response as A;
use pb::connect_request::Request as R;
use std::sync::Arc;
use tonic::Status;
use tracing::Instrument;

/// The name of a request, for its span.
fn kind(request: &R) -> &'static str {
    match request {
        R::Follow(_) => "follow",
        R::Unfollow(_) => "unfollow",
        R::GetGame(_) => "get_game",
        R::Reshuffle(_) => "reshuffle",
        R::Swap(_) => "swap",
        R::Deploy(_) => "deploy",
        R::Confirm(_) => "confirm",
        R::Play(_) => "play",
        R::ProposeDraw(_) => "propose_draw",
        R::RespondDraw(_) => "respond_draw",
        R::Concede(_) => "concede",
        R::LegalMoves(_) => "legal_moves",
        R::FollowLobby(_) => "follow_lobby",
        R::ListMyGames(_) => "list_my_games",
        R::FindMatch(_) => "find_match",
        R::CancelMatch(_) => "cancel_match",
        R::CreateInvite(_) => "create_invite",
        R::AcceptInvite(_) => "accept_invite",
        R::CancelInvite(_) => "cancel_invite",
        R::PlayComputer(_) => "play_computer",
        R::GetMyRating(_) => "get_my_rating",
        R::ExportReplay(_) => "export_replay",
        R::Authenticate(_) => "authenticate",
        R::ListTournaments(_) => "list_tournaments",
        R::JoinTournament(_) => "join_tournament",
        R::WithdrawTournament(_) => "withdraw_tournament",
        R::GetTournament(_) => "get_tournament",
    }
}

impl Connection {
    /// Answers request `id` (any but a follow, `unfollow` and `authenticate`), in a span of its
    /// own: a connection lives for hours, and each request is its own trace (a move's continues
    /// through the session to every follower's delivery).
    pub(super) async fn answer(self: Arc<Self>, id: u64, request: R) -> Done {
        let span = tracing::info_span!(
            parent: None,
            "gateway.request",
            otel.kind = "server",
            request = kind(&request),
            request_id = id,
        );
        let message = match self.response(request).instrument(span).await {
            Ok(response) => answer(id, response),
            Err(status) => refusal(id, &status),
        };
        Done::Answered(id, message)
    }

    async fn response(&self, request: R) -> Result<A, Status> {
        let gateway = &self.gateway;
        let player = &self.player;
        Ok(match request {
            R::GetGame(r) => A::GetGame(gateway.get_game(player, r).await?),
            R::Reshuffle(r) => A::Action(gateway.act(player, r.into_request()).await?),
            R::Swap(r) => A::Action(gateway.act(player, r.into_request()).await?),
            R::Deploy(r) => A::Action(gateway.act(player, r.into_request()).await?),
            R::Confirm(r) => A::Action(gateway.act(player, r.into_request()).await?),
            R::Play(r) => A::Action(gateway.act(player, r.into_request()).await?),
            R::ProposeDraw(r) => A::Action(gateway.act(player, r.into_request()).await?),
            R::RespondDraw(r) => A::Action(gateway.act(player, r.into_request()).await?),
            R::Concede(r) => A::Action(gateway.act(player, r.into_request()).await?),
            R::LegalMoves(r) => A::LegalMoves(gateway.legal_moves(player, r).await?),
            R::ListMyGames(r) => A::ListMyGames(gateway.list_my_games(player, r).await?),
            R::FindMatch(r) => A::FindMatch(gateway.find_match(player, r).await?),
            R::CancelMatch(r) => A::CancelMatch(gateway.cancel_match(player, r).await?),
            R::CreateInvite(r) => A::CreateInvite(gateway.create_invite(player, r).await?),
            R::AcceptInvite(r) => A::AcceptInvite(gateway.accept_invite(player, r).await?),
            R::CancelInvite(r) => A::CancelInvite(gateway.cancel_invite(player, r).await?),
            R::PlayComputer(r) => A::PlayComputer(gateway.play_computer(player, r).await?),
            R::GetMyRating(r) => A::GetMyRating(gateway.get_my_rating(player, r).await?),
            R::ExportReplay(r) => A::ExportReplay(gateway.export_replay(player, r).await?),
            R::ListTournaments(r) => A::ListTournaments(gateway.list_tournaments(player, r).await?),
            R::JoinTournament(r) => A::JoinTournament(gateway.join_tournament(player, r).await?),
            R::WithdrawTournament(r) => {
                A::WithdrawTournament(gateway.withdraw_tournament(player, r).await?)
            }
            R::GetTournament(r) => A::GetTournament(gateway.get_tournament(player, r).await?),
            R::Follow(_) | R::FollowLobby(_) | R::Unfollow(_) | R::Authenticate(_) => {
                return Err(internal("this request is not answered here"));
            }
        })
    }
}
