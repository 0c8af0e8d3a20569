/** Test doubles: a small engine honouring the contract, and a scripted WebSocket. */
import { create, fromBinary, fromJson, toBinary, toJson, type JsonValue } from "@bufbuild/protobuf";
import type { Board, Engine, InferenceLike, SimpleMove } from "../src/engine/types.js";
import type { GameEventJson, GameStatusJson, GameViewJson } from "../src/gen/hiddenfront/v1/game_pb.js";
import type { LobbyEventJson } from "../src/gen/hiddenfront/v1/matchmaking_pb.js";
import {
  ConnectRequestSchema,
  ConnectResponseSchema,
  ServerMessageSchema,
  type AnswerJson,
  type ConnectRequestJson,
  type ServerMessageJson,
} from "../src/gen/hiddenfront/v1/client_pb.js";

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

/** A request the page sent, decoded: its id, its kind (the `ConnectRequest` field set) and body. */
export interface SentRequest {
  id: string;
  kind: keyof ConnectRequestJson;
  body: Record<string, unknown>;
  /** Set by a test once it answered the request. */
  done?: boolean;
}

/**
 * A WebSocket double speaking the binary subprotocol: records (decoded with the generated code)
 * every `ConnectRequest` the page sends; the test plays the server, each `push` one
 * `ConnectResponse` frame.
 */
export class FakeSocket {
  static all: FakeSocket[] = [];
  /** Every request sent, in order. */
  sent: SentRequest[] = [];
  /** Frames sent that were not binary `ConnectRequest`s (a test expects none). */
  unreadable: unknown[] = [];
  binaryType = "blob";
  protocol = "";
  onopen: (() => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: (() => void) | null = null;
  readyState = 0;
  readonly protocols: string[];
  constructor(
    readonly url: string,
    protocols?: string | string[],
  ) {
    this.protocols = protocols === undefined ? [] : Array.isArray(protocols) ? protocols : [protocols];
    FakeSocket.all.push(this);
  }
  send(data: unknown): void {
    if (!(data instanceof Uint8Array)) {
      this.unreadable.push(data);
      return;
    }
    const json = toJson(ConnectRequestSchema, fromBinary(ConnectRequestSchema, data)) as Record<string, unknown>;
    const kind = Object.keys(json).find((k) => k !== "requestId") as keyof ConnectRequestJson;
    this.sent.push({ id: String(json.requestId ?? "0"), kind, body: (json[kind] ?? {}) as Record<string, unknown> });
  }
  close(): void {
    this.readyState = 3;
    this.onclose?.();
  }
  // server side
  /** The upgrade succeeds; the server chooses `protocol` (the page's subprotocol by default). */
  open(protocol = this.protocols[0] ?? ""): void {
    this.protocol = protocol;
    this.readyState = 1;
    this.onopen?.();
  }
  /** Answers the page's `authenticate` request as `player`. */
  authenticate(player = "alice", guest = false): void {
    const auth = this.last("authenticate");
    if (!auth) throw new Error("the page did not authenticate");
    this.answer(auth, { authenticate: { player, guest } });
  }
  /** One `ConnectResponse` frame holding `messages` (proto JSON). */
  push(...messages: ServerMessageJson[]): void {
    // Through JSON text first, as a server's JSON would be: a field set to `undefined` is absent.
    const json = JSON.parse(JSON.stringify(messages)) as JsonValue[];
    const response = create(ConnectResponseSchema, { messages: json.map((m) => fromJson(ServerMessageSchema, m)) });
    const bytes = toBinary(ConnectResponseSchema, response);
    this.onmessage?.({ data: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) });
  }
  /** The answer to `request` (`answer` names its field: `{ getGame: {...} }`). */
  answer(request: SentRequest, answer: Omit<AnswerJson, "requestId">): void {
    request.done = true;
    this.push({ answer: { requestId: request.id, ...answer } });
  }
  /** The refusal of `request` (a gRPC code number). */
  refuse(request: SentRequest | string, code: number, reason: string, message = ""): void {
    const id = typeof request === "string" ? request : request.id;
    if (typeof request !== "string") request.done = true;
    this.push({ refusal: { requestId: id, code, reason, message } });
  }
  /** Answers the follow of `gameId` (the newest), so its messages reach the page. */
  followed(gameId: string): SentRequest {
    const follow = [...this.sent].reverse().find((r) => r.kind === "follow" && r.body.gameId === gameId);
    if (!follow) throw new Error(`the page does not follow ${gameId}`);
    this.answer(follow, { followed: { gameId } });
    return follow;
  }
  /** Answers the newest lobby follow. */
  lobbyFollowed(): SentRequest {
    const follow = this.last("followLobby");
    if (!follow) throw new Error("the page does not follow the lobby");
    this.answer(follow, { followed: {} });
    return follow;
  }
  event(event: GameEventJson): void {
    this.push({ event });
  }
  status(gameId: string, status: GameStatusJson): void {
    this.push({ status: { gameId, status } });
  }
  lobby(event: LobbyEventJson): void {
    this.push({ lobby: event });
  }
  /** The newest request of `kind`. */
  last(kind: keyof ConnectRequestJson): SentRequest | undefined {
    return [...this.sent].reverse().find((r) => r.kind === kind);
  }
  /** Every request of `kind`, in order. */
  all(kind: keyof ConnectRequestJson): SentRequest[] {
    return this.sent.filter((r) => r.kind === kind);
  }
}
