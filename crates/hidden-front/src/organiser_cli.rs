//! `hidden-front organiser ...`: the organisers' API (docs/organisers.md) from a terminal: bulks of
//! games for given pairs at a set time, and tournaments. Answers are printed as proto3 JSON, one
//! line each, for people and scripts alike. Only the transport: every check is the server's.

use crate::admin_cli::{DEFAULT_SESSION_URL, with_operator_token};
use crate::config::ADMIN_TOKEN_ENV;
use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};
use hidden_front_proto::v1 as pb;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// `hidden-front organiser ...`.
#[derive(Debug, Args)]
pub struct OrganiserArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: OrganiserCommand,
    /// The internal gRPC address of a process running matchmaking (the organisers' API is served
    /// beside it, never on the public port).
    #[arg(
        long,
        env = "HF_MATCHMAKING_URL",
        default_value = DEFAULT_SESSION_URL,
        global = true
    )]
    pub matchmaking_url: String,
    /// The operator token: one of the server's `--admin-token NAME=TOKEN`, as `TOKEN` or as the
    /// whole entry.
    #[arg(long, env = ADMIN_TOKEN_ENV, hide_env_values = true, global = true)]
    pub admin_token: Option<String>,
}

/// The organisers' verbs.
#[derive(Debug, Subcommand)]
pub enum OrganiserCommand {
    /// Bulks: games for given pairs created together at a start time.
    #[command(subcommand)]
    Bulk(BulkCommand),
    /// Tournaments: a Swiss, a round robin or an arena among named entrants.
    #[command(subcommand)]
    Tournament(TournamentCommand),
}

/// The settings every new bulk or tournament takes.
#[derive(Debug, Args)]
pub struct GameSettings {
    /// The rule set (default hidden-front).
    #[arg(long, default_value = "")]
    pub rules: String,
    /// The time control: online (default) or relaxed.
    #[arg(long, default_value = "")]
    pub time_control: String,
    /// Rated games.
    #[arg(long)]
    pub rated: bool,
    /// When the games start: an RFC 3339 time (2026-12-24T18:00:00Z); default at once.
    #[arg(long, value_parser = parse_time, conflicts_with = "start_in")]
    pub start: Option<OffsetDateTime>,
    /// When the games start, in seconds from now.
    #[arg(long, value_name = "SECONDS")]
    pub start_in: Option<u64>,
}

/// `organiser bulk ...`.
#[derive(Debug, Subcommand)]
pub enum BulkCommand {
    /// Creates a bulk from a file of pairs, one `SOUTH NORTH` per line (`#` starts a comment;
    /// `-` reads standard input).
    Create {
        /// The bulk's id (a retry with the same id and content answers the same bulk).
        #[arg(long)]
        id: String,
        /// The file of pairs.
        #[arg(long)]
        pairs: String,
        /// Rules, time control, rating, start.
        #[command(flatten)]
        settings: GameSettings,
    },
    /// A bulk and the state of every game.
    Show {
        /// The bulk's id.
        id: String,
    },
    /// Cancels a bulk before its start.
    Cancel {
        /// The bulk's id.
        id: String,
    },
}

/// A tournament's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Rounds paired by score groups.
    Swiss,
    /// Everyone meets everyone once.
    RoundRobin,
    /// Players paired again as their games end, for a duration.
    Arena,
}

/// `organiser tournament ...`.
#[derive(Debug, Subcommand)]
pub enum TournamentCommand {
    /// Creates a tournament among the players named.
    Create {
        /// The tournament's id.
        #[arg(long)]
        id: String,
        /// Swiss, round-robin or arena.
        #[arg(long, value_enum)]
        format: FormatArg,
        /// A Swiss's rounds.
        #[arg(long, default_value_t = 0)]
        rounds: u32,
        /// An arena's duration in minutes.
        #[arg(long, default_value_t = 0)]
        minutes: u32,
        /// Seconds between a round's end and the next round's start.
        #[arg(long, default_value_t = 0)]
        pause: u32,
        /// Players may join and withdraw themselves until 5 s before the start.
        #[arg(long)]
        open: bool,
        /// Accounts marked as bots may join.
        #[arg(long)]
        allow_bots: bool,
        /// Rules, time control, rating, start.
        #[command(flatten)]
        settings: GameSettings,
        /// The entrants' player ids (none needed with --open).
        entrants: Vec<String>,
    },
    /// A tournament: its rounds and standings.
    Show {
        /// The tournament's id.
        id: String,
    },
}

fn parse_time(text: &str) -> Result<OffsetDateTime, String> {
    OffsetDateTime::parse(text, &Rfc3339)
        .map_err(|e| format!("{text:?} is not an RFC 3339 time (2026-12-24T18:00:00Z): {e}"))
}

impl GameSettings {
    /// The start as the API takes it: ms since the Unix epoch, 0 for at once.
    fn start_at_unix_ms(&self) -> anyhow::Result<u64> {
        if let Some(start) = self.start {
            return u64::try_from(start.unix_timestamp_nanos() / 1_000_000)
                .context("--start is before 1970");
        }
        Ok(match self.start_in {
            Some(seconds) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .context("the system clock is before 1970")?;
                u64::try_from(now.as_millis())? + seconds * 1000
            }
            None => 0,
        })
    }
}

/// The pairs of a pairs file: one `SOUTH NORTH` per line; blank lines and `#` comments skipped.
/// A line of another shape is refused with its number.
pub fn parse_pairs(text: &str) -> anyhow::Result<Vec<pb::BulkPair>> {
    let mut pairs = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            [south, north] => pairs.push(pb::BulkPair {
                south_player: (*south).to_owned(),
                north_player: (*north).to_owned(),
            }),
            _ => bail!("line {}: expected `SOUTH NORTH`, got {line:?}", n + 1),
        }
    }
    if pairs.is_empty() {
        bail!("no pairs: give one `SOUTH NORTH` per line");
    }
    Ok(pairs)
}

fn print_json<T: serde::Serialize>(item: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string(item)?);
    Ok(())
}

/// A failed call as one line: the code, the stable reason and the message.
fn failure(what: &str, url: &str, status: &tonic::Status) -> anyhow::Error {
    let reason = hidden_front_api_error::ErrorSummary::of(status).reason;
    if status.code() == tonic::Code::Unimplemented {
        return anyhow::anyhow!(
            "{what} at {url}: {:?} ({reason}): the server there does not serve the organisers' \
             API: point --matchmaking-url (HF_MATCHMAKING_URL) at the internal port of a process \
             running matchmaking (--internal-listen, default {DEFAULT_SESSION_URL})",
            status.code()
        );
    }
    anyhow::anyhow!(
        "{what} at {url}: {:?} ({reason}): {}",
        status.code(),
        status.message()
    )
}

/// Runs an organiser verb.
pub async fn run(args: OrganiserArgs) -> anyhow::Result<()> {
    let url = &args.matchmaking_url;
    let token = args.admin_token.as_deref();
    let mut client = hidden_front_channel::organiser_client(url)
        .with_context(|| format!("matchmaking URL {url:?}"))?;
    match args.command {
        OrganiserCommand::Bulk(BulkCommand::Create {
            id,
            pairs,
            settings,
        }) => {
            let text = if pairs == "-" {
                std::io::read_to_string(std::io::stdin()).context("reading pairs from stdin")?
            } else {
                std::fs::read_to_string(&pairs).with_context(|| format!("reading {pairs}"))?
            };
            let pairs = parse_pairs(&text).with_context(|| format!("pairs file {pairs:?}"))?;
            let request = pb::CreateBulkRequest {
                bulk_id: id,
                rules: settings.rules.clone(),
                time_control: settings.time_control.clone(),
                rated: settings.rated,
                start_at_unix_ms: settings.start_at_unix_ms()?,
                pairs,
            };
            let answer = client
                .create_bulk(with_operator_token(token, request)?)
                .await
                .map_err(|s| failure("CreateBulk", url, &s))?;
            print_json(&answer.into_inner().bulk)
        }
        OrganiserCommand::Bulk(BulkCommand::Show { id }) => {
            let answer = client
                .get_bulk(with_operator_token(
                    token,
                    pb::GetBulkRequest { bulk_id: id },
                )?)
                .await
                .map_err(|s| failure("GetBulk", url, &s))?;
            print_json(&answer.into_inner().bulk)
        }
        OrganiserCommand::Bulk(BulkCommand::Cancel { id }) => {
            let answer = client
                .cancel_bulk(with_operator_token(
                    token,
                    pb::CancelBulkRequest { bulk_id: id },
                )?)
                .await
                .map_err(|s| failure("CancelBulk", url, &s))?;
            print_json(&answer.into_inner().bulk)
        }
        OrganiserCommand::Tournament(TournamentCommand::Create {
            id,
            format,
            rounds,
            minutes,
            pause,
            open,
            allow_bots,
            settings,
            entrants,
        }) => {
            let format = match format {
                FormatArg::Swiss => pb::TournamentFormat::Swiss,
                FormatArg::RoundRobin => pb::TournamentFormat::RoundRobin,
                FormatArg::Arena => pb::TournamentFormat::Arena,
            };
            let request = pb::CreateTournamentRequest {
                tournament_id: id,
                format: format as i32,
                rounds,
                rules: settings.rules.clone(),
                time_control: settings.time_control.clone(),
                rated: settings.rated,
                start_at_unix_ms: settings.start_at_unix_ms()?,
                pause_seconds: pause,
                entrants,
                duration_minutes: minutes,
                open_to_players: open,
                allow_bots,
            };
            let answer = client
                .create_tournament(with_operator_token(token, request)?)
                .await
                .map_err(|s| failure("CreateTournament", url, &s))?;
            print_json(&answer.into_inner().tournament)
        }
        OrganiserCommand::Tournament(TournamentCommand::Show { id }) => {
            let answer = client
                .get_tournament(with_operator_token(
                    token,
                    pb::GetTournamentRequest { tournament_id: id },
                )?)
                .await
                .map_err(|s| failure("GetTournament", url, &s))?;
            print_json(&answer.into_inner().tournament)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pairs_file_is_read_line_by_line() {
        let pairs = parse_pairs("# round 1\nann bob\n\n  cy   dee  # board 2\n").unwrap();
        assert_eq!(pairs.len(), 2);
        assert_eq!(
            (
                pairs[1].south_player.as_str(),
                pairs[1].north_player.as_str()
            ),
            ("cy", "dee")
        );
        let refused = parse_pairs("ann bob\nann\n").unwrap_err().to_string();
        assert!(refused.contains("line 2"), "{refused}");
        assert!(parse_pairs("# nothing\n").is_err());
    }
}
