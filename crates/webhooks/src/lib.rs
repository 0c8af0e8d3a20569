//! Webhooks: the lifecycle outbox delivered to configured HTTP endpoints, as CloudEvents signed
//! per Standard Webhooks, in outbox order per endpoint, retried with backoff up to a horizon,
//! then parked as dead letters an operator can list and replay.
//!
//! - [`signature`]: signing and [`signature::verify`] (the receiver's side, for tests and
//!   consumers' docs), against the spec's published vector.
//! - [`config`]: the configuration file, checked at start.
//! - [`store`]: [`store::WebhookStore`] (cursor and lease per endpoint, dead letters) and its
//!   memory impl; [`postgres`] its Postgres impl.
//! - [`deliver`]: [`deliver::Deliveries`], one deliverer per endpoint, only the lease holder
//!   sending; [`sender`] the HTTP side of one attempt.
//! - [`admin`]: `WebhookAdminService`, behind an authorizer the process gives it.
//!
//! docs/lifecycle.md describes the behaviour for consumers and operators.

pub mod admin;
pub mod config;
pub mod deliver;
pub mod postgres;
pub mod sender;
pub mod signature;
pub mod store;

pub use config::WebhooksConfig;
pub use deliver::Deliveries;
pub use store::{MemoryWebhookStore, WebhookStore};
