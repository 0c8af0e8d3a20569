// The load client of the Colyseus peer: GAMES rooms at once, two seats each, every seat on its
// own WebSocket, playing random legal moves of its own view as fast as the room answers
// (think 0), as `hidden-front bench play` does. Counts the moves acknowledged inside the measured
// window and times each from sending it to its acknowledgement (submit → ack) and to the
// opponent's message (submit → opponent sees it). With SERVER_PID it also reads the server's CPU
// time from /proc, so the figure is the server's own CPU per move.
//
//   node load.mjs --port P --games N --duration S [--workers W] [--server-pid PID] [--json FILE]
import { readFileSync, writeFileSync } from "node:fs";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { Client } from "colyseus.js";
import { COLUMNS, ROWS, movesOf } from "./game.mjs";

const now = () => performance.timeOrigin + performance.now();

if (isMainThread) {
  const args = parseArgs(process.argv.slice(2));
  const port = Number(args.port ?? 2567);
  const games = Number(args.games ?? 100);
  const duration = Number(args.duration ?? 10);
  const workers = Number(args.workers ?? 1);
  const serverPid = args["server-pid"];
  const children = [];
  const ready = [];
  const done = [];
  for (let w = 0; w < workers; w++) {
    const share = Math.floor(games / workers) + (w < games % workers ? 1 : 0);
    const worker = new Worker(new URL(import.meta.url), { workerData: { port, games: share } });
    children.push(worker);
    ready.push(new Promise((resolve) => worker.once("message", resolve)));
    done.push(
      new Promise((resolve, reject) => {
        worker.on("error", reject);
        worker.on("message", (m) => m.result && resolve(m.result));
      }),
    );
  }
  await Promise.all(ready);
  // A second of play before the window, as the games' openings settle.
  const start = now() + 1000;
  const end = start + duration * 1000;
  for (const worker of children) worker.postMessage({ start, end });
  await sleepUntil(start);
  const server0 = serverPid ? cpuOf(serverPid) : null;
  const load0 = process.cpuUsage();
  await sleepUntil(end);
  const server1 = serverPid ? cpuOf(serverPid) : null;
  const load1 = process.cpuUsage(load0);
  const results = await Promise.all(done);
  const moves = results.reduce((sum, r) => sum + r.moves, 0);
  const refused = results.reduce((sum, r) => sum + r.refused, 0);
  const ack = merge(results.map((r) => r.ack));
  const seen = merge(results.map((r) => r.seen));
  const report = {
    peer: "colyseus",
    games,
    duration_s: duration,
    moves,
    moves_per_s: moves / duration,
    refused,
    ack_ms: { p50: pct(ack, 0.5), p99: pct(ack, 0.99), p999: pct(ack, 0.999), max: ack.at(-1) ?? NaN },
    seen_ms: { p50: pct(seen, 0.5), p99: pct(seen, 0.99) },
    server_cpu_us_per_move: server0 ? ((server1 - server0) * 1e6) / moves : null,
    load_cpu_us_per_move: ((load1.user + load1.system) / moves),
    load_average: readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" "),
  };
  const f = (x) => x.toFixed(2);
  console.log(
    `colyseus: ${games} games, ${duration} s: ${Math.round(report.moves_per_s)} moves/s, ` +
      `submit→ack p50/p99/p99.9 ${f(report.ack_ms.p50)} / ${f(report.ack_ms.p99)} / ${f(report.ack_ms.p999)} ms, ` +
      `submit→opponent sees p50/p99 ${f(report.seen_ms.p50)} / ${f(report.seen_ms.p99)} ms, ` +
      `server CPU ${report.server_cpu_us_per_move === null ? "n/a" : report.server_cpu_us_per_move.toFixed(1)} µs/move, ` +
      `load client CPU ${report.load_cpu_us_per_move.toFixed(1)} µs/move, refused ${refused}, ` +
      `load average ${report.load_average}`,
  );
  if (args.json) writeFileSync(args.json, JSON.stringify(report, null, 2));
  process.exit(0);
} else {
  await runWorker(workerData);
}

async function runWorker({ port, games }) {
  const window = { start: Infinity, end: Infinity };
  const stats = { moves: 0, refused: 0, ack: [], seen: [] };
  const tables = [];
  for (let g = 0; g < games; g++) tables.push(openTable(port, window, stats));
  await Promise.all(tables);
  parentPort.postMessage({ ready: true });
  parentPort.once("message", async ({ start, end }) => {
    window.start = start;
    window.end = end;
    await sleepUntil(end + 50);
    parentPort.postMessage({
      result: {
        moves: stats.moves,
        refused: stats.refused,
        ack: Float64Array.from(stats.ack),
        seen: Float64Array.from(stats.seen),
      },
    });
    process.exit(0);
  });
}

/** One room: the first seat creates it, the second joins it by id; both play until the end. */
async function openTable(port, window, stats) {
  const url = `ws://127.0.0.1:${port}`;
  // When the move in flight was sent, for the opponent's side of the timing.
  const table = { sentAt: 0 };
  // Each seat listens before the second joins: the room deals as soon as both are in.
  const first = await new Client(url).create("duel");
  seat(first, table, window, stats);
  const second = await new Client(url).joinById(first.roomId);
  seat(second, table, window, stats);
}

/** A seat: its own view of the board, and a move whenever its turn comes. */
function seat(room, table, window, stats) {
  let board = null;
  let me = -1;
  let n = 0;
  const move = () => {
    const moves = movesOf(board, me);
    if (moves.length === 0) return; // the room ends such a game itself
    const [from, to] = moves[Math.floor(Math.random() * moves.length)];
    n += 1;
    table.sentAt = now();
    room.send("move", { n, from, to });
  };
  room.onMessage("start", (view) => {
    board = new Array(COLUMNS * ROWS).fill(null);
    me = view.seat;
    for (const p of view.pieces) board[p.square] = { seat: p.seat, rank: p.rank };
    if (view.turn === me) move();
  });
  room.onMessage("ack", (m) => {
    const at = now();
    if (table.sentAt >= window.start && at < window.end) {
      stats.moves += 1;
      stats.ack.push(at - table.sentAt);
    }
    apply(board, m);
  });
  room.onMessage("moved", (m) => {
    const at = now();
    if (table.sentAt >= window.start && at < window.end) stats.seen.push(at - table.sentAt);
    apply(board, m);
    if (m.winner === null && !m.draw) move();
  });
  room.onMessage("refused", () => {
    stats.refused += 1;
  });
}

/** A move as either seat sees it: the piece steps, or the fight's losers leave the board. */
function apply(board, { from, to, fight }) {
  const piece = board[from];
  board[from] = null;
  if (fight === null || fight === "attacker") board[to] = piece;
  else if (fight === "both") board[to] = null;
}

function cpuOf(pid) {
  // utime and stime, fields 14 and 15, in clock ticks (100 a second on Linux).
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function merge(arrays) {
  const all = new Float64Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) {
    all.set(a, at);
    at += a.length;
  }
  return all.sort();
}

function pct(sorted, q) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function sleepUntil(t) {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, t - now())));
}

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) out[argv[i].replace(/^--/, "")] = argv[i + 1];
  return out;
}

