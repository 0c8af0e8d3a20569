// The secrecy scan of the browser tests, on hand-made messages and frames: it must find every kind
// of leak it claims to find, must not flag what the rules allow, and must fail rather than pass
// when there is nothing it can read, or the browser tests prove nothing.

import { test } from "node:test";
import assert from "node:assert/strict";
import { create, toBinary } from "@bufbuild/protobuf";
import { leaks } from "./harness.mjs";
import { generated, readServerFrame } from "./proto.mjs";

const { ConnectResponseSchema, ServerMessageSchema } = generated.client;
const { Side } = generated.game;

const view = (phase, pieces) => ({ answer: { requestId: "1", getGame: { game: { phase, pieces } } } });
const north9 = { square: "A7", side: "SIDE_NORTH", id: 3, piece: "9" };

test("an opponent code before the end is found, in a view, an event, an action's answer or a fight", () => {
  assert.equal(leaks([view("PHASE_PLAY", [north9])], "south").length, 1);
  assert.equal(leaks([{ event: { playStarted: { pieces: [north9] } } }], "south").length, 1);
  assert.equal(leaks([{ answer: { requestId: "2", action: { version: "7", events: [{ playStarted: { pieces: [north9] } }] } } }], "south").length, 1);
  const attack = { event: { moved: { side: "SIDE_SOUTH", combat: { defenderId: 3, defenderPiece: "9" } } } };
  assert.equal(leaks([attack], "south").length, 1, "my attack may not name the defender");
  const drafted = { event: { deploymentConfirmed: { side: "SIDE_NORTH", deployment: { side: "SIDE_NORTH", placements: [{ square: "A7", piece: "9" }] } } } };
  assert.ok(leaks([drafted], "south").length >= 1, "the opponent's deployment");
  assert.equal(leaks([{ event: { playStarted: { pieces: [{ ...north9, side: "SIDE_SOUTH" }] } } }], "spectator").length, 1);
});

test("what the rules show is not a leak: own pieces, a revealed flag, anything after the end", () => {
  const own = { event: { playStarted: { pieces: [{ ...north9, side: "SIDE_SOUTH" }, { square: "A7", side: "SIDE_NORTH", id: 4 }] } } };
  assert.deepEqual(leaks([own], "south"), []);
  const flag = { event: { moved: { side: "SIDE_SOUTH", flagReveals: [{ side: "SIDE_NORTH", flags: [{ ...north9, piece: "F" }] }] } } };
  assert.deepEqual(leaks([flag], "south"), []);
  assert.equal(leaks([{ event: { moved: { side: "SIDE_SOUTH", flagReveals: [{ side: "SIDE_NORTH", flags: [north9] }] } } }], "south").length, 1, "a 'flag' that is no flag");
  assert.deepEqual(leaks([view("PHASE_ENDED", [north9]), view("PHASE_PLAY", [north9])], "south"), [], "an ended view overtook the end event");
  assert.deepEqual(leaks([{ event: { ended: {} } }, view("PHASE_PLAY", [north9])], "south"), []);
  const endingAnswer = { answer: { requestId: "3", action: { version: "9", events: [{ resigned: { side: "SIDE_SOUTH" } }, { ended: {} }] } } };
  assert.deepEqual(leaks([endingAnswer, view("PHASE_PLAY", [north9])], "south"), [], "an action's answer that ends the game");
});

test("nothing to search, or a message that could not be read, fails the scan", () => {
  assert.throws(() => leaks([], "south"), /nothing to search/);
  assert.throws(() => leaks(undefined, "south"), /nothing to search/);
  const findings = leaks([{ event: { ended: {} } }, { unreadable: "premature EOF" }], "south");
  assert.equal(findings.length, 1, "even after the end");
  assert.match(findings[0], /could not be read/);
});

test("a binary frame is searched through the generated types, every byte of it", () => {
  const frame = (item) =>
    toBinary(ConnectResponseSchema, create(ConnectResponseSchema, { messages: [create(ServerMessageSchema, { item })] }));
  const leaked = frame({
    case: "event",
    value: { gameId: "g", seq: 7n, event: { case: "playStarted", value: { pieces: [{ square: "A7", side: Side.NORTH, id: 3, piece: "9" }] } } },
  });
  assert.equal(leaks(readServerFrame(leaked), "south").length, 1, "the opponent's kind in a decoded frame");
  assert.deepEqual(leaks(readServerFrame(leaked), "north"), [], "its own kind, for north");
  // A field the types do not know could hide anything: the frame is not read.
  assert.throws(() => readServerFrame(new Uint8Array([...leaked, 0x7a, 0x01, 0x39])), /does not know/);
  // Bytes that are no ConnectResponse, and an empty one, are not read either.
  assert.throws(() => readServerFrame(new Uint8Array([0x0a, 0x09, 0x1a])));
  assert.throws(() => readServerFrame(new Uint8Array([])), /no message/);
});
