//! The `#[wasm_bindgen]` exports: JS values in and out through `serde-wasm-bindgen`, errors as
//! thrown JS `Error`s. Nothing else happens here, so the native tests of [`crate::api`] cover
//! the behaviour.

use crate::api;
use crate::json::{DeploymentJson, GameEventJson, GameViewJson, VisiblePieceJson};
use serde::Serialize;
use serde::de::DeserializeOwned;
use wasm_bindgen::prelude::*;

// The shapes of the answers, for the page's strict TypeScript (the generated `.d.ts` would say
// `any`). Inputs that are proto messages are typed `object`: they are the proto JSON as received.
#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
export type Side = "south" | "north";
export interface BoardNode {
  name: string; column: number; row: number; span: number; camp: boolean; hq: Side | null;
  rail: boolean; half: Side; deploy: boolean; gate: boolean; frontRow: boolean;
}
export interface BoardLink { a: string; b: string; rail: boolean; }
export interface BoardKind { code: string; count: number; moves: boolean; strength: number; }
export interface Board {
  rules: string; family: "junqi" | "gunjin"; columns: number; rows: number; piecesPerSide: number;
  nodes: BoardNode[]; links: BoardLink[]; kinds: BoardKind[];
}
export interface EngineMove { from: string; to: string; }
export interface Problem { reason: string; square?: string; code?: string; message: string; }
export interface DeploymentJson { side: string; placements: { square: string; piece: string }[]; }
export type SwapResult =
  | { ok: true; deployment: DeploymentJson }
  | { ok: false; problems: Problem[] };
export type ParsedMove = { ok: true; move: EngineMove } | { ok: false; message: string };
export interface PossibleKinds { id: number; codes: string[]; moved: boolean; alive: boolean; }
export interface VisiblePieceJson { square: string; side: string; id: number; piece: string; }
export interface CombatViewJson {
  defenderId: number; defenderPiece: string; attackerSurvives: boolean; defenderSurvives: boolean;
  flagCaptured: boolean;
}
export interface ReplayStep {
  seq: number; pieces: VisiblePieceJson[]; move?: EngineMove; combat?: CombatViewJson;
}
"#;

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    // `null` for absent optional values the API names (`hq: null`), plain objects for maps.
    let serializer = serde_wasm_bindgen::Serializer::new()
        .serialize_missing_as_null(true)
        .serialize_maps_as_objects(true);
    value
        .serialize(&serializer)
        .map_err(|e| JsError::new(&e.to_string()))
}

fn from_js<T: DeserializeOwned>(value: JsValue, what: &str) -> Result<T, JsError> {
    serde_wasm_bindgen::from_value(value).map_err(|e| JsError::new(&format!("{what}: {e}")))
}

fn thrown(e: api::EngineError) -> JsError {
    JsError::new(&e.0)
}

/// `topology(rules: string) -> Board`.
#[wasm_bindgen(js_name = topology, unchecked_return_type = "Board")]
pub fn topology(rules: &str) -> Result<JsValue, JsError> {
    to_js(&api::topology(rules).map_err(thrown)?)
}

/// `legalMoves(view: GameView) -> [{from, to}]`.
#[wasm_bindgen(js_name = legalMoves, unchecked_return_type = "EngineMove[]")]
pub fn legal_moves(
    #[wasm_bindgen(unchecked_param_type = "object")] view: JsValue,
) -> Result<JsValue, JsError> {
    let view: GameViewJson = from_js(view, "view")?;
    to_js(&api::legal_moves(&view).map_err(thrown)?)
}

/// `applyEvent(view: GameView, event: GameEvent) -> GameView`: the view after the event, or a
/// thrown `Error` when the event does not follow (read the view again).
#[wasm_bindgen(js_name = applyEvent, unchecked_return_type = "object")]
pub fn apply_event(
    #[wasm_bindgen(unchecked_param_type = "object")] view: JsValue,
    #[wasm_bindgen(unchecked_param_type = "object")] event: JsValue,
) -> Result<JsValue, JsError> {
    let view: GameViewJson = from_js(view, "view")?;
    let event: GameEventJson = from_js(event, "event")?;
    to_js(&api::apply_event(&view, &event).map_err(thrown)?)
}

/// `validateDeployment(rules: string, deployment: Deployment) -> Problem[]`.
#[wasm_bindgen(js_name = validateDeployment, unchecked_return_type = "Problem[]")]
pub fn validate_deployment(
    rules: &str,
    #[wasm_bindgen(unchecked_param_type = "object")] deployment: JsValue,
) -> Result<JsValue, JsError> {
    let deployment: DeploymentJson = from_js(deployment, "deployment")?;
    to_js(&api::validate_deployment(rules, &deployment).map_err(thrown)?)
}

/// `checkSwap(rules, deployment, a, b) -> {ok: true, deployment} | {ok: false, problems}`.
#[wasm_bindgen(js_name = checkSwap, unchecked_return_type = "SwapResult")]
pub fn check_swap(
    rules: &str,
    #[wasm_bindgen(unchecked_param_type = "object")] deployment: JsValue,
    a: &str,
    b: &str,
) -> Result<JsValue, JsError> {
    let deployment: DeploymentJson = from_js(deployment, "deployment")?;
    to_js(&api::check_swap(rules, &deployment, a, b).map_err(thrown)?)
}

/// `parseMove(rules, text) -> {ok: true, move: {from, to}} | {ok: false, message}`.
#[wasm_bindgen(js_name = parseMove, unchecked_return_type = "ParsedMove")]
pub fn parse_move(rules: &str, text: &str) -> Result<JsValue, JsError> {
    to_js(&api::parse_move(rules, text).map_err(thrown)?)
}

/// `replayBoards(rules, startingPieces: VisiblePiece[], events: GameEvent[])`.
#[wasm_bindgen(js_name = replayBoards, unchecked_return_type = "ReplayStep[]")]
pub fn replay_boards(
    rules: &str,
    #[wasm_bindgen(unchecked_param_type = "object[]")] starting_pieces: JsValue,
    #[wasm_bindgen(unchecked_param_type = "object[]")] events: JsValue,
) -> Result<JsValue, JsError> {
    let starting: Vec<VisiblePieceJson> = from_js(starting_pieces, "startingPieces")?;
    let events: Vec<GameEventJson> = from_js(events, "events")?;
    to_js(&api::replay_boards(rules, &starting, &events).map_err(thrown)?)
}

/// `agreementDigest(seed: number, games: number) -> string`.
#[wasm_bindgen(js_name = agreementDigest)]
pub fn agreement_digest(seed: f64, games: u32) -> String {
    crate::agreement_digest(seed as u64, games)
}

/// `benchLegalMoves(seed, positions, rounds) -> number`: builds `positions` seeded positions and
/// generates their legal moves `rounds` times, returning the number of moves generated; timed
/// from JS by the `bench-legal-moves` binary (which subtracts a `rounds = 0` call).
#[wasm_bindgen(js_name = benchLegalMoves)]
pub fn bench_legal_moves(seed: f64, positions: u32, rounds: u32) -> f64 {
    let positions = crate::bench_positions(seed as u64, positions as usize);
    crate::bench_legal_moves(&positions, rounds) as f64
}

/// `class Inference`: the computer player's inference, fed one player's events.
#[wasm_bindgen(js_name = Inference)]
pub struct Inference(api::Inference);

#[wasm_bindgen(js_class = Inference)]
impl Inference {
    /// `new Inference(rules: string, side: "south" | "north")`.
    #[wasm_bindgen(constructor)]
    pub fn new(rules: &str, side: &str) -> Result<Inference, JsError> {
        Ok(Inference(api::Inference::new(rules, side).map_err(thrown)?))
    }

    /// `observe(event: GameEvent)`: learns from one event as the player received it.
    pub fn observe(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "object")] event: JsValue,
    ) -> Result<(), JsError> {
        let event: GameEventJson = from_js(event, "event")?;
        self.0.observe(&event).map_err(thrown)
    }

    /// `possible() -> [{id, codes, moved, alive}]`.
    #[wasm_bindgen(unchecked_return_type = "PossibleKinds[]")]
    pub fn possible(&self) -> Result<JsValue, JsError> {
        to_js(&self.0.possible())
    }
}
