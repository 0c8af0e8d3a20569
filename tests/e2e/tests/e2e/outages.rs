//! The service's own outages cost no player time (docs/clock.md, "When the service itself was
//! down"): the real binary on real Postgres, SIGKILLed and kept down longer than the move and
//! reconnect times, or its database stopped under it, with players following through the
//! gateway.
//!
//! - `a_long_outage_in_play_costs_nobody_time`
//! - `a_long_outage_in_deployment_costs_nobody_the_deadline`
//! - `a_short_outage_changes_nothing_but_the_pause`
//! - `a_stopped_database_costs_nobody_time`
//! - `after_an_outage_a_player_who_does_not_come_back_still_loses`
//! - `a_replica_killed_while_another_serves_pauses_nothing`
//!
//! The outages are real time passing (the scenario itself); every wait for the service is for a
//! state, with a deadline.

use hidden_front_e2e::cli::TempFile;
use hidden_front_e2e::client::{
    self, Client, confirm, create_timed, now_unix_ms, time_control, wait_for_view,
};
use hidden_front_e2e::gateway::{self, PlayerClient};
use hidden_front_e2e::private_postgres::PrivatePostgres;
use hidden_front_e2e::{Server, TestDatabase, pb};
use pb::game_event::Event;
use sqlx::{Connection, PgConnection};
use std::time::Duration;
use tonic::Streaming;

/// The gateway's presence reports hold 3 s (renewed every second), so a reconnect time of a few
/// seconds runs out inside an outage, as the online rules' 60 s do inside a longer one.
const FLAGS: [&str; 2] = ["--presence-lease-seconds", "3"];

/// Seconds a move, and to come back: both shorter than [`OUTAGE`].
const MOVE_SECONDS: u32 = 6;
const RECONNECT_SECONDS: u32 = 5;
/// How long the service is down in the long scenarios.
const OUTAGE: Duration = Duration::from_secs(12);

/// How much less time than at the kill a player may find after the restart: the time from the
/// service's first pulse to the test reading the view (the rule itself gives 5 s more).
const TOLERANCE_MS: u64 = 1_500;

/// Both players following the game through `server`'s gateway (their streams open), once the
/// session counts both as connected.
struct Seated {
    _players: Vec<PlayerClient>,
    _streams: Vec<Streaming<pb::SubscribeResponse>>,
}

async fn sit_down(server: &Server, session: &mut Client, game: &str, key: &str) -> Seated {
    let mut players = Vec::new();
    let mut streams = Vec::new();
    for side in ["south", "north"] {
        let mut player = PlayerClient::new(
            gateway::channel(server.addr()).await,
            &format!("{key}-{side}"),
        );
        streams.push(player.subscribe(game, 1, false).await.expect("subscribe"));
        players.push(player);
    }
    wait_for_view(session, game, |v| v.south_connected && v.north_connected).await;
    Seated {
        _players: players,
        _streams: streams,
    }
}

/// A game of `key` in play on `server`, both players following it through the gateway.
async fn in_play(
    server: &Server,
    key: &str,
    per_move: u32,
    reconnect: u32,
) -> (Client, String, Seated) {
    let mut session = server.connect().await;
    let game = create_timed(&mut session, key, time_control(600, per_move, reconnect))
        .await
        .game_id;
    confirm(&mut session, &game, pb::Side::South).await;
    confirm(&mut session, &game, pb::Side::North).await;
    let seated = sit_down(server, &mut session, &game, key).await;
    (session, game, seated)
}

/// Milliseconds until `deadline` (0 once it has passed).
fn left(deadline: u64) -> u64 {
    deadline.saturating_sub(now_unix_ms())
}

/// The outages the service recorded, as (seconds, deadlines moved).
async fn recorded_outages(url: &str) -> Vec<(f64, i64)> {
    let mut conn = PgConnection::connect(url)
        .await
        .expect("connect to the game database");
    sqlx::query_as(
        "SELECT extract(epoch FROM ended_at - started_at)::float8, deadlines_moved \
         FROM service_outages ORDER BY id",
    )
    .fetch_all(&mut conn)
    .await
    .expect("read service_outages")
}

/// Asserts the game is where it was before the outage: in `phase`, at the same version (no
/// event, so no timeout and no lost seat, was recorded for it), nobody's timeouts counted.
fn unchanged(before: &pb::GameView, after: &pb::GameView, phase: pb::Phase) {
    assert_eq!(after.phase, phase as i32, "still in {phase:?}: {after:?}");
    assert_eq!(
        after.version, before.version,
        "no event was recorded for the outage"
    );
    assert_eq!((after.south_timeouts, after.north_timeouts), (0, 0));
    assert!(after.outcome.is_none());
}

/// The side to move plays a legal move of its own view through the gateway, then the other.
async fn both_move_on(server: &Server, game: &str, key: &str) {
    let mut session = server.connect().await;
    for _ in 0..2 {
        crate::sharding::one_move(server, &mut session, game, key).await;
    }
}

/// What the players and a spectator find across a kill of `server` kept down for `outage`.
struct Across {
    /// The game at the kill.
    before: pb::GameView,
    /// The game once both players are back.
    after: pb::GameView,
    /// Milliseconds on the running deadline at the kill, and once back.
    had: u64,
    has: u64,
    /// A session client of the restarted server.
    session: Client,
    _seated: Seated,
}

/// Kills `server` (its players were following `game` as `seated`), keeps it down for `outage`,
/// restarts it on the same database and brings both players back through its gateway.
async fn across_a_kill(
    server: &mut Server,
    game: &str,
    key: &str,
    seated: Seated,
    outage: Duration,
) -> Across {
    let mut session = server.connect().await;
    let before = client::get_game(&mut session, game, pb::Viewer::Spectator).await;
    let had = left(before.turn_deadline_unix_millis);
    server.kill();
    drop(seated);
    tokio::time::sleep(outage).await;
    server.restart().await;
    let mut session = server.connect().await;
    let seated = sit_down(server, &mut session, game, key).await;
    let after = client::get_game(&mut session, game, pb::Viewer::Spectator).await;
    let has = left(after.turn_deadline_unix_millis);
    Across {
        before,
        after,
        had,
        has,
        session,
        _seated: seated,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_outage_in_play_costs_nobody_time() {
    let db = TestDatabase::create().await;
    let mut server = Server::start_with_args("outage-play", db.url(), &FLAGS).await;
    let (_, game, seated) = in_play(&server, "outage-play", MOVE_SECONDS, RECONNECT_SECONDS).await;
    let Across {
        before,
        after,
        had,
        has,
        mut session,
        ..
    } = across_a_kill(&mut server, &game, "outage-play", seated, OUTAGE).await;
    unchanged(&before, &after, pb::Phase::Play);
    assert_eq!(after.to_move, before.to_move);
    assert!(
        has + TOLERANCE_MS >= had,
        "the mover had {had} ms at the kill and has {has} ms after the outage"
    );
    both_move_on(&server, &game, "outage-play").await;
    let end = client::get_game(&mut session, &game, pb::Viewer::Spectator).await;
    assert_eq!(end.phase, pb::Phase::Play as i32);
    assert_eq!(end.plies, 2);
    let outages = recorded_outages(db.url()).await;
    assert_eq!(
        outages.len(),
        1,
        "one outage, accounted for once: {outages:?}"
    );
    assert!(outages[0].0 >= OUTAGE.as_secs_f64(), "{outages:?}");
    assert!(outages[0].1 >= 1, "the move deadline moved: {outages:?}");

    // The game's replay across the outage: its clock readings are the ones its times give (the
    // ply after the outage reads negative, though no timeout happened), and the verifier,
    // which derives each reading again, accepts the file.
    client::resign(
        &mut session,
        &game,
        pb::Side::South,
        "after-outage-resign",
        None,
    )
    .await
    .expect("resigned");
    let file = TempFile::new("outage-replay", "play.txt");
    let session_url = format!("http://{}", server.session_addr());
    crate::replay_export::export_and_verify(&session_url, &game, &file).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_outage_in_deployment_costs_nobody_the_deadline() {
    let db = TestDatabase::create().await;
    let mut server = Server::start_with_args("outage-deploy", db.url(), &FLAGS).await;
    let mut session = server.connect().await;
    let key = "outage-deploy";
    let game = create_timed(&mut session, key, time_control(8, 600, RECONNECT_SECONDS))
        .await
        .game_id;
    let seated = sit_down(&server, &mut session, &game, key).await;
    let Across {
        before,
        after,
        had,
        has,
        mut session,
        ..
    } = across_a_kill(&mut server, &game, key, seated, OUTAGE).await;
    unchanged(&before, &after, pb::Phase::Deployment);
    assert!(
        has + TOLERANCE_MS >= had,
        "{had} ms to deploy at the kill, {has} ms after the outage"
    );
    confirm(&mut session, &game, pb::Side::South).await;
    confirm(&mut session, &game, pb::Side::North).await;
    let started = client::get_game(&mut session, &game, pb::Viewer::Spectator).await;
    assert_eq!(
        started.phase,
        pb::Phase::Play as i32,
        "both deployed in time: play starts"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_outage_changes_nothing_but_the_pause() {
    let db = TestDatabase::create().await;
    let mut server = Server::start_with_args("outage-short", db.url(), &FLAGS).await;
    let (_, game, seated) = in_play(&server, "outage-short", 20, 20).await;
    let across = across_a_kill(
        &mut server,
        &game,
        "outage-short",
        seated,
        Duration::from_secs(4),
    )
    .await;
    unchanged(&across.before, &across.after, pb::Phase::Play);
    let (had, has) = (across.had, across.has);
    assert!(
        has + TOLERANCE_MS >= had,
        "{had} ms at the kill, {has} ms after"
    );
    assert_eq!(recorded_outages(db.url()).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_database_costs_nobody_time() {
    let postgres = PrivatePostgres::start();
    let url = postgres.url();
    let server = Server::start_with_args("outage-db", &url, &FLAGS).await;
    let (mut session, game, _seated) =
        in_play(&server, "outage-db", MOVE_SECONDS, RECONNECT_SECONDS).await;
    let before = client::get_game(&mut session, &game, pb::Viewer::Spectator).await;
    let had = left(before.turn_deadline_unix_millis);

    postgres.stop();
    let stopped_at = now_unix_ms();
    // While the database is down the service says so, retriably.
    let refused = client::try_get_game(&mut session, &game, pb::Viewer::Spectator)
        .await
        .expect_err("no game can be read without the database");
    assert_eq!(refused.code(), tonic::Code::Unavailable, "{refused:?}");
    tokio::time::sleep(OUTAGE.saturating_sub(Duration::from_millis(now_unix_ms() - stopped_at)))
        .await;
    postgres.start_again();

    // The server comes back to the database by itself; the players' clients reconnect.
    wait_for_view(&mut session, &game, |_| true).await;
    let _seated = sit_down(&server, &mut session, &game, "outage-db").await;
    let after = client::get_game(&mut session, &game, pb::Viewer::Spectator).await;
    unchanged(&before, &after, pb::Phase::Play);
    let has = left(after.turn_deadline_unix_millis);
    assert!(
        has + TOLERANCE_MS >= had,
        "the mover had {had} ms when the database stopped and has {has} ms after"
    );
    both_move_on(&server, &game, "outage-db").await;
    let outages = recorded_outages(&url).await;
    assert_eq!(outages.len(), 1, "{outages:?}");
    assert!(outages[0].0 >= OUTAGE.as_secs_f64() - 1.0, "{outages:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_outage_a_player_who_does_not_come_back_still_loses() {
    let db = TestDatabase::create().await;
    let mut server = Server::start_with_args("outage-gone", db.url(), &FLAGS).await;
    let (_, game, seated) = in_play(&server, "outage-gone", 600, RECONNECT_SECONDS).await;

    server.kill();
    drop(seated);
    tokio::time::sleep(Duration::from_secs(8)).await;
    let restarting_at = now_unix_ms();
    server.restart().await;

    // South comes back; north does not.
    let mut session = server.connect().await;
    let mut south = PlayerClient::new(gateway::channel(server.addr()).await, "outage-gone-south");
    let _stream = south.subscribe(&game, 1, false).await.expect("subscribe");
    let events = client::watch_to_end(&mut session, &game, 1).await;
    let ended_at = now_unix_ms();
    let Some(Event::Ended(ended)) = &events.last().unwrap().event else {
        panic!("the log does not end with GameEnded: {events:?}");
    };
    let outcome = ended.outcome.unwrap();
    assert_eq!(outcome.reason, pb::EndReason::Disconnected as i32);
    assert_eq!(outcome.winner, pb::Side::South as i32);
    assert!(
        ended_at >= restarting_at + u64::from(RECONNECT_SECONDS) * 1000,
        "north lost {} ms after the service was back, before its reconnect time",
        ended_at - restarting_at
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_while_another_serves_pauses_nothing() {
    let db = TestDatabase::create().await;
    let mut first = Server::start_with_args("replica-a", db.url(), &FLAGS).await;
    let second = Server::start_with_args("replica-b", db.url(), &FLAGS).await;
    let mut session = first.connect().await;
    let game = create_timed(&mut session, "replica", time_control(600, 8, 600))
        .await
        .game_id;
    confirm(&mut session, &game, pb::Side::South).await;
    let started = confirm(&mut session, &game, pb::Side::North).await;
    let mut other = second.connect().await;
    let armed = client::get_game(&mut other, &game, pb::Viewer::Spectator).await;

    first.kill();
    // Longer than the outage threshold: the other replica's pulse goes on meanwhile.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let view = client::get_game(&mut other, &game, pb::Viewer::Spectator).await;
    assert_eq!(
        view.turn_deadline_unix_millis, armed.turn_deadline_unix_millis,
        "no deadline moved: the game could be served all along"
    );
    // The move clock runs out on the surviving replica's clock, as armed.
    let events = client::watch_until(&mut other, &game, 1, started + 1).await;
    assert!(
        matches!(events.last().unwrap().event, Some(Event::TimedOut(_))),
        "{:?}",
        events.last()
    );
    assert!(
        recorded_outages(db.url()).await.is_empty(),
        "no outage happened"
    );
}
