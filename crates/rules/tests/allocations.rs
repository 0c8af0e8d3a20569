//! The hot path allocates nothing: generating, choosing and playing moves in random playouts
//! makes zero heap allocations, for Junqi and Gunjin Shogi alike, counted by a global allocator wrapper (dhat in testing mode).

use hidden_front_rules::{GameRng, MoveList, Position, Rules, Side, random_playout, random_start};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

#[test]
fn playouts_allocate_nothing_per_move() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let mut rng = GameRng::from_seed(5);
    let gunjin = Rules::parse("gunjin-shogi").expect("the gunjin-shogi rule set");
    let mut starts: Vec<Position> = (0..200)
        .map(|_| random_start(Rules::default(), Side::South, &mut rng))
        .collect();
    // Gunjin Shogi's generator (plane flights, forking slides through gates) too.
    starts.extend((0..100).map(|_| random_start(gunjin, Side::North, &mut rng)));
    let mut moves = MoveList::default();
    let before = dhat::HeapStats::get();
    let mut plies = 0u64;
    for start in &starts {
        let mut position = *start;
        let result = random_playout(&mut position, &mut rng, &mut moves, 100_000);
        assert!(result.outcome.is_some(), "every playout ends");
        plies += u64::from(result.plies);
    }
    let after = dhat::HeapStats::get();
    assert!(plies > 10_000, "the loop really played ({plies} plies)");
    assert_eq!(
        after.total_blocks - before.total_blocks,
        0,
        "allocations during {plies} plies of playouts"
    );
}
