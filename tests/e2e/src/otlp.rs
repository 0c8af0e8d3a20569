//! A tiny OTLP trace receiver: a real gRPC `opentelemetry.proto.collector.trace.v1.TraceService`
//! on loopback that hands every span it is sent to the test.

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tonic::{Request, Response, Status};

/// One span as the receiver got it (ids in lowercase hex, attribute values as text).
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedSpan {
    /// The `service.name` of the resource that sent it.
    pub service: String,
    /// The span's name.
    pub name: String,
    /// 32 hex digits.
    pub trace_id: String,
    /// 16 hex digits.
    pub span_id: String,
    /// 16 hex digits, or empty for a root span.
    pub parent_span_id: String,
    /// The span's attributes.
    pub attributes: Vec<(String, String)>,
    /// The attributes of the span's events (log lines inside the span), flattened.
    pub event_attributes: Vec<(String, String)>,
}

impl ReceivedSpan {
    /// The value of attribute `key`, if the span has it.
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A running receiver; dropping it stops the server.
#[derive(Debug)]
pub struct OtlpReceiver {
    addr: SocketAddr,
    spans: mpsc::UnboundedReceiver<ReceivedSpan>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl OtlpReceiver {
    /// Starts a receiver on a free loopback port.
    pub async fn start() -> OtlpReceiver {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding the OTLP receiver");
        let addr = listener.local_addr().expect("the receiver's address");
        let (tx, spans) = mpsc::unbounded_channel();
        let server = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(Collector { tx }))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
                .await;
        });
        OtlpReceiver {
            addr,
            spans,
            server,
        }
    }

    /// The URL to give as `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The next span received within `wait`, or `None`.
    pub async fn next(&mut self, wait: Duration) -> Option<ReceivedSpan> {
        tokio::time::timeout(wait, self.spans.recv())
            .await
            .ok()
            .flatten()
    }
}

struct Collector {
    tx: mpsc::UnboundedSender<ReceivedSpan>,
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        for resource_spans in request.into_inner().resource_spans {
            let service = resource_spans
                .resource
                .as_ref()
                .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
                .map(|kv| text(&kv.value))
                .unwrap_or_default();
            for span in resource_spans.scope_spans.into_iter().flat_map(|s| s.spans) {
                let _ = self.tx.send(ReceivedSpan {
                    service: service.clone(),
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    attributes: pairs(&span.attributes),
                    event_attributes: span
                        .events
                        .iter()
                        .flat_map(|e| pairs(&e.attributes))
                        .collect(),
                });
            }
        }
        Ok(Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

fn pairs(attributes: &[KeyValue]) -> Vec<(String, String)> {
    attributes
        .iter()
        .map(|kv| (kv.key.clone(), text(&kv.value)))
        .collect()
}

fn text(value: &Option<AnyValue>) -> String {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
