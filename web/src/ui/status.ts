/**
 * The connection's status line above every screen: "connecting" at first, a banner while the
 * connection is lost (the page reconnects by itself, on the schedule of `backoffDelay`), and a
 * short "reconnected" notice once it is back. `data-state` says which (`connecting`, `lost`,
 * `restored`, `open`), for tests and styles.
 */
import type { ConnState } from "../api/ws.js";
import { t } from "../i18n/index.js";
import { h } from "./dom.js";

/** How long the "reconnected" notice stays. */
export const RESTORED_NOTICE_MS = 4000;

/** What the line shows: the connection's state, or `restored` for a while after a loss. */
export type StatusShown = ConnState | "restored";

export class ConnectionStatus {
  readonly el = h("div", { class: "conn", role: "status", "data-field": "connection" });
  private state: ConnState = "connecting";
  private restored = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** Whether there is a connection to report on (none before sign-in). */
  private active = false;

  /** The connection's new state; `open` after `lost` shows the "reconnected" notice for a while. */
  set(state: ConnState): void {
    const wasLost = this.state === "lost";
    this.state = state;
    this.notice(state === "open" && wasLost);
    this.render();
  }

  /** A new connection (after sign-in or sign-out), or none. */
  reset(active: boolean): void {
    this.state = "connecting";
    this.notice(false);
    this.active = active;
    this.render();
  }

  /** Whether a connection exists, drawn again (after a language change, too). */
  render(active = this.active): void {
    this.active = active;
    const shown = this.shown();
    const text =
      shown === "connecting" ? t("conn.connecting") : shown === "lost" ? t("conn.lost") : shown === "restored" ? t("conn.restored") : "";
    this.el.textContent = text;
    this.el.hidden = !text || !active;
    this.el.setAttribute("data-state", shown);
    // A lost connection is announced at once; the rest politely.
    this.el.setAttribute("aria-live", shown === "lost" ? "assertive" : "polite");
  }

  /** What the line shows now. */
  shown(): StatusShown {
    return this.state === "open" && this.restored ? "restored" : this.state;
  }

  private notice(on: boolean): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.restored = on;
    if (on)
      this.timer = setTimeout(() => {
        this.timer = null;
        this.restored = false;
        this.render();
      }, RESTORED_NOTICE_MS);
  }
}
