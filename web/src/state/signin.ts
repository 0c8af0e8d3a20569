/**
 * Production sign-in helpers: the platform hands the page its token in the URL fragment
 * (`#token=...`, never sent to a server or logged) or by `postMessage` from the embedding page.
 */

/** The token of a `#token=...` fragment (other fragment parameters allowed), or null. */
export function tokenFromFragment(hash: string): string | null {
  const m = /(?:^#|&)token=([^&]+)/.exec(hash);
  if (!m?.[1]) return null;
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return null;
  }
}

/** The token of a `{type: "hiddenfront.token", token}` message, or null for any other message. */
export function tokenFromMessage(data: unknown): string | null {
  if (!data || typeof data !== "object") return null;
  const d = data as { type?: unknown; token?: unknown };
  return d.type === "hiddenfront.token" && typeof d.token === "string" && d.token ? d.token : null;
}
