//! The report's Link census section: `analysis::census`'s findings, link classes, the P × P
//! busbw matrix (for a page of up to [`MATRIX_MAX`] devices; the heatmaps show any size) and
//! every pair's row, as the templates show them (`census` in `docs/report-context.md`). Pure:
//! formatting only, no statistics of its own.

use serde::Serialize;

use crate::analysis::census::{self, Census};
use crate::model::units::{format_bandwidth, format_seconds};

/// The matrix is written out as a table for at most this many devices (wider is unreadable).
pub(crate) const MATRIX_MAX: usize = 16;

/// The Link census section.
#[derive(Debug, Serialize)]
pub(crate) struct CensusCtx {
    pub(crate) stack: String,
    pub(crate) devices: Vec<u32>,
    /// Pairs of the one-factorisation, and rounds.
    pub(crate) planned_pairs: usize,
    pub(crate) rounds: usize,
    pub(crate) findings: Vec<census::Finding>,
    /// Pairs scored within a class large enough to score (a clean bill covers only these).
    pub(crate) scored: usize,
    pub(crate) classes: Vec<ClassRow>,
    /// Column headers and rows of the busbw matrix; empty above [`MATRIX_MAX`] devices.
    pub(crate) matrix_header: Vec<String>,
    pub(crate) matrix: Vec<Vec<String>>,
    pub(crate) pairs: Vec<PairRow>,
    /// "0–3, 2–5": pairs with no passing run.
    pub(crate) missing: String,
    /// Devices journaled as quarantined because the census named them (`quarantine = true`).
    pub(crate) quarantine: bool,
    /// The rule's numbers.
    pub(crate) min_score: f64,
    pub(crate) min_shortfall_pct: f64,
    pub(crate) spread_floor_pct: f64,
    pub(crate) min_class: usize,
}

#[derive(Debug, Serialize)]
pub(crate) struct ClassRow {
    pub(crate) class: &'static str,
    pub(crate) pairs: usize,
    pub(crate) median_busbw: String,
    /// The robust spread, or why the class was not scored.
    pub(crate) spread: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct PairRow {
    pub(crate) pair: String,
    pub(crate) class: &'static str,
    /// "n1–n2" where the run spanned nodes.
    pub(crate) nodes: String,
    pub(crate) busbw: String,
    pub(crate) latency: String,
    pub(crate) rounds: usize,
    pub(crate) ratio_pct: Option<f64>,
    pub(crate) score: Option<f64>,
    pub(crate) outlier: bool,
}

/// The section for `c`; `quarantine`: the plan journals the devices it names.
pub(crate) fn section(c: &Census, quarantine: bool) -> CensusCtx {
    let planned = census::rounds(&c.devices);
    let small = c.devices.len() <= MATRIX_MAX;
    let matrix = if small { matrix(c) } else { Vec::new() };
    let matrix_header = if small {
        c.devices.iter().map(u32::to_string).collect()
    } else {
        Vec::new()
    };
    let round1 = |x: f64| (x * 10.0).round() / 10.0;
    CensusCtx {
        stack: c.stack.clone(),
        devices: c.devices.clone(),
        planned_pairs: planned.iter().map(Vec::len).sum(),
        rounds: planned.len(),
        findings: c.findings.clone(),
        scored: c.pairs.iter().filter(|p| p.score.is_some()).count(),
        classes: (c.classes.iter())
            .map(|k| ClassRow {
                class: k.class.label(),
                pairs: k.pairs,
                median_busbw: format_bandwidth(k.median_busbw),
                spread: k.spread.map_or_else(
                    || format!("not scored (fewer than {} pairs)", census::MIN_CLASS),
                    format_bandwidth,
                ),
            })
            .collect(),
        matrix_header,
        matrix,
        pairs: (c.pairs.iter())
            .map(|p| PairRow {
                pair: format!("{}–{}", p.a, p.b),
                class: p.class.label(),
                nodes: p
                    .nodes
                    .as_ref()
                    .map_or(String::new(), |(x, y)| format!("{x}–{y}")),
                busbw: format_bandwidth(p.busbw),
                latency: format_seconds(p.latency_s),
                rounds: p.rounds,
                ratio_pct: p.ratio.map(|r| round1(100.0 * r)),
                score: p.score.map(round1),
                outlier: p.outlier,
            })
            .collect(),
        missing: (c.missing.iter())
            .map(|(a, b)| format!("{a}–{b}"))
            .collect::<Vec<_>>()
            .join(", "),
        quarantine,
        min_score: census::MIN_SCORE,
        min_shortfall_pct: 100.0 * census::MIN_SHORTFALL,
        spread_floor_pct: 100.0 * census::SPREAD_FLOOR,
        min_class: census::MIN_CLASS,
    }
}

/// Row `i`: the device, then its busbw with each other device (`—` on the diagonal, `–` for a
/// pair with no passing run, `**…**`-free: the template marks outliers from `pairs`).
fn matrix(c: &Census) -> Vec<Vec<String>> {
    (c.devices.iter())
        .map(|&a| {
            let mut row = vec![a.to_string()];
            row.extend(c.devices.iter().map(|&b| {
                if a == b {
                    return "—".to_string();
                }
                match c.cell(a, b) {
                    Some(p) if p.outlier => format!("{} ⚠", format_bandwidth(p.busbw)),
                    Some(p) => format_bandwidth(p.busbw),
                    None => "–".to_string(),
                }
            }));
            row
        })
        .collect()
}
