//! Following one game for one connection: the part both stream faces share. `Subscribe` (one
//! game per gRPC stream, and the JSON WebSocket's `subscribe`) and `Connect` (any number of games
//! on one connection) set a follow up the same way ([`Gateway::follow`]: the seat, the hub, the
//! presence report) and run the same loop ([`Follow::run`]): the hub's log from the follow's
//! position, each event projected for the viewer, the game's status once caught up, the
//! slow-client rule and the goodbye on shutdown. Only what a delivery becomes differs, and that
//! is the face's [`FollowSink`].

use crate::auth::Player;
use crate::gateway::{Gateway, StreamGauge};
use crate::hub::{GameHub, LogEntry};
use crate::presence::PresenceGuard;
use hidden_front_api_error::{ApiError, Reason};
use hidden_front_metrics_names as names;
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Event, Reveal, Viewer};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;
use tonic::Status;
use uuid::Uuid;

/// Log entries read from the hub at a time.
const PAGE: usize = 64;

/// What a face does with what a follow delivers. Each method answers whether the follow goes on
/// (`false`: the receiver is gone, stop).
pub(crate) trait FollowSink: Send {
    /// An event the viewer is shown, as `shown` says.
    fn event(
        &mut self,
        hub: &GameHub,
        entry: &LogEntry,
        shown: Shown<'_>,
    ) -> impl Future<Output = bool> + Send;

    /// The game's status (public: the same for every viewer), once every event up to its version
    /// was delivered.
    fn status(
        &mut self,
        hub: &GameHub,
        status: pb::GameStatus,
    ) -> impl Future<Output = bool> + Send;

    /// The follow stops early: resume from `next`.
    fn reconnect(&mut self, next: u64, reason: &str) -> impl Future<Output = ()> + Send;

    /// The follow cannot go on (the game cannot be followed upstream).
    fn failed(&mut self, status: Status) -> impl Future<Output = ()> + Send;

    /// Resolves when the receiver went away.
    fn closed(&self) -> impl Future<Output = ()> + Send;
}

/// How one event is shown to a follow: the viewer, and the ended game's reveal when the event is
/// shown with it (the end itself, or every event of a look after the end).
#[derive(Clone, Copy)]
pub(crate) struct Shown<'a> {
    pub(crate) viewer: Viewer,
    pub(crate) end: Option<&'a Reveal>,
}

/// A follow that is set up and ready to run: the seat checked, the hub found, the stream slot
/// and the presence report held for as long as it lives.
pub(crate) struct Follow {
    pub(crate) game_id: Uuid,
    hub: Arc<GameHub>,
    viewer: Viewer,
    after_end: bool,
    with_status: bool,
    /// The first seq not yet delivered.
    next: u64,
    max_behind: u64,
    max_lag: Duration,
    stopping: CancellationToken,
    _keep: (OwnedSemaphorePermit, Option<PresenceGuard>, StreamGauge),
}

impl Gateway {
    /// Sets up a follow of `request`'s game for `player`: refused when the game id is bad, the
    /// gateway is stopping or full, the game is unknown, or the player is not seated and does not
    /// spectate.
    pub(crate) async fn follow(
        &self,
        player: &Player,
        request: &pb::SubscribeRequest,
    ) -> Result<Follow, Status> {
        let game_id = crate::gateway::parse_game_id("game_id", &request.game_id)?;
        if self.inner.stopping.is_cancelled() {
            return Err(ApiError::new(
                Reason::ShuttingDown,
                "this gateway is shutting down; connect to another one",
            )
            .into());
        }
        let permit = self.inner.streams.acquire()?;
        let (viewer, seats, standing) = self.viewer(player, game_id, request.spectate).await?;
        let hub = self.inner.hubs.hub(game_id, seats.rules, standing);
        // A look after the end reveals every event; a live follow shows each event as it was
        // (what the mover's answer showed), and its end reveals the whole game. Which one this
        // connection is, is the session's word when the hub does not hold the end yet (asked
        // just now for the seats, or asked here).
        let after_end = hub.head().1
            || match standing {
                Some(standing) => standing.ended,
                None => self.inner.hubs.has_ended(game_id).await?,
            };
        let presence = viewer
            .side()
            .map(|side| self.inner.presence.connect(game_id, side));
        Ok(Follow {
            game_id,
            hub,
            viewer,
            after_end,
            with_status: request.with_status,
            next: request.from_seq.max(1),
            max_behind: self.inner.config.stream_buffer.max(1) as u64,
            max_lag: self.inner.config.max_lag,
            stopping: self.inner.stopping.clone(),
            _keep: (permit, presence, StreamGauge::open()),
        })
    }
}

impl Follow {
    /// Delivers the game to `sink` until its end, a stop, or the sink going away.
    pub(crate) async fn run<S: FollowSink>(mut self, sink: &mut S) {
        let hub = Arc::clone(&self.hub);
        let lag = metrics::histogram!(names::STREAM_LAG_EVENTS);
        let mut grown = hub.watch();
        // The hub's count of statuses at the one this follow delivered last.
        let mut sent_status = 0;
        // Only events that arrived after this follow started count as it falling behind; a
        // resume from far back is a catch-up, not a lag.
        let started = Instant::now();
        loop {
            if self.stopping.is_cancelled() {
                sink.reconnect(self.next, "this gateway is shutting down")
                    .await;
                return;
            }
            grown.borrow_and_update();
            let batch = match hub.entries(self.next, PAGE) {
                Ok(batch) => batch,
                Err(status) => return sink.failed(status).await,
            };
            let reveal = hub.reveal();
            // A look after the end waits for the end to reach the hub: it reveals every event
            // with what the end reveals.
            if batch.is_empty() || (self.after_end && reveal.is_none()) {
                // Caught up: the game's status, when asked for, new, and not ahead of the events
                // this follow has delivered.
                if self.with_status
                    && let Some((status, count)) = hub.status()
                    && count > sent_status
                    && status.version < self.next
                {
                    sent_status = count;
                    if !sink.status(&hub, status).await {
                        return;
                    }
                    continue;
                }
                let (head, ended) = hub.head();
                if ended && self.next > head {
                    return; // resumed past the end: nothing more will come
                }
                tokio::select! {
                    changed = grown.changed() => if changed.is_err() { return },
                    // The receiver went away: release the slot and the presence now.
                    () = sink.closed() => return,
                    () = self.stopping.cancelled() => {}
                }
                continue;
            }
            for entry in batch {
                let (head, _) = hub.head();
                if head.saturating_sub(entry.seq) >= self.max_behind
                    && entry.live
                    && entry.received >= started
                    && entry.received.elapsed() >= self.max_lag
                {
                    // Too far behind for too long: say where to resume (only this follow waits
                    // for the receiver to take that).
                    sink.reconnect(self.next, "this connection fell too far behind")
                        .await;
                    return;
                }
                let is_end = matches!(entry.event, Event::Ended { .. });
                let shown = Shown {
                    viewer: self.viewer,
                    end: reveal.as_deref().filter(|_| self.after_end || is_end),
                };
                lag.record(head.saturating_sub(entry.seq) as f64);
                // A live event's delivery is part of the trace of the command that caused it (a
                // move: from the mover's gateway to every subscriber).
                let _delivery = (entry.live && !entry.trace_parent.is_empty()).then(|| {
                    let span = tracing::info_span!(
                        "gateway.deliver",
                        otel.kind = "producer",
                        game_id = %self.game_id,
                        seq = entry.seq,
                    );
                    hidden_front_telemetry::set_remote_parent(&span, &entry.trace_parent);
                    span
                });
                if !sink.event(&hub, &entry, shown).await {
                    return;
                }
                self.next = entry.seq + 1;
                if is_end {
                    return;
                }
            }
        }
    }
}
