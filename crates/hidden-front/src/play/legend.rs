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
        "PLA" => "plane (flies along its file, over pieces and the wall)",
        "TNK" => "tank (up to 2 squares straight)",
        "CAV" => "cavalry (moves as the tank)",
        "ENG" => "engineer (slides like a rook)",
        "SPY" => "spy (beats the general, loses to everything else)",
        "MIN" => "mine (never moves)",
        "FLG" => "flag (never moves; fights as the own piece behind it)",
        _ => "",
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
    for (_, code, count) in parsed.kinds() {
        let _ = write!(out, "  {code:<4} x{count:<2} {}", name(code));
        if let Some(n) = own_count(code) {
            let _ = write!(out, "  [yours on the board: {n}]");
        }
        out.push('\n');
    }
    out.push_str(
        "an opponent piece is ? until a fight or the end reveals it; then it is marked *\n",
    );
    match parsed.family {
        Family::Junqi => {
            out.push_str(JUNQI_SYMBOLS);
            out.push_str(
                "\n  railway: along ═ ║ a piece runs any distance in a straight line (an engineer turns corners)\
                 \n  road: - | and the camps' diagonals \\ / are one step\
                 \n  ( ) camp: a piece there cannot be attacked;  [ ] HQ: the flag stands in one; a piece there stays\
                 \n  ^^^ mountains: B6-B7 and D6-D7 are not linked; the front is crossed at A, C and E",
            );
        }
        Family::GunjinShogi => {
            let hq = super::board::GunjinBoard::of_rules(&parsed.name()).map_or(3, |b| b.hq_file);
            let (west, east) = (char::from(b'a' + hq), char::from(b'a' + hq + 1));
            let _ = write!(
                out,
                "legend: [ ] HQ (two cells, one square)  ==== wall  || gate  ++ gate (one side)  . empty  ? hidden  * revealed\
                 \n  the wall between ranks 4 and 5 is crossed only at the gates (the plane flies over it)\
                 \n  [ ][ ] the HQ is one square named by both cells ({west}1+{east}1, {west}8+{east}8); GEN..MAJ entering the enemy HQ win",
            );
        }
    }
    out.push('\n');
    out
}
