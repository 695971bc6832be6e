//! How a vector of `count` elements is split into `p` chunks for ring and twophase.
//!
//! Owns only the index arithmetic: chunk `c` of `p` gets `count / p` elements, and the first
//! `count % p` chunks get one more, so every element belongs to exactly one chunk, chunks differ
//! in size by at most one, and when `count < p` the last chunks are empty. It must not know about
//! buffers, threads or dtypes.

use std::ops::Range;

/// The element range of chunk `c` (0-based, `c < p`) when `count` elements are split `p` ways.
pub(crate) fn chunk_range(count: usize, p: usize, c: usize) -> Range<usize> {
    debug_assert!(p > 0 && c < p, "chunk {c} of {p}");
    let base = count / p;
    let extra = count % p;
    let start = c * base + c.min(extra);
    let len = base + usize::from(c < extra);
    start..start + len
}

/// `(a - b) mod p` for ranks and chunk indices, without underflow.
pub(crate) fn ring_sub(a: usize, b: usize, p: usize) -> usize {
    (a + p - b % p) % p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element is covered exactly once, in order, and sizes differ by at most one.
    fn assert_partition(count: usize, p: usize) {
        let mut next = 0;
        let mut sizes = Vec::new();
        for c in 0..p {
            let r = chunk_range(count, p, c);
            assert_eq!(
                r.start, next,
                "count {count} p {p} chunk {c} starts late or early"
            );
            next = r.end;
            sizes.push(r.len());
        }
        assert_eq!(next, count, "count {count} p {p}: elements dropped");
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        assert!(
            max - min <= 1,
            "count {count} p {p}: uneven beyond one: {sizes:?}"
        );
    }

    #[test]
    fn partitions_every_count_exactly() {
        for p in 1..=9 {
            for count in 0..=40 {
                assert_partition(count, p);
            }
            assert_partition(1 << 20, p);
            assert_partition((1 << 20) + 3, p);
        }
    }

    #[test]
    fn non_divisible_counts_give_leading_chunks_one_more() {
        assert_eq!(chunk_range(10, 4, 0), 0..3);
        assert_eq!(chunk_range(10, 4, 1), 3..6);
        assert_eq!(chunk_range(10, 4, 2), 6..8);
        assert_eq!(chunk_range(10, 4, 3), 8..10);
    }

    #[test]
    fn counts_below_p_leave_trailing_chunks_empty() {
        assert_eq!(chunk_range(2, 8, 0), 0..1);
        assert_eq!(chunk_range(2, 8, 1), 1..2);
        for c in 2..8 {
            assert!(chunk_range(2, 8, c).is_empty(), "chunk {c}");
        }
    }

    #[test]
    fn ring_sub_wraps() {
        assert_eq!(ring_sub(0, 1, 4), 3);
        assert_eq!(ring_sub(2, 5, 4), 1);
        assert_eq!(ring_sub(3, 0, 4), 3);
    }
}
