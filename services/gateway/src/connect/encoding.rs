//! Server messages as the bytes a connection writes: each message is encoded once, where it is
//! made, and travels as bytes from there (see `hidden_front_proto::connect`).

use bytes::Bytes;
use hidden_front_api_error::{ErrorSummary, ensure_reason};
use hidden_front_proto::v1 as pb;
use prost::Message;
use tonic::Status;

/// One server message, encoded.
pub(crate) fn encode(item: pb::server_message::Item) -> Bytes {
    Bytes::from(pb::ServerMessage { item: Some(item) }.encode_to_vec())
}

/// The answer to request `request_id`.
pub(crate) fn answer(request_id: u64, response: pb::answer::Response) -> Bytes {
    encode(pb::server_message::Item::Answer(pb::Answer {
        request_id,
        response: Some(response),
    }))
}

/// Request `request_id` refused with `status`: its code, message, stable reason, and the
/// encoded `google.rpc.Status` the unary method would send as its details trailer.
pub(crate) fn refusal(request_id: u64, status: &Status) -> Bytes {
    let status = ensure_reason(status.clone());
    encode(pb::server_message::Item::Refusal(pb::Refusal {
        request_id,
        code: status.code() as i32,
        message: status.message().to_owned(),
        reason: ErrorSummary::of(&status).reason,
        details: status.details().to_vec(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hidden_front_api_error::{ApiError, Reason};

    /// A refusal carries what the unary method's status carries: code, reason, message, and
    /// the details that name the bad field.
    #[test]
    fn a_refusal_carries_the_unary_status_and_its_details() {
        let status: Status = ApiError::invalid_field("move.from", "is not a square").into();
        let bytes = refusal(9, &status);
        let message = pb::ServerMessage::decode(bytes).unwrap();
        let Some(pb::server_message::Item::Refusal(refused)) = message.item else {
            panic!("not a refusal: {message:?}");
        };
        assert_eq!(refused.request_id, 9);
        assert_eq!(refused.code, tonic::Code::InvalidArgument as i32);
        assert_eq!(refused.reason, "INVALID_FIELD");
        assert_eq!(refused.message, status.message());
        let rebuilt = Status::with_details(
            tonic::Code::InvalidArgument,
            refused.message.clone(),
            refused.details.into(),
        );
        let summary = ErrorSummary::of(&rebuilt);
        assert_eq!(summary.reason, "INVALID_FIELD");
        let fields: Vec<&str> = summary
            .violations
            .iter()
            .map(|v| v.field.as_str())
            .collect();
        assert_eq!(fields, ["move.from"]);
        // A status without a reason gets one, as every refusal of the unary methods has.
        let bare = refusal(1, &Status::unavailable("down"));
        let Some(pb::server_message::Item::Refusal(bare)) =
            pb::ServerMessage::decode(bare).unwrap().item
        else {
            panic!("not a refusal");
        };
        assert_eq!(
            bare.reason,
            Reason::fallback(tonic::Code::Unavailable).as_str()
        );
    }
}
