//! The census heatmaps (`heatmap`): a P × P matrix of one value per device pair (busbw, or latency), drawn
//! cell by cell in pixels, with the pairs the census named outlined.
//!
//! Both maps colour the slow end dark (low busbw, high latency), so one slow link is the same
//! dark cell in both; the diagonal is grey, a pair with no passing run is white with a dash.
//! Every cell's value, class and score is a hover point. It only turns an
//! `analysis::census::Census` into pixels; the scores and findings are the analysis's.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{Figure, HoverPoint, HoverSink};
use crate::analysis::census::{Census, PairCell};
use crate::model::units::{format_bandwidth, format_seconds};
use crate::report::font::FAMILY;

/// Which value a map shows.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value {
    Busbw,
    Latency,
}

impl Value {
    fn of(self, c: &PairCell) -> f64 {
        match self {
            Value::Busbw => c.busbw,
            Value::Latency => c.latency_s,
        }
    }

    fn text(self, v: f64) -> String {
        match self {
            Value::Busbw => format_bandwidth(v),
            Value::Latency => format_seconds(v),
        }
    }
}

/// One heatmap of a census.
pub(crate) struct Heatmap<'c> {
    census: &'c Census,
    value: Value,
}

pub(crate) fn heatmap(census: &Census, value: Value) -> Heatmap<'_> {
    Heatmap { census, value }
}

/// Cell side in pixels for P devices: large enough to print a value in, up to 64 devices a
/// readable page wide.
fn cell_px(p: usize) -> i32 {
    (640 / p.max(1) as i32).clamp(12, 64)
}

const LEFT: i32 = 60;
const TOP: i32 = 70;
const BAR: i32 = 150;
const BOTTOM: i32 = 40;

/// Five stops of viridis, from dark (slow) to light (fast).
const STOPS: [(u8, u8, u8); 5] = [
    (68, 1, 84),
    (59, 82, 139),
    (33, 145, 140),
    (94, 201, 98),
    (253, 231, 37),
];

/// The colour of `t` in 0..=1 (0 = slow).
fn colour(t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let i = (t.floor() as usize).min(STOPS.len() - 2);
    let f = t - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

impl Heatmap<'_> {
    /// The value range, and where a value sits in it with the slow end at 0.
    fn scale(&self) -> (f64, f64) {
        let vals = self.census.pairs.iter().map(|c| self.value.of(c));
        let lo = vals.clone().fold(f64::INFINITY, f64::min);
        let hi = vals.fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    }

    fn position(&self, v: f64, (lo, hi): (f64, f64)) -> f64 {
        let t = if hi > lo { (v - lo) / (hi - lo) } else { 1.0 };
        match self.value {
            Value::Busbw => t,
            Value::Latency => 1.0 - t,
        }
    }

    fn draw_cell<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        (i, j): (usize, usize),
        scale: (f64, f64),
        hover: &mut dyn HoverSink,
    ) -> Result<(), String> {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        let devices = &self.census.devices;
        let px = cell_px(devices.len());
        let (x, y) = (LEFT + j as i32 * px, TOP + i as i32 * px);
        let rect = [(x, y), (x + px - 1, y + px - 1)];
        let (a, b) = (devices[i], devices[j]);
        let font = (FAMILY, (px / 3).clamp(8, 13)).into_font();
        let centre = Pos::new(HPos::Center, VPos::Center);
        if i == j {
            let grey = RGBColor(225, 225, 225);
            return root.draw(&Rectangle::new(rect, grey.filled())).map_err(err);
        }
        let Some(c) = self.census.cell(a, b) else {
            root.draw(&Rectangle::new(rect, WHITE.filled()))
                .map_err(err)?;
            let style = TextStyle::from(font).color(&BLACK).pos(centre);
            let at = (x + px / 2, y + px / 2);
            return root.draw(&Text::new("–", at, style)).map_err(err);
        };
        let v = self.value.of(c);
        let t = self.position(v, scale);
        let fill = colour(t);
        root.draw(&Rectangle::new(rect, fill.filled()))
            .map_err(err)?;
        if c.outlier {
            let inner = [(x + 1, y + 1), (x + px - 2, y + px - 2)];
            let ring = ShapeStyle::from(&RED).stroke_width(3);
            root.draw(&Rectangle::new(inner, ring)).map_err(err)?;
        }
        if px >= 40 {
            let ink = if t < 0.6 { WHITE } else { BLACK };
            let style = TextStyle::from(font).color(&ink).pos(centre);
            let label = self.value.text(v);
            root.draw(&Text::new(label, (x + px / 2, y + px / 2), style))
                .map_err(err)?;
        }
        let score = c
            .score
            .map_or("not scored".to_string(), |s| format!("score {s:.1}"));
        hover.push(HoverPoint {
            x: x + px / 2,
            y: y + px / 2,
            color: format!("#{:02X}{:02X}{:02X}", fill.0, fill.1, fill.2),
            series: format!("{a}–{b}"),
            text: format!(
                "devices {a}–{b} ({}): busbw {}, latency {}, {score}{}",
                c.class.label(),
                format_bandwidth(c.busbw),
                format_seconds(c.latency_s),
                if c.outlier { ", outlier" } else { "" }
            ),
        })
    }

    fn draw_labels<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        let devices = &self.census.devices;
        let px = cell_px(devices.len());
        let font = (FAMILY, 12).into_font();
        // Every label when they fit, else every k-th: ids must stay readable.
        let every = (18 / px).max(1) as usize;
        for (k, d) in devices.iter().enumerate().filter(|(k, _)| k % every == 0) {
            let mid = k as i32 * px + px / 2;
            let top = TextStyle::from(font.clone()).pos(Pos::new(HPos::Center, VPos::Bottom));
            root.draw(&Text::new(d.to_string(), (LEFT + mid, TOP - 4), top))
                .map_err(err)?;
            let side = TextStyle::from(font.clone()).pos(Pos::new(HPos::Right, VPos::Center));
            root.draw(&Text::new(d.to_string(), (LEFT - 6, TOP + mid), side))
                .map_err(err)?;
        }
        let note = TextStyle::from(font).pos(Pos::new(HPos::Left, VPos::Top));
        let n = devices.len() as i32;
        let legend = "device × device; red outline: outlier within its link class";
        root.draw(&Text::new(legend, (LEFT, TOP + n * px + 10), note))
            .map_err(err)
    }

    /// The colour bar: slow at the bottom, its two ends labelled.
    fn draw_bar<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        (lo, hi): (f64, f64),
    ) -> Result<(), String> {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        let px = cell_px(self.census.devices.len());
        let height = (self.census.devices.len() as i32 * px).max(100);
        let x = LEFT + self.census.devices.len() as i32 * px + 24;
        for s in 0..height {
            let fill = colour(1.0 - f64::from(s) / f64::from(height));
            let r = Rectangle::new([(x, TOP + s), (x + 16, TOP + s + 1)], fill.filled());
            root.draw(&r).map_err(err)?;
        }
        let (fast, slow) = match self.value {
            Value::Busbw => (hi, lo),
            Value::Latency => (lo, hi),
        };
        let style = TextStyle::from((FAMILY, 12).into_font());
        let top = style.pos(Pos::new(HPos::Left, VPos::Top));
        root.draw(&Text::new(self.value.text(fast), (x + 22, TOP), top))
            .map_err(err)?;
        let bottom = style.pos(Pos::new(HPos::Left, VPos::Bottom));
        let slow_text = self.value.text(slow);
        root.draw(&Text::new(slow_text, (x + 22, TOP + height), bottom))
            .map_err(err)
    }
}

impl Figure for Heatmap<'_> {
    fn title(&self) -> String {
        let what = match self.value {
            Value::Busbw => "busbw",
            Value::Latency => "latency",
        };
        format!(
            "Link census: {what} of every device pair ({})",
            self.census.stack
        )
    }

    fn caption(&self) -> String {
        let what = match self.value {
            Value::Busbw => "median bus bandwidth",
            Value::Latency => "median time of one collective",
        };
        format!(
            "Each cell is the {what} of the two-rank run on that pair of devices (row, column), \
             over its timed rounds; dark is slow in both maps. Pairs outlined in red are \
             outliers within their link class (same node, across nodes): see the census \
             section for the rule and the finding."
        )
    }

    fn size(&self) -> (u32, u32) {
        let n = self.census.devices.len() as i32 * cell_px(self.census.devices.len());
        let w = LEFT + n + BAR;
        let h = TOP + n.max(100) + BOTTOM;
        (w.max(480) as u32, h as u32)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        hover: &mut dyn HoverSink,
    ) -> Result<(), String> {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let title = TextStyle::from((FAMILY, 18).into_font().style(FontStyle::Bold));
        root.draw(&Text::new(self.title(), (10, 12), title))
            .map_err(|e| e.to_string())?;
        let scale = self.scale();
        let n = self.census.devices.len();
        for i in 0..n {
            for j in 0..n {
                self.draw_cell(root, (i, j), scale, hover)?;
            }
        }
        self.draw_labels(root)?;
        if !self.census.pairs.is_empty() {
            self.draw_bar(root, scale)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_colour_map_runs_dark_to_light_and_clamps() {
        assert_eq!(colour(0.0), RGBColor(68, 1, 84));
        assert_eq!(colour(1.0), RGBColor(253, 231, 37));
        assert_eq!(colour(-3.0), colour(0.0));
        assert_eq!(colour(7.0), colour(1.0));
        assert_eq!(cell_px(8), 64);
        assert_eq!(cell_px(64), 12);
    }
}
