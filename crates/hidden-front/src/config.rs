//! The configuration of `hidden-front serve` and `hidden-front migrate`: every setting is a flag
//! with an environment variable (the README's configuration table), so the same struct configures
//! the binary, a Kubernetes pod and an in-process [`crate::app::Application`] in a test.

use clap::{Args, ValueEnum};
use std::net::SocketAddr;

/// The environment variable of `--admin-token`, for the server (`NAME=TOKEN,...`) and for the
/// operator CLI (`TOKEN`, or one `NAME=TOKEN`) alike: one name, so the value an operator was
/// given works wherever it is set.
pub const ADMIN_TOKEN_ENV: &str = "HF_ADMIN_TOKEN";

/// The old name of [`ADMIN_TOKEN_ENV`] (the server read only this one before): still read, by
/// the server and the CLI, when the new one is unset, so existing deployments keep working.
pub const ADMIN_TOKEN_ENV_ALIAS: &str = "HF_ADMIN_TOKENS";

/// The largest `--database-max-connections`: more than any one Postgres should hold for one
/// process (its default `max_connections` is 100).
pub const MAX_DATABASE_CONNECTIONS: u32 = 1000;

/// A listen address as `HOST:PORT` (`127.0.0.1:0` picks a free port). A bare `:PORT` is refused
/// with the two addresses it could have meant, because guessing wrong either exposes an
/// internal port on every interface or hides a public one.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    if let Some(port) = text.strip_prefix(':') {
        return Err(format!(
            "{text:?} has no host: give 127.0.0.1:{port} (this machine only) or 0.0.0.0:{port} \
             (every interface)"
        ));
    }
    text.parse().map_err(|_| {
        format!("{text:?} is not HOST:PORT with an IP address (e.g. 127.0.0.1:50051, [::1]:50051)")
    })
}

/// A service this binary can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServiceName {
    /// Every service.
    All,
    /// The referee: game state, commands, the event log.
    Session,
    /// The public door: authentication, per-player filtered streams, presence.
    Gateway,
    /// Durable timers: fires deployment, move and reconnect deadlines back into the session.
    Clock,
    /// Pairing: queues, ratings, invites, games against the computer.
    Matchmaking,
}

/// Arguments of `hidden-front serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Services to run, comma-separated.
    #[arg(
        long,
        env = "HF_SERVICES",
        value_delimiter = ',',
        default_value = "all"
    )]
    pub services: Vec<ServiceName>,
    /// Address for the gRPC port (`127.0.0.1:0` picks a free port; the chosen address is printed).
    #[arg(long, env = "HF_LISTEN", value_parser = parse_listen, default_value = "127.0.0.1:50051")]
    pub listen: SocketAddr,
    /// Address of the internal gRPC port, used when the session and the gateway run in one
    /// process: the session's API (full information, no player authentication) is then never
    /// served on the public `--listen` port. A process without the gateway serves the session on
    /// `--listen`.
    #[arg(long, env = "HF_INTERNAL_LISTEN", value_parser = parse_listen, default_value = "127.0.0.1:50052")]
    pub internal_listen: SocketAddr,
    /// Postgres URL. Without it games are kept in memory and lost when the process stops.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Postgres URL of a further game shard, each a separate database (usually its own
    /// primary); repeat the flag, or list them comma-separated in `HF_DATABASE_SHARDS`. The
    /// `--database-url` database is shard 0 and keeps the global tables (matchmaking, webhooks,
    /// the admin audit log); these are shards 1, 2, ... in the order given, which must never
    /// change (a new shard goes at the end). New games spread over all shards; a game stays on
    /// the shard it was created on (docs/sharding.md). None: one database, as before.
    #[arg(
        long = "database-shard",
        env = "HF_DATABASE_SHARDS",
        hide_env_values = true,
        value_delimiter = ','
    )]
    pub database_shards: Vec<String>,
    /// Most connections this process's Postgres pool opens (1 to 1000; the LISTEN connection
    /// and the group commit's connection come on top). Every replica has its own pool, so the
    /// replicas times this (plus two) must stay under the server's `max_connections`
    /// (deploy/README.md, Sizing Postgres connections).
    #[arg(long, env = "HF_DATABASE_MAX_CONNECTIONS",
          default_value_t = hidden_front_store::postgres::DEFAULT_MAX_CONNECTIONS,
          value_parser = clap::value_parser!(u32).range(1..=MAX_DATABASE_CONNECTIONS as i64))]
    pub database_max_connections: u32,
    /// Events between the raw engine snapshots a game's Postgres row holds (1 to 1024). Between
    /// snapshots an append writes only the row's small columns, and a load replays the events
    /// the snapshot lags (at most N - 1). 1 writes the snapshot on every append
    /// (docs/session.md, Snapshots).
    #[arg(long, env = "HF_SNAPSHOT_INTERVAL",
          default_value_t = hidden_front_store::postgres::DEFAULT_SNAPSHOT_INTERVAL,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub snapshot_interval: u64,
    /// Apply pending migrations at start (otherwise run `hidden-front migrate` first).
    #[arg(long, env = "HF_MIGRATE_ON_START", default_value_t = true, action = clap::ArgAction::Set)]
    pub migrate_on_start: bool,
    /// Largest gRPC message accepted, in bytes; larger ones are refused with OUT_OF_RANGE.
    #[arg(long, env = "HF_MAX_MESSAGE_BYTES", default_value_t = 64 * 1024)]
    pub max_message_bytes: usize,
    /// Seconds a presence report holds: the lease this process's gateway gives its reports (it
    /// renews them every sixth to third of it, spread over seats; at least 3 s), and the
    /// session's default for a report that gives none. A player behind a gateway that dies counts as away once the lease lapses.
    #[arg(long, env = "HF_PRESENCE_LEASE_SECONDS", default_value_t = 30)]
    pub presence_lease_seconds: u64,
    /// Log format.
    #[arg(long, env = "HF_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Seconds to finish in-flight work after SIGTERM/SIGINT before exiting regardless.
    #[arg(long, env = "HF_SHUTDOWN_GRACE_SECONDS", default_value_t = 10)]
    pub shutdown_grace_seconds: u64,
    /// Where the gateway (and the clock, and matchmaking) find the session service over gRPC.
    /// Default: this process's own session, called directly in process (no socket); without a
    /// session here, this process's own port.
    #[arg(long, env = "HF_SESSION_URL")]
    pub session_url: Option<String>,
    /// With the session in this process and no `--session-url`: call it in process (`true`), or
    /// over gRPC on this process's own internal port (`false`), as a cluster's services call each
    /// other, to compare the two or to exercise the network path on one box.
    #[arg(long, env = "HF_IN_PROCESS_SESSION", default_value_t = true, action = clap::ArgAction::Set)]
    pub in_process_session: bool,
    /// HS256 secrets for player tokens, comma-separated (several allow rotation). Without any
    /// secret or public key the gateway uses the development secret and says so loudly.
    #[arg(
        long,
        env = "HF_JWT_SECRET",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub jwt_secret: Vec<String>,
    /// Operator tokens of the admin APIs (`AdminService`, `WebhookAdminService`) as `NAME=TOKEN`
    /// (repeatable; the env var comma-separated); NAME is who the audit log records, TOKEN at
    /// least 24 bytes. None: the admin APIs refuse every call. The env var is the one the admin
    /// CLI reads too; `HF_ADMIN_TOKENS`, its old name, is still read (docs/admin.md).
    #[arg(
        long = "admin-token",
        env = ADMIN_TOKEN_ENV,
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub admin_tokens: Vec<String>,
    /// Public keys for player tokens as `ALG:PATH` (e.g. `RS256:/keys/idp.pem`), comma-separated.
    #[arg(long, env = "HF_JWT_PUBLIC_KEYS", value_delimiter = ',')]
    pub jwt_public_keys: Vec<String>,
    /// Required `iss` of player tokens.
    #[arg(long, env = "HF_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// Required `aud` of player tokens.
    #[arg(long, env = "HF_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
    /// Accept guest tokens (`"guest": true`, as `hidden-front token` mints). Turn off in production.
    #[arg(long, env = "HF_ALLOW_GUEST_TOKENS", default_value_t = true, action = clap::ArgAction::Set)]
    pub allow_guest_tokens: bool,
    /// Open player streams one gateway process accepts at most.
    #[arg(long, env = "HF_MAX_STREAMS", default_value_t = 50_000)]
    pub max_streams: usize,
    /// Events a player connection may fall behind (for 5 s) before it is cut off with a resume hint.
    /// A `Connect` connection holds four times as many messages unread.
    #[arg(long, env = "HF_STREAM_BUFFER", default_value_t = 256)]
    pub stream_buffer: usize,
    /// Milliseconds a connection may stay `--stream-buffer` events behind before it is cut off
    /// (and a `Connect` connection's full queue may stay full before it is closed).
    #[arg(long, env = "HF_STREAM_MAX_LAG_MS", default_value_t = 5000)]
    pub stream_max_lag_ms: u64,
    /// Player actions per second, sustained (a burst of twice as many is allowed).
    #[arg(long, env = "HF_ACTIONS_PER_SECOND", default_value_t = 10)]
    pub actions_per_second: u32,
    /// Address of the HTTP listener (the WebSocket API, `GET /v1/ws`), opened when the gateway
    /// runs (`127.0.0.1:0` picks a free port; the chosen address is printed).
    #[arg(long, env = "HF_HTTP_LISTEN", value_parser = parse_listen, default_value = "127.0.0.1:8080")]
    pub http_listen: SocketAddr,
    /// Open WebSocket connections one gateway process accepts at most (more get HTTP 503).
    #[arg(long, env = "HF_WS_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub ws_max_connections: usize,
    /// Milliseconds a connection to a public port (the gateway's gRPC and HTTP ports) has from
    /// accept to its first complete request head (the HTTP/2 preface and SETTINGS, or an HTTP/1
    /// head); slower ones, silent ones included, are closed (1 to 600000).
    #[arg(long, env = "HF_HANDSHAKE_TIMEOUT_MS", default_value_t = 5_000,
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub handshake_timeout_ms: u64,
    /// Seconds a connection to a public port may stay open with no request in flight (an
    /// HTTP/1 keep-alive between requests, an HTTP/2 connection without streams); a stream or
    /// a WebSocket is in flight for as long as it lasts (1 to 86400).
    #[arg(long, env = "HF_IDLE_TIMEOUT_SECONDS", default_value_t = 120,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub idle_timeout_seconds: u64,
    /// Open connections each public port (gRPC, HTTP) accepts at most; more are closed at
    /// accept. 0: 20,000, or less when the open files limit (raised to its hard limit at start)
    /// less a reserve of 1,024 cannot hold that on both ports. A value the limit cannot hold
    /// with that reserve stops the process at start.
    #[arg(long, env = "HF_MAX_CONNECTIONS", default_value_t = 0)]
    pub max_connections: usize,
    /// Open connections one peer address may hold on each public port; 0: no such cap (behind a
    /// load balancer that does not keep client addresses, every connection has its address).
    #[arg(long, env = "HF_MAX_CONNECTIONS_PER_PEER", default_value_t = 0)]
    pub max_connections_per_peer: usize,
    /// This clock process's name in timer claims (default: a random one; the pod name is a good
    /// choice).
    #[arg(long, env = "HF_CLOCK_ID")]
    pub clock_id: Option<String>,
    /// Milliseconds between the clock's reads of newly due timers.
    #[arg(long, env = "HF_CLOCK_POLL_MS", default_value_t = 200)]
    pub clock_poll_ms: u64,
    /// Seconds a clock's claim on a timer lasts past its deadline; a dead clock's timers go to
    /// another clock process after this.
    #[arg(long, env = "HF_CLOCK_LEASE_SECONDS", default_value_t = 5)]
    pub clock_lease_seconds: u64,
    /// Where the gateway finds the matchmaking service (default: this process's own, when it runs
    /// here; otherwise the gateway's matchmaking operations answer UNAVAILABLE).
    #[arg(long, env = "HF_MATCHMAKING_URL")]
    pub matchmaking_url: Option<String>,
    /// The base of invite links (the invite code is appended). Default: the gateway's own page,
    /// `http://<the bound --http-listen address>/invite` (127.0.0.1 for an unspecified address
    /// such as 0.0.0.0); set it to the public URL of the page behind a proxy.
    #[arg(long, env = "HF_INVITE_BASE_URL")]
    pub invite_base_url: Option<String>,
    /// A rated game that a resignation, an agreed draw, timeouts or a disconnection ends before
    /// this many plies changes no rating (docs/matchmaking.md, "Rating integrity"); 0 counts
    /// every result.
    #[arg(long, env = "HF_RATED_MIN_PLIES", default_value_t = 10)]
    pub rated_min_plies: u32,
    /// Rated games between the same two players in 24 hours that change ratings; the later ones
    /// count as unrated. 0: no cap.
    #[arg(long, env = "HF_RATED_PAIR_CAP", default_value_t = 5)]
    pub rated_pair_cap: u32,
    /// Serve the browser client on the HTTP listener (`/`, `/game/{id}`, `/watch/{id}`,
    /// `/invite/{code}`, `/assets/...`); `false` for a gateway that serves only the APIs.
    #[arg(long, env = "HF_WEB_CLIENT", default_value_t = true, action = clap::ArgAction::Set)]
    pub web_client: bool,
    /// The page's CSP `frame-ancestors` sources: who may embed the page in a frame (and hand it
    /// a token by `postMessage`), e.g. `'self' https://platform.example`, or `'none'`.
    #[arg(long, env = "HF_WEB_FRAME_ANCESTORS", default_value = "'self'")]
    pub web_frame_ancestors: String,
    /// Guest tokens `POST /v1/guest` mints per client address per minute (twice as many at
    /// once). It mints only when guest tokens are allowed and the gateway has an HS256 secret.
    #[arg(long, env = "HF_GUEST_TOKENS_PER_MINUTE", default_value_t = 10)]
    pub guest_tokens_per_minute: u32,
    /// Address of the metrics listener (Prometheus text on `GET /metrics`; `127.0.0.1:0` picks a
    /// free port; the chosen address is printed).
    #[arg(long, env = "HF_METRICS_LISTEN", value_parser = parse_listen, default_value = "127.0.0.1:9090")]
    pub metrics_listen: SocketAddr,
    /// The webhooks configuration file (JSON: endpoints, secrets or the environment variables
    /// holding them, type filters, delivery timing; docs/lifecycle.md). The session process
    /// then delivers the lifecycle feed to those endpoints and serves `WebhookAdminService`.
    #[arg(long, env = "HF_WEBHOOKS_CONFIG")]
    pub webhooks_config: Option<std::path::PathBuf>,
    /// This process's name in webhook delivery leases (default: `webhooks-` and a random id;
    /// the pod name is a good choice).
    #[arg(long, env = "HF_WEBHOOKS_HOLDER")]
    pub webhooks_holder: Option<String>,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Arguments of `hidden-front migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Postgres URL of the database to migrate.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: String,
    /// Postgres URLs of the further game shards to migrate too (as `serve` takes them).
    #[arg(
        long = "database-shard",
        env = "HF_DATABASE_SHARDS",
        hide_env_values = true,
        value_delimiter = ','
    )]
    pub database_shards: Vec<String>,
    /// After migrating, write the `jsonb` snapshot of every game whose `jsonb` snapshot lags its
    /// log at its head, clearing its raw snapshot: before rolling back to a release that does
    /// not read `head_version`, once no replica of a release that writes raw snapshots runs.
    #[arg(long)]
    pub snapshots_at_head: bool,
}

/// A command line holding only the serve flags, for [`ServeArgs::from_flags`].
#[derive(Debug, clap::Parser)]
#[command(name = "serve")]
struct ServeFlags {
    #[command(flatten)]
    args: ServeArgs,
}

impl ServeArgs {
    /// The configuration `hidden-front serve FLAGS...` would run with (flags first, then the
    /// environment variables, then the defaults): how a test or an embedding program states a
    /// configuration in the words of the README.
    pub fn from_flags<I, T>(flags: I) -> Result<ServeArgs, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::Parser;
        let argv = std::iter::once(std::ffi::OsString::from("serve"))
            .chain(flags.into_iter().map(Into::into));
        Ok(ServeFlags::try_parse_from(argv)?.args.with_env_aliases())
    }

    /// These arguments with the operator tokens of [`ADMIN_TOKEN_ENV_ALIAS`] when neither
    /// `--admin-token` nor [`ADMIN_TOKEN_ENV`] gave any (clap knows one variable per flag).
    pub fn with_env_aliases(mut self) -> ServeArgs {
        if let Some(tokens) =
            admin_tokens_from_alias(&self.admin_tokens, |name| std::env::var(name).ok())
        {
            self.admin_tokens = tokens;
        }
        self
    }
}

/// The `NAME=TOKEN` entries of [`ADMIN_TOKEN_ENV_ALIAS`] (comma-separated, as the flag's own
/// variable), when `given` (the flags and [`ADMIN_TOKEN_ENV`]) is empty and the alias is set.
fn admin_tokens_from_alias(
    given: &[String],
    env: impl Fn(&str) -> Option<String>,
) -> Option<Vec<String>> {
    if !given.is_empty() {
        return None;
    }
    let value = env(ADMIN_TOKEN_ENV_ALIAS)?;
    Some(
        value
            .split(',')
            .filter(|entry| !entry.is_empty())
            .map(str::to_owned)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listen_address_needs_a_host() {
        assert_eq!(
            parse_listen("127.0.0.1:0"),
            Ok("127.0.0.1:0".parse().unwrap())
        );
        let error = parse_listen(":0").unwrap_err();
        assert!(
            error.contains("127.0.0.1:0") && error.contains("0.0.0.0:0"),
            "{error}"
        );
        assert!(parse_listen("localhost:80").is_err());
    }

    #[test]
    fn the_old_admin_token_variable_is_read_only_when_the_new_one_is_not_set() {
        let env = |name: &str| (name == ADMIN_TOKEN_ENV_ALIAS).then(|| "a=x,b=y".to_string());
        assert_eq!(
            admin_tokens_from_alias(&[], env),
            Some(vec!["a=x".to_string(), "b=y".to_string()])
        );
        assert_eq!(admin_tokens_from_alias(&["c=z".to_string()], env), None);
        assert_eq!(admin_tokens_from_alias(&[], |_| None), None);
    }

    #[test]
    fn the_pool_size_is_bounded() {
        assert!(ServeArgs::from_flags(["--database-max-connections", "0"]).is_err());
        assert!(ServeArgs::from_flags(["--database-max-connections", "1001"]).is_err());
        let args = ServeArgs::from_flags(["--database-max-connections", "1000"]).unwrap();
        assert_eq!(args.database_max_connections, 1000);
    }
}
