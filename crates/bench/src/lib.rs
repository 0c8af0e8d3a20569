//! The Hidden Front load generator behind `hidden-front bench`.
//!
//! A platform team choosing a game backend asks how many moves per second a machine carries, how
//! long a player waits for an answer, and how many idle players one gateway holds. This crate
//! answers with measurements taken the way players reach the server, side by side with the
//! limits of the same machine:
//!
//! - [`play`]: N concurrent games through the public gateway (gRPC), both seats per game, each
//!   seat choosing random moves from its own `LegalMoves` answer, new games started as games end.
//!   It measures moves per second, submit-to-acknowledge and submit-to-opponent-sees-it latency,
//!   errors by gRPC code, timer lateness and server memory per player stream.
//! - [`compare`]: the machine's Postgres commit limit (pgbench, one-row inserts, durable commits)
//!   and a plain tonic RPC at the same concurrency, so the figures have a yardstick.
//! - [`streams`]: N idle player streams on one gateway: memory per stream and the time one event
//!   takes to reach all of them.
//! - [`server`]: `hidden-front serve` as a child process (with a fresh database for Postgres) and
//!   its resident memory.
//! - [`cluster`]: players that keep playing through a load balancer while the cluster under them
//!   is upgraded, scaled, cut and partitioned (`scripts/cluster-test`), recording every
//!   acknowledged move, error and reopened stream for the harness to judge.
//! - [`matchmaking`]: many distinct players join the rated queue through the gateway: pairs
//!   (games) matchmaking makes per second, enqueue and enqueue-to-matched latency.
//! - [`report`]: the figures as a table and as JSON.
//!
//! Games are created through the session's internal `CreateGame` (players cannot create games
//! through the gateway yet); everything a player does goes through the public `PlayerService`.

pub mod cli;
pub mod cluster;
pub mod compare;
mod connections;
mod error;
pub mod matchmaking;
pub mod play;
pub mod report;
mod rng;
pub mod server;
pub mod streams;

pub use error::BenchError;

/// The generated gRPC types (`hiddenfront.v1`).
pub use hidden_front_proto::v1 as pb;
