// Runs the WebAssembly build of hidden-front-web-engine under Node for tests/agreement.rs.
//
// Usage: node agreement.mjs <package dir> <request.json>
// The request names what to compute; the answer is one JSON object on stdout, compared by the
// Rust test with the same functions run natively:
//   digests:    [{seed, games}]            -> agreementDigest(seed, games) each
//   views:      [GameView proto JSON]      -> legalMoves(view) each
//   inferences: [{rules, side, events}]    -> new Inference(rules, side), observe(e) each, possible()
//   topologies: [rules]                    -> topology(rules) each
//   replays:    [{rules, startingPieces, events}] -> replayBoards(...) each
//   follows:    [{view, events}]           -> applyEvent folded over the events, every view
//   bench:      {seed, positions, rounds}  -> benchLegalMoves timed (building the positions alone
//                                             timed too, and subtracted)
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";

const [pkgDir, requestPath] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const engine = require(path.resolve(pkgDir, "hidden_front_web_engine.js"));
const request = JSON.parse(readFileSync(requestPath, "utf8"));

const answer = {};
answer.digests = (request.digests ?? []).map(({ seed, games }) => engine.agreementDigest(seed, games));
answer.legal = (request.views ?? []).map((view) => engine.legalMoves(view));
answer.possible = (request.inferences ?? []).map(({ rules, side, events }) => {
  const inference = new engine.Inference(rules, side);
  for (const event of events) inference.observe(event);
  const possible = inference.possible();
  inference.free();
  return possible;
});
answer.topologies = (request.topologies ?? []).map((rules) => engine.topology(rules));
answer.replays = (request.replays ?? []).map(({ rules, startingPieces, events }) =>
  engine.replayBoards(rules, startingPieces, events),
);
answer.follows = (request.follows ?? []).map(({ view, events }) => {
  const steps = [];
  for (const event of events) {
    view = engine.applyEvent(view, event);
    steps.push(view);
  }
  return steps;
});
answer.errors = [];
for (const call of [
  () => engine.topology("chess"),
  () => engine.legalMoves({ viewer: "VIEWER_SOUTH", rules: "hidden-front", phase: "PHASE_PLAY", pieces: [{ square: "Z9", side: "SIDE_SOUTH", id: 1, piece: "9" }] }),
  () => new engine.Inference("hidden-front", "east"),
  () =>
    engine.applyEvent(
      { viewer: "VIEWER_SOUTH", rules: "hidden-front", phase: "PHASE_DEPLOYMENT", firstMover: "SIDE_SOUTH", version: "3" },
      { seq: "4", moved: { side: "SIDE_SOUTH", move: { from: "A1", to: "A2" } } },
    ),
]) {
  try {
    call();
    answer.errors.push(null);
  } catch (e) {
    answer.errors.push(e instanceof Error ? e.message : `not an Error: ${e}`);
  }
}
if (request.bench) {
  const { seed, positions, rounds } = request.bench;
  const time = (r) => {
    const start = process.hrtime.bigint();
    const moves = engine.benchLegalMoves(seed, positions, r);
    return { moves, ns: Number(process.hrtime.bigint() - start) };
  };
  time(rounds); // warm up (JIT-compiles the module's hot paths)
  const setup = time(0);
  const full = time(rounds);
  answer.bench = {
    moves: full.moves,
    nsPerPosition: (full.ns - setup.ns) / (positions * rounds),
  };
}
process.stdout.write(JSON.stringify(answer));
