//! Every inbound conversion of the wire crate, fed arbitrary values: it never panics, and a
//! refusal names the field it read (`move.to`, `event.moved.combat.defender_piece`), so the
//! message a caller gets points at the culprit. An accepted value converts back to itself.
//!
//! Inputs mix arbitrary text, bytes and integers with near-misses (real squares and piece codes
//! in odd cases, ids just past a byte, enum values just past the last) so that both the
//! accepting and the refusing paths are exercised.

mod common;

use hidden_front_proto::v1 as pb;
use hidden_front_rules::Reveal;
use hidden_front_rules::{Event, Rules, Side, Viewer};
use hidden_front_wire::{
    FieldError, deployment_from_proto, deployment_to_proto, engine_event_from_proto,
    engine_event_to_proto, move_from_proto, move_to_proto, rules_from_proto, side_from_proto,
    side_to_proto, square_from_proto, viewer_from_proto, viewer_to_proto,
};
use proptest::prelude::*;
use prost::Message;
use std::sync::LazyLock;

const CASES: u32 = 2_000;

/// A refusal must name `field` (or a field inside it) and say so in its message.
fn names_field(error: &FieldError, field: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        error.field().starts_with(field),
        "{error} names {:?}, not {field:?}",
        error.field()
    );
    prop_assert!(error.to_string().contains(error.field()), "{error}");
    Ok(())
}

fn rule_set() -> impl Strategy<Value = Rules> {
    prop::sample::select(common::RULE_SETS.to_vec()).prop_map(common::rules)
}

/// Text a field may hold: anything, or something close to a square, a code or a rule set.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        near_square(),
        near_code(),
        "(hidden-front|gunjin-shogi)(\\+[a-z0-9-]{1,14}){0,3}",
        Just(String::new()),
        "[ -~]{200,300}",
    ]
}

/// A square field: mostly a plausible name (so that the fields read after it are reached too).
fn square() -> impl Strategy<Value = String> {
    prop_oneof![4 => near_square(), 1 => text()]
}

/// A piece code field: mostly a plausible code.
fn code() -> impl Strategy<Value = String> {
    prop_oneof![4 => near_code(), 1 => text()]
}

/// A rule-set name field: mostly a real one.
fn rules_name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(common::RULE_SETS.to_vec()).prop_map(String::from),
        1 => text(),
    ]
}

/// An enum value: mostly a side, else a little past the known values, or anything.
fn enum_value() -> impl Strategy<Value = i32> {
    prop_oneof![4 => 1..3i32, 1 => -1..12i32, 1 => any::<i32>()]
}

/// A piece id or count: mostly a byte, or just past one, or anything.
fn id() -> impl Strategy<Value = u32> {
    prop_oneof![4 => 0..64u32, 1 => 0..300u32, 1 => any::<u32>()]
}

fn placement() -> impl Strategy<Value = pb::Placement> {
    (square(), code()).prop_map(|(square, piece)| pb::Placement { square, piece })
}

/// A square name, on the board or just off it, in either case.
fn near_square() -> impl Strategy<Value = String> {
    (0..9u8, 0..14u8, any::<bool>()).prop_map(|(column, row, lower)| {
        let column = char::from(if lower { b'a' } else { b'A' } + column);
        format!("{column}{row}")
    })
}

/// A piece code of either family, or one of neither.
fn near_code() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "9", "1", "B", "m", "F", "GEN", "ltg", "2LT", "FLG", "SPY", "TNK", "0", "13", "X",
    ])
    .prop_map(String::from)
}

/// A few arbitrary placements, or a whole board's worth (and more) of plausible ones.
fn placements() -> impl Strategy<Value = Vec<pb::Placement>> {
    prop_oneof![
        prop::collection::vec(placement(), 0..6),
        prop::collection::vec(
            (near_square(), near_code())
                .prop_map(|(square, piece)| pb::Placement { square, piece }),
            20..70
        ),
    ]
}

fn deployment() -> impl Strategy<Value = Option<pb::Deployment>> {
    prop::option::of(
        (enum_value(), placements())
            .prop_map(|(side, placements)| pb::Deployment { side, placements }),
    )
}

fn piece() -> impl Strategy<Value = pb::VisiblePiece> {
    (square(), enum_value(), id(), code()).prop_map(|(square, side, id, piece)| pb::VisiblePiece {
        square,
        side,
        id,
        piece,
    })
}

fn pieces() -> impl Strategy<Value = Vec<pb::VisiblePiece>> {
    prop::collection::vec(piece(), 0..4)
}

fn a_move() -> impl Strategy<Value = Option<pb::Move>> {
    prop::option::weighted(
        0.9,
        (square(), square()).prop_map(|(from, to)| pb::Move { from, to }),
    )
}

/// Any event body, field by field.
fn body() -> impl Strategy<Value = Option<pb::game_event::Event>> {
    use pb::game_event::Event as E;
    let side = || enum_value();
    // Mostly a body: an empty one is a single refusal, tried often enough at 5 %.
    prop::option::weighted(
        0.95,
        prop_oneof![
            (rules_name(), side()).prop_map(|(rules, first_mover)| E::Created(pb::GameCreated {
                rules,
                first_mover
            })),
            deployment()
                .prop_map(|deployment| E::DeploymentDrafted(pb::DeploymentDrafted { deployment })),
            (side(), deployment(), any::<bool>()).prop_map(|(side, deployment, by_deadline)| {
                E::DeploymentConfirmed(pb::DeploymentConfirmed {
                    side,
                    deployment,
                    by_deadline,
                })
            }),
            pieces().prop_map(|pieces| E::PlayStarted(pb::PlayStarted { pieces })),
            (
                side(),
                a_move(),
                id(),
                code(),
                prop::option::of((id(), code(), any::<bool>(), any::<bool>(), any::<bool>())),
                prop::collection::vec(
                    (side(), pieces()).prop_map(|(side, flags)| pb::FlagReveal { side, flags }),
                    0..3
                ),
            )
                .prop_map(|(side, r#move, piece_id, piece, combat, flag_reveals)| {
                    E::Moved(pb::Moved {
                        side,
                        r#move,
                        piece_id,
                        piece,
                        combat: combat.map(|(defender_id, defender_piece, a, d, f)| {
                            pb::CombatView {
                                defender_id,
                                defender_piece,
                                attacker_survives: a,
                                defender_survives: d,
                                flag_captured: f,
                            }
                        }),
                        flag_reveals,
                    })
                }),
            (side(), id()).prop_map(|(side, count)| E::TimedOut(pb::TimedOut { side, count })),
            side().prop_map(|side| E::DrawOffered(pb::DrawOffered { side })),
            side().prop_map(|side| E::DrawDeclined(pb::DrawDeclined { side })),
            side().prop_map(|side| E::DrawLapsed(pb::DrawLapsed { side })),
            side().prop_map(|side| E::Resigned(pb::Resigned { side })),
            side().prop_map(|side| E::SeatLost(pb::SeatLost { side })),
            (
                prop::option::of(
                    (enum_value(), enum_value())
                        .prop_map(|(winner, reason)| pb::Outcome { winner, reason })
                ),
                pieces()
            )
                .prop_map(|(outcome, pieces)| E::Ended(pb::GameEnded {
                    outcome,
                    pieces,
                    reveal: None
                })),
        ],
    )
}

/// One scalar field of a message, by its path (`event.moved.combat.defender_id`).
enum Leaf<'a> {
    Text(&'a mut String),
    Enum(&'a mut i32),
    Number(&'a mut u32),
}

/// Every text, enum and number field of an event, with its path.
fn leaves(event: &mut pb::GameEvent) -> Vec<(String, Leaf<'_>)> {
    use pb::game_event::Event as E;
    fn piece<'a>(out: &mut Vec<(String, Leaf<'a>)>, at: String, p: &'a mut pb::VisiblePiece) {
        out.push((format!("{at}.square"), Leaf::Text(&mut p.square)));
        out.push((format!("{at}.side"), Leaf::Enum(&mut p.side)));
        out.push((format!("{at}.id"), Leaf::Number(&mut p.id)));
        out.push((format!("{at}.piece"), Leaf::Text(&mut p.piece)));
    }
    fn pieces<'a>(out: &mut Vec<(String, Leaf<'a>)>, at: &str, ps: &'a mut [pb::VisiblePiece]) {
        for (i, p) in ps.iter_mut().enumerate() {
            piece(out, format!("{at}[{i}]"), p);
        }
    }
    fn deployment<'a>(out: &mut Vec<(String, Leaf<'a>)>, at: &str, d: &'a mut pb::Deployment) {
        out.push((format!("{at}.side"), Leaf::Enum(&mut d.side)));
        for (i, p) in d.placements.iter_mut().enumerate() {
            out.push((
                format!("{at}.placements[{i}].square"),
                Leaf::Text(&mut p.square),
            ));
            out.push((
                format!("{at}.placements[{i}].piece"),
                Leaf::Text(&mut p.piece),
            ));
        }
    }
    let mut out = Vec::new();
    fn side<'a>(name: &str, side: &'a mut i32) -> (String, Leaf<'a>) {
        (format!("event.{name}.side"), Leaf::Enum(side))
    }
    match event.event.as_mut() {
        None => {}
        Some(E::Created(e)) => {
            out.push(("event.created.rules".into(), Leaf::Text(&mut e.rules)));
            out.push((
                "event.created.first_mover".into(),
                Leaf::Enum(&mut e.first_mover),
            ));
        }
        Some(E::DeploymentDrafted(e)) => {
            if let Some(d) = e.deployment.as_mut() {
                deployment(&mut out, "event.deployment_drafted.deployment", d);
            }
        }
        Some(E::DeploymentConfirmed(e)) => {
            out.push(side("deployment_confirmed", &mut e.side));
            if let Some(d) = e.deployment.as_mut() {
                deployment(&mut out, "event.deployment_confirmed.deployment", d);
            }
        }
        Some(E::PlayStarted(e)) => pieces(&mut out, "event.play_started.pieces", &mut e.pieces),
        Some(E::Moved(e)) => {
            out.push(side("moved", &mut e.side));
            if let Some(mv) = e.r#move.as_mut() {
                out.push(("event.moved.move.from".into(), Leaf::Text(&mut mv.from)));
                out.push(("event.moved.move.to".into(), Leaf::Text(&mut mv.to)));
            }
            out.push(("event.moved.piece_id".into(), Leaf::Number(&mut e.piece_id)));
            out.push(("event.moved.piece".into(), Leaf::Text(&mut e.piece)));
            if let Some(c) = e.combat.as_mut() {
                out.push((
                    "event.moved.combat.defender_id".into(),
                    Leaf::Number(&mut c.defender_id),
                ));
                out.push((
                    "event.moved.combat.defender_piece".into(),
                    Leaf::Text(&mut c.defender_piece),
                ));
            }
            for (i, r) in e.flag_reveals.iter_mut().enumerate() {
                let at = format!("event.moved.flag_reveals[{i}]");
                out.push((format!("{at}.side"), Leaf::Enum(&mut r.side)));
                pieces(&mut out, &format!("{at}.flags"), &mut r.flags);
            }
        }
        Some(E::TimedOut(e)) => {
            out.push(side("timed_out", &mut e.side));
            out.push(("event.timed_out.count".into(), Leaf::Number(&mut e.count)));
        }
        Some(E::DrawOffered(e)) => out.push(side("draw_offered", &mut e.side)),
        Some(E::DrawDeclined(e)) => out.push(side("draw_declined", &mut e.side)),
        Some(E::DrawLapsed(e)) => out.push(side("draw_lapsed", &mut e.side)),
        Some(E::Resigned(e)) => out.push(side("resigned", &mut e.side)),
        Some(E::SeatLost(e)) => out.push(side("seat_lost", &mut e.side)),
        Some(E::Ended(e)) => {
            if let Some(o) = e.outcome.as_mut() {
                out.push((
                    "event.ended.outcome.winner".into(),
                    Leaf::Enum(&mut o.winner),
                ));
                out.push((
                    "event.ended.outcome.reason".into(),
                    Leaf::Enum(&mut o.reason),
                ));
            }
            pieces(&mut out, "event.ended.pieces", &mut e.pieces);
        }
    }
    out
}

/// Valid events of a few games of every rule set, as protos.
static EVENTS: LazyLock<Vec<(Rules, pb::GameEvent)>> = LazyLock::new(|| {
    common::RULE_SETS
        .iter()
        .flat_map(|name| {
            let rules = common::rules(name);
            common::random_game(rules, 7)
                .into_iter()
                .enumerate()
                .map(move |(i, event)| {
                    (
                        rules,
                        engine_event_to_proto(
                            &rules,
                            "g",
                            i as u64 + 1,
                            &event,
                            &Reveal::default(),
                        ),
                    )
                })
        })
        .collect()
});

/// An accepted event converts back to the same proto form and again to itself.
fn converts_back(rules: &Rules, event: &Event) -> Result<(), TestCaseError> {
    let again = engine_event_to_proto(rules, "g", 1, event, &Reveal::default());
    let back = engine_event_from_proto(rules, &again);
    prop_assert_eq!(back.as_ref(), Ok(event), "{:?}", again);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn squares(rules in rule_set(), name in text()) {
        match square_from_proto(&rules, "square_a", &name) {
            Ok(node) => prop_assert!(rules.topology().name(node).eq_ignore_ascii_case(name.trim())),
            Err(e) => names_field(&e, "square_a")?,
        }
    }

    #[test]
    fn moves(rules in rule_set(), mv in a_move()) {
        match move_from_proto(&rules, mv.as_ref()) {
            Ok(read) => {
                let again = move_to_proto(&rules, read);
                prop_assert_eq!(move_from_proto(&rules, Some(&again)), Ok(read));
            }
            Err(e) => names_field(&e, "move")?,
        }
    }

    #[test]
    fn deployments(rules in rule_set(), north in any::<bool>(), placements in placements()) {
        let side = if north { Side::North } else { Side::South };
        match deployment_from_proto(&rules, side, &placements) {
            Ok(read) => {
                prop_assert_eq!(read.placements.len(), placements.len());
                let again = deployment_to_proto(&rules, &read);
                prop_assert_eq!(deployment_from_proto(&rules, side, &again.placements), Ok(read));
            }
            Err(e) => names_field(&e, "placements")?,
        }
    }

    #[test]
    fn sides_and_viewers(value in enum_value()) {
        match side_from_proto("context.side", value) {
            Ok(side) => prop_assert_eq!(side_to_proto(side) as i32, value),
            Err(e) => names_field(&e, "context.side")?,
        }
        match viewer_from_proto("viewer", value) {
            Ok(viewer) => {
                prop_assert_eq!(viewer_to_proto(viewer) as i32, value);
                prop_assert!(matches!(viewer, Viewer::South | Viewer::North | Viewer::Spectator));
            }
            Err(e) => names_field(&e, "viewer")?,
        }
    }

    #[test]
    fn rule_set_names(name in text()) {
        match rules_from_proto("rules", &name) {
            Ok(rules) => prop_assert_eq!(rules_from_proto("rules", &rules.name()), Ok(rules)),
            Err(e) => names_field(&e, "rules")?,
        }
    }

    #[test]
    fn events_field_by_field(rules in rule_set(), seq in any::<u64>(), event in body()) {
        let proto = pb::GameEvent { game_id: "g".into(), seq, event };
        match engine_event_from_proto(&rules, &proto) {
            Ok(event) => converts_back(&rules, &event)?,
            Err(e) => names_field(&e, "event")?,
        }
    }

    #[test]
    fn events_with_one_field_changed(
        pick in any::<prop::sample::Index>(),
        leaf in any::<prop::sample::Index>(),
        text in text(),
        number in prop_oneof![id().prop_map(i64::from), any::<i32>().prop_map(i64::from)],
    ) {
        let (rules, event) = &EVENTS[pick.index(EVENTS.len())];
        let mut event = event.clone();
        let mut fields = leaves(&mut event);
        prop_assume!(!fields.is_empty());
        let (path, value) = fields.swap_remove(leaf.index(fields.len()));
        match value {
            Leaf::Text(field) => *field = text,
            Leaf::Enum(field) => *field = number as i32,
            Leaf::Number(field) => *field = number as u32,
        }
        drop(fields);
        match engine_event_from_proto(rules, &event) {
            Ok(read) => converts_back(rules, &read)?,
            // The changed field is at fault, or a field beside it that no longer agrees with it
            // (a confirmation's side and its deployment's).
            Err(e) => {
                let parent = path.rsplit_once('.').map_or("", |(parent, _)| parent);
                names_field(&e, parent)?;
            }
        }
    }
}

proptest! {
    // Most mangled messages no longer decode (an invalid tag or UTF-8), so many more cases, to
    // convert a few thousand that do; each is cheap.
    #![proptest_config(ProptestConfig::with_cases(20 * CASES))]

    #[test]
    fn events_from_mangled_bytes(
        pick in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..8u8), 1..4),
    ) {
        let (rules, event) = &EVENTS[pick.index(EVENTS.len())];
        let mut bytes = event.encode_to_vec();
        for (at, byte, how) in edits {
            let at = at.index(bytes.len() + 1);
            // Mostly overwrite a byte (the message often still decodes), sometimes insert one or
            // cut the message short.
            match how {
                0..=5 if at < bytes.len() => bytes[at] = byte,
                7 => bytes.truncate(at),
                _ => bytes.insert(at, byte),
            }
        }
        // Bytes that are no longer a message are prost's to refuse; the rest must convert or be
        // refused with the field named.
        if let Ok(proto) = pb::GameEvent::decode(bytes.as_slice()) {
            match engine_event_from_proto(rules, &proto) {
                Ok(event) => converts_back(rules, &event)?,
                Err(e) => names_field(&e, "event")?,
            }
        }
    }
}
