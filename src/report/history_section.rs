//! The report's "History" section: how this run compares with earlier runs of its series
//! (previous median, change, whether change-point detection found a step at this run).
//!
//! The numbers come in ready (`model::series::ReportHistory`, filled by `engine::report_step`
//! from the history store); this file only words them for the template. Pure.

use serde::Serialize;

use crate::model::series::{Direction, ReportHistory, ReportHistoryRow};
use crate::model::units::format_seconds;

/// `history` in the template context.
#[derive(Debug, Serialize)]
pub(crate) struct HistoryCtx {
    pub(crate) rows: Vec<HistoryRow>,
}

#[derive(Debug, Serialize)]
pub(crate) struct HistoryRow {
    pub(crate) case_id: String,
    pub(crate) stack: String,
    pub(crate) earlier: usize,
    pub(crate) previous: String,
    pub(crate) median: String,
    /// `+12.3 %`.
    pub(crate) change: String,
    /// `slower ×2.00 [1.91, 2.09]`, or `no`.
    pub(crate) step: String,
    pub(crate) regression: bool,
    /// What the machine did to the two points ("this run ⚠ contended 62 %"), empty if nothing.
    pub(crate) machine: String,
    pub(crate) previous_median_s: f64,
    pub(crate) median_s: f64,
}

pub(crate) fn context(h: &ReportHistory) -> Option<HistoryCtx> {
    if h.rows.is_empty() {
        return None;
    }
    let rows = h
        .rows
        .iter()
        .map(|r| HistoryRow {
            case_id: r.case_id.clone(),
            stack: r.stack.clone(),
            earlier: r.earlier,
            previous: format_seconds(r.previous_median_s),
            median: format_seconds(r.median_s),
            change: format!("{:+.1} %", r.change * 100.0),
            step: step_words(r),
            regression: r
                .step
                .as_ref()
                .is_some_and(|s| s.direction == Direction::Slower),
            machine: r.machine.clone(),
            previous_median_s: r.previous_median_s,
            median_s: r.median_s,
        })
        .collect();
    Some(HistoryCtx { rows })
}

/// `slower ×2.00 [1.91, 2.09]` or `no`, and when the stack's definition changed since the
/// previous run, that too: a step across a redefinition may be the definition's doing.
fn step_words(r: &ReportHistoryRow) -> String {
    let step = match &r.step {
        Some(s) => format!(
            "{} ×{:.2} [{:.2}, {:.2}]",
            s.direction, s.ratio, s.ratio_lo, s.ratio_hi
        ),
        None => "no".into(),
    };
    if r.definition_changed {
        format!("{step} (the stack definition changed since the previous run)")
    } else {
        step
    }
}
