//! The shepherd: the leader of every unit in the cookie fallback (no writable cgroup v2).
//!
//! Without a cgroup, a unit is found by its environment cookie and by descent from its leader.
//! A daemon that clears `CAMPAIGN_UNIT` and double-forks used to escape both: it was reparented
//! to campaign (a subreaper of every unit at once), where nothing tells whose it is. So in the
//! fallback campaign starts `campaign __shepherd GRACE_MS DEADLINE_MS PATH ARGV...` instead of
//! the stack: the shepherd is a child subreaper that runs the stack as its only child, so every
//! orphan of the stack is reparented to the shepherd and stays a descendant of the unit's
//! leader. When the stack's main process ends, the shepherd stops what it left (SIGTERM, the
//! grace, SIGKILL) and only then exits, with the stack's own status (a signal is re-raised).
//! It also keeps the run's deadline (a backup that fires after campaign's own timeout, grace
//! and kill wait): if campaign itself is SIGKILLed, the stack still does not outlive its
//! timeout. Termination signals sent to the shepherd alone are passed to the stack. The price
//! is one extra `exec` per process in the fallback only; cgroup containment is unchanged.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// The hidden first argument that makes the `campaign` binary a shepherd.
pub const ARG: &str = "__shepherd";

/// After campaign's own deadline, its grace and its wait for SIGKILL to take effect, the
/// shepherd's backup deadline fires this much later (campaign, when alive, always acts first).
pub(crate) const BACKUP_MARGIN: Duration = Duration::from_secs(15);

/// Exit code when the stack could not be started at all (as a shell reports it).
const CANNOT_START: i32 = 127;

/// The binary that can serve as shepherd (set by the `campaign` binary at start; library
/// users and unit tests, whose executable is not campaign, run stacks directly).
static EXE: OnceLock<PathBuf> = OnceLock::new();

/// Declare that this process's executable is `campaign` and may be re-executed as a helper.
pub fn enable() {
    if let Ok(exe) = std::env::current_exe() {
        let _ = EXE.set(exe);
    }
}

/// The executable to run as shepherd, once [`enable`]d.
pub(crate) fn exe() -> Option<&'static Path> {
    EXE.get().map(PathBuf::as_path)
}

/// The limits a shepherd keeps for its stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// The run's timeout (no backup deadline without one).
    pub timeout: Option<Duration>,
    /// SIGTERM-to-SIGKILL grace for what the stack leaves behind.
    pub grace: Duration,
}

impl Default for Bound {
    fn default() -> Bound {
        Bound {
            timeout: None,
            grace: Duration::from_secs(5),
        }
    }
}

impl Bound {
    /// When the shepherd stops the stack on its own, from its start: after campaign would
    /// have stopped it (timeout, grace, kill wait) and a margin.
    pub(crate) fn backup_deadline(&self) -> Option<Duration> {
        self.timeout
            .map(|t| t + self.grace + super::KILL_WAIT + BACKUP_MARGIN)
    }
}

/// The shepherd's arguments (after the executable) for running `path` as `argv`.
pub(crate) fn arguments(bound: Bound, path: &OsStr, argv: &[String]) -> Vec<OsString> {
    let millis = |d: Duration| d.as_millis().min(u64::MAX as u128).to_string();
    let deadline = bound.backup_deadline().map_or("0".to_string(), millis);
    let mut out: Vec<OsString> = vec![
        ARG.into(),
        millis(bound.grace).into(),
        deadline.into(),
        path.to_os_string(),
    ];
    out.extend(argv.iter().map(OsString::from));
    out
}

/// Set by the interval timer (the deadline or the end of a grace period).
static ALARM: AtomicBool = AtomicBool::new(false);
/// A termination signal sent to the shepherd, to pass on to the stack (0: none).
static FORWARD: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_alarm(_: libc::c_int) {
    ALARM.store(true, Ordering::SeqCst);
}

extern "C" fn on_term(sig: libc::c_int) {
    FORWARD.store(sig, Ordering::SeqCst);
}

/// Run as the shepherd: `args` are the whole command line (`campaign __shepherd ...`). Returns
/// only when the stack could not be started or the arguments are not a shepherd's; otherwise it
/// exits with the stack's status.
pub fn main(args: &[OsString]) -> i32 {
    let Some((grace, deadline, path, argv)) = parse(args) else {
        crate::tell!("campaign {ARG}: internal helper (GRACE_MS DEADLINE_MS PATH ARGV...)");
        return 2;
    };
    // SAFETY: prctl and sigaction with valid arguments; the handlers only store atomics.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        handle(libc::SIGALRM, on_alarm);
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            handle(sig, on_term);
        }
    }
    let main_pid = match start(path, argv) {
        Ok(pid) => pid,
        Err(e) => {
            crate::tell!("campaign: cannot start {}: {e}", Path::new(path).display());
            return CANNOT_START;
        }
    };
    if let Some(d) = deadline {
        arm(d);
    }
    let status = wait_main(main_pid);
    disarm();
    stop_the_rest(grace);
    match status {
        Some(status) => exit_like(status),
        // The backup deadline: the stack was stopped as if killed.
        None => exit_like(libc::SIGKILL),
    }
}

/// `(grace, deadline, path, argv)` from `campaign __shepherd GRACE_MS DEADLINE_MS PATH ARGV...`.
fn parse(args: &[OsString]) -> Option<(Duration, Option<Duration>, &OsStr, &[OsString])> {
    let ms = |s: &OsString| -> Option<u64> { s.to_str()?.parse().ok() };
    match args {
        [_, arg, grace, deadline, path, argv @ ..] if arg == ARG && !argv.is_empty() => {
            let deadline = ms(deadline)?;
            Some((
                Duration::from_millis(ms(grace)?),
                (deadline > 0).then(|| Duration::from_millis(deadline)),
                path.as_os_str(),
                argv,
            ))
        }
        _ => None,
    }
}

/// Install `handler` for `sig` without `SA_RESTART`, so `waitpid` returns on it.
unsafe fn handle(sig: libc::c_int, handler: extern "C" fn(libc::c_int)) {
    // SAFETY: a zeroed sigaction with a handler and an empty mask is valid.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = handler as usize;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(sig, &act, std::ptr::null_mut());
    }
}

/// Start the stack: `path` with `argv` (its `argv[0]` included), through `/bin/sh` when the
/// file has no `#!` line, as `execvp` would. Handlers are reset by `exec`; the signal mask is
/// cleared by the standard library.
fn start(path: &OsStr, argv: &[OsString]) -> std::io::Result<i32> {
    let direct = std::process::Command::new(path)
        .arg0(&argv[0])
        .args(&argv[1..])
        .spawn();
    let child = match direct {
        Err(e) if e.raw_os_error() == Some(libc::ENOEXEC) => std::process::Command::new("/bin/sh")
            .arg0("/bin/sh")
            .arg(path)
            .args(&argv[1..])
            .spawn()?,
        other => other?,
    };
    Ok(child.id() as i32)
}

/// Arm the one-shot interval timer `after` from now.
fn arm(after: Duration) {
    ALARM.store(false, Ordering::SeqCst);
    let value = libc::timeval {
        tv_sec: after.as_secs().min(i64::MAX as u64 / 2) as libc::time_t,
        tv_usec: after.subsec_micros().max(1) as libc::suseconds_t,
    };
    let timer = libc::itimerval {
        it_interval: libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
        it_value: value,
    };
    // SAFETY: setitimer with a valid itimerval.
    unsafe { libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) };
}

fn disarm() {
    // SAFETY: a zeroed itimerval stops the timer.
    unsafe {
        let off: libc::itimerval = std::mem::zeroed();
        libc::setitimer(libc::ITIMER_REAL, &off, std::ptr::null_mut());
    }
    ALARM.store(false, Ordering::SeqCst);
}

/// Wait for the stack's main process, reaping orphans meanwhile and passing termination
/// signals on; `None` when the deadline came first.
fn wait_main(main_pid: i32) -> Option<i32> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid on any child with a valid status pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == main_pid {
            return Some(status);
        }
        if pid > 0 {
            continue; // an orphan of the stack, reparented here and now reaped
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => {
                let sig = FORWARD.swap(0, Ordering::SeqCst);
                if sig != 0 {
                    super::signal(main_pid, sig);
                }
                if ALARM.load(Ordering::SeqCst) {
                    return None;
                }
            }
            // No child at all: the main process was reaped elsewhere (cannot happen here).
            _ => return Some(0),
        }
    }
}

/// Stop and reap everything still below the shepherd: SIGTERM, up to `grace`, SIGKILL.
fn stop_the_rest(grace: Duration) {
    if !has_children() {
        return;
    }
    signal_tree(libc::SIGTERM);
    arm(grace);
    if !reap_all_until_alarm() {
        signal_tree(libc::SIGKILL);
        arm(super::KILL_WAIT);
        reap_all_until_alarm();
    }
    disarm();
}

/// Reap children until none is left (`true`) or the timer fires (`false`).
fn reap_all_until_alarm() -> bool {
    loop {
        let mut status = 0;
        // SAFETY: waitpid on any child with a valid status pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid > 0 {
            continue;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) if ALARM.load(Ordering::SeqCst) => return false,
            Some(libc::EINTR) => {}
            _ => return true,
        }
    }
}

fn has_children() -> bool {
    !descendants().is_empty()
}

/// Every live descendant of the shepherd (all of them are below it: it is their subreaper).
fn descendants() -> Vec<i32> {
    let mut out = Vec::new();
    let mut todo = vec![std::process::id() as i32];
    while let Some(pid) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let Ok(text) = std::fs::read(task.path().join("children")) else {
                continue;
            };
            for child in text
                .split(|b| b.is_ascii_whitespace())
                .filter_map(|w| std::str::from_utf8(w).ok()?.parse::<i32>().ok())
            {
                if !out.contains(&child) {
                    out.push(child);
                    todo.push(child);
                }
            }
        }
    }
    out
}

fn signal_tree(sig: libc::c_int) {
    for pid in descendants() {
        super::signal(pid, sig);
    }
}

/// Exit the way the stack did: its exit code, or the same signal re-raised.
fn exit_like(status: i32) -> ! {
    let sig = if libc::WIFSIGNALED(status) {
        libc::WTERMSIG(status)
    } else if libc::WIFEXITED(status) {
        std::process::exit(libc::WEXITSTATUS(status))
    } else {
        status
    };
    // SAFETY: restore the default action, unblock and raise: the process ends by `sig`.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
    std::process::exit(128 + sig)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_carry_grace_backup_deadline_path_and_argv() {
        let bound = Bound {
            timeout: Some(Duration::from_secs(60)),
            grace: Duration::from_secs(2),
        };
        let args = arguments(
            bound,
            OsStr::new("/bin/sleep"),
            &["sleep".into(), "9".into()],
        );
        let words: Vec<&str> = args.iter().map(|a| a.to_str().unwrap()).collect();
        // 60 s + 2 s grace + 10 s kill wait + 15 s margin.
        assert_eq!(
            words,
            ["__shepherd", "2000", "87000", "/bin/sleep", "sleep", "9"]
        );
        let mut full = vec![OsString::from("campaign")];
        full.extend(args);
        let (grace, deadline, path, argv) = parse(&full).unwrap();
        assert_eq!(grace, Duration::from_secs(2));
        assert_eq!(deadline, Some(Duration::from_secs(87)));
        assert_eq!(path, OsStr::new("/bin/sleep"));
        assert_eq!(argv.len(), 2);
    }

    #[test]
    fn no_timeout_means_no_backup_deadline_and_bad_arguments_are_refused() {
        let args = arguments(Bound::default(), OsStr::new("x"), &["x".into()]);
        let mut full = vec![OsString::from("campaign")];
        full.extend(args);
        assert_eq!(parse(&full).unwrap().1, None);
        let bad: Vec<OsString> = ["campaign", ARG, "soon", "0", "x", "x"]
            .iter()
            .map(OsString::from)
            .collect();
        assert!(parse(&bad).is_none());
        assert!(parse(&full[..5]).is_none(), "argv must not be empty");
    }
}
