//! Hand-made positions: the engine's `Position` referees, the bot sees only the projection of a
//! `PlayStarted` event and of each `Moved` event for its seat, and chooses among the engine's
//! legal moves. The choices every playing level must make (take a piece known weaker, throw a
//! bomb at a known strong one, leave a known stronger one alone, never walk a non-engineer
//! into a known mine, win when a move wins) are checked at each of them; the judgement of the
//! position (defending the flag) at the belief and search levels.

use hidden_front_bot::{ComputerPlayer, Level};
use hidden_front_rules::{
    Event, Move, Node, Piece, PieceId, Position, Rules, Side, Viewer, project,
};

/// The levels that choose by what they know (random does not).
const PLAYING: [Level; 4] = [Level::Greedy, Level::Belief, Level::Search, Level::Expert];
/// The levels that judge the position after a move, not only its fight.
const JUDGING: [Level; 3] = [Level::Belief, Level::Search, Level::Expert];

struct Scenario {
    rules: Rules,
    position: Position,
    bot: ComputerPlayer,
    side: Side,
}

fn node(name: &str) -> Node {
    Rules::default().topology().node(name).unwrap()
}

impl Scenario {
    /// `pieces`: (square, side, code, id), the bot at the belief level.
    fn new(bot_side: Side, pieces: &[(&str, Side, &str, u8)]) -> Scenario {
        Scenario::at(Level::Belief, Rules::default(), bot_side, pieces)
    }

    /// `pieces`: (square, side, code, id), the bot at `level` under `rules`.
    fn at(
        level: Level,
        rules: Rules,
        bot_side: Side,
        pieces: &[(&str, Side, &str, u8)],
    ) -> Scenario {
        Scenario::seeded(level, rules, bot_side, pieces, 1)
    }

    /// [`Scenario::at`] with the bot's seed (its layouts and tie-breaks).
    fn seeded(
        level: Level,
        rules: Rules,
        bot_side: Side,
        pieces: &[(&str, Side, &str, u8)],
        seed: u64,
    ) -> Scenario {
        let topo = rules.topology();
        let node = |name: &str| topo.node(name).unwrap();
        let mut position = Position::empty(rules, bot_side);
        let mut started = Vec::new();
        for &(square, side, code, id) in pieces {
            let piece = Piece {
                side,
                kind: rules.parse_kind(code).unwrap(),
                id: PieceId(id),
            };
            assert!(position.put(node(square), piece), "{square} taken");
            started.push((node(square), piece));
        }
        let mut bot = ComputerPlayer::with_level(bot_side, rules, level, seed);
        let view = project(
            &Event::PlayStarted { pieces: started },
            Viewer::player(bot_side),
            None,
        )
        .unwrap();
        bot.observe(&view);
        Scenario {
            rules,
            position,
            bot,
            side: bot_side,
        }
    }

    /// Plays `from`-`to` for the owner of the piece on `from` and shows the bot its projection.
    fn play(&mut self, from: &str, to: &str) {
        let topo = self.rules.topology();
        let node = |name: &str| topo.node(name).unwrap();
        let mover = self.position.piece_at(node(from)).unwrap();
        self.position.set_to_move(mover.side);
        let mv = Move {
            from: node(from),
            to: node(to),
        };
        let report = self.position.play(mv).unwrap();
        let event = Event::Moved {
            mv,
            piece: report.mover,
            combat: report.combat,
            flag_reveal: Vec::new(),
        };
        let view = project(&event, Viewer::player(self.side), None).unwrap();
        self.bot.observe(&view);
    }

    fn choose(&mut self) -> Move {
        self.position.set_to_move(self.side);
        let legal: Vec<Move> = self.position.legal_moves().iter().collect();
        let mv = self.bot.choose_move(&legal);
        assert!(legal.contains(&mv));
        mv
    }

    /// The name of the bot's choice.
    fn choose_name(&mut self) -> String {
        let mv = self.choose();
        self.name(mv)
    }

    /// The bot's score of every legal move, by name.
    fn scores(&mut self) -> Vec<(String, f64)> {
        self.position.set_to_move(self.side);
        let legal: Vec<Move> = self.position.legal_moves().iter().collect();
        let scores = self.bot.score_moves(&legal);
        legal.iter().map(|m| self.name(*m)).zip(scores).collect()
    }

    fn name(&self, mv: Move) -> String {
        let topo = self.rules.topology();
        format!("{}-{}", topo.name(mv.from), topo.name(mv.to))
    }
}

use Side::{North, South};

/// The bot's flag in B1 behind mines, plus the enemy flag: a frame for the scenarios.
fn frame() -> Vec<(&'static str, Side, &'static str, u8)> {
    vec![
        ("B1", South, "F", 40),
        ("A1", South, "M", 41),
        ("C1", South, "M", 42),
        ("B12", North, "F", 30),
        ("A12", North, "M", 31),
        ("C12", North, "M", 32),
    ]
}

#[test]
fn a_piece_that_beat_an_eight_is_known_as_the_commander() {
    let mut pieces = frame();
    pieces.extend([("A6", South, "8", 1), ("A7", North, "9", 20)]);
    let mut s = Scenario::new(South, &pieces);
    s.play("A7", "A6");
    assert_eq!(
        s.bot.possible_kinds(PieceId(20)),
        Some(vec![hidden_front_rules::PieceKind(9)])
    );
}

#[test]
fn takes_a_piece_known_to_be_weaker() {
    // The enemy commander shows itself by beating the bot's 8; the front-row piece on C7 then
    // cannot be a bomb, a mine, a flag or the commander: the bot's 9 beats it for sure.
    let mut pieces = frame();
    pieces.extend([
        ("A6", South, "8", 1),
        ("C6", South, "9", 2),
        ("E3", South, "2", 3),
        ("A7", North, "9", 20),
        ("C7", North, "4", 21),
        ("E10", North, "3", 22),
    ]);
    for level in PLAYING {
        let mut s = Scenario::at(level, Rules::default(), South, &pieces);
        s.play("A7", "A6");
        let mv = s.choose();
        assert_eq!(
            s.name(mv),
            "C6-C7",
            "{level}: expected the 9 to take the weaker piece"
        );
    }
}

#[test]
fn throws_a_bomb_at_the_known_commander_and_keeps_the_seven_away() {
    let mut pieces = frame();
    pieces.extend([
        ("C6", South, "8", 1),
        ("B6", South, "B", 2),
        ("D6", South, "7", 3),
        ("C5", South, "5", 4),
        ("C7", North, "9", 20),
        ("E10", North, "3", 22),
    ]);
    for level in PLAYING {
        let mut s = Scenario::at(level, Rules::default(), South, &pieces);
        s.play("C7", "C6");
        let mv = s.choose();
        assert_eq!(
            s.name(mv),
            "B6-C6",
            "{level}: expected the bomb to meet the commander"
        );
    }
}

#[test]
fn never_attacks_a_piece_known_to_be_stronger() {
    // The enemy piece now on C6 beat the bot's 7 there: it is an 8 or a 9. The bot's other 7 on
    // D6 would attack an unknown piece gladly (most kinds lose to a 7) but must leave this one
    // alone (the bot has no bomb here).
    let mut pieces = frame();
    pieces.extend([
        ("C6", South, "7", 1),
        ("D6", South, "7", 2),
        ("E3", South, "2", 3),
        ("C7", North, "8", 20),
        ("E10", North, "3", 22),
    ]);
    let mut s = Scenario::new(South, &pieces);
    s.play("C7", "C6");
    let scores = s.scores();
    let attack = scores.iter().find(|(n, _)| n == "D6-C6").unwrap().1;
    assert!(
        attack < 0.0,
        "attacking a known stronger piece scored {attack}"
    );
    let mv = s.choose();
    assert_ne!(
        mv.to,
        node("C6"),
        "attacked a stronger piece: {}",
        s.name(mv)
    );
}

#[test]
fn attacks_an_enemy_piece_next_to_its_flag_with_its_best_piece() {
    // An enemy piece walks to B2, next to the bot's flag in B1. The bot's 7 on E2 can reach it
    // along the rail, its 3 on A2 by a step; a tempting capture waits far away for its 9.
    let mut pieces = frame();
    pieces.extend([
        ("E2", South, "7", 1),
        ("A2", South, "3", 2),
        ("C6", South, "9", 3),
        ("C2", North, "6", 20),
        ("C7", North, "2", 21),
        ("E10", North, "3", 22),
    ]);
    for level in JUDGING {
        let mut s = Scenario::at(level, Rules::default(), South, &pieces);
        s.play("C2", "B2");
        let mv = s.choose();
        assert_eq!(
            s.name(mv),
            "E2-B2",
            "{level}: expected the 7 to attack the piece next to the flag"
        );
    }
}

#[test]
fn keeps_the_blocker_next_to_its_flag() {
    // The bot's 4 on B2 is the only piece between an enemy piece on C2 and the flag in B1 (A1
    // and C1 are mined). Stepping the 4 away would let the enemy step next to the flag; the bot
    // must keep B2 held. (A regression check: other terms also keep the 4 there today.)
    let mut pieces = frame();
    pieces.extend([
        ("B2", South, "4", 1),
        ("C6", South, "9", 3),
        ("E3", South, "2", 4),
        ("C3", North, "5", 20),
        ("E10", North, "3", 22),
    ]);
    let mut s = Scenario::new(South, &pieces);
    s.play("C3", "C2");
    let scores = s.scores();
    let best = |leaving: bool| {
        scores
            .iter()
            .filter(|(n, _)| {
                let from_b2 = n.starts_with("B2-") && n != "B2-C2";
                from_b2 == leaving
            })
            .map(|(_, v)| *v)
            .fold(f64::MIN, f64::max)
    };
    assert!(
        best(true) < best(false),
        "leaving B2 scored {} against {} for the best other move",
        best(true),
        best(false)
    );
    let mv = s.choose();
    assert!(
        !(mv.from == node("B2") && s.position.piece_at(mv.to).is_none()),
        "the blocker left B2: {}",
        s.name(mv)
    );
}

#[test]
fn strikes_an_enemy_piece_two_steps_from_its_flag() {
    // An enemy piece steps to C2: next move it could stand on B2, next to the flag. The bot's 7
    // on E2 can strike it along the rail; a capture elsewhere (its 9 against C7) must wait.
    let mut pieces = frame();
    pieces.extend([
        ("E2", South, "7", 1),
        ("C6", South, "9", 3),
        ("C3", North, "6", 20),
        ("C7", North, "2", 21),
        ("E10", North, "3", 22),
    ]);
    for level in JUDGING {
        let mut s = Scenario::at(level, Rules::default(), South, &pieces);
        s.play("C3", "C2");
        let mv = s.choose();
        assert_eq!(
            s.name(mv),
            "E2-C2",
            "{level}: expected the 7 to meet the piece near the flag"
        );
    }
}

#[test]
fn takes_a_piece_it_saw_turn_along_the_rails() {
    // An enemy piece runs A7-B7-C7-C6, turning at C7: only an engineer can. The bot's 4 on C5
    // beats an engineer, while against an unknown front-row piece it would more likely lose.
    // The bot's 6 holds B2, the square next to its flag: otherwise the piece on E10, an
    // engineer in some layouts, could fly along the railway to B2 in one move, where nothing
    // answers it, and the expert would cover B2 first.
    let mut pieces = frame();
    pieces.extend([
        ("C5", South, "4", 1),
        ("E3", South, "2", 4),
        ("B2", South, "6", 5),
        ("A7", North, "1", 20),
        ("E10", North, "3", 22),
    ]);
    for level in PLAYING {
        let mut s = Scenario::at(level, Rules::default(), South, &pieces);
        s.play("A7", "C6");
        let mv = s.choose();
        assert_eq!(
            s.name(mv),
            "C5-C6",
            "{level}: expected the 4 to take the engineer"
        );
    }
}

#[test]
fn leaves_an_unknown_front_piece_alone_with_a_weak_piece() {
    // The same board, but the enemy piece only stepped C7-C6: it may be anything that moves, so
    // the bot's 4 should not gamble on it.
    let mut pieces = frame();
    pieces.extend([
        ("C5", South, "4", 1),
        ("E3", South, "2", 4),
        ("C7", North, "7", 20),
        ("E10", North, "3", 22),
    ]);
    let mut s = Scenario::new(South, &pieces);
    s.play("C7", "C6");
    let attack = s
        .scores()
        .into_iter()
        .find(|(n, _)| n == "C5-C6")
        .unwrap()
        .1;
    assert!(
        attack < 0.0,
        "attacking an unknown piece with a 4 scored {attack}"
    );
    let mv = s.choose();
    assert_ne!(s.name(mv), "C5-C6", "the 4 attacked an unknown piece");
}

#[test]
fn no_level_attacks_a_piece_known_to_be_stronger() {
    for level in PLAYING {
        let mut pieces = frame();
        pieces.extend([
            ("C6", South, "7", 1),
            ("D6", South, "7", 2),
            ("E3", South, "2", 3),
            ("C7", North, "8", 20),
            ("E10", North, "3", 22),
        ]);
        let mut s = Scenario::at(level, Rules::default(), South, &pieces);
        s.play("C7", "C6");
        let mv = s.choose();
        assert_ne!(mv.to, node("C6"), "{level} attacked a stronger piece");
    }
}

#[test]
fn no_level_walks_a_non_engineer_into_a_known_mine() {
    // Sturdy mines: the enemy piece on A11 killed the bot's commander and stayed, which only a
    // mine does. The bot's 8 on A9 could slide down the rail into it; its engineer on E9 clears
    // mines.
    let rules = Rules::parse("hidden-front+sturdy-mines").unwrap();
    for level in PLAYING {
        let mut pieces = frame();
        pieces.extend([
            ("A10", South, "9", 1),
            ("A9", South, "8", 2),
            ("E3", South, "2", 3),
            ("A11", North, "M", 20),
            ("E10", North, "3", 22),
        ]);
        let mut s = Scenario::at(level, rules, South, &pieces);
        s.play("A10", "A11");
        assert_eq!(
            s.bot.possible_kinds(PieceId(20)),
            Some(vec![hidden_front_rules::piece::junqi::MINE])
        );
        let mv = s.choose_name();
        assert_ne!(mv, "A9-A11", "{level} sent its 8 into the known mine");
    }
}

#[test]
fn every_level_wins_by_entering_the_gunjin_hq_with_an_officer() {
    let rules = Rules::parse("gunjin-shogi").unwrap();
    for level in PLAYING {
        let pieces = [
            ("d7", South, "MAJ", 1),
            ("a1", South, "FLG", 2),
            ("b2", South, "GEN", 3),
            ("a8", North, "FLG", 20),
            ("h5", North, "CPT", 21),
            ("g6", North, "MIN", 22),
        ];
        let mut s = Scenario::at(level, rules, South, &pieces);
        assert_eq!(s.choose_name(), "d7-d8+e8", "{level} missed the HQ win");
    }
}

#[test]
fn judging_levels_strike_a_gunjin_piece_next_to_their_hq() {
    // An enemy piece steps next to the bot's HQ; if it is an officer it wins by entering. The
    // bot's general beside it beats everything that moves but the spy.
    let rules = Rules::parse("gunjin-shogi").unwrap();
    for level in JUDGING {
        let pieces = [
            ("c2", South, "GEN", 1),
            ("a1", South, "FLG", 2),
            ("h1", South, "CPT", 3),
            ("d3", North, "COL", 20),
            ("a8", North, "FLG", 21),
            ("h8", North, "CPT", 22),
        ];
        let mut s = Scenario::at(level, rules, South, &pieces);
        s.play("d3", "d2");
        assert_eq!(
            s.choose_name(),
            "c2-d2",
            "{level} let the piece stand by its HQ"
        );
    }
}

#[test]
fn no_level_can_tell_hidden_kinds_apart() {
    // The same public game twice, with the enemy's hidden kinds swapped around: each level must
    // choose the same move, since it sees only projections (the search's layouts come from the
    // belief, not from the game).
    let armies = [["9", "4", "B"], ["B", "9", "4"]];
    for rules in [Rules::default(), Rules::parse("gunjin-shogi").unwrap()] {
        let gunjin = rules.family == hidden_front_rules::Family::GunjinShogi;
        for level in Level::ALL {
            let mut chosen = Vec::new();
            for army in armies {
                let army: Vec<&str> = if gunjin {
                    army.iter()
                        .map(|k| match *k {
                            "9" => "GEN",
                            "4" => "CPT",
                            _ => "TNK",
                        })
                        .collect()
                } else {
                    army.to_vec()
                };
                let pieces: Vec<(&str, Side, &str, u8)> = if gunjin {
                    vec![
                        ("a1", South, "FLG", 40),
                        ("c3", South, "MAJ", 1),
                        ("e3", South, "ENG", 2),
                        ("a8", North, "FLG", 30),
                        ("c5", North, army[0], 20),
                        ("d6", North, army[1], 21),
                        ("f6", North, army[2], 22),
                    ]
                } else {
                    let mut p = frame();
                    p.extend([
                        ("C5", South, "8", 1),
                        ("E4", South, "1", 2),
                        ("C7", North, army[0], 20),
                        ("D7", North, army[1], 21),
                        ("E7", North, army[2], 22),
                    ]);
                    p
                };
                let mut s = Scenario::at(level, rules, South, &pieces);
                chosen.push(s.choose_name());
            }
            assert_eq!(
                chosen[0], chosen[1],
                "{rules} {level} told the armies apart"
            );
        }
    }
}

#[test]
fn no_judging_level_walks_into_the_enemys_empty_hq() {
    // The enemy's flag is in B12 (known from the frame's start only as a piece there); D12, the
    // other HQ, is empty: a piece that steps in is frozen there for good and wins nothing. The
    // bot's 3 on D11 and its 2 on E11 stand next to it; other moves are quiet.
    let mut pieces = frame();
    pieces.extend([
        ("D11", South, "3", 1),
        ("E11", South, "2", 2),
        ("C6", South, "9", 3),
        ("A5", South, "4", 4),
        ("E7", North, "5", 20),
        ("A9", North, "3", 21),
    ]);
    for level in JUDGING {
        for seed_move in [("A9", "A8"), ("E7", "E8")] {
            let mut s = Scenario::at(level, Rules::default(), South, &pieces);
            s.play(seed_move.0, seed_move.1);
            let scores = s.scores();
            let into_hq: Vec<&(String, f64)> =
                scores.iter().filter(|(n, _)| n.ends_with("-D12")).collect();
            assert!(!into_hq.is_empty(), "the HQ is reachable: {scores:?}");
            let mv = s.choose();
            assert_ne!(
                mv.to,
                node("D12"),
                "{level}: walked into the empty HQ ({}); scores {scores:?}",
                s.name(mv)
            );
        }
    }
}

/// Whether North's piece on `at` can step next to South's flag on B1 (B2, the only square next
/// to it not mined in the frame) in one move, and South then has no move that removes it there.
fn flag_falls_to(s: &Scenario, at: &str) -> bool {
    let mut pos = s.position;
    pos.set_to_move(North);
    let landing = Move {
        from: node(at),
        to: node("B2"),
    };
    if !pos.legal_moves().iter().any(|m| m == landing) {
        return false;
    }
    pos.play(landing).unwrap();
    let answers: Vec<Move> = pos.legal_moves().iter().collect();
    !answers.into_iter().any(|m| {
        let mut after = pos;
        m.to == node("B2")
            && after
                .play(m)
                .is_ok_and(|r| r.combat.is_some_and(|c| !c.defender_survives))
    })
}

#[test]
fn expert_shuts_the_railway_an_engineer_could_fly_to_its_flag() {
    // An enemy piece that has only stepped (a mover: an engineer in a few layouts of the
    // belief) stands on the east rail at E7. If it is an engineer it can fly E7-E2-B2, next to
    // the flag in B1 (A1 and C1 are mined), where no piece of the bot could reach it: the flag
    // would fall next ply. Meanwhile the bot's 9 can take an unknown piece at C7 for good odds.
    // The expert judges the flag threat at its worst case and shuts the route (or covers B2)
    // first; the piece on E7 is in truth an engineer.
    let mut pieces = frame();
    pieces.extend([
        ("C6", South, "9", 3),
        ("B4", South, "4", 4),
        ("D4", South, "3", 5),
        ("E8", North, "1", 20),
        ("C7", North, "3", 21),
        ("A9", North, "5", 22),
    ]);
    for seed in 1..=8 {
        let mut s = Scenario::seeded(Level::Expert, Rules::default(), South, &pieces, seed);
        s.play("E8", "E7");
        assert!(flag_falls_to(&s, "E7"), "the puzzle: the route is open");
        let mv = s.choose();
        let name = s.name(mv);
        s.position.set_to_move(South);
        s.position.play(mv).unwrap();
        assert!(
            !flag_falls_to(&s, "E7"),
            "seed {seed}: {name} leaves the engineer's route to the flag open"
        );
    }
}
