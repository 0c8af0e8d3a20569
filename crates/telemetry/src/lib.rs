//! Logs and traces for Hidden Front.
//!
//! [`init`] installs the process's `tracing` subscriber: log lines on stderr (text or JSON,
//! filtered by `HF_LOG`) and, when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, every span exported over
//! OTLP/gRPC. The standard `OTEL_*` variables are honoured through the OpenTelemetry SDK
//! (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_*`, `OTEL_EXPORTER_OTLP_*`).
//!
//! Traces cross services in gRPC metadata as W3C Trace Context (`traceparent`, `tracestate`):
//! [`GrpcServerLayer`] opens each incoming RPC's span as a child of the caller's, and
//! [`TracedChannel`] (or [`InjectLayer`] on any client service) puts the current span's context
//! into outgoing requests.
//!
//! Spans carry identifiers and counts only: never piece kinds, deployments, events or
//! snapshots, which would leak the hidden ranks the game is about.

mod grpc;

pub use grpc::{
    BoxError, GrpcServerLayer, GrpcServerService, InjectLayer, Injecting, LocalService,
    TracedChannel, Upstream, current_traceparent, record_rpc_status, rpc_span, set_remote_parent,
};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The environment variable that turns span export on: the OTLP/gRPC collector's URL.
pub const OTLP_ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// The environment variable holding the log filter (`tracing_subscriber::EnvFilter` syntax).
pub const LOG_FILTER_VAR: &str = "HF_LOG";

/// Format of the log lines on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Keeps span export alive; dropping it flushes the spans not yet exported and shuts the
/// exporter down. Hold it until the servers have stopped.
#[must_use = "dropping the guard stops span export"]
#[derive(Debug, Default)]
pub struct Guard {
    provider: Option<SdkTracerProvider>,
}

impl Guard {
    /// Whether spans are exported over OTLP.
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take() {
            if let Err(error) = provider.force_flush() {
                eprintln!("flushing spans to the OTLP collector failed: {error}");
            }
            if let Err(error) = provider.shutdown() {
                eprintln!("stopping span export failed: {error}");
            }
        }
    }
}

/// Installs the global `tracing` subscriber and the W3C Trace Context propagator.
///
/// Logs go to stderr in `format`, filtered by `HF_LOG` (default `info`). When
/// `OTEL_EXPORTER_OTLP_ENDPOINT` is set, spans (same filter) are also batched and exported over
/// OTLP/gRPC; `service_name` names the service unless `OTEL_SERVICE_NAME` or
/// `OTEL_RESOURCE_ATTRIBUTES` does. A failure to set up export is reported and leaves logging
/// working. Call it once, inside the Tokio runtime (the exporter's connection runs on it).
pub fn init(format: LogFormat, service_name: &str) -> Guard {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let filter = EnvFilter::try_from_env(LOG_FILTER_VAR).unwrap_or_else(|_| EnvFilter::new("info"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let fmt = match format {
        LogFormat::Text => fmt.boxed(),
        LogFormat::Json => fmt.json().boxed(),
    };
    let (provider, problem) = match std::env::var_os(OTLP_ENDPOINT_VAR) {
        Some(endpoint) if !endpoint.is_empty() => match provider(service_name) {
            Ok(provider) => (Some(provider), None),
            Err(error) => (None, Some(error)),
        },
        _ => (None, None),
    };
    let otel = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("hidden-front"))
            .with_tracked_inactivity(false)
    });
    tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .with(otel)
        .init();
    match (&provider, problem) {
        (_, Some(error)) => tracing::warn!(%error, "span export is off: OTLP setup failed"),
        (Some(_), None) => tracing::info!(
            endpoint = %std::env::var(OTLP_ENDPOINT_VAR).unwrap_or_default(),
            "exporting spans over OTLP/gRPC"
        ),
        (None, None) => {}
    }
    Guard { provider }
}

/// A tracer provider batching spans to the OTLP/gRPC exporter configured by `OTEL_*`.
fn provider(service_name: &str) -> Result<SdkTracerProvider, String> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .build()
        .map_err(|e| e.to_string())?;
    let detected = Resource::builder().build();
    let named = detected
        .get(&opentelemetry::Key::from_static_str("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    let resource = match named {
        true => detected,
        false => Resource::builder()
            .with_service_name(service_name.to_owned())
            .build(),
    };
    Ok(SdkTracerProvider::builder()
        .with_resource(resource)
        .with_batch_exporter(exporter)
        .build())
}
