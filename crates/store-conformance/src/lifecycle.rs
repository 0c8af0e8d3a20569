//! The lifecycle outbox: facts commit with the events that cause them, or not at all, and a
//! follower reading from a cursor sees every fact exactly once, in commit order, even while many
//! games write at once.

use crate::helpers::*;
use crate::{RACE_DEADLINE, WAKE_DEADLINE};
use hidden_front_rules::{EndReason, Side};
use hidden_front_store::lifecycle::{Fact, FactBody, NewFact};
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
