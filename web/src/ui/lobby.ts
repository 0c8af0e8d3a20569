/**
 * The lobby: play the computer, find a match (with the wait shown), create and share an invite,
 * accept one (on /invite/{code}), watch a game by link, the player's games and rating. A match
 * found on the lobby stream opens the game for this page's own ticket or invite, and for a game an
 * organiser paired (a bulk's or a tournament round's, started at its set time) while that game is
 * still being played. Tournaments open to players are listed with join and withdraw, and each
 * one's standings on demand; the standings pushed on the lobby stream to an entrant (at each
 * round's pairing and at the end) show the player's next game and place, and the table, live.
 */
import { Connection, ServerError } from "../api/ws.js";
import type { GameSummaryJson } from "../gen/hiddenfront/v1/game_pb.js";
import type { LobbyEventJson, TournamentStandingsJson } from "../gen/hiddenfront/v1/matchmaking_pb.js";
import type { TournamentJson, TournamentStandingJson } from "../gen/hiddenfront/v1/organiser_pb.js";
import { reasonText, t, hasKey, type Key } from "../i18n/index.js";
import { local, session } from "../state/storage.js";
import { formatSeconds } from "../state/clock.js";
import { h, replaceKeepingFocus, type Child } from "./dom.js";

/** The rule sets offered in the lobby. */
/** The time controls a player may choose (the server's names; see docs/rules/junqi.md §7). */
export const TIME_CONTROLS = ["online", "relaxed"] as const;
/** The computer's levels, weakest first (crates/bot's `Level` names); the server's default is the last. */
export const COMPUTER_LEVELS = ["random", "greedy", "belief", "search", "expert"] as const;

export const RULE_SETS = [
  "hidden-front",
  "hidden-front+hq-mobile",
  "gunjin-shogi",
  "gunjin-shogi+y-gates",
  "gunjin-shogi+i-gates",
  "gunjin-shogi+23-pieces",
] as const;

/** What the lobby needs from the page: the connection and a way to open a game. */
export interface LobbyDeps {
  conn: Connection;
  navigate(path: string): void;
}

/** A tournament's standings pushed on the lobby stream, with the seq of the event that held them. */
interface Pushed {
  seq: number;
  standings: TournamentStandingsJson;
}

/** The most lines of a pushed table shown (the server sends at most that many). */
const PUSHED_LINES = 10;

function uid(): string {
  return typeof crypto !== "undefined" && "randomUUID" in crypto ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

/** The lobby screen (also the invite-acceptance screen when `inviteCode` is set). */
export class LobbyScreen {
  readonly root = h("section", { class: "lobby" });
  private rules: string = local.getItem("hf.rules") ?? "hidden-front";
  private rated = false;
  /** The chosen time control; empty until chosen, so each kind of game gets the server's default
   * (online for the queues, relaxed for invites). */
  private timeControl: string = local.getItem("hf.timeControl") ?? "";
  private level: string = local.getItem("hf.level") ?? "expert";
  private ticket: { id: string; since: number } | null = null;
  private invite: { code: string; link: string } | null = null;
  private games: GameSummaryJson[] | null = null;
  private tournaments: TournamentJson[] | null = null;
  /** The tournament whose standings are shown, if any. */
  private standingsOf: string | null = null;
  /** Tournaments pushed standings named that were not listed, and the list was read again for. */
  private relisted = new Set<string>();
  private rating: { rating: number; games: number } | null = null;
  private error: { reason: string; text: string } | null = null;
  private busy = false;
  private watchText = "";
  private stopLobby: (() => void) | null = null;
  private timer = 0;
  /** A bulk's game is being looked up or opened: open one only, whatever the stream replays. */
  private openingBulkGame = false;

  constructor(
    private readonly deps: LobbyDeps,
    private readonly inviteCode: string | null,
  ) {
    if (!(RULE_SETS as readonly string[]).includes(this.rules)) this.rules = "hidden-front";
    const saved = session.getItem("hf.ticket");
    if (saved) {
      try {
        this.ticket = JSON.parse(saved) as { id: string; since: number };
      } catch {
        this.ticket = null;
      }
    }
    const inv = session.getItem("hf.invite");
    if (inv) {
      try {
        this.invite = JSON.parse(inv) as { code: string; link: string };
      } catch {
        this.invite = null;
      }
    }
  }

  start(): HTMLElement {
    this.render();
    this.stopLobby = this.deps.conn.followLobby({
      afterSeq: () => Number(session.getItem(this.seqKey()) ?? "0"),
      onEvent: (e) => this.onLobby(e),
    });
    void this.load();
    this.timer = window.setInterval(() => this.tickWait(), 500);
    return this.root;
  }

  rerender(): void {
    this.render();
  }

  destroy(): void {
    this.stopLobby?.();
    clearInterval(this.timer);
  }

  private async load(): Promise<void> {
    try {
      const [games, rating, tournaments] = await Promise.all([
        this.deps.conn.request("listMyGames", {}),
        this.deps.conn.request("getMyRating", {}).catch(() => ({}) as { rating?: undefined }),
        this.deps.conn.request("listTournaments", {}).catch(() => ({}) as { tournaments?: undefined }),
      ]);
      this.games = games.games ?? [];
      this.tournaments = tournaments.tournaments ?? [];
      const r = rating.rating;
      this.rating = r ? { rating: Number(r.rating ?? 0), games: Number(r.games ?? 0) } : null;
    } catch (e) {
      this.fail(e);
    }
    this.render();
  }

  private onLobby(e: LobbyEventJson): void {
    const seq = Number(e.seq ?? 0);
    if (seq > Number(session.getItem(this.seqKey()) ?? "0")) session.setItem(this.seqKey(), String(seq));
    const found = e.matchFound;
    if (found?.gameId) {
      const mine = (this.ticket && found.ticketId === this.ticket.id) || (this.invite && found.inviteCode === this.invite.code);
      if (mine) {
        this.clearTicket();
        this.clearInvite();
        this.deps.navigate(`/game/${found.gameId}`);
      } else if (found.bulkId) {
        void this.openBulkGame(found.gameId);
      }
      return;
    }
    if (e.ticketExpired && this.ticket && e.ticketExpired.ticketId === this.ticket.id) {
      this.clearTicket();
      this.render();
    }
    if (e.inviteExpired && this.invite) {
      this.clearInvite();
      this.render();
    }
    if (e.tournamentStandings?.tournamentId) this.onStandings(seq, e.tournamentStandings);
  }

  /**
   * Keeps a tournament's pushed standings (the latest by seq: a new tab gets the stored events
   * replayed from the first, the last one wins), reads the list again once if that tournament is
   * not in it, and redraws (an open table shows them at once).
   */
  private onStandings(seq: number, standings: TournamentStandingsJson): void {
    const id = standings.tournamentId ?? "";
    const held = this.pushed();
    const had = held[id];
    if (had && had.seq > seq) return;
    held[id] = { seq, standings };
    session.setItem(this.standingsKey(), JSON.stringify(held));
    const list = this.tournaments;
    if (list && !list.some((x) => x.tournamentId === id) && !this.relisted.has(id)) {
      this.relisted.add(id);
      void this.relist();
    }
    this.render();
  }

  /** Reads the tournaments again (as the lobby does when it opens, a refusal keeping the list). */
  private async relist(): Promise<void> {
    const r = await this.deps.conn.request("listTournaments", {}).catch(() => null);
    if (!r) return;
    this.tournaments = r.tournaments ?? [];
    this.render();
  }

  /**
   * The latest standings pushed per tournament, kept in sessionStorage per player: the stream
   * resumes after the last event seen, so a lobby opened again (after a game) is not sent them again.
   */
  private pushed(): Record<string, Pushed> {
    try {
      const held = JSON.parse(session.getItem(this.standingsKey()) ?? "{}") as unknown;
      return held && typeof held === "object" ? (held as Record<string, Pushed>) : {};
    } catch {
      return {};
    }
  }

  private standingsKey(): string {
    return `hf.tournamentStandings.${this.deps.conn.player}`;
  }

  /**
   * Opens a game an organiser's bulk started for this player, if it is still being played: the
   * stream also replays old events (a new tab starts from the first), whose games have ended.
   */
  private async openBulkGame(gameId: string): Promise<void> {
    if (this.openingBulkGame) return;
    this.openingBulkGame = true;
    try {
      const active = await this.deps.conn.request("listMyGames", { activeOnly: true });
      if ((active.games ?? []).some((g) => g.gameId === gameId)) {
        this.deps.navigate(`/game/${gameId}`);
        return;
      }
    } catch (e) {
      this.fail(e);
    }
    this.openingBulkGame = false;
  }

  /** The lobby stream's resume point, per player (a tab may sign in as someone else). */
  private seqKey(): string {
    return `hf.lobbySeq.${this.deps.conn.player}`;
  }

  private clearTicket(): void {
    this.ticket = null;
    session.removeItem("hf.ticket");
  }

  private clearInvite(): void {
    this.invite = null;
    session.removeItem("hf.invite");
  }

  private fail(e: unknown): void {
    if (e instanceof ServerError) this.error = { reason: e.reason || e.code, text: reasonText(e.reason, e.code) };
    else throw e;
    this.render();
  }

  private async run(fn: () => Promise<void>): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    this.error = null;
    this.render();
    try {
      await fn();
    } catch (e) {
      this.fail(e);
    } finally {
      this.busy = false;
      this.render();
    }
  }

  private playComputer(): Promise<void> {
    return this.run(async () => {
      // The chosen clock; unchosen, the server's default for computer games (relaxed).
      const r = await this.deps.conn.request("playComputer", { requestId: uid(), rules: this.rules, level: this.level, ...(this.timeControl ? { timeControl: this.timeControl } : {}) });
      if (r.gameId) this.deps.navigate(`/game/${r.gameId}`);
    });
  }

  private findMatch(): Promise<void> {
    return this.run(async () => {
      const id = uid();
      // Set before the call: a match found may arrive on the lobby stream before the answer.
      this.ticket = { id, since: Date.now() };
      try {
        const r = await this.deps.conn.request("findMatch", { ticketId: id, queue: { rules: this.rules, rated: this.rated, timeControl: this.timeControl } });
        const tk = r.ticket;
        if (tk?.state === "TICKET_STATE_MATCHED" && tk.gameId) {
          this.clearTicket();
          this.deps.navigate(`/game/${tk.gameId}`);
          return;
        }
        session.setItem("hf.ticket", JSON.stringify(this.ticket));
      } catch (e) {
        this.clearTicket();
        throw e;
      }
    });
  }

  private cancelMatch(): Promise<void> {
    const tk = this.ticket;
    if (!tk) return Promise.resolve();
    return this.run(async () => {
      try {
        await this.deps.conn.request("cancelMatch", { ticketId: tk.id });
      } finally {
        this.clearTicket();
      }
    });
  }

  private createInvite(): Promise<void> {
    return this.run(async () => {
      const r = await this.deps.conn.request("createInvite", { inviteId: uid(), rules: this.rules, timeControl: this.timeControl });
      const inv = r.invite;
      if (!inv?.code) return;
      const link = inv.link || `${location.origin}/invite/${inv.code}`;
      this.invite = { code: inv.code, link };
      session.setItem("hf.invite", JSON.stringify(this.invite));
    });
  }

  private acceptInvite(code: string): Promise<void> {
    return this.run(async () => {
      const r = await this.deps.conn.request("acceptInvite", { code });
      if (r.gameId) this.deps.navigate(`/game/${r.gameId}`);
    });
  }

  /** Joins or withdraws from a tournament; the answer replaces it in the list. */
  private enter(id: string, join: boolean): Promise<void> {
    return this.run(async () => {
      const r = join
        ? await this.deps.conn.request("joinTournament", { tournamentId: id })
        : await this.deps.conn.request("withdrawTournament", { tournamentId: id });
      this.replaceTournament(r.tournament);
    });
  }

  /** Shows a tournament's standings, read again now (or hides them). */
  private toggleStandings(id: string): Promise<void> {
    if (this.standingsOf === id) {
      this.standingsOf = null;
      this.render();
      return Promise.resolve();
    }
    return this.run(async () => {
      const r = await this.deps.conn.request("getTournament", { tournamentId: id });
      this.replaceTournament(r.tournament);
      this.standingsOf = id;
    });
  }

  private replaceTournament(t: TournamentJson | undefined): void {
    if (!t?.tournamentId) return;
    const list = this.tournaments ?? [];
    const at = list.findIndex((x) => x.tournamentId === t.tournamentId);
    this.tournaments = at < 0 ? [t, ...list] : list.map((x, i) => (i === at ? t : x));
  }

  private tournamentCard(): HTMLElement {
    const me = this.deps.conn.player;
    const list = this.tournaments;
    const pushed = this.pushed();
    return h(
      "div",
      { class: "card tournaments" },
      h("h2", {}, t("lobby.tournaments")),
      h(
        "ul",
        { "data-field": "tournaments", class: "game-list" },
        (list ?? []).map((tm) => {
          const id = tm.tournamentId ?? "";
          const entrants = tm.entrants ?? [];
          const joined = entrants.includes(me);
          const listed = (tm.state ?? "TOURNAMENT_STATE_SCHEDULED").replace("TOURNAMENT_STATE_", "").toLowerCase() as "scheduled" | "running" | "finished";
          // The latest update pushed, unless the tournament is listed as over and it is not.
          const latest = pushed[id]?.standings;
          const up = listed === "finished" && !latest?.finished ? undefined : latest;
          // A pushed update means a round was paired (so it has started), or says it is over.
          const state = up?.finished ? "finished" : up && listed === "scheduled" ? "running" : listed;
          const format = (tm.format ?? "TOURNAMENT_FORMAT_SWISS").replace("TOURNAMENT_FORMAT_", "").toLowerCase() as "swiss" | "round_robin" | "arena";
          const open = Boolean(tm.openToPlayers) && state === "scheduled";
          // An arena under way: its entrants pause and resume, and one open to players takes latecomers.
          const arenaOn = format === "arena" && state === "running";
          const paused = joined && (tm.paused ?? []).includes(me);
          const rounds = Math.max((tm.rounds ?? []).length, up?.rounds ?? 0);
          const next = state !== "finished" ? up?.next : undefined;
          const you = up?.you;
          return h(
            "li",
            { "data-tournament-id": id, "data-joined": joined ? "true" : "false" },
            h("span", { class: "opp" }, id),
            h("span", { class: "rules" }, `${t(`tournament.format.${format}`)} · ${t("lobby.tournament.players", { n: entrants.length })}`),
            h("span", { class: `phase phase-${state}` },
              state === "running" && format !== "arena" && rounds
                ? t("lobby.tournament.round", { n: rounds, of: tm.roundCount ?? rounds })
                : t(`tournament.state.${state}`)),
            joined ? h("span", { class: "help", "data-field": "joined" }, t("lobby.tournament.in")) : null,
            next
              ? h("span", { class: "help", "data-field": "next-game" }, next.bye
                  ? t("lobby.tournament.bye", { n: next.round ?? 0 })
                  : t("lobby.tournament.next", { n: next.round ?? 0, name: next.opponent ?? "?" }))
              : null,
            you
              ? h("span", { class: "help", "data-field": "place" },
                  t(state === "finished" ? "lobby.tournament.final" : "lobby.tournament.place", { place: you.place ?? 0, score: String(you.score ?? 0) }))
              : null,
            paused ? h("span", { class: "help", "data-field": "paused" }, t("lobby.tournament.paused")) : null,
            open
              ? h("button", { type: "button", "data-action": joined ? "withdraw-tournament" : "join-tournament", disabled: this.busy, onclick: () => void this.enter(id, !joined) },
                  t(joined ? "lobby.tournament.withdraw" : "lobby.tournament.join"))
              : null,
            arenaOn && joined
              ? h("button", { type: "button", "data-action": paused ? "resume-tournament" : "pause-tournament", disabled: this.busy, onclick: () => void this.enter(id, paused) },
                  t(paused ? "lobby.tournament.resume" : "lobby.tournament.pause"))
              : null,
            arenaOn && !joined && tm.openToPlayers
              ? h("button", { type: "button", "data-action": "join-tournament", disabled: this.busy, onclick: () => void this.enter(id, true) }, t("lobby.tournament.join"))
              : null,
            h("button", { type: "button", class: "ghost", "data-action": "standings", onclick: () => void this.toggleStandings(id) }, t("lobby.tournament.standings")),
            this.standingsOf === id ? standingsTable(standingLines(tm, up)) : null,
          );
        }),
      ),
      list && !list.length ? h("p", { class: "help" }, t("lobby.tournaments.none")) : null,
    );
  }

  private watch(): void {
    const text = this.watchText.trim();
    const m = /([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/i.exec(text);
    const id = m?.[1] ?? text;
    if (id) this.deps.navigate(`/watch/${encodeURIComponent(id)}`);
  }

  private tickWait(): void {
    const el = this.root.querySelector<HTMLElement>('[data-field="waiting"]');
    if (el && this.ticket) el.textContent = t("lobby.waiting", { s: formatSeconds(Math.floor((Date.now() - this.ticket.since) / 1000)) });
  }

  private render(): void {
    const parts: Child[] = [h("div", { class: "lobby-title" }, h("h1", {}, t("app.tagline")))];
    if (this.error) {
      parts.push(
        h("div", { class: "banner error", role: "alert", "data-field": "error", "data-reason": this.error.reason }, h("span", {}, this.error.text),
          h("button", { type: "button", class: "ghost", "data-action": "dismiss-error", onclick: () => { this.error = null; this.render(); } }, t("error.dismiss"))),
      );
    }
    if (this.inviteCode) {
      parts.push(
        h(
          "div",
          { class: "card invite-accept" },
          h("h2", {}, t("lobby.accept.title")),
          h("p", { class: "code" }, this.inviteCode),
          h("button", { type: "button", class: "primary big", "data-action": "accept-invite", disabled: this.busy, onclick: () => void this.acceptInvite(this.inviteCode!) }, t("lobby.accept")),
        ),
      );
    }
    const select = choice("rules", "hf.rules", this.rules, (v) => (this.rules = v),
      RULE_SETS.map((r): [string, string] => [r, hasKey(`rules.${r}`) ? t(`rules.${r}` as Key) : r]));
    const clock = choice("time-control", "hf.timeControl", this.timeControl, (v) => (this.timeControl = v),
      [["", t("lobby.clock.default")], ...TIME_CONTROLS.map((c): [string, string] => [c, t(`clock.choice.${c}` as Key)])]);
    const level = choice("level", "hf.level", this.level, (v) => (this.level = v),
      COMPUTER_LEVELS.map((l): [string, string] => [l, t(`level.${l}` as Key)]));
    parts.push(
      h(
        "div",
        { class: "card play" },
        h("div", { class: "field" }, h("label", { for: "rules", class: "label" }, t("lobby.rules")), select),
        h("div", { class: "field" }, h("label", { for: "time-control", class: "label" }, t("lobby.clock")), clock),
        h("div", { class: "field" }, h("label", { for: "level", class: "label" }, t("lobby.level")), level),
        h("div", { class: "actions" },
          h("button", { type: "button", class: "primary big", "data-action": "play-computer", disabled: this.busy, onclick: () => void this.playComputer() }, t("lobby.computer")),
          this.ticket
            ? h("div", { class: "waiting" },
                h("span", { class: "spinner", "aria-hidden": "true" }),
                h("span", { "data-field": "waiting", role: "status" }, t("lobby.waiting", { s: formatSeconds(Math.floor((Date.now() - this.ticket.since) / 1000)) })),
                h("button", { type: "button", "data-action": "cancel-match", onclick: () => void this.cancelMatch() }, t("lobby.cancel")))
            : h("div", { class: "row" },
                h("button", { type: "button", class: "big", "data-action": "find-match", disabled: this.busy, onclick: () => void this.findMatch() }, t("lobby.find")),
                h("label", { class: "check" }, h("input", { type: "checkbox", "data-field": "rated", checked: this.rated, onchange: (e: Event) => { this.rated = (e.target as HTMLInputElement).checked; } }), t("lobby.rated"))),
          h("button", { type: "button", class: "big", "data-action": "create-invite", disabled: this.busy, onclick: () => void this.createInvite() }, t("lobby.invite")),
        ),
        this.invite
          ? h("div", { class: "invite" },
              h("p", { class: "help" }, t("lobby.invite.share")),
              h("div", { class: "row" },
                h("input", { type: "text", readonly: true, "data-field": "invite-link", value: this.invite.link, onfocus: (e: Event) => (e.target as HTMLInputElement).select() }),
                h("button", { type: "button", "data-action": "copy-invite", onclick: (e: Event) => {
                  const btn = e.currentTarget as HTMLButtonElement;
                  void navigator.clipboard?.writeText(this.invite?.link ?? "").then(() => { btn.textContent = t("lobby.invite.copied"); }, () => {});
                } }, t("lobby.invite.copy"))))
          : null,
      ),
    );
    const games = this.games;
    parts.push(
      h(
        "div",
        { class: "card games" },
        h("div", { class: "card-head" }, h("h2", {}, t("lobby.games")),
          h("span", { class: "rating", "data-field": "rating", title: this.rating ? t("lobby.rating.games", { n: this.rating.games }) : "" }, `${t("lobby.rating")}: ${this.rating ? Math.round(this.rating.rating) : "—"}`)),
        h(
          "ul",
          { "data-field": "my-games", class: "game-list" },
          (games ?? []).map((g) => {
            const phase = (g.phase ?? "PHASE_DEPLOYMENT").replace("PHASE_", "").toLowerCase() as "deployment" | "play" | "ended";
            return h("li", {}, h("a", { href: `/game/${g.gameId}`, "data-link": true, "data-game-id": g.gameId },
              h("span", { class: "opp" }, t("lobby.games.vs", { name: g.opponent ?? "?" })),
              h("span", { class: "rules" }, hasKey(`rules.${g.rules}`) ? t(`rules.${g.rules}` as Key) : g.rules ?? ""),
              h("span", { class: `phase phase-${phase}` }, t(`phase.${phase}`))));
          }),
        ),
        games && !games.length ? h("p", { class: "help" }, t("lobby.games.none")) : null,
      ),
      this.tournamentCard(),
      h(
        "div",
        { class: "card watch" },
        h("h2", {}, t("lobby.watch")),
        h("div", { class: "row" },
          h("input", { type: "text", "data-field": "watch-id", placeholder: t("lobby.watch.placeholder"), value: this.watchText,
            oninput: (e: Event) => { this.watchText = (e.target as HTMLInputElement).value; },
            onkeydown: (e: Event) => { if ((e as KeyboardEvent).key === "Enter") this.watch(); } }),
          h("button", { type: "button", "data-action": "watch", onclick: () => this.watch() }, t("lobby.watch.go"))),
      ),
    );
    replaceKeepingFocus(this.root, parts);
  }
}

/**
 * The lines of a tournament's table: the pushed ones (the first lines, then the player's own if
 * not among them) when they are after as many rounds as the tournament read, else those read.
 */
function standingLines(tm: TournamentJson, up: TournamentStandingsJson | undefined): TournamentStandingJson[] {
  if (!up || (up.roundsCompleted ?? 0) < (tm.roundsCompleted ?? 0)) return tm.standings ?? [];
  const lines = (up.table ?? []).slice(0, PUSHED_LINES);
  const you = up.you;
  if (you?.player && !lines.some((s) => s.player === you.player)) lines.push(you);
  return lines;
}

/** A tournament's standings as a table: place, player, points, Buchholz. */
function standingsTable(lines: TournamentStandingJson[]): HTMLElement {
  return h(
    "table",
    { class: "standings", "data-field": "standings" },
    h("thead", {}, h("tr", {},
      h("th", {}, t("standings.place")), h("th", {}, t("standings.player")),
      h("th", {}, t("standings.score")), h("th", {}, t("standings.buchholz")))),
    h("tbody", {}, lines.map((s) =>
      h("tr", { "data-player": s.player ?? "" },
        h("td", {}, String(s.place ?? "")), h("td", {}, s.player ?? ""),
        h("td", {}, String(s.score ?? 0)), h("td", {}, String(s.buchholz ?? 0))))),
  );
}

/** A lobby choice: a `<select>` whose pick is kept in the screen (`set`) and remembered in `localStorage` under `key`. */
function choice(field: string, key: string, value: string, set: (v: string) => void, options: [string, string][]): HTMLElement {
  return h(
    "select",
    {
      "data-field": field,
      id: field,
      onchange: (e: Event) => {
        const v = (e.target as HTMLSelectElement).value;
        set(v);
        local.setItem(key, v);
      },
    },
    options.map(([v, label]) => h("option", { value: v, selected: v === value }, label)),
  );
}
