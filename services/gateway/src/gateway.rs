//! The gateway's operations, independent of the transport: the gRPC `PlayerService` and the
//! WebSocket API both call these, so both have the same semantics.

use crate::action::{ActionMessage, ActionRequest};
use crate::auth::{Authenticator, Player};
use crate::connect::ConnectConfig;
use crate::follow::{FollowSink, Shown};
use crate::hub::{GameHub, Hubs, LogEntry, Seats, Standing};
use crate::limits::{RateLimiter, StreamCap};
use crate::presence::Presence;
use crate::referee::{Referee, RemoteReferee};
use hidden_front_api_error::{ApiError, Reason, ensure_reason, has_reason};
use hidden_front_metrics_names as names;
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::matchmaking_service_client::MatchmakingServiceClient;
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use hidden_front_replay_export::FetchError;
use hidden_front_rules::{Side, Viewer, project};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::{Code, Status};
use uuid::Uuid;

mod lobby;

/// Settings of the gateway.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// This gateway's id in presence reports (unique per process).
    pub gateway_id: String,
    /// How long a presence report holds without renewal.
    pub presence_lease: Duration,
    /// Open streams this process accepts at most.
    pub max_streams: usize,
    /// Events a connection may fall behind the game's log before it is cut off with a resume hint
    /// (once it has also been behind for `max_lag`).
    pub stream_buffer: usize,
    /// How long a connection may stay `stream_buffer` events behind before it is cut off.
    pub max_lag: Duration,
    /// Actions a player may burst.
    pub action_burst: u32,
    /// Actions a player may sustain per second.
    pub actions_per_second: u32,
    /// The matchmaking service; without it the matchmaking operations answer `UNAVAILABLE`.
    pub matchmaking: Option<MatchmakingClient>,
    /// Limits of each `Connect` connection (gRPC and binary WebSocket alike).
    pub connect: ConnectConfig,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            gateway_id: format!("gateway-{}", Uuid::new_v4()),
            presence_lease: Duration::from_secs(30),
            max_streams: 50_000,
            stream_buffer: 256,
            max_lag: Duration::from_secs(5),
            action_burst: 20,
            actions_per_second: 10,
            matchmaking: None,
            connect: ConnectConfig::default(),
        }
    }
}

/// The public door: authenticates, checks seats, forwards to the session, streams views.
#[derive(Clone)]
pub struct Gateway {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) config: GatewayConfig,
    /// Cancelled when the process is shutting down: every stream is told to reconnect.
    pub(crate) stopping: CancellationToken,
    pub(crate) auth: Authenticator,
    pub(crate) session: SessionClient,
    /// Where players' actions are judged.
    pub(crate) referee: Arc<dyn Referee>,
    pub(crate) hubs: Hubs,
    pub(crate) presence: Presence,
    pub(crate) rate: RateLimiter,
    pub(crate) streams: StreamCap,
}

pub(crate) fn parse_game_id(field: &str, text: &str) -> Result<Uuid, Status> {
    hidden_front_wire::game_id_from_proto(field, text).map_err(|e| ApiError::from(e).into())
}

fn seat_of(seats: &Seats, player: &Player) -> Option<Side> {
    if seats.south_player == player.id {
        Some(Side::South)
    } else if seats.north_player == player.id {
        Some(Side::North)
    } else {
        None
    }
}

/// The player id of every computer seat (the matchmaking service's `COMPUTER_PLAYER`): no token
/// may act as it, or its holder would play the computer's seat and see its pieces.
pub const COMPUTER_PLAYER: &str = "computer";

/// Refuses a token whose subject is a reserved player id.
fn refuse_reserved(player: Player) -> Result<Player, Status> {
    if player.id == COMPUTER_PLAYER {
        return Err(ApiError::new(
            Reason::TokenInvalid,
            format!("the player id {COMPUTER_PLAYER:?} is reserved for the computer player"),
        )
        .into());
    }
    Ok(player)
}

/// Counts one open player stream in the [`names::PLAYER_STREAMS`] gauge while it lives.
pub(crate) struct StreamGauge;

impl StreamGauge {
    pub(crate) fn open() -> StreamGauge {
        metrics::gauge!(names::PLAYER_STREAMS).increment(1.0);
        StreamGauge
    }
}

impl Drop for StreamGauge {
    fn drop(&mut self) {
        metrics::gauge!(names::PLAYER_STREAMS).decrement(1.0);
    }
}

/// The gateway's client of the matchmaking service (trace context included).
pub type MatchmakingClient = MatchmakingServiceClient<hidden_front_telemetry::TracedChannel>;

/// The gateway's client of the session service: every call carries the current trace context
/// (W3C `traceparent`), so a player's command is one trace from the gateway into the session.
pub type SessionClient = SessionServiceClient<hidden_front_telemetry::TracedChannel>;

fn not_seated(game_id: Uuid) -> Status {
    ApiError::new(
        Reason::NotSeated,
        format!("you are not seated in game {game_id}; set spectate to watch it"),
    )
    .into()
}

impl Gateway {
    /// A gateway talking to the session service through `session`, for every call.
    pub fn new(config: GatewayConfig, auth: Authenticator, session: SessionClient) -> Gateway {
        let referee = Arc::new(RemoteReferee::new(session.clone()));
        Gateway::with_referee(config, auth, session, referee)
    }

    /// A gateway whose players' actions and followed games go through `referee` (in one
    /// process, the session itself), and its other calls (views, seats, presence, replays)
    /// through `session`.
    pub fn with_referee(
        config: GatewayConfig,
        auth: Authenticator,
        session: SessionClient,
        referee: Arc<dyn Referee>,
    ) -> Gateway {
        Gateway {
            inner: Arc::new(Inner {
                auth,
                hubs: Hubs::new(session.clone(), Arc::clone(&referee)),
                referee,
                presence: Presence::new(
                    session.clone(),
                    config.gateway_id.clone(),
                    config.presence_lease,
                ),
                rate: RateLimiter::new(config.action_burst, config.actions_per_second),
                streams: StreamCap::new(config.max_streams),
                session,
                config,
                stopping: CancellationToken::new(),
            }),
        }
    }

    /// The player behind the `authorization` header values of one request (exactly one must be
    /// there), or `UNAUTHENTICATED`.
    pub fn authenticate_headers<'a>(
        &self,
        values: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Player, Status> {
        self.inner
            .auth
            .authenticate_header_values(values)
            .map_err(|e| e.to_status())
            .and_then(refuse_reserved)
    }

    /// The player behind a bare token (WebSocket clients send it in their first message).
    pub fn authenticate_token(&self, token: &str) -> Result<Player, Status> {
        self.inner
            .auth
            .authenticate_token(token)
            .map_err(|e| e.to_status())
            .and_then(refuse_reserved)
    }

    /// Ends every open stream with a `Reconnect` item (resume hint included) so clients move to
    /// another gateway; used on graceful shutdown. New subscriptions are refused from now on.
    pub fn shutdown(&self) {
        self.inner.stopping.cancel();
    }

    /// Opens a `Connect` connection of `player`: serve its requests with
    /// [`Connection::serve`](crate::connect::Connection::serve), write what its writer gives.
    pub(crate) fn connection(
        &self,
        player: Player,
    ) -> (Arc<crate::connect::Connection>, crate::connect::Writer) {
        crate::connect::Connection::open(self.clone(), player, self.inner.config.connect.clone())
    }

    /// Streams open on this gateway now.
    pub fn open_streams(&self) -> usize {
        self.inner.streams.open()
    }

    /// Games followed upstream now.
    pub fn followed_games(&self) -> usize {
        self.inner.hubs.followed()
    }

    /// How `player` sees the game, its seats, and where it stands if the session said so just
    /// now ([`Hubs::seats_and_standing`]).
    pub(crate) async fn viewer(
        &self,
        player: &Player,
        game_id: Uuid,
        spectate: bool,
    ) -> Result<(Viewer, Arc<Seats>, Option<Standing>), Status> {
        let (seats, standing) = self.inner.hubs.seats_and_standing(game_id).await?;
        let viewer = match (seat_of(&seats, player), spectate) {
            (_, true) => Viewer::Spectator,
            (Some(side), false) => Viewer::player(side),
            (None, false) => return Err(not_seated(game_id)),
        };
        Ok((viewer, seats, standing))
    }

    /// The game's events from `from_seq` on, as this player (or a spectator) may see them, then
    /// live ones. Ends after the game's last event, or with a `Reconnect` item when this client
    /// fell too far behind.
    pub async fn subscribe(
        &self,
        player: &Player,
        request: pb::SubscribeRequest,
    ) -> Result<ReceiverStream<Result<pb::SubscribeResponse, Status>>, Status> {
        let follow = self.follow(player, &request).await?;
        let (tx, rx) = mpsc::channel(32);
        let mut sink = SubscribeSink {
            tx,
            game_id: follow.game_id.to_string(),
        };
        tokio::spawn(async move { follow.run(&mut sink).await });
        Ok(ReceiverStream::new(rx))
    }

    /// The game as this player (or a spectator) sees it now.
    pub async fn get_game(
        &self,
        player: &Player,
        request: pb::PlayerServiceGetGameRequest,
    ) -> Result<pb::PlayerServiceGetGameResponse, Status> {
        let game_id = parse_game_id("game_id", &request.game_id)?;
        let (viewer, ..) = self.viewer(player, game_id, request.spectate).await?;
        let game = self
            .inner
            .session
            .clone()
            .get_game(pb::GetGameRequest {
                game_id: game_id.to_string(),
                viewer: hidden_front_wire::viewer_to_proto(viewer) as i32,
            })
            .await?
            .into_inner()
            .game;
        Ok(pb::PlayerServiceGetGameResponse { game })
    }

    /// The games this player is seated in.
    pub async fn list_my_games(
        &self,
        player: &Player,
        request: pb::ListMyGamesRequest,
    ) -> Result<pb::ListMyGamesResponse, Status> {
        self.inner.rate.check(&player.id)?;
        let games = self
            .inner
            .session
            .clone()
            .list_games(pb::ListGamesRequest {
                player: player.id.clone(),
                active_only: request.active_only,
                limit: 0,
            })
            .await?
            .into_inner()
            .games;
        Ok(pb::ListMyGamesResponse { games })
    }

    /// The player's own legal moves now (empty when it is not their turn).
    pub async fn legal_moves(
        &self,
        player: &Player,
        request: pb::LegalMovesRequest,
    ) -> Result<pb::LegalMovesResponse, Status> {
        self.inner.rate.check(&player.id)?;
        let game_id = parse_game_id("game_id", &request.game_id)?;
        let seats = self.inner.hubs.seats(game_id).await?;
        let side = seat_of(&seats, player).ok_or_else(|| not_seated(game_id))?;
        let answer = self
            .inner
            .session
            .clone()
            .list_legal_moves(pb::ListLegalMovesRequest {
                game_id: game_id.to_string(),
                side: hidden_front_wire::side_to_proto(side) as i32,
                min_version: request.min_version,
            })
            .await
            .map_err(session_status)?
            .into_inner();
        Ok(pb::LegalMovesResponse {
            version: answer.version,
            moves: answer.moves,
        })
    }

    /// A finished game's replay, for any authenticated player: seated in the game or a
    /// spectator (after the end a spectator sees every event with full information anyway).
    /// Refused `FAILED_PRECONDITION`/`WRONG_PHASE` before the end, before any event is read:
    /// until then the log holds both sides' hidden pieces. The producer is the CLI's
    /// (`hidden_front_replay_export::fetch_replay`).
    pub async fn export_replay(
        &self,
        player: &Player,
        request: pb::ExportReplayRequest,
    ) -> Result<pb::ExportReplayResponse, Status> {
        self.inner.rate.check(&player.id)?;
        let game_id = parse_game_id("game_id", &request.game_id)?;
        let replay = hidden_front_replay_export::fetch_replay(&self.inner.session, game_id)
            .await
            .map_err(|error| match error {
                FetchError::NotEnded { .. } => {
                    Status::from(ApiError::new(Reason::WrongPhase, error.to_string()))
                }
                FetchError::Session { status, .. } => session_status(status),
                FetchError::Stalled { .. } | FetchError::Malformed { .. } => {
                    tracing::error!(%game_id, %error, "replay export failed");
                    Status::from(ApiError::new(
                        Reason::SessionUnavailable,
                        "the game service failed to send the game's log; retry",
                    ))
                }
            })?;
        Ok(pb::ExportReplayResponse {
            replay: replay.to_text(),
            file_name: hidden_front_replay_export::file_name(game_id),
        })
    }

    /// Performs the action of one action RPC's request `message` in the player's own seat and
    /// answers with that RPC's response: what both faces call.
    pub async fn perform<M: ActionMessage>(
        &self,
        player: &Player,
        message: M,
    ) -> Result<M::Response, Status> {
        Ok(M::respond(self.act(player, message.into_request()).await?))
    }

    /// Performs an action in the player's own seat: the one place that checks the seat and hands
    /// the action to the [`Referee`], and turns the session's answer into the player's.
    pub async fn act(
        &self,
        player: &Player,
        request: ActionRequest,
    ) -> Result<pb::ActionResult, Status> {
        let ActionRequest { context, action } = request;
        self.inner.rate.check(&player.id)?;
        let context = context.ok_or_else(|| Status::from(ApiError::missing_field("context")))?;
        let game_id = parse_game_id("context.game_id", &context.game_id)?;
        let seats = self.inner.hubs.seats(game_id).await?;
        let side = seat_of(&seats, player).ok_or_else(|| {
            Status::from(ApiError::new(
                Reason::NotSeated,
                format!("you are not seated in game {game_id}"),
            ))
        })?;
        let context = pb::CommandContext {
            game_id: game_id.to_string(),
            side: hidden_front_wire::side_to_proto(side) as i32,
            idempotency_key: context.idempotency_key,
            expected_version: context.expected_version,
        };
        let result = self
            .inner
            .referee
            .act(context, action)
            .await
            .map_err(session_status)?;
        Ok(pb::ActionResult {
            version: result.version,
            events: result.events,
            replayed: result.replayed,
        })
    }
}

/// `Subscribe`'s deliveries: each item its own `SubscribeResponse`, projected and converted
/// for this stream.
struct SubscribeSink {
    tx: mpsc::Sender<Result<pb::SubscribeResponse, Status>>,
    game_id: String,
}

impl SubscribeSink {
    async fn send(&self, item: pb::subscribe_response::Item) -> bool {
        let item = pb::SubscribeResponse { item: Some(item) };
        self.tx.send(Ok(item)).await.is_ok()
    }
}

impl FollowSink for SubscribeSink {
    async fn event(&mut self, hub: &GameHub, entry: &LogEntry, shown: Shown<'_>) -> bool {
        match project(&entry.event, shown.viewer, shown.end) {
            Some(view) => {
                let event =
                    hidden_front_wire::game_event(hub.rules(), &self.game_id, entry.seq, &view);
                self.send(pb::subscribe_response::Item::Event(event)).await
            }
            None => true,
        }
    }

    async fn status(&mut self, _hub: &GameHub, status: pb::GameStatus) -> bool {
        self.send(pb::subscribe_response::Item::Status(status))
            .await
    }

    async fn reconnect(&mut self, next: u64, reason: &str) {
        let hint = pb::Reconnect {
            resume_from_seq: next,
            reason: reason.into(),
            game_id: String::new(),
        };
        self.send(pb::subscribe_response::Item::Reconnect(hint))
            .await;
    }

    async fn failed(&mut self, status: Status) {
        let _ = self.tx.send(Err(status)).await;
    }

    async fn closed(&self) {
        self.tx.closed().await;
    }
}

/// A failed call to the session as the player sees it; every call the gateway makes to the
/// session maps its failure here, so a player's retry rule (docs/errors.md, "Retrying") holds
/// whichever call failed. Internal failures lose their details here. A failure the session did
/// not answer itself (a connection or stream broken under the call, a call that timed out on
/// the way) is the session being unavailable: tonic reports a broken HTTP/2 stream as
/// `INTERNAL`/`UNKNOWN` without a reason, and passed on as it was, a player would read it as a
/// fault not worth retrying (the cluster test found games ended so: docs/cluster-test.md).
pub(crate) fn session_status(status: Status) -> Status {
    match status.code() {
        Code::Internal | Code::Unknown | Code::DataLoss => {
            tracing::error!(error = %status, "session failure");
            ApiError::new(
                Reason::SessionUnavailable,
                "the game service failed; retry with the same idempotency key",
            )
            .into()
        }
        Code::Unavailable => ApiError::new(
            Reason::SessionUnavailable,
            "the game service is unavailable; retry with the same idempotency key",
        )
        .into(),
        Code::Cancelled | Code::DeadlineExceeded if !has_reason(&status) => ApiError::new(
            Reason::SessionUnavailable,
            "the game service did not answer in time; retry with the same idempotency key",
        )
        .into(),
        _ => ensure_reason(status),
    }
}

#[cfg(test)]
mod tests {
    use super::session_status;
    use hidden_front_api_error::{ApiError, ErrorSummary, Reason};
    use tonic::{Code, Status};

    /// What the session did not answer itself (a broken stream, a call that timed out on the
    /// way) reaches the player as SESSION_UNAVAILABLE, which every client retries; the session's
    /// own refusals pass through with their reason.
    #[test]
    fn failures_the_session_did_not_answer_are_retriable() {
        for broken in [
            Status::internal("h2 protocol error: http2 error"),
            Status::unknown("protocol error: missing grpc-status trailer"),
            Status::unavailable("tcp connect error"),
            Status::cancelled("Timeout expired"),
            Status::deadline_exceeded("deadline has elapsed"),
        ] {
            let seen = session_status(broken.clone());
            assert_eq!(seen.code(), Code::Unavailable, "{broken:?}");
            assert_eq!(ErrorSummary::of(&seen).reason, "SESSION_UNAVAILABLE");
        }
        let refused: Status = ApiError::new(Reason::StaleVersion, "the game moved on").into();
        let seen = session_status(refused);
        assert_eq!(seen.code(), Code::Aborted);
        assert_eq!(ErrorSummary::of(&seen).reason, "STALE_VERSION");
    }
}
