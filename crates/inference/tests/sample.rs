//! The layout sampler against the seat's observations: in seeded random refereed games of both
//! families, every layout drawn for a seat (from its belief alone) is a legal starting army
//! (the engine's deployment validation: start squares and counts), gives each opponent piece a
//! kind it can still be, makes every piece that moved a mobile kind, replays every fight seen
//! with the result seen, and keeps a revealed flag a flag.

mod common;

use common::feed;

use hidden_front_inference::{KindSet, Tracker};
use hidden_front_rules::{
    Command, Deployment, Event, Family, Game, GameRng, Node, Phase, PieceId, PieceKind, Position,
    Rules, Side, Viewer, piece::gunjin, project,
};
use std::collections::HashMap;

const RULE_SETS: [&str; 5] = [
    "hidden-front",
    "hidden-front+hq-mobile+front-bombs+sturdy-mines+bomb-spares-flag+flag-reveal",
    "gunjin-shogi",
    "gunjin-shogi+y-gates+tank-beats-engineer+mine-survives",
    "gunjin-shogi+23-pieces",
];

/// A fight a seat saw: its own piece's kind, the opponent piece, who attacked, the result.
struct Seen {
    mine: PieceKind,
    enemy: PieceId,
    enemy_attacked: bool,
    survivals: (bool, bool),
}

fn flag(rules: &Rules) -> PieceKind {
    hidden_front_inference::flag_kind(rules)
}

/// Plays a random game; every 7 plies draws layouts for both seats and checks them.
fn check_game(rules: Rules, seed: u64) -> u32 {
    let mut rng = GameRng::from_seed(seed);
    let (mut game, events) = Game::create(rules, Side::South, &mut rng);
    let mut trackers = [
        Tracker::new(rules, Side::South),
        Tracker::new(rules, Side::North),
    ];
    feed(&mut trackers, &events);
    for side in Side::BOTH {
        let events = game.handle(&Command::Confirm { side }, &mut rng).unwrap();
        feed(&mut trackers, &events);
    }
    let start: HashMap<PieceId, (Node, Side, PieceKind)> = game
        .starting_pieces()
        .into_iter()
        .map(|(n, p)| (p.id, (n, p.side, p.kind)))
        .collect();
    let mut moved: [Vec<PieceId>; 2] = [Vec::new(), Vec::new()];
    let mut seen: [Vec<Seen>; 2] = [Vec::new(), Vec::new()];
    let mut revealed: [Vec<PieceId>; 2] = [Vec::new(), Vec::new()];
    let mut checked = 0;
    while game.phase() == Phase::Play {
        let side = game.to_move();
        let events = common::random_move(&mut game, &mut rng);
        for e in &events {
            if let Event::Moved {
                piece,
                combat,
                flag_reveal,
                ..
            } = e
            {
                // The seat that does not move sees the mover move.
                moved[side.other().index()].push(piece.id);
                if let Some(c) = combat {
                    let attacker = piece.kind;
                    let defender = start[&c.defender.id].2;
                    // A Gunjin flag fights as the piece behind it: left to the tracker's tests.
                    let gunjin_flag = rules.family == Family::GunjinShogi
                        && (attacker == gunjin::FLAG || defender == gunjin::FLAG);
                    if !gunjin_flag {
                        let survivals = (c.attacker_survives, c.defender_survives);
                        seen[side.index()].push(Seen {
                            mine: attacker,
                            enemy: c.defender.id,
                            enemy_attacked: false,
                            survivals,
                        });
                        seen[side.other().index()].push(Seen {
                            mine: defender,
                            enemy: piece.id,
                            enemy_attacked: true,
                            survivals,
                        });
                    }
                }
                for r in flag_reveal {
                    for &(_, id) in &r.flags {
                        revealed[r.side.other().index()].push(id);
                    }
                }
            }
        }
        feed(&mut trackers, &events);
        if game.plies() % 7 != 0 {
            continue;
        }
        let judge = Position::empty(rules, Side::South);
        for t in &trackers {
            let me = t.side().index();
            let sampler = t.beliefs().sampler();
            assert!(sampler.consistent(), "{rules} seed {seed}");
            for _ in 0..4 {
                let layout = sampler.draw(&mut rng);
                assert!(layout.consistent());
                let kind = |id: PieceId| layout.kind_of(id).expect("every opponent piece");
                for p in t.beliefs().pieces() {
                    assert!(p.possible.contains(kind(p.id)), "{rules} seed {seed}");
                }
                // Start squares and counts: the layout is a valid deployment.
                let placements: Vec<(Node, PieceKind)> = layout
                    .kinds()
                    .iter()
                    .map(|&(id, k)| (start[&id].0, k))
                    .collect();
                assert_eq!(placements.len(), rules.pieces_per_side());
                let army = Deployment::new(t.side().other(), placements);
                assert_eq!(army.validate(&rules), Ok(()), "{rules} seed {seed}");
                for id in &moved[me] {
                    if start[id].1 != t.side() {
                        assert!(rules.kind_moves(kind(*id)), "{rules} seed {seed}");
                    }
                }
                for f in &seen[me] {
                    let enemy = kind(f.enemy);
                    if rules.family == Family::GunjinShogi && enemy == gunjin::FLAG {
                        // It fought as the piece behind it (the tracker's tests check that).
                        continue;
                    }
                    let result = if f.enemy_attacked {
                        judge.judge(enemy, f.mine)
                    } else {
                        judge.judge(f.mine, enemy)
                    };
                    assert_eq!((result.0, result.1), f.survivals, "{rules} seed {seed}");
                }
                for id in &revealed[me] {
                    assert_eq!(kind(*id), flag(&rules), "{rules} seed {seed}");
                }
                checked += 1;
            }
        }
    }
    checked
}

#[test]
fn every_layout_is_consistent_with_what_the_seat_saw() {
    let mut checked = 0;
    for (i, name) in RULE_SETS.iter().enumerate() {
        for seed in 0..12u64 {
            checked += check_game(Rules::parse(name).unwrap(), seed * 104_729 + i as u64);
        }
    }
    assert!(checked > 2000, "only {checked} layouts checked");
}

#[test]
fn layouts_vary_where_the_belief_is_open_and_agree_where_it_is_closed() {
    let rules = Rules::default();
    let mut rng = GameRng::from_seed(3);
    let (mut game, events) = Game::create(rules, Side::South, &mut rng);
    let mut tracker = Tracker::new(rules, Side::South);
    for e in &events {
        if let Some(v) = project(e, Viewer::player(Side::South), None) {
            tracker.observe(&v);
        }
    }
    for side in Side::BOTH {
        for e in game.handle(&Command::Confirm { side }, &mut rng).unwrap() {
            if let Some(v) = project(&e, Viewer::player(Side::South), None) {
                tracker.observe(&v);
            }
        }
    }
    let sampler = tracker.beliefs().sampler();
    let mut kinds_of: HashMap<PieceId, KindSet> = HashMap::new();
    for _ in 0..200 {
        let layout = sampler.draw(&mut rng);
        for &(id, k) in layout.kinds() {
            kinds_of.entry(id).or_default().0 |= KindSet::only(k).0;
        }
    }
    for p in tracker.beliefs().pieces() {
        let drawn = kinds_of[&p.id];
        assert_eq!(drawn.0 & !p.possible.0, 0, "a kind outside the set");
        if p.possible.len() > 1 {
            assert!(drawn.len() > 1, "{:?} always drew one kind", p.id);
        }
    }
    // Exactly one flag per layout, always in an HQ.
    let topo = rules.topology();
    for _ in 0..50 {
        let layout = sampler.draw(&mut rng);
        let flags: Vec<PieceId> = layout
            .kinds()
            .iter()
            .filter(|(_, k)| *k == flag(&rules))
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(flags.len(), 1);
        let at = game
            .starting_pieces()
            .into_iter()
            .find(|(_, p)| p.id == flags[0])
            .unwrap()
            .0;
        assert_ne!(topo.hq[Side::North.index()] & at.bit(), 0);
    }
}
