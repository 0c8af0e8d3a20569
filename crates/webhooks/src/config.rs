//! The webhooks configuration file (JSON), read and checked once at start, so a bad URL, a
//! malformed secret or a duplicate name stops the process with a message naming it instead of
//! failing deliveries later.
//!
//! ```json
//! {
//!   "source": "/hiddenfront",
//!   "delivery": { "timeout_ms": 10000, "initial_backoff_ms": 1000, "backoff_factor": 2.0,
//!                 "max_backoff_ms": 300000, "horizon_ms": 86400000, "lease_ms": 30000 },
//!   "endpoints": [
//!     { "name": "rewards", "url": "http://rewards.platform:8080/hooks/hiddenfront",
//!       "secret_env": ["HF_WEBHOOK_REWARDS_SECRET"],
//!       "types": ["hiddenfront.game.ended.v1"] },
//!     { "name": "analytics", "url": "https://analytics.internal/hooks",
//!       "secret_env": ["HF_WEBHOOK_ANALYTICS_SECRET"], "ca_file": "/etc/hf/internal-ca.pem" }
//!   ]
//! }
//! ```
//!
//! `https://` endpoints are verified against Mozilla's roots (built in) and, when `ca_file` names
//! a PEM file of CA certificates, those too (a platform's private CA); the file is read here,
//! at start.
//!
//! Secrets are given inline (`secrets`) or, better, as names of environment variables holding
//! them (`secret_env`, so a Kubernetes Secret can supply them); an environment variable may hold
//! several secrets separated by spaces or commas. Every secret is signed with (rotation).

use crate::signature::{Secret, SecretError};
use hidden_front_lifecycle::{FactBody, FactKind};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde::Deserialize;
use std::collections::HashSet;
use std::time::Duration;

/// The CloudEvents `source` when the file names none.
pub const DEFAULT_SOURCE: &str = "/hiddenfront";

/// Longest endpoint name: names are metric labels and CLI arguments.
pub const MAX_NAME_CHARS: usize = 64;

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    delivery: DeliveryFile,
    endpoints: Vec<EndpointFile>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeliveryFile {
    timeout_ms: Option<u64>,
    initial_backoff_ms: Option<u64>,
    backoff_factor: Option<f64>,
    max_backoff_ms: Option<u64>,
    jitter: Option<bool>,
    horizon_ms: Option<u64>,
    lease_ms: Option<u64>,
    safety_poll_ms: Option<u64>,
    batch: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EndpointFile {
    name: String,
    url: String,
    #[serde(default)]
    secrets: Vec<String>,
    #[serde(default)]
    secret_env: Vec<String>,
    #[serde(default)]
    types: Option<Vec<String>>,
    #[serde(default)]
    ca_file: Option<String>,
}

/// A checked configuration.
#[derive(Debug, Clone)]
pub struct WebhooksConfig {
    /// The CloudEvents `source` of every delivery.
    pub source: String,
    /// How deliveries are timed.
    pub delivery: DeliveryTiming,
    /// Where facts go.
    pub endpoints: Vec<Endpoint>,
}

/// How deliveries are timed, for every endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryTiming {
    /// One attempt's limit (connect, send, answer).
    pub timeout: Duration,
    /// The wait after a fact's first failure.
    pub initial_backoff: Duration,
    /// Each further wait is this many times the last.
    pub backoff_factor: f64,
    /// No wait is longer.
    pub max_backoff: Duration,
    /// Random jitter on each wait (so replicas and endpoints do not retry in step).
    pub jitter: bool,
    /// A fact still failing this long after its first attempt is parked as a dead letter.
    pub horizon: Duration,
    /// How long a deliverer's hold on an endpoint lasts without renewal.
    pub lease: Duration,
    /// The slow re-read of the outbox and of replay requests, beside the wake-ups.
    pub safety_poll: Duration,
    /// Facts read from the outbox at once.
    pub batch: usize,
}

impl Default for DeliveryTiming {
    fn default() -> DeliveryTiming {
        DeliveryTiming {
            timeout: Duration::from_secs(10),
            initial_backoff: Duration::from_secs(1),
            backoff_factor: 2.0,
            max_backoff: Duration::from_secs(300),
            jitter: true,
            horizon: Duration::from_secs(24 * 3600),
            lease: Duration::from_secs(30),
            safety_poll: Duration::from_secs(2),
            batch: 100,
        }
    }
}

/// One configured endpoint.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Its name: the key of its cursor, lease and dead letters, a metric label.
    pub name: String,
    /// Where facts are POSTed (`http://` or `https://`).
    pub url: http::Uri,
    /// CA certificates (DER) that vouch for the endpoint besides Mozilla's roots, from its
    /// `ca_file`.
    pub ca_certificates: Vec<CertificateDer<'static>>,
    /// Every active secret (each signs every delivery).
    pub secrets: Vec<Secret>,
    /// The CloudEvents types it receives; `None` for all.
    pub types: Option<HashSet<&'static str>>,
}

impl Endpoint {
    /// Whether this endpoint receives facts of this body.
    pub fn wants(&self, body: &FactBody) -> bool {
        self.types
            .as_ref()
            .is_none_or(|types| types.contains(body.kind().event_type()))
    }
}

/// What is wrong with a configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the webhooks configuration {path}: {reason}")]
    Unreadable {
        /// The file.
        path: String,
        /// The system's reason.
        reason: String,
    },
    /// Not JSON of the expected shape.
    #[error("the webhooks configuration is not valid: {0}")]
    Syntax(String),
    /// A field's value is wrong.
    #[error("webhooks configuration, {field}: {problem}")]
    Invalid {
        /// Where (`endpoints[1].url`, `delivery.timeout_ms`).
        field: String,
        /// What is wrong.
        problem: String,
    },
}

fn invalid(field: impl Into<String>, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        field: field.into(),
        problem: problem.into(),
    }
}

impl WebhooksConfig {
    /// Reads and checks the file at `path`, taking `secret_env` values from the process's
    /// environment.
    pub fn load(path: &std::path::Path) -> Result<WebhooksConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Unreadable {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        WebhooksConfig::parse(&text, |name| std::env::var(name).ok())
    }

    /// Reads and checks `text`, taking `secret_env` values from `env`.
    pub fn parse(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<WebhooksConfig, ConfigError> {
        let file: File =
            serde_json::from_str(text).map_err(|e| ConfigError::Syntax(e.to_string()))?;
        let source = file.source.unwrap_or_else(|| DEFAULT_SOURCE.to_owned());
        if source.trim().is_empty() {
            return Err(invalid("source", "must not be empty"));
        }
        let delivery = timing(file.delivery)?;
        let mut names = HashSet::new();
        let mut endpoints = Vec::new();
        for (i, endpoint) in file.endpoints.into_iter().enumerate() {
            let at = |field: &str| format!("endpoints[{i}].{field}");
            let name = endpoint.name;
            let name_ok = !name.is_empty()
                && name.chars().count() <= MAX_NAME_CHARS
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !name_ok {
                return Err(invalid(
                    at("name"),
                    format!(
                        "{name:?} is not a name: 1 to {MAX_NAME_CHARS} letters, digits, '-' or '_'"
                    ),
                ));
            }
            if !names.insert(name.clone()) {
                return Err(invalid(
                    at("name"),
                    format!("{name:?} names two endpoints; names must be unique"),
                ));
            }
            let url = endpoint_url(&endpoint.url).map_err(|problem| invalid(at("url"), problem))?;
            let mut secrets = Vec::new();
            for (j, text) in endpoint.secrets.iter().enumerate() {
                secrets.push(
                    Secret::parse(text)
                        .map_err(|e| secret_error(at(&format!("secrets[{j}]")), e))?,
                );
            }
            for (j, var) in endpoint.secret_env.iter().enumerate() {
                let field = at(&format!("secret_env[{j}]"));
                let value = env(var).ok_or_else(|| {
                    invalid(&field, format!("the environment variable {var} is not set"))
                })?;
                let parts: Vec<&str> = value
                    .split([' ', ','])
                    .filter(|part| !part.trim().is_empty())
                    .collect();
                if parts.is_empty() {
                    return Err(invalid(
                        &field,
                        format!("the environment variable {var} is empty"),
                    ));
                }
                for part in parts {
                    secrets.push(
                        Secret::parse(part).map_err(|e| {
                            secret_error(format!("{field} (the value of {var})"), e)
                        })?,
                    );
                }
            }
            if secrets.is_empty() {
                return Err(invalid(
                    at("secrets"),
                    "an endpoint needs at least one secret (secrets or secret_env)",
                ));
            }
            let types = match endpoint.types {
                None => None,
                Some(listed) => {
                    let mut types = HashSet::new();
                    for (j, name) in listed.iter().enumerate() {
                        let kind = FactKind::ALL
                            .into_iter()
                            .find(|kind| kind.event_type() == name)
                            .ok_or_else(|| {
                                invalid(
                                    at(&format!("types[{j}]")),
                                    format!(
                                        "{name:?} is not a lifecycle type; known: {}",
                                        FactKind::ALL.map(FactKind::event_type).join(", ")
                                    ),
                                )
                            })?;
                        types.insert(kind.event_type());
                    }
                    if types.is_empty() {
                        return Err(invalid(
                            at("types"),
                            "an empty list would receive nothing; leave it out for every type",
                        ));
                    }
                    Some(types)
                }
            };
            let ca_certificates = match &endpoint.ca_file {
                None => Vec::new(),
                Some(path) => {
                    ca_certificates(path).map_err(|problem| invalid(at("ca_file"), problem))?
                }
            };
            endpoints.push(Endpoint {
                name,
                url,
                secrets,
                types,
                ca_certificates,
            });
        }
        Ok(WebhooksConfig {
            source,
            delivery,
            endpoints,
        })
    }
}

fn secret_error(field: String, error: SecretError) -> ConfigError {
    invalid(field, error.to_string())
}

/// The CA certificates of a PEM file: at least one, every one readable.
fn ca_certificates(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("cannot read {path:?}: {e}"))?;
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{path:?} is not a PEM file of certificates: {e}"))?;
    if certificates.is_empty() {
        return Err(format!("{path:?} holds no PEM certificate"));
    }
    Ok(certificates)
}

/// An endpoint's URL: absolute `http://` or `https://host[:port]/path`.
fn endpoint_url(text: &str) -> Result<http::Uri, String> {
    let url: http::Uri = text
        .parse()
        .map_err(|e| format!("{text:?} is not a URL: {e}"))?;
    match url.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => {
            return Err(format!(
                "{text:?}: the scheme must be http:// or https://, not {other}://"
            ));
        }
        None => {
            return Err(format!(
                "{text:?}: give an absolute URL, like https://host:8443/hooks"
            ));
        }
    }
    if url.host().is_none_or(str::is_empty) {
        return Err(format!("{text:?} names no host"));
    }
    Ok(url)
}

fn timing(file: DeliveryFile) -> Result<DeliveryTiming, ConfigError> {
    let d = DeliveryTiming::default();
    let ms =
        |value: Option<u64>, default: Duration, field: &str| -> Result<Duration, ConfigError> {
            match value {
                None => Ok(default),
                Some(0) => Err(invalid(format!("delivery.{field}"), "must be more than 0")),
                Some(ms) => Ok(Duration::from_millis(ms)),
            }
        };
    let timing = DeliveryTiming {
        timeout: ms(file.timeout_ms, d.timeout, "timeout_ms")?,
        initial_backoff: ms(
            file.initial_backoff_ms,
            d.initial_backoff,
            "initial_backoff_ms",
        )?,
        backoff_factor: file.backoff_factor.unwrap_or(d.backoff_factor),
        max_backoff: ms(file.max_backoff_ms, d.max_backoff, "max_backoff_ms")?,
        jitter: file.jitter.unwrap_or(d.jitter),
        horizon: ms(file.horizon_ms, d.horizon, "horizon_ms")?,
        lease: ms(file.lease_ms, d.lease, "lease_ms")?,
        safety_poll: ms(file.safety_poll_ms, d.safety_poll, "safety_poll_ms")?,
        batch: file.batch.unwrap_or(d.batch),
    };
    if !(timing.backoff_factor.is_finite() && (1.0..=100.0).contains(&timing.backoff_factor)) {
        return Err(invalid(
            "delivery.backoff_factor",
            format!("{} is not between 1 and 100", timing.backoff_factor),
        ));
    }
    if timing.max_backoff < timing.initial_backoff {
        return Err(invalid(
            "delivery.max_backoff_ms",
            "must not be less than initial_backoff_ms",
        ));
    }
    // A deliverer renews its lease before each attempt; an attempt must fit well inside it.
    if timing.timeout.saturating_mul(2) > timing.lease {
        return Err(invalid(
            "delivery.lease_ms",
            "must be at least twice timeout_ms (the lease is renewed between attempts)",
        ));
    }
    if !(1..=10_000).contains(&timing.batch) {
        return Err(invalid("delivery.batch", "must be between 1 and 10000"));
    }
    Ok(timing)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    fn parse(text: &str) -> Result<WebhooksConfig, ConfigError> {
        WebhooksConfig::parse(text, |name| {
            (name == "HOOK_SECRETS").then(|| format!("{SECRET}, {SECRET}"))
        })
    }

    fn problem(text: &str) -> (String, String) {
        match parse(text) {
            Err(ConfigError::Invalid { field, problem }) => (field, problem),
            other => panic!("expected an invalid field, got {other:?}"),
        }
    }

    #[test]
    fn a_full_file_reads_with_defaults_for_what_it_leaves_out() {
        let config = parse(&format!(
            r#"{{"endpoints": [
                {{"name": "rewards", "url": "http://127.0.0.1:9/hooks", "secrets": ["{SECRET}"],
                  "types": ["hiddenfront.game.ended.v1"]}},
                {{"name": "analytics", "url": "http://analytics/x", "secret_env": ["HOOK_SECRETS"]}}
              ], "delivery": {{"timeout_ms": 500, "horizon_ms": 2000}}}}"#
        ))
        .unwrap();
        assert_eq!(config.source, DEFAULT_SOURCE);
        assert_eq!(config.delivery.timeout, Duration::from_millis(500));
        assert_eq!(config.delivery.horizon, Duration::from_millis(2000));
        assert_eq!(config.delivery.lease, DeliveryTiming::default().lease);
        assert_eq!(config.endpoints.len(), 2);
        assert_eq!(
            config.endpoints[1].secrets.len(),
            2,
            "env var with two secrets"
        );
        let ended = FactBody::SeatLost {
            side: hidden_front_rules::Side::South,
            player: "a".into(),
        };
        assert!(!config.endpoints[0].wants(&ended));
        assert!(config.endpoints[1].wants(&ended));
    }

    #[test]
    fn bad_urls_secrets_names_and_timings_are_named() {
        let endpoint = |name: &str, url: &str, secret: &str| {
            format!(
                r#"{{"endpoints": [{{"name": "{name}", "url": "{url}", "secrets": ["{secret}"]}}]}}"#
            )
        };
        let (field, text) = problem(&endpoint("a", "not a url", SECRET));
        assert_eq!(field, "endpoints[0].url");
        assert!(text.contains("not a URL"), "{text}");
        let (_, text) = problem(&endpoint("a", "ftp://host/x", SECRET));
        assert!(text.contains("ftp://"), "{text}");
        let (_, text) = problem(&endpoint("a", "/relative", SECRET));
        assert!(text.contains("absolute"), "{text}");
        let (field, text) = problem(&endpoint("a", "http://h/x", "MfKQ9r8G"));
        assert_eq!(field, "endpoints[0].secrets[0]");
        assert!(text.contains("whsec_"), "{text}");
        let (field, _) = problem(&endpoint("has space", "http://h/x", SECRET));
        assert_eq!(field, "endpoints[0].name");
        let two = format!(
            r#"{{"endpoints": [{{"name": "a", "url": "http://h/", "secrets": ["{SECRET}"]}},
                              {{"name": "a", "url": "http://h/", "secrets": ["{SECRET}"]}}]}}"#
        );
        let (field, text) = problem(&two);
        assert_eq!(field, "endpoints[1].name");
        assert!(text.contains("unique"), "{text}");
        let no_secret = r#"{"endpoints": [{"name": "a", "url": "http://h/"}]}"#;
        assert_eq!(problem(no_secret).0, "endpoints[0].secrets");
        let unset = r#"{"endpoints": [{"name": "a", "url": "http://h/", "secret_env": ["NOPE"]}]}"#;
        let (field, text) = problem(unset);
        assert_eq!(field, "endpoints[0].secret_env[0]");
        assert!(text.contains("NOPE is not set"), "{text}");
        let bad_type = format!(
            r#"{{"endpoints": [{{"name": "a", "url": "http://h/", "secrets": ["{SECRET}"], "types": ["game.over"]}}]}}"#
        );
        assert_eq!(problem(&bad_type).0, "endpoints[0].types[0]");
        let lease = format!(
            r#"{{"delivery": {{"timeout_ms": 1000, "lease_ms": 1500}}, "endpoints": [{{"name": "a", "url": "http://h/", "secrets": ["{SECRET}"]}}]}}"#
        );
        assert_eq!(problem(&lease).0, "delivery.lease_ms");
        assert!(matches!(
            parse(r#"{"endpoints": [], "typo": 1}"#),
            Err(ConfigError::Syntax(_))
        ));
    }

    #[test]
    fn https_endpoints_read_and_a_ca_file_must_hold_certificates() {
        let with_ca = |ca: &str| {
            format!(
                r#"{{"endpoints": [{{"name": "a", "url": "https://h:8443/x", "secrets": ["{SECRET}"], "ca_file": "{ca}"}}]}}"#
            )
        };
        let plain = format!(
            r#"{{"endpoints": [{{"name": "a", "url": "https://h:8443/x", "secrets": ["{SECRET}"]}}]}}"#
        );
        let config = parse(&plain).expect("an https endpoint");
        assert_eq!(config.endpoints[0].url.scheme_str(), Some("https"));
        assert!(config.endpoints[0].ca_certificates.is_empty());
        let (field, text) = problem(&with_ca("/nonexistent/ca.pem"));
        assert_eq!(field, "endpoints[0].ca_file");
        assert!(text.contains("cannot read"), "{text}");
        let not_pem = std::env::temp_dir().join(format!("hf-not-pem-{}", uuid::Uuid::new_v4()));
        std::fs::write(&not_pem, "no certificate here\n").unwrap();
        let (field, text) = problem(&with_ca(&not_pem.display().to_string()));
        let _ = std::fs::remove_file(&not_pem);
        assert_eq!(field, "endpoints[0].ca_file");
        assert!(text.contains("no PEM certificate"), "{text}");
    }
}
