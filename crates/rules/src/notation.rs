//! A one-line text notation for positions, like chess FEN.
//!
//! ```text
//! <rules> <to move: s|n> <plies without combat> <row>/<row>/...
//! ```
//! Rows run from the top of the board (north's back row, row 12 in Junqi) down to row 1, each
//! with exactly one cell per column, west to east. A cell is `.` when empty, a piece code for a
//! south piece (`9`..`1`, `B`, `M`, `F` in Junqi), or the code with a leading `-` for a north piece
//! (north counts "negative"). Piece ids are not part of a position. Example, a flag each and a
//! south commander about to attack:
//!
//! ```text
//! hidden-front s 0 .-F.../...../...../...../...../-1..../9..../...../...../...../...../.F...
//! ```

use crate::piece::PieceId;
use crate::position::Piece;
use crate::position::Position;
use crate::rules::{Rules, RulesError};
use crate::side::Side;
use crate::topology::Node;
use thiserror::Error;

/// A notation string that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NotationError {
    /// Not four space-separated fields.
    #[error("expected four fields `<rules> <s|n> <plies> <rows>`, found {0}")]
    Fields(usize),
    /// Bad rules name.
    #[error(transparent)]
    Rules(#[from] RulesError),
    /// Side to move not `s` or `n`.
    #[error("side to move must be `s` or `n`, found {0:?}")]
    Side(String),
    /// Counter not a number.
    #[error("plies without combat must be a number from 0 to 65535, found {0:?}")]
    Plies(String),
    /// Wrong number of rows.
    #[error("expected {expected} rows, found {found}")]
    Rows {
        /// Rows of the board.
        expected: usize,
        /// Rows given.
        found: usize,
    },
    /// A row that does not have one cell per column, or an unknown code.
    #[error("row {row}: {reason}")]
    Row {
        /// The board row (1-based, as in node names).
        row: usize,
        /// What is wrong.
        reason: String,
    },
}

/// Writes a position in the notation.
pub fn to_notation(position: &Position) -> String {
    let rules = position.rules();
    let topo = position.topology();
    let mut out = format!(
        "{} {} {} ",
        rules.name(),
        match position.to_move() {
            Side::South => 's',
            Side::North => 'n',
        },
        position.plies_without_combat()
    );
    for row in (0..topo.rows).rev() {
        for col in 0..topo.columns {
            match position.piece_at(Node(row * topo.columns + col)) {
                None => out.push('.'),
                Some(p) => {
                    if p.side == Side::North {
                        out.push('-');
                    }
                    out.push_str(rules.code(p.kind));
                }
            }
        }
        if row > 0 {
            out.push('/');
        }
    }
    out
}

/// Reads a position from the notation. Pieces get ids in board order (ids are not notated).
pub fn from_notation(text: &str) -> Result<Position, NotationError> {
    let fields: Vec<&str> = text.split_whitespace().collect();
    let [rules, side, plies, board] = fields[..] else {
        return Err(NotationError::Fields(fields.len()));
    };
    let rules = Rules::parse(rules)?;
    let side = match side {
        "s" => Side::South,
        "n" => Side::North,
        other => return Err(NotationError::Side(other.to_string())),
    };
    let plies: u16 = plies
        .parse()
        .map_err(|_| NotationError::Plies(plies.to_string()))?;
    let topo = rules.topology();
    let rows: Vec<&str> = board.split('/').collect();
    if rows.len() != topo.rows as usize {
        return Err(NotationError::Rows {
            expected: topo.rows as usize,
            found: rows.len(),
        });
    }
    let mut codes: Vec<(&str, _)> = rules.kinds().iter().map(|(k, c, _)| (*c, *k)).collect();
    codes.sort_by_key(|(c, _)| std::cmp::Reverse(c.len()));
    let mut position = Position::empty(rules, side);
    position.set_plies_without_combat(plies);
    let mut next_id = 0u8;
    for (i, row_text) in rows.iter().enumerate() {
        let row = topo.rows as usize - 1 - i;
        let bad = |reason: String| NotationError::Row {
            row: row + 1,
            reason,
        };
        let mut rest = *row_text;
        let mut col = 0usize;
        while !rest.is_empty() {
            if col >= topo.columns as usize {
                return Err(bad(format!("more than {} cells", topo.columns)));
            }
            let node = Node((row * topo.columns as usize + col) as u8);
            if let Some(r) = rest.strip_prefix('.') {
                rest = r;
            } else {
                let (owner, r) = match rest.strip_prefix('-') {
                    Some(r) => (Side::North, r),
                    None => (Side::South, rest),
                };
                let (code, kind) = codes
                    .iter()
                    .find(|(c, _)| r.starts_with(c))
                    .ok_or_else(|| bad(format!("unknown piece code at {r:?}")))?;
                rest = &r[code.len()..];
                let placed = position.put(
                    node,
                    Piece {
                        side: owner,
                        kind: *kind,
                        id: PieceId(next_id),
                    },
                );
                if !placed {
                    // The second cell of a two-cell HQ (Gunjin Shogi) is not a node: its piece
                    // is written on the HQ's first cell.
                    return Err(bad(format!(
                        "column {} is part of a two-cell HQ; write its piece on the HQ's first cell",
                        col + 1
                    )));
                }
                next_id = next_id.wrapping_add(1);
            }
            col += 1;
        }
        if col != topo.columns as usize {
            return Err(bad(format!("{col} cells, expected {}", topo.columns)));
        }
    }
    Ok(position)
}
