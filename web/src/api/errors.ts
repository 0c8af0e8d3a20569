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
