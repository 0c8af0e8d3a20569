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

use crate::store::{Bulk, GameOutcome, Tournament, TournamentFormat};
use hidden_front_tournament::standings::{Standing, standings};
use hidden_front_tournament::swiss::{self, RoundPairings};
use hidden_front_tournament::{Entrant, Outcome, Pairing, Record, TournamentError, round_robin};
use thiserror::Error;

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
    /// The rounds the tournament has in all.
    pub total: usize,
    /// Each made round's bye, if any.
    pub byes: Vec<Option<String>>,
    /// Every entrant's record over the completed rounds.
    pub records: Vec<Record>,
    /// What to do next.
    pub next: Step,
}

impl Progress {
    /// The table after the completed rounds.
    pub fn standings(&self) -> Result<Vec<Standing>, TournamentError> {
        standings(&self.records)
    }
}

/// The rounds a tournament has in all.
pub fn total_rounds(tournament: &Tournament) -> usize {
    match tournament.format {
        TournamentFormat::Swiss => tournament.rounds as usize,
        TournamentFormat::RoundRobin => round_robin::schedule(tournament.entrants.len()).len(),
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

/// Where `tournament` is, given the bulks of its rounds made so far (`rounds[0]` is round 1's),
/// and what to do next. Each round's bulk must hold exactly the pairs the rules give for it
/// after the rounds before; a round counts once every game of it has ended.
pub fn progress(tournament: &Tournament, rounds: &[Bulk]) -> Result<Progress, ProgressError> {
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
        Step::Finished
    } else {
        Step::Pair(pairing_of(tournament, &records, rounds.len() + 1)?)
    };
    Ok(Progress {
        made: rounds.len(),
        completed,
        total,
        byes,
        records,
        next,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{BulkGame, NewBulk, TournamentEntrant, round_bulk_id};

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
            entrants: (0..players)
                .map(|i| TournamentEntrant {
                    id: format!("p{i}"),
                    rating: 2000 - i as i32 * 10,
                })
                .collect(),
            created_ms: 0,
            finished_ms: None,
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
            let p = progress(&t, &rounds).unwrap();
            match p.next {
                Step::Pair(pairing) => {
                    assert_eq!(pairing.games.len(), 4);
                    let mut bulk = bulk_of(&t, rounds.len() + 1, &pairing);
                    rounds.push(bulk.clone());
                    // Made, not yet played: the tournament waits.
                    assert_eq!(progress(&t, &rounds).unwrap().next, Step::Wait);
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
        let done = progress(&t, &rounds).unwrap();
        assert_eq!((done.made, done.completed, done.total), (4, 4, 4));
        let byes: Vec<String> = done.byes.iter().flatten().cloned().collect();
        assert_eq!(byes.len(), 4);
        let distinct: std::collections::HashSet<_> = byes.iter().collect();
        assert_eq!(distinct.len(), 4, "no second bye: {byes:?}");
        let table = done.standings().unwrap();
        assert_eq!(table.len(), 9);
        // 16 games, each worth 2 half points, and 4 byes worth 2: 40 half points in all.
        assert_eq!(table.iter().map(|s| s.score_halves).sum::<u32>(), 40);
    }

    #[test]
    fn a_game_without_a_result_leaves_both_players_absent() {
        let t = tournament(TournamentFormat::Swiss, 4, 2);
        let Step::Pair(pairing) = progress(&t, &[]).unwrap().next else {
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
        let p = progress(&t, &[bulk.clone()]).unwrap();
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
        let Step::Pair(mut pairing) = progress(&t, &[]).unwrap().next else {
            panic!("round 1 is to be paired");
        };
        pairing.games.swap(0, 1);
        let bulk = bulk_of(&t, 1, &pairing);
        assert_eq!(
            progress(&t, &[bulk]),
            Err(ProgressError::Mismatch { round: 1 })
        );
    }

    #[test]
    fn a_round_robin_of_five_meets_everyone_once() {
        let t = tournament(TournamentFormat::RoundRobin, 5, 0);
        assert_eq!(total_rounds(&t), 5);
        let mut rounds = Vec::new();
        let mut met = std::collections::HashSet::new();
        while let Step::Pair(pairing) = progress(&t, &rounds).unwrap().next {
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
        assert_eq!(progress(&t, &rounds).unwrap().next, Step::Finished);
    }
}
