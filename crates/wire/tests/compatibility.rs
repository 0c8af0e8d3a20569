//! Messages recorded by earlier releases still decode: `WatchGame` is read by gateways and
//! matchmaking replicas that may be a release older or newer than the session during a rolling
//! update, so its encoding is a contract.
//!
//! `tests/fixtures/watch_game/release-X.Y.Z/` holds, per game family, a few `WatchGameResponse`
//! messages as that release encoded them (`*.binpb`, length-delimited, a `Created` event first:
//! its rules are the game's) and the engine events they carry (`*.json`, the engine's serde
//! form, which is also how the stores keep events). Every release's recording must decode, with
//! this release's reader, to those events. Record the current release when it is cut (a recording
//! never changes afterwards):
//! `cargo test -p hidden-front-wire --test compatibility -- --ignored record_this_release`.

mod common;

use hidden_front_proto::v1 as pb;
use hidden_front_rules::Reveal;
use hidden_front_rules::{Event, Rules};
use hidden_front_wire::{engine_event_from_proto, engine_event_to_proto};
use prost::Message;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One recorded item: what the watcher must get out of the message.
#[derive(Debug, Serialize, Deserialize)]
struct Expected {
    seq: u64,
    trace_parent: String,
    event: Event,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/watch_game")
}

/// Decodes a recording: each message with the rules of the recording's `Created` event.
fn decode_recording(bytes: &[u8]) -> Vec<Expected> {
    let mut rest = bytes;
    let mut rules: Option<Rules> = None;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let item = pb::WatchGameResponse::decode_length_delimited(&mut rest)
            .expect("a recorded message decodes");
        let upstream = item.event.expect("a recorded message has its event");
        if let Some(pb::game_event::Event::Created(created)) = &upstream.event {
            rules = Some(Rules::parse(&created.rules).expect("recorded rules parse"));
        }
        let rules = rules.expect("a recording starts with the game's Created event");
        let event = engine_event_from_proto(&rules, &upstream)
            .unwrap_or_else(|e| panic!("recorded event {} does not decode: {e}", upstream.seq));
        out.push(Expected {
            seq: upstream.seq,
            trace_parent: item.trace_parent,
            event,
        });
    }
    out
}

#[test]
fn every_recorded_release_decodes_to_its_engine_events() {
    let mut recordings = 0;
    let mut releases: Vec<_> = std::fs::read_dir(fixtures())
        .expect("tests/fixtures/watch_game exists")
        .map(|entry| entry.expect("a fixture entry").path())
        .collect();
    releases.sort();
    for release in releases {
        for family in ["junqi", "gunjin-shogi"] {
            let binary = release.join(format!("{family}.binpb"));
            let json = release.join(format!("{family}.json"));
            let bytes = std::fs::read(&binary).unwrap_or_else(|e| panic!("{binary:?}: {e}"));
            let expected: Vec<Expected> = serde_json::from_slice(
                &std::fs::read(&json).unwrap_or_else(|e| panic!("{json:?}: {e}")),
            )
            .unwrap_or_else(|e| panic!("{json:?}: {e}"));
            let decoded = decode_recording(&bytes);
            assert_eq!(decoded.len(), expected.len(), "{binary:?}");
            for (got, want) in decoded.iter().zip(&expected) {
                assert_eq!(
                    (got.seq, &got.trace_parent, &got.event),
                    (want.seq, &want.trace_parent, &want.event),
                    "{binary:?}"
                );
            }
            recordings += 1;
        }
    }
    assert!(recordings >= 2, "no recorded release found");
}

/// A W3C traceparent, to show the field survives too.
const TRACE_PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// A few events of `rules`' games: the first game's `Created`, then the first event of every
/// shape (kind, fight, flag capture or reveal, confirmation by the deadline).
fn selection(rules: Rules) -> Vec<(u64, Event)> {
    let mut shapes = BTreeSet::new();
    let mut chosen = Vec::new();
    for seed in 0..200 {
        for (i, event) in common::random_game(rules, seed).into_iter().enumerate() {
            if shapes.insert(common::shape(&event)) {
                chosen.push((i as u64 + 1, event));
            }
        }
    }
    chosen
}

#[test]
#[ignore = "records the current release's messages; run by hand when a release is cut"]
fn record_this_release() {
    let dir = fixtures().join(format!("release-{}", env!("CARGO_PKG_VERSION")));
    assert!(
        !dir.exists(),
        "{dir:?} is already recorded, and a release's recording never changes"
    );
    std::fs::create_dir_all(&dir).expect("create the recording's directory");
    for (family, name) in [
        ("junqi", common::RULE_SETS[1]),
        ("gunjin-shogi", common::RULE_SETS[3]),
    ] {
        let rules = common::rules(name);
        let mut bytes = Vec::new();
        let mut expected = Vec::new();
        for (n, (seq, event)) in selection(rules).into_iter().enumerate() {
            let trace_parent = if n % 2 == 0 { TRACE_PARENT } else { "" }.to_string();
            pb::WatchGameResponse {
                event: Some(engine_event_to_proto(
                    &rules,
                    "recorded-game",
                    seq,
                    &event,
                    &Reveal::default(),
                )),
                trace_parent: trace_parent.clone(),
                // The recorded fixtures predate commit times: absent, as an older session sent.
                recorded_at: None,
                status: None,
            }
            .encode_length_delimited(&mut bytes)
            .expect("a Vec grows");
            expected.push(Expected {
                seq,
                trace_parent,
                event,
            });
        }
        std::fs::write(dir.join(format!("{family}.binpb")), bytes).expect("write the messages");
        let json = serde_json::to_string_pretty(&expected).expect("events serialize");
        std::fs::write(dir.join(format!("{family}.json")), json + "\n").expect("write the events");
    }
}

fn length_delimited(tag: u32, value: &[u8], buf: &mut Vec<u8>) {
    prost::encoding::encode_key(tag, prost::encoding::WireType::LengthDelimited, buf);
    prost::encoding::encode_varint(value.len() as u64, buf);
    buf.extend_from_slice(value);
}

fn varint(tag: u32, value: u64, buf: &mut Vec<u8>) {
    prost::encoding::encode_key(tag, prost::encoding::WireType::Varint, buf);
    prost::encoding::encode_varint(value, buf);
}

/// `event` as a newer session might send it: fields this release does not know in the event
/// body (`body_extras`, e.g. the reveal a later release adds to `GameEnded`), in the
/// `GameEvent` and in the response, and the retired `engine_event_json` (field 2) as an older
/// session still sends it.
fn with_unknown_fields(original: &pb::GameEvent, body_tag: u32, body: Vec<u8>) -> Vec<u8> {
    let mut event = pb::GameEvent {
        event: None,
        ..original.clone()
    }
    .encode_to_vec();
    length_delimited(body_tag, &body, &mut event);
    length_delimited(99, b"a field of the future", &mut event);
    let mut response = Vec::new();
    length_delimited(1, &event, &mut response);
    length_delimited(2, br#"{"type":"resigned","side":"south"}"#, &mut response);
    length_delimited(3, TRACE_PARENT.as_bytes(), &mut response);
    // Field 4 is `recorded_at` now and 5 `status`; a later release's field comes after them.
    varint(6, 7, &mut response);
    response
}

#[test]
fn fields_unknown_to_this_release_are_ignored() {
    let rules = common::rules(common::RULE_SETS[1]);
    let log: Vec<Event> = (0..50)
        .flat_map(|seed| common::random_game(rules, seed))
        .collect();
    let mut checked = BTreeSet::new();
    for (i, event) in log.iter().enumerate() {
        let original = engine_event_to_proto(&rules, "g", i as u64 + 1, event, &Reveal::default());
        let bytes = match &original.event {
            Some(pb::game_event::Event::Ended(ended)) => {
                // A later release adds fields to the end (numbers this release does not use;
                // 3 is the reveal now).
                let mut body = ended.encode_to_vec();
                let deployment = pb::Deployment {
                    side: pb::Side::North as i32,
                    placements: vec![pb::Placement {
                        square: "A1".into(),
                        piece: "F".into(),
                    }],
                };
                length_delimited(30, &deployment.encode_to_vec(), &mut body);
                length_delimited(31, &deployment.encode_to_vec(), &mut body);
                varint(100, 1, &mut body);
                with_unknown_fields(&original, 20, body)
            }
            Some(pb::game_event::Event::Moved(moved)) if moved.combat.is_some() => {
                let mut body = pb::Moved {
                    combat: None,
                    ..moved.clone()
                }
                .encode_to_vec();
                let mut combat = moved
                    .combat
                    .as_ref()
                    .map(Message::encode_to_vec)
                    .unwrap_or_default();
                varint(6, 1, &mut combat);
                length_delimited(5, &combat, &mut body);
                length_delimited(40, b"x", &mut body);
                with_unknown_fields(&original, 14, body)
            }
            _ => continue,
        };
        let item = pb::WatchGameResponse::decode(bytes.as_slice()).expect("unknown fields decode");
        assert_eq!(item.trace_parent, TRACE_PARENT);
        let upstream = item.event.expect("the event is there");
        let back = engine_event_from_proto(&rules, &upstream).expect("the event converts");
        assert_eq!(&back, event);
        checked.insert(common::shape(event));
    }
    assert!(
        checked.contains("ended") && checked.contains("moved_combat"),
        "{checked:?}"
    );
}
