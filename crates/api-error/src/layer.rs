//! A server layer that holds every answer to the error contract, including the answers tonic
//! gives before a handler runs (a request over the size limit, an unknown method): a status that
//! came without a reason gets its code's [`Reason::fallback`](crate::Reason::fallback), and no
//! message passes [`MAX_MESSAGE_BYTES`](crate::MAX_MESSAGE_BYTES).
//!
//! Those answers are "trailers-only" responses: the status is in the response headers, which is
//! where this layer reads and rewrites it. Statuses that a handler returns mid-stream are built
//! with [`ApiError`](crate::ApiError) and need no rewriting.

use crate::{MAX_MESSAGE_BYTES, ensure_reason, has_reason};
use tonic::{Code, Status};
use tower::util::MapResponseLayer;

/// The response rewrite of [`ErrorContractLayer`].
pub type HoldToContract =
    fn(http::Response<tonic::body::Body>) -> http::Response<tonic::body::Body>;

/// For `tonic::transport::Server::builder().layer(error_contract_layer())`: a map over every
/// response (tower's own), so the only code here is the rewrite.
pub type ErrorContractLayer = MapResponseLayer<HoldToContract>;

/// The layer that holds every answer of a server to the error contract.
pub fn error_contract_layer() -> ErrorContractLayer {
    MapResponseLayer::new(|mut response: http::Response<tonic::body::Body>| {
        hold_to_contract(response.headers_mut());
        response
    })
}

/// Rewrites a trailers-only error status in `headers` that lacks a reason or is too long.
fn hold_to_contract(headers: &mut http::HeaderMap) {
    let Some(status) = Status::from_header_map(headers) else {
        return;
    };
    if status.code() == Code::Ok
        || (has_reason(&status) && status.message().len() <= MAX_MESSAGE_BYTES)
    {
        return;
    }
    let fixed = ensure_reason(status);
    headers.remove("grpc-message");
    headers.remove("grpc-status-details-bin");
    // Only fails for values that cannot be headers, which `ensure_reason` does not produce.
    let _ = fixed.add_header(headers);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorSummary;

    #[test]
    fn a_bare_status_in_headers_gets_a_reason_and_a_short_message() {
        let mut headers = http::HeaderMap::new();
        Status::out_of_range("y".repeat(4000))
            .add_header(&mut headers)
            .unwrap();
        hold_to_contract(&mut headers);
        let status = Status::from_header_map(&headers).unwrap();
        assert_eq!(status.code(), Code::OutOfRange);
        assert!(status.message().len() <= MAX_MESSAGE_BYTES);
        assert_eq!(ErrorSummary::of(&status).reason, "REQUEST_TOO_LARGE");
    }

    #[test]
    fn ok_responses_and_contract_statuses_are_left_alone() {
        let mut headers = http::HeaderMap::new();
        headers.insert("content-type", "application/grpc".parse().unwrap());
        hold_to_contract(&mut headers);
        assert_eq!(headers.len(), 1);
        let status = crate::ApiError::new(crate::Reason::NotSeated, "not yours").to_status();
        status.add_header(&mut headers).unwrap();
        let before = headers.clone();
        hold_to_contract(&mut headers);
        assert_eq!(headers, before);
    }
}
