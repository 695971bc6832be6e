use std::os::unix::fs::PermissionsExt;

use tokio::io::AsyncReadExt;

use super::*;
use crate::executor::unit::{cgroup_for, fresh_id};

/// What a finished child showed: its status, stdout and stderr.
struct Ran {
    status: ExitStatus,
    out: String,
    err: String,
}

async fn run_in(argv: &[&str], env: &[(&str, &str)], cwd: &Path, unit: &Unit) -> Ran {
    let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut child = spawn(&argv, &env, cwd, unit).expect("spawned");
    let (mut out, mut err) = (String::new(), String::new());
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (a, b) = tokio::join!(
        stdout.read_to_string(&mut out),
        stderr.read_to_string(&mut err)
    );
    a.unwrap();
    b.unwrap();
    let status = child.wait().await.unwrap();
    Ran { status, out, err }
}

async fn run(argv: &[&str]) -> Ran {
    let unit = Unit::open(&fresh_id()).unwrap();
    run_in(argv, &[], Path::new("/"), &unit).await
}

#[tokio::test]
async fn a_child_and_what_it_forks_are_in_the_unit_before_they_run() {
    in_the_unit_before_running().await;
}

/// The same where `clone3` is not available: glibc's `clone`, the child moves itself.
#[tokio::test]
async fn without_clone3_the_child_moves_itself_into_the_unit_before_running() {
    super::clone3::set_usable(false);
    in_the_unit_before_running().await;
    super::clone3::set_usable(true);
}

async fn in_the_unit_before_running() {
    let unit = Unit::open(&fresh_id()).unwrap();
    // The shell ($$) and the grep it forks both report their cgroup v2 (`0::` line).
    let ran = run_in(
        &[
            "sh",
            "-c",
            "grep ^0:: /proc/$$/cgroup; grep ^0:: /proc/self/cgroup; echo $CAMPAIGN_UNIT",
        ],
        &[],
        Path::new("/"),
        &unit,
    )
    .await;
    assert!(ran.status.success(), "{}", ran.err);
    let lines: Vec<&str> = ran.out.lines().collect();
    assert_eq!(lines.len(), 3, "{}", ran.out);
    assert_eq!(lines[2], unit.id(), "the cookie is set either way");
    match cgroup_for(unit.id()) {
        Some(dir) => {
            let name = dir.file_name().unwrap().to_str().unwrap();
            for line in &lines[..2] {
                assert!(line.starts_with("0::/"), "{line}");
                assert!(line.ends_with(&format!("/{name}")), "{line} not in {name}");
            }
        }
        None => assert!(unit.cgroup().is_none()),
    }
}

#[tokio::test]
async fn arguments_environment_and_working_directory_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let unit = Unit::open(&fresh_id()).unwrap();
    let ran = run_in(
        &[
            "sh",
            "-c",
            "printf '%s|%s|%s|' \"$1\" \"$CAMPAIGN_SPAWN_TEST\" \"$PATH\"; pwd -P",
            "sh",
            "two words",
        ],
        &[("CAMPAIGN_SPAWN_TEST", "x=1 y")],
        dir.path(),
        &unit,
    )
    .await;
    assert!(ran.status.success(), "{}", ran.err);
    let cwd = dir.path().canonicalize().unwrap();
    let path = std::env::var("PATH").unwrap();
    assert_eq!(
        ran.out,
        format!("two words|x=1 y|{path}|{}\n", cwd.display()),
        "campaign's own environment (PATH) is kept, the spec's is added"
    );
}

#[tokio::test]
async fn exit_codes_and_signals_are_reported() {
    let ran = run(&["sh", "-c", "echo out; echo err >&2; exit 7"]).await;
    assert_eq!(ran.status.code(), Some(7));
    assert_eq!((ran.out.as_str(), ran.err.as_str()), ("out\n", "err\n"));
    let ran = run(&["sh", "-c", "kill -KILL $$"]).await;
    assert_eq!(ran.status.code(), None);
    assert_eq!(ran.status.signal(), Some(libc::SIGKILL));
}

#[tokio::test]
async fn stdin_is_dev_null_and_signals_start_at_their_defaults() {
    let ran = run(&["readlink", "/proc/self/fd/0"]).await;
    assert_eq!(ran.out, "/dev/null\n");
    // The test harness ignores SIGPIPE and the parent blocks everything while spawning; the
    // child gets neither.
    let ran = run(&["cat", "/proc/self/status"]).await;
    let field = |name: &str| {
        let line = ran.out.lines().find(|l| l.starts_with(name)).unwrap();
        u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
    };
    assert_eq!(field("SigBlk:"), 0, "{}", ran.out);
    assert_eq!(
        field("SigIgn:") & (1 << (libc::SIGPIPE - 1)),
        0,
        "{}",
        ran.out
    );
    // SAFETY: reading this thread's mask into a zeroed set.
    let mut mask: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, std::ptr::null(), &mut mask) };
    // SAFETY: a valid set.
    assert_eq!(unsafe { libc::sigismember(&mask, libc::SIGTERM) }, 0);
}

#[tokio::test]
async fn a_child_runs_in_its_own_process_group() {
    let ran = run(&["sh", "-c", "cut -d' ' -f5 /proc/$$/stat; echo $$"]).await;
    let mut nums = ran.out.split_whitespace();
    assert_eq!(nums.next(), nums.next(), "{}", ran.out);
}

#[tokio::test]
async fn programs_that_cannot_run_give_the_errors_execvp_would() {
    let dir = tempfile::tempdir().unwrap();
    let unit = Unit::open(&fresh_id()).unwrap();
    let fail = |argv: &[&str]| {
        let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
        spawn(&argv, &[], dir.path(), &unit).unwrap_err()
    };
    let e = fail(&["campaign-no-such-program-xyz"]);
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
    assert_eq!(
        crate::executor::local::spawn_error("campaign-no-such-program-xyz", e).to_string(),
        "cannot run `campaign-no-such-program-xyz`: program not found on PATH"
    );
    let e = fail(&["/campaign/no/such/file"]);
    assert_eq!(
        crate::executor::local::spawn_error("/campaign/no/such/file", e).to_string(),
        "cannot run `/campaign/no/such/file`: no such file"
    );
    let script = dir.path().join("script");
    std::fs::write(&script, "echo hi\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = fail(&[script.to_str().unwrap()]);
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
}

#[tokio::test]
async fn a_script_without_an_interpreter_line_runs_under_sh() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("plain");
    std::fs::write(&script, "echo from-sh \"$1\"\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ran = run(&[script.to_str().unwrap(), "arg"]).await;
    assert!(ran.status.success(), "{}", ran.err);
    assert_eq!(ran.out, "from-sh arg\n");
}

#[tokio::test]
async fn relative_path_entries_are_searched_from_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let tool = bin.join("campaign-spawn-tool");
    std::fs::write(&tool, "#!/bin/sh\necho tool ran\n").unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let unit = Unit::open(&fresh_id()).unwrap();
    let ran = run_in(
        &["campaign-spawn-tool"],
        &[("PATH", "bin:/usr/bin:/bin")],
        dir.path(),
        &unit,
    )
    .await;
    assert_eq!(ran.out, "tool ran\n", "{}", ran.err);
}

#[tokio::test]
async fn a_dropped_child_is_killed_and_reaped() {
    let unit = Unit::open(&fresh_id()).unwrap();
    let argv = ["sleep", "600"].map(String::from);
    let child = spawn(&argv, &[], Path::new("/"), &unit).unwrap();
    let pid = child.id();
    assert!(crate::executor::unit::scan::stat(pid).is_some_and(|s| s.live()));
    drop(child);
    // Neither running nor a zombie: the pid is gone from /proc.
    assert!(
        crate::executor::unit::scan::stat(pid).is_none(),
        "pid {pid} still exists"
    );
}
