//! The matchmaking service's settings; tests shorten the timings.

use crate::pairing::RatingWindow;
use crate::policy::RatingIntegrity;
use hidden_front_time::WallClock;
use std::time::Duration;
use uuid::Uuid;

/// Settings of the matchmaking service.
#[derive(Debug, Clone)]
pub struct MatchmakingConfig {
    /// This process's id (holder of computer-seat leases); unique per process.
    pub process_id: String,
    /// How often the pairing loop runs (also expiry of tickets and invites).
    pub pairing_interval: Duration,
    /// The rated window and how it widens.
    pub window: RatingWindow,
    /// Which rated games change no rating (too short, or one too many between the same two).
    pub rating_integrity: RatingIntegrity,
    /// A ticket's time to live when the request gives none.
    pub ticket_ttl: Duration,
    /// The longest time to live a request may ask for.
    pub max_ticket_ttl: Duration,
    /// The time to live of a ticket made for a player seated again.
    pub requeue_ttl: Duration,
    /// How long an invite stays open.
    pub invite_ttl: Duration,
    /// The link form of an invite is this base with the code appended (a `/` is put between).
    pub invite_base_url: String,
    /// How often the ended-games feed is read.
    pub feed_interval: Duration,
    /// How long a computer seat's driver holds its lease without renewal.
    pub computer_lease: Duration,
    /// How often unclaimed computer games are looked for (new ones in this process wake it at once).
    pub computer_scan_interval: Duration,
    /// A match whose game was not created after this long is retried (a process died meanwhile).
    pub pending_match_retry: Duration,
    /// A bulk can be cancelled only until this long before its start: from then on a process
    /// may be creating its games (the margin also covers the processes' clocks differing).
    pub bulk_cancel_margin: Duration,
    /// The clock of tickets, invites and pairing windows (tests move it by hand). Computer-seat
    /// leases always use the system clock: they are shared with other processes.
    pub clock: WallClock,
}

impl Default for MatchmakingConfig {
    fn default() -> Self {
        MatchmakingConfig {
            process_id: format!("matchmaking-{}", Uuid::new_v4()),
            pairing_interval: Duration::from_millis(500),
            window: RatingWindow::default(),
            rating_integrity: RatingIntegrity::default(),
            ticket_ttl: Duration::from_secs(600),
            max_ticket_ttl: Duration::from_secs(3600),
            requeue_ttl: Duration::from_secs(600),
            invite_ttl: Duration::from_secs(24 * 3600),
            invite_base_url: "https://hiddenfront.example/invite".into(),
            feed_interval: Duration::from_millis(300),
            computer_lease: Duration::from_secs(15),
            computer_scan_interval: Duration::from_secs(2),
            pending_match_retry: Duration::from_secs(5),
            bulk_cancel_margin: Duration::from_secs(5),
            clock: WallClock::system(),
        }
    }
}
