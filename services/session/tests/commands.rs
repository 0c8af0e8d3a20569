//! The session service in process, on the in-memory store: timers fenced by version, presence,
//! idempotent retries and the codes of refused commands. (The same service over real gRPC, real
//! Postgres and real processes is tested in tests/e2e.)

mod support;

use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_server::SessionService as _;
use hidden_front_rules::Side;
use hidden_front_session::{PulseConfig, SessionConfig, SessionService};
use hidden_front_store::memory::MemoryStore;
use hidden_front_store::{GameStore, Timer, TimerKind, TimerSlot, TimerStore};
use hidden_front_time::ManualClock;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tonic::{Code, Request};

fn service() -> SessionService {
    SessionService::new(Arc::new(MemoryStore::new()), SessionConfig::default())
}

fn ctx(game: &str, side: pb::Side, key: &str) -> Option<pb::CommandContext> {
    Some(pb::CommandContext {
        game_id: game.to_string(),
        side: side as i32,
        idempotency_key: key.to_string(),
        expected_version: None,
    })
}

async fn create(s: &SessionService) -> (String, pb::Side) {
    let created = s
        .create_game(Request::new(pb::CreateGameRequest {
            south_player: "alice".into(),
            north_player: "bob".into(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    (
        created.game_id,
        pb::Side::try_from(created.first_mover).unwrap(),
    )
}

async fn get(s: &SessionService, game: &str, viewer: pb::Viewer) -> pb::GameView {
    s.get_game(Request::new(pb::GetGameRequest {
        game_id: game.into(),
        viewer: viewer as i32,
    }))
    .await
    .unwrap()
    .into_inner()
    .game
    .unwrap()
}

async fn start_play(s: &SessionService, game: &str) -> u64 {
    let mut version = 0;
    for side in [pb::Side::South, pb::Side::North] {
        version = s
            .confirm_deployment(Request::new(pb::ConfirmDeploymentRequest {
                context: ctx(game, side, "confirm"),
            }))
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap()
            .version;
    }
    version
}

/// A session over `store` with a hand-moved clock and `pulse`.
fn session_on<S: GameStore>(
    store: Arc<S>,
    pulse: Option<PulseConfig>,
) -> (SessionService, ManualClock) {
    let clock = ManualClock::at(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    let config = SessionConfig {
        clock: clock.wall_clock(),
        pulse,
        ..SessionConfig::default()
    };
    (SessionService::new(store, config), clock)
}

/// A session on a memory store with a hand-moved clock (and no pulse, the default: the clock's
/// jumps are time passing, not outages; the outage tests below turn it on).
fn timed_service() -> (SessionService, Arc<MemoryStore>, ManualClock) {
    let store = Arc::new(MemoryStore::new());
    let (s, clock) = session_on(store.clone(), None);
    (s, store, clock)
}

/// The timer armed in `game`'s `slot`.
async fn armed<S: TimerStore + ?Sized>(
    store: &Arc<S>,
    game: &str,
    slot: TimerSlot,
) -> Option<Timer> {
    store
        .timers_of(game.parse().unwrap())
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.slot() == slot)
}

/// Fires `timer` as the clock service would.
async fn fire(s: &SessionService, timer: &Timer) -> Result<pb::ApplyTimerResponse, tonic::Status> {
    s.apply_timer(Request::new(pb::ApplyTimerRequest {
        game_id: timer.game_id.to_string(),
        kind: match timer.kind {
            TimerKind::Deployment => pb::TimerKind::Deployment,
            TimerKind::Move => pb::TimerKind::Move,
            TimerKind::Reconnect => pb::TimerKind::Reconnect,
        } as i32,
        armed_version: timer.armed_version,
        side: match timer.side {
            Side::South => pb::Side::South,
            Side::North => pb::Side::North,
        } as i32,
        deadline_unix_millis: timer.fire_at_unix_millis(),
    }))
    .await
    .map(tonic::Response::into_inner)
}

#[tokio::test]
async fn a_move_timer_applies_once_at_its_deadline_and_only_for_its_version() {
    let (s, store, clock) = timed_service();
    let (game, first) = create(&s).await;
    let version = start_play(&s, &game).await;
    let timer = armed(&store, &game, TimerSlot::Turn)
        .await
        .expect("a move clock");
    assert_eq!(timer.kind, TimerKind::Move);
    assert_eq!(timer.armed_version, version);
    assert_eq!(timer.fire_at, clock.now() + Duration::from_secs(30));
    // Both players see the deadline.
    for viewer in [pb::Viewer::South, pb::Viewer::North] {
        let view = get(&s, &game, viewer).await;
        assert_eq!(view.turn_deadline_unix_millis, timer.fire_at_unix_millis());
    }
    // Not due yet by the session's clock: refused, nothing changes.
    let early = fire(&s, &timer).await.unwrap_err();
    assert_eq!(early.code(), Code::FailedPrecondition, "{early:?}");
    clock.advance(Duration::from_secs(30));
    // Stale copies: another version, the other side, another deadline.
    for stale in [
        Timer {
            armed_version: version - 1,
            ..timer
        },
        Timer {
            side: timer.side.other(),
            ..timer
        },
        Timer {
            fire_at: timer.fire_at - Duration::from_secs(1),
            ..timer
        },
    ] {
        let answer = fire(&s, &stale).await.unwrap();
        assert!(!answer.applied, "{stale:?} must be stale");
        assert_eq!(answer.version, version);
    }
    // The real one: a timeout ply.
    let fired = fire(&s, &timer).await.unwrap();
    assert!(fired.applied);
    assert_eq!(fired.version, version + 1);
    // The same fire again (a duplicate delivery): no effect.
    let again = fire(&s, &timer).await.unwrap();
    assert!(!again.applied);
    assert_eq!(again.version, version + 1);
    let view = get(&s, &game, pb::Viewer::Spectator).await;
    let other = if first == pb::Side::South {
        pb::Side::North
    } else {
        pb::Side::South
    };
    assert_eq!(view.to_move, other as i32, "the turn passed");
    let timeouts = if first == pb::Side::South {
        view.south_timeouts
    } else {
        view.north_timeouts
    };
    assert_eq!(timeouts, 1);
    // The next turn got a fresh clock, durable with the timeout itself.
    let next = armed(&store, &game, TimerSlot::Turn).await.unwrap();
    assert_eq!(next.side, timer.side.other());
    assert_eq!(next.armed_version, version + 1);
    assert_eq!(next.fire_at, clock.now() + Duration::from_secs(30));
}

#[tokio::test]
async fn acting_off_turn_never_extends_the_move_clock() {
    let (s, store, clock) = timed_service();
    let (game, first) = create(&s).await;
    start_play(&s, &game).await;
    let before = armed(&store, &game, TimerSlot::Turn).await.unwrap();
    clock.advance(Duration::from_secs(20));
    let other = if first == pb::Side::South {
        pb::Side::North
    } else {
        pb::Side::South
    };
    let offered = s
        .offer_draw(Request::new(pb::OfferDrawRequest {
            context: ctx(&game, other, "offer"),
        }))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    let after = armed(&store, &game, TimerSlot::Turn).await.unwrap();
    assert_eq!(after.fire_at, before.fire_at, "the deadline stands");
    assert_eq!(
        after.armed_version, offered.version,
        "re-fenced to the new version"
    );
    // The old fence is stale; the re-fenced timer applies at the old deadline.
    clock.advance(Duration::from_secs(10));
    assert!(!fire(&s, &before).await.unwrap().applied);
    assert!(fire(&s, &after).await.unwrap().applied);
}

#[tokio::test]
async fn the_deployment_deadline_cancels_when_a_player_is_away_and_starts_when_present() {
    let (s, store, clock) = timed_service();
    let (game, _) = create(&s).await;
    let deadline = armed(&store, &game, TimerSlot::Turn).await.unwrap();
    assert_eq!(deadline.kind, TimerKind::Deployment);
    assert_eq!(deadline.fire_at, clock.now() + Duration::from_secs(90));
    // A swap changes the version but not the deadline.
    s.reshuffle_deployment(Request::new(pb::ReshuffleDeploymentRequest {
        context: ctx(&game, pb::Side::South, "reshuffle"),
    }))
    .await
    .unwrap();
    clock.advance(Duration::from_secs(90));
    // Nobody reported presence: both away, the game is cancelled and both seats are lost.
    assert!(fire(&s, &deadline).await.unwrap().applied);
    let view = get(&s, &game, pb::Viewer::Spectator).await;
    assert_eq!(view.phase, pb::Phase::Ended as i32);
    assert_eq!(view.outcome.unwrap().reason, pb::EndReason::SeatLost as i32);
    assert!(
        store
            .timers_of(game.parse().unwrap())
            .await
            .unwrap()
            .is_empty(),
        "an ended game has no timers"
    );
    let feed = s
        .list_ended_games(Request::new(pb::ListEndedGamesRequest {
            after_cursor: 0,
            limit: 0,
        }))
        .await
        .unwrap()
        .into_inner()
        .games;
    assert_eq!(feed.len(), 1);
    assert_eq!(feed[0].game_id, game);
    assert_eq!(
        feed[0].seats_lost,
        vec![pb::Side::South as i32, pb::Side::North as i32]
    );

    let (game, _) = create(&s).await;
    for side in [pb::Side::South, pb::Side::North] {
        let presence = s
            .report_presence(Request::new(pb::ReportPresenceRequest {
                game_id: game.clone(),
                side: side as i32,
                connected: true,
                gateway_id: "gw-1".into(),
                lease_seconds: 600,
            }))
            .await
            .unwrap()
            .into_inner();
        assert!(if side == pb::Side::South {
            presence.south_connected
        } else {
            presence.north_connected
        });
    }
    let deadline = armed(&store, &game, TimerSlot::Turn).await.unwrap();
    clock.advance(Duration::from_secs(90));
    assert!(fire(&s, &deadline).await.unwrap().applied);
    let view = get(&s, &game, pb::Viewer::Spectator).await;
    assert_eq!(
        view.phase,
        pb::Phase::Play as i32,
        "present players start with their drafts"
    );
    assert_eq!(view.pieces.len(), 50);
    assert_eq!(
        armed(&store, &game, TimerSlot::Turn).await.unwrap().kind,
        TimerKind::Move
    );
}

#[tokio::test]
async fn a_reconnect_timer_forfeits_only_a_player_away_for_its_whole_length() {
    let (s, store, clock) = timed_service();
    let (game, _) = create(&s).await;
    start_play(&s, &game).await;
    let report = |connected| pb::ReportPresenceRequest {
        game_id: game.clone(),
        side: pb::Side::North as i32,
        connected,
        gateway_id: "gw-1".into(),
        lease_seconds: 30,
    };
    s.report_presence(Request::new(report(true))).await.unwrap();
    let while_connected = armed(&store, &game, TimerSlot::Reconnect(Side::North))
        .await
        .unwrap();
    assert_eq!(
        get(&s, &game, pb::Viewer::South)
            .await
            .north_away_deadline_unix_millis,
        0,
        "a connected player shows no away deadline"
    );
    assert_eq!(
        while_connected.fire_at,
        clock.now() + Duration::from_secs(60),
        "counted from the report, the last moment the player was known to be there"
    );
    clock.advance(Duration::from_secs(10));
    s.report_presence(Request::new(report(false)))
        .await
        .unwrap();
    let away = armed(&store, &game, TimerSlot::Reconnect(Side::North))
        .await
        .unwrap();
    assert_eq!(away.fire_at, clock.now() + Duration::from_secs(60));
    let view = get(&s, &game, pb::Viewer::South).await;
    assert_eq!(
        view.north_away_deadline_unix_millis,
        away.fire_at_unix_millis(),
        "the opponent sees when the absent player will lose"
    );
    // South never connected in this test: its count started with play.
    let south = armed(&store, &game, TimerSlot::Reconnect(Side::South))
        .await
        .expect("south's count, armed when play started");
    assert_eq!(
        view.south_away_deadline_unix_millis,
        south.fire_at_unix_millis()
    );
    // Back within 60 s: the timer that fires then is stale.
    clock.advance(Duration::from_secs(30));
    s.report_presence(Request::new(report(true))).await.unwrap();
    clock.advance(Duration::from_secs(30));
    assert!(
        !fire(&s, &away).await.unwrap().applied,
        "the player came back"
    );
    // Away for good: 60 s after leaving, the player loses.
    s.report_presence(Request::new(report(false)))
        .await
        .unwrap();
    let away = armed(&store, &game, TimerSlot::Reconnect(Side::North))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(60));
    assert!(fire(&s, &away).await.unwrap().applied);
    let outcome = get(&s, &game, pb::Viewer::Spectator).await.outcome.unwrap();
    assert_eq!(outcome.winner, pb::Side::South as i32);
    assert_eq!(outcome.reason, pb::EndReason::Disconnected as i32);
}

/// Reports `side` of `game` connected or not through `gateway`, with a lease of `lease_seconds`.
async fn report(
    s: &SessionService,
    game: &str,
    side: pb::Side,
    gateway: &str,
    connected: bool,
    lease_seconds: u32,
) -> pb::ReportPresenceResponse {
    s.report_presence(Request::new(pb::ReportPresenceRequest {
        game_id: game.into(),
        side: side as i32,
        connected,
        gateway_id: gateway.into(),
        lease_seconds,
    }))
    .await
    .unwrap()
    .into_inner()
}

/// Unix milliseconds of `time`.
fn millis(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[tokio::test]
async fn a_silent_gateway_costs_its_player_the_reconnect_time_after_its_last_report() {
    // The online time control (60 s to come back) and the gateways' 30 s lease, renewed every
    // 10 s. South stays connected throughout; north's gateway dies after its last renewal.
    let (s, store, clock) = timed_service();
    let (game, _) = create(&s).await;
    start_play(&s, &game).await;
    report(&s, &game, pb::Side::South, "gw-south", true, 3600).await;
    let mut superseded = Vec::new();
    for _ in 0..3 {
        report(&s, &game, pb::Side::North, "gw-north", true, 30).await;
        superseded.push(
            armed(&store, &game, TimerSlot::Reconnect(Side::North))
                .await
                .unwrap(),
        );
        clock.advance(Duration::from_secs(10));
    }
    // The last renewal heard: then the gateway is killed and says nothing more.
    let last_report = clock.now();
    report(&s, &game, pb::Side::North, "gw-north", true, 30).await;
    let timer = armed(&store, &game, TimerSlot::Reconnect(Side::North))
        .await
        .unwrap();
    assert_eq!(
        timer.fire_at,
        last_report + Duration::from_secs(60),
        "the away time counts from the last report heard, not from the lease's end (+30 s)"
    );

    // Within the lease the player still counts as connected, and shows no away deadline.
    clock.advance(Duration::from_secs(29));
    let view = get(&s, &game, pb::Viewer::South).await;
    assert!(view.north_connected);
    assert_eq!(view.north_away_deadline_unix_millis, 0);
    // Once the lease has lapsed: away, losing 60 s after the last report.
    clock.advance(Duration::from_secs(1));
    for viewer in [pb::Viewer::South, pb::Viewer::North, pb::Viewer::Spectator] {
        let view = get(&s, &game, viewer).await;
        assert!(!view.north_connected, "{viewer:?} sees north away");
        assert!(view.south_connected);
        assert_eq!(
            view.north_away_deadline_unix_millis,
            millis(last_report + Duration::from_secs(60)),
            "{viewer:?} sees when north loses"
        );
        assert_eq!(view.phase, pb::Phase::Play as i32);
    }

    // A second before the deadline the fire is refused (not due); the timers the renewals
    // replaced are stale although due; at the deadline the player loses.
    clock.advance(Duration::from_secs(29));
    let early = fire(&s, &timer).await.unwrap_err();
    assert_eq!(early.code(), Code::FailedPrecondition, "{early:?}");
    clock.advance(Duration::from_secs(1));
    for old in &superseded {
        assert!(old.fire_at <= clock.now());
        assert!(
            !fire(&s, old).await.unwrap().applied,
            "a newer report replaced {old:?}"
        );
    }
    assert_eq!(clock.now(), last_report + Duration::from_secs(60));
    assert!(fire(&s, &timer).await.unwrap().applied);
    let outcome = get(&s, &game, pb::Viewer::Spectator).await.outcome.unwrap();
    assert_eq!(outcome.winner, pb::Side::South as i32);
    assert_eq!(outcome.reason, pb::EndReason::Disconnected as i32);
    // Exactly once: the same fire again changes nothing.
    assert!(!fire(&s, &timer).await.unwrap().applied);
}

#[tokio::test]
async fn a_player_whose_gateway_renews_in_time_never_loses() {
    let (s, store, clock) = timed_service();
    let (game, _) = create(&s).await;
    start_play(&s, &game).await;
    report(&s, &game, pb::Side::South, "gw-south", true, 3600).await;
    let start = clock.now();
    let mut armed_so_far: Vec<Timer> = Vec::new();
    // Ten minutes of renewals every 10 s (a third of the 30 s lease): every reconnect timer
    // ever armed that comes due in that time is fired, and none applies.
    while clock.now() < start + Duration::from_secs(600) {
        report(&s, &game, pb::Side::North, "gw-north", true, 30).await;
        let current = armed(&store, &game, TimerSlot::Reconnect(Side::North))
            .await
            .unwrap();
        assert_eq!(current.fire_at, clock.now() + Duration::from_secs(60));
        armed_so_far.push(current);
        clock.advance(Duration::from_secs(10));
        for due in armed_so_far.iter().filter(|t| t.fire_at <= clock.now()) {
            assert!(!fire(&s, due).await.unwrap().applied, "{due:?} applied");
        }
        let view = get(&s, &game, pb::Viewer::South).await;
        assert!(view.north_connected);
        assert_eq!(view.north_away_deadline_unix_millis, 0);
    }
    assert!(
        armed_so_far
            .iter()
            .filter(|t| t.fire_at <= clock.now())
            .count()
            >= 50
    );
    assert_eq!(
        get(&s, &game, pb::Viewer::Spectator).await.phase,
        pb::Phase::Play as i32
    );
}

#[tokio::test]
async fn a_reconnect_time_shorter_than_the_lease_runs_out_when_the_lease_lapses() {
    // 5 s to come back, reports holding 30 s: the player cannot be believed gone before their
    // lease lapses, so that is when a silent gateway's player loses; another gateway's
    // "disconnected" does not cut a lease that still holds.
    let (s, store, clock) = timed_service();
    let game = s
        .create_game(Request::new(pb::CreateGameRequest {
            south_player: "alice".into(),
            north_player: "bob".into(),
            time_control: Some(pb::TimeControl {
                name: "custom".into(),
                deployment_seconds: 600,
                move_seconds: 600,
                reconnect_seconds: 5,
            }),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner()
        .game_id;
    start_play(&s, &game).await;
    report(&s, &game, pb::Side::South, "gw-south", true, 3600).await;
    let reported_at = clock.now();
    report(&s, &game, pb::Side::North, "gw-1", true, 30).await;
    let lease_end = reported_at + Duration::from_secs(30);
    let timer = armed(&store, &game, TimerSlot::Reconnect(Side::North))
        .await
        .unwrap();
    assert_eq!(timer.fire_at, lease_end, "not 5 s after the report");
    // Another gateway the player left reports them gone: gw-1's lease still holds.
    clock.advance(Duration::from_secs(10));
    let answer = report(&s, &game, pb::Side::North, "gw-2", false, 30).await;
    assert!(answer.north_connected);
    let timer = armed(&store, &game, TimerSlot::Reconnect(Side::North))
        .await
        .unwrap();
    assert_eq!(timer.fire_at, lease_end);
    // A fire a little early (within the tolerance for clock skew) is judged at its deadline,
    // when the lease has lapsed: it applies rather than being dropped as "still connected".
    clock.advance(Duration::from_secs(20) - Duration::from_millis(100));
    assert!(get(&s, &game, pb::Viewer::South).await.north_connected);
    assert!(fire(&s, &timer).await.unwrap().applied);
    let outcome = get(&s, &game, pb::Viewer::Spectator).await.outcome.unwrap();
    assert_eq!(outcome.reason, pb::EndReason::Disconnected as i32);
    assert_eq!(outcome.winner, pb::Side::South as i32);
}

#[tokio::test]
async fn retries_get_the_first_answer_and_refusals_have_the_right_codes() {
    let s = service();
    let (game, _) = create(&s).await;
    let reshuffle = |key: &str| pb::ReshuffleDeploymentRequest {
        context: ctx(&game, pb::Side::South, key),
    };
    let first = s
        .reshuffle_deployment(Request::new(reshuffle("r1")))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    let retry = s
        .reshuffle_deployment(Request::new(reshuffle("r1")))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert!(!first.replayed);
    assert!(retry.replayed);
    assert_eq!(first.version, retry.version);
    assert_eq!(
        first.events, retry.events,
        "the retry gets the same deployment, not a new one"
    );
    assert_eq!(
        get(&s, &game, pb::Viewer::South).await.version,
        first.version
    );
    // The same key from the other seat is another command.
    let north = s
        .reshuffle_deployment(Request::new(pb::ReshuffleDeploymentRequest {
            context: ctx(&game, pb::Side::North, "r1"),
        }))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert!(!north.replayed);

    let code =
        |r: Result<tonic::Response<pb::SubmitMoveResponse>, tonic::Status>| r.unwrap_err().code();
    let mv = |game: &str, key: &str, expected: Option<u64>| {
        let mut context = ctx(game, pb::Side::South, key);
        context.as_mut().unwrap().expected_version = expected;
        Request::new(pb::SubmitMoveRequest {
            context,
            r#move: Some(pb::Move {
                from: "A6".into(),
                to: "A7".into(),
            }),
        })
    };
    assert_eq!(
        code(s.submit_move(mv(&game, "m1", None)).await),
        Code::FailedPrecondition
    );
    assert_eq!(
        code(s.submit_move(mv(&game, "m2", Some(1))).await),
        Code::Aborted
    );
    assert_eq!(
        code(s.submit_move(mv(&game, "", None)).await),
        Code::InvalidArgument
    );
    assert_eq!(
        code(s.submit_move(mv("not-a-uuid", "m3", None)).await),
        Code::InvalidArgument
    );
    assert_eq!(
        code(
            s.submit_move(mv("01a227c0-1001-758b-8df8-0480ba9f4201", "m4", None))
                .await
        ),
        Code::NotFound
    );
    let swap = s
        .swap_pieces(Request::new(pb::SwapPiecesRequest {
            context: ctx(&game, pb::Side::South, "s1"),
            square_a: "Z9".into(),
            square_b: "A1".into(),
        }))
        .await
        .unwrap_err();
    assert_eq!(swap.code(), Code::InvalidArgument);
    assert!(swap.message().contains("square_a"), "{}", swap.message());
}

/// [`timed_service`] with the service's pulse on. Nothing pulses on its own here: the test is the
/// loop, moving the clock and pulsing ([`serve_for`]), or leaving a gap (an outage).
fn pulsed_service() -> (SessionService, Arc<MemoryStore>, ManualClock) {
    let store = Arc::new(MemoryStore::new());
    let (s, clock) = session_on(store.clone(), Some(PulseConfig::default()));
    (s, store, clock)
}

/// The service serving for `seconds`: the clock moves a second at a time, pulsing each time, as
/// the pulse loop does.
async fn serve_for(s: &SessionService, clock: &ManualClock, seconds: u64) {
    for _ in 0..seconds {
        clock.advance(Duration::from_secs(1));
        assert_eq!(s.pulse().await.unwrap(), None, "serving is no outage");
    }
}

#[tokio::test]
async fn an_outage_moves_the_running_clocks_before_anything_is_judged_by_them() {
    let (s, store, clock) = pulsed_service();
    let (game, first) = create(&s).await;
    // South is connected (a gateway's report), north never came.
    report(&s, &game, pb::Side::South, "gw", true, 30).await;
    start_play(&s, &game).await;
    serve_for(&s, &clock, 10).await;
    let move_clock = armed(&store, &game, TimerSlot::Turn).await.unwrap();
    let south_back = armed(&store, &game, TimerSlot::Reconnect(Side::South))
        .await
        .unwrap();
    let north_back = armed(&store, &game, TimerSlot::Reconnect(Side::North))
        .await
        .unwrap();
    assert_eq!(move_clock.fire_at, clock.now() + Duration::from_secs(20));
    // Nothing serves for 45 s (every process down, or the store unreachable).
    let outage_from = clock.now();
    clock.advance(Duration::from_secs(45));
    // The clock fires the move deadline that fell due in the outage: the session accounts for
    // the outage first, so the fire is stale and the mover has not lost the turn.
    let fired = fire(&s, &move_clock).await.unwrap();
    assert!(!fired.applied, "a deadline the outage moved is not applied");
    let moved = armed(&store, &game, TimerSlot::Turn).await.unwrap();
    assert_eq!(
        moved.fire_at,
        clock.now() + Duration::from_secs(20 + 5),
        "the mover keeps its 20 s, and 5 s to reconnect"
    );
    assert_eq!(
        (moved.kind, moved.armed_version, moved.side),
        (move_clock.kind, move_clock.armed_version, move_clock.side)
    );
    // Both players see the moved deadline.
    let view = get(&s, &game, pb::Viewer::Spectator).await;
    assert_eq!(view.phase, pb::Phase::Play as i32);
    assert_eq!(view.turn_deadline_unix_millis, millis(moved.fire_at));
    // South was connected when the outage began: the whole reconnect time after it. North was
    // already away: its time left, moved.
    let south_moved = armed(&store, &game, TimerSlot::Reconnect(Side::South))
        .await
        .unwrap();
    assert!(south_back.fire_at < clock.now() + Duration::from_secs(60));
    assert_eq!(south_moved.fire_at, clock.now() + Duration::from_secs(60));
    let north_moved = armed(&store, &game, TimerSlot::Reconnect(Side::North))
        .await
        .unwrap();
    assert_eq!(
        north_moved.fire_at,
        north_back.fire_at
            + (clock.now().duration_since(outage_from).unwrap())
            + Duration::from_secs(5)
    );
    // The rule is not turned off: the moved deadline applies when it comes, once.
    serve_for(&s, &clock, 25).await;
    assert!(
        fire(&s, &moved).await.unwrap().applied,
        "the moved deadline applies"
    );
    assert!(!fire(&s, &moved).await.unwrap().applied, "once");
    let after = get(&s, &game, pb::Viewer::Spectator).await;
    assert_eq!(after.phase, pb::Phase::Play as i32);
    assert_eq!(
        after.to_move,
        client_other(first) as i32,
        "the turn passed on time"
    );
}

/// The other side.
fn client_other(side: pb::Side) -> pb::Side {
    match side {
        pb::Side::South => pb::Side::North,
        _ => pb::Side::South,
    }
}

#[tokio::test]
async fn pulses_up_to_the_threshold_apart_move_no_deadline() {
    let (s, store, clock) = pulsed_service();
    let (game, _) = create(&s).await;
    start_play(&s, &game).await;
    let move_clock = armed(&store, &game, TimerSlot::Turn).await.unwrap();
    for _ in 0..5 {
        // The loop's pulses as late as they may come: exactly the threshold apart.
        clock.advance(PulseConfig::default().rule.outage_after);
        assert_eq!(s.pulse().await.unwrap(), None);
        let view = get(&s, &game, pb::Viewer::Spectator).await;
        assert_eq!(view.turn_deadline_unix_millis, millis(move_clock.fire_at));
    }
    assert_eq!(
        armed(&store, &game, TimerSlot::Turn).await.unwrap(),
        move_clock
    );
}

#[tokio::test]
async fn a_stall_while_a_fire_is_read_is_accounted_for_before_it_is_judged() {
    let store = Arc::new(support::HookedStore::new(MemoryStore::new()));
    let (s, clock) = session_on(store.clone(), Some(PulseConfig::default()));
    let (game, _) = create(&s).await;
    start_play(&s, &game).await;
    serve_for(&s, &clock, 20).await;
    let move_clock = armed(&store, &game, TimerSlot::Turn).await.unwrap();
    assert_eq!(move_clock.fire_at, clock.now() + Duration::from_secs(10));
    // A fire from a clock running 5 s ahead reaches a session that then stalls for 15 s while
    // it reads the game (a paused machine, a stuck connection): the deadline passes during the
    // stall, in which nothing was served. It must be accounted for before the fire is judged.
    let stall = clock.clone();
    let mut stalled = false;
    *store.after_timers_read.lock().unwrap() = Some(Box::new(move || {
        if !std::mem::replace(&mut stalled, true) {
            stall.advance(Duration::from_secs(15));
        }
    }));
    clock.advance(Duration::from_secs(5));
    let answer = fire(&s, &move_clock).await.unwrap();
    assert!(
        !answer.applied,
        "the deadline passed while nothing was served"
    );
    let moved = armed(&store, &game, TimerSlot::Turn).await.unwrap();
    assert!(
        moved.fire_at > clock.now(),
        "the move clock was moved past the stall"
    );
    let view = get(&s, &game, pb::Viewer::Spectator).await;
    assert_eq!((view.south_timeouts, view.north_timeouts), (0, 0));
}

#[tokio::test]
async fn a_fire_whose_slot_is_re_armed_before_its_append_changes_nothing() {
    // North never came: its time to come back runs from the start of play. Just as the clock
    // fires it, north's gateway reports it back, which re-arms the slot (here: between the
    // fire's check and its append). The player who came back does not lose.
    let store = Arc::new(support::HookedStore::new(MemoryStore::new()));
    let (s, clock) = session_on(store.clone(), None);
    let (game, _) = create(&s).await;
    report(&s, &game, pb::Side::South, "gw", true, 3600).await;
    start_play(&s, &game).await;
    let away = armed(&store, &game, TimerSlot::Reconnect(Side::North))
        .await
        .expect("north's time to come back");
    clock.advance(Duration::from_secs(61));
    *store.rearm_after_timers_read.lock().unwrap() = Some(Timer {
        fire_at: clock.now() + Duration::from_secs(60),
        ..away
    });
    let answer = fire(&s, &away).await.unwrap();
    assert!(
        !answer.applied,
        "the slot was re-armed before the fire's append"
    );
    let view = get(&s, &game, pb::Viewer::Spectator).await;
    assert_eq!(view.phase, pb::Phase::Play as i32, "nobody lost: {view:?}");
}

/// The next item of a `WatchGame` stream, within a few seconds.
async fn next_watched(
    stream: &mut (
             impl tokio_stream::Stream<Item = Result<pb::WatchGameResponse, tonic::Status>> + Unpin
         ),
) -> pb::WatchGameResponse {
    use tokio_stream::StreamExt as _;
    tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("an item within 10 s")
        .expect("the stream goes on")
        .expect("an item, not an error")
}

/// Reads events until a status item; the events' seqs and the status.
async fn until_status(
    stream: &mut (
             impl tokio_stream::Stream<Item = Result<pb::WatchGameResponse, tonic::Status>> + Unpin
         ),
) -> (Vec<u64>, pb::GameStatus) {
    let mut seqs = Vec::new();
    loop {
        let item = next_watched(stream).await;
        match (item.event, item.status) {
            (Some(event), None) => seqs.push(event.seq),
            (None, Some(status)) => return (seqs, status),
            other => panic!("an item is an event or a status, not {other:?}"),
        }
    }
}

/// A watch that asks for the status gets it once caught up, after the events that change it
/// (never ahead of them), when a side's presence flips, and when a connected side's lease lapses
/// with nobody renewing it; a watch that does not ask gets events only.
#[tokio::test]
async fn a_watch_with_status_follows_events_presence_flips_and_lapsed_leases() {
    let (s, _store, clock) = timed_service();
    let (game, _) = create(&s).await;
    let watch = |with_status| pb::WatchGameRequest {
        game_id: game.clone(),
        from_seq: 1,
        with_status,
    };
    let mut stream = s
        .watch_game(Request::new(watch(true)))
        .await
        .unwrap()
        .into_inner();
    let (seqs, status) = until_status(&mut stream).await;
    assert_eq!(status.version, *seqs.last().unwrap(), "caught up: {seqs:?}");
    assert!(!status.south_connected && !status.north_connected);
    assert_ne!(
        status.turn_deadline_unix_millis, 0,
        "the deployment deadline"
    );

    // South connects with a short lease: a flip, told at once.
    s.report_presence(Request::new(pb::ReportPresenceRequest {
        game_id: game.clone(),
        side: pb::Side::South as i32,
        connected: true,
        gateway_id: "gw-1".into(),
        lease_seconds: 1,
    }))
    .await
    .unwrap();
    let (seqs, status) = until_status(&mut stream).await;
    assert!(seqs.is_empty() && status.south_connected && !status.north_connected);

    // Play starts: its events first, then the status they made (the move clock).
    let version = start_play(&s, &game).await;
    let (seqs, status) = until_status(&mut stream).await;
    assert_eq!(seqs.last(), Some(&version));
    assert_eq!(status.version, version);
    let view = get(&s, &game, pb::Viewer::Spectator).await;
    assert_eq!(
        status.turn_deadline_unix_millis, view.turn_deadline_unix_millis,
        "the stream's status is GetGame's"
    );

    // Nobody renews south's lease: once it has ended, south is away, with the time to come back.
    clock.advance(Duration::from_secs(2));
    let (seqs, status) = until_status(&mut stream).await;
    assert!(seqs.is_empty() && !status.south_connected);
    assert_ne!(status.south_away_deadline_unix_millis, 0);
    assert_eq!(
        status.south_away_deadline_unix_millis,
        get(&s, &game, pb::Viewer::South)
            .await
            .south_away_deadline_unix_millis
    );

    // Without asking: events only.
    let plain = s
        .watch_game(Request::new(watch(false)))
        .await
        .unwrap()
        .into_inner();
    use tokio_stream::StreamExt as _;
    let items: Vec<_> = plain.take(version as usize).collect().await;
    assert!(
        items
            .iter()
            .all(|item| item.as_ref().unwrap().status.is_none())
    );
}
