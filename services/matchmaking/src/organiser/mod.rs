//! `OrganiserService` (`organiser.proto`): organisers create many games at once for pairs of
//! players they chose, with one start time, follow them with one call and cancel them before they
//! start. Served beside `MatchmakingService` on the internal port, on the same store and clock,
//! behind the operator tokens every operator API uses (`hidden-front-operator-auth`).
//!
//! A bulk is stored whole before the call answers ([`crate::store::bulk`]); its games are created
//! by the pairing loop of any matchmaking process once the start time has come
//! ([`MatchmakingService::pairing_round`]), so a game's clocks start then, and a process that
//! dies while starting a bulk leaves the rest to the next round. docs/organisers.md.

use crate::service::{
    COMPUTER_PLAYER, MatchmakingService, check_id, match_error_status, parse_rules,
    parse_time_control,
};
use crate::store::{Bulk, BulkGame, GameOutcome, NewBulk};

mod tournament;

use hidden_front_api_error::{ApiError, Reason};
use hidden_front_operator_auth::{AdminTokens, Operator};
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::organiser_service_server::{
    OrganiserService as OrganiserApi, OrganiserServiceServer,
};
use std::collections::HashMap;
use std::time::Duration;
use tonic::{Request, Response, Status};
pub use tournament::standing_to_proto;
pub(crate) use tournament::tournament_to_proto;

/// The most pairs one bulk may hold.
pub const MAX_BULK_PAIRS: usize = 1000;
/// How far ahead a bulk may start.
pub const MAX_START_AHEAD: Duration = Duration::from_secs(7 * 24 * 3600);
/// A start up to this far in the past is taken as "now" (the organiser's clock and ours differ
/// by a little; the request took a little to arrive). Earlier is refused.
pub const START_SKEW: Duration = Duration::from_secs(1);

/// The organisers' API on a matchmaking service.
#[derive(Clone)]
pub struct Organiser {
    matchmaking: MatchmakingService,
    tokens: AdminTokens,
}

impl Organiser {
    /// The organisers' API over `matchmaking`'s store and clock, open to the holders of `tokens`.
    pub fn new(matchmaking: MatchmakingService, tokens: AdminTokens) -> Organiser {
        Organiser {
            matchmaking,
            tokens,
        }
    }

    /// The tonic service to add to a gRPC server (internal port only).
    pub fn server(&self) -> OrganiserServiceServer<Organiser> {
        OrganiserServiceServer::new(self.clone())
    }

    fn operator<T>(&self, request: &Request<T>) -> Result<Operator, Status> {
        self.tokens.authenticate(request.metadata())
    }

    fn now_ms(&self) -> u64 {
        self.matchmaking.config().clock.now_unix_ms()
    }

    /// The answer: the bulk with every game's state at `now_ms`.
    fn answer(&self, bulk: &Bulk) -> pb::Bulk {
        bulk_to_proto(bulk, self.now_ms())
    }
}

/// The players a request names, checked as they are added: each an id, not the computer, none
/// twice.
struct Players<'a> {
    /// The list's field, named in a `PLAYER_TWICE` refusal beside the second place.
    list: &'static str,
    /// What holds them ("a bulk"), for messages.
    what: &'static str,
    /// Each player seen, with the field where.
    seen: HashMap<&'a str, String>,
}

impl<'a> Players<'a> {
    fn new(list: &'static str, what: &'static str) -> Players<'a> {
        Players {
            list,
            what,
            seen: HashMap::new(),
        }
    }

    fn add(&mut self, field: String, player: &'a str) -> Result<(), Status> {
        check_id(&field, player)?;
        if player == COMPUTER_PLAYER {
            return Err(ApiError::invalid_field(
                &field,
                format!(
                    "{COMPUTER_PLAYER:?} is the computer's seat, which {} cannot pair \
                     (PlayComputer does)",
                    self.what
                ),
            )
            .into());
        }
        if let Some(first) = self.seen.get(player) {
            return Err(ApiError::new(
                Reason::PlayerTwice,
                format!(
                    "{field}: player {player:?} is already in {} at {first}",
                    self.what
                ),
            )
            .with_violation(&field, format!("{player:?} appears at {first} too"))
            .with_violation(
                self.list,
                format!("a player may be named once in {}", self.what),
            )
            .into());
        }
        self.seen.insert(player, field);
        Ok(())
    }
}

/// The pairs of a request, checked: every player an id, not the computer, none twice.
fn checked_pairs(pairs: &[pb::BulkPair]) -> Result<Vec<(String, String)>, Status> {
    if pairs.is_empty() {
        return Err(ApiError::invalid_field("pairs", "at least one pair is required").into());
    }
    if pairs.len() > MAX_BULK_PAIRS {
        return Err(ApiError::invalid_field(
            "pairs",
            format!(
                "{} pairs; a bulk holds at most {MAX_BULK_PAIRS}",
                pairs.len()
            ),
        )
        .into());
    }
    let mut players = Players::new("pairs", "a bulk");
    for (i, pair) in pairs.iter().enumerate() {
        players.add(format!("pairs[{i}].south_player"), &pair.south_player)?;
        players.add(format!("pairs[{i}].north_player"), &pair.north_player)?;
    }
    Ok(pairs
        .iter()
        .map(|p| (p.south_player.clone(), p.north_player.clone()))
        .collect())
}

/// The start a request asks for, at `now_ms`: 0 is now; a time more than [`START_SKEW`] in the
/// past or more than [`MAX_START_AHEAD`] ahead is refused.
fn checked_start(start_at_unix_ms: u64, now_ms: u64) -> Result<u64, Status> {
    if start_at_unix_ms == 0 {
        return Ok(now_ms);
    }
    let skew = u64::try_from(START_SKEW.as_millis()).unwrap_or(u64::MAX);
    let ahead = u64::try_from(MAX_START_AHEAD.as_millis()).unwrap_or(u64::MAX);
    let refuse = |why: String| -> Status {
        ApiError::new(
            Reason::StartTimeInvalid,
            format!("start_at_unix_ms: {start_at_unix_ms} {why}"),
        )
        .with_violation("start_at_unix_ms", why)
        .into()
    };
    if start_at_unix_ms.saturating_add(skew) < now_ms {
        return Err(refuse(format!(
            "is in the past (it is {now_ms} now); 0 starts the games at once"
        )));
    }
    if start_at_unix_ms > now_ms.saturating_add(ahead) {
        return Err(refuse(format!(
            "is more than {} days ahead (it is {now_ms} now)",
            MAX_START_AHEAD.as_secs() / 86_400
        )));
    }
    Ok(start_at_unix_ms.max(now_ms))
}

fn outcome_to_proto(outcome: GameOutcome) -> pb::BulkGameOutcome {
    match outcome {
        GameOutcome::SouthWon => pb::BulkGameOutcome::SouthWon,
        GameOutcome::NorthWon => pb::BulkGameOutcome::NorthWon,
        GameOutcome::Drawn => pb::BulkGameOutcome::Drawn,
        GameOutcome::SouthForfeited => pb::BulkGameOutcome::SouthForfeited,
        GameOutcome::NorthForfeited => pb::BulkGameOutcome::NorthForfeited,
        GameOutcome::Cancelled => pb::BulkGameOutcome::Cancelled,
        GameOutcome::Aborted => pb::BulkGameOutcome::Aborted,
    }
}

/// Where one game of `bulk` is at `now_ms`.
fn game_state(bulk: &Bulk, game: &BulkGame, now_ms: u64) -> pb::BulkGameState {
    match (&game.the_match.game_id, game.outcome) {
        (Some(_), Some(_)) => pb::BulkGameState::Ended,
        (Some(_), None) => pb::BulkGameState::Playing,
        (None, _) if bulk.cancelled_ms.is_some() => pb::BulkGameState::Cancelled,
        (None, _) if now_ms < bulk.start_ms => pb::BulkGameState::Scheduled,
        (None, _) => pb::BulkGameState::Starting,
    }
}

/// The wire form of a bulk as it is at `now_ms`.
pub fn bulk_to_proto(bulk: &Bulk, now_ms: u64) -> pb::Bulk {
    let mut answer = pb::Bulk {
        bulk_id: bulk.bulk_id.clone(),
        organiser: bulk.organiser.clone(),
        rules: bulk.rules.clone(),
        time_control: bulk.time_control.clone(),
        rated: bulk.rated,
        start_at_unix_ms: bulk.start_ms,
        created_at_unix_ms: bulk.created_ms,
        cancelled_at_unix_ms: bulk.cancelled_ms.unwrap_or(0),
        ..Default::default()
    };
    for game in &bulk.games {
        let state = game_state(bulk, game, now_ms);
        let count = match state {
            pb::BulkGameState::Scheduled => &mut answer.games_scheduled,
            pb::BulkGameState::Starting => &mut answer.games_starting,
            pb::BulkGameState::Playing => &mut answer.games_playing,
            pb::BulkGameState::Ended => &mut answer.games_ended,
            pb::BulkGameState::Cancelled | pb::BulkGameState::Unspecified => {
                &mut answer.games_cancelled
            }
        };
        *count += 1;
        answer.games.push(pb::BulkGame {
            south_player: game.the_match.south_player.clone(),
            north_player: game.the_match.north_player.clone(),
            state: state as i32,
            game_id: game
                .the_match
                .game_id
                .map(|g| g.to_string())
                .unwrap_or_default(),
            outcome: game.outcome.map_or(0, |o| outcome_to_proto(o) as i32),
        });
    }
    let ended = answer.games_ended as usize == bulk.games.len();
    answer.state = if bulk.cancelled_ms.is_some() {
        pb::BulkState::Cancelled
    } else if now_ms < bulk.start_ms {
        pb::BulkState::Scheduled
    } else if ended {
        pb::BulkState::Finished
    } else {
        pb::BulkState::Started
    } as i32;
    answer
}

#[tonic::async_trait]
impl OrganiserApi for Organiser {
    async fn create_bulk(
        &self,
        request: Request<pb::CreateBulkRequest>,
    ) -> Result<Response<pb::CreateBulkResponse>, Status> {
        let operator = self.operator(&request)?;
        let r = request.into_inner();
        check_id("bulk_id", &r.bulk_id)?;
        tournament::check_own_bulk_id(&r.bulk_id)?;
        let rules = parse_rules("rules", &r.rules)?.name();
        let time_control = parse_time_control("time_control", &r.time_control, "online")?;
        let pairs = checked_pairs(&r.pairs)?;
        let store = self.matchmaking.store();
        let now = self.now_ms();
        // A retry answers the stored bulk even once its start has passed (the start it names
        // would be refused as a new one); 0 names the start its first call resolved to.
        let stored = store.bulk(&r.bulk_id).await.map_err(match_error_status)?;
        let start_ms = match &stored {
            Some(stored) if r.start_at_unix_ms == 0 => stored.created_ms,
            Some(_) => r.start_at_unix_ms,
            None => checked_start(r.start_at_unix_ms, now)?,
        };
        let new = NewBulk {
            bulk_id: r.bulk_id,
            organiser: operator.name,
            rules,
            time_control,
            rated: r.rated,
            start_ms,
            created_ms: now,
            pairs,
        };
        if let Some(stored) = stored {
            return if new.is_retry_of(&stored) {
                Ok(Response::new(pb::CreateBulkResponse {
                    bulk: Some(self.answer(&stored)),
                }))
            } else {
                Err(match_error_status(new.conflict()))
            };
        }
        let bulk = store.create_bulk(new).await.map_err(match_error_status)?;
        tracing::info!(bulk_id = %bulk.bulk_id, organiser = %bulk.organiser, games = bulk.games.len(), start_ms = bulk.start_ms, "bulk created");
        Ok(Response::new(pb::CreateBulkResponse {
            bulk: Some(self.answer(&bulk)),
        }))
    }

    async fn get_bulk(
        &self,
        request: Request<pb::GetBulkRequest>,
    ) -> Result<Response<pb::GetBulkResponse>, Status> {
        self.operator(&request)?;
        let r = request.into_inner();
        check_id("bulk_id", &r.bulk_id)?;
        let bulk = self
            .matchmaking
            .store()
            .bulk(&r.bulk_id)
            .await
            .map_err(match_error_status)?
            .ok_or_else(|| match_error_status(Bulk::not_found(&r.bulk_id)))?;
        Ok(Response::new(pb::GetBulkResponse {
            bulk: Some(self.answer(&bulk)),
        }))
    }

    async fn cancel_bulk(
        &self,
        request: Request<pb::CancelBulkRequest>,
    ) -> Result<Response<pb::CancelBulkResponse>, Status> {
        let operator = self.operator(&request)?;
        let r = request.into_inner();
        check_id("bulk_id", &r.bulk_id)?;
        tournament::check_own_bulk_id(&r.bulk_id)?;
        let margin = self.matchmaking.config().bulk_cancel_margin;
        let bulk = self
            .matchmaking
            .store()
            .cancel_bulk(
                &r.bulk_id,
                self.now_ms(),
                u64::try_from(margin.as_millis()).unwrap_or(u64::MAX),
            )
            .await
            .map_err(match_error_status)?;
        tracing::info!(bulk_id = %bulk.bulk_id, operator = %operator.name, "bulk cancelled");
        Ok(Response::new(pb::CancelBulkResponse {
            bulk: Some(self.answer(&bulk)),
        }))
    }

    async fn create_tournament(
        &self,
        request: Request<pb::CreateTournamentRequest>,
    ) -> Result<Response<pb::CreateTournamentResponse>, Status> {
        let operator = self.operator(&request)?;
        let tournament = self
            .create_tournament_for(operator, request.into_inner())
            .await?;
        Ok(Response::new(pb::CreateTournamentResponse {
            tournament: Some(tournament),
        }))
    }

    async fn get_tournament(
        &self,
        request: Request<pb::GetTournamentRequest>,
    ) -> Result<Response<pb::GetTournamentResponse>, Status> {
        self.operator(&request)?;
        let tournament = self
            .get_tournament_for(&request.into_inner().tournament_id)
            .await?;
        Ok(Response::new(pb::GetTournamentResponse {
            tournament: Some(tournament),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hidden_front_api_error::ErrorSummary;

    fn pair(south: &str, north: &str) -> pb::BulkPair {
        pb::BulkPair {
            south_player: south.into(),
            north_player: north.into(),
        }
    }

    fn refused(status: &Status) -> (String, String) {
        let summary = ErrorSummary::of(status);
        (summary.reason.to_string(), status.message().to_string())
    }

    #[test]
    fn a_player_twice_is_refused_naming_both_places() {
        let (reason, message) =
            refused(&checked_pairs(&[pair("ann", "bob"), pair("cy", "bob")]).unwrap_err());
        assert_eq!(reason, "PLAYER_TWICE");
        assert!(message.contains("pairs[1].north_player"), "{message}");
        assert!(message.contains("pairs[0].north_player"), "{message}");
        let (reason, _) = refused(&checked_pairs(&[pair("ann", "ann")]).unwrap_err());
        assert_eq!(reason, "PLAYER_TWICE");
    }

    #[test]
    fn pairs_must_name_players_and_not_the_computer() {
        let (reason, message) = refused(&checked_pairs(&[]).unwrap_err());
        assert_eq!(reason, "INVALID_FIELD");
        assert!(message.contains("pairs"), "{message}");
        let (_, message) = refused(&checked_pairs(&[pair("ann", "")]).unwrap_err());
        assert!(message.contains("pairs[0].north_player"), "{message}");
        let (_, message) = refused(&checked_pairs(&[pair(COMPUTER_PLAYER, "x")]).unwrap_err());
        assert!(message.contains("pairs[0].south_player"), "{message}");
        let many: Vec<_> = (0..=MAX_BULK_PAIRS)
            .map(|i| pair(&format!("s{i}"), &format!("n{i}")))
            .collect();
        assert!(checked_pairs(&many).is_err());
        assert_eq!(
            checked_pairs(&many[..MAX_BULK_PAIRS]).unwrap().len(),
            MAX_BULK_PAIRS
        );
    }

    #[test]
    fn a_start_in_the_past_or_too_far_ahead_is_refused() {
        let now = 1_800_000_000_000;
        assert_eq!(checked_start(0, now).unwrap(), now);
        assert_eq!(checked_start(now + 60_000, now).unwrap(), now + 60_000);
        // Within the skew: now.
        assert_eq!(checked_start(now - 500, now).unwrap(), now);
        let (reason, message) = refused(&checked_start(now - 1_001, now).unwrap_err());
        assert_eq!(reason, "START_TIME_INVALID");
        assert!(message.contains("start_at_unix_ms"), "{message}");
        let week = 7 * 24 * 3600 * 1000;
        assert!(checked_start(now + week, now).is_ok());
        let (reason, _) = refused(&checked_start(now + week + 1, now).unwrap_err());
        assert_eq!(reason, "START_TIME_INVALID");
    }
}
