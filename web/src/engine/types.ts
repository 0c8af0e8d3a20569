/**
 * The engine's wasm API as the shared contract states it (crates/web-engine). Kept as our own
 * types so the page and the tests (with a fake engine) code against the contract, not against a
 * particular build of the bindings.
 */
import type {
  CombatViewJson,
  DeploymentJson,
  GameEventJson,
  GameViewJson,
  VisiblePieceJson,
} from "../gen/hiddenfront/v1/game_pb.js";

/** A half of the board, or a side, as the engine names them. */
export type HalfName = "south" | "north";

/** One node of the board: a square, or Gunjin Shogi's two-cell HQ (`span` 2). */
export interface BoardNode {
  name: string;
  column: number;
  row: number;
  span: number;
  camp: boolean;
  hq: HalfName | null;
  rail: boolean;
  half: HalfName;
  deploy: boolean;
  gate: boolean;
  frontRow: boolean;
}

/** A link between two nodes; `rail` for a railway segment. */
export interface BoardLink {
  a: string;
  b: string;
  rail: boolean;
}

/** A piece kind of the rule set, strongest first. */
export interface PieceKind {
  code: string;
  count: number;
  moves: boolean;
  strength: number;
}

/** The whole board of a rule set, from the engine's own topology. */
export interface Board {
  rules: string;
  family: "junqi" | "gunjin";
  columns: number;
  rows: number;
  piecesPerSide: number;
  nodes: BoardNode[];
  links: BoardLink[];
  kinds: PieceKind[];
}

/** A move by square names. */
export interface SimpleMove {
  from: string;
  to: string;
}

/** A deployment problem, `reason` stable (translated), `message` English (never shown). */
export interface Problem {
  reason: string;
  square?: string;
  code?: string;
  message: string;
}

/** checkSwap's answer: the swapped deployment, or why the swap is refused. */
export type SwapResult = { ok: true; deployment: DeploymentJson } | { ok: false; problems: Problem[] };
/** parseMove's answer: the move, or why the text is not one. */
export type ParseResult = { ok: true; move: SimpleMove } | { ok: false; message: string };

/** What an opponent piece can still be. */
export interface Possibility {
  id: number;
  codes: string[];
  moved: boolean;
  alive: boolean;
}

/** One board of the end replay. */
export interface ReplayStep {
  seq: string | number;
  pieces: VisiblePieceJson[];
  move?: SimpleMove;
  combat?: CombatViewJson;
}

/** The inference of one player, fed only the events that player received. */
export interface InferenceLike {
  observe(event: GameEventJson): void;
  possible(): Possibility[];
  free?(): void;
}

/** The engine as the page uses it; the real one is wasm, the tests use a fake. */
export interface Engine {
  topology(rules: string): Board;
  legalMoves(view: GameViewJson): SimpleMove[];
  /** The view after one more event as this viewer was shown it; throws when the event does not follow. */
  applyEvent(view: GameViewJson, event: GameEventJson): GameViewJson;
  validateDeployment(rules: string, deployment: DeploymentJson): Problem[];
  checkSwap(rules: string, deployment: DeploymentJson, a: string, b: string): SwapResult;
  parseMove(rules: string, text: string): ParseResult;
  newInference(rules: string, side: HalfName): InferenceLike;
  replayBoards(rules: string, startingPieces: VisiblePieceJson[], events: GameEventJson[]): ReplayStep[];
}
