//! The gateway's HTTP face end to end: the real binary (`serve`, every service, real Postgres)
//! serves the embedded browser client at `/` and its files with their types, hands out a guest
//! token on `POST /v1/guest` that then authenticates a WebSocket, and makes invite links that
//! point at its own page (`http://HOST:PORT/invite/<code>`, the default `--invite-base-url`).

use futures_util::{SinkExt, StreamExt};
use hidden_front_e2e::{Server, TestDatabase};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::{HeaderMap, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

/// How long any one awaited answer may take.
const DEADLINE: Duration = Duration::from_secs(30);

/// One HTTP answer, body collected.
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
}

/// `method path` on a fresh HTTP/1.1 connection to `addr`.
async fn request(addr: SocketAddr, method: &str, path: &str) -> Answer {
    let stream = TcpStream::connect(addr).await.expect("connected");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("an HTTP/1.1 connection");
    tokio::spawn(connection);
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string())
        .body(Empty::<Bytes>::new())
        .expect("a request");
    let response = tokio::time::timeout(DEADLINE, sender.send_request(request))
        .await
        .expect("an answer in time")
        .expect("an answer");
    let (parts, body) = response.into_parts();
    let body = body.collect().await.expect("the body").to_bytes().to_vec();
    Answer {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

/// The committed bundle's files under `assets/` (the binary embeds exactly these: `binary()`
/// refuses a binary older than `web/dist`).
fn bundle_assets() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/dist/assets");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("web/dist/assets")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

/// A WebSocket to `addr`, authenticated with `token` by the `auth` message (as the page does);
/// returns the socket and the `auth` answer.
async fn ws_sign_in(
    addr: SocketAddr,
    token: &str,
) -> (
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
    Value,
) {
    let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/v1/ws"))
        .await
        .expect("upgraded");
    let auth = json!({"type": "auth", "token": token}).to_string();
    socket.send(Message::text(auth)).await.expect("sent");
    let answer = next_json(&mut socket).await;
    (socket, answer)
}

/// The next text frame as JSON.
async fn next_json(
    socket: &mut tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
) -> Value {
    loop {
        let frame = tokio::time::timeout(DEADLINE, socket.next())
            .await
            .expect("a frame in time")
            .expect("the socket is open")
            .expect("a readable frame");
        if let Message::Text(text) = frame {
            return serde_json::from_str(&text).expect("JSON");
        }
    }
}

/// A guest identity from `POST /v1/guest`: token and player id.
async fn guest(addr: SocketAddr) -> (String, String) {
    let answer = request(addr, "POST", "/v1/guest").await;
    assert_eq!(answer.status, StatusCode::OK, "{answer:?}");
    let body: Value = serde_json::from_slice(&answer.body).expect("JSON");
    let token = body["token"].as_str().expect("a token").to_string();
    let player = body["player"].as_str().expect("a player").to_string();
    assert!(player.starts_with("guest-"), "{player}");
    (token, player)
}

#[tokio::test]
async fn the_binary_serves_the_page_guests_and_own_page_invites() {
    let db = TestDatabase::create().await;
    let server = Server::start("web", db.url()).await;
    let http = server.http_addr().expect("the gateway's HTTP listener");

    // The page, at / and at every client path.
    for path in ["/", "/invite/K7QX2M", "/game/x", "/watch/x"] {
        let page = request(http, "GET", path).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        assert!(
            page.header("content-type").starts_with("text/html"),
            "{path}"
        );
        assert_eq!(page.header("cache-control"), "no-cache");
        assert_eq!(page.header("x-content-type-options"), "nosniff");
        let csp = page.header("content-security-policy");
        assert!(
            csp.contains("script-src 'self' 'wasm-unsafe-eval'"),
            "{csp}"
        );
        assert!(csp.contains("frame-ancestors 'self'"), "{csp}");
        let html = String::from_utf8(page.body).expect("UTF-8");
        assert!(html.contains("<html"), "{path}");
    }

    // Every file of the bundle, with its type and a year of caching; the engine as wasm.
    let index = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/dist/index.html"),
    )
    .expect("web/dist/index.html");
    let placeholder = index.contains("name=\"hidden-front-bundle\" content=\"placeholder\"");
    let mut wasm = 0;
    for file in bundle_assets() {
        let name = file.file_name().expect("a name").to_string_lossy();
        let answer = request(http, "GET", &format!("/assets/{name}")).await;
        assert_eq!(answer.status, StatusCode::OK, "{name}");
        assert_eq!(
            answer.body,
            std::fs::read(&file).expect("readable"),
            "{name}"
        );
        assert_eq!(
            answer.header("cache-control"),
            "public, max-age=31536000, immutable",
            "{name}"
        );
        let expected = match file.extension().and_then(|e| e.to_str()) {
            Some("wasm") => "application/wasm",
            Some("js") => "text/javascript; charset=utf-8",
            Some("css") => "text/css; charset=utf-8",
            _ => continue,
        };
        assert_eq!(answer.header("content-type"), expected, "{name}");
        wasm += usize::from(expected == "application/wasm");
    }
    assert!(
        wasm > 0 || placeholder,
        "the real bundle carries the engine as a .wasm file under web/dist/assets"
    );
    if wasm == 0 {
        eprintln!("web/dist is the placeholder bundle: no wasm file to check yet");
    }
    assert_eq!(
        request(http, "GET", "/assets/none-00000000.wasm")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        request(http, "GET", "/inputs.sha256").await.status,
        StatusCode::NOT_FOUND
    );

    // The server's clock.
    let time = request(http, "GET", "/v1/time").await;
    assert_eq!(time.status, StatusCode::OK);
    let time: Value = serde_json::from_slice(&time.body).expect("JSON");
    assert!(
        time["unixMillis"]
            .as_u64()
            .is_some_and(|ms| ms > 1_700_000_000_000)
    );

    // A guest from one click, signed in on the WebSocket.
    let (alice_token, alice) = guest(http).await;
    let (mut alice_ws, answer) = ws_sign_in(http, &alice_token).await;
    assert_eq!(answer["type"], "result", "{answer}");
    assert_eq!(answer["response"]["player"], alice.as_str());
    assert_eq!(answer["response"]["guest"], true);

    // Her invite links to this gateway's own page.
    let create = json!({"id": 1, "type": "create_invite", "request": {"inviteId": "web-1"}});
    alice_ws
        .send(Message::text(create.to_string()))
        .await
        .expect("sent");
    let created = next_json(&mut alice_ws).await;
    assert_eq!(created["type"], "result", "{created}");
    let invite = &created["response"]["invite"];
    let code = invite["code"].as_str().expect("a code");
    let link = invite["link"].as_str().expect("a link");
    assert_eq!(link, format!("http://{http}/invite/{code}"));

    // The link opens the page, and another guest accepts with it.
    let path = link
        .strip_prefix(&format!("http://{http}"))
        .expect("on this gateway");
    assert_eq!(request(http, "GET", path).await.status, StatusCode::OK);
    let (bob_token, bob) = guest(http).await;
    assert_ne!(bob, alice);
    let (mut bob_ws, answer) = ws_sign_in(http, &bob_token).await;
    assert_eq!(answer["type"], "result", "{answer}");
    let accept = json!({"id": 1, "type": "accept_invite", "request": {"code": link}});
    bob_ws
        .send(Message::text(accept.to_string()))
        .await
        .expect("sent");
    let accepted = next_json(&mut bob_ws).await;
    assert_eq!(accepted["type"], "result", "{accepted}");
    assert_eq!(accepted["response"]["opponent"], alice.as_str());
    assert!(
        accepted["response"]["gameId"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
}

#[tokio::test]
async fn an_api_only_gateway_serves_no_page_and_invites_keep_an_explicit_base() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args(
        "api-only",
        db.url(),
        &[
            "--web-client=false",
            "--invite-base-url",
            "https://play.example/join",
            "--allow-guest-tokens=false",
        ],
    )
    .await;
    let http = server.http_addr().expect("the gateway's HTTP listener");
    assert_eq!(
        request(http, "GET", "/").await.status,
        StatusCode::NOT_FOUND
    );
    let refused = request(http, "POST", "/v1/guest").await;
    assert_eq!(refused.status, StatusCode::NOT_FOUND);
    let body: Value = serde_json::from_slice(&refused.body).expect("JSON");
    assert_eq!(body["reason"], "GUESTS_NOT_ALLOWED");

    let token = hidden_front_e2e::gateway::token("carol");
    let (mut ws, answer) = ws_sign_in(http, &token).await;
    assert_eq!(answer["type"], "result", "{answer}");
    let create = json!({"id": 1, "type": "create_invite", "request": {"inviteId": "api-1"}});
    ws.send(Message::text(create.to_string()))
        .await
        .expect("sent");
    let created = next_json(&mut ws).await;
    let invite = &created["response"]["invite"];
    let code = invite["code"].as_str().expect("a code");
    assert_eq!(
        invite["link"].as_str(),
        Some(format!("https://play.example/join/{code}").as_str())
    );
}
