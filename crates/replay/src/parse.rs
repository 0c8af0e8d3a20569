//! The reader of the text form. Every refusal names the line and what is wrong with it; no input
//! makes it panic. After the syntax, the derived headers and clock readings are compared with
//! what the writer ([`crate::text`]) derives from the events read.

use crate::text::{self, END_REASONS, SURVIVORS};
use crate::{Entry, ExportError, FORMAT_LINE, Header, Replay, TimeControl, Timestamp};
use hidden_front_rules::{
    Combat, Deployment, Event, FlagReveal, Move, Node, Outcome, Piece, PieceId, PieceKind, Rules,
    Side,
};
use std::collections::HashMap;
use thiserror::Error;

/// A replay text that cannot be read or does not hold together, or a game that does not replay:
/// the line (from 1) and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}: {message}")]
pub struct LineError {
    /// The line the problem is on.
    pub line: usize,
    /// What is wrong, for a person.
    pub message: String,
}

/// A parsed text and where each part of it came from, so that later checks can name lines.
pub(crate) struct Parsed {
    pub(crate) replay: Replay,
    /// The line of each entry.
    pub(crate) lines: Vec<usize>,
}

/// Headers a reader takes from the text rather than deriving from the events.
const STORED: [&str; 4] = [text::GAME, text::SOUTH, text::NORTH, text::TIME_CONTROL];

/// Every header the format knows.
const KNOWN: [&str; 12] = [
    text::GAME,
    text::RULES,
    text::SOUTH,
    text::NORTH,
    text::FIRST_MOVER,
    text::RESULT,
    text::PLIES,
    text::TIME_CONTROL,
    text::CREATED,
    text::ENDED,
    text::SOUTH_DEPLOYMENT,
    text::NORTH_DEPLOYMENT,
];

/// The longest piece of the input an error message quotes.
const QUOTE_CHARS: usize = 40;

/// Reads a whole text (see [`Replay::parse`]).
pub(crate) fn parse(input: &str) -> Result<Parsed, LineError> {
    let mut lines = input
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')));
    match lines.next() {
        Some((_, first)) if first.trim_end() == FORMAT_LINE => {}
        Some((line, first)) => {
            let message = match first.trim_end().strip_prefix("hidden-front-replay ") {
                Some(version) => format!(
                    "format version {} is not supported (this build reads {FORMAT_LINE:?})",
                    quote(version)
                ),
                None => format!(
                    "not a replay: the first line must be {FORMAT_LINE:?}, found {}",
                    quote(first)
                ),
            };
            return Err(LineError { line, message });
        }
        None => {
            return Err(LineError {
                line: 1,
                message: format!("the file is empty; a replay starts with {FORMAT_LINE:?}"),
            });
        }
    }

    let mut headers: HashMap<&'static str, (usize, &str)> = HashMap::new();
    let mut last_header_line = 1;
    for (line, content) in lines.by_ref() {
        if content.trim().is_empty() {
            break;
        }
        if is_comment(content) {
            continue;
        }
        let err = |message: String| LineError { line, message };
        let Some((name, value)) = content.split_once(':') else {
            return Err(err(format!(
                "expected a header `Name: value` (or a blank line before the events), found {}",
                quote(content)
            )));
        };
        let Some(&known) = KNOWN.iter().find(|k| **k == name) else {
            return Err(err(format!("unknown header {}", quote(name))));
        };
        let value = value.strip_prefix(' ').unwrap_or(value);
        if let Some((first, _)) = headers.insert(known, (line, value)) {
            return Err(err(format!("header {known} again (first on line {first})")));
        }
        last_header_line = line;
    }

    let mut reader = EventReader::default();
    for (line, content) in lines {
        if content.trim().is_empty() || is_comment(content) {
            continue;
        }
        reader.line(line, content)?;
    }
    let EventReader {
        entries,
        lines: entry_lines,
        clocks,
        end_line,
        ..
    } = reader;
    // Without any event line, "the end" is the file's last line.
    let end_line = if end_line == 0 {
        input.lines().count().max(1)
    } else {
        end_line
    };

    let stored = |name: &str| headers.get(name).map(|(line, value)| (*line, *value));
    let required = |name: &str| {
        stored(name).ok_or_else(|| LineError {
            line: last_header_line,
            message: format!("the header {name} is missing"),
        })
    };
    let time_control = match stored(text::TIME_CONTROL) {
        Some((line, value)) => Some(time_control(value).map_err(|message| LineError {
            line,
            message: format!("Time-Control: {message}"),
        })?),
        None => None,
    };
    let header = Header {
        game_id: stored(text::GAME).map(|(_, v)| v.to_string()),
        players: [
            required(text::SOUTH)?.1.to_string(),
            required(text::NORTH)?.1.to_string(),
        ],
        time_control,
    };
    let line_of_seq = |seq: u64| {
        usize::try_from(seq)
            .ok()
            .and_then(|s| entry_lines.get(s.wrapping_sub(1)).copied())
            .unwrap_or(end_line)
    };
    let replay = Replay::from_events(header, entries).map_err(|e| match &e {
        ExportError::Empty => LineError {
            line: end_line,
            message: "the file has no events".into(),
        },
        ExportError::NotEnded { last_seq } => LineError {
            line: line_of_seq(*last_seq),
            message: "the events stop here without an `end`: a replay is of a finished game".into(),
        },
        ExportError::Malformed { seq, reason } => LineError {
            line: line_of_seq(*seq),
            message: reason.clone(),
        },
    })?;

    // Derived headers: present exactly when the events give them a value, and equal to it.
    let derived = text::headers(&replay);
    for (name, want) in &derived {
        if STORED.contains(name) {
            continue;
        }
        match headers.get(name) {
            None => {
                return Err(LineError {
                    line: last_header_line,
                    message: format!("the header {name} is missing (the events say {want:?})"),
                });
            }
            Some((line, got)) if got != want => {
                return Err(LineError {
                    line: *line,
                    message: format!("{name} says {}, but the events say {want:?}", quote(got)),
                });
            }
            Some(_) => {}
        }
    }
    for (name, (line, _)) in &headers {
        if !STORED.contains(name) && !derived.iter().any(|(d, _)| d == name) {
            return Err(LineError {
                line: *line,
                message: format!("{name}: the events carry no value for this header"),
            });
        }
    }

    // Clock readings: exactly the ones the times and the time control give.
    let readings = text::clock_readings(&replay);
    for ((got, want), line) in clocks.iter().zip(&readings).zip(&entry_lines) {
        if got != want {
            let show = |c: &Option<i64>| c.map_or("none".to_string(), text::seconds_text);
            return Err(LineError {
                line: *line,
                message: format!(
                    "the clock reads {}, but the times and the time control give {}",
                    show(got),
                    show(want)
                ),
            });
        }
    }

    Ok(Parsed {
        replay,
        lines: entry_lines,
    })
}

fn is_comment(line: &str) -> bool {
    line.trim_start().starts_with('#')
}

/// At most [`QUOTE_CHARS`] characters of a piece of input, quoted.
fn quote(text: &str) -> String {
    format!("{:?}", text::shorten(text, QUOTE_CHARS))
}

/// `online deployment=90s move=30s reconnect=60s`.
fn time_control(value: &str) -> Result<TimeControl, String> {
    let mut words = value.split_whitespace();
    let name = match words.next() {
        Some("-") => String::new(),
        Some(name) => name.to_string(),
        None => return Err("empty; expected `NAME deployment=Ns move=Ns reconnect=Ns`".into()),
    };
    let mut seconds = |key: &str| -> Result<u32, String> {
        let word = words
            .next()
            .ok_or_else(|| format!("expected {key}=Ns, the line ends"))?;
        word.strip_prefix(key)
            .and_then(|w| w.strip_prefix('='))
            .and_then(|w| w.strip_suffix('s'))
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| format!("expected {key}=Ns, found {}", quote(word)))
    };
    let tc = TimeControl {
        name,
        deployment_seconds: seconds("deployment")?,
        move_seconds: seconds("move")?,
        reconnect_seconds: seconds("reconnect")?,
    };
    match words.next() {
        Some(extra) => Err(format!("unexpected {}", quote(extra))),
        None => Ok(tc),
    }
}

/// The event lines read so far.
#[derive(Default)]
struct EventReader {
    rules: Option<Rules>,
    entries: Vec<Entry>,
    lines: Vec<usize>,
    clocks: Vec<Option<i64>>,
    plies: u32,
    /// The last line read (where "the file ends" errors point).
    end_line: usize,
}

impl EventReader {
    fn line(&mut self, line: usize, content: &str) -> Result<(), LineError> {
        self.end_line = line;
        let mut t = Tokens {
            words: content.split_whitespace().collect(),
            next: 0,
            line,
        };
        let seq_word = t.next("a sequence number")?;
        let seq: u64 = seq_word.parse().map_err(|_| {
            t.err(format!(
                "expected a sequence number at the start of an event line, found {}",
                quote(seq_word)
            ))
        })?;
        let want = self.entries.len() as u64 + 1;
        if seq != want {
            return Err(t.err(format!(
                "sequence number {seq}, but the previous event was {}: the log runs 1, 2, 3 ... \
                 without gaps",
                want - 1
            )));
        }
        let at = match t.peek().and_then(|w| w.strip_prefix('@')) {
            Some(time) => {
                t.next += 1;
                Some(time.parse::<Timestamp>().map_err(|m| t.err(m))?)
            }
            None => None,
        };
        let keyword = t.next("an event")?;
        let event = match (keyword, self.rules) {
            ("created", _) if self.entries.is_empty() => {
                let name = t.next("a rule set")?;
                let rules = Rules::parse(name).map_err(|e| t.err(format!("rule set: {e}")))?;
                t.expect("first")?;
                let first_mover = t.side()?;
                self.rules = Some(rules);
                Event::Created { rules, first_mover }
            }
            (_, None) => {
                return Err(t.err(format!(
                    "the first event must be `created RULES first SIDE`, found {}",
                    quote(keyword)
                )));
            }
            (keyword, Some(rules)) => self.event(&mut t, &rules, keyword)?,
        };
        let clock = if t.peek() == Some("clock") {
            t.next += 1;
            let word = t.next("a clock reading")?;
            Some(seconds(word).ok_or_else(|| {
                t.err(format!(
                    "expected a clock reading such as 12.345s, found {}",
                    quote(word)
                ))
            })?)
        } else {
            None
        };
        if let Some(extra) = t.peek() {
            return Err(t.err(format!("unexpected {} after the event", quote(extra))));
        }
        self.entries.push(Entry { seq, at, event });
        self.lines.push(line);
        self.clocks.push(clock);
        Ok(())
    }

    fn event(
        &mut self,
        t: &mut Tokens<'_>,
        rules: &Rules,
        keyword: &str,
    ) -> Result<Event, LineError> {
        Ok(match keyword {
            "created" => return Err(t.err("a second created event".into())),
            "draft" => {
                let side = t.side()?;
                Event::DeploymentDrafted {
                    deployment: Deployment::new(side, t.placements(rules)?),
                }
            }
            "confirm" => {
                let side = t.side()?;
                let by_deadline = t.peek() == Some("by-deadline");
                if by_deadline {
                    t.next += 1;
                }
                Event::DeploymentConfirmed {
                    side,
                    deployment: Deployment::new(side, t.placements(rules)?),
                    by_deadline,
                }
            }
            "start" => Event::PlayStarted {
                pieces: t.board(rules)?,
            },
            "ply" => self.ply(t, rules)?,
            "draw-offer" => Event::DrawOffered { side: t.side()? },
            "draw-decline" => Event::DrawDeclined { side: t.side()? },
            "draw-lapse" => Event::DrawLapsed { side: t.side()? },
            "resign" => Event::Resigned { side: t.side()? },
            "seat-lost" => Event::SeatLost { side: t.side()? },
            "end" => {
                let outcome = t.outcome()?;
                Event::Ended {
                    outcome,
                    pieces: t.board(rules)?,
                }
            }
            other => return Err(t.err(format!("unknown event {}", quote(other)))),
        })
    }

    fn ply(&mut self, t: &mut Tokens<'_>, rules: &Rules) -> Result<Event, LineError> {
        let word = t.next("a ply number")?;
        let ply: u32 = word
            .parse()
            .map_err(|_| t.err(format!("expected a ply number, found {}", quote(word))))?;
        if ply != self.plies + 1 {
            return Err(t.err(format!(
                "ply {ply}, but {} plies came before it",
                self.plies
            )));
        }
        self.plies = ply;
        let side = t.side()?;
        Ok(match t.next("`move` or `timeout`")? {
            "timeout" => {
                let word = t.next("a timeout count")?;
                let count = word.parse().map_err(|_| {
                    t.err(format!("expected a timeout count, found {}", quote(word)))
                })?;
                Event::TimedOut { side, count }
            }
            "move" => {
                let word = t.next("a move FROM-TO")?;
                let (from, to) = word.split_once('-').ok_or_else(|| {
                    t.err(format!("expected a move FROM-TO, found {}", quote(word)))
                })?;
                let mv = Move {
                    from: t.node(rules, from)?,
                    to: t.node(rules, to)?,
                };
                let (kind, id) = t.piece(rules)?;
                let mut combat = None;
                if t.peek() == Some("fight") {
                    t.next += 1;
                    let (kind, id) = t.piece(rules)?;
                    let word = t.next("who survived the fight")?;
                    let &(attacker_survives, defender_survives, _) = SURVIVORS
                        .iter()
                        .find(|(_, _, w)| *w == word)
                        .ok_or_else(|| {
                            t.err(format!(
                                "expected attacker-wins, defender-wins, both-removed or \
                                 both-stay, found {}",
                                quote(word)
                            ))
                        })?;
                    let flag_captured = t.peek() == Some("flag-captured");
                    if flag_captured {
                        t.next += 1;
                    }
                    combat = Some(Combat {
                        defender: Piece {
                            side: side.other(),
                            kind,
                            id,
                        },
                        attacker_survives,
                        defender_survives,
                        flag_captured,
                    });
                }
                let mut flag_reveal = Vec::new();
                while t.peek() == Some("flag") {
                    t.next += 1;
                    let side = t.side()?;
                    let mut flags = Vec::new();
                    while let Some((n, id)) = t.peek().and_then(|w| w.split_once('#')) {
                        t.next += 1;
                        flags.push((t.node(rules, n)?, t.id(id)?));
                    }
                    flag_reveal.push(FlagReveal { side, flags });
                }
                Event::Moved {
                    mv,
                    piece: Piece { side, kind, id },
                    combat,
                    flag_reveal,
                }
            }
            other => {
                return Err(t.err(format!(
                    "expected `move` or `timeout`, found {}",
                    quote(other)
                )));
            }
        })
    }
}

/// `12.345s`, `-0.120s` in milliseconds.
fn seconds(word: &str) -> Option<i64> {
    let number = word.strip_suffix('s')?;
    let (negative, number) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number),
    };
    let (whole, fraction) = number.split_once('.')?;
    if fraction.len() != 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    let millis = whole
        .checked_mul(1000)?
        .checked_add(fraction.parse().ok()?)?;
    Some(if negative { -millis } else { millis })
}

/// The words of one event line and a cursor over them.
struct Tokens<'a> {
    words: Vec<&'a str>,
    next: usize,
    line: usize,
}

impl<'a> Tokens<'a> {
    fn err(&self, message: String) -> LineError {
        LineError {
            line: self.line,
            message,
        }
    }

    fn peek(&self) -> Option<&'a str> {
        self.words.get(self.next).copied()
    }

    fn next(&mut self, what: &str) -> Result<&'a str, LineError> {
        let word = self
            .peek()
            .ok_or_else(|| self.err(format!("expected {what}, the line ends")))?;
        self.next += 1;
        Ok(word)
    }

    fn expect(&mut self, keyword: &str) -> Result<(), LineError> {
        let word = self.next(&format!("`{keyword}`"))?;
        if word == keyword {
            Ok(())
        } else {
            Err(self.err(format!("expected `{keyword}`, found {}", quote(word))))
        }
    }

    fn side(&mut self) -> Result<Side, LineError> {
        let word = self.next("south or north")?;
        Side::parse(word)
            .ok_or_else(|| self.err(format!("expected south or north, found {}", quote(word))))
    }

    fn node(&self, rules: &Rules, name: &str) -> Result<Node, LineError> {
        rules.topology().node(name).ok_or_else(|| {
            self.err(format!(
                "{} is not a square of the {} board",
                quote(name),
                rules.name()
            ))
        })
    }

    fn kind(&self, rules: &Rules, code: &str) -> Result<PieceKind, LineError> {
        rules.parse_kind(code).ok_or_else(|| {
            self.err(format!(
                "{} is not a piece of {}",
                quote(code),
                rules.name()
            ))
        })
    }

    fn id(&self, text: &str) -> Result<PieceId, LineError> {
        text.parse()
            .map(PieceId)
            .map_err(|_| self.err(format!("{} is not a piece id (0..=255)", quote(text))))
    }

    /// `9#17`.
    fn piece(&mut self, rules: &Rules) -> Result<(PieceKind, PieceId), LineError> {
        let word = self.next("a piece CODE#ID")?;
        let (code, id) = word
            .split_once('#')
            .ok_or_else(|| self.err(format!("expected a piece CODE#ID, found {}", quote(word))))?;
        Ok((self.kind(rules, code)?, self.id(id)?))
    }

    /// `A1=M B1=F ...` to the end of the line.
    fn placements(&mut self, rules: &Rules) -> Result<Vec<(Node, PieceKind)>, LineError> {
        let mut placements = Vec::new();
        while let Some(word) = self.peek() {
            self.next += 1;
            let (node, code) = word.split_once('=').ok_or_else(|| {
                self.err(format!(
                    "expected a placement SQUARE=CODE, found {}",
                    quote(word)
                ))
            })?;
            placements.push((self.node(rules, node)?, self.kind(rules, code)?));
        }
        Ok(placements)
    }

    /// `south A1=M#3 ... north A12=M#7 ...` to the end of the line.
    fn board(&mut self, rules: &Rules) -> Result<Vec<(Node, Piece)>, LineError> {
        let mut pieces = Vec::new();
        let mut side = None;
        while let Some(word) = self.peek() {
            self.next += 1;
            if let Some(s) = Side::parse(word) {
                side = Some(s);
                continue;
            }
            let side = side.ok_or_else(|| {
                self.err(format!(
                    "expected south or north before the pieces, found {}",
                    quote(word)
                ))
            })?;
            let piece = word
                .split_once('=')
                .and_then(|(node, piece)| piece.split_once('#').map(|(code, id)| (node, code, id)));
            let Some((node, code, id)) = piece else {
                return Err(self.err(format!(
                    "expected a piece SQUARE=CODE#ID, found {}",
                    quote(word)
                )));
            };
            pieces.push((
                self.node(rules, node)?,
                Piece {
                    side,
                    kind: self.kind(rules, code)?,
                    id: self.id(id)?,
                },
            ));
        }
        Ok(pieces)
    }

    /// `south-wins flag_captured`.
    fn outcome(&mut self) -> Result<Outcome, LineError> {
        let word = self.next("a result")?;
        let winner = match word {
            "south-wins" => Some(Side::South),
            "north-wins" => Some(Side::North),
            "draw" => None,
            other => {
                return Err(self.err(format!(
                    "expected south-wins, north-wins or draw, found {}",
                    quote(other)
                )));
            }
        };
        let word = self.next("an end reason")?;
        let reason = END_REASONS
            .into_iter()
            .find(|r| r.name() == word)
            .ok_or_else(|| self.err(format!("unknown end reason {}", quote(word))))?;
        Ok(Outcome { winner, reason })
    }
}
