//! A game's status: what clients show beside the board (presence, the running deadlines, the
//! timeouts used, the pending draw offer). `GetGame` shows it inside the view and `WatchGame`
//! streams it (`with_status`); both build it here, from one store read of the game with its
//! presence and timers. It names no piece, so it is the same for every viewer.

use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Phase, Side};
use hidden_front_store::{ObservedGame, TimerSlot};
use hidden_front_wire as wire;
use std::time::SystemTime;

/// The status of the observed game.
pub(crate) fn game_status(observed: &ObservedGame) -> pb::GameStatus {
    let game = &observed.record.game;
    let connected = observed.presence.connected();
    let mut status = pb::GameStatus {
        version: observed.record.version,
        south_connected: connected[0],
        north_connected: connected[1],
        south_timeouts: u32::from(game.timeouts(Side::South)),
        north_timeouts: u32::from(game.timeouts(Side::North)),
        draw_offer: game
            .draw_offer()
            .map_or(pb::Side::Unspecified, wire::side_to_proto) as i32,
        ..pb::GameStatus::default()
    };
    // The deadlines are public: both players see both clocks.
    for timer in &observed.timers {
        let millis = timer.fire_at_unix_millis();
        match timer.slot() {
            TimerSlot::Turn => status.turn_deadline_unix_millis = millis,
            // A side's time to come back runs (and is shown) only while it is away in play.
            TimerSlot::Reconnect(side)
                if game.phase() == Phase::Play && !connected[side.index()] =>
            {
                match side {
                    Side::South => status.south_away_deadline_unix_millis = millis,
                    Side::North => status.north_away_deadline_unix_millis = millis,
                }
            }
            TimerSlot::Reconnect(_) => {}
        }
    }
    status
}

/// When the status observed changes by time alone, with no write to announce it: the first
/// moment a side's connected leases have all ended (the side is then away). `None` when no side
/// is connected, or the game has ended (nothing shown changes any more).
pub(crate) fn next_lapse(observed: &ObservedGame) -> Option<SystemTime> {
    if observed.record.game.phase() == Phase::Ended {
        return None;
    }
    observed
        .presence
        .connected_until
        .into_iter()
        .flatten()
        .min()
}
