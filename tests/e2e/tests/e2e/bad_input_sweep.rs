//! Bad input through the real server (`serve`, every service, fresh Postgres): no input makes it
//! fail, leak, or reach Postgres with something Postgres refuses.
//!
//! - `every_rpc_survives_bad_input`: every method of every `hiddenfront.v1` service, enumerated
//!   from the embedded descriptor set (a new RPC is swept without being listed here), on the
//!   port that serves it: a baseline request as valid as possible, every single-field mutation
//!   (empty, 10 KiB, NUL, control characters, invalid UTF-8, invalid enums, extreme numbers,
//!   1000-element lists, unset sub-messages), random bytes, a truncated and an oversized message.
//!   Every answer: no UNKNOWN/INTERNAL/UNAVAILABLE/DATA_LOSS, a message of at most 1 KiB that
//!   quotes no offending value whole, and on a refusal google.rpc details with an ErrorInfo
//!   reason (SCREAMING_SNAKE_CASE) and, for INVALID_ARGUMENT to a single-field mutation, a
//!   BadRequest violation naming the field. Afterwards `hf_store_errors_total` is unchanged, the
//!   process lives and a normal game plays to its end. A failure prints a compact table.
//! - One focused test per known hole, so that each failure reads on its own: a NUL in an
//!   idempotency key, a player id, a gateway id, a matchmaking id; a 10 KiB rule-set name through
//!   the gateway; random bytes as a SubmitMove; a swap naming a square outside the own half or
//!   the same square twice.

use futures_util::StreamExt;
use hidden_front_e2e::client::{Client, context, create_game, get_game, side_of};
use hidden_front_e2e::gateway::{self, authed};
use hidden_front_e2e::metrics::{STORE_ERRORS, scrape, value};
use hidden_front_e2e::sweep::{
    self, Answer, Goods, OPPONENT, PLAYER, Route, Sweep, best_goods, check_answer, descriptor_pool,
    is_screaming_snake, matchmaking, mutations, target,
};
use hidden_front_e2e::{Player, Server, TestDatabase, pb, play_to_end};
use hidden_front_rules::GameRng;
use prost::Message;
use prost_reflect::MethodDescriptor;
use tonic::{Code, Status};
use tonic_types::StatusExt;

/// The gateway limits each player to 10 actions a second (burst 20); the sweep sends thousands
/// as one player, and RATE_LIMITED answers would hide what the server does with the input. So
/// the limit is lifted for these tests.
const SERVER_ARGS: &[&str] = &[
    "--actions-per-second",
    "1000000",
    "--admin-token",
    "sweep=sweep-operator-token-0123456789",
];

/// The operator token of [`SERVER_ARGS`], which the sweep sends to `AdminService`.
const OPERATOR_TOKEN: &str = "sweep-operator-token-0123456789";

/// Requests of one method in flight at once.
const IN_FLIGHT: usize = 8;

/// A random game ends well within this many plies.
const MAX_PLIES: usize = 3000;

/// A 10 KiB string.
fn big() -> String {
    "x".repeat(sweep::BIG_STRING)
}

/// The webhook endpoint the sweep's server delivers to (nothing listens there: deliveries fail
/// and are retried, harmlessly), so `WebhookAdminService` is served and has an endpoint to name.
const WEBHOOKS_CONFIG: &str = r#"{"endpoints": [{"name": "sweep-hooks",
    "url": "http://127.0.0.1:9/hooks", "secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}]}"#;

async fn start(name: &str) -> (TestDatabase, Server) {
    let db = TestDatabase::create().await;
    let config =
        std::env::temp_dir().join(format!("hf-sweep-webhooks-{}.json", std::process::id()));
    std::fs::write(&config, WEBHOOKS_CONFIG).expect("write the webhooks config");
    let config = config.to_str().expect("a UTF-8 temporary path").to_owned();
    let mut args = SERVER_ARGS.to_vec();
    args.extend(["--webhooks-config", config.as_str()]);
    let server = Server::start_with_args(name, db.url(), &args).await;
    (db, server)
}

/// `hf_store_errors_total`, every label set summed.
async fn store_errors(server: &Server) -> u64 {
    let addr = server
        .metrics_addr()
        .expect("the metrics address was printed");
    value(&scrape(addr).await, STORE_ERRORS, &[]) as u64
}

/// The route of a method: the public port with the player's token for `PlayerService`, the
/// internal port for the internal services (with the operator's token for the operator APIs). Any
/// other service fails the test: the sweep must be told where it is served.
fn route_for(method: &MethodDescriptor, public: &Route, internal: &Route) -> Route {
    match method.parent_service().name() {
        "PlayerService" => public.clone(),
        "SessionService" | "ClockService" | "MatchmakingService" => internal.clone(),
        "AdminService" | "WebhookAdminService" | "OrganiserService" => Route {
            token: Some(OPERATOR_TOKEN.to_owned()),
            ..internal.clone()
        },
        other => panic!("the sweep does not know which port serves {other}: add it to route_for"),
    }
}

/// Plays a normal game through the session API, deployments and all, to its end.
async fn normal_game(session: &mut Client, key: &str) {
    let created = create_game(session, PLAYER, OPPONENT, key).await;
    let mut players = [
        Player::new(pb::Side::South, 0x5eed_5001),
        Player::new(pb::Side::North, 0x5eed_5002),
    ];
    for player in &mut players {
        player.deploy(session, &created.game_id).await;
    }
    play_to_end(
        session,
        &created.game_id,
        &mut players,
        side_of(created.first_mover),
        MAX_PLIES,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rpc_survives_bad_input() {
    let (_db, mut server) = start("bad-input-sweep").await;
    let mut session = server.connect().await;
    let public = Route {
        channel: gateway::channel(server.addr()).await,
        token: Some(gateway::token(PLAYER)),
    };
    let internal = Route {
        channel: gateway::channel(server.session_addr()).await,
        token: None,
    };
    let pool = descriptor_pool();
    let methods = sweep::methods(&pool);
    let mut rng = GameRng::from_seed(0xbad_1e55);
    let mut result = Sweep::default();
    let errors_before = store_errors(&server).await;
    let started = std::time::Instant::now();

    for (n, method) in methods.iter().enumerate() {
        let route = route_for(method, &public, &internal);
        // The baseline as valid as possible: in a game in deployment, or, when that is refused
        // as out of place (a move, a draw offer), in a game in play with the player to move, or
        // (answering a draw) with the opponent's draw offer pending.
        let mut goods = best_goods(
            &server,
            &mut session,
            n,
            method,
            async |goods: &mut Goods| {
                let probe = sweep::baseline(method, goods).encode_to_vec();
                matches!(
                    sweep::call(&route, method, probe).await,
                    Answer::Refused(status) if status.code() == Code::FailedPrecondition
                )
            },
        )
        .await;
        let requests = mutations(|| sweep::baseline(method, &mut goods), &mut rng);
        let answers: Vec<Answer> = futures_util::stream::iter(requests.iter())
            .map(|m| sweep::call(&route, method, m.body.clone()))
            .buffered(IN_FLIGHT)
            .collect()
            .await;
        let name = target(method);
        for (request, answer) in requests.iter().zip(&answers) {
            let (code, len, mut problems) = check_answer(answer, &request.expect);
            // Not served where route_for sent it, or a baseline refused as malformed: the
            // method was not really swept.
            if request.label == "baseline"
                && (code == "UNIMPLEMENTED" || code == "INVALID_ARGUMENT")
            {
                problems.push(sweep::Problem::Malformed(format!(
                    "baseline answered {code}: wrong port, or a bad baseline (Goods)"
                )));
            }
            result.record(&name, &request.label, &code, len, problems);
        }
    }
    // `Connect`: each request a connection can send, as a connection's only message.
    let (connect, variants) = sweep::connect_variants(&pool);
    for (n, variant) in variants.iter().enumerate() {
        let n = methods.len() + n;
        let mut goods = best_goods(
            &server,
            &mut session,
            n,
            &connect,
            async |goods: &mut Goods| {
                let probe = sweep::connect_baseline(variant, goods).encode_to_vec();
                matches!(
                    sweep::call_connect(&public, &connect, probe).await,
                    Answer::Refused(status) if status.code() == Code::FailedPrecondition
                )
            },
        )
        .await;
        // The variant's own fields and the request id; a change of another variant's field
        // would replace this one (a oneof), which is that variant's sweep.
        let others: Vec<&str> = variants
            .iter()
            .filter(|v| v.name() != variant.name())
            .map(|v| v.name())
            .collect();
        let requests: Vec<_> = mutations(|| sweep::connect_baseline(variant, &mut goods), &mut rng)
            .into_iter()
            .filter(|m| {
                !others.iter().any(|other| {
                    m.label.starts_with(&format!("{other}."))
                        || m.label.starts_with(&format!("{other}="))
                })
            })
            .collect();
        let answers: Vec<Answer> = futures_util::stream::iter(requests.iter())
            .map(|m| sweep::call_connect(&public, &connect, m.body.clone()))
            .buffered(IN_FLIGHT)
            .collect()
            .await;
        let name = format!("{}.{}", sweep::CONNECT, variant.name());
        for (request, answer) in requests.iter().zip(&answers) {
            let (code, len, mut problems) = check_answer(answer, &request.expect);
            // `authenticate` is the WebSocket's first frame: on gRPC it is always refused as out
            // of place; any other baseline must be read and judged.
            if request.label == "baseline"
                && (code == "UNIMPLEMENTED" || code == "INVALID_ARGUMENT")
            {
                problems.push(sweep::Problem::Malformed(format!(
                    "baseline answered {code}: a bad baseline (Goods)"
                )));
            }
            result.record(&name, &request.label, &code, len, problems);
        }
    }
    eprintln!(
        "swept {} methods and {} Connect requests with {} requests in {:?}",
        methods.len(),
        variants.len(),
        result.answers(),
        started.elapsed()
    );

    let errors_after = store_errors(&server).await;
    if errors_after != errors_before {
        result.after(
            STORE_ERRORS,
            format!("rose from {errors_before} to {errors_after}: bad input reached Postgres"),
        );
    }
    if !server.is_running() {
        result.after("server", "the process exited during the sweep".into());
    } else {
        let mut fresh = server.connect().await;
        normal_game(&mut fresh, "after-the-sweep").await;
    }
    result.assert_clean("the gRPC bad-input sweep");
}

/// What is wrong with `answer` to a request that must be refused as INVALID_ARGUMENT with a
/// short message, a stable reason and a field violation for `field` (its proto path, e.g.
/// `context.idempotency_key`); `None` when nothing is.
fn field_refusal_problem<T: std::fmt::Debug>(
    answer: Result<T, Status>,
    field: &str,
    what: &str,
) -> Option<String> {
    let status = match answer {
        Ok(accepted) => {
            let accepted = format!("{accepted:?}");
            return Some(format!(
                "{what}: accepted: {}",
                &accepted[..accepted.len().min(160)]
            ));
        }
        Err(status) => status,
    };
    let mut wrong = Vec::new();
    if status.code() != Code::InvalidArgument {
        wrong.push(format!("code {:?}", status.code()));
    }
    let message = status.message();
    if message.len() > sweep::MAX_ERROR_MESSAGE || sweep::echoes(message) {
        wrong.push(format!(
            "a message of {} bytes (at most {}, quoting no value whole)",
            message.len(),
            sweep::MAX_ERROR_MESSAGE
        ));
    }
    match status.check_error_details() {
        Err(e) => wrong.push(format!("details do not decode: {e}")),
        Ok(details) => {
            let reason = details.error_info().map(|i| i.reason.clone());
            if !reason.as_deref().is_some_and(is_screaming_snake) {
                wrong.push(format!("ErrorInfo reason {reason:?}"));
            }
            let fields: Vec<&str> = details
                .bad_request()
                .map(|b| {
                    b.field_violations
                        .iter()
                        .map(|v| v.field.as_str())
                        .collect()
                })
                .unwrap_or_default();
            if !fields.contains(&field) {
                wrong.push(format!("no violation for {field} (violations {fields:?})"));
            }
        }
    }
    let shown: String = message.chars().take(160).collect();
    (!wrong.is_empty()).then(|| format!("{what}: {}; message {shown:?}", wrong.join("; ")))
}

/// What is wrong after the requests: `hf_store_errors_total` no longer `before` (the input
/// reached Postgres), or the server gone.
async fn store_problems(server: &mut Server, before: u64) -> Vec<String> {
    let mut problems = Vec::new();
    if !server.is_running() {
        problems.push("the server exited".to_string());
        return problems;
    }
    let after = store_errors(server).await;
    if after != before {
        problems.push(format!(
            "{STORE_ERRORS} rose from {before} to {after}: the input reached Postgres"
        ));
    }
    problems
}

/// Fails with every problem, one a line.
#[track_caller]
fn assert_no_problems(problems: &[String]) {
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_in_an_idempotency_key_is_refused_naming_it() {
    let (_db, mut server) = start("nul-idempotency-key").await;
    let mut session = server.connect().await;
    let game = create_game(&mut session, PLAYER, OPPONENT, "nul-key").await;
    let before = store_errors(&server).await;
    let answer = session
        .submit_move(pb::SubmitMoveRequest {
            context: context(&game.game_id, pb::Side::South, "key\0with-nul", None),
            r#move: Some(gateway::mv("B6", "B7")),
        })
        .await;
    let mut problems: Vec<String> =
        field_refusal_problem(answer, "context.idempotency_key", "SubmitMove")
            .into_iter()
            .collect();
    problems.extend(store_problems(&mut server, before).await);
    assert_no_problems(&problems);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_in_a_player_id_is_refused_naming_it() {
    let (_db, mut server) = start("nul-player-id").await;
    let mut session = server.connect().await;
    let before = store_errors(&server).await;
    let mut problems = Vec::new();
    for (south, north, field) in [
        ("al\0ice", OPPONENT, "south_player"),
        (PLAYER, "b\0b", "north_player"),
    ] {
        let answer = session
            .create_game(pb::CreateGameRequest {
                south_player: south.into(),
                north_player: north.into(),
                rules: String::new(),
                time_control: None,
                idempotency_key: format!("nul-{field}"),
            })
            .await;
        problems.extend(field_refusal_problem(answer, field, "CreateGame"));
    }
    problems.extend(store_problems(&mut server, before).await);
    assert_no_problems(&problems);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_in_a_gateway_id_is_refused_naming_it() {
    let (_db, mut server) = start("nul-gateway-id").await;
    let mut session = server.connect().await;
    let game = create_game(&mut session, PLAYER, OPPONENT, "nul-gateway").await;
    let before = store_errors(&server).await;
    let answer = session
        .report_presence(pb::ReportPresenceRequest {
            game_id: game.game_id.clone(),
            side: pb::Side::South as i32,
            connected: true,
            gateway_id: "gateway\0one".into(),
            lease_seconds: 30,
        })
        .await;
    let mut problems: Vec<String> = field_refusal_problem(answer, "gateway_id", "ReportPresence")
        .into_iter()
        .collect();
    problems.extend(store_problems(&mut server, before).await);
    assert_no_problems(&problems);
}

/// The default queue.
fn queue() -> Option<pb::Queue> {
    Some(pb::Queue {
        rules: "hidden-front".into(),
        time_control: "online".into(),
        rated: false,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_in_a_matchmaking_id_is_refused_naming_it() {
    let (_db, mut server) = start("nul-matchmaking-id").await;
    let mut internal = matchmaking(&server).await;
    let before = store_errors(&server).await;
    let mut problems = Vec::new();
    for (player, ticket, field) in [
        ("al\0ice", "ticket-1", "player"),
        (PLAYER, "ticket\0two", "ticket_id"),
    ] {
        let answer = internal
            .enqueue(pb::EnqueueRequest {
                player: player.into(),
                ticket_id: ticket.into(),
                queue: queue(),
                ttl_seconds: 60,
            })
            .await;
        problems.extend(field_refusal_problem(
            answer,
            field,
            "MatchmakingService/Enqueue",
        ));
    }
    let mut player = gateway::PlayerClient::new(gateway::channel(server.addr()).await, PLAYER);
    let answer = player
        .inner()
        .find_match(authed(
            &gateway::token(PLAYER),
            pb::FindMatchRequest {
                ticket_id: "ticket\0three".into(),
                queue: queue(),
                ttl_seconds: 60,
            },
        ))
        .await;
    problems.extend(field_refusal_problem(
        answer,
        "ticket_id",
        "PlayerService/FindMatch",
    ));
    problems.extend(store_problems(&mut server, before).await);
    assert_no_problems(&problems);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_rules_name_is_refused_by_the_gateway() {
    let (_db, mut server) = start("huge-rules").await;
    let before = store_errors(&server).await;
    let token = gateway::token(PLAYER);
    let mut player = gateway::PlayerClient::new(gateway::channel(server.addr()).await, PLAYER);
    let client = player.inner();
    let mut problems = Vec::new();
    let answer = client
        .find_match(authed(
            &token,
            pb::FindMatchRequest {
                ticket_id: "huge-rules-ticket".into(),
                queue: Some(pb::Queue {
                    rules: big(),
                    time_control: "online".into(),
                    rated: false,
                }),
                ttl_seconds: 60,
            },
        ))
        .await;
    problems.extend(field_refusal_problem(answer, "queue.rules", "FindMatch"));
    let answer = client
        .create_invite(authed(
            &token,
            pb::PlayerServiceCreateInviteRequest {
                invite_id: "huge-rules-invite".into(),
                rules: big(),
                time_control: String::new(),
            },
        ))
        .await;
    problems.extend(field_refusal_problem(answer, "rules", "CreateInvite"));
    let answer = client
        .play_computer(authed(
            &token,
            pb::PlayerServicePlayComputerRequest {
                request_id: "huge-rules-computer".into(),
                rules: big(),
                seat: pb::Side::South as i32,
                level: String::new(),
                time_control: String::new(),
            },
        ))
        .await;
    problems.extend(field_refusal_problem(answer, "rules", "PlayComputer"));
    for (request_id, level) in [
        ("huge-level", big()),
        ("unknown-level", "grandmaster".into()),
    ] {
        let answer = client
            .play_computer(authed(
                &token,
                pb::PlayerServicePlayComputerRequest {
                    request_id: request_id.into(),
                    rules: String::new(),
                    seat: pb::Side::South as i32,
                    level,
                    time_control: String::new(),
                },
            ))
            .await;
        problems.extend(field_refusal_problem(answer, "level", "PlayComputer"));
    }
    for (request_id, time_control) in [("huge-clock", big()), ("unknown-clock", "blitz".into())] {
        let answer = client
            .play_computer(authed(
                &token,
                pb::PlayerServicePlayComputerRequest {
                    request_id: request_id.into(),
                    time_control,
                    ..Default::default()
                },
            ))
            .await;
        problems.extend(field_refusal_problem(
            answer,
            "time_control",
            "PlayComputer",
        ));
    }
    problems.extend(store_problems(&mut server, before).await);
    assert_no_problems(&problems);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_bytes_as_a_move_are_invalid_argument() {
    let (_db, mut server) = start("random-move").await;
    let pool = descriptor_pool();
    let method = pool
        .get_service_by_name("hiddenfront.v1.SessionService")
        .and_then(|s| s.methods().find(|m| m.name() == "SubmitMove"))
        .expect("SessionService/SubmitMove in the descriptors");
    let route = Route {
        channel: gateway::channel(server.session_addr()).await,
        token: None,
    };
    let mut rng = GameRng::from_seed(0x5eed_b17e);
    let garbage: Vec<Vec<u8>> = sweep::random_bytes(&mut rng, 8)
        .into_iter()
        .filter(|bytes| pb::SubmitMoveRequest::decode(bytes.as_slice()).is_err())
        .take(3)
        .collect();
    assert_eq!(garbage.len(), 3, "random bytes that happen to decode");
    let mut problems = Vec::new();
    for bytes in garbage {
        let len = bytes.len();
        match sweep::call(&route, &method, bytes).await {
            Answer::Refused(status) => {
                let reason = status
                    .get_error_details()
                    .error_info()
                    .map(|i| i.reason.clone());
                if status.code() != Code::InvalidArgument
                    || !reason.as_deref().is_some_and(is_screaming_snake)
                {
                    problems.push(format!(
                        "{len} random bytes as a SubmitMove: {:?}, reason {reason:?}: {:?}",
                        status.code(),
                        status.message()
                    ));
                }
            }
            other => problems.push(format!("{len} random bytes as a SubmitMove: {other:?}")),
        }
    }
    if !server.is_running() {
        problems.push("the server exited".into());
    }
    assert_no_problems(&problems);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_outside_the_own_half_or_of_one_square_is_refused() {
    let (_db, server) = start("bad-swap").await;
    let mut session = server.connect().await;
    let game = create_game(&mut session, PLAYER, OPPONENT, "bad-swap").await;
    let squares = |view: &pb::GameView| -> Vec<String> {
        view.own_deployment
            .as_ref()
            .map(|d| d.placements.iter().map(|p| p.square.clone()).collect())
            .unwrap_or_default()
    };
    let south = squares(&get_game(&mut session, &game.game_id, pb::Viewer::South).await);
    let north = squares(&get_game(&mut session, &game.game_id, pb::Viewer::North).await);
    assert!(
        !south.is_empty() && !north.is_empty(),
        "both sides have a draft"
    );
    let cases = [
        (
            "a square of the other half",
            south[0].clone(),
            north[0].clone(),
        ),
        ("the same square twice", south[0].clone(), south[0].clone()),
    ];
    let mut problems = Vec::new();
    for (i, (what, a, b)) in cases.into_iter().enumerate() {
        let before = get_game(&mut session, &game.game_id, pb::Viewer::South).await;
        let answer = session
            .swap_pieces(pb::SwapPiecesRequest {
                context: context(&game.game_id, pb::Side::South, &format!("swap-{i}"), None),
                square_a: a.clone(),
                square_b: b.clone(),
            })
            .await;
        let after = get_game(&mut session, &game.game_id, pb::Viewer::South).await;
        if after.version != before.version {
            problems.push(format!(
                "SwapPieces({a}, {b}), {what}: the game went from version {} to {}",
                before.version, after.version
            ));
        }
        match answer {
            Err(status)
                if status.code() == Code::InvalidArgument
                    && status.message().len() <= sweep::MAX_ERROR_MESSAGE => {}
            Err(status) => problems.push(format!(
                "SwapPieces({a}, {b}), {what}: {:?} {:?}",
                status.code(),
                status.message()
            )),
            Ok(_) => problems.push(format!("SwapPieces({a}, {b}), {what}: accepted")),
        }
    }
    assert_no_problems(&problems);
}
