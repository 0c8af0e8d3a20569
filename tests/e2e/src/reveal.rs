//! What the end of a game must show everyone, checked on what clients received.
//!
//! When a game ends everything is revealed: both deployments and the kinds of both pieces of
//! every fight, to both players and to spectators, live and on a later look. The truth the checks
//! compare with is what the two players were entitled to see of their own pieces: each player's
//! `PlayStarted` names its own pieces with their ids and kinds, and its `DeploymentConfirmed` its
//! own deployment. Every check is by id, so a capture (a piece gone from the final board) counts.

use crate::client::side_of;
use crate::pb;
use crate::player::{Placements, to_map};
use pb::game_event::Event;
use std::collections::BTreeMap;

/// A game's pieces and deployments as their owners knew them.
#[derive(Debug, Clone, Default)]
pub struct Truth {
    /// Every piece of the game by id: its side, its square when play started and its code.
    pub pieces: BTreeMap<u32, (pb::Side, String, String)>,
    /// The deployment each side confirmed, south then north.
    pub deployments: [Placements; 2],
}

fn seat(side: pb::Side) -> usize {
    usize::from(side == pb::Side::North)
}

impl Truth {
    /// The truth from the two players' own streams, each followed from seq 1.
    #[track_caller]
    pub fn from_streams(south: &[pb::GameEvent], north: &[pb::GameEvent]) -> Truth {
        let mut truth = Truth::default();
        for (own, log) in [(pb::Side::South, south), (pb::Side::North, north)] {
            for event in log {
                match &event.event {
                    Some(Event::DeploymentConfirmed(c)) if side_of(c.side) == own => {
                        let deployment = c.deployment.as_ref().unwrap_or_else(|| {
                            panic!("{own:?} was not shown its own confirmed deployment")
                        });
                        truth.deployments[seat(own)] = to_map(&deployment.placements);
                    }
                    Some(Event::PlayStarted(started)) => {
                        for p in started.pieces.iter().filter(|p| side_of(p.side) == own) {
                            truth
                                .pieces
                                .insert(p.id, (own, p.square.clone(), p.piece.clone()));
                        }
                    }
                    _ => {}
                }
            }
        }
        for side in [pb::Side::South, pb::Side::North] {
            assert!(
                !truth.deployments[seat(side)].is_empty(),
                "{side:?} never confirmed in its own stream"
            );
        }
        truth
    }

    /// The code of the piece with `id`.
    #[track_caller]
    fn code(&self, who: &str, id: u32) -> &str {
        &self
            .pieces
            .get(&id)
            .unwrap_or_else(|| panic!("{who}: no piece of the game has id {id}"))
            .2
    }
}

/// Checks that `reveal` is the whole game: both confirmed deployments and every piece with its
/// id, side, starting square and code.
#[track_caller]
pub fn check_reveal(who: &str, truth: &Truth, reveal: Option<&pb::EndReveal>) {
    let reveal = reveal.unwrap_or_else(|| panic!("{who}: the end reveals nothing more"));
    let shown: BTreeMap<u32, (pb::Side, String, String)> = reveal
        .starting_pieces
        .iter()
        .map(|p| (p.id, (side_of(p.side), p.square.clone(), p.piece.clone())))
        .collect();
    assert_eq!(
        shown.len(),
        reveal.starting_pieces.len(),
        "{who}: a piece revealed twice"
    );
    assert_eq!(shown, truth.pieces, "{who}: the revealed pieces");
    let deployments: Vec<(pb::Side, Placements)> = reveal
        .deployments
        .iter()
        .map(|d| (side_of(d.side), to_map(&d.placements)))
        .collect();
    assert_eq!(
        deployments,
        vec![
            (pb::Side::South, truth.deployments[0].clone()),
            (pb::Side::North, truth.deployments[1].clone()),
        ],
        "{who}: the revealed deployments"
    );
}

/// The `GameEnded` that closes `log`.
#[track_caller]
fn game_ended<'a>(who: &str, log: &'a [pb::GameEvent]) -> &'a pb::GameEnded {
    match log.last().and_then(|e| e.event.as_ref()) {
        Some(Event::Ended(ended)) => ended,
        other => panic!("{who}: the stream does not end with GameEnded but {other:?}"),
    }
}

/// (a) A live stream: its `GameEnded` reveals the whole game, and with it every fight the stream
/// told by ids resolves to the true kinds of both pieces, captured ones included. Returns how
/// many pieces were captured (revealed, but not on the final board).
#[track_caller]
pub fn check_live_end(who: &str, truth: &Truth, log: &[pb::GameEvent]) -> usize {
    let ended = game_ended(who, log);
    check_reveal(who, truth, ended.reveal.as_ref());
    let revealed: BTreeMap<u32, &str> = ended
        .reveal
        .iter()
        .flat_map(|r| &r.starting_pieces)
        .map(|p| (p.id, p.piece.as_str()))
        .collect();
    let mut fights = 0;
    for event in log {
        if let Some(Event::Moved(m)) = &event.event
            && let Some(c) = &m.combat
        {
            fights += 1;
            for id in [m.piece_id, c.defender_id] {
                assert_eq!(
                    revealed.get(&id).copied(),
                    Some(truth.code(who, id)),
                    "{who}: the kind of piece {id} of the fight at seq {}",
                    event.seq
                );
            }
        }
    }
    assert!(fights > 0, "{who}: the game had no fight to reveal");
    truth.pieces.len() - ended.pieces.len()
}

/// (b) A replay after the end (`Subscribe` from seq 1): every `DeploymentConfirmed` shows its
/// deployment, `PlayStarted` and every `Moved` show every kind, and `GameEnded` the whole game.
#[track_caller]
pub fn check_replay_after_end(who: &str, truth: &Truth, log: &[pb::GameEvent]) {
    let mut confirmed = 0;
    let mut fights = 0;
    for event in log {
        let at = event.seq;
        match &event.event {
            Some(Event::DeploymentConfirmed(c)) => {
                confirmed += 1;
                let side = side_of(c.side);
                let deployment = c.deployment.as_ref().unwrap_or_else(|| {
                    panic!(
                        "{who}: after the end, {side:?}'s DeploymentConfirmed (seq {at}) hides it"
                    )
                });
                assert_eq!(
                    to_map(&deployment.placements),
                    truth.deployments[seat(side)],
                    "{who}: {side:?}'s deployment at seq {at}"
                );
            }
            Some(Event::PlayStarted(started)) => {
                for p in &started.pieces {
                    assert_eq!(p.piece, truth.code(who, p.id), "{who}: PlayStarted {p:?}");
                }
            }
            Some(Event::Moved(m)) => {
                assert_eq!(
                    m.piece,
                    truth.code(who, m.piece_id),
                    "{who}: the mover's kind at seq {at}"
                );
                if let Some(c) = &m.combat {
                    fights += 1;
                    assert_eq!(
                        c.defender_piece,
                        truth.code(who, c.defender_id),
                        "{who}: the defender's kind at seq {at}"
                    );
                }
            }
            _ => {}
        }
    }
    assert_eq!(
        confirmed, 2,
        "{who}: both DeploymentConfirmed in the replay"
    );
    assert!(fights > 0, "{who}: the replay has no fight");
    check_reveal(who, truth, game_ended(who, log).reveal.as_ref());
}

/// (c) `GetGame` after the end shows both deployments and every piece of the game.
#[track_caller]
pub fn check_view_after_end(who: &str, truth: &Truth, view: &pb::GameView) {
    assert_eq!(view.phase, pb::Phase::Ended as i32, "{who}: {view:?}");
    check_reveal(who, truth, view.reveal.as_ref());
    for p in &view.pieces {
        assert_eq!(p.piece, truth.code(who, p.id), "{who}: GetGame {p:?}");
    }
}

/// (d) The mover's answer to the move that ended the game holds exactly the events its own
/// stream carried at those sequence numbers.
#[track_caller]
pub fn check_answer_in_stream(who: &str, answer: &[pb::GameEvent], stream: &[pb::GameEvent]) {
    assert!(
        answer
            .last()
            .is_some_and(|e| matches!(e.event, Some(Event::Ended(_)))),
        "{who}: the answer does not end the game: {answer:?}"
    );
    let by_seq: BTreeMap<u64, &pb::GameEvent> = stream.iter().map(|e| (e.seq, e)).collect();
    for event in answer {
        assert_eq!(
            Some(&event),
            by_seq.get(&event.seq),
            "{who}: the answer's event at seq {} vs the stream's copy",
            event.seq
        );
    }
}
