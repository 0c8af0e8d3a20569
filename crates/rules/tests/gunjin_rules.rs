//! Gunjin Shogi: every rule of `docs/rules/gunjin-shogi.md`, each checked through the
//! engine's public interface (`Position`, `Deployment`, `Rules`): the boards and gates, every
//! piece's moves on open and crowded boards, the HQ, every cell of the strength table in both
//! directions, the flag rule with each kind behind it, each win rule and deployment validation.

use hidden_front_rules::gunjin::{Fight, fight};
use hidden_front_rules::piece::gunjin::*;
use hidden_front_rules::{
    Deployment, DeploymentProblem, EndReason, Move, Node, Nodes, Outcome, Piece, PieceId,
    PieceKind, Position, Rules, Side,
};
use std::collections::BTreeSet;

fn rules(name: &str) -> Rules {
    Rules::parse(name).expect("rules")
}

fn node(rules: &Rules, name: &str) -> Node {
    rules
        .topology()
        .node(name)
        .unwrap_or_else(|| panic!("{name} is not a node of {rules}"))
}

/// A position from `(square, side, code)` triples.
fn position(rules: &Rules, to_move: Side, pieces: &[(&str, Side, &str)]) -> Position {
    let mut p = Position::empty(*rules, to_move);
    for (i, &(at, side, code)) in pieces.iter().enumerate() {
        let kind = rules.parse_kind(code).expect("code");
        assert!(
            p.put(
                node(rules, at),
                Piece {
                    side,
                    kind,
                    id: PieceId(i as u8)
                }
            ),
            "{at} taken"
        );
    }
    p
}

fn names(rules: &Rules, bits: u64) -> BTreeSet<String> {
    Nodes(bits)
        .map(|n| rules.topology().name(n).to_string())
        .collect()
}

fn set(list: &str) -> BTreeSet<String> {
    list.split_whitespace().map(String::from).collect()
}

/// The destinations of the piece on `from`, as names.
fn dests(p: &Position, from: &str) -> BTreeSet<String> {
    let r = *p.rules();
    names(&r, p.destinations(node(&r, from)))
}

const S: Side = Side::South;
const N: Side = Side::North;

// ---------------------------------------------------------------------------------------------
// Boards
// ---------------------------------------------------------------------------------------------

#[test]
fn boards_have_the_specified_shape() {
    for (name, columns, squares) in [
        ("gunjin-shogi", 8, 31),
        ("gunjin-shogi+y-gates", 8, 31),
        ("gunjin-shogi+i-gates", 8, 31),
        ("gunjin-shogi+23-pieces", 6, 23),
    ] {
        let r = rules(name);
        let t = r.topology();
        assert_eq!(t.columns, columns, "{name}");
        assert_eq!(t.rows, 8, "{name}");
        for side in Side::BOTH {
            assert_eq!(t.deployment_squares(side).count(), squares, "{name} {side}");
            assert_eq!(r.pieces_per_side(), squares, "{name}");
        }
        assert_eq!(t.all.count_ones() as usize, 2 * squares, "{name}");
    }
    let r = rules("gunjin-shogi");
    let t = r.topology();
    assert_eq!(t.name(node(&r, "d1+e1")), "d1+e1");
    assert_eq!(t.name(node(&r, "D8+E8")), "d8+e8");
    assert!(t.node("e1").is_none(), "e1 is part of the HQ, not a node");
    assert!(t.node("d1").is_none(), "d1 alone is not a node name");
    assert!(t.node("i1").is_none());
    let small = rules("gunjin-shogi+23-pieces");
    assert_eq!(small.topology().name(node(&small, "c1+d1")), "c1+d1");
    assert_eq!(small.topology().name(node(&small, "c8+d8")), "c8+d8");
    assert!(small.topology().node("g1").is_none());
}

/// Every wall crossing of each board, as the spec lists the gates.
#[test]
fn every_gate_type_links_exactly_its_squares() {
    for (name, links) in [
        (
            "gunjin-shogi",
            "a4-a5 a4-c5 c4-a5 c4-c5 f4-f5 f4-h5 h4-f5 h4-h5",
        ),
        ("gunjin-shogi+y-gates", "b4-a5 b4-c5 f4-g5 h4-g5"),
        ("gunjin-shogi+i-gates", "b4-b5 g4-g5"),
        ("gunjin-shogi+23-pieces", "b4-b5 e4-e5"),
    ] {
        let r = rules(name);
        let t = r.topology();
        let crossing: BTreeSet<String> = t
            .links
            .iter()
            .filter(|(a, b)| t.owner_of_half(*a) != t.owner_of_half(*b))
            .map(|&(a, b)| format!("{}-{}", t.name(a), t.name(b)))
            .collect();
        assert_eq!(crossing, set(links), "{name}");
        // A one-step piece on each front-rank square crosses exactly where a gate allows.
        for from in Nodes(t.front_row[0] | t.front_row[1]) {
            let side = t.owner_of_half(from);
            let p = position(&r, side, &[(t.name(from), side, "CPT")]);
            let over: BTreeSet<String> = Nodes(p.destinations(from))
                .filter(|&to| t.owner_of_half(to) != side)
                .map(|to| {
                    let (a, b) = if side == S { (from, to) } else { (to, from) };
                    format!("{}-{}", t.name(a), t.name(b))
                })
                .collect();
            let expected: BTreeSet<String> = crossing
                .iter()
                .filter(|l| l.split('-').any(|sq| sq == t.name(from)))
                .cloned()
                .collect();
            assert_eq!(over, expected, "{name} from {}", t.name(from));
        }
        let gates = names(&r, t.gates[0] | t.gates[1]);
        let ends: BTreeSet<String> = crossing
            .iter()
            .flat_map(|l| l.split('-').map(String::from).collect::<Vec<_>>())
            .collect();
        assert_eq!(gates, ends, "{name}: gate squares are the crossing ends");
    }
}

// ---------------------------------------------------------------------------------------------
// Moves
// ---------------------------------------------------------------------------------------------

#[test]
fn one_step_pieces_move_one_square_orthogonally() {
    let r = rules("gunjin-shogi");
    for code in [
        "GEN", "LTG", "MJG", "COL", "LTC", "MAJ", "CPT", "1LT", "2LT", "SPY",
    ] {
        let p = position(&r, S, &[("c3", S, code)]);
        assert_eq!(dests(&p, "c3"), set("b3 d3 c2 c4"), "{code} open");
        // Crowded: own pieces block, enemy pieces are attacked.
        let p = position(
            &r,
            S,
            &[
                ("c3", S, code),
                ("b3", S, "MIN"),
                ("d3", N, "CPT"),
                ("c2", S, "FLG"),
            ],
        );
        assert_eq!(dests(&p, "c3"), set("d3 c4"), "{code} crowded");
        // At the wall away from a gate: no crossing.
        let p = position(&r, S, &[("b4", S, code)]);
        assert_eq!(dests(&p, "b4"), set("a4 c4 b3"), "{code} at the wall");
        // On a gate square: over the X.
        let p = position(&r, S, &[("a4", S, code)]);
        assert_eq!(dests(&p, "a4"), set("b4 a3 a5 c5"), "{code} on a gate");
        let p = position(&r, N, &[("c5", N, code)]);
        assert_eq!(dests(&p, "c5"), set("b5 d5 c6 a4 c4"), "{code} north gate");
    }
}

#[test]
fn the_plane_flies_along_its_file_over_pieces_and_the_wall() {
    let r = rules("gunjin-shogi");
    let p = position(&r, S, &[("b3", S, "PLA")]);
    assert_eq!(dests(&p, "b3"), set("b1 b2 b4 b5 b6 b7 b8 a3 c3"));
    let p = position(
        &r,
        S,
        &[
            ("b3", S, "PLA"),
            ("b4", S, "TNK"),
            ("b5", N, "MIN"),
            ("b7", S, "CPT"),
            ("b2", N, "GEN"),
            ("a3", S, "ENG"),
        ],
    );
    assert_eq!(
        dests(&p, "b3"),
        set("b1 b2 b5 b6 b8 c3"),
        "jumps own and enemy pieces; never lands on its own"
    );
    // On the HQ's files.
    let p = position(&r, S, &[("d5", S, "PLA")]);
    assert_eq!(dests(&p, "d5"), set("d1+e1 d2 d3 d4 d6 d7 d8+e8 c5 e5"));
    let p = position(&r, S, &[("d1+e1", S, "PLA")]);
    assert_eq!(
        dests(&p, "d1+e1"),
        set("d2 d3 d4 d5 d6 d7 e2 e3 e4 e5 e6 e7 d8+e8 c1 f1")
    );
}

#[test]
fn tanks_and_cavalry_move_up_to_two_without_jumping() {
    let r = rules("gunjin-shogi");
    for code in ["TNK", "CAV"] {
        let p = position(&r, S, &[("e2", S, code)]);
        assert_eq!(
            dests(&p, "e2"),
            set("d1+e1 e3 e4 c2 d2 f2 g2"),
            "{code} open"
        );
        // The wall: only over a gate, which counts as one step.
        let p = position(&r, S, &[("c3", S, code)]);
        assert_eq!(
            dests(&p, "c3"),
            set("c1 c2 c4 a5 c5 a3 b3 d3 e3"),
            "{code} through the X gate"
        );
        let p = position(&r, S, &[("b3", S, code)]);
        assert_eq!(dests(&p, "b3"), set("b1 b2 b4 a3 c3 d3"), "{code} wall");
        let p = position(&r, S, &[("a4", S, code)]);
        assert_eq!(dests(&p, "a4"), set("a2 a3 b4 c4 a5 a6 c5 c6"), "{code}");
        // Crowded: no jumping; an enemy stops the path and can be attacked.
        let p = position(
            &r,
            S,
            &[
                ("e2", S, code),
                ("e3", N, "CPT"),
                ("d2", S, "MIN"),
                ("g2", N, "SPY"),
            ],
        );
        assert_eq!(dests(&p, "e2"), set("d1+e1 e3 f2 g2"), "{code} crowded");
    }
}

#[test]
fn the_engineer_slides_like_a_rook_and_crosses_only_at_gates() {
    let r = rules("gunjin-shogi");
    let p = position(&r, S, &[("c3", S, "ENG")]);
    assert_eq!(
        dests(&p, "c3"),
        set("c1 c2 c4 a5 a6 a7 a8 c5 c6 c7 c8 a3 b3 d3 e3 f3 g3 h3")
    );
    let p = position(&r, S, &[("b2", S, "ENG")]);
    assert_eq!(
        dests(&p, "b2"),
        set("b1 b3 b4 a2 c2 d2 e2 f2 g2 h2"),
        "no gate on file b: stops at the wall"
    );
    let p = position(
        &r,
        S,
        &[
            ("c3", S, "ENG"),
            ("c5", N, "MIN"),
            ("a7", N, "FLG"),
            ("e3", S, "CPT"),
            ("b3", N, "TNK"),
        ],
    );
    assert_eq!(
        dests(&p, "c3"),
        set("c1 c2 c4 c5 a5 a6 a7 b3 d3"),
        "stops at the first piece on each path"
    );
    // Along the back rank the HQ is one square.
    let p = position(&r, S, &[("a1", S, "ENG")]);
    assert_eq!(
        dests(&p, "a1"),
        set("b1 c1 d1+e1 f1 g1 h1 a2 a3 a4 a5 a6 a7 a8 c5 c6 c7 c8")
    );
    let p = position(&r, S, &[("d1+e1", S, "ENG")]);
    assert_eq!(
        dests(&p, "d1+e1"),
        set("a1 b1 c1 f1 g1 h1 d2 d3 d4 e2 e3 e4")
    );
}

#[test]
fn mines_and_the_flag_never_move() {
    let r = rules("gunjin-shogi");
    let p = position(
        &r,
        S,
        &[("c3", S, "MIN"), ("e3", S, "FLG"), ("h8", N, "CPT")],
    );
    assert_eq!(p.destinations(node(&r, "c3")), 0);
    assert_eq!(p.destinations(node(&r, "e3")), 0);
    assert!(!p.has_legal_move(S));
    assert_eq!(
        p.outcome_at_turn_start(),
        Some(Outcome::win(N, EndReason::NoLegalMoves))
    );
}

#[test]
fn the_hq_is_one_node_entered_and_left_from_either_cell() {
    let r = rules("gunjin-shogi");
    let p = position(&r, S, &[("d1+e1", S, "CPT")]);
    assert_eq!(dests(&p, "d1+e1"), set("c1 f1 d2 e2"));
    for from in ["c1", "f1", "d2", "e2"] {
        let p = position(&r, S, &[(from, S, "CPT")]);
        assert!(dests(&p, from).contains("d1+e1"), "{from} enters the HQ");
    }
    // It holds one piece: an own piece in it blocks, an enemy piece in it is attacked.
    let p = position(&r, S, &[("d2", S, "CPT"), ("d1+e1", S, "MIN")]);
    assert!(!dests(&p, "d2").contains("d1+e1"));
    let p = position(&r, N, &[("e2", N, "CPT"), ("d1+e1", S, "MIN")]);
    assert!(dests(&p, "e2").contains("d1+e1"));
    // The 23-piece board.
    let small = rules("gunjin-shogi+23-pieces");
    let p = position(&small, N, &[("c8+d8", N, "TNK")]);
    assert_eq!(dests(&p, "c8+d8"), set("a8 b8 e8 f8 c7 c6 d7 d6"));
}

#[test]
fn every_gate_type_carries_sliders_on_along_the_landing_file() {
    let y = rules("gunjin-shogi+y-gates");
    let p = position(&y, S, &[("b2", S, "ENG")]);
    assert_eq!(
        dests(&p, "b2"),
        set("b1 b3 b4 a5 a6 a7 a8 c5 c6 c7 c8 a2 c2 d2 e2 f2 g2 h2")
    );
    let p = position(&y, N, &[("g7", N, "TNK")]);
    assert_eq!(dests(&p, "g7"), set("g8 g6 g5 e7 f7 h7"));
    let p = position(&y, N, &[("g6", N, "TNK")]);
    assert_eq!(dests(&p, "g6"), set("g8 g7 g5 f4 h4 e6 f6 h6"));
    let p = position(&y, S, &[("a4", S, "CPT")]);
    assert_eq!(
        dests(&p, "a4"),
        set("a3 b4"),
        "a4 is no gate on the Y board"
    );
    let i = rules("gunjin-shogi+i-gates");
    let p = position(&i, S, &[("g3", S, "ENG")]);
    assert_eq!(
        dests(&p, "g3"),
        set("g1 g2 g4 g5 g6 g7 g8 a3 b3 c3 d3 e3 f3 h3")
    );
    let small = rules("gunjin-shogi+23-pieces");
    let p = position(&small, S, &[("e3", S, "TNK")]);
    assert_eq!(dests(&p, "e3"), set("e1 e2 e4 e5 c3 d3 f3"));
}

// ---------------------------------------------------------------------------------------------
// Combat
// ---------------------------------------------------------------------------------------------

const ORDER: [&str; 15] = [
    "GEN", "LTG", "MJG", "COL", "LTC", "MAJ", "CPT", "1LT", "2LT", "PLA", "TNK", "CAV", "ENG",
    "SPY", "MIN",
];

/// The spec's strength table, attacker by row, defender by column (`ORDER`): W the row piece
/// wins, L it loses, B both are removed.
const TABLE: [&str; 15] = [
    "BWWWWWWWWWWWWLB", // GEN
    "LBWWWWWWWWWWWWB", // LTG
    "LLBWWWWWWWWWWWB", // MJG
    "LLLBWWWWWLLWWWB", // COL
    "LLLLBWWWWLLWWWB", // LTC
    "LLLLLBWWWLLWWWB", // MAJ
    "LLLLLLBWWLLWWWB", // CPT
    "LLLLLLLBWLLWWWB", // 1LT
    "LLLLLLLLBLLWWWB", // 2LT
    "LLLWWWWWWBWWWWW", // PLA
    "LLLWWWWWWLBWLWB", // TNK
    "LLLLLLLLLLLBWWB", // CAV
    "LLLLLLLLLLWLBWW", // ENG
    "WLLLLLLLLLLLLBB", // SPY
    "BBBBBBBBBLBBLBB", // MIN
];

fn expected(row: usize, col: usize) -> Fight {
    match TABLE[row].as_bytes()[col] {
        b'W' => Fight::Wins,
        b'L' => Fight::Loses,
        _ => Fight::Both,
    }
}

#[test]
fn the_strength_table_is_symmetric() {
    for (a, attacker) in ORDER.iter().enumerate() {
        for (d, defender) in ORDER.iter().enumerate() {
            assert_eq!(
                expected(a, d),
                expected(d, a).reversed(),
                "{attacker} vs {defender}"
            );
        }
    }
}

/// Plays `attacker` (on c4) into `defender` (on c5) for `side` attacking, and returns what
/// happened as a `Fight` for the attacker.
fn play_fight(r: &Rules, side: Side, attacker: &str, defender: &str) -> Fight {
    let (from, to) = if side == S {
        ("c4", "c5")
    } else {
        ("c5", "c4")
    };
    let mut p = position(
        r,
        side,
        &[
            (from, side, attacker),
            (to, side.other(), defender),
            ("h1", S, "CPT"),
            ("h8", N, "CPT"),
        ],
    );
    let report = p
        .play(Move {
            from: node(r, from),
            to: node(r, to),
        })
        .expect("legal attack");
    let c = report.combat.expect("a fight");
    assert!(!c.flag_captured);
    let at_to = p.piece_at(node(r, to)).map(|p| p.side);
    match (c.attacker_survives, c.defender_survives) {
        (true, false) => {
            assert_eq!(at_to, Some(side));
            Fight::Wins
        }
        (false, true) => {
            assert_eq!(at_to, Some(side.other()));
            Fight::Loses
        }
        (false, false) => {
            assert_eq!(at_to, None);
            Fight::Both
        }
        (true, true) => panic!("both survive"),
    }
}

#[test]
fn every_cell_of_the_strength_table_both_directions() {
    let r = rules("gunjin-shogi");
    for (a, attacker) in ORDER.iter().enumerate() {
        for (d, defender) in ORDER.iter().enumerate() {
            let want = expected(a, d);
            assert_eq!(
                fight(
                    &r,
                    r.parse_kind(attacker).unwrap(),
                    r.parse_kind(defender).unwrap()
                ),
                want,
                "{attacker} -> {defender}"
            );
            if *attacker == "MIN" {
                continue; // a mine never attacks
            }
            for side in Side::BOTH {
                assert_eq!(
                    play_fight(&r, side, attacker, defender),
                    want,
                    "{side} {attacker} attacks {defender}"
                );
            }
        }
    }
}

#[test]
fn the_options_change_their_cells_only() {
    let base = rules("gunjin-shogi");
    for (name, changed) in [
        (
            "gunjin-shogi+tank-beats-engineer",
            vec![("TNK", "ENG", Fight::Wins), ("ENG", "TNK", Fight::Loses)],
        ),
        (
            "gunjin-shogi+mine-survives",
            ORDER
                .iter()
                .filter(|c| !["PLA", "ENG", "MIN"].contains(c))
                .map(|c| (*c, "MIN", Fight::Loses))
                .collect(),
        ),
    ] {
        let r = rules(name);
        for attacker in ORDER {
            for defender in ORDER {
                let (a, d) = (
                    r.parse_kind(attacker).unwrap(),
                    r.parse_kind(defender).unwrap(),
                );
                let want = changed
                    .iter()
                    .find(|(x, y, _)| *x == attacker && *y == defender)
                    .map(|(_, _, f)| *f)
                    .or_else(|| {
                        changed
                            .iter()
                            .find(|(x, y, _)| *y == attacker && *x == defender)
                            .map(|(_, _, f)| f.reversed())
                    })
                    .unwrap_or_else(|| fight(&base, a, d));
                assert_eq!(fight(&r, a, d), want, "{name}: {attacker} vs {defender}");
                if attacker != "MIN" {
                    assert_eq!(play_fight(&r, S, attacker, defender), want, "{name}");
                }
            }
        }
    }
}

/// The flag fights as the own piece directly behind it, which is not touched.
#[test]
fn the_flag_fights_as_the_own_piece_behind_it() {
    let r = rules("gunjin-shogi");
    for behind in ORDER {
        for attacker in ORDER.iter().filter(|c| **c != "MIN") {
            let (a, b) = (
                r.parse_kind(attacker).unwrap(),
                r.parse_kind(behind).unwrap(),
            );
            let want = fight(&r, a, b);
            for (flag_at, behind_at, attack_from) in [
                ("c3", "c2", "c4"),
                ("d2", "d1+e1", "d3"),
                ("e2", "d1+e1", "f2"),
            ] {
                let mut p = position(
                    &r,
                    N,
                    &[
                        (flag_at, S, "FLG"),
                        (behind_at, S, behind),
                        (attack_from, N, attacker),
                        ("h1", S, "CPT"),
                        ("h8", N, "CPT"),
                    ],
                );
                let report = p
                    .play(Move {
                        from: node(&r, attack_from),
                        to: node(&r, flag_at),
                    })
                    .expect("legal");
                let c = report.combat.expect("fight");
                let got = match (c.attacker_survives, c.defender_survives) {
                    (true, false) => Fight::Wins,
                    (false, true) => Fight::Loses,
                    _ => Fight::Both,
                };
                assert_eq!(
                    got, want,
                    "{attacker} -> flag on {flag_at} with {behind} behind"
                );
                assert_eq!(
                    p.piece_at(node(&r, behind_at))
                        .map(|p| rules_code(&r, p.kind)),
                    Some(behind.to_string()),
                    "the piece behind is not touched"
                );
            }
        }
    }
}

fn rules_code(r: &Rules, kind: PieceKind) -> String {
    r.code(kind).to_string()
}

#[test]
fn a_flag_with_nothing_own_behind_or_on_the_back_rank_loses() {
    let r = rules("gunjin-shogi");
    for (flag_at, behind, attack_from) in [
        ("c3", None, "c4"),               // nothing behind
        ("c3", Some(("c2", N)), "c4"),    // an enemy piece behind
        ("c1", None, "c2"),               // back rank
        ("d1+e1", Some(("d2", S)), "c1"), // in the HQ (back rank), own piece in front
        ("b1", Some(("b2", S)), "a1"),    // back rank with an own piece in front
    ] {
        let mut pieces = vec![
            (flag_at, S, "FLG"),
            (attack_from, N, "2LT"),
            ("h1", S, "CPT"),
            ("h8", N, "CPT"),
        ];
        if let Some((at, side)) = behind {
            pieces.push((at, side, "GEN"));
        }
        let mut p = position(&r, N, &pieces);
        let c = p
            .play(Move {
                from: node(&r, attack_from),
                to: node(&r, flag_at),
            })
            .expect("legal")
            .combat
            .expect("fight");
        assert!(
            c.attacker_survives && !c.defender_survives,
            "flag on {flag_at} loses"
        );
    }
    // North's flag looks towards rank 8.
    let mut p = position(
        &r,
        S,
        &[
            ("c6", N, "FLG"),
            ("c7", N, "GEN"),
            ("c5", S, "LTG"),
            ("h1", S, "CPT"),
        ],
    );
    let c = p
        .play(Move {
            from: node(&r, "c5"),
            to: node(&r, "c6"),
        })
        .unwrap()
        .combat
        .unwrap();
    assert!(!c.attacker_survives && c.defender_survives);
}

// ---------------------------------------------------------------------------------------------
// End of the game
// ---------------------------------------------------------------------------------------------

#[test]
fn general_and_field_officers_win_by_entering_the_enemy_hq() {
    let r = rules("gunjin-shogi");
    for code in ORDER.iter().filter(|c| **c != "MIN") {
        let winner = ["GEN", "LTG", "MJG", "COL", "LTC", "MAJ"].contains(code);
        // Entering it empty.
        let mut p = position(
            &r,
            S,
            &[("d7", S, code), ("a8", N, "CPT"), ("a1", S, "CPT")],
        );
        let report = p
            .play(Move {
                from: node(&r, "d7"),
                to: node(&r, "d8+e8"),
            })
            .unwrap();
        assert_eq!(
            report.outcome,
            winner.then_some(Outcome::win(S, EndReason::HqEntered)),
            "{code} enters the empty HQ"
        );
        // Winning a fight there.
        let mut p = position(
            &r,
            N,
            &[
                ("e2", N, code),
                ("d1+e1", S, "SPY"),
                ("a8", N, "CPT"),
                ("a1", S, "CPT"),
            ],
        );
        let report = p
            .play(Move {
                from: node(&r, "e2"),
                to: node(&r, "d1+e1"),
            })
            .unwrap();
        let survived = report.combat.unwrap().attacker_survives;
        assert_eq!(
            report.outcome,
            (winner && survived).then_some(Outcome::win(N, EndReason::HqEntered)),
            "{code} attacks into the HQ"
        );
    }
    // Losing the fight there does not win; entering the own HQ does not win.
    let mut p = position(
        &r,
        N,
        &[
            ("e2", N, "COL"),
            ("d1+e1", S, "GEN"),
            ("a8", N, "CPT"),
            ("a1", S, "CPT"),
        ],
    );
    let report = p
        .play(Move {
            from: node(&r, "e2"),
            to: node(&r, "d1+e1"),
        })
        .unwrap();
    assert_eq!(report.outcome, None);
    let mut p = position(&r, S, &[("d2", S, "GEN"), ("a8", N, "CPT")]);
    let report = p
        .play(Move {
            from: node(&r, "d2"),
            to: node(&r, "d1+e1"),
        })
        .unwrap();
    assert_eq!(report.outcome, None);
    // A piece that starts in the enemy HQ has not entered it; it wins by entering again.
    let p = position(&r, S, &[("d8+e8", S, "GEN"), ("a8", N, "CPT")]);
    assert_eq!(p.outcome_at_turn_start(), None);
}

#[test]
fn a_side_without_a_legal_move_loses_and_both_without_movers_is_a_draw() {
    let r = rules("gunjin-shogi");
    // North's last movable piece is captured: north has no legal move.
    let mut p = position(
        &r,
        S,
        &[
            ("c4", S, "GEN"),
            ("c5", N, "CPT"),
            ("h8", N, "MIN"),
            ("g8", N, "FLG"),
        ],
    );
    let report = p
        .play(Move {
            from: node(&r, "c4"),
            to: node(&r, "c5"),
        })
        .unwrap();
    assert_eq!(
        report.outcome,
        Some(Outcome::win(S, EndReason::NoLegalMoves))
    );
    // Blocked, not captured: the pieces cannot move.
    let p = position(
        &r,
        N,
        &[
            ("a8", N, "CPT"),
            ("b8", N, "MIN"),
            ("a7", N, "MIN"),
            ("h1", S, "CPT"),
        ],
    );
    assert_eq!(
        p.outcome_at_turn_start(),
        Some(Outcome::win(S, EndReason::NoLegalMoves))
    );
    // Both sides lose their last movable pieces in one fight: a draw.
    let mut p = position(
        &r,
        S,
        &[
            ("c4", S, "CPT"),
            ("c5", N, "CPT"),
            ("h8", N, "MIN"),
            ("h1", S, "FLG"),
        ],
    );
    let report = p
        .play(Move {
            from: node(&r, "c4"),
            to: node(&r, "c5"),
        })
        .unwrap();
    assert_eq!(report.outcome, Some(Outcome::draw(EndReason::NoLegalMoves)));
}

#[test]
fn the_platform_no_combat_draw_holds() {
    let r = rules("gunjin-shogi+no-combat-3");
    let mut p = position(&r, S, &[("a1", S, "CPT"), ("h8", N, "CPT")]);
    let mut outcome = None;
    for (from, to) in [("a1", "a2"), ("h8", "h7"), ("a2", "a1")] {
        outcome = p
            .play(Move {
                from: node(&r, from),
                to: node(&r, to),
            })
            .unwrap()
            .outcome;
    }
    assert_eq!(outcome, Some(Outcome::draw(EndReason::NoCombatLimit)));
}

// ---------------------------------------------------------------------------------------------
// Deployment
// ---------------------------------------------------------------------------------------------

#[test]
fn deployment_refuses_the_flag_and_mines_on_own_gate_squares_listing_every_problem() {
    for name in [
        "gunjin-shogi",
        "gunjin-shogi+y-gates",
        "gunjin-shogi+i-gates",
        "gunjin-shogi+23-pieces",
    ] {
        let r = rules(name);
        let t = r.topology();
        for side in Side::BOTH {
            let gates: Vec<Node> = Nodes(t.gates[side.index()]).collect();
            let others: Vec<Node> = Nodes(t.half[side.index()] & !t.gates[side.index()]).collect();
            // Flag and mines first on the gate squares, the rest after.
            let mut specials = vec![FLAG];
            specials.extend(std::iter::repeat_n(
                MINE,
                r.kinds().iter().find(|k| k.0 == MINE).unwrap().2 as usize,
            ));
            let mut rest: Vec<PieceKind> = r
                .kinds()
                .iter()
                .filter(|(k, _, _)| *k != FLAG && *k != MINE)
                .flat_map(|&(k, _, n)| std::iter::repeat_n(k, n as usize))
                .collect();
            let mut squares: Vec<Node> = gates.clone();
            squares.extend(&others);
            let mut kinds = specials.clone();
            kinds.append(&mut rest);
            let placements: Vec<(Node, PieceKind)> =
                squares.iter().copied().zip(kinds.iter().copied()).collect();
            let d = Deployment::new(side, placements);
            let errors = d.validate(&r).expect_err("gate squares refused").0;
            let on_gate: Vec<&DeploymentProblem> = errors
                .iter()
                .filter(|p| matches!(p, DeploymentProblem::OnGate { .. }))
                .collect();
            assert_eq!(
                on_gate.len(),
                gates.len().min(specials.len()),
                "{name} {side}: {errors:?}"
            );
            assert_eq!(
                errors.len(),
                on_gate.len(),
                "{name} {side}: only gate problems"
            );
            assert!(
                errors[0].to_string().contains("gate square"),
                "{}",
                errors[0]
            );
            // The same pieces with the flag and mines moved off the gates is valid.
            let mut squares: Vec<Node> = others.clone();
            squares.extend(&gates);
            let placements: Vec<(Node, PieceKind)> =
                squares.iter().copied().zip(kinds.iter().copied()).collect();
            assert_eq!(
                Deployment::new(side, placements).validate(&r),
                Ok(()),
                "{name}"
            );
        }
    }
    // Every other problem is listed as well.
    let r = rules("gunjin-shogi");
    let n = |s: &str| node(&r, s);
    let d = Deployment::new(
        S,
        vec![
            (n("a4"), FLAG),
            (n("c4"), MINE),
            (n("a5"), GENERAL),
            (n("b1"), GENERAL),
            (n("b1"), PLANE),
            (Node(4), SPY), // e1: part of the HQ, not a node
        ],
    );
    let errors = d.validate(&r).expect_err("refused").0;
    let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    let all = text.join("\n");
    for needle in [
        "the FLG on a4 stands on a gate square",
        "the MIN on c4 stands on a gate square",
        "a5 is not in south's half",
        "b1 holds more than one piece",
        "node 4 is not on the board",
        "expected 2 of piece MJG, found 0",
        "squares left empty",
    ] {
        assert!(all.contains(needle), "missing {needle:?} in\n{all}");
    }
}

// ---------------------------------------------------------------------------------------------
// The rest of the interface: notation, playouts, games, stored rule sets
// ---------------------------------------------------------------------------------------------

#[test]
fn notation_round_trips_gunjin_positions() {
    use hidden_front_rules::notation::{from_notation, to_notation};
    for name in ["gunjin-shogi", "gunjin-shogi+23-pieces+mine-survives"] {
        let r = rules(name);
        let mut rng = hidden_front_rules::GameRng::from_seed(3);
        let start = hidden_front_rules::random_start(r, N, &mut rng);
        let text = to_notation(&start);
        assert!(text.starts_with(&format!("{name} n 0 ")), "{text}");
        let back = from_notation(&text).expect("reads back");
        assert_eq!(cells(&back), cells(&start), "{text}");
    }
    // The HQ's second cell holds nothing of its own.
    let bad = "gunjin-shogi s 0 ......../......../......../......../......../......../......../....GEN...";
    assert!(from_notation(bad).is_err());
}

fn cells(p: &Position) -> Vec<(Node, Side, PieceKind)> {
    p.pieces().map(|(n, q)| (n, q.side, q.kind)).collect()
}

#[test]
fn random_playouts_end_on_every_board() {
    let mut rng = hidden_front_rules::GameRng::from_seed(99);
    let mut moves = hidden_front_rules::MoveList::default();
    for name in [
        "gunjin-shogi",
        "gunjin-shogi+y-gates",
        "gunjin-shogi+i-gates",
        "gunjin-shogi+23-pieces",
    ] {
        let r = rules(name);
        for _ in 0..20 {
            let mut p = hidden_front_rules::random_start(r, S, &mut rng);
            assert_eq!(p.pieces().count(), 2 * r.pieces_per_side());
            let result = hidden_front_rules::random_playout(&mut p, &mut rng, &mut moves, 20_000);
            assert!(result.outcome.is_some(), "{name}: {result:?}");
        }
    }
}

#[test]
fn a_whole_game_through_game_handle_ends_and_reveals_everything() {
    use hidden_front_rules::{Command, Event, Game, GameRng, Phase};
    let r = rules("gunjin-shogi");
    let mut rng = GameRng::from_seed(8);
    let (mut game, _) = Game::create(r, S, &mut rng);
    for side in Side::BOTH {
        game.handle(&Command::Confirm { side }, &mut rng).unwrap();
    }
    assert_eq!(game.phase(), Phase::Play);
    // Random moves until the end; then the end event reveals every piece and names a reason.
    let mut pick = GameRng::from_seed(1);
    while game.phase() == Phase::Play {
        let moves = game.position().legal_moves();
        let mv = moves.nth(pick.below(moves.len() as u32) as usize).unwrap();
        let side = game.to_move();
        let events = game.handle(&Command::Move { side, mv }, &mut rng).unwrap();
        if let Some(Event::Ended { outcome, pieces }) = events.last() {
            assert_eq!(pieces.len(), game.position().pieces().count());
            assert_eq!(Some(*outcome), game.outcome());
        }
    }
    assert!(game.outcome().is_some());
}

#[test]
fn rule_sets_stored_before_gunjin_still_read() {
    // A `Created` event's rules as stored before the Gunjin fields existed.
    let old = r#"{"family":"junqi","hq_pieces_may_move":false,"bombs_on_front_row":false,
        "mine_survives_non_engineer":false,"bomb_spares_flag":false,
        "flag_revealed_when_commander_dies":false,"no_combat_draw_plies":100,
        "timeouts_to_forfeit":3,"draw_offer_cooldown_plies":10}"#;
    let stored: Rules = serde_json::from_str(old).expect("old rules read");
    assert_eq!(stored, Rules::default());
    let gunjin = rules_of_json(&rules_json("gunjin-shogi+y-gates+mine-survives"));
    assert_eq!(gunjin, rules("gunjin-shogi+y-gates+mine-survives"));
}

fn rules_json(name: &str) -> String {
    serde_json::to_string(&rules(name)).unwrap()
}

fn rules_of_json(json: &str) -> Rules {
    serde_json::from_str(json).unwrap()
}
