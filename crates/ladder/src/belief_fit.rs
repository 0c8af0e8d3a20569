//! The belief measured on refereed games: how often each kind moves and attacks (the rates of
//! a [`MoveModel`]), and the belief's log-loss on the true kinds, with the constraints alone
//! and with a move model.
//!
//! Both are computed afterwards from the referee's event log ([`GameRecord::events`]); the
//! log-loss replays each game's events through a [`Tracker`] per seat, fed exactly the seat's
//! projections, as the players were.

use crate::GameRecord;
use hidden_front_inference::{KIND_SLOTS, MoveModel, Tracker};
use hidden_front_rules::{Event, PieceId, PieceKind, Rules, Side, Viewer, project};
use serde::Serialize;

/// Per kind, summed over games and both sides: piece-turns on the board (a turn of its side
/// with the piece on the board), moves and attacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityCounts {
    /// Piece-turns on the board, by kind number.
    pub turns: [u64; KIND_SLOTS],
    /// Moves, by kind number.
    pub moves: [u64; KIND_SLOTS],
    /// Attacks, by kind number.
    pub attacks: [u64; KIND_SLOTS],
}

/// Every piece of a game by id: its side and kind, and whether it is on the board.
struct Truth {
    pieces: [Option<(Side, PieceKind, bool)>; 256],
}

impl Truth {
    fn new() -> Truth {
        Truth {
            pieces: [None; 256],
        }
    }

    /// Takes in one event of the referee's log.
    fn apply(&mut self, event: &Event) {
        match event {
            Event::PlayStarted { pieces } => {
                for (_, p) in pieces {
                    self.pieces[p.id.0 as usize] = Some((p.side, p.kind, true));
                }
            }
            Event::Moved {
                piece,
                combat: Some(c),
                ..
            } => {
                self.set_alive(piece.id, c.attacker_survives);
                self.set_alive(c.defender.id, c.defender_survives);
            }
            _ => {}
        }
    }

    fn set_alive(&mut self, id: PieceId, alive: bool) {
        if let Some(p) = self.pieces[id.0 as usize].as_mut() {
            p.2 = alive;
        }
    }

    fn on_board(&self, id: PieceId) -> Option<PieceKind> {
        self.pieces[id.0 as usize].and_then(|(_, kind, alive)| alive.then_some(kind))
    }
}

/// The activity counts over `records`' event logs.
pub fn activity_counts<'a>(records: impl IntoIterator<Item = &'a GameRecord>) -> ActivityCounts {
    let mut counts = ActivityCounts {
        turns: [0; KIND_SLOTS],
        moves: [0; KIND_SLOTS],
        attacks: [0; KIND_SLOTS],
    };
    for record in records {
        let mut truth = Truth::new();
        for event in &record.events {
            if let Event::Moved { piece, combat, .. } = event {
                for (side, kind, alive) in truth.pieces.iter().flatten() {
                    if *alive && *side == piece.side {
                        counts.turns[slot(*kind)] += 1;
                    }
                }
                counts.moves[slot(piece.kind)] += 1;
                counts.attacks[slot(piece.kind)] += u64::from(combat.is_some());
            }
            truth.apply(event);
        }
    }
    counts
}

fn slot(kind: PieceKind) -> usize {
    (kind.0 as usize).min(KIND_SLOTS - 1)
}

/// The belief's log-loss over games: for each ply and each seat, the mean over the opponent's
/// pieces on the board of −ln(the chance the seat's belief gives the piece's true kind).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LogLoss {
    /// The sum over (ply, seat) of the mean log-loss per piece, in nats.
    pub nats: f64,
    /// The (ply, seat) observations summed.
    pub observations: u64,
}

impl LogLoss {
    /// The mean log-loss per piece and observation, in nats; `None` without observations (no
    /// figure, rather than a perfect one).
    pub fn mean(&self) -> Option<f64> {
        (self.observations > 0).then(|| self.nats / self.observations as f64)
    }

    fn add(&mut self, other: LogLoss) {
        self.nats += other.nats;
        self.observations += other.observations;
    }
}

/// A chance below this counts as this (a kind the belief ruled out would be infinite loss; it
/// cannot happen while the constraints are sound, and is then capped rather than hidden).
const MIN_CHANCE: f64 = 1e-6;

/// The log-loss of both seats' beliefs over one game's event log, with `model` (or the
/// constraints alone).
pub fn game_log_loss(rules: Rules, events: &[Event], model: Option<MoveModel>) -> LogLoss {
    let mut trackers = Side::BOTH.map(|side| {
        let mut t = Tracker::new(rules, side);
        t.set_move_model(model);
        t
    });
    let mut truth = Truth::new();
    let mut loss = LogLoss::default();
    for event in events {
        if matches!(event, Event::Ended { .. }) {
            break;
        }
        truth.apply(event);
        for (side, tracker) in Side::BOTH.into_iter().zip(trackers.iter_mut()) {
            if let Some(view) = project(event, Viewer::player(side), None) {
                tracker.observe(&view);
            }
        }
        if !matches!(event, Event::Moved { .. }) {
            continue;
        }
        for tracker in &trackers {
            let beliefs = tracker.beliefs();
            let marginals = beliefs.marginals();
            let (mut nats, mut pieces) = (0.0, 0u32);
            for (piece, row) in beliefs.pieces().iter().zip(&marginals) {
                let Some(kind) = truth.on_board(piece.id) else {
                    continue;
                };
                let p = row.get(kind.0 as usize).copied().unwrap_or(0.0);
                nats -= p.max(MIN_CHANCE).ln();
                pieces += 1;
            }
            if pieces > 0 {
                loss.add(LogLoss {
                    nats: nats / f64::from(pieces),
                    observations: 1,
                });
            }
        }
    }
    loss
}

/// [`game_log_loss`] summed over `records`.
pub fn log_loss<'a>(
    rules: Rules,
    records: impl IntoIterator<Item = &'a GameRecord>,
    model: Option<MoveModel>,
) -> LogLoss {
    let mut total = LogLoss::default();
    for record in records {
        total.add(game_log_loss(rules, &record.events, model));
    }
    total
}

/// The belief's log-loss over a ladder's games, with the constraints alone and with the
/// family's fitted move model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct BeliefReport {
    /// With the constraints and the counts alone.
    pub constraints_only: LogLoss,
    /// With [`MoveModel::fitted`] as well.
    pub move_model: LogLoss,
    /// The fitted model's strength.
    pub move_model_strength: f64,
}

/// The [`BeliefReport`] of `records` under `rules`.
pub fn belief_report(rules: Rules, records: &[GameRecord]) -> BeliefReport {
    let model = MoveModel::fitted(&rules);
    BeliefReport {
        constraints_only: log_loss(rules, records, None),
        move_model: log_loss(rules, records, Some(model)),
        move_model_strength: model.strength,
    }
}
