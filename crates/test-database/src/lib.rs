//! Test support: a throwaway Postgres database per test, for the tests `#[sqlx::test]` cannot
//! serve.
//!
//! `#[sqlx::test]` (with `migrator = "hidden_front_store::postgres::MIGRATOR"`) is the first
//! choice: it reads `DATABASE_URL`, creates a database per test, hands the test a pool and drops
//! the database afterwards. It runs the test on a current-thread runtime and hands out a pool,
//! not a URL, so a test that needs a URL (a spawned `hidden-front serve`, `hidden-front
//! migrate`), several pools on one database standing for several processes, or a
//! multi-threaded runtime (races between processes, `conformance_tests!`) creates its database
//! here instead. Both read the same `DATABASE_URL`, a role that may create databases.
//!
//! | variable | meaning |
//! |---|---|
//! | `DATABASE_URL` | Postgres where the tests may `CREATE DATABASE` (default [`DEFAULT_DATABASE_URL`] only when unset) |
//! | `HF_E2E_KEEP_DATABASE` | `1` keeps the test databases for inspection |

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{AssertSqlSafe, Connection, PgConnection};
use std::ffi::OsString;
use std::str::FromStr;
use std::time::Duration;

/// The Postgres used when `DATABASE_URL` is not set at all.
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// How long connecting to Postgres may take before the test fails.
const CONNECT_DEADLINE: Duration = Duration::from_secs(15);

/// A database of its own for one test, `hf_test_<random>`, created on the Postgres server named
/// by `DATABASE_URL` and dropped (`WITH (FORCE)`, best effort) when this value is dropped, so a
/// failing test leaves nothing behind either.
#[derive(Debug)]
pub struct TestDatabase {
    admin_url: String,
    name: String,
    url: String,
}

impl TestDatabase {
    /// Creates the database. Panics, explaining how to set `DATABASE_URL`, when Postgres cannot
    /// be reached or refuses to create a database.
    pub async fn create() -> TestDatabase {
        TestDatabase::create_on(&admin_url()).await
    }

    /// [`TestDatabase::create`] on the Postgres server of `admin_url` rather than
    /// `DATABASE_URL`'s (a tool's `--database-url`).
    pub async fn create_on(admin_url: &str) -> TestDatabase {
        let admin_url = admin_url.to_string();
        let mut conn = connect_or_explain(&admin_url).await;
        let name = format!("hf_test_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "CREATE DATABASE {name} failed on {}: {e}\nThe user in DATABASE_URL needs the \
                     CREATEDB privilege.",
                    redact(&admin_url)
                )
            });
        // The tests kill their servers, never Postgres: a commit is as durable for them once
        // Postgres has it in memory, and not waiting for each WAL flush keeps the suite fast.
        sqlx::query(AssertSqlSafe(format!(
            "ALTER DATABASE \"{name}\" SET synchronous_commit = off"
        )))
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("configuring database {name} failed: {e}"));
        let _ = conn.close().await;
        let url = with_database(&admin_url, &name);
        TestDatabase {
            admin_url,
            name,
            url,
        }
    }

    /// Creates the database and applies the game store's migrations (every table of the
    /// project: games, matchmaking, webhooks) to it.
    pub async fn migrated(migrator: &sqlx::migrate::Migrator) -> TestDatabase {
        let db = TestDatabase::create().await;
        let pool = db.pool(2).await;
        migrator
            .run(&pool)
            .await
            .unwrap_or_else(|e| panic!("migrating test database {} failed: {e}", db.name));
        pool.close().await;
        db
    }

    /// The database's URL (what `--database-url` gets).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database's connect options.
    pub fn connect_options(&self) -> PgConnectOptions {
        PgConnectOptions::from_str(&self.url)
            .unwrap_or_else(|e| panic!("{} is not a Postgres URL: {e}", redact(&self.url)))
    }

    /// A pool of at most `max` connections on the database: a stand-in for one process.
    pub async fn pool(&self, max: u32) -> PgPool {
        PgPoolOptions::new()
            .max_connections(max)
            .acquire_timeout(Duration::from_secs(60))
            .connect_with(self.connect_options())
            .await
            .unwrap_or_else(|e| panic!("cannot connect to test database {}: {e}", self.name))
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A direct connection, for checking what the servers stored.
    pub async fn connect(&self) -> PgConnection {
        connect_or_explain(&self.url).await
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if std::env::var_os("HF_E2E_KEEP_DATABASE").is_some_and(|v| v == "1") {
            eprintln!("keeping test database {}", self.name);
            return;
        }
        let admin_url = self.admin_url.clone();
        let name = self.name.clone();
        // Drop may run inside a tokio runtime, where blocking on another one is not allowed: use
        // a thread of its own with a small runtime.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(async {
                let connect = PgConnection::connect(&admin_url);
                let mut conn = tokio::time::timeout(CONNECT_DEADLINE, connect)
                    .await
                    .map_err(|_| "connect timed out".to_string())?
                    .map_err(|e| e.to_string())?;
                sqlx::query(AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                )))
                .execute(&mut conn)
                .await
                .map_err(|e| e.to_string())?;
                let _ = conn.close().await;
                Ok::<(), String>(())
            })
        })
        .join();
        match dropped {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("could not drop test database {}: {e}", self.name),
            Err(_) => eprintln!("could not drop test database {}: panicked", self.name),
        }
    }
}

/// `DATABASE_URL`, or the default only when the variable is not set at all.
pub fn admin_url() -> String {
    match std::env::var_os("DATABASE_URL") {
        None => DEFAULT_DATABASE_URL.to_string(),
        Some(value) => {
            let value: OsString = value;
            let text = value
                .into_string()
                .unwrap_or_else(|_| panic!("DATABASE_URL is not valid UTF-8"));
            assert!(
                !text.trim().is_empty(),
                "DATABASE_URL is set but empty; set it to a Postgres URL such as \
                 {DEFAULT_DATABASE_URL}, or unset it to use that default"
            );
            text
        }
    }
}

async fn connect_or_explain(url: &str) -> PgConnection {
    let explain = |why: String| -> ! {
        panic!(
            "cannot connect to Postgres at {}: {why}\n\
             These tests need a real Postgres where they may CREATE DATABASE; they never \
             skip. Start one, or point DATABASE_URL at one, e.g.\n  \
             DATABASE_URL={DEFAULT_DATABASE_URL} cargo nextest run\n\
             (DATABASE_URL defaults to that URL only when it is not set.)",
            redact(url)
        )
    };
    match tokio::time::timeout(CONNECT_DEADLINE, PgConnection::connect(url)).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => explain(e.to_string()),
        Err(_) => explain(format!("no answer within {CONNECT_DEADLINE:?}")),
    }
}

/// `url` with its path (the database name) replaced by `database`; query parameters are kept.
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[authority_start..]
        .find('/')
        .map_or(base.len(), |i| authority_start + i);
    let mut out = format!("{}/{database}", &base[..path_start]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// `url` without its password, for messages.
fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => match rest[..at].split_once(':') {
            Some((user, _password)) => {
                format!("{}{user}:***{}", &url[..scheme_end], &rest[at..])
            }
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_replace_the_path_only() {
        assert_eq!(
            with_database("postgres://u@h:5432/postgres", "x"),
            "postgres://u@h:5432/x"
        );
        assert_eq!(
            with_database("postgres://u:p@h/db?sslmode=disable", "x"),
            "postgres://u:p@h/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "x"), "postgres://h/x");
        assert_eq!(
            with_database("postgres:///db?host=/run/pg", "x"),
            "postgres:///x?host=/run/pg"
        );
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
    }
}
