//! `hidden-front replay`: a finished game's replay out of a running session, and a replay file
//! re-judged with the engine. The text form and the checks are `hidden-front-replay`'s; this is
//! only the transport (the session's internal gRPC API) and the files.

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use hidden_front_proto::v1 as pb;
use hidden_front_replay::{Entry, Header, Replay, TimeControl, verify_text};
use hidden_front_rules::Event;
use hidden_front_wire as wire;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Duration;

/// How long the export waits for each event of an ended game's log before giving up: the
/// session sends a finished log at once, so a wait this long means it is not answering.
const EVENT_WAIT: Duration = Duration::from_secs(30);

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
    }
}

async fn export(args: ExportArgs) -> anyhow::Result<()> {
    let game_id = wire::game_id_from_proto("GAME", &args.game)?.to_string();
    let mut session = hidden_front_channel::session_client(&args.session_url)
        .with_context(|| format!("session URL {:?}", args.session_url))?;
    let view = session
        .get_game(pb::GetGameRequest {
            game_id: game_id.clone(),
            viewer: pb::Viewer::Spectator as i32,
        })
        .await
        .map_err(|s| status_error(&s))
        .with_context(|| format!("reading game {game_id} at {}", args.session_url))?
        .into_inner()
        .game
        .context("the session answered GetGame without a game")?;
    if view.phase != pb::Phase::Ended as i32 {
        let phase = pb::Phase::try_from(view.phase).map_or("unknown", |p| match p {
            pb::Phase::Deployment => "deployment",
            pb::Phase::Play => "play",
            _ => "unknown",
        });
        bail!(
            "game {game_id} has not ended (it is in its {phase} phase): only a finished game has \
             a replay"
        );
    }
    let rules = wire::rules_from_proto("rules", &view.rules)?;
    let mut stream = session
        .watch_game(pb::WatchGameRequest {
            game_id: game_id.clone(),
            from_seq: 1,
        })
        .await
        .map_err(|s| status_error(&s))
        .with_context(|| format!("reading the log of game {game_id}"))?
        .into_inner();
    let mut entries = Vec::new();
    loop {
        let item = tokio::time::timeout(EVENT_WAIT, stream.message())
            .await
            .with_context(|| {
                format!("the session sent no event of game {game_id} for {EVENT_WAIT:?}")
            })?
            .map_err(|s| status_error(&s))
            .with_context(|| format!("reading the log of game {game_id}"))?;
        let Some(item) = item else { break };
        let proto = item
            .event
            .context("the session sent a log item without an event")?;
        let event = wire::engine_event_from_proto(&rules, &proto)
            .with_context(|| format!("event {} of game {game_id}", proto.seq))?;
        let ended = matches!(event, Event::Ended { .. });
        // WatchGame carries no server time: `at` stays unknown (docs/replay-format.md).
        entries.push(Entry {
            seq: proto.seq,
            at: None,
            event,
        });
        if ended {
            break;
        }
    }
    let header = Header {
        game_id: Some(game_id.clone()),
        players: [view.south_player, view.north_player],
        time_control: view.time_control.map(|tc| TimeControl {
            name: tc.name,
            deployment_seconds: tc.deployment_seconds,
            move_seconds: tc.move_seconds,
            reconnect_seconds: tc.reconnect_seconds,
        }),
    };
    let text = Replay::from_events(header, entries)
        .with_context(|| format!("game {game_id}"))?
        .to_text();
    match &args.output {
        Some(path) => {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?
        }
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(())
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
