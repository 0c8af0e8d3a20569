//! `hidden-front rules <verb>` on Gunjin Shogi positions: the real binary, several request lines
//! per process, with `"variant": "gunjin-shogi"`, squares `a1`..`h8`, the HQ nodes `d1+e1` /
//! `d8+e8` and the spec's piece codes.

use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};

/// Runs the binary with `args` on `input`; every stdout line parsed as JSON. Fails unless the
/// process exits 0 with an empty stderr.
fn run(args: &[&str], input: &[u8]) -> Vec<Value> {
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
    writer.join().expect("writer").expect("write the input");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{args:?} failed: {stderr}");
    assert!(stderr.is_empty(), "{args:?} wrote to stderr: {stderr}");
    String::from_utf8(output.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

fn lines(values: &[Value]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|v| format!("{v}\n").into_bytes())
        .collect()
}

fn position(variant: &str, to_move: &str, pieces: &[(&str, &str, &str)]) -> Value {
    json!({
        "variant": variant,
        "to_move": to_move,
        "pieces": pieces
            .iter()
            .map(|(at, side, piece)| json!({"at": at, "side": side, "piece": piece}))
            .collect::<Vec<_>>(),
    })
}

fn destinations(answer: &Value, from: &str) -> BTreeSet<String> {
    answer["moves"]
        .as_array()
        .unwrap_or_else(|| panic!("not a moves answer: {answer}"))
        .iter()
        .filter(|mv| mv[0] == from)
        .map(|mv| mv[1].as_str().unwrap().to_string())
        .collect()
}

fn set(list: &str) -> BTreeSet<String> {
    list.split_whitespace().map(String::from).collect()
}

#[test]
fn legal_moves_reads_gunjin_positions_with_hq_nodes_and_codes() {
    let answers = run(
        &["rules", "legal-moves"],
        &lines(&[
            position(
                "gunjin-shogi",
                "south",
                &[("c3", "south", "ENG"), ("h8", "north", "CPT")],
            ),
            position(
                "gunjin-shogi",
                "south",
                &[("D1+E1", "south", "tnk"), ("h8", "north", "CPT")],
            ),
            position(
                "gunjin-shogi+y-gates",
                "north",
                &[("g5", "north", "GEN"), ("a1", "south", "FLG")],
            ),
            position(
                "gunjin-shogi+23-pieces",
                "south",
                &[("b3", "south", "PLA"), ("c8+d8", "north", "MIN")],
            ),
        ]),
    );
    assert_eq!(answers.len(), 4);
    assert_eq!(
        destinations(&answers[0], "c3"),
        set("c1 c2 c4 a5 a6 a7 a8 c5 c6 c7 c8 a3 b3 d3 e3 f3 g3 h3")
    );
    assert_eq!(
        destinations(&answers[1], "d1+e1"),
        set("b1 c1 f1 g1 d2 d3 e2 e3")
    );
    assert_eq!(destinations(&answers[2], "g5"), set("f5 h5 g6 f4 h4"));
    assert_eq!(
        destinations(&answers[3], "b3"),
        set("b1 b2 b4 b5 b6 b7 b8 a3 c3")
    );
}

#[test]
fn apply_judges_fights_the_flag_rule_and_the_hq_win() {
    let v = "gunjin-shogi";
    let answers = run(
        &["rules", "apply"],
        &lines(&[
            // The spy beats the general when attacking.
            json!({"position": position(v, "south", &[
                ("c4", "south", "SPY"), ("c5", "north", "GEN"),
                ("a1", "south", "CPT"), ("h8", "north", "CPT")]),
                "move": ["c4", "c5"]}),
            // The flag fights as the major general behind it: the tank loses.
            json!({"position": position(v, "north", &[
                ("c3", "south", "FLG"), ("c2", "south", "MJG"), ("c4", "north", "TNK"),
                ("a1", "south", "CPT"), ("h8", "north", "CPT")]),
                "move": ["c4", "c3"]}),
            // A colonel enters the empty enemy HQ and wins.
            json!({"position": position(v, "south", &[
                ("e7", "south", "COL"), ("a8", "north", "CPT"), ("a1", "south", "CPT")]),
                "move": ["e7", "d8+e8"]}),
            // An illegal move: the plane cannot fly diagonally; the process goes on.
            json!({"position": position(v, "south", &[
                ("c3", "south", "PLA"), ("h8", "north", "CPT")]),
                "move": ["c3", "d4"]}),
            // The mine takes the attacking captain with it.
            json!({"position": position("gunjin-shogi+mine-survives", "south", &[
                ("b4", "south", "CPT"), ("b5", "north", "MIN"), ("a1", "south", "CPT"),
                ("h8", "north", "CPT")]),
                "move": ["b4", "b5"]}),
        ]),
    );
    assert_eq!(answers.len(), 5, "{answers:?}");
    assert_eq!(
        answers[0]["combat"],
        json!({"attacker_survives": true, "defender_survives": false})
    );
    assert_eq!(answers[0]["outcome"], Value::Null);
    assert_eq!(answers[0]["position"]["variant"], "gunjin-shogi");
    assert!(
        answers[0]["position"]["pieces"]
            .as_array()
            .unwrap()
            .contains(&json!({"at": "c5", "side": "south", "piece": "SPY"}))
    );
    assert_eq!(
        answers[1]["combat"],
        json!({"attacker_survives": false, "defender_survives": true})
    );
    assert_eq!(answers[2]["combat"], Value::Null);
    assert_eq!(
        answers[2]["outcome"],
        json!({"winner": "south", "reason": "hq_entered"})
    );
    assert!(
        answers[2]["position"]["pieces"]
            .as_array()
            .unwrap()
            .contains(&json!({"at": "d8+e8", "side": "south", "piece": "COL"}))
    );
    let error = answers[3]["error"].as_str().expect("an error");
    assert!(error.contains("c3") && error.contains("d4"), "{error}");
    // b4-b5 is no gate on the X board.
    let error = answers[4]["error"].as_str().expect("b4-b5 is a wall");
    assert!(error.contains("b5"), "{error}");
}

#[test]
fn apply_reports_the_both_immobile_draw() {
    let answers = run(
        &["rules", "apply"],
        &lines(&[json!({"position": position("gunjin-shogi", "south", &[
            ("c4", "south", "TNK"), ("c5", "north", "TNK"),
            ("h8", "north", "MIN"), ("h1", "south", "FLG")]),
            "move": ["c4", "c5"]})]),
    );
    assert_eq!(
        answers[0]["outcome"],
        json!({"winner": null, "reason": "no_legal_moves"})
    );
}

#[test]
fn random_deployments_validate_and_gate_squares_are_refused() {
    let mut input = Vec::new();
    for (variant, side) in [
        ("gunjin-shogi", "south"),
        ("gunjin-shogi+y-gates", "north"),
        ("gunjin-shogi+i-gates", "south"),
        ("gunjin-shogi+23-pieces", "north"),
    ] {
        let answers = run(
            &[
                "rules",
                "random-deployment",
                "--side",
                side,
                "--variant",
                variant,
                "--seed",
                "11",
                "--count",
                "3",
            ],
            b"",
        );
        assert_eq!(answers.len(), 3);
        for a in &answers {
            assert_eq!(a["variant"], variant);
            let n = a["pieces"].as_array().unwrap().len();
            assert_eq!(n, if variant.contains("23") { 23 } else { 31 });
            input.extend(format!("{a}\n").into_bytes());
        }
    }
    let answers = run(&["rules", "validate-deployment"], &input);
    assert_eq!(answers.len(), 12);
    assert!(
        answers.iter().all(|a| a == &json!({"valid": true})),
        "{answers:?}"
    );

    // A deployment with the flag and a mine on gate squares, one square empty and a piece short.
    let mut deployment = run(
        &[
            "rules",
            "random-deployment",
            "--side",
            "south",
            "--variant",
            "gunjin-shogi",
            "--seed",
            "5",
        ],
        b"",
    )
    .remove(0);
    let pieces = deployment["pieces"].as_array_mut().unwrap();
    let at = |p: &Value| p["at"].as_str().unwrap().to_string();
    let code = |p: &Value| p["piece"].as_str().unwrap().to_string();
    let flag = pieces.iter().position(|p| code(p) == "FLG").unwrap();
    let mine = pieces.iter().position(|p| code(p) == "MIN").unwrap();
    let on_a4 = pieces.iter().position(|p| at(p) == "a4").unwrap();
    let on_h4 = pieces.iter().position(|p| at(p) == "h4").unwrap();
    let (flag_at, mine_at) = (at(&pieces[flag]), at(&pieces[mine]));
    pieces[on_a4]["at"] = json!(flag_at);
    pieces[flag]["at"] = json!("a4");
    pieces[on_h4]["at"] = json!(mine_at);
    pieces[mine]["at"] = json!("h4");
    let removed = pieces.pop().unwrap();
    let answers = run(
        &["rules", "validate-deployment"],
        &lines(&[
            deployment.clone(),
            json!({"variant": "gunjin-shogi", "side": "south",
                   "pieces": [{"at": "e1", "piece": "GEN"}]}),
            json!({"variant": "gunjin-shogi", "side": "south",
                   "pieces": [{"at": "a1", "piece": "9"}]}),
        ]),
    );
    assert_eq!(answers[0]["valid"], false);
    let problems: Vec<&str> = answers[0]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        problems.contains(
            &"the FLG on a4 stands on a gate square, where the flag and mines are not allowed"
        ),
        "{problems:?}"
    );
    assert!(
        problems.contains(
            &"the MIN on h4 stands on a gate square, where the flag and mines are not allowed"
        ),
        "{problems:?}"
    );
    let removed_code = code(&removed);
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("expected") && p.contains(&removed_code)),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("squares left empty") && p.contains(&at(&removed))),
        "{problems:?}"
    );
    assert!(
        answers[1]["error"]
            .as_str()
            .unwrap()
            .contains("\"e1\" is not a node of the board"),
        "{}",
        answers[1]
    );
    assert!(
        answers[2]["error"]
            .as_str()
            .unwrap()
            .contains("GEN LTG MJG"),
        "{}",
        answers[2]
    );
}
