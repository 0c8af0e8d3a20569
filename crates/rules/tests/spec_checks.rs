//! Spec checks: every worked check and rule of `docs/rules/junqi.md`, each asserting
//! something that breaks if the engine gets that rule wrong.
//!
//! Sections follow the spec: board and moves, combat, deployment, end of the game, the game state
//! machine (clocks, draw offers, replay), views, and the notation.

use hidden_front_rules::notation::{NotationError, from_notation, to_notation};
use hidden_front_rules::piece::junqi;
use hidden_front_rules::topology::{self, Topology};
use hidden_front_rules::{
    Combat, Command, Deployment, DeploymentErrors, DeploymentProblem, EndReason, Event, FlagReveal,
    Game, GameError, GameRng, IllegalMove, Move, Node, Nodes, Outcome, Phase, Piece, PieceId,
    PieceKind, PlyReport, Position, Reveal, Rules, Side, ViewCombat, ViewEvent, Viewer, project,
    reveal, view,
};
use std::collections::BTreeSet;

const S: Side = Side::South;
const N: Side = Side::North;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn board() -> &'static Topology {
    topology::junqi()
}

/// A node by name.
fn n(name: &str) -> Node {
    board()
        .node(name)
        .unwrap_or_else(|| panic!("no node {name}"))
}

/// A piece kind by its code (`9`..`1`, `B`, `M`, `F`).
fn k(code: &str) -> PieceKind {
    Rules::default()
        .parse_kind(code)
        .unwrap_or_else(|| panic!("no kind {code}"))
}

fn rules(name: &str) -> Rules {
    Rules::parse(name).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn mv(from: &str, to: &str) -> Move {
    Move {
        from: n(from),
        to: n(to),
    }
}

/// The names of the nodes of a bitboard.
fn names(bits: u64) -> BTreeSet<&'static str> {
    Nodes(bits).map(|x| board().name(x)).collect()
}

fn set<'a>(items: &[&'a str]) -> BTreeSet<&'a str> {
    items.iter().copied().collect()
}

/// Nodes named `<col><row>` for a column and an inclusive row range.
fn column(col: char, rows: std::ops::RangeInclusive<u8>) -> Vec<String> {
    rows.map(|r| format!("{col}{r}")).collect()
}

/// A position built piece by piece: `(node, side, code)`. Ids are the index in the list.
fn position(rules_name: &str, to_move: Side, pieces: &[(&str, Side, &str)]) -> Position {
    let mut p = Position::empty(rules(rules_name), to_move);
    for (i, &(at, side, code)) in pieces.iter().enumerate() {
        let piece = Piece {
            side,
            kind: k(code),
            id: PieceId(i as u8),
        };
        assert!(p.put(n(at), piece), "could not put {code} on {at}");
    }
    p
}

fn dests(p: &Position, at: &str) -> BTreeSet<&'static str> {
    names(p.destinations(n(at)))
}

/// Plays a move that must be legal.
fn play(p: &mut Position, from: &str, to: &str) -> PlyReport {
    p.play(mv(from, to))
        .unwrap_or_else(|e| panic!("{from}-{to} refused in {p:?}: {e}"))
}

/// The move generator, `destinations` and `check` agree on every (from, to) pair of the side to
/// move, so a destination set asserted below is also what `play` accepts.
fn assert_generator_agrees(p: &Position) {
    let list = p.legal_moves();
    for from in Nodes(board().all) {
        let mine = p.piece_at(from).is_some_and(|pc| pc.side == p.to_move());
        for to in Nodes(board().all) {
            let m = Move { from, to };
            let listed = list.contains(m);
            assert_eq!(
                listed,
                p.check(m).is_ok(),
                "check vs list for {m:?} in {p:?}"
            );
            if mine {
                assert_eq!(
                    listed,
                    p.destinations(from) & to.bit() != 0,
                    "{m:?} in {p:?}"
                );
            }
        }
    }
}

/// The kind on a node, if any.
fn kind_at(p: &Position, at: &str) -> Option<(Side, PieceKind)> {
    p.piece_at(n(at)).map(|pc| (pc.side, pc.kind))
}

// ---------------------------------------------------------------------------------------------
// Board and moves
// ---------------------------------------------------------------------------------------------

mod board_and_moves {
    use super::*;

    #[test]
    fn board_shape_matches_the_spec() {
        let t = board();
        assert_eq!(t.node_count, 60, "5 x 12 nodes, no station squares");
        assert_eq!(t.links.len(), 133);
        assert_eq!(t.rail.count_ones(), 32);
        let rail_links: u32 = (0..60).map(|i| t.rail_neighbors[i].count_ones()).sum();
        assert_eq!(rail_links / 2, 35);
        assert_eq!(
            names(t.camps),
            set(&["B3", "D3", "C4", "B5", "D5", "B8", "D8", "C9", "B10", "D10"])
        );
        assert_eq!(names(t.hq[S.index()]), set(&["B1", "D1"]));
        assert_eq!(names(t.hq[N.index()]), set(&["B12", "D12"]));
        assert_eq!(t.camps & t.rail, 0, "no camp on a railway");
        assert_eq!((t.hq[0] | t.hq[1]) & t.rail, 0, "no HQ on a railway");
        for corner in [
            "A1", "E1", "A12", "E12", "B1", "C1", "D1", "B12", "C12", "D12",
        ] {
            assert_eq!(t.rail & n(corner).bit(), 0, "{corner} is a road node");
        }
        // The rail lines of the spec, and nothing else.
        let mut rail_nodes: BTreeSet<String> = BTreeSet::new();
        for row in [2, 6, 7, 11] {
            for col in ['A', 'B', 'C', 'D', 'E'] {
                rail_nodes.insert(format!("{col}{row}"));
            }
        }
        rail_nodes.extend(column('A', 2..=11));
        rail_nodes.extend(column('E', 2..=11));
        let got: BTreeSet<String> = names(t.rail).into_iter().map(String::from).collect();
        assert_eq!(got, rail_nodes);
    }

    #[test]
    fn front_line_is_crossed_only_at_the_three_stations() {
        let t = board();
        assert!(!t.linked(n("B6"), n("B7")), "B6-B7 is a mountain");
        assert!(!t.linked(n("D6"), n("D7")), "D6-D7 is a mountain");
        for (a, b) in [("A6", "A7"), ("C6", "C7"), ("E6", "E7")] {
            assert!(t.linked(n(a), n(b)), "{a}-{b} crossing");
            assert_ne!(
                t.rail_neighbors[n(a).index()] & n(b).bit(),
                0,
                "{a}-{b} is a rail link (C6-C7 by Decision)"
            );
        }
        // Every link between row 6 and row 7 is one of the three crossings.
        let crossings: Vec<_> = t
            .links
            .iter()
            .filter(|(a, b)| {
                let h = |x: &Node| t.owner_of_half(*x);
                h(a) != h(b)
            })
            .map(|(a, b)| (t.name(*a), t.name(*b)))
            .collect();
        assert_eq!(crossings, vec![("A6", "A7"), ("C6", "C7"), ("E6", "E7")]);
        // Pieces on B6/D6 cannot go straight north, nor north pieces on B7/D7 south.
        let p = position("hidden-front", S, &[("B6", S, "5"), ("D6", S, "9")]);
        assert!(!dests(&p, "B6").contains("B7"));
        assert!(!dests(&p, "D6").contains("D7"));
        let p = position("hidden-front", N, &[("D7", N, "5"), ("B7", N, "9")]);
        assert!(!dests(&p, "D7").contains("D6"));
        assert!(!dests(&p, "B7").contains("B6"));
        // An engineer gets from B6 to B7 only around, through a station: block A6 and C6 and
        // it cannot.
        let p = position("hidden-front", S, &[("B6", S, "1")]);
        assert!(dests(&p, "B6").contains("B7"), "around via C6-C7 or A6-A7");
        let p = position(
            "hidden-front",
            S,
            &[("B6", S, "1"), ("A6", S, "3"), ("C6", S, "3")],
        );
        assert!(!dests(&p, "B6").contains("B7"));
        assert_eq!(dests(&p, "B6"), set(&["B5"]));
    }

    #[test]
    fn camps_link_to_their_four_diagonal_neighbours() {
        let t = board();
        let diagonals = [
            ("B3", ["A2", "C2", "A4", "C4"]),
            ("D3", ["C2", "E2", "C4", "E4"]),
            ("C4", ["B3", "D3", "B5", "D5"]),
            ("B5", ["A4", "C4", "A6", "C6"]),
            ("D5", ["C4", "E4", "C6", "E6"]),
            ("B8", ["A7", "C7", "A9", "C9"]),
            ("D8", ["C7", "E7", "C9", "E9"]),
            ("C9", ["B8", "D8", "B10", "D10"]),
            ("B10", ["A9", "C9", "A11", "C11"]),
            ("D10", ["C9", "E9", "C11", "E11"]),
        ];
        for (camp, ds) in diagonals {
            for d in ds {
                assert!(t.linked(n(camp), n(d)), "{camp}-{d}");
            }
        }
        for (a, b) in [
            ("A1", "B2"),
            ("B2", "C3"),
            ("C3", "D4"),
            ("A2", "B1"),
            ("C2", "D1"),
        ] {
            assert!(!t.linked(n(a), n(b)), "{a}-{b}: no diagonal without a camp");
        }
        // A piece in camp C4 steps to its 4 orthogonal and 4 diagonal neighbours, nothing more.
        let p = position("hidden-front", S, &[("C4", S, "9")]);
        assert_eq!(
            dests(&p, "C4"),
            set(&["C3", "C5", "B4", "D4", "B3", "D3", "B5", "D5"])
        );
        // The same for an engineer: a camp is not on a rail.
        let p = position("hidden-front", S, &[("C4", S, "1")]);
        assert_eq!(dests(&p, "C4").len(), 8);
    }

    #[test]
    fn engineer_alone_at_a2_has_exactly_33_destinations() {
        let p = position("hidden-front", S, &[("A2", S, "1")]);
        let d = p.destinations(n("A2"));
        assert_eq!(d.count_ones(), 33);
        // Every other rail node (31) plus the road steps A1 and B3.
        assert_eq!(
            d,
            (board().rail & !n("A2").bit()) | n("A1").bit() | n("B3").bit()
        );
        assert_eq!(p.legal_moves().len(), 33);
        assert_generator_agrees(&p);
    }

    #[test]
    fn non_engineer_at_a2_slides_to_a11_and_no_further() {
        for code in ["2", "5", "9", "B"] {
            let p = position("hidden-front", S, &[("A2", S, code)]);
            let d = dests(&p, "A2");
            assert!(d.contains("A11"), "{code} slides to A11");
            assert!(
                !d.contains("A12"),
                "A11-A12 is a road: the slide stops at A11"
            );
            let mut expected: BTreeSet<String> = column('A', 3..=11).into_iter().collect();
            expected.extend(["B2", "C2", "D2", "E2", "A1", "B3"].map(String::from));
            let got: BTreeSet<String> = d.into_iter().map(String::from).collect();
            assert_eq!(
                got, expected,
                "{code} at A2: straight slides plus road steps"
            );
            assert_generator_agrees(&p);
        }
    }

    #[test]
    fn engineer_at_b6_turns_at_c6_into_c7_a_non_engineer_cannot() {
        let p = position("hidden-front", S, &[("B6", S, "1")]);
        let d = dests(&p, "B6");
        assert!(d.contains("C7"));
        assert!(d.contains("E11"), "and on through the whole connected rail");
        let p = position("hidden-front", S, &[("B6", S, "8")]);
        assert_eq!(dests(&p, "B6"), set(&["A6", "C6", "D6", "E6", "B5"]));
        let mut q = p;
        assert!(matches!(
            q.play(mv("B6", "C7")),
            Err(IllegalMove::Unreachable(..))
        ));
        assert_eq!(q, p, "a refused move changes nothing");
    }

    #[test]
    fn a_piece_starting_on_a_road_moves_one_step_even_onto_a_rail() {
        for code in ["1", "7"] {
            let p = position("hidden-front", S, &[("A1", S, code)]);
            assert_eq!(dests(&p, "A1"), set(&["A2", "B1"]), "{code} at A1");
            let p = position("hidden-front", S, &[("C3", S, code)]);
            assert_eq!(
                dests(&p, "C3"),
                set(&["C2", "C4", "B3", "D3"]),
                "{code} at C3"
            );
            let p = position("hidden-front", N, &[("C12", N, code)]);
            assert_eq!(
                dests(&p, "C12"),
                set(&["C11", "B12", "D12"]),
                "{code} at C12"
            );
        }
    }

    #[test]
    fn slides_stop_at_the_first_occupied_node() {
        // Enemy first on the line: attack it, nothing beyond.
        let p = position(
            "hidden-front",
            S,
            &[("A2", S, "5"), ("A6", N, "3"), ("D2", N, "4")],
        );
        let d = dests(&p, "A2");
        for x in ["A3", "A4", "A5", "A6", "B2", "C2", "D2"] {
            assert!(d.contains(x), "{x}");
        }
        for x in ["A7", "A8", "A11", "E2"] {
            assert!(!d.contains(x), "{x} is behind a piece");
        }
        assert_generator_agrees(&p);
        // Own piece first on the line: stop before it.
        let p = position("hidden-front", S, &[("A2", S, "5"), ("A6", S, "3")]);
        let d = dests(&p, "A2");
        assert!(d.contains("A5") && !d.contains("A6") && !d.contains("A7"));
        let mut q = p;
        assert_eq!(
            q.play(mv("A2", "A8")),
            Err(IllegalMove::Unreachable("A2".into(), "A8".into()))
        );
        assert_eq!(
            q.play(mv("A2", "A6")),
            Err(IllegalMove::OwnPiece("A6".into()))
        );
        // Attacking at the end of a slide works.
        let mut p = position(
            "hidden-front",
            S,
            &[("A2", S, "5"), ("A6", N, "3"), ("E12", N, "2")],
        );
        let r = play(&mut p, "A2", "A6");
        assert!(
            r.combat
                .is_some_and(|c| c.attacker_survives && !c.defender_survives)
        );
        assert_eq!(kind_at(&p, "A6"), Some((S, k("5"))));
    }

    #[test]
    fn engineers_follow_paths_with_several_turns_through_empty_nodes_only() {
        // Own blockers at B2, E6 and A7: the only way from A2 to E11 is
        // A2..A6 -> B6, C6 -> C7 -> D7, E7 -> E8..E11 (four turns).
        let pieces = [
            ("A2", S, "1"),
            ("B2", S, "3"),
            ("E6", S, "3"),
            ("A7", S, "3"),
        ];
        let p = position("hidden-front", S, &pieces);
        let d = dests(&p, "A2");
        for x in [
            "A6", "B6", "C6", "D6", "C7", "D7", "E7", "E8", "E11", "A11", "A8",
        ] {
            assert!(d.contains(x), "engineer reaches {x}");
        }
        for x in ["B2", "E6", "A7", "C2", "E2", "E5"] {
            assert!(!d.contains(x), "{x} is own or behind own pieces");
        }
        assert_generator_agrees(&p);
        let mut q = p;
        play(&mut q, "A2", "E11");
        assert_eq!(kind_at(&q, "E11"), Some((S, k("1"))));
        // Block C7 as well: no rail path is left, E11 is out of reach.
        let mut more = pieces.to_vec();
        more.push(("C7", S, "3"));
        let p = position("hidden-front", S, &more);
        let d = dests(&p, "A2");
        assert!(!d.contains("E11") && !d.contains("D7") && d.contains("D6"));
        // An enemy on the path is the first occupied node: it can be attacked, not passed.
        let p = position("hidden-front", S, &[("A2", S, "1"), ("B6", N, "4")]);
        let d = dests(&p, "A2");
        assert!(d.contains("B6"), "attack the first piece on a path");
        assert!(
            d.contains("C6"),
            "reached around the other way (A7, row 7, C7)"
        );
        let p = position(
            "hidden-front",
            S,
            &[("A2", S, "1"), ("A6", N, "4"), ("B2", N, "4")],
        );
        let d = dests(&p, "A2");
        assert_eq!(d, set(&["A1", "B3", "A3", "A4", "A5", "A6", "B2"]));
    }

    #[test]
    fn engineers_cannot_turn_off_the_rail_onto_a_road() {
        // Off the rail, an engineer reaches only its own one-step road neighbours.
        for (at, road_steps) in [
            ("A2", &["A1", "B3"][..]),
            ("C6", &["C5", "B5", "D5"][..]),
            ("C2", &["C1", "C3", "B3", "D3"][..]),
            ("A11", &["A12", "B10"][..]),
        ] {
            let p = position("hidden-front", S, &[(at, S, "1")]);
            let off_rail = p.destinations(n(at)) & !board().rail;
            assert_eq!(names(off_rail), set(road_steps), "engineer at {at}");
        }
    }

    #[test]
    fn pieces_in_an_hq_are_frozen_unless_hq_mobile() {
        for hq in ["B1", "D1", "B12", "D12"] {
            let p = position("hidden-front", S, &[(hq, S, "9"), ("E2", S, "3")]);
            assert_eq!(p.destinations(n(hq)), 0, "{hq} freezes");
            assert!(p.legal_moves().by_origin().all(|(from, _)| from != n(hq)));
            let to = if hq.ends_with('1') { "C1" } else { "C12" };
            let mut q = p;
            assert_eq!(q.play(mv(hq, to)), Err(IllegalMove::FrozenInHq(hq.into())));
            let p = position("hidden-front+hq-mobile", S, &[(hq, S, "9")]);
            assert!(
                dests(&p, hq).contains(to),
                "hq-mobile lifts the freeze at {hq}"
            );
        }
        // A side whose only movable piece is frozen has no legal move.
        let p = position("hidden-front", S, &[("B1", S, "9"), ("D1", S, "F")]);
        assert!(!p.has_legal_move(S));
        assert!(p.legal_moves().is_empty());
    }

    #[test]
    fn mines_and_flags_never_move() {
        for rules_name in ["hidden-front", "hidden-front+hq-mobile"] {
            let p = position(
                rules_name,
                S,
                &[("A2", S, "M"), ("B1", S, "F"), ("C2", S, "M")],
            );
            for at in ["A2", "B1", "C2"] {
                assert_eq!(p.destinations(n(at)), 0, "{at} under {rules_name}");
            }
            assert!(!p.has_legal_move(S));
            let mut q = p;
            assert_eq!(
                q.play(mv("A2", "A3")),
                Err(IllegalMove::Immobile("A2".into()))
            );
            assert_eq!(
                q.play(mv("B1", "C1")),
                Err(IllegalMove::Immobile("B1".into()))
            );
        }
    }

    #[test]
    fn no_move_ends_on_an_own_piece() {
        let p = position(
            "hidden-front",
            S,
            &[
                ("A2", S, "5"),
                ("A3", S, "3"),
                ("B2", S, "M"),
                ("A1", S, "4"),
            ],
        );
        assert_eq!(dests(&p, "A2"), set(&["B3"]));
        let mut q = p;
        assert_eq!(
            q.play(mv("A2", "A3")),
            Err(IllegalMove::OwnPiece("A3".into()))
        );
        assert_generator_agrees(&p);
    }

    #[test]
    fn an_enemy_in_a_camp_cannot_be_attacked_an_empty_camp_can_be_entered() {
        // Steps into the camp from all sides, and an engineer whose rail paths pass by it.
        let p = position(
            "hidden-front",
            S,
            &[
                ("C4", N, "2"),
                ("C3", S, "9"),
                ("B3", S, "9"),
                ("B4", S, "1"),
                ("C5", S, "8"),
            ],
        );
        for at in ["C3", "B3", "B4", "C5"] {
            assert!(!dests(&p, at).contains("C4"), "{at} cannot attack into C4");
        }
        let mut q = p;
        assert_eq!(
            q.play(mv("C3", "C4")),
            Err(IllegalMove::CampProtected("C4".into()))
        );
        assert_generator_agrees(&p);
        // From a rail node by the diagonal link, and along the rail the engineer passes.
        let p = position(
            "hidden-front",
            S,
            &[
                ("A2", S, "1"),
                ("B3", N, "2"),
                ("D3", N, "2"),
                ("B8", N, "3"),
            ],
        );
        let d = dests(&p, "A2");
        assert!(!d.contains("B3") && !d.contains("D3") && !d.contains("B8"));
        // The same camp, empty: enter it.
        let mut p = position("hidden-front", S, &[("A2", S, "5"), ("E12", N, "2")]);
        assert!(dests(&p, "A2").contains("B3"));
        let r = play(&mut p, "A2", "B3");
        assert_eq!(r.combat, None);
        assert_eq!(kind_at(&p, "B3"), Some((S, k("5"))));
        // A piece in a camp attacks out of it normally.
        let mut p = position(
            "hidden-front",
            S,
            &[("B3", S, "5"), ("A2", N, "4"), ("E12", N, "2")],
        );
        let r = play(&mut p, "B3", "A2");
        assert!(r.combat.is_some_and(|c| c.attacker_survives));
    }

    #[test]
    fn entering_an_hq_freezes_the_piece() {
        // Enemy HQ without the flag: entered, then frozen.
        let mut p = position(
            "hidden-front",
            S,
            &[
                ("B11", S, "5"),
                ("D12", N, "F"),
                ("E7", N, "3"),
                ("A1", S, "F"),
            ],
        );
        let r = play(&mut p, "B11", "B12");
        assert_eq!((r.combat, r.outcome), (None, None));
        assert_eq!(p.destinations(n("B12")), 0, "frozen in the enemy HQ");
        // North moves; south's only movable piece is frozen: north wins at south's turn start.
        let r = play(&mut p, "E7", "E6");
        assert_eq!(r.outcome, Some(Outcome::win(N, EndReason::NoLegalMoves)));
        // Own HQ: the same.
        let mut p = position("hidden-front", S, &[("B2", S, "5"), ("E12", N, "2")]);
        play(&mut p, "B2", "B1");
        assert_eq!(p.destinations(n("B1")), 0);
    }
}

// ---------------------------------------------------------------------------------------------
// Combat
// ---------------------------------------------------------------------------------------------

mod combat {
    use super::*;

    /// `attacker` (south, on A5) attacks `defender` (north, on A6). Both sides keep a spare
    /// movable piece so that no fight ends the game by "no legal move".
    fn fight(rules_name: &str, attacker: &str, defender: &str) -> (Position, PlyReport) {
        let mut p = position(
            rules_name,
            S,
            &[
                ("A5", S, attacker),
                ("A6", N, defender),
                ("E1", S, "2"),
                ("E12", N, "2"),
            ],
        );
        p.set_plies_without_combat(57);
        let r = play(&mut p, "A5", "A6");
        (p, r)
    }

    fn outcome_of(r: &PlyReport) -> (bool, bool, bool) {
        let c = r.combat.expect("a fight");
        (c.attacker_survives, c.defender_survives, c.flag_captured)
    }

    const RANKS: [&str; 9] = ["1", "2", "3", "4", "5", "6", "7", "8", "9"];

    #[test]
    fn a_bomb_attacking_anything_removes_both() {
        for d in RANKS.iter().chain(&["B", "M"]) {
            let (p, r) = fight("hidden-front", "B", d);
            assert_eq!(outcome_of(&r), (false, false, false), "B x {d}");
            assert_eq!((kind_at(&p, "A5"), kind_at(&p, "A6")), (None, None));
            assert_eq!(r.outcome, None);
        }
        // Bomb first in the order: even against a mine under sturdy-mines.
        let (p, r) = fight("hidden-front+sturdy-mines", "B", "M");
        assert_eq!(outcome_of(&r), (false, false, false));
        assert_eq!(kind_at(&p, "A6"), None);
    }

    #[test]
    fn anything_attacking_a_bomb_is_removed_with_it() {
        for a in RANKS {
            let (p, r) = fight("hidden-front", a, "B");
            assert_eq!(outcome_of(&r), (false, false, false), "{a} x B");
            assert_eq!((kind_at(&p, "A5"), kind_at(&p, "A6")), (None, None));
        }
    }

    #[test]
    fn a_bomb_attacking_the_flag_is_removed_with_it_and_wins() {
        let (p, r) = fight("hidden-front", "B", "F");
        assert_eq!(outcome_of(&r), (false, false, true));
        assert_eq!((kind_at(&p, "A5"), kind_at(&p, "A6")), (None, None));
        assert_eq!(r.outcome, Some(Outcome::win(S, EndReason::FlagCaptured)));
    }

    #[test]
    fn bomb_spares_flag_option_spends_the_bomb_and_keeps_the_flag() {
        let (p, r) = fight("hidden-front+bomb-spares-flag", "B", "F");
        assert_eq!(outcome_of(&r), (false, true, false));
        assert_eq!(kind_at(&p, "A5"), None);
        assert_eq!(kind_at(&p, "A6"), Some((N, k("F"))));
        assert_eq!(r.outcome, None, "no capture, the game goes on");
        // Bombs against other pieces are unchanged by the option.
        let (_, r) = fight("hidden-front+bomb-spares-flag", "B", "9");
        assert_eq!(outcome_of(&r), (false, false, false));
    }

    #[test]
    fn the_flag_is_captured_by_any_rank() {
        for a in RANKS {
            let (p, r) = fight("hidden-front", a, "F");
            assert_eq!(outcome_of(&r), (true, false, true), "{a} x F");
            assert_eq!(kind_at(&p, "A6"), Some((S, k(a))), "the capturer moves in");
            assert_eq!(r.outcome, Some(Outcome::win(S, EndReason::FlagCaptured)));
        }
        // Against the flag in its HQ, by a north piece.
        let mut p = position(
            "hidden-front",
            N,
            &[("B2", N, "1"), ("B1", S, "F"), ("E1", S, "2")],
        );
        let r = play(&mut p, "B2", "B1");
        assert_eq!(r.outcome, Some(Outcome::win(N, EndReason::FlagCaptured)));
    }

    #[test]
    fn an_engineer_clears_a_mine_and_moves_in() {
        for rules_name in ["hidden-front", "hidden-front+sturdy-mines"] {
            let (p, r) = fight(rules_name, "1", "M");
            assert_eq!(outcome_of(&r), (true, false, false), "{rules_name}");
            assert_eq!(kind_at(&p, "A6"), Some((S, k("1"))));
            assert_eq!(kind_at(&p, "A5"), None);
        }
    }

    #[test]
    fn any_other_attacker_is_removed_with_the_mine() {
        for a in &RANKS[1..] {
            let (p, r) = fight("hidden-front", a, "M");
            assert_eq!(outcome_of(&r), (false, false, false), "{a} x M");
            assert_eq!((kind_at(&p, "A5"), kind_at(&p, "A6")), (None, None));
        }
    }

    #[test]
    fn sturdy_mines_remove_the_attacker_and_stay() {
        for a in &RANKS[1..] {
            let (p, r) = fight("hidden-front+sturdy-mines", a, "M");
            assert_eq!(outcome_of(&r), (false, true, false), "{a} x M");
            assert_eq!(kind_at(&p, "A5"), None);
            assert_eq!(kind_at(&p, "A6"), Some((N, k("M"))));
        }
    }

    #[test]
    fn the_higher_rank_survives_either_direction_and_equal_ranks_both_go() {
        for (ai, a) in RANKS.iter().enumerate() {
            for (di, d) in RANKS.iter().enumerate() {
                // South attacks north ...
                let (p, r) = fight("hidden-front", a, d);
                let expected = (ai > di, di > ai, false);
                assert_eq!(outcome_of(&r), expected, "{a} x {d}");
                let at_target = match ai.cmp(&di) {
                    std::cmp::Ordering::Greater => Some((S, k(a))),
                    std::cmp::Ordering::Less => Some((N, k(d))),
                    std::cmp::Ordering::Equal => None,
                };
                assert_eq!(kind_at(&p, "A6"), at_target, "{a} x {d}");
                assert_eq!(kind_at(&p, "A5"), None, "the attacker left its node");
                // ... and north attacks south.
                let mut p = position(
                    "hidden-front",
                    N,
                    &[("A7", N, a), ("A6", S, d), ("E1", S, "2"), ("E12", N, "2")],
                );
                let r = play(&mut p, "A7", "A6");
                assert_eq!(outcome_of(&r), expected, "north {a} x south {d}");
            }
        }
    }

    #[test]
    fn only_the_attacker_moves_and_ids_follow_their_pieces() {
        // The defender wins: it stays where it was, with its own id.
        let (p, r) = fight("hidden-front", "3", "7");
        let def = p.piece_at(n("A6")).unwrap();
        assert_eq!((def.side, def.kind, def.id), (N, k("7"), PieceId(1)));
        assert_eq!(p.piece_at(n("A5")), None);
        assert_eq!(r.combat.unwrap().defender.id, PieceId(1));
        assert_eq!(r.mover.id, PieceId(0));
        // The attacker wins: it stands on the target, with its id.
        let (p, _) = fight("hidden-front", "7", "3");
        let att = p.piece_at(n("A6")).unwrap();
        assert_eq!((att.side, att.kind, att.id), (S, k("7"), PieceId(0)));
        // A long slide attack: the attacker's origin empties, nothing else moves.
        let mut p = position(
            "hidden-front",
            S,
            &[
                ("A2", S, "9"),
                ("A10", N, "3"),
                ("E1", S, "2"),
                ("E12", N, "2"),
            ],
        );
        let before = p;
        play(&mut p, "A2", "A10");
        assert_eq!(kind_at(&p, "A2"), None);
        assert_eq!(kind_at(&p, "A10"), Some((S, k("9"))));
        assert_eq!(p.piece_at(n("E1")), before.piece_at(n("E1")));
        assert_eq!(p.piece_at(n("E12")), before.piece_at(n("E12")));
    }

    #[test]
    fn the_no_combat_counter_resets_after_combat_and_counts_otherwise() {
        for (a, d) in [
            ("9", "3"),
            ("3", "9"),
            ("4", "4"),
            ("B", "5"),
            ("1", "M"),
            ("2", "M"),
        ] {
            let (p, _) = fight("hidden-front", a, d);
            assert_eq!(p.plies_without_combat(), 0, "{a} x {d}");
        }
        let (p, _) = fight("hidden-front+sturdy-mines", "5", "M");
        assert_eq!(
            p.plies_without_combat(),
            0,
            "a fight even if the mine stays"
        );
        let (p, _) = fight("hidden-front+bomb-spares-flag", "B", "F");
        assert_eq!(p.plies_without_combat(), 0, "a spent bomb is a fight");
        let mut p = position("hidden-front", S, &[("A5", S, "4"), ("E12", N, "2")]);
        p.set_plies_without_combat(57);
        play(&mut p, "A5", "A4");
        assert_eq!(p.plies_without_combat(), 58);
    }

    #[test]
    fn judge_table_matches_play() {
        let p = Position::empty(Rules::default(), S);
        use junqi::{BOMB, ENGINEER, FLAG, MINE};
        assert_eq!(p.judge(BOMB, FLAG), (false, false, true));
        assert_eq!(p.judge(k("9"), BOMB), (false, false, false));
        assert_eq!(p.judge(ENGINEER, MINE), (true, false, false));
        assert_eq!(p.judge(k("9"), MINE), (false, false, false));
        assert_eq!(p.judge(ENGINEER, FLAG), (true, false, true));
    }
}

// ---------------------------------------------------------------------------------------------
// Deployment
// ---------------------------------------------------------------------------------------------

mod deployment {
    use super::DeploymentProblem as P;
    use super::*;

    /// A legal south deployment, row 6 first (front) down to row 1; `_` marks a camp.
    const SOUTH_ROWS: [&str; 6] = [
        "9 8 7 1 2", // row 6
        "5 _ 7 _ 6", // row 5
        "4 5 _ 6 4", // row 4
        "2 _ 3 _ 3", // row 3
        "1 B 3 B 1", // row 2
        "M F M 2 M", // row 1
    ];

    /// The legal base deployment for a side (north's rows mirror south's: row r -> 13 - r).
    pub(super) fn base(side: Side) -> Deployment {
        let mut placements = Vec::new();
        for (i, row_text) in SOUTH_ROWS.iter().enumerate() {
            let row = 6 - i as u8;
            let row = if side == S { row } else { 13 - row };
            for (c, code) in row_text.split(' ').enumerate() {
                if code != "_" {
                    let name = format!("{}{row}", (b'A' + c as u8) as char);
                    placements.push((n(&name), k(code)));
                }
            }
        }
        Deployment::new(side, placements)
    }

    /// The deployment with the kinds on `a` and `b` exchanged (no validation).
    pub(super) fn exchange(d: &Deployment, a: &str, b: &str) -> Deployment {
        let (ka, kb) = (d.kind_at(n(a)).unwrap(), d.kind_at(n(b)).unwrap());
        let placements = d
            .placements
            .iter()
            .map(|&(node, kind)| {
                if node == n(a) {
                    (node, kb)
                } else if node == n(b) {
                    (node, ka)
                } else {
                    (node, kind)
                }
            })
            .collect();
        Deployment::new(d.side, placements)
    }

    /// The piece on `from` put on `to` instead (no validation; `to` may be taken).
    fn relocate(d: &Deployment, from: &str, to: &str) -> Deployment {
        let placements = d
            .placements
            .iter()
            .map(|&(node, kind)| (if node == n(from) { n(to) } else { node }, kind))
            .collect();
        Deployment::new(d.side, placements)
    }

    fn problems(d: &Deployment, rules_name: &str) -> Vec<DeploymentProblem> {
        match d.validate(&rules(rules_name)) {
            Ok(()) => Vec::new(),
            Err(DeploymentErrors(p)) => p,
        }
    }

    fn sorted(p: Vec<DeploymentProblem>) -> Vec<String> {
        let mut v: Vec<String> = p.iter().map(|x| format!("{x:?}")).collect();
        v.sort();
        v
    }

    #[test]
    fn the_base_deployments_are_legal_for_both_sides() {
        for side in Side::BOTH {
            let d = base(side);
            assert_eq!(d.placements.len(), 25);
            assert_eq!(d.validate(&Rules::default()), Ok(()), "{side}");
        }
        assert_eq!(base(N).kind_at(n("B12")), Some(k("F")));
        assert_eq!(base(N).kind_at(n("A7")), Some(k("9")));
    }

    #[test]
    fn the_flag_must_stand_in_an_own_hq() {
        let d = exchange(&base(S), "B1", "C3");
        assert_eq!(
            problems(&d, "hidden-front"),
            vec![P::FlagNotInHq("C3".into())]
        );
        // The other HQ is fine.
        let d = exchange(&base(S), "B1", "D1");
        assert_eq!(problems(&d, "hidden-front"), vec![]);
    }

    #[test]
    fn mines_stand_on_the_back_two_rows_never_in_an_hq() {
        let d = exchange(&base(S), "A1", "A3");
        assert_eq!(
            problems(&d, "hidden-front"),
            vec![P::MineNotOnBackRows("A3".into())]
        );
        let d = exchange(&base(S), "C1", "D1");
        assert_eq!(problems(&d, "hidden-front"), vec![P::MineInHq("D1".into())]);
        // Row 2 is a back row.
        let d = exchange(&base(S), "A1", "C2");
        assert_eq!(problems(&d, "hidden-front"), vec![]);
    }

    #[test]
    fn bombs_never_on_the_own_front_row_unless_front_bombs() {
        let d = exchange(&base(S), "B2", "B6");
        assert_eq!(
            problems(&d, "hidden-front"),
            vec![P::BombOnFrontRow("B6".into())]
        );
        assert_eq!(problems(&d, "hidden-front+front-bombs"), vec![]);
        // Row 5 is fine.
        let d = exchange(&base(S), "B2", "A5");
        assert_eq!(problems(&d, "hidden-front"), vec![]);
    }

    #[test]
    fn camps_start_empty_and_pieces_stay_in_the_own_half() {
        let d = relocate(&base(S), "A3", "B3");
        assert_eq!(
            sorted(problems(&d, "hidden-front")),
            sorted(vec![
                P::InCamp("B3".into()),
                P::EmptySquares(vec!["A3".into()])
            ])
        );
        let d = relocate(&base(S), "A3", "A7");
        assert_eq!(
            sorted(problems(&d, "hidden-front")),
            sorted(vec![
                P::NotInOwnHalf("A7".into(), S),
                P::EmptySquares(vec!["A3".into()])
            ])
        );
    }

    #[test]
    fn duplicates_wrong_counts_and_empty_squares_are_named() {
        let d = relocate(&base(S), "A3", "C3");
        assert_eq!(
            sorted(problems(&d, "hidden-front")),
            sorted(vec![
                P::Duplicate("C3".into()),
                P::EmptySquares(vec!["A3".into()])
            ])
        );
        // A 9 turned into an 8: one 9 missing, one 8 too many.
        let mut placements = base(S).placements;
        for p in &mut placements {
            if p.0 == n("A6") {
                p.1 = k("8");
            }
        }
        let d = Deployment::new(S, placements);
        assert_eq!(
            sorted(problems(&d, "hidden-front")),
            sorted(vec![
                P::WrongCount {
                    code: "9",
                    expected: 1,
                    found: 0
                },
                P::WrongCount {
                    code: "8",
                    expected: 1,
                    found: 2
                },
            ])
        );
        // A missing piece: its square is empty and its count is short.
        let mut placements = base(S).placements;
        placements.retain(|p| p.0 != n("A3"));
        let d = Deployment::new(S, placements);
        assert_eq!(
            sorted(problems(&d, "hidden-front")),
            sorted(vec![
                P::WrongCount {
                    code: "2",
                    expected: 3,
                    found: 2
                },
                P::EmptySquares(vec!["A3".into()]),
            ])
        );
        // Nothing at all: every count and every square.
        let d = Deployment::new(S, vec![]);
        let all = problems(&d, "hidden-front");
        assert_eq!(all.len(), 13, "12 counts and the empty squares: {all:?}");
        assert!(
            all.contains(&P::EmptySquares(
                Nodes(board().half[0] & !board().camps)
                    .map(|x| board().name(x).to_string())
                    .collect()
            ))
        );
    }

    #[test]
    fn validation_lists_every_problem_not_just_the_first() {
        let d = exchange(
            &exchange(&exchange(&base(S), "B1", "C3"), "A1", "A3"),
            "B2",
            "B6",
        );
        let found = problems(&d, "hidden-front");
        assert_eq!(
            sorted(found),
            sorted(vec![
                P::FlagNotInHq("C3".into()),
                P::MineNotOnBackRows("A3".into()),
                P::BombOnFrontRow("B6".into()),
            ])
        );
        let message = d.validate(&Rules::default()).unwrap_err().to_string();
        for square in ["C3", "A3", "B6"] {
            assert!(message.contains(square), "{message}");
        }
    }

    #[test]
    fn north_rows_mirror_south_rows() {
        let d = exchange(&base(N), "B12", "C10");
        assert_eq!(
            problems(&d, "hidden-front"),
            vec![P::FlagNotInHq("C10".into())]
        );
        let d = exchange(&base(N), "A12", "A10");
        assert_eq!(
            problems(&d, "hidden-front"),
            vec![P::MineNotOnBackRows("A10".into())]
        );
        let d = exchange(&base(N), "C12", "D12");
        assert_eq!(
            problems(&d, "hidden-front"),
            vec![P::MineInHq("D12".into())]
        );
        let d = exchange(&base(N), "B11", "B7");
        assert_eq!(
            problems(&d, "hidden-front"),
            vec![P::BombOnFrontRow("B7".into())]
        );
        assert_eq!(problems(&d, "hidden-front+front-bombs"), vec![]);
        // A mine on north's row 11 is fine, on south's back rows it is not even in the half.
        let d = exchange(&base(N), "A12", "C11");
        assert_eq!(problems(&d, "hidden-front"), vec![]);
        let d = relocate(&base(N), "B9", "B8");
        assert!(problems(&d, "hidden-front").contains(&P::InCamp("B8".into())));
        // South's arrangement submitted as north's: every piece is outside north's half.
        let d = Deployment::new(N, base(S).placements);
        let found = problems(&d, "hidden-front");
        let outside = found
            .iter()
            .filter(|p| matches!(p, P::NotInOwnHalf(_, N)))
            .count();
        assert_eq!(outside, 25, "{found:?}");
    }

    #[test]
    fn swapped_refuses_an_illegal_swap_and_accepts_a_legal_one() {
        let rules = Rules::default();
        let d = base(S);
        let err = d.swapped(&rules, n("A1"), n("B6")).unwrap_err();
        assert_eq!(err.0, vec![P::MineNotOnBackRows("B6".into())]);
        let err = d.swapped(&rules, n("B1"), n("A6")).unwrap_err();
        assert_eq!(err.0, vec![P::FlagNotInHq("A6".into())]);
        let err = d.swapped(&rules, n("A3"), n("B3")).unwrap_err();
        assert!(err.0.contains(&P::InCamp("B3".into())), "{err}");
        let ok = d.swapped(&rules, n("A6"), n("B6")).unwrap();
        assert_eq!(ok.kind_at(n("A6")), Some(k("8")));
        assert_eq!(ok.kind_at(n("B6")), Some(k("9")));
        assert_eq!(ok.validate(&rules), Ok(()));
        let ok = d.swapped(&rules, n("B1"), n("D1")).unwrap();
        assert_eq!(ok.kind_at(n("D1")), Some(k("F")));
    }

    #[test]
    fn swapped_refuses_one_square_twice_and_squares_outside_the_own_half() {
        let rules = Rules::default();
        let d = base(S);
        let err = d.swapped(&rules, n("A6"), n("A6")).unwrap_err();
        assert_eq!(err.0, vec![P::SameSquare("A6".into())]);
        // Two empty enemy squares would have been a recorded no-op.
        let err = d.swapped(&rules, n("A7"), n("B8")).unwrap_err();
        assert_eq!(
            err.0,
            vec![
                P::NotInOwnHalf("A7".into(), S),
                P::NotInOwnHalf("B8".into(), S)
            ]
        );
        let err = d.swapped(&rules, n("A6"), n("A7")).unwrap_err();
        assert_eq!(err.0, vec![P::NotInOwnHalf("A7".into(), S)]);
        let err = d.swapped(&rules, n("A12"), n("A12")).unwrap_err();
        assert_eq!(
            err.0,
            vec![
                P::SameSquare("A12".into()),
                P::NotInOwnHalf("A12".into(), S)
            ]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// End of the game
// ---------------------------------------------------------------------------------------------

mod end_of_game {
    use super::*;

    #[test]
    fn flag_capture_ends_the_game_at_once() {
        let mut p = position(
            "hidden-front",
            S,
            &[
                ("B11", S, "3"),
                ("B12", N, "F"),
                ("E12", N, "9"),
                ("E1", S, "2"),
            ],
        );
        let r = play(&mut p, "B11", "B12");
        assert_eq!(r.outcome, Some(Outcome::win(S, EndReason::FlagCaptured)));
    }

    #[test]
    fn flag_capture_beats_no_legal_move() {
        // North is left with a mine only: it also cannot move, but the flag decides.
        let mut p = position(
            "hidden-front",
            S,
            &[("B11", S, "3"), ("B12", N, "F"), ("A12", N, "M")],
        );
        let r = play(&mut p, "B11", "B12");
        assert_eq!(r.outcome, Some(Outcome::win(S, EndReason::FlagCaptured)));
        // The capturer itself is now frozen in the HQ and south has nothing else; still a capture.
        // With a bomb, the capturing fight removes both and leaves both sides without a move.
        let mut p = position(
            "hidden-front",
            S,
            &[
                ("B11", S, "B"),
                ("B12", N, "F"),
                ("A12", N, "M"),
                ("B1", S, "F"),
            ],
        );
        let r = play(&mut p, "B11", "B12");
        assert_eq!(r.outcome, Some(Outcome::win(S, EndReason::FlagCaptured)));
        // And at the counter's limit as well.
        let mut p = position(
            "hidden-front",
            S,
            &[("B11", S, "3"), ("B12", N, "F"), ("A12", N, "M")],
        );
        p.set_plies_without_combat(99);
        let r = play(&mut p, "B11", "B12");
        assert_eq!(r.outcome, Some(Outcome::win(S, EndReason::FlagCaptured)));
    }

    /// North's 5 on B11 has one move (into the empty camp B10); south's 5 on A9 can take the camp.
    fn boxed_in(plies: u16) -> Position {
        let mut p = position(
            "hidden-front",
            S,
            &[
                ("A9", S, "5"),
                ("B11", N, "5"),
                ("A11", N, "M"),
                ("C11", N, "M"),
                ("B12", N, "F"),
                ("B1", S, "F"),
            ],
        );
        p.set_plies_without_combat(plies);
        p
    }

    #[test]
    fn no_legal_move_at_turn_start_loses() {
        let p = boxed_in(0);
        let mut north = p;
        north.set_to_move(N);
        assert_eq!(names(north.destinations(n("B11"))), set(&["B10"]));
        let mut p = p;
        let r = play(&mut p, "A9", "B10");
        assert_eq!(r.combat, None);
        assert_eq!(r.outcome, Some(Outcome::win(S, EndReason::NoLegalMoves)));
        assert!(!p.has_legal_move(N));
        assert_eq!(
            p.outcome_at_turn_start(),
            Some(Outcome::win(S, EndReason::NoLegalMoves))
        );
        // By combat: north's last movable piece is taken.
        let mut p = position(
            "hidden-front",
            S,
            &[
                ("A3", S, "9"),
                ("A4", N, "5"),
                ("B12", N, "F"),
                ("A12", N, "M"),
            ],
        );
        let r = play(&mut p, "A3", "A4");
        assert_eq!(r.outcome, Some(Outcome::win(S, EndReason::NoLegalMoves)));
        // The mover may also strand itself: a suicide attack leaves south without a move at its
        // own next turn start (north moves first, then south is stuck).
        let mut p = position(
            "hidden-front",
            S,
            &[
                ("A3", S, "2"),
                ("A4", N, "5"),
                ("B1", S, "F"),
                ("E12", N, "2"),
            ],
        );
        let r = play(&mut p, "A3", "A4");
        assert_eq!(r.outcome, None);
        let r = play(&mut p, "E12", "E11");
        assert_eq!(r.outcome, Some(Outcome::win(N, EndReason::NoLegalMoves)));
    }

    #[test]
    fn a_hundred_plies_without_combat_draw() {
        let mut p = boxed_in(98);
        play(&mut p, "A9", "A8");
        assert_eq!(p.plies_without_combat(), 99);
        let before = p;
        let r = play(&mut p, "B11", "B10");
        assert_eq!(r.outcome, Some(Outcome::draw(EndReason::NoCombatLimit)));
        assert_eq!(p.plies_without_combat(), 100);
        // A lost turn counts the same.
        let mut q = before;
        assert_eq!(q.pass(), Some(Outcome::draw(EndReason::NoCombatLimit)));
        // Not at 99.
        let mut p = boxed_in(98);
        assert_eq!(play(&mut p, "A9", "A8").outcome, None);
    }

    #[test]
    fn the_hundredth_ply_that_leaves_the_opponent_without_a_move_wins() {
        let mut p = boxed_in(99);
        let r = play(&mut p, "A9", "B10");
        assert_eq!(p.plies_without_combat(), 100);
        assert_eq!(r.outcome, Some(Outcome::win(S, EndReason::NoLegalMoves)));
    }

    #[test]
    fn no_combat_40_draws_at_40() {
        let make = |rules_name: &str, plies: u16| {
            let mut p = position(
                rules_name,
                S,
                &[
                    ("A5", S, "4"),
                    ("E12", N, "2"),
                    ("B1", S, "F"),
                    ("B12", N, "F"),
                ],
            );
            p.set_plies_without_combat(plies);
            p
        };
        let mut p = make("hidden-front+no-combat-40", 39);
        let r = play(&mut p, "A5", "A4");
        assert_eq!(r.outcome, Some(Outcome::draw(EndReason::NoCombatLimit)));
        let mut p = make("hidden-front+no-combat-40", 38);
        assert_eq!(play(&mut p, "A5", "A4").outcome, None);
        let mut p = make("hidden-front", 39);
        assert_eq!(
            play(&mut p, "A5", "A4").outcome,
            None,
            "the default waits for 100"
        );
        assert_eq!(EndReason::NoCombatLimit.name(), "no_combat_100");
    }

    #[test]
    fn a_pass_that_leaves_the_opponent_without_a_move_wins_for_the_passer() {
        // South to move loses its turn; north, now to move, has nothing that moves.
        let mut p = position(
            "hidden-front",
            S,
            &[
                ("A5", S, "4"),
                ("B12", N, "F"),
                ("A12", N, "M"),
                ("D12", N, "9"),
            ],
        );
        assert_eq!(p.pass(), Some(Outcome::win(S, EndReason::NoLegalMoves)));
        assert_eq!(p.to_move(), N);
        assert_eq!(p.plies_without_combat(), 1);
    }
}

// ---------------------------------------------------------------------------------------------
// The game state machine
// ---------------------------------------------------------------------------------------------

/// A game and its full event log, driven by commands that must succeed.
struct Driver {
    game: Game,
    log: Vec<Event>,
    rng: GameRng,
}

impl Driver {
    fn new(rules_name: &str, first: Side, seed: u64) -> Driver {
        let mut rng = GameRng::from_seed(seed);
        let (game, log) = Game::create(rules(rules_name), first, &mut rng);
        Driver { game, log, rng }
    }

    /// A game in play: both sides confirm their random drafts.
    fn started(rules_name: &str, first: Side, seed: u64) -> Driver {
        let mut d = Driver::new(rules_name, first, seed);
        d.ok(Command::Confirm { side: S });
        d.ok(Command::Confirm { side: N });
        assert_eq!(d.game.phase(), Phase::Play);
        d
    }

    fn ok(&mut self, command: Command) -> Vec<Event> {
        let events = self
            .game
            .handle(&command, &mut self.rng)
            .unwrap_or_else(|e| panic!("{command:?} refused: {e}"));
        self.log.extend(events.iter().cloned());
        events
    }

    /// A refused command: returns the error and checks that nothing changed.
    fn refused(&mut self, command: Command) -> GameError {
        let before = self.game.clone();
        let rng_before = self.rng.clone();
        let err = self
            .game
            .handle(&command, &mut self.rng)
            .expect_err("the command must be refused");
        assert_eq!(self.game, before, "{command:?} changed the game");
        self.rng = rng_before;
        err
    }

    /// A legal move of the side to move onto an empty node (no fight).
    fn quiet_move(&self) -> Move {
        let p = self.game.position();
        p.legal_moves()
            .iter()
            .find(|m| p.piece_at(m.to).is_none())
            .expect("a quiet move")
    }

    fn play_quiet(&mut self) -> Vec<Event> {
        let side = self.game.to_move();
        let mv = self.quiet_move();
        self.ok(Command::Move { side, mv })
    }

    fn check_replay(&self) {
        let replayed = Game::replay(&self.log).expect("the log replays");
        assert_eq!(replayed, self.game, "replay equals the live game");
    }
}

fn ended_outcome(events: &[Event]) -> Option<Outcome> {
    events.iter().find_map(|e| match e {
        Event::Ended { outcome, .. } => Some(*outcome),
        _ => None,
    })
}

mod game_machine {
    use super::*;

    #[test]
    fn deployment_then_play_then_ended() {
        let mut d = Driver::new("hidden-front", N, 1);
        assert_eq!(
            d.log[0],
            Event::Created {
                rules: Rules::default(),
                first_mover: N
            }
        );
        assert_eq!(d.game.phase(), Phase::Deployment);
        for side in Side::BOTH {
            let draft = d.game.deployment(side).expect("a random draft").clone();
            assert_eq!(draft.validate(&Rules::default()), Ok(()));
        }
        // Moves, timeouts and draw offers belong to play.
        let wrong = GameError::WrongPhase {
            needed: Phase::Play,
            actual: Phase::Deployment,
        };
        assert_eq!(
            d.refused(Command::Move {
                side: N,
                mv: mv("A7", "A6")
            }),
            wrong
        );
        assert_eq!(d.refused(Command::Timeout { side: N }), wrong);
        assert_eq!(d.refused(Command::OfferDraw { side: S }), wrong);
        // Confirm once, not twice.
        let events = d.ok(Command::Confirm { side: S });
        assert!(matches!(
            events[..],
            [Event::DeploymentConfirmed {
                side: S,
                by_deadline: false,
                ..
            }]
        ));
        assert_eq!(d.game.phase(), Phase::Deployment);
        assert_eq!(
            d.refused(Command::Confirm { side: S }),
            GameError::AlreadyConfirmed(S)
        );
        assert_eq!(
            d.refused(Command::Reshuffle { side: S }),
            GameError::AlreadyConfirmed(S)
        );
        assert_eq!(
            d.refused(Command::Swap {
                side: S,
                a: n("A6"),
                b: n("B6")
            }),
            GameError::AlreadyConfirmed(S)
        );
        // North's confirmation starts play, north to move (the first mover).
        let events = d.ok(Command::Confirm { side: N });
        assert_eq!(events.len(), 2);
        let Event::PlayStarted { pieces } = &events[1] else {
            panic!("{events:?}")
        };
        assert_eq!(pieces.len(), 50);
        let mut ids: Vec<u8> = pieces.iter().map(|(_, p)| p.id.0).collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..50).collect::<Vec<u8>>(), "ids are a permutation");
        assert_eq!(d.game.phase(), Phase::Play);
        assert_eq!(d.game.to_move(), N);
        // Out of turn.
        let south_move = {
            let mut p = *d.game.position();
            p.set_to_move(S);
            p.legal_moves().iter().next().unwrap()
        };
        assert_eq!(
            d.refused(Command::Move {
                side: S,
                mv: south_move
            }),
            GameError::NotYourTurn(N, S)
        );
        assert_eq!(
            d.refused(Command::Timeout { side: S }),
            GameError::NotYourTurn(N, S)
        );
        // An illegal move: refused, nothing changes.
        assert!(matches!(
            d.refused(Command::Move {
                side: N,
                mv: mv("B12", "B11")
            }),
            GameError::IllegalMove(_)
        ));
        assert_eq!(
            d.refused(Command::Confirm { side: N }),
            GameError::WrongPhase {
                needed: Phase::Deployment,
                actual: Phase::Play
            }
        );
        d.play_quiet();
        assert_eq!(d.game.to_move(), S);
        assert_eq!(d.game.plies(), 1);
        let events = d.ok(Command::Resign { side: N });
        assert_eq!(events[0], Event::Resigned { side: N });
        assert_eq!(
            ended_outcome(&events),
            Some(Outcome::win(S, EndReason::Resigned))
        );
        assert_eq!(d.game.phase(), Phase::Ended);
        let ended = GameError::WrongPhase {
            needed: Phase::Play,
            actual: Phase::Ended,
        };
        assert_eq!(d.refused(Command::Resign { side: S }), ended);
        assert_eq!(d.refused(Command::OfferDraw { side: S }), ended);
        let m = {
            let mut p = *d.game.position();
            p.set_to_move(S);
            p.legal_moves().iter().next().unwrap()
        };
        assert_eq!(d.refused(Command::Move { side: S, mv: m }), ended);
        d.check_replay();
    }

    #[test]
    fn drafts_change_by_swap_reshuffle_and_own_arrangement() {
        let mut d = Driver::new("hidden-front", S, 2);
        let own = deployment::base(S);
        d.ok(Command::SetDeployment {
            deployment: own.clone(),
        });
        assert_eq!(d.game.deployment(S), Some(&own));
        // An illegal arrangement is refused with every problem.
        let bad = deployment::exchange(&deployment::exchange(&own, "B1", "C3"), "B2", "B6");
        let err = d.refused(Command::SetDeployment { deployment: bad });
        let GameError::Deployment(DeploymentErrors(problems)) = &err else {
            panic!("{err:?}")
        };
        assert_eq!(problems.len(), 2);
        assert!(err.is_invalid_argument());
        // An illegal swap is refused, a legal one applied.
        assert!(matches!(
            d.refused(Command::Swap {
                side: S,
                a: n("A1"),
                b: n("A6")
            }),
            GameError::Deployment(_)
        ));
        d.ok(Command::Swap {
            side: S,
            a: n("A6"),
            b: n("B6"),
        });
        assert_eq!(d.game.deployment(S).unwrap().kind_at(n("B6")), Some(k("9")));
        d.ok(Command::Reshuffle { side: N });
        assert_eq!(
            d.game.deployment(N).unwrap().validate(&Rules::default()),
            Ok(())
        );
        d.ok(Command::Confirm { side: N });
        d.ok(Command::Confirm { side: S });
        // The confirmed arrangement is what stands on the board.
        let p = d.game.position();
        assert_eq!(kind_at(p, "B6"), Some((S, k("9"))));
        assert_eq!(kind_at(p, "B1"), Some((S, k("F"))));
        d.check_replay();
    }

    #[test]
    fn timeouts_count_as_plies_pass_the_turn_and_the_third_forfeits() {
        let mut d = Driver::started("hidden-front", S, 3);
        for (i, side) in [S, N, S, N].into_iter().enumerate() {
            assert_eq!(d.game.to_move(), side);
            let events = d.ok(Command::Timeout { side });
            assert_eq!(
                events,
                vec![Event::TimedOut {
                    side,
                    count: (i / 2 + 1) as u8
                }]
            );
            assert_eq!(d.game.position().plies_without_combat(), i as u16 + 1);
            assert_eq!(d.game.plies(), i as u32 + 1);
        }
        assert_eq!((d.game.timeouts(S), d.game.timeouts(N)), (2, 2));
        let events = d.ok(Command::Timeout { side: S });
        assert_eq!(events[0], Event::TimedOut { side: S, count: 3 });
        assert_eq!(
            ended_outcome(&events),
            Some(Outcome::win(N, EndReason::Timeouts))
        );
        assert_eq!(d.game.phase(), Phase::Ended);
        d.check_replay();
    }

    #[test]
    fn timeouts_reach_the_no_combat_limit() {
        let mut d = Driver::started("hidden-front+no-combat-4", N, 4);
        for side in [N, S, N] {
            assert_eq!(ended_outcome(&d.ok(Command::Timeout { side })), None);
        }
        let events = d.ok(Command::Timeout { side: S });
        assert_eq!(
            ended_outcome(&events),
            Some(Outcome::draw(EndReason::NoCombatLimit))
        );
        d.check_replay();
    }

    #[test]
    fn a_timeout_that_leaves_the_opponent_without_a_move_wins_for_the_player_who_timed_out() {
        // Random games until a side, by its own move, strands itself (its last movable piece dies
        // or freezes); then the opponent times out.
        let mut found = 0;
        for seed in 0..400 {
            let mut d = Driver::started("hidden-front", S, 1000 + seed);
            while d.game.phase() == Phase::Play && d.game.plies() < 600 {
                let side = d.game.to_move();
                if !d.game.position().has_legal_move(side.other()) {
                    let events = d.ok(Command::Timeout { side });
                    assert_eq!(
                        ended_outcome(&events),
                        Some(Outcome::win(side, EndReason::NoLegalMoves)),
                        "seed {seed}"
                    );
                    d.check_replay();
                    found += 1;
                    break;
                }
                let moves = d.game.position().legal_moves();
                // Prefer fights so that pieces run out quickly.
                let p = d.game.position();
                let fights: Vec<Move> = moves
                    .iter()
                    .filter(|m| p.piece_at(m.to).is_some())
                    .collect();
                let pick = if !fights.is_empty() && d.rng.below(4) != 0 {
                    fights[d.rng.below(fights.len() as u32) as usize]
                } else {
                    moves.nth(d.rng.below(moves.len() as u32) as usize).unwrap()
                };
                d.ok(Command::Move { side, mv: pick });
            }
            if found > 0 {
                break;
            }
        }
        assert!(found > 0, "no random game stranded a side");
    }

    #[test]
    fn resignation_ends_the_game_on_either_turn() {
        for resigner in Side::BOTH {
            let mut d = Driver::started("hidden-front", S, 5);
            let events = d.ok(Command::Resign { side: resigner });
            assert_eq!(
                events,
                vec![
                    Event::Resigned { side: resigner },
                    Event::Ended {
                        outcome: Outcome::win(resigner.other(), EndReason::Resigned),
                        pieces: d.game.position().pieces().collect(),
                    }
                ]
            );
            assert_eq!(
                d.game.outcome(),
                Some(Outcome::win(resigner.other(), EndReason::Resigned))
            );
            d.check_replay();
        }
    }

    #[test]
    fn a_player_away_too_long_loses_but_not_during_deployment() {
        let mut d = Driver::new("hidden-front", S, 14);
        assert_eq!(
            d.refused(Command::Disconnected { side: N }),
            GameError::WrongPhase {
                needed: Phase::Play,
                actual: Phase::Deployment
            }
        );
        d.ok(Command::Confirm { side: S });
        d.ok(Command::Confirm { side: N });
        let events = d.ok(Command::Disconnected { side: N });
        assert_eq!(
            ended_outcome(&events),
            Some(Outcome::win(S, EndReason::Disconnected))
        );
        d.check_replay();
    }

    #[test]
    fn an_operator_aborts_a_game_in_deployment_or_play_but_not_after_the_end() {
        // In deployment: the game ends at once, without a result.
        let mut d = Driver::new("hidden-front", S, 15);
        let events = d.ok(Command::Abort);
        assert_eq!(
            ended_outcome(&events),
            Some(Outcome::draw(EndReason::Aborted))
        );
        assert_eq!(d.game.phase(), Phase::Ended);
        d.check_replay();
        // In play: the same, whoever is to move.
        let mut d = Driver::started("hidden-front", S, 16);
        let events = d.ok(Command::Abort);
        assert_eq!(events.len(), 1);
        assert_eq!(
            ended_outcome(&events),
            Some(Outcome::draw(EndReason::Aborted))
        );
        d.check_replay();
        // An ended game is refused like any other command.
        assert_eq!(
            d.refused(Command::Abort),
            GameError::WrongPhase {
                needed: Phase::Play,
                actual: Phase::Ended
            }
        );
        assert_eq!(EndReason::Aborted.name(), "aborted");
    }

    #[test]
    fn draw_offers_can_be_made_on_either_turn_and_accepted() {
        // Offer on the opponent's turn.
        let mut d = Driver::started("hidden-front", S, 6);
        assert_eq!(
            d.ok(Command::OfferDraw { side: N }),
            vec![Event::DrawOffered { side: N }]
        );
        assert_eq!(d.game.draw_offer(), Some(N));
        let events = d.ok(Command::AnswerDraw {
            side: S,
            accept: true,
        });
        assert_eq!(
            ended_outcome(&events),
            Some(Outcome::draw(EndReason::AgreedDraw))
        );
        assert_eq!(d.game.phase(), Phase::Ended);
        d.check_replay();
        // Offer on the own turn.
        let mut d = Driver::started("hidden-front", S, 6);
        d.ok(Command::OfferDraw { side: S });
        d.ok(Command::AnswerDraw {
            side: N,
            accept: true,
        });
        assert_eq!(d.game.outcome(), Some(Outcome::draw(EndReason::AgreedDraw)));
        d.check_replay();
    }

    #[test]
    fn draw_offers_decline_and_refusals() {
        let mut d = Driver::started("hidden-front", S, 7);
        assert_eq!(
            d.refused(Command::AnswerDraw {
                side: S,
                accept: true
            }),
            GameError::NoDrawOffer(S)
        );
        d.ok(Command::OfferDraw { side: S });
        // Answering one's own offer is refused.
        for accept in [true, false] {
            assert_eq!(
                d.refused(Command::AnswerDraw { side: S, accept }),
                GameError::NoDrawOffer(S)
            );
        }
        // A second offer while one is pending, from either side.
        assert_eq!(
            d.refused(Command::OfferDraw { side: N }),
            GameError::DrawOfferPending(S)
        );
        assert_eq!(
            d.refused(Command::OfferDraw { side: S }),
            GameError::DrawOfferPending(S)
        );
        assert_eq!(
            d.ok(Command::AnswerDraw {
                side: N,
                accept: false
            }),
            vec![Event::DrawDeclined { side: N }]
        );
        assert_eq!(d.game.draw_offer(), None);
        assert_eq!(d.game.phase(), Phase::Play);
        d.check_replay();
    }

    #[test]
    fn an_offer_lapses_when_the_offered_player_finishes_a_turn() {
        // North offers on south's turn; south moves without answering: lapsed.
        let mut d = Driver::started("hidden-front", S, 8);
        d.ok(Command::OfferDraw { side: N });
        let events = d.play_quiet();
        assert!(matches!(events[0], Event::Moved { .. }));
        assert_eq!(events[1], Event::DrawLapsed { side: N });
        assert_eq!(d.game.draw_offer(), None);
        assert_eq!(
            d.refused(Command::AnswerDraw {
                side: S,
                accept: true
            }),
            GameError::NoDrawOffer(S)
        );
        // South may offer on north's turn, too.
        d.ok(Command::OfferDraw { side: S });
        d.ok(Command::AnswerDraw {
            side: N,
            accept: false,
        });
        // South offers on its own turn and moves: the offer stands for north ...
        let mut d = Driver::started("hidden-front", S, 8);
        d.ok(Command::OfferDraw { side: S });
        let events = d.play_quiet();
        assert_eq!(
            events.len(),
            1,
            "south finishing its own turn does not lapse its offer"
        );
        assert_eq!(d.game.draw_offer(), Some(S));
        // ... until north finishes its turn.
        let events = d.play_quiet();
        assert_eq!(events[1], Event::DrawLapsed { side: S });
        assert_eq!(d.game.draw_offer(), None);
        d.check_replay();
        // A timeout finishes the turn as well.
        let mut d = Driver::started("hidden-front", S, 8);
        d.ok(Command::OfferDraw { side: N });
        let events = d.ok(Command::Timeout { side: S });
        assert!(events.contains(&Event::DrawLapsed { side: N }));
        d.check_replay();
    }

    #[test]
    fn a_player_offers_again_only_ten_plies_after_the_last_offer() {
        let mut d = Driver::started("hidden-front", S, 9);
        d.ok(Command::OfferDraw { side: S });
        d.ok(Command::AnswerDraw {
            side: N,
            accept: false,
        });
        for _ in 0..9 {
            d.play_quiet();
        }
        assert_eq!(d.game.plies(), 9);
        assert_eq!(
            d.refused(Command::OfferDraw { side: S }),
            GameError::DrawCooldown { side: S, plies: 1 }
        );
        // The cooldown is per player: north may offer.
        d.ok(Command::OfferDraw { side: N });
        d.ok(Command::AnswerDraw {
            side: S,
            accept: false,
        });
        d.play_quiet();
        assert_eq!(d.game.plies(), 10);
        d.ok(Command::OfferDraw { side: S });
        assert_eq!(d.game.draw_offer(), Some(S));
        // North offered at ply 9: refused at ply 10.
        d.ok(Command::AnswerDraw {
            side: N,
            accept: false,
        });
        assert_eq!(
            d.refused(Command::OfferDraw { side: N }),
            GameError::DrawCooldown { side: N, plies: 9 }
        );
        d.check_replay();
    }

    #[test]
    fn the_deployment_deadline_starts_play_for_present_players() {
        let mut d = Driver::new("hidden-front", S, 10);
        let drafts = [
            d.game.deployment(S).unwrap().clone(),
            d.game.deployment(N).unwrap().clone(),
        ];
        let events = d.ok(Command::DeploymentDeadline {
            present: [true, true],
        });
        assert_eq!(events.len(), 3);
        for (i, side) in Side::BOTH.into_iter().enumerate() {
            assert_eq!(
                events[i],
                Event::DeploymentConfirmed {
                    side,
                    deployment: drafts[i].clone(),
                    by_deadline: true
                }
            );
        }
        assert!(matches!(events[2], Event::PlayStarted { .. }));
        assert_eq!(d.game.phase(), Phase::Play);
        assert_eq!(
            d.refused(Command::DeploymentDeadline {
                present: [true, true]
            }),
            GameError::WrongPhase {
                needed: Phase::Deployment,
                actual: Phase::Play
            }
        );
        d.check_replay();
        // One confirmed, the other present: only the other is confirmed by the deadline.
        let mut d = Driver::new("hidden-front", S, 11);
        d.ok(Command::Confirm { side: N });
        let events = d.ok(Command::DeploymentDeadline {
            present: [true, false],
        });
        assert!(matches!(
            events[0],
            Event::DeploymentConfirmed {
                side: S,
                by_deadline: true,
                ..
            }
        ));
        assert_eq!(
            d.game.phase(),
            Phase::Play,
            "a confirmed player may be away"
        );
        d.check_replay();
    }

    #[test]
    fn the_deployment_deadline_with_an_absent_unconfirmed_player_loses_the_seat() {
        for absent in Side::BOTH {
            let mut d = Driver::new("hidden-front", S, 12);
            d.ok(Command::Confirm {
                side: absent.other(),
            });
            let mut present = [true, true];
            present[absent.index()] = false;
            let events = d.ok(Command::DeploymentDeadline { present });
            assert_eq!(
                events,
                vec![
                    Event::SeatLost { side: absent },
                    Event::Ended {
                        outcome: Outcome::draw(EndReason::SeatLost),
                        pieces: vec![]
                    }
                ]
            );
            assert_eq!(d.game.phase(), Phase::Ended);
            assert_eq!(d.game.outcome().unwrap().winner, None);
            let mut lost = [false; 2];
            lost[absent.index()] = true;
            assert_eq!(
                d.game.seats_lost(),
                lost,
                "only the absent side lost its seat"
            );
            d.check_replay();
        }
    }

    #[test]
    fn replay_of_a_long_mixed_game_equals_the_live_game() {
        let mut d = Driver::new("hidden-front+flag-reveal", N, 13);
        d.ok(Command::Reshuffle { side: S });
        let draft = d.game.deployment(N).unwrap().clone();
        let (a, b) = draft
            .placements
            .iter()
            .flat_map(|&(a, _)| draft.placements.iter().map(move |&(b, _)| (a, b)))
            .find(|&(a, b)| {
                draft.kind_at(a) != draft.kind_at(b)
                    && draft.swapped(&Rules::default(), a, b).is_ok()
            })
            .expect("some legal swap");
        d.ok(Command::Swap { side: N, a, b });
        assert_eq!(d.game.deployment(N).unwrap().kind_at(a), draft.kind_at(b));
        d.ok(Command::DeploymentDeadline {
            present: [true, true],
        });
        let mut step = 0u32;
        while d.game.phase() == Phase::Play && step < 300 {
            let side = d.game.to_move();
            match step % 17 {
                5 if d.game.timeouts(side) < 2 => {
                    d.ok(Command::Timeout { side });
                }
                7 if d.game.draw_offer().is_none() && d.game.plies() >= 12 => {
                    d.ok(Command::OfferDraw { side: side.other() });
                }
                _ => {
                    let moves = d.game.position().legal_moves();
                    let pick = moves.nth(d.rng.below(moves.len() as u32) as usize).unwrap();
                    d.ok(Command::Move { side, mv: pick });
                }
            }
            // Replaying every prefix is the same game as it was then.
            if step.is_multiple_of(50) {
                d.check_replay();
            }
            step += 1;
        }
        d.check_replay();
        // A log that does not start with Created, or a move that is illegal, is refused.
        assert!(matches!(
            Game::replay(&d.log[1..]),
            Err(GameError::BadLog { index: 0, .. })
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------------------------

mod views {
    use super::*;

    /// The confirmed deployments of a log, south's first.
    fn confirmed_in(log: &[Event]) -> Vec<Deployment> {
        let mut out: Vec<Deployment> = log
            .iter()
            .filter_map(|e| match e {
                Event::DeploymentConfirmed { deployment, .. } => Some(deployment.clone()),
                _ => None,
            })
            .collect();
        out.sort_by_key(|d| d.side.index());
        out
    }

    #[test]
    fn the_end_reveals_both_deployments_and_every_captured_piece_to_everyone() {
        let mut d = Driver::started("hidden-front", S, 31);
        // Play until a fight has removed a piece, so that the final board lacks some ids.
        let mut fights = Vec::new();
        while d.game.phase() == Phase::Play && fights.len() < 3 {
            let side = d.game.to_move();
            let moves = d.game.position().legal_moves();
            let pick = moves.nth(d.rng.below(moves.len() as u32) as usize).unwrap();
            for event in d.ok(Command::Move { side, mv: pick }) {
                if matches!(
                    event,
                    Event::Moved {
                        combat: Some(_),
                        ..
                    }
                ) {
                    fights.push(event);
                }
            }
        }
        assert!(!fights.is_empty(), "the random game had a fight");
        if d.game.phase() == Phase::Play {
            assert_eq!(reveal(&d.game), None, "nothing is revealed before the end");
            for viewer in Viewer::ALL {
                assert_eq!(view(&d.game, viewer).reveal, None);
            }
            d.ok(Command::Resign {
                side: d.game.to_move(),
            });
        }
        let shown = reveal(&d.game).expect("an ended game reveals itself");
        assert_eq!(shown.deployments, confirmed_in(&d.log));
        assert_eq!(shown.deployments.len(), 2, "both deployments");
        let Some(Event::PlayStarted { pieces: started }) = d
            .log
            .iter()
            .find(|e| matches!(e, Event::PlayStarted { .. }))
        else {
            panic!("no PlayStarted in {:?}", d.log)
        };
        assert_eq!(shown.pieces.len(), started.len());
        for (vp, (node, piece)) in shown.pieces.iter().zip(started) {
            assert_eq!(
                (vp.node, vp.side, vp.id, vp.kind),
                (*node, piece.side, piece.id, Some(piece.kind))
            );
        }
        let final_ids: BTreeSet<PieceId> = d.game.position().pieces().map(|(_, p)| p.id).collect();
        assert!(
            shown.pieces.len() > final_ids.len(),
            "captured pieces are in the reveal, not on the final board"
        );
        let end = d.log.last().unwrap();
        for viewer in Viewer::ALL {
            assert_eq!(view(&d.game, viewer).reveal.as_ref(), Some(&shown));
            let Some(ViewEvent::Ended {
                reveal: carried, ..
            }) = project(end, viewer, Some(&shown))
            else {
                panic!("the end is shown to {viewer:?}")
            };
            assert_eq!(carried.as_ref(), Some(&shown), "the end carries the reveal");
            // A replay after the end: every deployment and both kinds of every fight.
            for event in &d.log {
                match project(event, viewer, Some(&shown)) {
                    Some(ViewEvent::DeploymentConfirmed {
                        side, deployment, ..
                    }) => {
                        assert_eq!(
                            deployment.as_ref(),
                            shown.deployments.iter().find(|d| d.side == side)
                        );
                    }
                    Some(ViewEvent::Moved {
                        kind,
                        combat: Some(c),
                        ..
                    }) => {
                        assert!(kind.is_some() && c.defender_kind.is_some(), "{viewer:?}");
                    }
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn a_game_cancelled_at_the_deadline_reveals_only_the_confirmed_deployment() {
        let mut d = Driver::new("hidden-front", S, 32);
        d.ok(Command::Confirm { side: S });
        d.ok(Command::DeploymentDeadline {
            present: [true, false],
        });
        assert_eq!(d.game.phase(), Phase::Ended);
        let shown = reveal(&d.game).expect("an ended game reveals itself");
        assert_eq!(shown.deployments, confirmed_in(&d.log));
        assert_eq!(shown.deployments.len(), 1);
        assert_eq!(shown.deployments[0].side, S);
        assert!(shown.pieces.is_empty(), "play never started");
    }

    #[test]
    fn players_see_their_own_kinds_only_spectators_none_until_the_end() {
        let mut d = Driver::started("hidden-front", S, 20);
        for _ in 0..6 {
            d.play_quiet();
        }
        let game = &d.game;
        for viewer in Viewer::ALL {
            let v = view(game, viewer);
            assert_eq!(v.pieces.len(), 50);
            for vp in &v.pieces {
                let real = game.position().piece_at(vp.node).unwrap();
                assert_eq!((vp.side, vp.id), (real.side, real.id));
                let expected = (viewer.side() == Some(real.side)).then_some(real.kind);
                assert_eq!(vp.kind, expected, "{viewer:?} looking at {vp:?}");
            }
            assert_eq!(v.own_deployment, None);
            assert_eq!(v.outcome, None);
        }
        // After the end, everyone sees everything.
        d.ok(Command::Resign { side: S });
        for viewer in Viewer::ALL {
            let v = view(&d.game, viewer);
            for vp in &v.pieces {
                let real = d.game.position().piece_at(vp.node).unwrap();
                assert_eq!(vp.kind, Some(real.kind), "{viewer:?} after the end");
            }
            assert_eq!(v.outcome, Some(Outcome::win(N, EndReason::Resigned)));
        }
    }

    #[test]
    fn during_deployment_a_player_sees_only_its_own_draft() {
        let d = Driver::new("hidden-front", S, 21);
        let v = view(&d.game, Viewer::South);
        assert_eq!(v.own_deployment.as_ref(), d.game.deployment(S));
        assert!(v.pieces.is_empty());
        let v = view(&d.game, Viewer::North);
        assert_eq!(v.own_deployment.as_ref(), d.game.deployment(N));
        assert_eq!(view(&d.game, Viewer::Spectator).own_deployment, None);
        // Drafts: north's projects to nothing for south and the spectator.
        let north_draft = d
            .log
            .iter()
            .find(|e| matches!(e, Event::DeploymentDrafted { deployment } if deployment.side == N))
            .unwrap();
        assert_eq!(project(north_draft, Viewer::South, None), None);
        assert_eq!(project(north_draft, Viewer::Spectator, None), None);
        assert!(matches!(
            project(north_draft, Viewer::North, None),
            Some(ViewEvent::DeploymentDrafted { .. })
        ));
        // A confirmation tells the opponent that, not what.
        let confirmed = Event::DeploymentConfirmed {
            side: N,
            deployment: deployment::base(N),
            by_deadline: false,
        };
        for viewer in [Viewer::South, Viewer::Spectator] {
            assert_eq!(
                project(&confirmed, viewer, None),
                Some(ViewEvent::DeploymentConfirmed {
                    side: N,
                    deployment: None,
                    by_deadline: false
                })
            );
        }
    }

    #[test]
    fn play_started_shows_each_player_its_own_kinds() {
        let d = Driver::started("hidden-front", S, 22);
        let started = d
            .log
            .iter()
            .find(|e| matches!(e, Event::PlayStarted { .. }))
            .unwrap();
        for viewer in Viewer::ALL {
            let Some(ViewEvent::PlayStarted { pieces }) = project(started, viewer, None) else {
                panic!()
            };
            assert_eq!(pieces.len(), 50);
            for vp in pieces {
                assert_eq!(vp.kind.is_some(), viewer.side() == Some(vp.side));
            }
        }
    }

    #[test]
    fn a_fight_shows_who_survived_but_not_the_enemy_kind() {
        let moved = Event::Moved {
            mv: mv("A6", "A7"),
            piece: Piece {
                side: S,
                kind: k("5"),
                id: PieceId(3),
            },
            combat: Some(Combat {
                defender: Piece {
                    side: N,
                    kind: k("7"),
                    id: PieceId(9),
                },
                attacker_survives: false,
                defender_survives: true,
                flag_captured: false,
            }),
            flag_reveal: vec![],
        };
        let end = Reveal::default();
        let seen = |viewer, ended: bool| match project(&moved, viewer, ended.then_some(&end)) {
            Some(ViewEvent::Moved {
                side,
                mv: m,
                piece,
                kind,
                combat: Some(c),
                flag_reveal,
            }) => {
                assert_eq!((side, m, piece), (S, mv("A6", "A7"), PieceId(3)));
                assert!(flag_reveal.is_empty());
                (kind, c)
            }
            other => panic!("{other:?}"),
        };
        let combat = |defender_kind| ViewCombat {
            defender: PieceId(9),
            defender_kind,
            attacker_survives: false,
            defender_survives: true,
            flag_captured: false,
        };
        assert_eq!(seen(Viewer::South, false), (Some(k("5")), combat(None)));
        assert_eq!(seen(Viewer::North, false), (None, combat(Some(k("7")))));
        assert_eq!(seen(Viewer::Spectator, false), (None, combat(None)));
        for viewer in Viewer::ALL {
            assert_eq!(seen(viewer, true), (Some(k("5")), combat(Some(k("7")))));
        }
        // Serialised for the attacker, the enemy defender's kind is null on the wire.
        let json = serde_json::to_string(&project(&moved, Viewer::South, None)).unwrap();
        assert!(json.contains("\"defender_kind\":null"), "{json}");
        assert!(json.contains("\"kind\":5"), "{json}");
        let json = serde_json::to_string(&project(&moved, Viewer::Spectator, None)).unwrap();
        assert!(!json.contains(":5") && !json.contains(":7"), "{json}");
    }

    /// South: 8 on A6, bomb on A5; north: 9 on A7 (the mirrored base). South's 8 dies on A7,
    /// then north's 9 slides onto the bomb and both go: north's commander is removed.
    fn commander_falls(rules_name: &str) -> (Driver, Vec<Event>) {
        let mut d = Driver::new(rules_name, S, 23);
        let south = deployment::exchange(
            &deployment::exchange(&deployment::base(S), "A6", "B6"),
            "A5",
            "B2",
        );
        assert_eq!(south.kind_at(n("A6")), Some(k("8")));
        assert_eq!(south.kind_at(n("A5")), Some(k("B")));
        d.ok(Command::SetDeployment { deployment: south });
        d.ok(Command::SetDeployment {
            deployment: deployment::base(N),
        });
        d.ok(Command::Confirm { side: S });
        d.ok(Command::Confirm { side: N });
        let first = d.ok(Command::Move {
            side: S,
            mv: mv("A6", "A7"),
        });
        let Event::Moved {
            combat: Some(c),
            flag_reveal,
            ..
        } = &first[0]
        else {
            panic!("{first:?}")
        };
        assert!(!c.attacker_survives && c.defender_survives);
        assert!(flag_reveal.is_empty(), "an 8 fell, not a commander");
        let second = d.ok(Command::Move {
            side: N,
            mv: mv("A7", "A5"),
        });
        (d, second)
    }

    #[test]
    fn flag_reveal_shows_the_flag_of_a_side_whose_commander_falls() {
        let (d, events) = commander_falls("hidden-front+flag-reveal");
        let Event::Moved {
            combat: Some(c),
            flag_reveal,
            ..
        } = &events[0]
        else {
            panic!("{events:?}")
        };
        assert!(!c.attacker_survives && !c.defender_survives);
        let flag_id = d.game.position().piece_at(n("B12")).unwrap().id;
        assert_eq!(
            flag_reveal,
            &vec![FlagReveal {
                side: N,
                flags: vec![(n("B12"), flag_id)]
            }]
        );
        assert!(d.game.flag_revealed(N));
        assert!(!d.game.flag_revealed(S));
        // South now sees north's flag, and nothing else of north's.
        let v = view(&d.game, Viewer::South);
        for vp in v.pieces.iter().filter(|vp| vp.side == N) {
            let expected = (vp.node == n("B12")).then_some(junqi::FLAG);
            assert_eq!(vp.kind, expected, "{vp:?}");
        }
        // North does not see south's flag.
        let v = view(&d.game, Viewer::North);
        let south_flag = v.pieces.iter().find(|vp| vp.node == n("B1")).unwrap();
        assert_eq!(south_flag.kind, None);
        // The projected event carries the reveal to the opponent, but not the mover's kind.
        let Some(ViewEvent::Moved {
            kind,
            combat,
            flag_reveal: shown,
            ..
        }) = project(&events[0], Viewer::South, None)
        else {
            panic!()
        };
        assert_eq!(kind, None, "north's commander stays unnamed");
        assert_eq!(shown, *flag_reveal);
        assert_eq!(
            combat.unwrap().defender_kind,
            Some(junqi::BOMB),
            "south's own bomb"
        );
        d.check_replay();
        assert!(Game::replay(&d.log).unwrap().flag_revealed(N));
    }

    #[test]
    fn without_flag_reveal_the_flag_stays_hidden() {
        let (d, events) = commander_falls("hidden-front");
        let Event::Moved { flag_reveal, .. } = &events[0] else {
            panic!()
        };
        assert!(flag_reveal.is_empty());
        assert!(!d.game.flag_revealed(N));
        let v = view(&d.game, Viewer::South);
        assert!(
            v.pieces
                .iter()
                .filter(|vp| vp.side == N)
                .all(|vp| vp.kind.is_none())
        );
    }

    #[test]
    fn two_commanders_falling_together_reveal_both_flags() {
        let mut d = Driver::new("hidden-front+flag-reveal", S, 24);
        d.ok(Command::SetDeployment {
            deployment: deployment::base(S),
        });
        d.ok(Command::SetDeployment {
            deployment: deployment::base(N),
        });
        d.ok(Command::DeploymentDeadline {
            present: [true, true],
        });
        let events = d.ok(Command::Move {
            side: S,
            mv: mv("A6", "A7"),
        });
        let Event::Moved { flag_reveal, .. } = &events[0] else {
            panic!()
        };
        let sides: Vec<Side> = flag_reveal.iter().map(|r| r.side).collect();
        assert_eq!(sides.len(), 2);
        assert!(sides.contains(&S) && sides.contains(&N));
        let v = view(&d.game, Viewer::North);
        let south_flag = v.pieces.iter().find(|vp| vp.node == n("B1")).unwrap();
        assert_eq!(south_flag.kind, Some(junqi::FLAG));
        d.check_replay();
    }
}

// ---------------------------------------------------------------------------------------------
// Notation
// ---------------------------------------------------------------------------------------------

mod notation {
    use super::*;

    #[test]
    fn the_documented_example_reads_and_writes_back() {
        let text = "hidden-front s 0 .-F.../...../...../...../...../-1..../9..../...../...../...../...../.F...";
        let p = from_notation(text).unwrap();
        assert_eq!(to_notation(&p), text);
        assert_eq!(kind_at(&p, "B12"), Some((N, k("F"))));
        assert_eq!(kind_at(&p, "A7"), Some((N, k("1"))));
        assert_eq!(kind_at(&p, "A6"), Some((S, k("9"))));
        assert_eq!(kind_at(&p, "B1"), Some((S, k("F"))));
        assert_eq!(p.pieces().count(), 4);
        assert_eq!(p.to_move(), S);
        // And the attack it sets up.
        let mut p = p;
        let r = play(&mut p, "A6", "A7");
        assert!(r.combat.is_some_and(|c| c.attacker_survives));
    }

    #[test]
    fn random_mid_game_positions_round_trip() {
        let mut checked = 0;
        for (seed, rules_name) in [
            (30, "hidden-front"),
            (31, "hidden-front+hq-mobile+no-combat-40"),
            (
                32,
                "hidden-front+front-bombs+sturdy-mines+bomb-spares-flag+flag-reveal",
            ),
        ] {
            let mut rng = GameRng::from_seed(seed);
            for game in 0..4u64 {
                let first = if game.is_multiple_of(2) { S } else { N };
                let mut d = Driver::started(rules_name, first, seed * 100 + game);
                let plies = 10 + rng.below(60);
                while d.game.phase() == Phase::Play && d.game.plies() < plies {
                    let side = d.game.to_move();
                    let moves = d.game.position().legal_moves();
                    let pick = moves.nth(rng.below(moves.len() as u32) as usize).unwrap();
                    d.ok(Command::Move { side, mv: pick });
                }
                let p = *d.game.position();
                let text = to_notation(&p);
                let q = from_notation(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
                assert_eq!(to_notation(&q), text);
                assert_eq!(q.rules(), p.rules());
                assert_eq!(q.to_move(), p.to_move());
                assert_eq!(q.plies_without_combat(), p.plies_without_combat());
                let strip = |x: &Position| -> Vec<(Node, Side, PieceKind)> {
                    x.pieces().map(|(at, pc)| (at, pc.side, pc.kind)).collect()
                };
                assert_eq!(strip(&q), strip(&p), "{text}");
                assert_eq!(
                    q.legal_moves().iter().collect::<Vec<_>>(),
                    p.legal_moves().iter().collect::<Vec<_>>()
                );
                checked += 1;
            }
        }
        assert_eq!(checked, 12);
    }

    #[test]
    fn malformed_strings_are_refused_with_the_reason() {
        let rows = ".-F.../...../...../...../...../-1..../9..../...../...../...../...../.F...";
        let ok = format!("hidden-front s 0 {rows}");
        assert!(from_notation(&ok).is_ok());
        assert_eq!(
            from_notation(&format!("hidden-front s {rows}")).unwrap_err(),
            NotationError::Fields(3)
        );
        assert_eq!(
            from_notation(&format!("hidden-front s 0 {rows} x")).unwrap_err(),
            NotationError::Fields(5)
        );
        assert_eq!(from_notation("").unwrap_err(), NotationError::Fields(0));
        assert_eq!(
            from_notation(&format!("hidden-front x 0 {rows}")).unwrap_err(),
            NotationError::Side("x".into())
        );
        assert_eq!(
            from_notation(&format!("hidden-front south 0 {rows}")).unwrap_err(),
            NotationError::Side("south".into())
        );
        assert_eq!(
            from_notation(&format!("hidden-front s -1 {rows}")).unwrap_err(),
            NotationError::Plies("-1".into())
        );
        assert!(matches!(
            from_notation(&format!("chess s 0 {rows}")).unwrap_err(),
            NotationError::Rules(_)
        ));
        assert!(matches!(
            from_notation(&format!("hidden-front+foo s 0 {rows}")).unwrap_err(),
            NotationError::Rules(_)
        ));
        // Rows: too few, one too long, one too short, an unknown code, a dangling `-`.
        assert_eq!(
            from_notation("hidden-front s 0 ...../.....").unwrap_err(),
            NotationError::Rows {
                expected: 12,
                found: 2
            }
        );
        let bad_row = |row12: &str| {
            let text = format!(
                "hidden-front s 0 {row12}/{}",
                rows.split_once('/').unwrap().1
            );
            from_notation(&text).unwrap_err()
        };
        for (row12, what) in [
            ("......", "too long"),
            ("....", "too short"),
            ("", "empty"),
            ("..X..", "unknown code"),
            ("..-..", "minus without a code"),
            ("..0..", "rank 0"),
        ] {
            let err = bad_row(row12);
            assert!(
                matches!(err, NotationError::Row { row: 12, .. }),
                "{what}: {err:?}"
            );
        }
        // A bad row further down names its board row.
        let text = format!("hidden-front n 3 {}", rows.replace("9....", "9...Z"));
        assert!(matches!(
            from_notation(&text).unwrap_err(),
            NotationError::Row { row: 6, .. }
        ));
    }
}
