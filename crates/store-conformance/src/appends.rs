//! Appending and reading the log: the version guard, idempotent command keys, paging, and
//! `NotFound` for unknown games.

use crate::helpers::*;
use hidden_front_rules::{Command, Event, Game, Phase, Side};
use hidden_front_store::timers::deadline_after;
use hidden_front_store::{
    Append, CommandRecord, GameStore, StoredEvent, Timer, TimerChange, TimerKind, TurnTimerChange,
};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// Appends extend the log with the next seqs, replace the snapshot, bump the version and store the
/// command's answer.
pub async fn append_happy_path(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, game) = create_game(store, 7, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let v0 = must_load(store, id).await.version;

    let (game1, events1) = judge(&game, Command::Confirm { side: Side::South }, 11);
    let v1 = store
        .append(
            id,
            v0,
            &events1,
            &game1,
            Some(CommandRecord {
                key: "confirm-south",
                response: b"ok south",
            }),
        )
        .await
        .expect("append");
    assert_eq!(v1, v0 + events1.len() as u64, "version = last seq");

    // North confirms: play starts (several events in one append).
    let (game2, events2) = judge(&game1, Command::Confirm { side: Side::North }, 12);
    assert!(events2.len() > 1, "confirming second starts play too");
    let v2 = store
        .append(id, v1, &events2, &game2, None)
        .await
        .expect("second append");
    assert_eq!(v2, v1 + events2.len() as u64);

    let record = must_load(store, id).await;
    assert_eq!(record.version, v2);
    assert_eq!(record.game, game2, "the snapshot is the latest state");
    assert_eq!(record.game.phase(), Phase::Play);
    assert_eq!(record.meta, meta, "metadata does not change");

    let appended = store.events(id, v0 + 1, 100).await.expect("events");
    let expected: Vec<_> = (v0 + 1..)
        .zip(events1.iter().chain(&events2).cloned())
        .map(|(seq, event)| (seq, event, None))
        .collect();
    assert_eq!(
        untimed(&appended),
        expected,
        "appended events get the next seqs"
    );
    assert_eq!(
        store
            .command_response(id, "confirm-south")
            .await
            .expect("command response"),
        Some(b"ok south".to_vec())
    );
    assert_eq!(
        store
            .command_response(id, "never-sent")
            .await
            .expect("command response"),
        None
    );
    assert_log_is_whole(store, id).await;
}

/// An append against a version the game is not at (behind or ahead) fails with the actual version
/// and writes nothing: no events, no snapshot change, no command record.
pub async fn append_version_conflict_writes_nothing(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, game) = create_game(store, 8, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let before = must_load(store, id).await;
    let (next, events) = reshuffle(&game, 21);
    let v1 = store
        .append(id, before.version, &events, &next, None)
        .await
        .expect("append");
    let after_first = must_load(store, id).await;

    let (stale, stale_events) = reshuffle(&game, 22);
    for expected in [before.version, v1 + 5] {
        let result = store
            .append(
                id,
                expected,
                &stale_events,
                &stale,
                Some(CommandRecord {
                    key: "loser",
                    response: b"should not be kept",
                }),
            )
            .await;
        assert_conflict(result, id, expected, v1);
    }
    assert_eq!(
        must_load(store, id).await,
        after_first,
        "a conflict changes nothing"
    );
    assert_eq!(whole_log(store, id).await.len() as u64, v1);
    assert_eq!(
        store.command_response(id, "loser").await.expect("lookup"),
        None,
        "a conflicting command is not recorded"
    );
    assert_log_is_whole(store, id).await;
}

/// A command key applied once answers every later append with the first answer, writes nothing,
/// and wins over a version conflict (a retry usually carries a stale version). Keys are per game.
pub async fn append_duplicate_command_returns_first_answer(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, game) = create_game(store, 9, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let v0 = must_load(store, id).await.version;
    let (game1, events1) = reshuffle(&game, 31);
    let first = CommandRecord {
        key: "cmd-1",
        response: b"first answer",
    };
    let v1 = store
        .append(id, v0, &events1, &game1, Some(first))
        .await
        .expect("first append");
    let after_first = must_load(store, id).await;

    // The same key again, at the right version, with other events and another answer.
    let (game2, events2) = reshuffle(&game1, 32);
    let again = CommandRecord {
        key: "cmd-1",
        response: b"second answer",
    };
    assert_duplicate(
        store.append(id, v1, &events2, &game2, Some(again)).await,
        id,
        "cmd-1",
        b"first answer",
    );
    // A plain retry: the same key with the version it was first judged at.
    assert_duplicate(
        store.append(id, v0, &events1, &game1, Some(first)).await,
        id,
        "cmd-1",
        b"first answer",
    );
    assert_eq!(
        must_load(store, id).await,
        after_first,
        "a duplicate writes nothing"
    );
    assert_eq!(whole_log(store, id).await.len() as u64, v1);
    assert_eq!(
        store.command_response(id, "cmd-1").await.expect("lookup"),
        Some(b"first answer".to_vec())
    );

    // Another key goes through; the same key on another game is unrelated.
    let v2 = store
        .append(
            id,
            v1,
            &events2,
            &game2,
            Some(CommandRecord {
                key: "cmd-2",
                response: b"two",
            }),
        )
        .await
        .expect("a new key appends");
    assert_eq!(v2, v1 + events2.len() as u64);
    let (other, other_game) = create_game(store, 10, &player("south"), &player("north")).await;
    let other_v0 = must_load(store, other.game_id).await.version;
    let (other_next, other_events) = reshuffle(&other_game, 33);
    store
        .append(
            other.game_id,
            other_v0,
            &other_events,
            &other_next,
            Some(first),
        )
        .await
        .expect("command keys are per game");
    assert_log_is_whole(store, id).await;
    assert_log_is_whole(store, other.game_id).await;
}

/// An append with no events (a command whose answer must be remembered although it changed
/// nothing) keeps the version, records the command, and wakes nobody.
pub async fn append_without_events_records_command(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, game) = create_game(store, 12, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let v0 = must_load(store, id).await.version;
    let receiver = store.watch(id).await.expect("watch");
    let command = CommandRecord {
        key: "refused",
        response: b"illegal move",
    };
    let version = store
        .append(id, v0, &[], &game, Some(command))
        .await
        .expect("append without events");
    assert_eq!(version, v0, "no events, no new version");
    assert_eq!(must_load(store, id).await.version, v0);
    assert_eq!(
        store.command_response(id, "refused").await.expect("lookup"),
        Some(b"illegal move".to_vec())
    );
    assert_duplicate(
        store.append(id, v0, &[], &game, Some(command)).await,
        id,
        "refused",
        b"illegal move",
    );
    assert!(
        !receiver.has_changed().expect("sender alive"),
        "an append without events does not wake watchers"
    );
    assert_log_is_whole(store, id).await;
}

/// `events(from_seq, limit)` returns events in seq order starting at `from_seq` (0 reads from the
/// start), at most `limit`; pages concatenate to the whole log; past the end is empty.
pub async fn events_order_and_paging(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, mut game) = create_game(store, 13, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let mut version = must_load(store, id).await.version;
    for seed in 0..20 {
        let (next, events) = reshuffle(&game, 200 + seed);
        version = store
            .append(id, version, &events, &next, None)
            .await
            .expect("append");
        game = next;
    }
    let all = store.events(id, 1, 1000).await.expect("all events");
    assert_eq!(all.len() as u64, version);
    assert!(
        all.iter().zip(1u64..).all(|(e, seq)| e.seq == seq),
        "events come in seq order from 1"
    );
    assert_eq!(
        store.events(id, 0, 1000).await.expect("from 0"),
        all,
        "from_seq 0 reads from the start"
    );
    for page_size in [1, 4, 5, 23] {
        let mut paged = Vec::new();
        let mut from = 1;
        loop {
            let page = store.events(id, from, page_size).await.expect("page");
            assert!(page.len() <= page_size, "a page holds at most `limit`");
            if let Some(first) = page.first() {
                assert_eq!(first.seq, from, "a page starts at from_seq");
            }
            let last = page.last().map(|e| e.seq);
            paged.extend(page);
            match last {
                Some(last) => from = last + 1,
                None => break,
            }
        }
        assert_eq!(paged, all, "pages of {page_size} concatenate to the log");
    }
    let middle = store.events(id, 10, 3).await.expect("middle");
    assert_eq!(middle, all[9..12].to_vec());
    let tail = store.events(id, version, 10).await.expect("tail");
    assert_eq!(tail, all[all.len() - 1..].to_vec());
    assert!(
        store
            .events(id, version + 1, 10)
            .await
            .expect("past end")
            .is_empty(),
        "past the end is empty, not an error"
    );
    assert!(
        store.events(id, 1, 0).await.expect("limit 0").is_empty(),
        "limit 0 returns nothing"
    );
    assert_log_is_whole(store, id).await;
}

/// Every per-game operation on a game that does not exist fails with `NotFound` (load says
/// `None`), and an unknown player has no games.
pub async fn unknown_game_is_not_found(store: Arc<dyn GameStore>) {
    let store = &*store;
    let id = Uuid::now_v7();
    let (_, game, events) = new_game(14, &player("south"), &player("north"));
    assert_not_found(
        store.append(id, 0, &events, &game, None).await,
        id,
        "append",
    );
    assert_not_found(
        store
            .append(
                id,
                3,
                &events,
                &game,
                Some(CommandRecord {
                    key: "k",
                    response: b"r",
                }),
            )
            .await,
        id,
        "append with a command",
    );
    assert_not_found(store.events(id, 1, 10).await, id, "events");
    assert_not_found(
        store.command_response(id, "k").await,
        id,
        "command_response",
    );
    assert_not_found(store.watch(id).await, id, "watch");
    assert_not_found(store.presence(id, SystemTime::now()).await, id, "presence");
    assert_not_found(
        store
            .report_presence(
                id,
                Side::South,
                "gw",
                true,
                SystemTime::now(),
                SystemTime::now() + Duration::from_secs(60),
                None,
            )
            .await,
        id,
        "report_presence",
    );
    assert!(store.load(id).await.expect("load").is_none());
    assert!(
        store
            .games_of_player(&player("nobody"), 10)
            .await
            .expect("list")
            .is_empty()
    );
}

/// Every event carries the time its append committed: within the window the check measured
/// around the writes, shared by the events of one append, and never decreasing along the log
/// (replays show these times and derive the clock readings from them).
pub async fn events_carry_their_commit_times(store: Arc<dyn GameStore>) {
    // Postgres keeps microseconds and its own clock, the check's clock has nanoseconds: allow
    // the rounding, nothing more.
    const ROUNDING: Duration = Duration::from_millis(1);
    let store = &*store;
    let before = SystemTime::now();
    let (meta, game) = create_game(store, 17, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let mut version = must_load(store, id).await.version;
    let created = version;
    let mut game = game;
    let mut groups = vec![(1..=created).collect::<Vec<u64>>()];
    for seed in 0..5 {
        let (next, events) = reshuffle(&game, 300 + seed);
        let from = version + 1;
        version = store
            .append(id, version, &events, &next, None)
            .await
            .expect("append");
        groups.push((from..=version).collect());
        game = next;
    }
    // Both confirmations: the second starts play, several events in one append.
    for (side, seed) in [(Side::South, 310), (Side::North, 311)] {
        let (next, events) = judge(&game, Command::Confirm { side }, seed);
        let from = version + 1;
        version = store
            .append(id, version, &events, &next, None)
            .await
            .expect("append");
        groups.push((from..=version).collect());
        game = next;
    }
    let after = SystemTime::now();
    let log = whole_log(store, id).await;
    assert_eq!(log.len() as u64, version);
    for event in &log {
        assert!(
            event.recorded_at + ROUNDING >= before && event.recorded_at <= after + ROUNDING,
            "event {} was recorded at {:?}, outside the writes' window {before:?}..{after:?}",
            event.seq,
            event.recorded_at
        );
    }
    for pair in log.windows(2) {
        assert!(
            pair[1].recorded_at >= pair[0].recorded_at,
            "event {} is recorded before event {}: {:?} < {:?}",
            pair[1].seq,
            pair[0].seq,
            pair[1].recorded_at,
            pair[0].recorded_at
        );
    }
    for group in groups {
        let times: Vec<SystemTime> = group
            .iter()
            .map(|seq| log[(*seq - 1) as usize].recorded_at)
            .collect();
        assert!(
            times.windows(2).all(|t| t[0] == t[1]),
            "the events {group:?} of one write carry one commit time: {times:?}"
        );
    }
}

/// Each event read back carries the turn deadline that the append which wrote it armed, on that
/// append's last event only: `None` on its other events, on the events of appends that arm no
/// turn deadline (deployment, a draw offer that keeps the running one, the end) and on a
/// creation's. Why: a `WatchGame` pump derives the move clock it shows from the events it
/// streams, also those appended by other processes, instead of reading the game after every
/// move. Read both ways a store serves pages: the whole log from the start, and the newest
/// events of a watched game (which Postgres answers from this process's latest writes).
pub async fn events_carry_the_turn_deadline_their_append_armed(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, mut game) = create_game(store, 19, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let _watching = store.watch(id).await.expect("watch");
    let mut version = must_load(store, id).await.version;
    // What each seq should carry; a creation's events carry nothing.
    let mut expected: Vec<Option<SystemTime>> = vec![None; version as usize];
    let base = SystemTime::now();
    let arm = |side: Side, seconds: u64| TimerChange {
        turn: Some(TurnTimerChange::Arm(Timer {
            game_id: id,
            kind: TimerKind::Move,
            side,
            armed_version: 0,
            fire_at: deadline_after(base, Duration::from_secs(seconds)),
        })),
        ..TimerChange::none()
    };
    let mut steps = vec![
        // Deployment arms nothing; play's start arms the first move clock (several events).
        (
            Command::Reshuffle { side: Side::South },
            TimerChange::none(),
        ),
        (Command::Confirm { side: Side::South }, TimerChange::none()),
        (
            Command::Confirm { side: Side::North },
            arm(game.first_mover(), 30),
        ),
    ];
    for (seed, (command, timers)) in (1..).zip(steps.drain(..)) {
        let events =
            append_judged(store, id, &mut version, &mut game, command, seed, &timers).await;
        expected.extend(armed_on_last(events.len(), &timers));
    }
    assert_eq!(game.phase(), Phase::Play);
    // A move arms the next clock.
    let mover = game.to_move();
    let timers = arm(mover.other(), 61);
    let command = quiet_move(&game);
    let events = append_judged(store, id, &mut version, &mut game, command, 4, &timers).await;
    expected.extend(armed_on_last(events.len(), &timers));
    // A draw offer keeps the running clock; the move that lets it lapse arms the next one, on
    // its append's last event (the lapse), not on the move.
    let offerer = game.to_move().other();
    let timers = TimerChange {
        turn: Some(TurnTimerChange::Retag { armed_version: 0 }),
        ..TimerChange::none()
    };
    let command = Command::OfferDraw { side: offerer };
    let events = append_judged(store, id, &mut version, &mut game, command, 5, &timers).await;
    expected.extend(armed_on_last(events.len(), &timers));
    let timers = arm(offerer, 92);
    let command = quiet_move(&game);
    let events = append_judged(store, id, &mut version, &mut game, command, 6, &timers).await;
    assert!(
        matches!(events[..], [Event::Moved { .. }, Event::DrawLapsed { .. }]),
        "a move and the lapse of the offer: {events:?}"
    );
    expected.extend(armed_on_last(events.len(), &timers));
    // The end clears every timer and arms none.
    let timers = TimerChange {
        clear_all: true,
        ..TimerChange::none()
    };
    let command = Command::Resign {
        side: game.to_move(),
    };
    let events = append_judged(store, id, &mut version, &mut game, command, 7, &timers).await;
    expected.extend(armed_on_last(events.len(), &timers));
    assert_eq!(game.phase(), Phase::Ended);

    let expected: Vec<(u64, Option<SystemTime>)> = (1..).zip(expected).collect();
    assert_eq!(expected.len() as u64, version);
    assert_eq!(
        expected.iter().filter(|(_, d)| d.is_some()).count(),
        3,
        "three appends armed a turn deadline: {expected:?}"
    );
    assert_eq!(
        armed_deadlines(&whole_log(store, id).await),
        expected,
        "the whole log: each append's turn deadline on its last event"
    );
    // The newest writes, as a woken pump reads them.
    let from = version - 4;
    let newest = store.events(id, from, 256).await.expect("events");
    assert_eq!(
        armed_deadlines(&newest),
        expected[(from - 1) as usize..],
        "the newest events"
    );
}

/// What the `count` events of an append with `timers` carry: its turn deadline on the last.
fn armed_on_last(count: usize, timers: &TimerChange) -> Vec<Option<SystemTime>> {
    let mut carried = vec![None; count];
    if let Some(last) = carried.last_mut() {
        *last = timers.armed_turn_deadline();
    }
    carried
}

/// Each event's seq and the turn deadline it carries.
fn armed_deadlines(log: &[StoredEvent]) -> Vec<(u64, Option<SystemTime>)> {
    log.iter().map(|e| (e.seq, e.armed_turn_deadline)).collect()
}

/// A legal move of the side to move onto an empty square (so it cannot end the game).
fn quiet_move(game: &Game) -> Command {
    let position = game.position();
    let moves = position.legal_moves();
    let mv = moves
        .iter()
        .find(|mv| position.piece_at(mv.to).is_none())
        .expect("a move onto an empty square");
    Command::Move {
        side: game.to_move(),
        mv,
    }
}

/// Judges `command` on `game` (seeded) and appends its events with `timers` at `version`;
/// moves both on and returns the events.
async fn append_judged(
    store: &dyn GameStore,
    game_id: Uuid,
    version: &mut u64,
    game: &mut Game,
    command: Command,
    seed: u64,
    timers: &TimerChange,
) -> Vec<Event> {
    let (next, events) = judge(game, command, seed);
    let new_version = store
        .append_armed(Append {
            game_id,
            expected_version: *version,
            events: &events,
            game: &next,
            command: None,
            timers,
            trace_parent: None,
            facts: &[],
            fired: None,
        })
        .await
        .expect("append");
    assert_eq!(new_version, *version + events.len() as u64);
    *version = new_version;
    *game = next;
    events
}
