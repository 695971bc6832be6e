//! message_size_bw: bus bandwidth vs message size (log2 x), one panel per P; with several ops,
//! one figure per op (`message_size_bw_<op>`), each captioned with its op's busbw factor.
//!
//! One series per (stack, variant, dtype, core_num) within a panel, each its own colour
//! (`legend_colors::distinct`); busbw is recomputed from bytes and the median time (nccl-tests
//! convention). Only turns the analysis into panels.

use std::collections::BTreeMap;

use super::common::{
    labels, series_key, stat_text, Axis, Hover, Panel, Panels, Series, SeriesKey, Style,
};
use crate::analysis::stats::bandwidth::bus_factor_formula;
use crate::model::case::Op;
use crate::model::results::ResultSet;
use crate::report::summary::Analysis;

type Key = SeriesKey;
/// (x, busbw at the CI's slow end, median busbw, at its fast end).
type Bar = (f64, f64, f64, f64);
/// (x, busbw, distorted: oversubscribed or contended) of one measured point.
type Measured = (f64, f64, bool);
/// (x, busbw, hover text) of one measured point.
type HoverAt = (f64, f64, String);

/// The figures this family draws: `message_size_bw` for one op (or none measured), else one
/// `message_size_bw_<op>` per op with a bandwidth, in `Op::EVERY` order.
pub(crate) fn targets(a: &Analysis, results: &ResultSet, name: &str) -> Vec<(String, Option<Op>)> {
    let ran: std::collections::BTreeSet<Op> = (a.stats.values())
        .filter(|s| s.busbw.is_some())
        .map(|s| results.runs[s.index].case.op)
        .collect();
    match ran.len() {
        0 => vec![(name.to_string(), None)],
        1 => vec![(name.to_string(), ran.first().copied())],
        _ => Op::EVERY
            .iter()
            .filter(|op| ran.contains(op))
            .map(|op| (format!("{name}_{op}"), Some(*op)))
            .collect(),
    }
}

/// The figure of `op`'s runs (every run's with `None`).
pub(crate) fn build(a: &Analysis, results: &ResultSet, op: Option<Op>) -> Result<Panels, String> {
    let mut g: BTreeMap<u32, BTreeMap<Key, Vec<Measured>>> = BTreeMap::new();
    let mut texts: BTreeMap<(u32, Key), Vec<HoverAt>> = BTreeMap::new();
    let mut bars: BTreeMap<(u32, Key), Vec<Bar>> = BTreeMap::new();
    for s in a.stats.values() {
        let (Some(bw), true) = (s.busbw, s.n_bytes > 0) else {
            continue;
        };
        let r = &results.runs[s.index];
        if op.is_some_and(|o| o != r.case.op) {
            continue;
        }
        let key = series_key(r);
        let x = (s.n_bytes as f64).log2();
        let ci = s.summary.median_ci;
        let scale = |t: f64| (t > 0.0).then(|| bw * s.summary.median / t / 1e9);
        if let (Some(lo), Some(hi)) = (scale(ci.hi), scale(ci.lo)) {
            bars.entry((r.case.p, key.clone()))
                .or_default()
                .push((x, lo, bw / 1e9, hi));
        }
        texts.entry((r.case.p, key.clone())).or_default().push((
            x,
            bw / 1e9,
            format!(
                "{}; busbw {}",
                stat_text(results, s),
                crate::model::units::format_bandwidth(bw)
            ),
        ));
        let (over, contended) = crate::report::context::conditions(results, s);
        g.entry(r.case.p)
            .or_default()
            .entry(key)
            .or_default()
            .push((x, bw / 1e9, over || contended));
    }
    let swept = g
        .values()
        .flat_map(|s| s.values())
        .any(|pts| pts.iter().any(|p| p.0 != pts[0].0));
    if !swept {
        return Err("no stack was measured at two or more message sizes".into());
    }
    let mut palette: Vec<Key> = g.values().flat_map(|s| s.keys().cloned()).collect();
    palette.sort();
    palette.dedup();
    let names = labels(
        &palette
            .iter()
            .map(|k| vec![k.0.clone(), k.1.clone(), k.2.clone(), format!("cn{}", k.3)])
            .collect::<Vec<_>>(),
    );
    let colors = super::legend_colors::distinct(
        &(palette.iter())
            .map(|k| a.color_of(&k.0, &k.1))
            .collect::<Vec<_>>(),
    );
    // One shared legend text a series for its hover values.
    let hover_names: Vec<std::sync::Arc<str>> = names
        .iter()
        .map(|n| std::sync::Arc::from(n.as_str()))
        .collect();
    let mut panels = Vec::new();
    let mut any_distorted = false;
    for (p, series) in g {
        let mut panel = Panel::new(
            format!("P = {p}"),
            Axis::log2_bytes("message size (bytes per rank)"),
            Axis::new("busbw (GB/s)", |v| format!("{v:.2}")),
        );
        for (key, mut pts) in series {
            pts.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.total_cmp(&y.1)));
            let i = palette.binary_search(&key).unwrap_or(0);
            let color = colors[i];
            for (x, lo, mid, hi) in bars.get(&(p, key.clone())).into_iter().flatten() {
                panel.error_bars.push((*x, *lo, *mid, *hi, color));
            }
            for (x, y, text) in texts.remove(&(p, key.clone())).into_iter().flatten() {
                panel.hover.push(Hover {
                    x,
                    y,
                    color,
                    series: hover_names[i].clone(),
                    text,
                });
            }
            let distorted: Vec<(f64, f64)> =
                pts.iter().filter(|q| q.2).map(|q| (q.0, q.1)).collect();
            panel.series.push(Series {
                label: names[i].clone(),
                color,
                style: Style::LineAndPoints,
                points: pts.iter().map(|q| (q.0, q.1)).collect(),
            });
            if !distorted.is_empty() {
                any_distorted = true;
                panel.series.push(Series {
                    label: format!("{} (oversubscribed or contended)", names[i]),
                    color,
                    style: Style::Hollow,
                    points: distorted,
                });
            }
        }
        panels.push(panel);
    }
    Ok(finish(op, panels, any_distorted))
}

/// The figure of `op` around its panels: its title and its caption, which gives that op's
/// busbw factor.
fn finish(op: Option<Op>, panels: Vec<Panel>, any_distorted: bool) -> Panels {
    let factor = match op {
        Some(op) => format!("{}, {op}'s factor", bus_factor_formula(op)),
        None => "the op's factor".to_string(),
    };
    let mut caption = format!(
        "Bus bandwidth (nccl-tests convention: n / T · {factor}) from the median time, with the \
         95 % CI of the median as a bar; each series its own colour, a (stack, variant) the same \
         in every figure. Message sizes on a log axis ticked at powers of two in binary units \
         (1 KiB = 1024 B), the sizes nccl-tests and OSU sweep."
    );
    if any_distorted {
        caption.push_str(
            " Ringed points (a hollow marker, as in the legend) are runs the machine distorted: \
             oversubscribed (more ranks than CPUs) or contended (waiting for a CPU beyond 10 % \
             of the run).",
        );
    }
    Panels {
        title: match op {
            Some(op) => format!("Bus bandwidth vs message size — {op}"),
            None => "Bus bandwidth vs message size".into(),
        },
        panels,
        caption,
        size: None,
    }
}
