//! The pairing rules, pure: which waiting tickets of one queue to pair now.
//!
//! Tickets come ordered priority first (players seated again after an opponent lost the seat),
//! then oldest first. Casual queues pair them in that order. Rated queues pair each ticket, in
//! that order, with the closest-rated unpaired ticket within both tickets' windows; a window is
//! `base + growth × seconds waited`, capped, so a player who waits long gets a wider choice.

use crate::store::Ticket;
use std::time::Duration;

/// The rated window's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatingWindow {
    /// Rating difference accepted at once.
    pub base: f64,
    /// How much the window widens per second of waiting.
    pub growth_per_second: f64,
    /// The widest window.
    pub max: f64,
}

impl Default for RatingWindow {
    fn default() -> Self {
        RatingWindow {
            base: 100.0,
            growth_per_second: 10.0,
            max: 600.0,
        }
    }
}

impl RatingWindow {
    /// The window of a ticket that has waited `waited`.
    pub fn width(&self, waited: Duration) -> f64 {
        (self.base + self.growth_per_second * waited.as_secs_f64()).min(self.max)
    }
}

/// Pairs for a casual queue: consecutive tickets in the given order.
pub fn pair_casual(waiting: &[Ticket]) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    let mut open: Option<usize> = None;
    for (i, ticket) in waiting.iter().enumerate() {
        match open {
            Some(j) if waiting[j].player != ticket.player => {
                pairs.push((j, i));
                open = None;
            }
            Some(_) => {}
            None => open = Some(i),
        }
    }
    pairs
}

/// Pairs for a rated queue at `now_ms`: in the given order, each unpaired ticket takes the
/// closest-rated unpaired ticket that is within both tickets' windows.
pub fn pair_rated(waiting: &[Ticket], now_ms: u64, window: &RatingWindow) -> Vec<(usize, usize)> {
    let widths: Vec<f64> = waiting
        .iter()
        .map(|t| window.width(Duration::from_millis(now_ms.saturating_sub(t.enqueued_ms))))
        .collect();
    let mut paired = vec![false; waiting.len()];
    let mut pairs = Vec::new();
    for i in 0..waiting.len() {
        if paired[i] {
            continue;
        }
        let best = (0..waiting.len())
            .filter(|&j| j != i && !paired[j] && waiting[j].player != waiting[i].player)
            .map(|j| (j, (waiting[i].rating - waiting[j].rating).abs()))
            .filter(|&(j, gap)| gap <= widths[i].min(widths[j]))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((j, _)) = best {
            paired[i] = true;
            paired[j] = true;
            pairs.push((i, j));
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Queue, TicketState};

    fn ticket(player: &str, rating: f64, enqueued_ms: u64) -> Ticket {
        Ticket {
            player: player.into(),
            ticket_id: format!("t-{player}"),
            queue: Queue {
                rules: "hidden-front".into(),
                time_control: "online".into(),
                rated: true,
            },
            state: TicketState::Waiting,
            priority: false,
            rating,
            enqueued_ms,
            expires_ms: u64::MAX,
            match_id: None,
            game_id: None,
        }
    }

    #[test]
    fn casual_pairs_in_order_and_leaves_the_odd_one() {
        let t = [
            ticket("a", 1500.0, 1),
            ticket("b", 900.0, 2),
            ticket("c", 2400.0, 3),
        ];
        assert_eq!(pair_casual(&t), vec![(0, 1)]);
    }

    #[test]
    fn rated_pairs_the_closest_within_the_window() {
        let window = RatingWindow {
            base: 100.0,
            growth_per_second: 10.0,
            max: 1000.0,
        };
        let t = [
            ticket("a", 1500.0, 0),
            ticket("b", 1750.0, 0),
            ticket("c", 1580.0, 0),
            ticket("d", 1560.0, 0),
        ];
        // At once: a takes d (60 away) over c (80); b (170+ from everyone) waits.
        assert_eq!(pair_rated(&t, 0, &window), vec![(0, 3)]);
    }

    #[test]
    fn rated_window_widens_with_waiting() {
        let window = RatingWindow {
            base: 100.0,
            growth_per_second: 10.0,
            max: 1000.0,
        };
        let t = [ticket("a", 1500.0, 0), ticket("b", 1750.0, 0)];
        assert!(
            pair_rated(&t, 14_000, &window).is_empty(),
            "window 240 < 250"
        );
        assert_eq!(pair_rated(&t, 15_000, &window), vec![(0, 1)]);
        // Both windows must reach: a newcomer's narrow window holds the pair back.
        let t = [ticket("a", 1500.0, 0), ticket("b", 1750.0, 15_000)];
        assert!(pair_rated(&t, 15_000, &window).is_empty());
    }

    #[test]
    fn the_window_is_capped() {
        let window = RatingWindow::default();
        assert_eq!(window.width(Duration::from_secs(3600)), window.max);
    }
}
