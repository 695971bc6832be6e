//! The hierarchical bootstrap of runs repeated on one (case, stack): resample the repeats, then
//! the rounds within each chosen repeat.
//!
//! Rounds of one process share its machine phase (cache state, a neighbour's load, a CPU
//! frequency), so a bootstrap over rounds alone measures within-run noise and calls two runs of
//! the same binary different. Resampling repeats first carries the run-to-run variance into
//! the interval. The estimate is the median over repeats of each repeat's median (with one
//! repeat: its median; with two: their mean). A median, not a mean, because one repeat starved
//! of CPU on a shared machine can take a thousand times longer than its siblings: the mean of
//! two 1.3 µs repeats and one 2 ms repeat is 695 µs, a number no run measured, while the median
//! of the three is 1.3 µs. Each repeat counts once (its own rounds set only its own median), the
//! unit the verdict rule (`analysis::verdict`) also works in. Pure computation on the same keyed
//! streams as `bootstrap`.

use super::bootstrap::{resampled_median, Bootstrap};

/// What the estimate is called where a number is shown (`report`, `docs/report-context.md`).
pub(crate) const NAME: &str = "median of the repeats' medians";

/// The estimate: median of the repeats' medians (each repeat sorted ascending, non-empty).
pub(crate) fn estimate(repeats: &[Vec<f64>]) -> Option<f64> {
    if repeats.is_empty() || repeats.iter().any(Vec::is_empty) {
        return None;
    }
    let medians: Vec<f64> = repeats
        .iter()
        .map(|r| super::quantile_sorted(r, 0.5))
        .collect();
    super::median(&medians)
}

/// The median of `picks` (a few values; sorted in place).
fn median_of(picks: &mut [f64]) -> f64 {
    picks.sort_by(f64::total_cmp);
    super::quantile_sorted(picks, 0.5)
}

impl Bootstrap {
    /// `resamples` draws of [`estimate`] (the median of the picks): each picks `repeats.len()` repeats with replacement
    /// and resamples the rounds of each pick. Every repeat must be sorted and non-empty.
    pub(crate) fn hierarchical_draws(&self, repeats: &[Vec<f64>], key: &str) -> Vec<f64> {
        let Some(point) = estimate(repeats) else {
            return Vec::new();
        };
        let single = repeats.len() == 1 && repeats[0].len() < 2;
        if single || self.resamples == 0 {
            return vec![point];
        }
        let mut rng = self.rng(key);
        let longest = repeats.iter().map(Vec::len).max().unwrap_or(1);
        let mut counts = vec![0u32; longest];
        let r = repeats.len();
        let mut picks = vec![0.0; r];
        (0..self.resamples)
            .map(|_| {
                for slot in picks.iter_mut() {
                    let pick = if r == 1 {
                        0
                    } else {
                        ((u64::from(rng.next_u32()) * r as u64) >> 32) as usize
                    };
                    let rounds = &repeats[pick];
                    *slot = resampled_median(rounds, &mut rng, &mut counts[..rounds.len()]);
                }
                median_of(&mut picks)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::bootstrap::interval;

    #[test]
    fn one_repeat_is_the_ordinary_median_bootstrap() {
        let xs: Vec<f64> = (1..=21).map(f64::from).collect();
        let b = Bootstrap::default();
        assert_eq!(estimate(std::slice::from_ref(&xs)), Some(11.0));
        let ci = interval(&b.hierarchical_draws(std::slice::from_ref(&xs), "k"));
        assert!(
            ci.lo <= 11.0 && 11.0 <= ci.hi && ci.hi - ci.lo >= 2.0,
            "{ci:?}"
        );
    }

    /// The case: two repeats of ~1.3 µs and one starved of CPU at ~2 ms. The mean of
    /// the medians was 695 µs; the headline is the good repeats' level.
    #[test]
    fn one_starved_repeat_does_not_move_the_estimate() {
        let fine = |m: f64| -> Vec<f64> { (0..10).map(|i| m * (1.0 + 0.01 * i as f64)).collect() };
        let repeats = vec![fine(1.3e-6), fine(1.32e-6), fine(2.0e-3)];
        let e = estimate(&repeats).unwrap();
        assert!((1.3e-6..1.4e-6).contains(&e), "{e}");
        // Two repeats: the median is their mean.
        let two = estimate(&[vec![1.0], vec![3.0]]).unwrap();
        assert!((two - 2.0).abs() < 1e-12, "{two}");
    }

    /// Three repeats whose rounds are tight but whose levels differ by 20 %: the interval must
    /// span the levels, where a bootstrap of the pooled rounds would be far narrower.
    #[test]
    fn between_repeat_variance_widens_the_interval() {
        let level =
            |m: f64| -> Vec<f64> { (0..30).map(|i| m * (1.0 + 0.001 * i as f64)).collect() };
        let repeats = vec![level(1.0), level(1.1), level(1.2)];
        let b = Bootstrap::default();
        let ci = interval(&b.hierarchical_draws(&repeats, "k"));
        assert!(ci.lo < 1.06 && ci.hi > 1.14, "{ci:?}");
        let mut pooled: Vec<f64> = repeats.concat();
        pooled.sort_by(f64::total_cmp);
        let flat = interval(&b.median_draws(&pooled, "k"));
        assert!(
            flat.hi - flat.lo < (ci.hi - ci.lo) / 2.0,
            "{flat:?} vs {ci:?}"
        );
    }
}
