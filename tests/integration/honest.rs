//! Numbers people can trust (issue 13), end to end with real processes: failed rounds carry no
//! time, correctness says whether a golden check ran, absurd samples are protocol errors,
//! oversubscribed CPU runs say so, `report` rewrites the results files in run order with a
//! `context.json`, and `compare` does not cry wolf.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util;

/// Write `plan` into `dir`, run it (`--results-dir dir/results -q` plus `extra`), and return the
/// output and the one run dir of `campaign`.
pub(crate) fn run_plan(
    dir: &Path,
    campaign: &str,
    plan: &str,
    extra: &[&str],
) -> (std::process::Output, PathBuf) {
    run_plan_with(dir, campaign, plan, extra, &[])
}

/// [`run_plan`] without CPU contention measured (cookie containment): for campaigns whose
/// verdicts a test asserts and whose synthetic times contention cannot touch — else a loaded
/// test machine makes contention evidence at random (it has tests of its own).
fn run_plan_unmeasured(dir: &Path, campaign: &str, plan: &str) -> (std::process::Output, PathBuf) {
    run_plan_with(
        dir,
        campaign,
        plan,
        &[],
        &[("CAMPAIGN_CONTAINMENT", "cookie")],
    )
}

/// [`run_plan`] with `env` set for campaign.
pub(crate) fn run_plan_with(
    dir: &Path,
    campaign: &str,
    plan: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (std::process::Output, PathBuf) {
    let file = dir.join(format!("{campaign}.toml"));
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
    let out = util::campaign()
        .current_dir(dir)
        .args(&args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(results.join(campaign))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    (out, dirs.pop().unwrap())
}

pub(crate) fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn row<'a>(rows: &'a [Value], stack: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["stack"] == stack)
        .unwrap_or_else(|| panic!("no row for {stack}"))
}

const STACKS: &str = r#"
[stacks.crash]
command = ["sh", "-c", "echo 'CAMPAIGN_SAMPLE {\"ok\":true}'; exit 3"]
shape = "subprocess"
resource = "none"

[stacks.wrong]
command = ["sh", "-c", "for i in 1 2 3; do echo 'CAMPAIGN_SAMPLE {\"execute_s\":0.001,\"ok\":true}'; done; echo 'CAMPAIGN_DONE {\"correctness\":\"fail\",\"error\":\"rank 1 element 0: got 2, expected 3\"}'"]
resource = "none"

[stacks.absurd]
command = ["sh", "-c", "echo 'CAMPAIGN_SAMPLE {\"execute_s\":0.001,\"ok\":true}'; echo 'CAMPAIGN_SAMPLE {\"execute_s\":1.7e308,\"ok\":true}'; echo 'CAMPAIGN_SAMPLE {\"execute_s\":0,\"ok\":true}'; echo 'CAMPAIGN_DONE {\"correctness\":\"pass\"}'"]
resource = "none"
"#;

fn plan(name: &str, p: u32, stacks: &str, extra: &str) -> String {
    format!(
        r#"[campaign]
name = "{name}"

[case]
platform = "host"

[axes]
variant = ["mesh"]
p = [{p}]
count = [256]
stacks = [{stacks}]

[rounds]
warmup = 1
timed = 2

[run]
timeout = "60s"
order = "given"
# One run per (case, stack): these tests count runs and rows, not repeats.
repeats = 1

[devices]
kind = "cpu"
{extra}
"#
    )
}

#[test]
fn failed_rounds_carry_no_time_and_correctness_says_whether_a_golden_check_ran() {
    let tmp = util::tempdir();
    let text = plan("failed", 2, r#""crash", "wrong", "absurd""#, STACKS);
    let (out, dir) = run_plan(tmp.path(), "failed", &text, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr(&out));
    let rows = json(&dir.join("results.json"))["runs"]
        .as_array()
        .unwrap()
        .clone();
    // A crashed one-process-per-round stack: its round observed no timed window.
    let crash = row(&rows, "crash");
    assert_eq!(crash["status"], "fail");
    assert_eq!(crash["correctness"], "not_checked");
    assert_eq!(crash["execute_s_median"], Value::Null);
    assert_eq!(crash["bw_execute_mb_s"], Value::Null);
    let bundle = dir.join(crash["artifact_bundle"].as_str().unwrap());
    let timing = json(&bundle.join("timing.json"));
    let first = &timing.as_array().unwrap()[0];
    assert!(first.get("execute_s").is_none(), "{first}");
    assert!(first.get("bw_execute_mb_s").is_none(), "{first}");
    assert_eq!(first["ok"], false);
    assert!(
        first["wall_s"].as_f64().unwrap() > 0.0,
        "the process time stays its wall"
    );
    let manifest = json(&bundle.join("manifest.json"));
    assert_eq!(manifest["correctness"], "not_checked");
    // A golden check that ran and failed.
    let wrong = row(&rows, "wrong");
    assert_eq!(wrong["correctness"], "fail");
    assert!(wrong["reason"]
        .as_str()
        .unwrap()
        .contains("golden mismatch: rank 1 element 0"));
    // Values no measurement can produce.
    let absurd = row(&rows, "absurd");
    assert_eq!(absurd["status"], "fail");
    assert_eq!(absurd["correctness"], "not_checked");
    let why = absurd["reason"].as_str().unwrap();
    assert!(why.starts_with("protocol error: "), "{why}");
    assert!(why.contains("round 2 (timed-1) execute_s"), "{why}");
    assert!(
        why.contains("longer than the run's timeout (60 s)"),
        "{why}"
    );
    assert!(
        why.contains("round 3 (timed-2) execute_s = 0 (must be > 0)"),
        "{why}"
    );
    // results.csv is the same rows.
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let json_keys: Vec<&str> = rows[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .filter(|k| !k.ends_with("_means"))
        .collect();
    assert_eq!(&header[..json_keys.len()], &json_keys[..]);
}

#[test]
fn host_ranks_beyond_the_cpus_received_are_flagged_oversubscribed() {
    let tmp = util::tempdir();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let p = cpus + 1;
    // P = 2 fits on this 2-core machine (and any bigger one); P = CPUs + 1 cannot.
    let text =
        plan("over", p, r#""host""#, "").replace(&format!("p = [{p}]"), &format!("p = [2, {p}]"));
    let (out, dir) = run_plan(tmp.path(), "over", &text, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let doc = json(&dir.join("results.json"));
    let fits = &doc["runs"][0];
    assert_eq!(fits["p"], 2);
    assert_eq!(fits["oversubscribed"], false, "{fits}");
    let r = &doc["runs"][1];
    assert_eq!(r["oversubscribed"], true, "{r}");
    assert_eq!(r["cpus"], cpus, "{r}");
    assert_eq!(r["devices"].as_array().unwrap().len(), cpus as usize, "{r}");
    let m = json(
        &dir.join(r["artifact_bundle"].as_str().unwrap())
            .join("manifest.json"),
    );
    assert_eq!(m["oversubscribed"], true);
    assert_eq!(m["cpus"].as_array().unwrap().len(), cpus as usize);
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let h = rd.headers().unwrap().clone();
    let rec = rd.records().next().unwrap().unwrap();
    let col = |n: &str| h.iter().position(|x| x == n).unwrap();
    assert_eq!(&rec[col("oversubscribed")], "false");
    let rec = rd.records().next().unwrap().unwrap();
    assert_eq!(&rec[col("oversubscribed")], "true");
    assert_eq!(&rec[col("cpus")], cpus.to_string());
    // The report marks the cell, says why, and the scaling figures caption the hollow points.
    let ctx = json(&dir.join("reports/context.json"));
    let over_cell = &ctx["cases"][1]["cells"][0];
    assert_eq!(over_cell["oversubscribed"], true, "{over_cell}");
    assert!(over_cell["text"]
        .as_str()
        .unwrap()
        .contains(") ⚠ oversubscribed"));
    assert_eq!(ctx["cases"][0]["cells"][0]["oversubscribed"], false);
    let md = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(md.contains(&format!("P = {p} on {cpus} CPU(s)")), "{md}");
    let figs = ctx["figures"].as_array().unwrap();
    let eff = figs
        .iter()
        .find(|f| f["name"] == "strong_scaling_t_total")
        .unwrap_or_else(|| panic!("{figs:?}"));
    assert!(eff["caption"]
        .as_str()
        .unwrap()
        .contains("Hollow markers on dashed lines (and in the legend) are runs the machine distorted: oversubscribed"));
}

fn counts_plan(name: &str, timed: u32) -> String {
    format!(
        r#"[campaign]
name = "{name}"

[case]
platform = "host"

[axes]
variant = ["mesh"]
p = [2]
count = [64, 1000, 4096]
stacks = ["host"]

[rounds]
warmup = 1
timed = {timed}

[run]
timeout = "60s"
# One run per (case, stack): these tests count runs and rows, not repeats.
repeats = 1

[devices]
kind = "cpu"
"#
    )
}

fn row_keys(dir: &Path) -> Vec<(String, String)> {
    json(&dir.join("results.json"))["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["case_id"].as_str().unwrap().to_string(),
                r["stack"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn report_rewrites_results_in_run_order_names_missing_bundles_and_writes_context_json() {
    let tmp = util::tempdir();
    let (out, dir) = run_plan(tmp.path(), "order", &counts_plan("order", 3), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let as_run = row_keys(&dir);
    let counts: Vec<u64> = json(&dir.join("results.json"))["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["count"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [64, 1000, 4096], "run writes plan order");
    // The context the template saw, as JSON, under the documented names.
    let ctx = json(&dir.join("reports/context.json"));
    for key in [
        "title",
        "campaign",
        "cases",
        "runs",
        "failures",
        "stacks",
        "bootstrap",
    ] {
        assert!(ctx.get(key).is_some(), "context.json lacks {key}");
    }
    assert_eq!(ctx["runs"].as_array().unwrap().len(), 3);
    assert!(ctx["runs"][0]["median_s"].as_f64().unwrap() > 0.0);
    // `report` from the bundles: same order, results rewritten (here: from nothing).
    std::fs::remove_file(dir.join("results.json")).unwrap();
    std::fs::remove_file(dir.join("results.csv")).unwrap();
    let again = util::run_in(tmp.path(), &["report", dir.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(0), "{}", util::stderr(&again));
    assert_eq!(row_keys(&dir), as_run, "report sorts like run, not as text");
    assert!(dir.join("results.csv").is_file());
    assert!(util::stdout(&again).contains("context.json"));
    // A finished run whose bundle is gone is named, not silently dropped.
    let (gone_case, gone_stack) = as_run[1].clone();
    std::fs::remove_dir_all(dir.join("cases").join(&gone_case).join(&gone_stack)).unwrap();
    let again = util::run_in(tmp.path(), &["report", dir.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(0), "{}", util::stderr(&again));
    let err = util::stderr(&again);
    assert!(
        err.contains(&format!(
            "run {gone_case} {gone_stack} finished (pass) in the journal but its bundle"
        )),
        "{err}"
    );
    assert_eq!(row_keys(&dir), vec![as_run[0].clone(), as_run[2].clone()]);
}

/// A stack whose times are fixed per repeat (levels 1.0, 1.1, 0.9 × `factor` ms, ±2 % over
/// rounds): two campaigns of it are the same thing measured twice, run-to-run wander included.
fn synthetic(factor: f64) -> String {
    format!(
        r#"
[stacks.syn]
command = ["sh", "-c", '''
case "$CAMPAIGN_BUNDLE_DIR" in
  *~r2/*) level=1.1 ;;
  *~r3/*) level=0.9 ;;
  *) level=1.0 ;;
esac
awk -v w="$CAMPAIGN_WARMUP" -v t="$CAMPAIGN_TIMED" -v l="$level" -v f="{factor}" 'BEGIN {{
  for (i = 0; i < w; i++) printf "CAMPAIGN_SAMPLE {{\"phase\":\"warmup\",\"execute_s\":%.6f}}\n", 0.001 * l * f;
  for (i = 0; i < t; i++) printf "CAMPAIGN_SAMPLE {{\"phase\":\"timed\",\"execute_s\":%.6f}}\n", 0.001 * l * f * (1 + 0.01 * (i * 7 % 5 - 2));
  print "CAMPAIGN_DONE {{\"correctness\":\"pass\"}}"
}}'
''']
resource = "none"
"#
    )
}

fn repeat_plan(name: &str, stacks: &str, timed: u32, defs: &str) -> String {
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
timed = {timed}

[run]
timeout = "60s"
repeats = 3
seed = 7

[devices]
kind = "cpu"
{defs}
"#
    )
}

#[test]
fn repeats_run_interleaved_and_the_report_says_what_each_number_rests_on() {
    let tmp = util::tempdir();
    let text = repeat_plan("rep", r#""host", "syn""#, 3, &synthetic(1.0));
    let (out, dir) = run_plan(tmp.path(), "rep", &text, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let rows = json(&dir.join("results.json"))["runs"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(rows.len(), 6, "2 stacks × 3 repeats");
    let case_id = rows[0]["case_id"].as_str().unwrap().to_string();
    assert!(
        !case_id.contains("~r"),
        "rows name the planned case: {case_id}"
    );
    for stack in ["host", "syn"] {
        let mut reps: Vec<u64> = rows
            .iter()
            .filter(|r| r["stack"] == stack)
            .map(|r| {
                assert_eq!(r["case_id"], case_id.as_str());
                r["repeat"].as_u64().unwrap()
            })
            .collect();
        reps.sort();
        assert_eq!(reps, [1, 2, 3], "{stack}");
    }
    assert!(dir
        .join("cases")
        .join(format!("{case_id}~r2/syn/timing.json"))
        .is_file());
    // Interleaved: repeat r of every stack starts before repeat r + 1 of any.
    let journal = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();
    let started: Vec<u32> = journal
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["event"] == "started")
        .filter_map(|l| {
            let step = l["step"].as_str()?.strip_prefix("run:")?.to_string();
            Some(match step.split_once("~r") {
                Some((_, rest)) => rest.split(':').next().unwrap().parse().unwrap(),
                None => 1,
            })
        })
        .collect();
    assert_eq!(started, [1, 1, 2, 2, 3, 3], "{journal}");
    // The report's cells: one number per (case, stack) over its 3 repeats × 3 rounds.
    let ctx = json(&dir.join("reports/context.json"));
    let cells = ctx["cases"][0]["cells"].as_array().unwrap();
    assert_eq!(ctx["cases"].as_array().unwrap().len(), 1);
    for c in cells {
        assert_eq!(c["repeats"], 3, "{c}");
        assert_eq!(c["rounds"], 3, "{c}");
        // Followed by ⚠ contended when the machine was busy.
        assert!(c["text"].as_str().unwrap().contains("(3×3)"), "{c}");
    }
    let syn = cells.iter().find(|c| c["stack"] == "syn").unwrap();
    // Median of the repeats' medians: of 1.0, 1.1 and 0.9 ms.
    assert!(
        (syn["median_s"].as_f64().unwrap() - 0.001).abs() < 1e-9,
        "{syn}"
    );
    let md = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(md.contains("(3×3)"), "{md}");
}

/// `campaign compare A B --format F`, judging every row however busy the machine was: the
/// synthetic stacks print their times, so CPU contention (which `compare` otherwise refuses to
/// judge through, tested below) says nothing about them.
fn compare(a: &Path, b: &Path, format: &str) -> std::process::Output {
    util::run(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        format,
        "--max-contention",
        "100%",
    ])
}

#[test]
fn compare_calls_the_same_thing_no_change_both_ways_and_catches_a_doubling() {
    let tmp = util::tempdir();
    let same = repeat_plan("same", r#""syn""#, 10, &synthetic(1.0));
    let (out, a) = run_plan_unmeasured(tmp.path(), "same", &same);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let (out, b) = run_plan_unmeasured(tmp.path(), "same", &same);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    assert_ne!(a, b);
    for (x, y) in [(&a, &b), (&b, &a)] {
        let out = compare(x, y, "json");
        assert_eq!(out.status.code(), Some(0), "{}", util::stdout(&out));
        let doc: Value = serde_json::from_str(&util::stdout(&out)).unwrap();
        let row = &doc["rows"][0];
        assert_eq!(row["a"]["repeats"], 3);
        assert_eq!(row["a"]["rounds"], 10);
        let verdict = row["verdict"].as_str().unwrap();
        assert!(
            verdict == "no_change" || verdict == "no_clear_difference",
            "{row}"
        );
        assert!(
            row["ci"]["lo"].as_f64().unwrap() <= 0.0 && row["ci"]["hi"].as_f64().unwrap() >= 0.0
        );
    }
    let slow = repeat_plan("slow", r#""syn""#, 10, &synthetic(2.0));
    let (out, s) = run_plan_unmeasured(tmp.path(), "slow", &slow);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let out = compare(&a, &s, "md");
    assert_eq!(out.status.code(), Some(1), "{}", util::stdout(&out));
    assert!(
        util::stdout(&out).contains("| slower |"),
        "{}",
        util::stdout(&out)
    );
    assert!(util::stderr(&out).contains("slower beyond the ±5.0 % noise band"));
    // For CI: JUnit with the slower row a failed test case carrying its numbers (same exit
    // code), and a job summary that says so in its heading.
    let out = compare(&a, &s, "junit");
    assert_eq!(out.status.code(), Some(1), "{}", util::stdout(&out));
    let xml = util::stdout(&out);
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"campaign compare\" tests=\"1\" failures=\"1\""), "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 1, "{xml}");
    assert!(xml.contains("<testcase classname=\"campaign.compare.syn\" name=\"mesh_p2_count256_fp32_host_d0-1\">"), "{xml}");
    assert!(
        xml.contains("<failure type=\"slower\" message=\"slower: +"),
        "{xml}"
    );
    assert!(xml.contains("(3 × 10), median B "), "{xml}");
    assert!(xml.ends_with("</testsuite>\n</testsuites>\n"), "{xml}");
    let out = compare(&a, &s, "summary");
    assert_eq!(out.status.code(), Some(1));
    let summary = util::stdout(&out);
    assert!(
        summary.starts_with("## ❌ campaign compare: 1 (case, stack) slower"),
        "{summary}"
    );
    assert!(summary.contains("\n### Slower (1)\n"), "{summary}");
    assert!(summary.contains("| slower | 1 |"), "{summary}");
    let out = compare(&a, &b, "junit");
    assert_eq!(out.status.code(), Some(0));
    let xml = util::stdout(&out);
    assert!(xml.contains("tests=\"1\" failures=\"0\""), "{xml}");
    assert!(!xml.contains("<failure"), "{xml}");
    let summary = util::stdout(&compare(&a, &b, "summary"));
    assert!(
        summary.starts_with("## ✅ campaign compare: nothing slower"),
        "{summary}"
    );
    let out = compare(&s, &a, "json");
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_str(&util::stdout(&out)).unwrap();
    assert_eq!(doc["rows"][0]["verdict"], "faster");
}

/// Campaigns of one plan at these levels, in one results dir (so one history store); returns
/// their run dirs in order.
fn campaigns_at(dir: &Path, levels: &[f64]) -> Vec<PathBuf> {
    levels
        .iter()
        .map(|&level| {
            let plan = repeat_plan("phase", r#""syn""#, 10, &synthetic(level));
            // These campaigns test the campaign-to-campaign spread, not contention.
            let (out, run_dir) = run_plan_unmeasured(dir, "phase", &plan);
            assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
            run_dir
        })
        .collect()
}

/// A machine phase lasts a whole campaign: two campaigns of the same thing 1.5× apart look like
/// a change to their own repeats, but earlier campaigns in the history store show the series
/// moving that much between campaigns, so `compare` calls it no clear difference. A steady
/// history still lets a doubling through as slower.
#[test]
fn compare_weighs_the_campaign_to_campaign_spread_from_the_history_store() {
    let tmp = util::tempdir();
    let runs = campaigns_at(tmp.path(), &[1.0, 1.5, 0.7, 1.3, 0.8]);
    let (a, b) = (&runs[0], &runs[1]);
    let json_of =
        |out: &std::process::Output| -> Value { serde_json::from_str(&util::stdout(out)).unwrap() };
    // The store beside the run dirs is found on its own; A and B are left out of the spread.
    let out = compare(a, b, "json");
    assert_eq!(out.status.code(), Some(0), "{}", util::stdout(&out));
    let doc = json_of(&out);
    let row = &doc["rows"][0];
    assert_eq!(row["verdict"], "no_clear_difference", "{row}");
    assert_eq!(row["between"]["campaigns"], 3, "{row}");
    assert!(doc["history"].as_str().unwrap().ends_with("history.sqlite"));
    let md = util::stdout(&compare(a, b, "md"));
    assert!(
        md.contains("1 row(s) add their series' spread between earlier campaigns of the same build on this machine (3–3 campaigns in"),
        "{md}"
    );
    // On A and B alone the phase is a change.
    let alone = util::run(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--no-history",
        "--format",
        "json",
        "--max-contention",
        "100%",
    ]);
    assert_eq!(alone.status.code(), Some(1), "{}", util::stdout(&alone));
    assert_eq!(json_of(&alone)["rows"][0]["verdict"], "slower");
    assert!(json_of(&alone)["history"].is_null());
    // An explicit store that is not there is an error naming it.
    let missing = tmp.path().join("nope.sqlite");
    let bad = util::run(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--history",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", util::stderr(&bad));
    assert!(util::stderr(&bad).contains("nope.sqlite: no history store here"));

    // A steady series: campaigns within ±2 % of each other; a doubling is still slower.
    let steady = util::tempdir();
    let runs = campaigns_at(steady.path(), &[1.0, 1.02, 0.98, 1.01, 2.0]);
    let out = compare(&runs[0], &runs[4], "json");
    assert_eq!(out.status.code(), Some(1), "{}", util::stdout(&out));
    let doc = json_of(&out);
    assert_eq!(doc["rows"][0]["verdict"], "slower", "{doc}");
    assert_eq!(doc["rows"][0]["between"]["campaigns"], 3);
}

/// Busy loops outside any run, one more than twice the CPUs, killed when dropped.
struct Hogs(Vec<std::process::Child>);

impl Hogs {
    fn start() -> Hogs {
        let n = 2 * std::thread::available_parallelism().map_or(2, |n| n.get()) + 1;
        Hogs(
            (0..n)
                .map(|_| {
                    std::process::Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A run that had no CPU for much of its time records it (`cpu_contention`, from its cgroup's
/// CPU pressure), its report says so, and `compare` gives its row no faster/slower verdict
/// unless told to judge anyway.
#[test]
fn runs_starved_of_cpu_record_it_and_compare_does_not_judge_them() {
    if !Path::new("/proc/pressure/cpu").exists() {
        eprintln!("skipped: no pressure stall information in this kernel");
        return;
    }
    let tmp = util::tempdir();
    let calm = repeat_plan("calm", r#""syn""#, 10, &synthetic(1.0));
    let (out, a) = run_plan(tmp.path(), "calm", &calm, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    // The stack burns CPU for a while before printing, while busy loops hold every CPU.
    let burning = synthetic(2.0).replace(
        "case \"$CAMPAIGN_BUNDLE_DIR\" in",
        "awk 'BEGIN { for (i = 0; i < 3000000; i++) s += i }'\ncase \"$CAMPAIGN_BUNDLE_DIR\" in",
    );
    let busy = repeat_plan("busy", r#""syn""#, 10, &burning);
    let hogs = Hogs::start();
    let (out, b) = run_plan(tmp.path(), "busy", &busy, &[]);
    drop(hogs);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let rows = json(&b.join("results.json"))["runs"].clone();
    let rows = rows.as_array().unwrap();
    if rows.iter().all(|r| r["cpu_contention"].is_null()) {
        eprintln!("skipped: runs are not in cgroups here (no cgroup v2 delegation)");
        return;
    }
    for r in rows {
        let share = r["cpu_contention"].as_f64().unwrap();
        assert!(share > 0.1 && share <= 1.0, "{r}");
    }
    let manifest = json(
        &b.join("cases")
            .join(
                rows[0]["artifact_bundle"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("cases/"),
            )
            .join("manifest.json"),
    );
    assert!(
        manifest["cpu_contention"].as_f64().unwrap() > 0.1,
        "{manifest}"
    );
    let md = std::fs::read_to_string(b.join("reports/summary.md")).unwrap();
    assert!(
        md.contains("run(s) had no CPU for more than 10 % of their time"),
        "{md}"
    );
    // Twice as slow, measured on a starved machine: contention is weighed (issue 45, item 1).
    let judged = |extra: &[&str]| {
        let mut args = vec![
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--format",
            "json",
            "--no-history",
        ];
        args.extend_from_slice(extra);
        util::run(&args)
    };
    // The old blanket veto, asked for: no verdict, and why; nothing judged (exit 7).
    let out = judged(&["--max-contention", "10%"]);
    assert_eq!(out.status.code(), Some(7), "{}", util::stdout(&out));
    let doc: Value = serde_json::from_str(&util::stdout(&out)).unwrap();
    let row = &doc["rows"][0];
    assert_eq!(row["verdict"], "not_judged", "{row}");
    assert!(
        row["why"].as_str().unwrap().starts_with("contended ("),
        "{row}"
    );
    assert!(row["b"]["cpu_contention"].as_f64().unwrap() > 0.1, "{row}");
    assert_eq!(doc["judged"], 0, "{doc}");
    // By default the doubling is slower unless B's extra stall could explain it: then it is
    // withheld, saying so, and B was stalled for most of its time.
    let out = judged(&[]);
    let doc: Value = serde_json::from_str(&util::stdout(&out)).unwrap();
    let row = &doc["rows"][0];
    match row["verdict"].as_str().unwrap() {
        "slower" => assert_eq!(out.status.code(), Some(1), "{row}"),
        "not_judged" => {
            assert!(
                row["why"].as_str().unwrap().starts_with("contended (B)"),
                "{row}"
            );
            assert!(row["b"]["cpu_contention"].as_f64().unwrap() > 0.4, "{row}");
            assert_eq!(out.status.code(), Some(7), "{row}");
        }
        other => panic!("{other}: {row}"),
    }
    let bad = judged(&["--max-contention", "150%"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        util::stderr(&bad).contains("--max-contention `150%`"),
        "{}",
        util::stderr(&bad)
    );
}

#[test]
fn compare_with_one_short_repeat_prints_numbers_and_why_but_no_verdict() {
    let tmp = util::tempdir();
    let (out, a) = run_plan(tmp.path(), "over", &plan("over", 2, r#""host""#, ""), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let out = compare(&a, &a, "md");
    // Nothing could be judged: not a pass (issue 45, item 4).
    assert_eq!(out.status.code(), Some(7));
    let text = util::stdout(&out);
    assert!(
        text.contains("**judged 0 of 1 rows**: nothing was checked"),
        "{text}"
    );
    // Every format says so, and the job summary is no green tick.
    let summary = compare(&a, &a, "summary");
    assert_eq!(summary.status.code(), Some(7));
    let said = util::stdout(&summary);
    assert!(
        said.starts_with("## ⚠️ campaign compare: nothing judged (judged 0 of 1 rows; not a pass)")
            && !said.contains('✅'),
        "{said}"
    );
    let json = compare(&a, &a, "json");
    assert_eq!(json.status.code(), Some(7));
    let doc: Value = serde_json::from_str(&util::stdout(&json)).unwrap();
    assert_eq!(doc["judged"], 0, "{doc}");
    let junit = compare(&a, &a, "junit");
    assert!(
        util::stdout(&junit).contains(r#"<property name="judged" value="0 of 1 rows"/>"#),
        "{}",
        util::stdout(&junit)
    );
    assert!(
        text.contains("not judged: too few rounds (n=2 timed rounds in 1 repeat"),
        "{text}"
    );
    // The change has no interval: not printed as a finding.
    assert!(
        !text.contains("(no CI)") && text.contains(" | – | "),
        "{text}"
    );
    assert!(text.contains("1 not judged"), "{text}");
}

#[test]
fn alpha_beta_fits_stay_physical_and_a_protocol_switch_fits_the_large_segment() {
    let tmp = util::tempdir();
    // Eager (flat 50 µs) up to 1024 elements, then rendezvous: 1 ms + bytes / 100 MB/s.
    let defs = r#"
[stacks.switch]
command = ["sh", "-c", '''
awk -v c={{ count }} -v w="$CAMPAIGN_WARMUP" -v t="$CAMPAIGN_TIMED" 'BEGIN {
  x = (c <= 1024) ? 0.00005 : 0.001 + c * 4 / 1e8;
  for (i = 0; i < w + t; i++) printf "CAMPAIGN_SAMPLE {\"execute_s\":%.9f}\n", x * (1 + 0.01 * (i % 3));
  print "CAMPAIGN_DONE {\"correctness\":\"pass\"}"
}'
''']
resource = "none"
"#;
    let text = format!(
        r#"[campaign]
name = "fit"

[case]
platform = "host"

[axes]
variant = ["mesh"]
p = [2]
count = [64, 256, 1024, 16384, 65536, 262144, 1048576]
stacks = ["switch"]

[rounds]
warmup = 1
timed = 3

[devices]
kind = "cpu"
{defs}"#
    );
    let (out, dir) = run_plan(tmp.path(), "fit", &text, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let ctx = json(&dir.join("reports/context.json"));
    let m = &ctx["models"][0];
    assert_eq!(m["segment"], true, "{m}");
    assert_eq!(m["fits"], true, "{m}");
    assert_eq!(m["from_bytes"], 65536, "{m}");
    assert!(m["overhead_us"].as_f64().unwrap() >= 0.0, "{m}");
    let b = m["bandwidth_gb_s"].as_f64().unwrap();
    assert!((b - 0.1).abs() < 0.01, "B = 100 MB/s: {m}");
    assert!(m["max_rel_residual"].as_f64().unwrap() < 0.05, "{m}");
    let md = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(
        md.contains("from 64 KiB (smaller sizes break the model)"),
        "{md}"
    );
    assert!(dir.join("figures/bw_model_fit.png").is_file());
}

const TWO_METRICS: &str = r#"
[stacks.py]
command = ["sh", "-c", "for i in 1 2 3; do echo 'CAMPAIGN_SAMPLE {\"execute_s\":0.004,\"device_wall_s\":0.001}'; done; echo 'CAMPAIGN_DONE {\"correctness\":\"pass\"}'"]
resource = "none"
metric = "device_wall_s"

[stacks.cpu]
command = ["sh", "-c", "for i in 1 2 3; do echo 'CAMPAIGN_SAMPLE {\"execute_s\":0.002}'; done; echo 'CAMPAIGN_DONE {\"correctness\":\"pass\"}'"]
resource = "none"
"#;

#[test]
fn each_stack_reports_its_declared_metric_and_unlike_metrics_are_not_paired() {
    let tmp = util::tempdir();
    let unpaired = plan(
        "metric",
        2,
        r#""cpu", "py""#,
        &format!("[report]\nbaseline = \"cpu\"\n{TWO_METRICS}"),
    );
    let (out, dir) = run_plan(tmp.path(), "metric", &unpaired, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let ctx = json(&dir.join("reports/context.json"));
    let cells = ctx["cases"][0]["cells"].as_array().unwrap();
    let py = cells.iter().find(|c| c["stack"] == "py").unwrap();
    assert_eq!(py["metric"], "device_wall_s");
    assert_eq!(
        py["median_s"], 0.001,
        "the device wall, not the 4 ms interval"
    );
    assert!(
        ctx["paired"].as_array().unwrap().is_empty(),
        "{}",
        ctx["paired"]
    );
    let note = ctx["pairing_notes"][0].as_str().unwrap();
    assert!(
        note.contains("`py` measures `device_wall_s`, `cpu` measures `execute_s`"),
        "{note}"
    );
    let md = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(md.contains("| py (device_wall_s) |"), "{md}");
    assert!(md.contains("set [report] compare_metric"), "{md}");
    // The plan names one metric for pairing: py's execute_s against cpu's.
    let paired = plan(
        "metric2",
        2,
        r#""cpu", "py""#,
        &format!("[report]\nbaseline = \"cpu\"\ncompare_metric = \"execute_s\"\n{TWO_METRICS}"),
    );
    let (out, dir) = run_plan(tmp.path(), "metric2", &paired, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let ctx = json(&dir.join("reports/context.json"));
    let p = &ctx["paired"][0];
    assert_eq!(p["metric"], "execute_s", "{p}");
    assert!((p["ratio"].as_f64().unwrap() - 2.0).abs() < 1e-9, "{p}");
    // A metric no stack can have is a plan error naming the key.
    let bad = plan(
        "metric3",
        2,
        r#""cpu""#,
        "[report]\ncompare_metric = \"median\"\n",
    );
    let (out, _) = {
        let file = tmp.path().join("bad.toml");
        std::fs::write(&file, bad).unwrap();
        (
            util::run_in(tmp.path(), &["validate", file.to_str().unwrap()]),
            (),
        )
    };
    assert_eq!(out.status.code(), Some(2));
    assert!(
        util::stderr(&out).contains("report.compare_metric"),
        "{}",
        util::stderr(&out)
    );
}

#[test]
fn resume_of_a_repeated_campaign_reruns_the_missing_repeats_only() {
    let tmp = util::tempdir();
    let text = counts_plan("resrep", 2);
    let (out, dir) = run_plan(tmp.path(), "resrep", &text, &["--repeats", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    // The journal keeps --repeats, so a resume prepares the same 6 runs.
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(dir.join("journal.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["selection"]["repeats"], 2);
    assert_eq!(header["steps"].as_array().unwrap().len(), 6);
    // Lose the second repeat of one case; `resume --verify` runs exactly that run again.
    let first = row_keys(&dir)[0].0.clone();
    std::fs::remove_dir_all(dir.join("cases").join(format!("{first}~r2"))).unwrap();
    let out = util::run_in(
        tmp.path(),
        &["resume", dir.to_str().unwrap(), "--verify", "-q"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    assert!(
        util::stdout(&out).contains("5 done, 1 to run"),
        "{}",
        util::stdout(&out)
    );
    let rows = json(&dir.join("results.json"))["runs"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(rows.len(), 6);
    assert!(rows
        .iter()
        .any(|r| r["case_id"] == first.as_str() && r["repeat"] == 2));
}
