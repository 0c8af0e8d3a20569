/**
 * The game screen: deployment, play and the end with its replay. The position and clocks come
 * from the server's view (get_game after each event and every few seconds); the board, legal
 * destinations, swap checks, hints and the replay come from the engine, computed from what this
 * player received and nothing else.
 */
import type { GameEventJson, GameViewJson, VisiblePieceJson } from "../gen/hiddenfront/v1/game_pb.js";
import type { Board, BoardNode, Engine, InferenceLike, ReplayStep, SimpleMove } from "../engine/types.js";
import { Connection, ServerError } from "../api/ws.js";
import {
  GameLog,
  capturedPieces,
  gameRecord,
  lastMove,
  other,
  revealRecord,
  revealedKinds,
  outcomeFor,
  phaseOf,
  seatOf,
  sideName,
  turnOf,
  type SideName,
} from "../state/game.js";
import { EventStore, Marks, local, session } from "../state/storage.js";
import { formatSeconds, secondsLeft } from "../state/clock.js";
import { hasKey, pieceName, pieceShort, reasonText, t, type Key } from "../i18n/index.js";
import { h, replaceKeepingFocus, type Child } from "./dom.js";
import { renderBoard, type SquareContent } from "./board.js";

/** How close to the bottom (px) the move list counts as following the newest move. */
const MOVES_BOTTOM_SLACK_PX = 8;

/** What the screen needs from the page. */
export interface GameDeps {
  conn: Connection;
  engine: Engine;
  offset(): number;
  navigate(path: string): void;
}

interface ShownError {
  reason: string;
  text: string;
}

/** One open game (played or watched). */
export class GameScreen {
  readonly root: HTMLElement;
  private view: GameViewJson | null = null;
  private log: GameLog;
  private store = new EventStore(session);
  private board: Board | null = null;
  private legal: SimpleMove[] = [];
  private selected: string | null = null;
  private error: ShownError | null = null;
  private marks: Marks;
  private inference: InferenceLike | null = null;
  private inferenceFed = 0;
  private possible = new Map<number, string[]>();
  private showHints = false;
  private markTarget: number | null = null;
  private resignAsk = false;
  private moveText = "";
  private replay: ReplayStep[] | null = null;
  private replayIdx = 0;
  private replayEvents = 0;
  private unsubscribe: (() => void) | null = null;
  private timers: number[] = [];
  private refreshing = 0;
  private refreshFor = 0;
  private refreshAgain = false;
  private keySeq = 0;
  private destroyed = false;
  private boardShown = false;
  private legendOpen: boolean | null = null;
  private movesScroll = 0;
  /** Whether the move list follows the newest move (the reader has not scrolled up). */
  private movesFollow = true;
  private downloading = false;

  constructor(
    private readonly deps: GameDeps,
    readonly gameId: string,
    private readonly spectate: boolean,
  ) {
    this.root = h("section", { class: "game", "data-game": gameId });
    this.log = new GameLog(this.store.load(gameId, spectate));
    this.marks = new Marks(local, gameId);
    this.showHints = local.getItem("hf.hints") === "1";
  }

  /** Subscribes (from the seq after the last one kept) and starts the refresh and clock timers. */
  start(): HTMLElement {
    this.render();
    this.unsubscribe = this.deps.conn.subscribeGame({
      gameId: this.gameId,
      spectate: this.spectate,
      nextSeq: () => this.log.nextSeq(),
      onEvent: (e) => this.onEvent(e),
      onError: (e) => this.showServerError(e),
      // Back after a lost connection: read the view again, so the clocks shown are the server's
      // (it does not run them while it is down), even if no event was missed.
      onResumed: () => void this.refresh(),
    });
    void this.refresh();
    this.timers.push(window.setInterval(() => this.tick(), 250));
    this.timers.push(
      window.setInterval(() => {
        if (this.view && phaseOf(this.view) !== "ended") void this.refresh();
      }, 4000),
    );
    return this.root;
  }

  /** Draws again in place (after a language change). */
  rerender(): void {
    this.render();
  }

  /** Stops the subscription and the timers (leaving the screen). */
  destroy(): void {
    this.destroyed = true;
    this.unsubscribe?.();
    for (const id of this.timers) clearInterval(id);
    this.inference?.free?.();
  }

  private onEvent(e: GameEventJson): void {
    if (!this.log.add(e)) return; // seen before (a resume hint may repeat the last one)
    this.store.save(this.gameId, this.spectate, this.log.events);
    this.feedInference();
    if (this.replay) {
      this.updateReplay();
      this.render();
    }
    void this.refresh();
  }

  /**
   * Fetches the view. A fetch in flight answers for every event received before it was sent; an
   * event received after it (the computer's reply while the view of the player's own move is on
   * its way) gets a fetch of its own at once, rather than one more round trip after the first
   * answer (at most two in flight; `setView` drops an answer older than the view shown). Other
   * calls while one is in flight cause one more fetch after it.
   */
  private async refresh(): Promise<void> {
    const events = this.log.events.length;
    if (this.refreshing > 0 && (this.refreshing >= 2 || this.refreshFor >= events)) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing++;
    this.refreshFor = events;
    try {
      const resp = await this.deps.conn.request("get_game", { gameId: this.gameId, spectate: this.spectate });
      if (this.destroyed) return;
      if (resp.game) this.setView(resp.game);
    } catch (e) {
      if (e instanceof ServerError && e.reason !== "CONNECTION_LOST") this.showServerError(e);
    } finally {
      this.refreshing--;
      if (this.refreshAgain && this.refreshing === 0 && !this.destroyed) {
        this.refreshAgain = false;
        void this.refresh();
      }
    }
  }

  private setView(view: GameViewJson): void {
    const prev = this.view;
    if (prev && Number(prev.version ?? 0) > Number(view.version ?? 0)) return; // an older answer
    this.view = view;
    const rules = view.rules ?? "hidden-front";
    if (!this.board || this.board.rules !== rules) {
      try {
        this.board = this.deps.engine.topology(rules);
      } catch {
        this.board = null;
      }
    }
    const phase = phaseOf(view);
    const seat = seatOf(view);
    this.legal = [];
    if (phase === "play" && seat !== "spectator") {
      try {
        // Measured (performance entries "hf-legal-moves") for the figures of the browser's engine.
        const t0 = performance.now();
        this.legal = this.deps.engine.legalMoves(view);
        performance.measure("hf-legal-moves", { start: t0, end: performance.now() });
      } catch (e) {
        console.warn("hidden-front: legal moves", e);
      }
    }
    if (this.selected && !this.legal.some((m) => m.from === this.selected) && phase !== "deployment") this.selected = null;
    if (phase !== "deployment" && prev && phaseOf(prev) === "deployment") this.selected = null;
    if (seat !== "spectator" && !this.inference && this.board) {
      try {
        this.inference = this.deps.engine.newInference(rules, seat);
        this.inferenceFed = 0;
        this.feedInference();
      } catch (e) {
        console.warn("hidden-front: inference", e);
      }
    }
    this.updateReplay();
    if (phase !== "play") this.resignAsk = false;
    this.render();
  }

  /**
   * The end's replay, from the reveal's starting pieces and the events received. Recomputed when
   * more events arrive: the ended view can come before the last Moved event (answers and events
   * have no fixed order), and a replay cut short would miss the final move.
   */
  private updateReplay(): void {
    const view = this.view;
    if (!view || phaseOf(view) !== "ended" || !view.reveal?.startingPieces?.length) return;
    if (this.replay && this.replayEvents === this.log.events.length) return;
    const atEnd = !this.replay || this.replayIdx >= this.replay.length - 1;
    try {
      this.replay = this.deps.engine.replayBoards(view.rules ?? "hidden-front", view.reveal.startingPieces, this.log.events);
      this.replayEvents = this.log.events.length;
      if (atEnd) this.replayIdx = Math.max(0, this.replay.length - 1);
      else this.replayIdx = Math.min(this.replayIdx, this.replay.length - 1);
    } catch (e) {
      console.warn("hidden-front: replay", e);
    }
  }

  private feedInference(): void {
    if (!this.inference) return;
    try {
      while (this.inferenceFed < this.log.events.length) {
        const e = this.log.events[this.inferenceFed++];
        if (e) this.inference.observe(e);
      }
      this.possible = new Map(this.inference.possible().filter((p) => p.alive).map((p) => [p.id, p.codes]));
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

  private async act(fn: () => Promise<unknown>): Promise<void> {
    this.error = null;
    try {
      await fn();
    } catch (e) {
      if (e instanceof ServerError) {
        this.showServerError(e);
        if (e.reason === "STALE_VERSION" || e.reason === "NOT_YOUR_TURN" || e.reason === "WRONG_PHASE") void this.refresh();
      } else throw e;
    }
    void this.refresh();
  }

  private showServerError(e: ServerError): void {
    this.error = { reason: e.reason || e.code, text: reasonText(e.reason, e.code) };
    this.render();
  }

  private showLocalError(reason: string, key: Key, params: Record<string, string> = {}): void {
    this.error = { reason, text: t(key, params) };
    this.render();
  }

  // ---- actions -------------------------------------------------------------------------------

  private onSquare(name: string): void {
    const view = this.view;
    const board = this.board;
    if (!view || !board) return;
    const phase = phaseOf(view);
    const seat = seatOf(view);
    if (phase === "deployment" && seat !== "spectator") {
      if (this.ownConfirmed()) return;
      const own = this.ownDeploymentMap();
      if (!own.has(name)) return;
      if (!this.selected) this.selected = name;
      else if (this.selected === name) this.selected = null;
      else {
        const a = this.selected;
        this.selected = null;
        this.swap(a, name);
        return;
      }
      this.render();
      return;
    }
    if (phase === "play" && seat !== "spectator") {
      if (this.selected && this.legal.some((m) => m.from === this.selected && m.to === name)) {
        const move = { from: this.selected, to: name };
        this.selected = null;
        this.play(move);
        return;
      }
      const piece = (view.pieces ?? []).find((p) => p.square === name);
      if (piece && sideName(piece.side) === seat) {
        this.selected = this.selected === name ? null : name;
        this.markTarget = null;
      } else if (piece) {
        this.markTarget = piece.id ?? 0;
        this.selected = null;
      } else {
        this.selected = null;
      }
      this.render();
    }
  }

  private swap(a: string, b: string): void {
    const view = this.view;
    if (!view?.ownDeployment) return;
    const rules = view.rules ?? "hidden-front";
    const check = this.deps.engine.checkSwap(rules, view.ownDeployment, a, b);
    if (!check.ok) {
      const p = check.problems[0];
      const key = p && hasKey(`problem.${p.reason}`) ? (`problem.${p.reason}` as Key) : "problem.UNKNOWN";
      const family = this.board?.family ?? "junqi";
      this.showLocalError(p?.reason ?? "BAD_DEPLOYMENT", key, { square: p?.square ?? "", piece: p?.code ? pieceName(family, p.code) : "" });
      return;
    }
    view.ownDeployment = check.deployment;
    this.render();
    void this.act(() => this.deps.conn.request("swap", { context: this.context(), squareA: a, squareB: b }));
  }

  private play(move: SimpleMove): void {
    this.moveText = "";
    this.render();
    void this.act(() => this.deps.conn.request("play", { context: this.context(), move }));
  }

  private submitMoveText(): void {
    const view = this.view;
    if (!view) return;
    const text = this.moveText.trim();
    if (!text) return;
    const parsed = this.deps.engine.parseMove(view.rules ?? "hidden-front", text);
    if (!parsed.ok) {
      this.showLocalError("MOVE_UNREADABLE", "game.move.bad");
      return;
    }
    const { from, to } = parsed.move;
    if (!this.legal.some((m) => m.from === from && m.to === to)) {
      this.showLocalError("MOVE_NOT_LEGAL", "game.move.notLegal", { move: `${from} ${to}` });
      return;
    }
    this.play({ from, to });
  }

  private ownConfirmed(): boolean {
    const v = this.view;
    if (!v) return false;
    const seat = seatOf(v);
    return seat === "south" ? !!v.southConfirmed : seat === "north" ? !!v.northConfirmed : false;
  }

  private ownDeploymentMap(): Map<string, string> {
    const m = new Map<string, string>();
    for (const p of this.view?.ownDeployment?.placements ?? []) if (p.square) m.set(p.square, p.piece ?? "");
    return m;
  }

  // ---- rendering -----------------------------------------------------------------------------

  private render(): void {
    if (this.destroyed) return;
    const view = this.view;
    const root = this.root;
    if (!view || !this.board) {
      root.setAttribute("data-phase", "");
      replaceKeepingFocus(root, [
        this.renderError(),
        h("p", { class: "loading" }, this.error ? "" : t("game.loading")),
        this.error?.reason === "NOT_SEATED" && !this.spectate
          ? h("a", { href: `/watch/${encodeURIComponent(this.gameId)}`, class: "link", "data-link": true }, t("lobby.watch"))
          : null,
        h("a", { href: "/", class: "link", "data-link": true }, t("lobby.back")),
      ]);
      return;
    }
    const phase = phaseOf(view);
    const seat = seatOf(view);
    root.setAttribute("data-phase", phase);
    root.setAttribute("data-turn", turnOf(view));
    root.setAttribute("data-seat", seat);
    root.setAttribute("data-version", String(Number(view.version ?? 0)));
    root.setAttribute("data-rules", view.rules ?? "");
    this.readMovesScroll();
    if (!this.boardShown) {
      this.boardShown = true;
      // The first playable board, for the figure "opening the page to a playable board".
      queueMicrotask(() => performance.mark("hf-board"));
    }
    replaceKeepingFocus(root, [
      this.renderHead(view),
      h("div", { class: "banner away", "data-field": "away-banner", hidden: true }),
      this.renderError(),
      h(
        "div",
        { class: "game-main" },
        h("div", { class: "board-wrap" }, this.renderBoardFor(view)),
        h("aside", { class: "panel" }, this.renderControls(view), this.renderMarkPanel(view), this.renderCaptured(view), this.renderMoves(), this.renderLegend()),
      ),
    ]);
    this.placeMovesScroll();
    this.tick();
  }

  /**
   * Reads, synchronously and before the list is drawn again, where the reader left the move list:
   * its offset, and whether it was at the bottom (within a few pixels). Read from the element
   * itself, not from a `scroll` listener: the browser fires that one later, after a render that
   * follows at once (a second `get_game` answer with the same rows) would have restored an
   * offset from before the newest move.
   */
  private readMovesScroll(): void {
    const list = this.root.querySelector<HTMLElement>('[data-field="moves"]');
    if (!list || !list.isConnected) return;
    this.movesScroll = list.scrollTop;
    this.movesFollow = list.scrollHeight - list.clientHeight - list.scrollTop <= MOVES_BOTTOM_SLACK_PX;
  }

  /**
   * The move list follows the game: at the bottom (the newest move in view) unless the reader
   * scrolled up to read the history, whose position is then kept, new moves or not. Scrolling
   * back to the bottom follows again.
   */
  private placeMovesScroll(): void {
    const list = this.root.querySelector<HTMLElement>('[data-field="moves"]');
    if (!list) return;
    list.scrollTop = this.movesFollow ? list.scrollHeight : this.movesScroll;
    list.setAttribute("data-follow", this.movesFollow ? "true" : "false");
  }

  private renderHead(view: GameViewJson): HTMLElement {
    const seat = seatOf(view);
    const phase = phaseOf(view);
    const player = (side: SideName) => {
      const name = (side === "south" ? view.southPlayer : view.northPlayer) ?? "";
      const connected = side === "south" ? view.southConnected : view.northConnected;
      return h(
        "div",
        { class: `player side-${side}${view.toMove && sideName(view.toMove) === side && phase === "play" ? " to-move" : ""}` },
        h("span", { class: `dot${connected ? " on" : ""}`, "aria-hidden": "true" }),
        h("span", { class: "name" }, name || "—"),
        seat === side ? h("span", { class: "you" }, ` (${t("game.you")})`) : null,
        h("span", { class: "side-tag" }, t(`side.${side}`)),
      );
    };
    const top: SideName = seat === "north" ? "south" : "north";
    let status = "";
    if (phase === "deployment") status = t("phase.deployment");
    else if (phase === "ended") status = t("phase.ended");
    else if (seat === "spectator") status = t("game.turn.side", { side: t(`side.${sideName(view.toMove) ?? "south"}`) });
    else status = turnOf(view) === "mine" ? t("game.turn.mine") : t("game.turn.theirs");
    const timeouts =
      seat === "spectator"
        ? t("game.timeouts.spectator", { south: view.southTimeouts ?? 0, north: view.northTimeouts ?? 0 })
        : t("game.timeouts", {
            mine: (seat === "south" ? view.southTimeouts : view.northTimeouts) ?? 0,
            theirs: (seat === "south" ? view.northTimeouts : view.southTimeouts) ?? 0,
          });
    return h(
      "div",
      { class: "game-head" },
      // The separator goes with the second player (one unbreakable group), so a line that wraps
      // never ends with a lone "·"; at phone width the players stack and it is not shown.
      h("div", { class: "players" }, player(top), h("div", { class: "vs-pair" }, h("span", { class: "vs", "aria-hidden": "true" }, "·"), player(other(top)))),
      h(
        "div",
        { class: "status" },
        h("span", { class: `turn turn-${turnOf(view) || phase}`, "data-field": "status", "aria-live": "polite" }, status),
        h("span", { class: "clock", "data-field": "clock", role: "timer", "aria-label": t("game.clock") }, ""),
        phase !== "deployment" ? h("span", { class: "timeouts", "data-field": "timeouts", title: t("game.clock.rule") }, timeouts) : null,
      ),
    );
  }

  private renderError(): Child {
    if (!this.error) return null;
    return h(
      "div",
      { class: "banner error", role: "alert", "data-field": "error", "data-reason": this.error.reason },
      h("span", {}, this.error.text),
      h("button", { type: "button", class: "ghost", "data-action": "dismiss-error", onclick: () => { this.error = null; this.render(); } }, t("error.dismiss")),
    );
  }

  private content(view: GameViewJson): Map<string, SquareContent> {
    const board = this.board!;
    const fam = board.family;
    const seat = seatOf(view);
    const phase = phaseOf(view);
    const m = new Map<string, SquareContent>();
    if (phase === "deployment") {
      const side: SideName = seat === "north" ? "north" : "south";
      for (const [sq, code] of this.ownDeploymentMap()) m.set(sq, { label: pieceShort(fam, code), side, code, faceUp: true });
      return m;
    }
    let pieces: VisiblePieceJson[] = view.pieces ?? [];
    if (phase === "ended" && this.replay && this.replay[this.replayIdx]) pieces = this.replay[this.replayIdx]!.pieces;
    for (const p of pieces) {
      const side = sideName(p.side);
      if (!side || !p.square) continue;
      const id = p.id ?? 0;
      if (p.piece) {
        m.set(p.square, { label: pieceShort(fam, p.piece), side, code: p.piece, pieceId: id, faceUp: true });
        continue;
      }
      const mark = seat !== "spectator" ? this.marks.get(id) : undefined;
      const c: SquareContent = { label: mark ? pieceShort(fam, mark) : "?", side, pieceId: id, faceUp: false, marked: !!mark };
      const codes = this.possible.get(id);
      if (this.showHints && codes && seat !== "spectator" && side !== seat) {
        c.badge = codes.length <= 2 ? codes.map((k) => pieceShort(fam, k)).join("/") : String(codes.length);
      }
      m.set(p.square, c);
    }
    return m;
  }

  private renderBoardFor(view: GameViewJson): HTMLElement {
    const board = this.board!;
    const seat = seatOf(view);
    const phase = phaseOf(view);
    const content = this.content(view);
    const legal = new Set<string>();
    if (phase === "play" && this.selected) for (const m of this.legal) if (m.from === this.selected) legal.add(m.to);
    const draggable = new Set<string>();
    if (phase === "deployment" && seat !== "spectator" && !this.ownConfirmed()) for (const sq of content.keys()) draggable.add(sq);
    let last = lastMove(this.log.events);
    if (phase === "ended" && this.replay) last = this.replay[this.replayIdx]?.move ?? null;
    const fam = board.family;
    return renderBoard({
      board,
      bottom: seat === "north" ? "north" : "south",
      content,
      selected: this.selected,
      legal,
      lastMove: last,
      draggable,
      label: t("board.label"),
      onSquare: (sq) => this.onSquare(sq),
      onDrop: (a, b) => {
        this.selected = null;
        this.swap(a, b);
      },
      ariaLabel: (n: BoardNode, c) => {
        let text: string;
        if (!c) text = t("square.empty", { sq: n.name });
        else if (seat === "spectator" || (phase === "ended" && c.code)) {
          text = t("square.side", { sq: n.name, side: t(`side.${c.side}`), piece: c.code ? pieceName(fam, c.code) : t("game.unknown") });
        } else if (c.side === seat) text = t("square.own", { sq: n.name, piece: c.code ? pieceName(fam, c.code) : t("game.unknown") });
        else if (c.code) text = t("square.theirsKnown", { sq: n.name, piece: pieceName(fam, c.code) });
        else {
          const mark = this.marks.get(c.pieceId ?? 0);
          text = mark
            ? t("square.theirsMarked", { sq: n.name, id: c.pieceId ?? 0, piece: pieceName(fam, mark) })
            : t("square.theirs", { sq: n.name, id: c.pieceId ?? 0 });
        }
        const extra: string[] = [];
        if (n.camp) extra.push(t("square.camp"));
        if (n.hq) extra.push(t("square.hq"));
        if (this.selected === n.name) extra.push(t("square.selected"));
        if (legal.has(n.name)) extra.push(t("square.legal"));
        return [text, ...extra].join(", ");
      },
    });
  }

  private renderControls(view: GameViewJson): HTMLElement {
    const seat = seatOf(view);
    const phase = phaseOf(view);
    const box = h("div", { class: "card controls" });
    if (phase === "deployment") {
      const oppConfirmed = seat === "south" ? view.northConfirmed : seat === "north" ? view.southConfirmed : false;
      if (seat === "spectator") {
        box.append(h("h2", {}, t("phase.deployment")));
        for (const side of ["south", "north"] as const) {
          const done = side === "south" ? !!view.southConfirmed : !!view.northConfirmed;
          box.append(
            h(
              "p",
              { class: `opp-state${done ? " ok" : ""}`, "data-field": `${side}-confirmed`, "data-confirmed": done ? "true" : "false" },
              t(done ? "game.side.confirmed" : "game.side.notConfirmed", { side: this.sideWithPlayer(view, side) }),
            ),
          );
        }
        return box;
      }
      const confirmed = this.ownConfirmed();
      box.append(
        h("h2", {}, t("phase.deployment")),
        h("p", { class: "help" }, confirmed ? t("game.confirmed") : t("game.deploy.help")),
        h(
          "div",
          { class: "row" },
          h("button", { type: "button", "data-action": "reshuffle", disabled: confirmed, onclick: () => void this.act(() => this.deps.conn.request("reshuffle", { context: this.context() })) }, t("game.reshuffle")),
          h("button", { type: "button", class: "primary", "data-action": "confirm", disabled: confirmed, onclick: () => void this.act(() => this.deps.conn.request("confirm", { context: this.context() })) }, t("game.confirm")),
        ),
        h("p", { class: `opp-state${oppConfirmed ? " ok" : ""}`, "data-field": "opponent-confirmed", "data-confirmed": oppConfirmed ? "true" : "false" }, oppConfirmed ? t("game.opponent.confirmed") : t("game.opponent.notConfirmed")),
        h("p", { class: "help small" }, t("game.deploy.rule")),
      );
      return box;
    }
    if (phase === "play") {
      const fight = this.lastFight();
      if (fight) box.append(fight);
      if (seat === "spectator") {
        box.append(h("p", { class: "help" }, t("seat.spectator")));
        return box;
      }
      const input = h("input", {
        type: "text",
        "data-field": "move-text",
        id: "move-text",
        autocomplete: "off",
        spellcheck: "false",
        placeholder: t("game.move.placeholder"),
        value: this.moveText,
        oninput: (e: Event) => {
          this.moveText = (e.target as HTMLInputElement).value;
        },
        onkeydown: (e: Event) => {
          if ((e as KeyboardEvent).key === "Enter") {
            e.preventDefault();
            this.submitMoveText();
          }
        },
      });
      const mySide = seat;
      const offer = sideName(view.drawOffer);
      box.append(
        h("label", { for: "move-text", class: "label" }, t("game.move.label")),
        h("div", { class: "row" }, input, h("button", { type: "button", "data-action": "play-text", onclick: () => this.submitMoveText() }, t("game.move.play"))),
      );
      if (offer && offer !== mySide) {
        box.append(
          h(
            "div",
            { class: "banner draw", "data-field": "draw-offer" },
            h("span", {}, t("game.draw.incoming")),
            h("button", { type: "button", class: "primary", "data-action": "accept-draw", onclick: () => void this.act(() => this.deps.conn.request("respond_draw", { context: this.context(), accept: true })) }, t("game.draw.accept")),
            h("button", { type: "button", "data-action": "decline-draw", onclick: () => void this.act(() => this.deps.conn.request("respond_draw", { context: this.context(), accept: false })) }, t("game.draw.decline")),
          ),
        );
      }
      const row = h("div", { class: "row" });
      if (offer === mySide) row.append(h("span", { class: "help" }, t("game.draw.offered")));
      else if (!offer) row.append(h("button", { type: "button", "data-action": "offer-draw", onclick: () => void this.act(() => this.deps.conn.request("propose_draw", { context: this.context() })) }, t("game.draw.offer")));
      if (this.resignAsk) {
        row.append(
          h("span", { class: "help" }, t("game.resign.sure")),
          h("button", { type: "button", class: "danger", "data-action": "confirm-resign", onclick: () => { this.resignAsk = false; void this.act(() => this.deps.conn.request("concede", { context: this.context() })); } }, t("game.resign.confirm")),
          h("button", { type: "button", "data-action": "cancel-resign", onclick: () => { this.resignAsk = false; this.render(); } }, t("game.resign.cancel")),
        );
      } else {
        row.append(h("button", { type: "button", class: "danger-outline", "data-action": "resign", onclick: () => { this.resignAsk = true; this.render(); } }, t("game.resign")));
      }
      box.append(row);
      box.append(h("p", { class: "help small" }, t("game.clock.rule")));
      box.append(
        h(
          "label",
          { class: "check" },
          h("input", {
            type: "checkbox",
            "data-field": "hints",
            checked: this.showHints,
            onchange: (e: Event) => {
              this.showHints = (e.target as HTMLInputElement).checked;
              local.setItem("hf.hints", this.showHints ? "1" : "0");
              this.render();
            },
          }),
          t("game.hints"),
        ),
      );
      return box;
    }
    // ended
    const outcome = outcomeFor(view);
    const winner = sideName(view.outcome?.winner);
    const reasonName = (view.outcome?.reason ?? "END_REASON_UNSPECIFIED").replace("END_REASON_", "");
    const reasonKey = hasKey(`end.${reasonName}`) ? (`end.${reasonName}` as Key) : "end.UNSPECIFIED";
    const headline = outcome ? t(`result.${outcome}`) : winner ? t("result.side", { side: t(`side.${winner}`) }) : t("result.draw");
    box.append(
      h("div", { class: `result${outcome ? ` result-${outcome}` : ""}`, "data-field": "result", "data-outcome": outcome ?? undefined, "data-winner": winner ?? "draw" }, h("strong", {}, headline), h("span", { class: "reason" }, t(reasonKey))),
    );
    if (this.replay && this.replay.length) {
      const total = this.replay.length;
      box.append(
        h("h2", {}, t("replay.title")),
        h(
          "div",
          { class: "replay", "data-field": "replay" },
          h("button", { type: "button", "data-action": "replay-prev", disabled: this.replayIdx <= 0, onclick: () => { this.replayIdx = Math.max(0, this.replayIdx - 1); this.render(); } }, "◀ ", t("replay.prev")),
          h("span", { class: "replay-ply", "data-field": "replay-ply", "data-ply": String(this.replayIdx), "aria-live": "polite" }, t("replay.ply", { n: this.replayIdx + 1, total })),
          h("button", { type: "button", "data-action": "replay-next", disabled: this.replayIdx >= total - 1, onclick: () => { this.replayIdx = Math.min(total - 1, this.replayIdx + 1); this.render(); } }, t("replay.next"), " ▶"),
        ),
      );
      const step = this.replay[this.replayIdx];
      if (step?.combat) box.append(h("p", { class: "help" }, this.combatText(step.combat.attackerSurvives ?? false, step.combat.defenderSurvives ?? false, step.combat.flagCaptured ?? false)));
    }
    box.append(
      h(
        "div",
        { class: "row" },
        h("button", { type: "button", "data-action": "download-replay", disabled: this.downloading, onclick: () => void this.downloadReplay() }, t("replay.download")),
      ),
    );
    box.append(h("a", { href: "/", class: "link", "data-link": true }, t("lobby.back")));
    return box;
  }

  /**
   * Saves the finished game's replay (docs/replay-format.md) as a text file: `export_replay`
   * over the page's WebSocket (players and spectators alike), under the name the server gives
   * (`hidden-front-<game id>.replay.txt`).
   */
  private async downloadReplay(): Promise<void> {
    if (this.downloading) return;
    this.downloading = true;
    this.error = null;
    this.render();
    try {
      const resp = await this.deps.conn.request("export_replay", { gameId: this.gameId });
      const text = resp.replay ?? "";
      const name = resp.fileName || replayFileName(this.gameId);
      saveText(name, text);
    } catch (e) {
      if (e instanceof ServerError) this.showServerError(e);
      else throw e;
    } finally {
      this.downloading = false;
      this.render();
    }
  }

  /** The fight of the last move, if it was one: who survived, shown until the next move. */
  private lastFight(): HTMLElement | null {
    const rec = gameRecord(this.log.events);
    const last = rec[rec.length - 1];
    if (!last || last.type !== "move" || !last.combat) return null;
    const c = last.combat;
    return h(
      "p",
      { class: `last-fight side-${last.side}`, "data-field": "last-combat", role: "status" },
      h("strong", {}, `⚔ ${last.from}–${last.to}`),
      " ",
      this.combatText(c.attackerSurvives, c.defenderSurvives, c.flagCaptured),
    );
  }

  private combatText(a: boolean, d: boolean, flag: boolean): string {
    const s = (x: boolean) => t(x ? "combat.survives" : "combat.removed");
    return t("combat.line", { a: s(a), d: s(d) }) + (flag ? ` · ${t("combat.flag")}` : "");
  }

  private renderMarkPanel(view: GameViewJson): Child {
    const seat = seatOf(view);
    if (this.markTarget === null || seat === "spectator" || phaseOf(view) !== "play" || !this.board) return null;
    const id = this.markTarget;
    const fam = this.board.family;
    const current = this.marks.get(id);
    const codes = this.possible.get(id);
    const set = (code: string | null) => {
      this.marks.set(id, code);
      this.render();
    };
    return h(
      "div",
      { class: "card marks", "data-field": "mark-panel", "data-piece-id": String(id) },
      h("h2", {}, t("game.mark.title", { id })),
      codes ? h("p", { class: "help", "data-field": "hint" }, t("game.canBe", { kinds: codes.map((c) => pieceName(fam, c)).join(", ") })) : null,
      h(
        "div",
        { class: "mark-grid", role: "group", "aria-label": t("game.mark") },
        this.board.kinds.map((k) =>
          h(
            "button",
            {
              type: "button",
              class: `mark${current === k.code ? " on" : ""}${codes && !codes.includes(k.code) ? " unlikely" : ""}`,
              "data-mark": k.code,
              "aria-pressed": current === k.code ? "true" : "false",
              title: pieceName(fam, k.code),
              onclick: () => set(k.code),
            },
            pieceShort(fam, k.code),
          ),
        ),
        h("button", { type: "button", class: "mark", "data-mark": "", onclick: () => set(null) }, t("game.mark.none")),
      ),
      h("p", { class: "help small" }, t("game.mark.help")),
    );
  }

  private renderCaptured(view: GameViewJson): Child {
    if (phaseOf(view) === "deployment" || !this.board) return null;
    const fam = this.board.family;
    const seat = seatOf(view);
    const revealed = new Map<number, string>();
    for (const p of view.reveal?.startingPieces ?? []) if (p.piece) revealed.set(p.id ?? 0, p.piece);
    const caps = capturedPieces(this.log.events);
    const item = (c: { side: SideName; id: number; piece?: string }) => {
      const code = c.piece ?? revealed.get(c.id);
      return h("li", { class: `cap side-${c.side}`, "data-piece": code, "data-piece-id": code ? undefined : String(c.id) }, code ? pieceName(fam, code) : `#${c.id}`);
    };
    const bottom: SideName = seat === "north" ? "north" : "south";
    const group = (side: SideName, title: string) =>
      h("div", { class: "cap-group" }, h("h3", {}, title), h("ul", { class: "caps" }, caps.filter((c) => c.side === side).map(item)));
    return h(
      "div",
      { class: "card", "data-field": "captured" },
      h("h2", {}, t("game.captured")),
      seat === "spectator"
        ? [group("south", this.sideWithPlayer(view, "south")), group("north", this.sideWithPlayer(view, "north"))]
        : [group(bottom, t("game.captured.mine")), group(other(bottom), t("game.captured.theirs"))],
    );
  }

  /** A side with its player's name, for a spectator ("South · alice"). */
  private sideWithPlayer(view: GameViewJson, side: SideName): string {
    const name = (side === "south" ? view.southPlayer : view.northPlayer) ?? "";
    return name ? t("game.sidePlayer", { side: t(`side.${side}`), player: name }) : t(`side.${side}`);
  }

  private renderMoves(): HTMLElement {
    // After the end, every kind the reveal gives (as the board and the replay show them).
    const rec = revealRecord(gameRecord(this.log.events), revealedKinds(this.view));
    const list = h("ol", { class: "moves", "data-field": "moves" });
    const fam = this.board?.family ?? "junqi";
    for (const e of rec) {
      if (e.type === "move") {
        const defender = e.combat?.defenderPiece;
        const li = h(
          "li",
          { class: `mv side-${e.side}`, "data-seq": String(e.seq) },
          h("span", { class: "ply" }, `${e.ply}.`),
          h("span", { class: "mv-text" }, `${e.from}–${e.to}`),
          e.piece ? h("span", { class: "mv-piece", "data-kind": e.piece, title: pieceName(fam, e.piece) }, pieceShort(fam, e.piece)) : null,
          e.combat
            ? h(
                "span",
                { class: "mv-combat" },
                "⚔ ",
                defender ? h("span", { class: "mv-defender", "data-kind": defender, title: pieceName(fam, defender) }, pieceShort(fam, defender), " ") : null,
                this.combatText(e.combat.attackerSurvives, e.combat.defenderSurvives, e.combat.flagCaptured),
              )
            : null,
        );
        list.append(li);
      } else {
        const side = t(`side.${e.side}`);
        const text =
          e.kind === "timeout" ? t("event.timeout", { side, n: e.count ?? 0 }) : t(`event.${e.kind}` as Key, { side });
        list.append(h("li", { class: "note", "data-seq": String(e.seq) }, text));
      }
    }
    return h("div", { class: "card" }, h("h2", {}, t("game.moves")), rec.length ? list : [list, h("p", { class: "help" }, t("game.moves.none"))]);
  }

  private renderLegend(): Child {
    const board = this.board;
    if (!board) return null;
    const legendOpen = this.legendOpen ?? (!!this.view && phaseOf(this.view) === "deployment");
    return h(
      "details",
      {
        class: "card legend",
        open: legendOpen,
        ontoggle: (e: Event) => {
          // Only the player's own toggles count (setting `open` when drawing fires one too).
          const open = (e.target as HTMLDetailsElement).open;
          if (open !== legendOpen) this.legendOpen = open;
        },
      },
      h("summary", {}, t("game.legend")),
      h(
        "ul",
        {},
        board.kinds.map((k) => h("li", {}, h("span", { class: "chip" }, pieceShort(board.family, k.code)), ` ${pieceName(board.family, k.code)} ×${k.count}`)),
      ),
    );
  }

  /** Updates the countdowns and the away banner (four times a second, without re-rendering). */
  private tick(): void {
    const view = this.view;
    if (!view) return;
    const now = Date.now();
    const offset = this.deps.offset();
    const clock = this.root.querySelector<HTMLElement>('[data-field="clock"]');
    if (clock) {
      const left = secondsLeft(view.turnDeadlineUnixMillis, offset, now);
      const text = left === null ? "" : formatSeconds(left);
      if (clock.textContent !== text) clock.textContent = text;
      clock.classList.toggle("low", left !== null && left <= 10);
      clock.setAttribute("data-seconds", left === null ? "" : String(left));
    }
    const banner = this.root.querySelector<HTMLElement>('[data-field="away-banner"]');
    if (banner) {
      const seat = seatOf(view);
      const parts: string[] = [];
      for (const side of ["south", "north"] as const) {
        if (seat === side) continue;
        const left = secondsLeft(side === "south" ? view.southAwayDeadlineUnixMillis : view.northAwayDeadlineUnixMillis, offset, now);
        if (left === null || phaseOf(view) !== "play") continue;
        parts.push(seat === "spectator" ? t("game.away.side", { side: t(`side.${side}`), s: left }) : t("game.away", { s: left }));
      }
      const text = parts.join(" · ");
      if (banner.textContent !== text) banner.textContent = text;
      banner.hidden = !text;
    }
  }
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
