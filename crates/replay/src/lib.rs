//! Replays: a finished game as a text a person can read and the project can parse and re-judge.
//!
//! A [`Replay`] is a finished game's full-information event log (the engine's [`Event`]s with
//! their sequence numbers and, where the producer knows them, their server times) plus what the
//! log itself does not hold: the players, the time control, the game's id. Every other header
//! of the text (rule set, result, plies, both deployments, dates, clock readings) is derived
//! from the events, written once by the writer and checked against them by the parser.
//!
//! - [`Replay::from_events`]: build one from a producer's log (the CLI's `replay export`, later
//!   the gateway's export and the bulk export); refuses a game that has not ended.
//! - [`Replay::to_text`] / [`Replay::parse`]: the documented text form (`docs/replay-format.md`).
//! - [`verify`] / [`verify_text`]: re-judge the game with the engine, event by event.
//!
//! Like the rules crate, this one does no I/O and knows no transport or storage: producers
//! convert their own records into [`Entry`]s.

mod parse;
mod text;
mod verify;

pub use parse::LineError;
pub use text::outcome_text;
pub use verify::{Verified, VerifyError, verify, verify_text};

use hidden_front_rules::{Event, Outcome, Rules, Side};
use std::fmt;
use std::sync::LazyLock;
use thiserror::Error;

/// The first line of every replay text: the format's name and version.
pub const FORMAT_LINE: &str = "hidden-front-replay 1";

/// A server time, to the millisecond (what the session's store keeps). Shown in RFC 3339, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    unix_millis: i64,
}

impl Timestamp {
    /// The time `unix_millis` milliseconds after the Unix epoch.
    pub const fn from_unix_millis(unix_millis: i64) -> Timestamp {
        Timestamp { unix_millis }
    }

    /// Milliseconds since the Unix epoch.
    pub const fn unix_millis(self) -> i64 {
        self.unix_millis
    }
}

/// The game's time control as the session knew it (the replay only records it; the engine does
/// not read clocks).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TimeControl {
    /// `online`, `relaxed`, `custom` (or empty when the producer had no name).
    pub name: String,
    /// Time for the deployment phase.
    pub deployment_seconds: u32,
    /// Time for each move.
    pub move_seconds: u32,
    /// Time a disconnected player has to come back.
    pub reconnect_seconds: u32,
}

/// What the event log does not say about a game: who played it and under which clock.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Header {
    /// The game's id, when the producer has one.
    pub game_id: Option<String>,
    /// The player id in each seat, south first (indexed by [`Side::index`]).
    pub players: [String; 2],
    /// The time control, when the producer knows it.
    pub time_control: Option<TimeControl>,
}

/// One event of the log, as the session recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its position in the log, from 1.
    pub seq: u64,
    /// When the session committed it, if the producer knows.
    pub at: Option<Timestamp>,
    /// The event with full information.
    pub event: Event,
}

/// A finished game's replay: a header and a log that starts with `Created`, runs without gaps
/// and ends with `Ended` (both constructors check it, so the accessors cannot fail).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    header: Header,
    entries: Vec<Entry>,
}

/// Why a log cannot be a replay.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ExportError {
    /// The log has no events at all.
    #[error("the game's log is empty")]
    Empty,
    /// The game is still on: only a finished game has a replay.
    #[error("the game has not ended (its log stops at event {last_seq} without an end)")]
    NotEnded {
        /// The last event's sequence number.
        last_seq: u64,
    },
    /// The log is not a log the session could have written.
    #[error("event {seq}: {reason}")]
    Malformed {
        /// The offending event's sequence number (as it should have been, for a gap).
        seq: u64,
        /// What is wrong.
        reason: String,
    },
}

impl Replay {
    /// A replay of a finished game from its whole log, checked for shape: the first event is
    /// `Created` and no other is, the sequence numbers run 1, 2, 3 ..., the last event and only
    /// it is `Ended`. The game's rules are not judged here ([`verify`] does that).
    pub fn from_events(header: Header, entries: Vec<Entry>) -> Result<Replay, ExportError> {
        let Some(last) = entries.last() else {
            return Err(ExportError::Empty);
        };
        for (index, entry) in entries.iter().enumerate() {
            let want = index as u64 + 1;
            let bad = |reason: &str| ExportError::Malformed {
                seq: want,
                reason: reason.to_string(),
            };
            if entry.seq != want {
                return Err(bad(&format!(
                    "has sequence number {}; the log runs 1, 2, 3 ... without gaps",
                    entry.seq
                )));
            }
            match (&entry.event, index) {
                (Event::Created { .. }, 0) => {}
                (Event::Created { .. }, _) => return Err(bad("a second created event")),
                (_, 0) => return Err(bad("a log starts with a created event")),
                (Event::Ended { .. }, i) if i + 1 < entries.len() => {
                    return Err(bad("the game ends here, yet more events follow"));
                }
                _ => {}
            }
        }
        if !matches!(last.event, Event::Ended { .. }) {
            return Err(ExportError::NotEnded { last_seq: last.seq });
        }
        Ok(Replay { header, entries })
    }

    /// The header: game id, players, time control.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The log, `Created` first and `Ended` last.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The rule set (from the `Created` event).
    pub fn rules(&self) -> Rules {
        match &self.entries[0].event {
            Event::Created { rules, .. } => *rules,
            _ => unreachable!("a replay starts with a created event (checked on construction)"),
        }
    }

    /// Who moved first (from the `Created` event).
    pub fn first_mover(&self) -> Side {
        match &self.entries[0].event {
            Event::Created { first_mover, .. } => *first_mover,
            _ => unreachable!("a replay starts with a created event (checked on construction)"),
        }
    }

    /// The result (from the `Ended` event).
    pub fn outcome(&self) -> Outcome {
        match &self.entries[self.entries.len() - 1].event {
            Event::Ended { outcome, .. } => *outcome,
            _ => unreachable!("a replay ends with an end event (checked on construction)"),
        }
    }

    /// Plies played: moves and timeouts.
    pub fn plies(&self) -> u32 {
        self.entries
            .iter()
            .filter(|e| matches!(e.event, Event::Moved { .. } | Event::TimedOut { .. }))
            .count() as u32
    }

    /// The documented text form (`docs/replay-format.md`).
    pub fn to_text(&self) -> String {
        text::write(self)
    }

    /// Reads the text form: syntax, sequence numbers, and every derived header and clock reading
    /// checked against the events. It does not judge the game; [`verify_text`] does both.
    pub fn parse(text: &str) -> Result<Replay, LineError> {
        parse::parse(text).map(|parsed| parsed.replay)
    }
}

/// How the text writes a time: RFC 3339 in UTC, always with milliseconds, so columns line up.
static TIME_FORMAT: LazyLock<Vec<time::format_description::BorrowedFormatItem<'static>>> =
    LazyLock::new(|| {
        time::format_description::parse_borrowed::<2>(
            "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z",
        )
        .expect("a valid format description")
    });

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = i128::from(self.unix_millis) * 1_000_000;
        let formatted = time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
            .ok()
            .and_then(|t| t.format(&*TIME_FORMAT).ok());
        match formatted {
            Some(text) => f.write_str(&text),
            // Outside years 0..=9999 RFC 3339 has no form; no real server time is.
            None => write!(f, "{}ms", self.unix_millis),
        }
    }
}

impl std::str::FromStr for Timestamp {
    type Err = String;

    /// An RFC 3339 time with at most millisecond precision.
    fn from_str(text: &str) -> Result<Timestamp, String> {
        let parsed =
            time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
                .map_err(|e| format!("{text:?} is not an RFC 3339 time ({e})"))?;
        let nanos = parsed.unix_timestamp_nanos();
        if nanos % 1_000_000 != 0 {
            return Err(format!(
                "{text:?} is more precise than a millisecond (the server records milliseconds)"
            ));
        }
        i64::try_from(nanos / 1_000_000)
            .map(Timestamp::from_unix_millis)
            .map_err(|_| format!("{text:?} is out of range"))
    }
}

#[cfg(test)]
mod tests {
    use super::Timestamp;

    #[test]
    fn times_are_written_in_utc_with_milliseconds_and_read_in_any_offset() {
        let t: Timestamp = "2025-12-01T23:45:08.6+09:00".parse().expect("RFC 3339");
        assert_eq!(t.to_string(), "2025-12-01T14:45:08.600Z");
        assert_eq!(t.to_string().parse::<Timestamp>(), Ok(t));
        assert_eq!(
            Timestamp::from_unix_millis(0).to_string(),
            "1970-01-01T00:00:00.000Z"
        );
        assert!("2025-12-01T14:45:08.6001Z".parse::<Timestamp>().is_err());
        assert!("2025-13-01T14:45:08Z".parse::<Timestamp>().is_err());
    }
}
