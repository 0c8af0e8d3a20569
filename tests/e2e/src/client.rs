//! A gRPC client of the session service and thin helpers around its calls. Helpers that "must
//! succeed" panic with the status on failure; the `try_` forms return it.

use crate::pb;
use crate::pb::session_service_client::SessionServiceClient;
use std::net::SocketAddr;
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

/// A connected session-service client.
pub type Client = SessionServiceClient<Channel>;

/// How long one unary call may take.
pub const CALL_DEADLINE: Duration = Duration::from_secs(20);
/// How long a watch stream may go without an event while one is expected.
pub const EVENT_DEADLINE: Duration = Duration::from_secs(30);

/// Connects to a server (eagerly: fails now if nothing listens).
pub async fn connect(addr: SocketAddr) -> Client {
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))
        .expect("a loopback URL")
        .connect_timeout(Duration::from_secs(5))
        .timeout(CALL_DEADLINE);
    let channel = endpoint
        .connect()
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {addr}: {e}"));
    SessionServiceClient::new(channel)
}

/// A command context.
pub fn context(
    game_id: &str,
    side: pb::Side,
    key: &str,
    expected_version: Option<u64>,
) -> Option<pb::CommandContext> {
    Some(pb::CommandContext {
        game_id: game_id.to_string(),
        side: side as i32,
        idempotency_key: key.to_string(),
        expected_version,
    })
}

/// The viewer seated on `side`.
pub fn viewer_of(side: pb::Side) -> pb::Viewer {
    match side {
        pb::Side::South => pb::Viewer::South,
        pb::Side::North => pb::Viewer::North,
        pb::Side::Unspecified => panic!("no viewer for SIDE_UNSPECIFIED"),
    }
}

/// The other side.
pub fn other(side: pb::Side) -> pb::Side {
    match side {
        pb::Side::South => pb::Side::North,
        pb::Side::North => pb::Side::South,
        pb::Side::Unspecified => panic!("no other side of SIDE_UNSPECIFIED"),
    }
}

/// The time control of games whose tests are not about time: `relaxed` (300 s to come back).
/// Under `online`, a seat nobody streams for counts as away from the start of play, and a
/// whole random game that runs past 60 s on a loaded machine would end by disconnection.
pub fn untimed() -> Option<pb::TimeControl> {
    Some(pb::TimeControl {
        name: "relaxed".into(),
        ..Default::default()
    })
}

/// Creates a game under [`untimed`]; panics unless it succeeds.
pub async fn create_game(
    client: &mut Client,
    south: &str,
    north: &str,
    key: &str,
) -> pb::CreateGameResponse {
    client
        .create_game(pb::CreateGameRequest {
            south_player: south.to_string(),
            north_player: north.to_string(),
            rules: String::new(),
            time_control: untimed(),
            idempotency_key: key.to_string(),
        })
        .await
        .unwrap_or_else(|s| panic!("CreateGame failed: {s:?}"))
        .into_inner()
}

/// A custom time control: `deployment`, `per_move` and `reconnect` seconds (the online rules'
/// tests shorten them).
pub fn time_control(deployment: u32, per_move: u32, reconnect: u32) -> Option<pb::TimeControl> {
    Some(pb::TimeControl {
        name: "custom".into(),
        deployment_seconds: deployment,
        move_seconds: per_move,
        reconnect_seconds: reconnect,
    })
}

/// Creates the game of `{key}-south` and `{key}-north` under `tc`; panics unless it succeeds.
pub async fn create_timed(
    client: &mut Client,
    key: &str,
    tc: Option<pb::TimeControl>,
) -> pb::CreateGameResponse {
    client
        .create_game(pb::CreateGameRequest {
            south_player: format!("{key}-south"),
            north_player: format!("{key}-north"),
            rules: String::new(),
            time_control: tc,
            idempotency_key: key.into(),
        })
        .await
        .unwrap_or_else(|s| panic!("CreateGame({key}) failed: {s:?}"))
        .into_inner()
}

/// Confirms `side`'s deployment as the server drafted it; the game's version after it.
pub async fn confirm(client: &mut Client, game_id: &str, side: pb::Side) -> u64 {
    client
        .confirm_deployment(pb::ConfirmDeploymentRequest {
            context: context(game_id, side, "confirm", None),
        })
        .await
        .unwrap_or_else(|s| panic!("ConfirmDeployment({game_id}, {side:?}) failed: {s:?}"))
        .into_inner()
        .result
        .expect("a command result")
        .version
}

/// Polls `GetGame` (spectator view) until `done` holds, for at most 30 s; a failed read (a
/// server still coming back) is asked again.
pub async fn wait_for_view(
    client: &mut Client,
    game_id: &str,
    done: impl Fn(&pb::GameView) -> bool,
) -> pb::GameView {
    let mut last = None;
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match try_get_game(client, game_id, pb::Viewer::Spectator).await {
                Ok(view) if done(&view) => return view,
                answer => last = Some(answer),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    waited.unwrap_or_else(|_| panic!("{game_id} did not reach the awaited state; last: {last:?}"))
}

/// Now, in milliseconds since the Unix epoch (the unit of deadlines in views).
pub fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_millis() as u64
}

/// `GetGame`, returning the status on failure.
pub async fn try_get_game(
    client: &mut Client,
    game_id: &str,
    viewer: pb::Viewer,
) -> Result<pb::GameView, Status> {
    let response = client
        .get_game(pb::GetGameRequest {
            game_id: game_id.to_string(),
            viewer: viewer as i32,
        })
        .await?
        .into_inner();
    response
        .game
        .ok_or_else(|| Status::internal("GetGame answered without a game"))
}

/// `GetGame`; panics unless it succeeds.
pub async fn get_game(client: &mut Client, game_id: &str, viewer: pb::Viewer) -> pb::GameView {
    try_get_game(client, game_id, viewer)
        .await
        .unwrap_or_else(|s| panic!("GetGame({game_id}, {viewer:?}) failed: {s:?}"))
}

/// `SubmitMove`.
pub async fn submit_move(
    client: &mut Client,
    game_id: &str,
    side: pb::Side,
    key: &str,
    expected_version: Option<u64>,
    mv: &pb::Move,
) -> Result<pb::CommandResult, Status> {
    let response = client
        .submit_move(pb::SubmitMoveRequest {
            context: context(game_id, side, key, expected_version),
            r#move: Some(mv.clone()),
        })
        .await?
        .into_inner();
    response
        .result
        .ok_or_else(|| Status::internal("SubmitMove answered without a result"))
}

/// `Resign`.
pub async fn resign(
    client: &mut Client,
    game_id: &str,
    side: pb::Side,
    key: &str,
    expected_version: Option<u64>,
) -> Result<pb::CommandResult, Status> {
    let response = client
        .resign(pb::ResignRequest {
            context: context(game_id, side, key, expected_version),
        })
        .await?
        .into_inner();
    response
        .result
        .ok_or_else(|| Status::internal("Resign answered without a result"))
}

/// Asserts that `result` failed with `code`; returns the message.
#[track_caller]
pub fn expect_code<T: std::fmt::Debug>(
    result: Result<T, Status>,
    code: Code,
    what: &str,
) -> String {
    match result {
        Ok(value) => panic!("{what}: expected {code:?}, got success {value:?}"),
        Err(status) => {
            assert_eq!(
                status.code(),
                code,
                "{what}: expected {code:?}, got {:?}: {}",
                status.code(),
                status.message()
            );
            status.message().to_string()
        }
    }
}

/// `WatchGame` from `from_seq` until the server ends the stream (it does after `GameEnded`).
/// Fails if no event (or the end) arrives within [`EVENT_DEADLINE`].
pub async fn watch_to_end(client: &mut Client, game_id: &str, from_seq: u64) -> Vec<pb::GameEvent> {
    let mut stream = open_watch(client, game_id, from_seq).await;
    let mut events = Vec::new();
    loop {
        match next_event(&mut stream, game_id, &events).await {
            Some(event) => events.push(event),
            None => return events,
        }
    }
}

/// `WatchGame` from `from_seq` until the event with seq `until_seq` has arrived (for a game that
/// is still running, whose stream does not end).
pub async fn watch_until(
    client: &mut Client,
    game_id: &str,
    from_seq: u64,
    until_seq: u64,
) -> Vec<pb::GameEvent> {
    let mut stream = open_watch(client, game_id, from_seq).await;
    let mut events: Vec<pb::GameEvent> = Vec::new();
    while events.last().map_or(from_seq.saturating_sub(1), |e| e.seq) < until_seq {
        match next_event(&mut stream, game_id, &events).await {
            Some(event) => events.push(event),
            None => panic!(
                "WatchGame({game_id}) ended before seq {until_seq}; got {:?}",
                seqs(&events)
            ),
        }
    }
    events
}

/// Opens a `WatchGame` stream; panics unless the server accepts it.
pub async fn open_watch(
    client: &mut Client,
    game_id: &str,
    from_seq: u64,
) -> tonic::Streaming<pb::WatchGameResponse> {
    client
        .watch_game(pb::WatchGameRequest {
            game_id: game_id.to_string(),
            from_seq,
            with_status: false,
        })
        .await
        .unwrap_or_else(|s| panic!("WatchGame({game_id}, {from_seq}) failed: {s:?}"))
        .into_inner()
}

/// The next event of a watch stream; `None` when the server ended it. Panics on an error, an
/// answer without an event, or silence longer than [`EVENT_DEADLINE`].
pub async fn next_event(
    stream: &mut tonic::Streaming<pb::WatchGameResponse>,
    game_id: &str,
    so_far: &[pb::GameEvent],
) -> Option<pb::GameEvent> {
    let next = tokio::time::timeout(EVENT_DEADLINE, stream.message())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "WatchGame({game_id}): nothing within {EVENT_DEADLINE:?} after seqs {:?}",
                seqs(so_far)
            )
        })
        .unwrap_or_else(|s| panic!("WatchGame({game_id}) failed: {s:?}"))?;
    Some(
        next.event
            .unwrap_or_else(|| panic!("WatchGame({game_id}) sent a response without an event")),
    )
}

/// The sequence numbers of `events`.
pub fn seqs(events: &[pb::GameEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

/// Asserts that `events` are exactly the seqs `from..=to`, in order, each for `game_id`.
#[track_caller]
pub fn assert_gapless(events: &[pb::GameEvent], game_id: &str, from: u64, to: u64) {
    let expected: Vec<u64> = (from..=to).collect();
    assert_eq!(
        seqs(events),
        expected,
        "log of {game_id} is not seqs {from}..={to}"
    );
    for event in events {
        assert_eq!(
            event.game_id, game_id,
            "event {} names another game",
            event.seq
        );
        assert!(event.event.is_some(), "event {} is empty", event.seq);
    }
}

/// A move as `(side, from, to)`, for comparing logs with what was played.
pub type MoveRecord = (pb::Side, String, String);

/// The `Moved` events of a log, in order.
pub fn moves_in_log(events: &[pb::GameEvent]) -> Vec<MoveRecord> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Some(pb::game_event::Event::Moved(m)) => {
                let mv = m.r#move.clone().unwrap_or_default();
                Some((side_of(m.side), mv.from, mv.to))
            }
            _ => None,
        })
        .collect()
}

/// A proto side number as the enum (unknown numbers read as unspecified).
pub fn side_of(value: i32) -> pb::Side {
    pb::Side::try_from(value).unwrap_or(pb::Side::Unspecified)
}

/// A proto phase number as the enum.
pub fn phase_of(view: &pb::GameView) -> pb::Phase {
    pb::Phase::try_from(view.phase).unwrap_or(pb::Phase::Unspecified)
}
