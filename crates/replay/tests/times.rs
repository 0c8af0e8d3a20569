//! Server times and clock readings: every ply's reading is the time control's move seconds minus
//! the time since its turn started (play's start, then the previous ply), negative once the clock
//! ran out; none without a move clock or without either time; dates from the first and last event.

use hidden_front_replay::{Entry, Header, Replay, TimeControl, Timestamp};
use hidden_front_rules::{Command, Event, Game, GameRng, Move, Rules, Side};

/// A short real game: both confirm, two moves, a timeout, a resignation.
fn events() -> Vec<Event> {
    let mut rng = GameRng::from_seed(11);
    let (mut game, mut events) = Game::create(Rules::default(), Side::South, &mut rng);
    let mut act = |game: &mut Game, command: Command, rng: &mut GameRng| {
        events.extend(game.handle(&command, rng).expect("a legal command"));
    };
    act(&mut game, Command::Confirm { side: Side::South }, &mut rng);
    act(&mut game, Command::Confirm { side: Side::North }, &mut rng);
    for _ in 0..2 {
        let side = game.to_move();
        let mv: Move = game.position().legal_moves().iter().next().expect("a move");
        act(&mut game, Command::Move { side, mv }, &mut rng);
    }
    let side = game.to_move();
    act(&mut game, Command::Timeout { side }, &mut rng);
    let side = game.to_move();
    act(&mut game, Command::Resign { side }, &mut rng);
    events
}

/// Milliseconds after the start of the log at which each event is committed: the start of play
/// at 10 s, the plies 4 s, 7.5 s and 31 s after their turns started.
fn offsets(events: &[Event]) -> Vec<i64> {
    let mut at = 0;
    events
        .iter()
        .map(|event| {
            at += match event {
                Event::PlayStarted { .. } => 10_000,
                Event::Moved { .. } if at < 14_000 => 4_000,
                Event::Moved { .. } => 7_500,
                Event::TimedOut { .. } => 31_000,
                _ => 0,
            };
            at
        })
        .collect()
}

const START: i64 = 1_764_600_000_000;

fn replay(times: impl Fn(usize, i64) -> Option<i64>, time_control: Option<TimeControl>) -> Replay {
    let events = events();
    let offsets = offsets(&events);
    let entries = events
        .into_iter()
        .enumerate()
        .map(|(i, event)| Entry {
            seq: i as u64 + 1,
            at: times(i, offsets[i]).map(|ms| Timestamp::from_unix_millis(START + ms)),
            event,
        })
        .collect();
    let header = Header {
        game_id: None,
        players: ["ana".into(), "ben".into()],
        time_control,
    };
    Replay::from_events(header, entries).expect("a finished game")
}

fn thirty_seconds() -> Option<TimeControl> {
    Some(TimeControl {
        name: "online".into(),
        deployment_seconds: 90,
        move_seconds: 30,
        reconnect_seconds: 60,
    })
}

fn clocks(text: &str) -> Vec<Option<String>> {
    text.lines()
        .filter(|l| l.contains(" ply "))
        .map(|l| l.split(" clock ").nth(1).map(str::to_string))
        .collect()
}

#[test]
fn every_ply_reads_the_move_clock_from_the_times() {
    let replay = replay(|_, ms| Some(ms), thirty_seconds());
    let text = replay.to_text();
    assert_eq!(
        clocks(&text),
        [
            Some("26.000s".to_string()),
            Some("22.500s".into()),
            Some("-1.000s".into())
        ],
        "{text}"
    );
    assert!(
        text.contains("\nCreated: 2025-12-01T14:40:00.000Z\n"),
        "{text}"
    );
    let last = offsets(&events()).last().copied().expect("events");
    let ended = Timestamp::from_unix_millis(START + last).to_string();
    assert!(text.contains(&format!("\nEnded: {ended}\n")), "{text}");
    assert!(
        text.lines()
            .skip_while(|l| !l.is_empty())
            .skip(1)
            .all(|l| l.contains(" @")),
        "a time on every event line"
    );
    assert_eq!(Replay::parse(&text), Ok(replay), "the times round-trip");
}

#[test]
fn without_a_move_clock_or_a_time_there_is_no_reading() {
    let untimed = replay(|_, ms| Some(ms), None).to_text();
    assert_eq!(clocks(&untimed), [None, None, None], "{untimed}");
    assert!(untimed.contains("\nCreated: "), "times are still shown");

    let no_times = replay(|_, _| None, thirty_seconds()).to_text();
    assert_eq!(clocks(&no_times), [None, None, None], "{no_times}");
    assert!(!no_times.contains(" @") && !no_times.contains("Created:"));

    // The first ply's time unknown: it has no reading, and neither has the next (its turn's
    // start is that unknown time); the third reads from the second again.
    let events = events();
    let first_ply = events
        .iter()
        .position(|e| matches!(e, Event::Moved { .. }))
        .expect("a move");
    let gap = replay(|i, ms| (i != first_ply).then_some(ms), thirty_seconds());
    let text = gap.to_text();
    assert_eq!(
        clocks(&text),
        [None, None, Some("-1.000s".into())],
        "{text}"
    );
    assert_eq!(Replay::parse(&text), Ok(gap));
}
