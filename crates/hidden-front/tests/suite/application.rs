//! The application started in process, the way the binary's `serve` starts it: built from its
//! flags with every port at `127.0.0.1:0`, the real ports read back, each port serving what it
//! should, then stopped by its shutdown future.

use crate::common::{http_get, one_box};
use hidden_front::Application;
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use std::net::SocketAddr;
use std::time::Duration;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// How long anything here may take before the test fails (a deadline, not a wait).
const DEADLINE: Duration = Duration::from_secs(30);

async fn health(addr: SocketAddr, service: &str) -> Result<i32, tonic::Status> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("url")
        .connect()
        .await
        .expect("connect");
    let mut client = HealthClient::new(channel);
    client
        .check(HealthCheckRequest {
            service: service.to_string(),
        })
        .await
        .map(|answer| answer.into_inner().status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_one_box_application_serves_on_the_ports_it_reports_and_stops_on_request() {
    let app = Application::build(one_box(&[])).await.expect("build");
    let ports = app.ports();
    let internal = ports.internal.expect("an internal port beside the gateway");
    let http = ports.http.expect("an HTTP port for the gateway");
    for addr in [ports.grpc, internal, http, ports.metrics] {
        assert_ne!(addr.port(), 0, "{ports:?}");
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(app.run_until_stopped(async move {
        let _ = stopped.await;
    }));

    tokio::time::timeout(DEADLINE, async {
        // The public port serves the player API and knows nothing of the session's.
        assert_eq!(
            health(ports.grpc, "hiddenfront.v1.PlayerService")
                .await
                .unwrap(),
            ServingStatus::Serving as i32
        );
        let hidden = health(ports.grpc, "hiddenfront.v1.SessionService")
            .await
            .unwrap_err();
        assert_eq!(hidden.code(), tonic::Code::NotFound, "{hidden:?}");
        // The internal port serves the session, which creates games.
        assert_eq!(
            health(internal, "hiddenfront.v1.SessionService")
                .await
                .unwrap(),
            ServingStatus::Serving as i32
        );
        let mut session = SessionServiceClient::new(
            tonic::transport::Endpoint::from_shared(format!("http://{internal}"))
                .expect("an address")
                .connect()
                .await
                .expect("connect"),
        );
        let created = session
            .create_game(pb::CreateGameRequest {
                south_player: "app-ann".into(),
                north_player: "app-bob".into(),
                idempotency_key: "application-test".into(),
                ..Default::default()
            })
            .await
            .expect("CreateGame")
            .into_inner();
        assert!(!created.game_id.is_empty());
        // The metrics port renders the process's recorder.
        let metrics = http_get(ports.metrics, "/metrics").await;
        assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
        assert!(metrics.contains("hf_"), "{metrics}");
    })
    .await
    .expect("the application answered in time");

    stop.send(()).expect("the application is running");
    tokio::time::timeout(DEADLINE, running)
        .await
        .expect("the application stopped in time")
        .expect("the task")
        .expect("a clean stop");
    assert!(
        tokio::net::TcpStream::connect(ports.grpc).await.is_err(),
        "the gRPC port is closed after the stop"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configuration_that_cannot_run_is_refused_by_name() {
    let args = one_box(&["--services", "matchmaking"]);
    let error = Application::build(args).await.err().expect("refused");
    assert!(format!("{error:#}").contains("--session-url"), "{error:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_in_use_is_named_in_the_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let mut args = one_box(&[]);
    args.http_listen = taken.local_addr().expect("addr");
    let error = Application::build(args).await.err().expect("refused");
    assert!(format!("{error:#}").contains("--http-listen"), "{error:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_webhooks_configuration_is_refused_at_start_naming_the_field() {
    let path = std::env::temp_dir().join(format!("hf-webhooks-{}.json", std::process::id()));
    std::fs::write(
        &path,
        r#"{"endpoints": [{"name": "rewards", "url": "ftp://rewards/hooks",
                           "secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}]}"#,
    )
    .expect("write the file");
    let args = one_box(&["--webhooks-config", path.to_str().expect("a UTF-8 path")]);
    let error = Application::build(args).await.err().expect("refused");
    let text = format!("{error:#}");
    assert!(
        text.contains("endpoints[0].url") && text.contains("ftp://"),
        "{text}"
    );
    let _ = std::fs::remove_file(path);
}

/// The answer's status line and body (after the blank line) of an HTTP/1.1 answer.
fn status_and_body(answer: &str) -> (&str, &str) {
    let status = answer.lines().next().unwrap_or_default();
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_port_says_whether_the_process_lives_and_is_ready() {
    // Every service, in memory: live and ready.
    let app = Application::build(one_box(&[])).await.expect("build");
    let http = app.ports().http.expect("an HTTP port");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(app.run_until_stopped(async move {
        let _ = stopped.await;
    }));
    tokio::time::timeout(DEADLINE, async {
        let live = http_get(http, "/healthz").await;
        assert_eq!(
            status_and_body(&live),
            ("HTTP/1.1 200 OK", r#"{"status":"ok"}"#),
            "{live}"
        );
        let ready = http_get(http, "/readyz").await;
        assert_eq!(
            status_and_body(&ready),
            ("HTTP/1.1 200 OK", r#"{"status":"serving"}"#),
            "{ready}"
        );
    })
    .await
    .expect("the probes answered in time");
    stop.send(()).expect("the application is running");
    tokio::time::timeout(DEADLINE, running)
        .await
        .expect("stopped in time")
        .expect("the task")
        .expect("a clean stop");

    // A gateway whose session does not answer (a port nobody listens on): alive, not ready, and
    // its gRPC health agrees.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    let mut args = one_box(&["--services", "gateway"]);
    args.session_url = Some(format!("http://{closed}"));
    let app = Application::build(args).await.expect("build");
    let ports = app.ports();
    let http = ports.http.expect("an HTTP port");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(app.run_until_stopped(async move {
        let _ = stopped.await;
    }));
    tokio::time::timeout(DEADLINE, async {
        let live = http_get(http, "/healthz").await;
        assert!(live.starts_with("HTTP/1.1 200"), "{live}");
        let ready = http_get(http, "/readyz").await;
        assert_eq!(
            status_and_body(&ready),
            (
                "HTTP/1.1 503 Service Unavailable",
                r#"{"status":"not_serving"}"#
            ),
            "{ready}"
        );
        assert_eq!(
            health(ports.grpc, "").await.expect("health"),
            ServingStatus::NotServing as i32
        );
    })
    .await
    .expect("the probes answered in time");
    stop.send(()).expect("the application is running");
    tokio::time::timeout(DEADLINE, running)
        .await
        .expect("stopped in time")
        .expect("the task")
        .expect("a clean stop");
}
