//! The Slurm executor against a real Slurm (scripts/slurm-up.sh's two-node cluster, started once per
//! test binary when `SLURM_CONF` does not already point at a live cluster): jobs complete with
//! the devices Slurm granted recorded, failures carry Slurm's state and reason, a job over its
//! time limit is a timeout with Slurm's reason, cancel and re-attach work without duplicates.
//!
//! Without root or Slurm these tests fail with the bring-up log; set CAMPAIGN_SKIP_SLURM=1 to
//! skip them deliberately (they then print that they were skipped).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use campaign::executor::slurm::{
    Attached, BatchJob, JobEnd, JobId, JobState, SlurmExecutor, Verdict,
};
use campaign::executor::ProcessSpec;
use campaign::model::plan::{DeviceKind, SlurmConfig};

use crate::util;

/// A job that never ends must fail the test, not hang the suite (Slurm checks time limits
/// every 30 s, so the timeout test needs up to ~35 s).
const GUARD: Duration = Duration::from_secs(120);

static CLUSTER: OnceLock<Result<Option<PathBuf>, String>> = OnceLock::new();

/// `SLURM_CONF` of a live cluster, bringing one up at most once per test binary (and, through
/// a file lock, once across concurrently running test processes). `None` = skip requested.
pub(crate) fn cluster() -> Option<PathBuf> {
    match CLUSTER.get_or_init(bring_up) {
        Ok(conf) => conf.clone(),
        Err(e) => panic!("{e}"),
    }
}

fn bring_up() -> Result<Option<PathBuf>, String> {
    if std::env::var_os("CAMPAIGN_SKIP_SLURM").is_some() {
        eprintln!("slurm tests skipped: CAMPAIGN_SKIP_SLURM is set");
        return Ok(None);
    }
    if let Some(conf) = std::env::var_os("SLURM_CONF").map(PathBuf::from) {
        if sinfo_ok(&conf) {
            return Ok(Some(conf));
        }
    }
    let lock = File::create(std::env::temp_dir().join("campaign-slurm-up.lock"))
        .map_err(|e| format!("cannot create the slurm-up lock file: {e}"))?;
    // SAFETY: flock on a file descriptor we own; released when `lock` is dropped.
    unsafe {
        libc::flock(lock.as_raw_fd(), libc::LOCK_EX);
    }
    let out = Command::new("bash")
        .arg(util::root().join("scripts/slurm-up.sh"))
        .output()
        .map_err(|e| format!("cannot run scripts/slurm-up.sh: {e}"))?;
    let stdout = util::stdout(&out);
    let conf = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("export SLURM_CONF="))
        .map(PathBuf::from);
    match conf {
        Some(conf) if out.status.success() => Ok(Some(conf)),
        _ => Err(format!(
            "scripts/slurm-up.sh failed ({}); set CAMPAIGN_SKIP_SLURM=1 to skip the Slurm tests\n{}{}",
            out.status,
            stdout,
            util::stderr(&out)
        )),
    }
}

fn sinfo_ok(conf: &Path) -> bool {
    Command::new("sinfo")
        .args(["-h", "-o", "%T"])
        .env("SLURM_CONF", conf)
        .output()
        .map(|o| o.status.success() && util::stdout(&o).contains("idle"))
        .unwrap_or(false)
}

/// Run a Slurm client command against the test cluster.
fn slurm(conf: &Path, argv: &[&str]) -> String {
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .env("SLURM_CONF", conf)
        .output()
        .expect("run slurm command");
    assert!(out.status.success(), "{argv:?}: {}", util::stderr(&out));
    util::stdout(&out)
}

pub(crate) fn executor(conf: &Path, time_limit: Option<&str>) -> SlurmExecutor {
    let config = SlurmConfig {
        time_limit: time_limit.map(String::from),
        ..SlurmConfig::default()
    };
    SlurmExecutor::new(config)
        .with_slurm_conf(conf)
        .with_backoff(Duration::from_millis(200), Duration::from_secs(2))
}

fn job(bundle: &Path, test: &str, devices: u32, script: &str) -> BatchJob {
    std::fs::create_dir_all(bundle).unwrap();
    BatchJob {
        campaign: format!("it-{}", std::process::id()),
        case_id: format!("allreduce_p{devices}_{test}"),
        stack: "host".into(),
        devices,
        layout: Default::default(),
        kind: DeviceKind::Npu,
        process: ProcessSpec {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            env: vec![("CAMPAIGN_DEVICES".into(), "0,1".into())],
            cwd: bundle.to_path_buf(),
            timeout: Some(Duration::from_secs(60)),
            no_output_timeout: None,
            grace: Duration::from_secs(1),
            log_path: bundle.join("run.log"),
            unit: None,
        },
        bundle_dir: bundle.to_path_buf(),
    }
}

/// Poll until every id in `ids` has ended.
async fn wait_all(exec: &mut SlurmExecutor, ids: &[JobId]) -> Vec<(JobId, JobEnd)> {
    let start = Instant::now();
    let mut ended = Vec::new();
    while ended.len() < ids.len() {
        assert!(
            start.elapsed() < GUARD,
            "jobs {ids:?} did not end; got {ended:?}"
        );
        ended.extend(exec.poll().await.expect("poll"));
    }
    ended.sort_by_key(|(id, _)| ids.iter().position(|i| i == id));
    ended
}

async fn wait_one(exec: &mut SlurmExecutor, id: JobId) -> JobEnd {
    wait_all(exec, &[id]).await.remove(0).1
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test(flavor = "current_thread")]
async fn job_completes_with_the_devices_slurm_granted() {
    let Some(conf) = cluster() else { return };
    let dir = util::tempdir();
    let j = job(
        &dir.path().join("bundle"),
        "granted",
        3,
        "echo \"devices=$CAMPAIGN_DEVICES npu=$NPU_VISIBLE_DEVICES\"; echo oops >&2",
    );
    let mut exec = executor(&conf, None);
    let id = exec.submit(&j).await.expect("submit");
    let end = wait_one(&mut exec, id).await;

    assert_eq!(end.verdict, Verdict::Parse, "{end:?}");
    assert_eq!(end.state, JobState::Completed);
    assert_eq!(end.outcome.as_ref().and_then(|o| o.exit_code), Some(0));
    let devices = end.devices.expect("slurm.devices recorded");
    let ids = devices.ids.clone().expect("numeric device ids");
    assert_eq!(ids.len(), 3, "{devices:?}");
    assert_eq!(
        devices.variables.get("CUDA_VISIBLE_DEVICES"),
        Some(&devices.granted)
    );
    // The stack saw the granted devices (not the rendered 0,1) and both streams reached run.log.
    let log = read(&j.process.log_path);
    assert!(
        log.contains(&format!("devices={0} npu={0}\n", devices.granted)),
        "{log}"
    );
    assert!(log.contains("oops\n"), "{log}");
    assert!(exec.watching().is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn jobs_are_polled_in_one_batch_and_failures_carry_slurms_state() {
    let Some(conf) = cluster() else { return };
    let dir = util::tempdir();
    let exits = job(
        &dir.path().join("exits"),
        "exit3",
        1,
        "echo partial; exit 3",
    );
    let mut no_cwd = job(&dir.path().join("nocwd"), "nocwd", 1, "echo never");
    no_cwd.process.cwd = dir.path().join("no such dir");
    let ok = job(&dir.path().join("ok"), "ok", 1, "sleep 1; echo fine");
    let mut exec = executor(&conf, None);
    let ids = vec![
        exec.submit(&exits).await.unwrap(),
        exec.submit(&no_cwd).await.unwrap(),
        exec.submit(&ok).await.unwrap(),
    ];
    let ended = wait_all(&mut exec, &ids).await;

    // A stack that exited non-zero is handed to the parser with its exit code.
    let e = &ended[0].1;
    assert_eq!(
        (e.state.clone(), e.verdict.clone()),
        (JobState::Failed, Verdict::Parse)
    );
    assert_eq!(e.outcome.as_ref().unwrap().exit_code, Some(3));
    // A job whose stack never ran fails with Slurm's state, reason and exit code.
    let e = &ended[1].1;
    assert_eq!(
        e.verdict,
        Verdict::Fail(format!(
            "Slurm job {} FAILED (reason NonZeroExitCode, exit code 97:0)",
            ids[1]
        ))
    );
    assert!(read(&no_cwd.process.log_path).contains("cannot enter"));
    assert_eq!(ended[2].1.verdict, Verdict::Parse);
    // One squeue per poll, whatever the number of jobs.
    let stats = exec.stats();
    assert_eq!(stats.squeue, stats.polls, "{stats:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn job_over_its_time_limit_is_a_timeout_with_slurms_reason() {
    let Some(conf) = cluster() else { return };
    let dir = util::tempdir();
    let j = job(
        &dir.path().join("b"),
        "timeout",
        1,
        "echo started; sleep 300",
    );
    let mut exec = executor(&conf, None);
    let id = exec.submit(&j).await.unwrap();
    // Slurm's time limits are whole minutes (`--time=0:01:00` from the 60 s timeout); lowering
    // the limit to zero makes Slurm's own time-limit check end the job at its next pass.
    let shown = slurm(&conf, &["squeue", "-h", "-j", &id.to_string(), "-o", "%l"]);
    assert_eq!(shown.trim(), "1:00");
    slurm(
        &conf,
        &["scontrol", "update", &format!("JobId={id}"), "TimeLimit=0"],
    );
    let end = wait_one(&mut exec, id).await;

    assert_eq!(end.state, JobState::Timeout);
    let expected = format!("Slurm job {id} TIMEOUT (reason TimeLimit");
    assert!(
        matches!(&end.verdict, Verdict::Timeout(r) if r.starts_with(&expected)),
        "{end:?}"
    );
    assert!(end.outcome.is_none(), "killed stack recorded no exit code");
}

#[tokio::test(flavor = "current_thread")]
async fn cancel_stops_the_job_and_reports_it_interrupted() {
    let Some(conf) = cluster() else { return };
    let dir = util::tempdir();
    let j = job(
        &dir.path().join("b"),
        "cancel",
        2,
        "echo started; sleep 300",
    );
    let mut exec = executor(&conf, None);
    let id = exec.submit(&j).await.unwrap();
    exec.cancel_all().await.expect("scancel");
    let end = wait_one(&mut exec, id).await;

    assert_eq!(end.state, JobState::Cancelled);
    let reason = end.verdict.reason().unwrap_or_default().to_string();
    assert!(
        matches!(end.verdict, Verdict::Interrupted(_)) && reason.contains("CANCELLED"),
        "{end:?}"
    );
    let state = slurm(
        &conf,
        &[
            "squeue",
            "-h",
            "-t",
            "all",
            "-j",
            &id.to_string(),
            "-o",
            "%T",
        ],
    );
    assert_eq!(state.trim(), "CANCELLED");
}

#[tokio::test(flavor = "current_thread")]
async fn reattach_watches_running_jobs_without_resubmitting() {
    let Some(conf) = cluster() else { return };
    let dir = util::tempdir();
    let j = job(
        &dir.path().join("b"),
        "reattach",
        1,
        "sleep 2; echo finished",
    );
    let id = {
        // The first campaign process submits, then dies without polling.
        let mut first = executor(&conf, None);
        first.submit(&j).await.unwrap()
    };
    let mut second = executor(&conf, None);
    second.reattach(vec![Attached {
        job_id: id,
        bundle_dir: j.bundle_dir.clone(),
    }]);
    let end = wait_one(&mut second, id).await;

    assert_eq!(end.verdict, Verdict::Parse, "{end:?}");
    assert!(read(&j.process.log_path).contains("finished"));
    let same_name = slurm(
        &conf,
        &["squeue", "-h", "-t", "all", "-n", &j.name(), "-o", "%i"],
    );
    assert_eq!(
        same_name.trim(),
        id.to_string(),
        "exactly one job with this name"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn reattach_to_a_job_slurm_forgot_reads_the_bundle() {
    let Some(conf) = cluster() else { return };
    let dir = util::tempdir();
    let finished = dir.path().join("finished");
    let lost = dir.path().join("lost");
    std::fs::create_dir_all(&finished).unwrap();
    std::fs::create_dir_all(&lost).unwrap();
    std::fs::write(finished.join("slurm.result"), "exit_code=0\n").unwrap();
    // Ids far beyond anything this cluster handed out.
    let (done_id, lost_id) = (JobId(3_000_000_001), JobId(3_000_000_002));
    let mut exec = executor(&conf, None);
    exec.reattach(vec![
        Attached {
            job_id: done_id,
            bundle_dir: finished,
        },
        Attached {
            job_id: lost_id,
            bundle_dir: lost,
        },
    ]);
    let ended = wait_all(&mut exec, &[done_id, lost_id]).await;

    assert_eq!(ended[0].1.verdict, Verdict::Parse);
    assert_eq!(ended[0].1.source, "bundle");
    assert!(
        matches!(&ended[1].1.verdict, Verdict::Interrupted(r) if r.contains("unknown to Slurm")),
        "{:?}",
        ended[1].1
    );
}

#[test]
fn slurm_up_is_idempotent() {
    let Some(conf) = cluster() else { return };
    let dir = conf.parent().expect("conf in its folder");
    let out = Command::new("bash")
        .arg(util::root().join("scripts/slurm-up.sh"))
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", util::stderr(&out));
    assert_eq!(
        util::stdout(&out).trim(),
        format!("export SLURM_CONF={}", conf.display())
    );
    assert!(util::stderr(&out).contains("already running"));
}

/// A native-protocol stack: one warmup and two timed rounds; `fail` makes it report a golden
/// mismatch and exit 1.
fn native_stack(fail: bool) -> String {
    let done = if fail { "fail" } else { "pass" };
    format!(
        "echo 'CAMPAIGN_SAMPLE {{\"phase\":\"warmup\",\"round\":1,\"execute_s\":0.004,\"ok\":true}}'; \
         echo 'CAMPAIGN_SAMPLE {{\"phase\":\"timed\",\"round\":1,\"execute_s\":0.002,\"ok\":true}}'; \
         echo 'CAMPAIGN_SAMPLE {{\"phase\":\"timed\",\"round\":2,\"execute_s\":0.003,\"ok\":true}}'; \
         echo 'CAMPAIGN_DONE {{\"correctness\":\"{done}\"}}'; exit {}",
        u8::from(fail)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_runs_concurrent_jobs_and_their_logs_parse_like_local_output() {
    use campaign::executor::slurm::{process_outcome, replay_log, SlurmService};
    use campaign::stack::parsers::{self, ParseContext};

    let Some(conf) = cluster() else { return };
    let dir = util::tempdir();
    let (service, task) = SlurmService::start(executor(&conf, None));
    let mut runs = Vec::new();
    for i in 0..4u32 {
        let j = job(
            &dir.path().join(format!("b{i}")),
            &format!("svc{i}"),
            2,
            &native_stack(i == 3),
        );
        let service = service.clone();
        runs.push(tokio::spawn(async move {
            let submitted = service.submit(j.clone()).await.expect("submit");
            let end = submitted.end.await.expect("end delivered");
            (j, submitted.id, end)
        }));
    }
    let mut ids = Vec::new();
    for (i, run) in runs.into_iter().enumerate() {
        let (j, id, end) = tokio::time::timeout(GUARD, run).await.unwrap().unwrap();
        ids.push(id);
        let ctx = ParseContext {
            n_bytes: 1024,
            p: 2,
            warmup: 1,
            timed: 2,
            argv: Vec::new(),
        };
        let mut parser = parsers::make(&campaign::stack::registry::host(), &ctx).unwrap();
        replay_log(&j.process.log_path, &mut |line| parser.feed(&line)).unwrap();
        let parsed = parser.finish();
        let outcome = process_outcome(&end);
        assert_eq!(end.verdict, Verdict::Parse, "{end:?}");
        assert_eq!(parsed.samples.len(), 3, "{parsed:?}");
        if i == 3 {
            assert_eq!(
                (parsed.correctness, outcome.exit_code),
                (Some(false), Some(1))
            );
        } else {
            assert_eq!(
                (parsed.correctness, outcome.exit_code),
                (Some(true), Some(0))
            );
        }
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "one job per run");
    drop(service);
    task.await.unwrap().expect("service ended cleanly");
}
