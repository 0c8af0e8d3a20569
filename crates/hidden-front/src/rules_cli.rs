//! `hidden-front rules <verb>`: the rules engine over JSON Lines, for reference checks, scripts
//! and other languages' tools.
//!
//! Every verb that reads stdin answers exactly one line per non-blank input line, in order, and
//! flushes after each, so a caller may drive it interactively. A line that cannot be served
//! answers `{"error": "..."}` and the next line is read as usual; the process exits 0 at end of
//! input.

use crate::rules_json::{
    self, ApplyAnswer, ErrorAnswer, LegalMovesAnswer, RequestLineError, ValidateAnswer,
};
use clap::{Args, Subcommand, ValueEnum};
use hidden_front_rules::{Deployment, GameRng, IllegalMove, Rules, Side};
use serde::Serialize;
use std::io::{self, BufRead, Write};
use thiserror::Error;

/// Arguments of `hidden-front rules`.
#[derive(Debug, Args)]
pub struct RulesArgs {
    /// Which engine question to answer.
    #[command(subcommand)]
    pub verb: RulesVerb,
}

/// The long help of `hidden-front rules`: the shared position format and the line protocol.
pub const RULES_HELP: &str = "\
The rules engine over JSON Lines.

Verbs that read stdin answer exactly one line per non-blank input line, in order, flushing each.
A malformed or illegal line answers {\"error\": \"...\"} and processing goes on; exit 0 at EOF.

Position P:
  {\"variant\": \"hidden-front\", \"to_move\": \"south\", \"plies_without_combat\": 0,
   \"pieces\": [{\"at\": \"B1\", \"side\": \"south\", \"piece\": \"F\"}, ...]}
  variant: optional (default hidden-front; options like hidden-front+hq-mobile+no-combat-60).
  plies_without_combat: optional (default 0), 0..=65535.
  Nodes A1..E12; pieces 9 8 7 6 5 4 3 2 1 B M F; sides south, north. Input may use any case;
  output is uppercase nodes and codes, lowercase sides. Pieces are written in node order.
  Gunjin Shogi: variant gunjin-shogi (options +y-gates +i-gates +23-pieces
  +tank-beats-engineer +mine-survives +no-combat-N); squares a1..h8 (a1..f8 with 23 pieces),
  the HQs d1+e1 and d8+e8 (c1+d1, c8+d8); pieces GEN LTG MJG COL LTC MAJ CPT 1LT 2LT PLA TNK
  CAV ENG SPY MIN FLG; output squares are lowercase.
  Unknown fields are ignored; wrong values, duplicate squares, unknown nodes, codes or sides
  are refused. Any number of pieces is allowed.";

/// The verbs of `hidden-front rules`.
#[derive(Debug, Subcommand)]
pub enum RulesVerb {
    /// Lists the legal moves of the side to move.
    #[command(long_about = "\
Lists the legal moves of the side to move.

Input line:  a position P (see `hidden-front rules --help`).
Output line: {\"moves\": [[\"A6\",\"A7\"], ...]} (any order; [] when the side cannot move).")]
    LegalMoves,
    /// Plays one move and reports the fight and the end of the game.
    #[command(long_about = "\
Plays one move for the side to move and judges it.

Input line:  {\"position\": P, \"move\": [\"A6\",\"A7\"]}
Output line: {\"position\": P2,
              \"combat\": null | {\"attacker_survives\": bool, \"defender_survives\": bool},
              \"outcome\": null | {\"winner\": \"south\"|\"north\"|null,
                                 \"reason\": \"flag_captured\"|\"hq_entered\"|\"no_legal_moves\"|\"no_combat_100\"}}
P2 has the format of P and can be fed back. An illegal move answers {\"error\": \"...\"}.")]
    Apply,
    /// Prints random legal deployments (reads no stdin).
    #[command(long_about = "\
Prints random legal deployments, one per line (reads no stdin).

Output line: {\"variant\": \"hidden-front\", \"side\": \"south\",
              \"pieces\": [{\"at\": \"A1\", \"piece\": \"M\"}, ...]}
The same seed, variant and side always print the same deployments.")]
    RandomDeployment(RandomDeploymentArgs),
    /// Checks deployments and names every problem.
    #[command(long_about = "\
Checks deployments against the rules, naming every problem.

Input line:  {\"variant\"?: \"hidden-front\", \"side\": \"south\",
              \"pieces\": [{\"at\": \"A1\", \"piece\": \"M\"}, ...]}
Output line: {\"valid\": true} or {\"valid\": false, \"problems\": [\"...\", ...]}
Rule problems (camps, counts, empty squares, duplicates, flag/mine/bomb placement, wrong half)
are listed as problems. A line whose JSON, side, variant, node names or piece codes cannot be
read answers {\"error\": \"...\"} instead.")]
    ValidateDeployment,
}

/// Arguments of `hidden-front rules random-deployment`.
#[derive(Debug, Args)]
pub struct RandomDeploymentArgs {
    /// Whose half to fill.
    #[arg(long, value_enum)]
    pub side: SideArg,
    /// Rule set, e.g. hidden-front, hidden-front+front-bombs or gunjin-shogi+y-gates.
    #[arg(long, default_value = "hidden-front", value_parser = parse_rules)]
    pub variant: Rules,
    /// Seed of the random generator (default: from the clock and the OS's hash keys).
    #[arg(long)]
    pub seed: Option<u64>,
    /// How many deployments to print.
    #[arg(long, default_value_t = 1)]
    pub count: u64,
}

/// A side as a command-line value (clap needs its own enum; the engine's stays clap-free).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SideArg {
    /// Rows 1-6.
    South,
    /// Rows 7-12.
    North,
}

impl From<SideArg> for Side {
    fn from(side: SideArg) -> Side {
        match side {
            SideArg::South => Side::South,
            SideArg::North => Side::North,
        }
    }
}

fn parse_rules(name: &str) -> Result<Rules, String> {
    Rules::parse(name).map_err(|e| e.to_string())
}

/// Why one request line was answered with an error.
#[derive(Debug, Error)]
pub enum RequestError {
    /// The line could not be read into engine values.
    #[error(transparent)]
    Wire(#[from] RequestLineError),
    /// The engine refused the move.
    #[error("illegal move {from}-{to}: {source}")]
    Illegal {
        /// Origin node name.
        from: String,
        /// Target node name.
        to: String,
        /// The engine's reason.
        source: IllegalMove,
    },
}

/// Runs one `rules` verb on the process's stdin and stdout. A closed stdout (a reader that went
/// away, as in `| head -1`) ends the run quietly.
pub fn run(args: RulesArgs) -> io::Result<()> {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let result = match args.verb {
        RulesVerb::LegalMoves => serve_lines(stdin.lock(), stdout.lock(), legal_moves),
        RulesVerb::Apply => serve_lines(stdin.lock(), stdout.lock(), apply),
        RulesVerb::ValidateDeployment => {
            serve_lines(stdin.lock(), stdout.lock(), validate_deployment)
        }
        RulesVerb::RandomDeployment(args) => random_deployments(&args, stdout.lock()),
    };
    match result {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Answers every non-blank line of `input` with `answer`, one output line each, flushed.
/// Lines that are not UTF-8 are answered with an error like any other bad line.
pub fn serve_lines<T: Serialize>(
    mut input: impl BufRead,
    mut output: impl Write,
    answer: impl Fn(&str) -> Result<T, RequestError>,
) -> io::Result<()> {
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        if input.read_until(b'\n', &mut buffer)? == 0 {
            return Ok(());
        }
        let reply = match std::str::from_utf8(&buffer) {
            Err(_) => error_line(&RequestError::Wire(RequestLineError::NotUtf8)),
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => match answer(line) {
                Ok(value) => to_line(&value),
                Err(e) => error_line(&e),
            },
        };
        output.write_all(reply.as_bytes())?;
        output.write_all(b"\n")?;
        output.flush()?;
    }
}

/// `legal-moves`: one position in, its side to move's moves out.
pub fn legal_moves(line: &str) -> Result<LegalMovesAnswer, RequestError> {
    let value = rules_json::parse_line(line)?;
    let position = rules_json::position_from_json(&value, "")?;
    let topo = position.topology();
    Ok(LegalMovesAnswer {
        moves: position
            .legal_moves()
            .iter()
            .map(|mv| rules_json::move_to_json(mv, topo))
            .collect(),
    })
}

/// `apply`: a position and a move in; the position after it, the fight and the outcome out.
pub fn apply(line: &str) -> Result<ApplyAnswer, RequestError> {
    let value = rules_json::parse_line(line)?;
    let (mut position, mv) = rules_json::apply_request_from_json(&value)?;
    let topo = position.topology();
    let report = position.play(mv).map_err(|source| RequestError::Illegal {
        from: topo.name(mv.from).to_string(),
        to: topo.name(mv.to).to_string(),
        source,
    })?;
    Ok(ApplyAnswer {
        position: rules_json::position_to_json(&position),
        combat: report.combat.map(Into::into),
        outcome: report.outcome.map(Into::into),
    })
}

/// `validate-deployment`: a deployment in; valid, or every problem, out.
pub fn validate_deployment(line: &str) -> Result<ValidateAnswer, RequestError> {
    let value = rules_json::parse_line(line)?;
    let (rules, deployment) = rules_json::deployment_from_json(&value, "")?;
    Ok(match deployment.validate(&rules) {
        Ok(()) => ValidateAnswer {
            valid: true,
            problems: Vec::new(),
        },
        Err(errors) => ValidateAnswer {
            valid: false,
            problems: errors.0.iter().map(ToString::to_string).collect(),
        },
    })
}

/// `random-deployment`: `count` lines, each a random legal deployment.
pub fn random_deployments(args: &RandomDeploymentArgs, mut output: impl Write) -> io::Result<()> {
    let mut rng = GameRng::from_seed(args.seed.unwrap_or_else(entropy_seed));
    for _ in 0..args.count {
        let deployment = Deployment::random(&args.variant, args.side.into(), &mut rng);
        let line = to_line(&rules_json::deployment_to_json(&args.variant, &deployment));
        output.write_all(line.as_bytes())?;
        output.write_all(b"\n")?;
        output.flush()?;
    }
    Ok(())
}

/// A seed that differs from run to run: the clock, the process id and the standard library's
/// per-process random hash keys (which it takes from the OS). Not for anything secret.
fn entropy_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    hasher.finish()
}

fn to_line<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value)
        .unwrap_or_else(|e| to_line_of_error(&format!("internal error writing the answer: {e}")))
}

fn error_line(error: &RequestError) -> String {
    to_line_of_error(&error.to_string())
}

fn to_line_of_error(message: &str) -> String {
    serde_json::to_string(&ErrorAnswer {
        error: message.to_string(),
    })
    .unwrap_or_else(|_| r#"{"error":"internal error"}"#.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_lines_answers_each_line_and_skips_blank_ones() {
        let input: &[u8] = b"one\n\n  \r\n\xff\xfe\ntwo\r\nthree";
        let mut output = Vec::new();
        serve_lines(input, &mut output, |line| {
            if line.trim() == "two" {
                Err(RequestError::Wire(RequestLineError::Json("bad".into())))
            } else {
                Ok(line.trim().to_string())
            }
        })
        .unwrap();
        let text = String::from_utf8(output).unwrap();
        assert_eq!(
            text,
            "\"one\"\n{\"error\":\"the line is not valid UTF-8 text\"}\n{\"error\":\"malformed JSON: bad\"}\n\"three\"\n"
        );
    }
}
