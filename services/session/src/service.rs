//! The `SessionService` gRPC implementation.

use crate::errors::{
    check_text, game_error_status, invalid_field, missing_field, store_error_status, wire_status,
};
use crate::metered::MeteredStore;
use crate::timers::{self, FireCheck};
use hidden_front_api_error::text::TextKind;
use hidden_front_api_error::{ApiError, Reason, quote};
use hidden_front_metrics_names as names;
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_server::SessionService as SessionApi;
use hidden_front_rules::{
    Command, Event, Game, GameRng, Phase, Reveal, Rules, Side, Viewer, project, reveal, view,
};
use hidden_front_store::timers::{from_unix_millis, unix_millis};
use hidden_front_store::{
    Append, CommandRecord, GameMeta, GameRecord, GameStore, Presence, StoreError, TimeControl,
    Timer, TimerKind, TimerSlot,
};
use hidden_front_wire as wire;
use prost::Message;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tokio_stream::Stream;
use tonic::{Request, Response, Status};
use uuid::Uuid;

/// How many times a command is judged again after losing a race to another replica.
const MAX_ATTEMPTS: usize = 8;
/// Events fetched per store read while streaming.
const WATCH_PAGE: usize = 256;

/// Settings of the session service.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// How long a presence report holds when the reporter gives no lease.
    pub default_presence_lease: Duration,
    /// Games kept in the process cache (a cache miss only costs a store read).
    pub cache_capacity: usize,
    /// The session's clock: the only clock deadlines are judged by.
    pub clock: SessionClock,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            default_presence_lease: Duration::from_secs(30),
            cache_capacity: 10_000,
            clock: SessionClock::system(),
        }
    }
}

/// Where the session reads the time: the system clock in production; tests substitute a clock
/// they move by hand, so deadlines can pass without waiting for them.
#[derive(Clone)]
pub struct SessionClock(Arc<dyn Fn() -> SystemTime + Send + Sync>);

impl SessionClock {
    /// The system's wall clock.
    pub fn system() -> SessionClock {
        SessionClock(Arc::new(SystemTime::now))
    }

    /// A clock reading `now` (for tests).
    pub fn from_fn(now: impl Fn() -> SystemTime + Send + Sync + 'static) -> SessionClock {
        SessionClock(Arc::new(now))
    }

    /// The time now.
    pub fn now(&self) -> SystemTime {
        (self.0)()
    }
}

impl std::fmt::Debug for SessionClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionClock")
    }
}

/// The referee service: judges commands with the engine and keeps games in a [`GameStore`].
pub struct SessionService {
    store: Arc<dyn GameStore>,
    cache: Mutex<HashMap<Uuid, GameRecord>>,
    config: SessionConfig,
}

/// A parsed [`pb::CommandContext`].
struct Context {
    game_id: Uuid,
    side: Side,
    key: String,
    expected_version: Option<u64>,
}

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::WatchGameResponse, Status>> + Send>>;

fn parse_game_id(field: &str, text: &str) -> Result<Uuid, Status> {
    wire::game_id_from_proto(field, text).map_err(wire_status)
}

fn parse_context(context: Option<pb::CommandContext>) -> Result<Context, Status> {
    let context = context.ok_or_else(|| missing_field("context"))?;
    let game_id = parse_game_id("context.game_id", &context.game_id)?;
    let side = wire::side_from_proto("context.side", context.side).map_err(wire_status)?;
    if context.idempotency_key.is_empty() {
        return Err(invalid_field(
            "context.idempotency_key",
            "is required: a unique key per command makes retries safe",
        ));
    }
    check_text(
        "context.idempotency_key",
        &context.idempotency_key,
        TextKind::Key,
    )?;
    Ok(Context {
        game_id,
        side,
        key: format!("{}:{}", side.name(), context.idempotency_key),
        expected_version: context.expected_version,
    })
}

/// A fresh random source per command, seeded from the OS (through UUID v4's generator).
fn fresh_rng() -> GameRng {
    let (a, b) = Uuid::new_v4().as_u64_pair();
    GameRng::from_seed(a ^ b.rotate_left(32))
}

fn time_control_from_proto(tc: Option<pb::TimeControl>) -> Result<TimeControl, Status> {
    let Some(tc) = tc else {
        return Ok(TimeControl::online());
    };
    match tc.name.as_str() {
        "" | "online" => Ok(TimeControl::online()),
        "relaxed" => Ok(TimeControl::relaxed()),
        "custom" => {
            for (field, value) in [
                ("time_control.deployment_seconds", tc.deployment_seconds),
                ("time_control.move_seconds", tc.move_seconds),
                ("time_control.reconnect_seconds", tc.reconnect_seconds),
            ] {
                if !(1..=86_400).contains(&value) {
                    return Err(invalid_field(
                        field,
                        format!("must be between 1 and 86400 seconds, got {value}"),
                    ));
                }
            }
            Ok(TimeControl {
                name: "custom".into(),
                deployment_seconds: tc.deployment_seconds,
                move_seconds: tc.move_seconds,
                reconnect_seconds: tc.reconnect_seconds,
            })
        }
        other => Err(invalid_field(
            "time_control.name",
            format!("{} is not one of online, relaxed, custom", quote(other)),
        )),
    }
}

/// The wire form of a time control.
pub(crate) fn time_control_to_proto(tc: &TimeControl) -> pb::TimeControl {
    pb::TimeControl {
        name: tc.name.clone(),
        deployment_seconds: tc.deployment_seconds,
        move_seconds: tc.move_seconds,
        reconnect_seconds: tc.reconnect_seconds,
    }
}

/// The `phase` label value of a phase.
fn phase_label(phase: Phase) -> &'static str {
    match phase {
        Phase::Deployment => names::PHASES[0],
        Phase::Play => names::PHASES[1],
        Phase::Ended => names::PHASES[2],
    }
}

/// Moves a game from one phase to another in the games-by-phase gauge (`from: None`: a new game).
fn count_phase_change(from: Option<Phase>, to: Phase) {
    if from == Some(to) {
        return;
    }
    if let Some(from) = from {
        metrics::gauge!(names::GAMES, names::PHASE => phase_label(from)).decrement(1.0);
    }
    metrics::gauge!(names::GAMES, names::PHASE => phase_label(to)).increment(1.0);
}

/// Whether an error is the session refusing the command (the caller's doing), not a failure.
fn is_refusal(status: &Status) -> bool {
    use tonic::Code;
    matches!(
        status.code(),
        Code::InvalidArgument
            | Code::FailedPrecondition
            | Code::Aborted
            | Code::NotFound
            | Code::PermissionDenied
            | Code::OutOfRange
            | Code::AlreadyExists
    )
}

/// The `outcome` label value of a command's answer.
fn outcome_of(result: &Result<pb::CommandResult, Status>) -> &'static str {
    match result {
        Ok(answer) if answer.replayed => names::REPLAYED,
        Ok(_) => names::OK,
        Err(status) if is_refusal(status) => names::REFUSED,
        Err(_) => names::ERROR,
    }
}

fn validate_player(field: &str, player: &str) -> Result<(), Status> {
    if player.trim().is_empty() {
        return Err(missing_field(field));
    }
    check_text(field, player, TextKind::Id)
}

impl SessionService {
    /// A session service over `store` (its failures and append latency are recorded as metrics).
    pub fn new(store: Arc<dyn GameStore>, config: SessionConfig) -> SessionService {
        SessionService {
            store: Arc::new(MeteredStore::new(store)),
            cache: Mutex::new(HashMap::new()),
            config,
        }
    }

    fn cached(&self, game_id: Uuid) -> Option<GameRecord> {
        self.cache
            .lock()
            .expect("session cache lock")
            .get(&game_id)
            .cloned()
    }

    fn remember(&self, record: GameRecord) {
        let mut cache = self.cache.lock().expect("session cache lock");
        if cache.len() >= self.config.cache_capacity && !cache.contains_key(&record.meta.game_id) {
            // Ended games are the cheapest to forget; otherwise forget an arbitrary one.
            let victim = cache
                .iter()
                .find(|(_, r)| r.game.phase() == Phase::Ended)
                .or_else(|| cache.iter().next())
                .map(|(id, _)| *id);
            if let Some(id) = victim {
                cache.remove(&id);
            }
        }
        cache.insert(record.meta.game_id, record);
    }

    fn forget(&self, game_id: Uuid) {
        self.cache
            .lock()
            .expect("session cache lock")
            .remove(&game_id);
    }

    async fn load(&self, game_id: Uuid, fresh: bool) -> Result<GameRecord, Status> {
        if !fresh && let Some(record) = self.cached(game_id) {
            return Ok(record);
        }
        let record = self
            .store
            .load(game_id)
            .await
            .map_err(|e| store_error_status(&e))?
            .ok_or_else(|| {
                Status::from(ApiError::new(
                    Reason::GameNotFound,
                    format!("game {game_id} not found"),
                ))
            })?;
        self.remember(record.clone());
        Ok(record)
    }

    /// The answer stored for a key, marked as replayed.
    fn replayed(bytes: &[u8]) -> Result<pb::CommandResult, Status> {
        let mut result = pb::CommandResult::decode(bytes).map_err(|_| {
            Status::from(ApiError::new(
                Reason::CorruptData,
                "stored command answer cannot be decoded",
            ))
        })?;
        result.replayed = true;
        Ok(result)
    }

    /// Runs one command through the judge-and-append loop described in the crate docs.
    /// `make` turns the loaded game into the engine command (it may refuse, e.g. a bad square).
    ///
    /// Its span carries the game, the seat and the versions only: never the command's squares'
    /// pieces nor the events, which may reveal hidden ranks.
    #[tracing::instrument(
        name = "session.command",
        skip_all,
        fields(
            game_id = %ctx.game_id,
            side = ctx.side.name(),
            expected_version = ctx.expected_version,
            version = tracing::field::Empty,
            event_count = tracing::field::Empty,
            attempts = tracing::field::Empty,
        )
    )]
    async fn execute(
        &self,
        ctx: &Context,
        make: impl Fn(&GameRecord) -> Result<Command, Status>,
    ) -> Result<pb::CommandResult, Status> {
        let store_status = |e: StoreError| store_error_status(&e);
        for attempt in 0..MAX_ATTEMPTS {
            // No separate look for an earlier answer first (a round trip on every command): a
            // retry of an applied command is either refused by the judge, and `refuse` finds
            // its answer, or its append meets the stored key and returns that answer.
            // The first attempt may judge against the cache; every later one reads the store.
            let fresh = attempt > 0;
            let record = self.load(ctx.game_id, fresh).await?;
            let (game, events) = match self.judge(ctx, &record, &make) {
                Ok(verdict) => verdict,
                // The cache may be behind another replica: judge again on the stored game
                // before refusing.
                Err(_) if !fresh => continue,
                Err(refusal) => return self.refuse(ctx, refusal).await,
            };
            let result = self.result_for(&record, &game, &events, Viewer::player(ctx.side));
            let bytes = result.encode_to_vec();
            let timer_change = self.timer_change(&record, &game, &events).await?;
            match self
                .store
                .append_armed(Append {
                    game_id: ctx.game_id,
                    expected_version: record.version,
                    events: &events,
                    game: &game,
                    command: Some(CommandRecord {
                        key: &ctx.key,
                        response: &bytes,
                    }),
                    timers: &timer_change,
                    trace_parent: hidden_front_telemetry::current_traceparent().as_deref(),
                })
                .await
            {
                Ok(version) => {
                    let span = tracing::Span::current();
                    span.record("version", version);
                    span.record("event_count", events.len());
                    span.record("attempts", attempt + 1);
                    count_phase_change(Some(record.game.phase()), game.phase());
                    self.remember(GameRecord {
                        meta: record.meta,
                        version,
                        game,
                    });
                    return Ok(result);
                }
                Err(StoreError::VersionConflict { .. }) => {
                    self.forget(ctx.game_id);
                    if let Some(expected) = ctx.expected_version {
                        let refusal = ApiError::new(
                            Reason::StaleVersion,
                            format!(
                                "the game moved past the expected version {expected}: reload and retry"
                            ),
                        )
                        .into();
                        return self.refuse(ctx, refusal).await;
                    }
                }
                Err(StoreError::DuplicateCommand { response, .. }) => {
                    self.forget(ctx.game_id);
                    return Self::replayed(&response);
                }
                Err(e) => {
                    self.forget(ctx.game_id);
                    return Err(store_status(e));
                }
            }
        }
        Err(ApiError::new(
            Reason::Contended,
            "the game changed too often while this command was judged; retry with the same key",
        )
        .into())
    }

    /// The deadlines the append of `events` (taking `record` to `after`) starts or ends; see
    /// [`timers::plan`].
    async fn timer_change(
        &self,
        record: &GameRecord,
        after: &Game,
        events: &[Event],
    ) -> Result<hidden_front_store::TimerChange, Status> {
        let now = self.config.clock.now();
        let absent = if timers::needs_presence(events) {
            let present = self
                .store
                .presence(record.meta.game_id, now)
                .await
                .map_err(|e| store_error_status(&e))?
                .connected();
            [!present[0], !present[1]]
        } else {
            [false; 2]
        };
        Ok(timers::plan(
            record.meta.game_id,
            &record.meta.time_control,
            after,
            events,
            record.version + events.len() as u64,
            now,
            absent,
        ))
    }

    /// The stored answer to this command, if an earlier attempt with its key was applied.
    async fn stored_answer(&self, ctx: &Context) -> Result<Option<pb::CommandResult>, Status> {
        match self
            .store
            .command_response(ctx.game_id, &ctx.key)
            .await
            .map_err(|e| store_error_status(&e))?
        {
            Some(bytes) => Ok(Some(Self::replayed(&bytes)?)),
            None => Ok(None),
        }
    }

    /// Before refusing, one last look for an earlier attempt of the same command that committed
    /// meanwhile (a retry racing its original): its answer wins over the refusal.
    async fn refuse(&self, ctx: &Context, refusal: Status) -> Result<pb::CommandResult, Status> {
        match self.stored_answer(ctx).await? {
            Some(answer) => Ok(answer),
            None => Err(refusal),
        }
    }

    /// Checks the expected version and judges the command on `record`'s game: the game after
    /// it and the events it caused, or the refusal.
    fn judge(
        &self,
        ctx: &Context,
        record: &GameRecord,
        make: &impl Fn(&GameRecord) -> Result<Command, Status>,
    ) -> Result<(Game, Vec<Event>), Status> {
        if let Some(expected) = ctx.expected_version
            && expected != record.version
        {
            return Err(ApiError::new(
                Reason::StaleVersion,
                format!(
                    "the game is at version {}, not the expected {expected}: reload and retry",
                    record.version
                ),
            )
            .into());
        }
        let command = make(record)?;
        let mut game = record.game.clone();
        let events = game
            .handle(&command, &mut fresh_rng())
            .map_err(|e| game_error_status(&e))?;
        Ok((game, events))
    }

    /// The answer to a command: its events as `viewer` sees them, with their sequence numbers.
    /// Each event is shown as a live subscriber is shown it (the gateway's stream), so the two
    /// agree: the events before a game's end hide what they hid, and the end reveals everything
    /// (`GameEnded` carries both deployments and every piece).
    fn result_for(
        &self,
        record: &GameRecord,
        after: &Game,
        events: &[Event],
        viewer: Viewer,
    ) -> pb::CommandResult {
        let end = reveal(after);
        let rules = after.rules();
        let game_id = record.meta.game_id.to_string();
        pb::CommandResult {
            version: record.version + events.len() as u64,
            events: events
                .iter()
                .enumerate()
                .filter_map(|(i, e)| {
                    let shown_end = end.as_ref().filter(|_| matches!(e, Event::Ended { .. }));
                    project(e, viewer, shown_end).map(|v| {
                        wire::game_event(rules, &game_id, record.version + 1 + i as u64, &v)
                    })
                })
                .collect(),
            replayed: false,
        }
    }

    /// Runs a player's command of `kind` (a label value of [`names::COMMAND_KINDS`]) and counts
    /// its outcome.
    async fn command(
        &self,
        kind: &'static str,
        context: Option<pb::CommandContext>,
        make: impl Fn(&GameRecord, Side) -> Result<Command, Status>,
    ) -> Result<pb::CommandResult, Status> {
        let result = match parse_context(context) {
            Ok(ctx) => {
                let side = ctx.side;
                self.execute(&ctx, |record| make(record, side)).await
            }
            Err(status) => Err(status),
        };
        metrics::counter!(names::COMMANDS_TOTAL, names::KIND => kind, names::OUTCOME => outcome_of(&result))
            .increment(1);
        result
    }

    fn rules_of(record: &GameRecord) -> Rules {
        *record.game.rules()
    }

    async fn apply_timer(
        &self,
        request: pb::ApplyTimerRequest,
    ) -> Result<pb::ApplyTimerResponse, Status> {
        let game_id = parse_game_id("game_id", &request.game_id)?;
        let side = wire::side_from_proto("side", request.side).map_err(wire_status)?;
        let kind = pb::TimerKind::try_from(request.kind)
            .ok()
            .filter(|k| *k != pb::TimerKind::Unspecified)
            .ok_or_else(|| {
                invalid_field(
                    "kind",
                    "must be TIMER_KIND_DEPLOYMENT, TIMER_KIND_MOVE or TIMER_KIND_RECONNECT",
                )
            })?;
        if request.deadline_unix_millis == 0 {
            return Err(invalid_field(
                "deadline_unix_millis",
                "is required: the deadline the timer was armed with",
            ));
        }
        if request.deadline_unix_millis > i64::MAX as u64 / 2 {
            return Err(invalid_field(
                "deadline_unix_millis",
                "is not a time this server can represent",
            ));
        }
        let fired = Timer {
            game_id,
            kind: match kind {
                pb::TimerKind::Deployment => TimerKind::Deployment,
                pb::TimerKind::Move => TimerKind::Move,
                _ => TimerKind::Reconnect,
            },
            side,
            armed_version: request.armed_version,
            fire_at: from_unix_millis(request.deadline_unix_millis),
        };
        // The first fence: the fire must be the timer the game's slot holds now. A timer that
        // was replaced, disarmed or already applied is stale, and a live one that is not due by
        // this clock is refused so the clock tries again.
        let stored = self
            .store
            .timers_of(game_id)
            .await
            .map_err(|e| store_error_status(&e))?
            .into_iter()
            .find(|t| t.slot() == fired.slot());
        let record = self.load(game_id, true).await?;
        let stale = pb::ApplyTimerResponse {
            applied: false,
            version: record.version,
        };
        match timers::check_fire(&fired, stored.as_ref(), self.config.clock.now()) {
            FireCheck::Apply => {}
            FireCheck::Stale => return Ok(stale),
            FireCheck::NotDue(at) => {
                return Err(ApiError::new(
                    Reason::TimerEarly,
                    format!(
                        "the timer is not due until {} ms after the Unix epoch",
                        unix_millis(at)
                    ),
                )
                .into());
            }
        }
        // The second fence: the game itself.
        let game = &record.game;
        let command = match kind {
            pb::TimerKind::Deployment => {
                // One deployment phase per game: its deadline holds across swaps and drafts.
                if game.phase() != Phase::Deployment {
                    return Ok(stale);
                }
                let present = self
                    .store
                    .presence(game_id, self.config.clock.now())
                    .await
                    .map_err(|e| store_error_status(&e))?
                    .connected();
                Command::DeploymentDeadline { present }
            }
            pb::TimerKind::Move => {
                if record.version != request.armed_version
                    || game.phase() != Phase::Play
                    || game.to_move() != side
                {
                    return Ok(stale);
                }
                Command::Timeout { side }
            }
            pb::TimerKind::Reconnect => {
                // A reconnect deadline holds across moves (the clock keeps running while the
                // player is away): it applies if the player is still away and the game running.
                // Away is judged at the deadline itself when the fire comes a little early: the
                // timer was armed to be due only once every connected lease then known had
                // lapsed, and any later report re-armed the slot (so this fire would be stale).
                let judged_at = self.config.clock.now().max(fired.fire_at);
                let present = self
                    .store
                    .presence(game_id, judged_at)
                    .await
                    .map_err(|e| store_error_status(&e))?
                    .connected();
                if game.phase() != Phase::Play || present[side.index()] {
                    return Ok(stale);
                }
                Command::Disconnected { side }
            }
            pb::TimerKind::Unspecified => unreachable!("filtered above"),
        };
        let ctx = Context {
            game_id,
            side,
            key: format!(
                "timer:{}:{}:{}:{}",
                kind.as_str_name(),
                request.armed_version,
                side.name(),
                request.deadline_unix_millis
            ),
            expected_version: Some(record.version),
        };
        match self.execute(&ctx, |_| Ok(command.clone())).await {
            Ok(result) => Ok(pb::ApplyTimerResponse {
                applied: !result.replayed,
                version: result.version,
            }),
            // Lost a race with a move: the timer is stale by definition.
            Err(status) if status.code() == tonic::Code::Aborted => {
                let version = self.load(game_id, true).await?.version;
                Ok(pb::ApplyTimerResponse {
                    applied: false,
                    version,
                })
            }
            Err(status) => Err(status),
        }
    }

    /// Arms `side`'s time to come back after a presence report heard at `reported_at`, with the
    /// game's presence after it: counted from the report, due no earlier than the side's
    /// connected leases end (see [`timers::reconnect_after_report`]).
    async fn arm_reconnect(
        &self,
        record: &GameRecord,
        side: Side,
        reported_at: SystemTime,
        presence: Presence,
    ) -> Result<(), Status> {
        if record.game.phase() == Phase::Ended {
            return Ok(());
        }
        let timer = timers::reconnect_after_report(
            record.meta.game_id,
            &record.meta.time_control,
            side,
            record.version,
            reported_at,
            presence.connected_until[side.index()],
        );
        self.store
            .arm_timer(&timer)
            .await
            .map_err(|e| store_error_status(&e))
    }

    /// The feed of ended games, as [`pb::EndedGame`]s.
    async fn ended_games(
        &self,
        request: pb::ListEndedGamesRequest,
    ) -> Result<pb::ListEndedGamesResponse, Status> {
        let limit = match request.limit {
            0 => 100,
            n if n <= 1000 => n as usize,
            n => {
                return Err(invalid_field(
                    "limit",
                    format!("must be at most 1000, got {n}"),
                ));
            }
        };
        let ended = self
            .store
            .ended_games(request.after_cursor, limit)
            .await
            .map_err(|e| store_error_status(&e))?;
        let games = ended
            .into_iter()
            .map(|entry| {
                let meta = &entry.record.meta;
                let game = &entry.record.game;
                let lost = game.seats_lost();
                pb::EndedGame {
                    cursor: entry.cursor,
                    game_id: meta.game_id.to_string(),
                    rules: meta.rules.clone(),
                    time_control: Some(time_control_to_proto(&meta.time_control)),
                    south_player: meta.south_player.clone(),
                    north_player: meta.north_player.clone(),
                    outcome: game.outcome().map(wire::outcome_to_proto),
                    seats_lost: Side::BOTH
                        .into_iter()
                        .filter(|side| lost[side.index()])
                        .map(|side| wire::side_to_proto(side) as i32)
                        .collect(),
                    plies: game.plies(),
                }
            })
            .collect();
        Ok(pb::ListEndedGamesResponse { games })
    }
}

#[tonic::async_trait]
impl SessionApi for SessionService {
    async fn create_game(
        &self,
        request: Request<pb::CreateGameRequest>,
    ) -> Result<Response<pb::CreateGameResponse>, Status> {
        let request = request.into_inner();
        validate_player("south_player", &request.south_player)?;
        validate_player("north_player", &request.north_player)?;
        if request.south_player == request.north_player {
            return Err(invalid_field(
                "north_player",
                "must be a different player from south_player",
            ));
        }
        check_text("idempotency_key", &request.idempotency_key, TextKind::Key)?;
        check_text("rules", &request.rules, TextKind::Rules)?;
        let rules_name = if request.rules.is_empty() {
            hidden_front_rules::rules::DEFAULT_RULES
        } else {
            request.rules.as_str()
        };
        let rules = Rules::parse(rules_name).map_err(|e| {
            Status::from(
                ApiError::new(Reason::UnknownRules, format!("rules: {e}"))
                    .with_violation("rules", e.to_string()),
            )
        })?;
        let time_control = time_control_from_proto(request.time_control)?;
        let mut rng = fresh_rng();
        let first_mover = if rng.below(2) == 0 {
            Side::South
        } else {
            Side::North
        };
        let (game, events) = Game::create(rules, first_mover, &mut rng);
        let meta = GameMeta {
            game_id: Uuid::now_v7(),
            rules: rules.name(),
            time_control,
            south_player: request.south_player,
            north_player: request.north_player,
        };
        let key = if request.idempotency_key.is_empty() {
            Uuid::new_v4().to_string()
        } else {
            request.idempotency_key
        };
        // The deployment deadline is durable with the game itself.
        let deadline = timers::deployment_timer(
            meta.game_id,
            &meta.time_control,
            events.len() as u64,
            self.config.clock.now(),
        );
        let created = self
            .store
            .create_armed(&key, &meta, &events, &game, &[deadline])
            .await
            .map_err(|e| store_error_status(&e))?;
        if !created.replayed {
            count_phase_change(None, game.phase());
        }
        let record = self.load(created.game_id, created.replayed).await?;
        tracing::info!(game_id = %created.game_id, rules = %record.meta.rules, replayed = created.replayed, "game created");
        Ok(Response::new(pb::CreateGameResponse {
            game_id: created.game_id.to_string(),
            version: if created.replayed {
                record.version
            } else {
                events.len() as u64
            },
            first_mover: wire::side_to_proto(record.game.first_mover()) as i32,
            replayed: created.replayed,
        }))
    }

    async fn reshuffle_deployment(
        &self,
        request: Request<pb::ReshuffleDeploymentRequest>,
    ) -> Result<Response<pb::ReshuffleDeploymentResponse>, Status> {
        let result = self
            .command("reshuffle", request.into_inner().context, |_, side| {
                Ok(Command::Reshuffle { side })
            })
            .await?;
        Ok(Response::new(pb::ReshuffleDeploymentResponse {
            result: Some(result),
        }))
    }

    async fn swap_pieces(
        &self,
        request: Request<pb::SwapPiecesRequest>,
    ) -> Result<Response<pb::SwapPiecesResponse>, Status> {
        let request = request.into_inner();
        let (a, b) = (request.square_a, request.square_b);
        let result = self
            .command("swap", request.context, |record, side| {
                let rules = Self::rules_of(record);
                Ok(Command::Swap {
                    side,
                    a: wire::square_from_proto(&rules, "square_a", &a).map_err(wire_status)?,
                    b: wire::square_from_proto(&rules, "square_b", &b).map_err(wire_status)?,
                })
            })
            .await?;
        Ok(Response::new(pb::SwapPiecesResponse {
            result: Some(result),
        }))
    }

    async fn set_deployment(
        &self,
        request: Request<pb::SetDeploymentRequest>,
    ) -> Result<Response<pb::SetDeploymentResponse>, Status> {
        let request = request.into_inner();
        let deployment = request
            .deployment
            .ok_or_else(|| missing_field("deployment"))?;
        let result = self
            .command("set_deployment", request.context, |record, side| {
                if deployment.side != pb::Side::Unspecified as i32
                    && deployment.side != wire::side_to_proto(side) as i32
                {
                    return Err(invalid_field(
                        "deployment.side",
                        "must be the acting side (or unspecified)",
                    ));
                }
                let rules = Self::rules_of(record);
                Ok(Command::SetDeployment {
                    deployment: wire::deployment_from_proto(&rules, side, &deployment.placements)
                        .map_err(wire_status)?,
                })
            })
            .await?;
        Ok(Response::new(pb::SetDeploymentResponse {
            result: Some(result),
        }))
    }

    async fn confirm_deployment(
        &self,
        request: Request<pb::ConfirmDeploymentRequest>,
    ) -> Result<Response<pb::ConfirmDeploymentResponse>, Status> {
        let result = self
            .command("confirm", request.into_inner().context, |_, side| {
                Ok(Command::Confirm { side })
            })
            .await?;
        Ok(Response::new(pb::ConfirmDeploymentResponse {
            result: Some(result),
        }))
    }

    async fn submit_move(
        &self,
        request: Request<pb::SubmitMoveRequest>,
    ) -> Result<Response<pb::SubmitMoveResponse>, Status> {
        let started = Instant::now();
        let request = request.into_inner();
        let mv = request.r#move;
        let result = self
            .command("move", request.context, |record, side| {
                let rules = Self::rules_of(record);
                Ok(Command::Move {
                    side,
                    mv: wire::move_from_proto(&rules, mv.as_ref()).map_err(wire_status)?,
                })
            })
            .await;
        metrics::histogram!(names::MOVE_DURATION_SECONDS).record(started.elapsed().as_secs_f64());
        match &result {
            Ok(answer) if !answer.replayed => {
                metrics::counter!(names::MOVES_TOTAL, names::RESULT => names::OK).increment(1);
            }
            Err(status) if is_refusal(status) => {
                metrics::counter!(names::MOVES_TOTAL, names::RESULT => names::REFUSED).increment(1);
            }
            _ => {}
        }
        let result = result?;
        Ok(Response::new(pb::SubmitMoveResponse {
            result: Some(result),
        }))
    }

    async fn offer_draw(
        &self,
        request: Request<pb::OfferDrawRequest>,
    ) -> Result<Response<pb::OfferDrawResponse>, Status> {
        let result = self
            .command("offer_draw", request.into_inner().context, |_, side| {
                Ok(Command::OfferDraw { side })
            })
            .await?;
        Ok(Response::new(pb::OfferDrawResponse {
            result: Some(result),
        }))
    }

    async fn answer_draw(
        &self,
        request: Request<pb::AnswerDrawRequest>,
    ) -> Result<Response<pb::AnswerDrawResponse>, Status> {
        let request = request.into_inner();
        let accept = request.accept;
        let result = self
            .command("answer_draw", request.context, |_, side| {
                Ok(Command::AnswerDraw { side, accept })
            })
            .await?;
        Ok(Response::new(pb::AnswerDrawResponse {
            result: Some(result),
        }))
    }

    async fn resign(
        &self,
        request: Request<pb::ResignRequest>,
    ) -> Result<Response<pb::ResignResponse>, Status> {
        let result = self
            .command("resign", request.into_inner().context, |_, side| {
                Ok(Command::Resign { side })
            })
            .await?;
        Ok(Response::new(pb::ResignResponse {
            result: Some(result),
        }))
    }

    async fn apply_timer(
        &self,
        request: Request<pb::ApplyTimerRequest>,
    ) -> Result<Response<pb::ApplyTimerResponse>, Status> {
        let result = SessionService::apply_timer(self, request.into_inner()).await;
        let outcome = match &result {
            Ok(answer) if answer.applied => names::OK,
            // A stale timer (or one already applied) changes nothing.
            Ok(_) => names::REFUSED,
            Err(status) if is_refusal(status) => names::REFUSED,
            Err(_) => names::ERROR,
        };
        metrics::counter!(names::COMMANDS_TOTAL, names::KIND => "timer", names::OUTCOME => outcome)
            .increment(1);
        Ok(Response::new(result?))
    }

    async fn report_presence(
        &self,
        request: Request<pb::ReportPresenceRequest>,
    ) -> Result<Response<pb::ReportPresenceResponse>, Status> {
        let request = request.into_inner();
        let game_id = parse_game_id("game_id", &request.game_id)?;
        let side = wire::side_from_proto("side", request.side).map_err(wire_status)?;
        if request.gateway_id.is_empty() {
            return Err(missing_field("gateway_id"));
        }
        check_text("gateway_id", &request.gateway_id, TextKind::Id)?;
        let lease = match request.lease_seconds {
            0 => self.config.default_presence_lease,
            s if s <= 3600 => Duration::from_secs(u64::from(s)),
            s => {
                return Err(invalid_field(
                    "lease_seconds",
                    format!("must be at most 3600, got {s}"),
                ));
            }
        };
        // The game must exist: presence for unknown games would grow the table without bound.
        let record = self.load(game_id, false).await?;
        let now = self.config.clock.now();
        let presence = self
            .store
            .report_presence(
                game_id,
                side,
                &request.gateway_id,
                request.connected,
                now,
                now + lease,
            )
            .await
            .map_err(|e| store_error_status(&e))?;
        self.arm_reconnect(&record, side, now, presence).await?;
        let connected = presence.connected();
        Ok(Response::new(pb::ReportPresenceResponse {
            south_connected: connected[0],
            north_connected: connected[1],
        }))
    }

    async fn get_game(
        &self,
        request: Request<pb::GetGameRequest>,
    ) -> Result<Response<pb::GetGameResponse>, Status> {
        let request = request.into_inner();
        let game_id = parse_game_id("game_id", &request.game_id)?;
        let viewer = wire::viewer_from_proto("viewer", request.viewer).map_err(wire_status)?;
        let record = self.load(game_id, true).await?;
        let connected = self
            .store
            .presence(game_id, self.config.clock.now())
            .await
            .map_err(|e| store_error_status(&e))?
            .connected();
        let id = game_id.to_string();
        let mut game_view = wire::game_view(
            &view(&record.game, viewer),
            wire::Seats {
                game_id: &id,
                south_player: &record.meta.south_player,
                north_player: &record.meta.north_player,
            },
            record.version,
            time_control_to_proto(&record.meta.time_control),
        );
        game_view.south_connected = connected[0];
        game_view.north_connected = connected[1];
        // The deadlines are public: both players see both clocks.
        let timers = self
            .store
            .timers_of(game_id)
            .await
            .map_err(|e| store_error_status(&e))?;
        for timer in timers {
            let millis = timer.fire_at_unix_millis();
            match timer.slot() {
                TimerSlot::Turn => game_view.turn_deadline_unix_millis = millis,
                TimerSlot::Reconnect(side) => {
                    let away = record.game.phase() == Phase::Play && !connected[side.index()];
                    if away {
                        match side {
                            Side::South => game_view.south_away_deadline_unix_millis = millis,
                            Side::North => game_view.north_away_deadline_unix_millis = millis,
                        }
                    }
                }
            }
        }
        Ok(Response::new(pb::GetGameResponse {
            game: Some(game_view),
        }))
    }

    async fn list_games(
        &self,
        request: Request<pb::ListGamesRequest>,
    ) -> Result<Response<pb::ListGamesResponse>, Status> {
        let request = request.into_inner();
        validate_player("player", &request.player)?;
        let limit = match request.limit {
            0 => 50,
            n if n <= 500 => n as usize,
            n => {
                return Err(invalid_field(
                    "limit",
                    format!("must be at most 500, got {n}"),
                ));
            }
        };
        let summaries = self
            .store
            .games_of_player(&request.player, limit)
            .await
            .map_err(|e| store_error_status(&e))?;
        let mut games = Vec::with_capacity(summaries.len());
        for summary in summaries {
            if request.active_only && summary.phase == Phase::Ended {
                continue;
            }
            let meta = &summary.meta;
            let (seat, opponent) = if meta.south_player == request.player {
                (Side::South, &meta.north_player)
            } else {
                (Side::North, &meta.south_player)
            };
            let outcome = if summary.phase == Phase::Ended {
                self.load(meta.game_id, false)
                    .await?
                    .game
                    .outcome()
                    .map(wire::outcome_to_proto)
            } else {
                None
            };
            games.push(pb::GameSummary {
                game_id: meta.game_id.to_string(),
                seat: wire::side_to_proto(seat) as i32,
                phase: wire::phase_to_proto(summary.phase) as i32,
                opponent: opponent.clone(),
                outcome,
                rules: meta.rules.clone(),
                version: summary.version,
            });
        }
        Ok(Response::new(pb::ListGamesResponse { games }))
    }

    async fn list_ended_games(
        &self,
        request: Request<pb::ListEndedGamesRequest>,
    ) -> Result<Response<pb::ListEndedGamesResponse>, Status> {
        self.ended_games(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn list_legal_moves(
        &self,
        request: Request<pb::ListLegalMovesRequest>,
    ) -> Result<Response<pb::ListLegalMovesResponse>, Status> {
        let request = request.into_inner();
        let game_id = parse_game_id("game_id", &request.game_id)?;
        let side = wire::side_from_proto("side", request.side).map_err(wire_status)?;
        let record = self.load(game_id, true).await?;
        let game = &record.game;
        let rules = *game.rules();
        let moves = if game.phase() == Phase::Play && game.to_move() == side {
            game.position()
                .legal_moves()
                .iter()
                .map(|mv| wire::move_to_proto(&rules, mv))
                .collect()
        } else {
            Vec::new()
        };
        Ok(Response::new(pb::ListLegalMovesResponse {
            version: record.version,
            moves,
        }))
    }

    type WatchGameStream = EventStream;

    async fn watch_game(
        &self,
        request: Request<pb::WatchGameRequest>,
    ) -> Result<Response<Self::WatchGameStream>, Status> {
        let request = request.into_inner();
        let game_id = parse_game_id("game_id", &request.game_id)?;
        let record = self.load(game_id, true).await?;
        let rules = *record.game.rules();
        if record.game.phase() == Phase::Ended && request.from_seq > record.version {
            // Nothing more will ever come: an empty stream, not one held open forever.
            return Ok(Response::new(Box::pin(tokio_stream::empty())));
        }
        let store = Arc::clone(&self.store);
        let mut changes = store
            .watch(game_id)
            .await
            .map_err(|e| store_error_status(&e))?;
        let (tx, rx) = tokio::sync::mpsc::channel(WATCH_PAGE);
        let id = game_id.to_string();
        let mut next = request.from_seq.max(1);
        tokio::spawn(async move {
            loop {
                let page = match store.events(game_id, next, WATCH_PAGE).await {
                    Ok(page) => page,
                    Err(e) => {
                        let _ = tx.send(Err(store_error_status(&e))).await;
                        return;
                    }
                };
                let mut ended = false;
                for stored in &page {
                    ended |= matches!(stored.event, Event::Ended { .. });
                    // Internal full-information stream: everything revealed, the end with what
                    // the ended game reveals, in the versioned protobuf form the watchers rebuild
                    // the engine's event from.
                    let end = if ended {
                        match store.load(game_id).await {
                            Ok(Some(record)) => reveal(&record.game).unwrap_or_default(),
                            Ok(None) => Reveal::default(),
                            Err(e) => {
                                let _ = tx.send(Err(store_error_status(&e))).await;
                                return;
                            }
                        }
                    } else {
                        Reveal::default()
                    };
                    let event =
                        wire::engine_event_to_proto(&rules, &id, stored.seq, &stored.event, &end);
                    if tx
                        .send(Ok(pb::WatchGameResponse {
                            event: Some(event),
                            trace_parent: stored.trace_parent.clone().unwrap_or_default(),
                        }))
                        .await
                        .is_err()
                    {
                        return;
                    }
                    next = stored.seq + 1;
                }
                if ended {
                    return;
                }
                if page.len() == WATCH_PAGE {
                    continue;
                }
                // Wait until the log grows past what was sent (or the client goes away).
                loop {
                    if *changes.borrow_and_update() >= next {
                        break;
                    }
                    tokio::select! {
                        changed = changes.changed() => if changed.is_err() { return },
                        () = tx.closed() => return,
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }
}
