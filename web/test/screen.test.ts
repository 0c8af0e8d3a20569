// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Connection } from "../src/api/ws.js";
import { GameScreen } from "../src/ui/game.js";
import type { GameViewJson } from "../src/gen/hiddenfront/v1/game_pb.js";
import { FakeSocket, fakeEngine } from "./fakes.js";

beforeEach(() => {
  FakeSocket.all = [];
  vi.stubGlobal("WebSocket", FakeSocket);
  sessionStorage.clear();
  localStorage.clear();
});
afterEach(() => vi.unstubAllGlobals());

const flush = () => new Promise((r) => setTimeout(r, 0));

async function open(view: GameViewJson, spectate = false) {
  const conn = new Connection("ws://x/v1/ws", () => "tok");
  const engine = fakeEngine();
  const screen = new GameScreen({ conn, engine, offset: () => 0, navigate: () => {} }, "g1", spectate);
  document.body.replaceChildren(screen.start());
  const ws = FakeSocket.all[0]!;
  ws.open();
  ws.push({ id: "auth", type: "result", response: { player: "alice" } });
  await flush();
  const answer = () => {
    const req = [...ws.sent].reverse().find((m) => m.type === "get_game" && !(m as { done?: boolean }).done) as Record<string, unknown> & { done?: boolean };
    if (!req) return;
    req.done = true;
    ws.push({ id: req.id, type: "result", response: { game: view } });
  };
  answer();
  await flush();
  return { screen, ws, engine, answer, root: screen.root };
}

const play: GameViewJson = {
  gameId: "g1", version: "9", viewer: "VIEWER_SOUTH", rules: "hidden-front", phase: "PHASE_PLAY", toMove: "SIDE_SOUTH",
  southPlayer: "alice", northPlayer: "bob", southConnected: true, northConnected: false,
  northAwayDeadlineUnixMillis: String(Date.now() + 42_000), turnDeadlineUnixMillis: String(Date.now() + 30_000),
  pieces: [
    { square: "A1", side: "SIDE_SOUTH", id: 1, piece: "9" },
    { square: "B1", side: "SIDE_SOUTH", id: 2, piece: "F" },
    { square: "A3", side: "SIDE_NORTH", id: 7 },
    { square: "C4", side: "SIDE_NORTH", id: 8 },
  ],
};

describe("the game screen", () => {
  it("draws every node from the topology, with the contract's data hooks", async () => {
    const { root } = await open(play);
    expect(root.getAttribute("data-phase")).toBe("play");
    expect(root.getAttribute("data-turn")).toBe("mine");
    expect(root.getAttribute("data-seat")).toBe("south");
    expect(root.getAttribute("data-version")).toBe("9");
    const squares = root.querySelectorAll("[data-square]");
    expect(squares.length).toBe(12);
    const a1 = root.querySelector('[data-square="A1"]')!;
    expect(a1.getAttribute("data-piece")).toBe("9");
    expect(a1.getAttribute("aria-label")).toContain("Field Marshal");
    const a3 = root.querySelector('[data-square="A3"]')!;
    expect(a3.getAttribute("data-piece-id")).toBe("7");
    expect(a3.hasAttribute("data-piece")).toBe(false);
    expect(root.querySelector('[data-field="away-banner"]')!.textContent).toMatch(/Opponent away: 4\d s/);
    expect(root.querySelector('[data-field="clock"]')!.textContent).toMatch(/0:(30|29)/);
  });

  it("highlights the engine's legal destinations and plays a clicked one", async () => {
    const { root, ws } = await open(play);
    (root.querySelector('[data-square="A1"]') as HTMLButtonElement).click();
    expect(root.querySelector('[data-square="A1"]')!.hasAttribute("data-selected")).toBe(true);
    const legal = [...root.querySelectorAll("[data-legal]")].map((e) => e.getAttribute("data-square"));
    expect(legal.sort()).toEqual(["A2"]);
    (root.querySelector('[data-square="A2"]') as HTMLButtonElement).click();
    await flush();
    expect(ws.last("play")?.request).toMatchObject({ move: { from: "A1", to: "A2" }, context: { gameId: "g1" } });
  });

  it("refuses an illegal typed move without sending it, in the player's language", async () => {
    const { root, ws } = await open(play);
    const input = root.querySelector('input[data-field="move-text"]') as HTMLInputElement;
    input.value = "A1 C4";
    input.dispatchEvent(new Event("input"));
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect(ws.last("play")).toBeUndefined();
    expect(root.querySelector('[data-field="error"]')!.getAttribute("data-reason")).toBe("MOVE_NOT_LEGAL");
  });

  it("marks an opponent piece in local storage only, and keeps no opponent kind anywhere", async () => {
    const { root, ws } = await open(play);
    (root.querySelector('[data-square="A3"]') as HTMLButtonElement).click();
    (root.querySelector('[data-mark="9"]') as HTMLButtonElement).click();
    expect(JSON.parse(localStorage.getItem("hf.marks.g1")!)).toEqual({ "7": "9" });
    expect(root.querySelector('[data-square="A3"]')!.getAttribute("aria-label")).toContain("marked Field Marshal");
    expect(ws.sent.some((m) => JSON.stringify(m).includes('"9"'))).toBe(false);
    // the DOM has the opponent pieces by id and never by kind
    for (const el of root.querySelectorAll('[data-side="north"]')) expect(el.hasAttribute("data-piece")).toBe(false);
  });

  it("refuses an illegal deployment swap with the translated reason before sending", async () => {
    const deploy: GameViewJson = {
      gameId: "g1", version: "3", viewer: "VIEWER_SOUTH", rules: "hidden-front", phase: "PHASE_DEPLOYMENT", northConfirmed: true,
      ownDeployment: { side: "SIDE_SOUTH", placements: [{ square: "A1", piece: "9" }, { square: "B1", piece: "F" }, { square: "C1", piece: "1" }, { square: "A2", piece: "1" }, { square: "C2", piece: "B" }] },
    };
    const { root, ws } = await open(deploy);
    expect(root.getAttribute("data-phase")).toBe("deployment");
    expect(root.querySelector('[data-field="opponent-confirmed"]')!.getAttribute("data-confirmed")).toBe("true");
    (root.querySelector('[data-square="B1"]') as HTMLButtonElement).click();
    (root.querySelector('[data-square="C1"]') as HTMLButtonElement).click();
    expect(ws.last("swap")).toBeUndefined();
    const err = root.querySelector('[data-field="error"]')!;
    expect(err.getAttribute("data-reason")).toBe("FLAG_NOT_IN_HQ");
    expect(err.textContent).toContain("headquarters");
    (root.querySelector('[data-square="A1"]') as HTMLButtonElement).click();
    (root.querySelector('[data-square="C1"]') as HTMLButtonElement).click();
    await flush();
    expect(ws.last("swap")?.request).toMatchObject({ squareA: "A1", squareB: "C1" });
    expect(root.querySelector('[data-square="C1"]')!.getAttribute("data-piece")).toBe("9");
  });

  it("feeds the inference only the events received and resumes from the stored seq", async () => {
    const { ws, engine, screen } = await open(play);
    const sub = ws.last("subscribe")!;
    expect(sub.request).toMatchObject({ gameId: "g1", fromSeq: "1" });
    ws.push({ type: "event", subscription: sub.id, event: { gameId: "g1", seq: "7", playStarted: { pieces: play.pieces } } });
    ws.push({ type: "event", subscription: sub.id, event: { gameId: "g1", seq: "7", playStarted: { pieces: play.pieces } } });
    expect(engine.observed.length).toBe(1);
    screen.destroy();
    FakeSocket.all = [];
    const again = await open(play);
    expect(again.ws.last("subscribe")!.request).toMatchObject({ fromSeq: "8" });
  });

  it("shows the result, reveals everything, and replays every move even when the last event comes after the ended view", async () => {
    const ended: GameViewJson = {
      ...play, version: "12", phase: "PHASE_ENDED", outcome: { winner: "SIDE_SOUTH", reason: "END_REASON_FLAG_CAPTURED" },
      pieces: play.pieces!.map((p) => ({ ...p, piece: p.piece ?? "1" })),
      reveal: { startingPieces: play.pieces!.map((p) => ({ ...p, piece: p.piece ?? "1" })) },
    };
    const { root, ws } = await open(ended);
    const result = root.querySelector('[data-field="result"]')!;
    expect(result.getAttribute("data-outcome")).toBe("win");
    expect(result.textContent).toContain("the flag was captured");
    expect(root.querySelector('[data-square="A3"]')!.getAttribute("data-piece")).toBe("1");
    expect(root.querySelector('[data-field="replay-ply"]')!.textContent).toBe("Position 1 of 1");
    const sub = ws.last("subscribe")!;
    ws.push({ type: "event", subscription: sub.id, event: { gameId: "g1", seq: "11", moved: { side: "SIDE_SOUTH", move: { from: "A1", to: "A2" }, pieceId: 1, piece: "9" } } });
    ws.push({ type: "event", subscription: sub.id, event: { gameId: "g1", seq: "12", moved: { side: "SIDE_SOUTH", move: { from: "A2", to: "A3" }, pieceId: 1, piece: "9", combat: { defenderId: 7, defenderPiece: "F", attackerSurvives: true, flagCaptured: true } } } });
    expect(root.querySelector('[data-field="replay-ply"]')!.textContent).toBe("Position 3 of 3");
    (root.querySelector('[data-action="replay-prev"]') as HTMLButtonElement).click();
    expect(root.querySelector('[data-field="replay-ply"]')!.textContent).toBe("Position 2 of 3");
    expect(root.querySelector('[data-square="A1"]')!.hasAttribute("data-last-move")).toBe(true);
  });
});
