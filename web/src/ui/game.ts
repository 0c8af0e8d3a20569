/**
 * The game screen: deployment, play and the end with its replay, built as lichess's chessground
 * is. One plain value holds everything shown (`GameState`, `state/game-screen.ts`); inputs (a
 * click, an event, a `getGame` answer, a language switch) replace it with the answer of a pure
 * transition and only request a redraw; `FrameScheduler` draws at most once per animation frame;
 * the drawing (`ui/game-view.ts`) is laid over the elements shown by `patchChildren`, which keeps
 * nodes by key, so focus and the move list's scroll survive. This class holds what is not state:
 * the connection, storage, the inference, the timers and the fetches in flight.
 *
 * The position is read from the server (`getGame`) once when the game opens, again after a
 * reconnection, and after an event the engine could not follow; otherwise it applies the events
 * of the game's follow with the engine's `applyEvent`. Presence and the clocks come from the
 * follow's `status` items and tick locally between them. The board, legal destinations,
 * swap checks, hints and the replay come from the engine, computed from what this player
 * received and nothing else.
 */
import type { GameEventJson } from "../gen/hiddenfront/v1/game_pb.js";
import type { Engine, InferenceLike } from "../engine/types.js";
import { Connection, ServerError } from "../api/ws.js";
import { GameLog, seatOf } from "../state/game.js";
import {
  clickSquare,
  dropPiece,
  followEvents,
  initialState,
  stepReplay,
  submitMoveText,
  withDownloading,
  withError,
  withEvents,
  withGetGame,
  withHints,
  withLegendOpen,
  withMarks,
  withMoveText,
  withPossible,
  withResignAsk,
  withServerError,
  withStatus,
  type Command,
  type GameState,
} from "../state/game-screen.js";
import { EventStore, Marks, local, session } from "../state/storage.js";
import { h, patchChildren } from "./dom.js";
import { drawClocks, drawGame, type ButtonRequest, type GameActions } from "./game-view.js";
import { FrameScheduler } from "./frame.js";

/** How close to the bottom (px) the move list counts as following the newest move. */
const MOVES_BOTTOM_SLACK_PX = 8;

/** What the screen needs from the page. */
export interface GameDeps {
  conn: Connection;
  engine: Engine;
  offset(): number;
  navigate(path: string): void;
}

/** One open game (played or watched). */
export class GameScreen {
  readonly root: HTMLElement;
  private state: GameState;
  private readonly log: GameLog;
  private readonly store = new EventStore(session);
  private readonly marks: Marks;
  private readonly engine: Engine;
  private readonly frame: FrameScheduler;
  private inference: InferenceLike | null = null;
  private inferenceFed = 0;
  private unfollow: (() => void) | null = null;
  private timers: number[] = [];
  private reading = false;
  private readAgain = false;
  /** How many events there were when an event last did not follow (one read for each such). */
  private staleAt = -1;
  private keySeq = 0;
  private destroyed = false;
  private boardShown = false;
  private readonly actions: GameActions;

  constructor(
    private readonly deps: GameDeps,
    readonly gameId: string,
    private readonly spectate: boolean,
  ) {
    this.root = h("section", { class: "game", "data-game": gameId });
    this.log = new GameLog(this.store.load(gameId, spectate));
    this.marks = new Marks(local, gameId);
    this.engine = measuredEngine(deps.engine);
    this.state = initialState({
      gameId,
      spectate,
      events: [...this.log.events],
      marks: this.marks.all(),
      showHints: local.getItem("hf.hints") === "1",
    });
    this.frame = new FrameScheduler(() => this.draw());
    this.actions = this.makeActions();
  }

  /**
   * Follows the game (from the seq after the last one kept, with status items), reads the view once,
   * and starts the clock timer, which redraws the countdowns from the deadlines held.
   */
  start(): HTMLElement {
    this.draw();
    this.unfollow = this.deps.conn.followGame({
      gameId: this.gameId,
      spectate: this.spectate,
      nextSeq: () => this.log.nextSeq(),
      onEvent: (e) => this.onEvent(e),
      onStatus: (status) => this.update(withStatus(this.state, status)),
      onError: (e) => this.showServerError(e),
      // Back after a lost connection: read the view again (events may have been missed while the
      // socket was down, and the server does not run the clocks while it is down).
      onResumed: () => void this.read(),
    });
    void this.read();
    this.timers.push(window.setInterval(() => drawClocks(this.root, this.state, this.deps.offset(), Date.now()), 250));
    return this.root;
  }

  /** Draws again (after a language change), in the next frame. */
  rerender(): void {
    this.frame.request();
  }

  /** Stops the follow and the timers (leaving the screen). */
  destroy(): void {
    this.destroyed = true;
    this.unfollow?.();
    for (const id of this.timers) clearInterval(id);
    this.inference?.free?.();
  }

  /** The next state, and a redraw in the next frame when it differs. */
  private update(next: GameState): void {
    if (next === this.state) return;
    this.state = next;
    this.frame.request();
  }

  private onEvent(e: GameEventJson): void {
    if (!this.log.add(e)) return; // seen before (a resume hint may repeat the last one)
    this.store.save(this.gameId, this.spectate, this.log.events);
    this.update(withEvents(this.state, [...this.log.events], this.engine));
    this.feedInference();
    this.follow();
  }

  /**
   * Follows the view by the events received after it. An event that does not follow makes the
   * screen read the view again, once for each such event (a view that still does not take the
   * next event waits for the one after it rather than asking again in a loop).
   */
  private follow(): void {
    const { state, stale } = followEvents(this.state, this.engine);
    this.update(state);
    if (stale && this.staleAt !== this.log.events.length) {
      this.staleAt = this.log.events.length;
      void this.read();
    }
  }

  /**
   * Reads the view (`getGame`) and follows it by the events received since its version. One
   * read at a time: a call while one is in flight makes one more read after it.
   */
  private async read(): Promise<void> {
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = true;
    try {
      const resp = await this.deps.conn.request("getGame", { gameId: this.gameId, spectate: this.spectate });
      if (this.destroyed) return;
      if (resp.game) {
        this.update(withGetGame(this.state, resp.game, this.engine));
        this.follow();
        this.startInference();
      }
    } catch (e) {
      if (e instanceof ServerError && e.reason !== "CONNECTION_LOST") this.showServerError(e);
    } finally {
      this.reading = false;
      if (this.readAgain && !this.destroyed) {
        this.readAgain = false;
        void this.read();
      }
    }
  }

  /** A player's inference, once the first view says which seat this player holds. */
  private startInference(): void {
    const view = this.state.view;
    if (this.inference || !view || !this.state.board) return;
    const seat = seatOf(view);
    if (seat === "spectator") return;
    try {
      this.inference = this.deps.engine.newInference(view.rules ?? "hidden-front", seat);
      this.inferenceFed = 0;
      this.feedInference();
    } catch (e) {
      console.warn("hidden-front: inference", e);
    }
  }

  private feedInference(): void {
    if (!this.inference) return;
    try {
      while (this.inferenceFed < this.log.events.length) {
        const e = this.log.events[this.inferenceFed++];
        if (e) this.inference.observe(e);
      }
      const possible = new Map(this.inference.possible().filter((p) => p.alive).map((p) => [p.id, p.codes]));
      this.update(withPossible(this.state, possible));
    } catch (e) {
      console.warn("hidden-front: inference", e);
    }
  }

  private idempotencyKey(): string {
    const rnd = typeof crypto !== "undefined" && "randomUUID" in crypto ? crypto.randomUUID() : String(Math.random()).slice(2);
    return `web-${rnd}-${++this.keySeq}`;
  }

  private context() {
    return { gameId: this.gameId, idempotencyKey: this.idempotencyKey() };
  }

  /**
   * Sends an action. Its answer (the `ActionResult`) is only the acknowledgment: the events it
   * caused come on the game's follow, before or after it, and are applied from there. A refused
   * action makes the screen read the view again, since what the page showed (a swap shown at
   * once, a move it thought legal) was not the game's.
   */
  private async act(fn: () => Promise<unknown>): Promise<void> {
    this.update(withError(this.state, null));
    try {
      await fn();
    } catch (e) {
      if (e instanceof ServerError) {
        this.showServerError(e);
        if (e.reason !== "CONNECTION_LOST") void this.read();
      } else throw e;
    }
  }

  private showServerError(e: ServerError): void {
    this.update(withServerError(this.state, e.reason, e.code));
  }

  /** A transition that may ask the server for something: the next state, then the request. */
  private apply([next, command]: [GameState, Command | null]): void {
    this.update(next);
    if (command?.kind === "play") void this.act(() => this.deps.conn.request("play", { context: this.context(), move: command.move }));
    else if (command?.kind === "swap") void this.act(() => this.deps.conn.request("swap", { context: this.context(), squareA: command.a, squareB: command.b }));
  }

  private send(request: ButtonRequest): void {
    const conn = this.deps.conn;
    switch (request) {
      case "reshuffle":
        return void this.act(() => conn.request("reshuffle", { context: this.context() }));
      case "confirm":
        return void this.act(() => conn.request("confirm", { context: this.context() }));
      case "propose_draw":
        return void this.act(() => conn.request("proposeDraw", { context: this.context() }));
      case "accept_draw":
      case "decline_draw":
        return void this.act(() => conn.request("respondDraw", { context: this.context(), accept: request === "accept_draw" }));
      case "concede":
        this.update(withResignAsk(this.state, false));
        return void this.act(() => conn.request("concede", { context: this.context() }));
    }
  }

  private makeActions(): GameActions {
    return {
      square: (name) => this.apply(clickSquare(this.state, name, this.engine)),
      drop: (from, to) => this.apply(dropPiece(this.state, from, to, this.engine)),
      moveText: (text) => this.update(withMoveText(this.state, text)),
      submitMoveText: () => this.apply(submitMoveText(this.state, this.engine)),
      send: (request) => this.send(request),
      askResign: (ask) => this.update(withResignAsk(this.state, ask)),
      stepReplay: (delta) => this.update(stepReplay(this.state, delta)),
      hints: (on) => {
        local.setItem("hf.hints", on ? "1" : "0");
        this.update(withHints(this.state, on));
      },
      mark: (pieceId, code) => {
        this.marks.set(pieceId, code);
        this.update(withMarks(this.state, this.marks.all()));
      },
      dismissError: () => this.update(withError(this.state, null)),
      downloadReplay: () => void this.downloadReplay(),
      legend: (open) => this.update(withLegendOpen(this.state, open)),
    };
  }

  /**
   * Saves the finished game's replay (docs/replay-format.md) as a text file: `exportReplay`
   * over the page's connection (players and spectators alike), under the name the server gives
   * (`hidden-front-<game id>.replay.txt`).
   */
  private async downloadReplay(): Promise<void> {
    if (this.state.downloading) return;
    this.update(withError(withDownloading(this.state, true), null));
    try {
      const resp = await this.deps.conn.request("exportReplay", { gameId: this.gameId });
      saveText(resp.fileName || replayFileName(this.gameId), resp.replay ?? "");
    } catch (e) {
      if (e instanceof ServerError) this.showServerError(e);
      else throw e;
    } finally {
      this.update(withDownloading(this.state, false));
    }
  }

  /**
   * Draws the state over what is shown. Whether the move list follows the newest move is read
   * from the list itself, synchronously, just before: a list scrolled to (within a few pixels
   * of) its bottom is scrolled to its new bottom after the drawing; one the reader scrolled up
   * is a kept node, so it keeps its offset by itself. Never from a `scroll` listener: the browser
   * fires that one later, after a drawing that follows at once.
   */
  private draw(): void {
    if (this.destroyed) return;
    const list = this.movesList();
    const follow = !list || list.scrollHeight - list.clientHeight - list.scrollTop <= MOVES_BOTTOM_SLACK_PX;
    const drawing = drawGame(this.state, { actions: this.actions, now: Date.now(), offset: this.deps.offset(), follow });
    for (const name of ["data-phase", "data-turn", "data-seat", "data-version", "data-rules"]) {
      const value = drawing.attributes[name];
      if (value === undefined) this.root.removeAttribute(name);
      else if (this.root.getAttribute(name) !== value) this.root.setAttribute(name, value);
    }
    patchChildren(this.root, drawing.children);
    const after = this.movesList();
    if (after && follow) after.scrollTop = after.scrollHeight;
    if (!this.boardShown && this.state.view && this.state.board) {
      this.boardShown = true;
      // The first playable board, for the figure "opening the page to a playable board".
      queueMicrotask(() => performance.mark("hf-board"));
    }
  }

  private movesList(): HTMLElement | null {
    return this.root.querySelector<HTMLElement>('[data-field="moves"]');
  }
}

/** The engine, its legal-move computations measured (performance entries "hf-legal-moves"). */
function measuredEngine(engine: Engine): Engine {
  return {
    ...engine,
    legalMoves(view) {
      const t0 = performance.now();
      const moves = engine.legalMoves(view);
      performance.measure("hf-legal-moves", { start: t0, end: performance.now() });
      return moves;
    },
  };
}

/** The file name of a game's replay when the server gives none (as `crates/replay-export`'s `file_name`). */
export function replayFileName(gameId: string): string {
  return `hidden-front-${gameId}.replay.txt`;
}

/** Offers `text` to the browser as a download named `name` (a blob URL, freed afterwards). */
function saveText(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: "text/plain;charset=utf-8" }));
  const a = h("a", { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
