//! `hidden-front bot <verb>`: tools for the computer player; `bot ladder` plays refereed games
//! between its levels and prints (and writes as JSON) the cross-table.

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use hidden_front_bot::Level;
use hidden_front_ladder::{LadderConfig, Pairs};
use hidden_front_rules::Rules;
use std::path::PathBuf;

/// Arguments of `hidden-front bot`.
#[derive(Debug, Args)]
pub struct BotArgs {
    /// What to do.
    #[command(subcommand)]
    pub verb: BotVerb,
}

/// The verbs of `hidden-front bot`.
#[derive(Debug, Subcommand)]
pub enum BotVerb {
    /// Plays refereed games between computer levels and prints the cross-table (W/D/L, score,
    /// Elo difference with a 95% interval, plies per game, think times, illegal moves).
    Ladder(LadderArgs),
}

/// Which pairs of levels play.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PairsArg {
    /// Every pair of the levels.
    All,
    /// Each level against the next one only.
    Adjacent,
}

/// Arguments of `hidden-front bot ladder`.
#[derive(Debug, Args)]
pub struct LadderArgs {
    /// The levels, weakest first, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "random,greedy,belief,search"
    )]
    pub levels: Vec<String>,
    /// Games per pair (colours alternate every game, the first mover every two).
    #[arg(long, default_value_t = 40)]
    pub games: u32,
    /// Fixes every game.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The rule set (e.g. hidden-front, gunjin-shogi).
    #[arg(long, default_value = "hidden-front")]
    pub rules: String,
    /// Which pairs play.
    #[arg(long, value_enum, default_value_t = PairsArg::All)]
    pub pairs: PairsArg,
    /// Games played at once (1 by default, since think times are measured).
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Also writes the result as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Runs `hidden-front bot`.
pub fn run(args: BotArgs) -> anyhow::Result<()> {
    match args.verb {
        BotVerb::Ladder(args) => ladder(args),
    }
}

fn ladder(args: LadderArgs) -> anyhow::Result<()> {
    let levels = args
        .levels
        .iter()
        .map(|name| name.trim().parse::<Level>())
        .collect::<Result<Vec<_>, _>>()?;
    let rules = Rules::parse(&args.rules).with_context(|| format!("--rules {:?}", args.rules))?;
    let config = LadderConfig {
        rules,
        levels,
        games: args.games,
        seed: args.seed,
        jobs: args.jobs,
        pairs: match args.pairs {
            PairsArg::All => Pairs::All,
            PairsArg::Adjacent => Pairs::Adjacent,
        },
        budget: None,
    };
    let ladder = hidden_front_ladder::run(&config)?;
    println!("{ladder}");
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&ladder)?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    if ladder.illegal_moves() > 0 || ladder.crashes() > 0 {
        anyhow::bail!(
            "{} illegal moves and {} crashed games (both must be 0)",
            ladder.illegal_moves(),
            ladder.crashes()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// `hidden-front bot ...` as the binary parses it.
    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        verb: BotVerb,
    }

    fn args(line: &str) -> BotArgs {
        let cli = Cli::try_parse_from(std::iter::once("bot").chain(line.split_whitespace()))
            .expect("the command line parses");
        BotArgs { verb: cli.verb }
    }

    #[test]
    fn bot_ladder_writes_the_cross_table_as_json() {
        let path = std::env::temp_dir().join(format!("bot-ladder-{}.json", std::process::id()));
        let line = format!(
            "ladder --levels random,greedy --games 2 --seed 3 --rules gunjin-shogi --json {}",
            path.display()
        );
        run(args(&line)).expect("a small ladder runs");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(json["rules"], "gunjin-shogi");
        assert_eq!(json["games_per_pair"], 2);
        let pair = &json["pairs"][0];
        assert_eq!(
            (pair["a"].as_str(), pair["b"].as_str()),
            (Some("random"), Some("greedy"))
        );
        assert_eq!(pair["games"], 2);
        for level in json["levels"].as_array().unwrap() {
            assert_eq!(level["illegal_moves"], 0);
            assert!(level["think_p95_ms"].is_number());
        }
    }

    #[test]
    fn bot_ladder_refuses_an_unknown_level_and_rule_set() {
        let err = run(args("ladder --levels random,grandmaster --games 1")).unwrap_err();
        assert!(err.to_string().contains("grandmaster"), "{err}");
        let err = run(args("ladder --levels random,greedy --rules chess")).unwrap_err();
        assert!(format!("{err:#}").contains("chess"), "{err:#}");
    }
}
