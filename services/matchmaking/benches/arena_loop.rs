//! What one pairing-loop round costs an arena of 10,000 players 52 minutes in: 12 waves of 5,000
//! games (60,000 games, every one ended), then everyone waiting. Measured: `progress` (the pure
//! function that scores every game and pairs the next wave), and reading the rounds from the
//! one-box memory store with the ended rounds already kept (`SettledRounds`: what a running
//! process does) and without (a process that just started). Figures are recorded in
//! docs/benchmarks.md ("Tournament pairing").

use criterion::{Criterion, criterion_group, criterion_main};
use hidden_front_matchmaking::policy::{RatingIntegrity, handle_ended_game};
use hidden_front_matchmaking::store::memory::MemoryMatchStore;
use hidden_front_matchmaking::store::{
    EndedGame, EndedResult, MatchStore, NewBulk, Tournament, TournamentEntrant, TournamentFormat,
    round_bulk_id,
};
use hidden_front_matchmaking::tournament::{SettledRounds, Step, progress, round_bulks};
use hidden_front_rules::Side;
use std::hint::black_box;
use std::sync::Arc;

const PLAYERS: usize = 10_000;
const WAVES: usize = 12;
/// Every player plays a game of four minutes at most, so a new wave pairs everyone this often.
const WAVE_EVERY_MS: u64 = 240_000;

fn arena() -> Tournament {
    Tournament {
        tournament_id: "arena-10k".into(),
        organiser: "bench".into(),
        format: TournamentFormat::Arena,
        rounds: 0,
        rules: "hidden-front".into(),
        time_control: "online".into(),
        rated: false,
        start_ms: 1_000,
        pause_ms: 0,
        duration_ms: 3_600_000,
        open_to_players: false,
        allow_bots: false,
        entrants: (0..PLAYERS)
            .map(|i| TournamentEntrant {
                id: format!("player-{i:05}"),
                rating: 1200 + ((i * 104_729) % 800) as i32,
            })
            .collect(),
        created_ms: 0,
        finished_ms: None,
        paused: Vec::new(),
    }
}

/// The arena's history in a memory store: each wave paired by `progress` itself, its games
/// created and ended (south wins on boards whose index is odd, north on the others).
async fn history(t: &Tournament) -> Arc<dyn MatchStore> {
    let store: Arc<dyn MatchStore> = Arc::new(MemoryMatchStore::new());
    store.create_tournament(t.clone()).await.expect("stored");
    let settled = SettledRounds::default();
    for wave in 1..=WAVES {
        let rounds = round_bulks(&*store, t, &settled).await.expect("read");
        let now = t.start_ms + wave as u64 * WAVE_EVERY_MS;
        let Step::Pair(pairing) = progress(t, &rounds, now).expect("progress").next else {
            panic!("everyone waits between waves");
        };
        let bulk = store
            .create_bulk(NewBulk {
                bulk_id: round_bulk_id(&t.tournament_id, wave),
                organiser: t.organiser.clone(),
                rules: t.rules.clone(),
                time_control: t.time_control.clone(),
                rated: false,
                start_ms: now,
                created_ms: now,
                pairs: pairing
                    .games
                    .iter()
                    .map(|p| (p.first.clone(), p.second.clone()))
                    .collect(),
            })
            .await
            .expect("a wave");
        for (board, game) in bulk.games.iter().enumerate() {
            let game_id = uuid::Uuid::now_v7();
            let m = &game.the_match;
            store
                .complete_match(m.match_id, game_id, now)
                .await
                .expect("seated");
            let ended = EndedGame {
                game_id,
                south_player: m.south_player.clone(),
                north_player: m.north_player.clone(),
                result: EndedResult::Won(if board % 2 == 1 {
                    Side::South
                } else {
                    Side::North
                }),
                plies: 80,
                decided_on_board: true,
            };
            handle_ended_game(
                &*store,
                &ended,
                now + 1,
                now + 2,
                &RatingIntegrity::default(),
            )
            .await
            .expect("ended");
        }
    }
    store
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let t = arena();
    let store = runtime.block_on(history(&t));
    let settled = SettledRounds::default();
    let rounds = runtime
        .block_on(round_bulks(&*store, &t, &settled))
        .expect("read");
    assert_eq!(rounds.len(), WAVES);
    assert_eq!(settled.len(), WAVES, "every wave ended");
    let now = t.start_ms + (WAVES as u64 + 1) * WAVE_EVERY_MS;
    let mut group = c.benchmark_group("arena_loop_10k_players_60k_games");
    group.sample_size(20);
    group.bench_function("progress_and_next_wave", |b| {
        b.iter(|| {
            let p = progress(&t, black_box(&rounds), now).expect("progress");
            assert!(matches!(p.next, Step::Pair(_)));
            p
        })
    });
    group.bench_function("read_rounds_kept", |b| {
        b.iter(|| runtime.block_on(round_bulks(&*store, &t, &settled)))
    });
    group.bench_function("read_rounds_fresh", |b| {
        b.iter(|| runtime.block_on(round_bulks(&*store, &t, &SettledRounds::default())))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
