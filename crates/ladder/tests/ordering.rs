//! A short ladder in the test suite: on a small fixed sample, each level beats the one below
//! it in both families, with no illegal move and no crash. (The long ladder, with think times,
//! is in docs/bot.md; this one only guards the ordering.)

use hidden_front_bot::{Budget, Level};
use hidden_front_ladder::{LadderConfig, LadderError, Pairs, run};
use hidden_front_rules::Rules;
use std::time::Duration;

fn config(rules: &str, games: u32) -> LadderConfig {
    LadderConfig {
        rules: Rules::parse(rules).unwrap(),
        levels: Level::ALL.to_vec(),
        games,
        seed: 2026,
        jobs: 2,
        pairs: Pairs::Adjacent,
        // The levels' own layouts, without the wall-clock cut: fixed by the seed on any machine.
        budget: Some(Budget {
            samples: hidden_front_bot::SEARCH_SAMPLES,
            max_think: Duration::from_secs(3600),
        }),
        duplicate: false,
        sprt: None,
        puzzle_seeds: 2,
    }
}

fn check_ordering(rules: &str, games: u32) {
    let ladder = run(&config(rules, games)).unwrap();
    println!("{ladder}");
    assert_eq!(ladder.illegal_moves(), 0, "{rules}");
    assert_eq!(ladder.crashes(), 0, "{rules}");
    assert_eq!(ladder.pairs.len(), Level::ALL.len() - 1);
    for pair in &ladder.pairs {
        assert_eq!(pair.games, games, "{rules}");
        assert_eq!(pair.wins + pair.draws + pair.losses, games);
        // The first level of each pair is the weaker: it must score below one half.
        assert!(
            pair.score < 0.5,
            "{rules}: {} scored {:.3} against {}",
            pair.a,
            pair.score,
            pair.b
        );
    }
    for level in &ladder.levels {
        assert!(level.moves > 0, "{rules}: {} never moved", level.level);
    }
    // The family's puzzles at every level, and those a level must solve, solved every time.
    assert!(
        ladder.puzzles.len() >= 2 * Level::ALL.len(),
        "{rules}: {} puzzle rows",
        ladder.puzzles.len()
    );
    for level in Level::ALL {
        assert!(ladder.puzzles.iter().any(|p| p.level == level));
    }
    for p in &ladder.puzzles {
        assert_eq!(p.tried, 2, "{rules}: {}", p.puzzle);
        if p.required {
            assert_eq!(
                p.solved, p.tried,
                "{rules}: {} at {} answered {:?}",
                p.puzzle, p.level, p.wrong
            );
        }
    }
    assert!(ladder.puzzles.iter().any(|p| p.required));
    assert!(ladder.to_string().contains("puzzles solved: "));
}

#[test]
fn each_junqi_level_beats_the_one_below() {
    check_ordering("hidden-front", 40);
}

#[test]
fn each_gunjin_level_beats_the_one_below() {
    check_ordering("gunjin-shogi", 40);
}

#[test]
fn a_ladder_is_a_function_of_its_seed() {
    let mut c = config("hidden-front", 4);
    c.levels = vec![Level::Greedy, Level::Search];
    let (a, b) = (run(&c).unwrap(), run(&c).unwrap());
    let summary = |l: &hidden_front_ladder::Ladder| {
        l.pairs
            .iter()
            .map(|p| (p.wins, p.draws, p.losses, p.plies_mean.to_bits()))
            .collect::<Vec<_>>()
    };
    assert_eq!(summary(&a), summary(&b));
}

#[test]
fn a_ladder_that_cannot_be_played_is_refused() {
    let mut c = config("hidden-front", 1);
    c.levels = vec![Level::Greedy];
    assert_eq!(run(&c).unwrap_err(), LadderError::TooFewLevels);
    c.levels = vec![Level::Greedy, Level::Greedy];
    assert_eq!(
        run(&c).unwrap_err(),
        LadderError::DuplicateLevel(Level::Greedy)
    );
    c.levels = vec![Level::Random, Level::Greedy];
    c.games = 0;
    assert_eq!(run(&c).unwrap_err(), LadderError::NoGames);
}
