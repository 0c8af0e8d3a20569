//! The command path: judge a command with the engine on a copy of the game, then append its
//! events, snapshot, command record and timers in one store transaction guarded by the version
//! judged against. A refusal judged against the cache is judged again on the stored game; a lost
//! version race reloads and judges again (up to [`MAX_ATTEMPTS`]); a retry of an applied command
//! gets its first answer, found when the engine refuses it or when the store meets its key.

use crate::actions::{Action, PlayerRequest};
use crate::counters::count_phase_change;
use crate::errors::{game_error_status, store_error_status};
use crate::request::{Actor, Context, parse_context};
use crate::service::SessionService;
use crate::timers;
use hidden_front_api_error::{ApiError, Reason};
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Command, Event, Game, GameRng, Viewer, project, reveal};
use hidden_front_store::{Append, CommandRecord, GameRecord, StoreError, lifecycle};
use hidden_front_wire as wire;
use prost::Message;
use std::sync::Arc;
use std::time::Instant;
use tonic::{Request, Response, Status};
use uuid::Uuid;

/// How many times a command is judged again after losing a race to another replica.
pub(crate) const MAX_ATTEMPTS: usize = 8;

/// A fresh random source per command, seeded from the OS (through UUID v4's generator).
pub(crate) fn fresh_rng() -> GameRng {
    let (a, b) = Uuid::new_v4().as_u64_pair();
    GameRng::from_seed(a ^ b.rotate_left(32))
}

impl SessionService {
    /// The answer stored for a key, marked as replayed.
    pub(crate) fn replayed(bytes: &[u8]) -> Result<pb::CommandResult, Status> {
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
    /// Its span carries the game, the seat (`operator` for an operator's abort) and the versions
    /// only: never the command's squares' pieces nor the events, which may reveal hidden ranks.
    #[tracing::instrument(
        name = "session.command",
        skip_all,
        fields(
            game_id = %ctx.game_id,
            side = ctx.actor.name(),
            expected_version = ctx.expected_version,
            version = tracing::field::Empty,
            event_count = tracing::field::Empty,
            attempts = tracing::field::Empty,
        )
    )]
    pub(crate) async fn execute(
        &self,
        ctx: &Context,
        make: impl Fn(&GameRecord) -> Result<Command, Status>,
    ) -> Result<pb::CommandResult, Status> {
        let store_status = |e: StoreError| store_error_status(&e);
        // No command is judged, and no deadline armed, before an outage that preceded it was
        // accounted for (`pulse.rs`).
        self.serving().await?;
        let _this_games_turn = self.command_locks.lock(ctx.game_id).await;
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
            let result = self.result_for(&record, &game, &events, ctx.actor.viewer());
            let bytes = result.encode_to_vec();
            let timer_change = self.timer_change(&record, &game, &events).await?;
            let mut facts = lifecycle::derive::append_facts(record.meta.seats(), &events, &game);
            // An operator's abort also records who stopped the game and why, with the append.
            if let Actor::Operator(action) = &ctx.actor
                && events.iter().any(|e| matches!(e, Event::Ended { .. }))
            {
                facts.insert(
                    0,
                    lifecycle::derive::aborted_fact(ctx.game_id, &action.operator, &action.reason),
                );
            }
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
                    facts: &facts,
                    fired: ctx.fired.as_ref(),
                })
                .await
            {
                Ok(version) => {
                    let span = tracing::Span::current();
                    span.record("version", version);
                    span.record("event_count", events.len());
                    span.record("attempts", attempt + 1);
                    count_phase_change(Some(record.game.phase()), game.phase());
                    self.cache.insert(Arc::new(GameRecord {
                        meta: record.meta.clone(),
                        version,
                        game,
                    }));
                    return Ok(result);
                }
                Err(StoreError::VersionConflict { .. }) => {
                    self.cache.remove(ctx.game_id);
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
                    self.cache.remove(ctx.game_id);
                    return Self::replayed(&response);
                }
                Err(e) => {
                    self.cache.remove(ctx.game_id);
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
    pub(crate) async fn timer_change(
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
    pub(crate) async fn stored_answer(
        &self,
        ctx: &Context,
    ) -> Result<Option<pb::CommandResult>, Status> {
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
    pub(crate) async fn refuse(
        &self,
        ctx: &Context,
        refusal: Status,
    ) -> Result<pb::CommandResult, Status> {
        match self.stored_answer(ctx).await? {
            Some(answer) => Ok(answer),
            None => Err(refusal),
        }
    }

    /// Checks the expected version and judges the command on `record`'s game: the game after
    /// it and the events it caused, or the refusal.
    pub(crate) fn judge(
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
    pub(crate) fn result_for(
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

    /// The one path of every player action: reads the request's action from the table
    /// ([`crate::actions`]), parses its context, runs the engine command through [`Self::execute`]
    /// and counts the outcome by the action's kind (moves also by result and latency).
    pub(crate) async fn act<R: PlayerRequest>(
        &self,
        request: Request<R>,
    ) -> Result<Response<R::Response>, Status> {
        let started = Instant::now();
        let (context, action) = request.into_inner().into_action()?;
        let result = match parse_context(context) {
            Ok((ctx, side)) => {
                self.execute(&ctx, |record| action.command(record.game.rules(), side))
                    .await
            }
            Err(status) => Err(status),
        };
        self.meters.command(action.kind(), &result);
        if let Action::Move(_) = action {
            self.meters.r#move(started, &result);
        }
        result.map(|result| Response::new(R::respond(result)))
    }
}
