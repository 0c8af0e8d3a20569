//! The `hidden-front` binary: one executable for every Hidden Front tool, each a subcommand
//! (`hidden-front rules <verb>` today; `serve`, `migrate`, `token`, `play` and `bench` slot in
//! beside it as further [`Command`] variants).

mod rules_cli;
mod rules_json;

use clap::{Parser, Subcommand};

/// Command line of the `hidden-front` binary.
#[derive(Debug, Parser)]
#[command(
    name = "hidden-front",
    version,
    about = "Hidden Front: a backend for hidden-information Junqi"
)]
struct Cli {
    /// What to run.
    #[command(subcommand)]
    command: Command,
}

/// The tools this binary holds; each variant owns its arguments and its module.
#[derive(Debug, Subcommand)]
enum Command {
    /// The rules engine over JSON Lines: legal moves, applying moves, deployments.
    #[command(long_about = rules_cli::RULES_HELP)]
    Rules(rules_cli::RulesArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Rules(args) => rules_cli::run(args)?,
    }
    Ok(())
}
