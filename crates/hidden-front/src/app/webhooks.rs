//! The webhook deliveries of this process's session (when `--webhooks-config` is given): the
//! configuration checked at start, the delivery state beside the game store (Postgres when the
//! games are there, memory otherwise), and the operators' `WebhookAdminService`.

use super::store::Stores;
use crate::config::ServeArgs;
use anyhow::{Context, bail};
use hidden_front_proto::v1::webhook_admin_service_server::WebhookAdminServiceServer;
use hidden_front_session::AdminTokens;
use hidden_front_webhooks::admin::{Authorizer, WebhookAdmin};
use hidden_front_webhooks::postgres::PgWebhookStore;
use hidden_front_webhooks::store::WebhookStore;
use hidden_front_webhooks::{Deliveries, MemoryWebhookStore, WebhooksConfig};
use std::sync::Arc;

/// The deliverers (started with the serving) and their admin API.
pub(crate) struct Webhooks {
    pub deliveries: Deliveries,
    pub admin: WebhookAdminServiceServer<WebhookAdmin>,
}

/// Reads `--webhooks-config` (refusing a bad file before anything is bound) and builds the
/// deliveries; `None` without the flag.
pub(crate) fn build(
    args: &ServeArgs,
    session_here: bool,
    stores: &Stores,
) -> anyhow::Result<Option<Webhooks>> {
    let Some(path) = &args.webhooks_config else {
        return Ok(None);
    };
    if !session_here {
        bail!(
            "--webhooks-config (HF_WEBHOOKS_CONFIG) is for the process that runs the session: \
             it delivers the session's lifecycle feed"
        );
    }
    let config = WebhooksConfig::load(path)?;
    let tokens =
        AdminTokens::parse(&args.admin_tokens).context("--admin-token (HF_ADMIN_TOKENS)")?;
    let store: Arc<dyn WebhookStore> = match &stores.postgres {
        Some(postgres) => Arc::new(PgWebhookStore::new(postgres.pool().clone())),
        None => Arc::new(MemoryWebhookStore::new()),
    };
    let holder = args
        .webhooks_holder
        .clone()
        .unwrap_or_else(|| format!("webhooks-{}", uuid::Uuid::new_v4().simple()));
    tracing::info!(
        endpoints = config.endpoints.len(),
        %holder,
        "delivering the lifecycle feed to webhooks"
    );
    register_at_zero(&config);
    let deliveries = Deliveries::new(stores.games.clone(), store, config, holder);
    // The admin API's own operator check: the same tokens, the same refusals.
    let authorize: Authorizer =
        Arc::new(move |metadata| tokens.authenticate(metadata).map(|operator| operator.name));
    let admin = WebhookAdmin::new(deliveries.clone(), authorize)
        .server()
        .max_decoding_message_size(args.max_message_bytes);
    Ok(Some(Webhooks { deliveries, admin }))
}

/// Each configured endpoint's delivery and dead-letter counters at 0 from the start, so the
/// dashboards and alerts read 0, not "no data", before an endpoint's first delivery or failure.
fn register_at_zero(config: &WebhooksConfig) {
    use hidden_front_metrics_names as names;
    for endpoint in &config.endpoints {
        let name = endpoint.name.clone();
        for outcome in names::WEBHOOK_OUTCOMES {
            metrics::counter!(
                names::WEBHOOK_DELIVERIES_TOTAL,
                names::WEBHOOK_ENDPOINT => name.clone(),
                names::WEBHOOK_OUTCOME => outcome,
            )
            .increment(0);
        }
        metrics::counter!(names::WEBHOOK_DEAD_LETTERS_TOTAL, names::WEBHOOK_ENDPOINT => name)
            .increment(0);
    }
}
