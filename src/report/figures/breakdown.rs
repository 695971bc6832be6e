//! phase_breakdown and compile_breakdown: stacked bars of where time goes, one bar per run.
//!
//! Drawn only when runs recorded phases (startup/compile/init/execute …) or a compile profile
//! (passes/codegen, other = total − passes − codegen). Bars are per run, never averaged over
//! runs, and horizontal: each carries its full `stack case_id` label on a row of its own, the
//! figure growing one row per bar, so labels never overlap. Only turns the analysis into a
//! panel.

use std::collections::{BTreeMap, HashMap};

use plotters::prelude::IntoFont;

use super::common::{Axis, Panel, Panels, LABEL_FONT, LEGEND_W, MARGIN, TITLE_H, X_LABEL_H};
use crate::model::results::ResultSet;
use crate::report::font::FAMILY;
use crate::report::summary::Analysis;

/// Phases in the order the seed's stacks go through them; any other phase follows by name.
const PHASE_ORDER: &[&str] = &["startup", "compile", "init", "execute"];

pub(crate) fn phases(a: &Analysis, results: &ResultSet) -> Result<Panels, String> {
    let bars: Vec<(String, Vec<(String, f64)>)> = a
        .stats
        .values()
        .filter(|s| !s.phase_means.is_empty())
        .map(|s| (run_label(results, s), with_collective(s)))
        .collect();
    if bars.is_empty() {
        return Err("no passing run recorded phases".into());
    }
    Ok(stacked(
        "Phase breakdown per run (mean of timed rounds)",
        "seconds (mean of timed rounds)",
        "the first segment is the collective itself — the mean of the stack's headline metric \
         over the timed rounds, unless the stack reports an `execute` phase of its own —, then \
         the phases the stack reported in the order it goes through them (the host stack's \
         `check` is the golden check after each round, outside the timed window)",
        bars,
    ))
}

pub(crate) fn compile(a: &Analysis, results: &ResultSet) -> Result<Panels, String> {
    let bars: Vec<(String, Vec<(String, f64)>)> = a
        .stats
        .values()
        .filter(|s| !s.compile_means.is_empty())
        .map(|s| {
            let m = &s.compile_means;
            let passes = m.get("passes").copied().unwrap_or(0.0);
            let codegen = m.get("codegen").copied().unwrap_or(0.0);
            let total = m.get("total").copied().unwrap_or(passes + codegen);
            let parts = vec![
                ("passes".to_string(), passes),
                ("codegen".to_string(), codegen),
                ("other".to_string(), (total - passes - codegen).max(0.0)),
            ];
            (run_label(results, s), parts)
        })
        .collect();
    if bars.is_empty() {
        return Err("no passing run recorded a compile profile".into());
    }
    Ok(stacked(
        "Compile breakdown per run",
        "seconds (mean over rounds with a compile profile)",
        "segments are passes, codegen and the rest of the compile total",
        bars,
    ))
}

/// `stack case_id`, with the report's marks when the machine distorted its runs (the bar's
/// times are then the machine's as much as the stack's).
fn run_label(results: &ResultSet, s: &crate::analysis::run_stats::RunStats) -> String {
    let r = &results.runs[s.index];
    let (over, contended) = crate::report::context::conditions(results, s);
    format!(
        "{} {}{}",
        r.stack,
        r.case_id,
        crate::report::context::marks(over, contended)
    )
}

/// The collective first, then the stack's phases: a stack that reports only its correctness
/// check (the host stack) would otherwise show that and not the collective being measured.
fn with_collective(s: &crate::analysis::run_stats::RunStats) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    if !s.phase_means.contains_key("execute") {
        out.push((format!("collective ({})", s.metric), s.summary.mean));
    }
    out.extend(ordered(&s.phase_means));
    out
}

fn ordered(m: &BTreeMap<String, f64>) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = PHASE_ORDER
        .iter()
        .filter_map(|p| m.get(*p).map(|v| (p.to_string(), *v)))
        .collect();
    out.extend(
        m.iter()
            .filter(|(k, _)| !PHASE_ORDER.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), *v)),
    );
    out
}

/// Most bars one figure draws (one 22 px row each: 120 rows is a ~2,700 px tall image). A
/// campaign of 10,000 runs would otherwise make a 220,000 px image of ~1 GB in memory; the
/// caption says how many are drawn, and every run's phases are in `results.csv`.
pub(crate) const MAX_BARS: usize = 120;

/// One bar: its label and its (segment name, seconds) in drawing order.
type Bar = (String, Vec<(String, f64)>);

/// Most segments (distinct names) one figure draws: a stack may report thousands of phases,
/// and a legend of 160,000 names is neither drawable nor readable.
pub(crate) const MAX_SEGMENTS: usize = 12;

/// The segment the names past [`MAX_SEGMENTS`] are summed in.
const OTHER: &str = "other phases";

/// Keep the [`MAX_SEGMENTS`] names of most time over all `bars` (ties: the first seen) and sum
/// each bar's other segments into one [`OTHER`] segment at its end; returns the bars and how
/// many names were folded. Linear in the number of segments (plus a sort of the names).
fn fold_small_segments(bars: Vec<Bar>) -> (Vec<Bar>, usize) {
    let mut totals: HashMap<&str, (f64, usize)> = HashMap::new();
    for (_, parts) in &bars {
        for (n, v) in parts {
            let seen = totals.len();
            let t = totals.entry(n.as_str()).or_insert((0.0, seen));
            // A non-finite or negative mean (never from a passing run) weighs nothing.
            t.0 += if v.is_finite() && *v > 0.0 { *v } else { 0.0 };
        }
    }
    if totals.len() <= MAX_SEGMENTS {
        return (bars, 0);
    }
    let mut ranked: Vec<(&str, (f64, usize))> = totals.into_iter().collect();
    ranked.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
    let folded = ranked.len() - MAX_SEGMENTS;
    let kept: std::collections::HashSet<String> = ranked[..MAX_SEGMENTS]
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    let bars = bars
        .into_iter()
        .map(|(label, parts)| {
            let mut other = 0.0;
            let mut out = Vec::new();
            for (n, v) in parts {
                if kept.contains(&n) {
                    out.push((n, v));
                } else {
                    other += v;
                }
            }
            if other > 0.0 {
                out.push((OTHER.to_string(), other));
            }
            (label, out)
        })
        .collect();
    (bars, folded)
}

/// Pixels per bar: a 12 px label plus a gap, also after the axis keeps room beside the outer bars.
const ROW: u32 = 22;
/// Width of the bars' plotting area.
const PLOT_W: u32 = 520;

/// The pixel layout of a horizontal bar chart with one full, horizontal label per bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Width of the label column (the widest label, measured in the figure font, plus a gap).
    pub(crate) label_width: u32,
    pub(crate) size: (u32, u32),
}

/// Room for `labels` one per row: no two labels share a row and none is cut.
pub(crate) fn layout(labels: &[String]) -> Layout {
    let font = (FAMILY, LABEL_FONT).into_font();
    let widest = labels
        .iter()
        .map(|l| {
            font.box_size(l)
                .map(|(w, _)| w)
                // Without the font (never after registration) assume a wide glyph per char.
                .unwrap_or(l.chars().count() as u32 * LABEL_FONT)
        })
        .max()
        .unwrap_or(0);
    let label_width = widest + 16;
    let rows = labels.len().max(1) as u32;
    let height = TITLE_H + 2 * MARGIN + X_LABEL_H + rows * ROW + 24;
    Layout {
        label_width,
        size: (label_width + PLOT_W + LEGEND_W, height),
    }
}

/// Horizontal stacked bars, the first bar on top, each labelled by its full `stack case_id`
/// (long ids read naturally left to right and never overlap, however many runs there are).
fn stacked(
    title: &str,
    x_desc: &str,
    segments: &str,
    mut bars: Vec<(String, Vec<(String, f64)>)>,
) -> Panels {
    let total = bars.len();
    bars.truncate(MAX_BARS);
    let shown = if total > MAX_BARS {
        format!(
            " Only the first {MAX_BARS} of {total} runs are drawn; every run's means are in \
             results.csv (`phase_<name>_s`, `compile_<name>_s`)."
        )
    } else {
        String::new()
    };
    let (bars, folded) = fold_small_segments(bars);
    let shown = match folded {
        0 => shown,
        n => format!(
            "{shown} The {MAX_SEGMENTS} segments of most time over the drawn bars are drawn; the \
             other {n} are summed in `{OTHER}`, and every phase is in results.csv."
        ),
    };
    // The legend's colours, in first-seen order (a map: thousands of names are looked up).
    let mut names: Vec<String> = Vec::new();
    let mut color: HashMap<String, usize> = HashMap::new();
    for (_, parts) in &bars {
        for (n, _) in parts {
            if !color.contains_key(n) {
                color.insert(n.clone(), names.len());
                names.push(n.clone());
            }
        }
    }
    // Row 0 is at the bottom of the axis: bar i goes to row n-1-i so the table order reads
    // top-down.
    let n = bars.len();
    let labels: Vec<String> = bars.iter().rev().map(|b| b.0.clone()).collect();
    let look = layout(&labels);
    let mut panel = Panel::new("", Axis::seconds(x_desc), Axis::every_category("", labels));
    panel.y_label_width = look.label_width;
    for (i, (_, parts)) in bars.iter().enumerate() {
        let row = (n - 1 - i) as f64;
        let mut x = 0.0;
        for (name, v) in parts {
            let c = color.get(name).copied().unwrap_or(0);
            panel.rects.push((x, row - 0.4, x + v, row + 0.4, c));
            panel.hover.push(super::common::Hover {
                x: x + v / 2.0,
                y: row,
                color: c,
                series: name.as_str().into(),
                text: format!(
                    "{}: {name} {}",
                    bars[i].0,
                    crate::model::units::format_seconds(*v)
                ),
            });
            x += v;
        }
    }
    panel.rect_legend = names.into_iter().enumerate().map(|(i, n)| (n, i)).collect();
    Panels {
        title: title.to_string(),
        panels: vec![panel],
        caption: format!(
            "One horizontal bar per (case, stack), labelled `stack case_id`, top down in the \
             order of the report's tables; {segments}.{shown}"
        ),
        size: Some(look.size),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::figures::Figure;
    use plotters::prelude::*;

    /// The `y` attribute of the SVG `<text>` element whose content is exactly `label`.
    fn text_y(svg: &str, label: &str) -> Option<f64> {
        svg.split("<text").skip(1).find_map(|el| {
            let (tag, rest) = el.split_once('>')?;
            let content = rest.split("</text>").next()?.trim();
            if content != label {
                return None;
            }
            tag.split(" y=\"").nth(1)?.split('"').next()?.parse().ok()
        })
    }

    #[test]
    fn a_campaign_of_many_runs_draws_a_bounded_figure_and_says_so() {
        crate::report::font::ensure_registered().unwrap();
        let bars: Vec<(String, Vec<(String, f64)>)> = (0..10_000)
            .map(|i| {
                (
                    format!("host mesh_p2_count{i}"),
                    vec![("execute".into(), 1e-3)],
                )
            })
            .collect();
        let fig = stacked("Phase breakdown", "seconds", "phases", bars);
        let (_, height) = fig.size.unwrap();
        assert!(height < 3_000, "{height} px for 10,000 runs");
        assert!(
            fig.caption
                .contains("Only the first 120 of 10000 runs are drawn"),
            "{}",
            fig.caption
        );
    }

    #[test]
    fn thousands_of_phases_draw_the_heaviest_and_fold_the_rest_into_one_segment() {
        crate::report::font::ensure_registered().unwrap();
        // 3 runs of 20,000 phases each; phase 7 weighs most, the rest little.
        let bars: Vec<(String, Vec<(String, f64)>)> = (0..3)
            .map(|r| {
                let parts = (0..20_000)
                    .map(|i| (format!("p{i}"), if i == 7 { 1.0 } else { 1e-6 }))
                    .collect();
                (format!("s{r} case"), parts)
            })
            .collect();
        let fig = stacked("Phase breakdown", "seconds", "phases", bars);
        let panel = &fig.panels[0];
        let legend: Vec<&str> = panel.rect_legend.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(legend.len(), MAX_SEGMENTS + 1, "{legend:?}");
        assert!(
            legend.contains(&"p7") && legend.contains(&OTHER),
            "{legend:?}"
        );
        assert!(
            fig.caption
                .contains("the other 19988 are summed in `other phases`"),
            "{}",
            fig.caption
        );
        // Each bar still sums to its whole time: 1 + 19,999 × 1e-6 seconds.
        let right = panel.rects.iter().map(|r| r.2).fold(0.0, f64::max);
        assert!((right - (1.0 + 19_999e-6)).abs() < 1e-6, "{right}");
    }

    #[test]
    fn every_bar_gets_its_full_label_on_a_row_of_its_own() {
        crate::report::font::ensure_registered().unwrap();
        let bars: Vec<(String, Vec<(String, f64)>)> = (0..40)
            .map(|i| {
                (
                    format!("simpler-own mesh_p{i}_count1048576_fp32_a2a3_d0-1-2-3-4-5-6-7"),
                    vec![("startup".into(), 0.2), ("execute".into(), 0.01 * i as f64)],
                )
            })
            .collect();
        let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
        let fig = stacked("Phase breakdown", "seconds", "phases", bars);
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, fig.size()).into_drawing_area();
            fig.draw(&root, &mut crate::report::figures::NoHover)
                .unwrap();
            root.present().unwrap();
        }
        let ys: Vec<f64> = labels
            .iter()
            .map(|l| text_y(&svg, l).unwrap_or_else(|| panic!("label `{l}` not drawn")))
            .collect();
        // Top down in table order, at least a label's height apart: no two overlap.
        for w in ys.windows(2) {
            assert!(w[1] - w[0] >= f64::from(LABEL_FONT) + 2.0, "{ys:?}");
        }
        // The label column holds the widest label.
        let font = (FAMILY, LABEL_FONT).into_font();
        let widest = labels.iter().map(|l| font.box_size(l).unwrap().0).max();
        let look = layout(&labels);
        assert!(look.label_width > widest.unwrap());
        assert_eq!(fig.size(), look.size);
        assert!(look.size.1 >= 40 * ROW);
    }
}
