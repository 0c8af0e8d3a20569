//! Parsing and validation of request fields shared by several calls: game ids, the command
//! context (seat and idempotency key), players, time controls. Every check names the field that
//! is wrong, so a caller's mistake is an `INVALID_ARGUMENT` and never reaches the store.

use crate::errors::{check_text, invalid_field, missing_field, wire_status};
use hidden_front_api_error::quote;
use hidden_front_api_error::text::TextKind;
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Side, Viewer};
use hidden_front_store::TimeControl;
use hidden_front_wire as wire;
use tonic::Status;
use uuid::Uuid;

/// A parsed [`pb::CommandContext`] (or an operator's abort): the game, who acts, the
/// idempotency key (prefixed with the seat, or `admin:` for an operator, so keys of different
/// actors never collide) and the optional expected version.
pub(crate) struct Context {
    pub(crate) game_id: Uuid,
    pub(crate) actor: Actor,
    pub(crate) key: String,
    pub(crate) expected_version: Option<u64>,
    /// The timer whose fire the command carries out, if it is one (`ApplyTimer`): its append
    /// writes only while the slot still holds exactly that timer.
    pub(crate) fired: Option<hidden_front_store::Timer>,
}

/// Who runs a command through the command path.
pub(crate) enum Actor {
    /// A seat: a player's action, or a timer fired for that seat.
    Seat(Side),
    /// An operator of the admin API (`AdminService.AbortGame`).
    Operator(OperatorAction),
}

/// An operator's command: who (the configured operator name) and why (their reason), kept with
/// the command so the append can record them.
pub(crate) struct OperatorAction {
    pub(crate) operator: String,
    pub(crate) reason: String,
}

impl Actor {
    /// The viewer the command's answer is projected for: the seat, or a spectator for an
    /// operator (whose answer is an end, which reveals everything anyway).
    pub(crate) fn viewer(&self) -> Viewer {
        match self {
            Actor::Seat(side) => Viewer::player(*side),
            Actor::Operator(_) => Viewer::Spectator,
        }
    }

    /// The actor for spans and logs: the seat's name or `operator` (never the operator's reason).
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Actor::Seat(side) => side.name(),
            Actor::Operator(_) => "operator",
        }
    }
}

/// A game id field (`field` names it in the refusal).
pub(crate) fn parse_game_id(field: &str, text: &str) -> Result<Uuid, Status> {
    wire::game_id_from_proto(field, text).map_err(wire_status)
}

/// A player's command context, and the seat acting.
pub(crate) fn parse_context(
    context: Option<pb::CommandContext>,
) -> Result<(Context, Side), Status> {
    let context = context.ok_or_else(|| missing_field("context"))?;
    let game_id = parse_game_id("context.game_id", &context.game_id)?;
    let side = wire::side_from_proto("context.side", context.side).map_err(wire_status)?;
    if context.idempotency_key.is_empty() {
        return Err(invalid_field(
            "context.idempotency_key",
            "is required: a unique key per command makes retries safe",
        ));
    }
    check_text(
        "context.idempotency_key",
        &context.idempotency_key,
        TextKind::Key,
    )?;
    Ok((
        Context {
            game_id,
            actor: Actor::Seat(side),
            key: format!("{}:{}", side.name(), context.idempotency_key),
            expected_version: context.expected_version,
            fired: None,
        },
        side,
    ))
}

/// The time control of a new game (none: the online rules).
pub(crate) fn time_control_from_proto(tc: Option<pb::TimeControl>) -> Result<TimeControl, Status> {
    let Some(tc) = tc else {
        return Ok(TimeControl::online());
    };
    match tc.name.as_str() {
        "" | "online" => Ok(TimeControl::online()),
        "relaxed" => Ok(TimeControl::relaxed()),
        "custom" => {
            for (field, value) in [
                ("time_control.deployment_seconds", tc.deployment_seconds),
                ("time_control.move_seconds", tc.move_seconds),
                ("time_control.reconnect_seconds", tc.reconnect_seconds),
            ] {
                if !(1..=86_400).contains(&value) {
                    return Err(invalid_field(
                        field,
                        format!("must be between 1 and 86400 seconds, got {value}"),
                    ));
                }
            }
            Ok(TimeControl {
                name: "custom".into(),
                deployment_seconds: tc.deployment_seconds,
                move_seconds: tc.move_seconds,
                reconnect_seconds: tc.reconnect_seconds,
            })
        }
        other => Err(invalid_field(
            "time_control.name",
            format!("{} is not one of online, relaxed, custom", quote(other)),
        )),
    }
}

/// The wire form of a time control.
pub(crate) fn time_control_to_proto(tc: &TimeControl) -> pb::TimeControl {
    pb::TimeControl {
        name: tc.name.clone(),
        deployment_seconds: tc.deployment_seconds,
        move_seconds: tc.move_seconds,
        reconnect_seconds: tc.reconnect_seconds,
    }
}

/// A player id field: required, and within the shared text rules.
pub(crate) fn validate_player(field: &str, player: &str) -> Result<(), Status> {
    if player.trim().is_empty() {
        return Err(missing_field(field));
    }
    check_text(field, player, TextKind::Id)
}
