//! What the player types, parsed into commands before anything goes to the server.
//!
//! Parsing is pure and separate from the network so the grammar can be tested on its own, and so
//! a typo is answered at once with a hint instead of a round trip. Only the shape of a square is
//! checked here (a letter and a row number); whether it is on the board and the move legal is the
//! referee's call.

/// One line of input, understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A move, e.g. `A6 A7`.
    Move {
        /// The square moved from, upper case.
        from: String,
        /// The square moved to, upper case.
        to: String,
    },
    /// Exchange two pieces of the draft deployment.
    Swap {
        /// One square of the draft, upper case.
        a: String,
        /// The other square, upper case.
        b: String,
    },
    /// A fresh random draft.
    Shuffle,
    /// Lock in the draft.
    Confirm,
    /// List own legal moves, optionally only those from one square.
    Moves(Option<String>),
    /// Offer a draw.
    Draw,
    /// Accept the opponent's draw offer.
    Accept,
    /// Decline the opponent's draw offer.
    Decline,
    /// Concede the game.
    Resign,
    /// Fetch the game again and redraw it.
    Board,
    /// Show the commands.
    Help,
    /// Leave the client (the game goes on; the server's clocks decide what absence costs).
    Quit,
    /// A blank line: nothing to do.
    Nothing,
}

/// The commands, as `help` prints them.
pub const HELP: &str = "\
commands (case does not matter):
  A6 A7        move the piece on A6 to A7 (also A6-A7)
  moves [A6]   list your legal moves (only those from A6)
  swap A1 B2   deployment: exchange two pieces of your draft
  shuffle      deployment: a fresh random draft
  confirm      deployment: lock in your draft
  draw         offer a draw
  accept       accept the opponent's draw offer
  decline      decline the opponent's draw offer
  resign       concede the game
  board        fetch the game again and redraw it
  help         this list
  quit         leave (the game goes on without you; its clocks keep running)";

/// Reads one line. `Err` holds a message for the player, with a hint of what was expected.
pub fn parse(line: &str) -> Result<Input, String> {
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || c == '-' || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let Some(first) = words.first() else {
        return Ok(Input::Nothing);
    };
    let rest = &words[1..];
    let keyword = first.to_ascii_lowercase();
    let no_args = |input: Input| {
        if rest.is_empty() {
            Ok(input)
        } else {
            Err(format!("`{keyword}` takes no arguments"))
        }
    };
    match keyword.as_str() {
        "swap" => match rest {
            [a, b] => Ok(Input::Swap {
                a: square(a)?,
                b: square(b)?,
            }),
            _ => Err("usage: swap A1 B2".to_string()),
        },
        "shuffle" | "reshuffle" => no_args(Input::Shuffle),
        "confirm" => no_args(Input::Confirm),
        "moves" | "legal" => match rest {
            [] => Ok(Input::Moves(None)),
            [from] => Ok(Input::Moves(Some(square(from)?))),
            _ => Err("usage: moves [A6]".to_string()),
        },
        "draw" => no_args(Input::Draw),
        "accept" => no_args(Input::Accept),
        "decline" => no_args(Input::Decline),
        "resign" | "concede" => no_args(Input::Resign),
        "board" | "refresh" => no_args(Input::Board),
        "help" | "?" => Ok(Input::Help),
        "quit" | "exit" => no_args(Input::Quit),
        _ => parse_move(&words),
    }
}

/// A move: two squares, or one word holding both (`a6a7`).
fn parse_move(words: &[&str]) -> Result<Input, String> {
    let unknown = || {
        format!(
            "{:?} is not a command: type a move like `A6 A7`, or `help`",
            words.join(" ")
        )
    };
    match words {
        [from, to] if looks_like_square(from) => Ok(Input::Move {
            from: square(from)?,
            to: square(to)?,
        }),
        [both] => {
            // Split after the first square's digits: `a6a7`, `c10c9`.
            let split = both
                .char_indices()
                .skip(1)
                .find(|(_, c)| c.is_ascii_alphabetic())
                .map(|(i, _)| i)
                .ok_or_else(unknown)?;
            let (from, to) = both.split_at(split);
            if !looks_like_square(from) || !looks_like_square(to) {
                return Err(unknown());
            }
            Ok(Input::Move {
                from: square(from)?,
                to: square(to)?,
            })
        }
        _ => Err(unknown()),
    }
}

/// Whether a word has a square's shape: one letter, then one or two digits; or two such joined
/// by `+` (a Gunjin Shogi HQ, `d1+e1`).
fn looks_like_square(word: &str) -> bool {
    if let Some((a, b)) = word.split_once('+') {
        return !b.contains('+') && looks_like_square(a) && looks_like_square(b);
    }
    let mut chars = word.chars();
    let letter = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let digits = chars.as_str();
    letter && (1..=2).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit())
}

/// A square's name in upper case, or a message naming the bad word.
fn square(word: &str) -> Result<String, String> {
    if looks_like_square(word) {
        Ok(word.to_ascii_uppercase())
    } else {
        Err(format!(
            "{word:?} is not a square (squares look like A1 or E12)"
        ))
    }
}
