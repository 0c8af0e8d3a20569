//! Pairing speed: one arena wave of 10,000 waiting players, and one Swiss round of 200 players
//! after four rounds played. Figures are recorded in docs/benchmarks.md ("Tournament pairing").

use criterion::{Criterion, criterion_group, criterion_main};
use hidden_front_tournament::arena::{Waiting, pair_wave};
use hidden_front_tournament::swiss::{pair_round, record_round};
use hidden_front_tournament::{Entrant, Outcome, Record};
use std::hint::black_box;

/// 10,000 waiting players over 40 score levels and 800 rating points, each with a last opponent.
fn arena_field() -> Vec<Waiting> {
    (0..10_000u32)
        .map(|i| Waiting {
            id: format!("player-{i}"),
            points: (i * 7919) % 40,
            rating: 1200 + ((i * 104_729) % 800) as i32,
            last_opponent: Some(format!("player-{}", i ^ 1)),
            first_minus_second: (i % 3) as i32 - 1,
        })
        .collect()
}

/// 200 players after `rounds` Swiss rounds paired by the library, with results from a fixed
/// pattern.
fn swiss_field(players: usize, rounds: usize) -> Vec<Record> {
    let mut records: Vec<Record> = (0..players)
        .map(|i| Record {
            entrant: Entrant {
                id: format!("player-{i:03}"),
                rating: 2200 - i as i32 * 3,
            },
            rounds: Vec::new(),
        })
        .collect();
    let mut result = 0u32;
    for _ in 0..rounds {
        let round = pair_round(&records).expect("a pairing");
        record_round(&mut records, &round, |_| {
            result = result.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            match (result >> 16) % 3 {
                0 => Outcome::Win,
                1 => Outcome::Draw,
                _ => Outcome::Loss,
            }
        })
        .expect("the round's players are entrants");
    }
    records
}

fn pairing(c: &mut Criterion) {
    let field = arena_field();
    c.bench_function("arena wave, 10,000 waiting", |b| {
        b.iter(|| black_box(pair_wave(black_box(&field))))
    });
    let records = swiss_field(200, 4);
    c.bench_function("swiss round 5, 200 players", |b| {
        b.iter(|| black_box(pair_round(black_box(&records)).expect("a pairing")))
    });
}

criterion_group!(benches, pairing);
criterion_main!(benches);
