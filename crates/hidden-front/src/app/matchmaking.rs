//! The matchmaking service of this process, on the process's Postgres (or in memory), calling
//! the session by its route, making invite links under `invite_base_url`.

use hidden_front_matchmaking::policy::RatingIntegrity;
use hidden_front_matchmaking::store::MatchStore;
use hidden_front_matchmaking::store::memory::MemoryMatchStore;
use hidden_front_matchmaking::store::postgres::PostgresMatchStore;
use hidden_front_matchmaking::{MatchmakingConfig, MatchmakingService};
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
