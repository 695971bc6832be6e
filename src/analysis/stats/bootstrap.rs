//! Seeded percentile bootstrap of the median and of ratios of medians.
//!
//! Owns the resampling scheme and its reproducibility: every interval is drawn from a ChaCha8
//! stream seeded by `seed ⊕ fnv1a(key)`, where the key names what is being estimated (a run, a
//! pair of runs). The same data, seed and key give the same interval whatever order callers
//! visit runs in. Pure computation; knows nothing of runs or reports.

use super::stream::Stream;

/// Resamples per interval unless configured otherwise. 1 000 is the usual floor for 95 %
/// percentile intervals; it keeps the report of 10 000 runs × 50 rounds inside its time budget.
pub(crate) const DEFAULT_RESAMPLES: u32 = 1000;

/// Seed used when neither the plan nor the run recorded one (recorded in the report).
pub(crate) const DEFAULT_SEED: u64 = 0x5EED_CA3A_16B0_0757;

/// Confidence level of every interval.
pub(crate) const LEVEL: f64 = 0.95;

/// How bootstrap intervals are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bootstrap {
    pub(crate) resamples: u32,
    pub(crate) seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap {
            resamples: DEFAULT_RESAMPLES,
            seed: DEFAULT_SEED,
        }
    }
}

/// A two-sided interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub(crate) struct Interval {
    pub(crate) lo: f64,
    pub(crate) hi: f64,
}

impl Interval {
    /// Does the interval contain `x` (inclusive)?
    #[cfg(test)]
    pub(crate) fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }
}

impl Bootstrap {
    /// The random stream for one estimate, named by `key`.
    pub(crate) fn rng(&self, key: &str) -> Stream {
        Stream::seed_from_u64(self.seed ^ fnv1a(key.as_bytes()))
    }

    /// Bootstrap medians of `sorted` (ascending, non-empty): `resamples` draws, unsorted, from
    /// the stream named `key`. A single value (or zero resamples) gives that median once.
    #[cfg(test)]
    pub(crate) fn median_draws(&self, sorted: &[f64], key: &str) -> Vec<f64> {
        if sorted.len() < 2 || self.resamples == 0 {
            return vec![super::quantile_sorted(sorted, 0.5)];
        }
        let mut rng = self.rng(key);
        let mut counts = vec![0u32; sorted.len()];
        (0..self.resamples)
            .map(|_| resampled_median(sorted, &mut rng, &mut counts))
            .collect()
    }

    /// 95 % percentile interval of the median of `sorted` (ascending, non-empty).
    #[cfg(test)]
    pub(crate) fn median_ci(&self, sorted: &[f64], key: &str) -> Interval {
        interval(&self.median_draws(sorted, key))
    }

    /// 95 % percentile interval of `median(a) / median(b)`, resampling both independently
    /// (`a`, `b` ascending, non-empty, `b` positive) from streams `key/a` and `key/b`.
    #[cfg(test)]
    pub(crate) fn ratio_ci(&self, a: &[f64], b: &[f64], key: &str) -> Interval {
        let da = self.median_draws(a, &format!("{key}/a"));
        let db = self.median_draws(b, &format!("{key}/b"));
        ratio_interval(&da, &db)
    }
}

/// 95 % percentile interval of a set of bootstrap draws (non-empty).
pub(crate) fn interval(draws: &[f64]) -> Interval {
    let mut d = draws.to_vec();
    percentile_interval(&mut d)
}

/// 95 % percentile interval of `a_k / b_k` over paired independent draws (a draw list of
/// length one stands for a fixed value).
pub(crate) fn ratio_interval(a: &[f64], b: &[f64]) -> Interval {
    ratio_interval_at(a, b, LEVEL)
}

/// The percentile interval of `a_k / b_k` at confidence `level` (0 < level < 1).
pub(crate) fn ratio_interval_at(a: &[f64], b: &[f64], level: f64) -> Interval {
    let n = a.len().max(b.len());
    let pick = |d: &[f64], k: usize| if d.len() == 1 { d[0] } else { d[k] };
    let mut ratios: Vec<f64> = (0..n).map(|k| pick(a, k) / pick(b, k)).collect();
    percentile_interval_at(&mut ratios, level)
}

/// Median of one resample with replacement of `sorted` (`counts` at least as long).
///
/// Because `sorted` is ascending, the resample's order statistics are found by counting how
/// often each index was drawn and walking the counts — O(n) and no float sorting, which is
/// what keeps 10 000 runs × 1 000 resamples inside the report's time budget. The indices are
/// `n` consecutive words of `rng`, the same words `n` calls of `next_u32` would give.
pub(crate) fn resampled_median(sorted: &[f64], rng: &mut Stream, counts: &mut [u32]) -> f64 {
    let n = sorted.len();
    if n == 1 {
        return sorted[0];
    }
    let counts = &mut counts[..n];
    counts.fill(0);
    rng.count_indices(counts);
    median_of_counts(sorted, counts)
}

/// The median of the resample that drew `sorted[i]` `counts[i]` times (the counts sum to
/// `sorted.len()`): type 7, the mean of order statistics ⌊(n−1)/2⌋ and ⌈(n−1)/2⌉ (0-based).
#[inline]
fn median_of_counts(sorted: &[f64], counts: &[u32]) -> f64 {
    let n = sorted.len();
    let (k1, k2) = ((n - 1) / 2, n / 2);
    // Walk to the first index whose running count passes k1, then on to the one passing k2
    // (often the same). The counts sum to n > k2, so both walks end inside the slice.
    let mut i = 0;
    let mut cum = counts[0] as usize;
    while cum <= k1 {
        i += 1;
        cum += counts[i] as usize;
    }
    let first = sorted[i];
    while cum <= k2 {
        i += 1;
        cum += counts[i] as usize;
    }
    (first + sorted[i]) / 2.0
}

fn percentile_interval(draws: &mut [f64]) -> Interval {
    percentile_interval_at(draws, LEVEL)
}

/// The two-sided percentile interval at `level`, by selection instead of a full sort: the
/// order statistics a type-7 quantile interpolates between are the same values either way,
/// so the interval is bit-for-bit the sorted one, in linear rather than n log n time.
fn percentile_interval_at(draws: &mut [f64], level: f64) -> Interval {
    let tail = (1.0 - level) / 2.0;
    Interval {
        lo: quantile_selected(draws, tail),
        hi: quantile_selected(draws, 1.0 - tail),
    }
}

/// `quantile_sorted` of `xs` sorted by `total_cmp`, without sorting (reorders `xs`).
fn quantile_selected(xs: &mut [f64], q: f64) -> f64 {
    let h = (xs.len() as f64 - 1.0) * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    let (_, x_lo, above) = xs.select_nth_unstable_by(lo, f64::total_cmp);
    let x_lo = *x_lo;
    // Order statistic lo + 1 is the least of what lies above lo.
    let x_hi = if hi == lo {
        x_lo
    } else {
        above.iter().copied().min_by(f64::total_cmp).unwrap_or(x_lo)
    };
    x_lo + (h - lo as f64) * (x_hi - x_lo)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngCore, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn single_value_interval_is_the_value() {
        let b = Bootstrap::default();
        assert_eq!(b.median_ci(&[3.0], "k"), Interval { lo: 3.0, hi: 3.0 });
    }

    #[test]
    fn constant_data_gives_a_zero_width_interval() {
        let b = Bootstrap::default();
        let ci = b.median_ci(&[2.0; 20], "k");
        assert_eq!((ci.lo, ci.hi), (2.0, 2.0));
    }

    #[test]
    fn interval_brackets_the_median_and_stays_in_range() {
        let xs: Vec<f64> = (1..=21).map(f64::from).collect();
        let ci = Bootstrap::default().median_ci(&xs, "run");
        assert!(ci.lo <= 11.0 && 11.0 <= ci.hi, "{ci:?}");
        assert!(ci.lo >= 1.0 && ci.hi <= 21.0);
        // A 21-point uniform sample cannot pin its median to one value.
        assert!(ci.hi - ci.lo >= 2.0, "{ci:?}");
    }

    #[test]
    fn same_seed_and_key_reproduce_different_seed_or_key_differs() {
        let xs: Vec<f64> = (0..15).map(|i| f64::from(i * 37 % 101)).collect();
        let b = Bootstrap {
            resamples: 500,
            seed: 7,
        };
        assert_eq!(b.median_ci(&xs, "a"), b.median_ci(&xs, "a"));
        let first = |boot: Bootstrap, key: &str| boot.rng(key).next_u32();
        assert_ne!(first(b, "a"), first(Bootstrap { seed: 8, ..b }, "a"));
        assert_ne!(first(b, "a"), first(b, "b"));
    }

    #[test]
    fn resampled_median_of_even_length_averages_the_middle_pair() {
        // With every index drawn exactly once the resample is the data itself.
        let sorted = [1.0, 2.0, 3.0, 10.0];
        let mut counts = [0u32; 4];
        let mut rng = Bootstrap::default().rng("x");
        for _ in 0..200 {
            let m = resampled_median(&sorted, &mut rng, &mut counts);
            // Every resample median is a mean of two data values.
            let ok = sorted
                .iter()
                .any(|a| sorted.iter().any(|b| ((a + b) / 2.0 - m).abs() < 1e-12));
            assert!(ok, "{m}");
        }
    }

    /// The word-by-word draw from `rand_chacha`'s generator that the in-block path replaced,
    /// as the reference for the draws.
    fn resampled_median_word_by_word(sorted: &[f64], rng: &mut ChaCha8Rng) -> f64 {
        let n = sorted.len();
        let mut counts = vec![0u32; n];
        for _ in 0..n {
            let i = ((u64::from(rng.next_u32()) * n as u64) >> 32) as usize;
            counts[i] += 1;
        }
        median_of_counts(sorted, &counts)
    }

    #[test]
    fn median_of_counts_is_the_middle_of_the_expanded_resample() {
        let mut rng = Bootstrap::default().rng("counts");
        for n in [2usize, 3, 4, 5, 50, 51, 64, 201] {
            let sorted: Vec<f64> = (0..n).map(|i| (i as f64).sqrt() * 1.7).collect();
            for _ in 0..200 {
                let mut counts = vec![0u32; n];
                rng.count_indices(&mut counts);
                // The resample itself, ascending: sorted[i] repeated counts[i] times.
                let resample: Vec<f64> = (0..n)
                    .flat_map(|i| std::iter::repeat_n(sorted[i], counts[i] as usize))
                    .collect();
                let want = (resample[(n - 1) / 2] + resample[n / 2]) / 2.0;
                let got = median_of_counts(&sorted, &counts);
                assert_eq!(got.to_bits(), want.to_bits(), "n = {n}, counts {counts:?}");
            }
        }
    }

    #[test]
    fn bulk_draws_give_the_medians_and_stream_of_single_draws() {
        // Lengths below, at and across the 64-word refill, odd and even.
        for n in [2usize, 3, 7, 50, 63, 64, 65, 130, 201] {
            let sorted: Vec<f64> = (0..n).map(|i| (i * i) as f64 * 0.5).collect();
            let b = Bootstrap::default();
            let mut bulk = b.rng("stream");
            let mut single = ChaCha8Rng::seed_from_u64(b.seed ^ fnv1a(b"stream"));
            let mut counts = vec![0u32; n + 3];
            for _ in 0..40 {
                let got = resampled_median(&sorted, &mut bulk, &mut counts);
                let want = resampled_median_word_by_word(&sorted, &mut single);
                assert_eq!(got.to_bits(), want.to_bits(), "n = {n}");
            }
            // Both streams stand at the same word afterwards.
            assert_eq!(bulk.next_u32(), single.next_u32(), "n = {n}");
        }
    }

    #[test]
    fn selected_percentiles_equal_the_sorted_ones_bit_for_bit() {
        let mut rng = Bootstrap::default().rng("select");
        for len in [1usize, 2, 3, 39, 40, 41, 1000, 1001] {
            // Few distinct values so ties sit on the interpolated order statistics.
            let draws: Vec<f64> = (0..len)
                .map(|_| f64::from(rng.next_u32() % 17) / 3.0)
                .collect();
            for level in [LEVEL, 0.99, 0.5] {
                let mut sorted = draws.clone();
                sorted.sort_by(f64::total_cmp);
                let tail = (1.0 - level) / 2.0;
                let want = (
                    crate::analysis::stats::quantile_sorted(&sorted, tail),
                    crate::analysis::stats::quantile_sorted(&sorted, 1.0 - tail),
                );
                let got = percentile_interval_at(&mut draws.clone(), level);
                assert_eq!(
                    (got.lo.to_bits(), got.hi.to_bits()),
                    (want.0.to_bits(), want.1.to_bits()),
                    "len {len}, level {level}"
                );
            }
        }
    }

    #[test]
    fn ratio_of_a_doubled_sample_is_two() {
        let b: Vec<f64> = (100..110).map(f64::from).collect();
        let a: Vec<f64> = b.iter().map(|x| 2.0 * x).collect();
        let ci = Bootstrap::default().ratio_ci(&a, &b, "pair");
        assert!(ci.contains(2.0), "{ci:?}");
        assert!(ci.lo > 1.0, "a doubled sample is clearly slower: {ci:?}");
    }
}
