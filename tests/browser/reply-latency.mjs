// How long the computer's reply takes to reach the page: a script (not part of `npm test`), run
// as `node reply-latency.mjs [N]` (HF_BINARY and HF_BROWSER_SEED as for the tests). It plays N
// replies against the computer (default level) on the real binary and, inside the page, times
// for each reply:
//
//   sent      the `play` request's frame leaves the page (performance.now() in the page)
//   ack       the `play` answer arrives
//   event     the computer's `Moved` event arrives (the server's part ends here)
//   shown     the page shows the reply: the game root says `data-turn="mine"` with the new
//             version, and the move list has the computer's move
//
// and prints p50 / p95 / max of event-sent (the server: the computer thinking, its driver, the
// session, the gateway) and shown-event (the page: the event applied to its view by the engine,
// and the drawing). The page reads no view per reply (it follows the events), so the getGame
// lines say "none" and the requests per reply are 0. The frames are binary (Connect's
// subprotocol): the page records their bytes and times, and they are read here with the
// generated types (proto.mjs).

import { Person, clickAMove, launchBrowser, rng, startServer } from "./harness.mjs";
import { readClientFrame, readServerFrame } from "./proto.mjs";

const replies = Number(process.argv[2] ?? 32);
const seed = Number(process.env.HF_BROWSER_SEED ?? 7);

/** Installed before the page's own code: stamps every frame sent and received, with its bytes. */
function instrument() {
  const log = [];
  window.__hfLatency = log;
  const bytes = (data) =>
    data instanceof ArrayBuffer ? Array.from(new Uint8Array(data)) : ArrayBuffer.isView(data) ? Array.from(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)) : null;
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (m) => log.push({ t: performance.now(), dir: "in", bytes: bytes(m.data) }));
    }
    send(data) {
      log.push({ t: performance.now(), dir: "out", bytes: bytes(data) });
      return super.send(data);
    }
  };
  const shown = [];
  window.__hfShown = shown;
  new MutationObserver(() => {
    const game = document.querySelector("[data-game]");
    if (!game) return;
    const key = `${game.getAttribute("data-turn")}:${game.getAttribute("data-version")}:${document.querySelectorAll('[data-field="moves"] li').length}`;
    if (shown.at(-1)?.key !== key) shown.push({ t: performance.now(), key, turn: game.getAttribute("data-turn"), moves: document.querySelectorAll('[data-field="moves"] li').length });
  }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-turn", "data-version"] });
}

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
/** The page's log of frames as one entry per message: `frame` a ServerMessage or a ConnectRequest. */
const messages = (log) =>
  log.flatMap((e) => {
    if (!e.bytes) throw new Error(`a ${e.dir} frame that is not binary`);
    const bytes = Uint8Array.from(e.bytes);
    return e.dir === "in" ? readServerFrame(bytes).map((frame) => ({ ...e, frame })) : [{ ...e, frame: readClientFrame(bytes) }];
  });
const fmt = (xs) => xs.length === 0 ? "none" : `p50 ${quantile(xs, 0.5).toFixed(0)} ms, p95 ${quantile(xs, 0.95).toFixed(0)} ms, max ${Math.max(...xs).toFixed(0)} ms (n=${xs.length})`;

const server = await startServer();
const browser = await launchBrowser();
const random = rng(seed);
const server_ = [];
const page_ = [];
const total_ = [];
const gets = [];
const parts = { ack: [], own: [], turn: [], ask: [], answer: [], draw: [] };
try {
  let done = 0;
  while (done < replies) {
    const p = await Person.open(browser, "latency");
    await p.page.addInitScript(instrument);
    await p.signInAsGuest(server.url);
    await p.page.locator('[data-action="play-computer"]').click();
    await p.waitForGame("phase", "deployment");
    const seat = await p.attribute("data-seat");
    const botSide = seat === "south" ? "SIDE_NORTH" : "SIDE_SOUTH";
    await p.page.locator('[data-action="confirm"]').click();
    await p.waitForGame("phase", "play");
    while (done < replies) {
      await p.waitForGame("turn", ["mine"], 30_000).catch(() => {});
      if ((await p.attribute("data-phase")) !== "play") break;
      const before = await p.page.evaluate(() => window.__hfLatency.length);
      const shownBefore = await p.page.evaluate(() => window.__hfShown.length);
      const move = await clickAMove(p, random);
      if (!move) break;
      // Wait for the reply to be shown (or the end).
      const ok = await p.page
        .waitForFunction(
          (n) => {
            const game = document.querySelector("[data-game]");
            return game?.getAttribute("data-phase") === "ended" || window.__hfShown.slice(n).some((s) => s.turn === "mine");
          },
          shownBefore,
          { timeout: 30_000 },
        )
        .then(() => true, () => false);
      if (!ok || (await p.attribute("data-phase")) !== "play") break;
      const page = await p.page.evaluate(([b, s]) => ({ log: window.__hfLatency.slice(b), shown: window.__hfShown.slice(s) }), [before, shownBefore]);
      const log = messages(page.log);
      const shown = page.shown;
      const sent = log.find((e) => e.dir === "out" && e.frame.play);
      const event = log.find((e) => e.dir === "in" && e.frame.event?.moved?.side === botSide);
      const show = shown.find((s) => s.turn === "mine");
      if (!sent || !event || !show) continue;
      const own = log.find((e) => e.dir === "in" && e.frame.event?.moved && e.frame.event.moved.side !== botSide);
      const ack = log.find((e) => e.dir === "in" && e.frame.answer?.requestId === sent.frame.requestId);
      // The getGame the reply is shown from: the last one sent before it was shown whose answer came before.
      const answered = log.filter((e) => e.dir === "in" && e.frame.answer?.getGame?.game && e.t <= show.t + 0.5).at(-1);
      const ask = answered && log.find((e) => e.dir === "out" && e.frame.requestId === answered.frame.answer.requestId);
      if (ack) parts.ack.push(ack.t - sent.t);
      if (own) parts.own.push(own.t - sent.t);
      if (own) parts.turn.push(event.t - own.t);
      if (ask) parts.ask.push(ask.t - event.t);
      if (ask && answered) parts.answer.push(answered.t - ask.t);
      if (answered) parts.draw.push(show.t - answered.t);
      server_.push(event.t - sent.t);
      page_.push(show.t - event.t);
      total_.push(show.t - sent.t);
      gets.push(log.filter((e) => e.dir === "out" && e.frame.getGame && e.t <= show.t).length);
      done++;
    }
    await p.close();
  }
  console.log(`replies: ${done} (seed ${seed})`);
  console.log(`move sent -> reply shown:        ${fmt(total_)}`);
  console.log(`  move sent -> computer's event: ${fmt(server_)}`);
  console.log(`  computer's event -> shown:     ${fmt(page_)}`);
  console.log(`    move sent -> own move's event: ${fmt(parts.own)}`);
  console.log(`    move sent -> play answered:    ${fmt(parts.ack)}`);
  console.log(`    own move's event -> computer's event (the computer's turn): ${fmt(parts.turn)}`);
  console.log(`    computer's event -> getGame sent (negative: sent before): ${fmt(parts.ask)}`);
  console.log(`    getGame sent -> answered:      ${fmt(parts.answer)}`);
  console.log(`    answered -> shown (render):    ${fmt(parts.draw)}`);
  console.log(`  getGame requests per reply:    p50 ${quantile(gets, 0.5)}, max ${Math.max(...gets)}`);
} finally {
  await browser.close();
  await server.stop();
}
