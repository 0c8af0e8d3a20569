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
    /// Print the clocks and the opponent's presence as they stand now.
    Clock,
    /// Print the pieces (codes, names, counts) and the board's symbols.
    Legend,
    /// Leave the game for the lobby (the game goes on, as with `quit`).
    Lobby,
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
  clock        the clocks, timeouts and the opponent's presence, now
  legend       the pieces (codes, names, counts) and the board's symbols
  lobby        back to the lobby (the game goes on without you)
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
        "clock" | "clocks" | "time" => no_args(Input::Clock),
        "legend" | "pieces" => no_args(Input::Legend),
        "lobby" | "leave" => no_args(Input::Lobby),
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

/// One line typed in the lobby, understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LobbyInput {
    /// Start a game against the computer.
    Computer {
        /// The rule set's name (canonical, e.g. `gunjin-shogi+y-gates`).
        rules: String,
        /// The seat wanted; `None` lets the server choose (south).
        north: bool,
        /// The computer's level; `None` leaves it to the server (its default level).
        level: Option<hidden_front_bot::Level>,
        /// The time control's name (`online` or `relaxed`, the default).
        time_control: String,
    },
    /// Join a matchmaking queue.
    Match {
        /// The rule set's name.
        rules: String,
        /// The time control's name (`online` or `relaxed`).
        time_control: String,
        /// A rated queue (else casual).
        rated: bool,
    },
    /// Create a private invite.
    Invite {
        /// The rule set's name.
        rules: String,
        /// The time control's name.
        time_control: String,
    },
    /// Accept an invite by its code or link.
    Accept(String),
    /// Spectate a game by its id or link.
    Watch(String),
    /// Open one of the player's own games by id (or the only one in progress).
    Open(Option<String>),
    /// List the player's games.
    Games,
    /// Show the player's rating.
    Rating,
    /// List the rule sets and time controls.
    Rules,
    /// Leave the waiting (queue or invite).
    Cancel,
    /// Wait for the next game an organiser pairs (a tournament's round, a bulk) and open it.
    Next,
    /// List the tournaments open to the player or with the player in them.
    Tournaments,
    /// Enter a tournament.
    Join(String),
    /// Leave a tournament before its start.
    Withdraw(String),
    /// A tournament's standings.
    Standings(String),
    /// Show the lobby's commands.
    Help,
    /// Leave the client.
    Quit,
    /// A blank line.
    Nothing,
}

/// The lobby's commands, as `help` prints them there.
pub const LOBBY_HELP: &str = "\
lobby commands (case does not matter; RULES is junqi (= hidden-front), gunjin (= gunjin-shogi)
or a rule-set name like gunjin-shogi+y-gates; TIME is online or relaxed; `rules` lists them):
  computer [RULES] [LEVEL] [TIME] [north]  play the computer (relaxed time unless online; you are
                                  south unless north; LEVEL: random, greedy, belief, search or expert, the default)
  match [RULES] [TIME] [rated]    find an opponent (casual unless rated; online time unless relaxed)
  invite [RULES] [TIME]           create an invite: prints its link and code, then waits for your friend
  accept CODE|LINK                accept a friend's invite
  watch GAME|LINK                 spectate a game
  games                           your games
  open [GAME]                     go back into one of your games (the only one in progress if none given)
  rating                          your rating
  tournaments                     the tournaments you may join or are in
  join TOURNAMENT                 enter a tournament (until 5 s before its start)
  withdraw TOURNAMENT             leave a tournament before its start
  standings TOURNAMENT            a tournament's rounds and standings
  next                            wait for your next organised game (a tournament round, an
                                  organiser's pairing) and open it when it starts
  rules                           the rule sets and time controls
  cancel                          while waiting: leave the queue, withdraw the invite, stop `next`
  help                            this list
  quit                            leave";

/// The rule sets and time controls, as `rules` prints them.
pub const RULES_LIST: &str = "\
rule sets:
  hidden-front (junqi)     Junqi, 5 x 12 with railways; options +hq-mobile +front-bombs +sturdy-mines
                           +bomb-spares-flag +flag-reveal +no-combat-N
  gunjin-shogi (gunjin)    Gunjin Shogi, 8 x 8, X gates; +y-gates, +i-gates or +23-pieces (6 x 8),
                           options +tank-beats-engineer +mine-survives +no-combat-N
time controls:
  online                   90 s deployment, 30 s a move, 60 s to come back; the third timeout loses
  relaxed                  300 s deployment, 120 s a move, 300 s to come back (the default of invites and
                           computer games)";

/// A rule-set word: the two aliases, or a name the rules engine understands (checked now, so a
/// typo is answered before anything goes to the server).
fn rules_word(word: &str) -> Option<Result<String, String>> {
    let lower = word.to_ascii_lowercase();
    let name = match lower.as_str() {
        "junqi" => "hidden-front".to_string(),
        "gunjin" | "gunjin-shogi" => "gunjin-shogi".to_string(),
        _ if lower.starts_with("hidden-front")
            || lower.starts_with("gunjin")
            || lower.starts_with("junqi+") =>
        {
            let name = if let Some(options) = lower.strip_prefix("junqi+") {
                format!("hidden-front+{options}")
            } else if let Some(options) = lower.strip_prefix("gunjin+") {
                format!("gunjin-shogi+{options}")
            } else {
                lower
            };
            return Some(
                hidden_front_rules::Rules::parse(&name)
                    .map(|r| r.name())
                    .map_err(|e| e.to_string()),
            );
        }
        _ => return None,
    };
    Some(Ok(name))
}

/// Reads the optional words of `computer`, `match` and `invite`, in any order.
struct Options {
    rules: String,
    time_control: Option<String>,
    rated: bool,
    north: bool,
    level: Option<hidden_front_bot::Level>,
}

fn options(command: &str, words: &[&str], allowed: &[&str]) -> Result<Options, String> {
    let mut out = Options {
        rules: "hidden-front".to_string(),
        time_control: None,
        rated: false,
        north: false,
        level: None,
    };
    for word in words {
        let lower = word.to_ascii_lowercase();
        let kind = match lower.as_str() {
            "online" | "relaxed" => "time",
            "rated" | "casual" => "rated",
            "north" | "south" => "seat",
            _ if lower.parse::<hidden_front_bot::Level>().is_ok() => "level",
            _ => "rules",
        };
        if !allowed.contains(&kind) {
            return Err(match kind {
                "time" => format!("`{command}` takes no time control"),
                "rated" => format!("`{command}` is never rated (only `match` queues are)"),
                "seat" => format!("`{command}` takes no seat (the server seats both players)"),
                "level" => format!("`{command}` takes no level (only `computer` does)"),
                _ => format!("`{command}`: {word:?} is not an option"),
            });
        }
        match kind {
            "time" => out.time_control = Some(lower),
            "rated" => out.rated = lower == "rated",
            "seat" => out.north = lower == "north",
            "level" => out.level = lower.parse().ok(),
            _ => match rules_word(word) {
                Some(Ok(name)) => out.rules = name,
                Some(Err(message)) => return Err(message),
                None => {
                    return Err(format!(
                        "{word:?} is not a rule set, time control or option of `{command}` (see `rules`)"
                    ));
                }
            },
        }
    }
    Ok(out)
}

/// Reads one lobby line. `Err` holds a message for the player.
pub fn parse_lobby(line: &str) -> Result<LobbyInput, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some(first) = words.first() else {
        return Ok(LobbyInput::Nothing);
    };
    let rest = &words[1..];
    let keyword = first.to_ascii_lowercase();
    let no_args = |input: LobbyInput| {
        if rest.is_empty() {
            Ok(input)
        } else {
            Err(format!("`{keyword}` takes no arguments"))
        }
    };
    match keyword.as_str() {
        "computer" | "bot" => {
            let o = options("computer", rest, &["rules", "seat", "level", "time"])?;
            Ok(LobbyInput::Computer {
                rules: o.rules,
                north: o.north,
                level: o.level,
                time_control: o.time_control.unwrap_or_else(|| "relaxed".to_string()),
            })
        }
        "match" | "queue" | "find" => {
            let o = options("match", rest, &["rules", "time", "rated"])?;
            Ok(LobbyInput::Match {
                rules: o.rules,
                time_control: o.time_control.unwrap_or_else(|| "online".to_string()),
                rated: o.rated,
            })
        }
        "invite" => {
            let o = options("invite", rest, &["rules", "time"])?;
            Ok(LobbyInput::Invite {
                rules: o.rules,
                time_control: o.time_control.unwrap_or_else(|| "relaxed".to_string()),
            })
        }
        "tournaments" => no_args(LobbyInput::Tournaments),
        "join" => match rest {
            [id] => Ok(LobbyInput::Join(id.to_string())),
            _ => Err(
                "usage: join TOURNAMENT (see `tournaments`; an invite is `accept CODE`)"
                    .to_string(),
            ),
        },
        "withdraw" => match rest {
            [id] => Ok(LobbyInput::Withdraw(id.to_string())),
            _ => Err("usage: withdraw TOURNAMENT".to_string()),
        },
        "standings" => match rest {
            [id] => Ok(LobbyInput::Standings(id.to_string())),
            _ => Err("usage: standings TOURNAMENT".to_string()),
        },
        "accept" => match rest {
            [code] => Ok(LobbyInput::Accept(code.to_string())),
            _ => Err("usage: accept CODE (or the invite's link)".to_string()),
        },
        "watch" | "spectate" => match rest {
            [game] => Ok(LobbyInput::Watch(game_of_link(game))),
            _ => Err("usage: watch GAME_ID (or the game's link)".to_string()),
        },
        "open" | "resume" | "play" => match rest {
            [] => Ok(LobbyInput::Open(None)),
            [game] => Ok(LobbyInput::Open(Some(game_of_link(game)))),
            _ => Err("usage: open [GAME_ID]".to_string()),
        },
        "games" | "list" => no_args(LobbyInput::Games),
        "rating" => no_args(LobbyInput::Rating),
        "rules" => no_args(LobbyInput::Rules),
        "cancel" => no_args(LobbyInput::Cancel),
        "next" => no_args(LobbyInput::Next),
        "help" | "?" => Ok(LobbyInput::Help),
        "quit" | "exit" => no_args(LobbyInput::Quit),
        _ => Err(format!(
            "{:?} is not a lobby command: type `help`",
            words.join(" ")
        )),
    }
}

/// A game id from what the player pasted: the id itself, or a link to the game's page
/// (`http://HOST/game/ID`, `/watch/ID`), whose last path segment is the id.
pub fn game_of_link(text: &str) -> String {
    let text = text.trim();
    if !text.contains('/') {
        return text.to_string();
    }
    let path = text.split(['?', '#']).next().unwrap_or_default();
    path.rsplit('/')
        .find(|segment| !segment.is_empty())
        .unwrap_or_default()
        .to_string()
}

/// The engine's name for a square the player typed, under the game's `rules`: in Gunjin Shogi
/// the two-cell HQ is one node named by both cells (`D8+E8`), while the board labels each cell
/// and a player naturally types one of them (`d8` or `e8`); either cell, in any case, becomes the
/// HQ's name so the referee does not refuse a square the drawing showed. Every other word is
/// passed on as typed (the referee judges it).
pub fn node_name(rules: &str, square: &str) -> String {
    let Some(board) = super::board::GunjinBoard::of_rules(rules) else {
        return square.to_string();
    };
    let lower = square.trim().to_ascii_lowercase();
    let b = lower.as_bytes();
    if b.len() != 2 || !b[0].is_ascii_lowercase() || !(b[1] == b'1' || b[1] == b'8') {
        return square.to_string();
    }
    let (file, rank) = (b[0] - b'a', char::from(b[1]));
    if file != board.hq_file && file != board.hq_file + 1 {
        return square.to_string();
    }
    let west = char::from(b'A' + board.hq_file);
    let east = char::from(b'A' + board.hq_file + 1);
    format!("{west}{rank}+{east}{rank}")
}
