//! wall_vs_device: median execute time vs median device wall time, one point per run.
//!
//! Drawn only when some passing run recorded `device_wall_s`; one series per (stack, variant)
//! in that pair's colour (the same as in every other figure), both axes log with 1-2-5 ticks,
//! and a dashed black parity line (execute = device wall). Only turns the analysis into a panel.

use std::collections::BTreeMap;

use super::common::{stat_text, Axis, Hover, Panel, Panels, Series, Style, INK};
use crate::model::results::ResultSet;
use crate::report::summary::Analysis;

pub(crate) fn build(a: &Analysis, results: &ResultSet) -> Result<Panels, String> {
    let mut panel = Panel::new(
        "one point per run",
        Axis::log10_seconds("median device wall time"),
        Axis::log10_seconds("median execute time"),
    );
    let mut by_pair: BTreeMap<(String, String), Vec<(f64, f64)>> = BTreeMap::new();
    for s in a.stats.values() {
        let r = &results.runs[s.index];
        let Some(wall) = s.device_wall_median else {
            continue;
        };
        if wall > 0.0 && s.summary.median > 0.0 {
            panel.hover.push(Hover {
                x: wall.log10(),
                y: s.summary.median.log10(),
                color: a.color_of(&r.stack, &r.case.series_label()),
                series: format!("{} {}", r.stack, r.case.series_label()).into(),
                text: format!(
                    "{}; device wall {}",
                    stat_text(results, s),
                    crate::model::units::format_seconds(wall)
                ),
            });
            by_pair
                .entry((r.stack.clone(), r.case.series_label()))
                .or_default()
                .push((wall.log10(), s.summary.median.log10()));
        }
    }
    if by_pair.is_empty() {
        return Err("no passing run recorded device_wall_s".into());
    }
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for ((stack, variant), pts) in by_pair {
        for p in &pts {
            lo = lo.min(p.0.min(p.1));
            hi = hi.max(p.0.max(p.1));
        }
        panel.series.push(Series {
            label: format!("{stack} {variant}"),
            color: a.color_of(&stack, &variant),
            style: Style::Points,
            points: pts,
        });
    }
    panel.series.push(Series {
        label: "parity".into(),
        color: INK,
        style: Style::Reference,
        points: vec![(lo, lo), (hi, hi)],
    });
    Ok(Panels {
        title: "Execute time vs device wall time".into(),
        panels: vec![panel],
        caption: "Median execute time (campaign's timed window) against the median device wall \
                  time the runtime reported, one point per run, both on log axes ticked at \
                  1-2-5 per decade; points above the dashed parity line spend time outside the \
                  device. One colour per (stack, variant) in every figure."
            .into(),
        size: None,
    })
}
