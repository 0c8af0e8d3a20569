//! What a player may type into `hidden-front play`, parsed without a server.

use hidden_front::play::commands::{Input, parse};

fn mv(from: &str, to: &str) -> Input {
    Input::Move {
        from: from.to_string(),
        to: to.to_string(),
    }
}

#[test]
fn moves_are_two_squares_in_any_case_and_spelling() {
    assert_eq!(parse("A6 A7"), Ok(mv("A6", "A7")));
    assert_eq!(parse("a6 a7\n"), Ok(mv("A6", "A7")));
    assert_eq!(parse("  c10   c9  "), Ok(mv("C10", "C9")));
    assert_eq!(parse("A6-A7"), Ok(mv("A6", "A7")));
    assert_eq!(parse("a6a7"), Ok(mv("A6", "A7")));
    assert_eq!(parse("e12e11"), Ok(mv("E12", "E11")));
}

#[test]
fn commands_are_words() {
    assert_eq!(
        parse("swap a1 B2"),
        Ok(Input::Swap {
            a: "A1".into(),
            b: "B2".into()
        })
    );
    assert_eq!(parse("shuffle"), Ok(Input::Shuffle));
    assert_eq!(parse("CONFIRM"), Ok(Input::Confirm));
    assert_eq!(parse("moves"), Ok(Input::Moves(None)));
    assert_eq!(parse("moves a6"), Ok(Input::Moves(Some("A6".into()))));
    assert_eq!(parse("draw"), Ok(Input::Draw));
    assert_eq!(parse("accept"), Ok(Input::Accept));
    assert_eq!(parse("decline"), Ok(Input::Decline));
    assert_eq!(parse("resign"), Ok(Input::Resign));
    assert_eq!(parse("board"), Ok(Input::Board));
    assert_eq!(parse("help"), Ok(Input::Help));
    assert_eq!(parse("quit"), Ok(Input::Quit));
    assert_eq!(parse(""), Ok(Input::Nothing));
    assert_eq!(parse("   \r\n"), Ok(Input::Nothing));
}

#[test]
fn mistakes_get_a_hint_not_a_request() {
    for bad in [
        "A6",
        "A6 A7 A8",
        "hello",
        "A6 seven",
        "swap A1",
        "swap A1 XX",
        "confirm now",
        "moves A6 A7",
        "6A 7A",
        "a6a",
    ] {
        let err = parse(bad).expect_err(bad);
        assert!(!err.is_empty(), "{bad:?}");
    }
    assert!(parse("hello").unwrap_err().contains("help"));
    assert!(parse("swap A1").unwrap_err().contains("swap A1 B2"));
}

#[test]
fn help_lists_every_command() {
    for word in [
        "A6 A7", "moves", "swap", "shuffle", "confirm", "draw", "accept", "decline", "resign",
        "board", "help", "quit",
    ] {
        assert!(hidden_front::play::commands::HELP.contains(word), "{word}");
    }
}

#[test]
fn gunjin_hq_squares_are_one_word() {
    assert_eq!(parse("d7 d8+e8"), Ok(mv("D7", "D8+E8")));
    assert_eq!(parse("D1+E1 e2"), Ok(mv("D1+E1", "E2")));
    assert_eq!(parse("d2-d1+e1"), Ok(mv("D2", "D1+E1")));
    assert_eq!(
        parse("swap d1+e1 a1"),
        Ok(Input::Swap {
            a: "D1+E1".into(),
            b: "A1".into()
        })
    );
    assert!(parse("d1+ d2").is_err());
    assert!(parse("d1+e1+f1 d2").is_err());
}
