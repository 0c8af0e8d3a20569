//! The duplicate ladder: twins share one deal with the seats swapped, the paired score is the
//! mean of the twins' scores, and the sequential test stops a lopsided pair early, the same way
//! whatever the number of threads.

use hidden_front_bot::{Budget, Level};
use hidden_front_ladder::{
    GameRecord, Ladder, LadderConfig, LadderError, Pairs, Sprt, SprtVerdict, play_game, run,
    twin_score,
};
use hidden_front_rules::{Rules, Side};
use std::time::Duration;

/// Without the wall-clock cut, so a seed fixes every game in a debug build too.
const BUDGET: Budget = Budget {
    samples: hidden_front_bot::SEARCH_SAMPLES,
    max_think: Duration::from_secs(3600),
};

fn config(levels: [Level; 2], twins: u32, sprt: Option<Sprt>) -> LadderConfig {
    LadderConfig {
        rules: Rules::default(),
        levels: levels.to_vec(),
        games: twins,
        seed: 2027,
        jobs: 2,
        pairs: Pairs::All,
        budget: Some(BUDGET),
        duplicate: true,
        sprt,
        puzzle_seeds: 0,
    }
}

fn twins(ladder: &Ladder) -> Vec<&[GameRecord]> {
    ladder.records.chunks(2).collect()
}

#[test]
fn twins_share_a_deal_with_the_seats_swapped() {
    let c = config([Level::Random, Level::Greedy], 6, None);
    let ladder = run(&c).unwrap();
    println!("{ladder}");
    assert_eq!(ladder.crashes(), 0);
    assert_eq!(ladder.illegal_moves(), 0);
    assert_eq!(
        (ladder.games_per_pair, ladder.twins_per_pair),
        (12, Some(6))
    );
    assert_eq!(ladder.records.len(), 12);
    let mut deals = Vec::new();
    for (k, twin) in twins(&ladder).into_iter().enumerate() {
        let [one, two] = twin else {
            panic!("a twin of {} games", twin.len())
        };
        assert_eq!((one.game, two.game), (2 * k as u32, 2 * k as u32 + 1));
        assert_eq!((one.a, one.b), (Level::Random, Level::Greedy));
        assert_eq!((two.a, two.b), (Level::Random, Level::Greedy));
        // The seats swap; the seed (the referee's and each seat's random streams), the first
        // mover and both deployments stay.
        assert_eq!((one.a_side, two.a_side), (Side::South, Side::North));
        assert_eq!(one.seed, two.seed);
        assert_eq!(one.first, two.first);
        let expected_first = if k % 2 == 0 { Side::South } else { Side::North };
        assert_eq!(one.first, expected_first, "twin {k}");
        let deal = one.deployments.clone().expect("the first game deployed");
        assert_eq!(two.deployments.as_ref(), Some(&deal), "twin {k}");
        assert_eq!(
            (deal[0].side, deal[1].side),
            (Side::South, Side::North),
            "twin {k}"
        );
        deals.push(deal);
        // The first game is the ordinary game of that number and seed: each level deployed for
        // its seat as it always does.
        let alone = play_game(c.rules, one.a, one.b, one.game, one.seed, Some(BUDGET));
        assert_eq!(alone.deployments, one.deployments, "twin {k}");
        assert_eq!((alone.plies, alone.score_a()), (one.plies, one.score_a()));
    }
    // Each twin has its own deal.
    deals.sort_by_key(|d| format!("{d:?}"));
    deals.dedup();
    assert_eq!(deals.len(), 6);
}

#[test]
fn the_paired_score_is_the_mean_of_the_twins_scores() {
    let ladder = run(&config([Level::Random, Level::Greedy], 8, None)).unwrap();
    let pair = &ladder.pairs[0];
    let paired = pair
        .paired
        .as_ref()
        .expect("a duplicate ladder has paired figures");
    let scores: Vec<f64> = twins(&ladder)
        .into_iter()
        .map(|t| twin_score(&[t[0].clone(), t[1].clone()]).expect("no crash"))
        .collect();
    assert_eq!(scores.len(), 8);
    let mean = scores.iter().sum::<f64>() / 8.0;
    assert!(
        (paired.score - mean).abs() < 1e-12,
        "{} {mean}",
        paired.score
    );
    // Each twin scores (s1 + s2) / 2 from its games; the counts add up to the twins.
    for (t, s) in twins(&ladder).into_iter().zip(&scores) {
        assert_eq!(
            *s,
            (t[0].score_a().unwrap() + t[1].score_a().unwrap()) / 2.0
        );
    }
    let mut counts = [0u32; 5];
    for s in &scores {
        counts[(s * 4.0) as usize] += 1;
    }
    assert_eq!(paired.pentanomial, counts);
    assert_eq!(paired.twins, 8);
    // Over whole twins the paired mean is the games' mean score.
    assert_eq!(pair.games, 16);
    assert!((pair.score - paired.score).abs() < 1e-12);
    assert!(paired.score_low <= paired.score && paired.score <= paired.score_high);
    assert!(paired.sprt.is_none());
}

fn sprt_config(jobs: usize) -> LadderConfig {
    // Greedy first: it wins almost every Junqi game against random.
    let mut c = config([Level::Greedy, Level::Random], 40, Some(Sprt::default()));
    c.jobs = jobs;
    c
}

#[test]
fn a_lopsided_pair_stops_early_with_h1_accepted() {
    let ladder = run(&sprt_config(2)).unwrap();
    println!("{ladder}");
    let pair = &ladder.pairs[0];
    let paired = pair.paired.as_ref().unwrap();
    let sprt = paired.sprt.expect("the test ran");
    assert_eq!(sprt.verdict, SprtVerdict::H1Accepted);
    assert!(sprt.llr >= sprt.upper, "{sprt:?}");
    // No verdict before the minimum of twins, and far fewer than the 40 allowed.
    assert!(
        (Sprt::default().min_twins..20).contains(&sprt.twins),
        "{sprt:?}"
    );
    assert_eq!(paired.twins, sprt.twins);
    assert_eq!(pair.games, 2 * sprt.twins);
    assert_eq!(ladder.records.len() as u32, 2 * sprt.twins);
    assert!(paired.score > 0.9, "{}", paired.score);
}

#[test]
fn where_the_test_stops_does_not_depend_on_the_threads() {
    let summary = |l: &Ladder| {
        l.pairs
            .iter()
            .map(|p| {
                let t = p.paired.as_ref().unwrap();
                let sprt = t.sprt.unwrap();
                (
                    t.pentanomial,
                    sprt.twins,
                    sprt.llr.to_bits(),
                    sprt.verdict,
                    p.plies_mean.to_bits(),
                )
            })
            .collect::<Vec<_>>()
    };
    let one = run(&sprt_config(1)).unwrap();
    let three = run(&sprt_config(3)).unwrap();
    assert_eq!(summary(&one), summary(&three));
}

#[test]
fn duplicate_configurations_that_cannot_be_played_are_refused() {
    let mut c = config([Level::Random, Level::Greedy], 4, Some(Sprt::default()));
    c.duplicate = false;
    assert_eq!(run(&c).unwrap_err(), LadderError::SprtWithoutDuplicate);
    let refused = |sprt: Sprt| run(&config([Level::Random, Level::Greedy], 4, Some(sprt)));
    let default = Sprt::default();
    for (elo0, elo1) in [(35.0, 0.0), (10.0, 10.0), (f64::NAN, 35.0)] {
        assert_eq!(
            refused(Sprt {
                elo0,
                elo1,
                ..default
            })
            .unwrap_err(),
            LadderError::SprtHypotheses
        );
    }
    for (alpha, beta) in [(0.0, 0.05), (0.05, 0.0), (0.5, 0.5), (0.05, -1.0)] {
        assert_eq!(
            refused(Sprt {
                alpha,
                beta,
                ..default
            })
            .unwrap_err(),
            LadderError::SprtErrorRates
        );
    }
    let mut c = config([Level::Random, Level::Greedy], u32::MAX / 2 + 1, None);
    assert_eq!(run(&c).unwrap_err(), LadderError::TooManyTwins);
    c.games = 0;
    assert_eq!(run(&c).unwrap_err(), LadderError::NoGames);
}
