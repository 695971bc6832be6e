//! Statistics of one (case, stack): the passing repeats of a planned case on one stack, pooled
//! into a descriptive summary with a hierarchical bootstrap interval (repeats, then rounds),
//! bandwidths from the median, and the means of named phases and compile-profile parts. Also
//! the estimate of a second metric over the same repeats, for paired comparisons on
//! `[report] compare_metric`. Pure: no files, no formatting for people.

use std::collections::BTreeMap;

use crate::analysis::stats::bandwidth;
use crate::analysis::stats::bootstrap::Bootstrap;
use crate::analysis::stats::describe::{describe, Summary};
use crate::analysis::stats::hierarchical;
use crate::analysis::stats::memo::{Memo, Resampling};
use crate::model::results::{Metric, ResultSet, RunResult};

/// Statistics of one (case, stack): its passing repeats together (one run without repeats).
#[derive(Debug, Clone)]
pub(crate) struct RunStats {
    /// Index in `ResultSet::runs` of the first passing repeat (it names the case and stack).
    pub(crate) index: usize,
    /// Indices of every passing repeat the numbers rest on.
    pub(crate) runs: Vec<usize>,
    /// Timed rounds of the smallest repeat.
    pub(crate) rounds: usize,
    /// The stack's declared headline metric: what `summary` describes.
    pub(crate) metric: Metric,
    /// Descriptive statistics of the pooled rounds; `median` and `median_ci` are the
    /// hierarchical estimate and interval (mean of the repeats' medians; repeats, then rounds).
    pub(crate) summary: Summary,
    pub(crate) n_bytes: u64,
    /// From the median time, bytes per second.
    pub(crate) algbw: Option<f64>,
    pub(crate) busbw: Option<f64>,
    /// The seed's `bw_execute_mb_s`, from the median time.
    pub(crate) bw_execute_mb_s: Option<f64>,
    pub(crate) device_wall_median: Option<f64>,
    /// First warmup round's setup time.
    pub(crate) setup_s: Option<f64>,
    /// Mean of each named phase over timed rounds.
    pub(crate) phase_means: BTreeMap<String, f64>,
    /// Mean of each compile-profile part over every round that reported one.
    pub(crate) compile_means: BTreeMap<String, f64>,
}

/// The timed values of one (case, stack): each passing repeat's, sorted ascending.
pub(crate) type Repeats = Vec<Vec<f64>>;

/// Statistics of the passing repeats `indices` of one (case, stack) and their hierarchical
/// bootstrap (sorted repeats and draws, kept by the caller for paired ratios and verdicts); the
/// interval comes from `memo` when it holds it. None when no repeat has a time.
pub(crate) fn run_stats(
    indices: &[usize],
    results: &ResultSet,
    boot: &Bootstrap,
    memo: &Memo,
) -> Option<(RunStats, Resampling)> {
    let metric = results.metric(&results.runs[*indices.first()?].stack);
    let mut used = Vec::new();
    let mut repeats: Vec<Vec<f64>> = Vec::new();
    let mut xs = Vec::new();
    for &i in indices {
        let v = results.runs[i].timed(metric);
        if v.is_empty() {
            continue;
        }
        xs.extend_from_slice(&v);
        let mut sorted = v;
        sorted.sort_by(f64::total_cmp);
        repeats.push(sorted);
        used.push(i);
    }
    let index = *used.first()?;
    let run = &results.runs[index];
    let mut sorted = xs.clone();
    sorted.sort_by(f64::total_cmp);
    // The stream key of execute_s keeps its old name, so intervals of old runs reproduce.
    let key = match metric {
        Metric::ExecuteS => format!("{}/{}", run.base_case_id(), run.stack),
        m => format!("{}/{}/{m}", run.base_case_id(), run.stack),
    };
    let median = hierarchical::estimate(&repeats)?;
    let sampled = Resampling::new(boot, repeats, key);
    let mut summary = describe(&xs, &sorted, memo.interval(&sampled))?;
    summary.median = median;
    let n_bytes = run.case.n_bytes();
    let runs: Vec<&RunResult> = used.iter().map(|&i| &results.runs[i]).collect();
    let timed: Vec<_> = runs.iter().flat_map(|r| r.timed_ok()).collect();
    let med = |v: Vec<f64>| crate::analysis::stats::median(&v);
    let mut phase_sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for s in &timed {
        add_all(&mut phase_sums, &s.phases);
    }
    let mut compile_sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for s in runs.iter().flat_map(|r| &r.samples) {
        add_all(&mut compile_sums, &s.compile_profile);
    }
    let means = |m: BTreeMap<String, (f64, usize)>| {
        m.into_iter().map(|(k, (s, n))| (k, s / n as f64)).collect()
    };
    let m = summary.median;
    let stats = RunStats {
        index,
        rounds: sampled.repeats.iter().map(Vec::len).min().unwrap_or(0),
        metric,
        runs: used,
        n_bytes,
        algbw: bandwidth::algbw(n_bytes, m),
        busbw: bandwidth::busbw(run.case.op, run.case.p, n_bytes, m),
        bw_execute_mb_s: bandwidth::bw_execute_mb_s(n_bytes, m),
        device_wall_median: med(timed.iter().filter_map(|s| s.device_wall_s).collect()),
        setup_s: runs.iter().flat_map(|r| &r.samples).find_map(|s| s.setup_s),
        phase_means: means(phase_sums),
        compile_means: means(compile_sums),
        summary,
    };
    Some((stats, sampled))
}

/// Add each of `values` to its (sum, count) in `sums`; a name is copied only the first time
/// it is seen, not once per sample (a 10k-run report has half a million samples).
pub(crate) fn add_all(sums: &mut BTreeMap<String, (f64, usize)>, values: &BTreeMap<String, f64>) {
    for (k, v) in values {
        if !sums.contains_key(k) {
            sums.insert(k.clone(), (0.0, 0));
        }
        // Summed onto 0.0 as before, so a first -0.0 still gives 0.0.
        if let Some(e) = sums.get_mut(k) {
            e.0 += v;
            e.1 += 1;
        }
    }
}

/// One side of a paired comparison on one metric: the hierarchical estimate and the bootstrap
/// (sorted repeats, draws) it rests on.
pub(crate) struct Estimate {
    pub(crate) median: f64,
    pub(crate) sampled: Resampling,
}

/// An `Estimate` borrowed (or the pieces of a stack's own `RunStats`).
pub(crate) struct View<'a> {
    pub(crate) median: f64,
    pub(crate) sampled: &'a Resampling,
}

impl Estimate {
    pub(crate) fn view(&self) -> View<'_> {
        View {
            median: self.median,
            sampled: &self.sampled,
        }
    }
}

/// The hierarchical estimate and bootstrap of `metric` over the repeats `indices`.
pub(crate) fn metric_draws(
    results: &ResultSet,
    indices: &[usize],
    metric: Metric,
    boot: &Bootstrap,
) -> Option<Estimate> {
    let repeats: Repeats = indices
        .iter()
        .map(|&i| {
            let mut v = results.runs[i].timed(metric);
            v.sort_by(f64::total_cmp);
            v
        })
        .filter(|v| !v.is_empty())
        .collect();
    let first = &results.runs[*indices.first()?];
    let key = format!("{}/{}/{metric}", first.base_case_id(), first.stack);
    Some(Estimate {
        median: hierarchical::estimate(&repeats)?,
        sampled: Resampling::new(boot, repeats, key),
    })
}
