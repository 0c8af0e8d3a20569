//! The browser API as plain Rust functions: what the wasm wrappers in [`crate::wasm`] call, and
//! what the native tests check (so every answer the page gets is tested without a browser).

use crate::json::{
    CombatViewJson, DeploymentJson, END_REASON_NAMES, EndRevealJson, EnumValue, GameEventJson,
    GameViewJson, OutcomeJson, PHASE_NAMES, PlacementJson, SIDE_NAMES, Uint, VIEWER_NAMES,
    VisiblePieceJson,
};
use hidden_front_inference::Tracker;
use hidden_front_rules::{
    Deployment, DeploymentProblem, EndReason, Family, GameView, Move, Node, Nodes, Outcome, Phase,
    Piece, PieceId, PieceKind, Position, Reveal, Rules, Side, ViewCombat, ViewEvent, ViewPiece,
    Viewer,
};
use serde::Serialize;
use thiserror::Error;

/// Why a call was refused: the input is not something the engine can read (an unknown rule set,
/// a square that is not on the board, a view that contradicts itself). JS sees it as an `Error`
/// with this message.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct EngineError(pub String);

fn err(message: impl Into<String>) -> EngineError {
    EngineError(message.into())
}

/// Reads a rule-set name, with the engine's explanation of a name it does not know.
pub fn parse_rules(name: &str) -> Result<Rules, EngineError> {
    Rules::parse(name).map_err(|e| err(e.to_string()))
}

fn side_of(value: &EnumValue, what: &str) -> Result<Option<Side>, EngineError> {
    match value.number(&SIDE_NAMES) {
        Some(0) => Ok(None),
        Some(1) => Ok(Some(Side::South)),
        Some(2) => Ok(Some(Side::North)),
        _ => Err(err(format!("{what}: {value:?} is not a side"))),
    }
}

/// A side as proto JSON writes it (`SIDE_SOUTH` / `SIDE_NORTH`).
fn side_enum(side: Side) -> EnumValue {
    EnumValue::Name(SIDE_NAMES[if side == Side::South { 1 } else { 2 }].to_string())
}

/// An optional side as proto JSON writes it (`SIDE_UNSPECIFIED` for none).
fn opt_side_enum(side: Option<Side>) -> EnumValue {
    side.map_or(EnumValue::Number(0), side_enum)
}

fn required_side(value: &EnumValue, what: &str) -> Result<Side, EngineError> {
    side_of(value, what)?.ok_or_else(|| err(format!("{what}: a side is required")))
}

/// `"south"` / `"north"`, as the page names sides.
pub fn side_name(side: Side) -> &'static str {
    match side {
        Side::South => "south",
        Side::North => "north",
    }
}

/// Reads `"south"` / `"north"` (or the proto names).
pub fn parse_side(text: &str) -> Result<Side, EngineError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "south" | "side_south" => Ok(Side::South),
        "north" | "side_north" => Ok(Side::North),
        other => Err(err(format!(
            "{other:?} is not a side: expected \"south\" or \"north\""
        ))),
    }
}

fn square(rules: &Rules, name: &str, what: &str) -> Result<Node, EngineError> {
    rules.topology().node(name).ok_or_else(|| {
        err(format!(
            "{what}: {name:?} is not a square of {}",
            rules.name()
        ))
    })
}

fn kind_of(rules: &Rules, code: &str) -> Option<PieceKind> {
    if code.is_empty() {
        None
    } else {
        rules.parse_kind(code)
    }
}

/// One node of a board, for drawing it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BoardNode {
    /// Its name (`A1`, `d1+e1`).
    pub name: String,
    /// Its column, 0 = the west file.
    pub column: u8,
    /// Its row, 0 = south's back rank.
    pub row: u8,
    /// Columns it covers: 2 for Gunjin Shogi's two-cell HQ, else 1.
    pub span: u8,
    /// A camp (Junqi): a piece there cannot be attacked.
    pub camp: bool,
    /// Whose HQ it is, if one.
    pub hq: Option<&'static str>,
    /// On a railway (Junqi).
    pub rail: bool,
    /// Whose half it lies in.
    pub half: &'static str,
    /// A deployment square of its half.
    pub deploy: bool,
    /// A gate square (Gunjin Shogi).
    pub gate: bool,
    /// On its half's front row.
    pub front_row: bool,
}

/// One link between two nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BoardLink {
    /// One end's name.
    pub a: String,
    /// The other end's name.
    pub b: String,
    /// A rail segment.
    pub rail: bool,
}

/// One piece kind of a rule set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BoardKind {
    /// Its code (`9`, `B`, `GEN`).
    pub code: &'static str,
    /// Copies per side.
    pub count: u8,
    /// Whether it can ever move.
    pub moves: bool,
    /// Its place in the strongest-first list, counted from the weakest (higher is stronger).
    pub strength: u8,
}

/// A rule set's board, everything the page draws.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Board {
    /// The rule set's canonical name.
    pub rules: String,
    /// `junqi` or `gunjin`.
    pub family: &'static str,
    /// Grid columns.
    pub columns: u8,
    /// Grid rows.
    pub rows: u8,
    /// Pieces each side deploys.
    pub pieces_per_side: usize,
    /// Every node, lowest number first.
    pub nodes: Vec<BoardNode>,
    /// Every link once.
    pub links: Vec<BoardLink>,
    /// Every kind, strongest first.
    pub kinds: Vec<BoardKind>,
}

/// `topology(rules)`: the board of a rule set, for drawing.
pub fn topology(rules: &str) -> Result<Board, EngineError> {
    let rules = parse_rules(rules)?;
    let topo = rules.topology();
    let gunjin = rules.family == Family::GunjinShogi;
    let nodes = Nodes(topo.all)
        .map(|n| {
            let b = n.bit();
            let south = topo.half[0] & b != 0;
            let hq = if topo.hq[0] & b != 0 {
                Some("south")
            } else if topo.hq[1] & b != 0 {
                Some("north")
            } else {
                None
            };
            BoardNode {
                name: topo.name(n).to_string(),
                column: n.0 % topo.columns,
                row: n.0 / topo.columns,
                span: if gunjin && hq.is_some() { 2 } else { 1 },
                camp: topo.camps & b != 0,
                hq,
                rail: topo.rail & b != 0,
                half: if south { "south" } else { "north" },
                deploy: (topo.half[0] | topo.half[1]) & !topo.camps & b != 0,
                gate: (topo.gates[0] | topo.gates[1]) & b != 0,
                front_row: (topo.front_row[0] | topo.front_row[1]) & b != 0,
            }
        })
        .collect();
    let links = topo
        .links
        .iter()
        .map(|&(a, b)| BoardLink {
            a: topo.name(a).to_string(),
            b: topo.name(b).to_string(),
            rail: topo.rail_neighbors[a.index()] & b.bit() != 0,
        })
        .collect();
    let n = rules.kinds().len();
    let kinds = rules
        .kinds()
        .iter()
        .enumerate()
        .map(|(i, &(k, code, count))| BoardKind {
            code,
            count,
            moves: rules.kind_moves(k),
            strength: (n - i) as u8,
        })
        .collect();
    Ok(Board {
        rules: rules.name(),
        family: if gunjin { "gunjin" } else { "junqi" },
        columns: topo.columns,
        rows: topo.rows,
        pieces_per_side: rules.pieces_per_side(),
        nodes,
        links,
        kinds,
    })
}

/// A move by square names, as the page sends and shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MoveOut {
    /// The square it leaves.
    pub from: String,
    /// The square it goes to.
    pub to: String,
}

fn move_out(rules: &Rules, mv: Move) -> MoveOut {
    let topo = rules.topology();
    MoveOut {
        from: topo.name(mv.from).to_string(),
        to: topo.name(mv.to).to_string(),
    }
}

/// `legalMoves(view)`: the viewer's own legal moves from a proto JSON GameView alone, whoever is
/// to move; empty for a spectator or outside play (the rules engine's `GameView::own_moves`).
pub fn legal_moves(view: &GameViewJson) -> Result<Vec<MoveOut>, EngineError> {
    let view = engine_view(view)?;
    Ok(view
        .own_moves()
        .into_iter()
        .map(|mv| move_out(&view.rules, mv))
        .collect())
}

/// One problem of a deployment, for the page to show (and translate by `reason`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// A stable SCREAMING_SNAKE name of the engine's problem.
    pub reason: &'static str,
    /// The square concerned, if one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub square: Option<String>,
    /// The piece code concerned, if one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The engine's English explanation.
    pub message: String,
}

fn problem(rules: &Rules, p: &DeploymentProblem) -> Problem {
    use DeploymentProblem as P;
    let message = p.to_string();
    let flag = rules
        .code(hidden_front_inference::flag_kind(rules))
        .to_string();
    let mine = rules
        .parse_kind(if rules.family == Family::Junqi {
            "M"
        } else {
            "MIN"
        })
        .map(|k| rules.code(k).to_string());
    let bomb = rules.parse_kind("B").map(|k| rules.code(k).to_string());
    let (reason, square, code) = match p {
        P::OffBoard(n) => ("OFF_BOARD", Some(n.to_string()), None),
        P::UnknownKind { square, kind } => {
            ("UNKNOWN_KIND", Some(square.clone()), Some(kind.to_string()))
        }
        P::NotInOwnHalf(s, _) => ("NOT_IN_OWN_HALF", Some(s.clone()), None),
        P::InCamp(s) => ("IN_CAMP", Some(s.clone()), None),
        P::Duplicate(s) => ("DUPLICATE", Some(s.clone()), None),
        P::SameSquare(s) => ("SAME_SQUARE", Some(s.clone()), None),
        P::WrongCount { code, .. } => ("WRONG_COUNT", None, Some(code.to_string())),
        P::EmptySquares(squares) => ("EMPTY_SQUARES", squares.first().cloned(), None),
        P::FlagNotInHq(s) => ("FLAG_NOT_IN_HQ", Some(s.clone()), Some(flag)),
        P::MineNotOnBackRows(s) => ("MINE_NOT_ON_BACK_ROWS", Some(s.clone()), mine),
        P::MineInHq(s) => ("MINE_IN_HQ", Some(s.clone()), mine),
        P::BombOnFrontRow(s) => ("BOMB_ON_FRONT_ROW", Some(s.clone()), bomb),
        P::OnGate { square, code } => ("ON_GATE", Some(square.clone()), Some(code.to_string())),
    };
    Problem {
        reason,
        square,
        code,
        message,
    }
}

/// Reads a proto JSON deployment; a square or code the rules do not know is a [`Problem`]
/// (`UNKNOWN_SQUARE`, `UNKNOWN_KIND`), not an error, so the page can show it like the others.
fn read_deployment(
    rules: &Rules,
    deployment: &DeploymentJson,
) -> Result<Result<Deployment, Vec<Problem>>, EngineError> {
    let side = required_side(&deployment.side, "deployment.side")?;
    let mut problems = Vec::new();
    let mut placements = Vec::with_capacity(deployment.placements.len());
    for p in &deployment.placements {
        let node = rules.topology().node(&p.square);
        let kind = rules.parse_kind(&p.piece);
        match (node, kind) {
            (Some(n), Some(k)) => placements.push((n, k)),
            (None, _) => problems.push(Problem {
                reason: "UNKNOWN_SQUARE",
                square: Some(p.square.clone()),
                code: None,
                message: format!("{:?} is not a square of {}", p.square, rules.name()),
            }),
            (Some(_), None) => problems.push(Problem {
                reason: "UNKNOWN_KIND",
                square: Some(p.square.clone()),
                code: Some(p.piece.clone()),
                message: format!("{:?} is not a piece code of {}", p.piece, rules.name()),
            }),
        }
    }
    if problems.is_empty() {
        Ok(Ok(Deployment::new(side, placements)))
    } else {
        Ok(Err(problems))
    }
}

/// `validateDeployment(rules, deployment)`: every problem of a proto JSON deployment (empty:
/// valid).
pub fn validate_deployment(
    rules: &str,
    deployment: &DeploymentJson,
) -> Result<Vec<Problem>, EngineError> {
    let rules = parse_rules(rules)?;
    Ok(match read_deployment(&rules, deployment)? {
        Err(problems) => problems,
        Ok(d) => match d.validate(&rules) {
            Ok(()) => Vec::new(),
            Err(e) => e.0.iter().map(|p| problem(&rules, p)).collect(),
        },
    })
}

fn deployment_json(rules: &Rules, d: &Deployment) -> DeploymentJson {
    let topo = rules.topology();
    DeploymentJson {
        side: side_enum(d.side),
        placements: d
            .placements
            .iter()
            .map(|&(n, k)| PlacementJson {
                square: topo.name(n).to_string(),
                piece: rules.code(k).to_string(),
            })
            .collect(),
    }
}

/// The answer of [`check_swap`]: `{ok: true, deployment}` or `{ok: false, problems}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SwapResult {
    /// Whether the swap gives a valid deployment.
    pub ok: bool,
    /// The deployment after the swap, when ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment: Option<DeploymentJson>,
    /// Why not, when not ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problems: Option<Vec<Problem>>,
}

/// `checkSwap(rules, deployment, a, b)`: the deployment with the pieces on squares `a` and `b`
/// exchanged, or every problem that swap would cause.
pub fn check_swap(
    rules: &str,
    deployment: &DeploymentJson,
    a: &str,
    b: &str,
) -> Result<SwapResult, EngineError> {
    let rules = parse_rules(rules)?;
    let refused = |problems| SwapResult {
        ok: false,
        deployment: None,
        problems: Some(problems),
    };
    let d = match read_deployment(&rules, deployment)? {
        Ok(d) => d,
        Err(problems) => return Ok(refused(problems)),
    };
    let mut unknown = Vec::new();
    for s in [a, b] {
        if rules.topology().node(s).is_none() {
            unknown.push(Problem {
                reason: "UNKNOWN_SQUARE",
                square: Some(s.to_string()),
                code: None,
                message: format!("{s:?} is not a square of {}", rules.name()),
            });
        }
    }
    if !unknown.is_empty() {
        return Ok(refused(unknown));
    }
    let (na, nb) = (square(&rules, a, "a")?, square(&rules, b, "b")?);
    Ok(match d.swapped(&rules, na, nb) {
        Ok(swapped) => SwapResult {
            ok: true,
            deployment: Some(deployment_json(&rules, &swapped)),
            problems: None,
        },
        Err(e) => refused(e.0.iter().map(|p| problem(&rules, p)).collect()),
    })
}

/// The answer of [`parse_move`]: `{ok: true, move}` or `{ok: false, message}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParsedMove {
    /// Whether the text names a move.
    pub ok: bool,
    /// The move, with canonical square names, when ok.
    #[serde(rename = "move", skip_serializing_if = "Option::is_none")]
    pub mv: Option<MoveOut>,
    /// Why not, when not ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `parseMove(rules, text)`: reads `"A6 A7"`, `"A6-A7"`, `"a6a7"` (and Gunjin Shogi names such
/// as `"d1+e1 d2"`). Only the squares are checked, not the move's legality.
pub fn parse_move(rules: &str, text: &str) -> Result<ParsedMove, EngineError> {
    let rules = parse_rules(rules)?;
    let topo = rules.topology();
    let refuse = |message: String| ParsedMove {
        ok: false,
        mv: None,
        message: Some(message),
    };
    let cleaned = text.trim();
    let parts: Vec<&str> = cleaned
        .split(|c: char| c.is_whitespace() || c == '-' || c == ',' || c == '>')
        .filter(|p| !p.is_empty())
        .collect();
    let pair = match parts.as_slice() {
        [from, to] => topo.node(from).zip(topo.node(to)),
        [joined] => (1..joined.len())
            .filter(|&i| joined.is_char_boundary(i))
            .find_map(|i| topo.node(&joined[..i]).zip(topo.node(&joined[i..]))),
        _ => None,
    };
    Ok(match pair {
        Some((from, to)) if from != to => ParsedMove {
            ok: true,
            mv: Some(move_out(&rules, Move { from, to })),
            message: None,
        },
        Some(_) => refuse("a move needs two different squares".to_string()),
        None => refuse(format!(
            "{cleaned:?} is not a move: write two squares of the board, e.g. {:?}",
            if rules.family == Family::Junqi {
                "A6 A7"
            } else {
                "b3 b4"
            }
        )),
    })
}

/// The engine's form of one proto JSON event as the seat saw it, for the events the tracker
/// learns from; `None` for the others (deployment events, the end).
pub fn view_event(rules: &Rules, event: &GameEventJson) -> Result<Option<ViewEvent>, EngineError> {
    if let Some(ps) = &event.play_started {
        return Ok(Some(ViewEvent::PlayStarted {
            pieces: view_pieces(rules, &ps.pieces, "playStarted.pieces")?,
        }));
    }
    if let Some(m) = &event.moved {
        let side = required_side(&m.side, "moved.side")?;
        let mv =
            m.mv.as_ref()
                .ok_or_else(|| err("moved.move: is required"))?;
        let mv = Move {
            from: square(rules, &mv.from, "moved.move.from")?,
            to: square(rules, &mv.to, "moved.move.to")?,
        };
        let combat = match &m.combat {
            None => None,
            Some(c) => Some(ViewCombat {
                defender: id(c.defender_id, "moved.combat.defenderId")?,
                defender_kind: kind_of(rules, &c.defender_piece),
                attacker_survives: c.attacker_survives,
                defender_survives: c.defender_survives,
                flag_captured: c.flag_captured,
            }),
        };
        let mut flag_reveal = Vec::new();
        for r in &m.flag_reveals {
            let side = required_side(&r.side, "moved.flagReveals.side")?;
            let mut flags = Vec::new();
            for f in &r.flags {
                flags.push((
                    square(rules, &f.square, "moved.flagReveals.flags")?,
                    id(f.id, "moved.flagReveals.flags.id")?,
                ));
            }
            flag_reveal.push(hidden_front_rules::FlagReveal { side, flags });
        }
        return Ok(Some(ViewEvent::Moved {
            side,
            mv,
            piece: id(m.piece_id, "moved.pieceId")?,
            kind: kind_of(rules, &m.piece),
            combat,
            flag_reveal,
        }));
    }
    if let Some(t) = &event.timed_out {
        return Ok(Some(ViewEvent::TimedOut {
            side: required_side(&t.side, "timedOut.side")?,
            count: t.count.min(255) as u8,
        }));
    }
    for (body, make, what) in [
        (
            &event.draw_offered,
            (|side| ViewEvent::DrawOffered { side }) as fn(Side) -> ViewEvent,
            "drawOffered.side",
        ),
        (
            &event.draw_declined,
            |side| ViewEvent::DrawDeclined { side },
            "drawDeclined.side",
        ),
        (
            &event.draw_lapsed,
            |side| ViewEvent::DrawLapsed { side },
            "drawLapsed.side",
        ),
        (
            &event.resigned,
            |side| ViewEvent::Resigned { side },
            "resigned.side",
        ),
        (
            &event.seat_lost,
            |side| ViewEvent::SeatLost { side },
            "seatLost.side",
        ),
    ] {
        if let Some(b) = body {
            return Ok(Some(make(required_side(&b.side, what)?)));
        }
    }
    Ok(None)
}

fn id(value: u32, what: &str) -> Result<PieceId, EngineError> {
    u8::try_from(value)
        .map(PieceId)
        .map_err(|_| err(format!("{what}: {value} is not a piece id")))
}

fn view_pieces(
    rules: &Rules,
    pieces: &[VisiblePieceJson],
    what: &str,
) -> Result<Vec<ViewPiece>, EngineError> {
    pieces
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let what = format!("{what}[{i}]");
            Ok(ViewPiece {
                node: square(rules, &p.square, &what)?,
                side: required_side(&p.side, &what)?,
                id: id(p.id, &what)?,
                kind: kind_of(rules, &p.piece),
            })
        })
        .collect()
}

/// The engine's form of any proto JSON event as the viewer was shown it, what
/// [`GameView::apply`] follows: [`view_event`]'s events, and the creation, the deployment events
/// and the end. `None` for an event without a body this build knows.
pub fn shown_event(rules: &Rules, event: &GameEventJson) -> Result<Option<ViewEvent>, EngineError> {
    if let Some(c) = &event.created {
        return Ok(Some(ViewEvent::Created {
            rules: parse_rules(&c.rules)?,
            first_mover: required_side(&c.first_mover, "created.firstMover")?,
        }));
    }
    if let Some(d) = &event.deployment_drafted {
        let what = "deploymentDrafted.deployment";
        let deployment = d
            .deployment
            .as_ref()
            .ok_or_else(|| err(format!("{what}: is required")))?;
        return Ok(Some(ViewEvent::DeploymentDrafted {
            deployment: engine_deployment(rules, deployment, what)?,
        }));
    }
    if let Some(c) = &event.deployment_confirmed {
        let what = "deploymentConfirmed.deployment";
        return Ok(Some(ViewEvent::DeploymentConfirmed {
            side: required_side(&c.side, "deploymentConfirmed.side")?,
            deployment: c
                .deployment
                .as_ref()
                .map(|d| engine_deployment(rules, d, what))
                .transpose()?,
            by_deadline: c.by_deadline,
        }));
    }
    if let Some(e) = &event.ended {
        return Ok(Some(ViewEvent::Ended {
            outcome: engine_outcome(e.outcome.as_ref(), "ended.outcome")?,
            pieces: view_pieces(rules, &e.pieces, "ended.pieces")?,
            reveal: e
                .reveal
                .as_ref()
                .map(|r| engine_reveal(rules, r, "ended.reveal"))
                .transpose()?,
        }));
    }
    view_event(rules, event)
}

/// A proto JSON deployment the rules can read, or why not.
fn engine_deployment(
    rules: &Rules,
    deployment: &DeploymentJson,
    what: &str,
) -> Result<Deployment, EngineError> {
    read_deployment(rules, deployment)?.map_err(|problems| {
        let first = problems.first().map_or("", |p| p.message.as_str());
        err(format!("{what}: {first}"))
    })
}

fn engine_outcome(outcome: Option<&OutcomeJson>, what: &str) -> Result<Outcome, EngineError> {
    let outcome = outcome.ok_or_else(|| err(format!("{what}: is required")))?;
    let reason = outcome
        .reason
        .number(&END_REASON_NAMES)
        .filter(|&n| n > 0)
        .and_then(|n| END_REASON_NAMES.get(n as usize))
        .and_then(|name| name.strip_prefix("END_REASON_"))
        .and_then(|name| EndReason::from_name(&name.to_ascii_lowercase()))
        .ok_or_else(|| {
            err(format!(
                "{what}.reason: {:?} is not an end reason",
                outcome.reason
            ))
        })?;
    Ok(Outcome {
        winner: side_of(&outcome.winner, &format!("{what}.winner"))?,
        reason,
    })
}

fn outcome_json(outcome: Outcome) -> OutcomeJson {
    let name = format!("END_REASON_{}", outcome.reason.name().to_ascii_uppercase());
    OutcomeJson {
        winner: opt_side_enum(outcome.winner),
        reason: EnumValue::Name(name),
    }
}

fn engine_reveal(rules: &Rules, reveal: &EndRevealJson, what: &str) -> Result<Reveal, EngineError> {
    Ok(Reveal {
        deployments: reveal
            .deployments
            .iter()
            .map(|d| engine_deployment(rules, d, &format!("{what}.deployments")))
            .collect::<Result<_, _>>()?,
        pieces: view_pieces(
            rules,
            &reveal.starting_pieces,
            &format!("{what}.startingPieces"),
        )?,
    })
}

fn reveal_json(rules: &Rules, reveal: &Reveal) -> EndRevealJson {
    EndRevealJson {
        deployments: reveal
            .deployments
            .iter()
            .map(|d| deployment_json(rules, d))
            .collect(),
        starting_pieces: reveal.pieces.iter().map(|p| piece_json(rules, p)).collect(),
    }
}

/// The engine's view of a proto JSON view: everything but the game's id, players, time control,
/// presence and clocks, which the engine does not hold.
pub fn engine_view(view: &GameViewJson) -> Result<GameView, EngineError> {
    let rules = parse_rules(&view.rules)?;
    let viewer = match view.viewer.number(&VIEWER_NAMES) {
        Some(1) => Viewer::South,
        Some(2) => Viewer::North,
        Some(3) => Viewer::Spectator,
        _ => return Err(err(format!("viewer: {:?} is not a viewer", view.viewer))),
    };
    let phase = match view.phase.number(&PHASE_NAMES) {
        Some(1) => Phase::Deployment,
        Some(2) => Phase::Play,
        Some(3) => Phase::Ended,
        _ => return Err(err(format!("phase: {:?} is not a phase", view.phase))),
    };
    let count = |value: u32, what: &str| {
        u8::try_from(value).map_err(|_| err(format!("{what}: {value} is more than 255")))
    };
    Ok(GameView {
        viewer,
        rules,
        phase,
        first_mover: required_side(&view.first_mover, "firstMover")?,
        to_move: match phase {
            Phase::Play => Some(required_side(&view.to_move, "toMove")?),
            _ => None,
        },
        plies: view.plies,
        plies_without_combat: u16::try_from(view.plies_without_combat).map_err(|_| {
            err(format!(
                "pliesWithoutCombat: {} is more than a game can have",
                view.plies_without_combat
            ))
        })?,
        timeouts: [
            count(view.south_timeouts, "southTimeouts")?,
            count(view.north_timeouts, "northTimeouts")?,
        ],
        draw_offer: side_of(&view.draw_offer, "drawOffer")?,
        confirmed: [view.south_confirmed, view.north_confirmed],
        own_deployment: view
            .own_deployment
            .as_ref()
            .map(|d| engine_deployment(&rules, d, "ownDeployment"))
            .transpose()?,
        pieces: view_pieces(&rules, &view.pieces, "pieces")?,
        outcome: view
            .outcome
            .as_ref()
            .map(|o| engine_outcome(Some(o), "outcome"))
            .transpose()?,
        reveal: view
            .reveal
            .as_ref()
            .map(|r| engine_reveal(&rules, r, "reveal"))
            .transpose()?,
    })
}

/// The proto JSON of the engine's view at `version`, with what the engine does not hold taken
/// from `kept` (the view it followed): the game's id, players, time control, presence and, until
/// the end, the deadlines (status items bring their changes).
fn game_view_json(view: &GameView, kept: &GameViewJson, version: u64) -> GameViewJson {
    let rules = &view.rules;
    let ended = view.phase == Phase::Ended;
    let deadline = |d: Uint| if ended { Uint(0) } else { d };
    let viewer = match view.viewer {
        Viewer::South => 1,
        Viewer::North => 2,
        Viewer::Spectator => 3,
    };
    let phase = match view.phase {
        Phase::Deployment => 1,
        Phase::Play => 2,
        Phase::Ended => 3,
    };
    GameViewJson {
        game_id: kept.game_id.clone(),
        version: Uint(version),
        viewer: EnumValue::Name(VIEWER_NAMES[viewer].to_string()),
        rules: rules.name(),
        time_control: kept.time_control.clone(),
        phase: EnumValue::Name(PHASE_NAMES[phase].to_string()),
        first_mover: side_enum(view.first_mover),
        to_move: opt_side_enum(view.to_move),
        plies: view.plies,
        plies_without_combat: u32::from(view.plies_without_combat),
        south_timeouts: u32::from(view.timeouts[0]),
        north_timeouts: u32::from(view.timeouts[1]),
        draw_offer: opt_side_enum(view.draw_offer),
        south_confirmed: view.confirmed[0],
        north_confirmed: view.confirmed[1],
        own_deployment: view
            .own_deployment
            .as_ref()
            .map(|d| deployment_json(rules, d)),
        pieces: view.pieces.iter().map(|p| piece_json(rules, p)).collect(),
        outcome: view.outcome.map(outcome_json),
        south_player: kept.south_player.clone(),
        north_player: kept.north_player.clone(),
        south_connected: kept.south_connected,
        north_connected: kept.north_connected,
        turn_deadline_unix_millis: deadline(kept.turn_deadline_unix_millis),
        south_away_deadline_unix_millis: deadline(kept.south_away_deadline_unix_millis),
        north_away_deadline_unix_millis: deadline(kept.north_away_deadline_unix_millis),
        reveal: view.reveal.as_ref().map(|r| reveal_json(rules, r)),
    }
}

/// `applyEvent(view, event)`: the view after one more event, as the viewer was shown it, so the
/// page follows a game from its stream instead of reading the view per event. The engine's
/// [`GameView::apply`] does the work; the fields it does not hold are kept from `view`, and the
/// version becomes the event's seq. An error when the event does not follow (not after the
/// view's version, a phase or board it does not fit, a body it cannot read): the page then reads
/// the view again.
pub fn apply_event(
    view: &GameViewJson,
    event: &GameEventJson,
) -> Result<GameViewJson, EngineError> {
    let seq = event.seq.0;
    if seq <= view.version.0 {
        return Err(err(format!(
            "event {seq} is not after the view's version {}",
            view.version.0
        )));
    }
    let mut followed = engine_view(view)?;
    let shown = shown_event(&followed.rules, event)?
        .ok_or_else(|| err(format!("event {seq}: no event body this engine knows")))?;
    followed
        .apply(&shown)
        .map_err(|e| err(format!("event {seq}: {e}")))?;
    Ok(game_view_json(&followed, view, seq))
}

/// What the page shows of one opponent piece.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Possible {
    /// Its public id.
    pub id: u32,
    /// The codes it can still be, strongest first.
    pub codes: Vec<&'static str>,
    /// Whether it has moved.
    pub moved: bool,
    /// Whether it is still on the board.
    pub alive: bool,
}

/// `Inference`: the computer player's own inference ([`Tracker`]), fed the proto JSON events
/// one player received.
#[derive(Debug, Clone)]
pub struct Inference {
    tracker: Tracker,
}

impl Inference {
    /// An inference for the player on `side` (`"south"` / `"north"`) under `rules`.
    pub fn new(rules: &str, side: &str) -> Result<Inference, EngineError> {
        Ok(Inference {
            tracker: Tracker::new(parse_rules(rules)?, parse_side(side)?),
        })
    }

    /// Learns from one event as the player received it.
    pub fn observe(&mut self, event: &GameEventJson) -> Result<(), EngineError> {
        if let Some(view) = view_event(self.tracker.rules(), event)? {
            self.tracker.observe(&view);
        }
        Ok(())
    }

    /// Learns from one event in the engine's form (what [`Inference::observe`] reads the JSON
    /// into).
    pub fn observe_view(&mut self, event: &ViewEvent) {
        self.tracker.observe(event);
    }

    /// Every opponent piece seen at the start of play, with the codes it can still be.
    pub fn possible(&self) -> Vec<Possible> {
        let rules = *self.tracker.rules();
        self.tracker
            .beliefs()
            .pieces()
            .iter()
            .map(|p| Possible {
                id: u32::from(p.id.0),
                codes: rules
                    .kinds()
                    .iter()
                    .filter(|(k, _, _)| p.possible.contains(*k))
                    .map(|(_, code, _)| *code)
                    .collect(),
                moved: p.moved,
                alive: p.alive,
            })
            .collect()
    }
}

/// One board of the step-through replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplayStep {
    /// The event's position in the log (of play starting, then of each move).
    pub seq: u64,
    /// The board after it, every piece with its code.
    pub pieces: Vec<VisiblePieceJson>,
    /// The move, for a step after a move.
    #[serde(rename = "move", skip_serializing_if = "Option::is_none")]
    pub mv: Option<MoveOut>,
    /// The fight of that move, with the defender's code filled in from the revealed board.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub combat: Option<CombatViewJson>,
}

fn pieces_json(rules: &Rules, pos: &Position) -> Vec<VisiblePieceJson> {
    pos.pieces()
        .map(|(node, p)| {
            piece_json(
                rules,
                &ViewPiece {
                    node,
                    side: p.side,
                    id: p.id,
                    kind: Some(p.kind),
                },
            )
        })
        .collect()
}

/// A piece as the page holds it: its code empty where the viewer may not know it.
fn piece_json(rules: &Rules, p: &ViewPiece) -> VisiblePieceJson {
    VisiblePieceJson {
        square: rules.topology().name(p.node).to_string(),
        side: side_enum(p.side),
        id: u32::from(p.id.0),
        piece: p
            .kind
            .map_or_else(String::new, |k| rules.code(k).to_string()),
    }
}

/// `replayBoards(rules, startingPieces, events)`: the board when play started (from
/// `EndReveal.startingPieces`) and after each `Moved` event, applying each fight's told result.
pub fn replay_boards(
    rules: &str,
    starting_pieces: &[VisiblePieceJson],
    events: &[GameEventJson],
) -> Result<Vec<ReplayStep>, EngineError> {
    let rules = parse_rules(rules)?;
    let mut pos = Position::empty(rules, Side::South);
    for (i, p) in starting_pieces.iter().enumerate() {
        let what = format!("startingPieces[{i}]");
        let piece = Piece {
            side: required_side(&p.side, &what)?,
            kind: kind_of(&rules, &p.piece)
                .ok_or_else(|| err(format!("{what}: {:?} is not a piece code", p.piece)))?,
            id: id(p.id, &what)?,
        };
        if !pos.put(square(&rules, &p.square, &what)?, piece) {
            return Err(err(format!("{what}: {} holds two pieces", p.square)));
        }
    }
    let start_seq = events
        .iter()
        .find(|e| e.play_started.is_some())
        .map_or(0, |e| e.seq.0);
    let mut steps = vec![ReplayStep {
        seq: start_seq,
        pieces: pieces_json(&rules, &pos),
        mv: None,
        combat: None,
    }];
    for event in events {
        let Some(m) = &event.moved else { continue };
        let mj =
            m.mv.as_ref()
                .ok_or_else(|| err("moved.move: is required"))?;
        let from = square(&rules, &mj.from, "moved.move.from")?;
        let to = square(&rules, &mj.to, "moved.move.to")?;
        let mover = pos
            .remove(from)
            .ok_or_else(|| err(format!("seq {}: no piece on {}", event.seq.0, mj.from)))?;
        let combat = match &m.combat {
            None => {
                pos.put(to, mover);
                None
            }
            Some(c) => {
                let defender = pos.piece_at(to);
                if !c.defender_survives {
                    pos.remove(to);
                }
                if c.attacker_survives {
                    pos.remove(to);
                    pos.put(to, mover);
                }
                Some(CombatViewJson {
                    defender_piece: defender
                        .map(|d| rules.code(d.kind).to_string())
                        .unwrap_or_else(|| c.defender_piece.clone()),
                    ..c.clone()
                })
            }
        };
        steps.push(ReplayStep {
            seq: event.seq.0,
            pieces: pieces_json(&rules, &pos),
            mv: Some(MoveOut {
                from: rules.topology().name(from).to_string(),
                to: rules.topology().name(to).to_string(),
            }),
            combat,
        });
    }
    Ok(steps)
}
