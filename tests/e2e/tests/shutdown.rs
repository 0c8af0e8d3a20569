//! Graceful shutdown: on SIGTERM every player stream is told to reconnect (with the sequence
//! number to resume from), and the process exits within its grace period even though a stream
//! was open.

use hidden_front_e2e::client::create_game;
use hidden_front_e2e::gateway::{self, PlayerClient, next_item};
use hidden_front_e2e::{Server, TestDatabase, pb};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_tells_streams_to_reconnect_and_exits_within_the_grace_period() {
    let db = TestDatabase::create().await;
    let mut server =
        Server::start_with_args("term", db.url(), &["--shutdown-grace-seconds", "3"]).await;
    let mut session = server.connect().await;
    let created = create_game(&mut session, "tia", "tom", "term").await;
    let mut tia = PlayerClient::new(gateway::channel(server.addr()).await, "tia");
    let mut stream = tia
        .subscribe(&created.game_id, 1, false)
        .await
        .expect("Subscribe");
    // The stream is live: it delivered the events south may see (north's draft, the last of the
    // creation events, is not one of them).
    let mut last_seq = 0;
    while last_seq < created.version - 1 {
        match next_item(&mut stream, "before SIGTERM").await.unwrap() {
            Some(pb::SubscribeResponse {
                item: Some(pb::subscribe_response::Item::Event(e)),
            }) => last_seq = e.seq,
            other => panic!("expected an event, got {other:?}"),
        }
    }

    let exit = server.terminate(Duration::from_secs(20));

    let hint = match next_item(&mut stream, "after SIGTERM").await {
        Ok(Some(pb::SubscribeResponse {
            item: Some(pb::subscribe_response::Item::Reconnect(r)),
        })) => r,
        Ok(Some(other)) => panic!("expected a reconnect hint, got {other:?}"),
        Ok(None) | Err(_) => panic!("the stream ended without a reconnect hint"),
    };
    // Resume after everything the stream has passed, hidden events included.
    assert_eq!(hint.resume_from_seq, created.version + 1);
    let status = exit.expect("the process did not exit within 20 s of SIGTERM (grace: 3 s)");
    assert!(status.success(), "exit status {status:?}");
}
