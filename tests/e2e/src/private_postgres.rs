//! A Postgres server of a test's own, which the test may stop and start again: the machine's
//! shared server must never be stopped by one test. Made from the local server binaries
//! (`/usr/lib/postgresql/*/bin`, Debian's `postgresql` package) in a throwaway directory, on a
//! free loopback port, trust authentication, `fsync=off` (the tests stop Postgres cleanly or not
//! at all; they never need it to survive a machine crash). As root (CI), the server runs as the
//! `postgres` user through `runuser`, since Postgres refuses to run as root.
//!
//! The tests that need it fail, saying why, on a machine without the binaries: they never skip.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;

/// A private Postgres cluster, removed (stopped at once, its directory deleted) when dropped.
#[derive(Debug)]
pub struct PrivatePostgres {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_root: bool,
}

impl PrivatePostgres {
    /// Initialises a cluster and starts it; waits until it accepts connections.
    pub fn start() -> PrivatePostgres {
        let bin = server_binaries();
        let dir = std::env::temp_dir().join(format!("hf-e2e-pg-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("creating the cluster's directory");
        let as_root = is_root();
        if as_root {
            run(
                Command::new("chown").arg("postgres").arg(&dir),
                "chown postgres",
            );
        }
        let port = free_port();
        let cluster = PrivatePostgres {
            bin,
            dir,
            port,
            as_root,
        };
        run(
            cluster
                .command("initdb")
                .args(["-U", "postgres", "--auth=trust", "-D"])
                .arg(cluster.data()),
            "initdb",
        );
        cluster.start_again();
        cluster
    }

    /// The URL of its `postgres` database, for [`crate::TestDatabase`]'s admin connection or a
    /// server's `--database-url`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stops it (fast shutdown: connections are cut, as in a failover) and waits until it has
    /// stopped.
    pub fn stop(&self) {
        run(
            self.command("pg_ctl")
                .args(["-m", "fast", "-w", "stop", "-D"])
                .arg(self.data()),
            "pg_ctl stop",
        );
    }

    /// Starts it (again) on the same port and data, waiting until it accepts connections.
    pub fn start_again(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
            self.port,
            self.dir.display()
        );
        run(
            self.command("pg_ctl")
                .args(["-w", "-t", "60", "-o", &options, "-l"])
                .arg(self.dir.join("log"))
                .arg("start")
                .arg("-D")
                .arg(self.data()),
            "pg_ctl start",
        );
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// `program` from the server binaries, as the `postgres` user when this process is root.
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_root {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        }
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .args(["-m", "immediate", "stop", "-D"])
            .arg(self.data())
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The newest local server's binary directory; panics, saying what to install, without one.
fn server_binaries() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
        .collect();
    found.sort();
    found.pop().unwrap_or_else(|| {
        panic!(
            "no Postgres server binaries under /usr/lib/postgresql/*/bin: this test starts and \
             stops a Postgres of its own (Debian: apt-get install postgresql)"
        )
    })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// A loopback port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

fn run(command: &mut Command, what: &str) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {:?}: {e}", command.get_program()));
    assert!(
        output.status.success(),
        "{what} failed ({}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
