//! A finished game's replay read from the session's internal API: `GetGame` (players, time
//! control, phase), then `WatchGame` from the first event (every event with full information and
//! its commit time), turned into a [`Replay`] by [`replay_from_log`].
//!
//! This is the one producer of replays from a running server: `hidden-front replay export` and
//! `replay export-ended` (the CLI) and the gateway's `ExportReplay` (players and spectators) all
//! call [`fetch_replay`], so they cannot disagree on what a game's replay is. It refuses a game
//! that has not ended before it reads a single event of its log: until the end the log holds
//! the hidden pieces of both sides, and after it the end reveals every piece anyway (a spectator
//! who subscribes after the end sees every event with full information), so a finished game's
//! replay tells nobody anything the game's end does not.
//!
//! It depends on the proto and wire crates and the replay format, never on the store or a
//! service, so the gateway (which may not reach the store) can use it.

use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use hidden_front_replay::{Entry, Header, Replay, TimeControl, Timestamp};
use hidden_front_wire as wire;
use std::time::Duration;
use thiserror::Error;
use uuid::Uuid;

/// How long [`fetch_replay`] waits for each item of an ended game's log before giving up: the
/// session sends a finished log at once, so a wait this long means it is not answering.
pub const EVENT_WAIT: Duration = Duration::from_secs(30);

/// The session client every producer holds (the gateway's and the CLI's are this type).
pub type SessionClient = SessionServiceClient<hidden_front_telemetry::TracedChannel>;

/// Why a game's replay could not be produced.
#[derive(Debug, Error)]
pub enum FetchError {
    /// The game is still on: its replay would show hidden pieces.
    #[error(
        "game {game_id} has not ended (it is in its {phase} phase): only a finished game has a \
         replay"
    )]
    NotEnded {
        /// The game.
        game_id: Uuid,
        /// Its phase now: `deployment` or `play`.
        phase: &'static str,
    },
    /// The session refused or failed a call (an unknown game is its `NOT_FOUND`).
    #[error("{call} of game {game_id}: {:?}: {}", status.code(), status.message())]
    Session {
        /// The game.
        game_id: Uuid,
        /// Which call: `GetGame` or `WatchGame`.
        call: &'static str,
        /// The session's answer.
        status: tonic::Status,
    },
    /// The session stopped sending the log of an ended game.
    #[error("the session sent no event of game {game_id} for {waited:?}")]
    Stalled {
        /// The game.
        game_id: Uuid,
        /// How long it waited.
        waited: Duration,
    },
    /// The session's answers are not a finished game's log (a server fault, never a caller's).
    #[error("game {game_id}: the session's log is not a replay: {reason}")]
    Malformed {
        /// The game.
        game_id: Uuid,
        /// What is wrong.
        reason: String,
    },
}

/// The file name a replay is suggested to be saved under: `hidden-front-GAME.replay.txt`.
pub fn file_name(game_id: Uuid) -> String {
    format!("hidden-front-{game_id}.replay.txt")
}

/// A phase's name as the refusals say it.
fn phase_name(phase: i32) -> &'static str {
    match pb::Phase::try_from(phase) {
        Ok(pb::Phase::Deployment) => "deployment",
        Ok(pb::Phase::Play) => "play",
        Ok(pb::Phase::Ended) => "ended",
        _ => "unknown",
    }
}

/// The replay of a finished game from what the session's internal API says of it: its spectator
/// view (`GetGame`: players, rules, time control) and its whole `WatchGame` log, in order. Each
/// item's commit time becomes the line's server time (absent from an older session: unknown).
pub fn replay_from_log(
    view: &pb::GameView,
    log: &[pb::WatchGameResponse],
) -> Result<Replay, String> {
    let rules = wire::rules_from_proto("rules", &view.rules).map_err(|e| e.to_string())?;
    let mut entries = Vec::with_capacity(log.len());
    for item in log {
        let proto = item
            .event
            .as_ref()
            .ok_or("the session sent a log item without an event")?;
        let event = wire::engine_event_from_proto(&rules, proto)
            .map_err(|e| format!("event {}: {e}", proto.seq))?;
        let at = item
            .recorded_at
            .as_ref()
            .map(|at| wire::timestamp_millis_from_proto("recorded_at", at))
            .transpose()
            .map_err(|e| format!("event {}: {e}", proto.seq))?
            .map(Timestamp::from_unix_millis);
        entries.push(Entry {
            seq: proto.seq,
            at,
            event,
        });
    }
    let header = Header {
        game_id: Some(view.game_id.clone()),
        players: [view.south_player.clone(), view.north_player.clone()],
        time_control: view.time_control.as_ref().map(|tc| TimeControl {
            name: tc.name.clone(),
            deployment_seconds: tc.deployment_seconds,
            move_seconds: tc.move_seconds,
            reconnect_seconds: tc.reconnect_seconds,
        }),
    };
    Replay::from_events(header, entries).map_err(|e| e.to_string())
}

/// Reads a finished game's replay from the session: `GetGame` as a spectator (refused with
/// [`FetchError::NotEnded`] unless the game has ended, before any event is read), then its log
/// from the first event, then [`replay_from_log`].
pub async fn fetch_replay(session: &SessionClient, game_id: Uuid) -> Result<Replay, FetchError> {
    let mut session = session.clone();
    let failed = |call: &'static str| {
        move |status: tonic::Status| FetchError::Session {
            game_id,
            call,
            status,
        }
    };
    let view = session
        .get_game(pb::GetGameRequest {
            game_id: game_id.to_string(),
            viewer: pb::Viewer::Spectator as i32,
        })
        .await
        .map_err(failed("GetGame"))?
        .into_inner()
        .game
        .ok_or_else(|| FetchError::Malformed {
            game_id,
            reason: "GetGame answered without a game".into(),
        })?;
    if view.phase != pb::Phase::Ended as i32 {
        return Err(FetchError::NotEnded {
            game_id,
            phase: phase_name(view.phase),
        });
    }
    let mut stream = session
        .watch_game(pb::WatchGameRequest {
            game_id: game_id.to_string(),
            from_seq: 1,
            with_status: false,
        })
        .await
        .map_err(failed("WatchGame"))?
        .into_inner();
    // The session ends an ended game's stream after its end event.
    let mut log = Vec::new();
    while let Some(item) = tokio::time::timeout(EVENT_WAIT, stream.message())
        .await
        .map_err(|_| FetchError::Stalled {
            game_id,
            waited: EVENT_WAIT,
        })?
        .map_err(failed("WatchGame"))?
    {
        log.push(item);
    }
    replay_from_log(&view, &log).map_err(|reason| FetchError::Malformed { game_id, reason })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hidden_front_rules::{Command, Game, GameRng, Reveal, Rules, Side, reveal};

    /// A game resigned in deployment, as the session's API would say it, with commit times.
    fn resigned_game() -> (pb::GameView, Vec<pb::WatchGameResponse>) {
        let rules = Rules::default();
        let mut rng = GameRng::from_seed(5);
        let (mut game, mut events) = Game::create(rules, Side::South, &mut rng);
        events.extend(
            game.handle(&Command::Resign { side: Side::North }, &mut rng)
                .expect("resigning is legal"),
        );
        let end = reveal(&game).unwrap_or_default();
        let none = Reveal::default();
        let log = events
            .iter()
            .enumerate()
            .map(|(i, event)| {
                let seq = i as u64 + 1;
                let last = seq == events.len() as u64;
                pb::WatchGameResponse {
                    event: Some(wire::engine_event_to_proto(
                        &rules,
                        "g",
                        seq,
                        event,
                        if last { &end } else { &none },
                    )),
                    trace_parent: String::new(),
                    recorded_at: Some(wire::timestamp_to_proto(
                        std::time::UNIX_EPOCH + Duration::from_millis(1_764_600_000_000 + seq),
                    )),
                    status: None,
                }
            })
            .collect();
        let view = pb::GameView {
            game_id: "0190c0de-0000-7000-8000-000000000001".into(),
            rules: rules.name(),
            south_player: "ana".into(),
            north_player: "ben".into(),
            ..Default::default()
        };
        (view, log)
    }

    #[test]
    fn a_finished_log_becomes_a_replay_with_every_commit_time() {
        let (view, log) = resigned_game();
        let replay = replay_from_log(&view, &log).expect("a replay");
        assert_eq!(replay.header().players, ["ana".to_string(), "ben".into()]);
        assert_eq!(replay.entries().len(), log.len());
        for (entry, seq) in replay.entries().iter().zip(1i64..) {
            assert_eq!(
                entry.at,
                Some(Timestamp::from_unix_millis(1_764_600_000_000 + seq))
            );
        }
        assert!(
            replay
                .to_text()
                .contains("Created: 2025-12-01T14:40:00.001Z")
        );
    }

    #[test]
    fn a_log_without_its_end_is_no_replay() {
        let (view, mut log) = resigned_game();
        log.pop();
        let error = replay_from_log(&view, &log).expect_err("not ended");
        assert!(error.contains("has not ended"), "{error}");
        log.clear();
        assert!(replay_from_log(&view, &log).is_err());
    }

    #[test]
    fn the_file_name_names_the_game() {
        let id = Uuid::nil();
        assert_eq!(
            file_name(id),
            "hidden-front-00000000-0000-0000-0000-000000000000.replay.txt"
        );
    }
}
