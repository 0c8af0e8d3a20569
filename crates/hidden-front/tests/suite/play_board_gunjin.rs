//! The terminal client's drawing of Gunjin Shogi boards, on hand-built views: 8 (or 6) files of
//! three-letter codes, the two-cell HQ as one framed square, the wall with its gates, the board
//! turned for the north seat, and odd squares listed rather than dropped.

use hidden_front::play::board::{GunjinBoard, LastMove, describe_move, render};
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

fn view(viewer: pb::Viewer, rules: &str, pieces: Vec<pb::VisiblePiece>) -> pb::GameView {
    pb::GameView {
        game_id: "g9".to_string(),
        version: 5,
        viewer: viewer as i32,
        rules: rules.to_string(),
        phase: pb::Phase::Play as i32,
        first_mover: pb::Side::South as i32,
        to_move: pb::Side::South as i32,
        pieces,
        south_player: "kenji".to_string(),
        north_player: "yumi".to_string(),
        ..Default::default()
    }
}

/// The board lines, top to bottom.
fn board_rows(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.len() > 4 && l[..4].trim().parse::<u8>().is_ok() && l.as_bytes()[3] == b' ')
        .collect()
}

/// The six characters of the cell under `file` on the row of `rank`.
fn cell(text: &str, file: char, rank: u8) -> String {
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with(['a', 'h', 'f']) && l.contains("   c  "))
        .expect("a file header");
    let at = header.find(file).expect("file in header");
    let row = board_rows(text)
        .into_iter()
        .find(|l| l[..3].trim() == rank.to_string())
        .expect("the rank");
    let padded = format!("{row:<60}");
    padded[at - 3..at + 3].to_string()
}

fn pieces() -> Vec<pb::VisiblePiece> {
    vec![
        piece("d1+e1", pb::Side::South, "GEN"),
        piece("a4", pb::Side::South, "1LT"),
        piece("c3", pb::Side::South, "FLG"),
        piece("d8+e8", pb::Side::North, ""),
        piece("b5", pb::Side::North, ""),
    ]
}

#[test]
fn south_sees_the_gunjin_board_with_codes_hq_and_wall() {
    let text = render(&view(pb::Viewer::South, "gunjin-shogi", pieces()), None);
    let rows = board_rows(&text);
    assert_eq!(rows.len(), 8, "{text}");
    assert!(rows[0].trim_start().starts_with('8'), "{text}");
    assert_eq!(cell(&text, 'd', 1), "[GEN ]", "{text}");
    assert_eq!(cell(&text, 'e', 1), "[  = ]", "{text}");
    assert_eq!(cell(&text, 'd', 8), "[ ?  ]", "{text}");
    assert_eq!(cell(&text, 'a', 4), " 1LT  ", "{text}");
    assert_eq!(cell(&text, 'c', 3), " FLG  ", "{text}");
    assert_eq!(cell(&text, 'b', 5), "  ?   ", "{text}");
    assert_eq!(cell(&text, 'h', 8), "  .   ", "{text}");
    // The gates in words are in the legend (beside the wall they would pass 80 columns).
    assert!(text.contains("||   ====   ||    wall"), "{text}");
    let gates = legend("gunjin-shogi", None);
    assert!(gates.contains("a4/c4 to a5/c5, f4/h4 to f5/h5"), "{gates}");
    // The wall line lies between ranks 5 and 4.
    let wall = text.lines().position(|l| l.ends_with("  wall")).unwrap();
    let r5 = text.lines().position(|l| l.starts_with("  5 ")).unwrap();
    let r4 = text.lines().position(|l| l.starts_with("  4 ")).unwrap();
    assert!(r5 < wall && wall < r4, "{text}");
    assert!(!text.contains("not on this board"), "{text}");
}

#[test]
fn north_sees_the_board_turned_and_the_small_edition_has_six_files() {
    let text = render(
        &view(pb::Viewer::North, "gunjin-shogi+y-gates", pieces()),
        None,
    );
    let rows = board_rows(&text);
    assert!(rows[0].trim_start().starts_with('1'), "{text}");
    let header = text.lines().find(|l| l.contains("   c  ")).unwrap();
    assert!(header.find('h') < header.find('a'), "{text}");
    assert!(text.contains("v5 gunjin-shogi+y-gates"), "{text}");
    let gates = legend("gunjin-shogi+y-gates", None);
    assert!(gates.contains("b4 to a5/c5, g5 to f4/h4"), "{gates}");
    // The own pieces are north's; south's are hidden to north... here the view carries codes
    // for south, which a north view would not; they are drawn as revealed (`*`).
    assert_eq!(cell(&text, 'd', 1), "[GEN*]", "{text}");

    let small = render(
        &view(
            pb::Viewer::South,
            "gunjin-shogi+23-pieces",
            vec![
                piece("c1+d1", pb::Side::South, "MAJ"),
                piece("g1", pb::Side::South, "CPT"),
            ],
        ),
        None,
    );
    assert_eq!(cell(&small, 'c', 1), "[MAJ ]", "{small}");
    assert_eq!(cell(&small, 'd', 1), "[  = ]", "{small}");
    assert!(small.contains("not on this board: g1=CPT"), "{small}");
    assert!(!small.lines().any(|l| l.contains("   g  ")), "{small}");
}

#[test]
fn gunjin_squares_and_moves_read_and_describe() {
    let board = GunjinBoard::of_rules("gunjin-shogi").expect("a gunjin board");
    assert_eq!(board.cell("d1+e1"), Some((3, 1)));
    assert_eq!(board.cell("D8+E8"), Some((3, 8)));
    assert_eq!(board.cell("h8"), Some((7, 8)));
    for bad in [
        "e1", "d1", "i1", "a9", "c1+d1", "d2+e2", "d1+e1+f1", "", "+",
    ] {
        assert_eq!(board.cell(bad), None, "{bad}");
    }
    assert!(GunjinBoard::of_rules("hidden-front").is_none());
    let text = describe_move(
        &LastMove {
            side: pb::Side::South,
            from: "d7".to_string(),
            to: "d8+e8".to_string(),
            piece: "COL".to_string(),
            combat: None,
            ..Default::default()
        },
        Some(pb::Side::South),
    );
    assert_eq!(text, "south (you) COL d7-d8+e8");
}

#[test]
fn the_gunjin_board_and_its_status_fit_an_80_by_24_terminal() {
    for rules in [
        "gunjin-shogi+y-gates+tank-beats-engineer",
        "gunjin-shogi+23-pieces",
    ] {
        for viewer in [pb::Viewer::South, pb::Viewer::North, pb::Viewer::Spectator] {
            let mut placed = pieces();
            if rules.contains("23-pieces") {
                for p in &mut placed {
                    p.square = p.square.replace("d1+e1", "c1+d1").replace("d8+e8", "c8+d8");
                }
            }
            let mut v = view(viewer, rules, placed);
            v.north_player =
                "a-player-name-of-sixty-four-characters-which-is-the-longest-kept".into();
            v.draw_offer = pb::Side::North as i32;
            v.turn_deadline_unix_millis = hidden_front::play::clock::now_unix_millis() + 120_000;
            let last = LastMove {
                side: pb::Side::North,
                from: "d7".into(),
                to: "c8+d8".into(),
                piece: "MJG".into(),
                combat: Some(hidden_front::play::board::Combat {
                    defender_piece: "GEN".into(),
                    attacker_survives: false,
                    defender_survives: true,
                    ..Default::default()
                }),
                ..Default::default()
            };
            let text = render(&v, Some(&last));
            let lines: Vec<&str> = text.trim_end().lines().collect();
            let width = lines.iter().map(|l| l.chars().count()).max().unwrap();
            assert_eq!(board_rows(&text).len(), 8, "{text}");
            // 1 header, 8 ranks, the wall, 2 of status.
            assert!(lines.len() <= 12, "{} rows:\n{text}", lines.len());
            assert!(width <= 80, "{width} columns:\n{text}");
            assert!(
                text.contains("GEN: attacker removed, defender survived"),
                "{text}"
            );
        }
    }
}

#[test]
fn every_gunjin_board_is_read_from_the_engine() {
    for (rules, files, hq_file, gates) in [
        ("gunjin-shogi", 8, 3, "a4/c4 to a5/c5, f4/h4 to f5/h5"),
        ("gunjin-shogi+y-gates", 8, 3, "b4 to a5/c5, g5 to f4/h4"),
        ("gunjin-shogi+i-gates", 8, 3, "b4-b5, g4-g5"),
        ("gunjin-shogi+23-pieces", 6, 2, "b4-b5, e4-e5"),
    ] {
        let board = GunjinBoard::of_rules(rules).expect("a gunjin board");
        assert_eq!(
            (
                board.files,
                board.ranks,
                board.hq_file,
                board.gates.as_str()
            ),
            (files, 8, hq_file, gates),
            "{rules}"
        );
    }
    assert_eq!(
        GunjinBoard::of_rules("gunjin-shogi+y-gates")
            .expect("a gunjin board")
            .gate_files,
        [vec![1, 5, 7], vec![0, 2, 6]]
    );
}
