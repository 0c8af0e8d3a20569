//! The session service (the referee) of this process, and the admin API beside it.

use crate::config::ServeArgs;
use anyhow::Context;
use hidden_front_proto::v1::admin_service_server::AdminServiceServer;
use hidden_front_proto::v1::session_service_server::SessionServiceServer;
use hidden_front_session::{AdminService, AdminTokens, SessionConfig, SessionService};
use hidden_front_store::GameStore;
use std::sync::Arc;
use std::time::Duration;

/// The session's gRPC service on `store`, and its admin API on the same session (store, cache and
/// command path). The session's answers may be large (a whole game's events), so they may reach
/// [`hidden_front_channel::MAX_ANSWER_BYTES`]; requests are held to `--max-message-bytes`.
/// Refuses unusable `--admin-token` values.
pub(crate) fn servers(
    args: &ServeArgs,
    store: Arc<dyn GameStore>,
) -> anyhow::Result<(
    SessionServiceServer<SessionService>,
    AdminServiceServer<AdminService>,
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
            ..SessionConfig::default()
        },
    ));
    let admin = AdminServiceServer::new(AdminService::new(Arc::clone(&service), tokens))
        .max_decoding_message_size(args.max_message_bytes)
        .max_encoding_message_size(hidden_front_channel::MAX_ANSWER_BYTES);
    let session = SessionServiceServer::from_arc(service)
        .max_decoding_message_size(args.max_message_bytes)
        .max_encoding_message_size(hidden_front_channel::MAX_ANSWER_BYTES);
    Ok((session, admin))
}
