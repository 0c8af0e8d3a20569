//! What the delivery tests share: an in-test HTTP receiver that verifies every request and can
//! be told to fail, games whose creation writes facts, and a configuration in milliseconds.

#![allow(dead_code)]

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use hidden_front_lifecycle::cloudevents::CloudEvent;
use hidden_front_lifecycle::{FactBody, NewFact};
use hidden_front_store::GameStore;
use hidden_front_webhooks::WebhooksConfig;
use hidden_front_webhooks::signature::{DEFAULT_TOLERANCE, Secret, verify};
use parking_lot::Mutex;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The secret of every test endpoint.
pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// How long a test waits for deliveries.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// One acknowledged request.
#[derive(Debug, Clone)]
pub struct Received {
    /// `webhook-id`.
    pub id: String,
    /// The CloudEvent's `id`.
    pub event_id: String,
    /// `type`.
    pub event_type: String,
    /// `hfposition`.
    pub position: u64,
    /// The signature verified.
    pub verified: bool,
    /// `Content-Type` was the CloudEvents one.
    pub cloudevents_content_type: bool,
}

/// How the receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 200.
    Ok,
    /// 500 for the next N requests, then 200.
    FailFirst(u32),
    /// Always 500.
    Fail,
}

#[derive(Default)]
struct Inner {
    received: Vec<Received>,
    attempts: u32,
    answer: Option<Answer>,
}

/// An HTTP receiver on loopback (HTTPS with [`Receiver::start_tls`]).
#[derive(Clone)]
pub struct Receiver {
    pub addr: SocketAddr,
    scheme: &'static str,
    inner: Arc<Mutex<Inner>>,
    changed: Arc<Notify>,
}

/// A throwaway CA of one test, its certificate written to a PEM file (removed on drop).
pub struct TestCa {
    /// The PEM file (what an endpoint's `ca_file` names).
    pub pem_file: std::path::PathBuf,
}

impl Drop for TestCa {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.pem_file);
    }
}

/// A CA made for this test and a certificate it issued for `localhost` and `127.0.0.1`: the
/// server's TLS settings.
fn throwaway_tls() -> (TestCa, rustls::ServerConfig) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "Hidden Front test CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let params =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    let pem_file = std::env::temp_dir().join(format!("hf-test-ca-{}.pem", uuid::Uuid::new_v4()));
    std::fs::write(&pem_file, ca_cert.pem()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    (TestCa { pem_file }, config)
}

impl Receiver {
    /// Starts one answering `answer`.
    pub async fn start(answer: Answer) -> Receiver {
        let inner = Arc::new(Mutex::new(Inner {
            answer: Some(answer),
            ..Inner::default()
        }));
        let changed = Arc::new(Notify::new());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let receiver = Receiver {
            addr,
            scheme: "http",
            inner,
            changed,
        };
        let app = receiver.app();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        receiver
    }

    /// Starts one answering `answer` over TLS, with a certificate of a throwaway CA; returns the
    /// CA too (its PEM file is what an endpoint's `ca_file` would name).
    pub async fn start_tls(answer: Answer) -> (Receiver, TestCa) {
        let (ca, tls) = throwaway_tls();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let receiver = Receiver {
            addr: listener.local_addr().unwrap(),
            scheme: "https",
            inner: Arc::new(Mutex::new(Inner {
                answer: Some(answer),
                ..Inner::default()
            })),
            changed: Arc::new(Notify::new()),
        };
        let app = receiver.app();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (acceptor, app) = (acceptor.clone(), app.clone());
                tokio::spawn(async move {
                    // A client that does not trust the certificate ends its handshake here.
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(
                            hyper_util::rt::TokioIo::new(tls),
                            hyper_util::service::TowerToHyperService::new(app),
                        )
                        .await;
                });
            }
        });
        (receiver, ca)
    }

    fn app(&self) -> axum::Router {
        axum::Router::new()
            .route("/hooks", axum::routing::post(handle))
            .with_state(self.clone())
    }

    /// The URL deliveries go to.
    pub fn url(&self) -> String {
        format!("{}://{}/hooks", self.scheme, self.addr)
    }

    /// Answers `answer` from now on.
    pub fn answer(&self, answer: Answer) {
        self.inner.lock().answer = Some(answer);
    }

    /// Every acknowledged request so far.
    pub fn received(&self) -> Vec<Received> {
        self.inner.lock().received.clone()
    }

    /// Every request so far, acknowledged or not.
    pub fn attempts(&self) -> u32 {
        self.inner.lock().attempts
    }

    /// Waits until `n` requests were acknowledged; panics at the deadline.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        self.wait_until(|r| r.len() >= n, &format!("{n} deliveries"))
            .await
    }

    /// Waits until `done` holds of the acknowledged requests, or `attempts` ... panics at the
    /// deadline.
    pub async fn wait_until(
        &self,
        done: impl Fn(&[Received]) -> bool,
        what: &str,
    ) -> Vec<Received> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let changed = self.changed.notified();
            let received = self.received();
            if done(&received) {
                return received;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "waited for {what}; got {} deliveries",
                received.len()
            );
            let _ = tokio::time::timeout(left, changed).await;
        }
    }
}

async fn handle(
    State(receiver): State<Receiver>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> StatusCode {
    let secret = Secret::parse(SECRET).unwrap();
    let verified = verify(&[secret], &headers, &body, DEFAULT_TOLERANCE).is_ok();
    let status = {
        let mut inner = receiver.inner.lock();
        inner.attempts += 1;
        let (status, next) = match inner.answer.unwrap_or(Answer::Ok) {
            Answer::Ok => (StatusCode::OK, Answer::Ok),
            Answer::FailFirst(0) => (StatusCode::OK, Answer::Ok),
            Answer::FailFirst(n) => (StatusCode::INTERNAL_SERVER_ERROR, Answer::FailFirst(n - 1)),
            Answer::Fail => (StatusCode::INTERNAL_SERVER_ERROR, Answer::Fail),
        };
        inner.answer = Some(next);
        if status == StatusCode::OK {
            let event: CloudEvent = serde_json::from_slice(&body).expect("a CloudEvent");
            inner.received.push(Received {
                id: headers
                    .get("webhook-id")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned(),
                event_id: event.id,
                event_type: event.event_type,
                position: event.hfposition,
                verified,
                cloudevents_content_type: headers
                    .get("content-type")
                    .is_some_and(|v| v == "application/cloudevents+json"),
            });
        }
        status
    };
    receiver.changed.notify_waiters();
    status
}

/// Creates a game in `store` whose creation writes two facts (created, seats filled).
pub async fn write_game(store: &dyn GameStore, seed: u64) {
    write_game_under(store, seed, None).await;
}

/// [`write_game`], the game's id the store's for `creation_key` when given (a sharded store
/// places the game on the shard the key hashes to); returns the game's id.
pub async fn write_game_under(
    store: &dyn GameStore,
    seed: u64,
    creation_key: Option<&str>,
) -> uuid::Uuid {
    let (mut meta, game, events) = hidden_front_store_conformance::new_game(seed, "alice", "bob");
    if let Some(key) = creation_key {
        meta.game_id = store.new_game_id(key);
    }
    let facts = [
        NewFact::new(
            meta.game_id,
            FactBody::GameCreated {
                rules: meta.rules.clone(),
                time_control: "online".into(),
                south_player: "alice".into(),
                north_player: "bob".into(),
            },
        ),
        NewFact::new(
            meta.game_id,
            FactBody::SeatsFilled {
                south_player: "alice".into(),
                north_player: "bob".into(),
            },
        ),
    ];
    store
        .create_armed(
            &format!("create-{}", meta.game_id),
            &meta,
            &events,
            &game,
            &[],
            &facts,
        )
        .await
        .expect("create a game with facts");
    meta.game_id
}

/// A configuration with one endpoint at `url`, millisecond timings, and `extra` endpoint fields
/// (JSON, e.g. `, "types": [...]`).
pub fn config(url: &str, horizon_ms: u64, extra: &str) -> WebhooksConfig {
    WebhooksConfig::parse(
        &format!(
            r#"{{"source": "/hiddenfront/test",
                "delivery": {{"timeout_ms": 1000, "initial_backoff_ms": 10, "max_backoff_ms": 50,
                              "horizon_ms": {horizon_ms}, "lease_ms": 3000, "safety_poll_ms": 200}},
                "endpoints": [{{"name": "test", "url": "{url}", "secrets": ["{SECRET}"]{extra}}}]}}"#
        ),
        |_| None,
    )
    .expect("a valid test configuration")
}

/// Every fact of `store`'s outbox.
pub async fn all_facts(store: &dyn GameStore) -> Vec<hidden_front_lifecycle::Fact> {
    store.facts_after(0, 10_000).await.unwrap()
}
