//! The α–β (latency–bandwidth) model T = O + N/B, fitted in relative error, and B*.
//!
//! Times span decades across message sizes, so an unweighted least squares on linear time lets
//! the largest size decide everything and drives O negative. The fit minimises the squared
//! *relative* residual (weights 1/T²) under O ≥ 0 and slope ≥ 0 (a 2-variable convex problem:
//! the best of the unconstrained solution and the constrained edges), needs three distinct
//! sizes, and reports its largest relative residual. When that exceeds `GOOD_FIT` (a protocol
//! switch, say) the smallest sizes are dropped one by one while three remain, so the model
//! describes the large-message segment; if no segment fits, the fit says so and no curve is
//! drawn. Pure arithmetic.

use serde::Serialize;

/// Fewest distinct message sizes a fit needs.
pub(crate) const MIN_SIZES: usize = 3;

/// Share of the best bandwidth that B* must reach.
pub(crate) const B_STAR_SHARE: f64 = 0.95;

/// Largest relative residual (|model − measured| / measured) of a fit that describes its data.
pub(crate) const GOOD_FIT: f64 = 0.25;

/// One fitted model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct AlphaBeta {
    /// O: fixed overhead in seconds (≥ 0).
    pub(crate) overhead_s: f64,
    /// B: bytes per second; None when the best slope is zero (time does not grow with size, so
    /// no bandwidth can be read from the data).
    pub(crate) bandwidth_bytes_per_s: Option<f64>,
    /// Fitted slope in seconds per byte (≥ 0).
    pub(crate) slope_s_per_byte: f64,
    /// Weighted (relative-error) coefficient of determination.
    pub(crate) r2: f64,
    /// Number of points fitted (of the segment, when only a segment fits).
    pub(crate) n_points: usize,
    /// Largest |model − measured| / measured over the fitted points.
    pub(crate) max_rel_residual: f64,
    /// Smallest size fitted: above the smallest measured size when only the large-message
    /// segment fits.
    pub(crate) from_bytes: f64,
    /// Largest size fitted.
    pub(crate) to_bytes: f64,
    /// Only the sizes from `from_bytes` up were fitted (smaller ones broke the model).
    pub(crate) segment: bool,
    /// The model describes the fitted points within `GOOD_FIT`; else no curve is drawn.
    pub(crate) fits: bool,
}

impl AlphaBeta {
    /// Model time for `bytes`.
    pub(crate) fn predict(&self, bytes: f64) -> f64 {
        self.overhead_s + self.slope_s_per_byte * bytes
    }
}

/// Weighted sums of the normal equations (weights 1/y²).
struct Sums {
    w: f64,
    wx: f64,
    wy: f64,
    wxx: f64,
    wxy: f64,
}

fn sums(points: &[(f64, f64)]) -> Sums {
    let mut s = Sums {
        w: 0.0,
        wx: 0.0,
        wy: 0.0,
        wxx: 0.0,
        wxy: 0.0,
    };
    for &(x, y) in points {
        let w = 1.0 / (y * y);
        s.w += w;
        s.wx += w * x;
        s.wy += w * y;
        s.wxx += w * x * x;
        s.wxy += w * x * y;
    }
    s
}

/// Σ ((y − O − s·x) / y)².
fn loss(points: &[(f64, f64)], o: f64, slope: f64) -> f64 {
    points
        .iter()
        .map(|&(x, y)| ((y - o - slope * x) / y).powi(2))
        .sum()
}

/// The (O, slope) minimising the relative squared error with O ≥ 0, slope ≥ 0.
fn solve(points: &[(f64, f64)]) -> (f64, f64) {
    let s = sums(points);
    let mut candidates = Vec::with_capacity(3);
    let det = s.w * s.wxx - s.wx * s.wx;
    if det > 0.0 {
        let slope = (s.w * s.wxy - s.wx * s.wy) / det;
        let o = (s.wy - slope * s.wx) / s.w;
        if o >= 0.0 && slope >= 0.0 {
            candidates.push((o, slope));
        }
    }
    // Edge O = 0: a line through the origin.
    if s.wxx > 0.0 {
        candidates.push((0.0, (s.wxy / s.wxx).max(0.0)));
    }
    // Edge slope = 0: a constant.
    candidates.push(((s.wy / s.w).max(0.0), 0.0));
    candidates
        .into_iter()
        .min_by(|a, b| loss(points, a.0, a.1).total_cmp(&loss(points, b.0, b.1)))
        .unwrap_or((0.0, 0.0))
}

fn distinct_sizes(points: &[(f64, f64)]) -> Vec<f64> {
    let mut sizes: Vec<f64> = points.iter().map(|p| p.0).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    sizes
}

/// The fit of exactly these points (three or more distinct sizes, positive times).
fn fit_points(points: &[(f64, f64)]) -> AlphaBeta {
    let (o, slope) = solve(points);
    let sum = sums(points);
    // Weighted r² about the weighted mean.
    let mean = sum.wy / sum.w;
    let ss_tot: f64 = points.iter().map(|&(_, y)| ((y - mean) / y).powi(2)).sum();
    let ss_res = loss(points, o, slope);
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    let max_rel_residual = points
        .iter()
        .map(|&(x, y)| ((o + slope * x - y) / y).abs())
        .fold(0.0, f64::max);
    let sizes = distinct_sizes(points);
    AlphaBeta {
        overhead_s: o,
        bandwidth_bytes_per_s: (slope > 0.0).then(|| 1.0 / slope),
        slope_s_per_byte: slope,
        r2,
        n_points: points.len(),
        max_rel_residual,
        from_bytes: sizes[0],
        to_bytes: sizes[sizes.len() - 1],
        segment: false,
        fits: max_rel_residual <= GOOD_FIT,
    }
}

/// Fit `(bytes, seconds)` points; None with fewer than three distinct sizes (points with a
/// time ≤ 0 are ignored). A bad fit over all sizes falls back to the largest segment that fits.
pub(crate) fn fit_alpha_beta(points: &[(f64, f64)]) -> Option<AlphaBeta> {
    let points: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|p| p.1 > 0.0 && p.1.is_finite() && p.0 >= 0.0)
        .collect();
    let sizes = distinct_sizes(&points);
    if sizes.len() < MIN_SIZES {
        return None;
    }
    let whole = fit_points(&points);
    if whole.fits {
        return Some(whole);
    }
    for from in &sizes[1..=sizes.len() - MIN_SIZES] {
        let part: Vec<(f64, f64)> = points.iter().copied().filter(|p| p.0 >= *from).collect();
        let f = fit_points(&part);
        if f.fits {
            return Some(AlphaBeta { segment: true, ..f });
        }
    }
    Some(whole)
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

    /// The case: times spanning decades, where linear least squares gave O < 0 and
    /// missed the small sizes by 10–100×.
    #[test]
    fn relative_fit_keeps_o_non_negative_and_small_sizes_close() {
        // O = 20 µs, B = 2 GB/s with ±10 % alternating noise, 256 B … 4 MiB.
        let pts: Vec<(f64, f64)> = (8..=22)
            .map(|k| {
                let n = f64::from(1u32 << k);
                let noise = if k % 2 == 0 { 1.1 } else { 0.9 };
                (n, (20e-6 + n / 2e9) * noise)
            })
            .collect();
        let f = fit_alpha_beta(&pts).unwrap();
        assert!(f.overhead_s >= 0.0);
        assert!((f.overhead_s - 20e-6).abs() < 5e-6, "{f:?}");
        let b = f.bandwidth_bytes_per_s.unwrap();
        assert!((b - 2e9).abs() / 2e9 < 0.15, "{f:?}");
        assert!(f.max_rel_residual < 0.2 && f.fits && !f.segment, "{f:?}");
        // Every measured size within 20 %: the small ones too.
        for &(x, y) in &pts {
            assert!(
                ((f.predict(x) - y) / y).abs() < 0.2,
                "{x}: {} vs {y}",
                f.predict(x)
            );
        }
    }

    #[test]
    fn a_falling_intercept_is_clamped_at_zero() {
        // Pure bandwidth with the small sizes a bit faster than linear: unconstrained O < 0.
        let pts = [(1e3, 0.8e-6), (1e4, 9e-6), (1e5, 100e-6), (1e6, 1000e-6)];
        let f = fit_alpha_beta(&pts).unwrap();
        assert_eq!(f.overhead_s, 0.0);
        assert!(f.bandwidth_bytes_per_s.unwrap() > 0.0);
    }

    #[test]
    fn a_protocol_switch_fits_the_large_segment_or_says_it_does_not_fit() {
        // Flat 50 µs up to 4 KiB (eager), then 1 ms + N/1e8 (rendezvous).
        let mut pts: Vec<(f64, f64)> = [256.0, 1024.0, 4096.0]
            .iter()
            .map(|&n| (n, 50e-6))
            .collect();
        pts.extend(
            [65536.0, 262144.0, 1048576.0, 4194304.0]
                .iter()
                .map(|&n| (n, 1e-3 + n / 1e8)),
        );
        let f = fit_alpha_beta(&pts).unwrap();
        assert!(f.segment && f.fits, "{f:?}");
        assert!(f.from_bytes >= 65536.0, "{f:?}");
        // Nothing linear at all: a zig-zag over three sizes.
        let zig = fit_alpha_beta(&[(1e3, 1e-3), (1e4, 1e-6), (1e5, 1e-3)]).unwrap();
        assert!(!zig.fits, "{zig:?}");
        assert!(zig.max_rel_residual > GOOD_FIT);
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
