//! Organisers' tournaments (Swiss and round robin) run on bulks: round `n` of tournament `T` is
//! the bulk `tournament:T:round:n` ([`round_bulk_id`]). Nothing else about a tournament is
//! stored: where it is, every result and the standings are read from its rounds' bulks by
//! [`progress`], a pure function, and the next round is paired from them by
//! `hidden-front-tournament` the same way every time. So any matchmaking process may advance any
//! tournament ([`crate::MatchmakingService::pairing_round`]): two that pair the same round at
//! once make the same bulk (the second is told it exists), and a process killed mid-round leaves
//! nothing half done.
//!
//! Colours: who moves first is drawn by the referee for every game, so the "colour" a tournament
//! balances is the seat: the player paired first sits south.
//!
//! An arena's rounds are its pairing waves: while it runs, whenever at least two entrants are
//! not in a game (and [`ARENA_WAVE_EVERY`] has passed since the last wave), the waiting ones are
//! paired by `arena::pair_wave`; a wave depends on which games had ended when it was made, so
//! waves are not checked against the rules afterwards as a Swiss's rounds are.

use crate::store::{
    Bulk, GameOutcome, MatchError, MatchStore, Tournament, TournamentFormat, round_bulk_id,
};
use hidden_front_tournament::arena::{self, ArenaScore, Waiting};
use hidden_front_tournament::standings::{Standing, standings};
use hidden_front_tournament::swiss::{self, RoundPairings};
use hidden_front_tournament::{Entrant, Outcome, Pairing, Record, TournamentError, round_robin};
use std::borrow::Borrow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

/// The least time between two waves of an arena: players whose games end within it are paired
/// together rather than each with the one player who happens to wait.
pub const ARENA_WAVE_EVERY: Duration = Duration::from_secs(2);

/// Why a tournament cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProgressError {
    /// The pairing rules found no next round, or the records did not add up.
    #[error("{0}")]
    Pairing(#[from] TournamentError),
    /// A round's bulk does not hold the pairs its round is paired with: it was not made by this
    /// tournament's loop.
    #[error("round {round}'s games are not the pairs the rules give for it")]
    Mismatch {
        /// The round, from 1.
        round: usize,
    },
}

/// What to do next with a tournament.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Pair the next round (its number is [`Progress::made`] + 1) with these games and bye.
    Pair(RoundPairings),
    /// A round is being played (or waits for its start).
    Wait,
    /// Every round has been played.
    Finished,
}

/// A tournament as its rounds' bulks show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Rounds with a bulk.
    pub made: usize,
    /// Rounds whose every game has ended.
    pub completed: usize,
    /// The rounds the tournament has in all (an arena: the waves made so far).
    pub total: usize,
    /// Each made round's bye, if any.
    pub byes: Vec<Option<String>>,
    /// Every entrant's record over the completed rounds (an arena keeps none: its table is
    /// scored game by game).
    pub records: Vec<Record>,
    /// The table after the completed rounds (an arena: after every ended game). An arena's
    /// points (a win 2, a draw 1, doubled on a streak) are its score in half points; it has no
    /// tie-breaks but the rating.
    pub table: Vec<Standing>,
    /// What to do next.
    pub next: Step,
}

/// Rounds read this many at a time ([`round_bulks`]).
const ROUNDS_PER_READ: usize = 256;

/// Tournaments' rounds whose every game has ended, kept by this process: such a round never
/// changes again (an outcome is written once; a round's bulk cannot be cancelled), so
/// [`round_bulks`] reads only the rounds still being played. Why: an arena pairs a wave every
/// few seconds, and reading every wave again on each loop round grows with its history.
#[derive(Debug, Default)]
pub struct SettledRounds {
    /// By tournament id, then round number (from 1).
    rounds: parking_lot::Mutex<HashMap<String, HashMap<usize, Arc<Bulk>>>>,
}

impl SettledRounds {
    /// Drops what is kept of a tournament (once it has finished).
    pub fn forget(&self, tournament_id: &str) {
        self.rounds.lock().remove(tournament_id);
    }

    /// Rounds kept, over every tournament.
    pub fn len(&self) -> usize {
        self.rounds.lock().values().map(HashMap::len).sum()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The bulks of `tournament`'s rounds made so far, round 1's first: up to the first round
/// without a bulk, or the tournament's last. Rounds `settled` keeps are not read again; the
/// others are read [`ROUNDS_PER_READ`] at a time, and those found settled are kept while the
/// tournament runs.
pub async fn round_bulks(
    store: &dyn MatchStore,
    tournament: &Tournament,
    settled: &SettledRounds,
) -> Result<Vec<Arc<Bulk>>, MatchError> {
    let total = total_rounds(tournament);
    let id = &tournament.tournament_id;
    let mut rounds: Vec<Arc<Bulk>> = Vec::new();
    while rounds.len() < total {
        let first = rounds.len() + 1;
        let last = (first + ROUNDS_PER_READ - 1).min(total);
        let kept: HashMap<usize, Arc<Bulk>> = {
            let all = settled.rounds.lock();
            let of_this = all.get(id);
            (first..=last)
                .filter_map(|n| of_this.and_then(|r| r.get(&n)).map(|b| (n, Arc::clone(b))))
                .collect()
        };
        let wanted: Vec<String> = (first..=last)
            .filter(|n| !kept.contains_key(n))
            .map(|n| round_bulk_id(id, n))
            .collect();
        let mut read: HashMap<String, Arc<Bulk>> = store
            .bulks(&wanted)
            .await?
            .into_iter()
            .map(|b| (b.bulk_id.clone(), Arc::new(b)))
            .collect();
        let mut newly_settled = Vec::new();
        for n in first..=last {
            let bulk = match kept.get(&n) {
                Some(bulk) => Arc::clone(bulk),
                None => match read.remove(&round_bulk_id(id, n)) {
                    Some(bulk) => {
                        if bulk.games.iter().all(|g| g.outcome.is_some()) {
                            newly_settled.push((n, Arc::clone(&bulk)));
                        }
                        bulk
                    }
                    None => break,
                },
            };
            rounds.push(bulk);
        }
        // A finished tournament is read on request only (`GetTournament`): nothing is kept for
        // it, or every finished tournament asked about once would stay in memory.
        if !newly_settled.is_empty() && tournament.finished_ms.is_none() {
            settled
                .rounds
                .lock()
                .entry(id.clone())
                .or_default()
                .extend(newly_settled);
        }
        if rounds.len() < last {
            break;
        }
    }
    Ok(rounds)
}

/// The rounds a tournament has in all: the most rounds to read for it (an arena's waves have no
/// fixed number).
pub fn total_rounds(tournament: &Tournament) -> usize {
    match tournament.format {
        // No two meet twice: at most one round fewer than the entrants (a tournament open to
        // players may start with fewer than its organiser planned for).
        TournamentFormat::Swiss => {
            (tournament.rounds as usize).min(tournament.entrants.len().saturating_sub(1))
        }
        TournamentFormat::RoundRobin => round_robin::schedule(tournament.entrants.len()).len(),
        TournamentFormat::Arena => usize::MAX,
    }
}

/// Round `round`'s (from 1) pairing after the rounds in `records`.
fn pairing_of(
    tournament: &Tournament,
    records: &[Record],
    round: usize,
) -> Result<RoundPairings, TournamentError> {
    match tournament.format {
        TournamentFormat::Swiss => swiss::pair_round(records),
        // An arena pairs waves of whoever waits (`arena_progress`), never rounds.
        TournamentFormat::Arena => Err(TournamentError::NoPairing { round }),
        TournamentFormat::RoundRobin => {
            let schedule = round_robin::schedule(tournament.entrants.len());
            let id = |i: usize| tournament.entrants[i].id.clone();
            let this = schedule
                .get(round - 1)
                .ok_or(TournamentError::NoPairing { round })?;
            Ok(RoundPairings {
                games: this
                    .games
                    .iter()
                    .map(|&(first, second)| Pairing {
                        first: id(first),
                        second: id(second),
                    })
                    .collect(),
                bye: this.bye.map(id),
            })
        }
    }
}

/// How a game ended for the player who sat south (the pairing's first); `None` when it has no
/// result (both seats lost, or stopped by an operator): both players are then absent that round.
fn outcome_for_south(outcome: GameOutcome) -> Option<Outcome> {
    match outcome {
        GameOutcome::SouthWon | GameOutcome::NorthForfeited => Some(Outcome::Win),
        GameOutcome::NorthWon | GameOutcome::SouthForfeited => Some(Outcome::Loss),
        GameOutcome::Drawn => Some(Outcome::Draw),
        GameOutcome::Cancelled | GameOutcome::Aborted => None,
    }
}

/// Where `tournament` is at `now_ms`, given the bulks of its rounds made so far (`rounds[0]` is
/// round 1's), and what to do next. A Swiss's or round robin's round must hold exactly the pairs
/// the rules give for it after the rounds before, and counts once every game of it has ended.
pub fn progress<B: Borrow<Bulk>>(
    tournament: &Tournament,
    rounds: &[B],
    now_ms: u64,
) -> Result<Progress, ProgressError> {
    if tournament.format == TournamentFormat::Arena {
        return arena_progress(tournament, rounds, now_ms);
    }
    let total = total_rounds(tournament);
    let mut records: Vec<Record> = tournament
        .entrants
        .iter()
        .map(|e| Record {
            entrant: Entrant {
                id: e.id.clone(),
                rating: e.rating,
            },
            rounds: Vec::new(),
        })
        .collect();
    let mut byes = Vec::with_capacity(rounds.len());
    let mut completed = 0;
    for (index, bulk) in rounds.iter().enumerate() {
        let bulk: &Bulk = bulk.borrow();
        let round = index + 1;
        let pairing = pairing_of(tournament, &records, round)?;
        let same = pairing.games.len() == bulk.games.len()
            && pairing.games.iter().zip(&bulk.games).all(|(p, g)| {
                p.first == g.the_match.south_player && p.second == g.the_match.north_player
            });
        if !same {
            return Err(ProgressError::Mismatch { round });
        }
        byes.push(pairing.bye.clone());
        let Some(outcomes) = bulk
            .games
            .iter()
            .map(|g| g.outcome)
            .collect::<Option<Vec<GameOutcome>>>()
        else {
            return Ok(Progress {
                made: rounds.len(),
                completed,
                total,
                byes,
                table: standings(&records)?,
                records,
                next: Step::Wait,
            });
        };
        // Games without a result leave both players out of the round: absent.
        let mut decided = Vec::new();
        let mut results = std::collections::HashMap::new();
        for (game, outcome) in pairing.games.iter().zip(outcomes) {
            if let Some(result) = outcome_for_south(outcome) {
                results.insert(game.first.clone(), result);
                decided.push(game.clone());
            }
        }
        let played = RoundPairings {
            games: decided,
            bye: pairing.bye,
        };
        // Every decided game is in `results` by its first player, who plays once a round.
        swiss::record_round(&mut records, &played, |game| {
            results.get(&game.first).copied().unwrap_or(Outcome::Draw)
        })?;
        completed += 1;
    }
    let next = if rounds.len() >= total {
        // Too few entrants for a single round: over at its start (not before: players of a
        // tournament open to them may still come).
        if rounds.is_empty() && now_ms < tournament.start_ms {
            Step::Wait
        } else {
            Step::Finished
        }
    } else {
        Step::Pair(pairing_of(tournament, &records, rounds.len() + 1)?)
    };
    Ok(Progress {
        made: rounds.len(),
        completed,
        total,
        byes,
        table: standings(&records)?,
        records,
        next,
    })
}

/// An arena's [`progress`]: every ended game scored in order, the players not in a game paired
/// in a wave while the arena runs, finished once it is over and its last games have ended.
fn arena_progress<B: Borrow<Bulk>>(
    t: &Tournament,
    waves: &[B],
    now_ms: u64,
) -> Result<Progress, ProgressError> {
    let index: HashMap<&str, usize> = t
        .entrants
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i))
        .collect();
    let n = t.entrants.len();
    let mut score = vec![ArenaScore::default(); n];
    let mut last_opponent: Vec<Option<String>> = vec![None; n];
    let mut south_minus_north = vec![0i32; n];
    let mut busy = vec![false; n];
    let mut completed = 0;
    for (k, wave) in waves.iter().enumerate() {
        let wave: &Bulk = wave.borrow();
        let mut ended = true;
        for game in &wave.games {
            let m = &game.the_match;
            let (Some(&south), Some(&north)) = (
                index.get(m.south_player.as_str()),
                index.get(m.north_player.as_str()),
            ) else {
                return Err(ProgressError::Mismatch { round: k + 1 });
            };
            south_minus_north[south] += 1;
            south_minus_north[north] -= 1;
            last_opponent[south] = Some(m.north_player.clone());
            last_opponent[north] = Some(m.south_player.clone());
            match game.outcome {
                None => {
                    busy[south] = true;
                    busy[north] = true;
                    ended = false;
                }
                // Games are scored in wave order, which is each player's order of play: a
                // player is in one game at a time.
                Some(outcome) => {
                    if let Some(result) = outcome_for_south(outcome) {
                        score[south].record(result);
                        score[north].record(result.for_opponent());
                    }
                }
            }
        }
        if ended {
            completed += 1;
        }
    }
    let end_ms = t.start_ms.saturating_add(t.duration_ms);
    let every = u64::try_from(ARENA_WAVE_EVERY.as_millis()).unwrap_or(u64::MAX);
    let next = if now_ms >= end_ms {
        if busy.iter().any(|b| *b) {
            Step::Wait
        } else {
            Step::Finished
        }
    } else if now_ms < t.start_ms
        || waves
            .last()
            .is_some_and(|w| now_ms < w.borrow().start_ms.saturating_add(every))
    {
        Step::Wait
    } else {
        let paused: std::collections::HashSet<&str> = t.paused.iter().map(String::as_str).collect();
        let waiting: Vec<Waiting> = (0..n)
            .filter(|&i| !busy[i] && !paused.contains(t.entrants[i].id.as_str()))
            .map(|i| Waiting {
                id: t.entrants[i].id.clone(),
                points: score[i].points,
                rating: t.entrants[i].rating,
                last_opponent: last_opponent[i].clone(),
                first_minus_second: south_minus_north[i],
            })
            .collect();
        let wave = arena::pair_wave(&waiting);
        if wave.games.is_empty() {
            Step::Wait
        } else {
            Step::Pair(RoundPairings {
                games: wave.games,
                bye: None,
            })
        }
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        score[b]
            .points
            .cmp(&score[a].points)
            .then(t.entrants[b].rating.cmp(&t.entrants[a].rating))
            .then(t.entrants[a].id.cmp(&t.entrants[b].id))
    });
    let table = order
        .iter()
        .enumerate()
        .map(|(place, &i)| Standing {
            place: place + 1,
            id: t.entrants[i].id.clone(),
            score_halves: score[i].points,
            buchholz_halves: 0,
            sonneborn_berger_quarters: 0,
            rating: t.entrants[i].rating,
        })
        .collect();
    Ok(Progress {
        made: waves.len(),
        completed,
        total: waves.len(),
        byes: vec![None; waves.len()],
        records: Vec::new(),
        table,
        next,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{BulkGame, NewBulk, Reason, TournamentEntrant, round_bulk_id};

    /// No round made yet.
    const NO_ROUNDS: &[Bulk] = &[];

    fn tournament(format: TournamentFormat, players: usize, rounds: u32) -> Tournament {
        Tournament {
            tournament_id: "t".into(),
            organiser: "ops".into(),
            format,
            rounds,
            rules: "hidden-front".into(),
            time_control: "online".into(),
            rated: false,
            start_ms: 1_000,
            pause_ms: 0,
            duration_ms: 0,
            open_to_players: false,
            allow_bots: false,
            entrants: (0..players)
                .map(|i| TournamentEntrant {
                    id: format!("p{i}"),
                    rating: 2000 - i as i32 * 10,
                })
                .collect(),
            created_ms: 0,
            finished_ms: None,
            paused: Vec::new(),
        }
    }

    /// The bulk a loop makes of a paired round.
    fn bulk_of(t: &Tournament, round: usize, pairing: &RoundPairings) -> Bulk {
        Bulk::of_new(&NewBulk {
            bulk_id: round_bulk_id(&t.tournament_id, round),
            organiser: t.organiser.clone(),
            rules: t.rules.clone(),
            time_control: t.time_control.clone(),
            rated: t.rated,
            start_ms: 0,
            created_ms: 0,
            pairs: pairing
                .games
                .iter()
                .map(|p| (p.first.clone(), p.second.clone()))
                .collect(),
        })
    }

    fn end_all(bulk: &mut Bulk, outcome: impl Fn(usize, &BulkGame) -> GameOutcome) {
        for i in 0..bulk.games.len() {
            let o = outcome(i, &bulk.games[i]);
            bulk.games[i].outcome = Some(o);
        }
    }

    #[test]
    fn a_swiss_of_nine_runs_four_rounds_with_four_byes() {
        let t = tournament(TournamentFormat::Swiss, 9, 4);
        let mut rounds: Vec<Bulk> = Vec::new();
        loop {
            let p = progress(&t, &rounds, 0).unwrap();
            match p.next {
                Step::Pair(pairing) => {
                    assert_eq!(pairing.games.len(), 4);
                    let mut bulk = bulk_of(&t, rounds.len() + 1, &pairing);
                    rounds.push(bulk.clone());
                    // Made, not yet played: the tournament waits.
                    assert_eq!(progress(&t, &rounds, 0).unwrap().next, Step::Wait);
                    // The higher seat wins on odd boards, draws elsewhere; one forfeit.
                    end_all(&mut bulk, |i, _| match i {
                        0 => GameOutcome::SouthWon,
                        1 => GameOutcome::NorthForfeited,
                        _ => GameOutcome::Drawn,
                    });
                    *rounds.last_mut().unwrap() = bulk;
                }
                Step::Finished => break,
                Step::Wait => panic!("every round was played"),
            }
        }
        let done = progress(&t, &rounds, 0).unwrap();
        assert_eq!((done.made, done.completed, done.total), (4, 4, 4));
        let byes: Vec<String> = done.byes.iter().flatten().cloned().collect();
        assert_eq!(byes.len(), 4);
        let distinct: std::collections::HashSet<_> = byes.iter().collect();
        assert_eq!(distinct.len(), 4, "no second bye: {byes:?}");
        let table = done.table.clone();
        assert_eq!(table.len(), 9);
        // 16 games, each worth 2 half points, and 4 byes worth 2: 40 half points in all.
        assert_eq!(table.iter().map(|s| s.score_halves).sum::<u32>(), 40);
    }

    #[test]
    fn a_game_without_a_result_leaves_both_players_absent() {
        let t = tournament(TournamentFormat::Swiss, 4, 2);
        let Step::Pair(pairing) = progress(&t, NO_ROUNDS, 0).unwrap().next else {
            panic!("round 1 is to be paired");
        };
        let mut bulk = bulk_of(&t, 1, &pairing);
        end_all(&mut bulk, |i, _| {
            if i == 0 {
                GameOutcome::Aborted
            } else {
                GameOutcome::SouthWon
            }
        });
        let p = progress(&t, &[bulk.clone()], 0).unwrap();
        assert_eq!(p.completed, 1);
        let first = &bulk.games[0].the_match;
        for record in &p.records {
            let absent =
                record.entrant.id == first.south_player || record.entrant.id == first.north_player;
            assert_eq!(
                record.rounds[0] == hidden_front_tournament::Played::Absent,
                absent,
                "{record:?}"
            );
        }
    }

    #[test]
    fn a_round_not_made_by_the_rules_is_refused() {
        let t = tournament(TournamentFormat::Swiss, 4, 2);
        let Step::Pair(mut pairing) = progress(&t, NO_ROUNDS, 0).unwrap().next else {
            panic!("round 1 is to be paired");
        };
        pairing.games.swap(0, 1);
        let bulk = bulk_of(&t, 1, &pairing);
        assert_eq!(
            progress(&t, &[bulk], 0),
            Err(ProgressError::Mismatch { round: 1 })
        );
    }

    /// A wave's bulk, started at `start_ms`.
    fn wave(t: &Tournament, k: usize, pairing: &RoundPairings, start_ms: u64) -> Bulk {
        let mut bulk = bulk_of(t, k, pairing);
        bulk.start_ms = start_ms;
        bulk
    }

    #[test]
    fn an_arena_pairs_waves_while_it_runs_and_scores_streaks() {
        let mut t = tournament(TournamentFormat::Arena, 4, 0);
        t.duration_ms = 60_000;
        let end = t.start_ms + t.duration_ms;
        assert_eq!(
            progress(&t, NO_ROUNDS, 500).unwrap().next,
            Step::Wait,
            "before its start"
        );
        let Step::Pair(first) = progress(&t, NO_ROUNDS, 1_000).unwrap().next else {
            panic!("everyone waits at the start");
        };
        assert_eq!(first.games.len(), 2);
        let mut waves = vec![wave(&t, 1, &first, 1_000)];
        assert_eq!(
            progress(&t, &waves, 1_500).unwrap().next,
            Step::Wait,
            "too soon"
        );
        assert_eq!(
            progress(&t, &waves, 9_000).unwrap().next,
            Step::Wait,
            "all busy"
        );
        // Board 1 ends; its two players are the only ones waiting: they meet again (nobody
        // else waits), south winning every time.
        let winner = first.games[0].first.clone();
        waves[0].games[0].outcome = Some(GameOutcome::SouthWon);
        for k in 2..=4 {
            let Step::Pair(again) = progress(&t, &waves, 1_000 + k as u64 * 3_000).unwrap().next
            else {
                panic!("the two waiting players are paired");
            };
            assert_eq!(again.games.len(), 1);
            let mut next = wave(&t, k, &again, 1_000 + k as u64 * 3_000);
            let south_won = next.games[0].the_match.south_player == winner;
            next.games[0].outcome = Some(if south_won {
                GameOutcome::SouthWon
            } else {
                GameOutcome::NorthWon
            });
            waves.push(next);
        }
        let p = progress(&t, &waves, 20_000).unwrap();
        let top = &p.table[0];
        assert_eq!(top.id, winner);
        // Four wins: 2 + 2, then on a streak 4 + 4, in half points.
        assert_eq!(top.score_halves, 12);
        // Over: nothing more is paired; it finishes once board 2 of wave 1 ends.
        assert_eq!(progress(&t, &waves, end).unwrap().next, Step::Wait);
        waves[0].games[1].outcome = Some(GameOutcome::Drawn);
        assert_eq!(progress(&t, &waves, end).unwrap().next, Step::Finished);
        assert!(matches!(
            progress(&t, &waves, end - 1).unwrap().next,
            Step::Pair(_)
        ));
    }

    #[test]
    fn a_paused_arena_entrant_is_in_no_wave_until_they_resume_and_keeps_their_points() {
        let mut t = tournament(TournamentFormat::Arena, 5, 0);
        t.duration_ms = 60_000;
        let Step::Pair(first) = progress(&t, NO_ROUNDS, 1_000).unwrap().next else {
            panic!("the start pairs a wave");
        };
        let mut waves = vec![wave(&t, 1, &first, 1_000)];
        end_all(&mut waves[0], |_, _| GameOutcome::SouthWon);
        let winner = first.games[0].first.clone();
        t = t.paused_by(&winner);
        let p = progress(&t, &waves, 5_000).unwrap();
        let Step::Pair(second) = p.next else {
            panic!("the others are paired");
        };
        let paired: Vec<&String> = second
            .games
            .iter()
            .flat_map(|g| [&g.first, &g.second])
            .collect();
        assert!(!paired.contains(&&winner), "{winner} paused: {paired:?}");
        assert_eq!(paired.len(), 4, "everyone else plays");
        let line = p
            .table
            .iter()
            .find(|s| s.id == winner)
            .expect("in the table");
        assert_eq!(line.score_halves, 2, "a paused entrant keeps their points");
        // Pausing twice is one pause; joining again resumes.
        t = t.paused_by(&winner);
        assert_eq!(t.paused, std::slice::from_ref(&winner));
        let entrant = t.entrants.iter().find(|e| e.id == winner).unwrap().clone();
        t = t.resumed_or_joined(entrant).unwrap();
        assert!(t.paused.is_empty());
        let Step::Pair(back) = progress(&t, &waves, 5_000).unwrap().next else {
            panic!("paired again");
        };
        assert!(
            back.games
                .iter()
                .any(|g| g.first == winner || g.second == winner),
            "{back:?}"
        );
    }

    #[test]
    fn an_arena_under_way_takes_latecomers_only_when_open_to_players() {
        let mut t = tournament(TournamentFormat::Arena, 4, 0);
        t.duration_ms = 60_000;
        t.start_ms = 100_000;
        let margin = 5_000;
        assert!(!t.is_arena_under_way(t.start_ms - margin - 1, margin));
        assert!(t.is_arena_under_way(t.start_ms, margin));
        assert!(
            !t.is_arena_under_way(t.start_ms + t.duration_ms, margin),
            "over"
        );
        let late = TournamentEntrant {
            id: "late".into(),
            rating: 1500,
        };
        assert!(matches!(
            t.clone().resumed_or_joined(late.clone()),
            Err(MatchError::FailedPrecondition(Reason::TournamentClosed, _))
        ));
        t.open_to_players = true;
        let joined = t.clone().resumed_or_joined(late).unwrap();
        assert_eq!(joined.entrants.len(), 5);
        // Pausing someone not in it changes nothing.
        assert_eq!(t.clone().paused_by("stranger"), t);
        let mut swiss = tournament(TournamentFormat::Swiss, 4, 3);
        swiss.duration_ms = 60_000;
        assert!(!swiss.is_arena_under_way(swiss.start_ms, margin));
    }

    #[test]
    fn a_round_robin_of_five_meets_everyone_once() {
        let t = tournament(TournamentFormat::RoundRobin, 5, 0);
        assert_eq!(total_rounds(&t), 5);
        let mut rounds = Vec::new();
        let mut met = std::collections::HashSet::new();
        while let Step::Pair(pairing) = progress(&t, &rounds, 0).unwrap().next {
            for game in &pairing.games {
                let mut pair = [game.first.clone(), game.second.clone()];
                pair.sort();
                assert!(met.insert(pair), "a repeat pairing");
            }
            let mut bulk = bulk_of(&t, rounds.len() + 1, &pairing);
            end_all(&mut bulk, |_, _| GameOutcome::NorthWon);
            rounds.push(bulk);
        }
        assert_eq!(met.len(), 10);
        assert_eq!(progress(&t, &rounds, 0).unwrap().next, Step::Finished);
    }
}
