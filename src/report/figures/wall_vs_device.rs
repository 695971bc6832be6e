//! wall_vs_device: median execute time vs median device wall time, one point per run.
//!
//! Drawn only when some passing run recorded `device_wall_s`; one series per stack and a
//! dashed parity line (execute = device wall). Only turns the analysis into a panel.

use super::common::{Axis, Panel, Panels, Series, Style};
use crate::model::results::ResultSet;
use crate::report::summary::Analysis;

pub(crate) fn build(a: &Analysis, results: &ResultSet) -> Result<Panels, String> {
    let mut panel = Panel::new(
        "one point per run",
        Axis::log10_seconds("median device wall time"),
        Axis::log10_seconds("median execute time"),
    );
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for (i, stack) in a.stacks.iter().enumerate() {
        let pts: Vec<(f64, f64)> = a
            .stats
            .values()
            .filter(|s| &results.runs[s.index].stack == stack)
            .filter_map(|s| Some((s.device_wall_median?, s.summary.median)))
            .filter(|p| p.0 > 0.0 && p.1 > 0.0)
            .map(|p| (p.0.log10(), p.1.log10()))
            .collect();
        for p in &pts {
            lo = lo.min(p.0.min(p.1));
            hi = hi.max(p.0.max(p.1));
        }
        if !pts.is_empty() {
            panel.series.push(Series {
                label: stack.clone(),
                color: i,
                style: Style::Points,
                points: pts,
            });
        }
    }
    if panel.series.is_empty() {
        return Err("no passing run recorded device_wall_s".into());
    }
    panel.series.push(Series {
        label: "parity".into(),
        color: a.stacks.len(),
        style: Style::Dashed,
        points: vec![(lo, lo), (hi, hi)],
    });
    Ok(Panels {
        title: "Execute time vs device wall time".into(),
        panels: vec![panel],
        caption: String::new(),
    })
}
