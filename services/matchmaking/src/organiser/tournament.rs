//! `CreateTournament` and `GetTournament`: the request checked at the edge, the answer read from
//! the tournament's rounds' bulks (`crate::tournament::progress`).

use super::{Organiser, Players, bulk_to_proto, checked_start};
use crate::announce;
use crate::service::{check_id, match_error_status, parse_rules, parse_time_control};
use crate::store::tournament::ROUND_BULK_PREFIX;
use crate::store::tournament::capacity;
use crate::store::{
    MatchError, MatchStore, Standing, Tournament, TournamentEntrant, TournamentFormat,
};
use crate::tournament::{SettledRounds, Step, progress, round_bulks};
use hidden_front_api_error::ApiError;
use hidden_front_operator_auth::Operator;
use hidden_front_proto::v1 as pb;
use tonic::Status;

/// The most rounds of a Swiss.
pub const MAX_SWISS_ROUNDS: u32 = 20;
/// The longest pause between rounds.
pub const MAX_PAUSE_SECONDS: u32 = 3600;
/// The longest arena, in minutes.
pub const MAX_ARENA_MINUTES: u32 = 720;
/// The longest tournament id: its rounds' bulk ids add about 20 bytes to it.
const MAX_TOURNAMENT_ID_BYTES: usize = 100;

/// Refuses an organiser's bulk id that a tournament's rounds use.
pub(super) fn check_own_bulk_id(bulk_id: &str) -> Result<(), Status> {
    if bulk_id.starts_with(ROUND_BULK_PREFIX) {
        return Err(ApiError::invalid_field(
            "bulk_id",
            format!("ids beginning {ROUND_BULK_PREFIX:?} are the rounds of tournaments"),
        )
        .into());
    }
    Ok(())
}

fn format_of(value: i32) -> Result<TournamentFormat, Status> {
    match pb::TournamentFormat::try_from(value) {
        Ok(pb::TournamentFormat::Swiss) => Ok(TournamentFormat::Swiss),
        Ok(pb::TournamentFormat::RoundRobin) => Ok(TournamentFormat::RoundRobin),
        Ok(pb::TournamentFormat::Arena) => Ok(TournamentFormat::Arena),
        _ => Err(ApiError::invalid_field(
            "format",
            format!("{value} is not a format: TOURNAMENT_FORMAT_SWISS, _ROUND_ROBIN or _ARENA"),
        )
        .into()),
    }
}

fn format_to_proto(format: TournamentFormat) -> pb::TournamentFormat {
    match format {
        TournamentFormat::Swiss => pb::TournamentFormat::Swiss,
        TournamentFormat::RoundRobin => pb::TournamentFormat::RoundRobin,
        TournamentFormat::Arena => pb::TournamentFormat::Arena,
    }
}

/// The rounds a request asks for, checked against its format and number of entrants.
fn checked_rounds(format: TournamentFormat, rounds: u32, entrants: usize) -> Result<u32, Status> {
    let refuse = |why: String| -> Status { ApiError::invalid_field("rounds", why).into() };
    match format {
        TournamentFormat::RoundRobin if rounds != 0 => Err(refuse(format!(
            "{rounds}: a round robin's rounds follow from its entrants; leave it 0"
        ))),
        TournamentFormat::Arena if rounds != 0 => Err(refuse(format!(
            "{rounds}: an arena runs for its duration_minutes, not rounds; leave it 0"
        ))),
        TournamentFormat::RoundRobin | TournamentFormat::Arena => Ok(0),
        TournamentFormat::Swiss if rounds == 0 || rounds > MAX_SWISS_ROUNDS => Err(refuse(
            format!("{rounds}: a Swiss has 1 to {MAX_SWISS_ROUNDS} rounds"),
        )),
        TournamentFormat::Swiss if rounds as usize >= entrants => Err(refuse(format!(
            "{rounds} rounds need more than {entrants} entrants (no one may meet twice)"
        ))),
        TournamentFormat::Swiss => Ok(rounds),
    }
}

/// An arena's duration, required of an arena alone; an arena pairs as games end, so it takes no
/// pause.
fn checked_arena(format: TournamentFormat, minutes: u32, pause_seconds: u32) -> Result<(), Status> {
    let arena = format == TournamentFormat::Arena;
    if arena && (minutes == 0 || minutes > MAX_ARENA_MINUTES) {
        return Err(ApiError::invalid_field(
            "duration_minutes",
            format!("{minutes}: an arena lasts 1 to {MAX_ARENA_MINUTES} minutes"),
        )
        .into());
    }
    if !arena && minutes != 0 {
        return Err(ApiError::invalid_field(
            "duration_minutes",
            format!("{minutes}: only an arena has a duration; leave it 0"),
        )
        .into());
    }
    if arena && pause_seconds != 0 {
        return Err(ApiError::invalid_field(
            "pause_seconds",
            format!("{pause_seconds}: an arena pairs players as their games end; leave it 0"),
        )
        .into());
    }
    Ok(())
}

fn checked_entrants(
    format: TournamentFormat,
    entrants: &[String],
    open_to_players: bool,
) -> Result<(), Status> {
    let most = capacity(format);
    let least = if open_to_players { 0 } else { 2 };
    if entrants.len() < least || entrants.len() > most {
        return Err(ApiError::invalid_field(
            "entrants",
            format!(
                "{} entrants; this format takes {least} to {most}{}",
                entrants.len(),
                if open_to_players {
                    ""
                } else {
                    " (open it to players to start with fewer)"
                }
            ),
        )
        .into());
    }
    let mut players = Players::new("entrants", "a tournament");
    for (i, player) in entrants.iter().enumerate() {
        players.add(format!("entrants[{i}]"), player)?;
    }
    Ok(())
}

impl Organiser {
    pub(super) async fn create_tournament_for(
        &self,
        operator: Operator,
        r: pb::CreateTournamentRequest,
    ) -> Result<pb::Tournament, Status> {
        check_id("tournament_id", &r.tournament_id)?;
        if r.tournament_id.len() > MAX_TOURNAMENT_ID_BYTES {
            return Err(ApiError::invalid_field(
                "tournament_id",
                format!("longer than {MAX_TOURNAMENT_ID_BYTES} bytes"),
            )
            .into());
        }
        let format = format_of(r.format)?;
        let rules = parse_rules("rules", &r.rules)?.name();
        let time_control = parse_time_control("time_control", &r.time_control, "online")?;
        checked_entrants(format, &r.entrants, r.open_to_players)?;
        // Players may still come: the rounds are checked against the entrants at the start.
        let field = match r.open_to_players {
            true => usize::MAX,
            false => r.entrants.len(),
        };
        let rounds = checked_rounds(format, r.rounds, field)?;
        if r.pause_seconds > MAX_PAUSE_SECONDS {
            return Err(ApiError::invalid_field(
                "pause_seconds",
                format!("{}: at most {MAX_PAUSE_SECONDS}", r.pause_seconds),
            )
            .into());
        }
        checked_arena(format, r.duration_minutes, r.pause_seconds)?;
        let store = self.matchmaking.store();
        let now = self.now_ms();
        let stored = store
            .tournament(&r.tournament_id)
            .await
            .map_err(match_error_status)?;
        let start_ms = match &stored {
            Some(stored) if r.start_at_unix_ms == 0 => stored.start_ms,
            Some(_) => r.start_at_unix_ms,
            None => checked_start(r.start_at_unix_ms, now)?,
        };
        let mut entrants = Vec::with_capacity(r.entrants.len());
        for id in &r.entrants {
            let rating = match &stored {
                // A retry compares with the ratings the first call took.
                Some(stored) => stored
                    .entrants
                    .iter()
                    .find(|e| e.id == *id)
                    .map_or(0, |e| e.rating),
                None => {
                    let (rating, _) = store.rating(id).await.map_err(match_error_status)?;
                    rating.rating.round() as i32
                }
            };
            entrants.push(TournamentEntrant {
                id: id.clone(),
                rating,
            });
        }
        let tournament = Tournament {
            tournament_id: r.tournament_id,
            organiser: operator.name,
            format,
            rounds,
            rules,
            time_control,
            rated: r.rated,
            start_ms,
            pause_ms: u64::from(r.pause_seconds) * 1000,
            duration_ms: u64::from(r.duration_minutes) * 60_000,
            open_to_players: r.open_to_players,
            allow_bots: r.allow_bots,
            entrants,
            created_ms: now,
            finished_ms: None,
            paused: Vec::new(),
        };
        let made = match stored {
            Some(stored) if tournament.is_retry_of(&stored) => stored,
            Some(_) => return Err(match_error_status(tournament.conflict())),
            None => {
                let notices = announce::created(&tournament);
                store
                    .create_tournament_noting(tournament, notices)
                    .await
                    .map_err(match_error_status)?
            }
        };
        tracing::info!(tournament_id = %made.tournament_id, organiser = %made.organiser, format = made.format.name(), entrants = made.entrants.len(), "tournament created");
        self.tournament_to_proto(&made).await
    }

    pub(super) async fn get_tournament_for(
        &self,
        tournament_id: &str,
    ) -> Result<pb::Tournament, Status> {
        check_id("tournament_id", tournament_id)?;
        let tournament = self
            .matchmaking
            .store()
            .tournament(tournament_id)
            .await
            .map_err(match_error_status)?
            .ok_or_else(|| match_error_status(Tournament::not_found(tournament_id)))?;
        self.tournament_to_proto(&tournament).await
    }

    /// The answer: the tournament with its rounds and standings now.
    async fn tournament_to_proto(&self, t: &Tournament) -> Result<pb::Tournament, Status> {
        let settled = self.matchmaking.settled_rounds();
        tournament_to_proto(&**self.matchmaking.store(), settled, t, self.now_ms()).await
    }
}

/// A tournament as its organiser and its players see it at `now`: its rounds (read from their
/// bulks) and the standings after the completed ones.
pub(crate) async fn tournament_to_proto(
    store: &dyn MatchStore,
    settled: &SettledRounds,
    t: &Tournament,
    now: u64,
) -> Result<pb::Tournament, Status> {
    let rounds = round_bulks(store, t, settled)
        .await
        .map_err(match_error_status)?;
    let progress = progress(t, &rounds, now).map_err(|e| {
        match_error_status(MatchError::Corrupt(format!(
            "tournament {:?}: {e}",
            t.tournament_id
        )))
    })?;
    let standings = &progress.table;
    let state = if t.finished_ms.is_some() || progress.next == Step::Finished {
        pb::TournamentState::Finished
    } else if rounds.is_empty() || now < rounds[0].start_ms {
        pb::TournamentState::Scheduled
    } else {
        pb::TournamentState::Running
    };
    Ok(pb::Tournament {
        tournament_id: t.tournament_id.clone(),
        organiser: t.organiser.clone(),
        format: format_to_proto(t.format) as i32,
        round_count: u32::try_from(progress.total).unwrap_or(u32::MAX),
        rules: t.rules.clone(),
        time_control: t.time_control.clone(),
        rated: t.rated,
        start_at_unix_ms: t.start_ms,
        pause_seconds: u32::try_from(t.pause_ms / 1000).unwrap_or(u32::MAX),
        entrants: t.entrants.iter().map(|e| e.id.clone()).collect(),
        state: state as i32,
        rounds_completed: u32::try_from(progress.completed).unwrap_or(u32::MAX),
        rounds: rounds
            .iter()
            .zip(&progress.byes)
            .enumerate()
            .map(|(i, (bulk, bye))| pb::TournamentRound {
                round: u32::try_from(i + 1).unwrap_or(u32::MAX),
                bulk_id: bulk.bulk_id.clone(),
                bye: bye.clone().unwrap_or_default(),
                state: bulk_to_proto(bulk, now).state,
            })
            .collect(),
        standings: standings.iter().map(standing_to_proto).collect(),
        created_at_unix_ms: t.created_ms,
        finished_at_unix_ms: t.finished_ms.unwrap_or(0),
        duration_minutes: u32::try_from(t.duration_ms / 60_000).unwrap_or(u32::MAX),
        open_to_players: t.open_to_players,
        allow_bots: t.allow_bots,
        paused: t.paused.clone(),
    })
}

/// A line of a tournament's table on the wire (`GetTournament` and the lobby's pushed standings).
pub fn standing_to_proto(s: &Standing) -> pb::TournamentStanding {
    pb::TournamentStanding {
        place: u32::try_from(s.place).unwrap_or(u32::MAX),
        player: s.id.clone(),
        score: f64::from(s.score_halves) / 2.0,
        buchholz: f64::from(s.buchholz_halves) / 2.0,
        sonneborn_berger: f64::from(s.sonneborn_berger_quarters) / 4.0,
        rating: s.rating,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::round_bulk_id;
    use hidden_front_api_error::ErrorSummary;

    fn reason(status: &Status) -> String {
        ErrorSummary::of(status).reason.to_string()
    }

    #[test]
    fn rounds_fit_the_format_and_the_field() {
        assert_eq!(checked_rounds(TournamentFormat::Swiss, 4, 9).unwrap(), 4);
        assert!(checked_rounds(TournamentFormat::Swiss, 9, 9).is_err());
        assert!(checked_rounds(TournamentFormat::Swiss, 0, 9).is_err());
        assert!(checked_rounds(TournamentFormat::Swiss, 21, 100).is_err());
        assert_eq!(
            checked_rounds(TournamentFormat::RoundRobin, 0, 6).unwrap(),
            0
        );
        let refused = checked_rounds(TournamentFormat::RoundRobin, 5, 6).unwrap_err();
        assert!(
            refused.message().contains("rounds"),
            "{}",
            refused.message()
        );
    }

    #[test]
    fn entrants_are_counted_and_named_once() {
        let names = |n: usize| (0..n).map(|i| format!("p{i}")).collect::<Vec<_>>();
        assert!(checked_entrants(TournamentFormat::Swiss, &names(9), false).is_ok());
        assert!(checked_entrants(TournamentFormat::Swiss, &names(0), true).is_ok());
        assert!(checked_entrants(TournamentFormat::Swiss, &names(1), false).is_err());
        assert!(checked_entrants(TournamentFormat::RoundRobin, &names(21), true).is_err());
        let mut twice = names(5);
        twice[4] = "p1".into();
        let refused = checked_entrants(TournamentFormat::Swiss, &twice, false).unwrap_err();
        assert_eq!(reason(&refused), "PLAYER_TWICE");
        assert!(
            refused.message().contains("entrants[4]"),
            "{}",
            refused.message()
        );
        assert!(
            refused.message().contains("entrants[1]"),
            "{}",
            refused.message()
        );
    }

    #[test]
    fn a_tournament_round_s_bulk_id_is_not_an_organiser_s() {
        assert!(check_own_bulk_id("league-1").is_ok());
        let refused = check_own_bulk_id(&round_bulk_id("t", 1)).unwrap_err();
        assert!(
            refused.message().contains("bulk_id"),
            "{}",
            refused.message()
        );
        assert!(format_of(0).is_err());
        assert!(format_of(9).is_err());
    }
}
