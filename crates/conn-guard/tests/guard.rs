//! The guard on real sockets: axum (HTTP/1, a WebSocket) and tonic (HTTP/2) served on a
//! `GuardedListener`, with short limits, against raw TCP clients that behave badly.

use axum::Router;
use axum::body::Body;
use axum::extract::ws::{Message, WebSocketUpgrade};
use axum::routing::get;
use futures_util::{SinkExt, StreamExt};
use hidden_front_conn_guard::{ConnectionInfo, ConnectionLimits, GuardedListener, InFlightLayer};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, timeout};

/// Longest any test waits for something that should happen well before it.
const PATIENCE: Duration = Duration::from_secs(20);

fn limits(handshake_ms: u64, idle_ms: u64, max: usize, per_peer: usize) -> ConnectionLimits {
    ConnectionLimits {
        handshake: Duration::from_millis(handshake_ms),
        idle: Duration::from_millis(idle_ms),
        max_connections: max,
        max_per_peer: per_peer,
    }
}

/// An HTTP/1 server: `/` answers "ok", `/slow` streams ten chunks 100 ms apart, `/ws` echoes.
async fn http_server(limits: ConnectionLimits) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .route(
            "/slow",
            get(|| async {
                let chunks = futures_util::stream::unfold(0, |n| async move {
                    if n == 10 {
                        return None;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Some((Ok::<_, std::io::Error>(format!("{n}")), n + 1))
                });
                Body::from_stream(chunks)
            }),
        )
        .route(
            "/ws",
            get(|upgrade: WebSocketUpgrade| async move {
                upgrade.on_upgrade(|mut socket| async move {
                    while let Some(Ok(message)) = socket.recv().await {
                        if let Message::Text(_) = message
                            && socket.send(message).await.is_err()
                        {
                            break;
                        }
                    }
                })
            }),
        )
        .layer(InFlightLayer);
    let listener = GuardedListener::new(listener, "http", limits);
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<ConnectionInfo>(),
        )
        .await
    });
    addr
}

/// Reads until the server closes the connection (EOF or an error); how long that took.
async fn closed_after(stream: &mut TcpStream) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    timeout(PATIENCE, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            }
        }
    })
    .await
    .expect("the server never closed the connection");
    started.elapsed()
}

/// Sends a GET on `stream` (kept alive) and reads the whole answer; its body.
async fn get_on(stream: &mut TcpStream, path: &str) -> String {
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    timeout(PATIENCE, async {
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(
                n > 0,
                "closed during the answer: {:?}",
                String::from_utf8_lossy(&answer)
            );
            answer.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&answer);
            // Fixed length ("ok") or chunked (ends with the last chunk).
            if text.ends_with("\r\n\r\nok") || text.ends_with("0\r\n\r\n") {
                return;
            }
        }
    })
    .await
    .expect("no whole answer");
    let text = String::from_utf8(answer).unwrap();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    text
}

#[tokio::test]
async fn silent_connections_are_closed_at_the_handshake_time() {
    let addr = http_server(limits(300, 10_000, 1_000, 0)).await;
    let mut silent = Vec::new();
    for _ in 0..50 {
        silent.push(TcpStream::connect(addr).await.unwrap());
    }
    let started = Instant::now();
    for stream in &mut silent {
        closed_after(stream).await;
    }
    // None was closed before its handshake time.
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
    // A client that sends its head in time is answered.
    let mut good = TcpStream::connect(addr).await.unwrap();
    get_on(&mut good, "/").await;
}

#[tokio::test]
async fn a_head_sent_one_byte_at_a_time_is_cut_at_the_handshake_time() {
    let addr = http_server(limits(400, 10_000, 1_000, 0)).await;
    let mut slow = TcpStream::connect(addr).await.unwrap();
    let started = Instant::now();
    let head = b"GET / HTTP/1.1\r\nx-padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let mut cut = false;
    for byte in head {
        if slow.write_all(std::slice::from_ref(byte)).await.is_err() {
            cut = true;
            break;
        }
        // The server's close shows on the next read, which waits at most 100 ms here.
        let mut buf = [0u8; 64];
        if let Ok(Ok(0) | Err(_)) = timeout(Duration::from_millis(100), slow.read(&mut buf)).await {
            cut = true;
            break;
        }
    }
    assert!(
        cut,
        "a head trickled for {:?} was never cut",
        started.elapsed()
    );
    assert!(
        started.elapsed() >= Duration::from_millis(350),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_long_answer_is_not_idle_and_an_idle_keep_alive_closes() {
    let addr = http_server(limits(5_000, 400, 1_000, 0)).await;
    let mut client = TcpStream::connect(addr).await.unwrap();
    // The answer takes about 1 s, well past the idle time, and arrives whole.
    let body = get_on(&mut client, "/slow").await;
    for n in 0..10 {
        assert!(
            body.contains(&format!("\r\n{n}\r\n")),
            "chunk {n} missing: {body}"
        );
    }
    // Then, with nothing in flight, the connection closes after the idle time.
    let idle = closed_after(&mut client).await;
    assert!(
        idle >= Duration::from_millis(300),
        "closed {idle:?} after the answer"
    );
}

#[tokio::test]
async fn a_websocket_outlives_the_idle_time() {
    let addr = http_server(limits(5_000, 300, 1_000, 0)).await;
    let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .unwrap();
    // Silent for several idle times: an upgraded connection is in use until it closes.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    socket
        .send(tokio_tungstenite::tungstenite::Message::text("still here"))
        .await
        .unwrap();
    let echo = timeout(PATIENCE, socket.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(echo.into_text().unwrap().as_str(), "still here");
}

#[tokio::test]
async fn connections_over_the_port_cap_are_closed_at_once() {
    let addr = http_server(limits(5_000, 10_000, 3, 0)).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        get_on(&mut stream, "/").await;
        held.push(stream);
    }
    let mut over = TcpStream::connect(addr).await.unwrap();
    let waited = closed_after(&mut over).await;
    assert!(
        waited < Duration::from_millis(4_000),
        "{waited:?}: closed by the handshake time, not the cap"
    );
    // The three held connections still serve.
    for stream in &mut held {
        get_on(stream, "/").await;
    }
    // One gone, one more fits.
    drop(held.pop());
    let mut next = timeout(PATIENCE, async {
        loop {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream
                .write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
                .await
                .unwrap();
            let mut buf = [0u8; 256];
            match stream.read(&mut buf).await {
                Ok(n) if n > 0 => return stream,
                // The drop's close not yet counted: asked again.
                _ => tokio::task::yield_now().await,
            }
        }
    })
    .await
    .expect("a freed place was never given to a new connection");
    get_on(&mut next, "/").await;
}

#[tokio::test]
async fn connections_over_the_peer_cap_are_closed_at_once() {
    let addr = http_server(limits(5_000, 10_000, 100, 2)).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        get_on(&mut stream, "/").await;
        held.push(stream);
    }
    let mut third = TcpStream::connect(addr).await.unwrap();
    let waited = closed_after(&mut third).await;
    assert!(waited < Duration::from_millis(4_000), "{waited:?}");
}

/// An HTTP/2 server (tonic, the health service) on a guarded listener.
async fn grpc_server(limits: ConnectionLimits) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (_reporter, health) = tonic_health::server::health_reporter();
    let incoming = GuardedListener::new(listener, "grpc", limits).into_incoming();
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .layer(InFlightLayer)
            .add_service(health)
            .serve_with_incoming(incoming)
            .await
    });
    addr
}

#[tokio::test]
async fn http2_a_stream_keeps_its_connection_and_an_empty_one_closes_when_idle() {
    use tonic_health::pb::health_client::HealthClient;
    let addr = grpc_server(limits(5_000, 400, 100, 0)).await;
    // A stream open for several idle times keeps its connection: no error, no end.
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut watch = HealthClient::new(channel)
        .watch(tonic_health::pb::HealthCheckRequest::default())
        .await
        .unwrap()
        .into_inner();
    let first = timeout(PATIENCE, watch.message()).await.unwrap().unwrap();
    assert!(first.is_some());
    let quiet = timeout(Duration::from_millis(1_500), watch.message()).await;
    assert!(
        quiet.is_err(),
        "the stream ended or failed while in use: {quiet:?}"
    );
    // A connection that completes the HTTP/2 handshake and opens no stream closes after the
    // idle time, not before.
    let mut bare = TcpStream::connect(addr).await.unwrap();
    bare.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    let idle = closed_after(&mut bare).await;
    assert!(idle >= Duration::from_millis(300), "{idle:?}");
    // The preface alone, without its SETTINGS frame, is cut at the handshake time.
    let addr = grpc_server(limits(300, 10_000, 100, 0)).await;
    let mut half = TcpStream::connect(addr).await.unwrap();
    half.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    let waited = closed_after(&mut half).await;
    assert!(waited >= Duration::from_millis(250), "{waited:?}");
}
