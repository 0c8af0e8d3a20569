//! The sequential test of a duplicate ladder: a generalized SPRT over the twins' scores, as
//! fishtest runs it over game pairs, with the normal approximation of the log-likelihood ratio
//! (fishtest's `LLR_alt2`, <https://www.cantate.be/Fishtest/GSPRT_approximation.pdf>).
//!
//! H0: the first level is `elo0` Elo above the second; H1: it is `elo1` above (`elo1 > elo0`).
//! The Elo differences stand for the scores `s0`, `s1` of the logistic curve. After `n` twins
//! of mean score `x̄` and per-twin variance `σ²`,
//! `LLR = n · (s1 − s0) · (2·x̄ − s0 − s1) / (2·σ²)`; H1 is accepted once the LLR reaches
//! `ln((1 − β) / α)`, H0 once it falls to `ln(β / (1 − α))`.

use serde::Serialize;
use std::fmt;

/// The score (0..=1) an Elo difference stands for: `1 / (1 + 10^(−elo / 400))` (the curve
/// [`crate::elo_from_score`] inverts, without its clamp).
pub fn score_from_elo(elo: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-elo / 400.0))
}

/// The score of a twin in the pentanomial counts' order: `[0, 0.25, 0.5, 0.75, 1]`.
pub const TWIN_SCORES: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

/// The index in the pentanomial counts of a twin's score (0, 0.25, 0.5, 0.75 or 1).
pub fn pentanomial_index(twin_score: f64) -> usize {
    ((twin_score * 4.0).round() as usize).min(4)
}

/// Number, mean and variance (over the number, as for the unpaired figures) of twins counted by
/// score. An empty count gives (0, 0, 0).
pub fn pentanomial_mean_variance(counts: &[f64; 5]) -> (f64, f64, f64) {
    let n: f64 = counts.iter().sum();
    if n <= 0.0 {
        return (0.0, 0.0, 0.0);
    }
    let mean = counts
        .iter()
        .zip(TWIN_SCORES)
        .map(|(c, s)| c * s)
        .sum::<f64>()
        / n;
    let variance = counts
        .iter()
        .zip(TWIN_SCORES)
        .map(|(c, s)| c * (s - mean).powi(2))
        .sum::<f64>()
        / n;
    (n, mean, variance)
}

/// The normal approximation of the generalized log-likelihood ratio of H1 (expected score `s1`)
/// against H0 (`s0`) after `n` results of mean `mean` and variance `variance` each:
/// `n · (s1 − s0) · (2·mean − s0 − s1) / (2·variance)`.
pub fn llr_normal(n: f64, mean: f64, variance: f64, s0: f64, s1: f64) -> f64 {
    n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * variance)
}

/// How much of a twin an empty pentanomial count is taken for (fishtest's regularization): a
/// run of equal twins then has a small variance, not none, and a finite LLR.
pub const EMPTY_COUNT: f64 = 1e-3;

/// The LLR of twins counted by score (`counts[i]` twins scored [`TWIN_SCORES`]`[i]` for the
/// first level) for H0: Elo = `elo0` against H1: Elo = `elo1`. Each empty count is taken as
/// [`EMPTY_COUNT`] twins, as fishtest does; [`llr_normal`] gives the rest.
pub fn pentanomial_llr(counts: &[u32; 5], elo0: f64, elo1: f64) -> f64 {
    let regular = counts.map(|c| if c == 0 { EMPTY_COUNT } else { f64::from(c) });
    let (n, mean, variance) = pentanomial_mean_variance(&regular);
    llr_normal(
        n,
        mean,
        variance,
        score_from_elo(elo0),
        score_from_elo(elo1),
    )
}

/// The SPRT's bounds for error rates `alpha` (accepting H1 when H0 holds) and `beta` (accepting
/// H0 when H1 holds): `(ln(β / (1 − α)), ln((1 − β) / α))`.
pub fn sprt_bounds(alpha: f64, beta: f64) -> (f64, f64) {
    ((beta / (1.0 - alpha)).ln(), ((1.0 - beta) / alpha).ln())
}

/// What the SPRT concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SprtVerdict {
    /// The LLR reached the upper bound: the first level is `elo1` stronger rather than `elo0`.
    H1Accepted,
    /// The LLR fell to the lower bound: `elo0` rather than `elo1`.
    H0Accepted,
    /// Neither bound reached when the pair's twins ran out.
    Undecided,
}

impl fmt::Display for SprtVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SprtVerdict::H1Accepted => "H1 accepted",
            SprtVerdict::H0Accepted => "H0 accepted",
            SprtVerdict::Undecided => "undecided",
        })
    }
}

/// The sequential test a duplicate ladder runs on each pair.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sprt {
    /// H0: the first level is this many Elo above the second.
    pub elo0: f64,
    /// H1: the first level is this many Elo above the second (above `elo0`).
    pub elo1: f64,
    /// The chance of accepting H1 when H0 holds.
    pub alpha: f64,
    /// The chance of accepting H0 when H1 holds.
    pub beta: f64,
    /// No verdict before this many twins are scored: the variance of a handful of twins is no
    /// estimate (one twin of 0.75 alone has an LLR of +12 for 0 against 35 Elo).
    pub min_twins: u32,
}

impl Default for Sprt {
    /// H0 0 Elo, H1 35 Elo, α = β = 0.05, at least 10 twins.
    fn default() -> Sprt {
        Sprt {
            elo0: 0.0,
            elo1: 35.0,
            alpha: 0.05,
            beta: 0.05,
            min_twins: 10,
        }
    }
}

impl Sprt {
    /// The LLR's bounds `(lower, upper)`.
    pub fn bounds(&self) -> (f64, f64) {
        sprt_bounds(self.alpha, self.beta)
    }

    /// The test on twins counted by score, `played` twins in all (crashed ones included).
    pub fn result(&self, counts: &[u32; 5], played: u32) -> SprtResult {
        let llr = pentanomial_llr(counts, self.elo0, self.elo1);
        let (lower, upper) = self.bounds();
        let scored: u32 = counts.iter().sum();
        let verdict = if scored < self.min_twins {
            SprtVerdict::Undecided
        } else if llr >= upper {
            SprtVerdict::H1Accepted
        } else if llr <= lower {
            SprtVerdict::H0Accepted
        } else {
            SprtVerdict::Undecided
        };
        SprtResult {
            verdict,
            llr,
            lower,
            upper,
            twins: played,
        }
    }
}

/// One pair's sequential test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SprtResult {
    /// What it concluded.
    pub verdict: SprtVerdict,
    /// The LLR after the last twin it saw.
    pub llr: f64,
    /// The lower bound (H0 accepted at or below it).
    pub lower: f64,
    /// The upper bound (H1 accepted at or above it).
    pub upper: f64,
    /// Twins played until it stopped (or the pair's twins ran out).
    pub twins: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    #[test]
    fn scores_of_elo_differences() {
        assert!(close(score_from_elo(0.0), 0.5, 1e-12));
        // 1 / (1 + 10^(-35/400)).
        assert!(close(score_from_elo(35.0), 0.550_199_353, 1e-8));
        assert!(close(score_from_elo(-35.0), 1.0 - 0.550_199_353, 1e-8));
        assert!(close(
            crate::elo_from_score(score_from_elo(120.0)),
            120.0,
            1e-9
        ));
    }

    #[test]
    fn the_llr_formula_by_hand() {
        // 100 twins of mean 0.6, variance 0.04, s0 = 0.5, s1 = 0.55:
        // 100 · 0.05 · (1.2 − 1.05) / 0.08 = 9.375.
        assert!(close(llr_normal(100.0, 0.6, 0.04, 0.5, 0.55), 9.375, 1e-12));
        // At the midpoint of s0 and s1 the ratio is even.
        assert!(close(llr_normal(50.0, 0.525, 0.1, 0.5, 0.55), 0.0, 1e-12));
        // Below it, negative, and twice the twins give twice the LLR.
        let one = llr_normal(50.0, 0.45, 0.1, 0.5, 0.55);
        assert!(one < 0.0);
        assert!(close(
            llr_normal(100.0, 0.45, 0.1, 0.5, 0.55),
            2.0 * one,
            1e-12
        ));
        // Half the variance, twice the LLR.
        assert!(close(
            llr_normal(50.0, 0.45, 0.05, 0.5, 0.55),
            2.0 * one,
            1e-12
        ));
    }

    #[test]
    fn pentanomial_llrs_by_hand() {
        // [3, 7, 10, 12, 8]: 40 twins, mean 23.75 / 40 = 0.59375, E[x²] = 17.6875 / 40, variance
        // 0.442_187_5 − 0.59375² = 0.089_648_4; s1 = 0.550_199_35:
        // 40 · 0.050_199_35 · (1.1875 − 1.050_199_35) / (2 · 0.089_648_4) = 1.537_65.
        let counts = [3, 7, 10, 12, 8];
        let (n, mean, variance) = pentanomial_mean_variance(&counts.map(f64::from));
        assert_eq!(n, 40.0);
        assert!(close(mean, 0.59375, 1e-12));
        assert!(close(variance, 0.442_187_5 - 0.59375 * 0.59375, 1e-12));
        assert!(close(pentanomial_llr(&counts, 0.0, 35.0), 1.537_65, 1e-4));
        // Other hypotheses: H0 −10 Elo, H1 +5 Elo.
        assert!(close(pentanomial_llr(&counts, -10.0, 5.0), 0.937_42, 1e-4));
        // [10, 20, 40, 20, 10]: mean 0.5, variance (2 · 10 · 0.25 + 2 · 20 · 0.0625) / 100 = 0.075:
        // 100 · 0.050_199_35 · (1 − 1.050_199_35) / 0.15 = −1.679_98.
        assert!(close(
            pentanomial_llr(&[10, 20, 40, 20, 10], 0.0, 35.0),
            -1.679_98,
            1e-4
        ));
    }

    #[test]
    fn an_even_score_with_a_small_variance_accepts_h0() {
        let sprt = Sprt::default();
        // 100 twins at 0.5 but for 5 at 0.25 and 5 at 0.75: variance 0.006 25.
        let tight = sprt.result(&[0, 5, 90, 5, 0], 100);
        assert!(close(tight.llr, -20.144_49, 1e-3), "{}", tight.llr);
        assert_eq!(tight.verdict, SprtVerdict::H0Accepted);
        // The same mean spread over every score (variance 0.125) decides nothing yet.
        let loose = sprt.result(&[20, 20, 20, 20, 20], 100);
        assert!(close(loose.llr, -1.007_99, 1e-4), "{}", loose.llr);
        assert_eq!(loose.verdict, SprtVerdict::Undecided);
    }

    #[test]
    fn all_wins_accept_h1_and_all_losses_h0() {
        let sprt = Sprt::default();
        let wins = sprt.result(&[0, 0, 0, 0, 20], 20);
        assert_eq!(wins.verdict, SprtVerdict::H1Accepted);
        // Finite thanks to the empty counts' 1e-3 twins: 5087.34.
        assert!(close(wins.llr, 5087.34, 0.01), "{}", wins.llr);
        let losses = sprt.result(&[20, 0, 0, 0, 0], 20);
        assert_eq!(losses.verdict, SprtVerdict::H0Accepted);
        // No twins, no verdict (and no NaN).
        let none = sprt.result(&[0; 5], 0);
        assert_eq!(none.verdict, SprtVerdict::Undecided);
        assert!(none.llr.is_finite());
    }

    #[test]
    fn no_verdict_before_the_minimum_of_twins() {
        // A single twin of 0.75 is past the upper bound (fishtest's formula: +12.09)...
        let llr = pentanomial_llr(&[0, 0, 0, 1, 0], 0.0, 35.0);
        assert!(close(llr, 12.0919, 1e-3), "{llr}");
        let sprt = Sprt::default();
        assert_eq!(
            sprt.result(&[0, 0, 0, 1, 0], 1).verdict,
            SprtVerdict::Undecided
        );
        let eager = Sprt {
            min_twins: 1,
            ..sprt
        };
        assert_eq!(
            eager.result(&[0, 0, 0, 1, 0], 1).verdict,
            SprtVerdict::H1Accepted
        );
        // Nine twins of 1 are short of ten; ten are enough.
        assert_eq!(
            sprt.result(&[0, 0, 0, 0, 9], 9).verdict,
            SprtVerdict::Undecided
        );
        assert_eq!(
            sprt.result(&[0, 0, 0, 0, 10], 10).verdict,
            SprtVerdict::H1Accepted
        );
    }

    #[test]
    fn bounds_of_five_percent_errors() {
        let (lower, upper) = sprt_bounds(0.05, 0.05);
        // ln(0.05 / 0.95) and ln(0.95 / 0.05) = ±2.944 44.
        assert!(close(lower, -2.944_439, 1e-6));
        assert!(close(upper, 2.944_439, 1e-6));
        let (lower, upper) = sprt_bounds(0.1, 0.2);
        assert!(close(lower, (0.2f64 / 0.9).ln(), 1e-12));
        assert!(close(upper, (0.8f64 / 0.1).ln(), 1e-12));
    }

    #[test]
    fn pentanomial_indices() {
        for (i, s) in TWIN_SCORES.into_iter().enumerate() {
            assert_eq!(pentanomial_index(s), i);
        }
    }
}
