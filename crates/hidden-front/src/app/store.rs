//! The game store of this process: Postgres at `DATABASE_URL` (migrated at start unless told
//! otherwise; a pool of `--database-max-connections`), spread over it and every
//! `--database-shard` when some are given (each migrated and with a pool of that size), or
//! memory, said loudly, when no URL is given.

use super::roles::Roles;
use crate::config::ServeArgs;
use crate::database;
use anyhow::Context as _;
use hidden_front_store::GameStore;
use hidden_front_store::memory::MemoryStore;
use hidden_front_store::postgres::PostgresStore;
use hidden_front_store::sharded::ShardedStore;
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
    let main = open_one(args, url, 0).await?;
    if args.database_shards.is_empty() {
        return Ok(Stores {
            games: Arc::new(main.clone()),
            postgres: Some(main),
            memory: None,
        });
    }
    let mut shards = vec![main.clone()];
    for (index, url) in args.database_shards.iter().enumerate() {
        shards.push(open_one(args, url, index + 1).await?);
    }
    let count = shards.len();
    let sharded = ShardedStore::open(shards)
        .await
        .context("opening the game shards (--database-url, then each --database-shard)")?;
    tracing::info!(
        shards = count,
        "games are spread over {count} Postgres shards"
    );
    Ok(Stores {
        games: Arc::new(sharded),
        postgres: Some(main),
        memory: None,
    })
}

/// One database of the store, connected and (with `--migrate-on-start`) migrated: shard
/// `shard` (0 is `--database-url`, the main database).
async fn open_one(args: &ServeArgs, url: &str, shard: usize) -> anyhow::Result<PostgresStore> {
    let (store, target) = database::connect_with(url, args.database_max_connections)
        .await
        .with_context(|| format!("shard {shard}"))?;
    let store = store.with_snapshot_interval(args.snapshot_interval);
    if args.migrate_on_start {
        for (version, description) in database::migrate(&store, &target)
            .await
            .with_context(|| format!("shard {shard}"))?
        {
            tracing::info!(shard, version, description, "applied a migration");
        }
    }
    tracing::info!(
        shard,
        %target,
        snapshot_interval = args.snapshot_interval,
        max_connections = args.database_max_connections,
        "games are stored in Postgres"
    );
    Ok(store)
}

fn memory() -> Stores {
    let store = Arc::new(MemoryStore::new());
    Stores {
        games: Arc::clone(&store) as Arc<dyn GameStore>,
        postgres: None,
        memory: Some(store),
    }
}
