//! The performance history end to end with real processes: campaigns of a stack whose speed the
//! test sets (fixtures/history/scaled.sh reads a factor from a file), `history regressions` as
//! a CI gate, idempotent ingest, a SIGKILL in the middle of an ingest, and old harness dirs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::util;

/// A temp dir with a plan running the `scaled` stack, a factor file and a results dir.
struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    fn new() -> Bench {
        let b = Bench {
            dir: util::tempdir(),
        };
        let script = util::root().join("tests/integration/fixtures/history/scaled.sh");
        let plan = format!(
            r#"[campaign]
name = "hist"

[case]
platform = "host"

[axes]
variant = ["mesh"]
p = [2]
count = [256]
stacks = ["scaled"]

[rounds]
warmup = 1
timed = 10

[run]
timeout = "60s"

[stacks.scaled]
command = ["{}", "{}"]
root = "SCALED_ROOT"
resource = "none"
"#,
            script.display(),
            b.factor_file().display()
        );
        std::fs::write(b.dir.path().join("plan.toml"), plan).unwrap();
        b
    }

    fn factor_file(&self) -> PathBuf {
        self.dir.path().join("factor")
    }

    /// The stack's root: a git checkout (HEAD written by `run`) with a nested checkout.
    fn root(&self) -> PathBuf {
        self.dir.path().join("stack_root")
    }

    fn results(&self) -> PathBuf {
        self.dir.path().join("results")
    }

    fn results_arg(&self) -> String {
        self.results().display().to_string()
    }

    /// One campaign at `factor` × the base speed; returns its run dir.
    fn run(&self, factor: &str) -> PathBuf {
        self.run_at(factor, &"a".repeat(40))
    }

    /// One campaign at `factor` × the base speed with the stack root at `commit`.
    fn run_at(&self, factor: &str, commit: &str) -> PathBuf {
        std::fs::write(self.factor_file(), factor).unwrap();
        for (dir, head) in [("", commit), ("runtime", "feedbeef")] {
            let git = self.root().join(dir).join(".git");
            std::fs::create_dir_all(&git).unwrap();
            std::fs::write(git.join("HEAD"), format!("{head}\n")).unwrap();
        }
        let before = self.run_dirs();
        let plan = self.dir.path().join("plan.toml");
        // The scaled stack's times are written by the script: CPU contention cannot touch them,
        // and these tests are not about it, so it is not measured (cookie containment) — else a
        // loaded test machine would make it evidence at random (docs/statistics.md).
        let out = util::campaign()
            .current_dir(self.dir.path())
            .env("SCALED_ROOT", self.root())
            .env("CAMPAIGN_CONTAINMENT", "cookie")
            .args(["run", plan.to_str().unwrap()])
            .args(["--results-dir", &self.results_arg(), "-q"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
        let after = self.run_dirs();
        let new: Vec<&PathBuf> = after.iter().filter(|d| !before.contains(d)).collect();
        assert_eq!(new.len(), 1, "{after:?}");
        new[0].clone()
    }

    fn run_dirs(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.results().join("hist")) {
            Ok(rd) => rd.map(|e| e.unwrap().path()).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// `campaign history <args…> --results-dir <results>`; `regressions` keeps contended
    /// points (`--max-contention 100%`): the scaled stack's times are written by the script,
    /// so a busy machine cannot touch them, only stall the script.
    fn history(&self, args: &[&str]) -> std::process::Output {
        let mut all = vec!["history"];
        all.extend_from_slice(args);
        if args.first() == Some(&"regressions") {
            all.extend(["--max-contention", "100%"]);
        }
        let r = self.results_arg();
        all.extend(["--results-dir", r.as_str()]);
        util::run_in(self.dir.path(), &all)
    }

    fn store(&self) -> PathBuf {
        self.results().join("history.sqlite")
    }
}

fn show(o: &std::process::Output) -> String {
    format!("{}{}", util::stdout(o), util::stderr(o))
}

/// Every row of every table, as text: two equal dumps mean an unchanged store.
fn dump(store: &Path) -> String {
    let c = rusqlite::Connection::open(store).unwrap();
    let mut out = String::new();
    for table in ["run_dirs", "env", "checkouts", "runs", "samples"] {
        let mut stmt = c
            .prepare(&format!("SELECT * FROM {table} ORDER BY 1, 2"))
            .unwrap();
        let cols = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                let mut line = Vec::new();
                for i in 0..cols {
                    line.push(match r.get_ref(i)? {
                        rusqlite::types::ValueRef::Text(t) => {
                            String::from_utf8_lossy(t).into_owned()
                        }
                        other => format!("{other:?}"),
                    });
                }
                Ok(line.join("|"))
            })
            .unwrap();
        for row in rows {
            out.push_str(&format!("{table}: {}\n", row.unwrap()));
        }
    }
    out
}

#[test]
fn a_stack_made_twice_as_slow_in_the_third_run_is_a_regression() {
    let b = Bench::new();
    let (c1, c2) = ("1".repeat(40), "2".repeat(40));
    b.run_at("1", &c1);
    let second = b.run_at("1", &c1);
    let third = b.run_at("2", &c2);
    let out = b.history(&["regressions"]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let text = util::stdout(&out);
    assert!(
        text.contains("REGRESSION mesh_p2_count256_fp32_host_d0-1 / scaled"),
        "{text}"
    );
    assert!(text.contains(third.to_str().unwrap()), "{text}");
    assert!(text.contains("+100.0 %"), "{text}");
    assert!(text.contains("1 current regressions"), "{text}");
    // The definition is the same in all three runs: nothing says it changed.
    assert!(!text.contains("definition changed"), "{text}");
    // For CI: the series is a failed JUnit test case with its numbers; the job summary's
    // heading says there is a regression.
    let out = b.history(&["regressions", "--format", "junit"]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let xml = util::stdout(&out);
    assert!(
        xml.contains(
            "<testsuites name=\"campaign history regressions\" tests=\"1\" failures=\"1\""
        ),
        "{xml}"
    );
    assert!(xml.contains("<testcase classname=\"campaign.history.scaled\" name=\"mesh_p2_count256_fp32_host_d0-1 (host "), "{xml}");
    assert!(
        xml.contains("<failure type=\"slower\" message=\"regression: slower +100.0 % at run run_"),
        "{xml}"
    );
    assert!(xml.contains("commit 2222222222; before: run "), "{xml}");
    let out = b.history(&["regressions", "--format", "summary"]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let md = util::stdout(&out);
    assert!(
        md.starts_with("## ❌ campaign history regressions: 1 series"),
        "{md}"
    );
    assert!(md.contains("### Regressions (1)"), "{md}");
    assert!(
        md.contains("| `mesh_p2_count256_fp32_host_d0-1` | scaled |"),
        "{md}"
    );
    // JSON names the same case, stack and run, with the step's interval around 2×.
    let out = b.history(&["regressions", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &v["findings"][0];
    assert_eq!(f["case_id"], "mesh_p2_count256_fp32_host_d0-1");
    assert_eq!(f["stack"], "scaled");
    assert_eq!(f["run_dir"], third.to_str().unwrap());
    assert_eq!(f["previous_run_dir"], second.to_str().unwrap());
    // The step is labelled with the stack commits on either side of it.
    assert_eq!(f["commit"], c2.as_str());
    assert_eq!(f["previous_commit"], c1.as_str());
    assert!(text.contains("commit 2222222222; before: run_"), "{text}");
    // Every run dir recorded the root and the checkout nested in it.
    let c = rusqlite::Connection::open(b.store()).unwrap();
    let nested: Vec<(String, String)> = c
        .prepare("SELECT path, git_commit FROM checkouts WHERE nested = 1")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(nested.len(), 3, "{nested:?}");
    assert!(nested[0].0.ends_with("stack_root/runtime") && nested[0].1 == "feedbeef");
    assert_eq!(f["direction"], "slower");
    let (lo, hi) = (
        f["ratio_lo"].as_f64().unwrap(),
        f["ratio_hi"].as_f64().unwrap(),
    );
    assert!(lo > 1.3 && lo < 2.0 && hi > 2.0 && hi < 3.0, "{f}");
    // --since after the step leaves nothing to report.
    let out = b.history(&["regressions", "--since", "2999-01-01"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let out = b.history(&["regressions", "--since", "no-such-run"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    // The third run's report says so in its History section.
    let md = std::fs::read_to_string(third.join("reports/summary.md")).unwrap();
    let section = &md[md.find("## History").expect("history section")..];
    assert!(section.contains("| scaled | 2 | "), "{section}");
    // Unless a run of the series waited for a CPU beyond 10 % of its time (a busy machine
    // stalls the script): the report's history, like `regressions` by default, leaves such a
    // point out.
    let c = rusqlite::Connection::open(b.store()).unwrap();
    let worst: f64 = c
        .query_row(
            "SELECT COALESCE(MAX(cpu_contention), 0) FROM runs",
            [],
            |r| r.get(0),
        )
        .unwrap();
    if worst <= 0.10 {
        assert!(section.contains("**slower ×2.00"), "{section}");
    }
    // The first run had no earlier point: no section.
    let first_md = std::fs::read_to_string(
        b.run_dirs()
            .iter()
            .min()
            .unwrap()
            .join("reports/summary.md"),
    )
    .unwrap();
    assert!(!first_md.contains("## History"));
    // show: three points in time order; trend: a PNG and an SVG.
    let out = b.history(&[
        "show",
        "--case",
        "mesh_p2_*",
        "--stack",
        "scaled",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let medians: Vec<f64> = v[0]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["median_s"].as_f64().unwrap())
        .collect();
    assert_eq!(medians.len(), 3);
    assert!((medians[2] / medians[0] - 2.0).abs() < 0.01, "{medians:?}");
    let png = b.dir.path().join("trend.png");
    let out = b.history(&["trend", "--out", png.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let img = image::open(&png).unwrap();
    assert!(img.width() > 400 && img.height() > 300);
    let svg = b.dir.path().join("trend.svg");
    let out = b.history(&["trend", "--stack", "scaled", "--out", svg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    // The trend, like the report, leaves contended points out (see above).
    if worst <= 0.10 {
        assert!(std::fs::read_to_string(&svg)
            .unwrap()
            .contains("slower ×2.00 at #3"));
    }
    // The same trend as one self-contained page: the series, its change point, hover values.
    let html = b.dir.path().join("trend.html");
    let out = b.history(&["trend", "--out", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    if worst <= 0.10 {
        assert!(page.contains("<strong>slower ×2.00 ["), "{page:.3000}");
        assert!(
            page.contains("change point: slower ×2.00"),
            "no hover value at the step"
        );
    }
    assert!(page.contains("<svg") && !page.contains("src=\"http"));
    let out = b.history(&["trend", "--out", "t.jpg"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let out = b.history(&["trend", "--stack", "nope", "--out", "t.png"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
}

#[test]
fn a_step_where_the_stack_was_redefined_says_so() {
    // Two plans (one plan edited) define the stack `scaled` differently: one series, and the
    // step where the definition changed says so in every format and in the run's report.
    let b = Bench::new();
    b.run("1");
    b.run("1");
    let plan = b.dir.path().join("plan.toml");
    let mut text = std::fs::read_to_string(&plan).unwrap();
    text.push_str("env = { SCALED_MODE = \"two\" }\n");
    std::fs::write(&plan, text).unwrap();
    let third = b.run("2");
    let out = b.history(&["regressions"]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let text = util::stdout(&out);
    assert!(
        text.contains("REGRESSION mesh_p2_count256_fp32_host_d0-1 / scaled"),
        "{text}"
    );
    assert!(
        text.contains("the stack definition changed here ("),
        "{text}"
    );
    let out = b.history(&["regressions", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let change = &v["findings"][0]["definition_changed"];
    let (from, to) = (
        change["from"].as_str().unwrap(),
        change["to"].as_str().unwrap(),
    );
    assert!(from.len() == 16 && to.len() == 16 && from != to, "{change}");
    assert!(
        text.contains(&format!("({} → {})", &from[..10], &to[..10])),
        "{text}"
    );
    let out = b.history(&["regressions", "--format", "junit"]);
    let xml = util::stdout(&out);
    assert!(xml.contains("(the stack definition changed here)"), "{xml}");
    let out = b.history(&["regressions", "--format", "summary"]);
    assert!(util::stdout(&out).contains("the stack definition changed here"));
    // Each run dir recorded the definition it ran; the third run's report says it changed.
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(third.join("results.json")).unwrap()).unwrap();
    assert_eq!(
        results["provenance"]["stack_roots"]["scaled"]["definition"],
        to
    );
    let summary = std::fs::read_to_string(third.join("reports/summary.md")).unwrap();
    assert!(
        summary.contains("(the stack definition changed since the previous run)"),
        "{summary}"
    );
}

#[test]
fn identical_runs_are_no_regression() {
    let b = Bench::new();
    for _ in 0..3 {
        b.run("1");
    }
    let out = b.history(&["regressions"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        util::stdout(&out).contains(
            "1 series (judged 1 of 1; a series needs 3 usable points), 0 steps, 0 current regressions"
        ),
        "{}",
        show(&out)
    );
    let out = b.history(&["regressions", "--format", "junit"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let xml = util::stdout(&out);
    assert!(xml.contains("tests=\"1\" failures=\"0\""), "{xml}");
    assert!(
        xml.contains("<testcase classname=\"campaign.history.scaled\""),
        "{xml}"
    );
    let md = util::stdout(&b.history(&["regressions", "--format", "summary"]));
    assert!(
        md.starts_with("## ✅ campaign history regressions: no series"),
        "{md}"
    );
    let out = b.history(&["list"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        util::stdout(&out).matches("hist ").count(),
        3,
        "{}",
        show(&out)
    );
}

#[test]
fn ingesting_a_run_dir_twice_leaves_the_store_unchanged() {
    let b = Bench::new();
    let dir = b.run("1");
    let before = dump(&b.store());
    assert!(before.contains("run_dirs: "), "{before}");
    assert!(before.contains("samples: "), "{before}");
    for _ in 0..2 {
        let out = b.history(&["ingest", dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(
            util::stdout(&out).contains(": unchanged (3 runs"),
            "{}",
            show(&out)
        );
    }
    // Re-rendering the report records it again, and changes nothing either.
    let out = util::run(&["report", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(dump(&b.store()), before);
    // `resume` (no --results-dir) records into the store of the results dir the run dir is in:
    // a lost store comes back with the same rows.
    for ext in ["sqlite", "sqlite-wal", "sqlite-shm"] {
        let _ = std::fs::remove_file(b.store().with_extension(ext));
    }
    // (resume gathers provenance anew, so it sees the same stack root and environment as the
    // run.)
    let out = util::campaign()
        .env("SCALED_ROOT", b.root())
        .env("CAMPAIGN_CONTAINMENT", "cookie")
        .args(["resume", dir.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(dump(&b.store()), before);
}

/// Wait (bounded, generous for a busy machine) until `path` exists.
fn wait_for_file(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A copy of the old harness run dir inside `parent`.
fn seed_copy(parent: &Path) -> PathBuf {
    let dst = parent.join("run_20250301_101500");
    copy_dir(
        &util::root().join("tests/integration/fixtures/report/seed_run"),
        &dst,
    );
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

#[test]
fn sigkill_during_ingest_leaves_a_readable_store() {
    let b = Bench::new();
    b.run("1");
    let seed = seed_copy(b.dir.path());
    let hold = b.dir.path().join("holding");
    let mut child = util::campaign()
        .current_dir(b.dir.path())
        .args([
            "history",
            "ingest",
            seed.to_str().unwrap(),
            "--results-dir",
            &b.results_arg(),
            "--hold-before-commit",
            hold.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The ingester has written every row of the seed dir and not committed: kill it there.
    wait_for_file(&hold);
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    let c = rusqlite::Connection::open(b.store()).unwrap();
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    drop(c);
    // Readable, and holding exactly what was committed before: the first campaign only.
    let out = b.history(&["list"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(util::stdout(&out).contains("1 run dirs"), "{}", show(&out));
    assert!(!util::stdout(&out).contains("seed_demo"), "{}", show(&out));
    // The interrupted ingest simply runs again.
    let out = b.history(&["ingest", seed.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        util::stdout(&out).contains(": added (6 runs"),
        "{}",
        show(&out)
    );
    assert!(util::stdout(&b.history(&["list"])).contains("2 run dirs"));
}

#[test]
fn an_old_harness_run_dir_ingests() {
    let tmp = util::tempdir();
    let seed = seed_copy(tmp.path());
    let results = tmp.path().join("results");
    let r = results.display().to_string();
    let out = util::run_in(
        tmp.path(),
        &[
            "history",
            "ingest",
            seed.to_str().unwrap(),
            "--results-dir",
            &r,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let out = util::run_in(tmp.path(), &["history", "list", "--results-dir", &r]);
    let text = util::stdout(&out);
    assert!(text.contains("seed_demo"), "{text}");
    assert!(text.contains("seed-harness"), "{text}");
    assert!(text.contains("5/6"), "{text}");
    // Five passing runs make five one-point series; the failed run is in no series.
    let out = util::run_in(
        tmp.path(),
        &["history", "show", "--format", "json", "--results-dir", &r],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let series = v.as_array().unwrap();
    assert_eq!(series.len(), 5, "{v}");
    assert!(series
        .iter()
        .all(|s| s["key"]["host_fingerprint"] == "unknown"));
    assert!(series
        .iter()
        .all(|s| s["points"][0]["median_s"].as_f64().unwrap() > 0.0));
    // No store at all: a clear usage error.
    let out = util::run_in(
        tmp.path(),
        &[
            "history",
            "list",
            "--results-dir",
            tmp.path().join("none").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        util::stderr(&out).contains("no history store"),
        "{}",
        show(&out)
    );
    // `report` records a run dir that sits in a results dir's layout, and no other.
    let laid_out = tmp.path().join("data/seed_demo/run_20250301_101500");
    copy_dir(&seed, &laid_out);
    let out = util::run_in(tmp.path(), &["report", laid_out.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(tmp.path().join("data/history.sqlite").is_file());
    let out = util::run_in(tmp.path(), &["report", seed.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(!tmp.path().join("history.sqlite").exists());
}

/// Does process `pid` have `file` open?
fn has_open(pid: u32, file: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == file))
}

#[test]
fn a_second_writer_waits_for_the_first_and_goes_on_when_it_dies() {
    let b = Bench::new();
    let campaign_dir = b.run("1");
    let seed = seed_copy(b.dir.path());
    let hold = b.dir.path().join("holding");
    let spawn = |dir: &Path, extra: &[&str]| {
        util::campaign()
            .current_dir(b.dir.path())
            .args(["history", "ingest", dir.to_str().unwrap()])
            .args(["--results-dir", &b.results_arg()])
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    // A holds the write lock (inside its transaction, before the commit).
    let mut a = spawn(&seed, &["--hold-before-commit", hold.to_str().unwrap()]);
    wait_for_file(&hold);
    // B re-ingests the campaign dir after a change, so it must write: it opens the store,
    // then waits on A's lock (busy timeout) instead of failing with "database is locked".
    let results_json = campaign_dir.join("cases");
    let case = std::fs::read_dir(&results_json)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let timing = case.join("scaled/timing.json");
    let text = std::fs::read_to_string(&timing).unwrap();
    std::fs::write(&timing, text.replacen("0.00099", "0.00098", 1)).unwrap();
    let mut bproc = spawn(&campaign_dir, &[]);
    let wal = std::fs::canonicalize(b.store())
        .unwrap()
        .with_extension("sqlite-wal");
    let start = Instant::now();
    // Until B has the store open (or has already given up, which the exit code below shows).
    while !has_open(bproc.id(), &wal) && bproc.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "B never opened the store"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(a.id() as i32, libc::SIGKILL) };
    a.wait().unwrap();
    let out = bproc.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        util::stdout(&out).contains(": updated (3 runs"),
        "{}",
        show(&out)
    );
    let list = util::stdout(&b.history(&["list"]));
    assert!(
        list.contains("1 run dirs") && !list.contains("seed_demo"),
        "{list}"
    );
}

/// Two campaigns cannot say whether the newest is a regression (a step needs an old level of
/// two points): nothing judged is its own outcome, exit 7, never a green tick (issue 45, item 4).
#[test]
fn a_history_too_short_to_judge_is_not_a_pass() {
    let b = Bench::new();
    for _ in 0..2 {
        b.run("1");
    }
    let out = b.history(&["regressions"]);
    assert_eq!(out.status.code(), Some(7), "{}", show(&out));
    assert!(
        util::stdout(&out).contains("1 series (judged 0 of 1; a series needs 3 usable points)"),
        "{}",
        show(&out)
    );
    let out = b.history(&["regressions", "--format", "summary"]);
    assert_eq!(out.status.code(), Some(7), "{}", show(&out));
    let said = util::stdout(&out);
    assert!(
        said.starts_with("## ⚠️ campaign history regressions: nothing judged")
            && !said.contains('✅'),
        "{said}"
    );
    let out = b.history(&["regressions", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&util::stdout(&out)).unwrap();
    assert_eq!(
        (doc["series"].as_u64(), doc["judged"].as_u64()),
        (Some(1), Some(0)),
        "{doc}"
    );
    b.run("1");
    let out = b.history(&["regressions", "--format", "summary"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(util::stdout(&out).starts_with("## ✅"), "{}", show(&out));
}
