/**
 * The one door to the rules engine: loads the wasm bindings built by scripts/build-wasm into
 * ./pkg/ (crates/web-engine, `--target web`) and exposes them as the contract's `Engine`.
 * Everything else in the page imports the engine from here, so a test can hand in a fake.
 */
import * as pkg from "./pkg/hidden_front_web_engine.js";
import type { Board, Engine, HalfName, InferenceLike } from "./types.js";

/** The contract's types, for the page to import from the one engine module. */
export type * from "./types.js";

interface WasmModule {
  default: (input?: { module_or_path: string | URL }) => Promise<unknown>;
  topology(rules: string): Board;
  legalMoves: Engine["legalMoves"];
  applyEvent: Engine["applyEvent"];
  validateDeployment: Engine["validateDeployment"];
  checkSwap: Engine["checkSwap"];
  parseMove: Engine["parseMove"];
  replayBoards: Engine["replayBoards"];
  Inference: new (rules: string, side: HalfName) => InferenceLike;
}

// Compile-time checks that the bindings' own declarations agree with the contract's types where
// they are the same shapes (proto JSON inputs are declared `object` by the bindings).
const checkTopology: (rules: string) => Board = pkg.topology;
const checkParse: Engine["parseMove"] = pkg.parseMove;
const checkLegal: Engine["legalMoves"] = pkg.legalMoves;
const checkPossible: () => ReturnType<InferenceLike["possible"]> = () => new pkg.Inference("hidden-front", "south").possible();
void checkTopology;
void checkParse;
void checkLegal;
void checkPossible;

let loading: Promise<Engine> | null = null;

/** Loads the wasm engine once; later calls share the same instance. */
export function loadEngine(): Promise<Engine> {
  if (!loading) {
    loading = (async () => {
      const mod = pkg as unknown as WasmModule;
      const wasmUrl = new URL("./pkg/hidden_front_web_engine_bg.wasm", import.meta.url);
      await mod.default({ module_or_path: wasmUrl });
      return wrap(mod);
    })();
  }
  return loading;
}

function wrap(mod: WasmModule): Engine {
  const boards = new Map<string, Board>();
  return {
    topology(rules) {
      let board = boards.get(rules);
      if (!board) {
        board = mod.topology(rules);
        boards.set(rules, board);
      }
      return board;
    },
    legalMoves: (view) => mod.legalMoves(view),
    applyEvent: (view, event) => mod.applyEvent(view, event),
    validateDeployment: (rules, d) => mod.validateDeployment(rules, d),
    checkSwap: (rules, d, a, b) => mod.checkSwap(rules, d, a, b),
    parseMove: (rules, text) => mod.parseMove(rules, text),
    newInference: (rules, side) => new mod.Inference(rules, side),
    replayBoards: (rules, start, events) => mod.replayBoards(rules, start, events),
  };
}
