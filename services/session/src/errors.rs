//! The session's answers to refused and failed commands, held to the project's error contract
//! (`hidden-front-api-error`): codes that mean what they say, a stable reason per refusal, field
//! violations naming bad fields, messages a person can act on. Engine messages never name a
//! hidden kind, so they can be passed through as they are.

use hidden_front_api_error::{ApiError, Reason};
use hidden_front_rules::GameError;
use hidden_front_store::StoreError;
use hidden_front_wire::FieldError;
use tonic::Status;

/// The reason for a refused engine command.
fn game_error_reason(error: &GameError) -> Reason {
    match error {
        GameError::WrongPhase { .. } => Reason::WrongPhase,
        GameError::NotYourTurn(..) => Reason::NotYourTurn,
        GameError::IllegalMove(_) => Reason::IllegalMove,
        GameError::Deployment(_) => Reason::BadDeployment,
        GameError::AlreadyConfirmed(_) => Reason::AlreadyConfirmed,
        GameError::WrongSide(..) => Reason::WrongSide,
        GameError::DrawOfferPending(_) => Reason::DrawOfferPending,
        GameError::NoDrawOffer(_) => Reason::NoDrawOffer,
        GameError::DrawCooldown { .. } => Reason::DrawCooldown,
        GameError::BadLog { .. } => Reason::CorruptData,
    }
}

/// The field every deployment problem is reported on: the placements of the deployment that
/// was set, or that a swap would have made.
const DEPLOYMENT_FIELD: &str = "deployment.placements";

/// The status for a refused engine command: `INVALID_ARGUMENT` for a request that breaks the
/// rules whatever the state (an illegal move, a bad deployment: every problem listed, and each a
/// violation of `deployment.placements`), `FAILED_PRECONDITION` for one that does not fit the
/// game's current state (out of turn, wrong phase, no offer to answer).
pub fn game_error_status(error: &GameError) -> Status {
    let mut refusal = ApiError::new(game_error_reason(error), error.to_string());
    // A refused deployment's message lists every problem (cut at the contract's bound), and each
    // is a field violation too.
    if let GameError::Deployment(problems) = error {
        for problem in &problems.0 {
            refusal = refusal.with_violation(DEPLOYMENT_FIELD, problem.to_string());
        }
    }
    refusal.into()
}

/// The request field of a lifecycle feed position (`WatchLifecycleRequest.after_position`).
pub(crate) const AFTER_POSITION_FIELD: &str = "after_position";

/// The status for a store failure. Only database and data failures are the server's; the rest
/// are answers about the game.
pub fn store_error_status(error: &StoreError) -> Status {
    match error {
        StoreError::NotFound(id) => {
            ApiError::new(Reason::GameNotFound, format!("game {id} not found")).into()
        }
        StoreError::VersionConflict {
            expected, actual, ..
        } => ApiError::new(
            Reason::StaleVersion,
            format!(
                "the game is at version {actual}, not the expected {expected}: reload and retry"
            ),
        )
        .into(),
        StoreError::AlreadyExists(id) => {
            ApiError::new(Reason::GameExists, format!("game {id} exists")).into()
        }
        // Only a timer's fire carries one: its deadline moved or was re-armed meanwhile, so the
        // fire lost a race, as with a stale version.
        StoreError::TimerChanged(id) => ApiError::new(
            Reason::StaleVersion,
            format!("the timer fired for game {id} was moved or re-armed meanwhile"),
        )
        .into(),
        StoreError::Database(_) => {
            tracing::error!(error = %error, "store unavailable");
            ApiError::new(
                Reason::StoreUnavailable,
                "the game store is unavailable; retry with the same idempotency key",
            )
            .into()
        }
        // The game's shard cannot serve it now; the others' games go on.
        StoreError::ShardUnavailable { .. } => {
            tracing::warn!(error = %error, "a shard is unavailable");
            ApiError::new(
                Reason::StoreUnavailable,
                "the shard of this game is unavailable; retry with the same idempotency key",
            )
            .into()
        }
        // This process cannot reach its store; another session host may.
        StoreError::Lost { .. } => {
            tracing::debug!(error = %error, "the store is lost to this process");
            ApiError::new(
                Reason::StoreUnavailable,
                "this session host cannot reach the game store; retry with the same idempotency key",
            )
            .into()
        }
        StoreError::NoSuchShard { .. } | StoreError::WrongShard { .. } => {
            tracing::error!(error = %error, "the store's shards are misconfigured");
            ApiError::new(
                Reason::StoreUnavailable,
                "the game store is unavailable; retry with the same idempotency key",
            )
            .into()
        }
        // Only WatchLifecycle's after_position is a position a caller sends.
        StoreError::Position(position) => invalid_field(AFTER_POSITION_FIELD, position.to_string()),
        StoreError::Corrupt { game_id, .. } => {
            tracing::error!(error = %error, "corrupt game data");
            ApiError::new(
                Reason::CorruptData,
                format!("stored data for game {game_id} cannot be read"),
            )
            .into()
        }
        StoreError::Migrate(_) => {
            ApiError::new(Reason::Internal, "database schema is not migrated").into()
        }
        StoreError::DuplicateCommand { .. } => ApiError::new(
            Reason::Internal,
            "duplicate command not resolved by the session service",
        )
        .into(),
    }
}

/// The status for a malformed request field.
pub(crate) fn wire_status(error: FieldError) -> Status {
    ApiError::from(error).into()
}

/// `INVALID_ARGUMENT` naming `field`.
pub(crate) fn invalid_field(field: &str, description: impl Into<String>) -> Status {
    ApiError::invalid_field(field, description).into()
}

/// `INVALID_ARGUMENT`: `field` is required.
pub(crate) fn missing_field(field: &str) -> Status {
    ApiError::missing_field(field).into()
}

/// A text field checked by the shared rules (length cap, no control characters).
pub(crate) fn check_text(
    field: &str,
    value: &str,
    kind: hidden_front_api_error::text::TextKind,
) -> Result<(), Status> {
    hidden_front_api_error::text::check(field, value, kind).map_err(Status::from)
}
