//! Where delivery state lives: per endpoint its place in the outbox (a [`FeedPosition`], a
//! position per shard, so that one shard down holds back only its own facts; beside it the
//! `u64` cursor of the last fact acknowledged or parked, for operators) and a lease (which
//! process sends, until when), and the dead letters.
//!
//! Every replica runs a deliverer for every endpoint; only the one holding the endpoint's lease
//! sends. Moving the cursor, recording an error and parking are all **guarded by the lease**:
//! they do nothing (and answer `false`) unless the caller still holds an unexpired lease, so a
//! process that stalled past its lease and lost it learns so at its next write and stops before
//! sending more. After a crash the next holder resends from the cursor: at most the facts that
//! were in flight are sent twice, with the same id.
//!
//! [`MemoryWebhookStore`] serves the one-box mode and tests, [`crate::postgres::PgWebhookStore`]
//! replicas sharing a database; both pass the same conformance checks (`tests/conformance`).

use async_trait::async_trait;
use hidden_front_lifecycle::FeedPosition;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// A failure of the store itself (the database), never a refusal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("webhook store: {0}")]
pub struct WebhookStoreError(pub String);

/// An endpoint's delivery state, for operators.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointState {
    /// The endpoint's configured name.
    pub name: String,
    /// The outbox position (cursor) of the last fact delivered or parked. On a sharded store
    /// a fact of a shard that was unreachable can come after facts with higher cursors, so
    /// this may go back; delivery resumes from [`EndpointState::position`].
    pub cursor: u64,
    /// Where delivery resumes: every shard's entry after the last fact delivered or parked.
    /// `None` for an endpoint nothing was delivered to since positions were kept (it resumes
    /// from [`EndpointState::cursor`], every shard at it).
    pub position: Option<FeedPosition>,
    /// Who holds the lease (a process id), if anyone has.
    pub lease_holder: Option<String>,
    /// Until when (past: lapsed).
    pub lease_until: Option<SystemTime>,
    /// The last failed attempt's error, cleared by the next success.
    pub last_error: Option<String>,
    /// When that was.
    pub last_error_at: Option<SystemTime>,
}

/// A fact that could not be delivered within the horizon, parked so delivery could move on.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetter {
    /// The endpoint.
    pub endpoint: String,
    /// The fact's outbox position.
    pub position: u64,
    /// The fact's id (the `webhook-id` it was sent with, and will be again).
    pub fact_id: Uuid,
    /// Attempts made, over every try and replay.
    pub attempts: u32,
    /// The last attempt's error.
    pub last_error: String,
    /// When the first attempt was made.
    pub first_attempt_at: SystemTime,
    /// When it was (last) parked.
    pub parked_at: SystemTime,
    /// An operator asked for it to be sent again and it has not been yet.
    pub replay_requested: bool,
}

/// Where a new lease holder resumes an endpoint's delivery ([`WebhookStore::acquire`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    /// The cursor of the last fact delivered or parked.
    pub cursor: u64,
    /// The position after it, if one was recorded (see [`EndpointState::position`]).
    pub position: Option<FeedPosition>,
}

impl Resume {
    /// The place to read on from in a feed of `shards` shards: the recorded position, or for
    /// an endpoint that has only a cursor (delivered to before positions were kept, when the
    /// merged feed had delivered every shard up to it), every shard at that cursor.
    ///
    /// On one database the two say the same thing and the later one wins: a replica of a
    /// release from before positions (during a rolling upgrade or a rollback) moves only the
    /// cursor, and resuming from the position it left behind would send again what it sent.
    /// (No such release runs a sharded store, so on shards the position is the whole truth.)
    pub fn position(&self, shards: usize) -> FeedPosition {
        match &self.position {
            Some(position) if shards <= 1 && position.shards() <= 1 => {
                FeedPosition::from_cursor(self.cursor.max(position.get(0)), 1)
            }
            Some(position) => position.clone(),
            None => FeedPosition::from_cursor(self.cursor, shards),
        }
    }
}

/// The delivery state of every endpoint, shared by every replica.
#[async_trait]
pub trait WebhookStore: Send + Sync + 'static {
    /// Takes `endpoint`'s lease for `holder` for `ttl` if it is free, lapsed or already
    /// `holder`'s (creating the endpoint at cursor 0 the first time). Returns where delivery
    /// resumes when the lease is held, `None` when another holder has it.
    async fn acquire(
        &self,
        endpoint: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<Resume>, WebhookStoreError>;

    /// Extends `holder`'s unexpired lease by `ttl` from now; `false` when it is not held.
    async fn renew(
        &self,
        endpoint: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, WebhookStoreError>;

    /// Gives the lease up (at shutdown), so another replica takes over at once.
    async fn release(&self, endpoint: &str, holder: &str) -> Result<(), WebhookStoreError>;

    /// Records that delivery got past the fact at `cursor`, resuming at `position` (the
    /// position after that fact), and clears the last error, if `holder` holds the lease. Both
    /// are set as given: only the lease holder writes them, and it reads the feed in order.
    async fn advance(
        &self,
        endpoint: &str,
        holder: &str,
        cursor: u64,
        position: &FeedPosition,
    ) -> Result<bool, WebhookStoreError>;

    /// Records a failed attempt's error, if `holder` holds the lease.
    async fn record_failure(
        &self,
        endpoint: &str,
        holder: &str,
        error: &str,
    ) -> Result<bool, WebhookStoreError>;

    /// Parks `letter` (replacing an earlier letter of the same position, its replay request
    /// cleared) and, when `advance` is given (the position after the letter's fact), moves the
    /// cursor to the letter's position and the endpoint's position to `advance`, in one step,
    /// if `holder` holds the lease.
    async fn park(
        &self,
        holder: &str,
        letter: &DeadLetter,
        advance: Option<&FeedPosition>,
    ) -> Result<bool, WebhookStoreError>;

    /// Removes the dead letter at `position` (its replay was delivered), if `holder` holds
    /// the lease.
    async fn resolve(
        &self,
        endpoint: &str,
        holder: &str,
        position: u64,
    ) -> Result<bool, WebhookStoreError>;

    /// Asks for `endpoint`'s dead letter at `position` (or all of them) to be sent again.
    /// Returns how many are now waiting for it.
    async fn request_replay(
        &self,
        endpoint: &str,
        position: Option<u64>,
    ) -> Result<u64, WebhookStoreError>;

    /// `endpoint`'s dead letters waiting for a replay, in position order.
    async fn replays_requested(&self, endpoint: &str)
    -> Result<Vec<DeadLetter>, WebhookStoreError>;

    /// Every endpoint that has ever had a deliverer, by name.
    async fn endpoints(&self) -> Result<Vec<EndpointState>, WebhookStoreError>;

    /// The dead letters of `endpoint` (or every endpoint), by endpoint then position.
    async fn dead_letters(
        &self,
        endpoint: Option<&str>,
    ) -> Result<Vec<DeadLetter>, WebhookStoreError>;
}

/// Delivery state in this process's memory: the one-box mode (with the memory game store,
/// whose outbox is in memory too) and tests.
#[derive(Debug, Default)]
pub struct MemoryWebhookStore {
    state: Mutex<Memory>,
}

#[derive(Debug, Default)]
struct Memory {
    endpoints: BTreeMap<String, EndpointState>,
    letters: BTreeMap<(String, u64), DeadLetter>,
}

impl MemoryWebhookStore {
    /// An empty store.
    pub fn new() -> MemoryWebhookStore {
        MemoryWebhookStore::default()
    }
}

impl Memory {
    /// The endpoint's state if `holder` holds an unexpired lease on it.
    fn held(&mut self, endpoint: &str, holder: &str) -> Option<&mut EndpointState> {
        let now = SystemTime::now();
        self.endpoints.get_mut(endpoint).filter(|state| {
            state.lease_holder.as_deref() == Some(holder)
                && state.lease_until.is_some_and(|until| until > now)
        })
    }
}

#[async_trait]
impl WebhookStore for MemoryWebhookStore {
    async fn acquire(
        &self,
        endpoint: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<Resume>, WebhookStoreError> {
        let now = SystemTime::now();
        let mut state = self.state.lock();
        let entry = state
            .endpoints
            .entry(endpoint.to_owned())
            .or_insert_with(|| EndpointState {
                name: endpoint.to_owned(),
                cursor: 0,
                position: None,
                lease_holder: None,
                lease_until: None,
                last_error: None,
                last_error_at: None,
            });
        let free = entry.lease_holder.as_deref() == Some(holder)
            || entry.lease_until.is_none_or(|until| until <= now);
        if !free {
            return Ok(None);
        }
        entry.lease_holder = Some(holder.to_owned());
        entry.lease_until = Some(now + ttl);
        Ok(Some(Resume {
            cursor: entry.cursor,
            position: entry.position.clone(),
        }))
    }

    async fn renew(
        &self,
        endpoint: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, WebhookStoreError> {
        let mut state = self.state.lock();
        Ok(state
            .held(endpoint, holder)
            .map(|held| held.lease_until = Some(SystemTime::now() + ttl))
            .is_some())
    }

    async fn release(&self, endpoint: &str, holder: &str) -> Result<(), WebhookStoreError> {
        let mut state = self.state.lock();
        if let Some(held) = state
            .endpoints
            .get_mut(endpoint)
            .filter(|s| s.lease_holder.as_deref() == Some(holder))
        {
            held.lease_until = Some(SystemTime::UNIX_EPOCH);
        }
        Ok(())
    }

    async fn advance(
        &self,
        endpoint: &str,
        holder: &str,
        cursor: u64,
        position: &FeedPosition,
    ) -> Result<bool, WebhookStoreError> {
        let mut state = self.state.lock();
        Ok(state
            .held(endpoint, holder)
            .map(|held| {
                held.cursor = cursor;
                held.position = Some(position.clone());
                held.last_error = None;
                held.last_error_at = None;
            })
            .is_some())
    }

    async fn record_failure(
        &self,
        endpoint: &str,
        holder: &str,
        error: &str,
    ) -> Result<bool, WebhookStoreError> {
        let mut state = self.state.lock();
        Ok(state
            .held(endpoint, holder)
            .map(|held| {
                held.last_error = Some(error.to_owned());
                held.last_error_at = Some(SystemTime::now());
            })
            .is_some())
    }

    async fn park(
        &self,
        holder: &str,
        letter: &DeadLetter,
        advance: Option<&FeedPosition>,
    ) -> Result<bool, WebhookStoreError> {
        let mut state = self.state.lock();
        let Some(held) = state.held(&letter.endpoint, holder) else {
            return Ok(false);
        };
        if let Some(position) = advance {
            held.cursor = letter.position;
            held.position = Some(position.clone());
        }
        let parked = DeadLetter {
            replay_requested: false,
            ..letter.clone()
        };
        state
            .letters
            .insert((letter.endpoint.clone(), letter.position), parked);
        Ok(true)
    }

    async fn resolve(
        &self,
        endpoint: &str,
        holder: &str,
        position: u64,
    ) -> Result<bool, WebhookStoreError> {
        let mut state = self.state.lock();
        if state.held(endpoint, holder).is_none() {
            return Ok(false);
        }
        state.letters.remove(&(endpoint.to_owned(), position));
        Ok(true)
    }

    async fn request_replay(
        &self,
        endpoint: &str,
        position: Option<u64>,
    ) -> Result<u64, WebhookStoreError> {
        let mut state = self.state.lock();
        let mut count = 0;
        for ((name, at), letter) in state.letters.iter_mut() {
            if name == endpoint && position.is_none_or(|p| p == *at) {
                letter.replay_requested = true;
                count += 1;
            }
        }
        Ok(count)
    }

    async fn replays_requested(
        &self,
        endpoint: &str,
    ) -> Result<Vec<DeadLetter>, WebhookStoreError> {
        let state = self.state.lock();
        Ok(state
            .letters
            .values()
            .filter(|l| l.endpoint == endpoint && l.replay_requested)
            .cloned()
            .collect())
    }

    async fn endpoints(&self) -> Result<Vec<EndpointState>, WebhookStoreError> {
        Ok(self.state.lock().endpoints.values().cloned().collect())
    }

    async fn dead_letters(
        &self,
        endpoint: Option<&str>,
    ) -> Result<Vec<DeadLetter>, WebhookStoreError> {
        let state = self.state.lock();
        Ok(state
            .letters
            .values()
            .filter(|l| endpoint.is_none_or(|name| l.endpoint == name))
            .cloned()
            .collect())
    }
}

/// Groups dead letters by endpoint (for the admin answers).
pub fn count_by_endpoint(letters: &[DeadLetter]) -> HashMap<&str, u64> {
    let mut counts = HashMap::new();
    for letter in letters {
        *counts.entry(letter.endpoint.as_str()).or_default() += 1;
    }
    counts
}
