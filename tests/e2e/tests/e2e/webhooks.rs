//! Webhooks end to end: a real `hidden-front serve` on Postgres with a webhooks configuration,
//! and real receiver processes (`webhook-receiver`, this crate's binary) on loopback.
//!
//! - A receiver SIGKILLed and restarted on the same port in the middle of a stream of games:
//!   afterwards every fact of `WatchLifecycle` from 0 arrived, none missing, duplicates only with
//!   an identical id, every signature verified. Beside it, a receiver answering 500 for its
//!   first requests gets every fact after it recovers.
//! - A receiver that always answers 500 under a short horizon: every fact ends in the dead-letter
//!   list (`ListDeadLetters`, `hidden-front webhooks dead-letters`); after it recovers,
//!   `hidden-front webhooks replay --all` delivers them with their ids, and the list empties.
//! - Two session processes on one database with the same configuration, both writing games:
//!   each fact is delivered exactly once to the endpoint (only the lease holder sends).
//! - A tournament's facts (created, started, its round, finished with the table) are delivered
//!   as CloudEvents whose subject is the tournament, beside its game's own.

use hidden_front_e2e::client::{create_game, resign};
use hidden_front_e2e::{Server, TestDatabase, binary, pb};
use pb::webhook_admin_service_client::WebhookAdminServiceClient;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio_stream::StreamExt;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ADMIN_TOKEN: &str = "e2e-admin-token-0123456789";
const DEADLINE: Duration = Duration::from_secs(60);

/// A `webhook-receiver` process.
struct Receiver {
    port: u16,
    out: PathBuf,
    flags: Vec<String>,
    child: Option<Child>,
}

impl Receiver {
    /// Starts one on a free port, writing to `out`, with further `flags`.
    fn start(out: PathBuf, flags: &[&str]) -> Receiver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut receiver = Receiver {
            port,
            out,
            flags: flags.iter().map(|f| f.to_string()).collect(),
            child: None,
        };
        receiver.spawn();
        receiver
    }

    /// Starts the process (on the same port) and waits for its listening line.
    fn spawn(&mut self) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_webhook-receiver"))
            .args([
                "--port",
                &self.port.to_string(),
                "--secret",
                SECRET,
                "--out",
            ])
            .arg(&self.out)
            .args(&self.flags)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start webhook-receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the receiver's first line");
        assert!(
            line.starts_with("webhook-receiver listening on "),
            "{line:?}"
        );
        self.child = Some(child);
    }

    /// SIGKILL.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port with `flags`.
    fn restart(&mut self, flags: &[&str]) {
        self.kill();
        self.flags = flags.iter().map(|f| f.to_string()).collect();
        self.spawn();
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hooks", self.port)
    }

    /// Every line written so far.
    fn lines(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }

    /// The ids acknowledged (status 200) so far.
    fn acknowledged(&self) -> HashSet<String> {
        self.lines()
            .iter()
            .filter(|l| l["status"] == 200)
            .map(|l| l["id"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// Waits until every id of `facts` was acknowledged.
    async fn wait_for_all(&self, facts: &[pb::LifecycleFact]) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let acked = self.acknowledged();
            let missing: Vec<&pb::LifecycleFact> =
                facts.iter().filter(|f| !acked.contains(&f.id)).collect();
            if missing.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} facts never arrived at {}, first {:?}",
                missing.len(),
                self.url(),
                missing[0]
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.kill();
    }
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("hf-e2e-{name}-{}", uuid::Uuid::new_v4().simple()))
}

/// Writes a webhooks configuration for `endpoints` (name, url) with `horizon_ms`.
fn write_config(endpoints: &[(&str, String)], horizon_ms: u64) -> PathBuf {
    write_config_with_lease(endpoints, horizon_ms, 3000)
}

/// [`write_config`] with a lease of `lease_ms`.
fn write_config_with_lease(
    endpoints: &[(&str, String)],
    horizon_ms: u64,
    lease_ms: u64,
) -> PathBuf {
    let endpoints: Vec<serde_json::Value> = endpoints
        .iter()
        .map(|(name, url)| serde_json::json!({"name": name, "url": url, "secrets": [SECRET]}))
        .collect();
    let config = serde_json::json!({
        "source": "/hiddenfront/e2e",
        "delivery": {"timeout_ms": 1000, "initial_backoff_ms": 20, "max_backoff_ms": 200,
                     "horizon_ms": horizon_ms, "lease_ms": lease_ms, "safety_poll_ms": 200},
        "endpoints": endpoints,
    });
    let path = temp_path("webhooks.json");
    std::fs::write(&path, config.to_string()).expect("write the config");
    path
}

async fn start_server(db: &TestDatabase, config: &Path) -> Server {
    start_named(db, config, "webhooks").await
}

async fn start_named(db: &TestDatabase, config: &Path, name: &str) -> Server {
    let admin = format!("oncall={ADMIN_TOKEN}");
    Server::start_with_args(
        name,
        db.url(),
        &[
            "--webhooks-config",
            config.to_str().unwrap(),
            "--admin-token",
            &admin,
        ],
    )
    .await
}

/// Facts of one game of [`play_games`]: created, seats filled, ended.
const FACTS_PER_GAME: usize = 3;

/// Plays `n` short games (created, then south resigns during deployment).
async fn play_games(server: &Server, tag: &str, n: usize) {
    play_games_at(server.session_addr(), tag, n).await;
}

/// [`play_games`] on the session at `addr`.
async fn play_games_at(addr: std::net::SocketAddr, tag: &str, n: usize) {
    let mut client = hidden_front_e2e::client::connect(addr).await;
    for i in 0..n {
        let created = create_game(&mut client, "alice", "bob", &format!("{tag}-{i}")).await;
        resign(
            &mut client,
            &created.game_id,
            pb::Side::South,
            &format!("{tag}-{i}-resign"),
            None,
        )
        .await
        .expect("resign");
    }
}

/// The first `expected` facts of `WatchLifecycle` from 0 (every fact the test wrote).
async fn all_facts(server: &Server, expected: usize) -> Vec<pb::LifecycleFact> {
    let mut client = server.connect().await;
    let mut stream = client
        .watch_lifecycle(pb::WatchLifecycleRequest {
            after_cursor: 0,
            ..Default::default()
        })
        .await
        .expect("WatchLifecycle")
        .into_inner();
    let mut facts: Vec<pb::LifecycleFact> = Vec::new();
    while facts.len() < expected {
        match tokio::time::timeout(DEADLINE, stream.next()).await {
            Ok(Some(item)) => facts.push(item.expect("a fact").fact.expect("fact set")),
            Ok(None) => panic!("WatchLifecycle ended"),
            Err(_) => panic!("only {} of {expected} facts on WatchLifecycle", facts.len()),
        }
    }
    facts
}

async fn admin(server: &Server) -> WebhookAdminServiceClient<tonic::transport::Channel> {
    WebhookAdminServiceClient::new(
        tonic::transport::Endpoint::from_shared(format!("http://{}", server.session_addr()))
            .expect("an address")
            .connect()
            .await
            .expect("connect the admin client"),
    )
}

fn authed<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {ADMIN_TOKEN}").parse().unwrap(),
    );
    request
}

/// Checks a receiver's file against `facts`: every fact acknowledged, every request verified
/// and carrying its CloudEvent's id, repeated ids only for the same fact.
fn check_deliveries(receiver: &Receiver, facts: &[pb::LifecycleFact]) {
    let by_id: HashMap<&str, &pb::LifecycleFact> =
        facts.iter().map(|f| (f.id.as_str(), f)).collect();
    let lines = receiver.lines();
    for line in &lines {
        let id = line["id"].as_str().expect("webhook-id");
        assert_eq!(
            line["event_id"], id,
            "webhook-id is the CloudEvent id: {line}"
        );
        assert_eq!(line["verified"], true, "unverified delivery {line}");
        assert_eq!(line["content_type"], "application/cloudevents+json");
        let fact = by_id
            .get(id)
            .unwrap_or_else(|| panic!("a delivery of no fact: {line}"));
        assert_eq!(line["position"], fact.cursor, "{line}");
        assert_eq!(line["type"], fact.r#type.as_str(), "{line}");
    }
    let acked = receiver.acknowledged();
    for fact in facts {
        assert!(
            acked.contains(&fact.id),
            "fact {} never acknowledged",
            fact.cursor
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_killed_and_restarted_and_one_failing_for_a_while_get_every_fact() {
    let db = TestDatabase::create().await;
    let mut killed = Receiver::start(temp_path("killed.jsonl"), &[]);
    let flaky = Receiver::start(temp_path("flaky.jsonl"), &["--fail-first", "12"]);
    let config = write_config(&[("killed", killed.url()), ("flaky", flaky.url())], 120_000);
    let server = start_server(&db, &config).await;

    // Games are played on their own task while the receiver is killed and restarted.
    let session = server.session_addr();
    let writer = tokio::spawn(async move { play_games_at(session, "stream", 9).await });
    let deadline = Instant::now() + DEADLINE;
    while killed.acknowledged().len() < 6 {
        assert!(Instant::now() < deadline, "no deliveries before the kill");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    killed.kill();
    let deadline = Instant::now() + DEADLINE;
    while flaky.lines().len() < 20 && !writer.is_finished() {
        assert!(
            Instant::now() < deadline,
            "no progress while the receiver was down"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    killed.restart(&[]);
    writer.await.expect("the games");

    let facts = all_facts(&server, 9 * FACTS_PER_GAME).await;
    killed.wait_for_all(&facts).await;
    flaky.wait_for_all(&facts).await;
    check_deliveries(&killed, &facts);
    check_deliveries(&flaky, &facts);
    let refused = flaky.lines().iter().filter(|l| l["status"] == 500).count();
    assert_eq!(refused, 12, "the flaky receiver refused its first 12");

    let mut admin = admin(&server).await;
    let last = facts.last().unwrap().cursor;
    // The receivers record a fact before answering; the cursor moves once the answer is back.
    let deadline = Instant::now() + DEADLINE;
    let endpoints = loop {
        let endpoints = admin
            .list_endpoints(authed(pb::ListEndpointsRequest {}))
            .await
            .expect("ListEndpoints")
            .into_inner()
            .endpoints;
        if endpoints.iter().all(|e| e.cursor == last) || Instant::now() > deadline {
            break endpoints;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(endpoints.len(), 2);
    for endpoint in &endpoints {
        assert_eq!(endpoint.cursor, last, "{endpoint:?}");
        assert_eq!(endpoint.lag, 0);
        assert_eq!(endpoint.dead_letters, 0);
        assert!(!endpoint.lease_holder.is_empty());
    }
    // Without the admin token: refused, with a reason.
    let refused = admin
        .list_endpoints(pb::ListEndpointsRequest {})
        .await
        .expect_err("no token");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    drop(server);
    let _ = std::fs::remove_file(config);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_never_recovers_ends_in_dead_letters_that_a_replay_delivers() {
    let db = TestDatabase::create().await;
    let mut down = Receiver::start(temp_path("down.jsonl"), &["--fail-always"]);
    let config = write_config(&[("down", down.url())], 300);
    let server = start_server(&db, &config).await;
    // Before any fact: the endpoint's counters are there, at 0 (dashboards and alerts read 0,
    // not "no data").
    let start =
        hidden_front_e2e::metrics::scrape(server.metrics_addr().expect("a metrics port")).await;
    for (name, outcome) in [
        ("hf_webhook_dead_letters_total", None),
        ("hf_webhook_deliveries_total", Some("failed")),
        ("hf_webhook_deliveries_total", Some("parked")),
    ] {
        let labels: Vec<(&str, &str)> = std::iter::once(("endpoint", "down"))
            .chain(outcome.map(|o| ("outcome", o)))
            .collect();
        let series = hidden_front_e2e::metrics::samples(&start)
            .into_iter()
            .filter(|(n, l, _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|(_, _, value)| value)
            .collect::<Vec<_>>();
        assert_eq!(series, [0.0], "{name} {labels:?} at start:\n{start}");
    }
    play_games(&server, "parked", 2).await;
    let facts = all_facts(&server, 2 * FACTS_PER_GAME).await;

    let mut admin = admin(&server).await;
    let deadline = Instant::now() + DEADLINE;
    let letters = loop {
        let letters = admin
            .list_dead_letters(authed(pb::ListDeadLettersRequest {
                endpoint: "down".into(),
            }))
            .await
            .expect("ListDeadLetters")
            .into_inner()
            .dead_letters;
        if letters.len() == facts.len() {
            break letters;
        }
        assert!(
            Instant::now() < deadline,
            "only {} dead letters",
            letters.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for (letter, fact) in letters.iter().zip(&facts) {
        assert_eq!((letter.position, &letter.fact_id), (fact.cursor, &fact.id));
        assert!(letter.attempts >= 2, "{letter:?}");
        assert!(letter.last_error.contains("500"), "{letter:?}");
    }
    assert!(down.acknowledged().is_empty());
    let unknown = admin
        .replay_dead_letters(authed(pb::ReplayDeadLettersRequest {
            endpoint: "nope".into(),
            position: 0,
        }))
        .await
        .expect_err("unknown endpoint");
    assert_eq!(unknown.code(), tonic::Code::NotFound);

    // The CLI lists them too.
    let session_url = format!("http://{}", server.session_addr());
    let cli = |args: &[&str]| {
        let output = Command::new(binary())
            .arg("webhooks")
            .args(args)
            .args(["--session-url", &session_url, "--admin-token", ADMIN_TOKEN])
            .output()
            .expect("run hidden-front webhooks");
        assert!(
            output.status.success(),
            "hidden-front webhooks {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("UTF-8")
    };
    let listed = cli(&["dead-letters", "--endpoint", "down"]);
    assert_eq!(listed.lines().count(), facts.len(), "{listed}");

    // Recovered: a replay of all of them delivers every one, with its id.
    down.restart(&[]);
    let replayed = cli(&["replay", "--endpoint", "down", "--all"]);
    assert!(
        replayed.contains(&format!("\"requested\":\"{}\"", facts.len())),
        "{replayed}"
    );
    down.wait_for_all(&facts).await;
    check_deliveries(&down, &facts);
    let deadline = Instant::now() + DEADLINE;
    while !cli(&["dead-letters"]).trim().is_empty() {
        assert!(Instant::now() < deadline, "replayed letters stay listed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let endpoints = cli(&["endpoints"]);
    assert!(endpoints.contains("\"name\":\"down\""), "{endpoints}");
    // The metrics say the same, labelled by the endpoint's name only.
    let metrics_addr = server.metrics_addr().expect("a metrics port");
    let text = hidden_front_e2e::metrics::scrape(metrics_addr).await;
    let down = [("endpoint", "down")];
    let count =
        |name: &str, labels: &[(&str, &str)]| hidden_front_e2e::metrics::value(&text, name, labels);
    assert_eq!(
        count("hf_webhook_dead_letters_total", &down),
        facts.len() as f64
    );
    assert_eq!(
        count(
            "hf_webhook_deliveries_total",
            &[("endpoint", "down"), ("outcome", "replayed")]
        ),
        facts.len() as f64
    );
    assert!(
        count(
            "hf_webhook_deliveries_total",
            &[("endpoint", "down"), ("outcome", "failed")]
        ) >= 2.0 * facts.len() as f64
    );
    drop(server);
    let _ = std::fs::remove_file(config);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_session_replicas_writing_at_once_deliver_each_fact_once() {
    let db = TestDatabase::create().await;
    let receiver = Receiver::start(temp_path("replicas.jsonl"), &[]);
    // A long lease: on a loaded machine a renewal must never be late in this steady-state test.
    let config = write_config_with_lease(&[("shared", receiver.url())], 120_000, 20_000);
    let one = start_named(&db, &config, "replica-1").await;
    let two = start_named(&db, &config, "replica-2").await;
    tokio::join!(play_games(&one, "one", 5), play_games(&two, "two", 5));
    let facts = all_facts(&one, 10 * FACTS_PER_GAME).await;
    receiver.wait_for_all(&facts).await;
    check_deliveries(&receiver, &facts);
    let mut sent: HashMap<String, usize> = HashMap::new();
    for line in receiver.lines() {
        *sent
            .entry(line["id"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    let twice: Vec<_> = sent.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "sent more than once: {twice:?}");
    assert_eq!(sent.len(), facts.len());
    drop((one, two));
    let _ = std::fs::remove_file(config);
}

/// A tournament's facts reach a webhook as CloudEvents about the tournament: created, started,
/// its round with the pair, finished with the table, once each, beside its game's own facts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tournaments_facts_reach_a_webhook_about_the_tournament() {
    use pb::organiser_service_client::OrganiserServiceClient;
    let db = TestDatabase::create().await;
    let receiver = Receiver::start(temp_path("tournament.jsonl"), &[]);
    let config = write_config(&[("league", receiver.url())], 120_000);
    let server = start_server(&db, &config).await;
    let channel =
        tonic::transport::Endpoint::from_shared(format!("http://{}", server.session_addr()))
            .expect("an address")
            .connect()
            .await
            .expect("connect the organiser client");
    OrganiserServiceClient::new(channel.clone())
        .create_tournament(authed(pb::CreateTournamentRequest {
            tournament_id: "hook-cup".into(),
            format: pb::TournamentFormat::RoundRobin as i32,
            entrants: vec!["hook-ann".into(), "hook-bob".into()],
            ..Default::default()
        }))
        .await
        .expect("CreateTournament");
    // The one game of its one round, resigned by north as soon as it exists.
    let bulk_id = "tournament:hook-cup:round:1";
    let deadline = Instant::now() + DEADLINE;
    let (game_id, south, north) = loop {
        let answer = OrganiserServiceClient::new(channel.clone())
            .get_bulk(authed(pb::GetBulkRequest {
                bulk_id: bulk_id.into(),
            }))
            .await;
        if let Ok(answer) = answer
            && let Some(game) = answer
                .into_inner()
                .bulk
                .and_then(|b| b.games.into_iter().next())
            && !game.game_id.is_empty()
        {
            break (game.game_id, game.south_player, game.north_player);
        }
        assert!(Instant::now() < deadline, "round 1 never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut session = server.connect().await;
    resign(&mut session, &game_id, pb::Side::North, "hook-resign", None)
        .await
        .expect("resign");
    let deadline = Instant::now() + DEADLINE;
    // Acknowledged deliveries about the tournament, a redelivery (same id) counted once.
    let about_it = || -> Vec<serde_json::Value> {
        let mut seen = HashSet::new();
        receiver
            .lines()
            .into_iter()
            .filter(|l| l["status"] == 200 && l["subject"] == "tournaments/hook-cup")
            .filter(|l| seen.insert(l["id"].to_string()))
            .collect()
    };
    while !about_it()
        .iter()
        .any(|l| l["type"] == "hiddenfront.tournament.finished.v1")
    {
        assert!(
            Instant::now() < deadline,
            "no finish delivered: {:?}",
            receiver.lines()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let delivered = about_it();
    let types: Vec<&str> = delivered
        .iter()
        .filter_map(|l| l["type"].as_str())
        .collect();
    assert_eq!(
        types,
        [
            "hiddenfront.tournament.created.v1",
            "hiddenfront.tournament.started.v1",
            "hiddenfront.tournament.round_started.v1",
            "hiddenfront.tournament.finished.v1",
        ]
    );
    for line in &delivered {
        assert_eq!(line["verified"], true, "{line}");
        assert_eq!(line["data"]["tournament_id"], "hook-cup", "{line}");
        assert!(line["data"].get("game_id").is_none(), "{line}");
    }
    assert_eq!(
        delivered[2]["data"]["pairs"],
        serde_json::json!([{"south_player": south, "north_player": north}])
    );
    let mut pair = [south.as_str(), north.as_str()];
    pair.sort();
    assert_eq!(pair, ["hook-ann", "hook-bob"]);
    let table = &delivered[3]["data"]["standings"];
    assert_eq!(table[0]["player"], south.as_str(), "south won: {table}");
    assert_eq!(table[0]["score"], 1.0);
    // The game's own facts are about the game.
    assert!(
        receiver
            .lines()
            .iter()
            .any(|l| l["subject"] == format!("games/{game_id}")
                && l["type"] == "hiddenfront.game.ended.v1"),
        "the game's end is delivered too"
    );
}
