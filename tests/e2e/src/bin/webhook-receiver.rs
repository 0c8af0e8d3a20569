//! A webhook receiver process for the end-to-end tests: listens on `--port`, verifies each
//! request's Standard Webhooks signature with `--secret`, and appends one JSON line per request
//! to `--out` (`{"id", "type", "subject", "data", "position", "verified", "status"}`), written
//! with one `write` on a file opened for appending, so a SIGKILL never leaves half a line. `--fail-first N` answers
//! 500 to its first N requests, `--fail-always` to every request; otherwise 200.
//!
//! Prints `webhook-receiver listening on ADDR` once it accepts connections.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use hidden_front_webhooks::signature::{DEFAULT_TOLERANCE, Secret, verify};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

struct Receiver {
    secret: Secret,
    out: std::sync::Mutex<std::fs::File>,
    fail_first: u64,
    fail_always: bool,
    requests: AtomicU64,
}

fn usage() -> ! {
    eprintln!(
        "usage: webhook-receiver --port PORT --out FILE --secret whsec_... [--fail-first N] [--fail-always]"
    );
    std::process::exit(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (mut port, mut out, mut secret, mut fail_first, mut fail_always) =
        (None, None, None, 0u64, false);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--port" => port = args.next().and_then(|v| v.parse::<u16>().ok()),
            "--out" => out = args.next().map(PathBuf::from),
            "--secret" => secret = args.next().and_then(|v| Secret::parse(&v).ok()),
            "--fail-first" => {
                fail_first = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--fail-always" => fail_always = true,
            _ => usage(),
        }
    }
    let (Some(port), Some(out), Some(secret)) = (port, out, secret) else {
        usage()
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&out)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", out.display()));
    let receiver = Arc::new(Receiver {
        secret,
        out: std::sync::Mutex::new(file),
        fail_first,
        fail_always,
        requests: AtomicU64::new(0),
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap_or_else(|e| panic!("cannot listen on 127.0.0.1:{port}: {e}"));
    println!(
        "webhook-receiver listening on {}",
        listener.local_addr().expect("bound address")
    );
    let app = axum::Router::new()
        .fallback(axum::routing::post(handle))
        .with_state(receiver);
    axum::serve(listener, app).await.expect("serving");
}

async fn handle(
    State(receiver): State<Arc<Receiver>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> StatusCode {
    let n = receiver.requests.fetch_add(1, Ordering::SeqCst);
    let status = match receiver.fail_always || n < receiver.fail_first {
        true => StatusCode::INTERNAL_SERVER_ERROR,
        false => StatusCode::OK,
    };
    let verified = verify(
        std::slice::from_ref(&receiver.secret),
        &headers,
        &body,
        DEFAULT_TOLERANCE,
    )
    .is_ok();
    let event: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let line = serde_json::json!({
        "id": headers.get("webhook-id").and_then(|v| v.to_str().ok()),
        "event_id": event["id"],
        "type": event["type"],
        "subject": event["subject"],
        "data": event["data"],
        "position": event["hfposition"],
        "verified": verified,
        "content_type": headers.get("content-type").and_then(|v| v.to_str().ok()),
        "status": status.as_u16(),
    });
    let mut text = line.to_string();
    text.push('\n');
    // Written before answering: a 200 the deliverer saw is always in the file.
    let mut file = receiver.out.lock().unwrap_or_else(|p| p.into_inner());
    if file.write_all(text.as_bytes()).is_err() {
        return StatusCode::INTERNAL_SERVER_ERROR;
    }
    status
}
