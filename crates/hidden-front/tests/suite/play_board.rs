//! The terminal client's drawing (`hidden-front play`), checked on hand-built views: own pieces by
//! code, the opponent's as `?`, the board turned for each seat, camps and HQs framed, railways and
//! roads drawn apart (from the rules engine's own links), the status and clock lines, the legend,
//! and odd server data drawn without a panic.

use hidden_front::play::board::{Combat, LastMove, Square, describe_event, render, render_at};
use hidden_front::play::clock::clock_lines;
use hidden_front::play::legend::legend;
use hidden_front_proto::v1 as pb;

fn piece(square: &str, side: pb::Side, code: &str) -> pb::VisiblePiece {
    pb::VisiblePiece {
        square: square.to_string(),
        side: side as i32,
        id: 0,
        piece: code.to_string(),
    }
}

/// A play-phase view for `viewer`: south at the front with a few pieces, north hidden.
fn play_view(viewer: pb::Viewer, pieces: Vec<pb::VisiblePiece>) -> pb::GameView {
    pb::GameView {
        game_id: "g1".to_string(),
        version: 17,
        viewer: viewer as i32,
        rules: "hidden-front".to_string(),
        phase: pb::Phase::Play as i32,
        first_mover: pb::Side::South as i32,
        to_move: pb::Side::South as i32,
        plies: 12,
        plies_without_combat: 3,
        south_timeouts: 0,
        north_timeouts: 1,
        pieces,
        south_player: "alice".to_string(),
        north_player: "bob".to_string(),
        ..Default::default()
    }
}

/// What a south player sees: own codes, north as `?`.
fn south_pieces() -> Vec<pb::VisiblePiece> {
    vec![
        piece("A6", pb::Side::South, "9"),
        piece("B1", pb::Side::South, "F"),
        piece("A1", pb::Side::South, "M"),
        piece("C4", pb::Side::South, "3"),
        piece("E2", pb::Side::South, "1"),
        piece("A7", pb::Side::North, ""),
        piece("D12", pb::Side::North, ""),
        piece("B10", pb::Side::North, ""),
    ]
}

/// The board lines of a drawing, top to bottom: the 12 lines that start with a row number.
fn board_rows(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.len() > 4 && l[..4].trim().parse::<u8>().is_ok() && l.as_bytes()[3] == b' ')
        .collect()
}

/// The column header's position (in characters) of `letter`.
fn column_at(text: &str, letter: char) -> usize {
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with(['A', 'E']) && l.contains("  C  "))
        .expect("a column header");
    header.find(letter).expect("column in header")
}

/// A line as characters, padded, so positions count characters (the rails are not ASCII).
fn chars(line: &str) -> Vec<char> {
    let mut chars: Vec<char> = line.chars().collect();
    chars.resize(chars.len().max(60), ' ');
    chars
}

/// The five characters drawn for `square`: frame, blank, glyph, mark, frame.
fn cell(text: &str, square: &str) -> String {
    let sq = Square::parse(square).expect("a square");
    let at = column_at(text, char::from(b'A' + sq.col));
    let row = board_rows(text)
        .into_iter()
        .find(|l| l[..3].trim() == sq.row.to_string())
        .expect("the row");
    chars(row)[at - 2..at + 3].iter().collect()
}

/// The line of links drawn under row `row` (towards the viewer).
fn links_under(text: &str, row: u8) -> &str {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.len() > 4 && l[..3].trim() == row.to_string() && l.as_bytes()[3] == b' ')
        .expect("the row");
    lines[at + 1]
}

#[test]
fn south_sees_own_codes_at_the_bottom_and_north_hidden_at_the_top() {
    let text = render(&play_view(pb::Viewer::South, south_pieces()), None);
    let rows = board_rows(&text);
    assert_eq!(rows.len(), 12, "{text}");
    assert!(rows[0].trim_start().starts_with("12"), "{text}");
    assert!(rows[11].trim_start().starts_with("1 "), "{text}");
    assert_eq!(cell(&text, "A6"), "  9  ");
    assert_eq!(cell(&text, "E2"), "  1  ");
    assert_eq!(cell(&text, "A1"), "  M  ");
    assert_eq!(cell(&text, "A7"), "  ?  ");
    assert_eq!(cell(&text, "C5"), "  .  ");
    // Columns run A to E left to right.
    let header = text.lines().find(|l| l.contains("  C  ")).unwrap();
    assert!(header.find('A') < header.find('E'), "{text}");
    // The north player's name beside the top row, south's (the viewer's) beside the bottom one.
    assert!(rows[0].ends_with("north: bob"), "{text}");
    assert!(rows[11].ends_with("south: alice (you)"), "{text}");
}

#[test]
fn camps_and_hqs_are_framed_with_or_without_a_piece() {
    let text = render(&play_view(pb::Viewer::South, south_pieces()), None);
    assert_eq!(cell(&text, "C4"), "( 3 )");
    assert_eq!(cell(&text, "B10"), "( ? )");
    for camp in ["B3", "D3", "B5", "D5", "B8", "D8", "C9", "D10"] {
        assert_eq!(cell(&text, camp), "( . )", "{camp}\n{text}");
    }
    assert_eq!(cell(&text, "B1"), "[ F ]");
    assert_eq!(cell(&text, "D1"), "[ . ]");
    assert_eq!(cell(&text, "B12"), "[ . ]");
    assert_eq!(cell(&text, "D12"), "[ ? ]");
    for plain in ["A3", "C3", "B4", "C8", "E12"] {
        assert!(!cell(&text, plain).contains(['(', '[']), "{plain}\n{text}");
    }
}

#[test]
fn the_front_line_lies_between_rows_6_and_7_with_three_crossings() {
    let text = render(&play_view(pb::Viewer::South, south_pieces()), None);
    let lines: Vec<&str> = text.lines().collect();
    let seven = lines.iter().position(|l| l.starts_with("  7 ")).unwrap();
    let front = lines[seven + 1];
    assert!(lines[seven + 2].starts_with("  6 "), "{text}");
    assert!(front.contains("front line: cross at A, C, E"), "{front}");
    let front = chars(front);
    for (col, crossing) in [
        ('A', true),
        ('B', false),
        ('C', true),
        ('D', false),
        ('E', true),
    ] {
        let at = column_at(&text, col);
        // The three crossings are railways; B and D are mountains.
        let mark = if crossing { '║' } else { '^' };
        assert_eq!(front[at], mark, "column {col}: {front:?}");
    }
    assert_eq!(front.iter().filter(|&&c| c == '║').count(), 3);
}

#[test]
fn north_sees_the_board_turned_round() {
    let mut pieces = vec![
        piece("A7", pb::Side::North, "7"),
        piece("B12", pb::Side::North, "F"),
        piece("A6", pb::Side::South, ""),
    ];
    pieces.push(piece("E11", pb::Side::North, "M"));
    let mut view = play_view(pb::Viewer::North, pieces);
    view.to_move = pb::Side::North as i32;
    let text = render(&view, None);
    let rows = board_rows(&text);
    assert!(rows[0].trim_start().starts_with("1 "), "{text}");
    assert!(rows[11].trim_start().starts_with("12"), "{text}");
    let header = text.lines().find(|l| l.contains("  C  ")).unwrap();
    assert!(header.find('E') < header.find('A'), "{text}");
    assert_eq!(cell(&text, "A7"), "  7  ");
    assert_eq!(cell(&text, "B12"), "[ F ]");
    assert_eq!(cell(&text, "A6"), "  ?  ");
    // E11 is on the left of north's second row from the bottom.
    assert_eq!(cell(&text, "E11"), "  M  ");
    assert_eq!(rows[10].split_whitespace().nth(1), Some("M"), "{text}");
    assert!(text.contains("north: bob (you)"));
    assert!(text.find("south: alice").unwrap() < text.find("north: bob (you)").unwrap());
    assert!(
        text.contains("your move, no clock (`moves` lists them)"),
        "{text}"
    );
}

#[test]
fn revealed_opponent_pieces_are_marked() {
    let mut pieces = south_pieces();
    pieces.push(piece("D11", pb::Side::North, "F"));
    pieces.push(piece("C11", pb::Side::North, "8"));
    let text = render(&play_view(pb::Viewer::South, pieces), None);
    assert_eq!(cell(&text, "D11"), "  F* ");
    assert_eq!(cell(&text, "C11"), "  8* ");
    assert_eq!(cell(&text, "A6"), "  9  ");
}

#[test]
fn status_lines_tell_turn_counters_offer_and_last_move() {
    let mut view = play_view(pb::Viewer::South, south_pieces());
    view.draw_offer = pb::Side::North as i32;
    let last = LastMove {
        side: pb::Side::North,
        from: "A8".into(),
        to: "A7".into(),
        piece: String::new(),
        combat: Some(Combat {
            defender_piece: "5".into(),
            attacker_survives: true,
            defender_survives: false,
            ..Default::default()
        }),
        ..Default::default()
    };
    view.time_control = Some(pb::TimeControl {
        name: "online".into(),
        deployment_seconds: 90,
        move_seconds: 30,
        reconnect_seconds: 60,
    });
    let text = render(&view, Some(&last));
    assert!(text.contains("online: 90/30/60 s"), "{text}");
    assert!(
        text.contains("your move, no clock (`moves` lists them)"),
        "{text}"
    );
    assert!(text.contains("plies 12, 3 without combat"), "{text}");
    assert!(text.contains("timeouts: S 0, N 1 of 3"), "{text}");
    assert!(
        text.contains("; north offers a draw (accept/decline)"),
        "{text}"
    );
    assert!(
        text.contains("last move: north ? A8-A7 attacked 5: attacker survived, defender removed"),
        "{text}"
    );
    assert!(!text.contains("result:"), "{text}");

    view.draw_offer = pb::Side::South as i32;
    let own_move = LastMove {
        side: pb::Side::South,
        from: "A6".into(),
        to: "A7".into(),
        piece: "9".into(),
        combat: None,
        ..Default::default()
    };
    let text = render(&view, Some(&own_move));
    assert!(text.contains("; your draw offer waits"), "{text}");
    assert!(text.contains("last move: south (you) 9 A6-A7\n"), "{text}");
}

#[test]
fn deployment_shows_the_own_draft_and_the_commands() {
    let view = pb::GameView {
        game_id: "g2".into(),
        version: 3,
        viewer: pb::Viewer::North as i32,
        phase: pb::Phase::Deployment as i32,
        north_confirmed: false,
        south_confirmed: true,
        own_deployment: Some(pb::Deployment {
            side: pb::Side::North as i32,
            placements: vec![
                pb::Placement {
                    square: "B12".into(),
                    piece: "F".into(),
                },
                pb::Placement {
                    square: "A12".into(),
                    piece: "M".into(),
                },
                pb::Placement {
                    square: "C7".into(),
                    piece: "9".into(),
                },
            ],
        }),
        south_player: "alice".into(),
        north_player: "bob".into(),
        ..Default::default()
    };
    let text = render(&view, None);
    assert_eq!(cell(&text, "B12"), "[ F ]");
    assert_eq!(cell(&text, "A12"), "  M  ");
    assert_eq!(cell(&text, "C7"), "  9  ");
    assert_eq!(cell(&text, "C6"), "  .  ");
    assert!(
        text.contains("deployment, no clock: south confirmed, north (you) not confirmed"),
        "{text}"
    );
    assert!(text.contains("swap A1 B2 | shuffle | confirm"), "{text}");
}

#[test]
fn the_outcome_is_told_once_ended() {
    let mut view = play_view(pb::Viewer::North, south_pieces());
    view.phase = pb::Phase::Ended as i32;
    view.to_move = pb::Side::Unspecified as i32;
    view.outcome = Some(pb::Outcome {
        winner: pb::Side::South as i32,
        reason: pb::EndReason::FlagCaptured as i32,
    });
    let text = render(&view, None);
    assert!(
        text.contains("result: south wins (flag captured) - you lose"),
        "{text}"
    );

    view.outcome = Some(pb::Outcome {
        winner: pb::Side::Unspecified as i32,
        reason: pb::EndReason::AgreedDraw as i32,
    });
    assert!(render(&view, None).contains("result: draw (draw agreed)"));
}

#[test]
fn odd_server_data_is_drawn_as_unknown_not_a_panic() {
    let mut view = play_view(
        pb::Viewer::South,
        vec![
            piece("A6", pb::Side::South, "X"),
            piece("A5", pb::Side::South, "10"),
            piece("a4", pb::Side::South, "b"),
            piece("Z99", pb::Side::North, "7"),
            piece("", pb::Side::North, ""),
            piece("A13", pb::Side::North, ""),
            pb::VisiblePiece {
                square: "\u{1b}[2J".into(),
                side: 77,
                id: 1,
                piece: "\u{0}".into(),
            },
        ],
    );
    view.viewer = 42;
    view.phase = 9;
    view.to_move = -3;
    view.draw_offer = 1000;
    view.outcome = Some(pb::Outcome {
        winner: 5,
        reason: 99,
    });
    let text = render(&view, None);
    assert_eq!(cell(&text, "A6"), "  ?  ");
    assert_eq!(cell(&text, "A5"), "  ?  ");
    assert_eq!(cell(&text, "A4"), "  B  ");
    assert!(
        text.contains("not on this board: Z99=7 (none)=? A13=? ?[2J=?"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "control characters must not reach the terminal"
    );
    assert_eq!(board_rows(&text).len(), 12);

    let empty = render(&pb::GameView::default(), None);
    assert_eq!(board_rows(&empty).len(), 12, "{empty}");
}

#[test]
fn events_read_as_one_line_each() {
    use pb::game_event::Event as E;
    let event = |seq, e| pb::GameEvent {
        game_id: "g1".into(),
        seq,
        event: Some(e),
    };
    let me = Some(pb::Side::South);
    let moved = event(
        20,
        E::Moved(pb::Moved {
            side: pb::Side::South as i32,
            r#move: Some(pb::Move {
                from: "A6".into(),
                to: "A7".into(),
            }),
            piece_id: 4,
            piece: "9".into(),
            combat: Some(pb::CombatView {
                defender_id: 9,
                defender_piece: String::new(),
                attacker_survives: true,
                defender_survives: false,
                flag_captured: false,
            }),
            flag_reveals: vec![],
        }),
    );
    assert_eq!(
        describe_event(&moved, me),
        "#20 moved: south (you) 9 A6-A7 attacked ?: attacker survived, defender removed"
    );
    let offered = event(
        21,
        E::DrawOffered(pb::DrawOffered {
            side: pb::Side::North as i32,
        }),
    );
    assert_eq!(describe_event(&offered, me), "#21 north offers a draw");
    let ended = event(
        22,
        E::Ended(pb::GameEnded {
            outcome: Some(pb::Outcome {
                winner: pb::Side::North as i32,
                reason: pb::EndReason::Resigned as i32,
            }),
            pieces: vec![],
            reveal: None,
        }),
    );
    assert_eq!(
        describe_event(&ended, me),
        "#22 game over: north wins (resigned) - you lose"
    );
    let unknown = pb::GameEvent {
        game_id: "g1".into(),
        seq: 23,
        event: None,
    };
    assert!(describe_event(&unknown, me).starts_with("#23 "));
    let no_move = event(24, E::Moved(pb::Moved::default()));
    assert_eq!(describe_event(&no_move, me), "#24 ? moved");
}

#[test]
fn squares_parse_case_insensitively_and_only_on_this_board() {
    assert_eq!(Square::parse("a1"), Some(Square { col: 0, row: 1 }));
    assert_eq!(Square::parse(" E12 "), Some(Square { col: 4, row: 12 }));
    for bad in ["", "A", "A0", "A13", "F1", "1A", "AA1", "A1x", "A001", "Ä1"] {
        assert_eq!(Square::parse(bad), None, "{bad:?}");
    }
    assert_eq!(Square { col: 2, row: 10 }.name(), "C10");
}

#[test]
fn railways_roads_and_camp_diagonals_are_drawn_apart() {
    let text = render(&play_view(pb::Viewer::South, south_pieces()), None);
    let row = |n: u8| {
        board_rows(&text)
            .into_iter()
            .find(|l| l[..3].trim() == n.to_string())
            .unwrap()
    };
    // Rows 2, 6, 7 and 11 are railways end to end; rows 1 and 12 are roads.
    for rail in [2, 6, 7, 11] {
        assert_eq!(row(rail).matches('═').count(), 12, "row {rail}:\n{text}");
        assert!(!row(rail).contains('-'), "row {rail}:\n{text}");
    }
    for road in [1, 12] {
        assert_eq!(row(road).matches("---").count(), 4, "row {road}:\n{text}");
        assert!(!row(road).contains('═'), "{text}");
    }
    // Columns A and E are railways from row 2 to row 11; column C only across the front.
    let (a, c, e) = (
        column_at(&text, 'A'),
        column_at(&text, 'C'),
        column_at(&text, 'E'),
    );
    for r in 2..=10 {
        let under = chars(links_under(&text, r + 1));
        assert_eq!((under[a], under[e]), ('║', '║'), "under {}:\n{text}", r + 1);
    }
    // Rows 1-2 and 11-12 are roads in every column and nothing else: no line is spent on them
    // (the legend says so), so the board fits a 24-row terminal.
    assert!(links_under(&text, 2).starts_with("  1 "), "{text}");
    assert!(links_under(&text, 12).starts_with(" 11 "), "{text}");
    assert!(
        legend("hidden-front", None).contains("rows 1-2 and 11-12 are joined by a road"),
        "{text}"
    );
    assert_eq!(chars(links_under(&text, 4))[c], '|', "C3-C4 is a road");
    assert_eq!(chars(links_under(&text, 7))[c], '║', "C6-C7 is a railway");
    // The camp B3's diagonals: A4 / B3 \ C2 and so on, drawn in the gaps.
    let gap_ab = (a + column_at(&text, 'B')) / 2;
    let gap_bc = (column_at(&text, 'B') + c) / 2;
    assert_eq!(chars(links_under(&text, 4))[gap_ab], '\\', "A4-B3:\n{text}");
    assert_eq!(chars(links_under(&text, 3))[gap_ab], '/', "A2-B3:\n{text}");
    assert_eq!(chars(links_under(&text, 3))[gap_bc], '\\', "B3-C2:\n{text}");
    // The legend names every symbol.
    assert!(
        legend("hidden-front", None)
            .contains("legend: ═ ║ railway  - | \\ / road  ( ) camp  [ ] HQ  ^^^ mountain"),
        "{text}"
    );
    // Turned round for north, the rails stay where they are on the board.
    let north = render(&play_view(pb::Viewer::North, south_pieces()), None);
    let c = column_at(&north, 'C');
    assert_eq!(chars(links_under(&north, 6))[c], '║', "C6-C7:\n{north}");
}

#[test]
fn the_legend_names_the_pieces_with_their_counts() {
    let text = legend(
        "hidden-front",
        Some(&play_view(pb::Viewer::South, south_pieces())),
    );
    assert!(text.contains("pieces of hidden-front (25 a side"), "{text}");
    assert!(
        text.contains("  9    x1  commander-in-chief (strongest)  [yours left: 1]"),
        "{text}"
    );
    assert!(text.contains("  M    x3  mine"), "{text}");
    assert!(text.contains("  1    x3  engineer"), "{text}");
    assert!(text.contains("  F    x1  flag"), "{text}");
    assert!(text.contains("═ ║ railway"), "{text}");
    assert!(text.contains("mountains"), "{text}");

    let gunjin = legend("gunjin-shogi+23-pieces", None);
    assert!(
        gunjin.contains("pieces of gunjin-shogi+23-pieces (23 a side"),
        "{gunjin}"
    );
    assert!(gunjin.contains("  GEN  x1  general"), "{gunjin}");
    assert!(gunjin.contains("  TNK  x2  tank"), "{gunjin}");
    assert!(gunjin.contains("==== wall"), "{gunjin}");
    assert!(!gunjin.contains("yours"), "{gunjin}");
}

#[test]
fn the_clock_counts_down_from_the_deadline_and_tells_presence() {
    let now = 1_000_000_000_000;
    let mut view = play_view(pb::Viewer::South, south_pieces());
    view.turn_deadline_unix_millis = now + 27_400;
    view.south_connected = true;
    view.north_connected = false;
    view.north_away_deadline_unix_millis = now + 42_000;
    let lines = clock_lines(&view, now);
    assert_eq!(
        lines,
        [
            "clock: south (you) to move, 28 s left (at 0 it is a timeout and the turn passes)",
            "timeouts used: south 0 of 3, north 1 of 3 (3 lose the game)",
            "opponent away: 42 s (then north loses for being away)",
        ]
    );
    // Printed with the board, read at the time given.
    let text = render_at(&view, None, now + 20_000);
    assert!(text.contains("your move: 8 s left"), "{text}");
    assert!(text.contains("opponent away: 22 s"), "{text}");
    // Past the deadline: zero, and the server decides.
    assert!(clock_lines(&view, now + 60_000)[0].contains("0 s left (time is up"));

    view.north_connected = true;
    assert_eq!(clock_lines(&view, now)[2], "opponent connected");
    // A spectator sees both seats.
    view.viewer = pb::Viewer::Spectator as i32;
    view.south_connected = false;
    view.south_away_deadline_unix_millis = now + 5_000;
    assert_eq!(
        clock_lines(&view, now)[2],
        "presence: south away: 5 s (then south loses for being away), north connected"
    );

    // Deployment: its own countdown; ended: no clock at all.
    view.phase = pb::Phase::Deployment as i32;
    view.turn_deadline_unix_millis = now + 90_000;
    assert!(clock_lines(&view, now)[0].starts_with("clock: deployment closes in 90 s"));
    view.phase = pb::Phase::Ended as i32;
    assert!(clock_lines(&view, now).is_empty());
}

/// Prints a sample board (for the eye: `cargo test -p hidden-front --test suite -- --nocapture play_board::sample`).
#[test]
fn sample() {
    let mut pieces = south_pieces();
    pieces.push(piece("C11", pb::Side::North, "8"));
    let last = LastMove {
        side: pb::Side::North,
        from: "A8".into(),
        to: "A7".into(),
        piece: String::new(),
        combat: None,
        ..Default::default()
    };
    println!(
        "{}",
        render(&play_view(pb::Viewer::South, pieces), Some(&last))
    );
}

/// The rows and the widest line (in characters, as a terminal counts them) of a drawing.
fn size(text: &str) -> (usize, usize) {
    let lines: Vec<&str> = text.trim_end_matches('\n').lines().collect();
    let width = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    (lines.len(), width)
}

#[test]
fn the_board_and_its_status_fit_an_80_by_24_terminal() {
    // The longest status this drawing can have: a fight, a draw offer, a deadline, long names.
    let mut view = play_view(pb::Viewer::South, south_pieces());
    view.south_player = "a-player-name-of-sixty-four-characters-which-is-the-longest-kept".into();
    view.north_player = view.south_player.clone();
    view.rules =
        "hidden-front+hq-mobile+front-bombs+sturdy-mines+bomb-spares-flag+flag-reveal".into();
    view.draw_offer = pb::Side::North as i32;
    view.turn_deadline_unix_millis = hidden_front::play::clock::now_unix_millis() + 120_000;
    view.time_control = Some(pb::TimeControl {
        name: "relaxed".into(),
        deployment_seconds: 300,
        move_seconds: 120,
        reconnect_seconds: 300,
    });
    let fight = LastMove {
        side: pb::Side::North,
        from: "C10".into(),
        to: "C11".into(),
        piece: "9".into(),
        combat: Some(Combat {
            defender_piece: "F".into(),
            attacker_survives: true,
            defender_survives: false,
            ..Default::default()
        }),
        ..Default::default()
    };
    for viewer in [pb::Viewer::South, pb::Viewer::North, pb::Viewer::Spectator] {
        view.viewer = viewer as i32;
        let text = render(&view, Some(&fight));
        let (rows, width) = size(&text);
        assert_eq!(board_rows(&text).len(), 12, "{text}");
        // 1 header, 12 rows of nodes, 9 rows of links, 2 of status.
        assert!(rows <= 24, "{rows} rows for {viewer:?}:\n{text}");
        assert!(width <= 80, "{width} columns for {viewer:?}:\n{text}");
        assert!(
            !text.contains("legend:"),
            "the legend is printed on `legend`:\n{text}"
        );
    }
    view.phase = pb::Phase::Deployment as i32;
    view.viewer = pb::Viewer::South as i32;
    let (rows, width) = size(&render(&view, None));
    assert!(rows <= 24 && width <= 80, "deployment: {rows} x {width}");
    view.phase = pb::Phase::Ended as i32;
    view.outcome = Some(pb::Outcome {
        winner: pb::Side::North as i32,
        reason: pb::EndReason::FlagCaptured as i32,
    });
    let (rows, width) = size(&render(&view, Some(&fight)));
    assert!(rows <= 24 && width <= 80, "ended: {rows} x {width}");
    // The legend, printed on demand, keeps to 80 columns too.
    let (_, width) = size(&legend(&view.rules, Some(&view)));
    assert!(width <= 80, "legend: {width} columns");
    let mut gunjin = view.clone();
    gunjin.rules = "gunjin-shogi".into();
    gunjin.pieces = vec![piece("b2", pb::Side::South, "PLA")];
    let text = legend(&gunjin.rules, Some(&gunjin));
    assert!(text.contains("[yours left: 1]"), "{text}");
    let (_, width) = size(&text);
    assert!(width <= 80, "legend: {width} columns:\n{text}");
}

#[test]
fn after_the_end_the_last_move_names_the_revealed_kinds() {
    // A spectator was told the last fight by ids only.
    let mut view = play_view(pb::Viewer::Spectator, south_pieces());
    view.phase = pb::Phase::Ended as i32;
    view.outcome = Some(pb::Outcome {
        winner: pb::Side::South as i32,
        reason: pb::EndReason::FlagCaptured as i32,
    });
    let last = LastMove {
        side: pb::Side::South,
        piece_id: 31,
        from: "D11".into(),
        to: "D12".into(),
        piece: String::new(),
        combat: Some(Combat {
            defender_id: 7,
            defender_piece: String::new(),
            attacker_survives: true,
            defender_survives: false,
        }),
    };
    let hidden = render(&view, Some(&last));
    assert!(
        hidden.contains("last move: south ? D11-D12 attacked ?: attacker survived"),
        "{hidden}"
    );
    let start = |id, side, code: &str| pb::VisiblePiece {
        square: "A1".into(),
        side: side as i32,
        id,
        piece: code.into(),
    };
    view.reveal = Some(pb::EndReveal {
        deployments: vec![],
        starting_pieces: vec![
            start(31, pb::Side::South, "7"),
            start(7, pb::Side::North, "F"),
            // The same id on the wrong side is not taken for the defender.
            start(7, pb::Side::South, "B"),
        ],
    });
    let revealed = render(&view, Some(&last));
    assert!(
        revealed
            .contains("last move: south 7 D11-D12 attacked F: attacker survived, defender removed"),
        "{revealed}"
    );
    // A reveal without those ids leaves the move as it was told.
    view.reveal = Some(pb::EndReveal::default());
    assert!(render(&view, Some(&last)).contains("south ? D11-D12 attacked ?"));
}

#[test]
fn the_legend_says_what_a_fight_tells() {
    let text = legend("hidden-front", None);
    assert!(
        !text.contains("until a fight"),
        "a fight reveals no rank in these rules:\n{text}"
    );
    assert!(
        text.contains("a fight tells who survived, never a rank"),
        "{text}"
    );
    assert!(text.contains("shown when the game ends"), "{text}");
    assert!(!text.contains("flag-reveal"), "{text}");
    let flags = legend("hidden-front+flag-reveal", None);
    assert!(
        flags.contains("a side's flag is shown once its 9 is removed"),
        "{flags}"
    );
    let gunjin = legend("gunjin-shogi", None);
    assert!(!gunjin.contains("until a fight"), "{gunjin}");
    assert!(gunjin.contains("never a rank"), "{gunjin}");
}
