//! A server layer that holds every answer to the error contract, including the answers tonic
//! gives before a handler runs (a request over the size limit, an unknown method): a status that
//! came without a reason gets its code's [`Reason::fallback`](crate::Reason::fallback), and no
//! message passes [`MAX_MESSAGE_BYTES`](crate::MAX_MESSAGE_BYTES).
//!
//! Those answers are "trailers-only" responses: the status is in the response headers, which is
//! where this layer reads and rewrites it. Statuses that a handler returns mid-stream are built
//! with [`ApiError`](crate::ApiError) and need no rewriting.

use crate::{MAX_MESSAGE_BYTES, ensure_reason, has_reason};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tonic::{Code, Status};
use tower_layer::Layer;
use tower_service::Service;

/// For `tonic::transport::Server::builder().layer(...)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ErrorContractLayer;

impl<S> Layer<S> for ErrorContractLayer {
    type Service = ErrorContractService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ErrorContractService { inner }
    }
}

/// The service [`ErrorContractLayer`] wraps around a server's routes.
#[derive(Debug, Clone)]
pub struct ErrorContractService<S> {
    inner: S,
}

impl<S, B, R> Service<http::Request<B>> for ErrorContractService<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let future = self.inner.call(request);
        Box::pin(async move {
            let mut response = future.await?;
            hold_to_contract(response.headers_mut());
            Ok(response)
        })
    }
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
