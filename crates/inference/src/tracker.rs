//! The board of one seat rebuilt from its projected events, feeding every observation into the
//! [`Beliefs`] about the opponent's pieces.

use crate::belief::{Beliefs, EnemyPiece, KindSet, flag_kind};
use hidden_front_rules::piece::gunjin;
use hidden_front_rules::{
    Family, Move, Node, Nodes, Piece, PieceId, PieceKind, Position, Rules, Side, ViewCombat,
    ViewEvent,
};

/// Who stands on a node of the seat's board: whose piece and its public id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occupant {
    /// The owner.
    pub side: Side,
    /// The piece's public id.
    pub id: PieceId,
}

/// One seat's knowledge of a game, learnt only from that seat's [`ViewEvent`]s (what
/// [`hidden_front_rules::project`] shows `Viewer::player(side)`): the board by public ids, the
/// own kinds, and the [`Beliefs`] about every opponent piece. No entry point takes a `Game`, a
/// `Position` or a full `Event`, so it cannot learn a kind the seat is not shown; the computer
/// player and the browser's inference panel share it.
///
/// What it concludes, by family:
/// - both: a piece that moved is no immobile kind; a fight with an own piece is replayed through
///   the engine's judge for every candidate kind, keeping those that give the seen result;
///   counting (a kind whose copies are all pinned is ruled out elsewhere, a kind with as many
///   candidates as copies pins them);
/// - Junqi: the start square (flag in an HQ, mines on the back rows, no bomb on the front row
///   unless `front-bombs`), a rail move that turns is an engineer's, a flag shown under
///   `flag-reveal` is the flag;
/// - Gunjin Shogi: no flag or mine starts on a gate square; a move is checked against the
///   engine's move generator on the seat's board (occupancy is public) for every candidate kind,
///   so a long slide is an engineer's, tank's or cavalry's, a jump or a flight over the wall a
///   plane's; a fight against the flag is judged as the piece behind it; a piece that entered
///   the seat's HQ and did not end the game is no general or field officer.
#[derive(Debug, Clone)]
pub struct Tracker {
    side: Side,
    rules: Rules,
    board: [Option<Occupant>; 64],
    own_kinds: [Option<PieceKind>; 256],
    beliefs: Beliefs,
    plies_without_combat: u16,
    /// Gunjin Shogi: an opponent piece that just entered the seat's HQ; if the next event is not
    /// the end, it is no piece that wins by entering.
    entered_hq: Option<PieceId>,
}

impl Tracker {
    /// A tracker for the player seated on `side` under `rules`, knowing nothing yet.
    pub fn new(rules: Rules, side: Side) -> Tracker {
        Tracker {
            side,
            rules,
            board: [None; 64],
            own_kinds: [None; 256],
            beliefs: Beliefs::new(rules),
            plies_without_combat: 0,
            entered_hq: None,
        }
    }

    /// The seat.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The rule set.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// What is known of every opponent piece.
    pub fn beliefs(&self) -> &Beliefs {
        &self.beliefs
    }

    /// Weights the kind chances by how likely each piece's activity is for each kind (see
    /// [`Beliefs::set_move_model`]).
    pub fn set_move_model(&mut self, model: Option<crate::MoveModel>) {
        self.beliefs.set_move_model(model);
    }

    /// The board by node index (`None`: empty), as far as the events told it.
    pub fn board(&self) -> &[Option<Occupant>; 64] {
        &self.board
    }

    /// Who stands on `node`.
    pub fn occupant(&self, node: Node) -> Option<Occupant> {
        self.board.get(node.index()).copied().flatten()
    }

    /// The kind of one of the seat's own pieces.
    pub fn own_kind(&self, id: PieceId) -> Option<PieceKind> {
        self.own_kinds[id.0 as usize]
    }

    /// Plies since the last fight (timeouts count), as the events told them.
    pub fn plies_without_combat(&self) -> u16 {
        self.plies_without_combat
    }

    /// What is known of opponent piece `id`.
    pub fn enemy(&self, id: PieceId) -> Option<&EnemyPiece> {
        self.beliefs.get(id)
    }

    /// The kinds opponent piece `id` can still be; `None` for an id that is not a known
    /// opponent piece.
    pub fn possible_kinds(&self, id: PieceId) -> Option<Vec<PieceKind>> {
        self.beliefs.get(id).map(|p| p.possible.iter().collect())
    }

    /// Learns from one event exactly as the seat sees it. Events it cannot place on its board
    /// (a move from an empty node, an unknown id) are absorbed without panicking; the board then
    /// trusts later events.
    pub fn observe(&mut self, event: &ViewEvent) {
        if let Some(id) = self.entered_hq.take()
            && !matches!(event, ViewEvent::Ended { .. })
        {
            let takers = (gunjin::GENERAL.0..=gunjin::MAJOR.0)
                .fold(0u32, |m, k| m | KindSet::only(PieceKind(k)).0);
            self.beliefs.restrict(id, KindSet(!takers));
        }
        match event {
            ViewEvent::PlayStarted { pieces } => {
                self.board = [None; 64];
                self.own_kinds = [None; 256];
                self.plies_without_combat = 0;
                let mut enemy = Vec::new();
                for p in pieces {
                    if p.node.index() >= 64 {
                        continue;
                    }
                    self.board[p.node.index()] = Some(Occupant {
                        side: p.side,
                        id: p.id,
                    });
                    if p.side == self.side {
                        self.own_kinds[p.id.0 as usize] = p.kind;
                    } else {
                        enemy.push((p.node, p.id));
                    }
                }
                self.beliefs.start(self.side.other(), &enemy);
            }
            ViewEvent::Moved {
                side,
                mv,
                piece,
                kind,
                combat,
                flag_reveal,
            } => {
                self.observe_move(*side, *mv, *piece, *kind, combat.as_ref());
                if self.rules.family == Family::Junqi {
                    for reveal in flag_reveal {
                        if reveal.side != self.side {
                            for &(_, id) in &reveal.flags {
                                self.beliefs.saw_kind(id, flag_kind(&self.rules));
                            }
                        }
                    }
                }
            }
            ViewEvent::TimedOut { .. } => {
                self.plies_without_combat = self.plies_without_combat.saturating_add(1);
            }
            _ => {}
        }
    }

    fn observe_move(
        &mut self,
        side: Side,
        mv: Move,
        piece: PieceId,
        kind: Option<PieceKind>,
        combat: Option<&ViewCombat>,
    ) {
        if mv.from.index() >= 64 || mv.to.index() >= 64 {
            return;
        }
        let gunjin = self.rules.family == Family::GunjinShogi;
        if side != self.side {
            self.beliefs.saw_turn(piece, combat.is_some());
            if gunjin {
                let movers = self.kinds_that_move(mv);
                self.beliefs.saw_move_of(piece, movers);
            } else {
                self.beliefs.saw_move(piece, mv.from, mv.to);
            }
        }
        let mover = Occupant { side, id: piece };
        match combat {
            None => {
                self.plies_without_combat = self.plies_without_combat.saturating_add(1);
                if side == self.side && kind.is_some() {
                    self.own_kinds[piece.0 as usize] = kind;
                }
            }
            Some(c) => {
                self.plies_without_combat = 0;
                if side == self.side {
                    let mine = kind.or(self.own_kinds[piece.0 as usize]);
                    match mine {
                        Some(mine) if gunjin => {
                            let behind = self.behind(mv.to, side.other());
                            self.beliefs.saw_attack_on_backed(
                                c.defender,
                                mine,
                                c.attacker_survives,
                                c.defender_survives,
                                behind,
                            );
                        }
                        Some(mine) => self.beliefs.saw_attack_on(
                            c.defender,
                            mine,
                            c.attacker_survives,
                            c.defender_survives,
                        ),
                        None => self.beliefs.set_alive(c.defender, c.defender_survives),
                    }
                } else {
                    let mine = c
                        .defender_kind
                        .or(self.own_kinds[c.defender.0 as usize])
                        .map(|k| self.defending_kind(k, mv.to));
                    if let Some(mine) = mine {
                        self.beliefs.saw_attack_by(
                            piece,
                            mine,
                            c.attacker_survives,
                            c.defender_survives,
                        );
                    } else {
                        self.beliefs.set_alive(piece, c.attacker_survives);
                    }
                }
            }
        }
        self.board[mv.from.index()] = None;
        self.board[mv.to.index()] = match combat {
            None => Some(mover),
            Some(c) if c.attacker_survives => Some(mover),
            Some(c) if c.defender_survives => Some(Occupant {
                side: side.other(),
                id: c.defender,
            }),
            Some(_) => None,
        };
        let entered = self.rules.topology().hq[self.side.index()] & mv.to.bit() != 0;
        if gunjin && side != self.side && entered && combat.is_none_or(|c| c.attacker_survives) {
            self.entered_hq = Some(piece);
        }
    }

    /// Gunjin Shogi: the piece of `side` directly behind `at` (towards its back rank), if any.
    fn behind(&self, at: Node, side: Side) -> Option<PieceId> {
        let topo = self.rules.topology();
        let behind = topo.behind.get(at.index())?[side.index()];
        Nodes(behind)
            .filter_map(|n| self.occupant(n))
            .find(|o| o.side == side)
            .map(|o| o.id)
    }

    /// The kind the seat's piece of kind `kind` on `at` fights as: itself, but in Gunjin Shogi
    /// a flag fights as the own piece behind it (and as a bare flag, losing to anything, with
    /// none behind).
    fn defending_kind(&self, kind: PieceKind, at: Node) -> PieceKind {
        if self.rules.family != Family::GunjinShogi || kind != gunjin::FLAG {
            return kind;
        }
        self.behind(at, self.side)
            .and_then(|id| self.own_kinds[id.0 as usize])
            .unwrap_or(gunjin::FLAG)
    }

    /// Gunjin Shogi: the kinds that can make `mv` from the seat's board (occupancy is public),
    /// asked of the engine's move generator: the mover stands in as each mobile kind in turn.
    fn kinds_that_move(&self, mv: Move) -> KindSet {
        let mobile = self.beliefs.mobile_kinds();
        let Some(mover) = self.occupant(mv.from) else {
            return mobile;
        };
        // Any mobile kind for the other pieces: only their squares matter to a move.
        let filler = PieceKind(gunjin::CAPTAIN.0);
        let mut pos = Position::empty(self.rules, mover.side);
        for (i, occ) in self.board.iter().enumerate() {
            let Some(occ) = occ else { continue };
            let kind = if occ.side == self.side {
                self.own_kinds[occ.id.0 as usize].unwrap_or(filler)
            } else {
                filler
            };
            pos.put(
                Node(i as u8),
                Piece {
                    side: occ.side,
                    kind,
                    id: occ.id,
                },
            );
        }
        let mut allowed = KindSet(0);
        for k in mobile.iter() {
            let mut trial = pos;
            trial.remove(mv.from);
            trial.put(
                mv.from,
                Piece {
                    side: mover.side,
                    kind: k,
                    id: mover.id,
                },
            );
            if trial.destinations(mv.from) & mv.to.bit() != 0 {
                allowed.0 |= KindSet::only(k).0;
            }
        }
        if allowed.is_empty() { mobile } else { allowed }
    }
}
