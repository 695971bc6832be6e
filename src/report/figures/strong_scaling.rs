//! strong_scaling_t_total and strong_scaling_efficiency: median time and efficiency vs P.
//!
//! One panel per element count; in it one series per (stack, variant, dtype, core_num), so
//! counts and variants are never collapsed into one point. E(P) = T(Pmin)·Pmin / (T(P)·P)
//! with Pmin the smallest P of that series. Only turns the analysis into panels.

use std::collections::BTreeMap;

use super::common::{labels, series_key, Axis, Panel, Panels, Series, SeriesKey, Style};
use crate::model::results::ResultSet;
use crate::report::summary::Analysis;

type Key = SeriesKey;
/// count → series key → (P, seconds) points.
type ByCount = BTreeMap<u64, BTreeMap<Key, Vec<(f64, f64)>>>;
/// Maps a series' (P, T) points to the plotted points.
type Transform = fn(&[(f64, f64)]) -> Vec<(f64, f64)>;

/// count → series key → (P, median seconds), ascending by P.
fn groups(a: &Analysis, results: &ResultSet) -> ByCount {
    let mut g: BTreeMap<u64, BTreeMap<Key, Vec<(f64, f64)>>> = BTreeMap::new();
    for s in a.stats.values() {
        let r = &results.runs[s.index];
        let key = series_key(r);
        g.entry(r.case.count)
            .or_default()
            .entry(key)
            .or_default()
            .push((f64::from(r.case.p), s.summary.median));
    }
    for series in g.values_mut() {
        for pts in series.values_mut() {
            pts.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.total_cmp(&y.1)));
        }
    }
    g
}

fn scaling(a: &Analysis, results: &ResultSet) -> Result<ByCount, String> {
    let g = groups(a, results);
    let swept = g
        .values()
        .flat_map(|s| s.values())
        .any(|pts| pts.first().map(|p| p.0) != pts.last().map(|p| p.0));
    if swept {
        Ok(g)
    } else {
        Err("no stack was measured at two or more values of P for the same case".into())
    }
}

fn build(
    a: &Analysis,
    results: &ResultSet,
    title: &str,
    y: fn() -> Axis,
    hline: Option<(f64, String)>,
    transform: Transform,
) -> Result<Panels, String> {
    let g = scaling(a, results)?;
    let all_keys: Vec<Key> = g.values().flat_map(|s| s.keys().cloned()).collect();
    let key_parts = |k: &Key| vec![k.0.clone(), k.1.clone(), k.2.clone(), format!("cn{}", k.3)];
    let mut palette: Vec<Key> = all_keys.clone();
    palette.sort();
    palette.dedup();
    let names = labels(&palette.iter().map(key_parts).collect::<Vec<_>>());
    let mut panels = Vec::new();
    for (count, series) in &g {
        let mut panel = Panel::new(
            format!("count {count}"),
            Axis::new("P (ranks)", |v| {
                if (v - v.round()).abs() < 1e-6 {
                    format!("{}", v.round())
                } else {
                    String::new()
                }
            }),
            y(),
        );
        panel.hline = hline.clone();
        for (key, pts) in series {
            let i = palette.binary_search(key).unwrap_or(0);
            panel.series.push(Series {
                label: names[i].clone(),
                color: i,
                style: Style::LineAndPoints,
                points: transform(pts),
            });
        }
        panels.push(panel);
    }
    Ok(Panels {
        title: title.to_string(),
        panels,
    })
}

/// strong_scaling_t_total: median execute time vs P (log time axis).
pub(crate) fn total(a: &Analysis, results: &ResultSet) -> Result<Panels, String> {
    build(
        a,
        results,
        "Strong scaling: median execute time vs P",
        || Axis::log10_seconds("median execute time"),
        None,
        |pts| {
            pts.iter()
                .filter(|p| p.1 > 0.0)
                .map(|p| (p.0, p.1.log10()))
                .collect()
        },
    )
}

/// strong_scaling_efficiency: E(P) = T(Pmin)·Pmin / (T(P)·P).
pub(crate) fn efficiency(a: &Analysis, results: &ResultSet) -> Result<Panels, String> {
    build(
        a,
        results,
        "Strong scaling efficiency E(P) = T(Pmin)·Pmin / (T(P)·P)",
        || Axis::new("efficiency", |v| format!("{v:.2}")),
        Some((1.0, "ideal".to_string())),
        efficiency_points,
    )
}

/// E(P) for ascending (P, T) points; the reference is the first point (smallest P).
pub(crate) fn efficiency_points(pts: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let Some(&(p0, t0)) = pts.first() else {
        return Vec::new();
    };
    pts.iter()
        .filter(|p| p.1 > 0.0)
        .map(|&(p, t)| (p, t0 * p0 / (t * p)))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn efficiency_hand_computed() {
        // T(2) = 10, T(4) = 6, T(8) = 5: E = 1, 20/24, 20/40.
        let e = super::efficiency_points(&[(2.0, 10.0), (4.0, 6.0), (8.0, 5.0)]);
        assert_eq!(e, vec![(2.0, 1.0), (4.0, 20.0 / 24.0), (8.0, 0.5)]);
    }
}
