//! What the binary's tests share: `hidden-front play` as a real process, typed into through its
//! stdin and read line by line from its stdout, as a person in a terminal would; and the
//! application in this process on free ports, for it to talk to.

use hidden_front::config::ServeArgs;
use hidden_front::{Application, Ports};
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// A running `hidden-front play`, its stdout read on a thread.
pub struct Terminal {
    /// Who this is, in failure messages.
    name: &'static str,
    /// How long one expected line may take.
    deadline: Duration,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    /// Output read but not yet consumed by a wait.
    seen: String,
}

impl Terminal {
    /// Starts `hidden-front play ARGS` with no token or gateway from the environment; `stderr`
    /// is where its error stream goes.
    pub fn start<I, S>(name: &'static str, args: I, stderr: Stdio, deadline: Duration) -> Terminal
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hidden-front"))
            .arg("play")
            .args(args)
            .env_remove("HF_TOKEN")
            .env_remove("HF_GATEWAY")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start hidden-front play");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Terminal {
            name,
            deadline,
            child,
            stdin,
            lines,
            seen: String::new(),
        }
    }

    /// Types one line.
    pub fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Waits until the output since the last wait contains `text`; answers that output.
    pub fn wait_for(&mut self, text: &str) -> String {
        let deadline = Instant::now() + self.deadline;
        loop {
            if let Some(at) = self.seen.find(text) {
                let end = at + text.len();
                let upto = self.seen[..end].to_string();
                self.seen.drain(..end);
                return upto;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push_str(&line);
                    self.seen.push('\n');
                }
                Err(_) => panic!(
                    "{}: no {text:?} in the output; it said:\n{}",
                    self.name, self.seen
                ),
            }
        }
    }

    /// The rest of the current line after `text`.
    #[allow(dead_code)] // not every test file reads values
    pub fn value_after(&mut self, text: &str) -> String {
        self.wait_for(text);
        self.wait_for("\n").trim().to_string()
    }

    /// Waits for the process to leave (its stdout is drained by the reading thread).
    #[allow(dead_code)] // not every test file waits this way
    pub fn wait(&mut self) -> std::process::ExitStatus {
        self.child.wait().unwrap()
    }

    /// Waits for the process to leave; true if it exited with success.
    #[allow(dead_code)] // not every test file waits for an exit
    pub fn exits_cleanly(mut self) -> bool {
        let deadline = Instant::now() + self.deadline;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.success();
            }
            assert!(Instant::now() < deadline, "{} did not exit", self.name);
            // Draining stdout is what lets the process finish writing and leave.
            let _ = self.lines.recv_timeout(Duration::from_millis(100));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every service on free ports, in memory whatever the environment says.
pub fn one_box(extra: &[&str]) -> ServeArgs {
    let mut flags = vec![
        "--listen",
        "127.0.0.1:0",
        "--internal-listen",
        "127.0.0.1:0",
        "--http-listen",
        "127.0.0.1:0",
        "--metrics-listen",
        "127.0.0.1:0",
    ];
    flags.extend_from_slice(extra);
    let mut args = ServeArgs::from_flags(flags).expect("flags");
    args.database_url = None;
    args.session_url = None;
    args.matchmaking_url = None;
    args
}

/// `GET path` over plain HTTP/1.1, the whole answer as text.
pub async fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .expect("request");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("answer");
    answer
}

/// The whole application (every service) served in this process until this value is dropped
/// (or [`InProcess::stop`]ped).
pub struct InProcess {
    /// Where it listens.
    pub ports: Ports,
    /// Dropped with this value, which ends the application's shutdown future.
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    serving: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

impl InProcess {
    /// Builds the one-box application with `extra` flags on `database_url` and serves it.
    pub async fn start(database_url: &str, extra: &[&str]) -> InProcess {
        InProcess::start_on(database_url, extra, None).await
    }

    /// [`InProcess::start`], its gRPC and HTTP ports those of `at` when given: a server
    /// restarted where its players look for it.
    pub async fn start_on(database_url: &str, extra: &[&str], at: Option<&Ports>) -> InProcess {
        let mut args = one_box(extra);
        args.database_url = Some(database_url.to_string());
        if let Some(at) = at {
            args.listen = at.grpc;
            if let Some(http) = at.http {
                args.http_listen = http;
            }
        }
        let app = Application::build(args)
            .await
            .expect("the application builds");
        let ports = app.ports();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(app.run_until_stopped(async move {
            let _ = stopped.await;
        }));
        InProcess {
            ports,
            stop: Some(stop),
            serving: Some(serving),
        }
    }

    /// Stops it as a SIGTERM does (every player connection told goodbye with its resume points,
    /// the ports drained) and waits until it has stopped, its ports free again.
    #[allow(dead_code)] // not every test file restarts its server
    pub async fn stop(mut self) {
        drop(self.stop.take());
        if let Some(serving) = self.serving.take() {
            tokio::time::timeout(Duration::from_secs(60), serving)
                .await
                .expect("the application stops within a minute")
                .expect("no panic")
                .expect("the application stops cleanly");
        }
    }
}
