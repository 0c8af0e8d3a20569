//! The gateway's fan-out against a real session service on a loopback socket (in-memory store):
//! a client that stops reading is cut off with a resume hint while another keeps every event, and
//! resuming from the hint continues with no gap and no duplicate.

use futures_util::future::BoxFuture;
use hidden_front_gateway::auth::{AuthConfig, Authenticator, Player};
use hidden_front_gateway::{Gateway, GatewayConfig, SessionClient};
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use hidden_front_proto::v1::session_service_server::SessionServiceServer;
use hidden_front_session::{SessionConfig, SessionService};
use hidden_front_store::memory::MemoryStore;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_stream::StreamExt;
use tonic::server::NamedService;

const DEADLINE: Duration = Duration::from_secs(20);

async fn session() -> SessionClient {
    session_refusing_presence(Arc::default()).await
}

/// A session on loopback that refuses its next `refusals` presence reports with `UNAVAILABLE`
/// (a session busy or restarting when a player connects), counting them down.
async fn session_refusing_presence(refusals: Arc<AtomicUsize>) -> SessionClient {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = SessionService::new(Arc::new(MemoryStore::new()), SessionConfig::default());
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(RefusingPresence {
                inner: SessionServiceServer::new(service),
                refusals,
            })
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

/// The session service behind [`session_refusing_presence`].
#[derive(Clone)]
struct RefusingPresence {
    inner: SessionServiceServer<SessionService>,
    refusals: Arc<AtomicUsize>,
}

impl NamedService for RefusingPresence {
    const NAME: &'static str = <SessionServiceServer<SessionService> as NamedService>::NAME;
}

impl tower::Service<axum::http::Request<tonic::body::Body>> for RefusingPresence {
    type Response = axum::http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        tower::Service::<axum::http::Request<tonic::body::Body>>::poll_ready(&mut self.inner, cx)
    }

    fn call(&mut self, request: axum::http::Request<tonic::body::Body>) -> Self::Future {
        let refused = request.uri().path().ends_with("/ReportPresence")
            && self
                .refusals
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
        if refused {
            return Box::pin(async {
                Ok(
                    tonic::Status::unavailable("the test's session refuses this report")
                        .into_http(),
                )
            });
        }
        Box::pin(tower::Service::call(&mut self.inner, request))
    }
}

/// A session on loopback, a gateway over it, and a game between sue (south) and ned (north).
async fn setup(config: GatewayConfig) -> (SessionClient, Gateway, String) {
    setup_over(session().await, config).await
}

/// A gateway over `session`, and a game between sue (south) and ned (north).
async fn setup_over(
    mut session: SessionClient,
    config: GatewayConfig,
) -> (SessionClient, Gateway, String) {
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
        bot: false,
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
        with_status: false,
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
            Some(pb::subscribe_response::Item::Status(s)) => panic!("not asked for: {s:?}"),
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
    let (session, gateway, game) = setup(GatewayConfig::default()).await;
    assert_eq!(presence(&session, &game).await, (false, false));
    let request = pb::SubscribeRequest {
        game_id: game.clone(),
        from_seq: 1,
        spectate: false,
        with_status: false,
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
    until_presence(&session, &game, (false, true)).await;
    drop(first);
    drop(watcher);
    // One of north's two streams is still open; a spectating south is not "connected".
    assert_eq!(presence(&session, &game).await, (false, true));
    drop(second);
    until_presence(&session, &game, (false, false)).await;
}

/// A seat whose first presence report the session refused is reported again at once, not at
/// the next renewal: here the lease is ten minutes (renewals every 100 s or more), and the
/// player still shows as connected within the test's deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_presence_report_is_sent_again_before_the_renewal() {
    let refusals = Arc::new(AtomicUsize::new(2));
    let (session, gateway, game) = setup_over(
        session_refusing_presence(refusals.clone()).await,
        GatewayConfig {
            presence_lease: Duration::from_secs(600),
            ..GatewayConfig::default()
        },
    )
    .await;
    let _stream = gateway
        .subscribe(
            &player("ned"),
            pb::SubscribeRequest {
                game_id: game.clone(),
                from_seq: 1,
                spectate: false,
                with_status: false,
            },
        )
        .await
        .unwrap();
    // North shows as connected long before the next renewal.
    until_presence(&session, &game, (false, true)).await;
    assert_eq!(
        refusals.load(Ordering::SeqCst),
        0,
        "both refusals were used"
    );
}

/// `game` as the session shows it to a spectator.
async fn spectator_view(session: &SessionClient, game: &str) -> pb::GameView {
    session
        .clone()
        .get_game(pb::GetGameRequest {
            game_id: game.to_owned(),
            viewer: pb::Viewer::Spectator as i32,
        })
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap()
}

/// Whether the session counts (south, north) of `game` as connected.
async fn presence(session: &SessionClient, game: &str) -> (bool, bool) {
    let view = spectator_view(session, game).await;
    (view.south_connected, view.north_connected)
}

/// Waits, within [`DEADLINE`], until the session counts `game`'s seats as `want`.
async fn until_presence(session: &SessionClient, game: &str, want: (bool, bool)) {
    tokio::time::timeout(DEADLINE, async {
        while presence(session, game).await != want {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("presence never became {want:?}"));
}

/// The next item of a gateway stream, within [`DEADLINE`].
async fn next_item(
    stream: &mut tokio_stream::wrappers::ReceiverStream<
        Result<pb::SubscribeResponse, tonic::Status>,
    >,
) -> pb::subscribe_response::Item {
    tokio::time::timeout(DEADLINE, stream.next())
        .await
        .expect("an item in time")
        .expect("the stream stays open")
        .expect("an item, not an error")
        .item
        .expect("a known item")
}

/// Events until a status item: their seqs and the status.
async fn until_status(
    stream: &mut tokio_stream::wrappers::ReceiverStream<
        Result<pb::SubscribeResponse, tonic::Status>,
    >,
) -> (Vec<u64>, pb::GameStatus) {
    let mut seqs = Vec::new();
    loop {
        match next_item(stream).await {
            pb::subscribe_response::Item::Event(event) => seqs.push(event.seq),
            pb::subscribe_response::Item::Status(status) => return (seqs, status),
            pb::subscribe_response::Item::Reconnect(hint) => panic!("a reconnect: {hint:?}"),
        }
    }
}

/// A subscription that asks for the status gets the game's status from the game's one upstream
/// (no read per connection): once caught up, after the events that change it and never ahead of
/// the events it has sent, and when the opponent connects (its own presence report). A
/// subscription that does not ask gets none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_that_ask_get_the_status_with_the_events() {
    let (mut session, gateway, game) = setup(GatewayConfig::default()).await;
    let request = |spectate, with_status| pb::SubscribeRequest {
        game_id: game.clone(),
        from_seq: 1,
        spectate,
        with_status,
    };
    let mut spectator = gateway
        .subscribe(&player("sam"), request(true, true))
        .await
        .unwrap();
    let (seqs, status) = until_status(&mut spectator).await;
    // Caught up first: every event up to the status's version was sent (a spectator is shown
    // the creation, not the drafts).
    assert_eq!(seqs, [1]);
    assert_eq!(status.version, 3, "the game's version after the two drafts");
    assert!(!status.south_connected && !status.north_connected);

    // Sue opens the game (without asking for the status): her presence report flips south to
    // connected, and the spectator is told.
    let mut sue = gateway
        .subscribe(&player("sue"), request(false, false))
        .await
        .unwrap();
    let (seqs, status) = until_status(&mut spectator).await;
    assert!(seqs.is_empty() && status.south_connected && !status.north_connected);

    // Both confirm: the events, then the status with the move clock of the first mover.
    let mut version = 0;
    for side in [pb::Side::South, pb::Side::North] {
        version = session
            .confirm_deployment(pb::ConfirmDeploymentRequest {
                context: Some(pb::CommandContext {
                    game_id: game.clone(),
                    side: side as i32,
                    idempotency_key: "confirm".into(),
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
    let (mut seqs, mut status) = until_status(&mut spectator).await;
    while status.version < version {
        // The first confirmation's status may come before the second's events.
        let (more, next) = until_status(&mut spectator).await;
        seqs.extend(more);
        status = next;
    }
    assert_eq!(
        seqs.last(),
        Some(&version),
        "the events before their status"
    );
    assert_eq!(status.version, version);
    let view = spectator_view(&session, &game).await;
    assert_eq!(
        status.turn_deadline_unix_millis, view.turn_deadline_unix_millis,
        "the stream's status is GetGame's"
    );
    assert_ne!(status.turn_deadline_unix_millis, 0);

    // Sue's own stream asked for no status: events only, up to play's start.
    let mut told = Vec::new();
    while told.last() != Some(&version) {
        match next_item(&mut sue).await {
            pb::subscribe_response::Item::Event(event) => told.push(event.seq),
            other => panic!("sue did not ask for {other:?}"),
        }
    }
}
