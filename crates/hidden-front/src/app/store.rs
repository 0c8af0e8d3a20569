//! The game store of this process: Postgres at `DATABASE_URL` (migrated at start unless told
//! otherwise; a pool of `--database-max-connections`), or memory, said loudly, when no URL is
//! given.

use super::roles::Roles;
use crate::config::ServeArgs;
use crate::database;
use hidden_front_store::GameStore;
use hidden_front_store::memory::MemoryStore;
use hidden_front_store::postgres::PostgresStore;
use std::sync::Arc;

/// The store every service of this process shares, and the Postgres behind it if there is one
/// (matchmaking keeps its tables in the same database).
pub(crate) struct Stores {
    pub games: Arc<dyn GameStore>,
    pub postgres: Option<PostgresStore>,
    /// The same store as `games` when it is in memory: matchmaking's memory store records its
    /// lifecycle facts (rating changes) in its outbox.
    pub memory: Option<Arc<MemoryStore>>,
}

/// Opens the store `args` names. A process without the session, the clock or matchmaking (a
/// gateway alone) gets an unused memory store and never touches a database.
pub(crate) async fn open(args: &ServeArgs, roles: Roles) -> anyhow::Result<Stores> {
    if !roles.needs_store() {
        return Ok(memory());
    }
    let Some(url) = &args.database_url else {
        eprintln!(
            "WARNING: DATABASE_URL is not set: games are kept IN MEMORY ONLY. Nothing is durable; \
             every game is lost when this process stops."
        );
        return Ok(memory());
    };
    // The URL was checked with every other setting (`Roles::of`); this is the first touch.
    let (store, target) = database::connect_with(url, args.database_max_connections).await?;
    let store = store.with_snapshot_interval(args.snapshot_interval);
    if args.migrate_on_start {
        for (version, description) in database::migrate(&store, &target).await? {
            tracing::info!(version, description, "applied a migration");
        }
    }
    tracing::info!(
        %target,
        snapshot_interval = args.snapshot_interval,
        max_connections = args.database_max_connections,
        "games are stored in Postgres"
    );
    Ok(Stores {
        games: Arc::new(store.clone()),
        postgres: Some(store),
        memory: None,
    })
}

fn memory() -> Stores {
    let store = Arc::new(MemoryStore::new());
    Stores {
        games: Arc::clone(&store) as Arc<dyn GameStore>,
        postgres: None,
        memory: Some(store),
    }
}
