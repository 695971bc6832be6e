//! The `summarize` step: everything the report and figures say, computed once from a ResultSet.
//!
//! Owns which runs feed statistics (timed, ok rounds of passing runs only), the failure list
//! (every run that did not pass, or passed with no timed time), paired comparisons against the
//! baseline stack, and the α–β fits and B*. Pure: no files, no formatting for people.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::analysis::stats::bandwidth;
use crate::analysis::stats::bootstrap;
use crate::analysis::stats::bootstrap::{Bootstrap, Interval};
use crate::analysis::stats::describe::{describe, Summary};
use crate::analysis::stats::fit;
use crate::analysis::stats::fit::AlphaBeta;
use crate::analysis::stats::hierarchical;
use crate::analysis::verdict::{self, Change, Conditions, Evidence};
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

/// One paired comparison: `ratio = median(stack) / median(baseline)` of execute time.
#[derive(Debug, Clone)]
pub struct Paired {
    pub(crate) case_id: String,
    pub(crate) stack: String,
    pub(crate) baseline: String,
    pub(crate) ratio: f64,
    /// 95 % hierarchical bootstrap interval of the ratio; None when a side is a single repeat
    /// of fewer than `verdict::MIN_ROUNDS` timed rounds (too few for an interval).
    pub(crate) ci: Option<Interval>,
    /// `analysis::verdict`'s rule with the baseline as A and the stack as B: the same evidence
    /// `compare` asks for (repeats, a family-wise interval beyond the noise band, separation).
    pub(crate) verdict: Change,
    /// Why the verdict is not faster/slower when the ratio alone might suggest one.
    pub(crate) why: Option<String>,
    /// The two medians the ratio is of (on `compare_metric` when set, else the shared metric).
    pub(crate) stack_median: f64,
    pub(crate) baseline_median: f64,
    pub(crate) metric: Metric,
    /// The pair's evidence until every pair's is known (`judge_pairs`).
    pending: Option<Evidence>,
}

/// Judge every pair with an interval together over the `judged` pairs (`verdict::judge_all`,
/// the rule `compare` uses); returns the level of the verdict intervals of pairs with repeats.
fn judge_pairs(paired: &mut [Paired], judged: usize) -> f64 {
    let (rows, evidence): (Vec<usize>, Vec<Evidence>) = paired
        .iter_mut()
        .enumerate()
        .filter_map(|(i, p)| p.pending.take().map(|e| (i, e)))
        .unzip();
    let (level, verdicts) = verdict::judge_all(&evidence, judged, verdict::DEFAULT_THRESHOLD);
    for (i, (v, why, _)) in rows.into_iter().zip(verdicts) {
        (paired[i].verdict, paired[i].why) = (v, why);
    }
    level
}

impl Paired {
    /// "1.80× faster than mpi", "2.10× slower than mpi", "on par with mpi (within ±5.0 %)",
    /// "no clear difference from mpi (…why…)" or "not judged: contended (…)".
    pub(crate) fn label(&self) -> String {
        let why = |text: String| match &self.why {
            Some(w) => format!("{text} ({w})"),
            None => text,
        };
        match self.verdict {
            Change::Faster => format!("{:.2}× faster than {}", 1.0 / self.ratio, self.baseline),
            Change::Slower => format!("{:.2}× slower than {}", self.ratio, self.baseline),
            Change::NoChange => format!(
                "on par with {} (within ±{:.1} %)",
                self.baseline,
                verdict::DEFAULT_THRESHOLD * 100.0
            ),
            Change::NoClearDifference => why(format!("no clear difference from {}", self.baseline)),
            Change::NotJudged | Change::NotComparable => self.verdict.words(self.why.as_deref()),
        }
    }
}

/// Identity of an α–β fit: one (stack, variant, P) with dtype and core_num kept apart.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct FitKey {
    pub(crate) stack: String,
    /// Fits are per op: one op's sizes never feed another's model.
    pub(crate) op: crate::model::case::Op,
    pub(crate) variant: Variant,
    pub(crate) p: u32,
    pub(crate) dtype: Dtype,
    pub(crate) core_num: u32,
    /// Nodes the ranks spanned (1: intra-node): inter-node sizes never feed a one-node model.
    pub(crate) nodes: u32,
}

impl FitKey {
    /// The series label of the fit's runs (op, variant and, over several nodes, the layout).
    pub(crate) fn series_label(&self) -> String {
        let mut case = crate::model::case::Case::new(self.variant, self.p, 1).with_op(self.op);
        case.nodes = self.nodes;
        case.series_label()
    }
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
    pub(crate) op: crate::model::case::Op,
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
    /// Confidence level of the paired verdict intervals of pairs with repeats: 1 − R · 0.05 /
    /// (pairs judged at once) for the R pairs Benjamini–Hochberg selects (R ≥ 1).
    pub(crate) paired_level: f64,
    /// Pairs with the baseline judged at once (what `paired_level` is widened for).
    pub(crate) paired_judged: usize,
    /// The noise band of the paired verdicts, a fraction.
    pub(crate) noise_band: f64,
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
        let judged = paired_rows(results, &groups, baseline.as_deref(), compare_metric);
        let per_case = summarize_cases(
            results,
            &groups,
            baseline.as_deref(),
            compare_metric,
            verdict::family_level(judged),
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
        let paired_level = judge_pairs(&mut paired, judged);
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
            paired_level,
            paired_judged: judged,
            noise_band: verdict::DEFAULT_THRESHOLD,
            compare_metric,
            pairing_notes,
            fits,
            b_star,
            colors: {
                let mut c: Vec<(String, String)> = results
                    .runs
                    .iter()
                    .map(|r| (r.stack.clone(), r.case.series_label()))
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

/// The timed values of one (case, stack): each passing repeat's, sorted ascending.
type Repeats = Vec<Vec<f64>>;

/// Statistics of the passing repeats `indices` of one (case, stack), their hierarchical
/// bootstrap draws and sorted repeats (kept by the caller for paired ratios and verdicts).
/// None when no repeat has a time.
fn run_stats(
    indices: &[usize],
    results: &ResultSet,
    boot: &Bootstrap,
) -> Option<(RunStats, Vec<f64>, Repeats)> {
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
        busbw: bandwidth::busbw(run.case.op, run.case.p, n_bytes, m),
        bw_execute_mb_s: bandwidth::bw_execute_mb_s(n_bytes, m),
        device_wall_median: med(timed.iter().filter_map(|s| s.device_wall_s).collect()),
        setup_s: runs.iter().flat_map(|r| &r.samples).find_map(|s| s.setup_s),
        phase_means: means(phase_sums),
        compile_means: means(compile_sums),
        summary,
    };
    Some((stats, draws, repeats))
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

/// How many (case, stack) pairs with the baseline the report judges at once — every other
/// stack ran on a case the baseline ran on, on a metric it may be paired on — which sets the
/// family-wise level of each paired verdict. Counted before the statistics, from the plan's
/// shape, so a failing run does not loosen the others' verdicts.
fn paired_rows(
    results: &ResultSet,
    groups: &[&[usize]],
    baseline: Option<&str>,
    compare_metric: Option<Metric>,
) -> usize {
    let Some(baseline) = baseline else { return 0 };
    let mb = results.metric(baseline);
    let mut stacks: Vec<&str> = Vec::new();
    groups
        .iter()
        .map(|g| {
            stacks.clear();
            for &i in g.iter() {
                let s = results.runs[i].stack.as_str();
                if !stacks.contains(&s) {
                    stacks.push(s);
                }
            }
            if !stacks.contains(&baseline) {
                return 0;
            }
            stacks
                .iter()
                .filter(|s| {
                    **s != baseline && (compare_metric.is_some() || results.metric(s) == mb)
                })
                .count()
        })
        .sum()
}

/// Summarize every case (groups of run indices), spreading cases over the available cores.
/// Each estimate has its own keyed random stream, so the result does not depend on the split.
fn summarize_cases(
    results: &ResultSet,
    groups: &[&[usize]],
    baseline: Option<&str>,
    compare_metric: Option<Metric>,
    level: f64,
    boot: &Bootstrap,
) -> Vec<CaseOutcome> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    summarize_cases_on(
        threads,
        results,
        groups,
        baseline,
        compare_metric,
        level,
        boot,
    )
}

/// [`summarize_cases`] on `threads` threads, each a contiguous share of the cases.
fn summarize_cases_on(
    threads: usize,
    results: &ResultSet,
    groups: &[&[usize]],
    baseline: Option<&str>,
    compare_metric: Option<Metric>,
    level: f64,
    boot: &Bootstrap,
) -> Vec<CaseOutcome> {
    let chunk = groups.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = groups
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|g| summarize_case(results, g, baseline, compare_metric, level, boot))
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
    level: f64,
    boot: &Bootstrap,
) -> CaseOutcome {
    let mut stats = Vec::new();
    let mut draws = Vec::new();
    let mut sides = Vec::new();
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
        if let Some((s, d, r)) = run_stats(indices, results, boot) {
            stats.push(s);
            draws.push(d);
            sides.push(r);
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
        let on_metric = |s: &RunStats| -> Option<Estimate> {
            let m = compare_metric?;
            if m == s.metric {
                return None;
            }
            metric_draws(results, &s.runs, m, boot)
        };
        let base_on = on_metric(b);
        for ((s, d), r) in stats.iter().zip(&draws).zip(&sides) {
            let run = &results.runs[s.index];
            if run.stack == baseline {
                continue;
            }
            let metric = match compare_metric {
                Some(cm) => cm,
                None if s.metric != b.metric => continue,
                None => s.metric,
            };
            let own_on = on_metric(s);
            let own = match &own_on {
                Some(e) => e.view(),
                None => View {
                    median: s.summary.median,
                    draws: d,
                    repeats: r,
                },
            };
            let base = match &base_on {
                Some(e) => e.view(),
                None => View {
                    median: b.summary.median,
                    draws: &draws[bi],
                    repeats: &sides[bi],
                },
            };
            if own.draws.is_empty() || base.draws.is_empty() || base.median <= 0.0 {
                continue;
            }
            let too_few = verdict::too_few(own.repeats).or_else(|| verdict::too_few(base.repeats));
            // A pair with an interval is judged with every other (`judge_pairs`).
            let pending = too_few.is_none().then(|| {
                // Both stacks ran in this campaign, interleaved: no campaign-to-campaign term.
                let conditions =
                    |st: &RunStats| Conditions::of(st.runs.iter().map(|&i| &results.runs[i]));
                Evidence::new(base.repeats, own.repeats, None, || {
                    let wide = bootstrap::ratio_interval_at(own.draws, base.draws, level);
                    Interval {
                        lo: wide.lo - 1.0,
                        hi: wide.hi - 1.0,
                    }
                })
                .caveat(verdict::caveat(
                    conditions(b),
                    conditions(s),
                    verdict::DEFAULT_MAX_CONTENTION,
                ))
            });
            // An interval wider than ×10 either way says nothing: not printed.
            let ci = pending
                .is_some()
                .then(|| bootstrap::ratio_interval(own.draws, base.draws))
                .filter(|i| {
                    verdict::meaningful(Interval {
                        lo: i.lo - 1.0,
                        hi: i.hi - 1.0,
                    })
                });
            let (verdict, why) = match too_few {
                Some(why) => (Change::NotJudged, Some(why)),
                None => (Change::NoClearDifference, None),
            };
            paired.push(Paired {
                case_id: run.base_case_id().to_string(),
                stack: run.stack.clone(),
                baseline: baseline.to_string(),
                ratio: own.median / base.median,
                ci,
                verdict,
                why,
                stack_median: own.median,
                baseline_median: base.median,
                metric,
                pending,
            });
        }
    }
    (stats, failures, paired)
}

/// One side of a paired comparison on one metric: the hierarchical estimate, its draws and the
/// sorted repeats it rests on.
struct Estimate {
    median: f64,
    draws: Vec<f64>,
    repeats: Repeats,
}

/// An `Estimate` borrowed (or the pieces of a stack's own `RunStats`).
struct View<'a> {
    median: f64,
    draws: &'a [f64],
    repeats: &'a [Vec<f64>],
}

impl Estimate {
    fn view(&self) -> View<'_> {
        View {
            median: self.median,
            draws: &self.draws,
            repeats: &self.repeats,
        }
    }
}

/// The hierarchical estimate and draws of `metric` over the repeats `indices`.
fn metric_draws(
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
        draws: boot.hierarchical_draws(&repeats, &key),
        repeats,
    })
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
            op: r.case.op,
            variant: r.case.variant,
            p: r.case.p,
            dtype: r.case.dtype,
            core_num: r.case.core_num,
            nodes: r.case.nodes.max(1),
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
    type Group = (String, crate::model::case::Op, Variant, u32, Dtype);
    let mut groups: BTreeMap<Group, Vec<(u32, f64)>> = BTreeMap::new();
    for f in fits {
        if let Some(b) = f.fit.bandwidth_bytes_per_s {
            let k = &f.key;
            groups
                .entry((k.stack.clone(), k.op, k.variant, k.p, k.dtype))
                .or_default()
                .push((k.core_num, b));
        }
    }
    groups
        .into_iter()
        .filter_map(|((stack, op, variant, p, dtype), pts)| {
            let core_num = fit::b_star(&pts)?;
            let best = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
            Some(BStar {
                stack,
                op,
                variant,
                p,
                dtype,
                core_num,
                best_bandwidth: best,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::case::{Case, Variant};
    use crate::model::results::{Sample, REPEAT_MARK};

    /// A passing (or failed) run of `rounds` timed rounds around `level` seconds, its noise
    /// from a small LCG so every run differs.
    fn run(
        case: &Case,
        stack: &str,
        repeat: u32,
        rounds: u32,
        level: f64,
        seed: &mut u64,
    ) -> RunResult {
        let mut samples = vec![Sample {
            round: 1,
            phase: Sample::label(false, 1),
            execute_s: Some(level * 3.0),
            ok: true,
            ..Sample::default()
        }];
        for i in 0..rounds {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let noise = (*seed >> 40) as f64 / (1u64 << 24) as f64;
            samples.push(Sample {
                round: i + 2,
                phase: Sample::label(true, i + 1),
                execute_s: Some(level * (1.0 + 0.2 * noise)),
                ok: true,
                ..Sample::default()
            });
        }
        let base = case.case_id();
        RunResult {
            case_id: if repeat > 1 {
                format!("{base}{REPEAT_MARK}{repeat}")
            } else {
                base
            },
            case: case.clone(),
            stack: stack.into(),
            status: if rounds == 0 {
                RunStatus::Fail
            } else {
                RunStatus::Pass
            },
            error: (rounds == 0).then(|| "exit code 1".to_string()),
            samples: if rounds == 0 { Vec::new() } else { samples },
            bundle: "cases/x/y".into(),
            attempt: 1,
            exit_code: Some(if rounds == 0 { 1 } else { 0 }),
            started: None,
            ended: None,
            timing_source: Some("stack".into()),
            cpus: None,
            cpu_contention: None,
            rank_nodes: None,
            node_hardware: Vec::new(),
        }
    }

    /// 80 cases × 4 stacks, some with 3 repeats, some with 1, 4 or 50 rounds, some failed.
    fn synthetic() -> ResultSet {
        let mut seed = 7u64;
        let mut runs = Vec::new();
        for c in 0..80u64 {
            let variant = if c % 2 == 0 {
                Variant::Mesh
            } else {
                Variant::Ring
            };
            let case = Case::new(variant, 2 + 2 * (c % 2) as u32, 1024 * (c / 2 + 1));
            for (k, stack) in ["s1", "s2", "s3", "s4"].iter().enumerate() {
                let level = 1e-4 * (1.0 + c as f64) * (1.0 + 0.1 * k as f64);
                let rounds = match (c + k as u64) % 7 {
                    0 => 0,
                    1 => 1,
                    2 => 4,
                    _ => 50,
                };
                let repeats = if c % 5 == 0 { 3 } else { 1 };
                for r in 1..=repeats {
                    runs.push(run(&case, stack, r, rounds, level, &mut seed));
                }
            }
        }
        ResultSet {
            campaign: "synthetic".into(),
            runs,
            ..ResultSet::default()
        }
    }

    #[test]
    fn cases_summarized_on_several_threads_equal_the_sequential_summaries() {
        let results = synthetic();
        assert!(results.runs.len() > 300, "{}", results.runs.len());
        let mut cases: Vec<&str> = Vec::new();
        let mut by_case: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, r) in results.runs.iter().enumerate() {
            let c = r.base_case_id();
            if !by_case.contains_key(c) {
                cases.push(c);
            }
            by_case.entry(c).or_default().push(i);
        }
        let groups: Vec<&[usize]> = cases.iter().map(|c| by_case[c].as_slice()).collect();
        let boot = Bootstrap {
            resamples: 200,
            ..Bootstrap::default()
        };
        let level = verdict::family_level(paired_rows(&results, &groups, Some("s1"), None));
        let summarize = |threads| {
            summarize_cases_on(threads, &results, &groups, Some("s1"), None, level, &boot)
        };
        // `{:?}` prints every f64 exactly (shortest round-trip form), so equal text is equal bits.
        let sequential = format!("{:?}", summarize(1));
        assert!(sequential.contains("median_ci"), "{sequential:.200}");
        for threads in [2, 3, 8] {
            assert_eq!(
                format!("{:?}", summarize(threads)),
                sequential,
                "{threads} threads"
            );
        }
        // And the whole summarize step (on this machine's cores) gives the same statistics.
        let analysis = Analysis::new(&results, Some("s1"), boot);
        let per_case: Vec<CaseOutcome> = summarize(1);
        // Failures and paired comparisons are part of what is compared.
        assert!(per_case.iter().any(|c| !c.1.is_empty()));
        assert!(per_case.iter().any(|c| !c.2.is_empty()));
        let stats: Vec<&RunStats> = per_case.iter().flat_map(|c| &c.0).collect();
        assert_eq!(
            format!("{:?}", analysis.stats.values().collect::<Vec<_>>()),
            format!("{stats:?}")
        );
    }
}
