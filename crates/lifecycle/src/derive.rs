//! Facts from engine events: the one place that decides which events are worth telling the
//! platform about, so every path that writes events (commands, timers, presence, operators)
//! writes the same facts.

use crate::{FactBody, NewFact};
use hidden_front_rules::{Event, Game, Side};
use uuid::Uuid;

/// Who sits where in a game, and under which rules and clock: what facts name.
#[derive(Debug, Clone, Copy)]
pub struct Seats<'a> {
    /// The game.
    pub game_id: Uuid,
    /// The rule set's name.
    pub rules: &'a str,
    /// The time control's name.
    pub time_control: &'a str,
    /// The player in the south seat.
    pub south_player: &'a str,
    /// The player in the north seat.
    pub north_player: &'a str,
}

impl Seats<'_> {
    fn player(&self, side: Side) -> &str {
        match side {
            Side::South => self.south_player,
            Side::North => self.north_player,
        }
    }
}

/// The facts of a new game: created, and both seats filled.
pub fn creation_facts(seats: Seats<'_>) -> Vec<NewFact> {
    vec![
        NewFact::new(
            seats.game_id,
            FactBody::GameCreated {
                rules: seats.rules.to_owned(),
                time_control: seats.time_control.to_owned(),
                south_player: seats.south_player.to_owned(),
                north_player: seats.north_player.to_owned(),
            },
        ),
        NewFact::new(
            seats.game_id,
            FactBody::SeatsFilled {
                south_player: seats.south_player.to_owned(),
                north_player: seats.north_player.to_owned(),
            },
        ),
    ]
}

/// The facts of one append: `events` are the appended events, `after` the game after them.
/// Moves, drafts, draw offers and timeouts are not lifecycle facts.
pub fn append_facts(seats: Seats<'_>, events: &[Event], after: &Game) -> Vec<NewFact> {
    events
        .iter()
        .filter_map(|event| {
            let body = match event {
                Event::PlayStarted { .. } => FactBody::PlayStarted {
                    first_mover: after.first_mover(),
                },
                Event::SeatLost { side } => FactBody::SeatLost {
                    side: *side,
                    player: seats.player(*side).to_owned(),
                },
                Event::Ended { outcome, .. } => FactBody::GameEnded {
                    winner: outcome.winner,
                    winner_player: outcome.winner.map(|side| seats.player(side).to_owned()),
                    reason: outcome.reason,
                    plies: after.plies(),
                    south_player: seats.south_player.to_owned(),
                    north_player: seats.north_player.to_owned(),
                },
                _ => return None,
            };
            Some(NewFact::new(seats.game_id, body))
        })
        .collect()
}

/// The fact of an operator's abort (written with the abort's own events, whose `GameEnded`
/// [`append_facts`] derives).
pub fn aborted_fact(game_id: Uuid, operator: &str, reason: &str) -> NewFact {
    NewFact::new(
        game_id,
        FactBody::GameAborted {
            operator: operator.to_owned(),
            reason: reason.to_owned(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FactKind;
    use hidden_front_rules::{Command, EndReason, GameRng, Rules};

    const SEATS: Seats<'static> = Seats {
        game_id: Uuid::nil(),
        rules: "junqi",
        time_control: "online",
        south_player: "alice",
        north_player: "bob",
    };

    fn kinds(facts: &[NewFact]) -> Vec<FactKind> {
        facts.iter().map(|f| f.body.kind()).collect()
    }

    #[test]
    fn a_game_is_told_as_created_seated_started_and_ended_and_nothing_else() {
        let mut rng = GameRng::from_seed(7);
        let rules = Rules::parse(hidden_front_rules::rules::DEFAULT_RULES).unwrap();
        let (mut game, created) = Game::create(rules, Side::South, &mut rng);
        assert!(append_facts(SEATS, &created, &game).is_empty());
        assert_eq!(
            kinds(&creation_facts(SEATS)),
            [FactKind::GameCreated, FactKind::SeatsFilled]
        );
        let south = game
            .handle(&Command::Confirm { side: Side::South }, &mut rng)
            .unwrap();
        assert!(append_facts(SEATS, &south, &game).is_empty());
        let north = game
            .handle(&Command::Confirm { side: Side::North }, &mut rng)
            .unwrap();
        let started = append_facts(SEATS, &north, &game);
        assert_eq!(kinds(&started), [FactKind::PlayStarted]);
        assert_eq!(
            started[0].body,
            FactBody::PlayStarted {
                first_mover: Side::South
            }
        );
        let resigned = game
            .handle(&Command::Resign { side: Side::South }, &mut rng)
            .unwrap();
        let ended = append_facts(SEATS, &resigned, &game);
        assert_eq!(
            ended.iter().map(|f| &f.body).collect::<Vec<_>>(),
            [&FactBody::GameEnded {
                winner: Some(Side::North),
                winner_player: Some("bob".into()),
                reason: EndReason::Resigned,
                plies: 0,
                south_player: "alice".into(),
                north_player: "bob".into(),
            }]
        );
        // Facts carry nothing of the board: no piece, no kind, no square.
        for fact in started.iter().chain(&ended) {
            let json = fact.body.to_json();
            for secret in ["marshal", "flag", "bomb", "mine", "node", "piece"] {
                assert!(!json.contains(secret), "{json} mentions {secret}");
            }
        }
    }

    #[test]
    fn a_seat_lost_in_deployment_names_the_seat_and_its_player() {
        let fact = append_facts(
            SEATS,
            &[Event::SeatLost { side: Side::North }],
            &Game::create(
                Rules::parse(hidden_front_rules::rules::DEFAULT_RULES).unwrap(),
                Side::South,
                &mut GameRng::from_seed(1),
            )
            .0,
        );
        assert_eq!(
            fact[0].body,
            FactBody::SeatLost {
                side: Side::North,
                player: "bob".into()
            }
        );
    }
}
