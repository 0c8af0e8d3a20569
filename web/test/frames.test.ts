import { describe, expect, it } from "vitest";
import { create, fromBinary, toBinary, toJson } from "@bufbuild/protobuf";
import { decodeResponse, encodeRequest } from "../src/api/frames.js";
import { codeName } from "../src/api/errors.js";
import { ConnectRequestSchema, ConnectResponseSchema, ServerMessageSchema } from "../src/gen/hiddenfront/v1/client_pb.js";
import { Side } from "../src/gen/hiddenfront/v1/game_pb.js";

/** A `ConnectResponse` frame holding `messages`, encoded as the server does. */
function frame(...messages: Parameters<typeof create<typeof ServerMessageSchema>>[1][]): Uint8Array {
  return toBinary(ConnectResponseSchema, create(ConnectResponseSchema, { messages: messages.map((m) => create(ServerMessageSchema, m)) }));
}

describe("the binary frames", () => {
  it("encode a request as one ConnectRequest with its id and one request field", () => {
    const bytes = encodeRequest(42, "play", { context: { gameId: "g", idempotencyKey: "k", expectedVersion: "7" }, move: { from: "A6", to: "A7" } });
    const message = fromBinary(ConnectRequestSchema, bytes);
    expect(message.requestId).toBe(42n);
    expect(message.request.case).toBe("play");
    expect(toJson(ConnectRequestSchema, message)).toEqual({
      requestId: "42",
      play: { context: { gameId: "g", idempotencyKey: "k", expectedVersion: "7" }, move: { from: "A6", to: "A7" } },
    });
    // An empty request is still that request.
    expect(fromBinary(ConnectRequestSchema, encodeRequest(1, "listMyGames", {})).request.case).toBe("listMyGames");
    expect(() => encodeRequest(1, "getGame", { gameid: "typo" } as never)).toThrow();
  });

  it("decode every kind of server message of one frame, in order, as proto JSON", () => {
    const decoded = decodeResponse(
      frame(
        { item: { case: "answer", value: { requestId: 3n, response: { case: "followed", value: { gameId: "g" } } } } },
        { item: { case: "event", value: { gameId: "g", seq: 5n, event: { case: "resigned", value: { side: Side.NORTH } } } } },
        { item: { case: "status", value: { gameId: "g", status: { version: 5n, southConnected: true } } } },
        { item: { case: "lobby", value: { seq: 2n, kind: { case: "ticketExpired", value: { ticketId: "t" } } } } },
        { item: { case: "refusal", value: { requestId: 4n, code: 9, reason: "NOT_YOUR_TURN", message: "wait" } } },
        { item: { case: "reconnect", value: { gameId: "g", resumeFromSeq: 6n, reason: "behind" } } },
        { item: { case: "goodbye", value: { reason: "SHUTTING_DOWN", games: [{ gameId: "g", resumeFromSeq: 6n }], lobbyAfterSeq: 2n } } },
        { item: { case: "goodbye", value: { reason: "TOO_SLOW" } } },
      ),
    );
    expect(decoded).toEqual([
      { kind: "answer", id: 3, answer: { requestId: "3", followed: { gameId: "g" } } },
      { kind: "event", gameId: "g", event: { gameId: "g", seq: "5", resigned: { side: "SIDE_NORTH" } } },
      { kind: "status", gameId: "g", status: { version: "5", southConnected: true } },
      { kind: "lobby", event: { seq: "2", ticketExpired: { ticketId: "t" } } },
      { kind: "refusal", id: 4, error: expect.objectContaining({ code: "FAILED_PRECONDITION", reason: "NOT_YOUR_TURN", message: "wait" }) },
      { kind: "reconnect", gameId: "g", fromSeq: 6, reason: "behind" },
      { kind: "goodbye", reason: "SHUTTING_DOWN", games: [{ gameId: "g", fromSeq: 6 }], lobbyAfterSeq: 2 },
      { kind: "goodbye", reason: "TOO_SLOW", games: [], lobbyAfterSeq: null },
    ]);
  });

  it("leave out a message of a kind the page does not know, and refuse bytes that are no response", () => {
    expect(decodeResponse(frame({}, { item: { case: "lobby", value: { seq: 1n } } })).map((m) => m.kind)).toEqual(["lobby"]);
    expect(() => decodeResponse(new Uint8Array([0x0a, 0xff]))).toThrow();
  });

  it("name gRPC codes as the server's errors do", () => {
    expect([3, 5, 7, 9, 14, 16].map(codeName)).toEqual([
      "INVALID_ARGUMENT",
      "NOT_FOUND",
      "PERMISSION_DENIED",
      "FAILED_PRECONDITION",
      "UNAVAILABLE",
      "UNAUTHENTICATED",
    ]);
    expect(codeName(99)).toBe("UNKNOWN");
  });
});
