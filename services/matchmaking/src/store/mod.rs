//! Matchmaking's storage: one trait ([`MatchStore`]) with an in-memory and a Postgres
//! implementation that pass one conformance suite (the `hidden-front-matchmaking-conformance`
//! crate, run by `tests/memory_store.rs` and `tests/postgres_store.rs`).
//!
//! Everything that must happen once across processes happens in one store operation: pairing a
//! queue (a ticket is paired by one process only), applying an ended game's plan (ratings move
//! once), claiming a computer seat (one driver at a time, by lease). What those operations decide
//! (which tickets pair, what a game's end changes) is the caller's, passed in as a function.

pub mod bulk;
pub mod memory;
pub mod postgres;
pub mod tournament;

pub use bulk::{Bulk, BulkGame, GameOutcome, NewBulk};
pub use tournament::{Tournament, TournamentEntrant, TournamentFormat, round_bulk_id};

use crate::glicko::Rating;
use async_trait::async_trait;
pub use hidden_front_api_error::Reason;
use hidden_front_lifecycle::{FactBody, NewFact};
use hidden_front_rules::Side;
pub use hidden_front_tournament::standings::Standing;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use uuid::Uuid;

/// Why a store operation failed. Nothing was changed by a failed operation.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MatchError {
    /// The named thing does not exist (for this player); the reason says which thing.
    #[error("{1}")]
    NotFound(Reason, String),
    /// A second one of something there may be only one of.
    #[error("{1}")]
    AlreadyExists(Reason, String),
    /// The thing is not in a state that allows the operation.
    #[error("{1}")]
    FailedPrecondition(Reason, String),
    /// The database failed or could not be reached.
    #[error("database error: {0}")]
    Database(String),
    /// Stored data could not be read back.
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
}

impl From<sqlx::Error> for MatchError {
    fn from(error: sqlx::Error) -> Self {
        MatchError::Database(error.to_string())
    }
}

/// A queue: players in one queue are paired with each other.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Queue {
    /// Rule set name (canonical, e.g. "hidden-front").
    pub rules: String,
    /// Time control name ("online" or "relaxed").
    pub time_control: String,
    /// Rated: pairs by rating, ratings move when the game ends.
    pub rated: bool,
}

impl Queue {
    /// The queue's key in storage: `<rules>|<time control>|rated` or `...|casual`.
    pub fn key(&self) -> String {
        format!(
            "{}|{}|{}",
            self.rules,
            self.time_control,
            if self.rated { "rated" } else { "casual" }
        )
    }
}

/// Where a ticket is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TicketState {
    /// In the queue.
    Waiting,
    /// Paired (see the match).
    Matched,
    /// Cancelled by the player.
    Cancelled,
    /// Its time to live ran out.
    Expired,
}

impl TicketState {
    /// The name stored in the database.
    pub fn name(self) -> &'static str {
        match self {
            TicketState::Waiting => "waiting",
            TicketState::Matched => "matched",
            TicketState::Cancelled => "cancelled",
            TicketState::Expired => "expired",
        }
    }

    /// The state with this stored name.
    pub fn parse(name: &str) -> Result<TicketState, MatchError> {
        Ok(match name {
            "waiting" => TicketState::Waiting,
            "matched" => TicketState::Matched,
            "cancelled" => TicketState::Cancelled,
            "expired" => TicketState::Expired,
            other => return Err(MatchError::Corrupt(format!("ticket state {other:?}"))),
        })
    }
}

/// A player's request to be paired.
#[derive(Debug, Clone, PartialEq)]
pub struct Ticket {
    /// Who.
    pub player: String,
    /// The client's id for it (unique per player).
    pub ticket_id: String,
    /// Which queue.
    pub queue: Queue,
    /// Where it is in its life.
    pub state: TicketState,
    /// Seated again after an opponent lost the seat: paired before newcomers.
    pub priority: bool,
    /// The player's rating when enqueued.
    pub rating: f64,
    /// When it was enqueued (ms since the Unix epoch).
    pub enqueued_ms: u64,
    /// When it expires (ms since the Unix epoch).
    pub expires_ms: u64,
    /// The match, once paired.
    pub match_id: Option<Uuid>,
    /// The game, once the match's game exists.
    pub game_id: Option<Uuid>,
}

/// How a match came about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    /// Two tickets of a queue.
    Queue,
    /// An accepted invite.
    Invite,
    /// A pair of an organiser's bulk ([`bulk`]).
    Bulk,
}

impl MatchKind {
    /// The name stored in the database.
    pub fn name(self) -> &'static str {
        match self {
            MatchKind::Queue => "queue",
            MatchKind::Invite => "invite",
            MatchKind::Bulk => "bulk",
        }
    }

    /// The kind with this stored name.
    pub fn parse(name: &str) -> Result<MatchKind, MatchError> {
        match name {
            "queue" => Ok(MatchKind::Queue),
            "invite" => Ok(MatchKind::Invite),
            "bulk" => Ok(MatchKind::Bulk),
            other => Err(MatchError::Corrupt(format!("match kind {other:?}"))),
        }
    }
}

/// Two players to be seated in one game. The match id is the game creation's idempotency key.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    /// Its id.
    pub match_id: Uuid,
    /// Queue pairing or invite.
    pub kind: MatchKind,
    /// The game's rule set.
    pub rules: String,
    /// The game's time control name.
    pub time_control: String,
    /// Whether the game is rated.
    pub rated: bool,
    /// South's player.
    pub south_player: String,
    /// North's player.
    pub north_player: String,
    /// South's ticket (queue matches).
    pub south_ticket: Option<String>,
    /// North's ticket (queue matches).
    pub north_ticket: Option<String>,
    /// The invite's code (invite matches).
    pub invite_code: Option<String>,
    /// The organiser's bulk (bulk matches).
    pub bulk_id: Option<String>,
    /// When it was made (ms since the Unix epoch).
    pub created_ms: u64,
    /// The game, once created.
    pub game_id: Option<Uuid>,
}

impl Match {
    /// The match a queue pairing makes of two waiting tickets (south first), not yet with a game.
    pub fn of_pair(queue: &Queue, south: &Ticket, north: &Ticket, now_ms: u64) -> Match {
        Match {
            match_id: Uuid::now_v7(),
            kind: MatchKind::Queue,
            rules: queue.rules.clone(),
            time_control: queue.time_control.clone(),
            rated: queue.rated,
            south_player: south.player.clone(),
            north_player: north.player.clone(),
            south_ticket: Some(south.ticket_id.clone()),
            north_ticket: Some(north.ticket_id.clone()),
            invite_code: None,
            bulk_id: None,
            created_ms: now_ms,
            game_id: None,
        }
    }
}

/// Where an invite is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InviteState {
    /// Waiting to be accepted.
    Open,
    /// Accepted: the match exists.
    Accepted,
    /// Withdrawn by its creator.
    Cancelled,
    /// Nobody accepted it in time.
    Expired,
}

impl InviteState {
    /// The name stored in the database.
    pub fn name(self) -> &'static str {
        match self {
            InviteState::Open => "open",
            InviteState::Accepted => "accepted",
            InviteState::Cancelled => "cancelled",
            InviteState::Expired => "expired",
        }
    }

    /// The state with this stored name.
    pub fn parse(name: &str) -> Result<InviteState, MatchError> {
        Ok(match name {
            "open" => InviteState::Open,
            "accepted" => InviteState::Accepted,
            "cancelled" => InviteState::Cancelled,
            "expired" => InviteState::Expired,
            other => return Err(MatchError::Corrupt(format!("invite state {other:?}"))),
        })
    }
}

/// A private invitation.
#[derive(Debug, Clone, PartialEq)]
pub struct Invite {
    /// The short code.
    pub code: String,
    /// Its creator.
    pub player: String,
    /// The creator's id for it (unique per creator).
    pub invite_id: String,
    /// The game's rule set.
    pub rules: String,
    /// The game's time control name.
    pub time_control: String,
    /// Where it is in its life.
    pub state: InviteState,
    /// When it expires (ms since the Unix epoch).
    pub expires_ms: u64,
    /// The match, once accepted.
    pub match_id: Option<Uuid>,
    /// Who accepted it.
    pub accepted_by: Option<String>,
    /// The game, once created.
    pub game_id: Option<Uuid>,
}

/// What a lobby event says (stored as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LobbyEventKind {
    /// The game exists; the player sits at `seat`.
    MatchFound {
        /// The game.
        game_id: Uuid,
        /// The player's seat.
        seat: Side,
        /// The other player.
        opponent: String,
        /// The paired ticket (queue matches).
        ticket_id: Option<String>,
        /// The invite (invite matches).
        invite_code: Option<String>,
        /// The organiser's bulk (bulk matches); absent from events stored before bulks existed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bulk_id: Option<String>,
    },
    /// A ticket's time to live ran out.
    TicketExpired {
        /// Which.
        ticket_id: String,
    },
    /// The opponent lost the seat; the player is queued again with priority.
    Requeued {
        /// The new ticket.
        ticket_id: String,
        /// The cancelled game.
        cancelled_game_id: Uuid,
    },
    /// An invite nobody accepted in time.
    InviteExpired {
        /// Its code.
        code: String,
    },
    /// A tournament the player is in paired a round (a wave) or finished: where it stands.
    TournamentStandings(Box<TournamentUpdate>),
}

/// What a tournament's entrant is told when a round is paired or the tournament finishes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TournamentUpdate {
    /// The tournament.
    pub tournament_id: String,
    /// Rounds whose every game has ended (an arena: waves made).
    pub rounds_completed: u32,
    /// Rounds in all (an arena: waves made).
    pub rounds: u32,
    /// The last round has ended: the table is final.
    pub finished: bool,
    /// The first lines of the table ([`crate::announce::TABLE_TOP`] at most).
    pub table: Vec<Standing>,
    /// The player's own line.
    pub you: Option<Standing>,
    /// The player's game of the round just paired, if this update is a pairing.
    pub next: Option<NextGame>,
}

/// An entrant's game of a round just paired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextGame {
    /// The round, from 1.
    pub round: u32,
    /// The opponent; `None` for a bye.
    pub opponent: Option<String>,
    /// The player's seat; `None` for a bye.
    pub seat: Option<Side>,
    /// When the round's games start (ms since the Unix epoch).
    pub start_ms: u64,
}

/// A stored lobby event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LobbyEvent {
    /// Position in the lobby log (increasing, not gapless per player).
    pub seq: u64,
    /// Whose.
    pub player: String,
    /// What.
    pub kind: LobbyEventKind,
}

/// How a game ended, as far as matchmaking cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndedResult {
    /// A side won.
    Won(Side),
    /// Nobody won, and both seats were kept (a draw).
    Drawn,
    /// The game was cancelled: these sides lost their seat at the deployment deadline.
    SeatLost(Vec<Side>),
    /// An operator stopped the game (`END_REASON_ABORTED`): no result, so no rating changes, and
    /// nobody is seated again (an operator who stops a game means it to stop).
    Aborted,
}

/// An ended game from the session's feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndedGame {
    /// The game.
    pub game_id: Uuid,
    /// South's player.
    pub south_player: String,
    /// North's player.
    pub north_player: String,
    /// How it ended.
    pub result: EndedResult,
    /// Plies played (moves and timeouts).
    pub plies: u32,
    /// Whether the board decided it (a flag captured, an HQ entered, no legal moves, the
    /// no-combat limit) rather than a player's choice or absence (a resignation, an agreed draw,
    /// timeouts, a disconnection): only those can end a game too early to count.
    pub decided_on_board: bool,
}

/// What the store holds about a game matchmaking made, read for the end-of-game policy
/// ([`crate::policy::on_game_ended`]) under the locks its write takes, so nothing it decides from
/// changes before the plan is persisted.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldMatch {
    /// The match whose game ended.
    pub the_match: Match,
    /// South's rating and rated games settled (the default rating and 0 for a new player).
    pub south_rating: (Rating, u32),
    /// North's rating and rated games settled.
    pub north_rating: (Rating, u32),
    /// Rated games between the same two players (either seat) whose end was handled since the
    /// pair window's start, this one not included: the pair cap's count
    /// ([`crate::policy::RatingIntegrity`]).
    pub rated_between_recently: u32,
}

/// A player's rating as a settled game leaves it.
#[derive(Debug, Clone, PartialEq)]
pub struct RatingChange {
    /// Whose.
    pub player: String,
    /// The new rating.
    pub rating: Rating,
    /// Rated games settled, this one included.
    pub games: u32,
}

/// What a game's end changes, decided once by [`crate::policy::on_game_ended`]; a store persists
/// it as it is, all or nothing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EndOfGamePlan {
    /// South's and north's new ratings (in that order), when the game was rated with a result.
    pub ratings: Option<[RatingChange; 2]>,
    /// Priority tickets to store. Each replaces its player's waiting tickets in its queue: those
    /// become cancelled.
    pub requeue: Vec<Ticket>,
    /// Lobby events to write: (player, what).
    pub events: Vec<(String, LobbyEventKind)>,
    /// Lifecycle facts about the game to record with the plan (the rating change), in the same
    /// transaction; the store gives each its id.
    pub facts: Vec<FactBody>,
    /// How the game ended, kept with the handled game for a bulk's status (`None` for a game
    /// matchmaking did not make).
    pub outcome: Option<GameOutcome>,
}

impl EndOfGamePlan {
    /// The plan's facts about `game_id`, each with a fresh id, as the store records them.
    pub fn new_facts(&self, game_id: Uuid) -> Vec<NewFact> {
        self.facts
            .iter()
            .map(|body| NewFact::new(game_id, body.clone()))
            .collect()
    }
}

/// The end-of-game policy as a store calls it, with what it holds about the game's match (`None`
/// for a game matchmaking did not make). Like [`Pairer`], the decision is the caller's; the store
/// only reads, locks and persists.
pub type EndPolicy<'a> = &'a (dyn Fn(Option<&HeldMatch>) -> EndOfGamePlan + Send + Sync);

/// A game with a computer seat, driven by one process at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComputerGame {
    /// The game.
    pub game_id: Uuid,
    /// The person playing it.
    pub player: String,
    /// The person's request id (unique per person).
    pub request_id: String,
    /// The rule set name.
    pub rules: String,
    /// The computer's seat.
    pub side: Side,
    /// The computer player's seed.
    pub seed: u64,
    /// The computer's playing level, kept so a driver that takes the game over after a restart
    /// plays it at the level the person chose.
    pub level: hidden_front_bot::Level,
}

/// How the pairing rule picks pairs from a queue's waiting tickets (given priority first, then
/// oldest first): indices into that slice, each used at most once.
pub type Pairer<'a> = &'a (dyn Fn(&[Ticket]) -> Vec<(usize, usize)> + Send + Sync);

/// Matchmaking's storage.
#[async_trait]
pub trait MatchStore: Send + Sync {
    /// Stores a waiting ticket; a retry (same player and ticket id) returns the stored ticket as it
    /// is now. A second waiting ticket of the player in the same queue is `AlreadyExists`.
    async fn enqueue(&self, ticket: Ticket) -> Result<Ticket, MatchError>;
    /// A player's ticket.
    async fn ticket(&self, player: &str, ticket_id: &str) -> Result<Option<Ticket>, MatchError>;
    /// Cancels a waiting ticket (a cancelled one is returned as it is); a matched or expired one is
    /// `FailedPrecondition`.
    async fn cancel_ticket(&self, player: &str, ticket_id: &str) -> Result<Ticket, MatchError>;
    /// Expires waiting tickets and open invites whose time ran out, with a lobby event each.
    async fn expire(&self, now_ms: u64) -> Result<(Vec<Ticket>, Vec<Invite>), MatchError>;
    /// Queues with waiting tickets.
    async fn waiting_queues(&self) -> Result<Vec<Queue>, MatchError>;
    /// Waiting tickets (rated, casual), for the gauge.
    async fn waiting_counts(&self) -> Result<(u64, u64), MatchError>;
    /// Pairs a queue's unexpired waiting tickets with `pairer`, atomically: every ticket it pairs
    /// becomes matched in one new match (south = the pair's first). A ticket is never paired twice,
    /// even by racing processes. Returns the new matches with their two tickets (south, north).
    async fn pair(
        &self,
        queue: &Queue,
        now_ms: u64,
        pairer: Pairer<'_>,
    ) -> Result<Vec<(Match, Ticket, Ticket)>, MatchError>;
    /// Matches whose game is not recorded yet, made before `before_ms`, bulk matches left out
    /// (seated at their start by [`MatchStore::due_matches`]).
    async fn pending_matches(&self, before_ms: u64) -> Result<Vec<Match>, MatchError>;
    /// Records a match's game and, the first time, tells both players (`MatchFound`).
    async fn complete_match(
        &self,
        match_id: Uuid,
        game_id: Uuid,
        now_ms: u64,
    ) -> Result<Match, MatchError>;
    /// Stores an open invite; a retry (same player and invite id) returns the stored invite. A
    /// code already in use is `AlreadyExists` (the caller draws another).
    async fn create_invite(&self, invite: Invite) -> Result<Invite, MatchError>;
    /// An invite by code.
    async fn invite(&self, code: &str) -> Result<Option<Invite>, MatchError>;
    /// Accepts an open, unexpired invite for `player` (not its creator), making its match with the
    /// creator south. Accepting again by the same player returns the same match.
    async fn accept_invite(
        &self,
        code: &str,
        player: &str,
        now_ms: u64,
    ) -> Result<Match, MatchError>;
    /// Withdraws an open invite (creator only); a cancelled one is returned as it is.
    async fn cancel_invite(&self, player: &str, code: &str) -> Result<Invite, MatchError>;
    /// A player's rating and rated games settled (the default rating for a new player).
    async fn rating(&self, player: &str) -> Result<(Rating, u32), MatchError>;
    /// Applies a game's end once: marks the game handled and, the first time, reads what it holds
    /// about the game's match ([`HeldMatch`], with the rated games between its two players
    /// handled at or after `pair_since_ms`), asks `decide` for the plan and persists it, all
    /// atomically. Returns the plan persisted, or `None` when the game's end had been applied
    /// before (by this process or another, even at the same moment): then nothing changes.
    async fn apply_ended_game(
        &self,
        game_id: Uuid,
        now_ms: u64,
        pair_since_ms: u64,
        decide: EndPolicy<'_>,
    ) -> Result<Option<EndOfGamePlan>, MatchError>;
    /// How far the ended-games feed has been read.
    async fn feed_cursor(&self) -> Result<u64, MatchError>;
    /// Moves the feed position forward (never back).
    async fn advance_feed(&self, cursor: u64) -> Result<(), MatchError>;
    /// A player's lobby events after `after_seq`, oldest first, at most `limit`.
    async fn lobby_events(
        &self,
        player: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<LobbyEvent>, MatchError>;
    /// Wake-ups: the player id whose lobby got an event (from any process on the same store), or
    /// an empty string meaning "anyone's may have" (after a lost connection).
    async fn lobby_wakeups(&self) -> Result<tokio::sync::broadcast::Receiver<String>, MatchError>;
    /// Records a computer game, unclaimed; a retry (same player and request id) returns the
    /// stored one.
    async fn add_computer_game(&self, game: ComputerGame) -> Result<ComputerGame, MatchError>;
    /// The computer game of a player's request.
    async fn computer_game(
        &self,
        player: &str,
        request_id: &str,
    ) -> Result<Option<ComputerGame>, MatchError>;
    /// Claims an unfinished computer game whose lease lapsed, for `owner` until `lease_until_ms`.
    async fn claim_computer_game(
        &self,
        owner: &str,
        now_ms: u64,
        lease_until_ms: u64,
    ) -> Result<Option<ComputerGame>, MatchError>;
    /// Extends `owner`'s lease; false when another owner holds the game now (or it finished).
    async fn renew_computer_lease(
        &self,
        game_id: Uuid,
        owner: &str,
        lease_until_ms: u64,
    ) -> Result<bool, MatchError>;
    /// Marks a computer game finished: nobody drives it again.
    async fn finish_computer_game(&self, game_id: Uuid) -> Result<(), MatchError>;
    /// Stores an organiser's bulk and its matches, all or nothing. A retry (same id, same
    /// content: [`NewBulk::is_retry_of`]) returns the stored bulk as it is now; the same id with
    /// other content is `AlreadyExists` (`BULK_EXISTS`).
    async fn create_bulk(&self, bulk: NewBulk) -> Result<Bulk, MatchError> {
        self.create_bulk_noting(bulk, Notices::default()).await
    }
    /// [`MatchStore::create_bulk`], writing `notices` with the bulk (a tournament's round) only
    /// when this call stored it: a retry or a racing second creation writes none.
    async fn create_bulk_noting(&self, bulk: NewBulk, notices: Notices)
    -> Result<Bulk, MatchError>;
    /// A bulk with every game's match and, once its end was handled, outcome.
    async fn bulk(&self, bulk_id: &str) -> Result<Option<Bulk>, MatchError>;
    /// The bulks of `bulk_ids` that exist, each as [`MatchStore::bulk`] reads it, in the order
    /// asked (read together: a tournament's rounds in one go).
    async fn bulks(&self, bulk_ids: &[String]) -> Result<Vec<Bulk>, MatchError>;
    /// Cancels a bulk none of whose games exists, unless it starts within `margin_ms` of
    /// `now_ms` ([`Bulk::check_cancellable`]); cancelling it again returns it as it is. A
    /// cancelled bulk's matches are never due.
    async fn cancel_bulk(
        &self,
        bulk_id: &str,
        now_ms: u64,
        margin_ms: u64,
    ) -> Result<Bulk, MatchError>;
    /// Bulk matches without a game whose start time is at or before `now_ms`, of bulks not
    /// cancelled, earliest start first, at most `limit`. ([`MatchStore::pending_matches`] never
    /// returns a bulk's match: a bulk's are seated only from here, at their start.)
    async fn due_matches(&self, now_ms: u64, limit: usize) -> Result<Vec<Match>, MatchError>;
    /// Stores an organiser's tournament. A retry (same id, same content:
    /// [`Tournament::is_retry_of`]) returns the stored one; the same id with other content is
    /// `AlreadyExists` (`TOURNAMENT_EXISTS`).
    async fn create_tournament(&self, tournament: Tournament) -> Result<Tournament, MatchError> {
        self.create_tournament_noting(tournament, Notices::default())
            .await
    }
    /// [`MatchStore::create_tournament`], writing `notices` with it only when this call stored it.
    async fn create_tournament_noting(
        &self,
        tournament: Tournament,
        notices: Notices,
    ) -> Result<Tournament, MatchError>;
    /// A tournament by id.
    async fn tournament(&self, tournament_id: &str) -> Result<Option<Tournament>, MatchError>;
    /// Tournaments not finished, oldest first, at most `limit`.
    async fn running_tournaments(&self, limit: usize) -> Result<Vec<Tournament>, MatchError>;
    /// Marks a tournament finished at `now_ms` and writes `notices` with it; a finished one
    /// keeps its first time and writes nothing. True when this call finished it.
    async fn finish_tournament(
        &self,
        tournament_id: &str,
        now_ms: u64,
        notices: Notices,
    ) -> Result<bool, MatchError>;
    /// Applies `change` to a tournament's stored form (a join or a withdrawal, with its checks)
    /// and stores its entrants and paused players, atomically with respect to other changes of the same tournament.
    /// `NotFound` (`TOURNAMENT_NOT_FOUND`) for an unknown id; `change`'s refusal changes nothing.
    async fn change_entrants(
        &self,
        tournament_id: &str,
        change: EntrantChange<'_>,
    ) -> Result<Tournament, MatchError>;
}

/// What a tournament's step tells others, written by the store with the step (in its transaction
/// on Postgres) and only by the call that made it, so each is written once however many processes
/// try the step (`crate::announce` builds them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Notices {
    /// Lifecycle facts, for the outbox (the feed and the webhooks).
    pub facts: Vec<NewFact>,
    /// Lobby events, each for its player's own stream.
    pub events: Vec<(String, LobbyEventKind)>,
}

/// A change of a tournament's entrants, decided by the caller from the stored tournament; the store
/// only reads, locks and persists (as [`EndPolicy`]).
pub type EntrantChange<'a> =
    &'a (dyn Fn(Tournament) -> Result<Tournament, MatchError> + Send + Sync);

/// The lobby events a completed match gives its two players.
pub(crate) fn match_found_events(m: &Match, game_id: Uuid) -> [(String, LobbyEventKind); 2] {
    [
        (
            m.south_player.clone(),
            LobbyEventKind::MatchFound {
                game_id,
                seat: Side::South,
                opponent: m.north_player.clone(),
                ticket_id: m.south_ticket.clone(),
                invite_code: m.invite_code.clone(),
                bulk_id: m.bulk_id.clone(),
            },
        ),
        (
            m.north_player.clone(),
            LobbyEventKind::MatchFound {
                game_id,
                seat: Side::North,
                opponent: m.south_player.clone(),
                ticket_id: m.north_ticket.clone(),
                invite_code: m.invite_code.clone(),
                bulk_id: m.bulk_id.clone(),
            },
        ),
    ]
}
