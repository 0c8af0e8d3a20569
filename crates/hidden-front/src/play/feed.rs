//! Following a game's event stream across disconnects.
//!
//! `Subscribe` is a server stream that can end at any time: the gateway restarts, the network
//! drops, or the server asks the client to come back (`Reconnect`) because it is going away or the
//! client fell behind. The follower hides all that from the game loop: it resubscribes from the
//! last sequence number seen + 1, waiting between failed attempts as [`super::reconnect`] says
//! (never more than a few seconds, so a restarted gateway finds its players again at once), drops
//! any event it has already passed on, and stops only when the game has ended, the loop has gone,
//! or the gateway gives an answer that retrying cannot change (bad token, unknown game). An outage
//! is told once when the connection is lost ([`Feed::Lost`]) and once when a subscription works
//! again ([`Feed::Restored`]); a `Reconnect` the gateway asked for is not an outage unless the
//! subscription that follows it fails.

use super::reconnect::{self, Outage};
use super::{Client, explain};
use hidden_front_proto::v1 as pb;
use tokio::sync::mpsc;
use tonic::Code;

/// What the follower tells the game loop.
#[derive(Debug)]
pub enum Feed {
    /// A new event, in order, each sequence number at most once.
    Event(pb::GameEvent),
    /// The game's status now (presence, clocks, timeouts, draw offer), after every event up to
    /// its version.
    Status(pb::GameStatus),
    /// The connection is lost and the follower is reconnecting: the line to show. Sent once per
    /// outage, however many attempts it takes.
    Lost(String),
    /// A subscription works again after [`Feed::Lost`]: the line to show. The game loop draws
    /// the board again from a fresh view (the server's clocks may have moved meanwhile).
    Restored(String),
    /// The stream cannot go on: the message says why; the follower has stopped.
    Fatal(String),
}

/// Whether a refusal will not change by asking again, so retrying would only hide it.
fn is_permanent(code: Code) -> bool {
    matches!(
        code,
        Code::Unauthenticated
            | Code::PermissionDenied
            | Code::NotFound
            | Code::InvalidArgument
            | Code::Unimplemented
    )
}

/// Follows `game_id` from `from_seq` on (as a spectator with `spectate`), sending to `tx` until
/// the game ends, `tx` closes or a permanent error (sent as [`Feed::Fatal`]).
pub async fn follow(
    mut client: Client,
    game_id: String,
    from_seq: u64,
    spectate: bool,
    tx: mpsc::Sender<Feed>,
) {
    let mut next_seq = from_seq.max(1);
    let mut backoff = reconnect::backoff();
    let mut outage = Outage::default();
    loop {
        let request = pb::SubscribeRequest {
            game_id: game_id.clone(),
            from_seq: next_seq,
            spectate,
            // Presence and clocks come with the events: no view read per event.
            with_status: true,
        };
        // Why the stream stopped, and whether that is a lost connection (rather than the gateway
        // asking this client to come back, which a working resubscription answers quietly).
        let (why, lost) = match client.subscribe(request).await {
            Err(status) if is_permanent(status.code()) => {
                let _ = tx.send(Feed::Fatal(explain(&status))).await;
                return;
            }
            Err(status) => (explain(&status), true),
            Ok(response) => {
                // The gateway took the subscription: the connection works again.
                backoff.reset();
                if outage.restored() {
                    let line =
                        format!("connection restored: following the game again from #{next_seq}");
                    if tx.send(Feed::Restored(line)).await.is_err() {
                        return;
                    }
                }
                let mut stream = response.into_inner();
                loop {
                    match stream.message().await {
                        Ok(Some(pb::SubscribeResponse {
                            item: Some(pb::subscribe_response::Item::Event(event)),
                        })) => {
                            if event.seq < next_seq {
                                continue; // already passed on before a resume
                            }
                            next_seq = event.seq.saturating_add(1);
                            let ended =
                                matches!(event.event, Some(pb::game_event::Event::Ended(_)));
                            if tx.send(Feed::Event(event)).await.is_err() || ended {
                                return;
                            }
                        }
                        Ok(Some(pb::SubscribeResponse {
                            item: Some(pb::subscribe_response::Item::Reconnect(r)),
                        })) => {
                            // Resume from what this client has actually seen: the server's
                            // `resume_from_seq` should say the same, and if it says more we would
                            // miss events.
                            let reason = if r.reason.is_empty() {
                                "no reason given"
                            } else {
                                r.reason.as_str()
                            };
                            break (format!("the gateway asked to reconnect ({reason})"), false);
                        }
                        Ok(Some(pb::SubscribeResponse {
                            item: Some(pb::subscribe_response::Item::Status(status)),
                        })) => {
                            if tx.send(Feed::Status(status)).await.is_err() {
                                return;
                            }
                        }
                        Ok(Some(pb::SubscribeResponse { item: None })) => {} // unknown item
                        Ok(None) => break ("the event stream closed".to_string(), true),
                        Err(status) if is_permanent(status.code()) => {
                            let _ = tx.send(Feed::Fatal(explain(&status))).await;
                            return;
                        }
                        Err(status) => break (explain(&status), true),
                    }
                }
            }
        };
        if lost && outage.lost() {
            let line = format!(
                "connection lost: {why}; reconnecting (every few seconds until it answers)"
            );
            if tx.send(Feed::Lost(line)).await.is_err() {
                return;
            }
        }
        tokio::time::sleep(backoff.next_delay()).await;
    }
}
