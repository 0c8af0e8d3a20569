//! The Hidden Front engine for the browser: the rules engine (`hidden-front-rules`) and the
//! computer player's opponent inference (`hidden-front-inference`) behind a small JS API, so the
//! page shows legal moves, checks deployments and infers opponent kinds with the server's own
//! code instead of a TypeScript copy that could drift.
//!
//! Every call is a plain Rust function in [`api`] (and [`digest`]), tested natively; the
//! `#[wasm_bindgen]` functions in [`wasm`] only convert JS values with `serde-wasm-bindgen` and
//! turn an [`api::EngineError`] into a thrown JS `Error`. Inputs that are proto messages are the
//! canonical proto3 JSON the WebSocket delivers, read by the small structs of [`json`] (not the
//! generated crate, which pulls tonic); the native tests prove they read the real generated
//! JSON. Built to WebAssembly by `scripts/build-wasm`; `tests/agreement.rs` runs the built module
//! under Node and compares it with the native functions.
//!
//! JS API (names as exported): `topology(rules)`, `legalMoves(view)`, `applyEvent(view, event)`,
//! `validateDeployment(rules, deployment)`, `checkSwap(rules, deployment, a, b)`,
//! `parseMove(rules, text)`, `new Inference(rules, side)` with `observe(event)` and
//! `possible()`, `replayBoards(rules, startingPieces, events)`, `agreementDigest(seed, games)`,
//! and, for measurements, `benchLegalMoves(seed, positions, rounds)`.

pub mod api;
pub mod digest;
pub mod json;
pub mod wasm;

pub use api::EngineError;
pub use digest::agreement_digest;

use hidden_front_rules::{Command, Game, GameRng, Phase, Position, Rules, Side};

/// Positions for the legal-move benchmark: every position reached in seeded random games of
/// both families (the same on every target), until `count` are collected.
pub fn bench_positions(seed: u64, count: usize) -> Vec<Position> {
    let mut out = Vec::with_capacity(count);
    let names = ["hidden-front", "gunjin-shogi"];
    let mut g = 0u64;
    while out.len() < count {
        let rules = Rules::parse(names[g as usize % 2]).expect("bench rule sets parse");
        let mut rng = GameRng::from_seed(seed ^ g.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let (mut game, _) = Game::create(rules, Side::South, &mut rng);
        for side in Side::BOTH {
            game.handle(&Command::Confirm { side }, &mut rng)
                .expect("a random draft confirms");
        }
        while game.phase() == Phase::Play && out.len() < count {
            out.push(*game.position());
            let legal = game.position().legal_moves();
            let mv = legal
                .nth(rng.below(legal.len() as u32) as usize)
                .expect("a side to move has a move");
            let side = game.to_move();
            game.handle(&Command::Move { side, mv }, &mut rng)
                .expect("a legal move is accepted");
        }
        g += 1;
    }
    out
}

/// Generates the legal moves of every position `rounds` times; returns the number of moves
/// generated (a checksum, and what keeps the work from being optimised away). For timing the
/// generator in WebAssembly against native code on the same positions.
pub fn bench_legal_moves(positions: &[Position], rounds: u32) -> u64 {
    let mut total = 0u64;
    let mut list = hidden_front_rules::MoveList::default();
    for _ in 0..rounds {
        for p in positions {
            p.legal_moves_into(&mut list);
            total += list.len() as u64;
        }
    }
    total
}
