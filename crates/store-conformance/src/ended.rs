//! The feed of ended games: each game once, in the order the ends committed.

use crate::helpers::*;
use hidden_front_rules::{Command, Phase, Side};
use hidden_front_store::GameStore;
use std::sync::Arc;
use uuid::Uuid;

/// An append that ends a game puts it in the feed once, in commit order, with its final state.
pub async fn ended_games_feed_in_order_once(store: Arc<dyn GameStore>) {
    let start = store
        .ended_games(0, 100_000)
        .await
        .unwrap()
        .last()
        .map_or(0, |e| e.cursor);
    let mut ended = Vec::new();
    for seed in 0..3 {
        let (meta, game) = create_game(&*store, 70 + seed, &player("tes"), &player("ten")).await;
        let (next, events) = judge(&game, Command::Resign { side: Side::North }, seed);
        assert_eq!(next.phase(), Phase::Ended);
        store
            .append(meta.game_id, 3, &events, &next, None)
            .await
            .unwrap();
        ended.push(meta.game_id);
    }
    let feed = store.ended_games(start, 100).await.unwrap();
    let ids: Vec<Uuid> = feed.iter().map(|e| e.record.meta.game_id).collect();
    assert_eq!(ids, ended, "in the order they ended");
    assert!(feed.windows(2).all(|w| w[0].cursor < w[1].cursor));
    assert!(feed.iter().all(|e| e.record.game.phase() == Phase::Ended));
    let after_first = store.ended_games(feed[0].cursor, 100).await.unwrap();
    assert_eq!(after_first.len(), 2, "paging by cursor");
    assert_eq!(store.ended_games(start, 1).await.unwrap().len(), 1, "limit");
}
