//! Glicko-2 (Glickman, "Example of the Glicko-2 system", 2013): each game is settled as its own
//! rating period of one game for each player, right when it ends, so ratings move after every game.

/// The system constant τ: how much volatility may change (Glickman suggests 0.3 to 1.2).
pub const TAU: f64 = 0.5;
/// The Glicko-2 scale factor between the familiar scale and the internal one.
const SCALE: f64 = 173.7178;
/// Convergence tolerance of the volatility iteration.
const EPSILON: f64 = 0.000_001;

/// A player's rating on the familiar scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rating {
    /// The rating (new players: 1500).
    pub rating: f64,
    /// The rating deviation, how unsure the rating is (new players: 350).
    pub deviation: f64,
    /// The volatility, how erratic the player's results are (new players: 0.06).
    pub volatility: f64,
}

impl Default for Rating {
    fn default() -> Self {
        Rating {
            rating: 1500.0,
            deviation: 350.0,
            volatility: 0.06,
        }
    }
}

/// One game's result against one opponent: `score` is 1 for a win, 0.5 for a draw, 0 for a loss.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GameResult {
    /// The opponent's rating before the period.
    pub opponent: Rating,
    /// The player's score.
    pub score: f64,
}

fn g(phi: f64) -> f64 {
    1.0 / (1.0 + 3.0 * phi * phi / (std::f64::consts::PI * std::f64::consts::PI)).sqrt()
}

fn expected(mu: f64, mu_j: f64, phi_j: f64) -> f64 {
    1.0 / (1.0 + (-g(phi_j) * (mu - mu_j)).exp())
}

/// The player's rating after one rating period with these results (none: only the deviation
/// grows). Follows the paper's steps 2 to 8, with the Illinois algorithm for the volatility.
pub fn update(player: Rating, results: &[GameResult]) -> Rating {
    let mu = (player.rating - 1500.0) / SCALE;
    let phi = player.deviation / SCALE;
    let sigma = player.volatility;
    if results.is_empty() {
        let phi_star = (phi * phi + sigma * sigma).sqrt();
        return Rating {
            deviation: phi_star * SCALE,
            ..player
        };
    }
    let mut v_inv = 0.0;
    let mut delta_sum = 0.0;
    for result in results {
        let mu_j = (result.opponent.rating - 1500.0) / SCALE;
        let phi_j = result.opponent.deviation / SCALE;
        let e = expected(mu, mu_j, phi_j);
        let g_j = g(phi_j);
        v_inv += g_j * g_j * e * (1.0 - e);
        delta_sum += g_j * (result.score - e);
    }
    let v = 1.0 / v_inv;
    let delta = v * delta_sum;

    // Step 5: the new volatility.
    let a = (sigma * sigma).ln();
    let f = |x: f64| {
        let ex = x.exp();
        ex * (delta * delta - phi * phi - v - ex) / (2.0 * (phi * phi + v + ex).powi(2))
            - (x - a) / (TAU * TAU)
    };
    let mut big_a = a;
    let mut big_b = if delta * delta > phi * phi + v {
        (delta * delta - phi * phi - v).ln()
    } else {
        let mut k = 1.0;
        while f(a - k * TAU) < 0.0 {
            k += 1.0;
        }
        a - k * TAU
    };
    let mut f_a = f(big_a);
    let mut f_b = f(big_b);
    let mut rounds = 0;
    while (big_b - big_a).abs() > EPSILON && rounds < 1000 {
        let c = big_a + (big_a - big_b) * f_a / (f_b - f_a);
        let f_c = f(c);
        if f_c * f_b <= 0.0 {
            big_a = big_b;
            f_a = f_b;
        } else {
            f_a /= 2.0;
        }
        big_b = c;
        f_b = f_c;
        rounds += 1;
    }
    let sigma_new = (big_a / 2.0).exp();

    // Steps 6 to 8.
    let phi_star = (phi * phi + sigma_new * sigma_new).sqrt();
    let phi_new = 1.0 / (1.0 / (phi_star * phi_star) + 1.0 / v).sqrt();
    let mu_new = mu + phi_new * phi_new * delta_sum;
    Rating {
        rating: mu_new * SCALE + 1500.0,
        deviation: phi_new * SCALE,
        volatility: sigma_new,
    }
}

/// Both players' ratings after one game between them; `south_score` is south's score (1, 0.5 or
/// 0). Each is computed from the other's rating before the game.
pub fn settle(south: Rating, north: Rating, south_score: f64) -> (Rating, Rating) {
    (
        update(
            south,
            &[GameResult {
                opponent: north,
                score: south_score,
            }],
        ),
        update(
            north,
            &[GameResult {
                opponent: south,
                score: 1.0 - south_score,
            }],
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(rating: f64, deviation: f64) -> Rating {
        Rating {
            rating,
            deviation,
            volatility: 0.06,
        }
    }

    /// Glickman's worked example: 1500/200/0.06 against 1400/30 (win), 1550/100 (loss) and
    /// 1700/300 (loss) becomes 1464.06 / 151.52 / 0.05999 (τ = 0.5).
    #[test]
    fn glickmans_worked_example() {
        let after = update(
            r(1500.0, 200.0),
            &[
                GameResult {
                    opponent: r(1400.0, 30.0),
                    score: 1.0,
                },
                GameResult {
                    opponent: r(1550.0, 100.0),
                    score: 0.0,
                },
                GameResult {
                    opponent: r(1700.0, 300.0),
                    score: 0.0,
                },
            ],
        );
        assert!((after.rating - 1464.06).abs() < 0.01, "{after:?}");
        assert!((after.deviation - 151.52).abs() < 0.01, "{after:?}");
        assert!((after.volatility - 0.05999).abs() < 0.00001, "{after:?}");
    }

    #[test]
    fn a_period_without_games_only_widens_the_deviation() {
        let after = update(r(1500.0, 200.0), &[]);
        assert_eq!(after.rating, 1500.0);
        assert!(after.deviation > 200.0);
    }

    #[test]
    fn the_winner_gains_what_the_loser_drops_between_equals() {
        let (south, north) = settle(Rating::default(), Rating::default(), 1.0);
        assert!(south.rating > 1500.0 && north.rating < 1500.0);
        assert!(((south.rating - 1500.0) - (1500.0 - north.rating)).abs() < 1e-9);
        let (draw_s, draw_n) = settle(Rating::default(), Rating::default(), 0.5);
        assert!((draw_s.rating - 1500.0).abs() < 1e-9 && (draw_n.rating - 1500.0).abs() < 1e-9);
    }
}
