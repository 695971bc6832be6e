//! Ctrl-C during the report step: a stack that reports tens of thousands of distinct phase
//! names makes a report step of seconds; campaign must stop at once on SIGINT there (exit 3),
//! leaving what it recorded intact, and say how to render the report again.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::{exe, tempdir};

/// Distinct phase names over all samples, 10,000 per sample line (a line stays under the
/// parser's 1 MiB cap).
const PHASES: usize = 80_000;
const PER_SAMPLE: usize = 10_000;

/// The stack's whole output: `PHASES / PER_SAMPLE` timed samples, each naming its own phases.
fn output() -> String {
    let mut out = String::new();
    for r in 0..PHASES / PER_SAMPLE {
        let phases: Vec<String> = (r * PER_SAMPLE..(r + 1) * PER_SAMPLE)
            .map(|i| format!("\"ph{i}\":{}e-6", i % 97 + 1))
            .collect();
        out.push_str(&format!(
            "CAMPAIGN_SAMPLE {{\"execute_s\":0.00{},\"ok\":true,\"phases\":{{{}}}}}\n",
            r + 1,
            phases.join(",")
        ));
    }
    out.push_str("CAMPAIGN_DONE {\"correctness\":\"pass\"}\n");
    out
}

fn plan(dir: &Path) -> String {
    let file = dir.join("phases.out");
    std::fs::write(&file, output()).unwrap();
    format!(
        r#"[campaign]
name = "phases"
[case]
platform = "host"
[axes]
variant = ["mesh"]
p = [2]
count = [64]
stacks = ["many"]
[rounds]
warmup = 0
timed = {}
[run]
repeats = 1
[stacks.many]
command = ["cat", "{}"]
resource = "none"
"#,
        PHASES / PER_SAMPLE,
        file.display()
    )
}

#[test]
fn ctrl_c_during_the_report_step_stops_at_once_and_keeps_the_recorded_runs() {
    let tmp = tempdir();
    std::fs::write(tmp.path().join("phases.toml"), plan(tmp.path())).unwrap();
    let results = tmp.path().join("results");
    let mut child = std::process::Command::new(exe())
        .current_dir(tmp.path())
        .args(["run", "phases.toml", "--results-dir"])
        .arg(&results)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The event: campaign says the report step begins (every run recorded before it).
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let began = loop {
        match lines.next() {
            Some(Ok(line)) => {
                let began = line.starts_with("report: every run is recorded; rendering");
                seen.push(line);
                if began {
                    break true;
                }
            }
            _ => break false,
        }
    };
    assert!(began, "the report step never began:\n{}", seen.join("\n"));
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    // A generous cap for a busy machine: the promise is "at once", the test only that it
    // stops long before a report of 80,000 phases would have ended by itself.
    let cap = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < cap,
            "campaign did not stop within 60 s of SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(
        err.contains(
            "interrupted: every run is recorded; the report was not finished: campaign report"
        ),
        "{err}"
    );
    // What was recorded before the report step is intact: the run passed, in the journal and
    // in results.json, with all its samples.
    let run_dir = std::fs::read_dir(results.join("phases"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let journal = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    assert!(
        journal
            .lines()
            .any(|l| l.contains("\"finished\"") && l.contains("\"pass\"")),
        "{journal}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("results.json")).unwrap())
            .unwrap();
    let runs = doc["runs"].as_array().expect("results.json lists the runs");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "pass");
    assert_eq!(runs[0]["stack"], "many");
    // `campaign status` reads the run dir as a finished campaign.
    let status = crate::util::run_in(tmp.path(), &["status", run_dir.to_str().unwrap()]);
    assert_eq!(
        status.status.code(),
        Some(0),
        "{}",
        crate::util::stderr(&status)
    );
}
