//! What a player may type into `hidden-front play`, in a game and in the lobby, parsed without a
//! server.

use hidden_front::play::commands::{Input, LobbyInput, game_of_link, parse, parse_lobby};

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
    assert_eq!(parse("clock"), Ok(Input::Clock));
    assert_eq!(parse("legend"), Ok(Input::Legend));
    assert_eq!(parse("lobby"), Ok(Input::Lobby));
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
        "board", "clock", "legend", "lobby", "help", "quit",
    ] {
        assert!(hidden_front::play::commands::HELP.contains(word), "{word}");
    }
    for word in [
        "computer", "match", "invite", "accept", "watch", "games", "open", "rating", "rules",
        "cancel", "help", "quit",
    ] {
        assert!(
            hidden_front::play::commands::LOBBY_HELP.contains(&format!("  {word}")),
            "{word}"
        );
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

#[test]
fn lobby_commands_take_rule_sets_time_controls_and_options_in_any_order() {
    assert_eq!(
        parse_lobby("computer"),
        Ok(LobbyInput::Computer {
            rules: "hidden-front".into(),
            north: false,
            level: None,
            time_control: "relaxed".into(),
        })
    );
    assert_eq!(
        parse_lobby("Computer north GUNJIN+y-gates Greedy ONLINE"),
        Ok(LobbyInput::Computer {
            rules: "gunjin-shogi+y-gates".into(),
            north: true,
            level: Some(hidden_front_bot::Level::Greedy),
            time_control: "online".into(),
        })
    );
    assert!(
        parse_lobby("match search")
            .unwrap_err()
            .contains("no level"),
        "a level belongs to `computer` only"
    );
    assert_eq!(
        parse_lobby("match rated gunjin-shogi+23-pieces relaxed"),
        Ok(LobbyInput::Match {
            rules: "gunjin-shogi+23-pieces".into(),
            time_control: "relaxed".into(),
            rated: true
        })
    );
    assert_eq!(
        parse_lobby("match"),
        Ok(LobbyInput::Match {
            rules: "hidden-front".into(),
            time_control: "online".into(),
            rated: false
        })
    );
    // Options in any order come out in the engine's canonical order.
    assert_eq!(
        parse_lobby("invite junqi+flag-reveal+hq-mobile"),
        Ok(LobbyInput::Invite {
            rules: "hidden-front+hq-mobile+flag-reveal".into(),
            time_control: "relaxed".into()
        })
    );
    assert_eq!(
        parse_lobby("accept K7QX2M"),
        Ok(LobbyInput::Accept("K7QX2M".into()))
    );
    assert_eq!(
        parse_lobby("watch http://127.0.0.1:8080/watch/g-42?x=1"),
        Ok(LobbyInput::Watch("g-42".into()))
    );
    assert_eq!(parse_lobby("open"), Ok(LobbyInput::Open(None)));
    assert_eq!(
        parse_lobby("open g-1"),
        Ok(LobbyInput::Open(Some("g-1".into())))
    );
    for (line, input) in [
        ("games", LobbyInput::Games),
        ("rating", LobbyInput::Rating),
        ("rules", LobbyInput::Rules),
        ("cancel", LobbyInput::Cancel),
        ("help", LobbyInput::Help),
        ("quit", LobbyInput::Quit),
        ("  ", LobbyInput::Nothing),
    ] {
        assert_eq!(parse_lobby(line), Ok(input), "{line:?}");
    }
}

#[test]
fn lobby_mistakes_are_answered_before_anything_is_sent() {
    assert!(
        parse_lobby("computer chess")
            .unwrap_err()
            .contains("not a rule set")
    );
    assert!(
        parse_lobby("computer rated")
            .unwrap_err()
            .contains("never rated")
    );
    assert!(
        parse_lobby("invite rated")
            .unwrap_err()
            .contains("never rated")
    );
    assert!(parse_lobby("match north").unwrap_err().contains("no seat"));
    assert!(
        parse_lobby("match hidden-front+nonsense")
            .unwrap_err()
            .contains("unknown rule option")
    );
    assert!(parse_lobby("accept").unwrap_err().contains("usage"));
    assert!(parse_lobby("A6 A7").unwrap_err().contains("help"));
}

#[test]
fn links_name_their_game() {
    assert_eq!(game_of_link("g1"), "g1");
    assert_eq!(game_of_link("http://h:8080/game/abc/"), "abc");
    assert_eq!(game_of_link("https://h/watch/abc#frag"), "abc");
}

#[test]
fn a_gunjin_hq_cell_is_read_as_the_hq() {
    use hidden_front::play::commands::node_name;
    // Either cell, in any case, or both joined: the engine's one HQ node.
    for typed in ["d8", "D8", "e8", "E8"] {
        assert_eq!(node_name("gunjin-shogi", typed), "D8+E8", "{typed}");
    }
    assert_eq!(node_name("gunjin-shogi+y-gates", "e1"), "D1+E1");
    assert_eq!(node_name("gunjin-shogi", "D8+E8"), "D8+E8");
    // The small edition's HQ lies on c and d.
    assert_eq!(node_name("gunjin-shogi+23-pieces", "c1"), "C1+D1");
    assert_eq!(node_name("gunjin-shogi+23-pieces", "D8"), "C8+D8");
    assert_eq!(node_name("gunjin-shogi+23-pieces", "E8"), "E8");
    // Other squares, and Junqi's HQs (single nodes), pass as typed.
    for (rules, typed) in [
        ("gunjin-shogi", "D7"),
        ("gunjin-shogi", "C8"),
        ("gunjin-shogi", "F1"),
        ("hidden-front", "D1"),
        ("hidden-front", "B12"),
    ] {
        assert_eq!(node_name(rules, typed), typed, "{rules} {typed}");
    }
}
