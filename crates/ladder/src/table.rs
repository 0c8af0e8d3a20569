//! The ladder as text: the cross-table, how the games ended, then each level's think times,
//! illegal moves and (Junqi) games with a commander lost to a bomb, a piece stepped into an
//! empty HQ, a flag attempt that found another piece in the HQ.

use crate::Ladder;
use std::fmt;

impl fmt::Display for Ladder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "ladder: {} games per pair, rules {}, seed {}, {} job(s)",
            self.games_per_pair, self.rules, self.seed, self.jobs
        )?;
        writeln!(
            f,
            "{:<16} {:>5} {:>5} {:>5} {:>5}  {:>6} {:>15}  {:>5} {:>17}  {:>6}",
            "pair", "games", "W", "D", "L", "score", "95% score", "Elo", "95% Elo", "plies"
        )?;
        for p in &self.pairs {
            writeln!(
                f,
                "{:<16} {:>5} {:>5} {:>5} {:>5}  {:>6.3} {:>15}  {:>+5.0} {:>17}  {:>6.1}{}",
                format!("{}-{}", p.a, p.b),
                p.games,
                p.wins,
                p.draws,
                p.losses,
                p.score,
                format!("[{:.3}, {:.3}]", p.score_low, p.score_high),
                p.elo,
                format!("[{:+.0}, {:+.0}]", p.elo_low, p.elo_high),
                p.plies_mean,
                if p.crashes > 0 {
                    format!("  CRASHES {}", p.crashes)
                } else {
                    String::new()
                }
            )?;
        }
        for p in &self.pairs {
            let endings: Vec<String> = p.endings.iter().map(|(r, n)| format!("{r} {n}")).collect();
            writeln!(f, "{}-{} endings: {}", p.a, p.b, endings.join(", "))?;
        }
        writeln!(
            f,
            "{:<8} {:>8} {:>9} {:>9} {:>9} {:>8} {:>6} {:>9} {:>10} {:>9}",
            "level",
            "moves",
            "p50 ms",
            "p95 ms",
            "max ms",
            "illegal",
            "games",
            "9 bombed",
            "HQ freeze",
            "HQ decoy"
        )?;
        for l in &self.levels {
            writeln!(
                f,
                "{:<8} {:>8} {:>9.3} {:>9.3} {:>9.3} {:>8} {:>6} {:>9} {:>10} {:>9}",
                l.level.name(),
                l.moves,
                l.think_p50_ms,
                l.think_p95_ms,
                l.think_max_ms,
                l.illegal_moves,
                l.games,
                l.commander_bombed_games,
                l.hq_freeze_games,
                l.hq_decoy_games
            )?;
        }
        write!(
            f,
            "illegal moves: {}, crashes: {}",
            self.illegal_moves(),
            self.crashes()
        )
    }
}
