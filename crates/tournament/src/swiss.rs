//! Swiss pairings: each round pairs players of equal score where it can, never twice the same
//! two, with at most one bye per player, and with who moves first kept balanced.
//!
//! The rules are the main criteria of the FIDE Dutch system (C.04.3), in this order:
//! 1. *Absolute*: no two players meet twice; no player gets a second bye; in the strict pass no
//!    player's colour difference goes past ±2 nor gets the same colour three times running.
//! 2. The bye (an odd number of players) goes to the lowest ranked player who has not had one
//!    and without whom the others can still be paired.
//! 3. Players are paired inside their score group where possible (the smallest score
//!    difference first), the top half of a group against its bottom half in order (1 against
//!    n/2 + 1, 2 against n/2 + 2, ...), preferring pairs whose colour wishes agree.
//!
//! It is not a certified implementation of every Dutch rule (floaters' history and the
//! transposition order are simplified to a preference order searched with backtracking:
//! docs/tournaments.md); the invariants above are what the tests check. If the strict colour rule makes a
//! round impossible (a small field late in the event), the round is paired without it: a repeat
//! pairing or a second bye is never allowed.

use crate::{Colour, Pairing, Played, Record, TournamentError, check_records};
use std::collections::HashSet;

/// A round's pairings: the games and, with an odd number of players, who has the bye.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundPairings {
    /// The games, board 1 first (the highest ranked pairs first).
    pub games: Vec<Pairing>,
    /// Who has the bye, if anyone.
    pub bye: Option<String>,
}

/// The most candidate pairs one search tries before giving up on its pass: enough for any field
/// a Swiss is run with here (tested up to 64 players over 9 rounds), bounded so a pathological
/// input cannot spin.
const SEARCH_BUDGET: u32 = 2_000_000;

/// One player as the pairing sees them.
struct Player<'a> {
    id: &'a str,
    score: u32,
    opponents: HashSet<&'a str>,
    had_bye: bool,
    /// Games with the first move minus games with the second.
    difference: i32,
    /// The last two colours, latest first.
    last: [Option<Colour>; 2],
}

/// How strongly a player wants a colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Strength {
    None,
    Mild,
    Strong,
    Absolute,
}

impl Player<'_> {
    /// The colour this player should get next, and how strongly.
    fn wish(&self) -> (Option<Colour>, Strength) {
        let [last, before] = self.last;
        if self.difference >= 2 || (last == Some(Colour::First) && before == Some(Colour::First)) {
            return (Some(Colour::Second), Strength::Absolute);
        }
        if self.difference <= -2 || (last == Some(Colour::Second) && before == Some(Colour::Second))
        {
            return (Some(Colour::First), Strength::Absolute);
        }
        match self.difference {
            1 => (Some(Colour::Second), Strength::Strong),
            -1 => (Some(Colour::First), Strength::Strong),
            _ => match last {
                Some(colour) => (Some(colour.other()), Strength::Mild),
                None => (None, Strength::None),
            },
        }
    }
}

/// Pairs the next round of a Swiss from every entrant's record so far (all of the same length).
/// Ranking: score, then rating, then id (so the result never depends on the input's order).
pub fn pair_round(records: &[Record]) -> Result<RoundPairings, TournamentError> {
    check_records(records)?;
    if records.len() < 2 {
        return Err(TournamentError::TooFewEntrants(records.len()));
    }
    let round = records[0].rounds.len() + 1;
    let mut players: Vec<Player<'_>> = records.iter().map(player_of).collect();
    let ratings: Vec<i32> = records.iter().map(|r| r.entrant.rating).collect();
    let mut order: Vec<usize> = (0..players.len()).collect();
    order.sort_by(|&a, &b| {
        players[b]
            .score
            .cmp(&players[a].score)
            .then(ratings[b].cmp(&ratings[a]))
            .then(players[a].id.cmp(players[b].id))
    });
    // From here players are held in rank order.
    players = reorder(players, &order);

    for strict in [true, false] {
        let byes: Vec<Option<usize>> = if !players.len().is_multiple_of(2) {
            (0..players.len())
                .rev()
                .filter(|&i| !players[i].had_bye)
                .map(Some)
                .collect()
        } else {
            vec![None]
        };
        for bye in byes {
            let mut budget = SEARCH_BUDGET;
            if let Some(pairs) = pair_all(&players, bye, strict, &mut budget) {
                return Ok(RoundPairings {
                    games: pairs
                        .into_iter()
                        .enumerate()
                        .map(|(board, (a, b))| colours(&players, a, b, board))
                        .collect(),
                    bye: bye.map(|i| players[i].id.to_owned()),
                });
            }
        }
    }
    Err(TournamentError::NoPairing { round })
}

/// Adds a paired round to the records: each game with `outcome_for_first` (how it ended for the
/// player who moved first), the bye, and `Absent` for every entrant the round left out, so the
/// records stay of one length. A round naming someone who is not an entrant changes nothing.
pub fn record_round(
    records: &mut [Record],
    round: &RoundPairings,
    mut outcome_for_first: impl FnMut(&Pairing) -> crate::Outcome,
) -> Result<(), TournamentError> {
    let at = |records: &[Record], id: &str| {
        records
            .iter()
            .position(|r| r.entrant.id == id)
            .ok_or_else(|| TournamentError::NotAnEntrant(id.to_owned()))
    };
    let mut played = Vec::with_capacity(round.games.len());
    for game in &round.games {
        played.push((at(records, &game.first)?, at(records, &game.second)?));
    }
    let bye = round.bye.as_deref().map(|id| at(records, id)).transpose()?;
    let length = records.first().map_or(0, |r| r.rounds.len());
    for ((first, second), game) in played.into_iter().zip(&round.games) {
        let outcome = outcome_for_first(game);
        records[first].rounds.push(Played::Game {
            opponent: game.second.clone(),
            colour: Colour::First,
            outcome,
        });
        records[second].rounds.push(Played::Game {
            opponent: game.first.clone(),
            colour: Colour::Second,
            outcome: outcome.for_opponent(),
        });
    }
    if let Some(bye) = bye {
        records[bye].rounds.push(Played::Bye);
    }
    for record in records.iter_mut().filter(|r| r.rounds.len() == length) {
        record.rounds.push(Played::Absent);
    }
    Ok(())
}

fn player_of(record: &Record) -> Player<'_> {
    let mut difference = 0;
    let mut last = [None, None];
    for colour in record.colours() {
        difference += match colour {
            Colour::First => 1,
            Colour::Second => -1,
        };
        last = [Some(colour), last[0]];
    }
    Player {
        id: &record.entrant.id,
        score: record.half_points(),
        opponents: record
            .rounds
            .iter()
            .filter_map(|played| match played {
                Played::Game { opponent, .. } => Some(opponent.as_str()),
                _ => None,
            })
            .collect(),
        had_bye: record.had_bye(),
        difference,
        last,
    }
}

fn reorder<T>(items: Vec<T>, order: &[usize]) -> Vec<T> {
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order
        .iter()
        .map(|&i| slots[i].take().expect("each index once"))
        .collect()
}

/// Whether `a` and `b` may meet: never twice; in the strict pass, not when both must have the
/// same colour.
fn may_meet(a: &Player<'_>, b: &Player<'_>, strict: bool) -> bool {
    if a.opponents.contains(b.id) {
        return false;
    }
    if !strict {
        return true;
    }
    match (a.wish(), b.wish()) {
        ((Some(x), Strength::Absolute), (Some(y), Strength::Absolute)) => x != y,
        _ => true,
    }
}

/// Pairs every player but `bye` (indices in rank order), or `None` if no pairing obeys the
/// rules within the budget.
fn pair_all(
    players: &[Player<'_>],
    bye: Option<usize>,
    strict: bool,
    budget: &mut u32,
) -> Option<Vec<(usize, usize)>> {
    // Each player's place in its score group, for the top-half-against-bottom-half order.
    let mut group_place = vec![(0usize, 0usize); players.len()];
    let mut start = 0;
    while start < players.len() {
        let end = (start..players.len())
            .find(|&i| players[i].score != players[start].score)
            .unwrap_or(players.len());
        let members: Vec<usize> = (start..end).filter(|&i| Some(i) != bye).collect();
        for (place, &i) in members.iter().enumerate() {
            group_place[i] = (place, members.len());
        }
        start = end;
    }
    let mut paired = vec![false; players.len()];
    if let Some(bye) = bye {
        paired[bye] = true;
    }
    let mut pairs = Vec::with_capacity(players.len() / 2);
    search(
        players,
        &group_place,
        strict,
        &mut paired,
        &mut pairs,
        budget,
    )
    .then_some(pairs)
}

fn search(
    players: &[Player<'_>],
    group_place: &[(usize, usize)],
    strict: bool,
    paired: &mut [bool],
    pairs: &mut Vec<(usize, usize)>,
    budget: &mut u32,
) -> bool {
    let Some(top) = paired.iter().position(|&p| !p) else {
        return true;
    };
    paired[top] = true;
    let mut candidates: Vec<usize> = (top + 1..players.len())
        .filter(|&i| !paired[i] && may_meet(&players[top], &players[i], strict))
        .collect();
    let (place, size) = group_place[top];
    let target = if place < size / 2 {
        place + size / 2
    } else {
        place
    };
    candidates.sort_by_key(|&i| {
        let same_group = players[i].score == players[top].score;
        let distance = if same_group {
            group_place[i].0.abs_diff(target)
        } else {
            i
        };
        let colours_agree = colours_agree(&players[top], &players[i]);
        (
            players[top].score.abs_diff(players[i].score),
            !colours_agree,
            distance,
        )
    });
    for other in candidates {
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        paired[other] = true;
        pairs.push((top, other));
        if search(players, group_place, strict, paired, pairs, budget) {
            return true;
        }
        pairs.pop();
        paired[other] = false;
    }
    paired[top] = false;
    false
}

/// Whether both players can have the colour they wish for.
fn colours_agree(a: &Player<'_>, b: &Player<'_>) -> bool {
    match (a.wish().0, b.wish().0) {
        (Some(x), Some(y)) => x != y,
        _ => true,
    }
}

/// Who moves first in the game of `a` (ranked higher) and `b` on `board` (from 0): each gets
/// their wish if the wishes differ; otherwise the stronger wish wins, the higher ranked player's
/// on a tie; with no wish at all (the first round) the higher ranked player moves first on odd
/// boards (1, 3, ...) and second on even ones.
fn colours(players: &[Player<'_>], a: usize, b: usize, board: usize) -> Pairing {
    let (wish_a, strength_a) = players[a].wish();
    let (wish_b, strength_b) = players[b].wish();
    let a_colour = match (wish_a, wish_b) {
        (Some(x), Some(y)) if x != y => x,
        (Some(x), Some(y)) => {
            if strength_b > strength_a {
                y.other()
            } else {
                x
            }
        }
        (Some(x), None) => x,
        (None, Some(y)) => y.other(),
        (None, None) => {
            if board.is_multiple_of(2) {
                Colour::First
            } else {
                Colour::Second
            }
        }
    };
    let (a, b) = (players[a].id.to_owned(), players[b].id.to_owned());
    match a_colour {
        Colour::First => Pairing {
            first: a,
            second: b,
        },
        Colour::Second => Pairing {
            first: b,
            second: a,
        },
    }
}

#[cfg(test)]
mod tests;
