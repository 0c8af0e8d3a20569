//! The JSON wire format of the rules CLI: positions, moves, deployments and the answers, with
//! the conversions to and from the engine's types.
//!
//! Reading is done by walking a [`serde_json::Value`] rather than by deriving `Deserialize`, so
//! every refusal names the exact field that was wrong (`pieces[3].at: "F13" is not a node of the
//! board`). Unknown fields are ignored; known fields with wrong values are refused.
//!
//! Formats (node names `A1`..`E12`, piece codes `9`..`1`, `B`, `M`, `F`, sides `south` /
//! `north`; for `gunjin-shogi` squares `a1`..`h8` with the HQs `d1+e1` / `d8+e8` and codes
//! `GEN`..`FLG`; all read case-insensitively, written as shown):
//! - position: `{"variant": "hidden-front", "to_move": "south", "plies_without_combat": 0,
//!   "pieces": [{"at": "B1", "side": "south", "piece": "F"}, ...]}`. `variant` may be absent or
//!   null (the default rule set), so may `plies_without_combat` (0).
//! - move: `["A6", "A7"]`.
//! - deployment: `{"variant": "hidden-front", "side": "south", "pieces": [{"at": "A1",
//!   "piece": "M"}, ...]}` (`variant` optional as above).

use hidden_front_rules::{
    Combat, Deployment, Move, Node, Outcome, Piece, PieceId, PieceKind, Position, Rules,
    RulesError, Side, Topology,
};
use serde::Serialize;
use serde_json::{Map, Value};
use thiserror::Error;

/// Why a request line of the rules CLI could not be turned into engine values. Each message
/// starts with the path of the offending field, so a client can find its mistake without guessing.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RequestLineError {
    /// The line is not JSON at all.
    #[error("malformed JSON: {0}")]
    Json(String),
    /// The line is not UTF-8 text.
    #[error("the line is not valid UTF-8 text")]
    NotUtf8,
    /// A required field is absent.
    #[error("{field}: missing (required)")]
    Missing {
        /// Path of the absent field.
        field: String,
    },
    /// A field holds the wrong kind of JSON value.
    #[error("{field}: expected {expected}, found {found}")]
    WrongType {
        /// Path of the field.
        field: String,
        /// What the format asks for.
        expected: &'static str,
        /// A short rendering of what was given.
        found: String,
    },
    /// A node name that the board does not have.
    #[error("{field}: {name:?} is not a node of the board")]
    UnknownNode {
        /// Path of the field.
        field: String,
        /// The name given.
        name: String,
    },
    /// A piece code that the rule set does not have.
    #[error("{field}: {code:?} is not a piece code (expected one of {codes})")]
    UnknownPiece {
        /// Path of the field.
        field: String,
        /// The code given.
        code: String,
        /// The codes the rule set knows, space-separated.
        codes: String,
    },
    /// A side other than `south` or `north`.
    #[error("{field}: {side:?} is not a side (expected \"south\" or \"north\")")]
    UnknownSide {
        /// Path of the field.
        field: String,
        /// The text given.
        side: String,
    },
    /// A no-combat counter outside what the engine stores.
    #[error("{field}: {value} is not an integer in 0..=65535")]
    Plies {
        /// Path of the field.
        field: String,
        /// The value given, as JSON.
        value: String,
    },
    /// A rule-set name that [`Rules::parse`] refused.
    #[error("{field}: {source}")]
    Variant {
        /// Path of the field.
        field: String,
        /// The engine's reason.
        source: RulesError,
    },
    /// Two pieces of a position on one node.
    #[error("{field}: {node} already holds {first}")]
    Duplicate {
        /// Path of the second piece's `at`.
        field: String,
        /// The node, uppercase.
        node: String,
        /// Path of the piece that was there first.
        first: String,
    },
    /// A move that is not a two-element array.
    #[error(
        "{field}: expected a two-element array of node names like [\"A6\", \"A7\"], found {found}"
    )]
    MoveShape {
        /// Path of the field.
        field: String,
        /// A short rendering of what was given.
        found: String,
    },
}

/// A position as written on the wire (the output side; input is read by [`position_from_json`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WirePosition {
    /// Canonical rule-set name ([`Rules::name`]).
    pub variant: String,
    /// `south` or `north`.
    pub to_move: &'static str,
    /// Plies since the last fight.
    pub plies_without_combat: u16,
    /// Every piece, lowest node first (A1, B1, ..., E12).
    pub pieces: Vec<WirePiece>,
}

/// One piece of a [`WirePosition`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WirePiece {
    /// Node name, uppercase.
    pub at: &'static str,
    /// `south` or `north`.
    pub side: &'static str,
    /// Piece code (`9`, `B`, ...).
    pub piece: &'static str,
}

/// A deployment as written on the wire: the same shape `validate-deployment` reads, so the output
/// of `random-deployment` can be fed straight back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WireDeployment {
    /// Canonical rule-set name.
    pub variant: String,
    /// Whose pieces these are.
    pub side: &'static str,
    /// Node and code of every piece, lowest node first.
    pub pieces: Vec<WirePlacement>,
}

/// One piece of a [`WireDeployment`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WirePlacement {
    /// Node name, uppercase.
    pub at: &'static str,
    /// Piece code.
    pub piece: &'static str,
}

/// A move on the wire: `[from, to]`.
pub type WireMove = [&'static str; 2];

/// What a fight did, as the spec's engine interface reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WireCombat {
    /// Whether the attacker is still on the board.
    pub attacker_survives: bool,
    /// Whether the defender is still on the board.
    pub defender_survives: bool,
}

/// How the game ended: winner (`null` for a draw) and reason (`flag_captured`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WireOutcome {
    /// `south`, `north` or `null`.
    pub winner: Option<&'static str>,
    /// The engine's snake_case reason name.
    pub reason: &'static str,
}

/// Answer of `rules legal-moves`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LegalMovesAnswer {
    /// Every legal move of the side to move.
    pub moves: Vec<WireMove>,
}

/// Answer of `rules apply`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApplyAnswer {
    /// The position after the move, in the input format.
    pub position: WirePosition,
    /// The fight, or `null` for a quiet move.
    pub combat: Option<WireCombat>,
    /// The end of the game, or `null` if it goes on.
    pub outcome: Option<WireOutcome>,
}

/// Answer of `rules validate-deployment`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValidateAnswer {
    /// Whether the deployment is legal.
    pub valid: bool,
    /// Every problem found (the engine's texts); omitted when valid.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// The answer to a line that could not be served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorAnswer {
    /// What was wrong with the line.
    pub error: String,
}

/// Parses one input line as JSON.
pub fn parse_line(line: &str) -> Result<Value, RequestLineError> {
    serde_json::from_str(line).map_err(|e| RequestLineError::Json(e.to_string()))
}

/// Reads a position. `path` prefixes field names in errors (`""` at the top level,
/// `"position"` inside an apply request).
pub fn position_from_json(value: &Value, path: &str) -> Result<Position, RequestLineError> {
    let map = object(value, path)?;
    let rules = variant(map, path)?;
    let topo = rules.topology();
    let to_move = side(required(map, path, "to_move")?, &join(path, "to_move"))?;
    let plies = match optional(map, "plies_without_combat") {
        None => 0,
        Some(v) => plies(v, &join(path, "plies_without_combat"))?,
    };
    let pieces_path = join(path, "pieces");
    let pieces = array(required(map, path, "pieces")?, &pieces_path)?;
    let mut position = Position::empty(rules, to_move);
    position.set_plies_without_combat(plies);
    let mut first_at: [Option<usize>; 64] = [None; 64];
    for (i, piece) in pieces.iter().enumerate() {
        let piece_path = format!("{pieces_path}[{i}]");
        let map = object(piece, &piece_path)?;
        let at_path = join(&piece_path, "at");
        let at = node(required(map, &piece_path, "at")?, &at_path, topo)?;
        let owner = side(
            required(map, &piece_path, "side")?,
            &join(&piece_path, "side"),
        )?;
        let kind = kind(
            required(map, &piece_path, "piece")?,
            &join(&piece_path, "piece"),
            &rules,
        )?;
        if let Some(first) = first_at[at.index()] {
            return Err(RequestLineError::Duplicate {
                field: at_path,
                node: topo.name(at).to_string(),
                first: format!("{pieces_path}[{first}]"),
            });
        }
        first_at[at.index()] = Some(i);
        // Without duplicates there are at most 60 pieces, so the index fits; ids are not part of
        // the wire format anyway.
        let id = PieceId(u8::try_from(i).unwrap_or(u8::MAX));
        position.put(
            at,
            Piece {
                side: owner,
                kind,
                id,
            },
        );
    }
    Ok(position)
}

/// Writes a position in the format [`position_from_json`] reads.
pub fn position_to_json(position: &Position) -> WirePosition {
    let rules = position.rules();
    let topo = position.topology();
    WirePosition {
        variant: rules.name(),
        to_move: position.to_move().name(),
        plies_without_combat: position.plies_without_combat(),
        pieces: position
            .pieces()
            .map(|(node, piece)| WirePiece {
                at: topo.name(node),
                side: piece.side.name(),
                piece: rules.code(piece.kind),
            })
            .collect(),
    }
}

/// Reads a move `["A6", "A7"]` on `topo`; `field` names it in errors.
pub fn move_from_json(
    value: &Value,
    field: &str,
    topo: &Topology,
) -> Result<Move, RequestLineError> {
    let shape = || RequestLineError::MoveShape {
        field: field.to_string(),
        found: describe(value),
    };
    let [from, to] = value.as_array().ok_or_else(shape)?.as_slice() else {
        return Err(shape());
    };
    Ok(Move {
        from: node(from, &format!("{field}[0]"), topo)?,
        to: node(to, &format!("{field}[1]"), topo)?,
    })
}

/// Reads an apply request `{"position": P, "move": [from, to]}`.
pub fn apply_request_from_json(value: &Value) -> Result<(Position, Move), RequestLineError> {
    let map = object(value, "")?;
    let position = position_from_json(required(map, "", "position")?, "position")?;
    let mv = move_from_json(required(map, "", "move")?, "move", position.topology())?;
    Ok((position, mv))
}

/// Writes a move as `[from, to]`.
pub fn move_to_json(mv: Move, topo: &'static Topology) -> WireMove {
    [topo.name(mv.from), topo.name(mv.to)]
}

/// Reads a deployment and its rule set. Unknown nodes and codes are refused here (they cannot be
/// represented); every rule problem (duplicates, camps, counts, ...) is left to
/// [`Deployment::validate`].
pub fn deployment_from_json(
    value: &Value,
    path: &str,
) -> Result<(Rules, Deployment), RequestLineError> {
    let map = object(value, path)?;
    let rules = variant(map, path)?;
    let topo = rules.topology();
    let owner = side(required(map, path, "side")?, &join(path, "side"))?;
    let pieces_path = join(path, "pieces");
    let pieces = array(required(map, path, "pieces")?, &pieces_path)?;
    let mut placements = Vec::with_capacity(pieces.len());
    for (i, piece) in pieces.iter().enumerate() {
        let piece_path = format!("{pieces_path}[{i}]");
        let map = object(piece, &piece_path)?;
        let at = node(
            required(map, &piece_path, "at")?,
            &join(&piece_path, "at"),
            topo,
        )?;
        let kind = kind(
            required(map, &piece_path, "piece")?,
            &join(&piece_path, "piece"),
            &rules,
        )?;
        placements.push((at, kind));
    }
    Ok((rules, Deployment::new(owner, placements)))
}

/// Writes a deployment in the format [`deployment_from_json`] reads.
pub fn deployment_to_json(rules: &Rules, deployment: &Deployment) -> WireDeployment {
    let topo = rules.topology();
    WireDeployment {
        variant: rules.name(),
        side: deployment.side.name(),
        pieces: deployment
            .placements
            .iter()
            .filter(|(node, _)| node.0 < topo.node_count)
            .map(|&(node, kind)| WirePlacement {
                at: topo.name(node),
                piece: rules.code(kind),
            })
            .collect(),
    }
}

impl From<Combat> for WireCombat {
    fn from(combat: Combat) -> WireCombat {
        WireCombat {
            attacker_survives: combat.attacker_survives,
            defender_survives: combat.defender_survives,
        }
    }
}

impl From<Outcome> for WireOutcome {
    fn from(outcome: Outcome) -> WireOutcome {
        WireOutcome {
            winner: outcome.winner.map(Side::name),
            reason: outcome.reason.name(),
        }
    }
}

/// `parent.name`, or `name` at the top level.
fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

/// A short rendering of a JSON value for error messages.
fn describe(value: &Value) -> String {
    const LIMIT: usize = 40;
    let text = value.to_string();
    match text.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, RequestLineError> {
    value
        .as_object()
        .ok_or_else(|| RequestLineError::WrongType {
            field: if path.is_empty() {
                "request".to_string()
            } else {
                path.to_string()
            },
            expected: "a JSON object",
            found: describe(value),
        })
}

fn required<'a>(
    map: &'a Map<String, Value>,
    path: &str,
    name: &str,
) -> Result<&'a Value, RequestLineError> {
    map.get(name).ok_or_else(|| RequestLineError::Missing {
        field: join(path, name),
    })
}

/// An optional field; `null` counts as absent.
fn optional<'a>(map: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    map.get(name).filter(|v| !v.is_null())
}

fn string<'a>(value: &'a Value, field: &str) -> Result<&'a str, RequestLineError> {
    value.as_str().ok_or_else(|| RequestLineError::WrongType {
        field: field.to_string(),
        expected: "a string",
        found: describe(value),
    })
}

fn array<'a>(value: &'a Value, field: &str) -> Result<&'a Vec<Value>, RequestLineError> {
    value.as_array().ok_or_else(|| RequestLineError::WrongType {
        field: field.to_string(),
        expected: "an array",
        found: describe(value),
    })
}

fn variant(map: &Map<String, Value>, path: &str) -> Result<Rules, RequestLineError> {
    let Some(value) = optional(map, "variant") else {
        return Ok(Rules::default());
    };
    let field = join(path, "variant");
    Rules::parse(string(value, &field)?)
        .map_err(|source| RequestLineError::Variant { field, source })
}

fn side(value: &Value, field: &str) -> Result<Side, RequestLineError> {
    let text = string(value, field)?;
    Side::parse(&text.trim().to_ascii_lowercase()).ok_or_else(|| RequestLineError::UnknownSide {
        field: field.to_string(),
        side: text.to_string(),
    })
}

fn plies(value: &Value, field: &str) -> Result<u16, RequestLineError> {
    if !value.is_number() {
        return Err(RequestLineError::WrongType {
            field: field.to_string(),
            expected: "an integer in 0..=65535",
            found: describe(value),
        });
    }
    value
        .as_u64()
        .and_then(|n| u16::try_from(n).ok())
        .ok_or_else(|| RequestLineError::Plies {
            field: field.to_string(),
            value: describe(value),
        })
}

fn node(value: &Value, field: &str, topo: &Topology) -> Result<Node, RequestLineError> {
    let name = string(value, field)?;
    topo.node(name)
        .ok_or_else(|| RequestLineError::UnknownNode {
            field: field.to_string(),
            name: name.to_string(),
        })
}

fn kind(value: &Value, field: &str, rules: &Rules) -> Result<PieceKind, RequestLineError> {
    let code = string(value, field)?;
    rules
        .parse_kind(code)
        .ok_or_else(|| RequestLineError::UnknownPiece {
            field: field.to_string(),
            code: code.to_string(),
            codes: rules
                .kinds()
                .iter()
                .map(|(_, code, _)| *code)
                .collect::<Vec<_>>()
                .join(" "),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn position_error(value: Value) -> String {
        match position_from_json(&value, "") {
            Ok(p) => panic!("accepted {value}: {p:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn errors_name_the_field() {
        let good = json!({"to_move": "south", "pieces": [
            {"at": "B1", "side": "south", "piece": "F"},
            {"at": "b12", "side": "north", "piece": "f"},
        ]});
        let position = position_from_json(&good, "").unwrap();
        let wire = position_to_json(&position);
        assert_eq!(wire.variant, "hidden-front");
        assert_eq!(wire.plies_without_combat, 0);
        assert_eq!(wire.pieces[1].at, "B12");
        assert_eq!(wire.pieces[1].piece, "F");

        let mut bad = good.clone();
        bad["pieces"][1]["at"] = json!("F13");
        assert_eq!(
            position_error(bad),
            r#"pieces[1].at: "F13" is not a node of the board"#
        );
        let mut bad = good.clone();
        bad["pieces"][1]["at"] = json!("B1");
        assert_eq!(
            position_error(bad),
            "pieces[1].at: B1 already holds pieces[0]"
        );
        let mut bad = good.clone();
        bad["pieces"][0]["piece"] = json!("X");
        assert_eq!(
            position_error(bad),
            r#"pieces[0].piece: "X" is not a piece code (expected one of 9 8 7 6 5 4 3 2 1 B M F)"#
        );
        let mut bad = good.clone();
        bad["pieces"][0]["side"] = json!("east");
        assert_eq!(
            position_error(bad),
            r#"pieces[0].side: "east" is not a side (expected "south" or "north")"#
        );
        let mut bad = good.clone();
        bad["plies_without_combat"] = json!(65536);
        assert_eq!(
            position_error(bad),
            "plies_without_combat: 65536 is not an integer in 0..=65535"
        );
        let mut bad = good.clone();
        bad["plies_without_combat"] = json!("3");
        assert_eq!(
            position_error(bad),
            r#"plies_without_combat: expected an integer in 0..=65535, found "3""#
        );
        let mut bad = good.clone();
        bad.as_object_mut().unwrap().remove("to_move");
        assert_eq!(position_error(bad), "to_move: missing (required)");
        assert_eq!(
            position_error(json!([1, 2])),
            "request: expected a JSON object, found [1,2]"
        );
        let mut bad = good;
        bad["variant"] = json!("chess");
        assert!(
            position_error(bad).starts_with(r#"variant: unknown variant "chess""#),
            "variant error names the field"
        );
    }

    #[test]
    fn moves_must_be_two_node_names() {
        let topo = Rules::default().topology();
        let mv = move_from_json(&json!(["a6", "A7"]), "move", topo).unwrap();
        assert_eq!(move_to_json(mv, topo), ["A6", "A7"]);
        for (value, message) in [
            (
                json!(["A6"]),
                r#"move: expected a two-element array of node names like ["A6", "A7"], found ["A6"]"#,
            ),
            (
                json!("A6-A7"),
                r#"move: expected a two-element array of node names like ["A6", "A7"], found "A6-A7""#,
            ),
            (json!(["A6", 7]), "move[1]: expected a string, found 7"),
            (
                json!(["Z6", "A7"]),
                r#"move[0]: "Z6" is not a node of the board"#,
            ),
        ] {
            assert_eq!(
                move_from_json(&value, "move", topo)
                    .unwrap_err()
                    .to_string(),
                message
            );
        }
    }
}
