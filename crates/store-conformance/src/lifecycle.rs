//! The lifecycle outbox: facts commit with the events that cause them, or not at all, and a
//! follower reading from a cursor sees every fact exactly once, in commit order, even while many
//! games write at once.

use crate::helpers::*;
use crate::{RACE_DEADLINE, WAKE_DEADLINE};
use hidden_front_rules::{EndReason, Side};
use hidden_front_store::lifecycle::{
    Fact, FactBody, FeedPosition, NewFact, PositionError, PositionedFact,
};
use hidden_front_store::{Append, CommandRecord, GameStore, StoreError, TimerChange};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// Allowed difference between the test's clock and the store's (Postgres dates a fact by its
/// transaction's start, on the same host).
const CLOCK_SLACK: Duration = Duration::from_secs(5);

/// A fact of no consequence, told apart by `n`.
fn fact(game_id: Uuid, n: u32) -> NewFact {
    NewFact::new(
        game_id,
        FactBody::GameEnded {
            winner: Some(Side::South),
            winner_player: Some(format!("p{n}")),
            reason: EndReason::Resigned,
            plies: n,
            south_player: "s".into(),
            north_player: "n".into(),
        },
    )
}

/// The outbox's last position now.
async fn position_now(store: &dyn GameStore) -> u64 {
    *store.watch_facts().await.expect("watch facts").borrow()
}

/// Every fact after `after`, read in small pages.
pub async fn all_facts_after(store: &dyn GameStore, mut after: u64) -> Vec<Fact> {
    let mut facts = Vec::new();
    loop {
        let page = store.facts_after(after, 5).await.expect("read facts");
        let Some(last) = page.last() else {
            return facts;
        };
        after = last.position;
        facts.extend(page);
    }
}

fn only_of(facts: Vec<Fact>, games: &HashSet<Uuid>) -> Vec<Fact> {
    facts
        .into_iter()
        .filter(|f| games.contains(&f.game_id))
        .collect()
}

/// Facts written with a creation and with an append come back after the cursor in order, with
/// their ids and bodies, dated by the store; refused appends write none of theirs.
pub async fn lifecycle_facts_commit_with_their_events(store: Arc<dyn GameStore>) {
    let start = position_now(&*store).await;
    let before = SystemTime::now();
    let (meta, game, events) = new_game(91, &player("lfs"), &player("lfn"));
    let created_facts = vec![fact(meta.game_id, 1), fact(meta.game_id, 2)];
    store
        .create_armed(
            &format!("lifecycle-{}", meta.game_id),
            &meta,
            &events,
            &game,
            &[],
            &created_facts,
        )
        .await
        .expect("create");
    let version = events.len() as u64;
    let (next, step) = reshuffle(&game, 3);
    let appended = vec![fact(meta.game_id, 3)];
    let no_timers = TimerChange::none();
    let append = |expected_version, key, facts| Append {
        game_id: meta.game_id,
        expected_version,
        events: &step,
        game: &next,
        command: Some(CommandRecord {
            key,
            response: b"ok",
        }),
        timers: &no_timers,
        trace_parent: None,
        facts,
        fired: None,
    };
    store
        .append_armed(append(version, "k1", &appended))
        .await
        .expect("append");
    // Refused appends (a stale version, a known key) record nothing.
    let refused = [fact(meta.game_id, 99)];
    assert!(matches!(
        store.append_armed(append(version, "k2", &refused)).await,
        Err(StoreError::VersionConflict { .. })
    ));
    assert!(matches!(
        store
            .append_armed(append(version + step.len() as u64, "k1", &refused))
            .await,
        Err(StoreError::DuplicateCommand { .. })
    ));
    let after = SystemTime::now();

    let games = HashSet::from([meta.game_id]);
    let facts = only_of(all_facts_after(&*store, start).await, &games);
    let written: Vec<&NewFact> = created_facts.iter().chain(&appended).collect();
    assert_eq!(facts.len(), written.len(), "{facts:#?}");
    for (stored, new) in facts.iter().zip(written) {
        assert_eq!(stored.id, new.id);
        assert_eq!(stored.game_id, new.game_id);
        assert_eq!(stored.body, new.body);
        assert!(stored.position > start);
        assert!(
            stored.occurred_at + CLOCK_SLACK >= before && stored.occurred_at <= after + CLOCK_SLACK
        );
        assert!(stored.game_created_at <= stored.occurred_at);
    }
    assert!(facts.windows(2).all(|w| w[0].position < w[1].position));
    assert!(position_now(&*store).await >= facts[2].position);
    // Paging: exactly the facts after a cursor, at most the limit.
    let rest = store.facts_after(facts[0].position, 1).await.unwrap();
    assert_eq!(rest.len(), 1);
    assert!(rest[0].position > facts[0].position);
}

/// A follower of the outbox wakes when a commit records facts.
pub async fn lifecycle_watch_wakes_after_facts(store: Arc<dyn GameStore>) {
    let (meta, game) = create_game(&*store, 92, &player("lws"), &player("lwn")).await;
    let mut follower = store.watch_facts().await.expect("watch facts");
    let seen = *follower.borrow();
    let (next, step) = reshuffle(&game, 5);
    let facts = [fact(meta.game_id, 7)];
    store
        .append_armed(Append {
            game_id: meta.game_id,
            expected_version: must_load(&*store, meta.game_id).await.version,
            events: &step,
            game: &next,
            command: None,
            timers: &TimerChange::none(),
            trace_parent: None,
            facts: &facts,
            fired: None,
        })
        .await
        .expect("append");
    within(
        WAKE_DEADLINE,
        "the outbox follower wakes",
        follower.changed(),
    )
    .await
    .expect("the store is alive");
    let position = *follower.borrow();
    assert!(position > seen);
    let tail = store.facts_after(seen, 100).await.unwrap();
    assert!(
        tail.iter()
            .any(|f| f.id == facts[0].id && f.position <= position)
    );
}

/// Many games append facts at once while a follower reads from its cursor whenever it is woken:
/// the follower sees every fact once, positions only ever increase, and what it saw is exactly
/// the outbox read again afterwards (nothing appeared behind its cursor).
pub async fn lifecycle_followers_miss_nothing_under_concurrent_writers(store: Arc<dyn GameStore>) {
    const GAMES: u32 = 8;
    const APPENDS: u32 = 10;
    let start = position_now(&*store).await;
    let mut games = HashSet::new();
    let mut writers = Vec::new();
    for g in 0..GAMES {
        let (meta, game) =
            create_game(&*store, 200 + u64::from(g), &player("lcs"), &player("lcn")).await;
        games.insert(meta.game_id);
        let store = Arc::clone(&store);
        writers.push(tokio::spawn(async move {
            let mut game = game;
            let mut version = must_load(&*store, meta.game_id).await.version;
            for a in 0..APPENDS {
                let (next, step) = reshuffle(&game, u64::from(g * 100 + a));
                let facts = [fact(meta.game_id, g * 100 + a)];
                version = store
                    .append_armed(Append {
                        game_id: meta.game_id,
                        expected_version: version,
                        events: &step,
                        game: &next,
                        command: None,
                        timers: &TimerChange::none(),
                        trace_parent: None,
                        facts: &facts,
                        fired: None,
                    })
                    .await
                    .expect("append");
                game = next;
            }
        }));
    }
    let expected = (GAMES * APPENDS) as usize;
    let follower = {
        let store = Arc::clone(&store);
        let games = games.clone();
        tokio::spawn(async move {
            let mut wake = store.watch_facts().await.expect("watch facts");
            let mut cursor = start;
            let mut seen: Vec<Fact> = Vec::new();
            while seen.len() < expected {
                let page = store.facts_after(cursor, 7).await.expect("read facts");
                if let Some(last) = page.last() {
                    assert!(page[0].position > cursor, "a fact at or behind the cursor");
                    assert!(page.windows(2).all(|w| w[0].position < w[1].position));
                    cursor = last.position;
                    seen.extend(page.into_iter().filter(|f| games.contains(&f.game_id)));
                    continue;
                }
                wake.changed().await.expect("the store is alive");
            }
            seen
        })
    };
    for writer in writers {
        writer.await.expect("writer");
    }
    let seen = within(RACE_DEADLINE, "the follower sees every fact", follower)
        .await
        .expect("follower");
    let again = only_of(all_facts_after(&*store, start).await, &games);
    let ids = |facts: &[Fact]| facts.iter().map(|f| f.id).collect::<Vec<_>>();
    assert_eq!(
        ids(&seen),
        ids(&again),
        "the follower saw the outbox as it is"
    );
    assert_eq!(
        ids(&seen).into_iter().collect::<HashSet<_>>().len(),
        expected,
        "each fact once"
    );
}

/// Every fact after `after`, read by position in small pages: each with the position after it.
pub async fn all_facts_after_position(
    store: &dyn GameStore,
    mut after: FeedPosition,
) -> Vec<PositionedFact> {
    let mut facts = Vec::new();
    loop {
        let page = store
            .facts_after_position(&after, 3)
            .await
            .expect("read facts by position");
        assert_eq!(page.unanswered, Vec::<u16>::new(), "every shard answers");
        let Some(last) = page.facts.last() else {
            return facts;
        };
        after = last.after.clone();
        facts.extend(page.facts);
    }
}

/// The feed read by position, per shard, against the same feed read by the merged cursor: the
/// same facts in the same order (every shard answers), each game's in commit order; each fact's
/// position moves only one shard's entry, to the fact's own position, and survives its text
/// form; resuming from any fact's position reads exactly the facts after it; the cursor a
/// reader had becomes a position that reads what the cursor reads; a position naming a shard
/// the store lacks is refused.
pub async fn lifecycle_by_position_reads_each_fact_once_in_order(store: Arc<dyn GameStore>) {
    let shards = store.feed_shards();
    let start_cursor = position_now(&*store).await;
    let start = store
        .watch_fact_positions()
        .await
        .expect("watch positions")
        .borrow()
        .clone();
    assert_eq!(start.shards(), shards, "the positions name every shard");
    let mut games = HashSet::new();
    let mut written: Vec<Uuid> = Vec::new();
    for g in 0..6u32 {
        let (meta, game, events) = new_game(400 + u64::from(g), &player("lps"), &player("lpn"));
        games.insert(meta.game_id);
        let created = [fact(meta.game_id, g * 10), fact(meta.game_id, g * 10 + 1)];
        written.extend(created.iter().map(|f| f.id));
        store
            .create_armed(
                &format!("by-position-{}", meta.game_id),
                &meta,
                &events,
                &game,
                &[],
                &created,
            )
            .await
            .expect("create");
        let (next, step) = reshuffle(&game, u64::from(g));
        let appended = [fact(meta.game_id, g * 10 + 2)];
        written.extend(appended.iter().map(|f| f.id));
        store
            .append_armed(Append {
                game_id: meta.game_id,
                expected_version: events.len() as u64,
                events: &step,
                game: &next,
                command: None,
                timers: &TimerChange::none(),
                trace_parent: None,
                facts: &appended,
                fired: None,
            })
            .await
            .expect("append");
    }
    let read = all_facts_after_position(&*store, start.clone()).await;
    let mine: Vec<&PositionedFact> = read
        .iter()
        .filter(|p| games.contains(&p.fact.game_id))
        .collect();
    let ids = |facts: &[&PositionedFact]| facts.iter().map(|p| p.fact.id).collect::<Vec<_>>();
    let merged = only_of(all_facts_after(&*store, start_cursor).await, &games);
    assert_eq!(
        ids(&mine),
        merged.iter().map(|f| f.id).collect::<Vec<_>>(),
        "by position, the facts and order of the merged feed"
    );
    assert_eq!(
        ids(&mine).into_iter().collect::<HashSet<_>>(),
        written.iter().copied().collect::<HashSet<_>>(),
        "every fact written, once"
    );
    assert_eq!(mine.len(), written.len(), "no fact twice");
    for game in &games {
        let of_game: Vec<Uuid> = ids(&mine)
            .into_iter()
            .filter(|id| {
                mine.iter()
                    .any(|p| p.fact.id == *id && p.fact.game_id == *game)
            })
            .collect();
        let in_order: Vec<Uuid> = written
            .iter()
            .copied()
            .filter(|id| of_game.contains(id))
            .collect();
        assert_eq!(of_game, in_order, "game {game}'s facts in commit order");
    }
    let mut before = start.clone();
    for positioned in &read {
        let changed: Vec<usize> = (0..shards)
            .filter(|&s| positioned.after.get(s) != before.get(s))
            .collect();
        assert_eq!(changed.len(), 1, "one shard's entry moves per fact");
        assert_eq!(positioned.after.get(changed[0]), positioned.fact.position);
        assert!(positioned.fact.position > before.get(changed[0]));
        let text = positioned.after.to_string();
        assert_eq!(
            text.parse::<FeedPosition>().as_ref(),
            Ok(&positioned.after),
            "{text}"
        );
        before = positioned.after.clone();
    }
    // Resuming from any fact's position reads exactly the rest.
    for cut in [0, read.len() / 2, read.len() - 1] {
        let rest = all_facts_after_position(&*store, read[cut].after.clone()).await;
        assert_eq!(
            rest.iter().map(|p| p.fact.id).collect::<Vec<_>>(),
            read[cut + 1..]
                .iter()
                .map(|p| p.fact.id)
                .collect::<Vec<_>>(),
            "resuming after fact {cut}"
        );
    }
    // A reader's merged cursor continues by position from every shard at it.
    let from_cursor = all_facts_after_position(
        &*store,
        FeedPosition::from_cursor(merged[2].position, shards),
    )
    .await;
    let from_cursor: Vec<&PositionedFact> = from_cursor
        .iter()
        .filter(|p| games.contains(&p.fact.game_id))
        .collect();
    assert_eq!(
        ids(&from_cursor),
        merged[3..].iter().map(|f| f.id).collect::<Vec<_>>()
    );
    // A page is at most the limit, each fact's position the next page's start.
    let page = store.facts_after_position(&start, 2).await.unwrap();
    assert_eq!(page.facts.len(), 2);
    // A position of a store with more shards is not this one's.
    let beyond: FeedPosition = format!("v1.0:0,{}:5", shards).parse().unwrap();
    assert!(
        matches!(
            store.facts_after_position(&beyond, 10).await,
            Err(StoreError::Position(PositionError::UnknownShard { shard, shards: n }))
                if shard == shards && n == shards
        ),
        "a shard the store lacks is refused"
    );
}
