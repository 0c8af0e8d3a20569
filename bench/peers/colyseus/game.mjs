// The peer's game: the smallest game that does the work a Hidden Front move does around its
// rules, so that a Colyseus room and `hidden-front bench play` can be compared move for move.
//
// A board of 5 columns by 12 rows; each side has 20 pieces on its own four back rows: one flag
// (rank 0, never moves) and 19 pieces of ranks 1 to 9 drawn at random. A move is one step
// forward, back or sideways onto an empty square or an enemy piece. A fight is judged by rank:
// the higher rank survives, equal ranks both fall; taking the flag wins. A side that cannot move
// loses; a game of 400 plies is drawn. Neither side ever learns a rank of the other's: a side is
// told its own pieces' ranks, the other's pieces only as ids on squares, and a fight only as
// who survived.

export const COLUMNS = 5;
export const ROWS = 12;
export const MAX_PLIES = 400;

const STEPS = [
  [0, 1],
  [0, -1],
  [1, 0],
  [-1, 0],
];

/** The square one step from `square` in direction `step`, or -1 off the board. */
export function neighbour(square, [dc, dr]) {
  const column = (square % COLUMNS) + dc;
  const row = Math.floor(square / COLUMNS) + dr;
  if (column < 0 || column >= COLUMNS || row < 0 || row >= ROWS) return -1;
  return row * COLUMNS + column;
}

/** A fresh game: seat 0 on rows 0–3, seat 1 on rows 8–11, seat 0 to move. */
export function newGame(random = Math.random) {
  const board = new Array(COLUMNS * ROWS).fill(null);
  let id = 0;
  for (const seat of [0, 1]) {
    const squares = [];
    for (let row = 0; row < 4; row++) {
      for (let column = 0; column < COLUMNS; column++) {
        squares.push((seat === 0 ? row : ROWS - 1 - row) * COLUMNS + column);
      }
    }
    // The flag on the back row, the others anywhere.
    const flagAt = Math.floor(random() * COLUMNS);
    squares.forEach((square, i) => {
      const rank = i === flagAt ? 0 : 1 + Math.floor(random() * 9);
      board[square] = { id: id++, seat, rank };
    });
  }
  return { board, turn: 0, plies: 0, ended: false };
}

/** What `seat` may see of `game`: its own pieces with ranks, the other's as ids. */
export function viewOf(game, seat) {
  const pieces = [];
  game.board.forEach((piece, square) => {
    if (piece === null) return;
    pieces.push(
      piece.seat === seat
        ? { square, id: piece.id, seat: piece.seat, rank: piece.rank }
        : { square, id: piece.id, seat: piece.seat },
    );
  });
  return { seat, turn: game.turn, pieces };
}

/** Whether `seat` has a legal move on `board` (squares hold `{ seat, rank? }` or null). */
export function hasMove(board, seat) {
  for (let square = 0; square < board.length; square++) {
    const piece = board[square];
    if (piece === null || piece.seat !== seat || piece.rank === 0) continue;
    for (const step of STEPS) {
      const to = neighbour(square, step);
      if (to >= 0 && (board[to] === null || board[to].seat !== seat)) return true;
    }
  }
  return false;
}

/** The legal moves of `seat` on `board`, as [from, to] pairs. */
export function movesOf(board, seat) {
  const moves = [];
  for (let square = 0; square < board.length; square++) {
    const piece = board[square];
    if (piece === null || piece.seat !== seat || piece.rank === 0) continue;
    for (const step of STEPS) {
      const to = neighbour(square, step);
      if (to >= 0 && (board[to] === null || board[to].seat !== seat)) moves.push([square, to]);
    }
  }
  return moves;
}

/**
 * Judges `seat` moving `from` → `to`. Returns an error string, or the outcome:
 * `{ fight: null | "attacker" | "defender" | "both", winner: null | 0 | 1, draw }`.
 */
export function play(game, seat, from, to) {
  if (game.ended) return "the game has ended";
  if (seat !== game.turn) return "not your turn";
  if (!Number.isInteger(from) || !Number.isInteger(to)) return "bad squares";
  if (from < 0 || from >= game.board.length || to < 0 || to >= game.board.length) {
    return "off the board";
  }
  const piece = game.board[from];
  if (piece === null || piece.seat !== seat) return "not your piece";
  if (piece.rank === 0) return "the flag does not move";
  if (!STEPS.some((step) => neighbour(from, step) === to)) return "not one step";
  const target = game.board[to];
  if (target !== null && target.seat === seat) return "your own piece is there";
  let fight = null;
  let winner = null;
  game.board[from] = null;
  if (target === null) {
    game.board[to] = piece;
  } else if (target.rank === 0) {
    game.board[to] = piece;
    fight = "attacker";
    winner = seat;
  } else if (piece.rank > target.rank) {
    game.board[to] = piece;
    fight = "attacker";
  } else if (piece.rank < target.rank) {
    fight = "defender";
  } else {
    game.board[to] = null;
    fight = "both";
  }
  game.plies += 1;
  game.turn = 1 - seat;
  let draw = false;
  if (winner === null && !hasMove(game.board, game.turn)) winner = seat;
  if (winner === null && game.plies >= MAX_PLIES) draw = true;
  game.ended = winner !== null || draw;
  return { fight, winner, draw };
}
