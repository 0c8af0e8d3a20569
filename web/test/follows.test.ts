import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Connection, RECONNECT_LONGEST_MS, type ServerError } from "../src/api/ws.js";
import { GameLog } from "../src/state/game.js";
import type { GameEventJson, GameStatusJson } from "../src/gen/hiddenfront/v1/game_pb.js";
import type { LobbyEventJson } from "../src/gen/hiddenfront/v1/matchmaking_pb.js";
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
  ws.authenticate();
  await p;
  return { conn, ws };
}

/** The next socket of the reconnect schedule, opened and authenticated. */
async function nextSocket(): Promise<FakeSocket> {
  const before = FakeSocket.all.length;
  await vi.advanceTimersByTimeAsync(RECONNECT_LONGEST_MS);
  expect(FakeSocket.all.length, "the schedule opened one socket").toBe(before + 1);
  const ws = FakeSocket.all.at(-1)!;
  ws.open();
  ws.authenticate();
  await vi.advanceTimersByTimeAsync(0);
  return ws;
}

/** A game's subscriber that keeps its events in a log, as the game screen does. */
function follower(gameId: string, o: { spectate?: boolean; statuses?: boolean } = {}) {
  const log = new GameLog();
  const seqs: string[] = [];
  const statuses: GameStatusJson[] = [];
  const errors: ServerError[] = [];
  let ended = 0;
  const s = {
    gameId,
    spectate: o.spectate ?? false,
    nextSeq: () => log.nextSeq(),
    onEvent: (e: GameEventJson) => {
      if (log.add(e)) seqs.push(e.seq ?? "");
    },
    onEnd: () => ended++,
    onError: (e: ServerError) => errors.push(e),
    ...(o.statuses ? { onStatus: (st: GameStatusJson) => statuses.push(st) } : {}),
  };
  return { s, log, seqs, statuses, errors, ended: () => ended };
}

const ev = (gameId: string, seq: number, extra: Partial<GameEventJson> = { drawOffered: { side: "SIDE_SOUTH" } }): GameEventJson => ({
  gameId,
  seq: String(seq),
  ...extra,
});

describe("following games on one connection", () => {
  it("follows each game by its id, with status items when the subscriber takes them", async () => {
    const { conn, ws } = await connected();
    conn.followGame(follower("g1", { statuses: true }).s);
    conn.followGame(follower("g2", { spectate: true }).s);
    expect(ws.all("follow").map((r) => r.body)).toEqual([
      { gameId: "g1", fromSeq: "1", withStatus: true },
      { gameId: "g2", fromSeq: "1", spectate: true },
    ]);
  });

  it("routes events and status items to the follow of their game", async () => {
    const { conn, ws } = await connected();
    const one = follower("g1", { statuses: true });
    const two = follower("g2", { statuses: true });
    conn.followGame(one.s);
    conn.followGame(two.s);
    ws.followed("g1");
    ws.followed("g2");
    // One frame mixing both games, and a game nobody follows.
    ws.push({ event: ev("g1", 1) }, { event: ev("g2", 1) }, { event: ev("g2", 2) }, { event: ev("g3", 1) }, { event: ev("g1", 3) });
    ws.status("g2", { version: "2", southConnected: true });
    ws.status("g9", { version: "5" });
    expect(one.seqs).toEqual(["1", "3"]);
    expect(two.seqs).toEqual(["1", "2"]);
    expect(one.statuses).toEqual([]);
    expect(two.statuses).toEqual([{ version: "2", southConnected: true }]);
    expect(one.log.events.every((e) => e.gameId === "g1")).toBe(true);
  });

  it("hands nothing of a game over before its follow is answered (it belongs to an earlier follow)", async () => {
    const { conn, ws } = await connected();
    const first = follower("g1");
    const stop = conn.followGame(first.s);
    ws.followed("g1");
    ws.event(ev("g1", 1));
    stop();
    expect(ws.last("unfollow")?.body).toEqual({ gameId: "g1" });
    const second = follower("g1");
    conn.followGame(second.s);
    // Still on its way from the first follow, before the second's answer.
    ws.event(ev("g1", 2));
    expect(first.seqs).toEqual(["1"]);
    expect(second.seqs).toEqual([]);
    // The answer and the events of the second follow in one frame: the events count.
    const follow = ws.last("follow")!;
    ws.push({ answer: { requestId: follow.id, followed: { gameId: "g1" } } }, { event: ev("g1", 1) }, { event: ev("g1", 2) });
    expect(second.seqs).toEqual(["1", "2"]);
  });

  it("surfaces a refused follow with its reason, and a follow the server stops later", async () => {
    const { conn, ws } = await connected();
    const denied = follower("g1");
    conn.followGame(denied.s);
    ws.refuse(ws.last("follow")!, 7, "NOT_SEATED", "not your game");
    expect(denied.errors.map((e) => [e.code, e.reason])).toEqual([["PERMISSION_DENIED", "NOT_SEATED"]]);
    const broken = follower("g2");
    conn.followGame(broken.s);
    const follow = ws.followed("g2");
    ws.event(ev("g2", 1));
    // The follow could not go on upstream: refused under its request id, after its answer.
    ws.refuse(follow.id, 14, "SESSION_UNAVAILABLE");
    ws.event(ev("g2", 2));
    expect(broken.errors.map((e) => e.reason)).toEqual(["SESSION_UNAVAILABLE"]);
    expect(broken.seqs, "nothing after the follow stopped").toEqual(["1"]);
  });

  it("ends a follow with the game's end: not made again on the next socket, and told", async () => {
    const { conn, ws } = await connected();
    const f = follower("g1");
    conn.followGame(f.s);
    ws.followed("g1");
    ws.event(ev("g1", 9, { resigned: { side: "SIDE_NORTH" } }));
    ws.event(ev("g1", 10, { ended: { outcome: { winner: "SIDE_SOUTH" } } }));
    expect(f.ended()).toBe(1);
    ws.close();
    const ws2 = await nextSocket();
    expect(ws2.all("follow")).toEqual([]);
  });

  it("follows a game again from the position a Reconnect names, on the same socket", async () => {
    const { conn, ws } = await connected();
    const f = follower("g1", { statuses: true });
    const other = follower("g2");
    conn.followGame(f.s);
    conn.followGame(other.s);
    ws.followed("g1");
    ws.followed("g2");
    for (const seq of [1, 2, 4]) ws.event(ev("g1", seq));
    ws.push({ reconnect: { gameId: "g1", resumeFromSeq: "5", reason: "this connection fell too far behind" } });
    // The follow is stopped: nothing of it is handed over until it is made again.
    ws.event(ev("g1", 5));
    expect(f.seqs).toEqual(["1", "2", "4"]);
    await vi.advanceTimersByTimeAsync(RECONNECT_LONGEST_MS);
    const again = ws.all("follow").filter((r) => r.body.gameId === "g1");
    expect(again.map((r) => r.body.fromSeq)).toEqual(["1", "5"]);
    expect(again[1]!.body).toEqual({ gameId: "g1", fromSeq: "5", withStatus: true });
    expect(ws.all("follow").filter((r) => r.body.gameId === "g2").length, "the other game's follow goes on").toBe(1);
    expect(FakeSocket.all.length, "the connection stays open").toBe(1);
    ws.followed("g1");
    ws.event(ev("g1", 5));
    expect(f.seqs).toEqual(["1", "2", "4", "5"]);
  });

  it("never follows again past what the page holds, and drops what it holds twice", async () => {
    const { conn, ws } = await connected();
    const f = follower("g1");
    conn.followGame(f.s);
    ws.followed("g1");
    ws.event(ev("g1", 1));
    ws.event(ev("g1", 2));
    // A resume point ahead of what the page holds would skip seq 3: the page's own is taken.
    ws.push({ reconnect: { gameId: "g1", resumeFromSeq: "4" } });
    await vi.advanceTimersByTimeAsync(RECONNECT_LONGEST_MS);
    expect(ws.last("follow")!.body.fromSeq).toBe("3");
    ws.followed("g1");
    // One behind: seq 2 comes again and is dropped.
    ws.push({ reconnect: { gameId: "g1", resumeFromSeq: "2" } });
    await vi.advanceTimersByTimeAsync(RECONNECT_LONGEST_MS);
    expect(ws.last("follow")!.body.fromSeq).toBe("2");
    ws.followed("g1");
    ws.event(ev("g1", 2));
    ws.event(ev("g1", 3));
    expect(f.seqs).toEqual(["1", "2", "3"]);
  });

  it("turns a Goodbye into follows from the positions it names on the next socket, the lobby's too", async () => {
    const { conn, ws } = await connected();
    const one = follower("g1", { statuses: true });
    const two = follower("g2", { spectate: true });
    const lobby: LobbyEventJson[] = [];
    let lobbySeen = 7;
    conn.followGame(one.s);
    conn.followGame(two.s);
    conn.followLobby({ afterSeq: () => lobbySeen, onEvent: (e) => lobby.push(e) });
    ws.followed("g1");
    ws.followed("g2");
    ws.lobbyFollowed();
    ws.event(ev("g1", 1));
    ws.event(ev("g1", 2));
    ws.event(ev("g2", 1));
    for (const seq of ["8", "9"]) ws.lobby({ seq, ticketExpired: { ticketId: "t" } });
    lobbySeen = 9;
    // Shutting down: the batch ends with the goodbye, then the close.
    ws.push(
      { event: ev("g1", 3) },
      {
        goodbye: {
          reason: "SHUTTING_DOWN",
          message: "this gateway is shutting down",
          games: [
            { gameId: "g1", resumeFromSeq: "4" },
            // Behind what the page holds (seq 1): the page follows from there and drops the repeat.
            { gameId: "g2", resumeFromSeq: "1" },
          ],
          lobbyAfterSeq: "8",
        },
      },
    );
    // Nothing is handed over between the goodbye and the close.
    ws.event(ev("g1", 4));
    ws.close();
    const ws2 = await nextSocket();
    const follows = Object.fromEntries(ws2.all("follow").map((r) => [r.body.gameId as string, r.body]));
    expect(follows).toEqual({
      g1: { gameId: "g1", fromSeq: "4", withStatus: true },
      g2: { gameId: "g2", fromSeq: "1", spectate: true },
    });
    expect(ws2.last("followLobby")?.body).toEqual({ afterSeq: "8" });
    ws2.followed("g1");
    ws2.followed("g2");
    ws2.event(ev("g1", 4));
    ws2.event(ev("g2", 1));
    ws2.event(ev("g2", 2));
    expect(one.seqs).toEqual(["1", "2", "3", "4"]);
    expect(two.seqs).toEqual(["1", "2"]);
    expect(lobby.map((e) => e.seq)).toEqual(["8", "9"]);
  });

  it("uses a Goodbye's position once: a later loss resumes from the page's own", async () => {
    const { conn, ws } = await connected();
    const f = follower("g1");
    conn.followGame(f.s);
    ws.followed("g1");
    ws.event(ev("g1", 1));
    ws.push({ goodbye: { reason: "TOO_SLOW", games: [{ gameId: "g1", resumeFromSeq: "1" }] } });
    ws.close();
    const ws2 = await nextSocket();
    expect(ws2.last("follow")!.body.fromSeq).toBe("1");
    ws2.followed("g1");
    ws2.event(ev("g1", 1));
    ws2.event(ev("g1", 2));
    ws2.close();
    const ws3 = await nextSocket();
    expect(ws3.last("follow")!.body.fromSeq).toBe("3");
    expect(f.seqs).toEqual(["1", "2"]);
  });

  it("stops a follow with unfollow, the lobby's with unfollow lobby", async () => {
    const { conn, ws } = await connected();
    const f = follower("g1");
    const stop = conn.followGame(f.s);
    const lobby: LobbyEventJson[] = [];
    const stopLobby = conn.followLobby({ afterSeq: () => 0, onEvent: (e) => lobby.push(e) });
    ws.followed("g1");
    ws.lobbyFollowed();
    stop();
    stopLobby();
    expect(ws.all("unfollow").map((r) => r.body)).toEqual([{ gameId: "g1" }, { lobby: true }]);
    ws.event(ev("g1", 1));
    ws.lobby({ seq: "1", inviteExpired: { code: "C" } });
    expect(f.seqs).toEqual([]);
    expect(lobby).toEqual([]);
    // Stopped follows are not made again on the next socket.
    ws.close();
    const ws2 = await nextSocket();
    expect(ws2.all("follow")).toEqual([]);
    expect(ws2.all("followLobby")).toEqual([]);
  });

  it("starts a follow asked for before the first socket once it is authenticated", async () => {
    const conn = new Connection("ws://x/v1/ws", () => "tok");
    conn.followGame(follower("g1").s);
    const ws = FakeSocket.all[0]!;
    expect(ws, "subscribing opened the first socket").toBeDefined();
    ws.open();
    expect(ws.all("follow"), "nothing before the sign-in is answered").toEqual([]);
    ws.authenticate();
    expect(ws.all("follow").map((r) => r.body.gameId)).toEqual(["g1"]);
    expect(ws.sent.map((r) => r.kind)).toEqual(["authenticate", "follow"]);
  });
});
