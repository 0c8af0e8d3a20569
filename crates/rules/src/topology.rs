//! Boards as data: nodes, links, rails, camps and headquarters, built once per board.
//!
//! Every board of every game has at most 64 nodes, so a set of nodes is one `u64` (a bitboard) and
//! every question the move generator asks ("which neighbours are empty?", "where does this rail ray
//! stop?") is a handful of bit operations on tables computed here. Nothing about the board is
//! encoded as conditionals elsewhere in the engine.

use crate::side::Side;
use std::sync::LazyLock;

/// A node (square or point) of a board, numbered `0..node_count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node(pub u8);

impl Node {
    /// The node's bit in a bitboard.
    #[inline]
    pub const fn bit(self) -> u64 {
        1u64 << self.0
    }

    /// The node's number, usable as an array index.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// Iterates the nodes of a bitboard, lowest first.
#[derive(Debug, Clone, Copy)]
pub struct Nodes(pub u64);

impl Iterator for Nodes {
    type Item = Node;
    #[inline]
    fn next(&mut self) -> Option<Node> {
        if self.0 == 0 {
            return None;
        }
        let n = self.0.trailing_zeros() as u8;
        self.0 &= self.0 - 1;
        Some(Node(n))
    }
}

/// The four straight directions of a rail ray. East and north rays visit increasing node numbers,
/// west and south rays decreasing ones; the move generator relies on that to find the first
/// occupied node with one bit scan.
pub const RAY_DIRECTIONS: usize = 4;

/// A node's name as [`Topology::node`] looks it up: its ASCII bytes lowercased, zero-padded.
/// Names are a column letter and a row number (`A12`, `d8`), so four bytes hold every one.
type NameKey = [u8; 4];

/// The key of `name`, or `None` when it cannot be one (empty, longer than a key, not ASCII).
fn name_key(name: &str) -> Option<NameKey> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() > 4 || !name.is_ascii() {
        return None;
    }
    let mut key = [0u8; 4];
    for (k, b) in key.iter_mut().zip(bytes) {
        *k = b.to_ascii_lowercase();
    }
    Some(key)
}

/// The sorted [`NameKey`] index of `names` (`names[n]` names node `n`).
fn name_index(names: &[String]) -> Vec<(NameKey, Node)> {
    let mut index: Vec<(NameKey, Node)> = names
        .iter()
        .enumerate()
        .filter_map(|(n, name)| name_key(name).map(|key| (key, Node(n as u8))))
        .collect();
    index.sort_unstable();
    index
}

/// A board: its nodes, links and special places, as bitboards and per-node tables.
#[derive(Debug, Clone)]
pub struct Topology {
    /// Number of nodes; nodes are `0..node_count`.
    pub node_count: u8,
    /// Columns of the grid the nodes are laid out on (names and notation use it).
    pub columns: u8,
    /// Rows of the grid.
    pub rows: u8,
    names: Vec<String>,
    /// The names that fit a [`NameKey`], lowercase, sorted, with their nodes: a square named in a
    /// request is found by a binary search (every move names two), not by comparing it with every
    /// name in turn.
    by_name: Vec<(NameKey, Node)>,
    /// Every node, as a bitboard.
    pub all: u64,
    /// One-step links from each node (roads and rails alike).
    pub neighbors: [u64; 64],
    /// Nodes on a railway.
    pub rail: u64,
    /// Rail links from each node.
    pub rail_neighbors: [u64; 64],
    /// Straight rail rays from each node: `[east, north, west, south]`.
    pub rays: [[u64; RAY_DIRECTIONS]; 64],
    /// Rail-link masks for shift-based flood fill: bit `n` of `rail_east` means `n`-`n+1` is a rail
    /// link; bit `n` of `rail_north` means `n`-`n+columns` is one.
    pub rail_east: u64,
    /// See `rail_east`.
    pub rail_north: u64,
    /// Camps: a piece there cannot be attacked.
    pub camps: u64,
    /// Headquarters per side.
    pub hq: [u64; 2],
    /// Each side's half (the squares it deploys on, camps included).
    pub half: [u64; 2],
    /// Each side's front row (closest to the enemy).
    pub front_row: [u64; 2],
    /// Each side's two back rows.
    pub back_rows: [u64; 2],
    /// Every link once, as `(lower, higher)` node numbers, sorted.
    pub links: Vec<(Node, Node)>,
    /// Gunjin Shogi: the nodes one straight step away from each node, per direction `[east,
    /// north, west, south]`. More than one bit where a path forks (a gate with two landing squares,
    /// the two-cell HQ going forwards). Empty on boards without such moves (Junqi).
    pub steps: [[u64; RAY_DIRECTIONS]; 64],
    /// Gunjin Shogi: the nodes sharing a file with each node (both files for the HQ), itself
    /// excluded: where a plane may fly.
    pub files: [u64; 64],
    /// Gunjin Shogi: the node directly behind each node for each side's piece (one rank towards
    /// that side's back rank; the HQ when the node is in front of it); 0 on the back rank.
    pub behind: [[u64; 2]; 64],
    /// Gunjin Shogi: each side's gate squares (where the flag and mines may not be deployed).
    pub gates: [u64; 2],
}

impl Topology {
    /// The node's printable name (`A1`..`E12` for Junqi).
    pub fn name(&self, node: Node) -> &str {
        &self.names[node.index()]
    }

    /// Looks a node up by its name, case-insensitively for the column letter. Compares in
    /// place, without an uppercased copy: every square of every deployment and move read from
    /// the wire comes through here.
    pub fn node(&self, name: &str) -> Option<Node> {
        let name = name.trim();
        if name.is_empty() {
            return None;
        }
        if let Some(key) = name_key(name)
            && let Ok(at) = self.by_name.binary_search_by(|(k, _)| k.cmp(&key))
        {
            return Some(self.by_name[at].1);
        }
        self.names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))
            .map(|i| Node(i as u8))
    }

    /// Whether `node` is a node of this board (some boards leave numbers unused, such as the
    /// second cell of a two-cell HQ).
    #[inline]
    pub fn contains(&self, node: Node) -> bool {
        node.0 < 64 && self.all & node.bit() != 0
    }

    /// Builds a board from its parts; `names[n]` is empty for numbers that are not nodes. The
    /// link list and the Junqi rail tables are derived or left empty.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_steps(
        columns: u8,
        rows: u8,
        names: Vec<String>,
        all: u64,
        steps: [[u64; RAY_DIRECTIONS]; 64],
        files: [u64; 64],
        behind: [[u64; 2]; 64],
        hq: [u64; 2],
        half: [u64; 2],
        front_row: [u64; 2],
        back_rows: [u64; 2],
        gates: [u64; 2],
    ) -> Topology {
        let mut neighbors = [0u64; 64];
        for (n, dirs) in steps.iter().enumerate() {
            neighbors[n] = dirs.iter().fold(0, |m, d| m | d);
        }
        let mut links = Vec::new();
        for n in Nodes(all) {
            for m in Nodes(neighbors[n.index()]) {
                if n < m {
                    links.push((n, m));
                }
            }
        }
        let by_name = name_index(&names);
        Topology {
            node_count: columns * rows,
            columns,
            rows,
            names,
            by_name,
            all,
            neighbors,
            rail: 0,
            rail_neighbors: [0; 64],
            rays: [[0; RAY_DIRECTIONS]; 64],
            rail_east: 0,
            rail_north: 0,
            camps: 0,
            hq,
            half,
            front_row,
            back_rows,
            links,
            steps,
            files,
            behind,
            gates,
        }
    }

    /// Whether `a` and `b` are linked (one step).
    pub fn linked(&self, a: Node, b: Node) -> bool {
        self.neighbors[a.index()] & b.bit() != 0
    }

    /// The side whose half holds `node`.
    pub fn owner_of_half(&self, node: Node) -> Side {
        if self.half[0] & node.bit() != 0 {
            Side::South
        } else {
            Side::North
        }
    }

    /// The nodes a side deploys on, lowest first (its half without its camps).
    pub fn deployment_squares(&self, side: Side) -> Nodes {
        Nodes(self.half[side.index()] & !self.camps)
    }
}

/// The Junqi board of the spec: 5 columns x 12 rows, 60 nodes, 133 links.
pub fn junqi() -> &'static Topology {
    static BOARD: LazyLock<Topology> = LazyLock::new(build_junqi);
    &BOARD
}

const JQ_COLUMNS: u8 = 5;
const JQ_ROWS: u8 = 12;

/// Node number of column `col` (0 = A) and row `row` (1-based), on a 5-column board.
const fn jq(col: u8, row: u8) -> u8 {
    (row - 1) * JQ_COLUMNS + col
}

fn build_junqi() -> Topology {
    let columns = JQ_COLUMNS;
    let rows = JQ_ROWS;
    let node_count = columns * rows;
    let names: Vec<String> = (0..node_count)
        .map(|n| format!("{}{}", (b'A' + n % columns) as char, n / columns + 1))
        .collect();
    let mask = |cells: &[(u8, u8)]| cells.iter().fold(0u64, |m, &(c, r)| m | 1u64 << jq(c, r));
    let row_mask = |r: u8| (0..columns).fold(0u64, |m, c| m | 1u64 << jq(c, r));

    let camps_south = [(1, 3), (3, 3), (2, 4), (1, 5), (3, 5)];
    let camps = camps_south.iter().fold(0u64, |m, &(c, r)| {
        m | 1u64 << jq(c, r) | 1u64 << jq(c, 13 - r)
    });
    let hq = [mask(&[(1, 1), (3, 1)]), mask(&[(1, 12), (3, 12)])];
    let half = [
        (1..=6).fold(0, |m, r| m | row_mask(r)),
        (7..=12).fold(0, |m, r| m | row_mask(r)),
    ];

    // Rail links: rows 2, 6, 7, 11 along the row; columns A and E from row 2 to 11; C6-C7.
    let mut rail_links: Vec<(u8, u8)> = Vec::new();
    for r in [2u8, 6, 7, 11] {
        for c in 0..columns - 1 {
            rail_links.push((jq(c, r), jq(c + 1, r)));
        }
    }
    for c in [0u8, 4] {
        for r in 2..11 {
            rail_links.push((jq(c, r), jq(c, r + 1)));
        }
    }
    rail_links.push((jq(2, 6), jq(2, 7)));

    // Road links: every orthogonal pair inside one half, plus the three front crossings (which are
    // rails), plus each camp to its four diagonal neighbours.
    let mut links: Vec<(u8, u8)> = rail_links.clone();
    for r in 1..=rows {
        for c in 0..columns {
            if c + 1 < columns {
                links.push((jq(c, r), jq(c + 1, r)));
            }
            if r < rows && r != 6 {
                links.push((jq(c, r), jq(c, r + 1)));
            }
        }
    }
    for n in 0..node_count {
        if camps & 1u64 << n == 0 {
            continue;
        }
        let (c, r) = ((n % columns) as i8, (n / columns + 1) as i8);
        for (dc, dr) in [(-1i8, -1i8), (1, -1), (-1, 1), (1, 1)] {
            let (nc, nr) = (c + dc, r + dr);
            if (0..columns as i8).contains(&nc) && (1..=rows as i8).contains(&nr) {
                links.push((n, jq(nc as u8, nr as u8)));
            }
        }
    }
    let mut links: Vec<(u8, u8)> = links
        .into_iter()
        .map(|(a, b)| (a.min(b), a.max(b)))
        .collect();
    links.sort_unstable();
    links.dedup();

    let mut neighbors = [0u64; 64];
    for &(a, b) in &links {
        neighbors[a as usize] |= 1 << b;
        neighbors[b as usize] |= 1 << a;
    }
    let mut rail_neighbors = [0u64; 64];
    let mut rail = 0u64;
    let (mut rail_east, mut rail_north) = (0u64, 0u64);
    for &(a, b) in &rail_links {
        rail_neighbors[a as usize] |= 1 << b;
        rail_neighbors[b as usize] |= 1 << a;
        rail |= 1 << a | 1 << b;
        if b == a + 1 {
            rail_east |= 1 << a;
        } else {
            rail_north |= 1 << a;
        }
    }
    // Straight rays: follow rail links in one direction for as long as they continue.
    let mut rays = [[0u64; RAY_DIRECTIONS]; 64];
    for n in 0..node_count {
        for (d, step) in [1i16, columns as i16, -1, -(columns as i16)]
            .into_iter()
            .enumerate()
        {
            let mut cur = n as i16;
            loop {
                let next = cur + step;
                if !(0..node_count as i16).contains(&next) {
                    break;
                }
                let (lo, hi) = (cur.min(next) as u8, cur.max(next) as u8);
                let along = if step.abs() == 1 {
                    rail_east & 1 << lo != 0
                } else {
                    rail_north & 1 << lo != 0
                };
                if !along || hi - lo != step.unsigned_abs() as u8 {
                    break;
                }
                rays[n as usize][d] |= 1 << next;
                cur = next;
            }
        }
    }

    Topology {
        node_count,
        columns,
        rows,
        by_name: name_index(&names),
        names,
        all: (1u64 << node_count) - 1,
        neighbors,
        rail,
        rail_neighbors,
        rays,
        rail_east,
        rail_north,
        camps,
        hq,
        half,
        front_row: [row_mask(6), row_mask(7)],
        back_rows: [row_mask(1) | row_mask(2), row_mask(11) | row_mask(12)],
        links: links.into_iter().map(|(a, b)| (Node(a), Node(b))).collect(),
        steps: [[0; RAY_DIRECTIONS]; 64],
        files: [0; 64],
        behind: [[0; 2]; 64],
        gates: [0; 2],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_in_either_case_and_around_spaces() {
        let t = junqi();
        let a1 = t.node("A1").expect("A1 is a square");
        assert_eq!(t.name(a1), "A1");
        assert_eq!(t.node("a1"), Some(a1));
        assert_eq!(t.node(" a1 "), Some(a1));
        assert_eq!(t.node(""), None);
        assert_eq!(t.node("   "), None);
        assert_eq!(t.node("A1x"), None);
        assert_eq!(t.node("Z9"), None);
    }

    /// The index finds every named node of every board, in either case, and only those.
    #[test]
    fn every_name_of_every_board_is_found_by_the_index() {
        use crate::GunjinBoard;
        use crate::gunjin::topology as gunjin;
        let boards = [
            junqi(),
            gunjin(GunjinBoard::XGates),
            gunjin(GunjinBoard::YGates),
            gunjin(GunjinBoard::IGates),
            gunjin(GunjinBoard::Pieces23),
        ];
        for t in boards {
            let mut named = 0;
            for n in 0..t.node_count {
                let name = t.name(Node(n));
                if name.is_empty() {
                    continue;
                }
                named += 1;
                assert_eq!(t.node(name), Some(Node(n)), "{name}");
                assert_eq!(t.node(&name.to_ascii_uppercase()), Some(Node(n)), "{name}");
                assert_eq!(t.node(&name.to_ascii_lowercase()), Some(Node(n)), "{name}");
            }
            let short = (0..t.node_count)
                .filter(|n| name_key(t.name(Node(*n))).is_some())
                .count();
            assert_eq!(t.by_name.len(), short, "every short name is in the index");
            assert!(
                short * 10 >= named * 9,
                "the index holds most names: {short} of {named}"
            );
            assert_eq!(t.node("é1"), None);
            assert_eq!(t.node("A99"), None);
        }
    }

    #[test]
    fn junqi_board_has_the_specified_shape() {
        let t = junqi();
        assert_eq!(t.node_count, 60);
        assert_eq!(t.links.len(), 133);
        assert_eq!(t.rail.count_ones(), 32);
        let rail_links: u32 = (0..60)
            .map(|n| t.rail_neighbors[n].count_ones())
            .sum::<u32>()
            / 2;
        assert_eq!(rail_links, 35);
        assert_eq!(t.camps.count_ones(), 10);
        assert_eq!(t.camps & t.rail, 0, "no camp is on a railway");
        assert_eq!(t.hq[0] & t.rail, 0, "no HQ is on a railway");
        let n = |s: &str| t.node(s).unwrap();
        assert!(!t.linked(n("B6"), n("B7")), "B6-B7 is a mountain");
        assert!(!t.linked(n("D6"), n("D7")), "D6-D7 is a mountain");
        for (a, b) in [("A6", "A7"), ("C6", "C7"), ("E6", "E7")] {
            assert!(t.linked(n(a), n(b)));
            assert!(t.rail_neighbors[n(a).index()] & n(b).bit() != 0);
        }
        for d in ["A2", "C2", "A4", "C4"] {
            assert!(t.linked(n("B3"), n(d)), "B3-{d}");
        }
        for d in ["B3", "D3", "B5", "D5"] {
            assert!(t.linked(n("C4"), n(d)), "C4-{d}");
        }
        assert!(!t.linked(n("A1"), n("B2")), "no diagonal without a camp");
        assert_eq!(t.deployment_squares(Side::South).count(), 25);
        assert_eq!(t.deployment_squares(Side::North).count(), 25);
        assert_eq!(t.name(n("e12")), "E12");
    }
}
