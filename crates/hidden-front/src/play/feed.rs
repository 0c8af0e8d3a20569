//! Following a game's event stream across disconnects.
//!
//! `Subscribe` is a server stream that can end at any time: the gateway restarts, the network
//! drops, or the server asks the client to come back (`Reconnect`) because it is going away or the
//! client fell behind. The follower hides all that from the game loop: it resubscribes from the
//! last sequence number seen + 1, waiting a bounded, growing delay between failed attempts, drops
//! any event it has already passed on, and stops only when the game has ended, the loop has gone,
//! or the gateway gives an answer that retrying cannot change (bad token, unknown game).

use super::{Client, explain};
use hidden_front_proto::v1 as pb;
use hidden_front_retry::Backoff;
use std::time::Duration;
use tokio::sync::mpsc;
use tonic::Code;

/// What the follower tells the game loop.
#[derive(Debug)]
pub enum Feed {
    /// A new event, in order, each sequence number at most once.
    Event(pb::GameEvent),
    /// Something the player should know about the connection (lost, resuming).
    Notice(String),
    /// The stream cannot go on: the message says why; the follower has stopped.
    Fatal(String),
}

/// Delays between reconnection attempts: doubling from a quarter second up to 8 s, jittered, so
/// a restarting gateway is found again quickly but a dead one is not hammered, and the players it
/// dropped do not all come back in the same instant.
fn backoff() -> Backoff {
    Backoff::new(Duration::from_millis(250), Duration::from_secs(8)).jittered()
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
    let mut backoff = backoff();
    loop {
        let request = pb::SubscribeRequest {
            game_id: game_id.clone(),
            from_seq: next_seq,
            spectate,
        };
        let why = match client.subscribe(request).await {
            Err(status) if is_permanent(status.code()) => {
                let _ = tx.send(Feed::Fatal(explain(&status))).await;
                return;
            }
            Err(status) => format!("cannot follow the game: {}", explain(&status)),
            Ok(response) => {
                let mut stream = response.into_inner();
                loop {
                    match stream.message().await {
                        Ok(Some(pb::SubscribeResponse {
                            item: Some(pb::subscribe_response::Item::Event(event)),
                        })) => {
                            backoff.reset();
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
                            break format!(
                                "the gateway asked to reconnect ({})",
                                if r.reason.is_empty() {
                                    "no reason given"
                                } else {
                                    r.reason.as_str()
                                }
                            );
                        }
                        Ok(Some(pb::SubscribeResponse { item: None })) => {} // unknown item
                        Ok(None) => break "the event stream closed".to_string(),
                        Err(status) if is_permanent(status.code()) => {
                            let _ = tx.send(Feed::Fatal(explain(&status))).await;
                            return;
                        }
                        Err(status) => break format!("connection lost: {}", explain(&status)),
                    }
                }
            }
        };
        let delay = backoff.next_delay();
        let notice = format!(
            "{why}; resuming from #{next_seq} in {:.2} s",
            delay.as_secs_f64()
        );
        if tx.send(Feed::Notice(notice)).await.is_err() {
            return;
        }
        tokio::time::sleep(delay).await;
    }
}
