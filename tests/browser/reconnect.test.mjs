// A server outage as a player's browser lives it: mid-game, the server is killed (SIGKILL, no
// drain) and, after a long enough outage for the page to reach its longest reconnect wait,
// started again on the same ports and the same database. The page must say that the connection
// is lost, try again only on its own schedule (not once per request), be back within seconds of
// the server, say so, read the game's view again (once), and play on.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Person, clickAMove, freePort, freshDatabase, launchBrowser, rng, startServer } from "./harness.mjs";

/** The page's longest reconnect wait (web/src/api/ws.ts, RECONNECT_LONGEST_MS). */
const LONGEST_WAIT_MS = 3_000;

/** Polls `condition` (every 50 ms) until it holds; fails with `what` after `timeout` ms. */
async function until(condition, what, timeout = 30_000) {
  const deadline = Date.now() + timeout;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("a killed and restarted server: the page shows the connection lost, then back within seconds, and plays on", async (t) => {
  const database = freshDatabase("reconnect");
  if (database.missing) {
    // The games must outlive the process, so this needs Postgres (scripts/test provides it).
    // In CI a missing Postgres fails the test; a developer without one is told and skips it.
    if (process.env.CI) throw new Error(`this test needs Postgres: ${database.missing}`);
    t.skip(database.missing);
    return;
  }
  const ports = { grpc: await freePort(), internal: await freePort(), http: await freePort(), metrics: await freePort() };
  const server = await startServer([], { ports, env: { DATABASE_URL: database.url } });
  const browser = await launchBrowser();
  const ann = await Person.open(browser, "ann");
  // Every WebSocket the page opens (a reconnect attempt is one, whether or not it connects).
  const sockets = [];
  ann.page.on("websocket", () => sockets.push(Date.now()));
  const status = ann.page.locator('[data-field="connection"]');
  try {
    await ann.signInAsGuest(server.url);
    await ann.page.locator('[data-action="play-computer"]').click();
    await ann.waitForGame("phase", "deployment");
    await ann.page.locator('[data-action="confirm"]').click();
    await ann.waitForGame("phase", "play");
    const gameId = ann.gameId();
    assert.equal(await status.isHidden(), true, "nothing to say while connected");

    // The server dies: the page says so at once.
    await server.kill();
    const killedAt = Date.now();
    await ann.page.locator('[data-field="connection"][data-state="lost"]').waitFor({ timeout: 10_000 });
    assert.match(await status.textContent(), /Connection lost/);
    assert.equal(await status.isVisible(), true);

    // A long outage: the page tries again and again, each wait no longer than 3 s.
    const before = sockets.length;
    await until(() => sockets.length >= before + 6, "the page tried six times", 60_000);
    const attempts = sockets.slice(before);
    const gaps = attempts.map((at, i) => at - (i === 0 ? killedAt : attempts[i - 1]));
    assert.ok(
      Math.max(...gaps.slice(1)) <= LONGEST_WAIT_MS + 1_000,
      `waits between attempts (ms): ${gaps.join(", ")}`,
    );
    // Requests meanwhile open no socket of their own: at most one attempt per 375 ms (the
    // shortest jittered wait), the schedule's pace.
    assert.ok(Math.min(...gaps.slice(1)) >= 300, `waits between attempts (ms): ${gaps.join(", ")}`);
    assert.match(await status.textContent(), /Connection lost/, "the banner stays for the whole outage");

    // The server is back on the same ports: so is the page, within seconds, and it says so.
    const framesBefore = ann.frames.length;
    await server.restart();
    const backAt = Date.now();
    await ann.page.locator('[data-field="connection"][data-state="restored"]').waitFor({ timeout: 15_000 });
    const took = Date.now() - backAt;
    console.log(`reconnect: the page was back ${took} ms after the server listened again; waits ${gaps.join(", ")} ms`);
    assert.ok(took <= LONGEST_WAIT_MS + 1_500, `back ${took} ms after the server`);
    assert.match(await status.textContent(), /Reconnected/);
    // It read the game's view again (the clocks shown are the server's) and followed the game again.
    await until(
      () => ann.frames.slice(framesBefore).some((f) => f.answer?.getGame?.game?.gameId === gameId),
      "the page read the game's view again",
      10_000,
    );
    // The notice goes away by itself.
    await ann.page.locator('[data-field="connection"][data-state="open"]').waitFor({ state: "attached", timeout: 10_000 });
    assert.equal(await status.isHidden(), true);

    // And the game goes on where it was.
    assert.equal(ann.gameId(), gameId);
    await ann.waitForGame("turn", ["mine"], 60_000);
    const move = await clickAMove(ann, rng(7));
    assert.ok(move, "a move was played after the restart");
    // The view was read when the game opened and once after the reconnection; the move after it
    // was followed from the stream.
    const reads = ann.sent.filter((f) => f.getGame?.gameId === gameId).length;
    assert.equal(reads, 2, "getGame: once at the opening, once after the reconnection");
    const follows = ann.sent.filter((f) => f.follow?.gameId === gameId).length;
    assert.equal(follows, 2, "the game followed at the opening, and again on the new socket");

    // Beyond the browser's own reports of the refused sockets, the page showed no errors.
    const errors = ann.errors.filter((e) => !/WebSocket connection to .* failed/.test(e));
    assert.deepEqual(errors, []);
  } finally {
    await ann.close();
    await browser.close();
    await server.stop();
    database.drop();
  }
});
