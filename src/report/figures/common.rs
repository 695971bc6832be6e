//! Shared drawing for figure families: small-multiple panels of series, bars and error bars.
//!
//! Every family describes its figure as `Panel`s of plain numbers; this file alone talks to
//! plotters' chart API. Log axes are drawn as linear axes over log-transformed values with
//! labels mapped back, so one coordinate type serves every panel; each axis brings its own
//! tick positions (`ticks`: 1-2-5 decades, powers of two, measured values) so plotters never
//! ticks a log axis at round log values.

use plotters::coord::Shift;
use plotters::prelude::*;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;

use super::ticks;
use super::{Figure, HoverPoint};
use crate::report::font::FAMILY;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    LineAndPoints,
    Points,
    /// A fitted or reference line, dashed, no markers.
    Dashed,
    /// Points that the machine distorted (oversubscribed or contended CPUs): hollow markers on
    /// a dashed line, drawn the same way in the legend.
    HollowDashed,
    /// Rings around points drawn by another series (distorted points of a solid line).
    Hollow,
    /// A reference line (parity), thin, dashed and black whatever its palette index.
    Reference,
}

/// One series: a label in the legend, a palette index and its points (already transformed).
pub(crate) struct Series {
    /// Legend text; empty = no legend entry (e.g. a fit line drawn beside its points).
    pub(crate) label: String,
    pub(crate) color: usize,
    pub(crate) style: Style,
    pub(crate) points: Vec<(f64, f64)>,
}

/// A filled rectangle `(x0, y0, x1, y1, palette index)` in data coordinates.
pub(crate) type Rect = (f64, f64, f64, f64, usize);

/// A vertical error bar `(x, lo, mid, hi, palette index)`.
pub(crate) type ErrorBarSpec = (f64, f64, f64, f64, usize);

/// Where an axis is ticked (positions in the axis' own, possibly log, coordinates).
pub(crate) enum Ticks {
    /// plotters' own round values of a linear axis.
    Linear,
    /// 1-2-5 per decade of an axis over log10 of the value.
    Log10,
    /// Powers of two of an axis over log2 of the value.
    Log2,
    /// Exactly these positions (categories, measured P).
    At(Vec<f64>),
}

impl Ticks {
    /// The ticks inside `[lo, hi]`.
    pub(crate) fn positions(&self, lo: f64, hi: f64) -> Vec<f64> {
        match self {
            Ticks::Linear => RangedCoordf64::from(lo..hi).key_points(ticks::MAX_TICKS),
            Ticks::Log10 => ticks::decades_125(10f64.powf(lo), 10f64.powf(hi), ticks::MAX_TICKS)
                .into_iter()
                .map(f64::log10)
                .collect(),
            Ticks::Log2 => ticks::powers_of_two(lo, hi, ticks::MAX_TICKS)
                .into_iter()
                .map(f64::from)
                .collect(),
            Ticks::At(at) => at
                .iter()
                .copied()
                .filter(|v| *v >= lo && *v <= hi)
                .collect(),
        }
    }

    /// `[lo, hi]` widened to the neighbouring ticks of a log axis when fewer than two ticks
    /// fall inside it, so every log axis can be read off at two labelled values at least.
    fn widen(&self, lo: f64, hi: f64) -> (f64, f64) {
        if self.positions(lo, hi).len() >= 2 {
            return (lo, hi);
        }
        match self {
            Ticks::Log10 => (
                ticks::floor_125(10f64.powf(lo)).log10(),
                ticks::ceil_125(10f64.powf(hi)).log10(),
            ),
            Ticks::Log2 => (lo.floor(), hi.ceil()),
            Ticks::Linear | Ticks::At(_) => (lo, hi),
        }
    }
}

/// A linear f64 coordinate ticked exactly at its axis' positions (plotters' `WithKeyPoints`
/// would keep `RangedCoordf64`'s formatting option, which rules out custom tick labels).
struct Ticked {
    linear: RangedCoordf64,
    at: Vec<f64>,
}

impl Ticked {
    fn new(range: std::ops::Range<f64>, ticks: &Ticks) -> Ticked {
        Ticked {
            at: ticks.positions(range.start, range.end),
            linear: range.into(),
        }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.linear.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Labelled (bold) ticks only; the light grid stays off.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.at.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.linear.range()
    }
}

/// One axis: its description, where it is ticked and how a (possibly log) value is labelled.
pub(crate) struct Axis {
    pub(crate) desc: String,
    pub(crate) label: Box<dyn Fn(f64) -> String + Send>,
    pub(crate) ticks: Ticks,
}

impl Axis {
    /// A linear axis ticked at plotters' round values.
    pub(crate) fn new(desc: &str, label: impl Fn(f64) -> String + Send + 'static) -> Axis {
        Axis {
            desc: desc.to_string(),
            label: Box::new(label),
            ticks: Ticks::Linear,
        }
    }

    /// An axis ticked only at `at` (e.g. the P values measured).
    pub(crate) fn at(
        desc: &str,
        at: Vec<f64>,
        label: impl Fn(f64) -> String + Send + 'static,
    ) -> Axis {
        Axis {
            ticks: Ticks::At(at),
            ..Axis::new(desc, label)
        }
    }

    /// An axis over log2 of bytes, ticked at powers of two in binary units (1 KiB, 4 KiB …).
    pub(crate) fn log2_bytes(desc: &str) -> Axis {
        Axis {
            ticks: Ticks::Log2,
            ..Axis::new(desc, |v| {
                if (v - v.round()).abs() < 1e-6 {
                    ticks::bytes_label(v.round() as i32)
                } else {
                    String::new()
                }
            })
        }
    }

    /// A categorical axis over item indices: names when there are few, 1-based numbers (the
    /// order of the report's table) when names would overlap, ticked only at items (every
    /// n-th when there are many).
    pub(crate) fn categories(desc: &str, names: Vec<String>) -> Axis {
        const MAX_NAMED: usize = 8;
        let named = names.len() <= MAX_NAMED;
        let desc = if named {
            desc.to_string()
        } else {
            format!("{desc} # (table order)")
        };
        let at = ticks::every_nth(names.len(), ticks::MAX_TICKS)
            .into_iter()
            .map(|i| i as f64)
            .collect();
        Axis::at(&desc, at, move |v| {
            let i = v.round();
            if (v - i).abs() > 1e-6 || i < 0.0 || i as usize >= names.len() {
                String::new()
            } else if named {
                names[i as usize].clone()
            } else {
                format!("{}", i as usize + 1)
            }
        })
    }

    /// A categorical axis labelled by every item's full name (one tick per item), for bars
    /// laid out with room for each label (see `breakdown`).
    pub(crate) fn every_category(desc: &str, names: Vec<String>) -> Axis {
        let at = (0..names.len()).map(|i| i as f64).collect();
        Axis::at(desc, at, move |v| {
            let i = v.round();
            if (v - i).abs() > 1e-6 || i < 0.0 || i as usize >= names.len() {
                String::new()
            } else {
                names[i as usize].clone()
            }
        })
    }

    /// An axis over log10 of seconds, ticked at 1-2-5 per decade (1 µs, 2 µs, 5 µs, 10 µs …).
    pub(crate) fn log10_seconds(desc: &str) -> Axis {
        Axis {
            ticks: Ticks::Log10,
            ..Axis::new(desc, |v| ticks::seconds_label(10f64.powf(v)))
        }
    }

    /// A linear axis of seconds (from 0), labelled in human units (200 ms, 1 s …).
    pub(crate) fn seconds(desc: &str) -> Axis {
        Axis::new(desc, ticks::seconds_label)
    }
}

/// One small multiple.
pub(crate) struct Panel {
    pub(crate) title: String,
    pub(crate) x: Axis,
    pub(crate) y: Axis,
    pub(crate) series: Vec<Series>,
    pub(crate) rects: Vec<Rect>,
    /// Labels shown in the legend for rectangle colours.
    pub(crate) rect_legend: Vec<(String, usize)>,
    pub(crate) error_bars: Vec<ErrorBarSpec>,
    /// A horizontal reference line (parity at 1, ideal efficiency).
    pub(crate) hline: Option<(f64, String)>,
    /// Width of the y tick labels' area in pixels (long category names need more).
    pub(crate) y_label_width: u32,
    /// The values a reader of the HTML report can hover over (not drawn).
    pub(crate) hover: Vec<Hover>,
}

/// A value shown when the pointer is over a spot of a figure in the HTML report: where (in the
/// panel's data coordinates, already transformed like its points), the palette index of its
/// series, the series' legend text and what to show (median, CI, repeats × rounds).
pub(crate) struct Hover {
    pub(crate) x: f64,
    pub(crate) y: f64,
    pub(crate) color: usize,
    /// Shared by the series' points: one legend text, not one copy a point.
    pub(crate) series: std::sync::Arc<str>,
    pub(crate) text: String,
}

/// "`case_id` stack: median 14.2 µs [13.9 µs, 14.8 µs] (3 repeats × 10 rounds)" for one
/// (case, stack) of the analysis: what its point in a figure stands for.
pub(crate) fn stat_text(
    results: &crate::model::results::ResultSet,
    s: &crate::analysis::run_stats::RunStats,
) -> String {
    use crate::model::units::format_seconds;
    let r = &results.runs[s.index];
    let m = &s.summary;
    format!(
        "{} · {}: median {} [{}, {}] ({} repeat(s) × {} rounds){}",
        r.base_case_id(),
        r.stack,
        format_seconds(m.median),
        format_seconds(m.median_ci.lo),
        format_seconds(m.median_ci.hi),
        s.runs.len(),
        s.rounds,
        {
            let (over, contended) = crate::report::context::conditions(results, s);
            crate::report::context::marks(over, contended)
        }
    )
}

impl Panel {
    pub(crate) fn new(title: impl Into<String>, x: Axis, y: Axis) -> Panel {
        Panel {
            title: title.into(),
            x,
            y,
            series: Vec::new(),
            rects: Vec::new(),
            rect_legend: Vec::new(),
            error_bars: Vec::new(),
            hline: None,
            y_label_width: Y_LABEL_W,
            hover: Vec::new(),
        }
    }

    fn bounds(&self) -> Option<((f64, f64), (f64, f64))> {
        let mut xs: Vec<f64> = Vec::new();
        let mut ys: Vec<f64> = Vec::new();
        for s in &self.series {
            for p in &s.points {
                xs.push(p.0);
                ys.push(p.1);
            }
        }
        for r in &self.rects {
            xs.extend([r.0, r.2]);
            ys.extend([r.1, r.3]);
        }
        for e in &self.error_bars {
            xs.push(e.0);
            ys.extend([e.1, e.3]);
        }
        if let Some((y, _)) = &self.hline {
            ys.push(*y);
        }
        let range = |v: &[f64], ticks: &Ticks| {
            let finite = v.iter().copied().filter(|x| x.is_finite());
            let lo = finite.clone().fold(f64::INFINITY, f64::min);
            let hi = finite.fold(f64::NEG_INFINITY, f64::max);
            if !lo.is_finite() {
                return None;
            }
            let mut pad = if hi > lo { (hi - lo) * 0.06 } else { 0.5 };
            if let Ticks::At(_) = ticks {
                // Items and measured P: a little room beside the outer ones, not 6 % of a
                // hundred bars.
                pad = pad.min(0.6);
            }
            Some((lo - pad, hi + pad))
        };
        let (x0, x1) = range(&xs, &self.x.ticks)?;
        let (y0, y1) = range(&ys, &self.y.ticks)?;
        Some((self.x.ticks.widen(x0, x1), self.y.ticks.widen(y0, y1)))
    }
}

/// A figure made of panels in a grid under one title.
pub(crate) struct Panels {
    pub(crate) title: String,
    pub(crate) panels: Vec<Panel>,
    /// What the figure shows and how to read it, printed under it in the report.
    pub(crate) caption: String,
    /// Pixel size when the panels' content decides it (one row per bar); else from the grid.
    pub(crate) size: Option<(u32, u32)>,
}

/// A panel's width without the legend (which the figure draws once, at its right edge).
pub(crate) const PANEL_W: u32 = 560;
/// Tick labels and bar labels. Plotters writes an SVG font size of size / 1.24, so 15 is
/// 12.1 px, and 10 px or more on a 1400 px page (issue 44, item 4).
pub(crate) const LABEL_FONT: u32 = 15;
const Y_LABEL_W: u32 = 70;
pub(crate) const LEGEND_W: u32 = 220;
const PANEL_H: u32 = 420;
pub(crate) const TITLE_H: u32 = 48;
/// Height of the x tick labels' area and of the chart margin, in pixels.
pub(crate) const X_LABEL_H: u32 = 44;
pub(crate) const MARGIN: u32 = 8;

impl Panels {
    /// Rows and columns of panels: at most two a row, so a figure is at most 2 × 560 px and
    /// its legend wide, and a 1400 px page shows its text at 10 px or more (issue 44, item 4;
    /// three a row were shrunk to about 7 px).
    fn grid(&self) -> (usize, usize) {
        let n = self.panels.len().max(1);
        let cols = n.min(2);
        (n.div_ceil(cols), cols)
    }
}

impl Figure for Panels {
    fn title(&self) -> String {
        self.title.clone()
    }

    fn caption(&self) -> String {
        self.caption.clone()
    }

    fn size(&self) -> (u32, u32) {
        if let Some(size) = self.size {
            return size;
        }
        let (rows, cols) = self.grid();
        (
            PANEL_W * cols as u32 + self.legend_width(),
            PANEL_H * rows as u32 + TITLE_H,
        )
    }

    fn shrink_to_fit(&mut self) {
        for panel in &mut self.panels {
            for s in &mut panel.series {
                s.points.shrink_to_fit();
            }
            panel.series.shrink_to_fit();
            panel.rects.shrink_to_fit();
            panel.error_bars.shrink_to_fit();
            panel.hover.shrink_to_fit();
        }
        self.panels.shrink_to_fit();
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        hover: &mut dyn super::HoverSink,
    ) -> Result<(), String> {
        root.fill(&WHITE).map_err(err)?;
        let body = root
            .titled(&self.title, (FAMILY, 26).into_font().style(FontStyle::Bold))
            .map_err(err)?;
        let (width, _) = body.dim_in_pixel();
        // One legend for the whole figure, in a column of its own at the right edge: the same
        // entry in several panels is listed once.
        let legend_w = self.legend_width();
        let (plots, legend_area) = body.split_horizontally(width.saturating_sub(legend_w));
        let (rows, cols) = self.grid();
        let areas = plots.split_evenly((rows, cols));
        let mut legend: Vec<LegendEntry> = Vec::new();
        for (panel, area) in self.panels.iter().zip(areas.iter()) {
            for entry in draw_panel(panel, area, hover)? {
                if !legend.contains(&entry) {
                    legend.push(entry);
                }
            }
        }
        draw_legend(&legend, &legend_area, legend_w)
    }
}

/// One line of a figure's legend: its text, colour and how its sample is drawn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LegendEntry {
    pub(crate) label: String,
    pub(crate) color: RGBColor,
    pub(crate) swatch: Swatch,
}

/// How a legend entry's sample looks: like the series it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Swatch {
    Line,
    Rect,
    /// A hollow marker on a dashed line: points the machine distorted.
    Hollow,
    /// A hollow marker alone: rings around distorted points of a solid line.
    Ring,
    Dashed,
}

/// Widest legend text a figure makes room for; longer labels end in "…" (inside the image).
const LEGEND_TEXT_MAX: u32 = 420;

/// Width of `text` in the legend's font, in pixels.
fn text_width(text: &str) -> u32 {
    (FAMILY, LEGEND_FONT)
        .into_font()
        .box_size(text)
        .map(|(w, _)| w)
        .unwrap_or(text.chars().count() as u32 * LEGEND_FONT)
}

/// `text` shortened with "…" to fit `max` pixels.
fn fit_text(text: &str, max: u32) -> String {
    if text_width(text) <= max {
        return text.to_string();
    }
    let mut chars: Vec<char> = text.chars().collect();
    while !chars.is_empty() {
        chars.pop();
        let t: String = chars.iter().collect::<String>() + "…";
        if text_width(&t) <= max {
            return t;
        }
    }
    "…".into()
}

const LEGEND_FONT: u32 = 15;
/// Room left of a legend entry's text for its sample.
const SWATCH_W: u32 = 30;

impl Panels {
    /// Every legend entry of every panel, once each, in order of first appearance.
    pub(crate) fn legend_entries(&self) -> Vec<LegendEntry> {
        let mut out: Vec<LegendEntry> = Vec::new();
        for p in &self.panels {
            for e in panel_legend(p) {
                if !out.contains(&e) {
                    out.push(e);
                }
            }
        }
        out
    }

    /// The legend column's width: the longest entry's text (at most `LEGEND_TEXT_MAX`) and its
    /// sample; a figure whose size is fixed by its content keeps `LEGEND_W`.
    fn legend_width(&self) -> u32 {
        if self.size.is_some() {
            return LEGEND_W;
        }
        let widest = self
            .legend_entries()
            .iter()
            .map(|e| text_width(&e.label))
            .max()
            .unwrap_or(0);
        (widest.min(LEGEND_TEXT_MAX) + SWATCH_W + 12).max(LEGEND_W / 2)
    }
}

/// The legend entries of one panel, in drawing order: its reference line, its rectangles'
/// colours, then its labelled series.
fn panel_legend(panel: &Panel) -> Vec<LegendEntry> {
    let mut legend = Vec::new();
    if let Some((_, label)) = &panel.hline {
        legend.push(LegendEntry {
            label: label.clone(),
            color: BLACK,
            swatch: Swatch::Line,
        });
    }
    for (label, c) in &panel.rect_legend {
        legend.push(LegendEntry {
            label: label.clone(),
            color: color(*c),
            swatch: Swatch::Rect,
        });
    }
    for s in &panel.series {
        if s.label.is_empty() {
            continue;
        }
        let (color, swatch) = match s.style {
            Style::Reference => (BLACK, Swatch::Dashed),
            Style::Dashed => (color(s.color), Swatch::Dashed),
            Style::HollowDashed => (color(s.color), Swatch::Hollow),
            Style::Hollow => (color(s.color), Swatch::Ring),
            Style::LineAndPoints | Style::Points => (color(s.color), Swatch::Line),
        };
        legend.push(LegendEntry {
            label: s.label.clone(),
            color,
            swatch,
        });
    }
    legend
}

/// The series a run belongs to in the scaling and message-size figures: one line per
/// (stack, op + variant, dtype, core_num), so different ops, variants or core counts never
/// share a line.
pub(crate) type SeriesKey = (String, String, String, u32);

/// The [`SeriesKey`] of a run.
pub(crate) fn series_key(r: &crate::model::results::RunResult) -> SeriesKey {
    (
        r.stack.clone(),
        r.case.series_label(),
        r.case.dtype.to_string(),
        r.case.core_num,
    )
}

/// The palette index drawn black (whiskers over bars of their own colour, reference lines).
pub(crate) const INK: usize = usize::MAX;

/// Palette colour `i`, opaque (`legend_colors::palette`), or black for `INK`.
pub(crate) fn color(i: usize) -> RGBColor {
    if i == INK {
        return BLACK;
    }
    super::legend_colors::palette(i)
}

pub(crate) fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Draw one panel; returns its legend entries (the figure draws one legend for all panels).
fn draw_panel<DB: DrawingBackend>(
    panel: &Panel,
    area: &DrawingArea<DB, Shift>,
    hover: &mut dyn super::HoverSink,
) -> Result<Vec<LegendEntry>, String> {
    let Some(((x0, x1), (y0, y1))) = panel.bounds() else {
        return Ok(Vec::new());
    };
    let mut chart = ChartBuilder::on(area);
    if !panel.title.is_empty() {
        chart.caption(&panel.title, (FAMILY, 18));
    }
    let mut chart = chart
        .margin(MARGIN)
        .x_label_area_size(X_LABEL_H)
        .y_label_area_size(panel.y_label_width)
        .build_cartesian_2d(
            Ticked::new(x0..x1, &panel.x.ticks),
            Ticked::new(y0..y1, &panel.y.ticks),
        )
        .map_err(err)?;
    let mut mesh = chart.configure_mesh();
    // An empty description would still reserve (and, in SVG, emit) a rotated text element.
    if !panel.x.desc.is_empty() {
        mesh.x_desc(panel.x.desc.as_str());
    }
    if !panel.y.desc.is_empty() {
        mesh.y_desc(panel.y.desc.as_str());
    }
    mesh.x_label_formatter(&|v| (panel.x.label)(*v))
        .y_label_formatter(&|v| (panel.y.label)(*v))
        .label_style((FAMILY, LABEL_FONT))
        .axis_desc_style((FAMILY, 16))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(err)?;
    if let Some((y, _)) = &panel.hline {
        let y = *y;
        chart
            .draw_series(LineSeries::new([(x0, y), (x1, y)], BLACK.stroke_width(1)))
            .map_err(err)?;
    }
    for (x0, y0, x1, y1, c) in &panel.rects {
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(*x0, *y0), (*x1, *y1)],
                color(*c).filled(),
            )))
            .map_err(err)?;
    }
    for (x, lo, mid, hi, c) in &panel.error_bars {
        chart
            .draw_series(std::iter::once(ErrorBar::new_vertical(
                *x,
                *lo,
                *mid,
                *hi,
                color(*c).stroke_width(1),
                6,
            )))
            .map_err(err)?;
    }
    draw_series(&mut chart, &panel.series)?;
    // Where each hover value landed, in the figure's pixels (the SVG's user units).
    for h in &panel.hover {
        if !(h.x.is_finite() && h.y.is_finite()) {
            continue;
        }
        let (x, y) = chart.backend_coord(&(h.x, h.y));
        let c = color(h.color);
        hover.push(HoverPoint {
            x,
            y,
            color: format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2),
            series: h.series.to_string(),
            text: h.text.clone(),
        })?;
    }
    Ok(panel_legend(panel))
}

/// Draw each series of a panel in its style (points, lines, dashes, hollow markers).
fn draw_series<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<Ticked, Ticked>>,
    series: &[Series],
) -> Result<(), String> {
    for s in series {
        let col = color(s.color);
        let style = col.stroke_width(2);
        let pts = s.points.iter().copied();
        match s.style {
            Style::LineAndPoints => {
                chart
                    .draw_series(pts.clone().map(|p| Circle::new(p, 3, col.filled())))
                    .map_err(err)?;
                chart
                    .draw_series(LineSeries::new(pts, style))
                    .map_err(err)?;
            }
            Style::Points => {
                chart
                    .draw_series(pts.map(|p| Circle::new(p, 3, col.filled())))
                    .map_err(err)?;
            }
            Style::Dashed => {
                chart
                    .draw_series(DashedLineSeries::new(pts, 6, 4, style))
                    .map_err(err)?;
            }
            Style::Reference => {
                chart
                    .draw_series(DashedLineSeries::new(pts, 6, 4, BLACK.stroke_width(1)))
                    .map_err(err)?;
            }
            Style::Hollow => {
                chart
                    .draw_series(pts.map(|p| Circle::new(p, 6, col.stroke_width(2))))
                    .map_err(err)?;
            }
            Style::HollowDashed => {
                chart
                    .draw_series(pts.clone().map(|p| Circle::new(p, 4, col.stroke_width(2))))
                    .map_err(err)?;
                chart
                    .draw_series(DashedLineSeries::new(pts, 6, 4, style))
                    .map_err(err)?;
            }
        }
    }
    Ok(())
}

/// The figure's legend in its own column (never over the data, never past the image's edge):
/// a sample drawn like the series and its text per entry.
fn draw_legend<DB: DrawingBackend>(
    entries: &[LegendEntry],
    area: &DrawingArea<DB, Shift>,
    width: u32,
) -> Result<(), String> {
    const ROW: i32 = LEGEND_FONT as i32 + 6;
    const RISE: i32 = LEGEND_FONT as i32 / 2;
    let (_, h) = area.dim_in_pixel();
    let fits = ((h as i32 - 40) / ROW).max(1) as usize;
    let style = TextStyle::from((FAMILY, LEGEND_FONT).into_font()).color(&BLACK);
    let max_text = width.saturating_sub(SWATCH_W + 8);
    for (i, e) in entries.iter().take(fits).enumerate() {
        let y = 34 + i as i32 * ROW;
        let col = e.color;
        match e.swatch {
            Swatch::Rect => area
                .draw(&Rectangle::new([(4, y - 5), (18, y + 5)], col.filled()))
                .map_err(err)?,
            Swatch::Line => {
                area.draw(&PathElement::new([(2, y), (22, y)], col.stroke_width(2)))
                    .map_err(err)?;
            }
            Swatch::Ring => {
                area.draw(&Circle::new((12, y), 5, col.stroke_width(2)))
                    .map_err(err)?;
            }
            Swatch::Dashed | Swatch::Hollow => {
                for x in [2, 10, 18] {
                    area.draw(&PathElement::new([(x, y), (x + 5, y)], col.stroke_width(2)))
                        .map_err(err)?;
                }
                if e.swatch == Swatch::Hollow {
                    area.draw(&Circle::new((12, y), 4, col.stroke_width(2)))
                        .map_err(err)?;
                }
            }
        }
        let text = fit_text(&e.label, max_text);
        area.draw(&Text::new(text, (SWATCH_W as i32, y - RISE), style.clone()))
            .map_err(err)?;
    }
    if entries.len() > fits {
        let y = 34 + fits as i32 * ROW;
        let more = format!("… and {} more", entries.len() - fits);
        area.draw(&Text::new(more, (SWATCH_W as i32, y - RISE), style))
            .map_err(err)?;
    }
    Ok(())
}

/// Label of a series from the parts that tell series apart (a part equal in every series of
/// the figure is left out so legends stay short, but none that differs is ever dropped).
pub(crate) fn labels(keys: &[Vec<String>]) -> Vec<String> {
    let width = keys.iter().map(Vec::len).max().unwrap_or(0);
    let varies: Vec<bool> = (0..width)
        .map(|i| {
            let first = keys.first().and_then(|k| k.get(i));
            keys.iter().any(|k| k.get(i) != first)
        })
        .collect();
    keys.iter()
        .map(|k| {
            let parts: Vec<&str> = k
                .iter()
                .enumerate()
                .filter(|(i, _)| varies[*i] || *i == 0)
                .map(|(_, p)| p.as_str())
                .collect();
            parts.join(" ")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_keep_every_varying_part() {
        let keys = vec![
            vec!["hccl".into(), "mesh".into(), "fp32".into()],
            vec!["hccl".into(), "ring".into(), "fp32".into()],
            vec!["mpi".into(), "ring".into(), "fp32".into()],
        ];
        assert_eq!(labels(&keys), vec!["hccl mesh", "hccl ring", "mpi ring"]);
    }
}
