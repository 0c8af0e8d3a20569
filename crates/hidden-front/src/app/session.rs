//! The session service (the referee) of this process, and the admin API beside it.

use crate::config::ServeArgs;
use anyhow::Context;
use hidden_front_proto::v1::admin_service_server::AdminServiceServer;
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use hidden_front_proto::v1::session_service_server::SessionServiceServer;
use hidden_front_session::{AdminService, AdminTokens, PulseConfig, SessionConfig, SessionService};
use hidden_front_store::GameStore;
use hidden_front_telemetry::{LocalService, TracedChannel};
use std::sync::Arc;
use std::time::Duration;

/// How this process's gateway, clock and matchmaking reach the session.
#[derive(Clone)]
pub(crate) enum SessionRoute {
    /// The session of another process (`--session-url`, or no session here): gRPC over HTTP/2,
    /// balanced over every address of its host.
    Remote(String),
    /// The session of this process. The clock, matchmaking and the gateway's other calls reach
    /// its server as a tower service behind its port's layers ([`super::grpc::local_service`]):
    /// the same requests, handlers, spans, metrics and error mapping as over a socket, none of
    /// the loopback connection's HTTP/2 framing, HPACK and socket writes. The gateway's actions
    /// and followed games call the session itself (`super::referee`), with no protobuf on the
    /// way (docs/benchmarks.md).
    Local {
        /// Its server behind the port's layers.
        service: LocalService,
        /// The session itself.
        session: Arc<SessionService>,
    },
}

impl SessionRoute {
    /// A client of the session by this route, with the answer limit every session client has.
    pub(crate) fn client(&self) -> anyhow::Result<SessionServiceClient<TracedChannel>> {
        self.client_and_health().map(|(client, _)| client)
    }

    /// [`Self::client`], and how many of the session's addresses serve (the gateway's readiness
    /// follows it). The session of this process has one, always there: its health is the
    /// store's, which this process checks itself.
    pub(crate) fn client_and_health(
        &self,
    ) -> anyhow::Result<(
        SessionServiceClient<TracedChannel>,
        hidden_front_channel::Serving,
    )> {
        match self {
            SessionRoute::Remote(url) => hidden_front_channel::session_client_and_health(url)
                .with_context(|| format!("session URL {url:?}")),
            SessionRoute::Local { service, .. } => Ok((
                SessionServiceClient::new(TracedChannel::local(service.clone()))
                    .max_decoding_message_size(hidden_front_channel::MAX_ANSWER_BYTES),
                tokio::sync::watch::channel(Some(1)).1,
            )),
        }
    }
}

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
