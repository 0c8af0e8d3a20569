/**
 * Draws a board from the engine's topology alone: node positions from column and row, rails and
 * roads from the links, camps, HQs, the front (mountains where no link crosses, the crossings
 * where one does) or the wall and its gates. The viewer's side is at the bottom.
 */
import type { Board, BoardNode } from "../engine/types.js";
import { h, s } from "./dom.js";

/** What to draw on one square. */
export interface SquareContent {
  /** Visible text on the piece (short name, mark, or "?"). */
  label: string;
  side: "south" | "north";
  /** Known kind (own pieces, revealed ones). */
  code?: string;
  /** Opponent piece id (face down). */
  pieceId?: number;
  /** Whether the page knows its kind (for the face-up look). */
  faceUp: boolean;
  /** A guessed mark or hint shown small. */
  badge?: string;
  /** Extra classes. */
  marked?: boolean;
}

/** What one drawing of the board needs: the topology, what stands where, and the highlights. */
export interface BoardOptions {
  board: Board;
  /** The side drawn at the bottom. */
  bottom: "south" | "north";
  content: Map<string, SquareContent>;
  ariaLabel(node: BoardNode, content: SquareContent | undefined): string;
  selected?: string | null;
  legal?: Set<string>;
  lastMove?: { from: string; to: string } | null;
  /** Squares that can be dragged (deployment). */
  draggable?: Set<string>;
  onSquare?(name: string): void;
  onDrop?(from: string, to: string): void;
  label: string;
}

interface Geometry {
  width: number;
  height: number;
  pos(node: BoardNode): { x: number; y: number };
  gapTop: number;
  gapBottom: number;
}

/** Where each node is drawn, in board units (one cell = 1), with the gap between the halves. */
export function geometry(board: Board, bottom: "south" | "north"): Geometry {
  let southMax = -1;
  for (const n of board.nodes) if (n.half === "south") southMax = Math.max(southMax, n.row);
  const gap = board.family === "junqi" ? 0.9 : 0.5;
  const height = board.rows + gap;
  const width = board.columns;
  const flip = bottom === "north";
  const pos = (n: BoardNode) => {
    const cx = n.column + n.span / 2;
    const fromBottom = n.row + 0.5 + (n.row > southMax ? gap : 0);
    const x = flip ? width - cx : cx;
    const y = flip ? fromBottom : height - fromBottom;
    return { x, y };
  };
  const gapLow = southMax + 1; // from the bottom, the gap spans [southMax+1, southMax+1+gap]
  const gapTop = flip ? gapLow : height - gapLow - gap;
  return { width, height, pos, gapTop, gapBottom: gapTop + gap };
}

/** Renders the board; every node is a focusable button with `data-square` and an `aria-label`. */
export function renderBoard(o: BoardOptions): HTMLElement {
  const { board } = o;
  const g = geometry(board, o.bottom);
  const byName = new Map(board.nodes.map((n) => [n.name, n]));
  const svg = s("svg", {
    class: "board-lines",
    viewBox: `0 0 ${g.width} ${g.height}`,
    preserveAspectRatio: "none",
    "aria-hidden": "true",
  });
  // The gap between the halves: the front line (Junqi) or the wall (Gunjin Shogi).
  svg.appendChild(
    s("rect", { class: board.family === "junqi" ? "front" : "wall", x: 0, y: g.gapTop, width: g.width, height: g.gapBottom - g.gapTop }),
  );
  const crossingColumns = new Set<number>();
  for (const l of board.links) {
    const a = byName.get(l.a);
    const b = byName.get(l.b);
    if (!a || !b) continue;
    if (a.half !== b.half && a.column === b.column) crossingColumns.add(a.column);
    const pa = g.pos(a);
    const pb = g.pos(b);
    const crossing = a.half !== b.half;
    svg.appendChild(
      s("line", { class: `link ${l.rail ? "rail" : "road"}${crossing ? " crossing" : ""}`, x1: pa.x, y1: pa.y, x2: pb.x, y2: pb.y }),
    );
  }
  if (board.family === "junqi") {
    // Mountains: the places of the front with no link across.
    for (let c = 0; c < board.columns; c++) {
      if (crossingColumns.has(c)) continue;
      const x = o.bottom === "north" ? g.width - (c + 0.5) : c + 0.5;
      const top = g.gapTop + 0.1;
      const bot = g.gapBottom - 0.1;
      svg.appendChild(s("path", { class: "mountain", d: `M${x - 0.35} ${bot} L${x - 0.1} ${top} L${x + 0.05} ${(top + bot) / 2} L${x + 0.18} ${top + 0.08} L${x + 0.4} ${bot} Z` }));
    }
  }

  const root = h("div", {
    class: `board board-${board.family}`,
    role: "group",
    "aria-label": o.label,
    "data-board": board.rules,
    onkeydown: (e: Event) => moveFocus(e, board, g, byName),
  });
  root.style.aspectRatio = `${g.width} / ${g.height * (board.family === "junqi" ? 0.72 : 1)}`;
  root.appendChild(svg);
  const cellW = 100 / g.width;
  const cellH = 100 / g.height;
  for (const n of board.nodes) {
    const p = g.pos(n);
    const c = o.content.get(n.name);
    const classes = ["sq"];
    if (n.camp) classes.push("camp");
    if (n.hq) classes.push("hq");
    if (n.rail) classes.push("on-rail");
    if (c) classes.push("has-piece", `side-${c.side}`, c.faceUp ? "face-up" : "face-down");
    if (c?.marked) classes.push("marked");
    const canDrag = !!o.onDrop && !!o.draggable?.has(n.name);
    const btn = h(
      "button",
      {
        type: "button",
        class: classes.join(" "),
        "data-square": n.name,
        "aria-label": o.ariaLabel(n, c),
        "data-piece": c?.code,
        "data-piece-id": c && !c.code && c.pieceId !== undefined ? String(c.pieceId) : undefined,
        "data-side": c?.side,
        "data-selected": o.selected === n.name,
        "data-legal": o.legal?.has(n.name) ?? false,
        "data-last-move": o.lastMove ? o.lastMove.from === n.name || o.lastMove.to === n.name : false,
        draggable: o.draggable?.has(n.name) ? "true" : undefined,
        onclick: () => o.onSquare?.(n.name),
        ondragstart: canDrag
          ? (e: Event) => {
              dragFrom = n.name;
              (e as DragEvent).dataTransfer?.setData("text/plain", n.name);
            }
          : undefined,
        ondragover: o.onDrop
          ? (e: Event) => {
              if (dragFrom) e.preventDefault();
            }
          : undefined,
        ondrop: o.onDrop
          ? (e: Event) => {
              e.preventDefault();
              const from = dragFrom ?? (e as DragEvent).dataTransfer?.getData("text/plain");
              dragFrom = null;
              if (from && from !== n.name) o.onDrop?.(from, n.name);
            }
          : undefined,
      },
      c ? h("span", { class: "piece-label" }, c.label) : null,
      c?.badge ? h("span", { class: "piece-badge" }, c.badge) : null,
    );
    const w = (n.camp ? 0.6 : 0.86) * (n.span === 2 ? 1.9 : 1);
    const hh = board.family === "junqi" ? 0.72 : 0.86;
    btn.style.left = `${p.x * cellW}%`;
    btn.style.top = `${p.y * cellH}%`;
    btn.style.width = `${w * cellW}%`;
    if (!n.camp) btn.style.height = `${hh * cellH}%`;
    root.appendChild(btn);
  }
  return root;
}

/**
 * The square a drag started on. Module-wide rather than per drawing: a redraw during the drag
 * (an answer, the 4-second poll) keeps the squares but gives them the new drawing's listeners.
 */
let dragFrom: string | null = null;

/** Arrow keys move the focus to the nearest square in that direction, as drawn. */
function moveFocus(e: Event, board: Board, g: Geometry, byName: Map<string, BoardNode>): void {
  const key = (e as KeyboardEvent).key;
  const dir = ({ ArrowUp: [0, -1], ArrowDown: [0, 1], ArrowLeft: [-1, 0], ArrowRight: [1, 0] } as Record<string, [number, number]>)[key];
  const from = (e.target as HTMLElement | null)?.getAttribute?.("data-square");
  if (!dir || !from) return;
  const here = byName.get(from);
  if (!here) return;
  const next = nearestInDirection(board.nodes, g, here, dir);
  if (next) {
    e.preventDefault();
    (e.currentTarget as HTMLElement).querySelector<HTMLElement>(`[data-square="${next.name}"]`)?.focus();
  }
}

/** The node drawn nearest to `from` in screen direction `dir`, preferring ones straight along it. */
export function nearestInDirection(nodes: BoardNode[], g: Geometry, from: BoardNode, dir: [number, number]): BoardNode | null {
  const p = g.pos(from);
  let best: BoardNode | null = null;
  let bestScore = Infinity;
  for (const n of nodes) {
    if (n === from) continue;
    const q = g.pos(n);
    const along = (q.x - p.x) * dir[0] + (q.y - p.y) * dir[1];
    if (along <= 0.01) continue;
    const across = Math.abs((q.x - p.x) * dir[1]) + Math.abs((q.y - p.y) * dir[0]);
    const score = along + across * 3;
    if (score < bestScore) {
      bestScore = score;
      best = n;
    }
  }
  return best;
}
