/** The one reconnect schedule of the page's connection. */

/** The first reconnect wait, before jitter; each later one doubles up to `RECONNECT_CAP_MS`. */
export const RECONNECT_FIRST_MS = 500;
/** The longest reconnect wait before jitter. */
export const RECONNECT_CAP_MS = 2400;
/** Jitter scales each wait by 0.75 to 1.25, so no wait is longer than this (3 s). */
export const RECONNECT_LONGEST_MS = RECONNECT_CAP_MS * 1.25;

/**
 * The wait before reconnect attempt `attempt` (0 for the first after a loss): 500 ms doubling up
 * to 2.4 s, each scaled by a random 0.75 to 1.25 (so a crowd that lost the same server does not
 * come back in the same instant), so never more than 3 s. The cap is low on purpose: a restarted
 * server must find its players again within seconds, since it pauses the clocks while it is down
 * but, once back, gives a player only 5 s more than the time they had (docs/clock.md): a page
 * asleep in a long wait would spend its player's clock.
 */
export function backoffDelay(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(RECONNECT_CAP_MS, RECONNECT_FIRST_MS * 2 ** Math.min(Math.max(attempt, 0), 10));
  return Math.round(base * (0.75 + random() * 0.5));
}
