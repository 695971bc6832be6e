//! bw_model_fit: measured median times and the fitted α–β line T = O + N/B.
//!
//! One panel per P; per fit (stack, variant, dtype, core_num) its points and a dashed model
//! line sampled across the sizes it was fitted on (the large-message segment when only that
//! fits), both on log axes; a fit that does not describe its points draws no line and says so
//! in its legend. Only turns fits into panels.

use std::collections::BTreeMap;

use super::common::{labels, Axis, Hover, Panel, Panels, Series, Style};
use crate::analysis::scaling::ModelFit;
use crate::report::summary::Analysis;

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
                k.series_label(),
                k.dtype.to_string(),
                format!("cn{}", k.core_num),
            ]
        })
        .collect();
    let names = labels(&keys);
    // One shared legend text a series for its hover values.
    let hover_names: Vec<std::sync::Arc<str>> = names
        .iter()
        .map(|n| std::sync::Arc::from(n.as_str()))
        .collect();
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
            let fit = &f.fit;
            let how = if !fit.fits {
                format!(
                    "model does not fit: worst {:.0} % off, no curve",
                    fit.max_rel_residual * 100.0
                )
            } else if fit.segment {
                format!(
                    "fit from {} up, worst {:.0} % off",
                    crate::model::units::format_bytes(fit.from_bytes as u64),
                    fit.max_rel_residual * 100.0
                )
            } else {
                format!("fit worst {:.0} % off", fit.max_rel_residual * 100.0)
            };
            let color = a.color_of(&f.key.stack, &f.key.series_label());
            for p in f.points.iter().filter(|p| p.0 > 0.0 && p.1 > 0.0) {
                let model = fit.predict(p.0);
                panel.hover.push(Hover {
                    x: p.0.log2(),
                    y: p.1.log10(),
                    color,
                    series: hover_names[i].clone(),
                    text: format!(
                        "{} P={}: {} median {}; model {} ({how})",
                        names[i],
                        f.key.p,
                        crate::model::units::format_bytes(p.0 as u64),
                        crate::model::units::format_seconds(p.1),
                        crate::model::units::format_seconds(model),
                    ),
                });
            }
            // One legend serves every panel: each entry says which panel (P) its fit is of.
            panel.series.push(Series {
                label: format!("P = {}: {} ({how})", f.key.p, names[i]),
                color,
                style: Style::Points,
                points: measured,
            });
            panel.series.push(Series {
                label: String::new(),
                color,
                style: Style::Dashed,
                points: model_line(f),
            });
        }
        panels.push(panel);
    }
    Ok(Panels {
        title: "α–β model fit T = O + N/B".into(),
        panels,
        caption: "Measured median times (points) and the fitted T = O + N/B (dashed, drawn \
                  only over the sizes it was fitted on; none when the model does not fit). \
                  Sizes ticked at powers of two in binary units (1 KiB = 1024 B), time at \
                  1-2-5 per decade; one colour per (stack, variant) in every figure."
            .into(),
        size: None,
    })
}

/// The model sampled evenly in log2(bytes) over the sizes it was fitted on (positive times
/// only); nothing when the model does not fit.
fn model_line(f: &ModelFit) -> Vec<(f64, f64)> {
    if !f.fit.fits {
        return Vec::new();
    }
    let lo = f.fit.from_bytes.max(1.0).log2();
    let hi = f.fit.to_bytes.max(1.0).log2();
    (0..LINE_POINTS)
        .map(|i| lo + (hi - lo) * i as f64 / (LINE_POINTS - 1) as f64)
        .filter_map(|x| {
            let t = f.fit.predict(2f64.powf(x));
            (t > 0.0).then(|| (x, t.log10()))
        })
        .collect()
}
