//! Views: the only way information leaves a game.
//!
//! [`view`] shows a game's state and [`project`] shows one event as a given viewer may see them.
//! A player sees the kinds of its own pieces; an opponent piece is its node and its random id,
//! nothing more; a spectator sees no kind at all; after the end, everyone sees everything. Fights
//! are told as who survived and who was removed. "Everything" is more than the final board: the
//! end carries a [`Reveal`] (both confirmed deployments and every piece of the game with its id),
//! so a viewer who watched the game live, and learned only ids, can resolve every earlier fight.
//! The types here have no field that could carry a hidden kind other than the
//! `Option<PieceKind>` the visibility rule fills.

use crate::deployment::Deployment;
use crate::game::{Event, FlagReveal, Game, Phase};
use crate::outcome::Outcome;
use crate::piece::{PieceId, PieceKind};
use crate::position::{Move, Piece};
use crate::rules::Rules;
use crate::side::Side;
use crate::topology::Node;
use serde::{Deserialize, Serialize};

/// Who is looking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Viewer {
    /// The south player.
    South,
    /// The north player.
    North,
    /// Anyone else: sees no kind until the end.
    Spectator,
}

impl Viewer {
    /// The player's side; `None` for a spectator.
    pub fn side(self) -> Option<Side> {
        match self {
            Viewer::South => Some(Side::South),
            Viewer::North => Some(Side::North),
            Viewer::Spectator => None,
        }
    }

    /// The viewer seated on `side`.
    pub fn player(side: Side) -> Viewer {
        match side {
            Side::South => Viewer::South,
            Side::North => Viewer::North,
        }
    }

    /// All three viewers.
    pub const ALL: [Viewer; 3] = [Viewer::South, Viewer::North, Viewer::Spectator];
}

/// A piece as a viewer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ViewPiece {
    /// Where it stands.
    pub node: Node,
    /// Whose it is (always visible: the halves are public).
    pub side: Side,
    /// Its public id.
    pub id: PieceId,
    /// Its kind, only where the viewer may know it.
    pub kind: Option<PieceKind>,
}

/// A game's state as one viewer sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameView {
    /// Who is looking.
    pub viewer: Viewer,
    /// The rule set.
    pub rules: Rules,
    /// The phase.
    pub phase: Phase,
    /// Who moves first.
    pub first_mover: Side,
    /// Whose turn it is (in play).
    pub to_move: Option<Side>,
    /// Plies played.
    pub plies: u32,
    /// Plies since the last fight.
    pub plies_without_combat: u16,
    /// Timeouts of south and north.
    pub timeouts: [u8; 2],
    /// Who has a draw offer pending.
    pub draw_offer: Option<Side>,
    /// Whether south and north have confirmed their deployments.
    pub confirmed: [bool; 2],
    /// The viewer's own draft or confirmed deployment during the deployment phase.
    pub own_deployment: Option<Deployment>,
    /// The pieces on the board (empty during deployment).
    pub pieces: Vec<ViewPiece>,
    /// The result, once ended.
    pub outcome: Option<Outcome>,
    /// What the end reveals to everyone, once ended.
    pub reveal: Option<Reveal>,
}

/// What a finished game shows everyone beyond its final board: the deployments and every piece
/// that was ever on the board. With it, any viewer can tell the kinds of both pieces of every
/// fight it was told by id, captured pieces included.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Reveal {
    /// The deployment each side confirmed, south's first; a side that never confirmed (a game
    /// cancelled at the deployment deadline) has none.
    pub deployments: Vec<Deployment>,
    /// Every piece of the game where it stood when play started, with its id, side and kind
    /// (empty when play never started).
    pub pieces: Vec<ViewPiece>,
}

/// A fight as a viewer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ViewCombat {
    /// The attacked piece's id.
    pub defender: PieceId,
    /// The attacked piece's kind, where the viewer may know it.
    pub defender_kind: Option<PieceKind>,
    /// Whether the attacker survived.
    pub attacker_survives: bool,
    /// Whether the defender survived.
    pub defender_survives: bool,
    /// Whether the fight captured the flag. Public: such a fight ends the game at once (reason
    /// `FlagCaptured`), and the end reveals everything. Carried so that the full-information view
    /// is the whole engine event (the session's watchers rebuild the event from it).
    #[serde(default)]
    pub flag_captured: bool,
}

/// An event as a viewer sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ViewEvent {
    /// The game exists.
    Created {
        /// The rule set.
        rules: Rules,
        /// Who moves first.
        first_mover: Side,
    },
    /// The viewer's own draft changed (never shown to anyone else before the end).
    DeploymentDrafted {
        /// The draft.
        deployment: Deployment,
    },
    /// A side confirmed its deployment.
    DeploymentConfirmed {
        /// Who.
        side: Side,
        /// The deployment, to its owner (and to all after the end).
        deployment: Option<Deployment>,
        /// Whether the server confirmed it at the deadline.
        by_deadline: bool,
    },
    /// Play started.
    PlayStarted {
        /// The board as the viewer sees it.
        pieces: Vec<ViewPiece>,
    },
    /// A move.
    Moved {
        /// Who moved.
        side: Side,
        /// From where to where.
        mv: Move,
        /// The moving piece's id.
        piece: PieceId,
        /// Its kind, where the viewer may know it.
        kind: Option<PieceKind>,
        /// The fight, if any.
        combat: Option<ViewCombat>,
        /// Flags shown to all by this move (`flag-reveal`).
        flag_reveal: Vec<FlagReveal>,
    },
    /// A side lost its turn to the clock.
    TimedOut {
        /// Who.
        side: Side,
        /// Its timeouts so far.
        count: u8,
    },
    /// A draw offer.
    DrawOffered {
        /// Who offered.
        side: Side,
    },
    /// A declined draw offer.
    DrawDeclined {
        /// Who declined.
        side: Side,
    },
    /// A lapsed draw offer.
    DrawLapsed {
        /// Who had offered.
        side: Side,
    },
    /// A resignation.
    Resigned {
        /// Who.
        side: Side,
    },
    /// A side lost its seat at the deployment deadline (public: it says nothing about pieces).
    SeatLost {
        /// Who.
        side: Side,
    },
    /// The end, with the whole final board revealed.
    Ended {
        /// The result.
        outcome: Outcome,
        /// Every piece left, with its kind.
        pieces: Vec<ViewPiece>,
        /// The deployments and every piece of the game; `None` only when the projection was not
        /// given the ended game's [`Reveal`] (see [`project`]).
        reveal: Option<Reveal>,
    },
}

/// Whether `viewer` may know the kind of a piece of `owner`. `revealed_flag` says whether this
/// piece is a flag shown under `flag-reveal`.
fn may_know(viewer: Viewer, owner: Side, ended: bool, revealed_flag: bool) -> bool {
    ended || viewer.side() == Some(owner) || revealed_flag
}

fn view_piece(node: Node, piece: Piece, visible: bool) -> ViewPiece {
    ViewPiece {
        node,
        side: piece.side,
        id: piece.id,
        kind: visible.then_some(piece.kind),
    }
}

/// The game as `viewer` may see it.
pub fn view(game: &Game, viewer: Viewer) -> GameView {
    let ended = game.phase() == Phase::Ended;
    let position = game.position();
    let flag = game.rules().parse_kind("F");
    let pieces = position
        .pieces()
        .map(|(node, piece)| {
            let revealed_flag = Some(piece.kind) == flag && game.flag_revealed(piece.side);
            view_piece(
                node,
                piece,
                may_know(viewer, piece.side, ended, revealed_flag),
            )
        })
        .collect();
    GameView {
        viewer,
        rules: *game.rules(),
        phase: game.phase(),
        first_mover: game.first_mover(),
        to_move: (game.phase() == Phase::Play).then(|| game.to_move()),
        plies: game.plies(),
        plies_without_combat: position.plies_without_combat(),
        timeouts: [game.timeouts(Side::South), game.timeouts(Side::North)],
        draw_offer: game.draw_offer(),
        confirmed: [game.confirmed(Side::South), game.confirmed(Side::North)],
        own_deployment: match (game.phase(), viewer.side()) {
            (Phase::Deployment, Some(side)) => game.deployment(side).cloned(),
            _ => None,
        },
        pieces,
        outcome: game.outcome(),
        reveal: reveal(game),
    }
}

/// What `game` reveals to everyone now that it has ended; `None` while it is still on.
pub fn reveal(game: &Game) -> Option<Reveal> {
    if game.phase() != Phase::Ended {
        return None;
    }
    Some(Reveal {
        deployments: Side::BOTH
            .into_iter()
            .filter(|&side| game.confirmed(side))
            .filter_map(|side| game.deployment(side).cloned())
            .collect(),
        pieces: game
            .starting_pieces()
            .into_iter()
            .map(|(node, piece)| view_piece(node, piece, true))
            .collect(),
    })
}

/// One event as `viewer` may see it; `None` when the viewer must not see it at all (another
/// side's draft). `end` is the game's [`reveal`] *now*: `None` while the game is on, and once it
/// is over (a replay after the end, or the end event itself) every kind of every event is shown
/// and the end event carries the reveal. Pass `reveal(&game_now)`.
pub fn project(event: &Event, viewer: Viewer, end: Option<&Reveal>) -> Option<ViewEvent> {
    let sees = |owner: Side| may_know(viewer, owner, end.is_some(), false);
    Some(match event {
        Event::Created { rules, first_mover } => ViewEvent::Created {
            rules: *rules,
            first_mover: *first_mover,
        },
        Event::DeploymentDrafted { deployment } => {
            if !sees(deployment.side) {
                return None;
            }
            ViewEvent::DeploymentDrafted {
                deployment: deployment.clone(),
            }
        }
        Event::DeploymentConfirmed {
            side,
            deployment,
            by_deadline,
        } => ViewEvent::DeploymentConfirmed {
            side: *side,
            deployment: sees(*side).then(|| deployment.clone()),
            by_deadline: *by_deadline,
        },
        Event::PlayStarted { pieces } => ViewEvent::PlayStarted {
            pieces: pieces
                .iter()
                .map(|&(node, piece)| view_piece(node, piece, sees(piece.side)))
                .collect(),
        },
        Event::Moved {
            mv,
            piece,
            combat,
            flag_reveal,
        } => ViewEvent::Moved {
            side: piece.side,
            mv: *mv,
            piece: piece.id,
            kind: sees(piece.side).then_some(piece.kind),
            combat: combat.map(|c| ViewCombat {
                defender: c.defender.id,
                defender_kind: sees(c.defender.side).then_some(c.defender.kind),
                attacker_survives: c.attacker_survives,
                defender_survives: c.defender_survives,
                flag_captured: c.flag_captured,
            }),
            flag_reveal: flag_reveal.clone(),
        },
        Event::TimedOut { side, count } => ViewEvent::TimedOut {
            side: *side,
            count: *count,
        },
        Event::DrawOffered { side } => ViewEvent::DrawOffered { side: *side },
        Event::DrawDeclined { side } => ViewEvent::DrawDeclined { side: *side },
        Event::DrawLapsed { side } => ViewEvent::DrawLapsed { side: *side },
        Event::Resigned { side } => ViewEvent::Resigned { side: *side },
        Event::SeatLost { side } => ViewEvent::SeatLost { side: *side },
        Event::Ended { outcome, pieces } => ViewEvent::Ended {
            outcome: *outcome,
            pieces: pieces
                .iter()
                .map(|&(node, piece)| view_piece(node, piece, true))
                .collect(),
            reveal: end.cloned(),
        },
    })
}

/// Why a [`ViewEvent`] does not follow from a [`GameView`]: the view and the event are not of
/// the same game, or an event is missing in between. A client that meets this reads the view
/// again from the server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ViewMismatch {
    /// The event needs a phase the view is not in.
    #[error("a {event} event does not fit a view in the {} phase", phase.name())]
    WrongPhase {
        /// The event's name.
        event: &'static str,
        /// The view's phase.
        phase: Phase,
    },
    /// A move from a square where the view has no piece of the mover.
    #[error("the view has no piece of the mover on the move's start")]
    NoMover,
    /// A second `Created` event.
    #[error("a view starts with the game's creation; it cannot be created again")]
    Recreated,
}

impl GameView {
    /// The view of a game just created, before any other event: what [`view`] shows of
    /// `Game::create`'s first event. Start here and [`GameView::apply`] the rest of the projected
    /// log to follow a game from its events alone.
    pub fn created(viewer: Viewer, rules: Rules, first_mover: Side) -> GameView {
        GameView {
            viewer,
            rules,
            phase: Phase::Deployment,
            first_mover,
            to_move: None,
            plies: 0,
            plies_without_combat: 0,
            timeouts: [0, 0],
            draw_offer: None,
            confirmed: [false, false],
            own_deployment: None,
            pieces: Vec::new(),
            outcome: None,
            reveal: None,
        }
    }

    /// Follows the game by one event as this view's viewer was shown it ([`project`]): the view
    /// afterwards is what [`view`] shows of the game after the event. Why this exists: clients
    /// (the page, the terminal client) follow a game from its event stream and read the whole
    /// view only when they open a game or missed events, not once per event. On a
    /// [`ViewMismatch`] the view is left as it was.
    pub fn apply(&mut self, event: &ViewEvent) -> Result<(), ViewMismatch> {
        let need = |phase: Phase, event: &'static str| {
            if self.phase == phase {
                Ok(())
            } else {
                Err(ViewMismatch::WrongPhase {
                    event,
                    phase: self.phase,
                })
            }
        };
        match event {
            ViewEvent::Created { .. } => return Err(ViewMismatch::Recreated),
            ViewEvent::DeploymentDrafted { deployment } => {
                need(Phase::Deployment, "deployment_drafted")?;
                if self.viewer.side() == Some(deployment.side) {
                    self.own_deployment = Some(deployment.clone());
                }
            }
            ViewEvent::DeploymentConfirmed {
                side, deployment, ..
            } => {
                need(Phase::Deployment, "deployment_confirmed")?;
                self.confirmed[side.index()] = true;
                if self.viewer.side() == Some(*side) && deployment.is_some() {
                    self.own_deployment = deployment.clone();
                }
            }
            ViewEvent::PlayStarted { pieces } => {
                need(Phase::Deployment, "play_started")?;
                self.phase = Phase::Play;
                self.to_move = Some(self.first_mover);
                self.own_deployment = None;
                self.pieces = pieces.clone();
                self.pieces.sort_by_key(|p| p.node);
            }
            ViewEvent::Moved {
                side,
                mv,
                combat,
                flag_reveal,
                ..
            } => {
                need(Phase::Play, "moved")?;
                let mover = self
                    .pieces
                    .iter()
                    .position(|p| p.node == mv.from && p.side == *side)
                    .ok_or(ViewMismatch::NoMover)?;
                let mut moving = self.pieces.remove(mover);
                let fought = combat.is_some();
                if let Some(combat) = combat
                    && !combat.defender_survives
                {
                    self.pieces.retain(|p| p.node != mv.to);
                }
                if combat.is_none_or(|c| c.attacker_survives) {
                    moving.node = mv.to;
                    self.pieces.push(moving);
                    self.pieces.sort_by_key(|p| p.node);
                }
                if !flag_reveal.is_empty() {
                    let flag = self.rules.parse_kind("F");
                    for shown in flag_reveal {
                        for (_, id) in &shown.flags {
                            if let Some(piece) = self
                                .pieces
                                .iter_mut()
                                .find(|p| p.side == shown.side && p.id == *id)
                            {
                                piece.kind = flag;
                            }
                        }
                    }
                }
                self.after_ply(*side, fought);
            }
            ViewEvent::TimedOut { side, count } => {
                need(Phase::Play, "timed_out")?;
                self.timeouts[side.index()] = *count;
                self.after_ply(*side, false);
            }
            ViewEvent::DrawOffered { side } => self.draw_offer = Some(*side),
            ViewEvent::DrawDeclined { .. } | ViewEvent::DrawLapsed { .. } => {
                self.draw_offer = None;
            }
            ViewEvent::Resigned { .. } | ViewEvent::SeatLost { .. } => {}
            ViewEvent::Ended {
                outcome,
                pieces,
                reveal,
            } => {
                if self.phase == Phase::Ended {
                    return Err(ViewMismatch::WrongPhase {
                        event: "ended",
                        phase: self.phase,
                    });
                }
                self.phase = Phase::Ended;
                self.to_move = None;
                self.draw_offer = None;
                self.own_deployment = None;
                self.outcome = Some(*outcome);
                self.pieces = pieces.clone();
                self.pieces.sort_by_key(|p| p.node);
                self.reveal = reveal.clone();
            }
        }
        Ok(())
    }

    /// The moves the viewer's side could make on this board, whoever is to move now (a client
    /// lists them before its turn comes): empty for a spectator and outside play. Judged from the
    /// view alone: the viewer's own kinds and where every piece stands; an opponent piece stands
    /// in as a piece that moves, since its kind never changes what the viewer may do (it can be
    /// attacked, or not, by where it stands). Why here: the page (in WebAssembly) and the
    /// terminal client list moves without asking the server.
    pub fn own_moves(&self) -> Vec<Move> {
        let Some(side) = self.viewer.side() else {
            return Vec::new();
        };
        if self.phase != Phase::Play {
            return Vec::new();
        }
        let stand_in = self
            .rules
            .kinds()
            .iter()
            .map(|(kind, _, _)| *kind)
            .find(|&kind| self.rules.kind_moves(kind))
            .unwrap_or(PieceKind(1));
        let mut position = crate::position::Position::empty(self.rules, side);
        for piece in &self.pieces {
            let kind = match (piece.side == side, piece.kind) {
                (true, Some(kind)) => kind,
                // An own piece of unknown kind cannot be in a player's view; it moves nowhere.
                (true, None) => continue,
                (false, _) => stand_in,
            };
            position.put(
                piece.node,
                Piece {
                    side: piece.side,
                    kind,
                    id: piece.id,
                },
            );
        }
        position.set_plies_without_combat(self.plies_without_combat);
        position.legal_moves().iter().collect()
    }

    /// What every ply does, a move or a lost turn: the turn passes, the counters move, and an
    /// offer to the player who just finished a turn lapses (as `Game` does).
    fn after_ply(&mut self, mover: Side, fought: bool) {
        self.to_move = Some(mover.other());
        self.plies += 1;
        self.plies_without_combat = if fought {
            0
        } else {
            self.plies_without_combat.saturating_add(1)
        };
        if self.draw_offer == Some(mover.other()) {
            self.draw_offer = None;
        }
    }
}
