//! The writer of the text form, and every piece of it the parser checks against: derived headers,
//! clock readings, the body of one event line. Each is written here once; the parser reads the
//! tokens back and compares what it read with what these functions give.

use crate::{Entry, FORMAT_LINE, Replay, TimeControl};
use hidden_front_rules::{
    Combat, Deployment, EndReason, Event, FlagReveal, Node, Outcome, Piece, Rules, Side,
};
use std::fmt::Write as _;

/// Header names, in the order they are written.
pub(crate) const GAME: &str = "Game";
pub(crate) const RULES: &str = "Rules";
pub(crate) const SOUTH: &str = "South";
pub(crate) const NORTH: &str = "North";
pub(crate) const FIRST_MOVER: &str = "First-Mover";
pub(crate) const RESULT: &str = "Result";
pub(crate) const PLIES: &str = "Plies";
pub(crate) const TIME_CONTROL: &str = "Time-Control";
pub(crate) const CREATED: &str = "Created";
pub(crate) const ENDED: &str = "Ended";
pub(crate) const SOUTH_DEPLOYMENT: &str = "South-Deployment";
pub(crate) const NORTH_DEPLOYMENT: &str = "North-Deployment";

/// Every end reason, for reading their names back: the engine's own list.
pub(crate) const END_REASONS: [EndReason; 10] = EndReason::ALL;

/// The whole text.
pub(crate) fn write(replay: &Replay) -> String {
    let mut out = String::new();
    out.push_str(FORMAT_LINE);
    out.push('\n');
    for (name, value) in headers(replay) {
        let _ = writeln!(out, "{name}: {value}");
    }
    out.push('\n');
    let rules = replay.rules();
    let clocks = clock_readings(replay);
    let mut ply = 0;
    for (entry, clock) in replay.entries().iter().zip(clocks) {
        if is_ply(&entry.event) {
            ply += 1;
        }
        out.push_str(&event_line(&rules, entry, ply, clock));
        out.push('\n');
    }
    out
}

/// Every header line's name and value, in order: the stored ones from the header, the derived
/// ones from the events. A header without a value (no game id, no time control, no server
/// times, a side that never confirmed) is not written.
pub(crate) fn headers(replay: &Replay) -> Vec<(&'static str, String)> {
    let header = replay.header();
    let rules = replay.rules();
    let entries = replay.entries();
    let mut lines = Vec::new();
    if let Some(id) = &header.game_id {
        lines.push((GAME, id.clone()));
    }
    lines.push((RULES, rules.name()));
    lines.push((SOUTH, header.players[0].clone()));
    lines.push((NORTH, header.players[1].clone()));
    lines.push((FIRST_MOVER, replay.first_mover().name().to_string()));
    lines.push((RESULT, outcome_text(replay.outcome())));
    lines.push((PLIES, replay.plies().to_string()));
    if let Some(tc) = &header.time_control {
        lines.push((TIME_CONTROL, time_control_text(tc)));
    }
    if let Some(at) = entries[0].at {
        lines.push((CREATED, at.to_string()));
    }
    if let Some(at) = entries[entries.len() - 1].at {
        lines.push((ENDED, at.to_string()));
    }
    for (name, side) in [
        (SOUTH_DEPLOYMENT, Side::South),
        (NORTH_DEPLOYMENT, Side::North),
    ] {
        let confirmed = entries.iter().find_map(|e| match &e.event {
            Event::DeploymentConfirmed { deployment, .. } if deployment.side == side => {
                Some(deployment)
            }
            _ => None,
        });
        if let Some(deployment) = confirmed {
            lines.push((name, placements(&rules, deployment)));
        }
    }
    lines
}

/// Whether an event is a ply (a move or a timeout).
pub(crate) fn is_ply(event: &Event) -> bool {
    matches!(event, Event::Moved { .. } | Event::TimedOut { .. })
}

/// The mover's move clock when each ply was recorded, in milliseconds left (negative when the
/// clock had run out: a timeout fires just after its deadline), for each entry: `Some` only for
/// a ply whose own time and its turn's start time (the previous ply, or play's start) are known,
/// under a time control with a move clock. Derived, never stored: the session's move deadline
/// is armed by the append that starts the turn, whose time is that event's.
pub(crate) fn clock_readings(replay: &Replay) -> Vec<Option<i64>> {
    let move_millis = replay
        .header()
        .time_control
        .as_ref()
        .map_or(0, |tc| i64::from(tc.move_seconds) * 1000);
    let mut turn_start = None;
    replay
        .entries()
        .iter()
        .map(|entry| match entry.event {
            Event::PlayStarted { .. } => {
                turn_start = entry.at;
                None
            }
            Event::Moved { .. } | Event::TimedOut { .. } => {
                let reading = match (entry.at, turn_start) {
                    (Some(at), Some(start)) if move_millis > 0 => {
                        let used = at.unix_millis().saturating_sub(start.unix_millis());
                        Some(move_millis.saturating_sub(used))
                    }
                    _ => None,
                };
                turn_start = entry.at;
                reading
            }
            _ => None,
        })
        .collect()
}

/// One event line: sequence number, server time if known, the body, the clock if known.
pub(crate) fn event_line(rules: &Rules, entry: &Entry, ply: u32, clock: Option<i64>) -> String {
    let mut line = entry.seq.to_string();
    if let Some(at) = entry.at {
        let _ = write!(line, " @{at}");
    }
    line.push(' ');
    line.push_str(&event_body(rules, &entry.event, ply));
    if let Some(millis) = clock {
        let _ = write!(line, " clock {}", seconds_text(millis));
    }
    line
}

/// An event as the text writes it, after the sequence number and time; `ply` is its ply number
/// when it is a ply. Also how errors show an event the engine expected.
pub(crate) fn event_body(rules: &Rules, event: &Event, ply: u32) -> String {
    match event {
        Event::Created { rules, first_mover } => {
            format!("created {} first {first_mover}", rules.name())
        }
        Event::DeploymentDrafted { deployment } => {
            format!(
                "draft {} {}",
                deployment.side,
                placements(rules, deployment)
            )
        }
        Event::DeploymentConfirmed {
            side,
            deployment,
            by_deadline,
        } => {
            let deadline = if *by_deadline { " by-deadline" } else { "" };
            format!("confirm {side}{deadline} {}", placements(rules, deployment))
        }
        Event::PlayStarted { pieces } => format!("start {}", board(rules, pieces)),
        Event::Moved {
            mv,
            piece,
            combat,
            flag_reveal,
        } => {
            let mut text = format!(
                "ply {ply} {} move {}-{} {}",
                piece.side,
                node(rules, mv.from),
                node(rules, mv.to),
                piece_text(rules, piece)
            );
            if let Some(combat) = combat {
                let _ = write!(text, " {}", combat_text(rules, combat));
            }
            for reveal in flag_reveal {
                let _ = write!(text, " {}", flag_text(rules, reveal));
            }
            text
        }
        Event::TimedOut { side, count } => format!("ply {ply} {side} timeout {count}"),
        Event::DrawOffered { side } => format!("draw-offer {side}"),
        Event::DrawDeclined { side } => format!("draw-decline {side}"),
        Event::DrawLapsed { side } => format!("draw-lapse {side}"),
        Event::Resigned { side } => format!("resign {side}"),
        Event::SeatLost { side } => format!("seat-lost {side}"),
        Event::Ended { outcome, pieces } => {
            let mut text = format!("end {}", outcome_text(*outcome));
            if !pieces.is_empty() {
                let _ = write!(text, " {}", board(rules, pieces));
            }
            text
        }
    }
}

/// `south-wins flag_captured`, `draw no_combat_100`: the value of the `Result` header and the
/// tail of an `end` line. The reason is the engine's wire name ([`EndReason::name`]).
pub fn outcome_text(outcome: Outcome) -> String {
    let winner = match outcome.winner {
        Some(Side::South) => "south-wins",
        Some(Side::North) => "north-wins",
        None => "draw",
    };
    format!("{winner} {}", outcome.reason.name())
}

/// `online deployment=90s move=30s reconnect=60s` (`-` for an unnamed one).
pub(crate) fn time_control_text(tc: &TimeControl) -> String {
    let name = if tc.name.is_empty() { "-" } else { &tc.name };
    format!(
        "{name} deployment={}s move={}s reconnect={}s",
        tc.deployment_seconds, tc.move_seconds, tc.reconnect_seconds
    )
}

/// Milliseconds as signed seconds with three decimals: `12.345s`, `-0.120s`.
pub(crate) fn seconds_text(millis: i64) -> String {
    let sign = if millis < 0 { "-" } else { "" };
    let abs = millis.unsigned_abs();
    format!("{sign}{}.{:03}s", abs / 1000, abs % 1000)
}

/// At most `chars` characters of `text`, with `...` when cut: every piece of input or engine
/// message an error repeats goes through it, so errors stay short.
pub(crate) fn shorten(text: &str, chars: usize) -> String {
    let mut short: String = text.chars().take(chars).collect();
    if short.len() < text.len() {
        short.push_str("...");
    }
    short
}

fn node(rules: &Rules, node: Node) -> &'static str {
    rules.topology().name(node)
}

/// `A1=M B1=F ...`: a deployment's placements in its order.
pub(crate) fn placements(rules: &Rules, deployment: &Deployment) -> String {
    let items: Vec<String> = deployment
        .placements
        .iter()
        .map(|&(n, kind)| format!("{}={}", node(rules, n), rules.code(kind)))
        .collect();
    items.join(" ")
}

/// `9#17`: a piece's code and id.
fn piece_text(rules: &Rules, piece: &Piece) -> String {
    format!("{}#{}", rules.code(piece.kind), piece.id.0)
}

/// Pieces on nodes, in their order, a side's name before each run of that side's pieces:
/// `south A1=M#3 B1=F#40 ... north A12=M#7 ...`.
fn board(rules: &Rules, pieces: &[(Node, Piece)]) -> String {
    let mut text = String::new();
    let mut side = None;
    for (n, piece) in pieces {
        if side != Some(piece.side) {
            side = Some(piece.side);
            let _ = write!(text, "{} ", piece.side);
        }
        let _ = write!(text, "{}={} ", node(rules, *n), piece_text(rules, piece));
    }
    text.pop();
    text
}

/// The fight's words, read back by the parser in the same order.
pub(crate) const SURVIVORS: [(bool, bool, &str); 4] = [
    (true, false, "attacker-wins"),
    (false, true, "defender-wins"),
    (false, false, "both-removed"),
    (true, true, "both-stay"),
];

/// `fight 4#12 attacker-wins [flag-captured]`.
fn combat_text(rules: &Rules, combat: &Combat) -> String {
    let words = SURVIVORS
        .iter()
        .find(|(a, d, _)| *a == combat.attacker_survives && *d == combat.defender_survives)
        .map_or("?", |(_, _, w)| w);
    let captured = if combat.flag_captured {
        " flag-captured"
    } else {
        ""
    };
    format!(
        "fight {} {words}{captured}",
        piece_text(rules, &combat.defender)
    )
}

/// `flag north B12#7`.
fn flag_text(rules: &Rules, reveal: &FlagReveal) -> String {
    let mut text = format!("flag {}", reveal.side);
    for (n, id) in &reveal.flags {
        let _ = write!(text, " {}#{}", node(rules, *n), id.0);
    }
    text
}
