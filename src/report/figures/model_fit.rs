//! bw_model_fit: measured median times and the fitted α–β line T = O + N/B.
//!
//! One panel per P; per fit (stack, variant, dtype, core_num) its points and a dashed model
//! line sampled across the measured sizes, both on log axes. Only turns fits into panels.

use std::collections::BTreeMap;

use super::common::{labels, Axis, Panel, Panels, Series, Style};
use crate::report::summary::{Analysis, ModelFit};

/// Points on the drawn model line.
const LINE_POINTS: usize = 48;

pub(crate) fn build(a: &Analysis) -> Result<Panels, String> {
    if a.fits.is_empty() {
        return Err("no (stack, variant, P) was measured at three or more message sizes".into());
    }
    let keys: Vec<Vec<String>> = a
        .fits
        .iter()
        .map(|f| {
            let k = &f.key;
            vec![
                k.stack.clone(),
                k.variant.to_string(),
                k.dtype.to_string(),
                format!("cn{}", k.core_num),
            ]
        })
        .collect();
    let names = labels(&keys);
    let mut by_p: BTreeMap<u32, Vec<(usize, &ModelFit)>> = BTreeMap::new();
    for (i, f) in a.fits.iter().enumerate() {
        by_p.entry(f.key.p).or_default().push((i, f));
    }
    let mut panels = Vec::new();
    for (p, fits) in by_p {
        let mut panel = Panel::new(
            format!("P = {p}"),
            Axis::log2_bytes("message size (bytes per rank)"),
            Axis::log10_seconds("median execute time"),
        );
        for (i, f) in fits {
            let measured: Vec<(f64, f64)> = f
                .points
                .iter()
                .filter(|p| p.0 > 0.0 && p.1 > 0.0)
                .map(|p| (p.0.log2(), p.1.log10()))
                .collect();
            panel.series.push(Series {
                label: format!("{} (fit r² {:.3})", names[i], f.fit.r2),
                color: i,
                style: Style::Points,
                points: measured,
            });
            panel.series.push(Series {
                label: String::new(),
                color: i,
                style: Style::Dashed,
                points: model_line(f),
            });
        }
        panels.push(panel);
    }
    Ok(Panels {
        title: "α–β model fit T = O + N/B".into(),
        panels,
    })
}

/// The model sampled evenly in log2(bytes) over the measured range (positive times only).
fn model_line(f: &ModelFit) -> Vec<(f64, f64)> {
    let lo = f.points.first().map(|p| p.0).unwrap_or(1.0).max(1.0).log2();
    let hi = f.points.last().map(|p| p.0).unwrap_or(1.0).max(1.0).log2();
    (0..LINE_POINTS)
        .map(|i| lo + (hi - lo) * i as f64 / (LINE_POINTS - 1) as f64)
        .filter_map(|x| {
            let t = f.fit.predict(2f64.powf(x));
            (t > 0.0).then(|| (x, t.log10()))
        })
        .collect()
}
