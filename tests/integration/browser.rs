//! The HTML pages opened in a real browser: Debian's Chromium, headless (`chromium
//! --headless`; `scripts/install-chromium.sh` installs it and `scripts/test.sh` runs that, so
//! without it these tests fail and say so, they never skip; `CAMPAIGN_CHROMIUM` names another
//! binary). No browser protocol of our own: each page is copied with two scripts of
//! `fixtures/browser/` put in — `capture.js` first (records every error, failed load and CSP
//! violation), `selftest.js` last (clicks headers, types in filters, points at figures,
//! toggles legends and writes what it saw as JSON into the DOM) — and Chromium's own
//! `--dump-dom` hands the DOM back. Screenshots (light and dark) and a print PDF of each page
//! are kept in `target/test-artifacts/browser/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::synthetic::{result_set, Spec};
use campaign::model::case::Dtype;
use campaign::model::results::RunStatus;
use campaign::report::{render_all, ReportOptions};

const CAPTURE: &str = include_str!("fixtures/browser/capture.js");
const SELFTEST: &str = include_str!("fixtures/browser/selftest.js");

/// However busy the machine: a page that takes longer than this is a hung browser.
const BROWSER_CAP: Duration = Duration::from_secs(240);

fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("CAMPAIGN_CHROMIUM") {
        return PathBuf::from(p);
    }
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("chromium"))
            .find(|p| p.is_file())
    });
    found.expect(
        "chromium not found on PATH: the HTML report's browser tests need Debian's chromium — \
         run scripts/install-chromium.sh (scripts/test.sh does)",
    )
}

/// `target/test-artifacts/browser/`, where screenshots and PDFs are kept.
pub fn artifacts() -> PathBuf {
    let dir = crate::util::root().join("target/test-artifacts/browser");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Run headless Chromium with `args` on `url`; its stdout. A fresh profile each time, so
/// tests running at once never share one.
fn browse(args: &[String], url: &str) -> String {
    let profile = crate::util::tempdir();
    let out = crate::util::tempdir();
    let stdout_file = out.path().join("stdout");
    let stderr_file = out.path().join("stderr");
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--allow-file-access-from-files",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_file).unwrap())
        .stderr(std::fs::File::create(&stderr_file).unwrap())
        .spawn()
        .expect("chromium starts");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > BROWSER_CAP {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium did not finish {url} within {BROWSER_CAP:?}: {}",
                std::fs::read_to_string(&stderr_file).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = std::fs::read_to_string(&stdout_file).unwrap_or_default();
    assert!(
        status.success(),
        "chromium failed on {url} ({status}): {}",
        std::fs::read_to_string(&stderr_file).unwrap_or_default()
    );
    stdout
}

fn url(page: &Path) -> String {
    format!("file://{}", std::path::absolute(page).unwrap().display())
}

/// What `selftest.js` saw on `page` (opened beside it, so its relative links stay right).
pub fn self_test(page: &Path, sort: &[&str], filter: &[(&str, &str)], dark: bool) -> Value {
    self_test_at(page, 1280, sort, filter, dark)
}

/// `self_test` in a window `width` pixels wide.
pub fn self_test_at(
    page: &Path,
    width: u32,
    sort: &[&str],
    filter: &[(&str, &str)],
    dark: bool,
) -> Value {
    let html = std::fs::read_to_string(page).unwrap();
    let config = serde_json::json!({"sort": sort, "filter": filter});
    let head = format!("<head>\n<script>{CAPTURE}</script>");
    let tail = format!(
        "<script type=\"application/json\" id=\"campaign-selftest-config\">{config}</script>\n\
         <script>{SELFTEST}</script>\n</body>"
    );
    assert!(html.contains("<head>") && html.contains("</body>"));
    let probed = html
        .replacen("<head>", &head, 1)
        .replacen("</body>", &tail, 1);
    let copy = page.with_file_name(format!(
        ".selftest-{}-{}.html",
        if dark { "dark" } else { "light" },
        page.file_stem().unwrap().to_string_lossy()
    ));
    std::fs::write(&copy, probed).unwrap();
    let mut args = vec![
        "--dump-dom".to_string(),
        format!("--window-size={width},900"),
    ];
    if dark {
        args.push("--force-dark-mode".into());
    }
    let dom = browse(&args, &url(&copy));
    let _ = std::fs::remove_file(&copy);
    let start = dom
        .rfind("<pre id=\"campaign-selftest\">")
        .unwrap_or_else(|| panic!("the self-test wrote nothing (a script error?): {dom:.2000}"));
    let body = &dom[start + "<pre id=\"campaign-selftest\">".len()..];
    let end = body.find("</pre>").unwrap();
    serde_json::from_str(&body[..end]).unwrap_or_else(|e| panic!("{e}: {}", &body[..end]))
}

/// A full-page screenshot of `page` into the artifacts folder (`<name>.png`), light or dark.
pub fn screenshot(page: &Path, name: &str, height: u32, dark: bool) -> PathBuf {
    let out = artifacts().join(format!("{name}.png"));
    let _ = std::fs::remove_file(&out);
    let mut args = vec![
        format!("--screenshot={}", out.display()),
        format!("--window-size=1280,{height}"),
    ];
    if dark {
        args.push("--force-dark-mode".into());
    }
    browse(&args, &url(page));
    assert!(out.is_file(), "no screenshot written for {name}");
    out
}

/// `page` printed to PDF into the artifacts folder (`<name>.pdf`); its page count.
pub fn print_pdf(page: &Path, name: &str) -> usize {
    let out = artifacts().join(format!("{name}.pdf"));
    let _ = std::fs::remove_file(&out);
    browse(
        &[
            format!("--print-to-pdf={}", out.display()),
            "--no-pdf-header-footer".into(),
        ],
        &url(page),
    );
    let bytes = std::fs::read(&out).expect("a PDF is written");
    assert!(bytes.starts_with(b"%PDF"), "not a PDF: {}", out.display());
    let text = String::from_utf8_lossy(&bytes);
    text.matches("/Type /Page").count() - text.matches("/Type /Pages").count()
}

/// The pixel size of a PNG and how many of its pixels differ from the top-left one.
fn png_ink(png: &Path) -> (u32, u32, usize) {
    let img = image::open(png).unwrap().to_rgb8();
    let bg = *img.get_pixel(0, 0);
    let ink = img.pixels().filter(|p| **p != bg).count();
    (img.width(), img.height(), ink)
}

/// Sort values in the order shown, as numbers when the column is numeric (blanks last).
fn is_sorted(values: &[Value], numeric: bool, ascending: bool) -> bool {
    let texts: Vec<&str> = values.iter().map(|v| v.as_str().unwrap_or("")).collect();
    if numeric {
        let nums: Vec<f64> = texts.iter().filter_map(|t| t.parse::<f64>().ok()).collect();
        let blanks_last = texts
            .iter()
            .skip_while(|t| t.parse::<f64>().is_ok())
            .all(|t| t.parse::<f64>().is_err());
        blanks_last
            && nums.windows(2).all(|w| {
                if ascending {
                    w[0] <= w[1]
                } else {
                    w[0] >= w[1]
                }
            })
    } else {
        let lower: Vec<String> = texts.iter().map(|t| t.to_lowercase()).collect();
        // Text sorts case-insensitively with numbers inside compared as numbers; checking
        // the first differing character of neighbours is enough for these columns' values.
        lower.windows(2).all(|w| {
            let ord = natural(&w[0], &w[1]);
            if ascending {
                ord != std::cmp::Ordering::Greater
            } else {
                ord != std::cmp::Ordering::Less
            }
        })
    }
}

/// Compare text with runs of digits as numbers (as the page's `localeCompare(…, {numeric})`).
fn natural(a: &str, b: &str) -> std::cmp::Ordering {
    let split = |s: &str| -> Vec<(bool, String)> {
        let mut parts: Vec<(bool, String)> = Vec::new();
        for ch in s.chars() {
            let digit = ch.is_ascii_digit();
            match parts.last_mut() {
                Some((d, text)) if *d == digit => text.push(ch),
                _ => parts.push((digit, ch.to_string())),
            }
        }
        parts
    };
    let (pa, pb) = (split(a), split(b));
    for (x, y) in pa.iter().zip(&pb) {
        let ord = if x.0 && y.0 {
            x.1.parse::<u128>()
                .unwrap_or(0)
                .cmp(&y.1.parse::<u128>().unwrap_or(0))
        } else {
            // Punctuation sorts before letters in ICU's collation, as in plain byte order
            // for the ASCII ids these tables hold.
            x.1.cmp(&y.1)
        };
        if ord != std::cmp::Ordering::Equal {
            return ord;
        }
    }
    pa.len().cmp(&pb.len())
}

/// A synthetic campaign with every figure, failures whose bundles hold a `run.log`, and an
/// oversubscribed run, rendered into `dir`; the failures' log lines.
fn synthetic_report(dir: &Path) -> Vec<String> {
    let mut spec = Spec::small();
    spec.detail = true;
    spec.fail_every = 7;
    spec.dtypes = vec![Dtype::Fp32, Dtype::Fp16];
    let mut rs = result_set(&spec);
    // One oversubscribed run: P = 8 on 2 CPUs.
    if let Some(r) = rs
        .runs
        .iter_mut()
        .find(|r| r.case.p == 8 && r.status == RunStatus::Pass)
    {
        r.cpus = Some(vec![0, 1]);
    }
    let mut last_lines = Vec::new();
    for r in rs.runs.iter().filter(|r| r.status != RunStatus::Pass) {
        let bundle = dir.join(&r.bundle);
        std::fs::create_dir_all(&bundle).unwrap();
        let mut log: String = (1..=120)
            .map(|i| format!("{} round {i}: working\n", r.stack))
            .collect();
        let last = format!("FATAL {}: golden mismatch at element 3 <&>", r.case_id);
        log.push_str(&last);
        log.push('\n');
        std::fs::write(bundle.join("run.log"), log).unwrap();
        last_lines.push(last);
    }
    for r in rs.runs.iter().filter(|r| r.status == RunStatus::Pass) {
        let bundle = dir.join(&r.bundle);
        std::fs::create_dir_all(&bundle).unwrap();
        std::fs::write(bundle.join("run.log"), "CAMPAIGN_DONE {}\n").unwrap();
        std::fs::write(bundle.join("manifest.json"), "{}\n").unwrap();
    }
    let opts = ReportOptions {
        baseline: Some("mpi".into()),
        ..ReportOptions::default()
    };
    render_all(&rs, &opts, dir).unwrap();
    last_lines
}

fn assert_no_errors(seen: &Value, what: &str) {
    let errors = seen["errors"].as_array().unwrap();
    assert!(errors.is_empty(), "{what}: the page raised {errors:#?}");
}

fn assert_figures_work(seen: &Value, expected: usize, what: &str) {
    let figures = seen["figures"].as_array().unwrap();
    assert_eq!(figures.len(), expected, "{what}: figures {figures:#?}");
    for f in figures {
        let name = f["name"].as_str().unwrap();
        assert!(
            f["elements"].as_u64().unwrap() > 20
                && f["width"].as_f64().unwrap() > 300.0
                && f["height"].as_f64().unwrap() > 100.0,
            "{what}: figure {name} did not render: {f}"
        );
        assert!(
            f["hover_points"].as_u64().unwrap() > 0,
            "{name}: no hover values"
        );
        assert!(
            f["legend"].as_u64().unwrap() > 0,
            "{name}: no legend entries"
        );
        let tip = &f["tooltip"];
        assert_eq!(tip["hidden"], false, "{name}: no tooltip over a point: {f}");
        assert!(
            tip["text"]
                .as_str()
                .unwrap()
                .contains(tip["expected"].as_str().unwrap()),
            "{name}: tooltip shows {tip}"
        );
        assert_eq!(f["tooltip_after_leave"], true, "{name}: tooltip stays");
        let t = &f["toggle"];
        assert!(
            t["off"]["hidden"].as_u64().unwrap() > t["before"].as_u64().unwrap(),
            "{name}: the legend hid nothing: {t}"
        );
        assert_eq!(t["off"]["pressed"], "false", "{name}: {t}");
        if let Some(text) = t["off"]["tooltip_text"].as_str() {
            let hidden = t["off"]["hidden_point_text"].as_str().unwrap();
            assert!(
                !text.contains(hidden),
                "{name}: a hidden series still shows its values: {t}"
            );
        }
        assert_eq!(t["on"], t["before"], "{name}: showing it again: {t}");
        assert_eq!(t["pressed"], "true", "{name}: {t}");
    }
}

#[test]
fn the_report_page_sorts_filters_and_shows_every_figure_in_a_browser() {
    let dir = crate::util::tempdir();
    let last_lines = synthetic_report(dir.path());
    let page = dir.path().join("reports/index.html");
    assert!(dir.path().join("reports/summary.md").is_file());
    let seen = self_test(
        &page,
        &["count", "p", "stack", "median", "status", "case_id"],
        &[("stack", "host"), ("variant", "ring"), ("status", "fail")],
        false,
    );
    assert_no_errors(&seen, "light");
    assert_eq!(seen["dark"], false);
    let table = &seen["table"];
    let rows = table["rows"].as_u64().unwrap();
    // 2 stacks × 2 variants × 3 P × 4 counts × 2 dtypes.
    assert_eq!(rows, 96, "{table}");
    let columns: Vec<&str> = table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for key in [
        "case_id", "variant", "p", "count", "dtype", "stack", "status", "median",
    ] {
        assert!(columns.contains(&key), "no {key} column: {columns:?}");
    }
    for (key, sort) in table["sorts"].as_object().unwrap() {
        let numeric = sort["numeric"].as_bool().unwrap();
        let asc = sort["asc"]["values"].as_array().unwrap();
        let desc = sort["desc"]["values"].as_array().unwrap();
        assert_eq!(asc.len() as u64, rows, "{key}");
        assert!(is_sorted(asc, numeric, true), "{key} ascending: {asc:?}");
        assert!(
            is_sorted(desc, numeric, false),
            "{key} descending: {desc:?}"
        );
        assert_ne!(
            asc, desc,
            "{key}: the second click did not reverse the order"
        );
        assert_eq!(sort["asc"]["aria"], "ascending");
        assert_eq!(sort["desc"]["aria"], "descending");
    }
    for (key, f) in table["filters"].as_object().unwrap() {
        let shown = f["shown"].as_u64().unwrap();
        let value = f["value"].as_str().unwrap();
        assert!(shown > 0 && shown < rows, "filter {key}={value}: {f}");
        for t in f["texts"].as_array().unwrap() {
            assert!(t.as_str().unwrap().contains(value), "filter {key}: {f}");
        }
        assert!(
            f["count"]
                .as_str()
                .unwrap()
                .contains(&format!("{shown} of {rows}")),
            "{f}"
        );
    }
    assert_eq!(table["filters"]["stack"]["shown"], 48);
    // What is the same in every row is said once above the table, not in a column.
    let html = std::fs::read_to_string(&page).unwrap();
    for same in ["core_num", "metric"] {
        assert!(
            !columns.contains(&same),
            "{same} is the same everywhere: {columns:?}"
        );
        assert!(
            html.contains(&format!("<span data-same=\"{same}\">")),
            "{same}"
        );
    }
    assert_eq!(table["after_clear"].as_u64().unwrap(), rows);
    // Every row links into its bundle, relative to reports/, and the files are there.
    let links = table["links"].as_array().unwrap();
    assert!(links.len() as u64 >= rows, "{links:?}");
    for l in links {
        let href = l.as_str().unwrap();
        assert!(href.starts_with("../cases/"), "{href}");
        assert!(
            dir.path().join("reports").join(href).is_file(),
            "{href} does not exist"
        );
    }
    assert_figures_work(&seen, campaign::report::figures::ALL.len(), "light");
    // Each failure opens to its reason and the end of its log, escaped, not as markup.
    let failures = seen["failures"].as_array().unwrap();
    assert_eq!(failures.len(), last_lines.len());
    for (f, last) in failures.iter().zip(&last_lines) {
        let log = f["log"].as_str().expect("a log tail");
        assert!(log.trim_end().ends_with(last.as_str()), "{log}");
        assert!(!log.contains("round 1: working"), "not a tail: {log}");
        assert!(f["summary"].as_str().unwrap().contains("fail"), "{f}");
    }
    let caveats: Vec<&str> = seen["caveats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(caveats.contains(&"oversubscribed"), "{caveats:?}");

    // Dark mode: the same page, no errors, a dark background.
    let dark = self_test(&page, &[], &[], true);
    assert_no_errors(&dark, "dark");
    assert_eq!(
        dark["dark"], true,
        "--force-dark-mode did not reach the page"
    );
    assert_ne!(dark["background"], seen["background"]);

    let (w, h, ink) = png_ink(&screenshot(&page, "report-light", 3000, false));
    assert_eq!((w, h), (1280, 3000));
    assert!(ink > 100_000, "the light screenshot is nearly empty");
    let (_, _, dark_ink) = png_ink(&screenshot(&page, "report-dark", 3000, true));
    assert!(dark_ink > 100_000, "the dark screenshot is nearly empty");
    let pages = print_pdf(&page, "report-print");
    assert!(pages >= 3, "the printed report has {pages} page(s)");
}

/// A report over several ops, read at 1400 px (issue 44, item 4): every row names its op, a
/// quoted filter matches the whole cell (`"reduce"` keeps no reduce_scatter row), nothing is
/// wider than the window or its box, and the smallest text of every figure is drawn at 10 px
/// or more; each op has its section and its own bus bandwidth figure.
#[test]
fn a_report_of_several_ops_reads_at_1400_px_with_every_op_named_and_exact_filters() {
    use campaign::model::case::{Op, Variant};
    // Kept with the other artifacts: the page to open when this test fails.
    let dir = artifacts().join("report-ops");
    let _ = std::fs::remove_dir_all(&dir);
    let ops = [Op::Allreduce, Op::Reduce, Op::ReduceScatter, Op::Allgather];
    // Long case ids, as a collectives campaign has (`reduce_scatter_scatter_allgather_p8_…`):
    // kept on one line they pushed the table past the window.
    let mut spec = Spec::small();
    spec.variants = vec![Variant::Ring, Variant::ScatterAllgather];
    let rs = crate::synthetic::with_ops(&result_set(&spec), &ops);
    render_all(&rs, &ReportOptions::default(), &dir).unwrap();
    let page = dir.join("reports/index.html");
    let filters = [
        ("op", "allreduce"),
        ("op", "\"reduce\""),
        ("op", "reduce"),
        ("op", "\"Reduce_Scatter\""),
    ];
    let seen = self_test_at(&page, 1400, &[], &filters, false);
    assert_no_errors(&seen, "1400 px");
    let table = &seen["table"];
    let rows = table["rows"].as_u64().unwrap();
    // 4 ops × 2 stacks × 2 variants × 3 P × 4 counts.
    assert_eq!(rows, 192, "{table}");
    let runs = table["filter_list"].as_array().unwrap();
    let texts = |i: usize| -> Vec<String> {
        (runs[i]["texts"].as_array().unwrap().iter())
            .map(|t| t.as_str().unwrap().trim().to_string())
            .collect()
    };
    // Every allreduce row says so (they used to show "-").
    assert_eq!(texts(0).len(), 48, "{}", runs[0]);
    assert!(texts(0).iter().all(|t| t == "allreduce"), "{}", runs[0]);
    assert_eq!(texts(1).len(), 48, "{}", runs[1]);
    assert!(texts(1).iter().all(|t| t == "reduce"), "{}", runs[1]);
    // Unquoted, a text is a part of the cell: reduce, reduce_scatter and allreduce.
    assert_eq!(texts(2).len(), 144, "{}", runs[2]);
    assert!(texts(3).iter().all(|t| t == "reduce_scatter") && texts(3).len() == 48);
    let layout = &seen["layout"];
    let viewport = layout["viewport"].as_f64().unwrap();
    assert_eq!(viewport, 1400.0, "{layout}");
    assert!(
        layout["page_width"].as_f64().unwrap() <= viewport,
        "the page is wider than the window: {layout}"
    );
    assert_eq!(layout["overflowing"], serde_json::json!([]), "{layout}");
    for f in layout["figure_text"].as_array().unwrap() {
        let px = f["min_text_px"].as_f64().unwrap();
        assert!(
            px >= 10.0,
            "text of figure {} drawn at {px:.1} px: {f}",
            f["name"]
        );
    }
    let html = std::fs::read_to_string(&page).unwrap();
    for op in ops {
        assert!(html.contains(&format!("<section id=\"op-{op}\"")), "{op}");
        assert!(
            html.contains(&format!("data-figure=\"message_size_bw_{op}\"")),
            "{op}'s figure"
        );
    }
    assert!(html.contains("a text in double quotes must be the whole cell"));
    let (_, _, ink) = png_ink(&screenshot(&page, "report-ops", 2400, false));
    assert!(ink > 100_000, "the screenshot is nearly empty");
}

#[test]
fn a_real_campaign_run_writes_a_page_whose_links_reach_its_bundles() {
    let dir = crate::util::tempdir();
    let results = dir.path().join("results");
    let out = crate::util::run_in(
        dir.path(),
        &[
            "run",
            crate::util::root()
                .join("plans/smoke.toml")
                .to_str()
                .unwrap(),
            "--results-dir",
            results.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", crate::util::stderr(&out));
    let run_dir = std::fs::read_dir(results.join("smoke"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("reports/index.html").is_file())
        .expect("reports/index.html beside summary.md");
    assert!(run_dir.join("reports/summary.md").is_file());
    let page = run_dir.join("reports/index.html");
    let seen = self_test(&page, &["count", "variant"], &[("variant", "ring")], false);
    assert_no_errors(&seen, "smoke");
    let links = seen["table"]["links"].as_array().unwrap();
    assert!(!links.is_empty());
    for l in links {
        let href = l.as_str().unwrap();
        assert!(
            run_dir.join("reports").join(href).is_file(),
            "{href} does not exist in the run dir"
        );
    }
    let figures = seen["figures"].as_array().unwrap().len();
    assert!(figures > 0);
    assert_figures_work(&seen, figures, "smoke");
    screenshot(&page, "smoke-light", 2000, false);
}

#[test]
fn the_history_trend_page_shows_every_series_in_a_browser() {
    let dir = crate::util::tempdir();
    let results = dir.path().join("results");
    let plan = crate::util::root().join("plans/smoke.toml");
    for _ in 0..2 {
        let out = crate::util::run_in(
            dir.path(),
            &[
                "run",
                plan.to_str().unwrap(),
                "--results-dir",
                results.to_str().unwrap(),
                "-q",
            ],
        );
        assert!(out.status.success(), "{}", crate::util::stderr(&out));
    }
    let page = dir.path().join("trend.html");
    let out = crate::util::run_in(
        dir.path(),
        &[
            "history",
            "trend",
            "--case",
            "ring_p2_*",
            "--results-dir",
            results.to_str().unwrap(),
            "--out",
            page.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", crate::util::stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    // Three series (ring P=2 at three counts), two runs each, every one in the page's table.
    assert_eq!(
        html.matches("(2 runs)</summary>").count(),
        3,
        "{html:.3000}"
    );
    let seen = self_test(&page, &[], &[], false);
    assert_no_errors(&seen, "trend");
    assert_figures_work(&seen, 1, "trend");
    assert_eq!(seen["figures"][0]["hover_points"], 6);
    screenshot(&page, "trend-light", 1400, false);
}

/// The probe itself: a page that fetches something or throws is caught (else the checks above
/// could pass on a page that is broken).
#[test]
fn the_probe_catches_a_fetch_and_a_script_error() {
    let dir = crate::util::tempdir();
    let page = dir.path().join("broken.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html>\n<html><head>\n<meta http-equiv=\"Content-Security-Policy\" \
         content=\"default-src 'none'; script-src 'unsafe-inline'\">\n</head><body>\n\
         <img src=\"http://192.0.2.1/logo.png\" alt=\"\">\n\
         <script>document.title.nope.deeper = 1;</script>\n</body></html>\n",
    )
    .unwrap();
    let seen = self_test(&page, &[], &[], false);
    let errors: Vec<&str> = seen["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("blocked by the page's CSP: http://192.0.2.1/logo.png")),
        "{errors:?}"
    );
    assert!(errors.iter().any(|e| e.contains("TypeError")), "{errors:?}");
    assert!(seen["table"].is_null());
}
