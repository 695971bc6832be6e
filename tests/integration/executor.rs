//! The local executor with real processes: no pipe deadlock, byte-exact logs, timeouts and
//! cancel that leave nothing running, exit codes and signals, spawn errors.

use std::path::{Path, PathBuf};
use std::time::Duration;

use campaign::executor::local::run_process;
use campaign::executor::{KillReason, ProcessOutcome, ProcessSpec};
use campaign::model::output::{OutputLine, Stream};
use tokio::sync::watch;

use crate::util;

/// A deadlock or a leak must fail the test, not hang the suite.
const GUARD: Duration = Duration::from_secs(120);

fn fixture(name: &str) -> String {
    util::root()
        .join("tests/integration/fixtures/executor")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn spec(dir: &Path, argv: &[&str]) -> ProcessSpec {
    ProcessSpec {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        env: vec![("CAMPAIGN_TEST_VAR".into(), "hello world".into())],
        cwd: dir.to_path_buf(),
        timeout: None,
        no_output_timeout: None,
        grace: Duration::from_millis(500),
        log_path: dir.join("bundle/run.log"),
        unit: None,
    }
}

fn sh(dir: &Path, script: &str) -> ProcessSpec {
    spec(dir, &["sh", "-c", script])
}

/// Run to the end with a cancel channel nobody uses; collect every line.
async fn run(spec: &ProcessSpec) -> (ProcessOutcome, Vec<OutputLine>) {
    let (_tx, rx) = watch::channel(false);
    run_with(spec, rx, |_| {}).await
}

async fn run_with(
    spec: &ProcessSpec,
    cancel: watch::Receiver<bool>,
    mut hook: impl FnMut(&OutputLine) + Send,
) -> (ProcessOutcome, Vec<OutputLine>) {
    let mut lines = Vec::new();
    let mut on_line = |line: OutputLine| {
        hook(&line);
        lines.push(line);
    };
    let outcome = tokio::time::timeout(GUARD, run_process(spec, &mut on_line, cancel))
        .await
        .expect("run_process did not return (deadlock?)")
        .expect("run_process failed");
    (outcome, lines)
}

fn texts(lines: &[OutputLine], stream: Stream) -> Vec<&str> {
    lines
        .iter()
        .filter(|l| l.stream == stream)
        .map(|l| l.text.as_str())
        .collect()
}

/// Is `pid` still a running (non-zombie) process?
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .next();
            !matches!(state, Some("Z") | Some("X"))
        }
        Err(_) => false,
    }
}

/// Pids printed by `forks.sh` as `<label> <pid>`.
fn printed_pids(lines: &[OutputLine]) -> Vec<(String, i32)> {
    lines
        .iter()
        .filter_map(|l| {
            let (label, pid) = l.text.split_once(' ')?;
            Some((label.to_string(), pid.parse().ok()?))
        })
        .collect()
}

fn assert_nothing_left(lines: &[OutputLine]) {
    let pids = printed_pids(lines);
    assert_eq!(
        pids.len(),
        4,
        "expected leader and 3 children, got {pids:?}"
    );
    for (label, pid) in &pids {
        assert!(!running(*pid), "{label} (pid {pid}) is still running");
    }
}

#[tokio::test]
async fn megabytes_on_stderr_before_any_stdout_do_not_deadlock() {
    let dir = util::tempdir();
    let script = "head -c 1504800 /dev/zero | tr '\\0' x | fold -w 99 >&2; echo stdout-after";
    let (outcome, lines) = run(&sh(dir.path(), script)).await;
    assert!(outcome.success(), "{outcome:?}");
    assert_eq!(texts(&lines, Stream::Stdout), vec!["stdout-after"]);
    let err = texts(&lines, Stream::Stderr);
    // 99 × 15200 bytes: more than 1 MiB; fold adds no newline after the last piece.
    assert_eq!(err.len(), 15200);
    assert!(err.iter().all(|l| l.len() == 99));
    let log = std::fs::read(dir.path().join("bundle/run.log")).unwrap();
    assert_eq!(log.len(), 1_504_800 + 15199 + "stdout-after\n".len());
}

#[tokio::test]
async fn log_is_byte_exact_appended_and_keeps_a_final_partial_line() {
    let dir = util::tempdir();
    let script = "printf 'one\\r\\ntwo \\377 bytes\\n\\nlast-without-newline'";
    let spec = sh(dir.path(), script);
    let (outcome, lines) = run(&spec).await;
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(
        texts(&lines, Stream::Stdout),
        vec!["one", "two \u{fffd} bytes", "", "last-without-newline"]
    );
    let expected: &[u8] = b"one\r\ntwo \xff bytes\n\nlast-without-newline";
    assert_eq!(std::fs::read(&spec.log_path).unwrap(), expected);

    // A second attempt appends, never truncates.
    run(&spec).await;
    let mut twice = expected.to_vec();
    twice.extend_from_slice(expected);
    assert_eq!(std::fs::read(&spec.log_path).unwrap(), twice);
}

#[tokio::test]
async fn concurrent_streams_interleave_by_whole_lines_in_order() {
    let dir = util::tempdir();
    let spec = spec(dir.path(), &[&fixture("interleave.sh")]);
    let (outcome, lines) = run(&spec).await;
    assert!(outcome.success());
    for (stream, prefix) in [(Stream::Stdout, "out"), (Stream::Stderr, "err")] {
        let got = texts(&lines, stream);
        assert_eq!(got.len(), 2000);
        for (i, text) in got.iter().enumerate() {
            assert!(text.starts_with(&format!("{prefix} {} ", i + 1)), "{text}");
        }
        let times: Vec<Duration> = lines
            .iter()
            .filter(|l| l.stream == stream)
            .map(|l| l.at)
            .collect();
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "{prefix} times go back"
        );
    }
    // The log holds the same lines, each whole, in the order they were handed out.
    let log = std::fs::read_to_string(&spec.log_path).unwrap();
    let logged: Vec<&str> = log.lines().collect();
    let handed: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(logged, handed);
}

#[tokio::test]
async fn exit_code_signal_env_and_cwd_are_reported() {
    let dir = util::tempdir();
    let (outcome, lines) = run(&sh(
        dir.path(),
        "echo \"$CAMPAIGN_TEST_VAR\"; pwd; test -n \"$PATH\" && echo inherited; exit 3",
    ))
    .await;
    assert_eq!(outcome.exit_code, Some(3));
    assert_eq!(outcome.signal, None);
    assert_eq!(outcome.killed, None);
    assert!(!outcome.success());
    let out = texts(&lines, Stream::Stdout);
    assert_eq!(out[0], "hello world");
    assert_eq!(
        PathBuf::from(out[1]).canonicalize().unwrap(),
        dir.path().canonicalize().unwrap()
    );
    assert_eq!(out[2], "inherited");

    let (outcome, _) = run(&sh(dir.path(), "kill -KILL $$")).await;
    assert_eq!(outcome.exit_code, None);
    assert_eq!(outcome.signal, Some(libc::SIGKILL));
    assert_eq!(outcome.killed, None);
}

#[tokio::test]
async fn wall_clock_timeout_kills_the_whole_group_even_stubborn_children() {
    let dir = util::tempdir();
    let mut spec = spec(dir.path(), &[&fixture("forks.sh"), "hang"]);
    spec.timeout = Some(Duration::from_millis(800));
    let (outcome, lines) = run(&spec).await;
    assert_eq!(outcome.killed, Some(KillReason::Timeout));
    assert!(outcome.signal.is_some(), "{outcome:?}");
    assert!(!outcome.success());
    assert_nothing_left(&lines);
}

#[tokio::test]
async fn a_leader_that_exits_leaves_no_children_behind() {
    let dir = util::tempdir();
    let spec = spec(dir.path(), &[&fixture("forks.sh")]);
    let (outcome, lines) = run(&spec).await;
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.killed, None);
    assert_nothing_left(&lines);
}

#[tokio::test]
async fn a_setsid_daemon_holding_the_pipes_is_contained_too() {
    let dir = util::tempdir();
    let (outcome, lines) = run(&sh(dir.path(), "setsid sleep 1000 & echo \"daemon $!\"")).await;
    assert_eq!(outcome.exit_code, Some(0));
    let pids = printed_pids(&lines);
    assert_eq!(pids.len(), 1, "{pids:?}");
    // It left the process group and the session; the unit still caught it.
    let alive = running(pids[0].1);
    // SAFETY: kill has no memory-safety preconditions (cleanup should the assertion fail).
    unsafe { libc::kill(pids[0].1, libc::SIGKILL) };
    assert!(!alive, "the setsid daemon {} survived the run", pids[0].1);
}

#[tokio::test]
async fn silence_trips_the_no_output_timeout_but_steady_output_does_not() {
    let dir = util::tempdir();
    let mut quiet = sh(dir.path(), "echo started; sleep 1000");
    quiet.no_output_timeout = Some(Duration::from_millis(400));
    let (outcome, lines) = run(&quiet).await;
    assert_eq!(outcome.killed, Some(KillReason::NoOutput));
    assert_eq!(texts(&lines, Stream::Stdout), vec!["started"]);

    let mut chatty = sh(
        dir.path(),
        "for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.1; done",
    );
    chatty.no_output_timeout = Some(Duration::from_secs(3));
    let (outcome, lines) = run(&chatty).await;
    assert!(outcome.success(), "{outcome:?}");
    assert_eq!(lines.len(), 6);
}

#[tokio::test]
async fn cancel_interrupts_and_stops_the_group() {
    let dir = util::tempdir();
    let spec = spec(dir.path(), &[&fixture("forks.sh"), "hang"]);
    let (tx, rx) = watch::channel(false);
    let (outcome, lines) = run_with(&spec, rx, move |line| {
        if line.text == "ready" {
            let _ = tx.send(true);
        }
    })
    .await;
    assert_eq!(outcome.killed, Some(KillReason::Interrupted));
    assert_eq!(outcome.signal, Some(libc::SIGTERM));
    assert_nothing_left(&lines);
}

#[tokio::test]
async fn an_already_cancelled_run_never_starts() {
    let dir = util::tempdir();
    let (_tx, rx) = watch::channel(true);
    let (outcome, lines) = run_with(&sh(dir.path(), "echo should-not-run"), rx, |_| {}).await;
    assert_eq!(outcome.killed, Some(KillReason::Interrupted));
    assert_eq!(outcome.exit_code, None);
    assert!(lines.is_empty());
}

#[tokio::test]
async fn spawn_failures_name_the_program_or_the_directory() {
    let dir = util::tempdir();
    let (_tx, rx) = watch::channel(false);
    let missing = spec(dir.path(), &["campaign-no-such-program-xyz", "--flag"]);
    let err = run_process(&missing, &mut |_| {}, rx.clone())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot run `campaign-no-such-program-xyz`: program not found on PATH"
    );
    assert_eq!(err.exit_code(), 4);

    let mut no_dir = sh(dir.path(), "true");
    no_dir.cwd = dir.path().join("absent");
    let err = run_process(&no_dir, &mut |_| {}, rx).await.unwrap_err();
    assert!(err.to_string().contains("absent"), "{err}");
    assert!(err.to_string().contains("does not exist"), "{err}");
}
