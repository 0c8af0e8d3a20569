//! One name per end reason on every surface.
//!
//! The engine's list ([`EndReason::ALL`]) and its wire names ([`EndReason::name`]) are the
//! reference. Every other surface that names an end reason is compared with it here, so a new
//! reason or a renamed one cannot reach one surface and not another (issue 34: draws by the
//! no-fight rule read `no_combat_limit` in lifecycle facts but `no_combat_100` in replays):
//!
//! - lifecycle facts: the stored JSON, the CloudEvents `data` of webhooks and `data_json` of
//!   `WatchLifecycle`, and the typed `GameEndedFact`;
//! - the replay text's `Result` header (written and read back by the same names);
//! - the proto `EndReason` enum, through the wire conversions both ways, and its value names.

use hidden_front_lifecycle::{Fact, FactBody, cloudevents};
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{EndReason, Outcome, Side};
use hidden_front_wire::{end_reason_from_proto, end_reason_to_proto, lifecycle_fact_to_proto};
use std::collections::BTreeSet;
use std::time::{Duration, UNIX_EPOCH};

/// Proto value names that do not follow `END_REASON_<WIRE NAME IN CAPITALS>`, with the wire name
/// each stands for. Renaming a proto enum value would break JSON clients (proto3 JSON sends the
/// value's name), so the one historical difference is listed here instead; nothing else may be.
const PROTO_NAME_EXCEPTIONS: [(&str, &str); 1] = [("END_REASON_NO_COMBAT_LIMIT", "no_combat_100")];

fn ended_fact(reason: EndReason) -> Fact {
    Fact {
        position: 7,
        id: uuid::Uuid::nil(),
        game_id: uuid::Uuid::nil(),
        occurred_at: UNIX_EPOCH + Duration::from_secs(1_000),
        game_created_at: UNIX_EPOCH,
        body: FactBody::GameEnded {
            winner: Some(Side::South),
            winner_player: Some("ann".into()),
            reason,
            plies: 100,
            south_player: "ann".into(),
            north_player: "bob".into(),
        },
    }
}

#[test]
fn every_surface_names_end_reasons_as_the_engine_does() {
    let names: Vec<&str> = EndReason::ALL.iter().map(|r| r.name()).collect();
    assert_eq!(
        names.iter().collect::<BTreeSet<_>>().len(),
        names.len(),
        "the engine's wire names are not distinct: {names:?}"
    );

    for reason in EndReason::ALL {
        let name = reason.name();
        assert_eq!(EndReason::from_name(name), Some(reason));

        // Lifecycle facts: stored JSON, CloudEvents data (webhooks), data_json, typed body.
        let fact = ended_fact(reason);
        let stored: serde_json::Value =
            serde_json::from_str(&fact.body.to_json()).expect("stored JSON");
        assert_eq!(stored["reason"], name, "stored lifecycle fact");
        assert_eq!(
            FactBody::from_json(&stored.to_string()).expect("reads back"),
            fact.body
        );
        assert_eq!(cloudevents::data(&fact)["reason"], name, "webhook data");
        let wire = lifecycle_fact_to_proto(
            &fact,
            &hidden_front_lifecycle::FeedPosition::from_cursor(fact.position, 1),
        );
        let data: serde_json::Value = serde_json::from_str(&wire.data_json).expect("data_json");
        assert_eq!(data["reason"], name, "WatchLifecycle data_json");
        let Some(pb::lifecycle_fact::Body::GameEnded(typed)) = wire.body else {
            panic!(
                "a game_ended fact's proto body is GameEnded: {:?}",
                wire.body
            );
        };
        assert_eq!(end_reason_from_proto(typed.reason), Some(reason));

        // The replay's Result header, written and read by the engine's names.
        assert_eq!(
            hidden_front_replay::outcome_text(Outcome::draw(reason)),
            format!("draw {name}")
        );
        assert_eq!(
            hidden_front_replay::outcome_text(Outcome::win(Side::North, reason)),
            format!("north-wins {name}")
        );

        // The proto enum, both ways, and its value's name.
        let proto = end_reason_to_proto(reason);
        assert_eq!(end_reason_from_proto(proto as i32), Some(reason));
        let expected = PROTO_NAME_EXCEPTIONS
            .iter()
            .find(|(_, wire_name)| *wire_name == name)
            .map(|(proto_name, _)| (*proto_name).to_owned())
            .unwrap_or_else(|| format!("END_REASON_{}", name.to_uppercase()));
        assert_eq!(proto.as_str_name(), expected, "proto value name of {name}");
    }

    // The proto enum has no value the engine lacks (besides UNSPECIFIED).
    let proto_values: BTreeSet<i32> = (0..64)
        .filter(|&v| pb::EndReason::try_from(v).is_ok_and(|r| r != pb::EndReason::Unspecified))
        .collect();
    let engine_values: BTreeSet<i32> = EndReason::ALL
        .iter()
        .map(|&r| end_reason_to_proto(r) as i32)
        .collect();
    assert_eq!(proto_values, engine_values);
    assert_eq!(
        end_reason_from_proto(pb::EndReason::Unspecified as i32),
        None
    );
}
