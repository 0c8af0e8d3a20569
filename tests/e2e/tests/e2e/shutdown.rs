//! Graceful shutdown: on SIGTERM every player stream is told to reconnect (with the sequence
//! number to resume from), and the process exits within its grace period even though a stream
//! was open. A SIGTERM in the middle of play loses no acknowledged move: after a restart on the
//! same database every move a player got an OK answer for is in the log, exactly once.

use hidden_front_e2e::client::{self, create_game};
use hidden_front_e2e::gateway::{self, PlayerClient, context, next_item};
use hidden_front_e2e::{Server, TestDatabase, pb};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_tells_streams_to_reconnect_and_exits_within_the_grace_period() {
    let db = TestDatabase::create().await;
    let mut server =
        Server::start_with_args("term", db.url(), &["--shutdown-grace-seconds", "3"]).await;
    let mut session = server.connect().await;
    let created = create_game(&mut session, "tia", "tom", "term").await;
    let mut tia = PlayerClient::new(gateway::channel(server.addr()).await, "tia");
    let mut stream = tia
        .subscribe(&created.game_id, 1, false)
        .await
        .expect("Subscribe");
    // The stream is live: it delivered the events south may see (north's draft, the last of the
    // creation events, is not one of them).
    let mut last_seq = 0;
    while last_seq < created.version - 1 {
        match next_item(&mut stream, "before SIGTERM").await.unwrap() {
            Some(pb::SubscribeResponse {
                item: Some(pb::subscribe_response::Item::Event(e)),
            }) => last_seq = e.seq,
            other => panic!("expected an event, got {other:?}"),
        }
    }

    let exit = server.terminate(Duration::from_secs(20));

    let hint = match next_item(&mut stream, "after SIGTERM").await {
        Ok(Some(pb::SubscribeResponse {
            item: Some(pb::subscribe_response::Item::Reconnect(r)),
        })) => r,
        Ok(Some(other)) => panic!("expected a reconnect hint, got {other:?}"),
        Ok(None) | Err(_) => panic!("the stream ended without a reconnect hint"),
    };
    // Resume after everything the stream has passed, hidden events included.
    assert_eq!(hint.resume_from_seq, created.version + 1);
    let status = exit.expect("the process did not exit within 20 s of SIGTERM (grace: 3 s)");
    assert!(status.success(), "exit status {status:?}");
}

/// A move acknowledged to a player: its seq in the log, side, from and to.
type Acked = (u64, pb::Side, String, String);

/// The `Moved` events of an answer or a log, by seq.
fn moves(events: &[pb::GameEvent]) -> Vec<Acked> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Some(pb::game_event::Event::Moved(m)) => {
                let mv = m.r#move.clone().unwrap_or_default();
                Some((e.seq, client::side_of(m.side), mv.from, mv.to))
            }
            _ => None,
        })
        .collect()
}

/// Whether a call failed because the server is going or gone (not a refusal of the move).
fn server_gone(status: &tonic::Status) -> bool {
    use tonic::Code;
    matches!(
        status.code(),
        Code::Unavailable
            | Code::Cancelled
            | Code::Unknown
            | Code::DeadlineExceeded
            | Code::Internal
    )
}

/// Plays a random legal move whenever it is this player's turn until the server goes away or
/// the game ends; returns the acknowledged moves.
async fn play_until_failure(
    mut seat: PlayerClient,
    game_id: String,
    seed: u64,
    acked_total: Arc<AtomicUsize>,
) -> Vec<Acked> {
    let mut rng = hidden_front_rules::GameRng::from_seed(seed);
    let mut acked = Vec::new();
    for n in 0.. {
        let legal = match seat.legal_moves(&game_id).await {
            Ok(legal) => legal,
            Err(status) if server_gone(&status) => return acked,
            Err(status) => panic!("LegalMoves refused: {status:?}"),
        };
        if legal.moves.is_empty() {
            tokio::time::sleep(Duration::from_millis(2)).await;
            continue;
        }
        let pick = rng.below(u32::try_from(legal.moves.len()).expect("a few moves")) as usize;
        let mv = legal.moves[pick].clone();
        let key = format!("{}-{n}", seat.player());
        match seat
            .play(context(&game_id, &key, Some(legal.version)), mv)
            .await
        {
            Ok(result) => {
                let ended = result.events.iter().any(gateway::is_end);
                let played = moves(&result.events);
                assert_eq!(played.len(), 1, "one Moved event per move: {result:?}");
                acked.extend(played);
                acked_total.fetch_add(1, Ordering::SeqCst);
                if ended {
                    return acked;
                }
            }
            Err(status) if server_gone(&status) => return acked,
            // A refusal (e.g. a repetition rule the move list does not show): try another move.
            Err(_) => {}
        }
    }
    acked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_play_loses_no_acknowledged_move() {
    const GRACE: Duration = Duration::from_secs(5);
    let db = TestDatabase::create().await;
    let mut server = Server::start_with_args(
        "term-play",
        db.url(),
        &[
            "--shutdown-grace-seconds",
            "5",
            "--actions-per-second",
            "5000",
        ],
    )
    .await;
    let mut session = server.connect().await;
    let created = create_game(&mut session, "pia", "pat", "term-play").await;
    let game_id = created.game_id.clone();
    let channel = gateway::channel(server.addr()).await;
    let mut seats = Vec::new();
    for player in ["pia", "pat"] {
        let mut seat = PlayerClient::new(channel.clone(), player);
        seat.confirm(context(&game_id, &format!("{player}-confirm"), None))
            .await
            .unwrap_or_else(|s| panic!("Confirm failed: {s:?}"));
        seats.push(seat);
    }
    let acked_total = Arc::new(AtomicUsize::new(0));
    let players: Vec<_> = seats
        .into_iter()
        .zip([11, 12])
        .map(|(seat, seed)| {
            tokio::spawn(play_until_failure(
                seat,
                game_id.clone(),
                seed,
                Arc::clone(&acked_total),
            ))
        })
        .collect();
    // Mid-stream: the players have been moving for a while.
    let waiting = Instant::now();
    while acked_total.load(Ordering::SeqCst) < 20 {
        assert!(
            waiting.elapsed() < Duration::from_secs(30) && !players.iter().all(|p| p.is_finished()),
            "the players did not get going ({} moves acknowledged)",
            acked_total.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    let signalled = Instant::now();
    let (mut server, exit) = tokio::task::spawn_blocking(move || {
        let exit = server.terminate(Duration::from_secs(20));
        (server, exit)
    })
    .await
    .expect("terminating");
    let took = signalled.elapsed();
    let status = exit.expect("the process did not exit within 20 s of SIGTERM");
    assert!(status.success(), "exit status {status:?}");
    assert!(
        took <= GRACE + Duration::from_secs(2),
        "exiting took {took:?}, past the grace period of {GRACE:?}"
    );

    let mut acked = Vec::new();
    for player in players {
        let moves = tokio::time::timeout(Duration::from_secs(30), player)
            .await
            .expect("a player stopped after the server went away")
            .expect("a player task panicked");
        acked.extend(moves);
    }
    assert!(!acked.is_empty(), "no move was acknowledged");

    server.restart().await;
    let mut session = server.connect().await;
    let version = client::get_game(&mut session, &game_id, pb::Viewer::Spectator)
        .await
        .version;
    let log = client::watch_until(&mut session, &game_id, 1, version).await;
    client::assert_gapless(&log, &game_id, 1, version);
    let logged: BTreeMap<u64, Acked> = moves(&log).into_iter().map(|m| (m.0, m)).collect();
    let mut seen = BTreeMap::new();
    for ack in &acked {
        assert_eq!(
            logged.get(&ack.0),
            Some(ack),
            "acknowledged move {ack:?} is not at its seq in the log after the restart"
        );
        assert!(
            seen.insert(ack.0, ack).is_none(),
            "seq {} acknowledged twice",
            ack.0
        );
    }
    // Each player had at most one move in flight when the server stopped: anything in the log
    // beyond the acknowledged moves is one of those, never a move applied twice.
    assert!(
        logged.len() <= acked.len() + 2,
        "{} moves in the log, {} acknowledged",
        logged.len(),
        acked.len()
    );
}
