//! End-to-end checks of `hidden-front rules <verb>`: the real binary, several request lines per
//! process, every answer checked in order.

use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};

/// Runs the binary with `args`, feeds `input` on stdin (from a thread, so a large answer cannot
/// block the writer), closes stdin and returns every stdout line parsed as JSON. Fails unless the
/// process exits 0 with an empty stderr.
fn run(args: &[&str], input: &[u8]) -> Vec<Value> {
    let text = run_raw(args, input);
    text.lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("answer {line:?} is not JSON: {e}"))
        })
        .collect()
}

fn run_raw(args: &[&str], input: &[u8]) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hidden-front"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start hidden-front");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().expect("wait for hidden-front");
    writer
        .join()
        .expect("writer thread")
        .expect("write the input");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{args:?} failed: {stderr}");
    assert!(stderr.is_empty(), "{args:?} wrote to stderr: {stderr}");
    String::from_utf8(output.stdout).expect("stdout is UTF-8")
}

/// JSON Lines from values.
fn lines(values: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for value in values {
        out.extend_from_slice(value.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

/// A hidden-front position; pieces are `(node, side, code)`.
fn position(to_move: &str, plies: u64, pieces: &[(&str, &str, &str)]) -> Value {
    json!({
        "variant": "hidden-front",
        "to_move": to_move,
        "plies_without_combat": plies,
        "pieces": pieces
            .iter()
            .map(|(at, side, piece)| json!({"at": at, "side": side, "piece": piece}))
            .collect::<Vec<_>>(),
    })
}

fn apply(position: Value, from: &str, to: &str) -> Value {
    json!({"position": position, "move": [from, to]})
}

/// The destinations of the piece on `from` in a legal-moves answer.
fn destinations(answer: &Value, from: &str) -> BTreeSet<String> {
    answer["moves"]
        .as_array()
        .unwrap_or_else(|| panic!("not a moves answer: {answer}"))
        .iter()
        .filter(|mv| mv[0] == from)
        .map(|mv| mv[1].as_str().expect("node name").to_string())
        .collect()
}

fn set(nodes: &[&str]) -> BTreeSet<String> {
    nodes.iter().map(|n| n.to_string()).collect()
}

/// The 32 rail nodes of the spec.
fn rail_nodes() -> BTreeSet<String> {
    let mut rail = BTreeSet::new();
    for row in [2, 6, 7, 11] {
        for col in ["A", "B", "C", "D", "E"] {
            rail.insert(format!("{col}{row}"));
        }
    }
    for col in ["A", "E"] {
        for row in (3..=5).chain(8..=10) {
            rail.insert(format!("{col}{row}"));
        }
    }
    assert_eq!(rail.len(), 32);
    rail
}

fn error(answer: &Value) -> &str {
    answer["error"]
        .as_str()
        .unwrap_or_else(|| panic!("expected an error answer, got {answer}"))
}

#[test]
fn legal_moves_match_the_spec_worked_checks() {
    let engineer_a2 = position("south", 0, &[("A2", "south", "1"), ("B12", "north", "F")]);
    let lowercase = json!({"to_move": "south", "pieces": [
        {"at": "a2", "side": "south", "piece": "1"},
        {"at": "b12", "side": "north", "piece": "f", "comment": "unknown fields are ignored"},
    ]});
    let answers = run(
        &["rules", "legal-moves"],
        &lines(&[
            engineer_a2.clone(),
            lowercase,
            position("south", 0, &[("A2", "south", "5"), ("B12", "north", "F")]),
            position("south", 0, &[("B6", "south", "1"), ("B12", "north", "F")]),
            position("south", 0, &[("B6", "south", "5"), ("B12", "north", "F")]),
            position("north", 0, &[("A2", "south", "1"), ("B12", "north", "F")]),
        ]),
    );
    assert_eq!(answers.len(), 6, "{answers:?}");

    // An engineer alone at A2: every other rail node, plus A1 and the camp B3: 33.
    assert_eq!(answers[0]["moves"].as_array().unwrap().len(), 33);
    let mut expected = rail_nodes();
    expected.remove("A2");
    expected.extend(set(&["A1", "B3"]));
    assert_eq!(destinations(&answers[0], "A2"), expected);
    // Lowercase input, uppercase output, same moves.
    assert_eq!(answers[1], answers[0]);

    // A non-engineer at A2 slides straight: up column A to A11 and along row 2, plus A1 and B3.
    assert_eq!(
        destinations(&answers[2], "A2"),
        set(&[
            "A1", "B3", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "A10", "A11", "B2", "C2", "D2",
            "E2"
        ])
    );
    assert_eq!(answers[2]["moves"].as_array().unwrap().len(), 15);

    // The engineer at B6 turns at C6 to reach C7; the non-engineer only slides along row 6.
    let mut engineer_b6 = rail_nodes();
    engineer_b6.remove("B6");
    engineer_b6.insert("B5".to_string());
    assert_eq!(destinations(&answers[3], "B6"), engineer_b6);
    assert!(destinations(&answers[3], "B6").contains("C7"));
    assert_eq!(
        destinations(&answers[4], "B6"),
        set(&["A6", "B5", "C6", "D6", "E6"])
    );

    // North to move with only its flag: no moves at all.
    assert_eq!(answers[5], json!({"moves": []}));
}

#[test]
fn apply_reports_quiet_moves_and_fights() {
    let kings = [
        ("B1", "south", "F"),
        ("D12", "north", "F"),
        ("E12", "north", "9"),
    ];
    let with = |to_move: &str, plies: u64, extra: &[(&'static str, &'static str, &'static str)]| {
        let mut pieces: Vec<(&str, &str, &str)> = kings.to_vec();
        pieces.extend_from_slice(extra);
        position(to_move, plies, &pieces)
    };
    let answers = run(
        &["rules", "apply"],
        &lines(&[
            apply(with("south", 4, &[("A2", "south", "1")]), "A2", "A11"),
            apply(
                with("south", 7, &[("C6", "south", "5"), ("C7", "north", "4")]),
                "C6",
                "C7",
            ),
            apply(
                with("south", 7, &[("C6", "south", "6"), ("C7", "north", "6")]),
                "C6",
                "C7",
            ),
            apply(
                with("south", 7, &[("C6", "south", "B"), ("C7", "north", "8")]),
                "C6",
                "C7",
            ),
            apply(
                with("south", 7, &[("A11", "south", "1"), ("A12", "north", "M")]),
                "A11",
                "A12",
            ),
            apply(
                with("south", 7, &[("C6", "south", "3"), ("C7", "north", "7")]),
                "C6",
                "C7",
            ),
        ]),
    );
    assert_eq!(answers.len(), 6, "{answers:?}");

    // Quiet move: the counter goes up, the turn passes, pieces are listed by node.
    assert_eq!(
        answers[0],
        json!({
            "position": {
                "variant": "hidden-front",
                "to_move": "north",
                "plies_without_combat": 5,
                "pieces": [
                    {"at": "B1", "side": "south", "piece": "F"},
                    {"at": "A11", "side": "south", "piece": "1"},
                    {"at": "D12", "side": "north", "piece": "F"},
                    {"at": "E12", "side": "north", "piece": "9"},
                ],
            },
            "combat": null,
            "outcome": null,
        })
    );

    let after = |answer: &Value, node: &str| -> Option<(String, String)> {
        answer["position"]["pieces"]
            .as_array()
            .unwrap_or_else(|| panic!("no position in {answer}"))
            .iter()
            .find(|p| p["at"] == node)
            .map(|p| (p["side"].to_string(), p["piece"].to_string()))
    };
    let fight = |answer: &Value, attacker: bool, defender: bool| {
        assert_eq!(
            answer["combat"],
            json!({"attacker_survives": attacker, "defender_survives": defender}),
            "{answer}"
        );
        assert_eq!(answer["outcome"], Value::Null, "{answer}");
        assert_eq!(answer["position"]["plies_without_combat"], 0, "{answer}");
        assert_eq!(answer["position"]["to_move"], "north", "{answer}");
    };
    // 5 beats 4 and moves in.
    fight(&answers[1], true, false);
    assert_eq!(
        after(&answers[1], "C7"),
        Some(("\"south\"".into(), "\"5\"".into()))
    );
    assert_eq!(after(&answers[1], "C6"), None);
    // Equal ranks: both go.
    fight(&answers[2], false, false);
    assert_eq!(after(&answers[2], "C7"), None);
    assert_eq!(after(&answers[2], "C6"), None);
    // A bomb takes the 8 with it.
    fight(&answers[3], false, false);
    assert_eq!(after(&answers[3], "C7"), None);
    // An engineer clears a mine and moves in.
    fight(&answers[4], true, false);
    assert_eq!(
        after(&answers[4], "A12"),
        Some(("\"south\"".into(), "\"1\"".into()))
    );
    // 3 attacks 7: the defender stays, the attacker is gone.
    fight(&answers[5], false, true);
    assert_eq!(
        after(&answers[5], "C7"),
        Some(("\"north\"".into(), "\"7\"".into()))
    );
    assert_eq!(after(&answers[5], "C6"), None);

    // The answer's position feeds straight back in.
    let next = run(
        &["rules", "apply"],
        &lines(&[apply(answers[0]["position"].clone(), "E12", "E11")]),
    );
    assert_eq!(next[0]["position"]["to_move"], "south");
    assert_eq!(next[0]["position"]["plies_without_combat"], 6);
    assert_eq!(
        after(&next[0], "E11"),
        Some(("\"north\"".into(), "\"9\"".into()))
    );
}

#[test]
fn flag_capture_and_no_legal_moves_end_the_game() {
    let answers = run(
        &["rules", "apply"],
        &lines(&[
            apply(
                position(
                    "south",
                    0,
                    &[
                        ("B11", "south", "9"),
                        ("B1", "south", "F"),
                        ("B12", "north", "F"),
                        ("E7", "north", "9"),
                    ],
                ),
                "B11",
                "B12",
            ),
            // A bomb that runs into the flag is removed with it, and the capture stands.
            apply(
                position(
                    "south",
                    0,
                    &[
                        ("B11", "south", "B"),
                        ("B1", "south", "F"),
                        ("B12", "north", "F"),
                        ("E7", "north", "9"),
                    ],
                ),
                "B11",
                "B12",
            ),
            // ... unless the house says the bomb spares it.
            apply(
                json!({
                    "variant": "hidden-front+bomb-spares-flag",
                    "to_move": "south",
                    "pieces": [
                        {"at": "B11", "side": "south", "piece": "B"},
                        {"at": "B1", "side": "south", "piece": "F"},
                        {"at": "B12", "side": "north", "piece": "F"},
                        {"at": "E7", "side": "north", "piece": "9"},
                    ],
                }),
                "B11",
                "B12",
            ),
            // North captures; south (only its flag) could not move either: the capture wins.
            apply(
                position(
                    "north",
                    0,
                    &[
                        ("B2", "north", "2"),
                        ("B1", "south", "F"),
                        ("B12", "north", "F"),
                    ],
                ),
                "B2",
                "B1",
            ),
            // The last movable north piece falls: north cannot move, south wins.
            apply(
                position(
                    "south",
                    3,
                    &[
                        ("C6", "south", "9"),
                        ("B1", "south", "F"),
                        ("C7", "north", "4"),
                        ("D12", "north", "F"),
                        ("A12", "north", "M"),
                    ],
                ),
                "C6",
                "C7",
            ),
        ]),
    );
    assert_eq!(answers.len(), 5, "{answers:?}");
    let win = |winner: &str, reason: &str| json!({"winner": winner, "reason": reason});

    assert_eq!(
        answers[0]["combat"],
        json!({"attacker_survives": true, "defender_survives": false})
    );
    assert_eq!(answers[0]["outcome"], win("south", "flag_captured"));

    assert_eq!(
        answers[1]["combat"],
        json!({"attacker_survives": false, "defender_survives": false})
    );
    assert_eq!(answers[1]["outcome"], win("south", "flag_captured"));

    assert_eq!(
        answers[2]["combat"],
        json!({"attacker_survives": false, "defender_survives": true})
    );
    assert_eq!(answers[2]["outcome"], Value::Null);
    assert_eq!(
        answers[2]["position"]["variant"],
        "hidden-front+bomb-spares-flag"
    );

    assert_eq!(answers[3]["outcome"], win("north", "flag_captured"));

    assert_eq!(
        answers[4]["combat"],
        json!({"attacker_survives": true, "defender_survives": false})
    );
    assert_eq!(answers[4]["outcome"], win("south", "no_legal_moves"));
}

#[test]
fn the_hundredth_quiet_ply_draws() {
    let quiet = |plies: u64| {
        apply(
            position(
                "south",
                plies,
                &[
                    ("A2", "south", "5"),
                    ("B1", "south", "F"),
                    ("D12", "north", "F"),
                    ("E12", "north", "9"),
                ],
            ),
            "A2",
            "A3",
        )
    };
    // North's 5 on A8 is walled in by its own mines; its only move is into the empty camp B8.
    // South enters B8: north cannot move, and that beats the draw on the 100th ply.
    let walled_in = apply(
        position(
            "south",
            99,
            &[
                ("B7", "south", "6"),
                ("B1", "south", "F"),
                ("A8", "north", "5"),
                ("A7", "north", "M"),
                ("A9", "north", "M"),
                ("B12", "north", "F"),
            ],
        ),
        "B7",
        "B8",
    );
    let mut sixty = quiet(59);
    sixty["position"]["variant"] = json!("hidden-front+no-combat-60");
    let answers = run(
        &["rules", "apply"],
        &lines(&[
            quiet(99),
            quiet(98),
            apply(
                position(
                    "south",
                    99,
                    &[
                        ("C6", "south", "5"),
                        ("C7", "north", "4"),
                        ("B1", "south", "F"),
                        ("D12", "north", "F"),
                        ("E12", "north", "9"),
                    ],
                ),
                "C6",
                "C7",
            ),
            walled_in,
            sixty,
        ]),
    );
    assert_eq!(answers.len(), 5, "{answers:?}");

    assert_eq!(answers[0]["combat"], Value::Null);
    assert_eq!(
        answers[0]["outcome"],
        json!({"winner": null, "reason": "no_combat_100"})
    );
    assert_eq!(answers[0]["position"]["plies_without_combat"], 100);

    assert_eq!(answers[1]["outcome"], Value::Null);
    assert_eq!(answers[1]["position"]["plies_without_combat"], 99);

    // A fight on the 100th ply resets the counter instead.
    assert_eq!(answers[2]["outcome"], Value::Null);
    assert_eq!(answers[2]["position"]["plies_without_combat"], 0);

    assert_eq!(
        answers[3]["outcome"],
        json!({"winner": "south", "reason": "no_legal_moves"})
    );

    // A house limit of 60 plies; the variant name is echoed canonically.
    assert_eq!(
        answers[4]["outcome"],
        json!({"winner": null, "reason": "no_combat_100"})
    );
    assert_eq!(
        answers[4]["position"]["variant"],
        "hidden-front+no-combat-60"
    );
}

#[test]
fn bad_lines_answer_errors_and_the_process_goes_on() {
    let good = position("south", 0, &[("A2", "south", "5"), ("B12", "north", "F")]);
    let with_piece = |at: &str, side: &str, code: &str| {
        let mut p = good.clone();
        p["pieces"]
            .as_array_mut()
            .unwrap()
            .push(json!({"at": at, "side": side, "piece": code}));
        p
    };
    let mut input = Vec::new();
    input.extend_from_slice(b"this is not json\n");
    input.extend_from_slice(&lines(&[with_piece("F13", "north", "9")]));
    input.extend_from_slice(b"\n   \n");
    input.extend_from_slice(&lines(&[
        with_piece("A2", "north", "9"),
        with_piece("C3", "north", "X"),
        with_piece("C3", "east", "9"),
        {
            let mut p = good.clone();
            p["plies_without_combat"] = json!(70000);
            p
        },
        {
            let mut p = good.clone();
            p["plies_without_combat"] = json!(-1);
            p
        },
        {
            let mut p = good.clone();
            p["variant"] = json!("chess");
            p
        },
        {
            let mut p = good.clone();
            p.as_object_mut().unwrap().remove("to_move");
            p
        },
        json!([1, 2, 3]),
    ]));
    input.extend_from_slice(b"\xff\xfe not utf-8\n");
    input.extend_from_slice(&lines(&[good]));
    let answers = run(&["rules", "legal-moves"], &input);
    assert_eq!(
        answers.len(),
        12,
        "one answer per non-blank line: {answers:?}"
    );

    assert!(
        error(&answers[0]).starts_with("malformed JSON"),
        "{}",
        answers[0]
    );
    assert_eq!(
        error(&answers[1]),
        r#"pieces[2].at: "F13" is not a node of the board"#
    );
    assert_eq!(
        error(&answers[2]),
        "pieces[2].at: A2 already holds pieces[0]"
    );
    assert_eq!(
        error(&answers[3]),
        r#"pieces[2].piece: "X" is not a piece code (expected one of 9 8 7 6 5 4 3 2 1 B M F)"#
    );
    assert_eq!(
        error(&answers[4]),
        r#"pieces[2].side: "east" is not a side (expected "south" or "north")"#
    );
    assert_eq!(
        error(&answers[5]),
        "plies_without_combat: 70000 is not an integer in 0..=65535"
    );
    assert_eq!(
        error(&answers[6]),
        "plies_without_combat: -1 is not an integer in 0..=65535"
    );
    assert!(
        error(&answers[7]).starts_with(r#"variant: unknown variant "chess""#),
        "{}",
        answers[7]
    );
    assert_eq!(error(&answers[8]), "to_move: missing (required)");
    assert_eq!(
        error(&answers[9]),
        "request: expected a JSON object, found [1,2,3]"
    );
    assert_eq!(error(&answers[10]), "the line is not valid UTF-8 text");
    assert_eq!(answers[11]["moves"].as_array().map(Vec::len), Some(15));
}

#[test]
fn illegal_moves_answer_the_engines_reason() {
    let p = position(
        "south",
        0,
        &[
            ("A2", "south", "5"),
            ("B1", "south", "F"),
            ("D1", "south", "9"),
            ("B7", "south", "6"),
            ("B8", "north", "3"),
            ("E12", "north", "9"),
            ("D12", "north", "F"),
        ],
    );
    let mut input = lines(&[
        apply(p.clone(), "A2", "B6"),
        apply(p.clone(), "E12", "E11"),
        apply(p.clone(), "C3", "C2"),
        apply(p.clone(), "B1", "A1"),
        apply(p.clone(), "D1", "D2"),
        apply(p.clone(), "A2", "B1"),
        apply(p.clone(), "B7", "B8"),
        json!({"position": p.clone(), "move": "A2-A3"}),
        json!({"position": p.clone(), "move": ["A2", "Q9"]}),
        json!({"position": p.clone()}),
    ]);
    // The process goes on after all of those.
    input.extend_from_slice(&lines(&[apply(p, "A2", "A3")]));
    let answers = run(&["rules", "apply"], &input);
    assert_eq!(answers.len(), 11, "{answers:?}");
    let expected = [
        "illegal move A2-B6: the piece on A2 cannot reach B6 this turn",
        "illegal move E12-E11: the piece on E12 belongs to north, and it is south's turn",
        "illegal move C3-C2: there is no piece on C3",
        "illegal move B1-A1: the piece on B1 is a mine or a flag, which never moves",
        "illegal move D1-D2: the piece on D1 stands in a headquarters and can no longer move",
        "illegal move A2-B1: B1 holds one of your own pieces",
        "illegal move B7-B8: B8 is a camp and the piece in it cannot be attacked",
        r#"move: expected a two-element array of node names like ["A6", "A7"], found "A2-A3""#,
        r#"move[1]: "Q9" is not a node of the board"#,
        "move: missing (required)",
    ];
    for (answer, message) in answers.iter().zip(expected) {
        assert_eq!(error(answer), message);
    }
    assert_eq!(answers[10]["combat"], Value::Null);
    assert_eq!(answers[10]["position"]["to_move"], "north");
}

#[test]
fn random_deployments_validate() {
    let south = run_raw(
        &[
            "rules",
            "random-deployment",
            "--side",
            "south",
            "--seed",
            "42",
            "--count",
            "5",
        ],
        b"",
    );
    // The same seed prints the same deployments; another seed does not.
    assert_eq!(
        south,
        run_raw(
            &[
                "rules",
                "random-deployment",
                "--side",
                "south",
                "--seed",
                "42",
                "--count",
                "5"
            ],
            b""
        )
    );
    assert_ne!(
        south,
        run_raw(
            &[
                "rules",
                "random-deployment",
                "--side",
                "south",
                "--seed",
                "43",
                "--count",
                "5"
            ],
            b""
        )
    );
    let north = run_raw(
        &[
            "rules",
            "random-deployment",
            "--side",
            "north",
            "--variant",
            "hidden-front+front-bombs",
            "--count",
            "40",
            "--seed",
            "7",
        ],
        b"",
    );
    let unseeded = run_raw(&["rules", "random-deployment", "--side", "north"], b"");
    let all = format!("{south}{north}{unseeded}");
    let deployments: Vec<Value> = all
        .lines()
        .map(|l| serde_json::from_str(l).expect("deployment line is JSON"))
        .collect();
    assert_eq!(deployments.len(), 5 + 40 + 1);
    for (i, d) in deployments.iter().enumerate() {
        let (side, variant, rows) = match i {
            0..5 => ("south", "hidden-front", 1..=6),
            5..45 => ("north", "hidden-front+front-bombs", 7..=12),
            _ => ("north", "hidden-front", 7..=12),
        };
        assert_eq!(d["side"], side, "{d}");
        assert_eq!(d["variant"], variant, "{d}");
        let squares: BTreeSet<&str> = d["pieces"]
            .as_array()
            .expect("pieces")
            .iter()
            .map(|p| p["at"].as_str().expect("at"))
            .collect();
        assert_eq!(squares.len(), 25, "{d}");
        for square in squares {
            let row: u32 = square[1..].parse().expect("row number");
            assert!(rows.contains(&row), "{square} outside {side}'s half in {d}");
        }
    }

    let answers = run(&["rules", "validate-deployment"], all.as_bytes());
    assert_eq!(answers.len(), deployments.len());
    for answer in &answers {
        assert_eq!(answer, &json!({"valid": true}));
    }

    // The variant matters: a front-row bomb is fine under front-bombs, not by default.
    let front_bombs: Vec<Value> = deployments[5..45]
        .iter()
        .filter(|d| {
            d["pieces"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["piece"] == "B" && p["at"].as_str().unwrap().ends_with('7'))
        })
        .map(|d| {
            let mut d = d.clone();
            d.as_object_mut().unwrap().remove("variant");
            d
        })
        .collect();
    assert!(
        !front_bombs.is_empty(),
        "seed 7 puts a bomb on the front row"
    );
    for answer in run(&["rules", "validate-deployment"], &lines(&front_bombs)) {
        assert_eq!(answer["valid"], false, "{answer}");
        let problems = answer["problems"].as_array().expect("problems");
        assert!(
            problems.iter().all(|p| p
                .as_str()
                .unwrap()
                .contains("front row, where bombs are not allowed")),
            "{answer}"
        );
    }
}

#[test]
fn a_bad_deployment_lists_every_problem() {
    let placements = [
        ("A1", "F"),
        ("A1", "7"),
        ("A6", "M"),
        ("D1", "M"),
        ("C6", "B"),
        ("B3", "9"),
        ("A8", "8"),
    ];
    let bad = json!({
        "side": "south",
        "pieces": placements
            .iter()
            .map(|(at, piece)| json!({"at": at, "piece": piece}))
            .collect::<Vec<_>>(),
    });
    let unknown_node = json!({"side": "south", "pieces": [{"at": "A0", "piece": "9"}]});
    let unknown_code = json!({"side": "south", "pieces": [{"at": "A1", "piece": "Z"}]});
    let no_side = json!({"pieces": []});
    let answers = run(
        &["rules", "validate-deployment"],
        &lines(&[bad, unknown_node, unknown_code, no_side]),
    );
    assert_eq!(answers.len(), 4, "{answers:?}");
    assert_eq!(answers[0]["valid"], false);
    let problems: Vec<&str> = answers[0]["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| p.as_str().expect("problem text"))
        .collect();
    for expected in [
        "A1 holds more than one piece",
        "the flag on A1 must stand in one of your two headquarters",
        "the mine on A6 must stand on your two back rows",
        "the mine on D1 stands in a headquarters, where mines are not allowed",
        "the bomb on C6 stands on your front row, where bombs are not allowed",
        "B3 is a camp; camps start empty",
        "A8 is not in south's half",
        "expected 3 of piece M, found 2",
        "expected 2 of piece 7, found 1",
    ] {
        assert!(
            problems.contains(&expected),
            "missing {expected:?} in {problems:?}"
        );
    }
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("squares left empty: ") && p.contains("B1") && p.contains("E6")),
        "{problems:?}"
    );
    assert!(problems.len() >= 9, "{problems:?}");

    assert_eq!(
        error(&answers[1]),
        r#"pieces[0].at: "A0" is not a node of the board"#
    );
    assert!(
        error(&answers[2]).starts_with(r#"pieces[0].piece: "Z" is not a piece code"#),
        "{}",
        answers[2]
    );
    assert_eq!(error(&answers[3]), "side: missing (required)");
}

#[test]
fn help_documents_the_formats() {
    let rules = run_raw(&["rules", "--help"], b"");
    for needle in [
        "plies_without_combat",
        "\"to_move\"",
        "legal-moves",
        "apply",
    ] {
        assert!(
            rules.contains(needle),
            "rules --help lacks {needle}: {rules}"
        );
    }
    let apply = run_raw(&["rules", "apply", "--help"], b"");
    for needle in ["attacker_survives", "no_combat_100", "\"move\""] {
        assert!(
            apply.contains(needle),
            "apply --help lacks {needle}: {apply}"
        );
    }
}
