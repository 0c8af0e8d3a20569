//! Liveness and readiness over plain HTTP, for orchestrators and load balancers that probe HTTP
//! rather than gRPC (Kubernetes `httpGet`, most cloud load balancers):
//!
//! - `GET /healthz`: `200 ok` while the process runs and its HTTP listener answers. It checks
//!   nothing else on purpose: a liveness probe that failed on a database outage would restart
//!   every replica for something a restart cannot fix.
//! - `GET /readyz`: `200` while the process's gRPC health says SERVING (every dependency answers),
//!   `503` otherwise: NOT_SERVING while the store or the session does not answer, and from the
//!   moment a shutdown starts (draining), so a load balancer stops sending new players here
//!   while the open streams are told to reconnect elsewhere.
//!
//! The body is small JSON naming the state (`{"status": "serving"}`), never cached.

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use tokio::sync::watch;

/// Path of the liveness probe.
pub const HEALTHZ_PATH: &str = "/healthz";
/// Path of the readiness probe.
pub const READYZ_PATH: &str = "/readyz";

/// Whether this process should be sent traffic, as its health checks last decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Before the first health check has answered.
    Starting,
    /// Every dependency answers: gRPC health says SERVING.
    Serving,
    /// A dependency does not answer (the store, or the session of a gateway): NOT_SERVING.
    NotServing,
    /// A shutdown has started: the process drains and takes no new work. Final.
    Draining,
}

impl Readiness {
    /// The name in the probe's body: `starting`, `serving`, `not_serving`, `draining`.
    pub fn name(self) -> &'static str {
        match self {
            Readiness::Starting => "starting",
            Readiness::Serving => "serving",
            Readiness::NotServing => "not_serving",
            Readiness::Draining => "draining",
        }
    }
}

/// `GET /healthz` and `GET /readyz`, the latter answering from `readiness` (the health checker
/// holds the sender).
pub fn routes(readiness: watch::Receiver<Readiness>) -> Router {
    Router::new()
        .route(HEALTHZ_PATH, get(|| async { probe(StatusCode::OK, "ok") }))
        .route(
            READYZ_PATH,
            get(move || {
                let state = *readiness.borrow();
                async move {
                    let status = match state {
                        Readiness::Serving => StatusCode::OK,
                        _ => StatusCode::SERVICE_UNAVAILABLE,
                    };
                    probe(status, state.name())
                }
            }),
        )
}

/// A probe's answer: `{"status": state}`, never cached.
fn probe(status: StatusCode, state: &str) -> Response {
    (
        status,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        json!({ "status": state }).to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    async fn get_probe(router: &Router, path: &str) -> (StatusCode, String) {
        let answer = router
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).expect("request"))
            .await
            .expect("an answer");
        let status = answer.status();
        let body = axum::body::to_bytes(answer.into_body(), 1024)
            .await
            .expect("a body");
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn readiness_follows_the_health_checks_and_liveness_does_not() {
        let (set, readiness) = watch::channel(Readiness::Starting);
        let router = routes(readiness);
        for (state, code) in [
            (Readiness::Starting, StatusCode::SERVICE_UNAVAILABLE),
            (Readiness::Serving, StatusCode::OK),
            (Readiness::NotServing, StatusCode::SERVICE_UNAVAILABLE),
            (Readiness::Serving, StatusCode::OK),
            (Readiness::Draining, StatusCode::SERVICE_UNAVAILABLE),
        ] {
            set.send_replace(state);
            assert_eq!(
                get_probe(&router, READYZ_PATH).await,
                (code, format!(r#"{{"status":"{}"}}"#, state.name()))
            );
            assert_eq!(
                get_probe(&router, HEALTHZ_PATH).await,
                (StatusCode::OK, r#"{"status":"ok"}"#.to_owned())
            );
        }
    }
}
