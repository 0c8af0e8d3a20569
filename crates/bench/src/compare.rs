//! Yardsticks measured in the same run, so a moves/s figure can be read against the machine:
//!
//! - [`pgbench`]: the Postgres commit limit — `pgbench` running one-row `INSERT` transactions
//!   in a fresh database at the server's durability (`synchronous_commit` as configured, and
//!   reported), with the same number of clients as the run has games (capped below
//!   `max_connections`). Every durable move is at least one such commit.
//! - [`echo`]: a plain tonic unary RPC (the standard `grpc.health.v1.Health/Check`, served by a
//!   tonic server in this process on a real loopback socket) called by as many concurrent callers
//!   as the run has games, over the same number of connections.

use crate::BenchError;
use crate::connections::{Pool, code_name};
use crate::report::{Latency, Load, latency_histogram};
use crate::server::{FreshDatabase, redact};
use parking_lot::Mutex;
use serde::Serialize;
use sqlx::{Connection, PgConnection};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

/// Clients pgbench leaves to other users of the Postgres server.
const RESERVED_CONNECTIONS: u32 = 15;

/// The pgbench figure.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PgbenchFigures {
    /// Clients pgbench ran.
    pub clients: u32,
    /// Seconds it ran.
    pub seconds: u64,
    /// Committed one-row insert transactions per second.
    pub tps: f64,
    /// Average latency pgbench reported, in ms.
    pub latency_avg_ms: Option<f64>,
    /// The database's `synchronous_commit`.
    pub synchronous_commit: String,
    /// The server's `fsync`.
    pub fsync: String,
    /// Machine load before.
    pub load_before: Load,
}

/// Runs pgbench against a fresh database on `admin_url`.
pub async fn pgbench(
    pgbench_binary: &PathBuf,
    admin_url: &str,
    clients: usize,
    seconds: u64,
) -> Result<PgbenchFigures, BenchError> {
    let database = FreshDatabase::create(admin_url, "hf_bench_pgbench").await?;
    let result = pgbench_in(pgbench_binary, &database, clients, seconds).await;
    let dropped = database.drop_database().await;
    let figures = result?;
    dropped?;
    Ok(figures)
}

async fn pgbench_in(
    pgbench_binary: &PathBuf,
    database: &FreshDatabase,
    clients: usize,
    seconds: u64,
) -> Result<PgbenchFigures, BenchError> {
    let db_error = |what: &str| {
        let what = what.to_string();
        move |source| BenchError::Database { what, source }
    };
    let mut conn = PgConnection::connect(database.url())
        .await
        .map_err(db_error("connecting to the pgbench database"))?;
    sqlx::query("CREATE TABLE bench_commit (id bigserial PRIMARY KEY, payload integer NOT NULL)")
        .execute(&mut conn)
        .await
        .map_err(db_error("creating the pgbench table"))?;
    let setting = async |conn: &mut PgConnection, name: &str| -> Result<String, BenchError> {
        sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(format!("SHOW {name}")))
            .fetch_one(conn)
            .await
            .map_err(db_error("reading settings"))
    };
    let synchronous_commit = setting(&mut conn, "synchronous_commit").await?;
    let fsync = setting(&mut conn, "fsync").await?;
    let max_connections: u32 = setting(&mut conn, "max_connections")
        .await?
        .parse()
        .unwrap_or(100);
    let in_use: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity")
        .fetch_one(&mut conn)
        .await
        .map_err(db_error("counting connections"))?;
    let _ = conn.close().await;
    let room = max_connections
        .saturating_sub(u32::try_from(in_use).unwrap_or(0))
        .saturating_sub(RESERVED_CONNECTIONS)
        .max(1);
    let clients = u32::try_from(clients).unwrap_or(u32::MAX).clamp(1, room);

    let script = std::env::temp_dir().join(format!("{}.sql", database.name()));
    std::fs::write(&script, "INSERT INTO bench_commit (payload) VALUES (1);\n")
        .map_err(|e| BenchError::io(format!("writing {}", script.display()), e))?;
    let load_before = Load::now();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(clients as usize);
    let output = tokio::process::Command::new(pgbench_binary)
        .arg("--no-vacuum")
        .args(["--client", &clients.to_string()])
        .args(["--jobs", &threads.to_string()])
        .args(["--time", &seconds.to_string()])
        .args(["--protocol", "prepared"])
        .arg("--file")
        .arg(&script)
        .arg(database.url())
        .output()
        .await
        .map_err(|e| BenchError::Pgbench(format!("cannot run {}: {e}", pgbench_binary.display())));
    let _ = std::fs::remove_file(&script);
    let output = output?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(BenchError::Pgbench(format!(
            "exited with {} on {}: {}",
            output.status,
            redact(database.url()),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let tps = parse_tps(&stdout).ok_or_else(|| {
        BenchError::Pgbench(format!("no \"tps = \" line in its output:\n{stdout}"))
    })?;
    Ok(PgbenchFigures {
        clients,
        seconds,
        tps,
        latency_avg_ms: parse_after(&stdout, "latency average = "),
        synchronous_commit,
        fsync,
        load_before,
    })
}

/// The number after `prefix` on the first line that has it.
fn parse_after(text: &str, prefix: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.trim().strip_prefix(prefix)?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// pgbench's throughput: `tps = 1234.5 (without initial connection time)`.
fn parse_tps(text: &str) -> Option<f64> {
    parse_after(text, "tps = ")
}

/// The echo figure.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EchoFigures {
    /// Concurrent callers.
    pub callers: usize,
    /// HTTP/2 connections they used.
    pub connections: usize,
    /// Seconds it ran.
    pub seconds: f64,
    /// Calls answered per second.
    pub calls_per_second: f64,
    /// Latency of a call.
    pub latency: Latency,
    /// Failed calls by gRPC code.
    pub errors: BTreeMap<String, u64>,
    /// Machine load before.
    pub load_before: Load,
}

/// Runs the echo comparison: `callers` concurrent callers for `seconds`.
pub async fn echo(callers: usize, seconds: u64) -> Result<EchoFigures, BenchError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| BenchError::io("binding the echo server", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| BenchError::io("the echo server's address", e))?;
    let (_reporter, health) = tonic_health::server::health_reporter();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(health)
            .serve_with_incoming_shutdown(incoming, async {
                let _ = stopped.await;
            }),
    );
    // Each caller holds one call at a time.
    let pool = Arc::new(Pool::for_streams(addr, callers * 4).await?);
    let histogram = Arc::new(Mutex::new(latency_histogram()));
    let errors = Arc::new(Mutex::new(BTreeMap::<String, u64>::new()));
    let load_before = Load::now();
    let start = Instant::now();
    let end = start + Duration::from_secs(seconds);
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let mut client = HealthClient::new(pool.pick());
            let histogram = Arc::clone(&histogram);
            let errors = Arc::clone(&errors);
            tokio::spawn(async move {
                let mut local = latency_histogram();
                let mut calls = 0u64;
                while Instant::now() < end {
                    let sent = Instant::now();
                    match client
                        .check(HealthCheckRequest {
                            service: String::new(),
                        })
                        .await
                    {
                        Ok(_) => {
                            let us = u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX);
                            let _ = local.record(us.max(1));
                            calls += 1;
                        }
                        Err(status) => {
                            let mut errors = errors.lock();
                            *errors.entry(code_name(&status)).or_default() += 1;
                        }
                    }
                }
                let mut histogram = histogram.lock();
                let _ = histogram.add(&local);
                calls
            })
        })
        .collect();
    let mut calls = 0;
    for task in tasks {
        calls += task.await.unwrap_or(0);
    }
    let elapsed = start.elapsed().as_secs_f64();
    let _ = stop.send(());
    let _ = server.await;
    let histogram = histogram.lock();
    let errors = errors.lock().clone();
    Ok(EchoFigures {
        callers,
        connections: pool.len(),
        seconds: elapsed,
        calls_per_second: calls as f64 / elapsed.max(1e-9),
        latency: Latency::of(&histogram),
        errors,
        load_before,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_output_is_parsed() {
        let out = "number of failed transactions: 0 (0.000%)\nlatency average = 2.345 ms\n\
                   initial connection time = 12.000 ms\ntps = 4262.123456 (without initial connection time)\n";
        assert_eq!(parse_tps(out), Some(4262.123456));
        assert_eq!(parse_after(out, "latency average = "), Some(2.345));
        assert_eq!(parse_tps("nothing here"), None);
    }
}
