//! `WebhookAdminService`: where each endpoint's delivery stands, its dead letters, and replays,
//! for operators (`hidden-front webhooks ...`). Every call first passes the [`Authorizer`] the
//! process gives it, so this crate does not decide how operators authenticate.

use crate::deliver::Deliveries;
use crate::store::{DeadLetter, WebhookStoreError, count_by_endpoint};
use hidden_front_api_error::{ApiError, Reason};
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::webhook_admin_service_server::{
    WebhookAdminService, WebhookAdminServiceServer,
};
use hidden_front_time::unix_ms;
use std::sync::Arc;
use std::time::SystemTime;
use tonic::{Request, Response, Status};

/// Decides whether a call may proceed: `Ok` with the operator's name (for the log), or the
/// refusal to answer (UNAUTHENTICATED without credentials, PERMISSION_DENIED for a player's).
pub type Authorizer =
    Arc<dyn Fn(&tonic::metadata::MetadataMap) -> Result<String, Status> + Send + Sync>;

/// The service over one process's [`Deliveries`].
#[derive(Clone)]
pub struct WebhookAdmin {
    deliveries: Deliveries,
    authorize: Authorizer,
}

impl WebhookAdmin {
    /// The service, answering only calls `authorize` lets through.
    pub fn new(deliveries: Deliveries, authorize: Authorizer) -> WebhookAdmin {
        WebhookAdmin {
            deliveries,
            authorize,
        }
    }

    /// The gRPC server of it.
    pub fn server(self) -> WebhookAdminServiceServer<WebhookAdmin> {
        WebhookAdminServiceServer::new(self)
    }

    fn check<T>(&self, request: &Request<T>, what: &str) -> Result<(), Status> {
        let operator = (self.authorize)(request.metadata())?;
        tracing::info!(%operator, call = what, "webhook admin call");
        Ok(())
    }

    /// The configured endpoint `name`, or the refusal naming it.
    fn endpoint(&self, name: &str) -> Result<&crate::config::Endpoint, Status> {
        if name.is_empty() {
            return Err(ApiError::missing_field("endpoint").to_status());
        }
        // The request text checks every string passes (control characters, length) first: a
        // malformed name is the caller's mistake, not an unknown endpoint.
        hidden_front_api_error::text::check(
            "endpoint",
            name,
            hidden_front_api_error::text::TextKind::Name,
        )
        .map_err(|e| e.to_status())?;
        self.deliveries
            .config()
            .endpoints
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| {
                ApiError::new(
                    Reason::WebhookEndpointNotFound,
                    format!(
                        "no webhook endpoint is named {}",
                        hidden_front_api_error::quote(name)
                    ),
                )
                .to_status()
            })
    }
}

fn unavailable(error: WebhookStoreError) -> Status {
    tracing::warn!(%error, "webhook admin: store failed");
    ApiError::new(Reason::StoreUnavailable, "the webhook store failed; retry").to_status()
}

/// Milliseconds since the Unix epoch of a time that may be unknown (0).
fn millis(at: Option<SystemTime>) -> u64 {
    at.map_or(0, unix_ms)
}

fn letter(letter: DeadLetter) -> pb::DeadLetter {
    pb::DeadLetter {
        endpoint: letter.endpoint,
        position: letter.position,
        fact_id: letter.fact_id.to_string(),
        attempts: letter.attempts,
        last_error: letter.last_error,
        first_attempt_at_unix_millis: millis(Some(letter.first_attempt_at)),
        parked_at_unix_millis: millis(Some(letter.parked_at)),
        replay_requested: letter.replay_requested,
    }
}

#[tonic::async_trait]
impl WebhookAdminService for WebhookAdmin {
    async fn list_endpoints(
        &self,
        request: Request<pb::ListEndpointsRequest>,
    ) -> Result<Response<pb::ListEndpointsResponse>, Status> {
        self.check(&request, "ListEndpoints")?;
        let store = self.deliveries.store();
        let states = store.endpoints().await.map_err(unavailable)?;
        let letters = store.dead_letters(None).await.map_err(unavailable)?;
        let counts = count_by_endpoint(&letters);
        let newest = match self.deliveries.outbox().watch_facts().await {
            Ok(watch) => *watch.borrow(),
            Err(error) => {
                tracing::warn!(%error, "webhook admin: outbox position unknown");
                return Err(ApiError::new(
                    Reason::StoreUnavailable,
                    "the game store failed; retry",
                )
                .to_status());
            }
        };
        let now = SystemTime::now();
        let endpoints = self
            .deliveries
            .config()
            .endpoints
            .iter()
            .map(|endpoint| {
                let state = states.iter().find(|s| s.name == endpoint.name);
                let cursor = state.map_or(0, |s| s.cursor);
                let lease_live = state
                    .and_then(|s| s.lease_until)
                    .is_some_and(|until| until > now);
                let mut types: Vec<String> = endpoint
                    .types
                    .iter()
                    .flatten()
                    .map(|t| (*t).to_owned())
                    .collect();
                types.sort();
                pb::WebhookEndpointStatus {
                    name: endpoint.name.clone(),
                    url: endpoint.url.to_string(),
                    cursor,
                    lag: newest.saturating_sub(cursor),
                    last_error: state.and_then(|s| s.last_error.clone()).unwrap_or_default(),
                    last_error_at_unix_millis: millis(state.and_then(|s| s.last_error_at)),
                    lease_holder: match lease_live {
                        true => state
                            .and_then(|s| s.lease_holder.clone())
                            .unwrap_or_default(),
                        false => String::new(),
                    },
                    lease_until_unix_millis: match lease_live {
                        true => millis(state.and_then(|s| s.lease_until)),
                        false => 0,
                    },
                    dead_letters: counts.get(endpoint.name.as_str()).copied().unwrap_or(0),
                    types,
                }
            })
            .collect();
        Ok(Response::new(pb::ListEndpointsResponse { endpoints }))
    }

    async fn list_dead_letters(
        &self,
        request: Request<pb::ListDeadLettersRequest>,
    ) -> Result<Response<pb::ListDeadLettersResponse>, Status> {
        self.check(&request, "ListDeadLetters")?;
        let name = request.into_inner().endpoint;
        let filter = match name.is_empty() {
            true => None,
            false => Some(self.endpoint(&name)?.name.as_str()),
        };
        let letters = self
            .deliveries
            .store()
            .dead_letters(filter)
            .await
            .map_err(unavailable)?;
        Ok(Response::new(pb::ListDeadLettersResponse {
            dead_letters: letters.into_iter().map(letter).collect(),
        }))
    }

    async fn replay_dead_letters(
        &self,
        request: Request<pb::ReplayDeadLettersRequest>,
    ) -> Result<Response<pb::ReplayDeadLettersResponse>, Status> {
        self.check(&request, "ReplayDeadLetters")?;
        let pb::ReplayDeadLettersRequest { endpoint, position } = request.into_inner();
        let name = self.endpoint(&endpoint)?.name.clone();
        let position = (position != 0).then_some(position);
        let requested = self
            .deliveries
            .store()
            .request_replay(&name, position)
            .await
            .map_err(unavailable)?;
        if let (Some(position), 0) = (position, requested) {
            return Err(ApiError::new(
                Reason::DeadLetterNotFound,
                format!("the endpoint {name} has no dead letter at position {position}"),
            )
            .to_status());
        }
        tracing::info!(endpoint = %name, ?position, requested, "webhook replay requested");
        self.deliveries.poke();
        Ok(Response::new(pb::ReplayDeadLettersResponse { requested }))
    }
}
