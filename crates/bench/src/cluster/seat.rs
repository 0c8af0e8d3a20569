//! One seat of one game of `bench cluster`: it confirms the drawn deployment, plays random legal
//! moves with a think time, lets its move clock run out once when told to, and concedes once the
//! game is long enough or the run winds down. It reaches the service one of two ways
//! ([`SeatWay`]): the player gRPC API through the ingress's gRPC port (unary calls on the shared
//! HTTP/2 pool and a `Subscribe` stream), or one `Connect` WebSocket of its own through the
//! ingress's HTTP port ([`WsSeat`]), as the web page plays. The same keys, retries and records
//! either way.

use super::ws::WsSeat;
use super::{Delivered, Follower, Retry, Run, end_reason, in_order, request, unix_ms, with_retry};
use crate::pb;
use crate::pb::game_event::Event;
use crate::pb::player_service_client::PlayerServiceClient;
use crate::rng::SeatRng;
use pb::connect_request::Request;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tonic::transport::Channel;
use tonic::{Code, Status};

/// How long a seat letting its clock run out waits for its `TimedOut` before it records the
/// timer as not fired and moves: the `online` move clock (30 s) plus the clock's lease and
/// retries, with room.
const STALL_GIVE_UP: Duration = Duration::from_secs(75);

/// How a seat reaches the service.
pub(super) enum SeatWay {
    /// Unary calls on the shared HTTP/2 pool, and a `Subscribe` stream.
    Grpc {
        client: PlayerServiceClient<Channel>,
        follower: Box<Follower>,
    },
    /// One `Connect` WebSocket of its own: calls and the game's events on it.
    Ws(WsSeat),
}

/// The role a seat's records name it by.
pub(super) fn role(side: pb::Side) -> &'static str {
    if side == pb::Side::South {
        "south"
    } else {
        "north"
    }
}

/// One seat of one game.
pub(super) struct Seat {
    pub(super) run: Arc<Run>,
    pub(super) game_id: String,
    pub(super) side: pb::Side,
    pub(super) token: String,
    pub(super) rng: SeatRng,
    pub(super) keys: u64,
    pub(super) next_seq: u64,
    /// Concede once the game has this many events.
    pub(super) cap: u64,
    /// Let the move clock run out once, at the first turn from this version on.
    pub(super) stall_from: Option<u64>,
    pub(super) way: SeatWay,
    /// `grpc` or `websocket`, as the records name it.
    pub(super) transport: &'static str,
}

/// What a turn did.
enum Turn {
    /// A move (or a concession) was acknowledged; `Some` with the end reason if it ended the game.
    Done(Option<String>),
    /// Not this seat's turn after all.
    NotMine,
    /// Retries ran out.
    Failed,
}

impl Seat {
    fn key(&mut self, what: &str) -> String {
        self.keys += 1;
        format!("{}-{:?}-{what}-{}", self.game_id, self.side, self.keys)
    }

    fn context(&self, key: &str, expected_version: Option<u64>) -> Option<pb::ActionContext> {
        Some(pb::ActionContext {
            game_id: self.game_id.clone(),
            idempotency_key: key.to_string(),
            expected_version,
        })
    }

    /// Plays the seat to the game's end. Returns the end reason, `None` if it gave up.
    pub(super) async fn run(mut self) -> Option<String> {
        let run = Arc::clone(&self.run);
        let role = role(self.side);
        // Confirm the deployment the server drew (one key, retried as is).
        let key = self.key("confirm");
        let confirmed = self.confirm(&key).await;
        let confirmed = confirmed.map(|(version, _)| version);
        run.command_note(&self.game_id, self.side, &key, &confirmed);
        if confirmed.is_err() {
            return None;
        }
        let mut my_turn = false;
        // Since when this seat has been letting its clock run out, and at which version.
        let mut stalled: Option<(Instant, u64, u64)> = None;
        // A stall given up at the wind-down: its timer may still fire before the concession.
        let mut withdrawn: Option<(Instant, u64, u64)> = None;
        loop {
            if my_turn
                && stalled.is_none()
                && !run.stopping()
                && self.stall_from.is_some_and(|from| self.next_seq > from)
            {
                self.stall_from = None;
                stalled = Some((Instant::now(), unix_ms(), self.next_seq - 1));
                my_turn = false;
            }
            if let Some((since, at_ms, version)) = stalled {
                // Waited far past the move clock and the clock service's retries: not fired.
                if since.elapsed() > STALL_GIVE_UP {
                    self.stall_note(at_ms, version, "not_fired", since);
                    stalled = None;
                    my_turn = true;
                }
            }
            if my_turn && stalled.is_none() {
                let think = self.run.config.think;
                if !think.is_zero() {
                    let ms = u64::try_from(think.as_millis()).unwrap_or(0);
                    let jitter = self.rng.below(usize::try_from(ms).unwrap_or(0) + 1) as u64;
                    tokio::time::sleep(Duration::from_millis(ms / 2 + jitter)).await;
                }
                match self.turn().await {
                    Turn::Done(Some(reason)) => return Some(reason),
                    Turn::Done(None) | Turn::NotMine => my_turn = false,
                    Turn::Failed => return None,
                }
            }
            let mut rng = self.rng.clone();
            let delivered = match stalled {
                // Letting the clock run out: until the timer fires, or the run winds down
                // (then the seat concedes now rather than wait out its clock).
                Some((since, at_ms, version)) => {
                    let delivered = tokio::select! {
                        delivered = self.way.next(&run, &mut rng, self.next_seq) => Some(delivered),
                        () = run.stop.cancelled() => None,
                    };
                    match delivered {
                        Some(delivered) => delivered,
                        None => {
                            self.rng = rng;
                            self.stall_note(at_ms, version, "withdrawn", since);
                            withdrawn = stalled.take();
                            my_turn = true;
                            continue;
                        }
                    }
                }
                None => self.way.next(&run, &mut rng, self.next_seq).await,
            };
            self.rng = rng;
            match delivered {
                Delivered::Event(event) => {
                    if !in_order(&run, &self.game_id, role, &event, &mut self.next_seq) {
                        continue;
                    }
                    if let Some(reason) = end_reason(&event) {
                        return Some(reason);
                    }
                    match &event.event {
                        Some(Event::PlayStarted(_)) => my_turn = self.is_my_turn().await,
                        Some(Event::Moved(moved)) => my_turn = moved.side != self.side as i32,
                        Some(Event::TimedOut(out)) => {
                            my_turn = out.side != self.side as i32;
                            if out.side == self.side as i32 {
                                match stalled.take().or_else(|| withdrawn.take()) {
                                    Some((since, at_ms, version)) => {
                                        self.stall_note(at_ms, version, "fired", since);
                                    }
                                    None => self.stall_note(
                                        unix_ms(),
                                        event.seq,
                                        "unasked",
                                        Instant::now(),
                                    ),
                                }
                            }
                        }
                        _ => {}
                    }
                }
                Delivered::Silent => {
                    // Quiet for long while waiting: either the opponent is stuck, or this
                    // stream is dead without knowing. Ask, and reopen it to be sure. (A seat
                    // letting its clock run out expects the quiet.)
                    self.way.drop_stream(&run, "silent");
                    if stalled.is_none() {
                        my_turn = self.is_my_turn().await;
                    }
                }
                Delivered::Broken => return None,
            }
        }
    }

    fn stall_note(&self, at_ms: u64, version: u64, outcome: &str, since: Instant) {
        let waited = u64::try_from(since.elapsed().as_millis()).unwrap_or(0);
        let side = role(self.side);
        let mut out = self.run.out.lock();
        let _ = writeln!(
            out.stalls,
            "{at_ms},{},{side},{version},{outcome},{waited}",
            self.game_id
        );
    }

    /// Whether the game's current version has moves for this seat.
    async fn is_my_turn(&mut self) -> bool {
        let mut rng = self.rng.clone();
        let legal = self.legal_moves(&mut rng).await;
        self.rng = rng;
        legal.is_ok_and(|(legal, _)| !legal.moves.is_empty())
    }

    /// Confirms the drawn deployment with `key`, retried as it is: the version it answered and
    /// the attempts it took.
    async fn confirm(&mut self, key: &str) -> Result<(u64, u32), Status> {
        let mut rng = self.rng.clone();
        let context = self.context(key, None);
        let (run, token, next_seq) = (&self.run, &self.token, self.next_seq);
        let confirmed = match &mut self.way {
            SeatWay::Grpc { client, .. } => {
                with_retry(run, &mut rng, "Confirm", || {
                    let mut client = client.clone();
                    let req = request(
                        token,
                        pb::ConfirmRequest {
                            context: context.clone(),
                        },
                    );
                    async move {
                        client
                            .confirm(req)
                            .await
                            .map(|a| a.into_inner().result.unwrap_or_default().version)
                    }
                })
                .await
            }
            SeatWay::Ws(ws) => {
                let mut retry = Retry::new(run, "Confirm");
                loop {
                    let confirm = Request::Confirm(pb::ConfirmRequest {
                        context: context.clone(),
                    });
                    match ws.action(run, next_seq, confirm).await {
                        Ok(result) => break Ok((result.version, retry.attempt)),
                        Err(status) => {
                            if let Err(status) = retry.failed(status, &mut rng).await {
                                break Err(status);
                            }
                        }
                    }
                }
            }
        };
        self.rng = rng;
        confirmed
    }

    /// The seat's legal moves at the version of the last event it saw or later, retried.
    async fn legal_moves(
        &mut self,
        rng: &mut SeatRng,
    ) -> Result<(pb::LegalMovesResponse, u32), Status> {
        let min_version = self.next_seq.saturating_sub(1);
        let (run, token, next_seq) = (&self.run, &self.token, self.next_seq);
        let asked = || pb::LegalMovesRequest {
            game_id: self.game_id.clone(),
            min_version: Some(min_version),
        };
        match &mut self.way {
            SeatWay::Grpc { client, .. } => {
                with_retry(run, rng, "LegalMoves", || {
                    let mut client = client.clone();
                    let req = request(token, asked());
                    async move {
                        client
                            .legal_moves(req)
                            .await
                            .map(tonic::Response::into_inner)
                    }
                })
                .await
            }
            SeatWay::Ws(ws) => {
                let mut retry = Retry::new(run, "LegalMoves");
                loop {
                    match ws.legal_moves(run, next_seq, asked()).await {
                        Ok(moves) => return Ok((moves, retry.attempt)),
                        Err(status) => retry.failed(status, rng).await?,
                    }
                }
            }
        }
    }

    /// Plays `chosen` (or concedes) with `context`, retried as it is; `last_sent` is when the
    /// last attempt went out. The answer and the attempts it took.
    async fn act(
        &mut self,
        rng: &mut SeatRng,
        concede: bool,
        context: Option<pb::ActionContext>,
        chosen: pb::Move,
        last_sent: &mut u64,
    ) -> Result<(pb::ActionResult, u32), Status> {
        let (run, token, next_seq) = (&self.run, &self.token, self.next_seq);
        let rpc = if concede { "Concede" } else { "Play" };
        match &mut self.way {
            SeatWay::Grpc { client, .. } => {
                with_retry(run, rng, rpc, || {
                    let mut client = client.clone();
                    let context = context.clone();
                    let chosen = chosen.clone();
                    let token = token.clone();
                    *last_sent = unix_ms();
                    async move {
                        let result = if concede {
                            let req = request(&token, pb::ConcedeRequest { context });
                            client.concede(req).await.map(|a| a.into_inner().result)
                        } else {
                            let req = request(
                                &token,
                                pb::PlayRequest {
                                    context,
                                    r#move: Some(chosen),
                                },
                            );
                            client.play(req).await.map(|a| a.into_inner().result)
                        };
                        result.map(Option::unwrap_or_default)
                    }
                })
                .await
            }
            SeatWay::Ws(ws) => {
                let mut retry = Retry::new(run, rpc);
                loop {
                    *last_sent = unix_ms();
                    let context = context.clone();
                    let request = if concede {
                        Request::Concede(pb::ConcedeRequest { context })
                    } else {
                        Request::Play(pb::PlayRequest {
                            context,
                            r#move: Some(chosen.clone()),
                        })
                    };
                    match ws.action(run, next_seq, request).await {
                        Ok(result) => return Ok((result, retry.attempt)),
                        Err(status) => retry.failed(status, rng).await?,
                    }
                }
            }
        }
    }

    /// One turn: a random legal move, or a concession once the game is long enough or the run
    /// winds down. The same key is retried until acknowledged; a refusal because the game moved
    /// on asks for the legal moves again.
    async fn turn(&mut self) -> Turn {
        let run = Arc::clone(&self.run);
        let first_sent = unix_ms();
        for _ in 0..5 {
            let mut rng = self.rng.clone();
            let legal = self.legal_moves(&mut rng).await;
            let Ok((legal, _)) = legal else {
                self.rng = rng;
                return Turn::Failed;
            };
            if legal.moves.is_empty() {
                self.rng = rng;
                return Turn::NotMine;
            }
            let concede = run.stopping() || legal.version >= self.cap;
            let key = self.key(if concede { "concede" } else { "move" });
            let context = self.context(&key, Some(legal.version));
            let chosen = legal.moves[rng.below(legal.moves.len())].clone();
            let mut last_sent = first_sent;
            let answer = self
                .act(&mut rng, concede, context, chosen, &mut last_sent)
                .await;
            self.rng = rng;
            let outcome = answer
                .as_ref()
                .map(|(result, _)| result.version)
                .map_err(Clone::clone);
            run.command_note(&self.game_id, self.side, &key, &outcome);
            match answer {
                Ok((result, attempts)) => {
                    let acked = unix_ms();
                    if !concede {
                        {
                            let mut summary = run.summary.lock();
                            summary.moves_acked += 1;
                            *summary
                                .moves_acked_by_transport
                                .entry(self.transport.to_string())
                                .or_default() += 1;
                        }
                        let mut out = run.out.lock();
                        let _ = writeln!(
                            out.moves,
                            "{first_sent},{last_sent},{acked},{},{attempts},{},{},{},{}",
                            acked.saturating_sub(last_sent) * 1000,
                            self.game_id,
                            role(self.side),
                            result.version,
                            result.replayed
                        );
                    }
                    let ended = result.events.iter().find_map(end_reason);
                    return Turn::Done(ended);
                }
                Err(status)
                    if matches!(status.code(), Code::Aborted | Code::FailedPrecondition) =>
                {
                    // The game moved on (or ended) meanwhile: look again.
                    continue;
                }
                Err(_) => return Turn::Failed,
            }
        }
        Turn::NotMine
    }
}

impl SeatWay {
    /// The next event of the seat's game at or after `next_seq`.
    async fn next(&mut self, run: &Run, rng: &mut SeatRng, next_seq: u64) -> Delivered {
        match self {
            SeatWay::Grpc { follower, .. } => follower.next(run, rng, next_seq).await,
            SeatWay::Ws(ws) => ws.next(run, rng, next_seq).await,
        }
    }

    /// Drops the game's stream (it is opened again at the next event asked for).
    fn drop_stream(&mut self, run: &Run, cause: &str) {
        match self {
            SeatWay::Grpc { follower, .. } => follower.drop_stream(run, cause),
            SeatWay::Ws(ws) => ws.drop_stream(run, cause),
        }
    }
}
