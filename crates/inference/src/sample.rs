//! Complete opponent layouts drawn from the belief: a kind for every opponent piece (on the
//! board or taken), each within the piece's possible kinds and, together, using each kind no
//! more often than the army has it (exactly as often when the whole army is known).
//!
//! A searching player plays its candidate moves out on such layouts. A layout is drawn from the
//! [`Beliefs`] only (what the seat has seen), never from the game, so a search over layouts can
//! learn nothing a person in the seat could not.
//!
//! How: pieces are visited in a random order, and each gets a kind drawn by its estimated kind
//! chances ([`Beliefs::marginals`]); a kind is kept only if the pieces still to visit can take
//! the remaining copies (a matching of pieces to kinds, kept up to date by augmenting paths),
//! so the draw never paints itself into a corner and every layout is consistent.

use crate::belief::{Beliefs, KIND_SLOTS, KindSet};
use hidden_front_rules::{GameRng, PieceId, PieceKind};

/// One complete guess of the opponent's army.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    kinds: Vec<(PieceId, PieceKind)>,
    /// Whether the counts held (see [`Layout::consistent`]).
    consistent: bool,
}

impl Layout {
    /// The kind the layout gives opponent piece `id`; `None` for an id it does not know.
    pub fn kind_of(&self, id: PieceId) -> Option<PieceKind> {
        self.kinds.iter().find(|(i, _)| *i == id).map(|(_, k)| *k)
    }

    /// Every opponent piece with its kind, in [`Beliefs::pieces`] order.
    pub fn kinds(&self) -> &[(PieceId, PieceKind)] {
        &self.kinds
    }

    /// Whether the layout uses each kind no more often than the army has it. Always true unless
    /// the belief itself is contradictory (an event the seat's model could not place); such a
    /// layout still keeps every piece within its possible kinds.
    pub fn consistent(&self) -> bool {
        self.consistent
    }
}

/// Draws [`Layout`]s from one state of the belief; built once per decision (it computes the
/// kind chances), then asked for as many layouts as the search wants.
#[derive(Debug, Clone)]
pub struct Sampler {
    ids: Vec<PieceId>,
    possible: Vec<KindSet>,
    chances: Vec<[f64; KIND_SLOTS]>,
    capacity: [u8; KIND_SLOTS],
    /// A full assignment within the sets and counts, if one exists: the starting point of
    /// every draw.
    matching: Option<Vec<u8>>,
}

impl Sampler {
    /// A sampler for the belief as it stands.
    pub fn new(beliefs: &Beliefs) -> Sampler {
        let mut capacity = [0u8; KIND_SLOTS];
        for &(k, _, n) in beliefs.rules().kinds() {
            if (k.0 as usize) < KIND_SLOTS {
                capacity[k.0 as usize] = n;
            }
        }
        let possible: Vec<KindSet> = beliefs.pieces().iter().map(|p| p.possible).collect();
        let mut sampler = Sampler {
            ids: beliefs.pieces().iter().map(|p| p.id).collect(),
            chances: beliefs.marginals(),
            possible,
            capacity,
            matching: None,
        };
        sampler.matching = sampler.initial_matching();
        sampler
    }

    /// Whether the belief admits a layout that keeps every count (see [`Layout::consistent`]).
    pub fn consistent(&self) -> bool {
        self.matching.is_some()
    }

    fn initial_matching(&self) -> Option<Vec<u8>> {
        let mut m = Matching {
            assign: vec![u8::MAX; self.ids.len()],
            used: [0; KIND_SLOTS],
            fixed: vec![false; self.ids.len()],
        };
        for i in 0..self.ids.len() {
            let mut seen = 0u32;
            if !m.augment(i, &self.possible, &self.capacity, &mut seen) {
                return None;
            }
        }
        Some(m.assign)
    }

    /// One layout, drawn with `rng`.
    pub fn draw(&self, rng: &mut GameRng) -> Layout {
        let n = self.ids.len();
        let mut order: Vec<usize> = (0..n).collect();
        rng.shuffle(&mut order);
        let Some(start) = &self.matching else {
            // A contradictory belief: each piece on its own, within its set.
            let kinds = (0..n)
                .map(|i| (self.ids[i], self.pick(i, self.possible[i], rng)))
                .collect();
            return Layout {
                kinds,
                consistent: false,
            };
        };
        let mut m = Matching {
            assign: start.clone(),
            used: [0; KIND_SLOTS],
            fixed: vec![false; n],
        };
        for &k in &m.assign {
            m.used[k as usize] += 1;
        }
        for i in order {
            let mut candidates = self.possible[i];
            loop {
                let kind = self.pick(i, candidates, rng);
                if m.fix(i, kind.0, &self.possible, &self.capacity) {
                    break;
                }
                candidates.0 &= !KindSet::only(kind).0;
                if candidates.is_empty() {
                    // Unreachable: the kind the matching gives the piece always fits.
                    let kind = m.assign[i];
                    m.fixed[i] = true;
                    debug_assert!(self.possible[i].contains(PieceKind(kind)));
                    break;
                }
            }
        }
        Layout {
            kinds: (0..n)
                .map(|i| (self.ids[i], PieceKind(m.assign[i])))
                .collect(),
            consistent: true,
        }
    }

    /// A kind of `candidates` drawn by piece `i`'s chances (uniformly if none has a chance).
    fn pick(&self, i: usize, candidates: KindSet, rng: &mut GameRng) -> PieceKind {
        let weights: Vec<(PieceKind, f64)> = candidates
            .iter()
            .map(|k| (k, self.chances[i][k.0 as usize].max(0.0)))
            .collect();
        let total: f64 = weights.iter().map(|(_, w)| w).sum();
        if total <= 0.0 {
            let all: Vec<PieceKind> = candidates.iter().collect();
            return all[rng.below(all.len() as u32) as usize];
        }
        let mut x = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
        for &(k, w) in &weights {
            if x < w {
                return k;
            }
            x -= w;
        }
        weights.last().map(|(k, _)| *k).unwrap_or(PieceKind(0))
    }
}

/// Pieces matched to kinds within the sets and counts; `fixed` pieces keep their kind.
struct Matching {
    assign: Vec<u8>,
    used: [u8; KIND_SLOTS],
    fixed: Vec<bool>,
}

impl Matching {
    /// Finds a kind for unassigned piece `i`, moving unfixed pieces along an augmenting path.
    fn augment(
        &mut self,
        i: usize,
        possible: &[KindSet],
        capacity: &[u8; KIND_SLOTS],
        seen: &mut u32,
    ) -> bool {
        for k in possible[i].iter() {
            let kb = KindSet::only(k).0;
            if *seen & kb != 0 {
                continue;
            }
            *seen |= kb;
            if self.used[k.0 as usize] < capacity[k.0 as usize] {
                self.assign[i] = k.0;
                self.used[k.0 as usize] += 1;
                return true;
            }
            for j in 0..self.assign.len() {
                if j == i || self.fixed[j] || self.assign[j] != k.0 {
                    continue;
                }
                // Move j elsewhere to free its copy of k for i.
                self.assign[j] = u8::MAX;
                self.used[k.0 as usize] -= 1;
                if self.augment(j, possible, capacity, seen) {
                    self.assign[i] = k.0;
                    self.used[k.0 as usize] += 1;
                    return true;
                }
                self.assign[j] = k.0;
                self.used[k.0 as usize] += 1;
            }
        }
        false
    }

    /// Fixes piece `i` to `kind` if the other unfixed pieces can still be matched; otherwise
    /// changes nothing and answers false.
    fn fix(
        &mut self,
        i: usize,
        kind: u8,
        possible: &[KindSet],
        capacity: &[u8; KIND_SLOTS],
    ) -> bool {
        if self.assign[i] == kind {
            self.fixed[i] = true;
            return true;
        }
        let saved = (self.assign.clone(), self.used);
        let old = self.assign[i];
        self.used[old as usize] -= 1;
        self.assign[i] = kind;
        self.used[kind as usize] += 1;
        self.fixed[i] = true;
        if self.used[kind as usize] <= capacity[kind as usize] {
            return true;
        }
        // One copy too many of `kind`: some unfixed holder of it must move elsewhere.
        for j in 0..self.assign.len() {
            if self.fixed[j] || self.assign[j] != kind {
                continue;
            }
            self.assign[j] = u8::MAX;
            self.used[kind as usize] -= 1;
            let mut seen = KindSet::only(PieceKind(kind)).0;
            if self.augment(j, possible, capacity, &mut seen) {
                return true;
            }
            self.assign[j] = kind;
            self.used[kind as usize] += 1;
        }
        (self.assign, self.used) = saved;
        self.fixed[i] = false;
        false
    }
}
