import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Connection, RECONNECT_LONGEST_MS, ServerError, backoffDelay, type ConnState } from "../src/api/ws.js";
import { SUBPROTOCOL } from "../src/api/frames.js";
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
  ws.authenticate("alice", true);
  await p;
  return { conn, ws };
}

describe("the connection", () => {
  it("offers the binary subprotocol and authenticates with its first frame", async () => {
    const { conn, ws } = await connected();
    expect(ws.protocols).toEqual([SUBPROTOCOL]);
    expect(ws.binaryType).toBe("arraybuffer");
    expect(ws.sent[0]).toMatchObject({ kind: "authenticate", body: { token: "tok" } });
    expect(conn.player).toBe("alice");
    expect(conn.guest).toBe(true);
    expect(ws.unreadable).toEqual([]);
  });

  it("matches answers to requests by id, whatever their order", async () => {
    const { conn, ws } = await connected();
    const game = conn.request("getGame", { gameId: "g" });
    const games = conn.request("listMyGames", { activeOnly: true });
    const rating = conn.request("getMyRating", {});
    await vi.advanceTimersByTimeAsync(0);
    const [ga, lg, gr] = [ws.last("getGame")!, ws.last("listMyGames")!, ws.last("getMyRating")!];
    expect(ga.body).toEqual({ gameId: "g" });
    expect(lg.body).toEqual({ activeOnly: true });
    expect(new Set([ga.id, lg.id, gr.id]).size, "each request has an id of its own").toBe(3);
    // Answered last first, two of them in one frame.
    ws.push(
      { answer: { requestId: gr.id, getMyRating: { rating: { rating: 1500, games: 3 } } } },
      { answer: { requestId: lg.id, listMyGames: { games: [{ gameId: "g2" }] } } },
    );
    ws.answer(ga, { getGame: { game: { gameId: "g", version: "4" } } });
    await expect(game).resolves.toEqual({ game: { gameId: "g", version: "4" } });
    await expect(games).resolves.toEqual({ games: [{ gameId: "g2" }] });
    await expect(rating).resolves.toEqual({ rating: { rating: 1500, games: 3 } });
  });

  it("hands an action its ActionResult, the acknowledgment with the version to wait for", async () => {
    const { conn, ws } = await connected();
    const played = conn.request("play", { context: { gameId: "g", idempotencyKey: "k", expectedVersion: "7" }, move: { from: "A6", to: "A7" } });
    await vi.advanceTimersByTimeAsync(0);
    const play = ws.last("play")!;
    // 64-bit fields travel as numbers and come back in proto JSON as strings.
    expect(play.body).toEqual({ context: { gameId: "g", idempotencyKey: "k", expectedVersion: "7" }, move: { from: "A6", to: "A7" } });
    ws.answer(play, { action: { version: "8", events: [{ gameId: "g", seq: "8", drawOffered: { side: "SIDE_SOUTH" } }] } });
    await expect(played).resolves.toEqual({ version: "8", events: [{ gameId: "g", seq: "8", drawOffered: { side: "SIDE_SOUTH" } }] });
  });

  it("surfaces a refusal with its code's name and its stable reason", async () => {
    const { conn, ws } = await connected();
    const a = conn.request("play", { context: { gameId: "g", idempotencyKey: "k" }, move: { from: "A6", to: "A7" } });
    const b = conn.request("getGame", { gameId: "g" });
    await vi.advanceTimersByTimeAsync(0);
    ws.refuse(ws.last("play")!, 9, "NOT_YOUR_TURN", "it is north's turn");
    await expect(a).rejects.toBeInstanceOf(ServerError);
    await expect(a).rejects.toMatchObject({ code: "FAILED_PRECONDITION", reason: "NOT_YOUR_TURN", message: "it is north's turn" });
    // The other request is still waiting for its own answer.
    let settled = false;
    void b.then(() => (settled = true), () => (settled = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(settled).toBe(false);
    ws.refuse(ws.last("getGame")!, 5, "GAME_NOT_FOUND");
    await expect(b).rejects.toMatchObject({ code: "NOT_FOUND", reason: "GAME_NOT_FOUND" });
  });

  it("refuses an answer of the wrong kind as a message it cannot read", async () => {
    const { conn, ws } = await connected();
    const a = conn.request("getGame", { gameId: "g" });
    await vi.advanceTimersByTimeAsync(0);
    ws.answer(ws.last("getGame")!, { listMyGames: {} });
    await expect(a).rejects.toMatchObject({ reason: "BAD_MESSAGE" });
  });

  it("refuses a request the generated code does not know, and sends nothing", async () => {
    const { conn, ws } = await connected();
    const before = ws.sent.length;
    await expect(conn.request("play", { bogus: 1 } as never)).rejects.toThrow();
    expect(ws.sent.length).toBe(before);
  });

  it("skips a frame that is not a ConnectResponse, and goes on", async () => {
    const { conn, ws } = await connected();
    const a = conn.request("getGame", { gameId: "g" });
    await vi.advanceTimersByTimeAsync(0);
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    ws.onmessage?.({ data: new Uint8Array([0xff, 0xff, 0xff]).buffer });
    ws.onmessage?.({ data: '{"type":"result"}' });
    expect(warn).toHaveBeenCalledTimes(2);
    warn.mockRestore();
    ws.answer(ws.last("getGame")!, { getGame: {} });
    await expect(a).resolves.toEqual({});
  });

  it("reports a refused token and stops reconnecting", async () => {
    const conn = new Connection("ws://x/v1/ws", () => "bad");
    let failed: ServerError | null = null;
    conn.onAuthFailed = (e) => {
      failed = e;
    };
    const p = conn.connect();
    const ws = FakeSocket.all[0]!;
    ws.open();
    ws.refuse(ws.last("authenticate")!, 16, "TOKEN_INVALID", "x");
    await expect(p).rejects.toMatchObject({ reason: "TOKEN_INVALID", code: "UNAUTHENTICATED" });
    expect(failed).not.toBeNull();
    ws.close();
    await vi.advanceTimersByTimeAsync(60000);
    expect(FakeSocket.all.length).toBe(1);
  });

  it("takes a refusal the server could not give an id (0) before the sign-in as the sign-in's", async () => {
    const conn = new Connection("ws://x/v1/ws", () => "tok");
    const p = conn.connect();
    const ws = FakeSocket.all[0]!;
    ws.open();
    ws.refuse("0", 16, "NOT_AUTHENTICATED", "the first frame must authenticate");
    await expect(p).rejects.toMatchObject({ reason: "NOT_AUTHENTICATED" });
  });

  it("does not talk to a server that did not choose the subprotocol", async () => {
    const conn = new Connection("ws://x/v1/ws", () => "tok");
    const p = conn.connect();
    const ws = FakeSocket.all[0]!;
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    ws.open("");
    expect(ws.sent, "not even the token").toEqual([]);
    expect(ws.readyState).toBe(3);
    await expect(p).rejects.toMatchObject({ reason: "CONNECTION_LOST" });
    error.mockRestore();
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

  it("fails the requests in flight with CONNECTION_LOST when the socket drops", async () => {
    const { conn, ws } = await connected();
    const a = conn.request("getGame", { gameId: "g" });
    await vi.advanceTimersByTimeAsync(0);
    ws.close();
    await expect(a).rejects.toMatchObject({ reason: "CONNECTION_LOST" });
  });

  it("opens no socket for a request made while the connection is lost: it waits for the scheduled reconnect", async () => {
    const { conn, ws } = await connected();
    ws.close();
    expect(FakeSocket.all.length).toBe(1);
    // the game screen's periodic refresh and a click, while the server is away
    const a = conn.request("getGame", { gameId: "g" });
    const b = conn.request("listMyGames", { activeOnly: true });
    await vi.advanceTimersByTimeAsync(0);
    expect(FakeSocket.all.length, "a request opened a socket of its own").toBe(1);
    await vi.advanceTimersByTimeAsync(RECONNECT_LONGEST_MS);
    expect(FakeSocket.all.length, "one socket, the schedule's").toBe(2);
    const ws2 = FakeSocket.all[1]!;
    ws2.open();
    ws2.authenticate();
    await vi.advanceTimersByTimeAsync(0);
    ws2.answer(ws2.last("getGame")!, { getGame: {} });
    ws2.answer(ws2.last("listMyGames")!, { listMyGames: {} });
    await expect(a).resolves.toEqual({});
    await expect(b).resolves.toEqual({});
  });

  it("fails a request with CONNECTION_LOST when the scheduled attempt fails, and goes on at the schedule's pace", async () => {
    const { conn, ws } = await connected();
    const opened: number[] = [];
    const start = Date.now();
    ws.close();
    const failed = conn.request("getGame", { gameId: "g" });
    failed.catch(() => {});
    // A long outage: every attempt fails at once; the page asks for the view every 4 s meanwhile.
    for (let t = 0; t < 60_000; t += 250) {
      if (t % 4000 === 0) conn.request("getGame", { gameId: "g" }).catch(() => {});
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
    conn.followGame({ gameId: "g", spectate: false, nextSeq: () => 7, onEvent: () => {}, onResumed: () => resumed++ });
    const ws = FakeSocket.all[0]!;
    ws.open();
    ws.authenticate();
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
    last.authenticate();
    await vi.advanceTimersByTimeAsync(0);
    expect(resumed).toBe(1);
    expect(last.last("follow")?.body).toEqual({ gameId: "g", fromSeq: "7" });
    expect(states[0]).toBe("connecting");
    expect(states.slice(1).filter((s) => s !== "lost")).toEqual(["open", "open"]);
    expect(states.indexOf("connecting", 1), "no 'connecting' flicker during the outage").toBe(-1);
  });
});
