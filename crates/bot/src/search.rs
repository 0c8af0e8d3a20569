//! The search level: candidate moves played out on complete opponent layouts drawn from the
//! belief (determinized two-ply search), on top of the belief player's judgement of the
//! position.
//!
//! For each of [`crate::Level::budget`]'s layouts (from [`hidden_front_inference::Sampler`],
//! which reads only the seat's belief, never the game), the seat's board becomes a full
//! position: own pieces with their kinds, opponent pieces with the layout's. Each legal move is
//! played there by the engine's own judge (so Gunjin Shogi's flag fights as the piece behind it
//! and its HQ entry wins), then the opponent's best answer in that layout is subtracted: its
//! best capture, or a win (the flag taken, the HQ entered). The values are averaged over the
//! layouts, so a move is good when it is good across what the opponent's army can be: a fight
//! with a piece that is a bomb in a third of the layouts costs the commander a third of the
//! time, a piece left where one of the layouts' engineers or bombs reaches it is at risk in
//! those layouts. The belief player's score (its danger, advance and HQ-freeze terms) is
//! added with [`PRIOR`].

use crate::player::{ComputerPlayer, Style};
use crate::values::{WIN, worth};
use hidden_front_inference::Layout;
use hidden_front_rules::{Family, Move, MoveList, Piece, PlyReport, Position, Side};
use std::time::Instant;

/// Weight of the belief player's score beside the searched value.
const PRIOR: f64 = 0.5;
/// Share of the opponent's best answer counted: it does not see the seat's kinds, so it does
/// not always find the answer a layout gives it.
const REPLY: f64 = 0.7;

/// The search level's score of each move of `legal`, in order (higher is better).
pub(crate) fn score_moves(player: &mut ComputerPlayer, legal: &[Move]) -> Vec<f64> {
    let budget = crate::Level::Search.budget();
    let started = Instant::now();
    let prior = player.score_moves_as(legal, Style::Belief);
    let sampler = player.tracker.beliefs().sampler();
    let base = player.model_position();
    let mut totals = vec![0.0; legal.len()];
    let mut drawn = 0u32;
    let mut replies = MoveList::default();
    for n in 0..budget.samples {
        if n > 0 && started.elapsed() > budget.max_think {
            break;
        }
        let layout = sampler.draw(&mut player.rng);
        let world = determinize(&base, &layout, player.side);
        for (total, &mv) in totals.iter_mut().zip(legal) {
            *total += value(&world, mv, player.side, &mut replies);
        }
        drawn += 1;
    }
    let drawn = f64::from(drawn.max(1));
    prior
        .iter()
        .zip(totals)
        .map(|(p, t)| PRIOR * p + t / drawn)
        .collect()
}

/// The seat's board with the layout's kinds on the opponent's pieces, `side` to move.
fn determinize(base: &Position, layout: &Layout, side: Side) -> Position {
    let mut world = *base;
    world.set_to_move(side);
    for (node, piece) in base.pieces() {
        if piece.side == side {
            continue;
        }
        if let Some(kind) = layout.kind_of(piece.id) {
            world.remove(node);
            world.put(node, Piece { kind, ..piece });
        }
    }
    world
}

/// Material `side` gains by one ply (what it removes minus what it loses).
fn material(world: &Position, report: &PlyReport, side: Side) -> f64 {
    let rules = world.rules();
    let Some(c) = report.combat else { return 0.0 };
    let mut gain = 0.0;
    if !c.defender_survives {
        gain += worth(rules, c.defender.kind);
    }
    if !c.attacker_survives {
        gain -= worth(rules, report.mover.kind);
    }
    if report.mover.side == side {
        gain
    } else {
        -gain
    }
}

/// What an ended game is worth to `side`.
fn ended(report: &PlyReport, side: Side) -> Option<f64> {
    let outcome = report.outcome?;
    Some(match outcome.winner {
        Some(w) if w == side => WIN,
        Some(_) => -WIN,
        None => 0.0,
    })
}

/// The value of `mv` for `side` (to move in `world`): its material, less the opponent's best
/// answer (at [`REPLY`]).
fn value(world: &Position, mv: Move, side: Side, replies: &mut MoveList) -> f64 {
    let mut after = *world;
    let Ok(report) = after.play(mv) else {
        // The seat's board disagrees with the engine's (an event it could not place): no
        // opinion beyond the prior.
        return 0.0;
    };
    let gained = material(world, &report, side);
    if let Some(end) = ended(&report, side) {
        return gained + end;
    }
    let topo = after.topology();
    let mine = after.occupied(side);
    // Gunjin Shogi: a step into the seat's HQ can win the game without a fight.
    let hq = if after.rules().family == Family::GunjinShogi {
        topo.hq[side.index()]
    } else {
        0
    };
    after.legal_moves_into(replies);
    let mut best = 0.0f64;
    for reply in replies.iter() {
        if (mine | hq) & reply.to.bit() == 0 {
            continue;
        }
        let mut next = after;
        let answer = next.play_legal(reply);
        let taken = ended(&answer, side).unwrap_or(0.0);
        let lost = -material(&after, &answer, side) - taken;
        best = best.max(lost);
    }
    gained - REPLY * best
}
