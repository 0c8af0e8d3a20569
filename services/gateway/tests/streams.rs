//! The gateway's fan-out against a real session service on a loopback socket (in-memory store):
//! a client that stops reading is cut off with a resume hint while another keeps every event, and
//! resuming from the hint continues with no gap and no duplicate.

use hidden_front_gateway::auth::{AuthConfig, Authenticator, Player};
use hidden_front_gateway::{Gateway, GatewayConfig, SessionClient};
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use hidden_front_proto::v1::session_service_server::SessionServiceServer;
use hidden_front_session::{SessionConfig, SessionService};
use hidden_front_store::memory::MemoryStore;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_stream::StreamExt;

const DEADLINE: Duration = Duration::from_secs(20);

async fn session() -> SessionClient {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = SessionService::new(Arc::new(MemoryStore::new()), SessionConfig::default());
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(SessionServiceServer::new(service))
            .serve_with_incoming(
                tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            ),
    );
    SessionServiceClient::new(
        tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect_lazy()
            .into(),
    )
}

/// A session on loopback, a gateway over it, and a game between sue (south) and ned (north).
async fn setup(config: GatewayConfig) -> (SessionClient, Gateway, String) {
    let mut session = session().await;
    let gateway = Gateway::new(
        config,
        Authenticator::new(AuthConfig::dev()).unwrap(),
        session.clone(),
    );
    let game = session
        .create_game(pb::CreateGameRequest {
            south_player: "sue".into(),
            north_player: "ned".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .game_id;
    (session, gateway, game)
}

fn player(id: &str) -> Player {
    Player {
        id: id.into(),
        guest: true,
    }
}

fn seq_of(item: &pb::SubscribeResponse) -> Option<u64> {
    match &item.item {
        Some(pb::subscribe_response::Item::Event(e)) => Some(e.seq),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_cut_off_with_a_resume_hint() {
    let (mut session, gateway, game) = setup(GatewayConfig {
        stream_buffer: 48,
        max_lag: Duration::ZERO,
        ..GatewayConfig::default()
    })
    .await;
    let subscribe = |from_seq| pb::SubscribeRequest {
        game_id: game.clone(),
        from_seq,
        spectate: false,
    };
    let mut slow = gateway
        .subscribe(&player("sue"), subscribe(1))
        .await
        .unwrap();
    let mut fast = gateway
        .subscribe(&player("sue"), subscribe(1))
        .await
        .unwrap();
    // Keeps the game's hub (and its log) alive for the resume at the end, as other players'
    // connections would.
    let _keeper = gateway
        .subscribe(&player("ned"), subscribe(u64::MAX))
        .await
        .unwrap();
    // The fast client reads as events come; it stops at the end of deployment reshuffles.
    let (last_tx, mut last_rx) = tokio::sync::watch::channel(0u64);
    let fast_reader = tokio::spawn(async move {
        let mut seen = Vec::new();
        loop {
            let target = *last_rx.borrow_and_update();
            if target != 0 && seen.last() == Some(&target) {
                return seen;
            }
            tokio::select! {
                item = fast.next() => {
                    let item = item.expect("the fast stream stays open").unwrap();
                    seen.push(seq_of(&item).expect("no reconnect for a client that reads"));
                }
                changed = last_rx.changed() => changed.unwrap(),
            }
        }
    });

    // 120 events: south reshuffles its draft again and again.
    let mut version = 0;
    for i in 0..120 {
        version = session
            .reshuffle_deployment(pb::ReshuffleDeploymentRequest {
                context: Some(pb::CommandContext {
                    game_id: game.clone(),
                    side: pb::Side::South as i32,
                    idempotency_key: format!("r{i}"),
                    expected_version: None,
                }),
            })
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap()
            .version;
    }

    // The fast client sees every event south may see, 1..=version, in order.
    last_tx.send(version).unwrap();
    let seen = tokio::time::timeout(DEADLINE, fast_reader)
        .await
        .expect("the fast client keeps receiving")
        .unwrap();
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "in order, no duplicates"
    );
    // North's initial draft (seq 3) is hidden from south; everything else arrives.
    let expected: Vec<u64> = (1..=version).filter(|&s| s != 3).collect();
    assert_eq!(seen, expected);

    // The slow client gets what was queued for it, then a hint to resume from the first event
    // it did not get, then the end of its stream.
    let mut got = Vec::new();
    let hint = loop {
        let item = tokio::time::timeout(DEADLINE, slow.next())
            .await
            .expect("the slow client is answered")
            .expect("the slow stream ends only after the hint")
            .unwrap();
        match item.item {
            Some(pb::subscribe_response::Item::Event(e)) => got.push(e.seq),
            Some(pb::subscribe_response::Item::Reconnect(r)) => break r,
            None => panic!("an empty item"),
        }
    };
    assert!(got.len() < expected.len(), "the slow client was cut off");
    let resume_from = hint.resume_from_seq;
    assert_eq!(resume_from, got.last().map_or(1, |s| s + 1));
    assert!(
        tokio::time::timeout(DEADLINE, slow.next())
            .await
            .unwrap()
            .is_none(),
        "the stream ends after the hint"
    );

    // Resuming from the hint fills the gap exactly.
    let mut resumed = gateway
        .subscribe(&player("sue"), subscribe(resume_from))
        .await
        .unwrap();
    while got.last() != Some(&version) {
        let item = tokio::time::timeout(DEADLINE, resumed.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        got.push(seq_of(&item).unwrap_or_else(|| panic!("{item:?} after {got:?}")));
    }
    assert_eq!(got, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seated_players_stream_is_their_presence() {
    let (mut session, gateway, game) = setup(GatewayConfig::default()).await;
    let presence = |session: &mut SessionServiceClient<_>| {
        let request = pb::GetGameRequest {
            game_id: game.clone(),
            viewer: pb::Viewer::Spectator as i32,
        };
        let mut session = session.clone();
        async move {
            let view = session
                .get_game(request)
                .await
                .unwrap()
                .into_inner()
                .game
                .unwrap();
            (view.south_connected, view.north_connected)
        }
    };
    // Waits (with a deadline) until the session sees the expected presence.
    async fn until<F: std::future::Future<Output = (bool, bool)>>(
        mut look: impl FnMut() -> F,
        want: (bool, bool),
    ) {
        tokio::time::timeout(DEADLINE, async {
            while look().await != want {
                tokio::task::yield_now().await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("presence never became {want:?}"));
    }
    assert_eq!(presence(&mut session).await, (false, false));
    let request = pb::SubscribeRequest {
        game_id: game.clone(),
        from_seq: 1,
        spectate: false,
    };
    let first = gateway
        .subscribe(&player("ned"), request.clone())
        .await
        .unwrap();
    let second = gateway
        .subscribe(&player("ned"), request.clone())
        .await
        .unwrap();
    let watcher = gateway
        .subscribe(
            &player("sue"),
            pb::SubscribeRequest {
                spectate: true,
                ..request
            },
        )
        .await
        .unwrap();
    until(|| presence(&mut session), (false, true)).await;
    drop(first);
    drop(watcher);
    // One of north's two streams is still open; a spectating south is not "connected".
    assert_eq!(presence(&mut session).await, (false, true));
    drop(second);
    until(|| presence(&mut session), (false, false)).await;
}
