/**
 * The game screen's state: one plain value, apart from the DOM, and the pure transitions that
 * make the next value from it (`(state, input) -> state`). The screen (`ui/game.ts`) holds the
 * current value, replaces it with a transition's answer and asks for a redraw; the drawing
 * (`ui/game-view.ts`) reads it and nothing else. Nothing here touches the DOM, a socket or
 * storage, so every transition is tested in Node (`test/game-screen.test.ts`).
 *
 * Transitions that need the engine take it as an argument: its functions answer from their
 * inputs alone (topology, legal moves, swap checks, typed moves, replays), so the transition stays
 * a function of its inputs. The inference, which learns from events one by one, is the screen's:
 * its answers come in through `withPossible`.
 */
import type { GameEventJson, GameStatusJson, GameViewJson, VisiblePieceJson } from "../gen/hiddenfront/v1/game_pb.js";
import type { Board, Engine, ReplayStep, SimpleMove } from "../engine/types.js";
import { lastMove, phaseOf, seatOf, sideName, type SideName } from "./game.js";
import { secondsLeft } from "./clock.js";
import { hasKey, pieceName, type Key } from "../i18n/index.js";

/**
 * The game's live status: presence, the running deadlines, timeouts used and the draw offer,
 * with the game's version when it was read. Kept apart from the position because its source is
 * apart: the `status` items of the game's follow (and the view read when the game opens); the one
 * transition that writes it is `withStatus`.
 */
export type GameStatus = GameStatusJson;

/** An error shown above the board: a server's reason, or the page's own with its message key. */
export interface ShownError {
  /** The stable reason (`data-reason`): the server's, or the page's own (`MOVE_NOT_LEGAL`). */
  reason: string;
  /** The server's status code, named when the reason has no translation. */
  code: string;
  /** The page's own message, translated when drawn (so a language switch translates it too). */
  key?: Key;
  params?: Record<string, string>;
}

/** The end's step-through replay: the board after each ply, and the one shown. */
export interface ReplayState {
  steps: readonly ReplayStep[];
  index: number;
  /** How many events the steps were computed from (more may arrive after the ended view). */
  events: number;
}

/** What the player asked the server for by clicking or typing, for the screen to send. */
export type Command = { kind: "play"; move: SimpleMove } | { kind: "swap"; a: string; b: string };

/** Everything the game screen shows, as one value. */
export interface GameState {
  readonly gameId: string;
  readonly spectate: boolean;
  /**
   * The position: the view read from the server (`getGame`), then followed by each event with
   * the engine (`followEvents`). Its status fields are read from `status`.
   */
  readonly view: GameViewJson | null;
  readonly status: GameStatus;
  /** The events received, in order, each once. */
  readonly events: readonly GameEventJson[];
  /** The engine's topology of the view's rules. */
  readonly board: Board | null;
  /** The engine's legal moves of the viewer in the view (none for a spectator or out of play). */
  readonly legal: readonly SimpleMove[];
  /** The picked square: the piece to move in play, the first of a swap in deployment. */
  readonly selected: string | null;
  readonly error: ShownError | null;
  /** This player's guessed kinds of opponent pieces, by id (kept in local storage by the screen). */
  readonly marks: Readonly<Record<string, string>>;
  /** The kinds each opponent piece can still be, by id, from the inference. */
  readonly possible: ReadonlyMap<number, readonly string[]>;
  readonly showHints: boolean;
  /** The opponent piece whose mark panel is open. */
  readonly markTarget: number | null;
  /** Whether the resignation waits for its confirmation. */
  readonly resignAsk: boolean;
  /** The typed move, as typed. */
  readonly moveText: string;
  readonly replay: ReplayState | null;
  /** Whether a replay download is on its way. */
  readonly downloading: boolean;
  /** The legend as the player toggled it; null until they do (then: open during deployment). */
  readonly legendOpen: boolean | null;
}

/** A screen before the first view: the events kept from before a reload, the player's marks. */
export function initialState(o: {
  gameId: string;
  spectate: boolean;
  events?: readonly GameEventJson[];
  marks?: Readonly<Record<string, string>>;
  showHints?: boolean;
}): GameState {
  return {
    gameId: o.gameId,
    spectate: o.spectate,
    view: null,
    status: {},
    events: o.events ?? [],
    board: null,
    legal: [],
    selected: null,
    error: null,
    marks: o.marks ?? {},
    possible: new Map(),
    showHints: o.showHints ?? false,
    markTarget: null,
    resignAsk: false,
    moveText: "",
    replay: null,
    downloading: false,
    legendOpen: null,
  };
}

/** The status fields of a view. */
export function statusOf(view: GameViewJson): GameStatus {
  return {
    version: view.version,
    southConnected: view.southConnected,
    northConnected: view.northConnected,
    turnDeadlineUnixMillis: view.turnDeadlineUnixMillis,
    southAwayDeadlineUnixMillis: view.southAwayDeadlineUnixMillis,
    northAwayDeadlineUnixMillis: view.northAwayDeadlineUnixMillis,
    southTimeouts: view.southTimeouts,
    northTimeouts: view.northTimeouts,
    drawOffer: view.drawOffer,
  };
}

/**
 * The game's live status, from wherever it comes: the one writer of `state.status`. A status
 * older than the one held (a lower version: a view read before a status item that came first)
 * changes nothing: the same state comes back.
 */
export function withStatus(s: GameState, status: GameStatus): GameState {
  if (Number(status.version ?? 0) < Number(s.status.version ?? 0)) return s;
  return { ...s, status: { ...status } };
}

/**
 * A new view of the position: the board's topology when the rules are new, the viewer's legal
 * moves, the selection dropped where it no longer applies, the end's replay. An answer older than
 * the view shown (answers to two fetches may cross) changes nothing: the same state comes back.
 */
export function withView(s: GameState, view: GameViewJson, engine: Engine): GameState {
  const prev = s.view;
  if (prev && Number(prev.version ?? 0) > Number(view.version ?? 0)) return s;
  const rules = view.rules ?? "hidden-front";
  let board = s.board;
  if (!board || board.rules !== rules) {
    try {
      board = engine.topology(rules);
    } catch {
      board = null;
    }
  }
  const phase = phaseOf(view);
  let legal: SimpleMove[] = [];
  if (phase === "play" && seatOf(view) !== "spectator") {
    try {
      legal = engine.legalMoves(view);
    } catch (e) {
      console.warn("hidden-front: legal moves", e);
    }
  }
  let selected = s.selected;
  if (selected && phase !== "deployment" && !legal.some((m) => m.from === selected)) selected = null;
  if (phase !== "deployment" && prev && phaseOf(prev) === "deployment") selected = null;
  const next: GameState = { ...s, view, board, legal, selected, resignAsk: phase === "play" && s.resignAsk };
  return withReplay(next, engine);
}

/**
 * A `getGame` answer (read when the game opens, after a reconnect, or after an event that did
 * not follow): its view and the status fields it holds (dropped with the view when the answer is
 * older than the view shown, and the status alone when a newer status item came first). Events
 * received after its version are followed by `followEvents`.
 */
export function withGetGame(s: GameState, view: GameViewJson, engine: Engine): GameState {
  const next = withView(s, view, engine);
  return next === s ? s : withStatus(next, statusOf(view));
}

/**
 * The view followed by every event received after its version, in order, with the engine's
 * `applyEvent`: what keeps the position current between reads of the view. `stale` is true when
 * an event does not follow (the engine refused it: an event missed, or a view that is not this
 * game's); the view is then left at the last event that followed and the screen reads it again.
 * Before the first view, nothing is followed (the view read then comes with its own version).
 */
export function followEvents(s: GameState, engine: Engine): { state: GameState; stale: boolean } {
  const held = s.view;
  if (!held) return { state: s, stale: false };
  const version = Number(held.version ?? 0);
  let from = s.events.length;
  while (from > 0 && Number(s.events[from - 1]?.seq ?? 0) > version) from--;
  let view = held;
  let stale = false;
  for (const event of s.events.slice(from)) {
    try {
      view = engine.applyEvent(view, event);
    } catch (e) {
      console.warn("hidden-front: an event did not follow the view", e);
      stale = true;
      break;
    }
  }
  return { state: view === held ? s : withView(s, view, engine), stale };
}

/** The events received so far (a new one appended), and the end's replay with them. */
export function withEvents(s: GameState, events: readonly GameEventJson[], engine: Engine): GameState {
  return withReplay({ ...s, events }, engine);
}

/**
 * The end's replay, from the reveal's starting pieces and the events received. Recomputed when
 * more events arrive: the ended view can come before the last Moved event (answers and events
 * have no fixed order), and a replay cut short would miss the final move. A reader at the last
 * position stays at the last; one stepping back keeps their position.
 */
function withReplay(s: GameState, engine: Engine): GameState {
  const view = s.view;
  if (!view || phaseOf(view) !== "ended" || !view.reveal?.startingPieces?.length) return s;
  if (s.replay && s.replay.events === s.events.length) return s;
  try {
    const steps = engine.replayBoards(view.rules ?? "hidden-front", view.reveal.startingPieces, [...s.events]);
    const last = Math.max(0, steps.length - 1);
    const atEnd = !s.replay || s.replay.index >= s.replay.steps.length - 1;
    const index = atEnd ? last : Math.min(s.replay!.index, last);
    return { ...s, replay: { steps, index, events: s.events.length } };
  } catch (e) {
    console.warn("hidden-front: replay", e);
    return s;
  }
}

/** One step through the replay (-1 back, +1 on), within its ends. */
export function stepReplay(s: GameState, delta: number): GameState {
  if (!s.replay) return s;
  const index = Math.min(s.replay.steps.length - 1, Math.max(0, s.replay.index + delta));
  return index === s.replay.index ? s : { ...s, replay: { ...s.replay, index } };
}

/** The error shown, or none. */
export function withError(s: GameState, error: ShownError | null): GameState {
  return { ...s, error };
}

/** A server's error, shown by its stable reason. */
export function withServerError(s: GameState, reason: string, code: string): GameState {
  return withError(s, { reason: reason || code, code });
}

/** The page's own error: a reason for tests and styles, a message key for the player. */
function localError(s: GameState, reason: string, key: Key, params: Record<string, string> = {}): GameState {
  return withError(s, { reason, code: "", key, params });
}

/** The kinds the inference says each opponent piece can still be. */
export function withPossible(s: GameState, possible: ReadonlyMap<number, readonly string[]>): GameState {
  return { ...s, possible };
}

/** The player's marks, as stored. */
export function withMarks(s: GameState, marks: Readonly<Record<string, string>>): GameState {
  return { ...s, marks };
}

export function withHints(s: GameState, showHints: boolean): GameState {
  return { ...s, showHints };
}

export function withMoveText(s: GameState, moveText: string): GameState {
  return { ...s, moveText };
}

/** Resign pressed (`true`: ask for the confirmation) or the question dropped (`false`). */
export function withResignAsk(s: GameState, resignAsk: boolean): GameState {
  return { ...s, resignAsk };
}

export function withDownloading(s: GameState, downloading: boolean): GameState {
  return { ...s, downloading };
}

export function withLegendOpen(s: GameState, legendOpen: boolean): GameState {
  return { ...s, legendOpen };
}

/** The player's own deployment, square -> kind (deployment phase). */
export function ownDeployment(s: GameState): Map<string, string> {
  const m = new Map<string, string>();
  for (const p of s.view?.ownDeployment?.placements ?? []) if (p.square) m.set(p.square, p.piece ?? "");
  return m;
}

/** Whether this player has confirmed their deployment. */
export function ownConfirmed(s: GameState): boolean {
  const v = s.view;
  if (!v) return false;
  const seat = seatOf(v);
  return seat === "south" ? !!v.southConfirmed : seat === "north" ? !!v.northConfirmed : false;
}

/** The legal destinations of the selected piece (play only). */
export function legalTargets(s: GameState): Set<string> {
  const out = new Set<string>();
  if (!s.view || phaseOf(s.view) !== "play" || !s.selected) return out;
  for (const m of s.legal) if (m.from === s.selected) out.add(m.to);
  return out;
}

/** The pieces drawn in play and at the end: the view's, or the replay's position being shown. */
export function piecesShown(s: GameState): readonly VisiblePieceJson[] {
  const view = s.view;
  if (!view) return [];
  const step = s.replay?.steps[s.replay.index];
  if (phaseOf(view) === "ended" && step) return step.pieces;
  return view.pieces ?? [];
}

/** The move drawn on the board: the last one played, or the replay's move being shown. */
export function moveShown(s: GameState): { from: string; to: string } | null {
  if (s.view && phaseOf(s.view) === "ended" && s.replay) return s.replay.steps[s.replay.index]?.move ?? null;
  return lastMove(s.events);
}

/**
 * A click on a square. Deployment: pick a piece, drop the pick, or swap with the picked one.
 * Play: a legal destination of the picked piece plays the move; an own piece is picked; an
 * opponent piece opens its mark panel. Answers the next state and the command to send, if any.
 */
export function clickSquare(s: GameState, name: string, engine: Engine): [GameState, Command | null] {
  const view = s.view;
  if (!view || !s.board) return [s, null];
  const phase = phaseOf(view);
  const seat = seatOf(view);
  if (seat === "spectator") return [s, null];
  if (phase === "deployment") {
    if (ownConfirmed(s) || !ownDeployment(s).has(name)) return [s, null];
    if (!s.selected) return [{ ...s, selected: name }, null];
    if (s.selected === name) return [{ ...s, selected: null }, null];
    return swapSquares({ ...s, selected: null }, s.selected, name, engine);
  }
  if (phase !== "play") return [s, null];
  const selected = s.selected;
  if (selected && s.legal.some((m) => m.from === selected && m.to === name)) return played(s, { from: selected, to: name });
  const piece = (view.pieces ?? []).find((p) => p.square === name);
  if (piece && sideName(piece.side) === seat) return [{ ...s, selected: selected === name ? null : name, markTarget: null }, null];
  if (piece) return [{ ...s, selected: null, markTarget: piece.id ?? 0 }, null];
  return [{ ...s, selected: null }, null];
}

/** A piece dragged onto another during deployment: the swap, as two clicks would. */
export function dropPiece(s: GameState, from: string, to: string, engine: Engine): [GameState, Command | null] {
  return swapSquares({ ...s, selected: null }, from, to, engine);
}

/**
 * Swaps two squares of the own deployment when the engine allows it: shown at once (the server's
 * next view confirms it), or refused with the engine's reason before anything is sent.
 */
function swapSquares(s: GameState, a: string, b: string, engine: Engine): [GameState, Command | null] {
  const view = s.view;
  if (!view?.ownDeployment) return [s, null];
  const check = engine.checkSwap(view.rules ?? "hidden-front", view.ownDeployment, a, b);
  if (!check.ok) {
    const p = check.problems[0];
    const key = p && hasKey(`problem.${p.reason}`) ? (`problem.${p.reason}` as Key) : "problem.UNKNOWN";
    const family = s.board?.family ?? "junqi";
    const params = { square: p?.square ?? "", piece: p?.code ? pieceName(family, p.code) : "" };
    return [localError(s, p?.reason ?? "BAD_DEPLOYMENT", key, params), null];
  }
  return [{ ...s, view: { ...view, ownDeployment: check.deployment } }, { kind: "swap", a, b }];
}

/** The typed move sent (Enter or the Play button): read by the engine, refused unless legal. */
export function submitMoveText(s: GameState, engine: Engine): [GameState, Command | null] {
  const view = s.view;
  const text = s.moveText.trim();
  if (!view || !text) return [s, null];
  const parsed = engine.parseMove(view.rules ?? "hidden-front", text);
  if (!parsed.ok) return [localError(s, "MOVE_UNREADABLE", "game.move.bad"), null];
  const { from, to } = parsed.move;
  if (!s.legal.some((m) => m.from === from && m.to === to)) {
    return [localError(s, "MOVE_NOT_LEGAL", "game.move.notLegal", { move: `${from} ${to}` }), null];
  }
  return played(s, { from, to });
}

/** A move on its way: the pick and the typed text are done with. */
function played(s: GameState, move: SimpleMove): [GameState, Command] {
  return [{ ...s, selected: null, moveText: "" }, { kind: "play", move }];
}

/** A countdown as drawn: whole seconds left, or null when none runs. */
export function turnSecondsLeft(status: GameStatus, offset: number, now: number): number | null {
  return secondsLeft(status.turnDeadlineUnixMillis, offset, now);
}

/**
 * The sides shown as away (the opponent for a player, either side for a spectator) with the
 * seconds left before the seat is lost; only during play.
 */
export function awaySeconds(s: GameState, offset: number, now: number): Array<{ side: SideName; seconds: number }> {
  const view = s.view;
  if (!view || phaseOf(view) !== "play") return [];
  const seat = seatOf(view);
  const out: Array<{ side: SideName; seconds: number }> = [];
  for (const side of ["south", "north"] as const) {
    if (seat === side) continue;
    const deadline = side === "south" ? s.status.southAwayDeadlineUnixMillis : s.status.northAwayDeadlineUnixMillis;
    const seconds = secondsLeft(deadline, offset, now);
    if (seconds !== null) out.push({ side, seconds });
  }
  return out;
}
