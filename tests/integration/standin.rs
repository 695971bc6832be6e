//! The simpler stand-in (`fixtures/standin/simpler.py`) driven end to end: failing runs name
//! their cause in results, `status` and the report; readiness probes in `doctor` and the
//! engine's pre-flight; free variants and rank constraints planned, skipped and run as declared;
//! shell-quoted template values.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::containment::standin;
use crate::util;

/// Write a plan `name` (P axis `ps`, devices `0-(ids-1)`) with `defs` appended and run it.
fn run(
    dir: &Path,
    name: &str,
    axes: &str,
    ids: u32,
    defs: &str,
    env: &[(&str, &str)],
) -> (Output, PathBuf) {
    let text = format!(
        r#"[campaign]
name = "{name}"

[case]
platform = "host"

[axes]
{axes}
count = [256]

[rounds]
warmup = 0
timed = 1

[run]
timeout = "2m"
order = "given"

[devices]
kind = "npu"
ids = "0-{last}"
{defs}"#,
        last = ids - 1
    );
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    let results = dir.join("results");
    let mut c = std::process::Command::new(util::exe());
    c.current_dir(dir).args([
        "run",
        file.to_str().unwrap(),
        "--results-dir",
        results.to_str().unwrap(),
        "-q",
    ]);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let run_dir = std::fs::read_dir(results.join(name))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    (out, run_dir)
}

fn rows(dir: &Path) -> Vec<Value> {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    v["runs"].as_array().unwrap().clone()
}

fn standin_def(extra: &str) -> String {
    format!(
        r#"
[stacks.standin]
command = ["python3", "{script}", "-p", "{{{{ platform }}}}", "-d", "{{{{ devices_range }}}}"]
shape = "subprocess"
parser = "markers"
markers = {{ builtin = "simpler" }}
env = {{ PYTHONUNBUFFERED = "1" }}
{extra}
"#,
        script = standin()
    )
}

#[test]
fn failing_runs_name_their_cause_in_results_status_and_report() {
    let tmp = util::tempdir();
    let (out, dir) = run(
        tmp.path(),
        "cause",
        "variant = [\"mesh\"]\np = [2, 17]\nstacks = [\"standin\"]",
        17,
        &standin_def(""),
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr(&out));
    let rows = rows(&dir);
    let by_p = |p: u64| rows.iter().find(|r| r["p"] == p).unwrap().clone();
    assert_eq!(by_p(2)["status"], "pass", "{:?}", by_p(2));
    let failed = by_p(17);
    assert_eq!(failed["status"], "fail");
    let expected =
        "exit code 1: ValueError: allreduce needs between 2 and 16 devices, got 17 (see run.log)";
    assert_eq!(failed["reason"], expected);
    let status = util::run(&["status", dir.to_str().unwrap()]);
    assert!(
        util::stdout(&status).contains(expected),
        "{}",
        util::stdout(&status)
    );
    let report = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(
        report.contains("ValueError: allreduce needs between 2 and 16 devices, got 17"),
        "{report}"
    );
}

#[test]
fn a_wrong_interpreter_is_named_not_just_exit_code_1() {
    let tmp = util::tempdir();
    let (out, dir) = run(
        tmp.path(),
        "torchless",
        "variant = [\"mesh\"]\np = [2]\nstacks = [\"standin\"]",
        2,
        &standin_def(""),
        &[("STANDIN_NO_TORCH", "1")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr(&out));
    assert_eq!(
        rows(&dir)[0]["reason"],
        "exit code 1: ModuleNotFoundError: No module named 'torch' (see run.log)"
    );
}
