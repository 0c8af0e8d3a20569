/**
 * The page's one connection to the gateway: `PlayerService/Connect` as binary WebSocket frames
 * (subprotocol `hiddenfront.connect.v1`, `frames.ts`). It authenticates with its first frame (a
 * browser cannot set the Authorization header), sends each request with an id of its own and
 * matches the answer or refusal by that id however it interleaves with the events, and keeps the
 * follows going across dropped sockets (`follows.ts`).
 *
 * Every socket after the first is opened by the one reconnect schedule (`backoffDelay`): a
 * request made while the connection is lost waits for the scheduled reconnect (and fails with
 * CONNECTION_LOST if that attempt fails too); it never opens a socket of its own.
 */
import type { AnswerJson } from "../gen/hiddenfront/v1/client_pb.js";
import { backoffDelay } from "./backoff.js";
import { ServerError, badMessage, connectionLost } from "./errors.js";
import { Follows, type FollowReply, type GameSubscriber, type LobbySubscriber } from "./follows.js";
import { SUBPROTOCOL, decodeResponse, encodeRequest, type Incoming } from "./frames.js";
import { ANSWER_OF, type Op, type PageOp, type Req, type Res } from "./ops.js";

export { RECONNECT_CAP_MS, RECONNECT_FIRST_MS, RECONNECT_LONGEST_MS, backoffDelay } from "./backoff.js";
export { CLIENT_REASONS, ServerError } from "./errors.js";
export type { GameSubscriber, LobbySubscriber } from "./follows.js";

/**
 * Connection state, for the page's status line: `connecting` until the first socket is
 * authenticated, `open`, and `lost` from a dropped socket (or a failed first attempt) until a
 * reconnect is authenticated, however many attempts that takes.
 */
export type ConnState = "connecting" | "open" | "lost";

/** A request waiting for its answer: the `Answer` field expected, and what to do with it. */
interface Pending {
  field: keyof AnswerJson;
  resolve(answer: unknown): void;
  reject(error: ServerError): void;
}

/** One logical connection for the page's whole life. */
export class Connection {
  private ws: WebSocket | null = null;
  private nextId = 1;
  private pending = new Map<number, Pending>();
  private readonly follows: Follows;
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
  ) {
    const reply = (r: FollowReply) => ({ resolve: () => r.answered(), reject: (e: ServerError) => r.refused(e) });
    const ignore = { resolve: () => {}, reject: () => {} };
    this.follows = new Follows({
      isOpen: () => this.isOpen,
      follow: (request, r) => this.send("follow", request, reply(r)),
      followLobby: (request, r) => this.send("followLobby", request, reply(r)),
      unfollow: (request) => void this.send("unfollow", request, ignore),
    });
  }

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
      const ws = new WebSocket(this.url, SUBPROTOCOL);
      ws.binaryType = "arraybuffer";
      this.ws = ws;
      let authed = false;
      ws.onopen = () => {
        if (ws.protocol !== SUBPROTOCOL) {
          // A gateway that does not speak the binary form: this page cannot talk to it.
          console.error(`hidden-front: the server chose the subprotocol "${ws.protocol}", not ${SUBPROTOCOL}`);
          ws.close();
          return;
        }
        const id = this.nextId++;
        this.pending.set(id, {
          field: ANSWER_OF.authenticate,
          resolve: (answer) => {
            const who = answer as Res<"authenticate">;
            this.player = who.player ?? "";
            this.guest = who.guest ?? false;
            authed = true;
            const reconnected = this.wasOpen;
            this.isOpen = true;
            this.wasOpen = true;
            this.attempt = 0;
            this.onState("open");
            resolve();
            this.follows.opened(reconnected);
          },
          reject: (e) => {
            // The server closes the socket after a refused sign-in; no reconnect follows.
            this.closedByUs = true;
            this.onAuthFailed(e);
            reject(e);
          },
        });
        ws.send(encodeRequest(id, "authenticate", { token: this.token() }));
      };
      ws.onmessage = (m: MessageEvent) => this.onFrame(m.data);
      ws.onclose = () => {
        this.ws = null;
        this.ready = null;
        this.isOpen = false;
        const pending = [...this.pending.values()];
        this.pending.clear();
        this.follows.closed();
        for (const p of pending) p.reject(connectionLost());
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
   * Sends one request and resolves with its answer (proto JSON), or rejects with its refusal.
   * While the connection is lost it waits for the scheduled reconnect, and fails with
   * CONNECTION_LOST if that fails. An action's answer is its `ActionResult`: the acknowledgment;
   * the events it caused arrive on the game's follow, in either order with the answer.
   */
  async request<O extends PageOp>(op: O, req: Req<O>): Promise<Res<O>> {
    await this.connect();
    return new Promise<Res<O>>((resolve, reject) => {
      this.send(op, req, { resolve: (answer) => resolve(answer as Res<O>), reject });
    });
  }

  /**
   * Sends request `op` on the open socket under a fresh id (answered through `handlers`, or
   * rejected at once with CONNECTION_LOST when no socket is authenticated) and returns the id.
   * The generated code checks the request before it is encoded: a field it does not know throws.
   */
  private send<O extends Op>(op: O, req: Req<O>, handlers: Omit<Pending, "field">): number {
    const id = this.nextId++;
    const ws = this.ws;
    if (!ws || !this.isOpen) {
      handlers.reject(connectionLost());
      return id;
    }
    const frame = encodeRequest(id, op, req);
    this.pending.set(id, { field: ANSWER_OF[op], ...handlers });
    ws.send(frame);
    return id;
  }

  /** Follows a game's events (and status items); returns a function that stops the follow. */
  followGame(s: GameSubscriber): () => void {
    const stop = this.follows.addGame(s);
    if (!this.isOpen) this.connect().catch(() => {});
    return stop;
  }

  /** Follows the lobby (match found, ticket expired...); returns a function that stops it. */
  followLobby(s: LobbySubscriber): () => void {
    const stop = this.follows.addLobby(s);
    if (!this.isOpen) this.connect().catch(() => {});
    return stop;
  }

  private onFrame(data: unknown): void {
    if (!(data instanceof ArrayBuffer)) {
      console.warn("hidden-front: a frame that is not binary was skipped");
      return;
    }
    let messages: Incoming[];
    try {
      messages = decodeResponse(data);
    } catch (e) {
      console.warn("hidden-front: a frame that is not a ConnectResponse was skipped", e);
      return;
    }
    for (const message of messages) this.onMessage(message);
  }

  private onMessage(m: Incoming): void {
    switch (m.kind) {
      case "answer": {
        const p = this.pending.get(m.id);
        if (!p) return;
        this.pending.delete(m.id);
        const answer = m.answer[p.field];
        if (answer === undefined) p.reject(badMessage(`request ${m.id} was answered without ${p.field}`));
        else p.resolve(answer);
        return;
      }
      case "refusal": {
        // Before the sign-in is answered, any refusal is its (id 0: the frame was not read).
        const id = !this.isOpen && m.id === 0 ? this.authId() : m.id;
        const p = id === undefined ? undefined : this.pending.get(id);
        if (p && id !== undefined) {
          this.pending.delete(id);
          p.reject(m.error);
        } else if (!this.follows.refusedLater(m.id, m.error)) {
          console.warn(`hidden-front: refused ${m.id}: ${m.error.reason} ${m.error.message}`);
        }
        return;
      }
      case "event":
        return this.follows.event(m.gameId, m.event);
      case "status":
        return this.follows.status(m.gameId, m.status);
      case "lobby":
        return this.follows.lobbyEvent(m.event);
      case "reconnect":
        return this.follows.reconnect(m);
      case "goodbye":
        // The socket closes next; the reconnect schedule opens the next one.
        return this.follows.goodbye(m.games, m.lobbyAfterSeq);
    }
  }

  /** The id of the sign-in request waiting for its answer, if any. */
  private authId(): number | undefined {
    for (const [id, p] of this.pending) if (p.field === ANSWER_OF.authenticate) return id;
    return undefined;
  }
}
