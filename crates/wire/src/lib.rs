//! Conversions between the engine (`hidden-front-rules`) and the wire (`hidden-front-proto`).
//!
//! Inbound, every conversion validates and fails with a [`WireError`] that names the field and
//! what was wrong with it. Outbound, only *views* are converted: [`game_view`] takes a
//! [`GameView`] and [`game_event`] a [`ViewEvent`], both produced by the engine's view functions,
//! so nothing converted here can carry a kind the receiver may not know.

use hidden_front_proto::v1 as pb;
use hidden_front_rules::{
    Deployment, EndReason, FlagReveal, GameView, Move, Node, Outcome, Phase, PieceKind, Reveal,
    Rules, Side, ViewEvent, ViewPiece, Viewer,
};
use thiserror::Error;

/// An inbound value that does not make sense; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// A required field is missing or empty.
    #[error("{0} is required")]
    Missing(&'static str),
    /// A field's value is not acceptable.
    #[error("{field}: {reason}")]
    Invalid {
        /// The field, e.g. `move.from`.
        field: String,
        /// What is wrong.
        reason: String,
    },
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> WireError {
    WireError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}

/// The proto side of an engine side.
pub fn side_to_proto(side: Side) -> pb::Side {
    match side {
        Side::South => pb::Side::South,
        Side::North => pb::Side::North,
    }
}

/// The proto side of an optional side (`Unspecified` for none).
pub fn opt_side_to_proto(side: Option<Side>) -> i32 {
    side.map_or(pb::Side::Unspecified, side_to_proto) as i32
}

/// Reads a side field; unspecified or unknown values are refused.
pub fn side_from_proto(field: &'static str, value: i32) -> Result<Side, WireError> {
    match pb::Side::try_from(value) {
        Ok(pb::Side::South) => Ok(Side::South),
        Ok(pb::Side::North) => Ok(Side::North),
        _ => Err(invalid(field, "must be SIDE_SOUTH or SIDE_NORTH")),
    }
}

/// Reads a viewer field.
pub fn viewer_from_proto(field: &'static str, value: i32) -> Result<Viewer, WireError> {
    match pb::Viewer::try_from(value) {
        Ok(pb::Viewer::South) => Ok(Viewer::South),
        Ok(pb::Viewer::North) => Ok(Viewer::North),
        Ok(pb::Viewer::Spectator) => Ok(Viewer::Spectator),
        _ => Err(invalid(
            field,
            "must be VIEWER_SOUTH, VIEWER_NORTH or VIEWER_SPECTATOR",
        )),
    }
}

/// The proto viewer of an engine viewer.
pub fn viewer_to_proto(viewer: Viewer) -> pb::Viewer {
    match viewer {
        Viewer::South => pb::Viewer::South,
        Viewer::North => pb::Viewer::North,
        Viewer::Spectator => pb::Viewer::Spectator,
    }
}

/// The proto phase of an engine phase.
pub fn phase_to_proto(phase: Phase) -> pb::Phase {
    match phase {
        Phase::Deployment => pb::Phase::Deployment,
        Phase::Play => pb::Phase::Play,
        Phase::Ended => pb::Phase::Ended,
    }
}

/// The proto end reason of an engine end reason.
pub fn end_reason_to_proto(reason: EndReason) -> pb::EndReason {
    match reason {
        EndReason::FlagCaptured => pb::EndReason::FlagCaptured,
        EndReason::HqEntered => pb::EndReason::HqEntered,
        EndReason::NoLegalMoves => pb::EndReason::NoLegalMoves,
        EndReason::NoCombatLimit => pb::EndReason::NoCombatLimit,
        EndReason::AgreedDraw => pb::EndReason::AgreedDraw,
        EndReason::Resigned => pb::EndReason::Resigned,
        EndReason::Timeouts => pb::EndReason::Timeouts,
        EndReason::Disconnected => pb::EndReason::Disconnected,
        EndReason::SeatLost => pb::EndReason::SeatLost,
    }
}

/// The proto outcome of an engine outcome.
pub fn outcome_to_proto(outcome: Outcome) -> pb::Outcome {
    pb::Outcome {
        winner: opt_side_to_proto(outcome.winner),
        reason: end_reason_to_proto(outcome.reason) as i32,
    }
}

/// Reads a node name (`A1`, case-insensitive) of the rules' board.
pub fn square_from_proto(rules: &Rules, field: &str, name: &str) -> Result<Node, WireError> {
    if name.is_empty() {
        return Err(invalid(field, "a square name is required, e.g. \"A6\""));
    }
    if name.len() > 8 {
        return Err(invalid(field, "is not a square of the board"));
    }
    rules
        .topology()
        .node(name)
        .ok_or_else(|| invalid(field, format!("{name:?} is not a square of the board")))
}

/// Reads a move.
pub fn move_from_proto(rules: &Rules, mv: Option<&pb::Move>) -> Result<Move, WireError> {
    let mv = mv.ok_or(WireError::Missing("move"))?;
    Ok(Move {
        from: square_from_proto(rules, "move.from", &mv.from)?,
        to: square_from_proto(rules, "move.to", &mv.to)?,
    })
}

/// The proto form of a move.
pub fn move_to_proto(rules: &Rules, mv: Move) -> pb::Move {
    let topo = rules.topology();
    pb::Move {
        from: topo.name(mv.from).to_string(),
        to: topo.name(mv.to).to_string(),
    }
}

/// Reads a deployment for `side` from placements. Only the shape is checked here (squares and
/// codes exist); the rules check (every problem named) is the engine's.
pub fn deployment_from_proto(
    rules: &Rules,
    side: Side,
    placements: &[pb::Placement],
) -> Result<Deployment, WireError> {
    let max = rules.topology().node_count as usize;
    if placements.len() > max {
        return Err(invalid(
            "placements",
            format!(
                "{} placements, more than the board's {max} squares",
                placements.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(placements.len());
    for (i, p) in placements.iter().enumerate() {
        let node = square_from_proto(rules, &format!("placements[{i}].square"), &p.square)?;
        let kind = rules.parse_kind(&p.piece).ok_or_else(|| {
            invalid(
                format!("placements[{i}].piece"),
                format!("{:?} is not a piece code of {}", p.piece, rules.name()),
            )
        })?;
        out.push((node, kind));
    }
    Ok(Deployment::new(side, out))
}

/// The proto form of a deployment.
pub fn deployment_to_proto(rules: &Rules, deployment: &Deployment) -> pb::Deployment {
    let topo = rules.topology();
    pb::Deployment {
        side: side_to_proto(deployment.side) as i32,
        placements: deployment
            .placements
            .iter()
            .map(|&(node, kind)| pb::Placement {
                square: topo.name(node).to_string(),
                piece: rules.code(kind).to_string(),
            })
            .collect(),
    }
}

fn code(rules: &Rules, kind: Option<PieceKind>) -> String {
    kind.map(|k| rules.code(k).to_string()).unwrap_or_default()
}

fn piece_to_proto(rules: &Rules, piece: &ViewPiece) -> pb::VisiblePiece {
    pb::VisiblePiece {
        square: rules.topology().name(piece.node).to_string(),
        side: side_to_proto(piece.side) as i32,
        id: u32::from(piece.id.0),
        piece: code(rules, piece.kind),
    }
}

fn flag_reveal_to_proto(rules: &Rules, reveal: &FlagReveal) -> pb::FlagReveal {
    let flag = rules.parse_kind("F");
    pb::FlagReveal {
        side: side_to_proto(reveal.side) as i32,
        flags: reveal
            .flags
            .iter()
            .map(|&(node, id)| {
                piece_to_proto(
                    rules,
                    &ViewPiece {
                        node,
                        side: reveal.side,
                        id,
                        kind: flag,
                    },
                )
            })
            .collect(),
    }
}

/// The proto form of what an ended game reveals.
pub fn reveal_to_proto(rules: &Rules, reveal: &Reveal) -> pb::EndReveal {
    pb::EndReveal {
        deployments: reveal
            .deployments
            .iter()
            .map(|d| deployment_to_proto(rules, d))
            .collect(),
        starting_pieces: reveal
            .pieces
            .iter()
            .map(|p| piece_to_proto(rules, p))
            .collect(),
    }
}

/// Who sits where, for views.
#[derive(Debug, Clone, Copy)]
pub struct Seats<'a> {
    /// The game's id.
    pub game_id: &'a str,
    /// Player in the south seat.
    pub south_player: &'a str,
    /// Player in the north seat.
    pub north_player: &'a str,
}

/// The proto form of a view of a game at `version`.
pub fn game_view(
    view: &GameView,
    seats: Seats<'_>,
    version: u64,
    time_control: pb::TimeControl,
) -> pb::GameView {
    let rules = &view.rules;
    pb::GameView {
        game_id: seats.game_id.to_string(),
        version,
        viewer: viewer_to_proto(view.viewer) as i32,
        rules: rules.name(),
        time_control: Some(time_control),
        phase: phase_to_proto(view.phase) as i32,
        first_mover: side_to_proto(view.first_mover) as i32,
        to_move: opt_side_to_proto(view.to_move),
        plies: view.plies,
        plies_without_combat: u32::from(view.plies_without_combat),
        south_timeouts: u32::from(view.timeouts[0]),
        north_timeouts: u32::from(view.timeouts[1]),
        draw_offer: opt_side_to_proto(view.draw_offer),
        south_confirmed: view.confirmed[0],
        north_confirmed: view.confirmed[1],
        own_deployment: view
            .own_deployment
            .as_ref()
            .map(|d| deployment_to_proto(rules, d)),
        pieces: view
            .pieces
            .iter()
            .map(|p| piece_to_proto(rules, p))
            .collect(),
        outcome: view.outcome.map(outcome_to_proto),
        reveal: view.reveal.as_ref().map(|r| reveal_to_proto(rules, r)),
        south_player: seats.south_player.to_string(),
        north_player: seats.north_player.to_string(),
        // Presence is not part of the engine's view; the session fills it in.
        south_connected: false,
        north_connected: false,
        // Filled by the session, which knows the timers.
        turn_deadline_unix_millis: 0,
        south_away_deadline_unix_millis: 0,
        north_away_deadline_unix_millis: 0,
    }
}

/// The proto form of one projected event, at `seq` in the game's log.
pub fn game_event(rules: &Rules, game_id: &str, seq: u64, event: &ViewEvent) -> pb::GameEvent {
    use pb::game_event::Event as E;
    let pieces = |ps: &[ViewPiece]| ps.iter().map(|p| piece_to_proto(rules, p)).collect();
    let event = match event {
        ViewEvent::Created { rules, first_mover } => E::Created(pb::GameCreated {
            rules: rules.name(),
            first_mover: side_to_proto(*first_mover) as i32,
        }),
        ViewEvent::DeploymentDrafted { deployment } => {
            E::DeploymentDrafted(pb::DeploymentDrafted {
                deployment: Some(deployment_to_proto(rules, deployment)),
            })
        }
        ViewEvent::DeploymentConfirmed {
            side,
            deployment,
            by_deadline,
        } => E::DeploymentConfirmed(pb::DeploymentConfirmed {
            side: side_to_proto(*side) as i32,
            deployment: deployment.as_ref().map(|d| deployment_to_proto(rules, d)),
            by_deadline: *by_deadline,
        }),
        ViewEvent::PlayStarted { pieces: ps } => {
            E::PlayStarted(pb::PlayStarted { pieces: pieces(ps) })
        }
        ViewEvent::Moved {
            side,
            mv,
            piece,
            kind,
            combat,
            flag_reveal,
        } => E::Moved(pb::Moved {
            side: side_to_proto(*side) as i32,
            r#move: Some(move_to_proto(rules, *mv)),
            piece_id: u32::from(piece.0),
            piece: code(rules, *kind),
            combat: combat.map(|c| pb::CombatView {
                defender_id: u32::from(c.defender.0),
                defender_piece: code(rules, c.defender_kind),
                attacker_survives: c.attacker_survives,
                defender_survives: c.defender_survives,
            }),
            flag_reveals: flag_reveal
                .iter()
                .map(|r| flag_reveal_to_proto(rules, r))
                .collect(),
        }),
        ViewEvent::TimedOut { side, count } => E::TimedOut(pb::TimedOut {
            side: side_to_proto(*side) as i32,
            count: u32::from(*count),
        }),
        ViewEvent::DrawOffered { side } => E::DrawOffered(pb::DrawOffered {
            side: side_to_proto(*side) as i32,
        }),
        ViewEvent::DrawDeclined { side } => E::DrawDeclined(pb::DrawDeclined {
            side: side_to_proto(*side) as i32,
        }),
        ViewEvent::DrawLapsed { side } => E::DrawLapsed(pb::DrawLapsed {
            side: side_to_proto(*side) as i32,
        }),
        ViewEvent::Resigned { side } => E::Resigned(pb::Resigned {
            side: side_to_proto(*side) as i32,
        }),
        ViewEvent::SeatLost { side } => E::SeatLost(pb::SeatLost {
            side: side_to_proto(*side) as i32,
        }),
        ViewEvent::Ended {
            outcome,
            pieces: ps,
            reveal,
        } => E::Ended(pb::GameEnded {
            outcome: Some(outcome_to_proto(*outcome)),
            pieces: pieces(ps),
            reveal: reveal.as_ref().map(|r| reveal_to_proto(rules, r)),
        }),
    };
    pb::GameEvent {
        game_id: game_id.to_string(),
        seq,
        event: Some(event),
    }
}
