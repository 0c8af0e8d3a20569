//! The session's pulse: how the service knows how long it could not serve, so that time never
//! counts against a player (`hidden_front_store::continuity`, docs/clock.md).
//!
//! Every session process pulses about once a second ([`SessionService::run_pulse`]); the store
//! orders the pulses of all processes, and the one that finds the previous pulse older than the
//! outage threshold moves the deadlines that were running and records the outage. A process
//! whose own last successful pulse is that old (it was down, stalled, or could not reach the
//! store) pulses before it lets anything touch a game ([`SessionService::serving`]): no command,
//! fire, presence report or view is judged against deadlines that an outage should have moved.

use crate::errors::store_error_status;
use crate::service::SessionService;
use crate::session_store::lost_error;
use hidden_front_metrics_names as names;
use hidden_front_store::{Outage, OutageRule, StoreError};
use hidden_front_time::unix_ms;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tonic::Status;

/// How the session pulses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PulseConfig {
    /// Between two pulses of the background loop. Must be well under
    /// `rule.outage_after`, or a healthy service would find outages.
    pub interval: Duration,
    /// What counts as an outage, and what it gives back.
    pub rule: OutageRule,
}

impl Default for PulseConfig {
    fn default() -> PulseConfig {
        PulseConfig {
            interval: Duration::from_secs(1),
            rule: OutageRule::default(),
        }
    }
}

/// This process's side of the pulse.
#[derive(Debug, Default)]
pub(crate) struct PulseState {
    /// The session clock's reading at this process's last successful pulse, in milliseconds
    /// since the Unix epoch (0: none yet).
    last_ok_ms: AtomicU64,
    /// One pulse at a time in this process: callers that find the pulse stale together wait for
    /// the same one.
    running: tokio::sync::Mutex<()>,
}

impl SessionService {
    /// Pulses once: records that this process serves now and accounts for an outage the store
    /// finds. The outage, if this pulse found one.
    pub async fn pulse(&self) -> Result<Option<Outage>, StoreError> {
        let Some(config) = self.config.pulse else {
            return Ok(None);
        };
        // Read before the store reads its own (`GameStore::pulse`), so this process's last
        // pulse is never taken for later than the one recorded.
        let now = self.config.clock.now();
        let outage = self.store.pulse(&self.config.clock, &config.rule).await?;
        self.pulse_state
            .last_ok_ms
            .fetch_max(unix_ms(now), Ordering::Relaxed);
        if let Some(outage) = &outage {
            let seconds = outage.length().as_secs_f64();
            tracing::warn!(
                outage_seconds = seconds,
                deadlines_moved = outage.deadlines_moved,
                "the service could not serve for {seconds:.1} s: running deadlines moved so the \
                 outage costs no player time"
            );
            metrics::counter!(names::SERVICE_OUTAGES_TOTAL).increment(1);
            metrics::counter!(names::SERVICE_OUTAGE_SECONDS_TOTAL)
                .increment(seconds.round() as u64);
            metrics::counter!(names::OUTAGE_DEADLINES_MOVED_TOTAL)
                .increment(outage.deadlines_moved);
        }
        Ok(outage)
    }

    /// Whether this process's last successful pulse is recent enough that no outage can have
    /// begun unaccounted for before it (within [`OutageRule::outage_after`]); always true with
    /// the pulse off.
    pub(crate) fn pulse_is_fresh(&self) -> bool {
        let Some(config) = self.config.pulse else {
            return true;
        };
        let last = self.pulse_state.last_ok_ms.load(Ordering::Relaxed);
        last != 0
            && self.config.clock.now_unix_ms().saturating_sub(last)
                <= u64::try_from(config.rule.outage_after.as_millis()).unwrap_or(u64::MAX)
    }

    /// Returns once this process's pulse is fresh, pulsing first if it is not; a failed pulse is
    /// `UNAVAILABLE` (`STORE_UNAVAILABLE`), retriable. Everything that judges or shows a game's
    /// deadlines, or arms new ones, waits for it.
    ///
    /// While the store is lost to this process (`session_store.rs`) it refuses at once instead
    /// of pulsing: the pulse loop is already looking for the store, and callers that each
    /// pulsed in turn (one at a time, each waiting out a pulse that cannot answer) queued for a
    /// second apiece, so a host cut from its database held the calls sent to it for many
    /// seconds, past their deadlines (seen in the cluster test's `partition_session1_postgres`).
    pub(crate) async fn serving(&self) -> Result<(), Status> {
        if self.pulse_is_fresh() {
            return Ok(());
        }
        let lost = || *self.store_lost.borrow();
        let refused = || Err(store_error_status(&lost_error()));
        if lost() {
            return refused();
        }
        let _one_at_a_time = self.pulse_state.running.lock().await;
        if self.pulse_is_fresh() {
            return Ok(());
        }
        // The pulse this caller waited for failed: no second try of its own.
        if lost() {
            return refused();
        }
        self.pulse()
            .await
            .map(|_| ())
            .map_err(|error| store_error_status(&error))
    }

    /// Pulses every [`PulseConfig::interval`] until `shutdown` completes (nothing when the pulse
    /// is off). Failures are logged once per run of them: the store is unreachable, and the
    /// outage will be accounted for by the first pulse that reaches it.
    pub async fn run_pulse(
        self: std::sync::Arc<Self>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) {
        let Some(config) = self.config.pulse else {
            return;
        };
        tokio::pin!(shutdown);
        let mut every = tokio::time::interval(config.interval);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failing = false;
        loop {
            tokio::select! {
                _ = every.tick() => {}
                () = &mut shutdown => return,
            }
            let result = {
                let _one_at_a_time = self.pulse_state.running.lock().await;
                self.pulse().await
            };
            match result {
                Ok(_) if failing => {
                    tracing::info!("the pulse reaches the store again");
                    failing = false;
                }
                Ok(_) => {}
                Err(error) if !failing => {
                    tracing::warn!(%error, "the pulse cannot reach the store: games cannot be served until it does");
                    failing = true;
                }
                Err(_) => {}
            }
        }
    }
}
