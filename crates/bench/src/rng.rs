//! A small seeded random source for the seats' choices (SplitMix64): reproducible per seed, no
//! dependency, plenty for picking moves.

/// SplitMix64 state.
#[derive(Debug, Clone)]
pub(crate) struct SeatRng(u64);

impl SeatRng {
    /// A source from `seed`.
    pub(crate) fn new(seed: u64) -> SeatRng {
        SeatRng(seed)
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0).
    pub(crate) fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound.max(1) as u64) as usize
    }

    /// True with `percent` % probability.
    pub(crate) fn percent(&mut self, percent: u32) -> bool {
        self.next_u64() % 100 < u64::from(percent)
    }
}
