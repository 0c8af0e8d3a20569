//! The session's own metrics (names in `hidden-front-metrics-names`): games by phase and the
//! outcome labels of commands. Labels carry neither kinds nor ids.

use hidden_front_metrics_names as names;
use hidden_front_proto::v1 as pb;
use hidden_front_rules::Phase;
use tonic::Status;

/// The `phase` label value of a phase.
pub(crate) fn phase_label(phase: Phase) -> &'static str {
    match phase {
        Phase::Deployment => names::PHASES[0],
        Phase::Play => names::PHASES[1],
        Phase::Ended => names::PHASES[2],
    }
}

/// Moves a game from one phase to another in the games-by-phase gauge (`from: None`: a new game).
pub(crate) fn count_phase_change(from: Option<Phase>, to: Phase) {
    if from == Some(to) {
        return;
    }
    if let Some(from) = from {
        metrics::gauge!(names::GAMES, names::PHASE => phase_label(from)).decrement(1.0);
    }
    metrics::gauge!(names::GAMES, names::PHASE => phase_label(to)).increment(1.0);
}

/// Whether an error is the session refusing the command (the caller's doing), not a failure.
pub(crate) fn is_refusal(status: &Status) -> bool {
    use tonic::Code;
    matches!(
        status.code(),
        Code::InvalidArgument
            | Code::FailedPrecondition
            | Code::Aborted
            | Code::NotFound
            | Code::PermissionDenied
            | Code::OutOfRange
            | Code::AlreadyExists
    )
}

/// The `outcome` label value of a command's answer.
pub(crate) fn outcome_of(result: &Result<pb::CommandResult, Status>) -> &'static str {
    match result {
        Ok(answer) if answer.replayed => names::REPLAYED,
        Ok(_) => names::OK,
        Err(status) if is_refusal(status) => names::REFUSED,
        Err(_) => names::ERROR,
    }
}
