//! The `hidden-front` binary: one executable for every Hidden Front tool, each a subcommand
//! (`rules`, `serve`, `migrate`; `token`, `play` and `bench` slot in beside them as further
//! [`Command`] variants).

use clap::{Parser, Subcommand};
use hidden_front::{
    admin_cli, bot_cli, config, organiser_cli, play, replay, rules_cli, serve, token, webhooks_cli,
};
use std::process::ExitCode;

/// The allocator of every subcommand. Under load, glibc's `malloc` and `free` took about a third
/// of the server's CPU (`_int_malloc`, `_int_free`, `malloc_consolidate`, `unlink_chunk` in a
/// `perf` profile of `bench play`); with mimalloc the same bench makes 1.6 times as many moves a
/// second on the memory store and 1.15 times as many on Postgres (docs/benchmarks.md,
/// "mimalloc instead of glibc malloc").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Command line of the `hidden-front` binary.
#[derive(Debug, Parser)]
#[command(
    name = "hidden-front",
    // The commit too (as `hf_build_info` has it), so that a deployment or a test can prove which
    // build a host runs without starting it.
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("HF_BUILD_COMMIT"), ")"),
    about = "Hidden Front: a backend for the hidden-information board games Junqi and Gunjin Shogi"
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
    /// Runs services (all of them by default) until SIGINT or SIGTERM.
    Serve(Box<config::ServeArgs>),
    /// Applies database migrations to the Postgres at DATABASE_URL.
    Migrate(config::MigrateArgs),
    /// Prints a player token (HS256, signed with the gateway's secret) for trying the gateway.
    Token(token::TokenArgs),
    /// Plays in this terminal through the gateway: a lobby (computer, match, invite, spectate)
    /// and the game (plain text: tmux and pipes work).
    Play(play::PlayArgs),
    /// Load generator: games, idle streams and matchmaking through the gateway; docs/benchmarks.md.
    Bench(hidden_front_bench::cli::BenchArgs),
    /// Replays of finished games: export one from the session, verify a file with the engine.
    Replay(replay::ReplayArgs),
    /// The computer player's tools: `bot ladder` plays its levels against each other.
    Bot(bot_cli::BotArgs),
    /// Operators' tools over the session's admin API: find, inspect and abort games, read the
    /// audit log (docs/admin.md).
    Admin(admin_cli::AdminArgs),
    /// The webhook deliveries of the lifecycle feed: endpoints, dead letters, replays.
    Webhooks(webhooks_cli::WebhooksArgs),
    /// Organisers' tools: bulks of games at a set time, tournaments (docs/organisers.md).
    Organiser(organiser_cli::OrganiserArgs),
}

/// The async runtime for the service commands (the rules CLI needs none).
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Runs the command; an error is printed once as `error: ` and its causes (`{:#}`), never as
/// a debug dump or a backtrace (even with `RUST_BACKTRACE=1`): these are messages for operators
/// and players, not crash reports.
fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs one command to its end.
fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Rules(args) => rules_cli::run(args)?,
        Command::Serve(args) => runtime()?.block_on(serve::serve(args.with_env_aliases()))?,
        Command::Migrate(args) => runtime()?.block_on(serve::migrate(args))?,
        Command::Token(args) => token::run(args)?,
        Command::Play(args) => runtime()?.block_on(play::run(args))?,
        Command::Bench(args) => runtime()?.block_on(hidden_front_bench::cli::run(args))?,
        Command::Replay(args) => runtime()?.block_on(replay::run(args))?,
        Command::Bot(args) => bot_cli::run(args)?,
        Command::Admin(args) => runtime()?.block_on(admin_cli::run(args))?,
        Command::Webhooks(args) => runtime()?.block_on(webhooks_cli::run(args))?,
        Command::Organiser(args) => runtime()?.block_on(organiser_cli::run(args))?,
    }
    Ok(())
}
