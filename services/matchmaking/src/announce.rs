//! What a tournament's steps tell others: the lifecycle facts the platform's services read from
//! the feed and the webhooks (created, started, a round started, finished with the final table),
//! and the standings pushed on each entrant's own lobby stream (after every round paired, with the
//! entrant's next game, and the final table). Built here from the step; written by the store with
//! the step ([`Notices`]), so each is written once however many processes try the step.

use crate::store::{
    LobbyEventKind, NextGame, Notices, Standing, Tournament, TournamentFormat, TournamentUpdate,
};
use crate::tournament::Progress;
use hidden_front_lifecycle::{FactBody, NewFact, TournamentPair, TournamentStanding};
use hidden_front_rules::Side;
use hidden_front_tournament::swiss::RoundPairings;

/// How many lines of the table a pushed update carries (the entrant's own line comes with it):
/// enough for a lobby's card, bounded for an arena of thousands.
pub const TABLE_TOP: usize = 10;

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn ids(t: &Tournament) -> Vec<String> {
    t.entrants.iter().map(|e| e.id.clone()).collect()
}

/// A tournament was made.
pub fn created(t: &Tournament) -> Notices {
    Notices {
        facts: vec![NewFact::about_tournament(FactBody::TournamentCreated {
            tournament_id: t.tournament_id.clone(),
            organiser: t.organiser.clone(),
            format: t.format.name().to_owned(),
            rules: t.rules.clone(),
            time_control: t.time_control.clone(),
            rated: t.rated,
            rounds: match t.format {
                TournamentFormat::Arena => 0,
                _ => t.rounds,
            },
            duration_ms: t.duration_ms,
            starts_at_ms: t.start_ms,
            open_to_players: t.open_to_players,
            entrants: ids(t),
        })],
        events: Vec::new(),
    }
}

/// Round `round` (from 1; an arena's wave) was paired from `progress`, to start at `start_ms`:
/// the tournament's start with its first round, the round's fact (not for an arena's waves, whose
/// games have their own facts), and the standings with each paired player's next game, for
/// every entrant of a Swiss or round robin and for an arena wave's players.
pub fn round_paired(
    t: &Tournament,
    progress: &Progress,
    pairing: &RoundPairings,
    round: usize,
    start_ms: u64,
) -> Notices {
    let mut facts = Vec::new();
    if round == 1 {
        facts.push(NewFact::about_tournament(FactBody::TournamentStarted {
            tournament_id: t.tournament_id.clone(),
            entrants: ids(t),
        }));
    }
    let arena = t.format == TournamentFormat::Arena;
    let rounds = match arena {
        true => count(round),
        false => count(progress.total),
    };
    if !arena {
        facts.push(NewFact::about_tournament(
            FactBody::TournamentRoundStarted {
                tournament_id: t.tournament_id.clone(),
                round: count(round),
                rounds,
                pairs: pairing
                    .games
                    .iter()
                    .map(|p| TournamentPair {
                        south_player: p.first.clone(),
                        north_player: p.second.clone(),
                    })
                    .collect(),
                bye: pairing.bye.clone(),
                games_start_at_ms: start_ms,
            },
        ));
    }
    let next_game = |player: &str| -> Option<NextGame> {
        let game = |opponent: &str, seat| NextGame {
            round: count(round),
            opponent: Some(opponent.to_owned()),
            seat: Some(seat),
            start_ms,
        };
        pairing.games.iter().find_map(|p| {
            if p.first == player {
                Some(game(&p.second, Side::South))
            } else if p.second == player {
                Some(game(&p.first, Side::North))
            } else {
                None
            }
        })
    };
    let told: Vec<String> = match arena {
        true => pairing
            .games
            .iter()
            .flat_map(|p| [p.first.clone(), p.second.clone()])
            .collect(),
        false => ids(t),
    };
    let events = told
        .into_iter()
        .map(|player| {
            let next = next_game(&player).or_else(|| {
                (pairing.bye.as_deref() == Some(player.as_str())).then_some(NextGame {
                    round: count(round),
                    opponent: None,
                    seat: None,
                    start_ms,
                })
            });
            let update = update(t, progress, &player, rounds, false, next);
            (
                player,
                LobbyEventKind::TournamentStandings(Box::new(update)),
            )
        })
        .collect();
    Notices { facts, events }
}

/// The last round ended: the final table, to the feed in full and to every entrant.
pub fn finished(t: &Tournament, progress: &Progress) -> Notices {
    let rounds = count(progress.made);
    let facts = vec![NewFact::about_tournament(FactBody::TournamentFinished {
        tournament_id: t.tournament_id.clone(),
        rounds,
        standings: progress.table.iter().map(fact_standing).collect(),
    })];
    let events = ids(t)
        .into_iter()
        .map(|player| {
            let update = update(t, progress, &player, rounds, true, None);
            (
                player,
                LobbyEventKind::TournamentStandings(Box::new(update)),
            )
        })
        .collect();
    Notices { facts, events }
}

fn update(
    t: &Tournament,
    progress: &Progress,
    player: &str,
    rounds: u32,
    finished: bool,
    next: Option<NextGame>,
) -> TournamentUpdate {
    TournamentUpdate {
        tournament_id: t.tournament_id.clone(),
        rounds_completed: count(progress.completed),
        rounds,
        finished,
        table: progress.table.iter().take(TABLE_TOP).cloned().collect(),
        you: progress.table.iter().find(|s| s.id == player).cloned(),
        next,
    }
}

/// A line of the table as a fact carries it (points, not half points).
fn fact_standing(s: &Standing) -> TournamentStanding {
    TournamentStanding {
        place: count(s.place),
        player: s.id.clone(),
        score: f64::from(s.score_halves) / 2.0,
        buchholz: f64::from(s.buchholz_halves) / 2.0,
        sonneborn_berger: f64::from(s.sonneborn_berger_quarters) / 4.0,
        rating: s.rating,
    }
}
