//! A game's status: what clients show beside the board (presence, the running deadlines, the
//! timeouts used, the pending draw offer). `GetGame` shows it inside the view and `WatchGame`
//! streams it (`with_status`); both build it here: `GetGame` from one store read of the game
//! with its presence and timers, the stream from such a read advanced by the events it streams
//! since ([`FollowedStatus`]). It names no piece, so it is the same for every viewer.

use crate::timers;
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Event, Game, Phase, Side};
use hidden_front_store::{ObservedGame, Presence, StoredEvent, TimerSlot};
use hidden_front_time::unix_ms;
use hidden_front_wire as wire;
use std::time::SystemTime;

/// What a status shows besides the game itself: who is connected and the running deadlines.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Clocks {
    presence: Presence,
    /// The `turn` slot's deadline: the deployment deadline, then the move clock.
    turn: Option<SystemTime>,
    /// Each side's time to come back (its `reconnect` slot), by [`Side::index`].
    reconnect: [Option<SystemTime>; 2],
}

impl Clocks {
    /// The clocks of an observed game: its presence and its armed timers.
    fn of(observed: &ObservedGame) -> Clocks {
        let mut clocks = Clocks {
            presence: observed.presence,
            turn: None,
            reconnect: [None; 2],
        };
        for timer in &observed.timers {
            match timer.slot() {
                TimerSlot::Turn => clocks.turn = Some(timer.fire_at),
                TimerSlot::Reconnect(side) => clocks.reconnect[side.index()] = Some(timer.fire_at),
            }
        }
        clocks
    }
}

/// The status of `game` at `version` with `clocks`: the one rule both `GetGame` and the streams
/// follow.
fn status_of(version: u64, game: &Game, clocks: &Clocks) -> pb::GameStatus {
    let connected = clocks.presence.connected();
    let millis = |deadline: Option<SystemTime>| deadline.map_or(0, unix_ms);
    // A side's time to come back runs (and is shown) only while it is away in play.
    let away = |side: Side| {
        if game.phase() == Phase::Play && !connected[side.index()] {
            millis(clocks.reconnect[side.index()])
        } else {
            0
        }
    };
    pb::GameStatus {
        version,
        south_connected: connected[0],
        north_connected: connected[1],
        // The deadlines are public: both players see both clocks.
        turn_deadline_unix_millis: millis(clocks.turn),
        south_away_deadline_unix_millis: away(Side::South),
        north_away_deadline_unix_millis: away(Side::North),
        south_timeouts: u32::from(game.timeouts(Side::South)),
        north_timeouts: u32::from(game.timeouts(Side::North)),
        draw_offer: game
            .draw_offer()
            .map_or(pb::Side::Unspecified, wire::side_to_proto) as i32,
    }
}

/// The status of the observed game.
pub(crate) fn game_status(observed: &ObservedGame) -> pb::GameStatus {
    status_of(
        observed.record.version,
        &observed.record.game,
        &Clocks::of(observed),
    )
}

/// The status a `WatchGame` pump keeps: the one it last read ([`ObservedGame`]), advanced by
/// every event it streamed since.
///
/// Why: reading the whole game after every page of events cost Postgres a game with its
/// snapshot, presence and timers per move for every watched game (it tripled the database's
/// CPU per move), while the move itself already says what changed. An event changes the
/// status only through the game (timeouts, the draw offer: [`Game::apply`]) and the deadlines
/// its append armed: a turn that starts gets a fresh move clock, which the store returns with
/// the append's last event ([`StoredEvent::armed_turn_deadline`]), whichever process appended
/// it; anything else during play keeps the running one; deployment keeps the deployment
/// deadline; the times to come back change only with presence reports and play's start. What
/// changes without an event (presence flips, a re-armed time to come back of a side that is
/// away, an outage's accounting) wakes the pump to read again
/// ([`hidden_front_store::GameStore::status_changes`]), and so does a lease that lapsed.
///
/// It cannot follow, and the pump reads the game again, on: play's start (it arms the
/// absent sides' times to come back, decided by who was connected then), the end (every
/// deadline goes), a turn whose append carries no deadline (written by an older release), an
/// event that does not apply, or a gap. So every status it gives is the one a read at its
/// version shows.
#[derive(Debug, Clone)]
pub(crate) struct FollowedStatus {
    version: u64,
    game: Game,
    clocks: Clocks,
    /// A turn started since the read and no event since carried the deadline its append armed.
    turn_unknown: bool,
}

impl FollowedStatus {
    /// The status as read.
    pub(crate) fn read(observed: ObservedGame) -> FollowedStatus {
        let clocks = Clocks::of(&observed);
        FollowedStatus {
            version: observed.record.version,
            game: observed.record.game,
            clocks,
            turn_unknown: false,
        }
    }

    /// The version it is at.
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// Advances it by one streamed event (in seq order); `false` when it cannot follow that
    /// event (read the game again). An event the read already held changes nothing.
    pub(crate) fn follow(&mut self, stored: &StoredEvent) -> bool {
        if stored.seq <= self.version {
            return true;
        }
        if stored.seq != self.version + 1
            || matches!(
                stored.event,
                Event::PlayStarted { .. } | Event::Ended { .. }
            )
            || self.game.apply(&stored.event).is_err()
        {
            return false;
        }
        self.version = stored.seq;
        if timers::starts_a_turn(&stored.event) {
            self.turn_unknown = true;
        }
        // On the append's last event, which may follow the one that started the turn (a move
        // that lets a draw offer lapse).
        if let Some(deadline) = stored.armed_turn_deadline {
            self.clocks.turn = Some(deadline);
            self.turn_unknown = false;
        }
        true
    }

    /// The status at [`FollowedStatus::version`]; `None` while the move clock of a turn that
    /// started is unknown (read the game).
    pub(crate) fn status(&self) -> Option<pb::GameStatus> {
        (!self.turn_unknown).then(|| status_of(self.version, &self.game, &self.clocks))
    }

    /// When the status changes by time alone, with no write to announce it: the first moment a
    /// side's connected leases have all ended (the side is then away). `None` when no side is
    /// connected, or the game has ended (nothing shown changes any more).
    pub(crate) fn lapse(&self) -> Option<SystemTime> {
        if self.game.phase() == Phase::Ended {
            return None;
        }
        self.clocks
            .presence
            .connected_until
            .into_iter()
            .flatten()
            .min()
    }

    /// A presence read since, in which the same sides are connected as shown (their leases were
    /// renewed): the leases' new ends, for [`FollowedStatus::lapse`].
    pub(crate) fn renewed(&mut self, presence: Presence) {
        self.clocks.presence = presence;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hidden_front_rules::{Command, GameRng, Rules};
    use hidden_front_store::{GameMeta, GameRecord, TimeControl, Timer, TimerKind};
    use std::time::Duration;
    use uuid::Uuid;

    const ID: Uuid = Uuid::nil();

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + seconds)
    }

    /// A read of `game` at its version with these timers (a turn deadline and north's time to
    /// come back) and south connected: what `observe` answers.
    fn read(game: &Game, turn: Option<SystemTime>, north_back_by: SystemTime) -> ObservedGame {
        let timer = |kind, side, fire_at| Timer {
            game_id: ID,
            kind,
            side,
            armed_version: game.event_count(),
            fire_at,
        };
        let mut timers: Vec<Timer> = turn
            .map(|at| timer(TimerKind::Move, game.to_move(), at))
            .into_iter()
            .collect();
        timers.push(timer(TimerKind::Reconnect, Side::North, north_back_by));
        timers.sort_by_key(|t| t.fire_at);
        ObservedGame {
            record: GameRecord {
                meta: GameMeta {
                    game_id: ID,
                    rules: game.rules().name(),
                    time_control: TimeControl::online(),
                    south_player: "alice".into(),
                    north_player: "bob".into(),
                },
                version: game.event_count(),
                game: game.clone(),
            },
            presence: Presence {
                connected_until: [Some(at(3_600)), None],
            },
            timers,
        }
    }

    /// A game created and both deployments confirmed (play started unless `play` is false).
    fn game(play: bool) -> (Game, Vec<Event>) {
        let mut rng = GameRng::from_seed(11);
        let (mut game, mut events) = Game::create(Rules::default(), Side::South, &mut rng);
        let sides: &[Side] = if play { &Side::BOTH } else { &[Side::South] };
        for side in sides {
            events.extend(
                game.handle(&Command::Confirm { side: *side }, &mut rng)
                    .unwrap(),
            );
        }
        (game, events)
    }

    /// The events of `command` on `game` as the log returns them, from seq `game`'s version + 1,
    /// the last carrying `deadline`.
    fn append(game: &mut Game, command: Command, deadline: Option<SystemTime>) -> Vec<StoredEvent> {
        let first = game.event_count() + 1;
        let events = game.handle(&command, &mut GameRng::from_seed(5)).unwrap();
        let last = first + events.len() as u64 - 1;
        (first..)
            .zip(events)
            .map(|(seq, event)| StoredEvent {
                seq,
                event,
                trace_parent: None,
                recorded_at: at(0),
                armed_turn_deadline: deadline.filter(|_| seq == last),
            })
            .collect()
    }

    /// A move of the side to move onto an empty square.
    fn quiet_move(game: &Game) -> Command {
        let position = game.position();
        let moves = position.legal_moves();
        let mv = moves
            .iter()
            .find(|mv| position.piece_at(mv.to).is_none())
            .expect("a quiet move");
        Command::Move {
            side: game.to_move(),
            mv,
        }
    }

    #[test]
    fn a_followed_status_is_what_a_read_at_each_version_shows() {
        let (mut game, _) = game(true);
        let back_by = at(60);
        let mut turn = at(30);
        let mut followed = FollowedStatus::read(read(&game, Some(turn), back_by));
        for ply in 1..=8u64 {
            let mut commands = vec![quiet_move(&game)];
            if ply == 3 {
                // An offer first: it keeps the running clock; the move lets it lapse.
                commands.insert(
                    0,
                    Command::OfferDraw {
                        side: game.to_move().other(),
                    },
                );
            }
            for command in commands {
                let starts_a_turn = matches!(command, Command::Move { .. });
                if starts_a_turn {
                    turn = at(30 + ply);
                }
                let events = append(&mut game, command, starts_a_turn.then_some(turn));
                for event in &events {
                    assert!(followed.follow(event), "{:?}", event.event);
                }
                let status = followed.status().expect("the move clock is known");
                assert_eq!(status, game_status(&read(&game, Some(turn), back_by)));
                assert_eq!(status.north_away_deadline_unix_millis, unix_ms(back_by));
            }
        }
        // A timeout, with the next clock.
        turn = at(100);
        let side = game.to_move();
        for event in &append(&mut game, Command::Timeout { side }, Some(turn)) {
            assert!(followed.follow(event));
        }
        let status = followed.status().expect("known");
        assert_eq!(status, game_status(&read(&game, Some(turn), back_by)));
        assert_eq!(status.south_timeouts + status.north_timeouts, 1);
        assert_eq!(followed.lapse(), Some(at(3_600)), "south's lease");
    }

    #[test]
    fn it_cannot_follow_play_s_start_the_end_a_gap_or_a_turn_without_its_deadline() {
        // Play's start: the absent sides' times to come back are only in the store.
        let (mut deploying, _) = game(false);
        let mut followed = FollowedStatus::read(read(&deploying, None, at(60)));
        let started = append(&mut deploying, Command::Confirm { side: Side::North }, None);
        assert!(followed.follow(&started[0]), "the confirmation");
        assert!(!followed.follow(&started[1]), "play's start");

        let (mut game, _) = game(true);
        let read_at_start = read(&game, Some(at(30)), at(60));
        // Events the read already held change nothing.
        let mut followed = FollowedStatus::read(read_at_start.clone());
        let command = quiet_move(&game);
        let moved = append(&mut game, command, None);
        let mut ahead = game.clone();
        let command = quiet_move(&ahead);
        let next = append(&mut ahead, command, Some(at(40)));
        let mut caught_up = FollowedStatus::read(read(&ahead, Some(at(40)), at(60)));
        assert!(caught_up.follow(&moved[0]) && caught_up.follow(&next[0]));
        assert_eq!(caught_up.version(), ahead.event_count());
        assert_eq!(
            caught_up.status(),
            Some(game_status(&read(&ahead, Some(at(40)), at(60))))
        );
        // A gap.
        assert!(
            !followed.follow(&next[0]),
            "seq {} after a gap",
            next[0].seq
        );
        // A turn whose append carries no deadline (an older release wrote it): unknown until
        // a later one does.
        let mut followed = FollowedStatus::read(read_at_start);
        assert!(followed.follow(&moved[0]));
        assert_eq!(followed.status(), None, "the move clock is unknown");
        assert!(followed.follow(&next[0]));
        assert_eq!(
            followed.status(),
            Some(game_status(&read(&ahead, Some(at(40)), at(60)))),
            "the next turn's deadline is known again"
        );
        // The end: every deadline goes.
        let side = ahead.to_move();
        let resigned = append(&mut ahead, Command::Resign { side }, None);
        assert!(followed.follow(&resigned[0]), "the resignation itself");
        assert!(!followed.follow(&resigned[1]), "the end");
    }
}
