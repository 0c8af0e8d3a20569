//! Engine speed: legal-move generation on mid-game positions, single plies, and random playouts
//! from fresh random deployments. Figures are recorded in docs/rules-engine.md.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use hidden_front_rules::{GameRng, MoveList, Position, Rules, Side, random_playout, random_start};
use std::hint::black_box;

fn fresh_position(rules: Rules, rng: &mut GameRng) -> Position {
    random_start(rules, Side::South, rng)
}

/// Mid-game positions: 40 random plies into random games that are still running, with at least
/// 18 pieces a side left.
fn mid_game_positions(count: usize) -> Vec<Position> {
    let rules = Rules::default();
    let mut rng = GameRng::from_seed(2026);
    let mut moves = MoveList::default();
    let mut found = Vec::new();
    while found.len() < count {
        let mut position = fresh_position(rules, &mut rng);
        let result = random_playout(&mut position, &mut rng, &mut moves, 40);
        if result.outcome.is_none()
            && Side::BOTH
                .iter()
                .all(|&s| position.occupied(s).count_ones() >= 18)
        {
            found.push(position);
        }
    }
    found
}

fn legal_moves(c: &mut Criterion) {
    let positions = mid_game_positions(64);
    let mut moves = MoveList::default();
    let first = positions[0];
    first.legal_moves_into(&mut moves);
    eprintln!(
        "mid-game position: {} ({} legal moves)",
        hidden_front_rules::notation::to_notation(&first),
        moves.len()
    );
    c.bench_function("legal_moves/mid_game_one_position", |b| {
        b.iter(|| {
            black_box(&first).legal_moves_into(&mut moves);
            black_box(moves.is_empty())
        })
    });
    let mut i = 0;
    c.bench_function("legal_moves/mid_game_64_positions_each", |b| {
        b.iter(|| {
            i = (i + 1) & 63;
            black_box(&positions[i]).legal_moves_into(&mut moves);
            black_box(moves.is_empty())
        })
    });
    c.bench_function("has_legal_move/mid_game", |b| {
        b.iter(|| black_box(&first).has_legal_move(black_box(Side::North)))
    });
}

fn play_one_ply(c: &mut Criterion) {
    let positions = mid_game_positions(64);
    let mut rng = GameRng::from_seed(9);
    let mut moves = MoveList::default();
    let mut i = 0;
    c.bench_function("ply/generate_pick_play", |b| {
        b.iter_batched_ref(
            || {
                i = (i + 1) & 63;
                positions[i]
            },
            |position| {
                position.legal_moves_into(&mut moves);
                let mv = moves.nth(rng.below(moves.len() as u32) as usize).unwrap();
                black_box(position.play_legal(mv))
            },
            BatchSize::SmallInput,
        )
    });
}

fn playouts(c: &mut Criterion) {
    let rules = Rules::default();
    let mut deploy_rng = GameRng::from_seed(11);
    let mut rng = GameRng::from_seed(12);
    let mut moves = MoveList::default();
    let mut group = c.benchmark_group("playout");
    group.sample_size(30);
    group.bench_function("fresh_random_deployment_to_end", |b| {
        b.iter_batched_ref(
            || fresh_position(rules, &mut deploy_rng),
            |position| black_box(random_playout(position, &mut rng, &mut moves, u32::MAX)),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("deploy_and_play_to_end", |b| {
        b.iter(|| {
            let mut position = fresh_position(rules, &mut deploy_rng);
            black_box(random_playout(
                &mut position,
                &mut rng,
                &mut moves,
                u32::MAX,
            ))
        })
    });
    group.finish();
}

/// Gunjin Shogi: a random playout from fresh random deployments on the default (X gates) board.
fn gunjin_playouts(c: &mut Criterion) {
    let rules = Rules::parse("gunjin-shogi").expect("the gunjin-shogi rule set");
    let mut deploy_rng = GameRng::from_seed(21);
    let mut rng = GameRng::from_seed(22);
    let mut moves = MoveList::default();
    let mut group = c.benchmark_group("gunjin");
    group.sample_size(30);
    group.bench_function("playout_fresh_random_deployment_to_end", |b| {
        b.iter_batched_ref(
            || fresh_position(rules, &mut deploy_rng),
            |position| black_box(random_playout(position, &mut rng, &mut moves, u32::MAX)),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(
    benches,
    legal_moves,
    play_one_ply,
    playouts,
    gunjin_playouts
);
criterion_main!(benches);
