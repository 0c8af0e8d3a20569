//! A gRPC channel that balances over every address a host name resolves to.
//!
//! Long-lived HTTP/2 connections defeat L4 load balancing: one client would talk to one server
//! pod for its whole life. With a Kubernetes headless Service a service's name resolves to
//! every ready pod, so each client resolves it itself, keeps one connection per address, spreads
//! requests over the ready ones (tower's power-of-two-choices balancer inside tonic), and
//! re-resolves periodically so new pods join and departed ones leave. Between resolutions each
//! address's gRPC health is asked every second, so a draining, restarting or vanished pod stops
//! getting calls within about two seconds.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::time::Duration;
use thiserror::Error;
use tokio::sync::watch;
use tonic::transport::channel::Change;
use tonic::transport::{Channel, Endpoint, Uri};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// A URL that cannot be balanced over.
#[derive(Debug, Error)]
pub enum BalanceError {
    /// Not a URL with a host.
    #[error("{0:?} is not a URL like http://session-headless:50051")]
    BadUrl(String),
}

/// A service's URL in parts: what is resolved (`host`, `port`) and how each address is dialled
/// (`scheme`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceUrl {
    /// `http` or `https`.
    pub scheme: String,
    /// The host name (or address) to resolve, without IPv6 brackets.
    pub host: String,
    /// The port, the scheme's default when the URL has none.
    pub port: u16,
}

impl ServiceUrl {
    /// Reads `http://host:port` (`https://` too).
    pub fn parse(url: &str) -> Result<ServiceUrl, BalanceError> {
        let bad = || BalanceError::BadUrl(url.to_string());
        let uri: Uri = url.parse().map_err(|_| bad())?;
        let host = uri
            .host()
            .ok_or_else(bad)?
            .trim_matches(['[', ']'])
            .to_string();
        let scheme = uri.scheme_str().unwrap_or("http").to_string();
        let port = uri
            .port_u16()
            .unwrap_or(if scheme == "https" { 443 } else { 80 });
        Ok(ServiceUrl { scheme, host, port })
    }
}

/// How a balanced channel finds and checks the service's addresses.
#[derive(Debug, Clone, Copy)]
pub struct Membership {
    /// The gRPC health service name asked of each address (`grpc.health.v1.Health/Check`):
    /// an address is a member while it answers SERVING for it.
    pub health_service: &'static str,
    /// How often the host name is resolved again (new pods join, departed ones leave).
    pub resolve_every: Duration,
    /// How often each address's health is asked, and how long an answer may take.
    pub probe_every: Duration,
}

/// How many of a service's addresses answered SERVING at the last probe; `None` until the first
/// probe has answered (or timed out).
pub type Serving = watch::Receiver<Option<usize>>;

/// A channel to `url` (`http://host:port`) balancing over the addresses `host` resolves to that
/// answer SERVING, and the count of those ([`Serving`]). `configure` sets the per-address
/// connection options.
///
/// Why health and not only the name: a headless Service's name lists a pod until the endpoint
/// controller removes it, and this process resolves it only every `resolve_every`. Meanwhile a
/// pod that drains (its health turns NOT_SERVING first), restarts (connections refused) or
/// vanishes without a FIN (probes time out) would keep getting a share of the calls, each
/// failing UNAVAILABLE to a player (docs/cluster-test.md). Asked every `probe_every`, such an
/// address leaves the balancer within about two probes and rejoins once it serves again. When
/// no address serves, every resolved one is a member, so that calls fail at once with the
/// service's own answer instead of waiting for an address that never comes.
pub fn balanced_channel(
    url: &str,
    membership: Membership,
    configure: impl Fn(Endpoint) -> Endpoint + Send + Sync + 'static,
) -> Result<(Channel, Serving), BalanceError> {
    let ServiceUrl { scheme, host, port } = ServiceUrl::parse(url)?;
    let resolve = move || {
        let host = host.clone();
        async move {
            let found = tokio::net::lookup_host((host.as_str(), port)).await;
            found
                .map(|found| found.collect())
                .map_err(|error| (host, error))
        }
    };
    Ok(balanced_over(resolve, scheme, membership, configure))
}

/// [`balanced_channel`] over the addresses `resolve` finds (a name's, or a test's list).
fn balanced_over<R, F>(
    resolve: R,
    scheme: String,
    membership: Membership,
    configure: impl Fn(Endpoint) -> Endpoint + Send + Sync + 'static,
) -> (Channel, Serving)
where
    R: Fn() -> F + Send + 'static,
    F: std::future::Future<Output = Result<HashSet<SocketAddr>, (String, std::io::Error)>> + Send,
{
    let (channel, changes) = Channel::balance_channel::<SocketAddr>(64);
    let (serving_tx, serving) = watch::channel(None);
    tokio::spawn(async move {
        let mut resolved: HashSet<SocketAddr> = HashSet::new();
        let mut members: HashSet<SocketAddr> = HashSet::new();
        let mut probes: HashMap<SocketAddr, HealthClient<Channel>> = HashMap::new();
        let mut resolve_tick = tokio::time::interval(membership.resolve_every);
        resolve_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut probe = tokio::time::interval(membership.probe_every);
        probe.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                // Resolved before the first probe, so the first count is of real addresses.
                biased;
                _ = resolve_tick.tick() => {
                    match resolve().await {
                        Ok(now) => {
                            if now != resolved {
                                tracing::info!(addresses = now.len(), "service addresses changed");
                            }
                            probes.retain(|addr, _| now.contains(addr));
                            resolved = now;
                        }
                        Err((host, error)) => {
                            tracing::warn!(%host, %error, "cannot resolve the service host; keeping the known addresses");
                        }
                    }
                    // A new address serves calls at once, before its first probe; a departed
                    // one leaves.
                    let new = resolved.iter().filter(|addr| !probes.contains_key(addr));
                    let want = members.intersection(&resolved).chain(new).copied().collect();
                    if !update(&changes, &scheme, &mut members, want, &configure).await {
                        return;
                    }
                }
                _ = probe.tick() => {
                    for &addr in &resolved {
                        if let std::collections::hash_map::Entry::Vacant(slot) = probes.entry(addr)
                            && let Ok(endpoint) = Endpoint::from_shared(format!("{scheme}://{addr}"))
                        {
                            slot.insert(HealthClient::new(
                                endpoint.connect_timeout(membership.probe_every).connect_lazy(),
                            ));
                        }
                    }
                    let serving_now = serving_addresses(&probes, membership).await;
                    let count = serving_now.len();
                    let want = match serving_now.is_empty() {
                        true => resolved.clone(),
                        false => serving_now,
                    };
                    if !update(&changes, &scheme, &mut members, want, &configure).await {
                        return;
                    }
                    // Told after the balancer knows, so a reader of the count never sees it
                    // ahead of the members.
                    serving_tx.send_replace(Some(count));
                }
            }
            if changes.is_closed() {
                return;
            }
        }
    });
    (channel, serving)
}

/// The addresses of `probes` that answer SERVING for the membership's health service within
/// its probe time, all asked at once.
async fn serving_addresses(
    probes: &HashMap<SocketAddr, HealthClient<Channel>>,
    membership: Membership,
) -> HashSet<SocketAddr> {
    let checks = probes.iter().map(|(&addr, client)| {
        let mut client = client.clone();
        async move {
            let request = HealthCheckRequest {
                service: membership.health_service.to_string(),
            };
            let answer =
                tokio::time::timeout(membership.probe_every, client.check(request)).await;
            matches!(answer, Ok(Ok(answer)) if answer.get_ref().status == ServingStatus::Serving as i32)
                .then_some(addr)
        }
    });
    futures_util::future::join_all(checks)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// Makes the balancer's members `want`: inserts the new, removes the departed. False when the
/// channel is gone.
async fn update(
    changes: &tokio::sync::mpsc::Sender<Change<SocketAddr, Endpoint>>,
    scheme: &str,
    members: &mut HashSet<SocketAddr>,
    want: HashSet<SocketAddr>,
    configure: &(impl Fn(Endpoint) -> Endpoint + Sync),
) -> bool {
    for &addr in want.difference(members) {
        let Ok(endpoint) = Endpoint::from_shared(format!("{scheme}://{addr}")) else {
            continue;
        };
        if changes
            .send(Change::Insert(addr, configure(endpoint)))
            .await
            .is_err()
        {
            return false;
        }
    }
    for &addr in members.difference(&want) {
        if changes.send(Change::Remove(addr)).await.is_err() {
            return false;
        }
    }
    if want != *members {
        tracing::debug!(members = want.len(), "balanced addresses changed");
    }
    *members = want;
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;
    use tonic_health::server::HealthReporter;

    const SERVICE: &str = "test.Service";

    /// A health service on a loopback port answering `serving` for [`SERVICE`].
    async fn health_at(serving: bool) -> (SocketAddr, HealthReporter) {
        let (reporter, service) = tonic_health::server::health_reporter();
        set(&reporter, serving).await;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
        (addr, reporter)
    }

    async fn set(reporter: &HealthReporter, serving: bool) {
        let status = match serving {
            true => tonic_health::ServingStatus::Serving,
            false => tonic_health::ServingStatus::NotServing,
        };
        reporter.set_service_status(SERVICE, status).await;
    }

    /// Waits for the next probe's count equal to `n`.
    async fn serving_becomes(serving: &mut Serving, n: usize) {
        tokio::time::timeout(
            Duration::from_secs(20),
            serving.wait_for(|now| *now == Some(n)),
        )
        .await
        .expect("the count in time")
        .expect("the prober runs");
    }

    /// Asks [`SERVICE`]'s health through the balanced channel itself, `times` times: every
    /// answer comes from a member, so all are SERVING exactly when no call reaches the address
    /// that does not serve.
    async fn answers_through(channel: &Channel, times: usize) -> Vec<i32> {
        let mut client = HealthClient::new(channel.clone());
        let mut answers = Vec::new();
        for _ in 0..times {
            let request = HealthCheckRequest {
                service: SERVICE.to_string(),
            };
            answers.push(client.check(request).await.unwrap().into_inner().status);
        }
        answers
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_go_only_to_addresses_that_serve_and_all_when_none_does() {
        let (up, up_reporter) = health_at(true).await;
        let (down, down_reporter) = health_at(false).await;
        // And an address where nothing listens (a restarting host: connections refused).
        let gone = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap();
        let addrs: HashSet<SocketAddr> = [up, down, gone].into();
        let membership = Membership {
            health_service: SERVICE,
            resolve_every: Duration::from_secs(60),
            probe_every: Duration::from_millis(100),
        };
        let resolve = move || {
            let addrs = addrs.clone();
            async move { Ok(addrs) }
        };
        let (channel, mut serving) = balanced_over(resolve, "http".to_string(), membership, |e| e);
        serving_becomes(&mut serving, 1).await;
        let serving_answer = tonic_health::pb::health_check_response::ServingStatus::Serving as i32;
        assert!(
            answers_through(&channel, 20)
                .await
                .iter()
                .all(|&s| s == serving_answer),
            "a call reached the address that does not serve"
        );

        // None serves: all are members again, so calls are answered (NOT_SERVING, or refused
        // by the one that is gone), not held waiting for a member.
        set(&up_reporter, false).await;
        serving_becomes(&mut serving, 0).await;
        let mut client = HealthClient::new(channel.clone());
        for _ in 0..4 {
            let request = HealthCheckRequest {
                service: SERVICE.to_string(),
            };
            tokio::time::timeout(Duration::from_secs(10), client.check(request))
                .await
                .expect("calls answered while no address serves")
                .ok();
        }

        // The other comes back: it alone gets the calls.
        set(&down_reporter, true).await;
        serving_becomes(&mut serving, 1).await;
        assert!(
            answers_through(&channel, 20)
                .await
                .iter()
                .all(|&s| s == serving_answer)
        );
    }
}
