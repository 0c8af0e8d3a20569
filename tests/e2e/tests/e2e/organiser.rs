//! The organisers' bulk pairing through the real binary on real Postgres: `OrganiserService` on
//! the internal port with an operator token, the players on the public port.
//!
//! - `a_bulk_of_200_starts_at_its_time_and_is_followed_with_one_call`: 200 rated pairs made with
//!   one call for a start 3 s ahead; nothing exists before it; at the start every game is created
//!   (its deployment deadline counts from the start, not from the call), both players of a pair
//!   are pushed `MatchFound` naming the bulk, and one `GetBulk` answers all 200. A game resigned
//!   at ply 0 is ENDED with its outcome and moves no rating (the farming rule). The bulk cannot
//!   be cancelled once started; a second bulk cancelled before its start never gets a game.
//! - Refusals with stable reasons: no token, a player twice, a start in the past, the same id
//!   with other pairs, an unknown bulk.

use hidden_front_api_error::ErrorSummary;
use hidden_front_e2e::client::{get_game, resign, viewer_of};
use hidden_front_e2e::gateway::{self, PlayerClient, authed, lobby};
use hidden_front_e2e::player::Player;
use hidden_front_e2e::{Server, TestDatabase, pb};
use hidden_front_proto::v1::matchmaking_service_client::MatchmakingServiceClient;
use hidden_front_proto::v1::organiser_service_client::OrganiserServiceClient;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tonic::transport::Channel;
use tonic::{Code, Status};

const OPERATOR_TOKEN: &str = "league-token-0123456789abcdef";
/// How long the bulk's games may take to appear after its start, and a lobby event to arrive.
const DEADLINE: Duration = Duration::from_secs(60);
const PAIRS: usize = 200;

fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_millis(),
    )
    .expect("in range")
}

fn reason(status: &Status) -> String {
    ErrorSummary::of(status).reason.to_string()
}

struct Organiser {
    client: OrganiserServiceClient<Channel>,
}

impl Organiser {
    async fn create(&mut self, request: pb::CreateBulkRequest) -> Result<pb::Bulk, Status> {
        Ok(self
            .client
            .create_bulk(authed(OPERATOR_TOKEN, request))
            .await?
            .into_inner()
            .bulk
            .expect("a bulk"))
    }

    async fn get(&mut self, bulk_id: &str) -> Result<pb::Bulk, Status> {
        Ok(self
            .client
            .get_bulk(authed(
                OPERATOR_TOKEN,
                pb::GetBulkRequest {
                    bulk_id: bulk_id.into(),
                },
            ))
            .await?
            .into_inner()
            .bulk
            .expect("a bulk"))
    }

    async fn cancel(&mut self, bulk_id: &str) -> Result<pb::Bulk, Status> {
        Ok(self
            .client
            .cancel_bulk(authed(
                OPERATOR_TOKEN,
                pb::CancelBulkRequest {
                    bulk_id: bulk_id.into(),
                },
            ))
            .await?
            .into_inner()
            .bulk
            .expect("a bulk"))
    }

    /// The bulk once `done` holds, asked again and again (the games are created by the server's
    /// loop, at a time of its own); panics after [`DEADLINE`].
    async fn until(&mut self, bulk_id: &str, done: impl Fn(&pb::Bulk) -> bool) -> pb::Bulk {
        let give_up = Instant::now() + DEADLINE;
        loop {
            let bulk = self.get(bulk_id).await.expect("GetBulk");
            if done(&bulk) {
                return bulk;
            }
            assert!(
                Instant::now() < give_up,
                "not reached in {DEADLINE:?}: {bulk:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn pairs(tag: &str, n: usize) -> Vec<pb::BulkPair> {
    (0..n)
        .map(|i| pb::BulkPair {
            south_player: format!("{tag}-s{i}"),
            north_player: format!("{tag}-n{i}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_of_200_starts_at_its_time_and_is_followed_with_one_call() {
    let db = TestDatabase::create().await;
    let token_arg = format!("league={OPERATOR_TOKEN}");
    let server = Server::start_with_args(
        "organiser",
        db.url(),
        &["--admin-token", &token_arg, "--actions-per-second", "5000"],
    )
    .await;
    let internal = gateway::channel(server.session_addr()).await;
    let mut organiser = Organiser {
        client: OrganiserServiceClient::new(internal.clone()),
    };
    let mut session = server.connect().await;

    // Two players of the bulk follow their lobby before it exists.
    let public = gateway::channel(server.addr()).await;
    let mut first_south = PlayerClient::new(public.clone(), "league-s0");
    let mut first_north = PlayerClient::new(public, "league-n0");
    let mut south_lobby = lobby(&mut first_south).await;
    let mut north_lobby = lobby(&mut first_north).await;

    let start = now_ms() + 3_000;
    let request = pb::CreateBulkRequest {
        bulk_id: "spring-league-round-1".into(),
        rules: String::new(),
        time_control: "online".into(),
        rated: true,
        start_at_unix_ms: start,
        pairs: pairs("league", PAIRS),
    };
    let asked = Instant::now();
    let made = organiser.create(request.clone()).await.expect("CreateBulk");
    eprintln!(
        "CreateBulk of {PAIRS} pairs answered in {:?}",
        asked.elapsed()
    );
    assert_eq!(made.organiser, "league");
    assert_eq!(made.start_at_unix_ms, start);
    assert_eq!(made.rules, "hidden-front");
    assert_eq!(made.games.len(), PAIRS);
    if now_ms() < start {
        assert_eq!(made.state, pb::BulkState::Scheduled as i32, "{made:?}");
        assert_eq!(made.games_scheduled as usize, PAIRS);
        assert!(made.games.iter().all(|g| g.game_id.is_empty()));
        // Nothing exists before the start: no game for the first pair yet.
        let games = first_south.list_my_games(false).await.expect("ListMyGames");
        assert!(games.is_empty() || now_ms() >= start, "{games:?}");
    }
    for (game, pair) in made.games.iter().zip(&request.pairs) {
        assert_eq!(
            (&game.south_player, &game.north_player),
            (&pair.south_player, &pair.north_player)
        );
    }
    // A retry answers the same bulk; the same id with other pairs is refused.
    let again = organiser.create(request.clone()).await.expect("a retry");
    assert_eq!(again.games.len(), PAIRS);
    let mut other = request.clone();
    other.pairs.pop();
    let refused = organiser.create(other).await.unwrap_err();
    assert_eq!(
        (refused.code(), reason(&refused).as_str()),
        (Code::AlreadyExists, "BULK_EXISTS")
    );

    // At the start both players of the first pair are pushed their game, naming the bulk.
    let for_south = gateway::match_found(&mut south_lobby, DEADLINE, |f| {
        f.bulk_id == "spring-league-round-1"
    })
    .await;
    let for_north = gateway::match_found(&mut north_lobby, DEADLINE, |f| {
        f.bulk_id == "spring-league-round-1"
    })
    .await;
    assert!(now_ms() >= start, "pushed before the start");
    assert_eq!(for_south.game_id, for_north.game_id);
    assert_eq!(for_south.seat, pb::Side::South as i32);
    assert_eq!(for_north.opponent, "league-s0");

    // One call follows all 200.
    let started = organiser
        .until("spring-league-round-1", |b| {
            b.games_playing as usize == PAIRS
        })
        .await;
    eprintln!(
        "all {PAIRS} games seen playing {} ms after the start",
        now_ms().saturating_sub(start)
    );
    assert_eq!(started.state, pb::BulkState::Started as i32);
    let mut ids = std::collections::HashSet::new();
    for game in &started.games {
        assert_eq!(game.state, pb::BulkGameState::Playing as i32);
        assert!(ids.insert(game.game_id.clone()), "one game per pair");
    }
    // Clocks from the start: every deployment deadline is at least 90 s after it.
    for game in started.games.iter().step_by(20) {
        let view = get_game(&mut session, &game.game_id, viewer_of(pb::Side::South)).await;
        assert_eq!(view.south_player, game.south_player);
        assert_eq!(view.north_player, game.north_player);
        assert!(
            view.turn_deadline_unix_millis >= start + 90_000,
            "deadline {} for a start at {start}",
            view.turn_deadline_unix_millis
        );
    }
    assert_eq!(started.games[0].game_id, for_south.game_id);

    // Started: it cannot be cancelled.
    let refused = organiser.cancel("spring-league-round-1").await.unwrap_err();
    assert_eq!(reason(&refused), "BULK_STARTED");

    // The first game, rated, resigned at ply 0: ENDED with its outcome, no rating moved.
    let first = &started.games[0].game_id;
    for (side, seed) in [(pb::Side::South, 1), (pb::Side::North, 2)] {
        Player::new(side, seed).deploy(&mut session, first).await;
    }
    let result = resign(&mut session, first, pb::Side::South, "league-resign", None)
        .await
        .expect("Resign");
    assert!(!result.events.is_empty(), "{result:?}");
    let ended = organiser
        .until("spring-league-round-1", |b| b.games_ended == 1)
        .await;
    assert_eq!(ended.games[0].state, pb::BulkGameState::Ended as i32);
    assert_eq!(ended.games[0].outcome, pb::BulkGameOutcome::NorthWon as i32);
    assert_eq!(ended.games_playing as usize, PAIRS - 1);
    let mut matchmaking = MatchmakingServiceClient::new(internal);
    for player in ["league-s0", "league-n0"] {
        let rating = matchmaking
            .get_rating(pb::GetRatingRequest {
                player: player.into(),
            })
            .await
            .expect("GetRating")
            .into_inner()
            .rating
            .expect("a rating");
        assert_eq!((rating.rating, rating.games), (1500.0, 0), "{player}");
    }

    // A second bulk, cancelled before its start, never gets a game.
    let later = organiser
        .create(pb::CreateBulkRequest {
            bulk_id: "spring-league-round-2".into(),
            rated: true,
            start_at_unix_ms: now_ms() + 60_000,
            pairs: pairs("league2", 3),
            ..Default::default()
        })
        .await
        .expect("a second bulk");
    assert_eq!(later.state, pb::BulkState::Scheduled as i32);
    let cancelled = organiser
        .cancel("spring-league-round-2")
        .await
        .expect("CancelBulk");
    assert_eq!(cancelled.state, pb::BulkState::Cancelled as i32);
    assert_eq!(cancelled.games_cancelled, 3);
    assert!(cancelled.cancelled_at_unix_ms > 0);

    // Refusals: each with its reason and field.
    let no_token = OrganiserServiceClient::new(gateway::channel(server.session_addr()).await)
        .get_bulk(pb::GetBulkRequest {
            bulk_id: "spring-league-round-1".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(no_token.code(), Code::Unauthenticated);
    let player_token = OrganiserServiceClient::new(gateway::channel(server.session_addr()).await)
        .get_bulk(authed(
            &gateway::token("league-s0"),
            pb::GetBulkRequest {
                bulk_id: "spring-league-round-1".into(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(
        player_token.code(),
        Code::PermissionDenied,
        "a player is no organiser"
    );
    let mut twice = pairs("twice", 3);
    twice[2].north_player = "twice-s0".into();
    let refused = organiser
        .create(pb::CreateBulkRequest {
            bulk_id: "twice".into(),
            pairs: twice,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(
        (refused.code(), reason(&refused).as_str()),
        (Code::InvalidArgument, "PLAYER_TWICE")
    );
    assert!(
        refused.message().contains("pairs[2].north_player"),
        "{}",
        refused.message()
    );
    let refused = organiser
        .create(pb::CreateBulkRequest {
            bulk_id: "past".into(),
            start_at_unix_ms: now_ms() - 60_000,
            pairs: pairs("past", 1),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(reason(&refused), "START_TIME_INVALID");
    assert!(
        refused.message().contains("start_at_unix_ms"),
        "{}",
        refused.message()
    );
    let refused = organiser.get("no-such-bulk").await.unwrap_err();
    assert_eq!(
        (refused.code(), reason(&refused).as_str()),
        (Code::NotFound, "BULK_NOT_FOUND")
    );
    // Nothing of a refused bulk was stored.
    assert_eq!(
        reason(&organiser.get("twice").await.unwrap_err()),
        "BULK_NOT_FOUND"
    );

    // The cancelled bulk still has no game, the started one still all of its own.
    let cancelled = organiser
        .get("spring-league-round-2")
        .await
        .expect("GetBulk");
    assert!(
        cancelled
            .games
            .iter()
            .all(|g| g.game_id.is_empty() && g.state == pb::BulkGameState::Cancelled as i32)
    );
}
