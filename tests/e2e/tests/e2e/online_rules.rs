//! The online rules on time, end to end: the real binary (session, gateway and clock; in the last
//! test the clock as a process of its own), real Postgres, shortened time controls.
//!
//! - `move_timeouts_pass_the_turn_and_the_third_forfeits`
//! - `the_deployment_deadline_cancels_for_an_absent_player_and_starts_a_present_one`
//! - `a_player_away_longer_than_the_reconnect_time_loses`, `a_player_back_in_time_plays_on`
//! - `a_killed_gateway_costs_its_player_the_reconnect_time_after_its_last_report`
//! - `a_killed_clock_process_fires_every_timer_once_after_restart`
//!
//! Waiting is always for an event (with a deadline), never a fixed sleep.

use hidden_front_e2e::client::{self, Client, confirm, now_unix_ms, wait_for_view, watch_to_end};
use hidden_front_e2e::gateway::{self, PlayerClient};
use hidden_front_e2e::{Server, TestDatabase, pb};
use pb::game_event::Event;
use std::time::Duration;

fn custom(deployment: u32, per_move: u32, reconnect: u32) -> Option<pb::TimeControl> {
    client::time_control(deployment, per_move, reconnect)
}

async fn create(
    client: &mut Client,
    key: &str,
    tc: Option<pb::TimeControl>,
) -> pb::CreateGameResponse {
    client::create_timed(client, key, tc).await
}

async fn presence(client: &mut Client, game_id: &str, side: pb::Side, connected: bool) {
    client
        .report_presence(pb::ReportPresenceRequest {
            game_id: game_id.into(),
            side: side as i32,
            connected,
            gateway_id: "test-gateway".into(),
            lease_seconds: 600,
        })
        .await
        .unwrap();
}

fn outcome(events: &[pb::GameEvent]) -> pb::Outcome {
    match &events.last().unwrap().event {
        Some(Event::Ended(ended)) => ended.outcome.unwrap(),
        other => panic!("the log does not end with GameEnded: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn move_timeouts_pass_the_turn_and_the_third_forfeits() {
    let db = TestDatabase::create().await;
    let server = Server::start("timeouts", db.url()).await;
    let mut client = server.connect().await;
    let created = create(&mut client, "timeouts", custom(600, 1, 600)).await;
    let game = created.game_id.as_str();
    confirm(&mut client, game, pb::Side::South).await;
    confirm(&mut client, game, pb::Side::North).await;
    // Nobody moves: the clock plays the game out.
    let events = watch_to_end(&mut client, game, 1).await;
    let timeouts: Vec<(i32, u32)> = events
        .iter()
        .filter_map(|e| match &e.event {
            Some(Event::TimedOut(t)) => Some((t.side, t.count)),
            _ => None,
        })
        .collect();
    let first = created.first_mover;
    let second = client::other(pb::Side::try_from(first).unwrap()) as i32;
    assert_eq!(
        timeouts,
        vec![(first, 1), (second, 1), (first, 2), (second, 2), (first, 3)],
        "each timeout once, the turn passing each time, the third forfeiting"
    );
    let outcome = outcome(&events);
    assert_eq!(outcome.winner, second);
    assert_eq!(outcome.reason, pb::EndReason::Timeouts as i32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deployment_deadline_cancels_for_an_absent_player_and_starts_a_present_one() {
    let db = TestDatabase::create().await;
    let server = Server::start("deadline", db.url()).await;
    let mut client = server.connect().await;

    // South is here and confirmed; north never came: north loses the seat, the game is cancelled.
    let game = create(&mut client, "absent", custom(1, 600, 600))
        .await
        .game_id;
    presence(&mut client, &game, pb::Side::South, true).await;
    confirm(&mut client, &game, pb::Side::South).await;
    let events = watch_to_end(&mut client, &game, 1).await;
    let lost: Vec<i32> = events
        .iter()
        .filter_map(|e| match &e.event {
            Some(Event::SeatLost(l)) => Some(l.side),
            _ => None,
        })
        .collect();
    assert_eq!(lost, vec![pb::Side::North as i32]);
    assert_eq!(outcome(&events).reason, pb::EndReason::SeatLost as i32);
    assert_eq!(outcome(&events).winner, pb::Side::Unspecified as i32);
    let feed = client
        .list_ended_games(pb::ListEndedGamesRequest {
            after_cursor: 0,
            limit: 10,
        })
        .await
        .unwrap()
        .into_inner()
        .games;
    assert_eq!(feed.len(), 1);
    assert_eq!(feed[0].game_id, game);
    assert_eq!(feed[0].seats_lost, vec![pb::Side::North as i32]);

    // Both here, north never confirmed: north starts with its draft.
    let game = create(&mut client, "present", custom(1, 600, 600))
        .await
        .game_id;
    presence(&mut client, &game, pb::Side::South, true).await;
    presence(&mut client, &game, pb::Side::North, true).await;
    confirm(&mut client, &game, pb::Side::South).await;
    let mut stream = client::open_watch(&mut client, &game, 1).await;
    let mut seen = Vec::new();
    loop {
        let event = client::next_event(&mut stream, &game, &seen)
            .await
            .expect("the game goes on");
        let started = matches!(event.event, Some(Event::PlayStarted(_)));
        seen.push(event);
        if started {
            break;
        }
    }
    let by_deadline: Vec<(i32, bool)> = seen
        .iter()
        .filter_map(|e| match &e.event {
            Some(Event::DeploymentConfirmed(c)) => Some((c.side, c.by_deadline)),
            _ => None,
        })
        .collect();
    assert_eq!(
        by_deadline,
        vec![
            (pb::Side::South as i32, false),
            (pb::Side::North as i32, true)
        ]
    );
}

/// A started game with a short reconnect time on `server`'s session, north following it through
/// `gateway`'s (the same process, or a gateway process of its own).
async fn started_with_north_connected(
    server: &Server,
    gateway: &Server,
    key: &str,
    reconnect: u32,
) -> (
    Client,
    String,
    PlayerClient,
    tonic::Streaming<pb::SubscribeResponse>,
) {
    let mut client = server.connect().await;
    let game = create(&mut client, key, custom(600, 600, reconnect))
        .await
        .game_id;
    // South is connected throughout (reported directly, with a long lease).
    presence(&mut client, &game, pb::Side::South, true).await;
    confirm(&mut client, &game, pb::Side::South).await;
    confirm(&mut client, &game, pb::Side::North).await;
    let channel = gateway::channel(gateway.addr()).await;
    let mut north = PlayerClient::new(channel, &format!("{key}-north"));
    let stream = north.subscribe(&game, 1, false).await.unwrap();
    // Connected once the gateway's report is in.
    wait_for_view(&mut client, &game, |view| view.north_connected).await;
    (client, game, north, stream)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_away_longer_than_the_reconnect_time_loses() {
    let db = TestDatabase::create().await;
    let server = Server::start("away", db.url()).await;
    let (mut client, game, north, stream) =
        started_with_north_connected(&server, &server, "away", 1).await;
    // North's only stream closes: the gateway reports the disconnection and the count starts.
    drop(stream);
    drop(north);
    let events = watch_to_end(&mut client, &game, 1).await;
    let outcome = outcome(&events);
    assert_eq!(outcome.reason, pb::EndReason::Disconnected as i32);
    assert_eq!(outcome.winner, pb::Side::South as i32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_back_in_time_plays_on() {
    let db = TestDatabase::create().await;
    let server = Server::start("back", db.url()).await;
    let (mut client, game, mut north, stream) =
        started_with_north_connected(&server, &server, "back", 2).await;
    drop(stream);
    wait_for_view(&mut client, &game, |view| !view.north_connected).await;
    let mut clock = pb::clock_service_client::ClockServiceClient::new(
        gateway::channel(server.session_addr()).await,
    );
    let north_deadline = |timers: &[pb::ArmedTimer]| {
        timers
            .iter()
            .find(|t| t.kind == pb::TimerKind::Reconnect as i32 && t.side == pb::Side::North as i32)
            .map(|t| t.deadline_unix_millis)
    };
    let list = pb::ListTimersRequest {
        game_id: game.clone(),
    };
    // The report and the re-arming are two writes: wait for the re-armed timer.
    let mut deadline_when = async |done: &dyn Fn(u64) -> bool| -> u64 {
        tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                let timers = clock
                    .list_timers(list.clone())
                    .await
                    .unwrap()
                    .into_inner()
                    .timers;
                if let Some(deadline) = north_deadline(&timers).filter(|d| done(*d)) {
                    return deadline;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the reconnect timer to be re-armed")
    };
    // Away: the count runs from the disconnection (2 s), not from a lease's end (30 s more).
    let first_deadline = deadline_when(&|d| d < now_unix_ms() + 10_000).await;
    // Back within the reconnect time: the count restarts from the new report, and as the
    // reconnect time (2 s) is shorter than the lease (30 s), is due only once that lapses.
    let _stream = north.subscribe(&game, 1, false).await.unwrap();
    wait_for_view(&mut client, &game, |view| view.north_connected).await;
    deadline_when(&|d| d > first_deadline + 10_000).await;
    // Let the first deadline pass (time passing is what is tested here), then look.
    tokio::time::sleep(Duration::from_millis(
        first_deadline.saturating_sub(now_unix_ms()) + 1_000,
    ))
    .await;
    let view = client::get_game(&mut client, &game, pb::Viewer::Spectator).await;
    assert_eq!(view.phase, pb::Phase::Play as i32, "the game goes on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_gateway_costs_its_player_the_reconnect_time_after_its_last_report() {
    // The gateway in a process of its own, its reports holding 3 s (renewed every second); 6 s
    // to come back.
    const LEASE_MS: u64 = 3_000;
    const RECONNECT_MS: u64 = 6_000;
    let db = TestDatabase::create().await;
    let referee =
        Server::start_with_args("referee", db.url(), &["--services", "session,clock"]).await;
    let session_url = format!("http://{}", referee.session_addr());
    let lease = (LEASE_MS / 1000).to_string();
    let mut gateway = Server::start_with_args(
        "gateway",
        db.url(),
        &[
            "--services",
            "gateway",
            "--session-url",
            &session_url,
            "--presence-lease-seconds",
            &lease,
        ],
    )
    .await;
    let (mut client, game, _north, _stream) = started_with_north_connected(
        &referee,
        &gateway,
        "gateway-killed",
        (RECONNECT_MS / 1000) as u32,
    )
    .await;
    // Seen connected just before the kill: the last report is less than a lease before then.
    let seen_connected_at = now_unix_ms();
    wait_for_view(&mut client, &game, |view| view.north_connected).await;
    // Killed without a word: no "disconnected" report, its last renewal is the last report.
    gateway.kill();
    let killed_at = now_unix_ms();
    // Away once the lease lapses, losing the reconnect time after the last report (normally a
    // renewal interval or less before the kill), not the lease plus the reconnect time after it.
    // The bounds: the last report came after `seen_connected_at - LEASE_MS` and before the kill
    // (a few milliseconds of slack for a report the session was still reading).
    let view = wait_for_view(&mut client, &game, |view| !view.north_connected).await;
    let deadline = view.north_away_deadline_unix_millis;
    let earliest = seen_connected_at + RECONNECT_MS - LEASE_MS;
    let latest = killed_at + RECONNECT_MS + 250;
    assert!(
        (earliest..=latest).contains(&deadline),
        "north's away deadline {deadline} is not in {earliest}..={latest} (killed at {killed_at})"
    );
    assert_eq!(view.phase, pb::Phase::Play as i32);
    assert!(view.south_connected);
    // The clock fires it: north loses, not before the deadline.
    let events = watch_to_end(&mut client, &game, 1).await;
    assert!(now_unix_ms() + 250 >= deadline, "ended before the deadline");
    let outcome = outcome(&events);
    assert_eq!(outcome.reason, pb::EndReason::Disconnected as i32);
    assert_eq!(outcome.winner, pb::Side::South as i32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_clock_process_fires_every_timer_once_after_restart() {
    const GAMES: usize = 12;
    let db = TestDatabase::create().await;
    let session =
        Server::start_with_args("referee", db.url(), &["--services", "session,gateway"]).await;
    let session_url = format!("http://{}", session.session_addr());
    let mut clock = Server::start_with_args(
        "clock",
        db.url(),
        &["--services", "clock", "--session-url", &session_url],
    )
    .await;
    let mut client = session.connect().await;
    let mut games = Vec::new();
    for i in 0..GAMES {
        let created = create(&mut client, &format!("kill-{i}"), custom(600, 2, 600)).await;
        confirm(&mut client, &created.game_id, pb::Side::South).await;
        confirm(&mut client, &created.game_id, pb::Side::North).await;
        games.push(created);
    }
    // Timers are armed (and some claimed by the clock); kill it without a word, start another.
    clock.kill();
    clock.restart().await;
    for created in &games {
        let game = &created.game_id;
        let mut stream = client::open_watch(&mut client, game, 1).await;
        let mut seen: Vec<pb::GameEvent> = Vec::new();
        // Two timeouts in a row: the first armed before the kill, the next after the restart.
        while seen
            .iter()
            .filter(|e| matches!(e.event, Some(Event::TimedOut(_))))
            .count()
            < 2
        {
            let event = client::next_event(&mut stream, game, &seen)
                .await
                .expect("the game goes on");
            seen.push(event);
        }
        client
            .resign(pb::ResignRequest {
                context: client::context(game, pb::Side::South, "resign", None),
            })
            .await
            .unwrap();
    }
    // Every game's log: timeouts alternate sides with counts 1, 1, (2, ...) — none applied twice.
    for created in &games {
        let events = watch_to_end(&mut client, &created.game_id, 1).await;
        let timeouts: Vec<(i32, u32)> = events
            .iter()
            .filter_map(|e| match &e.event {
                Some(Event::TimedOut(t)) => Some((t.side, t.count)),
                _ => None,
            })
            .collect();
        let first = created.first_mover;
        let second = client::other(pb::Side::try_from(first).unwrap()) as i32;
        let expected = [(first, 1), (second, 1), (first, 2), (second, 2), (first, 3)];
        assert!(timeouts.len() >= 2, "{timeouts:?}");
        assert_eq!(
            timeouts[..],
            expected[..timeouts.len()],
            "game {}",
            created.game_id
        );
    }
}
