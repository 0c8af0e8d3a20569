//! Puzzles: hand-made positions with one known weakness each (an engineer's railway to the
//! flag, a commander in reach of a piece that may be a bomb, the flag's wall, the enemy's empty
//! HQ, ...), and the answer a player must find, judged on the true board.
//!
//! A [`Board`] holds a refereed position and a [`ComputerPlayer`] fed only its seat's
//! projections of the position's start and of each move played on it, as in a game. The
//! [`SUITE`] is the same list for the tests (every level from a puzzle's
//! [`Puzzle::required_from`] up must solve it for every seed) and for the ladder (which counts,
//! for each of its levels, how many it solves).

use crate::{Budget, ComputerPlayer, Level};
use hidden_front_rules::{
    Event, Move, Node, Piece, PieceId, Position, Rules, Side, Viewer, project,
};
use thiserror::Error;

use Side::{North, South};

/// One piece of a hand-made position: (square, side, kind code, id).
pub type Placement = (&'static str, Side, &'static str, u8);

/// A hand-made position that cannot be set up or played as written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PuzzleError {
    /// The rule set's name is not known.
    #[error("unknown rule set {0:?}")]
    UnknownRules(String),
    /// A square's name is not on the board of the rule set.
    #[error("no square {0:?} on this board")]
    UnknownSquare(String),
    /// A kind code the rule set does not have.
    #[error("no piece kind {0:?} in these rules")]
    UnknownKind(String),
    /// Two pieces on one square.
    #[error("square {0} holds two pieces")]
    SquareTaken(String),
    /// A move of the history that the engine refuses.
    #[error("move {0} is not legal on the board")]
    IllegalMove(String),
    /// The position leaves the player no move.
    #[error("the player has no legal move")]
    NoMove,
}

/// A refereed position and a player that sees it only as its seat would.
pub struct Board {
    rules: Rules,
    position: Position,
    player: ComputerPlayer,
    side: Side,
}

impl Board {
    /// `pieces` on an empty board of `rules`, the player at `level` with `seed` on `side`,
    /// shown the start as its seat sees it.
    pub fn new(
        level: Level,
        rules: Rules,
        side: Side,
        pieces: &[Placement],
        seed: u64,
    ) -> Result<Board, PuzzleError> {
        let mut position = Position::empty(rules, side);
        let mut started = Vec::with_capacity(pieces.len());
        for &(square, owner, code, id) in pieces {
            let at = square_of(&rules, square)?;
            let kind = rules
                .parse_kind(code)
                .ok_or_else(|| PuzzleError::UnknownKind(code.to_owned()))?;
            let piece = Piece {
                side: owner,
                kind,
                id: PieceId(id),
            };
            if !position.put(at, piece) {
                return Err(PuzzleError::SquareTaken(square.to_owned()));
            }
            started.push((at, piece));
        }
        let mut board = Board {
            rules,
            position,
            player: ComputerPlayer::with_level(side, rules, level, seed),
            side,
        };
        board.show(&Event::PlayStarted { pieces: started });
        Ok(board)
    }

    /// Plays `from`-`to` for the owner of the piece on `from` and shows the player its seat's
    /// projection of the move.
    pub fn play(&mut self, from: &str, to: &str) -> Result<(), PuzzleError> {
        let illegal = || PuzzleError::IllegalMove(format!("{from}-{to}"));
        let mv = Move {
            from: square_of(&self.rules, from)?,
            to: square_of(&self.rules, to)?,
        };
        let mover = self.position.piece_at(mv.from).ok_or_else(illegal)?;
        self.position.set_to_move(mover.side);
        let report = self.position.play(mv).map_err(|_| illegal())?;
        self.show(&Event::Moved {
            mv,
            piece: report.mover,
            combat: report.combat,
            flag_reveal: Vec::new(),
        });
        Ok(())
    }

    fn show(&mut self, event: &Event) {
        if let Some(view) = project(event, Viewer::player(self.side), None) {
            self.player.observe(&view);
        }
    }

    /// The board with the player's budget per move replaced (tests and the ladder's tests set
    /// one without the wall-clock safety net, so a seed fixes the answer in a debug build too).
    pub fn with_budget(mut self, budget: Budget) -> Board {
        self.player = self.player.with_budget(budget);
        self
    }

    /// The player's legal moves, the player's side to move.
    pub fn legal(&mut self) -> Vec<Move> {
        self.position.set_to_move(self.side);
        self.position.legal_moves().iter().collect()
    }

    /// The player's choice among its legal moves.
    pub fn choose(&mut self) -> Result<Move, PuzzleError> {
        let legal = self.legal();
        self.player
            .try_choose_move(&legal)
            .ok_or(PuzzleError::NoMove)
    }

    /// The belief level's score of every legal move, by name.
    pub fn belief_scores(&mut self) -> Vec<(String, f64)> {
        let legal = self.legal();
        let scores = self.player.score_moves(&legal);
        legal.iter().map(|&m| self.name(m)).zip(scores).collect()
    }

    /// The player's score of every legal move at its level, by name (see
    /// [`ComputerPlayer::level_scores`]).
    pub fn level_scores(&mut self) -> Vec<(String, f64)> {
        let legal = self.legal();
        let scores = self.player.level_scores(&legal);
        legal.iter().map(|&m| self.name(m)).zip(scores).collect()
    }

    /// `mv` as the board names it (`C6-C7`).
    pub fn name(&self, mv: Move) -> String {
        let topo = self.rules.topology();
        format!("{}-{}", topo.name(mv.from), topo.name(mv.to))
    }

    /// The square named `name`.
    pub fn square(&self, name: &str) -> Result<Node, PuzzleError> {
        square_of(&self.rules, name)
    }

    /// The true position (every kind known): the referee's, not the player's.
    pub fn position(&self) -> &Position {
        &self.position
    }

    /// The player.
    pub fn player(&self) -> &ComputerPlayer {
        &self.player
    }
}

fn square_of(rules: &Rules, name: &str) -> Result<Node, PuzzleError> {
    rules
        .topology()
        .node(name)
        .ok_or_else(|| PuzzleError::UnknownSquare(name.to_owned()))
}

/// What makes an answer right, judged on the true position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// This move (from, to) and no other.
    Play(&'static str, &'static str),
    /// Any move that does not end on this square.
    NotInto(&'static str),
    /// Any move but this one.
    Not(&'static str, &'static str),
    /// The own piece on this square does not step off to an empty square (it may fight from
    /// there).
    Hold(&'static str),
    /// Afterwards the enemy piece on `from` cannot land on `to` (next to the own goal) and stay
    /// there: either it cannot move there, or the player then has a move that removes it.
    ShutRoute {
        /// The enemy piece's square.
        from: &'static str,
        /// The square next to the goal.
        to: &'static str,
    },
    /// The own piece with this id is on the board afterwards and survives every enemy answer.
    Survives(u8),
}

/// A hand-made position with one right kind of answer.
#[derive(Debug, Clone, Copy)]
pub struct Puzzle {
    /// A short name (kebab-case) for tables.
    pub name: &'static str,
    /// What the position asks, in a sentence.
    pub what: &'static str,
    /// The rule set's name.
    pub rules: &'static str,
    /// The player's side (it moves after the history).
    pub side: Side,
    /// The position at the start, true kinds.
    pub pieces: &'static [Placement],
    /// Moves played before the player answers (each by the owner of the piece moved).
    pub history: &'static [(&'static str, &'static str)],
    /// What the player must do.
    pub answer: Answer,
    /// The weakest level that must solve it for every seed (`None`: measured, not required).
    pub required_from: Option<Level>,
}

impl Puzzle {
    /// The position after the history, the player at `level` with `seed`.
    pub fn board(&self, level: Level, seed: u64) -> Result<Board, PuzzleError> {
        let rules =
            Rules::parse(self.rules).map_err(|_| PuzzleError::UnknownRules(self.rules.into()))?;
        let mut board = Board::new(level, rules, self.side, self.pieces, seed)?;
        for (from, to) in self.history {
            board.play(from, to)?;
        }
        Ok(board)
    }

    /// Whether `mv` (one of the player's legal moves on `board`) is a right answer.
    pub fn accepts(&self, board: &Board, mv: Move) -> Result<bool, PuzzleError> {
        let sq = |name: &str| board.square(name);
        let side = board.side;
        let mut after = board.position;
        after.set_to_move(side);
        let before = board.position;
        after
            .play(mv)
            .map_err(|_| PuzzleError::IllegalMove(board.name(mv)))?;
        Ok(match self.answer {
            Answer::Play(from, to) => mv.from == sq(from)? && mv.to == sq(to)?,
            Answer::NotInto(to) => mv.to != sq(to)?,
            Answer::Not(from, to) => !(mv.from == sq(from)? && mv.to == sq(to)?),
            Answer::Hold(at) => !(mv.from == sq(at)? && before.piece_at(mv.to).is_none()),
            Answer::ShutRoute { from, to } => !route_open(&after, side, sq(from)?, sq(to)?),
            Answer::Survives(id) => survives(&after, side, PieceId(id)),
        })
    }

    /// The player's answer at `level` with `seed` (and `budget` instead of the level's, if
    /// given), and whether it is right.
    pub fn solve(
        &self,
        level: Level,
        seed: u64,
        budget: Option<Budget>,
    ) -> Result<(String, bool), PuzzleError> {
        let mut board = self.board(level, seed)?;
        if let Some(budget) = budget {
            board = board.with_budget(budget);
        }
        let mv = board.choose()?;
        Ok((board.name(mv), self.accepts(&board, mv)?))
    }

    /// The player's legal moves that are wrong answers (a puzzle without one tests nothing).
    pub fn wrong_answers(&self) -> Result<Vec<String>, PuzzleError> {
        let mut board = self.board(Level::Random, 1)?;
        let mut wrong = Vec::new();
        for mv in board.legal() {
            if !self.accepts(&board, mv)? {
                wrong.push(board.name(mv));
            }
        }
        Ok(wrong)
    }
}

/// Whether the enemy of `side` can move its piece from `from` to `to` in `pos` (the enemy to
/// move next) and `side` then has no move that removes it there.
fn route_open(pos: &Position, side: Side, from: Node, to: Node) -> bool {
    let mut theirs = *pos;
    theirs.set_to_move(side.other());
    let landing = Move { from, to };
    if !theirs.legal_moves().iter().any(|m| m == landing) {
        return false;
    }
    if theirs.play(landing).is_err() || theirs.piece_at(to).is_none_or(|p| p.side == side) {
        return false;
    }
    let answers: Vec<Move> = theirs.legal_moves().iter().collect();
    !answers.into_iter().any(|m| {
        let mut next = theirs;
        m.to == to
            && next
                .play(m)
                .is_ok_and(|r| r.combat.is_some_and(|c| !c.defender_survives))
    })
}

/// Whether `side`'s piece `id` is on the board of `pos` (the enemy to move next) and still is
/// after every enemy move.
fn survives(pos: &Position, side: Side, id: PieceId) -> bool {
    let on_board = |p: &Position| {
        p.pieces()
            .any(|(_, piece)| piece.id == id && piece.side == side)
    };
    if !on_board(pos) {
        return false;
    }
    let mut theirs = *pos;
    theirs.set_to_move(side.other());
    let answers: Vec<Move> = theirs.legal_moves().iter().collect();
    answers.into_iter().all(|m| {
        let mut next = theirs;
        next.play(m).is_err() || on_board(&next)
    })
}

/// South's flag in B1 behind mines on A1 and C1, North's in B12 behind A12 and C12.
const FRAME: [Placement; 6] = [
    ("B1", South, "F", 40),
    ("A1", South, "M", 41),
    ("C1", South, "M", 42),
    ("B12", North, "F", 30),
    ("A12", North, "M", 31),
    ("C12", North, "M", 32),
];

/// `FRAME` and `rest`, as one constant list.
macro_rules! framed {
    ($($piece:expr),* $(,)?) => {
        &[
            FRAME[0], FRAME[1], FRAME[2], FRAME[3], FRAME[4], FRAME[5],
            $($piece),*
        ]
    };
}

/// Two of South's pieces next to the enemy's empty HQ D12, with two enemy pieces on the board:
/// the position of the empty-HQ puzzles, which differ in the enemy's last move.
const EMPTY_HQ: &[Placement] = framed![
    ("D11", South, "3", 1),
    ("E11", South, "2", 2),
    ("C6", South, "9", 3),
    ("A5", South, "4", 4),
    ("E7", North, "5", 20),
    ("A9", North, "3", 21),
];

/// The puzzles, Junqi first. Each is also a test of the levels named by its `required_from`.
pub const SUITE: &[Puzzle] = &[
    Puzzle {
        name: "take-the-known-weaker",
        what: "the enemy commander showed itself by beating an 8; the unknown front piece on C7 \
               is then weaker than the 9 for sure: take it",
        rules: "hidden-front",
        side: South,
        pieces: framed![
            ("A6", South, "8", 1),
            ("C6", South, "9", 2),
            ("E3", South, "2", 3),
            ("A7", North, "9", 20),
            ("C7", North, "4", 21),
            ("E10", North, "3", 22),
        ],
        history: &[("A7", "A6")],
        answer: Answer::Play("C6", "C7"),
        required_from: Some(Level::Greedy),
    },
    Puzzle {
        name: "bomb-the-known-commander",
        what: "the enemy commander beat the 8 on C6: throw the bomb at it",
        rules: "hidden-front",
        side: South,
        pieces: framed![
            ("C6", South, "8", 1),
            ("B6", South, "B", 2),
            ("D6", South, "7", 3),
            ("C5", South, "5", 4),
            ("C7", North, "9", 20),
            ("E10", North, "3", 22),
        ],
        history: &[("C7", "C6")],
        answer: Answer::Play("B6", "C6"),
        required_from: Some(Level::Greedy),
    },
    Puzzle {
        name: "leave-the-known-stronger",
        what: "the piece on C6 beat a 7, so it is an 8 or a 9: the other 7 must leave it alone",
        rules: "hidden-front",
        side: South,
        pieces: framed![
            ("C6", South, "7", 1),
            ("D6", South, "7", 2),
            ("E3", South, "2", 3),
            ("C7", North, "8", 20),
            ("E10", North, "3", 22),
        ],
        history: &[("C7", "C6")],
        answer: Answer::NotInto("C6"),
        required_from: Some(Level::Greedy),
    },
    Puzzle {
        name: "no-general-into-a-known-mine",
        what: "sturdy mines: the piece on A11 killed the commander and stayed, so it is a mine; \
               the 8 must not slide into it",
        rules: "hidden-front+sturdy-mines",
        side: South,
        pieces: framed![
            ("A10", South, "9", 1),
            ("A9", South, "8", 2),
            ("E3", South, "2", 3),
            ("A11", North, "M", 20),
            ("E10", North, "3", 22),
        ],
        history: &[("A10", "A11")],
        answer: Answer::Not("A9", "A11"),
        required_from: Some(Level::Greedy),
    },
    Puzzle {
        name: "take-the-engineer-seen-turning",
        what: "the piece that turned a railway corner is an engineer: the 4 takes it",
        rules: "hidden-front",
        side: South,
        pieces: framed![
            ("C5", South, "4", 1),
            ("E3", South, "2", 4),
            ("B2", South, "6", 5),
            ("A7", North, "1", 20),
            ("E10", North, "3", 22),
        ],
        history: &[("A7", "C6")],
        answer: Answer::Play("C5", "C6"),
        required_from: Some(Level::Greedy),
    },
    Puzzle {
        name: "leave-an-unknown-front-piece",
        what: "an enemy piece only stepped C7-C6: it may be anything that moves, so the 4 does \
               not gamble on it",
        rules: "hidden-front",
        side: South,
        pieces: framed![
            ("C5", South, "4", 1),
            ("E3", South, "2", 4),
            ("C7", North, "7", 20),
            ("E10", North, "3", 22),
        ],
        history: &[("C7", "C6")],
        answer: Answer::Not("C5", "C6"),
        required_from: Some(Level::Belief),
    },
    Puzzle {
        name: "strike-next-to-the-flag",
        what: "an enemy piece stands on B2, next to the flag: the 7 strikes it along the rail \
               rather than taking the bait far away",
        rules: "hidden-front",
        side: South,
        pieces: framed![
            ("E2", South, "7", 1),
            ("A2", South, "3", 2),
            ("C6", South, "9", 3),
            ("C2", North, "6", 20),
            ("C7", North, "2", 21),
            ("E10", North, "3", 22),
        ],
        history: &[("C2", "B2")],
        answer: Answer::Play("E2", "B2"),
        required_from: Some(Level::Belief),
    },
    Puzzle {
        name: "strike-two-steps-from-the-flag",
        what: "an enemy piece on C2 could stand next to the flag next move: the 7 meets it first",
        rules: "hidden-front",
        side: South,
        pieces: framed![
            ("E2", South, "7", 1),
            ("C6", South, "9", 3),
            ("C3", North, "6", 20),
            ("C7", North, "2", 21),
            ("E10", North, "3", 22),
        ],
        history: &[("C3", "C2")],
        answer: Answer::Play("E2", "C2"),
        required_from: Some(Level::Belief),
    },
    Puzzle {
        name: "hold-the-flag-wall",
        what: "the 4 on B2 is the flag's one wall that is not a mine, and an enemy piece stands \
               on C2: the 4 must not step away",
        rules: "hidden-front",
        side: South,
        pieces: framed![
            ("B2", South, "4", 1),
            ("C6", South, "9", 3),
            ("E3", South, "2", 4),
            ("C3", North, "5", 20),
            ("E10", North, "3", 22),
        ],
        history: &[("C3", "C2")],
        answer: Answer::Hold("B2"),
        required_from: Some(Level::Belief),
    },
    Puzzle {
        name: "stay-out-of-the-empty-hq",
        what: "the enemy's HQ D12 is empty: a piece that steps in is frozen there for good",
        rules: "hidden-front",
        side: South,
        pieces: EMPTY_HQ,
        history: &[("A9", "A8")],
        answer: Answer::NotInto("D12"),
        required_from: Some(Level::Belief),
    },
    Puzzle {
        name: "stay-out-of-the-empty-hq-after-a-quiet-move",
        what: "the same empty HQ after another quiet enemy move",
        rules: "hidden-front",
        side: South,
        pieces: EMPTY_HQ,
        history: &[("E7", "E8")],
        answer: Answer::NotInto("D12"),
        required_from: Some(Level::Belief),
    },
    Puzzle {
        name: "shut-the-engineer-railway",
        what: "an enemy piece that has only stepped stands on the east rail; as an engineer it \
               could fly to B2, next to the flag, where nothing answers it: close the route or \
               cover B2 before taking the bait on C7",
        rules: "hidden-front",
        side: South,
        pieces: framed![
            ("C6", South, "9", 3),
            ("B4", South, "4", 4),
            ("D4", South, "3", 5),
            ("E8", North, "1", 20),
            ("C7", North, "3", 21),
            ("A9", North, "5", 22),
        ],
        history: &[("E8", "E7")],
        answer: Answer::ShutRoute {
            from: "E7",
            to: "B2",
        },
        required_from: Some(Level::Expert),
    },
    Puzzle {
        name: "commander-out-of-a-bombs-reach",
        what: "a full enemy army; the commander beat a known 8 on A6, so the enemy knows it, and \
               the unmoved piece on A9 (one of the many that may be a bomb) could slide down the \
               rail onto it: neither attack that piece with the commander nor leave the \
               commander in its reach",
        rules: "hidden-front",
        side: South,
        pieces: &[
            FRAME[0],
            FRAME[1],
            FRAME[2],
            ("A6", South, "7", 1),
            ("B5", South, "9", 2),
            ("D4", South, "4", 3),
            ("B2", South, "5", 4),
            ("E3", South, "2", 5),
            // North: every square of its half but the camps, as a deployment may be.
            ("A12", North, "M", 31),
            ("B12", North, "F", 30),
            ("C12", North, "M", 32),
            ("D12", North, "3", 33),
            ("E12", North, "2", 34),
            ("A11", North, "1", 35),
            ("B11", North, "M", 36),
            ("C11", North, "B", 37),
            ("D11", North, "4", 38),
            ("E11", North, "1", 39),
            ("A10", North, "5", 50),
            ("C10", North, "6", 51),
            ("E10", North, "1", 52),
            ("A9", North, "B", 21),
            ("B9", North, "2", 53),
            ("D9", North, "7", 54),
            ("E9", North, "5", 55),
            ("A8", North, "8", 20),
            ("C8", North, "4", 56),
            ("E8", North, "6", 57),
            ("A7", North, "3", 58),
            ("B7", North, "2", 59),
            ("C7", North, "9", 60),
            ("D7", North, "7", 61),
            ("E7", North, "3", 62),
        ],
        history: &[("A7", "A6"), ("A8", "A6"), ("B5", "A6")],
        answer: Answer::Survives(2),
        required_from: None,
    },
    Puzzle {
        name: "gunjin-enter-the-hq",
        what: "the major can step into the enemy's HQ: that wins",
        rules: "gunjin-shogi",
        side: South,
        pieces: &[
            ("d7", South, "MAJ", 1),
            ("a1", South, "FLG", 2),
            ("b2", South, "GEN", 3),
            ("a8", North, "FLG", 20),
            ("h5", North, "CPT", 21),
            ("g6", North, "MIN", 22),
        ],
        history: &[],
        answer: Answer::Play("d7", "d8+e8"),
        required_from: Some(Level::Greedy),
    },
    Puzzle {
        name: "gunjin-spy-takes-the-known-general",
        what: "the enemy piece on d3 beat the lieutenant general, so it is the general: the spy \
               beside it takes it",
        rules: "gunjin-shogi",
        side: South,
        pieces: &[
            ("a1", South, "FLG", 1),
            ("d3", South, "LTG", 2),
            ("c3", South, "SPY", 3),
            ("h1", South, "CPT", 4),
            ("a8", North, "FLG", 20),
            ("d4", North, "GEN", 21),
            ("h8", North, "CPT", 22),
        ],
        history: &[("d4", "d3")],
        answer: Answer::Play("c3", "d3"),
        required_from: Some(Level::Greedy),
    },
    Puzzle {
        name: "gunjin-strike-next-to-the-hq",
        what: "an enemy piece steps next to the HQ (an officer there wins by entering): the \
               general beside it strikes",
        rules: "gunjin-shogi",
        side: South,
        pieces: &[
            ("c2", South, "GEN", 1),
            ("a1", South, "FLG", 2),
            ("h1", South, "CPT", 3),
            ("d3", North, "COL", 20),
            ("a8", North, "FLG", 21),
            ("h8", North, "CPT", 22),
        ],
        history: &[("d3", "d2")],
        answer: Answer::Play("c2", "d2"),
        required_from: Some(Level::Belief),
    },
];
