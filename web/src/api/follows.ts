/**
 * What the page follows on its connection: games (by game id: one follow per game per
 * connection) and the player's lobby. Each follow is started on every authenticated socket from
 * its subscriber's own position, and again, on the same socket, after the server stopped it with
 * a `Reconnect` item; a `Goodbye` names where to follow each game (and the lobby) on the next
 * socket. Server messages are routed here by game id; a follow's messages are handed to its
 * subscriber only once its `follow` was answered (the server answers a follow before its first
 * event, so whatever comes for that game before the answer belongs to an earlier follow).
 */
import type { GameEventJson, GameStatusJson } from "../gen/hiddenfront/v1/game_pb.js";
import type { LobbyEventJson } from "../gen/hiddenfront/v1/matchmaking_pb.js";
import { backoffDelay } from "./backoff.js";
import type { ServerError } from "./errors.js";
import type { ResumePoint } from "./frames.js";
import type { Req } from "./ops.js";

/** A game follow's subscriber; `nextSeq` is asked again at every (re)follow. */
export interface GameSubscriber {
  gameId: string;
  spectate: boolean;
  nextSeq(): number;
  onEvent(event: GameEventJson): void;
  /**
   * The game's status (presence, deadlines, timeouts, draw offer): given, the follow asks for
   * status items (`withStatus`), sent once it has caught up and then on every change.
   */
  onStatus?(status: GameStatusJson): void;
  /** The follow is over: the game's end was delivered. */
  onEnd?(): void;
  /** The server refused the follow, or stopped it for good. */
  onError?(err: ServerError): void;
  /** The socket came back after a loss and the follow was made again (not at the first open). */
  onResumed?(): void;
}

/** The lobby follow's subscriber; `afterSeq` is asked again at every (re)follow. */
export interface LobbySubscriber {
  afterSeq(): number;
  onEvent(event: LobbyEventJson): void;
}

/** How a follow's request is answered. */
export interface FollowReply {
  answered(): void;
  refused(error: ServerError): void;
}

/** What the follows need from the connection. */
export interface FollowLink {
  /** Whether a socket is authenticated now. */
  isOpen(): boolean;
  /** Sends a follow request on the open socket and answers its id. */
  follow(request: Req<"follow">, reply: FollowReply): number;
  followLobby(request: Req<"followLobby">, reply: FollowReply): number;
  /** Sends an `unfollow` whose answer nobody waits for. */
  unfollow(request: Req<"unfollow">): void;
}

/**
 * A follow's state: `waiting` for a socket (or for its restart), `asked` (its request sent),
 * `live` (answered: its messages are handed over), `over` (the game's end was delivered: it is
 * not made again).
 */
type State = "waiting" | "asked" | "live" | "over";

interface Follow {
  state: State;
  /** The id of the request that started it on this socket. */
  id: number;
  /** Where the server said to follow again from (a `Reconnect` or a `Goodbye`), until used. */
  resumeAt: number | null;
}

interface GameFollow extends Follow {
  kind: "game";
  s: GameSubscriber;
}

interface LobbyFollow extends Follow {
  kind: "lobby";
  s: LobbySubscriber;
}

type AnyFollow = GameFollow | LobbyFollow;

/** The follows of one connection. */
export class Follows {
  private readonly games = new Map<string, GameFollow>();
  private lobby: LobbyFollow | null = null;

  constructor(private readonly link: FollowLink) {}

  /** Follows a game (replacing a follow of the same game); returns a function that stops it. */
  addGame(s: GameSubscriber): () => void {
    const previous = this.games.get(s.gameId);
    if (previous) this.stop(previous);
    const follow: GameFollow = { kind: "game", s, state: "waiting", id: 0, resumeAt: null };
    this.games.set(s.gameId, follow);
    if (this.link.isOpen()) this.start(follow);
    return () => this.stop(follow);
  }

  /** Follows the lobby (replacing the lobby follow); returns a function that stops it. */
  addLobby(s: LobbySubscriber): () => void {
    if (this.lobby) this.stop(this.lobby);
    const follow: LobbyFollow = { kind: "lobby", s, state: "waiting", id: 0, resumeAt: null };
    this.lobby = follow;
    if (this.link.isOpen()) this.start(follow);
    return () => this.stop(follow);
  }

  /** A socket is authenticated: every follow not over starts on it; `resumed` after a loss. */
  opened(resumed: boolean): void {
    for (const follow of this.all()) {
      if (follow.state === "over") continue;
      this.start(follow);
      if (resumed && follow.kind === "game") follow.s.onResumed?.();
    }
  }

  /** The socket is gone: every follow not over waits for the next one. */
  closed(): void {
    for (const follow of this.all()) if (follow.state !== "over") follow.state = "waiting";
  }

  /** An event of a followed game. */
  event(gameId: string, event: GameEventJson): void {
    const follow = this.games.get(gameId);
    if (follow?.state !== "live") return;
    follow.s.onEvent(event);
    if (event.ended) {
      // The server stops a follow after the game's end.
      follow.state = "over";
      follow.s.onEnd?.();
    }
  }

  /** A followed game's status. */
  status(gameId: string, status: GameStatusJson): void {
    const follow = this.games.get(gameId);
    if (follow?.state === "live") follow.s.onStatus?.(status);
  }

  /** A lobby event. */
  lobbyEvent(event: LobbyEventJson): void {
    if (this.lobby?.state === "live") this.lobby.s.onEvent(event);
  }

  /**
   * The server stopped one game's follow (the connection stays open): it is followed again from
   * the position named, after the first reconnect wait.
   */
  reconnect(point: ResumePoint): void {
    const follow = this.games.get(point.gameId);
    if (!follow || (follow.state !== "live" && follow.state !== "asked")) return;
    follow.state = "waiting";
    follow.resumeAt = point.fromSeq;
    setTimeout(() => {
      if (this.games.get(point.gameId) === follow && follow.state === "waiting" && this.link.isOpen()) this.start(follow);
    }, backoffDelay(0));
  }

  /** The connection closes: each follow named starts on the next socket from the position named. */
  goodbye(games: readonly ResumePoint[], lobbyAfterSeq: number | null): void {
    for (const point of games) {
      const follow = this.games.get(point.gameId);
      if (follow && follow.state !== "over") follow.resumeAt = point.fromSeq;
    }
    if (this.lobby && lobbyAfterSeq !== null) this.lobby.resumeAt = lobbyAfterSeq;
    this.closed();
  }

  /**
   * A refusal of request `id` that no request waits for any more: a follow the server answered
   * and then stopped for good (it could not go on upstream). It is made again on the next socket.
   */
  refusedLater(id: number, error: ServerError): boolean {
    const follow = this.all().find((f) => f.id === id && f.state === "live");
    if (!follow) return false;
    follow.state = "waiting";
    if (follow.kind === "game") follow.s.onError?.(error);
    return true;
  }

  /**
   * Where a follow starts: its subscriber's own next position, or the one the server named when
   * that is earlier (an event the page does not hold is never skipped; one it holds twice is
   * dropped by its subscriber).
   */
  private position(follow: AnyFollow): number {
    const own = follow.kind === "game" ? follow.s.nextSeq() : follow.s.afterSeq();
    return follow.resumeAt === null ? own : Math.min(own, follow.resumeAt);
  }

  private start(follow: AnyFollow): void {
    const from = String(this.position(follow));
    follow.resumeAt = null;
    follow.state = "asked";
    // The replies come with a later frame, once `id` is known.
    let id = 0;
    const reply: FollowReply = {
      answered: () => {
        if (follow.id === id && follow.state === "asked") follow.state = "live";
      },
      refused: (error) => {
        if (follow.id !== id || follow.state !== "asked") return;
        follow.state = "waiting";
        if (error.reason !== "CONNECTION_LOST" && follow.kind === "game") follow.s.onError?.(error);
      },
    };
    id =
      follow.kind === "game"
        ? this.link.follow({ gameId: follow.s.gameId, fromSeq: from, spectate: follow.s.spectate, withStatus: follow.s.onStatus !== undefined }, reply)
        : this.link.followLobby({ afterSeq: from }, reply);
    follow.id = id;
  }

  private stop(follow: AnyFollow): void {
    if (follow.kind === "game") {
      if (this.games.get(follow.s.gameId) !== follow) return;
      this.games.delete(follow.s.gameId);
    } else {
      if (this.lobby !== follow) return;
      this.lobby = null;
    }
    const started = follow.state !== "waiting";
    follow.state = "over";
    if (started && this.link.isOpen()) {
      this.link.unfollow(follow.kind === "game" ? { gameId: follow.s.gameId } : { lobby: true });
    }
  }

  private all(): AnyFollow[] {
    const out: AnyFollow[] = [...this.games.values()];
    if (this.lobby) out.push(this.lobby);
    return out;
  }
}
