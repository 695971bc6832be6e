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

/// The upper tail `P(T > t)` of Student's t with `df` degrees of freedom, from the regularized
/// incomplete beta function (`P(|T| > t) = I_{df/(df+t²)}(df/2, 1/2)`). distrs' `cdf` is not
/// used for this: its series for integer `df` below 20 overflows a `u8` counter once
/// `t` is past about 2 (df 19: the look at 20 repeats of a sequential campaign).
pub(crate) fn student_t_upper_tail(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return if t > 0.0 { 0.0 } else { 1.0 };
    }
    let both = puruspe::betai(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 {
        both / 2.0
    } else {
        1.0 - both / 2.0
    }
}

#[cfg(test)]
mod t_tail_tests {
    use super::student_t_upper_tail;

    /// Against tabled quantiles: t(0.975; 2) = 4.303, t(0.95; 19) = 1.729, t(0.995; 10) = 3.169,
    /// and the distrs values where its series still works; df 19 at t = 2.5 (where distrs'
    /// series overflowed) is 0.0109 (R: `pt(2.5, 19, lower.tail = FALSE)`).
    #[test]
    fn matches_tabled_values_and_distrs_where_it_works() {
        let close = |a: f64, b: f64| (a - b).abs() < 5e-4;
        assert!(close(student_t_upper_tail(4.303, 2.0), 0.025));
        assert!(close(student_t_upper_tail(1.729, 19.0), 0.05));
        assert!(close(student_t_upper_tail(3.169, 10.0), 0.005));
        assert!(close(student_t_upper_tail(-1.729, 19.0), 0.95));
        assert!(close(student_t_upper_tail(2.5, 19.0), 0.0109));
        assert_eq!(student_t_upper_tail(0.0, 5.0), 0.5);
        for (t, df) in [(0.7, 3.0), (1.9, 4.0), (3.5, 2.5), (-0.4, 7.3)] {
            let distrs = 1.0 - distrs::StudentsT::cdf(t, df);
            assert!(close(student_t_upper_tail(t, df), distrs), "{t} {df}");
        }
    }
}
