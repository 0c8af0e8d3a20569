// The page speaks Connect's binary subprotocol: the upgrade of its one WebSocket offers
// `hiddenfront.connect.v1` and the server chooses it (as the browser's own network log shows it,
// through the DevTools protocol), every frame after the upgrade, either way, is binary and reads
// as a whole ConnectRequest or ConnectResponse with the generated types, the first frame
// authenticates, and each request the page makes through a game against the computer is the
// Connect message it should be, answered under its own id.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Person, clickAMove, rng, serverAndBrowser, waitForReply } from "./harness.mjs";
import { SUBPROTOCOL } from "./proto.mjs";

const seed = Number(process.env.HF_BROWSER_SEED ?? Date.now() % 100_000);
const shared = serverAndBrowser();

/** A header's value in a DevTools header object, whatever the case of its name. */
const header = (headers, name) => Object.entries(headers ?? {}).find(([key]) => key.toLowerCase() === name)?.[1];

/** Polls `condition` (every 50 ms) until it holds; fails with `what` after `timeout` ms. */
async function until(condition, what, timeout = 10_000) {
  const deadline = Date.now() + timeout;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The request field a ConnectRequest in proto3 JSON holds (`play`, `follow`, ...). */
const kind = (request) => Object.keys(request).find((key) => key !== "requestId");

test("the page's WebSocket speaks hiddenfront.connect.v1: binary frames only, each a whole Connect message", async () => {
  const fay = await Person.open(shared.browser, "fay");
  // The browser's own record of each WebSocket handshake.
  const handshakes = new Map();
  const devtools = await fay.context.newCDPSession(fay.page);
  await devtools.send("Network.enable");
  devtools.on("Network.webSocketCreated", ({ requestId, url }) => handshakes.set(requestId, { url }));
  devtools.on("Network.webSocketWillSendHandshakeRequest", ({ requestId, request }) => {
    handshakes.set(requestId, { ...handshakes.get(requestId), offered: header(request.headers, "sec-websocket-protocol") });
  });
  devtools.on("Network.webSocketHandshakeResponseReceived", ({ requestId, response }) => {
    handshakes.set(requestId, { ...handshakes.get(requestId), status: response.status, chosen: header(response.headers, "sec-websocket-protocol") });
  });
  try {
    const player = await fay.signInAsGuest(shared.server.url);
    await fay.page.locator('[data-action="play-computer"]').click();
    await fay.waitForGame("phase", "deployment");
    const gameId = fay.gameId();
    await fay.page.locator('[data-action="confirm"]').click();
    await fay.waitForGame("phase", "play");
    const bot = (await fay.attribute("data-seat")) === "south" ? "north" : "south";
    const random = rng(seed + 11);
    for (let reply = 0; reply < 2 && (await fay.attribute("data-phase")) === "play"; reply++) {
      await fay.waitForGame("turn", ["mine"], 30_000);
      const rows = await fay.page.locator('[data-field="moves"] li').count();
      assert.ok(await clickAMove(fay, random, { quiet: true }), "a piece can move");
      assert.ok(await waitForReply(fay, rows, bot), "the computer's reply is shown");
    }

    // One WebSocket, to /v1/ws, upgraded with the binary subprotocol.
    const sockets = [...handshakes.values()];
    assert.equal(sockets.length, 1, `one WebSocket for the page's life: ${JSON.stringify(sockets)}`);
    const [socket] = sockets;
    assert.equal(new URL(socket.url).pathname, "/v1/ws");
    assert.equal(socket.status, 101, "the upgrade succeeded");
    assert.equal(socket.offered, SUBPROTOCOL, "the page offers the binary subprotocol");
    assert.equal(socket.chosen, SUBPROTOCOL, "the server chose it");

    // Every frame after the upgrade is binary, and reads as a whole Connect message.
    const counts = fay.frameCounts;
    assert.deepEqual({ received: counts.received.text, sent: counts.sent.text }, { received: 0, sent: 0 }, "no text frame either way");
    assert.ok(counts.sent.binary >= 6 && counts.received.binary >= 6, `binary frames: ${JSON.stringify(counts)}`);
    assert.equal(fay.sent.length, counts.sent.binary, "each frame the page sent is one ConnectRequest");
    assert.ok(fay.frames.length >= counts.received.binary, "each frame received holds at least one ServerMessage");
    assert.deepEqual(fay.errors, [], "every frame was read, and the page showed no error");

    // The first frame authenticates, and its answer names the player signed in.
    assert.equal(kind(fay.sent[0]), "authenticate");
    assert.ok(fay.sent[0].authenticate.token, "the token travels in the first frame");
    const signedIn = fay.frames[0]?.answer;
    assert.equal(signedIn?.requestId, fay.sent[0].requestId, "the first message answers the first frame");
    assert.equal(signedIn?.authenticate?.player, player, "as the player the page shows");

    // The requests are Connect's: the lobby followed and unfollowed, the game followed with its
    // status, the view read, the computer's game made, the deployment confirmed, moves played.
    const kinds = fay.sent.map(kind);
    for (const wanted of ["followLobby", "listMyGames", "playComputer", "unfollow", "follow", "getGame", "confirm", "play"]) {
      assert.ok(kinds.includes(wanted), `the page sent ${wanted}: ${kinds.join(", ")}`);
    }
    assert.deepEqual(fay.sent.find((r) => r.unfollow)?.unfollow, { lobby: true }, "the lobby is unfollowed when the game opens");
    const follow = fay.sent.find((r) => r.follow)?.follow;
    assert.equal(follow?.gameId, gameId);
    assert.equal(follow?.withStatus, true);
    assert.ok(fay.frames.some((m) => m.event?.gameId === gameId), "the game's events came on its follow");
    assert.ok(fay.frames.some((m) => m.status?.gameId === gameId), "and its status items");

    // Every request has an id of its own, is answered (or refused) under it, and every answer or
    // refusal names a request the page sent.
    const ids = fay.sent.map((r) => r.requestId);
    assert.equal(new Set(ids).size, ids.length, "no id is used twice");
    const replies = () => new Set(fay.frames.map((m) => m.answer?.requestId ?? m.refusal?.requestId).filter((id) => id !== undefined));
    await until(() => ids.every((id) => replies().has(id)), `every request is answered: ${ids.filter((id) => !replies().has(id))}`);
    for (const id of replies()) assert.ok(ids.includes(id), `an answer to request ${id}, which the page did not send`);
    const plays = fay.sent.filter((r) => r.play);
    assert.ok(plays.length >= 2, `${plays.length} moves played`);
    for (const play of plays) {
      const answer = fay.frames.find((m) => m.answer?.requestId === play.requestId)?.answer;
      assert.ok(answer?.action?.version, `the move ${JSON.stringify(play.play.move)} was acknowledged with its version`);
    }
  } finally {
    await devtools.detach().catch(() => {});
    await fay.close();
  }
});
