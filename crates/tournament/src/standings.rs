//! Standings of a Swiss or round robin: score, then the Buchholz and Sonneborn-Berger
//! tie-breaks, then rating, then id.
//!
//! Tie-breaks count a round without a game (a bye, an absence) as a game against a virtual
//! opponent whose score is the player's own final score (as FIDE's tie-break rules of 2023 do
//! for unplayed rounds): a bye neither helps nor hurts a player's Buchholz against those who
//! played every round. Every figure is exact: scores in half points, Sonneborn-Berger in
//! quarter points.

use crate::{Outcome, Played, Record, TournamentError, check_records};

/// One line of the table.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Standing {
    /// Place, from 1 (no two share one: the last key is the id).
    pub place: usize,
    /// The player.
    pub id: String,
    /// Score in half points.
    pub score_halves: u32,
    /// Buchholz: the sum of the opponents' scores, in half points.
    pub buchholz_halves: u32,
    /// Sonneborn-Berger: the scores of the opponents beaten plus half the scores of those
    /// drawn, in quarter points.
    pub sonneborn_berger_quarters: u32,
    /// The player's rating.
    pub rating: i32,
}

/// The table after the rounds in `records` (checked as [`crate::swiss::pair_round`] checks them).
pub fn standings(records: &[Record]) -> Result<Vec<Standing>, TournamentError> {
    let index = check_records(records)?;
    let scores: Vec<u32> = records.iter().map(Record::half_points).collect();
    let mut table: Vec<Standing> = records
        .iter()
        .enumerate()
        .map(|(i, record)| {
            let own = scores[i];
            let mut buchholz = 0;
            let mut sonneborn_berger = 0;
            for played in &record.rounds {
                let (opponent_score, outcome) = match played {
                    Played::Game {
                        opponent, outcome, ..
                    } => (scores[index[opponent.as_str()]], *outcome),
                    Played::Bye => (own, Outcome::Win),
                    Played::Absent => (own, Outcome::Loss),
                };
                buchholz += opponent_score;
                sonneborn_berger += opponent_score * outcome.half_points();
            }
            Standing {
                place: 0,
                id: record.entrant.id.clone(),
                score_halves: own,
                buchholz_halves: buchholz,
                sonneborn_berger_quarters: sonneborn_berger,
                rating: record.entrant.rating,
            }
        })
        .collect();
    table.sort_by(|a, b| {
        b.score_halves
            .cmp(&a.score_halves)
            .then(b.buchholz_halves.cmp(&a.buchholz_halves))
            .then(
                b.sonneborn_berger_quarters
                    .cmp(&a.sonneborn_berger_quarters),
            )
            .then(b.rating.cmp(&a.rating))
            .then(a.id.cmp(&b.id))
    });
    for (place, standing) in table.iter_mut().enumerate() {
        standing.place = place + 1;
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Colour, Entrant};

    fn game(opponent: &str, colour: Colour, outcome: Outcome) -> Played {
        Played::Game {
            opponent: opponent.into(),
            colour,
            outcome,
        }
    }

    fn record(id: &str, rating: i32, rounds: Vec<Played>) -> Record {
        Record {
            entrant: Entrant {
                id: id.into(),
                rating,
            },
            rounds,
        }
    }

    /// Three players, two rounds, worked by hand: a beat b, b had the bye then beat... c:
    /// round 1: a–b 1–0, c bye; round 2: a–c ½–½, b bye.
    /// Scores: a 1.5, b 1, c 1.5. Buchholz: a = b 1 + c 1.5 = 2.5; c = own 1.5 (bye) + a 1.5 = 3;
    /// b = a 1.5 + own 1 (bye) = 2.5. SB: a = b 1 × 1 + c 1.5 × ½ = 1.75; c = 1.5 × 1 (bye) +
    /// a 1.5 × ½ = 2.25; b = 0 + own 1 × 1 (bye) = 1.
    #[test]
    fn tie_breaks_worked_by_hand() {
        let records = [
            record(
                "a",
                1500,
                vec![
                    game("b", Colour::First, Outcome::Win),
                    game("c", Colour::Second, Outcome::Draw),
                ],
            ),
            record(
                "b",
                1600,
                vec![game("a", Colour::Second, Outcome::Loss), Played::Bye],
            ),
            record(
                "c",
                1400,
                vec![Played::Bye, game("a", Colour::First, Outcome::Draw)],
            ),
        ];
        let table = standings(&records).unwrap();
        let line = |id: &str| table.iter().find(|s| s.id == id).unwrap().clone();
        assert_eq!((line("a").score_halves, line("a").buchholz_halves), (3, 5));
        assert_eq!((line("c").score_halves, line("c").buchholz_halves), (3, 6));
        assert_eq!(line("b").buchholz_halves, 5);
        assert_eq!(line("a").sonneborn_berger_quarters, 7);
        assert_eq!(line("c").sonneborn_berger_quarters, 9);
        assert_eq!(line("b").sonneborn_berger_quarters, 4);
        let order: Vec<&str> = table.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(order, ["c", "a", "b"], "c ahead of a on Buchholz");
        assert_eq!(table.iter().map(|s| s.place).collect::<Vec<_>>(), [1, 2, 3]);
    }

    #[test]
    fn inconsistent_records_are_refused() {
        let records = [
            record("a", 1500, vec![game("b", Colour::First, Outcome::Win)]),
            record("b", 1500, vec![game("a", Colour::First, Outcome::Loss)]),
        ];
        assert!(matches!(
            standings(&records),
            Err(TournamentError::Inconsistent { .. })
        ));
    }
}
