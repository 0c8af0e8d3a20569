//! Over many refereed games the bot's moves are always legal (in the engine's list and accepted
//! by the engine), its deployments always valid, and it is fed only its seat's projection.

mod common;

use common::{bot, play, random};
use hidden_front_bot::ComputerPlayer;
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
