//! `bench matchmaking`: many distinct players join the rated queue through the public gateway,
//! and the bench measures how many pairs (games) matchmaking makes per second.
//!
//! Each of C enqueuers repeats, until the run's end: a new player with a token of its own opens
//! its lobby stream (`WatchLobby`, from seq 0), joins the rated queue (`FindMatch`, which the
//! gateway forwards to `MatchmakingService.Enqueue`) and leaves the stream to a watcher task. The
//! watcher waits for the player's `MatchFound` (the game exists by then: matchmaking pushes it in
//! the transaction that records the game) and closes the stream. With `players_per_second` the
//! enqueuers keep to that rate together (each enqueue has its slot in time); without, each
//! enqueues as fast as the gateway answers.
//!
//! Every player is new, so every ticket carries the starting rating (1500) and any two waiting
//! tickets are within the rated window at once: the load exercises the pairing loop itself, not
//! the rating window's widening. Pairing is not done on enqueue: the service's pairing loop runs
//! every `pairing_interval` (500 ms), pairs every waiting ticket of a queue in one transaction,
//! then creates the games of its matches one after the other (`CreateGame` on the session, then
//! the match's completion with the players' lobby events). So a pair waits up to one interval
//! for its round, and a round's games are created in sequence.
//!
//! The games the bench's players are seated in are left alone: nobody subscribes to them or
//! confirms a deployment, so with the `online` time control each ends at its 90 s deployment
//! deadline with both seats lost (nobody is rated or queued again). A spawned server is stopped
//! before then.
//!
//! What is measured:
//! - **pairs/s**: distinct games announced by `MatchFound` within the run, per second of it.
//! - **enqueue**: from sending `FindMatch` to its answer.
//! - **enqueue to matched**: from sending `FindMatch` to the player's stream delivering
//!   `MatchFound` with the game. Players still waiting when the run ends are given
//!   `drain` more time; those matched then count here (not in pairs/s), the rest as unmatched.
//! - **errors by gRPC code**; `STREAM_ENDED` names a lobby stream that ended before its match.
//! - **CPU per pair**: the server's and the bench's CPU in the run's window (`/proc/PID/stat`) ÷
//!   pairs in it.

use crate::BenchError;
use crate::connections::{Pool, code_name, token, unary};
use crate::pb;
use crate::pb::player_service_client::PlayerServiceClient;
use crate::report::{CpuSpent, Latency, Load, latency_histogram};
use crate::server::{cpu_seconds, own_cpu_seconds};
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tonic::Status;

/// Settings of a `bench matchmaking` run.
#[derive(Debug, Clone)]
pub struct MatchmakingConfig {
    /// Enqueuers at once: each opens a player's lobby stream, enqueues it and goes on to the next.
    pub concurrency: usize,
    /// Players enqueued per second by all enqueuers together; `None`: as fast as they can.
    pub players_per_second: Option<f64>,
    /// How long to enqueue.
    pub duration: Duration,
    /// After the run, how long players still waiting may wait for their match.
    pub drain: Duration,
    /// HTTP/2 connections to the gateway, shared by the players' calls and lobby streams.
    pub connections: usize,
    /// The gateway's public gRPC address.
    pub public: SocketAddr,
    /// The gateway's HS256 secret, to mint player tokens.
    pub jwt_secret: String,
    /// The server process, for its CPU time.
    pub server_pid: Option<u32>,
}

/// CPU time of the server and of the bench in the run's window, per pair.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct PairCpu {
    /// The server process's CPU seconds (user + system) in the window, if its pid is known.
    pub server_seconds: Option<f64>,
    /// `server_seconds` / pairs, in microseconds.
    pub server_us_per_pair: Option<f64>,
    /// The bench's own CPU seconds in the window.
    pub bench_seconds: Option<f64>,
    /// `bench_seconds` / pairs, in microseconds.
    pub bench_us_per_pair: Option<f64>,
}

impl PairCpu {
    /// The figures of a window whose ends read `before` and `after` (server, bench), in which
    /// `pairs` pairs were formed.
    fn of(
        before: (Option<f64>, Option<f64>),
        after: (Option<f64>, Option<f64>),
        pairs: u64,
    ) -> PairCpu {
        let cpu = CpuSpent::between(before, after, pairs);
        PairCpu {
            server_seconds: cpu.server_seconds,
            server_us_per_pair: cpu.server_us_per_unit,
            bench_seconds: cpu.bench_seconds,
            bench_us_per_pair: cpu.bench_us_per_unit,
        }
    }
}

/// The figures of a `bench matchmaking` run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MatchmakingFigures {
    /// Enqueuers at once.
    pub concurrency: usize,
    /// The enqueue rate asked for (`None`: as fast as the enqueuers could).
    pub players_per_second_target: Option<f64>,
    /// Seconds asked for.
    pub duration_seconds: f64,
    /// Seconds actually measured.
    pub elapsed_seconds: f64,
    /// Players whose `FindMatch` was answered OK (every one was sent within the run; each is
    /// matched in the run, matched in the drain or unmatched).
    pub players_enqueued: u64,
    /// `players_enqueued` / `elapsed_seconds`.
    pub players_enqueued_per_second: f64,
    /// Distinct games announced by `MatchFound` within the run.
    pub pairs: u64,
    /// `pairs` / `elapsed_seconds`: the figure of the run.
    pub pairs_per_second: f64,
    /// Players who saw their `MatchFound` within the run.
    pub players_matched: u64,
    /// Players matched after the run's end, within the drain.
    pub players_matched_in_drain: u64,
    /// Enqueued players who saw no match by the end of the drain.
    pub players_unmatched: u64,
    /// HTTP/2 connections the players used.
    pub connections: usize,
    /// From sending `FindMatch` to its answer (successful calls only).
    pub enqueue: Latency,
    /// From sending `FindMatch` to the player's `MatchFound` (within the run and the drain).
    pub enqueue_to_matched: Latency,
    /// Failed calls and streams by gRPC code.
    pub errors: BTreeMap<String, u64>,
    /// CPU of the server and of the bench within the run's window.
    pub cpu: PairCpu,
    /// Machine load before the run.
    pub load_before: Load,
    /// Machine load at its end.
    pub load_after: Load,
}

/// Everything the tasks of one run share.
struct Run {
    config: MatchmakingConfig,
    pool: Pool,
    run_id: String,
    start: Instant,
    end: Instant,
    /// The next enqueue's slot in time, when the run keeps to a rate.
    next_slot: AtomicU64,
    recorder: Mutex<Recorder>,
}

/// The run's histograms and counters.
struct Recorder {
    enqueue: Histogram<u64>,
    matched: Histogram<u64>,
    players_enqueued: u64,
    players_matched: u64,
    players_matched_in_drain: u64,
    /// Games announced within the run.
    games: HashSet<String>,
    errors: BTreeMap<String, u64>,
}

impl Run {
    fn record(&self, f: impl FnOnce(&mut Recorder)) {
        f(&mut self.recorder.lock());
    }

    fn error(&self, code: &str) {
        self.record(|r| *r.errors.entry(code.to_string()).or_default() += 1);
    }

    fn status(&self, status: &Status) {
        self.error(&code_name(status));
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

/// Runs `bench matchmaking` against a running server.
pub async fn run(config: MatchmakingConfig) -> Result<MatchmakingFigures, BenchError> {
    if config.concurrency == 0 {
        return Err(BenchError::Setting(
            "--concurrency must be at least 1".into(),
        ));
    }
    if config
        .players_per_second
        .is_some_and(|r| r.is_nan() || r <= 0.0)
    {
        return Err(BenchError::Setting(
            "--players-per-second must be more than 0".into(),
        ));
    }
    if config.connections == 0 {
        return Err(BenchError::Setting(
            "--connections must be at least 1".into(),
        ));
    }
    let pool = Pool::for_connections(config.public, config.connections).await?;
    let pid = config.server_pid;
    let load_before = Load::now();
    let cpu_before = (pid.and_then(cpu_seconds), own_cpu_seconds());
    let start = Instant::now();
    let end = start + config.duration;
    // The CPU times at the window's end, read on time whatever the players are doing then.
    let cpu_after = tokio::spawn(async move {
        tokio::time::sleep_until(end).await;
        (pid.and_then(cpu_seconds), own_cpu_seconds())
    });
    let run = Arc::new(Run {
        run_id: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
        pool,
        start,
        end,
        next_slot: AtomicU64::new(0),
        recorder: Mutex::new(Recorder {
            enqueue: latency_histogram(),
            matched: latency_histogram(),
            players_enqueued: 0,
            players_matched: 0,
            players_matched_in_drain: 0,
            games: HashSet::new(),
            errors: BTreeMap::new(),
        }),
        config,
    });
    let watchers = Arc::new(Mutex::new(JoinSet::new()));
    let enqueuers: Vec<_> = (0..run.config.concurrency)
        .map(|index| tokio::spawn(enqueuer(Arc::clone(&run), Arc::clone(&watchers), index)))
        .collect();
    for enqueuer in enqueuers {
        let _ = enqueuer.await;
    }
    let cpu_after = cpu_after.await.unwrap_or((None, None));
    let elapsed = end.saturating_duration_since(start).min(start.elapsed());
    // The players still waiting get the drain; the rest are unmatched.
    let mut watchers = std::mem::take(&mut *watchers.lock());
    let drain_end = Instant::now() + run.config.drain;
    let mut unmatched = 0u64;
    loop {
        match tokio::time::timeout_at(drain_end, watchers.join_next()).await {
            Ok(Some(Ok(true))) => {}
            Ok(Some(_)) => unmatched += 1,
            Ok(None) => break,
            Err(_) => {
                unmatched += watchers.len() as u64;
                watchers.abort_all();
                break;
            }
        }
    }
    let recorder = run.recorder.lock();
    let pairs = recorder.games.len() as u64;
    let seconds = elapsed.as_secs_f64().max(1e-9);
    Ok(MatchmakingFigures {
        concurrency: run.config.concurrency,
        players_per_second_target: run.config.players_per_second,
        duration_seconds: run.config.duration.as_secs_f64(),
        elapsed_seconds: elapsed.as_secs_f64(),
        players_enqueued: recorder.players_enqueued,
        players_enqueued_per_second: recorder.players_enqueued as f64 / seconds,
        pairs,
        pairs_per_second: pairs as f64 / seconds,
        players_matched: recorder.players_matched,
        players_matched_in_drain: recorder.players_matched_in_drain,
        players_unmatched: unmatched,
        connections: run.pool.len(),
        enqueue: Latency::of(&recorder.enqueue),
        enqueue_to_matched: Latency::of(&recorder.matched),
        errors: recorder.errors.clone(),
        cpu: PairCpu::of(cpu_before, cpu_after, pairs),
        load_before,
        load_after: Load::now(),
    })
}

/// One enqueuer: players one after the other until the run's end, each handed to a watcher once
/// enqueued.
async fn enqueuer(run: Arc<Run>, watchers: Arc<Mutex<JoinSet<bool>>>, index: usize) {
    let mut number: u64 = 0;
    loop {
        if let Some(rate) = run.config.players_per_second {
            let slot = run.next_slot.fetch_add(1, Ordering::Relaxed);
            let at = run.start + Duration::from_secs_f64(slot as f64 / rate);
            if at >= run.end {
                return;
            }
            tokio::time::sleep_until(at).await;
        } else if Instant::now() >= run.end {
            return;
        }
        number += 1;
        let player = format!("bench-mm-{}-{index}-{number}", run.run_id);
        let Ok(token) = token(&run.config.jwt_secret, &player) else {
            run.error("TOKEN");
            continue;
        };
        let mut client = PlayerServiceClient::new(run.pool.pick());
        // The lobby stream first, as a client does: its MatchFound cannot be missed, and a
        // stream from seq 0 replays it anyway.
        let stream = match client
            .watch_lobby(crate::connections::authed(
                &token,
                pb::WatchLobbyRequest { after_seq: 0 },
            ))
            .await
        {
            Ok(stream) => stream.into_inner(),
            Err(status) => {
                run.status(&status);
                // Do not spin on a server that refuses everything.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let request = unary(
            &token,
            pb::FindMatchRequest {
                ticket_id: format!("t-{number}"),
                queue: Some(pb::Queue {
                    rules: String::new(),
                    time_control: "online".into(),
                    rated: true,
                }),
                ttl_seconds: 0,
            },
        );
        let sent = Instant::now();
        match client.find_match(request).await {
            Ok(_) => {
                let latency = micros(sent.elapsed());
                run.record(|r| {
                    let _ = r.enqueue.record(latency);
                    r.players_enqueued += 1;
                });
                watchers.lock().spawn(watch(Arc::clone(&run), stream, sent));
            }
            Err(status) => {
                run.status(&status);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Waits on a player's lobby stream for its `MatchFound`; `true` once seen.
async fn watch(
    run: Arc<Run>,
    mut stream: tonic::Streaming<pb::WatchLobbyResponse>,
    sent: Instant,
) -> bool {
    loop {
        let item = match stream.message().await {
            Ok(Some(item)) => item,
            Ok(None) => {
                run.error("STREAM_ENDED");
                return false;
            }
            Err(status) => {
                run.status(&status);
                return false;
            }
        };
        let Some(pb::lobby_event::Kind::MatchFound(found)) =
            item.event.and_then(|event| event.kind)
        else {
            continue;
        };
        let seen = Instant::now();
        let latency = micros(seen - sent);
        run.record(|r| {
            let _ = r.matched.record(latency);
            if seen <= run.end {
                r.players_matched += 1;
                r.games.insert(found.game_id);
            } else {
                r.players_matched_in_drain += 1;
            }
        });
        return true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_per_pair_is_the_window_over_the_pairs() {
        let cpu = PairCpu::of((Some(10.0), Some(1.0)), (Some(12.0), Some(1.5)), 1000);
        assert_eq!(cpu.server_seconds, Some(2.0));
        assert_eq!(cpu.server_us_per_pair, Some(2000.0));
        assert_eq!(cpu.bench_us_per_pair, Some(500.0));
        let none = PairCpu::of((None, Some(1.0)), (None, Some(2.0)), 0);
        assert_eq!(none.server_seconds, None);
        assert_eq!(none.bench_us_per_pair, None, "no pairs, no figure per pair");
    }
}
