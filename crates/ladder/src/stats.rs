//! The figures of a ladder: scores with their 95% intervals as Elo differences, and think-time
//! percentiles; for a duplicate ladder, the paired score of the twins and its interval.

use crate::referee::GameRecord;
use crate::sprt::{SprtResult, TWIN_SCORES, pentanomial_index, pentanomial_mean_variance};
use hidden_front_bot::Level;
use hidden_front_rules::EndReason;
use serde::Serialize;
use std::collections::BTreeMap;

/// A level as its name in the JSON.
pub(crate) fn level_name<S: serde::Serializer>(level: &Level, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(level.name())
}

/// Elo difference that a score (0..=1) stands for; clamped to +-1200 at a score of 1 or 0.
pub fn elo_from_score(score: f64) -> f64 {
    let s = score.clamp(0.0005, 0.9995);
    (400.0 * (s / (1.0 - s)).log10()).clamp(-1200.0, 1200.0)
}

/// One pair's result, seen from the first level.
#[derive(Debug, Clone, Serialize)]
pub struct PairStats {
    /// The first level.
    #[serde(serialize_with = "level_name")]
    pub a: Level,
    /// The second level.
    #[serde(serialize_with = "level_name")]
    pub b: Level,
    /// Games that finished (crashed games are left out of the score).
    pub games: u32,
    /// Games `a` won.
    pub wins: u32,
    /// Games drawn.
    pub draws: u32,
    /// Games `a` lost.
    pub losses: u32,
    /// `a`'s score: (wins + draws / 2) / games.
    pub score: f64,
    /// The 95% interval of the score (normal approximation over the games' scores).
    pub score_low: f64,
    /// Upper end of the interval.
    pub score_high: f64,
    /// Elo difference `a` minus `b` the score stands for.
    pub elo: f64,
    /// Elo at the interval's lower end.
    pub elo_low: f64,
    /// Elo at the interval's upper end.
    pub elo_high: f64,
    /// Mean plies per finished game.
    pub plies_mean: f64,
    /// How the finished games ended (reason name: count).
    pub endings: BTreeMap<String, u32>,
    /// Games stopped by a panic or a leak.
    pub crashes: u32,
    /// Duplicate ladder: the figures of the twins (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired: Option<PairedStats>,
}

impl PairStats {
    /// The figures of the games of pair (`a`, `b`).
    pub fn of<'a>(a: Level, b: Level, records: impl Iterator<Item = &'a GameRecord>) -> PairStats {
        let mut stats = PairStats {
            a,
            b,
            games: 0,
            wins: 0,
            draws: 0,
            losses: 0,
            score: 0.0,
            score_low: 0.0,
            score_high: 0.0,
            elo: 0.0,
            elo_low: 0.0,
            elo_high: 0.0,
            plies_mean: 0.0,
            endings: BTreeMap::new(),
            crashes: 0,
            paired: None,
        };
        let mut scores = Vec::new();
        let mut plies = 0u64;
        for r in records {
            let (Some(score), Some(outcome)) = (r.score_a(), r.outcome) else {
                stats.crashes += 1;
                continue;
            };
            scores.push(score);
            plies += u64::from(r.plies);
            *stats
                .endings
                .entry(outcome.reason.name().to_string())
                .or_default() += 1;
            match score {
                1.0 => stats.wins += 1,
                0.0 => stats.losses += 1,
                _ => stats.draws += 1,
            }
        }
        let n = scores.len();
        stats.games = n as u32;
        if n > 0 {
            let nf = n as f64;
            let mean = scores.iter().sum::<f64>() / nf;
            let var = scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / nf;
            let half = 1.96 * (var / nf).sqrt();
            stats.score = mean;
            stats.score_low = (mean - half).max(0.0);
            stats.score_high = (mean + half).min(1.0);
            stats.elo = elo_from_score(mean);
            stats.elo_low = elo_from_score(stats.score_low);
            stats.elo_high = elo_from_score(stats.score_high);
            stats.plies_mean = plies as f64 / nf;
        }
        stats
    }
}

/// The score of a twin for the first level of its pair: the mean of its two games' scores
/// (0, 0.25, 0.5, 0.75 or 1); `None` if either game crashed.
pub fn twin_score(twin: &[GameRecord; 2]) -> Option<f64> {
    Some((twin[0].score_a()? + twin[1].score_a()?) / 2.0)
}

/// One pair's figures over its twins (duplicate ladder), from the first level's side.
#[derive(Debug, Clone, Serialize)]
pub struct PairedStats {
    /// Twins scored (both games finished).
    pub twins: u32,
    /// How many twins scored 0, 0.25, 0.5, 0.75 and 1 for the first level.
    pub pentanomial: [u32; 5],
    /// The mean of the twins' scores.
    pub score: f64,
    /// The 95% interval of the score (normal approximation over the twins' scores).
    pub score_low: f64,
    /// Upper end of the interval.
    pub score_high: f64,
    /// The variance of one twin's score.
    pub twin_variance: f64,
    /// Elo difference first minus second level the score stands for.
    pub elo: f64,
    /// Elo at the interval's lower end.
    pub elo_low: f64,
    /// Elo at the interval's upper end.
    pub elo_high: f64,
    /// The sequential test, when the ladder ran one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sprt: Option<SprtResult>,
}

impl PairedStats {
    /// The figures of twins counted by score (`pentanomial[i]` twins scored 0, 0.25, 0.5, 0.75,
    /// 1 for `i` = 0..5): their mean, its 95% interval from the twins' variance, and the Elo
    /// differences of both.
    pub fn of_pentanomial(pentanomial: [u32; 5]) -> PairedStats {
        let (n, mean, variance) = pentanomial_mean_variance(&pentanomial.map(f64::from));
        let mut stats = PairedStats {
            twins: pentanomial.iter().sum(),
            pentanomial,
            score: 0.0,
            score_low: 0.0,
            score_high: 0.0,
            twin_variance: 0.0,
            elo: 0.0,
            elo_low: 0.0,
            elo_high: 0.0,
            sprt: None,
        };
        if n > 0.0 {
            let half = 1.96 * (variance / n).sqrt();
            stats.score = mean;
            stats.score_low = (mean - half).max(0.0);
            stats.score_high = (mean + half).min(1.0);
            stats.twin_variance = variance;
            stats.elo = elo_from_score(mean);
            stats.elo_low = elo_from_score(stats.score_low);
            stats.elo_high = elo_from_score(stats.score_high);
        }
        stats
    }

    /// The figures of `twins` (each the two games of one deal); twins with a crashed game are
    /// left out.
    pub fn of<'a>(twins: impl Iterator<Item = &'a [GameRecord; 2]>) -> PairedStats {
        PairedStats::of_pentanomial(pentanomial(twins))
    }
}

/// How many of `twins` scored 0, 0.25, 0.5, 0.75 and 1 for the first level (crashed twins left
/// out).
pub fn pentanomial<'a>(twins: impl Iterator<Item = &'a [GameRecord; 2]>) -> [u32; 5] {
    let mut counts = [0; TWIN_SCORES.len()];
    for score in twins.filter_map(twin_score) {
        counts[pentanomial_index(score)] += 1;
    }
    counts
}

/// One level's figures over all its games in the ladder.
#[derive(Debug, Clone, Serialize)]
pub struct LevelStats {
    /// The level.
    #[serde(serialize_with = "level_name")]
    pub level: Level,
    /// Moves it chose.
    pub moves: u64,
    /// Median think time per move, milliseconds.
    pub think_p50_ms: f64,
    /// 95th percentile think time per move, milliseconds.
    pub think_p95_ms: f64,
    /// Longest think time, milliseconds.
    pub think_max_ms: f64,
    /// Moves or deployments the engine would not have taken (must be 0).
    pub illegal_moves: u32,
    /// Games it played.
    pub games: u32,
    /// Junqi: games in which it lost its commander to a bomb.
    pub commander_bombed_games: u32,
    /// Junqi: games in which it stepped a piece into an empty HQ (frozen there for good).
    pub hq_freeze_games: u32,
    /// Junqi: games in which it won a fight in an HQ against a piece that was not the flag.
    pub hq_decoy_games: u32,
    /// Junqi: games in which it lost its flag to an enemy engineer.
    pub flag_to_engineer_games: u32,
    /// Games it lost with no legal move left (every piece it had left a mine, the flag or
    /// frozen in an HQ, or walled in).
    pub no_move_lost_games: u32,
    /// Moves that took a piece straight back to the square its previous move left (neither
    /// a fight).
    pub undone_moves: u64,
}

impl LevelStats {
    /// The figures of `level` over `records`.
    pub fn of(level: Level, records: &[GameRecord]) -> LevelStats {
        let mut times: Vec<u32> = Vec::new();
        let mut illegal = 0;
        let (mut games, mut bombed, mut frozen, mut decoys, mut engineered) = (0, 0, 0, 0, 0);
        let mut stuck = 0;
        let mut undone = 0u64;
        for r in records {
            for (i, l) in [r.a, r.b].into_iter().enumerate() {
                if l == level {
                    times.extend_from_slice(&r.think_us[i]);
                    illegal += r.illegal[i];
                    games += 1;
                    bombed += u32::from(r.commander_bombed[i]);
                    frozen += u32::from(r.hq_freezes[i] > 0);
                    decoys += u32::from(r.hq_decoys[i] > 0);
                    engineered += u32::from(r.flag_lost_to_engineer[i]);
                    undone += u64::from(r.undone[i]);
                    let side = if i == 0 { r.a_side } else { r.a_side.other() };
                    stuck += u32::from(r.outcome.is_some_and(|o| {
                        o.reason == EndReason::NoLegalMoves && o.winner == Some(side.other())
                    }));
                }
            }
        }
        times.sort_unstable();
        let pct = |q: f64| -> f64 {
            if times.is_empty() {
                return 0.0;
            }
            let i = ((times.len() as f64 - 1.0) * q).round() as usize;
            f64::from(times[i]) / 1000.0
        };
        LevelStats {
            level,
            moves: times.len() as u64,
            think_p50_ms: pct(0.5),
            think_p95_ms: pct(0.95),
            think_max_ms: pct(1.0),
            illegal_moves: illegal,
            games,
            commander_bombed_games: bombed,
            hq_freeze_games: frozen,
            hq_decoy_games: decoys,
            flag_to_engineer_games: engineered,
            no_move_lost_games: stuck,
            undone_moves: undone,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elo_of_even_and_three_quarters() {
        assert!(elo_from_score(0.5).abs() < 1e-9);
        assert!((elo_from_score(0.75) - 190.85).abs() < 0.1);
        assert!((elo_from_score(0.25) + 190.85).abs() < 0.1);
        assert_eq!(elo_from_score(1.0), elo_from_score(0.9995));
    }

    #[test]
    fn a_game_lost_with_no_move_left_counts_for_the_loser_only() {
        use hidden_front_rules::{Outcome, Side};
        let mut stuck = GameRecord::new(Level::Greedy, Level::Expert, Side::South);
        stuck.outcome = Some(Outcome::win(Side::North, EndReason::NoLegalMoves));
        let mut flag = GameRecord::new(Level::Greedy, Level::Expert, Side::North);
        flag.outcome = Some(Outcome::win(Side::South, EndReason::FlagCaptured));
        let mut won_stuck = GameRecord::new(Level::Greedy, Level::Expert, Side::North);
        won_stuck.outcome = Some(Outcome::win(Side::North, EndReason::NoLegalMoves));
        let records = [stuck, flag, won_stuck];
        let greedy = LevelStats::of(Level::Greedy, &records);
        let expert = LevelStats::of(Level::Expert, &records);
        assert_eq!((greedy.games, greedy.no_move_lost_games), (3, 1));
        assert_eq!((expert.games, expert.no_move_lost_games), (3, 1));
    }

    #[test]
    fn paired_score_and_interval_by_hand() {
        // Twins 0, 0.5, 0.5, 1: mean 0.5, variance (0.25 + 0.25) / 4 = 0.125, half-width
        // 1.96 · sqrt(0.125 / 4) = 0.346 482.
        let p = PairedStats::of_pentanomial([1, 0, 2, 0, 1]);
        assert_eq!(p.twins, 4);
        assert!((p.score - 0.5).abs() < 1e-12);
        assert!((p.twin_variance - 0.125).abs() < 1e-12);
        assert!((p.score_low - 0.153_518).abs() < 1e-6, "{}", p.score_low);
        assert!((p.score_high - 0.846_482).abs() < 1e-6, "{}", p.score_high);
        assert!(p.elo.abs() < 1e-9);
        assert!((p.elo_high - elo_from_score(0.846_482)).abs() < 1e-3);
        // Twins 0.75 and 1 (mean 0.875, variance 0.015 625): the interval is clamped at 1.
        let p = PairedStats::of_pentanomial([0, 0, 0, 1, 1]);
        assert!((p.score - 0.875).abs() < 1e-12);
        assert!((p.twin_variance - 0.015_625).abs() < 1e-12);
        assert!((p.score_low - (0.875 - 1.96 * (0.015_625f64 / 2.0).sqrt())).abs() < 1e-12);
        assert_eq!(p.score_high, 1.0);
        // No twins: nothing, and no NaN.
        let p = PairedStats::of_pentanomial([0; 5]);
        assert_eq!((p.twins, p.score, p.elo), (0, 0.0, 0.0));
    }
}
