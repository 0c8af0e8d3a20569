//! The search level: candidate moves played out on complete opponent layouts drawn from the
//! belief (a determinized search three plies deep on captures), on top of the belief player's
//! judgement of the position.
//!
//! For each of [`crate::Level::budget`]'s layouts (from [`hidden_front_inference::Sampler`],
//! which reads only the seat's belief, never the game), the seat's board becomes a full
//! position: own pieces with their kinds, opponent pieces with the layout's. Each legal move is
//! played there by the engine's own judge (so Gunjin Shogi's flag fights as the piece behind it
//! and its HQ entry wins); then the opponent's best answer in that layout is subtracted (a
//! capture, a win, or a piece that would win next ply stepping next to the own flag or HQ),
//! less the best recapture the seat has after it. The values are averaged over the layouts, so
//! a move is good when it is good across what the opponent's army can be: a fight with a piece
//! that is a bomb in a third of the layouts costs the commander a third of the time; a piece
//! left where one of the layouts' engineers or bombs reaches it is at risk in those layouts; a
//! step toward the HQ that holds the flag in most layouts presses where the flag most likely
//! is. The belief player's score (its danger, advance and HQ-freeze terms) is added with
//! [`PRIOR`].
//!
//! Cost: [`crate::SEARCH_SAMPLES`] layouts x legal moves x the opponent's answers that touch
//! the seat's pieces or goal, each with one move generation for the recapture; no allocation
//! per layout beyond the layout itself. Deterministic for a seed while the wall-clock safety
//! net ([`crate::Budget::max_think`]) does not cut in.

use crate::player::{ComputerPlayer, Style};
use crate::values::{self, WIN, worth};
use hidden_front_inference::Layout;
use hidden_front_rules::{
    Family, Move, MoveList, Nodes, Piece, PieceKind, PlyReport, Position, Side,
};
use std::time::Instant;

/// Weight of the belief player's score beside the searched value.
const PRIOR: f64 = 0.5;
/// Share of the opponent's best answer counted: it does not see the seat's kinds, so it does
/// not always find the answer a layout gives it.
const REPLY: f64 = 0.7;
/// Share of the own best recapture after that answer counted against it.
const RECAPTURE: f64 = 1.0;
/// Worth of keeping a piece that would win next ply from standing next to the own goal.
const DEFEND: f64 = 30.0;
/// Worth of each step (up to three) the nearest own piece that wins by reaching the enemy's
/// goal (the layout's flag; Gunjin Shogi: the HQ) comes closer to it.
const PRESS: f64 = 3.0;

/// The search level's score of each move of `legal`, in order (higher is better).
pub(crate) fn score_moves(player: &mut ComputerPlayer, legal: &[Move]) -> Vec<f64> {
    let budget = player.budget;
    let started = Instant::now();
    let belief = player.score_moves_as(legal, Style::Belief);
    let sampler = player.tracker.beliefs().sampler();
    let base = player.model_position();
    let mut totals = vec![0.0; legal.len()];
    let mut drawn = 0u32;
    let mut replies = MoveList::default();
    let mut answers = MoveList::default();
    for n in 0..budget.samples {
        if n > 0 && started.elapsed() > budget.max_think {
            break;
        }
        let layout = sampler.draw(&mut player.rng);
        let world = determinize(&base, &layout, player.side);
        for (total, &mv) in totals.iter_mut().zip(legal) {
            *total += value(
                &world,
                mv,
                player.side,
                &mut replies,
                &mut answers,
                &player.distance,
            );
        }
        drawn += 1;
    }
    let drawn = f64::from(drawn.max(1));
    belief
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

/// How close (in steps, ignoring pieces) `side`'s nearest piece that wins by reaching comes
/// to the goal of the other side: 3 when next to it, 0 from four steps away.
fn pressure(pos: &Position, side: Side, distance: &[[u8; 64]]) -> f64 {
    let rules = pos.rules();
    let goal = values::own_goal(pos, side.other());
    let mut nearest = u8::MAX;
    for node in Nodes(pos.movable(side)) {
        let kind = pos.piece_at(node).map_or(PieceKind(0), |p| p.kind);
        if !values::can_win_by_reaching(rules, kind) {
            continue;
        }
        for g in Nodes(goal) {
            nearest = nearest.min(distance[node.index()][g.index()]);
        }
    }
    f64::from(4u8.saturating_sub(nearest))
}

/// The best that `side` (to move in `pos`) gains by one capture (or a win), 0 if none.
fn best_capture(pos: &Position, side: Side, moves: &mut MoveList) -> f64 {
    let enemy = pos.occupied(side.other());
    let hq = if pos.rules().family == Family::GunjinShogi {
        pos.topology().hq[side.other().index()]
    } else {
        0
    };
    pos.legal_moves_into(moves);
    let mut best = 0.0f64;
    for mv in moves.iter() {
        if (enemy | hq) & mv.to.bit() == 0 {
            continue;
        }
        let mut next = *pos;
        let report = next.play_legal(mv);
        let gain = material(pos, &report, side) + ended(&report, side).unwrap_or(0.0);
        best = best.max(gain);
    }
    best
}

/// The value of `mv` for `side` (to move in `world`): its material and how close it brings a
/// winning piece to the enemy's goal ([`PRESS`]), less the opponent's best answer (at
/// [`REPLY`]): a capture, a win, or a piece that would win next ply standing next to the own
/// goal ([`DEFEND`]), each less the own best recapture after it ([`RECAPTURE`]).
fn value(
    world: &Position,
    mv: Move,
    side: Side,
    replies: &mut MoveList,
    replies2: &mut MoveList,
    distance: &[[u8; 64]],
) -> f64 {
    let mut after = *world;
    let Ok(report) = after.play(mv) else {
        // The seat's board disagrees with the engine's (an event it could not place): no
        // opinion beyond the prior.
        return 0.0;
    };
    let mut gained = material(world, &report, side);
    if let Some(end) = ended(&report, side) {
        return gained + end;
    }
    let rules = *after.rules();
    let topo = after.topology();
    // A piece that ends in an HQ without winning is frozen there for good (in the layouts where
    // that HQ holds the flag, the move won above instead).
    let frozen = !rules.hq_pieces_may_move && (topo.hq[0] | topo.hq[1]) & mv.to.bit() != 0;
    if frozen && report.combat.is_none_or(|c| c.attacker_survives) {
        gained -= values::freeze_cost(&rules, report.mover.kind);
    }
    let near = |goal: u64| Nodes(goal).fold(0u64, |m, g| m | topo.neighbors[g.index()]) & !goal;
    gained += PRESS * pressure(&after, side, distance);
    let mine = after.occupied(side);
    let my_goal = values::own_goal(&after, side);
    let guard = near(my_goal);
    // Gunjin Shogi: a step into the seat's HQ can win the game without a fight.
    let hq = if rules.family == Family::GunjinShogi {
        topo.hq[side.index()]
    } else {
        0
    };
    after.legal_moves_into(replies);
    let mut best = 0.0f64;
    for reply in replies.iter() {
        if (mine | hq | guard) & reply.to.bit() == 0 {
            continue;
        }
        let mut next = after;
        let answer = next.play_legal(reply);
        let taken = ended(&answer, side).unwrap_or(0.0);
        let mut lost = -material(&after, &answer, side) - taken;
        if taken == 0.0
            && guard & reply.to.bit() != 0
            && answer.combat.is_none_or(|c| c.attacker_survives)
            && values::can_win_by_reaching(&rules, answer.mover.kind)
        {
            lost += DEFEND;
        }
        if taken == 0.0 && lost > best {
            lost -= RECAPTURE * best_capture(&next, side, replies2);
        }
        best = best.max(lost);
    }
    gained - REPLY * best
}
