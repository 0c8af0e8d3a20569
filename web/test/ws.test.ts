import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Connection, RECONNECT_LONGEST_MS, ServerError, backoffDelay, type ConnState } from "../src/api/ws.js";
import { GameLog } from "../src/state/game.js";
import { FakeSocket } from "./fakes.js";

beforeEach(() => {
  FakeSocket.all = [];
  vi.stubGlobal("WebSocket", FakeSocket);
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

async function connected(): Promise<{ conn: Connection; ws: FakeSocket }> {
  const conn = new Connection("ws://x/v1/ws", () => "tok");
  const p = conn.connect();
  const ws = FakeSocket.all[0]!;
  ws.open();
  expect(ws.sent[0]).toEqual({ id: "auth", type: "auth", token: "tok" });
  ws.push({ id: "auth", type: "result", response: { player: "alice", guest: true } });
  await p;
  return { conn, ws };
}

describe("the WebSocket client", () => {
  it("authenticates first, then matches answers by id in canonical proto JSON", async () => {
    const { conn, ws } = await connected();
    expect(conn.player).toBe("alice");
    const a = conn.request("get_game", { gameId: "g" });
    const b = conn.request("list_my_games", { activeOnly: true });
    await vi.advanceTimersByTimeAsync(0);
    const [ga, lb] = ws.sent.slice(1);
    expect(ga).toMatchObject({ type: "get_game", request: { gameId: "g" } });
    expect(lb).toMatchObject({ type: "list_my_games", request: { activeOnly: true } });
    ws.push({ id: lb!.id, type: "result", response: {} });
    ws.push({ id: ga!.id, type: "error", code: "NOT_FOUND", reason: "GAME_NOT_FOUND", message: "no such game" });
    await expect(b).resolves.toEqual({});
    await expect(a).rejects.toMatchObject({ reason: "GAME_NOT_FOUND", code: "NOT_FOUND" });
  });

  it("writes 64-bit fields as strings and refuses a request the schema does not know", async () => {
    const { conn, ws } = await connected();
    void conn.request("play", { context: { gameId: "g", idempotencyKey: "k", expectedVersion: "7" }, move: { from: "A6", to: "A7" } });
    await vi.advanceTimersByTimeAsync(0);
    expect(ws.last("play")?.request).toEqual({ context: { gameId: "g", idempotencyKey: "k", expectedVersion: "7" }, move: { from: "A6", to: "A7" } });
    await expect(conn.request("play", { bogus: 1 } as never)).rejects.toThrow();
  });

  it("resubscribes from the last seq + 1 after a dropped socket, and the log drops repeats", async () => {
    const { conn, ws } = await connected();
    const log = new GameLog();
    const seen: string[] = [];
    conn.subscribeGame({ gameId: "g", spectate: false, nextSeq: () => log.nextSeq(), onEvent: (e) => { if (log.add(e)) seen.push(e.seq ?? ""); } });
    const sub = ws.last("subscribe")!;
    expect(sub.request).toEqual({ gameId: "g", fromSeq: "1" });
    ws.push({ id: sub.id, type: "result", response: {} });
    for (const seq of ["1", "2", "4"]) ws.push({ type: "event", subscription: sub.id, event: { gameId: "g", seq, drawOffered: { side: "SIDE_SOUTH" } } });
    ws.close();
    await vi.advanceTimersByTimeAsync(20000);
    const ws2 = FakeSocket.all[1]!;
    ws2.open();
    ws2.push({ id: "auth", type: "result", response: { player: "alice" } });
    await vi.advanceTimersByTimeAsync(0);
    const sub2 = ws2.last("subscribe")!;
    expect(sub2.request).toEqual({ gameId: "g", fromSeq: "5" });
    // the server repeats the last event (a resume hint), then goes on
    ws2.push({ type: "event", subscription: sub2.id, event: { gameId: "g", seq: "4", drawOffered: { side: "SIDE_SOUTH" } } });
    ws2.push({ type: "event", subscription: sub2.id, event: { gameId: "g", seq: "5", drawDeclined: { side: "SIDE_NORTH" } } });
    expect(seen).toEqual(["1", "2", "4", "5"]);
  });

  it("asks for status items when the subscriber takes them, and hands each checked one over", async () => {
    const { conn, ws } = await connected();
    const statuses: unknown[] = [];
    conn.subscribeGame({ gameId: "g", spectate: false, nextSeq: () => 1, onEvent: () => {}, onStatus: (st) => statuses.push(st) });
    const sub = ws.last("subscribe")!;
    expect(sub.request).toEqual({ gameId: "g", fromSeq: "1", withStatus: true });
    const status = { version: "4", southConnected: true, turnDeadlineUnixMillis: "1700000000000", drawOffer: "SIDE_NORTH" };
    ws.push({ type: "status", subscription: sub.id, status });
    ws.push({ type: "status", subscription: sub.id, status: { version: "not a number" } });
    ws.push({ type: "status", subscription: "s999", status });
    expect(statuses, "the malformed one and another subscription's are skipped").toEqual([status]);
  });

  it("follows a reconnect frame: after its end, subscribes again from the next seq", async () => {
    const { conn, ws } = await connected();
    const log = new GameLog();
    let ended = false;
    conn.subscribeGame({ gameId: "g", spectate: true, nextSeq: () => log.nextSeq(), onEvent: (e) => log.add(e), onEnd: () => { ended = true; } });
    const sub = ws.last("subscribe")!;
    ws.push({ type: "event", subscription: sub.id, event: { gameId: "g", seq: "3", resigned: { side: "SIDE_NORTH" } } });
    ws.push({ type: "reconnect", subscription: sub.id, resume_from_seq: 4, reason: "too slow" });
    ws.push({ type: "end", subscription: sub.id });
    await vi.advanceTimersByTimeAsync(2000);
    expect(ended).toBe(false);
    const again = ws.sent.filter((m) => m.type === "subscribe");
    expect(again.length).toBe(2);
    expect(again[1]?.request).toEqual({ gameId: "g", fromSeq: "4", spectate: true });
    // a plain end (after GameEnded) ends the subscription for good
    ws.push({ type: "end", subscription: sub.id });
    expect(ended).toBe(true);
  });

  it("reports a refused token and stops reconnecting", async () => {
    const conn = new Connection("ws://x/v1/ws", () => "bad");
    let failed: ServerError | null = null;
    conn.onAuthFailed = (e) => { failed = e; };
    const p = conn.connect();
    const ws = FakeSocket.all[0]!;
    ws.open();
    ws.push({ id: 1, type: "error", code: "UNAUTHENTICATED", reason: "TOKEN_INVALID", message: "x" });
    ws.push({ id: "auth", type: "error", code: "UNAUTHENTICATED", reason: "TOKEN_INVALID", message: "x" });
    await expect(p).rejects.toMatchObject({ reason: "TOKEN_INVALID" });
    expect(failed).not.toBeNull();
    ws.close();
    await vi.advanceTimersByTimeAsync(60000);
    expect(FakeSocket.all.length).toBe(1);
  });
});

describe("reconnecting after an outage", () => {
  it("never waits more than 3 s between attempts, however long the outage", () => {
    expect(RECONNECT_LONGEST_MS).toBeLessThanOrEqual(3000);
    const extremes = [() => 0, () => 0.999999, Math.random];
    let longest = 0;
    for (let attempt = 0; attempt < 200; attempt++)
      for (const random of extremes)
        for (let i = 0; i < 20; i++) {
          const wait = backoffDelay(attempt, random);
          expect(wait, `attempt ${attempt}`).toBeGreaterThanOrEqual(375);
          longest = Math.max(longest, wait);
        }
    expect(longest).toBeLessThanOrEqual(RECONNECT_LONGEST_MS);
    // jitter stays: two clients at the cap do not wait the same
    expect(backoffDelay(9, () => 0)).toBeLessThan(backoffDelay(9, () => 0.999999));
  });

  it("opens no socket for a request made while the connection is lost: it waits for the scheduled reconnect", async () => {
    const { conn, ws } = await connected();
    ws.close();
    expect(FakeSocket.all.length).toBe(1);
    // the game screen's periodic refresh and a click, while the server is away
    const a = conn.request("get_game", { gameId: "g" });
    const b = conn.request("list_my_games", { activeOnly: true });
    await vi.advanceTimersByTimeAsync(0);
    expect(FakeSocket.all.length, "a request opened a socket of its own").toBe(1);
    await vi.advanceTimersByTimeAsync(RECONNECT_LONGEST_MS);
    expect(FakeSocket.all.length, "one socket, the schedule's").toBe(2);
    const ws2 = FakeSocket.all[1]!;
    ws2.open();
    ws2.push({ id: "auth", type: "result", response: { player: "alice" } });
    await vi.advanceTimersByTimeAsync(0);
    const ga = ws2.last("get_game")!;
    const lb = ws2.last("list_my_games")!;
    ws2.push({ id: ga.id, type: "result", response: {} });
    ws2.push({ id: lb.id, type: "result", response: {} });
    await expect(a).resolves.toEqual({});
    await expect(b).resolves.toEqual({});
  });

  it("fails a request with CONNECTION_LOST when the scheduled attempt fails, and goes on at the schedule's pace", async () => {
    const { conn, ws } = await connected();
    const opened: number[] = [];
    const start = Date.now();
    ws.close();
    const failed = conn.request("get_game", { gameId: "g" });
    failed.catch(() => {});
    // A long outage: every attempt fails at once; the page asks for the view every 4 s meanwhile.
    for (let t = 0; t < 60_000; t += 250) {
      if (t % 4000 === 0) conn.request("get_game", { gameId: "g" }).catch(() => {});
      const before = FakeSocket.all.length;
      await vi.advanceTimersByTimeAsync(250);
      for (const socket of FakeSocket.all.slice(before)) {
        opened.push(Date.now() - start);
        socket.close();
      }
    }
    await expect(failed).rejects.toMatchObject({ reason: "CONNECTION_LOST" });
    expect(opened.length).toBe(FakeSocket.all.length - 1);
    const gaps = opened.map((at, i) => at - (i === 0 ? 0 : opened[i - 1]!));
    // 500 ms doubling, jittered, then never more than 3 s apart (250 ms steps in this test)
    expect(Math.max(...gaps)).toBeLessThanOrEqual(RECONNECT_LONGEST_MS + 250);
    expect(opened.length).toBeGreaterThanOrEqual(60_000 / (RECONNECT_LONGEST_MS + 250) - 1);
    // and no more often than the schedule says: not one socket per request
    expect(opened.length).toBeLessThanOrEqual(60_000 / 1800 + 4);
  });

  it("reports the loss once and the return, and tells game subscribers they resumed", async () => {
    const conn = new Connection("ws://x/v1/ws", () => "tok");
    const states: ConnState[] = [];
    conn.onState = (s) => states.push(s);
    let resumed = 0;
    const p = conn.connect();
    conn.subscribeGame({ gameId: "g", spectate: false, nextSeq: () => 7, onEvent: () => {}, onResumed: () => resumed++ });
    const ws = FakeSocket.all[0]!;
    ws.open();
    ws.push({ id: "auth", type: "result", response: { player: "alice" } });
    await p;
    expect(resumed, "the first open is no resumption").toBe(0);
    ws.close();
    for (let i = 0; i < 3; i++) {
      await vi.advanceTimersByTimeAsync(RECONNECT_LONGEST_MS);
      FakeSocket.all.at(-1)!.close();
    }
    await vi.advanceTimersByTimeAsync(RECONNECT_LONGEST_MS);
    const last = FakeSocket.all.at(-1)!;
    last.open();
    last.push({ id: "auth", type: "result", response: { player: "alice" } });
    await vi.advanceTimersByTimeAsync(0);
    expect(resumed).toBe(1);
    expect(last.last("subscribe")?.request).toEqual({ gameId: "g", fromSeq: "7" });
    expect(states[0]).toBe("connecting");
    expect(states.slice(1).filter((s) => s !== "lost")).toEqual(["open", "open"]);
    expect(states.indexOf("connecting", 1), "no 'connecting' flicker during the outage").toBe(-1);
  });
});
