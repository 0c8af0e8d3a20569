/**
 * Clock arithmetic: the server clock offset (NTP style, from GET /v1/time) and the countdowns
 * drawn from the view's deadlines, which are server times.
 */

/** One round trip to GET /v1/time: browser times around it and the server's answer. */
export interface TimeSample {
  sent: number;
  received: number;
  server: number;
}

/**
 * The offset to add to the browser clock to get the server clock, from the sample with the
 * shortest round trip (its midpoint is the best guess of when the server read its clock).
 */
export function estimateOffset(samples: TimeSample[]): number {
  let best: TimeSample | null = null;
  for (const s of samples) if (!best || s.received - s.sent < best.received - best.sent) best = s;
  if (!best) return 0;
  return Math.round(best.server - (best.sent + best.received) / 2);
}

/** Whole seconds left until a server-time deadline, never negative; null when there is none. */
export function secondsLeft(deadlineUnixMillis: string | number | undefined, offset: number, now: number): number | null {
  const d = Number(deadlineUnixMillis ?? 0);
  if (!d) return null;
  return Math.max(0, Math.ceil((d - (now + offset)) / 1000));
}

/** "m:ss" for a countdown. */
export function formatSeconds(s: number): string {
  const m = Math.floor(s / 60);
  const r = s % 60;
  return `${m}:${r.toString().padStart(2, "0")}`;
}
