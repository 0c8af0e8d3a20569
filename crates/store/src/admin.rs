//! What the admin API needs of a store: finding games by what an operator knows of them (a
//! player, a phase, a rule set, when they were created, whether they look stuck) and the audit log
//! of what operators did (every inspection and abort: who, when, what, which game, why).
//!
//! Both stores implement [`AdminStore`] and pass the same conformance checks. Times are the
//! store's own (Postgres `now()`, the memory store's system clock), kept to the microsecond so a
//! cursor reads the same from either.

use crate::{GameSummary, StoreError};
use async_trait::async_trait;
use hidden_front_rules::Phase;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use uuid::Uuid;

/// The most games or audit entries one call returns, whatever the caller asks: an operator pages
/// with the cursor.
pub const MAX_ADMIN_PAGE: usize = 500;

/// Which games [`AdminStore::find_games`] returns. Every criterion that is set must hold; none
/// set selects every game. Newest first by creation time (then id), at most `limit`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GameFilter {
    /// Only this game (how one game's times are read).
    pub game_id: Option<Uuid>,
    /// Games this player sits in, on either seat.
    pub player: Option<String>,
    /// Games in this phase.
    pub phase: Option<Phase>,
    /// Games under exactly this rule set name (with its options, as stored).
    pub rules: Option<String>,
    /// Games created at or after this time.
    pub created_from: Option<SystemTime>,
    /// Games created before this time.
    pub created_before: Option<SystemTime>,
    /// "Stuck" games: in play, with no event since this time (the last event is older). Never a
    /// game in deployment (its deadline ends it, or the players are still placing) and never
    /// an ended game, whatever the other criteria say: a stuck game is one an operator may need
    /// to abort, and an ended game cannot be. (The admin API reads an idleness of 0 as "not
    /// asked", so its CLI takes `--stuck-for` of 1 second or more.)
    pub idle_since: Option<SystemTime>,
    /// Only games after this one in the order (the cursor of the last game of a page).
    pub after: Option<GameCursor>,
    /// The most games returned (capped at [`MAX_ADMIN_PAGE`]).
    pub limit: usize,
}

/// A position in [`AdminStore::find_games`]'s order: a game's creation time and id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GameCursor {
    /// The game's creation time (microseconds).
    pub created_at: SystemTime,
    /// The game's id.
    pub game_id: Uuid,
}

/// A game [`AdminStore::find_games`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundGame {
    /// Who, which rules, which phase, which version.
    pub summary: GameSummary,
    /// When it was created (store time).
    pub created_at: SystemTime,
    /// When its last event was written (store time).
    pub last_event_at: SystemTime,
}

impl FoundGame {
    /// The cursor that continues after this game.
    pub fn cursor(&self) -> GameCursor {
        GameCursor {
            created_at: self.created_at,
            game_id: self.summary.meta.game_id,
        }
    }
}

/// What an operator did, as the audit log names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuditAction {
    /// Read a game with full information (`InspectGame`).
    Inspect,
    /// Stopped a game (`AbortGame`).
    Abort,
}

impl AuditAction {
    /// Every action, for parsing and tests.
    pub const ALL: [AuditAction; 2] = [AuditAction::Inspect, AuditAction::Abort];

    /// The stored and wire name (`inspect`, `abort`).
    pub fn name(self) -> &'static str {
        match self {
            AuditAction::Inspect => "inspect",
            AuditAction::Abort => "abort",
        }
    }

    /// The action of a stored name.
    pub fn from_name(name: &str) -> Option<AuditAction> {
        AuditAction::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// An entry to append to the audit log; the store gives it its id and time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewAuditEntry<'a> {
    /// Who (the operator's configured name).
    pub operator: &'a str,
    /// What.
    pub action: AuditAction,
    /// Which game.
    pub game_id: Uuid,
    /// Why (the operator's own words).
    pub reason: &'a str,
    /// How it went, in a few words (`ok`, `applied at version 12`, `refused: WRONG_PHASE`).
    pub outcome: &'a str,
}

/// An entry of the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// Its id: increasing in the order entries were appended (its cursor).
    pub id: u64,
    /// When it was appended (store time, microseconds).
    pub at: SystemTime,
    /// Who.
    pub operator: String,
    /// What.
    pub action: AuditAction,
    /// Which game.
    pub game_id: Uuid,
    /// Why.
    pub reason: String,
    /// How it went.
    pub outcome: String,
}

/// Which entries [`AdminStore::audit_log`] returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// Only entries about this game.
    pub game_id: Option<Uuid>,
    /// Newest first, only entries older than this id (`None`: from the newest). Ignored when
    /// `after` is set.
    pub before: Option<u64>,
    /// Oldest first, only entries newer than this id: to follow the log from a cursor.
    pub after: Option<u64>,
    /// The most entries returned (capped at [`MAX_ADMIN_PAGE`]).
    pub limit: usize,
}

/// The admin API's part of a store. A supertrait of [`crate::GameStore`], so every game store
/// keeps an audit log and answers searches.
#[async_trait]
pub trait AdminStore: Send + Sync {
    /// Games matching `filter`, newest first by creation (then by id, descending).
    async fn find_games(&self, filter: &GameFilter) -> Result<Vec<FoundGame>, StoreError>;

    /// Appends an entry to the audit log and returns it as stored (with its id and time).
    async fn append_audit(&self, entry: NewAuditEntry<'_>) -> Result<AuditEntry, StoreError>;

    /// Entries of the audit log, per `query`.
    async fn audit_log(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError>;
}

/// `time` cut to whole microseconds (what Postgres keeps), so both stores compare and page alike.
pub fn to_micros(time: SystemTime) -> SystemTime {
    match time.duration_since(UNIX_EPOCH) {
        Ok(since) => UNIX_EPOCH + Duration::from_micros(since.as_micros() as u64),
        Err(_) => UNIX_EPOCH,
    }
}

/// `limit` within [`MAX_ADMIN_PAGE`].
pub(crate) fn page(limit: usize) -> usize {
    limit.min(MAX_ADMIN_PAGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_names_round_trip() {
        for action in AuditAction::ALL {
            assert_eq!(AuditAction::from_name(action.name()), Some(action));
        }
        assert_eq!(AuditAction::from_name("delete"), None);
    }

    #[test]
    fn times_are_cut_to_microseconds() {
        let t = UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
        assert_eq!(
            to_micros(t),
            UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_000)
        );
        assert_eq!(to_micros(UNIX_EPOCH - Duration::from_secs(1)), UNIX_EPOCH);
    }
}
