//! Games spread over two shards (docs/sharding.md): the real binary with `--database-url` on the
//! shared Postgres (shard 0) and `--database-shard` on a private cluster (shard 1), which the
//! test stops while players follow games on both.
//!
//! - `one_shard_stopped_leaves_the_other_serving`: while shard 1's server is down, shard 0's game
//!   takes moves and its move clock runs out on time; shard 1's game is refused `UNAVAILABLE`
//!   (`STORE_UNAVAILABLE`, retriable); when shard 1 is back its game resumes with nobody's time
//!   lost and takes moves again. The lifecycle feed read by position (`after_position`) goes on
//!   meanwhile: a game created on shard 0 during the outage is told at once, while the facts of
//!   a game shard 1 committed just before it stopped (unread until then) come once it is back,
//!   and no fact comes twice. New games whose keys hash to shard 1 are created on shard 0 while it
//!   is down, and a retry of each key, during the outage and after it, returns the same game.

use hidden_front_e2e::client::{self, Client, confirm, create_timed, now_unix_ms, time_control};
use hidden_front_e2e::gateway::{self, PlayerClient};
use hidden_front_e2e::private_postgres::PrivatePostgres;
use hidden_front_e2e::{Player, Server, TestDatabase, pb};
use hidden_front_store::placement::{shard_for_key, shard_of};
use pb::game_event::Event;
use std::collections::HashSet;
use std::time::Duration;
use tonic::Streaming;
use tonic_types::StatusExt;

/// Presence reports of 3 s, as in the outage tests.
const LEASE: [&str; 2] = ["--presence-lease-seconds", "3"];
/// Seconds a move: shorter than the outage, so shard 0's clock runs out during it.
const MOVE_SECONDS: u32 = 6;
/// How long shard 1 is down (its first refusal comes once the pulse finds it gone, and shard 0's
/// move clock must run out meanwhile).
const OUTAGE: Duration = Duration::from_secs(20);
/// The latest the first call to a stopped shard's game may be refused: the pulse (about once a
/// second, each bounded to 1 s) finds the shard gone and calls under way give up; the pool's
/// connect timeout (10 s) is what they waited for before.
const FIRST_REFUSAL_BOUND_MS: u64 = 5_000;
/// As in outages.rs: the time from the shard's first pulse to the test reading the view.
const TOLERANCE_MS: u64 = 1_500;

/// A creation key (and player prefix) that the placement rule puts on `shard` of two.
fn key_on(shard: u16, prefix: &str) -> String {
    (0..)
        .map(|n| format!("{prefix}-{n}-{}", uuid::Uuid::new_v4().simple()))
        .find(|key| shard_for_key(key, 2) == shard)
        .expect("some key hashes to every shard")
}

/// Both players following the game through the gateway, as the session sees them.
struct Seated {
    _players: Vec<PlayerClient>,
    _streams: Vec<Streaming<pb::SubscribeResponse>>,
}

/// A game of `key` in play, both players following it.
async fn in_play(server: &Server, session: &mut Client, key: &str) -> (String, Seated) {
    let game = create_timed(session, key, time_control(600, MOVE_SECONDS, 600))
        .await
        .game_id;
    confirm(session, &game, pb::Side::South).await;
    confirm(session, &game, pb::Side::North).await;
    let mut players = Vec::new();
    let mut streams = Vec::new();
    for side in ["south", "north"] {
        let mut player = PlayerClient::new(
            gateway::channel(server.addr()).await,
            &format!("{key}-{side}"),
        );
        streams.push(player.subscribe(&game, 1, false).await.expect("subscribe"));
        players.push(player);
    }
    client::wait_for_view(session, &game, |v| v.south_connected && v.north_connected).await;
    (
        game,
        Seated {
            _players: players,
            _streams: streams,
        },
    )
}

/// The side to move plays a legal move through the gateway; the game's version after it. (The
/// outage tests use it too.)
pub(crate) async fn one_move(server: &Server, session: &mut Client, game: &str, key: &str) -> u64 {
    let view = client::get_game(session, game, pb::Viewer::Spectator).await;
    let side = client::side_of(view.to_move);
    let name = if side == pb::Side::South {
        "south"
    } else {
        "north"
    };
    let mut player = PlayerClient::new(
        gateway::channel(server.addr()).await,
        &format!("{key}-{name}"),
    );
    let own = player
        .get_game(game, false)
        .await
        .expect("the player's view");
    let mv = Player::new(side, 7)
        .choose_move(&own)
        .expect("a legal move");
    let answer = player
        .play(
            gateway::context(game, &format!("move-{}", own.version), Some(own.version)),
            mv,
        )
        .await
        .expect("the move is taken");
    answer.version
}

/// The first refusal of `GetGame` for `game` (a call already under way when the shard stopped
/// may still have been answered), within a deadline.
async fn refusal(session: &mut Client, game: &str) -> tonic::Status {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Err(status) = client::try_get_game(session, game, pb::Viewer::Spectator).await {
                return status;
            }
        }
    })
    .await
    .expect("the game of the stopped shard is refused")
}

/// How long one fact of the feed may take to arrive.
const FACT_DEADLINE: Duration = Duration::from_secs(20);

/// The lifecycle feed after `position`.
async fn feed_after(session: &mut Client, position: &str) -> Streaming<pb::WatchLifecycleResponse> {
    session
        .watch_lifecycle(pb::WatchLifecycleRequest {
            after_position: position.to_owned(),
            ..Default::default()
        })
        .await
        .expect("WatchLifecycle by position")
        .into_inner()
}

/// Facts of `stream` until `done` holds of those taken (each checked to carry a position of two
/// shards).
async fn take_until(
    stream: &mut Streaming<pb::WatchLifecycleResponse>,
    what: &str,
    done: impl Fn(&[pb::LifecycleFact]) -> bool,
) -> Vec<pb::LifecycleFact> {
    let mut facts = Vec::new();
    while !done(&facts) {
        let next = tokio::time::timeout(FACT_DEADLINE, stream.message())
            .await
            .unwrap_or_else(|_| panic!("{what} did not come; got {facts:#?}"))
            .expect("the stream stays up")
            .expect("the stream does not end");
        let fact = next.fact.expect("a fact");
        assert!(
            fact.position.starts_with("v1.0:") && fact.position.contains(",1:"),
            "a position names both shards: {:?}",
            fact.position
        );
        facts.push(fact);
    }
    facts
}

/// Whether `facts` hold a fact of `type` about `game`.
fn told(facts: &[pb::LifecycleFact], game: &str, kind: &str) -> bool {
    facts
        .iter()
        .any(|f| f.game_id == game && f.r#type == format!("hiddenfront.game.{kind}.v1"))
}

fn left(deadline: u64) -> u64 {
    deadline.saturating_sub(now_unix_ms())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shard_stopped_leaves_the_other_serving() {
    let main = TestDatabase::create().await;
    let shard_1 = PrivatePostgres::start();
    let shard_1_url = shard_1.url();
    let mut args = vec!["--database-shard", shard_1_url.as_str()];
    args.extend(LEASE);
    let server = Server::start_with_args("shards", main.url(), &args).await;
    let mut session = server.connect().await;

    let (key_0, key_1) = (key_on(0, "shard0"), key_on(1, "shard1"));
    let (game_0, _seated_0) = in_play(&server, &mut session, &key_0).await;
    let (game_1, _seated_1) = in_play(&server, &mut session, &key_1).await;
    let shard = |game: &str| shard_of(game.parse().expect("a game id is a UUID"));
    assert_eq!((shard(&game_0), shard(&game_1)), (0, 1));
    one_move(&server, &mut session, &game_1, &key_1).await;
    let before_1 = client::get_game(&mut session, &game_1, pb::Viewer::Spectator).await;
    let had_1 = left(before_1.turn_deadline_unix_millis);

    // A consumer by position reads both games' facts from the start and keeps the position of
    // the last one it processed.
    let mut feed = feed_after(&mut session, "v1.0:0,1:0").await;
    let mut seen = take_until(&mut feed, "both games' play_started", |facts| {
        told(facts, &game_0, "play_started") && told(facts, &game_1, "play_started")
    })
    .await;
    drop(feed);
    let processed = seen.last().expect("facts").position.clone();
    // Shard 1 commits a game's facts that nobody reads before it stops.
    let late_1 = create_timed(
        &mut session,
        &key_on(1, "late1"),
        time_control(600, 60, 600),
    )
    .await
    .game_id;

    shard_1.stop();
    let stopped_at = now_unix_ms();
    // Shard 1's game: refused, retriably, and said so; the first call no later than the pulse
    // finds the shard gone (about 2 s), not after the pool's 10 s connect timeout.
    let refused = refusal(&mut session, &game_1).await;
    let first_refusal_ms = now_unix_ms() - stopped_at;
    assert!(
        first_refusal_ms < FIRST_REFUSAL_BOUND_MS,
        "the first call to the lost shard's game was refused after {first_refusal_ms} ms"
    );
    eprintln!("the first call to the lost shard's game was refused after {first_refusal_ms} ms");
    assert_eq!(refused.code(), tonic::Code::Unavailable, "{refused:?}");
    let reason = refused
        .get_error_details()
        .error_info()
        .map(|info| info.reason.clone())
        .unwrap_or_default();
    assert_eq!(reason, "STORE_UNAVAILABLE", "{refused:?}");

    // Shard 0's game goes on: a move, then its move clock runs out on time.
    let version = one_move(&server, &mut session, &game_0, &key_0).await;
    let moved_at = now_unix_ms();
    let events = client::watch_until(&mut session, &game_0, version + 1, version + 1).await;
    assert!(
        matches!(
            events.last().and_then(|e| e.event.as_ref()),
            Some(Event::TimedOut(_))
        ),
        "{events:?}"
    );
    let timed_out_after = now_unix_ms() - moved_at;
    assert!(
        timed_out_after < u64::from(MOVE_SECONDS) * 1000 + 3_000,
        "shard 0's clock fired {timed_out_after} ms after the move, with shard 1 down"
    );
    assert!(
        now_unix_ms() - stopped_at < OUTAGE.as_millis() as u64,
        "the timeout came while shard 1 was still down"
    );

    // New games whose keys hash to the lost shard are created all the same, on the shard that
    // answers; a retry of each key returns the same game.
    let lost_keys: Vec<String> = (0..10)
        .map(|n| key_on(1, &format!("fallback{n}")))
        .collect();
    let mut fallback_games = Vec::new();
    for key in &lost_keys {
        let created = create_timed(&mut session, key, time_control(600, 60, 600)).await;
        assert_eq!(
            shard(&created.game_id),
            0,
            "{key}: placed on the lost shard"
        );
        assert!(!created.replayed, "{key}: a first creation replayed");
        let again = create_timed(&mut session, key, time_control(600, 60, 600)).await;
        assert_eq!(
            again.game_id, created.game_id,
            "{key}: a retry during the outage made another game"
        );
        assert!(again.replayed);
        fallback_games.push(created.game_id);
    }

    // The feed by position goes on with shard 1 stopped: a game created on shard 0 now is told,
    // and nothing of shard 1's (it is stopped until start_again below).
    let during_0 = create_timed(
        &mut session,
        &key_on(0, "during0"),
        time_control(600, 60, 600),
    )
    .await
    .game_id;
    let mut feed = feed_after(&mut session, &processed).await;
    let during = take_until(
        &mut feed,
        "shard 0's new game, with shard 1 down",
        |facts| told(facts, &during_0, "seats_filled"),
    )
    .await;
    assert!(
        during.iter().all(|f| f.game_id != late_1),
        "shard 1's facts while it is stopped? {during:#?}"
    );
    seen.extend(during);

    tokio::time::sleep(OUTAGE.saturating_sub(Duration::from_millis(now_unix_ms() - stopped_at)))
        .await;
    shard_1.start_again();

    // Back: the same stream delivers the facts shard 1 committed before it stopped.
    let after = take_until(
        &mut feed,
        "shard 1's unread facts once it is back",
        |facts| told(facts, &late_1, "seats_filled"),
    )
    .await;
    assert!(told(&after, &late_1, "created"), "{after:#?}");
    seen.extend(after);
    let ids: Vec<&str> = seen.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        ids.iter().collect::<HashSet<_>>().len(),
        ids.len(),
        "no fact twice: {seen:#?}"
    );

    // Shard 1's game resumes where it was, its mover's time kept, and takes moves.
    let after_1 = client::wait_for_view(&mut session, &game_1, |_| true).await;
    assert_eq!(after_1.version, before_1.version, "nothing happened to it");
    assert_eq!((after_1.south_timeouts, after_1.north_timeouts), (0, 0));
    let has_1 = left(after_1.turn_deadline_unix_millis);
    assert!(
        has_1 + TOLERANCE_MS >= had_1,
        "the mover had {had_1} ms when shard 1 stopped and has {has_1} ms after"
    );
    let moved = one_move(&server, &mut session, &game_1, &key_1).await;
    assert_eq!(moved, after_1.version + 1);

    // With shard 1 back, the keys it lost while away still find their games on shard 0.
    for (key, game) in lost_keys.iter().zip(&fallback_games) {
        let again = create_timed(&mut session, key, time_control(600, 60, 600)).await;
        assert_eq!(
            &again.game_id, game,
            "{key}: a retry after the outage made another game"
        );
        assert!(again.replayed);
    }
    drop(server);
    drop(shard_1);
}
