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

use crate::gateway::SessionClient;
use hidden_front_proto::v1 as pb;
use hidden_front_retry::Backoff;
use hidden_front_rules::{Event, Game, Reveal, Rules, reveal};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
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
}

struct Shared {
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

    /// A receiver that changes whenever the log grows (or the hub fails).
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.shared.head.subscribe()
    }
}

/// Every game this gateway follows, plus the seat cache.
pub(crate) struct Hubs {
    session: SessionClient,
    hubs: Mutex<HashMap<Uuid, Weak<GameHub>>>,
    seats: Mutex<HashMap<Uuid, Seats>>,
}

/// Seats cached at most; past it the cache starts over (a miss costs one session call).
const SEAT_CACHE_LIMIT: usize = 100_000;

impl Hubs {
    /// Hubs reading from `session`.
    pub(crate) fn new(session: SessionClient) -> Hubs {
        Hubs {
            session,
            hubs: Mutex::new(HashMap::new()),
            seats: Mutex::new(HashMap::new()),
        }
    }

    /// Who sits where in the game (`NOT_FOUND` for an unknown game).
    pub(crate) async fn seats(&self, game_id: Uuid) -> Result<Seats, Status> {
        Ok(self.seats_and_standing(game_id).await?.0)
    }

    /// [`Hubs::seats`], and where the game stands when that was asked of the session just now
    /// (a seat cache miss), so a new connection need not ask [`Hubs::has_ended`] again, nor its
    /// new hub ask for the version its backfill ends at: at a game's start both seats connect at
    /// once, and each question is a session read.
    pub(crate) async fn seats_and_standing(
        &self,
        game_id: Uuid,
    ) -> Result<(Seats, Option<Standing>), Status> {
        if let Some(seats) = self.seats.lock().get(&game_id) {
            return Ok((seats.clone(), None));
        }
        let view = self.spectator_view(game_id).await?;
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
        let mut cache = self.seats.lock();
        if cache.len() >= SEAT_CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(game_id, seats.clone());
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
        self.session
            .clone()
            .get_game(pb::GetGameRequest {
                game_id: game_id.to_string(),
                viewer: pb::Viewer::Spectator as i32,
            })
            .await?
            .into_inner()
            .game
            .ok_or_else(|| hidden_front_api_error::internal("the session answered without a game"))
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
            state: Mutex::new(HubState {
                backfill_until: standing.map_or(0, |s| s.version),
                ..HubState::default()
            }),
            head: watch::channel(0).0,
        });
        let upstream = tokio::spawn(follow(
            self.session.clone(),
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
        let request = pb::WatchGameRequest {
            game_id: game_id.to_string(),
            from_seq: next,
        };
        match session.watch_game(request).await {
            Ok(response) => {
                let mut stream = response.into_inner();
                loop {
                    match stream.message().await {
                        Ok(Some(item)) => {
                            backoff.reset();
                            match append(&shared, &rules, item) {
                                Ok(true) => return,
                                Ok(false) => {}
                                Err(status) => {
                                    tracing::error!(%game_id, error = %status, "upstream event unusable");
                                    fail(&shared, status);
                                    return;
                                }
                            }
                        }
                        Ok(None) => break,
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

/// Adds one upstream event to the log and wakes the connections. `Ok(true)` when the game has
/// ended.
fn append(shared: &Shared, rules: &Rules, item: pb::WatchGameResponse) -> Result<bool, Status> {
    let upstream = item.event.as_ref().ok_or_else(|| {
        hidden_front_api_error::internal("the session sent a watch item without its event")
    })?;
    let seq = upstream.seq;
    let event = hidden_front_wire::engine_event_from_proto(rules, upstream).map_err(|e| {
        hidden_front_api_error::internal(format!("event {seq} does not decode: {e}"))
    })?;
    let ended = matches!(event, Event::Ended { .. });
    {
        let mut state = shared.state.lock();
        let entry = Arc::new(LogEntry {
            seq,
            event,
            received: Instant::now(),
            live: seq > state.backfill_until,
            trace_parent: item.trace_parent,
        });
        let expected = state.log.len() as u64 + 1;
        if seq < expected {
            return Ok(state.ended); // a duplicate after a reconnect
        }
        if seq > expected {
            return Err(hidden_front_api_error::internal(format!(
                "upstream skipped from {expected} to {seq}"
            )));
        }
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
