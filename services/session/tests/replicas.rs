//! Two session replicas over one store, each with its own game cache: a replica whose cached game
//! is behind the other's appends still judges every command on the current game (a refusal is
//! judged again on the stored game; a lost version race re-reads the store), and a cache far
//! smaller than the number of games only costs store reads.

use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_server::SessionService as _;
use hidden_front_session::{SessionConfig, SessionService};
use hidden_front_store::GameStore;
use hidden_front_store::memory::MemoryStore;
use std::sync::Arc;
use tonic::Request;
use uuid::Uuid;

fn replica(store: &Arc<MemoryStore>, cache_capacity: usize) -> SessionService {
    let store: Arc<dyn GameStore> = store.clone();
    SessionService::new(
        store,
        SessionConfig {
            cache_capacity,
            ..SessionConfig::default()
        },
    )
}

fn ctx(game: &str, side: pb::Side, key: &str) -> Option<pb::CommandContext> {
    Some(pb::CommandContext {
        game_id: game.to_string(),
        side: side as i32,
        idempotency_key: key.to_string(),
        expected_version: None,
    })
}

async fn create(s: &SessionService, key: &str) -> (String, pb::Side) {
    let created = s
        .create_game(Request::new(pb::CreateGameRequest {
            south_player: "alice".into(),
            north_player: "bob".into(),
            idempotency_key: key.into(),
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

async fn confirm(s: &SessionService, game: &str, side: pb::Side) -> pb::CommandResult {
    s.confirm_deployment(Request::new(pb::ConfirmDeploymentRequest {
        context: ctx(game, side, "confirm"),
    }))
    .await
    .unwrap()
    .into_inner()
    .result
    .unwrap()
}

/// Caches the game as it is now in `s` (a `GetGame` reads the store and remembers the game).
async fn look(s: &SessionService, game: &str) -> pb::GameView {
    s.get_game(Request::new(pb::GetGameRequest {
        game_id: game.into(),
        viewer: pb::Viewer::Spectator as i32,
    }))
    .await
    .unwrap()
    .into_inner()
    .game
    .unwrap()
}

async fn a_legal_move(s: &SessionService, game: &str, side: pb::Side) -> pb::Move {
    s.list_legal_moves(Request::new(pb::ListLegalMovesRequest {
        game_id: game.into(),
        side: side as i32,
        min_version: None,
    }))
    .await
    .unwrap()
    .into_inner()
    .moves
    .into_iter()
    .next()
    .expect("the side to move has a move")
}

/// Asserts that the game's log has every seq from 1 to its version, once.
async fn assert_log_is_whole(store: &MemoryStore, game: &str) {
    let id = Uuid::parse_str(game).unwrap();
    let version = store.load(id).await.unwrap().unwrap().version;
    let seqs: Vec<u64> = store
        .events(id, 1, 10_000)
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(seqs, (1..=version).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_replica_behind_the_other_loses_the_version_race_and_judges_again() {
    let store = Arc::new(MemoryStore::new());
    let (a, b) = (replica(&store, 100), replica(&store, 100));
    let (game, _) = create(&a, "race").await;
    let cached = look(&b, &game).await.version;
    // A moves the game on; B's cache still has the version before.
    let south = confirm(&a, &game, pb::Side::South).await;
    assert!(south.version > cached);
    // B judges north's confirmation on its stale copy, loses the race at the append, reads the
    // store and judges again: the answer follows south's confirmation, nothing is lost.
    let north = confirm(&b, &game, pb::Side::North).await;
    assert!(north.version > south.version, "{north:?} after {south:?}");
    let now = look(&a, &game).await;
    assert_eq!(now.phase, pb::Phase::Play as i32);
    assert_eq!(now.version, north.version);
    assert_log_is_whole(&store, &game).await;
}

#[tokio::test]
async fn a_refusal_on_a_stale_cached_game_is_judged_again_on_the_stored_game() {
    let store = Arc::new(MemoryStore::new());
    let (a, b) = (replica(&store, 100), replica(&store, 100));
    let (game, first) = create(&a, "refusal").await;
    // B caches the game in deployment; A starts play.
    assert_eq!(look(&b, &game).await.phase, pb::Phase::Deployment as i32);
    confirm(&a, &game, pb::Side::South).await;
    let started = confirm(&a, &game, pb::Side::North).await.version;
    // On B's copy a move is out of phase; on the stored game it is legal, and it is applied.
    let mv = a_legal_move(&a, &game, first).await;
    let moved = b
        .submit_move(Request::new(pb::SubmitMoveRequest {
            context: ctx(&game, first, "move-1"),
            r#move: Some(mv),
        }))
        .await
        .expect("judged on the stored game")
        .into_inner()
        .result
        .unwrap();
    assert!(moved.version > started);
    assert!(!moved.replayed);
    assert_log_is_whole(&store, &game).await;
}

#[tokio::test]
async fn a_cache_smaller_than_the_games_only_costs_store_reads() {
    let store = Arc::new(MemoryStore::new());
    let s = replica(&store, 2);
    let mut games = Vec::new();
    for i in 0..12 {
        games.push(create(&s, &format!("small-{i}")).await.0);
    }
    // Every game is judged correctly, cached or not.
    for game in &games {
        confirm(&s, game, pb::Side::South).await;
    }
    for game in &games {
        let north = confirm(&s, game, pb::Side::North).await;
        assert_eq!(look(&s, game).await.version, north.version);
        assert_eq!(look(&s, game).await.phase, pb::Phase::Play as i32);
    }
}

async fn legal(
    s: &SessionService,
    game: &str,
    side: pb::Side,
    min_version: u64,
) -> pb::ListLegalMovesResponse {
    s.list_legal_moves(Request::new(pb::ListLegalMovesRequest {
        game_id: game.into(),
        side: side as i32,
        min_version: Some(min_version),
    }))
    .await
    .unwrap()
    .into_inner()
}

/// `ListLegalMoves` with `min_version` may answer from the replica's cache, but never at a version
/// older than the caller says it has seen: a replica whose cache is behind another's append reads
/// the store.
#[tokio::test]
async fn legal_moves_never_answer_older_than_the_version_the_caller_has_seen() {
    let store = Arc::new(MemoryStore::new());
    let (a, b) = (replica(&store, 100), replica(&store, 100));
    let (game, first) = create(&a, "legal").await;
    confirm(&a, &game, pb::Side::South).await;
    let started = confirm(&a, &game, pb::Side::North).await.version;
    // B caches the game at the start of play.
    assert_eq!(look(&b, &game).await.version, started);
    assert!(!legal(&b, &game, first, started).await.moves.is_empty());
    // A plays the first move; B's cache is now one version behind.
    let mv = a_legal_move(&a, &game, first).await;
    let moved = a
        .submit_move(Request::new(pb::SubmitMoveRequest {
            context: ctx(&game, first, "m1"),
            r#move: Some(mv),
        }))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap()
        .version;
    // Asked for at least what the caller saw (the move), B reads the store: the mover has no
    // moves now, and the answer is at the move's version.
    let after = legal(&b, &game, first, moved).await;
    assert_eq!(after.version, moved);
    assert!(after.moves.is_empty(), "not the mover's turn any more");
    let other = if first == pb::Side::South {
        pb::Side::North
    } else {
        pb::Side::South
    };
    let reply = legal(&b, &game, other, moved).await;
    assert_eq!(reply.version, moved);
    assert!(!reply.moves.is_empty());
}
