//! Presence: gateways' leased reports and how long each side counts as connected.

use crate::helpers::*;
use hidden_front_rules::Side;
use hidden_front_store::{GameStore, Presence};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// A side is connected while any gateway's unexpired report says so; a lease ending at `t` no
/// longer counts at `t`; a later report from the same gateway replaces its earlier one; a side's
/// presence holds until the latest of its connected leases ends; reports are judged at the time
/// the caller gives, not by the store's own clock.
pub async fn presence_leases(store: Arc<dyn GameStore>) {
    let store = &*store;
    let (meta, _) = create_game(store, 20, &player("south"), &player("north")).await;
    let id = meta.game_id;
    let now = whole_second_now();
    let hour = Duration::from_secs(3600);
    let lease = now + hour;
    let connected = async |at: SystemTime| store.presence(id, at).await.unwrap().connected();

    assert_eq!(
        store.presence(id, now).await.expect("presence"),
        Presence::default(),
        "nobody is connected before any report"
    );
    assert_eq!(
        store
            .report_presence(id, Side::South, "gw-1", true, now, lease)
            .await
            .expect("report"),
        Presence {
            connected_until: [Some(lease), None]
        },
        "the report counts at once, until its lease ends"
    );
    assert_eq!(connected(now).await, [true, false]);
    assert_eq!(
        connected(lease - Duration::from_millis(1)).await,
        [true, false],
        "connected until the lease ends"
    );
    assert_eq!(
        store.presence(id, lease).await.unwrap(),
        Presence::default(),
        "a lease ending now no longer counts"
    );
    assert_eq!(
        connected(lease + hour).await,
        [false, false],
        "an expired lease counts as disconnected"
    );

    // An already expired report counts for nothing.
    assert_eq!(
        store
            .report_presence(
                id,
                Side::North,
                "gw-1",
                true,
                now,
                now - Duration::from_secs(1)
            )
            .await
            .unwrap()
            .connected(),
        [true, false]
    );
    // Another gateway saying "disconnected" does not outvote one saying "connected", nor
    // shorten how long it holds.
    assert_eq!(
        store
            .report_presence(id, Side::South, "gw-2", false, now, now + 2 * hour)
            .await
            .unwrap(),
        Presence {
            connected_until: [Some(lease), None]
        }
    );
    // The same gateway's new report replaces its old one.
    assert_eq!(
        store
            .report_presence(id, Side::South, "gw-1", false, now, lease)
            .await
            .unwrap(),
        Presence::default()
    );
    assert_eq!(
        store
            .report_presence(id, Side::North, "gw-2", true, now, lease)
            .await
            .unwrap()
            .connected(),
        [false, true]
    );
    // Two gateways connected for south (a reconnect through another gateway): the longer lease
    // keeps south connected after the shorter one ends, and says until when.
    store
        .report_presence(id, Side::South, "gw-1", true, now, now + hour)
        .await
        .unwrap();
    assert_eq!(
        store
            .report_presence(id, Side::South, "gw-3", true, now, now + 2 * hour)
            .await
            .unwrap()
            .connected_until[Side::South.index()],
        Some(now + 2 * hour),
        "the latest lease is the one that holds"
    );
    let later = now + hour + Duration::from_secs(1);
    assert_eq!(
        store.presence(id, later).await.unwrap(),
        Presence {
            connected_until: [Some(now + 2 * hour), None]
        }
    );
    assert_eq!(connected(now + 3 * hour).await, [false, false]);

    // A report is judged at the time the caller gives, not by the store's clock: north's
    // report given at the moment its own lease ends counts for nothing, although by the
    // store's clock that moment is an hour away.
    assert_eq!(
        store
            .report_presence(id, Side::North, "gw-2", true, lease, lease)
            .await
            .unwrap(),
        Presence {
            connected_until: [Some(now + 2 * hour), None]
        }
    );

    // Presence is per game.
    let (other, _) = create_game(store, 21, &player("south"), &player("north")).await;
    assert_eq!(
        store.presence(other.game_id, now).await.unwrap(),
        Presence::default()
    );
}
