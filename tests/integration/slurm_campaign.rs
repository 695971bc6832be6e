//! Whole campaigns through the real Slurm (`campaign run --executor slurm`): the engine killed
//! with SIGKILL mid-campaign and resumed re-attaches to its jobs instead of submitting them
//! again; Ctrl-C without a terminal leaves the jobs running (and resume collects them), with
//! `--cancel-on-interrupt` cancels them; a job over its time limit is a `timeout` with Slurm's
//! reason; runs larger than the local pool go to Slurm, `[slurm] max_jobs` bounds the queue.
//!
//! The stack is tests/integration/fixtures/resume/counting.sh: it appends "<case_id> start" to
//! a counter file each time it is launched, so duplicate jobs show as duplicate lines.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::slurm::cluster;
use crate::util;

/// Longest wait for a campaign to reach a state; a campaign that never gets there fails the
/// test instead of hanging the suite.
const GUARD: Duration = Duration::from_secs(120);

struct Campaign {
    tmp: tempfile::TempDir,
    name: String,
    plan: PathBuf,
    results: PathBuf,
    counter: PathBuf,
    conf: PathBuf,
}

impl Campaign {
    /// A campaign of `counts.len()` host cases (P=2) on the counting stack sleeping `sleep`
    /// seconds, with `extra` appended to the plan.
    fn new(conf: PathBuf, tag: &str, counts: &str, sleep: u32, extra: &str) -> Campaign {
        let tmp = util::tempdir();
        let name = format!("{tag}-{}", std::process::id());
        let counter = tmp.path().join("count.log");
        let plan = tmp.path().join("plan.toml");
        let text = format!(
            r#"[campaign]
name = "{name}"

[case]
platform = "host"

[axes]
variant = ["mesh"]
p = [2]
count = [{counts}]
stacks = ["count"]

[rounds]
warmup = 1
timed = 2

[run]
timeout = "60s"
order = "given"
# One run per (case, stack): each is a Slurm job, and the tests count them.
repeats = 1

[devices]
kind = "cpu"

[slurm]
poll_interval = "200ms"

[stacks.count]
command = ["{script}", "{counter}", "{sleep}"]
resource = "none"
{extra}
"#,
            script = util::root()
                .join("tests/integration/fixtures/resume/counting.sh")
                .display(),
            counter = counter.display(),
        );
        std::fs::write(&plan, text).unwrap();
        let results = tmp.path().join("results");
        Campaign {
            tmp,
            name,
            plan,
            results,
            counter,
            conf,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(util::exe());
        c.current_dir(self.tmp.path())
            .args(args)
            .args(["--results-dir", self.results.to_str().unwrap(), "-q"])
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    fn spawn_run(&self, extra: &[&str]) -> Child {
        let mut args = vec!["run", self.plan.to_str().unwrap(), "--executor", "slurm"];
        args.extend(extra);
        self.command(&args).spawn().unwrap()
    }

    fn resume(&self) -> Output {
        let dir = self.run_dir();
        // No --executor: the journal header says the campaign runs through Slurm.
        self.command(&["resume", dir.to_str().unwrap()])
            .output()
            .unwrap()
    }

    /// The run dir once its journal exists (`run` makes the dir a moment before it writes the
    /// journal; waiting for the file, capped, instead of failing in between).
    fn run_dir(&self) -> PathBuf {
        let start = Instant::now();
        loop {
            if let Some(dir) = self.try_run_dir() {
                return dir;
            }
            assert!(
                start.elapsed() < GUARD,
                "no run dir with a journal under {}",
                self.results.join(&self.name).display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn try_run_dir(&self) -> Option<PathBuf> {
        std::fs::read_dir(self.results.join(&self.name))
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.join("journal.jsonl").is_file())
    }

    /// Every journal line after the header (none before the journal exists).
    fn journal(&self) -> Vec<Value> {
        let Some(dir) = self.try_run_dir() else {
            return Vec::new();
        };
        let text = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap_or_default();
        text.lines()
            .skip(1)
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Slurm job ids of `submitted` lines that are not re-attachments, in journal order.
    fn submitted(&self) -> Vec<u64> {
        self.journal()
            .iter()
            .filter(|l| l["event"] == "submitted" && l.get("reattached").is_none())
            .filter_map(|l| l["slurm_job_id"].as_u64())
            .collect()
    }

    /// Wait until `n` jobs were submitted (and journaled).
    fn wait_submitted(&self, n: usize, child: &mut Child) -> Vec<u64> {
        let start = Instant::now();
        loop {
            let ids = self.submitted();
            if ids.len() >= n {
                return ids;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("campaign ended ({status}) before {n} jobs were submitted");
            }
            assert!(start.elapsed() < GUARD, "{n} jobs never submitted");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every job Slurm knows with this campaign's name prefix: `(id, state)`.
    fn slurm_jobs(&self) -> Vec<(u64, String)> {
        let out = Command::new("squeue")
            .args(["-h", "-t", "all", "-o", "%i|%j|%T"])
            .env("SLURM_CONF", &self.conf)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", util::stderr(&out));
        let prefix = format!("campaign:{}:", self.name);
        let mut jobs: Vec<(u64, String)> = util::stdout(&out)
            .lines()
            .filter_map(|l| {
                let mut f = l.trim().split('|');
                let (id, name, state) = (f.next()?, f.next()?, f.next()?);
                name.starts_with(&prefix)
                    .then(|| (id.parse().ok(), state.to_string()))
                    .and_then(|(id, s)| id.map(|i| (i, s)))
            })
            .collect();
        jobs.sort();
        jobs
    }

    /// How often each case's stack was launched.
    fn launches(&self) -> Vec<String> {
        let mut lines: Vec<String> = std::fs::read_to_string(&self.counter)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.ends_with(" start"))
            .map(str::to_string)
            .collect();
        lines.sort();
        lines
    }

    /// `(case_id, status, reason)` of every run in results.json.
    fn results(&self) -> Vec<(String, String, String)> {
        let doc = self.results_json();
        let mut rows: Vec<(String, String, String)> = doc["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["case_id"].as_str().unwrap().to_string(),
                    r["status"].as_str().unwrap().to_string(),
                    r["reason"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        rows.sort();
        rows
    }

    fn results_json(&self) -> Value {
        let path = self.run_dir().join("results.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: sending a signal to a child process we spawned and have not reaped.
    unsafe {
        libc::kill(child.id() as i32, sig);
    }
}

fn wait(child: Child) -> Output {
    child.wait_with_output().unwrap()
}

fn show(out: &Output) -> String {
    format!("{}{}", util::stdout(out), util::stderr(out))
}

/// Case ids of the P=2 cases of `counts`, sorted.
fn case_ids(counts: &[u32]) -> Vec<String> {
    let mut ids: Vec<String> = counts
        .iter()
        .map(|c| format!("mesh_p2_count{c}_fp32_host_d0-1"))
        .collect();
    ids.sort();
    ids
}

#[test]
fn sigkill_mid_campaign_then_resume_reattaches_instead_of_resubmitting() {
    let Some(conf) = cluster() else { return };
    let c = Campaign::new(conf, "slurm-kill", "64, 128, 256, 512", 3, "");
    let mut child = c.spawn_run(&[]);
    let ids = c.wait_submitted(4, &mut child);
    child.kill().unwrap();
    let _ = wait(child);
    // Killed with the jobs in flight: no run has finished in the journal.
    let finished = c
        .journal()
        .iter()
        .filter(|l| l["event"] == "finished" && l["step"].as_str().unwrap().starts_with("run:"))
        .count();
    assert_eq!(finished, 0, "the kill landed after runs ended");

    let out = c.resume();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        util::stdout(&out).contains("re-attaching to 4 Slurm jobs"),
        "{}",
        show(&out)
    );
    // One job per run in Slurm, the same ones the first session submitted.
    let jobs = c.slurm_jobs();
    let mut submitted = ids.clone();
    submitted.sort();
    assert_eq!(
        jobs.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        submitted
    );
    assert!(jobs.iter().all(|(_, s)| s == "COMPLETED"), "{jobs:?}");
    assert!(c.submitted().len() == 4, "resume submitted nothing new");
    // Every stack ran once and every run is in results.json once, passing.
    let cases = case_ids(&[64, 128, 256, 512]);
    assert_eq!(
        c.launches(),
        cases
            .iter()
            .map(|c| format!("{c} start"))
            .collect::<Vec<_>>()
    );
    let results = c.results();
    assert_eq!(
        results.iter().map(|r| r.0.clone()).collect::<Vec<_>>(),
        cases
    );
    assert!(results.iter().all(|r| r.1 == "pass"), "{results:?}");
    // Each finished line names its job; manifests record it too.
    let run_lines = c.journal();
    let finished = run_lines.iter().filter(|l| {
        l["event"] == "finished" && l["step"].as_str().is_some_and(|s| s.starts_with("run:"))
    });
    for line in finished {
        let id = line["slurm_job_id"]
            .as_u64()
            .expect("finished names its job");
        assert!(ids.contains(&id), "{line}");
    }
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(
            c.run_dir()
                .join("cases")
                .join(&cases[0])
                .join("count/manifest.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["slurm"]["state"], "COMPLETED");
    assert!(ids.contains(&manifest["slurm"]["job_id"].as_u64().unwrap()));
    assert_eq!(c.results_json()["provenance"]["executor"], "slurm");
}

#[test]
fn ctrl_c_without_a_terminal_leaves_jobs_running_and_resume_collects_them() {
    let Some(conf) = cluster() else { return };
    let c = Campaign::new(conf, "slurm-leave", "64, 128", 6, "");
    let mut child = c.spawn_run(&[]);
    let ids = c.wait_submitted(2, &mut child);
    signal(&child, libc::SIGINT);
    let out = wait(child);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let err = util::stderr(&out);
    let listed = format!("{} {}", ids[0].min(ids[1]), ids[0].max(ids[1]));
    assert!(
        err.contains(&format!("left 2 Slurm job(s) queued or running: {listed}")),
        "{}",
        show(&out)
    );
    assert!(
        err.contains(&format!("`scancel {listed}` cancels them")),
        "{err}"
    );
    assert!(err.contains("re-attaches to them"), "{err}");
    // Not cancelled: Slurm still runs (or has just finished) them.
    let jobs = c.slurm_jobs();
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    assert!(
        jobs.iter()
            .all(|(_, s)| ["PENDING", "RUNNING", "COMPLETING", "COMPLETED"].contains(&s.as_str())),
        "{jobs:?}"
    );
    let journal = c.journal();
    let event = journal
        .iter()
        .find(|l| l["event"] == "slurm_interrupt")
        .expect("the interrupt is journaled");
    assert_eq!(event["action"], "left_running");
    assert_eq!(event["jobs"].as_array().unwrap().len(), 2);
    // Let the jobs end while no campaign watches them: resume judges them from Slurm's record
    // and the bundle.
    let start = Instant::now();
    while !c.slurm_jobs().iter().all(|(_, s)| s == "COMPLETED") {
        assert!(start.elapsed() < GUARD, "{:?}", c.slurm_jobs());
        std::thread::sleep(Duration::from_millis(200));
    }

    let out = c.resume();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(c.slurm_jobs().len(), 2, "nothing submitted twice");
    let cases = case_ids(&[64, 128]);
    assert_eq!(
        c.launches(),
        cases
            .iter()
            .map(|c| format!("{c} start"))
            .collect::<Vec<_>>()
    );
    let results = c.results();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r.1 == "pass"), "{results:?}");
}

#[test]
fn cancel_on_interrupt_cancels_the_jobs_and_records_them_interrupted() {
    let Some(conf) = cluster() else { return };
    let c = Campaign::new(conf, "slurm-cancel", "64, 128", 60, "");
    let mut child = c.spawn_run(&["--cancel-on-interrupt"]);
    let ids = c.wait_submitted(2, &mut child);
    signal(&child, libc::SIGINT);
    let out = wait(child);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let jobs = c.slurm_jobs();
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    assert!(jobs.iter().all(|(_, s)| s == "CANCELLED"), "{jobs:?}");
    let results = c.results();
    assert!(
        results
            .iter()
            .all(|r| r.1 == "interrupted" && r.2.contains("CANCELLED")),
        "{results:?}"
    );
    let journal = c.journal();
    let event = journal
        .iter()
        .find(|l| l["event"] == "slurm_interrupt")
        .expect("the interrupt is journaled");
    assert_eq!(event["action"], "cancelled");
    let mut journaled: Vec<u64> = event["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    journaled.sort();
    let mut ids = ids;
    ids.sort();
    assert_eq!(journaled, ids);
}

#[test]
fn run_over_its_slurm_time_limit_is_a_timeout_with_slurms_reason() {
    let Some(conf) = cluster() else { return };
    let c = Campaign::new(conf.clone(), "slurm-limit", "64", 300, "");
    let mut child = c.spawn_run(&[]);
    let id = c.wait_submitted(1, &mut child)[0];
    // The 60 s timeout asks Slurm for --time=0:01:00; lowering the limit to zero makes
    // Slurm's own time-limit check (every 30 s) end the job.
    let out = Command::new("scontrol")
        .args(["update", &format!("JobId={id}"), "TimeLimit=0"])
        .env("SLURM_CONF", &conf)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", util::stderr(&out));
    let out = wait(child);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let results = c.results();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].1, "timeout", "{results:?}");
    assert!(
        results[0]
            .2
            .starts_with(&format!("Slurm job {id} TIMEOUT (reason TimeLimit")),
        "{results:?}"
    );
    assert!(
        util::stdout(&out).contains(&format!(
            "timeout {}/count: Slurm job {id} TIMEOUT",
            results[0].0
        )),
        "{}",
        show(&out)
    );
}

#[test]
fn runs_larger_than_the_local_pool_go_to_slurm_one_job_at_a_time_with_max_jobs() {
    let Some(conf) = cluster() else { return };
    // P=4 on a local pool of two devices: refused locally, granted by Slurm.
    let c = Campaign::new(conf, "slurm-pool", "64, 128", 0, "");
    let text = std::fs::read_to_string(&c.plan)
        .unwrap()
        .replace("p = [2]", "p = [4]")
        .replace("kind = \"cpu\"", "kind = \"npu\"\nids = \"0-1\"")
        .replace("resource = \"none\"", "resource = \"npu\"")
        .replace(
            "poll_interval = \"200ms\"",
            "poll_interval = \"200ms\"\nmax_jobs = 1",
        )
        .replace(
            "order = \"given\"",
            "order = \"given\"\nexecutor = \"slurm\"",
        );
    std::fs::write(&c.plan, text).unwrap();
    let local = c
        .command(&["run", c.plan.to_str().unwrap(), "--executor", "local"])
        .output()
        .unwrap();
    assert_eq!(local.status.code(), Some(2), "{}", show(&local));
    assert!(util::stderr(&local).contains("devices"), "{}", show(&local));

    let out = c
        .command(&["run", c.plan.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let cases: Vec<String> = [64, 128]
        .iter()
        .map(|n| format!("mesh_p4_count{n}_fp32_host_d0-1-2-3"))
        .collect();
    for case in &cases {
        let manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(
                c.run_dir()
                    .join("cases")
                    .join(case)
                    .join("count/manifest.json"),
            )
            .unwrap(),
        )
        .unwrap();
        let devices = manifest["devices"].as_array().unwrap();
        assert_eq!(devices.len(), 4, "{manifest}");
        let granted = manifest["slurm"]["granted"].as_str().unwrap();
        let ids: Vec<String> = devices.iter().map(|d| d.to_string()).collect();
        assert_eq!(granted, ids.join(","), "{manifest}");
    }
    // max_jobs = 1: the second job is submitted only after the first run finished.
    let order: Vec<String> = c
        .journal()
        .iter()
        .filter(|l| l["step"].as_str().is_some_and(|s| s.starts_with("run:")))
        .map(|l| l["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        order,
        [
            "started",
            "submitted",
            "finished",
            "started",
            "submitted",
            "finished"
        ],
        "{order:?}"
    );
}

/// A journal is a file that can come from someone else: `resume` neither re-attaches to nor
/// cancels a Slurm job it names unless that job runs one of this run dir's bundle scripts. Open
/// run steps are pointed at a foreign running job — one with its own fingerprint (a re-attach
/// candidate), one with a changed fingerprint (a stale job to cancel); the job keeps running,
/// the resume says it left it alone, and both runs run again as jobs of their own.
#[test]
fn resume_neither_reattaches_to_nor_cancels_a_foreign_job_the_journal_names() {
    let Some(conf) = cluster() else { return };
    let c = Campaign::new(conf.clone(), "slurm-foreign", "64, 128", 0, "");
    let out = c
        .command(&["run", c.plan.to_str().unwrap(), "--executor", "slurm"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let foreign = Command::new("sbatch")
        .args([
            "--parsable",
            "--job-name",
            "someone-else",
            "--wrap",
            "sleep 300",
        ])
        .current_dir(c.tmp.path())
        .env("SLURM_CONF", &conf)
        .output()
        .unwrap();
    assert!(foreign.status.success(), "{}", util::stderr(&foreign));
    let job: u64 = util::stdout(&foreign)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let state = |id: u64| {
        let out = Command::new("squeue")
            .args(["-h", "-t", "all", "-j", &id.to_string(), "-o", "%T"])
            .env("SLURM_CONF", &conf)
            .output()
            .unwrap();
        util::stdout(&out).trim().to_string()
    };
    let lines = c.journal();
    let finished: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "finished" && l["step"].as_str().unwrap().starts_with("run:"))
        .collect();
    assert_eq!(finished.len(), 2);
    let mut hostile = String::new();
    for (i, line) in finished.iter().enumerate() {
        let step = line["step"].as_str().unwrap();
        let fingerprint = if i == 0 {
            line["fingerprint"].as_str().unwrap()
        } else {
            "changed"
        };
        let t = "2026-12-02T00:00:00.000+00:00";
        hostile += &format!(
            "{}\n{}\n",
            serde_json::json!({"t": t, "event": "started", "step": step, "attempt": 2, "fingerprint": fingerprint}),
            serde_json::json!({"t": t, "event": "submitted", "step": step, "attempt": 2, "slurm_job_id": job}),
        );
    }
    let journal = c.run_dir().join("journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    std::fs::write(&journal, format!("{text}{hostile}")).unwrap();

    let out = c.resume();
    let after = state(job);
    let _ = Command::new("scancel")
        .arg(job.to_string())
        .env("SLURM_CONF", &conf)
        .status();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        matches!(after.as_str(), "RUNNING" | "PENDING"),
        "the foreign job is {after}\n{}",
        show(&out)
    );
    assert!(
        util::stderr(&out).contains(&format!(
            "Slurm job(s) {job} named by the journal do not run this run dir's scripts"
        )),
        "{}",
        show(&out)
    );
    // Both runs ran again, each as a job of this campaign (two launches per case in all).
    assert_eq!(c.launches().len(), 4, "{:?}\n{}", c.launches(), show(&out));
    assert!(
        c.results().iter().all(|r| r.1 == "pass"),
        "{:?}",
        c.results()
    );
}
