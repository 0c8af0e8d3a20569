//! The matchmaking operations of the gateway: forwarded to the matchmaking service for the
//! authenticated player (requests name no player: the token's subject is the player). Without a
//! matchmaking client in [`GatewayConfig`](super::GatewayConfig) each answers `UNAVAILABLE`.

use super::{Gateway, StreamGauge};
use crate::auth::Player;
use hidden_front_api_error::{ApiError, Reason, ensure_reason};
use hidden_front_proto::v1 as pb;
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Status};

/// A matchmaking error as the player sees it: internal failures lose their details.
fn upstream_status(status: Status) -> Status {
    match status.code() {
        Code::Internal | Code::Unknown | Code::DataLoss => {
            tracing::error!(error = %status, "matchmaking failure");
            ApiError::new(
                Reason::MatchmakingUnavailable,
                "the matchmaking service failed; retry with the same id",
            )
            .into()
        }
        Code::Unavailable => ApiError::new(
            Reason::MatchmakingUnavailable,
            "the matchmaking service is unavailable; retry with the same id",
        )
        .into(),
        _ => ensure_reason(status),
    }
}

impl Gateway {
    /// The matchmaking client, or `UNAVAILABLE` when none is configured.
    fn matchmaking(&self) -> Result<super::MatchmakingClient, Status> {
        self.inner.config.matchmaking.clone().ok_or_else(|| {
            ApiError::new(
                Reason::MatchmakingUnavailable,
                "matchmaking is not configured on this gateway",
            )
            .into()
        })
    }

    /// Joins a queue for the player. Guests and accounts marked as bots may play casual games
    /// only.
    pub async fn find_match(
        &self,
        player: &Player,
        request: pb::FindMatchRequest,
    ) -> Result<pb::FindMatchResponse, Status> {
        self.inner.rate.check(&player.id)?;
        let mut mm = self.matchmaking()?;
        if player.guest && request.queue.as_ref().is_some_and(|q| q.rated) {
            return Err(ApiError::new(
                Reason::NotAllowed,
                "guests may play casual games only; sign in for rated games",
            )
            .into());
        }
        if player.bot && request.queue.as_ref().is_some_and(|q| q.rated) {
            return Err(ApiError::new(
                Reason::NotAllowed,
                "accounts marked as bots may play casual games only: a program never moves a \
                 person's rating",
            )
            .into());
        }
        let ticket = mm
            .enqueue(pb::EnqueueRequest {
                player: player.id.clone(),
                ticket_id: request.ticket_id,
                queue: request.queue,
                ttl_seconds: request.ttl_seconds,
            })
            .await
            .map_err(upstream_status)?
            .into_inner()
            .ticket;
        Ok(pb::FindMatchResponse { ticket })
    }

    /// Leaves a queue.
    pub async fn cancel_match(
        &self,
        player: &Player,
        request: pb::CancelMatchRequest,
    ) -> Result<pb::CancelMatchResponse, Status> {
        self.inner.rate.check(&player.id)?;
        let ticket = self
            .matchmaking()?
            .cancel_ticket(pb::CancelTicketRequest {
                player: player.id.clone(),
                ticket_id: request.ticket_id,
            })
            .await
            .map_err(upstream_status)?
            .into_inner()
            .ticket;
        Ok(pb::CancelMatchResponse { ticket })
    }

    /// Creates a private invite.
    pub async fn create_invite(
        &self,
        player: &Player,
        request: pb::PlayerServiceCreateInviteRequest,
    ) -> Result<pb::PlayerServiceCreateInviteResponse, Status> {
        self.inner.rate.check(&player.id)?;
        let invite = self
            .matchmaking()?
            .create_invite(pb::CreateInviteRequest {
                player: player.id.clone(),
                invite_id: request.invite_id,
                rules: request.rules,
                time_control: request.time_control,
            })
            .await
            .map_err(upstream_status)?
            .into_inner()
            .invite;
        Ok(pb::PlayerServiceCreateInviteResponse { invite })
    }

    /// Accepts an invite: the game starts.
    pub async fn accept_invite(
        &self,
        player: &Player,
        request: pb::PlayerServiceAcceptInviteRequest,
    ) -> Result<pb::PlayerServiceAcceptInviteResponse, Status> {
        self.inner.rate.check(&player.id)?;
        let answer = self
            .matchmaking()?
            .accept_invite(pb::AcceptInviteRequest {
                player: player.id.clone(),
                code: request.code,
            })
            .await
            .map_err(upstream_status)?
            .into_inner();
        Ok(pb::PlayerServiceAcceptInviteResponse {
            game_id: answer.game_id,
            seat: answer.seat,
            opponent: answer.opponent,
        })
    }

    /// Withdraws one's own open invite.
    pub async fn cancel_invite(
        &self,
        player: &Player,
        request: pb::PlayerServiceCancelInviteRequest,
    ) -> Result<pb::PlayerServiceCancelInviteResponse, Status> {
        self.inner.rate.check(&player.id)?;
        let invite = self
            .matchmaking()?
            .cancel_invite(pb::CancelInviteRequest {
                player: player.id.clone(),
                code: request.code,
            })
            .await
            .map_err(upstream_status)?
            .into_inner()
            .invite;
        Ok(pb::PlayerServiceCancelInviteResponse { invite })
    }

    /// Starts a game against the computer.
    pub async fn play_computer(
        &self,
        player: &Player,
        request: pb::PlayerServicePlayComputerRequest,
    ) -> Result<pb::PlayerServicePlayComputerResponse, Status> {
        self.inner.rate.check(&player.id)?;
        let answer = self
            .matchmaking()?
            .play_computer(pb::PlayComputerRequest {
                player: player.id.clone(),
                request_id: request.request_id,
                rules: request.rules,
                seat: request.seat,
                level: request.level,
                time_control: request.time_control,
            })
            .await
            .map_err(upstream_status)?
            .into_inner();
        Ok(pb::PlayerServicePlayComputerResponse {
            game_id: answer.game_id,
            seat: answer.seat,
            level: answer.level,
        })
    }

    /// Tournaments open to players or with the player in them.
    pub async fn list_tournaments(
        &self,
        player: &Player,
        _request: pb::PlayerServiceListTournamentsRequest,
    ) -> Result<pb::PlayerServiceListTournamentsResponse, Status> {
        self.inner.rate.check(&player.id)?;
        let tournaments = self
            .matchmaking()?
            .list_tournaments(pb::ListTournamentsRequest {
                player: player.id.clone(),
            })
            .await
            .map_err(upstream_status)?
            .into_inner()
            .tournaments;
        Ok(pb::PlayerServiceListTournamentsResponse { tournaments })
    }

    /// Enters the player in a tournament open to players. Matchmaking decides, from the
    /// tournament, whether a guest or a bot may.
    pub async fn join_tournament(
        &self,
        player: &Player,
        request: pb::PlayerServiceJoinTournamentRequest,
    ) -> Result<pb::PlayerServiceJoinTournamentResponse, Status> {
        self.inner.rate.check(&player.id)?;
        let tournament = self
            .matchmaking()?
            .join_tournament(pb::JoinTournamentRequest {
                player: player.id.clone(),
                tournament_id: request.tournament_id,
                guest: player.guest,
                bot: player.bot,
            })
            .await
            .map_err(upstream_status)?
            .into_inner()
            .tournament;
        Ok(pb::PlayerServiceJoinTournamentResponse { tournament })
    }

    /// Takes the player out of a tournament before its start.
    pub async fn withdraw_tournament(
        &self,
        player: &Player,
        request: pb::PlayerServiceWithdrawTournamentRequest,
    ) -> Result<pb::PlayerServiceWithdrawTournamentResponse, Status> {
        self.inner.rate.check(&player.id)?;
        let tournament = self
            .matchmaking()?
            .withdraw_tournament(pb::WithdrawTournamentRequest {
                player: player.id.clone(),
                tournament_id: request.tournament_id,
            })
            .await
            .map_err(upstream_status)?
            .into_inner()
            .tournament;
        Ok(pb::PlayerServiceWithdrawTournamentResponse { tournament })
    }

    /// A tournament with its rounds and standings.
    pub async fn get_tournament(
        &self,
        player: &Player,
        request: pb::PlayerServiceGetTournamentRequest,
    ) -> Result<pb::PlayerServiceGetTournamentResponse, Status> {
        self.inner.rate.check(&player.id)?;
        let tournament = self
            .matchmaking()?
            .show_tournament(pb::ShowTournamentRequest {
                tournament_id: request.tournament_id,
            })
            .await
            .map_err(upstream_status)?
            .into_inner()
            .tournament;
        Ok(pb::PlayerServiceGetTournamentResponse { tournament })
    }

    /// The player's rating.
    pub async fn get_my_rating(
        &self,
        player: &Player,
        _request: pb::GetMyRatingRequest,
    ) -> Result<pb::GetMyRatingResponse, Status> {
        self.inner.rate.check(&player.id)?;
        let rating = self
            .matchmaking()?
            .get_rating(pb::GetRatingRequest {
                player: player.id.clone(),
            })
            .await
            .map_err(upstream_status)?
            .into_inner()
            .rating;
        Ok(pb::GetMyRatingResponse { rating })
    }

    /// The player's lobby events after `after_seq`, then live ones. Ends with `UNAVAILABLE`
    /// when the gateway shuts down or the matchmaking stream fails: reconnect with the last seq.
    pub async fn watch_lobby(
        &self,
        player: &Player,
        request: pb::WatchLobbyRequest,
    ) -> Result<ReceiverStream<Result<pb::WatchLobbyResponse, Status>>, Status> {
        let mut mm = self.matchmaking()?;
        if self.inner.stopping.is_cancelled() {
            return Err(ApiError::new(
                Reason::ShuttingDown,
                "this gateway is shutting down; connect to another one",
            )
            .into());
        }
        let permit = self.inner.streams.acquire()?;
        let mut upstream = mm
            .watch_player(pb::WatchPlayerRequest {
                player: player.id.clone(),
                after_seq: request.after_seq,
            })
            .await
            .map_err(upstream_status)?
            .into_inner();
        let (tx, rx) = mpsc::channel(32);
        let stopping = self.inner.stopping.clone();
        tokio::spawn(async move {
            let _keep = (permit, StreamGauge::open());
            loop {
                tokio::select! {
                    item = upstream.next() => match item {
                        Some(Ok(item)) => {
                            let item = pb::WatchLobbyResponse { event: item.event };
                            if tx.send(Ok(item)).await.is_err() {
                                return;
                            }
                        }
                        Some(Err(status)) => {
                            let _ = tx.send(Err(upstream_status(status))).await;
                            return;
                        }
                        None => return,
                    },
                    () = stopping.cancelled() => {
                        let _ = tx
                            .send(Err(ApiError::new(
                                Reason::ShuttingDown,
                                "this gateway is shutting down; reconnect with the last seq",
                            )
                            .into()))
                            .await;
                        return;
                    }
                    _ = tx.closed() => return,
                }
            }
        });
        Ok(ReceiverStream::new(rx))
    }
}
