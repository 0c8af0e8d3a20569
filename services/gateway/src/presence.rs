//! Presence: the gateway tells the session service which seated players are connected.
//!
//! A player may hold several connections to one game (two tabs, a reconnect racing the old
//! connection); the seat counts as connected while any of them is open. While connected, the
//! report is renewed well inside its lease, so if this gateway dies its players count as
//! disconnected when the lease runs out, without anyone having to notice the crash.

use crate::gateway::SessionClient;
use hidden_front_proto::v1 as pb;
use hidden_front_retry::Backoff;
use hidden_front_rules::Side;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use uuid::Uuid;

/// Counts connections per seat and keeps the session informed.
#[derive(Clone)]
pub(crate) struct Presence {
    inner: Arc<Inner>,
}

struct Inner {
    session: SessionClient,
    gateway_id: String,
    lease: Duration,
    seats: Mutex<HashMap<(Uuid, Side), watch::Sender<usize>>>,
}

/// Held by a connection; dropping it is the disconnect.
pub(crate) struct PresenceGuard {
    presence: Presence,
    seat: (Uuid, Side),
}

impl Drop for PresenceGuard {
    fn drop(&mut self) {
        let seats = self.presence.inner.seats.lock();
        if let Some(count) = seats.get(&self.seat) {
            count.send_modify(|c| *c = c.saturating_sub(1));
        }
    }
}

impl Presence {
    /// Presence reporting as gateway `gateway_id`, with reports holding for `lease`.
    pub(crate) fn new(session: SessionClient, gateway_id: String, lease: Duration) -> Presence {
        Presence {
            inner: Arc::new(Inner {
                session,
                gateway_id,
                lease: lease.max(Duration::from_secs(3)),
                seats: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Records one more connection of `side` in `game_id`.
    pub(crate) fn connect(&self, game_id: Uuid, side: Side) -> PresenceGuard {
        let seat = (game_id, side);
        let mut seats = self.inner.seats.lock();
        match seats.get(&seat) {
            Some(count) if !count.is_closed() => count.send_modify(|c| *c += 1),
            _ => {
                let (count, watcher) = watch::channel(1usize);
                seats.insert(seat, count);
                tokio::spawn(report(self.clone(), seat, watcher));
            }
        }
        PresenceGuard {
            presence: self.clone(),
            seat,
        }
    }

    /// Sends one report; whether the session took it.
    async fn send(&self, (game_id, side): (Uuid, Side), connected: bool) -> bool {
        let request = pb::ReportPresenceRequest {
            game_id: game_id.to_string(),
            side: hidden_front_wire::side_to_proto(side) as i32,
            connected,
            gateway_id: self.inner.gateway_id.clone(),
            lease_seconds: self.inner.lease.as_secs() as u32,
        };
        match self.inner.session.clone().report_presence(request).await {
            Ok(_) => true,
            Err(status) => {
                tracing::warn!(%game_id, side = side.name(), connected, error = %status, "presence report failed");
                false
            }
        }
    }
}

/// The first retry of a connected report that failed comes this soon; later ones double, up to
/// the renewal interval, with jitter so a gateway's seats do not retry in step.
const FIRST_RETRY: Duration = Duration::from_millis(250);

/// Reports the seat connected, renews the report every sixth to third of the lease
/// ([`renewal_interval`]) while any connection is open, and reports it disconnected when the
/// last one closes.
///
/// A connected report that fails (the session busy, restarting, or a shard of it down) is sent
/// again within [`FIRST_RETRY`] and backing off, not at the next renewal: until the session has
/// it, a player who is here shows as away to the opponent and their time to come back may run.
/// A failed disconnected report is not retried: the lease ends the seat's presence anyway, and
/// a late retry could land after the player's next connection had reported them back.
async fn report(presence: Presence, seat: (Uuid, Side), mut count: watch::Receiver<usize>) {
    let renew = renewal_interval(presence.inner.lease, seat);
    let mut retries = Backoff::new(FIRST_RETRY, renew).jittered();
    let mut next_report = |sent: bool| {
        if sent {
            retries.reset();
            renew
        } else {
            retries.next_delay().min(renew)
        }
    };
    let mut wait = next_report(presence.send(seat, true).await);
    loop {
        while *count.borrow_and_update() > 0 {
            tokio::select! {
                changed = count.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(wait) => {
                    wait = next_report(presence.send(seat, true).await);
                }
            }
        }
        // Forget the seat before reporting, so a later connection starts a fresh reporter. A
        // connection that arrived between the count reaching zero and here raised it again:
        // then keep reporting instead.
        let forgotten = {
            let mut seats = presence.inner.seats.lock();
            let idle = seats.get(&seat).is_some_and(|c| *c.borrow() == 0);
            if idle {
                seats.remove(&seat);
            }
            idle
        };
        if forgotten {
            presence.send(seat, false).await;
            return;
        }
    }
}

/// How often `seat`'s report is renewed: between a sixth and a third of the lease, fixed per seat
/// (from its game id's random bits). Why: seats that connected together (a gateway restarted, a
/// thousand games started at once) would otherwise all renew in the same instant, every time, and
/// each renewal is a durable write (the lease and the reconnect timer) in the session's store;
/// 2,000 renewals in one instant held every move for half a second (docs/benchmarks.md,
/// "Renewals at one instant held the moves"). Spread, they fall across the period, and further
/// apart with every round.
fn renewal_interval(lease: Duration, (game_id, side): (Uuid, Side)) -> Duration {
    let bits =
        (game_id.as_u128() as u64) ^ (side.index() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let fraction = (bits % 1024) as f64 / 1024.0;
    (lease / 3).mul_f64(1.0 - fraction / 2.0)
}

#[cfg(test)]
mod tests {
    use super::renewal_interval;
    use hidden_front_rules::Side;
    use std::time::Duration;
    use uuid::Uuid;

    #[test]
    fn renewals_fall_inside_a_third_of_the_lease_and_spread_over_seats() {
        let lease = Duration::from_secs(30);
        let intervals: Vec<Duration> = (0..200)
            .flat_map(|_| {
                let game_id = Uuid::new_v4();
                [Side::South, Side::North].map(|side| renewal_interval(lease, (game_id, side)))
            })
            .collect();
        for interval in &intervals {
            assert!(
                (Duration::from_secs(5)..=Duration::from_secs(10)).contains(interval),
                "{interval:?}"
            );
        }
        // 400 seats: the shortest and the longest are most of the window apart.
        let shortest = intervals.iter().min().expect("seats");
        let longest = intervals.iter().max().expect("seats");
        assert!(
            *longest - *shortest > Duration::from_secs(4),
            "{shortest:?}..{longest:?}"
        );
        // One seat always renews at the same interval.
        let seat = (Uuid::new_v4(), Side::North);
        assert_eq!(renewal_interval(lease, seat), renewal_interval(lease, seat));
    }
}
