//! The belief measured on refereed games: the activity counts and the log-loss are computed from
//! the referee's event log, and mean what they say.

use hidden_front_bot::{Budget, Level};
use hidden_front_inference::{KIND_SLOTS, MoveModel};
use hidden_front_ladder::{GameRecord, activity_counts, game_log_loss, play_game};
use hidden_front_rules::piece::junqi;
use hidden_front_rules::{Event, Rules};
use std::time::Duration;

fn game(rules: Rules, seed: u64) -> GameRecord {
    let budget = Budget {
        samples: 8,
        max_think: Duration::from_secs(3600),
    };
    let record = play_game(rules, Level::Belief, Level::Search, 0, seed, Some(budget));
    assert!(record.outcome.is_some(), "{:?}", record.crash);
    record
}

fn moves(record: &GameRecord) -> impl Iterator<Item = &Event> {
    record
        .events
        .iter()
        .filter(|e| matches!(e, Event::Moved { .. }))
}

#[test]
fn the_activity_counts_add_up_to_the_games_moves() {
    let rules = Rules::default();
    let records = [game(rules, 1), game(rules, 2)];
    let counts = activity_counts(&records);
    let moved: u64 = records.iter().map(|r| moves(r).count() as u64).sum();
    let fights: u64 = records
        .iter()
        .map(|r| {
            moves(r)
                .filter(|e| {
                    matches!(
                        e,
                        Event::Moved {
                            combat: Some(_),
                            ..
                        }
                    )
                })
                .count() as u64
        })
        .sum();
    assert!(moved > 20);
    assert_eq!(counts.moves.iter().sum::<u64>(), moved);
    assert_eq!(counts.attacks.iter().sum::<u64>(), fights);
    for k in 0..KIND_SLOTS {
        assert!(counts.moves[k] <= counts.turns[k], "kind {k}");
        assert!(counts.attacks[k] <= counts.moves[k], "kind {k}");
    }
    // Mines and the flag never move, but stand on the board every turn of their side.
    for kind in [junqi::MINE, junqi::FLAG] {
        assert_eq!(counts.moves[kind.0 as usize], 0);
        assert!(counts.turns[kind.0 as usize] > 0);
    }
}

#[test]
fn the_log_loss_is_over_every_ply_and_seat_and_beats_a_uniform_guess() {
    for rules in [Rules::default(), Rules::parse("gunjin-shogi").unwrap()] {
        let record = game(rules, 3);
        let loss = game_log_loss(rules, &record.events, None);
        assert_eq!(
            loss.observations,
            2 * moves(&record).count() as u64,
            "{rules}"
        );
        let uniform = (rules.kinds().len() as f64).ln();
        let mean = loss.mean().expect("observations");
        assert!(
            mean > 0.0 && mean < uniform,
            "{rules}: {mean} against a uniform {uniform}"
        );
        // A model of strength 0 changes nothing; the fitted one is applied.
        let fitted = MoveModel::fitted(&rules);
        let none = MoveModel {
            strength: 0.0,
            ..fitted
        };
        let same = game_log_loss(rules, &record.events, Some(none));
        assert!((same.nats - loss.nats).abs() < 1e-9, "{rules}");
        let with = game_log_loss(rules, &record.events, Some(fitted));
        assert_eq!(with.observations, loss.observations);
        assert!(
            (with.nats - loss.nats).abs() > 1e-6,
            "{rules}: the model did nothing"
        );
    }
}

#[test]
fn no_game_gives_no_log_loss_rather_than_a_perfect_one() {
    let rules = Rules::default();
    let loss = game_log_loss(rules, &[], None);
    assert_eq!((loss.observations, loss.mean()), (0, None));
    assert_eq!(hidden_front_ladder::log_loss(rules, &[], None).mean(), None);
}
