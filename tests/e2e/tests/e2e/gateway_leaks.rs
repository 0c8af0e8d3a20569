//! THE LEAK TEST: a player must never learn an opponent piece's kind before the game ends.
//!
//! Many complete random games through the gateway (the real binary, real Postgres, real gRPC),
//! each with two players and a spectator subscribed from the first event. Every message each
//! client receives is recorded, decoded and as the bytes that came off the wire: every
//! `Subscribe` item, every action's answer, every `GetGame` and `LegalMoves` answer, every error.
//! The players also probe: they move enemy pieces, attack camps, play out of turn, swap pieces
//! onto enemy squares, deploy onto the enemy half, reuse the other player's idempotency keys...
//! Then, knowing everything (each side's pieces as its owner saw them):
//!
//! - (a) no message before the end shows a kind of a piece the receiver does not own (for a
//!   spectator: of any piece), except a flag shown under the `flag-reveal` option right when a
//!   commander fell; every own piece shows its true kind; lists of pieces are in board order;
//!   no answer carries bytes outside the schema;
//! - (b) over all games, piece ids say nothing of kinds or deployment squares;
//! - (c) no error message names an enemy piece's kind next to its square;
//! - (d) `GameEnded` (and every view after the end) reveals every piece, truthfully: the final
//!   board, and the whole game (both confirmed deployments and every piece with its id and
//!   starting square, captured ones included).
//!
//! The three viewers' streams must also agree wherever they overlap (`gateway::check_streams`).
//! The checks are not blind: `the_id_checks_...` and `the_error_check_...` feed them leaky data,
//! and the semantic check (a) fails on the session's full-information `WatchGame` events in
//! place of a player's stream (tried while writing it).

use hidden_front_e2e::client::{Client, other, side_of};
use hidden_front_e2e::gateway::{self, RawPlayerClient, Received, check_streams, context};
use hidden_front_e2e::player::{Placements, own_legal_moves, to_map};
use hidden_front_e2e::{Server, TestDatabase, pb};
use hidden_front_rules::{Deployment, GameRng, Node, Nodes, Rules};
use pb::game_event::Event;
use pb::subscribe_response::Item;
use prost::Message;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;
use tokio::sync::Semaphore;
use tonic::{Code, Status};
use tonic_types::StatusExt;

/// Random players act far faster than people; the default rate limit would throttle them.
const SERVE_ARGS: &[&str] = &["--actions-per-second", "10000"];
/// Games with the default rules.
const DEFAULT_GAMES: usize = 18;
/// Games with `flag-reveal`, at least; more are played (up to [`MAX_FLAG_GAMES`]) until one of
/// them has shown a flag.
const FLAG_GAMES: usize = 6;
/// Games with `flag-reveal`, at most.
const MAX_FLAG_GAMES: usize = 16;
/// Games played at once.
const PARALLEL: usize = 6;
/// A random game ends well within this many plies.
const MAX_PLIES: usize = 3000;
/// Per mille of plies with a probe (a refused request that fishes for information).
const PROBE_PER_MILLE: u32 = 80;

const SOUTH: usize = 0;
const NORTH: usize = 1;
const SPECTATOR: usize = 2;

fn seat(side: pb::Side) -> usize {
    match side {
        pb::Side::South => SOUTH,
        pb::Side::North => NORTH,
        pb::Side::Unspecified => panic!("no seat for SIDE_UNSPECIFIED"),
    }
}

fn side_at(seat: usize) -> pb::Side {
    [pb::Side::South, pb::Side::North][seat]
}

/// How a game is brought to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Played until the rules end it; draw offers are declined or ignored.
    Natural,
    /// The side to move concedes at this ply.
    Resign(usize),
    /// A draw offer is accepted.
    AgreedDraw,
}

/// What stood where, as `square -> (side, code)`.
type Board = BTreeMap<String, (pb::Side, String)>;

/// One message a client received.
#[derive(Debug, Clone)]
enum Got {
    Item(pb::SubscribeResponse),
    Result(pb::ActionResult),
    View(pb::GameView),
    Legal(pb::LegalMovesResponse),
    /// A refusal, with the board as it truly was when it was sent, and the kinds the request
    /// itself put on squares (a deployment or a swap), which the message may repeat.
    Error {
        code: Code,
        message: String,
        board: Board,
        claimed: Placements,
    },
}

/// A received message with everything needed to judge it.
#[derive(Debug, Clone)]
struct Record {
    what: String,
    /// Whose view it is.
    viewer: pb::Viewer,
    got: Got,
    /// The bytes as received (an error's message as bytes).
    raw: Vec<u8>,
    /// Flags shown under `flag-reveal` by the time it was received.
    revealed: BTreeSet<u32>,
}

/// Responses that carry an `ActionResult`.
trait HasResult: Message + Default + Clone {
    fn result(self) -> Option<pb::ActionResult>;
}

macro_rules! has_result {
    ($($t:ty),*) => {
        $(impl HasResult for $t {
            fn result(self) -> Option<pb::ActionResult> {
                self.result
            }
        })*
    };
}

has_result!(
    pb::ReshuffleResponse,
    pb::SwapResponse,
    pb::DeployResponse,
    pb::ConfirmResponse,
    pb::PlayResponse,
    pb::ProposeDrawResponse,
    pb::RespondDrawResponse,
    pb::ConcedeResponse
);

/// Asserts that `got` is exactly what prost encodes for its decoded form: nothing outside the
/// schema came along (unknown fields would be dropped by decoding and escape every other check).
#[track_caller]
fn exact<T: Message>(got: &Received<T>, what: &str) {
    assert_eq!(
        got.message.encode_to_vec(),
        got.raw,
        "{what}: the answer has bytes outside the schema"
    );
}

/// Every square name of the board.
fn squares(rules: &Rules) -> Vec<String> {
    let topo = rules.topology();
    (0..topo.node_count)
        .map(|n| topo.name(Node(n)).to_string())
        .collect()
}

fn node(rules: &Rules, square: &str) -> u8 {
    rules
        .topology()
        .node(square)
        .unwrap_or_else(|| panic!("unknown square {square:?}"))
        .0
}

/// A subscriber in a task of its own: records every item until `GameEnded`, following
/// `Reconnect` hints.
async fn watch(
    mut client: RawPlayerClient,
    game_id: &str,
    spectate: bool,
    viewer: pb::Viewer,
) -> tokio::task::JoinHandle<Vec<Record>> {
    let request = |from_seq| pb::SubscribeRequest {
        game_id: game_id.to_string(),
        from_seq,
        spectate,
        // The status items are part of what a viewer receives: searched like everything else.
        with_status: true,
    };
    let mut stream = client
        .subscribe(request(1))
        .await
        .unwrap_or_else(|s| panic!("Subscribe of {} failed: {s:?}", client.player()));
    let game_id = game_id.to_string();
    tokio::spawn(async move {
        let what = format!("Subscribe item to {}", client.player());
        let mut records = Vec::new();
        loop {
            let item = stream
                .next()
                .await
                .unwrap_or_else(|s| panic!("{what} of {game_id}: {s:?}"))
                .unwrap_or_else(|| panic!("{what}: {game_id}'s stream ended before GameEnded"));
            exact(&item, &what);
            let end = matches!(&item.message.item, Some(Item::Event(e)) if gateway::is_end(e));
            if let Some(Item::Reconnect(hint)) = &item.message.item {
                stream = client
                    .subscribe(pb::SubscribeRequest {
                        game_id: game_id.clone(),
                        from_seq: hint.resume_from_seq,
                        spectate,
                        with_status: true,
                    })
                    .await
                    .unwrap_or_else(|s| panic!("{what}: resuming after {hint:?}: {s:?}"));
            }
            records.push(Record {
                what: what.clone(),
                viewer,
                got: Got::Item(item.message),
                raw: item.raw,
                revealed: BTreeSet::new(),
            });
            if end {
                return records;
            }
        }
    })
}

/// One game and its driver, who knows everything: each side's pieces as its owner sees them.
struct Game {
    n: usize,
    game_id: String,
    rules: Rules,
    ending: Ending,
    rng: GameRng,
    /// South, north, spectator.
    clients: [RawPlayerClient; 3],
    logs: [Vec<Record>; 3],
    /// Each side's draft during deployment.
    drafts: [Placements; 2],
    /// During play: `square -> (side, id)`.
    board: BTreeMap<String, (pb::Side, u32)>,
    /// Every piece's side and code, by id.
    kinds: BTreeMap<u32, (pb::Side, String)>,
    /// `(side, deployment square, code, id)` of every piece.
    deployed: Deployed,
    revealed: BTreeSet<u32>,
    reveals: usize,
    version: u64,
    to_move: pb::Side,
    keys: u64,
    /// The key of each seat's last applied action.
    last_key: [Option<String>; 2],
    /// Who has a draw offer pending.
    offer: Option<pb::Side>,
    plies: usize,
    ended: bool,
    probes: usize,
}

/// What a finished game left for the checks.
struct Report {
    n: usize,
    game_id: String,
    rules: Rules,
    logs: [Vec<Record>; 3],
    kinds: BTreeMap<u32, (pb::Side, String)>,
    deployed: Deployed,
    final_board: Board,
    version: u64,
    reveals: usize,
    plies: usize,
    probes: usize,
}

impl Game {
    fn key(&mut self) -> String {
        self.keys += 1;
        format!("leak{}-{}", self.n, self.keys)
    }

    fn below(&mut self, bound: usize) -> usize {
        self.rng.below(u32::try_from(bound).expect("a small bound")) as usize
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> Option<T> {
        (!items.is_empty()).then(|| items[self.below(items.len())].clone())
    }

    fn chance(&mut self, per_mille: u32) -> bool {
        self.rng.below(1000) < per_mille
    }

    /// The board as it truly is now: the drafts during deployment, the pieces during play.
    fn truth(&self) -> Board {
        if self.board.is_empty() {
            let mut board = Board::new();
            for (i, draft) in self.drafts.iter().enumerate() {
                for (square, code) in draft {
                    board.insert(square.clone(), (side_at(i), code.clone()));
                }
            }
            board
        } else {
            self.board
                .iter()
                .map(|(square, (side, id))| (square.clone(), (*side, self.kinds[id].1.clone())))
                .collect()
        }
    }

    fn viewer_of(who: usize, spectate: bool) -> pb::Viewer {
        match (who, spectate) {
            (_, true) | (SPECTATOR, _) => pb::Viewer::Spectator,
            (SOUTH, false) => pb::Viewer::South,
            _ => pb::Viewer::North,
        }
    }

    fn record(&mut self, who: usize, viewer: pb::Viewer, what: String, got: Got, raw: Vec<u8>) {
        let revealed = self.revealed.clone();
        self.logs[who].push(Record {
            what,
            viewer,
            got,
            raw,
            revealed,
        });
    }

    fn record_error(&mut self, who: usize, what: String, status: &Status, claimed: Placements) {
        // The details are judged with the message: every text they carry is appended to it,
        // and they may carry nothing else.
        let details = status.get_error_details();
        let info = details
            .error_info()
            .unwrap_or_else(|| panic!("{what}: a refusal without ErrorInfo: {status:?}"));
        // Each violation is judged as a clause of its own, as the message's are.
        let mut text = format!("{}; reason {}", status.message(), info.reason);
        for violation in details
            .bad_request()
            .map_or(&[][..], |b| &b.field_violations[..])
        {
            text.push_str(&format!("; {}", violation.description));
        }
        let mut known = tonic_types::ErrorDetails::with_error_info(
            info.reason.clone(),
            info.domain.clone(),
            info.metadata.clone(),
        );
        if let Some(bad) = details.bad_request() {
            known.set_bad_request(bad.field_violations.clone());
        }
        assert_eq!(
            Status::with_error_details(status.code(), status.message(), known).details(),
            status.details(),
            "{what}: the details carry more than ErrorInfo and BadRequest"
        );
        let board = self.truth();
        let raw = text.as_bytes().to_vec();
        self.record(
            who,
            Self::viewer_of(who, false),
            what,
            Got::Error {
                code: status.code(),
                message: text,
                board,
                claimed,
            },
            raw,
        );
    }

    /// An action by client `who`, recorded.
    async fn action<Req, Resp>(
        &mut self,
        who: usize,
        method: &'static str,
        request: Req,
        claimed: Placements,
    ) -> Result<pb::ActionResult, Status>
    where
        Req: Message + Send + Sync + 'static + std::fmt::Debug,
        Resp: HasResult,
    {
        let what = format!(
            "{method} by {} in game {}: {request:?}",
            self.clients[who].player(),
            self.n
        );
        match self.clients[who].unary::<Req, Resp>(method, request).await {
            Ok(got) => {
                exact(&got, &what);
                let result = got
                    .message
                    .clone()
                    .result()
                    .unwrap_or_else(|| panic!("{what}: an answer without a result"));
                let viewer = Self::viewer_of(who, false);
                self.record(who, viewer, what, Got::Result(result.clone()), got.raw);
                Ok(result)
            }
            Err(status) => {
                self.record_error(who, what, &status, claimed);
                Err(status)
            }
        }
    }

    /// `GetGame` by client `who`, recorded.
    async fn view(&mut self, who: usize, spectate: bool) -> Result<pb::GameView, Status> {
        let what = format!(
            "GetGame (spectate {spectate}) by {} in game {}",
            self.clients[who].player(),
            self.n
        );
        let request = pb::PlayerServiceGetGameRequest {
            game_id: self.game_id.clone(),
            spectate,
        };
        match self.clients[who]
            .unary::<_, pb::PlayerServiceGetGameResponse>("GetGame", request)
            .await
        {
            Ok(got) => {
                exact(&got, &what);
                let view = got.message.game.clone().expect("GetGame without a game");
                let viewer = Self::viewer_of(who, spectate);
                self.record(who, viewer, what, Got::View(view.clone()), got.raw);
                Ok(view)
            }
            Err(status) => {
                self.record_error(who, what, &status, Placements::new());
                Err(status)
            }
        }
    }

    /// `LegalMoves` by client `who`, recorded.
    async fn legal(&mut self, who: usize) -> Result<pb::LegalMovesResponse, Status> {
        let what = format!(
            "LegalMoves by {} in game {}",
            self.clients[who].player(),
            self.n
        );
        let request = pb::LegalMovesRequest {
            game_id: self.game_id.clone(),
            min_version: None,
        };
        match self.clients[who]
            .unary::<_, pb::LegalMovesResponse>("LegalMoves", request)
            .await
        {
            Ok(got) => {
                exact(&got, &what);
                let viewer = Self::viewer_of(who, false);
                self.record(who, viewer, what, Got::Legal(got.message.clone()), got.raw);
                Ok(got.message)
            }
            Err(status) => {
                self.record_error(who, what, &status, Placements::new());
                Err(status)
            }
        }
    }

    async fn play(
        &mut self,
        who: usize,
        key: &str,
        expected: Option<u64>,
        from: &str,
        to: &str,
    ) -> Result<pb::ActionResult, Status> {
        let request = pb::PlayRequest {
            context: Some(context(&self.game_id, key, expected)),
            r#move: Some(gateway::mv(from, to)),
        };
        self.action::<_, pb::PlayResponse>(who, "Play", request, Placements::new())
            .await
    }

    async fn swap(
        &mut self,
        who: usize,
        key: &str,
        a: &str,
        b: &str,
        claimed: Placements,
    ) -> Result<pb::ActionResult, Status> {
        let request = pb::SwapRequest {
            context: Some(context(&self.game_id, key, None)),
            square_a: a.to_string(),
            square_b: b.to_string(),
        };
        self.action::<_, pb::SwapResponse>(who, "Swap", request, claimed)
            .await
    }

    async fn deploy_request(
        &mut self,
        who: usize,
        placements: Placements,
    ) -> Result<pb::ActionResult, Status> {
        let key = self.key();
        let request = pb::DeployRequest {
            context: Some(context(&self.game_id, &key, None)),
            placements: placements
                .iter()
                .map(|(square, piece)| pb::Placement {
                    square: square.clone(),
                    piece: piece.clone(),
                })
                .collect(),
        };
        self.action::<_, pb::DeployResponse>(who, "Deploy", request, placements)
            .await
    }

    async fn respond_draw(
        &mut self,
        who: usize,
        key: &str,
        accept: bool,
    ) -> Result<pb::ActionResult, Status> {
        let request = pb::RespondDrawRequest {
            context: Some(context(&self.game_id, key, None)),
            accept,
        };
        self.action::<_, pb::RespondDrawResponse>(who, "RespondDraw", request, Placements::new())
            .await
    }

    /// Takes in the answer to an applied action of `who`: version, drafts, board, offers, end.
    fn absorb(&mut self, who: usize, key: String, result: &pb::ActionResult) {
        assert!(
            !result.replayed,
            "a fresh key was answered as replayed: {result:?}"
        );
        assert_eq!(
            result.version,
            self.version + result.events.len() as u64,
            "game {}: events missing from an answer: {result:?}",
            self.n
        );
        self.version = result.version;
        if who != SPECTATOR {
            self.last_key[who] = Some(key);
        }
        for event in &result.events {
            match event.event.as_ref().expect("an event") {
                Event::DeploymentDrafted(d) => {
                    let deployment = d.deployment.as_ref().expect("a draft");
                    self.drafts[seat(side_of(deployment.side))] = to_map(&deployment.placements);
                }
                Event::Moved(moved) => self.apply_move(moved),
                Event::DrawOffered(d) => self.offer = Some(side_of(d.side)),
                Event::DrawDeclined(_) | Event::DrawLapsed(_) => self.offer = None,
                Event::Ended(_) => self.ended = true,
                _ => {}
            }
        }
    }

    fn apply_move(&mut self, moved: &pb::Moved) {
        let mv = moved.r#move.as_ref().expect("a move");
        let (side, id) = self
            .board
            .remove(&mv.from)
            .unwrap_or_else(|| panic!("game {}: a move from the empty {}", self.n, mv.from));
        assert_eq!(
            (side, id),
            (side_of(moved.side), moved.piece_id),
            "Moved names another piece"
        );
        let mut lands = true;
        if let Some(combat) = &moved.combat {
            let defender = self.board.get(&mv.to).copied();
            assert_eq!(
                defender.map(|d| d.1),
                Some(combat.defender_id),
                "game {}: combat with another defender than on {}",
                self.n,
                mv.to
            );
            if !combat.defender_survives {
                self.board.remove(&mv.to);
            }
            lands = combat.attacker_survives;
        } else {
            assert!(
                !self.board.contains_key(&mv.to),
                "a fight told as a plain move"
            );
        }
        if lands {
            self.board.insert(mv.to.clone(), (side, id));
        }
        for reveal in &moved.flag_reveals {
            self.reveals += 1;
            for flag in &reveal.flags {
                self.revealed.insert(flag.id);
            }
        }
    }

    /// The deployment phase: looks, probes, drafts, key reuse, confirms.
    async fn deployment(&mut self) {
        for who in [SOUTH, NORTH] {
            let view = self.view(who, false).await.expect("GetGame");
            assert_eq!(view.phase, pb::Phase::Deployment as i32);
            self.version = view.version;
            let draft = view.own_deployment.expect("an own draft");
            self.drafts[who] = to_map(&draft.placements);
        }
        self.view(SPECTATOR, true).await.expect("GetGame");
        let order = if self.chance(500) {
            [SOUTH, NORTH]
        } else {
            [NORTH, SOUTH]
        };
        for who in order {
            self.deployment_probes(who).await;
            self.draft(who).await;
        }
        // Each player sends the other's last key: a retry must never answer with another
        // player's answer.
        for who in order {
            if let Some(key) = self.last_key[1 - who].clone() {
                let _ = self.respond_draw(who, &key, false).await;
            }
        }
        for who in order {
            if self.chance(500) {
                let spectate = self.chance(300);
                self.view(who, spectate).await.expect("GetGame");
            }
            let key = self.key();
            let request = pb::ConfirmRequest {
                context: Some(context(&self.game_id, &key, None)),
            };
            let result = self
                .action::<_, pb::ConfirmResponse>(who, "Confirm", request, Placements::new())
                .await
                .expect("Confirm");
            self.absorb(who, key, &result);
        }
        // Play started: each owner tells its pieces.
        for who in [SOUTH, NORTH] {
            let view = self.view(who, false).await.expect("GetGame");
            assert_eq!(
                view.phase,
                pb::Phase::Play as i32,
                "game {}: {view:?}",
                self.n
            );
            self.to_move = side_of(view.to_move);
            let side = side_at(who);
            let mut own = Placements::new();
            for piece in &view.pieces {
                if side_of(piece.side) == side {
                    own.insert(piece.square.clone(), piece.piece.clone());
                    self.kinds.insert(piece.id, (side, piece.piece.clone()));
                    self.deployed
                        .push((side, piece.square.clone(), piece.piece.clone(), piece.id));
                }
                let (s, id) = (side_of(piece.side), piece.id);
                if let Some(before) = self.board.insert(piece.square.clone(), (s, id)) {
                    assert_eq!(before, (s, id), "the owners disagree on {}", piece.square);
                }
            }
            assert_eq!(
                own, self.drafts[who],
                "the board is not the confirmed deployment"
            );
        }
        assert_eq!(
            self.kinds.len(),
            2 * self.rules.pieces_per_side(),
            "game {}: piece ids are not unique",
            self.n
        );
    }

    /// Requests during deployment that fish for the other side's draft.
    async fn deployment_probes(&mut self, who: usize) {
        let them = self.drafts[1 - who].clone();
        let mine = self.drafts[who].clone();
        // Swap one of mine with an enemy square (the kinds differ, so an answer naming the enemy
        // kind there is not just repeating mine).
        let own: Vec<(String, String)> = mine.into_iter().collect();
        let (a, code) = self.pick(&own).expect("pieces");
        let targets: Vec<String> = them
            .iter()
            .filter(|(_, c)| **c != code)
            .map(|(s, _)| s.clone())
            .collect();
        let b = self.pick(&targets).expect("an enemy square");
        let key = self.key();
        let claimed = Placements::from([(b.clone(), code)]);
        let swapped = self.swap(who, &key, &a, &b, claimed).await;
        assert!(
            swapped.is_err(),
            "a swap onto the enemy half was accepted: {swapped:?}"
        );
        // Swap two enemy squares.
        let enemy: Vec<String> = them.keys().cloned().collect();
        let (x, y) = (self.pick(&enemy).expect("x"), self.pick(&enemy).expect("y"));
        let key = self.key();
        if let Ok(result) = self.swap(who, &key, &x, &y, Placements::new()).await {
            // Not refused: it may only have redrafted the player's own deployment.
            self.absorb(who, key, &result);
        }
        // A whole deployment on the enemy half, no square holding the kind it truly holds.
        let deranged = derange(&them).expect("a full deployment can be deranged");
        let refused = self.deploy_request(who, deranged).await;
        assert!(
            refused.is_err(),
            "a deployment on the enemy half was accepted"
        );
        let _ = self.legal(who).await;
        // The spectator tries to act.
        let key = self.key();
        let request = pb::ConfirmRequest {
            context: Some(context(&self.game_id, &key, None)),
        };
        let refused = self
            .action::<_, pb::ConfirmResponse>(SPECTATOR, "Confirm", request, Placements::new())
            .await;
        assert_eq!(
            refused.map(|_| ()).unwrap_err().code(),
            Code::PermissionDenied
        );
    }

    /// Real drafting: reshuffle, a deployment of its own, a swap of two ranked pieces.
    async fn draft(&mut self, who: usize) {
        if self.chance(700) {
            let key = self.key();
            let request = pb::ReshuffleRequest {
                context: Some(context(&self.game_id, &key, Some(self.version))),
            };
            let result = self
                .action::<_, pb::ReshuffleResponse>(who, "Reshuffle", request, Placements::new())
                .await
                .expect("Reshuffle");
            self.absorb(who, key, &result);
        }
        if self.chance(400) {
            let rules = self.rules;
            let deployment = Deployment::random(
                &rules,
                hidden_front_e2e::player::engine_side(side_at(who)),
                &mut self.rng,
            );
            let topo = rules.topology();
            let placements: Placements = deployment
                .placements
                .iter()
                .map(|&(n, k)| (topo.name(n).to_string(), rules.code(k).to_string()))
                .collect();
            let key = self.key();
            let request = pb::DeployRequest {
                context: Some(context(&self.game_id, &key, None)),
                placements: placements
                    .iter()
                    .map(|(square, piece)| pb::Placement {
                        square: square.clone(),
                        piece: piece.clone(),
                    })
                    .collect(),
            };
            let result = self
                .action::<_, pb::DeployResponse>(who, "Deploy", request, placements)
                .await
                .expect("Deploy");
            self.absorb(who, key, &result);
        }
        let ranked: Vec<(String, String)> = self.drafts[who]
            .iter()
            .filter(|(_, c)| c.as_bytes()[0].is_ascii_digit())
            .map(|(s, c)| (s.clone(), c.clone()))
            .collect();
        let (a, b) = loop {
            let a = self.pick(&ranked).expect("ranked pieces");
            let b = self.pick(&ranked).expect("ranked pieces");
            if a.1 != b.1 {
                break (a.0, b.0);
            }
        };
        let key = self.key();
        let result = self
            .swap(who, &key, &a, &b, Placements::new())
            .await
            .expect("a swap of two own ranked pieces");
        self.absorb(who, key, &result);
    }

    /// A refused request during play that fishes for information. Panics if it is not refused
    /// (the driver's picture of the game would go wrong), except for the reuse of another
    /// player's key, whose answer is only judged by what it shows.
    async fn play_probe(&mut self) {
        self.probes += 1;
        let me = seat(self.to_move);
        let them = 1 - me;
        let truth = self.truth();
        let all = squares(&self.rules);
        let mine: Vec<String> = truth
            .iter()
            .filter(|(_, (s, _))| seat(*s) == me)
            .map(|(sq, _)| sq.clone())
            .collect();
        let theirs: Vec<String> = truth
            .iter()
            .filter(|(_, (s, _))| seat(*s) == them)
            .map(|(sq, _)| sq.clone())
            .collect();
        // In Gunjin Shogi a side can be left with no piece on the board for one ply: planes
        // and engineers clear mines, a flag on the back rank falls to anything, and the last
        // mover can die attacking; the game ends only when that side's turn starts. The probes
        // need a piece on each side.
        if mine.is_empty() || theirs.is_empty() {
            return;
        }
        let empty: Vec<String> = all
            .iter()
            .filter(|s| !truth.contains_key(*s))
            .cloned()
            .collect();
        let camps: Vec<String> = Nodes(self.rules.topology().camps)
            .map(|n| self.rules.topology().name(n).to_string())
            .filter(|s| theirs.contains(s))
            .collect();
        let fixed: Vec<String> = mine
            .iter()
            .filter(|s| matches!(truth[*s].1.as_str(), "M" | "F" | "MIN" | "FLG"))
            .cloned()
            .collect();
        let anywhere = self.pick(&all).expect("squares");
        let key = self.key();
        let refused = match self.below(12) {
            0 => {
                let from = self.pick(&theirs).expect("enemy pieces");
                self.play(me, &key, None, &from, &anywhere).await
            }
            1 if !fixed.is_empty() => {
                let from = self.pick(&fixed).expect("a mine or flag");
                self.play(me, &key, None, &from, &anywhere).await
            }
            2 if !camps.is_empty() => {
                let from = self.pick(&mine).expect("own pieces");
                let to = self.pick(&camps).expect("a camp");
                self.play(me, &key, None, &from, &to).await
            }
            3 => {
                let legal = self.legal(me).await.expect("LegalMoves");
                let from = self.pick(&mine).expect("own pieces");
                let to = self.pick(&theirs).expect("enemy pieces");
                if legal.moves.iter().any(|m| m.from == from && m.to == to) {
                    return;
                }
                self.play(me, &key, None, &from, &to).await
            }
            4 => {
                // The side not to move moves one of its own pieces.
                let from = self.pick(&theirs).expect("pieces");
                self.play(them, &key, None, &from, &anywhere).await
            }
            5 => {
                let legal = self.legal(me).await.expect("LegalMoves");
                let m = self.pick(&legal.moves).expect("a legal move");
                let refused = self
                    .play(me, &key, Some(self.version - 1), &m.from, &m.to)
                    .await;
                assert_eq!(
                    refused.as_ref().map(|_| ()).map_err(Status::code),
                    Err(Code::Aborted),
                    "a stale expected version"
                );
                refused
            }
            6 => {
                let a = self.pick(&mine).expect("own pieces");
                let b = self.pick(&theirs).expect("enemy pieces");
                let claimed = Placements::from([(b.clone(), truth[&a].1.clone())]);
                if truth[&b].1 == truth[&a].1 {
                    return;
                }
                self.swap(me, &key, &a, &b, claimed).await
            }
            7 => {
                let from = self.pick(&empty).expect("empty squares");
                self.play(me, &key, None, &from, &anywhere).await
            }
            8 if self.offer != Some(side_at(them)) => self.respond_draw(me, &key, true).await,
            9 => {
                let from = self.pick(&mine).expect("own pieces");
                let refused = self.play(SPECTATOR, &key, None, &from, &anywhere).await;
                let _ = self.legal(SPECTATOR).await;
                refused
            }
            10 => {
                let Some(placements) = derange(
                    &truth
                        .iter()
                        .filter(|(_, (s, _))| seat(*s) == them)
                        .map(|(sq, (_, code))| (sq.clone(), code.clone()))
                        .collect(),
                ) else {
                    return;
                };
                self.deploy_request(me, placements).await
            }
            _ => {
                // Each player sends the other's last key, with a request that is refused
                // whenever it is judged for the sender (no offer from the other side is
                // pending). Whatever comes back is judged by what it shows.
                for (sender, owner) in [(them, me), (me, them)] {
                    let Some(key) = self.last_key[owner].clone() else {
                        continue;
                    };
                    if self.offer == Some(side_at(owner)) {
                        continue;
                    }
                    let _ = self.respond_draw(sender, &key, false).await;
                }
                return;
            }
        };
        if let Ok(result) = refused {
            panic!("game {}: a probe was not refused: {result:?}", self.n);
        }
    }

    /// A move for the side to move: uniform among the legal ones, except that under
    /// `flag-reveal` the commander likes to attack (so that commanders fall and flags show).
    fn choose(&mut self, moves: &[pb::Move]) -> pb::Move {
        if self.rules.flag_revealed_when_commander_dies {
            let me = self.to_move;
            let commander: Vec<&String> = self
                .board
                .iter()
                .filter(|(_, (s, id))| *s == me && self.kinds[id].1 == "9")
                .map(|(sq, _)| sq)
                .collect();
            let attacks: Vec<pb::Move> = moves
                .iter()
                .filter(|m| {
                    commander.contains(&&m.from)
                        && self.board.get(&m.to).is_some_and(|(s, _)| *s != me)
                })
                .cloned()
                .collect();
            if !attacks.is_empty() && self.chance(800) {
                return self.pick(&attacks).expect("attacks");
            }
        }
        self.pick(moves).expect("a legal move")
    }

    /// The play phase, to the end.
    async fn play_phase(&mut self) {
        while !self.ended {
            assert!(
                self.plies < MAX_PLIES,
                "game {}: no end after {MAX_PLIES} plies",
                self.n
            );
            let mover = self.to_move;
            let me = seat(mover);
            if self.chance(PROBE_PER_MILLE) {
                self.play_probe().await;
            }
            if self.chance(120) {
                let who = self.below(3);
                let spectate = who == SPECTATOR || self.chance(300);
                self.view(who, spectate).await.expect("GetGame");
            }
            if let Ending::Resign(at) = self.ending
                && self.plies >= at
            {
                let key = self.key();
                let request = pb::ConcedeRequest {
                    context: Some(context(&self.game_id, &key, None)),
                };
                let result = self
                    .action::<_, pb::ConcedeResponse>(me, "Concede", request, Placements::new())
                    .await
                    .expect("Concede");
                self.absorb(me, key, &result);
                assert!(self.ended, "a concession did not end the game");
                return;
            }
            if self.offer == Some(other(mover)) {
                let accept = self.ending == Ending::AgreedDraw;
                if accept || self.chance(500) {
                    let key = self.key();
                    let result = self
                        .respond_draw(me, &key, accept)
                        .await
                        .expect("RespondDraw");
                    self.absorb(me, key, &result);
                    if self.ended {
                        return;
                    }
                }
            }
            let offers = match self.ending {
                Ending::AgreedDraw if self.plies > 20 => 50,
                _ => 10,
            };
            if self.offer.is_none() && self.chance(offers) {
                let key = self.key();
                let request = pb::ProposeDrawRequest {
                    context: Some(context(&self.game_id, &key, None)),
                };
                // Refused while the last offer is too recent.
                if let Ok(result) = self
                    .action::<_, pb::ProposeDrawResponse>(
                        me,
                        "ProposeDraw",
                        request,
                        Placements::new(),
                    )
                    .await
                {
                    self.absorb(me, key, &result);
                }
            }
            let legal = self.legal(me).await.expect("LegalMoves");
            assert_eq!(legal.version, self.version, "LegalMoves at another version");
            if self.chance(100) {
                let view = self.view(me, false).await.expect("GetGame");
                let listed: BTreeSet<(String, String)> = legal
                    .moves
                    .iter()
                    .map(|m| (m.from.clone(), m.to.clone()))
                    .collect();
                let computed: BTreeSet<(String, String)> = own_legal_moves(&view)
                    .into_iter()
                    .map(|m| (m.from, m.to))
                    .collect();
                assert_eq!(listed, computed, "LegalMoves vs the player's own view");
                let waiting = self.legal(1 - me).await.expect("LegalMoves");
                assert!(waiting.moves.is_empty(), "moves listed out of turn");
            }
            let chosen = self.choose(&legal.moves);
            let key = self.key();
            let result = self
                .play(me, &key, Some(legal.version), &chosen.from, &chosen.to)
                .await
                .unwrap_or_else(|s| panic!("game {}: a legal move was refused: {s:?}", self.n));
            self.absorb(me, key, &result);
            self.plies += 1;
            self.to_move = other(mover);
        }
    }

    /// After the end: every view, from every side, and a last look at the moves.
    async fn after_the_end(&mut self) {
        for (who, spectate) in [
            (SOUTH, false),
            (NORTH, false),
            (SPECTATOR, true),
            (SOUTH, true),
            (NORTH, true),
        ] {
            let view = self.view(who, spectate).await.expect("GetGame");
            assert_eq!(view.phase, pb::Phase::Ended as i32);
            assert_eq!(view.version, self.version);
        }
        for who in [SOUTH, NORTH] {
            let legal = self.legal(who).await.expect("LegalMoves");
            assert!(legal.moves.is_empty(), "moves after the end");
        }
    }
}

/// `placements` with the kinds moved around so that no square keeps its kind (kinds sorted, then
/// shifted by the first amount that moves every one); `None` when no shift does (too few
/// pieces, or mostly of one kind).
fn derange(placements: &Placements) -> Option<Placements> {
    let mut by_kind: Vec<(&String, &String)> = placements.iter().collect();
    by_kind.sort_by(|a, b| (a.1, a.0).cmp(&(b.1, b.0)));
    let n = by_kind.len();
    (1..n).find_map(|shift| {
        let out: Placements = (0..n)
            .map(|i| (by_kind[i].0.clone(), by_kind[(i + shift) % n].1.clone()))
            .collect();
        out.iter()
            .all(|(square, code)| placements[square] != *code)
            .then_some(out)
    })
}

/// Plays one whole game and returns what it recorded.
async fn run_game(
    addr: std::net::SocketAddr,
    mut session: Client,
    n: usize,
    rules_name: &str,
    ending: Ending,
) -> Report {
    let players = [
        format!("leak{n}-south"),
        format!("leak{n}-north"),
        format!("leak{n}-watcher"),
    ];
    let created = session
        .create_game(pb::CreateGameRequest {
            south_player: players[0].clone(),
            north_player: players[1].clone(),
            rules: rules_name.to_string(),
            time_control: hidden_front_e2e::client::untimed(),
            idempotency_key: format!("leak-{n}"),
        })
        .await
        .unwrap_or_else(|s| panic!("CreateGame failed: {s:?}"))
        .into_inner();
    let game_id = created.game_id.clone();
    let rules = Rules::parse(rules_name).expect("known rules");
    let channel = gateway::channel(addr).await;
    let client = |i: usize| RawPlayerClient::new(channel.clone(), &players[i]);
    let watchers = [
        watch(client(SOUTH), &game_id, false, pb::Viewer::South).await,
        watch(client(NORTH), &game_id, false, pb::Viewer::North).await,
        watch(client(SPECTATOR), &game_id, true, pb::Viewer::Spectator).await,
    ];
    let mut game = Game {
        n,
        game_id: game_id.clone(),
        rules,
        ending,
        rng: GameRng::from_seed(0x1ea6_0000 + n as u64),
        clients: [client(SOUTH), client(NORTH), client(SPECTATOR)],
        logs: Default::default(),
        drafts: Default::default(),
        board: BTreeMap::new(),
        kinds: BTreeMap::new(),
        deployed: Vec::new(),
        revealed: BTreeSet::new(),
        reveals: 0,
        version: created.version,
        to_move: pb::Side::Unspecified,
        keys: 0,
        last_key: [None, None],
        offer: None,
        plies: 0,
        ended: false,
        probes: 0,
    };
    game.deployment().await;
    game.play_phase().await;
    game.after_the_end().await;
    let mut streams = Vec::new();
    for (i, watcher) in watchers.into_iter().enumerate() {
        let records = watcher.await.expect("a subscriber");
        streams.push(records.clone());
        game.logs[i].extend(records);
    }
    let final_board = game.truth();
    Report {
        n,
        game_id,
        rules,
        logs: game.logs,
        kinds: game.kinds,
        deployed: game.deployed,
        final_board,
        version: game.version,
        reveals: game.reveals,
        plies: game.plies,
        probes: game.probes,
    }
}

/// The kind words a message might use for a code.
fn words(code: &str) -> &'static [&'static str] {
    match code {
        "F" => &["flag", "军旗", "軍旗", "군기"],
        "M" => &["mine", "地雷", "지뢰"],
        "B" => &["bomb", "炸弹", "爆弾", "폭탄"],
        "9" => &["commander", "marshal", "司令"],
        "1" => &["engineer", "sapper", "工兵", "공병"],
        // Gunjin Shogi.
        "FLG" => &["flag", "軍旗", "군기"],
        "MIN" => &["mine", "地雷", "지뢰"],
        "GEN" => &["general", "大将", "대장"],
        "SPY" => &["spy", "スパイ", "스파이"],
        "PLA" => &["plane", "飛行機", "비행기"],
        "TNK" => &["tank", "タンク", "탱크"],
        "CAV" => &["cavalry", "騎兵", "기병"],
        "ENG" => &["engineer", "sapper", "工兵", "공병"],
        _ => &[],
    }
}

/// Gunjin Shogi's codes, for the kind words an error about an unclaimed square must not use.
const GUNJIN_CODES: [&str; 16] = [
    "GEN", "LTG", "MJG", "COL", "LTC", "MAJ", "CPT", "1LT", "2LT", "PLA", "TNK", "CAV", "ENG",
    "SPY", "MIN", "FLG",
];

const ALL_CODES: [&str; 12] = ["9", "8", "7", "6", "5", "4", "3", "2", "1", "B", "M", "F"];

/// Everything one game's records must satisfy (a, c, d), and the streams' agreement.
fn check_game(report: &Report) {
    let kind = |id: u32| -> &(pb::Side, String) {
        report
            .kinds
            .get(&id)
            .unwrap_or_else(|| panic!("game {}: no piece has id {id}", report.n))
    };
    let rules = &report.rules;
    for log in &report.logs {
        for record in log {
            let own = match record.viewer {
                pb::Viewer::South => Some(pb::Side::South),
                pb::Viewer::North => Some(pb::Side::North),
                _ => None,
            };
            let fail = |why: String| -> ! {
                panic!(
                    "LEAK in game {} ({}), {:?} received {}: {why}\n{:?}",
                    report.n, report.game_id, record.viewer, record.what, record.got
                )
            };
            // (a) One piece as the receiver saw it.
            let piece = |p: &pb::VisiblePiece, revealed: &BTreeSet<u32>| {
                let (side, code) = kind(p.id);
                if side_of(p.side) != *side {
                    fail(format!("piece {} is shown on the wrong side: {p:?}", p.id));
                }
                if own == Some(*side) {
                    if p.piece != *code {
                        fail(format!(
                            "own piece shown as {:?}, is {code:?}: {p:?}",
                            p.piece
                        ));
                    }
                } else if !(p.piece.is_empty()
                    || revealed.contains(&p.id) && p.piece == "F" && code == "F")
                {
                    fail(format!("the kind of a piece not its own: {p:?}"));
                }
            };
            let in_board_order = |pieces: &[pb::VisiblePiece]| {
                let keys: Vec<(i32, u8)> = pieces
                    .iter()
                    .map(|p| (p.side, node(rules, &p.square)))
                    .collect();
                let by_node = keys.windows(2).all(|w| w[0].1 < w[1].1);
                let by_side = keys.windows(2).all(|w| w[0] < w[1]);
                if !by_node && !by_side {
                    fail("pieces listed in an order that is not the board's".into());
                }
            };
            let ended = |e: &pb::GameEnded| {
                let shown: Board = e
                    .pieces
                    .iter()
                    .map(|p| (p.square.clone(), (side_of(p.side), p.piece.clone())))
                    .collect();
                if shown != report.final_board || shown.len() != e.pieces.len() {
                    fail("GameEnded does not reveal the true final board".into());
                }
                for p in &e.pieces {
                    if *kind(p.id) != (side_of(p.side), p.piece.clone()) {
                        fail(format!("GameEnded shows {p:?} wrongly"));
                    }
                }
                in_board_order(&e.pieces);
                // The whole game: every piece where it started, and both deployments.
                let Some(reveal) = &e.reveal else {
                    fail("the end does not reveal the whole game".into())
                };
                let mut started: Deployed = reveal
                    .starting_pieces
                    .iter()
                    .map(|p| (side_of(p.side), p.square.clone(), p.piece.clone(), p.id))
                    .collect();
                let mut deployed = report.deployed.clone();
                started.sort();
                deployed.sort();
                if started != deployed {
                    fail("the end's starting pieces are not the pieces deployed".into());
                }
                in_board_order(&reveal.starting_pieces);
                let sides: Vec<pb::Side> =
                    reveal.deployments.iter().map(|d| side_of(d.side)).collect();
                if sides != [pb::Side::South, pb::Side::North] {
                    fail(format!("the end reveals the deployments of {sides:?}"));
                }
                for d in &reveal.deployments {
                    let side = side_of(d.side);
                    let shown: BTreeSet<(String, String)> = d
                        .placements
                        .iter()
                        .map(|p| (p.square.clone(), p.piece.clone()))
                        .collect();
                    let truth: BTreeSet<(String, String)> = deployed
                        .iter()
                        .filter(|(s, ..)| *s == side)
                        .map(|(_, square, code, _)| (square.clone(), code.clone()))
                        .collect();
                    if shown != truth || shown.len() != d.placements.len() {
                        fail(format!("the end reveals {side:?}'s deployment wrongly"));
                    }
                }
            };
            let event = |e: &pb::GameEvent| match e.event.as_ref().expect("an event") {
                Event::DeploymentDrafted(d) => {
                    let deployment = d.deployment.as_ref().expect("a draft");
                    if Some(side_of(deployment.side)) != own {
                        fail("a draft of the other side".into());
                    }
                    if deployment.placements.iter().any(|p| p.piece.is_empty()) {
                        fail("an own draft without kinds".into());
                    }
                }
                Event::DeploymentConfirmed(c) => {
                    let mine = Some(side_of(c.side)) == own;
                    match (&c.deployment, mine) {
                        (Some(_), false) => fail("the other side's confirmed deployment".into()),
                        (None, true) => fail("its own confirmed deployment is missing".into()),
                        _ => {}
                    }
                }
                Event::PlayStarted(p) => {
                    p.pieces.iter().for_each(|x| piece(x, &BTreeSet::new()));
                    in_board_order(&p.pieces);
                }
                Event::Moved(m) => {
                    let mover = side_of(m.side);
                    let (_, code) = kind(m.piece_id);
                    match (own == Some(mover), m.piece.as_str()) {
                        (true, shown) if shown != code => fail("own mover's kind wrong".into()),
                        (false, shown) if !shown.is_empty() => {
                            fail("the enemy mover's kind".into())
                        }
                        _ => {}
                    }
                    if let Some(c) = &m.combat {
                        let (defender_side, defender) = kind(c.defender_id);
                        match (own == Some(*defender_side), c.defender_piece.as_str()) {
                            (true, shown) if shown != defender => fail("own defender wrong".into()),
                            (false, shown) if !shown.is_empty() => {
                                fail("the enemy defender's kind".into())
                            }
                            _ => {}
                        }
                    }
                    if !m.flag_reveals.is_empty() && !rules.flag_revealed_when_commander_dies {
                        fail("a flag revealed without flag-reveal".into());
                    }
                    for reveal in &m.flag_reveals {
                        let side = side_of(reveal.side);
                        let fell = |id: u32, survived: bool| {
                            *kind(id) == (side, "9".to_string()) && !survived
                        };
                        let justified = m.combat.as_ref().is_some_and(|c| {
                            fell(m.piece_id, c.attacker_survives)
                                || fell(c.defender_id, c.defender_survives)
                        });
                        if !justified || reveal.flags.is_empty() {
                            fail(format!(
                                "a flag revealed though no commander fell: {reveal:?}"
                            ));
                        }
                        for flag in &reveal.flags {
                            if *kind(flag.id) != (side, "F".to_string()) || flag.piece != "F" {
                                fail(format!("a 'flag' that is not {side:?}'s flag: {flag:?}"));
                            }
                        }
                    }
                }
                Event::Ended(e) => ended(e),
                _ => {}
            };
            match &record.got {
                Got::Item(item) => match item.item.as_ref().expect("an item") {
                    Item::Event(e) => event(e),
                    // No field of a status can name a piece; its bytes are searched below
                    // with everything else.
                    Item::Reconnect(_) | Item::Status(_) => {}
                },
                // An answer shows its events as the stream does: only the end reveals.
                Got::Result(result) => result.events.iter().for_each(event),
                Got::View(view) => {
                    if view.viewer != record.viewer as i32 {
                        fail(format!("a view for {:?}", view.viewer));
                    }
                    if view.phase == pb::Phase::Ended as i32 {
                        ended(&pb::GameEnded {
                            outcome: view.outcome,
                            pieces: view.pieces.clone(),
                            reveal: view.reveal.clone(),
                        });
                    } else {
                        view.pieces.iter().for_each(|p| piece(p, &record.revealed));
                        in_board_order(&view.pieces);
                        if let Some(d) = &view.own_deployment
                            && Some(side_of(d.side)) != own
                        {
                            fail("a deployment not its own".into());
                        }
                    }
                }
                Got::Legal(legal) => {
                    for m in &legal.moves {
                        node(rules, &m.from);
                        node(rules, &m.to);
                    }
                }
                Got::Error {
                    code,
                    message,
                    board,
                    claimed,
                } => {
                    if matches!(code, Code::Internal | Code::Unknown | Code::Unauthenticated) {
                        fail(format!("refused with {code:?}: {message}"));
                    }
                    check_error(message, board, claimed, own, &|why| fail(why));
                }
            }
        }
    }
}

/// (c) An error must not tell the kind of an enemy piece: in no clause that names a square
/// holding an enemy piece may that piece's code or kind word appear, nor (unless the request
/// itself put a piece there) any kind word at all.
fn check_error(
    message: &str,
    board: &Board,
    claimed: &Placements,
    own: Option<pb::Side>,
    fail: &dyn Fn(String),
) {
    for clause in message.split(';') {
        let lower = clause.to_lowercase();
        let mut tokens: Vec<&str> = clause
            .split(|c: char| !c.is_alphanumeric())
            .filter(|t| !t.is_empty())
            .collect();
        // A two-cell HQ (Gunjin Shogi's `d1+e1`) is one square of two tokens.
        tokens.extend(
            board
                .keys()
                .filter(|k| k.contains('+') && clause.contains(k.as_str()))
                .map(String::as_str),
        );
        for token in &tokens {
            let Some((side, code)) = board.get(*token) else {
                continue;
            };
            if Some(*side) == own {
                continue;
            }
            if claimed.get(*token) == Some(code) {
                continue;
            }
            if tokens.contains(&code.as_str()) {
                fail(format!(
                    "the error {message:?} names {token}, where an enemy {code} stands, with its code"
                ));
            }
            let kind_words: Vec<&str> = if claimed.contains_key(*token) {
                words(code).to_vec()
            } else {
                // Every kind word of the game the enemy piece's code belongs to.
                let codes: &[&str] = if code.len() == 3 {
                    &GUNJIN_CODES
                } else {
                    &ALL_CODES
                };
                codes
                    .iter()
                    .flat_map(|c| words(c).iter().copied())
                    .collect()
            };
            if let Some(word) = kind_words.iter().find(|w| lower.contains(*w)) {
                fail(format!(
                    "the error {message:?} names {token}, where an enemy {code} stands, and says {word:?}"
                ));
            }
        }
    }
}

/// `(side, deployment square, code, id)` of each piece of one game.
type Deployed = Vec<(pb::Side, String, String, u32)>;

/// Sorts ids into a few classes.
type Partition<'a> = dyn Fn(u32) -> usize + 'a;

/// Hands out ids to a game's pieces (for the checks' own tests).
type IdScheme<'a> = dyn Fn(&mut GameRng, &Deployed) -> Vec<u32> + 'a;

/// The chi-square value above which a statistic with `df` degrees of freedom is rejected: about
/// 6.5 standard deviations out (Wilson-Hilferty), so an honest shuffle fails it about never.
fn chi_square_limit(df: f64) -> f64 {
    let v = 2.0 / (9.0 * df);
    df * (1.0 - v + 6.5 * v.sqrt()).powi(3)
}

/// (b) Over all games: piece ids carry nothing of kind or deployment square. The server draws
/// ids at random, so these are statistical checks with bands so wide (six standard deviations
/// or more) that an honest shuffle fails them about never, while an id scheme tied to kind or
/// square fails them at once.
fn check_ids(games: &[&Deployed]) {
    let samples: Vec<&(pb::Side, String, String, u32)> = games.iter().copied().flatten().collect();
    assert_eq!(samples.len(), games.len() * 50);
    for game in games {
        let ids: BTreeSet<u32> = game.iter().map(|p| p.3).collect();
        assert_eq!(ids.len(), 50, "ids repeat within a game");
    }
    let max = samples.iter().map(|s| s.3).max().expect("ids");
    assert!(max < 256, "ids out of range");
    let range = f64::from(max + 1);
    // Uniform ids over 0..range: mean and standard deviation of one id.
    let mu = (range - 1.0) / 2.0;
    let sigma = ((range * range - 1.0) / 12.0).sqrt();

    let mut by_kind: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    let mut by_square: BTreeMap<(i32, &str), Vec<u32>> = BTreeMap::new();
    for (side, square, code, id) in &samples {
        by_kind.entry(code.as_str()).or_default().push(*id);
        by_square
            .entry((*side as i32, square.as_str()))
            .or_default()
            .push(*id);
    }
    assert_eq!(by_kind.len(), 12, "not every kind was seen");
    let distinct_expected = |n: usize| range * (1.0 - (1.0 - 1.0 / range).powi(n as i32));
    for (code, ids) in &by_kind {
        let n = ids.len() as f64;
        let mean = ids.iter().map(|&i| f64::from(i)).sum::<f64>() / n;
        let band = 6.0 * sigma / n.sqrt();
        assert!(
            (mean - mu).abs() <= band,
            "ids of kind {code} average {mean:.1}, expected {mu:.1} +- {band:.1}: ids depend on kinds"
        );
        let distinct = ids.iter().collect::<BTreeSet<_>>().len() as f64;
        assert!(
            distinct >= distinct_expected(ids.len()) / 2.0,
            "kind {code} had only {distinct} different ids in {n} pieces"
        );
    }
    for ((side, square), ids) in &by_square {
        assert_eq!(
            ids.len(),
            games.len(),
            "square {square} not always deployed"
        );
        let distinct = ids.iter().collect::<BTreeSet<_>>().len() as f64;
        assert!(
            distinct >= distinct_expected(games.len()) / 2.0,
            "the piece deployed on {square} (side {side}) had only {distinct} different ids in \
             {} games: {ids:?}",
            games.len()
        );
    }
    // Correlation of the id with the rank (ranked pieces) and with the square's node number.
    let correlation = |pairs: &[(f64, f64)]| {
        let n = pairs.len() as f64;
        let (mx, my) = (
            pairs.iter().map(|p| p.0).sum::<f64>() / n,
            pairs.iter().map(|p| p.1).sum::<f64>() / n,
        );
        let cov: f64 = pairs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let vx: f64 = pairs.iter().map(|p| (p.0 - mx).powi(2)).sum();
        let vy: f64 = pairs.iter().map(|p| (p.1 - my).powi(2)).sum();
        (cov / (vx * vy).sqrt(), n)
    };
    let rules = Rules::default();
    let ranked: Vec<(f64, f64)> = samples
        .iter()
        .filter_map(|s| {
            s.2.parse::<u8>()
                .ok()
                .map(|r| (f64::from(r), f64::from(s.3)))
        })
        .collect();
    let squares: Vec<(f64, f64)> = samples
        .iter()
        .map(|s| (f64::from(node(&rules, &s.1)), f64::from(s.3)))
        .collect();
    for (what, pairs) in [("rank", ranked), ("deployment square", squares)] {
        let (r, n) = correlation(&pairs);
        let band = 6.0 / n.sqrt();
        assert!(
            r.abs() <= band,
            "ids correlate with the {what}: r = {r:.3} (band {band:.3})"
        );
    }
    // Independence of kind (and of square) and id, seen through a few partitions of the ids:
    // a chi-square per kind and partition, and one over all kinds (and one over all squares).
    let partitions: [(&str, usize, &Partition<'_>); 3] = [
        ("fifths", 5, &|id| ((f64::from(id) / range) * 5.0) as usize),
        ("parity", 2, &|id| (id % 2) as usize),
        ("residue mod 3", 3, &|id| (id % 3) as usize),
    ];
    let total = samples.len() as f64;
    let chi_square =
        |groups: &mut dyn Iterator<Item = &Vec<u32>>, parts: usize, part: &dyn Fn(u32) -> usize| {
            let share: Vec<f64> = (0..parts)
                .map(|b| samples.iter().filter(|s| part(s.3) == b).count() as f64 / total)
                .collect();
            let mut chi = 0.0;
            let mut count = 0usize;
            for ids in groups {
                count += 1;
                for (b, share) in share.iter().enumerate() {
                    let expected = ids.len() as f64 * share;
                    let observed = ids.iter().filter(|&&i| part(i) == b).count() as f64;
                    chi += (observed - expected).powi(2) / expected;
                }
            }
            (chi, count)
        };
    for (name, parts, part) in partitions {
        for (code, ids) in &by_kind {
            let (chi, _) = chi_square(&mut std::iter::once(ids), parts, part);
            let limit = chi_square_limit((parts - 1) as f64);
            assert!(
                chi <= limit,
                "ids of kind {code} are not spread over the {name}: chi-square {chi:.1} > {limit:.1}"
            );
        }
        for (what, groups) in [
            (
                "kinds",
                &mut by_kind.values() as &mut dyn Iterator<Item = &Vec<u32>>,
            ),
            ("squares", &mut by_square.values()),
        ] {
            let (chi, count) = chi_square(groups, parts, part);
            let limit = chi_square_limit(((count - 1) * (parts - 1)) as f64);
            assert!(
                chi <= limit,
                "ids depend on the {what} ({name}): chi-square {chi:.1} > {limit:.1}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_kind_leaks_through_the_gateway() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args("gateway-leaks", db.url(), SERVE_ARGS).await;
    let session = server.connect().await;
    let started = Instant::now();

    let mut plan: Vec<(&str, Ending)> = Vec::new();
    for i in 0..DEFAULT_GAMES {
        plan.push((
            "hidden-front",
            match i % 3 {
                0 => Ending::Natural,
                1 => Ending::Resign(20 + (i * 37) % 140),
                _ => Ending::AgreedDraw,
            },
        ));
    }
    for _ in 0..FLAG_GAMES {
        plan.push(("hidden-front+flag-reveal", Ending::Natural));
    }
    let permits = std::sync::Arc::new(Semaphore::new(PARALLEL));
    let mut tasks = tokio::task::JoinSet::new();
    for (n, (rules, ending)) in plan.into_iter().enumerate() {
        let permits = std::sync::Arc::clone(&permits);
        let session = session.clone();
        let addr = server.addr();
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("a permit");
            run_game(addr, session, n, rules, ending).await
        });
    }
    let mut reports = Vec::new();
    while let Some(report) = tasks.join_next().await {
        reports.push(report.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic())));
    }
    // Under flag-reveal, play on until some game has shown a flag.
    let mut flag_games = FLAG_GAMES;
    while reports.iter().map(|r| r.reveals).sum::<usize>() == 0 && flag_games < MAX_FLAG_GAMES {
        let n = reports.len();
        reports.push(
            run_game(
                server.addr(),
                session.clone(),
                n,
                "hidden-front+flag-reveal",
                Ending::Natural,
            )
            .await,
        );
        flag_games += 1;
    }
    reports.sort_by_key(|r| r.n);

    for report in &reports {
        check_game(report);
        let streams: Vec<Vec<pb::GameEvent>> = [SOUTH, NORTH, SPECTATOR]
            .iter()
            .map(|&i| {
                report.logs[i]
                    .iter()
                    .filter_map(|r| match &r.got {
                        Got::Item(pb::SubscribeResponse {
                            item: Some(Item::Event(e)),
                        }) => Some(e.clone()),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        check_streams(
            &report.game_id,
            report.version,
            &streams[0],
            &streams[1],
            &streams[2],
        );
    }
    check_ids(&reports.iter().map(|r| &r.deployed).collect::<Vec<_>>());

    let messages: usize = reports.iter().flat_map(|r| &r.logs).map(Vec::len).sum();
    let errors: usize = reports
        .iter()
        .flat_map(|r| &r.logs)
        .flatten()
        .filter(|r| matches!(r.got, Got::Error { .. }))
        .count();
    let bytes: usize = reports
        .iter()
        .flat_map(|r| &r.logs)
        .flatten()
        .map(|r| r.raw.len())
        .sum();
    let plies: usize = reports.iter().map(|r| r.plies).sum();
    let probes: usize = reports.iter().map(|r| r.probes).sum();
    let reveals: usize = reports.iter().map(|r| r.reveals).sum();
    eprintln!(
        "{} games ({flag_games} with flag-reveal), {plies} plies, {probes} probes, {reveals} flag \
         reveals; {messages} messages ({errors} errors, {bytes} bytes) checked in {:?}",
        reports.len(),
        started.elapsed()
    );
    assert!(reveals > 0, "no game under flag-reveal showed a flag");
    assert!(
        errors > reports.len() * 4,
        "too few refusals to judge the errors"
    );
}

/// The leak test for Gunjin Shogi: complete games on each board through the gateway, with the
/// same probes and the same checks (a), (c) and (d) and the streams' agreement. (The id
/// statistics (b) are Junqi's 50-piece test above.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_kind_leaks_through_the_gateway_in_gunjin_shogi() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args("gateway-leaks-gunjin", db.url(), SERVE_ARGS).await;
    let session = server.connect().await;
    let plan = [
        ("gunjin-shogi", Ending::Natural),
        ("gunjin-shogi", Ending::Resign(60)),
        ("gunjin-shogi+y-gates", Ending::Natural),
        ("gunjin-shogi+i-gates", Ending::AgreedDraw),
        ("gunjin-shogi+23-pieces", Ending::Natural),
    ];
    let mut tasks = tokio::task::JoinSet::new();
    for (n, (rules, ending)) in plan.into_iter().enumerate() {
        let session = session.clone();
        let addr = server.addr();
        tasks.spawn(async move { run_game(addr, session, 1000 + n, rules, ending).await });
    }
    let mut reports = Vec::new();
    while let Some(report) = tasks.join_next().await {
        reports.push(report.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic())));
    }
    reports.sort_by_key(|r| r.n);
    let mut plies = 0;
    for report in &reports {
        check_game(report);
        let streams: Vec<Vec<pb::GameEvent>> = [SOUTH, NORTH, SPECTATOR]
            .iter()
            .map(|&i| {
                report.logs[i]
                    .iter()
                    .filter_map(|r| match &r.got {
                        Got::Item(pb::SubscribeResponse {
                            item: Some(Item::Event(e)),
                        }) => Some(e.clone()),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        check_streams(
            &report.game_id,
            report.version,
            &streams[0],
            &streams[1],
            &streams[2],
        );
        let per_side = report.rules.pieces_per_side();
        assert_eq!(report.deployed.len(), 2 * per_side, "game {}", report.n);
        plies += report.plies;
    }
    assert!(plies > 100, "the games really played ({plies} plies)");
}

/// Synthetic deployments of `games` seeded random games, with ids given by `ids` from the
/// pieces in deployment order (south's squares, then north's).
fn synthetic(games: usize, ids: impl Fn(&mut GameRng, &Deployed) -> Vec<u32>) -> Vec<Deployed> {
    let rules = Rules::default();
    let topo = rules.topology();
    let mut rng = GameRng::from_seed(0x05ee_d1d5);
    (0..games)
        .map(|_| {
            let mut placed: Deployed = Vec::new();
            for side in [pb::Side::South, pb::Side::North] {
                let deployment = Deployment::random(
                    &rules,
                    hidden_front_e2e::player::engine_side(side),
                    &mut rng,
                );
                for &(n, k) in &deployment.placements {
                    placed.push((side, topo.name(n).to_string(), rules.code(k).to_string(), 0));
                }
            }
            let ids = ids(&mut rng, &placed);
            placed.iter_mut().zip(ids).for_each(|(p, id)| p.3 = id);
            placed
        })
        .collect()
}

/// The id checks are not blind: an honest shuffle passes them, schemes that tie ids to kinds or
/// squares fail them (with as many games as the leak test plays).
#[test]
fn the_id_checks_pass_a_shuffle_and_fail_ids_tied_to_kinds_or_squares() {
    let games = DEFAULT_GAMES + FLAG_GAMES;
    let shuffled = |rng: &mut GameRng, _: &Deployed| {
        let mut ids: Vec<u32> = (0..50).collect();
        for i in (1..ids.len()).rev() {
            ids.swap(i, rng.below(i as u32 + 1) as usize);
        }
        ids
    };
    let honest = synthetic(games, shuffled);
    check_ids(&honest.iter().collect::<Vec<_>>());

    let by_kind = |rng: &mut GameRng, placed: &Deployed| {
        // Shuffled, then handed out again in the order of the kinds.
        let mut ids = shuffled(rng, placed);
        ids.sort_unstable();
        let mut order: Vec<usize> = (0..placed.len()).collect();
        let ties = shuffled(rng, placed);
        order.sort_by_key(|&i| (&placed[i].2, ties[i]));
        let mut out = vec![0; placed.len()];
        for (id, i) in ids.into_iter().zip(order) {
            out[i] = id;
        }
        out
    };
    let flag_low = |rng: &mut GameRng, placed: &Deployed| {
        // Shuffled, except that the flags get the two smallest ids.
        let mut ids = shuffled(rng, placed);
        for (low, flag) in placed
            .iter()
            .enumerate()
            .filter(|(_, p)| p.2 == "F")
            .map(|(i, _)| i)
            .enumerate()
        {
            let at = ids.iter().position(|&id| id == low as u32).expect("an id");
            ids.swap(at, flag);
        }
        ids
    };
    let schemes: [(&str, &IdScheme<'_>); 3] = [
        ("deployment order", &|_, _| (0..50).collect()),
        ("by kind", &by_kind),
        ("flags lowest", &flag_low),
    ];
    for (name, scheme) in schemes {
        let games = synthetic(games, scheme);
        let caught =
            std::panic::catch_unwind(|| check_ids(&games.iter().collect::<Vec<_>>())).is_err();
        assert!(caught, "ids assigned {name} pass the id checks");
    }
}

/// The error check is not blind: it passes what the engine says and fails a message that names
/// an enemy kind at its square.
#[test]
fn the_error_check_catches_an_enemy_kind_at_its_square() {
    let board: Board = [
        ("A12", pb::Side::North, "M"),
        ("B12", pb::Side::North, "F"),
        ("C7", pb::Side::North, "B"),
        ("A1", pb::Side::South, "M"),
    ]
    .into_iter()
    .map(|(sq, side, code)| (sq.to_string(), (side, code.to_string())))
    .collect();
    let judge = |message: &str, claimed: &[(&str, &str)], own: Option<pb::Side>| {
        let claimed: Placements = claimed
            .iter()
            .map(|(s, c)| (s.to_string(), c.to_string()))
            .collect();
        std::panic::catch_unwind(|| {
            check_error(message, &board, &claimed, own, &|why| panic!("{why}"))
        })
        .is_ok()
    };
    let south = Some(pb::Side::South);
    for (message, claimed) in [
        (
            "illegal move: the piece on A12 belongs to north, and it is south's turn",
            vec![],
        ),
        (
            "illegal move: the piece on A1 is a mine or a flag, which never moves",
            vec![],
        ),
        (
            "illegal move: C7 is a camp and the piece in it cannot be attacked",
            vec![],
        ),
        (
            "invalid deployment: A12 is not in south's half; the mine on A12 must stand on your two back rows",
            vec![("A12", "M")],
        ),
        (
            "invalid deployment: expected 3 of piece M, found 2; squares left empty: A1 B1",
            vec![],
        ),
    ] {
        assert!(
            judge(message, &claimed, south),
            "{message:?} was judged a leak"
        );
    }
    for (message, claimed, own) in [
        (
            "illegal move: the piece on A12 is a mine or a flag, which never moves",
            vec![],
            south,
        ),
        ("C7 holds a B", vec![], south),
        ("B12: F", vec![], south),
        (
            "invalid deployment: the flag on B12 must stand in one of your two headquarters",
            vec![("B12", "9")],
            south,
        ),
        ("the piece on A1 is a mine", vec![], None),
    ] {
        assert!(
            !judge(message, &claimed, own),
            "{message:?} was not judged a leak"
        );
    }
}
