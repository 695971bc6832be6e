//! End-to-end tests of the summarize → plot → report step and of `campaign report`/`compare`.

use std::path::Path;

use campaign::analysis::compare::{compare, to_markdown, Change};
use campaign::analysis::stats::Bootstrap;
use campaign::model::results::ResultSet;

use crate::synthetic::{result_set, Spec};
use campaign::report::{render_all, ReportOptions};

/// Count pixels in a rectangle that differ from the background (the top-left pixel).
fn ink(png: &Path, x0: u32, y0: u32, w: u32, h: u32) -> usize {
    let img = image::open(png)
        .expect("figure decodes as an image")
        .to_rgb8();
    let bg = *img.get_pixel(0, 0);
    let mut n = 0;
    for y in y0..(y0 + h).min(img.height()) {
        for x in x0..(x0 + w).min(img.width()) {
            if *img.get_pixel(x, y) != bg {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn report_and_figures_are_written_with_text() {
    let dir = crate::util::tempdir();
    let mut spec = Spec::small();
    spec.detail = true;
    spec.fail_every = 7;
    spec.core_nums = vec![1, 2, 4, 8];
    // Three repeats: a paired verdict needs them (one repeat gives "no clear difference").
    let rs = repeated(&result_set(&spec), &[1.0, 1.02, 0.99]);
    let opts = ReportOptions {
        baseline: Some("mpi".into()),
        ..ReportOptions::default()
    };
    let out = render_all(&rs, &opts, dir.path()).unwrap();
    let md = std::fs::read_to_string(dir.path().join("reports/summary.md")).unwrap();
    assert_eq!(out.summary, dir.path().join("reports/summary.md"));
    for name in campaign::report::figures::ALL {
        let png = dir.path().join(format!("figures/{name}.png"));
        let svg = dir.path().join(format!("figures/{name}.svg"));
        assert!(
            png.is_file() && svg.is_file(),
            "{name} not drawn: {:?}",
            out.skipped_figures
        );
        let img = image::open(&png).unwrap();
        // The title band must hold text pixels, not only background.
        assert!(
            ink(&png, 0, 0, img.width(), 40) > 200,
            "{name}: no title text"
        );
        assert!(
            std::fs::read_to_string(&svg).unwrap().contains("<text"),
            "{name}"
        );
        assert!(
            md.contains(&format!("](../figures/{name}.png)")),
            "{name} not embedded"
        );
    }
    assert!(md.contains("## Failures"));
    assert!(md.contains("golden mismatch"));
    assert!(md.contains("faster than mpi"), "{md}");
    assert!(!md.contains("0.0000"));
    if let Ok(keep) = std::env::var("REPORT_TEST_KEEP") {
        let _ = std::fs::remove_dir_all(&keep);
        std::fs::rename(dir.path(), keep).unwrap();
    }
}

/// The text elements of an SVG as (content, the markup before the element).
pub(crate) fn svg_texts(svg: &str) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(start) = svg[at..].find("<text").map(|i| at + i) {
        let Some(open_end) = svg[start..].find('>').map(|i| start + i + 1) else {
            break;
        };
        let Some(close) = svg[open_end..].find("</text>").map(|i| open_end + i) else {
            break;
        };
        out.push((svg[open_end..close].trim().to_string(), &svg[..start]));
        at = close;
    }
    out
}

/// The colour of the legend sample drawn just before the legend text `label`: the stroke of a
/// line sample or the fill of a box sample.
pub(crate) fn legend_color(svg: &str, label: &str) -> String {
    let (_, before) = svg_texts(svg)
        .into_iter()
        .find(|(t, _)| t == label)
        .unwrap_or_else(|| panic!("no legend entry `{label}`"));
    let sample = before
        .rfind("<polyline")
        .max(before.rfind("<rect"))
        .map(|i| &before[i..])
        .expect("a legend sample before the label");
    let attr = if sample.starts_with("<rect") {
        " fill=\""
    } else {
        " stroke=\""
    };
    let value = sample.split(attr).nth(1).expect("a colour attribute");
    value.split('"').next().unwrap().to_string()
}

/// Log axes are ticked at 1-2-5 per decade and powers of two with units, and a (stack,
/// variant) has the same colour in the scaling, paired-ratio and wall-vs-device figures.
#[test]
fn figures_tick_log_axes_in_human_units_and_keep_one_colour_per_stack_variant() {
    let dir = crate::util::tempdir();
    let mut spec = Spec::small();
    spec.detail = true;
    let rs = result_set(&spec);
    let opts = ReportOptions {
        baseline: Some("mpi".into()),
        ..ReportOptions::default()
    };
    render_all(&rs, &opts, dir.path()).unwrap();
    let svg = |name: &str| {
        std::fs::read_to_string(dir.path().join(format!("figures/{name}.svg")))
            .unwrap_or_else(|e| panic!("{name}.svg: {e}"))
    };
    let texts =
        |name: &str| -> Vec<String> { svg_texts(&svg(name)).into_iter().map(|(t, _)| t).collect() };
    let has = |name: &str, want: &[&str]| {
        let got = texts(name);
        for w in want {
            assert!(
                got.iter().any(|t| t == w),
                "{name}: no tick `{w}` in {got:?}"
            );
        }
        got
    };
    // Synthetic times run from about 9 µs (1 KiB) to 3 ms (4 MiB): 1-2-5 ticks in µs and ms.
    let scaling = has(
        "strong_scaling_t_total",
        &["10 µs", "20 µs", "1 ms", "2 ms"],
    );
    // No tick at a round log value (what plotters' own ticks of log10(t) gave: 25.1 µs …).
    for t in &scaling {
        if let Some(v) = t.strip_suffix(" µs").or(t.strip_suffix(" ms")) {
            let v: f64 = v.parse().unwrap_or_else(|_| panic!("tick `{t}`"));
            let mantissa = v / 10f64.powf(v.log10().floor());
            assert!(
                [1.0, 2.0, 5.0].iter().any(|m| (mantissa - m).abs() < 1e-9),
                "tick `{t}` is not 1, 2 or 5 times a power of ten"
            );
        }
    }
    // P is ticked where it was measured, and only there.
    assert!(scaling.iter().any(|t| t == "8"));
    assert!(!scaling.iter().any(|t| t == "3" || t == "6"));
    has(
        "bw_model_fit",
        &["1 KiB", "4 KiB", "1 MiB", "4 MiB", "10 µs", "1 ms"],
    );
    has("message_size_bw", &["1 KiB", "16 KiB", "256 KiB", "4 MiB"]);
    has("wall_vs_device", &["10 µs", "100 µs", "1 ms"]);
    // One colour per (stack, variant), whichever figure shows it.
    let pairs = ["host mesh", "host ring"];
    for pair in pairs {
        let c = legend_color(&svg("strong_scaling_t_total"), pair);
        assert_eq!(legend_color(&svg("paired_stack_ratio"), pair), c, "{pair}");
        assert_eq!(legend_color(&svg("wall_vs_device"), pair), c, "{pair}");
        assert_eq!(legend_color(&svg("message_size_bw"), pair), c, "{pair}");
    }
    for pair in ["mpi mesh", "mpi ring"] {
        let c = legend_color(&svg("strong_scaling_t_total"), pair);
        assert_eq!(legend_color(&svg("wall_vs_device"), pair), c, "{pair}");
    }
    let mut all: Vec<String> = ["host mesh", "host ring", "mpi mesh", "mpi ring"]
        .iter()
        .map(|p| legend_color(&svg("wall_vs_device"), p))
        .collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 4, "colours must tell the pairs apart: {all:?}");
    // The phase breakdown labels every bar with its full `stack case_id`.
    let phases = texts("phase_breakdown");
    for r in &rs.runs {
        let label = format!("{} {}", r.stack, r.case_id);
        assert!(phases.contains(&label), "no bar label `{label}`");
    }
}

/// A copy of the old-harness fixture in a temp dir (reports are written into the run dir).
fn seed_copy(parent: &Path, name: &str) -> std::path::PathBuf {
    let src = crate::util::root().join("tests/integration/fixtures/report/seed_run");
    let dst = parent.join(name);
    copy_dir(&src, &dst);
    dst
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), to).unwrap();
        }
    }
}

/// Rewrite every timing.json of a run dir with `f(execute_s)`.
fn rewrite_times(run: &Path, f: impl Fn(usize, f64) -> f64) {
    for case in std::fs::read_dir(run.join("cases")).unwrap() {
        for stack in std::fs::read_dir(case.unwrap().path()).unwrap() {
            let p = stack.unwrap().path().join("timing.json");
            let mut v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            for (i, s) in v.as_array_mut().unwrap().iter_mut().enumerate() {
                let t = s["execute_s"].as_f64().unwrap();
                s["execute_s"] = serde_json::json!(f(i, t));
            }
            std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        }
    }
}

#[test]
fn report_reads_an_old_harness_run_dir() {
    let tmp = crate::util::tempdir();
    let run = seed_copy(tmp.path(), "run_20250301_101500");
    let out = crate::util::run(&["report", run.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::util::stderr(&out));
    let md = std::fs::read_to_string(run.join("reports/summary.md")).unwrap();
    // The failed run is listed with its reason and bundle, and is not averaged in as a zero.
    assert!(md.contains("| `mesh_p2_count65536_fp32_a2a3_d0-1` | simpler | fail | [allreduce] golden check FAILED | `cases/mesh_p2_count65536_fp32_a2a3_d0-1/simpler` |"), "{md}");
    assert!(md.contains("old Python harness"));
    // One repeat of 5 timed rounds per stack: the ratio, but no CI and no verdict.
    assert!(
        md.contains("| — | not judged: too few rounds (n=5 timed rounds in 1 repeat;"),
        "{md}"
    );
    assert!(!md.contains("slower than hccl"), "{md}");
    assert!(run.join("figures/bw_model_fit.png").is_file());
    // No P sweep in this run dir: the scaling figures are skipped, with the reason printed.
    assert!(!run.join("figures/strong_scaling_t_total.png").exists());
    assert!(crate::util::stdout(&out).contains("strong_scaling_t_total not drawn"));
}

#[test]
fn template_with_undefined_variable_fails_naming_template_and_line() {
    let tmp = crate::util::tempdir();
    let run = seed_copy(tmp.path(), "run");
    let tpl = tmp.path().join("mine.md.j2");
    std::fs::write(&tpl, "# {{ title }}\n\n{{ no_such_thing }}\n").unwrap();
    let out = crate::util::run(&[
        "report",
        run.to_str().unwrap(),
        "--template",
        tpl.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = crate::util::stderr(&out);
    assert!(err.contains("mine.md.j2:3"), "{err}");
    assert!(err.contains("undefined"), "{err}");
    // A good custom template replaces the default.
    std::fs::write(
        &tpl,
        "runs={{ totals.runs }} failed={{ failures | length }}\n",
    )
    .unwrap();
    let out = crate::util::run(&[
        "report",
        run.to_str().unwrap(),
        "--template",
        tpl.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::util::stderr(&out));
    let md = std::fs::read_to_string(run.join("reports/summary.md")).unwrap();
    assert_eq!(md, "runs=6 failed=1\n");
}

/// Old-harness run dirs hold one repeat of 5 timed rounds: too few for an interval, so even a
/// doubling is shown as a number with the reason, never as a verdict (exit 0). Verdicts with
/// repeats are tested in `honest` and below.
#[test]
fn compare_of_single_short_repeats_shows_numbers_without_a_verdict() {
    let tmp = crate::util::tempdir();
    let a = seed_copy(tmp.path(), "a");
    let slow = seed_copy(tmp.path(), "slow");
    let same = seed_copy(tmp.path(), "same");
    rewrite_times(&slow, |_, t| t * 2.0);
    // Same distribution, new draws: ±1 % jitter, far inside the 5 % band.
    rewrite_times(&same, |i, t| t * if i % 2 == 0 { 1.01 } else { 0.99 });
    let run = |b: &Path, fmt: &str| {
        crate::util::run(&[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--format",
            fmt,
        ])
    };
    let out = run(&slow, "md");
    // Nothing could be judged (one short repeat a side): exit 7, never a pass.
    assert_eq!(out.status.code(), Some(7), "{}", crate::util::stdout(&out));
    let text = crate::util::stdout(&out);
    assert!(
        text.contains("| `mesh_p2_count256_fp32_a2a3_d0-1` | hccl |"),
        "{text}"
    );
    assert!(
        text.contains("**judged 0 of 6 rows**: nothing was checked"),
        "{text}"
    );
    assert!(
        text.contains(
            "not judged: too few rounds (n=5 timed rounds in 1 repeat; an interval needs >= 10"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "0 slower, 0 faster, 0 equivalent, 0 undecided, 5 not judged, 1 not comparable"
        ),
        "{text}"
    );
    let out = run(&same, "csv");
    assert_eq!(out.status.code(), Some(7), "{}", crate::util::stdout(&out));
    let csv = crate::util::stdout(&out);
    assert!(
        csv.starts_with(
            "case_id,stack,status_a,status_b,repeats_a,repeats_b,rounds_a,rounds_b,median_a_s"
        ),
        "{csv}"
    );
    assert_eq!(csv.matches(",not judged,").count(), 5, "{csv}");
    assert_eq!(csv.matches(",not comparable,").count(), 1, "{csv}");
    let bad = crate::util::run(&[
        "compare",
        a.to_str().unwrap(),
        a.to_str().unwrap(),
        "--threshold",
        "lots",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    let bad = crate::util::run(&[
        "compare",
        a.to_str().unwrap(),
        a.to_str().unwrap(),
        "--equivalence",
        "lots",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        crate::util::stderr(&bad).contains("--equivalence `lots`"),
        "{}",
        crate::util::stderr(&bad)
    );
    // The markdown names the margin it judged equivalence by.
    let md = crate::util::run(&[
        "compare",
        a.to_str().unwrap(),
        a.to_str().unwrap(),
        "--equivalence",
        "2%",
    ]);
    assert!(
        crate::util::stdout(&md).contains("Equivalent: the interval inside ±2.0 %"),
        "{}",
        crate::util::stdout(&md)
    );
}

/// Snapshot of the default report on a fixed result set.
/// To regenerate after an intended change:
/// `UPDATE_SNAPSHOTS=1 cargo test --test integration report::report_snapshot`
/// then review the diff of tests/integration/fixtures/report/snapshot_summary.md.
#[test]
fn report_snapshot() {
    let dir = crate::util::tempdir();
    let mut spec = Spec::small();
    spec.variants = vec![campaign::model::case::Variant::Mesh];
    spec.ps = vec![2, 4];
    spec.counts = vec![256, 4096, 65536];
    spec.fail_every = 5;
    spec.timed = 7;
    let rs = result_set(&spec);
    let opts = ReportOptions {
        baseline: Some("mpi".into()),
        figures: vec!["paired_stack_ratio".into(), "wall_vs_device".into()],
        ..ReportOptions::default()
    };
    render_all(&rs, &opts, dir.path()).unwrap();
    let got = std::fs::read_to_string(dir.path().join("reports/summary.md")).unwrap();
    let expected_path =
        crate::util::root().join("tests/integration/fixtures/report/snapshot_summary.md");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&expected_path, &got).unwrap();
    }
    let expected =
        std::fs::read_to_string(&expected_path).expect("snapshot file (see the test comment)");
    assert_eq!(
        got, expected,
        "report changed; see the test comment to regenerate"
    );
}

fn scaled(rs: &ResultSet, factor: f64) -> ResultSet {
    let mut out = rs.clone();
    for r in &mut out.runs {
        for s in &mut r.samples {
            s.execute_s = s.execute_s.map(|t| t * factor);
        }
    }
    out
}

/// Each run of `rs` repeated `levels.len()` times (run ids `<case_id>~r<n>`), repeat n at
/// `levels[n - 1]` × its times: a campaign with `[run] repeats`.
fn repeated(rs: &ResultSet, levels: &[f64]) -> ResultSet {
    let mut out = rs.clone();
    out.runs = rs
        .runs
        .iter()
        .flat_map(|r| {
            levels.iter().enumerate().map(move |(i, level)| {
                let mut r = r.clone();
                if i > 0 {
                    r.case_id = format!("{}~r{}", r.case_id, i + 1);
                }
                for s in &mut r.samples {
                    s.execute_s = s.execute_s.map(|t| t * level);
                }
                r
            })
        })
        .collect();
    out
}

/// The report's paired verdicts ask for the evidence `compare` asks for: host is about twice as
/// fast as mpi in the synthetic model, but one repeat of each says so only as a ratio.
#[test]
fn paired_verdicts_need_three_repeats_and_separated_repeats() {
    let verdicts = |rs: &ResultSet| -> Vec<(String, String)> {
        let dir = crate::util::tempdir();
        let opts = ReportOptions {
            baseline: Some("mpi".into()),
            figures: vec![],
            ..ReportOptions::default()
        };
        render_all(rs, &opts, dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join("reports/context.json")).unwrap();
        let ctx: serde_json::Value = serde_json::from_str(&text).unwrap();
        ctx["paired"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["verdict"].as_str().unwrap().to_string(),
                    p["label"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let mut spec = Spec::small();
    spec.timed = 30;
    let one = result_set(&spec);
    let once = verdicts(&one);
    assert_eq!(once.len(), 24);
    for (v, label) in &once {
        assert_eq!(v, "not_judged", "{label}");
        assert!(
            label.starts_with("not judged: one repeat (run-to-run variance is not measured"),
            "{label}"
        );
    }
    let three = verdicts(&repeated(&one, &[1.0, 1.02, 0.99]));
    assert!(three.iter().all(|(v, _)| v == "faster"), "{three:?}");
    assert!(three[0].1.contains("× faster than mpi"), "{three:?}");
    // Repeats that wander by ±40 % between runs (both stacks, in a different order): host's
    // repeats and mpi's overlap, so no verdict although the pooled ratio is about 0.6.
    let mut wander = repeated(&one, &[1.0, 1.4, 0.6]);
    for r in wander.runs.iter_mut().filter(|r| r.stack == "host") {
        let level = if r.case_id.ends_with("~r2") {
            0.6 / 1.4
        } else if r.case_id.ends_with("~r3") {
            1.4 / 0.6
        } else {
            1.6
        };
        for s in &mut r.samples {
            s.execute_s = s.execute_s.map(|t| t * level);
        }
    }
    let wandering = verdicts(&wander);
    assert!(
        wandering.iter().all(|(v, l)| (v == "no_clear_difference"
            && (l.contains("crosses the ±5.0 % noise band") || l.contains("the repeats overlap")))
            || (v == "not_judged"
                && l.starts_with(
                    "not judged: too few repeats for their spread (3 repeat(s) × 30"
                ))),
        "{wandering:?}"
    );
}

#[test]
fn doubled_times_are_slower_halved_are_faster() {
    let a = repeated(&result_set(&Spec::small()), &[1.0, 1.03, 0.98]);
    let boot = Bootstrap::default();
    let slow = compare(&a, &scaled(&a, 2.0), 0.05, &boot);
    assert!(slow.regressed());
    assert!(slow.rows.iter().all(|r| r.verdict == Change::Slower));
    assert!((slow.rows[0].change.unwrap() - 1.0).abs() < 1e-9);
    // Every row of both stacks moved the same way: the table says the campaign moved as a whole.
    let md = to_markdown(&slow, "a", "b");
    for stack in ["host", "mpi"] {
        assert!(
            md.contains(&format!(
                "Whole-campaign shift: 24 of 24 rows of `{stack}` moved slower beyond ±5.0 % (median change +100.0 %)"
            )),
            "{md}"
        );
    }
    let fast = compare(&a, &scaled(&a, 0.5), 0.05, &boot);
    assert!(!fast.regressed());
    assert!(fast.rows.iter().all(|r| r.verdict == Change::Faster));
}

#[test]
fn same_distribution_is_no_change() {
    let a = repeated(&result_set(&Spec::small()), &[1.0, 1.01, 0.99]);
    let b = repeated(
        &result_set(&Spec {
            seed: 43,
            ..Spec::small()
        }),
        &[0.99, 1.0, 1.01],
    );
    let c = compare(&a, &b, 0.05, &Bootstrap::default());
    assert!(!c.regressed());
    assert!(!to_markdown(&c, "a", "b").contains("Whole-campaign shift"));
    // Three repeats that agree within ±1 %: no verdict either way. (Whether the interval of
    // so few repeats fits inside ±5 % — "no change" — or crosses it is the evidence's call.)
    assert!(
        c.rows
            .iter()
            .all(|r| matches!(r.verdict, Change::NoChange | Change::NoClearDifference)),
        "{}",
        to_markdown(&c, "a", "b")
    );
    // Ten repeats pin the interval inside the band: no change.
    let levels: Vec<f64> = (0..10).map(|i| 1.0 + 0.002 * (i % 5) as f64).collect();
    let many = compare(
        &repeated(&result_set(&Spec::small()), &levels),
        &repeated(
            &result_set(&Spec {
                seed: 43,
                ..Spec::small()
            }),
            &levels,
        ),
        0.05,
        &Bootstrap::default(),
    );
    assert!(
        many.rows.iter().all(|r| r.verdict == Change::NoChange),
        "{}",
        to_markdown(&many, "a", "b")
    );
    // One repeat each: the same numbers, but a verdict would claim what one run cannot know.
    let one = compare(
        &result_set(&Spec::small()),
        &scaled(&result_set(&Spec::small()), 2.0),
        0.05,
        &Bootstrap::default(),
    );
    assert!(!one.regressed());
    assert!(one
        .rows
        .iter()
        .all(|r| matches!(r.verdict, Change::NoClearDifference | Change::NotJudged)));
}

/// A 1,000-run campaign's HTML page is one file small enough to mail: every figure and script
/// inside it, nothing fetched, the failures' log tails included (docs/performance.md says how
/// big it is).
#[test]
fn the_html_page_of_a_thousand_runs_stays_small_enough_to_mail() {
    let dir = crate::util::tempdir();
    let mut spec = Spec::small();
    spec.ps = vec![2, 4, 8, 16, 32];
    spec.counts = (0..25).map(|i| 64u64 << i).collect();
    spec.dtypes = vec![
        campaign::model::case::Dtype::Fp32,
        campaign::model::case::Dtype::Fp16,
    ];
    spec.fail_every = 10;
    spec.detail = true;
    let rs = result_set(&spec);
    assert_eq!(rs.runs.len(), 1000);
    for r in rs
        .runs
        .iter()
        .filter(|r| r.status != campaign::model::results::RunStatus::Pass)
    {
        let bundle = dir.path().join(&r.bundle);
        std::fs::create_dir_all(&bundle).unwrap();
        let log: String = (0..400)
            .map(|i| format!("round {i}: a line of log output\n"))
            .collect();
        std::fs::write(bundle.join("run.log"), log).unwrap();
    }
    let opts = ReportOptions {
        baseline: Some("mpi".into()),
        ..ReportOptions::default()
    };
    let out = render_all(&rs, &opts, dir.path()).unwrap();
    let page = std::fs::read_to_string(&out.html).unwrap();
    let size = page.len();
    let bytes_of = |suffix: &str| -> u64 {
        std::fs::read_dir(dir.path().join("figures"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(suffix))
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum()
    };
    let (svg, hover) = (bytes_of(".svg"), bytes_of(".hover.json"));
    eprintln!(
        "index.html of 1000 runs: {size} bytes ({svg} of SVG, {hover} of hover values, \
         {} figures)",
        out.figures.len()
    );
    // Nothing is fetched: no external source, stylesheet or script.
    for bad in ["src=\"http", "href=\"http", "<link ", "@import", "src=\"//"] {
        assert!(!page.contains(bad), "the page fetches something: {bad}");
    }
    // Every row, every failure's tail, every figure inline.
    assert_eq!(page.matches("<tr class=\"row-").count(), 1000);
    assert_eq!(page.matches("<pre class=\"log\">").count(), 100);
    assert_eq!(
        page.matches("<figure class=\"chart\"").count(),
        out.figures.len()
    );
    assert!(size < 12 * 1024 * 1024, "{size} bytes is too big to mail");
    if let Ok(keep) = std::env::var("REPORT_TEST_KEEP") {
        let _ = std::fs::remove_dir_all(&keep);
        std::fs::rename(dir.path(), keep).unwrap();
    }
}

/// The issue's loaded-machine report: three repeats of each stack, one host repeat starved of
/// CPU (1500× slower, `cpu_contention` 0.7) and one oversubscribed, contended mpi repeat. The
/// cell is the median of the repeats' medians (µs, not the ms a mean would give), both cells are
/// marked, the note counts every contended run (the oversubscribed one too) of all runs, and the
/// pair is "not judged: contended", with no meaningless interval.
#[test]
fn one_starved_repeat_moves_no_cell_and_every_distorted_run_is_marked_and_counted() {
    let dir = crate::util::tempdir();
    let mut spec = Spec::small();
    spec.variants = vec![campaign::model::case::Variant::Mesh];
    spec.ps = vec![2];
    spec.counts = vec![256];
    spec.timed = 30;
    let one = result_set(&spec);
    let mut rs = one.clone();
    rs.runs.clear();
    for repeat in 1..=3 {
        for r in &one.runs {
            let mut r = r.clone();
            if repeat > 1 {
                r.case_id = format!("{}~r{repeat}", r.case_id);
            }
            if r.stack == "host" && repeat == 3 {
                for s in &mut r.samples {
                    s.execute_s = s.execute_s.map(|t| t * 1500.0);
                }
                r.cpu_contention = Some(0.7);
            }
            if r.stack == "mpi" && repeat == 2 {
                r.cpus = Some(vec![0]);
                r.cpu_contention = Some(0.3);
            }
            rs.runs.push(r);
        }
    }
    let opts = ReportOptions {
        baseline: Some("mpi".into()),
        figures: vec!["message_size_bw".into(), "paired_stack_ratio".into()],
        ..ReportOptions::default()
    };
    render_all(&rs, &opts, dir.path()).unwrap();
    let md = std::fs::read_to_string(dir.path().join("reports/summary.md")).unwrap();
    // The paired-ratio figure marks the distorted case on its axis and says why in its caption.
    let svg = std::fs::read_to_string(dir.path().join("figures/paired_stack_ratio.svg")).unwrap();
    assert!(
        svg.contains("mesh p2 count256 fp32 ⚠"),
        "no ⚠ on the distorted bar's label"
    );
    assert!(
        md.contains("Cases marked ⚠ had runs the machine distorted"),
        "{md}"
    );
    assert!(
        md.contains("## Median time per case (median of the repeats' medians)"),
        "{md}"
    );
    let row = md
        .lines()
        .find(|l| l.starts_with("| `mesh_p2_count256_fp32_host_d0-1` | 1 KiB |"))
        .expect("the case's row");
    let cells: Vec<&str> = row.split(" | ").collect();
    // Columns: case, bytes, mpi, host.
    assert!(
        cells[3].contains(" µs [") && !cells[3].contains(" ms ["),
        "{row}"
    );
    assert!(cells[3].ends_with("(3×30) ⚠ contended |"), "{row}");
    assert!(
        cells[2].ends_with("(3×30) ⚠ oversubscribed ⚠ contended"),
        "{row}"
    );
    let contended = rs
        .runs
        .iter()
        .filter(|r| r.cpu_contention > Some(0.1))
        .count();
    assert_eq!(contended, 2);
    assert!(
        md.contains(
            "⚠ 2 of 6 run(s) (1 of them also oversubscribed) had no CPU for more than 10 %"
        ),
        "{md}"
    );
    assert!(
        md.contains("⚠ 1 of 6 run(s) had more ranks than the CPUs"),
        "{md}"
    );
    let paired = md
        .lines()
        .find(|l| l.starts_with("| `mesh_p2_count256_fp32_host_d0-1` | host |"))
        .expect("the paired row");
    assert!(
        paired.contains("| not judged: oversubscribed (A):"),
        "{paired}"
    );
    assert!(
        !paired.contains("e+") && !paired.contains("inf"),
        "{paired}"
    );
}

/// Runs whose ranks spanned two nodes are marked inter-node in the case table and drawn and
/// fitted as series of their own, never pooled with the same case on one node (issue 30 item 3).
#[test]
fn inter_node_cases_are_marked_and_drawn_apart_from_one_node() {
    let dir = crate::util::tempdir();
    let mut spec = Spec::small();
    spec.variants = vec![campaign::model::case::Variant::Mesh];
    spec.ps = vec![2];
    let one = result_set(&spec);
    let mut rs = one.clone();
    for r in &one.runs {
        let mut r = r.clone();
        r.case.nodes = 2;
        r.case.ranks_per_node = 1;
        r.case_id = format!("{}_n2", r.case_id);
        r.rank_nodes = Some(vec!["n1".into(), "n2".into()]);
        // Ten times slower across nodes: pooled, the one-node line would move.
        for s in &mut r.samples {
            s.execute_s = s.execute_s.map(|t| t * 10.0);
        }
        rs.runs.push(r);
    }
    let opts = ReportOptions {
        figures: vec!["message_size_bw".into(), "bw_model_fit".into()],
        ..ReportOptions::default()
    };
    render_all(&rs, &opts, dir.path()).unwrap();
    let md = std::fs::read_to_string(dir.path().join("reports/summary.md")).unwrap();
    assert!(
        md.contains("A case marked `inter-node NxK` ran its ranks on N"),
        "{md}"
    );
    let row = |id: &str| {
        md.lines()
            .find(|l| l.starts_with(&format!("| `{id}`")))
            .unwrap_or_else(|| panic!("no row of {id}: {md}"))
            .to_string()
    };
    let base = "mesh_p2_count256_fp32_host_d0-1";
    assert!(
        row(&format!("{base}_n2"))
            .starts_with(&format!("| `{base}_n2` (inter-node 2x1) | 1 KiB |")),
        "{}",
        row(&format!("{base}_n2"))
    );
    assert!(
        row(base).starts_with(&format!("| `{base}` | 1 KiB |")),
        "{}",
        row(base)
    );
    // One series per layout in the figures, labelled so.
    let svg = std::fs::read_to_string(dir.path().join("figures/message_size_bw.svg")).unwrap();
    let labels: Vec<String> = svg_texts(&svg).into_iter().map(|(t, _)| t).collect();
    assert!(
        labels.iter().any(|t| t.contains("mesh inter-node 2x1")),
        "{labels:?}"
    );
    assert!(labels.iter().any(|t| t.ends_with("mesh")), "{labels:?}");
    // The fits: one per layout, each over its own four sizes.
    let fits: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| host | mesh"))
        .collect();
    assert_eq!(fits.len(), 2, "{md}");
    assert!(
        fits.iter()
            .any(|l| l.starts_with("| host | mesh inter-node 2x1 |")),
        "{fits:?}"
    );
}

/// Two stacks of fixed, distinct times (so the report pairs them and draws intervals).
const TWO_STACKS: &str = r#"[campaign]
name = "again"
[case]
platform = "host"
[axes]
variant = ["mesh"]
p = [2]
count = [64, 4096]
stacks = ["a", "b"]
[rounds]
warmup = 1
timed = 12
[run]
repeats = 1
[stacks.a]
command = ["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13; do echo \"CAMPAIGN_SAMPLE {\\\"execute_s\\\":0.00$i,\\\"ok\\\":true}\"; done; echo 'CAMPAIGN_DONE {\"correctness\":\"pass\"}'"]
resource = "none"
[stacks.b]
command = ["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13; do echo \"CAMPAIGN_SAMPLE {\\\"execute_s\\\":0.02$i,\\\"ok\\\":true}\"; done; echo 'CAMPAIGN_DONE {\"correctness\":\"pass\"}'"]
resource = "none"
"#;

/// (inode, mtime) of each file, to tell a file left alone from one written again.
fn identities(dir: &Path, names: &[&str]) -> Vec<(u64, i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    names
        .iter()
        .map(|n| {
            let m = std::fs::metadata(dir.join(n)).unwrap_or_else(|e| panic!("{n}: {e}"));
            (m.ino(), m.mtime(), m.mtime_nsec())
        })
        .collect()
}

fn report_of(cwd: &Path, dir: &Path) {
    let out = crate::util::run_in(cwd, &["report", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::util::stderr(&out));
}

#[test]
fn a_report_after_run_or_again_leaves_every_file_alone_and_a_changed_bundle_rewrites_them() {
    const RESULTS: &[&str] = &["results.json", "results.csv", "samples.csv"];
    let tmp = crate::util::tempdir();
    let (out, dir) = crate::honest::run_plan(tmp.path(), "again", TWO_STACKS, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::util::stderr(&out));
    // What `run` wrote is what `campaign report` would: the first report, given the run dir by
    // another name than `run` used (relative to the cwd), renders and rewrites nothing.
    let files = identities(&dir, RESULTS);
    let memo = identities(&dir, &["reports/.bootstrap-memo"]);
    const REPORT: &[&str] = &[
        "reports/summary.md",
        "reports/index.html",
        "reports/context.json",
    ];
    let rendered = identities(&dir, REPORT);
    let read = |n: &str| std::fs::read(dir.join(n)).unwrap();
    let (summary, context) = (read("reports/summary.md"), read("reports/context.json"));
    let text = String::from_utf8(summary.clone()).unwrap();
    // Intervals were drawn (and remembered): each cell carries one.
    assert!(
        text.contains(" ms [") && text.contains("bootstrap CI"),
        "{text}"
    );
    let relative = dir.strip_prefix(tmp.path()).unwrap();
    for _ in 0..2 {
        let out = crate::util::run_in(tmp.path(), &["report", relative.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", crate::util::stderr(&out));
        // The files it names are the run dir's, as named on this command line.
        let said = crate::util::stdout(&out);
        let html = relative.join("reports/index.html");
        assert!(
            said.contains(&format!("html: {}", html.display())),
            "{said}"
        );
        assert_eq!(
            identities(&dir, RESULTS),
            files,
            "unchanged results were rewritten"
        );
        assert_eq!(identities(&dir, &["reports/.bootstrap-memo"]), memo);
        assert_eq!(
            identities(&dir, REPORT),
            rendered,
            "an unchanged report was rendered again"
        );
    }
    assert_eq!(read("reports/summary.md"), summary);
    assert_eq!(read("reports/context.json"), context);

    // One round of one bundle changed: every results file is written again and says so.
    let cases = std::fs::read_dir(dir.join("cases")).unwrap();
    let case = cases.map(|e| e.unwrap().path()).min().unwrap();
    let timing = case.join("a/timing.json");
    let old = std::fs::read_to_string(&timing).unwrap();
    let new = old.replacen("\"execute_s\": 0.003", "\"execute_s\": 0.0035", 1);
    assert_ne!(new, old);
    std::fs::write(&timing, new).unwrap();
    report_of(tmp.path(), &dir);
    let rewritten = identities(&dir, RESULTS);
    for (i, name) in RESULTS.iter().enumerate() {
        assert_ne!(rewritten[i], files[i], "{name} was not rewritten");
    }
    let samples = String::from_utf8(read("samples.csv")).unwrap();
    assert!(samples.contains(",0.0035,"), "{samples}");
    assert_ne!(read("reports/context.json"), context);

    // A hand edit of a results file (same length) is undone by the next report.
    let csv = String::from_utf8(read("results.csv")).unwrap();
    std::fs::write(dir.join("results.csv"), csv.replacen("mesh", "hsem", 1)).unwrap();
    report_of(tmp.path(), &dir);
    assert_eq!(String::from_utf8(read("results.csv")).unwrap(), csv);
}

/// A campaign over several ops (issue 44, item 5): one bus bandwidth figure per op, each
/// captioned with that op's nccl-tests factor and shown in the op's own section; in every
/// figure's legend no colour twice, though one (stack, variant) runs at two dtypes.
#[test]
fn several_ops_get_a_section_and_a_bus_bandwidth_figure_each_with_its_own_factor() {
    use campaign::model::case::{Dtype, Op};
    let dir = crate::util::tempdir();
    let mut spec = Spec::small();
    spec.dtypes = vec![Dtype::Fp32, Dtype::Fp16];
    let rs = crate::synthetic::with_ops(&result_set(&spec), &Op::EVERY);
    render_all(&rs, &ReportOptions::default(), dir.path()).unwrap();
    let md = std::fs::read_to_string(dir.path().join("reports/summary.md")).unwrap();
    let html = std::fs::read_to_string(dir.path().join("reports/index.html")).unwrap();
    assert!(
        !dir.path().join("figures/message_size_bw.svg").exists(),
        "one figure per op, none of every op"
    );
    let factor = |op: Op| match op {
        Op::Allreduce => "2(P−1)/P",
        Op::Allgather | Op::ReduceScatter | Op::Alltoall => "(P−1)/P",
        Op::Broadcast | Op::Reduce => "1",
    };
    let mut figures = 0;
    for op in Op::EVERY {
        let name = format!("message_size_bw_{op}");
        let svg = std::fs::read_to_string(dir.path().join(format!("figures/{name}.svg")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        figures += 1;
        // Its section, its factor, its figure inside the section (not again under Figures).
        let section = md
            .split(&format!("\n### {op}\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("no section for {op}:\n{md}"));
        let section = &section[..section.find("\n### ").unwrap_or(section.len())];
        assert!(
            section.contains(&format!(
                "busbw = algbw × {}, nccl-tests' {op} factor",
                factor(op)
            )),
            "{op}: {section}"
        );
        assert!(
            section.contains(&format!("n / T · {}, {op}'s factor", factor(op))),
            "{op}'s caption gives its own factor: {section}"
        );
        assert!(
            section.contains(&format!("](../figures/{name}.png)")),
            "{section}"
        );
        assert_eq!(md.matches(&format!("](../figures/{name}.png)")).count(), 1);
        assert_eq!(
            html.matches(&format!("id=\"figure-{name}\"")).count(),
            1,
            "{name} once in the page"
        );
        // Legend: the series of this op only, each its own colour.
        let hover: Vec<serde_json::Value> = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(format!("figures/{name}.hover.json")))
                .unwrap(),
        )
        .unwrap();
        let mut series: Vec<String> = hover
            .iter()
            .map(|h| h["series"].as_str().unwrap().to_string())
            .collect();
        series.sort();
        series.dedup();
        // 2 stacks × 2 variants × 2 dtypes.
        assert_eq!(series.len(), 8, "{name}: {series:?}");
        let mut colours: Vec<String> = series.iter().map(|s| legend_color(&svg, s)).collect();
        colours.sort();
        colours.dedup();
        assert_eq!(
            colours.len(),
            series.len(),
            "{name}: a colour twice in {series:?}"
        );
        assert!(!svg.contains("more</text>"), "{name}: the legend is cut");
    }
    assert_eq!(figures, Op::EVERY.len());
}
