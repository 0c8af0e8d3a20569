//! The one table of player actions: which engine [`Command`] each player request of
//! `SessionService` (reshuffle, swap, set a deployment, confirm, move, offer or answer a draw,
//! resign) stands for. The request's own fields are read here once; everything else (the
//! context, the judge, the append, the retry, the metrics) is the one command path of
//! [`crate::command`], shared by every action.

use crate::errors::{invalid_field, missing_field, wire_status};
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Command, Rules, Side};
use hidden_front_wire as wire;
use tonic::Status;

/// What a player asked for, with the request's fields, before the game (and so its rules) is
/// known: squares and moves can only be read on the game's board.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Action {
    /// `ReshuffleDeployment`: a new random deployment.
    Reshuffle,
    /// `SwapPieces`: swap the pieces on two squares of one's own deployment.
    Swap {
        /// `square_a`.
        a: String,
        /// `square_b`.
        b: String,
    },
    /// `SetDeployment`: a whole deployment.
    SetDeployment(pb::Deployment),
    /// `ConfirmDeployment`.
    Confirm,
    /// `SubmitMove` (the move may be missing: refused when read, naming `move`).
    Move(Option<pb::Move>),
    /// `OfferDraw`.
    OfferDraw,
    /// `AnswerDraw`.
    AnswerDraw {
        /// Whether the offer is accepted.
        accept: bool,
    },
    /// `Resign`.
    Resign,
}

impl Action {
    /// The `kind` label value of the action's commands (one of
    /// [`hidden_front_metrics_names::COMMAND_KINDS`]).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Action::Reshuffle => "reshuffle",
            Action::Swap { .. } => "swap",
            Action::SetDeployment(_) => "set_deployment",
            Action::Confirm => "confirm",
            Action::Move(_) => "move",
            Action::OfferDraw => "offer_draw",
            Action::AnswerDraw { .. } => "answer_draw",
            Action::Resign => "resign",
        }
    }

    /// The engine command `side` gives in a game under `rules`, or the refusal of a field that
    /// does not read on that board.
    pub(crate) fn command(&self, rules: &Rules, side: Side) -> Result<Command, Status> {
        Ok(match self {
            Action::Reshuffle => Command::Reshuffle { side },
            Action::Swap { a, b } => Command::Swap {
                side,
                a: wire::square_from_proto(rules, "square_a", a).map_err(wire_status)?,
                b: wire::square_from_proto(rules, "square_b", b).map_err(wire_status)?,
            },
            Action::SetDeployment(deployment) => {
                if deployment.side != pb::Side::Unspecified as i32
                    && deployment.side != wire::side_to_proto(side) as i32
                {
                    return Err(invalid_field(
                        "deployment.side",
                        "must be the acting side (or unspecified)",
                    ));
                }
                Command::SetDeployment {
                    deployment: wire::deployment_from_proto(rules, side, &deployment.placements)
                        .map_err(wire_status)?,
                }
            }
            Action::Confirm => Command::Confirm { side },
            Action::Move(mv) => Command::Move {
                side,
                mv: wire::move_from_proto(rules, mv.as_ref()).map_err(wire_status)?,
            },
            Action::OfferDraw => Command::OfferDraw { side },
            Action::AnswerDraw { accept } => Command::AnswerDraw {
                side,
                accept: *accept,
            },
            Action::Resign => Command::Resign { side },
        })
    }
}

/// A player request of `SessionService`: its command context and its [`Action`], and the
/// response that carries the command's result. One impl per request, in the table below.
pub(crate) trait PlayerRequest {
    /// The call's response message.
    type Response;

    /// The context and the action; refuses a request whose own shape is wrong whatever the
    /// game (checked before the context).
    fn into_action(self) -> Result<(Option<pb::CommandContext>, Action), Status>;

    /// The response carrying `result`.
    fn respond(result: pb::CommandResult) -> Self::Response;
}

/// Implements [`PlayerRequest`] for each `request => response: |fields| action` row.
macro_rules! player_requests {
    ($($request:ident => $response:ident: |$r:ident| $action:expr;)+) => {
        $(
            impl PlayerRequest for pb::$request {
                type Response = pb::$response;

                fn into_action(self) -> Result<(Option<pb::CommandContext>, Action), Status> {
                    let $r = self;
                    let context = $r.context;
                    Ok((context, $action))
                }

                fn respond(result: pb::CommandResult) -> pb::$response {
                    pb::$response {
                        result: Some(result),
                    }
                }
            }
        )+
    };
}

player_requests! {
    ReshuffleDeploymentRequest => ReshuffleDeploymentResponse: |r| Action::Reshuffle;
    SwapPiecesRequest => SwapPiecesResponse: |r| Action::Swap {
        a: r.square_a,
        b: r.square_b,
    };
    SetDeploymentRequest => SetDeploymentResponse: |r| Action::SetDeployment(
        r.deployment.ok_or_else(|| missing_field("deployment"))?,
    );
    ConfirmDeploymentRequest => ConfirmDeploymentResponse: |r| Action::Confirm;
    SubmitMoveRequest => SubmitMoveResponse: |r| Action::Move(r.r#move);
    OfferDrawRequest => OfferDrawResponse: |r| Action::OfferDraw;
    AnswerDrawRequest => AnswerDrawResponse: |r| Action::AnswerDraw { accept: r.accept };
    ResignRequest => ResignResponse: |r| Action::Resign;
}

#[cfg(test)]
mod tests {
    use super::*;
    use hidden_front_metrics_names as names;
    use hidden_front_rules::Move;

    fn context() -> Option<pb::CommandContext> {
        Some(pb::CommandContext {
            game_id: "g".into(),
            side: pb::Side::North as i32,
            idempotency_key: "k".into(),
            expected_version: Some(3),
        })
    }

    fn square(rules: &Rules, name: &str) -> hidden_front_rules::Node {
        rules.topology().node(name).expect("a square of the board")
    }

    #[test]
    fn each_request_reads_its_context_and_action() {
        let swap = pb::SwapPiecesRequest {
            context: context(),
            square_a: "A1".into(),
            square_b: "B2".into(),
        };
        assert_eq!(
            swap.into_action().unwrap(),
            (
                context(),
                Action::Swap {
                    a: "A1".into(),
                    b: "B2".into()
                }
            )
        );
        let answer = pb::AnswerDrawRequest {
            context: context(),
            accept: true,
        };
        assert_eq!(
            answer.into_action().unwrap(),
            (context(), Action::AnswerDraw { accept: true })
        );
        let resign = pb::ResignRequest { context: None };
        assert_eq!(resign.into_action().unwrap(), (None, Action::Resign));
        let answer = pb::SubmitMoveRequest::respond(pb::CommandResult {
            version: 9,
            ..Default::default()
        });
        assert_eq!(answer.result.map(|r| r.version), Some(9));
    }

    #[test]
    fn a_deployment_is_required_before_the_context_is_read() {
        let request = pb::SetDeploymentRequest {
            context: None,
            deployment: None,
        };
        let refusal = request.into_action().unwrap_err();
        assert_eq!(refusal.code(), tonic::Code::InvalidArgument);
        assert!(refusal.message().contains("deployment"), "{refusal:?}");
    }

    #[test]
    fn actions_become_the_engine_commands_of_the_acting_side() {
        let rules = Rules::default();
        let side = Side::North;
        let (a, b) = (square(&rules, "A1"), square(&rules, "B2"));
        let cases = [
            (Action::Reshuffle, Command::Reshuffle { side }),
            (
                Action::Swap {
                    a: "A1".into(),
                    b: "B2".into(),
                },
                Command::Swap { side, a, b },
            ),
            (Action::Confirm, Command::Confirm { side }),
            (
                Action::Move(Some(pb::Move {
                    from: "A1".into(),
                    to: "B2".into(),
                })),
                Command::Move {
                    side,
                    mv: Move { from: a, to: b },
                },
            ),
            (Action::OfferDraw, Command::OfferDraw { side }),
            (
                Action::AnswerDraw { accept: false },
                Command::AnswerDraw {
                    side,
                    accept: false,
                },
            ),
            (Action::Resign, Command::Resign { side }),
        ];
        for (action, command) in cases {
            assert_eq!(action.command(&rules, side).unwrap(), command, "{action:?}");
        }
    }

    #[test]
    fn fields_that_do_not_read_on_the_board_are_refused_by_name() {
        let rules = Rules::default();
        let cases = [
            (
                Action::Swap {
                    a: "A1".into(),
                    b: "Z99".into(),
                },
                "square_b",
            ),
            (Action::Move(None), "move"),
            (
                Action::SetDeployment(pb::Deployment {
                    side: pb::Side::South as i32,
                    placements: Vec::new(),
                }),
                "deployment.side",
            ),
        ];
        for (action, field) in cases {
            let refusal = action.command(&rules, Side::North).unwrap_err();
            assert_eq!(refusal.code(), tonic::Code::InvalidArgument, "{action:?}");
            assert!(refusal.message().contains(field), "{action:?}: {refusal:?}");
        }
    }

    #[test]
    fn every_kind_is_a_distinct_known_label() {
        let actions = [
            Action::Reshuffle,
            Action::Swap {
                a: String::new(),
                b: String::new(),
            },
            Action::SetDeployment(pb::Deployment::default()),
            Action::Confirm,
            Action::Move(None),
            Action::OfferDraw,
            Action::AnswerDraw { accept: true },
            Action::Resign,
        ];
        let kinds: std::collections::HashSet<_> = actions.iter().map(Action::kind).collect();
        assert_eq!(kinds.len(), actions.len());
        assert!(kinds.iter().all(|kind| names::COMMAND_KINDS.contains(kind)));
    }
}
