//! Gunjin Shogi (軍人将棋): its boards, its move generator and its strength table, plugged into
//! [`crate::Position`] through [`crate::Family::GunjinShogi`].
//!
//! The boards are data like Junqi's: nodes are numbered by grid cell (`a1` = 0, row-major), the
//! second cell of each two-cell HQ is not a node (the HQ is the node of its west cell, named
//! `d1+e1`), and every straight step, gate crossing included, is a table entry
//! ([`Topology::steps`]). A move generator for a slider walks those tables direction by direction;
//! a path forks where a gate or the HQ offers two landing squares.

use crate::piece::PieceKind;
use crate::piece::gunjin::*;
use crate::position::Position;
use crate::rules::{GunjinBoard, Rules};
use crate::side::Side;
use crate::topology::{Node, Nodes, RAY_DIRECTIONS, Topology};
use std::sync::LazyLock;

const EAST: usize = 0;
const NORTH: usize = 1;
const WEST: usize = 2;
const SOUTH: usize = 3;

/// Ranks of every Gunjin Shogi board; the wall runs between ranks 4 and 5.
const RANKS: u8 = 8;

/// The board of a Gunjin Shogi edition and wall.
pub fn topology(board: GunjinBoard) -> &'static Topology {
    static X: LazyLock<Topology> = LazyLock::new(|| build(GunjinBoard::XGates));
    static Y: LazyLock<Topology> = LazyLock::new(|| build(GunjinBoard::YGates));
    static I: LazyLock<Topology> = LazyLock::new(|| build(GunjinBoard::IGates));
    static SMALL: LazyLock<Topology> = LazyLock::new(|| build(GunjinBoard::Pieces23));
    match board {
        GunjinBoard::XGates => &X,
        GunjinBoard::YGates => &Y,
        GunjinBoard::IGates => &I,
        GunjinBoard::Pieces23 => &SMALL,
    }
}

/// The gate links of a board as `(south square, north square)` pairs, by name.
fn gate_links(board: GunjinBoard) -> &'static [(&'static str, &'static str)] {
    match board {
        GunjinBoard::XGates => &[
            ("a4", "a5"),
            ("a4", "c5"),
            ("c4", "a5"),
            ("c4", "c5"),
            ("f4", "f5"),
            ("f4", "h5"),
            ("h4", "f5"),
            ("h4", "h5"),
        ],
        GunjinBoard::YGates => &[("b4", "a5"), ("b4", "c5"), ("f4", "g5"), ("h4", "g5")],
        GunjinBoard::IGates => &[("b4", "b5"), ("g4", "g5")],
        GunjinBoard::Pieces23 => &[("b4", "b5"), ("e4", "e5")],
    }
}

fn build(board: GunjinBoard) -> Topology {
    let columns: u8 = if board == GunjinBoard::Pieces23 { 6 } else { 8 };
    // The HQ spans the two middle files; its node is the west cell's number.
    let hq_west = columns / 2 - 1;
    let cell = |c: u8, r: u8| (r - 1) * columns + c;
    let is_hole = |c: u8, r: u8| c == hq_west + 1 && (r == 1 || r == RANKS);
    let node_of = |c: u8, r: u8| {
        if is_hole(c, r) {
            cell(hq_west, r)
        } else {
            cell(c, r)
        }
    };
    let parse = |name: &str| {
        let b = name.as_bytes();
        (b[0] - b'a', b[1] - b'0')
    };

    let mut names = vec![String::new(); (columns * RANKS) as usize];
    let mut all = 0u64;
    let mut half = [0u64; 2];
    let mut front_row = [0u64; 2];
    let mut back_rows = [0u64; 2];
    for r in 1..=RANKS {
        for c in 0..columns {
            if is_hole(c, r) {
                continue;
            }
            let n = cell(c, r);
            let file = (b'a' + c) as char;
            names[n as usize] = if c == hq_west && (r == 1 || r == RANKS) {
                format!("{file}{r}+{}{r}", (b'a' + c + 1) as char)
            } else {
                format!("{file}{r}")
            };
            let bit = 1u64 << n;
            all |= bit;
            let side = usize::from(r > 4);
            half[side] |= bit;
            if r == 4 || r == 5 {
                front_row[side] |= bit;
            }
            if r == 1 || r == RANKS {
                back_rows[side] |= bit;
            }
        }
    }
    let hq = [1u64 << cell(hq_west, 1), 1u64 << cell(hq_west, RANKS)];

    let mut crossings = [[0u64; 2]; 64]; // per node: north landing squares, south landing squares
    let mut gates = [0u64; 2];
    for &(south, north) in gate_links(board) {
        let (sc, sr) = parse(south);
        let (nc, nr) = parse(north);
        let (s, n) = (cell(sc, sr), cell(nc, nr));
        crossings[s as usize][0] |= 1 << n;
        crossings[n as usize][1] |= 1 << s;
        gates[0] |= 1 << s;
        gates[1] |= 1 << n;
    }

    let mut steps = [[0u64; RAY_DIRECTIONS]; 64];
    let mut files = [0u64; 64];
    let mut behind = [[0u64; 2]; 64];
    for r in 1..=RANKS {
        for c in 0..columns {
            let me = node_of(c, r);
            let n = me as usize;
            let own = 1u64 << me;
            for (dir, (dc, dr)) in [(1i8, 0i8), (0, 1), (-1, 0), (0, -1)]
                .into_iter()
                .enumerate()
            {
                let (tc, tr) = (c as i8 + dc, r as i8 + dr);
                if !(0..columns as i8).contains(&tc) || !(1..=RANKS as i8).contains(&tr) {
                    continue;
                }
                let (tc, tr) = (tc as u8, tr as u8);
                let to = if (r == 4 && tr == 5) || (r == 5 && tr == 4) {
                    crossings[cell(c, r) as usize][usize::from(r == 5)]
                } else {
                    1u64 << node_of(tc, tr)
                };
                steps[n][dir] |= to & !own;
            }
            for rr in 1..=RANKS {
                files[n] |= 1u64 << node_of(c, rr);
            }
            files[n] &= !own;
            if r > 1 {
                behind[n][0] |= 1u64 << node_of(c, r - 1);
            }
            if r < RANKS {
                behind[n][1] |= 1u64 << node_of(c, r + 1);
            }
        }
    }
    // The HQ node is one square: what is behind it is nothing (it is on the back rank).
    behind[hq[0].trailing_zeros() as usize][0] = 0;
    behind[hq[1].trailing_zeros() as usize][1] = 0;
    Topology::from_steps(
        columns, RANKS, names, all, steps, files, behind, hq, half, front_row, back_rows, gates,
    )
}

/// The longest slide an engineer can make: the board's longest straight line.
const ENGINEER_REACH: u32 = 16;

/// Every destination of the movable piece of `side` on `from`.
#[inline]
pub(crate) fn destinations(position: &Position, from: Node, side: Side) -> u64 {
    let topo = position.topology();
    let own = position.occupied(side);
    let open = topo.all & !own;
    let f = from.index();
    match position.kind_at(from) {
        PLANE => (topo.files[f] | topo.steps[f][EAST] | topo.steps[f][WEST]) & open,
        TANK | CAVALRY => slides(position, from, open, 2),
        ENGINEER => slides(position, from, open, ENGINEER_REACH),
        _ => topo.neighbors[f] & open,
    }
}

/// Straight moves of at most `reach` steps in each direction through empty nodes, ending on an
/// empty node or the first enemy piece. Paths fork where a step has two landing nodes.
#[inline]
fn slides(position: &Position, from: Node, open: u64, reach: u32) -> u64 {
    let topo = position.topology();
    let empty = topo.all & !(position.occupied(Side::South) | position.occupied(Side::North));
    let mut dest = 0;
    for dir in [EAST, NORTH, WEST, SOUTH] {
        let mut frontier = from.bit();
        for _ in 0..reach {
            let next = Nodes(frontier).fold(0, |m, n| m | topo.steps[n.index()][dir]);
            dest |= next & open;
            frontier = next & empty;
            if frontier == 0 {
                break;
            }
        }
    }
    dest
}

/// Whether `side` has any legal move: a one-step move (every slide starts with one) or a flight.
pub(crate) fn has_legal_move(position: &Position, side: Side) -> bool {
    let topo = position.topology();
    let open = topo.all & !position.occupied(side);
    Nodes(position.movable(side)).any(|n| {
        topo.neighbors[n.index()] & open != 0
            || (position.kind_at(n) == PLANE && topo.files[n.index()] & open != 0)
    })
}

/// The kind a defender fights as: itself, or for a flag the own piece directly behind it. `None`
/// when a flag has no own piece behind it (it loses to any attacker).
pub(crate) fn defending_kind(position: &Position, at: Node, side: Side) -> Option<PieceKind> {
    let kind = position.kind_at(at);
    if kind != FLAG {
        return Some(kind);
    }
    let behind = position.topology().behind[at.index()][side.index()] & position.occupied(side);
    Nodes(behind)
        .next()
        .map(|n| position.kind_at(n))
        .filter(|&k| k != FLAG)
}

/// The result of one fight for the attacker: it wins (the defender is removed), loses (the
/// attacker is removed) or both are removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fight {
    /// The attacker survives, the defender is removed.
    Wins,
    /// The attacker is removed, the defender stays.
    Loses,
    /// Both are removed.
    Both,
}

impl Fight {
    /// The same fight seen from the other piece.
    pub fn reversed(self) -> Fight {
        match self {
            Fight::Wins => Fight::Loses,
            Fight::Loses => Fight::Wins,
            Fight::Both => Fight::Both,
        }
    }
}

const fn is_officer(kind: PieceKind) -> bool {
    kind.0 >= GENERAL.0 && kind.0 <= SECOND_LIEUTENANT.0
}

const fn is_general(kind: PieceKind) -> bool {
    kind.0 >= GENERAL.0 && kind.0 <= MAJOR_GENERAL.0
}

/// Whether a piece of kind `a` beats one of kind `b` (different kinds, neither a mine nor a
/// flag). Each rule of the spec is written for both orders, so `beats(a, b) == !beats(b, a)`.
fn beats(rules: &Rules, a: PieceKind, b: PieceKind) -> bool {
    if a == SPY {
        return b == GENERAL;
    }
    if b == SPY {
        return a != GENERAL;
    }
    if is_officer(a) && is_officer(b) {
        return a.0 < b.0;
    }
    if a == PLANE {
        return !is_general(b);
    }
    if b == PLANE {
        return is_general(a);
    }
    if a == TANK {
        return !(is_general(b) || (b == ENGINEER && !rules.tank_beats_engineer));
    }
    if b == TANK {
        return is_general(a) || (a == ENGINEER && !rules.tank_beats_engineer);
    }
    if a == CAVALRY {
        return b == ENGINEER;
    }
    if b == CAVALRY {
        return a != ENGINEER;
    }
    // Left: an officer against the engineer.
    a != ENGINEER
}

/// The symmetric strength table: how a piece of kind `attacker` fares against one of kind
/// `defender` (who attacks does not matter). A flag here is a flag with no own piece behind it:
/// it loses to anything. The options `tank-beats-engineer` and `mine-survives` apply.
pub fn fight(rules: &Rules, attacker: PieceKind, defender: PieceKind) -> Fight {
    if defender == FLAG {
        return Fight::Wins;
    }
    if attacker == FLAG {
        return Fight::Loses;
    }
    if attacker == defender {
        return Fight::Both;
    }
    if attacker == MINE || defender == MINE {
        let other = if attacker == MINE { defender } else { attacker };
        let other_wins = other == PLANE || other == ENGINEER;
        let seen_by_other = if other_wins {
            Fight::Wins
        } else if rules.mine_survives_kill {
            Fight::Loses
        } else {
            Fight::Both
        };
        return if attacker == MINE {
            seen_by_other.reversed()
        } else {
            seen_by_other
        };
    }
    if beats(rules, attacker, defender) {
        Fight::Wins
    } else {
        Fight::Loses
    }
}

/// Whether a piece of this kind wins by entering the enemy HQ (GEN, LTG, MJG, COL, LTC, MAJ).
#[inline]
pub(crate) const fn takes_hq(kind: PieceKind) -> bool {
    kind.0 >= GENERAL.0 && kind.0 <= MAJOR.0
}
