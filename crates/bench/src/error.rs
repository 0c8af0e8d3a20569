//! The errors of the load generator.

use std::path::PathBuf;

/// Why a benchmark could not run (a failed call *during* a run is counted, not an error).
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The server to measure could not be started.
    #[error("cannot start {binary}: {reason}")]
    Spawn {
        /// The binary that was started.
        binary: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A connection to a server could not be made.
    #[error("cannot connect to {address}: {source}")]
    Connect {
        /// The address dialled.
        address: String,
        /// The transport's error.
        source: tonic::transport::Error,
    },
    /// A call needed to set a benchmark up failed.
    #[error("{what} failed: {status}")]
    Setup {
        /// The call.
        what: String,
        /// The server's answer.
        status: Box<tonic::Status>,
    },
    /// Postgres refused something the benchmark needs (creating its database, ...).
    #[error("Postgres: {what}: {source}")]
    Database {
        /// What was being done.
        what: String,
        /// The driver's error.
        source: sqlx::Error,
    },
    /// pgbench could not run or printed no throughput.
    #[error("pgbench: {0}")]
    Pgbench(String),
    /// A token could not be minted.
    #[error("minting a token: {0}")]
    Token(String),
    /// A setting is out of range or contradicts another.
    #[error("invalid setting: {0}")]
    Setting(String),
    /// Reading or writing a file.
    #[error("{what}: {source}")]
    Io {
        /// The file or action.
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// The report could not be encoded.
    #[error("encoding the JSON report: {0}")]
    Json(#[from] serde_json::Error),
}

impl BenchError {
    /// A failed setup call.
    pub(crate) fn setup(what: impl Into<String>, status: tonic::Status) -> BenchError {
        BenchError::Setup {
            what: what.into(),
            status: Box::new(status),
        }
    }

    /// A failed file or process operation.
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> BenchError {
        BenchError::Io {
            what: what.into(),
            source,
        }
    }
}
