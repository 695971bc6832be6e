//! The `plot` step: every figure family, drawn to `<run dir>/figures/<name>.png` and `.svg`.
//!
//! Owns the figure list, the PNG+SVG rendering of one figure and the skip rule (a figure with
//! no data for it is skipped with a reason, never drawn empty). Each family lives in its own
//! file and only turns an `Analysis` into a drawable value; nothing here computes statistics.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::summary::Analysis;
use crate::error::{Error, Result};
use crate::model::case::Op;
use crate::model::plan::FigureKind;
use crate::model::results::ResultSet;

mod breakdown;
mod common;
mod heatmap;
mod legend_colors;
mod message_size;
mod model_fit;
mod paired_ratio;
pub(crate) mod pmu_utilization;
mod strong_scaling;
mod svg_stream;
mod ticks;
mod trend;
mod wall_vs_device;

/// Every figure, in report order.
pub const ALL: &[&str] = crate::model::plan::KNOWN_FIGURES;

/// A figure ready to draw on any plotters backend.
pub(crate) trait Figure {
    fn title(&self) -> String;
    /// Printed under the figure in the report; empty for none.
    fn caption(&self) -> String {
        String::new()
    }
    /// Pixel size (the SVG uses the same user units).
    fn size(&self) -> (u32, u32);
    /// Drop the spare room of whatever grew while the figure was built: a planned figure is
    /// held until it is drawn, beside the rest of the report.
    fn shrink_to_fit(&mut self) {}
    /// Draw on `root`; every hover value's pixel position is pushed to `hover`.
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        hover: &mut dyn HoverSink,
    ) -> Result<(), String>;
}

/// Where a figure's hover values go as they are drawn: kept (`Vec`), written out one by one
/// (`HoverJson`), or dropped (`NoHover`, the PNG pass).
pub(crate) trait HoverSink {
    fn push(&mut self, point: HoverPoint) -> Result<(), String>;
}

impl HoverSink for Vec<HoverPoint> {
    fn push(&mut self, point: HoverPoint) -> Result<(), String> {
        Vec::push(self, point);
        Ok(())
    }
}

/// Hover values not wanted (a PNG has no pointer to hover with).
pub(crate) struct NoHover;

impl HoverSink for NoHover {
    fn push(&mut self, _: HoverPoint) -> Result<(), String> {
        Ok(())
    }
}

/// A figure's `.hover.json` written as its points are drawn: the bytes of `serde_json` of the
/// whole list (`[`, the points' compact JSON joined by `,`, `]`), one point held at a time.
struct HoverJson<'w> {
    out: &'w mut dyn std::io::Write,
    written: usize,
}

impl HoverJson<'_> {
    fn new(out: &mut dyn std::io::Write) -> std::io::Result<HoverJson<'_>> {
        out.write_all(b"[")?;
        Ok(HoverJson { out, written: 0 })
    }

    fn finish(self) -> std::io::Result<()> {
        self.out.write_all(b"]")
    }
}

impl HoverSink for HoverJson<'_> {
    fn push(&mut self, point: HoverPoint) -> Result<(), String> {
        if self.written > 0 {
            self.out.write_all(b",").map_err(|e| e.to_string())?;
        }
        self.written += 1;
        serde_json::to_writer(&mut *self.out, &point).map_err(|e| e.to_string())
    }
}

/// A value of a figure the HTML report shows when the pointer is over it: the pixel (the SVG's
/// user units) it was drawn at, its series' colour (`#RRGGBB`, as the SVG writes it) and legend
/// text, and what to show. Written beside the SVG as `<name>.hover.json`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HoverPoint {
    pub x: i32,
    pub y: i32,
    pub color: String,
    pub series: String,
    pub text: String,
}

/// A figure that was written.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Drawn {
    pub(crate) name: String,
    pub(crate) title: String,
    pub(crate) caption: String,
    pub(crate) png: PathBuf,
    pub(crate) svg: PathBuf,
    /// `<name>.hover.json`: the figure's [`HoverPoint`]s.
    pub(crate) hover: PathBuf,
}

/// A figure that was not drawn, and why (no data for it, or not asked for).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Skipped {
    pub(crate) name: String,
    pub(crate) reason: String,
}

/// A figure whose name, title, caption and files are known but whose pixels are not drawn
/// yet (`draw_planned`). It holds no points: the figure is built again from the analysis when
/// it is drawn, so only one figure's points (a few hundred bytes a run each) exist at a time.
pub(crate) struct Planned<'a> {
    pub(crate) drawn: Drawn,
    kind: FigureKind,
    /// The op a figure drawn once per op shows (`message_size_bw_<op>`).
    op: Option<Op>,
    analysis: &'a Analysis,
    results: &'a ResultSet,
}

/// Build the figures named in `wanted` (empty = all) for `dir`, and say why the others are
/// skipped; nothing is drawn yet.
pub(crate) fn plan_all<'a>(
    analysis: &'a Analysis,
    results: &'a ResultSet,
    wanted: &[String],
    dir: &Path,
) -> Result<(Vec<Planned<'a>>, Vec<Skipped>)> {
    let mut kinds = Vec::new();
    for w in wanted {
        let Some(kind) = FigureKind::parse(w) else {
            return Err(Error::Usage(format!(
                "[report] figures: unknown figure `{w}` (expected any of: {})",
                ALL.join(", ")
            )));
        };
        kinds.push(kind);
    }
    super::font::ensure_registered().map_err(Error::Environment)?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut planned = Vec::new();
    let mut skipped = Vec::new();
    for &kind in FigureKind::ALL {
        if !kinds.is_empty() && !kinds.contains(&kind) {
            continue;
        }
        for (name, op) in targets(kind, analysis, results) {
            match build(kind, op, analysis, results, Describe { name: &name, dir }) {
                Ok(drawn) => planned.push(Planned {
                    drawn,
                    kind,
                    op,
                    analysis,
                    results,
                }),
                Err(reason) => skipped.push(Skipped { name, reason }),
            }
        }
    }
    Ok((planned, skipped))
}

/// What is done with a figure once built: described (`Describe`) or drawn (`Render`).
trait WithFigure {
    type Out;
    fn with<F: Figure>(self, fig: F) -> Self::Out;
}

/// The figures of `kind`, by name: one, except the bus bandwidth's, one per op when several
/// ops ran (each op's own factor and series; a legend of one op's series only).
fn targets(kind: FigureKind, a: &Analysis, results: &ResultSet) -> Vec<(String, Option<Op>)> {
    match kind {
        FigureKind::MessageSizeBw => message_size::targets(a, results, kind.name()),
        _ => vec![(kind.name().to_string(), None)],
    }
}

/// The builder of each figure, handing it to `then`: every `FigureKind` has exactly one arm (no
/// catch-all), so a figure cannot be named without being built. `Err` is why it is skipped.
fn build<W: WithFigure>(
    kind: FigureKind,
    op: Option<Op>,
    analysis: &Analysis,
    results: &ResultSet,
    then: W,
) -> Result<W::Out, String> {
    Ok(match kind {
        FigureKind::StrongScalingTTotal => then.with(strong_scaling::total(analysis, results)?),
        FigureKind::StrongScalingEfficiency => {
            then.with(strong_scaling::efficiency(analysis, results)?)
        }
        FigureKind::MessageSizeBw => then.with(message_size::build(analysis, results, op)?),
        FigureKind::PairedStackRatio => then.with(paired_ratio::build(analysis, results)?),
        FigureKind::PhaseBreakdown => then.with(breakdown::phases(analysis, results)?),
        FigureKind::CompileBreakdown => then.with(breakdown::compile(analysis, results)?),
        FigureKind::WallVsDevice => then.with(wall_vs_device::build(analysis, results)?),
        FigureKind::BwModelFit => then.with(model_fit::build(analysis)?),
    })
}

/// A built figure's name, title, caption and the files it will be drawn to in `dir`.
struct Describe<'d> {
    name: &'d str,
    dir: &'d Path,
}

impl WithFigure for Describe<'_> {
    type Out = Drawn;
    fn with<F: Figure>(self, fig: F) -> Drawn {
        self.of(&fig)
    }
}

impl Describe<'_> {
    /// The description of `fig`, which stays the caller's to draw.
    fn of<F: Figure>(self, fig: &F) -> Drawn {
        let (name, dir) = (self.name, self.dir);
        Drawn {
            name: name.to_string(),
            title: fig.title(),
            caption: fig.caption(),
            png: dir.join(format!("{name}.png")),
            svg: dir.join(format!("{name}.svg")),
            hover: dir.join(format!("{name}.hover.json")),
        }
    }
}

/// A built figure drawn to its files.
struct Render<'f>(&'f Drawn);

impl WithFigure for Render<'_> {
    type Out = Result<()>;
    fn with<F: Figure>(self, mut fig: F) -> Result<()> {
        fig.shrink_to_fit();
        render(&fig, self.0)
    }
}

/// Draw every planned figure, in order, each built again and dropped once drawn; the first
/// failure stops the drawing and is returned. Each figure's hover values are in its
/// `.hover.json`, none are kept.
pub(crate) fn draw_planned(planned: Vec<Planned<'_>>) -> Result<()> {
    planned.into_iter().try_for_each(|p| {
        // The same analysis built it when it was planned, so it builds again.
        build(p.kind, p.op, p.analysis, p.results, Render(&p.drawn)).map_err(|reason| {
            Error::Environment(format!(
                "{}: figure `{}` could not be built again: {reason}",
                p.drawn.svg.display(),
                p.drawn.name
            ))
        })?
    })
}

/// The census heatmaps, `census_busbw` and `census_latency` (PNG, SVG and hover values), drawn
/// into `dir`. They are not in `FigureKind`: a census plan always draws both, from the census
/// rather than from the `Analysis`.
pub(crate) fn draw_census(c: &crate::analysis::census::Census, dir: &Path) -> Result<Vec<Drawn>> {
    super::font::ensure_registered().map_err(Error::Environment)?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let maps = [
        ("census_busbw", heatmap::Value::Busbw),
        ("census_latency", heatmap::Value::Latency),
    ];
    let mut out = Vec::new();
    for (name, value) in maps {
        let drawn = Describe { name, dir }.with(heatmap::heatmap(c, value));
        render(&heatmap::heatmap(c, value), &drawn)?;
        out.push(drawn);
    }
    Ok(out)
}

/// The seed's `pmu_utilization` figure of the `pmu` profiles' `pmu.csv` files, drawn into
/// `dir`; none when no profile has busy-cycle counters. Not in `FigureKind`: it is drawn from
/// the run dir's profiles, never from the timed runs' `Analysis`.
pub(crate) fn draw_pmu(
    tables: &[pmu_utilization::PmuPanel<'_>],
    dir: &Path,
) -> Result<Option<Drawn>> {
    let Ok(fig) = pmu_utilization::build(tables) else {
        return Ok(None);
    };
    super::font::ensure_registered().map_err(Error::Environment)?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let name = "pmu_utilization";
    let drawn = Describe { name, dir }.of(&fig);
    render(&fig, &drawn)?;
    Ok(Some(drawn))
}

/// The history trend figure as images (`campaign history trend --out FILE.png|svg`), a page
/// of at most `trend::PAGE` series a file: the files written.
pub(crate) fn draw_trend(
    series: &[crate::model::series::Series],
    steps: &[Vec<crate::model::series::Step>],
    out: &Path,
) -> Result<Vec<std::path::PathBuf>> {
    trend::draw(series, steps, out)
}

/// The pages of `n` trend series (at most `trend::PAGE` panels a figure).
pub(crate) fn trend_pages(n: usize) -> Vec<std::ops::Range<usize>> {
    trend::pages(n)
}

/// The trend figure of one page of series as SVG markup and its hover values.
pub(crate) fn trend_svg(
    series: &[crate::model::series::Series],
    steps: &[Vec<crate::model::series::Step>],
) -> Result<(String, Vec<HoverPoint>)> {
    trend::svg(series, steps)
}

/// Draw one figure as PNG, then as SVG with its hover values: the SVG and the `.hover.json`
/// are written into their temp files as they are drawn and replace the old files together
/// (`store::atomic::Staged`), so a failed figure leaves neither half written.
fn render<F: Figure>(fig: &F, files: &Drawn) -> Result<()> {
    let size = fig.size();
    let failed = |path: &Path, e: String| {
        Error::Environment(format!(
            "{}: drawing figure `{}` failed: {e}",
            path.display(),
            files.name
        ))
    };
    {
        let root = BitMapBackend::new(&files.png, size).into_drawing_area();
        fig.draw(&root, &mut NoHover)
            .map_err(|e| failed(&files.png, e))?;
        root.present()
            .map_err(|e| failed(&files.png, e.to_string()))?;
    }
    // A drawing failure is reported as such, not as the temp file's write error it aborts.
    let mut failure = None;
    let mut svg_file = crate::store::atomic::Staged::new();
    let mut hover_file = crate::store::atomic::Staged::new();
    let written = hover_file.write(&files.hover, |hover_out| {
        let mut hover = HoverJson::new(hover_out)?;
        svg_file
            .write(&files.svg, |svg_out| {
                let root = svg_stream::SvgStream::new(svg_out, size)?.into_drawing_area();
                let drawn = fig
                    .draw(&root, &mut hover)
                    .and_then(|()| root.present().map_err(|e| e.to_string()));
                drawn.map_err(|e| {
                    failure = Some(e);
                    std::io::Error::other("figure not drawn")
                })
            })
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        hover.finish()
    });
    if let Some(e) = failure {
        return Err(failed(&files.svg, e));
    }
    written?;
    svg_file.append(hover_file);
    svg_file.commit()
}

#[cfg(test)]
mod registry_tests {
    use super::*;

    /// The names `[report] figures` accepts are exactly the figures, each once, and each
    /// name parses back to its own figure.
    #[test]
    fn every_known_figure_name_is_one_figure() {
        assert_eq!(ALL.len(), FigureKind::ALL.len());
        for (name, kind) in ALL.iter().zip(FigureKind::ALL) {
            assert_eq!(*name, kind.name());
            assert_eq!(FigureKind::parse(name), Some(*kind));
        }
        let mut names = ALL.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len(), "a figure name is registered twice");
        assert_eq!(FigureKind::parse("strong_scaling"), None);
    }

    /// An unknown name is a usage error naming it and the known ones, never another figure.
    #[test]
    fn an_unknown_figure_is_refused_not_drawn_as_another() {
        let rs = ResultSet::default();
        let analysis = Analysis::new(&rs, None, Default::default());
        let dir = std::env::temp_dir().join(format!("campaign-figures-{}", std::process::id()));
        let Err(e) = plan_all(&analysis, &rs, &["nope".to_string()], &dir) else {
            panic!("an unknown figure was accepted");
        };
        let text = e.to_string();
        assert!(text.contains("unknown figure `nope`"), "{text}");
        assert!(text.contains("bw_model_fit"), "{text}");
        assert!(!dir.exists(), "nothing is written for a refused list");
    }
}

#[cfg(test)]
mod render_tests {
    use super::*;
    use std::cell::Cell;

    /// A figure whose SVG pass draws a few elements and a hover value, then fails.
    struct FailsInSvg {
        passes: Cell<u32>,
    }

    impl Figure for FailsInSvg {
        fn title(&self) -> String {
            "fails".into()
        }
        fn size(&self) -> (u32, u32) {
            (60, 40)
        }
        fn draw<DB: DrawingBackend>(
            &self,
            root: &DrawingArea<DB, Shift>,
            hover: &mut dyn HoverSink,
        ) -> Result<(), String> {
            self.passes.set(self.passes.get() + 1);
            root.fill(&WHITE).map_err(|e| e.to_string())?;
            hover.push(HoverPoint {
                x: 1,
                y: 2,
                color: "#000000".into(),
                series: "s".into(),
                text: "t".into(),
            })?;
            if self.passes.get() == 2 {
                return Err("no room for the axes".into());
            }
            Ok(())
        }
    }

    fn files(dir: &Path) -> Drawn {
        Drawn {
            name: "fails".into(),
            title: "fails".into(),
            caption: String::new(),
            png: dir.join("fails.png"),
            svg: dir.join("fails.svg"),
            hover: dir.join("fails.hover.json"),
        }
    }

    /// A figure that fails half way through its SVG leaves the old SVG and hover file as they
    /// were and no temp file behind, and says which figure failed and why.
    #[test]
    fn a_failed_figure_leaves_the_old_svg_and_hover_file() {
        super::super::font::ensure_registered().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path());
        std::fs::write(&f.svg, "old svg").unwrap();
        std::fs::write(&f.hover, "old hover").unwrap();
        let fig = FailsInSvg {
            passes: Cell::new(0),
        };
        let e = render(&fig, &f).unwrap_err().to_string();
        assert!(
            e.contains("drawing figure `fails` failed: no room for the axes"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&f.svg).unwrap(), "old svg");
        assert_eq!(std::fs::read_to_string(&f.hover).unwrap(), "old hover");
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["fails.hover.json", "fails.png", "fails.svg"]);
    }

    /// A drawn figure's hover file is the JSON list of its points, as `serde_json` writes it.
    #[test]
    fn a_drawn_figure_writes_its_svg_and_hover_points() {
        super::super::font::ensure_registered().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path());
        let fig = FailsInSvg {
            passes: Cell::new(2),
        };
        render(&fig, &f).unwrap();
        let svg = std::fs::read_to_string(&f.svg).unwrap();
        assert!(svg.starts_with("<svg width=\"60\" height=\"40\""), "{svg}");
        assert!(svg.ends_with("</svg>\n"), "{svg}");
        let want = serde_json::to_string(&[HoverPoint {
            x: 1,
            y: 2,
            color: "#000000".into(),
            series: "s".into(),
            text: "t".into(),
        }])
        .unwrap();
        assert_eq!(std::fs::read_to_string(&f.hover).unwrap(), want);
    }
}
