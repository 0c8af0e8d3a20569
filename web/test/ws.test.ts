import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Connection, ServerError } from "../src/api/ws.js";
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
