//! The built-in `host` stack through the real Slurm and locally: the same cases, rendered the
//! same way, give the same set of passing runs and the same number of samples (the engine's
//! `--executor slurm` path, minus the scheduler and journal).

use std::path::Path;
use std::time::Duration;

use campaign::executor::local::run_process;
use campaign::executor::slurm::{process_outcome, replay_log, BatchJob, SlurmService, Verdict};
use campaign::executor::{ProcessOutcome, ProcessSpec};
use campaign::model::case::{Case, Variant};
use campaign::model::output::OutputLine;
use campaign::model::plan::DeviceKind;
use campaign::stack::parsers;
use campaign::stack::parsers::{ParseContext, Parsed};
use campaign::stack::registry;
use campaign::stack::render::{render, RenderContext};
use tokio::sync::watch;

use crate::slurm::{cluster, executor};
use crate::util;

const GUARD: Duration = Duration::from_secs(120);

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (variant, p, count) in [
        (Variant::Mesh, 2, 256),
        (Variant::Ring, 4, 4096),
        (Variant::Twophase, 2, 1024),
    ] {
        let mut case = Case::new(variant, p, count);
        case.warmup_rounds = 1;
        case.timed_rounds = 3;
        out.push(case);
    }
    // The fourth run gets a wrong value injected (see `spec`): it must fail both ways.
    let mut bad = Case::new(Variant::Twophase, 4, 10);
    bad.warmup_rounds = 1;
    bad.timed_rounds = 3;
    out.push(bad);
    out
}

fn spec(case: &Case, bundle: &Path) -> ProcessSpec {
    std::fs::create_dir_all(bundle).unwrap();
    let case_file = bundle.join("case.json");
    std::fs::write(&case_file, case.to_pretty_json()).unwrap();
    let ctx = RenderContext {
        case: case.clone(),
        devices: (0..case.p).collect(),
        warmup: case.warmup_rounds,
        timed: case.timed_rounds,
        case_file,
        bundle_dir: bundle.to_path_buf(),
        run_dir: bundle.to_path_buf(),
        root: None,
        campaign_exe: util::exe(),
    };
    let mut rendered = render("host", &registry::host(), &ctx).expect("render host");
    if case.count == 10 {
        // Rank 1 writes a wrong value in timed round 3, the last (checked by default): a
        // golden mismatch.
        rendered
            .argv
            .extend(["--inject-fault".into(), "1:3".into()]);
    }
    ProcessSpec {
        argv: rendered.argv,
        env: rendered.env,
        cwd: rendered.cwd,
        timeout: Some(Duration::from_secs(120)),
        no_output_timeout: None,
        grace: Duration::from_secs(1),
        log_path: bundle.join("run.log"),
        unit: None,
    }
}

fn parser_for(case: &Case) -> Box<dyn parsers::Parser> {
    let ctx = ParseContext {
        n_bytes: case.n_bytes(),
        p: case.p,
        warmup: case.warmup_rounds,
        timed: case.timed_rounds,
        argv: Vec::new(),
    };
    parsers::make(&registry::host(), &ctx).unwrap()
}

/// The engine's pass rule in short: clean exit, declared pass, every round present and ok.
fn passed(case: &Case, outcome: &ProcessOutcome, parsed: &Parsed) -> bool {
    outcome.success()
        && parsed.correctness == Some(true)
        && parsed.samples.len() == (case.warmup_rounds + case.timed_rounds) as usize
        && parsed.samples.iter().all(|s| s.ok)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_cases_pass_the_same_through_slurm_as_locally() {
    let Some(conf) = cluster() else { return };
    let dir = util::tempdir();
    let cases = cases();

    let mut local = Vec::new();
    for case in &cases {
        let spec = spec(case, &dir.path().join("local").join(case.case_id()));
        let mut parser = parser_for(case);
        let (_tx, rx) = watch::channel(false);
        let mut on_line = |line: OutputLine| parser.feed(&line);
        let outcome = run_process(&spec, &mut on_line, rx)
            .await
            .expect("local run");
        local.push(passed(case, &outcome, &parser.finish()));
    }

    let (service, task) = SlurmService::start(executor(&conf, None));
    let mut jobs = Vec::new();
    for case in &cases {
        let bundle = dir.path().join("slurm").join(case.case_id());
        let job = BatchJob {
            campaign: format!("it-host-{}", std::process::id()),
            case_id: case.case_id(),
            stack: "host".into(),
            devices: case.p,
            layout: Default::default(),
            kind: DeviceKind::Cpu,
            process: spec(case, &bundle),
            bundle_dir: bundle,
        };
        let submitted = service.submit(job.clone()).await.expect("submit");
        jobs.push((job, submitted));
    }
    let mut through_slurm = Vec::new();
    for ((job, submitted), case) in jobs.into_iter().zip(&cases) {
        let end = tokio::time::timeout(GUARD, submitted.end)
            .await
            .expect("job ended in time")
            .expect("end delivered");
        assert_eq!(end.verdict, Verdict::Parse, "{end:?}");
        let mut parser = parser_for(case);
        replay_log(&job.process.log_path, &mut |line| parser.feed(&line)).unwrap();
        through_slurm.push(passed(case, &process_outcome(&end), &parser.finish()));
    }
    drop(service);
    task.await.unwrap().unwrap();

    assert_eq!(through_slurm, local);
    assert_eq!(
        local,
        vec![true, true, true, false],
        "the injected fault fails"
    );
}

const PLAN: &str = r#"
[campaign]
name = "slurm-e2e"

[case]
platform = "host"

[axes]
variant = ["mesh", "ring", "twophase"]
p = [2]
count = [64, 1000]
dtype = ["fp32"]
stacks = ["host"]

[rounds]
warmup = 1
timed = 3

[run]
timeout = "60s"
# One run per (case, stack): each is a Slurm job, and the tests count them.
repeats = 1

[devices]
kind = "cpu"

[slurm]
poll_interval = "200ms"
"#;

/// The one run dir of `campaign` in `results_dir`, and its results.json.
fn only_run(results_dir: &Path, campaign: &str) -> (std::path::PathBuf, serde_json::Value) {
    let run_dir = std::fs::read_dir(results_dir.join(campaign))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let doc = serde_json::from_str(&std::fs::read_to_string(run_dir.join("results.json")).unwrap())
        .unwrap();
    (run_dir, doc)
}

/// `(case_id, status)` of every run in a run dir's results.json, sorted.
fn statuses(results_dir: &Path) -> Vec<(String, String)> {
    let (_, doc) = only_run(results_dir, "slurm-e2e");
    let mut out: Vec<(String, String)> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["case_id"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn campaign_run_executor_slurm_passes_the_same_runs_as_local() {
    let Some(conf) = cluster() else { return };
    let dir = util::tempdir();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let run = |executor: &str, results: &Path| {
        std::process::Command::new(util::exe())
            .args(["run", plan.to_str().unwrap(), "-q", "--executor", executor])
            .arg("--results-dir")
            .arg(results)
            .env("SLURM_CONF", &conf)
            .output()
            .unwrap()
    };
    let (local_dir, slurm_dir) = (dir.path().join("local"), dir.path().join("slurm"));
    let local = run("local", &local_dir);
    let slurm = run("slurm", &slurm_dir);
    assert_eq!(local.status.code(), Some(0), "{}", util::stderr(&local));
    assert_eq!(slurm.status.code(), Some(0), "{}", util::stderr(&slurm));
    let through_slurm = statuses(&slurm_dir);
    assert_eq!(through_slurm, statuses(&local_dir));
    assert_eq!(through_slurm.len(), 6);
    // Every Slurm run left its batch script, granted devices and exit code in the bundle.
    let run_dir = std::fs::read_dir(slurm_dir.join("slurm-e2e"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for (case_id, _) in &through_slurm {
        let bundle = run_dir.join("cases").join(case_id).join("host");
        for file in [
            "slurm.sh",
            "slurm.devices",
            "slurm.result",
            "run.log",
            "manifest.json",
        ] {
            assert!(
                bundle.join(file).is_file(),
                "{} missing",
                bundle.join(file).display()
            );
        }
    }
}

#[test]
fn dry_run_executor_slurm_prints_one_sbatch_per_run() {
    let dir = util::tempdir();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let out = util::run(&["dry-run", plan.to_str().unwrap(), "--executor", "slurm"]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let text = util::stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert!(lines
        .iter()
        .all(|l| l.starts_with("sbatch --parsable --job-name=campaign:slurm-e2e:")));
    assert!(
        lines[0].contains("--time=0:01:00 --nodes=1 --cpus-per-task=2 "),
        "{}",
        lines[0]
    );
    assert!(lines[0].ends_with("/slurm.sh'"), "{}", lines[0]);
}

/// Under Slurm a CPU run is judged against the CPUs its job's cpuset allows, not what the
/// cluster advertises (the test cluster says 16 CPUs a node on this 2-CPU machine: P = 3 ran
/// unmarked), and its CPU contention is measured from the job's cgroup as a local run's is.
#[test]
fn slurm_runs_are_judged_against_the_jobs_cpuset_and_measure_contention() {
    let Some(conf) = cluster() else { return };
    let dir = util::tempdir();
    let plan = dir.path().join("plan.toml");
    let text = PLAN
        .replace("name = \"slurm-e2e\"", "name = \"slurm-cpus\"")
        .replace(
            "variant = [\"mesh\", \"ring\", \"twophase\"]",
            "variant = [\"ring\"]",
        )
        .replace("p = [2]", "p = [2, 3]")
        .replace("count = [64, 1000]", "count = [64]");
    std::fs::write(&plan, text).unwrap();
    let results = dir.path().join("results");
    let out = std::process::Command::new(util::exe())
        .args(["run", plan.to_str().unwrap(), "-q", "--executor", "slurm"])
        .arg("--results-dir")
        .arg(&results)
        .env("SLURM_CONF", &conf)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let (run_dir, doc) = only_run(&results, "slurm-cpus");
    let rows = doc["runs"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        let bundle = run_dir.join(row["artifact_bundle"].as_str().unwrap());
        let result = std::fs::read_to_string(bundle.join("slurm.result")).unwrap();
        let field = |key: &str| {
            (result.lines())
                .find_map(|l| l.strip_prefix(&format!("{key}=")))
                .unwrap_or("")
                .to_string()
        };
        // What the job's cpuset allowed, as its script read it where it ran.
        let allowed = field("cpus_allowed");
        let count: usize = (allowed.split(',').filter(|p| !p.is_empty()))
            .map(|part| match part.split_once('-') {
                Some((lo, hi)) => hi.parse::<usize>().unwrap() - lo.parse::<usize>().unwrap() + 1,
                None => 1,
            })
            .sum();
        assert!(count > 0, "no cpuset recorded: {result}");
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(bundle.join("manifest.json")).unwrap())
                .unwrap();
        assert_eq!(
            manifest["cpus"].as_array().unwrap().len(),
            count,
            "{manifest}"
        );
        let p = row["p"].as_u64().unwrap() as usize;
        assert_eq!(
            row["oversubscribed"],
            p > count,
            "P = {p} on {count} CPUs: {row}"
        );
        // Contention from the job's cgroup where it has a pressure file, as locally.
        if !field("psi_full_before_us").is_empty() && !field("psi_full_after_us").is_empty() {
            assert!(row["cpu_contention"].is_number(), "{row}");
        }
    }
    // This machine has fewer than 3 CPUs to give (what the cluster advertises is 16).
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 3 {
        let p3 = rows.iter().find(|r| r["p"] == 3).unwrap();
        assert_eq!(p3["oversubscribed"], true, "{p3}");
    }
}
