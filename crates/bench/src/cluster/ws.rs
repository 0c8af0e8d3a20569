//! A seat that plays over one `Connect` WebSocket of its own through the ingress's HTTP port, as
//! the web page plays (docs/connect.md): it follows its game on the connection, and sends its
//! calls there too, each answered by its request id between the game's events.
//!
//! A real app's rules, as for the gRPC seats: every call has the same deadline and is retried by
//! the caller with the same idempotency key; a connection that closes, errs, says goodbye, is
//! told to follow again, or stays silent too long is opened again and the game followed from the
//! last event the seat took. What happens on the way is recorded under the same names as the
//! gRPC seats' (`errors.csv`, `streams.csv`), with the codes a gRPC client would see: a
//! connection that cannot be made or breaks is `UNAVAILABLE` without the service's reason, a call
//! unanswered in time `DEADLINE_EXCEEDED`, and the service's refusals keep their code, reason and
//! details.

use super::{CALL_DEADLINE, Delivered, Retry, Run, STREAM_SILENCE};
use crate::pb;
use crate::pb::connect_request::Request;
use crate::pb::server_message::Item;
use crate::play::link::Link;
use crate::rng::SeatRng;
use std::collections::VecDeque;
use std::net::SocketAddr;
use tokio::time::Instant;
use tonic::{Code, Status};

/// One seat's `Connect` WebSocket and what it has received of its game.
pub(super) struct WsSeat {
    /// The ingress's HTTP address.
    http: SocketAddr,
    token: String,
    game_id: String,
    role: &'static str,
    /// The open connection following the game, if any.
    link: Option<Link>,
    /// The last request id used on this seat's connections.
    request_id: u64,
    /// Events received (while a call waited for its answer) and not yet taken.
    events: VecDeque<pb::GameEvent>,
    /// When the connection was lost (for the time without one).
    lost_at: Option<Instant>,
}

/// A failure of the connection itself, as a gRPC client would see its transport fail: retriable,
/// without the service's reason.
fn broken(what: &str) -> Status {
    Status::unavailable(format!("websocket: {what}"))
}

impl WsSeat {
    /// A seat of `game_id` that will connect to `http` as the player of `token`.
    pub(super) fn new(
        http: SocketAddr,
        token: String,
        game_id: String,
        role: &'static str,
    ) -> Self {
        WsSeat {
            http,
            token,
            game_id,
            role,
            link: None,
            request_id: 0,
            events: VecDeque::new(),
            lost_at: None,
        }
    }

    /// Drops the connection (and what it buffered): the next call or event opens another and
    /// follows the game again from the seat's next seq.
    pub(super) fn drop_stream(&mut self, run: &Run, cause: &str) {
        self.link = None;
        self.events.clear();
        self.lost_at.get_or_insert_with(Instant::now);
        *run.summary
            .lock()
            .reopened
            .entry(cause.to_string())
            .or_default() += 1;
    }

    /// Connects (when not connected) and follows the game from `next_seq`, within the call
    /// deadline.
    async fn connected(&mut self, run: &Run, next_seq: u64) -> Result<(), Status> {
        if self.link.is_some() {
            return Ok(());
        }
        let opened = tokio::time::timeout(CALL_DEADLINE, async {
            let mut link = Link::websocket(self.http, &self.token)
                .await
                .map_err(|e| broken(&format!("connect: {}", e.0)))?;
            self.request_id += 1;
            let id = self.request_id;
            let follow = pb::SubscribeRequest {
                game_id: self.game_id.clone(),
                from_seq: next_seq,
                spectate: false,
                with_status: false,
            };
            link.send(pb::ConnectRequest {
                request_id: id,
                request: Some(Request::Follow(follow)),
            })
            .await
            .map_err(|e| broken(&format!("send: {}", e.0)))?;
            // Answered `followed` before the game's first event; the events that came with the
            // answer are the game's first ones.
            loop {
                let batch = link
                    .receive()
                    .await
                    .map_err(|e| broken(&format!("receive: {}", e.0)))?
                    .ok_or_else(|| broken("closed before the follow was answered"))?;
                let mut followed = false;
                let mut events = Vec::new();
                for message in batch {
                    match message.item {
                        Some(Item::Answer(answer)) if answer.request_id == id => followed = true,
                        Some(Item::Refusal(refusal)) if refusal.request_id == id => {
                            return Err(refused(refusal));
                        }
                        Some(Item::Event(event)) if followed && event.game_id == self.game_id => {
                            events.push(event);
                        }
                        Some(Item::Goodbye(bye)) => {
                            return Err(broken(&format!("goodbye {}", bye.reason)));
                        }
                        _ => {}
                    }
                }
                if followed {
                    return Ok((link, events));
                }
            }
        })
        .await;
        let (link, events) = match opened {
            Ok(Ok(opened)) => opened,
            Ok(Err(status)) => return Err(status),
            Err(_) => {
                return Err(Status::deadline_exceeded(
                    "websocket: not connected and following within the call deadline",
                ));
            }
        };
        self.link = Some(link);
        self.events = events.into();
        if let Some(lost) = self.lost_at.take() {
            let without = u64::try_from(lost.elapsed().as_millis()).unwrap_or(0);
            run.stream_note(&self.game_id, self.role, "resumed", next_seq, without);
        }
        Ok(())
    }

    /// Sends `request` and waits for its answer (keeping the game's events that come first),
    /// within the call deadline. A connection that breaks or is told to go is dropped: the
    /// caller retries with the same key, on a new one.
    async fn call(
        &mut self,
        run: &Run,
        next_seq: u64,
        request: Request,
    ) -> Result<pb::answer::Response, Status> {
        self.connected(run, next_seq).await?;
        self.request_id += 1;
        let id = self.request_id;
        let answered = tokio::time::timeout(CALL_DEADLINE, async {
            let link = self
                .link
                .as_mut()
                .ok_or_else(|| (broken("not connected"), "error"))?;
            link.send(pb::ConnectRequest {
                request_id: id,
                request: Some(request),
            })
            .await
            .map_err(|e| (broken(&format!("send: {}", e.0)), "error"))?;
            loop {
                let batch = link
                    .receive()
                    .await
                    .map_err(|e| (broken(&format!("receive: {}", e.0)), "error"))?
                    .ok_or((broken("closed"), "ended"))?;
                let mut answer = None;
                for message in batch {
                    match message.item {
                        Some(Item::Answer(a)) if a.request_id == id => {
                            answer = Some(a.response.ok_or_else(|| {
                                (hidden_front_api_error::internal("an empty answer"), "")
                            }));
                        }
                        Some(Item::Refusal(refusal)) if refusal.request_id == id => {
                            answer = Some(Err((refused(refusal), "")));
                        }
                        Some(Item::Event(event)) if event.game_id == self.game_id => {
                            self.events.push_back(event);
                        }
                        Some(Item::Reconnect(_)) => {
                            return Err((broken("told to follow again"), "reconnect_hint"));
                        }
                        Some(Item::Goodbye(bye)) => {
                            return Err((
                                broken(&format!("goodbye {}", bye.reason)),
                                "reconnect_hint",
                            ));
                        }
                        _ => {}
                    }
                }
                if let Some(answer) = answer {
                    return answer;
                }
            }
        })
        .await;
        match answered {
            Ok(Ok(response)) => Ok(response),
            // The service's answer: the connection is fine.
            Ok(Err((status, ""))) => Err(status),
            Ok(Err((status, cause))) => {
                self.drop_stream(run, cause);
                Err(status)
            }
            Err(_) => {
                // Unanswered: the connection may be dead without knowing. A new one for the retry.
                self.drop_stream(run, "error");
                Err(Status::deadline_exceeded(
                    "websocket: no answer within the call deadline",
                ))
            }
        }
    }

    /// An action (confirm, play, concede): its result.
    pub(super) async fn action(
        &mut self,
        run: &Run,
        next_seq: u64,
        request: Request,
    ) -> Result<pb::ActionResult, Status> {
        match self.call(run, next_seq, request).await? {
            pb::answer::Response::Action(result) => Ok(result),
            other => Err(unexpected(&other)),
        }
    }

    /// `LegalMoves`.
    pub(super) async fn legal_moves(
        &mut self,
        run: &Run,
        next_seq: u64,
        request: pb::LegalMovesRequest,
    ) -> Result<pb::LegalMovesResponse, Status> {
        match self
            .call(run, next_seq, Request::LegalMoves(request))
            .await?
        {
            pb::answer::Response::LegalMoves(moves) => Ok(moves),
            other => Err(unexpected(&other)),
        }
    }

    /// The next event at or after `next_seq`, connecting again as often as needed.
    pub(super) async fn next(&mut self, run: &Run, rng: &mut SeatRng, next_seq: u64) -> Delivered {
        loop {
            if let Some(event) = self.events.pop_front() {
                return Delivered::Event(Box::new(event));
            }
            if self.link.is_none() {
                let mut retry = Retry::new(run, "Follow");
                while let Err(status) = self.connected(run, next_seq).await {
                    if retry.failed(status, rng).await.is_err() {
                        return Delivered::Broken;
                    }
                }
                // The follow's answer may have brought events (the gateway's hub held them):
                // those first. Waiting on the socket instead left a seat whose turn had come
                // with its opponent's move in the buffer, quiet until the silence ran out.
                continue;
            }
            let Some(link) = self.link.as_mut() else {
                continue;
            };
            let cause = match tokio::time::timeout(STREAM_SILENCE, link.receive()).await {
                Err(_) => return Delivered::Silent,
                Ok(Ok(Some(batch))) => {
                    let mut cause = None;
                    for message in batch {
                        match message.item {
                            Some(Item::Event(event)) if event.game_id == self.game_id => {
                                self.events.push_back(event);
                            }
                            Some(Item::Reconnect(_)) | Some(Item::Goodbye(_)) => {
                                cause = Some("reconnect_hint");
                            }
                            _ => {}
                        }
                    }
                    match cause {
                        // Followed again from the seat's next seq: what came with the hint too.
                        Some(cause) => cause,
                        None => continue,
                    }
                }
                Ok(Ok(None)) => "ended",
                Ok(Err(e)) => {
                    run.error("Follow", &broken(&format!("receive: {}", e.0)));
                    "error"
                }
            };
            self.drop_stream(run, cause);
        }
    }
}

/// A refusal as the status the unary method would have answered: the same code, message and
/// details (so its reason reads the same).
fn refused(refusal: pb::Refusal) -> Status {
    Status::with_details(
        Code::from_i32(refusal.code),
        refusal.message,
        refusal.details.into(),
    )
}

/// An answer of another kind than the request's: the server broke the protocol.
fn unexpected(response: &pb::answer::Response) -> Status {
    hidden_front_api_error::internal(format!("an answer of the wrong kind: {response:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connections::Pool;
    use futures_util::{SinkExt, StreamExt};
    use parking_lot::Mutex;
    use prost::Message as _;
    use std::collections::BTreeMap;
    use std::sync::atomic::AtomicU64;
    use std::time::Duration;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::handshake::server::{
        Callback, ErrorResponse, Request as Upgrade, Response,
    };
    use tokio_util::sync::CancellationToken;

    const GAME: &str = "01a24f8e-6e05-723c-8914-739bda5c5293";

    fn run(out_dir: std::path::PathBuf) -> Run {
        let config = super::super::ClusterConfig {
            ingress: "127.0.0.1:1".parse().expect("an address"),
            ws_ingress: None,
            ws_percent: 100,
            ws_from_file: None,
            connections: 1,
            games: 1,
            spectate_percent: 0,
            think: Duration::ZERO,
            plies: (10, 10),
            stop_file: out_dir.join("stop"),
            max_duration: Duration::from_secs(60),
            finish_timeout: Duration::from_secs(60),
            out_dir: out_dir.clone(),
            jwt_secret: "secret".into(),
            seed: 1,
            time_control: "online".into(),
            stall_percent: 0,
        };
        Run {
            config,
            pool: Pool::none(),
            run_id: "test".into(),
            stop: CancellationToken::new(),
            games_seq: AtomicU64::new(0),
            out: Mutex::new(super::super::Outputs::create(&out_dir).expect("outputs")),
            summary: Mutex::new(super::super::ClusterSummary::default()),
            open_games: Mutex::new(BTreeMap::new()),
        }
    }

    /// Accepts the `Connect` subprotocol on the upgrade, as the gateway does.
    struct ConnectProtocol;

    impl Callback for ConnectProtocol {
        fn on_request(
            self,
            _: &Upgrade,
            mut response: Response,
        ) -> Result<Response, ErrorResponse> {
            response.headers_mut().insert(
                "sec-websocket-protocol",
                "hiddenfront.connect.v1".parse().expect("a header value"),
            );
            Ok(response)
        }
    }

    /// A gateway that answers the first `follow` with its answer and the game's event `seq` in
    /// one response (its hub held the event already), then says nothing more.
    async fn gateway_answering_with_an_event(seq: u64) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let addr = listener.local_addr().expect("its address");
        tokio::spawn(async move {
            let (stream, _) = listener.accept().await.expect("a connection");
            let mut socket = tokio_tungstenite::accept_hdr_async(stream, ConnectProtocol)
                .await
                .expect("an upgrade");
            let Some(Ok(Message::Binary(bytes))) = socket.next().await else {
                panic!("no follow request");
            };
            let request = pb::ConnectRequest::decode(bytes).expect("a ConnectRequest");
            assert!(matches!(request.request, Some(Request::Follow(_))));
            let answer = pb::ServerMessage {
                item: Some(Item::Answer(pb::Answer {
                    request_id: request.request_id,
                    response: Some(pb::answer::Response::Followed(pb::Followed {
                        game_id: GAME.into(),
                    })),
                })),
            };
            let event = pb::ServerMessage {
                item: Some(Item::Event(pb::GameEvent {
                    game_id: GAME.into(),
                    seq,
                    ..pb::GameEvent::default()
                })),
            };
            let response = pb::ConnectResponse::of(&[answer, event]);
            socket
                .send(Message::Binary(response.encode_to_vec().into()))
                .await
                .expect("sent");
            // Quiet from here on, the connection kept open.
            while socket.next().await.is_some() {}
        });
        addr
    }

    /// The events that come with a follow's answer are the seat's next events: a seat that
    /// waited on the socket instead sat on its opponent's move until the silence ran out (10 s,
    /// then a reconnect), which cost WebSocket seats a third of their move clock after each
    /// gateway loss and once let a clock run out in the cluster test.
    #[tokio::test]
    async fn events_that_come_with_the_follow_answer_are_delivered_first() {
        let dir = std::env::temp_dir().join(format!("hf-ws-seat-{}", std::process::id()));
        let run = run(dir.clone());
        let addr = gateway_answering_with_an_event(23).await;
        let mut seat = WsSeat::new(addr, "token".into(), GAME.into(), "north");
        let mut rng = SeatRng::new(1);
        let delivered = seat.next(&run, &mut rng, 23).await;
        let _ = std::fs::remove_dir_all(&dir);
        match delivered {
            Delivered::Event(event) => assert_eq!(event.seq, 23),
            Delivered::Silent => panic!("the event that came with the answer was not delivered"),
            Delivered::Broken => panic!("the follow failed"),
        }
    }
}
