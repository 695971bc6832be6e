//! The history trend figure (`campaign history trend`): one panel per series, its run medians
//! in time order with their 95 % intervals, the x axis labelled so that runs are told apart
//! (the stack commit where it changes between runs, else the run's date and time), the y axis
//! logarithmic where a series spans more than a decade, and detected steps named in the panel
//! title. Any number of series: they are drawn in pages of [`PAGE`] panels (one figure each).
//! Same panels, palette and font as the report's figures; not one of the report's own figures
//! (it reads the history store, not a run dir).

use std::path::Path;

use plotters::prelude::*;

use super::common::{Axis, Hover, Panel, Panels, Series as Line, Style};
use super::{Figure, HoverPoint};
use crate::error::{Error, Result};
use crate::model::series::{Series, Step};

/// Panels in one figure: more make an unreadable image, so more series make more pages.
pub(crate) const PAGE: usize = 24;

/// The pages of `n` series: consecutive ranges of at most [`PAGE`] (the store's order, by case
/// then stack, keeps a case's stacks together).
pub(crate) fn pages(n: usize) -> Vec<std::ops::Range<usize>> {
    (0..n)
        .step_by(PAGE)
        .map(|lo| lo..(lo + PAGE).min(n))
        .collect()
}

/// A series spanning more than this ratio (highest interval end over lowest) is drawn on a log
/// axis: a linear one flattens its µs points under one wide interval.
const LOG_ABOVE: f64 = 10.0;

/// The x label of each point of `points`, told apart: the stack commit where the series'
/// commits differ from run to run, else the run's date and time (`12-06 14:03`); a label that
/// still repeats (two runs in one minute) gets its run number (`#3 12-06 14:03`).
fn x_labels(points: &[crate::model::series::Point]) -> Vec<String> {
    let date = |p: &crate::model::series::Point| {
        p.date
            .get(5..16)
            .map(|d| d.replacen('T', " ", 1))
            .unwrap_or_else(|| p.date.clone())
    };
    let distinct = |labels: &[String]| {
        let set: std::collections::HashSet<&String> = labels.iter().collect();
        set.len() == labels.len()
    };
    let by_commit: Option<Vec<String>> = (points.iter())
        .map(|p| (p.commit.as_deref()).map(|c| c.get(..8).unwrap_or(c).to_string()))
        .collect::<Option<Vec<_>>>()
        .filter(|l| distinct(l));
    let labels = by_commit.unwrap_or_else(|| points.iter().map(date).collect());
    if distinct(&labels) {
        return labels;
    }
    (labels.into_iter().enumerate())
        .map(|(i, l)| format!("#{} {l}", i + 1))
        .collect()
}

/// Is the series wide enough for a log y axis?
fn wide(points: &[crate::model::series::Point]) -> bool {
    let lo = (points.iter().map(|p| p.ci_lo_s.min(p.median_s)))
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let hi = (points.iter().map(|p| p.ci_hi_s.max(p.median_s))).fold(0.0, f64::max);
    lo.is_finite() && hi / lo > LOG_ABOVE
}

pub(crate) fn build(series: &[Series], steps: &[Vec<Step>]) -> Panels {
    let several_hosts = series
        .iter()
        .any(|s| s.key.host_fingerprint != series[0].key.host_fingerprint);
    let panels = (series.iter().zip(steps).enumerate())
        .map(|(i, (s, st))| panel(i, s, st, several_hosts))
        .collect();
    Panels {
        title: "Performance history: median execute time per run with 95 % CI".into(),
        caption: String::new(),
        panels,
        size: None,
    }
}

/// The panel of series `s` (palette index `i`): its medians with their intervals, the runs
/// the machine distorted ringed, its steps in the title.
fn panel(i: usize, s: &Series, st: &[Step], several_hosts: bool) -> Panel {
    let name = format!("{} · {}", s.case_id, s.key.stack);
    let mut title = name.clone();
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
    // A wide series on a log axis: its values are drawn as log10 (the axes' convention).
    let log = wide(&s.points);
    let y = |v: f64| {
        if log {
            v.max(f64::MIN_POSITIVE).log10()
        } else {
            v
        }
    };
    let mut panel = Panel::new(
        title,
        Axis::categories("run (stack commit, or date)", x_labels(&s.points)),
        if log {
            Axis::log10_seconds("median execute time (log)")
        } else {
            Axis::seconds("median execute time")
        },
    );
    let at = |(x, p): (usize, &crate::model::series::Point)| (x as f64, y(p.median_s));
    panel.series.push(Line {
        // The legend names the series (each panel has its own colour).
        label: name.clone(),
        color: i,
        style: Style::LineAndPoints,
        points: s.points.iter().enumerate().map(at).collect(),
    });
    // Runs the machine distorted (oversubscribed, or contended beyond compare's default):
    // ringed, as in the report's other figures, and said in their hover.
    let limit = crate::analysis::verdict::DEFAULT_MAX_CONTENTION;
    let distorted: Vec<(f64, f64)> = (s.points.iter().enumerate())
        .filter(|(_, p)| !p.clean_at(limit))
        .map(at)
        .collect();
    if !distorted.is_empty() {
        panel.series.push(Line {
            label: format!("{name}: oversubscribed or contended (machine-distorted)"),
            color: i,
            style: Style::Hollow,
            points: distorted,
        });
    }
    panel.error_bars = (s.points.iter().enumerate())
        .map(|(x, p)| (x as f64, y(p.ci_lo_s), y(p.median_s), y(p.ci_hi_s), i))
        .collect();
    let series_name: std::sync::Arc<str> = name.into();
    panel.hover = (s.points.iter().enumerate())
        .map(|(x, p)| Hover {
            x: x as f64,
            y: y(p.median_s),
            color: i,
            series: series_name.clone(),
            text: point_text(x, p, st.iter().find(|step| step.at == x)),
        })
        .collect();
    panel
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

/// The trend of one page of series as SVG markup and its hover values (for the HTML page).
pub(crate) fn svg(series: &[Series], steps: &[Vec<Step>]) -> Result<(String, Vec<HoverPoint>)> {
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

/// The file of page `k` (0-based) of `out`: `out` itself, then `trend-2.png`, `trend-3.png` …
pub(crate) fn page_file(out: &Path, k: usize) -> std::path::PathBuf {
    if k == 0 {
        return out.to_path_buf();
    }
    let stem = out.file_stem().unwrap_or_default().to_string_lossy();
    let ext = out.extension().unwrap_or_default().to_string_lossy();
    out.with_file_name(format!("{stem}-{}.{ext}", k + 1))
}

/// Draw the trend of `series` to `out` (`.png` or `.svg`), a page of at most [`PAGE`] series a
/// file ([`page_file`]); the files written.
pub(crate) fn draw(
    series: &[Series],
    steps: &[Vec<Step>],
    out: &Path,
) -> Result<Vec<std::path::PathBuf>> {
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
    let mut written = Vec::new();
    for (k, range) in pages(series.len()).into_iter().enumerate() {
        let file = page_file(out, k);
        let fig = build(&series[range.clone()], &steps[range]);
        let size = fig.size();
        let failed = |e: String| {
            Error::Environment(format!("{}: drawing the trend failed: {e}", file.display()))
        };
        if svg {
            let root = SVGBackend::new(&file, size).into_drawing_area();
            fig.draw(&root, &mut crate::report::figures::NoHover)
                .map_err(failed)?;
            root.present().map_err(|e| failed(e.to_string()))?;
        } else {
            let root = BitMapBackend::new(&file, size).into_drawing_area();
            fig.draw(&root, &mut crate::report::figures::NoHover)
                .map_err(failed)?;
            root.present().map_err(|e| failed(e.to_string()))?;
        }
        written.push(file);
    }
    Ok(written)
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
            definition: None,
        }
    }

    fn series(case: &str, points: Vec<Point>) -> Series {
        Series {
            key: SeriesKey {
                series: case.into(),
                case_key: case.into(),
                stack: "host".into(),
                host_fingerprint: "h".into(),
            },
            case_id: case.into(),
            op: "allreduce".into(),
            host: "vm".into(),
            campaign: "c".into(),
            bytes: 1024,
            points,
        }
    }

    #[test]
    fn runs_are_told_apart_on_the_x_axis() {
        // One commit for every run (the host stack is campaign itself): dates, not the commit.
        let mut same: Vec<Point> = (1..=3).map(|i| point(i, 1e-3, None)).collect();
        for p in &mut same {
            p.commit = Some("abcdef0123456789".into());
        }
        assert_eq!(
            x_labels(&same),
            ["01-01 00:00", "01-02 00:00", "01-03 00:00"]
        );
        // Commits that change from run to run name them.
        for (i, p) in same.iter_mut().enumerate() {
            p.commit = Some(format!("{i}bcdef0123456789"));
        }
        assert_eq!(x_labels(&same), ["0bcdef01", "1bcdef01", "2bcdef01"]);
        // Two runs in one minute and one commit: numbered.
        let mut twins = vec![point(1, 1e-3, None), point(1, 1e-3, None)];
        twins[1].run_dir = "/r/run_1b".into();
        assert_eq!(x_labels(&twins), ["#1 01-01 00:00", "#2 01-01 00:00"]);
    }

    #[test]
    fn a_series_over_a_decade_is_on_a_log_axis_and_the_legend_names_it() {
        let narrow = series("narrow", vec![point(1, 1e-3, None), point(2, 2e-3, None)]);
        let wide_one = series(
            "wide",
            vec![point(1, 6.87e-6, None), point(2, 8.57e-3, None)],
        );
        let panels = build(&[narrow, wide_one], &[Vec::new(), Vec::new()]);
        let (n, w) = (&panels.panels[0], &panels.panels[1]);
        assert!(matches!(n.y.ticks, super::super::common::Ticks::Linear));
        assert!(matches!(w.y.ticks, super::super::common::Ticks::Log10));
        // Drawn in the axis' own (log10) coordinates, error bars and hover alike.
        assert!((w.series[0].points[1].1 - 8.57e-3f64.log10()).abs() < 1e-12);
        assert!((w.error_bars[0].2 - 6.87e-6f64.log10()).abs() < 1e-12);
        assert!((w.hover[1].y - 8.57e-3f64.log10()).abs() < 1e-12);
        assert_eq!(n.series[0].points[1].1, 2e-3);
        assert_eq!(w.series[0].label, "wide · host");
        assert_eq!(n.series[0].label, "narrow · host");
    }

    #[test]
    fn any_number_of_series_is_drawn_a_page_of_them_a_file() {
        let many: Vec<Series> = (0..50)
            .map(|k| {
                series(
                    &format!("case{k}"),
                    vec![point(1, 1e-3, None), point(2, 1e-3, None)],
                )
            })
            .collect();
        let steps = vec![Vec::new(); many.len()];
        assert_eq!(pages(50), vec![0..24, 24..48, 48..50]);
        assert_eq!(pages(24), vec![0..24]);
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("trend.svg");
        let files = draw(&many, &steps, &out).unwrap();
        let names: Vec<String> = (files.iter())
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["trend.svg", "trend-2.svg", "trend-3.svg"]);
        // Each series is in exactly one page, named in its panel.
        let texts: Vec<String> = (files.iter())
            .map(|f| std::fs::read_to_string(f).unwrap())
            .collect();
        for k in 0..50 {
            let name = format!("case{k} · host");
            let pages_with = texts.iter().filter(|t| t.contains(&name)).count();
            assert_eq!(pages_with, 1, "{name}");
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
