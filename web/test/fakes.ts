/** Test doubles: a small engine honouring the contract, and a scripted WebSocket. */
import type { Board, Engine, InferenceLike, SimpleMove } from "../src/engine/types.js";
import type { GameEventJson, GameViewJson } from "../src/gen/hiddenfront/v1/game_pb.js";

const COLS = "ABC";

/** A 3x4 board: south rows 1-2, north rows 3-4, crossings on A and C, a camp on B2. */
export function fakeBoard(rules: string): Board {
  const nodes = [];
  for (let row = 0; row < 4; row++)
    for (let column = 0; column < 3; column++) {
      const half = row < 2 ? "south" : "north";
      nodes.push({
        name: `${COLS[column]}${row + 1}`, column, row, span: 1, camp: column === 1 && row === 1,
        hq: row === 0 && column === 1 ? ("south" as const) : row === 3 && column === 1 ? ("north" as const) : null,
        rail: row === 1 || row === 2, half: half as "south" | "north", deploy: !(column === 1 && row === 1), gate: false, frontRow: row === 1 || row === 2,
      });
    }
  const links = [];
  for (const n of nodes)
    for (const m of nodes) {
      if (n.name >= m.name) continue;
      const adj = Math.abs(n.column - m.column) + Math.abs(n.row - m.row) === 1;
      const crossesMountain = n.half !== m.half && n.column === 1;
      if (adj && !crossesMountain) links.push({ a: n.name, b: m.name, rail: n.rail && m.rail });
    }
  return { rules, family: "junqi", columns: 3, rows: 4, piecesPerSide: 5, nodes, links, kinds: [
    { code: "9", count: 1, moves: true, strength: 9 }, { code: "1", count: 2, moves: true, strength: 1 },
    { code: "B", count: 1, moves: true, strength: 0 }, { code: "F", count: 1, moves: false, strength: 0 }] };
}

/** The fake engine; `legalMoves` steps own movable pieces one link onto non-own squares. */
export function fakeEngine(): Engine & { observed: unknown[] } {
  const observed: unknown[] = [];
  const board = fakeBoard("hidden-front");
  return {
    observed,
    topology: (rules) => ({ ...board, rules }),
    legalMoves(view: GameViewJson): SimpleMove[] {
      const me = view.viewer === "VIEWER_SOUTH" ? "SIDE_SOUTH" : view.viewer === "VIEWER_NORTH" ? "SIDE_NORTH" : null;
      if (!me || view.phase !== "PHASE_PLAY") return [];
      const at = new Map((view.pieces ?? []).map((p) => [p.square, p]));
      const out: SimpleMove[] = [];
      for (const p of view.pieces ?? []) {
        if (p.side !== me || p.piece === "F") continue;
        for (const l of board.links) {
          const to = l.a === p.square ? l.b : l.b === p.square ? l.a : null;
          if (to && at.get(to)?.side !== me) out.push({ from: p.square!, to });
        }
      }
      return out;
    },
    // Follows moves (a fight as told) and the end; refuses an event that is not after the view or
    // a move without its piece, as the engine does.
    applyEvent(view: GameViewJson, event: GameEventJson): GameViewJson {
      const seq = Number(event.seq ?? 0);
      if (seq <= Number(view.version ?? 0)) throw new Error(`event ${seq} is not after the view`);
      let next: GameViewJson = { ...view, version: String(seq) };
      const m = event.moved;
      if (m) {
        const pieces = view.pieces ?? [];
        const mover = pieces.find((p) => p.square === m.move?.from && p.side === m.side);
        if (view.phase !== "PHASE_PLAY" || !mover) throw new Error("the view has no piece of the mover on the move's start");
        const kept = pieces.filter((p) => p !== mover && (p.square !== m.move?.to || m.combat?.defenderSurvives));
        if (!m.combat || m.combat.attackerSurvives) kept.push({ ...mover, square: m.move!.to! });
        next = { ...next, pieces: kept, toMove: m.side === "SIDE_SOUTH" ? "SIDE_NORTH" : "SIDE_SOUTH", plies: (view.plies ?? 0) + 1 };
      }
      if (event.ended) {
        next = { ...next, phase: "PHASE_ENDED", toMove: undefined, outcome: event.ended.outcome, pieces: event.ended.pieces, reveal: event.ended.reveal };
      }
      return next;
    },
    validateDeployment: () => [],
    checkSwap(_rules, deployment, a, b) {
      const pl = deployment.placements ?? [];
      const pa = pl.find((p) => p.square === a);
      const pb = pl.find((p) => p.square === b);
      if (!pa || !pb) return { ok: false, problems: [{ reason: "UNKNOWN_SQUARE", square: pa ? b : a, message: "no" }] };
      if ((pa.piece === "F" && b !== "B1") || (pb.piece === "F" && a !== "B1"))
        return { ok: false, problems: [{ reason: "FLAG_NOT_IN_HQ", square: pa.piece === "F" ? b : a, code: "F", message: "the flag must stand in an HQ" }] };
      return { ok: true, deployment: { ...deployment, placements: pl.map((p) => (p.square === a ? { square: a, piece: pb.piece } : p.square === b ? { square: b, piece: pa.piece } : p)) } };
    },
    parseMove(_rules, text) {
      const m = /^\s*([A-Ca-c][1-4])[\s-]*([A-Ca-c][1-4])\s*$/.exec(text);
      return m ? { ok: true, move: { from: m[1]!.toUpperCase(), to: m[2]!.toUpperCase() } } : { ok: false, message: "bad" };
    },
    newInference(): InferenceLike {
      const ids = new Set<number>();
      return {
        observe(e) {
          observed.push(e);
          for (const p of e.playStarted?.pieces ?? []) if (!p.piece) ids.add(p.id ?? 0);
        },
        possible: () => [...ids].map((id) => ({ id, codes: ["9", "1"], moved: false, alive: true })),
      };
    },
    replayBoards: (_rules, start, events) => [
      { seq: 0, pieces: start },
      ...events.filter((e) => e.moved).map((e) => ({ seq: e.seq ?? "0", pieces: start, move: { from: e.moved!.move!.from!, to: e.moved!.move!.to! } })),
    ],
  };
}

type Listener = ((ev: { data: string }) => void) | null;

/** A WebSocket double: records what the page sends; the test plays the server. */
export class FakeSocket {
  static all: FakeSocket[] = [];
  sent: Array<Record<string, unknown>> = [];
  onopen: (() => void) | null = null;
  onmessage: Listener = null;
  onclose: (() => void) | null = null;
  readyState = 0;
  constructor(readonly url: string) {
    FakeSocket.all.push(this);
  }
  send(text: string): void {
    this.sent.push(JSON.parse(text) as Record<string, unknown>);
  }
  close(): void {
    this.readyState = 3;
    this.onclose?.();
  }
  // server side
  open(): void {
    this.readyState = 1;
    this.onopen?.();
  }
  push(frame: unknown): void {
    this.onmessage?.({ data: JSON.stringify(frame) });
  }
  last(type: string): Record<string, unknown> | undefined {
    return [...this.sent].reverse().find((m) => m.type === type);
  }
}
