//! paired_stack_ratio: per case, median(stack) / median(baseline) with its bootstrap CI.
//!
//! One panel per compared stack, one bar per case (never pooled over cases), error bars for
//! the 95 % CI and a parity line at 1 (below 1 = faster than the baseline). A bar has the
//! colour of its (stack, variant), as in every other figure. Only turns the paired
//! comparisons into panels.

use super::common::{Axis, Hover, Panel, Panels, INK};
use crate::model::results::ResultSet;
use crate::report::summary::Analysis;
use itertools::Itertools;

/// Half the width of a bar, in case-index units.
const HALF_BAR: f64 = 0.35;

pub(crate) fn build(a: &Analysis, results: &ResultSet) -> Result<Panels, String> {
    let Some(baseline) = &a.baseline else {
        return Err(a
            .baseline_note
            .clone()
            .unwrap_or_else(|| "no baseline stack".into()));
    };
    if a.paired.is_empty() {
        return Err(format!(
            "no case has passing runs of `{baseline}` and another stack"
        ));
    }
    // Built once: looking each case up among all runs made 10,000-run reports quadratic.
    let mut variants: std::collections::HashMap<&str, String> = std::collections::HashMap::new();
    for r in &results.runs {
        variants
            .entry(r.base_case_id())
            .or_insert_with(|| r.case.series_label());
    }
    // (case, stack) pairs whose runs the machine distorted: their bars are marked "⚠".
    let limit = crate::analysis::verdict::DEFAULT_MAX_CONTENTION;
    let distorted: std::collections::HashSet<(&str, &str)> = results
        .runs
        .iter()
        .filter(|r| r.oversubscribed() || r.contended(limit))
        .map(|r| (r.base_case_id(), r.stack.as_str()))
        .collect();
    let is_distorted = |p: &crate::analysis::pairing::Paired| {
        distorted.contains(&(p.case_id.as_str(), p.stack.as_str()))
            || distorted.contains(&(p.baseline_case_id.as_str(), baseline.as_str()))
    };
    let mut any_distorted = false;
    let mut panels = Vec::new();
    for stack in a.stacks.iter().filter(|s| *s != baseline) {
        let rows: Vec<_> = a.paired.iter().filter(|p| &p.stack == stack).collect();
        if rows.is_empty() {
            continue;
        }
        let names: Vec<String> = rows
            .iter()
            .map(|p| match is_distorted(p) {
                true => format!("{} ⚠", short(&p.case_id)),
                false => short(&p.case_id),
            })
            .collect();
        any_distorted |= rows.iter().any(|p| is_distorted(p));
        let x = Axis::categories("case", names);
        let mut panel = Panel::new(
            format!("{stack} / {baseline}"),
            x,
            Axis::new("time ratio", |v| format!("{v:.2}")),
        );
        panel.hline = Some((1.0, "parity".into()));
        for (i, p) in rows.iter().enumerate() {
            let variant = variants
                .get(p.case_id.as_str())
                .cloned()
                .unwrap_or_default();
            let color = a.color_of(stack, &variant);
            let entry = format!("{stack} {variant}");
            if !panel.rect_legend.iter().any(|(l, _)| *l == entry) {
                panel.rect_legend.push((entry.clone(), color));
            }
            let x = i as f64;
            panel
                .rects
                .push((x - HALF_BAR, 0.0, x + HALF_BAR, p.ratio, color));
            if let Some(ci) = p.ci {
                panel.error_bars.push((x, ci.lo, p.ratio, ci.hi, INK));
            }
            panel.hover.push(Hover {
                x,
                y: p.ratio,
                color,
                series: entry.into(),
                text: format!(
                    "{} · {} / {}: ratio {:.3}{} ({} vs {}): {}",
                    p.case_id,
                    stack,
                    baseline,
                    p.ratio,
                    p.ci.map(|c| format!(" [{:.3}, {:.3}]", c.lo, c.hi))
                        .unwrap_or_else(|| " (no CI)".into()),
                    crate::model::units::format_seconds(p.stack_median),
                    crate::model::units::format_seconds(p.baseline_median),
                    p.label(a.equivalence)
                ) + if is_distorted(p) {
                    " ⚠ oversubscribed or contended"
                } else {
                    ""
                },
            });
        }
        panels.push(panel);
    }
    Ok(Panels {
        title: format!("Time relative to {baseline} (below 1 = faster)"),
        panels,
        caption: format!(
            "Median of the stack divided by the median of {baseline} at the same point of the \
             sweep (its run of the same variant, else of its default), on the metric they are \
             paired on (never pooled over points); black whiskers: 95 % CI of \
             the ratio; one colour per (stack, variant) in every figure.{}",
            if any_distorted {
                " Cases marked ⚠ had runs the machine distorted (oversubscribed: more ranks \
                 than CPUs; or contended: waiting for a CPU beyond 10 % of the run): their \
                 ratio measures the machine as much as the stacks."
            } else {
                ""
            }
        ),
        size: None,
    })
}

/// A case id without its platform and device suffix, for axis labels.
fn short(case_id: &str) -> String {
    let parts: Vec<&str> = case_id.split('_').collect();
    parts.iter().take(4).join(" ")
}
