//! Scraping the metrics listener (`GET /metrics`, Prometheus text) of a running server, and
//! reading series out of the exposition, for tests that compare counters before and after.

use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The name of the counter of failed store operations: a request that reaches Postgres with
/// something Postgres refuses shows up here.
pub const STORE_ERRORS: &str = "hf_store_errors_total";

/// The body of `GET /metrics`, through a plain HTTP/1.1 exchange on a TCP socket.
pub async fn scrape(addr: SocketAddr) -> String {
    let mut socket = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to the metrics listener {addr}: {e}"));
    socket
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .expect("writing the request");
    let mut response = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        socket.read_to_end(&mut response),
    )
    .await
    .expect("the metrics answer within 10 s")
    .expect("reading the answer");
    let response = String::from_utf8(response).expect("a UTF-8 answer");
    let (head, body) = response
        .split_once("\r\n\r\n")
        .expect("an HTTP answer with a body");
    assert!(head.starts_with("HTTP/1.1 200"), "answer: {head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain"),
        "answer: {head}"
    );
    body.to_string()
}

/// One sample: metric name, labels, value.
pub type Sample = (String, Vec<(String, String)>, f64);

/// The samples of a Prometheus text exposition (comments skipped).
pub fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("`series value`");
            let value: f64 = value
                .parse()
                .unwrap_or_else(|_| panic!("value of {line:?}"));
            let (name, labels) = match series.split_once('{') {
                None => (series.to_string(), Vec::new()),
                Some((name, rest)) => {
                    let labels = rest
                        .strip_suffix('}')
                        .expect("labels end with }")
                        .split(',')
                        .filter(|pair| !pair.is_empty())
                        .map(|pair| {
                            let (key, value) = pair.split_once('=').expect("key=value");
                            (key.to_string(), value.trim_matches('"').to_string())
                        })
                        .collect();
                    (name.to_string(), labels)
                }
            };
            (name, labels, value)
        })
        .collect()
}

/// The value of the series `name` with (at least) `labels`; 0 when it is absent.
pub fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    samples(text)
        .into_iter()
        .filter(|(n, l, _)| {
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
        })
        .map(|(_, _, v)| v)
        .sum()
}
