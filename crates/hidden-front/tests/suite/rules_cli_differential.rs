//! A differential check of `hidden-front rules legal-moves` and `apply`: a naive reading of the
//! spec, written here from the rule text alone (sets and loops, no bitboards), must agree with the
//! binary on many random positions. The engine is fast and clever; this is slow and obvious.

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::{Command, Stdio};

type Sq = (u8, u8); // (column 0..5, row 1..=12)

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct P {
    north: bool,
    code: char,
}

#[derive(Clone, Debug)]
struct Pos {
    north_to_move: bool,
    plies: u64,
    pieces: BTreeMap<Sq, P>,
}

fn name((c, r): Sq) -> String {
    format!("{}{}", (b'A' + c) as char, r)
}

fn parse(name: &str) -> Sq {
    (name.as_bytes()[0] - b'A', name[1..].parse().expect("row"))
}

fn all_squares() -> impl Iterator<Item = Sq> {
    (1..=12u8).flat_map(|r| (0..5u8).map(move |c| (c, r)))
}

fn is_camp((c, r): Sq) -> bool {
    matches!((c, r), (1, 3) | (3, 3) | (2, 4) | (1, 5) | (3, 5))
        || matches!((c, 13 - r), (1, 3) | (3, 3) | (2, 4) | (1, 5) | (3, 5))
}

fn is_hq((c, r): Sq) -> bool {
    (c == 1 || c == 3) && (r == 1 || r == 12)
}

/// Rail links of the spec, as unordered pairs.
fn rail_link(a: Sq, b: Sq) -> bool {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    // Along rows 2, 6, 7, 11.
    if lo.1 == hi.1 && hi.0 == lo.0 + 1 && [2, 6, 7, 11].contains(&lo.1) {
        return true;
    }
    // Up columns A and E from 2 to 11, and C6-C7.
    let (lo, hi) = if a.1 <= b.1 { (a, b) } else { (b, a) };
    lo.0 == hi.0
        && hi.1 == lo.1 + 1
        && (((lo.0 == 0 || lo.0 == 4) && lo.1 >= 2 && hi.1 <= 11) || (lo.0 == 2 && lo.1 == 6))
}

fn linked(a: Sq, b: Sq) -> bool {
    if rail_link(a, b) {
        return true;
    }
    let (dc, dr) = (a.0.abs_diff(b.0), a.1.abs_diff(b.1));
    let same_half = (a.1 <= 6) == (b.1 <= 6);
    (dc + dr == 1 && same_half) || (dc == 1 && dr == 1 && (is_camp(a) || is_camp(b)))
}

fn on_rail(s: Sq) -> bool {
    all_squares().any(|t| rail_link(s, t))
}

fn destinations(pos: &Pos, from: Sq) -> BTreeSet<Sq> {
    let me = pos.pieces[&from];
    let open = |s: Sq| match pos.pieces.get(&s) {
        None => true,
        Some(p) => p.north != me.north && !is_camp(s),
    };
    let mut out: BTreeSet<Sq> = all_squares()
        .filter(|&s| linked(from, s) && open(s))
        .collect();
    if !on_rail(from) {
        return out;
    }
    if me.code == '1' {
        let mut seen = BTreeSet::from([from]);
        let mut stack = vec![from];
        while let Some(s) = stack.pop() {
            for t in all_squares().filter(|&t| rail_link(s, t)) {
                if !seen.insert(t) {
                    continue;
                }
                if pos.pieces.contains_key(&t) {
                    if open(t) {
                        out.insert(t);
                    }
                } else {
                    out.insert(t);
                    stack.push(t);
                }
            }
        }
    } else {
        for (dc, dr) in [(1i8, 0i8), (-1, 0), (0, 1), (0, -1)] {
            let mut cur = from;
            loop {
                let (nc, nr) = (cur.0 as i8 + dc, cur.1 as i8 + dr);
                if !(0..5).contains(&nc) || !(1..=12).contains(&nr) {
                    break;
                }
                let next = (nc as u8, nr as u8);
                if !rail_link(cur, next) {
                    break;
                }
                if pos.pieces.contains_key(&next) {
                    if open(next) {
                        out.insert(next);
                    }
                    break;
                }
                out.insert(next);
                cur = next;
            }
        }
    }
    out
}

fn legal_moves(pos: &Pos, north: bool) -> BTreeSet<(Sq, Sq)> {
    pos.pieces
        .iter()
        .filter(|(s, p)| p.north == north && !matches!(p.code, 'M' | 'F') && !is_hq(**s))
        .flat_map(|(&s, _)| destinations(pos, s).into_iter().map(move |t| (s, t)))
        .collect()
}

fn rank(code: char) -> u32 {
    code.to_digit(10).expect("a ranked piece")
}

/// A fight's result: (attacker survives, defender survives).
type Fight = (bool, bool);

/// An ending: (winner `south` / `north`, or empty for a draw; reason).
type Ending = (String, String);

/// Plays a legal move; returns the fight, if any, and the ending, if the move ends the game.
fn play(pos: &mut Pos, from: Sq, to: Sq) -> (Option<Fight>, Option<Ending>) {
    let mover = pos.pieces.remove(&from).expect("a piece on the origin");
    let side = |north: bool| if north { "north" } else { "south" }.to_string();
    let mut captured = false;
    let combat = match pos.pieces.get(&to).copied() {
        None => {
            pos.pieces.insert(to, mover);
            None
        }
        Some(defender) => {
            let (a, d) = if mover.code == 'B' || defender.code == 'B' {
                captured = defender.code == 'F';
                (false, false)
            } else if defender.code == 'F' {
                captured = true;
                (true, false)
            } else if defender.code == 'M' {
                (mover.code == '1', false)
            } else {
                (
                    rank(mover.code) > rank(defender.code),
                    rank(defender.code) > rank(mover.code),
                )
            };
            if !d {
                pos.pieces.remove(&to);
            }
            if a {
                pos.pieces.insert(to, mover);
            }
            Some((a, d))
        }
    };
    pos.north_to_move = !mover.north;
    pos.plies = if combat.is_some() { 0 } else { pos.plies + 1 };
    let outcome = if captured {
        Some((side(mover.north), "flag_captured".to_string()))
    } else if legal_moves(pos, pos.north_to_move).is_empty() {
        Some((side(mover.north), "no_legal_moves".to_string()))
    } else if pos.plies >= 100 {
        Some((String::new(), "no_combat_100".to_string()))
    } else {
        None
    };
    (combat, outcome)
}

/// The position in the wire format, pieces in the engine's node order (row by row, A to E).
fn to_json(pos: &Pos) -> Value {
    let mut pieces: Vec<(&Sq, &P)> = pos.pieces.iter().collect();
    pieces.sort_by_key(|((c, r), _)| (*r, *c));
    json!({
        "variant": "hidden-front",
        "to_move": if pos.north_to_move { "north" } else { "south" },
        "plies_without_combat": pos.plies,
        "pieces": pieces.into_iter().map(|(&s, p)| json!({
            "at": name(s),
            "side": if p.north { "north" } else { "south" },
            "piece": p.code.to_string(),
        })).collect::<Vec<_>>(),
    })
}

/// A small deterministic generator (SplitMix64), so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_position(rng: &mut Rng) -> Pos {
    const CODES: &[char] = &[
        '9', '8', '7', '6', '5', '4', '3', '2', '1', '1', '1', 'B', 'M', 'F',
    ];
    let most = match rng.below(3) {
        0 => 6,
        1 => 20,
        _ => 50,
    };
    let count = 1 + rng.below(most);
    let mut pieces = BTreeMap::new();
    for _ in 0..count {
        let sq = (rng.below(5) as u8, 1 + rng.below(12) as u8);
        let p = P {
            north: rng.below(2) == 1,
            code: CODES[rng.below(CODES.len() as u64) as usize],
        };
        pieces.insert(sq, p);
    }
    Pos {
        north_to_move: rng.below(2) == 1,
        plies: [0, 98, 99, rng.below(100)][rng.below(4) as usize],
        pieces,
    }
}

fn run(args: &[&str], input: Vec<u8>) -> Vec<Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hidden-front"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start hidden-front");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().expect("wait for hidden-front");
    writer.join().expect("writer").expect("write input");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON answer"))
        .collect()
}

fn jsonl(values: &[Value]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|v| format!("{v}\n").into_bytes())
        .collect()
}

#[test]
fn the_naive_reading_of_the_spec_agrees_on_the_spec_board_shape() {
    let squares: Vec<Sq> = all_squares().collect();
    let mut links = 0;
    let mut rails = 0;
    for (i, &a) in squares.iter().enumerate() {
        for &b in &squares[i + 1..] {
            links += usize::from(linked(a, b));
            rails += usize::from(rail_link(a, b));
        }
    }
    assert_eq!((links, rails), (133, 35));
    assert_eq!(squares.iter().filter(|&&s| on_rail(s)).count(), 32);
}

#[test]
fn legal_moves_and_apply_agree_with_a_naive_reading_of_the_spec() {
    let mut rng = Rng(20_261_129);
    let positions: Vec<Pos> = (0..400).map(|_| random_position(&mut rng)).collect();
    let answers = run(
        &["rules", "legal-moves"],
        jsonl(&positions.iter().map(to_json).collect::<Vec<_>>()),
    );
    assert_eq!(answers.len(), positions.len());

    let mut requests = Vec::new();
    let mut expected = Vec::new();
    for (pos, answer) in positions.iter().zip(&answers) {
        let got: BTreeSet<(Sq, Sq)> = answer["moves"]
            .as_array()
            .unwrap_or_else(|| panic!("no moves in {answer}"))
            .iter()
            .map(|m| (parse(m[0].as_str().unwrap()), parse(m[1].as_str().unwrap())))
            .collect();
        let want = legal_moves(pos, pos.north_to_move);
        assert_eq!(
            got,
            want,
            "legal moves differ for {}\nengine only: {:?}\nnaive only: {:?}",
            to_json(pos),
            got.difference(&want)
                .map(|&(a, b)| (name(a), name(b)))
                .collect::<Vec<_>>(),
            want.difference(&got)
                .map(|&(a, b)| (name(a), name(b)))
                .collect::<Vec<_>>(),
        );
        if want.is_empty() {
            continue;
        }
        let moves: Vec<&(Sq, Sq)> = want.iter().collect();
        // Prefer fights, where the judge has work to do.
        let fights: Vec<&&(Sq, Sq)> = moves
            .iter()
            .filter(|(_, to)| pos.pieces.contains_key(to))
            .collect();
        let (from, to) = if !fights.is_empty() && rng.below(4) != 0 {
            **fights[rng.below(fights.len() as u64) as usize]
        } else {
            *moves[rng.below(moves.len() as u64) as usize]
        };
        requests.push(json!({"position": to_json(pos), "move": [name(from), name(to)]}));
        let mut after = pos.clone();
        let (combat, outcome) = play(&mut after, from, to);
        expected.push(json!({
            "position": to_json(&after),
            "combat": combat.map(|(a, d)| json!({"attacker_survives": a, "defender_survives": d})),
            "outcome": outcome.map(|(w, r)| json!({
                "winner": if w.is_empty() { Value::Null } else { json!(w) },
                "reason": r,
            })),
        }));
    }
    assert!(requests.len() > 200, "enough positions have moves");
    let applied = run(&["rules", "apply"], jsonl(&requests));
    assert_eq!(applied.len(), requests.len());
    let mut outcomes = BTreeSet::new();
    for ((request, got), want) in requests.iter().zip(&applied).zip(&expected) {
        assert_eq!(got, want, "apply differs for {request}");
        if let Some(reason) = want["outcome"]["reason"].as_str() {
            outcomes.insert(reason.to_string());
        }
    }
    // The sample reaches every ending the apply verb can report.
    assert_eq!(
        outcomes,
        BTreeSet::from(["flag_captured", "no_combat_100", "no_legal_moves"].map(String::from))
    );
}
