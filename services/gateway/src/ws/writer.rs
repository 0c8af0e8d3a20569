//! The socket writer of a connection: writes the queued items in order, pings the client and
//! closes a silent one, records each written event's seq (the exact resume point), and when the
//! connection closes says goodbye: a `reconnect` item per subscription where resuming makes
//! sense, then the close frame saying why.

use super::closing::{CLOSE_GRACE, Closing, close_frame};
use super::connection::{Conn, Outbound};
use super::messages::{ReconnectMessage, to_text};
use axum::extract::ws::{Message, WebSocket, close_code};
use futures_util::SinkExt;
use futures_util::stream::SplitSink;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::mpsc;

/// Writes queued items to the socket until the connection closes, then says goodbye: resume
/// hints where useful, and a close frame saying why.
pub(super) async fn write_loop(
    conn: Arc<Conn>,
    mut sink: SplitSink<WebSocket, Message>,
    mut queue: mpsc::Receiver<Outbound>,
) {
    let mut closing = conn.closing.subscribe();
    let interval = conn.config.ping_interval.max(Duration::from_millis(100));
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let reason = loop {
        if let Some(reason) = closing.borrow_and_update().clone() {
            break reason;
        }
        let (message, event) = tokio::select! {
            biased;
            _ = closing.changed() => continue,
            _ = ping.tick() => {
                if conn.silent_for() > interval * 3 {
                    conn.close(Closing::Idle);
                    continue;
                }
                (Message::Ping(Default::default()), None)
            }
            item = queue.recv() => {
                let Some(item) = item else { break Closing::ClientGone };
                if item
                    .event
                    .as_ref()
                    .is_some_and(|(cell, _)| cell.cancelled.load(Ordering::Relaxed))
                {
                    continue;
                }
                (Message::Text(item.text.into()), item.event)
            }
        };
        // A client that stops reading blocks this send; the stall timeout of the producers then
        // starts the close, which abandons the send.
        let sent = tokio::select! {
            biased;
            _ = closing.changed() => continue,
            sent = sink.send(message) => sent,
        };
        match sent {
            Ok(()) => {
                if let Some((cell, seq)) = event {
                    cell.next_seq.store(seq + 1, Ordering::Relaxed);
                }
            }
            Err(_) => conn.close(Closing::ClientGone),
        }
    };
    let goodbye = async {
        let (code, text, hint_reason) = match &reason {
            Closing::ClientGone => {
                let _ = sink.close().await;
                return;
            }
            Closing::Overflow => (
                close_code::POLICY,
                "too slow: the outbound queue overflowed; resubscribe from each reconnect item (or last seq + 1)"
                    .to_string(),
                Some("this connection did not read fast enough"),
            ),
            Closing::Shutdown => (
                close_code::AWAY,
                "the server is shutting down; reconnect and resubscribe from each reconnect item (or last seq + 1)"
                    .to_string(),
                Some("the server is shutting down"),
            ),
            Closing::Idle => (
                close_code::AWAY,
                format!(
                    "nothing heard from the client for {} s",
                    (interval * 3).as_secs()
                ),
                None,
            ),
            Closing::TooBig(error) => (
                close_code::SIZE,
                format!(
                    "OUT_OF_RANGE: message over the limit of {} bytes ({error})",
                    conn.config.max_message_bytes
                ),
                None,
            ),
            Closing::InvalidText(error) => (close_code::INVALID, error.clone(), None),
            Closing::ReadFailed(error) => (close_code::PROTOCOL, error.clone(), None),
        };
        if let Some(why) = hint_reason {
            for (id, next) in conn.resume_hints() {
                let text = to_text(&ReconnectMessage::new(&id, next, why));
                if sink.feed(Message::Text(text.into())).await.is_err() {
                    return;
                }
            }
        }
        let _ = sink
            .send(Message::Close(Some(close_frame(code, &text))))
            .await;
    };
    let _ = tokio::time::timeout(CLOSE_GRACE, goodbye).await;
}

#[cfg(test)]
mod tests {
    use super::super::WsConfig;
    use super::super::connection::{Sub, SubCell};
    use super::super::messages::EventMessage;
    use super::*;
    use crate::auth::Player;
    use crate::gateway::Gateway;
    use axum::Router;
    use axum::extract::ws::WebSocketUpgrade;
    use axum::routing::get;
    use futures_util::StreamExt;
    use hidden_front_proto::v1 as pb;
    use serde_json::Value;
    use std::sync::Mutex;
    use tokio::net::TcpListener;

    /// A client that stops reading: the producers are released within the stall timeout, the
    /// connection closes as overflowed, and whatever reaches the client is a gapless prefix,
    /// followed (if the goodbye gets through) by a resume hint that continues it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_that_stops_reading_is_cut_off_with_a_resume_hint() {
        use crate::auth::{AuthConfig, Authenticator};
        use crate::gateway::GatewayConfig;
        use hidden_front_proto::v1::session_service_client::SessionServiceClient;
        use tokio_tungstenite::tungstenite::Message as ClientMessage;

        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (socket_tx, socket_rx) = tokio::sync::oneshot::channel::<WebSocket>();
        let socket_tx = Arc::new(Mutex::new(Some(socket_tx)));
        let app = Router::new().route(
            "/",
            get(move |ws: WebSocketUpgrade| async move {
                ws.on_upgrade(move |socket| async move {
                    if let Some(tx) = socket_tx.lock().unwrap().take() {
                        let _ = tx.send(socket);
                    }
                })
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });

        // A client with a tiny receive window that reads nothing for now.
        let tcp = tokio::net::TcpSocket::new_v4().unwrap();
        tcp.set_recv_buffer_size(4096).unwrap();
        let tcp = tcp.connect(addr).await.unwrap();
        let (mut client, _) = tokio_tungstenite::client_async(format!("ws://{addr}/"), tcp)
            .await
            .unwrap();
        let socket = socket_rx.await.unwrap();

        // A gateway that is never called: the items are fed to the connection directly.
        let session = SessionServiceClient::new(
            tonic::transport::Endpoint::from_static("http://127.0.0.1:9")
                .connect_lazy()
                .into(),
        );
        let gateway = Gateway::new(
            GatewayConfig::default(),
            Authenticator::new(AuthConfig::dev()).unwrap(),
            session,
        );
        let config = WsConfig {
            outbound_queue: 4,
            stall_timeout: Duration::from_millis(300),
            ping_interval: Duration::from_secs(3600),
            ..WsConfig::default()
        };
        let (out, queue) = mpsc::channel(config.outbound_queue);
        let player = Player {
            id: "slow".into(),
            guest: true,
            bot: false,
        };
        let conn = Arc::new(Conn::new(gateway, config, player, out));
        let (sink, _stream) = socket.split();
        let writer = tokio::spawn(write_loop(Arc::clone(&conn), sink, queue));
        let id = Value::from("g");
        let cell = Arc::new(SubCell::new(1));
        conn.subs.lock().map.insert(
            id.to_string(),
            Sub {
                token: 1,
                id: id.clone(),
                cell: Arc::clone(&cell),
                task: None,
            },
        );

        let produce = async {
            for seq in 1.. {
                let event = pb::GameEvent {
                    game_id: "x".repeat(2048),
                    seq,
                    event: None,
                };
                let item = Outbound {
                    text: to_text(&EventMessage::new(&id, &event)),
                    event: Some((Arc::clone(&cell), seq)),
                };
                if !conn.enqueue(item).await {
                    return seq;
                }
            }
            unreachable!()
        };
        let refused_at = tokio::time::timeout(Duration::from_secs(30), produce)
            .await
            .expect("a producer is never held longer than the stall timeout");
        assert!(refused_at > 1);
        assert!(
            matches!(conn.reason(), Closing::Overflow),
            "{:?}",
            conn.reason()
        );

        // Now the client reads what reached it.
        let mut last = 0;
        let mut hint = None;
        let mut close = None;
        while let Ok(Some(Ok(frame))) =
            tokio::time::timeout(Duration::from_secs(10), client.next()).await
        {
            match frame {
                ClientMessage::Text(text) => {
                    let item: Value = serde_json::from_str(text.as_str()).unwrap();
                    match item["type"].as_str() {
                        Some("event") => {
                            let seq: u64 = item["event"]["seq"].as_str().unwrap().parse().unwrap();
                            assert!(
                                seq == last + 1 || (hint.is_none() && seq == last),
                                "gapless: {seq} after {last}"
                            );
                            last = seq;
                        }
                        Some("reconnect") => hint = Some(item["resume_from_seq"].as_u64().unwrap()),
                        other => panic!("unexpected {other:?}: {item}"),
                    }
                }
                ClientMessage::Close(frame) => {
                    close = frame.map(|f| u16::from(f.code));
                    break;
                }
                _ => {}
            }
        }
        assert!(
            last >= 1,
            "the client got the events written before it stalled"
        );
        if let Some(hint) = hint {
            // The send cut short by the close may still have gone out: the hint may repeat it.
            assert!(
                hint == last + 1 || hint == last,
                "hint {hint} continues {last}"
            );
            assert_eq!(close, Some(close_code::POLICY));
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), writer).await;
    }
}
