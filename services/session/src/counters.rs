//! The session's own metrics (names in `hidden-front-metrics-names`): games by phase and the
//! outcome labels of commands. Labels carry neither kinds nor ids.

use hidden_front_metrics_names as names;
use hidden_front_proto::v1 as pb;
use hidden_front_rules::Phase;
use metrics::{Counter, Histogram};
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

/// The command path's metric handles, made once when the service is (each `metrics::counter!`
/// looks its series up in the recorder's registry: a hash of the name and labels per call, on
/// every move).
pub(crate) struct Meters {
    /// `hf_commands_total` by [`names::COMMAND_KINDS`] and [`names::OUTCOMES`].
    commands: Vec<[Counter; 4]>,
    moves_ok: Counter,
    moves_refused: Counter,
    move_duration: Histogram,
}

impl Meters {
    pub(crate) fn new() -> Meters {
        Meters {
            commands: names::COMMAND_KINDS
                .iter()
                .map(|kind| {
                    names::OUTCOMES.map(|outcome| {
                        metrics::counter!(names::COMMANDS_TOTAL, names::KIND => *kind, names::OUTCOME => outcome)
                    })
                })
                .collect(),
            moves_ok: metrics::counter!(names::MOVES_TOTAL, names::RESULT => names::OK),
            moves_refused: metrics::counter!(names::MOVES_TOTAL, names::RESULT => names::REFUSED),
            move_duration: metrics::histogram!(names::MOVE_DURATION_SECONDS),
        }
    }

    /// Counts one command of `kind` (one of [`names::COMMAND_KINDS`]) that came to `result`.
    pub(crate) fn command(&self, kind: &str, result: &Result<pb::CommandResult, Status>) {
        let outcome = outcome_of(result);
        let kind = names::COMMAND_KINDS.iter().position(|k| *k == kind);
        let outcome = names::OUTCOMES.iter().position(|o| *o == outcome);
        if let (Some(kind), Some(outcome)) = (kind, outcome) {
            self.commands[kind][outcome].increment(1);
        }
    }

    /// Counts a move's latency since `started` and, unless it was a replayed answer or a
    /// failure, its result.
    pub(crate) fn r#move(
        &self,
        started: std::time::Instant,
        result: &Result<pb::CommandResult, Status>,
    ) {
        self.move_duration.record(started.elapsed().as_secs_f64());
        match result {
            Ok(answer) if !answer.replayed => self.moves_ok.increment(1),
            Err(status) if is_refusal(status) => self.moves_refused.increment(1),
            _ => {}
        }
    }
}
