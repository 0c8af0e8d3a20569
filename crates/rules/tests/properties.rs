//! Property tests for the Junqi engine.
//!
//! - A slow, obviously-correct reference move generator, built from the spec's text (node names,
//!   explicit rail lines, camps and HQs) and independent of the engine's bitboards, is trusted on
//!   the spec's worked checks and then compared with `Position::legal_moves`, `destinations`,
//!   `has_legal_move`, `check` and `play` on arbitrary positions and on every position of random
//!   games, for both sides.
//! - Random whole games (random deployments, reshuffles, random legal moves, timeouts, draw
//!   offers, refused commands) are checked event by event: every game ends; moves are legal for
//!   the reference; fights are judged as the spec says; piece counts never rise; the no-combat
//!   counter resets exactly on combat; the outcome follows the spec's order of checks; the log
//!   replays to the same game; and no view or projected event shows a kind the viewer may not
//!   know, while everything is shown after the end.
//!   Run for the default rules and for every house option at once (`HOUSE_RULES`), with proptest
//!   seeds, plus a fixed set of games that must reach every kind of ending and fight.
//! - Every attacker kind against every defender kind, through `Position::play`, under both rule
//!   sets, against a reference judge.
//! - Piece ids are unique and carry nothing of a piece's kind, side or deployment square (a
//!   statistical check over 2000 games with fixed seeds).
//!
//! The whole file runs in about 8 s in a debug build on one thread.

use hidden_front_rules::notation::to_notation;
use hidden_front_rules::{
    Command, EndReason, Event, Game, GameError, GameRng, Move, Node, Outcome, Phase, Piece,
    PieceId, PieceKind, Position, Rules, Side, ViewEvent, Viewer, project, reveal, view,
};
use proptest::prelude::*;

mod common;
use common::check_following;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::LazyLock;

// ---------------------------------------------------------------------------------------------
// The reference board, from the spec's text.
// ---------------------------------------------------------------------------------------------

const COLUMNS: usize = 5;
const ROWS: usize = 12;
const NODES: usize = COLUMNS * ROWS;

/// The rail lines of the spec, each one straight line, as explicit node names.
const RAIL_LINES: [&str; 7] = [
    "A2 B2 C2 D2 E2",
    "A6 B6 C6 D6 E6",
    "A7 B7 C7 D7 E7",
    "A11 B11 C11 D11 E11",
    "A2 A3 A4 A5 A6 A7 A8 A9 A10 A11",
    "E2 E3 E4 E5 E6 E7 E8 E9 E10 E11",
    "C6 C7",
];
const CAMPS: &str = "B3 D3 C4 B5 D5 B8 D8 C9 B10 D10";
const HQS: &str = "B1 D1 B12 D12";
const FRONT_CROSSINGS: [(&str, &str); 3] = [("A6", "A7"), ("C6", "C7"), ("E6", "E7")];

/// The rule set with every house option on, and a short no-combat limit.
const HOUSE_RULES: &str =
    "hidden-front+hq-mobile+front-bombs+sturdy-mines+bomb-spares-flag+flag-reveal+no-combat-40";

/// A generous bound on the length of a game: every fight removes a piece (at most 50 fights)
/// and at most 100 plies pass between fights.
const MAX_PLIES: u32 = 20_000;
/// Fixed-seed games per rule set in the coverage test.
const GAMES_PER_RULES: u64 = 12;

/// Node number of a name like `A1` or `E12`: (row - 1) * 5 + column.
fn node_of(name: &str) -> usize {
    let col = usize::from(name.as_bytes()[0] - b'A');
    let row: usize = name[1..].parse().expect("row number");
    assert!(
        col < COLUMNS && (1..=ROWS).contains(&row),
        "bad node name {name}"
    );
    (row - 1) * COLUMNS + col
}

/// Name of a node number.
fn name_of(n: usize) -> String {
    format!(
        "{}{}",
        char::from(b'A' + (n % COLUMNS) as u8),
        n / COLUMNS + 1
    )
}

fn names(nodes: impl IntoIterator<Item = usize>) -> String {
    nodes.into_iter().map(name_of).collect::<Vec<_>>().join(" ")
}

fn move_names(moves: &BTreeSet<(usize, usize)>) -> String {
    moves
        .iter()
        .map(|&(f, t)| format!("{}-{}", name_of(f), name_of(t)))
        .collect::<Vec<_>>()
        .join(" ")
}

struct RefBoard {
    /// Every link once, `(lower, higher)`.
    links: BTreeSet<(usize, usize)>,
    adj: Vec<Vec<usize>>,
    rail_lines: Vec<Vec<usize>>,
    rail_links: BTreeSet<(usize, usize)>,
    rail_adj: Vec<Vec<usize>>,
    rail: [bool; NODES],
    camp: [bool; NODES],
    hq: [bool; NODES],
}

static BOARD: LazyLock<RefBoard> = LazyLock::new(build_ref_board);

fn insert_link(links: &mut BTreeSet<(usize, usize)>, a: usize, b: usize) {
    assert_ne!(a, b);
    links.insert((a.min(b), a.max(b)));
}

fn build_ref_board() -> RefBoard {
    let at = |col: usize, row: usize| (row - 1) * COLUMNS + col;
    let mut links = BTreeSet::new();
    // Orthogonal neighbours inside one half (south rows 1-6, north rows 7-12).
    for row in 1..=ROWS {
        for col in 0..COLUMNS {
            if col + 1 < COLUMNS {
                insert_link(&mut links, at(col, row), at(col + 1, row));
            }
            if row < ROWS && row != 6 {
                insert_link(&mut links, at(col, row), at(col, row + 1));
            }
        }
    }
    for (a, b) in FRONT_CROSSINGS {
        insert_link(&mut links, node_of(a), node_of(b));
    }
    let mut camp = [false; NODES];
    for name in CAMPS.split_whitespace() {
        camp[node_of(name)] = true;
    }
    let mut hq = [false; NODES];
    for name in HQS.split_whitespace() {
        hq[node_of(name)] = true;
    }
    // Each camp to its diagonal neighbours.
    for n in (0..NODES).filter(|&n| camp[n]) {
        let (col, row) = ((n % COLUMNS) as i32, (n / COLUMNS + 1) as i32);
        for (dc, dr) in [(-1, -1), (1, -1), (-1, 1), (1, 1)] {
            let (c, r) = (col + dc, row + dr);
            if (0..COLUMNS as i32).contains(&c) && (1..=ROWS as i32).contains(&r) {
                insert_link(&mut links, n, at(c as usize, r as usize));
            }
        }
    }
    let rail_lines: Vec<Vec<usize>> = RAIL_LINES
        .iter()
        .map(|line| line.split_whitespace().map(node_of).collect())
        .collect();
    let mut rail_links = BTreeSet::new();
    let mut rail = [false; NODES];
    for line in &rail_lines {
        for pair in line.windows(2) {
            insert_link(&mut rail_links, pair[0], pair[1]);
        }
        for &n in line {
            rail[n] = true;
        }
    }
    // Rail links are one-step links too.
    links.extend(rail_links.iter().copied());
    let adjacency = |links: &BTreeSet<(usize, usize)>| {
        let mut adj = vec![Vec::new(); NODES];
        for &(a, b) in links {
            adj[a].push(b);
            adj[b].push(a);
        }
        adj
    };
    RefBoard {
        adj: adjacency(&links),
        rail_adj: adjacency(&rail_links),
        links,
        rail_lines,
        rail_links,
        rail,
        camp,
        hq,
    }
}

// ---------------------------------------------------------------------------------------------
// The reference move generator and judge.
// ---------------------------------------------------------------------------------------------

type Cells = [Option<Piece>; NODES];

fn cells_of(position: &Position) -> Cells {
    let mut cells = [None; NODES];
    for (node, piece) in position.pieces() {
        assert!(node.index() < NODES, "a piece off the board at {node:?}");
        assert!(cells[node.index()].is_none());
        cells[node.index()] = Some(piece);
    }
    cells
}

/// Every destination of the piece on `from`, for its owner, by the spec's words.
fn ref_destinations(rules: &Rules, cells: &Cells, from: usize) -> BTreeSet<usize> {
    let board = &*BOARD;
    let mut dest = BTreeSet::new();
    let Some(piece) = cells[from] else {
        return dest;
    };
    let code = rules.code(piece.kind);
    if code == "M" || code == "F" {
        return dest;
    }
    if board.hq[from] && !rules.hq_pieces_may_move {
        return dest;
    }
    // One step along any link.
    dest.extend(board.adj[from].iter().copied());
    if board.rail[from] {
        if code == "1" {
            // Any connected rail path through empty nodes, stopping on an empty node or on the
            // first occupied node of a path.
            let mut seen = BTreeSet::from([from]);
            let mut queue = VecDeque::from([from]);
            while let Some(x) = queue.pop_front() {
                for &y in &board.rail_adj[x] {
                    if seen.insert(y) {
                        dest.insert(y);
                        if cells[y].is_none() {
                            queue.push_back(y);
                        }
                    }
                }
            }
        } else {
            // One straight rail line, both ways, up to and including the first occupied node.
            for line in &board.rail_lines {
                let Some(i) = line.iter().position(|&n| n == from) else {
                    continue;
                };
                let forward: Vec<usize> = line[i + 1..].to_vec();
                let backward: Vec<usize> = line[..i].iter().rev().copied().collect();
                for walk in [forward, backward] {
                    for n in walk {
                        dest.insert(n);
                        if cells[n].is_some() {
                            break;
                        }
                    }
                }
            }
        }
    }
    // Never onto an own piece, never onto an enemy piece in a camp.
    dest.retain(|&to| match cells[to] {
        None => true,
        Some(other) => other.side != piece.side && !board.camp[to],
    });
    dest
}

fn ref_moves(rules: &Rules, cells: &Cells, side: Side) -> BTreeSet<(usize, usize)> {
    (0..NODES)
        .filter(|&n| cells[n].is_some_and(|p| p.side == side))
        .flat_map(|from| {
            ref_destinations(rules, cells, from)
                .into_iter()
                .map(move |to| (from, to))
        })
        .collect()
}

/// `(attacker survives, defender survives, flag captured)` by the spec's combat rules and the
/// house options.
fn ref_judge(rules: &Rules, attacker: &str, defender: &str) -> (bool, bool, bool) {
    if attacker == "B" || defender == "B" {
        if defender == "F" {
            if rules.bomb_spares_flag {
                (false, true, false)
            } else {
                (false, false, true)
            }
        } else {
            (false, false, false)
        }
    } else if defender == "F" {
        (true, false, true)
    } else if defender == "M" {
        if attacker == "1" {
            (true, false, false)
        } else if rules.mine_survives_non_engineer {
            (false, true, false)
        } else {
            (false, false, false)
        }
    } else {
        let rank = |code: &str| -> u8 { code.parse().expect("a ranked piece") };
        let (a, d) = (rank(attacker), rank(defender));
        (a > d, d > a, false)
    }
}

/// The end-of-game checks at the start of a turn: no legal move for the side to move (the other
/// side wins), then the no-combat limit.
fn ref_turn_start_outcome(position: &Position) -> Option<Outcome> {
    let rules = position.rules();
    let side = position.to_move();
    if ref_moves(rules, &cells_of(position), side).is_empty() {
        Some(Outcome::win(side.other(), EndReason::NoLegalMoves))
    } else if position.plies_without_combat() >= rules.no_combat_draw_plies {
        Some(Outcome::draw(EndReason::NoCombatLimit))
    } else {
        None
    }
}

fn engine_moves(position: &Position) -> BTreeSet<(usize, usize)> {
    position
        .legal_moves()
        .iter()
        .map(|m| (m.from.index(), m.to.index()))
        .collect()
}

fn mv(from: usize, to: usize) -> Move {
    Move {
        from: Node(from as u8),
        to: Node(to as u8),
    }
}

fn bits_to_set(bits: u64) -> BTreeSet<usize> {
    (0..64).filter(|n| bits & 1u64 << n != 0).collect()
}

/// Compares the engine's move generation with the reference on `position`, for both sides.
fn check_move_generation(position: &Position, pick: &mut GameRng) {
    let rules = *position.rules();
    let cells = cells_of(position);
    let notation = to_notation(position);
    for side in Side::BOTH {
        let mut p = *position;
        p.set_to_move(side);
        let reference = ref_moves(&rules, &cells, side);
        let list = p.legal_moves();
        let engine: BTreeSet<(usize, usize)> = list
            .iter()
            .map(|m| (m.from.index(), m.to.index()))
            .collect();
        if engine != reference {
            panic!(
                "legal moves of {side} differ from the reference in [{notation}]\n  missing: {}\n  extra: {}",
                move_names(&reference.difference(&engine).copied().collect()),
                move_names(&engine.difference(&reference).copied().collect()),
            );
        }
        assert_eq!(list.len(), reference.len(), "MoveList::len in [{notation}]");
        assert_eq!(
            list.is_empty(),
            reference.is_empty(),
            "MoveList::is_empty in [{notation}]"
        );
        assert_eq!(
            position.has_legal_move(side),
            !reference.is_empty(),
            "has_legal_move({side}) in [{notation}]"
        );
        if !reference.is_empty() {
            let k = pick.below(reference.len() as u32) as usize;
            assert_eq!(list.nth(k), list.iter().nth(k), "MoveList::nth({k})");
            assert!(list.contains(list.nth(k).expect("k < len")));
        }
        assert_eq!(list.nth(reference.len()), None);
        for &(from, to) in &reference {
            assert!(
                p.check(mv(from, to)).is_ok(),
                "check refuses the legal {}-{} of {side} in [{notation}]",
                name_of(from),
                name_of(to)
            );
        }
        // A sample of pairs, mostly non-moves: from any node or from an own piece, to any node
        // (node numbers up to 63, so off-board ones too).
        let own: Vec<usize> = (0..NODES)
            .filter(|&n| cells[n].is_some_and(|q| q.side == side))
            .collect();
        for i in 0..24 {
            let from = if i % 2 == 0 || own.is_empty() {
                pick.below(64) as usize
            } else {
                own[pick.below(own.len() as u32) as usize]
            };
            let to = pick.below(64) as usize;
            let legal = reference.contains(&(from, to));
            let m = mv(from, to);
            assert_eq!(
                p.check(m).is_ok(),
                legal,
                "check({from}->{to}) for {side} in [{notation}] (reference says legal = {legal})"
            );
            assert_eq!(list.contains(m), legal);
            if !legal {
                let mut q = p;
                assert!(q.play(m).is_err(), "play accepted a non-move {from}->{to}");
                assert_eq!(q, p, "a refused play changed the position");
            }
        }
    }
    for from in 0..NODES {
        let engine = bits_to_set(position.destinations(Node(from as u8)));
        let reference = ref_destinations(&rules, &cells, from);
        assert_eq!(
            engine,
            reference,
            "destinations({}) in [{notation}]: engine {}, reference {}",
            name_of(from),
            names(engine.iter().copied()),
            names(reference.iter().copied())
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The reference itself, on the spec's words and worked checks.
// ---------------------------------------------------------------------------------------------

fn lone(rules: Rules, at: &str, code: &str) -> Cells {
    let mut cells = [None; NODES];
    cells[node_of(at)] = Some(Piece {
        side: Side::South,
        kind: rules.parse_kind(code).expect("a piece code"),
        id: PieceId(0),
    });
    cells
}

fn put(cells: &mut Cells, rules: &Rules, at: &str, side: Side, code: &str) {
    cells[node_of(at)] = Some(Piece {
        side,
        kind: rules.parse_kind(code).expect("a piece code"),
        id: PieceId(node_of(at) as u8),
    });
}

fn set_of(list: &str) -> BTreeSet<usize> {
    list.split_whitespace().map(node_of).collect()
}

#[test]
fn reference_board_has_the_spec_shape() {
    let board = &*BOARD;
    assert_eq!(board.links.len(), 133, "the graph has 133 links");
    assert_eq!(board.rail_links.len(), 35, "35 rail links");
    assert_eq!(
        board.rail.iter().filter(|&&r| r).count(),
        32,
        "32 rail nodes"
    );
    for n in 0..NODES {
        assert!(
            !(board.rail[n] && (board.camp[n] || board.hq[n])),
            "{}",
            name_of(n)
        );
    }
    for (a, b) in [("B6", "B7"), ("D6", "D7"), ("A1", "B2"), ("C6", "D7")] {
        assert!(!board.links.contains(&(node_of(a), node_of(b))), "{a}-{b}");
    }
    for n in ["A2", "C2", "A4", "C4"] {
        assert!(
            board
                .links
                .contains(&(node_of(n).min(node_of("B3")), node_of(n).max(node_of("B3"))))
        );
    }
    assert_eq!(name_of(node_of("E12")), "E12");
    assert_eq!(node_of("A1"), 0);
    assert_eq!(node_of("E12"), 59);
    assert_eq!(node_of("C7"), 32);
}

#[test]
fn engine_topology_matches_the_reference_board() {
    let board = &*BOARD;
    let topo = Rules::default().topology();
    assert_eq!(usize::from(topo.node_count), NODES);
    for n in 0..NODES {
        assert_eq!(topo.name(Node(n as u8)), name_of(n));
        assert_eq!(
            bits_to_set(topo.neighbors[n]),
            board.adj[n].iter().copied().collect()
        );
        assert_eq!(
            bits_to_set(topo.rail_neighbors[n]),
            board.rail_adj[n].iter().copied().collect()
        );
        assert_eq!(
            topo.rail & 1 << n != 0,
            board.rail[n],
            "rail {}",
            name_of(n)
        );
        assert_eq!(
            topo.camps & 1 << n != 0,
            board.camp[n],
            "camp {}",
            name_of(n)
        );
        assert_eq!(
            (topo.hq[0] | topo.hq[1]) & 1 << n != 0,
            board.hq[n],
            "hq {}",
            name_of(n)
        );
    }
    let engine_links: BTreeSet<(usize, usize)> = topo
        .links
        .iter()
        .map(|(a, b)| (a.index(), b.index()))
        .collect();
    assert_eq!(engine_links, board.links);
}

#[test]
fn reference_generator_passes_the_spec_worked_checks() {
    let rules = Rules::default();
    // An engineer alone at A2 has 33 destinations: the 31 other rail nodes, A1 and B3.
    let cells = lone(rules, "A2", "1");
    let dest = ref_destinations(&rules, &cells, node_of("A2"));
    assert_eq!(dest.len(), 33, "{}", names(dest.iter().copied()));
    assert!(dest.contains(&node_of("A1")) && dest.contains(&node_of("B3")));
    // A non-engineer at A2 on an empty column slides to A11 (and along row 2).
    let cells = lone(rules, "A2", "5");
    let dest = ref_destinations(&rules, &cells, node_of("A2"));
    assert_eq!(
        dest,
        set_of("A1 B3 B2 C2 D2 E2 A3 A4 A5 A6 A7 A8 A9 A10 A11"),
        "{}",
        names(dest.iter().copied())
    );
    // An engineer at B6 reaches C7 by turning at C6; a non-engineer cannot.
    let cells = lone(rules, "B6", "1");
    assert!(ref_destinations(&rules, &cells, node_of("B6")).contains(&node_of("C7")));
    let cells = lone(rules, "B6", "9");
    let dest = ref_destinations(&rules, &cells, node_of("B6"));
    assert!(!dest.contains(&node_of("C7")));
    // B6 is no camp's diagonal neighbour: steps to A6, C6 and B5, slides along row 6 only.
    assert_eq!(
        dest,
        set_of("A6 B5 C6 D6 E6"),
        "{}",
        names(dest.iter().copied())
    );

    // Blocking: a slide stops on the first occupied node, which it may attack if it is an enemy.
    let mut cells = lone(rules, "A2", "5");
    put(&mut cells, &rules, "A5", Side::South, "3");
    put(&mut cells, &rules, "D2", Side::North, "3");
    let dest = ref_destinations(&rules, &cells, node_of("A2"));
    assert_eq!(
        dest,
        set_of("A1 B3 B2 C2 D2 A3 A4"),
        "{}",
        names(dest.iter().copied())
    );
    // An engineer: the own piece on A5 closes column A and the enemy on E4 closes column E, so
    // nothing beyond them is reached; the enemy itself may be attacked.
    let mut cells = lone(rules, "A2", "1");
    put(&mut cells, &rules, "A5", Side::South, "3");
    put(&mut cells, &rules, "E4", Side::North, "3");
    let dest = ref_destinations(&rules, &cells, node_of("A2"));
    assert!(
        dest.contains(&node_of("E4")),
        "attacks the first enemy on a path"
    );
    assert!(
        !dest.contains(&node_of("E5")),
        "E5 only through E4 or from row 6 side"
    );
    assert!(!dest.contains(&node_of("A5")), "own piece");
    assert!(dest.contains(&node_of("A4")));
    assert!(!dest.contains(&node_of("A6")), "A6 is cut off");
    // An enemy in a camp cannot be attacked; an empty camp can be entered.
    let mut cells = lone(rules, "A2", "9");
    put(&mut cells, &rules, "B3", Side::North, "2");
    assert!(!ref_destinations(&rules, &cells, node_of("A2")).contains(&node_of("B3")));
    // Mines, flags and pieces in an HQ never move (unless hq-mobile).
    let cells = lone(rules, "A1", "M");
    assert!(ref_destinations(&rules, &cells, node_of("A1")).is_empty());
    let cells = lone(rules, "B1", "F");
    assert!(ref_destinations(&rules, &cells, node_of("B1")).is_empty());
    let cells = lone(rules, "D12", "9");
    assert!(ref_destinations(&rules, &cells, node_of("D12")).is_empty());
    let mobile = Rules::parse("hidden-front+hq-mobile").expect("rules");
    let cells = lone(mobile, "D12", "9");
    assert_eq!(
        ref_destinations(&mobile, &cells, node_of("D12")),
        set_of("C12 E12 D11")
    );
    let cells = lone(mobile, "B1", "F");
    assert!(ref_destinations(&mobile, &cells, node_of("B1")).is_empty());
}

#[test]
fn engine_agrees_on_the_spec_worked_checks() {
    // The worked checks straight against the engine, so a disagreement names the engine.
    let rules = Rules::default();
    for (at, code, expected) in [("A2", "1", 33usize), ("A2", "5", 15), ("B6", "9", 5)] {
        let mut p = Position::empty(rules, Side::South);
        p.put(
            Node(node_of(at) as u8),
            Piece {
                side: Side::South,
                kind: rules.parse_kind(code).expect("code"),
                id: PieceId(0),
            },
        );
        assert_eq!(engine_moves(&p).len(), expected, "{code} at {at}");
        check_move_generation(&p, &mut GameRng::from_seed(1));
    }
}

// ---------------------------------------------------------------------------------------------
// Information hiding: a walk over the JSON of views and projected events.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy)]
struct Sight {
    viewer: Viewer,
    /// The game is over: every kind must be shown.
    everything: bool,
    /// Flags shown under `flag-reveal`, per side.
    revealed_flags: [bool; 2],
    flag: u64,
}

fn json_side(value: Option<&Value>) -> Option<Side> {
    match value {
        Some(Value::String(s)) => Some(Side::parse(s).unwrap_or_else(|| panic!("side {s:?}"))),
        _ => None,
    }
}

fn check_kind(owner: Side, value: &Value, sight: Sight, what: &str) {
    let visible = sight.everything || sight.viewer.side() == Some(owner);
    if visible {
        assert!(
            !value.is_null(),
            "{what}: {:?} is not shown the kind of a {owner} piece it may see",
            sight.viewer
        );
    } else if !value.is_null() {
        assert!(
            value.as_u64() == Some(sight.flag) && sight.revealed_flags[owner.index()],
            "{what}: {:?} is shown kind {value} of a {owner} piece",
            sight.viewer
        );
    }
}

/// Every `kind` / `defender_kind` field of a piece the viewer may not know is null (save flags
/// shown under `flag-reveal`), every deployment is the viewer's own; with `everything`, every kind
/// is shown.
fn walk_json(value: &Value, parent_side: Option<Side>, sight: Sight, what: &str) {
    match value {
        Value::Array(items) => {
            for item in items {
                walk_json(item, parent_side, sight, what);
            }
        }
        Value::Object(map) => {
            let side = json_side(map.get("side"));
            for (key, v) in map {
                match key.as_str() {
                    "kind" => check_kind(
                        side.unwrap_or_else(|| panic!("{what}: a kind without a side")),
                        v,
                        sight,
                        what,
                    ),
                    "defender_kind" => {
                        // The defender is always the mover's enemy.
                        let mover =
                            parent_side.unwrap_or_else(|| panic!("{what}: a fight outside a move"));
                        check_kind(mover.other(), v, sight, what);
                    }
                    "deployment" | "own_deployment" => {
                        let owner = json_side(v.get("side")).or(side);
                        let mine = owner.is_some() && sight.viewer.side() == owner;
                        if !v.is_null() {
                            assert!(
                                sight.everything || mine,
                                "{what}: {:?} is shown the deployment of {owner:?}",
                                sight.viewer
                            );
                        } else if key == "deployment" {
                            assert!(
                                !(sight.everything || mine),
                                "{what}: a deployment {:?} may see is hidden",
                                sight.viewer
                            );
                        }
                    }
                    "placements" => {}
                    other => assert!(
                        !other.contains("kind") && !other.contains("placement"),
                        "{what}: unexpected field {other:?}; teach this test about it"
                    ),
                }
                walk_json(v, side.or(parent_side), sight, what);
            }
        }
        _ => {}
    }
}

fn sight(game: &Game, viewer: Viewer, everything: bool) -> Sight {
    Sight {
        viewer,
        everything,
        revealed_flags: [
            game.flag_revealed(Side::South),
            game.flag_revealed(Side::North),
        ],
        flag: u64::from(game.rules().parse_kind("F").expect("flag").0),
    }
}

fn commander_count(cells: &Cells, rules: &Rules, side: Side) -> usize {
    cells
        .iter()
        .flatten()
        .filter(|p| p.side == side && rules.code(p.kind) == "9")
        .count()
}

fn side_count(cells: &Cells, side: Side) -> usize {
    cells.iter().flatten().filter(|p| p.side == side).count()
}

/// `view(game, viewer)` for every viewer: nothing hidden leaks before the end, everything is
/// shown after it, and what is shown is true.
fn check_views(game: &Game) {
    let ended = game.phase() == Phase::Ended;
    let rules = *game.rules();
    let cells = cells_of(game.position());
    if game.phase() != Phase::Deployment {
        for side in Side::BOTH {
            assert_eq!(
                game.flag_revealed(side),
                rules.flag_revealed_when_commander_dies
                    && commander_count(&cells, &rules, side) == 0,
                "{side}'s flag is revealed exactly when flag-reveal is on and its commander is gone"
            );
        }
    }
    for viewer in Viewer::ALL {
        let v = view(game, viewer);
        let json = serde_json::to_value(&v).expect("a view serializes");
        walk_json(&json, None, sight(game, viewer, ended), "view");
        assert_eq!(
            v.reveal.is_some(),
            ended,
            "a view reveals the game exactly after the end"
        );
        assert_eq!(
            v.reveal,
            reveal(game),
            "every viewer is shown the same reveal"
        );
        assert_eq!(v.viewer, viewer);
        assert_eq!(v.phase, game.phase());
        assert_eq!(v.outcome, game.outcome());
        assert_eq!(v.plies, game.plies());
        let truth: Vec<(usize, Piece)> = game
            .position()
            .pieces()
            .map(|(n, p)| (n.index(), p))
            .collect();
        assert_eq!(v.pieces.len(), truth.len(), "view shows every piece");
        for (vp, (node, piece)) in v.pieces.iter().zip(&truth) {
            assert_eq!(
                (vp.node.index(), vp.side, vp.id),
                (*node, piece.side, piece.id)
            );
            if let Some(kind) = vp.kind {
                assert_eq!(kind, piece.kind, "view shows a wrong kind");
            }
            let own = viewer.side() == Some(piece.side);
            if ended || own {
                assert_eq!(vp.kind, Some(piece.kind));
            }
            if rules.code(piece.kind) == "F" && game.flag_revealed(piece.side) {
                assert_eq!(vp.kind, Some(piece.kind), "a revealed flag is shown to all");
            }
        }
    }
}

/// `project(event, viewer, None)` hides what must be hidden (the end event reveals all), and
/// `project(event, viewer, reveal(ended game))` shows everything, the end event with the reveal.
fn check_projection(event: &Event, game_after: &Game) {
    let ending = matches!(event, Event::Ended { .. });
    let end = reveal(game_after);
    for viewer in Viewer::ALL {
        for game_ended in [false, true] {
            if game_ended && game_after.phase() != Phase::Ended {
                continue;
            }
            let shown_end = end.as_ref().filter(|_| game_ended);
            let projected = project(event, viewer, shown_end);
            if let Some(ViewEvent::Ended { reveal: shown, .. }) = &projected {
                assert_eq!(
                    shown.as_ref(),
                    shown_end,
                    "the end carries the reveal it was given"
                );
            }
            if let Event::DeploymentDrafted { deployment } = event
                && !game_ended
                && viewer.side() != Some(deployment.side)
            {
                assert!(projected.is_none(), "{viewer:?} sees another side's draft");
                continue;
            }
            let projected =
                projected.unwrap_or_else(|| panic!("{viewer:?} is not shown {event:?}"));
            let json = serde_json::to_value(&projected).expect("an event serializes");
            let what = format!("project({event:?}, {viewer:?}, {game_ended})");
            walk_json(
                &json,
                None,
                sight(game_after, viewer, ending || game_ended),
                &what,
            );
            if let (
                Event::Moved {
                    mv, piece, combat, ..
                },
                ViewEvent::Moved {
                    side,
                    mv: shown_mv,
                    piece: shown_id,
                    combat: shown_combat,
                    ..
                },
            ) = (event, &projected)
            {
                assert_eq!((*side, shown_mv, *shown_id), (piece.side, mv, piece.id));
                assert_eq!(
                    shown_combat.map(|c| (c.defender, c.attacker_survives, c.defender_survives)),
                    combat.map(|c| (c.defender.id, c.attacker_survives, c.defender_survives))
                );
            }
        }
    }
}

/// After the end, `reveal` tells the whole game: the deployments confirmed in the log (south's
/// first) and every piece of `PlayStarted` with its kind, so that both pieces of every fight in
/// the log, captured ones included, can be looked up by id with their true kinds.
fn check_reveal(game: &Game, log: &[Event]) {
    let shown = reveal(game).expect("an ended game reveals itself");
    let mut confirmed: Vec<_> = log
        .iter()
        .filter_map(|e| match e {
            Event::DeploymentConfirmed { deployment, .. } => Some(deployment.clone()),
            _ => None,
        })
        .collect();
    confirmed.sort_by_key(|d| d.side.index());
    assert_eq!(shown.deployments, confirmed, "the reveal's deployments");
    let started: Vec<(Node, Piece)> = log
        .iter()
        .find_map(|e| match e {
            Event::PlayStarted { pieces } => Some(pieces.clone()),
            _ => None,
        })
        .unwrap_or_default();
    let listed: Vec<(Node, Piece)> = shown
        .pieces
        .iter()
        .map(|p| {
            let kind = p.kind.expect("the reveal shows every kind");
            (
                p.node,
                Piece {
                    side: p.side,
                    kind,
                    id: p.id,
                },
            )
        })
        .collect();
    assert_eq!(
        listed, started,
        "the reveal's pieces are the starting board"
    );
    let by_id: BTreeMap<PieceId, Piece> = listed.iter().map(|&(_, p)| (p.id, p)).collect();
    for event in log {
        if let Event::Moved { piece, combat, .. } = event {
            assert_eq!(by_id.get(&piece.id), Some(piece), "the mover by its id");
            if let Some(c) = combat {
                assert_eq!(
                    by_id.get(&c.defender.id),
                    Some(&c.defender),
                    "the defender by id"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Event-by-event checks of a game.
// ---------------------------------------------------------------------------------------------

/// Checks one event against the game before it (`pre`) and after it (`post`, rebuilt with
/// `Game::apply`).
fn check_event(pre: &Game, event: &Event, post: &Game) {
    let rules = *pre.rules();
    let before = cells_of(pre.position());
    let after = cells_of(post.position());
    if pre.phase() != Phase::Deployment {
        for side in Side::BOTH {
            assert!(
                side_count(&after, side) <= side_count(&before, side),
                "{side}'s piece count rose with {event:?}"
            );
        }
    }
    match event {
        Event::Moved {
            mv,
            piece,
            combat,
            flag_reveal,
        } => {
            let (from, to) = (mv.from.index(), mv.to.index());
            let mover = pre.position().to_move();
            let notation = to_notation(pre.position());
            assert_eq!(Some(*piece), before[from], "the moving piece in {event:?}");
            assert_eq!(piece.side, mover);
            assert!(
                ref_moves(&rules, &before, mover).contains(&(from, to)),
                "{}-{} is not legal in [{notation}]",
                name_of(from),
                name_of(to)
            );
            let target = before[to];
            if let Some(t) = target {
                assert_ne!(
                    t.side, mover,
                    "a move landed on an own piece in [{notation}]"
                );
                assert!(
                    !BOARD.camp[to],
                    "a move attacked into a camp in [{notation}]"
                );
            }
            assert_eq!(
                combat.map(|c| c.defender),
                target,
                "combat iff an enemy is there"
            );
            let mut expected = before;
            expected[from] = None;
            match (target, combat) {
                (None, None) => expected[to] = Some(*piece),
                (Some(defender), Some(c)) => {
                    let judged =
                        ref_judge(&rules, rules.code(piece.kind), rules.code(defender.kind));
                    assert_eq!(
                        (c.attacker_survives, c.defender_survives, c.flag_captured),
                        judged,
                        "{} attacks {} in [{notation}]",
                        rules.code(piece.kind),
                        rules.code(defender.kind)
                    );
                    expected[to] = if judged.0 {
                        Some(*piece)
                    } else if judged.1 {
                        Some(defender)
                    } else {
                        None
                    };
                }
                _ => unreachable!("checked above"),
            }
            assert_eq!(after, expected, "the board after {event:?} in [{notation}]");
            let counter = if combat.is_some() {
                0
            } else {
                pre.position().plies_without_combat() + 1
            };
            assert_eq!(
                post.position().plies_without_combat(),
                counter,
                "the no-combat counter resets exactly on combat"
            );
            assert_eq!(post.position().to_move(), mover.other());
            assert_eq!(post.plies(), pre.plies() + 1);
            // flag-reveal: the flags of a side whose commander this fight removed.
            let mut expected_reveal: BTreeMap<Side, Vec<(Node, PieceId)>> = BTreeMap::new();
            if rules.flag_revealed_when_commander_dies {
                for side in Side::BOTH {
                    if commander_count(&before, &rules, side) > 0
                        && commander_count(&after, &rules, side) == 0
                        && !pre.flag_revealed(side)
                    {
                        let flags = (0..NODES)
                            .filter_map(|n| after[n].map(|p| (n, p)))
                            .filter(|(_, p)| p.side == side && rules.code(p.kind) == "F")
                            .map(|(n, p)| (Node(n as u8), p.id))
                            .collect();
                        expected_reveal.insert(side, flags);
                    }
                }
            }
            let actual: BTreeMap<Side, Vec<(Node, PieceId)>> = flag_reveal
                .iter()
                .map(|r| (r.side, r.flags.clone()))
                .collect();
            assert_eq!(actual.len(), flag_reveal.len(), "one reveal per side");
            assert_eq!(actual, expected_reveal, "flag reveal of {event:?}");
        }
        Event::TimedOut { side, count } => {
            assert_eq!(*side, pre.position().to_move());
            assert_eq!(*count, pre.timeouts(*side) + 1);
            assert_eq!(post.timeouts(*side), *count);
            assert_eq!(after, before, "a timeout moves nothing");
            assert_eq!(
                post.position().plies_without_combat(),
                pre.position().plies_without_combat() + 1,
                "a timeout counts for the no-combat limit"
            );
            assert_eq!(post.position().to_move(), side.other());
            assert_eq!(post.plies(), pre.plies() + 1);
        }
        Event::PlayStarted { pieces } => {
            assert!(pre.confirmed(Side::South) && pre.confirmed(Side::North));
            let ids: BTreeSet<PieceId> = pieces.iter().map(|(_, p)| p.id).collect();
            assert_eq!(ids.len(), pieces.len(), "piece ids are unique");
            assert_eq!(pieces.len(), 2 * rules.pieces_per_side());
            let mut expected: Vec<(Node, Side, PieceKind)> = Side::BOTH
                .into_iter()
                .flat_map(|s| {
                    let d = pre.deployment(s).expect("a confirmed deployment");
                    assert_eq!(d.side, s);
                    d.placements.iter().map(move |&(n, k)| (n, s, k))
                })
                .collect();
            let mut got: Vec<(Node, Side, PieceKind)> =
                pieces.iter().map(|(n, p)| (*n, p.side, p.kind)).collect();
            expected.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, expected, "play starts from the confirmed deployments");
            let mut board = [None; NODES];
            for (n, p) in pieces {
                board[n.index()] = Some(*p);
            }
            assert_eq!(after, board);
            assert_eq!(post.position().to_move(), pre.first_mover());
            assert_eq!(post.position().plies_without_combat(), 0);
            assert_eq!(post.phase(), Phase::Play);
        }
        Event::Ended { outcome, pieces } => {
            let shown: Vec<(Node, Piece)> = pre.position().pieces().collect();
            assert_eq!(*pieces, shown, "the end reveals the final board");
            assert_eq!(post.outcome(), Some(*outcome));
            assert_eq!(post.phase(), Phase::Ended);
        }
        // (Whether a lapse fits is checked per command: the move before it already cleared it.)
        Event::DrawLapsed { side } => assert_ne!(post.draw_offer(), Some(*side)),
        Event::DrawDeclined { side } => {
            assert_eq!(pre.draw_offer(), Some(side.other()));
            assert_eq!(post.draw_offer(), None);
        }
        Event::DrawOffered { side } => assert_eq!(post.draw_offer(), Some(*side)),
        Event::DeploymentConfirmed { side, .. } => assert!(post.confirmed(*side)),
        Event::SeatLost { side } => assert!(post.seats_lost()[side.index()]),
        Event::Created { .. } | Event::DeploymentDrafted { .. } | Event::Resigned { .. } => {}
    }
    if pre.phase() == Phase::Play && !matches!(event, Event::Ended { .. }) {
        assert_eq!(post.phase(), Phase::Play, "only an end event ends a game");
    }
    check_projection(event, post);
}

// ---------------------------------------------------------------------------------------------
// Random games.
// ---------------------------------------------------------------------------------------------

/// How a random game is driven (rates per thousand plies, or percent).
#[derive(Debug, Clone, Copy)]
struct Style {
    timeout_permille: u32,
    offer_permille: u32,
    answer_percent: u32,
    accept_percent: u32,
    refused_permille: u32,
    /// How often a move is drawn among the attacks rather than among all moves.
    aggression_percent: u32,
}

fn style() -> impl Strategy<Value = Style> {
    (0u32..10, 0u32..40, 0u32..50, 0u32..15, 0u32..60, 0u32..100).prop_map(
        |(timeout, offer, answer, accept, refused, aggression)| Style {
            timeout_permille: timeout,
            offer_permille: offer,
            answer_percent: answer,
            accept_percent: accept,
            refused_permille: refused,
            aggression_percent: aggression,
        },
    )
}

struct Run {
    rng: GameRng,
    pick: GameRng,
    game: Game,
    /// The same game rebuilt event by event with `Game::apply`.
    shadow: Game,
    log: Vec<Event>,
    snapshot: Option<(usize, Game)>,
    last_offer: [Option<u32>; 2],
}

impl Run {
    fn side(&mut self) -> Side {
        Side::BOTH[self.pick.below(2) as usize]
    }

    /// Sends a command; checks a refusal changes nothing, and checks each event of a success.
    fn command(&mut self, command: &Command) -> Result<Vec<Event>, GameError> {
        let before = self.game.clone();
        let result = self.game.handle(command, &mut self.rng);
        match &result {
            Err(_) => assert_eq!(
                self.game, before,
                "the refused {command:?} changed the game"
            ),
            Ok(events) => {
                assert!(!events.is_empty(), "{command:?} caused no event");
                for event in events {
                    let pre = self.shadow.clone();
                    self.shadow
                        .apply(event)
                        .unwrap_or_else(|e| panic!("replaying {event:?} fails: {e}"));
                    check_event(&pre, event, &self.shadow);
                    self.log.push(event.clone());
                }
                assert_eq!(
                    self.shadow, self.game,
                    "applying the events of {command:?} gives another game"
                );
                assert_eq!(self.game.event_count(), self.log.len() as u64);
            }
        }
        result
    }

    fn deploy(&mut self) {
        check_views(&self.game);
        for _ in 0..self.pick.below(3) {
            let side = self.side();
            self.command(&Command::Reshuffle { side })
                .expect("a reshuffle before confirming");
        }
        // A swap of two random squares of the own half: legal or refused, either is fine.
        let side = self.side();
        let half: Vec<usize> = (0..NODES)
            .filter(|&n| (n < NODES / 2) == (side == Side::South))
            .collect();
        let (a, b) = (
            half[self.pick.below(half.len() as u32) as usize],
            half[self.pick.below(half.len() as u32) as usize],
        );
        let _ = self.command(&Command::Swap {
            side,
            a: Node(a as u8),
            b: Node(b as u8),
        });
        check_views(&self.game);
        let first = self.side();
        self.command(&Command::Confirm { side: first })
            .expect("confirm");
        assert!(
            self.command(&Command::Confirm { side: first }).is_err(),
            "confirming twice"
        );
        assert!(
            self.command(&Command::Reshuffle { side: first }).is_err(),
            "a reshuffle after confirming"
        );
        check_views(&self.game);
        self.command(&Command::Confirm {
            side: first.other(),
        })
        .expect("confirm");
    }

    fn step(&mut self, style: Style) {
        let rules = *self.game.rules();
        let position = *self.game.position();
        check_move_generation(&position, &mut self.pick);
        check_views(&self.game);
        let to_move = position.to_move();
        let plies = self.game.plies();
        if self.snapshot.is_none() && self.pick.below(200) == 0 {
            self.snapshot = Some((self.log.len(), self.game.clone()));
        }

        // Draw offers, from either side at any time.
        if self.pick.below(1000) < style.offer_permille {
            let side = self.side();
            let pending = self.game.draw_offer();
            let cooled = self.last_offer[side.index()]
                .is_none_or(|last| plies - last >= u32::from(rules.draw_offer_cooldown_plies));
            let result = self.command(&Command::OfferDraw { side });
            if !cooled || pending == Some(side) {
                assert!(
                    result.is_err(),
                    "{side} offered again too soon: {pending:?}"
                );
            } else if pending.is_none() {
                assert!(result.is_ok(), "{side} may offer a draw: {result:?}");
            }
            if result.is_ok() {
                self.last_offer[side.index()] = Some(plies);
                assert_eq!(self.game.draw_offer(), Some(side));
            }
        }
        if let Some(offerer) = self.game.draw_offer() {
            assert!(
                self.command(&Command::AnswerDraw {
                    side: offerer,
                    accept: true
                })
                .is_err(),
                "answering one's own offer"
            );
            if self.pick.below(100) < style.answer_percent {
                let accept = self.pick.below(100) < style.accept_percent;
                self.command(&Command::AnswerDraw {
                    side: offerer.other(),
                    accept,
                })
                .expect("answering a pending offer");
                if accept {
                    assert_eq!(
                        self.game.outcome(),
                        Some(Outcome::draw(EndReason::AgreedDraw))
                    );
                    return;
                }
                assert_eq!(self.game.draw_offer(), None);
            }
        } else {
            let side = self.side();
            assert!(
                self.command(&Command::AnswerDraw { side, accept: true })
                    .is_err(),
                "answering no offer"
            );
        }

        let cells = cells_of(&position);
        let legal: Vec<(usize, usize)> = ref_moves(&rules, &cells, to_move).into_iter().collect();
        assert!(!legal.is_empty(), "a side to move in play has a legal move");

        // Refused commands: the wrong side, a non-move.
        if self.pick.below(1000) < style.refused_permille {
            let other_moves: Vec<(usize, usize)> = ref_moves(&rules, &cells, to_move.other())
                .into_iter()
                .collect();
            if !other_moves.is_empty() {
                let (f, t) = other_moves[self.pick.below(other_moves.len() as u32) as usize];
                let result = self.command(&Command::Move {
                    side: to_move.other(),
                    mv: mv(f, t),
                });
                assert!(
                    matches!(result, Err(GameError::NotYourTurn(..))),
                    "{result:?}"
                );
            }
            let result = self.command(&Command::Timeout {
                side: to_move.other(),
            });
            assert!(
                matches!(result, Err(GameError::NotYourTurn(..))),
                "{result:?}"
            );
            let (f, t) = (self.pick.below(64) as usize, self.pick.below(64) as usize);
            if !legal.contains(&(f, t)) {
                let result = self.command(&Command::Move {
                    side: to_move,
                    mv: mv(f, t),
                });
                assert!(
                    matches!(result, Err(GameError::IllegalMove(_))),
                    "{result:?}"
                );
            }
        }

        let offer_before = self.game.draw_offer();
        let (events, expected) = if self.pick.below(1000) < style.timeout_permille {
            let count = self.game.timeouts(to_move) + 1;
            let events = self
                .command(&Command::Timeout { side: to_move })
                .expect("a timeout of the side to move");
            let expected = if count >= rules.timeouts_to_forfeit {
                Some(Outcome::win(to_move.other(), EndReason::Timeouts))
            } else {
                ref_turn_start_outcome(self.game.position())
            };
            (events, expected)
        } else {
            let attacks: Vec<(usize, usize)> = legal
                .iter()
                .copied()
                .filter(|&(_, t)| cells[t].is_some())
                .collect();
            let flag_attacks: Vec<(usize, usize)> = attacks
                .iter()
                .copied()
                .filter(|&(_, t)| cells[t].is_some_and(|p| rules.code(p.kind) == "F"))
                .collect();
            let aggressive = self.pick.below(100) < style.aggression_percent;
            let choice = if aggressive && !flag_attacks.is_empty() {
                &flag_attacks
            } else if aggressive && !attacks.is_empty() {
                &attacks
            } else {
                &legal
            };
            let (f, t) = choice[self.pick.below(choice.len() as u32) as usize];
            let events = self
                .command(&Command::Move {
                    side: to_move,
                    mv: mv(f, t),
                })
                .expect("a legal move");
            let captured = events
                .iter()
                .any(|e| matches!(e, Event::Moved { combat: Some(c), .. } if c.flag_captured));
            let expected = if captured {
                Some(Outcome::win(to_move, EndReason::FlagCaptured))
            } else {
                ref_turn_start_outcome(self.game.position())
            };
            (events, expected)
        };
        assert_eq!(
            self.game.outcome(),
            expected,
            "the outcome after {events:?}, now [{}]",
            to_notation(self.game.position())
        );
        assert_eq!(self.game.phase() == Phase::Ended, expected.is_some());
        // An offer to the side that just finished its turn lapses; the offerer's own stays.
        let lapsed = events.iter().any(|e| matches!(e, Event::DrawLapsed { .. }));
        assert_eq!(lapsed, offer_before == Some(to_move.other()), "{events:?}");
        if self.game.phase() == Phase::Play {
            let still = if offer_before == Some(to_move) {
                Some(to_move)
            } else {
                None
            };
            assert_eq!(self.game.draw_offer(), still);
        }
    }

    fn finish(&mut self) {
        let game = self.game.clone();
        assert_eq!(game.phase(), Phase::Ended);
        let outcome = game.outcome().expect("an ended game has an outcome");
        match self.log.last() {
            Some(Event::Ended {
                outcome: logged, ..
            }) => assert_eq!(*logged, outcome),
            other => panic!("the log ends with {other:?}"),
        }
        let replayed = Game::replay(&self.log).expect("the log replays");
        assert_eq!(replayed, game, "Game::replay of the whole log");
        if let Some((len, snapshot)) = &self.snapshot {
            let replayed = Game::replay(&self.log[..*len]).expect("a prefix replays");
            assert_eq!(&replayed, snapshot, "Game::replay of a prefix");
        }
        check_views(&game);
        check_reveal(&game, &self.log);
        for event in &self.log {
            check_projection(event, &game);
        }
        // Nothing more happens after the end.
        let side = self.side();
        for command in [
            Command::Timeout { side },
            Command::OfferDraw { side },
            Command::Move {
                side,
                mv: mv(node_of("A6"), node_of("A7")),
            },
        ] {
            assert!(self.command(&command).is_err(), "{command:?} after the end");
        }
    }
}

/// Plays and checks one random game; returns it with its log.
fn play_random_game(
    rules: Rules,
    seed: u64,
    first_mover: Side,
    style: Style,
) -> (Game, Vec<Event>) {
    let mut rng = GameRng::from_seed(seed);
    let (game, events) = Game::create(rules, first_mover, &mut rng);
    assert_eq!(events[0], Event::Created { rules, first_mover });
    let shadow = Game::replay(&events).expect("the creation events replay");
    assert_eq!(shadow, game);
    for event in &events {
        check_projection(event, &game);
    }
    let mut run = Run {
        rng,
        pick: GameRng::from_seed(seed ^ 0x9E37_79B9_7F4A_7C15),
        game,
        shadow,
        log: events,
        snapshot: None,
        last_offer: [None; 2],
    };
    run.deploy();
    while run.game.phase() == Phase::Play {
        assert!(
            run.game.plies() < MAX_PLIES,
            "the game has not ended after {MAX_PLIES} plies"
        );
        run.step(style);
    }
    run.finish();
    check_following(&run.log);
    (run.game, run.log)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_games_with_default_rules(
        seed in any::<u64>(),
        north_first in any::<bool>(),
        style in style(),
    ) {
        let first = if north_first { Side::North } else { Side::South };
        play_random_game(Rules::default(), seed, first, style);
    }

    #[test]
    fn random_games_with_house_rules(
        seed in any::<u64>(),
        north_first in any::<bool>(),
        style in style(),
    ) {
        let first = if north_first { Side::North } else { Side::South };
        let rules = Rules::parse(HOUSE_RULES).expect("house rules");
        play_random_game(rules, seed, first, style);
    }
}

/// What a set of games went through, so the deterministic games below can show that the
/// properties were exercised on every kind of ending and fight.
#[derive(Debug, Default)]
struct Coverage {
    endings: BTreeSet<&'static str>,
    fights: BTreeSet<(&'static str, &'static str, bool, bool)>,
    flag_reveals: usize,
    left_hq: usize,
    timeouts: usize,
    lapses: usize,
    declines: usize,
}

impl Coverage {
    fn add(&mut self, game: &Game, log: &[Event]) {
        let rules = game.rules();
        let hq = |n: Node| BOARD.hq[n.index()];
        self.endings
            .insert(game.outcome().expect("ended").reason.name());
        for event in log {
            match event {
                Event::Moved {
                    mv,
                    piece,
                    combat,
                    flag_reveal,
                } => {
                    if let Some(c) = combat {
                        self.fights.insert((
                            rules.code(piece.kind),
                            rules.code(c.defender.kind),
                            c.attacker_survives,
                            c.defender_survives,
                        ));
                    }
                    self.flag_reveals += flag_reveal.len();
                    self.left_hq += usize::from(hq(mv.from));
                }
                Event::TimedOut { .. } => self.timeouts += 1,
                Event::DrawLapsed { .. } => self.lapses += 1,
                Event::DrawDeclined { .. } => self.declines += 1,
                _ => {}
            }
        }
    }

    fn fought(&self, attacker: &str, defender: &str, survivors: (bool, bool)) -> bool {
        self.fights
            .iter()
            .any(|&(a, d, x, y)| a == attacker && d == defender && (x, y) == survivors)
    }
}

#[test]
fn deterministic_random_games_cover_every_ending_and_fight() {
    let aggressive = Style {
        timeout_permille: 2,
        offer_permille: 20,
        answer_percent: 30,
        accept_percent: 5,
        refused_permille: 10,
        aggression_percent: 90,
    };
    let calm = Style {
        timeout_permille: 12,
        offer_permille: 40,
        answer_percent: 40,
        accept_percent: 10,
        refused_permille: 10,
        aggression_percent: 0,
    };
    let house = Rules::parse(HOUSE_RULES).expect("house rules");
    let mut default_cov = Coverage::default();
    let mut house_cov = Coverage::default();
    for seed in 0..GAMES_PER_RULES {
        let style = if seed % 2 == 0 { aggressive } else { calm };
        let first = Side::BOTH[(seed / 2 % 2) as usize];
        let (game, log) = play_random_game(Rules::default(), seed, first, style);
        default_cov.add(&game, &log);
        let (game, log) = play_random_game(house, seed, first, style);
        house_cov.add(&game, &log);
    }
    let report = format!("default: {default_cov:?}\nhouse: {house_cov:?}");
    for ending in ["flag_captured", "no_legal_moves", "agreed_draw", "timeouts"] {
        assert!(default_cov.endings.contains(ending), "{ending}\n{report}");
        assert!(house_cov.endings.contains(ending), "{ending}\n{report}");
    }
    assert!(house_cov.endings.contains("no_combat_100"), "{report}");
    for cov in [&default_cov, &house_cov] {
        assert!(
            cov.fought("1", "M", (true, false)),
            "an engineer clears a mine\n{report}"
        );
        assert!(cov.fought("9", "9", (false, false)) || cov.fought("7", "7", (false, false)));
        assert!(
            cov.timeouts > 0 && cov.lapses > 0 && cov.declines > 0,
            "{report}"
        );
    }
    assert!(default_cov.fought("5", "M", (false, false)), "{report}");
    assert!(
        house_cov.fought("5", "M", (false, true)),
        "a sturdy mine holds\n{report}"
    );
    assert!(house_cov.flag_reveals > 0, "{report}");
    assert!(house_cov.left_hq > 0, "{report}");
    assert_eq!(
        default_cov.flag_reveals + default_cov.left_hq,
        0,
        "{report}"
    );
}

#[test]
fn every_fight_is_judged_as_the_reference_says() {
    // Every attacker kind against every defender kind, through `Position::play`, under both rule
    // sets: the fight, the board after it and the outcome.
    for rules in [
        Rules::default(),
        Rules::parse(HOUSE_RULES).expect("house rules"),
    ] {
        for &(attacker, a_code, _) in rules.kinds() {
            if !rules.kind_moves(attacker) {
                continue;
            }
            for (&(defender, d_code, _), others) in
                rules.kinds().iter().flat_map(|k| [(k, true), (k, false)])
            {
                let mut position = Position::empty(rules, Side::South);
                let piece = |side, kind, id| Piece {
                    side,
                    kind,
                    id: PieceId(id),
                };
                let (from, to) = (node_of("A6"), node_of("A7"));
                let five = rules.parse_kind("5").expect("5");
                position.put(Node(from as u8), piece(Side::South, attacker, 1));
                position.put(Node(to as u8), piece(Side::North, defender, 2));
                // With other pieces both sides can move on; without, the defender's side may be
                // left with no move, which a flag capture outranks.
                if others {
                    position.put(Node(node_of("E1") as u8), piece(Side::South, five, 3));
                    position.put(Node(node_of("E12") as u8), piece(Side::North, five, 4));
                }
                let before = cells_of(&position);
                let report = position.play(mv(from, to)).expect("an attack");
                let judged = ref_judge(&rules, a_code, d_code);
                let combat = report.combat.expect("a fight");
                assert_eq!(
                    (
                        combat.attacker_survives,
                        combat.defender_survives,
                        combat.flag_captured
                    ),
                    judged,
                    "{a_code} attacks {d_code} under {rules}"
                );
                let mut expected = before;
                expected[from] = None;
                expected[to] = if judged.0 {
                    before[from]
                } else if judged.1 {
                    before[to]
                } else {
                    None
                };
                assert_eq!(cells_of(&position), expected, "{a_code} attacks {d_code}");
                let outcome = if judged.2 {
                    Some(Outcome::win(Side::South, EndReason::FlagCaptured))
                } else {
                    ref_turn_start_outcome(&position)
                };
                assert_eq!(
                    report.outcome, outcome,
                    "{a_code} attacks {d_code} under {rules}"
                );
                assert_eq!(position.plies_without_combat(), 0);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Arbitrary positions (not reachable from a deployment): pieces anywhere, HQs included.
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn move_generator_matches_reference_on_arbitrary_positions(
        placements in prop::collection::vec((0u8..60, any::<bool>(), 0usize..16), 0..50),
        north_to_move in any::<bool>(),
        hq_mobile in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let rules = if hq_mobile {
            Rules::parse("hidden-front+hq-mobile").expect("rules")
        } else {
            Rules::default()
        };
        let to_move = if north_to_move { Side::North } else { Side::South };
        let mut position = Position::empty(rules, to_move);
        let kinds = rules.kinds();
        for (i, (node, north, k)) in placements.into_iter().enumerate() {
            // Kinds 12..16 are extra engineers, to exercise rail paths.
            let kind = kinds.get(k).map_or(rules.parse_kind("1").expect("engineer"), |e| e.0);
            let side = if north { Side::North } else { Side::South };
            position.put(Node(node), Piece { side, kind, id: PieceId(i as u8) });
        }
        check_move_generation(&position, &mut GameRng::from_seed(seed));
    }
}

// ---------------------------------------------------------------------------------------------
// Piece ids.
// ---------------------------------------------------------------------------------------------

#[test]
fn piece_ids_are_unique_and_carry_nothing_of_kind_side_or_square() {
    const GAMES: u64 = 2000;
    let rules = Rules::default();
    let mut all = (0f64, 0f64);
    let mut by_kind: BTreeMap<(Side, PieceKind), (f64, f64)> = BTreeMap::new();
    let mut by_square: BTreeMap<Node, (f64, f64)> = BTreeMap::new();
    let mut by_side: BTreeMap<Side, (f64, f64)> = BTreeMap::new();
    let mut commander_histogram: BTreeMap<u8, u32> = BTreeMap::new();
    let mut seen_ids: BTreeSet<u8> = BTreeSet::new();
    let add = |acc: &mut (f64, f64), id: PieceId| {
        acc.0 += f64::from(id.0);
        acc.1 += 1.0;
    };
    for seed in 0..GAMES {
        let mut rng = GameRng::from_seed(seed);
        let first = Side::BOTH[(seed % 2) as usize];
        let (mut game, _) = Game::create(rules, first, &mut rng);
        game.handle(&Command::Confirm { side: Side::South }, &mut rng)
            .expect("confirm");
        let events = game
            .handle(&Command::Confirm { side: Side::North }, &mut rng)
            .expect("confirm");
        let pieces = events
            .iter()
            .find_map(|e| match e {
                Event::PlayStarted { pieces } => Some(pieces.clone()),
                _ => None,
            })
            .expect("play starts");
        let ids: BTreeSet<PieceId> = pieces.iter().map(|(_, p)| p.id).collect();
        assert_eq!(ids.len(), pieces.len(), "piece ids are unique");
        for (node, piece) in pieces {
            add(&mut all, piece.id);
            seen_ids.insert(piece.id.0);
            add(
                by_kind.entry((piece.side, piece.kind)).or_default(),
                piece.id,
            );
            add(by_square.entry(node).or_default(), piece.id);
            add(by_side.entry(piece.side).or_default(), piece.id);
            if rules.code(piece.kind) == "9" {
                *commander_histogram.entry(piece.id.0).or_default() += 1;
            }
        }
    }
    let mean = |acc: &(f64, f64)| acc.0 / acc.1;
    let middle = mean(&all);
    // Ids 0..50 have a standard deviation of about 14.4; over 2000 or more samples a mean's
    // standard error is at most 0.33, so +-3 is a band of 9 standard errors, never flaky (and the
    // seeds are fixed), while ids in any order of kind, side or square miss it by far.
    let band = 3.0;
    for ((side, kind), acc) in &by_kind {
        assert!(
            (mean(acc) - middle).abs() < band,
            "the mean id of {side}'s {} is {:.2}, the middle {middle:.2}",
            rules.code(*kind),
            mean(acc)
        );
    }
    assert_eq!(by_square.len(), 50, "every deployment square is used");
    for (node, acc) in &by_square {
        assert!(
            (mean(acc) - middle).abs() < band,
            "the mean id of the piece on {} is {:.2}, the middle {middle:.2}",
            name_of(node.index()),
            mean(acc)
        );
    }
    for (side, acc) in &by_side {
        assert!((mean(acc) - middle).abs() < 1.0, "{side}: {:.2}", mean(acc));
    }
    // The commanders' ids spread evenly over every id used: with 50 ids, 4000 samples give 80
    // per id (standard deviation about 9); the band is 0.375x to 1.875x the expectation.
    let samples: u32 = commander_histogram.values().sum();
    let expected = f64::from(samples) / seen_ids.len() as f64;
    for id in &seen_ids {
        let count = f64::from(commander_histogram.get(id).copied().unwrap_or(0));
        assert!(
            (0.375 * expected..=1.875 * expected).contains(&count),
            "the commander got id {id} {count} times in {samples} samples ({expected:.1} expected)"
        );
    }
}
