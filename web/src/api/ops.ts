/**
 * The requests the page makes on its `Connect` connection, each tied to the `Answer` field that
 * answers it. Requests and answers are the generated proto messages (protobuf-es, from `proto/`)
 * in their proto3 JSON form: a request is one field of `ConnectRequest` (`getGame`, `play`, ...),
 * its answer one field of `Answer` (an action's is `action`, its `ActionResult`), so the types
 * below come from the generated code rather than being copied by hand.
 */
import type { AnswerJson, ConnectRequestJson } from "../gen/hiddenfront/v1/client_pb.js";

/** The `Answer` field of each `ConnectRequest` field the page sends. */
export const ANSWER_OF = {
  authenticate: "authenticate",
  follow: "followed",
  followLobby: "followed",
  unfollow: "followed",
  getGame: "getGame",
  listMyGames: "listMyGames",
  reshuffle: "action",
  swap: "action",
  deploy: "action",
  confirm: "action",
  play: "action",
  proposeDraw: "action",
  respondDraw: "action",
  concede: "action",
  findMatch: "findMatch",
  cancelMatch: "cancelMatch",
  createInvite: "createInvite",
  acceptInvite: "acceptInvite",
  cancelInvite: "cancelInvite",
  playComputer: "playComputer",
  getMyRating: "getMyRating",
  exportReplay: "exportReplay",
  listTournaments: "listTournaments",
  joinTournament: "joinTournament",
  withdrawTournament: "withdrawTournament",
  getTournament: "getTournament",
} as const satisfies { [K in keyof ConnectRequestJson]?: Exclude<keyof AnswerJson, "requestId"> };

/** A request the connection sends (a field of `ConnectRequest`). */
export type Op = keyof typeof ANSWER_OF;
/** The requests the connection makes itself: the sign-in and the follows. */
export type OwnOp = "authenticate" | "follow" | "followLobby" | "unfollow";
/** The requests the screens make through `Connection.request`. */
export type PageOp = Exclude<Op, OwnOp>;
/** The `Answer` field that answers `O`. */
export type AnswerOf<O extends Op> = (typeof ANSWER_OF)[O];
/** The request of an operation, in proto JSON. */
export type Req<O extends Op> = NonNullable<ConnectRequestJson[O]>;
/** The answer of an operation, in proto JSON. */
export type Res<O extends Op> = NonNullable<AnswerJson[AnswerOf<O>]>;
