// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Connection, RECONNECT_LONGEST_MS } from "../src/api/ws.js";
import { GameScreen } from "../src/ui/game.js";
import { ConnectionStatus, RESTORED_NOTICE_MS } from "../src/ui/status.js";
import { messages, setLanguage } from "../src/i18n/index.js";
import type { GameViewJson } from "../src/gen/hiddenfront/v1/game_pb.js";
import { FakeSocket, fakeEngine } from "./fakes.js";

beforeEach(() => {
  FakeSocket.all = [];
  vi.stubGlobal("WebSocket", FakeSocket);
  sessionStorage.clear();
  localStorage.clear();
});
afterEach(() => vi.unstubAllGlobals());

/**
 * Lets the page's answers arrive (a task), then waits for the screen's next drawing: it draws at
 * most once per animation frame, never at the moment its state changes.
 */
const flush = async () => {
  await new Promise((r) => setTimeout(r, 0));
  await new Promise((r) => requestAnimationFrame(() => r(undefined)));
};

async function open(view: GameViewJson, spectate = false) {
  const conn = new Connection("ws://x/v1/ws", () => "tok");
  const engine = fakeEngine();
  const screen = new GameScreen({ conn, engine, offset: () => 0, navigate: () => {} }, "g1", spectate);
  document.body.replaceChildren(screen.start());
  const ws = FakeSocket.all[0]!;
  ws.open();
  ws.authenticate();
  ws.followed("g1");
  await flush();
  const answer = () => {
    const req = [...ws.sent].reverse().find((m) => m.kind === "getGame" && !m.done);
    if (req) ws.answer(req, { getGame: { game: view } });
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
    expect(a1.getAttribute("aria-label")).toContain("commander-in-chief");
    const a3 = root.querySelector('[data-square="A3"]')!;
    expect(a3.getAttribute("data-piece-id")).toBe("7");
    expect(a3.hasAttribute("data-piece")).toBe(false);
    expect(root.querySelector('[data-field="away-banner"]')!.textContent).toMatch(/Opponent away: 4\d s/);
    expect(root.querySelector('[data-field="clock"]')!.textContent).toMatch(/0:(30|29)/);
  });

  it("highlights the engine's legal destinations and plays a clicked one", async () => {
    const { root, ws } = await open(play);
    (root.querySelector('[data-square="A1"]') as HTMLButtonElement).click();
    await flush();
    expect(root.querySelector('[data-square="A1"]')!.hasAttribute("data-selected")).toBe(true);
    const legal = [...root.querySelectorAll("[data-legal]")].map((e) => e.getAttribute("data-square"));
    expect(legal.sort()).toEqual(["A2"]);
    (root.querySelector('[data-square="A2"]') as HTMLButtonElement).click();
    await flush();
    expect(ws.last("play")?.body).toMatchObject({ move: { from: "A1", to: "A2" }, context: { gameId: "g1" } });
  });

  it("refuses an illegal typed move without sending it, in the player's language", async () => {
    const { root, ws } = await open(play);
    const input = root.querySelector('input[data-field="move-text"]') as HTMLInputElement;
    input.value = "A1 C4";
    input.dispatchEvent(new Event("input"));
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    await flush();
    expect(ws.last("play")).toBeUndefined();
    expect(root.querySelector('[data-field="error"]')!.getAttribute("data-reason")).toBe("MOVE_NOT_LEGAL");
  });

  it("marks an opponent piece in local storage only, and keeps no opponent kind anywhere", async () => {
    const { root, ws } = await open(play);
    (root.querySelector('[data-square="A3"]') as HTMLButtonElement).click();
    await flush();
    (root.querySelector('[data-mark="9"]') as HTMLButtonElement).click();
    await flush();
    expect(JSON.parse(localStorage.getItem("hf.marks.g1")!)).toEqual({ "7": "9" });
    expect(root.querySelector('[data-square="A3"]')!.getAttribute("aria-label")).toContain("marked commander-in-chief");
    expect(ws.sent.some((m) => JSON.stringify(m.body).includes('"9"'))).toBe(false);
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
    await flush();
    expect(ws.last("swap")).toBeUndefined();
    const err = root.querySelector('[data-field="error"]')!;
    expect(err.getAttribute("data-reason")).toBe("FLAG_NOT_IN_HQ");
    expect(err.textContent).toContain("headquarters");
    (root.querySelector('[data-square="A1"]') as HTMLButtonElement).click();
    (root.querySelector('[data-square="C1"]') as HTMLButtonElement).click();
    await flush();
    expect(ws.last("swap")?.body).toMatchObject({ squareA: "A1", squareB: "C1" });
    expect(root.querySelector('[data-square="C1"]')!.getAttribute("data-piece")).toBe("9");
  });

  it("feeds the inference only the events received and resumes from the stored seq", async () => {
    const { ws, engine, screen } = await open(play);
    expect(ws.last("follow")!.body).toMatchObject({ gameId: "g1", fromSeq: "1" });
    ws.event({ gameId: "g1", seq: "7", playStarted: { pieces: play.pieces } });
    ws.event({ gameId: "g1", seq: "7", playStarted: { pieces: play.pieces } });
    expect(engine.observed.length).toBe(1);
    screen.destroy();
    FakeSocket.all = [];
    const again = await open(play);
    expect(again.ws.last("follow")!.body).toMatchObject({ fromSeq: "8" });
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
    ws.event({ gameId: "g1", seq: "11", moved: { side: "SIDE_SOUTH", move: { from: "A1", to: "A2" }, pieceId: 1, piece: "9" } });
    ws.event({ gameId: "g1", seq: "12", moved: { side: "SIDE_SOUTH", move: { from: "A2", to: "A3" }, pieceId: 1, piece: "9", combat: { defenderId: 7, defenderPiece: "F", attackerSurvives: true, flagCaptured: true } } });
    await flush();
    expect(root.querySelector('[data-field="replay-ply"]')!.textContent).toBe("Position 3 of 3");
    (root.querySelector('[data-action="replay-prev"]') as HTMLButtonElement).click();
    await flush();
    expect(root.querySelector('[data-field="replay-ply"]')!.textContent).toBe("Position 2 of 3");
    expect(root.querySelector('[data-square="A1"]')!.hasAttribute("data-last-move")).toBe(true);
  });

  it("reads the view again once a lost connection is back, so the clocks shown are the server's", async () => {
    const { root, ws } = await open(play);
    vi.useFakeTimers();
    try {
      ws.close();
      await vi.advanceTimersByTimeAsync(RECONNECT_LONGEST_MS);
      expect(FakeSocket.all.length).toBe(2);
      const ws2 = FakeSocket.all[1]!;
      ws2.open();
      ws2.authenticate();
      await vi.advanceTimersByTimeAsync(0);
      expect(ws2.last("follow")?.body).toMatchObject({ gameId: "g1", fromSeq: "1" });
      const get = ws2.last("getGame");
      expect(get, "the view is read again after reconnecting").toBeDefined();
      // The server stood still while it was down: its deadline is not the one shown before.
      ws2.followed("g1");
      ws2.answer(get!, { getGame: { game: { ...play, turnDeadlineUnixMillis: String(Date.now() + 300_000) } } });
      await vi.advanceTimersByTimeAsync(20); // the next frame
      expect(root.querySelector('[data-field="clock"]')!.textContent).toMatch(/(5:00|4:59)/);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("the connection status line", () => {
  it("shows a lost connection until it is back, then 'reconnected' for a while, in every language", () => {
    vi.useFakeTimers();
    try {
      const status = new ConnectionStatus();
      const el = status.el;
      status.reset(true);
      expect(el.getAttribute("data-state")).toBe("connecting");
      expect(el.hidden).toBe(false);
      status.set("open");
      expect(el.hidden).toBe(true);
      status.set("lost");
      expect(el.getAttribute("data-state")).toBe("lost");
      expect(el.hidden).toBe(false);
      expect(el.textContent).toBe(messages.en["conn.lost"]);
      expect(el.getAttribute("aria-live")).toBe("assertive");
      // every failed attempt of a long outage: still the one banner
      status.set("lost");
      vi.advanceTimersByTime(60_000);
      expect(el.getAttribute("data-state")).toBe("lost");
      status.set("open");
      expect(el.getAttribute("data-state")).toBe("restored");
      expect(el.hidden).toBe(false);
      expect(el.textContent).toBe(messages.en["conn.restored"]);
      vi.advanceTimersByTime(RESTORED_NOTICE_MS);
      expect(el.hidden).toBe(true);
      expect(el.getAttribute("data-state")).toBe("open");
      for (const lang of ["ko", "zh", "ja"] as const) {
        setLanguage(lang);
        status.set("lost");
        expect(el.textContent).toBe(messages[lang]["conn.lost"]);
        status.set("open");
        expect(el.textContent).toBe(messages[lang]["conn.restored"]);
      }
      // signed out: nothing to report
      status.reset(false);
      expect(el.hidden).toBe(true);
    } finally {
      setLanguage("en");
      vi.useRealTimers();
    }
  });
});

/** Answers every getGame request not answered yet with `view`. */
function answerAll(ws: FakeSocket, view: GameViewJson): number {
  let n = 0;
  for (const req of ws.sent) {
    if (req.kind !== "getGame" || req.done) continue;
    ws.answer(req, { getGame: { game: view } });
    n++;
  }
  return n;
}

/** A move event of `side`'s piece (south's id 1, north's id 7) from one square to another. */
const step = (seq: number, side: "SIDE_SOUTH" | "SIDE_NORTH", from: string, to: string, extra: Record<string, unknown> = {}) => ({
  gameId: "g1", seq: String(seq), moved: { side, move: { from, to }, pieceId: side === "SIDE_SOUTH" ? 1 : 7, ...extra },
});

/** `n` events from `first` that follow `play`: south's A1 and north's C4 step out and back in turn. */
const moves = (first: number, n: number) =>
  Array.from({ length: n }, (_, i) => {
    const out = Math.floor(i / 2) % 2 === 0;
    return i % 2 ? step(first + i, "SIDE_NORTH", out ? "C4" : "C3", out ? "C3" : "C4") : step(first + i, "SIDE_SOUTH", out ? "A1" : "A2", out ? "A2" : "A1");
  });

const moved = (seq: number, side: "SIDE_SOUTH" | "SIDE_NORTH", extra: Record<string, unknown> = {}) => ({
  gameId: "g1", seq: String(seq), moved: { side, move: { from: side === "SIDE_SOUTH" ? "A1" : "A3", to: "A2" }, pieceId: side === "SIDE_SOUTH" ? 1 : 7, ...extra },
});

/**
 * A layout for jsdom (which has none): every row of the move list is 20 px high, the list shows
 * 100 px, and like a browser it reports a scroll to its `scroll` listeners later (50 ms), not at
 * once.
 */
function fakeListLayout(): () => void {
  const tops = new WeakMap<Element, number>();
  const proto = HTMLElement.prototype as unknown as Record<string, unknown>;
  Object.defineProperty(proto, "scrollHeight", { configurable: true, get(this: HTMLElement) { return this.childElementCount * 20; } });
  Object.defineProperty(proto, "clientHeight", { configurable: true, get() { return 100; } });
  Object.defineProperty(proto, "scrollTop", {
    configurable: true,
    get(this: HTMLElement) { return tops.get(this) ?? 0; },
    set(this: HTMLElement, v: number) {
      const max = Math.max(0, this.scrollHeight - this.clientHeight);
      tops.set(this, Math.min(max, Math.max(0, v)));
      setTimeout(() => this.dispatchEvent(new Event("scroll")), 50);
    },
  });
  return () => {
    delete proto.scrollHeight;
    delete proto.clientHeight;
    delete proto.scrollTop;
  };
}

describe("the move list", () => {
  const list = (root: HTMLElement) => root.querySelector<HTMLElement>('[data-field="moves"]')!;
  const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it("shows the newest move even when a second answer with the same rows draws it again at once", async () => {
    const restore = fakeListLayout();
    try {
      const { root, ws, screen } = await open(play);
      for (const event of moves(10, 10)) ws.event(event);
      await flush();
      await wait(60); // the scroll events of that render have come
      expect(list(root).scrollTop).toBe(100);
      // The computer's reply: its event (first render, a new row) ...
      ws.event(step(20, "SIDE_NORTH", "C3", "C4"));
      await flush();
      expect(list(root).childElementCount).toBe(11);
      expect(list(root).scrollTop, "the first render shows the newest move").toBe(120);
      // ... and a view read again with the same rows, before the browser's scroll event.
      void (screen as unknown as { read(): Promise<void> }).read();
      await flush();
      expect(answerAll(ws, { ...play, version: "20" })).toBe(1);
      await flush();
      expect(list(root).scrollTop, "the second render still shows the newest move").toBe(120);
      await wait(60);
      screen.rerender();
      await flush();
      expect(list(root).scrollTop).toBe(120);
    } finally {
      restore();
    }
  });

  it("is the same element after an event and its view, and so is the focused square", async () => {
    const { root, ws } = await open(play);
    const a1 = root.querySelector<HTMLButtonElement>('[data-square="A1"]')!;
    a1.focus();
    const before = list(root);
    ws.event(moved(10, "SIDE_NORTH"));
    await flush();
    expect(root.getAttribute("data-version")).toBe("10");
    expect(list(root).querySelector('li[data-seq="10"]')).not.toBeNull();
    expect(list(root), "the list is kept").toBe(before);
    expect(document.activeElement, "the focused square is kept").toBe(a1);
  });

  it("keeps the reader's place when they scrolled up to read, and follows again at the bottom", async () => {
    const restore = fakeListLayout();
    try {
      const { root, ws } = await open(play);
      for (const event of moves(10, 10)) ws.event(event);
      await flush();
      list(root).scrollTop = 20; // the reader scrolls up
      ws.event(step(20, "SIDE_NORTH", "C3", "C4"));
      await flush();
      expect(list(root).scrollTop, "the reader's place is kept").toBe(20);
      expect(list(root).getAttribute("data-follow")).toBe("false");
      list(root).scrollTop = 1000; // back to the bottom
      ws.event(step(21, "SIDE_SOUTH", "A1", "A2"));
      await flush();
      expect(list(root).scrollTop, "following again").toBe(140);
      expect(list(root).getAttribute("data-follow")).toBe("true");
    } finally {
      restore();
    }
  });

  it("names the opponent's kinds after the end, from the reveal, as the board does, and not before", async () => {
    const fight = { combat: { defenderId: 1, attackerSurvives: true } };
    const running = await open(play);
    running.ws.event(moved(11, "SIDE_NORTH", fight));
    await flush();
    const row = (root: HTMLElement) => root.querySelector('[data-field="moves"] li[data-seq="11"]')!;
    expect(row(running.root).querySelector(".mv-piece"), "no opponent kind before the end").toBeNull();
    expect(row(running.root).querySelector(".mv-defender"), "the events did not name it").toBeNull();
    running.screen.destroy();
    sessionStorage.clear();
    FakeSocket.all = [];

    const start = [...play.pieces!.map((p) => ({ ...p, piece: p.piece ?? "1" }))];
    const ended: GameViewJson = { ...play, version: "12", phase: "PHASE_ENDED", outcome: { winner: "SIDE_NORTH", reason: "END_REASON_FLAG_CAPTURED" }, pieces: start, reveal: { startingPieces: start } };
    const { root, ws } = await open(ended);
    ws.event(moved(11, "SIDE_NORTH", fight));
    await flush();
    expect(row(root).querySelector(".mv-piece")?.getAttribute("data-kind"), "the mover, revealed").toBe("1");
    expect(row(root).querySelector(".mv-piece")?.textContent).toBe("Eng");
    expect(row(root).querySelector(".mv-defender")?.getAttribute("data-kind")).toBe("9");
  });
});

describe("following the game", () => {
  const gets = (ws: FakeSocket) => ws.all("getGame").length;

  it("reads the view once, then follows the events with the engine, and polls nothing", async () => {
    const { root, ws } = await open(play);
    expect(ws.last("follow")?.body).toMatchObject({ gameId: "g1", withStatus: true });
    expect(gets(ws)).toBe(1);
    vi.useFakeTimers();
    try {
      for (const event of moves(10, 6)) ws.event(event);
      await vi.advanceTimersByTimeAsync(20); // the next frame
      expect(root.getAttribute("data-version")).toBe("15");
      expect(root.querySelector('[data-square="A2"]')?.getAttribute("data-piece"), "the board followed the moves").toBe("9");
      expect(root.querySelector('[data-square="A1"]')?.hasAttribute("data-piece")).toBe(false);
      await vi.advanceTimersByTimeAsync(30_000);
      expect(gets(ws), "no read per event, none on a timer").toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it("reads the view again when an event does not follow, once for that event", async () => {
    const { root, ws, answer } = await open(play);
    // C1 holds no piece of north's: the view missed something.
    ws.event(step(10, "SIDE_NORTH", "C1", "C2"));
    await flush();
    expect(gets(ws)).toBe(2);
    expect(root.getAttribute("data-version"), "the view waits for its read").toBe("9");
    answer(); // the same view of version 9: the event still does not follow
    await flush();
    expect(gets(ws), "not again for the same event").toBe(2);
    ws.event(step(11, "SIDE_SOUTH", "A1", "A2"));
    await flush();
    expect(gets(ws), "a later event that does not follow either: one more read").toBe(3);
    answerAll(ws, { ...play, version: "10" });
    await flush();
    expect(root.getAttribute("data-version"), "the view read, then the event after it followed").toBe("11");
    expect(gets(ws)).toBe(3);
  });

  it("shows presence and the clocks from the status items, dropping an older one", async () => {
    const { root, ws } = await open({ ...play, northAwayDeadlineUnixMillis: String(Date.now() + 42_000) });
    expect(root.querySelector('[data-field="away-banner"]')!.textContent).toMatch(/Opponent away: 4\d s/);
    const status = { version: "9", southConnected: true, northConnected: true, turnDeadlineUnixMillis: String(Date.now() + 120_000) };
    ws.status("g1", status);
    await flush();
    expect(root.querySelector<HTMLElement>('[data-field="away-banner"]')!.hidden, "the opponent is back").toBe(true);
    expect(root.querySelector('[data-field="clock"]')!.textContent).toMatch(/(2:00|1:59)/);
    ws.status("g1", { ...status, version: "8", turnDeadlineUnixMillis: String(Date.now() + 5_000) });
    await flush();
    expect(root.querySelector('[data-field="clock"]')!.textContent, "an older status is dropped").toMatch(/(2:00|1:59)/);
  });
});

describe("a spectator", () => {
  const deploy: GameViewJson = {
    gameId: "g1", version: "3", viewer: "VIEWER_SPECTATOR", rules: "hidden-front", phase: "PHASE_DEPLOYMENT",
    southPlayer: "alice", northPlayer: "bob", southConfirmed: true, northConfirmed: false,
  };

  it("sees during deployment whether each side has confirmed, with the players' names, in every language", async () => {
    const { root, screen } = await open(deploy, true);
    expect(root.getAttribute("data-seat")).toBe("spectator");
    const south = root.querySelector('[data-field="south-confirmed"]')!;
    const north = root.querySelector('[data-field="north-confirmed"]')!;
    expect(south.getAttribute("data-confirmed")).toBe("true");
    expect(north.getAttribute("data-confirmed")).toBe("false");
    try {
      for (const lang of ["en", "ko", "zh", "ja"] as const) {
        setLanguage(lang);
        screen.rerender();
        await flush();
        const s = root.querySelector('[data-field="south-confirmed"]')!.textContent!;
        const n = root.querySelector('[data-field="north-confirmed"]')!.textContent!;
        expect(s, lang).toContain("alice");
        expect(s, lang).toContain(messages[lang]["side.south"]);
        expect(n, lang).toContain("bob");
        expect(s, lang).not.toBe(n.replace("bob", "alice").replace(messages[lang]["side.north"], messages[lang]["side.south"]));
      }
    } finally {
      setLanguage("en");
    }
    screen.rerender();
    await flush();
    expect(root.querySelector('[data-field="south-confirmed"]')!.textContent).toBe("South · alice: deployment confirmed");
  });

  it("sees the captured pieces under each side's player", async () => {
    const watch: GameViewJson = { ...play, viewer: "VIEWER_SPECTATOR", pieces: play.pieces!.map((p) => ({ ...p, piece: undefined })) };
    const { root } = await open(watch, true);
    const heads = [...root.querySelectorAll('[data-field="captured"] h3')].map((e) => e.textContent);
    expect(heads).toEqual(["South · alice", "North · bob"]);
  });
});

describe("the replay download", () => {
  it("fetches the replay over the WebSocket and saves it under the server's file name, for players and spectators", async () => {
    const start = play.pieces!.map((p) => ({ ...p, piece: p.piece ?? "1" }));
    const ended: GameViewJson = { ...play, version: "12", phase: "PHASE_ENDED", outcome: { winner: "SIDE_SOUTH", reason: "END_REASON_FLAG_CAPTURED" }, pieces: start, reveal: { startingPieces: start } };
    const blobs: Blob[] = [];
    const saved: Array<{ href: string; download: string }> = [];
    vi.stubGlobal("URL", Object.assign(Object.create(URL) as typeof URL, { createObjectURL: (b: Blob) => (blobs.push(b), "blob:replay"), revokeObjectURL: () => {} }));
    const click = vi.spyOn(HTMLAnchorElement.prototype, "click").mockImplementation(function (this: HTMLAnchorElement) {
      saved.push({ href: this.getAttribute("href") ?? "", download: this.getAttribute("download") ?? "" });
    });
    try {
      for (const spectate of [false, true]) {
        FakeSocket.all = [];
        const { root, ws } = await open(spectate ? { ...ended, viewer: "VIEWER_SPECTATOR" } : ended, spectate);
        const button = root.querySelector<HTMLButtonElement>('[data-action="download-replay"]');
        expect(button, `a download button (spectator: ${spectate})`).not.toBeNull();
        button!.click();
        await flush();
        const req = ws.last("exportReplay")!;
        expect(req.body).toEqual({ gameId: "g1" });
        ws.answer(req, { exportReplay: { replay: "hidden-front-replay 1\nGame: g1\n", fileName: "hidden-front-g1.replay.txt" } });
        await flush();
        expect(saved.at(-1)).toEqual({ href: "blob:replay", download: "hidden-front-g1.replay.txt" });
        expect(blobs.at(-1)!.size).toBe("hidden-front-replay 1\nGame: g1\n".length);
      }
    } finally {
      click.mockRestore();
    }
  });

  it("is not offered before the end", async () => {
    const { root } = await open(play);
    expect(root.querySelector('[data-action="download-replay"]')).toBeNull();
  });
});
