//! One refereed game between two levels: the engine's `Game` judges, each player is fed only
//! its seat's projections and the engine's legal moves, and every choice is timed and checked.

use hidden_front_bot::{Budget, ComputerPlayer, Level};
use hidden_front_inference::shows_opponent_kind;
use hidden_front_rules::{
    Command, Event, Game, GameRng, Move, Outcome, Phase, Rules, Side, Viewer, project, reveal,
};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

/// What one game gave.
#[derive(Debug, Clone)]
pub struct GameRecord {
    /// The first level of the pair.
    pub a: Level,
    /// The second level of the pair.
    pub b: Level,
    /// The side `a` played.
    pub a_side: Side,
    /// The result; `None` when the game crashed.
    pub outcome: Option<Outcome>,
    /// Plies played.
    pub plies: u32,
    /// Think time of each move, in microseconds, by level: `[a, b]`.
    pub think_us: [Vec<u32>; 2],
    /// Moves (or deployments) a player gave that the engine would not take, `[a, b]`; each was
    /// replaced by a random legal one so the game could go on.
    pub illegal: [u32; 2],
    /// Why the game stopped early: a player's panic, or a projection that leaked a kind.
    pub crash: Option<String>,
}

impl GameRecord {
    /// The pair, in ladder order.
    pub fn pair(&self) -> (Level, Level) {
        (self.a, self.b)
    }

    /// The game's score for `a`: 1 a win, 0.5 a draw, 0 a loss; `None` for a crashed game.
    pub fn score_a(&self) -> Option<f64> {
        let outcome = self.outcome?;
        Some(match outcome.winner {
            Some(w) if w == self.a_side => 1.0,
            Some(_) => 0.0,
            None => 0.5,
        })
    }
}

/// Plays game number `game` of the pair (`a`, `b`) under `rules`: `a` takes south in even games,
/// the first mover is south in games 0, 1 (mod 4) and north in 2, 3. `seed` fixes the game;
/// `budget`, if given, replaces both levels' budgets per move.
pub fn play_game(
    rules: Rules,
    a: Level,
    b: Level,
    game: u32,
    seed: u64,
    budget: Option<Budget>,
) -> GameRecord {
    let a_side = if game.is_multiple_of(2) {
        Side::South
    } else {
        Side::North
    };
    let first = if (game / 2).is_multiple_of(2) {
        Side::South
    } else {
        Side::North
    };
    let mut record = GameRecord {
        a,
        b,
        a_side,
        outcome: None,
        plies: 0,
        think_us: [Vec::new(), Vec::new()],
        illegal: [0, 0],
        crash: None,
    };
    let result = catch_unwind(AssertUnwindSafe(|| {
        referee(rules, [a, b], a_side, first, seed, budget, &mut record)
    }));
    match result {
        Ok(Ok(outcome)) => record.outcome = Some(outcome),
        Ok(Err(why)) => record.crash = Some(why),
        Err(panic) => {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a player panicked".to_string());
            record.crash = Some(why);
        }
    }
    record
}

/// Shows both players `events` (just applied to `game`) as the session shows a person.
fn feed(players: &mut [ComputerPlayer; 2], events: &[Event], game: &Game) -> Result<(), String> {
    let end = reveal(game);
    for event in events {
        let ended = matches!(event, Event::Ended { .. });
        let shown_end = end.as_ref().filter(|_| ended);
        for side in Side::BOTH {
            if let Some(view) = project(event, Viewer::player(side), shown_end) {
                if !ended && shows_opponent_kind(&view, side) {
                    return Err(format!("the projection for {side} leaks a kind: {view:?}"));
                }
                players[side.index()].observe(&view);
            }
        }
    }
    Ok(())
}

fn referee(
    rules: Rules,
    levels: [Level; 2],
    a_side: Side,
    first: Side,
    seed: u64,
    budget: Option<Budget>,
    record: &mut GameRecord,
) -> Result<Outcome, String> {
    let mut rng = GameRng::from_seed(seed);
    // Which of `levels` (and of the record's arrays) plays each side.
    let slot = |side: Side| usize::from(side != a_side);
    let mut players = Side::BOTH.map(|side| {
        let player_seed = seed ^ (0x5EED_0000 + side.index() as u64);
        let player = ComputerPlayer::with_level(side, rules, levels[slot(side)], player_seed);
        match budget {
            Some(budget) => player.with_budget(budget),
            None => player,
        }
    });
    let (mut game, events) = Game::create(rules, first, &mut rng);
    feed(&mut players, &events, &game)?;
    for side in Side::BOTH {
        let mut deployment = players[side.index()].deployment();
        if deployment.side != side || deployment.validate(&rules).is_err() {
            record.illegal[slot(side)] += 1;
            deployment = hidden_front_rules::Deployment::random(&rules, side, &mut rng);
        }
        let events = game
            .handle(&Command::SetDeployment { deployment }, &mut rng)
            .map_err(|e| format!("the engine refused a valid deployment: {e}"))?;
        feed(&mut players, &events, &game)?;
    }
    for side in Side::BOTH {
        let events = game
            .handle(&Command::Confirm { side }, &mut rng)
            .map_err(|e| format!("the engine refused a confirmation: {e}"))?;
        feed(&mut players, &events, &game)?;
    }
    // Every fight removes a piece and at most `no_combat_draw_plies` pass between fights.
    let bound = 80 * (u32::from(rules.no_combat_draw_plies) + 1);
    while game.phase() == Phase::Play {
        if game.plies() >= bound {
            return Err(format!("no end after {bound} plies"));
        }
        let side = game.to_move();
        let legal: Vec<Move> = game.position().legal_moves().iter().collect();
        let started = Instant::now();
        let chosen = players[side.index()].try_choose_move(&legal);
        let think = started.elapsed();
        record.think_us[slot(side)].push(u32::try_from(think.as_micros()).unwrap_or(u32::MAX));
        let mv = match chosen.filter(|mv| legal.contains(mv)) {
            Some(mv) => mv,
            None => {
                record.illegal[slot(side)] += 1;
                *legal
                    .get(rng.below(legal.len().max(1) as u32) as usize)
                    .ok_or("the side to move has no legal move")?
            }
        };
        let events = game
            .handle(&Command::Move { side, mv }, &mut rng)
            .map_err(|e| format!("the engine refused the legal move {mv:?}: {e}"))?;
        feed(&mut players, &events, &game)?;
        record.plies = game.plies();
    }
    game.outcome()
        .ok_or_else(|| "an ended game without an outcome".to_string())
}
