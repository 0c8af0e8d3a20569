//! Re-judging a replay with the engine. For each event that starts something (a move, a
//! confirmation, a draw offer ...) the verifier asks the engine to judge the command that would
//! have caused it, on the game as rebuilt so far, and then requires the file's events to be
//! exactly the ones the engine answers, in order: the fight's outcome, the timeout count, the
//! lapse of an offer, the end and its reason, the final board. So a file that changes a single
//! fact fails at the first line that disagrees, with what the engine says instead.
//!
//! Chance is the one thing the engine cannot re-derive: the piece ids drawn when play starts.
//! Those are checked to be a shuffle of `0..n` over exactly the confirmed deployments, and taken
//! from the file (the events after them must then use them consistently).

use crate::parse::{self, LineError};
use crate::text;
use crate::{Entry, Replay};
use hidden_front_rules::{
    Command, EndReason, Event, Game, GameRng, Outcome, Phase, Piece, PieceId, Side,
};
use std::collections::{HashMap, VecDeque};
use thiserror::Error;

/// The longest part of an engine's refusal an error repeats (a deployment's problems can be
/// many).
const ENGINE_MESSAGE_CHARS: usize = 200;

/// What a replay that re-judges cleanly showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    /// Events checked.
    pub events: usize,
    /// Plies played.
    pub plies: u32,
    /// The result, as the engine reached it.
    pub outcome: Outcome,
}

impl std::fmt::Display for Verified {
    /// `130 events, 57 plies, south-wins flag_captured`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} events, {} plies, {}",
            self.events,
            self.plies,
            text::outcome_text(self.outcome)
        )
    }
}

/// The first event of a replay that does not re-judge: its index in the log (from 0) and what
/// the engine says.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("event {seq}: {message}")]
pub struct VerifyError {
    /// The event's index in [`Replay::entries`].
    pub index: usize,
    /// Its sequence number.
    pub seq: u64,
    /// What is wrong, for a person.
    pub message: String,
}

/// Parses a replay text and re-judges it ([`verify`]); any problem names its line.
pub fn verify_text(text: &str) -> Result<Verified, LineError> {
    let parsed = parse::parse(text)?;
    verify(&parsed.replay).map_err(|e| LineError {
        line: parsed.lines.get(e.index).copied().unwrap_or(0),
        message: e.message,
    })
}

/// Re-judges a replay with the engine: every event, the piece ids, and the result.
pub fn verify(replay: &Replay) -> Result<Verified, VerifyError> {
    let entries = replay.entries();
    let rules = replay.rules();
    let err = |index: usize, message: String| VerifyError {
        index,
        seq: entries[index].seq,
        message,
    };
    let mut game = Game::replay([&entries[0].event]).map_err(|e| err(0, e.to_string()))?;
    // Only the ids drawn at the start need chance, and those come from the file.
    let mut rng = GameRng::from_seed(0);
    let mut expected: VecDeque<Event> = VecDeque::new();
    let mut ids: HashMap<PieceId, PieceId> = HashMap::new();
    let mut last_at = entries[0].at;
    for (index, entry) in entries.iter().enumerate().skip(1) {
        if let (Some(before), Some(at)) = (last_at, entry.at)
            && at < before
        {
            return Err(err(
                index,
                format!("recorded at {at}, before the event ahead of it ({before})"),
            ));
        }
        last_at = entry.at.or(last_at);
        if expected.is_empty() {
            let command = command_for(&game, &entries[index..]).map_err(|m| err(index, m))?;
            let mut judge = game.clone();
            let events = judge.handle(&command, &mut rng).map_err(|e| {
                err(
                    index,
                    format!(
                        "the engine refuses this ({}); the game here: {}",
                        text::shorten(&e.to_string(), ENGINE_MESSAGE_CHARS),
                        state(&game)
                    ),
                )
            })?;
            expected = events.into();
            ids.clear();
        }
        let Some(want) = expected.pop_front() else {
            return Err(err(index, "the engine expects nothing here".into()));
        };
        let want = relabelled(want, &ids);
        let ply = game.plies() + u32::from(text::is_ply(&want));
        match (&want, &entry.event) {
            (Event::PlayStarted { pieces: want }, Event::PlayStarted { pieces: got }) => {
                ids = start_ids(want, got).map_err(|m| err(index, m))?;
            }
            (want, got) if want != got => {
                let (want, got) = difference(
                    &text::event_body(&rules, want, ply),
                    &text::event_body(&rules, got, ply),
                );
                return Err(err(
                    index,
                    format!("the engine's event here is `{want}`; the file has `{got}`"),
                ));
            }
            _ => {}
        }
        game.apply(&entry.event)
            .map_err(|e| err(index, e.to_string()))?;
    }
    let last = entries.len() - 1;
    if let Some(next) = expected.front() {
        return Err(err(
            last,
            format!(
                "the engine's next event is `{}`, but the file ends",
                text::event_body(&rules, next, game.plies() + 1)
            ),
        ));
    }
    let Some(outcome) = game.outcome() else {
        return Err(err(last, "the game has not ended".into()));
    };
    Ok(Verified {
        events: entries.len(),
        plies: game.plies(),
        outcome,
    })
}

/// Two event bodies as an error shows them: whole when short, else their first words and the
/// words from the first difference on, so a long board still makes a short message.
fn difference(want: &str, got: &str) -> (String, String) {
    const WHOLE: usize = 120;
    const HEAD: usize = 3;
    const AROUND: usize = 4;
    if want.len() <= WHOLE && got.len() <= WHOLE {
        return (want.to_string(), got.to_string());
    }
    let (w, g): (Vec<&str>, Vec<&str>) = (
        want.split_whitespace().collect(),
        got.split_whitespace().collect(),
    );
    let from = w.iter().zip(&g).take_while(|(a, b)| a == b).count();
    let shown = |words: &[&str]| {
        let mut parts: Vec<&str> = words.iter().take(HEAD).copied().collect();
        let start = from.max(HEAD);
        if start > HEAD {
            parts.push("...");
        }
        let end = (start + AROUND).min(words.len());
        parts.extend(words.get(start..end).unwrap_or_default());
        if end < words.len() {
            parts.push("...");
        }
        parts.join(" ")
    };
    (shown(&w), shown(&g))
}

/// The command that would have caused `rest[0]` in `game`, read off the event (and, for a lost
/// seat, the lost seats after it: one deadline loses both at once).
fn command_for(game: &Game, rest: &[Entry]) -> Result<Command, String> {
    let follows = |what: &str| {
        Err(format!(
            "{what} follows from the event before it, and nothing before it causes one here"
        ))
    };
    Ok(match &rest[0].event {
        Event::Created { .. } => return Err("a second created event".into()),
        Event::DeploymentDrafted { deployment } => Command::SetDeployment {
            deployment: deployment.clone(),
        },
        Event::DeploymentConfirmed {
            side, by_deadline, ..
        } => {
            if *by_deadline {
                Command::DeploymentDeadline {
                    present: [true, true],
                }
            } else {
                Command::Confirm { side: *side }
            }
        }
        Event::SeatLost { .. } => {
            let mut present = [true, true];
            for entry in rest {
                match entry.event {
                    Event::SeatLost { side } => present[side.index()] = false,
                    _ => break,
                }
            }
            Command::DeploymentDeadline { present }
        }
        Event::PlayStarted { .. } => return follows("the start of play"),
        Event::DrawLapsed { .. } => return follows("a lapsed draw offer"),
        Event::Moved { mv, piece, .. } => Command::Move {
            side: piece.side,
            mv: *mv,
        },
        Event::TimedOut { side, .. } => Command::Timeout { side: *side },
        Event::DrawOffered { side } => Command::OfferDraw { side: *side },
        Event::DrawDeclined { side } => Command::AnswerDraw {
            side: *side,
            accept: false,
        },
        Event::Resigned { side } => Command::Resign { side: *side },
        Event::Ended { outcome, .. } => match (outcome.reason, outcome.winner) {
            (EndReason::AgreedDraw, _) => match game.draw_offer() {
                Some(offerer) => Command::AnswerDraw {
                    side: offerer.other(),
                    accept: true,
                },
                None => return Err("a draw agreed while no draw offer is pending".into()),
            },
            (EndReason::Disconnected, Some(winner)) => Command::Disconnected {
                side: winner.other(),
            },
            (EndReason::Aborted, None) => Command::Abort,
            (reason, _) => {
                return Err(format!(
                    "an end by {} follows from the event that causes it, and nothing before \
                     it does here",
                    reason.name()
                ));
            }
        },
    })
}

/// The ids the file drew at the start, checked against the engine's start (same pieces, in the
/// same order, on the same nodes) and for being a shuffle of `0..n`: the map from the engine's
/// ids to the file's.
fn start_ids(
    want: &[(hidden_front_rules::Node, Piece)],
    got: &[(hidden_front_rules::Node, Piece)],
) -> Result<HashMap<PieceId, PieceId>, String> {
    if want.len() != got.len() {
        return Err(format!(
            "play starts with {} pieces, but the confirmed deployments hold {}",
            got.len(),
            want.len()
        ));
    }
    let mut seen = vec![false; got.len()];
    let mut map = HashMap::new();
    for ((wn, wp), (gn, gp)) in want.iter().zip(got) {
        if (wn, wp.side, wp.kind) != (gn, gp.side, gp.kind) {
            return Err(
                "the pieces at the start are not the confirmed deployments' pieces, in their \
                 order (south's placements, then north's)"
                    .into(),
            );
        }
        match seen.get_mut(usize::from(gp.id.0)) {
            Some(slot) if !*slot => *slot = true,
            _ => {
                return Err(format!(
                    "piece id {} at the start is repeated or outside 0..{}",
                    gp.id.0,
                    got.len()
                ));
            }
        }
        map.insert(wp.id, gp.id);
    }
    Ok(map)
}

/// The engine's event with the file's piece ids in place of the ones its own draw gave (only an
/// end right at the start, in the same answer as the start, carries them).
fn relabelled(event: Event, ids: &HashMap<PieceId, PieceId>) -> Event {
    match event {
        Event::Ended { outcome, pieces } if !ids.is_empty() => Event::Ended {
            outcome,
            pieces: pieces
                .into_iter()
                .map(|(node, piece)| {
                    let id = ids.get(&piece.id).copied().unwrap_or(piece.id);
                    (node, Piece { id, ..piece })
                })
                .collect(),
        },
        other => other,
    }
}

/// A short account of the game's state for a refusal.
fn state(game: &Game) -> String {
    match game.phase() {
        Phase::Deployment => {
            let confirmed: Vec<&str> = Side::BOTH
                .into_iter()
                .filter(|s| game.confirmed(*s))
                .map(Side::name)
                .collect();
            let confirmed = if confirmed.is_empty() {
                "none".to_string()
            } else {
                confirmed.join(" ")
            };
            format!("deployment, confirmed: {confirmed}")
        }
        Phase::Play => format!(
            "play, ply {} done, {} to move",
            game.plies(),
            game.to_move()
        ),
        Phase::Ended => "ended".into(),
    }
}
