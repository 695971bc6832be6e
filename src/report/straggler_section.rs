//! The report's Stragglers section: `analysis::straggler`'s findings and per-unit scores as the
//! templates show them (`stragglers` in `docs/report-context.md`), and the stacks it left out.
//! Pure: formatting only, no statistics of its own.

use serde::Serialize;

use crate::analysis::straggler::{self, Cell, CellState, Finding, Stragglers};

/// The Stragglers section.
#[derive(Debug, Serialize)]
pub(crate) struct StragglersCtx {
    /// Some run passed: the section is shown (saying at least which stacks fed it).
    pub(crate) shown: bool,
    pub(crate) findings: Vec<FindingRow>,
    pub(crate) units: Vec<UnitRow>,
    /// Stacks whose per-rank times were used.
    pub(crate) stacks: Vec<String>,
    /// Stacks left out for lack of per-rank times, each with why.
    pub(crate) left_out: Vec<LeftOutRow>,
    /// Runs and rounds set aside, in words; none when none.
    pub(crate) skipped_note: Option<String>,
    /// The rule's numbers: cells tested (the Bonferroni family), the bound each late cell's
    /// Bernstein bound must be within, and the floors.
    pub(crate) family: usize,
    pub(crate) threshold: f64,
    pub(crate) alpha_pct: f64,
    pub(crate) min_ratio: f64,
    pub(crate) min_score: f64,
    pub(crate) min_runs: usize,
    pub(crate) min_rounds: usize,
    /// Earlier campaigns of this machine whose rounds were pooled in (the history store), and
    /// the sentence saying so (none when none).
    pub(crate) pooled_campaigns: usize,
    pub(crate) pooled_note: Option<String>,
}

/// One finding.
#[derive(Debug, Serialize)]
pub(crate) struct FindingRow {
    pub(crate) unit: String,
    pub(crate) kind: &'static str,
    /// `hardware`, `implementation` or `undetermined`.
    pub(crate) attribution: straggler::Attribution,
    pub(crate) stacks: Vec<String>,
    pub(crate) last: f64,
    pub(crate) rounds: usize,
    pub(crate) chance: f64,
    pub(crate) runs: usize,
    pub(crate) late_runs: usize,
    pub(crate) lateness_pct: Option<f64>,
    pub(crate) ci_lo_pct: Option<f64>,
    pub(crate) ci_hi_pct: Option<f64>,
    pub(crate) label: String,
}

/// One unit's scores over every stack, and its cell under each stack in words.
#[derive(Debug, Serialize)]
pub(crate) struct UnitRow {
    pub(crate) unit: String,
    pub(crate) kind: &'static str,
    pub(crate) rounds: usize,
    pub(crate) last: f64,
    pub(crate) chance: f64,
    pub(crate) late_ratio: Option<f64>,
    pub(crate) score: Option<f64>,
    pub(crate) lateness_pct: Option<f64>,
    pub(crate) ci_lo_pct: Option<f64>,
    pub(crate) ci_hi_pct: Option<f64>,
    /// "A: late (40 of 60), B: not late (14 of 60)".
    pub(crate) per_stack: String,
    /// Some finding names this unit.
    pub(crate) found: bool,
}

#[derive(Debug, Serialize)]
pub(crate) struct LeftOutRow {
    pub(crate) stack: String,
    pub(crate) why: String,
}

/// The section for `s`; `any_passed`: some run passed.
pub(crate) fn section(s: &Stragglers, any_passed: bool) -> StragglersCtx {
    let found = |unit: &str| s.findings.iter().any(|f| f.unit == unit);
    StragglersCtx {
        shown: any_passed,
        findings: s.findings.iter().map(finding_row).collect(),
        units: (s.units.iter())
            .map(|u| UnitRow {
                unit: u.unit.clone(),
                kind: u.kind,
                rounds: u.pooled.rounds,
                last: u.pooled.last,
                chance: u.pooled.chance,
                late_ratio: u.pooled.late_ratio,
                score: u.pooled.score,
                lateness_pct: u.pooled.lateness_pct,
                ci_lo_pct: u.pooled.ci_lo_pct,
                ci_hi_pct: u.pooled.ci_hi_pct,
                per_stack: u
                    .stacks
                    .iter()
                    .map(cell_words)
                    .collect::<Vec<_>>()
                    .join(", "),
                found: found(&u.unit),
            })
            .collect(),
        stacks: s.stacks.clone(),
        left_out: (s.left_out.iter())
            .map(|l| LeftOutRow {
                stack: l.stack.clone(),
                why: l.why.clone(),
            })
            .collect(),
        skipped_note: skipped_note(&s.skipped),
        family: s.family,
        threshold: s.threshold,
        alpha_pct: straggler::ALPHA * 100.0,
        min_ratio: straggler::MIN_RATIO,
        min_score: straggler::MIN_SCORE,
        min_runs: straggler::MIN_RUNS,
        min_rounds: straggler::MIN_ROUNDS,
        pooled_campaigns: s.pooled_campaigns,
        pooled_note: (s.pooled_campaigns > 0).then(|| {
            format!(
                "Pooled with the rounds of {} earlier campaign{} recorded on this machine (the \
                 history store, same host fingerprint).",
                s.pooled_campaigns,
                if s.pooled_campaigns == 1 { "" } else { "s" }
            )
        }),
    }
}

fn finding_row(f: &Finding) -> FindingRow {
    let e = &f.evidence;
    FindingRow {
        unit: f.unit.clone(),
        kind: f.kind,
        attribution: f.attribution,
        stacks: f.stacks.clone(),
        last: e.last,
        rounds: e.rounds,
        chance: e.chance,
        runs: e.runs,
        late_runs: e.late_runs,
        lateness_pct: e.lateness_pct,
        ci_lo_pct: e.ci_lo_pct,
        ci_hi_pct: e.ci_hi_pct,
        label: f.label.clone(),
    }
}

/// "A: late (40 of 60)".
fn cell_words(c: &Cell) -> String {
    let state = match c.state {
        CellState::Late => "late",
        CellState::NotLate => "not late",
        CellState::Unclear => "unclear",
        CellState::TooFew => "too few rounds",
        CellState::Pooled => "pooled",
    };
    format!("{}: {state} ({:.0} of {})", c.stack, c.last, c.rounds)
}

/// "2 runs with per-rank times that do not match their devices, 3 rounds with a non-finite or
/// non-positive time set aside".
fn skipped_note(k: &straggler::Skipped) -> Option<String> {
    let mut parts = Vec::new();
    if k.ranks_not_devices > 0 {
        parts.push(format!(
            "{} run(s) whose per-rank times (or rank nodes) do not match their devices",
            k.ranks_not_devices
        ));
    }
    if k.one_rank > 0 {
        parts.push(format!("{} run(s) of one rank", k.one_rank));
    }
    if k.rounds > 0 {
        parts.push(format!(
            "{} round(s) with a non-finite or non-positive per-rank time",
            k.rounds
        ));
    }
    (!parts.is_empty()).then(|| format!("Set aside: {}.", parts.join("; ")))
}
