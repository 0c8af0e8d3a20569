//! The public port never serves the session's internal API: with the gateway and the session in
//! one process, `SessionService` (full information, no player authentication) answers only on
//! the internal port, and a player reaching the public port finds only `PlayerService`. Each
//! port's reflection lists, and its health knows, exactly the services that port serves, in both
//! reflection versions (`grpc.reflection.v1` and `grpc.reflection.v1alpha`).

use hidden_front_e2e::client::{self, create_game};
use hidden_front_e2e::{Server, TestDatabase, pb};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;
use tonic::Code;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

const PLAYER: &str = "hiddenfront.v1.PlayerService";
const SESSION: &str = "hiddenfront.v1.SessionService";
const ADMIN: &str = "hiddenfront.v1.AdminService";
const CLOCK: &str = "hiddenfront.v1.ClockService";
const MATCHMAKING: &str = "hiddenfront.v1.MatchmakingService";
const ORGANISER: &str = "hiddenfront.v1.OrganiserService";
const HEALTH: &str = "grpc.health.v1.Health";
const REFLECTION: &str = "grpc.reflection.v1.ServerReflection";
const REFLECTION_V1ALPHA: &str = "grpc.reflection.v1alpha.ServerReflection";

/// How long one reflection or health call may take.
const CALL_DEADLINE: Duration = Duration::from_secs(10);

async fn channel(addr: SocketAddr) -> tonic::transport::Channel {
    hidden_front_e2e::gateway::channel(addr).await
}

/// The services the reflection service at `addr` lists, asked in reflection protocol
/// `$version` (`v1` or `v1alpha`, which have the same messages in different packages).
macro_rules! listed_services {
    ($version:ident, $addr:expr) => {{
        use tonic_reflection::pb::$version::ServerReflectionRequest;
        use tonic_reflection::pb::$version::server_reflection_client::ServerReflectionClient;
        use tonic_reflection::pb::$version::server_reflection_request::MessageRequest;
        use tonic_reflection::pb::$version::server_reflection_response::MessageResponse;
        let addr: SocketAddr = $addr;
        let version = stringify!($version);
        let mut client = ServerReflectionClient::new(channel(addr).await);
        let request = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let call = async {
            let mut answers = client
                .server_reflection_info(tokio_stream::iter([request]))
                .await
                .unwrap_or_else(|s| panic!("reflection {version} at {addr}: {s:?}"))
                .into_inner();
            let answer = answers
                .message()
                .await
                .unwrap_or_else(|s| panic!("reflection {version} at {addr}: {s:?}"))
                .expect("an answer");
            match answer.message_response {
                Some(MessageResponse::ListServicesResponse(list)) => list
                    .service
                    .into_iter()
                    .map(|s| s.name)
                    .collect::<BTreeSet<String>>(),
                other => panic!("reflection {version} at {addr}: not a service list: {other:?}"),
            }
        };
        tokio::time::timeout(CALL_DEADLINE, call)
            .await
            .unwrap_or_else(|_| {
                panic!("reflection {version} at {addr}: no answer in {CALL_DEADLINE:?}")
            })
    }};
}

/// The health `Check` of `service` at `addr`: its status, or the refusal's code.
async fn health(addr: SocketAddr, service: &str) -> Result<ServingStatus, Code> {
    let mut client = HealthClient::new(channel(addr).await);
    let request = HealthCheckRequest {
        service: service.to_string(),
    };
    let answer = tokio::time::timeout(CALL_DEADLINE, client.check(request))
        .await
        .unwrap_or_else(|_| panic!("health at {addr}: no answer in {CALL_DEADLINE:?}"));
    match answer {
        Ok(answer) => Ok(answer.into_inner().status()),
        Err(status) => Err(status.code()),
    }
}

/// Asserts that the port at `addr` lists exactly `served` (plus health and both reflection
/// versions) through either reflection version, that its
/// health knows each of them and the overall `""`, and that it answers NOT_FOUND for every other
/// Hidden Front service.
async fn assert_port_serves(addr: SocketAddr, served: &[&str]) {
    let mut expected: BTreeSet<String> = served.iter().map(|s| s.to_string()).collect();
    expected.insert(HEALTH.into());
    expected.insert(REFLECTION.into());
    expected.insert(REFLECTION_V1ALPHA.into());
    assert_eq!(
        listed_services!(v1, addr),
        expected,
        "reflection v1 at {addr}"
    );
    assert_eq!(
        listed_services!(v1alpha, addr),
        expected,
        "reflection v1alpha at {addr}"
    );
    for service in std::iter::once("").chain(served.iter().copied()) {
        assert!(
            health(addr, service).await.is_ok(),
            "health at {addr} knows {service:?}"
        );
    }
    for service in [PLAYER, SESSION, ADMIN, CLOCK, MATCHMAKING, ORGANISER] {
        if !served.contains(&service) {
            assert_eq!(
                health(addr, service).await,
                Err(Code::NotFound),
                "health at {addr} of {service}, which it does not serve"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_port_lists_and_reports_only_what_it_serves() {
    let db = TestDatabase::create().await;
    let all = Server::start("all", db.url()).await;
    assert_port_serves(all.addr(), &[PLAYER]).await;
    assert_port_serves(
        all.session_addr(),
        &[SESSION, ADMIN, CLOCK, MATCHMAKING, ORGANISER],
    )
    .await;
    assert_eq!(health(all.addr(), PLAYER).await, Ok(ServingStatus::Serving));

    let session_only =
        Server::start_with_args("session-only", db.url(), &["--services", "session"]).await;
    assert_eq!(session_only.session_addr(), session_only.addr(), "one port");
    assert_port_serves(session_only.addr(), &[SESSION, ADMIN]).await;
    assert_eq!(
        health(session_only.addr(), SESSION).await,
        Ok(ServingStatus::Serving)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_api_is_not_on_the_public_port() {
    let db = TestDatabase::create().await;
    let server = Server::start("public-port", db.url()).await;
    assert_ne!(
        server.session_addr(),
        server.addr(),
        "a separate internal port"
    );

    let mut internal = server.connect().await;
    let created = create_game(&mut internal, "pia", "pat", "public-port").await;

    let mut public = client::connect(server.addr()).await;
    for viewer in [pb::Viewer::South, pb::Viewer::North, pb::Viewer::Spectator] {
        let refused = public
            .get_game(pb::GetGameRequest {
                game_id: created.game_id.clone(),
                viewer: viewer as i32,
            })
            .await
            .expect_err("the public port answered the session's GetGame");
        assert_eq!(refused.code(), Code::Unimplemented, "{refused:?}");
    }
    let refused = public
        .watch_game(pb::WatchGameRequest {
            game_id: created.game_id.clone(),
            from_seq: 1,
            with_status: true,
        })
        .await
        .expect_err("the public port answered the full-information WatchGame");
    assert_eq!(refused.code(), Code::Unimplemented);
    let refused = public
        .create_game(pb::CreateGameRequest {
            south_player: "x".into(),
            north_player: "y".into(),
            ..Default::default()
        })
        .await
        .expect_err("the public port created a game");
    assert_eq!(refused.code(), Code::Unimplemented);
    // Nor the admin API.
    let mut admin = pb::admin_service_client::AdminServiceClient::new(channel(server.addr()).await);
    let refused = admin
        .find_games(pb::FindGamesRequest::default())
        .await
        .expect_err("the public port answered the admin API");
    assert_eq!(refused.code(), Code::Unimplemented);
}
