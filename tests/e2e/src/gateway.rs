//! Clients of the public `PlayerService` (the gateway), which authenticate with a bearer token and
//! talk to nothing else.
//!
//! - [`token`] mints a player token in-process with the one-box development secret, which a
//!   server started without `--jwt-secret` accepts.
//! - [`PlayerClient`]: the generated `PlayerServiceClient` with the player's token on every
//!   request, and helpers for the calls.
//! - [`RawPlayerClient`]: the same calls through a codec that keeps every answer's bytes exactly
//!   as they came off the wire ([`Received`]), for tests that inspect everything a player
//!   received, field by field and byte by byte.
//! - [`follow_to_end`]: reads a `Subscribe` stream until `GameEnded`, following `Reconnect`
//!   hints; [`check_streams`] compares the streams of a game's three viewers.

use crate::client::{CALL_DEADLINE, EVENT_DEADLINE, side_of};
use crate::pb;
use crate::pb::game_event::Event;
use crate::pb::player_service_client::PlayerServiceClient;
use hidden_front_gateway::auth::{DEV_SECRET, mint_dev_token};
use prost::Message;
use prost::bytes::{Buf, BufMut};
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::time::Duration;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder, Streaming};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

/// How long the tokens [`token`] mints are valid: longer than any test.
pub const TOKEN_TTL: Duration = Duration::from_secs(3600);

/// A token for `player` (its `sub`), signed with the development secret, valid for
/// [`TOKEN_TTL`].
pub fn token(player: &str) -> String {
    mint_dev_token(DEV_SECRET.as_bytes(), player, TOKEN_TTL, false)
        .unwrap_or_else(|e| panic!("minting a token for {player:?}: {e}"))
}

/// A channel to a server (eagerly connected: fails now if nothing listens). One channel can carry
/// the calls of many clients with different tokens.
pub async fn channel(addr: SocketAddr) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .expect("a loopback URL")
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {addr}: {e}"))
}

/// `request` with `authorization: <value>` metadata; `None` sends no such entry.
pub fn with_authorization<T>(value: Option<&str>, request: T) -> Request<T> {
    let mut request = Request::new(request);
    if let Some(value) = value {
        let value = MetadataValue::try_from(value)
            .unwrap_or_else(|e| panic!("{value:?} is not a metadata value: {e}"));
        request.metadata_mut().insert("authorization", value);
    }
    request
}

/// `request` with `authorization: Bearer <token>`.
pub fn authed<T>(token: &str, request: T) -> Request<T> {
    with_authorization(Some(&format!("Bearer {token}")), request)
}

/// An action context.
pub fn context(game_id: &str, key: &str, expected_version: Option<u64>) -> pb::ActionContext {
    pb::ActionContext {
        game_id: game_id.to_string(),
        idempotency_key: key.to_string(),
        expected_version,
    }
}

/// A move by square names.
pub fn mv(from: &str, to: &str) -> pb::Move {
    pb::Move {
        from: from.to_string(),
        to: to.to_string(),
    }
}

/// A player talking to `PlayerService` with its token.
#[derive(Debug, Clone)]
pub struct PlayerClient {
    player: String,
    token: String,
    client: PlayerServiceClient<Channel>,
}

/// Pulls `result` out of an action's response.
fn result_of(result: Option<pb::ActionResult>, what: &str) -> Result<pb::ActionResult, Status> {
    result.ok_or_else(|| Status::internal(format!("{what} answered without a result")))
}

impl PlayerClient {
    /// A client for `player` on `channel`, with a fresh token from [`token`].
    pub fn new(channel: Channel, player: &str) -> PlayerClient {
        PlayerClient::with_token(channel, player, &token(player))
    }

    /// A client for `player` sending `token` (which may be anything: expired, forged...).
    pub fn with_token(channel: Channel, player: &str, token: &str) -> PlayerClient {
        PlayerClient {
            player: player.to_string(),
            token: token.to_string(),
            client: PlayerServiceClient::new(channel),
        }
    }

    /// The player id the token names.
    pub fn player(&self) -> &str {
        &self.player
    }

    /// The generated client, for calls with hand-made metadata.
    pub fn inner(&mut self) -> &mut PlayerServiceClient<Channel> {
        &mut self.client
    }

    /// A unary request with the token and a deadline.
    fn request<T>(&self, message: T) -> Request<T> {
        let mut request = authed(&self.token, message);
        request.set_timeout(CALL_DEADLINE);
        request
    }

    /// `Subscribe` from `from_seq`, as a player or (`spectate`) a spectator.
    pub async fn subscribe(
        &mut self,
        game_id: &str,
        from_seq: u64,
        spectate: bool,
    ) -> Result<Streaming<pb::SubscribeResponse>, Status> {
        self.subscribe_request(pb::SubscribeRequest {
            game_id: game_id.to_string(),
            from_seq,
            spectate,
            with_status: false,
        })
        .await
    }

    /// `Subscribe` with `request` as it is (e.g. asking for `status` items).
    pub async fn subscribe_request(
        &mut self,
        request: pb::SubscribeRequest,
    ) -> Result<Streaming<pb::SubscribeResponse>, Status> {
        // A stream has no overall deadline; [`next_item`] bounds each wait instead.
        let request = authed(&self.token, request);
        Ok(self.client.subscribe(request).await?.into_inner())
    }

    /// `GetGame`.
    pub async fn get_game(
        &mut self,
        game_id: &str,
        spectate: bool,
    ) -> Result<pb::GameView, Status> {
        let request = self.request(pb::PlayerServiceGetGameRequest {
            game_id: game_id.to_string(),
            spectate,
        });
        self.client
            .get_game(request)
            .await?
            .into_inner()
            .game
            .ok_or_else(|| Status::internal("GetGame answered without a game"))
    }

    /// `ListMyGames`.
    pub async fn list_my_games(
        &mut self,
        active_only: bool,
    ) -> Result<Vec<pb::GameSummary>, Status> {
        let request = self.request(pb::ListMyGamesRequest { active_only });
        Ok(self.client.list_my_games(request).await?.into_inner().games)
    }

    /// `LegalMoves`.
    pub async fn legal_moves(&mut self, game_id: &str) -> Result<pb::LegalMovesResponse, Status> {
        let request = self.request(pb::LegalMovesRequest {
            game_id: game_id.to_string(),
            min_version: None,
        });
        Ok(self.client.legal_moves(request).await?.into_inner())
    }

    /// `Reshuffle`.
    pub async fn reshuffle(
        &mut self,
        context: pb::ActionContext,
    ) -> Result<pb::ActionResult, Status> {
        let request = self.request(pb::ReshuffleRequest {
            context: Some(context),
        });
        result_of(
            self.client.reshuffle(request).await?.into_inner().result,
            "Reshuffle",
        )
    }

    /// `Swap`.
    pub async fn swap(
        &mut self,
        context: pb::ActionContext,
        square_a: &str,
        square_b: &str,
    ) -> Result<pb::ActionResult, Status> {
        let request = self.request(pb::SwapRequest {
            context: Some(context),
            square_a: square_a.to_string(),
            square_b: square_b.to_string(),
        });
        result_of(self.client.swap(request).await?.into_inner().result, "Swap")
    }

    /// `Deploy`.
    pub async fn deploy(
        &mut self,
        context: pb::ActionContext,
        placements: Vec<pb::Placement>,
    ) -> Result<pb::ActionResult, Status> {
        let request = self.request(pb::DeployRequest {
            context: Some(context),
            placements,
        });
        result_of(
            self.client.deploy(request).await?.into_inner().result,
            "Deploy",
        )
    }

    /// `Confirm`.
    pub async fn confirm(
        &mut self,
        context: pb::ActionContext,
    ) -> Result<pb::ActionResult, Status> {
        let request = self.request(pb::ConfirmRequest {
            context: Some(context),
        });
        result_of(
            self.client.confirm(request).await?.into_inner().result,
            "Confirm",
        )
    }

    /// `Play`.
    pub async fn play(
        &mut self,
        context: pb::ActionContext,
        mv: pb::Move,
    ) -> Result<pb::ActionResult, Status> {
        let request = self.request(pb::PlayRequest {
            context: Some(context),
            r#move: Some(mv),
        });
        result_of(self.client.play(request).await?.into_inner().result, "Play")
    }

    /// `ProposeDraw`.
    pub async fn propose_draw(
        &mut self,
        context: pb::ActionContext,
    ) -> Result<pb::ActionResult, Status> {
        let request = self.request(pb::ProposeDrawRequest {
            context: Some(context),
        });
        result_of(
            self.client.propose_draw(request).await?.into_inner().result,
            "ProposeDraw",
        )
    }

    /// `RespondDraw`.
    pub async fn respond_draw(
        &mut self,
        context: pb::ActionContext,
        accept: bool,
    ) -> Result<pb::ActionResult, Status> {
        let request = self.request(pb::RespondDrawRequest {
            context: Some(context),
            accept,
        });
        result_of(
            self.client.respond_draw(request).await?.into_inner().result,
            "RespondDraw",
        )
    }

    /// `Concede`.
    pub async fn concede(
        &mut self,
        context: pb::ActionContext,
    ) -> Result<pb::ActionResult, Status> {
        let request = self.request(pb::ConcedeRequest {
            context: Some(context),
        });
        result_of(
            self.client.concede(request).await?.into_inner().result,
            "Concede",
        )
    }
}

/// The next item of a `Subscribe` stream; `Ok(None)` when the server ended it. Panics on silence
/// longer than [`EVENT_DEADLINE`].
pub async fn next_item<T>(stream: &mut Streaming<T>, what: &str) -> Result<Option<T>, Status> {
    tokio::time::timeout(EVENT_DEADLINE, stream.message())
        .await
        .unwrap_or_else(|_| panic!("{what}: nothing within {EVENT_DEADLINE:?}"))
}

/// The player's lobby stream, from the start of their lobby log.
pub async fn lobby(player: &mut PlayerClient) -> Streaming<pb::WatchLobbyResponse> {
    let token = token(player.player());
    player
        .inner()
        .watch_lobby(authed(&token, pb::WatchLobbyRequest { after_seq: 0 }))
        .await
        .expect("WatchLobby")
        .into_inner()
}

/// The next `MatchFound` on a lobby stream that `wanted` accepts (the log replays earlier
/// matches too). Panics when none comes within `deadline` or the stream fails or ends.
pub async fn match_found(
    stream: &mut Streaming<pb::WatchLobbyResponse>,
    deadline: std::time::Duration,
    wanted: impl Fn(&pb::MatchFound) -> bool,
) -> pb::MatchFound {
    tokio::time::timeout(deadline, async {
        loop {
            let item = stream
                .message()
                .await
                .expect("the lobby stream works")
                .expect("the lobby stream goes on");
            if let Some(pb::lobby_event::Kind::MatchFound(found)) =
                item.event.and_then(|event| event.kind)
                && wanted(&found)
            {
                return found;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no wanted MatchFound within {deadline:?}"))
}

/// Whether an event is `GameEnded`.
pub fn is_end(event: &pb::GameEvent) -> bool {
    matches!(event.event, Some(pb::game_event::Event::Ended(_)))
}

/// What [`follow_to_end`] read.
#[derive(Debug, Default)]
pub struct Followed {
    /// Every event, in order, up to and including `GameEnded`.
    pub events: Vec<pb::GameEvent>,
    /// `Reconnect` hints received (each was followed by a new `Subscribe`).
    pub reconnects: Vec<pb::Reconnect>,
    /// `status` items received (on a subscription that asked for them), in order.
    pub statuses: Vec<pb::GameStatus>,
}

/// Reads `stream` until `GameEnded`, re-subscribing from the hinted sequence number on a
/// `Reconnect`. Panics if the stream fails or ends before `GameEnded`.
pub async fn follow_to_end(
    client: &mut PlayerClient,
    game_id: &str,
    spectate: bool,
    mut stream: Streaming<pb::SubscribeResponse>,
) -> Followed {
    let mut out = Followed::default();
    let what = format!("Subscribe({game_id}) of {}", client.player());
    loop {
        let item = next_item(&mut stream, &what)
            .await
            .unwrap_or_else(|s| panic!("{what} failed after {:?}: {s:?}", seqs(&out.events)))
            .unwrap_or_else(|| {
                panic!(
                    "{what} ended before GameEnded, after {:?}",
                    seqs(&out.events)
                )
            });
        match item.item {
            Some(pb::subscribe_response::Item::Event(event)) => {
                let end = is_end(&event);
                out.events.push(event);
                if end {
                    return out;
                }
            }
            Some(pb::subscribe_response::Item::Reconnect(hint)) => {
                stream = client
                    .subscribe(game_id, hint.resume_from_seq, spectate)
                    .await
                    .unwrap_or_else(|s| panic!("{what}: resuming from {hint:?} failed: {s:?}"));
                out.reconnects.push(hint);
            }
            Some(pb::subscribe_response::Item::Status(status)) => out.statuses.push(status),
            None => panic!("{what} sent an empty item"),
        }
    }
}

/// The sequence numbers of `events`.
pub fn seqs(events: &[pb::GameEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

/// An answer as received: the decoded message and the exact bytes it was decoded from (the gRPC
/// message, without the 5-byte frame header).
#[derive(Debug, Clone, PartialEq)]
pub struct Received<T> {
    /// The decoded message.
    pub message: T,
    /// The bytes on the wire.
    pub raw: Vec<u8>,
}

/// A codec that encodes requests with prost and hands answers over as raw bytes.
#[derive(Debug)]
struct RawCodec<Req>(PhantomData<Req>);

impl<Req> Default for RawCodec<Req> {
    fn default() -> Self {
        RawCodec(PhantomData)
    }
}

/// The encoder of [`RawCodec`].
#[derive(Debug)]
struct RawEncoder<Req>(PhantomData<Req>);

/// The decoder of [`RawCodec`] (and of the sweep's pass-through codec): the answer's bytes.
#[derive(Debug)]
pub struct RawDecoder;

impl<Req: Message + Send + 'static> Codec for RawCodec<Req> {
    type Encode = Req;
    type Decode = Vec<u8>;
    type Encoder = RawEncoder<Req>;
    type Decoder = RawDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        RawEncoder(PhantomData)
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawDecoder
    }
}

impl<Req: Message> Encoder for RawEncoder<Req> {
    type Item = Req;
    type Error = Status;

    fn encode(&mut self, item: Req, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(dst)
            .map_err(|e| Status::internal(format!("encoding a request: {e}")))
    }
}

impl Decoder for RawDecoder {
    type Item = Vec<u8>;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        let mut raw = Vec::with_capacity(src.remaining());
        raw.put(src);
        Ok(Some(raw))
    }
}

/// Decodes `raw` as `T`, panicking (with the method) if it does not decode.
fn decode<T: Message + Default>(raw: Vec<u8>, what: &str) -> Received<T> {
    let message = T::decode(raw.as_slice())
        .unwrap_or_else(|e| panic!("{what}: the answer does not decode: {e}"));
    Received { message, raw }
}

/// A `PlayerService` client that keeps the exact bytes of every answer.
#[derive(Debug, Clone)]
pub struct RawPlayerClient {
    player: String,
    token: String,
    grpc: tonic::client::Grpc<Channel>,
}

/// A `Subscribe` stream whose items keep their bytes.
#[derive(Debug)]
pub struct RawSubscription {
    stream: Streaming<Vec<u8>>,
    what: String,
}

impl RawSubscription {
    /// The next item; `Ok(None)` when the server ended the stream. Panics on silence longer than
    /// [`EVENT_DEADLINE`] or an item that does not decode.
    pub async fn next(&mut self) -> Result<Option<Received<pb::SubscribeResponse>>, Status> {
        Ok(next_item(&mut self.stream, &self.what)
            .await?
            .map(|raw| decode(raw, &self.what)))
    }
}

impl RawPlayerClient {
    /// A client for `player` on `channel`, with a fresh token from [`token`].
    pub fn new(channel: Channel, player: &str) -> RawPlayerClient {
        RawPlayerClient {
            player: player.to_string(),
            token: token(player),
            grpc: tonic::client::Grpc::new(channel),
        }
    }

    /// The player id the token names.
    pub fn player(&self) -> &str {
        &self.player
    }

    /// Calls `PlayerService/<method>` with `request`; the answer decoded as `Resp`, with its
    /// bytes.
    pub async fn unary<Req, Resp>(
        &mut self,
        method: &'static str,
        request: Req,
    ) -> Result<Received<Resp>, Status>
    where
        Req: Message + Send + Sync + 'static,
        Resp: Message + Default,
    {
        self.grpc
            .ready()
            .await
            .map_err(|e| Status::unavailable(format!("channel not ready: {e}")))?;
        let path = PathAndQuery::try_from(format!("/hiddenfront.v1.PlayerService/{method}"))
            .expect("a valid path");
        let mut request = authed(&self.token, request);
        request.set_timeout(CALL_DEADLINE);
        let raw = self
            .grpc
            .unary(request, path, RawCodec::<Req>::default())
            .await?
            .into_inner();
        Ok(decode(raw, method))
    }

    /// `Subscribe`, keeping each item's bytes.
    pub async fn subscribe(
        &mut self,
        request: pb::SubscribeRequest,
    ) -> Result<RawSubscription, Status> {
        self.grpc
            .ready()
            .await
            .map_err(|e| Status::unavailable(format!("channel not ready: {e}")))?;
        let what = format!(
            "Subscribe({}, from {}, spectate {}) of {}",
            request.game_id, request.from_seq, request.spectate, self.player
        );
        let request = authed(&self.token, request);
        let stream = self
            .grpc
            .server_streaming(
                request,
                PathAndQuery::from_static("/hiddenfront.v1.PlayerService/Subscribe"),
                RawCodec::<pb::SubscribeRequest>::default(),
            )
            .await?
            .into_inner();
        Ok(RawSubscription { stream, what })
    }
}

/// An event with every kind removed: what everybody may see of it.
pub fn public(event: &pb::GameEvent) -> pb::GameEvent {
    let mut event = event.clone();
    let hide = |pieces: &mut Vec<pb::VisiblePiece>| pieces.iter_mut().for_each(|p| p.piece.clear());
    match event.event.as_mut() {
        Some(Event::DeploymentConfirmed(c)) => c.deployment = None,
        Some(Event::PlayStarted(p)) => hide(&mut p.pieces),
        Some(Event::Moved(m)) => {
            m.piece.clear();
            if let Some(c) = m.combat.as_mut() {
                c.defender_piece.clear();
            }
        }
        _ => {}
    }
    event
}

/// Checks the three streams of one game against each other: each is gapless over what its
/// viewer may see (a player misses only the other side's drafts, a spectator every draft),
/// they agree on everything public, and all end with the same fully revealed `GameEnded` at
/// `version`.
#[track_caller]
pub fn check_streams(
    game_id: &str,
    version: u64,
    south: &[pb::GameEvent],
    north: &[pb::GameEvent],
    spectator: &[pb::GameEvent],
) {
    let index = |events: &[pb::GameEvent], who: &str| -> BTreeMap<u64, pb::GameEvent> {
        let mut map = BTreeMap::new();
        let mut last = 0;
        for e in events {
            assert_eq!(e.game_id, game_id, "{who}: an event of another game");
            assert!(
                e.seq > last,
                "{who}: seqs not increasing: {:?}",
                seqs(events)
            );
            last = e.seq;
            map.insert(e.seq, e.clone());
        }
        assert_eq!(last, version, "{who}: the stream does not end at {version}");
        assert!(
            is_end(events.last().expect("events")),
            "{who}: no GameEnded last"
        );
        map
    };
    let (s, n, x) = (
        index(south, "south"),
        index(north, "north"),
        index(spectator, "spectator"),
    );
    let draft_of = |e: &pb::GameEvent| match &e.event {
        Some(Event::DeploymentDrafted(d)) => d.deployment.as_ref().map(|d| side_of(d.side)),
        _ => None,
    };
    for seq in 1..=version {
        match (s.get(&seq), n.get(&seq), x.get(&seq)) {
            (Some(a), Some(b), Some(c)) => {
                assert_eq!(draft_of(a), None, "seq {seq}: a draft shown to everyone");
                assert_eq!(
                    public(a),
                    public(b),
                    "south and north disagree on seq {seq}"
                );
                assert_eq!(
                    public(a),
                    public(c),
                    "south and the spectator disagree on seq {seq}"
                );
                if !matches!(c.event, Some(Event::Ended(_))) {
                    assert_eq!(
                        public(c),
                        *c,
                        "the spectator saw a kind at seq {seq}: {c:?}"
                    );
                }
            }
            (Some(a), None, None) => {
                assert_eq!(
                    draft_of(a),
                    Some(pb::Side::South),
                    "seq {seq} only south sees: {a:?}"
                );
            }
            (None, Some(b), None) => {
                assert_eq!(
                    draft_of(b),
                    Some(pb::Side::North),
                    "seq {seq} only north sees: {b:?}"
                );
            }
            other => panic!("seq {seq} of {game_id} seen as {other:?}"),
        }
    }
    let end = &x[&version];
    assert_eq!(s[&version], *end);
    assert_eq!(n[&version], *end);
    match &end.event {
        Some(Event::Ended(ended)) => {
            assert!(ended.outcome.is_some());
            for piece in &ended.pieces {
                assert!(!piece.piece.is_empty(), "hidden after the end: {piece:?}");
            }
        }
        other => panic!("no GameEnded: {other:?}"),
    }
}
