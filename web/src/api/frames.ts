/**
 * The frames of the binary WebSocket subprotocol `hiddenfront.connect.v1`: each frame the page
 * sends is one encoded `ConnectRequest`, each frame the server sends one encoded
 * `ConnectResponse` (the server messages that were ready together). Encoded and decoded by the
 * generated protobuf-es code; what the page works with is the proto3 JSON form of the messages
 * (`toJson`), the form the engine (`crates/web-engine`) and the screens read.
 */
import { fromBinary, fromJson, toBinary, toJson, type JsonValue } from "@bufbuild/protobuf";
import {
  AnswerSchema,
  ConnectRequestSchema,
  ConnectResponseSchema,
  type AnswerJson,
  type ServerMessage,
} from "../gen/hiddenfront/v1/client_pb.js";
import { GameEventSchema, GameStatusSchema, type GameEventJson, type GameStatusJson } from "../gen/hiddenfront/v1/game_pb.js";
import { LobbyEventSchema, type LobbyEventJson } from "../gen/hiddenfront/v1/matchmaking_pb.js";
import { ServerError, codeName } from "./errors.js";
import type { Op, Req } from "./ops.js";

/** The WebSocket subprotocol the page offers (and the server must choose). */
export const SUBPROTOCOL = "hiddenfront.connect.v1";

/** Where to follow one game again from (a `Reconnect` item, or one of a `Goodbye`'s). */
export interface ResumePoint {
  gameId: string;
  fromSeq: number;
}

/** A server message as the page handles it: its payload in proto JSON, ids and seqs as numbers. */
export type Incoming =
  | { kind: "answer"; id: number; answer: AnswerJson }
  | { kind: "refusal"; id: number; error: ServerError }
  | { kind: "event"; gameId: string; event: GameEventJson }
  | { kind: "status"; gameId: string; status: GameStatusJson }
  | { kind: "lobby"; event: LobbyEventJson }
  | ({ kind: "reconnect"; reason: string } & ResumePoint)
  | { kind: "goodbye"; reason: string; games: ResumePoint[]; lobbyAfterSeq: number | null };

/**
 * Request `id`, `op` with its proto JSON `request`, as the frame to send. The generated
 * `fromJson` checks the request (an unknown field throws) before it is encoded.
 */
export function encodeRequest<O extends Op>(id: number, op: O, request: Req<O>): Uint8Array<ArrayBuffer> {
  const json = { requestId: String(id), [op]: request };
  const message = fromJson(ConnectRequestSchema, json as JsonValue);
  return toBinary(ConnectRequestSchema, message) as Uint8Array<ArrayBuffer>;
}

/**
 * A server frame's messages, in order. Throws when the frame is not a `ConnectResponse`; a
 * message of a kind this page does not know (a newer server's) is left out.
 */
export function decodeResponse(frame: ArrayBuffer | Uint8Array): Incoming[] {
  const bytes = frame instanceof Uint8Array ? frame : new Uint8Array(frame);
  const response = fromBinary(ConnectResponseSchema, bytes);
  const out: Incoming[] = [];
  for (const message of response.messages) {
    const incoming = fromMessage(message);
    if (incoming) out.push(incoming);
  }
  return out;
}

function fromMessage({ item }: ServerMessage): Incoming | null {
  switch (item.case) {
    case "answer":
      return { kind: "answer", id: Number(item.value.requestId), answer: toJson(AnswerSchema, item.value) as AnswerJson };
    case "refusal": {
      const { requestId, code, reason, message } = item.value;
      return { kind: "refusal", id: Number(requestId), error: new ServerError(codeName(code), reason, message) };
    }
    case "event":
      return { kind: "event", gameId: item.value.gameId, event: toJson(GameEventSchema, item.value) as GameEventJson };
    case "status": {
      const status = item.value.status ? (toJson(GameStatusSchema, item.value.status) as GameStatusJson) : {};
      return { kind: "status", gameId: item.value.gameId, status };
    }
    case "lobby":
      return { kind: "lobby", event: toJson(LobbyEventSchema, item.value) as LobbyEventJson };
    case "reconnect":
      return { kind: "reconnect", gameId: item.value.gameId, fromSeq: Number(item.value.resumeFromSeq), reason: item.value.reason };
    case "goodbye": {
      const { reason, games, lobbyAfterSeq } = item.value;
      return {
        kind: "goodbye",
        reason,
        games: games.map((g) => ({ gameId: g.gameId, fromSeq: Number(g.resumeFromSeq) })),
        lobbyAfterSeq: lobbyAfterSeq === undefined ? null : Number(lobbyAfterSeq),
      };
    }
    default:
      return null;
  }
}
