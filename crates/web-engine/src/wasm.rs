//! The `#[wasm_bindgen]` exports: JS values in and out through `serde-wasm-bindgen`, errors as
//! thrown JS `Error`s. Nothing else happens here, so the native tests of [`crate::api`] cover
//! the behaviour.

use crate::api;
use crate::json::{DeploymentJson, GameEventJson, GameViewJson, VisiblePieceJson};
use serde::Serialize;
use serde::de::DeserializeOwned;
use wasm_bindgen::prelude::*;

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
#[wasm_bindgen(js_name = topology)]
pub fn topology(rules: &str) -> Result<JsValue, JsError> {
    to_js(&api::topology(rules).map_err(thrown)?)
}

/// `legalMoves(view: GameView) -> [{from, to}]`.
#[wasm_bindgen(js_name = legalMoves)]
pub fn legal_moves(view: JsValue) -> Result<JsValue, JsError> {
    let view: GameViewJson = from_js(view, "view")?;
    to_js(&api::legal_moves(&view).map_err(thrown)?)
}

/// `validateDeployment(rules: string, deployment: Deployment) -> Problem[]`.
#[wasm_bindgen(js_name = validateDeployment)]
pub fn validate_deployment(rules: &str, deployment: JsValue) -> Result<JsValue, JsError> {
    let deployment: DeploymentJson = from_js(deployment, "deployment")?;
    to_js(&api::validate_deployment(rules, &deployment).map_err(thrown)?)
}

/// `checkSwap(rules, deployment, a, b) -> {ok: true, deployment} | {ok: false, problems}`.
#[wasm_bindgen(js_name = checkSwap)]
pub fn check_swap(rules: &str, deployment: JsValue, a: &str, b: &str) -> Result<JsValue, JsError> {
    let deployment: DeploymentJson = from_js(deployment, "deployment")?;
    to_js(&api::check_swap(rules, &deployment, a, b).map_err(thrown)?)
}

/// `parseMove(rules, text) -> {ok: true, move: {from, to}} | {ok: false, message}`.
#[wasm_bindgen(js_name = parseMove)]
pub fn parse_move(rules: &str, text: &str) -> Result<JsValue, JsError> {
    to_js(&api::parse_move(rules, text).map_err(thrown)?)
}

/// `replayBoards(rules, startingPieces: VisiblePiece[], events: GameEvent[])`.
#[wasm_bindgen(js_name = replayBoards)]
pub fn replay_boards(
    rules: &str,
    starting_pieces: JsValue,
    events: JsValue,
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

/// `benchLegalMoves(seed, positions, rounds) -> number`: generates the legal moves of
/// `positions` seeded positions `rounds` times (positions are built before the timed part is
/// worth measuring; see `tests/agreement.mjs`), returning the number of moves generated.
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
    pub fn observe(&mut self, event: JsValue) -> Result<(), JsError> {
        let event: GameEventJson = from_js(event, "event")?;
        self.0.observe(&event).map_err(thrown)
    }

    /// `possible() -> [{id, codes, moved, alive}]`.
    pub fn possible(&self) -> Result<JsValue, JsError> {
        to_js(&self.0.possible())
    }
}
