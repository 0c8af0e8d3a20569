//! Hand-made positions (`hidden_front_bot::puzzle`): the engine's `Position` referees, the bot
//! sees only the projection of a `PlayStarted` event and of each `Moved` event for its seat, and
//! chooses among the engine's legal moves.
//!
//! The puzzle suite is checked here the way the ladder counts it: every level from a puzzle's
//! `required_from` up answers it right for every seed. Beside it, what the suite's answers rest
//! on: what the belief infers, how the belief level scores the moves, and that no level can tell
//! hidden kinds apart.

use hidden_front_bot::puzzle::{Board, Placement, Puzzle, SUITE};
use hidden_front_bot::{Budget, Level};
use hidden_front_rules::{Family, PieceId, PieceKind, Rules, Side};
use std::time::Duration;

use Side::{North, South};

/// Seeds each required level gets at each puzzle.
const SEEDS: u64 = 8;

/// The levels' own layouts, without the wall-clock cut: fixed by the seed on any machine.
fn budget(level: Level) -> Budget {
    Budget {
        max_think: Duration::from_secs(3600),
        ..level.budget()
    }
}

fn puzzle(name: &str) -> &'static Puzzle {
    SUITE
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no puzzle {name}"))
}

fn family(p: &Puzzle) -> Family {
    Rules::parse(p.rules).unwrap().family
}

/// Every level from each puzzle's `required_from` up, every seed, in `family`.
fn check_required(family_wanted: Family) {
    let mut checked = 0;
    for p in SUITE.iter().filter(|p| family(p) == family_wanted) {
        let Some(from) = p.required_from else {
            continue;
        };
        for level in Level::ALL.into_iter().filter(|l| *l >= from) {
            for seed in 1..=SEEDS {
                let (answer, right) = p.solve(level, seed, Some(budget(level))).unwrap();
                assert!(
                    right,
                    "{} at {level}, seed {seed}: {answer} ({})",
                    p.name, p.what
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "no required puzzle in {family_wanted:?}");
}

#[test]
fn every_level_answers_the_junqi_puzzles_it_must() {
    check_required(Family::Junqi);
}

#[test]
fn every_level_answers_the_gunjin_puzzles_it_must() {
    check_required(Family::GunjinShogi);
}

#[test]
fn every_puzzle_has_right_and_wrong_answers() {
    // A puzzle every move solves tests nothing; one no move solves cannot be passed.
    let mut families = Vec::new();
    for p in SUITE {
        let wrong = p.wrong_answers().unwrap();
        let mut board = p.board(Level::Random, 1).unwrap();
        let legal = board.legal();
        assert!(!wrong.is_empty(), "{}: every move is right", p.name);
        assert!(
            wrong.len() < legal.len(),
            "{}: no move is right ({wrong:?})",
            p.name
        );
        let names: Vec<&str> = SUITE.iter().map(|q| q.name).collect();
        assert_eq!(
            names.iter().filter(|n| **n == p.name).count(),
            1,
            "{} named twice",
            p.name
        );
        families.push(family(p));
    }
    assert!(families.contains(&Family::Junqi) && families.contains(&Family::GunjinShogi));
}

#[test]
fn a_puzzle_that_cannot_be_set_up_is_refused() {
    use hidden_front_bot::puzzle::PuzzleError;
    let rules = Rules::default();
    let on = |pieces: &[Placement]| Board::new(Level::Belief, rules, South, pieces, 1).err();
    assert_eq!(
        on(&[("Z9", South, "F", 1)]),
        Some(PuzzleError::UnknownSquare("Z9".into()))
    );
    assert_eq!(
        on(&[("B1", South, "X", 1)]),
        Some(PuzzleError::UnknownKind("X".into()))
    );
    assert_eq!(
        on(&[("B1", South, "F", 1), ("B1", North, "F", 2)]),
        Some(PuzzleError::SquareTaken("B1".into()))
    );
    let mut board = Board::new(
        Level::Belief,
        rules,
        South,
        &[("B1", South, "F", 1), ("C6", South, "9", 2)],
        1,
    )
    .unwrap();
    assert_eq!(
        board.play("B1", "B2"),
        Err(PuzzleError::IllegalMove("B1-B2".into()))
    );
    assert_eq!(
        board.play("C5", "C4"),
        Err(PuzzleError::IllegalMove("C5-C4".into()))
    );
    board.play("C6", "C5").unwrap();
}

#[test]
fn a_piece_that_beat_an_eight_is_known_as_the_commander() {
    let board = puzzle("take-the-known-weaker")
        .board(Level::Belief, 1)
        .unwrap();
    assert_eq!(
        board.player().possible_kinds(PieceId(20)),
        Some(vec![PieceKind(9)])
    );
}

#[test]
fn a_piece_that_killed_and_stayed_is_known_as_a_sturdy_mine() {
    let board = puzzle("no-general-into-a-known-mine")
        .board(Level::Belief, 1)
        .unwrap();
    assert_eq!(
        board.player().possible_kinds(PieceId(20)),
        Some(vec![hidden_front_rules::piece::junqi::MINE])
    );
}

/// The belief level's score of the move named `name` on `board`.
fn belief_score(board: &mut Board, name: &str) -> f64 {
    let scores = board.belief_scores();
    scores
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{name} is not legal: {scores:?}"))
        .1
}

#[test]
fn the_belief_scores_a_gamble_against_a_stronger_or_unknown_piece_below_zero() {
    let mut board = puzzle("leave-the-known-stronger")
        .board(Level::Belief, 1)
        .unwrap();
    let attack = belief_score(&mut board, "D6-C6");
    assert!(attack < 0.0, "a 7 against an 8 or 9 scored {attack}");
    let mut board = puzzle("leave-an-unknown-front-piece")
        .board(Level::Belief, 1)
        .unwrap();
    let attack = belief_score(&mut board, "C5-C6");
    assert!(attack < 0.0, "a 4 against an unknown mover scored {attack}");
}

#[test]
fn the_belief_scores_leaving_the_flag_wall_below_holding_it() {
    let mut board = puzzle("hold-the-flag-wall")
        .board(Level::Belief, 1)
        .unwrap();
    let scores = board.belief_scores();
    let best = |leaving: bool| {
        scores
            .iter()
            .filter(|(n, _)| (n.starts_with("B2-") && n != "B2-C2") == leaving)
            .map(|(_, v)| *v)
            .fold(f64::MIN, f64::max)
    };
    assert!(
        best(true) < best(false),
        "leaving B2 scored {} against {} for the best other move",
        best(true),
        best(false)
    );
}

/// South's flag in B1 behind mines, North's in B12: a frame for hand-made positions.
fn frame() -> Vec<Placement> {
    vec![
        ("B1", South, "F", 40),
        ("A1", South, "M", 41),
        ("C1", South, "M", 42),
        ("B12", North, "F", 30),
        ("A12", North, "M", 31),
        ("C12", North, "M", 32),
    ]
}

#[test]
fn no_level_can_tell_hidden_kinds_apart() {
    // The same public game twice, with the enemy's hidden kinds swapped around: each level must
    // choose the same move, since it sees only projections (the search's layouts come from the
    // belief, not from the game).
    let armies = [["9", "4", "B"], ["B", "9", "4"]];
    for rules in [Rules::default(), Rules::parse("gunjin-shogi").unwrap()] {
        let gunjin = rules.family == Family::GunjinShogi;
        for level in Level::ALL {
            let mut chosen = Vec::new();
            for army in armies {
                let army: Vec<&'static str> = if gunjin {
                    army.iter()
                        .map(|k| match *k {
                            "9" => "GEN",
                            "4" => "CPT",
                            _ => "TNK",
                        })
                        .collect()
                } else {
                    army.to_vec()
                };
                let pieces: Vec<Placement> = if gunjin {
                    vec![
                        ("a1", South, "FLG", 40),
                        ("c3", South, "MAJ", 1),
                        ("e3", South, "ENG", 2),
                        ("a8", North, "FLG", 30),
                        ("c5", North, army[0], 20),
                        ("d6", North, army[1], 21),
                        ("f6", North, army[2], 22),
                    ]
                } else {
                    let mut p = frame();
                    p.extend([
                        ("C5", South, "8", 1),
                        ("E4", South, "1", 2),
                        ("C7", North, army[0], 20),
                        ("D7", North, army[1], 21),
                        ("E7", North, army[2], 22),
                    ]);
                    p
                };
                let mut board = Board::new(level, rules, South, &pieces, 1).unwrap();
                let mv = board.choose().unwrap();
                chosen.push(board.name(mv));
            }
            assert_eq!(
                chosen[0], chosen[1],
                "{rules} {level} told the armies apart"
            );
        }
    }
}
