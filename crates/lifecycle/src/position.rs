//! A reader's place in the lifecycle feed as a position **per shard** ([`FeedPosition`]), and its
//! text form, the opaque `position` of `WatchLifecycle` and of the webhooks' stored state.
//!
//! Why a vector and not one number: a store spread over several databases (shards) keeps an
//! outbox per shard. One merged `u64` cursor can only be handed out once every shard has
//! answered (no shard may still commit below it), so while one shard is unreachable a merged
//! feed stops for all of them. With a position per shard a reader reads each shard after its own
//! entry: the shards that answer go on, and the one that did not is read from where it stopped
//! once it is back, nothing lost and nothing twice. Each game's facts keep their order (a game
//! lives on one shard); across shards the order is by position only among the facts read
//! together.
//!
//! The text form is `v1.` followed by `shard:position` entries joined by `,`, shards ascending,
//! numbers in decimal without leading zeros, e.g. `v1.0:1712,1:1969` (docs/sharding.md). It is
//! versioned so that a later form can be told apart, strict so that one vector has one text,
//! and validated before any store sees it: a text that does not parse is refused
//! ([`PositionError`]), never read as "from the start".

use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// The text form's prefix: its version.
const PREFIX: &str = "v1.";

/// The most shards a position may name (a shard's index is one byte).
pub const MAX_SHARDS: usize = 256;

/// The longest text accepted: every shard with the largest number
/// (`255:18446744073709551615,` is 25 bytes), plus the prefix. A longer text cannot be a valid
/// position, so it is refused before it is looked at.
pub const MAX_TEXT_LEN: usize = PREFIX.len() + MAX_SHARDS * 25;

/// A reader's place in the lifecycle feed: per shard, the position of the last fact it has
/// read on that shard (0: none yet). A shard the vector does not name counts as 0, so a
/// position saved before a shard was added reads the new shard from its start.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FeedPosition {
    /// Indexed by shard; never empty.
    entries: Vec<u64>,
}

/// Why a text is not a [`FeedPosition`]. The messages name what was wrong, for the caller's
/// error (they quote no more than a short piece of what was sent).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PositionError {
    /// The text is empty (a caller that means "from the start" leaves the field unset).
    #[error("is empty")]
    Empty,
    /// Longer than any position can be.
    #[error("is {len} bytes long, longer than any position ({MAX_TEXT_LEN})")]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// It does not start with a version this build reads.
    #[error("does not start with the version prefix \"v1.\"")]
    Version,
    /// The version prefix is followed by nothing.
    #[error("names no shard")]
    NoEntries,
    /// An entry is not `shard:position`.
    #[error("entry {entry} is not shard:position")]
    Entry {
        /// The entry's index (from 0).
        entry: usize,
    },
    /// A shard index is not a decimal number from 0 to 255 without leading zeros.
    #[error("entry {entry} has a shard that is not a number from 0 to 255")]
    Shard {
        /// The entry's index (from 0).
        entry: usize,
    },
    /// A position is not a decimal `u64` without leading zeros.
    #[error("entry {entry} has a position that is not a number from 0 to 2^64-1")]
    Number {
        /// The entry's index (from 0).
        entry: usize,
    },
    /// Shards out of order, or one named twice.
    #[error("entry {entry} names shard {shard} after a shard at or above it (shards ascend)")]
    Order {
        /// The entry's index (from 0).
        entry: usize,
        /// The shard it names.
        shard: usize,
    },
    /// It names a shard the store does not have ([`FeedPosition::check_shards`]).
    #[error("names shard {shard}, but the store has {shards} shard(s)")]
    UnknownShard {
        /// The shard named.
        shard: usize,
        /// How many the store has.
        shards: usize,
    },
}

impl FeedPosition {
    /// The start of a feed of `shards` shards: nothing read on any.
    pub fn start(shards: usize) -> FeedPosition {
        FeedPosition {
            entries: vec![0; shards.clamp(1, MAX_SHARDS)],
        }
    }

    /// The place of a reader of the merged feed that has read up to `cursor`: the merged feed
    /// delivers a position only once every shard's committed counter has reached it, so such a
    /// reader has read every shard up to `cursor`. How a consumer that kept a `u64` cursor (a
    /// webhook endpoint's stored cursor from before positions, `after_cursor`) continues by
    /// position. On one shard the two are the same thing.
    pub fn from_cursor(cursor: u64, shards: usize) -> FeedPosition {
        FeedPosition {
            entries: vec![cursor; shards.clamp(1, MAX_SHARDS)],
        }
    }

    /// How many shards it names (at least 1).
    pub fn shards(&self) -> usize {
        self.entries.len().max(1)
    }

    /// The position read up to on `shard` (0: nothing yet, or a shard it does not name).
    pub fn get(&self, shard: usize) -> u64 {
        self.entries.get(shard).copied().unwrap_or(0)
    }

    /// Every shard's entry, by shard.
    pub fn entries(&self) -> &[u64] {
        &self.entries
    }

    /// Records that the fact at `position` on `shard` was read (never moving an entry back:
    /// facts of one shard come in position order, so a lower one was read already). A shard
    /// beyond [`MAX_SHARDS`] is ignored (no store has it).
    pub fn advance(&mut self, shard: usize, position: u64) {
        if shard >= MAX_SHARDS {
            return;
        }
        if self.entries.len() <= shard {
            self.entries.resize(shard + 1, 0);
        }
        let entry = &mut self.entries[shard];
        *entry = (*entry).max(position);
    }

    /// Whether some shard of `latest` is past this position: there may be facts to read.
    pub fn is_behind(&self, latest: &FeedPosition) -> bool {
        latest
            .entries
            .iter()
            .enumerate()
            .any(|(shard, &last)| last > self.get(shard))
    }

    /// Refuses a position that names a shard beyond the `shards` a store has (a position of
    /// another store, or of a store that had more shards); naming fewer is fine.
    pub fn check_shards(&self, shards: usize) -> Result<(), PositionError> {
        let shards = shards.max(1);
        match self.entries.len() {
            len if len > shards => Err(PositionError::UnknownShard {
                shard: len - 1,
                shards,
            }),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for FeedPosition {
    /// The text form: every shard, ascending, `v1.0:<p0>,1:<p1>,...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(PREFIX)?;
        for (shard, position) in self.entries.iter().enumerate() {
            if shard > 0 {
                f.write_str(",")?;
            }
            write!(f, "{shard}:{position}")?;
        }
        Ok(())
    }
}

/// A decimal number without sign or leading zeros ("0" itself is fine).
fn decimal(text: &str) -> Option<u64> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    canonical.then(|| text.parse().ok()).flatten()
}

impl FromStr for FeedPosition {
    type Err = PositionError;

    fn from_str(text: &str) -> Result<FeedPosition, PositionError> {
        if text.is_empty() {
            return Err(PositionError::Empty);
        }
        if text.len() > MAX_TEXT_LEN {
            return Err(PositionError::TooLong { len: text.len() });
        }
        let body = text.strip_prefix(PREFIX).ok_or(PositionError::Version)?;
        if body.is_empty() {
            return Err(PositionError::NoEntries);
        }
        let mut entries: Vec<u64> = Vec::new();
        for (entry, pair) in body.split(',').enumerate() {
            let (shard, position) = pair.split_once(':').ok_or(PositionError::Entry { entry })?;
            let shard = decimal(shard)
                .and_then(|s| usize::try_from(s).ok())
                .filter(|&s| s < MAX_SHARDS)
                .ok_or(PositionError::Shard { entry })?;
            let position = decimal(position).ok_or(PositionError::Number { entry })?;
            if shard < entries.len() {
                return Err(PositionError::Order { entry, shard });
            }
            entries.resize(shard, 0);
            entries.push(position);
        }
        Ok(FeedPosition { entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<FeedPosition, PositionError> {
        text.parse()
    }

    #[test]
    fn the_text_form_round_trips() {
        for position in [
            FeedPosition::start(1),
            FeedPosition::start(3),
            FeedPosition::from_cursor(u64::MAX, 2),
            FeedPosition {
                entries: vec![17, 0, 4_611_686_018_427_387_905],
            },
            FeedPosition::from_cursor(7, MAX_SHARDS),
        ] {
            let text = position.to_string();
            assert!(text.len() <= MAX_TEXT_LEN, "{text}");
            assert_eq!(parse(&text), Ok(position), "{text}");
        }
        assert_eq!(FeedPosition::start(2).to_string(), "v1.0:0,1:0");
        assert_eq!(
            FeedPosition {
                entries: vec![12, 345]
            }
            .to_string(),
            "v1.0:12,1:345"
        );
    }

    #[test]
    fn a_shard_not_named_counts_as_nothing_read() {
        let sparse = parse("v1.0:5,2:9").unwrap();
        assert_eq!(sparse.entries(), &[5, 0, 9]);
        assert_eq!(sparse.get(1), 0);
        assert_eq!(sparse.get(7), 0);
        assert_eq!(sparse.to_string(), "v1.0:5,1:0,2:9");
        assert_eq!(parse("v1.1:3").unwrap().entries(), &[0, 3]);
    }

    #[test]
    fn every_malformed_form_is_refused_naming_what_is_wrong() {
        use PositionError::*;
        let cases: &[(&str, PositionError)] = &[
            ("", Empty),
            ("0:5", Version),
            ("v2.0:5", Version),
            ("V1.0:5", Version),
            ("v1", Version),
            ("v1.", NoEntries),
            ("v1.0", Entry { entry: 0 }),
            ("v1.0:1,", Entry { entry: 1 }),
            ("v1.,0:1", Entry { entry: 0 }),
            ("v1.0:1,1", Entry { entry: 1 }),
            ("v1.:5", Shard { entry: 0 }),
            ("v1.x:5", Shard { entry: 0 }),
            ("v1.-1:5", Shard { entry: 0 }),
            ("v1.+1:5", Shard { entry: 0 }),
            ("v1.256:5", Shard { entry: 0 }),
            ("v1.01:5", Shard { entry: 0 }),
            ("v1. 0:5", Shard { entry: 0 }),
            ("v1.0:", Number { entry: 0 }),
            ("v1.0:5 ", Number { entry: 0 }),
            ("v1.0:-5", Number { entry: 0 }),
            ("v1.0:05", Number { entry: 0 }),
            ("v1.0:1:2", Number { entry: 0 }),
            ("v1.0:18446744073709551616", Number { entry: 0 }),
            ("v1.0:1e3", Number { entry: 0 }),
            ("v1.0:1,0:2", Order { entry: 1, shard: 0 }),
            ("v1.1:1,0:2", Order { entry: 1, shard: 0 }),
            ("v1.0:1,2:1,2:3", Order { entry: 2, shard: 2 }),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text).as_ref(), Err(expected), "{text:?}");
        }
        let long = format!("v1.{}", "0".repeat(MAX_TEXT_LEN));
        assert_eq!(
            parse(&long),
            Err(TooLong {
                len: MAX_TEXT_LEN + 3
            })
        );
        // The messages say what was wrong.
        assert_eq!(
            Order { entry: 1, shard: 0 }.to_string(),
            "entry 1 names shard 0 after a shard at or above it (shards ascend)"
        );
    }

    #[test]
    fn a_position_naming_a_shard_the_store_lacks_is_refused() {
        let two = parse("v1.0:1,1:2").unwrap();
        assert_eq!(two.check_shards(2), Ok(()));
        assert_eq!(two.check_shards(3), Ok(()));
        assert_eq!(
            two.check_shards(1),
            Err(PositionError::UnknownShard {
                shard: 1,
                shards: 1
            })
        );
        assert_eq!(parse("v1.0:9").unwrap().check_shards(0), Ok(()));
    }

    #[test]
    fn advancing_never_moves_an_entry_back_and_compares_per_shard() {
        let mut position = FeedPosition::start(2);
        position.advance(1, 900);
        position.advance(1, 300);
        position.advance(0, 5);
        assert_eq!(position.entries(), &[5, 900]);
        position.advance(3, 1);
        assert_eq!(position.entries(), &[5, 900, 0, 1]);
        position.advance(MAX_SHARDS, 1);
        assert_eq!(position.shards(), 4);

        let latest = FeedPosition {
            entries: vec![5, 900],
        };
        assert!(!FeedPosition::from_cursor(900, 2).is_behind(&latest));
        // One shard ahead is enough, even when the other is far behind.
        assert!(
            FeedPosition {
                entries: vec![4, 10_000]
            }
            .is_behind(&latest)
        );
        assert!(FeedPosition::start(1).is_behind(&latest));
    }

    #[test]
    fn a_merged_cursor_becomes_every_shard_at_it() {
        assert_eq!(FeedPosition::from_cursor(42, 3).entries(), &[42, 42, 42]);
        assert_eq!(FeedPosition::from_cursor(42, 0).entries(), &[42]);
        assert_eq!(FeedPosition::from_cursor(42, 1).to_string(), "v1.0:42");
    }
}
