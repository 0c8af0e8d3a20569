//! What the player knows of each opponent piece: the set of kinds it can still be, narrowed by
//! where it started, whether it moved, how its fights ended and how many of each kind exist.
//!
//! Everything here is inferred from public facts (nodes, ids, fight results and the player's own
//! kinds); nothing reads a hidden kind. The rules that narrow the kinds are the family's own:
//! Junqi's deployment limits (flag in an HQ, mines on the back rows, bombs off the front row) and
//! its rail turns only hold for Junqi; Gunjin Shogi has its own (no flag or mine on a gate
//! square, a flag that fights as the piece behind it), see [`crate::Tracker`].

use crate::activity::{Activity, MoveModel};
use hidden_front_rules::piece::{gunjin, junqi};
use hidden_front_rules::{Family, Node, PieceId, PieceKind, Position, Rules, Side, Topology};

/// Kind numbers a [`KindSet`] and the [`Beliefs::marginals`] rows can hold (`0..KIND_SLOTS`):
/// Junqi uses 1..=12, Gunjin Shogi 1..=16.
pub const KIND_SLOTS: usize = 17;

/// A set of piece kinds as a bitmask: bit `k` stands for `PieceKind(k)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KindSet(pub u32);

impl KindSet {
    /// The set holding only `kind`.
    pub fn only(kind: PieceKind) -> KindSet {
        KindSet(bit(kind))
    }

    /// Whether `kind` is in the set.
    pub fn contains(self, kind: PieceKind) -> bool {
        self.0 & bit(kind) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Number of kinds in the set.
    pub fn len(self) -> u32 {
        self.0.count_ones()
    }

    /// The single kind of a one-kind set.
    pub fn single(self) -> Option<PieceKind> {
        (self.len() == 1).then(|| PieceKind(self.0.trailing_zeros() as u8))
    }

    /// The kinds in the set, lowest number first.
    pub fn iter(self) -> impl Iterator<Item = PieceKind> {
        (0u8..KIND_SLOTS as u8)
            .filter(move |k| self.0 & (1 << k) != 0)
            .map(PieceKind)
    }
}

fn bit(kind: PieceKind) -> u32 {
    if (kind.0 as usize) < KIND_SLOTS {
        1 << kind.0
    } else {
        0
    }
}

/// The flag kind of the rules' family.
pub fn flag_kind(rules: &Rules) -> PieceKind {
    match rules.family {
        Family::Junqi => junqi::FLAG,
        Family::GunjinShogi => gunjin::FLAG,
    }
}

/// Everything known of one opponent piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnemyPiece {
    /// Its public id.
    pub id: PieceId,
    /// The kinds it can still be (never empty).
    pub possible: KindSet,
    /// Whether it has ever moved (then it is no mine and no flag).
    pub moved: bool,
    /// Whether it is still on the board.
    pub alive: bool,
}

/// The player's knowledge of every opponent piece seen at the start of play.
#[derive(Debug, Clone)]
pub struct Beliefs {
    rules: Rules,
    /// A neutral position, only used for its combat judge (which depends on the rules alone).
    judge: Position,
    pieces: Vec<EnemyPiece>,
    index: [Option<u8>; 256],
    /// Whether the opponent started with its whole army: then counting arguments are sound.
    complete: bool,
    /// Every kind of the rule set (computed once: asked on every observation).
    all: KindSet,
    /// The kinds that can move.
    mobile: KindSet,
    /// What each piece (in `pieces` order) has been seen to do.
    activity: Vec<Activity>,
    /// If set, each piece's kind chances are weighted by how likely its activity is for each
    /// kind ([`Beliefs::marginals`]).
    move_model: Option<MoveModel>,
}

impl Beliefs {
    /// No knowledge yet.
    pub fn new(rules: Rules) -> Beliefs {
        Beliefs {
            rules,
            judge: Position::empty(rules, Side::South),
            pieces: Vec::new(),
            index: [None; 256],
            complete: false,
            all: KindSet(rules.kinds().iter().fold(0, |m, (k, _, _)| m | bit(*k))),
            mobile: KindSet(
                rules
                    .kinds()
                    .iter()
                    .filter(|(k, _, _)| rules.kind_moves(*k))
                    .fold(0, |m, (k, _, _)| m | bit(*k)),
            ),
            activity: Vec::new(),
            move_model: None,
        }
    }

    /// Weights the kind chances by `model`'s likelihood of each piece's activity (`None`: by
    /// the constraints and the counts alone).
    pub fn set_move_model(&mut self, model: Option<MoveModel>) {
        self.move_model = model;
    }

    /// What piece `id` has been seen to do, if it is an opponent piece.
    pub fn activity(&self, id: PieceId) -> Option<Activity> {
        self.index[id.0 as usize].map(|i| self.activity[i as usize])
    }

    /// One turn of the opponent: piece `mover` moved (an attack if `attacked`). Every opponent
    /// piece on the board saw the turn; the mover is counted before any fight removes it.
    pub fn saw_turn(&mut self, mover: PieceId, attacked: bool) {
        for (piece, activity) in self.pieces.iter().zip(self.activity.iter_mut()) {
            if piece.alive {
                activity.turns = activity.turns.saturating_add(1);
            }
        }
        if let Some(i) = self.index[mover.0 as usize] {
            let activity = &mut self.activity[i as usize];
            activity.moves = activity.moves.saturating_add(1);
            activity.attacks = activity.attacks.saturating_add(u16::from(attacked));
        }
    }

    /// The rule set.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// A sampler of complete opponent layouts consistent with what is known now (see
    /// [`crate::sample`]).
    pub fn sampler(&self) -> crate::Sampler {
        crate::Sampler::new(self)
    }

    /// Every kind of the rule set.
    pub fn all_kinds(&self) -> KindSet {
        self.all
    }

    /// The kinds that can move.
    pub fn mobile_kinds(&self) -> KindSet {
        self.mobile
    }

    /// Starts over with the opponent's pieces as play starts: `side` is the opponent, `pieces`
    /// its ids and start nodes. The start node already narrows the kinds by the deployment rules
    /// (flags only in an HQ, mines only on the back rows, bombs off the front row).
    pub fn start(&mut self, side: Side, pieces: &[(Node, PieceId)]) {
        let topo = self.rules.topology();
        self.pieces.clear();
        self.activity.clear();
        self.index = [None; 256];
        for &(node, id) in pieces {
            if self.index[id.0 as usize].is_some() {
                continue;
            }
            let possible = start_kinds(&self.rules, topo, side, node, self.all_kinds());
            self.index[id.0 as usize] = Some(self.pieces.len() as u8);
            self.pieces.push(EnemyPiece {
                id,
                possible,
                moved: false,
                alive: true,
            });
            self.activity.push(Activity::default());
        }
        self.complete = self.pieces.len() == self.rules.pieces_per_side();
        self.propagate();
    }

    /// What is known of piece `id`, if it is an opponent piece.
    pub fn get(&self, id: PieceId) -> Option<&EnemyPiece> {
        self.index[id.0 as usize].map(|i| &self.pieces[i as usize])
    }

    /// Every opponent piece, dead or alive.
    pub fn pieces(&self) -> &[EnemyPiece] {
        &self.pieces
    }

    fn slot(&mut self, id: PieceId) -> Option<&mut EnemyPiece> {
        self.index[id.0 as usize].map(|i| &mut self.pieces[i as usize])
    }

    /// Narrows piece `id` to `allowed`. A contradiction (nothing left) means the player's model
    /// was wrong somewhere; the piece then keeps `allowed` alone rather than becoming impossible.
    pub fn restrict(&mut self, id: PieceId, allowed: KindSet) {
        let mobile = self.mobile_kinds();
        let all = self.all_kinds();
        let allowed = KindSet(allowed.0 & all.0);
        let mut changed = false;
        if let Some(piece) = self.slot(id) {
            let before = piece.possible;
            let narrowed = KindSet(piece.possible.0 & allowed.0);
            piece.possible = if !narrowed.is_empty() {
                narrowed
            } else {
                let base = if piece.moved { mobile } else { all };
                let fallback = KindSet(base.0 & allowed.0);
                if fallback.is_empty() {
                    allowed
                } else {
                    fallback
                }
            };
            if piece.possible.is_empty() {
                piece.possible = all;
            }
            changed = piece.possible != before;
        }
        // Counting was at its fixed point before; only a change can move it.
        if changed {
            self.propagate();
        }
    }

    /// Piece `id` moved from `from` to `to`: it is no immobile kind (mine, flag), and in Junqi
    /// a move no straight slide or single step explains was an engineer's turn along the rails.
    /// (Gunjin Shogi has no such rule; the [`crate::Tracker`] checks its moves against the
    /// engine's move generator and calls [`Beliefs::saw_move_of`].)
    pub fn saw_move(&mut self, id: PieceId, from: Node, to: Node) {
        let topo = self.rules.topology();
        let mut allowed = self.mobile_kinds();
        if self.rules.family == Family::Junqi {
            let straight = topo.linked(from, to)
                || topo
                    .rays
                    .get(from.index())
                    .is_some_and(|rays| rays.iter().any(|r| r & to.bit() != 0));
            if !straight {
                allowed = KindSet(allowed.0 & bit(junqi::ENGINEER));
            }
        }
        self.saw_move_of(id, allowed);
    }

    /// Piece `id` moved, and only kinds of `allowed` could have made that move (the caller
    /// asked the move generator): it is now one of `allowed` that can move at all.
    pub fn saw_move_of(&mut self, id: PieceId, allowed: KindSet) {
        let allowed = KindSet(allowed.0 & self.mobile_kinds().0);
        if let Some(piece) = self.slot(id) {
            piece.moved = true;
        }
        self.restrict(id, allowed);
    }

    /// Piece `id` attacked one of the player's pieces of kind `mine`, with this result.
    pub fn saw_attack_by(
        &mut self,
        id: PieceId,
        mine: PieceKind,
        attacker_survives: bool,
        defender_survives: bool,
    ) {
        let judge = self.judge;
        let allowed = consistent(
            self.mobile_kinds(),
            (attacker_survives, defender_survives),
            |k| judge.judge(k, mine),
        );
        if let Some(piece) = self.slot(id) {
            piece.moved = true;
        }
        self.restrict(id, allowed);
        self.set_alive(id, attacker_survives);
    }

    /// One of the player's pieces of kind `mine` attacked piece `id`, with this result
    /// (Junqi; for Gunjin Shogi use [`Beliefs::saw_attack_on_backed`], since a flag fights as
    /// the piece behind it).
    pub fn saw_attack_on(
        &mut self,
        id: PieceId,
        mine: PieceKind,
        attacker_survives: bool,
        defender_survives: bool,
    ) {
        let judge = self.judge;
        let allowed = consistent(
            self.all_kinds(),
            (attacker_survives, defender_survives),
            |k| judge.judge(mine, k),
        );
        self.restrict(id, allowed);
        self.set_alive(id, defender_survives);
    }

    /// Gunjin Shogi: one of the player's pieces of kind `mine` attacked piece `id`, with this
    /// result; `behind` is the opponent piece directly behind `id` (towards its own back rank),
    /// if any. A flag fights as that piece (and loses to anything with none behind it), so the
    /// flag stays possible when some kind the piece behind can be gives the seen result.
    pub fn saw_attack_on_backed(
        &mut self,
        id: PieceId,
        mine: PieceKind,
        attacker_survives: bool,
        defender_survives: bool,
        behind: Option<PieceId>,
    ) {
        let judge = self.judge;
        let seen = (attacker_survives, defender_survives);
        let flag = flag_kind(&self.rules);
        let mut allowed = consistent(KindSet(self.all_kinds().0 & !bit(flag)), seen, |k| {
            judge.judge(mine, k)
        });
        let backs = match behind.and_then(|b| self.get(b)) {
            Some(b) => KindSet(b.possible.0 & !bit(flag)),
            None => KindSet(0),
        };
        let flag_fits = if backs.is_empty() {
            let (a, d, _) = judge.judge(mine, flag);
            (a, d) == seen
        } else {
            !consistent(backs, seen, |k| judge.judge(mine, k)).is_empty()
        };
        if flag_fits {
            allowed.0 |= bit(flag);
        }
        self.restrict(id, allowed);
        self.set_alive(id, defender_survives);
    }

    /// Piece `id` was shown to be of kind `kind` (a revealed flag).
    pub fn saw_kind(&mut self, id: PieceId, kind: PieceKind) {
        self.restrict(id, KindSet::only(kind));
    }

    /// Piece `id` left the board (or is still on it).
    pub fn set_alive(&mut self, id: PieceId, alive: bool) {
        if let Some(piece) = self.slot(id) {
            piece.alive = alive;
        }
    }

    /// Counting: a kind whose every copy is pinned to known pieces is ruled out for the others,
    /// and (with the whole army known) a kind with as many candidates as copies pins them all.
    fn propagate(&mut self) {
        let kinds: Vec<(PieceKind, u8)> =
            self.rules.kinds().iter().map(|&(k, _, n)| (k, n)).collect();
        for _ in 0..32 {
            let mut changed = false;
            for &(kind, count) in &kinds {
                let pinned = self
                    .pieces
                    .iter()
                    .filter(|p| p.possible == KindSet::only(kind))
                    .count();
                if pinned >= count as usize {
                    for p in self.pieces.iter_mut() {
                        if p.possible != KindSet::only(kind) && p.possible.contains(kind) {
                            let rest = KindSet(p.possible.0 & !bit(kind));
                            if !rest.is_empty() {
                                p.possible = rest;
                                changed = true;
                            }
                        }
                    }
                }
                if self.complete {
                    let candidates = self
                        .pieces
                        .iter()
                        .filter(|p| p.possible.contains(kind))
                        .count();
                    if candidates == count as usize {
                        for p in self.pieces.iter_mut() {
                            if p.possible.contains(kind) && p.possible.len() > 1 {
                                p.possible = KindSet::only(kind);
                                changed = true;
                            }
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// For every opponent piece (in [`Beliefs::pieces`] order), the chance of each kind
    /// (indexed by kind number), spreading each kind's copies over the pieces that can be it
    /// (a few rounds of matrix scaling: rows sum to 1, columns to the kind's count). With a
    /// [`MoveModel`], each piece's row starts from the copies weighted by the likelihood of its
    /// activity for each kind.
    pub fn marginals(&self) -> Vec<[f64; KIND_SLOTS]> {
        let mut m: Vec<[f64; KIND_SLOTS]> = self
            .pieces
            .iter()
            .zip(&self.activity)
            .map(|(p, &activity)| {
                let mut row = [0.0; KIND_SLOTS];
                let mut logs = [0.0; KIND_SLOTS];
                let mut top = f64::NEG_INFINITY;
                for &(k, _, _) in self.rules.kinds() {
                    if p.possible.contains(k) {
                        let l = self
                            .move_model
                            .map_or(0.0, |model| model.log_likelihood(k, activity));
                        logs[k.0 as usize] = l;
                        top = top.max(l);
                    }
                }
                for &(k, _, n) in self.rules.kinds() {
                    if p.possible.contains(k) {
                        row[k.0 as usize] = f64::from(n) * (logs[k.0 as usize] - top).exp();
                    }
                }
                row
            })
            .collect();
        let rounds = if self.complete { 12 } else { 0 };
        for _ in 0..rounds {
            for &(k, _, n) in self.rules.kinds() {
                let col: f64 = m.iter().map(|r| r[k.0 as usize]).sum();
                if col > 0.0 {
                    let scale = f64::from(n) / col;
                    for r in m.iter_mut() {
                        r[k.0 as usize] *= scale;
                    }
                }
            }
            normalize_rows(&mut m);
        }
        normalize_rows(&mut m);
        m
    }
}

fn normalize_rows(m: &mut [[f64; KIND_SLOTS]]) {
    for r in m.iter_mut() {
        let sum: f64 = r.iter().sum();
        if sum > 0.0 {
            for x in r.iter_mut() {
                *x /= sum;
            }
        }
    }
}

/// The kinds a piece of `side` deployed on `node` can be under the family's deployment rules.
fn start_kinds(rules: &Rules, topo: &Topology, side: Side, node: Node, all: KindSet) -> KindSet {
    let s = side.index();
    let b = node.bit();
    let mut set = all.0;
    if rules.family == Family::GunjinShogi {
        // The flag and mines may not stand on an own gate square; anything else goes anywhere.
        if topo.gates[s] & b != 0 {
            set &= !(bit(gunjin::FLAG) | bit(gunjin::MINE));
        }
        return if set == 0 { all } else { KindSet(set) };
    }
    if topo.hq[s] & b == 0 {
        set &= !bit(junqi::FLAG);
    }
    if topo.back_rows[s] & b == 0 || topo.hq[s] & b != 0 {
        set &= !bit(junqi::MINE);
    }
    if !rules.bombs_on_front_row && topo.front_row[s] & b != 0 {
        set &= !bit(junqi::BOMB);
    }
    if set == 0 { all } else { KindSet(set) }
}

/// The kinds of `candidates` for which `fight` (the judge's verdict with the unknown piece of
/// that kind) gives the survivals that were `seen`: (attacker survives, defender survives).
fn consistent(
    candidates: KindSet,
    seen: (bool, bool),
    fight: impl Fn(PieceKind) -> (bool, bool, bool),
) -> KindSet {
    KindSet(
        candidates
            .iter()
            .filter(|&k| {
                let (a, d, _) = fight(k);
                (a, d) == seen
            })
            .fold(0, |m, k| m | bit(k)),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn node(name: &str) -> Node {
        Rules::default().topology().node(name).unwrap()
    }

    #[test]
    fn start_squares_narrow_kinds() {
        let mut b = Beliefs::new(Rules::default());
        b.start(
            Side::North,
            &[
                (node("B12"), PieceId(1)),
                (node("A12"), PieceId(2)),
                (node("A7"), PieceId(3)),
            ],
        );
        assert!(b.get(PieceId(1)).unwrap().possible.contains(junqi::FLAG));
        assert!(!b.get(PieceId(1)).unwrap().possible.contains(junqi::MINE));
        assert!(b.get(PieceId(2)).unwrap().possible.contains(junqi::MINE));
        assert!(!b.get(PieceId(2)).unwrap().possible.contains(junqi::FLAG));
        let front = b.get(PieceId(3)).unwrap().possible;
        assert!(!front.contains(junqi::BOMB) && !front.contains(junqi::MINE));
    }

    #[test]
    fn a_piece_that_beat_an_eight_is_the_commander() {
        let mut b = Beliefs::new(Rules::default());
        b.start(Side::North, &[(node("A7"), PieceId(4))]);
        b.saw_attack_by(PieceId(4), PieceKind(8), true, false);
        assert_eq!(
            b.get(PieceId(4)).unwrap().possible.single(),
            Some(PieceKind(9))
        );
        assert!(b.get(PieceId(4)).unwrap().alive);
    }

    #[test]
    fn a_turn_along_the_rails_is_an_engineer() {
        let mut b = Beliefs::new(Rules::default());
        b.start(Side::North, &[(node("A7"), PieceId(4))]);
        b.saw_move(PieceId(4), node("A7"), node("C6"));
        assert_eq!(
            b.get(PieceId(4)).unwrap().possible.single(),
            Some(junqi::ENGINEER)
        );
    }

    #[test]
    fn surviving_my_attack_bounds_from_below() {
        let mut b = Beliefs::new(Rules::default());
        b.start(Side::North, &[(node("C7"), PieceId(9))]);
        b.saw_attack_on(PieceId(9), PieceKind(6), false, true);
        let p = b.get(PieceId(9)).unwrap().possible;
        assert_eq!(p.iter().map(|k| k.0).collect::<Vec<_>>(), vec![7, 8, 9]);
    }

    /// A whole army of `side` by start square, ids from 0.
    pub(crate) fn whole_army(rules: &Rules, side: Side) -> Vec<(Node, PieceId)> {
        rules
            .topology()
            .deployment_squares(side)
            .enumerate()
            .map(|(i, n)| (n, PieceId(i as u8)))
            .collect()
    }

    #[test]
    fn marginals_sum_to_one_and_respect_counts() {
        let rules = Rules::default();
        let pieces = whole_army(&rules, Side::North);
        let mut b = Beliefs::new(rules);
        b.start(Side::North, &pieces);
        let m = b.marginals();
        for row in &m {
            assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        }
        let flag_total: f64 = m.iter().map(|r| r[junqi::FLAG.0 as usize]).sum();
        assert!((flag_total - 1.0).abs() < 0.05, "{flag_total}");
    }
}
