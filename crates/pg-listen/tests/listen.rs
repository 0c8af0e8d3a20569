//! The LISTEN/NOTIFY helper (`hidden_front_pg_listen`) against a real Postgres: it hears its
//! channels (and only those), and after its connection is killed or dropped it comes back,
//! says that notifications may have been missed, and hears again.
//!
//! Needs `DATABASE_URL` (e.g. `postgres://postgres@127.0.0.1:5432/postgres`); without it every
//! test here fails saying so. Channels carry a fresh name per test, so no database of their own
//! is needed.

use hidden_front_pg_listen::{Heard, Listen, dedicated_pool};
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use std::str::FromStr;
use std::time::Duration;
use uuid::Uuid;

/// How long a test waits for something that should come promptly before failing; never a sleep.
const DEADLINE: Duration = Duration::from_secs(15);

/// A pool on `DATABASE_URL`'s server whose connections carry `application`, so a test can find
/// (and kill) its own LISTEN connection.
async fn pool(application: &str) -> PgPool {
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| {
        panic!("DATABASE_URL is not set: these tests need a Postgres server, e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres")
    });
    let options = PgConnectOptions::from_str(&url)
        .expect("DATABASE_URL is a Postgres URL")
        .application_name(application);
    PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(DEADLINE)
        .connect_with(options)
        .await
        .unwrap_or_else(|error| panic!("cannot reach Postgres at DATABASE_URL: {error}"))
}

fn fresh(what: &str) -> String {
    format!("hf_test_{what}_{}", Uuid::new_v4().simple())
}

async fn notify(pool: &PgPool, channel: &str, payload: &str) {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(channel)
        .bind(payload)
        .execute(pool)
        .await
        .expect("NOTIFY");
}

async fn next(listen: &mut Listen) -> Heard {
    tokio::time::timeout(DEADLINE, listen.next())
        .await
        .expect("the listener hears something in time")
}

#[track_caller]
fn assert_notification(heard: Heard, channel: &str, payload: &str) {
    match heard {
        Heard::Notification(n) => {
            assert_eq!((n.channel(), n.payload()), (channel, payload));
        }
        Heard::MayHaveMissed => panic!("expected {channel}:{payload}, heard MayHaveMissed"),
    }
}

#[tokio::test]
async fn it_hears_its_channels_in_order_and_nothing_else() {
    let application = fresh("app");
    let pool = pool(&application).await;
    let (a, b, other) = (fresh("a"), fresh("b"), fresh("other"));
    let mut listen = Listen::connect(&dedicated_pool(&pool), &[&a, &b])
        .await
        .expect("LISTEN");
    // Notifications arrive in commit order: had the unlistened channel been heard, it would
    // come first.
    notify(&pool, &other, "not for us").await;
    notify(&pool, &a, "1").await;
    notify(&pool, &b, "2").await;
    assert_notification(next(&mut listen).await, &a, "1");
    assert_notification(next(&mut listen).await, &b, "2");
}

#[tokio::test]
async fn a_killed_connection_comes_back_and_says_it_may_have_missed_notifications() {
    let application = fresh("app");
    let pool = pool(&application).await;
    let channel = fresh("c");
    let mut listen = Listen::connect(&dedicated_pool(&pool), &[&channel])
        .await
        .expect("LISTEN");
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE application_name = $1 AND pid <> pg_backend_pid() AND query ILIKE 'LISTEN%'",
    )
    .bind(&application)
    .fetch_all(&pool)
    .await
    .expect("terminate the LISTEN connection");
    assert_eq!(killed, [true], "exactly our LISTEN connection was killed");
    assert!(matches!(next(&mut listen).await, Heard::MayHaveMissed));
    // Listening again on the same channel.
    notify(&pool, &channel, "after").await;
    assert_notification(next(&mut listen).await, &channel, "after");
}

#[tokio::test]
async fn a_dropped_connection_reconnects_and_says_so_again() {
    let application = fresh("app");
    let pool = pool(&application).await;
    let channel = fresh("c");
    let mut listen = Listen::connect(&dedicated_pool(&pool), &[&channel])
        .await
        .expect("LISTEN");
    notify(&pool, &channel, "before").await;
    assert_notification(next(&mut listen).await, &channel, "before");
    listen.reconnect();
    assert!(matches!(next(&mut listen).await, Heard::MayHaveMissed));
    notify(&pool, &channel, "after").await;
    assert_notification(next(&mut listen).await, &channel, "after");
}

#[tokio::test]
async fn the_first_connection_failure_is_returned() {
    let options = PgConnectOptions::new()
        .host("127.0.0.1")
        .port(1)
        .username("nobody");
    let unreachable = PgPoolOptions::new()
        .acquire_timeout(Duration::from_secs(2))
        .connect_lazy_with(options);
    assert!(
        Listen::connect(&dedicated_pool(&unreachable), &["c"])
            .await
            .is_err()
    );
}
