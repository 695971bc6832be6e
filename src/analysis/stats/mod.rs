//! Statistics over timed samples: descriptive set, bootstrap intervals, outliers, bandwidth
//! and the α–β model.
//!
//! Pure functions of slices of f64 and small value types; no I/O, no knowledge of run dirs or
//! reports. Callers pass only timed rounds of passing runs (the honesty rule lives with them).
//! The basic functions are here; the richer pieces live in submodules.

pub(crate) mod bandwidth;
pub(crate) mod bootstrap;
pub(crate) mod describe;
pub(crate) mod fit;
pub(crate) mod hierarchical;
pub(crate) mod memo;
pub(crate) mod outliers;
pub(crate) mod stream;

pub use bootstrap::Bootstrap;

/// Arithmetic mean; None for an empty slice.
pub(crate) fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        None
    } else {
        Some(xs.iter().sum::<f64>() / xs.len() as f64)
    }
}

/// Sample standard deviation (n − 1); None below two values.
pub(crate) fn stdev(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (xs.len() as f64 - 1.0)).sqrt())
}

/// Quantile with linear interpolation between order statistics (numpy's default, type 7).
pub(crate) fn quantile(xs: &[f64], q: f64) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v: Vec<f64> = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    Some(quantile_sorted(&v, q))
}

/// Quantile of an already sorted slice (non-empty).
pub(crate) fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() as f64 - 1.0) * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Median (quantile 0.5).
pub(crate) fn median(xs: &[f64]) -> Option<f64> {
    quantile(xs, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), Some(5.0));
        // sum of squares 32, n-1 = 7
        assert!((stdev(&xs).unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(median(&xs), Some(4.5));
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95), Some(4.8));
        assert_eq!(mean(&[]), None);
        assert_eq!(stdev(&[1.0]), None);
    }
}
