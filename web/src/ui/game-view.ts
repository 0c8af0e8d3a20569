/**
 * The game screen's drawing: the elements for one `GameState`, read from it and nothing else
 * (no DOM is read here, no state is kept). The screen (`ui/game.ts`) lays them over the elements
 * already shown with `patchChildren`, which keeps every node with the same key (squares by
 * `data-square`, move-list rows by `data-seq`, fields and actions by name), so focus, scroll and
 * transitions survive. What a click does comes from `GameActions`, the screen's.
 */
import type { GameViewJson } from "../gen/hiddenfront/v1/game_pb.js";
import type { BoardNode } from "../engine/types.js";
import {
  capturedPieces,
  gameRecord,
  other,
  outcomeFor,
  phaseOf,
  revealRecord,
  revealedKinds,
  seatOf,
  sideName,
  turnOf,
  type SideName,
} from "../state/game.js";
import {
  awaySeconds,
  legalTargets,
  moveShown,
  ownConfirmed,
  ownDeployment,
  piecesShown,
  turnSecondsLeft,
  type GameState,
  type ShownError,
} from "../state/game-screen.js";
import { formatSeconds } from "../state/clock.js";
import { hasKey, pieceName, pieceShort, reasonText, t, type Key } from "../i18n/index.js";
import { h, type Child } from "./dom.js";
import { renderBoard, type SquareContent } from "./board.js";

/** Requests a player sends with one button, without anything to choose. */
export type ButtonRequest = "reshuffle" | "confirm" | "propose_draw" | "accept_draw" | "decline_draw" | "concede";

/** What the screen does for a click, a key or a typed letter. */
export interface GameActions {
  square(name: string): void;
  drop(from: string, to: string): void;
  moveText(text: string): void;
  submitMoveText(): void;
  send(request: ButtonRequest): void;
  askResign(ask: boolean): void;
  stepReplay(delta: number): void;
  hints(on: boolean): void;
  mark(pieceId: number, code: string | null): void;
  dismissError(): void;
  downloadReplay(): void;
  legend(open: boolean): void;
}

/** What one drawing needs besides the state. */
export interface DrawContext {
  actions: GameActions;
  /** The browser's clock now, and the server clock's offset to it. */
  now: number;
  offset: number;
  /** Whether the move list follows the newest move (read from the list before drawing). */
  follow: boolean;
}

/** One drawing of the screen: the game root's attributes and its children. */
export interface Drawing {
  attributes: Record<string, string>;
  children: Child[];
}

/** The screen for a state: the loading line until the first view, else the game. */
export function drawGame(s: GameState, cx: DrawContext): Drawing {
  const view = s.view;
  if (!view || !s.board) {
    return {
      attributes: { "data-phase": "" },
      children: [
        drawError(s.error, cx),
        h("p", { class: "loading" }, s.error ? "" : t("game.loading")),
        s.error?.reason === "NOT_SEATED" && !s.spectate
          ? h("a", { href: `/watch/${encodeURIComponent(s.gameId)}`, class: "link", "data-link": true }, t("lobby.watch"))
          : null,
        h("a", { href: "/", class: "link", "data-link": true }, t("lobby.back")),
      ],
    };
  }
  const away = awayText(s, cx.offset, cx.now);
  return {
    attributes: {
      "data-phase": phaseOf(view),
      "data-turn": turnOf(view),
      "data-seat": seatOf(view),
      "data-version": String(Number(view.version ?? 0)),
      "data-rules": view.rules ?? "",
    },
    children: [
      drawHead(s, view, cx),
      h("div", { class: "banner away", "data-field": "away-banner", hidden: !away }, away),
      drawError(s.error, cx),
      h(
        "div",
        { class: "game-main", "data-key": "main" },
        h("div", { class: "board-wrap" }, drawBoard(s, view, cx)),
        h(
          "aside",
          { class: "panel" },
          drawControls(s, view, cx),
          drawMarkPanel(s, view, cx),
          drawCaptured(s, view),
          drawMoves(s, cx),
          drawLegend(s, view, cx),
        ),
      ),
    ],
  };
}

/** The turn's countdown as shown ("0:42"), empty when none runs. */
export function clockText(s: GameState, offset: number, now: number): { text: string; seconds: number | null } {
  const seconds = turnSecondsLeft(s.status, offset, now);
  return { text: seconds === null ? "" : formatSeconds(seconds), seconds };
}

/** The away banner's text: who is away and for how long yet; empty when nobody is. */
export function awayText(s: GameState, offset: number, now: number): string {
  const seat = s.view ? seatOf(s.view) : "spectator";
  return awaySeconds(s, offset, now)
    .map(({ side, seconds }) => (seat === "spectator" ? t("game.away.side", { side: t(`side.${side}`), s: seconds }) : t("game.away", { s: seconds })))
    .join(" · ");
}

/**
 * Updates the countdowns and the away banner in place, between drawings (four times a second):
 * only their text changes, so the rest of the screen is not drawn for it.
 */
export function drawClocks(root: HTMLElement, s: GameState, offset: number, now: number): void {
  const clock = root.querySelector<HTMLElement>('[data-field="clock"]');
  if (clock) {
    const { text, seconds } = clockText(s, offset, now);
    if (clock.textContent !== text) clock.textContent = text;
    clock.classList.toggle("low", seconds !== null && seconds <= 10);
    clock.setAttribute("data-seconds", seconds === null ? "" : String(seconds));
  }
  const banner = root.querySelector<HTMLElement>('[data-field="away-banner"]');
  if (banner) {
    const text = awayText(s, offset, now);
    if (banner.textContent !== text) banner.textContent = text;
    banner.hidden = !text;
  }
}

function drawHead(s: GameState, view: GameViewJson, cx: DrawContext): HTMLElement {
  const seat = seatOf(view);
  const phase = phaseOf(view);
  const status = s.status;
  const player = (side: SideName) => {
    const name = (side === "south" ? view.southPlayer : view.northPlayer) ?? "";
    const connected = side === "south" ? status.southConnected : status.northConnected;
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
  let turn = "";
  if (phase === "deployment") turn = t("phase.deployment");
  else if (phase === "ended") turn = t("phase.ended");
  else if (seat === "spectator") turn = t("game.turn.side", { side: t(`side.${sideName(view.toMove) ?? "south"}`) });
  else turn = turnOf(view) === "mine" ? t("game.turn.mine") : t("game.turn.theirs");
  const timeouts =
    seat === "spectator"
      ? t("game.timeouts.spectator", { south: status.southTimeouts ?? 0, north: status.northTimeouts ?? 0 })
      : t("game.timeouts", {
          mine: (seat === "south" ? status.southTimeouts : status.northTimeouts) ?? 0,
          theirs: (seat === "south" ? status.northTimeouts : status.southTimeouts) ?? 0,
        });
  const clock = clockText(s, cx.offset, cx.now);
  return h(
    "div",
    { class: "game-head", "data-key": "head" },
    // The separator goes with the second player (one unbreakable group), so a line that wraps
    // never ends with a lone "·"; at phone width the players stack and it is not shown.
    h("div", { class: "players" }, player(top), h("div", { class: "vs-pair" }, h("span", { class: "vs", "aria-hidden": "true" }, "·"), player(other(top)))),
    h(
      "div",
      { class: "status" },
      h("span", { class: `turn turn-${turnOf(view) || phase}`, "data-field": "status", "aria-live": "polite" }, turn),
      h(
        "span",
        {
          class: `clock${clock.seconds !== null && clock.seconds <= 10 ? " low" : ""}`,
          "data-field": "clock",
          "data-seconds": clock.seconds === null ? "" : String(clock.seconds),
          role: "timer",
          "aria-label": t("game.clock"),
        },
        clock.text,
      ),
      phase !== "deployment" ? h("span", { class: "timeouts", "data-field": "timeouts", title: t("game.clock.rule") }, timeouts) : null,
    ),
  );
}

function drawError(error: ShownError | null, cx: DrawContext): Child {
  if (!error) return null;
  const text = error.key ? t(error.key, error.params ?? {}) : reasonText(error.reason, error.code);
  return h(
    "div",
    { class: "banner error", role: "alert", "data-field": "error", "data-reason": error.reason },
    h("span", {}, text),
    h("button", { type: "button", class: "ghost", "data-action": "dismiss-error", onclick: () => cx.actions.dismissError() }, t("error.dismiss")),
  );
}

/** What stands on each square as this player knows it: own kinds, opponent ids, marks, hints. */
function squareContents(s: GameState, view: GameViewJson): Map<string, SquareContent> {
  const fam = s.board?.family ?? "junqi";
  const seat = seatOf(view);
  const m = new Map<string, SquareContent>();
  if (phaseOf(view) === "deployment") {
    const side: SideName = seat === "north" ? "north" : "south";
    for (const [sq, code] of ownDeployment(s)) m.set(sq, { label: pieceShort(fam, code), side, code, faceUp: true });
    return m;
  }
  for (const p of piecesShown(s)) {
    const side = sideName(p.side);
    if (!side || !p.square) continue;
    const id = p.id ?? 0;
    if (p.piece) {
      m.set(p.square, { label: pieceShort(fam, p.piece), side, code: p.piece, pieceId: id, faceUp: true });
      continue;
    }
    const mark = seat !== "spectator" ? s.marks[String(id)] : undefined;
    const c: SquareContent = { label: mark ? pieceShort(fam, mark) : "?", side, pieceId: id, faceUp: false, marked: !!mark };
    const codes = s.possible.get(id);
    if (s.showHints && codes && seat !== "spectator" && side !== seat) {
      c.badge = codes.length <= 2 ? codes.map((k) => pieceShort(fam, k)).join("/") : String(codes.length);
    }
    m.set(p.square, c);
  }
  return m;
}

function drawBoard(s: GameState, view: GameViewJson, cx: DrawContext): HTMLElement {
  const board = s.board!;
  const seat = seatOf(view);
  const phase = phaseOf(view);
  const content = squareContents(s, view);
  const legal = legalTargets(s);
  const draggable = new Set<string>();
  if (phase === "deployment" && seat !== "spectator" && !ownConfirmed(s)) for (const sq of content.keys()) draggable.add(sq);
  const fam = board.family;
  return renderBoard({
    board,
    bottom: seat === "north" ? "north" : "south",
    content,
    selected: s.selected,
    legal,
    lastMove: moveShown(s),
    draggable,
    label: t("board.label"),
    onSquare: (sq) => cx.actions.square(sq),
    onDrop: (a, b) => cx.actions.drop(a, b),
    ariaLabel: (n: BoardNode, c) => {
      let text: string;
      if (!c) text = t("square.empty", { sq: n.name });
      else if (seat === "spectator" || (phase === "ended" && c.code)) {
        text = t("square.side", { sq: n.name, side: t(`side.${c.side}`), piece: c.code ? pieceName(fam, c.code) : t("game.unknown") });
      } else if (c.side === seat) text = t("square.own", { sq: n.name, piece: c.code ? pieceName(fam, c.code) : t("game.unknown") });
      else if (c.code) text = t("square.theirsKnown", { sq: n.name, piece: pieceName(fam, c.code) });
      else {
        const mark = s.marks[String(c.pieceId ?? 0)];
        text = mark
          ? t("square.theirsMarked", { sq: n.name, id: c.pieceId ?? 0, piece: pieceName(fam, mark) })
          : t("square.theirs", { sq: n.name, id: c.pieceId ?? 0 });
      }
      const extra: string[] = [];
      if (n.camp) extra.push(t("square.camp"));
      if (n.hq) extra.push(t("square.hq"));
      if (s.selected === n.name) extra.push(t("square.selected"));
      if (legal.has(n.name)) extra.push(t("square.legal"));
      return [text, ...extra].join(", ");
    },
  });
}

function button(action: string, label: Child[], onclick: () => void, attrs: Record<string, string | boolean> = {}): HTMLElement {
  return h("button", { type: "button", "data-action": action, onclick, ...attrs }, ...label);
}

function drawControls(s: GameState, view: GameViewJson, cx: DrawContext): HTMLElement {
  const seat = seatOf(view);
  const phase = phaseOf(view);
  const send = cx.actions.send;
  const box = h("div", { class: "card controls", "data-key": "controls" });
  if (phase === "deployment") {
    if (seat === "spectator") {
      box.append(h("h2", {}, t("phase.deployment")));
      for (const side of ["south", "north"] as const) {
        const done = side === "south" ? !!view.southConfirmed : !!view.northConfirmed;
        box.append(
          h(
            "p",
            { class: `opp-state${done ? " ok" : ""}`, "data-field": `${side}-confirmed`, "data-confirmed": done ? "true" : "false" },
            t(done ? "game.side.confirmed" : "game.side.notConfirmed", { side: sideWithPlayer(view, side) }),
          ),
        );
      }
      return box;
    }
    const confirmed = ownConfirmed(s);
    const oppConfirmed = seat === "south" ? view.northConfirmed : view.southConfirmed;
    box.append(
      h("h2", {}, t("phase.deployment")),
      h("p", { class: "help" }, confirmed ? t("game.confirmed") : t("game.deploy.help")),
      h(
        "div",
        { class: "row" },
        button("reshuffle", [t("game.reshuffle")], () => send("reshuffle"), { disabled: confirmed }),
        button("confirm", [t("game.confirm")], () => send("confirm"), { disabled: confirmed, class: "primary" }),
      ),
      h("p", { class: `opp-state${oppConfirmed ? " ok" : ""}`, "data-field": "opponent-confirmed", "data-confirmed": oppConfirmed ? "true" : "false" }, oppConfirmed ? t("game.opponent.confirmed") : t("game.opponent.notConfirmed")),
      h("p", { class: "help small" }, t("game.deploy.rule")),
    );
    return box;
  }
  if (phase === "play") {
    const fight = lastFight(s);
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
      value: s.moveText,
      oninput: (e: Event) => cx.actions.moveText((e.target as HTMLInputElement).value),
      onkeydown: (e: Event) => {
        if ((e as KeyboardEvent).key === "Enter") {
          e.preventDefault();
          cx.actions.submitMoveText();
        }
      },
    });
    const offer = sideName(s.status.drawOffer);
    box.append(
      h("label", { for: "move-text", class: "label" }, t("game.move.label")),
      h("div", { class: "row" }, input, button("play-text", [t("game.move.play")], () => cx.actions.submitMoveText())),
    );
    if (offer && offer !== seat) {
      box.append(
        h(
          "div",
          { class: "banner draw", "data-field": "draw-offer" },
          h("span", {}, t("game.draw.incoming")),
          button("accept-draw", [t("game.draw.accept")], () => send("accept_draw"), { class: "primary" }),
          button("decline-draw", [t("game.draw.decline")], () => send("decline_draw")),
        ),
      );
    }
    const row = h("div", { class: "row" });
    if (offer === seat) row.append(h("span", { class: "help" }, t("game.draw.offered")));
    else if (!offer) row.append(button("offer-draw", [t("game.draw.offer")], () => send("propose_draw")));
    if (s.resignAsk) {
      row.append(
        h("span", { class: "help" }, t("game.resign.sure")),
        button("confirm-resign", [t("game.resign.confirm")], () => send("concede"), { class: "danger" }),
        button("cancel-resign", [t("game.resign.cancel")], () => cx.actions.askResign(false)),
      );
    } else {
      row.append(button("resign", [t("game.resign")], () => cx.actions.askResign(true), { class: "danger-outline" }));
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
          checked: s.showHints,
          onchange: (e: Event) => cx.actions.hints((e.target as HTMLInputElement).checked),
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
  const replay = s.replay;
  if (replay && replay.steps.length) {
    const total = replay.steps.length;
    box.append(
      h("h2", {}, t("replay.title")),
      h(
        "div",
        { class: "replay", "data-field": "replay" },
        button("replay-prev", ["◀ ", t("replay.prev")], () => cx.actions.stepReplay(-1), { disabled: replay.index <= 0 }),
        h("span", { class: "replay-ply", "data-field": "replay-ply", "data-ply": String(replay.index), "aria-live": "polite" }, t("replay.ply", { n: replay.index + 1, total })),
        button("replay-next", [t("replay.next"), " ▶"], () => cx.actions.stepReplay(1), { disabled: replay.index >= total - 1 }),
      ),
    );
    const combat = replay.steps[replay.index]?.combat;
    if (combat) box.append(h("p", { class: "help" }, combatText(combat.attackerSurvives ?? false, combat.defenderSurvives ?? false, combat.flagCaptured ?? false)));
  }
  box.append(
    h("div", { class: "row" }, button("download-replay", [t("replay.download")], () => cx.actions.downloadReplay(), { disabled: s.downloading })),
    h("a", { href: "/", class: "link", "data-link": true }, t("lobby.back")),
  );
  return box;
}

/** The fight of the last move, if it was one: who survived, shown until the next move. */
function lastFight(s: GameState): HTMLElement | null {
  const rec = gameRecord(s.events);
  const last = rec[rec.length - 1];
  if (!last || last.type !== "move" || !last.combat) return null;
  const c = last.combat;
  return h(
    "p",
    { class: `last-fight side-${last.side}`, "data-field": "last-combat", role: "status" },
    h("strong", {}, `⚔ ${last.from}–${last.to}`),
    " ",
    combatText(c.attackerSurvives, c.defenderSurvives, c.flagCaptured),
  );
}

function combatText(a: boolean, d: boolean, flag: boolean): string {
  const said = (x: boolean) => t(x ? "combat.survives" : "combat.removed");
  return t("combat.line", { a: said(a), d: said(d) }) + (flag ? ` · ${t("combat.flag")}` : "");
}

function drawMarkPanel(s: GameState, view: GameViewJson, cx: DrawContext): Child {
  const board = s.board;
  if (s.markTarget === null || seatOf(view) === "spectator" || phaseOf(view) !== "play" || !board) return null;
  const id = s.markTarget;
  const fam = board.family;
  const current = s.marks[String(id)];
  const codes = s.possible.get(id);
  return h(
    "div",
    { class: "card marks", "data-field": "mark-panel", "data-piece-id": String(id) },
    h("h2", {}, t("game.mark.title", { id })),
    codes ? h("p", { class: "help", "data-field": "hint" }, t("game.canBe", { kinds: codes.map((c) => pieceName(fam, c)).join(", ") })) : null,
    h(
      "div",
      { class: "mark-grid", role: "group", "aria-label": t("game.mark") },
      board.kinds.map((k) =>
        h(
          "button",
          {
            type: "button",
            class: `mark${current === k.code ? " on" : ""}${codes && !codes.includes(k.code) ? " unlikely" : ""}`,
            "data-mark": k.code,
            "aria-pressed": current === k.code ? "true" : "false",
            title: pieceName(fam, k.code),
            onclick: () => cx.actions.mark(id, k.code),
          },
          pieceShort(fam, k.code),
        ),
      ),
      h("button", { type: "button", class: "mark", "data-mark": "", onclick: () => cx.actions.mark(id, null) }, t("game.mark.none")),
    ),
    h("p", { class: "help small" }, t("game.mark.help")),
  );
}

function drawCaptured(s: GameState, view: GameViewJson): Child {
  if (phaseOf(view) === "deployment" || !s.board) return null;
  const fam = s.board.family;
  const seat = seatOf(view);
  const revealed = revealedKinds(view);
  const item = (c: { side: SideName; id: number; piece?: string }) => {
    const code = c.piece ?? revealed.get(c.id);
    return h("li", { class: `cap side-${c.side}`, "data-piece": code, "data-piece-id": code ? undefined : String(c.id) }, code ? pieceName(fam, code) : `#${c.id}`);
  };
  const caps = capturedPieces(s.events);
  const bottom: SideName = seat === "north" ? "north" : "south";
  const group = (side: SideName, title: string) =>
    h("div", { class: "cap-group" }, h("h3", {}, title), h("ul", { class: "caps" }, caps.filter((c) => c.side === side).map(item)));
  return h(
    "div",
    { class: "card", "data-field": "captured" },
    h("h2", {}, t("game.captured")),
    seat === "spectator"
      ? [group("south", sideWithPlayer(view, "south")), group("north", sideWithPlayer(view, "north"))]
      : [group(bottom, t("game.captured.mine")), group(other(bottom), t("game.captured.theirs"))],
  );
}

/** A side with its player's name, for a spectator ("South · alice"). */
function sideWithPlayer(view: GameViewJson, side: SideName): string {
  const name = (side === "south" ? view.southPlayer : view.northPlayer) ?? "";
  return name ? t("game.sidePlayer", { side: t(`side.${side}`), player: name }) : t(`side.${side}`);
}

/** The move list, one row per event by its seq; after the end every kind the reveal gives. */
function drawMoves(s: GameState, cx: DrawContext): HTMLElement {
  const rec = revealRecord(gameRecord(s.events), revealedKinds(s.view));
  const fam = s.board?.family ?? "junqi";
  const rows = rec.map((e) => {
    if (e.type === "note") {
      const side = t(`side.${e.side}`);
      const text = e.kind === "timeout" ? t("event.timeout", { side, n: e.count ?? 0 }) : t(`event.${e.kind}` as Key, { side });
      return h("li", { class: "note", "data-seq": String(e.seq) }, text);
    }
    const defender = e.combat?.defenderPiece;
    return h(
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
            combatText(e.combat.attackerSurvives, e.combat.defenderSurvives, e.combat.flagCaptured),
          )
        : null,
    );
  });
  const list = h("ol", { class: "moves", "data-field": "moves", "data-follow": cx.follow ? "true" : "false" }, rows);
  return h("div", { class: "card", "data-key": "moves" }, h("h2", {}, t("game.moves")), list, rec.length ? null : h("p", { class: "help" }, t("game.moves.none")));
}

function drawLegend(s: GameState, view: GameViewJson, cx: DrawContext): Child {
  const board = s.board;
  if (!board) return null;
  const open = s.legendOpen ?? phaseOf(view) === "deployment";
  return h(
    "details",
    {
      class: "card legend",
      "data-key": "legend",
      open,
      ontoggle: (e: Event) => {
        // Only the player's own toggles count (setting `open` when drawing fires one too).
        const now = (e.target as HTMLDetailsElement).open;
        if (now !== open) cx.actions.legend(now);
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
