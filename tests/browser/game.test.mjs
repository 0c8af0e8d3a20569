// Whole games in a real browser against the real server: two people and a spectator, an invite
// link, deployment, a complete game played by clicking the squares the page highlights, a reload
// mid-game, and a game against the computer. Every WebSocket frame each page received is searched
// for what the rules hide.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Person, launchBrowser, leaks, playToTheEnd, rng, startServer } from "./harness.mjs";

const seed = Number(process.env.HF_BROWSER_SEED ?? Date.now() % 100_000);
console.log(`browser tests: seed ${seed} (HF_BROWSER_SEED=${seed} repeats it)`);

let server;
let browser;

before(async () => {
  server = await startServer();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Every move list entry the page shows, as text. */
async function moveList(person) {
  return person.page.locator('[data-field="moves"] li').allTextContents();
}

/** The flag codes of both families: the only opponent code the rules may show before the end. */
const FLAG_CODES = ["F", "FLG"];

/** The side across the board from a seat. */
const opposite = (seat) => (seat === "south" ? "north" : "south");

/**
 * The codes the page shows on opponent pieces (for a spectator, on any piece). Before the end
 * the rules show at most a flag (the `flag-reveal` option), so anything else is a leak.
 */
async function opponentCodesInTheDom(person) {
  const seat = await person.attribute("data-seat");
  const selector =
    seat === "spectator" ? "[data-game] [data-side][data-piece]" : `[data-game] [data-side="${opposite(seat)}"][data-piece]`;
  return person.page.locator(selector).evaluateAll((nodes) => nodes.map((node) => node.getAttribute("data-piece")));
}

async function assertNoOpponentCodeInTheDom(person) {
  const seat = await person.attribute("data-seat");
  const shown = (await opponentCodesInTheDom(person)).filter((code) => !FLAG_CODES.includes(code));
  assert.deepEqual(shown, [], `${person.name}'s page shows opponent codes before the end`);
  // Nor anywhere in the page's storage (the events it keeps for a reload, the guessed marks).
  const stored = await person.page.evaluate(() =>
    [...Object.values(sessionStorage), ...Object.values(localStorage)].map((value) => {
      try {
        return JSON.parse(value);
      } catch {
        return value;
      }
    }),
  );
  assert.ok(stored.length > 0, `${person.name}'s page keeps its events for a reload`);
  assert.deepEqual(leaks(stored, seat, FLAG_CODES), [], `${person.name}'s page stores nothing hidden`);
}

test("two people play a whole game from an invite link, watched by a spectator; a reload resumes", async () => {
  const random = rng(seed);
  const alice = await Person.open(browser, "alice");
  const bob = await Person.open(browser, "bob", { viewport: { width: 390, height: 844 } });
  const carol = await Person.open(browser, "carol");
  try {
    await alice.signInAsGuest(server.url);
    await bob.signInAsGuest(server.url);
    await carol.signInAsGuest(server.url);

    // Alice creates an invite; its link opens the page for Bob, who accepts.
    await alice.page.locator('[data-action="create-invite"]').click();
    const linkField = alice.page.locator('[data-field="invite-link"]');
    await linkField.filter({ hasText: /http/ }).or(alice.page.locator('input[data-field="invite-link"]')).first().waitFor();
    const link = (await linkField.first().inputValue().catch(() => null)) ?? (await linkField.first().textContent());
    assert.match(link.trim(), new RegExp(`^${server.url}/invite/`), "the invite link points at this page");
    await bob.page.goto(link.trim());
    await bob.page.locator('[data-action="accept-invite"]').click();

    // Both are taken to the game page for deployment.
    await alice.waitForGame("phase", "deployment");
    await bob.waitForGame("phase", "deployment");
    assert.equal(alice.gameId(), bob.gameId(), "both are in the same game");
    const gameId = alice.gameId();
    const seats = [await alice.attribute("data-seat"), await bob.attribute("data-seat")].sort();
    assert.deepEqual(seats, ["north", "south"]);

    // Carol watches by link.
    await carol.page.goto(`${server.url}/watch/${gameId}`);
    await carol.waitForGame("seat", "spectator");

    // Deployment: Alice swaps two of her pieces, reshuffles, and both confirm.
    const own = await alice.page.locator(`[data-game] [data-square][data-side="${await alice.attribute("data-seat")}"]`).evaluateAll((nodes) =>
      nodes.map((node) => [node.getAttribute("data-square"), node.getAttribute("data-piece")]),
    );
    assert.ok(own.length >= 20, `Alice sees her deployment (${own.length} pieces)`);
    await alice.page.locator('[data-action="reshuffle"]').click();
    await alice.screenshot("deployment");
    await alice.page.locator('[data-action="confirm"]').click();
    await bob.page.locator('[data-field="opponent-confirmed"]').filter({ hasText: /\S/ }).first().waitFor();
    await bob.page.locator('[data-action="confirm"]').click();
    await alice.waitForGame("phase", "play");
    await bob.waitForGame("phase", "play");

    let reloaded = false;
    const plies = await playToTheEnd([alice, bob], random, {
      onPly: async (ply) => {
        if (ply === 12) {
          await alice.screenshot("mid-game");
          await assertNoOpponentCodeInTheDom(alice);
          await assertNoOpponentCodeInTheDom(bob);
        }
        if (ply === 10 && !reloaded) {
          // Bob reloads: the page comes back to the same game, with the same move list and no
          // event twice.
          reloaded = true;
          const before = await moveList(bob);
          await bob.page.reload();
          await bob.waitForGame("phase", ["play", "ended"]);
          await bob.page.waitForFunction(
            (count) => document.querySelectorAll('[data-field="moves"] li').length >= count,
            before.length,
          );
          const after = await moveList(bob);
          assert.deepEqual(after.slice(0, before.length), before, "the move list survives a reload");
          assert.equal(new Set(after).size <= after.length, true);
        }
      },
    });
    assert.ok(plies > 0);
    console.log(`invite game: ${plies} plies clicked`);

    await carol.waitForGame("phase", "ended");
    for (const person of [alice, bob, carol]) {
      const result = person.page.locator('[data-field="result"]');
      await result.waitFor();
      assert.match((await result.textContent()).trim(), /\S/, `${person.name} sees the result`);
    }
    const outcomes = [
      await alice.page.locator('[data-field="result"]').getAttribute("data-outcome"),
      await bob.page.locator('[data-field="result"]').getAttribute("data-outcome"),
    ].sort();
    assert.ok(
      JSON.stringify(outcomes) === JSON.stringify(["loss", "win"]) ||
        JSON.stringify(outcomes) === JSON.stringify(["draw", "draw"]),
      `the two players see one result: ${outcomes}`,
    );
    await alice.screenshot("end");

    // The end reveals everything, and the replay steps through the game.
    const opponentCodes = await opponentCodesInTheDom(alice);
    const opponentPieces = await alice.page
      .locator(`[data-game] [data-side="${opposite(await alice.attribute("data-seat"))}"]`)
      .count();
    assert.ok(opponentPieces > 0, "the opponent has pieces left on the board");
    assert.equal(opponentCodes.length, opponentPieces, "after the end, every opponent piece shows its code");
    await alice.page.locator('[data-action="replay-prev"]').click();
    await alice.page.locator('[data-field="replay-ply"]').filter({ hasText: /\d/ }).first().waitFor();

    // Nothing hidden reached any browser before the end.
    const seatOf = { alice: await alice.attribute("data-seat"), bob: await bob.attribute("data-seat"), carol: "spectator" };
    for (const person of [alice, bob, carol]) {
      assert.ok(person.frames.length > 10, `${person.name} received frames`);
      assert.deepEqual(leaks(person.frames, seatOf[person.name], FLAG_CODES), [], `${person.name} received nothing hidden`);
      assert.deepEqual(person.errors, [], `${person.name}'s page showed no errors`);
    }
  } finally {
    await Promise.all([alice.close(), bob.close(), carol.close()]);
  }
});

test("a game against the computer is played to its end", async () => {
  const random = rng(seed + 1);
  const dana = await Person.open(browser, "dana");
  try {
    await dana.signInAsGuest(server.url);
    await dana.page.locator('[data-action="play-computer"]').click();
    await dana.waitForGame("phase", "deployment");
    // A figure for the docs (printed, never asserted): opening the game's page, from navigation
    // to a drawn, playable board (the page's own performance mark "hf-board"), on loopback.
    await dana.page.reload();
    await dana.waitForGame("phase", "deployment");
    await dana.page.waitForFunction(() => performance.getEntriesByName("hf-board").length > 0);
    const board = await dana.page.evaluate(() => performance.getEntriesByName("hf-board")[0].startTime);
    console.log(`figure: page open to playable board ${board.toFixed(0)} ms`);
    await dana.page.locator('[data-action="confirm"]').click();
    await dana.waitForGame("phase", "play");
    const plies = await playToTheEnd([dana], random);
    const result = dana.page.locator('[data-field="result"]');
    await result.waitFor();
    console.log(`computer game: ${plies} plies clicked; ${(await result.textContent()).trim()}`);
    const legal = await dana.page.evaluate(() =>
      performance.getEntriesByName("hf-legal-moves").map((entry) => entry.duration).sort((a, b) => a - b),
    );
    if (legal.length > 0) {
      const at = (q) => legal[Math.min(legal.length - 1, Math.floor(q * legal.length))].toFixed(2);
      console.log(`figure: legal moves in the browser (wasm, from the view's JSON) p50 ${at(0.5)} ms, p95 ${at(0.95)} ms over ${legal.length} views`);
    }
    assert.match(await result.getAttribute("data-outcome"), /^(win|loss|draw)$/);
    assert.deepEqual(leaks(dana.frames, await dana.attribute("data-seat"), FLAG_CODES), []);
    assert.deepEqual(dana.errors, []);
  } finally {
    await dana.close();
  }
});

test("two people find a Gunjin Shogi match, in Japanese and Korean at phone width, and play it out", async () => {
  const random = rng(seed + 2);
  const phone = { width: 390, height: 844 };
  const emi = await Person.open(browser, "emi", { viewport: phone, locale: "ja-JP" });
  const jun = await Person.open(browser, "jun", { viewport: phone, locale: "ko-KR" });
  try {
    await emi.signInAsGuest(server.url);
    await jun.signInAsGuest(server.url);
    // The page speaks the browser's language.
    assert.equal(await emi.page.locator('select[data-field="language"]').inputValue(), "ja");
    assert.equal(await jun.page.locator('select[data-field="language"]').inputValue(), "ko");
    for (const person of [emi, jun]) {
      await person.page.locator('select[data-field="rules"]').selectOption("gunjin-shogi");
      await person.page.locator('[data-action="find-match"]').click();
    }
    await emi.waitForGame("phase", "deployment");
    await jun.waitForGame("phase", "deployment");
    assert.equal(emi.gameId(), jun.gameId(), "the queue paired the two");
    assert.equal(await emi.game().getAttribute("data-rules"), "gunjin-shogi");
    await emi.screenshot("gunjin-deployment-ja");
    await emi.page.locator('[data-action="confirm"]').click();
    await jun.page.locator('[data-action="confirm"]').click();
    await emi.waitForGame("phase", "play");
    await jun.waitForGame("phase", "play");
    const plies = await playToTheEnd([emi, jun], random, {
      onPly: async (ply) => {
        if (ply === 8) {
          await assertNoOpponentCodeInTheDom(emi);
          await assertNoOpponentCodeInTheDom(jun);
        }
      },
    });
    console.log(`gunjin shogi match: ${plies} plies clicked`);
    for (const person of [emi, jun]) {
      await person.page.locator('[data-field="result"]').waitFor();
      const seat = await person.attribute("data-seat");
      assert.deepEqual(leaks(person.frames, seat, FLAG_CODES), [], `${person.name} received nothing hidden`);
      assert.deepEqual(person.errors, [], `${person.name}'s page showed no errors`);
    }
    await jun.screenshot("gunjin-end-ko");
  } finally {
    await Promise.all([emi.close(), jun.close()]);
  }
});
