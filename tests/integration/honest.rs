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
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = util::run_in(dir, &refs);
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
    let (out, dir) = run_plan(tmp.path(), "over", &plan("over", p, r#""host""#, ""), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let doc = json(&dir.join("results.json"));
    let r = &doc["runs"][0];
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
    assert_eq!(&rec[col("oversubscribed")], "true");
    assert_eq!(&rec[col("cpus")], cpus.to_string());
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
