//! An organiser's tournament as the store keeps it: only what the organiser chose (format,
//! rounds, settings, entrants with their ratings at creation). Its rounds are bulks
//! ([`super::bulk`]) named by [`round_bulk_id`]; results and standings are derived from them
//! (`crate::tournament`), so nothing about a round can disagree with its games.

use super::{MatchError, Reason};

/// How a tournament pairs its rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TournamentFormat {
    /// A fixed number of rounds paired by score groups (`hidden_front_tournament::swiss`).
    Swiss,
    /// Everyone meets everyone once (Berger tables).
    RoundRobin,
    /// For a fixed duration, whoever finishes a game is paired again with another waiting player
    /// (`hidden_front_tournament::arena`), in waves.
    Arena,
}

impl TournamentFormat {
    /// The name stored in the database.
    pub fn name(self) -> &'static str {
        match self {
            TournamentFormat::Swiss => "swiss",
            TournamentFormat::RoundRobin => "round_robin",
            TournamentFormat::Arena => "arena",
        }
    }

    /// The format with this stored name.
    pub fn parse(name: &str) -> Result<TournamentFormat, MatchError> {
        match name {
            "swiss" => Ok(TournamentFormat::Swiss),
            "round_robin" => Ok(TournamentFormat::RoundRobin),
            "arena" => Ok(TournamentFormat::Arena),
            other => Err(MatchError::Corrupt(format!("tournament format {other:?}"))),
        }
    }
}

/// One entrant: the player and their rating when the tournament was made (it ranks players of
/// equal score and seeds the first round).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TournamentEntrant {
    /// The player's id.
    pub id: String,
    /// Their rating, rounded.
    pub rating: i32,
}

/// A tournament as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tournament {
    /// The organiser's id for it (unique among tournaments).
    pub tournament_id: String,
    /// The operator who made it.
    pub organiser: String,
    /// Swiss or round robin.
    pub format: TournamentFormat,
    /// How many rounds (a round robin's is fixed by its entrants).
    pub rounds: u32,
    /// The games' rule set.
    pub rules: String,
    /// The games' time control name.
    pub time_control: String,
    /// Whether the games are rated.
    pub rated: bool,
    /// When the first round starts (ms since the Unix epoch).
    pub start_ms: u64,
    /// The pause between a round's last game ending and the next round's start.
    pub pause_ms: u64,
    /// An arena's duration from its start (0 for the other formats): no wave is paired after it.
    pub duration_ms: u64,
    /// Players may join and withdraw themselves until shortly before the start.
    pub open_to_players: bool,
    /// Accounts marked as bots may join.
    pub allow_bots: bool,
    /// The entrants, in the organiser's order.
    pub entrants: Vec<TournamentEntrant>,
    /// Entrants of a running arena who paused (withdrew after the start): no wave pairs them.
    pub paused: Vec<String>,
    /// When it was made.
    pub created_ms: u64,
    /// When its last round ended (set by the loop that saw it).
    pub finished_ms: Option<u64>,
}

impl Tournament {
    /// Whether a stored tournament is this one asked for again (times aside).
    pub fn is_retry_of(&self, stored: &Tournament) -> bool {
        Tournament {
            created_ms: stored.created_ms,
            finished_ms: stored.finished_ms,
            paused: stored.paused.clone(),
            ..self.clone()
        } == *stored
    }

    /// The `AlreadyExists` answer to a request that reuses a stored tournament's id.
    pub fn conflict(&self) -> MatchError {
        MatchError::AlreadyExists(
            Reason::TournamentExists,
            format!(
                "tournament_id: tournament {:?} exists with other entrants or settings; \
                 choose a new id for a new tournament",
                self.tournament_id
            ),
        )
    }

    /// The `NotFound` answer for a tournament id nobody made.
    pub fn not_found(tournament_id: &str) -> MatchError {
        MatchError::NotFound(
            Reason::TournamentNotFound,
            format!("tournament_id: no tournament {tournament_id:?} exists"),
        )
    }
}

/// The most entrants a tournament of `format` takes.
pub fn capacity(format: TournamentFormat) -> usize {
    match format {
        TournamentFormat::Swiss | TournamentFormat::Arena => 1000,
        TournamentFormat::RoundRobin => 20,
    }
}

impl Tournament {
    /// Refuses a player's joining or withdrawing at `now_ms` unless the tournament is open to
    /// players and starts more than `margin_ms` later: from then on its first round may be
    /// being paired from its entrants.
    pub fn check_registration(&self, now_ms: u64, margin_ms: u64) -> Result<(), MatchError> {
        if !self.open_to_players {
            return Err(MatchError::FailedPrecondition(
                Reason::TournamentClosed,
                format!(
                    "tournament_id: tournament {:?} is not open to players: its organiser names \
                     its entrants",
                    self.tournament_id
                ),
            ));
        }
        if self.finished_ms.is_some() || now_ms.saturating_add(margin_ms) >= self.start_ms {
            return Err(MatchError::FailedPrecondition(
                Reason::TournamentClosed,
                format!(
                    "tournament_id: tournament {:?} starts at {} ms (Unix) and takes entrants \
                     only until {margin_ms} ms before; it is {now_ms} ms now",
                    self.tournament_id, self.start_ms
                ),
            ));
        }
        Ok(())
    }

    /// The tournament with `entrant` in it (as it is, if they are in it already); `TOURNAMENT_FULL`
    /// at its capacity.
    pub fn joined(mut self, entrant: TournamentEntrant) -> Result<Tournament, MatchError> {
        if self.entrants.iter().any(|e| e.id == entrant.id) {
            return Ok(self);
        }
        let most = capacity(self.format);
        if self.entrants.len() >= most {
            return Err(MatchError::FailedPrecondition(
                Reason::TournamentFull,
                format!(
                    "tournament_id: tournament {:?} has {most} entrants, as many as it takes",
                    self.tournament_id
                ),
            ));
        }
        self.entrants.push(entrant);
        Ok(self)
    }

    /// The tournament without `player` (as it is, if they are not in it).
    pub fn withdrawn(mut self, player: &str) -> Tournament {
        self.entrants.retain(|e| e.id != player);
        self
    }

    /// Whether this is an arena under way at `now_ms` (entries for its start closed, its time not
    /// run out, not finished): its entrants pause and resume, and players of one open to them
    /// join late ([`Tournament::paused_by`], [`Tournament::resumed_or_joined`]).
    pub fn is_arena_under_way(&self, now_ms: u64, margin_ms: u64) -> bool {
        self.format == TournamentFormat::Arena
            && self.finished_ms.is_none()
            && now_ms.saturating_add(margin_ms) >= self.start_ms
            && now_ms < self.start_ms.saturating_add(self.duration_ms)
    }

    /// The arena with `player` paused (as it is, if they are paused already or not in it).
    pub fn paused_by(mut self, player: &str) -> Tournament {
        if self.entrants.iter().any(|e| e.id == player) && !self.paused.iter().any(|p| p == player)
        {
            self.paused.push(player.to_owned());
        }
        self
    }

    /// The arena with `entrant` playing: resumed if they had paused, entered if they were not in
    /// it (only an arena open to players takes newcomers once under way: `TOURNAMENT_CLOSED`).
    pub fn resumed_or_joined(
        mut self,
        entrant: TournamentEntrant,
    ) -> Result<Tournament, MatchError> {
        if self.entrants.iter().any(|e| e.id == entrant.id) {
            self.paused.retain(|p| *p != entrant.id);
            return Ok(self);
        }
        if !self.open_to_players {
            return Err(MatchError::FailedPrecondition(
                Reason::TournamentClosed,
                format!(
                    "tournament_id: tournament {:?} is not open to players: its organiser names \
                     its entrants",
                    self.tournament_id
                ),
            ));
        }
        self.joined(entrant)
    }
}

/// The prefix of the bulk ids of tournaments' rounds; organisers' own bulks may not use it.
pub const ROUND_BULK_PREFIX: &str = "tournament:";

/// The bulk id of round `round` (from 1) of a tournament.
pub fn round_bulk_id(tournament_id: &str, round: usize) -> String {
    format!("{ROUND_BULK_PREFIX}{tournament_id}:round:{round}")
}
