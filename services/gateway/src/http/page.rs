//! The browser client's routes: the page and its files, from a [`Bundle`] (in the binary, the
//! one embedded from `web/dist`).
//!
//! Headers, and why:
//! - `Content-Type` from the file's extension (`application/wasm`, so browsers compile the
//!   engine while it streams in; `text/javascript` for modules), with `X-Content-Type-Options:
//!   nosniff`, so nothing is ever run as a type it was not declared as.
//! - `Cache-Control: public, max-age=31536000, immutable` for content-hashed files (a new build
//!   has new names), `no-cache` with an ETag for `index.html` and unhashed files (revalidated on
//!   every load, answered `304` when unchanged), so a deploy reaches every browser at once.
//! - A Content-Security-Policy that lets the page run only its own scripts and wasm, connect
//!   only to its own origin (and WebSockets), and style only from its own style sheets: no
//!   inline script or style, so an injected string can never run. `frame-ancestors` is
//!   configurable so a platform may embed the page (and hand it a token by `postMessage`).
//! - `Referrer-Policy: no-referrer`: an invite code in the path never leaks to another site.
//! - Compression (brotli or gzip, as the client accepts) of every file but tiny ones.

use super::{NOSNIFF, not_found};
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use hidden_front_web_assets::{ASSETS_DIR, Asset, Bundle, INDEX, INPUTS_FILE};
use std::sync::Arc;
use tower_http::CompressionLevel;
use tower_http::compression::CompressionLayer;

/// The page's paths that answer `index.html` (the page reads the rest from the path).
pub const PAGE_PATHS: [&str; 4] = ["/", "/game/{id}", "/watch/{id}", "/invite/{code}"];

/// `Cache-Control` of a content-hashed file: a year, never revalidated.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// `Cache-Control` of `index.html` and unhashed files: kept, but revalidated on every use.
pub const REVALIDATE: &str = "no-cache";

/// The default `frame-ancestors` source list: only the page's own origin may frame it.
pub const DEFAULT_FRAME_ANCESTORS: &str = "'self'";

/// The page to serve and how it may be embedded.
#[derive(Debug, Clone)]
pub struct PageConfig {
    bundle: Bundle,
    csp: HeaderValue,
}

/// A `frame-ancestors` value that cannot go into the policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageConfigError {
    /// Empty, or holding what would end the directive or the header (`;`, `,`, control
    /// characters, non-ASCII).
    #[error(
        "the frame-ancestors source list {0:?} is not usable: give space-separated sources such \
         as 'self' https://platform.example (or 'none'), without ';' or ','"
    )]
    BadFrameAncestors(String),
}

impl PageConfig {
    /// Serves `bundle`, framable by the CSP sources `frame_ancestors` (e.g. `'self'`,
    /// `'self' https://platform.example`, `'none'`).
    pub fn new(bundle: Bundle, frame_ancestors: &str) -> Result<PageConfig, PageConfigError> {
        let sources = frame_ancestors.split_ascii_whitespace().collect::<Vec<_>>();
        let usable = !sources.is_empty()
            && sources.iter().all(|source| {
                source
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && b != b';' && b != b',')
            });
        if !usable {
            return Err(PageConfigError::BadFrameAncestors(
                frame_ancestors.to_string(),
            ));
        }
        let csp = content_security_policy(&sources.join(" "));
        let csp = HeaderValue::from_str(&csp)
            .map_err(|_| PageConfigError::BadFrameAncestors(frame_ancestors.to_string()))?;
        Ok(PageConfig { bundle, csp })
    }

    /// The page's Content-Security-Policy header value.
    pub fn content_security_policy(&self) -> &str {
        self.csp.to_str().unwrap_or_default()
    }

    /// The bundle served.
    pub fn bundle(&self) -> &Bundle {
        &self.bundle
    }
}

/// The policy: own scripts and wasm (`'wasm-unsafe-eval'` permits compiling WebAssembly, not
/// `eval`), own style sheets, connections to the own origin and WebSockets, no plugins, no
/// `<base>` rewriting, forms only to the own origin, framing by `frame_ancestors` only.
fn content_security_policy(frame_ancestors: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; \
         img-src 'self' data:; font-src 'self'; connect-src 'self' ws: wss:; object-src 'none'; \
         base-uri 'none'; form-action 'self'; frame-ancestors {frame_ancestors}"
    )
}

/// The page's routes (compressed).
pub(super) fn routes(config: PageConfig) -> Router {
    let state = Arc::new(config);
    let mut router = Router::new();
    for path in PAGE_PATHS {
        router = router.route(path, get(index));
    }
    router
        .route("/assets/{*path}", get(asset))
        .route("/{file}", get(root_file))
        .with_state(state)
        // Brotli at a moderate level: compressing is per response (a few ms for the wasm).
        .layer(
            CompressionLayer::new()
                .br(true)
                .gzip(true)
                .quality(CompressionLevel::Precise(5)),
        )
}

/// `index.html`, for every page path.
async fn index(State(page): State<Arc<PageConfig>>, headers: HeaderMap) -> Response {
    serve(&page, page.bundle.index(), &headers)
}

/// A file under `assets/`.
async fn asset(
    State(page): State<Arc<PageConfig>>,
    Path(path): Path<String>,
    headers: HeaderMap,
) -> Response {
    match page.bundle.get(&format!("{ASSETS_DIR}{path}")) {
        Some(asset) => serve(&page, asset, &headers),
        None => not_found().await,
    }
}

/// A file at the bundle's root other than the recorded inputs hash (a favicon, say).
async fn root_file(
    State(page): State<Arc<PageConfig>>,
    Path(file): Path<String>,
    headers: HeaderMap,
) -> Response {
    if file == INPUTS_FILE {
        return not_found().await;
    }
    match page.bundle.get(&file) {
        Some(asset) => serve(&page, asset, &headers),
        None if file == INDEX => serve(&page, page.bundle.index(), &headers),
        None => not_found().await,
    }
}

/// One file with its headers; `304 Not Modified` when the client's `If-None-Match` names its
/// ETag.
fn serve(page: &PageConfig, asset: &Asset, request: &HeaderMap) -> Response {
    let cache = match asset.is_immutable() {
        true => IMMUTABLE,
        false => REVALIDATE,
    };
    let etag = HeaderValue::from_str(asset.etag()).unwrap_or(HeaderValue::from_static("\"\""));
    let headers = [
        (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
        (header::ETAG, etag),
        (header::CONTENT_SECURITY_POLICY, page.csp.clone()),
        (NOSNIFF.0, NOSNIFF.1),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
    ];
    if etag_matches(request, asset.etag()) {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    let content_type = HeaderValue::from_str(asset.content_type())
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    (
        StatusCode::OK,
        headers,
        [(header::CONTENT_TYPE, content_type)],
        Body::from(asset.static_bytes()),
    )
        .into_response()
}

/// Whether `If-None-Match` lists `etag` (or is `*`); weak comparison, as RFC 9110 asks for it.
fn etag_matches(request: &HeaderMap, etag: &str) -> bool {
    request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == "*" || tag == etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_ancestors_go_into_the_policy() {
        let bundle = Bundle::from_files([(INDEX, "<html></html>")]).expect("a bundle");
        let page = PageConfig::new(bundle.clone(), DEFAULT_FRAME_ANCESTORS).expect("usable");
        assert!(
            page.content_security_policy()
                .ends_with("; frame-ancestors 'self'")
        );
        let page = PageConfig::new(bundle.clone(), "  'self'   https://platform.example ")
            .expect("usable");
        assert!(
            page.content_security_policy()
                .ends_with("; frame-ancestors 'self' https://platform.example")
        );
        for bad in [
            "",
            "   ",
            "'self'; script-src *",
            "a,b",
            "caf\u{e9}",
            "a\u{1}b",
        ] {
            assert!(PageConfig::new(bundle.clone(), bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_policy_allows_no_inline_code() {
        let policy = content_security_policy("'self'");
        assert!(!policy.contains("unsafe-inline"));
        assert!(!policy.contains("'unsafe-eval'"));
        assert!(policy.contains("script-src 'self' 'wasm-unsafe-eval';"));
        assert!(policy.contains("connect-src 'self' ws: wss:;"));
        assert!(policy.contains("style-src 'self';"));
    }

    #[test]
    fn if_none_match_is_compared_weakly() {
        let mut headers = HeaderMap::new();
        assert!(!etag_matches(&headers, "\"a\""));
        headers.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("\"b\", W/\"a\""),
        );
        assert!(etag_matches(&headers, "\"a\""));
        assert!(!etag_matches(&headers, "\"c\""));
        headers.insert(header::IF_NONE_MATCH, HeaderValue::from_static("*"));
        assert!(etag_matches(&headers, "\"c\""));
    }
}
