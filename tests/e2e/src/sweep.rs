//! The bad-input sweeps: every RPC of every `hiddenfront.v1` service, enumerated from the
//! embedded descriptor set (so a new RPC is swept without anyone listing it), sent as raw bytes
//! through a pass-through codec, starting from a baseline request that is as valid as possible and
//! changing one thing at a time; and the checks every answer must pass.
//!
//! - [`methods`]: every method of the package, from [`hidden_front_proto::FILE_DESCRIPTOR_SET`].
//! - [`Goods`] and [`baseline`]: good values (a real game, real seats and squares, fresh keys)
//!   filled into a request by field name; [`best_goods`] puts the game where the method's
//!   baseline is not refused as out of place (in deployment, in play, with a draw offered).
//! - [`mutations`] / [`json_mutations`]: the single-field mutations (and whole-message ones:
//!   random bytes, a truncated message, an oversized one) of a baseline, for gRPC and for the
//!   WebSocket API's JSON.
//! - [`call`]: one raw call; [`check_answer`] and [`Sweep`]: the checks and the failure table.

use crate::Server;
use crate::client::{self, CALL_DEADLINE, Client, context, create_game, get_game, side_of};
use crate::gateway;
use crate::gateway::{RawDecoder, authed};
use crate::pb;
use hidden_front_gateway::ws::code_name;
use hidden_front_rules::GameRng;
use pb::matchmaking_service_client::MatchmakingServiceClient;
use prost::Message;
use prost::bytes::BufMut;
use prost::encoding::{WireType, encode_key, encode_varint};
use prost_reflect::{
    DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MessageDescriptor, MethodDescriptor,
    ReflectMessage, Value,
};
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;
use tonic::codec::{Codec, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use tonic_types::StatusExt;

/// The proto package whose services are swept.
pub const PACKAGE: &str = "hiddenfront.v1";
/// The longest error message an answer may carry, in bytes.
pub const MAX_ERROR_MESSAGE: usize = 1024;
/// A run of this many copies of the mutation filler (`x`) in an answer means the offending
/// value was echoed, not quoted as a short prefix.
pub const ECHO_RUN: usize = 64;
/// The "huge string" mutation: 10 KiB of `x`.
pub const BIG_STRING: usize = 10 * 1024;
/// The "long list" mutation: this many elements (small ones, within the 64 KiB message cap).
pub const LONG_LIST: usize = 1000;
/// The oversized message: over the 64 KiB `--max-message-bytes` default.
pub const OVERSIZED: usize = 70 * 1024;
/// How long a stream that opened is watched for its first item or status before it counts as
/// open (and is dropped).
pub const STREAM_WAIT: Duration = Duration::from_millis(400);
/// Paths of at most this many fields are mutated (`deployment.placements[0].square`).
const MAX_PATH: usize = 3;
/// Rows of the failure table at most (the summary by kind of problem comes on top).
const MAX_ROWS: usize = 44;
/// Rows per kind of problem in the table, so that every kind shows examples.
const ROWS_PER_KIND: usize = 8;
/// Codes no answer to any input may carry: they mean the server failed, not the input.
pub const FORBIDDEN_CODES: [Code; 4] = [
    Code::Unknown,
    Code::Internal,
    Code::Unavailable,
    Code::DataLoss,
];

/// The descriptors of every Hidden Front proto.
pub fn descriptor_pool() -> DescriptorPool {
    DescriptorPool::decode(hidden_front_proto::FILE_DESCRIPTOR_SET)
        .unwrap_or_else(|e| panic!("the embedded descriptor set does not decode: {e}"))
}

/// The one client-streaming method: swept request by request, each variant of its
/// `ConnectRequest.request` as a method of its own ([`connect_variants`], [`call_connect`]).
pub const CONNECT: &str = "PlayerService/Connect";

/// Every method of every service of [`PACKAGE`] but [`CONNECT`], services and methods in
/// declaration order. Panics on any other client-streaming method: the sweep cannot send those,
/// and skipping one silently would leave it unswept.
pub fn methods(pool: &DescriptorPool) -> Vec<MethodDescriptor> {
    let methods: Vec<MethodDescriptor> = pool
        .services()
        .filter(|s| s.package_name() == PACKAGE)
        .flat_map(|s| s.methods().collect::<Vec<_>>())
        .filter(|m| target(m) != CONNECT)
        .collect();
    assert!(!methods.is_empty(), "no service in package {PACKAGE}");
    for method in &methods {
        assert!(
            !method.is_client_streaming(),
            "{} is client-streaming: the sweep cannot send it; extend it",
            target(method)
        );
    }
    methods
}

/// `PlayerService/Connect` and the fields of its request's `oneof request`: each is swept as
/// a method of its own, a `ConnectRequest` holding it sent as a connection's only message.
pub fn connect_variants(pool: &DescriptorPool) -> (MethodDescriptor, Vec<FieldDescriptor>) {
    let connect = pool
        .services()
        .filter(|s| s.package_name() == PACKAGE)
        .flat_map(|s| s.methods().collect::<Vec<_>>())
        .find(|m| target(m) == CONNECT)
        .unwrap_or_else(|| panic!("{CONNECT} in the descriptors"));
    let request = connect.input();
    let oneof = request
        .oneofs()
        .find(|o| o.name() == "request")
        .expect("ConnectRequest's oneof request");
    let variants: Vec<FieldDescriptor> = oneof.fields().collect();
    assert!(!variants.is_empty());
    (connect, variants)
}

/// The baseline `ConnectRequest` of `variant`: request id 1, the variant's message filled with
/// good values.
pub fn connect_baseline(variant: &FieldDescriptor, goods: &mut Goods) -> DynamicMessage {
    let mut message = DynamicMessage::new(variant.parent_message().clone());
    message.set_field_by_name("request_id", Value::U64(1));
    if let Kind::Message(inner) = variant.kind() {
        message.set_field(variant, Value::Message(fill(&inner, goods, 1)));
    }
    message
}

/// Sends `body` as the only message of a `Connect` stream on `route` and reads what answers it:
/// the first message of the first response (an answer is [`Answer::Ok`], a refusal the status
/// the unary method would have sent, rebuilt from its code, message and details).
pub async fn call_connect(route: &Route, method: &MethodDescriptor, body: Vec<u8>) -> Answer {
    let path = format!("/{}/{}", method.parent_service().full_name(), method.name());
    let path = PathAndQuery::try_from(path).expect("a method path");
    let mut grpc = tonic::client::Grpc::new(route.channel.clone());
    if let Err(e) = grpc.ready().await {
        return Answer::Refused(Status::unavailable(format!("channel not ready: {e}")));
    }
    let (sender, requests) = tokio::sync::mpsc::channel(1);
    let _ = sender.send(body).await;
    let requests = tokio_stream::wrappers::ReceiverStream::new(requests);
    let request = match &route.token {
        Some(token) => authed(token, requests),
        None => Request::new(requests),
    };
    let deadline = CALL_DEADLINE + Duration::from_secs(1);
    let answered = async {
        let mut stream = grpc
            .streaming(request, path, BytesCodec)
            .await?
            .into_inner();
        let bytes = stream
            .message()
            .await?
            .ok_or_else(|| Status::unknown("the Connect stream ended without a response"))?;
        let response = pb::ConnectResponse::decode(bytes.as_slice())
            .map_err(|e| Status::unknown(format!("a response that does not decode: {e}")))?;
        let first = response
            .decode_messages()
            .map_err(|e| Status::unknown(format!("a message that does not decode: {e}")))?
            .into_iter()
            .next()
            .ok_or_else(|| Status::unknown("an empty response"))?;
        match first.item {
            Some(pb::server_message::Item::Answer(_)) => Ok(()),
            Some(pb::server_message::Item::Refusal(refusal)) => Err(Status::with_details(
                Code::from(refusal.code),
                refusal.message,
                refusal.details.into(),
            )),
            other => Err(Status::unknown(format!("not an answer first: {other:?}"))),
        }
    };
    let answer = match tokio::time::timeout(deadline, answered).await {
        Err(_) => Answer::TimedOut,
        Ok(Ok(())) => Answer::Ok,
        Ok(Err(status)) => Answer::Refused(status),
    };
    drop(sender);
    answer
}

/// `Service/Method`, as the failure table names a method.
pub fn target(method: &MethodDescriptor) -> String {
    format!("{}/{}", method.parent_service().name(), method.name())
}

/// A method's name in snake case: its WebSocket operation (`GetMyRating` -> `get_my_rating`).
pub fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A codec that sends the request's bytes exactly as given and hands the answer over as bytes:
/// the sweep sends what no generated client would.
#[derive(Debug, Default, Clone, Copy)]
pub struct BytesCodec;

/// The encoder of [`BytesCodec`]: copies the bytes.
#[derive(Debug)]
pub struct BytesEncoder;

impl Codec for BytesCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = BytesEncoder;
    type Decoder = RawDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        BytesEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawDecoder
    }
}

impl Encoder for BytesEncoder {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

/// Where a method is called: a channel to its port and, for the public port, a player's token.
#[derive(Debug, Clone)]
pub struct Route {
    /// The port's channel.
    pub channel: Channel,
    /// Sent as `authorization: Bearer <token>` when set.
    pub token: Option<String>,
}

/// What a call got.
#[derive(Debug)]
pub enum Answer {
    /// A unary answer, or a stream's first item or its clean end.
    Ok,
    /// A stream opened and stayed quiet for [`STREAM_WAIT`] (then it was dropped).
    StreamOpen,
    /// A refusal (or a failure on the way).
    Refused(Status),
    /// Nothing within the call's deadline.
    TimedOut,
}

/// Sends `body` as the request of `method` on `route` and reads the answer: for a server
/// stream, its first item or status within [`STREAM_WAIT`] after it opened.
pub async fn call(route: &Route, method: &MethodDescriptor, body: Vec<u8>) -> Answer {
    let path = format!("/{}/{}", method.parent_service().full_name(), method.name());
    let path = PathAndQuery::try_from(path).expect("a method path");
    let mut grpc = tonic::client::Grpc::new(route.channel.clone());
    if let Err(e) = grpc.ready().await {
        return Answer::Refused(Status::unavailable(format!("channel not ready: {e}")));
    }
    let mut request = match &route.token {
        Some(token) => authed(token, body),
        None => Request::new(body),
    };
    let deadline = CALL_DEADLINE + Duration::from_secs(1);
    if !method.is_server_streaming() {
        request.set_timeout(CALL_DEADLINE);
        return match tokio::time::timeout(deadline, grpc.unary(request, path, BytesCodec)).await {
            Err(_) => Answer::TimedOut,
            Ok(Err(status)) => Answer::Refused(status),
            Ok(Ok(_)) => Answer::Ok,
        };
    }
    let opened = grpc.server_streaming(request, path, BytesCodec);
    match tokio::time::timeout(deadline, opened).await {
        Err(_) => Answer::TimedOut,
        Ok(Err(status)) => Answer::Refused(status),
        Ok(Ok(response)) => {
            let mut stream = response.into_inner();
            match tokio::time::timeout(STREAM_WAIT, stream.message()).await {
                Err(_) => Answer::StreamOpen,
                Ok(Ok(_)) => Answer::Ok,
                Ok(Err(status)) => Answer::Refused(status),
            }
        }
    }
}

/// The field a single-field mutation changed: the descriptors from the request down (a list
/// field before the last means its first element).
#[derive(Debug, Clone)]
pub struct FieldPath {
    fields: Vec<FieldDescriptor>,
}

impl FieldPath {
    /// The path in proto names, `deployment.placements[0].square`.
    pub fn display(&self) -> String {
        self.joined(|f| f.name())
    }

    /// The path in JSON names, `context.idempotencyKey`.
    pub fn json_display(&self) -> String {
        self.joined(|f| f.json_name())
    }

    fn joined(&self, name: impl Fn(&FieldDescriptor) -> &str) -> String {
        let last = self.fields.len() - 1;
        self.fields
            .iter()
            .enumerate()
            .map(|(i, f)| match f.is_list() && i < last {
                true => format!("{}[0]", name(f)),
                false => name(f).to_string(),
            })
            .collect::<Vec<_>>()
            .join(".")
    }

    /// Whether a field violation's `field` names this field: its last segment (without an
    /// index) is the mutated field's proto name or JSON name.
    pub fn named_by(&self, field: &str) -> bool {
        let leaf = self.fields.last().expect("a path has a field");
        let last = field.rsplit('.').next().unwrap_or(field);
        let last = last.split('[').next().unwrap_or(last);
        !last.is_empty() && (last == leaf.name() || last == leaf.json_name())
    }
}

/// What an answer must be, beyond what every answer must be.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// The code it must have.
    pub code: Option<Code>,
    /// The field an `INVALID_ARGUMENT` answer must name in a field violation.
    pub field: Option<FieldPath>,
}

/// One request of a sweep: a label for the table, the bytes, what the answer must be.
#[derive(Debug, Clone)]
pub struct Mutation {
    /// E.g. `context.idempotency_key=NUL`.
    pub label: String,
    /// The request as sent.
    pub body: Vec<u8>,
    /// What the answer must be.
    pub expect: Expect,
}

/// Good values for a request's fields, by field name: one real game (the player seated south),
/// the player's legal deployment, squares of it, an open invite of someone else's, fresh keys.
#[derive(Debug, Clone)]
pub struct Goods {
    /// A game the player is seated in (south), in deployment.
    pub game_id: String,
    /// The acting player.
    pub player: String,
    /// The other seat.
    pub opponent: String,
    /// An open invite of a third player's.
    pub invite_code: String,
    /// A legal deployment of the south side.
    pub placements: Vec<pb::Placement>,
    /// Two squares of it holding different ranked pieces (a legal swap).
    pub swap: (String, String),
    /// A move by square names.
    pub mv: (String, String),
    /// Keys handed out so far.
    keys: u64,
}

impl Goods {
    /// Goods for `game_id`, whose south seat is `player` and north seat `opponent`.
    pub fn new(
        game_id: &str,
        player: &str,
        opponent: &str,
        invite_code: &str,
        placements: Vec<pb::Placement>,
    ) -> Goods {
        let ranked: Vec<&pb::Placement> = placements
            .iter()
            .filter(|p| p.piece.len() == 1 && p.piece.as_bytes()[0].is_ascii_digit())
            .collect();
        let a = ranked.first().expect("a ranked piece in a deployment");
        let b = ranked
            .iter()
            .find(|p| p.piece != a.piece)
            .expect("two kinds of ranked pieces");
        let swap = (a.square.clone(), b.square.clone());
        Goods {
            game_id: game_id.to_string(),
            player: player.to_string(),
            opponent: opponent.to_string(),
            invite_code: invite_code.to_string(),
            placements,
            swap,
            mv: ("B6".to_string(), "B7".to_string()),
            keys: 0,
        }
    }

    /// A key never handed out before (idempotency keys, ticket, invite and request ids).
    pub fn fresh_key(&mut self) -> String {
        self.keys += 1;
        format!("sweep-key-{}", self.keys)
    }
}

/// The request of `method` filled with good values (see [`Goods`]); fields the table does not
/// know keep their defaults.
pub fn baseline(method: &MethodDescriptor, goods: &mut Goods) -> DynamicMessage {
    fill(&method.input(), goods, 0)
}

fn fill(desc: &MessageDescriptor, goods: &mut Goods, depth: usize) -> DynamicMessage {
    let mut message = DynamicMessage::new(desc.clone());
    for field in desc.fields() {
        if let Some(value) = good_value(&field, goods, depth) {
            message.set_field(&field, value);
        }
    }
    message
}

fn good_value(field: &FieldDescriptor, goods: &mut Goods, depth: usize) -> Option<Value> {
    let string = |s: &str| Some(Value::String(s.to_string()));
    let parent = field.parent_message().name().to_string();
    match field.kind() {
        Kind::Message(m) if field.is_list() => match m.full_name() {
            "hiddenfront.v1.Placement" => Some(Value::List(
                goods
                    .placements
                    .iter()
                    .map(|p| {
                        let mut placement = DynamicMessage::new(m.clone());
                        placement.set_field_by_name("square", Value::String(p.square.clone()));
                        placement.set_field_by_name("piece", Value::String(p.piece.clone()));
                        Value::Message(placement)
                    })
                    .collect(),
            )),
            // A bulk of one pair of its own players (OrganiserService), so the sweep's games
            // are not joined by the bulk's.
            "hiddenfront.v1.BulkPair" => {
                let mut pair = DynamicMessage::new(m.clone());
                pair.set_field_by_name("south_player", Value::String("sweep-bulk-south".into()));
                pair.set_field_by_name("north_player", Value::String("sweep-bulk-north".into()));
                Some(Value::List(vec![Value::Message(pair)]))
            }
            _ => None,
        },
        // A tournament's two entrants of its own (OrganiserService.CreateTournament).
        Kind::String if field.is_list() => match field.name() {
            "entrants" => Some(Value::List(vec![
                Value::String("sweep-tour-a".into()),
                Value::String("sweep-tour-b".into()),
            ])),
            _ => None,
        },
        Kind::Message(m) => (depth < MAX_PATH).then(|| Value::Message(fill(&m, goods, depth + 1))),
        Kind::Enum(e) => e
            .values()
            .find(|v| v.number() != 0)
            .map(|v| Value::EnumNumber(v.number())),
        Kind::String => match field.name() {
            "game_id" => string(&goods.game_id.clone()),
            "idempotency_key" | "ticket_id" | "invite_id" | "request_id" => {
                Some(Value::String(goods.fresh_key()))
            }
            "player" | "south_player" => string(&goods.player.clone()),
            "north_player" => string(&goods.opponent.clone()),
            "rules" => string("hidden-front"),
            "time_control" => string("online"),
            "name" if parent == "TimeControl" => string("custom"),
            "gateway_id" => string("gateway-sweep"),
            // An operator's reason (AdminService).
            "reason" => string("sweep: bad input"),
            // The webhook endpoint the sweep's server is configured with.
            "endpoint" => string("sweep-hooks"),
            "code" => string(&goods.invite_code.clone()),
            // One bulk: created by CreateBulk's baseline, then read and cancelled by the others.
            "bulk_id" => string("sweep-bulk"),
            "tournament_id" => string("sweep-tournament"),
            "square_a" => string(&goods.swap.0.clone()),
            "square_b" => string(&goods.swap.1.clone()),
            "from" => string(&goods.mv.0.clone()),
            "to" => string(&goods.mv.1.clone()),
            _ => None,
        },
        Kind::Uint32 => match field.name() {
            "deployment_seconds" => Some(Value::U32(90)),
            "move_seconds" => Some(Value::U32(30)),
            "reconnect_seconds" => Some(Value::U32(60)),
            "lease_seconds" => Some(Value::U32(30)),
            "ttl_seconds" => Some(Value::U32(60)),
            "limit" => Some(Value::U32(10)),
            // A Swiss of two entrants has one round.
            "rounds" => Some(Value::U32(1)),
            _ => None,
        },
        Kind::Uint64 => match field.name() {
            // A deadline long past: the fire is judged (and found stale), not refused.
            "from_seq" | "armed_version" | "deadline_unix_millis" => Some(Value::U64(1)),
            _ => None,
        },
        Kind::Bool => match field.name() {
            "connected" => Some(Value::Bool(true)),
            _ => None,
        },
        _ => None,
    }
}

/// The player the sweeps act as: seated south in games against [`OPPONENT`].
pub const PLAYER: &str = "alice";
/// The north seat of the sweeps' games.
pub const OPPONENT: &str = "bob";
/// The creator of the invites the sweep accepts.
pub const INVITER: &str = "carol";

/// A client of the internal matchmaking service of `server`.
pub async fn matchmaking(server: &Server) -> MatchmakingServiceClient<Channel> {
    MatchmakingServiceClient::new(gateway::channel(server.session_addr()).await)
}

/// An open invite of `player`'s; its code.
pub async fn invite(server: &Server, player: &str, id: &str) -> String {
    matchmaking(server)
        .await
        .create_invite(pb::CreateInviteRequest {
            player: player.into(),
            invite_id: id.into(),
            rules: String::new(),
            time_control: String::new(),
        })
        .await
        .unwrap_or_else(|s| panic!("CreateInvite failed: {s:?}"))
        .into_inner()
        .invite
        .expect("an invite")
        .code
}

/// Where the game of a method's sweep is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stage {
    /// Just created: both sides drafting.
    Deployment,
    /// In play, the player to move.
    Play,
    /// In play, the player to move, a draw offered by the opponent.
    DrawOffered,
}

impl Stage {
    /// The stage to try when a request is refused as out of place in this one.
    pub fn next(self) -> Option<Stage> {
        match self {
            Stage::Deployment => Some(Stage::Play),
            Stage::Play => Some(Stage::DrawOffered),
            Stage::DrawOffered => None,
        }
    }
}

/// Good values for one method's sweep: a game of its own at `stage`, and an invite to accept
/// (someone else's) or to cancel (the player's own) when the request names one.
pub async fn goods_for(
    server: &Server,
    session: &mut Client,
    n: usize,
    method: &MethodDescriptor,
    stage: Stage,
) -> Goods {
    // Each call its own game and invite (the probe's and the sweep's): keys of their own.
    let unique = uuid::Uuid::new_v4().simple().to_string();
    let game = create_game(
        session,
        PLAYER,
        OPPONENT,
        &format!("sweep-game-{n}-{unique}"),
    )
    .await;
    // The game's own draft: a legal deployment, and squares for a legal swap.
    let placements = get_game(session, &game.game_id, pb::Viewer::South)
        .await
        .own_deployment
        .expect("a draft deployment")
        .placements;
    let names_invite = method.input().get_field_by_name("code").is_some();
    let code = match (names_invite, method.name().starts_with("Cancel")) {
        (false, _) => "K7QX2M".to_string(),
        (true, true) => invite(server, PLAYER, &format!("sweep-own-invite-{unique}")).await,
        (true, false) => invite(server, INVITER, &format!("sweep-invite-{unique}")).await,
    };
    let mut goods = Goods::new(&game.game_id, PLAYER, OPPONENT, &code, placements);
    if stage != Stage::Deployment {
        into_play(session, &mut goods, side_of(game.first_mover)).await;
    }
    if stage == Stage::DrawOffered {
        session
            .offer_draw(pb::OfferDrawRequest {
                context: context(&goods.game_id, pb::Side::North, "north-offers", None),
            })
            .await
            .unwrap_or_else(|s| panic!("north's draw offer failed: {s:?}"));
    }
    goods
}

/// Takes the game of `goods` into play with the player (south) to move, and makes `goods.mv`
/// a legal move of the player's: for the methods that need the play phase.
pub async fn into_play(session: &mut Client, goods: &mut Goods, created_first: pb::Side) {
    let game_id = goods.game_id.clone();
    for side in [pb::Side::South, pb::Side::North] {
        session
            .confirm_deployment(pb::ConfirmDeploymentRequest {
                context: context(&game_id, side, &format!("confirm-{side:?}"), None),
            })
            .await
            .unwrap_or_else(|s| panic!("ConfirmDeployment({side:?}) failed: {s:?}"));
    }
    let first_move = async |session: &mut Client, side: pb::Side| {
        session
            .list_legal_moves(pb::ListLegalMovesRequest {
                game_id: game_id.clone(),
                side: side as i32,
                min_version: None,
            })
            .await
            .unwrap_or_else(|s| panic!("ListLegalMoves({side:?}) failed: {s:?}"))
            .into_inner()
            .moves
            .first()
            .cloned()
            .unwrap_or_else(|| panic!("{side:?} has no legal move"))
    };
    if created_first == pb::Side::North {
        let mv = first_move(session, pb::Side::North).await;
        client::submit_move(session, &game_id, pb::Side::North, "north-first", None, &mv)
            .await
            .unwrap_or_else(|s| panic!("north's first move failed: {s:?}"));
    }
    let mv = first_move(session, pb::Side::South).await;
    goods.mv = (mv.from, mv.to);
}

/// Goods for `method` at the first [`Stage`] where `out_of_place` (a probe: it sends the
/// baseline and tells whether it was refused with FAILED_PRECONDITION) is false, or the last.
/// Each probe has a game of its own, so what it did (a confirmation, a resignation) does not
/// change the answers of the sweep, which gets a fresh game at that stage.
pub async fn best_goods(
    server: &Server,
    session: &mut Client,
    n: usize,
    method: &MethodDescriptor,
    mut out_of_place: impl AsyncFnMut(&mut Goods) -> bool,
) -> Goods {
    let mut stage = Stage::Deployment;
    while let Some(next) = stage.next() {
        let mut probe = goods_for(server, session, n, method, stage).await;
        if !out_of_place(&mut probe).await {
            break;
        }
        stage = next;
    }
    goods_for(server, session, n, method, stage).await
}

/// One single-field change: where, what it is called, the new value (`None`: unset).
struct Change {
    path: FieldPath,
    label: &'static str,
    value: Option<Value>,
    /// Whether the answer must be `INVALID_ARGUMENT` (a NUL in a string).
    must_refuse: bool,
}

/// Every single-field change of `message` (whose descriptors are `desc`), recursing into
/// sub-messages (the first element of a list) up to [`MAX_PATH`] fields deep.
fn changes(current: &DynamicMessage, prefix: &[FieldDescriptor], out: &mut Vec<Change>) {
    for field in current.descriptor().fields() {
        assert!(
            !field.is_map(),
            "{} is a map: the sweep does not mutate maps yet; extend it",
            field.full_name()
        );
        let mut fields = prefix.to_vec();
        fields.push(field.clone());
        let path = FieldPath {
            fields: fields.clone(),
        };
        let set = current.has_field(&field);
        let value = current.get_field(&field).into_owned();
        let mut push = |label: &'static str, new: Option<Value>, must_refuse: bool| {
            let same = match &new {
                None => !set,
                Some(new) => {
                    (set && *new == value)
                        || (!set && !field.supports_presence() && new.is_default_for_field(&field))
                }
            };
            if !same {
                out.push(Change {
                    path: path.clone(),
                    label,
                    value: new,
                    must_refuse,
                });
            }
        };
        if field.is_list() {
            let items = value.as_list().unwrap_or_default().to_vec();
            let element = items
                .first()
                .cloned()
                .unwrap_or_else(|| long_list_element(&field.kind()));
            push(
                "1000 items",
                Some(Value::List(vec![element.clone(); LONG_LIST])),
                false,
            );
            push("no items", Some(Value::List(Vec::new())), false);
            if let (Kind::Message(_), Value::Message(first)) = (field.kind(), &element)
                && fields.len() < MAX_PATH
            {
                changes(first, &fields, out);
            }
            continue;
        }
        match field.kind() {
            Kind::Message(m) => {
                push("unset", None, false);
                if fields.len() < MAX_PATH {
                    let sub = match &value {
                        Value::Message(sub) => sub.clone(),
                        _ => DynamicMessage::new(m),
                    };
                    changes(&sub, &fields, out);
                }
            }
            Kind::String => {
                let s = value.as_str().unwrap_or_default().to_string();
                let with = |middle: &str| match s.is_empty() {
                    true => format!("a{middle}b"),
                    false => format!("{s}{middle}{s}"),
                };
                push("empty", Some(Value::String(String::new())), false);
                push("10 KiB", Some(Value::String("x".repeat(BIG_STRING))), false);
                push("NUL", Some(Value::String(with("\0"))), true);
                push(
                    "control chars",
                    Some(Value::String(with("\u{1}\u{8}\u{1b}[2J\r\n\u{7f}"))),
                    false,
                );
            }
            Kind::Bytes => {
                push("empty", Some(Value::Bytes(Default::default())), false);
                push(
                    "10 KiB",
                    Some(Value::Bytes(vec![b'x'; BIG_STRING].into())),
                    false,
                );
            }
            Kind::Enum(_) => {
                push("enum 999", Some(Value::EnumNumber(999)), false);
                push("enum -1", Some(Value::EnumNumber(-1)), false);
            }
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
                for (label, n) in [("0", 0), ("max", i32::MAX), ("min", i32::MIN), ("-1", -1)] {
                    push(label, Some(Value::I32(n)), false);
                }
            }
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
                for (label, n) in [("0", 0), ("max", i64::MAX), ("min", i64::MIN), ("-1", -1)] {
                    push(label, Some(Value::I64(n)), false);
                }
            }
            Kind::Uint32 | Kind::Fixed32 => {
                push("0", Some(Value::U32(0)), false);
                push("max", Some(Value::U32(u32::MAX)), false);
            }
            Kind::Uint64 | Kind::Fixed64 => {
                push("0", Some(Value::U64(0)), false);
                push("max", Some(Value::U64(u64::MAX)), false);
            }
            Kind::Float => {
                push("NaN", Some(Value::F32(f32::NAN)), false);
                push("inf", Some(Value::F32(f32::INFINITY)), false);
            }
            Kind::Double => {
                push("NaN", Some(Value::F64(f64::NAN)), false);
                push("inf", Some(Value::F64(f64::INFINITY)), false);
            }
            Kind::Bool => push(
                "flipped",
                Some(Value::Bool(!value.as_bool().unwrap_or(false))),
                false,
            ),
        }
    }
}

/// An element for the long-list mutation of an empty list.
fn long_list_element(kind: &Kind) -> Value {
    match kind {
        Kind::String => Value::String("x".into()),
        Kind::Message(m) => Value::Message(DynamicMessage::new(m.clone())),
        other => Value::default_value(other),
    }
}

/// `message` with the field at `path` set to `value` (unset for `None`), creating the messages
/// (and a list's first element) on the way.
fn with_change(message: &DynamicMessage, path: &FieldPath, value: Option<Value>) -> DynamicMessage {
    fn set(message: &mut DynamicMessage, fields: &[FieldDescriptor], value: Option<Value>) {
        let (field, rest) = fields.split_first().expect("a path has a field");
        if rest.is_empty() {
            match value {
                Some(value) => message.set_field(field, value),
                None => message.clear_field(field),
            }
            return;
        }
        let Kind::Message(sub_desc) = field.kind() else {
            panic!("{} on a path is not a message", field.full_name());
        };
        let sub = match message.get_field_mut(field) {
            Value::Message(sub) => sub,
            Value::List(items) => {
                if items.is_empty() {
                    items.push(Value::Message(DynamicMessage::new(sub_desc)));
                }
                match &mut items[0] {
                    Value::Message(sub) => sub,
                    other => panic!("{}: a list of {other:?}", field.full_name()),
                }
            }
            other => panic!("{}: {other:?} is not a message", field.full_name()),
        };
        set(sub, rest, value);
    }
    let mut changed = message.clone();
    set(&mut changed, &path.fields, value);
    changed
}

/// Whether `bytes` decode as a `desc` message.
fn decodes(desc: &MessageDescriptor, bytes: &[u8]) -> bool {
    DynamicMessage::decode(desc.clone(), bytes).is_ok()
}

/// `count` random byte strings (16 to 255 bytes) from `rng`.
pub fn random_bytes(rng: &mut GameRng, count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|_| {
            let len = 16 + rng.below(240) as usize;
            (0..len).map(|_| rng.next_u64() as u8).collect()
        })
        .collect()
}

/// Every request of the sweep of one method: the baseline itself, every single-field change of
/// it, an invalid UTF-8 string in each string field (spliced in on the wire: no encoder would
/// write one), random bytes (`rng`), the baseline cut short by a byte, and an oversized message.
/// `fresh` makes a new baseline (same fields, fresh keys) for each request, so that no two
/// requests share an idempotency key.
pub fn mutations(mut fresh: impl FnMut() -> DynamicMessage, rng: &mut GameRng) -> Vec<Mutation> {
    let baseline = fresh();
    let desc = baseline.descriptor();
    let mut out = vec![Mutation {
        label: "baseline".into(),
        body: baseline.encode_to_vec(),
        expect: Expect::default(),
    }];
    let mut all = Vec::new();
    changes(&baseline, &[], &mut all);
    for change in &all {
        out.push(Mutation {
            label: format!("{}={}", change.path.display(), change.label),
            body: with_change(&fresh(), &change.path, change.value.clone()).encode_to_vec(),
            expect: Expect {
                code: change.must_refuse.then_some(Code::InvalidArgument),
                field: Some(change.path.clone()),
            },
        });
    }
    let undecodable = |body: &[u8]| (!decodes(&desc, body)).then_some(Code::InvalidArgument);
    for change in all.iter().filter(|c| c.label == "empty") {
        let fields = &change.path.fields;
        let leaf = fields.last().expect("a field");
        if leaf.kind() != Kind::String || fields.iter().any(FieldDescriptor::is_list) {
            continue;
        }
        // The field last on the wire wins, and a repeated sub-message merges into the first.
        let mut inner = Vec::new();
        encode_key(leaf.number(), WireType::LengthDelimited, &mut inner);
        encode_varint(3, &mut inner);
        inner.extend_from_slice(&[b'a', 0xC3, 0x28]);
        for parent in fields[..fields.len() - 1].iter().rev() {
            let mut outer = Vec::new();
            encode_key(parent.number(), WireType::LengthDelimited, &mut outer);
            encode_varint(inner.len() as u64, &mut outer);
            outer.extend_from_slice(&inner);
            inner = outer;
        }
        let mut body = fresh().encode_to_vec();
        body.extend_from_slice(&inner);
        out.push(Mutation {
            label: format!("{}=invalid UTF-8", change.path.display()),
            expect: Expect {
                code: undecodable(&body),
                field: None,
            },
            body,
        });
    }
    for (i, body) in random_bytes(rng, 3).into_iter().enumerate() {
        out.push(Mutation {
            label: format!("random bytes #{i} ({} B)", body.len()),
            expect: Expect {
                code: undecodable(&body),
                field: None,
            },
            body,
        });
    }
    let encoded = fresh().encode_to_vec();
    if !encoded.is_empty() {
        let body = encoded[..encoded.len() - 1].to_vec();
        out.push(Mutation {
            label: "truncated by a byte".into(),
            expect: Expect {
                code: undecodable(&body),
                field: None,
            },
            body,
        });
    }
    let mut body = fresh().encode_to_vec();
    encode_key(10_000, WireType::LengthDelimited, &mut body);
    encode_varint(OVERSIZED as u64, &mut body);
    body.extend_from_slice(&vec![b'x'; OVERSIZED]);
    out.push(Mutation {
        label: format!("oversized ({} KiB)", body.len() / 1024),
        body,
        expect: Expect {
            code: Some(Code::OutOfRange),
            field: None,
        },
    });
    out
}

/// The canonical proto3 JSON form of `message` (lowerCamelCase names, enums by name, 64-bit
/// integers as strings), as the WebSocket API reads it.
pub fn to_json(message: &DynamicMessage) -> Json {
    let mut object = serde_json::Map::new();
    for field in message.descriptor().fields() {
        if message.has_field(&field) {
            let value = message.get_field(&field);
            object.insert(
                field.json_name().to_string(),
                value_json(&field.kind(), &value),
            );
        }
    }
    Json::Object(object)
}

fn value_json(kind: &Kind, value: &Value) -> Json {
    match value {
        Value::Bool(b) => json!(b),
        Value::I32(n) => json!(n),
        Value::U32(n) => json!(n),
        Value::I64(n) => json!(n.to_string()),
        Value::U64(n) => json!(n.to_string()),
        Value::F32(n) => json!(n),
        Value::F64(n) => json!(n),
        Value::String(s) => json!(s),
        Value::Bytes(_) => panic!("the sweep writes no bytes fields as JSON yet; extend it"),
        Value::EnumNumber(n) => match kind {
            Kind::Enum(e) => e
                .get_value(*n)
                .map_or_else(|| json!(n), |v| json!(v.name())),
            _ => json!(n),
        },
        Value::Message(m) => to_json(m),
        Value::List(items) => Json::Array(items.iter().map(|v| value_json(kind, v)).collect()),
        Value::Map(_) => panic!("the sweep writes no map fields as JSON yet; extend it"),
    }
}

/// One request of the WebSocket sweep: a label, the `request` JSON, what the answer must be.
#[derive(Debug, Clone)]
pub struct JsonMutation {
    /// E.g. `context.idempotencyKey=NUL`.
    pub label: String,
    /// The `request` member of the client message.
    pub request: Json,
    /// What the answer must be.
    pub expect: Expect,
}

/// The JSON path of a field path: JSON names, a list's first element.
fn json_path(path: &FieldPath) -> Vec<(String, bool)> {
    path.fields
        .iter()
        .map(|f| (f.json_name().to_string(), f.is_list()))
        .collect()
}

/// `root` with `value` at `path` (objects and a list's first element created on the way).
fn json_with(root: &Json, path: &[(String, bool)], value: Json) -> Json {
    fn set(node: &mut Json, path: &[(String, bool)], value: Json) {
        let ((name, list), rest) = path.split_first().expect("a path has a field");
        if !node.is_object() {
            *node = json!({});
        }
        let object = node.as_object_mut().expect("an object");
        if rest.is_empty() {
            object.insert(name.clone(), value);
            return;
        }
        let child = object.entry(name.clone()).or_insert_with(|| json!({}));
        if *list {
            if !child.is_array() || child.as_array().is_some_and(Vec::is_empty) {
                *child = json!([{}]);
            }
            set(&mut child.as_array_mut().expect("an array")[0], rest, value);
        } else {
            set(child, rest, value);
        }
    }
    let mut changed = root.clone();
    set(&mut changed, path, value);
    changed
}

/// Every request of the WebSocket sweep of one operation, from the gRPC baseline of its method:
/// the baseline; per field the well-typed changes of [`mutations`] (the answer must then name
/// the field) and wrong JSON types, invalid enum names and out-of-range numbers (refused with
/// `INVALID_ARGUMENT`); an unknown field in every object; a request that is not an object, and
/// one nested 100 deep.
/// `fresh` as for [`mutations`].
pub fn json_mutations(mut fresh: impl FnMut() -> DynamicMessage) -> Vec<JsonMutation> {
    let baseline = fresh();
    let base = to_json(&baseline);
    let refused = Expect {
        code: Some(Code::InvalidArgument),
        field: None,
    };
    let mut out = vec![JsonMutation {
        label: "baseline".into(),
        request: base.clone(),
        expect: Expect::default(),
    }];
    let mut all = Vec::new();
    changes(&baseline, &[], &mut all);
    let mut objects = vec![(String::new(), Vec::new())];
    let mut seen = std::collections::BTreeSet::new();
    for change in &all {
        let path = json_path(&change.path);
        let display = change.path.json_display();
        let leaf = change.path.fields.last().expect("a field");
        let value = match &change.value {
            None => Json::Null,
            Some(v) => value_json(&leaf.kind(), v),
        };
        out.push(JsonMutation {
            label: format!("{display}={}", change.label),
            request: json_with(&to_json(&fresh()), &path, value),
            expect: Expect {
                code: change.must_refuse.then_some(Code::InvalidArgument),
                field: Some(change.path.clone()),
            },
        });
        // Wrong types and unreadable values, once per field (on its first change).
        if seen.insert(display.clone()) {
            let wrong: Vec<(&str, Json)> = if leaf.is_list() {
                vec![("not a list", json!({"x": 1}))]
            } else {
                match leaf.kind() {
                    Kind::Message(_) => {
                        objects.push((display.clone(), path.clone()));
                        vec![("a string", json!("x")), ("a list", json!([1]))]
                    }
                    Kind::String => {
                        vec![("a number", json!(12345)), ("an object", json!({"x": 1}))]
                    }
                    Kind::Enum(_) => vec![
                        ("unknown name", json!("NOT_A_VALUE")),
                        ("a bool", json!(true)),
                    ],
                    Kind::Bool => vec![("a string", json!("yes")), ("a number", json!(1))],
                    Kind::Uint32 | Kind::Uint64 | Kind::Fixed32 | Kind::Fixed64 => vec![
                        ("-1", json!(-1)),
                        ("1.5", json!(1.5)),
                        ("1e30", json!(1e30)),
                        ("2^64 as string", json!("18446744073709551616")),
                        ("a word", json!("abc")),
                    ],
                    _ => vec![("1e300", json!(1e300)), ("a word", json!("abc"))],
                }
            };
            for (label, value) in wrong {
                out.push(JsonMutation {
                    label: format!("{display}={label}"),
                    request: json_with(&to_json(&fresh()), &path, value),
                    expect: refused.clone(),
                });
            }
        }
    }
    for (display, path) in objects {
        let mut with_unknown = path.clone();
        with_unknown.push(("bogusField".to_string(), false));
        let label = match display.is_empty() {
            true => "unknown field".to_string(),
            false => format!("{display}.bogusField=unknown field"),
        };
        out.push(JsonMutation {
            label,
            request: json_with(&to_json(&fresh()), &with_unknown, json!(1)),
            expect: refused.clone(),
        });
    }
    let mut deep = json!(1);
    for _ in 0..100 {
        deep = json!([deep]);
    }
    for (label, request) in [
        ("request a string", json!("x")),
        ("request a list", json!([1, 2])),
        ("request a number", json!(7)),
        ("request nested 100 deep", json!({"deep": deep})),
    ] {
        out.push(JsonMutation {
            label: label.into(),
            request,
            expect: refused.clone(),
        });
    }
    out
}

/// A problem with one answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// A code no input may get (UNKNOWN, INTERNAL, UNAVAILABLE, DATA_LOSS).
    ForbiddenCode,
    /// No answer within the deadline.
    TimedOut,
    /// The WebSocket connection closed (with this close code, if any) where it should not.
    Closed(Option<u16>),
    /// Another code than the one this input must get.
    WrongCode(String),
    /// An error message longer than [`MAX_ERROR_MESSAGE`] (or a WebSocket error frame longer
    /// than its allowance): its length.
    TooLong(usize),
    /// The offending value echoed whole (a run of [`ECHO_RUN`] `x`).
    Echoes,
    /// No ErrorInfo with a reason (or, on the WebSocket, no `reason`).
    NoReason,
    /// A reason that is not SCREAMING_SNAKE_CASE (or details that do not decode).
    BadReason(String),
    /// An INVALID_ARGUMENT for a single-field change whose violations do not name the field.
    NoFieldViolation(Vec<String>),
    /// A WebSocket answer of the wrong shape.
    Malformed(String),
    /// A check after the sweep failed (store errors, the server's life, a normal game).
    After(String),
}

impl Problem {
    /// The kind of problem, for the summary; kinds are ordered by how bad they are.
    fn kind(&self) -> (u8, &'static str) {
        match self {
            Problem::After(_) => (0, "after the sweep"),
            Problem::ForbiddenCode => {
                (1, "forbidden code (UNKNOWN/INTERNAL/UNAVAILABLE/DATA_LOSS)")
            }
            Problem::TimedOut => (2, "no answer in time"),
            Problem::Closed(_) => (3, "connection closed"),
            Problem::Malformed(_) => (4, "malformed answer"),
            Problem::WrongCode(_) => (5, "wrong code"),
            Problem::TooLong(_) => (6, "error message over 1 KiB"),
            Problem::Echoes => (7, "echoes the offending value"),
            Problem::NoFieldViolation(_) => {
                (8, "INVALID_ARGUMENT without a violation naming the field")
            }
            Problem::BadReason(_) => (9, "reason not SCREAMING_SNAKE_CASE"),
            Problem::NoReason => (10, "refusal without an ErrorInfo reason"),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::ForbiddenCode => write!(f, "forbidden code"),
            Problem::TimedOut => write!(f, "timed out"),
            Problem::Closed(code) => write!(f, "closed ({code:?})"),
            Problem::WrongCode(wanted) => write!(f, "want {wanted}"),
            Problem::TooLong(len) => write!(f, "{len} B long"),
            Problem::Echoes => write!(f, "echoes {ECHO_RUN}+ x"),
            Problem::NoReason => write!(f, "no reason"),
            Problem::BadReason(reason) => write!(f, "reason {}", prefix(reason, 24)),
            Problem::NoFieldViolation(got) => {
                write!(f, "violations {}", prefix(&format!("{got:?}"), 40))
            }
            Problem::Malformed(why) => write!(f, "{}", prefix(why, 50)),
            Problem::After(why) => write!(f, "{}", prefix(why, 120)),
        }
    }
}

/// The kind of a mutation label: what comes after `=` (`NUL`, `10 KiB`), or the label without
/// its details (`random bytes #2 (40 B)` -> `random bytes`).
fn category(label: &str) -> &str {
    match label.rsplit_once('=') {
        Some((_, kind)) => kind,
        None => {
            let end = label.find([' ', '#', '(']).map_or(label.len(), |i| {
                label[i..].find(['#', '(']).map_or(label.len(), |j| i + j)
            });
            label[..end].trim_end()
        }
    }
}

/// At most `max` characters of `text`, with `…` when cut; control characters escaped.
fn prefix(text: &str, max: usize) -> String {
    let escaped: String = text.chars().flat_map(char::escape_debug).collect();
    match escaped.chars().count() > max {
        true => format!("{}…", escaped.chars().take(max).collect::<String>()),
        false => escaped,
    }
}

/// Whether `reason` is a stable reason: SCREAMING_SNAKE_CASE, at most 63 characters.
pub fn is_screaming_snake(reason: &str) -> bool {
    reason.len() <= 63
        && reason.starts_with(|c: char| c.is_ascii_uppercase())
        && reason
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Whether `text` holds a run of [`ECHO_RUN`] `x`: the 10 KiB filler echoed.
pub fn echoes(text: &str) -> bool {
    text.contains(&"x".repeat(ECHO_RUN))
}

/// The checks of one gRPC answer: its code name, message length and problems.
pub fn check_answer(answer: &Answer, expect: &Expect) -> (String, usize, Vec<Problem>) {
    let status = match answer {
        Answer::TimedOut => return ("-".into(), 0, vec![Problem::TimedOut]),
        Answer::Ok | Answer::StreamOpen => {
            let problems = match expect.code {
                Some(code) => vec![Problem::WrongCode(code_name(code).into())],
                None => Vec::new(),
            };
            let name = match answer {
                Answer::StreamOpen => "OK (open)",
                _ => "OK",
            };
            return (name.into(), 0, problems);
        }
        Answer::Refused(status) => status,
    };
    let mut problems = Vec::new();
    let code = status.code();
    if FORBIDDEN_CODES.contains(&code) {
        problems.push(Problem::ForbiddenCode);
    }
    if let Some(wanted) = expect.code
        && wanted != code
    {
        problems.push(Problem::WrongCode(code_name(wanted).into()));
    }
    let message = status.message();
    if message.len() > MAX_ERROR_MESSAGE {
        problems.push(Problem::TooLong(message.len()));
    }
    if echoes(message) || echoes(&String::from_utf8_lossy(status.details())) {
        problems.push(Problem::Echoes);
    }
    match status.check_error_details() {
        Err(e) => problems.push(Problem::BadReason(format!("details undecodable: {e}"))),
        Ok(details) => {
            match details.error_info() {
                None => problems.push(Problem::NoReason),
                Some(info) if !is_screaming_snake(&info.reason) => {
                    problems.push(Problem::BadReason(info.reason.clone()));
                }
                Some(_) => {}
            }
            if code == Code::InvalidArgument
                && let Some(path) = &expect.field
            {
                let fields: Vec<String> = details
                    .bad_request()
                    .map(|b| b.field_violations.iter().map(|v| v.field.clone()).collect())
                    .unwrap_or_default();
                if !fields.iter().any(|f| path.named_by(f)) {
                    problems.push(Problem::NoFieldViolation(fields));
                }
            }
        }
    }
    (code_name(code).into(), message.len(), problems)
}

/// How much longer than [`MAX_ERROR_MESSAGE`] a WebSocket error frame may be: the envelope
/// (`id` aside), code, reason and the field violations (a refused deployment lists each of its
/// problems, at most 48 violations of at most 160-byte parts).
pub const WS_ENVELOPE_ALLOWANCE: usize = 4096;

/// The checks of one WebSocket answer `frame` (`raw_len` bytes of text) to a message sent with
/// `id` (`null` when the message's id could not be read): its code name (`OK` for a result),
/// message length and problems. An error must be `{"id","type":"error","code","reason",
/// "message"}` (plus `fieldViolations: [{"field","description"}]`), with the same rules as a
/// gRPC refusal.
pub fn check_ws_answer(
    frame: &Json,
    raw_len: usize,
    id: &Json,
    expect: &Expect,
) -> (String, usize, Vec<Problem>) {
    let mut problems = Vec::new();
    if frame.get("id") != Some(id) {
        problems.push(Problem::Malformed(format!(
            "id {} for {}",
            prefix(&frame.get("id").map_or("none".into(), Json::to_string), 20),
            prefix(&id.to_string(), 20)
        )));
    }
    match frame.get("type").and_then(Json::as_str) {
        Some("result") => {
            if let Some(code) = expect.code {
                problems.push(Problem::WrongCode(code_name(code).into()));
            }
            return ("OK".into(), 0, problems);
        }
        Some("error") => {}
        other => {
            problems.push(Problem::Malformed(format!("type {other:?}")));
            return ("-".into(), 0, problems);
        }
    }
    let code = frame
        .get("code")
        .and_then(Json::as_str)
        .unwrap_or("-")
        .to_string();
    if FORBIDDEN_CODES.iter().any(|c| code_name(*c) == code) {
        problems.push(Problem::ForbiddenCode);
    }
    if let Some(wanted) = expect.code
        && code_name(wanted) != code
    {
        problems.push(Problem::WrongCode(code_name(wanted).into()));
    }
    let message = frame.get("message").and_then(Json::as_str);
    let message_len = message.map_or(0, str::len);
    match message {
        None => problems.push(Problem::Malformed("no message".into())),
        Some(m) if m.len() > MAX_ERROR_MESSAGE => problems.push(Problem::TooLong(m.len())),
        Some(_) => {}
    }
    let allowance = MAX_ERROR_MESSAGE + WS_ENVELOPE_ALLOWANCE + id.to_string().len();
    if raw_len > allowance && message_len <= MAX_ERROR_MESSAGE {
        problems.push(Problem::TooLong(raw_len));
    }
    if echoes(&frame.to_string()) {
        problems.push(Problem::Echoes);
    }
    match frame.get("reason").and_then(Json::as_str) {
        None | Some("") => problems.push(Problem::NoReason),
        Some(reason) if !is_screaming_snake(reason) => {
            problems.push(Problem::BadReason(reason.to_string()));
        }
        Some(_) => {}
    }
    if code == "INVALID_ARGUMENT"
        && let Some(path) = &expect.field
    {
        let fields: Vec<String> = frame
            .get("fieldViolations")
            .and_then(Json::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|v| v.get("field").and_then(Json::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if !fields.iter().any(|f| path.named_by(f)) {
            problems.push(Problem::NoFieldViolation(fields));
        }
    }
    (code, message_len, problems)
}

/// One row of the failure table.
#[derive(Debug, Clone)]
struct Finding {
    target: String,
    mutation: String,
    code: String,
    message_len: usize,
    problems: Vec<Problem>,
}

/// The answers of a sweep, and the table of the ones with problems.
#[derive(Debug, Default)]
pub struct Sweep {
    findings: Vec<Finding>,
    answers: usize,
    codes: BTreeMap<String, usize>,
}

impl Sweep {
    /// Records one answer of `target` (a method or WebSocket op) to `mutation`.
    pub fn record(
        &mut self,
        target: &str,
        mutation: &str,
        code: &str,
        message_len: usize,
        problems: Vec<Problem>,
    ) {
        self.answers += 1;
        *self.codes.entry(code.to_string()).or_default() += 1;
        if !problems.is_empty() {
            self.findings.push(Finding {
                target: target.to_string(),
                mutation: mutation.to_string(),
                code: code.to_string(),
                message_len,
                problems,
            });
        }
    }

    /// Records a failed check after the sweep.
    pub fn after(&mut self, what: &str, why: String) {
        self.findings.push(Finding {
            target: what.to_string(),
            mutation: "-".into(),
            code: "-".into(),
            message_len: 0,
            problems: vec![Problem::After(why)],
        });
    }

    /// How many answers were recorded.
    pub fn answers(&self) -> usize {
        self.answers
    }

    /// The compact report: totals, codes seen, problems by kind, then up to [`MAX_ROWS`] rows
    /// (`target | mutation | code | message length | problems`), the worst kinds first and at
    /// most [`ROWS_PER_KIND`] per kind.
    pub fn report(&self) -> String {
        let mut out = format!(
            "{} answers, {} with problems; codes: {}\n",
            self.answers,
            self.findings.len(),
            self.codes
                .iter()
                .map(|(code, n)| format!("{code} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut by_kind: BTreeMap<(u8, &str), Vec<&Finding>> = BTreeMap::new();
        for finding in &self.findings {
            let worst = finding
                .problems
                .iter()
                .map(Problem::kind)
                .min()
                .expect("a finding has a problem");
            by_kind.entry(worst).or_default().push(finding);
        }
        for ((_, kind), findings) in by_kind.iter_mut() {
            let targets: std::collections::BTreeSet<&str> =
                findings.iter().map(|f| f.target.as_str()).collect();
            let mut categories: BTreeMap<&str, usize> = BTreeMap::new();
            for finding in findings.iter() {
                *categories.entry(category(&finding.mutation)).or_default() += 1;
            }
            let mut categories: Vec<(&str, usize)> = categories.into_iter().collect();
            categories.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
            out.push_str(&format!(
                "  {:>5} × {kind}, in {} RPCs/ops; by mutation: {}\n",
                findings.len(),
                targets.len(),
                prefix(
                    &categories
                        .iter()
                        .map(|(c, n)| format!("{c} {n}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    100
                )
            ));
            // Examples as varied as possible: the first of each service and kind of mutation,
            // then the second of each...
            let mut rank: BTreeMap<(&str, &str), usize> = BTreeMap::new();
            let mut keyed: Vec<(usize, usize, &Finding)> = findings
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    // A WebSocket op (no `/`) counts as one service: vary the mutations.
                    let service = f.target.split_once('/').map_or("", |(s, _)| s);
                    let r = rank.entry((service, category(&f.mutation))).or_default();
                    *r += 1;
                    (*r, i, *f)
                })
                .collect();
            keyed.sort_by_key(|(r, i, _)| (*r, *i));
            *findings = keyed.into_iter().map(|(_, _, f)| f).collect();
        }
        out.push_str(&format!(
            "{:<34} {:<46} {:<19} {:>5}  problems\n",
            "rpc / op", "mutation", "code", "len"
        ));
        let mut rows = 0;
        for findings in by_kind.values() {
            for finding in findings.iter().take(ROWS_PER_KIND) {
                if rows == MAX_ROWS {
                    break;
                }
                rows += 1;
                out.push_str(&format!(
                    "{:<34} {:<46} {:<19} {:>5}  {}\n",
                    prefix(&finding.target, 34),
                    prefix(&finding.mutation, 46),
                    finding.code,
                    finding.message_len,
                    finding
                        .problems
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; ")
                ));
            }
        }
        if rows < self.findings.len() {
            out.push_str(&format!("… and {} more rows\n", self.findings.len() - rows));
        }
        out
    }

    /// Panics with [`Sweep::report`] unless every answer passed.
    #[track_caller]
    pub fn assert_clean(&self, what: &str) {
        assert!(
            self.findings.is_empty(),
            "{what}: bad answers\n{}",
            self.report()
        );
        eprintln!("{what}: {}", self.report());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goods() -> Goods {
        let placements = [("A1", "9"), ("B1", "8"), ("C1", "F")]
            .map(|(square, piece)| pb::Placement {
                square: square.into(),
                piece: piece.into(),
            })
            .to_vec();
        Goods::new(
            "01a227f0-1df6-7473-9e35-d126ae179a1e",
            PLAYER,
            OPPONENT,
            "K7QX2M",
            placements,
        )
    }

    fn method(service: &str, name: &str) -> MethodDescriptor {
        descriptor_pool()
            .get_service_by_name(&format!("{PACKAGE}.{service}"))
            .and_then(|s| s.methods().find(|m| m.name() == name))
            .unwrap_or_else(|| panic!("{service}/{name}"))
    }

    fn labels<T>(items: &[T], label: impl Fn(&T) -> &str) -> Vec<String> {
        items.iter().map(|m| label(m).to_string()).collect()
    }

    #[test]
    fn every_service_of_the_package_is_enumerated() {
        let pool = descriptor_pool();
        let services: std::collections::BTreeSet<String> = methods(&pool)
            .iter()
            .map(|m| m.parent_service().name().to_string())
            .collect();
        for service in [
            "SessionService",
            "PlayerService",
            "ClockService",
            "MatchmakingService",
        ] {
            assert!(services.contains(service), "{service} not in {services:?}");
        }
        assert_eq!(snake_case("GetMyRating"), "get_my_rating");
        assert_eq!(snake_case("Subscribe"), "subscribe");
    }

    #[test]
    fn the_json_form_is_pbjsons() {
        let mut goods = goods();
        for (service, name) in [("PlayerService", "Deploy"), ("PlayerService", "Play")] {
            let dynamic = baseline(&method(service, name), &mut goods);
            let bytes = dynamic.encode_to_vec();
            let expected = match name {
                "Deploy" => {
                    serde_json::to_value(pb::DeployRequest::decode(bytes.as_slice()).unwrap())
                }
                _ => serde_json::to_value(pb::PlayRequest::decode(bytes.as_slice()).unwrap()),
            }
            .expect("pbjson serializes");
            assert_eq!(to_json(&dynamic), expected, "{name}");
        }
        let mut with_version = baseline(&method("PlayerService", "Play"), &mut goods);
        let context = with_version.get_field_by_name_mut("context").unwrap();
        if let Value::Message(context) = context {
            context.set_field_by_name("expected_version", Value::U64(7));
        }
        assert_eq!(
            to_json(&with_version)["context"]["expectedVersion"],
            json!("7")
        );
    }

    #[test]
    fn the_mutations_of_a_move_cover_each_field_and_the_wire() {
        let mut goods = goods();
        let submit = method("SessionService", "SubmitMove");
        let mut rng = GameRng::from_seed(1);
        let all = mutations(|| baseline(&submit, &mut goods), &mut rng);
        let names = labels(&all, |m| &m.label);
        for wanted in [
            "baseline",
            "context=unset",
            "context.game_id=10 KiB",
            "context.side=enum 999",
            "context.idempotency_key=NUL",
            "context.idempotency_key=invalid UTF-8",
            "context.expected_version=max",
            "move.from=control chars",
            "move.to=empty",
            "truncated by a byte",
        ] {
            assert!(
                names.iter().any(|n| n == wanted),
                "no {wanted} in {names:?}"
            );
        }
        let nul = all
            .iter()
            .find(|m| m.label == "context.idempotency_key=NUL")
            .unwrap();
        assert_eq!(nul.expect.code, Some(Code::InvalidArgument));
        let path = nul.expect.field.as_ref().expect("a field");
        assert_eq!(path.display(), "context.idempotency_key");
        assert!(
            path.named_by("context.idempotency_key") && path.named_by("context.idempotencyKey")
        );
        assert!(!path.named_by("context.game_id") && !path.named_by(""));
        let decoded = pb::SubmitMoveRequest::decode(nul.body.as_slice()).expect("it decodes");
        assert!(decoded.context.unwrap().idempotency_key.contains('\0'));
        for m in &all {
            let decodes = pb::SubmitMoveRequest::decode(m.body.as_slice()).is_ok();
            match m.expect.code {
                Some(Code::InvalidArgument) if m.expect.field.is_none() => {
                    assert!(!decodes, "{} decodes, yet is expected undecodable", m.label);
                }
                Some(Code::OutOfRange) => assert!(m.body.len() > 64 * 1024, "{}", m.label),
                _ => assert!(decodes, "{} does not decode", m.label),
            }
        }
        // Fresh keys: no two requests share an idempotency key (but the one mutating it).
        let keys: Vec<String> = all
            .iter()
            .filter(|m| {
                m.expect
                    .field
                    .as_ref()
                    .is_some_and(|p| p.display() != "context.idempotency_key")
            })
            .filter_map(|m| pb::SubmitMoveRequest::decode(m.body.as_slice()).ok())
            .filter_map(|r| r.context.map(|c| c.idempotency_key))
            .collect();
        let unique: std::collections::BTreeSet<&String> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len(), "{keys:?}");
    }

    #[test]
    fn json_mutations_are_refused_by_pbjson_exactly_when_expected() {
        let mut goods = goods();
        let play = method("PlayerService", "Play");
        let all = json_mutations(|| baseline(&play, &mut goods));
        let names = labels(&all, |m| &m.label);
        for wanted in [
            "context.idempotencyKey=NUL",
            "context.idempotencyKey=a number",
            "context.expectedVersion=2^64 as string",
            "unknown field",
            "context.bogusField=unknown field",
            "request nested 100 deep",
        ] {
            assert!(
                names.iter().any(|n| n == wanted),
                "no {wanted} in {names:?}"
            );
        }
        for m in &all {
            let parses = serde_json::from_value::<pb::PlayRequest>(m.request.clone()).is_ok();
            let undecodable =
                m.expect.code == Some(Code::InvalidArgument) && m.expect.field.is_none();
            assert_eq!(
                parses,
                !undecodable,
                "{}: {}",
                m.label,
                prefix(&m.request.to_string(), 80)
            );
        }
    }

    #[test]
    fn answers_are_judged_as_documented() {
        let id = json!("m1");
        let field = FieldPath {
            fields: vec![
                method("PlayerService", "GetGame")
                    .input()
                    .get_field_by_name("game_id")
                    .unwrap(),
            ],
        };
        let expect = Expect {
            code: None,
            field: Some(field),
        };
        let good = json!({"id": "m1", "type": "error", "code": "INVALID_ARGUMENT", "reason": "BAD_GAME_ID",
            "message": "game_id is not a game id", "fieldViolations": [{"field": "game_id", "description": "not a UUID"}]});
        assert_eq!(check_ws_answer(&good, 150, &id, &expect).2, vec![]);
        let bad =
            json!({"id": "m2", "type": "error", "code": "INTERNAL", "message": "x".repeat(2000)});
        let problems = check_ws_answer(&bad, 2100, &id, &expect).2;
        for problem in [
            Problem::ForbiddenCode,
            Problem::TooLong(2000),
            Problem::Echoes,
            Problem::NoReason,
        ] {
            assert!(
                problems.contains(&problem),
                "{problem:?} not in {problems:?}"
            );
        }
        assert!(is_screaming_snake("NOT_YOUR_TURN") && !is_screaming_snake("notYourTurn"));
        assert!(!is_screaming_snake("") && !is_screaming_snake("_X"));
        assert_eq!(category("random bytes #2 (40 B)"), "random bytes");
        assert_eq!(category("context.side=enum 999"), "enum 999");
        assert_eq!(category("truncated by a byte"), "truncated by a byte");
    }
}
