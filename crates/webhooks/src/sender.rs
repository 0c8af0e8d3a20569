//! One endpoint's HTTP connection: a signed POST of one CloudEvent, with a time limit, over a
//! kept-alive HTTP/1.1 connection that is opened again after any failure.

use crate::config::Endpoint;
use crate::signature::{
    ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, signature_header, unix_seconds,
};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::SendRequest;
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
    /// No connection could be made.
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
    connection: Option<SendRequest<Full<Bytes>>>,
}

impl Sender {
    /// A sender for `endpoint`; connects at the first send.
    pub fn new(endpoint: Endpoint, timeout: Duration) -> Sender {
        Sender {
            endpoint,
            timeout,
            connection: None,
        }
    }

    /// POSTs `body` (a CloudEvent's JSON) as message `id`, signed with every secret and stamped
    /// with the current time. `Ok` only for a 2xx answer.
    pub async fn send(&mut self, id: &str, body: &str) -> Result<u16, AttemptError> {
        let timeout = self.timeout;
        match tokio::time::timeout(timeout, self.exchange(id, body)).await {
            Ok(Ok(status)) if (200..300).contains(&status) => Ok(status),
            Ok(Ok(status)) => Err(AttemptError::Status(status)),
            Ok(Err(error)) => {
                self.connection = None;
                Err(error)
            }
            Err(_) => {
                self.connection = None;
                Err(AttemptError::Timeout(timeout))
            }
        }
    }

    async fn exchange(&mut self, id: &str, body: &str) -> Result<u16, AttemptError> {
        let timestamp = unix_seconds(SystemTime::now());
        let signatures = signature_header(&self.endpoint.secrets, id, timestamp, body.as_bytes());
        let url = &self.endpoint.url;
        let authority = url
            .authority()
            .map(|a| a.as_str().to_owned())
            .unwrap_or_default();
        let path = url
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_else(|| "/".to_owned());
        let request = hyper::Request::post(path)
            .header(hyper::header::HOST, &authority)
            .header(
                hyper::header::CONTENT_TYPE,
                hidden_front_lifecycle::cloudevents::CONTENT_TYPE,
            )
            .header(hyper::header::USER_AGENT, "hidden-front-webhooks/1")
            .header(ID_HEADER, id)
            .header(TIMESTAMP_HEADER, timestamp.to_string())
            .header(SIGNATURE_HEADER, signatures)
            .body(Full::new(Bytes::from(body.to_owned())))
            .map_err(|e| AttemptError::Exchange(e.to_string()))?;
        let connection = self.connection().await?;
        let response = connection
            .send_request(request)
            .await
            .map_err(|e| AttemptError::Exchange(e.to_string()))?;
        let status = response.status().as_u16();
        // Read the answer to its end so the connection can carry the next request. An answer
        // too long (or cut off) does not undo its status: the connection is dropped instead.
        if Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .is_err()
        {
            self.connection = None;
        }
        Ok(status)
    }

    /// The open connection, or a new one.
    async fn connection(&mut self) -> Result<&mut SendRequest<Full<Bytes>>, AttemptError> {
        let usable = self.connection.as_mut().is_some_and(|c| !c.is_closed());
        if !usable {
            self.connection = None;
            let url = &self.endpoint.url;
            let host = url.host().unwrap_or_default().trim_matches(['[', ']']);
            let port = url.port_u16().unwrap_or(80);
            let stream = tokio::net::TcpStream::connect((host, port))
                .await
                .map_err(|e| AttemptError::Connect(format!("{host}:{port}: {e}")))?;
            let _ = stream.set_nodelay(true);
            let (sender, connection) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                    .await
                    .map_err(|e| AttemptError::Connect(format!("{host}:{port}: {e}")))?;
            // The connection's driver ends when the connection does (or the sender is dropped).
            tokio::spawn(async move {
                let _ = connection.await;
            });
            self.connection = Some(sender);
        }
        let connection = self
            .connection
            .as_mut()
            .ok_or_else(|| AttemptError::Connect("no connection".into()))?;
        connection
            .ready()
            .await
            .map_err(|e| AttemptError::Exchange(e.to_string()))?;
        Ok(connection)
    }
}
