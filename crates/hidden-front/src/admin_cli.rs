//! `hidden-front admin`: the admin API (docs/admin.md) for on-call engineers: find games, inspect
//! one with full information, abort one, read the audit log. Human-readable by default, the
//! responses as proto3 JSON with `--json`. Only the transport: every check is the session's.

use crate::config::{ADMIN_TOKEN_ENV, ADMIN_TOKEN_ENV_ALIAS};
use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};
use hidden_front_proto::v1 as pb;
use hidden_front_telemetry::TracedChannel;
use std::fmt::Write as _;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tonic::metadata::MetadataValue;

/// `hidden-front admin ...`.
#[derive(Debug, Args)]
pub struct AdminArgs {
    /// Where and as whom.
    #[command(flatten)]
    pub connection: Connection,
    /// What to do.
    #[command(subcommand)]
    pub command: AdminCommand,
}

/// The session to ask and the operator's credential, and how to print the answer.
#[derive(Debug, Args)]
pub struct Connection {
    /// Where and as whom.
    #[command(flatten)]
    pub operator: OperatorConnection,
    /// Print the answer as proto3 JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

/// The session's internal address and an operator token: what every operator verb
/// (`hidden-front admin`, `hidden-front webhooks`) needs to reach the internal port.
#[derive(Debug, Args)]
pub struct OperatorConnection {
    /// The session's internal gRPC address (the operator APIs are served beside the session,
    /// never on the public port).
    #[arg(
        long,
        env = "HF_SESSION_URL",
        default_value = DEFAULT_SESSION_URL,
        global = true
    )]
    pub session_url: String,
    /// The operator token: one of the session's `--admin-token NAME=TOKEN`, as `TOKEN` or as
    /// the whole `NAME=TOKEN` entry (the same variable as the server's; its old name
    /// `HF_ADMIN_TOKENS` is read too when this one is unset).
    #[arg(long, env = ADMIN_TOKEN_ENV, hide_env_values = true, global = true)]
    pub admin_token: Option<String>,
}

/// The default `--session-url` (the internal port of a one-box `serve`), named in hints.
pub const DEFAULT_SESSION_URL: &str = "http://127.0.0.1:50052";

impl OperatorConnection {
    /// The credential to send: `--admin-token` or [`ADMIN_TOKEN_ENV`], else the old
    /// [`ADMIN_TOKEN_ENV_ALIAS`]; a `NAME=TOKEN` entry gives its TOKEN. A value with several
    /// entries (a server's whole list) is refused: it does not say which operator you are.
    pub fn credential(&self) -> anyhow::Result<Option<String>> {
        operator_credential(self.admin_token.as_deref())
    }

    /// `message` with the operator's token as `authorization: Bearer` (without a token the
    /// session answers UNAUTHENTICATED, naming what is missing).
    pub fn authorized<T>(&self, message: T) -> anyhow::Result<tonic::Request<T>> {
        with_operator_token(self.admin_token.as_deref(), message)
    }
}

/// The credential to send: `admin_token` (`--admin-token` or [`ADMIN_TOKEN_ENV`]), else the old
/// [`ADMIN_TOKEN_ENV_ALIAS`]; a `NAME=TOKEN` entry gives its TOKEN. A value with several entries
/// (a server's whole list) is refused: it does not say which operator you are.
pub fn operator_credential(admin_token: Option<&str>) -> anyhow::Result<Option<String>> {
    let (value, source) = match admin_token {
        Some(value) => (
            value.to_owned(),
            format!("--admin-token ({ADMIN_TOKEN_ENV})"),
        ),
        None => match std::env::var(ADMIN_TOKEN_ENV_ALIAS) {
            Ok(value) => (value, ADMIN_TOKEN_ENV_ALIAS.to_string()),
            Err(_) => return Ok(None),
        },
    };
    if value.contains(',') {
        bail!(
            "{source} holds several entries: give the CLI one operator's token \
                 (TOKEN or NAME=TOKEN)"
        );
    }
    let token = hidden_front_session::admin::auth::operator_credential(&value);
    Ok((!token.is_empty()).then(|| token.to_owned()))
}

/// `message` with the operator's token ([`operator_credential`]) as `authorization: Bearer`.
pub fn with_operator_token<T>(
    admin_token: Option<&str>,
    message: T,
) -> anyhow::Result<tonic::Request<T>> {
    let mut request = tonic::Request::new(message);
    if let Some(token) = operator_credential(admin_token)? {
        let value = MetadataValue::try_from(format!("Bearer {token}"))
            .context("the admin token cannot be sent as a header value")?;
        request.metadata_mut().insert("authorization", value);
    }
    Ok(request)
}

/// The admin verbs.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Games by player, phase, rule set, creation time, idleness; newest first.
    Find(FindArgs),
    /// One game with full information (audited).
    Inspect(InspectArgs),
    /// Stops a game: it ends with no result (audited).
    Abort(AbortArgs),
    /// The audit log: who inspected or aborted what, when and why.
    Audit(AuditArgs),
}

/// A phase to search for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PhaseArg {
    /// Deploying.
    Deployment,
    /// In play.
    Play,
    /// Over.
    Ended,
}

/// Arguments of `admin find`.
#[derive(Debug, Args)]
pub struct FindArgs {
    /// Games this player sits in (either seat).
    #[arg(long)]
    pub player: Option<String>,
    /// Games in this phase.
    #[arg(long, value_enum)]
    pub phase: Option<PhaseArg>,
    /// Games under exactly this rule set name.
    #[arg(long)]
    pub rules: Option<String>,
    /// Games created at or after this time (RFC 3339, e.g. 2026-12-01T10:00:00Z).
    #[arg(long, value_parser = parse_time)]
    pub created_from: Option<OffsetDateTime>,
    /// Games created before this time (RFC 3339).
    #[arg(long, value_parser = parse_time)]
    pub created_before: Option<OffsetDateTime>,
    /// "Stuck" games: in play (never in deployment, never ended) with no event for at least
    /// this many seconds (1 or more: every game in play is `--phase play`).
    #[arg(long, value_name = "SECONDS", value_parser = parse_stuck_for)]
    pub stuck_for: Option<u64>,
    /// At most this many games (default 50, at most 500).
    #[arg(long, default_value_t = 50)]
    pub limit: u32,
    /// The next page: the cursor a previous `find` printed.
    #[arg(long)]
    pub cursor: Option<String>,
}

/// Arguments of `admin inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The game's id.
    pub game: String,
    /// Why you look (a ticket, an incident): recorded in the audit log.
    #[arg(long)]
    pub reason: String,
}

/// Arguments of `admin abort`.
#[derive(Debug, Args)]
pub struct AbortArgs {
    /// The game's id.
    pub game: String,
    /// Why you stop it: recorded in the audit log.
    #[arg(long)]
    pub reason: String,
    /// A key for this abort; a retry with the same key gets the first answer (default: a fresh
    /// one, printed).
    #[arg(long)]
    pub idempotency_key: Option<String>,
}

/// Arguments of `admin audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Only entries about this game.
    #[arg(long)]
    pub game: Option<String>,
    /// Entries older than this id (newest first).
    #[arg(long)]
    pub before: Option<u64>,
    /// Entries newer than this id (oldest first), to follow the log.
    #[arg(long)]
    pub after: Option<u64>,
    /// At most this many entries (default 50, at most 500).
    #[arg(long, default_value_t = 50)]
    pub limit: u32,
}

/// `--stuck-for`: at least one second. Why: the API reads an idleness of 0 as "not asked", so
/// `--stuck-for 0` would list every game, the ended ones too.
fn parse_stuck_for(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("must be at least 1 second; for every game in play, use --phase play".into()),
        Ok(seconds) => Ok(seconds),
        Err(_) => Err(format!("{text:?} is not a number of seconds")),
    }
}

fn parse_time(text: &str) -> Result<OffsetDateTime, String> {
    OffsetDateTime::parse(text, &Rfc3339)
        .map_err(|e| format!("{text:?} is not an RFC 3339 time (2026-12-01T10:00:00Z): {e}"))
}

/// Runs an admin verb and prints its answer.
pub async fn run(args: AdminArgs) -> anyhow::Result<()> {
    let connection = &args.connection;
    let url = &connection.operator.session_url;
    let mut client =
        hidden_front_channel::admin_client(url).with_context(|| format!("session URL {url:?}"))?;
    let out = match args.command {
        AdminCommand::Find(find) => {
            let answer = client
                .find_games(authorized(connection, find_request(&find)?)?)
                .await
                .map_err(|s| status_error(&s, url))
                .context("FindGames")?
                .into_inner();
            render(connection, &answer, found_text)?
        }
        AdminCommand::Inspect(inspect) => {
            let answer = client
                .inspect_game(authorized(
                    connection,
                    pb::InspectGameRequest {
                        game_id: inspect.game,
                        reason: inspect.reason,
                    },
                )?)
                .await
                .map_err(|s| status_error(&s, url))
                .context("InspectGame")?
                .into_inner();
            render(connection, &answer, inspect_text)?
        }
        AdminCommand::Abort(abort) => {
            let key = abort
                .idempotency_key
                .unwrap_or_else(|| format!("cli:{}", uuid::Uuid::new_v4()));
            let answer =
                abort_call(&mut client, connection, abort.game, abort.reason, &key).await?;
            render(connection, &answer, |a| abort_text(a, &key))?
        }
        AdminCommand::Audit(audit) => {
            let answer = client
                .list_audit_log(authorized(
                    connection,
                    pb::ListAuditLogRequest {
                        game_id: audit.game.unwrap_or_default(),
                        before_id: audit.before.unwrap_or(0),
                        after_id: audit.after.unwrap_or(0),
                        limit: audit.limit,
                    },
                )?)
                .await
                .map_err(|s| status_error(&s, url))
                .context("ListAuditLog")?
                .into_inner();
            render(connection, &answer, |a| {
                a.entries.iter().map(audit_line).collect::<String>()
            })?
        }
    };
    print!("{out}");
    Ok(())
}

async fn abort_call(
    client: &mut pb::admin_service_client::AdminServiceClient<TracedChannel>,
    connection: &Connection,
    game_id: String,
    reason: String,
    key: &str,
) -> anyhow::Result<pb::AbortGameResponse> {
    let url = &connection.operator.session_url;
    match client
        .abort_game(authorized(
            connection,
            pb::AbortGameRequest {
                game_id,
                reason,
                idempotency_key: key.to_owned(),
            },
        )?)
        .await
    {
        Ok(answer) => Ok(answer.into_inner()),
        // The abort may have been applied before the answer was lost: the same key gets the
        // first answer, never a second abort.
        Err(status) if may_succeed_on_retry(status.code()) => Err(status_error(&status, url))
            .with_context(|| format!("AbortGame (idempotency key {key}: retry with it)")),
        Err(status) => Err(status_error(&status, url)).context("AbortGame"),
    }
}

/// Whether a call that failed with `code` may go through if sent again unchanged: the server
/// was unreachable, busy, or lost the answer. A refusal (not found, invalid, wrong phase, no
/// credential) answers the same every time, so a retry hint would only mislead.
fn may_succeed_on_retry(code: tonic::Code) -> bool {
    use tonic::Code;
    matches!(
        code,
        Code::Unavailable
            | Code::DeadlineExceeded
            | Code::Aborted
            | Code::ResourceExhausted
            | Code::Cancelled
            | Code::Unknown
            | Code::Internal
    )
}

/// `message` with the operator's token.
fn authorized<T>(connection: &Connection, message: T) -> anyhow::Result<tonic::Request<T>> {
    connection.operator.authorized(message)
}

/// The answer as JSON (`--json`) or as `text` makes it.
fn render<T: serde::Serialize>(
    connection: &Connection,
    answer: &T,
    text: impl Fn(&T) -> String,
) -> anyhow::Result<String> {
    if connection.json {
        Ok(format!("{}\n", serde_json::to_string_pretty(answer)?))
    } else {
        Ok(text(answer))
    }
}

fn find_request(find: &FindArgs) -> anyhow::Result<pb::FindGamesRequest> {
    let millis = |t: Option<OffsetDateTime>| -> anyhow::Result<u64> {
        match t {
            None => Ok(0),
            Some(t) => u64::try_from(t.unix_timestamp_nanos() / 1_000_000)
                .context("times before 1970 are not searched"),
        }
    };
    Ok(pb::FindGamesRequest {
        player: find.player.clone().unwrap_or_default(),
        phase: match find.phase {
            None => pb::Phase::Unspecified,
            Some(PhaseArg::Deployment) => pb::Phase::Deployment,
            Some(PhaseArg::Play) => pb::Phase::Play,
            Some(PhaseArg::Ended) => pb::Phase::Ended,
        } as i32,
        rules: find.rules.clone().unwrap_or_default(),
        created_from_unix_millis: millis(find.created_from)?,
        created_before_unix_millis: millis(find.created_before)?,
        idle_seconds: find.stuck_for.unwrap_or(0),
        limit: find.limit,
        cursor: find.cursor.clone().unwrap_or_default(),
    })
}

/// A time in milliseconds since the epoch as RFC 3339 (UTC).
fn time_text(millis: u64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| format!("{millis} ms"))
}

fn phase_name(phase: i32) -> &'static str {
    match pb::Phase::try_from(phase) {
        Ok(pb::Phase::Deployment) => "deployment",
        Ok(pb::Phase::Play) => "play",
        Ok(pb::Phase::Ended) => "ended",
        _ => "unknown",
    }
}

fn outcome_text(outcome: Option<&pb::Outcome>) -> String {
    let Some(outcome) = outcome else {
        return String::new();
    };
    let winner = match pb::Side::try_from(outcome.winner) {
        Ok(pb::Side::South) => "south won",
        Ok(pb::Side::North) => "north won",
        _ => "no winner",
    };
    let reason = pb::EndReason::try_from(outcome.reason)
        .map(|r| {
            r.as_str_name()
                .trim_start_matches("END_REASON_")
                .to_lowercase()
        })
        .unwrap_or_else(|_| "unknown".into());
    format!(" ({winner}, {reason})")
}

fn game_line(game: &pb::FoundGame) -> String {
    format!(
        "{}  {:<10} v{:<4} {} vs {}  {}  created {}  last event {}{}\n",
        game.game_id,
        phase_name(game.phase),
        game.version,
        game.south_player,
        game.north_player,
        game.rules,
        time_text(game.created_unix_millis),
        time_text(game.last_event_unix_millis),
        outcome_text(game.outcome.as_ref()),
    )
}

fn found_text(answer: &pb::FindGamesResponse) -> String {
    let mut out: String = answer.games.iter().map(game_line).collect();
    let _ = writeln!(out, "{} game(s)", answer.games.len());
    if !answer.next_cursor.is_empty() {
        let _ = writeln!(out, "more: --cursor {}", answer.next_cursor);
    }
    out
}

fn audit_line(entry: &pb::AuditEntry) -> String {
    format!(
        "#{} {} {} {} {} [{}] {}\n",
        entry.id,
        time_text(entry.at_unix_millis),
        entry.operator,
        entry.action,
        entry.game_id,
        entry.outcome,
        entry.reason,
    )
}

fn inspect_text(answer: &pb::InspectGameResponse) -> String {
    let mut out = String::new();
    if let Some(game) = &answer.game {
        out.push_str(&game_line(game));
    }
    let _ = writeln!(
        out,
        "connected: south {}, north {}",
        answer.south_connected, answer.north_connected
    );
    for timer in &answer.timers {
        let kind = pb::TimerKind::try_from(timer.kind)
            .map(|k| {
                k.as_str_name()
                    .trim_start_matches("TIMER_KIND_")
                    .to_lowercase()
            })
            .unwrap_or_else(|_| "unknown".into());
        let _ = writeln!(
            out,
            "timer: {kind} for side {} (armed at v{}) fires {}",
            pb::Side::try_from(timer.side).map_or("unknown", |s| s.as_str_name()),
            timer.armed_version,
            time_text(timer.deadline_unix_millis)
        );
    }
    let _ = writeln!(out, "{} event(s), full information:", answer.events.len());
    for event in &answer.events {
        let body = serde_json::to_string(event).unwrap_or_default();
        let _ = writeln!(out, "  {:>4} {body}", event.seq);
    }
    if let Some(audit) = &answer.audit {
        out.push_str("audited: ");
        out.push_str(&audit_line(audit));
    }
    out
}

fn abort_text(answer: &pb::AbortGameResponse, key: &str) -> String {
    let mut out = format!(
        "{} at version {}{} (idempotency key {key})\n",
        if answer.replayed {
            "already aborted"
        } else {
            "aborted"
        },
        answer.version,
        outcome_text(answer.outcome.as_ref()),
    );
    if let Some(audit) = &answer.audit {
        out.push_str("audited: ");
        out.push_str(&audit_line(audit));
    }
    out
}

/// A refusal as one line: its code, reason and message. `UNIMPLEMENTED` means the server at
/// `url` does not serve the admin API at all (tonic's answer for an unknown service has no
/// message), almost always because `--session-url` names the public port: say which port to use.
fn status_error(status: &tonic::Status, url: &str) -> anyhow::Error {
    let reason = hidden_front_api_error::ErrorSummary::of(status).reason;
    if status.code() == tonic::Code::Unimplemented {
        return anyhow::anyhow!(
            "{:?} ({reason}): the server at {url} does not serve the admin API. It is served \
             beside the session: on the internal port (--internal-listen, default \
             {DEFAULT_SESSION_URL}) of a process that also runs the gateway, on --listen of a \
             session-only process, never on the gateway's public port; point --session-url \
             (HF_SESSION_URL) there",
            status.code()
        );
    }
    anyhow::anyhow!("{:?} ({reason}): {}", status.code(), status.message())
}
