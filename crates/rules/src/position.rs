//! A position: where every piece stands, whose turn it is, and the no-combat counter; with the
//! move generator and the judge of a single ply.
//!
//! This is the hot path of the whole system (the referee validates with it, the computer player
//! searches with it), so it is plain arrays and bitboards: a position is `Copy`, generating moves
//! allocates nothing, and applying a move touches a few words.

use crate::outcome::{EndReason, Outcome};
use crate::piece::{PieceId, PieceKind, junqi};
use crate::rules::{Family, Rules};
use crate::side::Side;
use crate::topology::{Node, Nodes, Topology};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A move: the piece on `from` goes to `to` (attacking whatever enemy piece stands there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Move {
    /// Where the moving piece stands.
    pub from: Node,
    /// Where it goes (or which enemy piece it attacks).
    pub to: Node,
}

impl Serialize for Node {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.0)
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = u8::deserialize(d)?;
        if n >= 64 {
            return Err(serde::de::Error::custom(format!(
                "node {n} is out of range"
            )));
        }
        Ok(Node(n))
    }
}

/// A piece on the board, as the referee sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Piece {
    /// Its owner.
    pub side: Side,
    /// What it is (secret from the opponent until the end).
    pub kind: PieceKind,
    /// Its public label.
    pub id: PieceId,
}

/// The result of one fight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Combat {
    /// The attacked piece.
    pub defender: Piece,
    /// Whether the attacker is still on the board (then it stands on the target node).
    pub attacker_survives: bool,
    /// Whether the defender is still on the board.
    pub defender_survives: bool,
    /// Whether the fight captured the flag (ends the game). Always `false` in Gunjin Shogi, where
    /// taking the flag does not end the game.
    pub flag_captured: bool,
}

/// What one ply did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlyReport {
    /// The move played.
    pub mv: Move,
    /// The piece that moved.
    pub mover: Piece,
    /// The fight, if the move attacked.
    pub combat: Option<Combat>,
    /// How the game ended, if this ply ended it.
    pub outcome: Option<Outcome>,
}

/// Why a move was refused. Messages name the nodes involved and never an enemy kind.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum IllegalMove {
    /// Nothing stands on the origin.
    #[error("there is no piece on {0}")]
    NoPiece(String),
    /// The origin holds an enemy piece.
    #[error("the piece on {0} belongs to {1}, and it is {2}'s turn")]
    NotYourPiece(String, Side, Side),
    /// Mines and flags never move.
    #[error("the piece on {0} is a mine or a flag, which never moves")]
    Immobile(String),
    /// A piece in an HQ is frozen for the rest of the game (Junqi).
    #[error("the piece on {0} stands in a headquarters and can no longer move")]
    FrozenInHq(String),
    /// The target holds an own piece.
    #[error("{0} holds one of your own pieces")]
    OwnPiece(String),
    /// The target is a camp with an enemy piece in it.
    #[error("{0} is a camp and the piece in it cannot be attacked")]
    CampProtected(String),
    /// The piece cannot get there this turn.
    #[error("the piece on {0} cannot reach {1} this turn")]
    Unreachable(String, String),
    /// A node number outside the board.
    #[error("node {0} is not on this board")]
    OffBoard(u8),
}

/// Every legal move of one side, grouped by origin: one bitboard of destinations per piece that
/// can move. Holds at most one entry per node, so it never allocates.
#[derive(Clone)]
pub struct MoveList {
    from: [Node; 64],
    to: [u64; 64],
    len: usize,
}

impl Default for MoveList {
    fn default() -> Self {
        MoveList {
            from: [Node(0); 64],
            to: [0; 64],
            len: 0,
        }
    }
}

impl std::fmt::Debug for MoveList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl MoveList {
    /// Empties the list for reuse.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    #[inline]
    fn push(&mut self, from: Node, to: u64) {
        self.from[self.len] = from;
        self.to[self.len] = to;
        self.len += 1;
    }

    /// Number of moves.
    pub fn len(&self) -> usize {
        self.to[..self.len]
            .iter()
            .map(|d| d.count_ones() as usize)
            .sum()
    }

    /// Whether there is no legal move at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Origins with their destination bitboards.
    pub fn by_origin(&self) -> impl Iterator<Item = (Node, u64)> + '_ {
        self.from[..self.len]
            .iter()
            .copied()
            .zip(self.to[..self.len].iter().copied())
    }

    /// Every move, origin by origin.
    pub fn iter(&self) -> impl Iterator<Item = Move> + '_ {
        self.by_origin()
            .flat_map(|(from, to)| Nodes(to).map(move |to| Move { from, to }))
    }

    /// The `index`-th move of [`MoveList::iter`] without walking the others one by one (random
    /// playouts pick moves this way). `None` when `index >= len()`.
    pub fn nth(&self, mut index: usize) -> Option<Move> {
        for (from, to) in self.by_origin() {
            let count = to.count_ones() as usize;
            if index < count {
                let mut bits = to;
                for _ in 0..index {
                    bits &= bits - 1;
                }
                return Some(Move {
                    from,
                    to: Node(bits.trailing_zeros() as u8),
                });
            }
            index -= count;
        }
        None
    }

    /// Whether `mv` is in the list.
    pub fn contains(&self, mv: Move) -> bool {
        self.by_origin()
            .any(|(from, to)| from == mv.from && to & mv.to.bit() != 0)
    }
}

/// Where every piece stands, whose turn it is and how long since the last fight.
#[derive(Clone, Copy)]
pub struct Position {
    rules: Rules,
    topo: &'static Topology,
    kinds: [PieceKind; 64],
    ids: [PieceId; 64],
    occupied: [u64; 2],
    /// Nodes holding a piece that never moves (mines and flags), either side.
    fixed: u64,
    /// Nodes holding an engineer, either side.
    engineers: u64,
    to_move: Side,
    plies_without_combat: u16,
}

impl PartialEq for Position {
    fn eq(&self, other: &Self) -> bool {
        self.rules == other.rules
            && self.occupied == other.occupied
            && self.to_move == other.to_move
            && self.plies_without_combat == other.plies_without_combat
            && Nodes(self.occupied[0] | self.occupied[1]).all(|n| {
                self.kinds[n.index()] == other.kinds[n.index()]
                    && self.ids[n.index()] == other.ids[n.index()]
            })
    }
}

impl Eq for Position {}

impl std::fmt::Debug for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Position({})", crate::notation::to_notation(self))
    }
}

impl Position {
    /// An empty board under `rules`, `to_move` to play.
    pub fn empty(rules: Rules, to_move: Side) -> Position {
        Position {
            rules,
            topo: rules.topology(),
            kinds: [PieceKind(0); 64],
            ids: [PieceId(0); 64],
            occupied: [0; 2],
            fixed: 0,
            engineers: 0,
            to_move,
            plies_without_combat: 0,
        }
    }

    /// The rule set.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The board.
    pub fn topology(&self) -> &'static Topology {
        self.topo
    }

    /// Whose turn it is.
    pub fn to_move(&self) -> Side {
        self.to_move
    }

    /// Plies since the last fight.
    pub fn plies_without_combat(&self) -> u16 {
        self.plies_without_combat
    }

    /// Sets whose turn it is (for building positions).
    pub fn set_to_move(&mut self, side: Side) {
        self.to_move = side;
    }

    /// Sets the no-combat counter (for building positions).
    pub fn set_plies_without_combat(&mut self, plies: u16) {
        self.plies_without_combat = plies;
    }

    /// Nodes occupied by `side`.
    #[inline]
    pub fn occupied(&self, side: Side) -> u64 {
        self.occupied[side.index()]
    }

    /// The piece on `node`, if any.
    #[inline]
    pub fn piece_at(&self, node: Node) -> Option<Piece> {
        let bit = node.bit();
        let side = if self.occupied[0] & bit != 0 {
            Side::South
        } else if self.occupied[1] & bit != 0 {
            Side::North
        } else {
            return None;
        };
        Some(Piece {
            side,
            kind: self.kinds[node.index()],
            id: self.ids[node.index()],
        })
    }

    /// Every piece on the board with its node, lowest node first.
    pub fn pieces(&self) -> impl Iterator<Item = (Node, Piece)> + '_ {
        Nodes(self.occupied[0] | self.occupied[1])
            .map(move |n| (n, self.piece_at(n).expect("occupied node has a piece")))
    }

    /// Puts a piece on an empty node. Returns `false` (and changes nothing) if the node is off the
    /// board or occupied.
    pub fn put(&mut self, node: Node, piece: Piece) -> bool {
        if !self.topo.contains(node) || self.piece_at(node).is_some() {
            return false;
        }
        let bit = node.bit();
        self.occupied[piece.side.index()] |= bit;
        self.kinds[node.index()] = piece.kind;
        self.ids[node.index()] = piece.id;
        if !self.rules.kind_moves(piece.kind) {
            self.fixed |= bit;
        }
        if self.is_engineer(piece.kind) {
            self.engineers |= bit;
        }
        true
    }

    /// Removes and returns the piece on `node`.
    pub fn remove(&mut self, node: Node) -> Option<Piece> {
        let piece = self.piece_at(node)?;
        let clear = !node.bit();
        self.occupied[0] &= clear;
        self.occupied[1] &= clear;
        self.fixed &= clear;
        self.engineers &= clear;
        self.kinds[node.index()] = PieceKind(0);
        self.ids[node.index()] = PieceId(0);
        Some(piece)
    }

    #[inline]
    fn is_engineer(&self, kind: PieceKind) -> bool {
        match self.rules.family {
            Family::Junqi => kind == junqi::ENGINEER,
            // Gunjin Shogi engineers slide on every square; the generator reads kinds instead.
            Family::GunjinShogi => false,
        }
    }

    /// The kind on `node` (`PieceKind(0)` when empty), for the family move generators.
    #[inline]
    pub(crate) fn kind_at(&self, node: Node) -> PieceKind {
        self.kinds[node.index()]
    }

    /// Nodes of `side` holding a piece that may move this game (not a mine or flag, not frozen in
    /// an HQ).
    #[inline]
    pub fn movable(&self, side: Side) -> u64 {
        let mut movable = self.occupied[side.index()] & !self.fixed;
        if !self.rules.hq_pieces_may_move {
            movable &= !(self.topo.hq[0] | self.topo.hq[1]);
        }
        movable
    }

    /// Nodes a piece of `side` may end a move on: not own pieces, not enemy pieces in camps.
    #[inline]
    fn open_to(&self, side: Side) -> u64 {
        let own = self.occupied[side.index()];
        let enemy = self.occupied[side.other().index()];
        self.topo.all & !own & !(enemy & self.topo.camps)
    }

    /// Every destination of the piece on `from` (for its owner, whoever is to move). Zero for an
    /// empty node, a mine, a flag or a frozen piece.
    pub fn destinations(&self, from: Node) -> u64 {
        let Some(piece) = self.piece_at(from) else {
            return 0;
        };
        if self.movable(piece.side) & from.bit() == 0 {
            return 0;
        }
        self.destinations_of_movable(from, piece.side)
    }

    #[inline]
    fn destinations_of_movable(&self, from: Node, side: Side) -> u64 {
        if self.rules.family == Family::GunjinShogi {
            return crate::gunjin::destinations(self, from, side);
        }
        let topo = self.topo;
        let open = self.open_to(side);
        let mut dest = topo.neighbors[from.index()] & open;
        let bit = from.bit();
        if topo.rail & bit != 0 {
            let occupied = self.occupied[0] | self.occupied[1];
            if self.engineers & bit != 0 {
                dest |= self.engineer_paths(from, occupied) & open;
            } else {
                dest |= self.slides(from, occupied) & open;
            }
        }
        dest
    }

    /// Straight rail slides: along each ray up to and including the first occupied node.
    #[inline]
    fn slides(&self, from: Node, occupied: u64) -> u64 {
        let rays = &self.topo.rays[from.index()];
        let mut dest = 0;
        // East and north rays run to higher node numbers: the first blocker is the lowest bit.
        for &ray in &rays[..2] {
            let blockers = ray & occupied;
            dest |= if blockers == 0 {
                ray
            } else {
                let first = blockers & blockers.wrapping_neg();
                ray & (first | (first - 1))
            };
        }
        // West and south rays run to lower numbers: the first blocker is the highest bit.
        for &ray in &rays[2..] {
            let blockers = ray & occupied;
            dest |= if blockers == 0 {
                ray
            } else {
                let first = 63 - blockers.leading_zeros();
                ray & !((1u64 << first) - 1)
            };
        }
        dest
    }

    /// An engineer's rail paths: every empty rail node connected to `from` through empty rail
    /// nodes, plus the occupied rail nodes adjacent to that region (the first piece on a path).
    #[inline]
    fn engineer_paths(&self, from: Node, occupied: u64) -> u64 {
        let topo = self.topo;
        let columns = topo.columns as u32;
        let (east, north) = (topo.rail_east, topo.rail_north);
        let expand = |x: u64| {
            (x & east) << 1 | (x >> 1) & east | (x & north) << columns | (x >> columns) & north
        };
        let empty_rail = topo.rail & !occupied;
        let mut reach = from.bit();
        loop {
            let next = reach | expand(reach) & empty_rail;
            if next == reach {
                break;
            }
            reach = next;
        }
        (reach | expand(reach)) & !from.bit()
    }

    /// Every legal move of the side to move, written into `list` (which is cleared first).
    pub fn legal_moves_into(&self, list: &mut MoveList) {
        list.clear();
        let side = self.to_move;
        for from in Nodes(self.movable(side)) {
            let dest = self.destinations_of_movable(from, side);
            if dest != 0 {
                list.push(from, dest);
            }
        }
    }

    /// Every legal move of the side to move.
    pub fn legal_moves(&self) -> MoveList {
        let mut list = MoveList::default();
        self.legal_moves_into(&mut list);
        list
    }

    /// Whether `side` has any legal move. Cheap: any path or slide starts with a step that is
    /// itself legal (its first node is empty, or the first occupied node and attackable), so
    /// one-step destinations decide it.
    pub fn has_legal_move(&self, side: Side) -> bool {
        if self.rules.family == Family::GunjinShogi {
            return crate::gunjin::has_legal_move(self, side);
        }
        let open = self.open_to(side);
        Nodes(self.movable(side)).any(|n| self.topo.neighbors[n.index()] & open != 0)
    }

    /// Checks a move for the side to move, with the reason it is illegal.
    pub fn check(&self, mv: Move) -> Result<Piece, IllegalMove> {
        let topo = self.topo;
        for node in [mv.from, mv.to] {
            if !topo.contains(node) {
                return Err(IllegalMove::OffBoard(node.0));
            }
        }
        let name = |n: Node| topo.name(n).to_string();
        let piece = self
            .piece_at(mv.from)
            .ok_or_else(|| IllegalMove::NoPiece(name(mv.from)))?;
        if piece.side != self.to_move {
            return Err(IllegalMove::NotYourPiece(
                name(mv.from),
                piece.side,
                self.to_move,
            ));
        }
        if !self.rules.kind_moves(piece.kind) {
            return Err(IllegalMove::Immobile(name(mv.from)));
        }
        if self.movable(piece.side) & mv.from.bit() == 0 {
            return Err(IllegalMove::FrozenInHq(name(mv.from)));
        }
        if self.occupied[piece.side.index()] & mv.to.bit() != 0 {
            return Err(IllegalMove::OwnPiece(name(mv.to)));
        }
        if self.occupied[piece.side.other().index()] & topo.camps & mv.to.bit() != 0 {
            return Err(IllegalMove::CampProtected(name(mv.to)));
        }
        if self.destinations_of_movable(mv.from, piece.side) & mv.to.bit() == 0 {
            return Err(IllegalMove::Unreachable(name(mv.from), name(mv.to)));
        }
        Ok(piece)
    }

    /// Plays one move for the side to move and judges it: combat, then the end-of-game checks in
    /// the spec's order (flag captured; the side now to move has no legal move; the no-combat
    /// limit). On error the position is unchanged.
    pub fn play(&mut self, mv: Move) -> Result<PlyReport, IllegalMove> {
        let mover = self.check(mv)?;
        Ok(self.play_unchecked(mv, mover))
    }

    /// [`Position::play`] for a move known to be legal (taken from [`Position::legal_moves`]).
    pub fn play_legal(&mut self, mv: Move) -> PlyReport {
        let mover = self
            .piece_at(mv.from)
            .expect("play_legal: a legal move starts on a piece");
        debug_assert!(self.check(mv).is_ok(), "play_legal given {mv:?}");
        self.play_unchecked(mv, mover)
    }

    fn play_unchecked(&mut self, mv: Move, mover: Piece) -> PlyReport {
        let combat = match self.piece_at(mv.to) {
            None => {
                self.remove(mv.from);
                self.put(mv.to, mover);
                None
            }
            Some(defender) => {
                let (attacker_survives, defender_survives, flag_captured) =
                    if self.rules.family == Family::GunjinShogi {
                        self.judge_gunjin(mover.kind, mv.to, defender.side)
                    } else {
                        self.judge(mover.kind, defender.kind)
                    };
                self.remove(mv.from);
                if !defender_survives {
                    self.remove(mv.to);
                }
                if attacker_survives {
                    self.put(mv.to, mover);
                }
                Some(Combat {
                    defender,
                    attacker_survives,
                    defender_survives,
                    flag_captured,
                })
            }
        };
        let win = if combat.is_some_and(|c| c.flag_captured) {
            Some(EndReason::FlagCaptured)
        } else if self.rules.family == Family::GunjinShogi
            && crate::gunjin::takes_hq(mover.kind)
            && combat.is_none_or(|c| c.attacker_survives)
            && self.topo.hq[mover.side.other().index()] & mv.to.bit() != 0
        {
            Some(EndReason::HqEntered)
        } else {
            None
        };
        let outcome = self.finish_ply(mover.side, combat.is_some(), win);
        PlyReport {
            mv,
            mover,
            combat,
            outcome,
        }
    }

    /// Combat between an attacker and a defender: `(attacker survives, defender survives, flag
    /// captured)`, judged in the spec's order: bomb, flag, mine, rank.
    pub fn judge(&self, attacker: PieceKind, defender: PieceKind) -> (bool, bool, bool) {
        use junqi::{BOMB, ENGINEER, FLAG, MINE};
        match self.rules.family {
            Family::GunjinShogi => {
                let fight = crate::gunjin::fight(&self.rules, attacker, defender);
                (
                    fight == crate::gunjin::Fight::Wins,
                    fight == crate::gunjin::Fight::Loses,
                    false,
                )
            }
            Family::Junqi => {
                if attacker == BOMB || defender == BOMB {
                    if defender == FLAG {
                        // The bomb goes with the flag and the capture stands, unless the house
                        // says the bomb spares it.
                        return if self.rules.bomb_spares_flag {
                            (false, true, false)
                        } else {
                            (false, false, true)
                        };
                    }
                    (false, false, false)
                } else if defender == FLAG {
                    (true, false, true)
                } else if defender == MINE {
                    if attacker == ENGINEER {
                        (true, false, false)
                    } else if self.rules.mine_survives_non_engineer {
                        (false, true, false)
                    } else {
                        (false, false, false)
                    }
                } else {
                    (attacker > defender, defender > attacker, false)
                }
            }
        }
    }

    /// A Gunjin Shogi fight against the piece of `side` on `at`: a flag fights as the own piece
    /// directly behind it, which is not touched.
    fn judge_gunjin(&self, attacker: PieceKind, at: Node, side: Side) -> (bool, bool, bool) {
        let defending =
            crate::gunjin::defending_kind(self, at, side).unwrap_or(crate::piece::gunjin::FLAG);
        self.judge(attacker, defending)
    }

    /// A ply that moves nothing: the side to move lost its turn to the clock. It counts for the
    /// no-combat limit like any other ply. Returns the outcome if the game ends by it (the side now
    /// to move has no legal move: the player who timed out wins; or the no-combat limit).
    pub fn pass(&mut self) -> Option<Outcome> {
        let side = self.to_move;
        self.finish_ply(side, false, None)
    }

    fn finish_ply(&mut self, mover: Side, combat: bool, win: Option<EndReason>) -> Option<Outcome> {
        self.to_move = mover.other();
        self.plies_without_combat = if combat {
            0
        } else {
            self.plies_without_combat.saturating_add(1)
        };
        if let Some(reason) = win {
            return Some(Outcome::win(mover, reason));
        }
        self.outcome_at_turn_start()
    }

    /// The end-of-game checks that hold at the start of a turn: the side to move has no legal move
    /// (the other side wins), then the no-combat limit (draw).
    pub fn outcome_at_turn_start(&self) -> Option<Outcome> {
        if !self.has_legal_move(self.to_move) {
            // Gunjin Shogi: both sides without a movable piece (both lost their last ones in one
            // fight) is a draw.
            if self.rules.family == Family::GunjinShogi
                && self.occupied[0] & !self.fixed == 0
                && self.occupied[1] & !self.fixed == 0
            {
                return Some(Outcome::draw(EndReason::NoLegalMoves));
            }
            return Some(Outcome::win(self.to_move.other(), EndReason::NoLegalMoves));
        }
        if self.plies_without_combat >= self.rules.no_combat_draw_plies {
            return Some(Outcome::draw(EndReason::NoCombatLimit));
        }
        None
    }

    /// Nodes holding a piece of `side` of the given kind.
    pub fn nodes_of(&self, side: Side, kind: PieceKind) -> u64 {
        Nodes(self.occupied[side.index()])
            .filter(|n| self.kinds[n.index()] == kind)
            .fold(0, |m, n| m | n.bit())
    }
}

/// The serialized form of a position (snapshots): the rules, the turn, the counter and the pieces.
#[derive(Serialize, Deserialize)]
struct PositionData {
    rules: Rules,
    to_move: Side,
    plies_without_combat: u16,
    pieces: Vec<(Node, Piece)>,
}

impl Serialize for Position {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        PositionData {
            rules: self.rules,
            to_move: self.to_move,
            plies_without_combat: self.plies_without_combat,
            pieces: self.pieces().collect(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Position {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let data = PositionData::deserialize(d)?;
        let mut position = Position::empty(data.rules, data.to_move);
        position.plies_without_combat = data.plies_without_combat;
        for (node, piece) in data.pieces {
            if !position.put(node, piece) {
                return Err(serde::de::Error::custom(format!(
                    "node {} is off the board or holds two pieces",
                    node.0
                )));
            }
        }
        Ok(position)
    }
}
