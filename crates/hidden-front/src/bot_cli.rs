//! `hidden-front bot <verb>`: tools for the computer player; `bot ladder` plays refereed games
//! between its levels and prints (and writes as JSON) the cross-table; `--duplicate` plays them
//! in twins on shared deals, `--sprt` stops each pair by a sequential test.

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use hidden_front_bot::Level;
use hidden_front_ladder::{LadderConfig, Pairs, Sprt};
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
    /// Elo difference with a 95% interval, plies per game, think times, illegal moves); with
    /// --duplicate, in twins on shared deals, with the paired score and an optional SPRT.
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
    /// Games per pair (colours alternate every game, the first mover every two). With
    /// --duplicate: twins per pair, two games each (so twice as many games).
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
    /// Plays each pair's games in twins: two games on one deal (the same deployments, one per
    /// seat, the same first mover and random seeds), the levels swapping seats; reports the
    /// paired score of the twins. --games counts twins.
    #[arg(long)]
    pub duplicate: bool,
    /// With --duplicate: stops each pair as soon as a sequential test (GSPRT over the twins, as
    /// fishtest) accepts H0 (Elo = --sprt-elo0) or H1 (Elo = --sprt-elo1), Elo being the first
    /// level's advantage over the second.
    #[arg(long)]
    pub sprt: bool,
    /// The SPRT's H0: Elo difference of the pair's first level over the second.
    #[arg(
        long,
        default_value_t = 0.0,
        allow_negative_numbers = true,
        requires = "sprt"
    )]
    pub sprt_elo0: f64,
    /// The SPRT's H1 (above --sprt-elo0).
    #[arg(
        long,
        default_value_t = 35.0,
        allow_negative_numbers = true,
        requires = "sprt"
    )]
    pub sprt_elo1: f64,
    /// The chance of accepting H1 when H0 holds.
    #[arg(long, default_value_t = 0.05, requires = "sprt")]
    pub sprt_alpha: f64,
    /// The chance of accepting H0 when H1 holds.
    #[arg(long, default_value_t = 0.05, requires = "sprt")]
    pub sprt_beta: f64,
    /// No SPRT verdict before this many twins (the variance of fewer is no estimate).
    #[arg(long, default_value_t = 10, requires = "sprt")]
    pub sprt_min_twins: u32,
    /// Seeds each level gets at each puzzle of the rules' family (docs/bot.md, the puzzles);
    /// 0 plays none.
    #[arg(long, default_value_t = hidden_front_ladder::PUZZLE_SEEDS)]
    pub puzzle_seeds: u32,
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
        duplicate: args.duplicate,
        sprt: args.sprt.then_some(Sprt {
            elo0: args.sprt_elo0,
            elo1: args.sprt_elo1,
            alpha: args.sprt_alpha,
            beta: args.sprt_beta,
            min_twins: args.sprt_min_twins,
        }),
        puzzle_seeds: args.puzzle_seeds,
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
        for level in json["levels"].as_array().unwrap() {
            assert!(level["no_move_lost_games"].is_u64());
            assert!(level["undone_moves"].is_u64());
        }
        // The belief's log-loss over the games, with and without the move model.
        let belief = &json["belief"];
        for key in ["constraints_only", "move_model"] {
            assert!(
                belief[key]["observations"].as_u64().unwrap() > 0,
                "{belief}"
            );
            assert!(belief[key]["nats"].as_f64().unwrap() > 0.0, "{belief}");
        }
        // The Gunjin Shogi puzzles at both levels, the default seeds each.
        let puzzles = json["puzzles"].as_array().unwrap();
        assert!(!puzzles.is_empty());
        for p in puzzles {
            assert!(p["puzzle"].as_str().unwrap().starts_with("gunjin-"), "{p}");
            assert!(matches!(p["level"].as_str(), Some("random" | "greedy")));
            assert_eq!(p["tried"], u64::from(hidden_front_ladder::PUZZLE_SEEDS));
            assert!(p["solved"].as_u64().unwrap() <= 8);
            assert!(p["required"].is_boolean() && p["wrong"].is_array());
        }
    }

    #[test]
    fn bot_ladder_puzzle_seeds_zero_plays_no_puzzle() {
        let path = std::env::temp_dir().join(format!("bot-ladder-np-{}.json", std::process::id()));
        let line = format!(
            "ladder --levels random,greedy --games 1 --puzzle-seeds 0 --json {}",
            path.display()
        );
        run(args(&line)).expect("a small ladder runs");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(json["puzzles"], serde_json::json!([]));
    }

    #[test]
    fn bot_ladder_duplicate_writes_the_paired_score_and_the_sprt_verdict() {
        let path = std::env::temp_dir().join(format!("bot-ladder-dup-{}.json", std::process::id()));
        // Greedy against random: lopsided, so the test stops at its minimum of 4 twins.
        let line = format!(
            "ladder --levels greedy,random --games 12 --seed 3 --duplicate --sprt \
             --sprt-elo0 -10 --sprt-elo1 20 --sprt-min-twins 4 --json {}",
            path.display()
        );
        run(args(&line)).expect("a small duplicate ladder runs");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(json["duplicate"], true);
        assert_eq!(json["twins_per_pair"], 12);
        assert_eq!(json["games_per_pair"], 24);
        assert_eq!(json["sprt"]["elo0"], -10.0);
        assert_eq!(json["sprt"]["elo1"], 20.0);
        assert_eq!(json["sprt"]["min_twins"], 4);
        let paired = &json["pairs"][0]["paired"];
        let pentanomial: Vec<u64> = paired["pentanomial"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect();
        assert_eq!(pentanomial.len(), 5);
        let twins = paired["twins"].as_u64().unwrap();
        assert_eq!(pentanomial.iter().sum::<u64>(), twins);
        assert_eq!(json["pairs"][0]["games"].as_u64(), Some(2 * twins));
        for key in [
            "score",
            "score_low",
            "score_high",
            "elo",
            "elo_low",
            "elo_high",
        ] {
            assert!(paired[key].is_number(), "{key}");
        }
        let sprt = &paired["sprt"];
        assert_eq!(sprt["verdict"], "h1_accepted");
        assert_eq!(sprt["twins"].as_u64(), Some(twins));
        assert!((4..12).contains(&twins), "{twins}");
        assert!(sprt["llr"].as_f64().unwrap() >= sprt["upper"].as_f64().unwrap());
    }

    #[test]
    fn bot_ladder_without_duplicate_writes_no_paired_figures() {
        let path =
            std::env::temp_dir().join(format!("bot-ladder-plain-{}.json", std::process::id()));
        let line = format!(
            "ladder --levels random,greedy --games 2 --seed 3 --json {}",
            path.display()
        );
        run(args(&line)).expect("a small ladder runs");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        std::fs::remove_file(&path).ok();
        for key in ["duplicate", "twins_per_pair", "sprt", "records"] {
            assert!(json.get(key).is_none(), "{key}");
        }
        assert!(json["pairs"][0].get("paired").is_none());
    }

    #[test]
    fn bot_ladder_refuses_an_sprt_without_duplicate_or_with_bad_parameters() {
        let err = run(args("ladder --levels random,greedy --games 2 --sprt")).unwrap_err();
        assert!(err.to_string().contains("--duplicate"), "{err}");
        let err = run(args(
            "ladder --levels random,greedy --games 2 --duplicate --sprt --sprt-elo0 40",
        ))
        .unwrap_err();
        assert!(err.to_string().contains("--sprt-elo1"), "{err}");
        let err = run(args(
            "ladder --levels random,greedy --games 2 --duplicate --sprt --sprt-alpha 0",
        ))
        .unwrap_err();
        assert!(err.to_string().contains("--sprt-alpha"), "{err}");
        // The test's parameters mean nothing without it.
        let cli = Cli::try_parse_from(["bot", "ladder", "--duplicate", "--sprt-elo1", "10"]);
        assert!(cli.is_err());
    }

    #[test]
    fn bot_ladder_refuses_an_unknown_level_and_rule_set() {
        let err = run(args("ladder --levels random,grandmaster --games 1")).unwrap_err();
        assert!(err.to_string().contains("grandmaster"), "{err}");
        let err = run(args("ladder --levels random,greedy --rules chess")).unwrap_err();
        assert!(format!("{err:#}").contains("chess"), "{err:#}");
    }
}
