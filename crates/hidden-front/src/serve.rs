//! `hidden-front serve` and `hidden-front migrate` at the binary's edge: logging, signals, the
//! lines that tell scripts where the ports are. What runs is [`crate::app`]; what it is told is
//! [`crate::config`].
//!
//! Every setting comes from a flag or its environment variable (the README's configuration
//! table). Without `DATABASE_URL` the games live in memory, and a loud line says nothing is
//! durable. The services of one process share one gRPC port (two when the gateway and the session
//! run together: the session's API then goes to an internal port), each port with health and
//! reflection that know only the services of that port. When the gateway runs it also opens an
//! HTTP listener (`--http-listen`) for the WebSocket API and the browser client.

use crate::app::Application;
use crate::config::{LogFormat, MigrateArgs, ServeArgs};
use crate::database;
use anyhow::Context as _;
use hidden_front_gateway::ws::WS_PATH;
use std::time::Duration;

/// Installs logging (and span export when `OTEL_EXPORTER_OTLP_ENDPOINT` is set); the guard
/// flushes the spans not yet exported when dropped.
fn init_logging(format: LogFormat) -> hidden_front_telemetry::Guard {
    let format = match format {
        LogFormat::Text => hidden_front_telemetry::LogFormat::Text,
        LogFormat::Json => hidden_front_telemetry::LogFormat::Json,
    };
    hidden_front_telemetry::init(format, "hidden-front")
}

/// Runs `hidden-front migrate`: says which migrations it applied, or that the schema was up to
/// date already.
pub async fn migrate(args: MigrateArgs) -> anyhow::Result<()> {
    let _telemetry = init_logging(LogFormat::Text);
    let (store, target) = database::connect(&args.database_url).await?;
    let applied = database::migrate(&store, &target).await?;
    if !applied.is_empty() {
        println!("applied {} migration(s) to {target}:", applied.len());
        for (version, description) in &applied {
            println!("  {version} {description}");
        }
    }
    println!("the schema of {target} is up to date");
    if args.snapshots_at_head {
        let written = store.snapshot_lagging_games().await?;
        println!("wrote {written} game snapshot(s) at their log's head; no game's snapshot lags");
    }
    for (index, url) in args.database_shards.iter().enumerate() {
        let shard = index + 1;
        let (store, target) = database::connect(url)
            .await
            .with_context(|| format!("shard {shard}"))?;
        let applied = database::migrate(&store, &target)
            .await
            .with_context(|| format!("shard {shard}"))?;
        if !applied.is_empty() {
            println!(
                "applied {} migration(s) to shard {shard}, {target}:",
                applied.len()
            );
        }
        println!("the schema of shard {shard}, {target}, is up to date");
        if args.snapshots_at_head {
            let written = store.snapshot_lagging_games().await?;
            println!("shard {shard}: wrote {written} game snapshot(s) at their log's head");
        }
    }
    Ok(())
}

/// Runs `hidden-front serve` until SIGINT or SIGTERM: the [`Application`] with logging, the
/// listening lines scripts and tests read, and a grace period after which the process exits
/// whatever is still open (an internal stream, a client that never reads).
pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let telemetry = init_logging(args.log_format);
    let services = args.services.clone();
    let grace = Duration::from_secs(args.shutdown_grace_seconds);
    let web_client = args.web_client;
    let app = Application::build(args).await?;
    let ports = app.ports();
    // Tests and scripts read these lines to find the ports; the metrics and HTTP ones come
    // first, so whoever stops reading at the gRPC line has seen them all.
    println!("hidden-front metrics listening on {}", ports.metrics);
    if let Some(addr) = ports.http {
        println!("hidden-front http listening on {addr}");
        tracing::info!(address = %addr, "serving the WebSocket API on {}", WS_PATH);
        if web_client {
            let bundle = hidden_front_web_assets::Bundle::embedded();
            tracing::info!(
                address = %addr,
                files = bundle.paths().count(),
                bytes = bundle.total_bytes(),
                inputs_sha256 = bundle.inputs_sha256().unwrap_or("none"),
                "serving the browser client at /"
            );
        }
    }
    if let Some(addr) = ports.internal {
        println!("hidden-front internal listening on {addr}");
        tracing::info!(address = %addr, "serving the session API on the internal port only");
    }
    println!("hidden-front listening on {}", ports.grpc);
    tracing::info!(address = %ports.grpc, ?services, "serving");
    let shutdown = async move {
        shutdown_signal().await;
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            tracing::warn!(
                grace_seconds = grace.as_secs(),
                "grace period over; exiting"
            );
            std::process::exit(0);
        });
    };
    app.run_until_stopped(shutdown).await?;
    tracing::info!("stopped");
    // Flushing waits for the exporter, whose connection runs on this runtime: not on a worker.
    let _ = tokio::task::spawn_blocking(move || drop(telemetry)).await;
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
