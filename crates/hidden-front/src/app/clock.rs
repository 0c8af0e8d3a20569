//! The clock of this process: its read-only gRPC API and its firing loop, aimed at the session
//! by its route (this process's own, called directly, or another's over gRPC).

use crate::config::ServeArgs;
use hidden_front_clock::{Clock, ClockConfig, ClockService, SessionTarget};
use hidden_front_proto::v1::clock_service_server::ClockServiceServer;
use hidden_front_store::{GameStore, TimerStore};
use std::sync::Arc;
use std::time::Duration;

/// The clock's API and its firing loop (run with [`Clock::run`]).
pub(crate) fn parts(
    args: &ServeArgs,
    store: Arc<dyn GameStore>,
    session: &super::session::SessionRoute,
) -> anyhow::Result<(ClockServiceServer<ClockService>, Clock)> {
    let session = session.client()?;
    let config = ClockConfig {
        owner: args
            .clock_id
            .clone()
            .unwrap_or_else(|| ClockConfig::default().owner),
        poll_interval: Duration::from_millis(args.clock_poll_ms.max(1)),
        lease: Duration::from_secs(args.clock_lease_seconds.max(1)),
        ..ClockConfig::default()
    };
    let target = SessionTarget::new(session, config.retry_delay);
    let timers: Arc<dyn TimerStore> = store;
    let clock = Clock::new(timers.clone(), Arc::new(target), config.clone());
    let api = ClockServiceServer::new(ClockService::new(timers, config.owner, clock.stats()))
        .max_decoding_message_size(args.max_message_bytes);
    Ok((api, clock))
}
