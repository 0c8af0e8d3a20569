//! The gateway's HTTP port, for the two things the terminal client asks it: `--guest`, a guest
//! identity from `POST /v1/guest`, so a person can play without a platform account, the internal
//! port or the signing secret; and `GET /v1/time`, the server's clock, so the countdowns are right
//! on a machine whose clock is off.
//!
//! The gateway answers `{"token", "player", "expiresAtUnixMillis"}` when it hands out guest tokens
//! (the one-box default), or 404 with the reason `GUESTS_NOT_ALLOWED`. One plain HTTP/1.1 request
//! with hyper (already in the tree through tonic); no TLS, as the one-box gateway serves plain
//! HTTP (a production platform hands its players tokens instead).

use anyhow::{Context as _, anyhow, bail};
use http_body_util::{BodyExt as _, Empty, Limited};
use hyper::body::Bytes;
use serde::Deserialize;
use std::time::Duration;

/// The largest answer read: a token and a name are far smaller, and a wrong server must not be
/// able to make the client read without end.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// How long the whole request may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// A guest identity as the gateway issued it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Guest {
    /// The bearer token for the gateway's player API.
    pub token: String,
    /// The guest's player id (e.g. `guest-k7qx`).
    pub player: String,
    /// When the token stops being accepted, in milliseconds since the Unix epoch.
    #[serde(default)]
    pub expires_at_unix_millis: u64,
}

/// The error body of the gateway's HTTP routes.
#[derive(Debug, Deserialize)]
struct Refusal {
    #[serde(default)]
    reason: String,
    #[serde(default)]
    message: String,
}

/// Reads the gateway's answer to `POST /v1/guest`: the identity, or an error saying why there is
/// none and what to do instead.
pub fn parse_answer(status: u16, body: &[u8]) -> anyhow::Result<Guest> {
    if (200..300).contains(&status) {
        let guest: Guest = serde_json::from_slice(body)
            .context("the gateway's guest answer is not the expected JSON")?;
        if guest.token.trim().is_empty() {
            bail!("the gateway answered without a guest token");
        }
        return Ok(guest);
    }
    let refusal: Option<Refusal> = serde_json::from_slice(body).ok();
    match refusal {
        Some(r) if r.reason == "GUESTS_NOT_ALLOWED" => bail!(
            "this gateway does not hand out guest tokens (GUESTS_NOT_ALLOWED{}): pass a token with --token or HF_TOKEN",
            if r.message.is_empty() {
                String::new()
            } else {
                format!(": {}", super::board::printable(&r.message))
            }
        ),
        Some(r) if !r.reason.is_empty() => bail!(
            "the gateway refused a guest token: HTTP {status}, {} {}",
            super::board::printable(&r.reason),
            super::board::printable(&r.message)
        ),
        _ if status == 404 => bail!(
            "the gateway has no guest sign-in (HTTP 404 for POST /v1/guest; is --http the gateway's HTTP port?)"
        ),
        _ => bail!("the gateway refused a guest token: HTTP {status}"),
    }
}

/// Asks the gateway at `http` (like `http://127.0.0.1:8080`) for a guest token.
pub async fn guest_token(http: &str) -> anyhow::Result<Guest> {
    tokio::time::timeout(TIMEOUT, request(http))
        .await
        .map_err(|_| anyhow!("no answer from {http} within {} s", TIMEOUT.as_secs()))?
}

async fn request(http: &str) -> anyhow::Result<Guest> {
    let (status, body) = call(http, hyper::Method::POST, "/v1/guest").await?;
    parse_answer(status, &body)
}

/// The server's clock from `GET /v1/time`, as an offset to add to this machine's clock (in
/// milliseconds), estimated NTP style: the server read its clock about halfway through the round
/// trip. `None` when the port does not answer it (an older gateway, or --http pointing elsewhere):
/// the countdowns then use this machine's clock, which is right wherever the clocks are synced.
pub async fn server_clock_offset(http: &str) -> Option<i64> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Time {
        unix_millis: u64,
    }
    let sent = super::clock::now_unix_millis();
    let answer = tokio::time::timeout(
        Duration::from_secs(2),
        call(http, hyper::Method::GET, "/v1/time"),
    )
    .await;
    let received = super::clock::now_unix_millis();
    let Ok(Ok((200, body))) = answer else {
        return None;
    };
    let time: Time = serde_json::from_slice(&body).ok()?;
    let midpoint = sent / 2 + received / 2;
    let offset = i64::try_from(time.unix_millis).ok()? - i64::try_from(midpoint).ok()?;
    Some(offset)
}

/// One HTTP/1.1 request without a body to `path` under `http`: the status and the body (at most
/// [`MAX_ANSWER_BYTES`]).
async fn call(http: &str, method: hyper::Method, path: &str) -> anyhow::Result<(u16, Bytes)> {
    let base: hyper::Uri = http
        .trim_end_matches('/')
        .parse()
        .with_context(|| format!("{http:?} is not an HTTP address (like http://127.0.0.1:8080)"))?;
    match base.scheme_str() {
        Some("http") => {}
        Some(other) => bail!(
            "--http {http:?}: only plain http:// is supported for guest sign-in, not {other}://"
        ),
        None => bail!("--http {http:?}: give the scheme, like http://127.0.0.1:8080"),
    }
    let authority = base
        .authority()
        .ok_or_else(|| anyhow!("--http {http:?} names no host"))?
        .clone();
    let port = authority.port_u16().unwrap_or(80);
    let prefix = base.path().trim_end_matches('/');
    let path = format!("{prefix}{path}");
    let stream = tokio::net::TcpStream::connect((authority.host(), port))
        .await
        .with_context(|| {
            format!("cannot reach the gateway's HTTP port at {http} (is it running? see --http / HF_HTTP)")
        })?;
    // A gRPC port (HTTP/2 only) answers an HTTP/1.1 request with HTTP/2 frames, which hyper
    // reports as "received unexpected message from connection": say which port was meant.
    let not_http = |e: &dyn std::fmt::Display| {
        anyhow!(
            "{http} does not answer HTTP/1.1 ({e}): it looks like the gateway's gRPC port; --http \
             takes the gateway's HTTP port (the page's address), e.g. http://127.0.0.1:8080, and \
             the gRPC port goes to --gateway"
        )
    };
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| not_http(&e))?;
    let driver = tokio::spawn(connection);
    let request = hyper::Request::builder()
        .method(method.clone())
        .uri(path.as_str())
        .header(hyper::header::HOST, authority.as_str())
        .header(hyper::header::ACCEPT, "application/json")
        .body(Empty::<Bytes>::new())
        .context("building the request")?;
    let response = match sender.send_request(request).await {
        Ok(response) => response,
        Err(e) if e.is_parse() || speaks_http2(http).await => return Err(not_http(&e)),
        Err(e) => bail!("{method} {http}{path} failed: {e}"),
    };
    let status = response.status().as_u16();
    let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
        .collect()
        .await
        .map_err(|e| anyhow!("reading the gateway's answer to {method} {path}: {e}"))?
        .to_bytes();
    driver.abort();
    Ok((status, body))
}

/// Whether `address` answers a plain HTTP/1.1 request with an HTTP/2 frame (a SETTINGS or
/// GOAWAY frame, as a gRPC server does to a request that is not HTTP/2): how the client tells
/// that `--http` names the gateway's gRPC port, which hyper only reports as a cancelled request
/// or an unexpected message. Bounded by two seconds; false on any failure.
pub async fn speaks_http2(address: &str) -> bool {
    matches!(first_bytes(address).await, Some(head) if head.len() >= 9 && matches!(head[3], 0x04 | 0x07))
}

/// Whether `address` answers a plain HTTP/1.1 request with an HTTP/1 response (any status), which
/// a gRPC port never does: how the client tells, after a gRPC call failed, that `--gateway`
/// names the gateway's HTTP port. Bounded by two seconds; false on any failure.
pub async fn speaks_http1(address: &str) -> bool {
    matches!(first_bytes(address).await, Some(head) if head.starts_with(b"HTTP/1."))
}

/// The first bytes (up to 9, an HTTP/2 frame header) `address` answers to a plain HTTP/1.1
/// `GET /readyz`, within two seconds; `None` when it cannot be asked.
async fn first_bytes(address: &str) -> Option<Vec<u8>> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let probe = async {
        let base: hyper::Uri = address.trim_end_matches('/').parse().ok()?;
        let authority = base.authority()?.clone();
        let port = authority.port_u16().unwrap_or(80);
        let mut stream = tokio::net::TcpStream::connect((authority.host(), port))
            .await
            .ok()?;
        let request = format!(
            "GET /readyz HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
            authority.as_str()
        );
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut head = vec![0u8; 9];
        let mut read = 0;
        while read < head.len() {
            match stream.read(&mut head[read..]).await {
                Ok(0) | Err(_) => break,
                Ok(n) => read += n,
            }
        }
        head.truncate(read);
        Some(head)
    };
    tokio::time::timeout(Duration::from_secs(2), probe)
        .await
        .ok()
        .flatten()
}
