//! Random whole games for the wire tests: every kind of event the engine records, from both game
//! families, produced by `Game::handle` exactly as the session produces them.

#![allow(dead_code)] // each test file uses a part

use hidden_front_rules::{Command, Deployment, Event, Game, GameRng, Node, Phase, Rules, Side};

/// Rule sets of both families, with every house option somewhere (`flag-reveal` and
/// `bomb-spares-flag` change what a fight records; the Gunjin boards change squares and codes).
pub const RULE_SETS: [&str; 6] = [
    "hidden-front",
    "hidden-front+hq-mobile+front-bombs+sturdy-mines+bomb-spares-flag+flag-reveal+no-combat-40",
    "gunjin-shogi",
    "gunjin-shogi+y-gates+tank-beats-engineer",
    "gunjin-shogi+i-gates+mine-survives+no-combat-60",
    "gunjin-shogi+23-pieces+no-combat-50",
];

/// The rule set named `name` (one of [`RULE_SETS`]).
pub fn rules(name: &str) -> Rules {
    Rules::parse(name).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn any_side(pick: &mut GameRng) -> Side {
    if pick.below(2) == 0 {
        Side::South
    } else {
        Side::North
    }
}

/// One random game, start to end, and its whole log. Deployment: drafts reshuffled, swapped and
/// replaced, confirmed by the players or by the deadline (a side away loses its seat). Play:
/// random legal moves with timeouts, draw offers and answers, resignations and disconnections
/// sprinkled in. Refused commands are simply not logged, as in the session.
pub fn random_game(rules: Rules, seed: u64) -> Vec<Event> {
    let mut rng = GameRng::from_seed(seed);
    let mut pick = GameRng::from_seed(seed ^ 0x9E37_79B9_7F4A_7C15);
    let first_mover = any_side(&mut pick);
    let (mut game, mut log) = Game::create(rules, first_mover, &mut rng);
    let mut play = |game: &mut Game, log: &mut Vec<Event>, command: Command| {
        if let Ok(events) = game.handle(&command, &mut rng) {
            log.extend(events);
        }
    };
    while game.phase() == Phase::Deployment {
        let side = any_side(&mut pick);
        let command = match pick.below(30) {
            0..=3 => Command::Reshuffle { side },
            4..=9 => {
                let squares: Vec<Node> = game
                    .deployment(side)
                    .map(|d| d.placements.iter().map(|&(node, _)| node).collect())
                    .unwrap_or_default();
                if squares.len() < 2 {
                    continue;
                }
                let a = squares[pick.below(squares.len() as u32) as usize];
                let b = squares[pick.below(squares.len() as u32) as usize];
                Command::Swap { side, a, b }
            }
            10..=12 => Command::SetDeployment {
                deployment: Deployment::random(&rules, side, &mut pick),
            },
            13 => Command::DeploymentDeadline {
                present: [pick.below(3) != 0, pick.below(3) != 0],
            },
            _ => Command::Confirm { side },
        };
        play(&mut game, &mut log, command);
    }
    while game.phase() == Phase::Play {
        let side = game.to_move();
        let command = match pick.below(1000) {
            0..=4 => Command::Timeout { side },
            5..=24 => Command::OfferDraw {
                side: any_side(&mut pick),
            },
            25..=49 => Command::AnswerDraw {
                side: any_side(&mut pick),
                accept: pick.below(6) == 0,
            },
            50 => Command::Resign {
                side: any_side(&mut pick),
            },
            51 => Command::Disconnected {
                side: any_side(&mut pick),
            },
            52 => Command::Abort,
            _ => {
                let moves = game.position().legal_moves();
                let Some(mv) = moves.nth(pick.below(moves.len().max(1) as u32) as usize) else {
                    continue;
                };
                Command::Move { side, mv }
            }
        };
        play(&mut game, &mut log, command);
    }
    log
}

/// What an event is, for the coverage check: its kind and, for moves, the shape of the fight.
pub fn shape(event: &Event) -> &'static str {
    match event {
        Event::Created { .. } => "created",
        Event::DeploymentDrafted { .. } => "deployment_drafted",
        Event::DeploymentConfirmed {
            by_deadline: false, ..
        } => "deployment_confirmed",
        Event::DeploymentConfirmed {
            by_deadline: true, ..
        } => "deployment_confirmed_by_deadline",
        Event::PlayStarted { .. } => "play_started",
        Event::Moved { flag_reveal, .. } if !flag_reveal.is_empty() => "moved_flag_reveal",
        Event::Moved {
            combat: Some(c), ..
        } if c.flag_captured => "moved_flag_captured",
        Event::Moved {
            combat: Some(_), ..
        } => "moved_combat",
        Event::Moved { combat: None, .. } => "moved",
        Event::TimedOut { .. } => "timed_out",
        Event::DrawOffered { .. } => "draw_offered",
        Event::DrawDeclined { .. } => "draw_declined",
        Event::DrawLapsed { .. } => "draw_lapsed",
        Event::Resigned { .. } => "resigned",
        Event::SeatLost { .. } => "seat_lost",
        Event::Ended { .. } => "ended",
    }
}
