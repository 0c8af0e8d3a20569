//! Durable game timers: the deployment deadline, the move clock and each side's time to come back
//! after a disconnection, stored beside the games so that no restart loses one.
//!
//! The session writes a game's timers **in the same transaction** as the events that make them
//! necessary ([`crate::GameStore::append_armed`]): a move is never acknowledged without its next
//! deadline being durable, and a crash can never leave a move stored without its deadline. The
//! clock service only reads due timers, fires them at the session, and deletes the ones it fired
//! ([`TimerStore`]).
//!
//! Every timer is fenced: it names the game version it was armed for (and its deadline), the
//! session checks both when the timer fires, and a stale or duplicated fire changes nothing. So
//! several clock processes may claim and fire the same timers without double effects; claims with
//! leases only keep them from doing the same work twice in the common case.

use crate::StoreError;
use async_trait::async_trait;
use hidden_front_rules::Side;
use hidden_front_time::{from_unix_ms, unix_ms};
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// Which clock a timer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerKind {
    /// The deployment phase's deadline (one per game).
    Deployment,
    /// The side to move's move clock.
    Move,
    /// A disconnected side's time to come back.
    Reconnect,
}

impl TimerKind {
    /// The name stored in the database and used as a metric label.
    pub fn name(self) -> &'static str {
        match self {
            TimerKind::Deployment => "deployment",
            TimerKind::Move => "move",
            TimerKind::Reconnect => "reconnect",
        }
    }

    /// The kind with this [`TimerKind::name`].
    pub fn from_name(name: &str) -> Option<TimerKind> {
        match name {
            "deployment" => Some(TimerKind::Deployment),
            "move" => Some(TimerKind::Move),
            "reconnect" => Some(TimerKind::Reconnect),
            _ => None,
        }
    }
}

/// The place a timer holds in its game: a game has at most one timer per slot, so arming a slot
/// replaces what was there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimerSlot {
    /// The turn's clock: the deployment deadline, then the move clock.
    Turn,
    /// A side's time to come back.
    Reconnect(Side),
}

impl TimerSlot {
    /// The name stored in the database.
    pub fn name(self) -> &'static str {
        match self {
            TimerSlot::Turn => "turn",
            TimerSlot::Reconnect(Side::South) => "reconnect_south",
            TimerSlot::Reconnect(Side::North) => "reconnect_north",
        }
    }

    /// The slot with this [`TimerSlot::name`].
    pub fn from_name(name: &str) -> Option<TimerSlot> {
        match name {
            "turn" => Some(TimerSlot::Turn),
            "reconnect_south" => Some(TimerSlot::Reconnect(Side::South)),
            "reconnect_north" => Some(TimerSlot::Reconnect(Side::North)),
            _ => None,
        }
    }
}

/// One armed timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Timer {
    /// The game.
    pub game_id: Uuid,
    /// Which clock.
    pub kind: TimerKind,
    /// The side it concerns: the side to move, the disconnected side (south for a deployment
    /// deadline, which concerns both).
    pub side: Side,
    /// The game version it was armed for.
    pub armed_version: u64,
    /// When it fires; whole milliseconds (see [`deadline_after`]), so that it survives a round
    /// trip through the database and a message unchanged.
    pub fire_at: SystemTime,
}

impl Timer {
    /// Its slot in the game.
    pub fn slot(&self) -> TimerSlot {
        match self.kind {
            TimerKind::Deployment | TimerKind::Move => TimerSlot::Turn,
            TimerKind::Reconnect => TimerSlot::Reconnect(self.side),
        }
    }

    /// The deadline in milliseconds since the Unix epoch (the form it travels in).
    pub fn fire_at_unix_millis(&self) -> u64 {
        unix_ms(self.fire_at)
    }
}

/// `now + seconds`, cut to whole milliseconds: the deadlines every timer is armed with.
pub fn deadline_after(now: SystemTime, duration: Duration) -> SystemTime {
    from_unix_ms(unix_ms(now + duration))
}

/// How an append changes the game's turn clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnTimerChange {
    /// Arm the turn slot with this timer (a new turn started: a fresh deadline).
    Arm(Timer),
    /// Keep the turn's deadline but fence it to the new version (the game changed without a
    /// turn passing, e.g. a draw offer): nobody can extend a clock by acting off-turn. Does
    /// nothing when no turn timer is armed.
    Retag {
        /// The version after the append.
        armed_version: u64,
    },
}

/// The timer changes an append carries, written in its transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimerChange {
    /// Delete every timer of the game first (it ended).
    pub clear_all: bool,
    /// The turn clock's change, if any.
    pub turn: Option<TurnTimerChange>,
    /// Reconnect timers to arm (replacing the side's earlier one).
    pub reconnect: Vec<Timer>,
}

impl TimerChange {
    /// No change.
    pub fn none() -> TimerChange {
        TimerChange::default()
    }

    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        !self.clear_all && self.turn.is_none() && self.reconnect.is_empty()
    }

    /// The turn deadline it arms, if it arms one: what the append's last event carries
    /// ([`crate::StoredEvent::armed_turn_deadline`]).
    pub fn armed_turn_deadline(&self) -> Option<SystemTime> {
        match self.turn {
            Some(TurnTimerChange::Arm(timer)) => Some(timer.fire_at),
            _ => None,
        }
    }
}

/// The clock service's view of the timers: claim what is due, report what was fired.
///
/// Claims are leases: a claimed timer is not handed to another claimer until
/// `max(fire_at, now) + lease`, so a clock process that dies loses its claims after the lease and
/// another process fires them (late, but once: the session's fence makes a repeat harmless).
#[async_trait]
pub trait TimerStore: Send + Sync + 'static {
    /// Arms (or re-arms) the timer's slot; any claim on the slot is dropped. `NotFound` for an
    /// unknown game.
    async fn arm_timer(&self, timer: &Timer) -> Result<(), StoreError>;

    /// Disarms a slot; whether a timer was there.
    async fn cancel_timer(&self, game_id: Uuid, slot: TimerSlot) -> Result<bool, StoreError>;

    /// The game's armed timers (empty for an unknown game).
    async fn timers_of(&self, game_id: Uuid) -> Result<Vec<Timer>, StoreError>;

    /// Claims for `owner`, earliest first, at most `limit` timers due by `horizon` that nobody
    /// holds a live claim on; each claim lasts until `max(fire_at, now) + lease`.
    async fn claim_due(
        &self,
        owner: &str,
        horizon: SystemTime,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<Timer>, StoreError>;

    /// Gives a claimed timer back to be fired again after `retry_at` (its target failed).
    /// Does nothing if the slot was re-armed meanwhile.
    async fn release_timer(&self, timer: &Timer, retry_at: SystemTime) -> Result<(), StoreError>;

    /// Deletes fired timers, each only if its slot still holds exactly that timer (a re-armed
    /// slot stays); how many were deleted.
    async fn complete_timers(&self, timers: &[Timer]) -> Result<u64, StoreError>;

    /// How many timers are armed (a gauge).
    async fn armed_timer_count(&self) -> Result<u64, StoreError>;
}
