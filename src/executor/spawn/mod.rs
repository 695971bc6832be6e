//! Starting a stack process without copying campaign's address space, already inside its
//! containment unit before it runs a single instruction of the stack.
//!
//! Why not `std`/`tokio::process`: a cgroup unit needs the child to be in the unit's cgroup
//! before `exec` (so nothing it forks can escape), which needs a `pre_exec` hook, and a hook
//! forces the standard library's `fork` path: every spawn then copies campaign's page tables,
//! whose size grows with the number of runs a campaign holds — per-run cost grew with N
//! (docs/performance.md). Here the child is made the way `posix_spawn` makes it:
//! `CLONE_VM | CLONE_VFORK` on a small stack of its own (nothing is copied; the calling thread
//! sleeps until the child has called `execve` or died) plus `CLONE_PIDFD`, so the exit is
//! awaited on a pidfd and the pid cannot be reused while campaign holds it. `clone3` creates
//! the child directly in the unit's cgroup (`spawn::clone3`); where it cannot, glibc's `clone`
//! and the child writes itself into `cgroup.procs`. The child shares campaign's memory until
//! `execve`, so it only makes async-signal-safe calls on data prepared by the parent: reset
//! caught signals to their default, `setpgid(0, 0)`, join the cgroup (fallback), stdin from
//! `/dev/null` and stdout/stderr to pipes, `chdir`, an empty signal mask, `execve`. PATH lookup
//! happens in the parent, like `execvp` would.
//! A `Child` that is dropped before its exit was collected kills and reaps the process.
//! Needs Linux 5.4 (pidfds that can be polled and waited on), like `cgroup.kill` needs 5.14.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::unix::pipe;

use crate::executor::unit::{shepherd, Unit, COOKIE};

/// Stack of the child between `clone` and `execve` (it makes a handful of system calls).
const CHILD_STACK: usize = 128 * 1024;

/// How long a dropped `Child` waits for its SIGKILLed process before leaving the zombie to
/// the next spawn's sweep.
const DROP_WAIT_MS: i32 = 2000;

/// Signals are 1..NSIG on Linux (glibc refuses its two internal ones; they are skipped).
const NSIG: libc::c_int = 65;

/// Search path `execvp` uses when the environment has no `PATH`.
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// Pidfds of killed children whose exit was not collected yet (reaped by the next spawn).
static UNREAPED: Mutex<Vec<OwnedFd>> = Mutex::new(Vec::new());

/// A running stack process: its pid, the pidfd its exit is awaited on, and the read ends of
/// its stdout and stderr.
#[derive(Debug)]
pub(crate) struct Child {
    pid: i32,
    pidfd: Option<AsyncFd<OwnedFd>>,
    status: Option<ExitStatus>,
    pub(crate) stdout: Option<pipe::Receiver>,
    pub(crate) stderr: Option<pipe::Receiver>,
}

/// What the child needs, prepared by the parent: pointers into it stay valid because the
/// parent thread sleeps (`CLONE_VFORK`) until the child has exec'd or exited.
struct ChildArgs {
    path: *const libc::c_char,
    argv: *const *const libc::c_char,
    /// The same arguments for `/bin/sh` when the program has no `#!` line (`ENOEXEC`), as
    /// `execvp` retries.
    sh_argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    cwd: *const libc::c_char,
    /// The unit's cgroup directory, or -1 without a cgroup.
    cgroup: RawFd,
    /// The child moves itself into `cgroup` (it was not created there by `clone3`).
    join_cgroup: std::sync::atomic::AtomicBool,
    stdin: RawFd,
    stdout: RawFd,
    stderr: RawFd,
    /// Why the child could not start (errno), 0 when it exec'd.
    errno: AtomicI32,
}

/// Start `argv` in `cwd`, with campaign's environment plus `env` plus the unit's cookie,
/// stdin from `/dev/null`, stdout and stderr piped, in its own process group and inside
/// `unit`. Must be called within a tokio runtime (the pidfd and pipes join its reactor).
///
/// Errors are those `execvp` would give (`NotFound` for a program missing from PATH or a path
/// that does not exist, `PermissionDenied` for a file that cannot be executed, ...).
pub(crate) fn spawn(
    argv: &[String],
    env: &[(String, String)],
    cwd: &Path,
    unit: &Unit,
) -> io::Result<Child> {
    sweep_unreaped();
    let program = argv
        .first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty argv"))?;
    let envs = environment(env, unit.id());
    let path_var = envs
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_os_str());
    let resolved = find_program(program, path_var, cwd)?;
    // In the cookie fallback the unit's leader is a shepherd that runs the stack
    // (`unit::shepherd`): then the file exec'd is campaign's own and the stack its argument.
    let (path, words): (OsString, Vec<OsString>) = match unit.shepherd() {
        Some(exe) => {
            let mut words = vec![exe.as_os_str().to_os_string()];
            words.extend(shepherd::arguments(unit.limits(), &resolved, argv));
            (exe.as_os_str().to_os_string(), words)
        }
        None => (resolved, argv.iter().map(OsString::from).collect()),
    };
    let path = cstring(path.into_vec())?;
    let args: Vec<CString> = words
        .into_iter()
        .map(|a| cstring(a.into_vec()))
        .collect::<io::Result<_>>()?;
    let env_c: Vec<CString> = envs
        .iter()
        .map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            cstring(kv)
        })
        .collect::<io::Result<_>>()?;
    let sh = c"/bin/sh";
    let cwd_c = cstring(cwd.as_os_str().as_bytes().to_vec())?;
    let argv_p = pointers(args.iter().map(|a| a.as_ptr()));
    let sh_argv_p = pointers(
        [sh.as_ptr(), path.as_ptr()]
            .into_iter()
            .chain(args[1..].iter().map(|a| a.as_ptr())),
    );
    let envp = pointers(env_c.iter().map(|e| e.as_ptr()));

    let null = dev_null()?;
    let (out_r, out_w) = pipe_pair()?;
    let (err_r, err_w) = pipe_pair()?;
    let args = ChildArgs {
        path: path.as_ptr(),
        argv: argv_p.as_ptr(),
        sh_argv: sh_argv_p.as_ptr(),
        envp: envp.as_ptr(),
        cwd: cwd_c.as_ptr(),
        cgroup: unit.cgroup_fd().unwrap_or(-1),
        join_cgroup: std::sync::atomic::AtomicBool::new(false),
        stdin: null,
        stdout: out_w.as_raw_fd(),
        stderr: err_w.as_raw_fd(),
        errno: AtomicI32::new(0),
    };
    let (pid, pidfd) = clone_child(&args)?;
    drop((out_w, err_w));
    let failed = args.errno.load(Ordering::SeqCst);
    if failed != 0 {
        // The child has exited (it could not exec): collect it before reporting why.
        wait_blocking(&pidfd, -1);
        return Err(io::Error::from_raw_os_error(failed));
    }
    // SAFETY: the OwnedFd is moved into the AsyncFd, which alone closes it.
    let pidfd = match unsafe { AsyncFd::register_with_interest(pidfd, Interest::READABLE) } {
        Ok(fd) => fd,
        Err(e) => {
            let (pidfd, e) = e.into_parts();
            kill_and_reap(pidfd, pid);
            return Err(e);
        }
    };
    let mut child = Child {
        pid,
        pidfd: Some(pidfd),
        status: None,
        stdout: None,
        stderr: None,
    };
    child.stdout = Some(pipe::Receiver::from_owned_fd(out_r)?);
    child.stderr = Some(pipe::Receiver::from_owned_fd(err_r)?);
    Ok(child)
}

impl Child {
    pub(crate) fn id(&self) -> i32 {
        self.pid
    }

    /// Wait for the process to exit and collect its status. Cancel-safe: a dropped wait loses
    /// nothing, and a collected status is returned again.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.status {
                return Ok(status);
            }
            let Some(pidfd) = &self.pidfd else {
                return Err(io::Error::other("the process was already collected"));
            };
            let mut ready = pidfd.readable().await?;
            match try_wait(pidfd.get_ref())? {
                Some(status) => self.status = Some(status),
                None => ready.clear_ready(),
            }
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let Some(pidfd) = self.pidfd.take() else {
            return;
        };
        if self.status.is_none() {
            kill_and_reap(pidfd.into_inner(), self.pid);
        }
    }
}

/// SIGKILL a child that was not collected and reap it; a child that does not die within
/// [`DROP_WAIT_MS`] (uninterruptible sleep) is left to the next spawn's sweep.
fn kill_and_reap(pidfd: OwnedFd, pid: i32) {
    // SAFETY: the pid is our unreaped child (the pidfd pins it), so it names no other process.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    if !wait_blocking(&pidfd, DROP_WAIT_MS) {
        UNREAPED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(pidfd);
    }
}

/// Reap killed children that have died since they were dropped.
fn sweep_unreaped() {
    let mut left = UNREAPED.lock().unwrap_or_else(|e| e.into_inner());
    left.retain(|fd| !matches!(try_wait(fd), Ok(Some(_)) | Err(_)));
}

/// Wait up to `timeout_ms` (-1: no limit) for the child to exit and reap it; true when reaped.
fn wait_blocking(pidfd: &OwnedFd, timeout_ms: i32) -> bool {
    let mut poll = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut poll, 1, timeout_ms) };
        if rc < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return matches!(try_wait(pidfd), Ok(Some(_)));
    }
}

/// Collect the child's exit status if it has exited.
fn try_wait(pidfd: &OwnedFd) -> io::Result<Option<ExitStatus>> {
    // SAFETY: an all-zero siginfo_t is valid; waitid fills it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waitid on our own pidfd with a valid siginfo pointer.
        let rc = unsafe {
            libc::waitid(
                libc::P_PIDFD,
                pidfd.as_raw_fd() as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG,
            )
        };
        if rc == 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    // SAFETY: waitid filled a SIGCHLD siginfo (or left it zeroed: no child exited yet).
    let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
    if pid == 0 {
        return Ok(None);
    }
    // The raw wait status the standard library decodes: exit code in the second byte, else
    // the signal (with 0x80 when it dumped core).
    let raw = match info.si_code {
        libc::CLD_EXITED => (status & 0xff) << 8,
        libc::CLD_DUMPED => status | 0x80,
        _ => status,
    };
    Ok(Some(ExitStatus::from_raw(raw)))
}

/// Make the child (see the module comment) and return its pid and pidfd once it has exec'd
/// or exited. All signals are blocked in this thread meanwhile, so no handler of campaign's runs
/// in the child while it shares campaign's memory. `clone3` creates the child right in its
/// cgroup (`CLONE_INTO_CGROUP`, Linux 5.7); where it is missing or refused (older kernels,
/// seccomp filters that hide it), glibc's `clone` and the child writes itself into
/// `cgroup.procs` — a migration that now and then waits for an RCU grace period (10–20 ms).
fn clone_child(args: &ChildArgs) -> io::Result<(i32, OwnedFd)> {
    CHILD_STACKS.with(|cell| {
        let mut kept = cell.borrow_mut();
        let base = match &*kept {
            Some(stack) => stack.base,
            None => kept.insert(ChildStack::new()?).base,
        };
        clone_on(args, base)
    })
}

/// Page size assumed for the child stack's guard page (the smallest page size of the targets
/// campaign builds for; a larger real page only makes the guard smaller than a page).
const PAGE: usize = 4096;

/// The stack the child runs on until `execve`, mapped once per thread and kept: the calling
/// thread sleeps while its child uses it (`CLONE_VFORK`), so one spawn at a time uses it, and
/// unmapping a stack another CPU just touched costs a TLB shootdown every spawn.
struct ChildStack {
    /// The usable bottom (above the guard page).
    base: *mut u8,
}

impl ChildStack {
    fn new() -> io::Result<ChildStack> {
        // SAFETY: a fresh anonymous mapping; the lowest page is left inaccessible as a guard.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                CHILD_STACK + PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the guard page is inside the mapping just made.
        unsafe { libc::mprotect(map, PAGE, libc::PROT_NONE) };
        // SAFETY: PAGE < CHILD_STACK + PAGE: inside the mapping.
        Ok(ChildStack {
            base: unsafe { map.cast::<u8>().add(PAGE) },
        })
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer used (its thread is ending).
        unsafe { libc::munmap(self.base.sub(PAGE).cast(), CHILD_STACK + PAGE) };
    }
}

thread_local! {
    static CHILD_STACKS: std::cell::RefCell<Option<ChildStack>> =
        const { std::cell::RefCell::new(None) };
}

/// [`clone_child`] on the child stack whose usable bottom is `base`.
fn clone_on(args: &ChildArgs, base: *mut u8) -> io::Result<(i32, OwnedFd)> {
    // SAFETY: sigset_t values filled by sigfillset/pthread_sigmask before use.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    let mut pidfd: libc::c_int = -1;
    // SAFETY: the stack lies inside the mapping (stacks grow down on the targets campaign
    // builds for); `args` outlives the call because CLONE_VFORK returns only after the child
    // has exec'd or exited; `pidfd` receives the pidfd.
    let rc = unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let mut rc = clone3::spawn(args, base, CHILD_STACK, &mut pidfd);
        if rc == clone3::UNAVAILABLE {
            args.join_cgroup.store(true, Ordering::Relaxed);
            rc = libc::clone(
                child_main,
                base.add(CHILD_STACK).cast(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
                (args as *const ChildArgs).cast_mut().cast(),
                &mut pidfd as *mut libc::c_int,
                std::ptr::null_mut::<libc::c_void>(),
                std::ptr::null_mut::<libc::c_int>(),
            );
        }
        let e = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if rc < 0 {
            Err(e)
        } else {
            Ok(rc)
        }
    };
    let pid = rc?;
    // SAFETY: the clone succeeded with CLONE_PIDFD, so `pidfd` is a new descriptor we own.
    Ok((pid, unsafe { OwnedFd::from_raw_fd(pidfd) }))
}

/// The child until `execve`. It shares the parent's memory: no allocation, no locks, only
/// async-signal-safe calls, and it never returns.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's ChildArgs, alive while the parent sleeps in clone.
    let a = unsafe { &*(arg as *const ChildArgs) };
    // SAFETY: every call below is an async-signal-safe system call wrapper on valid data.
    unsafe {
        // Handlers are campaign's code: reset them (ignored signals stay ignored across exec,
        // as with std, except SIGPIPE which std restores to the default for its children).
        for sig in 1..NSIG {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                continue;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut act) != 0 {
                continue;
            }
            let caught = act.sa_sigaction != libc::SIG_DFL && act.sa_sigaction != libc::SIG_IGN;
            if caught || sig == libc::SIGPIPE {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
            }
        }
        if libc::setpgid(0, 0) != 0 {
            fail(a);
        }
        if a.cgroup >= 0 && a.join_cgroup.load(Ordering::Relaxed) {
            let procs = libc::openat(
                a.cgroup,
                c"cgroup.procs".as_ptr(),
                libc::O_WRONLY | libc::O_CLOEXEC,
            );
            if procs < 0 || libc::write(procs, b"0".as_ptr().cast(), 1) != 1 {
                fail(a);
            }
            libc::close(procs);
        }
        for (from, to) in [(a.stdin, 0), (a.stdout, 1), (a.stderr, 2)] {
            if libc::dup2(from, to) < 0 {
                fail(a);
            }
        }
        if libc::chdir(a.cwd) != 0 {
            fail(a);
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        libc::execve(a.path, a.argv, a.envp);
        if *libc::__errno_location() == libc::ENOEXEC {
            libc::execve(*a.sh_argv, a.sh_argv, a.envp);
        }
        fail(a)
    }
}

/// Tell the parent why the child could not start and exit without running any of campaign's
/// exit code (it shares campaign's memory).
unsafe fn fail(a: &ChildArgs) -> ! {
    // SAFETY: errno of this thread; _exit never returns.
    unsafe {
        let errno = *libc::__errno_location();
        a.errno
            .store(if errno == 0 { libc::EIO } else { errno }, Ordering::SeqCst);
        libc::_exit(127)
    }
}

/// Campaign's environment with `env` laid over it and the unit's cookie last (sorted by name,
/// like the standard library's).
fn environment(env: &[(String, String)], unit_id: &str) -> Vec<(OsString, OsString)> {
    let mut all: std::collections::BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    for (k, v) in env {
        all.insert(k.into(), v.into());
    }
    all.insert(COOKIE.into(), unit_id.into());
    all.into_iter().collect()
}

/// The file `execve` gets for `program`: as given when it names a path, else the first
/// executable file named so in a `PATH` directory (relative entries are relative to `cwd`,
/// where the child runs), as `execvp` searches.
fn find_program(program: &str, path_var: Option<&OsStr>, cwd: &Path) -> io::Result<OsString> {
    if program.is_empty() {
        return Err(io::ErrorKind::NotFound.into());
    }
    if program.contains('/') {
        return Ok(program.into());
    }
    let path_var = path_var.unwrap_or(OsStr::new(DEFAULT_PATH));
    let mut denied = false;
    for dir in std::env::split_paths(path_var) {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".").to_path_buf()
        } else {
            dir
        };
        let candidate = dir.join(program);
        let on_disk = cwd.join(&candidate);
        let Ok(meta) = std::fs::metadata(&on_disk) else {
            continue;
        };
        if meta.is_file() && executable(&on_disk) {
            return Ok(candidate.into_os_string());
        }
        denied = true;
    }
    Err(if denied {
        io::ErrorKind::PermissionDenied.into()
    } else {
        io::ErrorKind::NotFound.into()
    })
}

/// May this process execute `path`?
fn executable(path: &Path) -> bool {
    CString::new(path.as_os_str().as_bytes())
        // SAFETY: a valid NUL-terminated path.
        .map(|p| unsafe { libc::access(p.as_ptr(), libc::X_OK) } == 0)
        .unwrap_or(false)
}

fn cstring(bytes: Vec<u8>) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in an argument or environment variable",
        )
    })
}

/// A NULL-terminated array of C string pointers.
fn pointers(items: impl Iterator<Item = *const libc::c_char>) -> Vec<*const libc::c_char> {
    items.chain(std::iter::once(std::ptr::null())).collect()
}

/// `/dev/null`, opened once (close-on-exec, above 0–2) and shared by every spawn: the
/// child's `dup2` onto 0 makes its own copy.
fn dev_null() -> io::Result<RawFd> {
    static NULL: std::sync::OnceLock<OwnedFd> = std::sync::OnceLock::new();
    if let Some(fd) = NULL.get() {
        return Ok(fd.as_raw_fd());
    }
    let fd = above_stdio(std::fs::File::open("/dev/null")?.into())?;
    Ok(NULL.get_or_init(|| fd).as_raw_fd())
}

/// A close-on-exec pipe `(read end, write end)`; the write end is moved above 0–2 so the
/// child's `dup2`s onto 0, 1 and 2 cannot overwrite one another.
fn pipe_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = std::io::pipe()?;
    Ok((r.into(), above_stdio(w.into())?))
}

/// `fd`, or a close-on-exec duplicate numbered 3 or more when it is 0, 1 or 2 (campaign was
/// started with one of those closed).
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor we own.
    let dup = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if dup < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    Ok(unsafe { OwnedFd::from_raw_fd(dup) })
}

mod clone3;

#[cfg(test)]
mod tests;
