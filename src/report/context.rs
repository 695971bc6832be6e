//! The template context: what a report template can use, built from a ResultSet and its
//! analysis. Every field is documented in `docs/report-context.md` (keep the two in step).
//!
//! Owns how numbers look to people (human units via `crate::model::units`, never `0.0000`) and
//! the raw numbers beside them. Pure; no I/O and no statistics of its own.

use std::path::Path;

use serde::Serialize;

use super::figures::{Drawn, Skipped};
use super::summary::{Analysis, Failure, RunStats, Verdict};
use crate::analysis::stats::bootstrap::LEVEL;
use crate::model::results::{ResultSet, RunStatus};
use crate::model::units::{format_bandwidth, format_bytes, format_seconds};

#[derive(Debug, Serialize)]
pub struct Context {
    pub title: String,
    pub campaign: String,
    pub timestamp: String,
    pub provenance: ProvenanceCtx,
    pub bootstrap: BootstrapCtx,
    pub totals: Totals,
    pub status_counts: Vec<StatusCount>,
    pub stacks: Vec<String>,
    pub baseline: Option<String>,
    pub baseline_note: Option<String>,
    pub cases: Vec<CaseRow>,
    pub runs: Vec<RunRow>,
    pub failures: Vec<Failure>,
    pub paired: Vec<PairedRow>,
    pub models: Vec<ModelRow>,
    pub b_star: Vec<BStarRow>,
    pub figures: Vec<FigureRow>,
    pub skipped_figures: Vec<SkippedRow>,
    pub quarantined: Vec<NameValue>,
}

#[derive(Debug, Serialize)]
pub struct ProvenanceCtx {
    pub campaign_version: String,
    pub plan_hash: Option<String>,
    pub plan_file: Option<String>,
    pub host: String,
    pub kernel: String,
    pub cpu: String,
    pub executor: Option<String>,
    pub seed: Option<u64>,
    pub stack_roots: Vec<StackRootRow>,
    pub env: Vec<NameValue>,
}

#[derive(Debug, Serialize)]
pub struct StackRootRow {
    pub stack: String,
    pub path: Option<String>,
    pub git_commit: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct NameValue {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Serialize)]
pub struct BootstrapCtx {
    pub resamples: u32,
    pub seed: u64,
    pub level: f64,
}

#[derive(Debug, Serialize)]
pub struct Totals {
    pub runs: usize,
    pub passed: usize,
    pub not_passed: usize,
    pub cases: usize,
}

#[derive(Debug, Serialize)]
pub struct StatusCount {
    pub status: String,
    pub count: usize,
}

/// One planned case with one cell per stack (in `stacks` order).
#[derive(Debug, Serialize)]
pub struct CaseRow {
    pub case_id: String,
    pub variant: String,
    pub p: u32,
    pub count: u64,
    pub dtype: String,
    pub core_num: u32,
    pub n_bytes: u64,
    pub bytes: String,
    pub cells: Vec<Cell>,
}

#[derive(Debug, Serialize)]
pub struct Cell {
    pub stack: String,
    /// `pass`, another status, or `absent` when the stack has no run for the case.
    pub status: String,
    pub median_s: Option<f64>,
    pub ci_lo_s: Option<f64>,
    pub ci_hi_s: Option<f64>,
    /// "14.2 µs [13.9 µs, 14.8 µs]" for a passing run, else the status in capitals.
    pub text: String,
}

/// Statistics of one passing run.
#[derive(Debug, Serialize)]
pub struct RunRow {
    pub case_id: String,
    pub stack: String,
    pub bundle: String,
    pub n: usize,
    pub mean_s: f64,
    pub stdev_s: Option<f64>,
    pub median_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    pub p5_s: f64,
    pub p95_s: f64,
    pub ci_lo_s: f64,
    pub ci_hi_s: f64,
    pub cv: Option<f64>,
    pub spread_ratio: Option<f64>,
    pub spread_flag: bool,
    pub outliers: usize,
    pub algbw_gb_s: Option<f64>,
    pub busbw_gb_s: Option<f64>,
    pub bw_execute_mb_s: Option<f64>,
    pub device_wall_median_s: Option<f64>,
    pub setup_s: Option<f64>,
    pub median: String,
    pub ci: String,
    pub mean: String,
    pub stdev: String,
    pub min: String,
    pub max: String,
    pub p5: String,
    pub p95: String,
    pub cv_text: String,
    pub spread: String,
    pub busbw: String,
    pub algbw: String,
}

#[derive(Debug, Serialize)]
pub struct PairedRow {
    pub case_id: String,
    pub stack: String,
    pub baseline: String,
    pub ratio: f64,
    pub ci_lo: f64,
    pub ci_hi: f64,
    pub verdict: Verdict,
    pub label: String,
    pub stack_median: String,
    pub baseline_median: String,
}

#[derive(Debug, Serialize)]
pub struct ModelRow {
    pub stack: String,
    pub variant: String,
    pub p: u32,
    pub dtype: String,
    pub core_num: u32,
    pub overhead_us: f64,
    pub bandwidth_gb_s: Option<f64>,
    pub r2: f64,
    pub n_points: usize,
    pub overhead: String,
    pub bandwidth: String,
}

#[derive(Debug, Serialize)]
pub struct BStarRow {
    pub stack: String,
    pub variant: String,
    pub p: u32,
    pub dtype: String,
    pub core_num: u32,
    pub best_bandwidth_gb_s: f64,
    pub best_bandwidth: String,
}

#[derive(Debug, Serialize)]
pub struct FigureRow {
    pub name: String,
    pub title: String,
    /// Relative to `reports/summary.md`: `../figures/<name>.png`.
    pub png: String,
    pub svg: String,
}

#[derive(Debug, Serialize)]
pub struct SkippedRow {
    pub name: String,
    pub reason: String,
}

/// Build the context. `title` None: "<campaign> — <timestamp>".
pub fn build(
    results: &ResultSet,
    a: &Analysis,
    title: Option<&str>,
    drawn: &[Drawn],
    skipped: &[Skipped],
) -> Context {
    let p = &results.provenance;
    let counts = results.status_counts();
    let passed = counts.get(&RunStatus::Pass).copied().unwrap_or(0);
    Context {
        title: title
            .map(str::to_string)
            .unwrap_or_else(|| format!("{} — {}", results.campaign, results.timestamp)),
        campaign: results.campaign.clone(),
        timestamp: results.timestamp.clone(),
        provenance: ProvenanceCtx {
            campaign_version: p.campaign_version.clone(),
            plan_hash: p.plan_hash.clone(),
            plan_file: p.plan_file.clone(),
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
                })
                .collect(),
            env: name_values(p.env.iter()),
        },
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
        baseline: a.baseline.clone(),
        baseline_note: a.baseline_note.clone(),
        cases: case_rows(results, a),
        runs: a.stats.values().map(|s| run_row(results, s)).collect(),
        failures: a.failures.clone(),
        paired: a
            .paired
            .iter()
            .map(|p| PairedRow {
                case_id: p.case_id.clone(),
                stack: p.stack.clone(),
                baseline: p.baseline.clone(),
                ratio: p.ratio,
                ci_lo: p.ci.lo,
                ci_hi: p.ci.hi,
                verdict: p.verdict,
                label: p.label(),
                stack_median: format_seconds(a.stats[&p.stack_run].summary.median),
                baseline_median: format_seconds(a.stats[&p.baseline_run].summary.median),
            })
            .collect(),
        models: a
            .fits
            .iter()
            .map(|f| ModelRow {
                stack: f.key.stack.clone(),
                variant: f.key.variant.to_string(),
                p: f.key.p,
                dtype: f.key.dtype.to_string(),
                core_num: f.key.core_num,
                overhead_us: f.fit.overhead_s * 1e6,
                bandwidth_gb_s: f.fit.bandwidth_bytes_per_s.map(|b| b / 1e9),
                r2: f.fit.r2,
                n_points: f.fit.n_points,
                overhead: format_seconds(f.fit.overhead_s),
                bandwidth: f
                    .fit
                    .bandwidth_bytes_per_s
                    .map(format_bandwidth)
                    .unwrap_or_else(|| "– (time does not grow with size)".into()),
            })
            .collect(),
        b_star: a
            .b_star
            .iter()
            .map(|b| BStarRow {
                stack: b.stack.clone(),
                variant: b.variant.to_string(),
                p: b.p,
                dtype: b.dtype.to_string(),
                core_num: b.core_num,
                best_bandwidth_gb_s: b.best_bandwidth / 1e9,
                best_bandwidth: format_bandwidth(b.best_bandwidth),
            })
            .collect(),
        figures: drawn.iter().map(figure_row).collect(),
        skipped_figures: skipped
            .iter()
            .map(|s| SkippedRow {
                name: s.name.clone(),
                reason: s.reason.clone(),
            })
            .collect(),
        quarantined: name_values(results.quarantined.iter()),
    }
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
        png: file(&d.png),
        svg: file(&d.svg),
    }
}

fn case_rows(results: &ResultSet, a: &Analysis) -> Vec<CaseRow> {
    // The first run of each planned case describes it; statuses per (case, stack) from runs.
    let mut rows: Vec<CaseRow> = Vec::with_capacity(a.cases.len());
    let mut index = std::collections::HashMap::new();
    for r in &results.runs {
        if !index.contains_key(&r.case_id) {
            index.insert(r.case_id.clone(), rows.len());
            rows.push(CaseRow {
                case_id: r.case_id.clone(),
                variant: r.case.variant.to_string(),
                p: r.case.p,
                count: r.case.count,
                dtype: r.case.dtype.to_string(),
                core_num: r.case.core_num,
                n_bytes: r.case.n_bytes(),
                bytes: format_bytes(r.case.n_bytes()),
                cells: a
                    .stacks
                    .iter()
                    .map(|s| Cell {
                        stack: s.clone(),
                        status: "absent".into(),
                        median_s: None,
                        ci_lo_s: None,
                        ci_hi_s: None,
                        text: "—".into(),
                    })
                    .collect(),
            });
        }
    }
    for (i, r) in results.runs.iter().enumerate() {
        let row = &mut rows[index[&r.case_id]];
        let Some(cell) = row.cells.iter_mut().find(|c| c.stack == r.stack) else {
            continue;
        };
        match a.stats.get(&i) {
            Some(s) => {
                let m = &s.summary;
                cell.status = "pass".into();
                cell.median_s = Some(m.median);
                cell.ci_lo_s = Some(m.median_ci.lo);
                cell.ci_hi_s = Some(m.median_ci.hi);
                cell.text = format!(
                    "{} {}",
                    format_seconds(m.median),
                    ci_text(m.median_ci.lo, m.median_ci.hi)
                );
            }
            None => {
                cell.status = r.status.to_string();
                cell.text = if r.status == RunStatus::Pass {
                    "NO DATA".into()
                } else {
                    r.status.as_str().to_uppercase()
                };
            }
        }
    }
    rows
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
    RunRow {
        case_id: r.case_id.clone(),
        stack: r.stack.clone(),
        bundle: r.bundle.display().to_string(),
        n: m.n,
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
