//! [`ShardedStore`]: the game store over several Postgres databases (shards), each a separate
//! primary, with every row of one game on one shard (docs/sharding.md).
//!
//! - **Per game, one shard.** Every per-game operation (creating, loading, appending, the log,
//!   presence, timers, watching) goes to the shard written in the game's id
//!   ([`placement::shard_of`]), and only there: the move path reads and locks nothing global.
//! - **Fan-out reads.** A player's games, the admin's search and the due timers are asked of
//!   every shard at once and merged (the timers of a shard that does not answer are skipped, so
//!   one shard down does not stop the others' clocks).
//! - **The feeds.** Each shard keeps its own lifecycle outbox and ended-games feed, with its own
//!   counter row, so no transaction of one shard waits for another's. Their positions are hybrid
//!   logical clocks ending in the shard's index (`migrations/0012_shards.sql`). Read **by
//!   position** (the lifecycle feed: [`LifecycleOutbox::facts_after_position`]), each shard is
//!   read after its own entry and a shard that does not answer is skipped for that page, so the
//!   others' facts flow while it is down and its own follow once it is back. Read **by one `u64`
//!   cursor** (the ended games, and the lifecycle feed's `after_cursor`), the merged feed
//!   delivers a position only once every shard's committed counter has reached it, moving a
//!   lagging shard's counter up first; while a shard is unreachable it waits for it (it cannot
//!   tell what it holds) and resumes where it was. Either way each game's facts come in their
//!   commit order (a game is on one shard); facts of games on different shards come in about the
//!   order their commits happened (by the shards' clocks) while every shard answers.
//! - **The global parts** (the admin audit log here; matchmaking and webhooks beside it) stay on
//!   shard 0, the main database.
//! - **One shard down.** Its games' operations fail with [`StoreError::ShardUnavailable`]
//!   (retriable) and the other shards' games go on. The service's pulse is kept per shard: each
//!   shard's pulse accounts for the time that shard could not serve, moving its running
//!   deadlines (docs/clock.md), and a shard's games are served again only once its pulse has done
//!   so, so nobody loses on time while their shard was away.

use crate::continuity::{Outage, OutageRule};
use crate::placement::{self, MAX_SHARDS, ShardIndex};
use crate::postgres::PostgresStore;
use crate::timers::{Timer, TimerSlot, TimerStore};
use crate::{
    AdminStore, Append, ArmAfterReport, AuditEntry, AuditQuery, Created, EndedRecord, FactsPage,
    FoundGame, GameFilter, GameMeta, GameRecord, GameStore, GameSummary, LifecycleOutbox,
    NewAuditEntry, ObservedGame, Presence, StoreError, StoredEvent,
};
use async_trait::async_trait;
use futures_util::future::join_all;
use hidden_front_lifecycle::{Fact, FeedPosition, NewFact, PositionedFact};
use hidden_front_rules::{Event, Game, Side};
use hidden_front_time::WallClock;
use parking_lot::Mutex;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{OnceCell, watch};
use uuid::Uuid;

/// Games spread over several Postgres databases. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ShardedStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    shards: Vec<PostgresStore>,
    /// Per shard, its side of the service's pulse.
    pulses: Vec<ShardPulse>,
    /// The pulse's rule and the last pulse's time by the session's clock, once anything pulsed
    /// (a process that never pulses, a clock alone, gates nothing: the session it fires at
    /// does).
    pulsing: Mutex<Option<Pulsing>>,
    /// One [`GameStore::pulse`] of every shard at a time in this process, so that racing
    /// pulses find an outage of several shards in one call, as on one database.
    pulse_all: tokio::sync::Mutex<()>,
    /// The merged outbox's last position: the largest of the shards'.
    fact_position: watch::Sender<u64>,
    /// Every shard's last outbox position, by shard (what a reader by position waits on: a
    /// commit below another shard's last position changes it too).
    fact_positions: watch::Sender<FeedPosition>,
    /// The tasks that follow every shard's outbox position into `fact_position` and
    /// `fact_positions`.
    fact_followers: OnceCell<Vec<AbortOnDrop>>,
    /// Per shard, whether its lifecycle facts could not be read last time (said once per run
    /// of failures).
    feed_failing: Vec<std::sync::atomic::AtomicBool>,
}

#[derive(Debug, Clone)]
struct Pulsing {
    rule: OutageRule,
    /// The session's clock, which the last pulse read: a shard pulsed on its own (to serve one
    /// of its games) reads the same one.
    clock: WallClock,
}

#[derive(Debug, Default)]
struct ShardPulse {
    /// When this shard's last pulse succeeded, and whether its last attempt failed.
    state: Mutex<PulseState>,
    /// One pulse of this shard at a time in this process.
    running: tokio::sync::Mutex<()>,
    /// Whether its due timers could not be claimed last time (said once per run of failures).
    claims_failing: std::sync::atomic::AtomicBool,
    /// True from the moment its pulse fails until one succeeds: every operation in flight on
    /// the shard gives up then ([`ShardedStore::until_lost`]).
    lost: watch::Sender<bool>,
}

#[derive(Debug, Default, Clone, Copy)]
struct PulseState {
    last_ok: Option<Instant>,
    last_failed: bool,
}

#[derive(Debug)]
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The longest one shard's pulse may take (or half the outage threshold, if shorter).
const PULSE_BOUND: Duration = Duration::from_secs(1);

/// The longest one shard's timer claim may take (`claim_due`): under the clock's claim horizon
/// (2 s), so the other shards' claimed timers still fire on time.
const CLAIM_BOUND: Duration = Duration::from_secs(1);

/// The longest one shard's page of the lifecycle feed by position may take (its read, and the
/// move of its counter when it lags): a shard that hangs is skipped for that page, so the
/// others' facts still flow.
const FEED_BOUND: Duration = Duration::from_secs(2);

/// The longest a creation waits for another shard to say whether it holds the creation's key.
const CREATION_LOOKUP_BOUND: Duration = Duration::from_secs(1);

/// How long a follower of a shard's outbox waits before subscribing again after a failure.
const FOLLOW_RETRY: Duration = Duration::from_secs(1);

/// Why an operation under way on a shard was given up.
const LOST: &str =
    "its pulse failed while the call was under way; retry with the same idempotency key";

/// Why a shard's games are refused until its pulse succeeds.
const UNPULSED: &str = "it could not be reached and its pulse has not yet accounted for the time it was away; retry shortly";

impl ShardedStore {
    /// A store over `shards`, in their configured order (index 0, the main database, first).
    /// Each database records its index the first time (`store_shard`), and a database that
    /// recorded another index is refused ([`StoreError::WrongShard`]): the index is written in
    /// every game id, so a reordered list would look for games in the wrong place. The shards
    /// must be migrated first.
    pub async fn open(shards: Vec<PostgresStore>) -> Result<ShardedStore, StoreError> {
        if shards.is_empty() || shards.len() > MAX_SHARDS {
            return Err(StoreError::ShardUnavailable {
                shard: 0,
                reason: format!(
                    "a sharded store needs 1 to {MAX_SHARDS} shards, not {}",
                    shards.len()
                ),
            });
        }
        for (index, shard) in shards.iter().enumerate() {
            let index = index as ShardIndex;
            shard.claim_shard(index).await.map_err(|e| match e {
                StoreError::Database(error) => unavailable(index, &error),
                other => other,
            })?;
        }
        let pulses = shards.iter().map(|_| ShardPulse::default()).collect();
        let shard_count = shards.len();
        Ok(ShardedStore {
            inner: Arc::new(Inner {
                shards,
                pulses,
                pulsing: Mutex::new(None),
                pulse_all: tokio::sync::Mutex::new(()),
                fact_position: watch::channel(0).0,
                fact_positions: watch::channel(FeedPosition::start(shard_count)).0,
                fact_followers: OnceCell::new(),
                feed_failing: (0..shard_count)
                    .map(|_| std::sync::atomic::AtomicBool::new(false))
                    .collect(),
            }),
        })
    }

    /// The shards, in index order.
    pub fn shards(&self) -> &[PostgresStore] {
        &self.inner.shards
    }

    /// The main database (shard 0): where the global tables live.
    pub fn main(&self) -> &PostgresStore {
        &self.inner.shards[0]
    }

    /// Closes every shard's pools.
    pub async fn close(&self) {
        for shard in &self.inner.shards {
            shard.close().await;
        }
    }

    /// The shard of `game_id`, once it may serve: it exists, and when the service pulses, its
    /// pulse is fresh (pulsing it first if its last pulse succeeded but is stale; refusing at
    /// once if its last attempt failed, which the pulse loop retries).
    async fn serving(&self, game_id: Uuid) -> Result<(ShardIndex, &PostgresStore), StoreError> {
        let index = placement::shard_of(game_id);
        let Some(shard) = self.inner.shards.get(usize::from(index)) else {
            return Err(StoreError::NoSuchShard {
                game_id,
                shard: index,
                shards: self.inner.shards.len(),
            });
        };
        self.ensure_pulsed(index).await?;
        Ok((index, shard))
    }

    /// Returns once shard `index` may serve (see [`ShardedStore::serving`]).
    async fn ensure_pulsed(&self, index: ShardIndex) -> Result<(), StoreError> {
        let Some(pulsing) = self.inner.pulsing.lock().clone() else {
            return Ok(());
        };
        let pulse = &self.inner.pulses[usize::from(index)];
        let fresh = |state: PulseState| {
            state
                .last_ok
                .is_some_and(|at| at.elapsed() <= pulsing.rule.outage_after)
        };
        let state = *pulse.state.lock();
        if fresh(state) {
            return Ok(());
        }
        if state.last_failed {
            return Err(StoreError::ShardUnavailable {
                shard: index,
                reason: UNPULSED.into(),
            });
        }
        let _one = pulse.running.lock().await;
        if fresh(*pulse.state.lock()) {
            return Ok(());
        }
        self.pulse_shard(index, &pulsing.clock, &pulsing.rule)
            .await
            .map(|_| ())
            .map_err(|error| StoreError::ShardUnavailable {
                shard: index,
                reason: format!("{UNPULSED} ({error})"),
            })
    }

    /// The game an earlier creation under `creation_key` made on a shard other than `placed`,
    /// asked of every other shard at once, each within [`CREATION_LOOKUP_BOUND`]. A shard that is
    /// down (its pulse failed) or does not answer in time is not asked: a creation made there
    /// before it was lost and retried while it is away cannot be found (docs/sharding.md).
    async fn created_elsewhere(&self, creation_key: &str, placed: ShardIndex) -> Option<Uuid> {
        let order: Vec<ShardIndex> =
            placement::placement_order(creation_key, self.inner.shards.len())
                .filter(|&index| index != placed)
                .filter(|&index| {
                    !self.inner.pulses[usize::from(index)]
                        .state
                        .lock()
                        .last_failed
                })
                .collect();
        let answers = join_all(order.iter().map(|&index| {
            tokio::time::timeout(
                CREATION_LOOKUP_BOUND,
                self.inner.shards[usize::from(index)].game_of_creation_key(creation_key),
            )
        }))
        .await;
        // The first in placement order: the shard a creation would have been put on first.
        answers
            .into_iter()
            .find_map(|answer| answer.ok().and_then(Result::ok).flatten())
    }

    /// `operation` on shard `index`, given up (`ShardUnavailable`) the moment the shard's pulse
    /// fails. A call already under way when its shard vanished would otherwise wait for the
    /// pool's connect timeout (10 s: measured as the first call's refusal in the sharding e2e);
    /// the pulse, bounded to 1 s and run about once a second, ends that within about 2 s. An
    /// append given up may still commit; its retry, with the same idempotency key, finds it.
    async fn until_lost<T>(
        &self,
        index: ShardIndex,
        operation: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let mut lost = self.inner.pulses[usize::from(index)].lost.subscribe();
        let lost = async move {
            if lost.wait_for(|lost| *lost).await.is_err() {
                // The sender lives as long as the store: never, but never a refusal either.
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            biased;
            result = operation => result.map_err(|e| on_shard(index, e)),
            () = lost => Err(StoreError::ShardUnavailable {
                shard: index,
                reason: LOST.into(),
            }),
        }
    }

    /// Pulses one shard and records how it went.
    async fn pulse_shard(
        &self,
        index: ShardIndex,
        clock: &WallClock,
        rule: &OutageRule,
    ) -> Result<Option<Outage>, StoreError> {
        // Bounded well within the outage threshold: a shard that hangs (a network partition
        // rather than a refused connection) must not hold up the pulse of the others.
        let bound = (rule.outage_after / 2).min(PULSE_BOUND);
        let result = match tokio::time::timeout(
            bound,
            self.inner.shards[usize::from(index)].pulse(clock, rule),
        )
        .await
        {
            Ok(result) => result,
            Err(_) => Err(StoreError::ShardUnavailable {
                shard: index,
                reason: format!("its pulse did not answer within {} ms", bound.as_millis()),
            }),
        };
        let mut state = self.inner.pulses[usize::from(index)].state.lock();
        match &result {
            Ok(_) => {
                if state.last_failed {
                    tracing::info!(shard = index, "a shard's pulse reaches it again");
                }
                state.last_ok = Some(Instant::now());
                state.last_failed = false;
            }
            Err(error) => {
                if !state.last_failed {
                    tracing::warn!(shard = index, %error, "a shard's pulse failed: its games are refused until a pulse reaches it");
                }
                state.last_failed = true;
            }
        }
        self.inner.pulses[usize::from(index)]
            .lost
            .send_replace(state.last_failed);
        result
    }

    /// Runs `each` on every shard at once; the answers in shard order.
    async fn on_every_shard<'a, T, F, Fut>(&'a self, each: F) -> Vec<Result<T, StoreError>>
    where
        F: Fn(ShardIndex, &'a PostgresStore) -> Fut,
        Fut: Future<Output = Result<T, StoreError>> + 'a,
    {
        join_all(self.inner.shards.iter().enumerate().map(|(index, shard)| {
            let index = index as ShardIndex;
            let answer = each(index, shard);
            async move { answer.await.map_err(|e| on_shard(index, e)) }
        }))
        .await
    }

    /// [`ShardedStore::on_every_shard`], failing with the first shard's failure, if any.
    async fn on_all_shards<'a, T, F, Fut>(&'a self, each: F) -> Result<Vec<T>, StoreError>
    where
        F: Fn(ShardIndex, &'a PostgresStore) -> Fut,
        Fut: Future<Output = Result<T, StoreError>> + 'a,
    {
        self.on_every_shard(each).await.into_iter().collect()
    }

    /// One page of a merged feed (the outbox or the ended games): every shard's page after
    /// `after` up to its committed counter, merged by position, delivering only positions that
    /// every shard's counter has reached (no shard can still commit one below them). A shard
    /// whose counter lags what the others offer is moved up to it and read again, so an idle
    /// shard does not hold the feed back.
    async fn merged_page<'a, T, Page, PageFut, Reach, ReachFut>(
        &'a self,
        limit: usize,
        position: impl Fn(&T) -> u64,
        page: Page,
        reach: Reach,
    ) -> Result<Vec<T>, StoreError>
    where
        Page: Fn(&'a PostgresStore) -> PageFut,
        PageFut: Future<Output = Result<(Vec<T>, u64), StoreError>> + 'a,
        Reach: Fn(&'a PostgresStore, u64) -> ReachFut,
        ReachFut: Future<Output = Result<u64, StoreError>> + 'a,
    {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut pages = self.on_all_shards(|_, shard| page(shard)).await?;
        // What the pages offer: up to their largest position, but no further than the last
        // position of a full page (that shard may hold more below the others' offers).
        let offered = |pages: &[(Vec<T>, u64)]| {
            let largest = pages
                .iter()
                .filter_map(|(items, _)| items.last().map(&position))
                .max();
            let full = pages
                .iter()
                .filter(|(items, _)| items.len() >= limit)
                .filter_map(|(items, _)| items.last().map(&position))
                .min();
            match (largest, full) {
                (Some(largest), Some(full)) => Some(largest.min(full)),
                (largest, _) => largest,
            }
        };
        let Some(want) = offered(&pages) else {
            return Ok(Vec::new());
        };
        let lagging: Vec<usize> = pages
            .iter()
            .enumerate()
            .filter(|(_, (_, watermark))| *watermark < want)
            .map(|(index, _)| index)
            .collect();
        if !lagging.is_empty() {
            let shards = &self.inner.shards;
            let moved = join_all(lagging.iter().map(|&index| {
                let (shard, reach, page) = (&shards[index], &reach, &page);
                async move {
                    reach(shard, want).await?;
                    page(shard).await
                }
            }))
            .await;
            for (index, reread) in lagging.into_iter().zip(moved) {
                pages[index] = reread.map_err(|e| on_shard(index as ShardIndex, e))?;
            }
        }
        let cut = pages
            .iter()
            .map(|(items, watermark)| {
                if items.len() >= limit {
                    items.last().map_or(*watermark, &position)
                } else {
                    *watermark
                }
            })
            .min()
            .unwrap_or(0)
            .min(want);
        let mut merged: Vec<T> = pages
            .into_iter()
            .flat_map(|(items, _)| items)
            .filter(|item| position(item) <= cut)
            .collect();
        merged.sort_by_key(&position);
        merged.truncate(limit);
        Ok(merged)
    }

    /// Starts following every shard's outbox position (once). A shard that cannot be
    /// subscribed to now (it is down) is followed by a task that keeps trying, so one shard
    /// down does not stop the others' readers from waiting on their commits; the shards that
    /// answer are subscribed to before this returns, so the positions start where they are.
    async fn follow_facts(&self) {
        self.inner
            .fact_followers
            .get_or_init(|| async {
                let shards = &self.inner.shards;
                let first = join_all(shards.iter().enumerate().map(|(index, shard)| async move {
                    match tokio::time::timeout(FEED_BOUND, shard.watch_facts()).await {
                        Ok(Ok(receiver)) => Some(receiver),
                        Ok(Err(error)) => {
                            tracing::warn!(shard = index, %error, "cannot follow a shard's lifecycle outbox yet; retrying");
                            None
                        }
                        Err(_) => {
                            tracing::warn!(shard = index, "a shard's lifecycle outbox did not answer; retrying");
                            None
                        }
                    }
                }))
                .await;
                first
                    .into_iter()
                    .enumerate()
                    .map(|(index, first)| {
                        let follower = ShardFollower {
                            index,
                            shard: shards[index].clone(),
                            merged: self.inner.fact_position.clone(),
                            positions: self.inner.fact_positions.clone(),
                        };
                        let first = first.map(|mut receiver| {
                            follower.seen(*receiver.borrow_and_update());
                            receiver
                        });
                        AbortOnDrop(tokio::spawn(follower.run(first)))
                    })
                    .collect()
            })
            .await;
    }

    /// One page of the lifecycle feed by position (see
    /// [`LifecycleOutbox::facts_after_position`]): every shard's page after its own entry, each
    /// bounded by [`FEED_BOUND`]; the shards that did not answer are left out of this page.
    /// Among the others it is [`ShardedStore::merged_page`]'s rule: deliver only positions
    /// every answering shard's committed counter has reached (moving a lagging one up first),
    /// so while all shards answer the facts come in position order across shards.
    async fn page_by_position(
        &self,
        after: &FeedPosition,
        limit: usize,
    ) -> Result<FactsPage, StoreError> {
        after.check_shards(self.inner.shards.len())?;
        let mut unanswered = Vec::new();
        if limit == 0 {
            return Ok(FactsPage::default());
        }
        let shards = &self.inner.shards;
        let answers =
            join_all(shards.iter().enumerate().map(|(index, shard)| {
                bounded_feed(index, shard.facts_page(after.get(index), limit))
            }))
            .await;
        let mut pages: Vec<Option<(Vec<Fact>, u64)>> = Vec::with_capacity(answers.len());
        for (index, answer) in answers.into_iter().enumerate() {
            pages.push(self.answered(index, answer, &mut unanswered));
        }
        let position = |fact: &Fact| fact.position;
        let answering = || pages.iter().flatten();
        let largest = answering()
            .filter_map(|(facts, _)| facts.last().map(position))
            .max();
        let full = answering()
            .filter(|(facts, _)| facts.len() >= limit)
            .filter_map(|(facts, _)| facts.last().map(position))
            .min();
        let want = match (largest, full) {
            (Some(largest), Some(full)) => Some(largest.min(full)),
            (largest, _) => largest,
        };
        let Some(want) = want else {
            return Ok(FactsPage {
                facts: Vec::new(),
                unanswered,
            });
        };
        let lagging: Vec<usize> = pages
            .iter()
            .enumerate()
            .filter(|(_, page)| {
                page.as_ref()
                    .is_some_and(|(_, watermark)| *watermark < want)
            })
            .map(|(index, _)| index)
            .collect();
        if !lagging.is_empty() {
            let moved = join_all(lagging.iter().map(|&index| {
                let shard = &shards[index];
                let after = after.get(index);
                bounded_feed(index, async move {
                    shard.reach_facts(want).await?;
                    shard.facts_page(after, limit).await
                })
            }))
            .await;
            for (index, reread) in lagging.into_iter().zip(moved) {
                pages[index] = self.answered(index, reread, &mut unanswered);
            }
            unanswered.sort_unstable();
        }
        let cut = pages
            .iter()
            .flatten()
            .map(|(facts, watermark)| {
                if facts.len() >= limit {
                    facts.last().map_or(*watermark, position)
                } else {
                    *watermark
                }
            })
            .min()
            .unwrap_or(0)
            .min(want);
        let mut merged: Vec<(usize, Fact)> = pages
            .into_iter()
            .enumerate()
            .filter_map(|(index, page)| page.map(|(facts, _)| (index, facts)))
            .flat_map(|(index, facts)| facts.into_iter().map(move |fact| (index, fact)))
            .filter(|(_, fact)| fact.position <= cut)
            .collect();
        merged.sort_by_key(|(_, fact)| fact.position);
        merged.truncate(limit);
        let mut running = after.clone();
        let facts = merged
            .into_iter()
            .map(|(index, fact)| {
                running.advance(index, fact.position);
                PositionedFact {
                    fact,
                    after: running.clone(),
                }
            })
            .collect();
        Ok(FactsPage { facts, unanswered })
    }

    /// A shard's page, or `None` (the shard noted in `unanswered`, logged once per run of
    /// failures) when it did not answer.
    fn answered<T>(
        &self,
        index: usize,
        answer: Result<T, StoreError>,
        unanswered: &mut Vec<ShardIndex>,
    ) -> Option<T> {
        let failing = &self.inner.feed_failing[index];
        match answer {
            Ok(page) => {
                if failing.swap(false, std::sync::atomic::Ordering::Relaxed) {
                    tracing::info!(shard = index, "a shard's lifecycle facts are read again");
                }
                Some(page)
            }
            Err(error) => {
                if !failing.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    tracing::warn!(shard = index, %error, "a shard's lifecycle facts cannot be read until it is back; the other shards' flow");
                }
                unanswered.push(index as ShardIndex);
                None
            }
        }
    }
}

/// `read` of shard `index`'s lifecycle outbox, cut off after [`FEED_BOUND`].
async fn bounded_feed<T>(
    index: usize,
    read: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    match tokio::time::timeout(FEED_BOUND, read).await {
        Ok(answer) => answer.map_err(|e| on_shard(index as ShardIndex, e)),
        Err(_) => Err(StoreError::ShardUnavailable {
            shard: index as ShardIndex,
            reason: format!(
                "its lifecycle outbox did not answer within {} ms",
                FEED_BOUND.as_millis()
            ),
        }),
    }
}

/// Follows one shard's outbox position into the merged position and the vector.
struct ShardFollower {
    index: usize,
    shard: PostgresStore,
    merged: watch::Sender<u64>,
    positions: watch::Sender<FeedPosition>,
}

impl ShardFollower {
    /// Passes the shard's last position on.
    fn seen(&self, position: u64) {
        advance(&self.merged, position);
        self.positions.send_if_modified(|positions| {
            let newer = position > positions.get(self.index);
            positions.advance(self.index, position);
            newer
        });
    }

    /// Subscribes (again and again while the shard does not answer, unless `first` already
    /// did), then passes every change on until the shard's store closes.
    async fn run(self, first: Option<watch::Receiver<u64>>) {
        let mut receiver = match first {
            Some(receiver) => receiver,
            None => loop {
                tokio::time::sleep(FOLLOW_RETRY).await;
                match tokio::time::timeout(FEED_BOUND, self.shard.watch_facts()).await {
                    Ok(Ok(mut receiver)) => {
                        tracing::info!(shard = self.index, "following a shard's lifecycle outbox");
                        self.seen(*receiver.borrow_and_update());
                        break receiver;
                    }
                    Ok(Err(_)) | Err(_) => continue,
                }
            },
        };
        while receiver.changed().await.is_ok() {
            let position = *receiver.borrow_and_update();
            self.seen(position);
        }
    }
}

fn advance(sender: &watch::Sender<u64>, to: u64) {
    sender.send_if_modified(|last| {
        let newer = to > *last;
        *last = (*last).max(to);
        newer
    });
}

/// A shard's database failure, named by the shard.
fn unavailable(shard: ShardIndex, error: &sqlx::Error) -> StoreError {
    StoreError::ShardUnavailable {
        shard,
        reason: error.to_string(),
    }
}

/// A failure of shard `shard`'s, with the shard named if it was the database's.
fn on_shard(shard: ShardIndex, error: StoreError) -> StoreError {
    match error {
        StoreError::Database(error) => unavailable(shard, &error),
        other => other,
    }
}

#[async_trait]
impl TimerStore for ShardedStore {
    async fn arm_timer(&self, timer: &Timer) -> Result<(), StoreError> {
        let (index, shard) = self.serving(timer.game_id).await?;
        self.until_lost(index, shard.arm_timer(timer)).await
    }

    async fn cancel_timer(&self, game_id: Uuid, slot: TimerSlot) -> Result<bool, StoreError> {
        let (index, shard) = self.serving(game_id).await?;
        self.until_lost(index, shard.cancel_timer(game_id, slot))
            .await
    }

    async fn timers_of(&self, game_id: Uuid) -> Result<Vec<Timer>, StoreError> {
        let (index, shard) = self.serving(game_id).await?;
        self.until_lost(index, shard.timers_of(game_id)).await
    }

    /// Every shard's due timers, claimed at once: a shard that does not answer (or whose games
    /// may not be served yet) is skipped and logged, so the others' deadlines still fire; only
    /// when no shard answers is it an error. At most `limit` come back, soonest first: claims
    /// beyond it are handed back at once, due as they were.
    async fn claim_due(
        &self,
        owner: &str,
        horizon: SystemTime,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<Timer>, StoreError> {
        let answers = self
            .on_every_shard(|index, shard| async move {
                // Bounded: a shard that hangs (a partition, or a pool waiting out its connect
                // timeout) must not hold up the others' claims past the clock's horizon. A claim
                // cut off after the database took it leaves those timers claimed until their
                // lease lapses; only a shard slower than this bound pays that.
                let claim = async {
                    self.ensure_pulsed(index).await?;
                    shard.claim_due(owner, horizon, lease, limit).await
                };
                match tokio::time::timeout(CLAIM_BOUND, claim).await {
                    Ok(answer) => answer,
                    Err(_) => Err(StoreError::ShardUnavailable {
                        shard: index,
                        reason: format!(
                            "its due timers did not answer within {} ms",
                            CLAIM_BOUND.as_millis()
                        ),
                    }),
                }
            })
            .await;
        let mut claimed = Vec::new();
        let mut failure = None;
        let mut answered = false;
        for (index, answer) in answers.into_iter().enumerate() {
            let failing = &self.inner.pulses[index].claims_failing;
            match answer {
                Ok(timers) => {
                    answered = true;
                    claimed.extend(timers);
                    if failing.swap(false, std::sync::atomic::Ordering::Relaxed) {
                        tracing::info!(shard = index, "a shard's due timers are claimed again");
                    }
                }
                Err(error) => {
                    if !failing.swap(true, std::sync::atomic::Ordering::Relaxed) {
                        tracing::warn!(shard = index, %error, "a shard's due timers cannot be claimed until it is back; the other shards' fire");
                    }
                    failure = Some(error);
                }
            }
        }
        if let (false, Some(error)) = (answered, failure) {
            return Err(error);
        }
        claimed.sort_by_key(|timer| timer.fire_at);
        if claimed.len() > limit {
            for extra in claimed.split_off(limit) {
                self.release_timer(&extra, extra.fire_at).await?;
            }
        }
        Ok(claimed)
    }

    async fn release_timer(&self, timer: &Timer, retry_at: SystemTime) -> Result<(), StoreError> {
        let index = placement::shard_of(timer.game_id);
        let shard = self
            .inner
            .shards
            .get(usize::from(index))
            .ok_or(StoreError::NoSuchShard {
                game_id: timer.game_id,
                shard: index,
                shards: self.inner.shards.len(),
            })?;
        self.until_lost(index, shard.release_timer(timer, retry_at))
            .await
    }

    /// Each shard's fired timers deleted on it; every shard is tried, and the first failure is
    /// returned after the others were done.
    async fn complete_timers(&self, timers: &[Timer]) -> Result<u64, StoreError> {
        let mut by_shard: Vec<Vec<Timer>> = vec![Vec::new(); self.inner.shards.len()];
        for timer in timers {
            let index = usize::from(placement::shard_of(timer.game_id));
            match by_shard.get_mut(index) {
                Some(list) => list.push(*timer),
                None => {
                    return Err(StoreError::NoSuchShard {
                        game_id: timer.game_id,
                        shard: index as ShardIndex,
                        shards: self.inner.shards.len(),
                    });
                }
            }
        }
        let by_shard = &by_shard;
        let answers = self
            .on_every_shard(|index, shard| async move {
                let mine = &by_shard[usize::from(index)];
                if mine.is_empty() {
                    Ok(0)
                } else {
                    shard.complete_timers(mine).await
                }
            })
            .await;
        let mut done = 0;
        let mut failure = None;
        for answer in answers {
            match answer {
                Ok(n) => done += n,
                Err(error) => failure = failure.or(Some(error)),
            }
        }
        failure.map_or(Ok(done), Err)
    }

    async fn armed_timer_count(&self) -> Result<u64, StoreError> {
        let counts = self
            .on_all_shards(|_, shard| shard.armed_timer_count())
            .await?;
        Ok(counts.into_iter().sum())
    }
}

#[async_trait]
impl AdminStore for ShardedStore {
    /// One game's shard when the filter names it; otherwise every shard with the same filter,
    /// merged in the one order (creation time, then id, newest first), which makes the cursor
    /// of the last game shown continue on every shard alike.
    async fn find_games(&self, filter: &GameFilter) -> Result<Vec<FoundGame>, StoreError> {
        if let Some(game_id) = filter.game_id {
            let index = placement::shard_of(game_id);
            let Some(shard) = self.inner.shards.get(usize::from(index)) else {
                return Ok(Vec::new());
            };
            return self.until_lost(index, shard.find_games(filter)).await;
        }
        let pages = self
            .on_all_shards(|_, shard| shard.find_games(filter))
            .await?;
        let mut found: Vec<FoundGame> = pages.into_iter().flatten().collect();
        found.sort_by(|a, b| {
            (b.created_at, b.summary.meta.game_id).cmp(&(a.created_at, a.summary.meta.game_id))
        });
        found.truncate(crate::admin::page(filter.limit));
        Ok(found)
    }

    async fn append_audit(&self, entry: NewAuditEntry<'_>) -> Result<AuditEntry, StoreError> {
        self.main()
            .append_audit(entry)
            .await
            .map_err(|e| on_shard(0, e))
    }

    async fn audit_log(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        self.main()
            .audit_log(query)
            .await
            .map_err(|e| on_shard(0, e))
    }
}

#[async_trait]
impl LifecycleOutbox for ShardedStore {
    async fn facts_after(&self, after: u64, limit: usize) -> Result<Vec<Fact>, StoreError> {
        self.merged_page(
            limit,
            |fact: &Fact| fact.position,
            |shard| shard.facts_page(after, limit),
            |shard, target| shard.reach_facts(target),
        )
        .await
    }

    async fn watch_facts(&self) -> Result<watch::Receiver<u64>, StoreError> {
        self.follow_facts().await;
        let mut receiver = self.inner.fact_position.subscribe();
        receiver.borrow_and_update();
        Ok(receiver)
    }

    fn feed_shards(&self) -> usize {
        self.inner.shards.len()
    }

    async fn facts_after_position(
        &self,
        after: &FeedPosition,
        limit: usize,
    ) -> Result<FactsPage, StoreError> {
        self.page_by_position(after, limit).await
    }

    async fn watch_fact_positions(&self) -> Result<watch::Receiver<FeedPosition>, StoreError> {
        self.follow_facts().await;
        let mut receiver = self.inner.fact_positions.subscribe();
        receiver.borrow_and_update();
        Ok(receiver)
    }
}

#[async_trait]
impl GameStore for ShardedStore {
    /// On the first shard of the key's placement order ([`placement::placement_order`]: the
    /// key's own, then round the ring) whose pulse has not failed, so a lost shard takes no share
    /// of the new games; the key's own when every pulse failed.
    fn new_game_id(&self, creation_key: &str) -> Uuid {
        let shards = self.inner.shards.len();
        let down = |index: ShardIndex| {
            self.inner.pulses[usize::from(index)]
                .state
                .lock()
                .last_failed
        };
        let shard = placement::placement_order(creation_key, shards)
            .find(|&index| !down(index))
            .unwrap_or_else(|| placement::shard_for_key(creation_key, shards));
        placement::placed_id(shard)
    }

    /// On the shard the id names, unless an earlier creation with this key made a game on
    /// another shard (placed there while this one was down, or before it came back): then that
    /// game, replayed. The creation key's record lives with its game, so a retry placed on the
    /// same shard meets it there too.
    async fn create_armed(
        &self,
        creation_key: &str,
        meta: &GameMeta,
        events: &[Event],
        game: &Game,
        timers: &[Timer],
        facts: &[NewFact],
    ) -> Result<Created, StoreError> {
        let (index, shard) = self.serving(meta.game_id).await?;
        if let Some(game_id) = self.created_elsewhere(creation_key, index).await {
            return Ok(Created {
                game_id,
                replayed: true,
            });
        }
        self.until_lost(
            index,
            shard.create_armed(creation_key, meta, events, game, timers, facts),
        )
        .await
    }

    async fn load(&self, game_id: Uuid) -> Result<Option<GameRecord>, StoreError> {
        let (index, shard) = self.serving(game_id).await?;
        self.until_lost(index, shard.load(game_id)).await
    }

    async fn append_armed(&self, append: Append<'_>) -> Result<u64, StoreError> {
        let (index, shard) = self.serving(append.game_id).await?;
        self.until_lost(index, shard.append_armed(append)).await
    }

    async fn ended_games(
        &self,
        after_cursor: u64,
        limit: usize,
    ) -> Result<Vec<EndedRecord>, StoreError> {
        self.merged_page(
            limit,
            |ended: &EndedRecord| ended.cursor,
            |shard| shard.ended_page(after_cursor, limit),
            |shard, target| shard.reach_ended(target),
        )
        .await
    }

    async fn command_response(
        &self,
        game_id: Uuid,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let (index, shard) = self.serving(game_id).await?;
        self.until_lost(index, shard.command_response(game_id, key))
            .await
    }

    async fn events(
        &self,
        game_id: Uuid,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let (index, shard) = self.serving(game_id).await?;
        self.until_lost(index, shard.events(game_id, from_seq, limit))
            .await
    }

    async fn watch(&self, game_id: Uuid) -> Result<watch::Receiver<u64>, StoreError> {
        let (index, shard) = self.serving(game_id).await?;
        self.until_lost(index, shard.watch(game_id)).await
    }

    fn status_changes(&self, game_id: Uuid) -> watch::Receiver<u64> {
        let index = usize::from(placement::shard_of(game_id));
        // A game of a shard that is not configured has no status to change: its other
        // operations fail with `NoSuchShard`; shard 0's notifier never wakes for it.
        let shard = self.inner.shards.get(index).unwrap_or(self.main());
        shard.status_changes(game_id)
    }

    async fn report_presence(
        &self,
        game_id: Uuid,
        side: Side,
        gateway_id: &str,
        connected: bool,
        now: SystemTime,
        lease_until: SystemTime,
        arm: Option<&ArmAfterReport<'_>>,
    ) -> Result<Presence, StoreError> {
        let (index, shard) = self.serving(game_id).await?;
        self.until_lost(
            index,
            shard.report_presence(game_id, side, gateway_id, connected, now, lease_until, arm),
        )
        .await
    }

    async fn presence(&self, game_id: Uuid, now: SystemTime) -> Result<Presence, StoreError> {
        let (index, shard) = self.serving(game_id).await?;
        self.until_lost(index, shard.presence(game_id, now)).await
    }

    async fn observe(
        &self,
        game_id: Uuid,
        now: SystemTime,
    ) -> Result<Option<ObservedGame>, StoreError> {
        let (index, shard) = self.serving(game_id).await?;
        self.until_lost(index, shard.observe(game_id, now)).await
    }

    /// Every shard's newest games of the player, merged newest first by the creation time
    /// written in the ids (version 7 and placed ids carry it; a shard lists its own by its
    /// creation time, which agrees to the millisecond).
    async fn games_of_player(
        &self,
        player: &str,
        limit: usize,
    ) -> Result<Vec<GameSummary>, StoreError> {
        let lists = self
            .on_all_shards(|_, shard| shard.games_of_player(player, limit))
            .await?;
        let mut games: Vec<GameSummary> = lists.into_iter().flatten().collect();
        games.sort_by(|a, b| {
            let key = |g: &GameSummary| (placement::created_ms(g.meta.game_id), g.meta.game_id);
            key(b).cmp(&key(a))
        });
        games.truncate(limit);
        Ok(games)
    }

    /// The main database answers: what a process needs to run at all (matchmaking, webhooks and
    /// the audit log live there). A shard that is down does not make the process unready: its
    /// games are refused, the others served.
    async fn ping(&self) -> Result<(), StoreError> {
        self.main().ping().await.map_err(|e| on_shard(0, e))
    }

    /// Every shard pulsed at once, each accounting for its own outages (a shard that was
    /// unreachable moves its own games' deadlines when it is back). Fails only when no shard
    /// could be pulsed; a shard that could not is refused to its games until a pulse reaches it.
    /// The outage returned spans those found: the earliest start, the latest end, every
    /// deadline moved.
    async fn pulse(
        &self,
        clock: &WallClock,
        rule: &OutageRule,
    ) -> Result<Option<Outage>, StoreError> {
        let _one_at_a_time = self.inner.pulse_all.lock().await;
        *self.inner.pulsing.lock() = Some(Pulsing {
            rule: *rule,
            clock: clock.clone(),
        });
        let answers = join_all(self.inner.shards.iter().enumerate().map(|(index, _)| {
            let index = index as ShardIndex;
            async move {
                let _one = self.inner.pulses[usize::from(index)].running.lock().await;
                self.pulse_shard(index, clock, rule)
                    .await
                    .map_err(|e| on_shard(index, e))
            }
        }))
        .await;
        let mut found: Option<Outage> = None;
        let mut failure = None;
        let mut answered = false;
        for answer in answers {
            match answer {
                Ok(outage) => {
                    answered = true;
                    if let Some(outage) = outage {
                        found = Some(match found {
                            None => outage,
                            Some(earlier) => Outage {
                                from: earlier.from.min(outage.from),
                                to: earlier.to.max(outage.to),
                                deadlines_moved: earlier.deadlines_moved + outage.deadlines_moved,
                            },
                        });
                    }
                }
                Err(error) => failure = Some(error),
            }
        }
        match (answered, failure) {
            (false, Some(error)) => Err(error),
            _ => Ok(found),
        }
    }
}
