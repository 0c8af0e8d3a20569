//! One refereed game between two levels: the engine's `Game` judges, each player is fed only
//! its seat's projections and the engine's legal moves, and every choice is timed and checked.

use hidden_front_bot::{Budget, ComputerPlayer, Level};
use hidden_front_inference::shows_opponent_kind;
use hidden_front_rules::piece::junqi;
use hidden_front_rules::{
    Command, Deployment, Event, Family, Game, GameRng, Move, Outcome, Phase, Rules, Side, Viewer,
    project, reveal,
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
    /// The game's number in its pair.
    pub game: u32,
    /// The game's seed (the referee's random stream; each seat's player gets it mixed with its
    /// side).
    pub seed: u64,
    /// The side that moved first.
    pub first: Side,
    /// The deployments played, `[south, north]` (after any illegal one was replaced); `None`
    /// when the game stopped before both sides deployed.
    pub deployments: Option<[Deployment; 2]>,
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
    /// Junqi: whether each level lost its commander to a bomb, `[a, b]` (its commander
    /// attacking one, or a bomb attacking it).
    pub commander_bombed: [bool; 2],
    /// Junqi (HQ pieces frozen): steps of each level into an empty HQ, freezing the piece
    /// there for good, `[a, b]`.
    pub hq_freezes: [u32; 2],
    /// Junqi (HQ pieces frozen): fights of each level won in an HQ against a piece that was
    /// not the flag (a flag attempt that found a decoy; the piece is frozen there), `[a, b]`.
    pub hq_decoys: [u32; 2],
    /// Junqi: whether each level lost its flag to an enemy engineer, `[a, b]` (the engineer
    /// flying along the rails to the flag's side is the known way to lose it).
    pub flag_lost_to_engineer: [bool; 2],
    /// Moves of each level that took a piece straight back to the square its previous move
    /// left, neither move a fight, `[a, b]` (a player with no plan shuffles a piece to and
    /// fro, and the no-combat draw comes nearer).
    pub undone: [u32; 2],
    /// Every event of the game as the referee logged it (full kinds): the belief's log-loss
    /// and the move model's rates are computed from it afterwards.
    pub events: Vec<Event>,
}

impl GameRecord {
    /// The record of a game about to start: nothing played, nothing counted.
    pub fn new(a: Level, b: Level, a_side: Side) -> GameRecord {
        GameRecord {
            a,
            b,
            a_side,
            game: 0,
            seed: 0,
            first: Side::South,
            deployments: None,
            outcome: None,
            plies: 0,
            think_us: [Vec::new(), Vec::new()],
            illegal: [0, 0],
            crash: None,
            commander_bombed: [false, false],
            hq_freezes: [0, 0],
            hq_decoys: [0, 0],
            flag_lost_to_engineer: [false, false],
            undone: [0, 0],
            events: Vec::new(),
        }
    }

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
    play(rules, [a, b], game, seed, budget, None)
}

/// Plays twin `twin` of the pair (`a`, `b`) under `rules` (a duplicate ladder): games `2·twin`
/// and `2·twin + 1` on one deal. Both games have the seed `seed` (so the same referee's and
/// seats' random streams) and the same first mover (south for even twins); `a` takes south in
/// the first and north in the second. In the first game each level deploys for its seat as it
/// always does; the second replays those two deployments, each from the same seat, so each level
/// plays each deployment from each seat. `budget` as in [`play_game`].
pub fn play_twin(
    rules: Rules,
    a: Level,
    b: Level,
    twin: u32,
    seed: u64,
    budget: Option<Budget>,
) -> [GameRecord; 2] {
    let first = play(rules, [a, b], 2 * twin, seed, budget, None);
    let second = match &first.deployments {
        Some(deal) => play(rules, [a, b], 2 * twin + 1, seed, budget, Some(deal)),
        None => {
            let mut second = blank_record([a, b], 2 * twin + 1, seed);
            second.crash = Some("the twin's first game stopped before both sides deployed".into());
            second
        }
    };
    [first, second]
}

/// The record of game number `game` of the pair `[a, b]` before it starts: `a` takes south in
/// even games, the first mover is south in games 0, 1 (mod 4) and north in 2, 3.
fn blank_record([a, b]: [Level; 2], game: u32, seed: u64) -> GameRecord {
    let a_side = if game.is_multiple_of(2) {
        Side::South
    } else {
        Side::North
    };
    let mut record = GameRecord::new(a, b, a_side);
    record.game = game;
    record.seed = seed;
    record.first = if (game / 2).is_multiple_of(2) {
        Side::South
    } else {
        Side::North
    };
    record
}

/// Plays game number `game` of the pair `[a, b]`; `deal`, if given, replaces both players'
/// deployments (`[south, north]`).
fn play(
    rules: Rules,
    [a, b]: [Level; 2],
    game: u32,
    seed: u64,
    budget: Option<Budget>,
    deal: Option<&[Deployment; 2]>,
) -> GameRecord {
    let mut record = blank_record([a, b], game, seed);
    let result = catch_unwind(AssertUnwindSafe(|| {
        referee(rules, [a, b], budget, deal, &mut record)
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

/// Referees the game `record` is about to hold (its seats, first mover and seed); `deal`, if
/// given, is the two deployments `[south, north]` played instead of the players' own.
fn referee(
    rules: Rules,
    levels: [Level; 2],
    budget: Option<Budget>,
    deal: Option<&[Deployment; 2]>,
    record: &mut GameRecord,
) -> Result<Outcome, String> {
    let (a_side, first, seed) = (record.a_side, record.first, record.seed);
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
    record.events.extend(events);
    let mut played = Vec::with_capacity(2);
    for side in Side::BOTH {
        let deployment = match deal {
            // The twin's deal: valid, since the engine took it for this seat in the first game.
            Some(deal) => deal[side.index()].clone(),
            None => {
                let mut deployment = players[side.index()].deployment();
                if deployment.side != side || deployment.validate(&rules).is_err() {
                    record.illegal[slot(side)] += 1;
                    deployment = Deployment::random(&rules, side, &mut rng);
                }
                deployment
            }
        };
        played.push(deployment.clone());
        let events = game
            .handle(&Command::SetDeployment { deployment }, &mut rng)
            .map_err(|e| format!("the engine refused a valid deployment: {e}"))?;
        feed(&mut players, &events, &game)?;
        record.events.extend(events);
    }
    record.deployments = <[Deployment; 2]>::try_from(played).ok();
    for side in Side::BOTH {
        let events = game
            .handle(&Command::Confirm { side }, &mut rng)
            .map_err(|e| format!("the engine refused a confirmation: {e}"))?;
        feed(&mut players, &events, &game)?;
        record.events.extend(events);
    }
    // Every fight removes a piece and at most `no_combat_draw_plies` pass between fights.
    let bound = 80 * (u32::from(rules.no_combat_draw_plies) + 1);
    let mut undone = UndoneMoves::default();
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
        if rules.family == Family::Junqi {
            count_mishaps(&rules, &events, slot, record);
        }
        record.undone[slot(side)] += u32::from(undone.undoes(side, mv, &events));
        feed(&mut players, &events, &game)?;
        record.events.extend(events);
        record.plies = game.plies();
    }
    game.outcome()
        .ok_or_else(|| "an ended game without an outcome".to_string())
}

/// Each side's previous move, if it was no fight: what the side's next move would undo by
/// stepping straight back.
#[derive(Debug, Default)]
struct UndoneMoves {
    last_quiet: [Option<Move>; 2],
}

impl UndoneMoves {
    /// Whether `side`'s move `mv`, which gave `events`, took a piece straight back to the
    /// square the side's previous move left, neither move a fight.
    fn undoes(&mut self, side: Side, mv: Move, events: &[Event]) -> bool {
        let quiet = !events.iter().any(|e| {
            matches!(
                e,
                Event::Moved {
                    combat: Some(_),
                    ..
                }
            )
        });
        let back = Move {
            from: mv.to,
            to: mv.from,
        };
        let undoes = quiet && self.last_quiet[side.index()] == Some(back);
        self.last_quiet[side.index()] = quiet.then_some(mv);
        undoes
    }
}

/// Junqi: the known weaknesses of a player, counted from the full events (the referee's view,
/// never a player's): a commander lost to a bomb, a piece frozen in an empty HQ, a flag
/// attempt on an HQ that held another piece, the flag lost to an engineer.
fn count_mishaps(
    rules: &Rules,
    events: &[Event],
    slot: impl Fn(Side) -> usize,
    record: &mut GameRecord,
) {
    let hq = {
        let topo = rules.topology();
        topo.hq[0] | topo.hq[1]
    };
    for event in events {
        let Event::Moved {
            mv, piece, combat, ..
        } = event
        else {
            continue;
        };
        match combat {
            Some(c) => {
                let pair = (piece.kind, c.defender.kind);
                if pair == (junqi::COMMANDER, junqi::BOMB) {
                    record.commander_bombed[slot(piece.side)] = true;
                } else if pair == (junqi::BOMB, junqi::COMMANDER) {
                    record.commander_bombed[slot(c.defender.side)] = true;
                }
                if c.flag_captured && piece.kind == junqi::ENGINEER {
                    record.flag_lost_to_engineer[slot(c.defender.side)] = true;
                }
                if c.attacker_survives && !c.flag_captured && hq & mv.to.bit() != 0 {
                    record.hq_decoys[slot(piece.side)] += u32::from(!rules.hq_pieces_may_move);
                }
            }
            None if hq & mv.to.bit() != 0 && !rules.hq_pieces_may_move => {
                record.hq_freezes[slot(piece.side)] += 1;
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hidden_front_rules::position::Combat;
    use hidden_front_rules::{Piece, PieceId, PieceKind};

    fn record() -> GameRecord {
        GameRecord::new(Level::Belief, Level::Search, Side::South)
    }

    fn moved(rules: &Rules, from: &str, to: &str, mover: Piece, combat: Option<Combat>) -> Event {
        let topo = rules.topology();
        Event::Moved {
            mv: Move {
                from: topo.node(from).unwrap(),
                to: topo.node(to).unwrap(),
            },
            piece: mover,
            combat,
            flag_reveal: Vec::new(),
        }
    }

    fn piece(side: Side, kind: PieceKind) -> Piece {
        Piece {
            side,
            kind,
            id: PieceId(kind.0),
        }
    }

    #[test]
    fn mishaps_are_counted_for_the_side_that_suffers_them() {
        let rules = Rules::default();
        let slot = |s: Side| usize::from(s != Side::South);
        let mut r = record();
        // North's bomb takes south's commander; south steps a 3 into the empty HQ B12;
        // north's 8 wins a fight in south's HQ D1 against a 2; and north's engineer takes
        // south's flag in B1.
        let events = [
            moved(
                &rules,
                "C7",
                "C6",
                piece(Side::North, junqi::BOMB),
                Some(Combat {
                    defender: piece(Side::South, junqi::COMMANDER),
                    attacker_survives: false,
                    defender_survives: false,
                    flag_captured: false,
                }),
            ),
            moved(&rules, "B11", "B12", piece(Side::South, PieceKind(3)), None),
            moved(
                &rules,
                "D2",
                "D1",
                piece(Side::North, PieceKind(8)),
                Some(Combat {
                    defender: piece(Side::South, PieceKind(2)),
                    attacker_survives: true,
                    defender_survives: false,
                    flag_captured: false,
                }),
            ),
            moved(
                &rules,
                "B2",
                "B1",
                piece(Side::North, junqi::ENGINEER),
                Some(Combat {
                    defender: piece(Side::South, junqi::FLAG),
                    attacker_survives: true,
                    defender_survives: false,
                    flag_captured: true,
                }),
            ),
        ];
        count_mishaps(&rules, &events, slot, &mut r);
        assert_eq!(r.commander_bombed, [true, false]);
        assert_eq!(r.hq_freezes, [1, 0]);
        assert_eq!(r.hq_decoys, [0, 1]);
        assert_eq!(r.flag_lost_to_engineer, [true, false]);
        // Where HQ pieces move on, nothing is frozen.
        let mut r = record();
        let mobile = Rules::parse("hidden-front+hq-mobile").unwrap();
        count_mishaps(&mobile, &events, slot, &mut r);
        assert_eq!((r.hq_freezes, r.hq_decoys), ([0, 0], [0, 0]));
    }

    #[test]
    fn a_step_straight_back_after_a_quiet_move_is_undone_and_nothing_else() {
        let rules = Rules::default();
        let topo = rules.topology();
        let mv = |from: &str, to: &str| Move {
            from: topo.node(from).unwrap(),
            to: topo.node(to).unwrap(),
        };
        let quiet = |from: &str, to: &str, side: Side| {
            [moved(&rules, from, to, piece(side, PieceKind(5)), None)]
        };
        let fight = |from: &str, to: &str, side: Side| {
            [moved(
                &rules,
                from,
                to,
                piece(side, PieceKind(5)),
                Some(Combat {
                    defender: piece(side.other(), PieceKind(3)),
                    attacker_survives: true,
                    defender_survives: false,
                    flag_captured: false,
                }),
            )]
        };
        let mut watch = UndoneMoves::default();
        let (s, n) = (Side::South, Side::North);
        assert!(!watch.undoes(s, mv("C5", "C4"), &quiet("C5", "C4", s)));
        // The opponent's moves in between change nothing; its own back step is its own.
        assert!(!watch.undoes(n, mv("C8", "C9"), &quiet("C8", "C9", n)));
        assert!(watch.undoes(s, mv("C4", "C5"), &quiet("C4", "C5", s)));
        assert!(watch.undoes(n, mv("C9", "C8"), &quiet("C9", "C8", n)));
        // A step on, a step that does not go back the way it came, and a step back that is a
        // fight or comes after one are not undoing.
        assert!(!watch.undoes(s, mv("C5", "D5"), &quiet("C5", "D5", s)));
        assert!(!watch.undoes(s, mv("D5", "D4"), &quiet("D5", "D4", s)));
        assert!(!watch.undoes(s, mv("D4", "D5"), &fight("D4", "D5", s)));
        assert!(!watch.undoes(s, mv("D5", "D4"), &quiet("D5", "D4", s)));
        assert!(!watch.undoes(s, mv("D4", "D5"), &fight("D4", "D5", s)));
    }
}
