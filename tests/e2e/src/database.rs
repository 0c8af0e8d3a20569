//! A fresh Postgres database per test.

use sqlx::{AssertSqlSafe, Connection, PgConnection};
use std::ffi::OsString;
use std::time::Duration;

/// The Postgres used when `DATABASE_URL` is not set at all.
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// How long connecting to Postgres may take before the test fails.
const CONNECT_DEADLINE: Duration = Duration::from_secs(15);

/// A database of its own for one test, `hf_e2e_<random>`, created on the Postgres server named
/// by `DATABASE_URL` and dropped (`WITH (FORCE)`, best effort) when this value is dropped.
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
        let admin_url = admin_url();
        let mut conn = connect_or_explain(&admin_url).await;
        let name = format!("hf_e2e_{}", uuid::Uuid::new_v4().simple());
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
        // The tests kill hidden-front, never Postgres: a commit is as durable for them once
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

    /// The database's URL (what `--database-url` gets).
    pub fn url(&self) -> &str {
        &self.url
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
fn admin_url() -> String {
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
             The end-to-end tests need a real Postgres where they may CREATE DATABASE; they never \
             skip. Start one, or point DATABASE_URL at one, e.g.\n  \
             DATABASE_URL={DEFAULT_DATABASE_URL} cargo test -p hidden-front-e2e\n\
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
