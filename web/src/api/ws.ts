/**
 * The WebSocket connection of docs/websocket.md: authenticates with the first message, matches
 * answers by request id, keeps subscriptions alive across dropped sockets (reconnecting with
 * backoff and resubscribing from the subscriber's own next seq), and checks every message with
 * the generated proto JSON (de)serialisation.
 *
 * Every socket after the first is opened by the one reconnect schedule (`backoffDelay`): a
 * request made while the connection is lost waits for the scheduled reconnect (and fails with
 * CONNECTION_LOST if that attempt fails too); it never opens a socket of its own.
 */
import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { GameEventSchema, GameStatusSchema, type GameEventJson, type GameStatusJson } from "../gen/hiddenfront/v1/game_pb.js";
import { LobbyEventSchema, type LobbyEventJson } from "../gen/hiddenfront/v1/matchmaking_pb.js";
import { schemas, type Op, type Req, type Res } from "./ops.js";
import { backoffDelay } from "./backoff.js";
import { ServerError, connectionLost } from "./errors.js";

export { RECONNECT_CAP_MS, RECONNECT_FIRST_MS, RECONNECT_LONGEST_MS, backoffDelay } from "./backoff.js";
export { CLIENT_REASONS, ServerError } from "./errors.js";

type Frame =
  | { type: "result"; id: unknown; response?: unknown }
  | { type: "error"; id: unknown; code?: string; reason?: string; message?: string }
  | { type: "event"; subscription: unknown; event: unknown }
  | { type: "status"; subscription: unknown; status: unknown }
  | { type: "lobby"; subscription: unknown; event: unknown }
  | { type: "reconnect"; subscription: unknown; resume_from_seq?: number }
  | { type: "end"; subscription: unknown; code?: string; reason?: string };

/** A game subscription's callbacks; `nextSeq` is asked again at every (re)subscribe. */
export interface GameSubscriber {
  gameId: string;
  spectate: boolean;
  nextSeq(): number;
  onEvent(event: GameEventJson): void;
  /**
   * The game's status (presence, deadlines, timeouts, draw offer): given, the subscription asks
   * for `status` items (`withStatus`), sent once it has caught up and then on every change.
   */
  onStatus?(status: GameStatusJson): void;
  onEnd?(): void;
  onError?(err: ServerError): void;
  /** The socket came back after a loss and the subscription was made again (not at the first open). */
  onResumed?(): void;
}

/** A lobby subscription's callbacks; `afterSeq` is asked again at every (re)watch. */
export interface LobbySubscriber {
  afterSeq(): number;
  onEvent(event: LobbyEventJson): void;
}

type Sub = { kind: "game"; s: GameSubscriber; ended: boolean } | { kind: "lobby"; s: LobbySubscriber; ended: boolean };

/**
 * Connection state, for the page's status line: `connecting` until the first socket is
 * authenticated, `open`, and `lost` from a dropped socket (or a failed first attempt) until a
 * reconnect is authenticated, however many attempts that takes.
 */
export type ConnState = "connecting" | "open" | "lost";

interface Pending {
  resolve(v: unknown): void;
  reject(e: ServerError): void;
  op: Op | "auth";
}

/** One logical connection for the page's whole life. */
export class Connection {
  private ws: WebSocket | null = null;
  private nextId = 1;
  private pending = new Map<string, Pending>();
  private subs = new Map<string, Sub>();
  private attempt = 0;
  private ready: Promise<void> | null = null;
  /** The outcome of the reconnect attempt that is scheduled (its timer pending), if any. */
  private scheduled: Promise<void> | null = null;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private cancelScheduled: (() => void) | null = null;
  private closedByUs = false;
  private isOpen = false;
  /** Whether a socket was ever authenticated (so a later open is a reconnection). */
  private wasOpen = false;
  player = "";
  guest = false;
  onState: (s: ConnState) => void = () => {};
  onAuthFailed: (e: ServerError) => void = () => {};

  constructor(
    private readonly url: string,
    private readonly token: () => string,
  ) {}

  /**
   * Resolves once a socket is authenticated: the open one, the one being opened, or, while the
   * connection is lost, the one the reconnect schedule opens next (rejecting with
   * CONNECTION_LOST if that attempt fails). Opens a socket itself only when none is open or
   * scheduled (the first connection).
   */
  connect(): Promise<void> {
    if (this.ready) return this.ready;
    if (this.scheduled) return this.scheduled;
    return this.open();
  }

  private open(): Promise<void> {
    this.ready = new Promise<void>((resolve, reject) => {
      if (!this.wasOpen) this.onState("connecting");
      const ws = new WebSocket(this.url);
      this.ws = ws;
      let authed = false;
      ws.onopen = () => {
        const id = "auth";
        this.pending.set(JSON.stringify(id), {
          op: "auth",
          resolve: (r) => {
            const resp = r as { player?: string; guest?: boolean };
            this.player = resp.player ?? "";
            this.guest = resp.guest ?? false;
            authed = true;
            const reconnected = this.wasOpen;
            this.isOpen = true;
            this.wasOpen = true;
            this.attempt = 0;
            this.onState("open");
            resolve();
            this.resubscribeAll(reconnected);
          },
          reject: (e) => {
            this.closedByUs = true;
            this.onAuthFailed(e);
            reject(e);
          },
        });
        ws.send(JSON.stringify({ id, type: "auth", token: this.token() }));
      };
      ws.onmessage = (m) => this.onFrame(typeof m.data === "string" ? m.data : "");
      ws.onclose = () => {
        this.ws = null;
        this.ready = null;
        this.isOpen = false;
        for (const [, p] of this.pending) p.reject(connectionLost());
        this.pending.clear();
        if (!authed) reject(connectionLost());
        if (!this.closedByUs) {
          this.onState("lost");
          this.scheduleReconnect();
        }
      };
    });
    // A failed first attempt is retried by the close handler; callers see the rejection.
    this.ready.catch(() => {});
    return this.ready;
  }

  /** The next attempt, after the schedule's wait; whoever needs the socket meanwhile waits for it. */
  private scheduleReconnect(): void {
    const delay = backoffDelay(this.attempt++);
    this.scheduled = new Promise<void>((resolve, reject) => {
      this.cancelScheduled = () => reject(connectionLost());
      this.reconnectTimer = setTimeout(() => {
        this.reconnectTimer = null;
        this.cancelScheduled = null;
        this.scheduled = null;
        if (this.closedByUs) {
          reject(connectionLost());
          return;
        }
        this.open().then(resolve, reject);
      }, delay);
    });
    this.scheduled.catch(() => {});
  }

  /** Closes for good (sign-out, tests): no reconnect follows. */
  close(): void {
    this.closedByUs = true;
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    this.scheduled = null;
    this.cancelScheduled?.();
    this.cancelScheduled = null;
    this.ws?.close(1000);
  }

  /**
   * Sends one request and resolves with its proto response (as JSON). While the connection is
   * lost it waits for the scheduled reconnect, and fails with CONNECTION_LOST if that fails.
   */
  async request<O extends Op>(op: O, req: Req<O>): Promise<Res<O>> {
    await this.connect();
    return this.send(op, req) as Promise<Res<O>>;
  }

  private send(op: Op, req: unknown): Promise<unknown> {
    const ws = this.ws;
    if (!ws || !this.isOpen) return Promise.reject(connectionLost());
    const [reqSchema] = schemas[op];
    // The generated (de)serialisation checks the request and writes canonical proto JSON.
    const request = toJson(reqSchema, fromJson(reqSchema, req as JsonValue));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(JSON.stringify(id), { op, resolve, reject });
      ws.send(JSON.stringify({ id, type: op, request }));
    });
  }

  /** Subscribes to a game's events; returns a function that unsubscribes. */
  subscribeGame(s: GameSubscriber): () => void {
    return this.addSub({ kind: "game", s, ended: false });
  }

  /** Watches the lobby (match found, ticket expired...); returns a function that stops it. */
  watchLobby(s: LobbySubscriber): () => void {
    return this.addSub({ kind: "lobby", s, ended: false });
  }

  private addSub(sub: Sub): () => void {
    const id = `s${this.nextId++}`;
    this.subs.set(id, sub);
    if (this.isOpen) this.startSub(id, sub);
    else this.connect().catch(() => {});
    return () => {
      if (!this.subs.delete(id)) return;
      if (this.ws && !sub.ended) {
        const rid = this.nextId++;
        this.pending.set(JSON.stringify(rid), { op: "subscribe", resolve: () => {}, reject: () => {} });
        this.ws.send(JSON.stringify({ id: rid, type: "unsubscribe", request: { subscription: id } }));
      }
    };
  }

  private resubscribeAll(reconnected: boolean): void {
    for (const [id, sub] of this.subs) {
      if (sub.ended) continue;
      this.startSub(id, sub);
      if (reconnected && sub.kind === "game") sub.s.onResumed?.();
    }
  }

  private startSub(id: string, sub: Sub): void {
    const ws = this.ws;
    if (!ws) return;
    let type: Op;
    let request: unknown;
    if (sub.kind === "game") {
      type = "subscribe";
      request = {
        gameId: sub.s.gameId,
        fromSeq: String(sub.s.nextSeq()),
        spectate: sub.s.spectate,
        withStatus: sub.s.onStatus !== undefined,
      };
    } else {
      type = "watch_lobby";
      request = { afterSeq: String(sub.s.afterSeq()) };
    }
    const [schema] = schemas[type];
    const req = toJson(schema, fromJson(schema, request as JsonValue));
    this.pending.set(JSON.stringify(id), {
      op: type,
      resolve: () => {},
      reject: (e) => {
        if (sub.kind === "game") sub.s.onError?.(e);
      },
    });
    ws.send(JSON.stringify({ id, type, request: req }));
  }

  private onFrame(text: string): void {
    let frame: Frame;
    try {
      frame = JSON.parse(text) as Frame;
    } catch {
      return;
    }
    switch (frame.type) {
      case "result":
      case "error": {
        const key = JSON.stringify(frame.id ?? "auth");
        const p = this.pending.get(key);
        if (!p) return;
        this.pending.delete(key);
        if (frame.type === "error") {
          p.reject(new ServerError(frame.code ?? "UNKNOWN", frame.reason ?? "", frame.message ?? ""));
          return;
        }
        const response = frame.response ?? {};
        if (p.op !== "auth") {
          const resSchema = schemas[p.op][1];
          if (resSchema) {
            try {
              fromJson(resSchema, response as JsonValue, { ignoreUnknownFields: true });
            } catch {
              p.reject(new ServerError("INTERNAL", "BAD_MESSAGE", "bad response"));
              return;
            }
          }
        }
        p.resolve(response);
        return;
      }
      case "event":
      case "lobby": {
        const sub = this.subs.get(String(frame.subscription));
        if (!sub) return;
        try {
          if (sub.kind === "game") {
            fromJson(GameEventSchema, frame.event as JsonValue, { ignoreUnknownFields: true });
            sub.s.onEvent(frame.event as GameEventJson);
          } else {
            fromJson(LobbyEventSchema, frame.event as JsonValue, { ignoreUnknownFields: true });
            sub.s.onEvent(frame.event as LobbyEventJson);
          }
        } catch (e) {
          console.warn("hidden-front: a malformed event was skipped", e);
        }
        return;
      }
      case "status": {
        const sub = this.subs.get(String(frame.subscription));
        if (sub?.kind !== "game") return;
        try {
          fromJson(GameStatusSchema, frame.status as JsonValue, { ignoreUnknownFields: true });
          sub.s.onStatus?.(frame.status as GameStatusJson);
        } catch (e) {
          console.warn("hidden-front: a malformed status was skipped", e);
        }
        return;
      }
      case "reconnect": {
        // The subscription stops; `end` follows. Resubscribe from our own next seq, which the
        // subscriber keeps (resume_from_seq says the same, or one earlier when a hint repeats).
        const id = String(frame.subscription);
        const sub = this.subs.get(id);
        if (sub) sub.ended = true;
        this.pendingRestart.add(id);
        return;
      }
      case "end": {
        const id = String(frame.subscription);
        const sub = this.subs.get(id);
        if (!sub) return;
        if (this.pendingRestart.delete(id)) {
          sub.ended = false;
          setTimeout(() => this.startSub(id, sub), backoffDelay(0));
          return;
        }
        sub.ended = true;
        if (sub.kind === "game") sub.s.onEnd?.();
        return;
      }
    }
  }

  private pendingRestart = new Set<string>();
}
