//! The admin part of the contract ([`hidden_front_store::AdminStore`]): finding games by every
//! criterion, newest first, paged by cursor; the audit log appended, listed newest first, followed
//! after a cursor and filtered by game.

use crate::helpers::{create_game, judge, must_load, player};
use hidden_front_rules::{Command, Phase, Side};
use hidden_front_store::{
    Append, AuditAction, AuditQuery, FoundGame, GameFilter, GameStore, NewAuditEntry, TimerChange,
};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// The ids of `found`, in order.
fn ids(found: &[FoundGame]) -> Vec<Uuid> {
    found.iter().map(|f| f.summary.meta.game_id).collect()
}

/// Every game of `filter` (which must set a player, so other checks' games stay out), read in
/// pages of two through the cursor.
async fn all_pages(store: &dyn GameStore, filter: &GameFilter) -> Vec<FoundGame> {
    let mut all: Vec<FoundGame> = Vec::new();
    loop {
        let page = store
            .find_games(&GameFilter {
                after: all.last().map(FoundGame::cursor),
                limit: 2,
                ..filter.clone()
            })
            .await
            .expect("find games");
        assert!(page.len() <= 2, "a page holds at most its limit");
        let done = page.len() < 2;
        all.extend(page);
        if done {
            return all;
        }
    }
}

/// Games found by player (either seat), phase, rule set, creation time and idleness, newest
/// first; every page boundary of the cursor loses and repeats nothing.
pub async fn find_games_by_every_criterion(store: Arc<dyn GameStore>) {
    let store = store.as_ref();
    let (sue, nat, other) = (player("sue"), player("nat"), player("other"));
    let mut games = Vec::new();
    for (i, (south, north)) in [(&sue, &nat), (&nat, &sue), (&sue, &other), (&other, &nat)]
        .into_iter()
        .enumerate()
    {
        games.push(create_game(store, 300 + i as u64, south, north).await);
    }
    // The second game goes into play.
    let (meta, game) = &games[1];
    let (after_south, mut events) = judge(game, Command::Confirm { side: Side::South }, 1);
    let (in_play, more) = judge(&after_south, Command::Confirm { side: Side::North }, 2);
    events.extend(more);
    assert_eq!(in_play.phase(), Phase::Play);
    let created_version = must_load(store, meta.game_id).await.version;
    store
        .append_armed(Append {
            game_id: meta.game_id,
            expected_version: created_version,
            events: &events,
            game: &in_play,
            command: None,
            timers: &TimerChange::none(),
            trace_parent: None,
            facts: &[],
            fired: None,
        })
        .await
        .expect("start play");

    let of_sue = GameFilter {
        player: Some(sue.clone()),
        limit: 100,
        ..GameFilter::default()
    };
    let found = store.find_games(&of_sue).await.expect("find sue's games");
    let mut expected: Vec<&FoundGame> = found.iter().collect();
    expected.sort_by_key(|f| std::cmp::Reverse((f.created_at, f.summary.meta.game_id)));
    assert_eq!(
        ids(&found),
        expected
            .iter()
            .map(|f| f.summary.meta.game_id)
            .collect::<Vec<_>>(),
        "newest first by creation, then by id"
    );
    let mut sues: Vec<Uuid> = games[..3].iter().map(|(m, _)| m.game_id).collect();
    sues.sort();
    let mut got = ids(&found);
    got.sort();
    assert_eq!(got, sues, "a player's games on either seat, and no other");
    assert_eq!(
        ids(&all_pages(store, &of_sue).await),
        ids(&found),
        "paging by cursor gives the same games in the same order"
    );
    for f in &found {
        assert!(
            f.last_event_at >= f.created_at,
            "the last event is not older than the game"
        );
    }

    // Phase, rule set.
    let playing = store
        .find_games(&GameFilter {
            phase: Some(Phase::Play),
            ..of_sue.clone()
        })
        .await
        .expect("find by phase");
    assert_eq!(ids(&playing), vec![meta.game_id], "only the game in play");
    assert_eq!(playing[0].summary.phase, Phase::Play);
    assert_eq!(
        playing[0].summary.version,
        created_version + events.len() as u64
    );
    let by_rules = store
        .find_games(&GameFilter {
            rules: Some(meta.rules.clone()),
            ..of_sue.clone()
        })
        .await
        .expect("find by rules");
    assert_eq!(by_rules.len(), 3, "every game has the default rule set");
    let no_rules = store
        .find_games(&GameFilter {
            rules: Some("no-such-rules".into()),
            ..of_sue.clone()
        })
        .await
        .expect("find by unknown rules");
    assert!(no_rules.is_empty(), "an unknown rule set matches nothing");

    // Created between: membership follows each game's own creation time.
    let middle = found[1].created_at;
    for (from, before) in [
        (Some(middle), None),
        (None, Some(middle)),
        (Some(middle), Some(middle + Duration::from_micros(1))),
    ] {
        let got = store
            .find_games(&GameFilter {
                created_from: from,
                created_before: before,
                ..of_sue.clone()
            })
            .await
            .expect("find by creation time");
        let want: Vec<Uuid> = found
            .iter()
            .filter(|f| from.is_none_or(|t| f.created_at >= t))
            .filter(|f| before.is_none_or(|t| f.created_at < t))
            .map(|f| f.summary.meta.game_id)
            .collect();
        assert_eq!(ids(&got), want, "created from {from:?} before {before:?}");
    }

    // Stuck: in play with no event since the given time (strictly older).
    let last = playing[0].last_event_at;
    let stuck = |since| GameFilter {
        idle_since: Some(since),
        ..of_sue.clone()
    };
    let at_last = store.find_games(&stuck(last)).await.expect("find stuck");
    assert!(
        at_last.is_empty(),
        "a game whose last event is at the time asked is not idle since then"
    );
    let later = store
        .find_games(&stuck(last + Duration::from_secs(3600)))
        .await
        .expect("find stuck");
    assert_eq!(
        ids(&later),
        vec![meta.game_id],
        "only games in play are stuck, never those in deployment"
    );

    // One game by id.
    let one_game = store
        .find_games(&GameFilter {
            game_id: Some(meta.game_id),
            limit: 10,
            ..GameFilter::default()
        })
        .await
        .expect("find by id");
    assert_eq!(ids(&one_game), vec![meta.game_id], "by id");
    assert_eq!(one_game[0], playing[0], "the same game reads the same");

    // Limit.
    let one = store
        .find_games(&GameFilter {
            limit: 1,
            ..of_sue.clone()
        })
        .await
        .expect("find one");
    assert_eq!(ids(&one), ids(&found[..1]), "the limit keeps the newest");
}

/// Audit entries get increasing ids and the store's time, list newest first (paged with
/// `before`), follow oldest first after a cursor, and filter by game.
pub async fn audit_log_appends_lists_and_filters(store: Arc<dyn GameStore>) {
    let store = store.as_ref();
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let mut appended = Vec::new();
    for (i, (game_id, action)) in [
        (a, AuditAction::Inspect),
        (b, AuditAction::Inspect),
        (a, AuditAction::Abort),
        (b, AuditAction::Abort),
        (a, AuditAction::Inspect),
    ]
    .into_iter()
    .enumerate()
    {
        let reason = format!("ticket {i}: ünïcode kept");
        let entry = store
            .append_audit(NewAuditEntry {
                operator: "alice",
                action,
                game_id,
                reason: &reason,
                outcome: "ok",
            })
            .await
            .expect("append an audit entry");
        assert_eq!(
            (
                entry.operator.as_str(),
                entry.action,
                entry.game_id,
                entry.reason.as_str(),
                entry.outcome.as_str()
            ),
            ("alice", action, game_id, reason.as_str(), "ok"),
            "the entry is stored as given"
        );
        if let Some(previous) = appended.last() {
            let previous: &hidden_front_store::AuditEntry = previous;
            assert!(entry.id > previous.id, "ids increase");
            assert!(entry.at >= previous.at, "times do not go back");
        }
        appended.push(entry);
    }
    let newest_first: Vec<_> = appended.iter().rev().cloned().collect();
    let all = store
        .audit_log(&AuditQuery {
            limit: 100,
            ..AuditQuery::default()
        })
        .await
        .expect("list the audit log");
    assert_eq!(all, newest_first, "newest first, as appended");
    let page = store
        .audit_log(&AuditQuery {
            before: Some(appended[3].id),
            limit: 2,
            ..AuditQuery::default()
        })
        .await
        .expect("page the audit log");
    assert_eq!(
        page,
        vec![appended[2].clone(), appended[1].clone()],
        "before a cursor"
    );
    let following = store
        .audit_log(&AuditQuery {
            after: Some(appended[1].id),
            limit: 2,
            ..AuditQuery::default()
        })
        .await
        .expect("follow the audit log");
    assert_eq!(
        following,
        vec![appended[2].clone(), appended[3].clone()],
        "after a cursor, oldest first"
    );
    let of_a = store
        .audit_log(&AuditQuery {
            game_id: Some(a),
            limit: 100,
            ..AuditQuery::default()
        })
        .await
        .expect("one game's entries");
    assert_eq!(
        of_a,
        vec![
            appended[4].clone(),
            appended[2].clone(),
            appended[0].clone()
        ],
        "only that game's entries, newest first"
    );
    let none = store
        .audit_log(&AuditQuery {
            game_id: Some(Uuid::now_v7()),
            limit: 100,
            ..AuditQuery::default()
        })
        .await
        .expect("an unknown game's entries");
    assert!(none.is_empty());
}
