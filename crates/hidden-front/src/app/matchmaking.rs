//! The matchmaking service of this process, on the process's Postgres (or in memory), calling
//! the session by its route, making invite links under `invite_base_url`.

use hidden_front_matchmaking::policy::RatingIntegrity;
use hidden_front_matchmaking::store::MatchStore;
use hidden_front_matchmaking::store::memory::MemoryMatchStore;
use hidden_front_matchmaking::store::postgres::PostgresMatchStore;
use hidden_front_matchmaking::{MatchmakingConfig, MatchmakingService, Organiser};
use hidden_front_proto::v1::organiser_service_server::OrganiserServiceServer;
use hidden_front_store::lifecycle::FactSink;
use hidden_front_store::memory::MemoryStore;
use hidden_front_store::postgres::PostgresStore;
use std::sync::Arc;

/// The matchmaking service; its gRPC server and its background loops come from it.
pub(crate) fn service(
    postgres: Option<&PostgresStore>,
    memory: Option<&Arc<MemoryStore>>,
    session: &super::session::SessionRoute,
    invite_base_url: &str,
    rating_integrity: RatingIntegrity,
) -> anyhow::Result<MatchmakingService> {
    let store: Arc<dyn MatchStore> = match postgres {
        Some(postgres) => Arc::new(PostgresMatchStore::from_pool(postgres.pool().clone())),
        None => match memory {
            Some(outbox) => Arc::new(MemoryMatchStore::with_fact_sink(
                Arc::clone(outbox) as Arc<dyn FactSink>
            )),
            None => Arc::new(MemoryMatchStore::new()),
        },
    };
    let session = session.client()?;
    Ok(MatchmakingService::new(
        store,
        session,
        MatchmakingConfig {
            invite_base_url: invite_base_url.to_string(),
            rating_integrity,
            ..MatchmakingConfig::default()
        },
    ))
}

/// The organisers' API beside `matchmaking`, open to the operator tokens of `--admin-token`
/// (checked before anything was opened, `roles.rs`).
pub(crate) fn organiser(
    matchmaking: &MatchmakingService,
    args: &crate::config::ServeArgs,
) -> anyhow::Result<OrganiserServiceServer<Organiser>> {
    use anyhow::Context as _;
    let tokens = hidden_front_session::AdminTokens::parse(&args.admin_tokens)
        .context("--admin-token (HF_ADMIN_TOKEN)")?;
    Ok(Organiser::new(matchmaking.clone(), tokens)
        .server()
        .max_decoding_message_size(args.max_message_bytes))
}
