//! Tournaments as pure functions: who plays whom next, who moves first, and who stands where.
//!
//! Nothing here knows of games, stores or transports: a tournament service feeds in the entrants
//! and the results it recorded, and gets back the next round's pairings or the standings. Why a
//! crate of its own: pairing rules are where tournaments go wrong (a repeated pairing, a second
//! bye, a player given the first move four times running), and as pure functions they can be
//! checked exhaustively against their invariants, by property tests here, without a server.
//!
//! - [`swiss`]: a fixed number of rounds, each paired by score groups under the main criteria of
//!   the FIDE Dutch system (no repeat pairing, at most one bye per player and that to the lowest
//!   ranked player who can take it, colours balanced within the absolute limits, players paired
//!   inside their score group where possible, top half against bottom half).
//! - [`round_robin`]: everyone meets everyone once, by Berger tables, for small groups.
//! - [`arena`]: a fixed duration; whoever finishes a game is paired again with a waiting player
//!   of similar score and rating, scored per game with a streak bonus.
//! - [`standings`]: scores with the Buchholz and Sonneborn-Berger tie-breaks.
//!
//! "Colour" is who moves first: a tournament balances it as chess balances white and black.

pub mod arena;
pub mod round_robin;
pub mod standings;
pub mod swiss;

use thiserror::Error;

/// Who moves first in one game of a tournament.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Colour {
    /// Moves first.
    First,
    /// Moves second.
    Second,
}

impl Colour {
    /// The other colour.
    pub fn other(self) -> Colour {
        match self {
            Colour::First => Colour::Second,
            Colour::Second => Colour::First,
        }
    }
}

/// How one game ended for one of its players.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Won.
    Win,
    /// Drawn.
    Draw,
    /// Lost.
    Loss,
}

impl Outcome {
    /// The game's score for this player in half points (a win 2, a draw 1, a loss 0): exact,
    /// unlike a float of 1, 0.5 and 0.
    pub fn half_points(self) -> u32 {
        match self {
            Outcome::Win => 2,
            Outcome::Draw => 1,
            Outcome::Loss => 0,
        }
    }

    /// The same game seen by the opponent.
    pub fn for_opponent(self) -> Outcome {
        match self {
            Outcome::Win => Outcome::Loss,
            Outcome::Draw => Outcome::Draw,
            Outcome::Loss => Outcome::Win,
        }
    }
}

/// One game of a round: `first` moves first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairing {
    /// The player who moves first.
    pub first: String,
    /// The player who moves second.
    pub second: String,
}

/// One entrant of a tournament as the pairing rules see them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entrant {
    /// The player's id, unique in the tournament.
    pub id: String,
    /// The player's rating when the tournament started (ranks players of equal score).
    pub rating: i32,
}

/// What one round was for one entrant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Played {
    /// A game against `opponent`, with the colour this entrant had and how it ended for them.
    /// A game lost by forfeit (an absent player) is a game lost, against that opponent.
    Game {
        /// The opponent's id.
        opponent: String,
        /// This entrant's colour.
        colour: Colour,
        /// How it ended for this entrant.
        outcome: Outcome,
    },
    /// The round's bye (an odd number of entrants): scores a win, with no opponent.
    Bye,
    /// Not paired this round (joined late, or withdrew and came back): scores nothing.
    Absent,
}

/// An entrant and what each earlier round was for them, in round order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Who.
    pub entrant: Entrant,
    /// Round by round, from the first.
    pub rounds: Vec<Played>,
}

impl Record {
    /// The score so far, in half points.
    pub fn half_points(&self) -> u32 {
        self.rounds
            .iter()
            .map(|played| match played {
                Played::Game { outcome, .. } => outcome.half_points(),
                Played::Bye => Outcome::Win.half_points(),
                Played::Absent => 0,
            })
            .sum()
    }

    /// The colours of this entrant's games, in order.
    pub fn colours(&self) -> impl Iterator<Item = Colour> + '_ {
        self.rounds.iter().filter_map(|played| match played {
            Played::Game { colour, .. } => Some(*colour),
            _ => None,
        })
    }

    /// Whether this entrant has had a bye.
    pub fn had_bye(&self) -> bool {
        self.rounds
            .iter()
            .any(|played| matches!(played, Played::Bye))
    }
}

/// Why records could not be paired or ranked. Each names what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TournamentError {
    /// Two records share an id.
    #[error("entrant {0:?} is listed twice")]
    DuplicateEntrant(String),
    /// A record names an opponent that is not an entrant.
    #[error("entrant {entrant:?} played {opponent:?}, who is not an entrant")]
    UnknownOpponent {
        /// Whose record.
        entrant: String,
        /// The opponent named.
        opponent: String,
    },
    /// The two records of one game disagree (opponent, colour or result), or one is missing.
    #[error(
        "round {round}: the records of {entrant:?} and {opponent:?} do not describe the same game"
    )]
    Inconsistent {
        /// The round, from 1.
        round: usize,
        /// One player.
        entrant: String,
        /// The other.
        opponent: String,
    },
    /// Records of different lengths: every record holds every round played so far.
    #[error("entrant {entrant:?} has {has} rounds, others {expected}")]
    RoundsDiffer {
        /// Whose record.
        entrant: String,
        /// How many it has.
        has: usize,
        /// How many the first record has.
        expected: usize,
    },
    /// A round names a player who is not an entrant.
    #[error("the round names {0:?}, who is not an entrant")]
    NotAnEntrant(String),
    /// Fewer than two entrants to pair.
    #[error("at least two entrants are needed, not {0}")]
    TooFewEntrants(usize),
    /// No pairing satisfies the rules (more rounds than opponents, or every remaining
    /// candidate already had the bye).
    #[error("no pairing of round {round} avoids repeat pairings and second byes")]
    NoPairing {
        /// The round that could not be paired, from 1.
        round: usize,
    },
}

/// Checks that `records` describe one tournament: unique ids, the same number of rounds, and
/// both sides of every game agreeing. The index of each id comes back.
pub(crate) fn check_records(
    records: &[Record],
) -> Result<std::collections::HashMap<&str, usize>, TournamentError> {
    let mut index = std::collections::HashMap::with_capacity(records.len());
    for (i, record) in records.iter().enumerate() {
        if index.insert(record.entrant.id.as_str(), i).is_some() {
            return Err(TournamentError::DuplicateEntrant(record.entrant.id.clone()));
        }
    }
    let expected = records.first().map_or(0, |r| r.rounds.len());
    if let Some(record) = records.iter().find(|r| r.rounds.len() != expected) {
        return Err(TournamentError::RoundsDiffer {
            entrant: record.entrant.id.clone(),
            has: record.rounds.len(),
            expected,
        });
    }
    for record in records {
        for (round, played) in record.rounds.iter().enumerate() {
            let Played::Game {
                opponent,
                colour,
                outcome,
            } = played
            else {
                continue;
            };
            let Some(&other) = index.get(opponent.as_str()) else {
                return Err(TournamentError::UnknownOpponent {
                    entrant: record.entrant.id.clone(),
                    opponent: opponent.clone(),
                });
            };
            let mirrored = Played::Game {
                opponent: record.entrant.id.clone(),
                colour: colour.other(),
                outcome: outcome.for_opponent(),
            };
            if opponent == &record.entrant.id || records[other].rounds[round] != mirrored {
                return Err(TournamentError::Inconsistent {
                    round: round + 1,
                    entrant: record.entrant.id.clone(),
                    opponent: opponent.clone(),
                });
            }
        }
    }
    Ok(index)
}
