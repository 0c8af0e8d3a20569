// The game screen's state transitions, in Node: no DOM, no socket, no storage.
import { describe, expect, it } from "vitest";
import type { GameEventJson, GameViewJson } from "../src/gen/hiddenfront/v1/game_pb.js";
import {
  awaySeconds,
  clickSquare,
  dropPiece,
  followEvents,
  initialState,
  legalTargets,
  moveShown,
  piecesShown,
  statusOf,
  stepReplay,
  submitMoveText,
  turnSecondsLeft,
  withEvents,
  withGetGame,
  withMoveText,
  withResignAsk,
  withStatus,
  withView,
  type GameState,
} from "../src/state/game-screen.js";
import { fakeEngine } from "./fakes.js";

const engine = fakeEngine();
const NOW = 1_000_000;

const play: GameViewJson = {
  gameId: "g1", version: "9", viewer: "VIEWER_SOUTH", rules: "hidden-front", phase: "PHASE_PLAY", toMove: "SIDE_SOUTH",
  southConnected: true, northConnected: false, southTimeouts: 1, northTimeouts: 2, drawOffer: "SIDE_NORTH",
  northAwayDeadlineUnixMillis: String(NOW + 42_000), turnDeadlineUnixMillis: String(NOW + 30_000),
  pieces: [
    { square: "A1", side: "SIDE_SOUTH", id: 1, piece: "9" },
    { square: "B1", side: "SIDE_SOUTH", id: 2, piece: "F" },
    { square: "A3", side: "SIDE_NORTH", id: 7 },
  ],
};

const deploy: GameViewJson = {
  gameId: "g1", version: "3", viewer: "VIEWER_SOUTH", rules: "hidden-front", phase: "PHASE_DEPLOYMENT",
  ownDeployment: { side: "SIDE_SOUTH", placements: [{ square: "A1", piece: "9" }, { square: "B1", piece: "F" }, { square: "C1", piece: "1" }] },
};

const start = (view: GameViewJson): GameState => withGetGame(initialState({ gameId: "g1", spectate: false }), view, engine);

const moved = (seq: number, from: string, to: string): GameEventJson => ({
  gameId: "g1", seq: String(seq), moved: { side: "SIDE_SOUTH", move: { from, to }, pieceId: 1, piece: "9" },
});

describe("the game's status", () => {
  it("comes in whole through withStatus, and only the status changes", () => {
    const s = start(play);
    expect(s.status).toEqual(statusOf(play));
    expect(awaySeconds(s, 0, NOW)).toEqual([{ side: "north", seconds: 42 }]);
    expect(turnSecondsLeft(s.status, 0, NOW)).toBe(30);
    // As a stream message carrying the status would: the opponent is back, the clock moved on.
    const back = withStatus(s, { ...s.status, northConnected: true, northAwayDeadlineUnixMillis: "0", turnDeadlineUnixMillis: String(NOW + 5_000) });
    expect(back.view).toBe(s.view);
    expect(back.legal).toBe(s.legal);
    expect(awaySeconds(back, 0, NOW), "the away banner reads the status, not the view").toEqual([]);
    expect(turnSecondsLeft(back.status, 0, NOW)).toBe(5);
    expect(s.status.northConnected, "the state before is unchanged").toBe(false);
  });

  it("of an answer older than the view shown is dropped with it", () => {
    const s = start(play);
    const older = withGetGame(s, { ...play, version: "8", northConnected: true, drawOffer: undefined }, engine);
    expect(older).toBe(s);
    const newer = withGetGame(s, { ...play, version: "10", northConnected: true, drawOffer: undefined }, engine);
    expect(newer.status.northConnected).toBe(true);
    expect(newer.status.drawOffer).toBeUndefined();
  });

  it("shows nobody away outside of play, and never the viewer's own seat", () => {
    const s = start({ ...play, southAwayDeadlineUnixMillis: String(NOW + 10_000) });
    expect(awaySeconds(s, 0, NOW).map((a) => a.side)).toEqual(["north"]);
    const watcher = withGetGame(initialState({ gameId: "g1", spectate: true }), { ...play, viewer: "VIEWER_SPECTATOR", southAwayDeadlineUnixMillis: String(NOW + 10_000) }, engine);
    expect(awaySeconds(watcher, 0, NOW).map((a) => a.side)).toEqual(["south", "north"]);
    expect(awaySeconds(start({ ...play, phase: "PHASE_ENDED" }), 0, NOW)).toEqual([]);
  });
});

describe("following the game from the stream", () => {
  const reply = (seq: number, from: string, to: string): GameEventJson => ({
    gameId: "g1", seq: String(seq), moved: { side: "SIDE_NORTH", move: { from, to }, pieceId: 7 },
  });

  it("applies each event to the view with the engine: the board, the turn and the legal moves move on", () => {
    let s = start(play);
    s = withEvents(s, [moved(10, "A1", "A2")], engine);
    const { state, stale } = followEvents(s, engine);
    expect(stale).toBe(false);
    expect(state.view?.version).toBe("10");
    expect(state.view?.pieces?.find((p) => p.id === 1)?.square).toBe("A2");
    expect(state.view?.toMove).toBe("SIDE_NORTH");
    expect(state.legal, "south's moves are computed again: none on north's turn in the fake").not.toEqual(s.legal);
    expect(state.status, "the status waits for its own item").toBe(s.status);
    expect(followEvents(state, engine).state, "nothing more to follow: the same state").toBe(state);
  });

  it("follows events received before the view once it comes, and not those it already holds", () => {
    const early = withEvents(initialState({ gameId: "g1", spectate: false }), [moved(8, "A1", "A2"), moved(10, "A1", "A2"), reply(11, "A3", "B3")], engine);
    expect(followEvents(early, engine).state.view, "no view yet: nothing to follow").toBeNull();
    const { state, stale } = followEvents(withGetGame(early, play, engine), engine);
    expect(stale).toBe(false);
    expect(state.view?.version).toBe("11");
    expect((state.view?.pieces ?? []).map((p) => p.square).sort()).toEqual(["A2", "B1", "B3"]);
  });

  it("stops at an event that does not follow and says the view must be read again", () => {
    let s = withEvents(start(play), [moved(10, "A1", "A2"), moved(11, "C4", "C3"), reply(12, "A3", "B3")], engine);
    const { state, stale } = followEvents(s, engine);
    expect(stale).toBe(true);
    expect(state.view?.version, "kept at the last event that followed").toBe("10");
    // The view read again takes the events after its version.
    s = withGetGame(state, { ...play, version: "11", toMove: "SIDE_NORTH", pieces: state.view?.pieces }, engine);
    const again = followEvents(s, engine);
    expect(again.stale).toBe(false);
    expect(again.state.view?.version).toBe("12");
  });

  it("takes the end from its event: the ended view and its replay", () => {
    const startingPieces = play.pieces!.map((p) => ({ ...p, piece: p.piece ?? "1" }));
    const end: GameEventJson = {
      gameId: "g1", seq: "11",
      ended: { outcome: { winner: "SIDE_SOUTH", reason: "END_REASON_RESIGNED" }, pieces: startingPieces, reveal: { startingPieces } },
    };
    const s = followEvents(withEvents(start(play), [moved(10, "A1", "A2"), end], engine), engine).state;
    expect(s.view?.phase).toBe("PHASE_ENDED");
    expect(s.replay?.steps.length).toBe(2);
  });
});

describe("status items", () => {
  it("replace the status held unless older, whichever comes first: an item or the view read", () => {
    const s = start(play);
    expect(s.status.version).toBe("9");
    const item = { ...statusOf(play), version: "11", northConnected: true };
    const newer = withStatus(s, item);
    expect(newer.status.northConnected).toBe(true);
    expect(withStatus(newer, { ...item, version: "10", northConnected: false }), "an older item is dropped").toBe(newer);
    expect(withStatus(newer, { ...item, turnDeadlineUnixMillis: "5" }).status.turnDeadlineUnixMillis, "one of the same version replaces").toBe("5");
    // A view read at version 10 after the item of version 11: its position is taken, its status not.
    const read = withGetGame(newer, { ...play, version: "10" }, engine);
    expect(read.view?.version).toBe("10");
    expect(read.status).toBe(newer.status);
  });
});

describe("playing by clicks and by typing", () => {
  it("picks an own piece, shows its legal destinations, and plays a clicked one", () => {
    const s = start(play);
    const [picked, none] = clickSquare(s, "A1", engine);
    expect(none).toBeNull();
    expect(picked.selected).toBe("A1");
    expect([...legalTargets(picked)]).toEqual(["A2"]);
    const [sent, command] = clickSquare(withMoveText(picked, "A1 A"), "A2", engine);
    expect(command).toEqual({ kind: "play", move: { from: "A1", to: "A2" } });
    expect(sent.selected).toBeNull();
    expect(sent.moveText).toBe("");
    expect(s.selected, "transitions leave the state they were given alone").toBeNull();
  });

  it("opens the mark panel for an opponent piece, and drops the pick on an empty square", () => {
    const s = clickSquare(start(play), "A1", engine)[0];
    const [marking] = clickSquare(s, "A3", engine);
    expect(marking.markTarget).toBe(7);
    expect(marking.selected).toBeNull();
    expect(clickSquare(s, "C2", engine)[0].selected).toBeNull();
  });

  it("lets a spectator click nothing", () => {
    const watcher = withGetGame(initialState({ gameId: "g1", spectate: true }), { ...play, viewer: "VIEWER_SPECTATOR" }, engine);
    const [next, command] = clickSquare(watcher, "A1", engine);
    expect(next).toBe(watcher);
    expect(command).toBeNull();
  });

  it("refuses an unreadable or illegal typed move with the page's own reason, and plays a legal one", () => {
    const s = start(play);
    const [bad, none] = submitMoveText(withMoveText(s, "hello"), engine);
    expect(none).toBeNull();
    expect(bad.error).toMatchObject({ reason: "MOVE_UNREADABLE", key: "game.move.bad" });
    const [illegal] = submitMoveText(withMoveText(s, "A1 C4"), engine);
    expect(illegal.error).toMatchObject({ reason: "MOVE_NOT_LEGAL", params: { move: "A1 C4" } });
    const [sent, command] = submitMoveText(withMoveText(s, " a1-a2 "), engine);
    expect(command).toEqual({ kind: "play", move: { from: "A1", to: "A2" } });
    expect(sent.moveText).toBe("");
  });

  it("drops a pick whose piece has no move in the next view, and the resignation question out of play", () => {
    const s = withResignAsk(clickSquare(start(play), "A1", engine)[0], true);
    const blocked = withView(s, { ...play, version: "10", pieces: [{ square: "A1", side: "SIDE_SOUTH", id: 1, piece: "F" }] }, engine);
    expect(blocked.selected).toBeNull();
    expect(blocked.resignAsk).toBe(true);
    expect(withView(s, { ...play, version: "11", phase: "PHASE_ENDED" }, engine).resignAsk).toBe(false);
  });
});

describe("deployment", () => {
  it("swaps two own squares when the engine allows it, shown at once, and refuses with its reason otherwise", () => {
    const s = start(deploy);
    const picked = clickSquare(s, "B1", engine)[0];
    expect(picked.selected).toBe("B1");
    const [refused, none] = clickSquare(picked, "C1", engine);
    expect(none).toBeNull();
    expect(refused.error).toMatchObject({ reason: "FLAG_NOT_IN_HQ", key: "problem.FLAG_NOT_IN_HQ" });
    expect(refused.selected).toBeNull();
    const [swapped, command] = dropPiece(s, "A1", "C1", engine);
    expect(command).toEqual({ kind: "swap", a: "A1", b: "C1" });
    expect(swapped.view?.ownDeployment?.placements).toContainEqual({ square: "C1", piece: "9" });
    expect(s.view?.ownDeployment?.placements, "the view before is unchanged").toContainEqual({ square: "A1", piece: "9" });
  });

  it("ignores clicks once confirmed and on squares without an own piece", () => {
    const s = start(deploy);
    expect(clickSquare(s, "C4", engine)[0]).toBe(s);
    const confirmed = start({ ...deploy, southConfirmed: true });
    expect(clickSquare(confirmed, "A1", engine)[0]).toBe(confirmed);
  });
});

describe("the end's replay", () => {
  const ended: GameViewJson = {
    ...play, version: "12", phase: "PHASE_ENDED", outcome: { winner: "SIDE_SOUTH", reason: "END_REASON_FLAG_CAPTURED" },
    reveal: { startingPieces: play.pieces!.map((p) => ({ ...p, piece: p.piece ?? "1" })) },
  };

  it("follows events that come after the ended view while the reader is at the end, and keeps a reader's step", () => {
    let s = start(ended);
    expect(s.replay?.steps.length).toBe(1);
    s = withEvents(s, [moved(11, "A1", "A2")], engine);
    s = withEvents(s, [moved(11, "A1", "A2"), moved(12, "A2", "A3")], engine);
    expect(s.replay?.index).toBe(2);
    expect(moveShown(s)).toEqual({ from: "A2", to: "A3" });
    s = stepReplay(s, -1);
    expect(s.replay?.index).toBe(1);
    expect(moveShown(s)).toEqual({ from: "A1", to: "A2" });
    expect(piecesShown(s)).toBe(s.replay?.steps[1]?.pieces);
    s = withEvents(s, [moved(11, "A1", "A2"), moved(12, "A2", "A3"), moved(13, "A3", "A4")], engine);
    expect(s.replay?.index, "the reader's step is kept").toBe(1);
    expect(stepReplay(stepReplay(s, -5), -1).replay?.index).toBe(0);
    const last = stepReplay(s, 10);
    expect(last.replay?.index).toBe(3);
    expect(stepReplay(last, 1)).toBe(last);
  });

  it("is none before the end: the board shows the view and the last move played", () => {
    const s = withEvents(start(play), [moved(11, "A1", "A2")], engine);
    expect(s.replay).toBeNull();
    expect(piecesShown(s)).toBe(play.pieces);
    expect(moveShown(s)).toEqual({ from: "A1", to: "A2" });
  });
});
