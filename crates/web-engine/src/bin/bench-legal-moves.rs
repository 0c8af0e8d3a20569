//! Times the legal-move generator natively and in the WebAssembly build (under Node) on the same
//! seeded positions of both families, and prints both: the figure behind "is the browser's
//! engine fast enough". Run it optimised, after `scripts/build-wasm`:
//!
//! ```sh
//! cargo run --release -p hidden-front-web-engine --bin bench-legal-moves [positions] [rounds]
//! ```

use std::process::Command;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let positions: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let rounds: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let seed = 9u64;

    let list = hidden_front_web_engine::bench_positions(seed, positions);
    hidden_front_web_engine::bench_legal_moves(&list, rounds); // warm up
    let start = Instant::now();
    let moves = hidden_front_web_engine::bench_legal_moves(&list, rounds);
    let native = start.elapsed().as_nanos() as f64 / (positions as f64 * f64::from(rounds));
    println!(
        "native{}: {native:.0} ns per position ({positions} positions x {rounds}, {moves} moves)",
        if cfg!(debug_assertions) {
            " (DEBUG build: add --release)"
        } else {
            ""
        }
    );

    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let package = format!("{root}/target/web-engine-node/hidden_front_web_engine.js");
    if !std::path::Path::new(&package).exists() {
        println!("wasm: not measured, {package} is missing (run scripts/build-wasm)");
        return;
    }
    let script = format!(
        "const e = require({package:?});
         const t = (r) => {{ const s = process.hrtime.bigint(); const m = e.benchLegalMoves({seed}, {positions}, r);
                             return [m, Number(process.hrtime.bigint() - s)]; }};
         t({rounds}); const [, setup] = t(0); const [m, ns] = t({rounds});
         console.log(m, (ns - setup) / ({positions} * {rounds}), process.version);"
    );
    let out = match Command::new("node").arg("-e").arg(&script).output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).to_string(),
        Ok(out) => {
            println!(
                "wasm: node failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        Err(e) => {
            println!("wasm: not measured, node cannot be run: {e}");
            return;
        }
    };
    let fields: Vec<&str> = out.split_whitespace().collect();
    let wasm_moves: f64 = fields.first().and_then(|f| f.parse().ok()).unwrap_or(-1.0);
    let wasm: f64 = fields
        .get(1)
        .and_then(|f| f.parse().ok())
        .unwrap_or(f64::NAN);
    assert_eq!(wasm_moves, moves as f64, "wasm generated other moves");
    println!(
        "wasm (node {}): {wasm:.0} ns per position, {:.2}x native",
        fields.get(2).unwrap_or(&"?"),
        wasm / native
    );
}
