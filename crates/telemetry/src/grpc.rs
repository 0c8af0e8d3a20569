//! W3C Trace Context over gRPC metadata: a server layer that opens each RPC's span as a child of
//! the caller's, and a client wrapper that sends the current span's context along.

use opentelemetry::propagation::{Extractor, Injector};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tower_layer::Layer;
use tower_service::Service;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Reads propagation fields from HTTP headers (gRPC metadata).
struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// Writes propagation fields into HTTP headers (gRPC metadata).
struct HeaderInjector<'a>(&'a mut http::HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::header::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// A tower layer for `tonic::transport::Server::builder().layer(...)`: every request gets a
/// span named after its gRPC method (`package.Service/Method`), with `rpc.system`,
/// `rpc.service`, `rpc.method` and, once answered, `rpc.grpc.status_code`, whose parent is the
/// trace context the caller sent in `traceparent`/`tracestate`.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrpcServerLayer;

impl<S> Layer<S> for GrpcServerLayer {
    type Service = GrpcServerService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        GrpcServerService { inner }
    }
}

/// The service [`GrpcServerLayer`] wraps around a server's routes.
#[derive(Debug, Clone)]
pub struct GrpcServerService<S> {
    inner: S,
}

impl<S, B, R> Service<http::Request<B>> for GrpcServerService<S>
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
        let span = server_span(&request);
        let future = {
            let _entered = span.enter();
            self.inner.call(request)
        };
        Box::pin(
            async move {
                let result = future.await;
                if let Ok(response) = &result {
                    record_status(response.headers());
                }
                result
            }
            .instrument(span),
        )
    }
}

/// The span of one incoming RPC, child of the caller's trace context if it sent one.
fn server_span<B>(request: &http::Request<B>) -> tracing::Span {
    let path = request.uri().path().trim_start_matches('/');
    let (service, method) = path.split_once('/').unwrap_or((path, ""));
    let span = rpc_span(service, method);
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&HeaderExtractor(request.headers()))
    });
    // Without an OpenTelemetry layer there is nothing to link; that is fine.
    let _ = span.set_parent(parent);
    span
}

/// The span of one call of `service`/`method` (`hiddenfront.v1.SessionService`, `SubmitMove`),
/// named as its port names it (`service/method`): the span of every RPC a port serves, and of a
/// call this process makes of its own service without the port (the gateway's actions on its
/// own session), which keeps the same span. Its status goes in with [`record_rpc_status`].
pub fn rpc_span(service: &str, method: &str) -> tracing::Span {
    tracing::info_span!(
        "grpc.server",
        otel.name = %format_args!("{service}/{method}"),
        otel.kind = "server",
        rpc.system = "grpc",
        rpc.service = %service,
        rpc.method = %method,
        rpc.grpc.status_code = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    )
}

/// Records a call's gRPC status code in its [`rpc_span`].
pub fn record_rpc_status(span: &tracing::Span, code: tonic::Code) {
    span.record("rpc.grpc.status_code", code as i32);
    if code != tonic::Code::Ok {
        span.record("otel.status_code", "ERROR");
    }
}

/// Records the gRPC status of a response in the current span. A trailers-only answer (any
/// failure of a unary call) carries `grpc-status` in its headers; otherwise the status follows
/// in the trailers after the body and the call is taken as OK when its headers arrived.
fn record_status(headers: &http::HeaderMap) {
    let code = headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i32>().ok())
        .unwrap_or(0);
    record_rpc_status(&tracing::Span::current(), tonic::Code::from(code));
}

/// A tower layer for gRPC clients: each request carries the current span's trace context in
/// `traceparent`/`tracestate`.
#[derive(Debug, Clone, Copy, Default)]
pub struct InjectLayer;

impl<S> Layer<S> for InjectLayer {
    type Service = Injecting<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Injecting { inner }
    }
}

/// A client service that injects the current trace context into every request it sends.
#[derive(Debug, Clone)]
pub struct Injecting<S> {
    inner: S,
}

impl<S> Injecting<S> {
    /// Wraps `inner` (anything that converts into it: a tonic `Channel` for a
    /// [`TracedChannel`]).
    pub fn new(inner: impl Into<S>) -> Injecting<S> {
        Injecting {
            inner: inner.into(),
        }
    }
}

/// A client of another service that sends the current trace context along with every call:
/// over a tonic channel to another process, or straight into a service of this process
/// ([`Upstream::Local`]).
pub type TracedChannel = Injecting<Upstream>;

impl From<tonic::transport::Channel> for TracedChannel {
    fn from(channel: tonic::transport::Channel) -> TracedChannel {
        Injecting::new(channel)
    }
}

impl TracedChannel {
    /// A client that calls `service`, a server of this process with its layers, directly: the
    /// request and answer are still gRPC messages (encoded, framed, decoded, with metadata and
    /// trailers), but no socket, HTTP/2 or HPACK lies between them.
    pub fn local(service: LocalService) -> TracedChannel {
        Injecting::new(Upstream::Local(service))
    }
}

/// Any error of a client call, as tonic's clients take it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A gRPC server of this process as a client calls it: the generated server behind the same
/// layers its port has (span, metrics, the error contract), answering with a tonic body.
pub type LocalService = tower::util::BoxCloneSyncService<
    http::Request<tonic::body::Body>,
    http::Response<tonic::body::Body>,
    BoxError,
>;

/// Where a client's calls go: to another process over a tonic channel, or to a server of this
/// process called as a tower service. Inside one process the second saves the sockets, HTTP/2
/// framing and header compression of every call on both sides (the one-box mode's gateway
/// calls its own session this way); between processes it is always the first.
#[derive(Clone)]
pub enum Upstream {
    /// Another process, over HTTP/2.
    Remote(tonic::transport::Channel),
    /// A server of this process, called directly.
    Local(LocalService),
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Upstream::Remote(channel) => f.debug_tuple("Remote").field(channel).finish(),
            Upstream::Local(_) => f.write_str("Local"),
        }
    }
}

impl From<tonic::transport::Channel> for Upstream {
    fn from(channel: tonic::transport::Channel) -> Upstream {
        Upstream::Remote(channel)
    }
}

impl Service<http::Request<tonic::body::Body>> for Upstream {
    type Response = http::Response<tonic::body::Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        match self {
            Upstream::Remote(channel) => channel.poll_ready(cx).map_err(Into::into),
            Upstream::Local(service) => service.poll_ready(cx),
        }
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        match self {
            Upstream::Remote(channel) => {
                let answer = channel.call(request);
                Box::pin(async move { answer.await.map_err(Into::into) })
            }
            // Run in a task of its own, as a server runs each call: the handler then goes on at
            // the runtime's pace whatever the caller does with this future meanwhile (holds it
            // unpolled behind other work, drops it). Polled only by its caller, a handler could
            // sit inside a store transaction, holding its locks, until Postgres ends the session
            // (`idle_in_transaction_session_timeout`); the presence pushes test caught that.
            Upstream::Local(service) => {
                let answer = tokio::spawn(service.call(request));
                Box::pin(async move {
                    match answer.await {
                        Ok(answer) => answer,
                        Err(failed) => Err(Box::new(failed) as BoxError),
                    }
                })
            }
        }
    }
}

impl<S, B> Service<http::Request<B>> for Injecting<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let context = tracing::Span::current().context();
        opentelemetry::global::get_text_map_propagator(|propagator| {
            propagator.inject_context(&context, &mut HeaderInjector(request.headers_mut()))
        });
        self.inner.call(request)
    }
}

/// The current span's trace context as a W3C `traceparent` value, to be stored beside what the
/// span produced (a game event) so that whoever handles it later, in any process, continues the
/// same trace. `None` when there is no sampled trace (no OpenTelemetry layer, or no span).
pub fn current_traceparent() -> Option<String> {
    let context = tracing::Span::current().context();
    let mut fields = std::collections::HashMap::new();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut fields)
    });
    fields.remove("traceparent")
}

/// Makes `span` a child of the trace context carried as a W3C `traceparent` value (see
/// [`current_traceparent`]); a malformed or empty value leaves `span` as it is.
pub fn set_remote_parent(span: &tracing::Span, traceparent: &str) {
    if traceparent.is_empty() {
        return;
    }
    let mut fields = std::collections::HashMap::new();
    fields.insert("traceparent".to_string(), traceparent.to_string());
    let parent =
        opentelemetry::global::get_text_map_propagator(|propagator| propagator.extract(&fields));
    let _ = span.set_parent(parent);
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use tracing_subscriber::layer::SubscriberExt;

    /// Answers every request with the headers it came with.
    struct Echo;

    impl Service<http::Request<()>> for Echo {
        type Response = http::Response<http::HeaderMap>;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: http::Request<()>) -> Self::Future {
            std::future::ready(Ok(http::Response::new(request.headers().clone())))
        }
    }

    #[test]
    fn the_context_goes_out_in_metadata_and_comes_back_as_the_parent() {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let provider = SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        tracing::subscriber::with_default(subscriber, || {
            let caller = tracing::info_span!("caller");
            let caller_context = caller.context();
            let trace_id = caller_context.span().span_context().trace_id();
            let sent = caller
                .in_scope(|| Injecting::<Echo>::new(Echo).call(http::Request::new(())))
                .into_inner()
                .expect("the echo answers")
                .into_body();
            let traceparent = sent
                .get("traceparent")
                .and_then(|v| v.to_str().ok())
                .expect("a traceparent entry");
            assert!(traceparent.contains(&trace_id.to_string()), "{traceparent}");

            let request = http::Request::builder()
                .uri("http://svc/pkg.Service/Method")
                .header("traceparent", traceparent)
                .body(())
                .expect("a request");
            let span = server_span(&request);
            assert_eq!(span.context().span().span_context().trace_id(), trace_id);
        });
    }

    #[test]
    fn without_a_current_span_nothing_is_sent() {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let sent = Injecting::<Echo>::new(Echo)
            .call(http::Request::new(()))
            .into_inner()
            .expect("the echo answers")
            .into_body();
        assert!(sent.get("traceparent").is_none());
    }
}
