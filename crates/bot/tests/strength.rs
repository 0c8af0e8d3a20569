//! Strength: over a fixed set of seeds the bot beats a uniformly random mover clearly.

mod common;

use common::{bot, play, random};
use hidden_front_rules::{Rules, Side};

#[test]
fn bot_beats_a_random_mover_over_100_fixed_games() {
    let rules = Rules::default();
    let (mut bot_wins, mut random_wins, mut draws) = (0, 0, 0);
    let mut reasons = std::collections::BTreeMap::<&str, u32>::new();
    let mut plies = 0u32;
    for seed in 0..100u64 {
        // The bot plays south on even seeds, north on odd ones.
        let bot_side = if seed % 2 == 0 {
            Side::South
        } else {
            Side::North
        };
        let (south, north) = match bot_side {
            Side::South => (bot(Side::South, rules, seed), random(seed ^ 0xABCD)),
            Side::North => (random(seed ^ 0xABCD), bot(Side::North, rules, seed)),
        };
        let played = play(rules, 1000 + seed, south, north);
        *reasons.entry(played.outcome.reason.name()).or_default() += 1;
        plies += played.plies;
        match played.outcome.winner {
            Some(w) if w == bot_side => bot_wins += 1,
            Some(_) => random_wins += 1,
            None => draws += 1,
        }
    }
    println!(
        "bot {bot_wins} wins, random {random_wins} wins, {draws} draws; endings {reasons:?}; \
         {} plies per game on average",
        plies / 100
    );
    assert!(
        bot_wins >= 80,
        "bot won only {bot_wins} of 100 ({random_wins} lost, {draws} drawn)"
    );
    assert!(random_wins <= 5, "random won {random_wins} of 100");
}
