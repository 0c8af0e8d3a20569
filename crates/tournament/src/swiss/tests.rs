use super::*;
use crate::{Entrant, Outcome};
use proptest::prelude::*;

fn entrants(n: usize) -> Vec<Record> {
    (0..n)
        .map(|i| Record {
            entrant: Entrant {
                id: format!("p{i:02}"),
                rating: 2000 - 10 * i as i32,
            },
            rounds: Vec::new(),
        })
        .collect()
}

/// Records the round's games with outcomes drawn from `results` (0 first wins, 1 draw, 2 second
/// wins), and the bye.
fn play(records: &mut [Record], round: &RoundPairings, results: &mut impl Iterator<Item = u8>) {
    record_round(records, round, |_| match results.next().unwrap_or(0) % 3 {
        0 => Outcome::Win,
        1 => Outcome::Draw,
        _ => Outcome::Loss,
    })
    .expect("the round's players are entrants");
}

/// The ids in rank order (score, rating, id), as `pair_round` ranks them.
fn ranked(records: &[Record]) -> Vec<&str> {
    let mut order: Vec<&Record> = records.iter().collect();
    order.sort_by(|a, b| {
        b.half_points()
            .cmp(&a.half_points())
            .then(b.entrant.rating.cmp(&a.entrant.rating))
            .then(a.entrant.id.cmp(&b.entrant.id))
    });
    order.into_iter().map(|r| r.entrant.id.as_str()).collect()
}

/// Whether the others can be paired (strictly) when `bye` sits out.
fn pairable_without(records: &[Record], bye: &str) -> bool {
    let players: Vec<Player<'_>> = records.iter().map(player_of).collect();
    let order: Vec<usize> = ranked(records)
        .iter()
        .map(|id| records.iter().position(|r| r.entrant.id == *id).unwrap())
        .collect();
    let players = reorder(players, &order);
    let at = players.iter().position(|p| p.id == bye).unwrap();
    let mut budget = SEARCH_BUDGET;
    pair_all(&players, Some(at), true, &mut budget).is_some()
}

/// Every invariant of one paired round, checked against the records before it.
fn check_round(records: &[Record], round: &RoundPairings) {
    let mut seen = HashSet::new();
    for game in &round.games {
        assert!(
            seen.insert(game.first.clone()),
            "{} paired twice",
            game.first
        );
        assert!(
            seen.insert(game.second.clone()),
            "{} paired twice",
            game.second
        );
        let first = records.iter().find(|r| r.entrant.id == game.first).unwrap();
        assert!(
            !first
                .rounds
                .iter()
                .any(|p| matches!(p, Played::Game { opponent, .. } if *opponent == game.second)),
            "{} and {} meet again",
            game.first,
            game.second
        );
    }
    if let Some(bye) = &round.bye {
        assert!(seen.insert(bye.clone()), "the bye is also paired");
        let rank = ranked(records);
        let record = records.iter().find(|r| r.entrant.id == *bye).unwrap();
        assert!(!record.had_bye(), "{bye} gets a second bye");
        // Everyone ranked below the bye who could take it could not be left out.
        let at = rank.iter().position(|id| id == bye).unwrap();
        for lower in &rank[at + 1..] {
            let r = records.iter().find(|r| r.entrant.id == *lower).unwrap();
            assert!(
                r.had_bye() || !pairable_without(records, lower),
                "the bye went to {bye}, yet {lower} ranks lower and could take it"
            );
        }
    }
    assert_eq!(
        seen.len(),
        records.len(),
        "everyone paired or given the bye"
    );
}

/// Colour limits after a round paired in the strict pass: no difference past ±2 and never three
/// times the same colour running.
fn check_colours(records: &[Record]) {
    for record in records {
        let colours: Vec<Colour> = record.colours().collect();
        let difference: i32 = colours
            .iter()
            .map(|c| if *c == Colour::First { 1 } else { -1 })
            .sum();
        assert!(
            difference.abs() <= 2,
            "{}: colour difference {difference}",
            record.entrant.id
        );
        assert!(
            !colours.windows(3).any(|w| w[0] == w[1] && w[1] == w[2]),
            "{}: three times the same colour: {colours:?}",
            record.entrant.id
        );
    }
}

#[test]
fn the_first_round_pairs_the_top_half_against_the_bottom_half_alternating_colours() {
    let records = entrants(8);
    let round = pair_round(&records).unwrap();
    assert_eq!(round.bye, None);
    let games: Vec<(&str, &str)> = round
        .games
        .iter()
        .map(|g| (g.first.as_str(), g.second.as_str()))
        .collect();
    assert_eq!(
        games,
        [
            ("p00", "p04"),
            ("p05", "p01"),
            ("p02", "p06"),
            ("p07", "p03")
        ]
    );
}

#[test]
fn the_second_round_pairs_inside_score_groups() {
    let mut records = entrants(8);
    let first = pair_round(&records).unwrap();
    play(&mut records, &first, &mut std::iter::repeat(0));
    let second = pair_round(&records).unwrap();
    check_round(&records, &second);
    for game in &second.games {
        let score = |id: &str| {
            records
                .iter()
                .find(|r| r.entrant.id == id)
                .unwrap()
                .half_points()
        };
        assert_eq!(
            score(&game.first),
            score(&game.second),
            "{game:?} crosses score groups although both groups are even"
        );
    }
}

/// The event: nine players over four rounds, so a bye each round, each to a different
/// player, the lowest ranked who can take it.
#[test]
fn nine_players_over_four_rounds_get_four_different_byes() {
    let mut records = entrants(9);
    let mut results = [0u8, 2, 1, 0, 0, 2, 2, 1, 0, 0, 1, 2, 0, 2, 0, 0]
        .into_iter()
        .cycle();
    let mut byes = HashSet::new();
    for _ in 0..4 {
        let round = pair_round(&records).unwrap();
        check_round(&records, &round);
        assert!(byes.insert(round.bye.clone().expect("a bye with nine")));
        play(&mut records, &round, &mut results);
        check_colours(&records);
    }
    assert_eq!(byes.len(), 4);
}

#[test]
fn a_round_that_cannot_avoid_repeats_is_refused() {
    let mut records = entrants(4);
    for _ in 0..3 {
        let round = pair_round(&records).unwrap();
        play(&mut records, &round, &mut std::iter::repeat(1));
    }
    assert_eq!(
        pair_round(&records),
        Err(TournamentError::NoPairing { round: 4 })
    );
}

#[test]
fn records_that_do_not_describe_one_tournament_are_refused() {
    assert_eq!(
        pair_round(&entrants(1)),
        Err(TournamentError::TooFewEntrants(1))
    );
    let mut twice = entrants(3);
    twice[2].entrant.id = "p00".into();
    assert_eq!(
        pair_round(&twice),
        Err(TournamentError::DuplicateEntrant("p00".into()))
    );
    let mut records = entrants(4);
    let round = pair_round(&records).unwrap();
    play(&mut records, &round, &mut std::iter::repeat(0));
    let mut unknown = records.clone();
    unknown[0].rounds[0] = Played::Game {
        opponent: "nobody".into(),
        colour: Colour::First,
        outcome: Outcome::Win,
    };
    assert!(matches!(
        pair_round(&unknown),
        Err(TournamentError::UnknownOpponent { .. })
    ));
    let mut both_won = records.clone();
    if let Played::Game { outcome, .. } = &mut both_won[1].rounds[0] {
        *outcome = Outcome::Win;
    }
    if let Played::Game { outcome, .. } = &mut both_won[0].rounds[0] {
        *outcome = Outcome::Win;
    }
    assert!(matches!(
        pair_round(&both_won),
        Err(TournamentError::Inconsistent { round: 1, .. })
    ));
    let mut short = records;
    short[3].rounds.clear();
    assert!(matches!(
        pair_round(&short),
        Err(TournamentError::RoundsDiffer { .. })
    ));
}

/// A recorded round gives every entrant one more round (absent if left out) and changes nothing
/// when it names a stranger.
#[test]
fn recording_a_round_keeps_the_records_of_one_length() {
    let mut records = entrants(5);
    let round = RoundPairings {
        games: vec![Pairing {
            first: "p00".into(),
            second: "p01".into(),
        }],
        bye: Some("p04".into()),
    };
    record_round(&mut records, &round, |_| Outcome::Draw).unwrap();
    assert!(records.iter().all(|r| r.rounds.len() == 1));
    assert_eq!(records[2].rounds[0], Played::Absent);
    assert_eq!(records[4].rounds[0], Played::Bye);
    assert_eq!(records[1].half_points(), 1);
    let stranger = RoundPairings {
        games: vec![Pairing {
            first: "p00".into(),
            second: "nobody".into(),
        }],
        bye: None,
    };
    let before = records.clone();
    assert_eq!(
        record_round(&mut records, &stranger, |_| Outcome::Win),
        Err(TournamentError::NotAnEntrant("nobody".into()))
    );
    assert_eq!(records, before, "nothing half-applied");
}

#[test]
fn the_input_order_does_not_change_the_pairing() {
    let mut records = entrants(11);
    let mut results = (0u8..).map(|i| i.wrapping_mul(7) % 3);
    for _ in 0..3 {
        let round = pair_round(&records).unwrap();
        play(&mut records, &round, &mut results);
    }
    let mut reversed = records.clone();
    reversed.reverse();
    assert_eq!(pair_round(&records), pair_round(&reversed));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any field of 6 to 40 over up to half as many rounds (at most 7), any results: every round
    /// is paired with no repeat, no second bye, the bye to the lowest ranked who can take it,
    /// and the colour limits kept.
    #[test]
    fn every_round_keeps_the_invariants(
        n in 6usize..40,
        rounds in 1usize..8,
        results in proptest::collection::vec(0u8..3, 200),
    ) {
        let rounds = rounds.min(n / 2);
        let mut records = entrants(n);
        let mut results = results.into_iter().cycle();
        for _ in 0..rounds {
            let round = pair_round(&records).unwrap();
            check_round(&records, &round);
            play(&mut records, &round, &mut results);
            check_colours(&records);
        }
    }
}
