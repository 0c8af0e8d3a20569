//! A balanced channel reaches the session by host name (resolved by the gateway
//! itself, as it does for a headless Service) and refuses a URL without a host.

use hidden_front_channel::{BalanceError, Membership, balanced_channel};
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use hidden_front_proto::v1::session_service_server::SessionServiceServer;
use hidden_front_session::{SessionConfig, SessionService};
use hidden_front_store::memory::MemoryStore;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

fn membership() -> Membership {
    Membership {
        health_service: "hiddenfront.v1.SessionService",
        resolve_every: Duration::from_secs(1),
        probe_every: Duration::from_secs(1),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_name_is_resolved_and_served() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let service = SessionService::new(Arc::new(MemoryStore::new()), SessionConfig::default());
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(SessionServiceServer::new(service))
            .serve_with_incoming(
                tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            ),
    );
    // `localhost` may also resolve to ::1, where nothing listens: the balancer must use the
    // address that answers.
    // The server has no health service: no address answers SERVING, so every resolved one
    // is a member.
    let (channel, _) = balanced_channel(
        &format!("http://localhost:{port}"),
        membership(),
        |endpoint| endpoint.connect_timeout(Duration::from_secs(2)),
    )
    .unwrap();
    let mut session = SessionServiceClient::new(channel);
    for i in 0..5 {
        let created = tokio::time::timeout(
            Duration::from_secs(20),
            session.create_game(pb::CreateGameRequest {
                south_player: format!("s{i}"),
                north_player: format!("n{i}"),
                ..Default::default()
            }),
        )
        .await
        .expect("answered in time")
        .expect("created");
        assert_eq!(created.into_inner().version, 3);
    }
}

#[tokio::test]
async fn a_url_without_a_host_is_refused() {
    let refused = balanced_channel("not a url", membership(), |e| e);
    assert!(matches!(refused, Err(BalanceError::BadUrl(_))));
}
