//! `hidden-front replay`: a finished game's replay out of a running session, every game ended
//! after a feed cursor as NDJSON, and a replay file re-judged with the engine. The text form and
//! the checks are `hidden-front-replay`'s, the producer `hidden-front-replay-export`'s (the one
//! the gateway's `ExportReplay` uses too); this is only the command line and the files.

use anyhow::Context;
use clap::{Args, Subcommand};
use hidden_front_proto::v1 as pb;
use hidden_front_replay::{Replay, Timestamp, verify_text};
use hidden_front_replay_export::{SessionClient, fetch_replay};
use hidden_front_wire as wire;
use std::io::{Read, Write};
use std::path::PathBuf;

/// `hidden-front replay ...`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ReplayCommand,
}

/// The replay verbs.
#[derive(Debug, Subcommand)]
pub enum ReplayCommand {
    /// Writes a finished game's replay (docs/replay-format.md) from the session's internal API.
    Export(ExportArgs),
    /// Re-judges a replay file with the engine: every event and the result; names the first
    /// line that disagrees.
    Verify(VerifyArgs),
    /// Writes every game that ended after a cursor of the ended-games feed as NDJSON, one line
    /// per game with its replay, for analytics; prints the last cursor on standard error.
    ExportEnded(ExportEndedArgs),
}

/// Arguments of `replay export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The game's id.
    pub game: String,
    /// The session's internal gRPC address (full information, no player authentication: the
    /// internal port, never the public one).
    #[arg(long, env = "HF_SESSION_URL", default_value = "http://127.0.0.1:50052")]
    pub session_url: String,
    /// Write the replay to this file instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// Arguments of `replay export-ended`.
#[derive(Debug, Args)]
pub struct ExportEndedArgs {
    /// The feed cursor to start after (0: from the first ended game); pass the last cursor a
    /// previous run printed to resume exactly there.
    #[arg(long)]
    pub after: u64,
    /// Export at most this many games (default: every one ended so far).
    #[arg(long)]
    pub limit: Option<u64>,
    /// The session's internal gRPC address (full information: the internal port).
    #[arg(long, env = "HF_SESSION_URL", default_value = "http://127.0.0.1:50052")]
    pub session_url: String,
    /// Write the lines to this file instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// Arguments of `replay verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The replay file (`-` for standard input).
    pub file: PathBuf,
}

/// Runs a replay verb.
pub async fn run(args: ReplayArgs) -> anyhow::Result<()> {
    match args.command {
        ReplayCommand::Export(args) => export(args).await,
        ReplayCommand::Verify(args) => verify(args),
        ReplayCommand::ExportEnded(args) => export_ended(args).await,
    }
}

async fn export(args: ExportArgs) -> anyhow::Result<()> {
    let game_id = wire::game_id_from_proto("GAME", &args.game)?;
    let session = hidden_front_channel::session_client(&args.session_url)
        .with_context(|| format!("session URL {:?}", args.session_url))?;
    let text = fetch_replay(&session, game_id)
        .await
        .with_context(|| format!("exporting from {}", args.session_url))?
        .to_text();
    match &args.output {
        Some(path) => {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?
        }
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(())
}

/// Games asked of `ListEndedGames` per call (its default page).
const ENDED_PAGE: u32 = 100;

/// `replay export-ended`: one NDJSON line per ended game after the cursor, in feed order; the
/// last cursor written goes to standard error, also when a game fails half-way, so a job
/// resumes exactly there.
async fn export_ended(args: ExportEndedArgs) -> anyhow::Result<()> {
    let session = hidden_front_channel::session_client(&args.session_url)
        .with_context(|| format!("session URL {:?}", args.session_url))?;
    let mut out: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let mut last = args.after;
    let mut written = 0u64;
    let result = export_ended_into(&session, &args, &mut out, &mut last, &mut written).await;
    let flushed = out.flush().context("writing the output");
    eprintln!("exported {written} games; last cursor {last} (resume with --after {last})");
    result.and(flushed)
}

async fn export_ended_into(
    session: &SessionClient,
    args: &ExportEndedArgs,
    out: &mut dyn Write,
    last: &mut u64,
    written: &mut u64,
) -> anyhow::Result<()> {
    loop {
        let wanted = args.limit.map_or(u64::from(ENDED_PAGE), |limit| {
            limit.saturating_sub(*written).min(u64::from(ENDED_PAGE))
        });
        if wanted == 0 {
            return Ok(());
        }
        let page = session
            .clone()
            .list_ended_games(pb::ListEndedGamesRequest {
                after_cursor: *last,
                limit: u32::try_from(wanted).unwrap_or(ENDED_PAGE),
            })
            .await
            .map_err(|s| status_error(&s))
            .with_context(|| format!("ListEndedGames after cursor {last}"))?
            .into_inner()
            .games;
        for ended in &page {
            let game_id = wire::game_id_from_proto("game_id", &ended.game_id)?;
            let replay = fetch_replay(session, game_id)
                .await
                .with_context(|| format!("the game at cursor {}", ended.cursor))?;
            let line = ended_game_line(ended.cursor, &replay);
            serde_json::to_writer(&mut *out, &line).context("writing the output")?;
            out.write_all(b"\n").context("writing the output")?;
            *last = ended.cursor;
            *written += 1;
        }
        if (page.len() as u64) < wanted {
            return Ok(());
        }
    }
}

/// One line of `export-ended` (docs/replay-format.md, "Bulk export"): the feed's cursor, then
/// what the replay says of the game, then the replay itself.
fn ended_game_line(cursor: u64, replay: &Replay) -> serde_json::Value {
    let header = replay.header();
    let outcome = replay.outcome();
    let entries = replay.entries();
    let time = |at: Option<Timestamp>| at.map(|at| at.to_string());
    serde_json::json!({
        "cursor": cursor,
        "game_id": header.game_id,
        "rules": replay.rules().name(),
        "players": { "south": header.players[0], "north": header.players[1] },
        "result": {
            "winner_side": outcome.winner.map(|side| side.name()),
            "winner_player": outcome.winner.map(|side| &header.players[side.index()]),
            "draw": outcome.winner.is_none(),
        },
        "reason": outcome.reason.name(),
        "plies": replay.plies(),
        "started_at": time(entries[0].at),
        "ended_at": time(entries[entries.len() - 1].at),
        "replay": replay.to_text(),
    })
}

fn verify(args: VerifyArgs) -> anyhow::Result<()> {
    let name = args.file.display().to_string();
    let text = if name == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading standard input")?;
        text
    } else {
        std::fs::read_to_string(&args.file).with_context(|| format!("reading {name}"))?
    };
    let verified = verify_text(&text).with_context(|| format!("{name} does not verify"))?;
    println!("{name}: ok, {verified}");
    Ok(())
}

/// A refusal as one line: its code and message.
fn status_error(status: &tonic::Status) -> anyhow::Error {
    anyhow::anyhow!("{:?}: {}", status.code(), status.message())
}
