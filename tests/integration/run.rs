//! `campaign run` end to end with real processes: the smoke plan on `host`, custom stacks from
//! shell one-liners (native protocol, garbage, non-zero exit, hang), placement, results files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util;

fn fixture(name: &str) -> String {
    util::root()
        .join("tests/integration/fixtures/run")
        .join(name)
        .display()
        .to_string()
}

/// Write `plan` into `dir` and run it with `--results-dir dir/results -q` plus `extra`.
fn run_plan(dir: &Path, plan: &str, extra: &[&str]) -> (std::process::Output, PathBuf) {
    let file = dir.join("plan.toml");
    std::fs::write(&file, plan).unwrap();
    let results = dir.join("results");
    let mut args = vec![
        "run".to_string(),
        file.display().to_string(),
        "--results-dir".into(),
        results.display().to_string(),
        "-q".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = util::run_in(dir, &refs);
    (out, results)
}

/// The one run dir under `results/<campaign>/`.
fn run_dir(results: &Path, campaign: &str) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(results.join(campaign))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn rows(dir: &Path) -> Vec<Value> {
    json(&dir.join("results.json"))["runs"]
        .as_array()
        .unwrap()
        .clone()
}

fn plan(name: &str, stacks: &str, defs: &str, extra: &str) -> String {
    format!(
        r#"[campaign]
name = "{name}"

[case]
platform = "host"

[axes]
variant = ["mesh"]
p = [2]
count = [256]
stacks = [{stacks}]

[rounds]
warmup = 1
timed = 3

[run]
timeout = "20s"
order = "given"
# One run per (case, stack): the tests count runs and placements.
repeats = 1

[devices]
kind = "npu"
ids = "0-1"
{extra}
{defs}"#
    )
}

#[test]
fn smoke_plan_on_host_passes_with_every_file() {
    let tmp = util::tempdir();
    let results = tmp.path().join("out");
    let out = util::run_in(
        tmp.path(),
        &["run", "--results-dir", results.to_str().unwrap(), "-q"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    let dir = run_dir(&results, "smoke");
    let name = dir.file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        name.starts_with("run_") && name.len() == "run_YYYYmmdd_HHMMSS".len(),
        "{name}"
    );
    let stdout = util::stdout(&out);
    assert!(
        stdout.contains(&format!("run dir: {}", dir.display())),
        "{stdout}"
    );
    for f in [
        "plan.toml",
        "stacks.json",
        "results.json",
        "results.csv",
        "samples.csv",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let doc = json(&dir.join("results.json"));
    assert_eq!(doc["campaign"], "smoke");
    let runs = doc["runs"].as_array().unwrap();
    assert!(!runs.is_empty());
    assert_eq!(
        3 * doc["cases"].as_array().unwrap().len(),
        runs.len(),
        "three host runs per case: [run] repeats defaults to 3"
    );
    for r in runs {
        assert_eq!(r["status"], "pass", "{r}");
        assert!(r["execute_s_mean"].as_f64().unwrap() > 0.0);
        assert_eq!(r["n_timed"], 30, "the smoke plan's 30 timed rounds");
        let bundle = dir.join(r["artifact_bundle"].as_str().unwrap());
        for f in ["run.log", "timing.json", "manifest.json"] {
            assert!(bundle.join(f).is_file(), "{} {f}", bundle.display());
        }
        let m = json(&bundle.join("manifest.json"));
        assert_eq!(m["status"], "pass");
        assert_eq!(m["correctness"], "pass");
        assert!(dir
            .join("cases")
            .join(r["case_id"].as_str().unwrap())
            .join("case.json")
            .is_file());
    }
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), runs.len() + 1);
    assert!(
        dir.join("reports/summary.md").is_file(),
        "the report step ran after collect"
    );
    let again = util::run_in(tmp.path(), &["report", dir.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(0), "{}", util::stderr(&again));
    let samples = std::fs::read_to_string(dir.join("samples.csv")).unwrap();
    assert_eq!(
        samples.lines().count(),
        runs.len() * 33 + 1,
        "3 warmup + 30 timed per run"
    );
}

#[test]
fn custom_native_stack_and_failures_have_statuses_and_reasons() {
    let tmp = util::tempdir();
    let hang_pid = tmp.path().join("hang.pid");
    let defs = format!(
        r#"
[stacks.good]
command = ["{native}"]
resource = "none"

[stacks.garbage]
command = "echo 'this is not a sample'; echo 'CAMPAIGN_SAMPLE [garbage'"
shell = true
resource = "none"

[stacks.crash]
command = ["sh", "-c", "echo oops >&2; exit 3"]
resource = "none"

[stacks.hang]
command = ["{hang}", "{pid}"]
resource = "none"
timeout = "1s"

[stacks.fp16only]
command = ["{native}"]
dtypes = ["fp16"]
resource = "none"
"#,
        native = fixture("native.sh"),
        hang = fixture("hang.sh"),
        pid = hang_pid.display()
    );
    let text = plan(
        "mixed",
        r#""good", "garbage", "crash", "hang", "fp16only""#,
        &defs,
        "",
    );
    let (out, results) = run_plan(tmp.path(), &text, &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    let dir = run_dir(&results, "mixed");
    let by: BTreeMap<String, Value> = rows(&dir)
        .into_iter()
        .map(|r| (r["stack"].as_str().unwrap().to_string(), r))
        .collect();
    assert_eq!(by["good"]["status"], "pass");
    assert_eq!(by["good"]["execute_s_median"], 0.002);
    assert_eq!(by["garbage"]["status"], "fail");
    assert!(
        by["garbage"]["reason"]
            .as_str()
            .unwrap()
            .contains("missing output"),
        "{}",
        by["garbage"]
    );
    assert_eq!(by["crash"]["status"], "fail");
    // The reason carries the cause: the crashing stack's last stderr line.
    assert_eq!(by["crash"]["reason"], "exit code 3: oops (see run.log)");
    assert_eq!(by["hang"]["status"], "timeout");
    assert!(
        by["hang"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("wall-clock timeout (1"),
        "{}",
        by["hang"]
    );
    assert_eq!(by["fp16only"]["status"], "skipped");
    assert!(by["fp16only"]["reason"]
        .as_str()
        .unwrap()
        .contains("dtype fp32"));
    for failed in ["garbage", "crash", "hang", "fp16only"] {
        for k in [
            "execute_s_mean",
            "execute_s_median",
            "execute_s_stdev",
            "bw_execute_mb_s",
        ] {
            assert_eq!(by[failed][k], Value::Null, "{failed} {k}");
        }
    }
    // The hung stack's child was killed with it.
    let pid: i32 = std::fs::read_to_string(&hang_pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Gone, or a zombie nobody reaped yet (PID 1 of a container may not reap): not running.
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let running = state
        .rsplit(')')
        .next()
        .is_some_and(|rest| !rest.trim_start().starts_with('Z'));
    assert!(
        state.is_empty() || !running,
        "child {pid} still running: {state}"
    );
    // Raw output kept whole; the crash's stderr is in its log.
    let crash_log = dir
        .join(by["crash"]["artifact_bundle"].as_str().unwrap())
        .join("run.log");
    assert_eq!(std::fs::read_to_string(crash_log).unwrap(), "oops\n");
    let m = json(
        &dir.join(by["crash"]["artifact_bundle"].as_str().unwrap())
            .join("manifest.json"),
    );
    assert_eq!(m["exit_code"], 3);
    assert_eq!(m["error"], "exit code 3: oops (see run.log)");
    // The journal: a header, then a fsynced `finished` line per run with its status.
    let journal = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();
    let lines: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["journal"], "campaign");
    let finished: BTreeMap<String, String> = lines
        .iter()
        .filter(|l| {
            l["step"].as_str().is_some_and(|s| s.starts_with("run:")) && l["status"].is_string()
        })
        .map(|l| {
            (
                l["step"]
                    .as_str()
                    .unwrap()
                    .rsplit(':')
                    .next()
                    .unwrap()
                    .to_string(),
                l["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(finished["hang"], "timeout");
    assert_eq!(finished["fp16only"], "skipped");
    assert_eq!(finished.len(), 5);
    // results.csv: empty cells for the failed rows.
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    let crash_line = csv.lines().find(|l| l.contains(",crash,")).unwrap();
    assert!(
        crash_line.contains(",fail,exit code 3: oops (see run.log),"),
        "{crash_line}"
    );
}

#[test]
fn subprocess_shape_runs_one_process_per_round() {
    let tmp = util::tempdir();
    let count_file = tmp.path().join("count");
    let defs = format!(
        r#"
[stacks.per_round]
command = ["sh", "-c", "echo x >> {count}; {native}"]
shape = "subprocess"
resource = "none"
"#,
        count = count_file.display(),
        native = fixture("native.sh")
    );
    let (out, results) = run_plan(tmp.path(), &plan("sub", r#""per_round""#, &defs, ""), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&count_file)
            .unwrap()
            .lines()
            .count(),
        4
    );
    let dir = run_dir(&results, "sub");
    let r = &rows(&dir)[0];
    assert_eq!(r["n_warmup"], 1);
    assert_eq!(r["n_timed"], 3);
    let timing = json(
        &dir.join(r["artifact_bundle"].as_str().unwrap())
            .join("timing.json"),
    );
    let phases: Vec<&str> = timing
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["warmup-1", "timed-1", "timed-2", "timed-3"]);
}

#[test]
fn failing_build_makes_only_that_stack_unavailable() {
    let tmp = util::tempdir();
    let defs = format!(
        r#"
[stacks.good]
command = ["{native}"]
resource = "none"

[stacks.broken]
command = ["{native}"]
build = ["sh", "-c", "echo compiler exploded; exit 1"]
resource = "none"
"#,
        native = fixture("native.sh")
    );
    let (out, results) = run_plan(
        tmp.path(),
        &plan("build", r#""good", "broken""#, &defs, ""),
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "unavailable is not a failure: {}",
        util::stderr(&out)
    );
    let dir = run_dir(&results, "build");
    let by: BTreeMap<String, Value> = rows(&dir)
        .into_iter()
        .map(|r| (r["stack"].as_str().unwrap().to_string(), r))
        .collect();
    assert_eq!(by["good"]["status"], "pass");
    assert_eq!(by["broken"]["status"], "unavailable");
    let reason = by["broken"]["reason"].as_str().unwrap();
    assert!(reason.contains("build failed (exit code 1)"), "{reason}");
    let log = std::fs::read_to_string(dir.join("builds/broken/build.log")).unwrap();
    assert_eq!(log, "compiler exploded\n");
}

#[test]
fn placement_never_overlaps_and_p_beyond_the_pool_is_refused() {
    let tmp = util::tempdir();
    let log = tmp.path().join("devices.log");
    let defs = format!(
        r#"
[stacks.dev]
command = ["{native}", "0.05", "{log}"]
resource = "npu"
"#,
        native = fixture("native.sh"),
        log = log.display()
    );
    let text = plan("place", r#""dev""#, &defs, "")
        .replace("p = [2]", "p = [2, 4, 8]")
        .replace("count = [256]", "count = [64, 128, 256, 512]")
        .replace("variant = [\"mesh\"]", "variant = [\"mesh\", \"ring\"]")
        .replace("ids = \"0-1\"", "ids = \"0-7\"");
    let (out, results) = run_plan(tmp.path(), &text, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let lines = std::fs::read_to_string(&log).unwrap();
    let mut spans: Vec<(Vec<u32>, u128, u128)> = lines
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let devs = f[0].split(',').map(|d| d.parse().unwrap()).collect();
            (devs, f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    assert_eq!(spans.len(), 24);
    spans.sort_by_key(|s| s.1);
    for (i, a) in spans.iter().enumerate() {
        assert_eq!(
            a.0.iter().collect::<std::collections::BTreeSet<_>>().len(),
            a.0.len()
        );
        for b in &spans[i + 1..] {
            let overlap_in_time = b.1 < a.2;
            let shared = a.0.iter().any(|d| b.0.contains(d));
            assert!(
                !(overlap_in_time && shared),
                "{a:?} and {b:?} share a device at once"
            );
        }
    }
    let dir = run_dir(&results, "place");
    for r in rows(&dir) {
        let m = json(
            &dir.join(r["artifact_bundle"].as_str().unwrap())
                .join("manifest.json"),
        );
        assert_eq!(
            m["devices"], m["case"]["device_ids"],
            "auto placement writes the lease into the case"
        );
    }

    let tmp = util::tempdir();
    let (out, _) = run_plan(
        tmp.path(),
        &text.replace("ids = \"0-7\"", "ids = \"0-3\""),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = util::stderr(&out);
    assert!(
        err.contains("needs 8 devices but the pool has only"),
        "{err}"
    );
}

#[test]
fn interrupt_stops_the_campaign_with_exit_3_and_whole_files() {
    let tmp = util::tempdir();
    let pid_file = tmp.path().join("hang.pid");
    let defs = format!(
        r#"
[stacks.hang]
command = ["{hang}", "{pid}"]
resource = "none"
"#,
        hang = fixture("hang.sh"),
        pid = pid_file.display()
    );
    let file = tmp.path().join("plan.toml");
    std::fs::write(&file, plan("intr", r#""hang""#, &defs, "")).unwrap();
    let results = tmp.path().join("results");
    let child = std::process::Command::new(util::exe())
        .current_dir(tmp.path())
        .args([
            "run",
            file.to_str().unwrap(),
            "--results-dir",
            results.to_str().unwrap(),
            "-q",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait (bounded) until the stack is running, then Ctrl-C the campaign.
    let cap = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !pid_file.is_file() && std::time::Instant::now() < cap {
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(pid_file.is_file(), "the stack never started");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", util::stderr(&out));
    assert!(
        util::stderr(&out).contains("campaign resume"),
        "{}",
        util::stderr(&out)
    );
    let dir = run_dir(&results, "intr");
    let r = &rows(&dir)[0];
    assert_eq!(r["status"], "interrupted");
    assert_eq!(r["execute_s_mean"], Value::Null);
}

/// Runs that lease nothing (`resource = "none"`) are bounded by default: 1,000 of a trivial
/// stack pass with default options under an open-file limit of 200, where starting them all at
/// once (as before, and as `--jobs 1000` still does) runs out of descriptors (issue 43, item 2).
#[test]
fn runs_that_lease_nothing_are_bounded_by_default_within_the_open_file_limit() {
    let tmp = util::tempdir();
    let counts: Vec<String> = (1..=100).map(|i| (64 * i).to_string()).collect();
    let plan = format!(
        r#"[campaign]
name = "many"

[case]
platform = "host"

[axes]
variant = ["mesh"]
p = [2]
count = [{counts}]
stacks = ["triv"]

[rounds]
warmup = 0
timed = 1

[run]
repeats = 10

[devices]
kind = "cpu"

[stacks.triv]
command = ["sh", "-c", '''echo 'CAMPAIGN_SAMPLE {{"execute_s":0.001,"ok":true}}'; echo 'CAMPAIGN_DONE {{"correctness":"pass"}}' ''']
shape = "subprocess"
resource = "none"
"#,
        counts = counts.join(", ")
    );
    let file = tmp.path().join("plan.toml");
    std::fs::write(&file, plan).unwrap();
    let run = |extra: &str, results: &str| {
        let script = format!(
            "ulimit -n 200 && exec \"$0\" run {} --results-dir {} -q {extra}",
            file.display(),
            tmp.path().join(results).display()
        );
        std::process::Command::new("sh")
            .args(["-c", &script, &util::exe().display().to_string()])
            .current_dir(tmp.path())
            .output()
            .unwrap()
    };
    let out = run("", "bounded");
    let stdout = util::stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", util::stderr(&out));
    assert!(stdout.contains("1000 runs: 1000 pass"), "{stdout}");
    // The same campaign with every run allowed in flight does run out: the limit is real.
    let unbounded = run("--jobs 1000", "unbounded");
    assert_ne!(
        unbounded.status.code(),
        Some(0),
        "{}",
        util::stdout(&unbounded)
    );
    assert!(
        util::stderr(&unbounded).contains("Too many open files"),
        "{}",
        util::stderr(&unbounded)
    );
}

/// A failure reason full of terminal controls, a formula and HTML (issue 43, item 5): the
/// terminal gets it with its control characters shown, results.csv neutralises the formula,
/// summary.md keeps its table row and renders no HTML; run.log keeps the raw bytes.
#[test]
fn a_hostile_failure_reason_is_shown_not_acted_on() {
    let tmp = util::tempdir();
    let plan = r#"[campaign]
name = "hostile"

[case]
platform = "host"

[axes]
variant = ["mesh"]
p = [2]
count = [64]
stacks = ["evil"]

[rounds]
warmup = 0
timed = 1

[run]
repeats = 1

[devices]
kind = "cpu"

[stacks.evil]
command = ["sh", "-c", '''printf 'CAMPAIGN_DONE {"correctness":"fail","error":"=HYPERLINK(1)\\u001b[2K\\r| all good <script>x</script>\\u001b]52;c;aGk=\\u0007"}\n' ''']
shape = "subprocess"
resource = "none"
"#;
    let file = tmp.path().join("plan.toml");
    std::fs::write(&file, plan).unwrap();
    let results = tmp.path().join("results");
    let out = util::run_in(
        tmp.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--results-dir",
            results.to_str().unwrap(),
        ],
    );
    let stdout = util::stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", util::stderr(&out));
    assert!(stdout.contains("=HYPERLINK(1)"), "{stdout}");
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\u{7}'),
        "{stdout:?}"
    );
    assert!(stdout.contains("\\u{1b}[2K\\r"), "{stdout}");
    let dir = run_dir(&results, "hostile");
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    // The reason is quoted after campaign's own words here, so it starts no formula; a text
    // cell that would is neutralised (`model::text::csv_cell`'s tests).
    assert!(
        csv.contains("golden mismatch: =HYPERLINK(1)\\u{1b}[2K\\r"),
        "{csv}"
    );
    assert!(!csv.contains('\u{1b}'), "{csv:?}");
    let md = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(!md.contains("<script>") && !md.contains('\u{1b}'), "{md}");
    assert!(md.contains("\\| all good &lt;script>"), "{md}");
    // Every other command that shows the reason shows it escaped too (issue 43 item 5): the
    // status of the run dir, its report re-rendered, a comparison with itself.
    let d = dir.to_str().unwrap();
    for args in [vec!["status", d], vec!["report", d], vec!["compare", d, d]] {
        let out = util::run_in(tmp.path(), &args);
        let (o, e) = (util::stdout(&out), util::stderr(&out));
        assert!(
            !(o.contains('\u{1b}') || o.contains('\u{7}') || e.contains('\u{1b}')),
            "{args:?}: {o:?} {e:?}"
        );
    }
    let log = std::fs::read(dir.join("cases/mesh_p2_count64_fp32_host_d0-1/evil/run.log")).unwrap();
    assert!(
        log.windows(4).any(|w| w == b"\\u00"),
        "run.log keeps the stack's bytes"
    );
}
