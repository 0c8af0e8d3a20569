//! The game drawn as plain text: the board, the status lines and one-line event notes.
//!
//! Everything here is pure (a view in, a `String` out) so the drawing can be checked with
//! hand-built views, without a server. It never trusts the server's data to be well formed: an
//! unknown square, side or piece code is drawn as `?` or listed, never a panic, because a client
//! that crashes on an odd message loses the player's game.

use hidden_front_proto::v1 as pb;
use hidden_front_rules::topology::{Node, Nodes, Topology};
use hidden_front_rules::{Family, Rules};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Characters from one node's drawing to the next one's: the node (5) and the link after it (3).
const PITCH: usize = 8;

/// The Junqi board, as the rules engine builds it: its grid, camps, headquarters and links are
/// read from there (as the web page draws from `topology()`), so the drawing holds no second
/// copy of the board.
fn junqi() -> &'static Topology {
    hidden_front_rules::topology::junqi()
}

/// A node's column (0 for the west one) on its board's grid.
fn column_of(board: &Topology, node: Node) -> u8 {
    node.0 % board.columns
}

/// A node's row or rank (1 for south's back row) on its board's grid.
fn row_of(board: &Topology, node: Node) -> u8 {
    node.0 / board.columns + 1
}

/// The symbols of the Junqi drawing, printed by `legend` (two lines within 80 columns).
pub const JUNQI_SYMBOLS: &str = "legend: ═ ║ railway  - | \\ / road  ( ) camp  [ ] HQ  ^^^ mountain\n  . empty  ? hidden  * opponent's piece shown";

/// How two neighbouring nodes are joined, as the drawing shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    /// A railway segment (a piece may run along it).
    Rail,
    /// A road: one step.
    Road,
}

/// The link between two Junqi nodes, read from the rules engine's own board (so the drawing has
/// no second copy of it); `None` where they are not linked (a mountain, or not neighbours).
fn link(a: Square, b: Square) -> Option<Link> {
    let board = junqi();
    let (na, nb) = (a.node()?, b.node()?);
    if !board.linked(na, nb) {
        return None;
    }
    Some(if board.rail_neighbors[na.index()] & nb.bit() != 0 {
        Link::Rail
    } else {
        Link::Road
    })
}

/// A node of the Junqi board, parsed from its name so the drawing can place pieces by position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Square {
    /// Column index, 0 for `A`.
    pub col: u8,
    /// Row number, 1 to 12.
    pub row: u8,
}

impl Square {
    /// Reads a node name of the Junqi board, `A1`..`E12` (case-insensitive, surrounding blanks
    /// ignored); `None` for anything else, so a name from another board or a malformed one is
    /// simply not drawn on this one.
    pub fn parse(name: &str) -> Option<Square> {
        let board = junqi();
        let node = board.node(name)?;
        Some(Square {
            col: column_of(board, node),
            row: row_of(board, node),
        })
    }

    /// The node's name, e.g. `A1`.
    pub fn name(self) -> String {
        format!("{}{}", char::from(b'A' + self.col), self.row)
    }

    /// The engine's node at this place; `None` off the board.
    fn node(self) -> Option<Node> {
        let board = junqi();
        (self.col < board.columns && (1..=board.rows).contains(&self.row))
            .then(|| Node((self.row - 1) * board.columns + self.col))
            .filter(|&node| board.contains(node))
    }

    /// What kind of node this is, for its brackets.
    fn kind(self) -> NodeKind {
        let board = junqi();
        let bit = self.node().map_or(0, Node::bit);
        if board.camps & bit != 0 {
            NodeKind::Camp
        } else if (board.hq[0] | board.hq[1]) & bit != 0 {
            NodeKind::Hq
        } else {
            NodeKind::Plain
        }
    }
}

/// How a node is framed in the drawing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeKind {
    Plain,
    Camp,
    Hq,
}

/// The last move as the player saw it, kept by the client from the `Moved` event because a
/// `GameView` holds only the position, not how it came about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LastMove {
    /// Who moved.
    pub side: pb::Side,
    /// The mover's public id, so its kind can be named from the end's reveal.
    pub piece_id: u32,
    /// The square moved from, as the server named it.
    pub from: String,
    /// The square moved to.
    pub to: String,
    /// The mover's code, empty where the viewer may not know it.
    pub piece: String,
    /// The fight, if the move attacked.
    pub combat: Option<Combat>,
}

/// A fight as the player saw it: who survived, and the defender's code where known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Combat {
    /// The defender's public id, so its kind can be named from the end's reveal.
    pub defender_id: u32,
    /// The defender's code, empty where the viewer may not know it.
    pub defender_piece: String,
    /// Whether the attacker survived (and moved in).
    pub attacker_survives: bool,
    /// Whether the defender survived.
    pub defender_survives: bool,
}

impl LastMove {
    /// The last move told by a `Moved` event; `None` when the event carries no move, so a
    /// malformed event leaves the previous last move in place instead of inventing one.
    pub fn from_event(moved: &pb::Moved) -> Option<LastMove> {
        let mv = moved.r#move.as_ref()?;
        Some(LastMove {
            side: moved.side(),
            piece_id: moved.piece_id,
            from: mv.from.clone(),
            to: mv.to.clone(),
            piece: moved.piece.clone(),
            combat: moved.combat.as_ref().map(|c| Combat {
                defender_id: c.defender_id,
                defender_piece: c.defender_piece.clone(),
                attacker_survives: c.attacker_survives,
                defender_survives: c.defender_survives,
            }),
        })
    }
}

/// The last move with every kind the end revealed: once a game is over, `reveal` lists every
/// piece of the game by public id, so a move told as `north ? A8-A7 attacked ?` while hidden is
/// described with both kinds afterwards. A code is taken only from a piece of the right side, and
/// one already known is kept, so a reveal that does not fit leaves the move as it was told.
pub fn with_revealed_kinds(last: &LastMove, reveal: Option<&pb::EndReveal>) -> LastMove {
    let mut out = last.clone();
    let Some(reveal) = reveal else {
        return out;
    };
    let kind = |id: u32, side: pb::Side| {
        reveal
            .starting_pieces
            .iter()
            .find(|p| p.id == id && p.side() == side && !p.piece.trim().is_empty())
            .map(|p| p.piece.clone())
    };
    if out.piece.trim().is_empty()
        && let Some(code) = kind(out.piece_id, out.side)
    {
        out.piece = code;
    }
    let defender = opposite(out.side);
    if let Some(c) = out.combat.as_mut()
        && c.defender_piece.trim().is_empty()
        && let Some(code) = kind(c.defender_id, defender)
    {
        c.defender_piece = code;
    }
    out
}

/// The seat a viewer plays, if any (a spectator has none).
pub fn own_side(view: &pb::GameView) -> Option<pb::Side> {
    match view.viewer() {
        pb::Viewer::South => Some(pb::Side::South),
        pb::Viewer::North => Some(pb::Side::North),
        pb::Viewer::Spectator | pb::Viewer::Unspecified => None,
    }
}

/// A side's name in lower case, `?` for an unknown value.
pub fn side_name(side: pb::Side) -> &'static str {
    match side {
        pb::Side::South => "south",
        pb::Side::North => "north",
        pb::Side::Unspecified => "?",
    }
}

/// The other side.
fn opposite(side: pb::Side) -> pb::Side {
    match side {
        pb::Side::South => pb::Side::North,
        pb::Side::North => pb::Side::South,
        pb::Side::Unspecified => pb::Side::Unspecified,
    }
}

/// A piece code as one character: `9`..`1`, `B`, `M`, `F`; anything else (empty, unknown, too
/// long) is `?`, since a wrong glyph would mislead the player more than an honest unknown.
fn glyph(code: &str) -> char {
    let mut chars = code.trim().chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if matches!(c, '1'..='9') => c,
        (Some(c), None) if matches!(c.to_ascii_uppercase(), 'B' | 'M' | 'F') => {
            c.to_ascii_uppercase()
        }
        _ => '?',
    }
}

/// A piece code for a line of text: a Junqi glyph, or a Gunjin Shogi code (`GEN`, `1LT`); `?`
/// for a hidden or unknown one.
fn code_text(code: &str) -> String {
    match glyph(code) {
        '?' => gunjin_glyph(code).trim().replace("???", "?"),
        c => c.to_string(),
    }
}

/// One piece as drawn.
#[derive(Debug, Clone, Copy)]
struct Drawn {
    side: pb::Side,
    glyph: char,
}

/// The whole picture: the board (oriented for the viewer), then the status lines.
///
/// The viewer's own side is at the bottom: south sees row 12 at the top, north sees the board
/// turned half round (row 1 at the top, column E on the left), as from their chair. Own pieces
/// show their codes, the opponent's show `?` until the server reveals them, and then carry a `*`
/// so they cannot be mistaken for the viewer's own. Camps are framed `( )`, HQs `[ ]`; railways
/// are drawn `═` / `║`, roads `-` / `|` and the camps' diagonals `\` / `/`. The clocks are read
/// at the server's time now as this client knows it; [`render_at`] takes the time instead.
///
/// The picture is drawn again after every event, so it is kept to one 80 x 24 screen (Junqi: a
/// header, 12 rows of nodes, 9 rows of links and 2 of status, 24 in all; Gunjin Shogi: 12), or
/// the opponent's half would scroll off: the seats, time control, counters, timeouts and
/// presence stand in a panel beside the rows, the symbols are printed by `legend` only, and the
/// link rows 1-2 and 11-12 (a road in every column, nothing else) are left out.
pub fn render(view: &pb::GameView, last: Option<&LastMove>) -> String {
    render_at(view, last, super::clock::server_now_unix_millis())
}

/// [`render`] with the clocks read at `now_ms` (milliseconds since the Unix epoch), so a drawing
/// can be checked at a known time.
pub fn render_at(view: &pb::GameView, last: Option<&LastMove>, now_ms: u64) -> String {
    if let Some(board) = GunjinBoard::of_rules(&view.rules) {
        return render_gunjin(view, last, &board, now_ms);
    }
    let mut out = String::new();
    let me = own_side(view);
    let bottom = me.unwrap_or(pb::Side::South);
    let top = opposite(bottom);
    let (board, off_board) = pieces(view, bottom);
    let topology = junqi();

    let rows: Vec<u8> = if bottom == pb::Side::North {
        (1..=topology.rows).collect()
    } else {
        (1..=topology.rows).rev().collect()
    };
    let cols: Vec<u8> = if bottom == pb::Side::North {
        (0..topology.columns).rev().collect()
    } else {
        (0..topology.columns).collect()
    };
    // Column `j` of the drawing: its node's five characters start at `4 + PITCH * j`, the glyph
    // two further on, and the three characters after the node hold the link to the next one.
    let glyph_at = |j: usize| 4 + PITCH * j + 2;
    let width = 4 + PITCH * cols.len();
    let mut header = vec![' '; width];
    for (j, &c) in cols.iter().enumerate() {
        header[glyph_at(j)] = char::from(b'A' + c);
    }
    let header: String = header
        .into_iter()
        .collect::<String>()
        .trim_end()
        .to_string();

    let mut lines = vec![header_line(&header, view)];
    let mut node_lines = Vec::new();
    for (i, &row) in rows.iter().enumerate() {
        let mut line = format!("{row:>3} ");
        for (j, &col) in cols.iter().enumerate() {
            let sq = Square { col, row };
            line.push_str(&cell(sq, board.get(&sq).copied(), top, me.is_none()));
            if let Some(&next) = cols.get(j + 1) {
                line.push_str(match link(sq, Square { col: next, row }) {
                    Some(Link::Rail) => "═══",
                    Some(Link::Road) => "---",
                    None => "   ",
                });
            }
        }
        node_lines.push(lines.len());
        lines.push(line.trim_end().to_string());
        let Some(&below) = rows.get(i + 1) else {
            continue;
        };
        // Between the HQ row and the row before it every column is a road and nothing else:
        // that line is left out (the legend says so), so the board fits a 24-row terminal.
        if i == 0 || i + 2 == rows.len() {
            continue;
        }
        // The links between this row and the next one down: straight ones under each node, the
        // camps' diagonals in the gaps between columns.
        let mut between = vec![' '; width];
        let front = halves_meet(Square { col: 0, row }, Square { col: 0, row: below });
        for (j, &col) in cols.iter().enumerate() {
            let x = glyph_at(j);
            match link(Square { col, row }, Square { col, row: below }) {
                Some(Link::Rail) => between[x] = '║',
                Some(Link::Road) => between[x] = '|',
                None if front => between[x - 1..=x + 1].copy_from_slice(&['^'; 3]),
                None => {}
            }
            if let Some(&next) = cols.get(j + 1) {
                let falling = link(
                    Square { col, row },
                    Square {
                        col: next,
                        row: below,
                    },
                );
                let rising = link(Square { col, row: below }, Square { col: next, row });
                between[x + PITCH / 2] = match (falling.is_some(), rising.is_some()) {
                    (true, true) => 'X',
                    (true, false) => '\\',
                    (false, true) => '/',
                    (false, false) => ' ',
                };
            }
        }
        let between: String = between.into_iter().collect();
        if front {
            lines.push(format!(
                "{}   front line: cross at {}",
                between.trim_end(),
                crossings(row, below)
            ));
        } else {
            lines.push(between.trim_end().to_string());
        }
    }
    with_panel(
        &mut lines,
        &node_lines,
        width,
        panel(view, top, bottom, me, now_ms),
    );
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    if !off_board.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            fit(
                &format!("not on this board: {}", off_board.join(" ")),
                WIDTH
            )
        );
    }
    status(&mut out, view, last, me, now_ms);
    out
}

/// Whether `a` and `b` lie in different halves of the Junqi board: the front line between them.
fn halves_meet(a: Square, b: Square) -> bool {
    let board = junqi();
    match (a.node(), b.node()) {
        (Some(a), Some(b)) => board.owner_of_half(a) != board.owner_of_half(b),
        _ => false,
    }
}

/// The columns where the front between rows `a` and `b` can be crossed, e.g. `A, C, E`.
fn crossings(a: u8, b: u8) -> String {
    (0..junqi().columns)
        .filter(|&col| link(Square { col, row: a }, Square { col, row: b }).is_some())
        .map(|col| char::from(b'A' + col).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A Gunjin Shogi board as the drawing needs it, read from the rules engine's topology of the
/// rule set (as the web page draws from `topology()`): its files and ranks, the two files of
/// the HQs and the gate squares on each side of the wall.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GunjinBoard {
    /// Files, 8 (`a`..`h`) or 6 (`a`..`f`, the 23-piece edition).
    pub files: u8,
    /// Ranks, 8: south's half is the lower half, the wall runs between the halves.
    pub ranks: u8,
    /// The west file of the two-cell HQs (0-based).
    pub hq_file: u8,
    /// The gates in words, each group of linked gate squares once (`b4-b5`, `b4 to a5/c5`,
    /// `a4/c4 to a5/c5`), for the legend.
    pub gates: String,
    /// Files (0-based) of the gate squares on south's side of the wall and on north's.
    pub gate_files: [Vec<u8>; 2],
}

impl GunjinBoard {
    /// The board of a Gunjin Shogi rule set, from the engine's topology; `None` for other games
    /// and for names the engine does not know.
    pub fn of_rules(rules: &str) -> Option<GunjinBoard> {
        let rules = Rules::parse(rules).ok()?;
        if rules.family != Family::GunjinShogi {
            return None;
        }
        let board = rules.topology();
        let hq = Nodes(board.hq[0]).next()?;
        let files_of = |nodes: u64| -> Vec<u8> {
            let mut files: Vec<u8> = Nodes(nodes).map(|n| column_of(board, n)).collect();
            files.sort_unstable();
            files
        };
        Some(GunjinBoard {
            files: board.columns,
            ranks: board.rows,
            hq_file: column_of(board, hq),
            gates: gate_words(board),
            gate_files: [files_of(board.gates[0]), files_of(board.gates[1])],
        })
    }

    /// Whether the wall runs between ranks `a` and `b` (the halves meet there).
    fn wall_between(&self, a: u8, b: u8) -> bool {
        let half = self.ranks / 2;
        (a <= half) != (b <= half)
    }

    /// The cell (file 0-based, rank 1..=8) a square name stands for: `c3`, or the HQ's west cell
    /// for `d1+e1`. `None` for names not on this board (a lone HQ cell like `e1` included).
    pub fn cell(&self, name: &str) -> Option<(u8, u8)> {
        let name = name.trim().to_ascii_lowercase();
        let mut cells = name.split('+').map(|part| {
            let b = part.as_bytes();
            (b.len() == 2
                && (b'a'..b'a' + self.files).contains(&b[0])
                && (b'1'..b'1' + self.ranks.min(9)).contains(&b[1]))
            .then(|| (b[0] - b'a', b[1] - b'0'))
        });
        let first = cells.next()??;
        match cells.next() {
            // A single cell of an HQ is not a square: the HQ is named by both.
            None => (!self.is_hq(first)).then_some(first),
            Some(second) => {
                let second = second?;
                let hq = first.0 == self.hq_file
                    && second == (self.hq_file + 1, first.1)
                    && (first.1 == 1 || first.1 == self.ranks)
                    && cells.next().is_none();
                hq.then_some(first)
            }
        }
    }

    fn is_hq(&self, (file, rank): (u8, u8)) -> bool {
        (rank == 1 || rank == self.ranks) && (file == self.hq_file || file == self.hq_file + 1)
    }
}

/// The gates of a Gunjin Shogi board in words, from the engine's links across the wall: each
/// group of gate squares linked to one another once, west first, written from the side with
/// one square when only one side has one (`b4 to a5/c5`, `g5 to f4/h4`), else south first
/// (`b4-b5`, `a4/c4 to a5/c5`).
fn gate_words(board: &Topology) -> String {
    /// North, in the engine's `[east, north, west, south]` step tables.
    const NORTH: usize = 1;
    let across =
        |south: u64| Nodes(south).fold(0, |landing, n| landing | board.steps[n.index()][NORTH]);
    let names = |nodes: u64| {
        Nodes(nodes)
            .map(|n| board.name(n).to_string())
            .collect::<Vec<_>>()
            .join("/")
    };
    let mut left = board.gates[0];
    let mut groups = Vec::new();
    while left != 0 {
        // A south gate, and every south gate sharing a landing square with the group.
        let mut south = left & left.wrapping_neg();
        loop {
            let north = across(south);
            let grown = Nodes(board.gates[0])
                .filter(|n| board.steps[n.index()][NORTH] & north != 0)
                .fold(south, |set, n| set | n.bit());
            if grown == south {
                break;
            }
            south = grown;
        }
        left &= !south;
        let north = across(south);
        groups.push(match (south.count_ones(), north.count_ones()) {
            (1, 1) => format!("{}-{}", names(south), names(north)),
            (_, 1) => format!("{} to {}", names(north), names(south)),
            _ => format!("{} to {}", names(south), names(north)),
        });
    }
    groups.join(", ")
}

/// A Gunjin Shogi code drawn three wide (`GEN`, `1LT`, ...); `???` for an unknown one, ` ? `
/// for a hidden one.
fn gunjin_glyph(code: &str) -> String {
    const CODES: [&str; 16] = [
        "GEN", "LTG", "MJG", "COL", "LTC", "MAJ", "CPT", "1LT", "2LT", "PLA", "TNK", "CAV", "ENG",
        "SPY", "MIN", "FLG",
    ];
    let code = code.trim().to_ascii_uppercase();
    if code.is_empty() {
        " ? ".to_string()
    } else if CODES.contains(&code.as_str()) {
        code
    } else {
        "???".to_string()
    }
}

/// The Gunjin Shogi picture: the same layout as Junqi's (own side at the bottom, seats, status
/// lines), with three-letter codes, the wall between ranks 4 and 5 with its gates marked, and the
/// two-cell HQs framed `[ ]` with the piece in the west cell and `=` in the east one.
fn render_gunjin(
    view: &pb::GameView,
    last: Option<&LastMove>,
    board: &GunjinBoard,
    now_ms: u64,
) -> String {
    let mut out = String::new();
    let me = own_side(view);
    let bottom = me.unwrap_or(pb::Side::South);
    let top = opposite(bottom);
    let spectator = me.is_none();
    let mut cells: BTreeMap<(u8, u8), (pb::Side, String)> = BTreeMap::new();
    let mut off_board = Vec::new();
    let mut place = |square: &str, side: pb::Side, code: &str| match board.cell(square) {
        Some(cell) => {
            cells.insert(cell, (side, gunjin_glyph(code)));
        }
        None => off_board.push(format!(
            "{}={}",
            printable(square),
            gunjin_glyph(code).trim()
        )),
    };
    if let Some(draft) = &view.own_deployment {
        let side = match draft.side() {
            pb::Side::Unspecified => bottom,
            side => side,
        };
        for p in &draft.placements {
            place(&p.square, side, &p.piece);
        }
    }
    for p in &view.pieces {
        place(&p.square, p.side(), &p.piece);
    }
    let ranks: Vec<u8> = if bottom == pb::Side::North {
        (1..=board.ranks).collect()
    } else {
        (1..=board.ranks).rev().collect()
    };
    let files: Vec<u8> = if bottom == pb::Side::North {
        (0..board.files).rev().collect()
    } else {
        (0..board.files).collect()
    };
    let mut header = String::from("    ");
    for &f in &files {
        let _ = write!(header, "   {}  ", char::from(b'a' + f));
    }
    let header = header.trim_end().to_string();
    let width = 4 + 6 * files.len();
    let mut lines = vec![header_line(&header, view)];
    let mut node_lines = Vec::new();
    for (i, &rank) in ranks.iter().enumerate() {
        let mut line = format!("{rank:>3} ");
        for &file in &files {
            let hq = board.is_hq((file, rank));
            let (open, close) = if hq { ('[', ']') } else { (' ', ' ') };
            let body = if hq && file == board.hq_file + 1 {
                "  = ".to_string()
            } else {
                match cells.get(&(file, rank)) {
                    None => " .  ".to_string(),
                    Some((side, glyph)) => {
                        let theirs = *side != opposite(top);
                        let marked = theirs && (glyph != " ? " || spectator);
                        format!("{glyph}{}", if marked { '*' } else { ' ' })
                    }
                }
            };
            let _ = write!(line, "{open}{body}{close}");
        }
        node_lines.push(lines.len());
        lines.push(line.trim_end().to_string());
        if ranks
            .get(i + 1)
            .is_some_and(|&next| board.wall_between(rank, next))
        {
            let mut wall = String::from("    ");
            for &file in &files {
                let south = board.gate_files[0].contains(&file);
                let north = board.gate_files[1].contains(&file);
                wall.push_str(match (south, north) {
                    (true, true) => "  ||  ",
                    (true, false) | (false, true) => "  ++  ",
                    (false, false) => " ==== ",
                });
            }
            // The gates in words are in `legend`: beside the wall they would pass 80 columns.
            lines.push(format!("{:<width$}  wall", wall.trim_end()));
        }
    }
    with_panel(
        &mut lines,
        &node_lines,
        width,
        panel(view, top, bottom, me, now_ms),
    );
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    if !off_board.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            fit(
                &format!("not on this board: {}", off_board.join(" ")),
                WIDTH
            )
        );
    }
    status(&mut out, view, last, me, now_ms);
    out
}

/// The terminal width the drawing keeps to: every line of the board and its status fits 80
/// columns, so nothing wraps in a default terminal (a wrapped line pushes the opponent's half off
/// the top of a 24-row screen).
pub const WIDTH: usize = 80;

/// `text` cut to at most `width` characters (the last one then `…`), so a long name or rule set
/// from the server cannot push a line past the terminal's width.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The column letters, with the game's version (`v17`) and rule set beside them (the board's first
/// line: no line of its own is spent on them).
fn header_line(header: &str, view: &pb::GameView) -> String {
    let rules = if view.rules.is_empty() {
        "?".to_string()
    } else {
        printable(&view.rules)
    };
    let text = format!("{header}   v{} {rules}", view.version);
    fit(&text, WIDTH)
}

/// Puts the side panel beside the board: `entries[k]` to the right of the `k`-th node row, the
/// last entry (the seat at the bottom) beside the last node row, each cut to what is left of the
/// 80 columns. Entries that find no row are dropped (the `clock` command tells all of them).
fn with_panel(lines: &mut [String], node_lines: &[usize], width: usize, mut entries: Vec<String>) {
    let Some(bottom_seat) = entries.pop() else {
        return;
    };
    let Some((&last, rows)) = node_lines.split_last() else {
        return;
    };
    let room = WIDTH.saturating_sub(width + 2);
    let mut place = |at: usize, entry: &str| {
        let line = &mut lines[at];
        let pad = (width + 2).saturating_sub(line.chars().count());
        line.extend(std::iter::repeat_n(' ', pad));
        line.push_str(&fit(entry, room));
    };
    for (&at, entry) in rows.iter().zip(&entries) {
        place(at, entry);
    }
    place(last, &bottom_seat);
}

/// Who sits on `side`, marked `(you)` for the viewer.
fn seat_text(view: &pb::GameView, side: pb::Side, me: Option<pb::Side>) -> String {
    let name = match side {
        pb::Side::North => view.north_player.as_str(),
        _ => view.south_player.as_str(),
    };
    let name = if name.is_empty() {
        "(empty seat)".to_string()
    } else {
        printable(name)
    };
    let you = if me == Some(side) { " (you)" } else { "" };
    format!("{}: {name}{you}", side_name(side))
}

/// The side panel, top to bottom: the seat at the top, the time control, the counters, the
/// timeouts and presence, and last the seat at the bottom (which [`with_panel`] puts beside the
/// last row, next to its player's own half).
fn panel(
    view: &pb::GameView,
    top: pb::Side,
    bottom: pb::Side,
    me: Option<pb::Side>,
    now_ms: u64,
) -> Vec<String> {
    let mut entries = vec![seat_text(view, top, me)];
    if let Some(tc) = &view.time_control {
        entries.push(format!(
            "{}: {}/{}/{} s",
            if tc.name.is_empty() {
                "time".to_string()
            } else {
                printable(&tc.name)
            },
            tc.deployment_seconds,
            tc.move_seconds,
            tc.reconnect_seconds
        ));
    }
    if matches!(view.phase(), pb::Phase::Play | pb::Phase::Ended) {
        entries.push(format!(
            "plies {}, {} without combat",
            view.plies, view.plies_without_combat
        ));
    }
    if view.phase() == pb::Phase::Play {
        let limit =
            hidden_front_rules::Rules::parse(&view.rules).map_or(3, |r| r.timeouts_to_forfeit);
        entries.push(format!(
            "timeouts: S {}, N {} of {limit}",
            view.south_timeouts, view.north_timeouts
        ));
    }
    if matches!(view.phase(), pb::Phase::Play | pb::Phase::Deployment) {
        let away = |side: pb::Side| {
            let (connected, until) = match side {
                pb::Side::North => (view.north_connected, view.north_away_deadline_unix_millis),
                _ => (view.south_connected, view.south_away_deadline_unix_millis),
            };
            match (connected, until) {
                (true, _) => None,
                (false, 0) => Some("away".to_string()),
                (false, until) => Some(format!(
                    "away: {} s",
                    super::clock::seconds_left(until, now_ms)
                )),
            }
        };
        entries.push(match me {
            Some(side) => match away(opposite(side)) {
                None => "opponent connected".to_string(),
                Some(text) => format!("opponent {text}"),
            },
            None => match (away(pb::Side::South), away(pb::Side::North)) {
                (None, None) => "both connected".to_string(),
                (south, north) => {
                    let mut parts = Vec::new();
                    if let Some(t) = south {
                        parts.push(format!("south {t}"));
                    }
                    if let Some(t) = north {
                        parts.push(format!("north {t}"));
                    }
                    parts.join(", ")
                }
            },
        });
    }
    entries.push(seat_text(view, bottom, me));
    entries
}

/// The pieces to draw by square, and the ones whose square is not on this board (listed rather
/// than dropped, so nothing the server sent silently disappears).
///
/// During deployment the board holds only the viewer's own draft (`own_deployment`); later the
/// view's `pieces`. Both are laid down, the pieces last, so whichever the server filled shows.
fn pieces(view: &pb::GameView, bottom: pb::Side) -> (BTreeMap<Square, Drawn>, Vec<String>) {
    let mut board = BTreeMap::new();
    let mut off_board = Vec::new();
    let mut place = |square: &str, side: pb::Side, code: &str| {
        let drawn = Drawn {
            side,
            glyph: glyph(code),
        };
        match Square::parse(square) {
            Some(sq) => {
                board.insert(sq, drawn);
            }
            None => off_board.push(format!("{}={}", printable(square), drawn.glyph)),
        }
    };
    if let Some(draft) = &view.own_deployment {
        let side = match draft.side() {
            pb::Side::Unspecified => bottom,
            side => side,
        };
        for p in &draft.placements {
            place(&p.square, side, &p.piece);
        }
    }
    for p in &view.pieces {
        place(&p.square, p.side(), &p.piece);
    }
    (board, off_board)
}

/// A server-given name made safe to print on one line (no control characters, bounded length),
/// so a hostile or broken server cannot steer the terminal or flood the screen.
pub fn printable(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(64)
        .collect();
    if clean.is_empty() {
        "(none)".to_string()
    } else {
        clean
    }
}

/// One node, five characters wide: frame, blank, glyph, mark, frame.
fn cell(sq: Square, piece: Option<Drawn>, top: pb::Side, spectator: bool) -> String {
    let (open, close) = match sq.kind() {
        NodeKind::Plain => (' ', ' '),
        NodeKind::Camp => ('(', ')'),
        NodeKind::Hq => ('[', ']'),
    };
    let (glyph, mark) = match piece {
        None => ('.', ' '),
        Some(p) => {
            let theirs = p.side != opposite(top);
            // A player knows every `?` is the opponent's; a spectator sees both sides hidden,
            // so the top side's pieces are marked there even when hidden.
            let marked = theirs && (p.glyph != '?' || spectator);
            (p.glyph, if marked { '*' } else { ' ' })
        }
    };
    format!("{open} {glyph}{mark}{close}")
}

/// The status under the board, at most two lines of at most 80 columns (the side panel holds
/// the rest): first what happens now (whose move and its countdown with a hint of what to type,
/// a draw offer; the deployment's state; or the result), then the last move, or in deployment
/// what to do. After the end the last move names every kind the end revealed.
fn status(
    out: &mut String,
    view: &pb::GameView,
    last: Option<&LastMove>,
    me: Option<pb::Side>,
    now_ms: u64,
) {
    let who = |side: pb::Side| -> String {
        if me == Some(side) {
            format!("{} (you)", side_name(side))
        } else {
            side_name(side).to_string()
        }
    };
    let deadline = view.turn_deadline_unix_millis;
    let left = |what: &str| -> String {
        if deadline == 0 {
            format!("{what}, no clock")
        } else {
            format!(
                "{what}, {} s left",
                super::clock::seconds_left(deadline, now_ms)
            )
        }
    };
    let (first, second) = match view.phase() {
        pb::Phase::Deployment => {
            let state = |side: pb::Side| {
                let done = match side {
                    pb::Side::North => view.north_confirmed,
                    _ => view.south_confirmed,
                };
                format!(
                    "{} {}",
                    who(side),
                    if done { "confirmed" } else { "not confirmed" }
                )
            };
            let first = format!(
                "{}: {}, {}",
                left("deployment"),
                state(pb::Side::South),
                state(pb::Side::North)
            );
            let own_confirmed = match me {
                Some(pb::Side::South) => Some(view.south_confirmed),
                Some(pb::Side::North) => Some(view.north_confirmed),
                _ => None,
            };
            let second = match own_confirmed {
                Some(false) => {
                    Some("arrange your half: swap A1 B2 | shuffle | confirm".to_string())
                }
                Some(true) => Some("waiting for the other side to confirm".to_string()),
                None => None,
            };
            (first, second)
        }
        phase => {
            let mut first = match (phase, me) {
                (pb::Phase::Ended, _) => {
                    format!("result: {}", describe_outcome(view.outcome.as_ref(), me))
                }
                (pb::Phase::Play, Some(side)) if view.to_move() == side => {
                    if deadline == 0 {
                        "your move, no clock (`moves` lists them)".to_string()
                    } else {
                        format!(
                            "your move: {} s left (`moves` lists them)",
                            super::clock::seconds_left(deadline, now_ms)
                        )
                    }
                }
                (pb::Phase::Play, Some(_)) => left(&format!(
                    "waiting for {} to move",
                    side_name(view.to_move())
                )),
                (pb::Phase::Play, None) => left(&format!("{} to move", side_name(view.to_move()))),
                _ => "phase: ?".to_string(),
            };
            if phase == pb::Phase::Play {
                match view.draw_offer() {
                    pb::Side::Unspecified => {}
                    side if me == Some(side) => first.push_str("; your draw offer waits"),
                    side if me.is_some() => {
                        let _ = write!(first, "; {} offers a draw (accept/decline)", who(side));
                    }
                    side => {
                        let _ = write!(first, "; {} offers a draw", who(side));
                    }
                }
            }
            let second = last.map(|last| {
                let last = with_revealed_kinds(last, view.reveal.as_ref());
                let text = format!("last move: {}", describe_move(&last, me));
                // A long fight on Gunjin Shogi's HQ squares: the short prefix keeps it whole.
                if text.chars().count() > WIDTH {
                    format!("last: {}", describe_move(&last, me))
                } else {
                    text
                }
            });
            (first, second)
        }
    };
    let _ = writeln!(out, "{}", fit(&first, WIDTH));
    if let Some(second) = second {
        let _ = writeln!(out, "{}", fit(&second, WIDTH));
    }
}

/// A move in words: `north ? A7-A6 attacked 5: attacker removed, defender survived`.
pub fn describe_move(last: &LastMove, me: Option<pb::Side>) -> String {
    let mut text = format!(
        "{}{} {} {}-{}",
        side_name(last.side),
        if me == Some(last.side) { " (you)" } else { "" },
        code_text(&last.piece),
        printable(&last.from),
        printable(&last.to)
    );
    if let Some(c) = &last.combat {
        let fate = |survives: bool| if survives { "survived" } else { "removed" };
        let _ = write!(
            text,
            " attacked {}: attacker {}, defender {}",
            code_text(&c.defender_piece),
            fate(c.attacker_survives),
            fate(c.defender_survives)
        );
    }
    text
}

/// Why a game ended, in words.
fn reason_text(reason: pb::EndReason) -> &'static str {
    match reason {
        pb::EndReason::FlagCaptured => "flag captured",
        pb::EndReason::HqEntered => "headquarters taken",
        pb::EndReason::NoLegalMoves => "no legal moves",
        pb::EndReason::NoCombatLimit => "too many plies without combat",
        pb::EndReason::AgreedDraw => "draw agreed",
        pb::EndReason::Resigned => "resigned",
        pb::EndReason::Timeouts => "too many timeouts",
        pb::EndReason::Disconnected => "disconnected too long",
        pb::EndReason::SeatLost => "a seat was lost during deployment",
        pb::EndReason::Aborted => "stopped by an operator",
        pb::EndReason::Unspecified => "reason unknown",
    }
}

/// The outcome in words, from the viewer's point of view where they played.
pub fn describe_outcome(outcome: Option<&pb::Outcome>, me: Option<pb::Side>) -> String {
    let Some(outcome) = outcome else {
        return "ended (no outcome given)".to_string();
    };
    let reason = reason_text(outcome.reason());
    match outcome.winner() {
        pb::Side::Unspecified => match outcome.reason() {
            pb::EndReason::AgreedDraw
            | pb::EndReason::NoCombatLimit
            | pb::EndReason::NoLegalMoves => {
                format!("draw ({reason})")
            }
            _ => format!("no winner ({reason})"),
        },
        winner => {
            let verdict = match me {
                Some(side) if side == winner => " - you win",
                Some(_) => " - you lose",
                None => "",
            };
            format!("{} wins ({reason}){verdict}", side_name(winner))
        }
    }
}

/// One line for a live event, printed before the board is redrawn, so a scroll-back (or a
/// pipe) reads as the game's story.
pub fn describe_event(event: &pb::GameEvent, me: Option<pb::Side>) -> String {
    use pb::game_event::Event as E;
    let who = |side: pb::Side| -> String {
        if me == Some(side) {
            format!("{} (you)", side_name(side))
        } else {
            side_name(side).to_string()
        }
    };
    let text = match &event.event {
        Some(E::Created(c)) => format!("game created, {} moves first", who(c.first_mover())),
        Some(E::DeploymentDrafted(_)) => "your draft changed".to_string(),
        Some(E::DeploymentConfirmed(c)) => format!(
            "{} confirmed the deployment{}",
            who(c.side()),
            if c.by_deadline {
                " (at the deadline)"
            } else {
                ""
            }
        ),
        Some(E::PlayStarted(_)) => "both deployments are in: play starts".to_string(),
        Some(E::Moved(m)) => match LastMove::from_event(m) {
            Some(last) => format!("moved: {}", describe_move(&last, me)),
            None => format!("{} moved", who(m.side())),
        },
        Some(E::TimedOut(t)) => format!(
            "{} ran out of time (timeout {}) and lost the turn",
            who(t.side()),
            t.count
        ),
        Some(E::DrawOffered(d)) => format!("{} offers a draw", who(d.side())),
        Some(E::DrawDeclined(d)) => format!("{} declined the draw offer", who(d.side())),
        Some(E::DrawLapsed(d)) => format!("the draw offer of {} lapsed", who(d.side())),
        Some(E::Resigned(r)) => format!("{} resigned", who(r.side())),
        Some(E::SeatLost(l)) => format!(
            "{} left during deployment and lost the seat; the game is cancelled",
            who(l.side())
        ),
        Some(E::Ended(e)) => format!("game over: {}", describe_outcome(e.outcome.as_ref(), me)),
        None => "an event this client does not know".to_string(),
    };
    format!("#{} {text}", event.seq)
}
