//! Metrics: the Prometheus recorder behind the services' `metrics` facade calls, and the
//! dedicated HTTP listener (`--metrics-listen`) that serves it as text on `GET /metrics`.

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
}

/// Serves `GET /metrics` on `listener` until `stopped` completes, running the recorder's upkeep
/// meanwhile.
pub async fn serve(
    listener: TcpListener,
    handle: PrometheusHandle,
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
    let app = axum::Router::new().route(
        METRICS_PATH,
        axum::routing::get(move || {
            let handle = handle.clone();
            async move {
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
        .context("serving /metrics");
    upkeep.abort();
    served
}
