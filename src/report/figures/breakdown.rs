//! phase_breakdown and compile_breakdown: stacked bars of where time goes, one bar per run.
//!
//! Drawn only when runs recorded phases (startup/compile/init/execute …) or a compile profile
//! (passes/codegen, other = total − passes − codegen). Bars are per run, never averaged over
//! runs. Only turns the analysis into a panel.

use std::collections::BTreeMap;

use super::common::{Axis, Panel, Panels};
use crate::model::results::ResultSet;
use crate::report::summary::Analysis;

/// Phases in the order the seed's stacks go through them; any other phase follows by name.
const PHASE_ORDER: &[&str] = &["startup", "compile", "init", "execute"];

pub(crate) fn phases(a: &Analysis, results: &ResultSet) -> Result<Panels, String> {
    let bars: Vec<(String, Vec<(String, f64)>)> = a
        .stats
        .values()
        .filter(|s| !s.phase_means.is_empty())
        .map(|s| (run_label(results, s.index), ordered(&s.phase_means)))
        .collect();
    if bars.is_empty() {
        return Err("no passing run recorded phases".into());
    }
    Ok(stacked(
        "Phase breakdown per run (mean of timed rounds)",
        bars,
    ))
}

pub(crate) fn compile(a: &Analysis, results: &ResultSet) -> Result<Panels, String> {
    let bars: Vec<(String, Vec<(String, f64)>)> = a
        .stats
        .values()
        .filter(|s| !s.compile_means.is_empty())
        .map(|s| {
            let m = &s.compile_means;
            let passes = m.get("passes").copied().unwrap_or(0.0);
            let codegen = m.get("codegen").copied().unwrap_or(0.0);
            let total = m.get("total").copied().unwrap_or(passes + codegen);
            let parts = vec![
                ("passes".to_string(), passes),
                ("codegen".to_string(), codegen),
                ("other".to_string(), (total - passes - codegen).max(0.0)),
            ];
            (run_label(results, s.index), parts)
        })
        .collect();
    if bars.is_empty() {
        return Err("no passing run recorded a compile profile".into());
    }
    Ok(stacked("Compile breakdown per run", bars))
}

fn run_label(results: &ResultSet, index: usize) -> String {
    let r = &results.runs[index];
    format!("{} {}", r.stack, r.case_id)
}

fn ordered(m: &BTreeMap<String, f64>) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = PHASE_ORDER
        .iter()
        .filter_map(|p| m.get(*p).map(|v| (p.to_string(), *v)))
        .collect();
    out.extend(
        m.iter()
            .filter(|(k, _)| !PHASE_ORDER.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), *v)),
    );
    out
}

fn stacked(title: &str, bars: Vec<(String, Vec<(String, f64)>)>) -> Panels {
    let mut names: Vec<String> = Vec::new();
    for (_, parts) in &bars {
        for (n, _) in parts {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    let x = Axis::categories("run", bars.iter().map(|b| b.0.clone()).collect());
    let mut panel = Panel::new(
        "",
        x,
        Axis::new("seconds", crate::model::units::format_seconds),
    );
    for (i, (_, parts)) in bars.iter().enumerate() {
        let mut y = 0.0;
        for (n, v) in parts {
            let c = names.iter().position(|x| x == n).unwrap_or(0);
            panel
                .rects
                .push((i as f64 - 0.4, y, i as f64 + 0.4, y + v, c));
            y += v;
        }
    }
    panel.rect_legend = names.into_iter().enumerate().map(|(i, n)| (n, i)).collect();
    Panels {
        title: title.to_string(),
        panels: vec![panel],
        caption: String::new(),
    }
}
