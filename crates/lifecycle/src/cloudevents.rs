//! Facts as CloudEvents 1.0 (structured JSON mode): the form webhooks deliver and the form
//! documented for consumers. One function makes the envelope, so every delivery of a fact is the
//! same bytes' worth of meaning, whoever sends it.

use crate::{Fact, FactBody};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The CloudEvents version these envelopes follow.
pub const SPEC_VERSION: &str = "1.0";

/// The media type of a structured-mode CloudEvent, the `Content-Type` of a webhook's body.
pub const CONTENT_TYPE: &str = "application/cloudevents+json";

/// One fact as a CloudEvent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CloudEvent {
    /// Always [`SPEC_VERSION`].
    pub specversion: String,
    /// The fact's id: the same on every delivery of it.
    pub id: String,
    /// Who says so: the deployment's configured source URI reference.
    pub source: String,
    /// The versioned type (`hiddenfront.game.ended.v1`, ...).
    #[serde(rename = "type")]
    pub event_type: String,
    /// `games/<game id>`, or `tournaments/<tournament id>` for a tournament's facts.
    pub subject: String,
    /// When the fact was written (RFC 3339, UTC).
    pub time: String,
    /// Always `application/json`.
    pub datacontenttype: String,
    /// Extension attribute: the fact's outbox position, the cursor to resume after it.
    pub hfposition: u64,
    /// The fact's data (see [`data`]).
    pub data: Value,
}

impl CloudEvent {
    /// The envelope of `fact`, as said by `source`.
    pub fn of(fact: &Fact, source: &str) -> CloudEvent {
        CloudEvent {
            specversion: SPEC_VERSION.to_owned(),
            id: fact.id.to_string(),
            source: source.to_owned(),
            event_type: fact.body.kind().event_type().to_owned(),
            subject: fact.subject(),
            time: rfc3339(fact.occurred_at),
            datacontenttype: "application/json".to_owned(),
            hfposition: fact.position,
            data: data(fact),
        }
    }

    /// The JSON body a webhook sends.
    pub fn to_json(&self) -> String {
        // Strings, numbers and JSON values always serialize.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A fact's data: the body's fields (without the `kind` tag, which the `type` carries), the
/// `game_id` of a game's fact (a tournament's carries its `tournament_id` in its body), and for
/// a game's end its `duration_ms` since creation.
pub fn data(fact: &Fact) -> Value {
    let mut fields = match serde_json::to_value(&fact.body) {
        Ok(Value::Object(fields)) => fields,
        _ => Map::new(),
    };
    fields.remove("kind");
    if fact.body.tournament_id().is_none() {
        fields.insert("game_id".into(), Value::String(fact.game_id.to_string()));
    }
    if let FactBody::GameEnded { .. } = fact.body {
        let millis = u64::try_from(fact.game_age().as_millis()).unwrap_or(u64::MAX);
        fields.insert("duration_ms".into(), Value::from(millis));
    }
    Value::Object(fields)
}

/// RFC 3339 in UTC, as CloudEvents' `time` wants.
pub fn rfc3339(at: std::time::SystemTime) -> String {
    OffsetDateTime::from(at)
        .format(&Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FactKind, RatingChange};
    use hidden_front_rules::{EndReason, Side};
    use std::time::{Duration, SystemTime};
    use uuid::Uuid;

    fn fact(body: FactBody) -> Fact {
        let created = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        Fact {
            position: 42,
            id: Uuid::now_v7(),
            game_id: Uuid::now_v7(),
            occurred_at: created + Duration::from_millis(61_500),
            game_created_at: created,
            body,
        }
    }

    #[test]
    fn an_ended_game_is_a_versioned_event_with_its_duration_and_no_kind_tag() {
        let ended = fact(FactBody::GameEnded {
            winner: Some(Side::North),
            winner_player: Some("bob".into()),
            reason: EndReason::FlagCaptured,
            plies: 57,
            south_player: "alice".into(),
            north_player: "bob".into(),
        });
        let event = CloudEvent::of(&ended, "/hiddenfront/test");
        assert_eq!(event.specversion, "1.0");
        assert_eq!(event.event_type, "hiddenfront.game.ended.v1");
        assert_eq!(event.id, ended.id.to_string());
        assert_eq!(event.subject, format!("games/{}", ended.game_id));
        assert_eq!(event.time, "2027-01-15T08:01:01.5Z");
        assert_eq!(event.hfposition, 42);
        assert_eq!(event.data["winner"], "north");
        assert_eq!(event.data["winner_player"], "bob");
        assert_eq!(event.data["plies"], 57);
        assert_eq!(event.data["duration_ms"], 61_500);
        assert_eq!(event.data["game_id"], ended.game_id.to_string());
        assert!(event.data.get("kind").is_none());
        let parsed: CloudEvent = serde_json::from_str(&event.to_json()).unwrap();
        assert_eq!(parsed, event);
    }

    #[test]
    fn a_tournament_fact_is_about_the_tournament_not_a_game() {
        let finished = crate::tests::tournament_bodies().pop().expect("a body");
        let mut stored = fact(finished);
        stored.game_id = crate::tournament_key("cup");
        let event = CloudEvent::of(&stored, "/hiddenfront/test");
        assert_eq!(event.event_type, "hiddenfront.tournament.finished.v1");
        assert_eq!(event.subject, "tournaments/cup");
        assert_eq!(event.data["tournament_id"], "cup");
        assert!(event.data.get("game_id").is_none(), "{}", event.data);
        assert!(event.data.get("duration_ms").is_none());
        assert_eq!(event.data["standings"][0]["player"], "ann");
        assert_eq!(event.data["standings"][0]["score"], 1.5);
    }

    #[test]
    fn every_kind_round_trips_through_the_stored_json_and_has_a_distinct_type() {
        let bodies = [
            FactBody::GameCreated {
                rules: "junqi".into(),
                time_control: "online".into(),
                south_player: "a".into(),
                north_player: "b".into(),
            },
            FactBody::SeatsFilled {
                south_player: "a".into(),
                north_player: "b".into(),
            },
            FactBody::PlayStarted {
                first_mover: Side::South,
            },
            FactBody::GameEnded {
                winner: None,
                winner_player: None,
                reason: EndReason::AgreedDraw,
                plies: 3,
                south_player: "a".into(),
                north_player: "b".into(),
            },
            FactBody::SeatLost {
                side: Side::North,
                player: "b".into(),
            },
            FactBody::RatingChanged {
                rules: "junqi".into(),
                changes: vec![RatingChange {
                    player: "a".into(),
                    old_rating: 1500.0,
                    new_rating: 1512.5,
                }],
            },
            FactBody::GameAborted {
                operator: "oncall".into(),
                reason: "stuck".into(),
            },
        ];
        let bodies: Vec<FactBody> = bodies
            .into_iter()
            .chain(crate::tests::tournament_bodies())
            .collect();
        let kinds: Vec<FactKind> = bodies.iter().map(FactBody::kind).collect();
        assert_eq!(kinds, FactKind::ALL);
        let mut types: Vec<&str> = kinds.iter().map(|k| k.event_type()).collect();
        types.sort_unstable();
        types.dedup();
        assert_eq!(types.len(), FactKind::ALL.len());
        for body in bodies {
            let json = body.to_json();
            assert!(json.contains(&format!("\"kind\":\"{}\"", body.kind().name())));
            assert_eq!(FactBody::from_json(&json).unwrap(), body);
        }
        assert!(FactBody::from_json("{\"kind\":\"nonsense\"}").is_err());
    }
}
