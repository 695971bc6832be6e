//! message_size_bw: bus bandwidth vs message size (log2 x), one panel per P.
//!
//! One series per (stack, variant, dtype, core_num) within a panel; busbw is recomputed from
//! bytes and the median time (nccl-tests convention). Only turns the analysis into panels.

use std::collections::BTreeMap;

use super::common::{
    labels, series_key, stat_text, Axis, Hover, Panel, Panels, Series, SeriesKey, Style,
};
use crate::model::results::ResultSet;
use crate::report::summary::Analysis;

type Key = SeriesKey;
/// (x, busbw at the CI's slow end, median busbw, at its fast end).
type Bar = (f64, f64, f64, f64);
/// (x, busbw, distorted: oversubscribed or contended) of one measured point.
type Measured = (f64, f64, bool);
/// (x, busbw, hover text) of one measured point.
type HoverAt = (f64, f64, String);

pub(crate) fn build(a: &Analysis, results: &ResultSet) -> Result<Panels, String> {
    let mut g: BTreeMap<u32, BTreeMap<Key, Vec<Measured>>> = BTreeMap::new();
    let mut texts: BTreeMap<(u32, Key), Vec<HoverAt>> = BTreeMap::new();
    let mut bars: BTreeMap<(u32, Key), Vec<Bar>> = BTreeMap::new();
    for s in a.stats.values() {
        let (Some(bw), true) = (s.busbw, s.n_bytes > 0) else {
            continue;
        };
        let r = &results.runs[s.index];
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
            let color = a.color_of(&key.0, &key.1);
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
    let mut caption = "Bus bandwidth (nccl-tests convention: n / T · 2(P−1)/P) from the median \
                  time, with the 95 % CI of the median as a bar; one colour per (stack, variant) \
                  in every figure. Message sizes on a log axis ticked at powers of two in binary \
                  units (1 KiB = 1024 B), the sizes nccl-tests and OSU sweep."
        .to_string();
    if any_distorted {
        caption.push_str(
            " Ringed points (a hollow marker, as in the legend) are runs the machine distorted: \
             oversubscribed (more ranks than CPUs) or contended (waiting for a CPU beyond 10 % \
             of the run).",
        );
    }
    Ok(Panels {
        title: "Bus bandwidth vs message size".into(),
        panels,
        caption,
        size: None,
    })
}
