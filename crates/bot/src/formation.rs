//! The computer player's deployment. Junqi: the flag in an HQ walled in by mines, bombs in the
//! middle of the half, a weak piece in the other HQ, the rest shuffled with the strongest pieces
//! forward. Gunjin Shogi: a strong general-officer holding the HQ, the flag just in front of it
//! (so it fights as that piece), mines beside the HQ, the rest random ([`plan`]); or, for the
//! strongest level, the HQ sealed by the flag and the mines and the rest by groups with the strong
//! mobile pieces in front ([`plan_forward`]).

use hidden_front_rules::piece::{gunjin, junqi};
use hidden_front_rules::{Deployment, Family, GameRng, Node, Nodes, PieceKind, Rules, Side};

/// A deployment for `side` under `rules`, drawn with `rng`. Always valid: a plan that the engine's
/// validation refuses (a rule set this plan does not foresee) falls back to a uniform random one.
pub fn plan(rules: &Rules, side: Side, rng: &mut GameRng) -> Deployment {
    if rules.family == Family::GunjinShogi {
        return plan_gunjin(rules, side, rng);
    }
    let planned = try_plan(rules, side, rng);
    match planned.validate(rules) {
        Ok(()) => planned,
        Err(_) => Deployment::random(rules, side, rng),
    }
}

/// The formation of the strongest level. Junqi: [`plan`]'s. Gunjin Shogi: one of
/// [`HQ_KEEPERS`] holds the HQ, the flag stands on one of the two squares in front of it (each
/// drawn at random; the flag fights as the keeper), and the mines seal the HQ's other ways in: the other square in front
/// first, then the squares beside it. The other pieces go by groups, in random order within
/// each: the general, the lieutenant general, the tanks, the cavalry and the engineers take the
/// front ranks, then the other field officers, then the company officers and the spy; the planes
/// (which fly along their file over any piece) stand at the back. [`plan`]'s random army buries
/// strong one-step pieces behind weak ones, where they reach the fighting late, and leaves a way
/// into its HQ open. Against `search` deploying as ever this layout took the expert from about
/// 0.53 to about 0.7 (docs/bot.md, "The expert's Gunjin Shogi formation").
pub fn plan_forward(rules: &Rules, side: Side, rng: &mut GameRng) -> Deployment {
    if rules.family != Family::GunjinShogi {
        return plan(rules, side, rng);
    }
    let topo = rules.topology();
    let s = side.index();
    let Some(hq) = Nodes(topo.hq[s]).next() else {
        return plan(rules, side, rng);
    };
    let mut kinds: Vec<PieceKind> = rules
        .kinds()
        .iter()
        .flat_map(|&(kind, _, n)| std::iter::repeat_n(kind, n as usize))
        .collect();
    let mut placements: Vec<(Node, PieceKind)> = Vec::with_capacity(kinds.len());
    let mut free = topo.half[s];
    let mut fix = |node: Node, kind: PieceKind, kinds: &mut Vec<PieceKind>, free: &mut u64| {
        if let Some(i) = kinds.iter().position(|k| *k == kind) {
            kinds.swap_remove(i);
            placements.push((node, kind));
            *free &= !node.bit();
        }
    };
    let keeper = HQ_KEEPERS[rng.below(HQ_KEEPERS.len() as u32) as usize];
    fix(hq, keeper, &mut kinds, &mut free);
    let in_front = Nodes(topo.half[s] & !hq.bit())
        .filter(|n| topo.behind[n.index()][s] == hq.bit())
        .fold(0, |bits, n| bits | n.bit());
    if let Some(front) = pick(in_front, rng) {
        fix(front, gunjin::FLAG, &mut kinds, &mut free);
    }
    // The mines seal the HQ's other ways in: the other square in front first, then beside it.
    for sealed in Nodes(in_front & free).chain(Nodes(
        topo.neighbors[hq.index()] & topo.back_rows[s] & !hq.bit(),
    )) {
        if free & sealed.bit() != 0 {
            fix(sealed, gunjin::MINE, &mut kinds, &mut free);
        }
    }
    rng.shuffle(&mut kinds);
    kinds.sort_by_key(|kind| std::cmp::Reverse(forwardness(*kind)));
    let mut squares: Vec<Node> = Nodes(free).collect();
    rng.shuffle(&mut squares);
    squares.sort_by_key(|node| std::cmp::Reverse(ranks_from_back(rules, *node, side)));
    placements.extend(squares.into_iter().zip(kinds));
    let planned = Deployment::new(side, placements);
    match planned.validate(rules) {
        Ok(()) => planned,
        Err(_) => plan(rules, side, rng),
    }
}

/// Gunjin Shogi: the pieces that may hold the expert's HQ, one drawn per game (the flag in front
/// of it fights as that piece), so that a player cannot learn which of its officers can break
/// in. Both scored alike on the ladder (docs/bot.md, "The expert's Gunjin Shogi formation").
const HQ_KEEPERS: [PieceKind; 2] = [gunjin::MAJOR_GENERAL, gunjin::LIEUTENANT_GENERAL];

/// Gunjin Shogi: how far forward [`plan_forward`] puts a kind (higher: nearer the front).
fn forwardness(kind: PieceKind) -> u8 {
    use gunjin::*;
    match kind {
        GENERAL | LIEUTENANT_GENERAL | TANK | CAVALRY | ENGINEER => 3,
        MAJOR_GENERAL | COLONEL | LIEUTENANT_COLONEL | MAJOR => 2,
        CAPTAIN | FIRST_LIEUTENANT | SECOND_LIEUTENANT | SPY => 1,
        _ => 0,
    }
}

/// Gunjin Shogi: how many ranks `node` stands in front of `side`'s back rank (0 on it).
fn ranks_from_back(rules: &Rules, node: Node, side: Side) -> usize {
    let topo = rules.topology();
    std::iter::successors(Some(node), |at| {
        Nodes(topo.behind[at.index()][side.index()]).next()
    })
    .take(usize::from(topo.rows) + 1)
    .count()
        - 1
}

fn count(rules: &Rules, kind: PieceKind) -> usize {
    rules
        .kinds()
        .iter()
        .find(|(k, _, _)| *k == kind)
        .map_or(0, |(_, _, n)| *n as usize)
}

fn pick(candidates: u64, rng: &mut GameRng) -> Option<Node> {
    let nodes: Vec<Node> = Nodes(candidates).collect();
    (!nodes.is_empty()).then(|| nodes[rng.below(nodes.len() as u32) as usize])
}

fn try_plan(rules: &Rules, side: Side, rng: &mut GameRng) -> Deployment {
    let topo = rules.topology();
    let s = side.index();
    let mut free = topo.half[s] & !topo.camps;
    let mut placements: Vec<(Node, PieceKind)> = Vec::with_capacity(free.count_ones() as usize);
    let mut place = |node: Node, kind: PieceKind, free: &mut u64| {
        *free &= !node.bit();
        placements.push((node, kind));
    };

    // The flag in an HQ, its neighbours on the back rows mined first.
    let mut flag_hq = None;
    for _ in 0..count(rules, junqi::FLAG) {
        if let Some(hq) = pick(topo.hq[s] & free, rng) {
            place(hq, junqi::FLAG, &mut free);
            flag_hq.get_or_insert(hq);
        }
    }
    let mine_squares = topo.back_rows[s] & !topo.hq[s];
    let guard = flag_hq.map_or(0, |hq| topo.neighbors[hq.index()]) & mine_squares;
    for _ in 0..count(rules, junqi::MINE) {
        let node = pick(guard & free, rng).or_else(|| pick(mine_squares & free, rng));
        if let Some(node) = node {
            place(node, junqi::MINE, &mut free);
        }
    }

    // Bombs in the middle rows (not the front row, not the back rows), near the flag's column.
    let middle = free & !topo.front_row[s] & !topo.back_rows[s];
    for _ in 0..count(rules, junqi::BOMB) {
        let node = pick(middle & free, rng).or_else(|| pick(free & !topo.front_row[s], rng));
        if let Some(node) = node {
            place(node, junqi::BOMB, &mut free);
        }
    }

    // The ranked pieces: the weakest non-engineer rank waits in the other HQ (it never moves
    // again there), then strong pieces take the front rows first.
    let mut ranked: Vec<PieceKind> = rules
        .kinds()
        .iter()
        .filter(|(k, _, _)| ![junqi::FLAG, junqi::MINE, junqi::BOMB].contains(k))
        .flat_map(|&(k, _, n)| std::iter::repeat_n(k, n as usize))
        .collect();
    if let Some(hq) = pick(topo.hq[s] & free, rng) {
        let weakest = ranked
            .iter()
            .enumerate()
            .filter(|(_, k)| **k != junqi::ENGINEER)
            .min_by_key(|(_, k)| **k)
            .map(|(i, _)| i);
        if let Some(i) = weakest {
            let kind = ranked.remove(i);
            place(hq, kind, &mut free);
        }
    }
    rng.shuffle(&mut ranked);
    // Lift the three strongest to the front of the list so they take forward squares.
    ranked.sort_by_key(|k| std::cmp::Reverse(u8::from(k.0 >= 7)));
    let mut squares: Vec<Node> = Nodes(free).collect();
    rng.shuffle(&mut squares);
    // Forward squares first (distance from the own back row, largest first).
    let depth = |n: Node| {
        let row = n.0 / topo.columns;
        match side {
            Side::South => row,
            Side::North => topo.rows - 1 - row,
        }
    };
    squares.sort_by_key(|n| std::cmp::Reverse(depth(*n).min(4)));
    for (node, kind) in squares.into_iter().zip(ranked) {
        place(node, kind, &mut free);
    }
    Deployment::new(side, placements)
}

/// Gunjin Shogi: a random deployment, then swaps (each checked by the engine, skipped if
/// refused) that put a major general in the HQ, the flag in front of it and mines beside it.
fn plan_gunjin(rules: &Rules, side: Side, rng: &mut GameRng) -> Deployment {
    let topo = rules.topology();
    let s = side.index();
    let mut deployment = Deployment::random(rules, side, rng);
    let Some(hq) = Nodes(topo.hq[s]).next() else {
        return deployment;
    };
    let in_front = Nodes(topo.half[s]).find(|n| topo.behind[n.index()][s] & hq.bit() != 0);
    let beside = Nodes(topo.neighbors[hq.index()] & topo.back_rows[s] & !hq.bit());
    let mut wanted: Vec<(Node, PieceKind)> = vec![(hq, gunjin::MAJOR_GENERAL)];
    if let Some(front) = in_front {
        wanted.push((front, gunjin::FLAG));
    }
    wanted.extend(beside.map(|n| (n, gunjin::MINE)));
    let mut placed = 0u64;
    for (target, kind) in wanted {
        if deployment.kind_at(target) == Some(kind) {
            placed |= target.bit();
            continue;
        }
        let from = deployment
            .placements
            .iter()
            .find(|(n, k)| *k == kind && placed & n.bit() == 0)
            .map(|(n, _)| *n);
        if let Some(from) = from
            && let Ok(next) = deployment.swapped(rules, from, target)
        {
            deployment = next;
            placed |= target.bit();
        }
    }
    deployment
}
