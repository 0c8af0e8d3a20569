//! A referee for the bot's tests: the engine's `Game` judges, and each bot is fed only the
//! projection of every event for its own seat and the engine's legal moves for its side.

#![allow(dead_code)]

use hidden_front_bot::{Budget, ComputerPlayer, Level};
use hidden_front_rules::{
    Command, Event, Game, GameRng, Move, Outcome, Phase, Rules, Side, ViewEvent, Viewer, project,
    reveal,
};
use std::time::Duration;

/// Who sits in a seat.
pub enum Seat {
    /// The computer player under test.
    Bot(Box<ComputerPlayer>),
    /// A uniformly random mover (random deployment, random legal move).
    Random(GameRng),
}

/// What one refereed game gave.
#[derive(Debug, Clone, Copy)]
pub struct Played {
    /// The result.
    pub outcome: Outcome,
    /// Plies played.
    pub plies: u32,
    /// Moves the bots chose (all checked legal).
    pub bot_moves: u32,
}

/// Panics if a projected event shows a kind of an opponent piece before the end: the harness
/// must feed the bot exactly what a person in its seat gets.
pub fn assert_no_opponent_kind(view: &ViewEvent, me: Side) {
    assert!(
        !hidden_front_inference::shows_opponent_kind(view, me),
        "leak in {view:?}"
    );
}

/// Shows each bot `events` (just applied to `game`) as the session shows a player: as they
/// happen, the end with what it reveals.
fn feed(seats: &mut [Seat; 2], events: &[Event], game: &Game) {
    let end = reveal(game);
    for event in events {
        let ended = matches!(event, Event::Ended { .. });
        let shown_end = end.as_ref().filter(|_| ended);
        for side in Side::BOTH {
            if let Seat::Bot(bot) = &mut seats[side.index()]
                && let Some(view) = project(event, Viewer::player(side), shown_end)
            {
                if !ended {
                    assert_no_opponent_kind(&view, side);
                }
                bot.observe(&view);
            }
        }
    }
}

/// Plays one whole game; every move a bot picks is checked to be in the engine's legal list and
/// accepted by the engine, every bot deployment to be valid.
pub fn play(rules: Rules, seed: u64, south: Seat, north: Seat) -> Played {
    let mut rng = GameRng::from_seed(seed);
    let first = if rng.below(2) == 0 {
        Side::South
    } else {
        Side::North
    };
    let (mut game, events) = Game::create(rules, first, &mut rng);
    let mut seats = [south, north];
    feed(&mut seats, &events, &game);
    for side in Side::BOTH {
        if let Seat::Bot(bot) = &mut seats[side.index()] {
            let deployment = bot.deployment();
            assert_eq!(deployment.side, side);
            assert_eq!(deployment.validate(&rules), Ok(()), "{deployment:?}");
            let events = game
                .handle(&Command::SetDeployment { deployment }, &mut rng)
                .expect("a valid deployment is accepted");
            feed(&mut seats, &events, &game);
        }
    }
    for side in Side::BOTH {
        let events = game
            .handle(&Command::Confirm { side }, &mut rng)
            .expect("confirm");
        feed(&mut seats, &events, &game);
    }
    let mut bot_moves = 0;
    // Every fight removes a piece and at most `no_combat_draw_plies` pass between fights.
    let bound = 60 * (u32::from(rules.no_combat_draw_plies) + 1);
    while game.phase() == Phase::Play {
        assert!(game.plies() < bound, "seed {seed}: the game does not end");
        let side = game.to_move();
        let legal: Vec<Move> = game.position().legal_moves().iter().collect();
        let mv = match &mut seats[side.index()] {
            Seat::Bot(bot) => {
                let mv = bot.choose_move(&legal);
                assert!(legal.contains(&mv), "seed {seed}: {mv:?} is not legal");
                bot_moves += 1;
                mv
            }
            Seat::Random(r) => legal[r.below(legal.len() as u32) as usize],
        };
        let events = game
            .handle(&Command::Move { side, mv }, &mut rng)
            .unwrap_or_else(|e| panic!("seed {seed}: engine refused {mv:?}: {e}"));
        feed(&mut seats, &events, &game);
    }
    Played {
        outcome: game.outcome().expect("an ended game has an outcome"),
        plies: game.plies(),
        bot_moves,
    }
}

/// A bot seat (the belief level, `ComputerPlayer::new`).
pub fn bot(side: Side, rules: Rules, seed: u64) -> Seat {
    Seat::Bot(Box::new(ComputerPlayer::new(side, rules, seed)))
}

/// A bot seat at `level`, with no wall-clock cut (so a seed fixes its moves on any machine,
/// debug builds included) and at most `samples` layouts per move.
pub fn bot_at(side: Side, rules: Rules, level: Level, seed: u64, samples: u32) -> Seat {
    let budget = Budget {
        samples: level.budget().samples.min(samples),
        max_think: Duration::from_secs(3600),
    };
    Seat::Bot(Box::new(
        ComputerPlayer::with_level(side, rules, level, seed).with_budget(budget),
    ))
}

/// A random seat.
pub fn random(seed: u64) -> Seat {
    Seat::Random(GameRng::from_seed(seed))
}
