//! Per-RPC metrics for every gRPC port: a tower layer that counts each call and times it, by
//! service, method and status code (`hf_grpc_requests_total`,
//! `hf_grpc_request_duration_seconds`), so no handler counts by hand and none is forgotten.
//!
//! The status is where gRPC puts it: in the response headers of a trailers-only answer (every
//! refusal tonic sends before a body), else in the trailers after the body, which the layer sees
//! by wrapping the body. A call whose body is dropped before its trailers (the client went away,
//! the server stopped) counts as `CANCELLED`.
//!
//! Labels stay bounded: the service and method come from the request path only when a served
//! proto declares that method; any other path counts as `unknown`/`unknown`.

use axum::http;
use hidden_front_metrics_names as names;
use http_body::{Body, Frame, SizeHint};
use prost::Message;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::LazyLock;
use std::task::{Context, Poll};
use std::time::Instant;

/// `/package.Service/Method` -> (service, method), for every method of every proto a port may
/// serve: Hidden Front's, health's and both reflection versions'.
static METHODS: LazyLock<HashMap<String, (&'static str, &'static str)>> = LazyLock::new(|| {
    let mut methods = HashMap::new();
    for encoded in [
        hidden_front_proto::FILE_DESCRIPTOR_SET,
        tonic_health::pb::FILE_DESCRIPTOR_SET,
        tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
        tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
    ] {
        // Descriptor sets generated at build time always decode; a failure would only leave
        // their methods counted as `unknown`.
        let Ok(set) = prost_types::FileDescriptorSet::decode(encoded) else {
            continue;
        };
        for file in set.file {
            let package = file.package.unwrap_or_default();
            for service in file.service {
                let full = match package.is_empty() {
                    true => service.name().to_owned(),
                    false => format!("{package}.{}", service.name()),
                };
                let full: &'static str = Box::leak(full.into_boxed_str());
                for method in service.method {
                    let name: &'static str = Box::leak(method.name().to_owned().into_boxed_str());
                    methods.insert(format!("/{full}/{name}"), (full, name));
                }
            }
        }
    }
    methods
});

/// The (service, method) labels of a request path.
fn labels(path: &str) -> (&'static str, &'static str) {
    METHODS
        .get(path)
        .copied()
        .unwrap_or((names::UNKNOWN_RPC, names::UNKNOWN_RPC))
}

/// The label of a `grpc-status` value; a value that is not a known code is `UNKNOWN`.
fn code_name(value: Option<&http::HeaderValue>) -> Option<&'static str> {
    let value = value?;
    let code = value
        .to_str()
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .and_then(|n| names::GRPC_CODES.get(n).copied())
        .unwrap_or("UNKNOWN");
    Some(code)
}

/// Registers the call counter of every method of `services` at zero with code `OK`, so a
/// dashboard sees each method's series from the start, before its first call.
pub(crate) fn register(services: &[&str]) {
    for (service, method) in METHODS.values() {
        if services.contains(service) {
            metrics::counter!(
                names::GRPC_REQUESTS_TOTAL,
                names::GRPC_SERVICE => *service,
                names::GRPC_METHOD => *method,
                names::GRPC_CODE => "OK",
            )
            .increment(0);
        }
    }
}

/// Counts one call of `service`/`method` that ended with `code` after `seconds`.
fn count(service: &'static str, method: &'static str, code: &'static str, seconds: f64) {
    metrics::counter!(
        names::GRPC_REQUESTS_TOTAL,
        names::GRPC_SERVICE => service,
        names::GRPC_METHOD => method,
        names::GRPC_CODE => code,
    )
    .increment(1);
    metrics::histogram!(
        names::GRPC_REQUEST_DURATION_SECONDS,
        names::GRPC_SERVICE => service,
        names::GRPC_METHOD => method,
        names::GRPC_CODE => code,
    )
    .record(seconds);
}

/// The same series for one method called in this process without the port
/// (`app/referee.rs`): its `OK` handles made once, any other code when it happens.
pub(crate) struct MethodCalls {
    service: &'static str,
    method: &'static str,
    ok: metrics::Counter,
    ok_duration: metrics::Histogram,
}

impl MethodCalls {
    /// The series of `service`/`method`.
    pub(crate) fn new(service: &'static str, method: &'static str) -> MethodCalls {
        MethodCalls {
            service,
            method,
            ok: metrics::counter!(
                names::GRPC_REQUESTS_TOTAL,
                names::GRPC_SERVICE => service,
                names::GRPC_METHOD => method,
                names::GRPC_CODE => "OK",
            ),
            ok_duration: metrics::histogram!(
                names::GRPC_REQUEST_DURATION_SECONDS,
                names::GRPC_SERVICE => service,
                names::GRPC_METHOD => method,
                names::GRPC_CODE => "OK",
            ),
        }
    }

    /// The call's span, as the port names it.
    pub(crate) fn span(&self) -> tracing::Span {
        hidden_front_telemetry::rpc_span(self.service, self.method)
    }

    /// Counts one call begun at `started` that ended with `error` (`None`: OK).
    pub(crate) fn record(&self, error: Option<&tonic::Status>, started: Instant) {
        let seconds = started.elapsed().as_secs_f64();
        match error {
            None => {
                self.ok.increment(1);
                self.ok_duration.record(seconds);
            }
            Some(status) => {
                let code = names::GRPC_CODES
                    .get(status.code() as usize)
                    .copied()
                    .unwrap_or("UNKNOWN");
                count(self.service, self.method, code, seconds);
            }
        }
    }
}

/// The layer, for `tonic::transport::Server::builder().layer(...)`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GrpcMetricsLayer;

impl<S> tower_layer::Layer<S> for GrpcMetricsLayer {
    type Service = GrpcMetrics<S>;

    fn layer(&self, inner: S) -> GrpcMetrics<S> {
        GrpcMetrics { inner }
    }
}

/// The service [`GrpcMetricsLayer`] wraps around a port's routes.
#[derive(Debug, Clone)]
pub(crate) struct GrpcMetrics<S> {
    inner: S,
}

impl<S, B, R> tower_service::Service<http::Request<B>> for GrpcMetrics<S>
where
    S: tower_service::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    R: Body + Send + 'static,
{
    type Response = http::Response<Observed<R>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let (service, method) = labels(request.uri().path());
        let mut call = Call {
            service,
            method,
            started: Instant::now(),
            ended: false,
        };
        let future = self.inner.call(request);
        Box::pin(async move {
            match future.await {
                Ok(response) => {
                    if let Some(code) = code_name(response.headers().get("grpc-status")) {
                        call.end(code);
                    }
                    Ok(response.map(|body| Observed {
                        body: Box::pin(body),
                        call,
                    }))
                }
                Err(error) => {
                    call.end("UNKNOWN");
                    Err(error)
                }
            }
        })
    }
}

/// One call being answered: recorded once, when its status is known.
struct Call {
    service: &'static str,
    method: &'static str,
    started: Instant,
    ended: bool,
}

impl Call {
    fn end(&mut self, code: &'static str) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        count(
            self.service,
            self.method,
            code,
            self.started.elapsed().as_secs_f64(),
        );
    }
}

impl Drop for Call {
    /// A call dropped before its status (the body never reached its trailers): the client went
    /// away or the server stopped.
    fn drop(&mut self) {
        self.end("CANCELLED");
    }
}

/// A response body that records its call when the trailers (the status) go by.
pub(crate) struct Observed<R> {
    body: Pin<Box<R>>,
    call: Call,
}

impl<R: Body> Body for Observed<R> {
    type Data = R::Data;
    type Error = R::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = self.body.as_mut().poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(trailers) = frame.trailers_ref() {
                    let code = code_name(trailers.get("grpc-status")).unwrap_or("UNKNOWN");
                    self.call.end(code);
                }
            }
            Poll::Ready(Some(Err(_))) => self.call.end("UNKNOWN"),
            // The end without trailers: only a trailers-only answer, already recorded.
            Poll::Ready(None) => self.call.end("UNKNOWN"),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_declared_methods_get_their_names_as_labels() {
        assert_eq!(
            labels("/hiddenfront.v1.PlayerService/Play"),
            ("hiddenfront.v1.PlayerService", "Play")
        );
        assert_eq!(
            labels("/grpc.health.v1.Health/Check"),
            ("grpc.health.v1.Health", "Check")
        );
        assert_eq!(
            labels("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"),
            (
                "grpc.reflection.v1alpha.ServerReflection",
                "ServerReflectionInfo"
            )
        );
        for made_up in [
            "/hiddenfront.v1.PlayerService/Nope",
            "/x.Y/Z",
            "/",
            "",
            "/hiddenfront.v1.PlayerService/Play/extra",
        ] {
            assert_eq!(labels(made_up), ("unknown", "unknown"), "{made_up}");
        }
    }

    #[test]
    fn status_codes_are_named_and_bounded() {
        let code = |v: &'static str| code_name(Some(&http::HeaderValue::from_static(v)));
        assert_eq!(code("0"), Some("OK"));
        assert_eq!(code("5"), Some("NOT_FOUND"));
        assert_eq!(code("16"), Some("UNAUTHENTICATED"));
        assert_eq!(code("17"), Some("UNKNOWN"));
        assert_eq!(code("x"), Some("UNKNOWN"));
        assert_eq!(code_name(None), None);
    }
}
