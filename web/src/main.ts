/**
 * The page's entry: language, sign-in (a guest token from POST /v1/guest, or the platform's token
 * from a `#token=` fragment or a `postMessage`), the one connection (binary WebSocket frames), the server clock
 * offset, and routing on location.pathname (/, /game/{id}, /watch/{id}, /invite/{code}).
 */
import "./style.css";
import { Connection, ServerError } from "./api/ws.js";
import { fetchGuest, measureOffset } from "./api/http.js";
import { LANGS, LANG_NAMES, pickLanguage, reasonText, setLanguage, t, language, type Lang } from "./i18n/index.js";
import { local, session } from "./state/storage.js";
import { tokenFromFragment, tokenFromMessage } from "./state/signin.js";
import { h, replaceKeepingFocus } from "./ui/dom.js";
import { LobbyScreen } from "./ui/lobby.js";
import { ConnectionStatus } from "./ui/status.js";
import { GameScreen } from "./ui/game.js";
import { loadEngine } from "./engine/index.js";
import type { Engine } from "./engine/types.js";

const TOKEN_KEY = "hf.token";

interface Screen {
  root: HTMLElement;
  start(): HTMLElement;
  destroy(): void;
  /** Draws again in place (after a language change). */
  rerender(): void;
}

class App {
  private conn: Connection | null = null;
  private engine: Engine | null = null;
  private offset = 0;
  private screen: Screen | null = null;
  private signInError: { reason: string; text: string } | null = null;
  private readonly header = h("header", { class: "top" });
  private readonly main = h("main", { id: "main" });
  private readonly status = new ConnectionStatus();

  constructor(private readonly mount: HTMLElement) {}

  start(): void {
    setLanguage(pickLanguage(navigator.languages ?? [navigator.language], local.getItem("hf.lang")));
    document.documentElement.lang = language();
    this.readFragmentToken();
    window.addEventListener("message", (e) => this.onMessage(e));
    window.addEventListener("popstate", () => this.route());
    document.addEventListener("click", (e) => {
      const a = (e.target as Element | null)?.closest?.("a[data-link]");
      if (a instanceof HTMLAnchorElement && a.origin === location.origin && !(e as MouseEvent).ctrlKey && !(e as MouseEvent).metaKey) {
        e.preventDefault();
        this.navigate(a.pathname);
      }
    });
    this.mount.replaceChildren(this.header, this.status.el, this.main);
    void measureOffset().then((o) => {
      this.offset = o;
    });
    void loadEngine().then(
      (e) => {
        this.engine = e;
        // Tests and embedding pages can tell that the board screens no longer wait.
        this.mount.dataset.engine = "ready";
        this.route();
      },
      (err) => {
        console.error("hidden-front: the engine did not load", err);
      },
    );
    this.route();
  }

  /** Production sign-in: the platform passes `#token=...`; it is removed from the URL at once. */
  private readFragmentToken(): void {
    const token = tokenFromFragment(location.hash);
    if (token) {
      session.setItem(TOKEN_KEY, token);
      history.replaceState(null, "", location.pathname + location.search);
    }
  }

  /** Production sign-in from the embedding page: `postMessage({type: "hiddenfront.token", token})`. */
  private onMessage(e: MessageEvent): void {
    const token = tokenFromMessage(e.data);
    if (!token || e.source !== window.parent || window.parent === window) return;
    session.setItem(TOKEN_KEY, token);
    this.resetConnection();
    this.route();
  }

  private resetConnection(): void {
    this.screen?.destroy();
    this.screen = null;
    this.conn?.close();
    this.conn = null;
    this.status.reset(false);
  }

  navigate(path: string): void {
    if (location.pathname !== path) history.pushState(null, "", path);
    this.route();
  }

  private connection(): Connection | null {
    const token = session.getItem(TOKEN_KEY);
    if (!token) return null;
    if (!this.conn) {
      const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v1/ws`;
      const conn = new Connection(url, () => session.getItem(TOKEN_KEY) ?? "");
      conn.onState = (s) => {
        this.status.set(s);
        if (s === "open") this.renderHeader();
      };
      conn.onAuthFailed = (e) => {
        session.removeItem(TOKEN_KEY);
        this.signInError = { reason: e.reason || e.code, text: reasonText(e.reason, e.code) };
        this.resetConnection();
        this.route();
      };
      this.conn = conn;
      this.status.reset(true);
      void conn.connect().catch(() => {});
    }
    return this.conn;
  }

  private renderHeader(): void {
    const langSelect = h(
      "select",
      {
        "data-field": "language",
        "aria-label": t("lang.label"),
        onchange: (e: Event) => {
          const lang = (e.target as HTMLSelectElement).value as Lang;
          setLanguage(lang);
          local.setItem("hf.lang", lang);
          document.documentElement.lang = lang;
          this.renderHeader();
          this.status.render();
          if (this.screen) this.screen.rerender();
          else this.route(true);
        },
      },
      LANGS.map((l) => h("option", { value: l, selected: l === language() }, LANG_NAMES[l])),
    );
    const player = this.conn?.player;
    replaceKeepingFocus(this.header, [
      h("a", { href: "/", class: "brand", "data-link": true }, h("span", { class: "logo", "aria-hidden": "true" }, "◆"), t("app.title")),
      h(
        "div",
        { class: "top-right" },
        player
          ? h("span", { class: "who" }, h("span", { class: "muted" }, t("signin.as"), " "), h("strong", { "data-field": "player" }, player))
          : null,
        player ? h("button", { type: "button", class: "ghost small", "data-action": "sign-out", onclick: () => this.signOut() }, t("signin.out")) : null,
        langSelect,
      ),
    ]);
    document.title = t("app.title");
  }

  private signOut(): void {
    session.removeItem(TOKEN_KEY);
    session.removeItem("hf.ticket");
    session.removeItem("hf.invite");
    this.resetConnection();
    this.navigate("/");
  }

  private async guest(): Promise<void> {
    this.signInError = null;
    try {
      const g = await fetchGuest();
      session.setItem(TOKEN_KEY, g.token);
    } catch (e) {
      if (e instanceof ServerError) this.signInError = { reason: e.reason || e.code, text: reasonText(e.reason, e.code) };
    }
    this.route(true);
  }

  private renderSignIn(): void {
    replaceKeepingFocus(this.main, [
      h(
        "section",
        { class: "signin card" },
        h("h1", {}, t("app.title")),
        h("p", { class: "tagline" }, t("app.tagline")),
        this.signInError
          ? h("div", { class: "banner error", role: "alert", "data-field": "error", "data-reason": this.signInError.reason }, this.signInError.text)
          : null,
        h("button", { type: "button", class: "primary big", "data-action": "guest", onclick: () => void this.guest() }, t("signin.guest")),
        h("p", { class: "help" }, t("signin.platform")),
      ),
    ]);
  }

  private lastRoute = "";

  /** Shows the screen for the current path (again, with `force`, after a language change). */
  route(force = false): void {
    this.renderHeader();
    const conn = this.connection();
    this.status.render(conn !== null);
    if (!conn) {
      this.screen?.destroy();
      this.screen = null;
      // The sign-in screen is drawn again only when what it shows changed: a rebuild when the
      // engine loads could land between the press and the release of a click on its button,
      // and the click would be lost.
      const key = `sign-in|${this.signInError?.reason ?? ""}`;
      if (!force && key === this.lastRoute) return;
      this.lastRoute = key;
      this.renderSignIn();
      return;
    }
    const path = location.pathname;
    const game = /^\/(game|watch)\/([^/]+)$/.exec(path);
    const needsEngine = !!game;
    const key = `${path}|${needsEngine && !this.engine ? "wait" : "ok"}`;
    if (!force && key === this.lastRoute && this.screen) return;
    this.lastRoute = key;
    this.screen?.destroy();
    this.screen = null;
    if (game) {
      if (!this.engine) {
        replaceKeepingFocus(this.main, [h("p", { class: "loading" }, t("game.loading"))]);
        return;
      }
      const screen = new GameScreen(
        { conn, engine: this.engine, offset: () => this.offset, navigate: (p) => this.navigate(p) },
        decodeURIComponent(game[2] ?? ""),
        game[1] === "watch",
      );
      this.screen = screen;
      this.main.replaceChildren(screen.start());
      return;
    }
    const invite = /^\/invite\/([^/]+)$/.exec(path);
    const lobby = new LobbyScreen({ conn, navigate: (p) => this.navigate(p) }, invite ? decodeURIComponent(invite[1] ?? "") : null);
    this.screen = lobby;
    this.main.replaceChildren(lobby.start());
  }
}

const mount = document.getElementById("app");
if (mount) new App(mount).start();
