//! The deliverers: one loop per configured endpoint, in every replica, of which only the lease
//! holder sends.
//!
//! A holder reads the outbox after the endpoint's position (a position per shard: a shard that
//! does not answer holds back only its own facts, which follow once it answers again) and sends
//! each fact in order, the next only after the last was acknowledged (2xx) or parked. A failed attempt (non-2xx, no
//! connection, timeout) is retried after an exponential, capped, jittered backoff until the
//! horizon since the fact's first attempt has passed; then the fact is parked as a dead letter
//! and delivery moves on. Before each live fact the holder sends the dead letters an operator
//! asked to replay (in position order, with their original ids). It wakes on the outbox's
//! watch (commits of any replica) and on replay requests of this process, with a slow safety
//! poll beside them. The lease is renewed before every attempt and during every wait; a renewal
//! or guarded write that fails means another replica holds the endpoint now, and this one
//! stops sending at once.

use crate::config::{DeliveryTiming, Endpoint, WebhooksConfig};
use crate::sender::{AttemptError, Sender};
use crate::store::{DeadLetter, WebhookStore, WebhookStoreError};
use hidden_front_lifecycle::cloudevents::CloudEvent;
use hidden_front_lifecycle::{Fact, FeedPosition};
use hidden_front_metrics_names as names;
use hidden_front_retry::Backoff;
use hidden_front_store::LifecycleOutbox;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Everything the deliverers of one process share.
#[derive(Clone)]
pub struct Deliveries {
    outbox: Arc<dyn LifecycleOutbox>,
    store: Arc<dyn WebhookStore>,
    config: Arc<WebhooksConfig>,
    holder: String,
    poke: Arc<Notify>,
}

impl std::fmt::Debug for Deliveries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliveries")
            .field("holder", &self.holder)
            .field("endpoints", &self.config.endpoints.len())
            .finish()
    }
}

/// How a holder's turn ended.
enum Ended {
    /// The process is stopping.
    Stopped,
    /// Another replica holds the endpoint now.
    LostLease,
}

/// What became of one fact.
enum Sent {
    Delivered,
    Parked {
        attempts: u32,
        error: String,
        first_attempt_at: SystemTime,
    },
    Interrupted(Ended),
}

/// Why a holder's turn broke off with an error (retried after the safety poll).
#[derive(Debug, thiserror::Error)]
enum LoopError {
    #[error(transparent)]
    Webhooks(#[from] WebhookStoreError),
    #[error("reading the lifecycle outbox: {0}")]
    Outbox(#[from] hidden_front_store::StoreError),
}

impl Deliveries {
    /// The deliverers of `config`'s endpoints, following `outbox` (a game store's), keeping state in
    /// `store`, holding leases as `holder` (unique per process: a pod name plus a random part).
    pub fn new(
        outbox: Arc<dyn LifecycleOutbox>,
        store: Arc<dyn WebhookStore>,
        config: WebhooksConfig,
        holder: String,
    ) -> Deliveries {
        Deliveries {
            outbox,
            store,
            config: Arc::new(config),
            holder,
            poke: Arc::new(Notify::new()),
        }
    }

    /// This process's lease holder id.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// The configuration delivered.
    pub fn config(&self) -> &WebhooksConfig {
        &self.config
    }

    /// The delivery state.
    pub fn store(&self) -> &Arc<dyn WebhookStore> {
        &self.store
    }

    /// The outbox delivered.
    pub fn outbox(&self) -> &Arc<dyn LifecycleOutbox> {
        &self.outbox
    }

    /// Wakes this process's idle deliverers (after a replay request), so they look at once.
    pub fn poke(&self) {
        self.poke.notify_waiters();
    }

    /// Starts one deliverer per endpoint; each runs until `stop` is cancelled, then gives its
    /// lease up.
    pub fn spawn(&self, stop: CancellationToken) -> Vec<JoinHandle<()>> {
        self.config
            .endpoints
            .iter()
            .map(|endpoint| {
                let deliverer = Deliverer::new(self.clone(), endpoint.clone(), stop.clone());
                tokio::spawn(deliverer.run())
            })
            .collect()
    }
}

/// One endpoint's loop.
struct Deliverer {
    shared: Deliveries,
    endpoint: Endpoint,
    timing: DeliveryTiming,
    sender: Sender,
    stop: CancellationToken,
    /// The cursor of the last fact delivered or parked (for operators).
    cursor: u64,
    /// Where delivery resumes: every shard's entry after the last fact delivered or parked.
    position: FeedPosition,
    renewed_at: Instant,
}

impl Deliverer {
    fn new(shared: Deliveries, endpoint: Endpoint, stop: CancellationToken) -> Deliverer {
        let timing = shared.config.delivery.clone();
        Deliverer {
            sender: Sender::new(endpoint.clone(), timing.timeout),
            shared,
            endpoint,
            timing,
            stop,
            cursor: 0,
            position: FeedPosition::start(1),
            renewed_at: Instant::now(),
        }
    }

    fn name(&self) -> &str {
        &self.endpoint.name
    }

    fn stopped(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// How often a standby looks whether the lease lapsed, and a holder renews it.
    fn renew_every(&self) -> Duration {
        self.timing.lease / 3
    }

    async fn run(mut self) {
        let store = self.shared.store.clone();
        let holder = self.shared.holder.clone();
        let name = self.endpoint.name.clone();
        while !self.stopped() {
            match store.acquire(&name, &holder, self.timing.lease).await {
                Ok(Some(resume)) => {
                    self.cursor = resume.cursor;
                    self.position = resume.position(self.shared.outbox.feed_shards());
                    tracing::info!(endpoint = %name, cursor = resume.cursor,
                        position = %self.position, "holding the webhook endpoint");
                    self.renewed_at = Instant::now();
                    match self.hold().await {
                        Ok(Ended::Stopped) => break,
                        Ok(Ended::LostLease) => {
                            tracing::warn!(endpoint = %name, "lost the webhook endpoint's lease; another replica delivers");
                        }
                        Err(error) => {
                            tracing::warn!(endpoint = %name, %error, "webhook delivery paused");
                            self.idle(self.timing.safety_poll, None).await;
                        }
                    }
                }
                // Another replica delivers; look again in a while (it may die).
                Ok(None) => self.idle(self.renew_every(), None).await,
                Err(error) => {
                    tracing::warn!(endpoint = %name, %error, "cannot reach the webhook store");
                    self.idle(self.timing.safety_poll, None).await;
                }
            }
        }
        if let Err(error) = store.release(&name, &holder).await {
            tracing::warn!(endpoint = %name, %error, "could not release the webhook lease");
        }
    }

    /// Waits up to `limit`, or until stopped, poked, or (when given) the outbox moved.
    async fn idle(&mut self, limit: Duration, outbox: Option<&mut watch::Receiver<FeedPosition>>) {
        let poke = self.shared.poke.clone();
        let poked = poke.notified();
        let moved = async {
            match outbox {
                Some(outbox) => {
                    let _ = outbox.changed().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(limit) => {}
            _ = poked => {}
            () = self.stop.cancelled() => {}
            _ = moved => {}
        }
    }

    /// Renews the lease when a third of it has passed; `false` when it is no longer held.
    async fn keep_lease(&mut self) -> Result<bool, WebhookStoreError> {
        if self.renewed_at.elapsed() < self.renew_every() {
            return Ok(true);
        }
        let held = self
            .shared
            .store
            .renew(&self.endpoint.name, &self.shared.holder, self.timing.lease)
            .await?;
        if held {
            self.renewed_at = Instant::now();
        }
        Ok(held)
    }

    /// One turn as the endpoint's holder.
    async fn hold(&mut self) -> Result<Ended, LoopError> {
        let mut outbox = self.shared.outbox.watch_fact_positions().await?;
        loop {
            if self.stopped() {
                return Ok(Ended::Stopped);
            }
            if !self.keep_lease().await? {
                return Ok(Ended::LostLease);
            }
            if let Some(ended) = self.replay_requested().await? {
                return Ok(ended);
            }
            // Seen before the read: a commit after it wakes the wait below.
            outbox.borrow_and_update();
            let page = self
                .shared
                .outbox
                .facts_after_position(&self.position, self.timing.batch)
                .await?;
            self.report_lag(&outbox.borrow());
            let Some(last) = page
                .facts
                .last()
                .map(|p| (p.fact.position, p.after.clone()))
            else {
                // A shard that did not answer cannot wake us when it is back: the safety poll
                // asks it again.
                let wait = self.timing.safety_poll.min(self.renew_every());
                self.idle(wait, Some(&mut outbox)).await;
                continue;
            };
            let mut skipped = false;
            for positioned in page.facts {
                let (fact, after) = (positioned.fact, positioned.after);
                if !self.endpoint.wants(&fact.body) {
                    skipped = true;
                    continue;
                }
                let held = match self.deliver(&fact).await? {
                    Sent::Delivered => {
                        self.shared
                            .store
                            .advance(self.name(), &self.shared.holder, fact.position, &after)
                            .await?
                    }
                    Sent::Parked {
                        attempts,
                        error,
                        first_attempt_at,
                    } => {
                        let letter = DeadLetter {
                            endpoint: self.endpoint.name.clone(),
                            position: fact.position,
                            fact_id: fact.id,
                            attempts,
                            last_error: error,
                            first_attempt_at,
                            parked_at: SystemTime::now(),
                            replay_requested: false,
                        };
                        let parked = self
                            .shared
                            .store
                            .park(&self.shared.holder, &letter, Some(&after))
                            .await?;
                        if parked {
                            metrics::counter!(names::WEBHOOK_DEAD_LETTERS_TOTAL,
                                names::WEBHOOK_ENDPOINT => self.endpoint.name.clone())
                            .increment(1);
                            tracing::warn!(endpoint = %self.endpoint.name, position = fact.position,
                                fact_id = %fact.id, attempts, "webhook parked as a dead letter");
                        }
                        parked
                    }
                    Sent::Interrupted(ended) => return Ok(ended),
                };
                if !held {
                    return Ok(Ended::LostLease);
                }
                self.cursor = fact.position;
                self.position = after;
                skipped = false;
            }
            // Facts the endpoint does not want at the end of a batch: move past them too.
            let (last_cursor, last_position) = last;
            if skipped && last_position != self.position {
                if !self
                    .shared
                    .store
                    .advance(
                        self.name(),
                        &self.shared.holder,
                        last_cursor,
                        &last_position,
                    )
                    .await?
                {
                    return Ok(Ended::LostLease);
                }
                self.cursor = last_cursor;
                self.position = last_position;
            }
        }
    }

    /// Sends the dead letters an operator asked to replay; `Some` when the turn must end.
    async fn replay_requested(&mut self) -> Result<Option<Ended>, LoopError> {
        let letters = self
            .shared
            .store
            .replays_requested(&self.endpoint.name)
            .await?;
        for letter in letters {
            // Read by its cursor from the merged feed, which fails while any shard is down: the
            // replay then waits (the letters stay requested) and live delivery goes on.
            let read = self
                .shared
                .outbox
                .facts_after(letter.position.saturating_sub(1), 1)
                .await;
            let read = match read {
                Ok(read) => read,
                Err(error) => {
                    tracing::warn!(endpoint = %self.endpoint.name, position = letter.position,
                        %error, "a requested replay waits: the outbox cannot be read by cursor");
                    return Ok(None);
                }
            };
            let fact = read
                .into_iter()
                .find(|f| f.position == letter.position && f.id == letter.fact_id);
            let Some(fact) = fact else {
                tracing::warn!(endpoint = %self.endpoint.name, position = letter.position,
                    "a dead letter's fact is no longer in the outbox; dropping the letter");
                self.shared
                    .store
                    .resolve(&self.endpoint.name, &self.shared.holder, letter.position)
                    .await?;
                continue;
            };
            let held = match self.deliver(&fact).await? {
                Sent::Delivered => {
                    metrics::counter!(names::WEBHOOK_DELIVERIES_TOTAL,
                        names::WEBHOOK_ENDPOINT => self.endpoint.name.clone(),
                        names::WEBHOOK_OUTCOME => "replayed")
                    .increment(1);
                    self.shared
                        .store
                        .resolve(&self.endpoint.name, &self.shared.holder, letter.position)
                        .await?
                }
                Sent::Parked {
                    attempts, error, ..
                } => {
                    let again = DeadLetter {
                        attempts: letter.attempts.saturating_add(attempts),
                        last_error: error,
                        parked_at: SystemTime::now(),
                        ..letter
                    };
                    self.shared
                        .store
                        .park(&self.shared.holder, &again, None)
                        .await?
                }
                Sent::Interrupted(ended) => return Ok(Some(ended)),
            };
            if !held {
                return Ok(Some(Ended::LostLease));
            }
        }
        Ok(None)
    }

    /// Sends one fact until it is acknowledged, or the horizon passes (parked), or the turn
    /// ends.
    async fn deliver(&mut self, fact: &Fact) -> Result<Sent, WebhookStoreError> {
        let body = CloudEvent::of(fact, &self.shared.config.source).to_json();
        let id = fact.id.to_string();
        let first_attempt_at = SystemTime::now();
        let started = Instant::now();
        let mut backoff = Backoff::new(self.timing.initial_backoff, self.timing.max_backoff)
            .with_factor(self.timing.backoff_factor as f32);
        if self.timing.jitter {
            backoff = backoff.jittered();
        }
        let mut attempts = 0u32;
        loop {
            if self.stopped() {
                return Ok(Sent::Interrupted(Ended::Stopped));
            }
            if !self.keep_lease().await? {
                return Ok(Sent::Interrupted(Ended::LostLease));
            }
            attempts += 1;
            let error: AttemptError = match self.sender.send(&id, &body).await {
                Ok(_) => {
                    let endpoint = self.endpoint.name.clone();
                    metrics::counter!(names::WEBHOOK_DELIVERIES_TOTAL,
                        names::WEBHOOK_ENDPOINT => endpoint.clone(),
                        names::WEBHOOK_OUTCOME => "delivered")
                    .increment(1);
                    if let Ok(latency) = SystemTime::now().duration_since(fact.occurred_at) {
                        metrics::histogram!(names::WEBHOOK_DELIVERY_LATENCY_SECONDS,
                            names::WEBHOOK_ENDPOINT => endpoint)
                        .record(latency.as_secs_f64());
                    }
                    return Ok(Sent::Delivered);
                }
                Err(error) => error,
            };
            metrics::counter!(names::WEBHOOK_DELIVERIES_TOTAL,
                names::WEBHOOK_ENDPOINT => self.endpoint.name.clone(),
                names::WEBHOOK_OUTCOME => "failed")
            .increment(1);
            let error = error.to_string();
            tracing::debug!(endpoint = %self.endpoint.name, position = fact.position, attempts,
                %error, "webhook attempt failed");
            if !self
                .shared
                .store
                .record_failure(&self.endpoint.name, &self.shared.holder, &error)
                .await?
            {
                return Ok(Sent::Interrupted(Ended::LostLease));
            }
            let elapsed = started.elapsed();
            if elapsed >= self.timing.horizon {
                metrics::counter!(names::WEBHOOK_DELIVERIES_TOTAL,
                    names::WEBHOOK_ENDPOINT => self.endpoint.name.clone(),
                    names::WEBHOOK_OUTCOME => "parked")
                .increment(1);
                return Ok(Sent::Parked {
                    attempts,
                    error,
                    first_attempt_at,
                });
            }
            // The last attempt falls on the horizon, not after it.
            let wait = backoff.next_delay().min(self.timing.horizon - elapsed);
            if let Some(ended) = self.pause(wait).await? {
                return Ok(Sent::Interrupted(ended));
            }
        }
    }

    /// Waits `wait` between attempts, renewing the lease meanwhile; `Some` when the turn ends.
    async fn pause(&mut self, wait: Duration) -> Result<Option<Ended>, WebhookStoreError> {
        let until = Instant::now() + wait;
        loop {
            let now = Instant::now();
            if now >= until {
                return Ok(None);
            }
            let step = (until - now).min(self.renew_every());
            tokio::select! {
                _ = tokio::time::sleep(step) => {}
                () = self.stop.cancelled() => {}
            }
            if self.stopped() {
                return Ok(Some(Ended::Stopped));
            }
            if !self.keep_lease().await? {
                return Ok(Some(Ended::LostLease));
            }
        }
    }

    /// The gauge of how far behind the outbox the endpoint is: the largest difference, over
    /// the shards, between a shard's last position and the endpoint's entry for it.
    fn report_lag(&self, newest: &FeedPosition) {
        let behind = newest
            .entries()
            .iter()
            .enumerate()
            .map(|(shard, &last)| last.saturating_sub(self.position.get(shard)))
            .max()
            .unwrap_or(0);
        metrics::gauge!(names::WEBHOOK_LAG_POSITIONS,
            names::WEBHOOK_ENDPOINT => self.endpoint.name.clone())
        .set(behind as f64);
    }
}
