//! Why a WebSocket connection closes, and the close frame that says so: the RFC 6455 code (1000s)
//! and a reason cut to the protocol's limit. The first reason wins; the writer's goodbye and the
//! pre-authentication refusals both answer from here, so each cause always gets the same code.

use axum::extract::ws::{CloseFrame, Message, WebSocket, close_code};
use std::time::Duration;
use tonic::{Code, Status};

/// How long a closing connection may take to send its last items and its close frame, and to
/// read the client's close frame back, before the socket is simply dropped.
pub(super) const CLOSE_GRACE: Duration = Duration::from_secs(3);

/// The largest close reason RFC 6455 allows (125 bytes of payload minus the 2-byte code).
const MAX_CLOSE_REASON: usize = 123;

/// Why a connection is closing; the first reason wins.
#[derive(Debug, Clone)]
pub(super) enum Closing {
    /// The client closed, or the socket broke: only a close reply can still go out.
    ClientGone,
    /// The outbound queue stayed full for the stall timeout: the client is not reading.
    Overflow,
    /// The server is shutting down.
    Shutdown,
    /// Nothing arrived from the client (not even a pong) for three ping intervals.
    Idle,
    /// The WebSocket layer refused a frame or message over its hard size limit.
    TooBig(String),
    /// A text frame was not valid UTF-8 (RFC 6455 8.1: close with 1007).
    InvalidText(String),
    /// The client broke the WebSocket protocol.
    ReadFailed(String),
}

impl Closing {
    /// Why reading failed, from the WebSocket layer's error (which axum wraps).
    pub(super) fn read_failed(error: &axum::Error) -> Closing {
        use tokio_tungstenite::tungstenite::Error as WsError;

        let text = error.to_string();
        match std::error::Error::source(error).and_then(|e| e.downcast_ref::<WsError>()) {
            Some(WsError::Capacity(_)) => Closing::TooBig(text),
            Some(WsError::Utf8(_)) => Closing::InvalidText(text),
            _ => Closing::ReadFailed(text),
        }
    }

    /// The close frame answering a read error before authentication (the writer's goodbye
    /// answers those after it, with the same codes); `None` for reasons that are not read errors.
    pub(super) fn read_error_frame(&self) -> Option<CloseFrame> {
        let (code, error) = match self {
            Closing::TooBig(error) => (close_code::SIZE, error),
            Closing::InvalidText(error) => (close_code::INVALID, error),
            Closing::ReadFailed(error) => (close_code::PROTOCOL, error),
            _ => return None,
        };
        Some(close_frame(code, error))
    }

    /// Whether the server closes first and should read the client's close frame back.
    pub(super) fn awaits_client_close(&self) -> bool {
        matches!(self, Closing::Overflow | Closing::Shutdown | Closing::Idle)
    }
}

/// Sends `refusal` (a refused request in the connection's own form), then the close frame
/// `status` calls for (1009 for a message too big, else 1008, policy violation), then reads until
/// the client's close frame, all within [`CLOSE_GRACE`]: a socket closed with unread input is
/// reset, and the refusal could be lost with it.
pub(super) async fn refuse_and_close(socket: &mut WebSocket, refusal: Message, status: &Status) {
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        if socket.send(refusal).await.is_err() {
            return;
        }
        let reason = format!("{}: {}", super::code_name(status.code()), status.message());
        let code = match status.code() {
            Code::OutOfRange => close_code::SIZE,
            _ => close_code::POLICY,
        };
        if socket
            .send(Message::Close(Some(close_frame(code, &reason))))
            .await
            .is_err()
        {
            return;
        }
        while let Some(Ok(frame)) = socket.recv().await {
            if matches!(frame, Message::Close(_)) {
                break;
            }
        }
    })
    .await;
}

/// A close frame, its reason cut to the protocol's limit (at a character boundary).
pub(super) fn close_frame(code: u16, reason: &str) -> CloseFrame {
    let mut end = reason.len().min(MAX_CLOSE_REASON);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    CloseFrame {
        code,
        reason: reason[..end].to_string().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_reasons_fit_the_frame() {
        let frame = close_frame(close_code::POLICY, &"é".repeat(100));
        assert!(frame.reason.as_str().len() <= MAX_CLOSE_REASON);
        assert!(!frame.reason.as_str().is_empty());
    }
}
