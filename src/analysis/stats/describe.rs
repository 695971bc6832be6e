//! The descriptive summary of one run's timed samples.
//!
//! n, mean, stdev (n−1), median, min, max, p5, p95, CV, spread ratio (flagged above 2 as the
//! old harness did), the bootstrap 95 % CI of the median and the Tukey outliers (flagged, kept
//! in every statistic). Pure; callers decide which samples belong to the population.

use serde::Serialize;

#[cfg(test)]
use super::bootstrap::Bootstrap;
use super::bootstrap::Interval;
use super::outliers::tukey_outliers;

/// Spread ratios (max/min) above this are flagged as noisy.
pub(crate) const SPREAD_FLAG: f64 = 2.0;

/// Descriptive statistics of one population of times.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Summary {
    pub(crate) n: usize,
    pub(crate) mean: f64,
    /// Sample standard deviation (n − 1); None for a single value.
    pub(crate) stdev: Option<f64>,
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
    pub(crate) p5: f64,
    pub(crate) p95: f64,
    /// stdev / mean; None when either is undefined or the mean is zero.
    pub(crate) cv: Option<f64>,
    /// max / min; None when min is not positive.
    pub(crate) spread_ratio: Option<f64>,
    /// spread_ratio > 2.
    pub(crate) spread_flag: bool,
    /// Bootstrap 95 % CI of the median.
    pub(crate) median_ci: Interval,
    /// Indices of Tukey-fence outliers in the input order.
    pub(crate) outliers: Vec<usize>,
}

/// Summarise `xs` (input order kept for outlier indices); None for an empty slice.
/// `key` names the estimate for the bootstrap stream (see `stats::bootstrap`).
#[cfg(test)]
pub(crate) fn summarize(xs: &[f64], boot: &Bootstrap, key: &str) -> Option<Summary> {
    if xs.is_empty() {
        return None;
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let ci = boot.median_ci(&sorted, key);
    describe(xs, &sorted, ci)
}

/// Summarise with a median CI computed by the caller (who may reuse its bootstrap draws);
/// `sorted` is `xs` ascending.
pub(crate) fn describe(xs: &[f64], sorted: &[f64], median_ci: Interval) -> Option<Summary> {
    if xs.is_empty() {
        return None;
    }
    let mean = super::mean(xs)?;
    let stdev = super::stdev(xs);
    let (min, max) = (sorted[0], sorted[sorted.len() - 1]);
    let spread_ratio = (min > 0.0).then(|| max / min);
    Some(Summary {
        n: xs.len(),
        mean,
        stdev,
        median: super::quantile_sorted(sorted, 0.5),
        min,
        max,
        p5: super::quantile_sorted(sorted, 0.05),
        p95: super::quantile_sorted(sorted, 0.95),
        cv: stdev.filter(|_| mean != 0.0).map(|s| s / mean),
        spread_ratio,
        spread_flag: spread_ratio.is_some_and(|r| r > SPREAD_FLAG),
        median_ci,
        outliers: tukey_outliers(xs),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn hand_computed_summary() {
        // 10 timed rounds in µs: 10..=18 and a 40 µs straggler.
        let xs: Vec<f64> = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 40.0]
            .iter()
            .map(|v| v * 1e-6)
            .collect();
        let s = summarize(&xs, &Bootstrap::default(), "run").unwrap();
        assert_eq!(s.n, 10);
        assert!(close(s.mean, 16.6e-6));
        // Σ(x−16.6)² = 43.56+31.36+21.16+12.96+6.76+2.56+0.36+0.16+1.96+547.56 = 668.4 µs².
        assert!(close(s.stdev.unwrap(), (668.4f64 / 9.0).sqrt() * 1e-6));
        assert!(close(s.median, 14.5e-6));
        assert!(close(s.p5, 10.45e-6)); // h = 0.45
        assert!(close(s.p95, 30.1e-6)); // h = 8.55: 18 + 0.55·22
        assert!(close(s.spread_ratio.unwrap(), 4.0));
        assert!(s.spread_flag);
        assert!(close(s.cv.unwrap(), s.stdev.unwrap() / 16.6e-6));
        assert_eq!(s.outliers, vec![9]);
        assert!(s.median_ci.contains(s.median));
    }

    #[test]
    fn single_value_and_empty() {
        let s = summarize(&[5e-6], &Bootstrap::default(), "k").unwrap();
        assert_eq!((s.n, s.stdev, s.cv), (1, None, None));
        assert!(!s.spread_flag);
        assert!(summarize(&[], &Bootstrap::default(), "k").is_none());
    }
}
