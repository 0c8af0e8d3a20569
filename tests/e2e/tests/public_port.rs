//! The public port never serves the session's internal API: with the gateway and the session in
//! one process, `SessionService` (full information, no player authentication) answers only on
//! the internal port, and a player reaching the public port finds only `PlayerService`.

use hidden_front_e2e::client::{self, create_game};
use hidden_front_e2e::{Server, TestDatabase, pb};
use tonic::Code;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_api_is_not_on_the_public_port() {
    let db = TestDatabase::create().await;
    let server = Server::start("public-port", db.url()).await;
    assert_ne!(
        server.session_addr(),
        server.addr(),
        "a separate internal port"
    );

    let mut internal = server.connect().await;
    let created = create_game(&mut internal, "pia", "pat", "public-port").await;

    let mut public = client::connect(server.addr()).await;
    for viewer in [pb::Viewer::South, pb::Viewer::North, pb::Viewer::Spectator] {
        let refused = public
            .get_game(pb::GetGameRequest {
                game_id: created.game_id.clone(),
                viewer: viewer as i32,
            })
            .await
            .expect_err("the public port answered the session's GetGame");
        assert_eq!(refused.code(), Code::Unimplemented, "{refused:?}");
    }
    let refused = public
        .watch_game(pb::WatchGameRequest {
            game_id: created.game_id.clone(),
            from_seq: 1,
        })
        .await
        .expect_err("the public port answered the full-information WatchGame");
    assert_eq!(refused.code(), Code::Unimplemented);
    let refused = public
        .create_game(pb::CreateGameRequest {
            south_player: "x".into(),
            north_player: "y".into(),
            ..Default::default()
        })
        .await
        .expect_err("the public port created a game");
    assert_eq!(refused.code(), Code::Unimplemented);
}
