/**
 * A game as this player knows it: the events received (in order, each once, resumable from the
 * last seq) and what the page derives from them: the move list, the captured pieces, the last
 * move. The current position is the server's view (getGame) followed by these events with the
 * engine (`followEvents` in state/game-screen.ts); presence and clocks come as status items.
 */
import type {
  GameEventJson,
  GameViewJson,
  SideJson,
  VisiblePieceJson,
} from "../gen/hiddenfront/v1/game_pb.js";

/** A side as the page names it. */
export type SideName = "south" | "north";

/** "SIDE_SOUTH" -> "south". */
export function sideName(s: SideJson | undefined): SideName | null {
  if (s === "SIDE_SOUTH") return "south";
  if (s === "SIDE_NORTH") return "north";
  return null;
}

/** The other side. */
export function other(s: SideName): SideName {
  return s === "south" ? "north" : "south";
}

/** Which seat the viewer of a view holds. */
export function seatOf(view: GameViewJson): SideName | "spectator" {
  if (view.viewer === "VIEWER_SOUTH") return "south";
  if (view.viewer === "VIEWER_NORTH") return "north";
  return "spectator";
}

/** The phase of a view, as the `data-phase` hook names it. */
export function phaseOf(view: GameViewJson): "deployment" | "play" | "ended" {
  if (view.phase === "PHASE_PLAY") return "play";
  if (view.phase === "PHASE_ENDED") return "ended";
  return "deployment";
}

/** The received event log of one game. */
export class GameLog {
  readonly events: GameEventJson[] = [];
  private seen = new Set<number>();
  lastSeq = 0;

  constructor(restored: GameEventJson[] = []) {
    for (const e of restored) this.add(e);
  }

  /** Adds an event; false (and nothing changes) when its seq was seen already. */
  add(event: GameEventJson): boolean {
    const seq = Number(event.seq ?? 0);
    if (!seq || this.seen.has(seq) || seq <= this.lastSeq) return false;
    this.seen.add(seq);
    this.events.push(event);
    this.lastSeq = seq;
    return true;
  }

  /** Where a (re)follow starts: the seq after the last one seen. */
  nextSeq(): number {
    return this.lastSeq + 1;
  }
}

/** One line of the move list. */
export interface MoveEntry {
  seq: number;
  ply: number;
  side: SideName;
  from: string;
  to: string;
  /** The mover's id (the PlayStarted list's), to name its kind after the end's reveal. */
  pieceId: number;
  /** The mover's kind when this player may know it. */
  piece?: string;
  combat?: {
    attackerSurvives: boolean;
    defenderSurvives: boolean;
    flagCaptured: boolean;
    defenderId: number;
    defenderPiece?: string;
  };
}

/** A line of the game's record that is not a move (timeouts, draw offers...). */
export interface NoteEntry {
  seq: number;
  kind: "timeout" | "drawOffered" | "drawDeclined" | "drawLapsed" | "resigned" | "seatLost";
  side: SideName;
  count?: number;
}

/** One line of the game record: a move or a note. */
export type RecordEntry = ({ type: "move" } & MoveEntry) | ({ type: "note" } & NoteEntry);

/** The game's record from its events: moves and the notes between them. */
export function gameRecord(events: readonly GameEventJson[]): RecordEntry[] {
  const out: RecordEntry[] = [];
  let ply = 0;
  for (const e of events) {
    const seq = Number(e.seq ?? 0);
    if (e.moved) {
      const m = e.moved;
      const side = sideName(m.side);
      if (!side || !m.move) continue;
      ply++;
      const entry: RecordEntry = { type: "move", seq, ply, side, from: m.move.from ?? "", to: m.move.to ?? "", pieceId: m.pieceId ?? 0 };
      if (m.piece) entry.piece = m.piece;
      if (m.combat) {
        entry.combat = {
          attackerSurvives: m.combat.attackerSurvives ?? false,
          defenderSurvives: m.combat.defenderSurvives ?? false,
          flagCaptured: m.combat.flagCaptured ?? false,
          defenderId: m.combat.defenderId ?? 0,
        };
        if (m.combat.defenderPiece) entry.combat.defenderPiece = m.combat.defenderPiece;
      }
      out.push(entry);
      continue;
    }
    const note = (kind: NoteEntry["kind"], s: SideJson | undefined, count?: number) => {
      const side = sideName(s);
      if (!side) return;
      const n: RecordEntry = { type: "note", seq, kind, side };
      if (count !== undefined) n.count = count;
      out.push(n);
    };
    if (e.timedOut) {
      ply++;
      note("timeout", e.timedOut.side, e.timedOut.count ?? 0);
    } else if (e.drawOffered) note("drawOffered", e.drawOffered.side);
    else if (e.drawDeclined) note("drawDeclined", e.drawDeclined.side);
    else if (e.drawLapsed) note("drawLapsed", e.drawLapsed.side);
    else if (e.resigned) note("resigned", e.resigned.side);
    else if (e.seatLost) note("seatLost", e.seatLost.side);
  }
  return out;
}

/** A piece removed in a fight: its side, id, and kind when this player may know it. */
export interface Captured {
  side: SideName;
  id: number;
  piece?: string;
}

/**
 * The pieces removed so far, from the fights. Ids come from the pieces list of PlayStarted (the
 * attacker by `pieceId`, the defender by `defenderId`); kinds only where the events carry them.
 */
export function capturedPieces(events: readonly GameEventJson[]): Captured[] {
  const out: Captured[] = [];
  for (const e of events) {
    const m = e.moved;
    if (!m?.combat) continue;
    const side = sideName(m.side);
    if (!side) continue;
    if (!m.combat.attackerSurvives) {
      const c: Captured = { side, id: m.pieceId ?? 0 };
      if (m.piece) c.piece = m.piece;
      out.push(c);
    }
    if (!m.combat.defenderSurvives) {
      const c: Captured = { side: other(side), id: m.combat.defenderId ?? 0 };
      if (m.combat.defenderPiece) c.piece = m.combat.defenderPiece;
      out.push(c);
    }
  }
  return out;
}

/**
 * The game's record with every kind the end revealed: after the end the view's reveal gives the
 * starting kind of every piece by id, so each move names its mover and each fight its defender,
 * as the board and the replay do. Kinds the events carry are kept; nothing is added before the
 * end (no reveal, no kinds).
 */
export function revealRecord(record: readonly RecordEntry[], revealed: ReadonlyMap<number, string>): RecordEntry[] {
  if (revealed.size === 0) return [...record];
  return record.map((e) => {
    if (e.type !== "move") return e;
    const out = { ...e };
    const piece = e.piece ?? revealed.get(e.pieceId);
    if (piece) out.piece = piece;
    if (e.combat) {
      const defender = e.combat.defenderPiece ?? revealed.get(e.combat.defenderId);
      out.combat = { ...e.combat };
      if (defender) out.combat.defenderPiece = defender;
    }
    return out;
  });
}

/** The kind of every piece by id, from an ended view's reveal (empty before the end). */
export function revealedKinds(view: GameViewJson | null): Map<number, string> {
  const m = new Map<number, string>();
  if (!view || phaseOf(view) !== "ended") return m;
  for (const p of view.reveal?.startingPieces ?? []) if (p.piece) m.set(p.id ?? 0, p.piece);
  return m;
}

/** The last move of the game, for drawing it on the board. */
export function lastMove(events: readonly GameEventJson[]): { from: string; to: string } | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const m = events[i]?.moved?.move;
    if (m) return { from: m.from ?? "", to: m.to ?? "" };
  }
  return null;
}

/** The pieces on the board of a view, by square. */
export function piecesBySquare(pieces: readonly VisiblePieceJson[] | undefined): Map<string, VisiblePieceJson> {
  const m = new Map<string, VisiblePieceJson>();
  for (const p of pieces ?? []) if (p.square) m.set(p.square, p);
  return m;
}

/** Whether the viewer is to move in a view. */
export function turnOf(view: GameViewJson): "mine" | "theirs" | "" {
  const seat = seatOf(view);
  if (phaseOf(view) !== "play" || seat === "spectator") return "";
  return sideName(view.toMove) === seat ? "mine" : "theirs";
}

/** A player's result at the end, or null for a spectator or a running game. */
export function outcomeFor(view: GameViewJson): "win" | "loss" | "draw" | null {
  if (phaseOf(view) !== "ended") return null;
  const seat = seatOf(view);
  const winner = sideName(view.outcome?.winner);
  if (!winner) return "draw";
  if (seat === "spectator") return null;
  return winner === seat ? "win" : "loss";
}
