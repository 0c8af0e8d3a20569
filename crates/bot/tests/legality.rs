//! Over many refereed games the bot's moves are always legal (in the engine's list and accepted
//! by the engine), its deployments always valid, and it is fed only its seat's projection.

mod common;

use common::{bot, bot_at, play, random};
use hidden_front_bot::{ComputerPlayer, Level};
use hidden_front_rules::{Rules, Side};

/// Every house option at once, and a short no-combat limit.
const HOUSE_RULES: &str =
    "hidden-front+hq-mobile+front-bombs+sturdy-mines+bomb-spares-flag+flag-reveal+no-combat-40";

fn rule_sets() -> [Rules; 3] {
    [
        Rules::default(),
        Rules::parse(HOUSE_RULES).unwrap(),
        Rules::parse("hidden-front+flag-reveal+sturdy-mines").unwrap(),
    ]
}

#[test]
fn deployments_are_valid_for_every_seed_side_and_rule_set() {
    for rules in rule_sets() {
        for side in Side::BOTH {
            for seed in 0..300 {
                let mut player = ComputerPlayer::new(side, rules, seed);
                let deployment = player.deployment();
                assert_eq!(deployment.side, side);
                assert_eq!(deployment.validate(&rules), Ok(()), "{rules} {side} {seed}");
            }
        }
    }
}

#[test]
fn deployments_guard_the_flag_with_mines() {
    let rules = Rules::default();
    let topo = rules.topology();
    for side in Side::BOTH {
        for seed in 0..50 {
            let d = ComputerPlayer::new(side, rules, seed).deployment();
            let flag = d
                .placements
                .iter()
                .find(|(_, k)| *k == hidden_front_rules::piece::junqi::FLAG)
                .map(|(n, _)| *n)
                .unwrap();
            let guards = hidden_front_rules::Nodes(topo.neighbors[flag.index()])
                .filter(|n| d.kind_at(*n) == Some(hidden_front_rules::piece::junqi::MINE))
                .count();
            assert_eq!(guards, 3, "{side} {seed}: {d:?}");
        }
    }
}

#[test]
fn bot_moves_are_legal_against_a_random_mover() {
    for rules in rule_sets() {
        for seed in 0..40u64 {
            let played = if seed % 2 == 0 {
                play(rules, seed, bot(Side::South, rules, seed), random(seed + 7))
            } else {
                play(rules, seed, random(seed + 7), bot(Side::North, rules, seed))
            };
            assert!(
                played.bot_moves > 0,
                "{rules} seed {seed}: the bot never moved"
            );
        }
    }
}

#[test]
fn bot_moves_are_legal_against_itself() {
    for rules in rule_sets() {
        for seed in 0..15u64 {
            let played = play(
                rules,
                500 + seed,
                bot(Side::South, rules, seed),
                bot(Side::North, rules, seed + 1),
            );
            assert!(played.bot_moves > 0);
        }
    }
}

/// Gunjin Shogi rule sets: the default board, another wall with both options, the small board.
fn gunjin_rule_sets() -> [Rules; 3] {
    [
        Rules::parse("gunjin-shogi").unwrap(),
        Rules::parse("gunjin-shogi+y-gates+tank-beats-engineer+mine-survives").unwrap(),
        Rules::parse("gunjin-shogi+23-pieces+no-combat-40").unwrap(),
    ]
}

#[test]
fn every_level_deploys_validly_in_both_families() {
    for rules in rule_sets().into_iter().chain(gunjin_rule_sets()) {
        for level in Level::ALL {
            assert!(level.supports(&rules));
            for side in Side::BOTH {
                for seed in 0..40 {
                    let d = ComputerPlayer::with_level(side, rules, level, seed).deployment();
                    assert_eq!(d.side, side);
                    assert_eq!(d.validate(&rules), Ok(()), "{rules} {level} {side} {seed}");
                }
            }
        }
    }
}

#[test]
fn every_level_plays_legal_games_in_both_families() {
    // Each level against the next one up (and search against itself), both colours; the
    // harness checks every move and every projection.
    for rules in rule_sets().into_iter().chain(gunjin_rule_sets()) {
        for (i, &level) in Level::ALL.iter().enumerate() {
            let other = Level::ALL[(i + 1).min(Level::ALL.len() - 1)];
            for seed in 0..2u64 {
                let (south, north) = if seed % 2 == 0 {
                    (level, other)
                } else {
                    (other, level)
                };
                let played = play(
                    rules,
                    900 + seed,
                    bot_at(Side::South, rules, south, seed, 8),
                    bot_at(Side::North, rules, north, seed + 1, 8),
                );
                assert!(played.bot_moves > 0, "{rules} {level}: nobody moved");
            }
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_game_at_every_level() {
    for rules in [Rules::default(), Rules::parse("gunjin-shogi").unwrap()] {
        for level in Level::ALL {
            let game = || {
                play(
                    rules,
                    77,
                    bot_at(Side::South, rules, level, 5, u32::MAX),
                    bot_at(Side::North, rules, Level::Belief, 6, u32::MAX),
                )
            };
            let (a, b) = (game(), game());
            assert_eq!(
                (a.outcome, a.plies),
                (b.outcome, b.plies),
                "{rules} {level}"
            );
        }
    }
}

/// How many ranks `node` stands in front of `side`'s back rank, by the board's own links.
fn ranks_from_back(rules: &Rules, node: hidden_front_rules::Node, side: Side) -> usize {
    let topo = rules.topology();
    std::iter::successors(Some(node), |at| {
        hidden_front_rules::Nodes(topo.behind[at.index()][side.index()]).next()
    })
    .count()
        - 1
}

/// The expert's Gunjin Shogi formation: the HQ held by a major general with the flag in front of
/// it (either of the two squares) and mines on its other ways in, every general, lieutenant general, tank, cavalry and engineer on a rank at least as far
/// forward as every company officer, and a different layout for every seed.
#[test]
fn the_expert_puts_its_strong_gunjin_pieces_in_front() {
    use hidden_front_rules::piece::gunjin::*;
    for rules in gunjin_rule_sets() {
        let topo = rules.topology();
        for side in Side::BOTH {
            let hq = hidden_front_rules::Nodes(topo.hq[side.index()])
                .next()
                .expect("an HQ");
            let mut seen = std::collections::HashSet::new();
            let mut flags = std::collections::HashSet::new();
            let mut keepers = std::collections::HashSet::new();
            for seed in 0..40 {
                let d = ComputerPlayer::with_level(side, rules, Level::Expert, seed).deployment();
                assert_eq!(d.validate(&rules), Ok(()), "{rules} {side} {seed}");
                let keeper = d.kind_at(hq);
                assert!(
                    matches!(keeper, Some(MAJOR_GENERAL | LIEUTENANT_GENERAL)),
                    "{rules} {side} {seed}: {keeper:?} holds the HQ"
                );
                keepers.insert(keeper);
                let flag = d
                    .placements
                    .iter()
                    .find(|(_, k)| *k == FLAG)
                    .expect("a flag")
                    .0;
                assert_eq!(
                    topo.behind[flag.index()][side.index()],
                    hq.bit(),
                    "{rules} {side} {seed}: the flag stands in front of the HQ"
                );
                flags.insert(flag);
                // Every way into the HQ holds the flag or a mine while mines last (three in the
                // 31-piece edition, two in the 23-piece one: then one square beside stays open).
                let ways_in: Vec<_> =
                    hidden_front_rules::Nodes(topo.neighbors[hq.index()] & topo.half[side.index()])
                        .collect();
                let sealed = ways_in
                    .iter()
                    .filter(|n| matches!(d.kind_at(**n), Some(MINE | FLAG)))
                    .count();
                let mines = rules
                    .kinds()
                    .iter()
                    .find(|(k, _, _)| *k == MINE)
                    .map_or(0, |(_, _, n)| usize::from(*n));
                assert_eq!(
                    sealed,
                    ways_in.len().min(mines + 1),
                    "{rules} {side} {seed}: the HQ's ways in {ways_in:?}"
                );
                // The pieces outside the HQ.
                let ranks = |kinds: &[hidden_front_rules::PieceKind]| -> Vec<usize> {
                    d.placements
                        .iter()
                        .filter(|(n, k)| kinds.contains(k) && *n != hq)
                        .map(|(n, _)| ranks_from_back(&rules, *n, side))
                        .collect()
                };
                let strong = ranks(&[GENERAL, LIEUTENANT_GENERAL, TANK, CAVALRY, ENGINEER]);
                let weak = ranks(&[CAPTAIN, FIRST_LIEUTENANT, SECOND_LIEUTENANT]);
                assert!(
                    strong.iter().min() >= weak.iter().max(),
                    "{rules} {side} {seed}: strong pieces on ranks {strong:?}, company officers on {weak:?}"
                );
                assert!(strong.iter().max() > weak.iter().min());
                seen.insert(format!("{:?}", d.placements));
            }
            assert_eq!(seen.len(), 40, "{rules} {side}: every seed its own layout");
            assert_eq!(flags.len(), 2, "{rules} {side}: the flag on either square");
            assert_eq!(
                keepers.len(),
                2,
                "{rules} {side}: either officer holds the HQ"
            );
        }
    }
}
