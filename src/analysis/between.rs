//! The spread between campaigns: how much a series' point (one campaign's estimate of one
//! (case, stack)) moves from one campaign to the next on the same machine and build, beyond
//! what each campaign's own repeats say.
//!
//! Two campaigns of the same plan and binary differ by more than their repeats predict: a
//! machine phase (a busier neighbour, another frequency state, another placement) lasts a whole
//! campaign and hits all of its repeats alike, so the repeats inside one campaign cannot see
//! it. Earlier campaigns of the same series can: the variance of their points, less the part
//! their own errors explain, is the campaign-to-campaign variance (one-way random effects,
//! method of moments), which `verdict::RepeatStats` adds to the error of a change between two
//! campaigns. Points are grouped by build (the stack's commit) and the variance is pooled
//! within builds, so a real change between builds does not count as noise. Pure computation.

use serde::Serialize;

use crate::model::series::Point;

/// Degrees of freedom the pooled variance needs (at least three earlier campaigns of one build,
/// or two builds of two) before it is used.
pub(crate) const MIN_DF: usize = 2;

/// The campaign-to-campaign variance of a series' log point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Between {
    /// Variance of the log point between campaigns, beyond the campaigns' own errors.
    pub(crate) var: f64,
    /// Its degrees of freedom (campaigns less builds).
    pub(crate) df: f64,
    /// Earlier campaigns it rests on.
    pub(crate) campaigns: usize,
}

impl Between {
    /// The spread as a relative standard deviation of the point (0.1 = ±10 %).
    pub(crate) fn relative_sd(&self) -> f64 {
        self.var.sqrt().exp_m1()
    }
}

/// The campaign-to-campaign variance of a series from its earlier points (each a campaign's
/// estimate and its 95 % interval; its build is the stack's commit), or None when they cannot
/// carry one (fewer than `MIN_DF` degrees of freedom once grouped by build).
pub(crate) fn between(points: &[Point]) -> Option<Between> {
    // The standard error of a log point from its 95 % interval.
    let z = 1.959_963_984_540_054;
    let mut groups: std::collections::BTreeMap<&str, Vec<(f64, f64)>> = Default::default();
    for p in points {
        let ok = [p.median_s, p.ci_lo_s, p.ci_hi_s]
            .iter()
            .all(|v| v.is_finite() && *v > 0.0)
            && p.ci_lo_s <= p.ci_hi_s;
        if ok {
            let se = (p.ci_hi_s.ln() - p.ci_lo_s.ln()) / (2.0 * z);
            groups
                .entry(p.commit.as_deref().unwrap_or_default())
                .or_default()
                .push((p.median_s.ln(), se * se));
        }
    }
    let (mut squares, mut df, mut own, mut n) = (0.0, 0usize, 0.0, 0usize);
    for g in groups.values().filter(|g| g.len() >= 2) {
        let mean = g.iter().map(|p| p.0).sum::<f64>() / g.len() as f64;
        squares += g.iter().map(|p| (p.0 - mean).powi(2)).sum::<f64>();
        df += g.len() - 1;
        own += g.iter().map(|p| p.1).sum::<f64>();
        n += g.len();
    }
    if df < MIN_DF {
        return None;
    }
    let var = (squares / df as f64 - own / n as f64).max(0.0);
    Some(Between {
        var,
        df: df as f64,
        campaigns: n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(build: &str, estimate: f64, half: f64) -> Point {
        Point {
            run_dir_id: 0,
            run_dir: String::new(),
            stamp: String::new(),
            date: String::new(),
            commit: Some(build.into()),
            median_s: estimate,
            ci_lo_s: estimate * (-half).exp(),
            ci_hi_s: estimate * half.exp(),
            n: 10,
            cpu_contention: None,
            oversubscribed: false,
            definition: None,
        }
    }

    #[test]
    fn points_that_move_more_than_their_errors_give_the_excess_as_variance() {
        // ln points 0, 0.2, −0.2 around 1 s: sample variance 0.04; each point's own SE
        // 0.01/1.96 squared is removed.
        let pts = [
            point("x", 1.0, 0.01),
            point("x", 0.2f64.exp(), 0.01),
            point("x", (-0.2f64).exp(), 0.01),
        ];
        let b = between(&pts).unwrap();
        let own = (0.01f64 / 1.959_963_984_540_054).powi(2);
        assert!((b.var - (0.04 - own)).abs() < 1e-12, "{b:?}");
        assert_eq!((b.df, b.campaigns), (2.0, 3));
        assert!((b.relative_sd() - (0.04f64 - own).sqrt().exp_m1()).abs() < 1e-12);
    }

    #[test]
    fn points_within_their_own_errors_give_none_and_builds_are_pooled_apart() {
        // Spread well inside each point's interval: no excess.
        let pts = [
            point("x", 1.0, 0.2),
            point("x", 1.01, 0.2),
            point("x", 0.99, 0.2),
        ];
        assert_eq!(between(&pts).unwrap().var, 0.0);
        // Two builds a factor 2 apart, each steady: the change between builds is not noise.
        let pts = [
            point("old", 1.0, 0.01),
            point("old", 1.0, 0.01),
            point("new", 2.0, 0.01),
            point("new", 2.0, 0.01),
        ];
        let b = between(&pts).unwrap();
        assert_eq!((b.var, b.df, b.campaigns), (0.0, 2.0, 4));
    }

    #[test]
    fn too_few_campaigns_or_unusable_points_carry_no_spread() {
        assert!(between(&[point("x", 1.0, 0.1), point("x", 2.0, 0.1)]).is_none());
        // One campaign per build gives no degrees of freedom.
        let one_each = [
            point("a", 1.0, 0.1),
            point("b", 2.0, 0.1),
            point("c", 3.0, 0.1),
        ];
        assert!(between(&one_each).is_none());
        let mut bad = point("x", 1.0, 0.1);
        bad.ci_lo_s = 0.0;
        assert!(between(&[bad, point("x", 1.0, 0.1), point("x", 1.1, 0.1)]).is_none());
    }
}
