//! The computer's ladder: refereed games between every pair of levels, and the cross-table
//! they give (wins, draws and losses, score, Elo difference with a 95% interval, plies per
//! game, think time per level, illegal moves and crashes).
//!
//! The engine's [`hidden_front_rules::Game`] referees; each level gets only its seat's
//! projection of every event (checked: a projection that shows an opponent kind before the end
//! stops the ladder) and the engine's legal moves, exactly as in a game against a person. Each
//! pair plays `games` games, the levels alternating colours every game and the first mover
//! every two games, each side deploying as its level chooses. A game is a function of the
//! ladder's seed and its number, so a ladder is reproducible (think times aside, and the search
//! level's wall-clock safety net, see [`hidden_front_bot::Budget`]). Games run on `jobs`
//! threads (1 by default: think times are part of the result).
//!
//! `hidden-front bot ladder` prints it; `docs/bot.md` holds the measured tables.

mod referee;
mod stats;
mod table;

pub use referee::{GameRecord, play_game};
pub use stats::{LevelStats, PairStats, elo_from_score};

use hidden_front_bot::{Budget, Level};
use hidden_front_rules::Rules;
use serde::Serialize;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use thiserror::Error;

/// Which pairs of levels play.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pairs {
    /// Every pair of the given levels.
    All,
    /// Each level against the next one in the list only (the ladder's rungs).
    Adjacent,
}

/// What a ladder plays.
#[derive(Debug, Clone)]
pub struct LadderConfig {
    /// The rule set of every game.
    pub rules: Rules,
    /// The levels, weakest first as a rule (the table keeps this order).
    pub levels: Vec<Level>,
    /// Games per pair.
    pub games: u32,
    /// Fixes every game.
    pub seed: u64,
    /// Threads playing games at once.
    pub jobs: usize,
    /// Which pairs play.
    pub pairs: Pairs,
    /// Every player's budget per move instead of its level's (`None`: the level's, as in
    /// games against people). Tests set one without the wall-clock safety net, so a seed fixes
    /// the whole ladder in a debug build too.
    pub budget: Option<Budget>,
}

/// A ladder that cannot be played as asked.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LadderError {
    /// Fewer than two levels.
    #[error("a ladder needs at least two different levels")]
    TooFewLevels,
    /// A level named twice.
    #[error("level {0} is named twice")]
    DuplicateLevel(Level),
    /// No games.
    #[error("--games must be at least 1")]
    NoGames,
    /// No threads.
    #[error("--jobs must be at least 1")]
    NoJobs,
}

/// The ladder's result: the cross-table and each level's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Ladder {
    /// The rule set's name.
    pub rules: String,
    /// The seed.
    pub seed: u64,
    /// Games per pair.
    pub games_per_pair: u32,
    /// Threads that played.
    pub jobs: usize,
    /// Each pair's result, from the first level's side.
    pub pairs: Vec<PairStats>,
    /// Each level's think times, illegal moves and crashes over all its games.
    pub levels: Vec<LevelStats>,
}

impl Ladder {
    /// Illegal moves over every game (the ladder's contract is that there are none).
    pub fn illegal_moves(&self) -> u32 {
        self.levels.iter().map(|l| l.illegal_moves).sum()
    }

    /// Games that ended in a panic of a player (none expected).
    pub fn crashes(&self) -> u32 {
        self.pairs.iter().map(|p| p.crashes).sum()
    }
}

/// Plays the ladder.
pub fn run(config: &LadderConfig) -> Result<Ladder, LadderError> {
    if config.levels.len() < 2 {
        return Err(LadderError::TooFewLevels);
    }
    for (i, l) in config.levels.iter().enumerate() {
        if config.levels[..i].contains(l) {
            return Err(LadderError::DuplicateLevel(*l));
        }
    }
    if config.games == 0 {
        return Err(LadderError::NoGames);
    }
    if config.jobs == 0 {
        return Err(LadderError::NoJobs);
    }
    let levels = &config.levels;
    let pairs: Vec<(Level, Level)> = match config.pairs {
        Pairs::All => (0..levels.len())
            .flat_map(|i| (i + 1..levels.len()).map(move |j| (levels[i], levels[j])))
            .collect(),
        Pairs::Adjacent => levels.windows(2).map(|w| (w[0], w[1])).collect(),
    };
    let games: Vec<(usize, u32)> = (0..pairs.len())
        .flat_map(|p| (0..config.games).map(move |g| (p, g)))
        .collect();
    let records: Mutex<Vec<Option<GameRecord>>> = Mutex::new(vec![None; games.len()]);
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..config.jobs.min(games.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(p, g)) = games.get(i) else { break };
                    let (a, b) = pairs[p];
                    let seed = game_seed(config.seed, p as u64, u64::from(g));
                    let record = play_game(config.rules, a, b, g, seed, config.budget);
                    records.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(record);
                }
            });
        }
    });
    let records: Vec<GameRecord> = records
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .flatten()
        .collect();
    Ok(Ladder {
        rules: config.rules.name(),
        seed: config.seed,
        games_per_pair: config.games,
        jobs: config.jobs,
        pairs: pairs
            .iter()
            .map(|&(a, b)| PairStats::of(a, b, records.iter().filter(|r| r.pair() == (a, b))))
            .collect(),
        levels: levels
            .iter()
            .map(|&l| LevelStats::of(l, &records))
            .collect(),
    })
}

/// The seed of game `game` of pair `pair` (SplitMix-style mixing, so neighbouring games share
/// nothing).
fn game_seed(seed: u64, pair: u64, game: u64) -> u64 {
    let mut z =
        seed ^ pair.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ game.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
