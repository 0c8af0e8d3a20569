//! How one Hidden Front service calls another.
//!
//! Every client of another service (the gateway's session and matchmaking clients,
//! matchmaking's and the clock's session clients) is built here, so that each gets the same
//! things: a channel balanced over every address the service's host resolves to (a headless
//! Service lists every ready pod), the same connection settings, the caller's trace context on every call, and
//! the same limit on the size of an answer. Before this crate the gateway built its own and matchmaking's client had no
//! answer limit at all.

mod balance;

pub use balance::{BalanceError, Membership, ServiceUrl, Serving, balanced_channel};

use hidden_front_proto::v1::admin_service_client::AdminServiceClient;
use hidden_front_proto::v1::matchmaking_service_client::MatchmakingServiceClient;
use hidden_front_proto::v1::matchmaking_service_server::SERVICE_NAME as MATCHMAKING_SERVICE;
use hidden_front_proto::v1::organiser_service_client::OrganiserServiceClient;
use hidden_front_proto::v1::organiser_service_server::SERVICE_NAME as ORGANISER_SERVICE;
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use hidden_front_proto::v1::session_service_server::SERVICE_NAME as SESSION_SERVICE;
use hidden_front_proto::v1::webhook_admin_service_client::WebhookAdminServiceClient;
use hidden_front_telemetry::TracedChannel;
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};

/// The largest answer a client accepts from another service. A game's whole event log fits
/// many times over (a long game is well under 1 MiB); anything larger is a fault, not data.
pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// How often a service's host name is resolved again, so new pods join and departed ones leave.
pub const RESOLVE_EVERY: Duration = Duration::from_secs(10);

/// How often each address of a service is asked for its health (and how long it may take to
/// answer): a draining, restarting or vanished pod leaves the balancer within about two of
/// these (see [`balanced_channel`]).
pub const PROBE_EVERY: Duration = Duration::from_secs(1);

/// How often an idle or busy internal connection is pinged, and how long a ping may go
/// unanswered before the connection counts as dead. A host that vanishes without a FIN or RST
/// (a lost node, a cut link) leaves its connections looking open: the balancer keeps sending
/// calls into them until the keepalive gives up. At 20 s and the default 20 s timeout the
/// cluster test saw play stall for 38 s when one of two session hosts was cut
/// (docs/cluster-test.md); at 5 s + 5 s a dead peer was dropped within about 10 s, and the
/// players following games through a lost session host went 9.9–11.0 s without their stream,
/// over the cluster test's 10 s availability bound. At 3 s + 3 s it is dropped within about 6 s
/// and its calls fail UNAVAILABLE (retried) instead of hanging; a ping every 3 s on each of a
/// process's few internal connections costs nothing measurable.
pub const KEEPALIVE: Duration = Duration::from_secs(3);

/// The longest an internal call waits for its answer (a stream: for its start; the stream
/// itself may then run for as long as it lasts). Every internal unary call answers in
/// milliseconds when its peer is healthy; one that hangs (a peer stuck on a lock, a request
/// that went into a connection being torn down) would otherwise hold the player's request that
/// needed it for good, and every request that shares its lookup. Abandoned at this deadline, it
/// fails CANCELLED and the player's retry (same idempotency key) goes to another host.
pub const CALL_DEADLINE: Duration = Duration::from_secs(10);

/// The connection settings of every internal call: no Nagle delay (answers are small and
/// latency-bound), a bounded connect, a bounded wait for each answer ([`CALL_DEADLINE`]), and
/// HTTP/2 keepalives that find a dead peer ([`KEEPALIVE`]), idle connections included (a
/// balancer's spare connection must be known dead before a call is sent into it).
fn configure(endpoint: Endpoint) -> Endpoint {
    endpoint
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(5))
        .timeout(CALL_DEADLINE)
        .http2_keep_alive_interval(KEEPALIVE)
        .keep_alive_timeout(KEEPALIVE)
        .keep_alive_while_idle(true)
}

/// A channel to the service at `url` (`http://host:port`), balanced over every address of its
/// host that answers SERVING for `health_service`, and the count of those.
fn channel(url: &str, health_service: &'static str) -> Result<(Channel, Serving), BalanceError> {
    balanced_channel(
        url,
        Membership {
            health_service,
            resolve_every: RESOLVE_EVERY,
            probe_every: PROBE_EVERY,
        },
        configure,
    )
}

/// A client of the webhooks' admin service at `url` (the session's internal port), for
/// `hidden-front webhooks`; each call carries the caller's trace context.
pub fn webhook_admin_client(
    url: &str,
) -> Result<WebhookAdminServiceClient<TracedChannel>, BalanceError> {
    let (channel, _) = channel(url, SESSION_SERVICE)?;
    Ok(WebhookAdminServiceClient::new(TracedChannel::new(channel))
        .max_decoding_message_size(MAX_ANSWER_BYTES))
}

/// A client of the session service at `url`; each call carries the caller's trace context.
pub fn session_client(url: &str) -> Result<SessionServiceClient<TracedChannel>, BalanceError> {
    session_client_and_health(url).map(|(client, _)| client)
}

/// [`session_client`], and how many of the session's addresses serve (the gateway is ready
/// while any does).
pub fn session_client_and_health(
    url: &str,
) -> Result<(SessionServiceClient<TracedChannel>, Serving), BalanceError> {
    let (channel, serving) = channel(url, SESSION_SERVICE)?;
    Ok((
        SessionServiceClient::new(TracedChannel::new(channel))
            .max_decoding_message_size(MAX_ANSWER_BYTES),
        serving,
    ))
}

/// A client of the admin API at `url` (the session's internal port); each call carries the
/// caller's trace context. Inspections answer a whole game, so the same answer limit holds.
pub fn admin_client(url: &str) -> Result<AdminServiceClient<TracedChannel>, BalanceError> {
    let (channel, _) = channel(url, SESSION_SERVICE)?;
    Ok(AdminServiceClient::new(TracedChannel::new(channel))
        .max_decoding_message_size(MAX_ANSWER_BYTES))
}

/// A client of the organisers' API (served beside matchmaking) at `url`.
pub fn organiser_client(url: &str) -> Result<OrganiserServiceClient<TracedChannel>, BalanceError> {
    let (channel, _) = channel(url, ORGANISER_SERVICE)?;
    Ok(OrganiserServiceClient::new(TracedChannel::new(channel))
        .max_decoding_message_size(MAX_ANSWER_BYTES))
}

/// A client of the matchmaking service at `url`; each call carries the caller's trace context.
pub fn matchmaking_client(
    url: &str,
) -> Result<MatchmakingServiceClient<TracedChannel>, BalanceError> {
    let (channel, _) = channel(url, MATCHMAKING_SERVICE)?;
    Ok(MatchmakingServiceClient::new(TracedChannel::new(channel))
        .max_decoding_message_size(MAX_ANSWER_BYTES))
}
