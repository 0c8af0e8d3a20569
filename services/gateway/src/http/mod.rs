//! The gateway's plain HTTP routes, on the same listener as the WebSocket API (`/v1/ws`):
//!
//! - the browser client ([`page`]): `GET /`, `/game/{id}`, `/watch/{id}`, `/invite/{code}` answer
//!   the page's `index.html` (the page routes on `location.pathname`), `GET /assets/...` its
//!   files, with their types, caching, a Content-Security-Policy and `nosniff`, compressed (gzip
//!   or brotli) for clients that accept it. Off for an API-only gateway ([`HttpConfig::page`]).
//! - `POST /v1/guest` ([`guest`]): a guest token, only where guests are allowed and the gateway
//!   can sign tokens (the one-box setup), rate-limited per client address.
//! - `GET /v1/time`: the server's clock, from which the page estimates its offset.
//! - `GET /healthz` and `GET /readyz` ([`probes`]): liveness and readiness for orchestrators
//!   and load balancers, merged in by the binary, which knows the process's health.
//!
//! Anything else is `404`. Refusals of the `/v1/` routes are JSON with the error contract's
//! names: `{"code": "NOT_FOUND", "reason": "GUESTS_NOT_ALLOWED", "message": "..."}`.

pub mod guest;
pub mod page;
pub mod probes;

pub use guest::GuestConfig;
pub use page::{PageConfig, PageConfigError};
pub use probes::Readiness;

use crate::gateway::Gateway;
use crate::ws::code_name;
use axum::Router;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use hidden_front_api_error::Reason;
use serde_json::json;
use std::time::SystemTime;

/// Path of the guest sign-in endpoint.
pub const GUEST_PATH: &str = "/v1/guest";

/// Path of the server clock endpoint.
pub const TIME_PATH: &str = "/v1/time";

/// What the HTTP listener serves besides the WebSocket API.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The browser client, or `None` for a gateway that serves only the APIs
    /// (`--web-client=false`): the page's routes then answer 404.
    pub page: Option<PageConfig>,
    /// Who may get a guest token from `POST /v1/guest`, and how often.
    pub guests: GuestConfig,
}

impl Default for HttpConfig {
    /// No page and no guest tokens: the APIs only (what [`crate::ws::serve`] serves).
    fn default() -> Self {
        HttpConfig {
            page: None,
            guests: GuestConfig::disabled(),
        }
    }
}

/// The routes of `config` (everything but `/v1/ws`), for the HTTP listener's router. The guest
/// endpoint needs the client's address: serve with
/// `into_make_service_with_connect_info::<SocketAddr>()` (as [`crate::ws::serve_with`] does);
/// without it every caller shares one rate-limit key.
pub fn routes(config: HttpConfig, gateway: Gateway) -> Router {
    let mut router = Router::new()
        .route(TIME_PATH, get(time))
        .merge(guest::routes(config.guests, gateway));
    if let Some(page) = config.page {
        router = router.merge(page::routes(page));
    }
    router.fallback(not_found)
}

/// `GET /v1/time`: `{"unixMillis": N}`, never cached. The page sends it a few times and keeps
/// the answer with the shortest round trip, taking the server's time as that of the round
/// trip's middle (NTP's estimate), to show deadlines in its own clock.
async fn time() -> Response {
    json_response(
        StatusCode::OK,
        json!({ "unixMillis": hidden_front_time::unix_ms(SystemTime::now()) }),
    )
}

/// Any other path: `404`, plain text (with `nosniff`, so it is never taken for a script).
async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (NOSNIFF.0, NOSNIFF.1),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        "not found\n",
    )
        .into_response()
}

/// `X-Content-Type-Options: nosniff`: the browser uses the declared type, never a guess (a
/// text file is never run as a script).
const NOSNIFF: (HeaderName, HeaderValue) = (
    header::X_CONTENT_TYPE_OPTIONS,
    HeaderValue::from_static("nosniff"),
);

/// A JSON answer that no cache keeps.
fn json_response(status: StatusCode, body: serde_json::Value) -> Response {
    (
        status,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            (NOSNIFF.0, NOSNIFF.1),
        ],
        body.to_string(),
    )
        .into_response()
}

/// A refusal in the error contract's terms: the HTTP status that matches the reason's gRPC code
/// and a body naming the code, the reason and what to do.
fn refusal(reason: Reason, message: &str) -> Response {
    let status = match reason.code() {
        tonic::Code::NotFound => StatusCode::NOT_FOUND,
        tonic::Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        tonic::Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        tonic::Code::InvalidArgument => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    json_response(
        status,
        json!({
            "code": code_name(reason.code()),
            "reason": reason.as_str(),
            "message": message,
        }),
    )
}
