//! `PlayerService/Connect` against the real binary and Postgres, through both of its doors (gRPC
//! and the binary WebSocket), beside the unary methods and `Subscribe`: the same game seen the
//! same way through every door, a command retried after its connection dropped applied once, a
//! follow resumed with exactly what it missed, a connection that does not read closed with where
//! to resume while another keeps every event, and random and misdirected messages answered with
//! stable reasons while the connection goes on.

use hidden_front_api_error::Reason;
use hidden_front_e2e::connect::{Connection, Door, Read, event_of, ws_upgrade};
use hidden_front_e2e::gateway::{self, PlayerClient, context, follow_to_end, next_item};
use hidden_front_e2e::{Server, TestDatabase, own_legal_moves, pb};
use pb::answer::Response as A;
use pb::connect_request::Request as R;
use std::collections::BTreeMap;
use tonic::transport::Channel;

/// A game between `south` and `north`, created on the session's internal API.
async fn game(server: &Server, south: &str, north: &str) -> String {
    let mut session = server.connect().await;
    hidden_front_e2e::client::create_game(&mut session, south, north, &format!("{south}-{north}"))
        .await
        .game_id
}

fn action(result: Result<A, pb::Refusal>, what: &str) -> pb::ActionResult {
    match result {
        Ok(A::Action(result)) => result,
        other => panic!("{what}: {other:?}"),
    }
}

fn key(player: &str, n: &mut u64) -> String {
    *n += 1;
    format!("{player}-{n}")
}

/// One seat that acts through a `Connect` connection or through the unary methods.
struct Actor {
    player: String,
    connection: Connection,
    unary: PlayerClient,
    keys: u64,
    rng: u64,
}

impl Actor {
    fn next(&mut self) -> u64 {
        // xorshift: a deterministic choice per seat.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    fn key(&mut self) -> String {
        key(&self.player.clone(), &mut self.keys)
    }

    /// The seat's view, read through its connection.
    async fn view(&mut self, game_id: &str) -> pb::GameView {
        let request = R::GetGame(pb::PlayerServiceGetGameRequest {
            game_id: game_id.into(),
            spectate: false,
        });
        match self.connection.call(request).await {
            Ok(A::GetGame(response)) => response.game.expect("a view"),
            other => panic!("GetGame: {other:?}"),
        }
    }

    /// Plays a random legal move through the connection or, every third turn, the unary
    /// `Play`; the answer's events.
    async fn play(&mut self, game_id: &str, turn: usize) -> pb::ActionResult {
        let view = self.view(game_id).await;
        let moves = own_legal_moves(&view);
        assert!(
            !moves.is_empty(),
            "{}: no legal move on its turn",
            self.player
        );
        let chosen = moves[(self.next() % moves.len() as u64) as usize].clone();
        let request = pb::PlayRequest {
            context: Some(context(game_id, &self.key(), Some(view.version))),
            r#move: Some(chosen),
        };
        if turn % 3 == 2 {
            self.unary
                .play(request.context.unwrap(), request.r#move.unwrap())
                .await
                .expect("Play")
        } else {
            action(self.connection.call(R::Play(request)).await, "Play")
        }
    }
}

/// Reads `connection` until the `GameEnded` of `game_id`, returning every event of it (those
/// already read first).
async fn events_to_end(connection: &mut Connection, game_id: &str) -> Vec<pb::GameEvent> {
    let mut events: Vec<pb::GameEvent> = Vec::new();
    let take = |message: &pb::ServerMessage, events: &mut Vec<pb::GameEvent>| {
        if let Some(event) = event_of(message).filter(|e| e.game_id == game_id) {
            events.push(event.clone());
            return gateway::is_end(event);
        }
        false
    };
    for message in connection.waiting() {
        if take(&message, &mut events) {
            return events;
        }
    }
    loop {
        let message = connection.message().await;
        if take(&message, &mut events) {
            return events;
        }
    }
}

/// The same game through every door: south acts over gRPC `Connect`, north over the binary
/// WebSocket, each also through the unary methods now and then; each seat and a spectator
/// follow it through `Connect` and through `Subscribe` at once. Every viewer's two streams are
/// the same events, byte for byte; every answer's events are the stream's events of those seqs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_door_shows_each_viewer_the_same_game() {
    every_door_shows(&[]).await;
}

/// The same, with the gateway reaching its session over gRPC (as another process's would)
/// rather than calling it in process: the two referees are indistinguishable to players.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_door_shows_the_same_game_when_the_session_is_reached_over_grpc() {
    every_door_shows(&["--in-process-session=false"]).await;
}

async fn every_door_shows(extra: &[&str]) {
    let db = TestDatabase::create().await;
    let mut args = vec!["--actions-per-second", "5000"];
    args.extend_from_slice(extra);
    let server = Server::start_with_args("connect-doors", db.url(), &args).await;
    let channel = gateway::channel(server.addr()).await;
    let http = server.http_addr().expect("the HTTP listener");
    let game_id = game(&server, "door-sue", "door-ned").await;

    // Subscribe streams first, so each holds the whole game.
    let mut subscribed = Vec::new();
    for (player, spectate) in [("door-sue", false), ("door-ned", false), ("door-eve", true)] {
        let mut client = PlayerClient::new(channel.clone(), player);
        let stream = client
            .subscribe(&game_id, 1, spectate)
            .await
            .expect("Subscribe");
        let game = game_id.clone();
        subscribed.push(tokio::spawn(async move {
            follow_to_end(&mut client, &game, spectate, stream)
                .await
                .events
        }));
    }
    let mut sue = Actor {
        player: "door-sue".into(),
        connection: Connection::open(Door::Grpc, &channel, http, "door-sue").await,
        unary: PlayerClient::new(channel.clone(), "door-sue"),
        keys: 0,
        rng: 0x5eed_0001,
    };
    let mut ned = Actor {
        player: "door-ned".into(),
        connection: Connection::open(Door::WebSocket, &channel, http, "door-ned").await,
        unary: PlayerClient::new(channel.clone(), "door-ned"),
        keys: 0,
        rng: 0x5eed_0002,
    };
    let mut eve = Connection::open(Door::WebSocket, &channel, http, "door-eve").await;
    sue.connection.follow(&game_id, 1, false).await;
    ned.connection.follow(&game_id, 1, false).await;
    eve.follow(&game_id, 1, true).await;

    // Deployment: one action of each kind through each door.
    let mut answers: BTreeMap<&str, Vec<pb::ActionResult>> = BTreeMap::new();
    let reshuffle = R::Reshuffle(pb::ReshuffleRequest {
        context: Some(context(&game_id, &sue.key(), None)),
    });
    answers
        .entry("door-sue")
        .or_default()
        .push(action(sue.connection.call(reshuffle).await, "Reshuffle"));
    let view = ned.view(&game_id).await;
    let squares: Vec<String> = view
        .own_deployment
        .as_ref()
        .expect("north's draft")
        .placements
        .iter()
        .map(|p| p.square.clone())
        .collect();
    let swap = R::Swap(pb::SwapRequest {
        context: Some(context(&game_id, &ned.key(), None)),
        square_a: squares[0].clone(),
        square_b: squares[1].clone(),
    });
    // A swap may be refused when it would break a deployment rule; either answer is a door's.
    let _ = ned.connection.call(swap).await;
    let key = ned.key();
    answers.entry("door-ned").or_default().push(
        ned.unary
            .confirm(context(&game_id, &key, None))
            .await
            .expect("Confirm"),
    );
    let confirm = R::Confirm(pb::ConfirmRequest {
        context: Some(context(&game_id, &sue.key(), None)),
    });
    answers
        .entry("door-sue")
        .or_default()
        .push(action(sue.connection.call(confirm).await, "Confirm"));

    // Play to the end, each side through its doors; a side that has played 120 plies concedes
    // (random games can run for hundreds of plies).
    let mut turn = 0;
    let ended = loop {
        let view = sue.view(&game_id).await;
        if view.phase == pb::Phase::Ended as i32 {
            break view;
        }
        let mover = if view.to_move == pb::Side::South as i32 {
            &mut sue
        } else {
            &mut ned
        };
        let result = if turn >= 240 {
            let concede = R::Concede(pb::ConcedeRequest {
                context: Some(context(&game_id, &mover.key(), None)),
            });
            action(mover.connection.call(concede).await, "Concede")
        } else {
            mover.play(&game_id, turn).await
        };
        answers
            .entry(if std::ptr::eq(mover, &sue) {
                "door-sue"
            } else {
                "door-ned"
            })
            .or_default()
            .push(result);
        turn += 1;
    };
    assert_eq!(ended.phase, pb::Phase::Ended as i32);

    let mut through_connect = BTreeMap::new();
    through_connect.insert(
        "door-sue",
        events_to_end(&mut sue.connection, &game_id).await,
    );
    through_connect.insert(
        "door-ned",
        events_to_end(&mut ned.connection, &game_id).await,
    );
    through_connect.insert("door-eve", events_to_end(&mut eve, &game_id).await);
    for (player, task) in ["door-sue", "door-ned", "door-eve"]
        .into_iter()
        .zip(subscribed)
    {
        let through_subscribe = task.await.expect("the Subscribe reader");
        let connected = &through_connect[player];
        assert!(
            connected.len() > 10,
            "{player} saw a whole game: {}",
            connected.len()
        );
        assert_eq!(
            connected, &through_subscribe,
            "{player}: Connect and Subscribe deliver the same events"
        );
        // Every answer shows what the stream showed of those seqs.
        let by_seq: BTreeMap<u64, &pb::GameEvent> = connected.iter().map(|e| (e.seq, e)).collect();
        for result in answers.get(player).into_iter().flatten() {
            for event in &result.events {
                assert_eq!(
                    Some(&event),
                    by_seq.get(&event.seq),
                    "{player}: answer {}",
                    event.seq
                );
            }
        }
    }
}

/// A move sent on a connection that dropped before its answer came is applied once: the retry,
/// on a new connection through the other door, gets the first answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_retried_after_its_connection_dropped_is_applied_once() {
    let db = TestDatabase::create().await;
    let server = Server::start("connect-retry", db.url()).await;
    let channel = gateway::channel(server.addr()).await;
    let http = server.http_addr().expect("the HTTP listener");
    let game_id = game(&server, "retry-sue", "retry-ned").await;
    let mut sue = PlayerClient::new(channel.clone(), "retry-sue");
    let mut ned = PlayerClient::new(channel.clone(), "retry-ned");
    let mut watch = ned.subscribe(&game_id, 1, false).await.expect("Subscribe");
    sue.confirm(context(&game_id, "sue-confirm", None))
        .await
        .expect("Confirm");
    ned.confirm(context(&game_id, "ned-confirm", None))
        .await
        .expect("Confirm");
    // South moves first or after north's move.
    let view = sue.get_game(&game_id, false).await.expect("GetGame");
    let (mover, mover_name, view) = if view.to_move == pb::Side::South as i32 {
        (&mut sue, "retry-sue", view)
    } else {
        let view = ned.get_game(&game_id, false).await.expect("GetGame");
        (&mut ned, "retry-ned", view)
    };
    let chosen = own_legal_moves(&view)[0].clone();
    let play = pb::PlayRequest {
        context: Some(context(&game_id, "the-move", Some(view.version))),
        r#move: Some(chosen),
    };
    let mut first = Connection::open(Door::Grpc, &channel, http, mover_name).await;
    first.send(R::Play(play.clone())).await;
    // Wait until the move is applied (north's stream shows it), then drop the connection
    // without reading its answer.
    loop {
        let item = next_item(&mut watch, "north's stream")
            .await
            .expect("stream")
            .expect("open");
        if let Some(pb::subscribe_response::Item::Event(event)) = item.item
            && event.seq == view.version + 1
        {
            assert!(matches!(event.event, Some(pb::game_event::Event::Moved(_))));
            break;
        }
    }
    drop(first);
    let mut retry = Connection::open(Door::WebSocket, &channel, http, mover_name).await;
    let answer = action(retry.call(R::Play(play)).await, "the retried Play");
    assert!(
        answer.replayed,
        "the retry gets the first answer: {answer:?}"
    );
    assert_eq!(answer.version, view.version + 1);
    let after = mover.get_game(&game_id, false).await.expect("GetGame");
    assert_eq!(after.version, view.version + 1, "the move was applied once");
    assert_eq!(after.plies, 1);
}

/// A connection that dropped mid-game follows again from the seq after the last event it had,
/// and gets exactly the events it missed: those a fresh `Subscribe` from there gets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_follow_gets_exactly_the_missed_events() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args(
        "connect-resume",
        db.url(),
        &["--actions-per-second", "5000"],
    )
    .await;
    let channel = gateway::channel(server.addr()).await;
    let http = server.http_addr().expect("the HTTP listener");
    let game_id = game(&server, "resume-sue", "resume-ned").await;
    let mut sue = PlayerClient::new(channel.clone(), "resume-sue");
    let mut first = Connection::open(Door::WebSocket, &channel, http, "resume-sue").await;
    first.follow(&game_id, 1, false).await;
    // The creation and south's draft, then the connection goes.
    let mut had = Vec::new();
    while had.len() < 2 {
        if let Some(event) = event_of(&first.message().await) {
            had.push(event.clone());
        }
    }
    drop(first);
    let mut keys = 0;
    for _ in 0..5 {
        let key = key("resume-sue", &mut keys);
        sue.reshuffle(context(&game_id, &key, None))
            .await
            .expect("Reshuffle");
    }
    let key = key("resume-sue", &mut keys);
    let conceded = sue
        .concede(context(&game_id, &key, None))
        .await
        .expect("Concede");
    let resume_from = had.last().unwrap().seq + 1;
    let mut again = Connection::open(Door::Grpc, &channel, http, "resume-sue").await;
    again.follow(&game_id, resume_from, false).await;
    let missed = events_to_end(&mut again, &game_id).await;
    let stream = sue
        .subscribe(&game_id, resume_from, false)
        .await
        .expect("Subscribe");
    let expected = follow_to_end(&mut sue, &game_id, false, stream)
        .await
        .events;
    assert_eq!(missed, expected);
    assert_eq!(
        missed.first().map(|e| e.seq),
        Some(resume_from),
        "nothing skipped"
    );
    assert_eq!(
        missed.last().map(|e| e.seq),
        Some(conceded.version),
        "up to the end"
    );
    assert!(
        missed.iter().all(|e| e.seq >= resume_from),
        "nothing repeated"
    );
}

/// A gRPC connection that stops reading (a 1 KiB HTTP/2 window) is closed once its queue stays
/// full: it gets a gapless prefix, then a goodbye (`TOO_SLOW`) whose resume point continues it,
/// and following again from there gives the rest. A connection of the same seat that reads
/// gets every event meanwhile: nothing waited for the slow one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_does_not_read_is_closed_with_its_resume_point() {
    const DRAFTS: usize = 300;
    let db = TestDatabase::create().await;
    let server = Server::start_with_args(
        "connect-slow",
        db.url(),
        &[
            "--actions-per-second",
            "5000",
            "--stream-buffer",
            "4",
            "--stream-max-lag-ms",
            "100",
        ],
    )
    .await;
    let channel = gateway::channel(server.addr()).await;
    let http = server.http_addr().expect("the HTTP listener");
    let game_id = game(&server, "slow-sue", "slow-ned").await;
    let narrow: Channel =
        tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr()))
            .expect("a loopback URL")
            .initial_stream_window_size(1024)
            .initial_connection_window_size(1024)
            .connect()
            .await
            .expect("a channel with a small window");
    let mut sleeper = Connection::open(Door::Grpc, &narrow, http, "slow-sue").await;
    sleeper.follow(&game_id, 1, false).await;
    let mut steady = Connection::open(Door::WebSocket, &channel, http, "slow-sue").await;
    steady.follow(&game_id, 1, false).await;

    let mut sue = PlayerClient::new(channel.clone(), "slow-sue");
    let mut keys = 0;
    for _ in 0..DRAFTS {
        let key = key("slow-sue", &mut keys);
        sue.reshuffle(context(&game_id, &key, None))
            .await
            .expect("Reshuffle");
    }
    let key = key("slow-sue", &mut keys);
    let conceded = sue
        .concede(context(&game_id, &key, None))
        .await
        .expect("Concede");
    let everything = events_to_end(&mut steady, &game_id).await;
    assert_eq!(everything.last().map(|e| e.seq), Some(conceded.version));
    assert!(
        everything.len() > DRAFTS,
        "the steady connection got every draft"
    );

    // Now the sleeper reads what reached it.
    let mut prefix: Vec<pb::GameEvent> = Vec::new();
    let goodbye = loop {
        match sleeper.read().await {
            Read::Message(message) => match message.item {
                Some(pb::server_message::Item::Event(event)) => prefix.push(event),
                Some(pb::server_message::Item::Goodbye(goodbye)) => break goodbye,
                Some(pb::server_message::Item::Status(_)) => {}
                other => panic!("unexpected {other:?}"),
            },
            other => panic!("the sleeper's connection ended without a goodbye: {other:?}"),
        }
    };
    assert!(
        prefix.len() < everything.len(),
        "the sleeper was cut before the end ({} of {})",
        prefix.len(),
        everything.len()
    );
    assert_eq!(prefix[..], everything[..prefix.len()], "a gapless prefix");
    assert_eq!(goodbye.reason, "TOO_SLOW");
    let [resume] = &goodbye.games[..] else {
        panic!("one game to resume: {goodbye:?}");
    };
    assert_eq!(resume.game_id, game_id);
    let next = prefix.last().map_or(1, |e| e.seq + 1);
    assert_eq!(
        resume.resume_from_seq, next,
        "the resume point continues the prefix"
    );
    assert!(
        matches!(sleeper.read().await, Read::Ended(_)),
        "the stream ends after the goodbye"
    );

    let mut again = Connection::open(Door::Grpc, &channel, http, "slow-sue").await;
    again.follow(&game_id, resume.resume_from_seq, false).await;
    let rest = events_to_end(&mut again, &game_id).await;
    prefix.extend(rest);
    assert_eq!(
        prefix, everything,
        "the prefix and the rest are the whole game"
    );
}

/// Every client mistake gets its stable reason on its own request id (or 0 when the frame could
/// not be read that far), never a server fault, and the connection goes on: the cases by name,
/// then a few hundred random frames (bytes, cut messages, messages with random fields).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_and_misdirected_messages_get_stable_reasons() {
    let db = TestDatabase::create().await;
    let server = Server::start_with_args(
        "connect-refusals",
        db.url(),
        &[
            "--actions-per-second",
            "5000",
            "--max-message-bytes",
            "4096",
        ],
    )
    .await;
    let channel = gateway::channel(server.addr()).await;
    let http = server.http_addr().expect("the HTTP listener");
    let game_id = game(&server, "bad-sue", "bad-ned").await;
    let mut conn = Connection::open(Door::WebSocket, &channel, http, "bad-sue").await;
    let refused = |result: Result<A, pb::Refusal>, reason: Reason, what: &str| match result {
        Err(refusal) => {
            assert_eq!(refusal.reason, reason.as_str(), "{what}: {refusal:?}");
            assert_eq!(refusal.code, reason.code() as i32, "{what}");
            let status = tonic::Status::with_details(
                tonic::Code::from(refusal.code),
                refusal.message.clone(),
                refusal.details.clone().into(),
            );
            assert_eq!(
                hidden_front_api_error::ErrorSummary::of(&status).reason,
                reason.as_str(),
                "{what}: the details carry the reason"
            );
            refusal
        }
        Ok(answer) => panic!("{what}: answered {answer:?}"),
    };
    let ctx = |key: &str| Some(context(&game_id, key, None));
    let mv = gateway::mv("a1", "a2");

    let unknown = uuid::Uuid::now_v7().to_string();
    let follow = |game: &str| {
        R::Follow(pb::SubscribeRequest {
            game_id: game.into(),
            from_seq: 1,
            spectate: false,
            with_status: false,
        })
    };
    refused(
        conn.call(follow(&unknown)).await,
        Reason::GameNotFound,
        "an unknown game",
    );
    let bad = refused(
        conn.call(follow("not-a-uuid")).await,
        Reason::InvalidField,
        "a bad id",
    );
    assert!(bad.message.contains("follow.game_id"), "{bad:?}");
    conn.follow(&game_id, 1, false).await;
    refused(
        conn.call(follow(&game_id)).await,
        Reason::SubscriptionExists,
        "a second follow",
    );
    let unfollow = |lobby| {
        R::Unfollow(pb::UnfollowRequest {
            game_id: unknown.clone(),
            lobby,
        })
    };
    refused(
        conn.call(unfollow(false)).await,
        Reason::SubscriptionNotFound,
        "unfollow unknown",
    );
    refused(
        conn.call(unfollow(true)).await,
        Reason::InvalidField,
        "unfollow lobby and game",
    );
    let play = R::Play(pb::PlayRequest {
        context: ctx("p1"),
        r#move: Some(mv.clone()),
    });
    refused(
        conn.call(play).await,
        Reason::WrongPhase,
        "a move in deployment",
    );
    let mut other = Connection::open(Door::Grpc, &channel, http, "bad-eve").await;
    let confirm = R::Confirm(pb::ConfirmRequest { context: ctx("e1") });
    refused(other.call(confirm).await, Reason::NotSeated, "not seated");
    let auth = R::Authenticate(pb::AuthenticateRequest { token: "x".into() });
    refused(
        conn.call(auth).await,
        Reason::WrongPhase,
        "authenticate twice",
    );
    conn.send_message(pb::ConnectRequest {
        request_id: 0,
        request: Some(R::GetMyRating(pb::GetMyRatingRequest {})),
    })
    .await;
    refused(conn.answer(0).await, Reason::InvalidField, "request id 0");
    conn.send_message(pb::ConnectRequest {
        request_id: 77,
        request: None,
    })
    .await;
    refused(
        conn.answer(77).await,
        Reason::UnknownOperation,
        "no request",
    );
    conn.send_bytes(vec![0xff; 5000]).await;
    refused(
        conn.answer(0).await,
        Reason::RequestTooLarge,
        "a frame over the limit",
    );
    conn.send_bytes(vec![0x0a, 0xff, 0xff]).await;
    refused(
        conn.answer(0).await,
        Reason::MalformedRequest,
        "a cut frame",
    );
    conn.send_text("{\"type\":\"subscribe\"}").await;
    refused(
        conn.answer(0).await,
        Reason::MalformedRequest,
        "a text frame",
    );

    // Random frames: each is answered once, on its id (0 when unreadable), with a reason that
    // is a client's, and the connection goes on.
    let valid = pb::ConnectRequest {
        request_id: 5,
        request: Some(R::Play(pb::PlayRequest {
            context: ctx("r"),
            r#move: Some(mv),
        })),
    };
    let valid = prost::Message::encode_to_vec(&valid);
    let mut seed: u64 = 0x0dd_f00d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..300u64 {
        let frame: Vec<u8> = match round % 3 {
            0 => (0..next() % 64).map(|_| next() as u8).collect(),
            1 => valid[..(next() as usize % valid.len())].to_vec(),
            _ => {
                let mut bytes = valid.clone();
                let at = next() as usize % bytes.len();
                bytes[at] = next() as u8;
                bytes
            }
        };
        let id = match <pb::ConnectRequest as prost::Message>::decode(frame.as_slice()) {
            Ok(request) => request.request_id,
            Err(_) => 0,
        };
        conn.send_bytes(frame.clone()).await;
        let answer = loop {
            let message = conn.message().await;
            match message.item {
                Some(pb::server_message::Item::Refusal(refusal)) if refusal.request_id == id => {
                    break Err(refusal);
                }
                Some(pb::server_message::Item::Answer(answer)) if answer.request_id == id => {
                    break Ok(answer);
                }
                Some(pb::server_message::Item::Event(_) | pb::server_message::Item::Status(_)) => {}
                other => panic!("frame {frame:?}: unexpected {other:?}"),
            }
        };
        if let Err(refusal) = answer {
            let reason = Reason::from_name(&refusal.reason)
                .unwrap_or_else(|| panic!("frame {frame:?}: unknown reason {refusal:?}"));
            let code = tonic::Code::from(refusal.code);
            assert_eq!(reason.code(), code, "frame {frame:?}");
            assert!(
                !matches!(
                    code,
                    tonic::Code::Internal | tonic::Code::Unknown | tonic::Code::Unavailable
                ),
                "frame {frame:?}: a client's mistake answered as a server fault: {refusal:?}"
            );
        }
    }
    // Still open and answering.
    match conn.call(R::GetMyRating(pb::GetMyRatingRequest {})).await {
        Ok(_) | Err(_) => {}
    }
    let view = conn
        .call(R::GetGame(pb::PlayerServiceGetGameRequest {
            game_id: game_id.clone(),
            spectate: false,
        }))
        .await;
    assert!(matches!(view, Ok(A::GetGame(_))), "{view:?}");
}

/// A binary WebSocket that sends no `Authorization` header authenticates with its first frame;
/// anything else first is refused and closed (1008).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_websocket_authenticates_with_its_first_frame() {
    let db = TestDatabase::create().await;
    let server = Server::start("connect-auth", db.url()).await;
    let http = server.http_addr().expect("the HTTP listener");
    let socket = ws_upgrade(http, None, true).await.expect("upgrade");
    let mut conn = Connection::from_socket(socket, "auth-ann");
    let answer = conn
        .call(R::Authenticate(pb::AuthenticateRequest {
            token: gateway::token("auth-ann"),
        }))
        .await;
    match answer {
        Ok(A::Authenticate(who)) => assert_eq!(who.player, "auth-ann"),
        other => panic!("{other:?}"),
    }
    let rating = conn.call(R::GetMyRating(pb::GetMyRatingRequest {})).await;
    assert!(
        !matches!(rating, Err(ref r) if r.reason == "NOT_AUTHENTICATED"),
        "{rating:?}"
    );

    let socket = ws_upgrade(http, None, true).await.expect("upgrade");
    let mut anonymous = Connection::from_socket(socket, "nobody");
    let id = anonymous
        .send(R::GetMyRating(pb::GetMyRatingRequest {}))
        .await;
    match anonymous.answer(id).await {
        Err(refusal) => assert_eq!(refusal.reason, "NOT_AUTHENTICATED"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(anonymous.read().await, Read::Ended(Some(1008))));
}
