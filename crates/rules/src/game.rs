//! A whole game as a state machine, deployment -> play -> ended, driven by commands and recorded
//! as events.
//!
//! [`Game::handle`] judges a command and returns the events it caused (already applied); on error
//! the game is untouched. [`Game::apply`] replays one recorded event without any chance or
//! judgement, so a game rebuilt from its log ([`Game::replay`]) is the game that was played. Every
//! random choice (deployment proposals, piece ids) is drawn in `handle` and stored in an event.

use crate::deployment::{Deployment, DeploymentErrors};
use crate::outcome::{EndReason, Outcome};
use crate::piece::{PieceId, PieceKind, junqi};
use crate::position::{IllegalMove, Move, Piece, Position};
use crate::rng::GameRng;
use crate::rules::{Family, Rules};
use crate::side::Side;
use crate::topology::{Node, Nodes};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Where a game is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Both players arrange their pieces.
    Deployment,
    /// Players alternate moves.
    Play,
    /// The game is over; everything is revealed.
    Ended,
}

/// Something a player (or the server on a player's behalf) asks of a game.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// Replace the side's draft with a fresh random deployment.
    Reshuffle {
        /// Who asks.
        side: Side,
    },
    /// Exchange two pieces of the side's draft.
    Swap {
        /// Who asks.
        side: Side,
        /// One node.
        a: Node,
        /// The other node.
        b: Node,
    },
    /// Replace the side's draft with a whole arrangement of the player's own.
    SetDeployment {
        /// The arrangement (its `side` must be the asker's).
        deployment: Deployment,
    },
    /// Lock in the side's current draft. Play starts when both sides have confirmed.
    Confirm {
        /// Who confirms.
        side: Side,
    },
    /// Play a move.
    Move {
        /// Who moves.
        side: Side,
        /// The move.
        mv: Move,
    },
    /// The move clock of `side` ran out (the server's clock says so, never a client).
    Timeout {
        /// The side whose time ran out; must be the side to move.
        side: Side,
    },
    /// The deployment clock ran out. A side that has not confirmed starts with its current draft
    /// if present; an absent side loses its seat and the game is cancelled.
    DeploymentDeadline {
        /// Whether each side (south, north) is connected.
        present: [bool; 2],
    },
    /// Offer a draw.
    OfferDraw {
        /// Who offers.
        side: Side,
    },
    /// Accept or decline the opponent's pending draw offer.
    AnswerDraw {
        /// Who answers.
        side: Side,
        /// `true` accepts (the game is drawn), `false` declines.
        accept: bool,
    },
    /// Give up.
    Resign {
        /// Who resigns.
        side: Side,
    },
    /// The server ends the game against a player who stayed away too long.
    Disconnected {
        /// The absent player.
        side: Side,
    },
    /// An operator stops the game (support staff, an on-call engineer): it ends without a
    /// result, in any phase but ended. Who and why are recorded by the caller, not the engine.
    Abort,
}

/// The flag (or flags) of a side shown to everyone, under the `flag-reveal` option.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlagReveal {
    /// Whose flag.
    pub side: Side,
    /// Where it stands and its id.
    pub flags: Vec<(Node, PieceId)>,
}

/// Everything that happens in a game, with full information. This is the log the session keeps;
/// it reaches players only through [`crate::view::project`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The game exists: its rules and who will move first.
    Created {
        /// The rule set.
        rules: Rules,
        /// Who moves first once play starts.
        first_mover: Side,
    },
    /// A side's draft deployment changed (server proposal, swap, reshuffle or the player's own).
    DeploymentDrafted {
        /// The draft.
        deployment: Deployment,
    },
    /// A side locked in its deployment.
    DeploymentConfirmed {
        /// Who.
        side: Side,
        /// What it confirmed.
        deployment: Deployment,
        /// Whether the server confirmed it at the deadline.
        by_deadline: bool,
    },
    /// Both deployments are in; every piece got its public id.
    PlayStarted {
        /// Every piece on the board, with its random id.
        pieces: Vec<(Node, Piece)>,
    },
    /// A move was played.
    Moved {
        /// The move.
        mv: Move,
        /// The moving piece.
        piece: Piece,
        /// The fight, if it attacked.
        combat: Option<crate::position::Combat>,
        /// Flags shown because this move removed a commander (`flag-reveal`).
        flag_reveal: Vec<FlagReveal>,
    },
    /// A side lost its turn to the clock.
    TimedOut {
        /// Who.
        side: Side,
        /// That side's timeouts so far, this one included.
        count: u8,
    },
    /// A draw was offered.
    DrawOffered {
        /// Who offered.
        side: Side,
    },
    /// A draw offer was declined.
    DrawDeclined {
        /// Who declined.
        side: Side,
    },
    /// A draw offer lapsed unanswered.
    DrawLapsed {
        /// Who had offered.
        side: Side,
    },
    /// A player resigned.
    Resigned {
        /// Who.
        side: Side,
    },
    /// A side was absent and unconfirmed at the deployment deadline: it loses its seat and the
    /// game is cancelled (an `Ended` with reason `SeatLost` follows). Matchmaking reads it to seat
    /// the other player again first.
    SeatLost {
        /// Who lost the seat.
        side: Side,
    },
    /// The game is over. `pieces` is the final board, revealed to all.
    Ended {
        /// The result.
        outcome: Outcome,
        /// Every piece left on the board.
        pieces: Vec<(Node, Piece)>,
    },
}

/// Why a command was refused. Nothing was applied.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GameError {
    /// The command does not fit the game's phase.
    #[error("the game is in its {} phase; this needs the {} phase", actual.name(), needed.name())]
    WrongPhase {
        /// The phase the command needs.
        needed: Phase,
        /// The phase the game is in.
        actual: Phase,
    },
    /// It is the other side's turn.
    #[error("it is {0}'s turn, not {1}'s")]
    NotYourTurn(Side, Side),
    /// The move breaks the rules.
    #[error("illegal move: {0}")]
    IllegalMove(#[from] IllegalMove),
    /// The deployment breaks the rules.
    #[error(transparent)]
    Deployment(#[from] DeploymentErrors),
    /// The side already confirmed its deployment.
    #[error("{0} has already confirmed its deployment")]
    AlreadyConfirmed(Side),
    /// A deployment for the other side.
    #[error("this deployment is for {0}, not for {1}")]
    WrongSide(Side, Side),
    /// A draw offer is already pending.
    #[error("{0} already has a draw offer pending")]
    DrawOfferPending(Side),
    /// No offer to answer.
    #[error("there is no draw offer from {0}'s opponent to answer")]
    NoDrawOffer(Side),
    /// Too soon after the side's last offer.
    #[error("{side} may offer a draw again in {plies} plies")]
    DrawCooldown {
        /// Who offered.
        side: Side,
        /// Plies left to wait.
        plies: u32,
    },
    /// The first event of a log must be `Created`, and only the first.
    #[error("event {index} does not fit the game: {reason}")]
    BadLog {
        /// Position of the event in the log.
        index: usize,
        /// What is wrong.
        reason: String,
    },
}

impl Phase {
    /// The lowercase name used in messages and on the wire (`deployment`, `play`, `ended`).
    pub fn name(self) -> &'static str {
        match self {
            Phase::Deployment => "deployment",
            Phase::Play => "play",
            Phase::Ended => "ended",
        }
    }
}

impl GameError {
    /// Whether the request itself is malformed or breaks the rules (a client bug or cheat),
    /// as opposed to a request that is fine but does not fit the game's current state.
    pub fn is_invalid_argument(&self) -> bool {
        matches!(
            self,
            GameError::IllegalMove(_) | GameError::Deployment(_) | GameError::WrongSide(..)
        )
    }
}

/// A game: the referee's full-information state. Serializable for snapshots; a snapshot is as
/// secret as the log it summarizes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Game {
    rules: Rules,
    first_mover: Side,
    phase: Phase,
    drafts: [Option<Deployment>; 2],
    confirmed: [bool; 2],
    position: Position,
    plies: u32,
    timeouts: [u8; 2],
    draw_offer: Option<Side>,
    last_offer_ply: [Option<u32>; 2],
    flag_revealed: [bool; 2],
    outcome: Option<Outcome>,
    events: u64,
    #[serde(default)]
    seats_lost: [bool; 2],
    /// The id each piece got when play started, in the order of the confirmed deployments'
    /// placements (south's, then north's), so that the end can reveal the pieces captured on the
    /// way with their ids ([`Game::starting_pieces`]). Only the ids: the deployments hold the
    /// rest, and the snapshot stays small. Absent from snapshots written before it existed,
    /// hence the default.
    #[serde(default)]
    starting_ids: Vec<PieceId>,
}

impl Game {
    /// Creates a game: its `Created` event and a random draft deployment for each side.
    pub fn create(rules: Rules, first_mover: Side, rng: &mut GameRng) -> (Game, Vec<Event>) {
        let mut events = vec![Event::Created { rules, first_mover }];
        for side in Side::BOTH {
            events.push(Event::DeploymentDrafted {
                deployment: Deployment::random(&rules, side, rng),
            });
        }
        let mut game = Game::blank(rules, first_mover);
        for e in &events[1..] {
            game.apply_unchecked(e);
        }
        game.events = events.len() as u64;
        (game, events)
    }

    fn blank(rules: Rules, first_mover: Side) -> Game {
        Game {
            rules,
            first_mover,
            phase: Phase::Deployment,
            drafts: [None, None],
            confirmed: [false; 2],
            position: Position::empty(rules, first_mover),
            plies: 0,
            timeouts: [0; 2],
            draw_offer: None,
            last_offer_ply: [None; 2],
            flag_revealed: [false; 2],
            outcome: None,
            events: 1,
            seats_lost: [false; 2],
            starting_ids: Vec::new(),
        }
    }

    /// Rebuilds a game from its log. Fails on a log that could not have been produced by
    /// [`Game::handle`] (for example a move that is illegal where it stands).
    pub fn replay<'a>(events: impl IntoIterator<Item = &'a Event>) -> Result<Game, GameError> {
        let mut events = events.into_iter();
        let mut game = match events.next() {
            Some(Event::Created { rules, first_mover }) => Game::blank(*rules, *first_mover),
            _ => {
                return Err(GameError::BadLog {
                    index: 0,
                    reason: "a log starts with a created event".into(),
                });
            }
        };
        for e in events {
            game.apply(e)?;
        }
        Ok(game)
    }

    /// Applies one recorded event (replay). Checks that it fits; never draws chance.
    pub fn apply(&mut self, event: &Event) -> Result<(), GameError> {
        let index = self.events as usize;
        let bad = |reason: &str| GameError::BadLog {
            index,
            reason: reason.to_string(),
        };
        match event {
            Event::Created { .. } => return Err(bad("a second created event")),
            Event::DeploymentDrafted { deployment }
            | Event::DeploymentConfirmed { deployment, .. } => {
                self.need(Phase::Deployment)?;
                deployment.validate(&self.rules)?;
                if self.confirmed[deployment.side.index()] {
                    return Err(GameError::AlreadyConfirmed(deployment.side));
                }
            }
            Event::PlayStarted { pieces } => {
                self.need(Phase::Deployment)?;
                if self.confirmed != [true, true] {
                    return Err(bad("play started before both deployments were confirmed"));
                }
                let mut expected: Vec<(Node, Side, PieceKind)> = self
                    .drafts
                    .iter()
                    .flatten()
                    .flat_map(|d| d.placements.iter().map(|&(n, k)| (n, d.side, k)))
                    .collect();
                let mut got: Vec<(Node, Side, PieceKind)> =
                    pieces.iter().map(|(n, p)| (*n, p.side, p.kind)).collect();
                expected.sort_unstable();
                got.sort_unstable();
                if got != expected {
                    return Err(bad("the pieces do not match the confirmed deployments"));
                }
            }
            Event::Moved { mv, .. } => {
                self.need(Phase::Play)?;
                self.position.check(*mv)?;
            }
            Event::TimedOut { side, .. } => {
                self.need(Phase::Play)?;
                if *side != self.position.to_move() {
                    return Err(GameError::NotYourTurn(self.position.to_move(), *side));
                }
            }
            Event::Ended { .. } => {
                if self.phase == Phase::Ended {
                    return Err(bad("the game has already ended"));
                }
            }
            Event::DrawOffered { .. }
            | Event::DrawDeclined { .. }
            | Event::DrawLapsed { .. }
            | Event::Resigned { .. } => {
                if self.phase == Phase::Ended {
                    return Err(bad("the game has already ended"));
                }
            }
            Event::SeatLost { .. } => {
                if self.phase != Phase::Deployment {
                    return Err(bad("a seat can only be lost in the deployment phase"));
                }
            }
        }
        self.apply_unchecked(event);
        self.events += 1;
        Ok(())
    }

    fn apply_unchecked(&mut self, event: &Event) {
        match event {
            Event::Created { .. } => {}
            Event::DeploymentDrafted { deployment } => {
                self.drafts[deployment.side.index()] = Some(deployment.clone());
            }
            Event::DeploymentConfirmed {
                side, deployment, ..
            } => {
                self.drafts[side.index()] = Some(deployment.clone());
                self.confirmed[side.index()] = true;
            }
            Event::PlayStarted { pieces } => {
                let mut position = Position::empty(self.rules, self.first_mover);
                for &(node, piece) in pieces {
                    position.put(node, piece);
                }
                self.starting_ids = self
                    .drafts
                    .iter()
                    .flatten()
                    .flat_map(|d| d.placements.iter())
                    .map(|&(node, _)| position.piece_at(node).map_or(PieceId(0), |p| p.id))
                    .collect();
                self.position = position;
                self.phase = Phase::Play;
            }
            Event::Moved {
                mv, flag_reveal, ..
            } => {
                let mover = self.position.to_move();
                self.position.play_legal(*mv);
                self.after_ply(mover);
                for reveal in flag_reveal {
                    self.flag_revealed[reveal.side.index()] = true;
                }
            }
            Event::TimedOut { side, count } => {
                self.position.pass();
                self.timeouts[side.index()] = *count;
                self.after_ply(*side);
            }
            Event::DrawOffered { side } => {
                self.draw_offer = Some(*side);
                self.last_offer_ply[side.index()] = Some(self.plies);
            }
            Event::DrawDeclined { .. } | Event::DrawLapsed { .. } => self.draw_offer = None,
            Event::Resigned { .. } => {}
            Event::SeatLost { side } => self.seats_lost[side.index()] = true,
            Event::Ended { outcome, .. } => {
                self.outcome = Some(*outcome);
                self.phase = Phase::Ended;
                self.draw_offer = None;
            }
        }
    }

    fn after_ply(&mut self, mover: Side) {
        self.plies += 1;
        // An offer to the player who just finished a turn lapses (the lapse event says so; this
        // keeps `apply` and `handle` agreeing even for a log that omits it).
        if self.draw_offer == Some(mover.other()) {
            self.draw_offer = None;
        }
    }

    fn need(&self, phase: Phase) -> Result<(), GameError> {
        if self.phase == phase {
            Ok(())
        } else {
            Err(GameError::WrongPhase {
                needed: phase,
                actual: self.phase,
            })
        }
    }

    /// Judges a command. On success returns the events it caused, already applied to `self`; on
    /// error `self` is unchanged.
    pub fn handle(
        &mut self,
        command: &Command,
        rng: &mut GameRng,
    ) -> Result<Vec<Event>, GameError> {
        let events = self.decide(command, rng)?;
        for e in &events {
            self.apply_unchecked(e);
            self.events += 1;
        }
        Ok(events)
    }

    fn decide(&self, command: &Command, rng: &mut GameRng) -> Result<Vec<Event>, GameError> {
        match command {
            Command::Reshuffle { side } => {
                self.need_unconfirmed(*side)?;
                Ok(vec![Event::DeploymentDrafted {
                    deployment: Deployment::random(&self.rules, *side, rng),
                }])
            }
            Command::Swap { side, a, b } => {
                self.need_unconfirmed(*side)?;
                let draft = self.draft(*side);
                Ok(vec![Event::DeploymentDrafted {
                    deployment: draft.swapped(&self.rules, *a, *b)?,
                }])
            }
            Command::SetDeployment { deployment } => {
                self.need_unconfirmed(deployment.side)?;
                deployment.validate(&self.rules)?;
                Ok(vec![Event::DeploymentDrafted {
                    deployment: Deployment::new(deployment.side, deployment.placements.clone()),
                }])
            }
            Command::Confirm { side } => {
                self.need_unconfirmed(*side)?;
                let mut events = vec![Event::DeploymentConfirmed {
                    side: *side,
                    deployment: self.draft(*side),
                    by_deadline: false,
                }];
                if self.confirmed[side.other().index()] {
                    events.extend(self.start_play(rng));
                }
                Ok(events)
            }
            Command::DeploymentDeadline { present } => {
                self.need(Phase::Deployment)?;
                let mut events = Vec::new();
                let absent: Vec<Side> = Side::BOTH
                    .into_iter()
                    .filter(|s| !self.confirmed[s.index()] && !present[s.index()])
                    .collect();
                if !absent.is_empty() {
                    events.extend(absent.iter().map(|&side| Event::SeatLost { side }));
                    events.push(self.ended(Outcome::draw(EndReason::SeatLost)));
                    return Ok(events);
                }
                for side in Side::BOTH {
                    if !self.confirmed[side.index()] {
                        events.push(Event::DeploymentConfirmed {
                            side,
                            deployment: self.draft(side),
                            by_deadline: true,
                        });
                    }
                }
                events.extend(self.start_play(rng));
                Ok(events)
            }
            Command::Move { side, mv } => {
                self.need_turn(*side)?;
                let mut position = self.position;
                let report = position.play(*mv)?;
                let flag_reveal =
                    self.flag_reveal_after(&position, report.combat.as_ref(), report.mover);
                let mut events = vec![Event::Moved {
                    mv: *mv,
                    piece: report.mover,
                    combat: report.combat,
                    flag_reveal,
                }];
                events.extend(self.lapse_after_turn(*side));
                if let Some(outcome) = report.outcome {
                    events.push(Self::ended_at(outcome, &position));
                }
                Ok(events)
            }
            Command::Timeout { side } => {
                self.need_turn(*side)?;
                let count = self.timeouts[side.index()] + 1;
                let mut events = vec![Event::TimedOut { side: *side, count }];
                events.extend(self.lapse_after_turn(*side));
                let mut position = self.position;
                let after = position.pass();
                if count >= self.rules.timeouts_to_forfeit {
                    events.push(Self::ended_at(
                        Outcome::win(side.other(), EndReason::Timeouts),
                        &position,
                    ));
                } else if let Some(outcome) = after {
                    events.push(Self::ended_at(outcome, &position));
                }
                Ok(events)
            }
            Command::OfferDraw { side } => {
                self.need(Phase::Play)?;
                if let Some(offerer) = self.draw_offer {
                    return Err(GameError::DrawOfferPending(offerer));
                }
                if let Some(last) = self.last_offer_ply[side.index()] {
                    let cooldown = u32::from(self.rules.draw_offer_cooldown_plies);
                    let waited = self.plies - last;
                    if waited < cooldown {
                        return Err(GameError::DrawCooldown {
                            side: *side,
                            plies: cooldown - waited,
                        });
                    }
                }
                Ok(vec![Event::DrawOffered { side: *side }])
            }
            Command::AnswerDraw { side, accept } => {
                self.need(Phase::Play)?;
                if self.draw_offer != Some(side.other()) {
                    return Err(GameError::NoDrawOffer(*side));
                }
                Ok(if *accept {
                    vec![self.ended(Outcome::draw(EndReason::AgreedDraw))]
                } else {
                    vec![Event::DrawDeclined { side: *side }]
                })
            }
            Command::Resign { side } => {
                if self.phase == Phase::Ended {
                    return Err(self.need(Phase::Play).unwrap_err());
                }
                Ok(vec![
                    Event::Resigned { side: *side },
                    self.ended(Outcome::win(side.other(), EndReason::Resigned)),
                ])
            }
            Command::Disconnected { side } => {
                self.need(Phase::Play)?;
                Ok(vec![self.ended(Outcome::win(
                    side.other(),
                    EndReason::Disconnected,
                ))])
            }
            Command::Abort => {
                if self.phase == Phase::Ended {
                    return Err(GameError::WrongPhase {
                        needed: Phase::Play,
                        actual: Phase::Ended,
                    });
                }
                Ok(vec![self.ended(Outcome::draw(EndReason::Aborted))])
            }
        }
    }

    fn need_unconfirmed(&self, side: Side) -> Result<(), GameError> {
        self.need(Phase::Deployment)?;
        if self.confirmed[side.index()] {
            return Err(GameError::AlreadyConfirmed(side));
        }
        Ok(())
    }

    fn need_turn(&self, side: Side) -> Result<(), GameError> {
        self.need(Phase::Play)?;
        let to_move = self.position.to_move();
        if side != to_move {
            return Err(GameError::NotYourTurn(to_move, side));
        }
        Ok(())
    }

    /// The side's draft; every game gets a random draft per side at creation.
    fn draft(&self, side: Side) -> Deployment {
        self.drafts[side.index()]
            .clone()
            .expect("every side has a draft from creation on")
    }

    /// Play starts: every piece gets an id from one shuffled range over both sides, so an id
    /// carries nothing of the piece's kind, side or deployment square.
    fn start_play(&self, rng: &mut GameRng) -> Vec<Event> {
        let placed: Vec<(Node, Side, PieceKind)> = self
            .drafts
            .iter()
            .flatten()
            .flat_map(|d| d.placements.iter().map(|&(n, k)| (n, d.side, k)))
            .collect();
        let mut labels: Vec<u8> = (0..placed.len() as u8).collect();
        rng.shuffle(&mut labels);
        let pieces: Vec<(Node, Piece)> = placed
            .into_iter()
            .zip(labels)
            .map(|((node, side, kind), id)| {
                (
                    node,
                    Piece {
                        side,
                        kind,
                        id: PieceId(id),
                    },
                )
            })
            .collect();
        let mut events = vec![Event::PlayStarted { pieces }];
        let mut preview = self.clone();
        preview.apply_unchecked(&events[0]);
        if let Some(outcome) = preview.position.outcome_at_turn_start() {
            events.push(Self::ended_at(outcome, &preview.position));
        }
        events
    }

    fn lapse_after_turn(&self, side: Side) -> Option<Event> {
        (self.draw_offer == Some(side.other())).then_some(Event::DrawLapsed { side: side.other() })
    }

    /// Flags shown because this fight removed a commander (`flag-reveal`); both sides' when
    /// two commanders fall together. Empty otherwise.
    fn flag_reveal_after(
        &self,
        after: &Position,
        combat: Option<&crate::position::Combat>,
        mover: Piece,
    ) -> Vec<FlagReveal> {
        let Some(combat) = combat.filter(|_| self.rules.flag_revealed_when_commander_dies) else {
            return Vec::new();
        };
        let (commander, flag) = match self.rules.family {
            Family::Junqi => (junqi::COMMANDER, junqi::FLAG),
            // Gunjin Shogi has no flag-reveal option.
            Family::GunjinShogi => return Vec::new(),
        };
        let mut fallen = Vec::new();
        if mover.kind == commander && !combat.attacker_survives {
            fallen.push(mover.side);
        }
        if combat.defender.kind == commander && !combat.defender_survives {
            fallen.push(combat.defender.side);
        }
        fallen
            .into_iter()
            .filter(|side| !self.flag_revealed[side.index()])
            .map(|side| FlagReveal {
                side,
                flags: flags_of(after, side, flag),
            })
            .collect()
    }

    fn ended(&self, outcome: Outcome) -> Event {
        Self::ended_at(outcome, &self.position)
    }

    fn ended_at(outcome: Outcome, position: &Position) -> Event {
        Event::Ended {
            outcome,
            pieces: position.pieces().collect(),
        }
    }

    /// The rule set.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }
    /// The current phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// Who moves first in play.
    pub fn first_mover(&self) -> Side {
        self.first_mover
    }
    /// The position (empty until play starts).
    pub fn position(&self) -> &Position {
        &self.position
    }
    /// A side's current draft or confirmed deployment.
    pub fn deployment(&self, side: Side) -> Option<&Deployment> {
        self.drafts[side.index()].as_ref()
    }
    /// Whether a side has confirmed its deployment.
    pub fn confirmed(&self, side: Side) -> bool {
        self.confirmed[side.index()]
    }
    /// Plies played (moves and timeouts).
    pub fn plies(&self) -> u32 {
        self.plies
    }
    /// A side's timeouts so far.
    pub fn timeouts(&self, side: Side) -> u8 {
        self.timeouts[side.index()]
    }
    /// Who has a draw offer pending, if anyone.
    pub fn draw_offer(&self) -> Option<Side> {
        self.draw_offer
    }
    /// Whether a side's flag has been revealed (`flag-reveal`).
    pub fn flag_revealed(&self, side: Side) -> bool {
        self.flag_revealed[side.index()]
    }
    /// The result, once the game has ended.
    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }
    /// Which sides lost their seat at the deployment deadline (only in a game cancelled with
    /// reason `SeatLost`); matchmaking seats the other player again first.
    pub fn seats_lost(&self) -> [bool; 2] {
        self.seats_lost
    }
    /// Every piece of the game where it stood when play started, with its id and kind (empty
    /// before play). The end reveals it ([`crate::view::reveal`]): a captured piece is gone
    /// from [`Game::position`] but its id appeared in the fights that removed it.
    pub fn starting_pieces(&self) -> Vec<(Node, Piece)> {
        self.drafts
            .iter()
            .flatten()
            .flat_map(|d| {
                d.placements
                    .iter()
                    .map(move |&(node, kind)| (node, d.side, kind))
            })
            .zip(&self.starting_ids)
            .map(|((node, side, kind), &id)| (node, Piece { side, kind, id }))
            .collect()
    }
    /// Number of events in the game's log so far.
    pub fn event_count(&self) -> u64 {
        self.events
    }
    /// The side to move (meaningful in play).
    pub fn to_move(&self) -> Side {
        self.position.to_move()
    }
}

fn flags_of(position: &Position, side: Side, flag: PieceKind) -> Vec<(Node, PieceId)> {
    Nodes(position.nodes_of(side, flag))
        .map(|n| (n, position.piece_at(n).map_or(PieceId(0), |p| p.id)))
        .collect()
}
