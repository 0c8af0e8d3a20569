//! Round robins by Berger tables: every entrant meets every other once, in n − 1 rounds (n
//! rounds with a bye when n is odd), with who moves first balanced.

/// One round of a round robin, by entrant index (0-based, in the order given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Round {
    /// The games: `(first, second)`, `first` moving first.
    pub games: Vec<(usize, usize)>,
    /// Who sits out this round (an odd number of entrants), if anyone.
    pub bye: Option<usize>,
}

/// The whole schedule of a round robin of `entrants` players, by the circle method of the Berger
/// tables. The players sit on a circle of odd size m (all of them when their number is odd, all
/// but the last otherwise); in round r, player r sits out (or meets the last player, who sits
/// in the middle) and the players k places either side of r meet, for k = 1, 2, ...: every pair
/// exactly once, since the pair of x and y is in round (x + y) / 2 mod m alone. Who moves first:
/// the one k places after r when k is odd, the one k places before when k is even, so that a
/// player on the circle, who is k places from r in two rounds for each k, moves first in one of
/// them; the middle player alternates, moving first in even rounds. Every player's first and
/// second moves so differ by at most one. Empty for fewer than two entrants.
pub fn schedule(entrants: usize) -> Vec<Round> {
    if entrants < 2 {
        return Vec::new();
    }
    let circle = if !entrants.is_multiple_of(2) {
        entrants
    } else {
        entrants - 1
    };
    let middle = (circle != entrants).then_some(entrants - 1);
    (0..circle)
        .map(|r| {
            let mut games = Vec::with_capacity(entrants / 2);
            let bye = match middle {
                Some(middle) => {
                    games.push(if r.is_multiple_of(2) {
                        (middle, r)
                    } else {
                        (r, middle)
                    });
                    None
                }
                None => Some(r),
            };
            for k in 1..=(circle - 1) / 2 {
                let before = (r + circle - k) % circle;
                let after = (r + k) % circle;
                games.push(if !k.is_multiple_of(2) {
                    (after, before)
                } else {
                    (before, after)
                });
            }
            Round { games, bye }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_pair_meets_once_and_first_moves_are_balanced() {
        for entrants in 2..=20 {
            let rounds = schedule(entrants);
            let expected_rounds = if entrants % 2 == 0 {
                entrants - 1
            } else {
                entrants
            };
            assert_eq!(rounds.len(), expected_rounds, "{entrants} entrants");
            let mut met = HashSet::new();
            let mut byes = vec![0; entrants];
            let mut difference = vec![0i32; entrants];
            for round in &rounds {
                let mut playing = HashSet::new();
                for &(a, b) in &round.games {
                    assert!(a < entrants && b < entrants && a != b);
                    assert!(playing.insert(a) && playing.insert(b), "twice in a round");
                    assert!(met.insert((a.min(b), a.max(b))), "{a} and {b} meet twice");
                    difference[a] += 1;
                    difference[b] -= 1;
                }
                if let Some(bye) = round.bye {
                    assert!(playing.insert(bye));
                    byes[bye] += 1;
                }
                assert_eq!(playing.len(), entrants, "everyone plays or sits out");
            }
            assert_eq!(met.len(), entrants * (entrants - 1) / 2, "every pair met");
            if entrants % 2 == 1 {
                assert!(byes.iter().all(|&b| b == 1), "one bye each: {byes:?}");
            }
            assert!(
                difference.iter().all(|d| d.abs() <= 1),
                "{entrants} entrants: first minus second moves {difference:?}"
            );
        }
    }

    #[test]
    fn fewer_than_two_entrants_have_no_rounds() {
        assert!(schedule(0).is_empty());
        assert!(schedule(1).is_empty());
    }
}
