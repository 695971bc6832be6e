//! Sequential repeats: when a point of the sweep has seen enough repeats. With `[run] repeats =
//! { min, max }` the rows of a point (each stack against the baseline, a stack's default
//! against its best other variant) are judged at a few *looks* — after `min` repeats, then at
//! counts growing by half each time, and at `max` — and repeats continue only while some row
//! is still undecided.
//!
//! Why the false-alarm rate holds (docs/statistics.md, "Sequential repeats"): every look of
//! every row is a test of its own, and a row's final verdict is a false alarm only if the test
//! at the look it stopped on is one; so each verdict interval is taken at the level its family
//! would have with `looks` times as many rows (Bonferroni over the looks, alpha spending in
//! equal parts). Stopping early can then choose among the looks as it likes. Few looks (6 for
//! 3–20 repeats) keep the price of that split small. Pure computation.

use crate::analysis::verdict::Change;

/// How much the repeat count grows from one look to the next.
const GROWTH: f64 = 1.5;

/// The repeat counts at which a point's rows are judged: `min`, then each ×1.5 (rounded up),
/// then `max`. One look (`min`) for a fixed count.
pub(crate) fn looks(min: u32, max: u32) -> Vec<u32> {
    let min = min.max(1);
    let mut out = vec![min];
    let mut at = min;
    while at < max {
        at = ((f64::from(at) * GROWTH).ceil() as u32).clamp(at + 1, max);
        out.push(at);
    }
    out
}

/// The look whose verdicts decide whether repeat `repeat` runs: the last look before it
/// (`None` for a repeat within the first `min`, which always runs).
pub(crate) fn look_before(looks: &[u32], repeat: u32) -> Option<u32> {
    looks.iter().copied().rev().find(|&l| l < repeat)
}

/// Does this verdict end the row's repeats? Faster, slower and equivalent are answers; a row
/// that cannot be compared (a side failed) or whose runs oversubscribe the machine gets no
/// answer from more repeats either. Undecided rows, and rows not judged for want of repeats,
/// rounds or because contention could explain them, continue.
pub(crate) fn settled(verdict: Change, why: Option<&str>) -> bool {
    match verdict {
        Change::Faster | Change::Slower | Change::NoChange | Change::NotComparable => true,
        Change::NotJudged => why.is_some_and(|w| w.starts_with("oversubscribed")),
        Change::NoClearDifference => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::bootstrap::Interval;
    use crate::analysis::verdict::{judge_all, Evidence, DEFAULT_THRESHOLD, FAMILY_ERROR};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn looks_grow_by_half_and_end_at_max() {
        assert_eq!(looks(3, 20), [3, 5, 8, 12, 18, 20]);
        assert_eq!(looks(3, 10), [3, 5, 8, 10]);
        assert_eq!(looks(3, 4), [3, 4]);
        assert_eq!(looks(5, 5), [5]);
        assert_eq!(look_before(&looks(3, 20), 3), None);
        assert_eq!(look_before(&looks(3, 20), 4), Some(3));
        assert_eq!(look_before(&looks(3, 20), 5), Some(3));
        assert_eq!(look_before(&looks(3, 20), 6), Some(5));
        assert_eq!(look_before(&looks(3, 20), 20), Some(18));
    }

    #[test]
    fn only_answers_and_hopeless_rows_settle() {
        assert!(settled(Change::Slower, None));
        assert!(settled(Change::NoChange, None));
        assert!(settled(Change::NotComparable, Some("a side failed")));
        assert!(settled(Change::NotJudged, Some("oversubscribed (B): …")));
        assert!(!settled(Change::NotJudged, Some("contended (B): …")));
        assert!(!settled(Change::NotJudged, Some("2 repeats: …")));
        assert!(!settled(
            Change::NoClearDifference,
            Some("the repeats overlap")
        ));
    }

    /// One row run sequentially from `min` to `max` repeats, judged at each look at the level
    /// of `looks` × its one-row family; returns its final verdict and the repeats it used.
    fn sequential_row(rng: &mut ChaCha8Rng, step: f64, min: u32, max: u32) -> (Change, u32) {
        let looks = looks(min, max);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for n in 1..=max {
            let (ra, rb) = crate::analysis::sim::shared_phase_repeat(rng, 1e-5, 1e-5 * step);
            a.push(ra);
            b.push(rb);
            if !looks.contains(&n) {
                continue;
            }
            let keys: Vec<u32> = (1..=n).collect();
            let e =
                Evidence::new(&a, &b, None, || Interval { lo: 0.0, hi: 0.0 }).paired(&keys, &keys);
            let (v, why, _) = judge_all(&[e], looks.len(), DEFAULT_THRESHOLD).1.remove(0);
            if settled(v, why.as_deref()) || n == max {
                return (v, n);
            }
        }
        unreachable!("the last look is max")
    }

    /// 1,000 seeded replays per true effect, repeats from 3 up to 20: with no change, and with a
    /// 3 % change (inside the ±5 % band), at most α of the rows are called faster or slower
    /// although each stopped at whichever look first decided it; a 30 % step is caught in at
    /// least 90 % of rows, using fewer repeats on average than the 20 a fixed count would need.
    #[test]
    fn stopping_early_keeps_false_alarms_within_alpha() {
        let n = 1000;
        let mut rng = ChaCha8Rng::seed_from_u64(47);
        for step in [1.0, 1.03] {
            let alarms = (0..n)
                .filter(|_| {
                    let (v, _) = sequential_row(&mut rng, step, 3, 20);
                    matches!(v, Change::Faster | Change::Slower)
                })
                .count();
            eprintln!("change {step}: {alarms} of {n} rows faster/slower");
            assert!(
                alarms as f64 <= FAMILY_ERROR * n as f64,
                "{alarms} of {n} rows with a {:.0} % change alarmed",
                (step - 1.0) * 100.0
            );
        }
        let (mut caught, mut used) = (0, 0u64);
        for _ in 0..n {
            let (v, k) = sequential_row(&mut rng, 1.3, 3, 20);
            caught += usize::from(v == Change::Slower);
            used += u64::from(k);
        }
        assert!(caught as f64 >= 0.9 * n as f64, "caught {caught} of {n}");
        let mean = used as f64 / n as f64;
        eprintln!("change 1.3: caught {caught} of {n}, {mean:.2} repeats on average");
        assert!(mean < 10.0, "a 30 % step used {mean:.1} repeats on average");
    }
}
