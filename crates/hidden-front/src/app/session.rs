//! The session service (the referee) of this process.

use crate::config::ServeArgs;
use hidden_front_proto::v1::session_service_server::SessionServiceServer;
use hidden_front_session::{SessionConfig, SessionService};
use hidden_front_store::GameStore;
use std::sync::Arc;
use std::time::Duration;

/// The session's gRPC service on `store`. Its answers may be large (a whole game's events), so
/// they may reach [`hidden_front_channel::MAX_ANSWER_BYTES`]; requests are held to
/// `--max-message-bytes`.
pub(crate) fn server(
    args: &ServeArgs,
    store: Arc<dyn GameStore>,
) -> SessionServiceServer<SessionService> {
    let service = SessionService::new(
        store,
        SessionConfig {
            default_presence_lease: Duration::from_secs(args.presence_lease_seconds),
            ..SessionConfig::default()
        },
    );
    SessionServiceServer::new(service)
        .max_decoding_message_size(args.max_message_bytes)
        .max_encoding_message_size(hidden_front_channel::MAX_ANSWER_BYTES)
}
