//! Appending and reading the log: the version guard, idempotent command keys, paging, and
//! `NotFound` for unknown games.

use crate::helpers::*;
use hidden_front_rules::{Command, Phase, Side};
use hidden_front_store::{CommandRecord, GameStore};
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
