//! The session service (the referee) of this process, and the admin API beside it.

use crate::config::ServeArgs;
use anyhow::Context;
use hidden_front_proto::v1::admin_service_server::AdminServiceServer;
use hidden_front_proto::v1::session_service_server::SessionServiceServer;
use hidden_front_session::{AdminService, AdminTokens, PulseConfig, SessionConfig, SessionService};
use hidden_front_store::GameStore;
use std::sync::Arc;
use std::time::Duration;

/// The session's gRPC service on `store`, and its admin API on the same session (store, cache and
/// command path). The session's answers may be large (a whole game's events), so they may reach
/// [`hidden_front_channel::MAX_ANSWER_BYTES`]; requests are held to `--max-message-bytes`.
/// Refuses unusable `--admin-token` values. The service itself comes back too, for its pulse
/// ([`pulse`]).
pub(crate) fn servers(
    args: &ServeArgs,
    store: Arc<dyn GameStore>,
) -> anyhow::Result<(
    SessionServiceServer<SessionService>,
    AdminServiceServer<AdminService>,
    Arc<SessionService>,
)> {
    let tokens =
        AdminTokens::parse(&args.admin_tokens).context("--admin-token (HF_ADMIN_TOKENS)")?;
    if !tokens.is_configured() {
        tracing::info!("no --admin-token configured: the admin API refuses every call");
    }
    let service = Arc::new(SessionService::new(
        store,
        SessionConfig {
            default_presence_lease: Duration::from_secs(args.presence_lease_seconds),
            // Run with its loop (`Application::build`): the service's outages cost no player
            // time (docs/clock.md).
            pulse: Some(PulseConfig::default()),
            ..SessionConfig::default()
        },
    ));
    let admin = AdminServiceServer::new(AdminService::new(Arc::clone(&service), tokens))
        .max_decoding_message_size(args.max_message_bytes)
        .max_encoding_message_size(hidden_front_channel::MAX_ANSWER_BYTES);
    let session = SessionServiceServer::from_arc(Arc::clone(&service))
        .max_decoding_message_size(args.max_message_bytes)
        .max_encoding_message_size(hidden_front_channel::MAX_ANSWER_BYTES);
    Ok((session, admin, service))
}

/// The session's first pulse, before any port serves: an outage that ended with this start (the
/// process was down, and no other replica served meanwhile) is accounted for before the first
/// request can see a deadline. A failure here is not fatal: the store answered a moment ago (it
/// was just opened), and every request pulses first while the pulse is stale.
pub(crate) async fn first_pulse(service: &SessionService) {
    match service.pulse().await {
        Ok(Some(outage)) => tracing::info!(
            outage_seconds = outage.length().as_secs_f64(),
            deadlines_moved = outage.deadlines_moved,
            "started after an outage: its time does not count against any player"
        ),
        Ok(None) => {}
        Err(error) => tracing::warn!(%error, "the first pulse failed; requests will pulse first"),
    }
}
