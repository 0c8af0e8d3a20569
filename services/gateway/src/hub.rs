//! One upstream subscription per game per gateway process, fanned out to every connection.
//!
//! A [`GameHub`] follows a game's full-information log from the session service (`WatchGame`)
//! and keeps it in memory (a game's log is small: a few hundred events). Each connection reads
//! the log at its own pace through a cursor (a sequence number) and is woken when the log grows,
//! so every connection sees every event exactly once, in order, and a slow one holds back nobody:
//! the hub never waits for a connection. A connection that falls too far behind is cut off with a
//! resume hint (see `Gateway::subscribe`). Projection per viewer happens in the connection, with
//! the engine's view function; when the game ends the hub rebuilds it from the log once, for what
//! the end reveals to everyone ([`GameHub::reveal`]).

use crate::follow::Shown;
use crate::gateway::SessionClient;
use crate::referee::{Referee, UpstreamItem};
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::future::{self, BoxFuture, FutureExt};
use hidden_front_proto::v1 as pb;
use hidden_front_retry::Backoff;
use hidden_front_rules::{Event, Game, Reveal, Rules, Viewer, project, reveal};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tonic::{Code, Status};
use uuid::Uuid;

/// One event of a game's log, as the hub keeps it.
#[derive(Debug)]
pub(crate) struct LogEntry {
    /// Position in the log, from 1.
    pub seq: u64,
    /// The event with full information (never sent as is).
    pub event: Event,
    /// When this gateway received it (how long a connection has been behind).
    pub received: Instant,
    /// Whether it was appended after this hub started following the game. Only such events count
    /// when judging whether a connection is too slow: reading the backfill is a catch-up.
    pub live: bool,
    /// The W3C traceparent of the command that caused it (empty if untraced): each live delivery
    /// is a span in that command's trace.
    pub trace_parent: String,
    /// The event as a `Connect` connection receives it, encoded once per audience
    /// ([`GameHub::event_message`]): `None` inside when that audience is not shown it.
    encoded: [OnceLock<Option<Bytes>>; AUDIENCES],
}

/// How many ways an event can be shown: to each of the three viewers, with the ended game's
/// reveal or without.
const AUDIENCES: usize = 6;

/// The index of an audience in [`LogEntry::encoded`].
fn audience(shown: Shown<'_>) -> usize {
    let viewer = match shown.viewer {
        Viewer::South => 0,
        Viewer::North => 1,
        Viewer::Spectator => 2,
    };
    viewer * 2 + usize::from(shown.end.is_some())
}

/// Where a game stood when the session was asked: its version and whether it had ended.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Standing {
    pub version: u64,
    pub ended: bool,
}

/// Who sits where in a game and under which rules; never changes, so it is cached.
#[derive(Debug, Clone)]
pub(crate) struct Seats {
    pub south_player: String,
    pub north_player: String,
    pub rules: Rules,
}

#[derive(Default)]
struct HubState {
    log: Vec<Arc<LogEntry>>,
    /// The game's version when this hub started following it: events up to it are backfill.
    backfill_until: u64,
    /// Whether the log holds the game's end.
    ended: bool,
    /// What the ended game reveals, once the log holds its end.
    reveal: Option<Arc<Reveal>>,
    /// Set when the upstream cannot follow the game at all (e.g. it does not exist).
    failed: Option<Status>,
    /// The latest status as a `Connect` message, encoded once when a connection first needs it.
    status_message: Option<Bytes>,
    /// The game's latest status from upstream, and how many the hub has received (a
    /// connection compares it with the count of the one it sent last).
    status: Option<pb::GameStatus>,
    statuses: u64,
}

struct Shared {
    /// The game's id as text, written once for every message that names the game.
    game_id: String,
    /// The game's rules (the board its squares are named on).
    rules: Rules,
    state: Mutex<HubState>,
    /// The log's length, for connections waiting for more.
    head: watch::Sender<u64>,
}

/// A game followed by this gateway; alive while any connection holds it.
pub(crate) struct GameHub {
    shared: Arc<Shared>,
    upstream: tokio::task::JoinHandle<()>,
}

impl Drop for GameHub {
    fn drop(&mut self) {
        self.upstream.abort();
    }
}

impl GameHub {
    /// Up to `max` events from `from_seq` on (fewer, or none, if the log is shorter).
    pub(crate) fn entries(&self, from_seq: u64, max: usize) -> Result<Vec<Arc<LogEntry>>, Status> {
        let state = self.shared.state.lock();
        if let Some(status) = &state.failed {
            return Err(status.clone());
        }
        let start = (from_seq.max(1) - 1) as usize;
        Ok(state
            .log
            .get(start..)
            .map(|rest| rest.iter().take(max).cloned().collect())
            .unwrap_or_default())
    }

    /// The log's length now and whether the game has ended.
    pub(crate) fn head(&self) -> (u64, bool) {
        let state = self.shared.state.lock();
        (state.log.len() as u64, state.ended)
    }

    /// What the ended game reveals to everyone; `None` until the log holds its end.
    pub(crate) fn reveal(&self) -> Option<Arc<Reveal>> {
        self.shared.state.lock().reveal.clone()
    }

    /// The game's latest status with the hub's count of statuses received so far, when it has
    /// one. Public (the same for every viewer), so connections send it as it is.
    pub(crate) fn status(&self) -> Option<(pb::GameStatus, u64)> {
        let state = self.shared.state.lock();
        state.status.map(|status| (status, state.statuses))
    }

    /// A receiver that changes whenever the log grows or the status changes (or the hub fails).
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.shared.head.subscribe()
    }

    /// The game's rules.
    pub(crate) fn rules(&self) -> &Rules {
        &self.shared.rules
    }

    /// `entry` as the `ServerMessage` a `Connect` connection of `shown`'s audience receives, or
    /// `None` when that audience is not shown it. Projected and encoded by the first connection
    /// of the audience that asks; every other one shares the bytes.
    pub(crate) fn event_message(&self, entry: &LogEntry, shown: Shown<'_>) -> Option<Bytes> {
        entry.encoded[audience(shown)]
            .get_or_init(|| {
                project(&entry.event, shown.viewer, shown.end).map(|view| {
                    let event = hidden_front_wire::game_event(
                        &self.shared.rules,
                        &self.shared.game_id,
                        entry.seq,
                        &view,
                    );
                    crate::connect::encode(pb::server_message::Item::Event(event))
                })
            })
            .clone()
    }

    /// The latest status as the `ServerMessage` a `Connect` connection receives, encoded once
    /// for every connection (a status names no piece: every viewer gets the same).
    pub(crate) fn status_message(&self, status: pb::GameStatus) -> Bytes {
        let mut state = self.shared.state.lock();
        if state.status == Some(status)
            && let Some(message) = &state.status_message
        {
            return message.clone();
        }
        let message =
            crate::connect::encode(pb::server_message::Item::Status(pb::GameStatusUpdate {
                game_id: self.shared.game_id.clone(),
                status: Some(status),
            }));
        if state.status == Some(status) {
            state.status_message = Some(message.clone());
        }
        message
    }
}

/// Every game this gateway follows, plus the seat cache.
pub(crate) struct Hubs {
    session: SessionClient,
    /// What the hubs follow the games' logs through.
    referee: Arc<dyn Referee>,
    hubs: Mutex<HashMap<Uuid, Weak<GameHub>>>,
    /// Shared, not copied: every action reads its game's seats.
    seats: Mutex<HashMap<Uuid, Arc<Seats>>>,
    /// Seat lookups in flight ([`Hubs::seats_and_standing`]).
    lookups: SharedLookups<Uuid, Result<(Arc<Seats>, Standing), Status>>,
}

/// Lookups in flight by key, each shared by every caller that asks for the same key before it
/// answers. Why: at a game's start both seats (and often spectators) connect in the same
/// instant, each misses the seat cache, and each miss was a session read of the whole game
/// (`GetGame`); now the first miss reads and the others wait for its answer.
pub(crate) struct SharedLookups<K, V: Clone> {
    in_flight: Mutex<HashMap<K, future::Shared<BoxFuture<'static, V>>>>,
}

impl<K: std::hash::Hash + Eq + Copy, V: Clone + Send + Sync + 'static> SharedLookups<K, V> {
    pub(crate) fn new() -> Self {
        SharedLookups {
            in_flight: Mutex::new(HashMap::new()),
        }
    }

    /// The answer of the lookup for `key` in flight, or of a new one started with `start`.
    /// `done` runs once per lookup, with its answer, before the lookup stops being shared (so a
    /// caller that comes after it finds what `done` stored, e.g. a cache entry).
    pub(crate) async fn get<F>(&self, key: K, start: impl FnOnce() -> F, done: impl FnOnce(&V)) -> V
    where
        F: Future<Output = V> + Send + 'static,
    {
        let lookup = self
            .in_flight
            .lock()
            .entry(key)
            .or_insert_with(|| start().boxed().shared())
            .clone();
        let answer = lookup.clone().await;
        let mut in_flight = self.in_flight.lock();
        if in_flight
            .get(&key)
            .is_some_and(|current| future::Shared::ptr_eq(current, &lookup))
        {
            done(&answer);
            in_flight.remove(&key);
        }
        answer
    }
}

/// Seats cached at most; past it the cache starts over (a miss costs one session call).
const SEAT_CACHE_LIMIT: usize = 100_000;

impl Hubs {
    /// Hubs following games through `referee`, asking `session` for seats.
    pub(crate) fn new(session: SessionClient, referee: Arc<dyn Referee>) -> Hubs {
        Hubs {
            session,
            referee,
            hubs: Mutex::new(HashMap::new()),
            seats: Mutex::new(HashMap::new()),
            lookups: SharedLookups::new(),
        }
    }

    /// Who sits where in the game (`NOT_FOUND` for an unknown game).
    pub(crate) async fn seats(&self, game_id: Uuid) -> Result<Arc<Seats>, Status> {
        Ok(self.seats_and_standing(game_id).await?.0)
    }

    /// [`Hubs::seats`], and where the game stands when that was asked of the session just now
    /// (a seat cache miss), so a new connection need not ask [`Hubs::has_ended`] again, nor its
    /// new hub ask for the version its backfill ends at: at a game's start both seats connect at
    /// once, and each question is a session read. Misses of the same game at the same time share
    /// one read ([`SharedLookups`]).
    pub(crate) async fn seats_and_standing(
        &self,
        game_id: Uuid,
    ) -> Result<(Arc<Seats>, Option<Standing>), Status> {
        if let Some(seats) = self.seats.lock().get(&game_id) {
            return Ok((seats.clone(), None));
        }
        let session = self.session.clone();
        let (seats, standing) = self
            .lookups
            .get(
                game_id,
                || look_up_seats(session, game_id),
                |answer| {
                    if let Ok((seats, _)) = answer {
                        let mut cache = self.seats.lock();
                        if cache.len() >= SEAT_CACHE_LIMIT {
                            cache.clear();
                        }
                        cache.insert(game_id, seats.clone());
                    }
                },
            )
            .await?;
        Ok((seats, Some(standing)))
    }

    /// Whether the session says the game has ended (`NOT_FOUND` for an unknown game). Asked
    /// when a connection starts and its hub does not hold the end yet: the hub learns of the end
    /// a little after the session.
    pub(crate) async fn has_ended(&self, game_id: Uuid) -> Result<bool, Status> {
        let view = self.spectator_view(game_id).await?;
        Ok(view.phase == pb::Phase::Ended as i32)
    }

    /// The game as a spectator sees it, from the session.
    async fn spectator_view(&self, game_id: Uuid) -> Result<pb::GameView, Status> {
        spectator_view(self.session.clone(), game_id).await
    }

    /// The hub of a game played under `rules` (from its [`Seats`]), started if nobody follows it
    /// yet; a new hub's backfill ends at `standing`'s version when the session was just asked,
    /// else the hub asks.
    pub(crate) fn hub(
        &self,
        game_id: Uuid,
        rules: Rules,
        standing: Option<Standing>,
    ) -> Arc<GameHub> {
        let mut hubs = self.hubs.lock();
        if let Some(hub) = hubs.get(&game_id).and_then(Weak::upgrade) {
            return hub;
        }
        hubs.retain(|_, hub| hub.strong_count() > 0);
        let shared = Arc::new(Shared {
            game_id: game_id.to_string(),
            rules,
            state: Mutex::new(HubState {
                backfill_until: standing.map_or(0, |s| s.version),
                ..HubState::default()
            }),
            head: watch::channel(0).0,
        });
        let upstream = tokio::spawn(follow(
            self.session.clone(),
            Arc::clone(&self.referee),
            game_id,
            rules,
            standing.is_none(),
            Arc::clone(&shared),
        ));
        let hub = Arc::new(GameHub { shared, upstream });
        hubs.insert(game_id, Arc::downgrade(&hub));
        hub
    }

    /// Games followed now.
    pub(crate) fn followed(&self) -> usize {
        self.hubs
            .lock()
            .values()
            .filter(|h| h.strong_count() > 0)
            .count()
    }
}

/// The game as a spectator sees it, from the session.
async fn spectator_view(mut session: SessionClient, game_id: Uuid) -> Result<pb::GameView, Status> {
    session
        .get_game(pb::GetGameRequest {
            game_id: game_id.to_string(),
            viewer: pb::Viewer::Spectator as i32,
        })
        .await
        .map_err(crate::gateway::session_status)?
        .into_inner()
        .game
        .ok_or_else(|| hidden_front_api_error::internal("the session answered without a game"))
}

/// Who sits where in the game and where it stands now, from the session.
async fn look_up_seats(
    session: SessionClient,
    game_id: Uuid,
) -> Result<(Arc<Seats>, Standing), Status> {
    let view = spectator_view(session, game_id).await?;
    let standing = Standing {
        version: view.version,
        ended: view.phase == pb::Phase::Ended as i32,
    };
    let rules = Rules::parse(&view.rules).map_err(|e| {
        hidden_front_api_error::internal(format!("the session named unknown rules: {e}"))
    })?;
    let seats = Seats {
        south_player: view.south_player,
        north_player: view.north_player,
        rules,
    };
    Ok((Arc::new(seats), standing))
}

/// The first wait before following a game again after its upstream stream broke; it doubles
/// after each failure (with jitter, so the gateways that lost one session process do not all
/// come back at once) up to [`RETRY_MAX`], and starts over once an event arrives.
const RETRY_FIRST: Duration = Duration::from_millis(50);

/// The longest wait between two attempts to follow a game.
const RETRY_MAX: Duration = Duration::from_secs(5);

/// Follows the game's log upstream until it ends, reconnecting (from the next sequence number)
/// whenever the session stream breaks. Asks first where the game stands when `ask_standing`
/// (the hub was not told).
async fn follow(
    mut session: SessionClient,
    referee: Arc<dyn Referee>,
    game_id: Uuid,
    rules: Rules,
    ask_standing: bool,
    shared: Arc<Shared>,
) {
    let mut backoff = Backoff::new(RETRY_FIRST, RETRY_MAX).jittered();
    // Where the game stands now: everything up to here is backfill, not live traffic. If the
    // session cannot say, every event counts as live (the cautious choice for slow clients).
    if ask_standing
        && let Ok(view) = session
            .get_game(pb::GetGameRequest {
                game_id: game_id.to_string(),
                viewer: pb::Viewer::Spectator as i32,
            })
            .await
        && let Some(game) = view.into_inner().game
    {
        shared.state.lock().backfill_until = game.version;
    }
    loop {
        let next = shared.state.lock().log.len() as u64 + 1;
        match referee.watch(game_id, rules, next).await {
            Ok(mut stream) => {
                while let Some(item) = stream.next().await {
                    match item {
                        Ok(UpstreamItem::Unusable(status)) => {
                            tracing::error!(%game_id, error = %status, "upstream event unusable");
                            fail(&shared, status);
                            return;
                        }
                        Ok(item) => {
                            backoff.reset();
                            match append(&shared, item) {
                                Ok(true) => return,
                                Ok(false) => {}
                                Err(status) => {
                                    tracing::error!(%game_id, error = %status, "upstream event unusable");
                                    fail(&shared, status);
                                    return;
                                }
                            }
                        }
                        Err(status) => {
                            tracing::warn!(%game_id, error = %status, "upstream stream broke");
                            break;
                        }
                    }
                }
                if shared.state.lock().ended {
                    return;
                }
            }
            Err(status) if matches!(status.code(), Code::NotFound | Code::InvalidArgument) => {
                fail(&shared, status);
                return;
            }
            Err(status) => {
                tracing::warn!(%game_id, error = %status, "cannot follow game; retrying");
            }
        }
        backoff.wait().await;
    }
}

fn fail(shared: &Shared, status: Status) {
    shared.state.lock().failed = Some(status);
    // Wake the waiting connections so they see the failure.
    shared.head.send_modify(|_| {});
}

/// Adds one upstream event to the log, or takes the game's new status, and wakes the
/// connections. `Ok(true)` when the game has ended.
fn append(shared: &Shared, item: UpstreamItem) -> Result<bool, Status> {
    let (seq, event, trace_parent) = match item {
        UpstreamItem::Event {
            seq,
            event,
            trace_parent,
        } => (seq, event, trace_parent),
        UpstreamItem::Status(status) => {
            let ended = {
                let mut state = shared.state.lock();
                state.status = Some(status);
                state.status_message = None;
                state.statuses += 1;
                state.ended
            };
            shared.head.send_modify(|_| {});
            return Ok(ended);
        }
        UpstreamItem::Unusable(status) => return Err(status),
    };
    let ended = matches!(event, Event::Ended { .. });
    {
        let mut state = shared.state.lock();
        let expected = state.log.len() as u64 + 1;
        if seq < expected {
            return Ok(state.ended); // a duplicate after a reconnect
        }
        if seq > expected {
            return Err(hidden_front_api_error::internal(format!(
                "upstream skipped from {expected} to {seq}"
            )));
        }
        let entry = Arc::new(LogEntry {
            seq,
            event,
            received: Instant::now(),
            live: seq > state.backfill_until,
            trace_parent,
            encoded: Default::default(),
        });
        state.log.push(entry);
        if ended {
            // The log is whole from its first event (the hub follows from seq 1), so the game
            // it rebuilds is the ended game.
            let game = Game::replay(state.log.iter().map(|e| &e.event)).map_err(|e| {
                hidden_front_api_error::internal(format!(
                    "the log up to its end does not replay: {e}"
                ))
            })?;
            state.reveal = reveal(&game).map(Arc::new);
            state.ended = true;
        }
    }
    shared.head.send_replace(seq);
    Ok(ended)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::sync::Notify;

    /// Callers that ask while a lookup is in flight get its answer; `done` runs once; a caller
    /// that comes after the answer starts a lookup of its own.
    #[tokio::test]
    async fn lookups_in_flight_are_shared_and_end_with_their_answer() {
        let lookups = SharedLookups::<u8, u32>::new();
        let started = Arc::new(AtomicUsize::new(0));
        let done = AtomicUsize::new(0);
        let release = Arc::new(Notify::new());
        let start = || {
            let started = Arc::clone(&started);
            let release = Arc::clone(&release);
            move || async move {
                let n = started.fetch_add(1, Ordering::SeqCst) as u32 + 1;
                release.notified().await;
                n * 10
            }
        };
        let count_done = |_: &u32| {
            done.fetch_add(1, Ordering::SeqCst);
        };
        let first = lookups.get(1, start(), count_done);
        let second = lookups.get(1, start(), count_done);
        let other_key = lookups.get(2, start(), count_done);
        let release_all = async {
            // Both keys' lookups have started (and wait) before they are let go.
            while started.load(Ordering::SeqCst) < 2 {
                tokio::task::yield_now().await;
            }
            release.notify_waiters();
        };
        let (a, b, c, ()) = tokio::join!(first, second, other_key, release_all);
        assert_eq!(started.load(Ordering::SeqCst), 2, "one lookup per key");
        assert_eq!(done.load(Ordering::SeqCst), 2, "done once per lookup");
        assert_eq!(a, b, "the callers of key 1 share one answer");
        assert_ne!(a, c);
        assert!(lookups.in_flight.lock().is_empty());

        release.notify_one();
        let later = lookups.get(1, start(), count_done).await;
        assert_eq!(later, 30, "a caller after the answer starts a new lookup");
    }
}
