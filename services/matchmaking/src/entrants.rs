//! The players' side of organisers' tournaments (`MatchmakingService`'s `ListTournaments`,
//! `JoinTournament`, `WithdrawTournament`, which the gateway forwards for the authenticated
//! player): the tournaments a player may see, and entering or leaving one open to players until
//! [`REGISTRATION_MARGIN`] before its start, when its first round may be paired from its entrants.
//! An arena under way takes the same two calls as pause and resume: an entrant who withdraws is
//! paused (paired in no new wave, points kept), and joining again resumes them; a player not in
//! an arena open to players joins it late.

use crate::organiser::tournament_to_proto;
use crate::service::{MatchmakingService, check_id, match_error_status};
use crate::store::{Tournament, TournamentEntrant};
use hidden_front_api_error::Reason;
use hidden_front_proto::v1 as pb;
use std::time::Duration;
use tonic::Status;

/// Players join or withdraw until this long before a tournament's start.
pub const REGISTRATION_MARGIN: Duration = Duration::from_secs(5);
/// The most tournaments a list answers.
const LISTED: usize = 200;

fn margin_ms() -> u64 {
    u64::try_from(REGISTRATION_MARGIN.as_millis()).unwrap_or(u64::MAX)
}

impl MatchmakingService {
    /// Tournaments not finished that are open to players or have `player` as an entrant, newest
    /// first.
    pub(crate) async fn tournaments_for(
        &self,
        r: pb::ListTournamentsRequest,
    ) -> Result<pb::ListTournamentsResponse, Status> {
        check_id("player", &r.player)?;
        let store = self.store();
        let now = self.config().clock.now_unix_ms();
        let mut listed: Vec<_> = store
            .running_tournaments(1000)
            .await
            .map_err(match_error_status)?
            .into_iter()
            .filter(|t| t.open_to_players || t.entrants.iter().any(|e| e.id == r.player))
            .collect();
        listed.reverse();
        listed.truncate(LISTED);
        let mut tournaments = Vec::with_capacity(listed.len());
        for t in &listed {
            tournaments.push(tournament_to_proto(&**store, self.settled_rounds(), t, now).await?);
        }
        Ok(pb::ListTournamentsResponse { tournaments })
    }

    /// A tournament by id, as its players see it.
    pub(crate) async fn show_for(
        &self,
        r: pb::ShowTournamentRequest,
    ) -> Result<pb::ShowTournamentResponse, Status> {
        check_id("tournament_id", &r.tournament_id)?;
        let store = self.store();
        let t = store
            .tournament(&r.tournament_id)
            .await
            .map_err(match_error_status)?
            .ok_or_else(|| match_error_status(Tournament::not_found(&r.tournament_id)))?;
        let now = self.config().clock.now_unix_ms();
        Ok(pb::ShowTournamentResponse {
            tournament: Some(tournament_to_proto(&**store, self.settled_rounds(), &t, now).await?),
        })
    }

    /// Enters `r.player` in a tournament open to players (as it is, if they are in it).
    pub(crate) async fn join_for(
        &self,
        r: pb::JoinTournamentRequest,
    ) -> Result<pb::JoinTournamentResponse, Status> {
        check_id("player", &r.player)?;
        check_id("tournament_id", &r.tournament_id)?;
        let store = self.store();
        let (rating, _) = store.rating(&r.player).await.map_err(match_error_status)?;
        let entrant = TournamentEntrant {
            id: r.player.clone(),
            rating: rating.rating.round() as i32,
        };
        let now = self.config().clock.now_unix_ms();
        let (guest, bot) = (r.guest, r.bot);
        let join = move |t: Tournament| {
            let entrant_already = t.entrants.iter().any(|e| e.id == entrant.id);
            let under_way = t.is_arena_under_way(now, margin_ms());
            if !under_way {
                t.check_registration(now, margin_ms())?;
            }
            if entrant_already && under_way {
                return t.resumed_or_joined(entrant.clone());
            }
            if bot && !t.allow_bots {
                return Err(not_allowed(
                    "accounts marked as bots may enter only tournaments that allow bots",
                ));
            }
            if guest && t.rated {
                return Err(not_allowed(
                    "guests may enter unrated tournaments only; sign in for rated ones",
                ));
            }
            match under_way {
                true => t.resumed_or_joined(entrant.clone()),
                false => t.joined(entrant.clone()),
            }
        };
        let t = store
            .change_entrants(&r.tournament_id, &join)
            .await
            .map_err(match_error_status)?;
        Ok(pb::JoinTournamentResponse {
            tournament: Some(tournament_to_proto(&**store, self.settled_rounds(), &t, now).await?),
        })
    }

    /// Takes `r.player` out of a tournament before its start, or pauses them in an arena under
    /// way (as it is, if they are not in it).
    pub(crate) async fn withdraw_for(
        &self,
        r: pb::WithdrawTournamentRequest,
    ) -> Result<pb::WithdrawTournamentResponse, Status> {
        check_id("player", &r.player)?;
        check_id("tournament_id", &r.tournament_id)?;
        let store = self.store();
        let now = self.config().clock.now_unix_ms();
        let player = r.player.clone();
        let withdraw = move |t: Tournament| {
            if t.is_arena_under_way(now, margin_ms()) {
                return Ok(t.paused_by(&player));
            }
            t.check_registration(now, margin_ms())?;
            Ok(t.withdrawn(&player))
        };
        let t = store
            .change_entrants(&r.tournament_id, &withdraw)
            .await
            .map_err(match_error_status)?;
        Ok(pb::WithdrawTournamentResponse {
            tournament: Some(tournament_to_proto(&**store, self.settled_rounds(), &t, now).await?),
        })
    }
}

/// A refusal the player's account causes. The status takes its code from the reason
/// (`NOT_ALLOWED`: PERMISSION_DENIED), whichever variant carries it.
fn not_allowed(why: &str) -> crate::store::MatchError {
    crate::store::MatchError::FailedPrecondition(Reason::NotAllowed, why.to_owned())
}
