//! Conversions between the engine (`hidden-front-rules`) and the wire (`hidden-front-proto`).
//!
//! Inbound, every conversion validates and fails with a [`FieldError`] that names the field and
//! what was wrong with it. Outbound, only *views* are converted: [`game_view`] takes a
//! [`GameView`] and [`game_event`] a [`ViewEvent`], both produced by the engine's view functions,
//! so nothing converted here can carry a kind the receiver may not know.
//!
//! One view is the whole engine event: the full-information one (a spectator's after the end).
//! [`engine_event_to_proto`] and [`engine_event_from_proto`] carry the engine's [`Event`] over
//! `WatchGameResponse.event` from the session to its watchers (the gateway, the computer player's
//! driver); that protobuf form, which only grows additively, is the versioned contract between
//! releases (see docs/session.md, "The event contract").

use hidden_front_api_error::{ApiError, quote};
use hidden_front_proto::v1 as pb;
use hidden_front_proto::well_known::Timestamp;
use hidden_front_rules::{
    Combat, Deployment, EndReason, Event, FlagReveal, GameView, Move, Node, Outcome, Phase, Piece,
    PieceId, PieceKind, Reveal, Rules, Side, ViewCombat, ViewEvent, ViewPiece, Viewer, project,
};
use std::time::{SystemTime, UNIX_EPOCH};
use thiserror::Error;

/// A field of an inbound message whose value does not make sense; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FieldError {
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

impl From<FieldError> for ApiError {
    fn from(error: FieldError) -> ApiError {
        match error {
            FieldError::Missing(field) => ApiError::missing_field(field),
            FieldError::Invalid { field, reason } if reason == "is required" => {
                ApiError::missing_field(field)
            }
            FieldError::Invalid { field, reason } => ApiError::invalid_field(field, reason),
        }
    }
}

impl FieldError {
    /// The field at fault (`move.from`, `event.moved.combat.defender_piece`), so a caller can
    /// report it apart from the message.
    pub fn field(&self) -> &str {
        match self {
            FieldError::Missing(field) => field,
            FieldError::Invalid { field, .. } => field,
        }
    }

    /// This error naming `field` instead. The readers of lists (a deployment's placements, a
    /// position's pieces) read each element under an unnamed field and name the element's path
    /// only when it fails: formatting two to four paths for every element that succeeds was a
    /// third of decoding a deployment (docs/benchmarks.md,
    /// "List elements named only when they fail").
    fn in_field(self, field: impl FnOnce() -> String) -> FieldError {
        match self {
            FieldError::Invalid { reason, .. } => FieldError::Invalid {
                field: field(),
                reason,
            },
            missing @ FieldError::Missing(_) => missing,
        }
    }
}

/// The longest name or code read from a message; anything longer is refused before it is looked
/// up (and is not echoed back in full).
const MAX_NAME_LEN: usize = 256;

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> FieldError {
    FieldError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}

/// A time as the protos carry it (`google.protobuf.Timestamp`): seconds and nanoseconds since
/// the Unix epoch. Times before the epoch are written as the epoch: no server time is one.
pub fn timestamp_to_proto(at: SystemTime) -> Timestamp {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    Timestamp {
        seconds: i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(since.subsec_nanos()).unwrap_or(0),
    }
}

/// Reads a `google.protobuf.Timestamp` of `field` as milliseconds since the Unix epoch (what
/// replays record), rounding down; refuses nanoseconds outside `0..1e9`.
pub fn timestamp_millis_from_proto(field: &str, at: &Timestamp) -> Result<i64, FieldError> {
    if !(0..1_000_000_000).contains(&at.nanos) {
        return Err(invalid(
            field,
            format!("nanos {} is outside 0..1000000000", at.nanos),
        ));
    }
    at.seconds
        .checked_mul(1000)
        .and_then(|millis| millis.checked_add(i64::from(at.nanos / 1_000_000)))
        .ok_or_else(|| invalid(field, format!("seconds {} is out of range", at.seconds)))
}

/// Reads a game id (a UUID) of `field`; empty is refused as missing. The one parser of game
/// ids, so every service names a bad one the same way.
pub fn game_id_from_proto(field: &str, text: &str) -> Result<uuid::Uuid, FieldError> {
    if text.is_empty() {
        return Err(invalid(field, "is required"));
    }
    uuid::Uuid::parse_str(text)
        .map_err(|_| invalid(field, format!("{} is not a game id (a UUID)", quote(text))))
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
pub fn side_from_proto(field: &str, value: i32) -> Result<Side, FieldError> {
    match pb::Side::try_from(value) {
        Ok(pb::Side::South) => Ok(Side::South),
        Ok(pb::Side::North) => Ok(Side::North),
        _ => Err(invalid(field, "must be SIDE_SOUTH or SIDE_NORTH")),
    }
}

/// Reads a viewer field.
pub fn viewer_from_proto(field: &str, value: i32) -> Result<Viewer, FieldError> {
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

/// Reads a phase field (the admin API's search by phase).
pub fn phase_from_proto(field: &str, value: i32) -> Result<Phase, FieldError> {
    match pb::Phase::try_from(value) {
        Ok(pb::Phase::Deployment) => Ok(Phase::Deployment),
        Ok(pb::Phase::Play) => Ok(Phase::Play),
        Ok(pb::Phase::Ended) => Ok(Phase::Ended),
        _ => Err(invalid(
            field,
            "must be PHASE_DEPLOYMENT, PHASE_PLAY or PHASE_ENDED",
        )),
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
        EndReason::Aborted => pb::EndReason::Aborted,
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
pub fn square_from_proto(rules: &Rules, field: &str, name: &str) -> Result<Node, FieldError> {
    if name.is_empty() {
        return Err(invalid(field, "a square name is required, e.g. \"A6\""));
    }
    if name.len() > 8 {
        return Err(invalid(field, "is not a square of the board"));
    }
    rules.topology().node(name).ok_or_else(|| {
        invalid(
            field,
            format!("{} is not a square of the board", quote(name)),
        )
    })
}

/// Reads a move.
pub fn move_from_proto(rules: &Rules, mv: Option<&pb::Move>) -> Result<Move, FieldError> {
    let mv = mv.ok_or(FieldError::Missing("move"))?;
    move_at(rules, "move", mv)
}

/// Reads the move in field `field`.
fn move_at(rules: &Rules, field: &str, mv: &pb::Move) -> Result<Move, FieldError> {
    Ok(Move {
        from: square_from_proto(rules, "", &mv.from)
            .map_err(|e| e.in_field(|| format!("{field}.from")))?,
        to: square_from_proto(rules, "", &mv.to)
            .map_err(|e| e.in_field(|| format!("{field}.to")))?,
    })
}

/// Reads a rule-set name (`hidden-front+flag-reveal`), with the engine's explanation of a name
/// it does not know.
pub fn rules_from_proto(field: &str, name: &str) -> Result<Rules, FieldError> {
    if name.len() > MAX_NAME_LEN {
        return Err(invalid(
            field,
            format!("is longer than {MAX_NAME_LEN} bytes, so not a rule-set name"),
        ));
    }
    Rules::parse(name).map_err(|e| invalid(field, e.to_string()))
}

/// Reads a piece code (`9`, `B`, `GEN`) of the rules' family.
fn kind_from_proto(rules: &Rules, field: &str, code: &str) -> Result<PieceKind, FieldError> {
    if code.len() > MAX_NAME_LEN {
        return Err(invalid(
            field,
            format!("is not a piece code of {}", rules.name()),
        ));
    }
    rules.parse_kind(code).ok_or_else(|| {
        invalid(
            field,
            format!("{} is not a piece code of {}", quote(code), rules.name()),
        )
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
) -> Result<Deployment, FieldError> {
    placements_at(rules, "", side, placements)
}

/// [`deployment_from_proto`] for placements in a field whose path starts with `prefix`
/// (`event.deployment_drafted.deployment.`).
fn placements_at(
    rules: &Rules,
    prefix: &str,
    side: Side,
    placements: &[pb::Placement],
) -> Result<Deployment, FieldError> {
    let max = rules.topology().node_count as usize;
    if placements.len() > max {
        return Err(invalid(
            format!("{prefix}placements"),
            format!(
                "{} placements, more than the board's {max} squares",
                placements.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(placements.len());
    for (i, p) in placements.iter().enumerate() {
        let node = square_from_proto(rules, "", &p.square)
            .map_err(|e| e.in_field(|| format!("{prefix}placements[{i}].square")))?;
        let kind = kind_from_proto(rules, "", &p.piece)
            .map_err(|e| e.in_field(|| format!("{prefix}placements[{i}].piece")))?;
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
                flag_captured: c.flag_captured,
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

/// The full-information proto form of an engine event at `seq` in the game's log: the event as a
/// spectator sees it after the end, which shows every piece's kind; `end` is what the ended game
/// reveals, carried by its end event (any other event ignores it). This is what `WatchGame`
/// sends to the session's watchers; [`engine_event_from_proto`] is its inverse.
pub fn engine_event_to_proto(
    rules: &Rules,
    game_id: &str,
    seq: u64,
    event: &Event,
    end: &Reveal,
) -> pb::GameEvent {
    match project(event, Viewer::Spectator, Some(end)) {
        Some(view) => game_event(rules, game_id, seq, &view),
        // After the end a spectator sees every event, so this arm is never taken; an event
        // without a body is refused by every reader, loudly, rather than skipped.
        None => pb::GameEvent {
            game_id: game_id.to_string(),
            seq,
            event: None,
        },
    }
}

/// Rebuilds the engine's event from its full-information proto form ([`engine_event_to_proto`]),
/// for a game played under `rules` (squares and piece codes are read on its board; a `Created`
/// event carries its own rules): [`view_event_from_proto`], then every kind the engine's event
/// holds required. Every field is checked: a bad one is an error naming it
/// (`event.moved.combat.defender_piece`). Fields this release does not know (a newer session's
/// additions) are ignored, and so are derived ones (a revealed flag's code, the end's reveal).
///
/// The defender of a fight is always an enemy piece (the engine refuses a move onto an own
/// piece), so its side is the mover's opponent and is not on the wire.
pub fn engine_event_from_proto(rules: &Rules, event: &pb::GameEvent) -> Result<Event, FieldError> {
    let required = |field: &str| {
        invalid(
            field,
            "is required (the full-information form names every kind)",
        )
    };
    Ok(match view_event_from_proto(rules, event)? {
        ViewEvent::Created { rules, first_mover } => Event::Created { rules, first_mover },
        ViewEvent::DeploymentDrafted { deployment } => Event::DeploymentDrafted { deployment },
        ViewEvent::DeploymentConfirmed {
            side,
            deployment,
            by_deadline,
        } => Event::DeploymentConfirmed {
            side,
            deployment: deployment
                .ok_or_else(|| invalid("event.deployment_confirmed.deployment", "is required"))?,
            by_deadline,
        },
        ViewEvent::PlayStarted { pieces } => Event::PlayStarted {
            pieces: full_pieces("event.play_started.pieces", &pieces)?,
        },
        ViewEvent::Moved {
            side,
            mv,
            piece,
            kind,
            combat,
            flag_reveal,
        } => Event::Moved {
            mv,
            piece: Piece {
                side,
                kind: kind.ok_or_else(|| required("event.moved.piece"))?,
                id: piece,
            },
            combat: match combat {
                None => None,
                Some(c) => Some(Combat {
                    defender: Piece {
                        side: side.other(),
                        kind: c
                            .defender_kind
                            .ok_or_else(|| required("event.moved.combat.defender_piece"))?,
                        id: c.defender,
                    },
                    attacker_survives: c.attacker_survives,
                    defender_survives: c.defender_survives,
                    flag_captured: c.flag_captured,
                }),
            },
            flag_reveal,
        },
        ViewEvent::TimedOut { side, count } => Event::TimedOut { side, count },
        ViewEvent::DrawOffered { side } => Event::DrawOffered { side },
        ViewEvent::DrawDeclined { side } => Event::DrawDeclined { side },
        ViewEvent::DrawLapsed { side } => Event::DrawLapsed { side },
        ViewEvent::Resigned { side } => Event::Resigned { side },
        ViewEvent::SeatLost { side } => Event::SeatLost { side },
        ViewEvent::Ended {
            outcome, pieces, ..
        } => Event::Ended {
            outcome,
            pieces: full_pieces("event.ended.pieces", &pieces)?,
        },
    })
}

/// Reads one event as a viewer was shown it ([`game_event`]'s inverse): kinds are `None` where
/// the code is empty (the viewer may not know them). Every field is checked as
/// [`engine_event_from_proto`] says. Why: clients follow a game by applying each event to
/// their view (`GameView::apply`) rather than reading the view again per event.
pub fn view_event_from_proto(
    rules: &Rules,
    event: &pb::GameEvent,
) -> Result<ViewEvent, FieldError> {
    use pb::game_event::Event as E;
    let Some(body) = &event.event else {
        return Err(invalid(
            "event",
            "is required (an event of a kind added after this release also arrives without one)",
        ));
    };
    let side = |field: &str, value: i32| side_from_proto(field, value);
    Ok(match body {
        E::Created(e) => ViewEvent::Created {
            rules: rules_from_proto("event.created.rules", &e.rules)?,
            first_mover: side("event.created.first_mover", e.first_mover)?,
        },
        E::DeploymentDrafted(e) => ViewEvent::DeploymentDrafted {
            deployment: deployment_at(
                rules,
                "event.deployment_drafted.deployment",
                e.deployment.as_ref(),
            )?,
        },
        E::DeploymentConfirmed(e) => {
            let confirmed_side = side("event.deployment_confirmed.side", e.side)?;
            let deployment = match &e.deployment {
                None => None,
                Some(d) => Some(deployment_at(
                    rules,
                    "event.deployment_confirmed.deployment",
                    Some(d),
                )?),
            };
            if let Some(deployment) = &deployment
                && deployment.side != confirmed_side
            {
                return Err(invalid(
                    "event.deployment_confirmed.deployment.side",
                    format!(
                        "is {}, not the confirming side {confirmed_side}",
                        deployment.side
                    ),
                ));
            }
            ViewEvent::DeploymentConfirmed {
                side: confirmed_side,
                deployment,
                by_deadline: e.by_deadline,
            }
        }
        E::PlayStarted(e) => ViewEvent::PlayStarted {
            pieces: view_pieces_at(rules, "event.play_started.pieces", &e.pieces)?,
        },
        E::Moved(e) => {
            let mv = e
                .r#move
                .as_ref()
                .ok_or_else(|| invalid("event.moved.move", "is required"))?;
            let combat = match &e.combat {
                None => None,
                Some(c) => Some(ViewCombat {
                    defender: piece_id_from_proto("event.moved.combat.defender_id", c.defender_id)?,
                    defender_kind: known_kind(
                        rules,
                        "event.moved.combat.defender_piece",
                        &c.defender_piece,
                    )?,
                    attacker_survives: c.attacker_survives,
                    defender_survives: c.defender_survives,
                    flag_captured: c.flag_captured,
                }),
            };
            let flag_reveal = e
                .flag_reveals
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    flag_reveal_from_proto(rules, &format!("event.moved.flag_reveals[{i}]"), r)
                })
                .collect::<Result<_, _>>()?;
            ViewEvent::Moved {
                side: side("event.moved.side", e.side)?,
                mv: move_at(rules, "event.moved.move", mv)?,
                piece: piece_id_from_proto("event.moved.piece_id", e.piece_id)?,
                kind: known_kind(rules, "event.moved.piece", &e.piece)?,
                combat,
                flag_reveal,
            }
        }
        E::TimedOut(e) => ViewEvent::TimedOut {
            side: side("event.timed_out.side", e.side)?,
            count: u8::try_from(e.count).map_err(|_| {
                invalid(
                    "event.timed_out.count",
                    format!(
                        "{} is more timeouts than a game can have (at most 255)",
                        e.count
                    ),
                )
            })?,
        },
        E::DrawOffered(e) => ViewEvent::DrawOffered {
            side: side("event.draw_offered.side", e.side)?,
        },
        E::DrawDeclined(e) => ViewEvent::DrawDeclined {
            side: side("event.draw_declined.side", e.side)?,
        },
        E::DrawLapsed(e) => ViewEvent::DrawLapsed {
            side: side("event.draw_lapsed.side", e.side)?,
        },
        E::Resigned(e) => ViewEvent::Resigned {
            side: side("event.resigned.side", e.side)?,
        },
        E::SeatLost(e) => ViewEvent::SeatLost {
            side: side("event.seat_lost.side", e.side)?,
        },
        E::Ended(e) => ViewEvent::Ended {
            outcome: outcome_from_proto("event.ended.outcome", e.outcome.as_ref())?,
            pieces: view_pieces_at(rules, "event.ended.pieces", &e.pieces)?,
            reveal: e
                .reveal
                .as_ref()
                .map(|r| reveal_from_proto(rules, "event.ended.reveal", r))
                .transpose()?,
        },
    })
}

/// Reads a game's view as its viewer was shown it ([`game_view`]'s inverse; what the session
/// fills in beside the engine's view, the players and their presence and clocks, is not part of
/// it). With [`view_event_from_proto`] and `GameView::apply`, a client follows the game from
/// the events after it.
pub fn game_view_from_proto(view: &pb::GameView) -> Result<GameView, FieldError> {
    let rules = rules_from_proto("game.rules", &view.rules)?;
    let count = |field: &str, value: u32| {
        u8::try_from(value).map_err(|_| invalid(field, format!("{value} is more than 255")))
    };
    let phase = phase_from_proto("game.phase", view.phase)?;
    Ok(GameView {
        viewer: viewer_from_proto("game.viewer", view.viewer)?,
        rules,
        phase,
        first_mover: side_from_proto("game.first_mover", view.first_mover)?,
        to_move: match phase {
            Phase::Play => Some(side_from_proto("game.to_move", view.to_move)?),
            _ => None,
        },
        plies: view.plies,
        plies_without_combat: u16::try_from(view.plies_without_combat)
            .map_err(|_| invalid("game.plies_without_combat", "is more than a game can have"))?,
        timeouts: [
            count("game.south_timeouts", view.south_timeouts)?,
            count("game.north_timeouts", view.north_timeouts)?,
        ],
        draw_offer: optional_side("game.draw_offer", view.draw_offer)?,
        confirmed: [view.south_confirmed, view.north_confirmed],
        own_deployment: view
            .own_deployment
            .as_ref()
            .map(|d| deployment_at(&rules, "game.own_deployment", Some(d)))
            .transpose()?,
        pieces: view_pieces_at(&rules, "game.pieces", &view.pieces)?,
        outcome: view
            .outcome
            .as_ref()
            .map(|o| outcome_from_proto("game.outcome", Some(o)))
            .transpose()?,
        reveal: view
            .reveal
            .as_ref()
            .map(|r| reveal_from_proto(&rules, "game.reveal", r))
            .transpose()?,
    })
}

/// A side that may be unspecified (nobody).
fn optional_side(field: &str, value: i32) -> Result<Option<Side>, FieldError> {
    if value == pb::Side::Unspecified as i32 {
        Ok(None)
    } else {
        side_from_proto(field, value).map(Some)
    }
}

/// A kind where the viewer may know it: `None` for an empty code.
fn known_kind(rules: &Rules, field: &str, code: &str) -> Result<Option<PieceKind>, FieldError> {
    if code.is_empty() {
        Ok(None)
    } else {
        kind_from_proto(rules, field, code).map(Some)
    }
}

/// Reads what an ended game reveals.
fn reveal_from_proto(
    rules: &Rules,
    field: &str,
    reveal: &pb::EndReveal,
) -> Result<Reveal, FieldError> {
    if reveal.deployments.len() > 2 {
        return Err(invalid(
            format!("{field}.deployments"),
            "holds more than the two sides' deployments",
        ));
    }
    Ok(Reveal {
        deployments: reveal
            .deployments
            .iter()
            .enumerate()
            .map(|(i, d)| deployment_at(rules, &format!("{field}.deployments[{i}]"), Some(d)))
            .collect::<Result<_, _>>()?,
        pieces: view_pieces_at(
            rules,
            &format!("{field}.starting_pieces"),
            &reveal.starting_pieces,
        )?,
    })
}

/// The pieces of a full-information event: every kind required.
fn full_pieces(field: &str, pieces: &[ViewPiece]) -> Result<Vec<(Node, Piece)>, FieldError> {
    pieces
        .iter()
        .enumerate()
        .map(|(i, p)| {
            Ok((
                p.node,
                Piece {
                    side: p.side,
                    kind: p.kind.ok_or_else(|| {
                        invalid(
                            format!("{field}[{i}].piece"),
                            "is required (the full-information form names every kind)",
                        )
                    })?,
                    id: p.id,
                },
            ))
        })
        .collect()
}

/// Reads a piece id (a `uint32` on the wire, a byte in the engine).
fn piece_id_from_proto(field: &str, id: u32) -> Result<PieceId, FieldError> {
    u8::try_from(id)
        .map(PieceId)
        .map_err(|_| invalid(field, format!("{id} is not a piece id (0..=255)")))
}

/// Reads the deployment in field `field`, with its own side.
fn deployment_at(
    rules: &Rules,
    field: &str,
    deployment: Option<&pb::Deployment>,
) -> Result<Deployment, FieldError> {
    let deployment = deployment.ok_or_else(|| invalid(field, "is required"))?;
    let side = side_from_proto(&format!("{field}.side"), deployment.side)?;
    placements_at(rules, &format!("{field}."), side, &deployment.placements)
}

/// Reads a list of pieces as a viewer sees them (a kind where its code is not empty).
fn view_pieces_at(
    rules: &Rules,
    field: &str,
    pieces: &[pb::VisiblePiece],
) -> Result<Vec<ViewPiece>, FieldError> {
    let max = 2 * rules.pieces_per_side();
    if pieces.len() > max {
        return Err(invalid(
            field,
            format!("{} pieces, more than the game's {max}", pieces.len()),
        ));
    }
    pieces
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let at = |part: &str| format!("{field}[{i}].{part}");
            Ok(ViewPiece {
                node: square_from_proto(rules, "", &p.square)
                    .map_err(|e| e.in_field(|| at("square")))?,
                side: side_from_proto("", p.side).map_err(|e| e.in_field(|| at("side")))?,
                kind: known_kind(rules, "", &p.piece).map_err(|e| e.in_field(|| at("piece")))?,
                id: piece_id_from_proto("", p.id).map_err(|e| e.in_field(|| at("id")))?,
            })
        })
        .collect()
}

/// Reads a flag reveal: where the side's flags stand and their ids. Their code is derived (the
/// flag's) and not read.
fn flag_reveal_from_proto(
    rules: &Rules,
    field: &str,
    reveal: &pb::FlagReveal,
) -> Result<FlagReveal, FieldError> {
    let side = side_from_proto(&format!("{field}.side"), reveal.side)?;
    if reveal.flags.len() > rules.pieces_per_side() {
        return Err(invalid(
            format!("{field}.flags"),
            format!("{} flags, more pieces than a side has", reveal.flags.len()),
        ));
    }
    let flags = reveal
        .flags
        .iter()
        .enumerate()
        .map(|(i, flag)| {
            let at = |part: &str| format!("{field}.flags[{i}].{part}");
            if side_from_proto("", flag.side).map_err(|e| e.in_field(|| at("side")))? != side {
                return Err(invalid(
                    at("side"),
                    format!("must be the revealed side, {side}"),
                ));
            }
            Ok((
                square_from_proto(rules, "", &flag.square)
                    .map_err(|e| e.in_field(|| at("square")))?,
                piece_id_from_proto("", flag.id).map_err(|e| e.in_field(|| at("id")))?,
            ))
        })
        .collect::<Result<_, _>>()?;
    Ok(FlagReveal { side, flags })
}

/// The engine end reason of a proto `EndReason` value; `None` for `END_REASON_UNSPECIFIED` and
/// for values this build does not know.
pub fn end_reason_from_proto(reason: i32) -> Option<EndReason> {
    Some(match pb::EndReason::try_from(reason).ok()? {
        pb::EndReason::FlagCaptured => EndReason::FlagCaptured,
        pb::EndReason::HqEntered => EndReason::HqEntered,
        pb::EndReason::NoLegalMoves => EndReason::NoLegalMoves,
        pb::EndReason::NoCombatLimit => EndReason::NoCombatLimit,
        pb::EndReason::AgreedDraw => EndReason::AgreedDraw,
        pb::EndReason::Resigned => EndReason::Resigned,
        pb::EndReason::Timeouts => EndReason::Timeouts,
        pb::EndReason::Disconnected => EndReason::Disconnected,
        pb::EndReason::SeatLost => EndReason::SeatLost,
        pb::EndReason::Aborted => EndReason::Aborted,
        pb::EndReason::Unspecified => return None,
    })
}

/// Reads an outcome: a winner (`SIDE_UNSPECIFIED` for none) and a reason.
fn outcome_from_proto(field: &str, outcome: Option<&pb::Outcome>) -> Result<Outcome, FieldError> {
    let outcome = outcome.ok_or_else(|| invalid(field, "is required"))?;
    let winner = match pb::Side::try_from(outcome.winner) {
        Ok(pb::Side::Unspecified) => None,
        Ok(pb::Side::South) => Some(Side::South),
        Ok(pb::Side::North) => Some(Side::North),
        Err(_) => {
            return Err(invalid(
                format!("{field}.winner"),
                "must be SIDE_SOUTH, SIDE_NORTH or SIDE_UNSPECIFIED (nobody won)",
            ));
        }
    };
    let reason = end_reason_from_proto(outcome.reason).ok_or_else(|| {
        invalid(
            format!("{field}.reason"),
            format!("{} is not a known end reason", outcome.reason),
        )
    })?;
    Ok(Outcome { winner, reason })
}

/// The proto form of a lifecycle fact (`WatchLifecycle`): the typed body, and the same data as
/// the CloudEvents JSON a webhook carries, so both routes say one thing; with `position`, the
/// reader's place in the feed just after the fact, in its text form.
pub fn lifecycle_fact_to_proto(
    fact: &hidden_front_lifecycle::Fact,
    position: &hidden_front_lifecycle::FeedPosition,
) -> pb::LifecycleFact {
    use hidden_front_lifecycle::FactBody;
    use pb::lifecycle_fact::Body;
    let body = match &fact.body {
        FactBody::GameCreated {
            rules,
            time_control,
            south_player,
            north_player,
        } => Body::GameCreated(pb::GameCreatedFact {
            rules: rules.clone(),
            time_control: time_control.clone(),
            south_player: south_player.clone(),
            north_player: north_player.clone(),
        }),
        FactBody::SeatsFilled {
            south_player,
            north_player,
        } => Body::SeatsFilled(pb::SeatsFilledFact {
            south_player: south_player.clone(),
            north_player: north_player.clone(),
        }),
        FactBody::PlayStarted { first_mover } => Body::PlayStarted(pb::PlayStartedFact {
            first_mover: side_to_proto(*first_mover) as i32,
        }),
        FactBody::GameEnded {
            winner,
            winner_player,
            reason,
            plies,
            south_player,
            north_player,
        } => Body::GameEnded(pb::GameEndedFact {
            winner: opt_side_to_proto(*winner),
            winner_player: winner_player.clone().unwrap_or_default(),
            reason: end_reason_to_proto(*reason) as i32,
            plies: *plies,
            south_player: south_player.clone(),
            north_player: north_player.clone(),
            duration_millis: u64::try_from(fact.game_age().as_millis()).unwrap_or(u64::MAX),
        }),
        FactBody::SeatLost { side, player } => Body::SeatLost(pb::SeatLostFact {
            side: side_to_proto(*side) as i32,
            player: player.clone(),
        }),
        FactBody::RatingChanged { rules, changes } => Body::RatingChanged(pb::RatingChangedFact {
            rules: rules.clone(),
            changes: changes
                .iter()
                .map(|change| pb::RatingChange {
                    player: change.player.clone(),
                    old_rating: change.old_rating,
                    new_rating: change.new_rating,
                })
                .collect(),
        }),
        FactBody::GameAborted { operator, reason } => Body::GameAborted(pb::GameAbortedFact {
            operator: operator.clone(),
            reason: reason.clone(),
        }),
        FactBody::TournamentCreated {
            tournament_id,
            organiser,
            format,
            rules,
            time_control,
            rated,
            rounds,
            duration_ms,
            starts_at_ms,
            open_to_players,
            entrants,
        } => Body::TournamentCreated(pb::TournamentCreatedFact {
            tournament_id: tournament_id.clone(),
            organiser: organiser.clone(),
            format: format.clone(),
            rules: rules.clone(),
            time_control: time_control.clone(),
            rated: *rated,
            rounds: *rounds,
            duration_millis: *duration_ms,
            starts_at_unix_millis: *starts_at_ms,
            open_to_players: *open_to_players,
            entrants: entrants.clone(),
        }),
        FactBody::TournamentStarted {
            tournament_id,
            entrants,
        } => Body::TournamentStarted(pb::TournamentStartedFact {
            tournament_id: tournament_id.clone(),
            entrants: entrants.clone(),
        }),
        FactBody::TournamentRoundStarted {
            tournament_id,
            round,
            rounds,
            pairs,
            bye,
            games_start_at_ms,
        } => Body::TournamentRoundStarted(pb::TournamentRoundStartedFact {
            tournament_id: tournament_id.clone(),
            round: *round,
            rounds: *rounds,
            pairs: pairs
                .iter()
                .map(|pair| pb::TournamentPairFact {
                    south_player: pair.south_player.clone(),
                    north_player: pair.north_player.clone(),
                })
                .collect(),
            bye: bye.clone().unwrap_or_default(),
            games_start_at_unix_millis: *games_start_at_ms,
        }),
        FactBody::TournamentFinished {
            tournament_id,
            rounds,
            standings,
        } => Body::TournamentFinished(pb::TournamentFinishedFact {
            tournament_id: tournament_id.clone(),
            rounds: *rounds,
            standings: standings
                .iter()
                .map(|line| pb::TournamentStandingFact {
                    place: line.place,
                    player: line.player.clone(),
                    score: line.score,
                    buchholz: line.buchholz,
                    sonneborn_berger: line.sonneborn_berger,
                    rating: line.rating,
                })
                .collect(),
        }),
    };
    let occurred_at = fact
        .occurred_at
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    pb::LifecycleFact {
        cursor: fact.position,
        id: fact.id.to_string(),
        r#type: fact.body.kind().event_type().to_owned(),
        game_id: match fact.body.tournament_id() {
            Some(_) => String::new(),
            None => fact.game_id.to_string(),
        },
        tournament_id: fact.body.tournament_id().unwrap_or_default().to_owned(),
        subject: fact.subject(),
        occurred_at_unix_millis: u64::try_from(occurred_at.as_millis()).unwrap_or(u64::MAX),
        data_json: hidden_front_lifecycle::cloudevents::data(fact).to_string(),
        position: position.to_string(),
        body: Some(body),
    }
}
