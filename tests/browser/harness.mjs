// The browser tests' harness: the real `hidden-front serve` process on loopback, Debian's Chromium
// driven by playwright-core, and helpers that act through the page's DOM hooks (`data-action`,
// `data-field`, `data-square`, `data-legal`) the way a player clicks.
//
// Every WebSocket frame a page receives is recorded, read with the message types generated from
// proto/ (proto.mjs), so a test can prove that nothing the rules hide reached the browser before
// the end; and every frame it sends, so a test can count the requests it made.

import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, statSync, copyFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { createServer } from "node:net";
import { after, before } from "node:test";
import { chromium } from "playwright-core";
import { readClientFrame, readServerFrame } from "./proto.mjs";

const here = dirname(fileURLToPath(import.meta.url));
/** The repository's root. */
export const root = resolve(here, "..", "..");
/** Where screenshots and traces go (`target/browser/`). */
export const outDir = join(root, "target", "browser");

/** Chromium: Debian's, as Playwright's own download is not reachable here. */
export const chromiumPath = process.env.HF_CHROMIUM ?? "/usr/bin/chromium";

/** The newest modification time of any file below `dir`. */
function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/**
 * The directory cargo builds into, as cargo itself says (`cargo metadata`'s `target_directory`):
 * `target/` of the checkout by default, wherever `CARGO_TARGET_DIR` (or a cargo config) puts it
 * otherwise. Asked at each call, so the environment of the moment decides.
 */
export function cargoTargetDir() {
  const run = spawnSync("cargo", ["metadata", "--format-version", "1", "--no-deps", "--offline"], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.status !== 0) {
    throw new Error(`cargo metadata failed (${run.error ?? `exit ${run.status}`}): ${run.stderr}`);
  }
  return JSON.parse(run.stdout).target_directory;
}

/**
 * The server binary (`HF_BINARY`, else the debug build where cargo put it); refused when the
 * bundle it embeds is newer than it (a stale binary).
 */
export function serverBinary() {
  const binary = process.env.HF_BINARY ?? join(cargoTargetDir(), "debug", "hidden-front");
  if (!existsSync(binary)) {
    throw new Error(`no server binary at ${binary}: run cargo build -p hidden-front`);
  }
  const dist = join(root, "web", "dist");
  if (existsSync(dist) && newest(dist) > statSync(binary).mtimeMs) {
    throw new Error(`${binary} is older than web/dist: run cargo build -p hidden-front`);
  }
  return binary;
}

/** A free loopback TCP port (bound, then released), for a server that must keep its ports. */
export function freePort() {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolvePort(port));
    });
  });
}

/**
 * A fresh Postgres database for a server whose games must survive its restart, on the server of
 * `DATABASE_URL` (else the local one, `postgres://postgres@127.0.0.1:5432/postgres`), created
 * with `psql`. Answers `{ url, drop() }`, or `{ missing }` saying why there is none.
 */
export function freshDatabase(label) {
  const base = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const name = `hf_browser_${label}_${process.pid}_${Date.now()}`;
  const psql = (sql) => spawnSync("psql", [base, "-v", "ON_ERROR_STOP=1", "-qc", sql], { encoding: "utf8" });
  const created = psql(`CREATE DATABASE "${name}"`);
  if (created.error || created.status !== 0) {
    return { missing: `cannot create a database with psql on ${base}: ${created.error?.message ?? created.stderr}` };
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => psql(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}

/**
 * Starts `hidden-front serve` (every service; the in-memory store unless `env` names a
 * database) on free loopback ports, or on `ports` ({grpc, internal, http, metrics}) when given,
 * and resolves once every listener is bound. `stop()` ends it (SIGTERM), `kill()` kills it
 * (SIGKILL: no drain, as a crash), `restart()` starts it again on the same ports.
 */
export async function startServer(extraArgs = [], { ports = null, env = {} } = {}) {
  const at = (port) => `127.0.0.1:${port ?? 0}`;
  const args = [
    "serve",
    "--listen", at(ports?.grpc),
    "--internal-listen", at(ports?.internal),
    "--http-listen", at(ports?.http),
    "--metrics-listen", at(ports?.metrics),
    ...extraArgs,
  ];
  const log = [];
  const spawnServer = async () => {
    const child = spawn(serverBinary(), args, {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "warn", ...env },
    });
    createInterface({ input: child.stderr }).on("line", (line) => log.push(line));
    const lines = createInterface({ input: child.stdout });
    const found = await new Promise((resolvePorts, reject) => {
      const found = {};
      const timer = setTimeout(
        () => reject(new Error(`the server did not start in 60 s:\n${log.join("\n")}`)),
        60_000,
      );
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`the server exited (${code}) before it was ready:\n${log.join("\n")}`));
      });
      lines.on("line", (line) => {
        const http = line.match(/^hidden-front http listening on (\S+)/);
        if (http) found.http = http[1];
        const grpc = line.match(/^hidden-front listening on (\S+)/);
        if (grpc) {
          // The last line `serve` prints: every listener is bound.
          found.grpc = grpc[1];
          clearTimeout(timer);
          resolvePorts(found);
        }
      });
    });
    if (!found.http) throw new Error("the server printed no HTTP address");
    return { child, http: found.http };
  };
  const end = async (child, signal) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill(signal);
    await exited;
  };
  let current = await spawnServer();
  const url = `http://${current.http}`;
  return {
    url,
    log,
    async stop() {
      await end(current.child, "SIGTERM");
    },
    async kill() {
      await end(current.child, "SIGKILL");
    },
    async restart() {
      if (!ports) throw new Error("restart() keeps the ports: start the server with `ports`");
      await end(current.child, "SIGKILL");
      current = await spawnServer();
      if (`http://${current.http}` !== url) throw new Error(`restarted on ${current.http}, not ${url}`);
    },
  };
}

/** Launches headless Chromium. */
export async function launchBrowser() {
  if (!existsSync(chromiumPath)) {
    throw new Error(
      `no Chromium at ${chromiumPath}: apt-get install chromium (scripts/install-web-toolchain does)`,
    );
  }
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}

/**
 * The server and Chromium of one test file: started before its tests, stopped after them. The
 * answer's `server` and `browser` are set once the file's `before` ran.
 */
export function serverAndBrowser(extraArgs = []) {
  const shared = { server: null, browser: null };
  before(async () => {
    shared.server = await startServer(extraArgs);
    shared.browser = await launchBrowser();
  });
  after(async () => {
    await shared.browser?.close();
    await shared.server?.stop();
  });
  return shared;
}

/**
 * A person at a browser: one context (its own storage), one page, every WebSocket frame it
 * received and sent, and every console error or page error it showed.
 */
export class Person {
  constructor(name, context, page) {
    this.name = name;
    this.context = context;
    this.page = page;
    /**
     * The server messages received, in order, in proto3 JSON (`{ event: {...} }`, `{ answer:
     * {...} }`, `{ status: { gameId, status } }`, ...): each binary frame's ConnectResponse, its
     * messages one after the other. A frame that could not be read is `{ unreadable: why }`.
     */
    this.frames = [];
    /** The ConnectRequests the page sent, in order, in proto3 JSON (the requests it made). */
    this.sent = [];
    /** How many binary and text frames went each way (the page speaks binary frames only). */
    this.frameCounts = { received: { binary: 0, text: 0 }, sent: { binary: 0, text: 0 } };
    /** Console errors, uncaught exceptions, and frames that could not be read. */
    this.errors = [];
  }

  static async open(browser, name, { viewport = { width: 1280, height: 900 }, locale = "en-US" } = {}) {
    const context = await browser.newContext({ viewport, locale });
    const page = await context.newPage();
    const person = new Person(name, context, page);
    person.watch(page);
    return person;
  }

  watch(page) {
    page.on("websocket", (socket) => {
      const record = (direction, into, readFrame) => (frame) => {
        const counts = this.frameCounts[direction];
        if (typeof frame.payload === "string") {
          counts.text += 1;
          into.push({ unreadable: `a text frame: ${frame.payload.slice(0, 200)}` });
          this.errors.push(`a text frame ${direction}: ${frame.payload.slice(0, 200)}`);
          return;
        }
        counts.binary += 1;
        try {
          const read = readFrame(frame.payload);
          into.push(...(Array.isArray(read) ? read : [read]));
        } catch (error) {
          into.push({ unreadable: error.message });
          this.errors.push(`a frame ${direction} could not be read: ${error.message}`);
        }
      };
      socket.on("framereceived", record("received", this.frames, readServerFrame));
      socket.on("framesent", record("sent", this.sent, readClientFrame));
    });
    page.on("console", (message) => {
      if (message.type() === "error") this.errors.push(`console: ${message.text()}`);
    });
    page.on("pageerror", (error) => this.errors.push(`page error: ${error.message}`));
  }

  /** Signs in as a guest with one click and returns the player id shown. */
  async signInAsGuest(url) {
    await this.page.goto(url);
    await this.page.locator('[data-action="guest"]').click();
    return this.signedIn();
  }

  /**
   * Waits until the header names the player signed in and returns that id. If it does not, the
   * error says what the page showed instead (an error banner, the connection's state, the
   * screen), so that a failure tells a lost click from a refused or unreachable sign-in.
   */
  async signedIn(timeout = 30_000) {
    const player = this.page.locator('[data-field="player"]');
    try {
      await player.filter({ hasText: /\S/ }).first().waitFor({ timeout });
    } catch (error) {
      throw new Error(`${this.name} is not signed in after ${timeout} ms; the page shows ${await this.shows()}`, { cause: error });
    }
    this.player = (await player.first().textContent()).trim();
    return this.player;
  }

  /** What the page shows, in a line, for an error message. */
  async shows() {
    return this.page
      .evaluate(() =>
        JSON.stringify({
          path: location.pathname,
          engine: document.getElementById("app")?.dataset.engine ?? "not loaded",
          connection: document.querySelector('[data-field="connection"]')?.getAttribute("data-state") ?? null,
          error: document.querySelector('[data-field="error"]')?.getAttribute("data-reason") ?? null,
          main: (document.querySelector("main")?.innerText ?? "").replace(/\s+/g, " ").slice(0, 300),
        }),
      )
      .catch((error) => `nothing readable (${error.message})`);
  }

  game() {
    return this.page.locator("[data-game]");
  }

  async attribute(name) {
    return (await this.game().getAttribute(name)) ?? "";
  }

  /** Waits until the game root exists and has `data-<name>` equal to one of `values`. */
  async waitForGame(name, values, timeout = 60_000) {
    const list = Array.isArray(values) ? values : [values];
    await this.page.waitForFunction(
      ([attribute, wanted]) => {
        const game = document.querySelector("[data-game]");
        return game !== null && wanted.includes(game.getAttribute(attribute) ?? "");
      },
      [`data-${name}`, list],
      { timeout },
    );
  }

  /** The game id of the page's URL (`/game/{id}` or `/watch/{id}`). */
  gameId() {
    const match = new URL(this.page.url()).pathname.match(/^\/(?:game|watch)\/([^/]+)/);
    if (!match) throw new Error(`${this.name} is not on a game page: ${this.page.url()}`);
    return match[1];
  }

  async screenshot(name) {
    mkdirSync(outDir, { recursive: true });
    const path = join(outDir, `${name}.png`);
    await this.page.screenshot({ path, fullPage: true });
    if (process.env.HF_UPDATE_SCREENSHOTS === "1") {
      const docs = join(root, "docs", "screenshots");
      mkdirSync(docs, { recursive: true });
      copyFileSync(path, join(docs, `${name}.png`));
    }
    return path;
  }

  async close() {
    await this.context.close();
  }
}

/** A seeded generator, so a failing run can be repeated (`HF_BROWSER_SEED`). */
export function rng(seed) {
  let state = BigInt(seed) || 1n;
  return () => {
    state ^= state << 13n;
    state &= 0xffffffffffffffffn;
    state ^= state >> 7n;
    state ^= state << 17n;
    state &= 0xffffffffffffffffn;
    return Number(state % 1_000_000n) / 1_000_000;
  };
}

/**
 * Plays one move for `person` by clicking, as a person would: picks an own piece, waits for the
 * page to highlight its legal destinations (computed in the browser by the engine), and clicks
 * one, preferring attacks so that random games end in a reasonable number of plies, or, with
 * `quiet`, moves onto empty squares where the piece has one, so that a game lasts. Returns the
 * move played, or null when no piece had a destination.
 */
export async function clickAMove(person, random, { quiet = false } = {}) {
  const page = person.page;
  const version = await person.attribute("data-version");
  const seat = await person.attribute("data-seat");
  const own = await page.locator(`[data-game] [data-square][data-side="${seat}"]`).evaluateAll((nodes) =>
    nodes.map((node) => node.getAttribute("data-square")),
  );
  // Shuffle the candidates.
  for (let i = own.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [own[i], own[j]] = [own[j], own[i]];
  }
  for (const from of own) {
    await page.locator(`[data-game] [data-square="${from}"]`).click();
    // A piece with no move (a mine, a flag, a blocked piece) may lose its selection at the
    // page's next view refresh before it is seen: then try the next piece.
    const selected = await page
      .locator(`[data-game] [data-square="${from}"][data-selected]`)
      .waitFor({ timeout: 2_000 })
      .then(() => true, () => false);
    if (!selected) continue;
    const targets = await page.locator("[data-game] [data-square][data-legal]").evaluateAll((nodes) =>
      nodes.map((node) => ({
        square: node.getAttribute("data-square"),
        attack: node.hasAttribute("data-side"),
      })),
    );
    if (targets.length === 0) continue;
    const attacks = targets.filter((t) => t.attack);
    const calm = targets.filter((t) => !t.attack);
    const pool = quiet ? (calm.length > 0 ? calm : targets) : attacks.length > 0 && random() < 0.8 ? attacks : targets;
    const to = pool[Math.floor(random() * pool.length)].square;
    await page.locator(`[data-game] [data-square="${to}"][data-legal]`).click();
    // The move is played once the page's view moves past the version it had.
    await page.waitForFunction(
      (before) => {
        const game = document.querySelector("[data-game]");
        return (
          game !== null &&
          (game.getAttribute("data-phase") === "ended" ||
            BigInt(game.getAttribute("data-version") || "0") > BigInt(before || "0"))
        );
      },
      version,
      { timeout: 30_000 },
    );
    return { from, to };
  }
  return null;
}

/** Whether the newest row of the move list is inside the list's visible box, with its measures. */
export async function newestMoveInView(person) {
  return person.page.evaluate(() => {
    const list = document.querySelector('[data-field="moves"]');
    const last = list?.lastElementChild;
    if (!list || !last) return { ok: false, why: "no list" };
    const box = list.getBoundingClientRect();
    const row = last.getBoundingClientRect();
    return {
      ok: row.bottom <= box.bottom + 1 && row.top >= box.top - 1,
      overflow: list.scrollHeight > list.clientHeight,
      rows: list.childElementCount,
      scrollTop: list.scrollTop,
      max: list.scrollHeight - list.clientHeight,
    };
  });
}

/**
 * Waits for the computer's reply to be shown: the move list has grown by two rows past `rows`
 * (the player's move and the reply), its last row is `side`'s, and it is the player's turn again
 * (or the game ended). Answers whether it came in time.
 */
export async function waitForReply(person, rows, side, timeout = 30_000) {
  return person.page
    .waitForFunction(
      ([n, bot]) => {
        const root = document.querySelector("[data-game]");
        if (root?.getAttribute("data-phase") === "ended") return true;
        const items = document.querySelectorAll('[data-field="moves"] li');
        return root?.getAttribute("data-turn") === "mine" && items.length >= n + 2 && items[items.length - 1].classList.contains(`side-${bot}`);
      },
      [rows, side],
      { timeout },
    )
    .then(() => true, () => false);
}

/** Waits until the page has drawn two more animation frames (a redraw requested now is done). */
export async function nextFrames(person) {
  await person.page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done()))));
}

/**
 * Plays a game to its end between people seated in it, each moving by clicks on their turn.
 * `onPly(plies)` runs after each move (a test reloads a page there, say). Resolves with the
 * number of plies played.
 */
export async function playToTheEnd(players, random, { onPly = async () => {}, maxPlies = 3000 } = {}) {
  let plies = 0;
  for (;;) {
    const phases = await Promise.all(players.map((p) => p.attribute("data-phase")));
    if (phases.every((phase) => phase === "ended")) return plies;
    if (plies > maxPlies) throw new Error(`no end after ${plies} plies`);
    // Whose turn it is, by the pages' own word.
    await Promise.race(
      players.map((p) => p.waitForGame("turn", ["mine"], 60_000).then(() => p)),
    ).catch(() => {});
    let moved = false;
    for (const person of players) {
      if ((await person.attribute("data-phase")) !== "play") continue;
      if ((await person.attribute("data-turn")) !== "mine") continue;
      const move = await clickAMove(person, random);
      if (move === null) throw new Error(`${person.name} has the turn but no piece can move`);
      plies += 1;
      moved = true;
      await onPly(plies, person);
      break;
    }
    if (!moved) {
      // Nobody has the turn yet (an answer in flight), or the game just ended: wait for either.
      await Promise.race(
        players.map((p) => p.waitForGame("phase", ["ended"], 2_000).catch(() => {})),
      );
    }
  }
}

const SIDES = { south: "SIDE_SOUTH", north: "SIDE_NORTH" };

/**
 * Whether a server message is the first to tell the viewer that the game is over, after which
 * everything may be shown: the `ended` event of a follow, an action's answer whose events end the
 * game, or a view of the ended game (a `getGame` answer can overtake the follow's `ended` event).
 */
function endsTheGame(message) {
  if (message?.event) return Boolean(message.event.ended);
  const answer = message?.answer;
  if (!answer) return false;
  return answer.getGame?.game?.phase === "PHASE_ENDED" || (answer.action?.events ?? []).some((event) => event.ended);
}

/**
 * What a viewer received that the rules hide, before the game's end: any piece code of a side not
 * the viewer's (a spectator: of either side), in any message before the `ended` event, except the
 * flags the rules show (`flagReveals`). Returns a list of findings (empty when nothing leaked).
 * A message that could not be read is a finding (it cannot be searched), and so is an empty
 * input: a search of nothing proves nothing.
 */
export function leaks(messages, seat, flagCodes = ["F"]) {
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new Error("nothing to search: no message was recorded");
  }
  const hidden = seat === "spectator" ? new Set(Object.values(SIDES)) : new Set([seat === "south" ? SIDES.north : SIDES.south]);
  const mine = seat === "spectator" ? null : SIDES[seat];
  const findings = [];
  const walk = (value, path) => {
    // Flags the rules show are checked on their own, below.
    if (path.endsWith(".flagReveals")) return;
    if (Array.isArray(value)) {
      value.forEach((item, index) => walk(item, `${path}[${index}]`));
      return;
    }
    if (value === null || typeof value !== "object") return;
    if (hidden.has(value.side)) {
      if (typeof value.piece === "string" && value.piece !== "") {
        findings.push(`${path}: ${value.side} piece ${value.piece}`);
      }
      if (value.placements?.length) findings.push(`${path}: ${value.side} deployment`);
      if (value.deployment?.placements?.length) findings.push(`${path}: ${value.side} deployment`);
    }
    // A fight this viewer started (or any fight, for a spectator) names the defender only by id.
    if (value.combat?.defenderPiece && (mine === null || value.side === mine)) {
      findings.push(`${path}.combat: defender ${value.combat.defenderPiece}`);
    }
    for (const [key, inner] of Object.entries(value)) walk(inner, `${path}.${key}`);
  };
  for (const [index, message] of messages.entries()) {
    if (message?.unreadable !== undefined) {
      findings.push(`message[${index}] could not be read, so it cannot be searched: ${message.unreadable}`);
    }
  }
  for (const [index, message] of messages.entries()) {
    if (endsTheGame(message)) break;
    walk(message, `message[${index}]`);
  }
  // Flags shown by the rules carry a flag code only.
  for (const [index, message] of messages.entries()) {
    if (endsTheGame(message)) break;
    const events = [message?.event, ...(message?.answer?.action?.events ?? [])];
    for (const event of events) {
      for (const reveal of event?.moved?.flagReveals ?? []) {
        for (const piece of reveal.flags ?? []) {
          if (!flagCodes.includes(piece.piece)) findings.push(`message[${index}]: a flag reveal shows ${piece.piece}`);
        }
      }
    }
  }
  return findings;
}
