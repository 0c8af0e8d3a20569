//! The legend: every piece of the game being played with its code, its name and how many each
//! side has, and the symbols of the drawing, so a newcomer can read the board without the rule
//! pages at hand. Codes and counts come from the rules engine's own tables; the names are the
//! rule pages' English ones.

use super::board::{JUNQI_SYMBOLS, own_side};
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Family, Rules};
use std::fmt::Write as _;

/// The English name of a piece code, as the rule pages give it.
fn name(code: &str) -> &'static str {
    match code {
        "9" => "commander-in-chief (strongest)",
        "8" => "corps commander",
        "7" => "division commander",
        "6" => "brigade commander",
        "5" => "regiment commander",
        "4" => "battalion commander",
        "3" => "company commander",
        "2" => "platoon commander",
        "1" => "engineer (turns corners on rails, clears mines)",
        "B" => "bomb (removed with whatever it meets)",
        "M" => "mine (never moves; only an engineer clears it)",
        "F" => "flag (never moves; capture it to win)",
        "GEN" => "general (beaten only by the spy)",
        "LTG" => "lieutenant general",
        "MJG" => "major general",
        "COL" => "colonel",
        "LTC" => "lieutenant colonel",
        "MAJ" => "major",
        "CPT" => "captain",
        "1LT" => "first lieutenant",
        "2LT" => "second lieutenant",
        "PLA" => "plane (flies along its file, over pieces and wall)",
        "TNK" => "tank (up to 2 squares straight)",
        "CAV" => "cavalry (moves as the tank)",
        "ENG" => "engineer (slides like a rook)",
        "SPY" => "spy (beats the general, loses to everything else)",
        "MIN" => "mine (never moves)",
        "FLG" => "flag (never moves; fights as the piece behind it)",
        _ => "",
    }
}

/// What a `?` means, as the rules say it: a fight tells only which pieces survived (by id and
/// square), never a kind, so an opponent's `?` stays unknown however often it fights; every piece
/// is shown when the game ends, and under `flag-reveal` a side's flag is shown once its
/// commander-in-chief is removed.
fn unknown_pieces(family: Family, flag_reveal: bool) -> &'static str {
    match (family, flag_reveal) {
        (Family::Junqi, true) => {
            "an opponent piece stays ?: a fight tells who survived, never a rank. Every piece\n\
             is shown when the game ends; a side's flag is shown once its 9 is removed\n\
             (flag-reveal). * marks an opponent piece whose kind is shown\n"
        }
        _ => {
            "an opponent piece stays ?: a fight tells who survived, never a rank. Every piece\n\
             is shown when the game ends. * marks an opponent piece whose kind is shown\n"
        }
    }
}

/// The legend for a game under `rules`, with the viewer's own pieces still on the board counted
/// from `view` when given (the opponent's are not known, so they are not counted).
pub fn legend(rules: &str, view: Option<&pb::GameView>) -> String {
    let parsed = Rules::parse(rules).unwrap_or_default();
    let me = view.and_then(own_side);
    let own_count = |code: &str| -> Option<usize> {
        let view = view?;
        let me = me?;
        let on_board = view
            .pieces
            .iter()
            .filter(|p| p.side() == me && p.piece.eq_ignore_ascii_case(code))
            .count();
        let drafted = view.own_deployment.as_ref().map_or(0, |d| {
            d.placements
                .iter()
                .filter(|p| p.piece.eq_ignore_ascii_case(code))
                .count()
        });
        Some(on_board.max(drafted))
    };
    let mut out = format!(
        "pieces of {} ({} a side, strongest first):\n",
        parsed.name(),
        parsed.pieces_per_side()
    );
    if out.chars().count() > 81 {
        // A rule set with many options: its name on lines of its own, broken before a `+`,
        // so the legend keeps to 80 columns like the board.
        out = format!(
            "pieces ({} a side, strongest first) of:\n",
            parsed.pieces_per_side()
        );
        let mut line = String::from(" ");
        for (i, part) in parsed.name().split('+').enumerate() {
            let part = if i == 0 {
                part.to_string()
            } else {
                format!("+{part}")
            };
            if line.chars().count() + part.chars().count() > 80 {
                out.push_str(&line);
                out.push('\n');
                line = String::from(" ");
            }
            line.push_str(&part);
        }
        out.push_str(&line);
        out.push('\n');
    }
    for (_, code, count) in parsed.kinds() {
        let _ = write!(out, "  {code:<4} x{count:<2} {}", name(code));
        if let Some(n) = own_count(code) {
            let _ = write!(out, "  [yours left: {n}]");
        }
        out.push('\n');
    }
    out.push_str(unknown_pieces(
        parsed.family,
        parsed.flag_revealed_when_commander_dies,
    ));
    match parsed.family {
        Family::Junqi => {
            out.push_str(JUNQI_SYMBOLS);
            out.push_str(
                "\n  railway: along ═ ║ a piece runs any distance straight (an engineer turns)\
                 \n  road: - | and the camps' diagonals \\ / are one step\
                 \n  ( ) camp: a piece there cannot be attacked\
                 \n  [ ] HQ: the flag stands in one; a piece that enters stays\
                 \n  ^^^ mountains: B6-B7 and D6-D7 are not linked; cross the front at A, C, E\
                 \n  rows 1-2 and 11-12 are joined by a road in every column (no line drawn)",
            );
        }
        Family::GunjinShogi => {
            let board = super::board::GunjinBoard::of_rules(&parsed.name());
            let hq = board.as_ref().map_or(3, |b| b.hq_file);
            let gates = board.as_ref().map_or("?", |b| b.gates.as_str());
            let (west, east) = (char::from(b'a' + hq), char::from(b'a' + hq + 1));
            let _ = write!(
                out,
                "legend: [ ] HQ (two cells, one square)  ==== wall  || gate  ++ gate (one way)\
                 \n  . empty  ? hidden  * opponent's piece shown\
                 \n  the wall between ranks 4 and 5 is crossed only at the gates (the plane flies\
                 \n  over it): {gates}\
                 \n  [ ][ ] the HQ is one square: type either cell ({west}8 or {east}8) or {west}8+{east}8\
                 \n  GEN..MAJ entering the enemy HQ win",
            );
        }
    }
    out.push('\n');
    out
}
