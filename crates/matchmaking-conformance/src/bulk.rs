//! The organisers' bulks: stored whole, retried by content, seated at their start only, never
//! once cancelled, and followed to their games' outcomes.

use super::{DEADLINE, player};
use hidden_front_matchmaking::policy::{RatingIntegrity, handle_ended_game};
use hidden_front_matchmaking::store::*;
use hidden_front_rules::Side;
use std::sync::Arc;
use tokio::sync::Barrier;
use uuid::Uuid;

/// A bulk of `pairs` fresh pairs starting at `start_ms`, asked for at 1,000 ms.
pub fn new_bulk(pairs: usize, start_ms: u64, rated: bool) -> NewBulk {
    NewBulk {
        bulk_id: format!("bulk-{}", Uuid::new_v4().simple()),
        organiser: "league-ops".into(),
        rules: "hidden-front".into(),
        time_control: "online".into(),
        rated,
        start_ms,
        created_ms: 1_000,
        pairs: (0..pairs)
            .map(|i| (player(&format!("s{i}")), player(&format!("n{i}"))))
            .collect(),
    }
}

fn match_ids(bulk: &Bulk) -> Vec<Uuid> {
    bulk.games.iter().map(|g| g.the_match.match_id).collect()
}

/// A bulk is stored with its pairs in order; a retry of the same content gets the same matches;
/// the same id with other content is `BULK_EXISTS` and changes nothing.
pub async fn bulks_are_stored_whole_and_retried_by_content(store: Arc<dyn MatchStore>) {
    let new = new_bulk(3, 10_000, true);
    let made = store.create_bulk(new.clone()).await.unwrap();
    let read = store.bulk(&new.bulk_id).await.unwrap().expect("stored");
    assert_eq!(read, made);
    assert_eq!(read.organiser, "league-ops");
    assert_eq!(
        (read.start_ms, read.created_ms, read.cancelled_ms),
        (10_000, 1_000, None)
    );
    assert!(read.rated);
    assert_eq!(read.games.len(), 3);
    for (game, (south, north)) in read.games.iter().zip(&new.pairs) {
        let m = &game.the_match;
        assert_eq!(
            (&m.south_player, &m.north_player),
            (south, north),
            "in order"
        );
        assert_eq!(m.kind, MatchKind::Bulk);
        assert_eq!(m.bulk_id.as_deref(), Some(new.bulk_id.as_str()));
        assert_eq!((m.game_id, game.outcome), (None, None));
        assert!(m.rated);
    }
    // A retry gets the same matches, not new ones.
    let again = store
        .create_bulk(NewBulk {
            created_ms: 2_000,
            ..new.clone()
        })
        .await
        .unwrap();
    assert_eq!(match_ids(&again), match_ids(&made));
    // The same id with other content is refused, and changes nothing.
    let mut swapped = new.clone();
    swapped.pairs.swap(0, 1);
    let later = NewBulk {
        start_ms: 11_000,
        ..new.clone()
    };
    let fewer = NewBulk {
        pairs: new.pairs[..2].to_vec(),
        ..new.clone()
    };
    for other in [swapped, later, fewer] {
        match store.create_bulk(other).await {
            Err(MatchError::AlreadyExists(Reason::BulkExists, message)) => {
                assert!(message.contains(&new.bulk_id), "{message}")
            }
            other => panic!("expected BULK_EXISTS, got {other:?}"),
        }
    }
    assert_eq!(store.bulk(&new.bulk_id).await.unwrap(), Some(made));
    assert_eq!(store.bulk("no-such-bulk").await.unwrap(), None);
}

/// Eight racing creations of one bulk store it once: one match per pair, every racer answered
/// with the stored matches.
pub async fn racing_creations_of_one_bulk_store_it_once(store: Arc<dyn MatchStore>) {
    let new = new_bulk(20, 10_000, false);
    let watcher = player("watcher");
    let barrier = Arc::new(Barrier::new(8));
    let racers: Vec<_> = (0..8)
        .map(|_| {
            let (store, new, barrier) = (store.clone(), new.clone(), barrier.clone());
            let notices = standings_notice(&watcher, &new.bulk_id);
            tokio::spawn(async move {
                barrier.wait().await;
                store.create_bulk_noting(new, notices).await
            })
        })
        .collect();
    let mut answers = Vec::new();
    for racer in racers {
        let bulk = tokio::time::timeout(DEADLINE, racer)
            .await
            .expect("in time")
            .unwrap()
            .expect("a retry of the same content is answered");
        answers.push(match_ids(&bulk));
    }
    let stored = match_ids(&store.bulk(&new.bulk_id).await.unwrap().unwrap());
    assert_eq!(stored.len(), 20);
    assert!(answers.iter().all(|a| *a == stored), "{answers:?}");
    let due = store.due_matches(10_000, 1_000).await.unwrap();
    assert_eq!(due.len(), 20, "one match per pair, however many racers");
    // Only the racer that stored the bulk wrote its notices.
    assert_eq!(
        standings_events(&*store, &watcher).await,
        vec![new.bulk_id.clone()],
        "the round's notices are written once"
    );
}

/// Notices of a tournament's step telling `to` about `tag` (carried as the tournament id).
fn standings_notice(to: &str, tag: &str) -> Notices {
    Notices {
        facts: Vec::new(),
        events: vec![(
            to.to_owned(),
            LobbyEventKind::TournamentStandings(Box::new(TournamentUpdate {
                tournament_id: tag.to_owned(),
                rounds_completed: 0,
                rounds: 1,
                finished: false,
                table: Vec::new(),
                you: None,
                next: None,
            })),
        )],
    }
}

/// The tags of the standings events `player` was told, in order.
async fn standings_events(store: &dyn MatchStore, player: &str) -> Vec<String> {
    store
        .lobby_events(player, 0, 100)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.kind {
            LobbyEventKind::TournamentStandings(update) => Some(update.tournament_id),
            _ => None,
        })
        .collect()
}

/// A bulk's matches are due from their start only, earliest start first, never "pending"; a
/// seated one is no longer due and its players are told, with the bulk named.
pub async fn bulk_matches_are_due_at_their_start_only(store: Arc<dyn MatchStore>) {
    let early = store.create_bulk(new_bulk(2, 10_000, false)).await.unwrap();
    let late = store.create_bulk(new_bulk(3, 20_000, false)).await.unwrap();
    assert_eq!(store.due_matches(9_999, 1_000).await.unwrap(), vec![]);
    // Never "pending": a bulk's match is not late for its game before its start.
    assert!(
        store
            .pending_matches(u64::MAX / 2)
            .await
            .unwrap()
            .is_empty()
    );
    let due: Vec<Uuid> = store
        .due_matches(10_000, 1_000)
        .await
        .unwrap()
        .iter()
        .map(|m| m.match_id)
        .collect();
    let mut expected = match_ids(&early);
    expected.sort();
    let mut got = due.clone();
    got.sort();
    assert_eq!(got, expected);
    let all = store.due_matches(25_000, 1_000).await.unwrap();
    assert_eq!(all.len(), 5);
    let early_ids = match_ids(&early);
    assert!(
        all[..2].iter().all(|m| early_ids.contains(&m.match_id)),
        "the earliest start first"
    );
    assert_eq!(store.due_matches(25_000, 4).await.unwrap().len(), 4);
    // Seated: no longer due, and both players are told, with the bulk named.
    let first = &late.games[0].the_match;
    let game = Uuid::now_v7();
    store
        .complete_match(first.match_id, game, 20_001)
        .await
        .unwrap();
    let due = store.due_matches(25_000, 1_000).await.unwrap();
    assert_eq!(due.len(), 4);
    assert!(due.iter().all(|m| m.match_id != first.match_id));
    let told = store
        .lobby_events(&first.north_player, 0, 10)
        .await
        .unwrap();
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(
        told[0].kind,
        LobbyEventKind::MatchFound {
            game_id: game,
            seat: Side::North,
            opponent: first.south_player.clone(),
            ticket_id: None,
            invite_code: None,
            bulk_id: Some(late.bulk_id.clone()),
        }
    );
    let read = store.bulk(&late.bulk_id).await.unwrap().unwrap();
    assert_eq!(read.games[0].the_match.game_id, Some(game));
    assert!(
        read.games[1..]
            .iter()
            .all(|g| g.the_match.game_id.is_none())
    );
}

/// A bulk cancelled before the margin never has a due match; within the margin, or once a game
/// of it exists, it cannot be cancelled.
pub async fn cancelled_bulks_never_start(store: Arc<dyn MatchStore>) {
    let bulk = store.create_bulk(new_bulk(2, 10_000, false)).await.unwrap();
    // Within the margin of its start: refused, and nothing changes.
    match store.cancel_bulk(&bulk.bulk_id, 6_000, 5_000).await {
        Err(MatchError::FailedPrecondition(Reason::BulkStarted, message)) => {
            assert!(message.contains(&bulk.bulk_id), "{message}")
        }
        other => panic!("expected BULK_STARTED, got {other:?}"),
    }
    assert_eq!(store.due_matches(10_000, 1_000).await.unwrap().len(), 2);
    let cancelled = store
        .cancel_bulk(&bulk.bulk_id, 4_000, 5_000)
        .await
        .unwrap();
    assert_eq!(cancelled.cancelled_ms, Some(4_000));
    assert_eq!(
        store.due_matches(u64::MAX / 2, 1_000).await.unwrap(),
        vec![]
    );
    assert!(
        store
            .pending_matches(u64::MAX / 2)
            .await
            .unwrap()
            .is_empty()
    );
    // Again, even past the start: answered as it is.
    let again = store
        .cancel_bulk(&bulk.bulk_id, 50_000, 5_000)
        .await
        .unwrap();
    assert_eq!(again.cancelled_ms, Some(4_000));
    assert_eq!(store.bulk(&bulk.bulk_id).await.unwrap(), Some(again));
    // A retry of its creation answers the cancelled bulk; it does not revive it.
    let retry = NewBulk {
        bulk_id: bulk.bulk_id.clone(),
        pairs: bulk
            .games
            .iter()
            .map(|g| {
                (
                    g.the_match.south_player.clone(),
                    g.the_match.north_player.clone(),
                )
            })
            .collect(),
        ..new_bulk(0, 10_000, false)
    };
    let revived = store.create_bulk(retry).await.unwrap();
    assert_eq!(revived.cancelled_ms, Some(4_000));
    assert_eq!(
        store.due_matches(u64::MAX / 2, 1_000).await.unwrap(),
        vec![]
    );

    // One of its games exists: it has started, whatever the clock says.
    let started = store.create_bulk(new_bulk(2, 10_000, false)).await.unwrap();
    store
        .complete_match(started.games[1].the_match.match_id, Uuid::now_v7(), 2_000)
        .await
        .unwrap();
    assert!(matches!(
        store.cancel_bulk(&started.bulk_id, 2_000, 5_000).await,
        Err(MatchError::FailedPrecondition(Reason::BulkStarted, _))
    ));
    assert!(matches!(
        store.cancel_bulk("no-such-bulk", 2_000, 5_000).await,
        Err(MatchError::NotFound(Reason::BulkNotFound, _))
    ));
}

/// A bulk game's end is kept as its outcome; a rated one settles ratings; a lost seat queues
/// nobody again.
pub async fn a_bulk_game_keeps_its_outcome_and_rating(store: Arc<dyn MatchStore>) {
    let bulk = store.create_bulk(new_bulk(2, 10_000, true)).await.unwrap();
    let mut games = Vec::new();
    for game in &bulk.games {
        let id = Uuid::now_v7();
        store
            .complete_match(game.the_match.match_id, id, 10_001)
            .await
            .unwrap();
        games.push(id);
    }
    let first = &bulk.games[0].the_match;
    let ended = EndedGame {
        game_id: games[0],
        south_player: first.south_player.clone(),
        north_player: first.north_player.clone(),
        result: EndedResult::Won(Side::North),
        plies: 80,
        decided_on_board: true,
    };
    let effect = handle_ended_game(&*store, &ended, 20_000, 30_000, &RatingIntegrity::default())
        .await
        .unwrap();
    assert!(
        effect.ratings.is_some(),
        "a rated bulk game settles ratings"
    );
    let read = store.bulk(&bulk.bulk_id).await.unwrap().unwrap();
    assert_eq!(read.games[0].outcome, Some(GameOutcome::NorthWon));
    assert_eq!(read.games[1].outcome, None, "still being played");
    assert!(store.rating(&first.north_player).await.unwrap().0.rating > 1500.0);
    let second = &bulk.games[1].the_match;
    let cancelled = EndedGame {
        game_id: games[1],
        south_player: second.south_player.clone(),
        north_player: second.north_player.clone(),
        result: EndedResult::SeatLost(vec![Side::South]),
        plies: 0,
        decided_on_board: false,
    };
    handle_ended_game(
        &*store,
        &cancelled,
        20_000,
        30_000,
        &RatingIntegrity::default(),
    )
    .await
    .unwrap();
    let read = store.bulk(&bulk.bulk_id).await.unwrap().unwrap();
    assert_eq!(read.games[1].outcome, Some(GameOutcome::SouthForfeited));
    // A bulk's player who kept the seat is not queued again: the organiser pairs, not the queue.
    assert!(
        store
            .lobby_events(&second.north_player, 0, 10)
            .await
            .unwrap()
            .iter()
            .all(|e| !matches!(e.kind, LobbyEventKind::Requeued { .. }))
    );
}

/// A tournament of `players` fresh entrants, made at 1,000 ms.
pub fn new_tournament(players: usize) -> Tournament {
    Tournament {
        tournament_id: format!("cup-{}", Uuid::new_v4().simple()),
        organiser: "league-ops".into(),
        format: TournamentFormat::Swiss,
        rounds: 3,
        rules: "hidden-front".into(),
        time_control: "online".into(),
        rated: false,
        start_ms: 5_000,
        pause_ms: 2_000,
        duration_ms: 0,
        open_to_players: false,
        allow_bots: false,
        entrants: (0..players)
            .map(|i| TournamentEntrant {
                id: player(&format!("e{i}")),
                rating: 1500 + i as i32,
            })
            .collect(),
        created_ms: 1_000,
        finished_ms: None,
        paused: Vec::new(),
    }
}

/// A tournament is stored as given, retried by content, listed while running (oldest first),
/// and finished once; each step's notices are written by the call that made it only.
pub async fn tournaments_are_stored_retried_and_finished_once(store: Arc<dyn MatchStore>) {
    let first = new_tournament(5);
    let mut second = new_tournament(4);
    second.format = TournamentFormat::Arena;
    second.rounds = 0;
    second.duration_ms = 120_000;
    second.created_ms = 2_000;
    let watcher = player("watcher");
    assert_eq!(
        store
            .create_tournament_noting(first.clone(), standings_notice(&watcher, "created"))
            .await
            .unwrap(),
        first
    );
    assert_eq!(
        store.create_tournament(second.clone()).await.unwrap(),
        second
    );
    assert_eq!(
        store.tournament(&first.tournament_id).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(store.tournament("no-such-cup").await.unwrap(), None);
    // A retry made later is the same tournament; other entrants are refused.
    let retry = Tournament {
        created_ms: 9_000,
        ..first.clone()
    };
    assert_eq!(
        store
            .create_tournament_noting(retry, standings_notice(&watcher, "retried"))
            .await
            .unwrap(),
        first
    );
    let mut other = first.clone();
    other.entrants.pop();
    assert!(matches!(
        store.create_tournament(other).await,
        Err(MatchError::AlreadyExists(Reason::TournamentExists, _))
    ));
    let running = store.running_tournaments(10).await.unwrap();
    assert_eq!(running, vec![first.clone(), second.clone()], "oldest first");
    assert_eq!(
        store.running_tournaments(1).await.unwrap(),
        vec![first.clone()]
    );
    assert!(
        store
            .finish_tournament(
                &first.tournament_id,
                50_000,
                standings_notice(&watcher, "finished")
            )
            .await
            .unwrap()
    );
    assert!(
        !store
            .finish_tournament(
                &first.tournament_id,
                60_000,
                standings_notice(&watcher, "finished again")
            )
            .await
            .unwrap(),
        "finished already"
    );
    assert_eq!(
        standings_events(&*store, &watcher).await,
        ["created", "finished"],
        "a retry and a second finish write nothing"
    );
    let finished = store
        .tournament(&first.tournament_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(finished.finished_ms, Some(50_000), "the first finish stays");
    assert_eq!(store.running_tournaments(10).await.unwrap(), vec![second]);
    assert!(matches!(
        store
            .finish_tournament("no-such-cup", 1, Notices::default())
            .await,
        Err(MatchError::NotFound(Reason::TournamentNotFound, _))
    ));
}

/// Joins and withdrawals of one tournament apply one after the other: eight players joining at
/// once are all in it, a refused change changes nothing, and an unknown tournament is named.
pub async fn entrants_change_one_at_a_time(store: Arc<dyn MatchStore>) {
    let mut open = new_tournament(0);
    open.open_to_players = true;
    store.create_tournament(open.clone()).await.unwrap();
    let barrier = Arc::new(Barrier::new(8));
    let joiners: Vec<_> = (0..8)
        .map(|i| {
            let (store, barrier, id) = (store.clone(), barrier.clone(), open.tournament_id.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let entrant = TournamentEntrant {
                    id: format!("joiner-{i}"),
                    rating: 1500,
                };
                let join = move |t: Tournament| t.joined(entrant.clone());
                store.change_entrants(&id, &join).await
            })
        })
        .collect();
    for joiner in joiners {
        tokio::time::timeout(DEADLINE, joiner)
            .await
            .expect("in time")
            .unwrap()
            .unwrap();
    }
    let stored = store
        .tournament(&open.tournament_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.entrants.len(), 8, "{:?}", stored.entrants);
    let leave = |t: Tournament| Ok(t.withdrawn("joiner-3"));
    let after = store
        .change_entrants(&open.tournament_id, &leave)
        .await
        .unwrap();
    assert_eq!(after.entrants.len(), 7);
    // A pause is stored with the entrants, and so is the return.
    let pause = |t: Tournament| Ok(t.paused_by("joiner-5"));
    store
        .change_entrants(&open.tournament_id, &pause)
        .await
        .unwrap();
    let read = |store: Arc<dyn MatchStore>, id: String| async move {
        store.tournament(&id).await.unwrap().unwrap()
    };
    assert_eq!(
        read(store.clone(), open.tournament_id.clone()).await.paused,
        ["joiner-5"]
    );
    let back = |t: Tournament| {
        let entrant = t.entrants.iter().find(|e| e.id == "joiner-5").cloned();
        t.resumed_or_joined(entrant.expect("an entrant"))
    };
    let after = store
        .change_entrants(&open.tournament_id, &back)
        .await
        .unwrap();
    assert!(after.paused.is_empty());
    assert!(
        read(store.clone(), open.tournament_id.clone())
            .await
            .paused
            .is_empty()
    );
    let refuse = |_: Tournament| {
        Err(MatchError::FailedPrecondition(
            Reason::TournamentClosed,
            "closed".into(),
        ))
    };
    assert!(matches!(
        store.change_entrants(&open.tournament_id, &refuse).await,
        Err(MatchError::FailedPrecondition(Reason::TournamentClosed, _))
    ));
    assert_eq!(
        store
            .tournament(&open.tournament_id)
            .await
            .unwrap()
            .unwrap()
            .entrants,
        after.entrants
    );
    assert!(matches!(
        store.change_entrants("no-such-cup", &leave).await,
        Err(MatchError::NotFound(Reason::TournamentNotFound, _))
    ));
}

/// A tournament's rounds are read together, more than one read's worth (256) of them, up to the
/// first round without a bulk; the rounds whose every game has ended are kept and not read again,
/// the others are read fresh each time. Also: `bulks` answers the bulks that exist, in the order
/// asked.
pub async fn tournament_rounds_are_read_together_and_ended_ones_kept(store: Arc<dyn MatchStore>) {
    use hidden_front_matchmaking::tournament::{SettledRounds, round_bulks};
    const WAVES: usize = 258;
    let mut t = new_tournament(2);
    t.format = TournamentFormat::Arena;
    t.rounds = 0;
    t.duration_ms = 3_600_000;
    store.create_tournament(t.clone()).await.unwrap();
    let (south, north) = (t.entrants[0].id.clone(), t.entrants[1].id.clone());
    let mut games = Vec::new();
    for wave in 1..=WAVES {
        let bulk = store
            .create_bulk(NewBulk {
                bulk_id: round_bulk_id(&t.tournament_id, wave),
                organiser: t.organiser.clone(),
                rules: t.rules.clone(),
                time_control: t.time_control.clone(),
                rated: false,
                start_ms: 10_000,
                created_ms: 1_000,
                pairs: vec![(south.clone(), north.clone())],
            })
            .await
            .unwrap();
        let game_id = Uuid::now_v7();
        store
            .complete_match(bulk.games[0].the_match.match_id, game_id, 10_001)
            .await
            .unwrap();
        games.push(game_id);
    }
    // A round past a missing one is not the tournament's.
    store
        .create_bulk(NewBulk {
            bulk_id: round_bulk_id(&t.tournament_id, WAVES + 2),
            ..new_bulk(1, 10_000, false)
        })
        .await
        .unwrap();
    let end = |wave: usize| {
        let store = store.clone();
        let ended = EndedGame {
            game_id: games[wave - 1],
            south_player: south.clone(),
            north_player: north.clone(),
            result: EndedResult::Won(Side::South),
            plies: 80,
            decided_on_board: true,
        };
        async move {
            handle_ended_game(&*store, &ended, 20_000, 30_000, &RatingIntegrity::default())
                .await
                .unwrap();
        }
    };
    for wave in [1, 2, 3, 257] {
        end(wave).await;
    }
    let settled = SettledRounds::default();
    let one_by_one = |store: Arc<dyn MatchStore>, t: Tournament| async move {
        let mut all = Vec::new();
        for wave in 1..=WAVES {
            let id = round_bulk_id(&t.tournament_id, wave);
            all.push(store.bulk(&id).await.unwrap().expect("made"));
        }
        all
    };
    let read = round_bulks(&*store, &t, &settled).await.unwrap();
    let plain: Vec<Bulk> = read.iter().map(|b| (**b).clone()).collect();
    assert_eq!(plain.len(), WAVES, "up to the first missing round");
    assert_eq!(plain, one_by_one(store.clone(), t.clone()).await);
    assert_eq!(settled.len(), 4, "the rounds that ended are kept");
    // A round that ends later is read fresh, then kept too.
    end(4).await;
    let again = round_bulks(&*store, &t, &settled).await.unwrap();
    assert_eq!(again[3].games[0].outcome, Some(GameOutcome::SouthWon));
    assert_eq!(again[4].games[0].outcome, None);
    assert_eq!(settled.len(), 5);
    settled.forget(&t.tournament_id);
    assert!(settled.is_empty());
    // A finished tournament's rounds are read, not kept (it is only read on request).
    let finished = Tournament {
        finished_ms: Some(50_000),
        ..t.clone()
    };
    let read_after = round_bulks(&*store, &finished, &settled).await.unwrap();
    assert_eq!(read_after.len(), WAVES);
    assert!(settled.is_empty(), "nothing kept for a finished tournament");
    // `bulks`: those that exist, in the order asked.
    let ids = [
        round_bulk_id(&t.tournament_id, 3),
        "no-such-bulk".to_owned(),
        round_bulk_id(&t.tournament_id, 1),
    ];
    let both = store.bulks(&ids).await.unwrap();
    assert_eq!(both, [plain[2].clone(), plain[0].clone()]);
    assert!(store.bulks(&[]).await.unwrap().is_empty());
}
