//! A gRPC channel that balances over every address a host name resolves to.
//!
//! Long-lived HTTP/2 connections defeat L4 load balancing: one client would talk to one server
//! pod for its whole life. With a Kubernetes headless Service a service's name resolves to
//! every ready pod, so each client resolves it itself, keeps one connection per address, spreads
//! requests over the ready ones (tower's power-of-two-choices balancer inside tonic), and
//! re-resolves periodically so new pods join and departed ones leave.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::Duration;
use thiserror::Error;
use tonic::transport::channel::Change;
use tonic::transport::{Channel, Endpoint, Uri};

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

/// A channel to `url` (`http://host:port`) balancing over every address `host` resolves to,
/// re-resolved every `every`. `configure` sets the per-address connection options.
pub fn balanced_channel(
    url: &str,
    every: Duration,
    configure: impl Fn(Endpoint) -> Endpoint + Send + 'static,
) -> Result<Channel, BalanceError> {
    let ServiceUrl { scheme, host, port } = ServiceUrl::parse(url)?;
    let (channel, changes) = Channel::balance_channel::<SocketAddr>(64);
    tokio::spawn(async move {
        let mut known: HashSet<SocketAddr> = HashSet::new();
        loop {
            match tokio::net::lookup_host((host.as_str(), port)).await {
                Ok(found) => {
                    let now: HashSet<SocketAddr> = found.collect();
                    for &addr in now.difference(&known) {
                        let Ok(endpoint) = Endpoint::from_shared(format!("{scheme}://{addr}"))
                        else {
                            continue;
                        };
                        if changes
                            .send(Change::Insert(addr, configure(endpoint)))
                            .await
                            .is_err()
                        {
                            return; // the channel is gone
                        }
                    }
                    for &addr in known.difference(&now) {
                        if changes.send(Change::Remove(addr)).await.is_err() {
                            return;
                        }
                    }
                    if now != known {
                        tracing::info!(%host, addresses = now.len(), "service addresses changed");
                    }
                    known = now;
                }
                Err(error) => {
                    tracing::warn!(%host, %error, "cannot resolve the service host; keeping the known addresses");
                }
            }
            if changes.is_closed() {
                return;
            }
            // Periodic re-resolution: a schedule, not a wait for something to happen.
            tokio::time::sleep(every).await;
        }
    });
    Ok(channel)
}
