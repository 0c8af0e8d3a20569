//! The admin API through the real binary (`--services all` on real Postgres, an operator token
//! configured) and its CLI, `hidden-front admin`: a rated queue game in play is inspected and
//! aborted by the CLI; both players' and a spectator's streams end with reason aborted; the
//! clock holds no timer of the game; ratings did not move (a second rated game, settled after the
//! aborted one in the ended-games feed, is the only one counted); the audit log lists the
//! inspection and the abort with operator and reason; a player's token is refused
//! PERMISSION_DENIED.

use hidden_front_e2e::gateway::{self, PlayerClient, authed, context, follow_to_end, lobby};
use hidden_front_e2e::{Server, TestDatabase, binary, pb};
use std::process::Output;
use std::time::Duration;

const OPERATOR_TOKEN: &str = "oncall-token-0123456789abcdef";

/// How long a lobby event or a rating change may take.
const DEADLINE: Duration = Duration::from_secs(30);

/// Runs `hidden-front admin ARGS --session-url URL [--admin-token TOKEN] --json`.
async fn admin(server: &Server, token: Option<&str>, args: &[&str]) -> Output {
    let url = format!("http://{}", server.session_addr());
    let mut command = tokio::process::Command::new(binary());
    command
        .arg("admin")
        .args(args)
        .args(["--session-url", &url, "--json"]);
    command.env_remove("HF_ADMIN_TOKEN");
    if let Some(token) = token {
        command.args(["--admin-token", token]);
    }
    command.output().await.expect("the binary runs")
}

/// The JSON a successful CLI call printed.
fn json(output: &Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "admin CLI failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("--json prints JSON")
}

/// Both players queue (rated, tickets named after `attempt`) and are paired: the game id.
async fn rated_match(players: &mut [PlayerClient; 2], attempt: &str) -> String {
    let mut streams = Vec::new();
    for player in players.iter_mut() {
        streams.push(lobby(player).await);
    }
    for player in players.iter_mut() {
        let token = gateway::token(player.player());
        let ticket_id = format!("{attempt}-{}", player.player());
        player
            .inner()
            .find_match(authed(
                &token,
                pb::FindMatchRequest {
                    ticket_id,
                    queue: Some(pb::Queue {
                        rules: String::new(),
                        time_control: "relaxed".into(),
                        rated: true,
                    }),
                    ttl_seconds: 0,
                },
            ))
            .await
            .expect("FindMatch");
    }
    let mut games = Vec::new();
    for stream in &mut streams {
        // The lobby log replays earlier matches too: this attempt's ticket is the one.
        let found = gateway::match_found(stream, DEADLINE, |found| {
            found.ticket_id.starts_with(&format!("{attempt}-"))
        })
        .await;
        games.push(found.game_id);
    }
    assert_eq!(games[0], games[1], "both are pushed the same game");
    games.remove(0)
}

async fn rating(player: &mut PlayerClient) -> pb::Rating {
    let token = gateway::token(player.player());
    player
        .inner()
        .get_my_rating(authed(&token, pb::GetMyRatingRequest {}))
        .await
        .expect("GetMyRating")
        .into_inner()
        .rating
        .expect("a rating")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_aborts_a_game_in_play_and_everything_follows() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args(
        "admin",
        db.url(),
        &[
            "--admin-token",
            &format!("oncall={OPERATOR_TOKEN}"),
            "--actions-per-second",
            "5000",
            // The second rated game below is resigned before its first move and must count:
            // the rated minimum of plies is matchmaking's own tests' (docs/matchmaking.md).
            "--rated-min-plies",
            "0",
        ],
    )
    .await;
    let channel = gateway::channel(server.addr()).await;
    let mut players = [
        PlayerClient::new(channel.clone(), "admin-ana"),
        PlayerClient::new(channel.clone(), "admin-ben"),
    ];
    let mut spectator = PlayerClient::new(channel.clone(), "admin-eve");
    let before = [rating(&mut players[0]).await, rating(&mut players[1]).await];

    // A rated queue game, in play.
    let game = rated_match(&mut players, "first").await;
    for player in &mut players {
        player
            .confirm(context(&game, "confirm", None))
            .await
            .expect("Confirm");
    }
    let mut streams = Vec::new();
    for player in &mut players {
        streams.push(player.subscribe(&game, 1, false).await.expect("Subscribe"));
    }
    let spectating = spectator
        .subscribe(&game, 1, true)
        .await
        .expect("Subscribe as a spectator");

    // A player's token opens nothing, and writes nothing to the audit log.
    let player_token = gateway::token("admin-ana");
    let refused = admin(
        &server,
        Some(&player_token),
        &["inspect", &game, "--reason", "curious"],
    )
    .await;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("PermissionDenied (ADMIN_REQUIRED)"), "{said}");
    let no_token = admin(&server, None, &["find"]).await;
    assert!(String::from_utf8_lossy(&no_token.stderr).contains("Unauthenticated (TOKEN_MISSING)"));

    // Found as a game in play, inspected with full information.
    let found = json(
        &admin(
            &server,
            Some(OPERATOR_TOKEN),
            &["find", "--player", "admin-ben", "--phase", "play"],
        )
        .await,
    );
    assert_eq!(found["games"][0]["gameId"], game.as_str(), "{found}");
    let inspected = json(
        &admin(
            &server,
            Some(OPERATOR_TOKEN),
            &[
                "inspect",
                &game,
                "--reason",
                "ticket 99: players report a stuck game",
            ],
        )
        .await,
    );
    let events = inspected["events"].as_array().expect("events");
    let started = events
        .iter()
        .find(|e| e.get("playStarted").is_some())
        .expect("the start of play");
    let pieces = started["playStarted"]["pieces"].as_array().expect("pieces");
    assert!(
        pieces
            .iter()
            .all(|p| p["piece"].as_str().is_some_and(|k| !k.is_empty())),
        "an operator sees every kind"
    );

    // Aborted by the CLI.
    let aborted = json(
        &admin(
            &server,
            Some(OPERATOR_TOKEN),
            &[
                "abort",
                &game,
                "--reason",
                "ticket 99: stopped on request",
                "--idempotency-key",
                "ticket-99",
            ],
        )
        .await,
    );
    assert_eq!(
        aborted["outcome"]["reason"], "END_REASON_ABORTED",
        "{aborted}"
    );

    // Both players and the spectator see the end, reason aborted.
    let [south_stream, north_stream] = <[_; 2]>::try_from(streams).expect("two streams");
    let [ana, ben] = &mut players;
    for (client, stream, spectate) in [
        (ana, south_stream, false),
        (ben, north_stream, false),
        (&mut spectator, spectating, true),
    ] {
        let followed = follow_to_end(client, &game, spectate, stream).await;
        let Some(pb::game_event::Event::Ended(ended)) =
            followed.events.last().and_then(|e| e.event.clone())
        else {
            panic!("{}'s stream ends with the end", client.player());
        };
        let outcome = ended.outcome.expect("an outcome");
        assert_eq!(outcome.reason, pb::EndReason::Aborted as i32);
        assert_eq!(outcome.winner, pb::Side::Unspecified as i32);
    }

    // The clock holds no timer of the game.
    let mut clock = pb::clock_service_client::ClockServiceClient::new(
        gateway::channel(server.session_addr()).await,
    );
    let timers = clock
        .list_timers(pb::ListTimersRequest {
            game_id: game.clone(),
        })
        .await
        .expect("ListTimers")
        .into_inner()
        .timers;
    assert!(
        timers.is_empty(),
        "an aborted game's timers are gone: {timers:?}"
    );

    // The lifecycle feed reports the abort (operator and reason), then the end, reason aborted.
    let mut session = pb::session_service_client::SessionServiceClient::new(
        gateway::channel(server.session_addr()).await,
    );
    let mut feed = session
        .watch_lifecycle(pb::WatchLifecycleRequest {
            after_cursor: 0,
            ..Default::default()
        })
        .await
        .expect("WatchLifecycle")
        .into_inner();
    let mut told = Vec::new();
    while !told
        .iter()
        .any(|f: &pb::LifecycleFact| f.r#type == "hiddenfront.game.ended.v1")
    {
        let fact = tokio::time::timeout(Duration::from_secs(20), feed.message())
            .await
            .expect("the feed tells the end")
            .expect("the feed stays up")
            .expect("the feed goes on")
            .fact
            .expect("a fact");
        if fact.game_id == game {
            told.push(fact);
        }
    }
    let [.., abort, end] = told.as_slice() else {
        panic!("an abort and an end: {told:?}");
    };
    let Some(pb::lifecycle_fact::Body::GameAborted(aborted_fact)) = &abort.body else {
        panic!("the fact before the end is the abort: {abort:?}");
    };
    assert_eq!(aborted_fact.operator, "oncall");
    assert_eq!(aborted_fact.reason, "ticket 99: stopped on request");
    let Some(pb::lifecycle_fact::Body::GameEnded(ended_fact)) = &end.body else {
        panic!("an end: {end:?}");
    };
    assert_eq!(ended_fact.reason, pb::EndReason::Aborted as i32);

    // Ratings: a second rated game, resigned, ends after the aborted one in the feed; once it is
    // counted, the aborted one has been handled, and only the second moved anything.
    let second = rated_match(&mut players, "second").await;
    players[0]
        .concede(context(&second, "resign", None))
        .await
        .expect("Concede");
    let after = tokio::time::timeout(DEADLINE, async {
        loop {
            let now = [rating(&mut players[0]).await, rating(&mut players[1]).await];
            if now[0].games > before[0].games && now[1].games > before[1].games {
                return now;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the second game is rated in time");
    for (before, after) in before.iter().zip(&after) {
        assert_eq!(
            after.games,
            before.games + 1,
            "the aborted game is not a rated game; the resigned one is"
        );
    }

    // The audit log: the inspection and the abort, with operator and reason.
    let log = json(&admin(&server, Some(OPERATOR_TOKEN), &["audit", "--game", &game]).await);
    let entries = log["entries"].as_array().expect("entries");
    let seen: Vec<(&str, &str, &str)> = entries
        .iter()
        .map(|e| {
            (
                e["operator"].as_str().unwrap(),
                e["action"].as_str().unwrap(),
                e["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("oncall", "abort", "ticket 99: stopped on request"),
            (
                "oncall",
                "inspect",
                "ticket 99: players report a stuck game"
            ),
        ],
        "{log}"
    );
    assert!(
        entries[0]["outcome"]
            .as_str()
            .unwrap()
            .starts_with("applied at version"),
        "{log}"
    );
}
