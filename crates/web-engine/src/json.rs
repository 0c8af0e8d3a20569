//! The proto JSON the WebSocket delivers (canonical proto3 JSON of `proto/hiddenfront/v1`), read
//! and written with small serde structs of only the messages the engine needs (the view whole,
//! since `applyEvent` writes it back).
//!
//! Why not the generated `hidden-front-proto` types: they pull tonic and prost, far too much for
//! a browser module. The native tests prove these structs read the real generated JSON (pbjson)
//! to the same engine facts. Proto3 JSON leaves out default values, so every field has a default;
//! enums arrive as names (`"SIDE_SOUTH"`) or numbers, 64-bit integers as strings or numbers;
//! unknown fields are ignored, and the original (snake_case) field names are accepted too.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// A proto enum value: its name or its number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnumValue {
    /// The value's name, e.g. `SIDE_SOUTH`.
    Name(String),
    /// The value's number.
    Number(i64),
}

impl Default for EnumValue {
    fn default() -> Self {
        EnumValue::Number(0)
    }
}

impl EnumValue {
    /// The number of the value, given the enum's names in number order.
    pub fn number(&self, names: &[&str]) -> Option<i64> {
        match self {
            EnumValue::Number(n) => Some(*n),
            EnumValue::Name(name) => names.iter().position(|n| n == name).map(|i| i as i64),
        }
    }
}

impl<'de> Deserialize<'de> for EnumValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = EnumValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an enum name or number")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<EnumValue, E> {
                Ok(EnumValue::Name(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<EnumValue, E> {
                Ok(EnumValue::Number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<EnumValue, E> {
                Ok(EnumValue::Number(v as i64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<EnumValue, E> {
                if v.fract() == 0.0 {
                    Ok(EnumValue::Number(v as i64))
                } else {
                    Err(E::custom(format!("{v} is not an enum number")))
                }
            }
            fn visit_unit<E: de::Error>(self) -> Result<EnumValue, E> {
                Ok(EnumValue::Number(0))
            }
        }
        d.deserialize_any(V)
    }
}

/// A proto `uint64`/`uint32`: a number, or a decimal string (proto3 JSON writes 64-bit integers
/// as strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Uint(pub u64);

impl<'de> Deserialize<'de> for Uint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Uint;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an unsigned integer or a decimal string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Uint, E> {
                v.parse()
                    .map(Uint)
                    .map_err(|_| E::custom(format!("{v:?} is not an unsigned integer")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Uint, E> {
                u64::try_from(v)
                    .map(Uint)
                    .map_err(|_| E::custom(format!("{v} is negative")))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Uint, E> {
                Ok(Uint(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Uint, E> {
                if v >= 0.0 && v.fract() == 0.0 && v < 9.007_199_254_740_992e15 {
                    Ok(Uint(v as u64))
                } else {
                    Err(E::custom(format!("{v} is not an unsigned integer")))
                }
            }
            fn visit_unit<E: de::Error>(self) -> Result<Uint, E> {
                Ok(Uint(0))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Uint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

/// Names of `hiddenfront.v1.Side` in number order.
pub const SIDE_NAMES: [&str; 3] = ["SIDE_UNSPECIFIED", "SIDE_SOUTH", "SIDE_NORTH"];
/// Names of `hiddenfront.v1.Viewer` in number order.
pub const VIEWER_NAMES: [&str; 4] = [
    "VIEWER_UNSPECIFIED",
    "VIEWER_SOUTH",
    "VIEWER_NORTH",
    "VIEWER_SPECTATOR",
];
/// Names of `hiddenfront.v1.Phase` in number order.
pub const PHASE_NAMES: [&str; 4] = [
    "PHASE_UNSPECIFIED",
    "PHASE_DEPLOYMENT",
    "PHASE_PLAY",
    "PHASE_ENDED",
];

/// Names of `hiddenfront.v1.EndReason` in number order.
pub const END_REASON_NAMES: [&str; 11] = [
    "END_REASON_UNSPECIFIED",
    "END_REASON_FLAG_CAPTURED",
    "END_REASON_NO_LEGAL_MOVES",
    "END_REASON_NO_COMBAT_LIMIT",
    "END_REASON_AGREED_DRAW",
    "END_REASON_RESIGNED",
    "END_REASON_TIMEOUTS",
    "END_REASON_DISCONNECTED",
    "END_REASON_SEAT_LOST",
    "END_REASON_HQ_ENTERED",
    "END_REASON_ABORTED",
];

/// `hiddenfront.v1.Move`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MoveJson {
    /// The square it leaves.
    pub from: String,
    /// The square it goes to (or attacks).
    pub to: String,
}

/// `hiddenfront.v1.VisiblePiece`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct VisiblePieceJson {
    /// Its square.
    pub square: String,
    /// Its side (`SIDE_SOUTH` / `SIDE_NORTH`).
    #[serde(serialize_with = "side_name")]
    pub side: EnumValue,
    /// Its public id.
    pub id: u32,
    /// Its code, empty where unknown.
    pub piece: String,
}

/// `hiddenfront.v1.CombatView`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CombatViewJson {
    /// The attacked piece's id.
    #[serde(alias = "defender_id")]
    pub defender_id: u32,
    /// The attacked piece's code, empty where unknown.
    #[serde(alias = "defender_piece")]
    pub defender_piece: String,
    /// Whether the attacker survived.
    #[serde(alias = "attacker_survives")]
    pub attacker_survives: bool,
    /// Whether the defender survived.
    #[serde(alias = "defender_survives")]
    pub defender_survives: bool,
    /// Whether the fight captured the flag.
    #[serde(alias = "flag_captured")]
    pub flag_captured: bool,
}

/// `hiddenfront.v1.Placement`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlacementJson {
    /// The square.
    pub square: String,
    /// The piece code.
    pub piece: String,
}

/// `hiddenfront.v1.Deployment`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DeploymentJson {
    /// Whose pieces.
    #[serde(serialize_with = "side_name")]
    pub side: EnumValue,
    /// Where each piece stands.
    pub placements: Vec<PlacementJson>,
}

/// `hiddenfront.v1.Outcome`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct OutcomeJson {
    /// The winner; `SIDE_UNSPECIFIED` when nobody won.
    #[serde(serialize_with = "side_name", skip_serializing_if = "is_zero_enum")]
    pub winner: EnumValue,
    /// Why the game ended.
    #[serde(
        serialize_with = "end_reason_name",
        skip_serializing_if = "is_zero_enum"
    )]
    pub reason: EnumValue,
}

/// `hiddenfront.v1.EndReveal`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EndRevealJson {
    /// The confirmed deployments, south's first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deployments: Vec<DeploymentJson>,
    /// Every piece of the game where it stood when play started.
    #[serde(alias = "starting_pieces", skip_serializing_if = "Vec::is_empty")]
    pub starting_pieces: Vec<VisiblePieceJson>,
}

/// `hiddenfront.v1.TimeControl`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TimeControlJson {
    /// `online`, `relaxed` or `custom`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Seconds for the deployment.
    #[serde(alias = "deployment_seconds", skip_serializing_if = "is_zero")]
    pub deployment_seconds: u32,
    /// Seconds per move.
    #[serde(alias = "move_seconds", skip_serializing_if = "is_zero")]
    pub move_seconds: u32,
    /// Seconds a player may be away.
    #[serde(alias = "reconnect_seconds", skip_serializing_if = "is_zero")]
    pub reconnect_seconds: u32,
}

/// `hiddenfront.v1.FlagReveal`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default)]
pub struct FlagRevealJson {
    /// Whose flag.
    pub side: EnumValue,
    /// The flags shown.
    pub flags: Vec<VisiblePieceJson>,
}

/// `hiddenfront.v1.Moved`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct MovedJson {
    /// Who moved.
    pub side: EnumValue,
    /// The move.
    #[serde(rename = "move")]
    pub mv: Option<MoveJson>,
    /// The mover's id.
    #[serde(alias = "piece_id")]
    pub piece_id: u32,
    /// The mover's code where known.
    pub piece: String,
    /// The fight, if any.
    pub combat: Option<CombatViewJson>,
    /// Flags shown by the move.
    #[serde(alias = "flag_reveals")]
    pub flag_reveals: Vec<FlagRevealJson>,
}

/// `hiddenfront.v1.PlayStarted`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default)]
pub struct PlayStartedJson {
    /// The board as the receiver sees it.
    pub pieces: Vec<VisiblePieceJson>,
}

/// `hiddenfront.v1.GameCreated`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CreatedJson {
    /// The rule-set name.
    pub rules: String,
    /// Who moves first.
    #[serde(alias = "first_mover")]
    pub first_mover: EnumValue,
}

/// `hiddenfront.v1.DeploymentDrafted`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default)]
pub struct DeploymentDraftedJson {
    /// The receiver's draft.
    pub deployment: Option<DeploymentJson>,
}

/// `hiddenfront.v1.DeploymentConfirmed`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DeploymentConfirmedJson {
    /// Who confirmed.
    pub side: EnumValue,
    /// The deployment, to its owner.
    pub deployment: Option<DeploymentJson>,
    /// Whether the server confirmed it at the deadline.
    #[serde(alias = "by_deadline")]
    pub by_deadline: bool,
}

/// `hiddenfront.v1.GameEnded`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default)]
pub struct GameEndedJson {
    /// The result.
    pub outcome: Option<OutcomeJson>,
    /// Every piece left, with its code.
    pub pieces: Vec<VisiblePieceJson>,
    /// The whole game revealed.
    pub reveal: Option<EndRevealJson>,
}

/// An event body that carries only a side (`TimedOut`, `DrawOffered`, `Resigned`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default)]
pub struct SideEventJson {
    /// Who.
    pub side: EnumValue,
    /// `TimedOut`: the side's timeouts so far.
    pub count: u32,
}

/// `hiddenfront.v1.GameEvent`: the envelope and every body.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GameEventJson {
    /// Position in the game's log.
    pub seq: Uint,
    /// The game exists.
    pub created: Option<CreatedJson>,
    /// The receiver's draft changed.
    #[serde(alias = "deployment_drafted")]
    pub deployment_drafted: Option<DeploymentDraftedJson>,
    /// A side confirmed its deployment.
    #[serde(alias = "deployment_confirmed")]
    pub deployment_confirmed: Option<DeploymentConfirmedJson>,
    /// Play started.
    #[serde(alias = "play_started")]
    pub play_started: Option<PlayStartedJson>,
    /// A move.
    pub moved: Option<MovedJson>,
    /// A lost turn.
    #[serde(alias = "timed_out")]
    pub timed_out: Option<SideEventJson>,
    /// A draw offer.
    #[serde(alias = "draw_offered")]
    pub draw_offered: Option<SideEventJson>,
    /// A declined draw offer.
    #[serde(alias = "draw_declined")]
    pub draw_declined: Option<SideEventJson>,
    /// A lapsed draw offer.
    #[serde(alias = "draw_lapsed")]
    pub draw_lapsed: Option<SideEventJson>,
    /// A resignation.
    pub resigned: Option<SideEventJson>,
    /// A lost seat.
    #[serde(alias = "seat_lost")]
    pub seat_lost: Option<SideEventJson>,
    /// The end.
    pub ended: Option<GameEndedJson>,
}

/// `hiddenfront.v1.GameView`: read whole (the legal-move generator needs a few fields,
/// `applyEvent` all of them) and written as the gateway writes it (proto3 JSON: defaults left
/// out, enums by name, 64-bit integers as decimal strings).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GameViewJson {
    /// The game's id.
    #[serde(alias = "game_id", skip_serializing_if = "String::is_empty")]
    pub game_id: String,
    /// The sequence number of the game's last event.
    #[serde(serialize_with = "decimal", skip_serializing_if = "is_zero_uint")]
    pub version: Uint,
    /// Who is looking.
    #[serde(serialize_with = "viewer_name", skip_serializing_if = "is_zero_enum")]
    pub viewer: EnumValue,
    /// The rule-set name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub rules: String,
    /// The game's time limits.
    #[serde(alias = "time_control", skip_serializing_if = "Option::is_none")]
    pub time_control: Option<TimeControlJson>,
    /// The phase.
    #[serde(serialize_with = "phase_name", skip_serializing_if = "is_zero_enum")]
    pub phase: EnumValue,
    /// Who moves first.
    #[serde(
        alias = "first_mover",
        serialize_with = "side_name",
        skip_serializing_if = "is_zero_enum"
    )]
    pub first_mover: EnumValue,
    /// Whose turn it is.
    #[serde(
        alias = "to_move",
        serialize_with = "side_name",
        skip_serializing_if = "is_zero_enum"
    )]
    pub to_move: EnumValue,
    /// Plies played.
    #[serde(skip_serializing_if = "is_zero")]
    pub plies: u32,
    /// Plies since the last fight.
    #[serde(alias = "plies_without_combat", skip_serializing_if = "is_zero")]
    pub plies_without_combat: u32,
    /// South's timeouts.
    #[serde(alias = "south_timeouts", skip_serializing_if = "is_zero")]
    pub south_timeouts: u32,
    /// North's timeouts.
    #[serde(alias = "north_timeouts", skip_serializing_if = "is_zero")]
    pub north_timeouts: u32,
    /// Who has a draw offer pending.
    #[serde(
        alias = "draw_offer",
        serialize_with = "side_name",
        skip_serializing_if = "is_zero_enum"
    )]
    pub draw_offer: EnumValue,
    /// Whether south confirmed its deployment.
    #[serde(alias = "south_confirmed", skip_serializing_if = "is_false")]
    pub south_confirmed: bool,
    /// Whether north confirmed its deployment.
    #[serde(alias = "north_confirmed", skip_serializing_if = "is_false")]
    pub north_confirmed: bool,
    /// The viewer's own deployment, during the deployment phase.
    #[serde(alias = "own_deployment", skip_serializing_if = "Option::is_none")]
    pub own_deployment: Option<DeploymentJson>,
    /// The board.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pieces: Vec<VisiblePieceJson>,
    /// The result, once ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<OutcomeJson>,
    /// The south seat's player.
    #[serde(alias = "south_player", skip_serializing_if = "String::is_empty")]
    pub south_player: String,
    /// The north seat's player.
    #[serde(alias = "north_player", skip_serializing_if = "String::is_empty")]
    pub north_player: String,
    /// Whether south is connected.
    #[serde(alias = "south_connected", skip_serializing_if = "is_false")]
    pub south_connected: bool,
    /// Whether north is connected.
    #[serde(alias = "north_connected", skip_serializing_if = "is_false")]
    pub north_connected: bool,
    /// The running deadline (Unix milliseconds).
    #[serde(
        alias = "turn_deadline_unix_millis",
        serialize_with = "decimal",
        skip_serializing_if = "is_zero_uint"
    )]
    pub turn_deadline_unix_millis: Uint,
    /// When south loses for being away (Unix milliseconds).
    #[serde(
        alias = "south_away_deadline_unix_millis",
        serialize_with = "decimal",
        skip_serializing_if = "is_zero_uint"
    )]
    pub south_away_deadline_unix_millis: Uint,
    /// When north loses for being away (Unix milliseconds).
    #[serde(
        alias = "north_away_deadline_unix_millis",
        serialize_with = "decimal",
        skip_serializing_if = "is_zero_uint"
    )]
    pub north_away_deadline_unix_millis: Uint,
    /// What the end reveals, once ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reveal: Option<EndRevealJson>,
}

/// Writes an enum value by its name (`names` in number order); a value this build does not know
/// as the unspecified one.
fn enum_name<S: Serializer>(value: &EnumValue, names: &[&str], s: S) -> Result<S::Ok, S::Error> {
    let name = match value.number(names) {
        Some(n) if (0..names.len() as i64).contains(&n) => names[n as usize],
        _ => names[0],
    };
    s.serialize_str(name)
}

fn side_name<S: Serializer>(side: &EnumValue, s: S) -> Result<S::Ok, S::Error> {
    enum_name(side, &SIDE_NAMES, s)
}

fn viewer_name<S: Serializer>(viewer: &EnumValue, s: S) -> Result<S::Ok, S::Error> {
    enum_name(viewer, &VIEWER_NAMES, s)
}

fn phase_name<S: Serializer>(phase: &EnumValue, s: S) -> Result<S::Ok, S::Error> {
    enum_name(phase, &PHASE_NAMES, s)
}

fn end_reason_name<S: Serializer>(reason: &EnumValue, s: S) -> Result<S::Ok, S::Error> {
    enum_name(reason, &END_REASON_NAMES, s)
}

/// Proto3 JSON writes 64-bit integers as decimal strings.
fn decimal<S: Serializer>(value: &Uint, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&value.0.to_string())
}

fn is_zero_enum(value: &EnumValue) -> bool {
    matches!(value, EnumValue::Number(0))
        || matches!(value, EnumValue::Name(n) if n.ends_with("_UNSPECIFIED"))
}

fn is_zero_uint(value: &Uint) -> bool {
    value.0 == 0
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

fn is_false(value: &bool) -> bool {
    !*value
}
