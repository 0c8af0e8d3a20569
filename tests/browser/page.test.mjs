// The page's own defects found by outside checks (issue 34), in a real browser against the real
// server: the move list follows the newest move, names every kind after the end, the spectator
// sees who has confirmed, the replay's buttons and the players' line lay out at desktop and
// phone width in every language, and the replay downloads as its documented text file.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { Person, clickAMove, launchBrowser, newestMoveInView, rng, startServer, waitForReply } from "./harness.mjs";

const seed = Number(process.env.HF_BROWSER_SEED ?? Date.now() % 100_000);

let server;
let browser;

/** One game against the computer, shared by the tests below (they run in order). */
const game = {};

before(async () => {
  server = await startServer();
  browser = await launchBrowser();
  game.dana = await Person.open(browser, "dana");
  game.watcher = await Person.open(browser, "watcher");
});

after(async () => {
  await game.dana?.close();
  await game.watcher?.close();
  await browser?.close();
  await server?.stop();
});

/** Layout facts of the ended game's panel and head. */
async function layout(person) {
  return person.page.evaluate(() => {
    const top = (sel) => {
      const el = document.querySelector(sel);
      return el ? el.getBoundingClientRect().top : null;
    };
    const replay = ["replay-prev", "replay-next"].map((a) => top(`[data-action="${a}"]`));
    const ply = top('[data-field="replay-ply"]');
    const offsets = [...document.querySelectorAll('.controls .replay > *')].map((e) => e.offsetTop);
    // Every visible "·" between the players must share its line with the player after it.
    const lone = [];
    for (const vs of document.querySelectorAll(".players .vs")) {
      const r = vs.getBoundingClientRect();
      if (r.width === 0 || getComputedStyle(vs).display === "none") continue;
      const next = vs.nextElementSibling;
      const n = next?.getBoundingClientRect();
      if (!n || Math.abs(n.top + n.height / 2 - (r.top + r.height / 2)) > 4) lone.push({ vs: r.top, next: n?.top });
    }
    return { replay, ply, offsets, lone };
  });
}



test("a spectator sees during deployment whether each side has confirmed, by name, and the captured groups by name", async () => {
  const { dana, watcher } = game;
  await dana.signInAsGuest(server.url);
  await watcher.signInAsGuest(server.url);
  await dana.page.locator('[data-action="play-computer"]').click();
  await dana.waitForGame("phase", "deployment");
  game.id = dana.gameId();
  game.seat = await dana.attribute("data-seat");
  game.bot = game.seat === "south" ? "north" : "south";
  const problems = [];
  try {
    // The computer confirms at once; the player has not yet.
    await watcher.page.goto(`${server.url}/watch/${game.id}`);
    await watcher.waitForGame("seat", "spectator");
    const confirmed = (side) => watcher.page.locator(`[data-field="${side}-confirmed"]`);
    const seen = await confirmed(game.bot).and(watcher.page.locator('[data-confirmed="true"]')).waitFor({ timeout: 10_000 }).then(() => true, () => false);
    if (!seen) problems.push("the spectator is not told that the computer confirmed");
    else {
      if ((await confirmed(game.seat).getAttribute("data-confirmed")) !== "false") problems.push("the player shows as confirmed");
      if (!(await confirmed(game.seat).textContent()).includes(dana.player)) problems.push("the player is not named");
    }
  } finally {
    await dana.page.locator('[data-action="confirm"]').click();
    await dana.waitForGame("phase", "play");
  }
  await watcher.waitForGame("phase", ["play", "ended"]);
  const heads = await watcher.page.locator('[data-field="captured"] h3').allTextContents();
  if (!heads.some((h) => h.includes(dana.player))) problems.push(`the captured groups do not name the players: ${heads}`);
  assert.deepEqual(problems, []);
});

test("after every reply of the computer the newest move is in view in the move list", async () => {
  const { dana } = game;
  assert.ok(game.id, "the game of the first test");
  const random = rng(seed);
  let replies = 0;
  // Replies after which the list overflowed its box at every check.
  let scrolled = 0;
  const misses = [];
  for (let ply = 0; ply < 16; ply++) {
    await dana.waitForGame("turn", ["mine"], 30_000).catch(() => {});
    if ((await dana.attribute("data-phase")) !== "play") break;
    const rows = await dana.page.locator('[data-field="moves"] li').count();
    // As a second getGame answer with the same rows does: the moment the reply's row is drawn,
    // draw the screen again at once (a language "change" to the same language), before the
    // browser reports the list's scroll.
    await dana.page.evaluate((n) => {
      const observer = new MutationObserver(() => {
        if (document.querySelectorAll('[data-field="moves"] li').length < n + 2) return;
        observer.disconnect();
        document.querySelector('select[data-field="language"]').dispatchEvent(new Event("change"));
      });
      observer.observe(document.querySelector("[data-game]"), { childList: true, subtree: true });
    }, rows);
    const move = await clickAMove(dana, random);
    if (!move) break;
    // The reply: the computer's move is in the list and it is this player's turn again.
    const replied = await waitForReply(dana, rows, game.bot);
    if (!replied || (await dana.attribute("data-phase")) !== "play") break;
    replies++;
    // At once, and after the page's next answers (a second getGame with the same rows).
    let overflowing = true;
    for (const wait of [0, 150, 600]) {
      if (wait) await dana.page.waitForTimeout(wait);
      const seen = await newestMoveInView(dana);
      if (!seen.ok) misses.push({ ply, wait, ...seen });
      overflowing &&= seen.overflow === true;
    }
    if (overflowing) scrolled++;
  }
  const overflow = (await newestMoveInView(dana)).overflow;
  console.log(`move list: ${replies} replies checked, ${scrolled} of them with the list overflowing, misses: ${misses.length}`);
  // What is checked is a list that overflows: the game against the computer may end before
  // many replies (it plays to win), so the count that matters is the replies checked while the
  // list was longer than its box, not all replies.
  assert.ok(overflow && scrolled >= 3, `enough replies checked with the list overflowing (${scrolled} of ${replies})`);
  assert.deepEqual(misses, [], "the newest move is always in view after a reply");
});

test("after the end the move list names the computer's kinds, as the board does", async () => {
  const { dana } = game;
  assert.ok(game.id, "the game of the first test");
  if ((await dana.attribute("data-phase")) === "play") {
    await dana.waitForGame("turn", ["mine"], 30_000).catch(() => {});
    await dana.page.locator('[data-action="resign"]').click();
    await dana.page.locator('[data-action="confirm-resign"]').click();
  }
  await dana.waitForGame("phase", "ended");
  await dana.page.locator('[data-field="replay-ply"]').waitFor();
  const botMoves = await dana.page.locator(`[data-field="moves"] li.mv.side-${game.bot}`).count();
  const unnamed = await dana.page.locator(`[data-field="moves"] li.mv.side-${game.bot}:not(:has(.mv-piece))`).count();
  assert.ok(botMoves > 0);
  assert.equal(unnamed, 0, `after the end every move of the computer names its kind (${unnamed} of ${botMoves} do not)`);
});

test("the replay's buttons share one line and no players' line ends with a lone separator, at 1280x800 and 390x844, in every language", async () => {
  const { dana } = game;
  await dana.waitForGame("phase", "ended");
  const failures = [];
  try {
    for (const viewport of [{ width: 1280, height: 800 }, { width: 390, height: 844 }]) {
      await dana.page.setViewportSize(viewport);
      for (const lang of ["en", "ko", "zh", "ja"]) {
        await dana.page.locator('select[data-field="language"]').selectOption(lang);
        await dana.page.locator('[data-field="replay-ply"]').waitFor();
        const l = await layout(dana);
        if (l.offsets.length !== 3 || new Set(l.offsets).size !== 1) failures.push(`${viewport.width} ${lang}: replay controls at offsetTop ${l.offsets}`);
        if (l.lone.length) failures.push(`${viewport.width} ${lang}: a lone separator ${JSON.stringify(l.lone)}`);
        if (lang === "ko") await dana.screenshot(`end-replay-${viewport.width}-${lang}`);
      }
    }
  } finally {
    await dana.page.locator('select[data-field="language"]').selectOption("en");
    await dana.page.setViewportSize({ width: 1280, height: 900 });
  }
  assert.deepEqual(failures, []);
});

test("the replay downloads as its documented text file, for the player and for a spectator", async () => {
  const { dana, watcher } = game;
  for (const person of [dana, watcher]) {
    await person.waitForGame("phase", "ended");
    const [download] = await Promise.all([
      person.page.waitForEvent("download", { timeout: 15_000 }),
      person.page.locator('[data-action="download-replay"]').click({ timeout: 15_000 }),
    ]);
    assert.equal(download.suggestedFilename(), `hidden-front-${game.id}.replay.txt`);
    const text = await readFile(await download.path(), "utf8");
    assert.match(text, /^hidden-front-replay 1\n/, `${person.name}'s download is a replay`);
    assert.match(text, new RegExp(`^Game: ${game.id}$`, "m"));
    assert.match(text, /^Result: /m);
  }
  assert.deepEqual(dana.errors, []);
  assert.deepEqual(watcher.errors, []);
});
