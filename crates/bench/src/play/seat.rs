//! One seat of one game: a player with its own token and connection, who knows the game only
//! from its own events. It follows its view with the engine (`GameView::apply` on each event as
//! its stream delivers it) and lists its legal moves from that view (`GameView::own_moves`), as
//! the page and the terminal client do; the server only judges. How the seat reaches the server
//! is the run's [`Transport`]: one `Connect` connection (gRPC or binary WebSocket) for its
//! commands, their answers and its events, or `Subscribe` plus one unary call per command.

use super::link::{Link, LinkError};
use super::timer_lateness;
use super::{GameShared, Lateness, Run, SeatEnd, Transport, micros, second_histogram, think_time};
use crate::connections::{authed, unary};
use crate::pb;
use crate::pb::game_event::Event;
use crate::pb::player_service_client::PlayerServiceClient;
use crate::rng::SeatRng;
use futures_util::FutureExt;
use hidden_front_rules::{GameView, Phase, Side, ViewEvent, Viewer};
use hidden_front_wire as wire;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tonic::Status;

/// How long a seat's stream may stay silent (when nothing is expected of the server's clock)
/// before the game is abandoned as broken.
const STREAM_SILENCE: Duration = Duration::from_secs(60);

/// How long past `move_seconds` a seat that stalls on purpose waits for `TimedOut` before it
/// decides no clock is running and plays after all.
const TIMER_GRACE: Duration = Duration::from_secs(5);

/// One seat of one game.
pub(super) struct Seat {
    run: Arc<Run>,
    game: Arc<GameShared>,
    game_id: String,
    /// The shard the game lives on.
    shard: u16,
    side: Side,
    token: String,
    rng: SeatRng,
    keys: u64,
    /// The seat's view of the game, from its events (none before the first).
    view: Option<GameView>,
    /// The first seq not yet applied to the view.
    next_seq: u64,
    /// Set while the server has refused a move as out of date: the seat waits for an event
    /// before it tries again.
    stale: bool,
    /// That refusal, not yet counted: when the next event ends the game, the move only raced
    /// the game's end (see [`Seat::settle_refusal`]).
    refused: Option<String>,
    /// The game's version after the seat's last acknowledged command: its stream must reach it
    /// before the seat acts again (the answer is the acknowledgment; the view follows the
    /// stream alone, which delivers the seat's events complete and in order).
    known_version: u64,
    /// Since when the seat has been letting its clock run out on purpose.
    stalled_since: Option<Instant>,
}

/// What an event or answer came to for the seat.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Nothing,
    Ended,
}

/// Counts an open stream while alive.
struct StreamGuard<'a>(&'a AtomicUsize);

impl<'a> StreamGuard<'a> {
    fn new(counter: &'a AtomicUsize) -> StreamGuard<'a> {
        counter.fetch_add(1, Ordering::Relaxed);
        StreamGuard(counter)
    }
}

impl Drop for StreamGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A request of a `Connect` seat waiting for its answer.
enum Pending {
    Confirm(Instant),
    Play { sent: Instant, version: u64 },
    Other,
}

impl Seat {
    pub(super) fn new(
        run: Arc<Run>,
        game: Arc<GameShared>,
        game_id: String,
        shard: u16,
        side: Side,
        token: String,
        rng: SeatRng,
    ) -> Seat {
        Seat {
            run,
            game,
            game_id,
            shard,
            side,
            token,
            rng,
            keys: 0,
            view: None,
            next_seq: 1,
            stale: false,
            refused: None,
            known_version: 0,
            stalled_since: None,
        }
    }

    /// Plays the seat until the game ends, the run ends or something fails; a seat that fails
    /// makes the other give up too.
    pub(super) async fn run(mut self) -> SeatEnd {
        let abandon = self.game.abandon.clone();
        let run = Arc::clone(&self.run);
        let _open = StreamGuard::new(&run.open_streams);
        let outcome = match run.config.transport {
            Transport::Unary => self.play_unary(&abandon).await,
            Transport::Connect | Transport::Websocket => self.play_connected(&abandon).await,
        };
        if outcome == SeatEnd::Failed {
            abandon.cancel();
        }
        // A refusal that no event explained is an error after all.
        if let Some(code) = self.refused.take() {
            run.error(&code);
        }
        outcome
    }

    fn key(&mut self) -> String {
        self.keys += 1;
        format!("{}-{:?}-{}", self.game_id, self.side, self.keys)
    }

    fn context(&mut self, expected_version: Option<u64>) -> Option<pb::ActionContext> {
        Some(pb::ActionContext {
            game_id: self.game_id.clone(),
            idempotency_key: self.key(),
            expected_version,
        })
    }

    /// Whether the view says it is this seat's move.
    fn my_turn(&self) -> bool {
        !self.stale
            && self.next_seq > self.known_version
            && self
                .view
                .as_ref()
                .is_some_and(|v| v.phase == Phase::Play && v.to_move == Some(self.side))
    }

    /// Applies one event of the stream to the view (events the seat may not see are left out
    /// of its stream, so seqs skip; none may come twice or out of order), with the run's
    /// bookkeeping.
    fn apply(&mut self, event: &pb::GameEvent, seen_at: Instant) -> Result<Seen, &'static str> {
        if event.seq < self.next_seq {
            return Err("EVENT_OUT_OF_ORDER");
        }
        let rules = self.view.as_ref().map(|v| v.rules).unwrap_or_default();
        let seen = wire::view_event_from_proto(&rules, event).map_err(|_| "EVENT_UNREADABLE")?;
        match &mut self.view {
            Some(view) => view.apply(&seen).map_err(|_| "VIEW_MISMATCH")?,
            None => match seen {
                ViewEvent::Created { rules, first_mover } => {
                    self.view = Some(GameView::created(
                        Viewer::player(self.side),
                        rules,
                        first_mover,
                    ));
                }
                _ => return Err("NO_CREATION"),
            },
        }
        self.next_seq = event.seq + 1;
        self.stale = false;
        self.settle_refusal(matches!(&event.event, Some(Event::Ended(_))));
        let own = wire::side_to_proto(self.side) as i32;
        match &event.event {
            Some(Event::PlayStarted(_)) => self.game.turn_started(event.seq, seen_at),
            Some(Event::Moved(moved)) if moved.side != own => {
                let sent = self.game.lock().submitted.remove(&event.seq);
                if let Some(sent) = sent {
                    let latency = micros(seen_at - sent);
                    self.run.record(|r| {
                        let _ = r.seen.record(latency);
                    });
                }
            }
            Some(Event::TimedOut(timed_out)) => {
                self.timed_out(event.seq, seen_at);
                if timed_out.side == own {
                    self.stalled_since = None;
                }
            }
            Some(Event::Ended(_)) => return Ok(Seen::Ended),
            _ => {}
        }
        Ok(Seen::Nothing)
    }

    /// A move refused as out of date (`code`): the seat waits for the event that moved the game
    /// on. The refusal is counted when that event comes, unless it is the game's end.
    fn refused_as_stale(&mut self, code: String) {
        self.stale = true;
        if let Some(earlier) = self.refused.replace(code) {
            self.run.error(&earlier);
        }
    }

    /// Counts the refusal waiting for an event, now that one came: an error, unless the event
    /// ends the game. A move that ends a game reaches the opponent as two events, the move and
    /// the end; a seat whose stream has delivered the move alone sees its turn and plays, and
    /// the server rightly refuses that move as stale. That race belongs to every client and is
    /// no fault of the server, so it is counted apart (`moves_refused_by_the_end`).
    fn settle_refusal(&mut self, ends_the_game: bool) {
        match settle(self.refused.take(), ends_the_game) {
            Settled::Nothing => {}
            Settled::ByTheEnd => self.run.record(|r| r.moves_refused_by_the_end += 1),
            Settled::Error(code) => self.run.error(&code),
        }
    }

    /// Records a `TimedOut` event seen at `seen_at`, once per game (the first seat to see it).
    fn timed_out(&self, seq: u64, seen_at: Instant) {
        let mut clock = self.game.lock();
        let previous = clock.turn_start;
        if previous.is_some_and(|(s, _)| s >= seq) {
            return;
        }
        clock.turn_start = Some((seq, seen_at));
        drop(clock);
        let Some(lateness) = timer_lateness(previous, seen_at, self.run.move_clock()) else {
            return;
        };
        self.run.record(|r| {
            r.timeouts_seen += 1;
            match lateness {
                Lateness::Late(late) => {
                    let _ = r.lateness.record(micros(late));
                }
                Lateness::Early(early) => {
                    r.timer_early += 1;
                    r.timer_early_max = r.timer_early_max.max(early);
                    let _ = r.lateness.record(1);
                }
            }
        });
    }

    /// Thinks (or decides to stall) before a move. `None` when the run ended meanwhile.
    async fn think(&mut self) -> Option<bool> {
        if self.run.over() {
            return None;
        }
        let run = Arc::clone(&self.run);
        if !run.config.think.is_zero() {
            let think = think_time(
                run.config.think,
                run.config.think_spread_percent,
                &mut self.rng,
            );
            tokio::select! {
                () = tokio::time::sleep(think) => {}
                () = run.ended() => return None,
            }
        }
        if run.config.stall_percent > 0 && self.rng.percent(run.config.stall_percent) {
            self.stalled_since = Some(Instant::now());
            return Some(false);
        }
        Some(true)
    }

    /// A random legal move of the view and the version it is played at, when it is the seat's
    /// turn. None on its turn too when its side has no move: the game's end is then on its way
    /// (the engine ends a game whose side to move cannot move), and the seat waits for it.
    fn choose(&mut self) -> Option<(pb::Move, u64)> {
        if !self.my_turn() {
            return None;
        }
        let view = self.view.as_ref()?;
        let moves = view.own_moves();
        if moves.is_empty() {
            return None;
        }
        let chosen = moves[self.rng.below(moves.len())];
        Some((wire::move_to_proto(&view.rules, chosen), self.next_seq - 1))
    }

    /// How long to wait for the stream: until a stalled turn's timeout is overdue, else the
    /// silence limit.
    fn wait(&self) -> Duration {
        match (self.stalled_since, self.run.move_clock()) {
            (Some(since), Some(clock)) => {
                (since + clock + TIMER_GRACE).saturating_duration_since(Instant::now())
            }
            _ => STREAM_SILENCE,
        }
    }

    /// A wait for the stream that ran out: fails the game unless a stall was waiting for a
    /// timeout that never came (then the seat plays after all).
    fn waited_out(&mut self) -> bool {
        if self.stalled_since.take().is_some() {
            self.run.record(|r| r.timer_not_fired += 1);
            true
        } else {
            self.run.error("STREAM_SILENT");
            false
        }
    }

    /// Records a move acknowledged at `acked`, sent at `sent`.
    fn acknowledged(&self, sent: Instant, acked: Instant, version: u64) {
        let run = &self.run;
        let latency = micros(acked - sent);
        let second =
            usize::try_from(sent.duration_since(run.start).as_secs()).unwrap_or(usize::MAX);
        let shard = self.shard;
        let counted = acked <= run.end;
        run.record(|r| {
            let _ = r.ack.record(latency);
            if second <= 24 * 3600 {
                if r.ack_by_second.len() <= second {
                    r.ack_by_second.resize_with(second + 1, second_histogram);
                }
                let _ = r.ack_by_second[second].record(latency);
            }
            if counted {
                r.shards.entry(shard).or_default().moves += 1;
            }
        });
        if counted {
            run.moves.fetch_add(1, Ordering::Relaxed);
        }
        self.game.turn_started(version, acked);
    }

    /// The seat on one `Connect` connection: follow the game, confirm, and play each turn with a
    /// move of its own view, every answer and event arriving on the same connection.
    async fn play_connected(&mut self, abandon: &CancellationToken) -> SeatEnd {
        let run = Arc::clone(&self.run);
        let link = match run.config.transport {
            Transport::Websocket => match run.config.http {
                Some(http) => Link::websocket(http, &self.token).await,
                None => Err(LinkError("NO_HTTP_ADDRESS".into())),
            },
            _ => Link::grpc(run.pool.pick(), &self.token).await,
        };
        let mut link = match link {
            Ok(link) => link,
            Err(LinkError(code)) => {
                run.error(&code);
                return SeatEnd::Failed;
            }
        };
        let mut next_id = 0u64;
        let mut pending: HashMap<u64, Pending> = HashMap::new();
        let mut request = |pending: &mut HashMap<u64, Pending>, what: Pending, request| {
            next_id += 1;
            pending.insert(next_id, what);
            pb::ConnectRequest {
                request_id: next_id,
                request: Some(request),
            }
        };
        let follow = request(
            &mut pending,
            Pending::Other,
            pb::connect_request::Request::Follow(self.follow_from(1)),
        );
        let confirm = request(
            &mut pending,
            Pending::Confirm(Instant::now()),
            pb::connect_request::Request::Confirm(pb::ConfirmRequest {
                context: self.context(None),
            }),
        );
        for message in [follow, confirm] {
            if let Err(LinkError(code)) = link.send(message).await {
                run.error(&code);
                return SeatEnd::Failed;
            }
        }
        let mut moving = false;
        loop {
            // What the connection holds already comes first (see `play_unary`).
            let ready = link.receive().now_or_never();
            let received = match ready {
                Some(received) => received,
                None => {
                    if !moving
                        && self.stalled_since.is_none()
                        && let Some((mv, version)) = self.choose()
                    {
                        match self.think().await {
                            None => return SeatEnd::Deadline,
                            Some(false) => {}
                            Some(true) => {
                                let sent = Instant::now();
                                self.game.lock().submitted.insert(version + 1, sent);
                                let play = pb::connect_request::Request::Play(pb::PlayRequest {
                                    context: self.context(Some(version)),
                                    r#move: Some(mv),
                                });
                                let message =
                                    request(&mut pending, Pending::Play { sent, version }, play);
                                if let Err(LinkError(code)) = link.send(message).await {
                                    run.error(&code);
                                    return SeatEnd::Failed;
                                }
                                moving = true;
                            }
                        }
                    }
                    let wait = self.wait();
                    let waited = tokio::select! {
                        () = run.ended() => return SeatEnd::Deadline,
                        () = abandon.cancelled() => return SeatEnd::Failed,
                        received = tokio::time::timeout(wait, link.receive()) => received,
                    };
                    match waited {
                        Err(_) if self.waited_out() => continue,
                        Err(_) => return SeatEnd::Failed,
                        Ok(received) => received,
                    }
                }
            };
            let messages = match received {
                Err(LinkError(code)) => {
                    run.error(&code);
                    return SeatEnd::Failed;
                }
                Ok(None) => {
                    run.error("STREAM_ENDED");
                    return SeatEnd::Failed;
                }
                Ok(Some(messages)) => messages,
            };
            let at = Instant::now();
            for message in messages {
                use pb::server_message::Item;
                let seen = match message.item {
                    Some(Item::Event(event)) => self.apply(&event, at),
                    Some(Item::Answer(answer)) => {
                        let version = match answer.response {
                            Some(pb::answer::Response::Action(result)) => result.version,
                            _ => 0,
                        };
                        self.known_version = self.known_version.max(version);
                        match pending.remove(&answer.request_id) {
                            Some(Pending::Play { sent, .. }) => {
                                moving = false;
                                self.acknowledged(sent, at, version);
                            }
                            Some(Pending::Confirm(sent)) => {
                                let latency = micros(at - sent);
                                run.record(|r| {
                                    let _ = r.confirmed.record(latency);
                                });
                            }
                            _ => {}
                        }
                        Ok(Seen::Nothing)
                    }
                    Some(Item::Refusal(refusal)) => {
                        // The stable reason beside the code: ABORTED alone does not say
                        // whether a timer moved the game on or two commands raced.
                        let code = match refusal.reason.as_str() {
                            "" => code_name(refusal.code),
                            reason => format!("{}/{reason}", code_name(refusal.code)),
                        };
                        match pending.remove(&refusal.request_id) {
                            Some(Pending::Play { version, .. }) => {
                                moving = false;
                                self.game.lock().submitted.remove(&(version + 1));
                                match tonic::Code::from(refusal.code) {
                                    // The game moved on (a timer, or its end): wait for its
                                    // event.
                                    tonic::Code::Aborted | tonic::Code::FailedPrecondition => {
                                        self.refused_as_stale(code);
                                        Ok(Seen::Nothing)
                                    }
                                    tonic::Code::ResourceExhausted => {
                                        run.error(&code);
                                        tokio::time::sleep(Duration::from_millis(100)).await;
                                        Ok(Seen::Nothing)
                                    }
                                    _ => {
                                        run.error(&code);
                                        Err("")
                                    }
                                }
                            }
                            _ => {
                                run.error(&code);
                                Err("")
                            }
                        }
                    }
                    Some(Item::Reconnect(hint)) => {
                        run.record(|r| r.reconnects += 1);
                        let follow = request(
                            &mut pending,
                            Pending::Other,
                            pb::connect_request::Request::Follow(
                                self.follow_from(hint.resume_from_seq),
                            ),
                        );
                        match link.send(follow).await {
                            Ok(()) => Ok(Seen::Nothing),
                            Err(LinkError(code)) => {
                                run.error(&code);
                                Err("")
                            }
                        }
                    }
                    Some(Item::Goodbye(goodbye)) => {
                        run.error(&format!("GOODBYE_{}", goodbye.reason));
                        Err("")
                    }
                    Some(Item::Status(_) | Item::Lobby(_)) | None => Ok(Seen::Nothing),
                };
                match seen {
                    Ok(Seen::Nothing) => {}
                    Ok(Seen::Ended) => return SeatEnd::Finished,
                    Err(code) => {
                        if !code.is_empty() {
                            run.error(code);
                        }
                        return SeatEnd::Failed;
                    }
                }
            }
        }
    }

    fn follow_from(&self, from_seq: u64) -> pb::SubscribeRequest {
        pb::SubscribeRequest {
            game_id: self.game_id.clone(),
            from_seq,
            spectate: false,
            with_status: false,
        }
    }

    /// The seat with `Subscribe` for its events and one unary call per command.
    async fn play_unary(&mut self, abandon: &CancellationToken) -> SeatEnd {
        let run = Arc::clone(&self.run);
        let mut client = PlayerServiceClient::new(run.pool.pick());
        let subscribe = |seat: &Seat, from_seq| authed(&seat.token, seat.follow_from(from_seq));
        let mut stream = match client.subscribe(subscribe(self, 1)).await {
            Ok(stream) => stream.into_inner(),
            Err(status) => {
                run.status(&status);
                return SeatEnd::Failed;
            }
        };
        let sent = Instant::now();
        let confirm = pb::ConfirmRequest {
            context: self.context(None),
        };
        match client.confirm(unary(&self.token, confirm)).await {
            Ok(answer) => {
                let at = Instant::now();
                let latency = micros(at - sent);
                run.record(|r| {
                    let _ = r.confirmed.record(latency);
                });
                if let Some(result) = answer.into_inner().result {
                    self.known_version = self.known_version.max(result.version);
                }
            }
            Err(status) => {
                run.status(&status);
                return SeatEnd::Failed;
            }
        }
        loop {
            // What the stream holds already comes first: a command's events are several items
            // (a move and the end it caused), and acting on the first alone would be acting on a
            // view the server has moved past.
            let ready = stream.message().now_or_never();
            let item = match ready {
                Some(item) => item,
                None => {
                    if self.stalled_since.is_none()
                        && let Some(chosen) = self.choose()
                    {
                        match self.think().await {
                            None => return SeatEnd::Deadline,
                            Some(false) => {}
                            Some(true) => {
                                if self.play_once(&mut client, chosen).await.is_err() {
                                    return SeatEnd::Failed;
                                }
                            }
                        }
                        continue;
                    }
                    let wait = self.wait();
                    let waited = tokio::select! {
                        () = run.ended() => return SeatEnd::Deadline,
                        () = abandon.cancelled() => return SeatEnd::Failed,
                        item = tokio::time::timeout(wait, stream.message()) => item,
                    };
                    match waited {
                        Err(_) if self.waited_out() => continue,
                        Err(_) => return SeatEnd::Failed,
                        Ok(item) => item,
                    }
                }
            };
            let item = match item {
                Err(status) => {
                    run.status(&status);
                    return SeatEnd::Failed;
                }
                Ok(None) => {
                    run.error("STREAM_ENDED");
                    return SeatEnd::Failed;
                }
                Ok(Some(item)) => item,
            };
            match item.item {
                Some(pb::subscribe_response::Item::Event(event)) => {
                    match self.apply(&event, Instant::now()) {
                        Ok(Seen::Ended) => return SeatEnd::Finished,
                        Ok(Seen::Nothing) => {}
                        Err(code) => {
                            run.error(code);
                            return SeatEnd::Failed;
                        }
                    }
                }
                Some(pb::subscribe_response::Item::Reconnect(hint)) => {
                    run.record(|r| r.reconnects += 1);
                    match client
                        .subscribe(subscribe(self, hint.resume_from_seq))
                        .await
                    {
                        Ok(resumed) => stream = resumed.into_inner(),
                        Err(status) => {
                            run.status(&status);
                            return SeatEnd::Failed;
                        }
                    }
                }
                Some(pb::subscribe_response::Item::Status(_)) | None => {}
            }
        }
    }

    /// One unary `Play` of `mv` at `version`.
    async fn play_once(
        &mut self,
        client: &mut PlayerServiceClient<tonic::transport::Channel>,
        (mv, version): (pb::Move, u64),
    ) -> Result<(), ()> {
        let run = Arc::clone(&self.run);
        let sent = Instant::now();
        self.game.lock().submitted.insert(version + 1, sent);
        let play = pb::PlayRequest {
            context: self.context(Some(version)),
            r#move: Some(mv),
        };
        match client.play(unary(&self.token, play)).await {
            Ok(answer) => {
                let acked = Instant::now();
                let result = answer.into_inner().result.unwrap_or_default();
                self.acknowledged(sent, acked, result.version);
                self.known_version = self.known_version.max(result.version);
                Ok(())
            }
            Err(status) => {
                self.game.lock().submitted.remove(&(version + 1));
                match status.code() {
                    tonic::Code::Aborted | tonic::Code::FailedPrecondition => {
                        self.refused_as_stale(crate::connections::code_name(&status));
                        Ok(())
                    }
                    tonic::Code::ResourceExhausted => {
                        run.status(&status);
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        Ok(())
                    }
                    _ => {
                        run.status(&status);
                        Err(())
                    }
                }
            }
        }
    }
}

/// What a refusal waiting for an event came to, once an event came.
#[derive(Debug, PartialEq, Eq)]
enum Settled {
    /// No refusal was waiting.
    Nothing,
    /// The event ended the game: the move raced the end.
    ByTheEnd,
    /// Anything else moved the game on (a timer): the refusal counts, by its code.
    Error(String),
}

/// See [`Seat::settle_refusal`].
fn settle(refused: Option<String>, ends_the_game: bool) -> Settled {
    match refused {
        None => Settled::Nothing,
        Some(_) if ends_the_game => Settled::ByTheEnd,
        Some(code) => Settled::Error(code),
    }
}

/// The name of gRPC status code `code`, as the run's error counts name it.
fn code_name(code: i32) -> String {
    crate::connections::code_name(&Status::new(tonic::Code::from(code), ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_refusal_counts_unless_the_next_event_ends_the_game() {
        let stale = || Some("ABORTED/STALE_VERSION".to_string());
        assert_eq!(settle(stale(), true), Settled::ByTheEnd);
        assert_eq!(
            settle(stale(), false),
            Settled::Error("ABORTED/STALE_VERSION".into())
        );
        assert_eq!(settle(None, true), Settled::Nothing);
        assert_eq!(settle(None, false), Settled::Nothing);
    }
}
