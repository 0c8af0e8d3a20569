//! One gRPC port: the services it serves, with health and reflection that know exactly those,
//! behind the layers every Hidden Front server has (a span per call, per-RPC metrics, the error
//! contract).

use anyhow::Context;
use axum::http;
use hidden_front_clock::ClockService;
use hidden_front_conn_guard::{ConnectionLimits, GuardedListener, InFlightLayer};
use hidden_front_gateway::PlayerApi;
use hidden_front_matchmaking::{MatchmakingService, Organiser};
use hidden_front_proto::v1::admin_service_server::AdminServiceServer;
use hidden_front_proto::v1::clock_service_server::ClockServiceServer;
use hidden_front_proto::v1::matchmaking_service_server::MatchmakingServiceServer;
use hidden_front_proto::v1::organiser_service_server::OrganiserServiceServer;
use hidden_front_proto::v1::player_service_server::PlayerServiceServer;
use hidden_front_proto::v1::session_service_server::SessionServiceServer;
use hidden_front_proto::v1::webhook_admin_service_server::WebhookAdminServiceServer;
use hidden_front_session::{AdminService, SessionService};
use hidden_front_telemetry::LocalService;
use hidden_front_webhooks::admin::WebhookAdmin;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;
use tonic_health::server::HealthReporter;

/// What one port serves; each service is there or not.
#[derive(Default)]
pub(crate) struct PortServices {
    pub session: Option<SessionServiceServer<SessionService>>,
    /// The admin API, always beside the session.
    pub admin: Option<AdminServiceServer<AdminService>>,
    pub player: Option<PlayerServiceServer<PlayerApi>>,
    pub clock: Option<ClockServiceServer<ClockService>>,
    pub matchmaking: Option<MatchmakingServiceServer<MatchmakingService>>,
    /// The organisers' API, always beside matchmaking.
    pub organiser: Option<OrganiserServiceServer<Organiser>>,
    pub webhooks: Option<WebhookAdminServiceServer<WebhookAdmin>>,
}

/// A bound gRPC port, ready to serve.
pub(crate) struct Port {
    /// What the port is, for errors ("the public gRPC port").
    label: &'static str,
    listener: TcpListener,
    /// The connection limits of a public port (hidden-front-conn-guard); `None` for a port only
    /// the other services call.
    limits: Option<ConnectionLimits>,
    names: Vec<&'static str>,
    services: PortServices,
}

impl Port {
    /// A port (`label`) on `listener` under `limits` serving `services`, whose full names are
    /// `names`.
    pub fn new(
        label: &'static str,
        listener: TcpListener,
        limits: Option<ConnectionLimits>,
        names: Vec<&'static str>,
        services: PortServices,
    ) -> Port {
        Port {
            label,
            listener,
            limits,
            names,
            services,
        }
    }

    /// Serves until `stopped` completes, then drains. Returns the port's health reporter (for
    /// [`crate::health`]) and the serving future.
    pub fn serve(
        self,
        stopped: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<(
        crate::health::PortHealth,
        impl Future<Output = anyhow::Result<()>> + Send,
    )> {
        let (reporter, health_service): (HealthReporter, _) =
            tonic_health::server::health_reporter();
        let (reflection, reflection_v1alpha) = reflection_services(&self.names)?;
        // Every method this port serves has its call counter from the start.
        super::grpc_metrics::register(&self.names);
        super::grpc_metrics::register(&[
            tonic_health::pb::health_server::SERVICE_NAME,
            tonic_reflection::pb::v1::server_reflection_server::SERVICE_NAME,
            tonic_reflection::pb::v1alpha::server_reflection_server::SERVICE_NAME,
        ]);
        let PortServices {
            session,
            admin,
            player,
            clock,
            matchmaking,
            organiser,
            webhooks,
        } = self.services;
        let router = tonic::transport::Server::builder()
            // Each connection's requests in flight, for its idle timeout (a no-op on a port
            // without limits).
            .layer(InFlightLayer)
            // One span per RPC, child of the caller's trace context (W3C `traceparent`).
            .layer(hidden_front_telemetry::GrpcServerLayer)
            // Every call counted and timed by service, method and status code.
            .layer(super::grpc_metrics::GrpcMetricsLayer)
            // Every error answer carries a reason and a bounded message, tonic's own included.
            .layer(hidden_front_api_error::error_contract_layer())
            .http2_keepalive_interval(Some(Duration::from_secs(20)))
            .add_service(health_service)
            .add_service(reflection)
            .add_service(reflection_v1alpha)
            .add_optional_service(session)
            .add_optional_service(admin)
            .add_optional_service(player)
            .add_optional_service(clock)
            .add_optional_service(matchmaking)
            .add_optional_service(organiser)
            .add_optional_service(webhooks);
        let health = crate::health::PortHealth {
            reporter,
            services: self.names,
        };
        let label = self.label;
        let (listener, limits) = (self.listener, self.limits);
        let serving = async move {
            match limits {
                Some(limits) => {
                    let incoming = GuardedListener::new(listener, "grpc", limits).into_incoming();
                    router.serve_with_incoming_shutdown(incoming, stopped).await
                }
                None => {
                    // Replies are small and latency-bound: never let Nagle's algorithm hold
                    // one back.
                    let incoming = tonic::transport::server::TcpIncoming::from(listener)
                        .with_nodelay(Some(true));
                    router.serve_with_incoming_shutdown(incoming, stopped).await
                }
            }
            .with_context(|| format!("serving {label}"))
        };
        Ok((health, serving))
    }
}

/// `server` as this process's own clients call it ([`LocalService`]): behind the layers of
/// [`Port::serve`], in the same order (the call's span, its metrics, the error contract), so a
/// call costs the same code as one that came over a socket, less the socket, HTTP/2 and HPACK.
pub(crate) fn local_service<S>(server: S) -> LocalService
where
    S: tower_service::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    use tower::ServiceExt as _;
    let layered = tower::ServiceBuilder::new()
        .layer(hidden_front_telemetry::GrpcServerLayer)
        .layer(super::grpc_metrics::GrpcMetricsLayer)
        .layer(hidden_front_api_error::error_contract_layer())
        .service(server)
        .map_response(|response| response.map(tonic::body::Body::new))
        .map_err(|never| match never {});
    LocalService::new(layered)
}

/// gRPC server reflection for one port, in both protocol versions: `grpc.reflection.v1` and
/// `grpc.reflection.v1alpha` (grpcurl before 1.8.8, Postman and many client libraries still speak
/// only v1alpha). Both list `services` (the Hidden Front services that port serves), health and
/// the two reflection services, and nothing else, so a client is never shown methods that would
/// answer UNIMPLEMENTED there. The types of every Hidden Front proto stay resolvable.
fn reflection_services(
    services: &[&'static str],
) -> anyhow::Result<(
    tonic_reflection::server::v1::ServerReflectionServer<
        impl tonic_reflection::server::v1::ServerReflection,
    >,
    tonic_reflection::server::v1alpha::ServerReflectionServer<
        impl tonic_reflection::server::v1alpha::ServerReflection,
    >,
)> {
    // The builder is consumed by each `build_*`: one per version, configured alike.
    let builder = || {
        let builder = tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(hidden_front_proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .with_service_name(tonic_health::pb::health_server::SERVICE_NAME)
            .with_service_name(tonic_reflection::pb::v1::server_reflection_server::SERVICE_NAME)
            .with_service_name(
                tonic_reflection::pb::v1alpha::server_reflection_server::SERVICE_NAME,
            );
        services.iter().fold(builder, |builder, service| {
            builder.with_service_name(*service)
        })
    };
    let v1 = builder()
        .build_v1()
        .context("building the reflection service (v1)")?;
    let v1alpha = builder()
        .build_v1alpha()
        .context("building the reflection service (v1alpha)")?;
    Ok((v1, v1alpha))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hidden_front_proto::v1 as pb;
    use hidden_front_proto::v1::session_service_client::SessionServiceClient;
    use hidden_front_session::SessionConfig;
    use hidden_front_store::memory::MemoryStore;
    use hidden_front_telemetry::TracedChannel;
    use std::sync::Arc;
    use tower::ServiceExt as _;

    fn local_session() -> LocalService {
        let service = SessionService::new(Arc::new(MemoryStore::new()), SessionConfig::default());
        local_service(SessionServiceServer::new(service))
    }

    #[tokio::test]
    async fn a_typed_client_calls_the_local_session_and_gets_its_refusals() {
        let mut client = SessionServiceClient::new(TracedChannel::local(local_session()));
        let status = client
            .get_game(pb::GetGameRequest {
                game_id: "not-a-game".into(),
                viewer: 0,
            })
            .await
            .expect_err("a malformed game id is refused");
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
        assert!(hidden_front_api_error::has_reason(&status), "{status:?}");
    }

    #[tokio::test]
    async fn the_local_session_is_behind_the_error_contract_like_its_port() {
        // tonic's own answer to an unknown method has no reason; the port's layer adds one.
        let request = http::Request::builder()
            .uri("/hiddenfront.v1.SessionService/NoSuchMethod")
            .header("content-type", "application/grpc")
            .body(tonic::body::Body::empty())
            .expect("a request");
        let response = local_session()
            .oneshot(request)
            .await
            .expect("the local service answers");
        let status =
            tonic::Status::from_header_map(response.headers()).expect("a trailers-only status");
        assert_eq!(status.code(), tonic::Code::Unimplemented);
        assert!(hidden_front_api_error::has_reason(&status), "{status:?}");
    }
}
