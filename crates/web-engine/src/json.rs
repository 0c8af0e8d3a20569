//! The proto JSON the WebSocket delivers (canonical proto3 JSON of `proto/hiddenfront/v1`), read
//! and written with small serde structs of only the fields the engine needs.
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

/// An event body that carries only a side (`TimedOut`, `DrawOffered`, `Resigned`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default)]
pub struct SideEventJson {
    /// Who.
    pub side: EnumValue,
    /// `TimedOut`: the side's timeouts so far.
    pub count: u32,
}

/// `hiddenfront.v1.GameEvent`: the envelope and the bodies the engine uses; the others are
/// recognised by name and otherwise ignored.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GameEventJson {
    /// Position in the game's log.
    pub seq: Uint,
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
    /// The end (its body is not read).
    pub ended: Option<de::IgnoredAny>,
}

/// `hiddenfront.v1.GameView`: the fields the legal-move generator needs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GameViewJson {
    /// Who is looking.
    pub viewer: EnumValue,
    /// The rule-set name.
    pub rules: String,
    /// The phase.
    pub phase: EnumValue,
    /// Whose turn it is.
    #[serde(alias = "to_move")]
    pub to_move: EnumValue,
    /// Plies since the last fight.
    #[serde(alias = "plies_without_combat")]
    pub plies_without_combat: u32,
    /// The board.
    pub pieces: Vec<VisiblePieceJson>,
}

fn side_name<S: Serializer>(side: &EnumValue, s: S) -> Result<S::Ok, S::Error> {
    let name = match side.number(&SIDE_NAMES) {
        Some(n) if (0..3).contains(&n) => SIDE_NAMES[n as usize],
        _ => SIDE_NAMES[0],
    };
    s.serialize_str(name)
}
