//! The `summarize` step: everything the report and figures say, computed once from a ResultSet.
//!
//! Owns which runs feed statistics (timed, ok rounds of passing runs only), the failure list
//! (every run that did not pass, or passed with no timed time), paired comparisons against the
//! baseline stack, and the α–β fits and B*. Pure: no files, no formatting for people.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::analysis::stats::bandwidth;
use crate::analysis::stats::bandwidth::Collective;
use crate::analysis::stats::bootstrap;
use crate::analysis::stats::bootstrap::{Bootstrap, Interval};
use crate::analysis::stats::fit;
use crate::analysis::stats::fit::AlphaBeta;
use crate::analysis::stats::hierarchical;
use crate::analysis::stats::summary::{describe, Summary};
use crate::model::case::{Dtype, Variant};
use crate::model::results::{Metric, ResultSet, RunResult, RunStatus};

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

/// A run that contributes no statistics, and why.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Failure {
    pub(crate) index: usize,
    pub(crate) case_id: String,
    pub(crate) stack: String,
    pub(crate) status: RunStatus,
    pub(crate) reason: String,
    pub(crate) bundle: String,
}

/// How a stack compares with the baseline on one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    NoClearDifference,
}

/// One paired comparison: `ratio = median(stack) / median(baseline)` of execute time.
#[derive(Debug, Clone)]
pub struct Paired {
    pub(crate) case_id: String,
    pub(crate) stack: String,
    pub(crate) baseline: String,
    pub(crate) ratio: f64,
    pub(crate) ci: Interval,
    pub(crate) verdict: Verdict,
    /// The two medians the ratio is of (on `compare_metric` when set, else the shared metric).
    pub(crate) stack_median: f64,
    pub(crate) baseline_median: f64,
    pub(crate) metric: Metric,
}

impl Paired {
    /// "1.80× faster than mpi", "2.10× slower than mpi" or "no clear difference from mpi".
    pub(crate) fn label(&self) -> String {
        match self.verdict {
            Verdict::Faster => format!("{:.2}× faster than {}", 1.0 / self.ratio, self.baseline),
            Verdict::Slower => format!("{:.2}× slower than {}", self.ratio, self.baseline),
            Verdict::NoClearDifference => format!("no clear difference from {}", self.baseline),
        }
    }
}

/// Identity of an α–β fit: one (stack, variant, P) with dtype and core_num kept apart.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct FitKey {
    pub(crate) stack: String,
    pub(crate) variant: Variant,
    pub(crate) p: u32,
    pub(crate) dtype: Dtype,
    pub(crate) core_num: u32,
}

/// One fitted model with the points it was fitted on.
#[derive(Debug, Clone)]
pub struct ModelFit {
    pub(crate) key: FitKey,
    pub(crate) fit: AlphaBeta,
    /// (bytes, median seconds), ascending by bytes.
    pub(crate) points: Vec<(f64, f64)>,
}

/// B* of one (stack, variant, P, dtype) whose core_num was swept.
#[derive(Debug, Clone)]
pub(crate) struct BStar {
    pub(crate) stack: String,
    pub(crate) variant: Variant,
    pub(crate) p: u32,
    pub(crate) dtype: Dtype,
    pub(crate) core_num: u32,
    pub(crate) best_bandwidth: f64,
}

/// The summarize step's output.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub(crate) bootstrap: Bootstrap,
    /// Stacks in order of first appearance.
    pub(crate) stacks: Vec<String>,
    /// Planned case ids in order of first appearance.
    pub(crate) cases: Vec<String>,
    /// Statistics of passing runs, by run index.
    pub(crate) stats: BTreeMap<usize, RunStats>,
    pub(crate) failures: Vec<Failure>,
    pub(crate) baseline: Option<String>,
    /// Why there are no paired comparisons, when there are none.
    pub(crate) baseline_note: Option<String>,
    pub paired: Vec<Paired>,
    /// `[report] compare_metric`: the one metric paired comparisons use, when set.
    pub(crate) compare_metric: Option<Metric>,
    /// Stacks not paired with the baseline because their metrics differ in kind, and why.
    pub(crate) pairing_notes: Vec<String>,
    pub fits: Vec<ModelFit>,
    pub(crate) b_star: Vec<BStar>,
    /// Every (stack, variant) of the result set, sorted: its position is its colour in every
    /// figure, so one implementation looks the same in every panel.
    pub(crate) colors: Vec<(String, String)>,
}

impl Analysis {
    /// Summarize `results`. `baseline` None picks the first stack seen (and says so).
    pub fn new(results: &ResultSet, baseline: Option<&str>, bootstrap: Bootstrap) -> Analysis {
        Analysis::with_compare_metric(results, baseline, bootstrap, None)
    }

    /// Summarize with paired comparisons on `compare_metric` (None: each stack's declared
    /// metric, and stacks whose metrics differ from the baseline's are not paired).
    pub(crate) fn with_compare_metric(
        results: &ResultSet,
        baseline: Option<&str>,
        bootstrap: Bootstrap,
        compare_metric: Option<Metric>,
    ) -> Analysis {
        let mut stacks: Vec<String> = Vec::new();
        let mut cases: Vec<String> = Vec::new();
        let mut by_case: HashMap<&str, Vec<usize>> = HashMap::new();
        for (index, run) in results.runs.iter().enumerate() {
            if !stacks.contains(&run.stack) {
                stacks.push(run.stack.clone());
            }
            by_case
                .entry(run.base_case_id())
                .or_insert_with(|| {
                    cases.push(run.base_case_id().to_string());
                    Vec::new()
                })
                .push(index);
        }
        let (baseline, baseline_note) = choose_baseline(&stacks, baseline);
        let groups: Vec<&[usize]> = cases
            .iter()
            .map(|c| by_case[c.as_str()].as_slice())
            .collect();
        let per_case = summarize_cases(
            results,
            &groups,
            baseline.as_deref(),
            compare_metric,
            &bootstrap,
        );
        let mut stats = BTreeMap::new();
        let mut failures = Vec::new();
        let mut paired = Vec::new();
        for (case_stats, case_failures, case_paired) in per_case {
            stats.extend(case_stats.into_iter().map(|s| (s.index, s)));
            failures.extend(case_failures);
            paired.extend(case_paired);
        }
        failures.sort_by_key(|f| f.index);
        let pairing_notes = pairing_notes(results, &stacks, baseline.as_deref(), compare_metric);
        let fits = fits(results, &stats);
        let b_star = b_stars(&fits);
        Analysis {
            bootstrap,
            stacks,
            cases,
            stats,
            failures,
            baseline,
            baseline_note,
            paired,
            compare_metric,
            pairing_notes,
            fits,
            b_star,
            colors: {
                let mut c: Vec<(String, String)> = results
                    .runs
                    .iter()
                    .map(|r| (r.stack.clone(), r.case.variant.to_string()))
                    .collect();
                c.sort();
                c.dedup();
                c
            },
        }
    }

    /// The palette index of (stack, variant), the same in every figure.
    pub(crate) fn color_of(&self, stack: &str, variant: &str) -> usize {
        self.colors
            .iter()
            .position(|(s, v)| s == stack && v == variant)
            .unwrap_or(0)
    }
}

/// Statistics of the passing repeats `indices` of one (case, stack) and their hierarchical
/// bootstrap draws (kept by the caller for paired ratios). None when no repeat has a time.
fn run_stats(
    indices: &[usize],
    results: &ResultSet,
    boot: &Bootstrap,
) -> Option<(RunStats, Vec<f64>)> {
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
    let draws = boot.hierarchical_draws(&repeats, &key);
    let mut summary = describe(&xs, &sorted, bootstrap::interval(&draws))?;
    summary.median = hierarchical::estimate(&repeats)?;
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
        rounds: repeats.iter().map(Vec::len).min().unwrap_or(0),
        metric,
        runs: used,
        n_bytes,
        algbw: bandwidth::algbw(n_bytes, m),
        busbw: bandwidth::busbw(Collective::AllReduce, run.case.p, n_bytes, m),
        bw_execute_mb_s: bandwidth::bw_execute_mb_s(n_bytes, m),
        device_wall_median: med(timed.iter().filter_map(|s| s.device_wall_s).collect()),
        setup_s: runs.iter().flat_map(|r| &r.samples).find_map(|s| s.setup_s),
        phase_means: means(phase_sums),
        compile_means: means(compile_sums),
        summary,
    };
    Some((stats, draws))
}

/// Add each of `values` to its (sum, count) in `sums`; a name is copied only the first time
/// it is seen, not once per sample (a 10k-run report has half a million samples).
fn add_all(sums: &mut BTreeMap<String, (f64, usize)>, values: &BTreeMap<String, f64>) {
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

fn failure(index: usize, run: &RunResult) -> Failure {
    let reason = match (&run.error, run.status) {
        (Some(e), _) if !e.trim().is_empty() => e.clone(),
        (_, RunStatus::Pass) => "passed but recorded no timed value of its metric".into(),
        (_, status) => format!("{status} (no reason recorded)"),
    };
    Failure {
        index,
        case_id: run.case_id.clone(),
        stack: run.stack.clone(),
        status: run.status,
        reason,
        bundle: run.bundle.display().to_string(),
    }
}

fn choose_baseline(stacks: &[String], wanted: Option<&str>) -> (Option<String>, Option<String>) {
    match wanted {
        Some(b) if stacks.iter().any(|s| s == b) => (Some(b.to_string()), None),
        Some(b) => (
            None,
            Some(format!(
                "baseline stack `{b}` has no runs in this result set (stacks: {})",
                stacks.join(", ")
            )),
        ),
        None if stacks.len() < 2 => (
            None,
            Some("only one stack ran: nothing to compare".to_string()),
        ),
        None => (
            Some(stacks[0].clone()),
            Some(format!(
                "no `[report] baseline` set: comparing with `{}`, the first stack run",
                stacks[0]
            )),
        ),
    }
}

type CaseOutcome = (Vec<RunStats>, Vec<Failure>, Vec<Paired>);

/// Summarize every case (groups of run indices), spreading cases over the available cores.
/// Each estimate has its own keyed random stream, so the result does not depend on the split.
fn summarize_cases(
    results: &ResultSet,
    groups: &[&[usize]],
    baseline: Option<&str>,
    compare_metric: Option<Metric>,
    boot: &Bootstrap,
) -> Vec<CaseOutcome> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let chunk = groups.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = groups
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|g| summarize_case(results, g, baseline, compare_metric, boot))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// Statistics, failures and paired comparisons of the runs of one planned case.
fn summarize_case(
    results: &ResultSet,
    runs: &[usize],
    baseline: Option<&str>,
    compare_metric: Option<Metric>,
    boot: &Bootstrap,
) -> CaseOutcome {
    let mut stats = Vec::new();
    let mut draws = Vec::new();
    let mut failures = Vec::new();
    // The repeats of each stack together, stacks in order of first appearance.
    let mut by_stack: Vec<(&str, Vec<usize>)> = Vec::new();
    for &i in runs {
        let run = &results.runs[i];
        if run.timed(results.metric(&run.stack)).is_empty() {
            failures.push(failure(i, run));
            continue;
        }
        match by_stack.iter_mut().find(|(s, _)| *s == run.stack) {
            Some((_, v)) => v.push(i),
            None => by_stack.push((run.stack.as_str(), vec![i])),
        }
    }
    for (_, indices) in &by_stack {
        if let Some((s, d)) = run_stats(indices, results, boot) {
            stats.push(s);
            draws.push(d);
        }
    }
    let mut paired = Vec::new();
    let base = baseline.and_then(|b| {
        stats
            .iter()
            .position(|s| results.runs[s.index].stack == b && s.summary.median > 0.0)
    });
    if let (Some(bi), Some(baseline)) = (base, baseline) {
        let b = &stats[bi];
        // With `compare_metric`, both sides are re-estimated on it; else only stacks whose
        // declared metric is the baseline's are paired (the rest get a note).
        let on_metric = |s: &RunStats| -> Option<(f64, Vec<f64>)> {
            let m = compare_metric?;
            if m == s.metric {
                return None;
            }
            metric_draws(results, &s.runs, m, boot)
        };
        let base_on = on_metric(b);
        for (s, d) in stats.iter().zip(&draws) {
            let run = &results.runs[s.index];
            if run.stack == baseline {
                continue;
            }
            let (ratio, ci, sm_bm, metric) = if let Some(cm) = compare_metric {
                let own = on_metric(s);
                let (sm, sd) = own
                    .as_ref()
                    .map_or((s.summary.median, d.as_slice()), |(m, d)| {
                        (*m, d.as_slice())
                    });
                let (bm, bd) = base_on
                    .as_ref()
                    .map_or((b.summary.median, draws[bi].as_slice()), |(m, d)| {
                        (*m, d.as_slice())
                    });
                if sd.is_empty() || bd.is_empty() || bm <= 0.0 {
                    continue;
                }
                (sm / bm, bootstrap::ratio_interval(sd, bd), (sm, bm), cm)
            } else if s.metric != b.metric {
                continue;
            } else {
                (
                    s.summary.median / b.summary.median,
                    bootstrap::ratio_interval(d, &draws[bi]),
                    (s.summary.median, b.summary.median),
                    s.metric,
                )
            };
            let verdict = if ci.hi < 1.0 {
                Verdict::Faster
            } else if ci.lo > 1.0 {
                Verdict::Slower
            } else {
                Verdict::NoClearDifference
            };
            paired.push(Paired {
                case_id: run.base_case_id().to_string(),
                stack: run.stack.clone(),
                baseline: baseline.to_string(),
                ratio,
                ci,
                verdict,
                stack_median: sm_bm.0,
                baseline_median: sm_bm.1,
                metric,
            });
        }
    }
    (stats, failures, paired)
}

/// The hierarchical estimate and draws of `metric` over the repeats `indices`.
fn metric_draws(
    results: &ResultSet,
    indices: &[usize],
    metric: Metric,
    boot: &Bootstrap,
) -> Option<(f64, Vec<f64>)> {
    let repeats: Vec<Vec<f64>> = indices
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
    Some((
        hierarchical::estimate(&repeats)?,
        boot.hierarchical_draws(&repeats, &key),
    ))
}

/// Why a stack is not paired with the baseline: its declared metric differs in kind.
fn pairing_notes(
    results: &ResultSet,
    stacks: &[String],
    baseline: Option<&str>,
    compare_metric: Option<Metric>,
) -> Vec<String> {
    let Some(baseline) = baseline else {
        return Vec::new();
    };
    let mb = results.metric(baseline);
    match compare_metric {
        Some(m) => {
            let differ = stacks.iter().any(|s| results.metric(s) != mb);
            if differ {
                vec![format!(
                    "stacks declare different metrics; paired comparisons all use `{m}` ([report] compare_metric)"
                )]
            } else {
                Vec::new()
            }
        }
        None => stacks
            .iter()
            .filter(|s| s.as_str() != baseline && results.metric(s) != mb)
            .map(|s| {
                format!(
                    "`{s}` is not paired with `{baseline}`: `{s}` measures `{}`, `{baseline}` measures `{mb}`, which differ in kind (set [report] compare_metric to pair them on one metric)",
                    results.metric(s)
                )
            })
            .collect(),
    }
}

fn fits(results: &ResultSet, stats: &BTreeMap<usize, RunStats>) -> Vec<ModelFit> {
    let mut groups: BTreeMap<FitKey, Vec<(f64, f64)>> = BTreeMap::new();
    for s in stats.values() {
        let r = &results.runs[s.index];
        let key = FitKey {
            stack: r.stack.clone(),
            variant: r.case.variant,
            p: r.case.p,
            dtype: r.case.dtype,
            core_num: r.case.core_num,
        };
        groups
            .entry(key)
            .or_default()
            .push((s.n_bytes as f64, s.summary.median));
    }
    groups
        .into_iter()
        .filter_map(|(key, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
            let fit = fit::fit_alpha_beta(&points)?;
            Some(ModelFit { key, fit, points })
        })
        .collect()
}

fn b_stars(fits: &[ModelFit]) -> Vec<BStar> {
    type Group = (String, Variant, u32, Dtype);
    let mut groups: BTreeMap<Group, Vec<(u32, f64)>> = BTreeMap::new();
    for f in fits {
        if let Some(b) = f.fit.bandwidth_bytes_per_s {
            let k = &f.key;
            groups
                .entry((k.stack.clone(), k.variant, k.p, k.dtype))
                .or_default()
                .push((k.core_num, b));
        }
    }
    groups
        .into_iter()
        .filter_map(|((stack, variant, p, dtype), pts)| {
            let core_num = fit::b_star(&pts)?;
            let best = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
            Some(BStar {
                stack,
                variant,
                p,
                dtype,
                core_num,
                best_bandwidth: best,
            })
        })
        .collect()
}
