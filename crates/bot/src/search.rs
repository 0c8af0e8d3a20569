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
use hidden_front_inference::{KIND_SLOTS, KindSet, Layout};
use hidden_front_rules::piece::junqi;
use hidden_front_rules::{
    Family, Move, MoveList, Node, Nodes, Piece, PieceKind, PlyReport, Position, Side,
};
use std::time::Instant;

mod deep;

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

/// The expert's [`Terms::race`]: worth of each move by which the seat's race to the enemy HQ
/// is ahead of the opponent's (or behind it). Chosen on the duplicate ladder against search
/// (docs/bot.md, "The race to the HQ"): 3, 8, 20 and 50 scored 0.566, 0.574, 0.589 and 0.590
/// over 200 Gunjin Shogi twins, against 0.530 without it.
const RACE: f64 = 20.0;
/// The expert's [`Terms::undo`] in Junqi: a quarter of the commander's worth.
const UNDO_JUNQI: f64 = 3.0;
/// The expert's [`Terms::undo`] in Gunjin Shogi, where a move of the race counts [`RACE`].
const UNDO_GUNJIN: f64 = 10.0;
/// The expert's [`Terms::reserve`]: about a captain's worth and a half for each piece a side
/// has in the field below [`RESERVE_FLOOR`].
const RESERVE: f64 = 5.0;
/// How many pieces in the field (mobile kinds outside the own HQ) a side keeps before
/// [`Terms::reserve`] counts.
const RESERVE_FLOOR: u32 = 3;
/// Races longer than this many moves are not counted: the opponent has time to answer them.
const RACE_LIMIT: u8 = 4;

/// The expert's [`Terms::commander_reveal`]: a commander's death shows its flag, which is worth
/// about a strong piece more. Chosen with [`COMMANDER_HUNT`] on the duplicate ladder against
/// search and greedy (docs/bot.md, "The commander's two terms").
const COMMANDER_REVEAL: f64 = 12.0;
/// The expert's [`Terms::commander_hunt`]. Three in four of the expert's commanders lost to a
/// bomb were attacked by it, not attacking: a commander that has shown itself draws the
/// opponent's bombs, more often than the belief's bomb share of the piece next to it says.
const COMMANDER_HUNT: f64 = 4.0;

/// What a level's search counts beyond the plain search: the differences between `search` and
/// `expert`, as data, so both run the same code.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Terms {
    /// After an opponent answer that puts a piece that wins by reaching next to the own goal,
    /// look one ply further in that layout: if no move of the seat removes it (or wins first),
    /// the layout is a lost game, counted in full ([`WIN`], not discounted by [`REPLY`]). With
    /// [`WIN`] at 1000 against material of at most 12, one layout of 64 in which an engineer
    /// flies unanswered to the flag outweighs any material: the threat is judged at its worst
    /// case, not at its average.
    pub goal_lookahead: bool,
    /// Choose the opponent's capture by what the opponent can know of the seat's pieces, not by
    /// the seat's own kinds: in each layout, the public lessons (start squares, moves, rail
    /// turns) and every fight replayed with the layout's kind for the opponent's piece give
    /// each own piece the kinds the opponent cannot rule out; the opponent attacks where its
    /// expected gain over those kinds is best (if above zero), and the seat counts what that
    /// attack truly does. So a piece that showed its strength draws the bomb, and a hidden one
    /// is left alone (or attacked at the attacker's cost).
    pub opponent_belief: bool,
    /// What losing a Junqi commander costs beyond its worth (its death shows the flag to the
    /// opponent); gained when the opponent's dies. 0 for `search`.
    pub commander_reveal: f64,
    /// How many times a Junqi bomb's attack on the own commander counts among the opponent's
    /// answers in a layout (1 for `search`): the opponent aims its bombs at the piece that
    /// showed itself strongest, so the layouts that put a bomb next to the commander weigh
    /// more than their share.
    pub commander_hunt: f64,
    /// Gunjin Shogi: worth of each move by which the seat wins the race to the enemy HQ
    /// ([`race`]), or loses it, after the move, up to [`RACE_LIMIT`] moves; 0 for `search`.
    /// The reply and the goal lookahead see one move ahead; a race sees the officer two to
    /// four moves from the HQ through what it beats, and the one coming the other way.
    pub race: f64,
    /// Gunjin Shogi: search three plies deep in each layout ([`deep`]) instead of the one
    /// reply, over at most [`crate::EXPERT_DEEP_SAMPLES`] layouts.
    pub deep: bool,
    /// Charge a move that takes a piece straight back to the square its previous move left
    /// (neither move a fight): [`UNDO_JUNQI`], [`UNDO_GUNJIN`]. Among quiet moves of
    /// near-equal worth the search steps to and fro (without the charge, 12% of the expert's
    /// Junqi moves and 18% of its Gunjin Shogi moves), which brings nothing and the no-combat
    /// draw nearer; a retreat that saves a piece is worth more.
    pub undo: bool,
    /// Gunjin Shogi: worth, at the three-ply leaf, of each piece in the field (a mobile kind
    /// outside its own HQ) a side has below [`RESERVE_FLOOR`], counted against the seat for
    /// its own and for it for the opponent's. A side that cannot move when its turn starts
    /// loses, and the expert's HQ is sealed (the flag and the mines on every way in), so its
    /// keeper has no move: its last pieces in the field are its last moves. Without the term
    /// the expert lost 13 to 43 of 800 twin games that way (docs/bot.md, "The last pieces in
    /// the field"); 0 for `search`.
    pub reserve: f64,
}

impl Terms {
    /// The `search` level's terms (its behaviour before `expert` existed).
    pub(crate) const SEARCH: Terms = Terms {
        goal_lookahead: false,
        opponent_belief: false,
        commander_reveal: 0.0,
        commander_hunt: 1.0,
        race: 0.0,
        deep: false,
        undo: false,
        reserve: 0.0,
    };
    /// The `expert` level's terms.
    pub(crate) const EXPERT: Terms = Terms {
        goal_lookahead: true,
        opponent_belief: true,
        commander_reveal: COMMANDER_REVEAL,
        commander_hunt: COMMANDER_HUNT,
        race: RACE,
        deep: true,
        undo: true,
        reserve: RESERVE,
    };
}

/// The search level's score of each move of `legal`, in order (higher is better), with the
/// level's `terms`.
pub(crate) fn score_moves(player: &mut ComputerPlayer, legal: &[Move], terms: Terms) -> Vec<f64> {
    let budget = player.budget;
    let started = Instant::now();
    let belief = player.score_moves_as(legal, Style::Belief);
    let sampler = player.tracker.beliefs().sampler();
    let base = player.model_position();
    let mut totals = vec![0.0; legal.len()];
    let mut drawn = 0u32;
    let mut scratch = Scratch::default();
    let copies = army_copies(&player.rules);
    let deep = terms.deep && player.rules.family == Family::GunjinShogi;
    let samples = if deep {
        budget.samples.min(crate::EXPERT_DEEP_SAMPLES)
    } else {
        budget.samples
    };
    let mut lists = deep::Lists::default();
    for n in 0..samples {
        if n > 0 && started.elapsed() > budget.max_think {
            break;
        }
        let layout = sampler.draw(&mut player.rng);
        let world = determinize(&base, &layout, player.side);
        let their_view = terms
            .opponent_belief
            .then(|| opponent_view(player, &layout));
        let context = Context {
            side: player.side,
            distance: &player.distance,
            terms,
            their_view: their_view.as_ref(),
            copies: &copies,
        };
        for (total, &mv) in totals.iter_mut().zip(legal) {
            *total += if deep {
                deep::value(&world, mv, &context, &mut lists)
            } else {
                value(&world, mv, &context, &mut scratch)
            };
        }
        drawn += 1;
    }
    let drawn = f64::from(drawn.max(1));
    let back = player.previous_quiet.map(|mv| Move {
        from: mv.to,
        to: mv.from,
    });
    let undo = match (terms.undo, player.rules.family) {
        (false, _) => 0.0,
        (true, Family::Junqi) => UNDO_JUNQI,
        (true, Family::GunjinShogi) => UNDO_GUNJIN,
    };
    belief
        .iter()
        .zip(totals)
        .zip(legal)
        .map(|((p, t), &mv)| {
            let undone = if Some(mv) == back { undo } else { 0.0 };
            PRIOR * p + t / drawn - undone
        })
        .collect()
}

/// What one layout's search reads beside the position.
struct Context<'a> {
    side: Side,
    distance: &'a [[u8; 64]],
    terms: Terms,
    /// [`Terms::opponent_belief`]: the kinds the opponent cannot rule out for each own piece,
    /// by id.
    their_view: Option<&'a [KindSet; 256]>,
    /// Copies of each kind in an army, the opponent's weights over the kinds it cannot rule out.
    copies: &'a [f64; KIND_SLOTS],
}

/// Move lists reused across moves and layouts.
#[derive(Default)]
struct Scratch {
    replies: MoveList,
    answers: MoveList,
}

/// Copies of each kind in an army under `rules`.
fn army_copies(rules: &hidden_front_rules::Rules) -> [f64; KIND_SLOTS] {
    let mut copies = [0.0; KIND_SLOTS];
    for &(kind, _, n) in rules.kinds() {
        if let Some(slot) = copies.get_mut(kind.0 as usize) {
            *slot = f64::from(n);
        }
    }
    copies
}

/// The kinds the opponent cannot rule out for each own piece if `layout` is its army: its
/// public lessons, and every fight replayed with the layout's kind for its piece.
fn opponent_view(player: &ComputerPlayer, layout: &Layout) -> [KindSet; 256] {
    let mut beliefs = player.opponent_view.beliefs().clone();
    for fight in &player.fights {
        let Some(theirs) = layout.kind_of(fight.enemy) else {
            continue;
        };
        if fight.own_attacked {
            beliefs.saw_attack_by(
                fight.own,
                theirs,
                fight.attacker_survives,
                fight.defender_survives,
            );
        } else if player.rules.family == Family::GunjinShogi {
            beliefs.saw_attack_on_backed(
                fight.own,
                theirs,
                fight.attacker_survives,
                fight.defender_survives,
                fight.own_behind,
            );
        } else {
            beliefs.saw_attack_on(
                fight.own,
                theirs,
                fight.attacker_survives,
                fight.defender_survives,
            );
        }
    }
    let mut view = [beliefs.all_kinds(); 256];
    for piece in beliefs.pieces() {
        view[piece.id.0 as usize] = piece.possible;
    }
    view
}

/// What the opponent expects to gain by attacking a piece it knows only as `possible` with its
/// piece of kind `attacker` (a flag among the kinds counted as nothing: the goal's threats are
/// judged apart, at their worst case).
fn expected_gain(
    pos: &Position,
    attacker: PieceKind,
    possible: KindSet,
    copies: &[f64; KIND_SLOTS],
) -> f64 {
    let rules = pos.rules();
    let (mut total, mut weight) = (0.0, 0.0);
    for kind in possible.iter() {
        let w = copies.get(kind.0 as usize).copied().unwrap_or(0.0);
        if w <= 0.0 {
            continue;
        }
        let (a, d, flag) = pos.judge(attacker, kind);
        let gain = if flag {
            0.0
        } else {
            (if d { 0.0 } else { worth(rules, kind) })
                - if a { 0.0 } else { worth(rules, attacker) }
        };
        total += w * gain;
        weight += w;
    }
    if weight > 0.0 { total / weight } else { 0.0 }
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
fn material(world: &Position, report: &PlyReport, side: Side, reveal: f64) -> f64 {
    let rules = world.rules();
    let Some(c) = report.combat else { return 0.0 };
    let extra = |kind: PieceKind| {
        if rules.family == Family::Junqi && kind == junqi::COMMANDER {
            reveal
        } else {
            0.0
        }
    };
    let mut gain = 0.0;
    if !c.defender_survives {
        gain += worth(rules, c.defender.kind) + extra(c.defender.kind);
    }
    if !c.attacker_survives {
        gain -= worth(rules, report.mover.kind) + extra(report.mover.kind);
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

/// Gunjin Shogi: the fewest moves `side` needs to enter the other side's HQ with a piece that
/// wins by entering it (at most `limit + 1`: not within reach). Each move is one step to an
/// empty square or onto an enemy piece it beats, in `pos` as it stands: the side's own pieces
/// and the enemy pieces that beat it or trade with it bar the way, and nobody answers. A
/// cheap look a few moves further than the search's one reply, at what decides the family's
/// games (nearly all end by an officer entering an HQ).
fn race(pos: &Position, side: Side, limit: u8) -> u8 {
    let topo = pos.topology();
    let rules = pos.rules();
    let goal = topo.hq[side.other().index()];
    let own = pos.occupied(side);
    let mut best = limit.saturating_add(1);
    for start in Nodes(pos.movable(side)) {
        let Some(piece) = pos.piece_at(start) else {
            continue;
        };
        if !values::can_win_by_reaching(rules, piece.kind) {
            continue;
        }
        // Whether the piece may step onto `at`: empty, or an enemy piece it beats.
        let passes = |at: Node| {
            pos.piece_at(at).is_none_or(|p| {
                let (survives, beaten_survives, _) = pos.judge(piece.kind, p.kind);
                survives && !beaten_survives
            })
        };
        let (mut frontier, mut seen, mut moves) = (start.bit(), start.bit(), 1u8);
        while moves < best && frontier != 0 {
            let reached =
                Nodes(frontier).fold(0u64, |m, n| m | topo.neighbors[n.index()]) & !seen & !own;
            if Nodes(reached & goal).any(passes) {
                best = moves;
                break;
            }
            seen |= reached;
            frontier = Nodes(reached & !goal)
                .filter(|&n| passes(n))
                .fold(0u64, |m, n| m | n.bit());
            moves += 1;
        }
    }
    best
}

/// How many pieces in the field `side` lacks to [`RESERVE_FLOOR`]: its pieces of a mobile
/// kind outside its own HQ (the HQ's keeper counts for none, since its own flag and mines may
/// wall it in), 0 when it has enough.
fn short_of_reserve(pos: &Position, side: Side) -> f64 {
    let field = pos.movable(side) & !pos.topology().hq[side.index()];
    f64::from(RESERVE_FLOOR.saturating_sub(field.count_ones()))
}

/// [`Terms::race`]'s value of `after` for `side` (the opponent to move): the lead of the
/// shorter race to an HQ within [`RACE_LIMIT`] moves, for `side` if its race is strictly
/// shorter (the opponent moves first, so a tie is the opponent's).
fn race_lead(after: &Position, side: Side) -> f64 {
    let (ours, theirs) = (
        race(after, side, RACE_LIMIT),
        race(after, side.other(), RACE_LIMIT),
    );
    let lead = |moves: u8| f64::from(RACE_LIMIT + 1 - moves);
    if theirs <= ours && theirs <= RACE_LIMIT {
        -lead(theirs)
    } else if ours < theirs {
        lead(ours)
    } else {
        0.0
    }
}

/// What freezing a piece costs when `mv` (played, giving `after` and `report`) ends in an HQ
/// without winning: it stays there for good (in the layouts where that HQ holds the flag, the
/// move won instead); 0 for any other move or where pieces may leave an HQ.
fn frozen_cost(after: &Position, mv: Move, report: &PlyReport) -> f64 {
    let rules = after.rules();
    let topo = after.topology();
    let frozen = !rules.hq_pieces_may_move && (topo.hq[0] | topo.hq[1]) & mv.to.bit() != 0;
    if frozen && report.combat.is_none_or(|c| c.attacker_survives) {
        values::freeze_cost(rules, report.mover.kind)
    } else {
        0.0
    }
}

/// The best that `side` (to move in `pos`) gains by one capture (or a win), 0 if none.
fn best_capture(pos: &Position, side: Side, moves: &mut MoveList, reveal: f64) -> f64 {
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
        let gain = material(pos, &report, side, reveal) + ended(&report, side).unwrap_or(0.0);
        best = best.max(gain);
    }
    best
}

/// Whether the piece on `at` would win the game with its next move if `pos`'s side to move
/// (its opponent) let it.
fn wins_next(pos: &Position, at: Node, moves: &mut MoveList) -> bool {
    let Some(piece) = pos.piece_at(at) else {
        return false;
    };
    let mut theirs = *pos;
    theirs.set_to_move(piece.side);
    theirs.legal_moves_into(moves);
    moves.iter().any(|mv| {
        mv.from == at && {
            let mut next = theirs;
            ended(&next.play_legal(mv), piece.side).is_some_and(|v| v > 0.0)
        }
    })
}

/// Whether `side` (to move in `pos`) can remove the enemy piece on `at` (a capture it does
/// not survive, a trade, or a mine it walks into) or wins the game at once.
fn can_answer(pos: &Position, side: Side, at: Node, moves: &mut MoveList) -> bool {
    let enemy = pos.occupied(side.other());
    pos.legal_moves_into(moves);
    moves.iter().any(|mv| {
        if enemy & mv.to.bit() == 0 {
            return false;
        }
        let mut next = *pos;
        let report = next.play_legal(mv);
        if ended(&report, side).is_some_and(|v| v > 0.0) {
            return true;
        }
        mv.to == at && report.combat.is_some_and(|c| !c.defender_survives)
    })
}

/// The value of `mv` for `side` (to move in `world`): its material and how close it brings a
/// winning piece to the enemy's goal ([`PRESS`]), less the opponent's best answer (at
/// [`REPLY`]): a capture, a win, or a piece that would win next ply standing next to the own
/// goal ([`DEFEND`]), each less the own best recapture after it ([`RECAPTURE`]). With
/// [`Terms::goal_lookahead`], that last answer is a lost game when the seat cannot remove the
/// piece.
fn value(world: &Position, mv: Move, context: &Context<'_>, scratch: &mut Scratch) -> f64 {
    let (side, distance, terms) = (context.side, context.distance, context.terms);
    let (replies, replies2) = (&mut scratch.replies, &mut scratch.answers);
    let mut after = *world;
    let Ok(report) = after.play(mv) else {
        // The seat's board disagrees with the engine's (an event it could not place): no
        // opinion beyond the prior.
        return 0.0;
    };
    let reveal = terms.commander_reveal;
    let mut gained = material(world, &report, side, reveal);
    if let Some(end) = ended(&report, side) {
        return gained + end;
    }
    let rules = *after.rules();
    let topo = after.topology();
    gained -= frozen_cost(&after, mv, &report);
    let near = |goal: u64| Nodes(goal).fold(0u64, |m, g| m | topo.neighbors[g.index()]) & !goal;
    gained += PRESS * pressure(&after, side, distance);
    if terms.race != 0.0 && rules.family == Family::GunjinShogi {
        gained += terms.race * race_lead(&after, side);
    }
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
    // [`Terms::opponent_belief`]: the capture the opponent would choose, by its expected gain,
    // and what it truly costs the seat.
    let mut chosen: Option<(f64, f64)> = None;
    for reply in replies.iter() {
        if (mine | hq | guard) & reply.to.bit() == 0 {
            continue;
        }
        let mut next = after;
        let answer = next.play_legal(reply);
        let taken = ended(&answer, side).unwrap_or(0.0);
        let mut lost = -material(&after, &answer, side, reveal) - taken;
        if terms.commander_hunt != 1.0
            && rules.family == Family::Junqi
            && answer.mover.kind == junqi::BOMB
            && answer
                .combat
                .is_some_and(|c| c.defender.kind == junqi::COMMANDER)
        {
            lost *= terms.commander_hunt;
        }
        let threatens_goal = taken == 0.0
            && guard & reply.to.bit() != 0
            && answer.combat.is_none_or(|c| c.attacker_survives)
            && values::can_win_by_reaching(&rules, answer.mover.kind);
        if threatens_goal {
            if terms.goal_lookahead
                && wins_next(&next, reply.to, replies2)
                && !can_answer(&next, side, reply.to, replies2)
            {
                // Worst case: this layout's game is lost unless the seat prevents the answer.
                return gained - WIN;
            }
            lost += DEFEND;
        }
        if let Some(view) = context.their_view
            && taken == 0.0
            && !threatens_goal
            && let Some(victim) = after.piece_at(reply.to).filter(|p| p.side == side)
        {
            let expected = expected_gain(
                &after,
                answer.mover.kind,
                view[victim.id.0 as usize],
                context.copies,
            );
            if expected > 0.0 && chosen.is_none_or(|(e, _)| expected > e) {
                if lost > 0.0 {
                    lost -= RECAPTURE * best_capture(&next, side, replies2, reveal);
                }
                chosen = Some((expected, lost));
            }
            continue;
        }
        if taken == 0.0 && lost > best {
            lost -= RECAPTURE * best_capture(&next, side, replies2, reveal);
        }
        best = best.max(lost);
    }
    // The opponent's chosen capture counts even when it costs the opponent more than it takes
    // (a negative loss): the worth of a piece it does not know is strong, or is a bomb. A
    // threat to the goal counts at its worst; a capture its belief does not choose, not at all.
    match chosen {
        Some((_, lost)) if best == 0.0 => gained - REPLY * lost,
        Some((_, lost)) => gained - REPLY * best.max(lost),
        None => gained - REPLY * best,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hidden_front_rules::{Event, GameRng, PieceId, Rules, Viewer, project};

    const COMMANDER: PieceId = PieceId(3);
    const BEATEN: PieceId = PieceId(20);

    /// A south expert player shown, as its seat sees them, the start of `pieces` (square, side,
    /// code, id) under `rules` and then the fight `from`-`to`, whose result is checked with
    /// `result` (attacker survives, defender survives).
    fn after_one_fight(
        rules: Rules,
        pieces: &[(&str, Side, &str, u8)],
        (from, to): (&str, &str),
        result: (bool, bool),
    ) -> ComputerPlayer {
        let topo = rules.topology();
        let node = |square: &str| topo.node(square).unwrap();
        let mut position = Position::empty(rules, Side::South);
        let mut started = Vec::new();
        for &(square, side, code, id) in pieces {
            let piece = Piece {
                side,
                kind: rules.parse_kind(code).unwrap(),
                id: PieceId(id),
            };
            assert!(position.put(node(square), piece));
            started.push((node(square), piece));
        }
        let mut player = ComputerPlayer::with_level(Side::South, rules, crate::Level::Expert, 7);
        let shown = |event: &Event| project(event, Viewer::player(Side::South), None).unwrap();
        player.observe(&shown(&Event::PlayStarted { pieces: started }));
        let mv = Move {
            from: node(from),
            to: node(to),
        };
        position.set_to_move(position.piece_at(mv.from).unwrap().side);
        let report = position.play(mv).unwrap();
        assert!(
            report
                .combat
                .is_some_and(|c| (c.attacker_survives, c.defender_survives) == result)
        );
        player.observe(&shown(&Event::Moved {
            mv,
            piece: report.mover,
            combat: report.combat,
            flag_reveal: Vec::new(),
        }));
        player
    }

    /// A south player whose commander (id 3) has just attacked and beaten the enemy piece on
    /// C6 (id 20, in truth an army commander).
    fn after_a_commander_win() -> ComputerPlayer {
        after_one_fight(
            Rules::default(),
            &[
                ("B1", Side::South, "F", 40),
                ("A1", Side::South, "M", 41),
                ("C1", Side::South, "M", 42),
                ("C5", Side::South, "9", 3),
                ("E3", Side::South, "2", 4),
                ("B12", Side::North, "F", 30),
                ("A12", Side::North, "M", 31),
                ("C12", Side::North, "M", 32),
                ("C6", Side::North, "8", 20),
                ("E10", Side::North, "3", 22),
                ("A9", Side::North, "2", 23),
            ],
            ("C5", "C6"),
            (true, false),
        )
    }

    #[test]
    fn a_step_straight_back_costs_the_expert_its_undo_charge_and_nothing_else() {
        let rules = Rules::default();
        let node = |square: &str| rules.topology().node(square).unwrap();
        let budget = crate::Budget {
            samples: 4,
            max_think: std::time::Duration::from_secs(3600),
        };
        let mut player = after_a_commander_win().with_budget(budget);
        let shown = |event: &Event| project(event, Viewer::player(Side::South), None).unwrap();
        let two = Piece {
            side: Side::South,
            kind: PieceKind(2),
            id: PieceId(4),
        };
        // The commander's win was a fight: nothing to undo.
        assert_eq!(player.previous_quiet, None);
        let step = Move {
            from: node("E3"),
            to: node("E4"),
        };
        player.observe(&shown(&Event::Moved {
            mv: step,
            piece: two,
            combat: None,
            flag_reveal: Vec::new(),
        }));
        assert_eq!(player.previous_quiet, Some(step));
        let mut position = player.model_position();
        position.set_to_move(Side::South);
        let legal: Vec<Move> = position.legal_moves().iter().collect();
        let back = Move {
            from: step.to,
            to: step.from,
        };
        assert!(legal.contains(&back));
        // The same player, layouts and all, without the previous move.
        let mut forgetful = player.clone();
        forgetful.previous_quiet = None;
        let charged = player.level_scores(&legal);
        let free = forgetful.level_scores(&legal);
        for ((&mv, with), without) in legal.iter().zip(charged).zip(free) {
            let charge = if mv == back { UNDO_JUNQI } else { 0.0 };
            assert!(
                (without - with - charge).abs() < 1e-9,
                "{mv:?}: {with} {without}"
            );
        }
        // An opponent's move leaves it (north's 3 slides down the rail to E5); the seat's next
        // move, a fight (the 2 attacks it and dies), clears it.
        let three = Piece {
            side: Side::North,
            kind: PieceKind(3),
            id: PieceId(22),
        };
        player.observe(&shown(&Event::Moved {
            mv: Move {
                from: node("E10"),
                to: node("E5"),
            },
            piece: three,
            combat: None,
            flag_reveal: Vec::new(),
        }));
        assert_eq!(player.previous_quiet, Some(step));
        player.observe(&shown(&Event::Moved {
            mv: Move {
                from: node("E4"),
                to: node("E5"),
            },
            piece: two,
            combat: Some(hidden_front_rules::position::Combat {
                defender: three,
                attacker_survives: false,
                defender_survives: true,
                flag_captured: false,
            }),
            flag_reveal: Vec::new(),
        }));
        assert_eq!(player.previous_quiet, None);
    }

    #[test]
    fn the_opponent_knows_the_commander_that_beat_its_army_commander_and_no_more() {
        let player = after_a_commander_win();
        let sampler = player.tracker.beliefs().sampler();
        let mut rng = GameRng::from_seed(1);
        let (mut as_eight, mut as_weaker) = (0, 0);
        for _ in 0..4000 {
            let layout = sampler.draw(&mut rng);
            let beaten = layout
                .kind_of(BEATEN)
                .expect("the layout names the taken piece");
            let view = opponent_view(&player, &layout)[COMMANDER.0 as usize];
            assert!(view.contains(junqi::COMMANDER), "{beaten:?}: {view:?}");
            if beaten == PieceKind(8) {
                // Only the commander beats an army commander: the opponent knows it.
                assert_eq!(view, KindSet::only(junqi::COMMANDER));
                as_eight += 1;
            } else if beaten == PieceKind(2) {
                // Beating a 2 tells little: it moved, and it is above a 2.
                assert!(view.contains(PieceKind(8)) && view.contains(PieceKind(3)));
                assert!(!view.contains(junqi::MINE) && !view.contains(junqi::FLAG));
                as_weaker += 1;
            }
        }
        assert!(as_eight > 0 && as_weaker > 0, "{as_eight} {as_weaker}");
        // The opponent's other pieces' views are untouched by the fight: the 2 on E3 never
        // moved, so it may still be a bomb to the opponent.
        let layout = sampler.draw(&mut rng);
        assert!(opponent_view(&player, &layout)[4].contains(junqi::BOMB));
    }

    #[test]
    fn a_gunjin_flag_that_survived_as_its_general_may_still_be_the_flag_to_the_opponent() {
        // South's flag on c2 has its general behind it on c1; North's colonel attacks it and
        // dies (the flag fights as the general). To the opponent the piece on c2 beat a
        // colonel; as a flag backed by what stands behind it, it may still be the flag.
        let player = after_one_fight(
            Rules::parse("gunjin-shogi").unwrap(),
            &[
                ("c2", Side::South, "FLG", 2),
                ("c1", Side::South, "GEN", 1),
                ("h1", Side::South, "CPT", 3),
                ("c3", Side::North, "COL", 20),
                ("a8", Side::North, "FLG", 21),
                ("h8", Side::North, "CPT", 22),
            ],
            ("c3", "c2"),
            (false, true),
        );
        let sampler = player.tracker.beliefs().sampler();
        let mut rng = GameRng::from_seed(3);
        for _ in 0..50 {
            let layout = sampler.draw(&mut rng);
            let view = opponent_view(&player, &layout)[2];
            assert!(
                view.contains(hidden_front_rules::piece::gunjin::FLAG),
                "{:?}: {view:?}",
                layout.kind_of(PieceId(20))
            );
        }
    }

    #[test]
    fn an_attack_on_a_piece_known_only_as_a_mover_is_weighed_over_the_army() {
        let rules = Rules::default();
        let pos = Position::empty(rules, Side::North);
        let copies = army_copies(&rules);
        let everything = KindSet((0..KIND_SLOTS as u32).fold(0, |m, k| m | 1 << k));
        // Thrown at a piece it knows nothing of, a bomb trades for the army's average piece,
        // worth less than itself; a 2 loses to most of the army.
        assert!(expected_gain(&pos, junqi::BOMB, everything, &copies) < 0.0);
        assert!(expected_gain(&pos, PieceKind(2), everything, &copies) < 0.0);
        // Against a piece known to be the commander, the bomb's gain is the commander less the
        // bomb: what makes a commander that showed itself a target.
        let gain = expected_gain(&pos, junqi::BOMB, KindSet::only(junqi::COMMANDER), &copies);
        assert!(
            (gain - (worth(&rules, junqi::COMMANDER) - worth(&rules, junqi::BOMB))).abs() < 1e-9
        );
    }

    /// The Gunjin Shogi position of `pieces` (square, side, code), South to move; ids from 1
    /// in order. Also the three-ply search's tests' board.
    pub(super) fn gunjin(pieces: &[(&str, Side, &str)]) -> Position {
        let rules = Rules::parse("gunjin-shogi").unwrap();
        let topo = rules.topology();
        let mut pos = Position::empty(rules, Side::South);
        for (id, &(square, side, code)) in pieces.iter().enumerate() {
            let piece = Piece {
                side,
                kind: rules.parse_kind(code).unwrap(),
                id: PieceId(id as u8 + 1),
            };
            assert!(pos.put(topo.node(square).unwrap(), piece), "{square}");
        }
        pos
    }

    #[test]
    fn a_race_to_the_hq_passes_what_the_officer_beats_and_stops_at_the_rest() {
        let flags = [("a1", Side::South, "FLG"), ("h8", Side::North, "FLG")];
        let with = |more: &[(&str, Side, &str)]| gunjin(&[&flags[..], more].concat());
        let general = ("d5", Side::South, "GEN");
        // Three steps up the d file into the empty HQ.
        assert_eq!(race(&with(&[general]), Side::South, 4), 3);
        // A captain on the way is taken on the way; a major general in the HQ too.
        let through = with(&[
            general,
            ("d6", Side::North, "CPT"),
            ("d8+e8", Side::North, "MJG"),
        ]);
        assert_eq!(race(&through, Side::South, 4), 3);
        // An own piece or a mine on d6 sends it round by the e file: four.
        assert_eq!(
            race(
                &with(&[general, ("d6", Side::South, "CPT")]),
                Side::South,
                4
            ),
            4
        );
        assert_eq!(
            race(
                &with(&[general, ("d6", Side::North, "MIN")]),
                Side::South,
                4
            ),
            4
        );
        // A general in the HQ trades with it: no race within the limit, nor for a spy alone.
        assert_eq!(
            race(
                &with(&[general, ("d8+e8", Side::North, "GEN")]),
                Side::South,
                4
            ),
            5
        );
        assert_eq!(
            race(&with(&[("d5", Side::South, "SPY")]), Side::South, 4),
            5
        );
        // The opponent moves next: a race as short as the seat's is the opponent's lead.
        let both = with(&[general, ("e3", Side::North, "MAJ")]);
        assert_eq!(race(&both, Side::North, 4), 2);
        assert_eq!(race_lead(&both, Side::South), -3.0);
        let tie = with(&[general, ("e4", Side::North, "MAJ")]);
        assert_eq!(race(&tie, Side::North, 4), 3);
        assert_eq!(
            race_lead(&tie, Side::South),
            -2.0,
            "a tie goes to the opponent"
        );
        let lead = with(&[general, ("h2", Side::North, "MAJ")]);
        assert_eq!(race(&lead, Side::North, 4), 4);
        assert_eq!(race_lead(&lead, Side::South), 2.0);
    }

    /// A South commander on C6 facing a North bomb on C7, a South 2 on E3 (the quiet mover),
    /// South to move; the value of the 2's first legal move under `terms`.
    fn quiet_move_beside_a_bomb(terms: Terms) -> f64 {
        let rules = Rules::default();
        let topo = rules.topology();
        let node = |square: &str| topo.node(square).unwrap();
        let mut world = Position::empty(rules, Side::South);
        for (square, side, kind, id) in [
            ("C6", Side::South, junqi::COMMANDER, 3),
            ("E3", Side::South, PieceKind(2), 4),
            ("C7", Side::North, junqi::BOMB, 20),
        ] {
            assert!(world.put(
                node(square),
                Piece {
                    side,
                    kind,
                    id: PieceId(id)
                }
            ));
        }
        let player = ComputerPlayer::with_level(Side::South, rules, crate::Level::Expert, 7);
        let quiet = world
            .legal_moves()
            .iter()
            .find(|mv| mv.from == node("E3"))
            .expect("the 2 can move");
        let context = Context {
            side: Side::South,
            distance: &player.distance,
            terms,
            their_view: None,
            copies: &army_copies(&rules),
        };
        value(&world, quiet, &context, &mut Scratch::default())
    }

    #[test]
    fn a_bombs_answer_on_the_commander_costs_the_reveal_and_weighs_the_hunt() {
        let plain = Terms {
            opponent_belief: false,
            ..Terms::SEARCH
        };
        let expert = Terms {
            commander_reveal: COMMANDER_REVEAL,
            commander_hunt: COMMANDER_HUNT,
            ..plain
        };
        // The bomb's answer trades itself for the commander: 12 - 6 without the terms, and
        // (12 + the reveal - 6) times the hunt with them, each counted at REPLY.
        let trade =
            worth(&Rules::default(), junqi::COMMANDER) - worth(&Rules::default(), junqi::BOMB);
        let difference = quiet_move_beside_a_bomb(plain) - quiet_move_beside_a_bomb(expert);
        let expected = REPLY * ((trade + COMMANDER_REVEAL) * COMMANDER_HUNT - trade);
        assert!(
            (difference - expected).abs() < 1e-9,
            "{difference} against {expected}"
        );
    }
}
