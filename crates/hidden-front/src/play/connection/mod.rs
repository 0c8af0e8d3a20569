//! The terminal client's one connection to the gateway: a `PlayerService/Connect` stream per
//! session, carrying every request the client makes and every game and lobby it follows.
//!
//! Why one stream: the gateway serves everything a player does on it (`rpc Connect` in
//! `proto/hiddenfront/v1/client.proto`), so a move is one small message up and its answer and the
//! opponent's event come back on the same connection, instead of one unary call per command plus
//! a `Subscribe` stream per game and a `WatchLobby` stream per wait, each reconnecting on its own.
//!
//! [`Connection`] is a cheap handle to one task, the driver (`driver.rs`), which owns the stream:
//! it gives each request an id and hands its answer or refusal back to the caller that is waiting
//! for it ([`Connection::call`]), passes each followed game's events and status items, and the
//! lobby's events, to that follow's reader ([`Follow`]), and reconnects on the client's one
//! schedule ([`super::reconnect`]). After a reconnection it follows every game again from the
//! first sequence number its reader has not been given (or from the earlier resume point a
//! `Goodbye` or `Reconnect` named), and drops what it passed on already, so a reader sees each
//! event once, in order, whatever the connection did.

mod driver;

use super::connection_lost;
use super::reconnect;
use anyhow::{Context as _, bail};
use driver::{Command, Driver, Subject, Target};
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::player_service_client::PlayerServiceClient;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tonic::Status;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::transport::Endpoint;

/// A request of the connection (`ConnectRequest.request`).
pub type Request = pb::connect_request::Request;

/// An answer's response (`Answer.response`).
pub type Response = pb::answer::Response;

/// How long one request may wait for its answer before the client gives up on it and says so,
/// so a hung gateway cannot freeze the prompt. Follows are not bounded by it.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// How many times [`Connection::call_again`] sends a request when the connection fails under
/// it, waiting between attempts as every reconnect does ([`reconnect::backoff`]: so about a
/// second in all). A request that still fails is told to the player, who types it again once
/// the connection is restored.
pub const CALL_ATTEMPTS: u32 = 3;

/// Adds `authorization: Bearer <token>` to the `Connect` call, which the gateway authenticates
/// once, when it opens.
#[derive(Clone)]
pub struct Bearer(MetadataValue<Ascii>);

impl Interceptor for Bearer {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        request
            .metadata_mut()
            .insert("authorization", self.0.clone());
        Ok(request)
    }
}

/// What a follow hands its reader, in order.
#[derive(Debug)]
pub enum Feed {
    /// A followed game's event, each sequence number at most once, in order.
    Event(pb::GameEvent),
    /// A followed game's status now (presence, clocks, timeouts, draw offer), after every event
    /// up to its version.
    Status(pb::GameStatus),
    /// A lobby event (match found, ticket expired, ...), each at most once, in order.
    Lobby(pb::LobbyEvent),
    /// The connection is lost and the client is reconnecting; why, in words. Once per outage,
    /// however many attempts it takes.
    Lost(String),
    /// The follow works again after [`Feed::Lost`], from this sequence number (a game's first
    /// seq asked for; the lobby's `after_seq`).
    Restored(u64),
    /// The follow cannot go on (a refusal that asking again cannot change): why, in words. The
    /// follow has stopped.
    Fatal(String),
}

/// A handle to the connection; clones share it.
#[derive(Clone)]
pub struct Connection {
    commands: mpsc::UnboundedSender<Command>,
    /// Tells one follow from a later one of the same game or the lobby.
    follows: Arc<AtomicU64>,
}

impl Connection {
    /// Connects to the gateway at `gateway` as the player of `token`, failing now with a clear
    /// message if it cannot be reached rather than at the first command. The `Connect` stream
    /// itself opens with the first request.
    pub async fn open(gateway: &str, token: &str) -> anyhow::Result<Connection> {
        let token = token.strip_prefix("Bearer ").unwrap_or(token).trim();
        let header: MetadataValue<Ascii> = format!("Bearer {token}")
            .parse()
            .context("the token holds characters that cannot go in a gRPC header")?;
        let endpoint = Endpoint::from_shared(gateway.to_string())
            .with_context(|| {
                format!("{gateway:?} is not a gateway address (like http://127.0.0.1:50051)")
            })?
            .connect_timeout(Duration::from_secs(5))
            // Pings find a dead connection under a quiet stream, so the client reconnects
            // promptly.
            .http2_keep_alive_interval(Duration::from_secs(20))
            .keep_alive_timeout(Duration::from_secs(10))
            .keep_alive_while_idle(true);
        let channel = match endpoint.connect().await {
            Ok(channel) => channel,
            Err(e) if super::guest::speaks_http1(gateway).await => {
                bail!(super::http_not_grpc(gateway, &e))
            }
            Err(e) => {
                return Err(anyhow::Error::new(e).context(format!(
                    "cannot reach the gateway at {gateway} (is it running? see --gateway / HF_GATEWAY)"
                )));
            }
        };
        let client = PlayerServiceClient::with_interceptor(channel, Bearer(header));
        let (commands, queue) = mpsc::unbounded_channel();
        tokio::spawn(Driver::new(client, queue).run());
        Ok(Connection {
            commands,
            follows: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Sends `request` once and waits for its answer (at most [`CALL_TIMEOUT`]); a refusal comes
    /// back as the status the unary method would have answered. While the connection is down,
    /// the request waits for one attempt to connect, and fails with it.
    pub async fn call(&self, request: Request) -> Result<Response, Status> {
        let (reply, answer) = oneshot::channel();
        if self
            .commands
            .send(Command::Call { request, reply })
            .is_err()
        {
            return Err(closed());
        }
        match tokio::time::timeout(CALL_TIMEOUT, answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(closed()),
            Err(_) => Err(Status::deadline_exceeded(format!(
                "no answer from the gateway within {} s",
                CALL_TIMEOUT.as_secs()
            ))),
        }
    }

    /// [`Connection::call`], sent again when the connection failed under it, up to
    /// [`CALL_ATTEMPTS`] times. Only for requests that are safe to repeat: reads, and actions,
    /// whose idempotency key makes a second copy return the first answer.
    pub async fn call_again(&self, request: Request) -> Result<Response, Status> {
        let mut backoff = reconnect::backoff();
        let mut attempt = 1;
        loop {
            match self.call(request.clone()).await {
                Err(status) if connection_lost(&status) && attempt < CALL_ATTEMPTS => {
                    backoff.wait().await;
                    attempt += 1;
                }
                answer => return answer,
            }
        }
    }

    /// [`Connection::call`], the answer as the response `T` the request is answered with.
    pub async fn ask<T: Answered>(&self, request: Request) -> Result<T, Status> {
        T::from_answer(self.call(request).await?)
    }

    /// [`Connection::call_again`], the answer as the response `T` the request is answered with.
    pub async fn ask_again<T: Answered>(&self, request: Request) -> Result<T, Status> {
        T::from_answer(self.call_again(request).await?)
    }

    /// Follows `game_id` from `from_seq` on (as a spectator with `spectate`), with its status
    /// items, until the game ends or the returned follow is dropped.
    pub fn follow_game(&self, game_id: &str, spectate: bool, from_seq: u64) -> Follow {
        let subject = Subject::Game {
            game_id: game_id.to_string(),
            spectate,
        };
        self.follow(subject, from_seq.max(1))
    }

    /// Follows the player's lobby, its events after `after_seq`, until the returned follow is
    /// dropped.
    pub fn follow_lobby(&self, after_seq: u64) -> Follow {
        self.follow(Subject::Lobby, after_seq)
    }

    fn follow(&self, subject: Subject, from: u64) -> Follow {
        let token = self.follows.fetch_add(1, Ordering::Relaxed) + 1;
        let target = subject.target();
        // Unbounded: the driver must never wait for a reader (a reader waiting for an answer
        // would wait for ever), and one game's events are few.
        let (sink, feed) = mpsc::unbounded_channel();
        // A driver that is gone drops `sink`, which the reader sees as the follow's end.
        let _ = self.commands.send(Command::Follow {
            subject,
            token,
            from,
            sink,
        });
        Follow {
            target,
            token,
            feed,
            commands: self.commands.clone(),
        }
    }
}

/// One follow of the connection: what it delivers, in order. Dropping it stops the follow (the
/// gateway is told `unfollow`, which also ends the player's presence in the game).
pub struct Follow {
    target: Target,
    token: u64,
    feed: mpsc::UnboundedReceiver<Feed>,
    commands: mpsc::UnboundedSender<Command>,
}

impl Follow {
    /// The next item; `None` once the follow has stopped for good.
    pub async fn recv(&mut self) -> Option<Feed> {
        self.feed.recv().await
    }

    /// The next item if one is waiting.
    pub fn try_recv(&mut self) -> Option<Feed> {
        self.feed.try_recv().ok()
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        let _ = self.commands.send(Command::Unfollow {
            target: self.target.clone(),
            token: self.token,
        });
    }
}

/// The status of a request whose connection task has stopped (the client is leaving).
fn closed() -> Status {
    Status::cancelled("the connection to the gateway has closed")
}

/// A response type one kind of request is answered with.
pub trait Answered: Sized {
    /// The response if `response` is one of this type.
    fn pick(response: Response) -> Option<Self>;

    /// The response as this type, or an error naming what came instead.
    fn from_answer(response: Response) -> Result<Self, Status> {
        let kind = format!("{response:?}");
        let kind = kind.split('(').next().unwrap_or_default().to_string();
        Self::pick(response).ok_or_else(|| {
            Status::internal(format!(
                "the gateway answered with another kind of answer ({kind})"
            ))
        })
    }
}

macro_rules! answered {
    ($($variant:ident => $type:ty),* $(,)?) => {
        $(impl Answered for $type {
            fn pick(response: Response) -> Option<Self> {
                match response {
                    Response::$variant(answer) => Some(answer),
                    _ => None,
                }
            }
        })*
    };
}

answered!(
    Action => pb::ActionResult,
    GetGame => pb::PlayerServiceGetGameResponse,
    LegalMoves => pb::LegalMovesResponse,
    ListMyGames => pb::ListMyGamesResponse,
    FindMatch => pb::FindMatchResponse,
    CancelMatch => pb::CancelMatchResponse,
    CreateInvite => pb::PlayerServiceCreateInviteResponse,
    AcceptInvite => pb::PlayerServiceAcceptInviteResponse,
    CancelInvite => pb::PlayerServiceCancelInviteResponse,
    PlayComputer => pb::PlayerServicePlayComputerResponse,
    GetMyRating => pb::GetMyRatingResponse,
    ListTournaments => pb::PlayerServiceListTournamentsResponse,
    JoinTournament => pb::PlayerServiceJoinTournamentResponse,
    WithdrawTournament => pb::PlayerServiceWithdrawTournamentResponse,
    GetTournament => pb::PlayerServiceGetTournamentResponse,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_of_another_kind_is_named_not_taken() {
        let rating = Response::GetMyRating(pb::GetMyRatingResponse::default());
        let status = pb::ActionResult::from_answer(rating).unwrap_err();
        assert_eq!(status.code(), tonic::Code::Internal);
        assert!(status.message().contains("GetMyRating"), "{status}");
        let action = Response::Action(pb::ActionResult {
            version: 7,
            ..Default::default()
        });
        assert_eq!(pb::ActionResult::from_answer(action).unwrap().version, 7);
    }
}
