//! What an operator reads when `migrate`, `serve`, `play`, `replay`, `admin` or `webhooks` cannot
//! go on: the real binary against a port nobody listens on, a database and a user that do not
//! exist on the real Postgres, a fresh database migrated twice, settings that cannot work, and
//! the operator verbs against ports that do not serve them. Each failure is said once, names where
//! and why (and what to do), comes within a few seconds, exits non-zero, and shows no backtrace
//! (even with `RUST_BACKTRACE=1`), no source line and no password.

use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use hidden_front_test_database::{DEFAULT_DATABASE_URL, TestDatabase};
use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Output, Stdio};
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
        .env_remove("HF_ADMIN_TOKEN")
        .env_remove("HF_ADMIN_TOKENS")
        .env_remove("HF_SESSION_URL")
        .env_remove("HF_WEBHOOKS_CONFIG")
        .env_remove("HF_DATABASE_MAX_CONNECTIONS")
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

/// An operator token long enough for the session (24 bytes at least).
const OPERATOR_TOKEN: &str = "ops-token-0123456789abcdefghij";

/// A `hidden-front serve` (every service, games in memory) on free ports, killed when dropped.
struct Serving {
    child: Child,
    /// The public gRPC port (`--listen`).
    public: SocketAddr,
    /// The internal port (`--internal-listen`): the session and the admin APIs.
    internal: SocketAddr,
}

impl Serving {
    /// Starts `serve ARGS` with `env` and waits until it says where it listens.
    fn start(args: &[&str], env: &[(&str, &str)]) -> Serving {
        let mut command = Command::new(env!("CARGO_BIN_EXE_hidden-front"));
        command
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--internal-listen",
                "127.0.0.1:0",
            ])
            .args([
                "--http-listen",
                "127.0.0.1:0",
                "--metrics-listen",
                "127.0.0.1:0",
            ])
            .args(args);
        for name in [
            "DATABASE_URL",
            "HF_ADMIN_TOKEN",
            "HF_ADMIN_TOKENS",
            "HF_SERVICES",
            "HF_SESSION_URL",
            "HF_MATCHMAKING_URL",
            "HF_WEBHOOKS_CONFIG",
            "HF_LISTEN",
            "HF_INTERNAL_LISTEN",
            "HF_HTTP_LISTEN",
            "HF_METRICS_LISTEN",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ] {
            command.env_remove(name);
        }
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the hidden-front binary runs");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        match listening_addresses(&rx) {
            Some((public, internal)) => Serving {
                child,
                public,
                internal,
            },
            None => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("serve {args:?} did not say where it listens (public and internal)");
            }
        }
    }
}

/// The public and internal addresses of a starting `serve`, from its stdout lines (the internal
/// port's line comes before the public one's, which is the last); `None` if it does not say
/// them within 30 s.
fn listening_addresses(lines: &mpsc::Receiver<String>) -> Option<(SocketAddr, SocketAddr)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut internal = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = lines.recv_timeout(left).ok()?;
        let addr = |prefix: &str| -> Option<SocketAddr> {
            line.strip_prefix(prefix)
                .and_then(|a| a.trim().parse().ok())
        };
        if let Some(addr) = addr("hidden-front internal listening on ") {
            internal = Some(addr);
        } else if let Some(public) = addr("hidden-front listening on ") {
            return Some((public, internal?));
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// [`run`] off the async runtime's workers.
async fn run_async(args: Vec<String>, env: Vec<(&'static str, String)>) -> (Output, Duration) {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        run(&args, &env)
    })
    .await
    .expect("running the CLI")
}

/// The arguments of an operator verb against `url` with the operator token.
fn operator_args(verb: &[&str], url: &str) -> Vec<String> {
    verb.iter()
        .map(|a| a.to_string())
        .chain([
            "--session-url".into(),
            url.into(),
            "--admin-token".into(),
            OPERATOR_TOKEN.into(),
        ])
        .collect()
}

/// A refusal by the argument parser (exit status 2): said before anything is reached.
fn assert_refused_by_parser(output: &Output, says: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(2),
        "exit code; stderr:\n{stderr}"
    );
    for said in says {
        assert!(
            stderr.contains(said),
            "the error does not say {said:?}:\n{stderr}"
        );
    }
}

#[test]
fn operator_verbs_name_the_port_and_the_flag_that_serve_them() {
    let token = format!("ops={OPERATOR_TOKEN}");
    let server = Serving::start(&["--admin-token", &token], &[]);
    let public = format!("http://{}", server.public);
    let internal = format!("http://{}", server.internal);

    // The admin API is never on the public port: the answer says which port it is on.
    let find = run(
        &operator_args(&["admin", "find"], &public)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        &[],
    );
    let stderr = assert_clean_failure(
        &find,
        &[
            "FindGames",
            "UNKNOWN_OPERATION",
            &public,
            "does not serve the admin API",
            "--internal-listen",
            "--session-url",
        ],
    );
    assert!(
        !stderr.contains("): \n") && !stderr.trim_end().ends_with(':'),
        "an empty message:\n{stderr}"
    );
    // ...and from the internal port it answers.
    let found = run(
        &operator_args(&["admin", "find"], &internal)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        &[],
    );
    assert!(found.0.status.success(), "{found:?}");

    // Without --webhooks-config the session serves no webhook admin API: say how to get one.
    for url in [&internal, &public] {
        let endpoints = run(
            &operator_args(&["webhooks", "endpoints"], url)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
            &[],
        );
        assert_clean_failure(
            &endpoints,
            &[
                "ListEndpoints",
                url,
                "does not serve the webhook admin API",
                "--webhooks-config",
                "internal port",
            ],
        );
    }
}

#[tokio::test]
async fn abort_hints_a_retry_only_when_one_can_help_and_an_ended_game_is_named_ended() {
    let token = format!("ops={OPERATOR_TOKEN}");
    let server = Serving::start(&["--admin-token", &token], &[]);
    let internal = format!("http://{}", server.internal);
    let unknown = "0190c0de-0000-7000-8000-000000000001";
    let abort = |game: &str, key: &str, url: &str| {
        operator_args(
            &[
                "admin",
                "abort",
                game,
                "--reason",
                "ticket 1",
                "--idempotency-key",
                key,
            ],
            url,
        )
    };

    // Unreachable: the abort may not have been sent; the same key is safe to send again.
    let closed = format!("http://127.0.0.1:{}", closed_port());
    let outcome = run_async(abort(unknown, "k-closed", &closed), vec![]).await;
    assert_clean_failure(
        &outcome,
        &[
            "AbortGame",
            "idempotency key k-closed: retry with it",
            "Unavailable",
        ],
    );

    // Refusals answer the same every time: no retry hint.
    let outcome = run_async(abort(unknown, "k-unknown", &internal), vec![]).await;
    let stderr = assert_clean_failure(&outcome, &["AbortGame", "GAME_NOT_FOUND"]);
    assert!(!stderr.contains("retry"), "{stderr}");
    let outcome = run_async(abort("not-a-game", "k-bad", &internal), vec![]).await;
    let stderr = assert_clean_failure(&outcome, &["AbortGame", "INVALID_FIELD", "game_id"]);
    assert!(!stderr.contains("retry"), "{stderr}");

    // A game in deployment is aborted; aborting it again says it has ended, not "needs the
    // play phase" (a game in deployment can be aborted, as it just was).
    let mut session = SessionServiceClient::new(
        tonic::transport::Endpoint::from_shared(internal.clone())
            .expect("an address")
            .connect()
            .await
            .expect("the session answers on the internal port"),
    );
    let game = session
        .create_game(pb::CreateGameRequest {
            south_player: "sue".into(),
            north_player: "tom".into(),
            time_control: Some(pb::TimeControl {
                name: "relaxed".into(),
                ..Default::default()
            }),
            idempotency_key: "g-ended".into(),
            ..Default::default()
        })
        .await
        .expect("CreateGame")
        .into_inner()
        .game_id;
    let first = run_async(abort(&game, "k-first", &internal), vec![]).await;
    assert!(first.0.status.success(), "{first:?}");
    let again = run_async(abort(&game, "k-again", &internal), vec![]).await;
    let stderr = assert_clean_failure(
        &again,
        &[
            "WRONG_PHASE",
            &game,
            "has already ended",
            "deployment or in play",
        ],
    );
    assert!(
        !stderr.contains("needs the play phase") && !stderr.contains("retry"),
        "{stderr}"
    );

    // "Stuck" is never an ended game: `--stuck-for 0` (which the API reads as "not asked") is
    // refused rather than listing every game, the ended one too.
    let stuck = run_async(
        operator_args(&["admin", "find", "--stuck-for", "0"], &internal),
        vec![],
    )
    .await;
    assert_refused_by_parser(&stuck.0, &["--stuck-for", "at least 1", "--phase play"]);
    assert!(
        !String::from_utf8_lossy(&stuck.0.stdout).contains(&game),
        "{stuck:?}"
    );
    let stuck = run_async(
        operator_args(&["admin", "find", "--stuck-for", "1"], &internal),
        vec![],
    )
    .await;
    assert!(stuck.0.status.success(), "{stuck:?}");
    assert!(
        !String::from_utf8_lossy(&stuck.0.stdout).contains(&game),
        "{stuck:?}"
    );
}

#[tokio::test]
async fn a_bad_setting_stops_serve_before_the_database_is_migrated() {
    let db = TestDatabase::create().await;
    let url = db.url().to_string();
    let outcome = tokio::task::spawn_blocking(move || {
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
                "--admin-token",
                "ops=123456789012345678901",
            ],
            &[("DATABASE_URL", &url)],
        )
    })
    .await
    .unwrap();
    assert_clean_failure(&outcome, &["--admin-token", "\"ops\"", "21 bytes"]);
    let mut connection = db.connect().await;
    let migrated: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(&mut connection)
        .await
        .expect("asking the database");
    assert!(
        !migrated,
        "serve migrated the database before refusing its settings"
    );
}

#[test]
fn a_database_url_that_is_not_postgres_is_refused_by_name() {
    let url = format!("mysql://root:{PASSWORD}@y/z");
    for outcome in [
        run(&["migrate"], &[("DATABASE_URL", &url)]),
        serve_with(&url),
    ] {
        let stderr = assert_clean_failure(&outcome, &["DATABASE_URL", "\"mysql\"", "postgres://"]);
        assert!(!stderr.contains("cannot connect"), "{stderr}");
    }
}

#[test]
fn one_admin_token_variable_serves_the_server_and_the_cli() {
    let entry = format!("ops={OPERATOR_TOKEN}");
    for server_env in ["HF_ADMIN_TOKEN", "HF_ADMIN_TOKENS"] {
        let server = Serving::start(&[], &[(server_env, &entry)]);
        let url = format!("http://{}", server.internal);
        // The same variable, with the same value, the bare token, or the old name.
        for (cli_env, value) in [
            ("HF_ADMIN_TOKEN", entry.as_str()),
            ("HF_ADMIN_TOKEN", OPERATOR_TOKEN),
            ("HF_ADMIN_TOKENS", entry.as_str()),
        ] {
            let found = run(
                &["admin", "find", "--session-url", &url],
                &[(cli_env, value)],
            );
            let stderr = String::from_utf8_lossy(&found.0.stderr);
            assert!(
                found.0.status.success(),
                "server {server_env}, CLI {cli_env}={value}: {stderr}"
            );
        }
        // A server's whole list does not say which operator the CLI is.
        let list = format!("{entry},other=another-token-0123456789abcdef");
        let found = run(
            &["admin", "find", "--session-url", &url],
            &[("HF_ADMIN_TOKEN", &list)],
        );
        assert_clean_failure(&found, &["HF_ADMIN_TOKEN", "several entries"]);
    }
}

#[test]
fn listen_addresses_and_the_pool_size_are_checked() {
    let outcome = run(&["serve", "--listen", ":0"], &[]);
    assert_refused_by_parser(&outcome.0, &["--listen", "127.0.0.1:0", "0.0.0.0:0"]);
    for size in ["0", "1001"] {
        let outcome = run(&["serve", "--database-max-connections", size], &[]);
        assert_refused_by_parser(&outcome.0, &["--database-max-connections", "1..=1000"]);
    }
}
