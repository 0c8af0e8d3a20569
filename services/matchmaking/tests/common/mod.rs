//! Shared test helpers: a fresh Postgres database per test, a real session service on a
//! loopback socket, and matchmaking services over them.

#![allow(dead_code)]

use hidden_front_matchmaking::store::MatchStore;
use hidden_front_matchmaking::store::postgres::PostgresMatchStore;
use hidden_front_matchmaking::{MatchmakingConfig, MatchmakingService, SessionClient};
use hidden_front_proto::v1::matchmaking_service_client::MatchmakingServiceClient;
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use hidden_front_proto::v1::session_service_server::SessionServiceServer;
use hidden_front_session::{SessionConfig, SessionService};
use hidden_front_store::postgres::PostgresStore;
use hidden_front_time::WallClock;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

pub use hidden_front_test_database::TestDatabase;

/// A fresh database with every migration applied (matchmaking's tables and the session's),
/// dropped with the value. Several pools on it stand for several processes, which
/// `#[sqlx::test]`'s one pool cannot.
pub async fn migrated_database() -> TestDatabase {
    TestDatabase::migrated(&hidden_front_store::postgres::MIGRATOR).await
}

/// Serves `service` on a loopback port; returns its address.
pub async fn serve_session(service: SessionService) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(SessionServiceServer::new(service))
            .serve_with_incoming(
                tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            ),
    );
    addr
}

/// Serves `service` on a loopback port, holding each `CreateGame` call until `gate` lets it
/// through (a `Barrier` of N: until N of them are in flight together); returns its address.
pub async fn serve_session_gated(
    service: SessionService,
    gate: Arc<tokio::sync::Barrier>,
) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(GatedCreations {
                inner: SessionServiceServer::new(service),
                gate,
            })
            .serve_with_incoming(
                tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            ),
    );
    addr
}

/// The session service behind [`serve_session_gated`].
#[derive(Clone)]
struct GatedCreations {
    inner: SessionServiceServer<SessionService>,
    gate: Arc<tokio::sync::Barrier>,
}

impl tonic::server::NamedService for GatedCreations {
    const NAME: &'static str =
        <SessionServiceServer<SessionService> as tonic::server::NamedService>::NAME;
}

type HttpRequest = tonic::codegen::http::Request<tonic::body::Body>;

impl tonic::codegen::Service<HttpRequest> for GatedCreations {
    type Response = tonic::codegen::http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = tonic::codegen::BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(
        &mut self,
        cx: &mut tonic::codegen::Context<'_>,
    ) -> tonic::codegen::Poll<Result<(), Self::Error>> {
        tonic::codegen::Service::<HttpRequest>::poll_ready(&mut self.inner, cx)
    }

    fn call(&mut self, request: HttpRequest) -> Self::Future {
        let gated = request.uri().path().ends_with("/CreateGame");
        let gate = self.gate.clone();
        let answer = tonic::codegen::Service::call(&mut self.inner, request);
        Box::pin(async move {
            if gated {
                gate.wait().await;
            }
            answer.await
        })
    }
}

/// A channel to a loopback address.
pub fn channel(addr: std::net::SocketAddr) -> Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_lazy()
}

/// A session service on Postgres (`db`), served on loopback; its client.
pub async fn session_on(db: &TestDatabase) -> SessionClient {
    session_with_clock(db, WallClock::system()).await.0
}

/// A session service on Postgres (`db`) judging deadlines by `clock`, served on loopback; its
/// client and its store (to read the timers it armed).
pub async fn session_with_clock(
    db: &TestDatabase,
    clock: WallClock,
) -> (SessionClient, PostgresStore) {
    let store = PostgresStore::from_pool(db.pool(4).await);
    let config = SessionConfig {
        clock,
        ..SessionConfig::default()
    };
    let service = SessionService::new(Arc::new(store.clone()), config);
    let addr = serve_session(service).await;
    (SessionServiceClient::new(channel(addr).into()), store)
}

/// Settings with short timings for tests.
pub fn fast_config() -> MatchmakingConfig {
    MatchmakingConfig {
        pairing_interval: Duration::from_millis(50),
        feed_interval: Duration::from_millis(50),
        computer_scan_interval: Duration::from_millis(200),
        computer_lease: Duration::from_secs(3),
        pending_match_retry: Duration::from_millis(500),
        ..MatchmakingConfig::default()
    }
}

/// One matchmaking process: a service on its own pool of `db`, served on loopback, with its
/// background loops running (until `stop` is cancelled or the process dropped).
pub struct Process {
    /// The service itself.
    pub service: MatchmakingService,
    /// A gRPC client of it.
    pub client: MatchmakingServiceClient<Channel>,
    /// Stops the loops; cancelled when the process is dropped.
    pub stop: CancellationToken,
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Starts a matchmaking process with its background loops.
pub async fn matchmaking(
    db: &TestDatabase,
    session: SessionClient,
    config: MatchmakingConfig,
) -> Process {
    let process = matchmaking_idle(db, session, config).await;
    process.service.spawn_background(process.stop.child_token());
    process
}

/// Starts a matchmaking process without its loops (the test runs rounds by hand).
pub async fn matchmaking_idle(
    db: &TestDatabase,
    session: SessionClient,
    config: MatchmakingConfig,
) -> Process {
    let store: Arc<dyn MatchStore> = Arc::new(PostgresMatchStore::from_pool(db.pool(4).await));
    let service = MatchmakingService::new(store, session, config);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service.server())
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    Process {
        client: MatchmakingServiceClient::new(channel(addr)),
        service,
        stop: CancellationToken::new(),
    }
}
