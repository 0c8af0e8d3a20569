// The secrecy scan of the browser tests, on hand-made frames: it must find every kind of leak it
// claims to find, and must not flag what the rules allow, or the browser tests prove nothing.

import { test } from "node:test";
import assert from "node:assert/strict";
import { leaks } from "./harness.mjs";

const view = (phase, pieces) => ({ type: "result", id: 1, response: { game: { phase, pieces } } });
const north9 = { square: "A7", side: "SIDE_NORTH", id: 3, piece: "9" };

test("an opponent code before the end is found, in a view, an event or a fight", () => {
  assert.equal(leaks([view("PHASE_PLAY", [north9])], "south").length, 1);
  assert.equal(leaks([{ type: "event", event: { playStarted: { pieces: [north9] } } }], "south").length, 1);
  const attack = { type: "event", event: { moved: { side: "SIDE_SOUTH", combat: { defenderId: 3, defenderPiece: "9" } } } };
  assert.equal(leaks([attack], "south").length, 1, "my attack may not name the defender");
  const drafted = { type: "event", event: { deploymentConfirmed: { side: "SIDE_NORTH", deployment: { side: "SIDE_NORTH", placements: [{ square: "A7", piece: "9" }] } } } };
  assert.ok(leaks([drafted], "south").length >= 1, "the opponent's deployment");
  assert.equal(leaks([{ type: "event", event: { playStarted: { pieces: [{ ...north9, side: "SIDE_SOUTH" }] } } }], "spectator").length, 1);
});

test("what the rules show is not a leak: own pieces, a revealed flag, anything after the end", () => {
  const own = { type: "event", event: { playStarted: { pieces: [{ ...north9, side: "SIDE_SOUTH" }, { square: "A7", side: "SIDE_NORTH", id: 4 }] } } };
  assert.deepEqual(leaks([own], "south"), []);
  const flag = { type: "event", event: { moved: { side: "SIDE_SOUTH", flagReveals: [{ side: "SIDE_NORTH", flags: [{ ...north9, piece: "F" }] }] } } };
  assert.deepEqual(leaks([flag], "south"), []);
  assert.equal(leaks([{ type: "event", event: { moved: { side: "SIDE_SOUTH", flagReveals: [{ side: "SIDE_NORTH", flags: [north9] }] } } }], "south").length, 1, "a 'flag' that is no flag");
  assert.deepEqual(leaks([view("PHASE_ENDED", [north9]), view("PHASE_PLAY", [north9])], "south"), [], "an ended view overtook the end event");
  assert.deepEqual(leaks([{ type: "event", event: { ended: {} } }, view("PHASE_PLAY", [north9])], "south"), []);
});
