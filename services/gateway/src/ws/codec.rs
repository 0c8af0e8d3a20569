//! Decoding of client messages: the envelope (`id`, `type`, `request`, or `token` for `auth`),
//! the table of ops by name, and each op's `request` decoded as the proto message the gRPC face
//! receives (proto3 JSON). A pure function of the text: any input gets a decoded [`Request`] or
//! a [`BadRequest`] naming what is wrong (with field violations for the request's fields), never
//! a panic.

use hidden_front_api_error::{ApiError, ErrorSummary, Reason, brief, quote};
use hidden_front_proto::v1 as pb;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tonic::Status;

/// The answer to a message over the size limit (`OUT_OF_RANGE`, `REQUEST_TOO_LARGE`).
pub(super) fn too_big(size: usize, limit: usize) -> Status {
    ApiError::new(
        Reason::RequestTooLarge,
        format!("message of {size} bytes is over the limit of {limit} bytes"),
    )
    .into()
}

/// The request of `unsubscribe` (not a proto message: it names a subscription of this
/// connection, which only this protocol has).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UnsubscribeRequest {
    pub(super) subscription: Value,
}

/// An operation a client may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Auth,
    Subscribe,
    Unsubscribe,
    GetGame,
    ListMyGames,
    LegalMoves,
    Reshuffle,
    Swap,
    Deploy,
    Confirm,
    Play,
    ProposeDraw,
    RespondDraw,
    Concede,
    FindMatch,
    CancelMatch,
    CreateInvite,
    AcceptInvite,
    CancelInvite,
    PlayComputer,
    GetMyRating,
    WatchLobby,
    ExportReplay,
    ListTournaments,
    JoinTournament,
    WithdrawTournament,
    GetTournament,
}

/// Every op by its `type` name.
pub(super) const OPS: [(&str, Op); 27] = [
    ("auth", Op::Auth),
    ("subscribe", Op::Subscribe),
    ("unsubscribe", Op::Unsubscribe),
    ("get_game", Op::GetGame),
    ("list_my_games", Op::ListMyGames),
    ("legal_moves", Op::LegalMoves),
    ("reshuffle", Op::Reshuffle),
    ("swap", Op::Swap),
    ("deploy", Op::Deploy),
    ("confirm", Op::Confirm),
    ("play", Op::Play),
    ("propose_draw", Op::ProposeDraw),
    ("respond_draw", Op::RespondDraw),
    ("concede", Op::Concede),
    ("find_match", Op::FindMatch),
    ("cancel_match", Op::CancelMatch),
    ("create_invite", Op::CreateInvite),
    ("accept_invite", Op::AcceptInvite),
    ("cancel_invite", Op::CancelInvite),
    ("play_computer", Op::PlayComputer),
    ("get_my_rating", Op::GetMyRating),
    ("watch_lobby", Op::WatchLobby),
    ("export_replay", Op::ExportReplay),
    ("list_tournaments", Op::ListTournaments),
    ("join_tournament", Op::JoinTournament),
    ("withdraw_tournament", Op::WithdrawTournament),
    ("get_tournament", Op::GetTournament),
];

impl Op {
    pub(super) fn parse(name: &str) -> Option<Op> {
        OPS.iter().find(|(n, _)| *n == name).map(|(_, op)| *op)
    }

    pub(super) fn name(self) -> &'static str {
        OPS.iter()
            .find(|(_, op)| *op == self)
            .map_or("?", |(name, _)| name)
    }
}

/// A client message, checked for shape; its `request` is decoded by the op.
#[derive(Debug)]
pub(super) struct Envelope {
    pub(super) id: Value,
    pub(super) op: Op,
    /// `{}` when absent.
    pub(super) request: Value,
    /// The token of `auth` (empty for other ops).
    pub(super) token: String,
}

/// Why a client message was not understood, and the id to answer it under (null if unknown).
#[derive(Debug)]
pub(super) struct BadRequest {
    pub(super) id: Value,
    pub(super) message: String,
    /// The fields at fault, when the request (not the envelope) did not decode.
    pub(super) violations: Vec<hidden_front_api_error::FieldViolation>,
}

impl BadRequest {
    /// The answer to send: `MALFORMED_REQUEST`, naming the fields at fault.
    pub(super) fn to_status(&self) -> Status {
        let mut error = ApiError::new(Reason::MalformedRequest, self.message.clone());
        for v in &self.violations {
            error = error.with_violation(v.field.clone(), v.description.clone());
        }
        error.into()
    }
}

/// Reads the envelope of a client message. Every failure names what was wrong.
pub(super) fn parse(text: &str) -> Result<Envelope, BadRequest> {
    let bad = |id: &Value, message: String| BadRequest {
        id: id.clone(),
        message,
        violations: Vec::new(),
    };
    let value: Value = serde_json::from_str(text).map_err(|e| {
        bad(
            &Value::Null,
            format!("malformed JSON: {}", brief(&e.to_string())),
        )
    })?;
    let Value::Object(mut fields) = value else {
        return Err(bad(
            &Value::Null,
            "a message is a JSON object: {\"id\": ..., \"type\": ..., \"request\": {...}}".into(),
        ));
    };
    // A parsed object keeps the last of repeated fields; a message must mean one thing (which
    // token, which request), so repeating one is refused.
    if let Err(e) = serde_json::from_str::<NoRepeatedFields>(text) {
        return Err(bad(&Value::Null, e.to_string()));
    }
    let id = fields.remove("id").unwrap_or(Value::Null);
    if !matches!(id, Value::Null | Value::Number(_) | Value::String(_)) {
        return Err(bad(&Value::Null, "id must be a number or a string".into()));
    }
    // Every answer echoes the id: a long one would make every answer long.
    if matches!(&id, Value::String(text) if text.len() > MAX_ID_BYTES) {
        return Err(bad(
            &Value::Null,
            format!("id must be at most {MAX_ID_BYTES} bytes"),
        ));
    }
    let name = match fields.remove("type") {
        Some(Value::String(name)) => name,
        Some(_) => return Err(bad(&id, "type must be a string".into())),
        None => return Err(bad(&id, "type is required (the op, e.g. \"play\")".into())),
    };
    let Some(op) = Op::parse(&name) else {
        let known: Vec<&str> = OPS.iter().map(|(name, _)| *name).collect();
        return Err(bad(
            &id,
            format!(
                "unknown type {}; expected one of {}",
                quote(&name),
                known.join(", ")
            ),
        ));
    };
    let token = fields.remove("token");
    let request = fields.remove("request");
    if let Some(field) = fields.keys().next() {
        return Err(bad(
            &id,
            format!(
                "unknown field {}; a message has id, type and request",
                quote(field)
            ),
        ));
    }
    if op == Op::Auth {
        if request.is_some() {
            return Err(bad(&id, "auth takes a token, not a request".into()));
        }
        return match token {
            Some(Value::String(token)) => Ok(Envelope {
                id,
                op,
                request: Value::Null,
                token,
            }),
            _ => Err(bad(&id, "auth needs a token (a string)".into())),
        };
    }
    if token.is_some() {
        return Err(bad(
            &id,
            "token belongs to the auth message only".to_string(),
        ));
    }
    if id.is_null() {
        return Err(bad(
            &id,
            format!("id is required (a number or a string) for {name}: answers are matched by it"),
        ));
    }
    let request = match request {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(request) => request,
    };
    Ok(Envelope {
        id,
        op,
        request,
        token: String::new(),
    })
}

/// Longest string `id` of a request (answers echo it).
pub(super) const MAX_ID_BYTES: usize = 128;

/// Deserializes from a JSON object only when no field of it appears twice (the values are
/// skipped: this is a check, [`parse`] reads them).
pub(super) struct NoRepeatedFields;

impl<'de> Deserialize<'de> for NoRepeatedFields {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Check;
        impl<'de> serde::de::Visitor<'de> for Check {
            type Value = NoRepeatedFields;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<NoRepeatedFields, A::Error> {
                let mut seen = std::collections::HashSet::new();
                while let Some(key) = map.next_key::<String>()? {
                    if !seen.insert(key.clone()) {
                        return Err(serde::de::Error::custom(format!(
                            "field {} appears twice: send each field once",
                            quote(&key)
                        )));
                    }
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
                Ok(NoRepeatedFields)
            }
        }
        deserializer.deserialize_map(Check)
    }
}

/// A proto request from its JSON form.
pub(super) fn decode<T: DeserializeOwned>(request: Value) -> Result<T, Status> {
    let error = match T::deserialize(&request) {
        Ok(decoded) => return Ok(decoded),
        Err(error) => error,
    };
    // Only to name the field: decode once more, noting the path to the value that failed.
    let path = match serde_path_to_error::deserialize::<_, T>(&request) {
        Err(e) if e.path().to_string() != "." => Some(e.path().to_string()),
        _ => None,
    };
    let what = brief(&error.to_string());
    let mut refusal = ApiError::new(Reason::MalformedRequest, format!("request: {what}"));
    if let Some(path) = path {
        refusal = refusal.with_violation(format!("request.{path}"), what);
    }
    Err(refusal.into())
}

/// A client message decoded in full: its op with the request as the proto message (or the
/// token of `auth`). What a text frame asks for, before anything acts on it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Request {
    Auth(String),
    Subscribe(pb::SubscribeRequest),
    Unsubscribe(UnsubscribeRequest),
    GetGame(pb::PlayerServiceGetGameRequest),
    ListMyGames(pb::ListMyGamesRequest),
    LegalMoves(pb::LegalMovesRequest),
    Reshuffle(pb::ReshuffleRequest),
    Swap(pb::SwapRequest),
    Deploy(pb::DeployRequest),
    Confirm(pb::ConfirmRequest),
    Play(pb::PlayRequest),
    ProposeDraw(pb::ProposeDrawRequest),
    RespondDraw(pb::RespondDrawRequest),
    Concede(pb::ConcedeRequest),
    FindMatch(pb::FindMatchRequest),
    CancelMatch(pb::CancelMatchRequest),
    CreateInvite(pb::PlayerServiceCreateInviteRequest),
    AcceptInvite(pb::PlayerServiceAcceptInviteRequest),
    CancelInvite(pb::PlayerServiceCancelInviteRequest),
    PlayComputer(pb::PlayerServicePlayComputerRequest),
    GetMyRating(pb::GetMyRatingRequest),
    WatchLobby(pb::WatchLobbyRequest),
    ExportReplay(pb::ExportReplayRequest),
    ListTournaments(pb::PlayerServiceListTournamentsRequest),
    JoinTournament(pb::PlayerServiceJoinTournamentRequest),
    WithdrawTournament(pb::PlayerServiceWithdrawTournamentRequest),
    GetTournament(pb::PlayerServiceGetTournamentRequest),
}

impl Request {
    /// Decodes the `request` of `envelope` as the proto message its op takes.
    pub(super) fn decode(envelope: Envelope) -> Result<Request, Status> {
        let Envelope {
            op, request, token, ..
        } = envelope;
        Ok(match op {
            Op::Auth => Request::Auth(token),
            Op::Subscribe => Request::Subscribe(decode(request)?),
            Op::Unsubscribe => {
                Request::Unsubscribe(serde_json::from_value(request).map_err(|e| {
                    Status::from(ApiError::new(
                        Reason::MalformedRequest,
                        format!(
                            "request: {}; unsubscribe takes {{\"subscription\": <the subscribe request's id>}}",
                            brief(&e.to_string())
                        ),
                    ))
                })?)
            }
            Op::GetGame => Request::GetGame(decode(request)?),
            Op::ListMyGames => Request::ListMyGames(decode(request)?),
            Op::LegalMoves => Request::LegalMoves(decode(request)?),
            Op::Reshuffle => Request::Reshuffle(decode(request)?),
            Op::Swap => Request::Swap(decode(request)?),
            Op::Deploy => Request::Deploy(decode(request)?),
            Op::Confirm => Request::Confirm(decode(request)?),
            Op::Play => Request::Play(decode(request)?),
            Op::ProposeDraw => Request::ProposeDraw(decode(request)?),
            Op::RespondDraw => Request::RespondDraw(decode(request)?),
            Op::Concede => Request::Concede(decode(request)?),
            Op::FindMatch => Request::FindMatch(decode(request)?),
            Op::CancelMatch => Request::CancelMatch(decode(request)?),
            Op::CreateInvite => Request::CreateInvite(decode(request)?),
            Op::AcceptInvite => Request::AcceptInvite(decode(request)?),
            Op::CancelInvite => Request::CancelInvite(decode(request)?),
            Op::PlayComputer => Request::PlayComputer(decode(request)?),
            Op::GetMyRating => Request::GetMyRating(decode(request)?),
            Op::WatchLobby => Request::WatchLobby(decode(request)?),
            Op::ExportReplay => Request::ExportReplay(decode(request)?),
            Op::ListTournaments => Request::ListTournaments(decode(request)?),
            Op::JoinTournament => Request::JoinTournament(decode(request)?),
            Op::WithdrawTournament => Request::WithdrawTournament(decode(request)?),
            Op::GetTournament => Request::GetTournament(decode(request)?),
        })
    }
}

/// Turns one text frame of an authenticated connection into the id to answer under and the
/// request: a pure function, so any input gets an error naming what is wrong and never a panic
/// (the property tests below feed it arbitrary text and JSON).
pub(super) fn decode_message(text: &str) -> Result<(Value, Request), BadRequest> {
    let envelope = parse(text)?;
    let id = envelope.id.clone();
    match Request::decode(envelope) {
        Ok(request) => Ok((id, request)),
        Err(status) => Err(BadRequest {
            id,
            message: status.message().to_string(),
            violations: ErrorSummary::of(&status).violations,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn a_request_parses_with_its_id_op_and_body() {
        let envelope =
            parse(r#"{"id": 7, "type": "play", "request": {"context": {"gameId": "x"}}}"#).unwrap();
        assert_eq!(envelope.id, Value::from(7));
        assert_eq!(envelope.op, Op::Play);
        let request: pb::PlayRequest = decode(envelope.request).unwrap();
        assert_eq!(request.context.unwrap().game_id, "x");
    }

    #[test]
    fn a_missing_request_is_the_empty_message() {
        let envelope = parse(r#"{"id": "a", "type": "list_my_games"}"#).unwrap();
        let request: pb::ListMyGamesRequest = decode(envelope.request).unwrap();
        assert!(!request.active_only);
    }

    #[test]
    fn proto_field_names_and_camel_case_both_decode() {
        for body in [
            r#"{"game_id":"g","from_seq":3}"#,
            r#"{"gameId":"g","fromSeq":"3"}"#,
        ] {
            let request: pb::SubscribeRequest =
                decode(serde_json::from_str(body).unwrap()).unwrap();
            assert_eq!((request.game_id.as_str(), request.from_seq), ("g", 3));
        }
    }

    #[test]
    fn bad_messages_name_what_is_wrong() {
        let cases = [
            ("{", "malformed JSON"),
            ("[1]", "JSON object"),
            (r#"{"id": {}, "type": "play"}"#, "id must be"),
            (r#"{"id": 1}"#, "type is required"),
            (r#"{"id": 1, "type": "fly"}"#, "unknown type \"fly\""),
            (
                r#"{"id": 1, "type": "play", "requets": {}}"#,
                "unknown field \"requets\"",
            ),
            (r#"{"type": "play"}"#, "id is required"),
            (r#"{"type": "auth"}"#, "auth needs a token"),
            (
                r#"{"id": 1, "type": "play", "token": "t"}"#,
                "auth message only",
            ),
            (
                r#"{"type": "auth", "token": "good", "token": "bad"}"#,
                "field \"token\" appears twice",
            ),
            (
                r#"{"id": 1, "type": "play", "type": "concede"}"#,
                "field \"type\" appears twice",
            ),
        ];
        for (text, expected) in cases {
            let error = parse(text).unwrap_err();
            assert!(
                error.message.contains(expected),
                "{text}: {:?} does not say {expected:?}",
                error.message
            );
        }
        assert_eq!(
            parse(r#"{"id": "q", "type": "fly"}"#).unwrap_err().id,
            Value::from("q"),
            "an error names the request's id when it could be read"
        );
    }

    #[test]
    fn an_unknown_request_field_is_refused() {
        let envelope =
            parse(r#"{"id": 1, "type": "legal_moves", "request": {"game": "x"}}"#).unwrap();
        let error = decode::<pb::LegalMovesRequest>(envelope.request).unwrap_err();
        assert_eq!(error.code(), Code::InvalidArgument);
        assert!(error.message().contains("game"), "{}", error.message());
    }

    #[test]
    fn every_op_name_round_trips() {
        for (name, op) in OPS {
            assert_eq!(Op::parse(name), Some(op));
            assert_eq!(op.name(), name);
        }
    }

    #[test]
    fn each_action_op_decodes_into_the_action_of_its_name() {
        use crate::action::ActionMessage;

        let mut actions = 0;
        for (name, _) in OPS {
            let text = format!(r#"{{"id": 1, "type": "{name}", "request": {{}}}}"#);
            // `auth` and `unsubscribe` do not take an empty request; neither is an action.
            let Ok((_, request)) = decode_message(&text) else {
                continue;
            };
            let action = match request {
                Request::Reshuffle(r) => r.into_request(),
                Request::Swap(r) => r.into_request(),
                Request::Deploy(r) => r.into_request(),
                Request::Confirm(r) => r.into_request(),
                Request::Play(r) => r.into_request(),
                Request::ProposeDraw(r) => r.into_request(),
                Request::RespondDraw(r) => r.into_request(),
                Request::Concede(r) => r.into_request(),
                _ => continue,
            };
            assert_eq!(action.action.name(), name, "the log name is the op");
            actions += 1;
        }
        assert_eq!(actions, 8, "every player action is a WebSocket op");
    }

    /// Property tests of [`decode_message`]: whatever a client sends, the answer is a decoded
    /// request or an error that says what is wrong, under the id the message carried (if any),
    /// and never a panic.
    mod decoding {
        use super::super::*;
        use proptest::prelude::*;

        /// Field names the decoder knows (envelope and proto fields), mixed with any strings so
        /// that both the known paths and the unknown-field paths are taken.
        fn key() -> impl Strategy<Value = String> {
            prop_oneof![
                prop::sample::select(vec![
                    "id",
                    "type",
                    "request",
                    "token",
                    "gameId",
                    "game_id",
                    "fromSeq",
                    "spectate",
                    "withStatus",
                    "context",
                    "idempotencyKey",
                    "expectedVersion",
                    "move",
                    "from",
                    "to",
                    "placements",
                    "square",
                    "piece",
                    "accept",
                    "subscription",
                    "afterSeq",
                ])
                .prop_map(str::to_string),
                ".{0,12}",
            ]
        }

        /// Any JSON number, including those past 64 bits and past `f64`'s exponent range, as
        /// the text a client would send.
        fn number_text() -> impl Strategy<Value = String> {
            prop_oneof![
                any::<i64>().prop_map(|n| n.to_string()),
                any::<u64>().prop_map(|n| n.to_string()),
                any::<f64>().prop_map(|f| format!("{f:e}")),
                "-?[1-9][0-9]{18,400}",
                "-?[1-9]e[+-]?[0-9]{2,5}",
                "-?0\\.[0-9]{1,40}e-?[0-9]{1,4}",
            ]
        }

        /// Arbitrary JSON values, nested a few levels.
        fn json_value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                any::<u64>().prop_map(Value::from),
                any::<f64>().prop_map(Value::from),
                ".{0,16}".prop_map(Value::from),
                prop::sample::select(OPS.map(|(name, _)| name).to_vec()).prop_map(Value::from),
            ];
            leaf.prop_recursive(6, 64, 8, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                    prop::collection::vec((key(), inner), 0..6)
                        .prop_map(|fields| Value::Object(fields.into_iter().collect())),
                ]
            })
        }

        /// A message with an id, a real op (but `auth`, which takes no request) and an
        /// arbitrary request: the decoding of every proto request gets fuzzed, not only the
        /// envelope.
        fn envelope_text() -> impl Strategy<Value = String> {
            let ops: Vec<&str> = OPS
                .iter()
                .map(|(name, _)| *name)
                .filter(|name| *name != "auth")
                .collect();
            (
                prop_oneof![json_value(), number_text().prop_map(Value::String)],
                prop::sample::select(ops),
                json_value(),
            )
                .prop_map(|(id, op, request)| {
                    serde_json::json!({"id": id, "type": op, "request": request}).to_string()
                })
        }

        /// The properties every answer has: an error names what is wrong and answers under the
        /// message's own id when it could be read; a decoded request answers under a real id.
        fn check(text: &str) {
            match decode_message(text) {
                Ok((id, request)) => {
                    assert!(
                        matches!(id, Value::Number(_) | Value::String(_))
                            || matches!(request, Request::Auth(_)),
                        "{text:?} decoded with id {id}"
                    );
                }
                Err(bad) => {
                    assert!(!bad.message.trim().is_empty(), "{text:?}: an empty error");
                    if !bad.id.is_null() {
                        let sent: Value = serde_json::from_str(text).expect("an id was read");
                        assert_eq!(sent["id"], bad.id, "{text:?}: answered under another id");
                    }
                }
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(3000))]

            #[test]
            fn any_text_gets_a_request_or_a_clear_error(text in "\\PC{0,200}") {
                check(&text);
            }

            #[test]
            fn any_json_gets_a_request_or_a_clear_error(value in json_value()) {
                check(&value.to_string());
            }

            #[test]
            fn any_request_of_every_op_gets_a_request_or_a_clear_error(text in envelope_text()) {
                check(&text);
                if let Err(bad) = decode_message(&text) {
                    // The envelope is well-formed: only the request (or a null id) can be wrong.
                    prop_assert!(
                        bad.message.starts_with("request:") || bad.message.contains("id"),
                        "{}: {}", text, bad.message
                    );
                }
            }

            #[test]
            fn huge_numbers_anywhere_get_a_clear_error(number in number_text(), at in 0..4usize) {
                let text = match at {
                    0 => format!(r#"{{"id": {number}, "type": "list_my_games"}}"#),
                    1 => format!(
                        r#"{{"id": 1, "type": "subscribe", "request": {{"gameId": "g", "fromSeq": {number}}}}}"#
                    ),
                    2 => format!(
                        r#"{{"id": 1, "type": "play", "request": {{"context": {{"gameId": "g", "expectedVersion": {number}}}}}}}"#
                    ),
                    _ => format!(r#"{{"id": 1, "type": "unsubscribe", "request": {{"subscription": {number}}}}}"#),
                };
                check(&text);
            }

        }

        proptest! {
            // Each case parses up to 20 000 levels three times: fewer cases.
            #![proptest_config(ProptestConfig::with_cases(300))]

            #[test]
            fn deeply_nested_json_gets_a_clear_error(depth in 1..20_000usize, open in "[\\[{]") {
                let (open, close) = if open == "[" { ("[", "]") } else { (r#"{"a":"#, "}") };
                let nested = format!("{}1{}", open.repeat(depth), close.repeat(depth));
                for text in [
                    nested.clone(),
                    format!(r#"{{"id": 1, "type": "play", "request": {nested}}}"#),
                    format!(r#"{{"id": {nested}, "type": "play"}}"#),
                ] {
                    check(&text);
                    if depth > 200 {
                        let bad = decode_message(&text).expect_err("nested past the limit");
                        prop_assert!(bad.message.contains("recursion limit"), "{}", bad.message);
                    }
                }
            }
        }

        #[test]
        fn a_valid_request_decodes_as_its_proto_message() {
            let (id, request) = decode_message(
                r#"{"id": "a", "type": "subscribe", "request": {"gameId": "g", "fromSeq": "18446744073709551615"}}"#,
            )
            .unwrap();
            assert_eq!(id, Value::from("a"));
            assert_eq!(
                request,
                Request::Subscribe(pb::SubscribeRequest {
                    game_id: "g".into(),
                    from_seq: u64::MAX,
                    spectate: false,
                    with_status: false,
                })
            );
            let bad = decode_message(
                r#"{"id": 2, "type": "subscribe", "request": {"fromSeq": "18446744073709551616"}}"#,
            )
            .unwrap_err();
            assert_eq!(bad.id, Value::from(2));
            assert!(bad.message.starts_with("request:"), "{}", bad.message);
        }
    }
}

#[cfg(test)]
mod decode_field_path {
    use super::*;

    #[test]
    fn a_field_that_does_not_decode_is_named() {
        let request = serde_json::json!({"requestId": "r", "seat": 999});
        let status = decode::<pb::PlayerServicePlayComputerRequest>(request).unwrap_err();
        let summary = ErrorSummary::of(&status);
        assert_eq!(summary.reason, "MALFORMED_REQUEST", "{}", status.message());
        assert_eq!(
            summary.violations.first().map(|v| v.field.as_str()),
            Some("request.seat"),
            "{}",
            status.message()
        );
    }
}
