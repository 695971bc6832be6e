//! The α–β (latency–bandwidth) model T = O + N/B, fitted by least squares, and B*.
//!
//! As the old harness's model.py: ordinary least squares of median time on bytes, needing at
//! least three distinct sizes; O is the intercept (seconds), B the reciprocal of the slope
//! (bytes per second), r² the usual coefficient of determination. Pure arithmetic.

use serde::Serialize;

/// Fewest distinct message sizes a fit needs.
pub(crate) const MIN_SIZES: usize = 3;

/// Share of the best bandwidth that B* must reach.
pub(crate) const B_STAR_SHARE: f64 = 0.95;

/// One fitted model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct AlphaBeta {
    /// O: fixed overhead in seconds (the intercept).
    pub(crate) overhead_s: f64,
    /// B: bytes per second; None when the fitted slope is not positive (time does not grow
    /// with size, so no bandwidth can be read from the data).
    pub(crate) bandwidth_bytes_per_s: Option<f64>,
    /// Fitted slope in seconds per byte.
    pub(crate) slope_s_per_byte: f64,
    pub(crate) r2: f64,
    /// Number of points fitted.
    pub(crate) n_points: usize,
}

impl AlphaBeta {
    /// Model time for `bytes`.
    pub(crate) fn predict(&self, bytes: f64) -> f64 {
        self.overhead_s + self.slope_s_per_byte * bytes
    }
}

/// Least-squares fit of `(bytes, seconds)` points; None with fewer than three distinct sizes.
pub(crate) fn fit_alpha_beta(points: &[(f64, f64)]) -> Option<AlphaBeta> {
    let mut sizes: Vec<f64> = points.iter().map(|p| p.0).collect();
    sizes.sort_by(|a, b| a.total_cmp(b));
    sizes.dedup();
    if sizes.len() < MIN_SIZES {
        return None;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let ss_tot: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
    let ss_res: f64 = points
        .iter()
        .map(|p| (p.1 - (intercept + slope * p.0)).powi(2))
        .sum();
    // All times equal: a perfect (flat) fit rather than 0/0.
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    Some(AlphaBeta {
        overhead_s: intercept,
        bandwidth_bytes_per_s: (slope > 0.0).then(|| 1.0 / slope),
        slope_s_per_byte: slope,
        r2,
        n_points: points.len(),
    })
}

/// B*: the smallest `core_num` whose bandwidth is within 95 % of the best, from
/// `(core_num, bandwidth)` pairs; None when fewer than two core counts were measured.
pub(crate) fn b_star(points: &[(u32, f64)]) -> Option<u32> {
    let mut cores: Vec<u32> = points.iter().map(|p| p.0).collect();
    cores.sort_unstable();
    cores.dedup();
    if cores.len() < 2 {
        return None;
    }
    let best = points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    points
        .iter()
        .filter(|p| p.1 >= B_STAR_SHARE * best)
        .map(|p| p.0)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_line_is_recovered() {
        // O = 10 µs, B = 1 GB/s.
        let pts: Vec<(f64, f64)> = [1e3, 1e4, 1e5, 1e6]
            .iter()
            .map(|&n| (n, 10e-6 + n / 1e9))
            .collect();
        let f = fit_alpha_beta(&pts).unwrap();
        assert!((f.overhead_s - 10e-6).abs() < 1e-12);
        assert!((f.bandwidth_bytes_per_s.unwrap() - 1e9).abs() < 1e-3);
        assert!((f.r2 - 1.0).abs() < 1e-12);
        assert_eq!(f.n_points, 4);
    }

    #[test]
    fn hand_computed_noisy_fit() {
        // x = 0,1,2 ; y = 1,3,4: slope 1.5, intercept 7/6, r² = 1 − (1/6)/(14/3) = 27/28.
        let f = fit_alpha_beta(&[(0.0, 1.0), (1.0, 3.0), (2.0, 4.0)]).unwrap();
        assert!((f.slope_s_per_byte - 1.5).abs() < 1e-12);
        assert!((f.overhead_s - 7.0 / 6.0).abs() < 1e-12);
        assert!((f.r2 - 27.0 / 28.0).abs() < 1e-12);
    }

    #[test]
    fn needs_three_sizes_and_positive_slope() {
        assert!(fit_alpha_beta(&[(1.0, 1.0), (2.0, 2.0), (2.0, 2.1)]).is_none());
        let flat = fit_alpha_beta(&[(1.0, 2.0), (2.0, 1.0), (3.0, 0.5)]).unwrap();
        assert_eq!(flat.bandwidth_bytes_per_s, None);
    }

    #[test]
    fn b_star_is_smallest_core_count_near_best() {
        assert_eq!(
            b_star(&[(1, 10.0), (2, 19.5), (4, 20.0), (8, 20.1)]),
            Some(2)
        );
        assert_eq!(b_star(&[(1, 10.0), (2, 15.0), (4, 20.0)]), Some(4));
        assert_eq!(b_star(&[(1, 10.0)]), None);
    }
}
