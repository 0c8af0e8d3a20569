//! Random whole games refereed by the engine, with every kind of event: reshuffles, swaps,
//! confirmations, deployment deadlines (lost seats included), moves, timeouts, draw offers,
//! answers and lapses, resignations, disconnections.

#![allow(dead_code)]

use hidden_front_replay::{Entry, Header, Replay, TimeControl, Timestamp};
use hidden_front_rules::{Command, Event, Game, GameRng, Move, Phase, Rules, Side};

/// Rule sets of both families, options included.
pub const RULE_SETS: [&str; 8] = [
    "hidden-front",
    "hidden-front+flag-reveal",
    "hidden-front+hq-mobile+front-bombs+sturdy-mines+bomb-spares-flag+flag-reveal+no-combat-30",
    "hidden-front+bomb-spares-flag+no-combat-12",
    "gunjin-shogi",
    "gunjin-shogi+y-gates+mine-survives",
    "gunjin-shogi+i-gates+tank-beats-engineer+no-combat-40",
    "gunjin-shogi+23-pieces",
];

/// A finished game: its log and the game the engine ended with.
pub struct Played {
    pub events: Vec<Event>,
    pub game: Game,
}

fn any_side(rng: &mut GameRng) -> Side {
    if rng.below(2) == 0 {
        Side::South
    } else {
        Side::North
    }
}

/// Plays one random game to its end under `rules`. How often each side times out, offers or
/// accepts draws varies per seed, so the sample covers every way a game ends.
pub fn random_game(rules: Rules, seed: u64) -> Played {
    let mut rng = GameRng::from_seed(seed);
    let first = any_side(&mut rng);
    let (mut game, mut events) = Game::create(rules, first, &mut rng);
    let timeout_percent = rng.below(3);
    let draw_percent = rng.below(3);
    let accept_in = 1 + rng.below(4);
    let mut act = |game: &mut Game, command: Command, rng: &mut GameRng| {
        // Refused commands (a cooldown, no offer to answer, ...) change nothing, as in a session.
        if let Ok(new) = game.handle(&command, rng) {
            events.extend(new);
        }
    };
    while game.phase() == Phase::Deployment {
        let side = any_side(&mut rng);
        let command = match rng.below(40) {
            0..=5 => Command::Reshuffle { side },
            6..=13 => {
                let draft = game.deployment(side).expect("a draft").placements.clone();
                let n = draft.len() as u32;
                let a = draft[rng.below(n) as usize].0;
                let b = draft[rng.below(n) as usize].0;
                Command::Swap { side, a, b }
            }
            14..=35 => Command::Confirm { side },
            36 => Command::DeploymentDeadline {
                present: [rng.below(5) != 0, rng.below(5) != 0],
            },
            37 if rng.below(8) == 0 => Command::Resign { side },
            _ => continue,
        };
        act(&mut game, command, &mut rng);
    }
    let mut turns = 0u32;
    while game.phase() == Phase::Play {
        turns += 1;
        let side = game.to_move();
        let roll = rng.below(100);
        let command = if turns > 20_000 {
            Command::Resign { side }
        } else if roll < timeout_percent {
            Command::Timeout { side }
        } else if roll < timeout_percent + draw_percent {
            Command::OfferDraw {
                side: any_side(&mut rng),
            }
        } else if roll < timeout_percent + 2 * draw_percent {
            Command::AnswerDraw {
                side: any_side(&mut rng),
                accept: rng.below(accept_in) == 0,
            }
        } else if roll == 90 && rng.below(30) == 0 {
            Command::Resign {
                side: any_side(&mut rng),
            }
        } else if roll == 91 && rng.below(60) == 0 {
            Command::Disconnected {
                side: any_side(&mut rng),
            }
        } else if roll == 92 && rng.below(60) == 0 {
            Command::Abort
        } else {
            let legal: Vec<Move> = game.position().legal_moves().iter().collect();
            let mv = legal[rng.below(legal.len() as u32) as usize];
            Command::Move { side, mv }
        };
        act(&mut game, command, &mut rng);
    }
    Played { events, game }
}

/// The replay of a played game: times and a time control for some seeds, none for others.
pub fn replay_of(played: &Played, seed: u64) -> Replay {
    let mut rng = GameRng::from_seed(seed ^ 0x7265_706c_6179);
    let timed = rng.below(2) == 0;
    let mut at = 1_764_600_000_000i64 + i64::from(rng.below(1_000_000));
    let entries = played
        .events
        .iter()
        .enumerate()
        .map(|(i, event)| {
            at += i64::from(rng.below(35_000));
            Entry {
                seq: i as u64 + 1,
                at: timed.then(|| Timestamp::from_unix_millis(at)),
                event: event.clone(),
            }
        })
        .collect();
    let header = Header {
        game_id: (rng.below(3) != 0).then(|| format!("0190c0de-0000-7000-8000-{seed:012x}")),
        players: [format!("south player {seed}"), format!("north-{seed}")],
        time_control: (rng.below(3) != 0).then(|| TimeControl {
            name: ["online", "relaxed", ""][rng.below(3) as usize].to_string(),
            deployment_seconds: 90,
            move_seconds: 30,
            reconnect_seconds: 60,
        }),
    };
    Replay::from_events(header, entries).expect("a finished game's log is a replay")
}
