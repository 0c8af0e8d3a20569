//! The webhook deliveries of this process's session (when `--webhooks-config` is given): the
//! configuration checked at start, the delivery state beside the game store (Postgres when the
//! games are there, memory otherwise), and the operators' `WebhookAdminService`.

use super::store::Stores;
use crate::config::ServeArgs;
use anyhow::{Context, bail};
use hidden_front_proto::v1::webhook_admin_service_server::WebhookAdminServiceServer;
use hidden_front_webhooks::admin::{WebhookAdmin, bearer_tokens};
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
    let tokens = admin_tokens(&args.admin_tokens)?;
    if tokens.is_empty() {
        tracing::warn!("no --admin-token is configured: WebhookAdminService refuses every call");
    }
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
    let deliveries = Deliveries::new(stores.games.clone(), store, config, holder);
    // admin-auth: the shared admin check of services/session replaces `bearer_tokens` at merge.
    let admin = WebhookAdmin::new(deliveries.clone(), bearer_tokens(tokens))
        .server()
        .max_decoding_message_size(args.max_message_bytes);
    Ok(Some(Webhooks { deliveries, admin }))
}

/// `NAME=TOKEN` values, checked: both parts present, names unique, tokens long enough.
pub(crate) fn admin_tokens(values: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    let mut tokens: Vec<(String, String)> = Vec::new();
    for value in values.iter().filter(|v| !v.trim().is_empty()) {
        let (name, token) = value
            .split_once('=')
            .with_context(|| "--admin-token takes NAME=TOKEN (the name is for the log)")?;
        let (name, token) = (name.trim(), token.trim());
        if name.is_empty() || token.len() < 16 {
            bail!("--admin-token {name:?}=...: give a name and a token of at least 16 characters");
        }
        if tokens.iter().any(|(n, _)| n == name) {
            bail!("--admin-token: the name {name:?} is given twice");
        }
        tokens.push((name.to_owned(), token.to_owned()));
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::admin_tokens;

    #[test]
    fn admin_tokens_are_name_equals_token() {
        let tokens = admin_tokens(&["oncall=0123456789abcdef".into()]).unwrap();
        assert_eq!(tokens, [("oncall".into(), "0123456789abcdef".into())]);
        assert!(admin_tokens(&["no-equals".into()]).is_err());
        assert!(admin_tokens(&["a=short".into()]).is_err());
        assert!(admin_tokens(&["a=0123456789abcdef".into(), "a=0123456789abcdeg".into()]).is_err());
    }
}
