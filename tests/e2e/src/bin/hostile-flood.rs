//! Hostile connections for the end-to-end tests (hostile_connections.rs): opens `--count`
//! connections to a gateway's public ports from the loopback addresses `127.0.0.<first-peer>`
//! and on (`--peers` of them, round robin), each doing one of three things: sending nothing,
//! sending a request head one byte every 250 ms without ever finishing it, or sending one whole
//! request and then staying idle (the HTTP port only). Then waits, at most `--patience-ms` from
//! its connect, for the server to close each.
//!
//! Prints `opened N refused-at-connect M` once every connection is open (or refused), then one
//! line per kind, `KIND opened N closed N still-open N max-ms MS`, and exits. It runs as its own
//! process so that the connections count against its open files limit, not the test's: a test
//! process and its server cannot hold 25,000 sockets under a 20,000 limit.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinSet;
use tokio::time::{Instant, timeout};

/// Connects begun per millisecond (4,000 a second per process): as fast as a debug build of the
/// server accepts them on a loaded 2-core machine. A faster burst overflows the server's listen
/// backlog, and the kernel then drops the handshake's last ACK: the client thinks such a
/// connection open while the server never saw it (and holds nothing for it), which would count
/// here as a connection the server failed to close.
const CONNECTS_PER_MS: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Silent,
    SlowHead,
    IdleAfterRequest,
}

struct Args {
    grpc: SocketAddr,
    http: SocketAddr,
    count: usize,
    first_peer: u8,
    peers: u8,
    patience: Duration,
}

fn usage() -> ! {
    eprintln!(
        "usage: hostile-flood --grpc ADDR --http ADDR --count N --first-peer K --peers P --patience-ms MS"
    );
    std::process::exit(2)
}

fn args() -> Args {
    let mut it = std::env::args().skip(1);
    let (mut grpc, mut http, mut count, mut first_peer, mut peers, mut patience) =
        (None, None, None, None, None, None);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--grpc" => grpc = value.parse().ok(),
            "--http" => http = value.parse().ok(),
            "--count" => count = value.parse().ok(),
            "--first-peer" => first_peer = value.parse().ok(),
            "--peers" => peers = value.parse().ok().filter(|&p: &u8| p > 0),
            "--patience-ms" => patience = value.parse().ok().map(Duration::from_millis),
            _ => usage(),
        }
    }
    match (grpc, http, count, first_peer, peers, patience) {
        (Some(grpc), Some(http), Some(count), Some(first_peer), Some(peers), Some(patience)) => {
            Args {
                grpc,
                http,
                count,
                first_peer,
                peers,
                patience,
            }
        }
        _ => usage(),
    }
}

async fn connect_from(from: IpAddr, to: SocketAddr) -> Option<TcpStream> {
    let socket = TcpSocket::new_v4().ok()?;
    socket.bind(SocketAddr::new(from, 0)).ok()?;
    socket.connect(to).await.ok()
}

/// Plays `kind` on `stream` (connected at `started`) until the server closes it; how long after
/// the connect that was, or `None` when it was still open `patience` after it.
async fn hostile(
    mut stream: TcpStream,
    started: Instant,
    kind: Kind,
    patience: Duration,
) -> Option<Duration> {
    let mut buf = [0u8; 4096];
    let closed = async {
        match kind {
            Kind::Silent => loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            },
            Kind::SlowHead => {
                let head = b"GET / HTTP/1.1\r\nx-slow: "
                    .iter()
                    .chain(std::iter::repeat(&b'a'));
                for byte in head {
                    if stream.write_all(std::slice::from_ref(byte)).await.is_err() {
                        return;
                    }
                    if let Ok(Ok(0) | Err(_)) =
                        timeout(Duration::from_millis(250), stream.read(&mut buf)).await
                    {
                        return;
                    }
                }
            }
            Kind::IdleAfterRequest => {
                if stream
                    .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
                    .await
                    .is_err()
                {
                    return;
                }
                loop {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                }
            }
        }
    };
    tokio::time::timeout_at(started + patience, closed)
        .await
        .ok()
        .map(|()| started.elapsed())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = args();
    // As many sockets as the hard limit allows.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    // Every connect at once, so the server holds as many as it lets in at the same time; each
    // plays its part as soon as it is connected, and says whether it connected.
    let mut pace = tokio::time::interval(Duration::from_millis(1));
    let (connected_tx, mut connected_rx) = tokio::sync::mpsc::unbounded_channel::<bool>();
    let mut flood = JoinSet::new();
    for n in 0..args.count {
        let kind = match n % 10 {
            0 => Kind::SlowHead,
            1 => Kind::IdleAfterRequest,
            _ => Kind::Silent,
        };
        let to = if kind == Kind::IdleAfterRequest || n % 2 == 0 {
            args.http
        } else {
            args.grpc
        };
        let peer = args
            .first_peer
            .wrapping_add((n % usize::from(args.peers)) as u8);
        let from = IpAddr::V4(Ipv4Addr::new(127, 0, 0, peer));
        let (patience, connected_tx) = (args.patience, connected_tx.clone());
        if n % CONNECTS_PER_MS == 0 {
            pace.tick().await;
        }
        flood.spawn(async move {
            let stream = connect_from(from, to).await;
            let _ = connected_tx.send(stream.is_some());
            let stream = stream?;
            Some((kind, hostile(stream, Instant::now(), kind, patience).await))
        });
    }
    let mut refused_at_connect = 0usize;
    for _ in 0..args.count {
        if !connected_rx.recv().await.unwrap_or(false) {
            refused_at_connect += 1;
        }
    }
    println!(
        "opened {} refused-at-connect {refused_at_connect}",
        args.count - refused_at_connect
    );
    let mut tally: std::collections::BTreeMap<Kind, (usize, usize, usize, u128)> =
        Default::default();
    while let Some(done) = flood.join_next().await {
        let Ok(Some((kind, after))) = done else {
            continue;
        };
        let entry = tally.entry(kind).or_default();
        entry.0 += 1;
        match after {
            Some(after) => {
                entry.1 += 1;
                entry.3 = entry.3.max(after.as_millis());
            }
            None => entry.2 += 1,
        }
    }
    for (kind, (opened, closed, still_open, max_ms)) in tally {
        println!(
            "{kind:?} opened {opened} closed {closed} still-open {still_open} max-ms {max_ms}"
        );
    }
}
