//! Checks the property tests of both families share.

use hidden_front_rules::{Event, Game, GameView, Phase, Viewer, project, reveal, view};

/// A viewer who follows the game by its projected events alone (`GameView::created`, then
/// `GameView::apply` of each event as the live stream shows it) sees, after every event,
/// exactly what `view` shows of the game then: the clients can draw from the stream without
/// reading the view per event.
pub fn check_following(log: &[Event]) {
    let Event::Created { rules, first_mover } = &log[0] else {
        panic!("a log starts with the creation")
    };
    for viewer in Viewer::ALL {
        let mut game = Game::replay(&log[..1]).expect("the creation replays");
        let mut followed = GameView::created(viewer, *rules, *first_mover);
        assert_eq!(followed, view(&game, viewer), "{viewer:?} at the creation");
        for (i, event) in log.iter().enumerate().skip(1) {
            game.apply(event).expect("the log replays");
            // Live, nothing is revealed before the end; the end carries the reveal.
            let end = reveal(&game);
            if let Some(shown) = project(event, viewer, end.as_ref()) {
                followed
                    .apply(&shown)
                    .unwrap_or_else(|e| panic!("{viewer:?} event {i} {event:?}: {e}"));
            }
            assert_eq!(
                followed,
                view(&game, viewer),
                "{viewer:?} after event {i} {event:?}"
            );
            // A player lists its moves from its view alone: on its turn, exactly the engine's.
            if game.phase() == Phase::Play && viewer.side() == Some(game.to_move()) {
                let mut listed = followed.own_moves();
                let mut legal: Vec<_> = game.position().legal_moves().iter().collect();
                listed.sort_by_key(|m| (m.from, m.to));
                legal.sort_by_key(|m| (m.from, m.to));
                assert_eq!(listed, legal, "{viewer:?}'s moves after event {i}");
            }
        }
    }
}
