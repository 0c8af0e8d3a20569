//! Events the player cannot place and odd move lists never make it panic, and its answer is
//! always one of the moves it was given.

use hidden_front_bot::ComputerPlayer;
use hidden_front_rules::{
    EndReason, Move, Node, Outcome, PieceId, PieceKind, Rules, Side, ViewCombat, ViewEvent,
    ViewPiece,
};

fn mv(from: u8, to: u8) -> Move {
    Move {
        from: Node(from),
        to: Node(to),
    }
}

#[test]
fn an_empty_move_list_gives_none() {
    let mut bot = ComputerPlayer::new(Side::South, Rules::default(), 3);
    assert_eq!(bot.try_choose_move(&[]), None);
}

#[test]
fn nonsense_events_are_absorbed_and_the_answer_stays_in_the_list() {
    let mut bot = ComputerPlayer::new(Side::North, Rules::default(), 9);
    // A move before play started, from an empty node, by unknown ids, off the board.
    let events = [
        ViewEvent::Moved {
            side: Side::South,
            mv: mv(12, 17),
            piece: PieceId(200),
            kind: None,
            combat: Some(ViewCombat {
                defender: PieceId(255),
                defender_kind: Some(PieceKind(77)),
                attacker_survives: true,
                defender_survives: true,
                flag_captured: false,
            }),
            flag_reveal: Vec::new(),
        },
        ViewEvent::PlayStarted {
            pieces: vec![
                ViewPiece {
                    node: Node(3),
                    side: Side::North,
                    id: PieceId(1),
                    kind: Some(PieceKind(9)),
                },
                ViewPiece {
                    node: Node(63),
                    side: Side::South,
                    id: PieceId(2),
                    kind: None,
                },
                ViewPiece {
                    node: Node(200),
                    side: Side::South,
                    id: PieceId(3),
                    kind: None,
                },
            ],
        },
        ViewEvent::Moved {
            side: Side::South,
            mv: mv(40, 3),
            piece: PieceId(9),
            kind: None,
            combat: Some(ViewCombat {
                defender: PieceId(1),
                defender_kind: Some(PieceKind(9)),
                attacker_survives: true,
                defender_survives: false,
                flag_captured: false,
            }),
            flag_reveal: Vec::new(),
        },
        ViewEvent::Moved {
            side: Side::North,
            mv: mv(250, 251),
            piece: PieceId(1),
            kind: Some(PieceKind(9)),
            combat: None,
            flag_reveal: Vec::new(),
        },
        ViewEvent::TimedOut {
            side: Side::North,
            count: 1,
        },
        ViewEvent::Ended {
            outcome: Outcome::draw(EndReason::AgreedDraw),
            pieces: Vec::new(),
            reveal: None,
        },
    ];
    for event in &events {
        bot.observe(event);
    }
    let legal = [mv(3, 8), mv(59, 54), mv(63, 0), mv(70, 71)];
    for _ in 0..20 {
        let chosen = bot.choose_move(&legal);
        assert!(legal.contains(&chosen));
    }
}
