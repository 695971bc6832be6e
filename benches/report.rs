//! Benchmark of summarize + figures + report on a synthetic 10 080 runs × 50 timed rounds.
//! Run with `cargo bench --bench report`; the result goes in docs/performance.md ("## Reports").

use std::time::Instant;

// Shared with the integration tests, which use more of it than this benchmark does.
#[allow(dead_code)]
#[path = "../tests/integration/synthetic.rs"]
mod synthetic;

use campaign::model::case::{Dtype, Variant};
use campaign::report::summary::Analysis;
use campaign::report::{render_all, ReportOptions};
use synthetic::{result_set, Spec, StackModel};

fn main() {
    let spec = Spec {
        stacks: (0..12)
            .map(|i| StackModel {
                name: format!("stack{i:02}"),
                overhead_s: 5e-6 * f64::from(i + 1),
                bandwidth: 1e9 * f64::from(i + 1),
            })
            .collect(),
        variants: vec![Variant::Mesh, Variant::Ring, Variant::Twophase],
        ps: vec![2, 4, 8, 16, 32],
        counts: (8..22).map(|k| 1u64 << k).collect(),
        dtypes: vec![Dtype::Fp32, Dtype::Fp16],
        core_nums: vec![1, 2, 4, 8],
        warmup: 1,
        timed: 50,
        noise: 0.1,
        seed: 1,
        fail_every: 97,
        detail: true,
    };
    let rs = result_set(&spec);
    let samples: usize = rs.runs.iter().map(|r| r.samples.len()).sum();
    println!("{} runs, {} samples", rs.runs.len(), samples);
    let opts = ReportOptions {
        baseline: Some("stack00".into()),
        ..ReportOptions::default()
    };
    let t = Instant::now();
    let a = Analysis::new(&rs, opts.baseline.as_deref(), opts.bootstrap);
    println!(
        "summarize alone: {:.2} s ({} paired, {} fits)",
        t.elapsed().as_secs_f64(),
        a.paired.len(),
        a.fits.len()
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let t = Instant::now();
    let out = render_all(&rs, &opts, dir.path()).expect("render");
    println!(
        "summarize + figures + report: {:.2} s ({} figures, report {} KiB)",
        t.elapsed().as_secs_f64(),
        out.figures.len(),
        std::fs::metadata(&out.summary)
            .map(|m| m.len() / 1024)
            .unwrap_or(0)
    );
}
