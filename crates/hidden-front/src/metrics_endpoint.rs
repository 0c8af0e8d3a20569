//! Metrics: the Prometheus recorder behind the services' `metrics` facade calls, and the
//! dedicated HTTP listener (`--metrics-listen`) that serves it as text on `GET /metrics`.
//!
//! Besides the services' own series, a scrape shows the process's (`process_cpu_seconds_total`,
//! `process_resident_memory_bytes`, `process_open_fds`, `process_start_time_seconds`, ..., read
//! by `metrics-process` at each scrape), the build (`hf_build_info{version,commit} 1`) and the
//! per-RPC series of every gRPC port (`app/grpc_metrics.rs`).

use anyhow::Context;
use hidden_front_metrics_names as names;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;

/// The path of the metrics route.
pub const METRICS_PATH: &str = "/metrics";

/// The recorder of this process, once installed: a process has one global recorder, and every
/// application built in it (tests build several) renders the same one.
static INSTALLED: parking_lot::Mutex<Option<PrometheusHandle>> = parking_lot::Mutex::new(None);

/// Installs the Prometheus recorder as the process's global recorder (histograms with fixed
/// buckets) and registers the main series at zero, so a scrape shows them before any traffic.
/// Later calls return the recorder installed first.
pub fn install() -> anyhow::Result<PrometheusHandle> {
    let mut installed = INSTALLED.lock();
    if let Some(handle) = installed.as_ref() {
        return Ok(handle.clone());
    }
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &names::LATENCY_BUCKETS)
        .context("latency buckets")?
        .set_buckets_for_metric(
            Matcher::Full(names::STREAM_LAG_EVENTS.into()),
            &names::LAG_BUCKETS,
        )
        .context("lag buckets")?
        .set_buckets_for_metric(
            Matcher::Full(names::STORE_BATCH_APPENDS.into()),
            &names::BATCH_BUCKETS,
        )
        .context("batch size buckets")?
        .set_buckets_for_metric(
            Matcher::Full(names::MATCHMAKING_WAIT_SECONDS.into()),
            &names::WAIT_BUCKETS,
        )
        .context("matchmaking wait buckets")?
        .set_buckets_for_metric(
            Matcher::Full(names::WEBHOOK_DELIVERY_LATENCY_SECONDS.into()),
            &names::WEBHOOK_LATENCY_BUCKETS,
        )
        .context("webhook latency buckets")?
        .install_recorder()
        .context("installing the metrics recorder")?;
    describe();
    let process = metrics_process::Collector::default();
    process.describe();
    process.collect();
    *installed = Some(handle.clone());
    Ok(handle)
}

/// HELP texts, and zero values for the series every dashboard reads.
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        names::WEBHOOK_DELIVERIES_TOTAL,
        "Webhook delivery attempts and their ends, by endpoint and outcome."
    );
    describe_histogram!(
        names::WEBHOOK_DELIVERY_LATENCY_SECONDS,
        metrics::Unit::Seconds,
        "From a lifecycle fact's commit to its endpoint's 2xx answer."
    );
    describe_counter!(
        names::WEBHOOK_DEAD_LETTERS_TOTAL,
        "Lifecycle facts parked as dead letters after the retry horizon, by endpoint."
    );
    describe_gauge!(
        names::WEBHOOK_LAG_POSITIONS,
        "Outbox positions between the newest fact and an endpoint's cursor."
    );
    describe_counter!(
        names::MOVES_TOTAL,
        "Moves judged by the session, by result."
    );
    describe_histogram!(
        names::MOVE_DURATION_SECONDS,
        metrics::Unit::Seconds,
        "Time the session took to answer a move."
    );
    describe_counter!(
        names::COMMANDS_TOTAL,
        "Commands answered by the session, by kind and outcome."
    );
    describe_gauge!(
        names::GAMES,
        "Games by phase, as this session process saw them change (per process, approximate)."
    );
    describe_gauge!(
        names::PLAYER_STREAMS,
        "Player streams open on this gateway."
    );
    describe_histogram!(
        names::STREAM_LAG_EVENTS,
        "Events a player stream was behind the game's log when it delivered one."
    );
    describe_histogram!(
        names::STORE_BATCH_APPENDS,
        "Appends of many games written by one group-commit statement (Postgres store)."
    );
    describe_histogram!(
        names::STORE_BATCH_DURATION_SECONDS,
        metrics::Unit::Seconds,
        "Time one group-commit statement took, round trip and commit (Postgres store)."
    );
    describe_counter!(
        names::STORE_ERRORS_TOTAL,
        "Failed store operations, by operation."
    );
    describe_counter!(
        names::STORE_OPERATIONS_TOTAL,
        "Store operations the session issued, by operation."
    );
    describe_histogram!(
        names::STORE_APPEND_DURATION_SECONDS,
        metrics::Unit::Seconds,
        "Time a store append took."
    );
    describe_counter!(
        names::SERVICE_OUTAGES_TOTAL,
        "Outages found by the session's pulse (nothing could serve), each counted once."
    );
    describe_counter!(
        names::SERVICE_OUTAGE_SECONDS_TOTAL,
        metrics::Unit::Seconds,
        "Seconds of those outages: time the running deadlines were moved by."
    );
    describe_counter!(
        names::OUTAGE_DEADLINES_MOVED_TOTAL,
        "Running deadlines moved because of an outage."
    );
    for name in [
        names::SERVICE_OUTAGES_TOTAL,
        names::SERVICE_OUTAGE_SECONDS_TOTAL,
        names::OUTAGE_DEADLINES_MOVED_TOTAL,
    ] {
        metrics::counter!(name).increment(0);
    }
    for result in [names::OK, names::REFUSED] {
        metrics::counter!(names::MOVES_TOTAL, names::RESULT => result).increment(0);
    }
    for phase in names::PHASES {
        metrics::gauge!(names::GAMES, names::PHASE => phase).increment(0.0);
    }
    metrics::gauge!(names::PLAYER_STREAMS).increment(0.0);

    // Every counter with a known label set, at zero for each label value, so rates and alerts
    // work before the first event (an error counter that appears only with the first error
    // reads as "no data", not as 0).
    for operation in names::STORE_OPERATIONS {
        metrics::counter!(names::STORE_ERRORS_TOTAL, names::OPERATION => operation).increment(0);
        metrics::counter!(names::STORE_OPERATIONS_TOTAL, names::OPERATION => operation)
            .increment(0);
    }
    for kind in names::COMMAND_KINDS {
        for outcome in names::OUTCOMES {
            metrics::counter!(names::COMMANDS_TOTAL, names::KIND => kind, names::OUTCOME => outcome)
                .increment(0);
        }
    }
    for kind in names::TIMER_KINDS {
        for result in names::TIMER_RESULTS {
            metrics::counter!(
                names::TIMERS_FIRED_TOTAL,
                names::TIMER_KIND => kind,
                names::TIMER_RESULT => result
            )
            .increment(0);
        }
    }
    for kind in names::MATCH_KINDS {
        metrics::counter!(names::MATCHES_TOTAL, names::KIND => kind).increment(0);
    }
    for kind in names::STORE_BATCH_KINDS {
        metrics::counter!(names::STORE_BATCH_FAILURES_TOTAL, names::KIND => kind).increment(0);
    }

    describe_counter!(
        names::GRPC_REQUESTS_TOTAL,
        "gRPC calls answered on every gRPC port, by service, method and status code."
    );
    describe_histogram!(
        names::GRPC_REQUEST_DURATION_SECONDS,
        metrics::Unit::Seconds,
        "From a gRPC call's arrival to its status (a stream's whole life), by service, method and code."
    );
    describe_gauge!(
        names::BUILD_INFO,
        "Always 1; the labels say which build this process runs."
    );
    metrics::gauge!(
        names::BUILD_INFO,
        names::VERSION => env!("CARGO_PKG_VERSION"),
        names::COMMIT => env!("HF_BUILD_COMMIT"),
    )
    .set(1.0);
}

/// Serves `GET /metrics` and `probes` (`/healthz`, `/readyz`) on `listener` until `stopped`
/// completes, running the recorder's upkeep meanwhile. The probes are here as well as on the
/// gateway's public HTTP port because this port is not public: no stranger's connections count
/// against it, so the orchestrator's probes answer even while the public ports are at their
/// caps (hidden-front-conn-guard).
pub async fn serve(
    listener: TcpListener,
    handle: PrometheusHandle,
    probes: axum::Router,
    stopped: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let upkeep = handle.clone();
    let upkeep = tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(5));
        loop {
            every.tick().await;
            upkeep.run_upkeep();
        }
    });
    // The process's own figures are read from the OS when scraped, so they are current.
    let process = std::sync::Arc::new(metrics_process::Collector::default());
    let app = probes.route(
        METRICS_PATH,
        axum::routing::get(move || {
            let handle = handle.clone();
            let process = process.clone();
            async move {
                process.collect();
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "text/plain; version=0.0.4; charset=utf-8",
                    )],
                    handle.render(),
                )
            }
        }),
    );
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(stopped)
        .await
        .context("serving /metrics and the probes");
    upkeep.abort();
    served
}
