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
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{AssertSqlSafe, Connection, Executor, PgConnection};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use uuid::Uuid;

/// The Postgres used when `DATABASE_URL` is not set.
const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A database of one's own, created on `DATABASE_URL`'s server (dropped by [`TestDb::drop_database`]).
pub struct TestDb {
    admin: PgConnectOptions,
    name: String,
    /// Connect options of the database.
    pub options: PgConnectOptions,
}

impl TestDb {
    /// Creates and migrates an empty database. Panics, saying how to fix it, without Postgres.
    pub async fn create() -> TestDb {
        let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_DATABASE_URL.into());
        let admin = PgConnectOptions::from_str(&url)
            .unwrap_or_else(|e| panic!("DATABASE_URL is not a Postgres URL: {e}"));
        let mut conn = tokio::time::timeout(Duration::from_secs(15), PgConnection::connect_with(&admin))
            .await
            .unwrap_or_else(|_| panic!("no answer from Postgres at {url}: set DATABASE_URL"))
            .unwrap_or_else(|e| panic!("cannot reach Postgres at {url} ({e}): set DATABASE_URL to a role that may create databases"));
        let name = format!("hf_mm_test_{}", Uuid::new_v4().simple());
        conn.execute(AssertSqlSafe(format!(r#"CREATE DATABASE "{name}""#)))
            .await
            .unwrap_or_else(|e| panic!("cannot create test database {name}: {e}"));
        conn.execute(AssertSqlSafe(format!(
            r#"ALTER DATABASE "{name}" SET synchronous_commit = off"#
        )))
        .await
        .unwrap();
        let _ = conn.close().await;
        let db = TestDb {
            options: admin.clone().database(&name),
            admin,
            name,
        };
        let pool = db.pool(2).await;
        hidden_front_store::postgres::MIGRATOR
            .run(&pool)
            .await
            .expect("migrations apply");
        pool.close().await;
        db
    }

    /// A pool on the database (a stand-in for one process).
    pub async fn pool(&self, max: u32) -> PgPool {
        PgPoolOptions::new()
            .max_connections(max)
            .acquire_timeout(Duration::from_secs(60))
            .connect_with(self.options.clone())
            .await
            .expect("connect to the test database")
    }

    /// Drops the database, disconnecting whatever is still connected.
    pub async fn drop_database(self) {
        let mut conn = PgConnection::connect_with(&self.admin).await.unwrap();
        conn.execute(AssertSqlSafe(format!(
            r#"DROP DATABASE IF EXISTS "{}" WITH (FORCE)"#,
            self.name
        )))
        .await
        .unwrap();
        let _ = conn.close().await;
    }
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

/// A channel to a loopback address.
pub fn channel(addr: std::net::SocketAddr) -> Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_lazy()
}

/// A session service on Postgres (`db`), served on loopback; its client.
pub async fn session_on(db: &TestDb) -> SessionClient {
    session_with_clock(db, WallClock::system()).await.0
}

/// A session service on Postgres (`db`) judging deadlines by `clock`, served on loopback; its
/// client and its store (to read the timers it armed).
pub async fn session_with_clock(db: &TestDb, clock: WallClock) -> (SessionClient, PostgresStore) {
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
    db: &TestDb,
    session: SessionClient,
    config: MatchmakingConfig,
) -> Process {
    let process = matchmaking_idle(db, session, config).await;
    process.service.spawn_background(process.stop.child_token());
    process
}

/// Starts a matchmaking process without its loops (the test runs rounds by hand).
pub async fn matchmaking_idle(
    db: &TestDb,
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
