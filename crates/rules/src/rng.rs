//! A small deterministic random source.
//!
//! The engine is pure: it never asks the operating system for entropy. Callers seed a [`GameRng`]
//! (the session service from the OS, tests and benchmarks from a fixed number) and pass it to the
//! few operations that need chance: random deployments, reshuffles and piece ids. Every random
//! choice ends up recorded in an event, so replaying a game never needs the generator again.

use serde::{Deserialize, Serialize};

/// xoshiro256** seeded through SplitMix64: fast, small, and good enough for game chance (it is not
/// a cryptographic generator; seed it from a secure source where guessing the seed would matter).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameRng {
    state: [u64; 4],
}

impl GameRng {
    /// A generator whose whole future output is fixed by `seed`.
    pub fn from_seed(seed: u64) -> GameRng {
        let mut sm = seed;
        let mut next = || {
            sm = sm.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = sm;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        GameRng {
            state: [next(), next(), next(), next()],
        }
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A uniform number in `0..bound` (Lemire's multiply-shift with rejection; `bound` must be > 0).
    #[inline]
    pub fn below(&mut self, bound: u32) -> u32 {
        debug_assert!(bound > 0);
        let bound = bound as u64;
        loop {
            let m = (self.next_u64() >> 32) * bound;
            let low = m as u32 as u64;
            if low >= (1u64 << 32) % bound {
                return (m >> 32) as u32;
            }
        }
    }

    /// Shuffles `items` uniformly (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u32 + 1) as usize;
            items.swap(i, j);
        }
    }
}
