//! An organiser's bulk pairing as the store keeps it: games between given pairs of players, all
//! created at one start time (their clocks start then, not when the bulk is made), followed
//! together and cancelled together while none has started.
//!
//! Each pair is a [`Match`] of kind [`MatchKind::Bulk`] made with the bulk, without a game. The
//! pairing loop seats the matches whose start time has come ([`super::MatchStore::due_matches`]),
//! through the same idempotent creation and completion as a queue's match, so a process that dies
//! mid-start leaves the rest to the next round of any process, and no game is created twice.

use super::{Match, MatchError, MatchKind, Reason};
use hidden_front_rules::Side;
use uuid::Uuid;

/// How a game of a bulk ended, as its status tells the organiser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GameOutcome {
    /// South won.
    SouthWon,
    /// North won.
    NorthWon,
    /// A draw.
    Drawn,
    /// South lost the seat at the deployment deadline: north wins by forfeit.
    SouthForfeited,
    /// North lost the seat at the deployment deadline: south wins by forfeit.
    NorthForfeited,
    /// Both seats were lost at the deployment deadline: no result.
    Cancelled,
    /// An operator stopped it.
    Aborted,
}

impl GameOutcome {
    /// The name stored in the database and shown to organisers.
    pub fn name(self) -> &'static str {
        match self {
            GameOutcome::SouthWon => "south_won",
            GameOutcome::NorthWon => "north_won",
            GameOutcome::Drawn => "drawn",
            GameOutcome::SouthForfeited => "south_forfeited",
            GameOutcome::NorthForfeited => "north_forfeited",
            GameOutcome::Cancelled => "cancelled",
            GameOutcome::Aborted => "aborted",
        }
    }

    /// The outcome with this stored name.
    pub fn parse(name: &str) -> Result<GameOutcome, MatchError> {
        Ok(match name {
            "south_won" => GameOutcome::SouthWon,
            "north_won" => GameOutcome::NorthWon,
            "drawn" => GameOutcome::Drawn,
            "south_forfeited" => GameOutcome::SouthForfeited,
            "north_forfeited" => GameOutcome::NorthForfeited,
            "cancelled" => GameOutcome::Cancelled,
            "aborted" => GameOutcome::Aborted,
            other => return Err(MatchError::Corrupt(format!("game outcome {other:?}"))),
        })
    }

    /// The outcome of a game whose `lost` seats were lost before play.
    pub fn forfeited_by(lost: &[Side]) -> GameOutcome {
        match lost {
            [Side::South] => GameOutcome::SouthForfeited,
            [Side::North] => GameOutcome::NorthForfeited,
            _ => GameOutcome::Cancelled,
        }
    }

    /// The winner's outcome.
    pub fn won_by(side: Side) -> GameOutcome {
        match side {
            Side::South => GameOutcome::SouthWon,
            Side::North => GameOutcome::NorthWon,
        }
    }
}

/// What an organiser asks for: the games of a bulk, before the store has seen it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewBulk {
    /// The organiser's id for it (unique among bulks): a retry with the same id and the same
    /// content returns the stored bulk.
    pub bulk_id: String,
    /// The operator who made it (their token's configured name).
    pub organiser: String,
    /// The games' rule set.
    pub rules: String,
    /// The games' time control name.
    pub time_control: String,
    /// Whether the games are rated.
    pub rated: bool,
    /// When every game is created and its clocks start (ms since the Unix epoch).
    pub start_ms: u64,
    /// When it was asked for (ms since the Unix epoch).
    pub created_ms: u64,
    /// (south, north) players, in the organiser's order; no player twice.
    pub pairs: Vec<(String, String)>,
}

impl NewBulk {
    /// The matches of the bulk, one per pair, in order, none with a game yet.
    pub fn matches(&self) -> Vec<Match> {
        self.pairs
            .iter()
            .map(|(south, north)| Match {
                match_id: Uuid::now_v7(),
                kind: MatchKind::Bulk,
                rules: self.rules.clone(),
                time_control: self.time_control.clone(),
                rated: self.rated,
                south_player: south.clone(),
                north_player: north.clone(),
                south_ticket: None,
                north_ticket: None,
                invite_code: None,
                bulk_id: Some(self.bulk_id.clone()),
                created_ms: self.created_ms,
                game_id: None,
            })
            .collect()
    }

    /// Whether a stored bulk is this request made again (same content; times and ids aside).
    pub fn is_retry_of(&self, stored: &Bulk) -> bool {
        self.organiser == stored.organiser
            && self.rules == stored.rules
            && self.time_control == stored.time_control
            && self.rated == stored.rated
            && self.start_ms == stored.start_ms
            && self.pairs.len() == stored.games.len()
            && self
                .pairs
                .iter()
                .zip(&stored.games)
                .all(|((south, north), game)| {
                    *south == game.the_match.south_player && *north == game.the_match.north_player
                })
    }

    /// The `AlreadyExists` answer to a request that reuses a stored bulk's id for other games.
    pub fn conflict(&self) -> MatchError {
        MatchError::AlreadyExists(
            Reason::BulkExists,
            format!(
                "bulk_id: bulk {:?} exists with other games, start time or settings; \
                 choose a new id for a new bulk",
                self.bulk_id
            ),
        )
    }
}

/// One game of a stored bulk.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkGame {
    /// Its match: the players and seats; the game once created.
    pub the_match: Match,
    /// How it ended, once matchmaking has read its end from the session's feed.
    pub outcome: Option<GameOutcome>,
}

/// A stored bulk with every game's state now.
#[derive(Debug, Clone, PartialEq)]
pub struct Bulk {
    /// The organiser's id for it.
    pub bulk_id: String,
    /// Who made it.
    pub organiser: String,
    /// The games' rule set.
    pub rules: String,
    /// The games' time control name.
    pub time_control: String,
    /// Whether the games are rated.
    pub rated: bool,
    /// When the games are created and their clocks start (ms since the Unix epoch).
    pub start_ms: u64,
    /// When it was made.
    pub created_ms: u64,
    /// When it was cancelled, if it was (then no game of it is ever created).
    pub cancelled_ms: Option<u64>,
    /// Its games, in the organiser's order.
    pub games: Vec<BulkGame>,
}

impl Bulk {
    /// The stored form of a new bulk: its matches, none started.
    pub fn of_new(new: &NewBulk) -> Bulk {
        Bulk {
            bulk_id: new.bulk_id.clone(),
            organiser: new.organiser.clone(),
            rules: new.rules.clone(),
            time_control: new.time_control.clone(),
            rated: new.rated,
            start_ms: new.start_ms,
            created_ms: new.created_ms,
            cancelled_ms: None,
            games: new
                .matches()
                .into_iter()
                .map(|the_match| BulkGame {
                    the_match,
                    outcome: None,
                })
                .collect(),
        }
    }

    /// The `NotFound` answer for a bulk id nobody made.
    pub fn not_found(bulk_id: &str) -> MatchError {
        MatchError::NotFound(
            Reason::BulkNotFound,
            format!("bulk_id: no bulk {bulk_id:?} exists"),
        )
    }

    /// Refuses a cancellation of this bulk at `now_ms` unless it can still be cancelled: not
    /// within `margin_ms` of its start (a process starting it may already be creating its
    /// games), and none of its games exists. Cancelling a cancelled bulk is not refused.
    pub fn check_cancellable(&self, now_ms: u64, margin_ms: u64) -> Result<(), MatchError> {
        if self.cancelled_ms.is_some() {
            return Ok(());
        }
        let started = self.games.iter().any(|g| g.the_match.game_id.is_some());
        if started || now_ms.saturating_add(margin_ms) >= self.start_ms {
            return Err(MatchError::FailedPrecondition(
                Reason::BulkStarted,
                format!(
                    "bulk {:?} starts at {} ms (Unix) and can be cancelled only until {} ms \
                     before; it is {now_ms} ms now{}",
                    self.bulk_id,
                    self.start_ms,
                    margin_ms,
                    if started { " and its games exist" } else { "" }
                ),
            ));
        }
        Ok(())
    }
}
