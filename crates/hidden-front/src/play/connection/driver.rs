//! The task that owns the `Connect` stream: requests out with ids, answers matched back to their
//! callers, each followed game's events and status items and the lobby's events routed to their
//! follow's reader, and the reconnections.
//!
//! Everything happens on this one task, so the connection's state needs no lock and its rules
//! are plain: a request's id is this task's counter; a follow is asked again on every new stream
//! (from what its reader has, or the earlier point a `Goodbye`/`Reconnect` named); an event older
//! than what its reader has is dropped. It never waits for a reader (their channels are
//! unbounded), so a caller waiting for an answer can never hold up the events it is ordered
//! behind.
//!
//! The stream opens when something needs it (a request, a follow) and, after it breaks, again on
//! [`reconnect::backoff`]'s schedule for as long as something follows; with nothing followed, the
//! next request opens it. An outage is told to each follow once ([`Feed::Lost`]) and its end once
//! ([`Feed::Restored`]), when the follow is answered again; a stream that ends after the server's
//! `Goodbye` is not an outage unless connecting again fails.

use super::{Bearer, CALL_TIMEOUT, Feed, Request, Response};
use crate::play::explain;
use crate::play::reconnect::{self, Outage};
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::player_service_client::PlayerServiceClient;
use hidden_front_retry::Backoff;
use std::collections::HashMap;
use std::future::{Future, pending};
use std::pin::Pin;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Code, Status};

/// The player API client the connection opens its streams with.
pub(super) type Client = PlayerServiceClient<InterceptedService<Channel, Bearer>>;

/// Where a request's answer goes.
type Reply = oneshot::Sender<Result<Response, Status>>;

/// An attempt to open the stream.
type Connecting = Pin<Box<dyn Future<Output = Result<Link, Status>> + Send>>;

/// What a handle asks of the driver.
pub(super) enum Command {
    /// Send a request and hand its answer to `reply`.
    Call { request: Request, reply: Reply },
    /// Follow `subject` from `from` (a game's first seq; the lobby's `after_seq`), handing what
    /// comes to `sink`; `token` tells this follow from a later one of the same target.
    Follow {
        subject: Subject,
        token: u64,
        from: u64,
        sink: mpsc::UnboundedSender<Feed>,
    },
    /// Stop the follow of `target` if it is still the one with `token`.
    Unfollow { target: Target, token: u64 },
}

/// What a follow follows.
pub(super) enum Subject {
    /// A game, as its player (or a spectator).
    Game { game_id: String, spectate: bool },
    /// The player's lobby.
    Lobby,
}

impl Subject {
    pub(super) fn target(&self) -> Target {
        match self {
            Subject::Game { game_id, .. } => Target::game(game_id),
            Subject::Lobby => Target::Lobby,
        }
    }
}

/// The key a follow's messages are routed by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Target {
    /// A game, by its id in the server's spelling.
    Game(String),
    Lobby,
}

impl Target {
    /// The game `game_id`, spelled as the server spells it in its messages (a uuid in its
    /// lowercase hyphenated form, whatever form the player typed).
    pub(super) fn game(game_id: &str) -> Target {
        let game_id = game_id.trim();
        Target::Game(
            uuid::Uuid::parse_str(game_id)
                .map(|id| id.to_string())
                .unwrap_or_else(|_| game_id.to_string()),
        )
    }
}

/// One open stream.
struct Link {
    requests: mpsc::UnboundedSender<pb::ConnectRequest>,
    responses: tonic::Streaming<pb::ConnectResponse>,
}

/// A request sent and not yet answered.
enum Pending {
    Call(Reply),
    /// A follow's request, for the follow with this token.
    Follow(Target, u64),
    /// An `unfollow`, whose answer changes nothing.
    Unfollow,
}

/// Where a follow stands on the current stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Not asked on this stream (none is open, or it waits for `retry_at`).
    Idle,
    /// Asked with this request id: answered, or about to be. A refusal under the id stops it.
    Asked(u64),
    /// The game ended: the server stops a follow after the end, and so does the client.
    Over,
}

/// One follow and its reader.
struct Followed {
    subject: Subject,
    token: u64,
    /// For a game, the first seq not yet handed to the reader; for the lobby, the last seq
    /// handed to it. Anything before is dropped, so the reader sees each item once.
    next: u64,
    /// A resume point the server named (`Goodbye`, `Reconnect`) since the follow was asked.
    named: Option<u64>,
    /// What the follow was last asked from, told with [`Feed::Restored`].
    asked_from: u64,
    stage: Stage,
    /// When to ask again after the server stopped only this follow (a `Reconnect`, a refusal
    /// that may pass), while the stream stays open.
    retry_at: Option<Instant>,
    backoff: Backoff,
    outage: Outage,
    sink: mpsc::UnboundedSender<Feed>,
}

impl Followed {
    fn is_over(&self) -> bool {
        self.stage == Stage::Over
    }

    /// Where to follow from: what the reader has, or the point the server named if that is
    /// earlier. The earlier of the two misses nothing, and what it sends again is dropped by seq.
    fn from(&self) -> u64 {
        match self.subject {
            Subject::Game { .. } => self.named.map_or(self.next, |n| n.clamp(1, self.next)),
            Subject::Lobby => self.named.map_or(self.next, |n| n.min(self.next)),
        }
    }

    /// The request that follows from `from`.
    fn request(&self, from: u64) -> Request {
        match &self.subject {
            Subject::Game { game_id, spectate } => Request::Follow(pb::SubscribeRequest {
                game_id: game_id.clone(),
                from_seq: from,
                spectate: *spectate,
                // Presence and clocks come with the events: no view read per event.
                with_status: true,
            }),
            Subject::Lobby => Request::FollowLobby(pb::WatchLobbyRequest { after_seq: from }),
        }
    }

    /// The request that stops it.
    fn unfollow(&self) -> Request {
        Request::Unfollow(match &self.subject {
            Subject::Game { game_id, .. } => pb::UnfollowRequest {
                game_id: game_id.clone(),
                lobby: false,
            },
            Subject::Lobby => pb::UnfollowRequest {
                game_id: String::new(),
                lobby: true,
            },
        })
    }

    /// Tells the reader (gone readers are the handles' business: they unfollow when dropped).
    fn tell(&self, item: Feed) {
        let _ = self.sink.send(item);
    }
}

/// Whether a refusal of `target`'s follow (or of the stream itself) will not change by asking
/// again, so retrying would only hide it.
fn permanent(code: Code, target: Option<&Target>) -> bool {
    match code {
        Code::Unauthenticated
        | Code::PermissionDenied
        | Code::InvalidArgument
        | Code::Unimplemented => true,
        // An unknown game stays unknown; the lobby is never unknown.
        Code::NotFound => !matches!(target, Some(Target::Lobby)),
        _ => false,
    }
}

/// The connection's task.
pub(super) struct Driver {
    client: Client,
    commands: mpsc::UnboundedReceiver<Command>,
    link: Option<Link>,
    connecting: Option<Connecting>,
    /// When to open the stream again (set only while something follows).
    reconnect_at: Option<Instant>,
    backoff: Backoff,
    /// Whether the server said goodbye on the current stream: its end is then no outage.
    said_goodbye: bool,
    last_id: u64,
    pending: HashMap<u64, Pending>,
    /// Requests waiting for the stream being opened.
    queued: Vec<(Request, Reply)>,
    follows: HashMap<Target, Followed>,
}

impl Driver {
    pub(super) fn new(client: Client, commands: mpsc::UnboundedReceiver<Command>) -> Driver {
        Driver {
            client,
            commands,
            link: None,
            connecting: None,
            reconnect_at: None,
            backoff: reconnect::backoff(),
            said_goodbye: false,
            last_id: 0,
            pending: HashMap::new(),
            queued: Vec::new(),
            follows: HashMap::new(),
        }
    }

    /// Runs until every handle is gone.
    pub(super) async fn run(mut self) {
        loop {
            let wake = self.wake();
            tokio::select! {
                command = self.commands.recv() => match command {
                    Some(command) => self.command(command),
                    None => return,
                },
                read = read(&mut self.link) => self.read(read),
                opened = attempt(&mut self.connecting) => {
                    self.connecting = None;
                    self.opened(opened);
                }
                () = sleep_until(wake) => self.timers(),
            }
        }
    }

    fn command(&mut self, command: Command) {
        match command {
            Command::Call { request, reply } => {
                if self.link.is_some() {
                    let id = self.send(request);
                    self.pending.insert(id, Pending::Call(reply));
                } else {
                    self.queued.push((request, reply));
                    self.connect_now();
                }
            }
            Command::Follow {
                subject,
                token,
                from,
                sink,
            } => {
                let target = subject.target();
                if let Some(old) = self.follows.remove(&target) {
                    self.stop(old);
                }
                let followed = Followed {
                    subject,
                    token,
                    next: from,
                    named: None,
                    asked_from: from,
                    stage: Stage::Idle,
                    retry_at: None,
                    backoff: reconnect::backoff(),
                    outage: Outage::default(),
                    sink,
                };
                self.follows.insert(target.clone(), followed);
                if self.link.is_some() {
                    self.ask(&target);
                } else {
                    self.connect_now();
                }
            }
            Command::Unfollow { target, token } => {
                if self.follows.get(&target).is_some_and(|f| f.token == token)
                    && let Some(followed) = self.follows.remove(&target)
                {
                    self.stop(followed);
                }
            }
        }
    }

    /// Tells the server to stop a follow it holds on this stream.
    fn stop(&mut self, followed: Followed) {
        if matches!(followed.stage, Stage::Asked(_)) && self.link.is_some() {
            let id = self.send(followed.unfollow());
            self.pending.insert(id, Pending::Unfollow);
        }
    }

    /// Sends `request` on the open stream with a fresh id, which it answers. A stream that has
    /// just closed drops it; its end, read next, fails whatever waits on it.
    fn send(&mut self, request: Request) -> u64 {
        self.last_id += 1;
        let id = self.last_id;
        if let Some(link) = &self.link {
            let _ = link.requests.send(pb::ConnectRequest {
                request_id: id,
                request: Some(request),
            });
        }
        id
    }

    /// Asks the server for `target`'s follow on the open stream.
    fn ask(&mut self, target: &Target) {
        let Some(followed) = self.follows.get(target) else {
            return;
        };
        if followed.is_over() {
            return;
        }
        let from = followed.from();
        let (request, token) = (followed.request(from), followed.token);
        let id = self.send(request);
        if let Some(followed) = self.follows.get_mut(target) {
            followed.stage = Stage::Asked(id);
            followed.asked_from = from;
            followed.named = None;
            followed.retry_at = None;
        }
        self.pending
            .insert(id, Pending::Follow(target.clone(), token));
    }

    /// Whether anything needs the stream open: a follow, or a request waiting for it.
    fn wants_link(&self) -> bool {
        !self.queued.is_empty() || self.follows.values().any(|f| !f.is_over())
    }

    /// Starts opening the stream unless it is open or being opened.
    fn connect_now(&mut self) {
        if self.link.is_some() || self.connecting.is_some() {
            return;
        }
        self.reconnect_at = None;
        let mut client = self.client.clone();
        let (requests, queue) = mpsc::unbounded_channel();
        self.connecting = Some(Box::pin(async move {
            let opening = client.connect(UnboundedReceiverStream::new(queue));
            match tokio::time::timeout(CALL_TIMEOUT, opening).await {
                Ok(Ok(response)) => Ok(Link {
                    requests,
                    responses: response.into_inner(),
                }),
                Ok(Err(status)) => Err(status),
                Err(_) => Err(Status::unavailable(format!(
                    "the gateway did not open the connection within {} s",
                    CALL_TIMEOUT.as_secs()
                ))),
            }
        }));
    }

    /// The next try on the schedule, while something follows.
    fn schedule_reconnect(&mut self) {
        if self.wants_link() {
            self.reconnect_at = Some(Instant::now() + self.backoff.next_delay());
        }
    }

    /// When the driver must act without a message: the next attempt to connect, or a follow to
    /// ask again on the open stream.
    fn wake(&self) -> Option<Instant> {
        let follows = self
            .link
            .as_ref()
            .and_then(|_| self.follows.values().filter_map(|f| f.retry_at).min());
        match (self.reconnect_at, follows) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn timers(&mut self) {
        let now = Instant::now();
        if self.reconnect_at.is_some_and(|at| at <= now) {
            self.reconnect_at = None;
            if self.wants_link() {
                self.connect_now();
            }
        }
        if self.link.is_some() {
            let due: Vec<Target> = self
                .follows
                .iter()
                .filter(|(_, f)| f.retry_at.is_some_and(|at| at <= now))
                .map(|(target, _)| target.clone())
                .collect();
            for target in due {
                self.ask(&target);
            }
        }
    }

    /// An attempt to open the stream came to `opened`.
    fn opened(&mut self, opened: Result<Link, Status>) {
        match opened {
            Ok(link) => {
                self.link = Some(link);
                self.said_goodbye = false;
                self.backoff.reset();
                for (request, reply) in std::mem::take(&mut self.queued) {
                    let id = self.send(request);
                    self.pending.insert(id, Pending::Call(reply));
                }
                let idle: Vec<Target> = self
                    .follows
                    .iter()
                    .filter(|(_, f)| f.stage == Stage::Idle)
                    .map(|(target, _)| target.clone())
                    .collect();
                for target in idle {
                    self.ask(&target);
                }
            }
            Err(status) => {
                for (_, reply) in self.queued.drain(..) {
                    let _ = reply.send(Err(status.clone()));
                }
                let why = explain(&status);
                if permanent(status.code(), None) {
                    for (_, followed) in self.follows.drain() {
                        followed.tell(Feed::Fatal(why.clone()));
                    }
                    return;
                }
                for followed in self.follows.values_mut() {
                    if !followed.is_over() && followed.outage.lost() {
                        followed.tell(Feed::Lost(why.clone()));
                    }
                }
                self.schedule_reconnect();
            }
        }
    }

    /// One read of the stream came to `read`.
    fn read(&mut self, read: Result<Option<pb::ConnectResponse>, Status>) {
        match read {
            Ok(Some(response)) => match response.decode_messages() {
                Ok(messages) => {
                    for message in messages {
                        self.message(message);
                    }
                }
                Err(e) => self.broke(&Status::internal(format!(
                    "the gateway sent a message this client cannot read ({e})"
                ))),
            },
            Ok(None) => self.broke(&Status::unavailable("the gateway closed the connection")),
            Err(status) => self.broke(&status),
        }
    }

    /// The stream is gone: requests waiting on it fail (a caller may send them again), every
    /// follow waits for the next stream, which the schedule opens.
    fn broke(&mut self, status: &Status) {
        self.link = None;
        let failed = Status::unavailable(format!(
            "the connection to the gateway was lost before the answer ({})",
            status.message()
        ));
        for (_, pending) in self.pending.drain() {
            if let Pending::Call(reply) = pending {
                let _ = reply.send(Err(failed.clone()));
            }
        }
        let expected = std::mem::take(&mut self.said_goodbye);
        let why = explain(status);
        for followed in self.follows.values_mut() {
            if followed.is_over() {
                continue;
            }
            followed.stage = Stage::Idle;
            followed.retry_at = None;
            if !expected && followed.outage.lost() {
                followed.tell(Feed::Lost(why.clone()));
            }
        }
        self.schedule_reconnect();
    }

    fn message(&mut self, message: pb::ServerMessage) {
        use pb::server_message::Item;
        match message.item {
            Some(Item::Answer(answer)) => {
                let response = answer
                    .response
                    .ok_or_else(|| Status::internal("the gateway answered without a response"));
                self.answered(answer.request_id, response);
            }
            Some(Item::Refusal(refusal)) => {
                let status = Status::with_details(
                    Code::from(refusal.code),
                    refusal.message,
                    tonic::codegen::Bytes::from(refusal.details),
                );
                // Id 0: a message the server could not read far enough to find its id, which
                // this client never sends.
                if refusal.request_id != 0 {
                    self.answered(refusal.request_id, Err(status));
                }
            }
            Some(Item::Event(event)) => {
                let Some(followed) = self.follows.get_mut(&Target::game(&event.game_id)) else {
                    return;
                };
                if followed.is_over() || event.seq < followed.next {
                    return; // passed on already, before a resume
                }
                followed.next = event.seq.saturating_add(1);
                if matches!(event.event, Some(pb::game_event::Event::Ended(_))) {
                    followed.stage = Stage::Over;
                }
                followed.tell(Feed::Event(event));
            }
            Some(Item::Status(update)) => {
                if let Some(followed) = self.follows.get(&Target::game(&update.game_id))
                    && let Some(status) = update.status
                {
                    followed.tell(Feed::Status(status));
                }
            }
            Some(Item::Lobby(event)) => {
                let Some(followed) = self.follows.get_mut(&Target::Lobby) else {
                    return;
                };
                if event.seq <= followed.next {
                    return;
                }
                followed.next = event.seq;
                followed.tell(Feed::Lobby(event));
            }
            Some(Item::Reconnect(hint)) => {
                // The server stopped this one follow (it fell behind, or its upstream broke):
                // follow it again, on the schedule, from where it says or earlier.
                let Some(followed) = self.follows.get_mut(&Target::game(&hint.game_id)) else {
                    return;
                };
                if followed.is_over() {
                    return;
                }
                followed.named = Some(hint.resume_from_seq);
                followed.stage = Stage::Idle;
                followed.retry_at = Some(Instant::now() + followed.backoff.next_delay());
            }
            Some(Item::Goodbye(goodbye)) => {
                // The stream ends next; every follow is asked again on the next one.
                self.said_goodbye = true;
                for hint in goodbye.games {
                    if let Some(followed) = self.follows.get_mut(&Target::game(&hint.game_id)) {
                        followed.named = Some(hint.resume_from_seq);
                    }
                }
                if let (Some(after), Some(lobby)) = (
                    goodbye.lobby_after_seq,
                    self.follows.get_mut(&Target::Lobby),
                ) {
                    lobby.named = Some(after);
                }
            }
            None => {} // a message this client does not know
        }
    }

    /// The answer (or refusal) of request `id`.
    fn answered(&mut self, id: u64, answer: Result<Response, Status>) {
        match self.pending.remove(&id) {
            Some(Pending::Call(reply)) => {
                let _ = reply.send(answer);
            }
            Some(Pending::Follow(target, token)) => match answer {
                Ok(_) => self.following(&target, token),
                Err(status) => self.follow_refused(&target, token, &status),
            },
            Some(Pending::Unfollow) => {}
            None => {
                // A follow that stopped after it began is refused under its request's id.
                let Err(status) = answer else { return };
                let stopped = self
                    .follows
                    .iter()
                    .find(|(_, f)| f.stage == Stage::Asked(id))
                    .map(|(target, f)| (target.clone(), f.token));
                if let Some((target, token)) = stopped {
                    self.follow_refused(&target, token, &status);
                }
            }
        }
    }

    /// The server took `target`'s follow: it works again.
    fn following(&mut self, target: &Target, token: u64) {
        let Some(followed) = self.follows.get_mut(target).filter(|f| f.token == token) else {
            return;
        };
        followed.backoff.reset();
        if followed.outage.restored() {
            followed.tell(Feed::Restored(followed.asked_from));
        }
    }

    /// The server refused `target`'s follow, or stopped it: for good, or to be asked again on
    /// the schedule.
    fn follow_refused(&mut self, target: &Target, token: u64, status: &Status) {
        if self.follows.get(target).is_none_or(|f| f.token != token) {
            return;
        }
        if permanent(status.code(), Some(target)) {
            if let Some(followed) = self.follows.remove(target) {
                followed.tell(Feed::Fatal(explain(status)));
            }
            return;
        }
        if let Some(followed) = self.follows.get_mut(target) {
            followed.stage = Stage::Idle;
            if followed.outage.lost() {
                followed.tell(Feed::Lost(explain(status)));
            }
            followed.retry_at = Some(Instant::now() + followed.backoff.next_delay());
        }
    }
}

/// The next response of the open stream; never, while none is open.
async fn read(link: &mut Option<Link>) -> Result<Option<pb::ConnectResponse>, Status> {
    match link {
        Some(link) => link.responses.message().await,
        None => pending().await,
    }
}

/// The attempt to open the stream; never, while none is under way.
async fn attempt(connecting: &mut Option<Connecting>) -> Result<Link, Status> {
    match connecting {
        Some(connecting) => connecting.await,
        None => pending().await,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn followed(subject: Subject, next: u64, named: Option<u64>) -> Followed {
        Followed {
            subject,
            token: 1,
            next,
            named,
            asked_from: next,
            stage: Stage::Idle,
            retry_at: None,
            backoff: reconnect::backoff(),
            outage: Outage::default(),
            sink: mpsc::unbounded_channel().0,
        }
    }

    fn game() -> Subject {
        Subject::Game {
            game_id: "g".into(),
            spectate: false,
        }
    }

    #[test]
    fn a_follow_resumes_from_the_earlier_of_its_own_point_and_the_named_one() {
        assert_eq!(followed(game(), 7, None).from(), 7);
        assert_eq!(followed(game(), 7, Some(5)).from(), 5, "nothing missed");
        assert_eq!(
            followed(game(), 7, Some(9)).from(),
            7,
            "events the reader never had are asked for"
        );
        assert_eq!(followed(game(), 7, Some(0)).from(), 1);
        assert_eq!(followed(Subject::Lobby, 4, Some(2)).from(), 2);
        assert_eq!(followed(Subject::Lobby, 4, Some(6)).from(), 4);
    }

    #[test]
    fn games_are_routed_by_the_servers_spelling_of_their_id() {
        let id = "0190A4B2-7C3D-8E4F-9A1B-2C3D4E5F6A7B";
        assert_eq!(Target::game(id), Target::game(&id.to_lowercase()));
        assert_eq!(
            Target::game(&format!(" {id} ")),
            Target::Game(id.to_lowercase())
        );
        assert_eq!(Target::game("g1"), Target::Game("g1".into()));
    }

    #[test]
    fn only_refusals_that_asking_again_cannot_change_are_final() {
        let game = Target::game("g");
        assert!(permanent(Code::NotFound, Some(&game)));
        assert!(!permanent(Code::NotFound, Some(&Target::Lobby)));
        assert!(permanent(Code::Unauthenticated, None));
        assert!(!permanent(Code::Unavailable, Some(&game)));
        assert!(!permanent(Code::ResourceExhausted, Some(&game)));
    }
}
