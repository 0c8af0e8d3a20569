//! The computer player: a board model rebuilt from projected events, and the choice among the
//! legal moves at its [`Level`]: random, greedy (one fight's expected material), belief (one ply
//! of expected value with the danger after it) or search (see [`crate::search`]).

use crate::formation;
use crate::values::{self, WIN, worth};
use crate::{Budget, Level};
use hidden_front_inference::{Beliefs, KIND_SLOTS, KindSet, Tracker};
use hidden_front_rules::{
    Deployment, Family, GameRng, Move, Node, Nodes, PieceId, PieceKind, Position, Rules, Side,
    ViewCombat, ViewEvent, ViewPiece,
};
/// Worth of keeping the own flag out of reach (scaled by the chance the attacker can move).
const FLAG_DANGER: f64 = 400.0;
/// Worth of keeping enemy pieces off the squares next to the own flag (one move from taking it).
const FLAG_NEAR: f64 = 60.0;
/// Share of a piece's worth counted as lost when an enemy piece can attack it next ply: the
/// opponent does not know the piece's kind, so a threat is not a certain loss.
const THREAT_SHARE: f64 = 0.45;
/// Worth of one step closer to an enemy HQ that may hold the flag.
const ADVANCE: f64 = 0.12;
/// Plies without a fight after which attacks get a bonus (to avoid the no-combat draw).
const RESTLESS_AFTER: u16 = 60;

/// A computer player for one seat. It learns only from what its seat is shown ([`ViewEvent`]s
/// and the list of legal moves), so it cannot know an opponent kind the seat does not know.
#[derive(Debug, Clone)]
pub struct ComputerPlayer {
    pub(crate) side: Side,
    pub(crate) rules: Rules,
    level: Level,
    /// What a move may cost (the level's, unless set with [`ComputerPlayer::with_budget`]).
    pub(crate) budget: Budget,
    pub(crate) rng: GameRng,
    /// The board and the kind sets of the opponent's pieces, from the seat's events only.
    pub(crate) tracker: Tracker,
    /// All-pairs step distances on the board (ignoring pieces), for "advance toward".
    pub(crate) distance: Vec<[u8; 64]>,
    /// What the opponent can know of the seat's pieces from what is public (start squares,
    /// moves, rail turns, who survived each fight): a tracker from the opponent's seat, fed
    /// the seat's events with every kind taken out. Each fight's lesson depends on the
    /// opponent's own piece, which the seat does not know; [`ComputerPlayer::fights`] keeps
    /// them so a search can replay them with a layout's kinds.
    pub(crate) opponent_view: Tracker,
    /// Every fight an own piece had, in order.
    pub(crate) fights: Vec<OwnFight>,
    /// The seat's previous move, if it was no fight (what stepping straight back would undo).
    pub(crate) previous_quiet: Option<Move>,
}

/// One fight between an own piece and an enemy piece, as public.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OwnFight {
    /// The own piece.
    pub own: PieceId,
    /// The enemy piece.
    pub enemy: PieceId,
    /// Whether the own piece attacked.
    pub own_attacked: bool,
    /// Whether the attacker survived.
    pub attacker_survives: bool,
    /// Whether the defender survived.
    pub defender_survives: bool,
    /// Gunjin Shogi, an own piece attacked: the own piece directly behind it (towards the own
    /// back rank) then, which an own flag fights as.
    pub own_behind: Option<PieceId>,
}

/// How much of the belief player's score a level counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// The expected material of the fight alone (and a won game).
    Greedy,
    /// Material, the danger of the position after the move, advance and the HQ freeze.
    Belief,
}

/// What the player expects of one enemy piece: where it is and its kind chances.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EnemyView {
    node: Node,
    chances: [f64; KIND_SLOTS],
}

impl EnemyView {
    fn p(&self, kind: PieceKind) -> f64 {
        self.chances[kind.0 as usize]
    }
}

impl ComputerPlayer {
    /// A player for `side` under `rules` at [`Level::Belief`] (the player this crate had before
    /// it had levels, kept so its callers and tests keep their behaviour), deterministic for a
    /// seed. Games against people should name their level with [`ComputerPlayer::with_level`].
    pub fn new(side: Side, rules: Rules, seed: u64) -> ComputerPlayer {
        ComputerPlayer::with_level(side, rules, Level::Belief, seed)
    }

    /// A player of `level` for `side` under `rules` (either family), deterministic for a seed:
    /// the same seed and the same events give the same moves (for [`Level::Search`], as long as
    /// its wall-clock safety net does not cut in, see [`Level::budget`]).
    pub fn with_level(side: Side, rules: Rules, level: Level, seed: u64) -> ComputerPlayer {
        let topo = rules.topology();
        let n = topo.node_count as usize;
        let mut distance = vec![[u8::MAX; 64]; n];
        for (start, row) in distance.iter_mut().enumerate() {
            row[start] = 0;
            let mut frontier = 1u64 << start;
            let mut seen = frontier;
            let mut d = 0u8;
            while frontier != 0 {
                d += 1;
                let mut next = 0u64;
                for node in Nodes(frontier) {
                    next |= topo.neighbors[node.index()];
                }
                next &= !seen;
                for node in Nodes(next) {
                    row[node.index()] = d;
                }
                seen |= next;
                frontier = next;
            }
        }
        ComputerPlayer {
            side,
            rules,
            level,
            budget: level.budget(),
            rng: GameRng::from_seed(seed),
            tracker: Tracker::new(rules, side),
            distance,
            opponent_view: Tracker::new(rules, side.other()),
            fights: Vec::new(),
            previous_quiet: None,
        }
    }

    /// The level this player plays at.
    pub fn level(&self) -> Level {
        self.level
    }

    /// The same player with another budget per move: fewer layouts for quick checks, or no
    /// wall-clock safety net where a move must be a function of the seed whatever the machine
    /// (tests in debug builds).
    pub fn with_budget(mut self, budget: Budget) -> ComputerPlayer {
        self.budget = budget;
        self
    }

    /// What a move may cost this player.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// The seat this player plays.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The deployment it wants (its own pieces only), valid under `rules`: a uniform random one
    /// at [`Level::Random`], the forward formation at [`Level::Expert`], the planned formation at
    /// the other levels.
    pub fn deployment(&mut self) -> Deployment {
        match self.level {
            Level::Random => Deployment::random(&self.rules, self.side, &mut self.rng),
            Level::Expert => formation::plan_forward(&self.rules, self.side, &mut self.rng),
            _ => formation::plan(&self.rules, self.side, &mut self.rng),
        }
    }

    /// The kinds an opponent piece can still be, as the player has inferred them; `None` for an
    /// id that is not a known opponent piece. For tests, logs and curious callers.
    pub fn possible_kinds(&self, id: PieceId) -> Option<Vec<PieceKind>> {
        self.tracker.possible_kinds(id)
    }

    /// Learns from one event exactly as its seat sees it (the projection a person gets).
    /// Events it cannot place in its model (a move from an empty node, an unknown id) are
    /// absorbed without panicking; the model then trusts later events.
    pub fn observe(&mut self, event: &ViewEvent) {
        if let ViewEvent::Moved {
            side, mv, combat, ..
        } = event
            && *side == self.side
        {
            self.previous_quiet = combat.is_none().then_some(*mv);
        }
        if let ViewEvent::Moved {
            side,
            mv,
            piece,
            combat: Some(c),
            ..
        } = event
        {
            let own_attacked = *side == self.side;
            let (own, enemy) = if own_attacked {
                (*piece, c.defender)
            } else {
                (c.defender, *piece)
            };
            let own_behind = (!own_attacked && self.rules.family == Family::GunjinShogi)
                .then(|| {
                    let topo = self.rules.topology();
                    let behind = topo.behind.get(mv.to.index())?[self.side.index()];
                    Nodes(behind)
                        .filter_map(|n| self.tracker.occupant(n))
                        .find(|o| o.side == self.side)
                        .map(|o| o.id)
                })
                .flatten();
            self.fights.push(OwnFight {
                own,
                enemy,
                own_attacked,
                attacker_survives: c.attacker_survives,
                defender_survives: c.defender_survives,
                own_behind,
            });
        }
        if let Some(public) = without_kinds(event) {
            self.opponent_view.observe(&public);
        }
        self.tracker.observe(event);
    }

    /// Chooses one of `legal` (non-empty; the session's legal moves for its side) from what it
    /// has observed.
    ///
    /// # Panics
    /// If `legal` is empty (the session never asks a side without moves to move); use
    /// [`ComputerPlayer::try_choose_move`] to get `None` instead.
    pub fn choose_move(&mut self, legal: &[Move]) -> Move {
        self.try_choose_move(legal)
            .expect("choose_move needs at least one legal move")
    }

    /// [`ComputerPlayer::choose_move`] that answers `None` for an empty list. The answer is
    /// always an element of `legal`.
    pub fn try_choose_move(&mut self, legal: &[Move]) -> Option<Move> {
        if legal.is_empty() {
            return None;
        }
        if self.level == Level::Random {
            return Some(legal[self.rng.below(legal.len() as u32) as usize]);
        }
        let scores = self.level_scores(legal);
        let mut best: Option<(f64, Move)> = None;
        for (&mv, score) in legal.iter().zip(scores) {
            // A tiny seeded jitter breaks ties among equals.
            let jitter = f64::from(self.rng.below(1000)) * 1e-6;
            let score = score + jitter;
            if best.is_none_or(|(b, _)| score > b) {
                best = Some((score, mv));
            }
        }
        best.map(|(_, mv)| mv)
    }

    /// The score of each move of `legal` at the player's level, in order (higher is better;
    /// all 0 at the random level), before the tie-breaking jitter. For tests and diagnostics;
    /// the search levels draw their layouts from the player's generator, so a call changes the
    /// next choice.
    pub fn level_scores(&mut self, legal: &[Move]) -> Vec<f64> {
        match self.level {
            Level::Random => vec![0.0; legal.len()],
            Level::Greedy => self.score_moves_as(legal, Style::Greedy),
            Level::Belief => self.score_moves(legal),
            Level::Search => crate::search::score_moves(self, legal, crate::search::Terms::SEARCH),
            Level::Expert => crate::search::score_moves(self, legal, crate::search::Terms::EXPERT),
        }
    }

    /// The belief player's score of each move of `legal`, in order (higher is better). Exposed
    /// for tests and diagnostics.
    pub fn score_moves(&self, legal: &[Move]) -> Vec<f64> {
        self.score_moves_as(legal, Style::Belief)
    }

    /// The score of each move of `legal` in `style`.
    pub(crate) fn score_moves_as(&self, legal: &[Move], style: Style) -> Vec<f64> {
        let enemies = self.enemy_views();
        let model = self.model_position();
        let targets = self.flag_targets(&enemies);
        legal
            .iter()
            .map(|&mv| self.score(mv, &model, &enemies, &targets, style))
            .collect()
    }

    /// Every enemy piece on the board by id: where it stands and its kind chances.
    pub(crate) fn enemy_views(&self) -> [Option<EnemyView>; 256] {
        let marginals = self.tracker.beliefs().marginals();
        let mut enemies: [Option<EnemyView>; 256] = [None; 256];
        for (piece, chances) in self.tracker.beliefs().pieces().iter().zip(&marginals) {
            enemies[piece.id.0 as usize] = Some(EnemyView {
                node: Node(0),
                chances: *chances,
            });
        }
        for (i, occ) in self.tracker.board().iter().enumerate() {
            if let Some(occ) = occ.filter(|o| o.side != self.side)
                && let Some(e) = enemies[occ.id.0 as usize].as_mut()
            {
                e.node = Node(i as u8);
            }
        }
        enemies
    }

    /// The player's board as a position: own pieces with their kinds, enemy pieces with a
    /// stand-in kind that moves like them as far as known (fixed if they cannot move, an
    /// engineer if known to be one, a plain rank otherwise).
    pub(crate) fn model_position(&self) -> Position {
        let plain = values::kinds(&self.rules).plain;
        let mut pos = Position::empty(self.rules, self.side.other());
        let topo = self.rules.topology();
        for (i, occ) in self.tracker.board().iter().enumerate() {
            let Some(occ) = occ else { continue };
            if i >= topo.node_count as usize {
                continue;
            }
            let kind = if occ.side == self.side {
                self.tracker.own_kind(occ.id).unwrap_or(plain)
            } else {
                match self.tracker.beliefs().get(occ.id).map(|p| p.possible) {
                    Some(possible) => stand_in(&self.rules, possible, self.tracker.beliefs()),
                    None => plain,
                }
            };
            pos.put(
                Node(i as u8),
                hidden_front_rules::Piece {
                    side: occ.side,
                    kind,
                    id: occ.id,
                },
            );
        }
        pos
    }

    /// Enemy HQ nodes that may hold the flag, with the chance (Gunjin Shogi: the enemy HQ, which
    /// an officer takes by entering).
    pub(crate) fn flag_targets(&self, enemies: &[Option<EnemyView>; 256]) -> Vec<(Node, f64)> {
        let topo = self.rules.topology();
        if self.rules.family == Family::GunjinShogi {
            return Nodes(topo.hq[self.side.other().index()])
                .map(|hq| (hq, 1.0))
                .collect();
        }
        let flag = values::kinds(&self.rules).flag;
        let mut targets: Vec<(Node, f64)> = Nodes(topo.hq[self.side.other().index()])
            .map(|hq| {
                let p = match self.tracker.board()[hq.index()] {
                    Some(o) if o.side != self.side => {
                        enemies[o.id.0 as usize].map_or(0.0, |e| e.p(flag))
                    }
                    _ => 0.0,
                };
                (hq, p)
            })
            .filter(|(_, p)| *p > 0.01)
            .collect();
        if targets.is_empty() {
            targets = Nodes(topo.hq[self.side.other().index()])
                .map(|hq| (hq, 0.5))
                .collect();
        }
        targets
    }

    pub(crate) fn distance_to_targets(&self, node: Node, targets: &[(Node, f64)]) -> f64 {
        targets
            .iter()
            .map(|(t, _)| f64::from(self.distance[node.index()][t.index()]))
            .fold(f64::MAX, f64::min)
    }

    fn score(
        &self,
        mv: Move,
        model: &Position,
        enemies: &[Option<EnemyView>; 256],
        targets: &[(Node, f64)],
        style: Style,
    ) -> f64 {
        let topo = self.rules.topology();
        let kinds = values::kinds(&self.rules);
        if mv.from.index() >= topo.node_count as usize || mv.to.index() >= topo.node_count as usize
        {
            return f64::MIN / 2.0;
        }
        let my_kind = model
            .piece_at(mv.from)
            .filter(|p| p.side == self.side)
            .map_or(kinds.plain, |p| p.kind);
        let me = hidden_front_rules::Piece {
            side: self.side,
            kind: my_kind,
            id: model.piece_at(mv.from).map_or(PieceId(0), |p| p.id),
        };
        let defender = self.tracker.board()[mv.to.index()]
            .filter(|o| o.side != self.side)
            .and_then(|o| enemies[o.id.0 as usize]);
        // Gunjin Shogi: an officer that ends its move in the enemy HQ wins at once.
        let takes_hq = self.rules.family == Family::GunjinShogi
            && values::can_win_by_reaching(&self.rules, my_kind)
            && topo.hq[self.side.other().index()] & mv.to.bit() != 0;

        // Outcome buckets: (attacker survives, defender survives) -> (chance, material change).
        let mut score = 0.0;
        let mut buckets: Vec<(bool, bool, f64, f64)> = Vec::with_capacity(3);
        match defender {
            Some(enemy) => {
                for (k, &p) in enemy.chances.iter().enumerate() {
                    if p <= 0.0 {
                        continue;
                    }
                    let kind = PieceKind(k as u8);
                    let (a, d, flag) = model.judge(my_kind, kind);
                    if flag {
                        score += p * WIN;
                        continue;
                    }
                    if a && takes_hq {
                        score += p * WIN;
                        continue;
                    }
                    let delta = if d { 0.0 } else { worth(&self.rules, kind) }
                        - if a { 0.0 } else { worth(&self.rules, my_kind) };
                    match buckets.iter_mut().find(|b| b.0 == a && b.1 == d) {
                        Some(b) => {
                            b.2 += p;
                            b.3 += p * delta;
                        }
                        None => buckets.push((a, d, p, p * delta)),
                    }
                }
                if style == Style::Belief && self.tracker.plies_without_combat() >= RESTLESS_AFTER {
                    score += 0.5
                        + f64::from(self.tracker.plies_without_combat() - RESTLESS_AFTER) * 0.05;
                }
            }
            None if takes_hq => return WIN,
            None => buckets.push((true, false, 1.0, 0.0)),
        }
        if style == Style::Greedy {
            return score + buckets.iter().map(|b| b.3).sum::<f64>();
        }
        for (attacker_survives, defender_survives, p, material) in buckets {
            let mut after = *model;
            after.remove(mv.from);
            if defender.is_some() && !defender_survives {
                after.remove(mv.to);
            }
            if attacker_survives {
                after.remove(mv.to);
                after.put(mv.to, me);
            }
            score += material + p * self.danger(&after, enemies);
            if attacker_survives {
                let gained = self.distance_to_targets(mv.from, targets)
                    - self.distance_to_targets(mv.to, targets);
                let pace = if Some(my_kind) == kinds.bomb {
                    0.3
                } else if my_kind == kinds.engineer {
                    0.6
                } else {
                    1.0
                };
                score += p * ADVANCE * pace * gained;
                // A piece entering an HQ without capturing is frozen there for good.
                let frozen =
                    !self.rules.hq_pieces_may_move && (topo.hq[0] | topo.hq[1]) & mv.to.bit() != 0;
                if frozen {
                    score -= p * values::freeze_cost(&self.rules, my_kind);
                }
            }
        }
        score
    }

    /// How much the opponent can take next ply in `pos` (negative): for each own piece, the
    /// best expected gain of an enemy piece that can reach it, counted at [`THREAT_SHARE`]; the
    /// own goal (the flag; Gunjin Shogi: the HQ) within reach of a piece that wins there counts
    /// as [`FLAG_DANGER`], an enemy piece that can reach (or take) a square next to it as
    /// [`FLAG_NEAR`].
    fn danger(&self, pos: &Position, enemies: &[Option<EnemyView>; 256]) -> f64 {
        let mine = pos.occupied(self.side);
        let mut worst = [0.0f64; 64];
        let mut flag_risk = 0.0f64;
        let mut near_risk = 0.0f64;
        let goal = values::own_goal(pos, self.side);
        let topo = self.rules.topology();
        let next_to_flag = Nodes(goal).fold(0u64, |m, f| m | topo.neighbors[f.index()]) & !goal;
        let winners = KindSet(
            self.tracker
                .beliefs()
                .mobile_kinds()
                .iter()
                .filter(|&k| values::can_win_by_reaching(&self.rules, k))
                .fold(0, |m, k| m | KindSet::only(k).0),
        );
        for node in Nodes(pos.occupied(self.side.other())) {
            let Some(piece) = pos.piece_at(node) else {
                continue;
            };
            let Some(enemy) = enemies[piece.id.0 as usize] else {
                continue;
            };
            let dests = pos.destinations(node);
            // A square next to the flag that this piece can take or enter: next ply it could
            // strike the flag from there.
            for square in Nodes(dests & next_to_flag) {
                let stands = match pos.piece_at(square) {
                    None => winners.iter().map(|k| enemy.p(k)).sum(),
                    Some(victim) => winners
                        .iter()
                        .filter(|&k| pos.judge(k, victim.kind).0)
                        .map(|k| enemy.p(k))
                        .sum(),
                };
                near_risk = near_risk.max(stands);
            }
            // The goal itself within reach: taken by any piece that wins there.
            for target in Nodes(dests & goal) {
                let takes: f64 = winners
                    .iter()
                    .filter(|&k| match pos.piece_at(target) {
                        None => true,
                        Some(victim) => {
                            let (a, _, flag) = pos.judge(k, victim.kind);
                            a || flag
                        }
                    })
                    .map(|k| enemy.p(k))
                    .sum();
                flag_risk = flag_risk.max(takes);
            }
            let reach = dests & mine & !goal;
            if reach == 0 {
                continue;
            }
            for target in Nodes(reach) {
                let Some(victim) = pos.piece_at(target) else {
                    continue;
                };
                let mut gain = 0.0;
                for k in self.tracker.beliefs().mobile_kinds().iter() {
                    let p = enemy.p(k);
                    if p <= 0.0 {
                        continue;
                    }
                    let (a, d, _) = pos.judge(k, victim.kind);
                    gain += p
                        * (if d {
                            0.0
                        } else {
                            worth(&self.rules, victim.kind)
                        } - if a { 0.0 } else { worth(&self.rules, k) });
                }
                let slot = &mut worst[target.index()];
                *slot = slot.max(gain);
            }
        }
        -(worst.iter().sum::<f64>() * THREAT_SHARE)
            - flag_risk * FLAG_DANGER
            - near_risk * FLAG_NEAR
    }
}

/// `event` with every kind taken out (what anyone may know of it), for the opponent's view;
/// `None` for events that tell nothing about pieces.
fn without_kinds(event: &ViewEvent) -> Option<ViewEvent> {
    Some(match event {
        ViewEvent::PlayStarted { pieces } => ViewEvent::PlayStarted {
            pieces: pieces
                .iter()
                .map(|p| ViewPiece { kind: None, ..*p })
                .collect(),
        },
        ViewEvent::Moved {
            side,
            mv,
            piece,
            combat,
            flag_reveal,
            ..
        } => ViewEvent::Moved {
            side: *side,
            mv: *mv,
            piece: *piece,
            kind: None,
            combat: combat.map(|c| ViewCombat {
                defender_kind: None,
                ..c
            }),
            flag_reveal: flag_reveal.clone(),
        },
        ViewEvent::TimedOut { .. } => event.clone(),
        _ => return None,
    })
}

/// A kind that moves like an enemy piece with these possible kinds, for reach questions: the
/// kind itself when known, an immobile kind when it cannot move, a plain mover otherwise.
fn stand_in(rules: &Rules, possible: KindSet, beliefs: &Beliefs) -> PieceKind {
    let mobile = beliefs.mobile_kinds();
    let kinds = values::kinds(rules);
    if let Some(kind) = possible.single() {
        kind
    } else if possible.0 & mobile.0 == 0 {
        if possible.contains(kinds.flag) {
            kinds.flag
        } else {
            kinds.mine
        }
    } else {
        kinds.plain
    }
}
