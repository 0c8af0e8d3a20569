//! `hidden-front replay export` and `replay verify` against a running server (real binary,
//! real gRPC, real Postgres): a Junqi game played to its end and a Gunjin Shogi game resigned
//! in deployment are exported from the session's internal port and verify; a changed fight
//! fails at its line; a game still on and an unknown game are refused.

use hidden_front_e2e::cli::{TempFile, run, text};
use hidden_front_e2e::client::{self, get_game, phase_of, side_of};
use hidden_front_e2e::player::engine_side;
use hidden_front_e2e::{Player, Server, TestDatabase, pb, play_to_end};
use hidden_front_replay::Replay;
use hidden_front_rules::{EndReason, Outcome, Side};
use std::path::Path;

/// A random Junqi game ends well within this: at most 49 fights, at most 100 plies between.
const MAX_PLIES: usize = 50 * 101;

/// Exports `game_id` into `file`, then verifies the file; returns the parsed replay. (The
/// outage tests use it too.)
pub(crate) async fn export_and_verify(session: &str, game_id: &str, file: &TempFile) -> Replay {
    let export = run(&[
        "replay",
        "export",
        game_id,
        "--session-url",
        session,
        "-o",
        file.path(),
    ])
    .await;
    assert!(export.status.success(), "export: {}", text(&export.stderr));
    let verify = run(&["replay", "verify", file.path()]).await;
    assert!(verify.status.success(), "verify: {}", text(&verify.stderr));
    let written = std::fs::read_to_string(Path::new(file.path())).expect("the exported file");
    let replay = Replay::parse(&written).expect("the export parses");
    let said = text(&verify.stdout);
    assert!(
        said.contains(&format!(
            "ok, {} events, {} plies",
            replay.entries().len(),
            replay.plies()
        )),
        "{said}"
    );
    replay
}

/// The replay agrees with what the session says of the game.
fn agrees(replay: &Replay, view: &pb::GameView, south: &str, north: &str) {
    let header = replay.header();
    assert_eq!(header.game_id.as_deref(), Some(view.game_id.as_str()));
    assert_eq!(header.players, [south.to_string(), north.to_string()]);
    let tc = header.time_control.as_ref().expect("the time control");
    assert_eq!(tc.name, "relaxed");
    assert_eq!(replay.rules().name(), view.rules);
    assert_eq!(replay.entries().len() as u64, view.version);
    assert_eq!(replay.plies(), view.plies);
    let outcome = view.outcome.as_ref().expect("an outcome");
    let winner = side_of(outcome.winner);
    let want_winner = (winner != pb::Side::Unspecified).then(|| engine_side(winner));
    assert_eq!(replay.outcome().winner, want_winner);
    // Every event carries the time the session's store committed it, never going backwards.
    let times: Vec<_> = replay.entries().iter().map(|e| e.at).collect();
    assert!(times.iter().all(Option::is_some), "{times:?}");
    assert!(times.windows(2).all(|t| t[0] <= t[1]), "{times:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_games_export_from_a_running_server_and_verify() {
    let db = TestDatabase::create().await;
    let server = Server::start("server", db.url()).await;
    let session = format!("http://{}", server.session_addr());
    let mut client = server.connect().await;

    // A Junqi game played to its end by random legal moves.
    let created = client::create_game(&mut client, "ana", "ben", "replay-junqi").await;
    let game_id = created.game_id.clone();
    let mut players = [
        Player::new(pb::Side::South, 0x7265_0001),
        Player::new(pb::Side::North, 0x7265_0002),
    ];

    // Before the end the export is refused, naming the phase.
    let early = TempFile::new("replay", "early.txt");
    let refused = run(&[
        "replay",
        "export",
        &game_id,
        "--session-url",
        &session,
        "-o",
        early.path(),
    ])
    .await;
    assert!(!refused.status.success());
    let said = text(&refused.stderr);
    assert!(
        said.contains("has not ended (it is in its deployment phase)"),
        "{said}"
    );
    assert!(
        !Path::new(early.path()).exists(),
        "nothing written for a refused export"
    );

    for player in &mut players {
        player.deploy(&mut client, &game_id).await;
    }
    let first = side_of(created.first_mover);
    play_to_end(&mut client, &game_id, &mut players, first, MAX_PLIES).await;
    let view = get_game(&mut client, &game_id, pb::Viewer::Spectator).await;
    assert_eq!(phase_of(&view), pb::Phase::Ended);

    let file = TempFile::new("replay", "junqi.txt");
    let replay = export_and_verify(&session, &game_id, &file).await;
    agrees(&replay, &view, "ana", "ben");

    // One fight's outcome changed: verify fails on that line and says what the engine records.
    let written = std::fs::read_to_string(Path::new(file.path())).expect("the file");
    let (index, line) = written
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(" fight ") && l.contains(" attacker-wins"))
        .expect("a won fight in a whole game");
    let changed: String = written
        .lines()
        .map(|l| {
            if l == line {
                l.replacen(" attacker-wins", " defender-wins", 1)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let tampered = TempFile::new("replay", "tampered.txt");
    std::fs::write(&tampered.0, changed).expect("write");
    let verify = run(&["replay", "verify", tampered.path()]).await;
    assert!(!verify.status.success());
    let said = text(&verify.stderr);
    assert!(
        said.contains(&format!("line {}: the engine's event here is", index + 1)),
        "{said}"
    );

    // A Gunjin Shogi game resigned during deployment.
    let gunjin = client
        .create_game(pb::CreateGameRequest {
            south_player: "kenji".into(),
            north_player: "yumi".into(),
            rules: "gunjin-shogi+y-gates".into(),
            time_control: client::untimed(),
            idempotency_key: "replay-gunjin".into(),
        })
        .await
        .expect("CreateGame")
        .into_inner();
    client::resign(
        &mut client,
        &gunjin.game_id,
        pb::Side::North,
        "give-up",
        None,
    )
    .await
    .expect("Resign");
    let view = get_game(&mut client, &gunjin.game_id, pb::Viewer::Spectator).await;
    let file = TempFile::new("replay", "gunjin.txt");
    let replay = export_and_verify(&session, &gunjin.game_id, &file).await;
    agrees(&replay, &view, "kenji", "yumi");
    assert_eq!(replay.plies(), 0);
    assert_eq!(
        replay.outcome(),
        Outcome::win(Side::South, EndReason::Resigned)
    );

    // A game nobody created.
    let unknown = "0190c0de-0000-7000-8000-00000000dead";
    let refused = run(&["replay", "export", unknown, "--session-url", &session]).await;
    assert!(!refused.status.success());
    let said = text(&refused.stderr);
    assert!(said.contains("NotFound"), "{said}");
}
