//! Containment with real processes: the simpler stand-in (`fixtures/standin/simpler.py`) forks
//! chips that escape campaign's process group by `setsid`, `setpgid` and a double fork, and one
//! ignores SIGTERM. After a no-output timeout, Ctrl-C, SIGTERM or SIGHUP nothing it started is
//! alive when campaign exits; after SIGKILL of campaign, `resume` reaps them first and says so.
//! Each scenario runs with the machine's containment (a cgroup where writable) and, where it
//! matters, with the portable fallback (`CAMPAIGN_CONTAINMENT=cookie`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util;

/// Generous cap for every wait on an event.
const CAP: Duration = Duration::from_secs(120);

pub fn standin() -> String {
    util::root()
        .join("tests/integration/fixtures/standin/simpler.py")
        .display()
        .to_string()
}

/// A plan with one stand-in run on P = 3 (chip 0 setsid, chip 1 setpgid + ignores SIGTERM,
/// chip 2 double-forked); `hang` keeps every chip alive and the main process silent, and
/// `quiet` is the stack's no-output timeout.
fn plan(dir: &Path, name: &str, hang: bool, quiet: &str) -> PathBuf {
    let pidfile = dir.join("pids.txt");
    let text = format!(
        r#"[campaign]
name = "{name}"

[case]
platform = "host"

[axes]
variant = ["mesh"]
p = [3]
count = [256]
stacks = ["standin"]

[rounds]
warmup = 0
timed = 1

[run]
timeout = "5m"
# One run per case: the tests count the stand-in's processes of each.
repeats = 1

[devices]
kind = "npu"
ids = "0-2"

[stacks.standin]
command = ["python3", "{script}", "-p", "{{{{ platform }}}}", "-d", "{{{{ devices_range }}}}"]
shape = "subprocess"
parser = "markers"
markers = {{ builtin = "simpler" }}
no_output_timeout = "{quiet}"
env = {{ STANDIN_HANG = "{hang}", STANDIN_PIDFILE = "{pidfile}", PYTHONUNBUFFERED = "1" }}
"#,
        script = standin(),
        hang = if hang { "1" } else { "0" },
        pidfile = pidfile.display(),
    );
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    file
}

fn start(dir: &Path, args: &[&str], cookie: bool) -> Child {
    let mut c = Command::new(util::exe());
    c.current_dir(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if cookie {
        c.env("CAMPAIGN_CONTAINMENT", "cookie");
    } else {
        c.env_remove("CAMPAIGN_CONTAINMENT");
    }
    c.spawn().unwrap()
}

fn run_args(file: &Path, results: &Path) -> Vec<String> {
    vec![
        "run".into(),
        file.display().to_string(),
        "--results-dir".into(),
        results.display().to_string(),
        "-q".into(),
    ]
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `(label, pid)` lines of the stand-in's pid file.
fn pids(dir: &Path) -> Vec<(String, i32)> {
    std::fs::read_to_string(dir.join("pids.txt"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (label, pid) = l.split_once(' ')?;
            Some((label.to_string(), pid.parse().ok()?))
        })
        .collect()
}

/// Wait until the stand-in's main process and its three chips are all running.
fn wait_all_started(dir: &Path) -> Vec<(String, i32)> {
    let until = Instant::now() + CAP;
    loop {
        let p = pids(dir);
        if p.len() >= 4 && p.iter().all(|(_, pid)| running(*pid)) {
            return p;
        }
        assert!(Instant::now() < until, "the stand-in never started: {p:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Is `pid` a running (non-zombie) process?
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

fn kill_leftovers(p: &[(String, i32)]) {
    for (_, pid) in p {
        // SAFETY: kill(2); cleanup of a failed test's processes.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
}

fn wait_output(child: Child) -> std::process::Output {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    rx.recv_timeout(CAP)
        .expect("campaign did not exit")
        .unwrap()
}

fn no_output_timeout_kills_every_escaped_chip(cookie: bool) {
    let tmp = util::tempdir();
    let file = plan(tmp.path(), "quiet", true, "3s");
    let results = tmp.path().join("results");
    let child = start(tmp.path(), &refs(&run_args(&file, &results)), cookie);
    let out = wait_output(child);
    let p = pids(tmp.path());
    let alive: Vec<_> = p.iter().filter(|(_, pid)| running(*pid)).cloned().collect();
    kill_leftovers(&p);
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr(&out));
    assert_eq!(p.len(), 4, "{p:?}");
    assert!(
        alive.is_empty(),
        "still running after the timeout: {alive:?}"
    );
    let status = std::fs::read_to_string(
        std::fs::read_dir(results.join("quiet"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
            .join("results.json"),
    )
    .unwrap();
    assert!(status.contains("\"timeout\""), "{status}");
    assert!(status.contains("no output"), "{status}");
}

#[test]
fn no_output_timeout_leaves_nothing_running() {
    no_output_timeout_kills_every_escaped_chip(false);
}

#[test]
fn no_output_timeout_leaves_nothing_running_without_cgroups() {
    no_output_timeout_kills_every_escaped_chip(true);
}

fn signal_stops_every_escaped_chip(sig: i32, cookie: bool) {
    let tmp = util::tempdir();
    let file = plan(tmp.path(), "sig", true, "10m");
    let results = tmp.path().join("results");
    let child = start(tmp.path(), &refs(&run_args(&file, &results)), cookie);
    let p = wait_all_started(tmp.path());
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
    let out = wait_output(child);
    let alive: Vec<_> = p.iter().filter(|(_, pid)| running(*pid)).cloned().collect();
    kill_leftovers(&p);
    assert_eq!(out.status.code(), Some(3), "{}", util::stderr(&out));
    assert!(
        util::stderr(&out).contains("campaign resume"),
        "{}",
        util::stderr(&out)
    );
    assert!(
        alive.is_empty(),
        "still running after signal {sig}: {alive:?}"
    );
}

#[test]
fn ctrl_c_leaves_nothing_running() {
    signal_stops_every_escaped_chip(libc::SIGINT, false);
}

#[test]
fn sigterm_leaves_nothing_running_without_cgroups() {
    signal_stops_every_escaped_chip(libc::SIGTERM, true);
}

#[test]
fn sighup_behaves_like_sigterm() {
    signal_stops_every_escaped_chip(libc::SIGHUP, false);
}

fn resume_after_sigkill_reaps_what_the_dead_session_left(cookie: bool) {
    let tmp = util::tempdir();
    let file = plan(tmp.path(), "killed", true, "10m");
    let results = tmp.path().join("results");
    let child = start(tmp.path(), &refs(&run_args(&file, &results)), cookie);
    let p = wait_all_started(tmp.path());
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = wait_output(child);
    // campaign is gone; its stack is not.
    let survivors: Vec<_> = p.iter().filter(|(_, pid)| running(*pid)).cloned().collect();
    assert!(!survivors.is_empty(), "nothing survived SIGKILL: {p:?}");
    let run_dir = std::fs::read_dir(results.join("killed"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    // The resumed run must finish: its frozen plan stops hanging.
    let frozen = run_dir.join("plan.toml");
    let text = std::fs::read_to_string(&frozen).unwrap();
    std::fs::write(
        &frozen,
        text.replace("STANDIN_HANG = \"1\"", "STANDIN_HANG = \"0\""),
    )
    .unwrap();
    std::fs::remove_file(tmp.path().join("pids.txt")).unwrap();
    let child = start(
        tmp.path(),
        &["resume", run_dir.to_str().unwrap(), "--plan-edited", "-q"],
        cookie,
    );
    let out = wait_output(child);
    let alive: Vec<_> = p.iter().filter(|(_, pid)| running(*pid)).cloned().collect();
    kill_leftovers(&p);
    let stdout = util::stdout(&out);
    assert!(
        alive.is_empty(),
        "the resume left {alive:?} running\n{stdout}"
    );
    assert!(
        stdout.contains("resume: killed ") && stdout.contains("left running by run:"),
        "{stdout}"
    );
    for (_, pid) in &survivors {
        assert!(
            stdout.contains(&format!("{pid} (")),
            "{pid} not named: {stdout}"
        );
    }
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", util::stderr(&out));
}

#[test]
fn resume_after_sigkill_reaps_leftovers() {
    resume_after_sigkill_reaps_what_the_dead_session_left(false);
}

#[test]
fn resume_after_sigkill_reaps_leftovers_without_cgroups() {
    resume_after_sigkill_reaps_what_the_dead_session_left(true);
}

/// Runs share kept cgroups (one per run in flight, made once, not once per run), each run still
/// counts only its own CPU stall, a background process a run leaves is stopped with it, and the
/// campaign removes its cgroups when it ends.
#[test]
fn runs_reuse_one_cgroup_and_the_campaign_removes_it() {
    let tmp = util::tempdir();
    let stack = tmp.path().join("stack.sh");
    // Each run leaves a background sleeper holding no pipe: the run's end must stop it.
    std::fs::write(
        &stack,
        "#!/bin/sh\n(sleep 300 </dev/null >/dev/null 2>&1 &)\necho \"bg $$\" >> \"$PIDS\"\n\
         echo 'CAMPAIGN_SAMPLE {\"phase\":\"timed\",\"execute_s\":0.001,\"ok\":true}'\n\
         echo 'CAMPAIGN_DONE {\"correctness\":\"pass\"}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&stack, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let file = tmp.path().join("kept.toml");
    std::fs::write(
        &file,
        format!(
            r#"[campaign]
name = "kept"
[case]
platform = "host"
[axes]
variant = ["mesh"]
p = [2]
count = [1, 2, 3, 4, 5]
stacks = ["s"]
[rounds]
warmup = 0
timed = 1
[run]
repeats = 1
[devices]
kind = "npu"
ids = "0-1"
[stacks.s]
command = ["{}"]
resource = "none"
env = {{ PIDS = "{}" }}
"#,
            stack.display(),
            tmp.path().join("pids.txt").display()
        ),
    )
    .unwrap();
    let results = tmp.path().join("results");
    let mut args = run_args(&file, &results);
    args.extend(["--jobs".to_string(), "2".to_string()]);
    let child = start(tmp.path(), &refs(&args), false);
    let out = wait_output(child);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let run_dir = std::fs::read_dir(results.join("kept"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let journal = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    let cgroups: Vec<String> = journal
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "started")
        .filter_map(|v| v["cgroup"].as_str().map(str::to_string))
        .collect();
    let results_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("results.json")).unwrap())
            .unwrap();
    let runs = results_json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 5);
    if cgroups.is_empty() {
        eprintln!("skipped the cgroup checks: runs are not in cgroups here");
        return;
    }
    assert_eq!(cgroups.len(), 5, "{journal}");
    let distinct: std::collections::BTreeSet<&String> = cgroups.iter().collect();
    assert!(
        distinct.len() <= 2,
        "at most one kept cgroup per run in flight (--jobs 2): {cgroups:?}"
    );
    for cgroup in distinct {
        assert!(!Path::new(cgroup).exists(), "{cgroup} is left behind");
    }
    // Each run's own stall, measured from the kept cgroup's total before it (a fraction).
    for run in runs {
        let c = run["cpu_contention"].as_f64();
        assert!(c.is_none_or(|c| (0.0..=1.0).contains(&c)), "{run}");
    }
    // No sleeper outlived its run.
    let until = Instant::now() + CAP;
    loop {
        let sleepers: Vec<i32> = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .map(|env| {
                        env.split(|b| *b == 0).any(|kv| {
                            kv == format!("PIDS={}", tmp.path().join("pids.txt").display())
                                .as_bytes()
                        })
                    })
                    .unwrap_or(false)
                    && running(*pid)
            })
            .collect();
        if sleepers.is_empty() {
            break;
        }
        assert!(Instant::now() < until, "left running: {sleepers:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The cgroup2 directory this test process is in (campaign, its child, makes its units beside
/// it), and the cgroup2 mount; `None` where cgroups are not writable here.
fn own_cgroup() -> Option<(PathBuf, PathBuf)> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = own.lines().find_map(|l| l.strip_prefix("0::"))?.to_string();
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (root, mount) = info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        right.starts_with("cgroup2 ").then(|| {
            let f: Vec<&str> = left.split(' ').collect();
            (f[3].to_string(), PathBuf::from(f[4]))
        })
    })?;
    let rel = rel
        .strip_prefix(&root)
        .unwrap_or(&rel)
        .trim_start_matches('/');
    let dir = mount.join(rel);
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.procs"))
        .ok()?;
    Some((dir, mount))
}

fn sleeper(env: &[(&str, &str)]) -> Child {
    let mut c = Command::new("sleep");
    c.arg("600").stdin(Stdio::null()).stdout(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

/// A run dir can come from someone else: `resume` signals and removes only what campaign made
/// for this run dir, whatever its journal names. Open `started` lines name a foreign cgroup
/// (with this run dir's own unit id), the cgroup root and a foreign unit cookie; the processes in
/// them survive the resume, the foreign cgroup stays, and the resume says what it refused.
#[test]
fn resume_touches_nothing_a_hostile_journal_names() {
    let tmp = util::tempdir();
    let stack = tmp.path().join("stack.sh");
    std::fs::write(
        &stack,
        "#!/bin/sh\necho 'CAMPAIGN_SAMPLE {\"phase\":\"timed\",\"execute_s\":0.001,\"ok\":true}'\n\
         echo 'CAMPAIGN_DONE {\"correctness\":\"pass\"}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&stack, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let file = tmp.path().join("hostile.toml");
    std::fs::write(
        &file,
        format!(
            "[campaign]\nname = \"hostile\"\n[case]\nplatform = \"host\"\n[axes]\nvariant = [\"mesh\"]\n\
             p = [2]\ncount = [1, 2, 3]\nstacks = [\"s\"]\n[rounds]\nwarmup = 0\ntimed = 1\n[run]\nrepeats = 1\n\
             [devices]\nkind = \"npu\"\nids = \"0-1\"\n[stacks.s]\ncommand = [\"{}\"]\nresource = \"none\"\n",
            stack.display()
        ),
    )
    .unwrap();
    let results = tmp.path().join("results");
    let out = wait_output(start(tmp.path(), &refs(&run_args(&file, &results)), false));
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let run_dir = std::fs::read_dir(results.join("hostile"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let journal_path = run_dir.join("journal.jsonl");
    let journal = std::fs::read_to_string(&journal_path).unwrap();
    let steps: Vec<String> = journal
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "started" && v["step"].as_str().unwrap().starts_with("run:"))
        .map(|v| v["step"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(steps.len(), 3, "{journal}");

    // What stands in for someone else's work: a process in a foreign cgroup (where cgroups are
    // writable), one in the cgroup root, one carrying another campaign's unit cookie.
    let foreign_id = "0123456789abcdef-2";
    let cookie = sleeper(&[("CAMPAIGN_UNIT", foreign_id)]);
    let mut victims = vec![cookie];
    let cgroups = own_cgroup();
    let mut foreign_cgroup = None;
    if let Some((dir, mount)) = &cgroups {
        let foreign = dir.join(format!("foreign-{}", std::process::id()));
        std::fs::create_dir_all(&foreign).unwrap();
        let inside = sleeper(&[]);
        std::fs::write(foreign.join("cgroup.procs"), inside.id().to_string()).unwrap();
        let at_root = sleeper(&[]);
        std::fs::write(mount.join("cgroup.procs"), at_root.id().to_string()).unwrap();
        victims.extend([inside, at_root]);
        foreign_cgroup = Some((foreign, mount.clone()));
    } else {
        eprintln!("no writable cgroup2 here: only the cookie is checked");
    }
    let (foreign, root) = match &foreign_cgroup {
        Some((f, m)) => (f.display().to_string(), m.display().to_string()),
        None => ("/sys/fs/cgroup/foreign".into(), "/sys/fs/cgroup".into()),
    };
    let own_id = campaign::executor::unit::id_for(&run_dir, &steps[0], 2);
    let line = |step: &str, unit: &str, cgroup: &str| {
        serde_json::json!({
            "t": "2026-12-02T00:00:00.000+00:00", "event": "started", "step": step,
            "attempt": 2, "fingerprint": "x", "cgroup": cgroup, "unit": unit,
        })
        .to_string()
    };
    let hostile = [
        line(&steps[0], &own_id, &foreign),
        line(&steps[1], foreign_id, &root),
        line(
            &steps[2],
            foreign_id,
            &format!("{root}/campaign-{foreign_id}"),
        ),
    ];
    std::fs::write(&journal_path, format!("{journal}{}\n", hostile.join("\n"))).unwrap();

    let out = wait_output(start(
        tmp.path(),
        &["resume", run_dir.to_str().unwrap(), "-q"],
        false,
    ));
    let stderr = util::stderr(&out);
    let alive: Vec<u32> = victims
        .iter()
        .map(Child::id)
        .filter(|&p| running(p as i32))
        .collect();
    let foreign_left = foreign_cgroup.as_ref().is_none_or(|(f, _)| f.is_dir());
    for mut v in victims {
        let _ = v.kill();
        let _ = v.wait();
    }
    if let Some((f, _)) = &foreign_cgroup {
        let _ = std::fs::remove_dir(f);
    }
    assert_eq!(
        alive.len(),
        if cgroups.is_some() { 3 } else { 1 },
        "{stderr}"
    );
    assert!(foreign_left, "the foreign cgroup was removed\n{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        !util::stdout(&out).contains("resume: killed"),
        "{}",
        util::stdout(&out)
    );
    for step in &steps {
        assert!(
            stderr.contains(&format!(
                "`started` line of {step} names what this run dir did not make"
            )),
            "{step} not named\n{stderr}"
        );
    }
    assert!(
        stderr.contains("only its unit's own processes are reaped"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing of it is reaped"), "{stderr}");
}

/// A plan with one run of a shell stack `script` (timeout `timeout`).
fn shell_plan(dir: &Path, name: &str, script: &str, timeout: &str) -> PathBuf {
    let text = format!(
        r#"[campaign]
name = "{name}"

[case]
platform = "host"

[axes]
variant = ["mesh"]
p = [2]
count = [256]
stacks = ["daemon"]

[rounds]
warmup = 0
timed = 1

[run]
timeout = "{timeout}"
repeats = 1

[devices]
kind = "cpu"

[stacks.daemon]
command = ["sh", "-c", '''{script}''']
shape = "subprocess"
resource = "none"
"#
    );
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    file
}

/// The pid a stack wrote into `file`, once it is there and running.
fn wait_pid(file: &Path) -> i32 {
    let until = Instant::now() + CAP;
    loop {
        let pid = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok());
        if let Some(pid) = pid.filter(|p| running(*p)) {
            return pid;
        }
        assert!(
            Instant::now() < until,
            "{} never named a running pid",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait until `pid` is gone (true) or the cap has passed (false).
fn gone_within_cap(pid: i32) -> bool {
    let until = Instant::now() + CAP;
    while running(pid) {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// Without cgroups, a daemon that clears `CAMPAIGN_UNIT`, starts a new session and is orphaned
/// (its parent exits at once) is still the unit's: it is stopped with the run, not left behind
/// when campaign exits (issue 31, item 7: the shepherd).
#[test]
fn a_daemon_that_clears_the_cookie_is_stopped_without_cgroups() {
    let tmp = util::tempdir();
    let pidfile = tmp.path().join("daemon.pid");
    let script = format!(
        "env -u CAMPAIGN_UNIT setsid sh -c 'sleep 300 & echo $! > {pid}'; \
         while [ ! -s {pid} ]; do sleep 0.05; done; \
         echo 'CAMPAIGN_SAMPLE {{\"execute_s\":0.001,\"ok\":true}}'; \
         echo 'CAMPAIGN_DONE {{\"correctness\":\"pass\"}}'",
        pid = pidfile.display()
    );
    let file = shell_plan(tmp.path(), "cookieless", &script, "5m");
    let results = tmp.path().join("results");
    let child = start(tmp.path(), &refs(&run_args(&file, &results)), true);
    let out = wait_output(child);
    // The stack waited for the pid file before it finished: it is complete now.
    let daemon: i32 = std::fs::read_to_string(&pidfile)
        .unwrap_or_else(|e| panic!("no {}: {e}\n{}", pidfile.display(), util::stderr(&out)))
        .trim()
        .parse()
        .unwrap();
    let alive = running(daemon);
    kill_leftovers(&[(String::new(), daemon)]);
    assert!(
        !alive,
        "the cookie-less daemon {daemon} outlived campaign\n{}{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
}

/// After campaign itself is SIGKILLed, its stack is still stopped once its own timeout (plus
/// campaign's grace and a margin) has passed — nobody has to resume first. With cgroups the
/// warden keeps the deadline, in the fallback the shepherd.
fn a_sigkilled_campaigns_stack_does_not_outlive_its_timeout(cookie: bool) {
    let tmp = util::tempdir();
    let pidfile = tmp.path().join("stack.pid");
    let script = format!("sleep 600 & echo $! > {pid}; wait", pid = pidfile.display());
    let file = shell_plan(tmp.path(), "orphaned", &script, "2s");
    let results = tmp.path().join("results");
    let child = start(tmp.path(), &refs(&run_args(&file, &results)), cookie);
    let stack = wait_pid(&pidfile);
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = wait_output(child);
    // 2 s timeout + 5 s grace + 10 s kill wait + 15 s margin + 5 s grace ≪ the 120 s cap.
    let gone = gone_within_cap(stack);
    kill_leftovers(&[(String::new(), stack)]);
    assert!(
        gone,
        "the stack {stack} outlived its timeout by more than {CAP:?}"
    );
}

#[test]
fn a_sigkilled_campaigns_stack_does_not_outlive_its_timeout_with_cgroups() {
    a_sigkilled_campaigns_stack_does_not_outlive_its_timeout(false);
}

#[test]
fn a_sigkilled_campaigns_stack_does_not_outlive_its_timeout_without_cgroups() {
    a_sigkilled_campaigns_stack_does_not_outlive_its_timeout(true);
}

/// A stack that ignores SIGTERM and times out is killed (`cgroup.kill` with cgroups), and the
/// runs after it pass: its kept cgroup is retired, never handed to the next run (issue 43,
/// item 1: on this machine's kernel a process born into a killed cgroup is SIGKILLed at once,
/// so every later run of the campaign used to fail by signal 9 in its slot).
fn a_stubborn_stack_does_not_kill_later_runs(cookie: bool) {
    let tmp = util::tempdir();
    let text = r#"[campaign]
name = "stubborn"

[case]
platform = "host"

[axes]
variant = ["mesh"]
p = [2]
count = [64, 128, 256, 4096]
stacks = ["stub"]

[rounds]
warmup = 0
timed = 1

[run]
timeout = "2s"
repeats = 1

[devices]
kind = "cpu"

[stacks.stub]
command = ["sh", "-c", '''trap "" TERM; if [ {{ count }} = 4096 ]; then sleep 300; fi; echo 'CAMPAIGN_SAMPLE {"execute_s":0.001,"ok":true}'; echo 'CAMPAIGN_DONE {"correctness":"pass"}' ''']
shape = "subprocess"
resource = "none"
"#;
    let file = tmp.path().join("stubborn.toml");
    std::fs::write(&file, text).unwrap();
    let results = tmp.path().join("results");
    let mut args = run_args(&file, &results);
    args.extend(["--jobs".to_string(), "1".to_string()]);
    let out = wait_output(start(tmp.path(), &refs(&args), cookie));
    let (stdout, stderr) = (util::stdout(&out), util::stderr(&out));
    let run_dir = std::fs::read_dir(results.join("stubborn"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("journal.jsonl").exists())
        .unwrap_or_else(|| panic!("no run dir\n{stdout}{stderr}"));
    let journal = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    // One run at a time, the stubborn one first (the largest count leads the order): every
    // other run starts after it was killed, so the test cannot pass without the later runs.
    let started: Vec<&str> = (journal.lines())
        .filter(|l| l.contains(r#""event":"started""#) && l.contains(r#""step":"run:"#))
        .collect();
    assert_eq!(started.len(), 4, "{journal}");
    assert!(started[0].contains("count4096"), "{journal}");
    let results_csv = std::fs::read_to_string(run_dir.join("results.csv")).unwrap();
    let statuses = |word: &str| results_csv.lines().filter(|l| l.contains(word)).count();
    assert_eq!(statuses(",timeout,"), 1, "{results_csv}\n{stderr}");
    assert_eq!(statuses(",pass,"), 3, "{results_csv}\n{stderr}");
    if !cookie && own_cgroup().is_some() {
        // The stubborn run's slot is not the one the later runs ran in.
        let cgroup = |l: &str| {
            l.split(r#""cgroup":""#)
                .nth(1)
                .map(|r| r.split('"').next().unwrap().to_string())
        };
        let first = cgroup(started[0]).expect("a cgroup is journaled");
        for later in &started[1..] {
            assert_ne!(cgroup(later).as_deref(), Some(first.as_str()), "{journal}");
        }
    }
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
}

#[test]
fn a_stubborn_stack_does_not_kill_later_runs_with_cgroups() {
    a_stubborn_stack_does_not_kill_later_runs(false);
}

#[test]
fn a_stubborn_stack_does_not_kill_later_runs_without_cgroups() {
    a_stubborn_stack_does_not_kill_later_runs(true);
}
