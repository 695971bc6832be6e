//! Change-point detection over a performance series: PELT (Killick, Fearnhead & Eckley,
//! "Optimal detection of changepoints with a linear computational cost", JASA 2012) with a
//! Gaussian mean-shift cost on log medians, each point weighted by its own uncertainty.
//!
//! Why this shape: a series is a handful to a few hundred run medians, each with a bootstrap
//! interval from its own timed rounds. Times are compared as ratios, so the fit works on
//! `ln(median)`; the variance of a point is its interval's half-width in log space (as a
//! standard error) plus a between-run noise floor τ² that a single run's rounds cannot see
//! (machines drift from one day to the next). The cost of a segment is the weighted sum of
//! squares around its weighted mean (−2 log-likelihood with known variances), and each change
//! costs a penalty β = max(2 ln n, 9): the BIC/SIC penalty of a change (its location and new
//! level), floored so that a change between few points must be at least a 3σ shift. PELT
//! finds the exact minimum of cost + β·changes, pruning candidates that can never win. With
//! eight or more points the series' own run-to-run scatter (median absolute difference of
//! neighbours) raises τ when the machine is noisier than the floor says.
//!
//! A step found is kept only when the series can tell it from its own between-campaign noise:
//! the old level has at least `MIN_LEVEL_POINTS` points, and the new level lies outside the 95 %
//! prediction interval of one more campaign at the old level (Student's t over the old level's
//! log medians, never narrower than the noise floor). Two runs of the same code six minutes
//! apart on a busy machine differ by 30 %; one earlier point cannot say whether that is the
//! machine or the code. Oversubscribed points are left out of a stored series before detection
//! (their medians are the scheduler's); contended points stay, and a step is kept only beyond
//! what the difference in contention between its two levels could explain
//! (`verdict::Contention`, docs/statistics.md).
//!
//! Pure: no I/O, no knowledge of stores or series keys. Owns the numbers, not the verdicts
//! shown to users.

use crate::model::series::{Direction, Series, Step};

/// z of a two-sided 95 % interval.
const Z95: f64 = 1.959_963_984_540_054;

/// Default between-run noise floor: 5 %, the same band `compare` uses.
pub(crate) const DEFAULT_NOISE: f64 = 0.05;

/// One point of a series as the detector sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Observation {
    pub(crate) median: f64,
    /// 95 % interval of the median.
    pub(crate) lo: f64,
    pub(crate) hi: f64,
    /// The largest share of its time a repeat of the point had no CPU (0 when not measured).
    pub(crate) contention: f64,
}

/// Parameters of the detector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Params {
    /// Relative between-run noise floor (0.05 = 5 %), added to every point's variance.
    pub(crate) noise: f64,
    /// Penalty per change; None = max(2 ln n, 9).
    pub(crate) penalty: Option<f64>,
    /// Points with a run stalled for a CPU beyond this share of its time are left out.
    pub(crate) max_contention: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            noise: DEFAULT_NOISE,
            penalty: None,
            max_contention: crate::analysis::verdict::DEFAULT_VERDICT_MAX_CONTENTION,
        }
    }
}

impl Params {
    fn penalty_for(&self, n: usize) -> f64 {
        self.penalty
            .unwrap_or_else(|| (2.0 * (n.max(1) as f64).ln()).max(9.0))
    }
}

/// Prefix sums of w, w·x and w·x² so a segment's cost is O(1).
struct Prefix {
    w: Vec<f64>,
    wx: Vec<f64>,
    wxx: Vec<f64>,
}

impl Prefix {
    fn new(x: &[f64], w: &[f64]) -> Prefix {
        let mut p = Prefix {
            w: vec![0.0],
            wx: vec![0.0],
            wxx: vec![0.0],
        };
        for (xi, wi) in x.iter().zip(w) {
            p.w.push(p.w.last().unwrap() + wi);
            p.wx.push(p.wx.last().unwrap() + wi * xi);
            p.wxx.push(p.wxx.last().unwrap() + wi * xi * xi);
        }
        p
    }

    /// Weighted sum of squares of points `s..t` around their weighted mean.
    fn cost(&self, s: usize, t: usize) -> f64 {
        let w = self.w[t] - self.w[s];
        let wx = self.wx[t] - self.wx[s];
        let wxx = self.wxx[t] - self.wxx[s];
        (wxx - wx * wx / w).max(0.0)
    }

    /// Weighted mean and total weight of points `s..t`.
    fn level(&self, s: usize, t: usize) -> (f64, f64) {
        let w = self.w[t] - self.w[s];
        ((self.wx[t] - self.wx[s]) / w, w)
    }
}

/// From this many points on, the series' own run-to-run scatter can raise the noise floor.
pub(crate) const MIN_POINTS_FOR_SCATTER: usize = 8;

/// Robust run-to-run standard deviation of log values: the median absolute difference of
/// neighbours, scaled to a normal σ (1.4826 / √2). A few steps move only a few differences,
/// so they hardly move the median.
fn scatter(x: &[f64]) -> f64 {
    let diffs: Vec<f64> = x.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    crate::analysis::stats::median(&diffs).unwrap_or(0.0) * 1.4826 / std::f64::consts::SQRT_2
}

/// Log values and weights (1 / variance) of the observations. The between-run term τ is the
/// noise floor, raised to the series' own scatter when it has enough points to tell.
fn weighted(obs: &[Observation], noise: f64) -> (Vec<f64>, Vec<f64>) {
    let mut tau = (1.0 + noise.max(0.0)).ln();
    if obs.len() >= MIN_POINTS_FOR_SCATTER {
        let logs: Vec<f64> = obs.iter().map(|o| o.median.ln()).collect();
        tau = tau.max(scatter(&logs));
    }
    obs.iter()
        .map(|o| {
            let se = if o.lo > 0.0 && o.hi > o.lo {
                (o.hi / o.lo).ln() / (2.0 * Z95)
            } else {
                0.0
            };
            // Both terms zero (no noise floor, one-sample points) would give infinite weight;
            // a tiny floor keeps the arithmetic finite.
            let var = (se * se + tau * tau).max(1e-12);
            (o.median.ln(), 1.0 / var)
        })
        .unzip()
}

/// Segment starts of the optimal segmentation (always begins with 0).
fn segment_starts(p: &Prefix, n: usize, beta: f64) -> Vec<usize> {
    let mut f = vec![0.0; n + 1];
    f[0] = -beta;
    let mut last = vec![0usize; n + 1];
    let mut candidates = vec![0usize];
    for t in 1..=n {
        let (best_s, best) = candidates
            .iter()
            .map(|&s| (s, f[s] + p.cost(s, t) + beta))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("candidates never empty");
        f[t] = best;
        last[t] = best_s;
        // PELT pruning: a start that cannot beat the optimum now never will.
        candidates.retain(|&s| f[s] + p.cost(s, t) <= f[t]);
        candidates.push(t);
    }
    let mut starts = Vec::new();
    let mut t = n;
    while t > 0 {
        let s = last[t];
        starts.push(s);
        t = s;
    }
    starts.reverse();
    starts
}

/// Points the old level needs before a step from it is reported: with fewer, the series'
/// campaign-to-campaign noise is not measured.
pub(crate) const MIN_LEVEL_POINTS: usize = 2;

/// Is the level change `delta` (log) beyond what one more campaign at the old level, whose log
/// medians are `old`, would show by chance (a two-sided 95 % prediction interval), and beyond
/// the noise floor?
fn beyond_noise(old: &[f64], delta: f64, noise: f64) -> bool {
    let n = old.len();
    if n < MIN_LEVEL_POINTS {
        return false;
    }
    let mean = old.iter().sum::<f64>() / n as f64;
    let var = old.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = distrs::StudentsT::ppf(0.975, (n - 1) as f64);
    let bound = (t * (var * (1.0 + 1.0 / n as f64)).sqrt()).max((1.0 + noise.max(0.0)).ln());
    delta.abs() > bound
}

/// The steps of a series, oldest first. Points with a non-positive or non-finite median must
/// be left out by the caller. Fewer than two points have no steps; a step is kept only beyond
/// the old level's own noise (`beyond_noise`).
pub(crate) fn detect(obs: &[Observation], params: &Params) -> Vec<Step> {
    let n = obs.len();
    if n < 2 {
        return Vec::new();
    }
    let (x, w) = weighted(obs, params.noise);
    let prefix = Prefix::new(&x, &w);
    let starts = segment_starts(&prefix, n, params.penalty_for(n));
    let mut bounds = starts.clone();
    bounds.push(n);
    let mut steps = Vec::new();
    for k in 1..starts.len() {
        let (before, wb) = prefix.level(bounds[k - 1], bounds[k]);
        let (after, wa) = prefix.level(bounds[k], bounds[k + 1]);
        let delta = after - before;
        let old: Vec<f64> = x[bounds[k - 1]..bounds[k]].to_vec();
        if !beyond_noise(&old, delta, params.noise) {
            continue;
        }
        // Contention is evidence, not a veto: the step must clear the noise also after the
        // slowing that the difference in contention between the levels could explain
        // (`verdict::Contention`: a level's mean −ln(1 − c) over its points).
        let mean_log = |r: std::ops::Range<usize>| {
            let n = r.len().max(1) as f64;
            obs[r]
                .iter()
                .map(|o| crate::analysis::verdict::stall_log(o.contention))
                .sum::<f64>()
                / n
        };
        let (lo_old, lo_new) = (
            mean_log(bounds[k - 1]..bounds[k]),
            mean_log(bounds[k]..bounds[k + 1]),
        );
        let bias = if delta > 0.0 {
            lo_new - lo_old
        } else {
            lo_old - lo_new
        }
        .max(0.0);
        let left = (delta.abs() - bias).max(0.0);
        if bias > 0.0 && !beyond_noise(&old, left, params.noise) {
            continue;
        }
        let se = (1.0 / wa + 1.0 / wb).sqrt();
        steps.push(Step {
            at: bounds[k],
            ratio: delta.exp(),
            ratio_lo: (delta - Z95 * se).exp(),
            ratio_hi: (delta + Z95 * se).exp(),
            direction: if delta > 0.0 {
                Direction::Slower
            } else {
                Direction::Faster
            },
            current: bounds[k + 1] == n,
        });
    }
    steps
}

/// Points a series needs before its newest can be judged a step: an old level of
/// `MIN_LEVEL_POINTS`, then the new point.
pub(crate) const POINTS_TO_JUDGE: usize = MIN_LEVEL_POINTS + 1;

/// Can the newest point of `series` be judged: does it have [`POINTS_TO_JUDGE`] points that
/// detection uses (`series_steps`' filter)? A series that cannot is not "no regression".
pub(crate) fn judgeable(series: &Series, params: &Params) -> bool {
    usable(series, params).count() >= POINTS_TO_JUDGE
}

/// The points of `series` detection uses, with their indexes: not oversubscribed, not
/// contended beyond `params.max_contention`.
fn usable<'s>(
    series: &'s Series,
    params: &'s Params,
) -> impl Iterator<Item = (usize, &'s crate::model::series::Point)> {
    (series.points.iter().enumerate()).filter(|(_, p)| p.clean_at(params.max_contention))
}

/// The steps of a stored series (its points are passing runs with positive medians), found
/// over its points that are not oversubscribed nor contended beyond `params.max_contention`
/// (default: none left out; contention is weighed per step); each step's `at` indexes
/// `series.points`.
pub(crate) fn series_steps(series: &Series, params: &Params) -> Vec<Step> {
    let (index, obs): (Vec<usize>, Vec<Observation>) = usable(series, params)
        .map(|(i, p)| {
            (
                i,
                Observation {
                    median: p.median_s,
                    lo: p.ci_lo_s,
                    hi: p.ci_hi_s,
                    contention: p.cpu_contention.unwrap_or(0.0),
                },
            )
        })
        .unzip();
    let mut steps = detect(&obs, params);
    for s in &mut steps {
        s.at = index[s.at];
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(medians: &[f64]) -> Vec<Observation> {
        medians
            .iter()
            .map(|&m| Observation {
                median: m,
                lo: m * 0.99,
                hi: m * 1.01,
                contention: 0.0,
            })
            .collect()
    }

    #[test]
    fn a_doubling_in_the_newest_point_is_a_current_slower_step() {
        let steps = detect(&obs(&[1.0e-3, 1.01e-3, 2.0e-3]), &Params::default());
        assert_eq!(steps.len(), 1, "{steps:?}");
        let s = &steps[0];
        assert_eq!(s.at, 2);
        assert_eq!(s.direction, Direction::Slower);
        assert!(s.current);
        assert!((s.ratio - 2.0 / 1.005).abs() < 0.01, "{}", s.ratio);
        assert!(s.ratio_lo > 1.5 && s.ratio_hi < 2.7, "{s:?}");
    }

    /// The issue's +100 % step (1.02 ms → 2.04 ms, 90 rounds a point, every point 55–86 %
    /// contended): contended points are kept, and the step stands where the new level was no
    /// more contended than the old; where it was, and contention could explain the step, it is
    /// withheld (issue 45, items 1 and 7).
    #[test]
    fn a_step_under_contention_stands_unless_contention_could_explain_it() {
        let point = |m: f64, c: f64| Observation {
            median: m,
            lo: m * 0.995,
            hi: m * 1.01,
            contention: c,
        };
        let loaded = [
            point(1.02e-3, 0.86),
            point(1.02e-3, 0.55),
            point(2.04e-3, 0.70),
        ];
        let steps = detect(&loaded, &Params::default());
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert!(steps[0].current && steps[0].direction == Direction::Slower);
        // Quiet before, 86 % stalled after: up to ×7 could be the machine's.
        let explained = [
            point(1.02e-3, 0.0),
            point(1.02e-3, 0.0),
            point(2.04e-3, 0.86),
        ];
        assert!(detect(&explained, &Params::default()).is_empty());
        // … but not a ×10 step.
        let beyond = [
            point(1.02e-3, 0.0),
            point(1.02e-3, 0.0),
            point(10.2e-3, 0.86),
        ];
        assert_eq!(detect(&beyond, &Params::default()).len(), 1);
    }

    #[test]
    fn identical_and_jittered_points_have_no_step() {
        assert!(detect(&obs(&[1.0; 5]), &Params::default()).is_empty());
        let jitter = [1.0, 1.03, 0.98, 1.02, 0.97, 1.01, 1.04, 0.99];
        assert!(detect(&obs(&jitter), &Params::default()).is_empty());
        assert!(detect(&obs(&[1.0]), &Params::default()).is_empty());
        assert!(detect(&[], &Params::default()).is_empty());
    }

    #[test]
    fn an_old_step_is_found_where_it_happened_and_is_not_current_after_a_fix() {
        // 6 points at 1, 4 at 1.5, 4 back at 1: two steps, the second (faster) is current.
        let mut m = vec![1.0; 6];
        m.extend([1.5; 4]);
        m.extend([1.0; 4]);
        let steps = detect(&obs(&m), &Params::default());
        assert_eq!(steps.len(), 2, "{steps:?}");
        assert_eq!((steps[0].at, steps[0].direction), (6, Direction::Slower));
        assert!(!steps[0].current);
        assert_eq!((steps[1].at, steps[1].direction), (10, Direction::Faster));
        assert!(steps[1].current);
        assert!((steps[0].ratio - 1.5).abs() < 1e-9);
    }

    #[test]
    fn small_steps_inside_the_noise_floor_are_ignored_unless_the_floor_is_lowered() {
        let m = [1.0, 1.0, 1.0, 1.0, 1.08, 1.08, 1.08, 1.08];
        assert!(detect(&obs(&m), &Params::default()).is_empty());
        let tight = Params {
            noise: 0.005,
            ..Params::default()
        };
        let steps = detect(&obs(&m), &tight);
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert_eq!(steps[0].at, 4);
    }

    #[test]
    fn a_noisy_history_raises_its_own_noise_floor() {
        // ±20 % run-to-run scatter, no real change.
        let m = [1.0, 1.2, 0.85, 1.15, 0.8, 1.25, 0.9, 1.2, 0.85, 1.1];
        let o = obs(&m);
        // With the 5 % floor alone the scatter would be cut into steps …
        let tau = (1.05f64).ln();
        let x: Vec<f64> = m.iter().map(|v: &f64| v.ln()).collect();
        let w = vec![1.0 / (tau * tau); m.len()];
        let floor_only = segment_starts(&Prefix::new(&x, &w), m.len(), 9.0);
        assert!(floor_only.len() > 3, "{floor_only:?}");
        // … the series' own scatter keeps it one level.
        assert!(scatter(&x) > 0.3, "{}", scatter(&x));
        assert!(detect(&o, &Params::default()).is_empty());
        // A doubling on top of that scatter is still found.
        let mut m2 = m.to_vec();
        m2.extend([2.1, 1.95, 2.2, 2.0]);
        let steps = detect(&obs(&m2), &Params::default());
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert_eq!((steps[0].at, steps[0].direction), (10, Direction::Slower));
    }

    #[test]
    fn wide_intervals_weaken_the_evidence() {
        // The same doubling, but the new point's own interval spans 0.5x..8x: no step.
        let mut o = obs(&[1.0, 1.0, 2.0]);
        o[2].lo = 0.5;
        o[2].hi = 8.0;
        assert!(detect(&o, &Params::default()).is_empty());
    }

    #[test]
    fn exact_optimum_matches_brute_force_on_small_series() {
        // PELT must find the same segmentation as trying every set of change points.
        let m = [1.0, 1.1, 0.95, 1.6, 1.55, 1.7, 1.62, 0.9, 0.92];
        let o = obs(&m);
        let p = Params::default();
        let (x, w) = weighted(&o, p.noise);
        let prefix = Prefix::new(&x, &w);
        let beta = p.penalty_for(m.len());
        let n = m.len();
        let mut best = f64::INFINITY;
        for mask in 0u32..(1 << (n - 1)) {
            let mut cuts = vec![0];
            cuts.extend((1..n).filter(|i| mask & (1 << (i - 1)) != 0));
            cuts.push(n);
            let total: f64 = cuts
                .windows(2)
                .map(|c| prefix.cost(c[0], c[1]) + beta)
                .sum();
            best = best.min(total);
        }
        let starts = segment_starts(&prefix, n, beta);
        let mut cuts = starts.clone();
        cuts.push(n);
        let got: f64 = cuts
            .windows(2)
            .map(|c| prefix.cost(c[0], c[1]) + beta)
            .sum();
        assert!((got - best).abs() < 1e-9, "{got} vs {best}");
        assert_eq!(starts, vec![0, 3, 7]);
    }
}
