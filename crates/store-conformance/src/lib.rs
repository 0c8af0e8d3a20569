//! The one conformance suite every [`GameStore`] must pass, so that the in-memory store used by
//! the one-box mode and unit tests behaves exactly like Postgres.
//!
//! Each check is a `pub async fn` taking the store under test as an `Arc<dyn GameStore>` (an
//! `Arc` because the race checks spawn tasks that share it); each panics with a message on a
//! breach of the contract. Games and events are real ones from the engine
//! ([`Game::create`](hidden_front_rules::Game::create), [`Game::handle`](hidden_front_rules::Game::handle)),
//! so snapshots round-trip the actual engine state.
//!
//! [`conformance_tests!`] turns every check into its own `#[tokio::test]`
//! for a given store:
//!
//! ```no_run
//! async fn run(_name: &'static str, check: hidden_front_store_conformance::Check) {
//!     check(std::sync::Arc::new(hidden_front_store::memory::MemoryStore::new())).await;
//! }
//! hidden_front_store_conformance::conformance_tests!(run);
//! ```
//!
//! Checks never sleep to synchronise: waits for a wake-up are `tokio::time::timeout` around
//! `changed()`, and racing tasks start together at a barrier. They assume a store of their own
//! (fresh player names keep them apart anyway).

mod admin;
mod appends;
mod ended;
mod games;
mod helpers;
mod lifecycle;
mod presence;
mod pulse;
mod races;
mod timers;
mod watch;

pub use admin::*;
pub use appends::*;
pub use ended::*;
pub use games::*;
pub use helpers::*;
pub use lifecycle::*;
pub use presence::*;
pub use pulse::*;
pub use races::*;
pub use timers::*;
pub use watch::*;

use hidden_front_store::GameStore;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// A running check, as the test macro hands it to a runner.
pub type CheckFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One check of the suite, applied to a store.
pub type Check = fn(Arc<dyn GameStore>) -> CheckFuture;

/// How long a check waits for something that should happen promptly (a watcher's wake-up) before
/// failing. Generous, because CI machines stall; never a sleep.
pub const WAKE_DEADLINE: Duration = Duration::from_secs(10);

/// How long a race of many tasks may take before the check fails instead of hanging.
pub const RACE_DEADLINE: Duration = Duration::from_secs(120);

/// Turns every conformance check into its own `#[tokio::test]` (multi-threaded runtime), calling
/// `$runner(name, check)` for each. The runner makes a fresh store, runs `check` on it and cleans
/// up; it has the signature `async fn(&'static str, hidden_front_store_conformance::Check)`.
/// The calling crate needs `tokio` (with `macros` and `rt-multi-thread`) as a dependency.
#[macro_export]
macro_rules! conformance_tests {
    (@tests $runner:path; $($check:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $check() {
                $runner(stringify!($check), |store| {
                    ::std::boxed::Box::pin($crate::$check(store))
                })
                .await;
            }
        )+
    };
    ($runner:path) => {
        $crate::conformance_tests!(@tests $runner;
            create_load_round_trip,
            load_missing_game_is_none,
            create_is_idempotent_on_creation_key,
            create_refuses_existing_game_id,
            concurrent_creates_with_one_key_make_one_game,
            append_happy_path,
            append_version_conflict_writes_nothing,
            append_duplicate_command_returns_first_answer,
            append_without_events_records_command,
            events_order_and_paging,
            events_carry_their_commit_times,
            events_carry_the_turn_deadline_their_append_armed,
            unknown_game_is_not_found,
            watch_wakes_after_append,
            concurrent_appends_have_one_winner,
            concurrent_appends_keep_a_gapless_log,
            concurrent_retries_of_one_command_have_one_winner,
            presence_leases,
            presence_reports_arm_their_timer,
            status_wakes_on_presence_flips_and_outages,
            observe_reads_game_presence_and_timers,
            games_of_player_newest_first,
            timers_arm_with_the_append_and_replace_by_slot,
            timers_claims_are_exclusive_and_lapse,
            timers_complete_only_the_fired_timer,
            timers_concurrent_claimers_share_without_overlap,
            a_fired_append_writes_only_while_its_timer_is_armed,
            ended_games_feed_in_order_once,
            lifecycle_facts_commit_with_their_events,
            lifecycle_watch_wakes_after_facts,
            lifecycle_followers_miss_nothing_under_concurrent_writers,
            lifecycle_by_position_reads_each_fact_once_in_order,
            find_games_by_every_criterion,
            audit_log_appends_lists_and_filters,
            pulse_accounts_for_an_outage_once,
            pulse_within_the_threshold_moves_nothing,
            concurrent_pulses_account_for_an_outage_once,
        );
    };
}
