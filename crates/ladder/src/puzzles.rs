//! The puzzle suite ([`hidden_front_bot::puzzle::SUITE`]) at each of a ladder's levels: how
//! many seeds of each puzzle of the ladder's family every level answers right.

use crate::stats::level_name;
use hidden_front_bot::puzzle::{PuzzleError, SUITE};
use hidden_front_bot::{Budget, Level};
use hidden_front_rules::Rules;
use serde::Serialize;

/// Seeds each level gets at each puzzle (its layouts and tie-breaks).
pub const PUZZLE_SEEDS: u32 = 8;

/// How often one level solved one puzzle.
#[derive(Debug, Clone, Serialize)]
pub struct PuzzleScore {
    /// The puzzle's name.
    pub puzzle: &'static str,
    /// The level.
    #[serde(serialize_with = "level_name")]
    pub level: Level,
    /// Seeds answered right.
    pub solved: u32,
    /// Seeds tried.
    pub tried: u32,
    /// Whether the level must solve it every time (the suite's `required_from` or above).
    pub required: bool,
    /// The wrong answers given, by name, each once, in the order first given.
    pub wrong: Vec<String>,
}

/// Every puzzle of `rules`' family at every level of `levels`, `seeds` seeds each, with
/// `budget` instead of the levels' own when given.
pub fn score_puzzles(
    rules: &Rules,
    levels: &[Level],
    seeds: u32,
    budget: Option<Budget>,
) -> Result<Vec<PuzzleScore>, PuzzleError> {
    let mut scores = Vec::new();
    if seeds == 0 {
        return Ok(scores);
    }
    for puzzle in SUITE {
        let family = Rules::parse(puzzle.rules)
            .map_err(|_| PuzzleError::UnknownRules(puzzle.rules.to_owned()))?
            .family;
        if family != rules.family {
            continue;
        }
        for &level in levels {
            let mut score = PuzzleScore {
                puzzle: puzzle.name,
                level,
                solved: 0,
                tried: seeds,
                required: puzzle.required_from.is_some_and(|from| level >= from),
                wrong: Vec::new(),
            };
            for seed in 1..=u64::from(seeds) {
                let (answer, right) = puzzle.solve(level, seed, budget)?;
                if right {
                    score.solved += 1;
                } else if !score.wrong.contains(&answer) {
                    score.wrong.push(answer);
                }
            }
            scores.push(score);
        }
    }
    Ok(scores)
}
