//! What `verify` refuses: a file that changes one fact of a real game fails at that fact's line,
//! saying what the engine records instead; a malformed file fails at its first bad line with
//! what is wrong; no input at all makes the reader panic.

mod common;

use common::{RULE_SETS, random_game, replay_of};
use hidden_front_replay::{Entry, LineError, Replay, verify_text};
use hidden_front_rules::{Event, GameRng, PieceId, Rules, Side};

/// A random game's replay under `rules`: with server times and a time control (so clock
/// readings) when `timed`, without server times otherwise.
fn sample(rules: &str, seed: u64, timed: bool) -> Replay {
    let rules = Rules::parse(rules).expect("a rule set");
    (seed..)
        .map(|s| replay_of(&random_game(rules, s), s))
        .find(|r| {
            let clocked = r.entries()[0].at.is_some() && r.header().time_control.is_some();
            let untimed = r.entries()[0].at.is_none();
            (if timed { clocked } else { untimed }) && r.plies() > 20
        })
        .expect("some seed fits")
}

/// The text's line of the event with sequence number `seq`.
fn line_of(text: &str, seq: u64) -> usize {
    let prefix = format!("{seq} ");
    text.lines()
        .position(|l| l.starts_with(&prefix))
        .map(|i| i + 1)
        .expect("the event's line")
}

/// The replay with `entries` in place of its own.
fn with_entries(replay: &Replay, entries: Vec<Entry>) -> Replay {
    Replay::from_events(replay.header().clone(), entries).expect("still a replay's shape")
}

/// Verifies `changed` and requires it to fail on the line of the event at `index`.
fn fails_at(changed: &Replay, index: usize, what: &str) -> LineError {
    let text = changed.to_text();
    let error = verify_text(&text).expect_err(what);
    assert_eq!(
        error.line,
        line_of(&text, changed.entries()[index].seq),
        "{what}: {error}"
    );
    error
}

#[test]
fn one_changed_fact_fails_at_its_own_line() {
    for name in RULE_SETS {
        let replay = sample(name, 11, false);
        let entries = replay.entries().to_vec();
        let find = |f: &dyn Fn(&Event) -> bool| entries.iter().position(|e| f(&e.event));

        // A fight's outcome.
        let fight = find(&|e| {
            matches!(
                e,
                Event::Moved {
                    combat: Some(_),
                    ..
                }
            )
        })
        .expect("a fight");
        let mut changed = entries.clone();
        if let Event::Moved {
            combat: Some(c), ..
        } = &mut changed[fight].event
        {
            c.attacker_survives = !c.attacker_survives;
        }
        let error = fails_at(&with_entries(&replay, changed), fight, "a fight's outcome");
        assert!(
            error.message.contains("the engine's event here is"),
            "{error}"
        );

        // The moving piece's id and its kind.
        let mv = find(&|e| matches!(e, Event::Moved { .. })).expect("a move");
        let mut changed = entries.clone();
        if let Event::Moved { piece, .. } = &mut changed[mv].event {
            piece.id = PieceId(piece.id.0.wrapping_add(1) % 40);
        }
        fails_at(&with_entries(&replay, changed), mv, "the mover's id");
        let mut changed = entries.clone();
        if let Event::Moved { piece, .. } = &mut changed[mv].event {
            piece.kind.0 = piece.kind.0 % 9 + 1;
        }
        fails_at(&with_entries(&replay, changed), mv, "the mover's kind");

        // The end: result, reason, final board.
        let end = entries.len() - 1;
        let mut changed = entries.clone();
        if let Event::Ended { outcome, .. } = &mut changed[end].event {
            outcome.winner = match outcome.winner {
                Some(Side::South) => Some(Side::North),
                _ => Some(Side::South),
            };
        }
        fails_at(&with_entries(&replay, changed), end, "the winner");
        let mut changed = entries.clone();
        if let Event::Ended { pieces, .. } = &mut changed[end].event {
            pieces.pop();
        }
        fails_at(&with_entries(&replay, changed), end, "the final board");

        // A piece id drawn twice at the start.
        let start = find(&|e| matches!(e, Event::PlayStarted { .. })).expect("a start");
        let mut changed = entries.clone();
        if let Event::PlayStarted { pieces } = &mut changed[start].event {
            pieces[1].1.id = pieces[0].1.id;
        }
        let error = fails_at(&with_entries(&replay, changed), start, "a repeated id");
        assert!(error.message.contains("repeated"), "{error}");

        // An event the engine causes, left out (the log renumbered): the engine names it.
        let ply =
            find(&|e| matches!(e, Event::Moved { .. } | Event::TimedOut { .. })).expect("a ply");
        let mut changed = entries.clone();
        changed.insert(
            ply + 1,
            Entry {
                seq: 0,
                at: None,
                event: Event::Resigned { side: Side::North },
            },
        );
        let mut renumbered: Vec<Entry> = changed;
        for (i, e) in renumbered.iter_mut().enumerate() {
            e.seq = i as u64 + 1;
        }
        // A resignation needs no cause, so the file diverges where the engine's own story
        // (the resignation's end) is missing.
        let text = with_entries(&replay, renumbered).to_text();
        let error = verify_text(&text).expect_err("a resignation without its end");
        assert!(
            error.message.contains("the engine's event here is `end"),
            "{error}"
        );
    }
}

#[test]
fn timeouts_and_offers_are_judged_too() {
    // Games with timeouts and draw offers: change a timeout's count, drop a lapse.
    let mut checked = [false; 2];
    for seed in 0..400 {
        let rules = Rules::parse(RULE_SETS[(seed % 8) as usize]).expect("rules");
        let replay = replay_of(&random_game(rules, seed), seed);
        let entries = replay.entries().to_vec();
        if let Some(i) = entries
            .iter()
            .position(|e| matches!(e.event, Event::TimedOut { .. }))
        {
            let mut changed = entries.clone();
            if let Event::TimedOut { count, .. } = &mut changed[i].event {
                *count += 1;
            }
            fails_at(&with_entries(&replay, changed), i, "a timeout's count");
            checked[0] = true;
        }
        if let Some(i) = entries
            .iter()
            .position(|e| matches!(e.event, Event::DrawLapsed { .. }))
        {
            let mut changed = entries.clone();
            changed.remove(i);
            for (j, e) in changed.iter_mut().enumerate() {
                e.seq = j as u64 + 1;
            }
            let error = fails_at(&with_entries(&replay, changed), i, "a missing lapse");
            assert!(error.message.contains("draw-lapse"), "{error}");
            checked[1] = true;
        }
    }
    assert_eq!(checked, [true, true]);
}

/// A valid text to break, without server times (so no clock readings) and with them.
fn texts() -> [String; 2] {
    [
        sample("hidden-front+flag-reveal", 3, false).to_text(),
        sample("gunjin-shogi", 5, true).to_text(),
    ]
}

/// The text with line `line` (from 1) replaced by `with` (or removed when `None`).
fn edit(text: &str, line: usize, with: Option<&str>) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    match with {
        Some(w) => lines[line - 1] = w,
        None => {
            lines.remove(line - 1);
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// The number (from 1) of the first line starting with `prefix`.
fn find_line(text: &str, prefix: &str) -> usize {
    text.lines()
        .position(|l| l.starts_with(prefix))
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("no line starts with {prefix:?}"))
}

fn refused(text: &str, line: usize, says: &str) {
    let error = verify_text(text).expect_err(says);
    assert_eq!(error.line, line, "{says}: {error}");
    assert!(error.message.contains(says), "want {says:?}: {error}");
    assert!(error.message.len() < 400, "too long: {error}");
}

#[test]
fn malformed_files_are_refused_at_their_first_bad_line() {
    let [plain, timed] = texts();
    let t = &plain;
    refused("", 1, "the file is empty");
    refused("hello\n", 1, "not a replay");
    refused(
        "hidden-front-replay 2\n",
        1,
        "format version \"2\" is not supported",
    );
    let south = find_line(t, "South: ");
    refused(&edit(t, south, Some("South")), south, "expected a header");
    refused(
        &edit(t, south, Some("Colour: red")),
        south,
        "unknown header \"Colour\"",
    );
    refused(
        &edit(t, south + 1, Some("South: x")),
        south + 1,
        "header South again",
    );
    let plies = find_line(t, "Plies: ");
    refused(&edit(t, plies, Some("Plies: 3")), plies, "Plies says \"3\"");
    // A missing header is reported on the last header line (it has no line of its own).
    let without = edit(t, plies, None);
    let last_header = without
        .lines()
        .position(str::is_empty)
        .expect("a blank line");
    refused(&without, last_header, "the header Plies is missing");
    let result = find_line(t, "Result: ");
    refused(
        &edit(t, result, Some("Result: draw agreed_draw")),
        result,
        "the events say",
    );
    let tc = find_line(t, "Time-Control: ");
    refused(
        &edit(t, tc, Some("Created: 2026-12-01T10:00:00Z")),
        tc,
        "the events carry no value",
    );
    refused(
        &edit(t, tc, Some("Time-Control: online move=30s")),
        tc,
        "expected deployment=Ns",
    );

    let first = find_line(t, "1 created");
    refused(
        &edit(t, first, Some("1 draft south")),
        first,
        "the first event must be",
    );
    refused(
        &edit(t, first, Some("1 created chess first south")),
        first,
        "rule set",
    );
    refused(
        &edit(t, first, Some("1 created hidden-front first west")),
        first,
        "expected south or north",
    );
    refused(
        &edit(t, first, Some("one created")),
        first,
        "expected a sequence number",
    );
    refused(
        &edit(t, first, None),
        first,
        "sequence number 2, but the previous event was 0",
    );
    refused(
        &edit(
            t,
            first,
            Some("1 @yesterday created hidden-front first south"),
        ),
        first,
        "not an RFC 3339 time",
    );
    refused(
        &edit(
            t,
            first,
            Some("1 @2026-12-01T10:00:00.0001Z created hidden-front first south"),
        ),
        first,
        "more precise than a millisecond",
    );

    let draft = find_line(t, "2 draft");
    refused(
        &edit(t, draft, Some("2 draft south A1=M Z9=F")),
        draft,
        "\"Z9\" is not a square",
    );
    refused(
        &edit(t, draft, Some("2 draft south A1=Q")),
        draft,
        "\"Q\" is not a piece",
    );
    refused(
        &edit(t, draft, Some("2 draft south A1")),
        draft,
        "expected a placement",
    );
    refused(
        &edit(t, draft, Some("2 created hidden-front first south")),
        draft,
        "a second created event",
    );
    refused(
        &edit(t, draft, Some("2 teleport south")),
        draft,
        "unknown event \"teleport\"",
    );
    // A draft the engine refuses: it names the deployment's problems.
    refused(
        &edit(t, draft, Some("2 draft south A1=M")),
        draft,
        "the engine refuses this",
    );

    let ply = find_line(t, &format!("{} ply 1 ", line_seq(t, "ply 1 ")));
    let line = t.lines().nth(ply - 1).expect("the ply");
    let seq = line.split(' ').next().expect("a seq");
    refused(
        &edit(t, ply, Some(&format!("{seq} ply 2 south timeout 1"))),
        ply,
        "ply 2, but 0 plies came before it",
    );
    refused(
        &edit(t, ply, Some(&format!("{seq} ply 1 south jump"))),
        ply,
        "expected `move` or `timeout`",
    );
    refused(
        &edit(t, ply, Some(&format!("{seq} ply 1 south move A4"))),
        ply,
        "expected a move FROM-TO",
    );
    refused(
        &edit(t, ply, Some(&format!("{seq} ply 1 south move A4-A5 1#999"))),
        ply,
        "not a piece id",
    );
    refused(
        &edit(t, ply, Some(&format!("{seq} ply 1 south move A4-A5"))),
        ply,
        "the line ends",
    );
    refused(
        &edit(t, ply, Some(&format!("{line} extra"))),
        ply,
        "unexpected \"extra\"",
    );
    refused(
        &edit(t, ply, Some(&format!("{line} clock 1.000s"))),
        ply,
        "the clock reads 1.000s",
    );
    refused(
        &edit(t, ply, Some(&format!("{line} clock soon"))),
        ply,
        "expected a clock reading",
    );

    let end = t.lines().count();
    refused(&edit(t, end, None), end - 1, "without an `end`");
    let last_seq: u64 = line_seq(t, " end ").parse().expect("a number");
    refused(
        &format!("{t}{} resign south\n", last_seq + 1),
        end,
        "the game ends here, yet more events follow",
    );

    // The timed text: a clock that does not follow from the times, a time going backwards.
    let t = &timed;
    let ply = find_line(t, &format!("{} @", line_seq(t, "ply 2 ")));
    let line = t.lines().nth(ply - 1).expect("a timed ply");
    let (kept, _) = line.rsplit_once(" clock ").expect("a clock reading");
    refused(
        &edit(t, ply, Some(&format!("{kept} clock 0.001s"))),
        ply,
        "the clock reads 0.001s",
    );
    refused(&edit(t, ply, Some(kept)), ply, "the clock reads none");
    let created = find_line(t, "1 @");
    let far = "1 @2099-01-01T00:00:00Z created gunjin-shogi first ";
    let first_mover = if t.contains("First-Mover: south") {
        "south"
    } else {
        "north"
    };
    let moved = edit(t, created, Some(&format!("{far}{first_mover}")));
    let header = find_line(&moved, "Created: ");
    refused(&moved, header, "Created says");
}

/// The sequence number of the first event line containing `needle`.
fn line_seq(text: &str, needle: &str) -> String {
    text.lines()
        .find(|l| l.contains(needle) && l.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .and_then(|l| l.split(' ').next())
        .expect("such a line")
        .to_string()
}

#[test]
fn a_time_that_goes_backwards_is_refused() {
    let replay = sample("hidden-front", 21, true);
    let mut entries = replay.entries().to_vec();
    let i = entries.len() / 2;
    entries[i].at = entries[0].at;
    let changed = Replay::from_events(replay.header().clone(), entries).expect("shape");
    let text = changed.to_text();
    let error = verify_text(&text).expect_err("backwards time");
    // The clock reading (derived from the times) or the time itself is wrong on that line.
    assert_eq!(
        error.line,
        line_of(&text, changed.entries()[i].seq),
        "{error}"
    );
}

#[test]
fn no_input_makes_the_reader_panic_or_accept_another_game() {
    let [plain, _] = texts();
    let original = Replay::parse(&plain).expect("valid");
    let without_drafts = |r: &Replay| -> Vec<Event> {
        r.entries()
            .iter()
            .map(|e| e.event.clone())
            .filter(|e| !matches!(e, Event::DeploymentDrafted { .. }))
            .collect()
    };
    let want = without_drafts(&original);
    let mut rng = GameRng::from_seed(0xbad);
    let chars: Vec<char> = plain.chars().collect();
    let alphabet: Vec<char> = "0123456789#=-@:. \nABZabz+southnorth\u{e9}\u{1F600}"
        .chars()
        .collect();
    let mut refusals = 0;
    for round in 0..3000 {
        let mut mutated = chars.clone();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(mutated.len() as u32) as usize;
            let c = alphabet[rng.below(alphabet.len() as u32) as usize];
            match rng.below(3) {
                0 => mutated[at] = c,
                1 => mutated.insert(at, c),
                _ => {
                    mutated.remove(at);
                }
            }
        }
        if round % 10 == 0 {
            mutated.truncate(rng.below(mutated.len() as u32) as usize);
        }
        let text: String = mutated.into_iter().collect();
        match verify_text(&text) {
            Err(error) => {
                refusals += 1;
                assert!(error.line >= 1, "{error}");
                assert!(error.message.len() < 600, "{error}");
            }
            // Accepted: then it is the same game (a changed draft that a later draft replaces,
            // a player's name, a letter's case are not the game).
            Ok(_) => {
                let parsed = Replay::parse(&text).expect("verified, so parsed");
                assert_eq!(
                    without_drafts(&parsed),
                    want,
                    "accepted another game:\n{text}"
                );
            }
        }
    }
    assert!(refusals > 2000, "only {refusals} refusals");
}
