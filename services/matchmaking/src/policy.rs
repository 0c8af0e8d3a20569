//! What matchmaking does when a game ends, decided once for every store: [`on_game_ended`] is a
//! pure function from what the store holds ([`HeldMatch`]) and the ended game to an
//! [`EndOfGamePlan`]; [`handle_ended_game`] has a store apply it (atomically, once per game).
//!
//! The policy: a rated match with a result settles both ratings (Glicko-2, the game is its own
//! rating period), unless [`RatingIntegrity`] says the result must not count (a game a player
//! left too early, or one too many rated games between the same two players in a day); a queue
//! match cancelled because seats were lost queues every player who kept the seat again, with
//! priority, in the same queue, and tells them. Invite games are never rated and nobody is queued
//! again after them; games matchmaking did not make change nothing.

use crate::glicko;
use crate::glicko::Rating;
use crate::store::{
    EndOfGamePlan, EndedGame, EndedResult, GameOutcome, HeldMatch, LobbyEventKind, MatchError,
    MatchKind, MatchStore, Queue, RatingChange, Ticket, TicketState,
};
use hidden_front_lifecycle::{FactBody, RatingChange as LifecycleRatingChange};
use hidden_front_rules::Side;
use std::time::Duration;
use uuid::Uuid;

/// Which rated results change no rating, so that ratings cannot be farmed (docs/matchmaking.md,
/// "Rating integrity"). Such a game still ends as it ended; it only counts as unrated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RatingIntegrity {
    /// A rated game that a player's choice or absence ended (a resignation, an agreed draw,
    /// timeouts, a disconnection) before this many plies changes no rating. A result decided on
    /// the board always counts.
    pub min_plies: u32,
    /// At most this many rated games between the same two players within [`Self::pair_window`]
    /// change ratings; the later ones count as unrated. 0: no cap.
    pub pair_cap: u32,
    /// The window of the pair cap.
    pub pair_window: Duration,
}

impl Default for RatingIntegrity {
    /// 10 plies: five moves each, the opening's first moves, before which the two armies have
    /// not met and a game ended by a resignation or a walk-out has decided nothing on the board
    /// (and a resignation at ply 1, traded between two accounts, moved ratings). 5 games a day
    /// between the same two: a busy rated queue pairs the same two players a few times a day at
    /// most, while two accounts trading wins would need many more.
    fn default() -> Self {
        RatingIntegrity {
            min_plies: 10,
            pair_cap: 5,
            pair_window: Duration::from_secs(24 * 3600),
        }
    }
}

/// Why a rated game's result changes no rating, if it does not.
fn unrated_because(
    held: &HeldMatch,
    game: &EndedGame,
    integrity: &RatingIntegrity,
) -> Option<&'static str> {
    if !game.decided_on_board && game.plies < integrity.min_plies {
        return Some("ended by a player before the rated minimum of plies");
    }
    if integrity.pair_cap > 0 && held.rated_between_recently >= integrity.pair_cap {
        return Some("the pair cap of rated games between these two players was reached");
    }
    None
}

/// What handling an ended game did, for the caller's log and the tests.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EndedEffect {
    /// The game had been handled before (by this process or another): nothing was done now.
    pub already_handled: bool,
    /// New ratings (south, north), when the game was a rated queue match with a result.
    pub ratings: Option<(Rating, Rating)>,
    /// Priority tickets made for players whose opponent lost the seat.
    pub requeued: Vec<Ticket>,
}

impl EndedEffect {
    /// The effect of a store's answer to [`MatchStore::apply_ended_game`] (`None`: applied before).
    pub fn of(applied: Option<&EndOfGamePlan>) -> EndedEffect {
        let Some(plan) = applied else {
            return EndedEffect {
                already_handled: true,
                ..EndedEffect::default()
            };
        };
        EndedEffect {
            already_handled: false,
            ratings: plan
                .ratings
                .as_ref()
                .map(|[south, north]| (south.rating, north.rating)),
            requeued: plan.requeue.clone(),
        }
    }
}

/// The ticket id of a player seated again after `game_id` was cancelled (one per player and
/// game, so applying the same end twice could not queue anyone twice).
pub fn requeue_ticket_id(game_id: Uuid) -> String {
    format!("requeue:{game_id}")
}

/// South's score in an ended game, when it counts for ratings (a lost seat and an operator's
/// abort are not results).
fn south_score(result: &EndedResult) -> Option<f64> {
    match result {
        EndedResult::Won(Side::South) => Some(1.0),
        EndedResult::Won(Side::North) => Some(0.0),
        EndedResult::Drawn => Some(0.5),
        EndedResult::SeatLost(_) | EndedResult::Aborted => None,
    }
}

/// How the game ended, as a bulk's status tells it.
fn outcome_of(result: &EndedResult) -> GameOutcome {
    match result {
        EndedResult::Won(side) => GameOutcome::won_by(*side),
        EndedResult::Drawn => GameOutcome::Drawn,
        EndedResult::SeatLost(lost) => GameOutcome::forfeited_by(lost),
        EndedResult::Aborted => GameOutcome::Aborted,
    }
}

/// What `game`'s end changes, given what the store holds about its match (`None`: matchmaking
/// did not make the game). `now_ms` is when a requeued ticket is enqueued, `requeue_expires_ms`
/// when it expires. Pure: the same inputs always give the same plan.
pub fn on_game_ended(
    held: Option<&HeldMatch>,
    game: &EndedGame,
    now_ms: u64,
    requeue_expires_ms: u64,
    integrity: &RatingIntegrity,
) -> EndOfGamePlan {
    let mut plan = EndOfGamePlan::default();
    let Some(held) = held else {
        return plan;
    };
    plan.outcome = Some(outcome_of(&game.result));
    let m = &held.the_match;
    let seats = [
        (Side::South, &m.south_player, held.south_rating),
        (Side::North, &m.north_player, held.north_rating),
    ];
    let unrated = m
        .rated
        .then(|| unrated_because(held, game, integrity))
        .flatten();
    if let Some(why) = unrated {
        tracing::info!(game_id = %game.game_id, plies = game.plies, "a rated game counts as unrated: {why}");
    }
    if let (true, None, Some(score)) = (m.rated, unrated, south_score(&game.result)) {
        let (south, north) = glicko::settle(held.south_rating.0, held.north_rating.0, score);
        let [
            (_, south_player, (_, south_games)),
            (_, north_player, (_, north_games)),
        ] = seats;
        plan.facts.push(FactBody::RatingChanged {
            rules: m.rules.clone(),
            changes: vec![
                LifecycleRatingChange {
                    player: south_player.clone(),
                    old_rating: held.south_rating.0.rating,
                    new_rating: south.rating,
                },
                LifecycleRatingChange {
                    player: north_player.clone(),
                    old_rating: held.north_rating.0.rating,
                    new_rating: north.rating,
                },
            ],
        });
        plan.ratings = Some([
            RatingChange {
                player: south_player.clone(),
                rating: south,
                games: south_games + 1,
            },
            RatingChange {
                player: north_player.clone(),
                rating: north,
                games: north_games + 1,
            },
        ]);
    }
    if let (MatchKind::Queue, EndedResult::SeatLost(lost)) = (m.kind, &game.result) {
        let queue = Queue {
            rules: m.rules.clone(),
            time_control: m.time_control.clone(),
            rated: m.rated,
        };
        for (side, player, (rating, _)) in seats {
            if lost.contains(&side) {
                continue;
            }
            let ticket = Ticket {
                player: player.clone(),
                ticket_id: requeue_ticket_id(game.game_id),
                queue: queue.clone(),
                state: TicketState::Waiting,
                priority: true,
                rating: rating.rating,
                enqueued_ms: now_ms,
                expires_ms: requeue_expires_ms,
                match_id: None,
                game_id: None,
            };
            plan.events.push((
                player.clone(),
                LobbyEventKind::Requeued {
                    ticket_id: ticket.ticket_id.clone(),
                    cancelled_game_id: game.game_id,
                },
            ));
            plan.requeue.push(ticket);
        }
    }
    plan
}

/// Handles an ended game through `store`: the policy above, applied once however many processes
/// (or retries) report the game.
pub async fn handle_ended_game(
    store: &dyn MatchStore,
    game: &EndedGame,
    now_ms: u64,
    requeue_expires_ms: u64,
    integrity: &RatingIntegrity,
) -> Result<EndedEffect, MatchError> {
    let decide =
        |held: Option<&HeldMatch>| on_game_ended(held, game, now_ms, requeue_expires_ms, integrity);
    let window_ms = u64::try_from(integrity.pair_window.as_millis()).unwrap_or(u64::MAX);
    let applied = store
        .apply_ended_game(
            game.game_id,
            now_ms,
            now_ms.saturating_sub(window_ms),
            &decide,
        )
        .await?;
    Ok(EndedEffect::of(applied.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Match;

    /// The plan of a game that changes nothing but is recorded as ended so.
    fn only_the_outcome(outcome: GameOutcome) -> EndOfGamePlan {
        EndOfGamePlan {
            outcome: Some(outcome),
            ..EndOfGamePlan::default()
        }
    }

    fn held(kind: MatchKind, rated: bool) -> HeldMatch {
        HeldMatch {
            the_match: Match {
                match_id: Uuid::now_v7(),
                kind,
                rules: "hidden-front".into(),
                time_control: "online".into(),
                rated,
                south_player: "sue".into(),
                north_player: "nat".into(),
                south_ticket: Some("ts".into()),
                north_ticket: Some("tn".into()),
                invite_code: None,
                bulk_id: None,
                created_ms: 1,
                game_id: None,
            },
            south_rating: (
                Rating {
                    rating: 1600.0,
                    deviation: 80.0,
                    volatility: 0.06,
                },
                4,
            ),
            north_rating: (Rating::default(), 0),
            rated_between_recently: 0,
        }
    }

    /// A game of 60 plies that ended as `result` (decided on the board when someone won).
    fn ended(game_id: Uuid, result: EndedResult) -> EndedGame {
        EndedGame {
            game_id,
            south_player: "sue".into(),
            north_player: "nat".into(),
            result,
            plies: 60,
            decided_on_board: false,
        }
    }

    fn plan(held: &HeldMatch, result: EndedResult) -> EndOfGamePlan {
        let game = ended(Uuid::now_v7(), result);
        on_game_ended(Some(held), &game, 100, 5_000, &RatingIntegrity::default())
    }

    #[test]
    fn a_rated_game_left_before_the_minimum_of_plies_changes_no_rating() {
        let h = held(MatchKind::Queue, true);
        let rules = RatingIntegrity::default();
        for plies in [0, 1, rules.min_plies - 1] {
            let mut game = ended(Uuid::now_v7(), EndedResult::Won(Side::North));
            game.plies = plies;
            let p = on_game_ended(Some(&h), &game, 100, 5_000, &rules);
            assert_eq!(
                p,
                only_the_outcome(GameOutcome::NorthWon),
                "resigned at ply {plies}"
            );
            // The same length decided on the board counts.
            game.decided_on_board = true;
            let p = on_game_ended(Some(&h), &game, 100, 5_000, &rules);
            assert!(p.ratings.is_some(), "a flag taken at ply {plies} counts");
        }
        let mut game = ended(Uuid::now_v7(), EndedResult::Drawn);
        game.plies = rules.min_plies;
        let p = on_game_ended(Some(&h), &game, 100, 5_000, &rules);
        assert!(p.ratings.is_some(), "from the minimum on, a result counts");
    }

    #[test]
    fn rated_games_past_the_pair_cap_change_no_rating() {
        let rules = RatingIntegrity::default();
        let mut h = held(MatchKind::Queue, true);
        h.rated_between_recently = rules.pair_cap - 1;
        assert!(
            plan(&h, EndedResult::Won(Side::South)).ratings.is_some(),
            "the last one under the cap"
        );
        h.rated_between_recently = rules.pair_cap;
        assert_eq!(
            plan(&h, EndedResult::Won(Side::South)),
            only_the_outcome(GameOutcome::SouthWon),
            "one past the cap"
        );
    }

    #[test]
    fn a_game_matchmaking_did_not_make_changes_nothing() {
        let game = ended(Uuid::now_v7(), EndedResult::Won(Side::South));
        assert_eq!(
            on_game_ended(None, &game, 100, 5_000, &RatingIntegrity::default()),
            EndOfGamePlan::default()
        );
    }

    #[test]
    fn a_rated_result_settles_both_ratings_from_the_held_ones() {
        let h = held(MatchKind::Queue, true);
        for (result, score) in [
            (EndedResult::Won(Side::South), 1.0),
            (EndedResult::Won(Side::North), 0.0),
            (EndedResult::Drawn, 0.5),
        ] {
            let p = plan(&h, result.clone());
            let (south, north) = glicko::settle(h.south_rating.0, h.north_rating.0, score);
            assert_eq!(
                p.ratings,
                Some([
                    RatingChange {
                        player: "sue".into(),
                        rating: south,
                        games: 5,
                    },
                    RatingChange {
                        player: "nat".into(),
                        rating: north,
                        games: 1,
                    },
                ]),
                "{result:?}"
            );
            assert!(p.requeue.is_empty() && p.events.is_empty(), "{result:?}");
            // The lifecycle feed is told both players' old and new ratings.
            assert_eq!(
                p.facts,
                [FactBody::RatingChanged {
                    rules: h.the_match.rules.clone(),
                    changes: vec![
                        LifecycleRatingChange {
                            player: "sue".into(),
                            old_rating: h.south_rating.0.rating,
                            new_rating: south.rating,
                        },
                        LifecycleRatingChange {
                            player: "nat".into(),
                            old_rating: h.north_rating.0.rating,
                            new_rating: north.rating,
                        },
                    ],
                }],
                "{result:?}"
            );
        }
        let won = plan(&h, EndedResult::Won(Side::South)).ratings.unwrap();
        let lost = plan(&h, EndedResult::Won(Side::North)).ratings.unwrap();
        assert!(won[0].rating.rating > 1600.0 && lost[0].rating.rating < 1600.0);
    }

    #[test]
    fn casual_and_invite_games_are_never_rated() {
        for h in [
            held(MatchKind::Queue, false),
            held(MatchKind::Invite, false),
        ] {
            assert_eq!(
                plan(&h, EndedResult::Won(Side::South)),
                only_the_outcome(GameOutcome::SouthWon)
            );
        }
    }

    #[test]
    fn an_aborted_game_changes_no_rating_and_seats_nobody_again() {
        for kind in [MatchKind::Queue, MatchKind::Invite] {
            let h = held(kind, true);
            assert_eq!(
                plan(&h, EndedResult::Aborted),
                only_the_outcome(GameOutcome::Aborted),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn a_lost_seat_requeues_the_player_who_kept_it_with_priority_and_no_rating() {
        let h = held(MatchKind::Queue, true);
        let game = ended(Uuid::now_v7(), EndedResult::SeatLost(vec![Side::South]));
        let p = on_game_ended(Some(&h), &game, 100, 5_000, &RatingIntegrity::default());
        assert_eq!(p.ratings, None, "a lost seat is not a result");
        assert!(p.facts.is_empty(), "and no rating fact");
        let id = requeue_ticket_id(game.game_id);
        assert_eq!(
            p.requeue,
            vec![Ticket {
                player: "nat".into(),
                ticket_id: id.clone(),
                queue: Queue {
                    rules: "hidden-front".into(),
                    time_control: "online".into(),
                    rated: true,
                },
                state: TicketState::Waiting,
                priority: true,
                rating: 1500.0,
                enqueued_ms: 100,
                expires_ms: 5_000,
                match_id: None,
                game_id: None,
            }]
        );
        assert_eq!(
            p.events,
            vec![(
                "nat".to_owned(),
                LobbyEventKind::Requeued {
                    ticket_id: id,
                    cancelled_game_id: game.game_id,
                }
            )]
        );
        let north_lost = plan(&h, EndedResult::SeatLost(vec![Side::North]));
        assert_eq!(north_lost.requeue.len(), 1);
        assert_eq!(north_lost.requeue[0].player, "sue");
        assert_eq!(north_lost.requeue[0].rating, 1600.0, "the held rating");
    }

    #[test]
    fn nobody_is_requeued_when_both_seats_were_lost_or_after_an_invite() {
        let both = plan(
            &held(MatchKind::Queue, false),
            EndedResult::SeatLost(vec![Side::South, Side::North]),
        );
        assert_eq!(both, only_the_outcome(GameOutcome::Cancelled));
        let invite = plan(
            &held(MatchKind::Invite, false),
            EndedResult::SeatLost(vec![Side::North]),
        );
        assert_eq!(invite, only_the_outcome(GameOutcome::NorthForfeited));
    }

    #[test]
    fn the_effect_says_what_was_applied() {
        assert_eq!(
            EndedEffect::of(None),
            EndedEffect {
                already_handled: true,
                ..EndedEffect::default()
            }
        );
        let p = plan(&held(MatchKind::Queue, true), EndedResult::Drawn);
        let effect = EndedEffect::of(Some(&p));
        let [south, north] = p.ratings.clone().unwrap();
        assert_eq!(effect.ratings, Some((south.rating, north.rating)));
        assert!(!effect.already_handled && effect.requeued.is_empty());
        assert_eq!(
            EndedEffect::of(Some(&EndOfGamePlan::default())),
            EndedEffect::default()
        );
    }
}
