//! `hidden-front play` as a process against a scripted stand-in gateway that answers
//! `PlayerService/Connect` only (every other method is counted and refused): the bearer token on
//! the connection, the board drawn from `get_game`, the game followed again after a `Reconnect`
//! from the last seen sequence number + 1, a typed move sent with the board's version and a fresh
//! uuid key, live events told and redrawn, server refusals printed, clear failures for an
//! unreachable gateway or a refused token, an outage (the gateway gone mid-game and back on the
//! same port: told once, back within seconds, said so, the board drawn again from a fresh view),
//! and goodbyes (followed again from the right point, every event told once). The real gateway is
//! covered by `play_connect.rs`, `play_lobby.rs` and the end-to-end tests.

use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::player_service_server::{PlayerService, PlayerServiceServer};
use pb::answer::Response as Answered;
use pb::server_message::Item;

use crate::common::Terminal;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tonic::{Request, Response, Status};

const TOKEN: &str = "tok-alice";
const GAME: &str = "g1";

/// What the stand-in gateway holds and what it saw.
#[derive(Default)]
struct State {
    view: pb::GameView,
    log: Vec<pb::GameEvent>,
    /// The `from_seq` of every follow of the game, in order.
    follow_from: Vec<u64>,
    /// The methods other than `Connect` the client called (none, ever).
    unary_calls: Vec<&'static str>,
    plays: Vec<pb::PlayRequest>,
    /// The tickets queued with `FindMatch`.
    tickets: Vec<String>,
    /// The player's games in progress, as `ListMyGames` answers them.
    active: Vec<pb::GameSummary>,
    /// Whether north's reply to the next move ends the game (as the computer's often does): its
    /// events are appended at once, so the view is ended before the client reads the stream.
    reply_ends: bool,
}

#[derive(Clone)]
struct Fake {
    state: Arc<Mutex<State>>,
    live: broadcast::Sender<pb::GameEvent>,
    /// The lobby's live events, and how many times the lobby was followed.
    lobby: broadcast::Sender<pb::LobbyEvent>,
    lobby_watches: Arc<tokio::sync::watch::Sender<usize>>,
    /// How many times the game was followed.
    follows: Arc<tokio::sync::watch::Sender<usize>>,
    /// Tells every connection to say goodbye (with the resume point to name, if not the truth).
    goodbyes: broadcast::Sender<Option<u64>>,
}

fn piece(square: &str, side: pb::Side, id: u32, code: &str) -> pb::VisiblePiece {
    pb::VisiblePiece {
        square: square.into(),
        side: side as i32,
        id,
        piece: code.into(),
    }
}

fn event(seq: u64, e: pb::game_event::Event) -> pb::GameEvent {
    pb::GameEvent {
        game_id: GAME.into(),
        seq,
        event: Some(e),
    }
}

fn moved(side: pb::Side, from: &str, to: &str, id: u32, code: &str) -> pb::game_event::Event {
    pb::game_event::Event::Moved(pb::Moved {
        side: side as i32,
        r#move: Some(pb::Move {
            from: from.into(),
            to: to.into(),
        }),
        piece_id: id,
        piece: code.into(),
        combat: None,
        flag_reveals: vec![],
    })
}

impl Fake {
    /// Alice (south) to move at version 5; north just moved C8-C7.
    fn new() -> Fake {
        use pb::game_event::Event as E;
        let pieces = vec![
            piece("A6", pb::Side::South, 1, "9"),
            piece("B1", pb::Side::South, 2, "F"),
            piece("C7", pb::Side::North, 3, ""),
            piece("D12", pb::Side::North, 4, ""),
        ];
        let view = pb::GameView {
            game_id: GAME.into(),
            version: 5,
            viewer: pb::Viewer::South as i32,
            rules: "hidden-front".into(),
            phase: pb::Phase::Play as i32,
            first_mover: pb::Side::North as i32,
            to_move: pb::Side::South as i32,
            plies: 1,
            plies_without_combat: 1,
            pieces: pieces.clone(),
            south_player: "alice".into(),
            north_player: "bob".into(),
            ..Default::default()
        };
        let confirmed = |side: pb::Side| {
            E::DeploymentConfirmed(pb::DeploymentConfirmed {
                side: side as i32,
                deployment: None,
                by_deadline: false,
            })
        };
        let log = vec![
            event(
                1,
                E::Created(pb::GameCreated {
                    rules: "hidden-front".into(),
                    first_mover: pb::Side::North as i32,
                }),
            ),
            event(2, confirmed(pb::Side::South)),
            event(3, confirmed(pb::Side::North)),
            event(4, E::PlayStarted(pb::PlayStarted { pieces })),
            event(5, moved(pb::Side::North, "C8", "C7", 3, "")),
        ];
        Fake {
            state: Arc::new(Mutex::new(State {
                view,
                log,
                ..Default::default()
            })),
            live: broadcast::channel(16).0,
            lobby: broadcast::channel(16).0,
            lobby_watches: Arc::new(tokio::sync::watch::channel(0).0),
            follows: Arc::new(tokio::sync::watch::channel(0).0),
            goodbyes: broadcast::channel(4).0,
        }
    }

    /// The same scene in Gunjin Shogi: alice's general on d2 before her own HQ, a north piece
    /// in north's HQ; north just moved c6-c5.
    fn gunjin() -> Fake {
        let fake = Fake::new();
        {
            use pb::game_event::Event as E;
            let mut state = fake.state.lock().unwrap();
            let pieces = vec![
                piece("d2", pb::Side::South, 1, "GEN"),
                piece("c3", pb::Side::South, 2, "FLG"),
                piece("c5", pb::Side::North, 3, ""),
                piece("d8+e8", pb::Side::North, 4, ""),
            ];
            state.view.rules = "gunjin-shogi".into();
            state.view.pieces = pieces.clone();
            state.log[0] = event(
                1,
                E::Created(pb::GameCreated {
                    rules: "gunjin-shogi".into(),
                    first_mover: pb::Side::North as i32,
                }),
            );
            state.log[3] = event(4, E::PlayStarted(pb::PlayStarted { pieces }));
            state.log[4] = event(5, moved(pb::Side::North, "c6", "c5", 3, ""));
        }
        fake
    }

    /// North's hidden piece (id 3) takes south's flag on B1, and the game ends with the reveal;
    /// the view is the ended one at once.
    fn reply_and_end(&self) {
        use pb::game_event::Event as E;
        let mut reply = moved(pb::Side::North, "C7", "B1", 3, "");
        if let E::Moved(m) = &mut reply {
            m.combat = Some(pb::CombatView {
                defender_id: 2,
                defender_piece: "F".into(),
                attacker_survives: true,
                defender_survives: false,
                flag_captured: true,
            });
        }
        let outcome = pb::Outcome {
            winner: pb::Side::North as i32,
            reason: pb::EndReason::FlagCaptured as i32,
        };
        let reveal = pb::EndReveal {
            deployments: vec![],
            starting_pieces: vec![
                piece("A6", pb::Side::South, 1, "9"),
                piece("B1", pb::Side::South, 2, "F"),
                piece("C8", pb::Side::North, 3, "8"),
                piece("D12", pb::Side::North, 4, "F"),
            ],
        };
        {
            let mut state = self.state.lock().unwrap();
            state.view.phase = pb::Phase::Ended as i32;
            state.view.to_move = pb::Side::Unspecified as i32;
            state.view.outcome = Some(outcome);
            state.view.reveal = Some(reveal.clone());
            state.view.pieces.retain(|p| p.square != "B1");
            for p in &mut state.view.pieces {
                if p.id == 3 {
                    p.square = "B1".into();
                    p.piece = "8".into();
                }
            }
        }
        self.append(reply);
        self.append(E::Ended(pb::GameEnded {
            outcome: Some(outcome),
            pieces: vec![],
            reveal: Some(reveal),
        }));
    }

    /// Appends an event to the log without telling live followers: as if it happened while the
    /// client was between two connections.
    fn append_unseen(&self, e: pb::game_event::Event) -> pb::GameEvent {
        let mut state = self.state.lock().unwrap();
        let ev = event(state.view.version + 1, e);
        state.view.version = ev.seq;
        state.log.push(ev.clone());
        ev
    }

    /// Appends an event as the referee would, and tells live followers.
    fn append(&self, e: pb::game_event::Event) -> pb::GameEvent {
        let mut state = self.state.lock().unwrap();
        let ev = event(state.view.version + 1, e);
        state.view.version = ev.seq;
        state.log.push(ev.clone());
        let _ = self.live.send(ev.clone());
        ev
    }
}

fn check_token<T>(request: &Request<T>) -> Result<(), Status> {
    match request.metadata().get("authorization").map(|v| v.to_str()) {
        Some(Ok(value)) if value == format!("Bearer {TOKEN}") => Ok(()),
        _ => Err(Status::unauthenticated("token not accepted")),
    }
}

/// One server message as the response that carries it.
fn item(item: Item) -> Result<pb::ConnectResponse, Status> {
    Ok(pb::ConnectResponse::of(&[pb::ServerMessage {
        item: Some(item),
    }]))
}

/// The answer to request `id`.
fn answer(id: u64, response: Answered) -> Result<pb::ConnectResponse, Status> {
    item(Item::Answer(pb::Answer {
        request_id: id,
        response: Some(response),
    }))
}

/// Request `id` refused with `status`, as the gateway refuses it.
fn refusal(id: u64, status: &Status) -> Result<pb::ConnectResponse, Status> {
    item(Item::Refusal(pb::Refusal {
        request_id: id,
        code: status.code() as i32,
        message: status.message().into(),
        reason: String::new(),
        details: vec![],
    }))
}

impl Fake {
    fn get_game(&self, game_id: &str) -> Result<pb::PlayerServiceGetGameResponse, Status> {
        if game_id != GAME {
            return Err(Status::not_found("no such game"));
        }
        let game = self.state.lock().unwrap().view.clone();
        Ok(pb::PlayerServiceGetGameResponse { game: Some(game) })
    }

    /// Plays the move as given (this stand-in does not judge it) and answers its event.
    fn play(&self, play: pb::PlayRequest) -> Result<pb::ActionResult, Status> {
        let mv = play.r#move.clone().unwrap_or_default();
        let mut state = self.state.lock().unwrap();
        state.plays.push(play.clone());
        let expected = play.context.as_ref().and_then(|c| c.expected_version);
        if expected != Some(state.view.version) {
            return Err(Status::aborted("the game is at another version"));
        }
        // A lone cell of a Gunjin Shogi HQ is no square for the engine (the HQ is one node).
        if state.view.rules.starts_with("gunjin")
            && ["D1", "E1", "D8", "E8"].contains(&mv.to.to_ascii_uppercase().as_str())
        {
            return Err(Status::invalid_argument(format!(
                "{:?} is not a square of the board",
                mv.to
            )));
        }
        // Squares as the real gateway reads them: in any case.
        let Some(p) = state
            .view
            .pieces
            .iter_mut()
            .find(|p| p.square.eq_ignore_ascii_case(&mv.from))
        else {
            return Err(Status::invalid_argument("no piece there"));
        };
        p.square = mv.to.to_ascii_lowercase();
        let (id, code) = (p.id, p.piece.clone());
        state.view.plies += 1;
        state.view.to_move = pb::Side::North as i32;
        let reply_ends = state.reply_ends;
        drop(state);
        let ev = self.append(moved(pb::Side::South, &mv.from, &mv.to, id, &code));
        if reply_ends {
            self.reply_and_end();
        }
        Ok(pb::ActionResult {
            version: ev.seq,
            events: vec![ev],
            replayed: false,
        })
    }

    /// Queues the ticket (no opponent yet: the test sends the match on the lobby's follow).
    fn find_match(&self, request: pb::FindMatchRequest) -> pb::FindMatchResponse {
        let mut state = self.state.lock().unwrap();
        state.tickets.push(request.ticket_id.clone());
        pb::FindMatchResponse {
            ticket: Some(pb::Ticket {
                ticket_id: request.ticket_id,
                queue: request.queue,
                ..Default::default()
            }),
        }
    }

    /// Each connection says goodbye, naming `named` as every game's resume point (`None`: the
    /// first seq it has not sent), and closes.
    fn goodbye(&self, named: Option<u64>) {
        let _ = self.goodbyes.send(named);
    }

    /// Waits (up to a minute) until `n` follows of the game were asked for in all.
    async fn follows_at_least(&self, n: usize) {
        let mut follows = self.follows.subscribe();
        tokio::time::timeout(Duration::from_secs(60), follows.wait_for(|&f| f >= n))
            .await
            .unwrap_or_else(|_| panic!("the client did not follow the game {n} times"))
            .unwrap();
    }
}

/// One `Connect` connection of the stand-in: its requests answered in order, each followed game
/// a task sending its events (the first follow of a game sends the history, then asks the client
/// to follow again from #6), the lobby's live events, and a goodbye when the test says.
struct Conn {
    fake: Fake,
    out: mpsc::Sender<Result<pb::ConnectResponse, Status>>,
    /// Each followed game's task, and the first seq it has not sent.
    games: HashMap<String, (tokio::task::AbortHandle, Arc<AtomicU64>)>,
    lobby: Option<tokio::task::AbortHandle>,
}

impl Conn {
    async fn serve(mut self, mut incoming: tonic::Streaming<pb::ConnectRequest>) {
        let mut goodbyes = self.fake.goodbyes.subscribe();
        loop {
            tokio::select! {
                request = incoming.message() => match request {
                    Ok(Some(request)) => self.handle(request).await,
                    _ => break,
                },
                named = goodbyes.recv() => {
                    let Ok(named) = named else { break };
                    let mut games: Vec<pb::Reconnect> = self
                        .games
                        .iter()
                        .map(|(game_id, (_, next))| pb::Reconnect {
                            resume_from_seq: named.unwrap_or(next.load(Ordering::SeqCst)),
                            reason: "test".into(),
                            game_id: game_id.clone(),
                        })
                        .collect();
                    games.sort_by(|a, b| a.game_id.cmp(&b.game_id));
                    let goodbye = pb::Goodbye {
                        reason: "SHUTTING_DOWN".into(),
                        message: "this stand-in is going away".into(),
                        games,
                        lobby_after_seq: None,
                    };
                    let _ = self.out.send(item(Item::Goodbye(goodbye))).await;
                    break;
                }
            }
        }
        for (task, _) in self.games.values() {
            task.abort();
        }
        if let Some(task) = &self.lobby {
            task.abort();
        }
    }

    async fn handle(&mut self, request: pb::ConnectRequest) {
        use pb::connect_request::Request as R;
        let id = request.request_id;
        let failed = |message: &str| Err(Status::failed_precondition(message));
        let answered = match request.request {
            Some(R::Follow(follow)) => return self.follow(id, follow).await,
            Some(R::FollowLobby(_)) => return self.follow_lobby(id).await,
            Some(R::Unfollow(unfollow)) => {
                if let Some((task, _)) = self.games.remove(&unfollow.game_id) {
                    task.abort();
                }
                if unfollow.lobby
                    && let Some(task) = self.lobby.take()
                {
                    task.abort();
                }
                Ok(Answered::Followed(pb::Followed {
                    game_id: unfollow.game_id,
                }))
            }
            Some(R::GetGame(get)) => self.fake.get_game(&get.game_id).map(Answered::GetGame),
            Some(R::ListMyGames(_)) => Ok(Answered::ListMyGames(pb::ListMyGamesResponse {
                games: self.fake.state.lock().unwrap().active.clone(),
            })),
            Some(R::Play(play)) => self.fake.play(play).map(Answered::Action),
            // The client lists moves from its own board with the engine; asking here is a fault.
            Some(R::LegalMoves(_)) => failed("LegalMoves was called"),
            Some(R::Reshuffle(_) | R::Swap(_) | R::Deploy(_) | R::Confirm(_)) => {
                failed("the game is not in deployment")
            }
            Some(R::ProposeDraw(_)) => failed("offer cooldown"),
            Some(R::RespondDraw(_)) => failed("no draw offer to answer"),
            Some(R::Concede(_)) => failed("you may not resign in this test"),
            Some(R::FindMatch(request)) => Ok(Answered::FindMatch(self.fake.find_match(request))),
            Some(R::CancelMatch(_)) => Ok(Answered::CancelMatch(Default::default())),
            Some(R::ListTournaments(_)) => Ok(Answered::ListTournaments(
                pb::PlayerServiceListTournamentsResponse {
                    tournaments: vec![cup(&["bob"])],
                },
            )),
            Some(R::JoinTournament(join)) if join.tournament_id == "winter-cup" => Ok(
                Answered::JoinTournament(pb::PlayerServiceJoinTournamentResponse {
                    tournament: Some(cup(&["bob", "alice"])),
                }),
            ),
            Some(R::JoinTournament(join)) if join.tournament_id == "blitz-arena" => Ok(
                Answered::JoinTournament(pb::PlayerServiceJoinTournamentResponse {
                    tournament: Some(arena_under_way(&[])),
                }),
            ),
            Some(R::WithdrawTournament(leave)) if leave.tournament_id == "blitz-arena" => Ok(
                Answered::WithdrawTournament(pb::PlayerServiceWithdrawTournamentResponse {
                    tournament: Some(arena_under_way(&["alice"])),
                }),
            ),
            Some(R::JoinTournament(_)) => Err(Status::not_found("no tournament \"nope\" exists")),
            Some(R::GetTournament(_)) => {
                let mut t = cup(&["bob", "alice"]);
                t.standings = vec![
                    pb::TournamentStanding {
                        place: 1,
                        player: "alice".into(),
                        score: 1.0,
                        buchholz: 0.5,
                        ..Default::default()
                    },
                    pb::TournamentStanding {
                        place: 2,
                        player: "bob".into(),
                        score: 0.5,
                        buchholz: 1.0,
                        ..Default::default()
                    },
                ];
                Ok(Answered::GetTournament(
                    pb::PlayerServiceGetTournamentResponse {
                        tournament: Some(t),
                    },
                ))
            }
            _ => Err(Status::unimplemented("not in this fake")),
        };
        let message = match answered {
            Ok(response) => answer(id, response),
            Err(status) => refusal(id, &status),
        };
        let _ = self.out.send(message).await;
    }

    /// Follows the game from `from_seq`: the history, then (the first time) a `Reconnect` to #6,
    /// or (later) the live events.
    async fn follow(&mut self, id: u64, follow: pb::SubscribeRequest) {
        if follow.game_id != GAME {
            let _ = self
                .out
                .send(refusal(id, &Status::not_found("no such game")))
                .await;
            return;
        }
        let from = follow.from_seq.max(1);
        let mut live = self.fake.live.subscribe();
        let (backlog, first) = {
            let mut state = self.fake.state.lock().unwrap();
            state.follow_from.push(from);
            let backlog: Vec<_> = state
                .log
                .iter()
                .filter(|e| e.seq >= from)
                .cloned()
                .collect();
            (backlog, state.follow_from.len() == 1)
        };
        self.fake.follows.send_modify(|n| *n += 1);
        let followed = answer(
            id,
            Answered::Followed(pb::Followed {
                game_id: follow.game_id.clone(),
            }),
        );
        let _ = self.out.send(followed).await;
        let next = Arc::new(AtomicU64::new(from));
        let (out, sent) = (self.out.clone(), next.clone());
        let task = tokio::spawn(async move {
            let send = |event: pb::GameEvent| {
                let out = out.clone();
                let sent = sent.clone();
                async move {
                    let seq = event.seq;
                    let ok = out.send(item(Item::Event(event))).await.is_ok();
                    sent.store(seq + 1, Ordering::SeqCst);
                    ok
                }
            };
            for event in backlog {
                if !send(event).await {
                    return;
                }
            }
            if first {
                let reconnect = pb::Reconnect {
                    resume_from_seq: 6,
                    reason: "test".into(),
                    game_id: GAME.into(),
                };
                let _ = out.send(item(Item::Reconnect(reconnect))).await;
                return;
            }
            while let Ok(event) = live.recv().await {
                if event.seq >= sent.load(Ordering::SeqCst) && !send(event).await {
                    return;
                }
            }
        });
        if let Some((old, _)) = self.games.insert(GAME.into(), (task.abort_handle(), next)) {
            old.abort();
        }
    }

    /// The lobby's live events (this stand-in keeps no stored ones).
    async fn follow_lobby(&mut self, id: u64) {
        let mut live = self.fake.lobby.subscribe();
        let followed = answer(id, Answered::Followed(pb::Followed::default()));
        let _ = self.out.send(followed).await;
        let out = self.out.clone();
        let task = tokio::spawn(async move {
            while let Ok(event) = live.recv().await {
                if out.send(item(Item::Lobby(event))).await.is_err() {
                    return;
                }
            }
        });
        if let Some(old) = self.lobby.replace(task.abort_handle()) {
            old.abort();
        }
        self.fake.lobby_watches.send_modify(|n| *n += 1);
    }
}

/// The stand-in answers `Connect` only: every other method is counted (a client that used one
/// would fail the tests that check the count) and refused. Written out as `async_trait` writes a
/// method, since the attribute does not see into a macro.
macro_rules! unary {
    ($($method:ident: $request:ty => $response:ty),* $(,)?) => {
        $(fn $method<'life0, 'async_trait>(
            &'life0 self,
            _: Request<$request>,
        ) -> Pin<Box<dyn Future<Output = Result<Response<$response>, Status>> + Send + 'async_trait>>
        where
            'life0: 'async_trait,
            Self: 'async_trait,
        {
            Box::pin(async move {
                self.state.lock().unwrap().unary_calls.push(stringify!($method));
                Err(Status::unimplemented("this stand-in answers Connect only"))
            })
        })*
    };
}

#[tonic::async_trait]
impl PlayerService for Fake {
    type ConnectStream = ReceiverStream<Result<pb::ConnectResponse, Status>>;
    type SubscribeStream = ReceiverStream<Result<pb::SubscribeResponse, Status>>;
    type WatchLobbyStream = ReceiverStream<Result<pb::WatchLobbyResponse, Status>>;

    async fn connect(
        &self,
        request: Request<tonic::Streaming<pb::ConnectRequest>>,
    ) -> Result<Response<Self::ConnectStream>, Status> {
        check_token(&request)?;
        let (out, responses) = mpsc::channel(64);
        let conn = Conn {
            fake: self.clone(),
            out,
            games: HashMap::new(),
            lobby: None,
        };
        tokio::spawn(conn.serve(request.into_inner()));
        Ok(Response::new(ReceiverStream::new(responses)))
    }

    unary!(
        subscribe: pb::SubscribeRequest => Self::SubscribeStream,
        watch_lobby: pb::WatchLobbyRequest => Self::WatchLobbyStream,
        get_game: pb::PlayerServiceGetGameRequest => pb::PlayerServiceGetGameResponse,
        list_my_games: pb::ListMyGamesRequest => pb::ListMyGamesResponse,
        reshuffle: pb::ReshuffleRequest => pb::ReshuffleResponse,
        swap: pb::SwapRequest => pb::SwapResponse,
        deploy: pb::DeployRequest => pb::DeployResponse,
        confirm: pb::ConfirmRequest => pb::ConfirmResponse,
        play: pb::PlayRequest => pb::PlayResponse,
        legal_moves: pb::LegalMovesRequest => pb::LegalMovesResponse,
        propose_draw: pb::ProposeDrawRequest => pb::ProposeDrawResponse,
        respond_draw: pb::RespondDrawRequest => pb::RespondDrawResponse,
        concede: pb::ConcedeRequest => pb::ConcedeResponse,
        find_match: pb::FindMatchRequest => pb::FindMatchResponse,
        cancel_match: pb::CancelMatchRequest => pb::CancelMatchResponse,
        create_invite: pb::PlayerServiceCreateInviteRequest => pb::PlayerServiceCreateInviteResponse,
        accept_invite: pb::PlayerServiceAcceptInviteRequest => pb::PlayerServiceAcceptInviteResponse,
        cancel_invite: pb::PlayerServiceCancelInviteRequest => pb::PlayerServiceCancelInviteResponse,
        play_computer: pb::PlayerServicePlayComputerRequest => pb::PlayerServicePlayComputerResponse,
        get_my_rating: pb::GetMyRatingRequest => pb::GetMyRatingResponse,
        export_replay: pb::ExportReplayRequest => pb::ExportReplayResponse,
        list_tournaments: pb::PlayerServiceListTournamentsRequest => pb::PlayerServiceListTournamentsResponse,
        join_tournament: pb::PlayerServiceJoinTournamentRequest => pb::PlayerServiceJoinTournamentResponse,
        withdraw_tournament: pb::PlayerServiceWithdrawTournamentRequest => pb::PlayerServiceWithdrawTournamentResponse,
        get_tournament: pb::PlayerServiceGetTournamentRequest => pb::PlayerServiceGetTournamentResponse,
    );
}

/// Serves `fake` on a free local port; answers its URL.
async fn serve(fake: Fake) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(PlayerServiceServer::new(fake))
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );
    format!("http://{addr}")
}

/// A TCP proxy in front of the fake gateway that the test takes down and brings back on the same
/// port, as a gateway killed and restarted later looks to its clients: down, it cuts every open
/// connection and refuses new ones (accepting and closing them at once, counted, so the test
/// waits until the client has tried several times instead of sleeping); up, it forwards again.
struct Outages {
    url: String,
    gate: Arc<Mutex<Gate>>,
    refused: tokio::sync::watch::Receiver<usize>,
}

#[derive(Default)]
struct Gate {
    down: bool,
    open: Vec<tokio::task::AbortHandle>,
}

impl Outages {
    async fn start(gateway: &str) -> Outages {
        let upstream = gateway.trim_start_matches("http://").to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let gate = Arc::new(Mutex::new(Gate::default()));
        let (refused_tx, refused) = tokio::sync::watch::channel(0);
        tokio::spawn({
            let gate = gate.clone();
            async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    let mut gate = gate.lock().unwrap();
                    if gate.down {
                        drop(inbound);
                        refused_tx.send_modify(|n| *n += 1);
                        continue;
                    }
                    let upstream = upstream.clone();
                    let task = tokio::spawn(async move {
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    gate.open.push(task.abort_handle());
                }
            }
        });
        Outages {
            url: format!("http://{addr}"),
            gate,
            refused,
        }
    }

    /// The gateway goes away: every connection is cut, new ones are refused.
    fn down(&self) {
        let mut gate = self.gate.lock().unwrap();
        gate.down = true;
        for task in gate.open.drain(..) {
            task.abort();
        }
    }

    /// The gateway is back on the same port.
    fn up(&self) {
        self.gate.lock().unwrap().down = false;
    }

    /// How many connections were refused so far.
    fn refused(&self) -> usize {
        *self.refused.borrow()
    }

    /// Waits (up to a minute) until `n` connections in all have been refused.
    async fn refused_at_least(&mut self, n: usize) {
        tokio::time::timeout(
            Duration::from_secs(60),
            self.refused.wait_for(|&refused| refused >= n),
        )
        .await
        .unwrap_or_else(|_| panic!("the client did not try {n} times in a minute"))
        .unwrap();
    }

    /// Lets `player`, which told the outage as `lost`, try `attempts` more times (a long outage
    /// reaches its longest wait), brings the gateway back and waits for `restored`: asserts the
    /// player was back within 4.5 s (its longest wait is 3 s) without telling the outage again.
    /// Answers the output up to `restored`.
    async fn back_within_seconds(
        &mut self,
        player: &mut Terminal,
        attempts: usize,
        lost: &str,
        restored: &str,
    ) -> String {
        let tried = self.refused();
        self.refused_at_least(tried + attempts).await;
        let back = std::time::Instant::now();
        self.up();
        let output = player.wait_for(restored);
        let took = back.elapsed();
        assert!(
            took <= Duration::from_millis(4500),
            "back {took:?} after the gateway was (the longest wait is 3 s)"
        );
        assert!(
            !output.contains("connection lost"),
            "the outage is told once, not at every attempt:\n{lost}{output}"
        );
        output
    }
}

/// The countdown of the board's status line (`your move: 28 s left`).
fn seconds_left(text: &str) -> Option<u64> {
    let before = text.split(" s left").next()?;
    before.rsplit(' ').next()?.parse().ok()
}

/// The client as a process (a terminal of `common`), against the fake gateway.
struct Player;

impl Player {
    fn start(args: &[&str]) -> Terminal {
        Terminal::start("player", args, Stdio::piped(), Duration::from_secs(20))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn plays_a_move_follows_the_stream_and_prints_refusals() {
    let fake = Fake::new();
    let url = serve(fake.clone()).await;
    let mut player = tokio::task::spawn_blocking({
        let url = url.clone();
        move || Player::start(&["--gateway", &url, "--game", GAME, "--token", TOKEN])
    })
    .await
    .unwrap();

    // The board, from GetGame, with the own 9 and the opponent hidden.
    let first = player.wait_for("type `help` for the commands.");
    assert!(first.contains("south: alice (you)"), "{first}");
    assert!(first.contains("your move, no clock"), "{first}");
    assert!(first.contains("  6   9"), "{first}");
    // The history (through a Reconnect) is absorbed quietly, telling the last move once.
    let caught_up = player.wait_for("last move: north ? C8-C7");
    assert!(
        !caught_up.contains("#5"),
        "history is not news: {caught_up}"
    );

    // The legal moves come from the board on screen, by the engine in the binary (the fake
    // refuses LegalMoves): the 9 on A6 runs the railway both ways.
    player.send("moves");
    let moves = player.wait_for("A6 -> A2 A3 A4 A5 B5 B6 C6 D6 E6 A7 A8 A9 A10 A11");
    assert!(moves.contains("legal moves:"), "{moves}");
    assert!(!moves.contains("LegalMoves was called"), "{moves}");

    player.send("a6 a7");
    let after = player.wait_for("#6 moved: south (you) 9 A6-A7");
    assert!(!after.contains("error"), "{after}");
    let board = player.wait_for("last move: south (you) 9 A6-A7");
    assert!(
        board.contains("  7   9"),
        "the 9 stands on A7 now:\n{board}"
    );
    assert!(board.contains("waiting for north to move"), "{board}");

    // A live event from the stream is told and the board redrawn.
    fake.append(pb::game_event::Event::DrawOffered(pb::DrawOffered {
        side: pb::Side::North as i32,
    }));
    player.wait_for("#7 north offers a draw");
    player.wait_for("v7 hidden-front");

    player.send("resign");
    player.wait_for("error: you may not resign in this test");
    player.send("fly away");
    player.wait_for("is not a command");

    player.send("quit");
    let status = tokio::task::spawn_blocking(move || {
        let status = player.wait();
        (status, player)
    })
    .await
    .unwrap()
    .0;
    assert!(status.success(), "{status:?}");

    let state = fake.state.lock().unwrap();
    assert_eq!(
        state.follow_from[..2],
        [1, 6],
        "resumed from the last seen + 1"
    );
    assert!(
        state.unary_calls.is_empty(),
        "everything went on Connect: {:?}",
        state.unary_calls
    );
    assert_eq!(state.plays.len(), 1);
    let context = state.plays[0].context.clone().unwrap();
    assert_eq!(context.game_id, GAME);
    assert_eq!(context.expected_version, Some(5));
    let key = uuid::Uuid::parse_str(&context.idempotency_key).expect("a uuid key");
    assert_eq!(key.get_version_num(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn plays_gunjin_shogi_with_the_hq_as_one_square() {
    let fake = Fake::gunjin();
    let url = serve(fake.clone()).await;
    let mut player = tokio::task::spawn_blocking({
        let url = url.clone();
        move || Player::start(&["--gateway", &url, "--game", GAME, "--token", TOKEN])
    })
    .await
    .unwrap();
    let first = player.wait_for("type `help` for the commands.");
    assert!(first.contains("||   ====   ||    wall"), "{first}");
    assert!(first.contains("  2   .     .     .    GEN"), "{first}");
    assert!(
        first.contains("[ ?  ][  = ]"),
        "north's HQ piece, hidden:\n{first}"
    );
    player.wait_for("last move: north ? c6-c5");

    // One cell of the HQ, as the board labels it: sent as the HQ's one square.
    player.send("d2 e1");
    player.wait_for("#6 moved: south (you) GEN D2-D1+E1");
    let board = player.wait_for("waiting for north to move");
    assert!(
        board.contains("[GEN ][  = ]"),
        "the general in the HQ:\n{board}"
    );

    player.send("quit");
    let status = tokio::task::spawn_blocking(move || player.wait())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
    let state = fake.state.lock().unwrap();
    let mv = state.plays[0].r#move.clone().unwrap();
    assert_eq!((mv.from.as_str(), mv.to.as_str()), ("D2", "D1+E1"));
}

/// Runs `hidden-front play ARGS` with no input, no token or gateway from the environment but
/// `env`'s, and answers its error output after checking that it failed.
fn play_fails(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hidden-front"));
    command
        .arg("play")
        .args(args)
        .env_remove("HF_TOKEN")
        .env_remove("HF_GATEWAY")
        .stdin(Stdio::null());
    command.envs(env.iter().copied());
    let output = command.output().unwrap();
    assert!(!output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_token_fails_with_a_hint() {
    let url = serve(Fake::new()).await;
    let stderr = tokio::task::spawn_blocking(move || {
        play_fails(
            &["--gateway", &url, "--game", GAME],
            &[("HF_TOKEN", "someone-else")],
        )
    })
    .await
    .unwrap();
    assert!(
        stderr.contains("the token was refused by the gateway at http://127.0.0.1:"),
        "{stderr}"
    );
    assert!(stderr.contains("token not accepted"), "{stderr}");
    assert!(stderr.contains("hidden-front token --player"), "{stderr}");
}

#[test]
fn an_unreachable_gateway_fails_with_a_clear_message() {
    // A port nobody listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gateway = format!("http://127.0.0.1:{port}");
    let stderr = play_fails(
        &["--game", GAME, "--token", TOKEN],
        &[("HF_GATEWAY", &gateway)],
    );
    assert!(
        stderr.contains(&format!(
            "cannot reach the gateway at http://127.0.0.1:{port}"
        )),
        "{stderr}"
    );
}

#[test]
fn a_missing_token_is_named() {
    let stderr = play_fails(&["--game", GAME], &[]);
    assert!(
        stderr.contains("no token: pass --token or set HF_TOKEN"),
        "{stderr}"
    );
}

/// A one-shot HTTP/1.1 stand-in for the gateway's `POST /v1/guest` (the real endpoint is another
/// branch's work): answers every request with `status` and `body`, and hands back each request's
/// head as it was received.
async fn guest_stub(status: &str, body: &str) -> (String, mpsc::UnboundedReceiver<String>) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let answer = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let _ = tx.send(String::from_utf8_lossy(&head).into_owned());
            let _ = socket.write_all(answer.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    });
    (format!("http://{addr}"), rx)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_guest_signs_in_over_http_and_plays() {
    let url = serve(Fake::new()).await;
    let (http, mut requests) = guest_stub(
        "200 OK",
        &format!(
            r#"{{"token":"{TOKEN}","player":"guest-k7qx","expiresAtUnixMillis":{}}}"#,
            4_102_444_800_000u64
        ),
    )
    .await;
    let mut player = tokio::task::spawn_blocking(move || {
        Player::start(&[
            "--gateway",
            &url,
            "--game",
            GAME,
            "--guest",
            "--http",
            &http,
        ])
    })
    .await
    .unwrap();
    let first = player.wait_for("type `help` for the commands.");
    assert!(first.contains("signed in as guest guest-k7qx"), "{first}");
    assert!(
        first.contains("south: alice (you)"),
        "the guest token was used: {first}"
    );
    let request = requests.recv().await.unwrap();
    assert!(
        request.starts_with("POST /v1/guest HTTP/1.1\r\n"),
        "{request}"
    );
    player.send("quit");
    let status = tokio::task::spawn_blocking(move || player.wait())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_without_guests_says_so() {
    let url = serve(Fake::new()).await;
    let (http, _requests) = guest_stub(
        "404 Not Found",
        r#"{"code":"NOT_FOUND","reason":"GUESTS_NOT_ALLOWED","message":"guest tokens are off"}"#,
    )
    .await;
    let stderr = tokio::task::spawn_blocking(move || {
        play_fails(&["--gateway", &url, "--guest", "--http", &http], &[])
    })
    .await
    .unwrap();
    assert!(
        stderr.contains("this gateway does not hand out guest tokens (GUESTS_NOT_ALLOWED: guest tokens are off): pass a token with --token"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_countdown_runs_on_the_server_clock() {
    // A server an hour ahead of this machine, with 30 s left on the move clock by its time.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let server_now = now + 3_600_000;
    let fake = Fake::new();
    fake.state.lock().unwrap().view.turn_deadline_unix_millis = server_now + 30_000;
    let url = serve(fake).await;
    let (http, mut requests) =
        guest_stub("200 OK", &format!(r#"{{"unixMillis":{server_now}}}"#)).await;
    let mut player = tokio::task::spawn_blocking(move || {
        Player::start(&[
            "--gateway",
            &url,
            "--game",
            GAME,
            "--token",
            TOKEN,
            "--http",
            &http,
        ])
    })
    .await
    .unwrap();
    let first = player.wait_for("type `help` for the commands.");
    // The stub's time was read when the test started; the client measures it a moment later
    // (a process start on a loaded machine), so it may find the server up to a second less ahead.
    let behind: f64 = first
        .split("this machine's clock is ")
        .nth(1)
        .and_then(|rest| rest.split(" s behind the server's").next())
        .and_then(|seconds| seconds.parse().ok())
        .unwrap_or_else(|| panic!("no clock offset line: {first}"));
    assert!(
        (3599.0..=3600.1).contains(&behind),
        "{behind} s behind: {first}"
    );
    let left = seconds_left(&first).unwrap_or_else(|| panic!("a countdown: {first}"));
    assert!((20..=31).contains(&left), "{left} s left:\n{first}");
    let request = requests.recv().await.unwrap();
    assert!(
        request.starts_with("GET /v1/time HTTP/1.1\r\n"),
        "{request}"
    );
    player.send("quit");
    let status = tokio::task::spawn_blocking(move || player.wait())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn after_an_outage_the_client_is_back_within_seconds_and_says_so() {
    let fake = Fake::new();
    let mut gateway = Outages::start(&serve(fake.clone()).await).await;
    let mut player = tokio::task::spawn_blocking({
        let url = gateway.url.clone();
        move || Player::start(&["--gateway", &url, "--game", GAME, "--token", TOKEN])
    })
    .await
    .unwrap();
    player.wait_for("your move, no clock");
    player.wait_for("last move: north ? C8-C7");

    // The gateway dies: the player is told once that the connection is lost.
    gateway.down();
    let lost = player.wait_for("reconnecting");
    assert!(lost.contains("connection lost: "), "{lost}");
    // A move typed meanwhile is not lost silently: the player is told to type it again.
    player.send("a6 a7");
    player.wait_for("error: the connection is lost and the client is reconnecting; type it again once it says \"connection restored\"");

    // While it is down, the server's clocks stood still: the deadline it shows once back is
    // not what it was (here: none before, ten minutes after). No event marks that.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    fake.state.lock().unwrap().view.turn_deadline_unix_millis = now + 600_000;

    // A long outage: the client has tried again and again, long enough to reach the longest wait
    // of its schedule (250 ms doubling: the sixth wait is at the cap).
    gateway
        .back_within_seconds(
            &mut player,
            6,
            &lost,
            "connection restored: following the game again from #6",
        )
        .await;
    // Then the board again, from a fresh view: the server's clock, not the stale one.
    let board = player.wait_for(" s left (`moves` lists them)");
    let left = seconds_left(&board)
        .unwrap_or_else(|| panic!("a countdown after the reconnection: {board}"));
    assert!((580..=600).contains(&left), "{left} s left:\n{board}");

    // And the game goes on: the move typed again is played.
    player.send("a6 a7");
    player.wait_for("#6 moved: south (you) 9 A6-A7");
    player.send("quit");
    let status = tokio::task::spawn_blocking(move || player.wait())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
    let state = fake.state.lock().unwrap();
    assert_eq!(
        state.follow_from.last(),
        Some(&6),
        "resumed from the last seen + 1"
    );
}

/// A gateway that says goodbye names where to resume each game; the client follows again from
/// there or from what it has, whichever is earlier, so an event that happened in between is told,
/// and an event sent again is not told twice.
#[tokio::test(flavor = "multi_thread")]
async fn after_a_goodbye_the_game_is_followed_again_with_nothing_missed_or_repeated() {
    use pb::game_event::Event as E;
    let fake = Fake::new();
    let url = serve(fake.clone()).await;
    let mut player = tokio::task::spawn_blocking(move || {
        Player::start(&["--gateway", &url, "--game", GAME, "--token", TOKEN])
    })
    .await
    .unwrap();
    let mut told = player.wait_for("last move: north ? C8-C7");
    // Followed live: the first follow's history, then again from #6 after its `Reconnect`.
    fake.follows_at_least(2).await;
    let offer = || {
        E::DrawOffered(pb::DrawOffered {
            side: pb::Side::North as i32,
        })
    };

    // The goodbye names the truth (#6), and #6 happens before the client is back.
    fake.append_unseen(offer());
    fake.goodbye(None);
    fake.follows_at_least(3).await;
    told += &player.wait_for("#6 north offers a draw");

    // It names a point past anything sent (a server that lost count): the client asks for what
    // it has not had, #7.
    fake.append_unseen(E::DrawDeclined(pb::DrawDeclined {
        side: pb::Side::South as i32,
    }));
    fake.goodbye(Some(99));
    fake.follows_at_least(4).await;
    told += &player.wait_for("#7 south (you) declined the draw offer");

    // It names a point far behind: #2 to #7 come again, and only #8 is news.
    fake.append_unseen(offer());
    fake.goodbye(Some(2));
    fake.follows_at_least(5).await;
    told += &player.wait_for("#8 north offers a draw");

    player.send("quit");
    let status = tokio::task::spawn_blocking(move || player.wait())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
    for seq in 6..=8 {
        assert_eq!(
            told.matches(&format!("#{seq} ")).count(),
            1,
            "#{seq} told once:\n{told}"
        );
    }
    for seq in 2..=5 {
        assert!(
            !told.contains(&format!("#{seq} ")),
            "#{seq} is history, not news:\n{told}"
        );
    }
    assert!(
        !told.contains("connection lost") && !told.contains("connection restored"),
        "a goodbye answered by a working reconnection is no outage:\n{told}"
    );
    let state = fake.state.lock().unwrap();
    assert_eq!(state.follow_from, [1, 6, 6, 7, 2]);
    assert!(state.unary_calls.is_empty(), "{:?}", state.unary_calls);
}

/// An open Swiss with `entrants`, not started.
fn cup(entrants: &[&str]) -> pb::Tournament {
    pb::Tournament {
        tournament_id: "winter-cup".into(),
        format: pb::TournamentFormat::Swiss as i32,
        round_count: 3,
        state: pb::TournamentState::Scheduled as i32,
        open_to_players: true,
        entrants: entrants.iter().map(|e| e.to_string()).collect(),
        ..Default::default()
    }
}

/// An arena under way with alice and bob in it, `paused` paused.
fn arena_under_way(paused: &[&str]) -> pb::Tournament {
    pb::Tournament {
        tournament_id: "blitz-arena".into(),
        format: pb::TournamentFormat::Arena as i32,
        state: pb::TournamentState::Running as i32,
        entrants: vec!["alice".into(), "bob".into()],
        paused: paused.iter().map(|p| p.to_string()).collect(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tournaments_are_listed_joined_and_their_standings_printed() {
    let fake = Fake::new();
    let url = serve(fake.clone()).await;
    let mut player =
        tokio::task::spawn_blocking(move || Player::start(&["--gateway", &url, "--token", TOKEN]))
            .await
            .unwrap();
    player.wait_for("lobby: play the computer");
    player.send("tournaments");
    let listed = player.wait_for("`standings ID`");
    assert!(
        listed.contains("winter-cup  Swiss, 1 players, starts in"),
        "{listed}"
    );
    assert!(listed.contains("open to players"), "{listed}");
    player.send("join winter-cup");
    player.wait_for("you are in winter-cup (2 players)");
    player.send("join nope");
    let refused = player.wait_for("error: ");
    assert!(!refused.contains("you are in nope"), "{refused}");
    // In an arena under way, withdrawing pauses and joining again resumes.
    player.send("withdraw blitz-arena");
    player.wait_for("paused in blitz-arena: no new game pairs you until you `join blitz-arena`");
    player.send("join blitz-arena");
    player.wait_for("you play in blitz-arena: its next wave pairs you");
    player.send("standings winter-cup");
    let table = player.wait_for("2. bob");
    assert!(table.contains("1. alice"), "{table}");
    assert!(table.contains("1 points  Buchholz   0.5"), "{table}");
    player.send("join");
    player.wait_for("usage: join TOURNAMENT");
    player.send("quit");
    let status = tokio::task::spawn_blocking(move || player.wait())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn next_opens_the_organised_game_being_played_and_not_an_old_one() {
    let fake = Fake::new();
    let url = serve(fake.clone()).await;
    let mut watches = fake.lobby_watches.subscribe();
    let mut player =
        tokio::task::spawn_blocking(move || Player::start(&["--gateway", &url, "--token", TOKEN]))
            .await
            .unwrap();
    player.wait_for("lobby: play the computer");
    player.send("next");
    let deadline = Duration::from_secs(20);
    tokio::time::timeout(deadline, watches.wait_for(|&n| n >= 1))
        .await
        .expect("the lobby stream was opened")
        .unwrap();
    fake.state.lock().unwrap().active = vec![pb::GameSummary {
        game_id: GAME.into(),
        phase: pb::Phase::Deployment as i32,
        ..Default::default()
    }];
    let found = |seq, game_id: &str, bulk_id: &str| pb::LobbyEvent {
        seq,
        kind: Some(pb::lobby_event::Kind::MatchFound(pb::MatchFound {
            game_id: game_id.into(),
            seat: pb::Side::South as i32,
            opponent: "bob".into(),
            bulk_id: bulk_id.into(),
            ..Default::default()
        })),
    };
    // An earlier round's game, replayed by the follow: over, so not opened; a queue's match is
    // not what `next` waits for.
    let _ = fake
        .lobby
        .send(found(1, "old-round-game", "tournament:cup:round:1"));
    let _ = fake.lobby.send(found(2, GAME, ""));
    // The pushed standings of round 1 (history: its start long past) and round 2 (to start).
    let paired = |seq, round, starts_at_unix_ms| pb::LobbyEvent {
        seq,
        kind: Some(pb::lobby_event::Kind::TournamentStandings(
            pb::TournamentStandings {
                tournament_id: "cup".into(),
                rounds_completed: round - 1,
                rounds: 3,
                you: Some(pb::TournamentStanding {
                    place: 2,
                    player: "alice".into(),
                    score: 1.0,
                    ..Default::default()
                }),
                next: Some(pb::TournamentNextGame {
                    round,
                    opponent: "bob".into(),
                    seat: pb::Side::South as i32,
                    bye: false,
                    starts_at_unix_ms,
                }),
                ..Default::default()
            },
        )),
    };
    let now = hidden_front::play::clock::server_now_unix_millis();
    let _ = fake.lobby.send(paired(3, 1, now - 3_600_000));
    let _ = fake.lobby.send(paired(4, 2, now + 30_000));
    let _ = fake.lobby.send(found(5, GAME, "tournament:cup:round:2"));
    let told = player.wait_for("tournament:cup:round:2 starts");
    assert!(!told.contains("old-round-game"), "{told}");
    assert!(
        told.contains("cup: round 2 is paired: you play south against bob, starting in"),
        "{told}"
    );
    assert!(
        told.contains("you stand at place 2 with 1 points"),
        "{told}"
    );
    assert!(
        !told.contains("round 1 is paired"),
        "history is not news: {told}"
    );
    let board = player.wait_for("type `help` for the commands (`lobby` to go back to the lobby).");
    assert!(board.contains("south: alice (you)"), "{board}");
    player.send("quit");
    let status = tokio::task::spawn_blocking(move || player.wait())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wait_in_the_lobby_survives_an_outage_and_says_so() {
    let fake = Fake::new();
    let mut gateway = Outages::start(&serve(fake.clone()).await).await;
    let mut watches = fake.lobby_watches.subscribe();
    let mut player = tokio::task::spawn_blocking({
        let url = gateway.url.clone();
        move || Player::start(&["--gateway", &url, "--token", TOKEN])
    })
    .await
    .unwrap();
    player.wait_for("lobby: play the computer");
    player.send("match junqi");
    player.wait_for("waiting for an opponent");
    let deadline = Duration::from_secs(20);
    tokio::time::timeout(deadline, watches.wait_for(|&n| n >= 1))
        .await
        .expect("the lobby stream was opened")
        .unwrap();

    gateway.down();
    let lost = player.wait_for("reconnecting");
    assert!(lost.contains("connection lost: "), "{lost}");
    gateway
        .back_within_seconds(
            &mut player,
            5,
            &lost,
            "connection restored: following the lobby again",
        )
        .await;

    // The wait goes on: the match found after the outage takes the player into the game.
    tokio::time::timeout(deadline, watches.wait_for(|&n| n >= 2))
        .await
        .expect("the lobby stream was opened again")
        .unwrap();
    let ticket_id = fake.state.lock().unwrap().tickets[0].clone();
    let _ = fake.lobby.send(pb::LobbyEvent {
        seq: 1,
        kind: Some(pb::lobby_event::Kind::MatchFound(pb::MatchFound {
            game_id: GAME.into(),
            seat: pb::Side::South as i32,
            opponent: "bob".into(),
            ticket_id,
            invite_code: String::new(),
            bulk_id: String::new(),
        })),
    });
    player.wait_for("match found after");
    let board = player.wait_for("type `help` for the commands (`lobby` to go back to the lobby).");
    assert!(board.contains("south: alice (you)"), "{board}");
    player.send("quit");
    let status = tokio::task::spawn_blocking(move || player.wait())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reply_that_ends_the_game_is_told_before_the_end() {
    let fake = Fake::new();
    fake.state.lock().unwrap().reply_ends = true;
    let url = serve(fake.clone()).await;
    let mut player = tokio::task::spawn_blocking(move || {
        Player::start(&["--gateway", &url, "--game", GAME, "--token", TOKEN])
    })
    .await
    .unwrap();
    player.wait_for("last move: north ? C8-C7");
    player.send("a6 a7");
    // The view is ended before the stream is read: the client still tells north's reply and
    // its fight, then the end, then the final board naming the kinds the end revealed.
    let end = player.wait_for("the game is over.");
    let own = end.find("#6 moved: south (you) 9 A6-A7").expect(&end);
    let reply = end
        .find("#7 moved: north ? C7-B1 attacked F: attacker survived, defender removed")
        .unwrap_or_else(|| panic!("the ending move is told:\n{end}"));
    let over = end
        .find("#8 game over: north wins (flag captured) - you lose")
        .unwrap_or_else(|| panic!("the end is told:\n{end}"));
    assert!(own < reply && reply < over, "{end}");
    let board = &end[over..];
    assert!(
        board.contains("last move: north 8 C7-B1 attacked F: attacker survived, defender removed"),
        "the final board names the revealed attacker:\n{board}"
    );
    assert!(
        board.contains("result: north wins (flag captured) - you lose"),
        "{board}"
    );
    assert_eq!(
        end.matches("game over").count(),
        1,
        "the end is told once:\n{end}"
    );
    let status = tokio::task::spawn_blocking(move || player.wait())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_token_is_told_before_the_lobby_opens() {
    let url = serve(Fake::new()).await;
    let stderr = tokio::task::spawn_blocking(move || {
        play_fails(&["--gateway", &url, "--token", "garbage"], &[])
    })
    .await
    .unwrap();
    assert!(
        stderr.contains("the token was refused by the gateway at http://127.0.0.1:"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hidden-front token --player NAME"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_address_that_answers_http_is_named_as_the_wrong_port() {
    // The gateway's HTTP port (the page, guest sign-in) where its gRPC port belongs.
    let (http, _requests) = guest_stub("404 Not Found", "not found").await;
    let stderr = tokio::task::spawn_blocking(move || {
        play_fails(&["--gateway", &http, "--token", TOKEN], &[])
    })
    .await
    .unwrap();
    assert!(stderr.contains("answers HTTP, not gRPC"), "{stderr}");
    assert!(
        stderr
            .contains("use the gRPC port with --gateway / HF_GATEWAY, e.g. http://127.0.0.1:50051"),
        "{stderr}"
    );
    assert!(!stderr.contains("invalid compression flag:"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_guest_sign_in_at_the_grpc_port_is_named_as_the_wrong_port() {
    let grpc = serve(Fake::new()).await;
    let stderr = tokio::task::spawn_blocking({
        let grpc = grpc.clone();
        move || play_fails(&["--gateway", &grpc, "--guest", "--http", &grpc], &[])
    })
    .await
    .unwrap();
    assert!(
        stderr.contains(&format!("{grpc} does not answer HTTP/1.1")),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "it looks like the gateway's gRPC port; --http takes the gateway's HTTP port"
        ),
        "{stderr}"
    );
}
