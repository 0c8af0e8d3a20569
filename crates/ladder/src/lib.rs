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
//! A duplicate ladder ([`LadderConfig::duplicate`]) plays each pair's games in twins: two games
//! on one deal (the same deployments, first mover and seeds), the levels swapping seats, and
//! reports the paired score of the twins; with [`LadderConfig::sprt`] each pair stops as soon
//! as a sequential test (a GSPRT over the twins, as fishtest runs) decides.
//!
//! `hidden-front bot ladder` prints it; `docs/bot.md` holds the measured tables.

mod belief_fit;
mod puzzles;
mod referee;
mod sprt;
mod stats;
mod table;

pub use belief_fit::{
    ActivityCounts, BeliefReport, LogLoss, activity_counts, belief_report, game_log_loss, log_loss,
};
pub use puzzles::{PUZZLE_SEEDS, PuzzleScore, score_puzzles};
pub use referee::{GameRecord, play_game, play_twin};
pub use sprt::{
    EMPTY_COUNT, Sprt, SprtResult, SprtVerdict, TWIN_SCORES, llr_normal, pentanomial_index,
    pentanomial_llr, pentanomial_mean_variance, score_from_elo, sprt_bounds,
};
pub use stats::{LevelStats, PairStats, PairedStats, elo_from_score, pentanomial, twin_score};

use hidden_front_bot::puzzle::PuzzleError;
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
    /// Games per pair; with `duplicate`, twins per pair (two games each).
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
    /// Plays each pair's games in twins (see [`play_twin`]): game `2k` and `2k + 1` on one
    /// deal, the levels swapping seats, and reports the paired score.
    pub duplicate: bool,
    /// With `duplicate`: stops each pair as soon as this test decides (checked after each twin,
    /// in twin order).
    pub sprt: Option<Sprt>,
    /// Seeds each level gets at each puzzle of the rules' family
    /// ([`hidden_front_bot::puzzle::SUITE`]); 0 plays none.
    pub puzzle_seeds: u32,
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
    /// More twins than game numbers.
    #[error("--games (twins per pair with --duplicate) must be at most 2147483647")]
    TooManyTwins,
    /// A sequential test without twins.
    #[error("--sprt needs --duplicate (the test is over the twins' paired scores)")]
    SprtWithoutDuplicate,
    /// Hypotheses the wrong way round (or not numbers).
    #[error("--sprt-elo1 must be above --sprt-elo0")]
    SprtHypotheses,
    /// Error rates that give no test.
    #[error("--sprt-alpha and --sprt-beta must be above 0 and add up to less than 1")]
    SprtErrorRates,
    /// A puzzle of the suite that cannot be set up (a defect of the suite).
    #[error("puzzle suite: {0}")]
    Puzzle(#[from] PuzzleError),
}

/// The ladder's result: the cross-table and each level's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Ladder {
    /// The rule set's name.
    pub rules: String,
    /// The seed.
    pub seed: u64,
    /// Games per pair (duplicate: twice the twins; the sequential test may stop a pair sooner).
    pub games_per_pair: u32,
    /// Whether the games were played in twins.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub duplicate: bool,
    /// Duplicate: twins per pair.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub twins_per_pair: Option<u32>,
    /// Duplicate: the sequential test each pair ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sprt: Option<Sprt>,
    /// Threads that played.
    pub jobs: usize,
    /// Each pair's result, from the first level's side.
    pub pairs: Vec<PairStats>,
    /// Each level's think times, illegal moves and crashes over all its games.
    pub levels: Vec<LevelStats>,
    /// Each puzzle of the family at each level (empty when no seeds were asked for).
    pub puzzles: Vec<PuzzleScore>,
    /// The belief's log-loss on the true kinds over the games.
    pub belief: BeliefReport,
    /// The games the figures come from, pair by pair in game order (not in the JSON).
    #[serde(skip)]
    pub records: Vec<GameRecord>,
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
    if config.duplicate && config.games > u32::MAX / 2 {
        return Err(LadderError::TooManyTwins);
    }
    if let Some(sprt) = &config.sprt {
        if !config.duplicate {
            return Err(LadderError::SprtWithoutDuplicate);
        }
        // Written so that NaNs fail too.
        if !(sprt.elo0.is_finite() && sprt.elo1.is_finite() && sprt.elo1 > sprt.elo0) {
            return Err(LadderError::SprtHypotheses);
        }
        if !(sprt.alpha > 0.0 && sprt.beta > 0.0 && sprt.alpha + sprt.beta < 1.0) {
            return Err(LadderError::SprtErrorRates);
        }
    }
    let levels = &config.levels;
    let pairs: Vec<(Level, Level)> = match config.pairs {
        Pairs::All => (0..levels.len())
            .flat_map(|i| (i + 1..levels.len()).map(move |j| (levels[i], levels[j])))
            .collect(),
        Pairs::Adjacent => levels.windows(2).map(|w| (w[0], w[1])).collect(),
    };
    let puzzles = score_puzzles(&config.rules, levels, config.puzzle_seeds, config.budget)?;
    if config.duplicate {
        let ladder = run_duplicate(config, &pairs);
        return Ok(Ladder {
            puzzles,
            belief: belief_report(config.rules, &ladder.records),
            ..ladder
        });
    }
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
        puzzles,
        belief: belief_report(config.rules, &records),
        duplicate: false,
        twins_per_pair: None,
        sprt: None,
        records,
    })
}

/// One pair's twins as a duplicate ladder plays them: those done, and how far the in-order
/// prefix of done twins has been scored and tested.
struct PairProgress {
    /// Twin `k`, once played.
    twins: Vec<Option<[GameRecord; 2]>>,
    /// The length of the prefix of done twins taken in (scored, tested).
    seen: usize,
    /// The prefix's twins counted by score.
    pentanomial: [u32; 5],
    /// Where the test stopped the pair: no twin from there on counts.
    stopped_at: Option<usize>,
}

impl PairProgress {
    /// Takes in the done twins that follow the prefix, in twin order, testing after each; stops
    /// the pair at the first twin after which the test decides.
    fn advance(&mut self, sprt: Option<&Sprt>) {
        while self.stopped_at.is_none() {
            let Some(Some(twin)) = self.twins.get(self.seen) else {
                break;
            };
            if let Some(score) = twin_score(twin) {
                self.pentanomial[pentanomial_index(score)] += 1;
            }
            self.seen += 1;
            if let Some(sprt) = sprt {
                let result = sprt.result(&self.pentanomial, self.seen as u32);
                if result.verdict != SprtVerdict::Undecided {
                    self.stopped_at = Some(self.seen);
                }
            }
        }
    }
}

/// [`run`] for a duplicate ladder (the configuration checked).
fn run_duplicate(config: &LadderConfig, pairs: &[(Level, Level)]) -> Ladder {
    let twins: Vec<(usize, u32)> = (0..pairs.len())
        .flat_map(|p| (0..config.games).map(move |k| (p, k)))
        .collect();
    let progress: Mutex<Vec<PairProgress>> = Mutex::new(
        pairs
            .iter()
            .map(|_| PairProgress {
                twins: vec![None; config.games as usize],
                seen: 0,
                pentanomial: [0; 5],
                stopped_at: None,
            })
            .collect(),
    );
    let lock = || progress.lock().unwrap_or_else(|e| e.into_inner());
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..config.jobs.min(twins.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(p, k)) = twins.get(i) else { break };
                    // A pair stopped at twin m has every twin before m done: the rest is moot.
                    if lock()[p].stopped_at.is_some() {
                        continue;
                    }
                    let (a, b) = pairs[p];
                    let seed = game_seed(config.seed, p as u64, u64::from(k));
                    let twin = play_twin(config.rules, a, b, k, seed, config.budget);
                    let mut progress = lock();
                    progress[p].twins[k as usize] = Some(twin);
                    progress[p].advance(config.sprt.as_ref());
                }
            });
        }
    });
    let progress = progress.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut records = Vec::new();
    let mut pair_stats = Vec::with_capacity(pairs.len());
    for (&(a, b), pair) in pairs.iter().zip(progress) {
        // Twins finished after the test stopped the pair (other threads' work) are dropped, so
        // the figures do not depend on timing.
        let kept: Vec<[GameRecord; 2]> =
            pair.twins[..pair.seen].iter().flatten().cloned().collect();
        let mut stats = PairStats::of(a, b, kept.iter().flatten());
        let mut paired = PairedStats::of_pentanomial(pair.pentanomial);
        paired.sprt = config
            .sprt
            .map(|sprt| sprt.result(&pair.pentanomial, pair.seen as u32));
        stats.paired = Some(paired);
        pair_stats.push(stats);
        records.extend(kept.into_iter().flatten());
    }
    Ladder {
        rules: config.rules.name(),
        seed: config.seed,
        games_per_pair: config.games * 2,
        jobs: config.jobs,
        pairs: pair_stats,
        levels: config
            .levels
            .iter()
            .map(|&l| LevelStats::of(l, &records))
            .collect(),
        puzzles: Vec::new(),
        belief: BeliefReport::default(),
        duplicate: true,
        twins_per_pair: Some(config.games),
        sprt: config.sprt,
        records,
    }
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
