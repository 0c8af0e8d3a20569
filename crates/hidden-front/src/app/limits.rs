//! The public ports' connection limits (hidden-front-conn-guard), checked against the open files
//! limit before anything is opened or bound.
//!
//! The gateway's two public ports (gRPC and HTTP) are where strangers connect. Each gets a cap
//! below the process's open files limit, leaving [`FILE_RESERVE`] descriptors for what must
//! always answer: the internal gRPC port, the metrics port (which also serves `/healthz` and
//! `/readyz` for the orchestrator's probes), the database pool, logs. A process without the
//! gateway has no public port and no such limits: its callers are the other services.

use crate::config::ServeArgs;
use anyhow::bail;
use hidden_front_conn_guard::ConnectionLimits;
use std::time::Duration;

/// Open files kept back from the public ports' caps.
pub(crate) const FILE_RESERVE: u64 = 1_024;

/// The gateway's public ports, each capped.
const PUBLIC_PORTS: u64 = 2;

/// Each public port's cap when none is configured (and the open files limit holds it): about
/// what a gateway with the default 1 GiB memory limit holds in idle connections (about 20 KiB
/// each in hyper's buffers), beside the default 10,000 WebSocket players.
pub(crate) const DEFAULT_CAP: u64 = 20_000;

/// The limits of the gateway's public ports, or `None` without the gateway. Raises the open
/// files soft limit to its hard limit first (the caps are checked against the result).
pub(crate) fn public_limits(
    args: &ServeArgs,
    gateway: bool,
) -> anyhow::Result<Option<ConnectionLimits>> {
    if !gateway {
        return Ok(None);
    }
    let files = raise_file_limit();
    let max_connections = cap(args.max_connections, files)?;
    let limits = ConnectionLimits {
        handshake: Duration::from_millis(args.handshake_timeout_ms),
        idle: Duration::from_secs(args.idle_timeout_seconds),
        max_connections,
        max_per_peer: args.max_connections_per_peer,
    }
    .validate()
    .map_err(|error| anyhow::anyhow!("the public ports' connection limits: {error}"))?;
    tracing::info!(
        open_files_limit = files,
        max_connections,
        max_per_peer = limits.max_per_peer,
        handshake_ms = args.handshake_timeout_ms,
        idle_seconds = args.idle_timeout_seconds,
        "public ports' connection limits"
    );
    Ok(Some(limits))
}

/// The soft open files limit after raising it to the hard one (what a container runtime or
/// systemd's `LimitNOFILE` allows); the soft limit as it was when it cannot be raised.
fn raise_file_limit() -> u64 {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => limit,
        Err(error) => {
            let (soft, _) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap_or((1_024, 0));
            tracing::warn!(%error, soft, "could not raise the open files limit");
            soft
        }
    }
}

/// Each public port's cap: `configured`, or when 0 [`DEFAULT_CAP`] or, when the open files limit
/// less the reserve cannot hold that on both ports, an equal share of what it holds; an error
/// naming the setting when the limit cannot hold a configured cap.
fn cap(configured: usize, files: u64) -> anyhow::Result<usize> {
    let available = files.saturating_sub(FILE_RESERVE);
    if configured == 0 {
        let share = available / PUBLIC_PORTS;
        if share == 0 {
            bail!(
                "the open files limit is {files}, which leaves nothing for the public ports after \
                 the reserve of {FILE_RESERVE} (for the internal port, metrics, probes and the \
                 database): raise it (ulimit -n, or the container runtime's LimitNOFILE)"
            );
        }
        return Ok(usize::try_from(share.min(DEFAULT_CAP)).unwrap_or(usize::MAX));
    }
    let needed = (configured as u64).saturating_mul(PUBLIC_PORTS);
    if needed > available {
        bail!(
            "--max-connections (HF_MAX_CONNECTIONS) {configured} on each of the {PUBLIC_PORTS} \
             public ports needs {needed} open files plus a reserve of {FILE_RESERVE} (for the \
             internal port, metrics, probes and the database), but the open files limit is \
             {files}: lower HF_MAX_CONNECTIONS, or raise the limit (ulimit -n, or the container \
             runtime's LimitNOFILE)"
        );
    }
    Ok(configured)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caps_leave_the_reserve_under_the_open_files_limit() {
        // Derived: the default cap, or an equal share of what the reserve leaves.
        assert_eq!(cap(0, 1_048_576).unwrap(), 20_000);
        assert_eq!(cap(0, 20_000).unwrap(), (20_000 - 1_024) / 2);
        assert_eq!(cap(0, 1_026).unwrap(), 1);
        let none = cap(0, 1_024).unwrap_err().to_string();
        assert!(none.contains("open files limit is 1024"), "{none}");
        // Configured: accepted while both ports and the reserve fit, refused by name after.
        assert_eq!(cap(10_000, 21_024).unwrap(), 10_000);
        let over = cap(10_001, 21_024).unwrap_err().to_string();
        assert!(over.contains("HF_MAX_CONNECTIONS"), "{over}");
        assert!(over.contains("21024"), "{over}");
        assert!(cap(usize::MAX, u64::MAX).is_err());
    }
}
