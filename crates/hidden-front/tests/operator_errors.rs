//! What an operator reads when `migrate`, `serve`, `play` or `replay` cannot go on: the real binary against
//! a port nobody listens on, a database and a user that do not exist on the real Postgres, and a
//! fresh database migrated twice. Each failure is said once, names where and why, comes within a
//! few seconds, exits non-zero, and shows no backtrace (even with `RUST_BACKTRACE=1`), no source
//! line and no password.

use hidden_front_e2e::{DEFAULT_DATABASE_URL, TestDatabase};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a failing command may take: the database probe gives up after 5 s.
const DEADLINE: Duration = Duration::from_secs(15);

/// A password that must never be printed.
const PASSWORD: &str = "Hunter2-never-shown";

/// The host and port of the test Postgres (`DATABASE_URL`, or the default).
fn postgres_authority() -> String {
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_DATABASE_URL.to_string());
    let rest = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or(rest);
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
        .to_string()
}

/// A port on which nothing listens (bound, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs the binary with `args` and `env`, with `RUST_BACKTRACE=1`; fails the test if it has not
/// finished within [`DEADLINE`] (and kills it).
fn run(args: &[&str], env: &[(&str, &str)]) -> (Output, Duration) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hidden-front"));
    command
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .env_remove("DATABASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let started = Instant::now();
    let child = command.spawn().expect("the hidden-front binary runs");
    let pid = child.id();
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait_with_output());
    });
    match done_rx.recv_timeout(DEADLINE) {
        Ok(output) => (output.expect("waiting for hidden-front"), started.elapsed()),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("hidden-front {args:?} was still running after {DEADLINE:?}");
        }
    }
}

/// The checks every clean failure passes: non-zero exit, one `error:` line that mentions each
/// of `says`, no backtrace, no source location, no password, in time.
fn assert_clean_failure((output, took): &(Output, Duration), says: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(1),
        "exit code; stderr:\n{stderr}"
    );
    assert!(*took < DEADLINE, "took {took:?}; stderr:\n{stderr}");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 1, "said exactly once:\n{stderr}");
    for said in says {
        assert!(
            errors[0].contains(said),
            "the error does not say {said:?}:\n{stderr}"
        );
    }
    let lower = stderr.to_lowercase();
    for leak in ["backtrace", "src/", ".rs:", "panicked", "caused by"] {
        assert!(!lower.contains(leak), "stderr shows {leak:?}:\n{stderr}");
    }
    assert!(
        !stderr.contains(PASSWORD),
        "stderr shows the password:\n{stderr}"
    );
    stderr
}

/// `serve` with every listener on a free port and `database_url`.
fn serve_with(database_url: &str) -> (Output, Duration) {
    run(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--internal-listen",
            "127.0.0.1:0",
            "--http-listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
        &[("DATABASE_URL", database_url)],
    )
}

#[test]
fn migrate_and_serve_name_a_refused_connection() {
    let port = closed_port();
    let url = format!("postgres://postgres:{PASSWORD}@127.0.0.1:{port}/games");
    let where_ = format!("127.0.0.1:{port}");
    let migrate = run(&["migrate"], &[("DATABASE_URL", &url)]);
    assert_clean_failure(&migrate, &[&where_, "connection refused"]);
    assert!(
        migrate.1 < Duration::from_secs(5),
        "a refused connection is said at once, not after retries: {:?}",
        migrate.1
    );
    assert_clean_failure(&serve_with(&url), &[&where_, "connection refused"]);
}

#[test]
fn migrate_and_serve_name_a_database_that_does_not_exist() {
    let name = format!("hf_missing_{}", std::process::id());
    let url = format!(
        "postgres://postgres:{PASSWORD}@{}/{name}",
        postgres_authority()
    );
    for outcome in [
        run(&["migrate"], &[("DATABASE_URL", &url)]),
        serve_with(&url),
    ] {
        assert_clean_failure(
            &outcome,
            &[
                &format!("{name:?}"),
                &postgres_authority(),
                "does not exist",
            ],
        );
    }
}

#[test]
fn migrate_names_a_user_that_cannot_sign_in() {
    let user = format!("hf_nobody_{}", std::process::id());
    let url = format!(
        "postgres://{user}:{PASSWORD}@{}/postgres",
        postgres_authority()
    );
    assert_clean_failure(
        &run(&["migrate"], &[("DATABASE_URL", &url)]),
        &[
            &format!("{user:?}"),
            &postgres_authority(),
            "authentication failed",
        ],
    );
}

#[test]
fn a_url_that_does_not_parse_is_named_without_its_password() {
    let url = format!("postgres://postgres:{PASSWORD}@127.0.0.1:notaport/games");
    assert_clean_failure(
        &run(&["migrate"], &[("DATABASE_URL", &url)]),
        &["DATABASE_URL is not a Postgres URL"],
    );
}

#[tokio::test]
async fn migrate_twice_applies_then_says_up_to_date() {
    let db = TestDatabase::create().await;
    let url = db.url().to_string();
    let first = tokio::task::spawn_blocking({
        let url = url.clone();
        move || run(&["migrate"], &[("DATABASE_URL", &url)])
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&first.0.stdout).into_owned();
    assert!(first.0.status.success(), "{first:?}");
    assert!(
        stdout.contains("applied ") && stdout.contains(&format!("{:?}", db.name())),
        "the first run names what it applied, and where:\n{stdout}"
    );
    let listed = stdout.lines().filter(|l| l.starts_with("  ")).count();
    assert!(listed >= 1, "one line per migration applied:\n{stdout}");
    assert!(stdout.contains("up to date"), "{stdout}");

    let second = tokio::task::spawn_blocking({
        let url = url.clone();
        move || run(&["migrate"], &[("DATABASE_URL", &url)])
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&second.0.stdout).into_owned();
    assert!(second.0.status.success(), "{second:?}");
    assert!(stdout.contains("up to date"), "{stdout}");
    assert!(
        !stdout.contains("applied"),
        "nothing to apply the second time:\n{stdout}"
    );

    // Before a rollback: no game lags its snapshot in a fresh database.
    let third = tokio::task::spawn_blocking(move || {
        run(
            &["migrate", "--snapshots-at-head"],
            &[("DATABASE_URL", &url)],
        )
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&third.0.stdout).into_owned();
    assert!(third.0.status.success(), "{third:?}");
    assert!(
        stdout.contains("wrote 0 game snapshot(s) at their log's head"),
        "{stdout}"
    );
}

#[test]
fn play_against_an_unreachable_gateway_shows_no_backtrace() {
    let port = closed_port();
    let outcome = run(
        &["play", "--game", "g1", "--token", "tok"],
        &[("HF_GATEWAY", &format!("http://127.0.0.1:{port}"))],
    );
    assert_clean_failure(
        &outcome,
        &[&format!(
            "cannot reach the gateway at http://127.0.0.1:{port}"
        )],
    );
}

#[test]
fn replay_names_an_unreachable_session_a_bad_id_a_missing_file_and_a_bad_line() {
    let url = format!("http://127.0.0.1:{}", closed_port());
    let game = "0190c0de-0000-7000-8000-000000000001";
    let export = run(&["replay", "export", game, "--session-url", &url], &[]);
    assert_clean_failure(&export, &[game, &url, "Unavailable"]);
    let export = run(
        &["replay", "export", "not-a-game", "--session-url", &url],
        &[],
    );
    assert_clean_failure(&export, &["\"not-a-game\" is not a game id"]);

    let missing = std::env::temp_dir().join(format!("hf-no-replay-{}", std::process::id()));
    let missing = missing.to_str().expect("a UTF-8 path");
    let verify = run(&["replay", "verify", missing], &[]);
    assert_clean_failure(&verify, &[missing, "No such file"]);
    // Standard input (empty here) is read like a file.
    let verify = run(&["replay", "verify", "-"], &[]);
    assert_clean_failure(&verify, &["- does not verify: line 1: the file is empty"]);
}
