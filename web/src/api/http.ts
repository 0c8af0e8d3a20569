/**
 * The gateway's small HTTP endpoints beside the WebSocket: the server clock (GET /v1/time) for the
 * clock offset, and guest sign-in (POST /v1/guest).
 */
import { ServerError } from "./ws.js";
import { estimateOffset, type TimeSample } from "../state/clock.js";

/** A guest identity minted by the gateway. */
export interface Guest {
  token: string;
  player: string;
  expiresAtUnixMillis: number;
}

/** Asks the gateway for a guest token; a refusal carries its stable reason. */
export async function fetchGuest(): Promise<Guest> {
  let resp: Response;
  try {
    resp = await fetch("/v1/guest", { method: "POST" });
  } catch {
    throw new ServerError("UNAVAILABLE", "CONNECTION_LOST", "network error");
  }
  const body = (await resp.json().catch(() => ({}))) as Partial<Guest> & { code?: string; reason?: string; message?: string };
  if (!resp.ok || !body.token) {
    throw new ServerError(body.code ?? "UNAVAILABLE", body.reason ?? "GUESTS_NOT_ALLOWED", body.message ?? "");
  }
  return { token: body.token, player: body.player ?? "", expiresAtUnixMillis: Number(body.expiresAtUnixMillis ?? 0) };
}

/** Measures the server clock offset a few times and keeps the sample with the shortest round trip. */
export async function measureOffset(samples = 3): Promise<number> {
  const got: TimeSample[] = [];
  for (let i = 0; i < samples; i++) {
    try {
      const sent = Date.now();
      const resp = await fetch("/v1/time", { cache: "no-store" });
      const body = (await resp.json()) as { unixMillis?: number | string };
      const received = Date.now();
      if (body.unixMillis !== undefined) got.push({ sent, received, server: Number(body.unixMillis) });
    } catch {
      // An unreachable clock leaves the offset at 0: the countdowns then trust the browser's clock.
    }
  }
  return estimateOffset(got);
}
