//! The round trip over many random games of both families: log -> text -> replay is the same
//! replay, the text is canonical, and the engine re-judges it to the game's own result.

mod common;

use common::{RULE_SETS, random_game, replay_of};
use hidden_front_replay::{Replay, Verified, verify, verify_text};
use hidden_front_rules::{EndReason, Event, Rules};
use std::collections::BTreeMap;

/// Games per rule set (8 rule sets, 4 of each family).
const GAMES_PER_RULE_SET: u64 = 60;

#[test]
fn random_games_of_both_families_round_trip_and_verify() {
    let mut reasons: BTreeMap<(&str, &'static str), u32> = BTreeMap::new();
    let mut timed_plies = 0;
    let mut late_plies = 0;
    let mut timed_events = 0;
    for (r, name) in RULE_SETS.iter().enumerate() {
        let rules = Rules::parse(name).expect("a rule set");
        let family = if name.starts_with("gunjin") {
            "gunjin"
        } else {
            "junqi"
        };
        for i in 0..GAMES_PER_RULE_SET {
            let seed = (r as u64) << 32 | i;
            let played = random_game(rules, seed);
            let replay = replay_of(&played, seed);
            let text = replay.to_text();
            let parsed =
                Replay::parse(&text).unwrap_or_else(|e| panic!("{name} seed {seed}: {e}\n{text}"));
            assert_eq!(
                parsed, replay,
                "{name} seed {seed}: the text lost something"
            );
            assert_eq!(parsed.to_text(), text, "{name} seed {seed}: not canonical");
            let want = Verified {
                events: played.events.len(),
                plies: played.game.plies(),
                outcome: played.game.outcome().expect("ended"),
            };
            assert_eq!(verify(&replay), Ok(want), "{name} seed {seed}");
            assert_eq!(verify_text(&text), Ok(want), "{name} seed {seed}");
            assert_eq!(replay.outcome(), want.outcome);
            assert_eq!(replay.plies(), want.plies);
            timed_plies += text.lines().filter(|l| l.contains(" clock ")).count();
            late_plies += text.lines().filter(|l| l.contains(" clock -")).count();
            timed_events += replay.entries().iter().filter(|e| e.at.is_some()).count();
            *reasons
                .entry((family, want.outcome.reason.name()))
                .or_default() += 1;
        }
    }
    eprintln!("end reasons: {reasons:?}; plies with clock readings: {timed_plies}");
    // The sample covers every way a game of each family ends here.
    for family in ["junqi", "gunjin"] {
        for reason in [
            EndReason::Resigned,
            EndReason::Timeouts,
            EndReason::AgreedDraw,
            EndReason::Disconnected,
            EndReason::SeatLost,
            EndReason::Aborted,
        ] {
            assert!(
                reasons.contains_key(&(family, reason.name())),
                "no {family} game ended by {}: {reasons:?}",
                reason.name()
            );
        }
    }
    assert!(
        reasons.contains_key(&("junqi", "flag_captured")),
        "{reasons:?}"
    );
    assert!(
        reasons.contains_key(&("gunjin", "hq_entered"))
            || reasons.contains_key(&("gunjin", "no_combat_100")),
        "{reasons:?}"
    );
    assert!(timed_plies > 0, "no clock reading was written");
    assert!(late_plies > 0, "no clock that had run out was written");
    assert!(timed_events > 0, "no server time was written");
}

#[test]
fn every_kind_of_event_appears_in_the_sample() {
    let mut kinds = std::collections::BTreeSet::new();
    for (r, name) in RULE_SETS.iter().enumerate() {
        let rules = Rules::parse(name).expect("a rule set");
        for i in 0..GAMES_PER_RULE_SET {
            for event in random_game(rules, (r as u64) << 32 | i).events {
                kinds.insert(match event {
                    Event::Created { .. } => "created",
                    Event::DeploymentDrafted { .. } => "drafted",
                    Event::DeploymentConfirmed {
                        by_deadline: true, ..
                    } => "confirmed by deadline",
                    Event::DeploymentConfirmed { .. } => "confirmed",
                    Event::PlayStarted { .. } => "started",
                    Event::Moved {
                        combat: Some(_),
                        flag_reveal,
                        ..
                    } if !flag_reveal.is_empty() => "fight with flag reveal",
                    Event::Moved {
                        combat: Some(_), ..
                    } => "fight",
                    Event::Moved { .. } => "moved",
                    Event::TimedOut { .. } => "timed out",
                    Event::DrawOffered { .. } => "draw offered",
                    Event::DrawDeclined { .. } => "draw declined",
                    Event::DrawLapsed { .. } => "draw lapsed",
                    Event::Resigned { .. } => "resigned",
                    Event::SeatLost { .. } => "seat lost",
                    Event::Ended { .. } => "ended",
                });
            }
        }
    }
    assert_eq!(kinds.len(), 15, "{kinds:?}");
}
