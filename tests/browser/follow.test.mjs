// How the page follows a game: it reads the view (`getGame`) once when it opens the game and
// then applies the events of the game's follow with the engine, and its status items, so a game against
// the computer costs one read, not one per event. Presence and the turn's countdown still show,
// from the status items.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Person, clickAMove, rng, serverAndBrowser, waitForReply } from "./harness.mjs";

const seed = Number(process.env.HF_BROWSER_SEED ?? Date.now() % 100_000);
const shared = serverAndBrowser();

/** The `status` items the page received for a game, newest last. */
const statuses = (person, gameId) => person.frames.filter((f) => f.status?.gameId === gameId).map((f) => f.status.status ?? {});

/** The `getGame` requests the page sent for a game. */
const reads = (person, gameId) => person.sent.filter((f) => f.getGame?.gameId === gameId);

/** The clock as shown: its whole seconds, or null when none runs. */
async function clockSeconds(person) {
  const text = await person.page.locator('[data-field="clock"]').getAttribute("data-seconds");
  return text ? Number(text) : null;
}

test("a game against the computer: one read of the view, then events and status items; presence and the clock show", async () => {
  const random = rng(seed + 7);
  const eve = await Person.open(shared.browser, "eve");
  try {
    await eve.signInAsGuest(shared.server.url);
    await eve.page.locator('[data-action="play-computer"]').click();
    await eve.waitForGame("phase", "deployment");
    const gameId = eve.gameId();
    const follow = eve.sent.find((f) => f.follow?.gameId === gameId);
    assert.equal(follow?.follow?.withStatus, true, "the page asks for status items");
    await eve.page.locator('[data-action="confirm"]').click();
    await eve.waitForGame("phase", "play");

    const seat = await eve.attribute("data-seat");
    const bot = seat === "south" ? "north" : "south";
    // Both seats show connected: the player's own, and the computer's (its driver reports it).
    for (const side of [seat, bot]) {
      await eve.page.locator(`.player.side-${side} .dot.on`).waitFor({ timeout: 10_000 });
    }

    let plies = 0;
    const deadlines = [];
    while (plies < 6 && (await eve.attribute("data-phase")) === "play") {
      await eve.waitForGame("turn", ["mine"], 30_000).catch(() => {});
      if ((await eve.attribute("data-phase")) !== "play") break;
      // The turn's countdown shows, from the deadline of the newest status item.
      await eve.page.waitForFunction(() => document.querySelector('[data-field="clock"]')?.getAttribute("data-seconds"));
      const deadline = Number(statuses(eve, gameId).at(-1)?.turnDeadlineUnixMillis ?? 0);
      assert.ok(deadline > 0, "a status item carries the turn's deadline");
      const shown = await clockSeconds(eve);
      const expected = Math.ceil((deadline - Date.now()) / 1000);
      assert.ok(Math.abs(shown - expected) <= 2, `the clock shows ${shown} s, the deadline says ${expected} s`);
      deadlines.push(deadline);
      const rows = await eve.page.locator('[data-field="moves"] li').count();
      const move = await clickAMove(eve, random, { quiet: true });
      assert.ok(move, "a piece can move");
      plies += 1;
      assert.ok(await waitForReply(eve, rows, bot), "the computer's reply is shown");
      plies += 1;
    }
    assert.ok(plies >= 4, `only ${plies} plies were played`);
    assert.ok(new Set(deadlines).size === deadlines.length, `each turn has a deadline of its own: ${deadlines}`);
    // The countdown ticks on its own between status items.
    const now = await clockSeconds(eve);
    if ((await eve.attribute("data-phase")) === "play" && now !== null) {
      await eve.page.waitForFunction(
        (before) => Number(document.querySelector('[data-field="clock"]')?.getAttribute("data-seconds") ?? before) < before,
        now,
        { timeout: 5_000 },
      );
    }

    const events = eve.frames.filter((f) => f.event?.gameId === gameId).length;
    const got = reads(eve, gameId).length;
    console.log(`follow: ${plies} plies, ${events} events, ${statuses(eve, gameId).length} status items, ${got} getGame`);
    assert.ok(events >= plies, `${events} events for ${plies} plies`);
    assert.equal(got, 1, "the view is read once, when the game opens, not once per event");
    assert.deepEqual(eve.errors, []);
  } finally {
    await eve.close();
  }
});
