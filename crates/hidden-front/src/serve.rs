//! `hidden-front serve` and `hidden-front migrate`: run any set of services in this process, and
//! bring a database's schema up to date.
//!
//! Every setting comes from a flag or its environment variable (the README's configuration
//! table). Without `DATABASE_URL` the games live in memory, and a loud line says nothing is
//! durable. The services of one process share one gRPC port (two when the gateway and the session
//! run together: the session's API then goes to an internal port), each port with health and
//! reflection that know only the services of that port. When the gateway runs it also opens an
//! HTTP listener (`--http-listen`) for the WebSocket API.

use crate::database;
use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use hidden_front_clock::{Clock, ClockConfig, ClockService, SessionTarget};
use hidden_front_gateway::auth::{AuthConfig, Authenticator, PublicKeyAlgorithm};
use hidden_front_gateway::ws::{self, WsConfig};
use hidden_front_gateway::{Gateway, GatewayConfig, PlayerApi};
use hidden_front_matchmaking::store::MatchStore;
use hidden_front_matchmaking::store::memory::MemoryMatchStore;
use hidden_front_matchmaking::store::postgres::PostgresMatchStore;
use hidden_front_matchmaking::{MatchmakingConfig, MatchmakingService};
use hidden_front_proto::v1::clock_service_server::{
    ClockServiceServer, SERVICE_NAME as CLOCK_SERVICE,
};
use hidden_front_proto::v1::matchmaking_service_client::MatchmakingServiceClient;
use hidden_front_proto::v1::matchmaking_service_server::SERVICE_NAME as MATCHMAKING_SERVICE;
use hidden_front_proto::v1::player_service_server::{
    PlayerServiceServer, SERVICE_NAME as PLAYER_SERVICE,
};
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use hidden_front_proto::v1::session_service_server::{
    SERVICE_NAME as SESSION_SERVICE, SessionServiceServer,
};
use hidden_front_session::{SessionConfig, SessionService};
use hidden_front_store::memory::MemoryStore;
use hidden_front_store::postgres::PostgresStore;
use hidden_front_store::{GameStore, TimerStore};
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
    /// The public door: authentication, per-player filtered streams, presence.
    Gateway,
    /// Durable timers: fires deployment, move and reconnect deadlines back into the session.
    Clock,
    /// Pairing: queues, ratings, invites, games against the computer.
    Matchmaking,
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
    /// Address of the internal gRPC port, used when the session and the gateway run in one
    /// process: the session's API (full information, no player authentication) is then never
    /// served on the public `--listen` port. A process without the gateway serves the session on
    /// `--listen`.
    #[arg(long, env = "HF_INTERNAL_LISTEN", default_value = "127.0.0.1:50052")]
    pub internal_listen: SocketAddr,
    /// Postgres URL. Without it games are kept in memory and lost when the process stops.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Apply pending migrations at start (otherwise run `hidden-front migrate` first).
    #[arg(long, env = "HF_MIGRATE_ON_START", default_value_t = true, action = clap::ArgAction::Set)]
    pub migrate_on_start: bool,
    /// Largest gRPC message accepted, in bytes; larger ones are refused with OUT_OF_RANGE.
    #[arg(long, env = "HF_MAX_MESSAGE_BYTES", default_value_t = 64 * 1024)]
    pub max_message_bytes: usize,
    /// Seconds a presence report holds: the lease this process's gateway gives its reports (it
    /// renews them every third of it; at least 3 s), and the session's default for a report that
    /// gives none. A player behind a gateway that dies counts as away once the lease lapses.
    #[arg(long, env = "HF_PRESENCE_LEASE_SECONDS", default_value_t = 30)]
    pub presence_lease_seconds: u64,
    /// Log format.
    #[arg(long, env = "HF_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Seconds to finish in-flight work after SIGTERM/SIGINT before exiting regardless.
    #[arg(long, env = "HF_SHUTDOWN_GRACE_SECONDS", default_value_t = 10)]
    pub shutdown_grace_seconds: u64,
    /// Where the gateway finds the session service (default: this process's own port).
    #[arg(long, env = "HF_SESSION_URL")]
    pub session_url: Option<String>,
    /// HS256 secrets for player tokens, comma-separated (several allow rotation). Without any
    /// secret or public key the gateway uses the development secret and says so loudly.
    #[arg(
        long,
        env = "HF_JWT_SECRET",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub jwt_secret: Vec<String>,
    /// Public keys for player tokens as `ALG:PATH` (e.g. `RS256:/keys/idp.pem`), comma-separated.
    #[arg(long, env = "HF_JWT_PUBLIC_KEYS", value_delimiter = ',')]
    pub jwt_public_keys: Vec<String>,
    /// Required `iss` of player tokens.
    #[arg(long, env = "HF_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// Required `aud` of player tokens.
    #[arg(long, env = "HF_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
    /// Accept guest tokens (`"guest": true`, as `hidden-front token` mints). Turn off in production.
    #[arg(long, env = "HF_ALLOW_GUEST_TOKENS", default_value_t = true, action = clap::ArgAction::Set)]
    pub allow_guest_tokens: bool,
    /// Open player streams one gateway process accepts at most.
    #[arg(long, env = "HF_MAX_STREAMS", default_value_t = 50_000)]
    pub max_streams: usize,
    /// Events a player connection may fall behind (for 5 s) before it is cut off with a resume hint.
    #[arg(long, env = "HF_STREAM_BUFFER", default_value_t = 256)]
    pub stream_buffer: usize,
    /// Milliseconds a connection may stay `--stream-buffer` events behind before it is cut off.
    #[arg(long, env = "HF_STREAM_MAX_LAG_MS", default_value_t = 5000)]
    pub stream_max_lag_ms: u64,
    /// Player actions per second, sustained (a burst of twice as many is allowed).
    #[arg(long, env = "HF_ACTIONS_PER_SECOND", default_value_t = 10)]
    pub actions_per_second: u32,
    /// Address of the HTTP listener (the WebSocket API, `GET /v1/ws`), opened when the gateway
    /// runs (`127.0.0.1:0` picks a free port; the chosen address is printed).
    #[arg(long, env = "HF_HTTP_LISTEN", default_value = "127.0.0.1:8080")]
    pub http_listen: SocketAddr,
    /// Open WebSocket connections one gateway process accepts at most (more get HTTP 503).
    #[arg(long, env = "HF_WS_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub ws_max_connections: usize,
    /// This clock process's name in timer claims (default: a random one; the pod name is a good
    /// choice).
    #[arg(long, env = "HF_CLOCK_ID")]
    pub clock_id: Option<String>,
    /// Milliseconds between the clock's reads of newly due timers.
    #[arg(long, env = "HF_CLOCK_POLL_MS", default_value_t = 200)]
    pub clock_poll_ms: u64,
    /// Seconds a clock's claim on a timer lasts past its deadline; a dead clock's timers go to
    /// another clock process after this.
    #[arg(long, env = "HF_CLOCK_LEASE_SECONDS", default_value_t = 5)]
    pub clock_lease_seconds: u64,
    /// Where the gateway finds the matchmaking service (default: this process's own, when it runs
    /// here; otherwise the gateway's matchmaking operations answer UNAVAILABLE).
    #[arg(long, env = "HF_MATCHMAKING_URL")]
    pub matchmaking_url: Option<String>,
    /// The base of invite links (the invite code is appended).
    #[arg(
        long,
        env = "HF_INVITE_BASE_URL",
        default_value = "https://hiddenfront.example/invite"
    )]
    pub invite_base_url: String,
    /// Address of the metrics listener (Prometheus text on `GET /metrics`; `127.0.0.1:0` picks a
    /// free port; the chosen address is printed).
    #[arg(long, env = "HF_METRICS_LISTEN", default_value = "127.0.0.1:9090")]
    pub metrics_listen: SocketAddr,
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
    Ok(())
}

/// Runs `hidden-front serve` until SIGINT or SIGTERM.
pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let telemetry = init_logging(args.log_format);
    if args.services.is_empty() {
        bail!("--services needs at least one service");
    }
    let metrics = crate::metrics_endpoint::install()?;
    let run_session = args
        .services
        .iter()
        .any(|s| matches!(s, ServiceName::All | ServiceName::Session));
    let run_clock = args
        .services
        .iter()
        .any(|s| matches!(s, ServiceName::All | ServiceName::Clock));
    let run_matchmaking = args
        .services
        .iter()
        .any(|s| matches!(s, ServiceName::All | ServiceName::Matchmaking));
    if run_matchmaking && !run_session && args.session_url.is_none() {
        bail!(
            "matchmaking without the session in this process needs --session-url (HF_SESSION_URL)"
        );
    }
    if run_clock && !run_session && args.database_url.is_none() {
        bail!(
            "the clock without the session in this process needs DATABASE_URL: it reads the timers \
             the session writes"
        );
    }
    if run_clock && !run_session && args.session_url.is_none() {
        bail!("the clock without the session in this process needs --session-url (HF_SESSION_URL)");
    }
    // The session keeps games and the clock reads their timers; a gateway-only process needs no
    // database.
    let mut postgres = None;
    let store: Arc<dyn GameStore> = match (
        &args.database_url,
        run_session || run_clock || run_matchmaking,
    ) {
        (_, false) => Arc::new(MemoryStore::new()),
        (Some(url), true) => {
            let (store, target) = database::connect(url).await?;
            if args.migrate_on_start {
                for (version, description) in database::migrate(&store, &target).await? {
                    tracing::info!(version, description, "applied a migration");
                }
            }
            tracing::info!(%target, "games are stored in Postgres");
            postgres = Some(store.clone());
            Arc::new(store)
        }
        (None, true) => {
            eprintln!(
                "WARNING: DATABASE_URL is not set: games are kept IN MEMORY ONLY. Nothing is durable; \
                 every game is lost when this process stops."
            );
            Arc::new(MemoryStore::new())
        }
    };

    let run_gateway = args
        .services
        .iter()
        .any(|s| matches!(s, ServiceName::All | ServiceName::Gateway));
    // With the gateway in this process, the session's API goes to the internal port only, and
    // the clock's and matchmaking's with it.
    let session_apart = run_session && run_gateway;
    // What each port serves, so that its health and reflection name exactly that.
    let (mut public_services, mut internal_services) = (Vec::new(), Vec::new());
    if run_gateway {
        public_services.push(PLAYER_SERVICE);
    }
    let beside_session = if session_apart {
        &mut internal_services
    } else {
        &mut public_services
    };
    for (runs, service) in [
        (run_session, SESSION_SERVICE),
        (run_clock, CLOCK_SERVICE),
        (run_matchmaking, MATCHMAKING_SERVICE),
    ] {
        if runs {
            beside_session.push(service);
        }
    }
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    let reflection = reflection_service(&public_services)?;
    let session_server = run_session.then(|| {
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
    });
    let (public_session, internal_session) = if session_apart {
        (None, session_server)
    } else {
        (session_server, None)
    };
    let router = tonic::transport::Server::builder()
        // One span per RPC, child of the caller's trace context (W3C `traceparent`).
        .layer(hidden_front_telemetry::GrpcServerLayer)
        // Every error answer carries a reason and a bounded message, tonic's own included.
        .layer(hidden_front_api_error::ErrorContractLayer)
        .http2_keepalive_interval(Some(Duration::from_secs(20)))
        .add_service(health_service)
        .add_service(reflection)
        .add_optional_service(public_session);
    let mut internal_health = None;
    let internal = match internal_session {
        Some(session) => {
            let listener = TcpListener::bind(args.internal_listen)
                .await
                .with_context(|| format!("binding {} (--internal-listen)", args.internal_listen))?;
            let addr = listener.local_addr()?;
            let (reporter, health_service) = tonic_health::server::health_reporter();
            internal_health = Some(crate::health::PortHealth {
                reporter,
                services: internal_services.clone(),
            });
            let router = tonic::transport::Server::builder()
                .layer(hidden_front_telemetry::GrpcServerLayer)
                .layer(hidden_front_api_error::ErrorContractLayer)
                .http2_keepalive_interval(Some(Duration::from_secs(20)))
                .add_service(health_service)
                .add_service(reflection_service(&internal_services)?)
                .add_service(session);
            Some((listener, addr, router))
        }
        None => None,
    };

    let listener = TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let local = listener.local_addr()?;
    // Where this process's own session answers, for a gateway without --session-url.
    let own_session = internal.as_ref().map_or(local, |(_, addr, _)| *addr);
    let matchmaking = match run_matchmaking {
        true => Some(matchmaking_service(&args, postgres.as_ref(), own_session)?),
        false => None,
    };
    // Matchmaking runs beside the session (internal port) when it runs here.
    let matchmaking_url = args
        .matchmaking_url
        .clone()
        .or_else(|| run_matchmaking.then(|| format!("http://{own_session}")));
    let (player_api, gateway) = match run_gateway {
        true => Some(gateway_service(
            &args,
            own_session,
            matchmaking_url.as_deref(),
        )?),
        false => None,
    }
    .unzip();
    let router = router.add_optional_service(player_api);
    // The clock: its read-only API on the public port of a clock-only process (the internal one
    // when the gateway runs here too), its firing loop aimed at the session.
    let clock = match run_clock {
        true => Some(clock_parts(&args, store.clone(), own_session)?),
        false => None,
    };
    let (clock_api, clock_runner) = clock.unzip();
    let matchmaking_api = matchmaking
        .as_ref()
        .map(|m| m.server().max_decoding_message_size(args.max_message_bytes));
    let (router, internal) = match internal {
        Some((listener, addr, internal_router)) => (
            router,
            Some((
                listener,
                addr,
                internal_router
                    .add_optional_service(clock_api)
                    .add_optional_service(matchmaking_api),
            )),
        ),
        None => (
            router
                .add_optional_service(clock_api)
                .add_optional_service(matchmaking_api),
            None,
        ),
    };
    // The gateway also answers on an HTTP listener: the WebSocket API.
    let http = match gateway {
        Some(gateway) => {
            let listener = TcpListener::bind(args.http_listen)
                .await
                .with_context(|| format!("binding {} (--http-listen)", args.http_listen))?;
            let addr = listener.local_addr()?;
            Some((listener, addr, gateway))
        }
        None => None,
    };
    // SERVING only while the dependencies answer (checked now, then every few seconds).
    let public_health = crate::health::PortHealth {
        reporter: health_reporter,
        services: public_services,
    };
    crate::health::start(
        std::iter::once(public_health)
            .chain(internal_health)
            .collect(),
        crate::health::Dependencies {
            store: (run_session || run_clock || run_matchmaking).then(|| store.clone()),
            session_url: run_gateway.then(|| {
                args.session_url
                    .clone()
                    .unwrap_or_else(|| format!("http://{own_session}"))
            }),
        },
    )
    .await?;
    let metrics_listener = TcpListener::bind(args.metrics_listen)
        .await
        .with_context(|| format!("binding {} (--metrics-listen)", args.metrics_listen))?;
    let metrics_addr = metrics_listener.local_addr()?;
    // Tests and scripts read these lines to find the ports; the metrics and HTTP ones come
    // first, so whoever stops reading at the gRPC line has seen them all.
    println!("hidden-front metrics listening on {metrics_addr}");
    if let Some((_, addr, _)) = &http {
        println!("hidden-front http listening on {addr}");
        tracing::info!(address = %addr, "serving the WebSocket API on {}", ws::WS_PATH);
    }
    if let Some((_, addr, _)) = &internal {
        println!("hidden-front internal listening on {addr}");
        tracing::info!(address = %addr, "serving the session API on the internal port only");
    }
    println!("hidden-front listening on {local}");
    tracing::info!(address = %local, services = ?args.services, "serving");
    // One signal stops both listeners and tells every player stream to reconnect elsewhere.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stream_gateway = http.as_ref().map(|(_, _, gateway)| gateway.clone());
    let grace = Duration::from_secs(args.shutdown_grace_seconds);
    tokio::spawn(async move {
        shutdown_signal().await;
        if let Some(gateway) = stream_gateway {
            gateway.shutdown();
        }
        let _ = stop_tx.send(true);
        // Whatever is still open after the grace period (an internal stream, a client that
        // never reads) does not keep the process alive.
        tokio::time::sleep(grace).await;
        tracing::warn!(
            grace_seconds = grace.as_secs(),
            "grace period over; exiting"
        );
        std::process::exit(0);
    });
    // Matchmaking's loops (pairing, the ended-games feed, computer seats) stop with the rest.
    let matchmaking_loops = matchmaking
        .as_ref()
        .map(|service| service.spawn_background(stop_rx.clone()))
        .unwrap_or_default();
    let stopped = move || {
        let mut stop = stop_rx.clone();
        async move {
            let _ = stop.wait_for(|stopped| *stopped).await;
        }
    };
    // Replies are small and latency-bound: never let Nagle's algorithm hold one back.
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    // The internal port (the session, the clock's and matchmaking's APIs) stops only after the
    // public ports have drained: the gateway's last presence reports and commands still reach
    // the session while its streams close.
    let (internal_stop_tx, internal_stop_rx) = tokio::sync::watch::channel(false);
    let grpc = async {
        router
            .serve_with_incoming_shutdown(incoming, stopped())
            .await
            .context("serving gRPC")
    };
    let http = async {
        let Some((listener, _, gateway)) = http else {
            return Ok(());
        };
        let config = WsConfig {
            max_connections: args.ws_max_connections,
            max_message_bytes: args.max_message_bytes,
            ..WsConfig::default()
        };
        ws::serve(listener, gateway, config, stopped())
            .await
            .context("serving HTTP (WebSocket API)")
    };
    let public = async {
        let result = tokio::try_join!(grpc, http);
        let _ = internal_stop_tx.send(true);
        result.map(|_| ())
    };
    let internal = async {
        let Some((listener, _, router)) = internal else {
            return Ok(());
        };
        let incoming =
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
        let mut stop = internal_stop_rx;
        router
            .serve_with_incoming_shutdown(incoming, async move {
                let _ = stop.wait_for(|stopped| *stopped).await;
            })
            .await
            .context("serving the internal gRPC port")
    };
    let metrics = crate::metrics_endpoint::serve(metrics_listener, metrics, stopped());
    let clock = async {
        if let Some(runner) = clock_runner {
            runner.run(stopped()).await;
        }
        Ok::<(), anyhow::Error>(())
    };
    tokio::try_join!(public, internal, metrics, clock)?;
    for handle in matchmaking_loops {
        let _ = handle.await;
    }
    tracing::info!("stopped");
    // Flushing waits for the exporter, whose connection runs on this runtime: not on a worker.
    let _ = tokio::task::spawn_blocking(move || drop(telemetry)).await;
    Ok(())
}

/// gRPC server reflection for one port: it lists `services` (the Hidden Front services that
/// port serves), health and reflection itself, and nothing else, so a client is never shown
/// methods that would answer UNIMPLEMENTED there. The types of every Hidden Front proto stay
/// resolvable.
fn reflection_service(
    services: &[&'static str],
) -> anyhow::Result<
    tonic_reflection::server::v1::ServerReflectionServer<
        impl tonic_reflection::server::v1::ServerReflection,
    >,
> {
    let builder = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(hidden_front_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .with_service_name(tonic_health::pb::health_server::SERVICE_NAME)
        .with_service_name(tonic_reflection::pb::v1::server_reflection_server::SERVICE_NAME);
    services
        .iter()
        .fold(builder, |builder, service| {
            builder.with_service_name(*service)
        })
        .build_v1()
        .context("building the reflection service")
}

/// The gateway's gRPC service, talking to the session at `--session-url` or this process's own.
fn gateway_service(
    args: &ServeArgs,
    local: SocketAddr,
    matchmaking_url: Option<&str>,
) -> anyhow::Result<(PlayerServiceServer<PlayerApi>, Gateway)> {
    let mut auth = AuthConfig {
        hs256_secrets: args
            .jwt_secret
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect(),
        issuer: args.jwt_issuer.clone(),
        audience: args.jwt_audience.clone(),
        allow_guest_tokens: args.allow_guest_tokens,
        ..AuthConfig::default()
    };
    for entry in &args.jwt_public_keys {
        let (alg, path) = entry
            .split_once(':')
            .with_context(|| format!("--jwt-public-keys entry {entry:?} is not ALG:PATH"))?;
        let alg: PublicKeyAlgorithm = alg
            .parse()
            .map_err(|e| anyhow::anyhow!("--jwt-public-keys entry {entry:?}: {e}"))?;
        let pem = std::fs::read_to_string(path)
            .with_context(|| format!("reading the public key file {path}"))?;
        auth.public_keys_pem.push((alg, pem));
    }
    if auth.hs256_secrets.is_empty() && auth.public_keys_pem.is_empty() {
        eprintln!(
            "WARNING: no HF_JWT_SECRET or HF_JWT_PUBLIC_KEYS: the gateway accepts tokens signed with \
             the PUBLIC development secret (hidden-front token). Never run a public gateway like this."
        );
        auth.hs256_secrets = AuthConfig::dev().hs256_secrets;
    }
    let authenticator = Authenticator::new(auth).context("player token configuration")?;
    let session_url = args
        .session_url
        .clone()
        .unwrap_or_else(|| format!("http://{local}"));
    // One connection per session address (every pod behind a headless Service), requests
    // spread over the ready ones, addresses re-resolved every 10 s.
    let channel = hidden_front_gateway::balance::balanced_channel(
        &session_url,
        Duration::from_secs(10),
        |endpoint| {
            endpoint
                .tcp_nodelay(true)
                .connect_timeout(Duration::from_secs(5))
                .http2_keep_alive_interval(Duration::from_secs(20))
        },
    )
    .with_context(|| format!("session URL {session_url:?}"))?;
    let session =
        SessionServiceClient::new(channel.into()).max_decoding_message_size(4 * 1024 * 1024);
    let matchmaking = match matchmaking_url {
        Some(url) => Some(MatchmakingServiceClient::new(
            balanced_to(url)
                .with_context(|| format!("matchmaking URL {url:?}"))?
                .into(),
        )),
        None => None,
    };
    let gateway = Gateway::new(
        GatewayConfig {
            presence_lease: Duration::from_secs(args.presence_lease_seconds),
            max_streams: args.max_streams,
            stream_buffer: args.stream_buffer,
            max_lag: Duration::from_millis(args.stream_max_lag_ms),
            actions_per_second: args.actions_per_second,
            action_burst: args.actions_per_second.saturating_mul(2),
            matchmaking,
            ..GatewayConfig::default()
        },
        authenticator,
        session,
    );
    let api = PlayerServiceServer::new(PlayerApi::new(gateway.clone()))
        .max_decoding_message_size(args.max_message_bytes);
    Ok((api, gateway))
}

/// A channel balanced over every address `url`'s host resolves to (re-resolved every 10 s).
fn balanced_to(
    url: &str,
) -> Result<tonic::transport::Channel, hidden_front_gateway::balance::BalanceError> {
    hidden_front_gateway::balance::balanced_channel(url, Duration::from_secs(10), |endpoint| {
        endpoint
            .tcp_nodelay(true)
            .connect_timeout(Duration::from_secs(5))
            .http2_keep_alive_interval(Duration::from_secs(20))
    })
}

/// The matchmaking service, on this process's Postgres (or in memory), talking to the session at
/// `--session-url` or this process's own.
fn matchmaking_service(
    args: &ServeArgs,
    postgres: Option<&PostgresStore>,
    local: SocketAddr,
) -> anyhow::Result<MatchmakingService> {
    let store: Arc<dyn MatchStore> = match postgres {
        Some(postgres) => Arc::new(PostgresMatchStore::from_pool(postgres.pool().clone())),
        None => Arc::new(MemoryMatchStore::new()),
    };
    let session_url = args
        .session_url
        .clone()
        .unwrap_or_else(|| format!("http://{local}"));
    let channel =
        balanced_to(&session_url).with_context(|| format!("session URL {session_url:?}"))?;
    Ok(MatchmakingService::new(
        store,
        SessionServiceClient::new(channel.into()),
        MatchmakingConfig {
            invite_base_url: args.invite_base_url.clone(),
            ..MatchmakingConfig::default()
        },
    ))
}

/// The clock's gRPC API and its firing loop, aimed at the session at `--session-url` or this
/// process's own.
fn clock_parts(
    args: &ServeArgs,
    store: Arc<dyn GameStore>,
    local: SocketAddr,
) -> anyhow::Result<(ClockServiceServer<ClockService>, Clock)> {
    let session_url = args
        .session_url
        .clone()
        .unwrap_or_else(|| format!("http://{local}"));
    let channel = hidden_front_gateway::balance::balanced_channel(
        &session_url,
        Duration::from_secs(10),
        |endpoint| {
            endpoint
                .tcp_nodelay(true)
                .connect_timeout(Duration::from_secs(5))
                .http2_keep_alive_interval(Duration::from_secs(20))
        },
    )
    .with_context(|| format!("session URL {session_url:?}"))?;
    let config = ClockConfig {
        owner: args
            .clock_id
            .clone()
            .unwrap_or_else(|| ClockConfig::default().owner),
        poll_interval: Duration::from_millis(args.clock_poll_ms.max(1)),
        lease: Duration::from_secs(args.clock_lease_seconds.max(1)),
        ..ClockConfig::default()
    };
    let target = SessionTarget::new(
        SessionServiceClient::new(channel.into()),
        config.retry_delay,
    );
    let timers: Arc<dyn TimerStore> = store;
    let clock = Clock::new(timers.clone(), Arc::new(target), config.clone());
    let api = ClockServiceServer::new(ClockService::new(timers, config.owner, clock.stats()))
        .max_decoding_message_size(args.max_message_bytes);
    Ok((api, clock))
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
