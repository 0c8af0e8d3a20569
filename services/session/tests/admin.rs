//! The admin API in process, on the in-memory store: who may call it (operator tokens, never a
//! player's JWT, nobody when none is configured), the validation of every request, and an abort
//! through the command path (the end everyone sees, timers cleared, retries, the audit log).
//! The same over real gRPC and a real process is tests/e2e/tests/e2e/admin.rs.

use hidden_front_api_error::ErrorSummary;
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::admin_service_server::AdminService as _;
use hidden_front_proto::v1::session_service_server::SessionService as _;
use hidden_front_session::{AdminService, AdminTokens, SessionConfig, SessionService};
use hidden_front_store::TimerStore;
use hidden_front_store::memory::MemoryStore;
use std::sync::Arc;
use tonic::{Code, Request, Status};
use uuid::Uuid;

const ALICE_TOKEN: &str = "alice-0123456789-abcdefghij";

/// A JWT as the gateway accepts them (shape only: the session never verifies player tokens).
const PLAYER_JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.\
    eyJzdWIiOiJzdWUiLCJleHAiOjQxMDI0NDQ4MDB9.c2lnbmF0dXJlLW5vdC1jaGVja2Vk";

struct Harness {
    session: Arc<SessionService>,
    admin: AdminService,
    store: Arc<MemoryStore>,
}

fn harness(tokens: &[&str]) -> Harness {
    let store = Arc::new(MemoryStore::new());
    let session = Arc::new(SessionService::new(store.clone(), SessionConfig::default()));
    let admin = AdminService::new(session.clone(), AdminTokens::parse(tokens).unwrap());
    Harness {
        session,
        admin,
        store,
    }
}

fn alice() -> Harness {
    harness(&[&format!("alice={ALICE_TOKEN}")])
}

fn as_token<T>(token: Option<&str>, message: T) -> Request<T> {
    let mut request = Request::new(message);
    if let Some(token) = token {
        request
            .metadata_mut()
            .insert("authorization", format!("Bearer {token}").parse().unwrap());
    }
    request
}

fn op<T>(message: T) -> Request<T> {
    as_token(Some(ALICE_TOKEN), message)
}

#[track_caller]
fn refused(status: Status, code: Code, reason: &str) -> ErrorSummary {
    let summary = ErrorSummary::of(&status);
    assert_eq!(
        (status.code(), summary.reason.as_str()),
        (code, reason),
        "{status:?}"
    );
    summary
}

#[track_caller]
fn bad_field(status: Status, field: &str) {
    let summary = refused(status, Code::InvalidArgument, "INVALID_FIELD");
    assert_eq!(summary.violations[0].field, field);
}

async fn create(h: &Harness, south: &str, north: &str) -> String {
    h.session
        .create_game(Request::new(pb::CreateGameRequest {
            south_player: south.into(),
            north_player: north.into(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner()
        .game_id
}

async fn start_play(h: &Harness, game: &str) {
    for side in [pb::Side::South, pb::Side::North] {
        h.session
            .confirm_deployment(Request::new(pb::ConfirmDeploymentRequest {
                context: Some(pb::CommandContext {
                    game_id: game.into(),
                    side: side as i32,
                    idempotency_key: "confirm".into(),
                    expected_version: None,
                }),
            }))
            .await
            .unwrap();
    }
}

fn abort_request(game: &str, key: &str) -> pb::AbortGameRequest {
    pb::AbortGameRequest {
        game_id: game.into(),
        reason: "ticket 7: the players asked".into(),
        idempotency_key: key.into(),
    }
}

#[tokio::test]
async fn only_operators_get_in_and_players_are_denied() {
    let h = alice();
    let find = pb::FindGamesRequest::default;
    let status = h
        .admin
        .find_games(as_token(None, find()))
        .await
        .unwrap_err();
    refused(status, Code::Unauthenticated, "TOKEN_MISSING");
    let status = h
        .admin
        .find_games(as_token(Some("not-a-known-token-at-all"), find()))
        .await
        .unwrap_err();
    refused(status, Code::Unauthenticated, "TOKEN_INVALID");
    let status = h
        .admin
        .find_games(as_token(Some(PLAYER_JWT), find()))
        .await
        .unwrap_err();
    refused(status, Code::PermissionDenied, "ADMIN_REQUIRED");
    let game = create(&h, "sue", "nat").await;
    // A player's token is refused before anything is read or audited.
    let status = h
        .admin
        .inspect_game(as_token(
            Some(PLAYER_JWT),
            pb::InspectGameRequest {
                game_id: game.clone(),
                reason: "curious".into(),
            },
        ))
        .await
        .unwrap_err();
    refused(status, Code::PermissionDenied, "ADMIN_REQUIRED");
    let status = h
        .admin
        .abort_game(as_token(Some(PLAYER_JWT), abort_request(&game, "k")))
        .await
        .unwrap_err();
    refused(status, Code::PermissionDenied, "ADMIN_REQUIRED");
    let log = h
        .admin
        .list_audit_log(op(pb::ListAuditLogRequest::default()))
        .await
        .unwrap()
        .into_inner();
    assert!(log.entries.is_empty(), "refused calls write nothing");
    let found = h.admin.find_games(op(find())).await.unwrap().into_inner();
    assert_eq!(found.games.len(), 1);
    assert_eq!(found.games[0].game_id, game);
}

#[tokio::test]
async fn with_no_operator_configured_everything_is_refused() {
    let h = harness(&[]);
    for token in [None, Some(ALICE_TOKEN), Some(PLAYER_JWT)] {
        let status = h
            .admin
            .find_games(as_token(token, pb::FindGamesRequest::default()))
            .await
            .unwrap_err();
        refused(status, Code::FailedPrecondition, "ADMIN_NOT_CONFIGURED");
    }
}

#[tokio::test]
async fn bad_requests_name_their_fields() {
    let h = alice();
    let game = create(&h, "sue", "nat").await;
    let inspect = |game_id: &str, reason: &str| pb::InspectGameRequest {
        game_id: game_id.into(),
        reason: reason.into(),
    };
    bad_field(
        h.admin
            .inspect_game(op(inspect("not-a-game", "r")))
            .await
            .unwrap_err(),
        "game_id",
    );
    bad_field(
        h.admin
            .inspect_game(op(inspect(&game, "")))
            .await
            .unwrap_err(),
        "reason",
    );
    bad_field(
        h.admin
            .inspect_game(op(inspect(&game, "nul\0inside")))
            .await
            .unwrap_err(),
        "reason",
    );
    let status = h
        .admin
        .inspect_game(op(inspect(&Uuid::now_v7().to_string(), "r")))
        .await
        .unwrap_err();
    refused(status, Code::NotFound, "GAME_NOT_FOUND");
    bad_field(
        h.admin
            .abort_game(op(pb::AbortGameRequest {
                reason: " ".into(),
                ..abort_request(&game, "k")
            }))
            .await
            .unwrap_err(),
        "reason",
    );
    bad_field(
        h.admin
            .abort_game(op(pb::AbortGameRequest {
                reason: "x".repeat(600),
                ..abort_request(&game, "k")
            }))
            .await
            .unwrap_err(),
        "reason",
    );
    bad_field(
        h.admin
            .abort_game(op(abort_request(&game, "")))
            .await
            .unwrap_err(),
        "idempotency_key",
    );
    for (request, field) in [
        (
            pb::FindGamesRequest {
                phase: 42,
                ..Default::default()
            },
            "phase",
        ),
        (
            pb::FindGamesRequest {
                limit: 10_000,
                ..Default::default()
            },
            "limit",
        ),
        (
            pb::FindGamesRequest {
                cursor: "garbage".into(),
                ..Default::default()
            },
            "cursor",
        ),
        (
            pb::FindGamesRequest {
                created_from_unix_millis: 5,
                created_before_unix_millis: 5,
                ..Default::default()
            },
            "created_before_unix_millis",
        ),
    ] {
        bad_field(h.admin.find_games(op(request)).await.unwrap_err(), field);
    }
    bad_field(
        h.admin
            .list_audit_log(op(pb::ListAuditLogRequest {
                game_id: "x".into(),
                ..Default::default()
            }))
            .await
            .unwrap_err(),
        "game_id",
    );
    let log = h
        .admin
        .list_audit_log(op(pb::ListAuditLogRequest::default()))
        .await
        .unwrap()
        .into_inner();
    assert!(log.entries.is_empty(), "invalid requests write nothing");
}

#[tokio::test]
async fn an_abort_ends_the_game_for_everyone_clears_its_timers_and_is_audited() {
    let h = alice();
    let game = create(&h, "sue", "nat").await;
    start_play(&h, &game).await;
    let game_id: Uuid = game.parse().unwrap();
    assert!(
        !h.store.timers_of(game_id).await.unwrap().is_empty(),
        "a game in play has a move deadline"
    );

    let inspected = h
        .admin
        .inspect_game(op(pb::InspectGameRequest {
            game_id: game.clone(),
            reason: "ticket 7: look first".into(),
        }))
        .await
        .unwrap()
        .into_inner();
    let found = inspected.game.unwrap();
    assert_eq!(found.phase, pb::Phase::Play as i32);
    assert_eq!(found.version, inspected.events.len() as u64);
    assert!(!inspected.timers.is_empty(), "the move deadline is shown");
    // Full information: the start of play shows every piece's kind, both sides'.
    let started = inspected
        .events
        .iter()
        .find_map(|e| match &e.event {
            Some(pb::game_event::Event::PlayStarted(p)) => Some(p),
            _ => None,
        })
        .expect("a play-started event");
    assert!(
        started.pieces.iter().all(|p| !p.piece.is_empty()),
        "every kind is shown to an operator"
    );
    assert_eq!(inspected.audit.as_ref().unwrap().action, "inspect");

    let aborted = h
        .admin
        .abort_game(op(abort_request(&game, "abort-1")))
        .await
        .unwrap()
        .into_inner();
    assert!(!aborted.replayed);
    let outcome = aborted.outcome.unwrap();
    assert_eq!(
        (outcome.winner, outcome.reason),
        (pb::Side::Unspecified as i32, pb::EndReason::Aborted as i32)
    );
    assert_eq!(
        aborted.audit.as_ref().unwrap().outcome,
        format!("applied at version {}", aborted.version)
    );
    for viewer in [pb::Viewer::South, pb::Viewer::North, pb::Viewer::Spectator] {
        let view = h
            .session
            .get_game(Request::new(pb::GetGameRequest {
                game_id: game.clone(),
                viewer: viewer as i32,
            }))
            .await
            .unwrap()
            .into_inner()
            .game
            .unwrap();
        assert_eq!(view.phase, pb::Phase::Ended as i32, "{viewer:?}");
        assert_eq!(view.outcome.unwrap().reason, pb::EndReason::Aborted as i32);
    }
    assert!(
        h.store.timers_of(game_id).await.unwrap().is_empty(),
        "an aborted game's timers are cleared"
    );

    // A retry with the key gets the first answer; a new abort of an ended game is refused.
    let again = h
        .admin
        .abort_game(op(abort_request(&game, "abort-1")))
        .await
        .unwrap()
        .into_inner();
    assert!(again.replayed);
    assert_eq!(again.version, aborted.version);
    assert_eq!(again.outcome, Some(outcome));
    let status = h
        .admin
        .abort_game(op(abort_request(&game, "abort-2")))
        .await
        .unwrap_err();
    refused(status, Code::FailedPrecondition, "WRONG_PHASE");

    let log = h
        .admin
        .list_audit_log(op(pb::ListAuditLogRequest {
            game_id: game.clone(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    let seen: Vec<(&str, &str, &str)> = log
        .entries
        .iter()
        .map(|e| (e.operator.as_str(), e.action.as_str(), e.outcome.as_str()))
        .collect();
    let applied = format!("applied at version {}", aborted.version);
    let replayed = format!("replayed at version {}", aborted.version);
    assert_eq!(
        seen,
        vec![
            ("alice", "abort", "refused: WRONG_PHASE"),
            ("alice", "abort", replayed.as_str()),
            ("alice", "abort", applied.as_str()),
            ("alice", "inspect", "ok"),
        ],
        "newest first: every inspection and abort, with how it went"
    );
    assert!(log.entries.iter().all(|e| e.game_id == game));
    assert_eq!(log.entries[3].reason, "ticket 7: look first");
    assert_eq!(log.entries[2].reason, "ticket 7: the players asked");

    // Found as ended, with the outcome.
    let found = h
        .admin
        .find_games(op(pb::FindGamesRequest {
            player: "nat".into(),
            phase: pb::Phase::Ended as i32,
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(found.games.len(), 1);
    assert_eq!(
        found.games[0].outcome.unwrap().reason,
        pb::EndReason::Aborted as i32
    );
}

#[tokio::test]
async fn a_game_in_deployment_can_be_aborted_too() {
    let h = alice();
    let game = create(&h, "sue", "nat").await;
    let aborted = h
        .admin
        .abort_game(op(abort_request(&game, "k")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        aborted.outcome.unwrap().reason,
        pb::EndReason::Aborted as i32
    );
    assert!(
        h.store
            .timers_of(game.parse().unwrap())
            .await
            .unwrap()
            .is_empty(),
        "the deployment deadline is cleared"
    );
}
