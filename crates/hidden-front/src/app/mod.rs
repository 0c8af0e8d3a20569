//! The Hidden Front application: every service this process runs, built from a [`ServeArgs`],
//! with its listeners bound, run until a shutdown signal.
//!
//! [`Application::build`] does everything that can fail at start (the configuration's
//! combinations, the database and its migrations, the token keys, binding every port) and then
//! holds a process that has not yet served a request; [`Application::ports`] tells the caller
//! which ports it got (ask for `127.0.0.1:0` and read them here); [`Application::run_until_stopped`]
//! serves until the given future completes, then stops in order: the players' streams are told to
//! reconnect elsewhere, the public ports drain, then the internal port (the gateway's last
//! presence reports and commands still reach the session while its streams close).
//!
//! The binary's `serve` is this plus logging, the signal handling and a grace period; the tests
//! start the same application in process.

mod clock;
mod gateway;
mod grpc;
mod grpc_metrics;
mod limits;
mod matchmaking;
mod referee;
mod roles;
mod session;
mod store;
mod webhooks;

use crate::config::ServeArgs;
use anyhow::Context;
use grpc::{Port, PortServices};
use hidden_front_conn_guard::GuardedListener;
use hidden_front_gateway::Gateway;
use hidden_front_gateway::http::Readiness;
use roles::Roles;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};

/// The addresses an application's listeners are bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ports {
    /// The gRPC port (`--listen`): the player API when the gateway runs here, otherwise the
    /// process's internal services.
    pub grpc: SocketAddr,
    /// The internal gRPC port (`--internal-listen`), open when the session and the gateway run
    /// together: the session's, the clock's and matchmaking's APIs.
    pub internal: Option<SocketAddr>,
    /// The HTTP port of the gateway (`--http-listen`): the WebSocket API, the browser client,
    /// guest sign-in and the server's time.
    pub http: Option<SocketAddr>,
    /// The metrics port (`--metrics-listen`).
    pub metrics: SocketAddr,
}

/// What the application does once run, waiting on its stop signals.
type Serving = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>;

/// A built application: bound, configured, not yet serving.
pub struct Application {
    ports: Ports,
    /// Cancelled when the shutdown starts; dropped unrun, it stops whatever it started.
    stop: DropGuard,
    /// What the HTTP readiness probe answers: set by the health checks, and to draining here
    /// when a shutdown starts.
    readiness: Arc<watch::Sender<Readiness>>,
    gateway: Option<Gateway>,
    serving: Serving,
}

/// The kernel's queue of connections a port holds before the process accepts them (capped by
/// `net.core.somaxconn`). tokio's default is 1,024: a burst of thousands of connects (players
/// coming back after a network blip, or a flood) overflows it while the accept loop catches up,
/// and with SYN cookies the kernel then drops connections its clients believe open, which no
/// deadline of the process can ever close.
const LISTEN_BACKLOG: u32 = 4096;

/// Binds `addr` with [`LISTEN_BACKLOG`], naming the flag in the error.
async fn bind(addr: SocketAddr, flag: &str) -> anyhow::Result<TcpListener> {
    let listen = || {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        // As `TcpListener::bind` does: a restarted process binds its port again at once.
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        socket.listen(LISTEN_BACKLOG)
    };
    listen().with_context(|| format!("binding {addr} ({flag})"))
}

impl Application {
    /// Builds every service `args` names and binds their listeners.
    pub async fn build(args: ServeArgs) -> anyhow::Result<Application> {
        let roles = Roles::of(&args)?;
        // Checked before anything is opened: a cap the open files limit cannot hold stops here.
        let public_limits = limits::public_limits(&args, roles.gateway)?;
        let metrics = crate::metrics_endpoint::install()?;
        if public_limits.is_some() {
            hidden_front_conn_guard::describe_metrics(
                &hidden_front_metrics_names::CONNECTION_PORTS,
            );
        }
        let stores = store::open(&args, roles).await?;

        let internal_listener = match roles.internal_port() {
            true => Some(bind(args.internal_listen, "--internal-listen").await?),
            false => None,
        };
        let public_listener = bind(args.listen, "--listen").await?;
        let grpc_addr = public_listener.local_addr()?;
        let internal_addr = internal_listener
            .as_ref()
            .map(TcpListener::local_addr)
            .transpose()?;
        // This process's own session (and matchmaking, beside it) answers here.
        let own = format!("http://{}", internal_addr.unwrap_or(grpc_addr));
        let session_url = args.session_url.clone().unwrap_or_else(|| own.clone());
        let matchmaking_url = args
            .matchmaking_url
            .clone()
            .or_else(|| roles.matchmaking.then(|| own.clone()));

        let (session, admin, referee) = match roles.session {
            true => {
                let (session, admin, referee) = session::servers(&args, stores.games.clone())?;
                session::first_pulse(&referee).await;
                (Some(session), Some(admin), Some(referee))
            }
            false => (None, None, None),
        };
        // This process's gateway, clock and matchmaking call its own session directly (unless
        // `--session-url` names one, or `--in-process-session false`); another process's over
        // gRPC.
        let session_route = match (&session, &referee, &args.session_url) {
            (Some(server), Some(referee), None) if args.in_process_session => {
                session::SessionRoute::Local {
                    service: grpc::local_service(server.clone()),
                    session: Arc::clone(referee),
                }
            }
            _ => session::SessionRoute::Remote(session_url.clone()),
        };
        let webhooks = webhooks::build(&args, roles.session, &stores)?;
        // Bound before matchmaking is built: its invite links default to this listener's page.
        let http_listener = match roles.gateway {
            true => Some(bind(args.http_listen, "--http-listen").await?),
            false => None,
        };
        let http_addr = http_listener
            .as_ref()
            .map(TcpListener::local_addr)
            .transpose()?;
        let invite_base_url = args.invite_base_url.clone().unwrap_or_else(|| {
            gateway::default_invite_base_url(http_addr.unwrap_or(args.http_listen))
        });
        let matchmaking = roles
            .matchmaking
            .then(|| {
                matchmaking::service(
                    stores.postgres.as_ref(),
                    stores.memory.as_ref(),
                    &session_route,
                    &invite_base_url,
                    hidden_front_matchmaking::policy::RatingIntegrity {
                        min_plies: args.rated_min_plies,
                        pair_cap: args.rated_pair_cap,
                        ..Default::default()
                    },
                )
            })
            .transpose()?;
        let (player, gateway, http_routes, session_serving) = match roles.gateway {
            true => {
                let built = gateway::build(&args, &session_route, matchmaking_url.as_deref())?;
                (
                    Some(built.api),
                    Some(built.gateway),
                    Some(built.http),
                    Some(built.session_serving),
                )
            }
            false => (None, None, None, None),
        };
        let (clock_api, clock) = roles
            .clock
            .then(|| clock::parts(&args, stores.games.clone(), &session_route))
            .transpose()?
            .unzip();

        // Each service to its port.
        let mut public = PortServices {
            player,
            ..PortServices::default()
        };
        let mut internal = PortServices::default();
        let beside_session = match roles.internal_port() {
            true => &mut internal,
            false => &mut public,
        };
        beside_session.session = session;
        beside_session.admin = admin;
        let deliveries = webhooks.map(|w| {
            beside_session.webhooks = Some(w.admin);
            w.deliveries
        });
        beside_session.clock = clock_api;
        beside_session.matchmaking = matchmaking
            .as_ref()
            .map(|m| m.server().max_decoding_message_size(args.max_message_bytes));
        beside_session.organiser = matchmaking
            .as_ref()
            .map(|m| matchmaking::organiser(m, &args))
            .transpose()?;

        let metrics_listener = bind(args.metrics_listen, "--metrics-listen").await?;
        let ports = Ports {
            grpc: grpc_addr,
            internal: internal_addr,
            http: http_addr,
            metrics: metrics_listener.local_addr()?,
        };

        // One signal stops the public ports; the internal one stops after they have drained.
        let stop = CancellationToken::new();
        let internal_stop = CancellationToken::new();
        let (mut public_names, mut internal_names) = roles.port_services();
        if deliveries.is_some() {
            match roles.internal_port() {
                true => &mut internal_names,
                false => &mut public_names,
            }
            .push(hidden_front_proto::v1::webhook_admin_service_server::SERVICE_NAME);
        }
        let (public_health, public_grpc) = Port::new(
            "the gRPC port",
            public_listener,
            public_limits,
            public_names,
            public,
        )
        .serve(stop.clone().cancelled_owned())?;
        let (internal_health, internal_grpc) = internal_listener
            .map(|listener| {
                Port::new(
                    "the internal gRPC port",
                    listener,
                    None,
                    internal_names,
                    internal,
                )
                .serve(internal_stop.clone().cancelled_owned())
            })
            .transpose()?
            .unzip();
        // SERVING only while the dependencies answer (checked now, then every few seconds).
        let readiness = Arc::new(watch::Sender::new(Readiness::Starting));
        let health = crate::health::start(
            std::iter::once(public_health)
                .chain(internal_health)
                .collect(),
            crate::health::Dependencies {
                store: roles.needs_store().then(|| stores.games.clone()),
                store_lost: referee.as_ref().map(|session| session.store_lost()),
                session_serving,
            },
            readiness.clone(),
        )
        .await?;

        let http = {
            let gateway = gateway.clone();
            let config = gateway::ws_config(&args);
            let stopped = stop.clone().cancelled_owned();
            let probes = hidden_front_gateway::http::probes::routes(readiness.subscribe());
            async move {
                let (Some(listener), Some(gateway), Some(routes)) =
                    (http_listener, gateway, http_routes)
                else {
                    return Ok(());
                };
                let routes =
                    hidden_front_gateway::http::routes(routes, gateway.clone()).merge(probes);
                let serving = match public_limits {
                    Some(limits) => {
                        let listener = GuardedListener::new(listener, "http", limits);
                        hidden_front_gateway::ws::serve_guarded(
                            listener, gateway, config, routes, stopped,
                        )
                        .await
                    }
                    None => {
                        hidden_front_gateway::ws::serve_with(
                            listener, gateway, config, routes, stopped,
                        )
                        .await
                    }
                };
                serving.context("serving HTTP (the WebSocket API and the page)")
            }
        };
        // Cancelled however the public side ends (drained, failed or dropped).
        let internal_stop = internal_stop.drop_guard();
        let public = async move {
            let result = tokio::try_join!(public_grpc, http);
            drop(internal_stop);
            result.map(|_| ())
        };
        let internal = async move {
            match internal_grpc {
                Some(serving) => serving.await,
                None => Ok(()),
            }
        };
        let metrics = crate::metrics_endpoint::serve(
            metrics_listener,
            metrics,
            hidden_front_gateway::http::probes::routes(readiness.subscribe()),
            stop.clone().cancelled_owned(),
        );
        let clock = {
            let stopped = stop.clone().cancelled_owned();
            async move {
                if let Some(clock) = clock {
                    clock.run(stopped).await;
                }
                Ok::<(), anyhow::Error>(())
            }
        };
        let serving = {
            let stop = stop.clone();
            async move {
                // Matchmaking's loops (pairing, the ended-games feed, computer seats) start with
                // the serving and stop with the rest.
                let mut loops = deliveries
                    .map(|deliveries| deliveries.spawn(stop.child_token()))
                    .unwrap_or_default();
                // The session's pulse (docs/clock.md): how the service knows its own outages.
                loops.extend(referee.map(|referee| {
                    tokio::spawn(referee.run_pulse(stop.clone().cancelled_owned()))
                }));
                loops.extend(
                    matchmaking
                        .map(|service| service.spawn_background(stop.child_token()))
                        .unwrap_or_default(),
                );
                let result = tokio::try_join!(public, internal, metrics, clock);
                for handle in loops {
                    let _ = handle.await;
                }
                health.abort();
                result.map(|_| ())
            }
        };
        Ok(Application {
            ports,
            stop: stop.drop_guard(),
            readiness,
            gateway,
            serving: Box::pin(serving),
        })
    }

    /// Where the listeners are bound.
    pub fn ports(&self) -> Ports {
        self.ports
    }

    /// Serves until `shutdown` completes, then stops: every player stream is told to reconnect
    /// elsewhere, the public ports drain, then the internal port. Returns when everything has
    /// stopped, or at once with the error of a listener that failed.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send,
    ) -> anyhow::Result<()> {
        let Application {
            stop,
            readiness,
            gateway,
            mut serving,
            ..
        } = self;
        let stopping = async move {
            shutdown.await;
            // Out of rotation first: /readyz answers 503 and gRPC health NOT_SERVING from here.
            readiness.send_replace(Readiness::Draining);
            if let Some(gateway) = gateway {
                gateway.shutdown();
            }
            let stop = stop.disarm();
            stop.cancel();
            stop
        };
        tokio::select! {
            result = &mut serving => result,
            stop = stopping => {
                let result = serving.await;
                drop(stop);
                result
            }
        }
    }
}
