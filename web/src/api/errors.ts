/** Errors as the page shows them: a refused request's stable reason, or the client's own. */

/** A refused request: `reason` is the stable name the page translates (docs/errors.md). */
export class ServerError extends Error {
  constructor(
    /** The gRPC status code's name (`NOT_FOUND`, ...), shown when the reason has no translation. */
    readonly code: string,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** Reasons the client itself produces (translated like the server's). */
export const CLIENT_REASONS = ["CONNECTION_LOST", "BAD_MESSAGE"] as const;

/** The request could not be answered: the socket went away first. */
export const connectionLost = (): ServerError => new ServerError("UNAVAILABLE", "CONNECTION_LOST", "connection lost");

/** The server sent something the page cannot read. */
export const badMessage = (what: string): ServerError => new ServerError("INTERNAL", "BAD_MESSAGE", what);

/** google.rpc.Code's names, by number (a `Refusal` carries the number). */
const CODE_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
] as const;

/** A gRPC status code's name (`UNKNOWN` for a number it does not know). */
export function codeName(code: number): string {
  return CODE_NAMES[code] ?? "UNKNOWN";
}
