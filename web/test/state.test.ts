import { describe, expect, it } from "vitest";
import type { GameEventJson, GameViewJson } from "../src/gen/hiddenfront/v1/game_pb.js";
import { GameLog, capturedPieces, gameRecord, lastMove,
  revealRecord,
  revealedKinds, outcomeFor, turnOf } from "../src/state/game.js";
import { estimateOffset, formatSeconds, secondsLeft } from "../src/state/clock.js";
import { EventStore, Marks, MemoryKV } from "../src/state/storage.js";
import { backoffDelay } from "../src/api/ws.js";

const ev = (seq: number, body: Partial<GameEventJson>): GameEventJson => ({ gameId: "g", seq: String(seq), ...body });

describe("event log", () => {
  it("applies each seq once, in order, and resumes after the last one", () => {
    const log = new GameLog();
    expect(log.nextSeq()).toBe(1);
    expect(log.add(ev(1, { created: { rules: "hidden-front" } }))).toBe(true);
    expect(log.add(ev(2, { deploymentDrafted: {} }))).toBe(true);
    // seq 3 is the opponent's draft: skipped by the server, so seqs jump
    expect(log.add(ev(4, { deploymentConfirmed: { side: "SIDE_SOUTH" } }))).toBe(true);
    expect(log.nextSeq()).toBe(5);
    // a resume hint may repeat the last event; a stale duplicate is ignored too
    expect(log.add(ev(4, { deploymentConfirmed: { side: "SIDE_SOUTH" } }))).toBe(false);
    expect(log.add(ev(2, { deploymentDrafted: {} }))).toBe(false);
    expect(log.events.map((e) => e.seq)).toEqual(["1", "2", "4"]);
  });

  it("restores from storage and dedups what the resumed stream sends again", () => {
    const kv = new MemoryKV();
    const store = new EventStore(kv);
    const first = new GameLog();
    for (let i = 1; i <= 5; i++) first.add(ev(i, { drawOffered: { side: "SIDE_SOUTH" } }));
    store.save("g", false, first.events);
    const again = new GameLog(store.load("g", false));
    expect(again.nextSeq()).toBe(6);
    expect(again.add(ev(5, {}))).toBe(false);
    expect(again.add(ev(6, { drawDeclined: { side: "SIDE_NORTH" } }))).toBe(true);
    // the watch and play logs of one game are apart
    expect(store.load("g", true)).toEqual([]);
  });

  it("derives the record, captured pieces and last move from the events", () => {
    const events = [
      ev(7, { playStarted: { pieces: [] } }),
      ev(8, { moved: { side: "SIDE_SOUTH", move: { from: "A6", to: "A7" }, pieceId: 46, piece: "4", combat: { defenderId: 2, defenderSurvives: true } } }),
      ev(9, { timedOut: { side: "SIDE_NORTH", count: 1 } }),
      ev(10, { moved: { side: "SIDE_SOUTH", move: { from: "B6", to: "B5" }, pieceId: 40, piece: "3" } }),
      ev(11, { moved: { side: "SIDE_NORTH", move: { from: "C7", to: "C6" }, pieceId: 3, combat: { defenderId: 41, defenderPiece: "2", attackerSurvives: true } } }),
    ];
    const rec = gameRecord(events);
    expect(rec.map((r) => r.type)).toEqual(["move", "note", "move", "move"]);
    const first = rec[0];
    expect(first?.type === "move" && first.combat).toEqual({ attackerSurvives: false, defenderSurvives: true, flagCaptured: false, defenderId: 2 });
    expect(rec[3]?.type === "move" && rec[3].ply).toBe(4);
    expect(capturedPieces(events)).toEqual([
      { side: "south", id: 46, piece: "4" },
      { side: "south", id: 41, piece: "2" },
    ]);
    expect(lastMove(events)).toEqual({ from: "C7", to: "C6" });
  });

  it("names every mover and defender in the record after the end, from the reveal, and nothing before it", () => {
    const events = [
      ev(8, { moved: { side: "SIDE_SOUTH", move: { from: "A6", to: "A7" }, pieceId: 46, piece: "4", combat: { defenderId: 2, defenderSurvives: true } } }),
      ev(9, { moved: { side: "SIDE_NORTH", move: { from: "C7", to: "C6" }, pieceId: 3, combat: { defenderId: 41, defenderPiece: "2", attackerSurvives: true } } }),
    ];
    const playing: GameViewJson = { viewer: "VIEWER_SOUTH", phase: "PHASE_PLAY", reveal: { startingPieces: [{ id: 3, piece: "9" }] } };
    expect(revealedKinds(playing).size).toBe(0);
    const before = revealRecord(gameRecord(events), revealedKinds(playing));
    expect(before.map((e) => e.type === "move" && [e.piece, e.combat?.defenderPiece])).toEqual([["4", undefined], [undefined, "2"]]);
    const ended: GameViewJson = {
      viewer: "VIEWER_SOUTH", phase: "PHASE_ENDED",
      reveal: { startingPieces: [{ id: 46, piece: "4" }, { id: 2, piece: "7" }, { id: 3, piece: "9" }, { id: 41, piece: "2" }] },
    };
    const after = revealRecord(gameRecord(events), revealedKinds(ended));
    expect(after.map((e) => e.type === "move" && [e.piece, e.combat?.defenderPiece])).toEqual([["4", "7"], ["9", "2"]]);
  });

  it("says whose turn it is and the result from the viewer's seat", () => {
    const v: GameViewJson = { viewer: "VIEWER_NORTH", phase: "PHASE_PLAY", toMove: "SIDE_NORTH" };
    expect(turnOf(v)).toBe("mine");
    expect(turnOf({ ...v, toMove: "SIDE_SOUTH" })).toBe("theirs");
    expect(turnOf({ ...v, viewer: "VIEWER_SPECTATOR" })).toBe("");
    const end: GameViewJson = { viewer: "VIEWER_NORTH", phase: "PHASE_ENDED", outcome: { winner: "SIDE_SOUTH", reason: "END_REASON_RESIGNED" } };
    expect(outcomeFor(end)).toBe("loss");
    expect(outcomeFor({ ...end, outcome: { reason: "END_REASON_AGREED_DRAW" } })).toBe("draw");
    expect(outcomeFor({ ...end, viewer: "VIEWER_SPECTATOR" })).toBe(null);
  });
});

describe("clock", () => {
  it("estimates the offset from the sample with the shortest round trip", () => {
    const offset = estimateOffset([
      { sent: 1000, received: 1400, server: 6000 }, // 400 ms round trip
      { sent: 2000, received: 2040, server: 7020 }, // 40 ms: midpoint 2020, offset 5000
      { sent: 3000, received: 3300, server: 8100 },
    ]);
    expect(offset).toBe(5000);
    expect(estimateOffset([])).toBe(0);
  });

  it("counts down to a server deadline corrected by the offset", () => {
    // server is 5 s ahead of the browser: a deadline 30 s after the server's now
    const now = 100_000;
    const offset = 5000;
    expect(secondsLeft(String(now + offset + 30_000), offset, now)).toBe(30);
    expect(secondsLeft(String(now + offset + 29_001), offset, now)).toBe(30);
    expect(secondsLeft(String(now), offset, now)).toBe(0);
    expect(secondsLeft(undefined, offset, now)).toBe(null);
    expect(secondsLeft("0", offset, now)).toBe(null);
    expect(formatSeconds(90)).toBe("1:30");
    expect(formatSeconds(5)).toBe("0:05");
  });

  it("backs off between reconnects, doubling up to a cap of 2.4 s before jitter", () => {
    expect(backoffDelay(0, () => 0.5)).toBe(500);
    expect(backoffDelay(1, () => 0.5)).toBe(1000);
    expect(backoffDelay(2, () => 0.5)).toBe(2000);
    expect(backoffDelay(3, () => 0.5)).toBe(2400);
    expect(backoffDelay(30, () => 0.5)).toBe(2400);
  });
});

describe("marks", () => {
  it("keeps a guess per game and piece id, and clears it", () => {
    const kv = new MemoryKV();
    const a = new Marks(kv, "g1");
    a.set(7, "9");
    a.set(8, "B");
    expect(new Marks(kv, "g1").get(7)).toBe("9");
    expect(new Marks(kv, "g2").get(7)).toBeUndefined();
    a.set(7, null);
    expect(new Marks(kv, "g1").all()).toEqual({ "8": "B" });
    kv.setItem("hf.marks.g3", "not json");
    expect(new Marks(kv, "g3").all()).toEqual({});
  });
});

import { tokenFromFragment, tokenFromMessage } from "../src/state/signin.js";
import { geometry, nearestInDirection } from "../src/ui/board.js";
import { fakeBoard } from "./fakes.js";

describe("sign-in by the platform", () => {
  it("reads the token from the fragment or a message, nothing else", () => {
    expect(tokenFromFragment("#token=abc.def")).toBe("abc.def");
    expect(tokenFromFragment("#x=1&token=a%2Bb")).toBe("a+b");
    expect(tokenFromFragment("#mytoken=abc")).toBe(null);
    expect(tokenFromFragment("")).toBe(null);
    expect(tokenFromMessage({ type: "hiddenfront.token", token: "t" })).toBe("t");
    expect(tokenFromMessage({ type: "other", token: "t" })).toBe(null);
    expect(tokenFromMessage("hiddenfront.token")).toBe(null);
  });
});

describe("board geometry", () => {
  it("puts the viewer's side at the bottom and moves focus along the drawn board", () => {
    const board = fakeBoard("hidden-front");
    const byName = (n: string) => board.nodes.find((x) => x.name === n)!;
    const south = geometry(board, "south");
    expect(south.pos(byName("A1")).y).toBeGreaterThan(south.pos(byName("A4")).y);
    const north = geometry(board, "north");
    expect(north.pos(byName("A1")).y).toBeLessThan(north.pos(byName("A4")).y);
    expect(north.pos(byName("A1")).x).toBeGreaterThan(north.pos(byName("C1")).x);
    expect(nearestInDirection(board.nodes, south, byName("A1"), [0, -1])?.name).toBe("A2");
    expect(nearestInDirection(board.nodes, south, byName("A2"), [0, -1])?.name).toBe("A3");
    expect(nearestInDirection(board.nodes, south, byName("A1"), [1, 0])?.name).toBe("B1");
    expect(nearestInDirection(board.nodes, north, byName("A1"), [1, 0])).toBe(null);
  });
});
