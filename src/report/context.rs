//! The template context: what a report template can use, built from a ResultSet and its
//! analysis. Every field is documented in `docs/report-context.md` (keep the two in step).
//!
//! Owns how numbers look to people (human units via `crate::model::units`, never `0.0000`) and
//! the raw numbers beside them. Pure; no I/O and no statistics of its own.

use std::path::Path;

use serde::Serialize;

use super::figures::{Drawn, Skipped};
use super::rows::Rows;
use super::summary::{Analysis, Failure};
use crate::analysis::run_stats::RunStats;
use crate::analysis::stats::bootstrap::LEVEL;
use crate::analysis::verdict::Change;
use crate::model::plan::FigureKind;
use crate::model::results::{ResultSet, RunStatus, SPARED_BUDGET, SPARED_SIZE};
use crate::model::units::{format_bandwidth, format_bytes, format_seconds};

#[derive(Debug, Serialize)]
pub(crate) struct Context {
    pub(crate) title: String,
    pub(crate) campaign: String,
    pub(crate) timestamp: String,
    pub(crate) provenance: ProvenanceCtx,
    pub(crate) bootstrap: BootstrapCtx,
    pub(crate) totals: Totals,
    pub(crate) status_counts: Vec<StatusCount>,
    pub(crate) stacks: Vec<String>,
    /// Each stack's headline metric, in `stacks` order.
    pub(crate) stack_metrics: Vec<StackMetric>,
    /// `[report] compare_metric`, when set.
    pub(crate) compare_metric: Option<String>,
    /// Why some stacks are not paired with the baseline (metrics that differ in kind).
    pub(crate) pairing_notes: Vec<String>,
    /// Confidence level (percent) of each paired verdict's interval, widened for the pairs
    /// judged at once.
    pub(crate) paired_verdict_level: f64,
    pub(crate) paired_judged: usize,
    /// Pairs whose evidence was weighed (any verdict but "not judged" / "not comparable"), out
    /// of `paired_total`: every summary says how many were judged, never a tick over none.
    pub(crate) paired_weighed: usize,
    pub(crate) paired_total: usize,
    /// The paired verdicts' noise band in percent, and the repeats a verdict needs per stack.
    pub(crate) noise_band_pct: f64,
    /// Which calibration set each verdict's noise band (per size class), or that none did and
    /// the constant band above is used (`analysis::calibration`).
    pub(crate) calibration: String,
    /// A calibration set the bands (the constant band above is then not what rows used).
    pub(crate) calibrated: bool,
    /// The equivalence margin is each size class's band (calibrated, none set by the plan).
    pub(crate) equivalence_calibrated: bool,
    /// The paired verdicts' equivalence margin ±δ, in percent (`[report] equivalence`).
    pub(crate) equivalence_pct: f64,
    pub(crate) min_repeats: usize,
    /// What each cell's headline number is (`analysis::stats::hierarchical::NAME`).
    pub(crate) headline_statistic: String,
    /// Runs whose ranks outnumbered the CPUs they received, and what that means; none if none.
    pub(crate) oversubscribed_note: Option<String>,
    /// Runs stalled for a CPU beyond `analysis::verdict::DEFAULT_MAX_CONTENTION`.
    pub(crate) contention_note: Option<String>,
    pub(crate) baseline: Option<String>,
    pub(crate) baseline_note: Option<String>,
    pub(crate) cases: Rows<CaseRow>,
    /// Some case ran over several nodes (the case table explains its `inter-node` mark).
    pub(crate) inter_node: bool,
    pub(crate) runs: Rows<RunRow>,
    pub(crate) failures: Rows<Failure>,
    /// Planned skips (cases a stack does not support), not failures: per (stack, reason), how
    /// many runs.
    pub(crate) planned_skips: Vec<SkipRow>,
    /// The collectives of the result set, in `Op::EVERY` order; empty when every case is an
    /// allreduce (the report then reads as before the op axis).
    pub(crate) ops: Vec<OpRow>,
    pub(crate) paired: Rows<PairedRow>,
    /// What each stack's default variant loses at each point to its best other variant.
    pub(crate) regret: Vec<RegretRow>,
    /// Regret rows whose evidence was weighed, out of `regret` (as `paired_weighed`).
    pub(crate) regret_weighed: usize,
    /// The crossover map: per line of the sweep, each pair's outcome at each size.
    pub(crate) crossover_lines: Vec<CrossoverLine>,
    /// Where a pair's decided winner changes, with its bracket.
    pub(crate) crossovers: Vec<CrossoverRow>,
    /// Which device or node arrives last, and whether the hardware or a stack is to blame.
    pub(crate) stragglers: super::straggler_section::StragglersCtx,
    pub(crate) models: Vec<ModelRow>,
    pub(crate) b_star: Vec<BStarRow>,
    pub(crate) figures: Vec<FigureRow>,
    pub(crate) skipped_figures: Vec<SkippedRow>,
    pub(crate) quarantined: Vec<NameValue>,
    /// Earlier runs of the same series (set by `render_all` when the history store has some).
    pub(crate) history: Option<super::history_section::HistoryCtx>,
    /// Sequential repeats and the budget: what was decided (set by `render_all`); none for a
    /// fixed count of repeats with nothing spared.
    pub(crate) sequential: Option<SequentialCtx>,
    /// The link census (`[census]`, set by `render_all`): findings, classes, matrix, pairs.
    pub(crate) census: Option<super::census_section::CensusCtx>,
    /// The profiled runs beside the timed ones (`report::profile_links`; set by `render_all`):
    /// never part of any statistic above.
    pub(crate) profiles: Vec<super::profile_links::ProfileRow>,
}

/// Runs of one stack skipped for one reason.
#[derive(Debug, Serialize)]
pub(crate) struct SkipRow {
    pub(crate) stack: String,
    pub(crate) reason: String,
    pub(crate) runs: usize,
}

/// The planned skips of `results`, by (stack, reason), in order of first appearance.
fn planned_skips(results: &ResultSet) -> Vec<SkipRow> {
    let mut out: Vec<SkipRow> = Vec::new();
    for r in (results.runs.iter()).filter(|r| r.status == RunStatus::Skipped) {
        let reason = r.error.clone().unwrap_or_default();
        match (out.iter_mut()).find(|s| s.stack == r.stack && s.reason == reason) {
            Some(s) => s.runs += 1,
            None => out.push(SkipRow {
                stack: r.stack.clone(),
                reason,
                runs: 1,
            }),
        }
    }
    out
}

/// The report's answers as results.json carries them (`store::results_json::ANSWER_KEYS`): the
/// regret rows, the crossovers and the crossover map, exactly as context.json gives them.
pub(crate) fn answers(ctx: &Context) -> serde_json::Value {
    serde_json::json!({
        "regret": ctx.regret,
        "crossovers": ctx.crossovers,
        "crossover_map": ctx.crossover_lines,
    })
}

/// One line of the sweep in the crossover map: its sizes and one row per pair.
#[derive(Debug, Serialize)]
pub(crate) struct CrossoverLine {
    pub(crate) line: String,
    /// The sizes of the line, smallest first, for people ("4 KiB").
    pub(crate) sizes: Vec<String>,
    pub(crate) rows: Vec<CrossoverMapRow>,
}

/// One pair along a line: A, B and a cell per size of the line.
#[derive(Debug, Serialize)]
pub(crate) struct CrossoverMapRow {
    pub(crate) a: String,
    pub(crate) b: String,
    pub(crate) cells: Vec<CrossoverCell>,
}

/// One size of a pair: `outcome` (`a_faster`, `b_faster`, `equivalent`, `undecided`,
/// `not_judged`, or `none` where the pair has no row at that size), its mark in Markdown and
/// the ratio B/A.
#[derive(Debug, Serialize)]
pub(crate) struct CrossoverCell {
    pub(crate) outcome: &'static str,
    pub(crate) mark: &'static str,
    pub(crate) ratio: Option<f64>,
}

/// A crossover as the report says it.
#[derive(Debug, Serialize)]
pub(crate) struct CrossoverRow {
    pub(crate) line: String,
    pub(crate) a: String,
    pub(crate) b: String,
    pub(crate) below: String,
    pub(crate) above: String,
    pub(crate) lo: String,
    pub(crate) hi: String,
    pub(crate) estimate: String,
    pub(crate) lo_bytes: u64,
    pub(crate) hi_bytes: u64,
    pub(crate) estimate_bytes: u64,
    pub(crate) resolution: f64,
}

/// The crossover map and crossovers of `a`, as the templates show them.
fn crossover_ctx(a: &Analysis) -> (Vec<CrossoverLine>, Vec<CrossoverRow>) {
    use crate::analysis::crossover::Outcome;
    let mut lines: Vec<CrossoverLine> = Vec::new();
    let mut sizes_of: Vec<Vec<u64>> = Vec::new();
    for row in &a.crossover_map {
        let at = match lines.iter().position(|l| l.line == row.line) {
            Some(i) => i,
            None => {
                let mut sizes: Vec<u64> = (a.crossover_map.iter())
                    .filter(|r| r.line == row.line)
                    .flat_map(|r| r.cells.iter().map(|c| c.1))
                    .collect();
                sizes.sort_unstable();
                sizes.dedup();
                lines.push(CrossoverLine {
                    line: row.line.clone(),
                    sizes: sizes.iter().map(|b| format_bytes(*b)).collect(),
                    rows: Vec::new(),
                });
                sizes_of.push(sizes);
                lines.len() - 1
            }
        };
        let cells = (sizes_of[at].iter())
            .map(|b| match row.cells.iter().find(|c| c.1 == *b) {
                None => CrossoverCell {
                    outcome: "none",
                    mark: "",
                    ratio: None,
                },
                Some(&(_, _, o, ratio)) => {
                    let (outcome, mark) = match o {
                        Outcome::AFaster => ("a_faster", "**A**"),
                        Outcome::BFaster => ("b_faster", "**B**"),
                        Outcome::Equivalent => ("equivalent", "="),
                        Outcome::Undecided => ("undecided", "?"),
                        Outcome::NotJudged => ("not_judged", "·"),
                    };
                    CrossoverCell {
                        outcome,
                        mark,
                        ratio: ratio.is_finite().then_some(ratio),
                    }
                }
            })
            .collect();
        lines[at].rows.push(CrossoverMapRow {
            a: row.a.clone(),
            b: row.b.clone(),
            cells,
        });
    }
    let crossovers = (a.crossovers.iter())
        .map(|c| CrossoverRow {
            line: c.line.clone(),
            a: c.a.clone(),
            b: c.b.clone(),
            below: c.below.clone(),
            above: c.above.clone(),
            lo: format_bytes(c.lo_bytes),
            hi: format_bytes(c.hi_bytes),
            estimate: format_bytes(c.estimate_bytes),
            lo_bytes: c.lo_bytes,
            hi_bytes: c.hi_bytes,
            estimate_bytes: c.estimate_bytes,
            resolution: c.resolution,
        })
        .collect();
    (lines, crossovers)
}

/// What sequential repeats and the budget decided, as the report says it.
#[derive(Debug, Serialize)]
pub(crate) struct SequentialCtx {
    /// The looks: repeat counts at which each point's rows were judged (empty: a fixed count).
    pub(crate) looks: Vec<u32>,
    pub(crate) min_repeats: u32,
    pub(crate) max_repeats: u32,
    /// Points of the sweep, and how many stopped before the most repeats.
    pub(crate) points: usize,
    pub(crate) stopped_early: usize,
    /// Runs spared because their point was decided, and because the budget was spent.
    pub(crate) spared_decided: usize,
    pub(crate) spared_budget: usize,
    /// The budget's reason, as the first run it spared gave it.
    pub(crate) budget_note: Option<String>,
    /// `[adapt] crossover`: its resolution, the sizes added (run though the plan did not give
    /// them), and the planned sizes not needed with their spared runs.
    pub(crate) adapt_resolution: Option<f64>,
    pub(crate) sizes_added: usize,
    pub(crate) sizes_not_needed: usize,
    pub(crate) spared_sizes: usize,
}

/// What sequential repeats (`looks`), added sizes (`adapt`: the resolution and the plan's own
/// counts) and the budget decided in `results`; none when repeats were fixed, no size could be
/// added and nothing was spared.
pub(crate) fn sequential(
    results: &ResultSet,
    looks: &[u32],
    adapt: Option<&(f64, Vec<u64>)>,
) -> Option<SequentialCtx> {
    use crate::model::results::RunResult;
    use std::collections::BTreeSet;
    let spared = || (results.runs.iter()).filter(|r| r.status == RunStatus::Spared);
    let starts =
        |r: &RunResult, with: &str| r.error.as_deref().is_some_and(|e| e.starts_with(with));
    let budget = |r: &&RunResult| starts(r, SPARED_BUDGET);
    let size = |r: &&RunResult| starts(r, SPARED_SIZE);
    let decided = |r: &&RunResult| !budget(r) && !size(r);
    if looks.len() < 2 && adapt.is_none() && spared().next().is_none() {
        return None;
    }
    let points: BTreeSet<String> = results.runs.iter().map(|r| r.point_id()).collect();
    let stopped: BTreeSet<String> = spared().filter(decided).map(|r| r.point_id()).collect();
    let added: BTreeSet<u64> = (results.runs.iter())
        .filter(|r| r.status == RunStatus::Pass)
        .map(|r| r.case.count)
        .filter(|c| adapt.is_some_and(|(_, given)| !given.contains(c)))
        .collect();
    let not_needed: BTreeSet<String> = spared().filter(size).map(|r| r.point_id()).collect();
    Some(SequentialCtx {
        looks: if looks.len() < 2 {
            Vec::new()
        } else {
            looks.to_vec()
        },
        min_repeats: looks.first().copied().unwrap_or(0),
        max_repeats: looks.last().copied().unwrap_or(0),
        points: points.len() - not_needed.len(),
        stopped_early: stopped.len(),
        spared_decided: spared().filter(decided).count(),
        spared_budget: spared().filter(budget).count(),
        budget_note: spared().find(budget).and_then(|r| r.error.clone()),
        adapt_resolution: adapt.map(|a| a.0),
        sizes_added: added.len(),
        sizes_not_needed: not_needed.len(),
        spared_sizes: spared().filter(size).count(),
    })
}

/// One collective of the report: its cases and what its bandwidth figures count.
#[derive(Debug, Serialize)]
pub(crate) struct OpRow {
    pub(crate) op: String,
    pub(crate) cases: usize,
    pub(crate) busbw_factor: &'static str,
    pub(crate) bytes_counted: &'static str,
    /// The name of its bus bandwidth figure (`message_size_bw_<op>`), once drawn; the report
    /// shows it in the op's section instead of under Figures.
    pub(crate) figure: Option<String>,
}

/// The ops of `results` with their case counts; empty for an allreduce-only result set.
fn op_rows(results: &ResultSet) -> Vec<OpRow> {
    use crate::model::case::Op;
    let mut cases: std::collections::BTreeMap<Op, std::collections::BTreeSet<&str>> =
        Default::default();
    for r in &results.runs {
        cases.entry(r.case.op).or_default().insert(r.base_case_id());
    }
    if cases.keys().all(|op| *op == Op::Allreduce) {
        return Vec::new();
    }
    Op::EVERY
        .iter()
        .filter_map(|op| {
            let n = cases.get(op)?.len();
            Some(OpRow {
                op: op.to_string(),
                cases: n,
                busbw_factor: crate::analysis::stats::bandwidth::bus_factor_formula(*op),
                bytes_counted: crate::analysis::stats::bandwidth::bytes_counted(*op),
                figure: None,
            })
        })
        .collect()
}

#[derive(Debug, Serialize)]
pub(crate) struct ProvenanceCtx {
    pub(crate) campaign_version: String,
    pub(crate) plan_hash: Option<String>,
    pub(crate) plan_file: Option<String>,
    pub(crate) host: String,
    pub(crate) kernel: String,
    pub(crate) cpu: String,
    pub(crate) executor: Option<String>,
    pub(crate) seed: Option<u64>,
    pub(crate) stack_roots: Vec<StackRootRow>,
    pub(crate) env: Vec<NameValue>,
    /// Each node a Slurm job ran on, with its hardware (empty for local runs).
    pub(crate) nodes: Vec<NodeRow>,
}

/// One node of the provenance: its name, host, hardware in a line, and fingerprint.
#[derive(Debug, Serialize)]
pub(crate) struct NodeRow {
    pub(crate) node: String,
    pub(crate) host: String,
    pub(crate) hardware: String,
    pub(crate) fingerprint: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct StackMetric {
    pub(crate) stack: String,
    /// `execute_s`, `device_wall_s` or `wall_s`.
    pub(crate) metric: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct StackRootRow {
    pub(crate) stack: String,
    /// Null for a stack that needs no root folder (its programs come from PATH) and for the
    /// built-in stack.
    pub(crate) path: Option<String>,
    pub(crate) git_commit: Option<String>,
    /// The built-in `host` stack: campaign's own code, `git_commit` the build's.
    pub(crate) built_in: bool,
    /// The program the stack's command runs, resolved on PATH, when known.
    pub(crate) program: Option<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct NameValue {
    pub(crate) name: String,
    pub(crate) value: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct BootstrapCtx {
    pub(crate) resamples: u32,
    pub(crate) seed: u64,
    pub(crate) level: f64,
}

#[derive(Debug, Serialize)]
pub(crate) struct Totals {
    pub(crate) runs: usize,
    pub(crate) passed: usize,
    pub(crate) not_passed: usize,
    pub(crate) cases: usize,
}

#[derive(Debug, Serialize)]
pub(crate) struct StatusCount {
    pub(crate) status: String,
    pub(crate) count: usize,
}

/// One planned case with one cell per stack (in `stacks` order).
#[derive(Debug, Serialize)]
pub(crate) struct CaseRow {
    pub(crate) case_id: String,
    /// The collective; absent when every case is allreduce (tables then read as before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) op: Option<String>,
    pub(crate) variant: String,
    pub(crate) p: u32,
    pub(crate) count: u64,
    pub(crate) dtype: String,
    pub(crate) core_num: u32,
    pub(crate) n_bytes: u64,
    pub(crate) bytes: String,
    /// `inter-node 2x4` for a case whose ranks spanned several nodes; absent on one node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) nodes: Option<String>,
    pub(crate) cells: Vec<Cell>,
}

#[derive(Debug, Serialize)]
pub(crate) struct Cell {
    pub(crate) stack: String,
    /// The stack's headline metric the number is of.
    pub(crate) metric: String,
    /// `pass`, another status, or `absent` when the stack has no run for the case.
    pub(crate) status: String,
    pub(crate) median_s: Option<f64>,
    pub(crate) ci_lo_s: Option<f64>,
    pub(crate) ci_hi_s: Option<f64>,
    /// Passing repeats and timed rounds (of the smallest repeat) the number rests on.
    pub(crate) repeats: usize,
    pub(crate) rounds: usize,
    /// Some repeat ran with more ranks than CPUs it received (the text ends in "⚠ oversubscribed").
    pub(crate) oversubscribed: bool,
    /// Some repeat waited for a CPU beyond `analysis::verdict::DEFAULT_MAX_CONTENTION` of its
    /// time (the text ends in "⚠ contended").
    pub(crate) contended: bool,
    /// "14.2 µs [13.9 µs, 14.8 µs] (3×10)" for a passing run, else the status in capitals.
    pub(crate) text: String,
    /// The profiled runs of this (case, stack) that left files, linked from its row
    /// (`profile_links::attach`); none without profiles, and then absent from `context.json`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) profiles: Vec<super::profile_links::RowProfile>,
}

/// Statistics of one passing run.
#[derive(Debug, Serialize)]
pub(crate) struct RunRow {
    pub(crate) case_id: String,
    pub(crate) stack: String,
    /// The headline metric every number of this row is of.
    pub(crate) metric: String,
    /// Some repeat had more ranks than CPUs received.
    pub(crate) oversubscribed: bool,
    /// Some repeat waited for a CPU beyond the verdict rule's limit.
    pub(crate) contended: bool,
    /// " ⚠ oversubscribed", " ⚠ contended", both, or empty: printed after the median.
    pub(crate) marks: String,
    pub(crate) bundle: String,
    /// Timed rounds over every repeat.
    pub(crate) n: usize,
    /// Passing repeats, and timed rounds of the smallest one.
    pub(crate) repeats: usize,
    pub(crate) rounds: usize,
    pub(crate) mean_s: f64,
    pub(crate) stdev_s: Option<f64>,
    pub(crate) median_s: f64,
    pub(crate) min_s: f64,
    pub(crate) max_s: f64,
    pub(crate) p5_s: f64,
    pub(crate) p95_s: f64,
    pub(crate) ci_lo_s: f64,
    pub(crate) ci_hi_s: f64,
    pub(crate) cv: Option<f64>,
    pub(crate) spread_ratio: Option<f64>,
    pub(crate) spread_flag: bool,
    pub(crate) outliers: usize,
    pub(crate) algbw_gb_s: Option<f64>,
    pub(crate) busbw_gb_s: Option<f64>,
    pub(crate) bw_execute_mb_s: Option<f64>,
    pub(crate) device_wall_median_s: Option<f64>,
    pub(crate) setup_s: Option<f64>,
    pub(crate) median: String,
    pub(crate) ci: String,
    pub(crate) mean: String,
    pub(crate) stdev: String,
    pub(crate) min: String,
    pub(crate) max: String,
    pub(crate) p5: String,
    pub(crate) p95: String,
    pub(crate) cv_text: String,
    pub(crate) spread: String,
    pub(crate) busbw: String,
    pub(crate) algbw: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct PairedRow {
    pub(crate) case_id: String,
    pub(crate) stack: String,
    pub(crate) baseline: String,
    pub(crate) ratio: f64,
    /// Null when the evidence is too thin for an interval (see `verdict`).
    pub(crate) ci_lo: Option<f64>,
    pub(crate) ci_hi: Option<f64>,
    pub(crate) verdict: Change,
    /// Why the verdict is not faster/slower, when it is not (null otherwise).
    pub(crate) why: Option<String>,
    pub(crate) label: String,
    pub(crate) stack_median: String,
    pub(crate) baseline_median: String,
    /// The metric both medians are of.
    pub(crate) metric: String,
}

/// One row of "What the default loses" (`analysis::regret`).
#[derive(Debug, Serialize)]
pub(crate) struct RegretRow {
    /// The default's case (the point with the default variant).
    pub(crate) case_id: String,
    pub(crate) stack: String,
    pub(crate) default: String,
    pub(crate) best: String,
    pub(crate) default_median: String,
    pub(crate) best_median: String,
    /// `default / best − 1`, in percent (negative: the default wins), and its 95 % interval
    /// (null when it says nothing).
    pub(crate) loss_pct: f64,
    pub(crate) ci_lo_pct: Option<f64>,
    pub(crate) ci_hi_pct: Option<f64>,
    /// The verdict with the default as B and the best other variant as A.
    pub(crate) verdict: Change,
    pub(crate) label: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct ModelRow {
    pub(crate) stack: String,
    pub(crate) variant: String,
    pub(crate) p: u32,
    pub(crate) dtype: String,
    pub(crate) core_num: u32,
    /// Null when the model does not fit (`fits` false): no number is given for it.
    pub(crate) overhead_us: Option<f64>,
    pub(crate) bandwidth_gb_s: Option<f64>,
    pub(crate) r2: f64,
    pub(crate) n_points: usize,
    /// Largest |model − measured| / measured over the fitted sizes.
    pub(crate) max_rel_residual: f64,
    /// The model describes its points (worst residual within 25 %); else no curve is drawn.
    pub(crate) fits: bool,
    /// Sizes fitted: only the large-message segment from `from_bytes` when `segment`.
    pub(crate) segment: bool,
    pub(crate) from_bytes: u64,
    pub(crate) to_bytes: u64,
    pub(crate) overhead: String,
    pub(crate) bandwidth: String,
    /// "all sizes", "from 64 KiB (smaller sizes break the model)" or "does not fit".
    pub(crate) note: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct BStarRow {
    pub(crate) stack: String,
    pub(crate) variant: String,
    pub(crate) p: u32,
    pub(crate) dtype: String,
    pub(crate) core_num: u32,
    pub(crate) best_bandwidth_gb_s: f64,
    pub(crate) best_bandwidth: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct FigureRow {
    pub(crate) name: String,
    pub(crate) title: String,
    /// How to read the figure (definitions, what hollow markers mean); may be empty.
    pub(crate) caption: String,
    /// Relative to `reports/summary.md`: `../figures/<name>.png`.
    pub(crate) png: String,
    pub(crate) svg: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct SkippedRow {
    pub(crate) name: String,
    pub(crate) reason: String,
}

/// Build the context. `title` None: "<campaign> — <timestamp>". The figures are not known
/// yet (they are drawn at the same time): `with_figures` adds them.
/// The report's provenance block: what ran, where, with what.
fn provenance_ctx(results: &ResultSet) -> ProvenanceCtx {
    let p = &results.provenance;
    ProvenanceCtx {
        campaign_version: p.campaign_version.clone(),
        plan_hash: p.plan_hash.clone(),
        // The plan's file name only: the absolute path says where one person kept it (and
        // leaks their home folder into a shared report); results.json keeps the path, and the
        // run dir's `plan.toml` is the plan as it ran.
        plan_file: (p.plan_file.as_deref()).map(|f| {
            Path::new(f)
                .file_name()
                .map_or_else(|| f.to_string(), |n| n.to_string_lossy().into_owned())
        }),
        host: p.host.clone(),
        kernel: p.kernel.clone(),
        cpu: p.cpu.clone(),
        executor: p.executor.clone(),
        seed: p.seed,
        stack_roots: p
            .stack_roots
            .iter()
            .map(|(k, v)| StackRootRow {
                stack: k.clone(),
                path: v.path.clone(),
                git_commit: v.git_commit.clone(),
                built_in: v.path.is_none() && k == crate::model::results::BUILT_IN_STACK,
                program: v.program.clone(),
            })
            .collect(),
        env: name_values(p.env.iter()),
        nodes: (results.provenance_with_nodes().node_hardware.iter())
            .map(|n| NodeRow {
                node: n.node.clone(),
                host: n.host.clone(),
                hardware: n.summary(),
                fingerprint: n.fingerprint.clone(),
            })
            .collect(),
    }
}

pub(crate) fn build(results: &ResultSet, a: &Analysis, title: Option<&str>) -> Context {
    let counts = results.status_counts();
    let passed = counts.get(&RunStatus::Pass).copied().unwrap_or(0);
    let crossover = crossover_ctx(a);
    Context {
        title: title
            .map(str::to_string)
            .unwrap_or_else(|| format!("{} — {}", results.campaign, results.timestamp)),
        campaign: results.campaign.clone(),
        timestamp: results.timestamp.clone(),
        provenance: provenance_ctx(results),
        bootstrap: BootstrapCtx {
            resamples: a.bootstrap.resamples,
            seed: a.bootstrap.seed,
            level: LEVEL,
        },
        totals: Totals {
            runs: results.runs.len(),
            passed,
            not_passed: results.runs.len() - passed,
            cases: a.cases.len(),
        },
        status_counts: counts
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(s, n)| StatusCount {
                status: s.to_string(),
                count: *n,
            })
            .collect(),
        stacks: a.stacks.clone(),
        stack_metrics: a
            .stacks
            .iter()
            .map(|s| StackMetric {
                stack: s.clone(),
                metric: results.metric(s).to_string(),
            })
            .collect(),
        compare_metric: a.compare_metric.map(|m| m.to_string()),
        pairing_notes: a.pairing_notes.clone(),
        paired_verdict_level: a.paired_level * 100.0,
        paired_judged: a.paired_judged,
        paired_weighed: weighed(a.paired.iter().map(|p| p.verdict)),
        paired_total: a.paired.len(),
        noise_band_pct: a.noise_band * 100.0,
        calibration: a.calibration.clone(),
        calibrated: a.calibrated,
        equivalence_calibrated: a.calibrated && !a.equivalence_set,
        equivalence_pct: a.equivalence * 100.0,
        min_repeats: crate::analysis::verdict::MIN_REPEATS,
        headline_statistic: crate::analysis::stats::hierarchical::NAME.to_string(),
        oversubscribed_note: oversubscribed_note(results),
        contention_note: contention_note(results),
        baseline: a.baseline.clone(),
        baseline_note: a.baseline_note.clone(),
        cases: case_rows(results, a).into(),
        inter_node: results.runs.iter().any(|r| r.case.nodes > 1),
        ops: op_rows(results),
        runs: Rows::from(
            a.stats
                .values()
                .map(|s| run_row(results, s))
                .collect::<Vec<_>>(),
        ),
        failures: a.failures.clone().into(),
        planned_skips: planned_skips(results),
        profiles: Vec::new(),
        paired: Rows::from(
            (a.paired.iter())
                .map(|p| paired_row(p, a.equivalence))
                .collect::<Vec<_>>(),
        ),
        regret: a
            .regret
            .iter()
            .map(|r| regret_row(r, a.equivalence))
            .collect(),
        regret_weighed: weighed(a.regret.iter().map(|r| r.verdict)),
        crossover_lines: crossover.0,
        crossovers: crossover.1,
        stragglers: super::straggler_section::section(&a.stragglers, passed > 0),
        models: a.fits.iter().map(model_row).collect(),
        b_star: a
            .b_star
            .iter()
            .map(|b| BStarRow {
                stack: b.stack.clone(),
                variant: label(b.op, b.variant),
                p: b.p,
                dtype: b.dtype.to_string(),
                core_num: b.core_num,
                best_bandwidth_gb_s: b.best_bandwidth / 1e9,
                best_bandwidth: format_bandwidth(b.best_bandwidth),
            })
            .collect(),
        figures: Vec::new(),
        skipped_figures: Vec::new(),
        quarantined: name_values(results.quarantined.iter()),
        history: None,
        census: None,
        sequential: None,
    }
}

/// One paired comparison as the template shows it.
/// How many of `verdicts` weighed their evidence (any verdict but "not judged" / "not
/// comparable"): what every summary counts, so none shows a tick over nothing checked.
fn weighed(verdicts: impl Iterator<Item = Change>) -> usize {
    verdicts
        .filter(|v| !matches!(v, Change::NotJudged | Change::NotComparable))
        .count()
}

/// One "What the default loses" row as the template shows it.
fn regret_row(r: &crate::analysis::regret::Regret, equivalence: f64) -> RegretRow {
    RegretRow {
        case_id: r.case_id.clone(),
        stack: r.stack.clone(),
        default: r.default.to_string(),
        best: r.best.to_string(),
        default_median: format_seconds(r.default_median),
        best_median: format_seconds(r.best_median),
        loss_pct: r.loss * 100.0,
        ci_lo_pct: r.ci.map(|c| c.lo * 100.0),
        ci_hi_pct: r.ci.map(|c| c.hi * 100.0),
        verdict: r.verdict,
        label: r.label(equivalence),
    }
}

fn paired_row(p: &crate::analysis::pairing::Paired, equivalence: f64) -> PairedRow {
    PairedRow {
        case_id: p.case_id.clone(),
        stack: p.stack.clone(),
        baseline: p.baseline_name(),
        ratio: p.ratio,
        ci_lo: p.ci.map(|c| c.lo),
        ci_hi: p.ci.map(|c| c.hi),
        verdict: p.verdict,
        why: p.why.clone(),
        label: p.label(equivalence),
        stack_median: format_seconds(p.stack_median),
        baseline_median: format_seconds(p.baseline_median),
        metric: p.metric.to_string(),
    }
}

/// One α–β fit as the template shows it: a model that does not describe its points has no
/// O or B worth reading.
fn model_row(f: &crate::analysis::scaling::ModelFit) -> ModelRow {
    ModelRow {
        stack: f.key.stack.clone(),
        variant: f.key.series_label(),
        p: f.key.p,
        dtype: f.key.dtype.to_string(),
        core_num: f.key.core_num,
        overhead_us: f.fit.fits.then_some(f.fit.overhead_s * 1e6),
        bandwidth_gb_s: f
            .fit
            .bandwidth_bytes_per_s
            .filter(|_| f.fit.fits)
            .map(|b| b / 1e9),
        r2: f.fit.r2,
        n_points: f.fit.n_points,
        max_rel_residual: f.fit.max_rel_residual,
        fits: f.fit.fits,
        segment: f.fit.segment,
        from_bytes: f.fit.from_bytes as u64,
        to_bytes: f.fit.to_bytes as u64,
        note: if !f.fit.fits {
            "does not fit (no curve drawn)".into()
        } else if f.fit.segment {
            format!(
                "from {} (smaller sizes break the model)",
                format_bytes(f.fit.from_bytes as u64)
            )
        } else {
            "all sizes".into()
        },
        // A model that does not describe its points has no O or B worth reading.
        overhead: if f.fit.fits {
            format_seconds(f.fit.overhead_s)
        } else {
            "–".into()
        },
        bandwidth: match f.fit.bandwidth_bytes_per_s {
            _ if !f.fit.fits => "–".into(),
            Some(b) => format_bandwidth(b),
            None => "– (time does not grow with size)".into(),
        },
    }
}

impl Context {
    /// Set the profiled runs beside the timed ones, and give each case row's cells the links
    /// of their (case, stack)'s profiles. Right after `build`, while no one else holds the
    /// rows (they are shared only once rendering starts).
    pub(crate) fn link_profiles(&mut self, profiles: Vec<super::profile_links::ProfileRow>) {
        let by_row = super::profile_links::by_row(&profiles);
        if let Some(cases) = (!by_row.is_empty()).then(|| self.cases.get_mut()).flatten() {
            for case in cases.iter_mut() {
                for cell in &mut case.cells {
                    if let Some(links) = by_row.get(&(case.case_id.as_str(), cell.stack.as_str())) {
                        cell.profiles = links.clone();
                    }
                }
            }
        }
        drop(by_row);
        self.profiles = profiles;
    }

    /// The context with the figures that were drawn and those that were not, and why.
    pub(crate) fn with_figures(mut self, drawn: &[Drawn], skipped: &[Skipped]) -> Context {
        self.figures = drawn.iter().map(figure_row).collect();
        // One op's figure is `message_size_bw`; several ops' are `message_size_bw_<op>`.
        let single = self.ops.len() == 1;
        for o in &mut self.ops {
            let own = format!("{}_{}", FigureKind::MessageSizeBw.name(), o.op);
            o.figure = (self.figures.iter())
                .find(|f| f.name == own || (single && f.name == FigureKind::MessageSizeBw.name()))
                .map(|f| f.name.clone());
        }
        self.skipped_figures = skipped
            .iter()
            .map(|s| SkippedRow {
                name: s.name.clone(),
                reason: s.reason.clone(),
            })
            .collect();
        self
    }
}

/// How many runs were stalled for a CPU beyond the verdict rule's limit — every one whose
/// results row has `cpu_contention` above it, oversubscribed or not, so the count is what
/// results.csv holds —, the worst of them, and what that means for their numbers.
fn contention_note(results: &ResultSet) -> Option<String> {
    let limit = crate::analysis::verdict::DEFAULT_MAX_CONTENTION;
    let contended: Vec<_> = results.runs.iter().filter(|r| r.contended(limit)).collect();
    let worst = contended.iter().max_by(|a, b| {
        a.cpu_contention
            .partial_cmp(&b.cpu_contention)
            .unwrap_or(std::cmp::Ordering::Equal)
    })?;
    let also = contended.iter().filter(|r| r.oversubscribed()).count();
    let also = match also {
        0 => String::new(),
        n => format!(" ({n} of them also oversubscribed)"),
    };
    Some(format!(
        "{} of {} run(s){also} had no CPU for more than {:.0} % of their time while other \
         processes held them (worst: `{}` on {}, {:.0} %), so their times are partly the \
         machine's. Their cells are marked ⚠ contended, their results rows carry \
         `cpu_contention`, the figures draw them hollow, and paired comparisons involving them \
         are not judged",
        contended.len(),
        results.runs.len(),
        limit * 100.0,
        worst.base_case_id(),
        worst.stack,
        worst.cpu_contention.unwrap_or(0.0) * 100.0
    ))
}

fn oversubscribed_note(results: &ResultSet) -> Option<String> {
    let over: Vec<_> = results.runs.iter().filter(|r| r.oversubscribed()).collect();
    let first = over.first()?;
    Some(format!(
        "{} of {} run(s) had more ranks than the CPUs they received (e.g. `{}` on {}: P = {} on {} CPU(s)); \
         their ranks time-shared cores, so their times say as much about the scheduler as about \
         the algorithm. Their cells are marked ⚠ oversubscribed, their results rows say \
         `oversubscribed: true`, and the figures draw them hollow on dashed lines",
        over.len(),
        results.runs.len(),
        first.base_case_id(),
        first.stack,
        first.case.p,
        first.cpus.as_ref().map_or(0, Vec::len)
    ))
}

fn name_values<'a>(it: impl Iterator<Item = (&'a String, &'a String)>) -> Vec<NameValue> {
    it.map(|(k, v)| NameValue {
        name: k.clone(),
        value: v.clone(),
    })
    .collect()
}

fn figure_row(d: &Drawn) -> FigureRow {
    let file = |p: &Path| {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        format!("../figures/{}", name.unwrap_or_default())
    };
    FigureRow {
        name: d.name.clone(),
        title: d.title.clone(),
        caption: d.caption.clone(),
        png: file(&d.png),
        svg: file(&d.svg),
    }
}

/// A variant as report tables name it (`ring`, or `allgather ring` for another op).
fn label(op: crate::model::case::Op, variant: crate::model::case::Variant) -> String {
    crate::model::case::Case::new(variant, 2, 1)
        .with_op(op)
        .series_label()
}

fn case_rows(results: &ResultSet, a: &Analysis) -> Vec<CaseRow> {
    // The first run of each planned case describes it; its repeats share the row.
    let mut rows: Vec<CaseRow> = Vec::with_capacity(a.cases.len());
    let mut index = std::collections::HashMap::new();
    // With other ops beside allreduce, every row names its op (a table filtered by
    // `allreduce` must find the allreduce rows); an allreduce-only set reads as before.
    let mixed = results.runs.iter().any(|r| !r.case.op.is_allreduce());
    for r in &results.runs {
        let case_id = r.base_case_id();
        if !index.contains_key(case_id) {
            index.insert(case_id.to_string(), rows.len());
            rows.push(CaseRow {
                case_id: case_id.to_string(),
                op: (mixed || !r.case.op.is_allreduce()).then(|| r.case.op.to_string()),
                variant: r.case.variant.to_string(),
                p: r.case.p,
                count: r.case.count,
                dtype: r.case.dtype.to_string(),
                core_num: r.case.core_num,
                n_bytes: r.case.n_bytes(),
                bytes: format_bytes(r.case.n_bytes()),
                nodes: r.case.layout_label(),
                cells: a
                    .stacks
                    .iter()
                    .map(|s| Cell {
                        stack: s.clone(),
                        metric: results.metric(s).to_string(),
                        status: "absent".into(),
                        median_s: None,
                        ci_lo_s: None,
                        ci_hi_s: None,
                        repeats: 0,
                        rounds: 0,
                        oversubscribed: false,
                        contended: false,
                        text: "—".into(),
                        profiles: Vec::new(),
                    })
                    .collect(),
            });
        }
    }
    // Runs without statistics first, so a (case, stack) with any passing repeat shows it.
    for r in &results.runs {
        let row = &mut rows[index[r.base_case_id()]];
        if let Some(cell) = row.cells.iter_mut().find(|c| c.stack == r.stack) {
            if cell.status == "absent" {
                cell.status = r.status.to_string();
                cell.text = if r.status == RunStatus::Pass {
                    "NO DATA".into()
                } else {
                    r.status.as_str().to_uppercase()
                };
            }
        }
    }
    for s in a.stats.values() {
        let r = &results.runs[s.index];
        let row = &mut rows[index[r.base_case_id()]];
        let Some(cell) = row.cells.iter_mut().find(|c| c.stack == r.stack) else {
            continue;
        };
        let m = &s.summary;
        cell.status = "pass".into();
        cell.median_s = Some(m.median);
        cell.ci_lo_s = Some(m.median_ci.lo);
        cell.ci_hi_s = Some(m.median_ci.hi);
        cell.repeats = s.runs.len();
        cell.rounds = s.rounds;
        let (over, contended) = conditions(results, s);
        (cell.oversubscribed, cell.contended) = (over, contended);
        cell.text = format!(
            "{} {} ({}×{}){}",
            format_seconds(m.median),
            ci_text(m.median_ci.lo, m.median_ci.hi),
            s.runs.len(),
            s.rounds,
            marks(over, contended)
        );
    }
    rows
}

/// Whether some repeat of `s` was oversubscribed, and whether some repeat was contended
/// (waited for a CPU beyond the verdict rule's limit).
pub(crate) fn conditions(results: &ResultSet, s: &RunStats) -> (bool, bool) {
    let limit = crate::analysis::verdict::DEFAULT_MAX_CONTENTION;
    let runs = || s.runs.iter().map(|&i| &results.runs[i]);
    (
        runs().any(|r| r.oversubscribed()),
        runs().any(|r| r.contended(limit)),
    )
}

/// The marks after a number whose runs the machine distorted.
pub(crate) fn marks(oversubscribed: bool, contended: bool) -> String {
    let mut out = String::new();
    if oversubscribed {
        out.push_str(" ⚠ oversubscribed");
    }
    if contended {
        out.push_str(" ⚠ contended");
    }
    out
}

fn ci_text(lo: f64, hi: f64) -> String {
    format!("[{}, {}]", format_seconds(lo), format_seconds(hi))
}

fn opt_seconds(v: Option<f64>) -> String {
    v.map(format_seconds).unwrap_or_else(|| "–".into())
}

fn run_row(results: &ResultSet, s: &RunStats) -> RunRow {
    let r = &results.runs[s.index];
    let m = &s.summary;
    let (oversubscribed, contended) = conditions(results, s);
    RunRow {
        case_id: r.base_case_id().to_string(),
        stack: r.stack.clone(),
        metric: s.metric.to_string(),
        oversubscribed,
        contended,
        marks: marks(oversubscribed, contended),
        bundle: r.bundle.display().to_string(),
        n: m.n,
        repeats: s.runs.len(),
        rounds: s.rounds,
        mean_s: m.mean,
        stdev_s: m.stdev,
        median_s: m.median,
        min_s: m.min,
        max_s: m.max,
        p5_s: m.p5,
        p95_s: m.p95,
        ci_lo_s: m.median_ci.lo,
        ci_hi_s: m.median_ci.hi,
        cv: m.cv,
        spread_ratio: m.spread_ratio,
        spread_flag: m.spread_flag,
        outliers: m.outliers.len(),
        algbw_gb_s: s.algbw.map(|b| b / 1e9),
        busbw_gb_s: s.busbw.map(|b| b / 1e9),
        bw_execute_mb_s: s.bw_execute_mb_s,
        device_wall_median_s: s.device_wall_median,
        setup_s: s.setup_s,
        median: format_seconds(m.median),
        ci: ci_text(m.median_ci.lo, m.median_ci.hi),
        mean: format_seconds(m.mean),
        stdev: opt_seconds(m.stdev),
        min: format_seconds(m.min),
        max: format_seconds(m.max),
        p5: format_seconds(m.p5),
        p95: format_seconds(m.p95),
        cv_text: m
            .cv
            .map(|c| format!("{:.1} %", c * 100.0))
            .unwrap_or_else(|| "–".into()),
        spread: match (m.spread_ratio, m.spread_flag) {
            (Some(r), true) => format!("{r:.2} ⚠"),
            (Some(r), false) => format!("{r:.2}"),
            (None, _) => "–".into(),
        },
        busbw: s.busbw.map(format_bandwidth).unwrap_or_else(|| "–".into()),
        algbw: s.algbw.map(format_bandwidth).unwrap_or_else(|| "–".into()),
    }
}
