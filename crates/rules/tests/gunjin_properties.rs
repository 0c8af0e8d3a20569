//! Property tests for the Gunjin Shogi engine, on every board and option.
//!
//! - A slow reference move generator written from the spec's text (square names, the gate lists
//!   as the spec prints them, the two-cell HQ) is compared with `Position::destinations`,
//!   `legal_moves` and `has_legal_move` on every position of random games, for both sides.
//! - Random whole games (random deployments, random legal moves, some timeouts) are checked event
//!   by event: every game ends within a bound; fights are judged as the strength table says
//!   (the flag as the piece behind it); no view or projected event shows a kind the viewer may not
//!   know before the end, and everything is shown after it; the log replays to the live game.

use hidden_front_rules::gunjin::{Fight, fight};
use hidden_front_rules::{
    Command, Event, Game, GameRng, Move, Node, Nodes, Phase, Position, Rules, Side, Viewer,
    project, reveal, view,
};
use proptest::prelude::*;

mod common;
use common::check_following;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

const RULE_SETS: [&str; 6] = [
    "gunjin-shogi",
    "gunjin-shogi+y-gates",
    "gunjin-shogi+i-gates",
    "gunjin-shogi+23-pieces",
    "gunjin-shogi+tank-beats-engineer+mine-survives+no-combat-40",
    "gunjin-shogi+23-pieces+mine-survives",
];

// ---------------------------------------------------------------------------------------------
// The reference generator, from the spec's text.
// ---------------------------------------------------------------------------------------------

/// The spec's gate lists, `(south square, north square)`.
fn spec_gates(rules: &Rules) -> Vec<(&'static str, &'static str)> {
    let name = rules.name();
    if name.contains("23-pieces") {
        vec![("b4", "b5"), ("e4", "e5")]
    } else if name.contains("y-gates") {
        vec![("b4", "a5"), ("b4", "c5"), ("g5", "f4"), ("g5", "h4")]
            .into_iter()
            .map(|(a, b)| if a.ends_with('4') { (a, b) } else { (b, a) })
            .collect()
    } else if name.contains("i-gates") {
        vec![("b4", "b5"), ("g4", "g5")]
    } else {
        let mut v = Vec::new();
        for (s, n) in [(["a4", "c4"], ["a5", "c5"]), (["f4", "h4"], ["f5", "h5"])] {
            for a in s {
                for b in n {
                    v.push((a, b));
                }
            }
        }
        v
    }
}

struct RefBoard {
    files: i32,
    hq: [&'static str; 2],
    gates: Vec<(&'static str, &'static str)>,
}

impl RefBoard {
    fn new(rules: &Rules) -> RefBoard {
        let small = rules.name().contains("23-pieces");
        RefBoard {
            files: if small { 6 } else { 8 },
            hq: if small {
                ["c1+d1", "c8+d8"]
            } else {
                ["d1+e1", "d8+e8"]
            },
            gates: spec_gates(rules),
        }
    }

    /// The square name holding cell (file, rank).
    fn square(&self, file: i32, rank: i32) -> Option<String> {
        if !(0..self.files).contains(&file) || !(1..=8).contains(&rank) {
            return None;
        }
        let cell = format!("{}{}", (b'a' + file as u8) as char, rank);
        Some(
            self.hq
                .iter()
                .find(|h| h.split('+').any(|c| c == cell))
                .map_or(cell, |h| h.to_string()),
        )
    }

    fn cells(&self, square: &str) -> Vec<(i32, i32)> {
        square
            .split('+')
            .map(|c| {
                let b = c.as_bytes();
                (i32::from(b[0] - b'a'), i32::from(b[1] - b'0'))
            })
            .collect()
    }

    /// One straight step from `square` in direction (df, dr): the squares it lands on.
    fn step(&self, square: &str, (df, dr): (i32, i32)) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for (f, r) in self.cells(square) {
            let (tf, tr) = (f + df, r + dr);
            let Some(target) = self.square(tf, tr) else {
                continue;
            };
            if (r == 4 && tr == 5) || (r == 5 && tr == 4) {
                for &(s, n) in &self.gates {
                    if s == square && dr == 1 {
                        out.insert(n.to_string());
                    }
                    if n == square && dr == -1 {
                        out.insert(s.to_string());
                    }
                }
            } else if target != square {
                out.insert(target);
            }
        }
        out
    }

    fn destinations(
        &self,
        cells: &BTreeMap<String, (Side, String)>,
        from: &str,
    ) -> BTreeSet<String> {
        let (side, code) = &cells[from];
        let free = |sq: &String| cells.get(sq).is_none_or(|(s, _)| s != side);
        let dirs = [(1, 0), (0, 1), (-1, 0), (0, -1)];
        let mut out = BTreeSet::new();
        match code.as_str() {
            "MIN" | "FLG" => {}
            "PLA" => {
                for (f, _) in self.cells(from) {
                    for r in 1..=8 {
                        out.extend(self.square(f, r));
                    }
                }
                out.remove(from);
                out.extend(self.step(from, (1, 0)));
                out.extend(self.step(from, (-1, 0)));
            }
            "TNK" | "CAV" | "ENG" => {
                let reach = if code == "ENG" { 20 } else { 2 };
                for d in dirs {
                    let mut frontier = BTreeSet::from([from.to_string()]);
                    for _ in 0..reach {
                        let next: BTreeSet<String> =
                            frontier.iter().flat_map(|s| self.step(s, d)).collect();
                        out.extend(next.iter().cloned());
                        frontier = next
                            .into_iter()
                            .filter(|s| !cells.contains_key(s))
                            .collect();
                    }
                }
            }
            _ => {
                for d in dirs {
                    out.extend(self.step(from, d));
                }
            }
        }
        out.retain(|s| free(s));
        out
    }
}

fn cells_of(position: &Position) -> BTreeMap<String, (Side, String)> {
    let rules = position.rules();
    let topo = position.topology();
    position
        .pieces()
        .map(|(n, p)| {
            (
                topo.name(n).to_string(),
                (p.side, rules.code(p.kind).to_string()),
            )
        })
        .collect()
}

/// The engine agrees with the reference on every piece of both sides.
fn check_moves(position: &Position) {
    let board = RefBoard::new(position.rules());
    let topo = position.topology();
    let cells = cells_of(position);
    let mut any = [false; 2];
    for (node, piece) in position.pieces() {
        let name = topo.name(node);
        let want = board.destinations(&cells, name);
        let got: BTreeSet<String> = Nodes(position.destinations(node))
            .map(|n| topo.name(n).to_string())
            .collect();
        assert_eq!(
            got,
            want,
            "{} on {name} in {position:?}",
            position.rules().code(piece.kind)
        );
        any[piece.side.index()] |= !want.is_empty();
    }
    for side in Side::BOTH {
        assert_eq!(
            position.has_legal_move(side),
            any[side.index()],
            "{position:?}"
        );
    }
    let listed: BTreeSet<Move> = position.legal_moves().iter().collect();
    let expected: BTreeSet<Move> = position
        .pieces()
        .filter(|(_, p)| p.side == position.to_move())
        .flat_map(|(n, _)| Nodes(position.destinations(n)).map(move |to| Move { from: n, to }))
        .collect();
    assert_eq!(listed, expected);
}

// ---------------------------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------------------------

/// Every `kind` / `defender_kind` in a view or projected event that the viewer may not know is
/// null; with `everything`, every kind is shown.
fn walk(value: &Value, mover: Option<Side>, viewer: Viewer, everything: bool, what: &str) {
    match value {
        Value::Array(items) => items
            .iter()
            .for_each(|i| walk(i, mover, viewer, everything, what)),
        Value::Object(map) => {
            let side = map
                .get("side")
                .and_then(Value::as_str)
                .and_then(Side::parse);
            for (key, v) in map {
                let owner = match key.as_str() {
                    "kind" => side,
                    "defender_kind" => mover.map(Side::other),
                    "deployment" | "own_deployment" if !v.is_null() => {
                        let owner = v.get("side").and_then(Value::as_str).and_then(Side::parse);
                        assert!(
                            everything || viewer.side() == owner,
                            "{what}: {viewer:?} sees {owner:?}'s deployment"
                        );
                        None
                    }
                    _ => None,
                };
                if let Some(owner) = owner {
                    let may = everything || viewer.side() == Some(owner);
                    assert_eq!(
                        !v.is_null(),
                        may,
                        "{what}: {viewer:?} and the kind of a {owner} piece: {v}"
                    );
                }
                walk(v, side.or(mover), viewer, everything, what);
            }
        }
        _ => {}
    }
}

fn check_views(game: &Game) {
    let ended = game.phase() == Phase::Ended;
    for viewer in Viewer::ALL {
        let json = serde_json::to_value(view(game, viewer)).expect("view");
        walk(&json, None, viewer, ended, "view");
    }
}

fn check_projections(event: &Event, game_now: &Game) {
    let end = reveal(game_now);
    for viewer in Viewer::ALL {
        if let Some(projected) = project(event, viewer, None) {
            let json = serde_json::to_value(&projected).expect("event");
            let everything = matches!(event, Event::Ended { .. });
            walk(&json, None, viewer, everything, "event");
        }
        if let Some(projected) = end
            .as_ref()
            .and_then(|end| project(event, viewer, Some(end)))
        {
            let json = serde_json::to_value(&projected).expect("event");
            walk(&json, None, viewer, true, "event after the end");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Random games
// ---------------------------------------------------------------------------------------------

/// Plays one random game with every check; returns the log.
fn play_random_game(rules: Rules, seed: u64, first: Side, timeouts: bool) -> Vec<Event> {
    let mut rng = GameRng::from_seed(seed);
    let mut pick = GameRng::from_seed(seed ^ 0x5151);
    let (mut game, mut log) = Game::create(rules, first, &mut rng);
    // A shadow game rebuilt event by event must equal the live one after every command.
    let mut shadow = Game::replay(&log).expect("the creation events replay");
    assert_eq!(shadow, game);
    for side in Side::BOTH {
        let mut commands = vec![Command::Confirm { side }];
        if pick.below(2) == 0 {
            commands.insert(0, Command::Reshuffle { side });
        }
        for command in commands {
            let events = game.handle(&command, &mut rng).expect("deployment command");
            for event in &events {
                shadow.apply(event).expect("a fresh event applies");
            }
            assert_eq!(shadow, game);
            log.extend(events);
        }
    }
    let pieces = 2 * rules.pieces_per_side() as u32;
    let bound = (pieces + 1) * (u32::from(rules.no_combat_draw_plies) + 1);
    let mut moves = hidden_front_rules::MoveList::default();
    while game.phase() == Phase::Play {
        assert!(game.plies() <= bound, "no end after {bound} plies");
        let before = *game.position();
        check_moves(&before);
        check_views(&game);
        let side = game.to_move();
        let command = if timeouts && pick.below(50) == 0 && game.timeouts(side) < 2 {
            Command::Timeout { side }
        } else {
            before.legal_moves_into(&mut moves);
            let mv = moves
                .nth(pick.below(moves.len() as u32) as usize)
                .expect("a side to move has a move");
            Command::Move { side, mv }
        };
        let events = game.handle(&command, &mut rng).expect("legal command");
        for event in &events {
            if let Event::Moved {
                mv,
                piece,
                combat: Some(c),
                ..
            } = event
            {
                check_fight(&before, *mv, piece.kind, c);
            }
        }
        for event in &events {
            shadow.apply(event).expect("a fresh event applies");
        }
        assert_eq!(shadow, game, "the event-by-event replay drifted");
        log.extend(events);
    }
    check_views(&game);
    for event in &log {
        check_projections(event, &game);
    }
    check_following(&log);
    assert_eq!(
        Game::replay(&log).expect("replays"),
        game,
        "replay equals live"
    );
    assert!(game.outcome().is_some());
    log
}

/// A fight is judged by the strength table, the flag fighting as the own piece behind it.
fn check_fight(
    before: &Position,
    mv: Move,
    attacker: hidden_front_rules::PieceKind,
    c: &hidden_front_rules::Combat,
) {
    let rules = before.rules();
    let topo = before.topology();
    let flag = rules.parse_kind("FLG").unwrap();
    let defender = c.defender;
    let fights_as = if defender.kind == flag {
        // The own piece on the square one rank back, by name.
        let name = topo.name(mv.to);
        let cell = name.split('+').next().unwrap();
        let (file, rank) = (cell.as_bytes()[0], i32::from(cell.as_bytes()[1] - b'0'));
        let back = if defender.side == Side::South {
            rank - 1
        } else {
            rank + 1
        };
        let behind = (1..=8)
            .contains(&back)
            .then(|| format!("{}{}", file as char, back))
            .and_then(|sq| {
                topo.node(&sq)
                    .or_else(|| Nodes(topo.all).find(|&n| topo.name(n).split('+').any(|c| c == sq)))
            })
            .and_then(|n: Node| before.piece_at(n))
            .filter(|p| p.side == defender.side && !name.contains('+'));
        behind.map_or(flag, |p| p.kind)
    } else {
        defender.kind
    };
    let want = fight(rules, attacker, fights_as);
    let got = match (c.attacker_survives, c.defender_survives) {
        (true, false) => Fight::Wins,
        (false, true) => Fight::Loses,
        (false, false) => Fight::Both,
        (true, true) => panic!("both survive"),
    };
    assert_eq!(got, want, "{mv:?} in {before:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn random_games_end_keep_secrets_and_replay(
        seed in any::<u64>(),
        rules_index in 0..RULE_SETS.len(),
        north_first in any::<bool>(),
        timeouts in any::<bool>(),
    ) {
        let rules = Rules::parse(RULE_SETS[rules_index]).expect("rules");
        let first = if north_first { Side::North } else { Side::South };
        play_random_game(rules, seed, first, timeouts);
    }
}

/// Fixed seeds on every rule set, so every board is exercised on every run.
#[test]
fn deterministic_games_on_every_rule_set() {
    let mut reasons = BTreeSet::new();
    for (i, name) in RULE_SETS.iter().enumerate() {
        for seed in 0..4u64 {
            let rules = Rules::parse(name).expect("rules");
            let first = if seed % 2 == 0 {
                Side::South
            } else {
                Side::North
            };
            let log = play_random_game(rules, seed * 31 + i as u64, first, seed == 3);
            if let Some(Event::Ended { outcome, .. }) = log.last() {
                reasons.insert(outcome.reason.name());
            }
        }
    }
    assert!(reasons.contains("hq_entered"), "{reasons:?}");
}
