//! What each op does: a decoded text frame is answered here, `auth` and `unsubscribe` at once
//! and every other op as a task of its own (at most `max_requests_in_flight` per connection),
//! each the same [`Gateway`](crate::Gateway) call the gRPC face makes, its answer the same proto
//! response as proto3 JSON.

use super::codec::{Request, decode_message, too_big};
use super::connection::{Conn, Outbound};
use super::messages::result_text;
use hidden_front_api_error::{ApiError, Reason};
use serde_json::Value;
use std::sync::Arc;
use tokio::task::JoinSet;
use tonic::Status;

/// Handles one text frame of an authenticated connection.
pub(super) async fn read_text(conn: &Arc<Conn>, text: &str, tasks: &mut JoinSet<()>) {
    if text.len() > conn.config.max_message_bytes {
        let status = too_big(text.len(), conn.config.max_message_bytes);
        return conn.send_error(&Value::Null, &status).await;
    }
    let (id, request) = match decode_message(text) {
        Ok(decoded) => decoded,
        Err(bad) => {
            return conn.send_error(&bad.id, &bad.to_status()).await;
        }
    };
    match request {
        Request::Auth(_) => {
            let status = ApiError::new(
                Reason::WrongPhase,
                format!(
                    "this connection is authenticated already (as {:?}); open a new one to change player",
                    conn.player.id
                ),
            )
            .into();
            conn.send_error(&id, &status).await;
        }
        Request::Unsubscribe(request) => conn.unsubscribe(&id, request).await,
        request => {
            if tasks.len() >= conn.config.max_requests_in_flight {
                let status = ApiError::new(
                    Reason::RateLimited,
                    format!(
                        "{} requests of this connection are being answered; wait for their answers",
                        conn.config.max_requests_in_flight
                    ),
                )
                .into();
                return conn.send_error(&id, &status).await;
            }
            tasks.spawn(Arc::clone(conn).run_request(id, request));
        }
    }
}

impl Conn {
    /// Answers one request (any but `auth` and `unsubscribe`).
    pub(super) async fn run_request(self: Arc<Self>, id: Value, request: Request) {
        let request = match request {
            Request::Subscribe(request) => return self.subscribe(id, request).await,
            Request::WatchLobby(request) => return self.watch_lobby(id, request).await,
            request => request,
        };
        match self.answer(&id, request).await {
            Ok(text) => {
                self.enqueue(Outbound::plain(text)).await;
            }
            Err(status) => self.send_error(&id, &status).await,
        }
    }

    /// The `result` message of a unary request, its `response` the proto response as JSON.
    pub(super) async fn answer(&self, id: &Value, request: Request) -> Result<String, Status> {
        let gateway = &self.gateway;
        let player = &self.player;
        match request {
            Request::GetGame(r) => Ok(result_text(id, &gateway.get_game(player, r).await?)),
            Request::ListMyGames(r) => {
                Ok(result_text(id, &gateway.list_my_games(player, r).await?))
            }
            Request::LegalMoves(r) => Ok(result_text(id, &gateway.legal_moves(player, r).await?)),
            Request::Reshuffle(r) => Ok(result_text(id, &gateway.perform(player, r).await?)),
            Request::Swap(r) => Ok(result_text(id, &gateway.perform(player, r).await?)),
            Request::Deploy(r) => Ok(result_text(id, &gateway.perform(player, r).await?)),
            Request::Confirm(r) => Ok(result_text(id, &gateway.perform(player, r).await?)),
            Request::Play(r) => Ok(result_text(id, &gateway.perform(player, r).await?)),
            Request::ProposeDraw(r) => Ok(result_text(id, &gateway.perform(player, r).await?)),
            Request::RespondDraw(r) => Ok(result_text(id, &gateway.perform(player, r).await?)),
            Request::Concede(r) => Ok(result_text(id, &gateway.perform(player, r).await?)),
            Request::FindMatch(r) => Ok(result_text(id, &gateway.find_match(player, r).await?)),
            Request::CancelMatch(r) => Ok(result_text(id, &gateway.cancel_match(player, r).await?)),
            Request::CreateInvite(r) => {
                Ok(result_text(id, &gateway.create_invite(player, r).await?))
            }
            Request::AcceptInvite(r) => {
                Ok(result_text(id, &gateway.accept_invite(player, r).await?))
            }
            Request::CancelInvite(r) => {
                Ok(result_text(id, &gateway.cancel_invite(player, r).await?))
            }
            Request::PlayComputer(r) => {
                Ok(result_text(id, &gateway.play_computer(player, r).await?))
            }
            Request::GetMyRating(r) => {
                Ok(result_text(id, &gateway.get_my_rating(player, r).await?))
            }
            Request::ExportReplay(r) => {
                Ok(result_text(id, &gateway.export_replay(player, r).await?))
            }
            Request::ListTournaments(r) => {
                Ok(result_text(id, &gateway.list_tournaments(player, r).await?))
            }
            Request::JoinTournament(r) => {
                Ok(result_text(id, &gateway.join_tournament(player, r).await?))
            }
            Request::WithdrawTournament(r) => Ok(result_text(
                id,
                &gateway.withdraw_tournament(player, r).await?,
            )),
            Request::GetTournament(r) => {
                Ok(result_text(id, &gateway.get_tournament(player, r).await?))
            }
            Request::Auth(_)
            | Request::Subscribe(_)
            | Request::Unsubscribe(_)
            | Request::WatchLobby(_) => {
                Err(ApiError::new(Reason::Internal, "this op is not answered here").into())
            }
        }
    }
}
