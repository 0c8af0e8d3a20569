//! `hidden-front webhooks ...`: the operators' verbs over `WebhookAdminService` on the
//! session's internal port: where each endpoint stands, its dead letters, replays. Answers are
//! printed as JSON lines (proto3 JSON of each entry), for people and scripts alike.

use crate::admin_cli::{DEFAULT_SESSION_URL, OperatorConnection};
use crate::config::ADMIN_TOKEN_ENV;
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use hidden_front_proto::v1 as pb;

/// `hidden-front webhooks ...`.
#[derive(Debug, Args)]
pub struct WebhooksArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: WebhooksCommand,
    /// Where and as whom.
    #[command(flatten)]
    pub connection: OperatorConnection,
}

/// The webhooks verbs.
#[derive(Debug, Subcommand)]
pub enum WebhooksCommand {
    /// Every configured endpoint: cursor, lag, last error, lease holder, dead letters.
    Endpoints,
    /// The dead letters of one endpoint (`--endpoint`) or of all.
    DeadLetters {
        /// Only this endpoint's.
        #[arg(long)]
        endpoint: Option<String>,
    },
    /// Sends one dead letter (`--position`) or all of an endpoint's (`--all`) again, with
    /// their original ids, before the endpoint's next live fact.
    Replay {
        /// The endpoint.
        #[arg(long)]
        endpoint: String,
        /// The dead letter's outbox position.
        #[arg(long, conflicts_with = "all")]
        position: Option<u64>,
        /// Every dead letter of the endpoint.
        #[arg(long)]
        all: bool,
    },
}

/// A failed call as one line: where, the code, the stable reason and the message. An
/// `UNIMPLEMENTED` answer has no message of its own (the server has no such service), so it
/// says what does serve it: a session started with `--webhooks-config`, on its internal port.
fn failure(what: &str, url: &str, status: &tonic::Status) -> anyhow::Error {
    let reason = hidden_front_api_error::ErrorSummary::of(status).reason;
    if status.code() == tonic::Code::Unimplemented {
        return anyhow::anyhow!(
            "{what} at {url}: {:?} ({reason}): the server at {url} does not serve the webhook \
             admin API: start the session with --webhooks-config FILE (HF_WEBHOOKS_CONFIG), and \
             point --session-url (HF_SESSION_URL) at it: the internal port (--internal-listen, \
             default {DEFAULT_SESSION_URL}) of a process that also runs the gateway, --listen \
             of a session-only process",
            status.code()
        );
    }
    anyhow::anyhow!(
        "{what} at {url}: {:?} ({reason}): {}",
        status.code(),
        status.message()
    )
}

fn print_json<T: serde::Serialize>(item: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string(item)?);
    Ok(())
}

/// Runs a webhooks verb.
pub async fn run(args: WebhooksArgs) -> anyhow::Result<()> {
    let connection = &args.connection;
    if connection.credential()?.is_none() {
        bail!("give an admin token: --admin-token TOKEN (or {ADMIN_TOKEN_ENV})");
    }
    let url = &connection.session_url;
    let mut client = hidden_front_channel::webhook_admin_client(url)
        .with_context(|| format!("session URL {url:?}"))?;
    let failed = |what: &str, status: tonic::Status| failure(what, url, &status);
    match args.command {
        WebhooksCommand::Endpoints => {
            let answer = client
                .list_endpoints(connection.authorized(pb::ListEndpointsRequest {})?)
                .await
                .map_err(|s| failed("ListEndpoints", s))?
                .into_inner();
            for endpoint in &answer.endpoints {
                print_json(endpoint)?;
            }
        }
        WebhooksCommand::DeadLetters { endpoint } => {
            let answer = client
                .list_dead_letters(connection.authorized(pb::ListDeadLettersRequest {
                    endpoint: endpoint.unwrap_or_default(),
                })?)
                .await
                .map_err(|s| failed("ListDeadLetters", s))?
                .into_inner();
            for letter in &answer.dead_letters {
                print_json(letter)?;
            }
        }
        WebhooksCommand::Replay {
            endpoint,
            position,
            all,
        } => {
            if position.is_none() && !all {
                bail!("say which: --position N for one dead letter, or --all");
            }
            let answer = client
                .replay_dead_letters(connection.authorized(pb::ReplayDeadLettersRequest {
                    endpoint,
                    position: position.unwrap_or(0),
                })?)
                .await
                .map_err(|s| failed("ReplayDeadLetters", s))?
                .into_inner();
            print_json(&answer)?;
        }
    }
    Ok(())
}
