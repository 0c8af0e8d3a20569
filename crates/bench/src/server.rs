//! The server under test: `hidden-front serve` as a child process, a fresh Postgres database for
//! it, and its resident memory.

use crate::BenchError;
use sqlx::{AssertSqlSafe, Connection, PgConnection};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

/// The Postgres the bench uses when no admin URL is given.
pub const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// How long the server may take to print its addresses.
const START_DEADLINE: Duration = Duration::from_secs(60);

/// A database of the bench's own, `hf_bench_<random>`, created on a Postgres server with the
/// server's default durability (`synchronous_commit` as configured, normally `on`).
#[derive(Debug)]
pub struct FreshDatabase {
    admin_url: String,
    name: String,
    url: String,
}

impl FreshDatabase {
    /// Creates the database through `admin_url` (a user with CREATEDB).
    pub async fn create(admin_url: &str, prefix: &str) -> Result<FreshDatabase, BenchError> {
        let mut conn =
            PgConnection::connect(admin_url)
                .await
                .map_err(|source| BenchError::Database {
                    what: format!("connecting to {}", redact(admin_url)),
                    source,
                })?;
        let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&mut conn)
            .await
            .map_err(|source| BenchError::Database {
                what: format!("CREATE DATABASE {name}"),
                source,
            })?;
        let _ = conn.close().await;
        let url = with_database(admin_url, &name);
        Ok(FreshDatabase {
            admin_url: admin_url.to_string(),
            name,
            url,
        })
    }

    /// The database's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Drops the database (closing whatever is still connected to it).
    pub async fn drop_database(self) -> Result<(), BenchError> {
        let mut conn = PgConnection::connect(&self.admin_url)
            .await
            .map_err(|source| BenchError::Database {
                what: format!("connecting to {}", redact(&self.admin_url)),
                source,
            })?;
        sqlx::query(AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
            self.name
        )))
        .execute(&mut conn)
        .await
        .map_err(|source| BenchError::Database {
            what: format!("DROP DATABASE {}", self.name),
            source,
        })?;
        let _ = conn.close().await;
        Ok(())
    }
}

/// `url` with its database (the path) replaced by `name`.
pub(crate) fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    // The path starts at the first '/' after "scheme://authority".
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let base = match base[after_scheme..].find('/') {
        Some(slash) => &base[..after_scheme + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{base}/{name}?{query}"),
        None => format!("{base}/{name}"),
    }
}

/// `url` without a password, for messages.
pub(crate) fn redact(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// Which store the spawned server uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// Games in memory (nothing durable).
    Memory,
    /// Games in Postgres, in a fresh database of the bench's own.
    Postgres,
}

/// A `hidden-front serve` child process on free ports.
#[derive(Debug)]
pub struct SpawnedServer {
    child: Child,
    pid: u32,
    public: SocketAddr,
    internal: SocketAddr,
    metrics: Option<SocketAddr>,
    http: Option<SocketAddr>,
    database: Option<FreshDatabase>,
    /// The databases of shards 1, 2, ... (`--database-shards`).
    more_shards: Vec<FreshDatabase>,
}

impl SpawnedServer {
    /// Starts `binary serve` with the given store (a fresh database on `admin_url` for
    /// Postgres) and extra arguments, and waits until it prints its addresses.
    pub async fn start(
        binary: &Path,
        store: StoreKind,
        admin_url: &str,
        extra_args: &[String],
    ) -> Result<SpawnedServer, BenchError> {
        SpawnedServer::start_sharded(binary, store, admin_url, 1, extra_args).await
    }

    /// [`SpawnedServer::start`] with the games spread over `shards` fresh databases (Postgres
    /// only; the first is the main one, the others `--database-shard`s).
    pub async fn start_sharded(
        binary: &Path,
        store: StoreKind,
        admin_url: &str,
        shards: usize,
        extra_args: &[String],
    ) -> Result<SpawnedServer, BenchError> {
        let database = match store {
            StoreKind::Memory => None,
            StoreKind::Postgres => Some(FreshDatabase::create(admin_url, "hf_bench").await?),
        };
        let mut more_shards = Vec::new();
        if store == StoreKind::Postgres {
            for _ in 1..shards {
                more_shards.push(FreshDatabase::create(admin_url, "hf_bench_shard").await?);
            }
        }
        let spawn_error = |reason: String| BenchError::Spawn {
            binary: binary.to_path_buf(),
            reason,
        };
        let mut command = Command::new(binary);
        command
            .arg("serve")
            .args(["--listen", "127.0.0.1:0"])
            .args(["--internal-listen", "127.0.0.1:0"])
            .args(["--http-listen", "127.0.0.1:0"])
            .args(["--metrics-listen", "127.0.0.1:0"])
            .args(extra_args)
            .env_remove("DATABASE_URL")
            // Errors only: a server stopped right after thousands of streams closed logs a
            // warning per presence report it can no longer deliver. HF_LOG overrides.
            .env(
                "HF_LOG",
                std::env::var("HF_LOG").unwrap_or_else(|_| "error".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        if let Some(database) = &database {
            command.env("DATABASE_URL", database.url());
        }
        command.env_remove("HF_DATABASE_SHARDS");
        for shard in &more_shards {
            command.args(["--database-shard", shard.url()]);
        }
        let mut child = command.spawn().map_err(|e| spawn_error(e.to_string()))?;
        let pid = child
            .id()
            .ok_or_else(|| spawn_error("exited at once".into()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| spawn_error("no stdout".into()))?;
        let mut lines = BufReader::new(stdout).lines();
        let mut internal = None;
        let mut metrics = None;
        let mut http = None;
        let read = async {
            while let Some(line) = lines.next_line().await.map_err(|e| e.to_string())? {
                if let Some(addr) = line.strip_prefix("hidden-front metrics listening on ") {
                    metrics = addr.trim().parse::<SocketAddr>().ok();
                } else if let Some(addr) = line.strip_prefix("hidden-front http listening on ") {
                    http = addr.trim().parse::<SocketAddr>().ok();
                } else if let Some(addr) = line.strip_prefix("hidden-front internal listening on ")
                {
                    internal = Some(
                        addr.trim()
                            .parse::<SocketAddr>()
                            .map_err(|e| e.to_string())?,
                    );
                } else if let Some(addr) = line.strip_prefix("hidden-front listening on ") {
                    return addr.trim().parse::<SocketAddr>().map_err(|e| e.to_string());
                }
            }
            Err("stdout closed before the listening line".to_string())
        };
        let public = tokio::time::timeout(START_DEADLINE, read)
            .await
            .map_err(|_| spawn_error(format!("no listening line within {START_DEADLINE:?}")))?
            .map_err(spawn_error)?;
        let internal = internal.ok_or_else(|| {
            spawn_error("no internal port printed (is the gateway running in-process?)".into())
        })?;
        // Keep draining stdout so the child never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(SpawnedServer {
            child,
            pid,
            public,
            internal,
            metrics,
            http,
            database,
            more_shards,
        })
    }

    /// The metrics endpoint's address, when the server printed it.
    pub fn metrics(&self) -> Option<SocketAddr> {
        self.metrics
    }

    /// The public gRPC address (the gateway's `PlayerService`).
    pub fn public(&self) -> SocketAddr {
        self.public
    }

    /// The gateway's HTTP listener (the page and the WebSocket API), when it printed it.
    pub fn http(&self) -> Option<SocketAddr> {
        self.http
    }

    /// The internal gRPC address (the session's `SessionService`).
    pub fn internal(&self) -> SocketAddr {
        self.internal
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The database the child uses, if any.
    pub fn database(&self) -> Option<&FreshDatabase> {
        self.database.as_ref()
    }

    /// Stops the child (SIGTERM, then SIGKILL after 15 s) and drops its databases.
    pub async fn stop(mut self) -> Result<(), BenchError> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status()
            .await;
        if tokio::time::timeout(Duration::from_secs(15), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
        if let Some(database) = self.database.take() {
            database.drop_database().await?;
        }
        for shard in std::mem::take(&mut self.more_shards) {
            shard.drop_database().await?;
        }
        Ok(())
    }
}

/// The server's `hf_store_operations_total` by operation, read from its Prometheus endpoint.
pub async fn store_operations(metrics: SocketAddr) -> Result<BTreeMap<String, f64>, BenchError> {
    // One plain HTTP/1.0 GET on loopback (the server closes after the answer): the bench needs
    // no HTTP client for it.
    let read = async {
        let mut stream = tokio::net::TcpStream::connect(metrics).await?;
        stream
            .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
            .await?;
        let mut text = String::new();
        stream.read_to_string(&mut text).await?;
        Ok::<_, std::io::Error>(text)
    };
    let text = read
        .await
        .map_err(|e| BenchError::Setting(format!("cannot read {metrics}/metrics: {e}")))?;
    if !text.starts_with("HTTP/1.0 200") && !text.starts_with("HTTP/1.1 200") {
        let status = text.lines().next().unwrap_or_default().to_string();
        return Err(BenchError::Setting(format!(
            "{metrics}/metrics answered {status:?}"
        )));
    }
    Ok(text
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("hf_store_operations_total{operation=\"")?;
            let (operation, rest) = rest.split_once('"')?;
            let value = rest.rsplit(' ').next()?.parse().ok()?;
            Some((operation.to_string(), value))
        })
        .collect())
}

/// The resident memory of process `pid` in bytes (`VmRSS` of `/proc/PID/status`), if readable.
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// CPU time (user + system) the process `pid` has used so far, from `/proc/PID/stat`, or `None`
/// where it cannot be read. Taken at both ends of a run, it gives the server's own CPU per move,
/// which stays true when the bench shares the cores (and its own CPU) with the server.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    stat_cpu_seconds(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// [`cpu_seconds`] of this process (the bench).
pub fn own_cpu_seconds() -> Option<f64> {
    stat_cpu_seconds(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// The CPU seconds (user + system) of every Postgres process on this machine (`/proc/*/stat`
/// whose command is `postgres`: the postmaster, the backends, the WAL writer, the checkpointer),
/// or `None` when there is none. A durable move costs Postgres CPU beside the server's; a store
/// change that moves it (a read added to every move) shows here. Processes that ended within a
/// window take their time with them, so a figure over a window is a lower bound; the store's
/// connections live for the whole run.
pub fn postgres_cpu_seconds() -> Option<f64> {
    let mut total = None;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        if !name
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if stat_command(&stat) == Some("postgres")
            && let Some(seconds) = stat_cpu_seconds(&stat)
        {
            *total.get_or_insert(0.0) += seconds;
        }
    }
    total
}

/// The command name of a `/proc/PID/stat` line (between the first `(` and the last `)`).
fn stat_command(stat: &str) -> Option<&str> {
    Some(&stat[stat.find('(')? + 1..stat.rfind(')')?])
}

/// `utime` + `stime` of a `/proc/PID/stat` line. They are fields 14 and 15, counted after the
/// command name, which is in parentheses and may itself hold spaces; the unit is the clock tick,
/// 100 a second on every Linux this runs on (`USER_HZ`).
fn stat_cpu_seconds(stat: &str) -> Option<f64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some((user + system) as f64 / 100.0)
}

/// The `hidden-front` binary to spawn: this very executable when it is `hidden-front`.
pub fn own_binary() -> Result<PathBuf, BenchError> {
    std::env::current_exe().map_err(|e| BenchError::io("locating this executable", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_names_its_command() {
        let stat = "4242 (postgres) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 50 0 0 20 0 1 0";
        assert_eq!(stat_command(stat), Some("postgres"));
        assert_eq!(stat_cpu_seconds(stat), Some(2.0));
        assert_eq!(stat_command("7 (a (b) c) S"), Some("a (b) c"));
        assert_eq!(stat_command("garbage"), None);
    }

    #[test]
    fn cpu_time_is_read_after_a_command_name_with_spaces() {
        let stat = "4242 (hidden front) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 75 0 0 20 0 9 0";
        assert_eq!(stat_cpu_seconds(stat), Some(3.25));
        assert_eq!(stat_cpu_seconds("4242 (cut"), None);
    }

    #[test]
    fn this_process_has_used_some_cpu() {
        assert!(own_cpu_seconds().is_some_and(|s| s >= 0.0));
    }

    #[test]
    fn database_names_replace_the_path_and_keep_the_query() {
        assert_eq!(
            with_database("postgres://u@h:5432/postgres?sslmode=disable", "x"),
            "postgres://u@h:5432/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://u@h", "x"), "postgres://u@h/x");
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
    }

    #[test]
    fn this_process_has_a_resident_size() {
        assert!(rss_bytes(std::process::id()).is_some_and(|b| b > 0));
    }
}
