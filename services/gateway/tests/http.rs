//! The HTTP listener's routes besides `/v1/ws`, on a real server on a loopback socket, through a
//! plain HTTP/1.1 client: the page and its files (types, caching, CSP, nosniff, compression,
//! HEAD, revalidation, 404s), the page turned off, `GET /v1/time`, and `POST /v1/guest` allowed,
//! refused, and rate-limited per client address, with the minted token opening a WebSocket.

use futures_util::{SinkExt, StreamExt};
use hidden_front_gateway::auth::{AuthConfig, Authenticator, PublicKeyAlgorithm};
use hidden_front_gateway::http::page::{DEFAULT_FRAME_ANCESTORS, IMMUTABLE, REVALIDATE};
use hidden_front_gateway::http::{self, GuestConfig, HttpConfig, PageConfig};
use hidden_front_gateway::ws::{self, WsConfig};
use hidden_front_gateway::{Gateway, GatewayConfig, SessionClient};
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use hidden_front_web_assets::Bundle;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::{HeaderMap, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::io::Read;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::net::{TcpListener, TcpSocket};
use tokio_tungstenite::tungstenite::Message;

const INDEX: &str = "<!doctype html><html><head><script type=\"module\" src=\"/assets/app-AbCd1234.js\"></script></head><body></body></html>";
const SCRIPT: &str = "export const answer = 42;\n";
const STYLE: &str = "body { margin: 0 }\n";
const RSA_PUBLIC: &str = include_str!("fixtures/rsa_public.pem");
const SECRET: &[u8] = b"a-production-secret-long-enough-0123456789";

/// A wasm module's bytes: the magic and version, then filler that compresses well.
fn wasm() -> Vec<u8> {
    let mut bytes = b"\0asm\x01\0\0\0".to_vec();
    bytes.extend(std::iter::repeat_n(b"hidden front ".as_slice(), 2000).flatten());
    bytes
}

/// A bundle like the real one: the page, hashed script, style and wasm, an unhashed file, the
/// inputs hash.
fn bundle() -> Bundle {
    Bundle::from_files([
        ("index.html", INDEX.as_bytes().to_vec()),
        ("assets/app-AbCd1234.js", SCRIPT.as_bytes().to_vec()),
        ("assets/app-EfGh5678.css", STYLE.as_bytes().to_vec()),
        ("assets/engine_bg-IjKl9012.wasm", wasm()),
        (
            "assets/logo.svg",
            b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>".to_vec(),
        ),
        ("favicon.ico", vec![0, 0, 1, 0]),
        (
            "inputs.sha256",
            format!("{}\n", "0f".repeat(32)).into_bytes(),
        ),
    ])
    .expect("a bundle")
}

/// A session client that is never called (these routes do not reach the session).
fn no_session() -> SessionClient {
    SessionServiceClient::new(
        tonic::transport::Endpoint::from_static("http://127.0.0.1:9")
            .connect_lazy()
            .into(),
    )
}

/// The HTTP listener of a gateway with `auth`, serving `config`, on a loopback port.
async fn serve(config: HttpConfig, auth: AuthConfig) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("bound");
    let gateway = Gateway::new(
        GatewayConfig::default(),
        Authenticator::new(auth).expect("a usable token configuration"),
        no_session(),
    );
    let routes = http::routes(config, gateway.clone());
    tokio::spawn(ws::serve_with(
        listener,
        gateway,
        WsConfig::default(),
        routes,
        std::future::pending(),
    ));
    addr
}

/// The page of [`bundle`] and guests as `auth` allows them.
fn page_config(auth: &AuthConfig) -> HttpConfig {
    HttpConfig {
        page: Some(PageConfig::new(bundle(), DEFAULT_FRAME_ANCESTORS).expect("usable")),
        guests: GuestConfig::from_auth(auth),
    }
}

/// One answer, body collected.
#[derive(Debug)]
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map(|v| v.to_str().expect("an ASCII header"))
            .unwrap_or_default()
    }

    fn json(&self) -> Value {
        assert_eq!(self.header("content-type"), "application/json", "{self:?}");
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// `method path` with `headers`, from the loopback address `from`, on a fresh connection.
async fn request_from(
    from: &str,
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Answer {
    let socket = TcpSocket::new_v4().expect("a socket");
    socket
        .bind(format!("{from}:0").parse().expect("an address"))
        .expect("bound to the client address");
    let stream = socket.connect(addr).await.expect("connected");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("an HTTP/1.1 connection");
    tokio::spawn(connection);
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = sender
        .send_request(request.body(Empty::<Bytes>::new()).expect("a request"))
        .await
        .expect("an answer");
    let (parts, body) = response.into_parts();
    let body = body.collect().await.expect("the body").to_bytes().to_vec();
    Answer {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

async fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> Answer {
    request_from("127.0.0.1", addr, method, path, headers).await
}

async fn get(addr: SocketAddr, path: &str) -> Answer {
    request(addr, "GET", path, &[]).await
}

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64
}

/// The security headers every file of the page carries.
fn assert_secured(answer: &Answer) {
    assert_eq!(answer.header("x-content-type-options"), "nosniff");
    assert_eq!(answer.header("referrer-policy"), "no-referrer");
    let csp = answer.header("content-security-policy");
    for directive in [
        "default-src 'self'",
        "script-src 'self' 'wasm-unsafe-eval'",
        "style-src 'self'",
        "connect-src 'self' ws: wss:",
        "object-src 'none'",
        "frame-ancestors 'self'",
    ] {
        assert!(
            csp.split(';').any(|d| d.trim() == directive),
            "{directive:?} in {csp:?}"
        );
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");
}

#[tokio::test]
async fn every_page_path_answers_the_page_revalidated() {
    let addr = serve(page_config(&AuthConfig::dev()), AuthConfig::dev()).await;
    for path in [
        "/",
        "/game/01a227f0-1df6-7473-9e35-d126ae179a1e",
        "/watch/01a227f0-1df6-7473-9e35-d126ae179a1e",
        "/invite/K7Q2XZ",
        "/index.html",
    ] {
        let answer = get(addr, path).await;
        assert_eq!(answer.status, StatusCode::OK, "{path}");
        assert_eq!(answer.header("content-type"), "text/html; charset=utf-8");
        assert_eq!(answer.header("cache-control"), REVALIDATE, "{path}");
        assert!(answer.header("etag").starts_with('"'), "{path}");
        assert_secured(&answer);
        assert_eq!(answer.body, INDEX.as_bytes(), "{path}");
    }
}

#[tokio::test]
async fn assets_have_their_types_and_hashed_ones_are_immutable() {
    let addr = serve(page_config(&AuthConfig::dev()), AuthConfig::dev()).await;
    for (path, content_type, cache, body) in [
        (
            "/assets/app-AbCd1234.js",
            "text/javascript; charset=utf-8",
            IMMUTABLE,
            SCRIPT.as_bytes().to_vec(),
        ),
        (
            "/assets/app-EfGh5678.css",
            "text/css; charset=utf-8",
            IMMUTABLE,
            STYLE.as_bytes().to_vec(),
        ),
        (
            "/assets/engine_bg-IjKl9012.wasm",
            "application/wasm",
            IMMUTABLE,
            wasm(),
        ),
        (
            "/assets/logo.svg",
            "image/svg+xml",
            REVALIDATE,
            b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>".to_vec(),
        ),
        ("/favicon.ico", "image/x-icon", REVALIDATE, vec![0, 0, 1, 0]),
    ] {
        let answer = get(addr, path).await;
        assert_eq!(answer.status, StatusCode::OK, "{path}");
        assert_eq!(answer.header("content-type"), content_type, "{path}");
        assert_eq!(answer.header("cache-control"), cache, "{path}");
        assert_secured(&answer);
        assert_eq!(answer.body, body, "{path}");
    }
}

#[tokio::test]
async fn unknown_paths_are_404() {
    let addr = serve(page_config(&AuthConfig::dev()), AuthConfig::dev()).await;
    for path in [
        "/assets/app-00000000.js",
        "/assets/",
        "/assets/../index.html",
        "/assets/%2e%2e/index.html",
        "/inputs.sha256",
        "/nothing",
        "/game",
        "/game/a/b",
        "/invite/",
        "/v1/nothing",
        "/v1/time/x",
    ] {
        let answer = get(addr, path).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{path}: {answer:?}");
        assert_eq!(answer.header("x-content-type-options"), "nosniff", "{path}");
    }
}

#[tokio::test]
async fn head_answers_the_headers_without_the_body() {
    let addr = serve(page_config(&AuthConfig::dev()), AuthConfig::dev()).await;
    for (path, content_type) in [
        ("/", "text/html; charset=utf-8"),
        ("/assets/engine_bg-IjKl9012.wasm", "application/wasm"),
    ] {
        let answer = request(addr, "HEAD", path, &[]).await;
        assert_eq!(answer.status, StatusCode::OK, "{path}");
        assert_eq!(answer.header("content-type"), content_type, "{path}");
        assert_secured(&answer);
        assert!(answer.body.is_empty(), "{path}");
    }
    let missing = request(addr, "HEAD", "/assets/none-00000000.js", &[]).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn files_are_compressed_as_the_client_accepts() {
    let addr = serve(page_config(&AuthConfig::dev()), AuthConfig::dev()).await;
    let path = "/assets/engine_bg-IjKl9012.wasm";

    let plain = get(addr, path).await;
    assert_eq!(plain.header("content-encoding"), "");
    assert_eq!(plain.body, wasm());

    let br = request(addr, "GET", path, &[("accept-encoding", "br")]).await;
    assert_eq!(br.status, StatusCode::OK);
    assert_eq!(br.header("content-encoding"), "br");
    assert_eq!(br.header("content-type"), "application/wasm");
    assert!(
        br.header("vary")
            .to_ascii_lowercase()
            .contains("accept-encoding")
    );
    assert!(br.body.len() < wasm().len() / 10, "{} bytes", br.body.len());
    let mut decoded = Vec::new();
    brotli::Decompressor::new(br.body.as_slice(), 4096)
        .read_to_end(&mut decoded)
        .expect("brotli");
    assert_eq!(decoded, wasm());

    let gzip = request(addr, "GET", "/", &[("accept-encoding", "gzip")]).await;
    assert_eq!(gzip.header("content-encoding"), "gzip");
    assert_eq!(gzip.header("content-type"), "text/html; charset=utf-8");
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(gzip.body.as_slice())
        .read_to_end(&mut decoded)
        .expect("gzip");
    assert_eq!(decoded, INDEX.as_bytes());
}

#[tokio::test]
async fn an_unchanged_page_is_revalidated_with_304() {
    let addr = serve(page_config(&AuthConfig::dev()), AuthConfig::dev()).await;
    let first = get(addr, "/").await;
    let etag = first.header("etag").to_string();
    let again = request(addr, "GET", "/invite/ABC", &[("if-none-match", &etag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), etag);
    let changed = request(addr, "GET", "/", &[("if-none-match", "\"other\"")]).await;
    assert_eq!(changed.status, StatusCode::OK);
}

#[tokio::test]
async fn frame_ancestors_are_configurable() {
    let config = HttpConfig {
        page: Some(PageConfig::new(bundle(), "'self' https://platform.example").expect("usable")),
        guests: GuestConfig::disabled(),
    };
    let addr = serve(config, AuthConfig::dev()).await;
    let answer = get(addr, "/").await;
    assert!(
        answer
            .header("content-security-policy")
            .ends_with("; frame-ancestors 'self' https://platform.example"),
        "{answer:?}"
    );
}

#[tokio::test]
async fn the_embedded_bundle_is_served() {
    let config = HttpConfig {
        page: Some(PageConfig::new(Bundle::embedded(), DEFAULT_FRAME_ANCESTORS).expect("usable")),
        guests: GuestConfig::disabled(),
    };
    let addr = serve(config, AuthConfig::dev()).await;
    let embedded = Bundle::embedded();
    let page = get(addr, "/").await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.body, embedded.index().bytes());
    for path in embedded.paths().filter(|p| p.starts_with("assets/")) {
        let answer = get(addr, &format!("/{path}")).await;
        let asset = embedded.get(path).expect("listed");
        assert_eq!(answer.status, StatusCode::OK, "{path}");
        assert_eq!(
            answer.header("content-type"),
            asset.content_type(),
            "{path}"
        );
        assert_eq!(answer.body, asset.bytes(), "{path}");
    }
}

#[tokio::test]
async fn an_api_only_gateway_serves_no_page_but_the_apis() {
    let config = HttpConfig {
        page: None,
        guests: GuestConfig::from_auth(&AuthConfig::dev()),
    };
    let addr = serve(config, AuthConfig::dev()).await;
    for path in ["/", "/game/x", "/assets/app-AbCd1234.js", "/favicon.ico"] {
        assert_eq!(
            get(addr, path).await.status,
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
    assert_eq!(get(addr, "/v1/time").await.status, StatusCode::OK);
    let guest = request(addr, "POST", "/v1/guest", &[]).await;
    assert_eq!(guest.status, StatusCode::OK);
}

#[tokio::test]
async fn time_is_the_servers_clock_in_unix_millis() {
    let addr = serve(HttpConfig::default(), AuthConfig::dev()).await;
    let before = now_millis();
    let answer = get(addr, "/v1/time").await;
    let after = now_millis();
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.header("cache-control"), "no-store");
    let body = answer.json();
    let millis = body["unixMillis"].as_u64().expect("a number");
    assert!(
        (before..=after).contains(&millis),
        "{before} <= {millis} <= {after}"
    );
    assert_eq!(body.as_object().expect("an object").len(), 1);
    let head = request(addr, "HEAD", "/v1/time", &[]).await;
    assert_eq!(head.status, StatusCode::OK);
}

#[tokio::test]
async fn a_guest_token_is_minted_where_guests_are_allowed_and_opens_a_websocket() {
    let auth = AuthConfig::dev();
    let addr = serve(page_config(&auth), auth.clone()).await;
    let before = now_millis();
    let answer = request(addr, "POST", "/v1/guest", &[]).await;
    assert_eq!(answer.status, StatusCode::OK, "{answer:?}");
    assert!(answer.header("cache-control").contains("no-store"));
    let body = answer.json();
    let player = body["player"].as_str().expect("player").to_string();
    let suffix = player.strip_prefix("guest-").expect("a guest id");
    assert_eq!(suffix.len(), 10, "{player}");
    assert!(
        suffix
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    );
    let token = body["token"].as_str().expect("token").to_string();
    let expires = body["expiresAtUnixMillis"].as_u64().expect("expiry");
    let twelve_hours = 12 * 3600 * 1000;
    assert!(
        expires >= before + twelve_hours - 2000 && expires <= now_millis() + twelve_hours,
        "a 12 h lifetime: {expires}"
    );

    let verified = Authenticator::new(auth)
        .expect("usable")
        .authenticate_token(&token)
        .expect("the gateway's own token verifies");
    assert_eq!(verified.id, player);
    assert!(verified.guest);

    // The page's path: a WebSocket, then the `auth` message.
    let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/v1/ws"))
        .await
        .expect("upgraded");
    let auth = serde_json::json!({"type": "auth", "token": token}).to_string();
    socket.send(Message::text(auth)).await.expect("sent");
    let reply = tokio::time::timeout(Duration::from_secs(10), socket.next())
        .await
        .expect("an answer in time")
        .expect("a frame")
        .expect("readable");
    let reply: Value = serde_json::from_str(reply.to_text().expect("text")).expect("JSON");
    assert_eq!(reply["type"], "result", "{reply}");
    assert_eq!(reply["response"]["player"], player.as_str());
    assert_eq!(reply["response"]["guest"], true);

    // Two sign-ins are two guests.
    let other = request(addr, "POST", "/v1/guest", &[]).await.json();
    assert_ne!(other["player"], body["player"]);
}

#[tokio::test]
async fn minted_guests_carry_the_configured_issuer_and_audience() {
    let auth = AuthConfig {
        hs256_secrets: vec![SECRET.to_vec()],
        issuer: Some("https://idp.example".into()),
        audience: Some("hidden-front".into()),
        allow_guest_tokens: true,
        ..AuthConfig::default()
    };
    let addr = serve(page_config(&auth), auth.clone()).await;
    let body = request(addr, "POST", "/v1/guest", &[]).await.json();
    let token = body["token"].as_str().expect("token");
    let player = Authenticator::new(auth)
        .expect("usable")
        .authenticate_token(token)
        .expect("accepted with issuer and audience");
    assert!(player.guest);
}

#[tokio::test]
async fn guests_are_refused_where_the_gateway_cannot_or_may_not_mint() {
    let public_keys_only = AuthConfig {
        public_keys_pem: vec![(PublicKeyAlgorithm::RS256, RSA_PUBLIC.to_string())],
        allow_guest_tokens: true,
        issuer: Some("https://idp.example".into()),
        audience: Some("hidden-front".into()),
        ..AuthConfig::default()
    };
    let guests_refused = AuthConfig {
        hs256_secrets: vec![SECRET.to_vec()],
        allow_guest_tokens: false,
        ..AuthConfig::default()
    };
    for auth in [public_keys_only, guests_refused] {
        assert!(!GuestConfig::from_auth(&auth).mints(), "{auth:?}");
        let addr = serve(page_config(&auth), auth.clone()).await;
        let answer = request(addr, "POST", "/v1/guest", &[]).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{auth:?}");
        let body = answer.json();
        assert_eq!(body["code"], "NOT_FOUND");
        assert_eq!(body["reason"], "GUESTS_NOT_ALLOWED");
        assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()));
        assert!(body.get("token").is_none());
        // The page is still served: the platform hands it the token.
        assert_eq!(get(addr, "/").await.status, StatusCode::OK);
    }
}

#[tokio::test]
async fn only_post_mints() {
    let addr = serve(page_config(&AuthConfig::dev()), AuthConfig::dev()).await;
    let answer = get(addr, "/v1/guest").await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(answer.header("allow").contains("POST"), "{answer:?}");
}

#[tokio::test]
async fn guest_sign_ins_are_rate_limited_per_client_address() {
    let auth = AuthConfig::dev();
    let config = HttpConfig {
        page: None,
        guests: GuestConfig::from_auth(&auth).with_rate(1, 2),
    };
    let addr = serve(config, auth).await;
    for _ in 0..2 {
        let answer = request_from("127.0.0.1", addr, "POST", "/v1/guest", &[]).await;
        assert_eq!(answer.status, StatusCode::OK);
    }
    let limited = request_from("127.0.0.1", addr, "POST", "/v1/guest", &[]).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = limited
        .header("retry-after")
        .parse()
        .expect("Retry-After in seconds");
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    let body = limited.json();
    assert_eq!(body["code"], "RESOURCE_EXHAUSTED");
    assert_eq!(body["reason"], "RATE_LIMITED");
    assert!(body.get("token").is_none());
    // Another client address has its own allowance.
    let other = request_from("127.0.0.2", addr, "POST", "/v1/guest", &[]).await;
    assert_eq!(other.status, StatusCode::OK);
    // The limit is on minting only: the clock and the page are not held up.
    let time = request_from("127.0.0.1", addr, "GET", "/v1/time", &[]).await;
    assert_eq!(time.status, StatusCode::OK);
}
