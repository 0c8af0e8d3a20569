//! gRPC health that follows the dependencies: the session service is SERVING only while its
//! store answers, the gateway only while its session does (the store, when the session runs in
//! this process; otherwise the session's own health check, asked of every address the session's
//! host resolves to: ready while any of them answers SERVING, as the gateway's balanced calls go
//! to any of them. One address only, the first, took every gateway out of rotation when that one
//! session host was lost while another served: docs/cluster-test.md). The overall `""` service is SERVING
//! only when every service of this process is.
//!
//! Each gRPC port has its own health service, which knows only the services that port serves:
//! asking the public port about `SessionService` answers NOT_FOUND, as it would on a process
//! without it, instead of a status for a service that is not there.
//!
//! The same decision feeds the gateway's HTTP readiness probe (`GET /readyz`, through a
//! [`Readiness`] watch): ready exactly when the overall status is SERVING. When a shutdown
//! starts, [`Readiness::Draining`] is set and every status of every port turns NOT_SERVING for
//! good, so gRPC and HTTP probes alike take the process out of rotation while it drains.

use hidden_front_gateway::http::Readiness;
use hidden_front_proto::v1::admin_service_server::SERVICE_NAME as ADMIN_SERVICE;
use hidden_front_proto::v1::clock_service_server::SERVICE_NAME as CLOCK_SERVICE;
use hidden_front_proto::v1::matchmaking_service_server::SERVICE_NAME as MATCHMAKING_SERVICE;
use hidden_front_proto::v1::player_service_server::SERVICE_NAME as PLAYER_SERVICE;
use hidden_front_proto::v1::session_service_server::SERVICE_NAME as SESSION_SERVICE;
use hidden_front_store::GameStore;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tonic_health::ServingStatus;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus as WireStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::server::HealthReporter;

/// How often the dependencies are checked.
pub const CHECK_INTERVAL: Duration = Duration::from_secs(3);
/// How long one check may take before it counts as a failure.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// What this process runs and what that depends on.
pub struct Dependencies {
    /// The store, when the session, the clock or matchmaking runs in this process (their health
    /// follows it).
    pub store: Option<Arc<dyn GameStore>>,
    /// Where the gateway finds the session, when the gateway runs in this process. Not used when
    /// the session runs here too (then the store decides).
    pub session_url: Option<String>,
}

/// The health service of one gRPC port: its reporter and the names of the services that port
/// serves, the only ones it reports on (besides the overall `""`).
pub struct PortHealth {
    /// The reporter behind that port's health service.
    pub reporter: HealthReporter,
    /// Full names of the services of that port (`hiddenfront.v1.PlayerService`, ...).
    pub services: Vec<&'static str>,
}

/// Checks the dependencies once (so the first health answer is already true), sets the
/// statuses on every port and `readiness`, then keeps checking every [`CHECK_INTERVAL`] in a
/// background task, whose handle stops it. Once `readiness` is set to [`Readiness::Draining`]
/// (by whoever stops the process), every status turns NOT_SERVING and checking stops.
pub async fn start(
    ports: Vec<PortHealth>,
    deps: Dependencies,
    readiness: Arc<watch::Sender<Readiness>>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let session = match (&deps.store, &deps.session_url) {
        (None, Some(url)) => Some(SessionHealth::resolving(url)?),
        _ => None,
    };
    let mut draining = readiness.subscribe();
    let mut checker = Checker {
        ports,
        deps,
        session,
        last: None,
        readiness,
    };
    checker.check().await;
    Ok(tokio::spawn(async move {
        let mut every = tokio::time::interval(CHECK_INTERVAL);
        every.tick().await;
        loop {
            tokio::select! {
                _ = every.tick() => checker.check().await,
                // Draining, or nobody left to say so: nothing more to serve either way.
                _ = async { draining.wait_for(|r| *r == Readiness::Draining).await.is_ok() } => {
                    checker.drain().await;
                    return;
                }
            }
        }
    }))
}

/// Where the session's addresses come from: the session URL's host resolved (every pod of a
/// headless Service), or, in tests, a fixed list.
type Resolve = Box<
    dyn Fn() -> futures_util::future::BoxFuture<'static, std::io::Result<Vec<SocketAddr>>>
        + Send
        + Sync,
>;

/// The session's health, asked of each of its addresses.
struct SessionHealth {
    resolve: Resolve,
    /// `http` or `https`.
    scheme: String,
    /// A health client per address, kept between checks (its connection too).
    clients: HashMap<SocketAddr, HealthClient<tonic::transport::Channel>>,
}

impl SessionHealth {
    /// The session at `url` (`http://host:port`), its host resolved at every check.
    fn resolving(url: &str) -> anyhow::Result<SessionHealth> {
        let hidden_front_channel::ServiceUrl { scheme, host, port } =
            hidden_front_channel::ServiceUrl::parse(url)?;
        let resolve: Resolve = Box::new(move || {
            let host = host.clone();
            Box::pin(async move {
                Ok(tokio::net::lookup_host((host.as_str(), port))
                    .await?
                    .collect())
            })
        });
        Ok(SessionHealth::with(resolve, scheme))
    }

    fn with(resolve: Resolve, scheme: String) -> SessionHealth {
        SessionHealth {
            resolve,
            scheme,
            clients: HashMap::new(),
        }
    }

    /// Whether any of the session's addresses answers SERVING within [`CHECK_TIMEOUT`]. The
    /// addresses are resolved again each time (a host that cannot be resolved now keeps the
    /// last ones); all are asked at once.
    async fn any_serving(&mut self) -> bool {
        if let Ok(Ok(now)) = tokio::time::timeout(CHECK_TIMEOUT, (self.resolve)()).await {
            self.clients.retain(|addr, _| now.contains(addr));
            for addr in now {
                if let std::collections::hash_map::Entry::Vacant(slot) = self.clients.entry(addr)
                    && let Ok(endpoint) =
                        tonic::transport::Endpoint::from_shared(format!("{}://{addr}", self.scheme))
                {
                    slot.insert(HealthClient::new(
                        endpoint.connect_timeout(CHECK_TIMEOUT).connect_lazy(),
                    ));
                }
            }
        }
        let checks = self.clients.values().map(|client| {
            let mut client = client.clone();
            async move {
                let request = HealthCheckRequest {
                    service: SESSION_SERVICE.to_string(),
                };
                matches!(
                    tokio::time::timeout(CHECK_TIMEOUT, client.check(request)).await,
                    Ok(Ok(answer)) if answer.get_ref().status == WireStatus::Serving as i32
                )
            }
        });
        futures_util::future::join_all(checks)
            .await
            .into_iter()
            .any(|serving| serving)
    }
}

struct Checker {
    ports: Vec<PortHealth>,
    deps: Dependencies,
    /// The health of a session in other processes.
    session: Option<SessionHealth>,
    /// The statuses set last time (session, gateway), to log only changes.
    last: Option<(Option<bool>, Option<bool>)>,
    /// What the HTTP readiness probe answers; [`Readiness::Draining`] is final.
    readiness: Arc<watch::Sender<Readiness>>,
}

impl Checker {
    async fn check(&mut self) {
        if *self.readiness.borrow() == Readiness::Draining {
            return;
        }
        let store_ok = match &self.deps.store {
            Some(store) => Some(matches!(
                tokio::time::timeout(CHECK_TIMEOUT, store.ping()).await,
                Ok(Ok(()))
            )),
            None => None,
        };
        let gateway_ok = match (&self.deps.session_url, store_ok, &mut self.session) {
            (None, _, _) => None,
            (Some(_), Some(store_ok), _) => Some(store_ok),
            (Some(_), None, Some(session)) => Some(session.any_serving().await),
            (Some(_), None, None) => Some(false),
        };
        let status = |ok: bool| {
            if ok {
                ServingStatus::Serving
            } else {
                ServingStatus::NotServing
            }
        };
        let all_ok = store_ok.unwrap_or(true) && gateway_ok.unwrap_or(true);
        for port in &self.ports {
            for &service in &port.services {
                let ok = match service {
                    PLAYER_SERVICE => gateway_ok,
                    SESSION_SERVICE | ADMIN_SERVICE | CLOCK_SERVICE | MATCHMAKING_SERVICE => {
                        store_ok
                    }
                    _ => None,
                };
                if let Some(ok) = ok {
                    port.reporter.set_service_status(service, status(ok)).await;
                }
            }
            port.reporter.set_service_status("", status(all_ok)).await;
        }
        let ready = match all_ok {
            true => Readiness::Serving,
            false => Readiness::NotServing,
        };
        self.readiness.send_if_modified(|current| {
            let changed = *current != Readiness::Draining && *current != ready;
            if changed {
                *current = ready;
            }
            changed
        });
        let now = (store_ok, gateway_ok);
        if self.last != Some(now) {
            if all_ok {
                tracing::info!(store = ?store_ok, session = ?gateway_ok, "health: SERVING");
            } else {
                tracing::warn!(store = ?store_ok, session = ?gateway_ok, "health: NOT_SERVING (a dependency does not answer)");
            }
            self.last = Some(now);
        }
    }

    /// A shutdown started: every service of every port, and the overall `""`, NOT_SERVING.
    async fn drain(&mut self) {
        for port in &self.ports {
            for &service in &port.services {
                port.reporter
                    .set_service_status(service, ServingStatus::NotServing)
                    .await;
            }
            port.reporter
                .set_service_status("", ServingStatus::NotServing)
                .await;
        }
        tracing::info!("health: NOT_SERVING (draining for shutdown)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// A session health service on loopback answering `status` for the session service.
    async fn session_at(status: ServingStatus) -> SocketAddr {
        let (reporter, service) = tonic_health::server::health_reporter();
        reporter.set_service_status(SESSION_SERVICE, status).await;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _keep = reporter;
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
                .await
        });
        addr
    }

    /// An address where nothing listens (connections are refused).
    async fn nobody() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap()
    }

    fn fixed(addrs: Vec<SocketAddr>) -> SessionHealth {
        SessionHealth::with(
            Box::new(move || {
                let addrs = addrs.clone();
                Box::pin(async move { Ok(addrs) })
            }),
            "http".into(),
        )
    }

    /// Ready while any of the session's addresses serves, whichever comes first in the answer;
    /// not ready when none does (one down, one NOT_SERVING).
    #[tokio::test]
    async fn the_gateway_is_ready_while_any_session_address_serves() {
        let (dead, serving, not_serving) = (
            nobody().await,
            session_at(ServingStatus::Serving).await,
            session_at(ServingStatus::NotServing).await,
        );
        assert!(
            fixed(vec![dead, serving]).any_serving().await,
            "the first is down"
        );
        assert!(fixed(vec![serving, dead]).any_serving().await);
        assert!(!fixed(vec![dead, not_serving]).any_serving().await);
        assert!(!fixed(vec![]).any_serving().await, "no session at all");
    }
}
