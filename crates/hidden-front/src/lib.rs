//! Hidden Front as a library: the application the `hidden-front` binary runs, and the tools it
//! holds.
//!
//! - [`app`]: every service built from a [`config::ServeArgs`], listeners bound, run until
//!   stopped. The binary's `serve` and the tests start the same thing.
//! - [`config`]: the flags and environment variables of `serve` and `migrate`.
//! - [`serve`]: those two commands at the binary's edge (logging, signals, the port lines).
//! - [`rules_cli`] and [`rules_json`]: the rules engine over JSON Lines (`hidden-front rules`).
//! - [`play`]: the terminal client (`hidden-front play`).
//! - [`token`]: development player tokens (`hidden-front token`).
//! - [`replay`]: replay export and verification (`hidden-front replay`).
//! - [`admin_cli`]: the admin API for on-call engineers (`hidden-front admin`).
//! - [`webhooks_cli`]: the webhook deliveries' operator verbs (`hidden-front webhooks`).
//! - [`bot_cli`]: the computer's ladder of levels (`hidden-front bot ladder`).
//!
//! The binary (`main.rs`) only parses the command line and prints an error once.

pub mod admin_cli;
pub mod app;
pub mod bot_cli;
pub mod config;
mod database;
mod health;
mod metrics_endpoint;
pub mod organiser_cli;
pub mod play;
pub mod replay;
pub mod rules_cli;
pub mod rules_json;
pub mod serve;
pub mod token;
pub mod webhooks_cli;

pub use app::{Application, Ports};
