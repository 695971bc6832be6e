//! strong_scaling_t_total and strong_scaling_efficiency: median time and efficiency vs P.
//!
//! One panel per element count; in it one series per (stack, variant, dtype, core_num), so
//! counts and variants are never collapsed into one point. In an allreduce every rank holds the
//! whole message, so the ideal time does not fall as 1/P: efficiency is the bus bandwidth
//! relative to the series' smallest P, E(P) = busbw(P) / busbw(Pmin) with busbw = n/T ·
//! 2(P−1)/P (1 when the algorithm keeps the per-rank link busy as P grows). Oversubscribed
//! points (more ranks than CPUs received) are drawn hollow on a dashed line and captioned. P is
//! ticked only where it was measured. Only turns the analysis into panels.

use std::collections::{BTreeMap, BTreeSet};

use super::common::{
    labels, series_key, stat_text, Axis, Hover, Panel, Panels, Series, SeriesKey, Style,
};
use crate::model::results::ResultSet;
use crate::report::summary::Analysis;

type Key = SeriesKey;
/// One measured point: P, median seconds, whether any repeat was oversubscribed, CI (lo, hi),
/// and its hover text.
type Point = (f64, f64, bool, (f64, f64), String);
/// count → series key → points.
type ByCount = BTreeMap<u64, BTreeMap<Key, Vec<Point>>>;
/// A plotted point.
type XY = (f64, f64);
/// Maps a series' (P, T) points to the plotted points.
type Transform = fn(&[(f64, f64)]) -> Vec<(f64, f64)>;

/// count → series key → (P, median seconds, oversubscribed), ascending by P.
fn groups(a: &Analysis, results: &ResultSet) -> ByCount {
    let mut g: ByCount = BTreeMap::new();
    for s in a.stats.values() {
        let r = &results.runs[s.index];
        // Oversubscribed or contended: the machine's time as much as the stack's.
        let (over, contended) = crate::report::context::conditions(results, s);
        let over = over || contended;
        g.entry(r.case.count)
            .or_default()
            .entry(series_key(r))
            .or_default()
            .push((
                f64::from(r.case.p),
                s.summary.median,
                over,
                (s.summary.median_ci.lo, s.summary.median_ci.hi),
                stat_text(results, s),
            ));
    }
    for series in g.values_mut() {
        for pts in series.values_mut() {
            pts.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.total_cmp(&y.1)));
        }
    }
    g
}

/// Whether some series was measured at two values of P for one count, found without building
/// the points (a campaign that sweeps only counts would otherwise build, with a hover text
/// each, a point and a map per count — the report's peak at 20,000 counts — only to skip the
/// figure). Series are told apart by a hash of their key: two series sharing a hash can only
/// make this say yes where `groups` then finds no, never the reverse.
fn any_p_swept(a: &Analysis, results: &ResultSet) -> bool {
    use std::hash::{Hash, Hasher};
    let mut first_p: std::collections::HashMap<(u64, u64), u32> = Default::default();
    a.stats.values().any(|s| {
        let r = &results.runs[s.index];
        let mut h = std::collections::hash_map::DefaultHasher::new();
        series_key(r).hash(&mut h);
        let p = *first_p
            .entry((r.case.count, h.finish()))
            .or_insert(r.case.p);
        p != r.case.p
    })
}

fn scaling(a: &Analysis, results: &ResultSet) -> Result<ByCount, String> {
    let unswept = || "no stack was measured at two or more values of P for the same case".into();
    if !any_p_swept(a, results) {
        return Err(unswept());
    }
    let g = groups(a, results);
    let swept = g
        .values()
        .flat_map(|s| s.values())
        .any(|pts| pts.first().map(|p| p.0) != pts.last().map(|p| p.0));
    if swept {
        Ok(g)
    } else {
        Err(unswept())
    }
}

/// An x axis labelled at the measured P values only.
fn p_axis(measured: BTreeSet<u32>) -> Axis {
    let at = measured.iter().map(|p| f64::from(*p)).collect();
    Axis::at("P (ranks)", at, |v| format!("{}", v.round()))
}

const OVERSUBSCRIBED: &str = "Hollow markers on dashed lines (and in the legend) are runs the \
    machine distorted: oversubscribed (more ranks than CPUs received, so ranks time-share cores \
    and the time measures the scheduler as much as the algorithm; results.json \
    `oversubscribed`) or contended (waiting for a CPU beyond 10 % of the run; `cpu_contention`).";

/// Said under the efficiency figure when some E(P) is above 1.
const ABOVE_ONE: &str = "E above 1 is not better than ideal: it means the reference point \
    (the smallest P) ran slower than the larger P could, usually because its own run was \
    disturbed (a contended or oversubscribed run, a cold cache, a frequency change) or because \
    the larger P's message fits a faster path (cache, shared memory); read such points against \
    the time figure before drawing conclusions.";

/// How one of the two scaling figures looks.
struct Look {
    title: &'static str,
    y: fn() -> Axis,
    hline: Option<(f64, String)>,
    transform: Transform,
    caption: &'static str,
    /// Draw the CI of each median (time figure; efficiency is a ratio of medians).
    ci_bars: bool,
}

/// Most panels (element counts) one scaling figure draws: 8 rows of 3, a 2,280 × 3,408 px
/// image. A sweep of 625 counts would otherwise make a 2,280 × 87,828 px image, 600 MB in memory
/// while it is drawn; the caption says which counts are drawn, and every case's median is in
/// `results.csv` and the report's tables.
pub(crate) const MAX_PANELS: usize = 24;

/// The counts a figure draws: all of them up to [`MAX_PANELS`], else `MAX_PANELS` spread evenly
/// over the sorted counts, the smallest and the largest included.
fn shown_counts(counts: &[u64]) -> Vec<u64> {
    let n = counts.len();
    if n <= MAX_PANELS {
        return counts.to_vec();
    }
    let mut shown: Vec<u64> = (0..MAX_PANELS)
        .map(|i| counts[(i * (n - 1) + (MAX_PANELS - 1) / 2) / (MAX_PANELS - 1)])
        .collect();
    shown.dedup();
    shown
}

fn build(a: &Analysis, results: &ResultSet, look: Look) -> Result<Panels, String> {
    let Look {
        title,
        y,
        hline,
        transform,
        caption,
        ci_bars,
    } = look;
    let g = scaling(a, results)?;
    let all_keys: Vec<Key> = g.values().flat_map(|s| s.keys().cloned()).collect();
    let key_parts = |k: &Key| vec![k.0.clone(), k.1.clone(), k.2.clone(), format!("cn{}", k.3)];
    let mut palette: Vec<Key> = all_keys.clone();
    palette.sort();
    palette.dedup();
    let names = labels(&palette.iter().map(key_parts).collect::<Vec<_>>());
    // One shared legend text a series for its hover values.
    let hover_names: Vec<std::sync::Arc<str>> = names
        .iter()
        .map(|n| std::sync::Arc::from(n.as_str()))
        .collect();
    let counts: Vec<u64> = g.keys().copied().collect();
    let shown = shown_counts(&counts);
    let mut panels = Vec::new();
    let mut any_over = false;
    for count in &shown {
        let series = &g[count];
        let measured: BTreeSet<u32> = series
            .values()
            .flat_map(|pts| pts.iter().map(|p| p.0 as u32))
            .collect();
        let mut panel = Panel::new(format!("count {count}"), p_axis(measured), y());
        panel.hline = hline.clone();
        for (key, pts) in series {
            let i = palette.binary_search(key).unwrap_or(0);
            let color = a.color_of(&key.0, &key.1);
            if ci_bars {
                for &(x, t, _, (lo, hi), _) in pts {
                    if lo > 0.0 && t > 0.0 {
                        panel
                            .error_bars
                            .push((x, lo.log10(), t.log10(), hi.log10(), color));
                    }
                }
            }
            let plain: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.1)).collect();
            let shown = transform(&plain);
            for &(x, y) in &shown {
                if let Some(p) = pts.iter().find(|p| p.0.to_bits() == x.to_bits()) {
                    panel.hover.push(Hover {
                        x,
                        y,
                        color,
                        series: hover_names[i].clone(),
                        text: p.4.clone(),
                    });
                }
            }
            // Transforms keep the order of P; split where the machine was oversubscribed.
            let over_at: BTreeSet<u64> =
                pts.iter().filter(|p| p.2).map(|p| p.0.to_bits()).collect();
            let (bad, good): (Vec<XY>, Vec<XY>) =
                shown.iter().partition(|p| over_at.contains(&p.0.to_bits()));
            if !good.is_empty() {
                panel.series.push(Series {
                    label: names[i].clone(),
                    color,
                    style: Style::LineAndPoints,
                    points: good.clone(),
                });
            }
            if !bad.is_empty() {
                any_over = true;
                // Join the dashed part to the last honest point before it.
                let mut line: Vec<(f64, f64)> = good
                    .iter()
                    .rfind(|p| p.0 < bad[0].0)
                    .copied()
                    .into_iter()
                    .collect();
                line.extend(bad);
                panel.series.push(Series {
                    label: format!("{} (oversubscribed or contended)", names[i]),
                    color,
                    style: Style::HollowDashed,
                    points: line,
                });
            }
        }
        panels.push(panel);
    }
    let text = full_caption(caption, &panels, (shown.len(), counts.len()), any_over);
    Ok(Panels {
        title: title.to_string(),
        panels,
        caption: text,
        size: None,
    })
}

/// The caption under the panels: which counts are drawn (`drawn`: shown of all), the
/// oversubscription note when a dashed part exists, and the caveat of efficiencies above 1.
fn full_caption(caption: &str, panels: &[Panel], drawn: (usize, usize), any_over: bool) -> String {
    let mut text = caption.to_string();
    if drawn.0 < drawn.1 {
        text.push_str(&format!(
            " Only {} of the {} element counts are drawn, spread evenly from the smallest to \
             the largest; every case's median is in results.csv.",
            drawn.0, drawn.1
        ));
    }
    if any_over {
        text.push(' ');
        text.push_str(OVERSUBSCRIBED);
    }
    // An efficiency above 1 carries its caveat (only the efficiency figure has the line at 1).
    // A dashed part repeats the last honest point it joins: each (panel, colour, P) once.
    let above: BTreeSet<(usize, usize, u64, u64)> = panels
        .iter()
        .enumerate()
        .filter(|(_, p)| p.hline.is_some())
        .flat_map(|(k, p)| {
            p.series.iter().flat_map(move |s| {
                s.points
                    .iter()
                    .filter(|q| q.1 > 1.0 + 1e-9)
                    .map(move |q| (k, s.color, q.0.to_bits(), q.1.to_bits()))
            })
        })
        .collect();
    let above: Vec<f64> = above.iter().map(|a| f64::from_bits(a.3)).collect();
    if let Some(max) = above.iter().copied().reduce(f64::max) {
        text.push_str(&format!(
            " ⚠ {} point(s) above 1 (up to {:.0} %). {ABOVE_ONE}",
            above.len(),
            max * 100.0
        ));
    }
    text
}

/// strong_scaling_t_total: median time vs P (log time axis).
pub(crate) fn total(a: &Analysis, results: &ResultSet) -> Result<Panels, String> {
    build(
        a,
        results,
        Look {
        title: "Strong scaling: median time vs P",
        y: || Axis::log10_seconds("median time (each stack's metric)"),
        hline: None,
        transform: |pts| {
            pts.iter()
                .filter(|p| p.1 > 0.0)
                .map(|p| (p.0, p.1.log10()))
                .collect()
        },
        caption: "Median time of each stack's headline metric per P at a fixed element count (one panel \
         per count). Every rank holds the whole message, so an allreduce does not get faster \
         with P: the bandwidth-optimal time approaches 2·n/B from below as P grows. Bars: \
         95 % CI of each median; one colour per (stack, variant) in every figure. Time is on \
         a log axis ticked at 1-2-5 per decade (1 µs, 2 µs, 5 µs, 10 µs …); P only where \
         measured.",
        ci_bars: true,
        },
    )
}

/// strong_scaling_efficiency: E(P) = busbw(P) / busbw(Pmin).
pub(crate) fn efficiency(a: &Analysis, results: &ResultSet) -> Result<Panels, String> {
    build(
        a,
        results,
        Look {
            title: "Strong scaling efficiency E(P) = busbw(P) / busbw(Pmin)",
            y: || Axis::new("efficiency", |v| format!("{v:.2}")),
            hline: Some((1.0, "ideal".to_string())),
            transform: efficiency_points,
            caption: "E(P) = busbw(P) / busbw(Pmin), busbw = n / T(P) · 2(P−1)/P, i.e. \
         T(Pmin)·f(P) / (T(P)·f(Pmin)) with f(P) = 2(P−1)/P. Each rank holds the whole message \
         of n bytes, so the classic T(Pmin)·Pmin / (T(P)·P) (which assumes the work is split \
         P ways) would call a perfect allreduce inefficient; E = 1 means the link of every rank \
         stays as busy as at the smallest P. Pmin is the smallest P ≥ 2 of each line.",
            ci_bars: false,
        },
    )
}

/// Bus-bandwidth factor of an allreduce over `p` ranks.
fn bus_factor(p: f64) -> f64 {
    2.0 * (p - 1.0) / p
}

/// E(P) for ascending (P, T) points; the reference is the smallest P ≥ 2 (P = 1 moves no data).
pub(crate) fn efficiency_points(pts: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let Some(&(p0, t0)) = pts.iter().find(|p| p.0 >= 2.0 && p.1 > 0.0) else {
        return Vec::new();
    };
    pts.iter()
        .filter(|p| p.1 > 0.0 && p.0 >= 2.0)
        .map(|&(p, t)| (p, (t0 / t) * bus_factor(p) / bus_factor(p0)))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn many_counts_draw_at_most_max_panels_from_the_smallest_to_the_largest() {
        let few: Vec<u64> = (1..=24).collect();
        assert_eq!(super::shown_counts(&few), few);
        let many: Vec<u64> = (1..=625).map(|c| c * 1024).collect();
        let shown = super::shown_counts(&many);
        assert_eq!(shown.len(), super::MAX_PANELS);
        assert_eq!(shown.first(), Some(&1024));
        assert_eq!(shown.last(), Some(&(625 * 1024)));
        assert!(shown.windows(2).all(|w| w[0] < w[1]));
        // Evenly spread: neighbours 26 or 27 counts apart (624 / 23 ≈ 27.1).
        assert!(shown
            .windows(2)
            .all(|w| (26..=28).contains(&((w[1] - w[0]) / 1024))));
    }

    #[test]
    fn efficiency_is_bus_bandwidth_relative_to_the_smallest_p() {
        // T(2) = 10, T(4) = 15, T(8) = 17.5: f = 1, 1.5, 1.75 → busbw constant: E = 1 each.
        let e = super::efficiency_points(&[(2.0, 10.0), (4.0, 15.0), (8.0, 17.5)]);
        assert_eq!(e, vec![(2.0, 1.0), (4.0, 1.0), (8.0, 1.0)]);
        // The same time at P = 4 as at P = 2 moves 1.5× the bus bytes: E = 1.5.
        let e = super::efficiency_points(&[(1.0, 1.0), (2.0, 10.0), (4.0, 10.0)]);
        assert_eq!(e, vec![(2.0, 1.0), (4.0, 1.5)]);
    }
}
