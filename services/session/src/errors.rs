//! gRPC status codes for engine and store errors: codes that mean what they say, messages a person
//! can act on. Engine messages never name a hidden kind, so they can be passed through as they are.

use hidden_front_rules::GameError;
use hidden_front_store::StoreError;
use hidden_front_wire::WireError;
use tonic::{Code, Status};

/// The status for a refused engine command: `INVALID_ARGUMENT` for a request that breaks the
/// rules whatever the state (an illegal move, a bad deployment), `FAILED_PRECONDITION` for one that
/// does not fit the game's current state (out of turn, wrong phase, no offer to answer).
pub fn game_error_status(error: &GameError) -> Status {
    let code = if error.is_invalid_argument() {
        Code::InvalidArgument
    } else {
        Code::FailedPrecondition
    };
    Status::new(code, error.to_string())
}

/// The status for a store failure.
pub fn store_error_status(error: &StoreError) -> Status {
    match error {
        StoreError::NotFound(id) => Status::not_found(format!("game {id} not found")),
        StoreError::VersionConflict {
            expected, actual, ..
        } => Status::aborted(format!(
            "the game is at version {actual}, not the expected {expected}: reload and retry"
        )),
        StoreError::AlreadyExists(id) => Status::already_exists(format!("game {id} exists")),
        StoreError::Database(_) => {
            tracing::error!(error = %error, "store unavailable");
            Status::unavailable(
                "the game store is unavailable; retry with the same idempotency key",
            )
        }
        StoreError::Corrupt { game_id, .. } => {
            tracing::error!(error = %error, "corrupt game data");
            Status::internal(format!("stored data for game {game_id} cannot be read"))
        }
        StoreError::Migrate(_) => Status::internal("database schema is not migrated"),
        StoreError::DuplicateCommand { .. } => {
            Status::internal("duplicate command not resolved by the session service")
        }
    }
}

/// The status for a malformed request field.
pub(crate) fn wire_status(error: WireError) -> Status {
    Status::invalid_argument(error.to_string())
}
