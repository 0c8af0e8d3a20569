//! The bindings' functions natively, fed the real generated proto JSON: views and events of real
//! games (the wire crate's conversions of `view`/`project`, serialized by the generated pbjson
//! serde) must read back to the same engine facts.

use hidden_front_inference::Tracker;
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{
    Command, Deployment, Event, Game, GameRng, Move, Phase, Rules, Side, ViewEvent, Viewer,
    project, reveal, view,
};
use hidden_front_web_engine::api::{self, Inference};
use hidden_front_web_engine::json::{
    DeploymentJson, GameEventJson, GameViewJson, VisiblePieceJson,
};
use hidden_front_wire as wire;
use std::collections::BTreeSet;

const RULE_SETS: [&str; 5] = [
    "hidden-front",
    "hidden-front+hq-mobile+flag-reveal",
    "gunjin-shogi",
    "gunjin-shogi+23-pieces",
    "gunjin-shogi+i-gates",
];

fn seats() -> wire::Seats<'static> {
    wire::Seats {
        game_id: "0190a0e0-0000-7000-8000-000000000000",
        south_player: "alice",
        north_player: "bob",
    }
}

/// A real message through the generated pbjson serde into one of this crate's structs.
fn through_json<M: serde::Serialize, T: serde::de::DeserializeOwned>(message: &M) -> T {
    let json = serde_json::to_value(message).expect("pbjson serializes");
    serde_json::from_value(json.clone()).unwrap_or_else(|e| panic!("{e}: {json}"))
}

fn view_json(game: &Game, viewer: Viewer, version: u64) -> GameViewJson {
    let v = view(game, viewer);
    through_json(&wire::game_view(
        &v,
        seats(),
        version,
        pb::TimeControl::default(),
    ))
}

fn event_json(rules: &Rules, seq: u64, event: &ViewEvent) -> GameEventJson {
    through_json(&wire::game_event(rules, "g", seq, event))
}

fn engine_moves(game: &Game, side: Side) -> BTreeSet<(String, String)> {
    let mut pos = *game.position();
    pos.set_to_move(side);
    let topo = game.rules().topology();
    pos.legal_moves()
        .iter()
        .map(|m| (topo.name(m.from).to_string(), topo.name(m.to).to_string()))
        .collect()
}

/// A seeded random game, with every engine event it produced.
struct Played {
    game: Game,
    events: Vec<Event>,
}

/// Plays a random game, calling `at_ply` with the game before every move.
fn play(rules: Rules, seed: u64, mut at_ply: impl FnMut(&Game, u64)) -> Played {
    let mut rng = GameRng::from_seed(seed);
    let (mut game, mut events) = Game::create(rules, Side::North, &mut rng);
    for side in Side::BOTH {
        events.extend(game.handle(&Command::Confirm { side }, &mut rng).unwrap());
    }
    while game.phase() == Phase::Play {
        at_ply(&game, events.len() as u64);
        let legal: Vec<Move> = game.position().legal_moves().iter().collect();
        let mv = legal[rng.below(legal.len() as u32) as usize];
        let side = game.to_move();
        events.extend(game.handle(&Command::Move { side, mv }, &mut rng).unwrap());
    }
    Played { game, events }
}

#[test]
fn legal_moves_from_the_view_json_are_the_engines() {
    let mut checked = 0;
    for (i, name) in RULE_SETS.iter().enumerate() {
        let rules = Rules::parse(name).unwrap();
        for seed in 0..4 {
            play(rules, seed * 31 + i as u64, |game, version| {
                if version % 5 != 0 {
                    return;
                }
                for side in Side::BOTH {
                    let got: BTreeSet<(String, String)> =
                        api::legal_moves(&view_json(game, Viewer::player(side), version))
                            .unwrap()
                            .into_iter()
                            .map(|m| (m.from, m.to))
                            .collect();
                    assert_eq!(got, engine_moves(game, side), "{name} seed {seed}");
                    checked += 1;
                }
                let spectator = view_json(game, Viewer::Spectator, version);
                assert!(api::legal_moves(&spectator).unwrap().is_empty());
            });
        }
    }
    assert!(checked > 200, "{checked}");
}

#[test]
fn no_legal_moves_outside_play_and_errors_for_nonsense() {
    let rules = Rules::default();
    let mut rng = GameRng::from_seed(3);
    let (game, _) = Game::create(rules, Side::South, &mut rng);
    assert!(
        api::legal_moves(&view_json(&game, Viewer::South, 1))
            .unwrap()
            .is_empty()
    );
    let bad: GameViewJson = serde_json::from_value(serde_json::json!({
        "viewer": "VIEWER_SOUTH", "rules": "hidden-front", "phase": "PHASE_PLAY",
        "firstMover": "SIDE_SOUTH", "toMove": "SIDE_SOUTH",
        "pieces": [{"square": "Z9", "side": "SIDE_SOUTH", "id": 1, "piece": "9"}]
    }))
    .unwrap();
    let refused = api::legal_moves(&bad).unwrap_err().0;
    assert!(refused.contains("Z9"), "{refused}");
    let unknown: GameViewJson =
        serde_json::from_value(serde_json::json!({"viewer": 1, "rules": "chess", "phase": 2}))
            .unwrap();
    assert!(api::legal_moves(&unknown).is_err());
}

#[test]
fn the_inference_fed_the_json_equals_the_tracker_fed_the_view_events() {
    for (i, name) in RULE_SETS.iter().enumerate() {
        let rules = Rules::parse(name).unwrap();
        for seed in 0..6 {
            let played = play(rules, seed * 17 + i as u64, |_, _| {});
            for side in Side::BOTH {
                let mut tracker = Tracker::new(rules, side);
                let mut from_views = Inference::new(name, api::side_name(side)).unwrap();
                let mut from_json = Inference::new(name, api::side_name(side)).unwrap();
                for (seq, event) in played.events.iter().enumerate() {
                    if matches!(event, Event::Ended { .. }) {
                        continue;
                    }
                    let Some(v) = project(event, Viewer::player(side), None) else {
                        continue;
                    };
                    tracker.observe(&v);
                    from_views.observe_view(&v);
                    let json = event_json(&rules, seq as u64 + 1, &v);
                    if matches!(
                        v,
                        ViewEvent::PlayStarted { .. }
                            | ViewEvent::Moved { .. }
                            | ViewEvent::TimedOut { .. }
                    ) {
                        assert_eq!(api::view_event(&rules, &json).unwrap(), Some(v.clone()));
                    }
                    from_json.observe(&json).unwrap();
                    assert_eq!(from_json.possible(), from_views.possible(), "{name}");
                }
                // And the answers are the tracker's.
                let possible = from_json.possible();
                assert_eq!(possible.len(), tracker.beliefs().pieces().len());
                for (p, e) in possible.iter().zip(tracker.beliefs().pieces()) {
                    assert_eq!(p.id, u32::from(e.id.0));
                    assert_eq!(p.codes.len() as u32, e.possible.len());
                    assert_eq!((p.moved, p.alive), (e.moved, e.alive));
                }
            }
        }
    }
}

#[test]
fn deployments_validate_and_swap_as_the_engine_does() {
    for name in RULE_SETS {
        let rules = Rules::parse(name).unwrap();
        let mut rng = GameRng::from_seed(11);
        for side in Side::BOTH {
            let d = Deployment::random(&rules, side, &mut rng);
            let json: DeploymentJson = through_json(&wire::deployment_to_proto(&rules, &d));
            assert_eq!(api::validate_deployment(name, &json).unwrap(), vec![]);
            let topo = rules.topology();
            let squares: Vec<_> = d.placements.iter().map(|(n, _)| *n).collect();
            for a in squares.iter().step_by(3) {
                for b in squares.iter().step_by(4) {
                    let got = api::check_swap(name, &json, topo.name(*a), topo.name(*b)).unwrap();
                    match d.swapped(&rules, *a, *b) {
                        Ok(swapped) => {
                            assert!(got.ok);
                            let expected: DeploymentJson =
                                through_json(&wire::deployment_to_proto(&rules, &swapped));
                            assert_eq!(got.deployment.unwrap(), expected);
                            assert_eq!(api::validate_deployment(name, &expected).unwrap(), vec![]);
                        }
                        Err(e) => {
                            assert!(!got.ok);
                            let problems = got.problems.unwrap();
                            assert_eq!(problems.len(), e.0.len());
                            for (p, q) in problems.iter().zip(&e.0) {
                                assert_eq!(p.message, q.to_string());
                                assert!(
                                    p.reason.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    let bad: DeploymentJson = serde_json::from_value(serde_json::json!({
        "side": "SIDE_SOUTH", "placements": [{"square": "A1", "piece": "F"}, {"square": "Q1", "piece": "9"}]
    }))
    .unwrap();
    let problems = api::validate_deployment("hidden-front", &bad).unwrap();
    assert_eq!(problems[0].reason, "UNKNOWN_SQUARE");
    let flag_out: DeploymentJson = serde_json::from_value(serde_json::json!({
        "side": "SIDE_SOUTH", "placements": [{"square": "A1", "piece": "F"}]
    }))
    .unwrap();
    let reasons: Vec<&str> = api::validate_deployment("hidden-front", &flag_out)
        .unwrap()
        .iter()
        .map(|p| p.reason)
        .collect();
    assert!(reasons.contains(&"FLAG_NOT_IN_HQ"), "{reasons:?}");
    assert!(reasons.contains(&"WRONG_COUNT"), "{reasons:?}");
}

#[test]
fn topology_describes_both_families() {
    let junqi = api::topology("hidden-front").unwrap();
    assert_eq!((junqi.family, junqi.columns, junqi.rows), ("junqi", 5, 12));
    assert_eq!(junqi.nodes.len(), 60);
    assert_eq!(junqi.links.len(), 133);
    assert_eq!(junqi.nodes.iter().filter(|n| n.camp).count(), 10);
    assert_eq!(junqi.kinds[0].code, "9");
    assert_eq!(
        junqi.kinds.iter().map(|k| k.count as usize).sum::<usize>(),
        25
    );
    let a1 = &junqi.nodes[0];
    assert_eq!(
        (a1.name.as_str(), a1.column, a1.row, a1.half),
        ("A1", 0, 0, "south")
    );
    let gunjin = api::topology("gunjin-shogi").unwrap();
    assert_eq!(
        (gunjin.family, gunjin.columns, gunjin.rows),
        ("gunjin", 8, 8)
    );
    assert_eq!(gunjin.nodes.len(), 62);
    let hq: Vec<_> = gunjin.nodes.iter().filter(|n| n.hq.is_some()).collect();
    assert_eq!(hq.len(), 2);
    assert!(hq.iter().all(|n| n.span == 2 && n.column == 3));
    assert_eq!(gunjin.nodes.iter().filter(|n| n.gate).count(), 8);
    assert_eq!(gunjin.pieces_per_side, 31);
    assert!(api::topology("chess").is_err());
}

#[test]
fn moves_parse_in_every_written_form() {
    for text in ["A6 A7", "A6-A7", "a6a7", " a6 - a7 "] {
        let p = api::parse_move("hidden-front", text).unwrap();
        assert!(p.ok, "{text}");
        let mv = p.mv.unwrap();
        assert_eq!((mv.from.as_str(), mv.to.as_str()), ("A6", "A7"));
    }
    let p = api::parse_move("hidden-front", "A10A11")
        .unwrap()
        .mv
        .unwrap();
    assert_eq!((p.from.as_str(), p.to.as_str()), ("A10", "A11"));
    let g = api::parse_move("gunjin-shogi", "d1+e1 d2")
        .unwrap()
        .mv
        .unwrap();
    assert_eq!((g.from.as_str(), g.to.as_str()), ("d1+e1", "d2"));
    let g = api::parse_move("gunjin-shogi", "b4b5").unwrap().mv.unwrap();
    assert_eq!((g.from.as_str(), g.to.as_str()), ("b4", "b5"));
    for bad in ["", "A6", "A6 A6", "hello world", "A6 Z9"] {
        let p = api::parse_move("hidden-front", bad).unwrap();
        assert!(!p.ok && p.message.is_some(), "{bad}");
    }
}

#[test]
fn replay_boards_follow_the_game() {
    for (i, name) in RULE_SETS.iter().enumerate() {
        let rules = Rules::parse(name).unwrap();
        // The boards the engine passes through, after play starts and after each move.
        let mut boards = Vec::new();
        let played = play(rules, 5 + i as u64, |game, _| boards.push(*game.position()));
        boards.push(*played.game.position());
        let end = reveal(&played.game).unwrap();
        let reveal_json: pb::EndReveal = wire::reveal_to_proto(&rules, &end);
        let starting: Vec<VisiblePieceJson> = through_json(&reveal_json.starting_pieces);
        let events: Vec<GameEventJson> = played
            .events
            .iter()
            .enumerate()
            .filter_map(|(seq, e)| {
                project(e, Viewer::Spectator, Some(&end))
                    .map(|v| event_json(&rules, seq as u64 + 1, &v))
            })
            .collect();
        let steps = api::replay_boards(name, &starting, &events).unwrap();
        assert_eq!(steps.len(), boards.len(), "{name}");
        let topo = rules.topology();
        for (step, board) in steps.iter().zip(&boards) {
            let expected: BTreeSet<(String, u32, String)> = board
                .pieces()
                .map(|(n, p)| {
                    (
                        topo.name(n).to_string(),
                        u32::from(p.id.0),
                        rules.code(p.kind).to_string(),
                    )
                })
                .collect();
            let got: BTreeSet<(String, u32, String)> = step
                .pieces
                .iter()
                .map(|p| (p.square.clone(), p.id, p.piece.clone()))
                .collect();
            assert_eq!(got, expected, "{name} seq {}", step.seq);
        }
        assert!(steps[1..].iter().all(|s| s.mv.is_some()));
    }
}

#[test]
fn the_digest_is_deterministic_and_depends_on_the_seed() {
    let a = hidden_front_web_engine::agreement_digest(1, 12);
    assert_eq!(a, hidden_front_web_engine::agreement_digest(1, 12));
    assert_ne!(a, hidden_front_web_engine::agreement_digest(2, 12));
    assert!(a.ends_with(&format!("-12-{}", a.rsplit('-').next().unwrap())));
}

/// A seeded random game's log with every kind of event a viewer follows: drafts and confirms
/// (or the deployment deadline, by which a seat may be lost), moves, lost turns, draw offers
/// declined or lapsing, and an end by play, resignation or an agreed draw.
fn varied_log(rules: Rules, seed: u64) -> Vec<Event> {
    let mut rng = GameRng::from_seed(seed);
    let first = if seed.is_multiple_of(2) {
        Side::South
    } else {
        Side::North
    };
    let (mut game, mut log) = Game::create(rules, first, &mut rng);
    let mut run = |game: &mut Game, rng: &mut GameRng, command: Command| {
        if let Ok(events) = game.handle(&command, rng) {
            log.extend(events);
        }
    };
    for side in Side::BOTH {
        run(&mut game, &mut rng, Command::Reshuffle { side });
    }
    match seed % 5 {
        3 => {
            run(&mut game, &mut rng, Command::Confirm { side: Side::South });
            let present = [true, false];
            run(&mut game, &mut rng, Command::DeploymentDeadline { present });
        }
        4 => {
            let present = [true, true];
            run(&mut game, &mut rng, Command::DeploymentDeadline { present });
        }
        _ => {
            for side in Side::BOTH {
                run(&mut game, &mut rng, Command::Confirm { side });
            }
        }
    }
    let mut finale = true;
    while game.phase() == Phase::Play {
        let side = game.to_move();
        if finale && game.plies() >= 14 {
            finale = false;
            if seed % 5 == 1 {
                run(&mut game, &mut rng, Command::Resign { side });
            } else if seed % 5 == 2 {
                // A pending offer of the other side is answered first.
                let other = side.other();
                run(
                    &mut game,
                    &mut rng,
                    Command::AnswerDraw {
                        side,
                        accept: false,
                    },
                );
                run(&mut game, &mut rng, Command::OfferDraw { side });
                run(
                    &mut game,
                    &mut rng,
                    Command::AnswerDraw {
                        side: other,
                        accept: true,
                    },
                );
            }
            continue;
        }
        match rng.below(16) {
            0 => run(&mut game, &mut rng, Command::Timeout { side }),
            1 => run(&mut game, &mut rng, Command::OfferDraw { side }),
            2 => {
                run(&mut game, &mut rng, Command::OfferDraw { side });
                let other = side.other();
                run(
                    &mut game,
                    &mut rng,
                    Command::AnswerDraw {
                        side: other,
                        accept: false,
                    },
                );
            }
            _ => {
                let legal: Vec<Move> = game.position().legal_moves().iter().collect();
                let mv = legal[rng.below(legal.len() as u32) as usize];
                run(&mut game, &mut rng, Command::Move { side, mv });
            }
        }
    }
    log
}

/// The gateway's view as the page holds it, with presence and clocks (which the engine's view
/// does not hold) set, as a `get_game` answer has them while the game is on.
fn page_view(game: &Game, viewer: Viewer, version: u64) -> pb::GameView {
    let mut v = wire::game_view(
        &view(game, viewer),
        seats(),
        version,
        pb::TimeControl {
            name: "online".into(),
            deployment_seconds: 90,
            move_seconds: 30,
            reconnect_seconds: 60,
        },
    );
    v.south_connected = true;
    v.north_connected = false;
    if game.phase() != Phase::Ended {
        v.turn_deadline_unix_millis = 1_700_000_030_000;
        v.north_away_deadline_unix_millis = 1_700_000_060_000;
    }
    v
}

#[test]
fn following_the_event_json_gives_the_view_json_after_every_event() {
    let mut applied = 0;
    let mut ended = 0;
    let mut kinds = BTreeSet::new();
    for (i, name) in RULE_SETS.iter().enumerate() {
        let rules = Rules::parse(name).unwrap();
        for seed in 0..10 {
            let log = varied_log(rules, seed * 13 + i as u64);
            for event in &log {
                let debug = format!("{event:?}");
                kinds.insert(debug[..debug.find([' ', '{']).unwrap_or(debug.len())].to_string());
            }
            for viewer in Viewer::ALL {
                let mut game = Game::replay(&log[..1]).unwrap();
                let mut version = 1;
                let mut held: GameViewJson = through_json(&page_view(&game, viewer, version));
                for (at, event) in log.iter().enumerate().skip(1) {
                    game.apply(event).unwrap();
                    let end = reveal(&game);
                    let seq = at as u64 + 1;
                    if let Some(shown) = project(event, viewer, end.as_ref()) {
                        let next = api::apply_event(&held, &event_json(&rules, seq, &shown))
                            .unwrap_or_else(|e| panic!("{name} {viewer:?} {event:?}: {e}"));
                        // What the page holds: the answer as JSON.
                        held =
                            serde_json::from_value(serde_json::to_value(&next).unwrap()).unwrap();
                        version = seq;
                        applied += 1;
                    }
                    let json = serde_json::to_value(&held).unwrap();
                    let got: pb::GameView = serde_json::from_value(json.clone())
                        .unwrap_or_else(|e| panic!("{e}: {json}"));
                    assert_eq!(
                        got,
                        page_view(&game, viewer, version),
                        "{name} seed {seed} {viewer:?} after {event:?}"
                    );
                    // The same fields as the gateway writes, none dropped or added.
                    let gateway = serde_json::to_value(page_view(&game, viewer, version)).unwrap();
                    let keys = |v: &serde_json::Value| {
                        v.as_object()
                            .unwrap()
                            .keys()
                            .cloned()
                            .collect::<BTreeSet<_>>()
                    };
                    assert_eq!(keys(&json), keys(&gateway), "{name} {viewer:?}");
                }
                ended += usize::from(game.phase() == Phase::Ended);
            }
        }
    }
    assert!(applied > 5_000, "{applied}");
    let every = [
        "Created",
        "DeploymentDrafted",
        "DeploymentConfirmed",
        "PlayStarted",
        "Moved",
        "TimedOut",
        "DrawOffered",
        "DrawDeclined",
        "DrawLapsed",
        "Resigned",
        "SeatLost",
        "Ended",
    ];
    assert_eq!(
        kinds,
        every.map(String::from).into(),
        "events the logs hold"
    );
    assert_eq!(ended, RULE_SETS.len() * 10 * 3);
}

#[test]
fn an_event_that_does_not_follow_is_refused() {
    let rules = Rules::default();
    let log = varied_log(rules, 0);
    let mut game = Game::replay(&log[..1]).unwrap();
    let mut at_play = None;
    let mut first_move = None;
    for (at, event) in log.iter().enumerate().skip(1) {
        game.apply(event).unwrap();
        if matches!(event, Event::PlayStarted { .. }) {
            at_play = Some((at as u64 + 1, game.clone()));
        }
        if first_move.is_none() && matches!(event, Event::Moved { .. }) {
            first_move = Some((at as u64 + 1, event.clone()));
        }
    }
    let (started, game) = at_play.unwrap();
    let (seq, moved) = first_move.unwrap();
    let viewer = Viewer::South;
    let held: GameViewJson = through_json(&page_view(&game, viewer, started));
    let shown = event_json(&rules, seq, &project(&moved, viewer, None).unwrap());
    let after = api::apply_event(&held, &shown).unwrap();
    assert_eq!(after.version.0, seq);
    // The same move again: its piece has left the square.
    let again = event_json(&rules, seq + 1, &project(&moved, viewer, None).unwrap());
    assert!(
        api::apply_event(&after, &again)
            .unwrap_err()
            .0
            .contains("no piece")
    );
    // An event at or before the view's version.
    assert!(
        api::apply_event(&after, &shown)
            .unwrap_err()
            .0
            .contains("not after")
    );
    // A move while the view is still in deployment.
    let deploying: GameViewJson =
        through_json(&page_view(&Game::replay(&log[..1]).unwrap(), viewer, 1));
    assert!(
        api::apply_event(&deploying, &shown)
            .unwrap_err()
            .0
            .contains("phase")
    );
    // An event without a body this engine knows.
    let unknown: GameEventJson =
        serde_json::from_value(serde_json::json!({"seq": "99", "futureThing": {}})).unwrap();
    assert!(api::apply_event(&after, &unknown).is_err());
}
