//! Fits the move model's rates (`hidden_front_inference::MoveModel`) on refereed games and
//! measures the belief's log-loss on other games, for several strengths:
//! `cargo run --release -p hidden-front-ladder --example move_model -- LEVELS GAMES SEED RULES JOBS`
//! plays `GAMES` games for every pair of `LEVELS` with seed `SEED` (the fit) and again with seed
//! `SEED + 1` (the test), then prints the fitted rates as Rust and the test games' log-loss with
//! the constraints alone and with the model at each strength.

use hidden_front_bot::Level;
use hidden_front_inference::{KIND_SLOTS, MoveModel};
use hidden_front_ladder::{LadderConfig, Pairs, activity_counts, log_loss};
use hidden_front_rules::Rules;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.into());
    let levels = arg(0, "belief,search,expert")
        .split(',')
        .map(str::parse::<Level>)
        .collect::<Result<Vec<_>, _>>()?;
    let seed: u64 = arg(2, "11").parse()?;
    let rules = Rules::parse(&arg(3, "hidden-front"))?;
    let config = |seed: u64| -> Result<LadderConfig, Box<dyn std::error::Error>> {
        Ok(LadderConfig {
            levels: levels.clone(),
            games: arg(1, "40").parse()?,
            seed,
            rules,
            jobs: arg(4, "2").parse()?,
            pairs: Pairs::All,
            budget: None,
            duplicate: false,
            sprt: None,
            puzzle_seeds: 0,
        })
    };
    let fit = hidden_front_ladder::run(&config(seed)?)?;
    let counts = activity_counts(&fit.records);
    println!(
        "fit: {} games, seed {seed}, rules {}",
        fit.records.len(),
        rules.name()
    );
    println!("kind  piece-turns  moves  attacks  move rate  attack share");
    for k in 0..KIND_SLOTS {
        if counts.turns[k] > 0 {
            println!(
                "{k:>4} {:>12} {:>6} {:>8} {:>10.5} {:>13.4}",
                counts.turns[k],
                counts.moves[k],
                counts.attacks[k],
                counts.moves[k] as f64 / counts.turns[k] as f64,
                if counts.moves[k] > 0 {
                    counts.attacks[k] as f64 / counts.moves[k] as f64
                } else {
                    0.0
                }
            );
        }
    }
    let model = |strength: f64| {
        MoveModel::from_counts(&counts.turns, &counts.moves, &counts.attacks, strength)
    };
    let rounded = |xs: [f64; KIND_SLOTS]| {
        xs.iter()
            .map(|x| format!("{x:.5}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let fitted = model(1.0);
    println!("move_rate: [{}],", rounded(fitted.move_rate));
    println!("attack_share: [{}],", rounded(fitted.attack_share));
    let test = hidden_front_ladder::run(&config(seed + 1)?)?;
    let plain = log_loss(rules, &test.records, None);
    let plain_mean = plain.mean().ok_or("no test game gave a log-loss")?;
    println!(
        "test: {} games, seed {}: constraints alone {:.4} nats per piece over {} seat-plies",
        test.records.len(),
        seed + 1,
        plain_mean,
        plain.observations
    );
    for strength in [0.1, 0.25, 0.5, 0.75, 1.0] {
        let with = log_loss(rules, &test.records, Some(model(strength)))
            .mean()
            .ok_or("no test game gave a log-loss")?;
        println!(
            "  move model, strength {strength}: {with:.4} ({:+.4})",
            with - plain_mean
        );
    }
    Ok(())
}
