//! Huge plans: above the documented size `run` wants `--yes` (exit 2, no run dir, elsewhere than
//! at a terminal), Ctrl-C during preparation stops it cleanly (exit 3, no run dir) even when the
//! shell started it with SIGINT ignored, Ctrl-C just after the run dir appears stops the
//! campaign before its runs (exit 3), a plan over the case limit is refused by `validate`
//! with the axis sizes, and a campaign over the run limit by `run` before any run dir.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::{exe, run_in, stderr, tempdir};

/// A plan of `n` cases on the host stack (one axis of counts).
fn plan_of(dir: &Path, n: usize) -> String {
    let counts: Vec<String> = (1..=n).map(|c| c.to_string()).collect();
    let text = format!(
        "[campaign]\nname = \"huge\"\n[case]\nplatform = \"host\"\n[axes]\nvariant = [\"mesh\"]\np = [2]\ncount = [{}]\n[rounds]\nwarmup = 0\ntimed = 1\n[run]\nrepeats = 1\n",
        counts.join(",")
    );
    std::fs::write(dir.join("huge.toml"), text).unwrap();
    "huge.toml".into()
}

/// `campaign run PLAN -q --results-dir RESULTS EXTRA…` in `dir`.
fn run_quietly(dir: &Path, plan: &str, results: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        plan,
        "-q",
        "--results-dir",
        results.to_str().unwrap(),
    ];
    args.extend(extra);
    run_in(dir, &args)
}

fn is_empty_or_missing(dir: &Path) -> bool {
    !dir.exists() || std::fs::read_dir(dir).unwrap().next().is_none()
}

#[test]
fn more_than_100k_runs_need_yes_and_ctrl_c_in_preparation_stops_cleanly() {
    let tmp = tempdir();
    let plan = plan_of(tmp.path(), 100_001);
    let results = tmp.path().join("results");
    let o = run_quietly(tmp.path(), &plan, &results, &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("this campaign has 100001 runs, more than 100000; pass --yes"),
        "{err}"
    );
    assert!(is_empty_or_missing(&results), "refused before any run dir");

    // With --yes it would start; Ctrl-C while it prepares stops it before anything exists.
    // SIGINT starts ignored, as for a background job of a script.
    let mut cmd = std::process::Command::new(exe());
    cmd.current_dir(tmp.path())
        .args(["run", &plan, "-q", "--yes", "--results-dir"])
        .arg(&results)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    // Signals sent before campaign listens are ignored (as the shell asked); keep sending until
    // it exits. Preparing 100,001 cases takes far longer than one 50 ms poll, so the first
    // signal it hears arrives during preparation.
    let cap = Instant::now() + Duration::from_secs(120);
    let status = loop {
        unsafe {
            libc::kill(child.id() as i32, libc::SIGINT);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < cap, "campaign did not stop within 120 s");
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(
        err.contains("interrupted while preparing the campaign"),
        "{err}"
    );
    assert!(
        is_empty_or_missing(&results),
        "no run dir after Ctrl-C in preparation"
    );
}

#[test]
fn a_plan_over_the_case_limit_is_refused_by_validate() {
    let tmp = tempdir();
    let counts: Vec<String> = (1..=1001).map(|c| c.to_string()).collect();
    let ps: Vec<String> = (2..=1001).map(|c| c.to_string()).collect();
    std::fs::write(
        tmp.path().join("big.toml"),
        format!(
            "[campaign]\nname = \"big\"\n[axes]\nvariant = [\"mesh\"]\np = [{}]\ncount = [{}]\n",
            ps.join(","),
            counts.join(",")
        ),
    )
    .unwrap();
    let o = run_in(tmp.path(), &["validate", "big.toml"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("big.toml:6:9: axes.count: the plan makes 1001000 cases (1 variant × 1000 p × 1001 count), more than the maximum of 1000000"),
        "{err}"
    );
}

#[test]
fn a_campaign_over_the_run_limit_is_refused_before_any_run_dir() {
    let tmp = tempdir();
    let plan = plan_of(tmp.path(), 1001);
    let results = tmp.path().join("results");
    let o = run_quietly(tmp.path(), &plan, &results, &["--yes", "--repeats", "1000"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the plan makes 1001000 runs (1001 cases × 1 stacks × 1000 repeats), more than the maximum of 1000000"),
        "{err}"
    );
    assert!(err.contains("huge.toml"), "names the plan: {err}");
    assert!(is_empty_or_missing(&results), "refused before any run dir");
}

/// The run dir's journal under `results`, once `run` has made it.
fn journal_in(results: &Path) -> Option<std::path::PathBuf> {
    let campaign = results.join("huge");
    let dir = std::fs::read_dir(campaign).ok()?.next()?.ok()?.path();
    let journal = dir.join("journal.jsonl");
    journal.is_file().then_some(journal)
}

#[test]
fn ctrl_c_as_the_run_dir_appears_stops_the_campaign_before_its_runs() {
    // Between preparation's last look at Ctrl-C and the campaign's own listener lie the run
    // dir, its journal and the schedule of 100,001 runs: a signal there must not be lost.
    let tmp = tempdir();
    let plan = plan_of(tmp.path(), 100_001);
    let results = tmp.path().join("results");
    let mut child = std::process::Command::new(exe())
        .current_dir(tmp.path())
        .args(["run", &plan, "-q", "--yes", "--results-dir"])
        .arg(&results)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let cap = Instant::now() + Duration::from_secs(120);
    let journal = loop {
        if let Some(j) = journal_in(&results) {
            break j;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "campaign exited before making its run dir"
        );
        assert!(Instant::now() < cap, "no journal within 120 s");
        std::thread::sleep(Duration::from_millis(5));
    };
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > cap + Duration::from_secs(120) {
            let _ = child.kill();
            panic!("the Ctrl-C was lost: the campaign still runs 120 s later");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(err.contains("continue with: campaign resume"), "{err}");
    let finished = std::fs::read_to_string(&journal)
        .unwrap()
        .matches("\"event\":\"finished\"")
        .count();
    assert!(
        finished < 100_001,
        "every run finished: the signal was not heard"
    );
}
