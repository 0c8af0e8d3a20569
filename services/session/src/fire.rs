//! `ApplyTimer`: a clock reports a fired deadline, and the session decides whether it still
//! applies (the timer fences) and, if so, runs its effect (a timeout, the deployment deadline, a
//! lost seat) through the command path, once.

use crate::counters::is_refusal;
use crate::errors::{invalid_field, store_error_status, wire_status};
use crate::request::{Actor, Context, parse_game_id};
use crate::service::SessionService;
use crate::timers::{self, FireCheck};
use hidden_front_api_error::{ApiError, Reason};
use hidden_front_metrics_names as names;
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Command, Phase};
use hidden_front_store::{Timer, TimerKind};
use hidden_front_time::{from_unix_ms, unix_ms};
use hidden_front_wire as wire;
use tonic::Status;

/// How many times a fire reads the game before giving up when every read outlasts the pulse.
const MAX_READS: u32 = 3;

impl SessionService {
    /// Answers a clock's `ApplyTimer`, counting its outcome: applied, stale (or already
    /// applied: it changes nothing) or refused.
    pub(crate) async fn fire_timer(
        &self,
        request: pb::ApplyTimerRequest,
    ) -> Result<pb::ApplyTimerResponse, Status> {
        let result = self.apply_fire(request).await;
        let outcome = match &result {
            Ok(answer) if answer.applied => names::OK,
            // A stale timer (or one already applied) changes nothing.
            Ok(_) => names::REFUSED,
            Err(status) if is_refusal(status) => names::REFUSED,
            Err(_) => names::ERROR,
        };
        metrics::counter!(names::COMMANDS_TOTAL, names::KIND => "timer", names::OUTCOME => outcome)
            .increment(1);
        result
    }

    /// Applies a fired timer if both fences hold: the game's slot still holds exactly this
    /// timer and it is due by the session's clock, and the game itself still waits for it.
    /// Then it runs through the idempotent command path with the timer's own key.
    async fn apply_fire(
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
            fire_at: from_unix_ms(request.deadline_unix_millis),
        };
        // The first fence: the fire must be the timer the game's slot holds now. A timer that
        // was replaced, disarmed or already applied is stale, and a live one that is not due by
        // this clock is refused so the clock tries again. Read only once any outage before now
        // was accounted for (a deadline it moved makes this fire stale), and judged only while
        // the pulse is still fresh after the reads: an outage or a stall during them is
        // accounted for, and the slot read again, before anyone's time is judged to have run out.
        let mut reads = 0;
        let (stored, record) = loop {
            self.serving().await?;
            let stored = self
                .store
                .timers_of(game_id)
                .await
                .map_err(|e| store_error_status(&e))?
                .into_iter()
                .find(|t| t.slot() == fired.slot());
            let record = self.load(game_id, true).await?;
            if self.pulse_is_fresh() {
                break (stored, record);
            }
            reads += 1;
            if reads == MAX_READS {
                return Err(ApiError::new(
                    Reason::StoreUnavailable,
                    "the game store is too slow to judge this timer now; retry",
                )
                .into());
            }
        };
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
                        unix_ms(at)
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
            actor: Actor::Seat(side),
            key: format!(
                "timer:{}:{}:{}:{}",
                kind.as_str_name(),
                request.armed_version,
                side.name(),
                request.deadline_unix_millis
            ),
            expected_version: Some(record.version),
            // Applied only while the slot still holds this timer, checked in the append itself:
            // a deadline moved or re-armed between the check above and the commit wins.
            fired: Some(fired),
        };
        match self.execute(&ctx, |_| Ok(command.clone())).await {
            Ok(result) => Ok(pb::ApplyTimerResponse {
                applied: !result.replayed,
                version: result.version,
            }),
            // Lost a race with a move, or the timer was moved or re-armed meanwhile: the fire is
            // stale by definition.
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
}
