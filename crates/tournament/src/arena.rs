//! Arenas: for a fixed duration, whoever finishes a game waits to be paired again at once with
//! another waiting player of similar score and rating, and every game scores.
//!
//! Scores per game: a win 2, a draw 1, a loss 0. Two wins in a row put a player on a streak:
//! while on it a win scores 4 and a draw 2, and any game not won ends it (the arena rule of
//! large chess sites, which rewards playing on over waiting on a lead).

use crate::{Colour, Outcome, Pairing};
use std::collections::HashSet;

/// One arena player's score so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArenaScore {
    /// Points.
    pub points: u32,
    /// Wins in a row up to now.
    pub wins_in_a_row: u32,
}

impl ArenaScore {
    /// Whether the next game scores double.
    pub fn on_streak(&self) -> bool {
        self.wins_in_a_row >= 2
    }

    /// Counts one finished game; the points it scored.
    pub fn record(&mut self, outcome: Outcome) -> u32 {
        let base = outcome.half_points();
        let points = if self.on_streak() { base * 2 } else { base };
        self.points += points;
        self.wins_in_a_row = match outcome {
            Outcome::Win => self.wins_in_a_row + 1,
            Outcome::Draw | Outcome::Loss => 0,
        };
        points
    }
}

/// A player waiting for their next arena game.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The player's id.
    pub id: String,
    /// Their arena points.
    pub points: u32,
    /// Their rating.
    pub rating: i32,
    /// Whom they played last, if anyone.
    pub last_opponent: Option<String>,
    /// Their games moving first minus their games moving second in this arena.
    pub first_minus_second: i32,
}

/// How far down the waiting list a player looks for an opponent other than their last one:
/// similar players are near in the list, and the wave stays linear in the players waiting.
const LOOK_AHEAD: usize = 16;

/// One pairing wave: the waiting players ranked by points, then rating (then id), each paired
/// with the nearest player below them who is not the one they just played; the same two meet
/// twice in a row only when nobody else waits. Whoever has moved first less often moves first
/// (the higher ranked on a tie). The players left over (an odd one out) come back in `waiting`.
pub fn pair_wave(waiting: &[Waiting]) -> Wave {
    let mut order: Vec<&Waiting> = waiting.iter().collect();
    order.sort_by(|a, b| {
        b.points
            .cmp(&a.points)
            .then(b.rating.cmp(&a.rating))
            .then(a.id.cmp(&b.id))
    });
    let mut seen = HashSet::new();
    order.retain(|w| seen.insert(w.id.as_str()));
    let just_played = |a: &Waiting, b: &Waiting| {
        a.last_opponent.as_deref() == Some(b.id.as_str())
            || b.last_opponent.as_deref() == Some(a.id.as_str())
    };
    let mut paired = vec![false; order.len()];
    let mut games = Vec::with_capacity(order.len() / 2);
    for i in 0..order.len() {
        if paired[i] {
            continue;
        }
        let mut fresh = (i + 1..order.len())
            .filter(|&j| !paired[j])
            .take(LOOK_AHEAD)
            .filter(|&j| !just_played(order[i], order[j]));
        let chosen = fresh.next().or_else(|| {
            // Only their last opponent is near: pair them again only if nobody else waits.
            let rest: Vec<usize> = (i + 1..order.len()).filter(|&j| !paired[j]).collect();
            match rest.as_slice() {
                [only] if paired.iter().filter(|p| !**p).count() == 2 => Some(*only),
                _ => rest
                    .iter()
                    .copied()
                    .find(|&j| !just_played(order[i], order[j])),
            }
        });
        if let Some(j) = chosen {
            paired[i] = true;
            paired[j] = true;
            let (a, b) = (order[i], order[j]);
            let a_first = a.first_minus_second <= b.first_minus_second;
            let colour = if a_first {
                Colour::First
            } else {
                Colour::Second
            };
            games.push(match colour {
                Colour::First => Pairing {
                    first: a.id.clone(),
                    second: b.id.clone(),
                },
                Colour::Second => Pairing {
                    first: b.id.clone(),
                    second: a.id.clone(),
                },
            });
        }
    }
    Wave {
        games,
        waiting: order
            .iter()
            .zip(&paired)
            .filter(|(_, p)| !**p)
            .map(|(w, _)| w.id.clone())
            .collect(),
    }
}

/// What one pairing wave made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wave {
    /// The games to start now.
    pub games: Vec<Pairing>,
    /// Who still waits for the next wave.
    pub waiting: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(id: &str, points: u32, rating: i32, last: Option<&str>) -> Waiting {
        Waiting {
            id: id.into(),
            points,
            rating,
            last_opponent: last.map(str::to_owned),
            first_minus_second: 0,
        }
    }

    #[test]
    fn two_wins_in_a_row_double_the_next_games_until_one_is_not_won() {
        let mut score = ArenaScore::default();
        let gained: Vec<u32> = [
            Outcome::Win,
            Outcome::Win,
            Outcome::Win,
            Outcome::Draw,
            Outcome::Win,
            Outcome::Win,
            Outcome::Draw,
            Outcome::Loss,
        ]
        .into_iter()
        .map(|o| score.record(o))
        .collect();
        assert_eq!(gained, [2, 2, 4, 2, 2, 2, 2, 0]);
        assert_eq!(score.points, 16);
        assert!(!score.on_streak());
    }

    #[test]
    fn players_of_similar_score_meet_and_not_the_same_opponent_twice_running() {
        let wave = pair_wave(&[
            waiting("a", 10, 1500, Some("b")),
            waiting("b", 10, 1490, Some("a")),
            waiting("c", 9, 1600, None),
            waiting("d", 2, 1500, None),
        ]);
        let pairs: HashSet<(String, String)> = wave
            .games
            .iter()
            .map(|g| {
                let mut p = [g.first.clone(), g.second.clone()];
                p.sort();
                (p[0].clone(), p[1].clone())
            })
            .collect();
        assert_eq!(
            pairs,
            HashSet::from([
                ("a".to_owned(), "c".to_owned()),
                ("b".to_owned(), "d".to_owned())
            ])
        );
        assert!(wave.waiting.is_empty());
    }

    #[test]
    fn the_same_two_meet_again_only_when_nobody_else_waits() {
        let alone = pair_wave(&[
            waiting("a", 4, 1500, Some("b")),
            waiting("b", 4, 1500, Some("a")),
        ]);
        assert_eq!(alone.games.len(), 1);
        let odd = pair_wave(&[
            waiting("a", 4, 1500, Some("b")),
            waiting("b", 4, 1500, Some("a")),
            waiting("c", 0, 1500, Some("x")),
        ]);
        assert_eq!(odd.games.len(), 1);
        let game = &odd.games[0];
        assert!(
            !(game.first == "a" && game.second == "b" || game.first == "b" && game.second == "a"),
            "{game:?}: a and b again while c waits"
        );
        assert_eq!(odd.waiting.len(), 1);
    }

    #[test]
    fn the_player_who_moved_first_less_often_moves_first() {
        let mut a = waiting("a", 4, 1500, None);
        a.first_minus_second = 1;
        let b = waiting("b", 4, 1400, None);
        let wave = pair_wave(&[a, b]);
        assert_eq!(wave.games[0].first, "b");
    }

    #[test]
    fn a_wave_of_ten_thousand_pairs_everyone_but_none_twice() {
        let players: Vec<Waiting> = (0..10_000)
            .map(|i| {
                let last = format!("p{}", i ^ 1);
                waiting(
                    &format!("p{i}"),
                    (i % 37) as u32,
                    1200 + (i % 800),
                    Some(&last),
                )
            })
            .collect();
        let wave = pair_wave(&players);
        assert_eq!(wave.games.len(), 5_000);
        let mut seen = HashSet::new();
        for game in &wave.games {
            assert!(seen.insert(game.first.clone()) && seen.insert(game.second.clone()));
            let (a, b): (usize, usize) = (
                game.first[1..].parse().unwrap(),
                game.second[1..].parse().unwrap(),
            );
            assert_ne!(a ^ 1, b, "{game:?}: last opponents again");
        }
    }
}
