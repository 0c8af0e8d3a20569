//! The agreement digest: one hash over many seeded random games, computed by the same Rust code
//! natively and in WebAssembly, so equal digests show the browser's engine is the server's.

use hidden_front_inference::Tracker;
use hidden_front_rules::{
    Command, Event, Game, GameRng, Move, Phase, Rules, Side, Viewer, project,
};

/// The rule sets the digest cycles through: both families, several boards and options.
pub const DIGEST_RULE_SETS: [&str; 6] = [
    "hidden-front",
    "gunjin-shogi",
    "hidden-front+hq-mobile+front-bombs+sturdy-mines+bomb-spares-flag+flag-reveal",
    "gunjin-shogi+23-pieces+tank-beats-engineer",
    "hidden-front+no-combat-30",
    "gunjin-shogi+y-gates+mine-survives",
];

/// FNV-1a, 64 bits: tiny, and the same on every target.
#[derive(Debug, Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// Plays `games` seeded random games from `seed` (game `i` under `DIGEST_RULE_SETS[i % 6]`) and
/// hashes every legal-move list, every engine event, every event as each seat sees it, and each
/// seat's inferred kind sets at the end. Returns `"<hash hex>-<games>-<plies>"`.
pub fn agreement_digest(seed: u64, games: u32) -> String {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    let mut plies = 0u64;
    let rule_sets: Vec<Rules> = DIGEST_RULE_SETS
        .iter()
        .map(|n| Rules::parse(n).expect("digest rule sets parse"))
        .collect();
    for g in 0..games {
        let rules = rule_sets[g as usize % rule_sets.len()];
        let mut rng = GameRng::from_seed(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(g));
        let first = if rng.below(2) == 0 {
            Side::South
        } else {
            Side::North
        };
        let (mut game, events) = Game::create(rules, first, &mut rng);
        let mut trackers = [
            Tracker::new(rules, Side::South),
            Tracker::new(rules, Side::North),
        ];
        let feed = |h: &mut Fnv, trackers: &mut [Tracker; 2], events: &[Event]| {
            for event in events {
                h.bytes(format!("{event:?}").as_bytes());
                for side in Side::BOTH {
                    if let Some(view) = project(event, Viewer::player(side), None) {
                        h.bytes(format!("{view:?}").as_bytes());
                        trackers[side.index()].observe(&view);
                    }
                }
            }
        };
        feed(&mut h, &mut trackers, &events);
        for side in Side::BOTH {
            let events = game
                .handle(&Command::Confirm { side }, &mut rng)
                .expect("a random draft confirms");
            feed(&mut h, &mut trackers, &events);
        }
        while game.phase() == Phase::Play {
            let side = game.to_move();
            let legal: Vec<Move> = game.position().legal_moves().iter().collect();
            for mv in &legal {
                h.bytes(&[mv.from.0, mv.to.0]);
            }
            h.bytes(&[0xff, legal.len() as u8]);
            let mv = legal[rng.below(legal.len() as u32) as usize];
            let events = game
                .handle(&Command::Move { side, mv }, &mut rng)
                .expect("a legal move is accepted");
            feed(&mut h, &mut trackers, &events);
            plies += 1;
        }
        for t in &trackers {
            for p in t.beliefs().pieces() {
                h.bytes(&[p.id.0, u8::from(p.moved), u8::from(p.alive)]);
                h.bytes(&p.possible.0.to_le_bytes());
            }
        }
    }
    format!("{:016x}-{games}-{plies}", h.0)
}
