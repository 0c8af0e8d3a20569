//! The Postgres of `DATABASE_URL`, as `serve` and `migrate` reach it: one connection is tried
//! first, within a few seconds, so that a wrong URL is said at once and plainly (which host,
//! port, database and user, and why: connection refused, authentication failed, no such
//! database) instead of after a pool's retries as a bare timeout. No message ever holds the
//! password of the URL.

use hidden_front_store::postgres::{MIGRATOR, PostgresStore};
use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use std::collections::HashSet;
use std::fmt;
use std::io::ErrorKind;
use std::str::FromStr;
use std::time::Duration;

/// How long the first connection may take before the database counts as unreachable.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a `DATABASE_URL` points, without its password: what every message names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Database name (Postgres defaults it to the user's name).
    pub database: String,
    /// User name.
    pub user: String,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "database {:?} on {}:{} (user {:?})",
            self.database, self.host, self.port, self.user
        )
    }
}

/// Why the database of `DATABASE_URL` cannot be used: each says where and what to do.
#[derive(Debug, thiserror::Error)]
pub enum DatabaseError {
    /// The URL names another database system (`mysql://`, `sqlite:`...): Hidden Front stores its
    /// games in Postgres only, and without this check the driver would try the host as a
    /// Postgres server and report a confusing "cannot connect to Postgres".
    #[error(
        "DATABASE_URL has the scheme {0:?}, not postgres: Hidden Front stores games in Postgres only; give a postgres:// or postgresql:// URL (postgres://USER[:PASSWORD]@HOST:PORT/DATABASE)"
    )]
    NotPostgres(String),
    /// The URL does not parse (the reason never repeats the URL).
    #[error(
        "DATABASE_URL is not a Postgres URL like postgres://USER[:PASSWORD]@HOST:PORT/DATABASE: {0}"
    )]
    BadUrl(String),
    /// Nothing listens at the host and port.
    #[error(
        "cannot connect to Postgres at {}:{}: connection refused (is Postgres running there, and are the host and port of DATABASE_URL right?)",
        .0.host, .0.port
    )]
    Refused(Target),
    /// The host and port could not be reached for another reason (unknown host, no route).
    #[error("cannot connect to Postgres at {host}:{port}: {why}", host = .0.host, port = .0.port, why = .1)]
    Unreachable(Target, String),
    /// No answer in time.
    #[error(
        "cannot connect to Postgres at {}:{}: no answer within {} s",
        .0.host, .0.port, PROBE_TIMEOUT.as_secs()
    )]
    Timeout(Target),
    /// The server refused the user (wrong password, unknown role, `pg_hba.conf`).
    #[error(
        "Postgres at {host}:{port} refused user {user:?}: authentication failed ({why}); check the user and password of DATABASE_URL",
        host = .0.host, port = .0.port, user = .0.user, why = .1
    )]
    Authentication(Target, String),
    /// The server has no database of that name.
    #[error(
        "database {:?} does not exist on Postgres at {}:{}; create it (createdb) or fix the database name of DATABASE_URL",
        .0.database, .0.host, .0.port
    )]
    NoDatabase(Target),
    /// Anything else the server or the driver said.
    #[error("{0}: {1}")]
    Other(Target, String),
    /// Applying the migrations failed.
    #[error("applying the migrations to {0}: {1}")]
    Migration(Target, String),
}

/// The schemes of a Postgres URL (what `sqlx` and `libpq` accept).
const POSTGRES_SCHEMES: [&str; 2] = ["postgres", "postgresql"];

/// The connection options of `url`, refused unless it is a `postgres://` or `postgresql://` URL
/// that parses. Touches nothing: `serve` checks its settings with this before it connects
/// anywhere, so a wrong URL is said before any side effect.
pub fn check_url(url: &str) -> Result<PgConnectOptions, DatabaseError> {
    let scheme = url.split_once(':').map(|(scheme, _)| scheme.trim());
    match scheme {
        Some(scheme) if POSTGRES_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) => {}
        // Only the scheme is echoed: the rest may hold a password.
        Some(scheme)
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            return Err(DatabaseError::NotPostgres(scheme.to_string()));
        }
        _ => {
            return Err(DatabaseError::BadUrl(
                "it does not start with postgres:// or postgresql://".to_string(),
            ));
        }
    }
    PgConnectOptions::from_str(url).map_err(|e| DatabaseError::BadUrl(scrub(url, &e.to_string())))
}

/// The store on the database of `url`, after one connection proved it usable, with a pool of
/// at most [`hidden_front_store::postgres::DEFAULT_MAX_CONNECTIONS`].
pub async fn connect(url: &str) -> Result<(PostgresStore, Target), DatabaseError> {
    connect_with(url, hidden_front_store::postgres::DEFAULT_MAX_CONNECTIONS).await
}

/// [`connect`] with a pool of at most `max_connections` (`--database-max-connections`).
pub async fn connect_with(
    url: &str,
    max_connections: u32,
) -> Result<(PostgresStore, Target), DatabaseError> {
    let options = check_url(url)?;
    let target = Target {
        host: options.get_host().to_string(),
        port: options.get_port(),
        database: options
            .get_database()
            .unwrap_or(options.get_username())
            .to_string(),
        user: options.get_username().to_string(),
    };
    let explain = |error: sqlx::Error| explain(url, &target, error);
    match tokio::time::timeout(PROBE_TIMEOUT, PgConnection::connect_with(&options)).await {
        Err(_) => return Err(DatabaseError::Timeout(target)),
        Ok(Err(error)) => return Err(explain(error)),
        Ok(Ok(probe)) => {
            let _ = probe.close().await;
        }
    }
    let store = PostgresStore::connect_with(url, max_connections)
        .await
        .map_err(|e| DatabaseError::Other(target.clone(), scrub(url, &e.to_string())))?;
    Ok((store, target))
}

/// Applies the pending migrations; the `(version, description)` of each one applied now, in
/// order (empty when the schema was up to date).
pub async fn migrate(
    store: &PostgresStore,
    target: &Target,
) -> Result<Vec<(i64, String)>, DatabaseError> {
    let failed = |e: String| DatabaseError::Migration(target.clone(), e);
    let before = applied_versions(store)
        .await
        .map_err(|e| failed(e.to_string()))?;
    store.migrate().await.map_err(|e| failed(e.to_string()))?;
    Ok(MIGRATOR
        .iter()
        .filter(|m| !m.migration_type.is_down_migration() && !before.contains(&m.version))
        .map(|m| (m.version, m.description.to_string()))
        .collect())
}

/// The versions recorded as applied (none when the bookkeeping table does not exist yet).
async fn applied_versions(store: &PostgresStore) -> Result<HashSet<i64>, sqlx::Error> {
    let table = &MIGRATOR.table_name;
    let exists: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
        .bind(table.as_ref())
        .fetch_one(&store.pool())
        .await?;
    if !exists {
        return Ok(HashSet::new());
    }
    let versions: Vec<i64> =
        // The table name is the migrator's own constant, not input.
        sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT version FROM {table} WHERE success")))
            .fetch_all(&store.pool())
            .await?;
    Ok(versions.into_iter().collect())
}

/// What a failed first connection means for the operator.
fn explain(url: &str, target: &Target, error: sqlx::Error) -> DatabaseError {
    let target = target.clone();
    if let sqlx::Error::Io(io) = &error {
        return match io.kind() {
            ErrorKind::ConnectionRefused => DatabaseError::Refused(target),
            _ => DatabaseError::Unreachable(target, scrub(url, &io.to_string())),
        };
    }
    if let Some(db) = error.as_database_error() {
        let said = scrub(url, db.message());
        return match db.code().as_deref() {
            // invalid_password, invalid_authorization_specification (no such role, pg_hba).
            Some("28P01" | "28000") => DatabaseError::Authentication(target, said),
            // invalid_catalog_name
            Some("3D000") => DatabaseError::NoDatabase(target),
            _ => DatabaseError::Other(target, said),
        };
    }
    DatabaseError::Other(target, scrub(url, &error.to_string()))
}

/// `text` with the password of `url` (if it has one, as written or percent-decoded) masked:
/// nothing the driver says may carry it into a log.
fn scrub(url: &str, text: &str) -> String {
    let Some(password) = password_of(url) else {
        return text.to_string();
    };
    let mut text = text.to_string();
    for form in [percent_decoded(&password), password] {
        if !form.is_empty() {
            text = text.replace(&form, "***");
        }
    }
    text
}

/// The password of a `scheme://user:password@host/...` URL, as written.
fn password_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    let (_, password) = userinfo.split_once(':')?;
    Some(password.to_string())
}

/// `%XX` escapes decoded (invalid ones kept as written).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_of_a_url_is_masked_in_any_text() {
        let url = "postgres://app:s%40cret@db.internal:5432/games?sslmode=disable";
        assert_eq!(password_of(url).as_deref(), Some("s%40cret"));
        assert_eq!(
            scrub(url, "failed for s@cret and s%40cret"),
            "failed for *** and ***"
        );
        assert_eq!(password_of("postgres://app@db/games"), None);
        assert_eq!(password_of("postgres://db/games"), None);
        assert_eq!(scrub("postgres://db/games", "as is"), "as is");
    }

    #[test]
    fn only_postgres_urls_are_accepted() {
        for url in [
            "postgres://app@db/games",
            "postgresql://app@db:5433/games",
            "POSTGRES://app@db/games",
        ] {
            assert!(check_url(url).is_ok(), "{url}");
        }
        let mysql = check_url("mysql://root:pw@y/z").unwrap_err().to_string();
        assert!(
            mysql.contains("\"mysql\"") && mysql.contains("DATABASE_URL") && !mysql.contains("pw"),
            "{mysql}"
        );
        assert!(matches!(
            check_url("sqlite:games.db"),
            Err(DatabaseError::NotPostgres(_))
        ));
        assert!(matches!(
            check_url("db:5432/games"),
            Err(DatabaseError::NotPostgres(_))
        ));
        assert!(matches!(
            check_url("no scheme"),
            Err(DatabaseError::BadUrl(_))
        ));
    }

    #[test]
    fn a_target_names_host_port_database_and_user() {
        let target = Target {
            host: "db".into(),
            port: 5433,
            database: "games".into(),
            user: "app".into(),
        };
        assert_eq!(
            target.to_string(),
            r#"database "games" on db:5433 (user "app")"#
        );
        let refused = DatabaseError::Refused(target).to_string();
        assert!(refused.contains("db:5433") && refused.contains("connection refused"));
    }
}
