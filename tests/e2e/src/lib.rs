//! End-to-end test harness for Hidden Front: the real `hidden-front` binary as a child process,
//! real gRPC on loopback, real Postgres.
//!
//! The pieces:
//! - [`TestDatabase`] (from `crates/test-database`): a fresh, uniquely named database on the
//!   Postgres given by `DATABASE_URL` (default [`DEFAULT_DATABASE_URL`] only when the variable is
//!   unset), dropped afterwards. An unreachable Postgres fails the test with instructions; these
//!   tests never skip.
//! - [`Server`]: `hidden-front serve` on a free port against such a database; it can be
//!   SIGKILLed and restarted on the same database, and its stderr is printed when a test fails.
//! - [`client`]: a connected `SessionServiceClient` and thin helpers around its calls.
//! - [`gateway`]: clients of the public `PlayerService` that authenticate with a player token
//!   (minted in-process) and talk only to the gateway.
//! - [`connect`]: a client of `PlayerService/Connect`, over gRPC or the binary WebSocket.
//! - [`metrics`]: scraping `GET /metrics` and reading series, to compare counters.
//! - [`sweep`]: the bad-input sweeps: every RPC from the descriptor set, raw bytes on the wire,
//!   single-field mutations, and the checks every refusal must pass.
//! - [`private_postgres`]: a Postgres server of the test's own, to stop and start again.
//! - [`otlp`]: an OTLP trace receiver (a real gRPC collector on loopback) for the tracing tests.
//! - [`reveal`]: the checks that the end of a game reveals everything to every party.
//! - [`Player`]: a simple game-playing client that sees the game only through `GetGame` with its
//!   own viewer, computes its own legal moves from that view with the rules engine and plays a
//!   random one (deterministic seed).
//!
//! # The binary
//! Cargo only offers `CARGO_BIN_EXE_<name>` to the binary's own package, so this harness finds
//! `hidden-front` next to the test executable (`target/<profile>/hidden-front`, the parent of
//! `target/<profile>/deps/`). Build it first: `cargo build -p hidden-front` (the workspace test
//! commands build it anyway). `HF_E2E_BIN` overrides the path.
//!
//! # Environment
//! | variable | meaning |
//! |---|---|
//! | `DATABASE_URL` | Postgres where the tests may `CREATE DATABASE` (default `postgres://postgres@127.0.0.1:5432/postgres` when unset) |
//! | `HF_E2E_BIN` | path of the `hidden-front` binary to test |
//! | `HF_E2E_KEEP_DATABASE` | `1` keeps the test databases for inspection |

pub mod cli;
pub mod client;
pub mod connect;
pub mod gateway;
pub mod metrics;
pub mod otlp;
pub mod player;
pub mod private_postgres;
pub mod reveal;
mod server;
pub mod sweep;

pub use client::Client;
pub use hidden_front_test_database::{DEFAULT_DATABASE_URL, TestDatabase};
pub use player::{Player, Turn, own_legal_moves, play, play_to_end};
pub use server::{Server, binary};

/// The generated gRPC types (`hiddenfront.v1`).
pub use hidden_front_proto::v1 as pb;
