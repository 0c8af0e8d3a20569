//! One endpoint's HTTP client: a signed POST of one CloudEvent, with a time limit, over `http://`
//! or `https://` (reqwest on rustls), the connection kept alive between deliveries and opened
//! again after any failure.
//!
//! TLS trusts Mozilla's roots (webpki-roots, built in, so a container needs no CA bundle) and any
//! CA the endpoint's configuration names (`ca_file`: a platform's private CA).

use crate::config::Endpoint;
use crate::signature::{
    ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, signature_header, unix_seconds,
};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The most of an endpoint's answer that is read (and thrown away): a receiver that answers
/// with megabytes cannot hold a deliverer.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Why an attempt did not succeed, as an operator reads it (no fact content: the feed carries
/// no secrets, but error text stays about the transport).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttemptError {
    /// The endpoint answered, but not 2xx.
    #[error("the endpoint answered HTTP {0}")]
    Status(u16),
    /// No connection could be made (refused, unreachable, or a TLS handshake that failed, such
    /// as a certificate no configured root vouches for).
    #[error("cannot connect to {0}")]
    Connect(String),
    /// The connection failed while sending or reading the answer.
    #[error("the HTTP exchange failed: {0}")]
    Exchange(String),
    /// No answer within the configured timeout.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

/// The sender of one endpoint.
pub struct Sender {
    endpoint: Endpoint,
    timeout: Duration,
    client: Result<reqwest::Client, String>,
}

/// The HTTP client of `endpoint`: TLS that trusts Mozilla's roots and the endpoint's own CAs,
/// ring as the crypto provider, one kept-alive connection, no redirects (an endpoint answers;
/// it does not send the feed elsewhere).
fn client(endpoint: &Endpoint, timeout: Duration) -> Result<reqwest::Client, String> {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    for certificate in &endpoint.ca_certificates {
        roots
            .add(certificate.clone())
            .map_err(|e| format!("a certificate of ca_file is refused: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS settings: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .timeout(timeout)
        .pool_max_idle_per_host(1)
        .tcp_nodelay(true)
        .user_agent("hidden-front-webhooks/1")
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("the HTTP client: {}", chain(&e)))
}

impl Sender {
    /// A sender for `endpoint`; connects at the first send. A client that cannot be built
    /// (TLS settings refused) fails every attempt with [`AttemptError::Connect`] saying why, so
    /// the endpoint's errors show it and its facts wait, as for an unreachable endpoint.
    pub fn new(endpoint: Endpoint, timeout: Duration) -> Sender {
        let client = client(&endpoint, timeout);
        Sender {
            endpoint,
            timeout,
            client,
        }
    }

    /// POSTs `body` (a CloudEvent's JSON) as message `id`, signed with every secret and stamped
    /// with the current time. `Ok` only for a 2xx answer.
    pub async fn send(&mut self, id: &str, body: &str) -> Result<u16, AttemptError> {
        let timeout = self.timeout;
        match tokio::time::timeout(timeout, self.exchange(id, body)).await {
            Ok(Ok(status)) if (200..300).contains(&status) => Ok(status),
            Ok(Ok(status)) => Err(AttemptError::Status(status)),
            Ok(Err(error)) => Err(error),
            Err(_) => Err(AttemptError::Timeout(timeout)),
        }
    }

    async fn exchange(&mut self, id: &str, body: &str) -> Result<u16, AttemptError> {
        let timestamp = unix_seconds(SystemTime::now());
        let signatures = signature_header(&self.endpoint.secrets, id, timestamp, body.as_bytes());
        let client = self
            .client
            .as_ref()
            .map_err(|reason| AttemptError::Connect(format!("{}: {reason}", self.address())))?;
        let mut response = client
            .post(self.endpoint.url.to_string())
            .header(
                reqwest::header::CONTENT_TYPE,
                hidden_front_lifecycle::cloudevents::CONTENT_TYPE,
            )
            .header(ID_HEADER, id)
            .header(TIMESTAMP_HEADER, timestamp.to_string())
            .header(SIGNATURE_HEADER, signatures)
            .body(body.to_owned())
            .send()
            .await
            .map_err(|e| self.attempt_error(e.without_url()))?;
        let status = response.status().as_u16();
        // Read the answer to its end (up to a bound) so the connection can carry the next
        // request; an answer too long or cut off does not undo its status.
        let mut read = 0;
        while let Ok(Some(chunk)) = response.chunk().await {
            read += chunk.len();
            if read > MAX_ANSWER_BYTES {
                break;
            }
        }
        Ok(status)
    }

    /// The endpoint's scheme and authority: what errors name (never its path, which may carry
    /// a token).
    fn address(&self) -> String {
        let url = &self.endpoint.url;
        format!(
            "{}://{}",
            url.scheme_str().unwrap_or("http"),
            url.authority().map(|a| a.as_str()).unwrap_or_default()
        )
    }

    /// What a failed request says (`error` without its URL).
    fn attempt_error(&self, error: reqwest::Error) -> AttemptError {
        if error.is_timeout() {
            AttemptError::Timeout(self.timeout)
        } else if error.is_connect() {
            AttemptError::Connect(format!("{}: {}", self.address(), chain(&error)))
        } else {
            AttemptError::Exchange(chain(&error))
        }
    }
}

/// An error with its sources, as one line (reqwest's own text is only the outermost).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
