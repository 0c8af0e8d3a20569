//! The gRPC `PlayerService`: authentication from the `authorization` metadata, then the
//! transport-independent [`Gateway`] operations.

use crate::action::ActionMessage;
use crate::gateway::Gateway;
use futures_util::Stream;
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::player_service_server::PlayerService;
use std::pin::Pin;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

/// `hiddenfront.v1.PlayerService` over a [`Gateway`].
#[derive(Clone)]
pub struct PlayerApi {
    gateway: Gateway,
}

impl PlayerApi {
    /// The gRPC face of `gateway`.
    pub fn new(gateway: Gateway) -> PlayerApi {
        PlayerApi { gateway }
    }

    fn player<T>(&self, request: &Request<T>) -> Result<crate::auth::Player, Status> {
        let values = request.metadata().get_all("authorization");
        self.gateway
            .authenticate_headers(values.iter().map(|value| value.as_bytes()))
    }

    /// One action RPC: the player from the metadata, then the action the message asks for.
    async fn act<M: ActionMessage>(
        &self,
        request: Request<M>,
    ) -> Result<Response<M::Response>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway.perform(&player, request.into_inner()).await?,
        ))
    }
}

/// The response stream of `Connect`.
type ConnectStream =
    Pin<Box<dyn Stream<Item = Result<pb::ConnectResponse, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl PlayerService for PlayerApi {
    type ConnectStream = ConnectStream;

    /// One connection for everything the player does: the requests are read and answered by a
    /// task of their own; each batch of ready messages is one response.
    async fn connect(
        &self,
        request: Request<Streaming<pb::ConnectRequest>>,
    ) -> Result<Response<Self::ConnectStream>, Status> {
        let player = self.player(&request)?;
        let (connection, writer) = self.gateway.connection(player);
        tokio::spawn(connection.serve(request.into_inner()));
        let responses = futures_util::stream::unfold(writer, |mut writer| async move {
            let messages = writer.next().await?;
            Some((Ok(pb::ConnectResponse { messages }), writer))
        });
        Ok(Response::new(Box::pin(responses)))
    }

    type SubscribeStream = ReceiverStream<Result<pb::SubscribeResponse, Status>>;

    async fn subscribe(
        &self,
        request: Request<pb::SubscribeRequest>,
    ) -> Result<Response<Self::SubscribeStream>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .subscribe(&player, request.into_inner())
                .await?,
        ))
    }

    async fn get_game(
        &self,
        request: Request<pb::PlayerServiceGetGameRequest>,
    ) -> Result<Response<pb::PlayerServiceGetGameResponse>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway.get_game(&player, request.into_inner()).await?,
        ))
    }

    async fn list_my_games(
        &self,
        request: Request<pb::ListMyGamesRequest>,
    ) -> Result<Response<pb::ListMyGamesResponse>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .list_my_games(&player, request.into_inner())
                .await?,
        ))
    }

    async fn reshuffle(
        &self,
        request: Request<pb::ReshuffleRequest>,
    ) -> Result<Response<pb::ReshuffleResponse>, Status> {
        self.act(request).await
    }

    async fn swap(
        &self,
        request: Request<pb::SwapRequest>,
    ) -> Result<Response<pb::SwapResponse>, Status> {
        self.act(request).await
    }

    async fn deploy(
        &self,
        request: Request<pb::DeployRequest>,
    ) -> Result<Response<pb::DeployResponse>, Status> {
        self.act(request).await
    }

    async fn confirm(
        &self,
        request: Request<pb::ConfirmRequest>,
    ) -> Result<Response<pb::ConfirmResponse>, Status> {
        self.act(request).await
    }

    async fn play(
        &self,
        request: Request<pb::PlayRequest>,
    ) -> Result<Response<pb::PlayResponse>, Status> {
        self.act(request).await
    }

    async fn legal_moves(
        &self,
        request: Request<pb::LegalMovesRequest>,
    ) -> Result<Response<pb::LegalMovesResponse>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .legal_moves(&player, request.into_inner())
                .await?,
        ))
    }

    async fn propose_draw(
        &self,
        request: Request<pb::ProposeDrawRequest>,
    ) -> Result<Response<pb::ProposeDrawResponse>, Status> {
        self.act(request).await
    }

    async fn respond_draw(
        &self,
        request: Request<pb::RespondDrawRequest>,
    ) -> Result<Response<pb::RespondDrawResponse>, Status> {
        self.act(request).await
    }

    async fn concede(
        &self,
        request: Request<pb::ConcedeRequest>,
    ) -> Result<Response<pb::ConcedeResponse>, Status> {
        self.act(request).await
    }

    async fn find_match(
        &self,
        request: Request<pb::FindMatchRequest>,
    ) -> Result<Response<pb::FindMatchResponse>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .find_match(&player, request.into_inner())
                .await?,
        ))
    }

    async fn cancel_match(
        &self,
        request: Request<pb::CancelMatchRequest>,
    ) -> Result<Response<pb::CancelMatchResponse>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .cancel_match(&player, request.into_inner())
                .await?,
        ))
    }

    async fn create_invite(
        &self,
        request: Request<pb::PlayerServiceCreateInviteRequest>,
    ) -> Result<Response<pb::PlayerServiceCreateInviteResponse>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .create_invite(&player, request.into_inner())
                .await?,
        ))
    }

    async fn accept_invite(
        &self,
        request: Request<pb::PlayerServiceAcceptInviteRequest>,
    ) -> Result<Response<pb::PlayerServiceAcceptInviteResponse>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .accept_invite(&player, request.into_inner())
                .await?,
        ))
    }

    async fn cancel_invite(
        &self,
        request: Request<pb::PlayerServiceCancelInviteRequest>,
    ) -> Result<Response<pb::PlayerServiceCancelInviteResponse>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .cancel_invite(&player, request.into_inner())
                .await?,
        ))
    }

    async fn play_computer(
        &self,
        request: Request<pb::PlayerServicePlayComputerRequest>,
    ) -> Result<Response<pb::PlayerServicePlayComputerResponse>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .play_computer(&player, request.into_inner())
                .await?,
        ))
    }

    type WatchLobbyStream = ReceiverStream<Result<pb::WatchLobbyResponse, Status>>;

    async fn watch_lobby(
        &self,
        request: Request<pb::WatchLobbyRequest>,
    ) -> Result<Response<Self::WatchLobbyStream>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .watch_lobby(&player, request.into_inner())
                .await?,
        ))
    }

    async fn list_tournaments(
        &self,
        request: Request<pb::PlayerServiceListTournamentsRequest>,
    ) -> Result<Response<pb::PlayerServiceListTournamentsResponse>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .list_tournaments(&player, request.into_inner())
                .await?,
        ))
    }

    async fn join_tournament(
        &self,
        request: Request<pb::PlayerServiceJoinTournamentRequest>,
    ) -> Result<Response<pb::PlayerServiceJoinTournamentResponse>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .join_tournament(&player, request.into_inner())
                .await?,
        ))
    }

    async fn withdraw_tournament(
        &self,
        request: Request<pb::PlayerServiceWithdrawTournamentRequest>,
    ) -> Result<Response<pb::PlayerServiceWithdrawTournamentResponse>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .withdraw_tournament(&player, request.into_inner())
                .await?,
        ))
    }

    async fn get_tournament(
        &self,
        request: Request<pb::PlayerServiceGetTournamentRequest>,
    ) -> Result<Response<pb::PlayerServiceGetTournamentResponse>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .get_tournament(&player, request.into_inner())
                .await?,
        ))
    }

    async fn get_my_rating(
        &self,
        request: Request<pb::GetMyRatingRequest>,
    ) -> Result<Response<pb::GetMyRatingResponse>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .get_my_rating(&player, request.into_inner())
                .await?,
        ))
    }

    async fn export_replay(
        &self,
        request: Request<pb::ExportReplayRequest>,
    ) -> Result<Response<pb::ExportReplayResponse>, Status> {
        let player = self.player(&request)?;
        Ok(Response::new(
            self.gateway
                .export_replay(&player, request.into_inner())
                .await?,
        ))
    }
}
