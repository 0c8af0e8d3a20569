// A game an organiser pairs (docs/organisers.md) opens by itself on both players' pages: two
// guests wait in the lobby, an operator makes a bulk pairing them with `hidden-front organiser
// bulk create` (the real CLI against the real server's internal port), and at its start both
// pages go to the same game without a click, each in its own seat. Likewise an open tournament's
// first round, whose pairing the lobby then shows as pushed on the player's stream.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Person, freePort, launchBrowser, serverBinary, startServer } from "./harness.mjs";

const TOKEN = "browser-league-token-0123456789abcdef";
/** Ids of this run: the server may share a database with earlier runs (scripts/test sets DATABASE_URL). */
const RUN = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
const BULK = `browser-league-${RUN}`;
const CUP = `browser-cup-${RUN}`;

let server;
let browser;
let internal;

before(async () => {
  const ports = { grpc: await freePort(), internal: await freePort(), http: await freePort(), metrics: await freePort() };
  internal = `http://127.0.0.1:${ports.internal}`;
  server = await startServer(["--admin-token", `league=${TOKEN}`], { ports });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test("a game an organiser pairs opens by itself on both players' pages", async () => {
  const ann = await Person.open(browser, "ann");
  const bob = await Person.open(browser, "bob");
  try {
    const annId = await ann.signInAsGuest(server.url);
    const bobId = await bob.signInAsGuest(server.url);
    // Both are in the lobby, following it.
    for (const person of [ann, bob]) {
      await person.page.locator('[data-action="play-computer"]').waitFor();
    }
    const dir = mkdtempSync(join(tmpdir(), "hf-organised-"));
    const pairs = join(dir, "pairs.txt");
    writeFileSync(pairs, `# board 1\n${annId} ${bobId}\n`);
    const { stdout } = await promisify(execFile)(serverBinary(), [
      "organiser", "bulk", "create",
      "--id", BULK,
      "--pairs", pairs,
      "--start-in", "1",
      "--matchmaking-url", internal,
      "--admin-token", TOKEN,
    ]);
    const bulk = JSON.parse(stdout);
    assert.equal(bulk.bulkId, BULK);
    assert.equal(bulk.games.length, 1);
    assert.equal(bulk.games[0].southPlayer, annId);

    // No click: the pages open the game when it exists.
    await ann.waitForGame("phase", "deployment");
    await bob.waitForGame("phase", "deployment");
    assert.equal(ann.gameId(), bob.gameId(), "one game for both");
    assert.equal(await ann.attribute("data-seat"), "south");
    assert.equal(await bob.attribute("data-seat"), "north");

    const { stdout: shown } = await promisify(execFile)(serverBinary(), [
      "organiser", "bulk", "show", BULK,
      "--matchmaking-url", internal,
      "--admin-token", TOKEN,
    ]);
    const followed = JSON.parse(shown);
    assert.equal(followed.games[0].gameId, ann.gameId());
    assert.equal(followed.games[0].state, "BULK_GAME_STATE_PLAYING");
    assert.deepEqual([...ann.errors, ...bob.errors], []);
  } finally {
    await ann.close();
    await bob.close();
  }
});

test("two guests join an open tournament by clicking, and its first round opens by itself", async () => {
  const ann = await Person.open(browser, "ann");
  const bob = await Person.open(browser, "bob");
  try {
    const { stdout } = await promisify(execFile)(serverBinary(), [
      "organiser", "tournament", "create",
      "--id", CUP,
      "--format", "swiss", "--rounds", "1",
      "--open",
      "--start-in", "12",
      "--matchmaking-url", internal,
      "--admin-token", TOKEN,
    ]);
    assert.equal(JSON.parse(stdout).state, "TOURNAMENT_STATE_SCHEDULED");
    const ids = [];
    for (const person of [ann, bob]) {
      ids.push(await person.signInAsGuest(server.url));
      const line = person.page.locator(`[data-tournament-id="${CUP}"]`);
      await line.locator('[data-action="join-tournament"]').click();
      await person.page.locator(`[data-tournament-id="${CUP}"][data-joined="true"]`).waitFor();
    }
    // At the start the round is paired from the two who joined; no click opens the game.
    await ann.waitForGame("phase", "deployment", 60_000);
    await bob.waitForGame("phase", "deployment", 60_000);
    assert.equal(ann.gameId(), bob.gameId(), "one game for both");
    // Back in the lobby, the standings pushed at the pairing name each one's game of round 1.
    for (const [person, opponent] of [[ann, ids[1]], [bob, ids[0]]]) {
      await person.page.locator('a[href="/"]').first().click();
      const next = person.page.locator(`[data-tournament-id="${CUP}"] [data-field="next-game"]`);
      await next.waitFor();
      assert.equal(await next.textContent(), `Round 1: you play ${opponent}`);
    }
    assert.deepEqual([...ann.errors, ...bob.errors], []);
  } finally {
    await ann.close();
    await bob.close();
  }
});
