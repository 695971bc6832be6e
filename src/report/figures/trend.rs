//! The history trend figure (`campaign history trend`): one panel per series, its run medians
//! in time order with their 95 % intervals, the x axis labelled by the stack commit (or date),
//! and detected steps named in the panel title. Same panels, palette and font as the report's
//! figures; not one of the report's own figures (it reads the history store, not a run dir).

use std::path::Path;

use plotters::prelude::*;

use super::common::{Axis, Hover, Panel, Panels, Series as Line, Style};
use super::{Figure, HoverPoint};
use crate::error::{Error, Result};
use crate::model::series::{Series, Step};

/// More panels than this make an unreadable image.
const MAX_SERIES: usize = 24;

fn x_label(p: &crate::model::series::Point) -> String {
    match &p.commit {
        Some(c) => c.get(..8).unwrap_or(c).to_string(),
        None => p
            .date
            .get(5..16)
            .map(|d| d.replacen('T', " ", 1))
            .unwrap_or_else(|| p.date.clone()),
    }
}

pub(crate) fn build(series: &[Series], steps: &[Vec<Step>]) -> Panels {
    let several_hosts = series
        .iter()
        .any(|s| s.key.host_fingerprint != series[0].key.host_fingerprint);
    let panels = series
        .iter()
        .zip(steps)
        .enumerate()
        .map(|(i, (s, st))| {
            let mut title = format!("{} · {}", s.case_id, s.key.stack);
            if several_hosts {
                title.push_str(&format!(" · {}", s.key.host_fingerprint));
            }
            for step in st {
                title.push_str(&format!(
                    " · {} ×{:.2} at #{}",
                    step.direction,
                    step.ratio,
                    step.at + 1
                ));
            }
            let names: Vec<String> = s.points.iter().map(x_label).collect();
            let mut panel = Panel::new(
                title,
                Axis::categories("run (stack commit, or date)", names),
                Axis::seconds("median execute time"),
            );
            panel.series.push(Line {
                label: "median".into(),
                color: i,
                style: Style::LineAndPoints,
                points: s
                    .points
                    .iter()
                    .enumerate()
                    .map(|(x, p)| (x as f64, p.median_s))
                    .collect(),
            });
            // Runs the machine distorted (oversubscribed, or contended beyond compare's
            // default): ringed, as in the report's other figures, and said in their hover.
            let limit = crate::analysis::verdict::DEFAULT_MAX_CONTENTION;
            let distorted: Vec<(f64, f64)> = (s.points.iter().enumerate())
                .filter(|(_, p)| !p.clean_at(limit))
                .map(|(x, p)| (x as f64, p.median_s))
                .collect();
            if !distorted.is_empty() {
                panel.series.push(Line {
                    label: "oversubscribed or contended (machine-distorted)".into(),
                    color: i,
                    style: Style::Hollow,
                    points: distorted,
                });
            }
            panel.error_bars = s
                .points
                .iter()
                .enumerate()
                .map(|(x, p)| (x as f64, p.ci_lo_s, p.median_s, p.ci_hi_s, i))
                .collect();
            let series_name: std::sync::Arc<str> =
                format!("{} · {}", s.case_id, s.key.stack).into();
            panel.hover = s
                .points
                .iter()
                .enumerate()
                .map(|(x, p)| Hover {
                    x: x as f64,
                    y: p.median_s,
                    color: i,
                    series: series_name.clone(),
                    text: point_text(x, p, st.iter().find(|step| step.at == x)),
                })
                .collect();
            panel
        })
        .collect();
    Panels {
        title: "Performance history: median execute time per run with 95 % CI".into(),
        caption: String::new(),
        panels,
        size: None,
    }
}

/// What hovering over point `x` of a series shows: run, date, commit, median, CI, n, and the
/// step that starts there.
fn point_text(x: usize, p: &crate::model::series::Point, step: Option<&Step>) -> String {
    use crate::model::units::format_seconds;
    let mut text = format!(
        "#{} {} ({}{}): median {} [{}, {}], n = {}",
        x + 1,
        Path::new(&p.run_dir)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.run_dir.clone()),
        p.date.get(..19).unwrap_or(&p.date).replacen('T', " ", 1),
        p.commit
            .as_deref()
            .map(|c| format!(", commit {}", c.get(..10).unwrap_or(c)))
            .unwrap_or_default(),
        format_seconds(p.median_s),
        format_seconds(p.ci_lo_s),
        format_seconds(p.ci_hi_s),
        p.n
    );
    if !p.clean_at(crate::analysis::verdict::DEFAULT_MAX_CONTENTION) {
        text.push_str(" ⚠ oversubscribed or contended");
    }
    if let Some(step) = step {
        text.push_str(&format!(
            "; change point: {} ×{:.2} [{:.2}, {:.2}]{}",
            step.direction,
            step.ratio,
            step.ratio_lo,
            step.ratio_hi,
            if step.current { ", still current" } else { "" }
        ));
    }
    text
}

/// The trend as SVG markup and its hover values (for the HTML page).
pub(crate) fn svg(series: &[Series], steps: &[Vec<Step>]) -> Result<(String, Vec<HoverPoint>)> {
    check_count(series)?;
    crate::report::font::ensure_registered().map_err(Error::Environment)?;
    let fig = build(series, steps);
    let mut text = String::new();
    let mut hover = Vec::new();
    {
        let root = SVGBackend::with_string(&mut text, fig.size()).into_drawing_area();
        fig.draw(&root, &mut hover)
            .map_err(|e| Error::Environment(format!("drawing the trend failed: {e}")))?;
        root.present()
            .map_err(|e| Error::Environment(format!("drawing the trend failed: {e}")))?;
    }
    Ok((text, hover))
}

fn check_count(series: &[Series]) -> Result<()> {
    if series.len() > MAX_SERIES {
        return Err(Error::Usage(format!(
            "{} series match; a trend figure shows at most {MAX_SERIES}: narrow it with --case \
             or --stack",
            series.len()
        )));
    }
    Ok(())
}

/// Draw the trend of `series` to `out` (`.png` or `.svg`).
pub(crate) fn draw(series: &[Series], steps: &[Vec<Step>], out: &Path) -> Result<()> {
    check_count(series)?;
    let ext = out
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let svg = match ext.as_deref() {
        Some("png") => false,
        Some("svg") => true,
        _ => {
            return Err(Error::Usage(format!(
                "--out {}: expected a file ending in .png, .svg or .html",
                out.display()
            )))
        }
    };
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    crate::report::font::ensure_registered().map_err(Error::Environment)?;
    let fig = build(series, steps);
    let size = fig.size();
    let failed =
        |e: String| Error::Environment(format!("{}: drawing the trend failed: {e}", out.display()));
    if svg {
        let root = SVGBackend::new(out, size).into_drawing_area();
        fig.draw(&root, &mut crate::report::figures::NoHover)
            .map_err(failed)?;
        root.present().map_err(|e| failed(e.to_string()))?;
    } else {
        let root = BitMapBackend::new(out, size).into_drawing_area();
        fig.draw(&root, &mut crate::report::figures::NoHover)
            .map_err(failed)?;
        root.present().map_err(|e| failed(e.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::series::{Point, SeriesKey};

    fn point(i: i64, median_s: f64, cpu_contention: Option<f64>) -> Point {
        Point {
            run_dir_id: i,
            run_dir: format!("/r/run_{i}"),
            stamp: format!("2026010{i}_000000"),
            date: format!("2026-01-0{i}T00:00:00Z"),
            commit: None,
            median_s,
            ci_lo_s: median_s * 0.9,
            ci_hi_s: median_s * 1.1,
            n: 30,
            cpu_contention,
            oversubscribed: false,
        }
    }

    #[test]
    fn contended_points_are_ringed_and_said_in_their_hover() {
        let series = Series {
            key: SeriesKey {
                series: "k".into(),
                case_key: "k".into(),
                stack: "host".into(),
                host_fingerprint: "h".into(),
            },
            case_id: "mesh_p2_count256_fp32_host_d0-1".into(),
            op: "allreduce".into(),
            host: "vm".into(),
            campaign: "c".into(),
            bytes: 1024,
            points: vec![
                point(1, 1e-3, Some(0.0)),
                point(2, 3e-3, Some(0.6)),
                point(3, 1e-3, None),
            ],
        };
        let panels = build(std::slice::from_ref(&series), &[Vec::new()]);
        let panel = &panels.panels[0];
        let ringed: Vec<&Line> = panel
            .series
            .iter()
            .filter(|l| l.style == Style::Hollow)
            .collect();
        assert_eq!(ringed.len(), 1);
        assert_eq!(ringed[0].points, vec![(1.0, 3e-3)]);
        assert!(panel.hover[1]
            .text
            .contains("⚠ oversubscribed or contended"));
        assert!(!panel.hover[0].text.contains('⚠'));
    }
}
