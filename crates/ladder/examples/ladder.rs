//! The ladder without building the server binary (quicker to compile in release):
//! `cargo run --release -p hidden-front-ladder --example ladder -- LEVELS GAMES SEED [RULES]
//! [JOBS] [all|adjacent] [duplicate|sprt]`, e.g. `... -- random,greedy,belief,search 400 1
//! gunjin-shogi 1 all`. `duplicate` plays GAMES twins per pair (`hidden-front bot ladder
//! --duplicate`), `sprt` also runs the default sequential test (`--duplicate --sprt`).
//! Prints the same table as `hidden-front bot ladder`.

use hidden_front_bot::Level;
use hidden_front_ladder::{LadderConfig, PUZZLE_SEEDS, Pairs, Sprt};
use hidden_front_rules::Rules;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.into());
    let levels = arg(0, "random,greedy,belief,search")
        .split(',')
        .map(str::parse::<Level>)
        .collect::<Result<Vec<_>, _>>()?;
    let config = LadderConfig {
        levels,
        games: arg(1, "40").parse()?,
        seed: arg(2, "1").parse()?,
        rules: Rules::parse(&arg(3, "hidden-front"))?,
        jobs: arg(4, "1").parse()?,
        pairs: if arg(5, "all") == "adjacent" {
            Pairs::Adjacent
        } else {
            Pairs::All
        },
        budget: None,
        duplicate: matches!(arg(6, "").as_str(), "duplicate" | "sprt"),
        sprt: (arg(6, "") == "sprt").then(Sprt::default),
        puzzle_seeds: PUZZLE_SEEDS,
    };
    let ladder = hidden_front_ladder::run(&config)?;
    println!("{ladder}");
    Ok(())
}
