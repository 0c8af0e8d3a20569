// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Connection } from "../src/api/ws.js";
import { LobbyScreen } from "../src/ui/lobby.js";
import type { TournamentJson } from "../src/gen/hiddenfront/v1/organiser_pb.js";
import type { TournamentStandingsJson } from "../src/gen/hiddenfront/v1/matchmaking_pb.js";
import { FakeSocket } from "./fakes.js";

beforeEach(() => {
  FakeSocket.all = [];
  vi.stubGlobal("WebSocket", FakeSocket);
  sessionStorage.clear();
  localStorage.clear();
});
afterEach(() => vi.unstubAllGlobals());

const flush = () => new Promise((r) => setTimeout(r, 0));

async function open(invite: string | null = null) {
  const conn = new Connection("ws://x/v1/ws", () => "tok");
  const navigate = vi.fn();
  const lobby = new LobbyScreen({ conn, navigate }, invite);
  document.body.replaceChildren(lobby.start());
  const ws = FakeSocket.all[0]!;
  ws.open();
  ws.authenticate();
  ws.lobbyFollowed();
  await flush();
  ws.answer(ws.last("listMyGames")!, { listMyGames: { games: [{ gameId: "g9", seat: "SIDE_SOUTH", phase: "PHASE_PLAY", opponent: "bob", rules: "hidden-front", version: "3" }] } });
  ws.answer(ws.last("getMyRating")!, { getMyRating: { rating: { rating: 1612.4, games: 7 } } });
  ws.answer(ws.last("listTournaments")!, { listTournaments: { tournaments: [CUP] } });
  await flush();
  return { ws, navigate, root: lobby.root };
}

/** A Swiss open to players, not started, with bob in it. */
const CUP: TournamentJson = {
  tournamentId: "winter-cup",
  format: "TOURNAMENT_FORMAT_SWISS",
  roundCount: 4,
  state: "TOURNAMENT_STATE_SCHEDULED",
  openToPlayers: true,
  entrants: ["bob"],
};

/** CUP under way: alice and bob in it, round 1 played, round 2 paired. */
const RUNNING: TournamentJson = {
  ...CUP,
  state: "TOURNAMENT_STATE_RUNNING",
  entrants: ["bob", "alice", "cy", "dan"],
  roundsCompleted: 1,
  rounds: [{ round: 1, bulkId: "tournament:winter-cup:round:1" }],
};

/** CUP's standings pushed to alice after `roundsCompleted` rounds, as protobuf-es writes them. */
function pushed(roundsCompleted: number, more: Partial<TournamentStandingsJson> = {}): TournamentStandingsJson {
  return {
    tournamentId: "winter-cup",
    roundsCompleted,
    rounds: roundsCompleted + 1,
    table: [{ place: 1, player: "cy", score: 1, buchholz: 1 }, { place: 2, player: "bob", score: 1, buchholz: 0 }],
    you: { place: 3, player: "alice", score: 0.5 },
    next: { round: roundsCompleted + 1, opponent: "cy", seat: "SIDE_SOUTH", startsAtUnixMs: "1767225600000" },
    ...more,
  };
}

describe("the lobby", () => {
  it("lists the player's games and rating", async () => {
    const { root } = await open();
    expect(root.querySelector('[data-field="my-games"] a')!.getAttribute("href")).toBe("/game/g9");
    expect(root.querySelector('[data-field="rating"]')!.textContent).toContain("1612");
  });

  it("waits for a match, and opens the game only for its own ticket", async () => {
    const { root, ws, navigate } = await open();
    (root.querySelector('select[data-field="rules"]') as HTMLSelectElement).value = "gunjin-shogi";
    root.querySelector('select[data-field="rules"]')!.dispatchEvent(new Event("change"));
    (root.querySelector('[data-action="find-match"]') as HTMLButtonElement).click();
    await flush();
    const req = ws.last("findMatch")!;
    const ticketId = (req.body as { ticketId: string }).ticketId;
    expect(req.body).toMatchObject({ queue: { rules: "gunjin-shogi" } });
    ws.answer(req, { findMatch: { ticket: { ticketId, state: "TICKET_STATE_WAITING" } } });
    await flush();
    expect(root.querySelector('[data-field="waiting"]')).not.toBeNull();
    // an old match found of another ticket (the stream replays stored events) is ignored
    ws.lobby({ seq: "1", matchFound: { gameId: "old", ticketId: "other" } });
    expect(navigate).not.toHaveBeenCalled();
    ws.lobby({ seq: "2", matchFound: { gameId: "new", ticketId } });
    expect(navigate).toHaveBeenCalledWith("/game/new");
  });

  it("opens a game an organiser's bulk started, but not one that has ended", async () => {
    const { ws, navigate } = await open();
    // Replayed from an earlier event: the game is over, so the lobby stays.
    ws.lobby({ seq: "1", matchFound: { gameId: "round1", bulkId: "league-r1", seat: "SIDE_SOUTH", opponent: "bob" } });
    await flush();
    const first = ws.last("listMyGames")!;
    expect(first.body).toMatchObject({ activeOnly: true });
    ws.answer(first, { listMyGames: { games: [{ gameId: "g9", phase: "PHASE_PLAY" }] } });
    await flush();
    expect(navigate).not.toHaveBeenCalled();
    // The next round's game, being played: opened without a click.
    ws.lobby({ seq: "2", matchFound: { gameId: "round2", bulkId: "league-r2", seat: "SIDE_NORTH", opponent: "cy" } });
    await flush();
    const second = ws.last("listMyGames")!;
    expect(second).not.toBe(first);
    ws.answer(second, { listMyGames: { games: [{ gameId: "round2", phase: "PHASE_DEPLOYMENT" }] } });
    await flush();
    expect(navigate).toHaveBeenCalledWith("/game/round2");
  });

  it("lists an open tournament, joins and withdraws, and shows its standings", async () => {
    const { root, ws } = await open();
    const item = () => root.querySelector('[data-tournament-id="winter-cup"]')!;
    expect(item().getAttribute("data-joined")).toBe("false");
    expect(item().textContent).toContain("1 players");
    (item().querySelector('[data-action="join-tournament"]') as HTMLButtonElement).click();
    await flush();
    const join = ws.last("joinTournament")!;
    expect(join.body).toMatchObject({ tournamentId: "winter-cup" });
    ws.answer(join, { joinTournament: { tournament: { ...CUP, entrants: ["bob", "alice"] } } });
    await flush();
    expect(item().getAttribute("data-joined")).toBe("true");
    expect(item().querySelector('[data-field="joined"]')).not.toBeNull();
    (item().querySelector('[data-action="withdraw-tournament"]') as HTMLButtonElement).click();
    await flush();
    ws.answer(ws.last("withdrawTournament")!, { withdrawTournament: { tournament: CUP } });
    await flush();
    expect(item().getAttribute("data-joined")).toBe("false");
    // Standings: read again when asked for.
    (item().querySelector('[data-action="standings"]') as HTMLButtonElement).click();
    await flush();
    const get = ws.last("getTournament")!;
    expect(get.body).toMatchObject({ tournamentId: "winter-cup" });
    ws.answer(get, { getTournament: { tournament: { ...CUP, state: "TOURNAMENT_STATE_RUNNING", openToPlayers: true,
      rounds: [{ round: 1, bulkId: "tournament:winter-cup:round:1" }],
      standings: [{ place: 1, player: "bob", score: 1, buchholz: 0.5 }, { place: 2, player: "cy", score: 0, buchholz: 1 }] } } });
    await flush();
    const rows = [...item().querySelectorAll('[data-field="standings"] tbody tr')].map((r) => r.getAttribute("data-player"));
    expect(rows).toEqual(["bob", "cy"]);
    expect(item().textContent).toContain("Round 1 of 4");
    // Running: no join button any more.
    expect(item().querySelector('[data-action="join-tournament"]')).toBeNull();
  });

  it("shows the next game and place pushed at a round's pairing, the latest by seq", async () => {
    const { root, ws } = await open();
    const item = () => root.querySelector('[data-tournament-id="winter-cup"]')!;
    expect(item().querySelector('[data-field="next-game"]')).toBeNull();
    expect(item().querySelector('[data-field="place"]')).toBeNull();
    ws.lobby({ seq: "5", tournamentStandings: pushed(1) });
    await flush();
    expect(item().querySelector('[data-field="next-game"]')!.textContent).toBe("Round 2: you play cy");
    expect(item().querySelector('[data-field="place"]')!.textContent).toBe("Place 3 · 0.5 points");
    // Listed as not started: the pushed rounds say round 2 is under way.
    expect(item().querySelector(".phase")!.textContent).toBe("Round 2 of 4");
    // An earlier event (the stream replays from the first to a new tab) does not replace it.
    ws.lobby({ seq: "3", tournamentStandings: pushed(0, { you: { place: 1, player: "alice", score: 0 } }) });
    await flush();
    expect(item().querySelector('[data-field="next-game"]')!.textContent).toBe("Round 2: you play cy");
    expect(item().querySelector('[data-field="place"]')!.textContent).toBe("Place 3 · 0.5 points");
    // The tournament is listed: nothing is read again.
    expect(ws.all("listTournaments").length).toBe(1);
    expect(ws.all("getTournament").length).toBe(0);
  });

  it("shows a bye pushed for the round just paired", async () => {
    const { root, ws } = await open();
    const item = () => root.querySelector('[data-tournament-id="winter-cup"]')!;
    ws.lobby({ seq: "5", tournamentStandings: pushed(1) });
    ws.lobby({ seq: "8", tournamentStandings: pushed(2, { you: { place: 2, player: "alice", score: 1.5 }, next: { round: 3, bye: true } }) });
    await flush();
    expect(item().querySelector('[data-field="next-game"]')!.textContent).toBe("Round 3: bye");
    expect(item().querySelector('[data-field="place"]')!.textContent).toBe("Place 2 · 1.5 points");
    expect(item().querySelector(".phase")!.textContent).toBe("Round 3 of 4");
  });

  it("replaces an open table's rows with pushed standings, without reading the tournament again", async () => {
    const { root, ws } = await open();
    const item = () => root.querySelector('[data-tournament-id="winter-cup"]')!;
    const rows = () => [...item().querySelectorAll('[data-field="standings"] tbody tr')].map((r) => r.getAttribute("data-player"));
    (item().querySelector('[data-action="standings"]') as HTMLButtonElement).click();
    await flush();
    ws.answer(ws.last("getTournament")!, { getTournament: { tournament: { ...RUNNING,
      standings: [{ place: 1, player: "bob", score: 1 }, { place: 2, player: "alice", score: 1 }, { place: 3, player: "cy", score: 0 }, { place: 4, player: "dan", score: 0 }] } } });
    await flush();
    expect(rows()).toEqual(["bob", "alice", "cy", "dan"]);
    const reads = ws.all("getTournament").length;
    // Round 2 ended and round 3 is paired: the pushed table (alice's own line after its first lines).
    ws.lobby({ seq: "9", tournamentStandings: pushed(2, { rounds: 3, next: { round: 3, opponent: "dan", seat: "SIDE_NORTH" } }) });
    await flush();
    expect(rows()).toEqual(["cy", "bob", "alice"]);
    expect([...item().querySelectorAll('[data-field="standings"] tbody tr:last-child td')].map((c) => c.textContent)).toEqual(["3", "alice", "0.5", "0"]);
    expect(item().querySelector('[data-field="next-game"]')!.textContent).toBe("Round 3: you play dan");
    expect(ws.all("getTournament").length).toBe(reads);
    // Read again after more rounds than the pushed table: the table read is shown.
    (item().querySelector('[data-action="standings"]') as HTMLButtonElement).click();
    await flush();
    expect(item().querySelector('[data-field="standings"]')).toBeNull();
    (item().querySelector('[data-action="standings"]') as HTMLButtonElement).click();
    await flush();
    ws.answer(ws.last("getTournament")!, { getTournament: { tournament: { ...RUNNING, roundsCompleted: 3,
      rounds: [1, 2, 3].map((round) => ({ round, bulkId: `tournament:winter-cup:round:${round}` })),
      standings: [{ place: 1, player: "dan", score: 3 }, { place: 2, player: "alice", score: 2.5 }] } } });
    await flush();
    expect(rows()).toEqual(["dan", "alice"]);
  });

  it("shows a finished tournament's final place and no next game", async () => {
    const { root, ws } = await open();
    const item = () => root.querySelector('[data-tournament-id="winter-cup"]')!;
    ws.lobby({ seq: "5", tournamentStandings: pushed(3) });
    await flush();
    expect(item().querySelector('[data-field="next-game"]')).not.toBeNull();
    // The end: the server leaves `next` unset; the page shows none even if one came.
    ws.lobby({ seq: "12", tournamentStandings: pushed(4, { rounds: 4, finished: true, you: { place: 1, player: "alice", score: 3.5 } }) });
    await flush();
    expect(item().querySelector(".phase")!.textContent).toBe("Finished");
    expect(item().querySelector('[data-field="place"]')!.textContent).toBe("Final place 1 · 3.5 points");
    expect(item().querySelector('[data-field="next-game"]')).toBeNull();
    expect(item().querySelector('[data-action="join-tournament"]')).toBeNull();
  });

  it("shows no pushed next game or place for a tournament listed as finished after them", async () => {
    const { root, ws } = await open();
    const item = () => root.querySelector('[data-tournament-id="winter-cup"]')!;
    ws.lobby({ seq: "5", tournamentStandings: pushed(3) });
    await flush();
    (item().querySelector('[data-action="standings"]') as HTMLButtonElement).click();
    await flush();
    ws.answer(ws.last("getTournament")!, { getTournament: { tournament: { ...RUNNING, state: "TOURNAMENT_STATE_FINISHED", roundsCompleted: 4,
      standings: [{ place: 1, player: "dan", score: 4 }, { place: 2, player: "alice", score: 3 }] } } });
    await flush();
    expect(item().querySelector(".phase")!.textContent).toBe("Finished");
    expect(item().querySelector('[data-field="next-game"]')).toBeNull();
    expect(item().querySelector('[data-field="place"]')).toBeNull();
    expect([...item().querySelectorAll('[data-field="standings"] tbody tr')].map((r) => r.getAttribute("data-player"))).toEqual(["dan", "alice"]);
  });

  it("reads the list again, once, for pushed standings of a tournament it does not list", async () => {
    const { root, ws } = await open();
    expect(ws.all("listTournaments").length).toBe(1);
    const spring = { tournamentId: "spring-open", format: "TOURNAMENT_FORMAT_ROUND_ROBIN", roundCount: 3, state: "TOURNAMENT_STATE_RUNNING",
      entrants: ["alice", "bob", "cy", "dan"], roundsCompleted: 0, rounds: [{ round: 1, bulkId: "tournament:spring-open:round:1" }] } satisfies TournamentJson;
    ws.lobby({ seq: "6", tournamentStandings: pushed(0, { tournamentId: "spring-open", next: { round: 1, opponent: "dan", seat: "SIDE_NORTH" } }) });
    await flush();
    ws.lobby({ seq: "7", tournamentStandings: pushed(0, { tournamentId: "spring-open", next: { round: 1, opponent: "bob", seat: "SIDE_NORTH" } }) });
    await flush();
    expect(ws.all("listTournaments").length).toBe(2);
    ws.answer(ws.last("listTournaments")!, { listTournaments: { tournaments: [spring, CUP] } });
    await flush();
    const item = root.querySelector('[data-tournament-id="spring-open"]')!;
    expect(item.querySelector('[data-field="next-game"]')!.textContent).toBe("Round 1: you play bob");
    expect(ws.all("listTournaments").length).toBe(2);
  });

  it("keeps pushed standings for the lobby opened again, which resumes after them", async () => {
    const first = await open();
    first.ws.lobby({ seq: "5", tournamentStandings: pushed(1) });
    await flush();
    // Back from a game: a new lobby on a new connection, following from seq 5.
    FakeSocket.all = [];
    const { root, ws } = await open();
    expect(ws.last("followLobby")!.body).toMatchObject({ afterSeq: "5" });
    const item = root.querySelector('[data-tournament-id="winter-cup"]')!;
    expect(item.querySelector('[data-field="next-game"]')!.textContent).toBe("Round 2: you play cy");
    expect(item.querySelector('[data-field="place"]')!.textContent).toBe("Place 3 · 0.5 points");
  });

  it("pauses and resumes in an arena under way, and lets a latecomer join one open to players", async () => {
    const { root, ws } = await open();
    const item = () => root.querySelector('[data-tournament-id="winter-cup"]')!;
    const arena: TournamentJson = { ...CUP, format: "TOURNAMENT_FORMAT_ARENA", state: "TOURNAMENT_STATE_RUNNING", rounds: [{ round: 1, bulkId: "tournament:winter-cup:round:1" }] };
    // Not in it: an arena open to players takes a latecomer.
    (item().querySelector('[data-action="standings"]') as HTMLButtonElement).click();
    await flush();
    ws.answer(ws.last("getTournament")!, { getTournament: { tournament: arena } });
    await flush();
    expect(item().querySelector('[data-action="pause-tournament"]')).toBeNull();
    (item().querySelector('[data-action="join-tournament"]') as HTMLButtonElement).click();
    await flush();
    ws.answer(ws.last("joinTournament")!, { joinTournament: { tournament: { ...arena, entrants: ["bob", "alice"] } } });
    await flush();
    // In it: pause (a withdrawal while it runs), shown as paused, then resume (a join).
    (item().querySelector('[data-action="pause-tournament"]') as HTMLButtonElement).click();
    await flush();
    expect(ws.last("withdrawTournament")!.body).toMatchObject({ tournamentId: "winter-cup" });
    ws.answer(ws.last("withdrawTournament")!, { withdrawTournament: { tournament: { ...arena, entrants: ["bob", "alice"], paused: ["alice"] } } });
    await flush();
    expect(item().querySelector('[data-field="paused"]')).not.toBeNull();
    const joins = ws.all("joinTournament").length;
    (item().querySelector('[data-action="resume-tournament"]') as HTMLButtonElement).click();
    await flush();
    expect(ws.all("joinTournament").length).toBe(joins + 1);
    ws.answer(ws.last("joinTournament")!, { joinTournament: { tournament: { ...arena, entrants: ["bob", "alice"] } } });
    await flush();
    expect(item().querySelector('[data-field="paused"]')).toBeNull();
    expect(item().querySelector('[data-action="pause-tournament"]')).not.toBeNull();
  });

  it("sends the chosen time control with an invite, and the server's default until one is chosen", async () => {
    const { root, ws } = await open();
    (root.querySelector('[data-action="create-invite"]') as HTMLButtonElement).click();
    await flush();
    // Unchosen: no time control on the wire (proto JSON omits the empty default).
    const first = ws.last("createInvite")!;
    expect((first.body as { timeControl?: string }).timeControl ?? "").toBe("");
    ws.answer(first, { createInvite: { invite: { code: "C1", link: "http://x/invite/C1" } } });
    await flush();
    const clock = root.querySelector('select[data-field="time-control"]') as HTMLSelectElement;
    expect([...clock.options].map((o) => o.value)).toEqual(["", "online", "relaxed"]);
    clock.value = "online";
    clock.dispatchEvent(new Event("change"));
    await flush();
    (root.querySelector('[data-action="create-invite"]') as HTMLButtonElement).click();
    await flush();
    expect(ws.last("createInvite")!.body).toMatchObject({ timeControl: "online" });
    expect(localStorage.getItem("hf.timeControl")).toBe("online");
  });

  it("plays the computer at the chosen level (expert until one is chosen), under the chosen rules", async () => {
    const { root, ws, navigate } = await open();
    const level = root.querySelector('select[data-field="level"]') as HTMLSelectElement;
    expect([...level.options].map((o) => o.value)).toEqual(["random", "greedy", "belief", "search", "expert"]);
    expect(level.value).toBe("expert");
    (root.querySelector('[data-action="play-computer"]') as HTMLButtonElement).click();
    await flush();
    const first = ws.last("playComputer")!;
    expect(first.body).toMatchObject({ level: "expert", rules: "hidden-front" });
    // No clock chosen: none sent, the server's default for computer games (relaxed).
    expect((first.body as { timeControl?: string }).timeControl ?? "").toBe("");
    ws.answer(first, { playComputer: { gameId: "g5", seat: "SIDE_SOUTH", level: "expert" } });
    await flush();
    expect(navigate).toHaveBeenCalledWith("/game/g5");
    level.value = "greedy";
    level.dispatchEvent(new Event("change"));
    (root.querySelector('select[data-field="rules"]') as HTMLSelectElement).value = "gunjin-shogi";
    root.querySelector('select[data-field="rules"]')!.dispatchEvent(new Event("change"));
    const clock = root.querySelector('select[data-field="time-control"]') as HTMLSelectElement;
    clock.value = "online";
    clock.dispatchEvent(new Event("change"));
    (root.querySelector('[data-action="play-computer"]') as HTMLButtonElement).click();
    await flush();
    expect(ws.last("playComputer")!.body).toMatchObject({ level: "greedy", rules: "gunjin-shogi", timeControl: "online" });
    expect(localStorage.getItem("hf.level")).toBe("greedy");
  });

  it("accepts an invite from its link and shows a refusal by its reason", async () => {
    const { root, ws, navigate } = await open("ABC123");
    (root.querySelector('[data-action="accept-invite"]') as HTMLButtonElement).click();
    await flush();
    const req = ws.last("acceptInvite")!;
    expect(req.body).toEqual({ code: "ABC123" });
    ws.refuse(req, 9, "OWN_INVITE", "you cannot accept your own invite");
    await flush();
    const err = root.querySelector('[data-field="error"]')!;
    expect(err.getAttribute("data-reason")).toBe("OWN_INVITE");
    expect(err.textContent).not.toContain("you cannot accept");
    (root.querySelector('[data-action="accept-invite"]') as HTMLButtonElement).click();
    await flush();
    ws.answer(ws.last("acceptInvite")!, { acceptInvite: { gameId: "g2", seat: "SIDE_NORTH" } });
    await flush();
    expect(navigate).toHaveBeenCalledWith("/game/g2");
  });
});
