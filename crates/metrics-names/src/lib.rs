//! The names and label values of Hidden Front's metrics, defined once for the services that
//! record them (through the `metrics` facade) and the binary that exports them (Prometheus text
//! format on `/metrics`).
//!
//! Every label has a small, fixed set of values: game ids and player ids are never labels.

/// Counter: `SubmitMove` commands judged, by [`RESULT`] ([`OK`] or [`REFUSED`]). Replayed
/// answers (a retry of an applied move) are not counted again.
pub const MOVES_TOTAL: &str = "hf_moves_total";
/// Histogram (seconds): how long the session took to answer a `SubmitMove`, whatever the answer.
pub const MOVE_DURATION_SECONDS: &str = "hf_move_duration_seconds";
/// Counter: commands answered by the session, by [`KIND`] and [`OUTCOME`].
pub const COMMANDS_TOTAL: &str = "hf_commands_total";
/// Gauge: games by [`PHASE`], as this session process saw them change (see the README: an
/// approximation per process, starting from zero at every start).
pub const GAMES: &str = "hf_games";
/// Gauge: player streams (gRPC `Subscribe` and WebSocket subscriptions) open on this gateway.
pub const PLAYER_STREAMS: &str = "hf_player_streams";
/// Histogram (events): how many events a stream was behind the game's log when it delivered one.
pub const STREAM_LAG_EVENTS: &str = "hf_stream_lag_events";
/// Counter: store operations that failed (database or data errors, not conflicts), by
/// [`OPERATION`].
pub const STORE_ERRORS_TOTAL: &str = "hf_store_errors_total";
/// Counter: store operations the session issued, by [`OPERATION`], whatever their result. On
/// Postgres each is a statement or a transaction (appends are batched further, see
/// [`STORE_BATCH_APPENDS`]): the database load a workload puts on the session's store, e.g. the
/// reads per move of a game with many viewers (docs/benchmarks.md).
pub const STORE_OPERATIONS_TOTAL: &str = "hf_store_operations_total";
/// Histogram (seconds): how long a store append (events + snapshot + answer) took.
pub const STORE_APPEND_DURATION_SECONDS: &str = "hf_store_append_duration_seconds";
/// Histogram (appends): how many games' appends one group-commit statement wrote (Postgres
/// store). Small batches under load mean the database answers fast; batches near the cap
/// (128) mean appends queue behind the statement in flight.
pub const STORE_BATCH_APPENDS: &str = "hf_store_batch_appends";
/// Histogram (seconds): how long one group-commit statement took, round trip and commit
/// (Postgres store). An append waits for at most the batch in flight, then its own.
pub const STORE_BATCH_DURATION_SECONDS: &str = "hf_store_batch_duration_seconds";
/// Histogram buckets (appends) of [`STORE_BATCH_APPENDS`].
pub const BATCH_BUCKETS: [f64; 9] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 96.0, 128.0];
/// Gauge: timers armed in the store (deployment, move and reconnect deadlines), as the clock
/// process last counted them.
pub const TIMERS_ARMED: &str = "hf_timers_armed";
/// Counter: timers the clock fired at the session, by [`TIMER_KIND`] and [`TIMER_RESULT`].
pub const TIMERS_FIRED_TOTAL: &str = "hf_timers_fired_total";
/// Histogram (seconds): how late a timer's fire reached the session, after its deadline, by
/// [`TIMER_KIND`].
pub const TIMER_LATENESS_SECONDS: &str = "hf_timer_lateness_seconds";
/// Counter: group-commit statements that failed, by [`KIND`] (`append`, `create`): nothing of
/// them was written, and a batch of several was written again one item at a time. Rare: a
/// forked log, a deadlock or a key committed meanwhile by another replica.
pub const STORE_BATCH_FAILURES_TOTAL: &str = "hf_store_batch_failures_total";
/// Counter: outages the session's pulse found (no process could serve: every session process
/// down, or the database unreachable), each accounted for once across processes.
pub const SERVICE_OUTAGES_TOTAL: &str = "hf_service_outages_total";
/// Counter: seconds of those outages (rounded per outage).
pub const SERVICE_OUTAGE_SECONDS_TOTAL: &str = "hf_service_outage_seconds_total";
/// Counter: running deadlines those outages moved, so they cost no player time.
pub const OUTAGE_DEADLINES_MOVED_TOTAL: &str = "hf_outage_deadlines_moved_total";

/// Label: `ok` or `refused`.
pub const RESULT: &str = "result";
/// Label: the command, one of [`COMMAND_KINDS`].
pub const KIND: &str = "kind";
/// Label: one of [`OUTCOMES`].
pub const OUTCOME: &str = "outcome";
/// Label: `deployment`, `play` or `ended`.
pub const PHASE: &str = "phase";
/// Label: the store operation, one of [`STORE_OPERATIONS`].
pub const OPERATION: &str = "operation";
/// Label: the timer kind, one of [`TIMER_KINDS`].
pub const TIMER_KIND: &str = "timer_kind";
/// Label: what a timer's fire did, one of [`TIMER_RESULTS`].
pub const TIMER_RESULT: &str = "timer_result";

/// Label value: the command was applied.
pub const OK: &str = "ok";
/// Label value: the command was refused (against the rules, stale, malformed).
pub const REFUSED: &str = "refused";
/// Label value: an earlier attempt's stored answer was replayed.
pub const REPLAYED: &str = "replayed";
/// Label value: the command failed (store or internal failure).
pub const ERROR: &str = "error";

/// Every value of [`OUTCOME`].
pub const OUTCOMES: [&str; 4] = [OK, REPLAYED, REFUSED, ERROR];
/// Every value of [`KIND`].
pub const COMMAND_KINDS: [&str; 9] = [
    "reshuffle",
    "swap",
    "set_deployment",
    "confirm",
    "move",
    "offer_draw",
    "answer_draw",
    "resign",
    "timer",
];
/// Every value of [`PHASE`].
pub const PHASES: [&str; 3] = ["deployment", "play", "ended"];
/// Every value of [`TIMER_KIND`].
pub const TIMER_KINDS: [&str; 3] = ["deployment", "move", "reconnect"];
/// Every value of [`TIMER_RESULT`]: `applied` (it changed the game), `stale` (the game had moved
/// on: nothing changed), `retry` (the session could not be reached or it was not due yet).
pub const TIMER_RESULTS: [&str; 3] = ["applied", "stale", "retry"];
/// Every value of [`OPERATION`].
pub const STORE_OPERATIONS: [&str; 28] = [
    "create",
    "load",
    "observe",
    "append",
    "command_response",
    "events",
    "watch",
    "report_presence",
    "presence",
    "games_of_player",
    "ping",
    "pulse",
    "ended_games",
    "arm_timer",
    "cancel_timer",
    "timers_of",
    "claim_due",
    "release_timer",
    "complete_timers",
    "armed_timer_count",
    "facts_after",
    "watch_facts",
    "facts_after_position",
    "watch_fact_positions",
    "find_games",
    "append_audit",
    "audit_log",
    "matchmaking",
];

/// Histogram buckets (seconds) of the latency histograms.
pub const LATENCY_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];
/// Histogram buckets (events) of [`STREAM_LAG_EVENTS`].
pub const LAG_BUCKETS: [f64; 9] = [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0, 256.0, 1024.0];

/// Gauge: matchmaking tickets waiting in queues, by [`QUEUE_TYPE`] (as last counted by this
/// matchmaking process, over the whole store).
pub const MATCHMAKING_TICKETS_WAITING: &str = "hf_matchmaking_tickets_waiting";
/// Histogram (seconds): how long a ticket waited before it was paired, by [`QUEUE_TYPE`].
pub const MATCHMAKING_WAIT_SECONDS: &str = "hf_matchmaking_wait_seconds";
/// Counter: games made by matchmaking, by [`KIND`] (one of [`MATCH_KINDS`]).
pub const MATCHES_TOTAL: &str = "hf_matches_total";
/// Label: `rated` or `casual`.
pub const QUEUE_TYPE: &str = "queue_type";
/// Every value of [`QUEUE_TYPE`].
pub const QUEUE_TYPES: [&str; 2] = ["rated", "casual"];
/// Every value of [`KIND`] on [`MATCHES_TOTAL`].
pub const MATCH_KINDS: [&str; 4] = ["rated", "casual", "invite", "computer"];
/// Histogram buckets (seconds) of [`MATCHMAKING_WAIT_SECONDS`].
pub const WAIT_BUCKETS: [f64; 11] = [
    0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];

/// Counter: webhook delivery attempts and their ends, by [`WEBHOOK_ENDPOINT`] and
/// [`WEBHOOK_OUTCOME`] (one of [`WEBHOOK_OUTCOMES`]).
pub const WEBHOOK_DELIVERIES_TOTAL: &str = "hf_webhook_deliveries_total";
/// Histogram (seconds): from a fact's commit (its `occurred_at`) to its endpoint's 2xx, by
/// [`WEBHOOK_ENDPOINT`] (live deliveries only, not replays).
pub const WEBHOOK_DELIVERY_LATENCY_SECONDS: &str = "hf_webhook_delivery_latency_seconds";
/// Counter: facts parked as dead letters, by [`WEBHOOK_ENDPOINT`].
pub const WEBHOOK_DEAD_LETTERS_TOTAL: &str = "hf_webhook_dead_letters_total";
/// Gauge: outbox positions between the last fact written and an endpoint's position, by
/// [`WEBHOOK_ENDPOINT`], as the endpoint's lease holder last saw it: on a sharded store the
/// largest over the shards (positions may skip numbers, so this is at least the facts behind
/// on one database, and not a count of facts on shards).
pub const WEBHOOK_LAG_POSITIONS: &str = "hf_webhook_lag_positions";
/// Label: a configured webhook endpoint's name (a small set the operator chose; never an id).
pub const WEBHOOK_ENDPOINT: &str = "endpoint";
/// Label: one of [`WEBHOOK_OUTCOMES`].
pub const WEBHOOK_OUTCOME: &str = "outcome";
/// Every value of [`WEBHOOK_OUTCOME`]: `delivered` (a live fact got a 2xx), `failed` (one
/// attempt failed; it is retried), `parked` (given up after the horizon), `replayed` (a dead
/// letter delivered on an operator's request).
pub const WEBHOOK_OUTCOMES: [&str; 4] = ["delivered", "failed", "parked", "replayed"];
/// Histogram buckets (seconds) of [`WEBHOOK_DELIVERY_LATENCY_SECONDS`]: from milliseconds on
/// loopback to the minutes of a retried delivery.
pub const WEBHOOK_LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.0, 10.0, 60.0, 600.0,
];

/// Counter: gRPC calls answered, on every gRPC port of the process, by [`GRPC_SERVICE`],
/// [`GRPC_METHOD`] and [`GRPC_CODE`]; counted by a tower layer when the call ends (its status
/// is known), so every method is counted alike, streams included.
pub const GRPC_REQUESTS_TOTAL: &str = "hf_grpc_requests_total";
/// Histogram (seconds): from a gRPC call's arrival to its status (for a stream, its whole life),
/// by [`GRPC_SERVICE`], [`GRPC_METHOD`] and [`GRPC_CODE`].
pub const GRPC_REQUEST_DURATION_SECONDS: &str = "hf_grpc_request_duration_seconds";
/// Label: the full gRPC service name (`hiddenfront.v1.PlayerService`), one of the services the
/// process serves, or [`UNKNOWN_RPC`].
pub const GRPC_SERVICE: &str = "grpc_service";
/// Label: the gRPC method name (`Play`), one the service declares, or [`UNKNOWN_RPC`].
pub const GRPC_METHOD: &str = "grpc_method";
/// Label: the gRPC status code's name (`OK`, `NOT_FOUND`, ...), one of [`GRPC_CODES`].
pub const GRPC_CODE: &str = "grpc_code";
/// Label value of [`GRPC_SERVICE`] and [`GRPC_METHOD`] for a path no served proto declares, so a
/// caller cannot grow the label set by inventing paths.
pub const UNKNOWN_RPC: &str = "unknown";
/// Every value of [`GRPC_CODE`], indexed by the code's number.
pub const GRPC_CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// Gauge: always 1, labelled with the build: [`VERSION`] (the crate version) and [`COMMIT`]
/// (`git rev-parse --short HEAD` at build time, `unknown` outside a git checkout).
pub const BUILD_INFO: &str = "hf_build_info";
/// Label: the release version of the binary.
pub const VERSION: &str = "version";
/// Label: the commit the binary was built from.
pub const COMMIT: &str = "commit";

/// Every value of [`KIND`] on [`STORE_BATCH_FAILURES_TOTAL`]: the group-commit statements.
pub const STORE_BATCH_KINDS: [&str; 2] = ["append", "create"];

/// Gauge: connections open on a public port, by [`CONNECTION_PORT`].
pub const CONNECTIONS_OPEN: &str = "hf_connections_open";
/// Counter: connections a public port turned away at accept, by [`CONNECTION_PORT`] and
/// [`CONNECTION_REASON`] (one of [`CONNECTION_REFUSALS`]).
pub const CONNECTIONS_REFUSED_TOTAL: &str = "hf_connections_refused_total";
/// Counter: open connections a public port closed because they held it without use, by
/// [`CONNECTION_PORT`] and [`CONNECTION_REASON`] (one of [`CONNECTION_CUTS`]).
pub const CONNECTIONS_CUT_TOTAL: &str = "hf_connections_cut_total";
/// Label: which public port ([`CONNECTION_PORTS`]).
pub const CONNECTION_PORT: &str = "port";
/// Label: why a connection was refused or cut.
pub const CONNECTION_REASON: &str = "reason";
/// The public ports: the gRPC port and the HTTP port (the page and the WebSocket API).
pub const CONNECTION_PORTS: [&str; 2] = ["grpc", "http"];
/// Why a connection was refused: the port's cap, the peer address's cap, or the process's open
/// files limit (the accept itself failed).
pub const CONNECTION_REFUSALS: [&str; 3] = ["port_limit", "peer_limit", "file_limit"];
/// Why an open connection was cut: no request head within the handshake time, or no request
/// in flight for the idle time.
pub const CONNECTION_CUTS: [&str; 2] = ["handshake_timeout", "idle_timeout"];
