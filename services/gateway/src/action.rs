//! The eight player actions (`client.proto`: Reshuffle, Swap, Deploy, Confirm, Play,
//! ProposeDraw, RespondDraw, Concede), in one table for both faces.
//!
//! The gRPC face receives each action's proto request message; the WebSocket face decodes its
//! frames into the same messages. Both turn a message into a [`PlayerAction`] through the one
//! conversion here ([`ActionMessage::into_request`]) and wrap the answer in the message's own
//! response through [`ActionMessage::respond`]; `Gateway::act` is the one place that maps an
//! action to its session call. An action added to the proto is then one row of the table below
//! and one arm of `Gateway::act`, and the faces cannot differ in what an action means.

use hidden_front_proto::v1 as pb;

/// One of the eight actions a seated player takes in a game, with what it carries besides the
/// game (that is the [`ActionRequest`]'s context).
#[derive(Debug, Clone, PartialEq)]
pub enum PlayerAction {
    /// A fresh random draft.
    Reshuffle,
    /// Exchange two pieces of the draft.
    Swap {
        /// The square of one piece.
        square_a: String,
        /// The square of the other.
        square_b: String,
    },
    /// A whole deployment.
    Deploy {
        /// Every piece of the player's side on its square.
        placements: Vec<pb::Placement>,
    },
    /// Lock in the draft.
    Confirm,
    /// A move (`None` when the request carried none: the session names the missing field).
    Play(Option<pb::Move>),
    /// Offer a draw.
    ProposeDraw,
    /// Answer the opponent's offer.
    RespondDraw {
        /// Whether the draw is accepted.
        accept: bool,
    },
    /// Resign.
    Concede,
}

impl PlayerAction {
    /// The action's name in metrics, logs and rate-limit labels: the WebSocket op of the action
    /// (one of eight fixed values, so a label stays bounded).
    pub fn name(&self) -> &'static str {
        match self {
            PlayerAction::Reshuffle => "reshuffle",
            PlayerAction::Swap { .. } => "swap",
            PlayerAction::Deploy { .. } => "deploy",
            PlayerAction::Confirm => "confirm",
            PlayerAction::Play(_) => "play",
            PlayerAction::ProposeDraw => "propose_draw",
            PlayerAction::RespondDraw { .. } => "respond_draw",
            PlayerAction::Concede => "concede",
        }
    }
}

/// An action as either face receives it: the game it is for (and its idempotency key and
/// expected version), and the action. `Gateway::act` takes this.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionRequest {
    /// The request's `context`; `None` is refused as a missing field.
    pub context: Option<pb::ActionContext>,
    /// What the player does.
    pub action: PlayerAction,
}

/// The request message of one action's RPC, as both faces receive it: its one conversion into
/// an [`ActionRequest`], and the response message its RPC answers with.
pub trait ActionMessage {
    /// The RPC's response message (`{ result: ActionResult }`).
    type Response;

    /// The action this message asks for.
    fn into_request(self) -> ActionRequest;

    /// The RPC's answer carrying `result`.
    fn respond(result: pb::ActionResult) -> Self::Response;
}

/// One row per action: the request message, its response message, and the action it carries.
macro_rules! action_table {
    ($($request:ident => $response:ident, |$r:ident| $action:expr;)*) => {
        $(
            impl ActionMessage for pb::$request {
                type Response = pb::$response;

                fn into_request(self) -> ActionRequest {
                    let $r = self;
                    ActionRequest {
                        action: $action,
                        context: $r.context,
                    }
                }

                fn respond(result: pb::ActionResult) -> pb::$response {
                    pb::$response {
                        result: Some(result),
                    }
                }
            }
        )*
    };
}

action_table! {
    ReshuffleRequest => ReshuffleResponse, |r| PlayerAction::Reshuffle;
    SwapRequest => SwapResponse, |r| PlayerAction::Swap {
        square_a: r.square_a,
        square_b: r.square_b,
    };
    DeployRequest => DeployResponse, |r| PlayerAction::Deploy {
        placements: r.placements,
    };
    ConfirmRequest => ConfirmResponse, |r| PlayerAction::Confirm;
    PlayRequest => PlayResponse, |r| PlayerAction::Play(r.r#move);
    ProposeDrawRequest => ProposeDrawResponse, |r| PlayerAction::ProposeDraw;
    RespondDrawRequest => RespondDrawResponse, |r| PlayerAction::RespondDraw { accept: r.accept };
    ConcedeRequest => ConcedeResponse, |r| PlayerAction::Concede;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(game_id: &str) -> Option<pb::ActionContext> {
        Some(pb::ActionContext {
            game_id: game_id.into(),
            idempotency_key: "k".into(),
            expected_version: Some(4),
        })
    }

    #[test]
    fn every_message_becomes_its_action_with_its_fields_and_context() {
        let placement = pb::Placement {
            square: "A1".into(),
            piece: "colonel".into(),
        };
        let mv = pb::Move {
            from: "A6".into(),
            to: "A7".into(),
        };
        let cases = [
            (
                pb::ReshuffleRequest {
                    context: context("r"),
                }
                .into_request(),
                "r",
                PlayerAction::Reshuffle,
            ),
            (
                pb::SwapRequest {
                    context: context("s"),
                    square_a: "A1".into(),
                    square_b: "B2".into(),
                }
                .into_request(),
                "s",
                PlayerAction::Swap {
                    square_a: "A1".into(),
                    square_b: "B2".into(),
                },
            ),
            (
                pb::DeployRequest {
                    context: context("d"),
                    placements: vec![placement.clone()],
                }
                .into_request(),
                "d",
                PlayerAction::Deploy {
                    placements: vec![placement],
                },
            ),
            (
                pb::ConfirmRequest {
                    context: context("c"),
                }
                .into_request(),
                "c",
                PlayerAction::Confirm,
            ),
            (
                pb::PlayRequest {
                    context: context("p"),
                    r#move: Some(mv.clone()),
                }
                .into_request(),
                "p",
                PlayerAction::Play(Some(mv)),
            ),
            (
                pb::ProposeDrawRequest {
                    context: context("o"),
                }
                .into_request(),
                "o",
                PlayerAction::ProposeDraw,
            ),
            (
                pb::RespondDrawRequest {
                    context: context("a"),
                    accept: true,
                }
                .into_request(),
                "a",
                PlayerAction::RespondDraw { accept: true },
            ),
            (
                pb::ConcedeRequest {
                    context: context("g"),
                }
                .into_request(),
                "g",
                PlayerAction::Concede,
            ),
        ];
        for (request, game_id, action) in cases {
            assert_eq!(request.action, action);
            assert_eq!(request.context, context(game_id), "{}", action.name());
        }
        let none = pb::PlayRequest::default().into_request();
        assert_eq!(none.context, None, "a missing context stays missing");
        assert_eq!(none.action, PlayerAction::Play(None));
    }

    #[test]
    fn the_answer_is_the_result_in_the_actions_own_response() {
        let result = pb::ActionResult {
            version: 9,
            events: Vec::new(),
            replayed: true,
        };
        let answer = <pb::RespondDrawRequest as ActionMessage>::respond(result.clone());
        assert_eq!(
            answer,
            pb::RespondDrawResponse {
                result: Some(result.clone())
            }
        );
        let answer = <pb::DeployRequest as ActionMessage>::respond(result.clone());
        assert_eq!(answer.result, Some(result));
    }

    #[test]
    fn every_action_has_its_own_name() {
        let actions = [
            PlayerAction::Reshuffle,
            PlayerAction::Swap {
                square_a: String::new(),
                square_b: String::new(),
            },
            PlayerAction::Deploy {
                placements: Vec::new(),
            },
            PlayerAction::Confirm,
            PlayerAction::Play(None),
            PlayerAction::ProposeDraw,
            PlayerAction::RespondDraw { accept: false },
            PlayerAction::Concede,
        ];
        let names: std::collections::HashSet<&str> = actions.iter().map(|a| a.name()).collect();
        assert_eq!(names.len(), actions.len());
    }
}
