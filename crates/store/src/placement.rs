//! Where a game lives when the store is spread over several databases (shards): the rule that
//! puts a new game on a shard, and the one that finds it again from its id alone.
//!
//! **The shard is written into the game id.** A sharded store mints each new game's id
//! ([`crate::GameStore::new_game_id`]) as a UUID of version 8 (RFC 9562's layout for
//! application-defined ids) that is otherwise a version 7 id: the first 48 bits are the creation
//! time in milliseconds and the following bits the same per-process counter and random bits, so
//! ids still sort by creation time. The last two bytes hold the shard's index. [`shard_of`] reads
//! it back; every other id (the version 7 and version 4 ids of games created before the store was
//! sharded) is on shard 0, the database that held every game until then.
//!
//! Why in the id rather than a hash of it or a directory: finding a game costs nothing (no lookup
//! on the move path, no scan of the shards), and adding a shard changes nothing for existing
//! games. With `hash(id) mod N`, going from N to N + 1 shards would move most games; with a
//! directory, every move would first read it.
//!
//! **Which shard a new game gets.** [`shard_for_key`]: a stable hash of the creation's
//! idempotency key, modulo the number of shards configured now. A retry of the same creation
//! (same key) therefore goes to the same shard, where the key's record finds the first game,
//! so a retried `CreateGame` never makes a second game. Keys are random or unique per match
//! (UUIDs), so new games spread evenly: each shard gets 1/N of them, and with millions of games
//! the shares differ by well under 1 %. After a shard is added, new games land on every shard
//! alike, the new one included, and the old shards' share of running games falls as their games
//! end (a game lasts minutes, so within the hour the running games are spread evenly too).
//!
//! One retry window is not covered: a creation retried with the same key across a change of the
//! shard count (a rolling restart that adds a shard) may hash to another shard and make a second
//! game there. Matchmaking's keys are per match and its retries come within seconds; add shards
//! at a quiet moment.

use uuid::Uuid;

/// The most shards a store may have: a shard's index must fit the low byte of the feeds'
/// positions (`migrations/0012_shards.sql`).
pub const MAX_SHARDS: usize = 256;

/// A shard's index in the configured list (0 is the main database).
pub type ShardIndex = u16;

/// The version nibble of a placed id.
const PLACED_VERSION: u8 = 8;

/// The shard a game lives on, from its id alone: the index written in a placed (version 8) id,
/// 0 for any other id.
pub fn shard_of(game_id: Uuid) -> ShardIndex {
    let bytes = game_id.as_bytes();
    if game_id.get_version_num() == usize::from(PLACED_VERSION)
        && game_id.get_variant() == uuid::Variant::RFC4122
    {
        u16::from_be_bytes([bytes[14], bytes[15]])
    } else {
        0
    }
}

/// A new game id placed on `shard`: a fresh version 7 id (time-ordered) with its version set to
/// 8 and its last two bytes to the shard's index.
pub fn placed_id(shard: ShardIndex) -> Uuid {
    place(Uuid::now_v7(), shard)
}

/// `id` with the version set to 8 and its last two bytes to `shard`.
fn place(id: Uuid, shard: ShardIndex) -> Uuid {
    let mut bytes = id.into_bytes();
    bytes[6] = (bytes[6] & 0x0f) | (PLACED_VERSION << 4);
    // The variant stays RFC 4122's (10xx in byte 8), as now_v7 set it.
    let [high, low] = shard.to_be_bytes();
    bytes[14] = high;
    bytes[15] = low;
    Uuid::from_bytes(bytes)
}

/// The shard a new game created under `creation_key` goes to, of `shards` (at least 1): a stable
/// hash of the key (FNV-1a, then a 64-bit finaliser so that keys differing in their last
/// characters still spread), modulo the count. Stable across processes and releases, which the
/// standard library's hasher does not promise.
pub fn shard_for_key(creation_key: &str, shards: usize) -> ShardIndex {
    let shards = shards.clamp(1, MAX_SHARDS) as u64;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in creation_key.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    // splitmix64's finaliser.
    hash ^= hash >> 30;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^= hash >> 27;
    hash = hash.wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^= hash >> 31;
    (hash % shards) as ShardIndex
}

/// The shards a new game created under `creation_key` may go to, of `shards`, in the order they
/// are tried: the key's own ([`shard_for_key`]), then the next ones round the ring. A sharded
/// store places the game on the first that is not known to be down, so a lost shard takes no
/// share of the new games; every process computes the same order, and a retry of the creation
/// looks for the key on every shard of it (`ShardedStore::create_armed`).
pub fn placement_order(creation_key: &str, shards: usize) -> impl Iterator<Item = ShardIndex> {
    let count = shards.clamp(1, MAX_SHARDS) as ShardIndex;
    let first = shard_for_key(creation_key, shards);
    (0..count).map(move |step| (first + step) % count)
}

/// The creation time in a version 7 or placed id (milliseconds since the epoch), used to merge
/// the shards' lists newest first; 0 for other ids.
pub fn created_ms(game_id: Uuid) -> u64 {
    match game_id.get_version_num() {
        7 | 8 => {
            let b = game_id.as_bytes();
            u64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]])
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placed_id_names_its_shard_and_keeps_its_time() {
        for shard in [0, 1, 7, 255] {
            let id = placed_id(shard);
            assert_eq!(shard_of(id), shard);
            assert_eq!(id.get_version_num(), 8);
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as u64;
            assert!(created_ms(id).abs_diff(now_ms) < 60_000);
        }
    }

    #[test]
    fn ids_made_before_sharding_are_on_the_main_shard() {
        assert_eq!(shard_of(Uuid::now_v7()), 0);
        assert_eq!(shard_of(Uuid::new_v4()), 0);
        assert_eq!(shard_of(Uuid::nil()), 0);
    }

    #[test]
    fn placed_ids_still_sort_by_creation() {
        let ids: Vec<Uuid> = (0..200).map(|i| placed_id(i % 3)).collect();
        let mut sorted = ids.clone();
        sorted.sort_by_key(|id| created_ms(*id));
        assert_eq!(ids, sorted);
    }

    #[test]
    fn the_placement_order_starts_at_the_keys_shard_and_visits_each_once() {
        for key in ["a", "game-17", "matchmaking:42"] {
            for shards in 1..=5 {
                let order: Vec<ShardIndex> = placement_order(key, shards).collect();
                assert_eq!(order[0], shard_for_key(key, shards), "{key} over {shards}");
                let mut sorted = order.clone();
                sorted.sort();
                assert_eq!(sorted, (0..shards as ShardIndex).collect::<Vec<_>>());
                for pair in order.windows(2) {
                    assert_eq!(pair[1], (pair[0] + 1) % shards as ShardIndex);
                }
            }
        }
    }

    #[test]
    fn keys_spread_evenly_and_stay_put() {
        for shards in [2usize, 3, 5] {
            let mut counts = vec![0u32; shards];
            const KEYS: u32 = 30_000;
            for i in 0..KEYS {
                counts[usize::from(shard_for_key(&format!("match-{i}"), shards))] += 1;
            }
            let even = f64::from(KEYS) / shards as f64;
            for count in &counts {
                assert!(
                    (f64::from(*count) - even).abs() / even < 0.05,
                    "{shards} shards: {counts:?}"
                );
            }
        }
        // Stable: the same key, the same shard, in every process and release.
        assert_eq!(shard_for_key("a", 2), shard_for_key("a", 2));
        assert_eq!(shard_for_key("anything", 1), 0);
        // Pinned: a change of the hash would send retried creations of running matches to
        // another shard.
        let pinned: Vec<ShardIndex> = (0..6)
            .map(|i| shard_for_key(&format!("match-{i}"), 16))
            .collect();
        assert_eq!(pinned, [0, 7, 5, 6, 0, 1]);
    }
}
