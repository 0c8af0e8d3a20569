//! What the inference tests share: feeding a refereed game's events to both seats' trackers.

use hidden_front_inference::Tracker;
use hidden_front_rules::{Command, Event, Game, GameRng, Move, Side, Viewer, project};

/// Shows both seats' trackers `events` (just applied to the game) as the session shows each
/// player: its own projection only. The end is left out, since it reveals every piece.
pub fn feed(trackers: &mut [Tracker; 2], events: &[Event]) {
    for event in events {
        if matches!(event, Event::Ended { .. }) {
            continue;
        }
        for side in Side::BOTH {
            if let Some(view) = project(event, Viewer::player(side), None) {
                trackers[side.index()].observe(&view);
            }
        }
    }
}

/// Plays one uniformly random legal move for the side to move (the game is in play) and returns
/// the events it caused.
pub fn random_move(game: &mut Game, rng: &mut GameRng) -> Vec<Event> {
    let side = game.to_move();
    let legal: Vec<Move> = game.position().legal_moves().iter().collect();
    let mv = legal[rng.below(legal.len() as u32) as usize];
    game.handle(&Command::Move { side, mv }, rng).unwrap()
}
