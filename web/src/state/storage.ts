/**
 * What the page keeps in the browser: the token and each game's received events in
 * sessionStorage (so a reload resumes from the last seq seen, with the move list intact), and the
 * guessed-rank marks in localStorage (they survive closing the tab and are never sent anywhere).
 * Everything stored is what the WebSocket delivered to this player, or the player's own guesses.
 */
import type { GameEventJson } from "../gen/hiddenfront/v1/game_pb.js";

/** The subset of the Storage API used here (so tests can pass a Map-backed one). */
export interface KV {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** A Map-backed KV, for tests and for browsers that refuse storage. */
export class MemoryKV implements KV {
  private m = new Map<string, string>();
  getItem(k: string): string | null {
    return this.m.get(k) ?? null;
  }
  setItem(k: string, v: string): void {
    this.m.set(k, v);
  }
  removeItem(k: string): void {
    this.m.delete(k);
  }
}

function safe(get: () => Storage): KV {
  try {
    const s = get();
    const probe = "hf.probe";
    s.setItem(probe, "1");
    s.removeItem(probe);
    return s;
  } catch {
    return new MemoryKV();
  }
}

/** The browser's session storage, or memory when it is unavailable. */
export const session: KV = typeof sessionStorage === "undefined" ? new MemoryKV() : safe(() => sessionStorage);
/** The browser's local storage, or memory when it is unavailable. */
export const local: KV = typeof localStorage === "undefined" ? new MemoryKV() : safe(() => localStorage);

/** The guessed ranks of one game's opponent pieces, by piece id. */
export class Marks {
  constructor(
    private readonly kv: KV,
    private readonly gameId: string,
  ) {}

  private key(): string {
    return `hf.marks.${this.gameId}`;
  }

  all(): Record<string, string> {
    try {
      const v = JSON.parse(this.kv.getItem(this.key()) ?? "{}") as unknown;
      return v && typeof v === "object" ? (v as Record<string, string>) : {};
    } catch {
      return {};
    }
  }

  get(pieceId: number): string | undefined {
    return this.all()[String(pieceId)];
  }

  /** Sets a guess, or clears it with `null`. */
  set(pieceId: number, code: string | null): void {
    const all = this.all();
    if (code) all[String(pieceId)] = code;
    else delete all[String(pieceId)];
    this.kv.setItem(this.key(), JSON.stringify(all));
  }
}

/** The events of one game as received, kept for a reload (the resume point is the last seq). */
export class EventStore {
  constructor(private readonly kv: KV) {}

  private key(gameId: string, spectate: boolean): string {
    return `hf.events.${spectate ? "watch" : "play"}.${gameId}`;
  }

  load(gameId: string, spectate: boolean): GameEventJson[] {
    try {
      const v = JSON.parse(this.kv.getItem(this.key(gameId, spectate)) ?? "[]") as unknown;
      return Array.isArray(v) ? (v as GameEventJson[]) : [];
    } catch {
      return [];
    }
  }

  save(gameId: string, spectate: boolean, events: GameEventJson[]): void {
    try {
      this.kv.setItem(this.key(gameId, spectate), JSON.stringify(events));
    } catch {
      // Full storage: a reload then resumes from the start, which the dedup makes harmless.
    }
  }
}
