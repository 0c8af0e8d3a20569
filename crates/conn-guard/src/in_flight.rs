//! [`InFlightLayer`]: counts each guarded connection's requests in flight, from the request's
//! arrival to the end of its answer's body (a stream's end), so the connection's idle time only
//! runs while it carries none. An answer that switches protocols (a WebSocket's 101) marks the
//! connection upgraded: in use until it closes.
//!
//! The connection is found in the request's extensions: [`ConnectionInfo`] (tonic puts the
//! connection's `connect_info` there) or axum's `ConnectInfo<ConnectionInfo>`; for the latter
//! the layer also adds `ConnectInfo<SocketAddr>`, what handlers keyed by the peer's address read.
//! A request without either (an in-process call) passes through uncounted.

use crate::stream::{Activity, ConnectionInfo};
use axum::extract::ConnectInfo;
use axum::serve::IncomingStream;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

/// Counts requests in flight on their connection ([`InFlight`] around each service).
#[derive(Debug, Clone, Copy, Default)]
pub struct InFlightLayer;

impl<S> tower_layer::Layer<S> for InFlightLayer {
    type Service = InFlight<S>;

    fn layer(&self, inner: S) -> InFlight<S> {
        InFlight { inner }
    }
}

/// The service of [`InFlightLayer`].
#[derive(Debug, Clone)]
pub struct InFlight<S> {
    inner: S,
}

/// A request counted on its connection until dropped.
struct InFlightGuard(Arc<Activity>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0.end();
    }
}

impl<S, ReqBody, ResBody> tower_service::Service<http::Request<ReqBody>> for InFlight<S>
where
    S: tower_service::Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
{
    type Response = http::Response<InFlightBody<ResBody>>;
    type Error = S::Error;
    type Future = InFlightFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<ReqBody>) -> Self::Future {
        let extensions = request.extensions();
        let info = extensions.get::<ConnectionInfo>().cloned().or_else(|| {
            extensions
                .get::<ConnectInfo<ConnectionInfo>>()
                .map(|ConnectInfo(info)| info.clone())
        });
        let guard = info.map(|info| {
            if request
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .is_none()
            {
                request.extensions_mut().insert(ConnectInfo(info.remote));
            }
            info.activity.begin();
            InFlightGuard(info.activity)
        });
        InFlightFuture {
            inner: self.inner.call(request),
            guard,
        }
    }
}

pin_project_lite::pin_project! {
    /// The answer of [`InFlight`], holding the request's count until its body ends.
    pub struct InFlightFuture<F> {
        #[pin]
        inner: F,
        guard: Option<InFlightGuard>,
    }
}

impl<F, ResBody, E> Future for InFlightFuture<F>
where
    F: Future<Output = Result<http::Response<ResBody>, E>>,
{
    type Output = Result<http::Response<InFlightBody<ResBody>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = ready!(this.inner.poll(cx))?;
        let guard = this.guard.take();
        if response.status() == http::StatusCode::SWITCHING_PROTOCOLS
            && let Some(guard) = &guard
        {
            guard.0.upgrade();
        }
        Poll::Ready(Ok(response.map(|inner| InFlightBody { inner, guard })))
    }
}

pin_project_lite::pin_project! {
    /// An answer's body, counting its request in flight until it ends or is dropped.
    pub struct InFlightBody<B> {
        #[pin]
        inner: B,
        guard: Option<InFlightGuard>,
    }
}

impl<B: Body<Data = Bytes>> Body for InFlightBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        let frame = ready!(this.inner.poll_frame(cx));
        if frame.is_none() {
            // Ended: the request is no longer in flight, even if the body is kept a while.
            this.guard.take();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl axum::extract::connect_info::Connected<IncomingStream<'_, crate::GuardedListener>>
    for ConnectionInfo
{
    fn connect_info(stream: IncomingStream<'_, crate::GuardedListener>) -> ConnectionInfo {
        stream.io().info().clone()
    }
}
