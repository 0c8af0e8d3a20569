//! The full-information event form of `WatchGame` carries the engine's events losslessly: for
//! every event of many random games of both families, engine event -> protobuf -> bytes ->
//! protobuf -> engine event is the identity. The games are checked to contain every kind of event
//! and every shape of fight, so the identity is shown for all of them.

mod common;

use hidden_front_proto::v1 as pb;
use hidden_front_rules::Family;
use hidden_front_rules::Reveal;
use hidden_front_wire::{engine_event_from_proto, engine_event_to_proto};
use prost::Message;
use std::collections::BTreeSet;

/// Games per rule set; about 30 000 events in all.
const GAMES_PER_RULE_SET: u64 = 24;

#[test]
fn every_event_of_random_games_survives_the_wire_unchanged() {
    let mut seen: [BTreeSet<&str>; 2] = Default::default();
    let mut events = 0usize;
    for (r, name) in common::RULE_SETS.iter().enumerate() {
        let rules = common::rules(name);
        for game in 0..GAMES_PER_RULE_SET {
            let seed = (r as u64) << 32 | game;
            for (i, event) in common::random_game(rules, seed).iter().enumerate() {
                let seq = i as u64 + 1;
                let sent = pb::WatchGameResponse {
                    event: Some(engine_event_to_proto(
                        &rules,
                        "game",
                        seq,
                        event,
                        &Reveal::default(),
                    )),
                    trace_parent: String::new(),
                    recorded_at: Some(hidden_front_wire::timestamp_to_proto(
                        std::time::UNIX_EPOCH + std::time::Duration::from_millis(seq * 1_234),
                    )),
                    status: None,
                };
                let received = pb::WatchGameResponse::decode(sent.encode_to_vec().as_slice())
                    .expect("a message this release encoded decodes");
                let at = received.recorded_at.expect("the commit time is there");
                assert_eq!(
                    hidden_front_wire::timestamp_millis_from_proto("recorded_at", &at),
                    Ok(seq as i64 * 1_234),
                    "the commit time round-trips to the millisecond"
                );
                let upstream = received.event.expect("the event is there");
                assert_eq!(upstream.seq, seq);
                let back = engine_event_from_proto(&rules, &upstream).unwrap_or_else(|e| {
                    panic!("{name}, seed {seed}, event {seq} {event:?} does not decode: {e}")
                });
                assert_eq!(&back, event, "{name}, seed {seed}, event {seq}");
                let family = usize::from(rules.family == Family::GunjinShogi);
                seen[family].insert(common::shape(event));
                events += 1;
            }
        }
    }
    assert!(events > 20_000, "only {events} events were checked");
    let every: BTreeSet<&str> = [
        "created",
        "deployment_drafted",
        "deployment_confirmed",
        "deployment_confirmed_by_deadline",
        "play_started",
        "moved",
        "moved_combat",
        "moved_flag_captured",
        "moved_flag_reveal",
        "timed_out",
        "draw_offered",
        "draw_declined",
        "draw_lapsed",
        "resigned",
        "seat_lost",
        "ended",
    ]
    .into();
    let junqi_missing: Vec<_> = every.difference(&seen[0]).collect();
    assert!(
        junqi_missing.is_empty(),
        "no Junqi game had {junqi_missing:?}"
    );
    // Gunjin Shogi has neither flag capture nor flag reveal.
    let gunjin_missing: Vec<_> = every
        .difference(&seen[1])
        .filter(|s| !s.starts_with("moved_flag"))
        .collect();
    assert!(
        gunjin_missing.is_empty(),
        "no Gunjin Shogi game had {gunjin_missing:?}"
    );
}

/// What clients follow a game by converts both ways: for every event of random games of both
/// families and every viewer, the event as the live stream projects it, and as a look after the
/// end does, comes back from its proto form unchanged; so does every viewer's view after every
/// event.
#[test]
fn every_projected_event_and_view_survives_the_wire_unchanged() {
    use hidden_front_rules::{Game, Viewer, project, reveal, view};
    use hidden_front_wire::{
        Seats, game_event, game_view, game_view_from_proto, view_event_from_proto,
    };
    let mut checked = 0usize;
    for (r, name) in common::RULE_SETS.iter().enumerate() {
        let rules = common::rules(name);
        for game_no in 0..4 {
            let log = common::random_game(rules, (r as u64) << 32 | game_no);
            let ended = Game::replay(&log).expect("the log replays");
            let end = reveal(&ended);
            let mut game = Game::replay(&log[..1]).expect("the creation replays");
            for (i, event) in log.iter().enumerate() {
                if i > 0 {
                    game.apply(event).expect("the log replays");
                }
                let seq = i as u64 + 1;
                for viewer in Viewer::ALL {
                    let live = reveal(&game);
                    for shown in [
                        project(event, viewer, live.as_ref()),
                        project(event, viewer, end.as_ref()),
                    ]
                    .into_iter()
                    .flatten()
                    {
                        let proto = game_event(&rules, "g", seq, &shown);
                        let back = view_event_from_proto(&rules, &proto).unwrap_or_else(|e| {
                            panic!("{name} event {seq} for {viewer:?} does not decode: {e}")
                        });
                        assert_eq!(back, shown, "{name} event {seq} for {viewer:?}");
                        checked += 1;
                    }
                    let seen = view(&game, viewer);
                    let seats = Seats {
                        game_id: "g",
                        south_player: "s",
                        north_player: "n",
                    };
                    let proto = game_view(&seen, seats, seq, pb::TimeControl::default());
                    let back = game_view_from_proto(&proto)
                        .unwrap_or_else(|e| panic!("{name} view at {seq} for {viewer:?}: {e}"));
                    assert_eq!(back, seen, "{name} view at {seq} for {viewer:?}");
                }
            }
        }
    }
    assert!(checked > 5_000, "only {checked} events were checked");
}
