//! The bootstrap's keyed random stream: the 32-bit words of ChaCha8, read straight from the
//! generator's 64-word blocks.
//!
//! Owns how the bootstrap turns words into resample indices. The words, and their order, are
//! exactly those of `rand_chacha::ChaCha8Rng::next_u32` seeded with the same `u64` — that
//! is what every interval ever reported was drawn from, so it must not change. Only the way
//! they are handed out differs: a resample reads its indices from the block in place instead
//! of having them copied out as bytes by `fill_bytes` and put back together into words (the
//! bootstrap draws 5·10⁸ words for a 10,000-run report).

use rand_chacha::rand_core::block::BlockRngCore;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Core;

type Block = <ChaCha8Core as BlockRngCore>::Results;

/// Words per generated block (ChaCha8 refills four 16-word blocks at once).
const BLOCK_WORDS: usize = 64;

/// A ChaCha8 word stream (see the module doc); `Clone` to replay it.
#[derive(Clone)]
pub(crate) struct Stream {
    core: ChaCha8Core,
    block: Block,
    /// Next unread word of `block`; `BLOCK_WORDS` when the block is used up.
    at: usize,
}

impl Stream {
    /// The stream of `ChaCha8Rng::seed_from_u64(seed)`.
    pub(crate) fn seed_from_u64(seed: u64) -> Stream {
        Stream {
            core: ChaCha8Core::seed_from_u64(seed),
            block: Block::default(),
            at: BLOCK_WORDS,
        }
    }

    /// The next word.
    #[inline]
    pub(crate) fn next_u32(&mut self) -> u32 {
        if self.at >= BLOCK_WORDS {
            self.refill();
        }
        let word = self.block.as_ref()[self.at];
        self.at += 1;
        word
    }

    /// Draw `counts.len()` indices below `counts.len()` — one word each, by multiply-shift —
    /// and count how often each was drawn into `counts` (which the caller zeroed).
    ///
    /// Multiply-shift of a 32-bit word has a bias of at most n / 2^32, far below Monte-Carlo
    /// error, and is about twice as fast as rejection sampling in this, the hottest loop.
    #[inline]
    pub(crate) fn count_indices(&mut self, counts: &mut [u32]) {
        let n = counts.len();
        let mut left = n;
        while left > 0 {
            if self.at >= BLOCK_WORDS {
                self.refill();
            }
            let take = left.min(BLOCK_WORDS - self.at);
            for &x in &self.block.as_ref()[self.at..self.at + take] {
                counts[((u64::from(x) * n as u64) >> 32) as usize] += 1;
            }
            self.at += take;
            left -= take;
        }
    }

    #[cold]
    fn refill(&mut self) {
        self.core.generate(&mut self.block);
        self.at = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn words_are_those_of_chacha8rng_next_u32() {
        for seed in [0u64, 1, 0x5EED_CA3A_16B0_0757, u64::MAX] {
            let mut ours = Stream::seed_from_u64(seed);
            let mut theirs = ChaCha8Rng::seed_from_u64(seed);
            for i in 0..1000 {
                assert_eq!(ours.next_u32(), theirs.next_u32(), "seed {seed}, word {i}");
            }
        }
    }

    #[test]
    fn counted_indices_use_one_word_each_across_block_ends() {
        // Lengths below, at and across the 64-word block, mixed with single words so the
        // draws start at every offset within a block.
        let mut ours = Stream::seed_from_u64(9);
        let mut theirs = ChaCha8Rng::seed_from_u64(9);
        for n in [1usize, 2, 3, 7, 50, 63, 64, 65, 130, 201, 5, 64] {
            let mut got = vec![0u32; n];
            ours.count_indices(&mut got);
            let mut want = vec![0u32; n];
            for _ in 0..n {
                want[((u64::from(theirs.next_u32()) * n as u64) >> 32) as usize] += 1;
            }
            assert_eq!(got, want, "n = {n}");
            assert_eq!(got.iter().sum::<u32>() as usize, n);
            assert_eq!(ours.next_u32(), theirs.next_u32(), "after n = {n}");
        }
    }
}
