//! Deployments: checking one (naming every problem), drawing a random legal one, and the swap and
//! reshuffle helpers a player uses before confirming.

use crate::piece::{PieceKind, gunjin, junqi};
use crate::rng::GameRng;
use crate::rules::{Family, Rules};
use crate::side::Side;
use crate::topology::{Node, Nodes};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// One side's arrangement of its pieces: a kind per node, sorted by node.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Deployment {
    /// Whose pieces these are.
    pub side: Side,
    /// Node and kind of each piece, sorted by node.
    pub placements: Vec<(Node, PieceKind)>,
}

/// One thing wrong with a deployment. A refused deployment lists all of them.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DeploymentProblem {
    /// A node number that is not on the board.
    #[error("node {0} is not on the board")]
    OffBoard(u8),
    /// A kind the game does not have.
    #[error("{square}: unknown piece kind {kind}")]
    UnknownKind {
        /// Where it was put.
        square: String,
        /// The number that was given.
        kind: u8,
    },
    /// A piece outside the own half.
    #[error("{0} is not in {1}'s half")]
    NotInOwnHalf(String, Side),
    /// A piece in a camp (camps start empty).
    #[error("{0} is a camp; camps start empty")]
    InCamp(String),
    /// Two pieces on one node.
    #[error("{0} holds more than one piece")]
    Duplicate(String),
    /// A swap naming one square twice: it would change nothing.
    #[error("a swap needs two different squares, not {0} twice")]
    SameSquare(String),
    /// Too many or too few pieces of a kind.
    #[error("expected {expected} of piece {code}, found {found}")]
    WrongCount {
        /// The kind's code.
        code: &'static str,
        /// How many the rules ask for.
        expected: u8,
        /// How many were placed.
        found: usize,
    },
    /// Deployment squares left empty.
    #[error("squares left empty: {}", .0.join(" "))]
    EmptySquares(Vec<String>),
    /// The flag outside the HQs.
    #[error("the flag on {0} must stand in one of your two headquarters")]
    FlagNotInHq(String),
    /// A mine outside the two back rows.
    #[error("the mine on {0} must stand on your two back rows")]
    MineNotOnBackRows(String),
    /// A mine in an HQ.
    #[error("the mine on {0} stands in a headquarters, where mines are not allowed")]
    MineInHq(String),
    /// A bomb on the front row.
    #[error("the bomb on {0} stands on your front row, where bombs are not allowed")]
    BombOnFrontRow(String),
    /// Gunjin Shogi: the flag or a mine on an own gate square.
    #[error(
        "the {code} on {square} stands on a gate square, where the flag and mines are not allowed"
    )]
    OnGate {
        /// The gate square.
        square: String,
        /// The piece's code (`FLG` or `MIN`).
        code: &'static str,
    },
}

/// A refused deployment: every problem found, in one error.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid deployment: {}", .0.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("; "))]
pub struct DeploymentErrors(pub Vec<DeploymentProblem>);

impl Deployment {
    /// Builds a deployment from placements in any order (sorted here).
    pub fn new(side: Side, mut placements: Vec<(Node, PieceKind)>) -> Deployment {
        placements.sort_unstable();
        Deployment { side, placements }
    }

    /// Checks the deployment against the rules; `Err` lists every problem found.
    pub fn validate(&self, rules: &Rules) -> Result<(), DeploymentErrors> {
        let problems = problems(rules, self.side, &self.placements);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(DeploymentErrors(problems))
        }
    }

    /// The kind placed on `node`, if any.
    pub fn kind_at(&self, node: Node) -> Option<PieceKind> {
        self.placements
            .binary_search_by_key(&node, |(n, _)| *n)
            .ok()
            .map(|i| self.placements[i].1)
    }

    /// The deployment with the pieces on `a` and `b` exchanged (either may be empty, which moves
    /// the piece). Refused, with every problem, when the result would be illegal, when `a` and
    /// `b` are one square, or when either lies outside the side's own half (a swap there could
    /// only be a no-op or an illegal deployment, and a no-op would still be recorded).
    pub fn swapped(&self, rules: &Rules, a: Node, b: Node) -> Result<Deployment, DeploymentErrors> {
        use DeploymentProblem as P;
        let topo = rules.topology();
        let mut problems = Vec::new();
        if a == b && topo.contains(a) {
            problems.push(P::SameSquare(topo.name(a).to_string()));
        }
        for node in if a == b { vec![a] } else { vec![a, b] } {
            if !topo.contains(node) {
                problems.push(P::OffBoard(node.0));
            } else if topo.half[self.side.index()] & node.bit() == 0 {
                problems.push(P::NotInOwnHalf(topo.name(node).to_string(), self.side));
            }
        }
        if !problems.is_empty() {
            return Err(DeploymentErrors(problems));
        }
        let placements = self
            .placements
            .iter()
            .map(|&(n, k)| {
                if n == a {
                    (b, k)
                } else if n == b {
                    (a, k)
                } else {
                    (n, k)
                }
            })
            .collect();
        let swapped = Deployment::new(self.side, placements);
        swapped.validate(rules)?;
        Ok(swapped)
    }

    /// A fresh random legal deployment (the reshuffle button).
    pub fn random(rules: &Rules, side: Side, rng: &mut GameRng) -> Deployment {
        match rules.family {
            Family::Junqi => random_junqi(rules, side, rng),
            Family::GunjinShogi => random_gunjin(rules, side, rng),
        }
    }
}

fn problems(rules: &Rules, side: Side, placements: &[(Node, PieceKind)]) -> Vec<DeploymentProblem> {
    use DeploymentProblem as P;
    let topo = rules.topology();
    let mut problems = Vec::new();
    let mut seen = 0u64;
    let mut counts = vec![0usize; rules.kinds().len()];
    for &(node, kind) in placements {
        if !topo.contains(node) {
            problems.push(P::OffBoard(node.0));
            continue;
        }
        let name = topo.name(node).to_string();
        let bit = node.bit();
        if seen & bit != 0 {
            problems.push(P::Duplicate(name.clone()));
        }
        seen |= bit;
        if topo.half[side.index()] & bit == 0 {
            problems.push(P::NotInOwnHalf(name.clone(), side));
        } else if topo.camps & bit != 0 {
            problems.push(P::InCamp(name.clone()));
        }
        match rules.kinds().iter().position(|(k, _, _)| *k == kind) {
            Some(i) => counts[i] += 1,
            None => problems.push(P::UnknownKind {
                square: name.clone(),
                kind: kind.0,
            }),
        }
        match rules.family {
            Family::Junqi => {
                let hq = topo.hq[side.index()];
                if kind == junqi::FLAG && hq & bit == 0 {
                    problems.push(P::FlagNotInHq(name));
                } else if kind == junqi::MINE && topo.back_rows[side.index()] & bit == 0 {
                    problems.push(P::MineNotOnBackRows(name));
                } else if kind == junqi::MINE && hq & bit != 0 {
                    problems.push(P::MineInHq(name));
                } else if kind == junqi::BOMB
                    && !rules.bombs_on_front_row
                    && topo.front_row[side.index()] & bit != 0
                {
                    problems.push(P::BombOnFrontRow(name));
                }
            }
            Family::GunjinShogi => {
                if (kind == gunjin::FLAG || kind == gunjin::MINE)
                    && topo.gates[side.index()] & bit != 0
                {
                    problems.push(P::OnGate {
                        square: name,
                        code: rules.code(kind),
                    });
                }
            }
        }
    }
    for (i, &(_, code, expected)) in rules.kinds().iter().enumerate() {
        if counts[i] != expected as usize {
            problems.push(P::WrongCount {
                code,
                expected,
                found: counts[i],
            });
        }
    }
    let empty: Vec<String> = Nodes(topo.half[side.index()] & !topo.camps & !seen)
        .map(|n| topo.name(n).to_string())
        .collect();
    if !empty.is_empty() {
        problems.push(P::EmptySquares(empty));
    }
    problems
}

/// Uniform over all legal Junqi deployments: the flag picks an HQ, the mines pick among the
/// back-row squares that are not HQs, the bombs among the squares that are neither front row nor
/// taken, and the ranked pieces are a uniform permutation of what is left. The number of choices
/// at each step does not depend on the earlier choices, so every legal deployment is equally
/// likely.
fn random_junqi(rules: &Rules, side: Side, rng: &mut GameRng) -> Deployment {
    let topo = rules.topology();
    let s = side.index();
    let mut free = topo.half[s] & !topo.camps;
    let mut placements = Vec::with_capacity(25);
    let mut take = |from: u64, free: &mut u64, kind: PieceKind, rng: &mut GameRng| {
        let candidates: Vec<Node> = Nodes(from & *free).collect();
        let node = candidates[rng.below(candidates.len() as u32) as usize];
        *free &= !node.bit();
        placements.push((node, kind));
    };
    let count = |kind: PieceKind| {
        rules
            .kinds()
            .iter()
            .find(|(k, _, _)| *k == kind)
            .map_or(0, |(_, _, n)| *n)
    };
    for _ in 0..count(junqi::FLAG) {
        take(topo.hq[s], &mut free, junqi::FLAG, rng);
    }
    for _ in 0..count(junqi::MINE) {
        take(topo.back_rows[s] & !topo.hq[s], &mut free, junqi::MINE, rng);
    }
    let bomb_squares = if rules.bombs_on_front_row {
        topo.all
    } else {
        !topo.front_row[s]
    };
    for _ in 0..count(junqi::BOMB) {
        take(bomb_squares, &mut free, junqi::BOMB, rng);
    }
    let mut rest: Vec<PieceKind> = rules
        .kinds()
        .iter()
        .filter(|(k, _, _)| ![junqi::FLAG, junqi::MINE, junqi::BOMB].contains(k))
        .flat_map(|&(k, _, n)| std::iter::repeat_n(k, n as usize))
        .collect();
    rng.shuffle(&mut rest);
    placements.extend(Nodes(free).zip(rest));
    Deployment::new(side, placements)
}

/// Uniform over all legal Gunjin Shogi deployments: the flag and the mines pick among the own
/// squares that are not gate squares, and the other pieces are a uniform permutation of what is
/// left.
fn random_gunjin(rules: &Rules, side: Side, rng: &mut GameRng) -> Deployment {
    let topo = rules.topology();
    let s = side.index();
    let mut free = topo.half[s];
    let mut placements = Vec::with_capacity(rules.pieces_per_side());
    let count = |kind: PieceKind| {
        rules
            .kinds()
            .iter()
            .find(|(k, _, _)| *k == kind)
            .map_or(0, |(_, _, n)| *n)
    };
    for kind in [gunjin::FLAG, gunjin::MINE] {
        for _ in 0..count(kind) {
            let candidates: Vec<Node> = Nodes(free & !topo.gates[s]).collect();
            let node = candidates[rng.below(candidates.len() as u32) as usize];
            free &= !node.bit();
            placements.push((node, kind));
        }
    }
    let mut rest: Vec<PieceKind> = rules
        .kinds()
        .iter()
        .filter(|(k, _, _)| *k != gunjin::FLAG && *k != gunjin::MINE)
        .flat_map(|&(k, _, n)| std::iter::repeat_n(k, n as usize))
        .collect();
    rng.shuffle(&mut rest);
    placements.extend(Nodes(free).zip(rest));
    Deployment::new(side, placements)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_deployments_are_legal_for_both_sides_and_options() {
        let mut rng = GameRng::from_seed(7);
        for rules in [
            Rules::default(),
            Rules::parse("hidden-front+front-bombs").unwrap(),
            Rules::parse("gunjin-shogi").unwrap(),
            Rules::parse("gunjin-shogi+y-gates").unwrap(),
            Rules::parse("gunjin-shogi+i-gates").unwrap(),
            Rules::parse("gunjin-shogi+23-pieces").unwrap(),
        ] {
            for side in Side::BOTH {
                for _ in 0..200 {
                    let d = Deployment::random(&rules, side, &mut rng);
                    assert_eq!(d.validate(&rules), Ok(()), "{d:?}");
                    assert_eq!(d.placements.len(), rules.pieces_per_side());
                }
            }
        }
    }
}
