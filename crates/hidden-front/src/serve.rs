//! `hidden-front serve` and `hidden-front migrate`: run any set of services in this process, and
//! bring a database's schema up to date.
//!
//! Every setting comes from a flag or its environment variable (the README's configuration
//! table). Without `DATABASE_URL` the games live in memory, and a loud line says nothing is
//! durable. All services of one process share one gRPC port with health and reflection.

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use hidden_front_proto::v1::session_service_server::SessionServiceServer;
use hidden_front_session::{SessionConfig, SessionService};
use hidden_front_store::GameStore;
use hidden_front_store::memory::MemoryStore;
use hidden_front_store::postgres::PostgresStore;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// A service this binary can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServiceName {
    /// Every service.
    All,
    /// The referee: game state, commands, the event log.
    Session,
}

/// Arguments of `hidden-front serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Services to run, comma-separated.
    #[arg(
        long,
        env = "HF_SERVICES",
        value_delimiter = ',',
        default_value = "all"
    )]
    pub services: Vec<ServiceName>,
    /// Address for the gRPC port (`127.0.0.1:0` picks a free port; the chosen address is printed).
    #[arg(long, env = "HF_LISTEN", default_value = "127.0.0.1:50051")]
    pub listen: SocketAddr,
    /// Postgres URL. Without it games are kept in memory and lost when the process stops.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Apply pending migrations at start (otherwise run `hidden-front migrate` first).
    #[arg(long, env = "HF_MIGRATE_ON_START", default_value_t = true, action = clap::ArgAction::Set)]
    pub migrate_on_start: bool,
    /// Largest gRPC message accepted, in bytes; larger ones are refused with OUT_OF_RANGE.
    #[arg(long, env = "HF_MAX_MESSAGE_BYTES", default_value_t = 64 * 1024)]
    pub max_message_bytes: usize,
    /// Seconds a presence report holds when the gateway gives no lease.
    #[arg(long, env = "HF_PRESENCE_LEASE_SECONDS", default_value_t = 30)]
    pub presence_lease_seconds: u64,
    /// Log format.
    #[arg(long, env = "HF_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Arguments of `hidden-front migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Postgres URL of the database to migrate.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: String,
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("HF_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Runs `hidden-front migrate`.
pub async fn migrate(args: MigrateArgs) -> anyhow::Result<()> {
    init_logging(LogFormat::Text);
    let store = PostgresStore::connect(&args.database_url)
        .await
        .context("connecting to the database")?;
    store.migrate().await.context("applying migrations")?;
    println!("migrations applied");
    Ok(())
}

/// Runs `hidden-front serve` until SIGINT or SIGTERM.
pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    init_logging(args.log_format);
    if args.services.is_empty() {
        bail!("--services needs at least one service");
    }
    let store: Arc<dyn GameStore> = match &args.database_url {
        Some(url) => {
            let store = PostgresStore::connect(url)
                .await
                .context("connecting to the database given by DATABASE_URL")?;
            if args.migrate_on_start {
                store.migrate().await.context("applying migrations")?;
            }
            tracing::info!("games are stored in Postgres");
            Arc::new(store)
        }
        None => {
            eprintln!(
                "WARNING: DATABASE_URL is not set: games are kept IN MEMORY ONLY. Nothing is durable; \
                 every game is lost when this process stops."
            );
            Arc::new(MemoryStore::new())
        }
    };

    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(hidden_front_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .context("building the reflection service")?;

    let run_session = args
        .services
        .iter()
        .any(|s| matches!(s, ServiceName::All | ServiceName::Session));
    let router = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(20)))
        .add_service(health_service)
        .add_service(reflection)
        .add_optional_service(run_session.then(|| {
            let service = SessionService::new(
                store.clone(),
                SessionConfig {
                    default_presence_lease: Duration::from_secs(args.presence_lease_seconds),
                    ..SessionConfig::default()
                },
            );
            SessionServiceServer::new(service)
                .max_decoding_message_size(args.max_message_bytes)
                .max_encoding_message_size(4 * 1024 * 1024)
        }));
    if run_session {
        health_reporter
            .set_serving::<SessionServiceServer<SessionService>>()
            .await;
    }

    let listener = TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let local = listener.local_addr()?;
    // Tests and scripts read this line to find the port.
    println!("hidden-front listening on {local}");
    tracing::info!(address = %local, services = ?args.services, "serving");
    // Replies are small and latency-bound: never let Nagle's algorithm hold one back.
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    router
        .serve_with_incoming_shutdown(incoming, shutdown_signal())
        .await
        .context("serving gRPC")?;
    tracing::info!("stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutdown signal received");
}
