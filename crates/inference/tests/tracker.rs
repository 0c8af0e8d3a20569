//! The tracker's conclusions against the engine: hand-made fights and moves whose consistent
//! kinds the engine itself computes, and seeded random refereed games of both families in which
//! the true kind of every opponent piece (the test reads the game; the tracker never does) is
//! always among its possible kinds.

mod common;

use common::feed;

use hidden_front_inference::Tracker;
use hidden_front_rules::{
    Command, Event, Family, Game, GameRng, Move, Node, Phase, Piece, PieceId, PieceKind, Position,
    Rules, Side, ViewCombat, ViewEvent, ViewPiece,
};
use std::collections::HashMap;

const RULE_SETS: [&str; 7] = [
    "hidden-front",
    "hidden-front+hq-mobile+front-bombs+sturdy-mines+bomb-spares-flag+flag-reveal",
    "gunjin-shogi",
    "gunjin-shogi+y-gates+tank-beats-engineer",
    "gunjin-shogi+i-gates+mine-survives",
    "gunjin-shogi+23-pieces",
    "hidden-front+no-combat-40",
];

fn rules(name: &str) -> Rules {
    Rules::parse(name).unwrap()
}

fn node(rules: &Rules, name: &str) -> Node {
    rules.topology().node(name).unwrap()
}

fn piece(node: Node, side: Side, id: u8, kind: Option<PieceKind>) -> ViewPiece {
    ViewPiece {
        node,
        side,
        id: PieceId(id),
        kind,
    }
}

fn set(kinds: impl IntoIterator<Item = PieceKind>) -> Vec<PieceKind> {
    let mut v: Vec<PieceKind> = kinds.into_iter().collect();
    v.sort();
    v
}

/// The survivals of `attacker` (south, on `from`) attacking a north piece of kind `defender` on
/// `to`, with a north piece of kind `behind` on `behind_at` if given, as the engine plays it.
fn engine_fight(
    rules: Rules,
    attacker: PieceKind,
    from: Node,
    defender: PieceKind,
    to: Node,
    behind: Option<(Node, PieceKind)>,
) -> (bool, bool) {
    let mut pos = Position::empty(rules, Side::South);
    let put = |pos: &mut Position, node, side, kind, id| {
        assert!(pos.put(
            node,
            Piece {
                side,
                kind,
                id: PieceId(id)
            }
        ));
    };
    put(&mut pos, from, Side::South, attacker, 1);
    put(&mut pos, to, Side::North, defender, 2);
    if let Some((at, kind)) = behind {
        put(&mut pos, at, Side::North, kind, 3);
    }
    let report = pos.play(Move { from, to }).expect("the test move is legal");
    let c = report.combat.expect("a fight");
    (c.attacker_survives, c.defender_survives)
}

/// One fight seen by the south seat: its own `attacker` on `from` attacks north piece 2 on `to`
/// (north piece 3 behind it when `behind` is set); the tracker's kinds for piece 2 afterwards.
fn tracked_fight(
    rules: Rules,
    attacker: PieceKind,
    from: Node,
    to: Node,
    behind: Option<Node>,
    seen: (bool, bool),
) -> Vec<PieceKind> {
    let mut t = Tracker::new(rules, Side::South);
    let mut pieces = vec![
        piece(from, Side::South, 1, Some(attacker)),
        piece(to, Side::North, 2, None),
    ];
    if let Some(b) = behind {
        pieces.push(piece(b, Side::North, 3, None));
    }
    t.observe(&ViewEvent::PlayStarted { pieces });
    t.observe(&ViewEvent::Moved {
        side: Side::South,
        mv: Move { from, to },
        piece: PieceId(1),
        kind: Some(attacker),
        combat: Some(ViewCombat {
            defender: PieceId(2),
            defender_kind: None,
            attacker_survives: seen.0,
            defender_survives: seen.1,
            flag_captured: false,
        }),
        flag_reveal: vec![],
    });
    set(t.possible_kinds(PieceId(2)).unwrap())
}

/// After a fight the defender's kinds are exactly those (of the ones its start square allows)
/// for which the engine gives the seen result; for a Gunjin Shogi flag, with some kind of the
/// piece behind it.
fn check_fights(name: &str, from: &str, to: &str, behind: Option<&str>) {
    let rules = rules(name);
    let (from, to) = (node(&rules, from), node(&rules, to));
    let behind = behind.map(|b| node(&rules, b));
    let kinds: Vec<PieceKind> = rules.kinds().iter().map(|(k, _, _)| *k).collect();
    // What the start square allows, from a tracker that saw no fight.
    let mut start = Tracker::new(rules, Side::South);
    let mut pieces = vec![piece(to, Side::North, 2, None)];
    if let Some(b) = behind {
        pieces.push(piece(b, Side::North, 3, None));
    }
    start.observe(&ViewEvent::PlayStarted { pieces });
    let allowed = start.possible_kinds(PieceId(2)).unwrap();
    let behind_allowed = behind.map(|_| start.possible_kinds(PieceId(3)).unwrap());
    let mut checked = 0;
    for &attacker in kinds.iter().filter(|k| rules.kind_moves(**k)) {
        for seen in [(true, false), (false, true), (false, false)] {
            let expected = set(allowed.iter().copied().filter(|&k| {
                let behinds: Vec<Option<(Node, PieceKind)>> = match (behind, &behind_allowed) {
                    (Some(b), Some(bk)) => bk
                        .iter()
                        .filter(|&&x| x != k)
                        .map(|&x| Some((b, x)))
                        .collect(),
                    _ => vec![None],
                };
                behinds
                    .into_iter()
                    .any(|b| engine_fight(rules, attacker, from, k, to, b) == seen)
            }));
            if expected.is_empty() {
                continue;
            }
            let got = tracked_fight(rules, attacker, from, to, behind, seen);
            assert_eq!(got, expected, "{name}: {attacker:?} {seen:?}");
            checked += 1;
        }
    }
    assert!(checked > 10, "{name}: only {checked} outcomes checked");
}

#[test]
fn junqi_fights_leave_exactly_the_consistent_kinds() {
    check_fights("hidden-front", "C6", "C7", None);
    check_fights(
        "hidden-front+sturdy-mines+bomb-spares-flag",
        "A11",
        "A12",
        None,
    );
    check_fights("hidden-front+sturdy-mines", "B11", "B12", None);
}

#[test]
fn gunjin_fights_leave_exactly_the_consistent_kinds() {
    // Nothing behind the defender: a flag there loses to anything.
    check_fights("gunjin-shogi", "b6", "b7", None);
    // A piece behind it: a flag fights as that piece.
    check_fights("gunjin-shogi", "b6", "b7", Some("b8"));
    check_fights(
        "gunjin-shogi+mine-survives+tank-beats-engineer",
        "c6",
        "c7",
        Some("c8"),
    );
    check_fights("gunjin-shogi+23-pieces", "a6", "a7", Some("a8"));
}

#[test]
fn a_gunjin_flag_with_nothing_behind_that_survived_is_no_flag() {
    let rules = rules("gunjin-shogi");
    let got = tracked_fight(
        rules,
        hidden_front_rules::piece::gunjin::CAPTAIN,
        node(&rules, "b6"),
        node(&rules, "b7"),
        None,
        (false, true),
    );
    assert!(!got.contains(&hidden_front_rules::piece::gunjin::FLAG));
    let backed = tracked_fight(
        rules,
        hidden_front_rules::piece::gunjin::CAPTAIN,
        node(&rules, "b6"),
        node(&rules, "b7"),
        Some(node(&rules, "b8")),
        (false, true),
    );
    assert!(backed.contains(&hidden_front_rules::piece::gunjin::FLAG));
}

/// A north piece moving `from` -> `to` (alone on the board, or with `blockers`): its kinds after.
fn moved(rules: Rules, from: &str, to: &str, blockers: &[&str]) -> Vec<PieceKind> {
    let mut t = Tracker::new(rules, Side::South);
    let mut pieces = vec![piece(node(&rules, from), Side::North, 7, None)];
    for (i, b) in blockers.iter().enumerate() {
        pieces.push(piece(node(&rules, b), Side::North, 20 + i as u8, None));
    }
    t.observe(&ViewEvent::PlayStarted { pieces });
    t.observe(&ViewEvent::Moved {
        side: Side::North,
        mv: Move {
            from: node(&rules, from),
            to: node(&rules, to),
        },
        piece: PieceId(7),
        kind: None,
        combat: None,
        flag_reveal: vec![],
    });
    set(t.possible_kinds(PieceId(7)).unwrap())
}

#[test]
fn a_piece_that_moved_is_no_immobile_kind() {
    for name in RULE_SETS {
        let rules = rules(name);
        let (from, to) = match rules.family {
            Family::Junqi => ("B11", "B10"),
            Family::GunjinShogi => ("b7", "b6"),
        };
        let kinds = moved(rules, from, to, &[]);
        assert!(!kinds.is_empty(), "{name}");
        for k in &kinds {
            assert!(rules.kind_moves(*k), "{name}: {k:?} cannot move");
        }
        let mobile = rules
            .kinds()
            .iter()
            .filter(|(k, _, _)| rules.kind_moves(*k))
            .count();
        assert_eq!(kinds.len(), mobile, "{name}: a step says no more");
    }
}

#[test]
fn gunjin_moves_name_the_kinds_that_can_make_them() {
    use hidden_front_rules::piece::gunjin::*;
    let rules = rules("gunjin-shogi");
    // Two squares straight: the tank, the cavalry, the engineer, the plane along its file.
    assert_eq!(
        moved(rules, "b7", "b5", &[]),
        set([PLANE, TANK, CAVALRY, ENGINEER])
    );
    // Three squares sideways: only the engineer.
    assert_eq!(moved(rules, "b7", "e7", &[]), set([ENGINEER]));
    // Over a piece along the file: only the plane jumps.
    assert_eq!(moved(rules, "b7", "b5", &["b6"]), set([PLANE]));
    // Across the wall where no gate is: only the plane flies over it.
    assert_eq!(moved(rules, "b5", "b4", &[]), set([PLANE]));
}

/// Plays a seeded random refereed game and checks, after every event, both seats' trackers
/// against the truth: every opponent piece's true kind is possible, and the board they rebuilt
/// is the game's board by ids.
fn check_game(rules: Rules, seed: u64) -> (u32, u32) {
    let mut rng = GameRng::from_seed(seed);
    let first = if rng.below(2) == 0 {
        Side::South
    } else {
        Side::North
    };
    let (mut game, events) = Game::create(rules, first, &mut rng);
    let mut trackers = [
        Tracker::new(rules, Side::South),
        Tracker::new(rules, Side::North),
    ];
    let mut truth: HashMap<PieceId, PieceKind> = HashMap::new();
    let mut narrowed = 0;
    feed(&mut trackers, &events);
    for side in Side::BOTH {
        let events = game.handle(&Command::Confirm { side }, &mut rng).unwrap();
        feed(&mut trackers, &events);
    }
    for (_, p) in game.starting_pieces() {
        truth.insert(p.id, p.kind);
    }
    let mut fights = 0;
    while game.phase() == Phase::Play {
        let events = common::random_move(&mut game, &mut rng);
        if events.iter().any(|e| {
            matches!(
                e,
                Event::Moved {
                    combat: Some(_),
                    ..
                }
            )
        }) {
            fights += 1;
        }
        feed(&mut trackers, &events);
        for t in &trackers {
            for enemy in t.beliefs().pieces() {
                let kind = truth[&enemy.id];
                assert!(
                    enemy.possible.contains(kind),
                    "{rules} seed {seed} ply {}: {:?} seat: piece {:?} is {kind:?}, not in {:?}",
                    game.plies(),
                    t.side(),
                    enemy.id,
                    enemy.possible.iter().collect::<Vec<_>>()
                );
            }
        }
        if game.phase() == Phase::Play {
            for t in &trackers {
                for (n, p) in game.position().pieces() {
                    let occ = t
                        .occupant(n)
                        .expect("the tracker knows every occupied node");
                    assert_eq!((occ.side, occ.id), (p.side, p.id), "{rules} seed {seed}");
                }
                let count = t.board().iter().flatten().count();
                assert_eq!(
                    count,
                    game.position().pieces().count(),
                    "{rules} seed {seed}"
                );
            }
        }
    }
    for t in &trackers {
        narrowed += t
            .beliefs()
            .pieces()
            .iter()
            .filter(|p| (p.possible.len() as usize) < rules.kinds().len())
            .count() as u32;
    }
    (fights, narrowed)
}

#[test]
fn the_true_kind_is_always_possible_in_random_games_of_both_families() {
    let mut fights = 0;
    let mut narrowed = 0;
    for (i, name) in RULE_SETS.iter().enumerate() {
        for seed in 0..40u64 {
            let (f, n) = check_game(rules(name), seed * 7919 + i as u64);
            fights += f;
            narrowed += n;
        }
    }
    assert!(fights > 1000, "the games had few fights: {fights}");
    assert!(narrowed > 1000, "the trackers learnt little: {narrowed}");
}

#[test]
fn an_enemy_that_entered_the_hq_and_did_not_win_is_no_officer_who_takes_it() {
    use hidden_front_rules::piece::gunjin::*;
    let rules = rules("gunjin-shogi");
    let mut t = Tracker::new(rules, Side::South);
    let hq = node(&rules, "d1+e1");
    t.observe(&ViewEvent::PlayStarted {
        pieces: vec![piece(node(&rules, "d2"), Side::North, 7, None)],
    });
    t.observe(&ViewEvent::Moved {
        side: Side::North,
        mv: Move {
            from: node(&rules, "d2"),
            to: hq,
        },
        piece: PieceId(7),
        kind: None,
        combat: None,
        flag_reveal: vec![],
    });
    t.observe(&ViewEvent::TimedOut {
        side: Side::South,
        count: 1,
    });
    let kinds = set(t.possible_kinds(PieceId(7)).unwrap());
    for k in [
        GENERAL,
        LIEUTENANT_GENERAL,
        MAJOR_GENERAL,
        COLONEL,
        LIEUTENANT_COLONEL,
        MAJOR,
    ] {
        assert!(!kinds.contains(&k), "{k:?}");
    }
    assert!(kinds.contains(&CAPTAIN) && kinds.contains(&PLANE));
}

#[test]
fn gunjin_start_squares_rule_out_only_the_flag_and_mines_on_gates() {
    use hidden_front_rules::piece::gunjin::*;
    let rules = rules("gunjin-shogi");
    let mut t = Tracker::new(rules, Side::South);
    t.observe(&ViewEvent::PlayStarted {
        pieces: vec![
            piece(node(&rules, "a5"), Side::North, 1, None),
            piece(node(&rules, "b5"), Side::North, 2, None),
            piece(node(&rules, "d8+e8"), Side::North, 3, None),
        ],
    });
    let gate = set(t.possible_kinds(PieceId(1)).unwrap());
    assert!(!gate.contains(&FLAG) && !gate.contains(&MINE));
    assert_eq!(gate.len(), 14);
    assert_eq!(set(t.possible_kinds(PieceId(2)).unwrap()).len(), 16);
    // Junqi's rules (no mine in an HQ, flag only in an HQ) do not hold here.
    assert!(t.possible_kinds(PieceId(3)).unwrap().contains(&MINE));
    assert!(t.possible_kinds(PieceId(2)).unwrap().contains(&FLAG));
}
