//! pmu_utilization: the seed harness's figure of a `pmu` profile, drawn from the shares
//! `report::pmu` reads out of each `pmu.csv` — one panel per profiled run's `pmu.csv`, one
//! group of bars per pipe (its `*_busy_cycles` counter), an AIC and an AIV bar in each: the
//! share of `pmu_total_cycles` that pipe was busy, summed over the file's tasks of that core
//! type.
//!
//! Only turns utilization rows into panels; reading the files is `report::profile_links`'s and
//! the sums are `report::pmu`'s. Profiled runs are never timed runs: nothing here is a
//! statistic of the result set.

use super::common::{Axis, Hover, Panel, Panels};
use crate::report::pmu::PmuUtilization;

/// Half the width of one core type's bar, in pipe-index units (two bars side by side).
const HALF_BAR: f64 = 0.18;
/// Most panels drawn: a figure of hundreds of profiles would be unreadable; the caption says
/// how many were left out (the Profiles section lists every one).
const MAX_PANELS: usize = 12;

/// One `pmu.csv`'s utilization and what it is of (`case · stack`).
pub(crate) struct PmuPanel<'a> {
    pub(crate) label: String,
    pub(crate) rows: &'a [PmuUtilization],
}

/// The figure of `tables` (those with utilization rows); `Err` says why there is none.
pub(crate) fn build(tables: &[PmuPanel<'_>]) -> Result<Panels, String> {
    let with_rows: Vec<&PmuPanel<'_>> = tables.iter().filter(|t| !t.rows.is_empty()).collect();
    if with_rows.is_empty() {
        return Err("no pmu profile has busy-cycle counters (PIPE_UTILIZATION)".into());
    }
    let mut panels = Vec::new();
    for t in with_rows.iter().take(MAX_PANELS) {
        panels.push(panel(t));
    }
    let left_out = with_rows.len().saturating_sub(MAX_PANELS);
    Ok(Panels {
        title: "PMU utilization: share of cycles each pipe was busy".into(),
        panels,
        caption: format!(
            "Each panel is one pmu profile's pmu.csv (simpler's per-task PMU counters; the \
             busy counters of its event group, PIPE_UTILIZATION by default): per pipe, the sum \
             of its busy cycles over the sum of pmu_total_cycles of the file's tasks of one core \
             type (AIC, AIV). A profiled run is an extra run and never in any statistic.{}",
            if left_out > 0 {
                format!(" {left_out} more pmu profile(s) are listed under Profiles, not drawn.")
            } else {
                String::new()
            }
        ),
        size: None,
    })
}

/// One panel: every pipe of the file's rows in column order, an AIC and an AIV bar each.
fn panel(t: &PmuPanel<'_>) -> Panel {
    let mut pipes: Vec<&str> = Vec::new();
    for r in t.rows {
        for (pipe, _) in &r.pipes {
            if !pipes.contains(&pipe.as_str()) {
                pipes.push(pipe);
            }
        }
    }
    let x = Axis::every_category("pipe", pipes.iter().map(|p| p.to_string()).collect());
    let mut panel = Panel::new(
        t.label.clone(),
        x,
        Axis::new("busy, % of total cycles", |v| format!("{v:.0} %")),
    );
    // A 0–100 % scale whatever the bars, so panels read alike.
    panel.hline = Some((100.0, "all cycles".into()));
    for r in t.rows {
        let (color, offset) = match r.core_type.as_str() {
            "AIC" => (0, -HALF_BAR),
            _ => (1, HALF_BAR),
        };
        let entry = format!("{} cores", r.core_type);
        if !panel.rect_legend.iter().any(|(l, _)| *l == entry) {
            panel.rect_legend.push((entry.clone(), color));
        }
        let series: std::sync::Arc<str> = entry.into();
        for (pipe, share) in &r.pipes {
            let Some(i) = pipes.iter().position(|p| p == pipe) else {
                continue;
            };
            let x = i as f64 + offset;
            panel
                .rects
                .push((x - HALF_BAR, 0.0, x + HALF_BAR, *share, color));
            panel.hover.push(Hover {
                x,
                y: *share,
                color,
                series: series.clone(),
                text: format!(
                    "{} · {} {pipe}: busy {share:.1} % of cycles over {} task(s)",
                    t.label, r.core_type, r.tasks
                ),
            });
        }
    }
    panel
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(core: &str, pipes: &[(&str, f64)]) -> PmuUtilization {
        PmuUtilization {
            core_type: core.into(),
            tasks: 2,
            pipes: pipes.iter().map(|(p, s)| (p.to_string(), *s)).collect(),
        }
    }

    #[test]
    fn one_panel_per_file_and_a_bar_per_pipe_and_core_type() {
        let rows = [
            row("AIC", &[("vec", 0.0), ("cube", 75.0)]),
            row("AIV", &[("vec", 11.1), ("cube", 0.0)]),
        ];
        let none: [PmuUtilization; 0] = [];
        let tables = [
            PmuPanel {
                label: "c · simpler-scene".into(),
                rows: &rows,
            },
            PmuPanel {
                label: "memory group".into(),
                rows: &none,
            },
        ];
        let fig = build(&tables).unwrap();
        assert_eq!(
            fig.panels.len(),
            1,
            "a file without busy counters draws no panel"
        );
        let p = &fig.panels[0];
        assert_eq!(p.rects.len(), 4);
        // The AIC cube bar: left of pipe 1, 75 % high.
        let cube = p.rects.iter().find(|r| r.3 == 75.0).unwrap();
        assert!(cube.0 < 1.0 && cube.2 <= 1.0 && cube.4 == 0);
        assert!(p
            .hover
            .iter()
            .any(|h| h.text.contains("AIV vec: busy 11.1 %")));
        let Err(why) = build(&tables[1..]) else {
            panic!("a figure of no busy counters was built");
        };
        assert!(why.contains("PIPE_UTILIZATION"), "{why}");
    }
}
