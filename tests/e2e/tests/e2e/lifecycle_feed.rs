//! `SessionService.WatchLifecycle` against a running server (real binary, real gRPC, real
//! Postgres): games told from creation to their end in commit order, a consumer resuming from any
//! cursor gets exactly what came after, nothing in the feed names a piece, and after the process
//! is killed and restarted the feed is the same facts with the same ids and cursors.

use hidden_front_e2e::client::{self, Client, side_of};
use hidden_front_e2e::{Player, Server, TestDatabase, pb, play_to_end};
use std::time::Duration;
use tonic::Streaming;

/// A random Junqi game ends well within this.
const MAX_PLIES: usize = 50 * 101;

/// How long one fact may take to arrive.
const FACT_DEADLINE: Duration = Duration::from_secs(20);

async fn follow(client: &mut Client, after_cursor: u64) -> Streaming<pb::WatchLifecycleResponse> {
    client
        .watch_lifecycle(pb::WatchLifecycleRequest {
            after_cursor,
            ..Default::default()
        })
        .await
        .expect("WatchLifecycle")
        .into_inner()
}

/// The next `n` facts of `stream`.
async fn take(
    stream: &mut Streaming<pb::WatchLifecycleResponse>,
    n: usize,
) -> Vec<pb::LifecycleFact> {
    let mut facts = Vec::with_capacity(n);
    while facts.len() < n {
        let next = tokio::time::timeout(FACT_DEADLINE, stream.message())
            .await
            .unwrap_or_else(|_| panic!("fact {} of {n} did not come: {facts:#?}", facts.len() + 1))
            .expect("the stream stays up")
            .expect("the stream does not end");
        facts.push(next.fact.expect("a fact"));
    }
    facts
}

fn types_of<'a>(facts: &'a [pb::LifecycleFact], game_id: &str) -> Vec<&'a str> {
    facts
        .iter()
        .filter(|f| f.game_id == game_id)
        .map(|f| f.r#type.as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_feed_tells_games_in_commit_order_resumes_from_any_cursor_and_survives_a_kill() {
    let db = TestDatabase::create().await;
    let mut server = Server::start("lifecycle", db.url()).await;
    let mut client = server.connect().await;
    let mut live = follow(&mut client, 0).await;

    // A game played to its end, and a game resigned during deployment.
    let played = client::create_game(&mut client, "ana", "ben", "feed-played").await;
    let mut players = [
        Player::new(pb::Side::South, 0x6c69_0001),
        Player::new(pb::Side::North, 0x6c69_0002),
    ];
    for player in &mut players {
        player.deploy(&mut client, &played.game_id).await;
    }
    let first = side_of(played.first_mover);
    play_to_end(&mut client, &played.game_id, &mut players, first, MAX_PLIES).await;
    let resigned = client::create_game(&mut client, "kai", "lin", "feed-resigned").await;
    client::resign(
        &mut client,
        &resigned.game_id,
        pb::Side::North,
        "quit",
        None,
    )
    .await
    .expect("Resign");

    let facts = take(&mut live, 7).await;
    assert_eq!(
        types_of(&facts, &played.game_id),
        [
            "hiddenfront.game.created.v1",
            "hiddenfront.game.seats_filled.v1",
            "hiddenfront.game.play_started.v1",
            "hiddenfront.game.ended.v1",
        ]
    );
    assert_eq!(
        types_of(&facts, &resigned.game_id),
        [
            "hiddenfront.game.created.v1",
            "hiddenfront.game.seats_filled.v1",
            "hiddenfront.game.ended.v1",
        ]
    );
    assert!(
        facts.windows(2).all(|w| w[0].cursor < w[1].cursor),
        "commit order"
    );
    let mut ids: Vec<&str> = facts.iter().map(|f| f.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), facts.len(), "one id per fact");

    // The typed body and the JSON data say the same, and agree with the session's view.
    let view = client::get_game(&mut client, &played.game_id, pb::Viewer::Spectator).await;
    let outcome = view.outcome.expect("an outcome");
    let ended = facts
        .iter()
        .find(|f| f.game_id == played.game_id && f.r#type == "hiddenfront.game.ended.v1")
        .expect("the end");
    let Some(pb::lifecycle_fact::Body::GameEnded(body)) = &ended.body else {
        panic!("an ended fact with another body: {ended:?}");
    };
    assert_eq!(body.winner, outcome.winner);
    assert_eq!(body.reason, outcome.reason);
    assert_eq!(body.plies, view.plies);
    assert_eq!(
        (body.south_player.as_str(), body.north_player.as_str()),
        ("ana", "ben")
    );
    let data: serde_json::Value = serde_json::from_str(&ended.data_json).expect("JSON data");
    assert_eq!(data["game_id"], played.game_id.as_str());
    assert_eq!(data["plies"], view.plies);
    assert_eq!(
        data["duration_millis"].as_u64(),
        None,
        "the JSON says duration_ms"
    );
    assert_eq!(data["duration_ms"].as_u64(), Some(body.duration_millis));
    // Nothing of the feed names a piece, a kind or a square.
    for fact in &facts {
        let text = format!("{fact:?}").to_lowercase();
        for secret in [
            "marshal", "general", "bomb", "landmine", "flag\"", "node", "\"a1\"",
        ] {
            assert!(!text.contains(secret), "{text} mentions {secret}");
        }
    }

    // Resuming after any cursor gives exactly the facts after it, then live ones.
    for (index, fact) in facts.iter().enumerate().take(facts.len() - 1) {
        let mut resumed = follow(&mut client, fact.cursor).await;
        let rest = take(&mut resumed, facts.len() - index - 1).await;
        assert_eq!(rest, facts[index + 1..], "after cursor {}", fact.cursor);
    }
    let mut resumed = follow(&mut client, facts[6].cursor).await;
    let later = client::create_game(&mut client, "mo", "ned", "feed-later").await;
    let fresh = take(&mut resumed, 2).await;
    assert!(
        fresh
            .iter()
            .all(|f| f.game_id == later.game_id && f.cursor > facts[6].cursor)
    );

    // Killed and restarted on the same database: the same facts, ids and cursors.
    drop(resumed);
    drop(live);
    server.kill();
    server.restart().await;
    let mut client = server.connect().await;
    let mut again = follow(&mut client, 0).await;
    let replayed = take(&mut again, 9).await;
    assert_eq!(replayed[..7], facts[..]);
    assert_eq!(replayed[7..], fresh[..]);
}
