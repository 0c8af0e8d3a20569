//! The ladder as text: the cross-table, how the games ended, then each level's think times,
//! illegal moves and (Junqi) games with a commander lost to a bomb, a piece stepped into an
//! empty HQ, a flag attempt that found another piece in the HQ, the flag lost to an engineer;
//! then each puzzle of the family at each level. A duplicate ladder adds, after the endings,
//! the paired score of each pair's twins and the sequential test's verdict.

use crate::Ladder;
use std::fmt;

impl fmt::Display for Ladder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.twins_per_pair {
            Some(twins) => writeln!(
                f,
                "duplicate ladder: {} twins ({} games) per pair, rules {}, seed {}, {} job(s)",
                twins, self.games_per_pair, self.rules, self.seed, self.jobs
            )?,
            None => writeln!(
                f,
                "ladder: {} games per pair, rules {}, seed {}, {} job(s)",
                self.games_per_pair, self.rules, self.seed, self.jobs
            )?,
        }
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
        self.fmt_paired(f)?;
        writeln!(
            f,
            "{:<8} {:>8} {:>9} {:>9} {:>9} {:>8} {:>6} {:>9} {:>10} {:>9} {:>10} {:>8} {:>7}",
            "level",
            "moves",
            "p50 ms",
            "p95 ms",
            "max ms",
            "illegal",
            "games",
            "9 bombed",
            "HQ freeze",
            "HQ decoy",
            "flag to 1",
            "no move",
            "undone"
        )?;
        for l in &self.levels {
            writeln!(
                f,
                "{:<8} {:>8} {:>9.3} {:>9.3} {:>9.3} {:>8} {:>6} {:>9} {:>10} {:>9} {:>10} {:>8} {:>7}",
                l.level.name(),
                l.moves,
                l.think_p50_ms,
                l.think_p95_ms,
                l.think_max_ms,
                l.illegal_moves,
                l.games,
                l.commander_bombed_games,
                l.hq_freeze_games,
                l.hq_decoy_games,
                l.flag_to_engineer_games,
                l.no_move_lost_games,
                l.undone_moves
            )?;
        }
        let nats = |loss: &crate::LogLoss| loss.mean().map_or("n/a".into(), |m| format!("{m:.4}"));
        writeln!(
            f,
            "belief log-loss (nats per opponent piece on the board, over {} seat-plies): {} \
             with the constraints alone, {} with the move model (strength {})",
            self.belief.constraints_only.observations,
            nats(&self.belief.constraints_only),
            nats(&self.belief.move_model),
            self.belief.move_model_strength
        )?;
        self.fmt_puzzles(f)?;
        write!(
            f,
            "illegal moves: {}, crashes: {}",
            self.illegal_moves(),
            self.crashes()
        )
    }
}

impl Ladder {
    /// Each puzzle of the family: right answers of each level out of its seeds, `*` where the
    /// level must solve it every time, then the wrong answers given.
    fn fmt_puzzles(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.puzzles.is_empty() {
            return Ok(());
        }
        let mut levels: Vec<hidden_front_bot::Level> = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for p in &self.puzzles {
            if !levels.contains(&p.level) {
                levels.push(p.level);
            }
            if !names.contains(&p.puzzle) {
                names.push(p.puzzle);
            }
        }
        write!(f, "{:<44}", "puzzle (right answers of seeds; * required)")?;
        for level in &levels {
            write!(f, " {:>8}", level.name())?;
        }
        writeln!(f)?;
        for name in names {
            write!(f, "{name:<44}")?;
            for level in &levels {
                let cell = self
                    .puzzles
                    .iter()
                    .find(|p| p.puzzle == name && p.level == *level)
                    .map_or(String::from("-"), |p| {
                        format!(
                            "{}{}/{}",
                            if p.required { "*" } else { "" },
                            p.solved,
                            p.tried
                        )
                    });
                write!(f, " {cell:>8}")?;
            }
            writeln!(f)?;
        }
        for p in self.puzzles.iter().filter(|p| !p.wrong.is_empty()) {
            writeln!(
                f,
                "{} {}: wrong {}",
                p.puzzle,
                p.level.name(),
                p.wrong.join(", ")
            )?;
        }
        writeln!(
            f,
            "puzzles solved: {} of {}",
            self.puzzles.iter().map(|p| p.solved).sum::<u32>(),
            self.puzzles.iter().map(|p| p.tried).sum::<u32>()
        )
    }

    /// The paired score of each pair (a duplicate ladder; nothing otherwise) and, if the ladder
    /// ran one, the sequential test.
    fn fmt_paired(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.pairs.iter().any(|p| p.paired.is_some()) {
            return Ok(());
        }
        writeln!(
            f,
            "{:<16} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5}  {:>6} {:>15}  {:>5} {:>17}  {:>8}",
            "paired",
            "twins",
            "0",
            "0.25",
            "0.5",
            "0.75",
            "1",
            "score",
            "95% score",
            "Elo",
            "95% Elo",
            "var/twin"
        )?;
        for p in &self.pairs {
            let Some(t) = &p.paired else { continue };
            let [c0, c1, c2, c3, c4] = t.pentanomial;
            writeln!(
                f,
                "{:<16} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5}  {:>6.3} {:>15}  {:>+5.0} {:>17}  {:>8.4}",
                format!("{}-{}", p.a, p.b),
                t.twins,
                c0,
                c1,
                c2,
                c3,
                c4,
                t.score,
                format!("[{:.3}, {:.3}]", t.score_low, t.score_high),
                t.elo,
                format!("[{:+.0}, {:+.0}]", t.elo_low, t.elo_high),
                t.twin_variance
            )?;
        }
        let Some(sprt) = &self.sprt else {
            return Ok(());
        };
        let (lower, upper) = sprt.bounds();
        writeln!(
            f,
            "SPRT: H0 Elo {:+}, H1 Elo {:+}, alpha {}, beta {}, LLR bounds [{:+.3}, {:+.3}], \
             no verdict before {} twins",
            sprt.elo0, sprt.elo1, sprt.alpha, sprt.beta, lower, upper, sprt.min_twins
        )?;
        for p in &self.pairs {
            let Some(result) = p.paired.as_ref().and_then(|t| t.sprt.as_ref()) else {
                continue;
            };
            writeln!(
                f,
                "{:<16} {:<12} LLR {:>+8.3} after {} twins",
                format!("{}-{}", p.a, p.b),
                result.verdict.to_string(),
                result.llr,
                result.twins
            )?;
        }
        Ok(())
    }
}
