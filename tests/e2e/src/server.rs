//! The real `hidden-front serve` process.

use crate::client::{self, Client};
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// How long a server may take from spawn to its "listening" line (it migrates first).
const START_DEADLINE: Duration = Duration::from_secs(30);

/// The line prefix `hidden-front serve` prints on stdout once it accepts connections.
const LISTENING: &str = "hidden-front listening on ";

/// The line prefix of the HTTP listener (the gateway's WebSocket API), printed before
/// [`LISTENING`] when the gateway runs.
const HTTP_LISTENING: &str = "hidden-front http listening on ";

/// The line prefix of the metrics listener (`GET /metrics`), printed before [`LISTENING`].
const METRICS_LISTENING: &str = "hidden-front metrics listening on ";

/// The line prefix of the internal port (the session's API when the gateway runs in the same
/// process), printed before [`LISTENING`].
const INTERNAL_LISTENING: &str = "hidden-front internal listening on ";

/// One `hidden-front serve --listen 127.0.0.1:0 --database-url URL` process.
///
/// [`Server::kill`] sends SIGKILL (no graceful drain); [`Server::restart`] starts a new process
/// on the same database (on a new port). Everything the processes wrote to stderr is kept and
/// printed when the test fails (this value is dropped while panicking). Dropping kills the process.
#[derive(Debug)]
pub struct Server {
    name: String,
    database_url: String,
    child: Option<Child>,
    addr: SocketAddr,
    http_addr: Option<SocketAddr>,
    metrics_addr: Option<SocketAddr>,
    /// The session's own port when it is not `addr` (gateway and session in one process).
    internal_addr: Option<SocketAddr>,
    log: Arc<Mutex<Vec<u8>>>,
    starts: u32,
    /// Further `serve` flags, given at every start.
    args: Vec<String>,
    /// Further environment variables, set at every start.
    env: Vec<(String, String)>,
}

impl Server {
    /// Starts a server on `database_url` and waits (up to 30 s) until it listens. `name` labels
    /// its log.
    pub async fn start(name: &str, database_url: &str) -> Server {
        Server::start_with_args(name, database_url, &[]).await
    }

    /// [`Server::start`] with further `serve` flags (e.g. `["--actions-per-second", "1000"]`),
    /// which restarts keep.
    pub async fn start_with_args(name: &str, database_url: &str, args: &[&str]) -> Server {
        Server::start_with_env(name, database_url, args, &[]).await
    }

    /// [`Server::start_with_args`] with further environment variables (e.g.
    /// `[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")]`), which restarts keep.
    pub async fn start_with_env(
        name: &str,
        database_url: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        let log = Arc::new(Mutex::new(Vec::new()));
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let (child, addr, http_addr, metrics_addr, internal_addr) =
            spawn_and_wait(name, database_url, &args, &env, &log, 1).await;
        Server {
            name: name.to_string(),
            database_url: database_url.to_string(),
            child: Some(child),
            addr,
            http_addr,
            metrics_addr,
            internal_addr,
            log,
            starts: 1,
            args,
            env,
        }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address of its HTTP listener (the WebSocket API); `None` when the gateway does not run.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http_addr
    }

    /// The address of its metrics listener (`GET /metrics`, Prometheus text).
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Where the session's API answers: the internal port when the gateway runs in the same
    /// process (the public port never serves it then), else the main port.
    pub fn session_addr(&self) -> SocketAddr {
        self.internal_addr.unwrap_or(self.addr)
    }

    /// The label given at start.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A new client connected to this server.
    pub async fn connect(&self) -> Client {
        client::connect(self.session_addr()).await
    }

    /// The process's id while it runs (for what the OS knows of it: /proc/<pid>/status).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is still running (it has neither exited nor been killed): a test that
    /// threw bad input at it checks it survived.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Kills the process with SIGKILL and reaps it. Does nothing if it is not running.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // std's Child::kill is SIGKILL on Unix: no shutdown handler runs.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends SIGTERM (a graceful stop) and waits up to `deadline` for the process to exit.
    /// Returns its exit status, or `None` if it was still running at the deadline (then it is
    /// killed with SIGKILL).
    pub fn terminate(&mut self, deadline: Duration) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        let pid = child.id().to_string();
        let signal = |name: &str| {
            Command::new("kill")
                .args([name, pid.as_str()])
                .status()
                .expect("running kill(1)")
        };
        assert!(signal("-TERM").success(), "kill -TERM failed");
        let (tx, rx) = mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let status = child.wait();
            let _ = tx.send(());
            status
        });
        let exited = rx.recv_timeout(deadline).is_ok();
        if !exited {
            signal("-KILL");
        }
        let status = waiter.join().expect("the waiting thread");
        status.ok().filter(|_| exited)
    }

    /// Kills the process if it runs, then starts a new one on the same database and waits until
    /// it listens. Returns the new address.
    pub async fn restart(&mut self) -> SocketAddr {
        self.kill();
        self.starts += 1;
        let (child, addr, http_addr, metrics_addr, internal_addr) = spawn_and_wait(
            &self.name,
            &self.database_url,
            &self.args,
            &self.env,
            &self.log,
            self.starts,
        )
        .await;
        self.child = Some(child);
        self.addr = addr;
        self.http_addr = http_addr;
        self.metrics_addr = metrics_addr;
        self.internal_addr = internal_addr;
        addr
    }

    /// Everything the server's processes wrote to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.log.lock().expect("log lock")).into_owned()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!(
                "----- stderr of hidden-front server {:?} -----\n{}----- end of stderr of {:?} -----",
                self.name,
                self.stderr(),
                self.name
            );
        }
    }
}

/// The `hidden-front` binary the tests run: `HF_E2E_BIN`, or `target/<profile>/hidden-front`
/// next to the test executable (`target/<profile>/deps/<test>`), refused when it is older than
/// any of its sources, the embedded `web/dist` included (a test must never pass or fail on
/// stale code).
pub fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("HF_E2E_BIN") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "HF_E2E_BIN={} is not a file",
            path.display()
        );
        return path;
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test executable lives in target/<profile>/deps");
    let path = profile_dir.join(format!("hidden-front{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "{} does not exist: run `cargo build -p hidden-front` first (or set HF_E2E_BIN)",
        path.display()
    );
    if let Some(newer) = newer_source(&path) {
        panic!(
            "{} is older than {} (changed after the binary was built): these tests would run \
             stale code. Run `cargo build -p hidden-front` first (or set HF_E2E_BIN).",
            path.display(),
            newer.display()
        );
    }
    path
}

/// The directories of the binary's crate and of every workspace crate it depends on (not
/// test-support crates, whose changes do not rebuild it): the `[dependencies]` named
/// `hidden-front-*` of each, followed through the root manifest's `path`s.
fn binary_crates(root: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    let path_of = |name: &str| -> Option<PathBuf> {
        let line = manifest
            .lines()
            .find(|line| line.starts_with(&format!("{name} = ")))?;
        let path = line.split("path = \"").nth(1)?.split('"').next()?;
        Some(root.join(path))
    };
    let mut found = vec![root.join("crates/hidden-front")];
    let mut next = 0;
    while let Some(krate) = found.get(next).cloned() {
        next += 1;
        let own = std::fs::read_to_string(krate.join("Cargo.toml")).unwrap_or_default();
        let dependencies = own
            .split("\n[")
            .find(|section| section.starts_with("dependencies]"))
            .unwrap_or_default();
        for line in dependencies.lines() {
            let name = line.split(['.', ' ', '=']).next().unwrap_or_default();
            if name.starts_with("hidden-front-")
                && let Some(path) = path_of(name)
                && !found.contains(&path)
            {
                found.push(path);
            }
        }
    }
    found
}

/// A source of the binary changed after `binary` was built, if there is one: any file under the
/// `src/` of a crate of the binary, its `build.rs`, the protos, the migrations or the built
/// browser client `web/dist` (the last three are tracked by the build scripts of `crates/proto`,
/// `crates/store` and `crates/web-assets`, which embeds the client).
/// Checked once per test process.
fn newer_source(binary: &Path) -> Option<PathBuf> {
    static NEWER: OnceLock<Option<PathBuf>> = OnceLock::new();
    NEWER
        .get_or_init(|| {
            let built = std::fs::metadata(binary).and_then(|m| m.modified()).ok()?;
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            // Only inputs whose change always rebuilds the binary: a manifest or `Cargo.lock`
            // can change without touching it (a dev-dependency, a description), and would then
            // refuse a binary that is current.
            let mut inputs = vec![
                root.join("proto"),
                root.join("migrations"),
                root.join("web/dist"),
            ];
            for krate in binary_crates(&root) {
                inputs.extend(["src", "build.rs"].map(|p| krate.join(p)));
            }
            let mut newest: Option<(SystemTime, PathBuf)> = None;
            while let Some(path) = inputs.pop() {
                let Ok(meta) = std::fs::metadata(&path) else {
                    continue;
                };
                if meta.is_dir() {
                    inputs.extend(
                        std::fs::read_dir(&path)
                            .into_iter()
                            .flatten()
                            .flatten()
                            .map(|e| e.path()),
                    );
                } else if let Ok(modified) = meta.modified()
                    && modified > built
                    && newest.as_ref().is_none_or(|(at, _)| modified > *at)
                {
                    newest = Some((modified, path));
                }
            }
            newest.map(|(_, path)| path)
        })
        .clone()
}

async fn spawn_and_wait(
    name: &str,
    database_url: &str,
    args: &[String],
    env: &[(String, String)],
    log: &Arc<Mutex<Vec<u8>>>,
    start: u32,
) -> Started {
    let name = name.to_string();
    let database_url = database_url.to_string();
    let args = args.to_vec();
    let env = env.to_vec();
    let log = Arc::clone(log);
    // Waiting for the line blocks a thread: keep it off the runtime's workers.
    tokio::task::spawn_blocking(move || {
        spawn_blocking(&name, &database_url, &args, &env, &log, start)
    })
    .await
    .expect("starting the server panicked")
}

/// A started process with its main, HTTP, metrics and internal addresses.
type Started = (
    Child,
    SocketAddr,
    Option<SocketAddr>,
    Option<SocketAddr>,
    Option<SocketAddr>,
);

fn spawn_blocking(
    name: &str,
    database_url: &str,
    args: &[String],
    env: &[(String, String)],
    log: &Arc<Mutex<Vec<u8>>>,
    start: u32,
) -> Started {
    let bin = binary();
    log.lock()
        .expect("log lock")
        .extend_from_slice(format!("=== start #{start} of {} ===\n", bin.display()).as_bytes());
    let mut child = Command::new(&bin)
        .args(["serve", "--listen", "127.0.0.1:0", "--database-url"])
        .arg(database_url)
        .args(["--http-listen", "127.0.0.1:0"])
        .args(["--metrics-listen", "127.0.0.1:0"])
        .args(["--internal-listen", "127.0.0.1:0"])
        .args(args)
        // The tests rely on the defaults (all services, migrate on start, 64 KiB messages).
        .env_remove("HF_SERVICES")
        .env_remove("HF_LISTEN")
        .env_remove("HF_MIGRATE_ON_START")
        .env_remove("HF_MAX_MESSAGE_BYTES")
        .env_remove("HF_LOG_FORMAT")
        .env_remove("HF_HTTP_LISTEN")
        .env_remove("HF_METRICS_LISTEN")
        .env_remove("HF_INTERNAL_LISTEN")
        .env_remove("HF_WS_MAX_CONNECTIONS")
        // The gateway tests mint tokens with the development secret and set limits by flags.
        .env_remove("HF_JWT_SECRET")
        .env_remove("HF_JWT_PUBLIC_KEYS")
        .env_remove("HF_JWT_ISSUER")
        .env_remove("HF_JWT_AUDIENCE")
        .env_remove("HF_ALLOW_GUEST_TOKENS")
        .env_remove("HF_SESSION_URL")
        .env_remove("HF_ACTIONS_PER_SECOND")
        // No span export unless a test asks for it.
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        // Plain text logs (they are printed when a test fails).
        .env("NO_COLOR", "1")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));

    let mut stderr = child.stderr.take().expect("stderr is piped");
    let sink = Arc::clone(log);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            match stderr.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => sink.lock().expect("log lock").extend_from_slice(&buf[..n]),
            }
        }
    });

    // stdout lines go through a channel so that the wait has a deadline; the thread keeps
    // draining stdout after the listening line so the server never blocks on a full pipe.
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel::<String>();
    let echo = Arc::clone(log);
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            echo.lock()
                .expect("log lock")
                .extend_from_slice(format!("[stdout] {line}\n").as_bytes());
            let _ = tx.send(line);
        }
    });

    let deadline = Instant::now() + START_DEADLINE;
    let read_addr = |addr: &str| -> SocketAddr {
        addr.trim()
            .parse()
            .unwrap_or_else(|e| panic!("server {name} printed an unreadable address {addr:?}: {e}"))
    };
    let mut http_addr = None;
    let mut metrics_addr = None;
    let mut internal_addr = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(addr) = line.strip_prefix(HTTP_LISTENING) {
                    http_addr = Some(read_addr(addr));
                } else if let Some(addr) = line.strip_prefix(METRICS_LISTENING) {
                    metrics_addr = Some(read_addr(addr));
                } else if let Some(addr) = line.strip_prefix(INTERNAL_LISTENING) {
                    internal_addr = Some(read_addr(addr));
                } else if let Some(addr) = line.strip_prefix(LISTENING) {
                    return (
                        child,
                        read_addr(addr),
                        http_addr,
                        metrics_addr,
                        internal_addr,
                    );
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = child.wait().ok();
                panic!(
                    "server {name} exited before listening ({status:?}; is {} up to date? \
                     `cargo build -p hidden-front`); stderr:\n{}",
                    bin.display(),
                    String::from_utf8_lossy(&log.lock().expect("log lock"))
                );
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "server {name} did not print {LISTENING:?} within {START_DEADLINE:?}; \
                     stderr:\n{}",
                    String::from_utf8_lossy(&log.lock().expect("log lock"))
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::binary_crates;
    use std::path::Path;

    #[test]
    fn the_binary_crates_are_its_workspace_dependencies_and_nothing_else() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let crates: Vec<String> = binary_crates(&root)
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        for expected in [
            "crates/hidden-front",
            "crates/rules",
            "crates/store",
            "services/session",
            "services/gateway",
        ] {
            assert!(
                crates.iter().any(|c| c == expected),
                "{expected} in {crates:?}"
            );
        }
        assert!(!crates.iter().any(|c| c.starts_with("tests")), "{crates:?}");
        let unique: std::collections::BTreeSet<_> = crates.iter().collect();
        assert_eq!(unique.len(), crates.len(), "{crates:?}");
    }
}
