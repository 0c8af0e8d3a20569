//! The hot path allocates nothing: generating, choosing and playing moves in random playouts
//! makes zero heap allocations, for Junqi and Gunjin Shogi alike. Counted by
//! `allocation-counter`'s global allocator, for the playing thread only: the test harness's own
//! threads allocate now and then (more often on a loaded machine), and a count of the whole
//! process failed on their allocations, not the engine's.

use hidden_front_rules::{GameRng, MoveList, Position, Rules, Side, random_playout, random_start};

#[test]
fn playouts_allocate_nothing_per_move() {
    let mut rng = GameRng::from_seed(5);
    let gunjin = Rules::parse("gunjin-shogi").expect("the gunjin-shogi rule set");
    let mut starts: Vec<Position> = (0..200)
        .map(|_| random_start(Rules::default(), Side::South, &mut rng))
        .collect();
    // Gunjin Shogi's generator (plane flights, forking slides through gates) too.
    starts.extend((0..100).map(|_| random_start(gunjin, Side::North, &mut rng)));
    let mut moves = MoveList::default();
    let mut plies = 0u64;
    // The counter is live: the same measurement sees an allocation where there is one.
    let control = allocation_counter::measure(|| drop(std::hint::black_box(vec![0u8; 16])));
    assert_eq!(
        control.count_total, 1,
        "the counter counts this thread's allocations"
    );
    let counted = allocation_counter::measure(|| {
        for start in &starts {
            let mut position = *start;
            let result = random_playout(&mut position, &mut rng, &mut moves, 100_000);
            assert!(result.outcome.is_some(), "every playout ends");
            plies += u64::from(result.plies);
        }
    });
    assert!(plies > 10_000, "the loop really played ({plies} plies)");
    assert_eq!(
        counted.count_total, 0,
        "allocations during {plies} plies of playouts"
    );
}
