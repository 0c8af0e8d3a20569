//! The server's messages as JSON text: `result`, `error` (gRPC code name, stable `reason`,
//! bounded `message`, `fieldViolations`), and the subscription items `event`, `status`,
//! `lobby`, `reconnect` and `end`.

use hidden_front_api_error::{ErrorSummary, MAX_MESSAGE_BYTES};
use hidden_front_proto::v1 as pb;
use serde::Serialize;
use serde_json::Value;
use tonic::{Code, Status};

/// `{"id", "type": "result", "response"}` as text.
pub(super) fn result_text<R: Serialize>(id: &Value, response: &R) -> String {
    to_text(&ResultMessage {
        id,
        r#type: "result",
        response,
    })
}

/// A server message as text. Serializing these never fails (string keys only); should it, the
/// client gets an `INTERNAL` error instead of nothing.
pub(super) fn to_text<T: Serialize>(message: &T) -> String {
    serde_json::to_string(message).unwrap_or_else(|e| {
        tracing::error!(error = %e, "a WebSocket message does not serialize");
        r#"{"id":null,"type":"error","code":"INTERNAL","reason":"INTERNAL","message":"an answer did not serialize"}"#
            .to_string()
    })
}

/// `{"id", "type": "result", "response"}`.
#[derive(Serialize)]
pub(super) struct ResultMessage<'a, R> {
    pub(super) id: &'a Value,
    pub(super) r#type: &'static str,
    pub(super) response: &'a R,
}

/// `{"id", "type": "error", "code", "reason", "message", "fieldViolations"}`: the gRPC code, the
/// stable reason clients localise from, and the bad fields (omitted when none), as gRPC carries
/// them in `google.rpc` details.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ErrorMessage<'a> {
    pub(super) id: &'a Value,
    pub(super) r#type: &'static str,
    pub(super) code: &'static str,
    pub(super) reason: String,
    pub(super) message: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) field_violations: Vec<FieldViolationJson>,
}

/// One bad field of an [`ErrorMessage`].
#[derive(Serialize)]
pub(super) struct FieldViolationJson {
    pub(super) field: String,
    pub(super) description: String,
}

impl<'a> ErrorMessage<'a> {
    pub(super) fn new(id: &'a Value, status: &'a Status) -> Self {
        let summary = ErrorSummary::of(status);
        ErrorMessage {
            id,
            r#type: "error",
            code: code_name(status.code()),
            reason: summary.reason,
            message: bounded_message(status),
            field_violations: summary
                .violations
                .into_iter()
                .map(|v| FieldViolationJson {
                    field: v.field,
                    description: v.description,
                })
                .collect(),
        }
    }
}

/// `status`'s message, cut at the error contract's bound (statuses built by the project are
/// within it already; this holds for any other).
pub(super) fn bounded_message(status: &Status) -> &str {
    let message = status.message();
    if message.len() <= MAX_MESSAGE_BYTES {
        return message;
    }
    let mut end = MAX_MESSAGE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    &message[..end]
}

/// `{"type": "event", "subscription", "event"}`.
#[derive(Serialize)]
pub(super) struct EventMessage<'a> {
    pub(super) r#type: &'static str,
    pub(super) subscription: &'a Value,
    pub(super) event: &'a pb::GameEvent,
}

impl<'a> EventMessage<'a> {
    pub(super) fn new(subscription: &'a Value, event: &'a pb::GameEvent) -> Self {
        EventMessage {
            r#type: "event",
            subscription,
            event,
        }
    }
}

/// `{"type": "status", "subscription", "status"}`: the game's status, on a subscription that
/// asked for it (`withStatus`).
#[derive(Serialize)]
pub(super) struct StatusMessage<'a> {
    pub(super) r#type: &'static str,
    pub(super) subscription: &'a Value,
    pub(super) status: &'a pb::GameStatus,
}

impl<'a> StatusMessage<'a> {
    pub(super) fn new(subscription: &'a Value, status: &'a pb::GameStatus) -> Self {
        StatusMessage {
            r#type: "status",
            subscription,
            status,
        }
    }
}

/// `{"type": "lobby", "subscription", "event"}`: a lobby event of a `watch_lobby` subscription.
#[derive(Serialize)]
pub(super) struct LobbyMessage<'a> {
    pub(super) r#type: &'static str,
    pub(super) subscription: &'a Value,
    pub(super) event: &'a pb::LobbyEvent,
}

/// `{"type": "reconnect", "subscription", "resume_from_seq", "reason"}`.
#[derive(Serialize)]
pub(super) struct ReconnectMessage<'a> {
    pub(super) r#type: &'static str,
    pub(super) subscription: &'a Value,
    pub(super) resume_from_seq: u64,
    pub(super) reason: &'a str,
}

impl<'a> ReconnectMessage<'a> {
    pub(super) fn new(subscription: &'a Value, resume_from_seq: u64, reason: &'a str) -> Self {
        ReconnectMessage {
            r#type: "reconnect",
            subscription,
            resume_from_seq,
            reason,
        }
    }
}

/// `{"type": "end", "subscription"}`, with `code`, `reason` and `message` when the stream failed.
#[derive(Serialize)]
pub(super) struct EndMessage<'a> {
    pub(super) r#type: &'static str,
    pub(super) subscription: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) code: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) message: Option<&'a str>,
}

impl<'a> EndMessage<'a> {
    pub(super) fn new(subscription: &'a Value, failure: Option<&'a Status>) -> Self {
        EndMessage {
            r#type: "end",
            subscription,
            code: failure.map(|s| code_name(s.code())),
            reason: failure.map(|s| ErrorSummary::of(s).reason),
            message: failure.map(bounded_message),
        }
    }
}

/// The gRPC name of a status code (`PERMISSION_DENIED`), as the gRPC specification spells it.
pub fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hidden_front_api_error::{ApiError, Reason};

    #[test]
    fn server_messages_have_the_documented_shape() {
        let id = Value::from(3);
        let status = ApiError::new(Reason::NotSeated, "not yours").into();
        assert_eq!(
            to_text(&ErrorMessage::new(&id, &status)),
            r#"{"id":3,"type":"error","code":"PERMISSION_DENIED","reason":"NOT_SEATED","message":"not yours"}"#
        );
        let status = ApiError::invalid_field("move.from", "is required").into();
        assert_eq!(
            to_text(&ErrorMessage::new(&id, &status)),
            r#"{"id":3,"type":"error","code":"INVALID_ARGUMENT","reason":"INVALID_FIELD","message":"move.from: is required","fieldViolations":[{"field":"move.from","description":"is required"}]}"#
        );
        // A status from elsewhere, without details, gets its code's fallback reason.
        let status = Status::permission_denied("not yours");
        assert_eq!(
            to_text(&ErrorMessage::new(&id, &status)),
            r#"{"id":3,"type":"error","code":"PERMISSION_DENIED","reason":"NOT_ALLOWED","message":"not yours"}"#
        );
        let event = pb::GameEvent {
            game_id: "g".into(),
            seq: 5,
            event: Some(pb::game_event::Event::Resigned(pb::Resigned {
                side: pb::Side::North as i32,
            })),
        };
        assert_eq!(
            to_text(&EventMessage::new(&id, &event)),
            r#"{"type":"event","subscription":3,"event":{"gameId":"g","seq":"5","resigned":{"side":"SIDE_NORTH"}}}"#
        );
        assert_eq!(
            to_text(&ReconnectMessage::new(&id, 9, "why")),
            r#"{"type":"reconnect","subscription":3,"resume_from_seq":9,"reason":"why"}"#
        );
        assert_eq!(
            to_text(&EndMessage::new(&id, None)),
            r#"{"type":"end","subscription":3}"#
        );
    }

    #[test]
    fn code_names_are_the_grpc_spellings() {
        assert_eq!(code_name(Code::PermissionDenied), "PERMISSION_DENIED");
        assert_eq!(code_name(Code::Unauthenticated), "UNAUTHENTICATED");
        assert_eq!(code_name(Code::OutOfRange), "OUT_OF_RANGE");
    }
}
